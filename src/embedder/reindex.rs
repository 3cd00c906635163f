//! `firstline embedder --reindex`: embeds, from Postgres, every incident and person message the
//! configured model has not embedded — after a model change, or for rows that never passed
//! through the topic (imports, history before the embedder ran). Incidents go first (recall
//! reads them). It walks each table in id order and writes batch by batch, so an interrupted run
//! leaves only finished batches, and the next run picks up exactly what is left.

use anyhow::Context as _;
use firstline_config::Settings;
use firstline_store::embeddings;
use tokio_util::sync::CancellationToken;

/// What a run did.
#[derive(Debug)]
pub struct Reindexed {
    pub model: String,
    pub incidents: u64,
    pub messages: u64,
    /// Stopped by a signal before the end.
    pub interrupted: bool,
}

/// Runs the reindex until done or cancelled.
pub async fn run(settings: &Settings, cancel: CancellationToken) -> anyhow::Result<Reindexed> {
    let pool = firstline_store::connect(&settings.database).await?;
    let embedder = crate::embedding::load(settings, Some(&pool)).await?;
    let batch = settings.embedder.batch_max.max(1) as i64;
    let mut done = Reindexed {
        model: embedder.model().to_string(),
        incidents: 0,
        messages: 0,
        interrupted: false,
    };
    for table in [Table::Incidents, Table::Messages] {
        let mut after = 0;
        while !cancel.is_cancelled() {
            let rows = match table {
                Table::Incidents => {
                    embeddings::incidents_to_embed(&pool, embedder.model(), after, batch).await
                }
                Table::Messages => {
                    embeddings::messages_to_embed(&pool, embedder.model(), after, batch).await
                }
            }
            .with_context(|| format!("reading {} to embed", table.name()))?;
            let Some(last) = rows.last() else { break };
            after = last.id;
            let (ids, texts): (Vec<i64>, Vec<String>) =
                rows.into_iter().map(|row| (row.id, row.text)).unzip();
            let vectors = embedder.embed(&texts).await.context("embedding")?;
            let pairs: Vec<(i64, Vec<f32>)> = ids.into_iter().zip(vectors).collect();
            let none: &[(i64, Vec<f32>)] = &[];
            let (messages, incidents) = match table {
                Table::Incidents => (none, &pairs[..]),
                Table::Messages => (&pairs[..], none),
            };
            let (messages, incidents) =
                embeddings::write(&pool, embedder.model(), messages, incidents).await?;
            done.messages += messages;
            done.incidents += incidents;
        }
    }
    done.interrupted = cancel.is_cancelled();
    pool.close().await;
    Ok(done)
}

/// The two tables, incidents first: recall reads them.
#[derive(Clone, Copy)]
enum Table {
    Incidents,
    Messages,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Incidents => "incidents",
            Table::Messages => "messages",
        }
    }
}
