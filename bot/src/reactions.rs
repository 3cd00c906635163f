//! What the bot does to Slack after a commit, off the ack path: the reaction on a recorded
//! mention (👀, or ✅ when it resolved its thread), a question's reply edited to show who
//! answered what, a proposed action's buttons replaced by who decided it, a refused click
//! explained to the person alone, and the "Wrong cause" dialog opened. A background task fed by the pipeline, so a slow or failing Slack never delays
//! an ack. Best effort: a failure is logged, not retried (the message is already recorded and its
//! round queued).

use firstline_slack::SlackApi;
use serde_json::Value;
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

/// One thing to do to Slack after a commit.
#[derive(Debug, Clone)]
pub enum Touch {
    React(ReactTo),
    /// Replace the blocks of the round's reply `ts` in `channel`: a question was answered.
    ShowAnswer {
        channel: String,
        ts: String,
        blocks: Value,
    },
    /// Open `view` for the person whose click gave `trigger_id` (the "Wrong cause" dialog).
    OpenView {
        trigger_id: String,
        view: Value,
    },
    /// Replace the blocks of the reply `ts` in `channel`: a proposed action was decided.
    ShowDecision {
        channel: String,
        ts: String,
        /// The notification fallback.
        text: String,
        blocks: Value,
    },
    /// Show `text` to `user` alone, in `thread_ts`'s thread of `channel`: why their click
    /// changed nothing.
    Tell {
        channel: String,
        thread_ts: String,
        user: String,
        text: String,
    },
}

/// Does each touch received on `requests` until `cancel` fires or the senders are gone.
pub async fn run(
    api: Arc<SlackApi>,
    mut requests: mpsc::Receiver<Touch>,
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
        match request {
            Touch::React(r) => {
                if let Err(e) = api.add_reaction(&r.channel, &r.ts, r.reaction).await {
                    tracing::warn!(channel = %r.channel, ts = %r.ts, reaction = r.reaction, error = %e, "could not react");
                }
            }
            Touch::ShowAnswer {
                channel,
                ts,
                blocks,
            } => {
                // `text` is only the notification fallback; the blocks carry the reply.
                let updated = api
                    .update_message(&channel, &ts, "A question was answered", Some(blocks))
                    .await;
                if let Err(e) = updated {
                    tracing::warn!(%channel, %ts, error = %e, "could not show who answered");
                }
            }
            Touch::ShowDecision {
                channel,
                ts,
                text,
                blocks,
            } => {
                if let Err(e) = api.update_message(&channel, &ts, &text, Some(blocks)).await {
                    tracing::warn!(%channel, %ts, error = %e, "could not show the decision");
                }
            }
            Touch::Tell {
                channel,
                thread_ts,
                user,
                text,
            } => {
                let told = api
                    .post_ephemeral(&channel, &user, Some(&thread_ts), &text)
                    .await;
                if let Err(e) = told {
                    tracing::warn!(%channel, %user, error = %e, "could not tell why a click changed nothing");
                }
            }
            // A `trigger_id` lasts 3 s: the dialog opens at once, not behind a storm's 👀.
            Touch::OpenView { trigger_id, view } => {
                let api = api.clone();
                tokio::spawn(async move {
                    if let Err(e) = api.open_view(&trigger_id, &view).await {
                        tracing::warn!(error = %e, "could not open the dialog");
                    }
                });
            }
        }
    }
}
