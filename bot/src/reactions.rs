//! The reaction on a recorded mention (👀, or ✅ when it resolved its thread): a background task
//! fed by the pipeline after commit, so a slow or failing Slack never delays an ack. Best effort:
//! a failure is logged, not retried (the mention is already recorded and its round queued).

use firstline_slack::SlackApi;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A request to react to a recorded mention.
#[derive(Debug, Clone)]
pub struct ReactTo {
    /// Channel id.
    pub channel: String,
    /// Message ts.
    pub ts: String,
    /// The emoji's name: 👀 for a mention, ✅ for one that resolved its thread.
    pub reaction: &'static str,
}

/// Adds each reaction received on `requests` until `cancel` fires or the senders are gone.
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
        let added = api
            .add_reaction(&request.channel, &request.ts, request.reaction)
            .await;
        if let Err(e) = added {
            tracing::warn!(channel = %request.channel, ts = %request.ts, reaction = request.reaction, error = %e, "could not react");
        }
    }
}
