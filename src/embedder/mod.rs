//! `firstline embedder`: the message topic's first consumer. It reads `kafka.topic` in consumer
//! group `embedder.group_id`, embeds what people wrote and every new incident, and writes the
//! vectors to pgvector, where recall compares meaning. `--reindex` re-embeds, from Postgres,
//! everything the current model has not embedded (after a model change, or for incidents that
//! never passed through the topic); it is resumable, since it only ever picks up what is left.
//!
//! Delivery is at least once: a batch's offsets are committed only after its rows are written,
//! and every write is an upsert keyed by the row's id, so a redelivered record changes nothing.
//! A record that cannot be read is logged, counted and committed past (it never blocks its
//! partition). SIGTERM stops reading, finishes the batch in hand and commits it. [`consume`]
//! holds the loop; `/healthz` and `/metrics` (with consumer lag) come from [`crate::health`].

mod consume;
mod lag;
mod metrics;
mod reindex;

pub use consume::start_embedder;

use crate::service::Service;
use firstline_config::Settings;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Re-embed every person message and incident the configured model has not embedded, from
    /// Postgres, then exit (resumable: a second run continues where the first stopped).
    #[arg(long)]
    reindex: bool,
}

pub async fn run(settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let mut service = Service::prepare(&settings).await?;
    let cancel = CancellationToken::new();
    if args.reindex {
        let work = reindex::run(&settings, cancel.clone());
        tokio::pin!(work);
        let done = tokio::select! {
            done = &mut work => done?,
            _ = service.stop.requested() => {
                cancel.cancel();
                work.await?
            }
        };
        println!(
            "reindexed {} messages and {} incidents with {}{}",
            done.messages,
            done.incidents,
            done.model,
            if done.interrupted {
                " (interrupted: run it again to continue)"
            } else {
                ""
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let model = crate::embedding::load(&settings, None).await?;
    let embedder = start_embedder(&settings, model, cancel.clone()).await?;
    println!("embedder  http://{}/healthz", embedder.http_addr);
    println!(
        "embedder  topic {} as group {}",
        settings.kafka.topic, settings.embedder.group_id
    );
    service.run_until_stopped(embedder.run(), &cancel).await?;
    Ok(ExitCode::SUCCESS)
}
