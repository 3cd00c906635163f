//! The round's activities as Temporal sees them: each implements its definition in
//! `firstline_workflows::activities` (name and payload types checked at compile time) as a thin
//! binding over its module, in a span named after the activity. Errors that another attempt
//! cannot fix are non-retryable.

use std::sync::Arc;

use firstline_config::{ActionsSettings, GroupingSettings, LlmSettings, RoundSettings};
use firstline_investigation::model_path::ModelPath;
use firstline_investigation::tools::McpTools;
use firstline_investigation::{GraphOptions, Memory};
use firstline_slack::SlackApi;
use firstline_workflows::activities::{self as defined, names};
use firstline_workflows::types::*;
use sqlx::PgPool;
use temporalio_common::error::ApplicationFailure;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tracing::Instrument;

use crate::RoundError;

/// What the activities need: the database, the tools, Slack and the limits.
pub struct Deps {
    pub pool: PgPool,
    pub tools: McpTools,
    pub slack: Arc<SlackApi>,
    pub graph: GraphOptions,
    /// The configured model; `None` keeps every round deterministic.
    pub model: Option<ModelPath>,
    /// The embedding model recall compares meaning with; `None`: keywords and identifiers only.
    pub embedder: Option<Arc<dyn firstline_embed::Embedder>>,
    pub policy: RoundPolicy,
    /// `round.context_chars`.
    pub context_chars: usize,
    /// `temporal.task_queue`: the label of the in-flight gauge, so that one Prometheus serving
    /// several installs tells their workers apart.
    pub task_queue: String,
    /// With `actions.enabled`: the settings and the write server; `None`: nothing is proposed.
    pub actions: Option<crate::action::ActionDeps>,
    /// `grouping.window_secs`; `None`: no round's root links its thread to a group.
    pub group_window: Option<std::time::Duration>,
}

/// The activities registered on a worker.
pub struct Activities {
    deps: Deps,
    in_flight: metrics::Gauge,
}

impl Activities {
    pub fn new(deps: Deps) -> Self {
        let in_flight = metrics::gauge!(
            crate::metrics::ACTIVITIES_IN_FLIGHT,
            "task_queue" => deps.task_queue.clone()
        );
        // Exported from the start: an idle worker reads 0, not "no data".
        in_flight.set(0.0);
        Self { deps, in_flight }
    }

    /// What action `action_id`'s execution or verification needs; a worker with actions off
    /// refuses it for good.
    fn action_deps(&self, action_id: i64) -> Result<&crate::action::ActionDeps, ActivityError> {
        self.deps
            .actions
            .as_ref()
            .ok_or_else(|| failure(RoundError::ActionsOff(action_id)))
    }

    /// Counts one activity as running until the guard drops (returned, failed or cancelled).
    fn enter(&self) -> InFlight {
        self.in_flight.increment(1.0);
        InFlight(self.in_flight.clone())
    }
}

/// One running activity on the in-flight gauge.
struct InFlight(metrics::Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// The limits the `round.*` settings describe, as the workflow applies them; with a model
/// configured (`llm`), `refine_round` may take the model's wall-time budget plus a margin for
/// storing its outcome; with `actions.enabled`, a proposal waits `actions.approval_timeout_secs`
/// and `verify_action` may take `actions.verify_secs` plus the same margin; with grouping on, a
/// grounded first round's root may link its thread to an open group.
pub fn round_policy(
    round: &RoundSettings,
    llm: &LlmSettings,
    actions: &ActionsSettings,
    grouping: &GroupingSettings,
) -> RoundPolicy {
    let activity = ActivityPolicy {
        start_to_close_secs: round.activity_timeout_secs,
        heartbeat_secs: None,
        max_attempts: round.activity_attempts,
        retry_initial_ms: round.retry_initial_ms,
        retry_max_secs: round.retry_max_secs,
    };
    RoundPolicy {
        max_rounds: round.max_rounds,
        max_thread_age_secs: round.max_thread_age_secs,
        idle_timeout_secs: round.idle_timeout_secs,
        run_graph: ActivityPolicy {
            start_to_close_secs: round.run_graph_timeout_secs,
            heartbeat_secs: Some(round.run_graph_heartbeat_secs),
            ..activity.clone()
        },
        refine: llm.enabled().then(|| ActivityPolicy {
            start_to_close_secs: llm.budget_secs + REFINE_MARGIN_SECS,
            heartbeat_secs: Some(llm.heartbeat_secs),
            ..activity.clone()
        }),
        actions: actions.enabled.then(|| ActionPolicy {
            approval_timeout_secs: actions.approval_timeout_secs,
            execute: ActivityPolicy {
                start_to_close_secs: round.activity_timeout_secs + ACTION_CALLS_SECS,
                heartbeat_secs: Some(ACTION_HEARTBEAT_SECS),
                ..activity.clone()
            },
            verify: ActivityPolicy {
                start_to_close_secs: actions.verify_secs + ACTION_CALLS_SECS,
                heartbeat_secs: Some(ACTION_HEARTBEAT_SECS),
                ..activity.clone()
            },
        }),
        activity,
        grouping: grouping.window().map(|_| GroupingPolicy {
            wait_secs: grouping.wait_secs,
        }),
    }
}

/// Time `refine_round` gets beyond the model's budget (which also bounds the model's tool
/// calls): reading the checkpoint and storing the outcome.
const REFINE_MARGIN_SECS: u64 = 10;

/// Time an action activity gets beyond its own work for its tool calls: connecting and a few
/// calls at the default `mcp.*` timeouts (10 s + 4 × 15 s), plus storing the outcome.
const ACTION_CALLS_SECS: u64 = 80;

/// Heartbeat timeout of `execute_action` and `verify_action`, which beat while they work: a
/// worker lost in the middle is noticed in seconds, not at the end of a long start-to-close.
const ACTION_HEARTBEAT_SECS: u64 = 10;

/// How often a long activity other than `run_graph` (which beats per step) heartbeats; the worker
/// throttles what it sends to a fraction of the heartbeat timeout.
const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Awaits `work` while heartbeating, so that a worker lost in the middle is noticed within the
/// activity's heartbeat timeout instead of its whole start-to-close.
async fn heartbeating<T>(ctx: &ActivityContext, round: u32, work: impl Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut ticker = tokio::time::interval(HEARTBEAT_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Bounded by `work`, which the activity's own timeouts bound.
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticker.tick() => beat(ctx, round).await,
        }
    }
}

/// Sends one heartbeat with `details`, counted; a heartbeat Temporal did not take is logged (the
/// next one may be), never an error of the activity.
async fn beat<T>(ctx: &ActivityContext, details: T)
where
    T: temporalio_common::data_converters::TemporalSerializable + 'static,
{
    metrics::counter!(crate::metrics::HEARTBEATS).increment(1);
    if let Err(e) = ctx.record_heartbeat(details).await {
        tracing::warn!(error = %e, "heartbeat not recorded");
    }
}

fn failure(error: RoundError) -> ActivityError {
    metrics::counter!(crate::metrics::ACTIVITY_FAILURES, "retryable" => error.retryable().to_string())
        .increment(1);
    match error {
        RoundError::Cancelled => ActivityError::cancelled(),
        e if e.retryable() => ActivityError::application(ApplicationFailure::new(e)),
        e => ActivityError::application(ApplicationFailure::non_retryable(e)),
    }
}

/// The activity's span: the thread (`team/channel/thread_ts`, when the input names it, else the
/// workflow id) and round are attributes of its exported trace, so every node and tool call
/// beneath them is found by thread.
fn span(
    name: &'static str,
    ctx: &ActivityContext,
    thread: Option<&firstline_model::ThreadKey>,
    round: Option<u32>,
) -> tracing::Span {
    let info = ctx.info();
    if info.attempt > 1 {
        metrics::counter!(crate::metrics::ACTIVITY_RETRIES, "activity" => name).increment(1);
    }
    let span = tracing::info_span!(
        "activity",
        name,
        attempt = info.attempt,
        thread = thread.map(|t| t.kafka_key()),
        round,
        workflow = tracing::field::Empty,
    );
    // The workflow id spells the thread again: named only where the input does not name it, so
    // each log line's span stays short.
    if thread.is_none() {
        span.record("workflow", info.workflow_id.as_deref());
    }
    span
}

#[activities]
impl Activities {
    #[activity(definition = defined::LoadContext)]
    pub async fn load_context(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: LoadContextInput,
    ) -> Result<RoundContext, ActivityError> {
        let _in_flight = self.enter();
        let deps = &self.deps;
        crate::context::load_context(&deps.pool, &input.thread, &deps.policy, deps.context_chars)
            .instrument(span(names::LOAD_CONTEXT, &ctx, Some(&input.thread), None))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::RunGraph)]
    pub async fn run_graph(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: RunGraphInput,
    ) -> Result<GraphOutcome, ActivityError> {
        let _in_flight = self.enter();
        let deps = &self.deps;
        let heartbeat_ctx = ctx.clone();
        let heartbeat = move |details: GraphHeartbeat| {
            let ctx = heartbeat_ctx.clone();
            async move { beat(&ctx, details).await }
        };
        let span = span(
            names::RUN_GRAPH,
            &ctx,
            Some(&input.thread),
            Some(input.round),
        );
        let memory = Memory::new(deps.pool.clone(), deps.embedder.clone());
        crate::graph_run::run_graph(
            &memory,
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

    #[activity(definition = defined::CommitRound)]
    pub async fn commit_round(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: CommitInput,
    ) -> Result<CommitOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::commit::commit_round(&self.deps.pool, &input)
            .instrument(span(names::COMMIT_ROUND, &ctx, None, Some(input.round)))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::PostFailure)]
    pub async fn post_failure(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: FailureInput,
    ) -> Result<PostOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::post::post_failure(&self.deps.slack, &input)
            .instrument(span(
                names::POST_FAILURE,
                &ctx,
                Some(&input.thread),
                Some(input.round),
            ))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::RefineRound)]
    pub async fn refine_round(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: RefineInput,
    ) -> Result<RefineOutcome, ActivityError> {
        let _in_flight = self.enter();
        let deps = &self.deps;
        let span = span(
            names::REFINE_ROUND,
            &ctx,
            Some(&input.thread),
            Some(input.round),
        );
        let refine = crate::refine::refine_round(
            &deps.pool,
            &deps.tools,
            deps.model.as_ref(),
            &deps.graph,
            &input,
        )
        .instrument(span);
        heartbeating(&ctx, input.round, refine)
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::EditPost)]
    pub async fn edit_post(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: EditInput,
    ) -> Result<PostOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::post::edit_post(&self.deps.pool, &self.deps.slack, &input)
            .instrument(span(
                names::EDIT_POST,
                &ctx,
                Some(&input.thread),
                Some(input.round),
            ))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::PostToThread)]
    pub async fn post_to_thread(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: PostInput,
    ) -> Result<PostOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::post::post_to_thread(&self.deps.pool, &self.deps.slack, &input)
            .instrument(span(
                names::POST_TO_THREAD,
                &ctx,
                Some(&input.thread),
                Some(input.round),
            ))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::ProposeAction)]
    pub async fn propose_action(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ProposeInput,
    ) -> Result<ProposeOutcome, ActivityError> {
        let _in_flight = self.enter();
        let Some(actions) = &self.deps.actions else {
            return Ok(ProposeOutcome {
                action_id: None,
                not_shown: None,
            });
        };
        crate::action::propose::propose_action(&self.deps.pool, actions, &input)
            .instrument(span(names::PROPOSE_ACTION, &ctx, None, Some(input.round)))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::ExpireAction)]
    pub async fn expire_action(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ActionInput,
    ) -> Result<ActionOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::action::show::expire_action(&self.deps.pool, &input)
            .instrument(span(
                names::EXPIRE_ACTION,
                &ctx,
                Some(&input.thread),
                Some(input.round),
            ))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::ExecuteAction)]
    pub async fn execute_action(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ActionInput,
    ) -> Result<ActionOutcome, ActivityError> {
        let _in_flight = self.enter();
        let span = span(
            names::EXECUTE_ACTION,
            &ctx,
            Some(&input.thread),
            Some(input.round),
        );
        let actions = self.action_deps(input.action_id)?;
        let execute = crate::action::execute::execute_action(&self.deps.pool, actions, &input)
            .instrument(span);
        heartbeating(&ctx, input.round, execute)
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::VerifyAction)]
    pub async fn verify_action(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ActionInput,
    ) -> Result<ActionOutcome, ActivityError> {
        let _in_flight = self.enter();
        let span = span(
            names::VERIFY_ACTION,
            &ctx,
            Some(&input.thread),
            Some(input.round),
        );
        let actions = self.action_deps(input.action_id)?;
        let every = std::time::Duration::from_secs(actions.settings.verify_interval_secs);
        let window = std::time::Duration::from_secs(actions.settings.verify_secs);
        let tick_ctx = ctx.clone();
        let round = input.round;
        let verify = crate::action::verify::verify_action(
            &self.deps.pool,
            &self.deps.tools,
            every,
            window,
            &input,
            move || {
                let ctx = tick_ctx.clone();
                async move { beat(&ctx, round).await }
            },
        )
        .instrument(span);
        heartbeating(&ctx, input.round, verify)
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::ShowAction)]
    pub async fn show_action(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ActionInput,
    ) -> Result<PostOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::action::show::show_action(&self.deps.pool, &self.deps.slack, &input)
            .instrument(span(
                names::SHOW_ACTION,
                &ctx,
                Some(&input.thread),
                Some(input.round),
            ))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::ProbeGroup)]
    pub async fn probe_group(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ProbeInput,
    ) -> Result<LinkOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::group::link::probe_group(
            &self.deps.pool,
            &self.deps.tools,
            &input,
            self.deps.group_window,
        )
        .instrument(span(names::PROBE_GROUP, &ctx, Some(&input.thread), None))
        .await
        .map_err(failure)
    }

    #[activity(definition = defined::LinkRound)]
    pub async fn link_round(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: LinkRoundInput,
    ) -> Result<LinkOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::group::link::link_round(&self.deps.pool, &input, self.deps.group_window)
            .instrument(span(names::LINK_ROUND, &ctx, None, Some(input.round)))
            .await
            .map_err(failure)
    }

    #[activity(definition = defined::PostLink)]
    pub async fn post_link(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: LinkInput,
    ) -> Result<PostOutcome, ActivityError> {
        let _in_flight = self.enter();
        crate::group::link::post_link(&self.deps.pool, &self.deps.slack, &input)
            .instrument(span(names::POST_LINK, &ctx, Some(&input.thread), None))
            .await
            .map_err(failure)
    }
}
