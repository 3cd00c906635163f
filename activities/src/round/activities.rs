//! The round's activities as Temporal sees them: `load_context`, `run_graph`, `commit_round`,
//! `post_to_thread` (explicit names on the wire), each a thin binding over its module, in a
//! span named after the activity. Errors that another attempt cannot fix are non-retryable.

use std::sync::Arc;

use firstline_bot::slack::SlackApi;
use sqlx::PgPool;
use temporalio_common::error::ApplicationFailure;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tracing::Instrument;

use super::RoundError;
use super::types::*;
use crate::incident::GraphOptions;
use crate::tools::McpTools;

/// What the activities need: the database, the tools, Slack and the limits.
pub struct RoundDeps {
    pub pool: PgPool,
    pub tools: McpTools,
    pub slack: Arc<SlackApi>,
    pub graph: GraphOptions,
    pub policy: RoundPolicy,
    /// `round.context_chars`.
    pub context_chars: usize,
}

/// The activities registered on a worker.
pub struct RoundActivities {
    deps: RoundDeps,
}

impl RoundActivities {
    pub fn new(deps: RoundDeps) -> Self {
        Self { deps }
    }
}

fn failure(error: RoundError) -> ActivityError {
    metrics::counter!("firstline_activity_failures_total", "retryable" => error.retryable().to_string())
        .increment(1);
    match error {
        RoundError::Cancelled => ActivityError::cancelled(),
        e if e.retryable() => ActivityError::application(ApplicationFailure::new(e)),
        e => ActivityError::application(ApplicationFailure::non_retryable(e)),
    }
}

fn span(name: &'static str, ctx: &ActivityContext) -> tracing::Span {
    let info = ctx.info();
    if info.attempt > 1 {
        metrics::counter!("firstline_activity_retries_total", "activity" => name).increment(1);
    }
    tracing::info_span!(
        "activity",
        name,
        attempt = info.attempt,
        round = tracing::field::Empty
    )
}

#[activities]
impl RoundActivities {
    #[activity(name = "load_context")]
    pub async fn load_context(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: LoadContextInput,
    ) -> Result<RoundContext, ActivityError> {
        let deps = &self.deps;
        super::context::load_context(&deps.pool, &input.thread, &deps.policy, deps.context_chars)
            .instrument(span("load_context", &ctx))
            .await
            .map_err(failure)
    }

    #[activity(name = "run_graph")]
    pub async fn run_graph(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: RunGraphInput,
    ) -> Result<GraphOutcome, ActivityError> {
        let deps = &self.deps;
        let heartbeat_ctx = ctx.clone();
        let heartbeat = move |details: GraphHeartbeat| {
            let ctx = heartbeat_ctx.clone();
            async move {
                metrics::counter!("firstline_heartbeats_total").increment(1);
                if let Err(e) = ctx.record_heartbeat(details).await {
                    tracing::warn!(error = %e, "heartbeat not recorded");
                }
            }
        };
        let span = span("run_graph", &ctx);
        span.record("round", input.round);
        super::graph_run::run_graph(
            &deps.pool,
            &deps.tools,
            &deps.graph,
            &input,
            ctx.info().attempt,
            heartbeat,
            ctx.cancelled(),
        )
        .instrument(span)
        .await
        .map_err(failure)
    }

    #[activity(name = "commit_round")]
    pub async fn commit_round(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: CommitInput,
    ) -> Result<CommitOutcome, ActivityError> {
        super::commit::commit_round(&self.deps.pool, &input)
            .instrument(span("commit_round", &ctx))
            .await
            .map_err(failure)
    }

    #[activity(name = "post_failure")]
    pub async fn post_failure(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: FailureInput,
    ) -> Result<PostOutcome, ActivityError> {
        super::post::post_failure(&self.deps.slack, &input)
            .instrument(span("post_failure", &ctx))
            .await
            .map_err(failure)
    }

    #[activity(name = "post_to_thread")]
    pub async fn post_to_thread(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: PostInput,
    ) -> Result<PostOutcome, ActivityError> {
        super::post::post_to_thread(&self.deps.pool, &self.deps.slack, &input)
            .instrument(span("post_to_thread", &ctx))
            .await
            .map_err(failure)
    }
}
