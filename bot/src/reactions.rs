//! The 👀 reaction on a recorded mention: a background task fed by the pipeline after commit, so
//! a slow or failing Slack never delays an ack. Best effort: a failure is logged, not retried
//! (the mention is already recorded and its round already queued).

use crate::pipeline::ReactTo;
use crate::slack::SlackApi;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Reaction added to mentions.
pub const EYES: &str = "eyes";

/// Reacts to each mention received on `requests` until `cancel` fires or the senders are gone.
pub async fn run(
    api: Arc<SlackApi>,
    mut requests: mpsc::Receiver<ReactTo>,
    cancel: CancellationToken,
) {
    loop {
        let request = tokio::select! {
            _ = cancel.cancelled() => break,
            request = requests.recv() => match request {
                Some(request) => request,
                None => break,
            },
        };
        if let Err(e) = api.add_reaction(&request.channel, &request.ts, EYES).await {
            tracing::warn!(channel = %request.channel, ts = %request.ts, error = %e, "could not add 👀");
        }
    }
}
