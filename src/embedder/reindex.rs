//! `firstline embedder --reindex`: embeds, from Postgres, every incident and person message the
//! configured model has not embedded — after a model change, or for rows that never passed
//! through the topic (imports, history before the embedder ran). Incidents go first (recall
//! reads them). It walks each table in id order and writes batch by batch, so an interrupted run
//! leaves only finished batches, and the next run picks up exactly what is left.

use anyhow::Context as _;
use firstline_config::Settings;
use firstline_embed::Embedder;
use firstline_store::PgPool;
use firstline_store::embeddings;
use tokio_util::sync::CancellationToken;

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    let mut after = 0;
    while !cancel.is_cancelled() {
        let rows = embeddings::incidents_to_embed(&pool, embedder.model(), after, batch)
            .await
            .context("reading incidents to embed")?;
        let Some(last) = rows.last() else { break };
        after = last.id;
        let texts = rows.iter().map(|row| row.text()).collect();
        let ids = rows.iter().map(|row| row.id).collect();
        done.incidents += write(&pool, embedder.as_ref(), ids, texts, Table::Incidents).await?;
    }
    after = 0;
    while !cancel.is_cancelled() {
        let rows = embeddings::messages_to_embed(&pool, embedder.model(), after, batch)
            .await
            .context("reading messages to embed")?;
        let Some(last) = rows.last() else { break };
        after = last.id;
        let ids = rows.iter().map(|row| row.id).collect();
        let texts = rows.into_iter().map(|row| row.text).collect();
        done.messages += write(&pool, embedder.as_ref(), ids, texts, Table::Messages).await?;
    }
    done.interrupted = cancel.is_cancelled();
    pool.close().await;
    Ok(done)
}

enum Table {
    Incidents,
    Messages,
}

/// Embeds `texts` and writes them under `ids` in one transaction; returns the rows written.
async fn write(
    pool: &PgPool,
    embedder: &dyn Embedder,
    ids: Vec<i64>,
    texts: Vec<String>,
    table: Table,
) -> anyhow::Result<u64> {
    let vectors = embedder.embed(&texts).await.context("embedding")?;
    let pairs: Vec<(i64, Vec<f32>)> = ids.into_iter().zip(vectors).collect();
    let mut tx = pool.begin().await?;
    let written = match table {
        Table::Incidents => embeddings::set_incidents(&mut tx, embedder.model(), &pairs).await?,
        Table::Messages => embeddings::upsert_messages(&mut tx, embedder.model(), &pairs).await?,
    };
    tx.commit().await?;
    Ok(written)
}
