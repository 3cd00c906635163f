//! `run_graph`: one round of the incident graph, durable step by step (invariant 11).
//!
//! After every super-step the graph's checkpoint is stored in `round_checkpoints` and a small
//! heartbeat (round, step, nodes, checkpoint key — never the state) is recorded. A retried
//! attempt, on this worker or another, resumes from the last *stored* checkpoint: heartbeat
//! details lag by up to a third of the heartbeat timeout (the worker's throttle), the database
//! does not. Tool calls go
//! through the tool layer's digest cache keyed by thread and round, so the steps a retry does
//! re-run are served from `tool_cache` without calling a tool twice. A finished checkpoint is
//! never re-run.
//!
//! Rows are fenced: each carries the workflow run and the activity attempt that wrote it. A
//! retry claims the round's rows for its attempt before it continues, and a write from an older
//! attempt (a worker that stalled past the heartbeat timeout and woke up later) is refused, so
//! the stale attempt stops with [`RoundError::Superseded`]. Rows of another run (a run that
//! failed at this round) are dropped: a new run starts the round over, with fresh tool results.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use firstline_graph::Checkpoint;
use futures::StreamExt;
use sqlx::PgPool;
use tracing::Instrument;

use crate::RoundError;
use chrono_tz::Tz;
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{
    AlertInput, GraphOptions, IncidentState, Memory, RECURSION_LIMIT, build_incident_graph,
};
use firstline_investigation::{answers, steer};
use firstline_model::faults;
use firstline_workflows::types::{GraphHeartbeat, GraphOutcome, RunGraphInput};

/// How often a running step re-sends its heartbeat.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// Awaits `work` (a step, or an injected pause) while re-sending `beat` every tick of `ticker`,
/// since it may outlast the heartbeat timeout; `Err(Cancelled)` if `cancelled` resolves first.
/// Bounded by `work` itself: a step by its nodes' timeouts, a pause by its length.
async fn heartbeating<T, H, F>(
    work: impl Future<Output = T>,
    ticker: &mut tokio::time::Interval,
    heartbeat: &H,
    beat: &GraphHeartbeat,
    mut cancelled: Pin<&mut impl Future<Output = ()>>,
) -> Result<T, RoundError>
where
    H: Fn(GraphHeartbeat) -> F,
    F: Future<Output = ()>,
{
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            () = cancelled.as_mut() => return Err(RoundError::Cancelled),
            _ = ticker.tick() => heartbeat(beat.clone()).await,
            value = &mut work => return Ok(value),
        }
    }
}

/// A stored checkpoint of the incident graph.
pub type IncidentCheckpoint = Checkpoint<IncidentState>;

/// Runs (or resumes) round `input.round` of the thread, recalling from `memory` (whose pool also
/// holds the checkpoints). `heartbeat` is called after each stored step and every
/// [`HEARTBEAT_EVERY`] while one runs; the run stops with [`RoundError::Cancelled`] when
/// `cancelled` resolves.
pub async fn run_graph<H, F>(
    memory: &Memory,
    tools: &McpTools,
    options: &GraphOptions,
    input: &RunGraphInput,
    attempt: u32,
    heartbeat: H,
    cancelled: impl Future<Output = ()>,
) -> Result<GraphOutcome, RoundError>
where
    H: Fn(GraphHeartbeat) -> F,
    F: Future<Output = ()>,
{
    let (thread_id, round) = (input.thread_id, input.round);
    let owner = Owner {
        thread_id,
        round,
        run_id: &input.run_id,
        attempt,
    };
    let cache_key = format!("{}@{}", input.thread.kafka_key(), input.run_id);
    let scope = CallScope::round(&cache_key, Some(thread_id), round);
    let source = Arc::new(tools.round(scope));
    let pool = &memory.pool;
    let graph = build_incident_graph(Arc::clone(&source), Some(memory.clone()), options.clone())
        .map_err(|e| RoundError::Graph {
            message: e.to_string(),
            retryable: false,
        })?;

    owner.claim(pool).await?;
    let latest = latest_checkpoint(pool, thread_id, round, &input.run_id).await?;
    let (mut steps, resumed_from) = match latest {
        Some(checkpoint) if checkpoint.step > 0 && checkpoint.is_finished() => {
            tracing::info!(
                step = checkpoint.step,
                "round already ran; not running it again"
            );
            return Ok(outcome(checkpoint.step, &checkpoint.state));
        }
        // After a step, or a failed step (its pending writes keep what the siblings did).
        Some(checkpoint) if !checkpoint.next.is_empty() => {
            tracing::info!(
                step = checkpoint.step,
                "resuming the round from its checkpoint"
            );
            let from = checkpoint.step;
            (graph.resume_stream(checkpoint, RECURSION_LIMIT), from)
        }
        // The input alone: start over from it (the tool cache serves repeated calls).
        Some(checkpoint) => (graph.stream(checkpoint.state, RECURSION_LIMIT), 0),
        None => {
            metrics::counter!(crate::metrics::ROUNDS_STARTED).increment(1);
            tracing::info!("round started");
            let state = initial_state(input, options.time_zone);
            owner
                .store(pool, &[], &input_checkpoint(state.clone()))
                .await?;
            (graph.stream(state, RECURSION_LIMIT), 0)
        }
    };

    tokio::pin!(cancelled);
    // Heartbeat from the start and while a step runs, not only between steps: a step may take
    // longer than the heartbeat timeout (the worker throttles the sends to a third of it).
    let mut beat = GraphHeartbeat {
        round,
        step: step_number(resumed_from),
        nodes: Vec::new(),
        checkpoint: format!("{thread_id}/{round}/{resumed_from}"),
    };
    heartbeat(beat.clone()).await;
    let mut ticker = tokio::time::interval(HEARTBEAT_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last: Option<IncidentCheckpoint> = None;
    let mut step_started = std::time::Instant::now();
    loop {
        let next = steps.next();
        let event = heartbeating(next, &mut ticker, &heartbeat, &beat, cancelled.as_mut()).await?;
        let Some(event) = event else { break };
        match event {
            Ok(step) => {
                let span = tracing::info_span!("graph.step", step = step.step, nodes = ?step.ran);
                let checkpoint = step.checkpoint();
                metrics::histogram!(crate::metrics::GRAPH_STEP_SECONDS, "nodes" => step.ran.join("+"))
                    .record(step_started.elapsed().as_secs_f64());
                beat = GraphHeartbeat {
                    round,
                    step: step_number(checkpoint.step),
                    nodes: step.ran.clone(),
                    checkpoint: format!("{thread_id}/{round}/{}", checkpoint.step),
                };
                async {
                    owner.store(pool, &step.ran, &checkpoint).await?;
                    heartbeat(beat.clone()).await;
                    Ok::<_, RoundError>(())
                }
                .instrument(span)
                .await?;
                step_started = std::time::Instant::now();
                last = Some(checkpoint);
                // A pause injected here stands for a slow worker, which keeps heartbeating.
                let pause = faults::pause(faults::GRAPH_AFTER_STEP);
                heartbeating(pause, &mut ticker, &heartbeat, &beat, cancelled.as_mut()).await?;
            }
            Err(failed) => {
                // Keep what the failed step's siblings wrote: the retry re-runs only the failure.
                if let Some(checkpoint) = failed.checkpoint.as_deref()
                    && (checkpoint.step > 0 || !checkpoint.pending_writes.is_empty())
                {
                    owner.store(pool, &[], checkpoint).await?;
                }
                // A wiring error or a checkpoint from another graph would fail again.
                let retryable =
                    matches!(failed.error, firstline_graph::GraphError::NodeFailed { .. });
                return Err(RoundError::Graph {
                    message: failed.error.to_string(),
                    retryable,
                });
            }
        }
    }
    let Some(done) = last else {
        return Err(RoundError::Graph {
            message: "the graph ran no step".into(),
            retryable: true,
        });
    };
    let mut result = outcome(done.step, &done.state);
    result.resumed_from = step_number(resumed_from);
    tracing::info!(
        tool_calls = result.tool_calls,
        grounded = result.grounded,
        "round analysed"
    );
    Ok(result)
}

/// The round's input state: the alert, with what people answered the last round's questions
/// read against them (`firstline_investigation::answers`) — a namespace, a workload or pod, a
/// start time the alert did not say — so the round acts on the answers, and what the round's
/// mentions ask (`steer`: an object to start from, a hypothesis to answer first); `zone` is the
/// workspace's time zone for times written in answers.
pub fn initial_state(input: &RunGraphInput, zone: Tz) -> IncidentState {
    let mut alert = AlertInput::parse(input.alert.text.clone(), slack_ts_time(&input.alert.ts));
    let context = &input.context;
    let answers = answers::read(&context.open_questions, &context.human_answers, zone);
    alert.target = answers::apply(alert.target, &answers);
    let mut state = IncidentState::new(alert, context.clone());
    state.answers = answers;
    // What the mentions this round answers ask of it (the alert's own wake-up asks nothing).
    let mentions: Vec<_> = input
        .mentions
        .iter()
        .filter(|m| m.ts != input.alert.ts)
        .cloned()
        .collect();
    state.steering = steer::read(&mentions);
    state
}

fn slack_ts_time(ts: &str) -> Option<DateTime<Utc>> {
    let seconds = ts.parse::<f64>().ok()?;
    Utc.timestamp_millis_opt((seconds * 1000.0) as i64).single()
}

fn input_checkpoint(state: IncidentState) -> IncidentCheckpoint {
    Checkpoint {
        step: 0,
        state,
        next: Vec::new(),
        joins: Vec::new(),
        pending_writes: Vec::new(),
    }
}

fn outcome(steps: usize, state: &IncidentState) -> GraphOutcome {
    GraphOutcome {
        grounded: state.grounded(),
        steps: step_number(steps),
        resumed_from: 0,
        tool_calls: state.usage.tool_calls,
    }
}

fn step_number(step: usize) -> u32 {
    u32::try_from(step).unwrap_or(u32::MAX)
}

/// Who writes a round's checkpoints: one attempt of one workflow run.
struct Owner<'a> {
    thread_id: i64,
    round: u32,
    run_id: &'a str,
    attempt: u32,
}

impl Owner<'_> {
    fn superseded(&self) -> RoundError {
        RoundError::Superseded {
            round: self.round,
            attempt: self.attempt,
        }
    }

    /// Takes the round's rows over for this attempt: drops another run's leftovers, and fails
    /// when a later attempt already owns them.
    async fn claim(&self, pool: &PgPool) -> Result<(), RoundError> {
        let mut tx = pool.begin().await?;
        lock_round(&mut tx, self.thread_id).await?;
        sqlx::query(
            "DELETE FROM round_checkpoints WHERE thread_id = $1 AND round = $2 AND run_id <> $3",
        )
        .bind(self.thread_id)
        .bind(self.round as i32)
        .bind(self.run_id)
        .execute(&mut *tx)
        .await?;
        let newest: Option<i32> = sqlx::query_scalar(
            "SELECT max(attempt) FROM round_checkpoints WHERE thread_id = $1 AND round = $2",
        )
        .bind(self.thread_id)
        .bind(self.round as i32)
        .fetch_one(&mut *tx)
        .await?;
        if newest.is_some_and(|n| n > self.attempt as i32) {
            return Err(self.superseded());
        }
        // Only the owner changes: `created_at` still says when each step was first stored.
        sqlx::query(
            "UPDATE round_checkpoints SET attempt = $3 WHERE thread_id = $1 AND round = $2",
        )
        .bind(self.thread_id)
        .bind(self.round as i32)
        .bind(self.attempt as i32)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores `checkpoint` as step `checkpoint.step` (replacing a failed attempt's), unless a
    /// later attempt owns the round.
    async fn store(
        &self,
        pool: &PgPool,
        nodes: &[String],
        checkpoint: &IncidentCheckpoint,
    ) -> Result<(), RoundError> {
        let json = serde_json::to_value(checkpoint).map_err(|error| RoundError::BadCheckpoint {
            thread_id: self.thread_id,
            round: self.round,
            error,
        })?;
        // Step 0 is the input, not a finished run, even though its `next` is empty.
        let finished = checkpoint.step > 0 && checkpoint.is_finished();
        let mut tx = pool.begin().await?;
        lock_round(&mut tx, self.thread_id).await?;
        let written = sqlx::query(
            "INSERT INTO round_checkpoints
                 (thread_id, round, step, run_id, attempt, nodes, checkpoint, finished)
             SELECT $1, $2, $3, $4, $5, $6, $7, $8
              WHERE NOT EXISTS (SELECT 1 FROM round_checkpoints
                                 WHERE thread_id = $1 AND round = $2 AND attempt > $5)
             ON CONFLICT (thread_id, round, step)
             DO UPDATE SET nodes = EXCLUDED.nodes, checkpoint = EXCLUDED.checkpoint,
                           finished = EXCLUDED.finished, attempt = EXCLUDED.attempt,
                           created_at = now()
                     WHERE round_checkpoints.attempt <= EXCLUDED.attempt",
        )
        .bind(self.thread_id)
        .bind(self.round as i32)
        .bind(checkpoint.step as i32)
        .bind(self.run_id)
        .bind(self.attempt as i32)
        .bind(nodes)
        .bind(json)
        .bind(finished)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if written == 0 {
            return Err(self.superseded());
        }
        tx.commit().await?;
        Ok(())
    }
}

/// Serialises claims and writes of a thread's checkpoints (the thread row's lock).
async fn lock_round(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    thread_id: i64,
) -> Result<(), RoundError> {
    sqlx::query("SELECT 1 FROM threads WHERE id = $1 FOR UPDATE")
        .bind(thread_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The round's last stored checkpoint in workflow run `run_id`.
pub async fn latest_checkpoint(
    pool: &PgPool,
    thread_id: i64,
    round: u32,
    run_id: &str,
) -> Result<Option<IncidentCheckpoint>, RoundError> {
    let row: Option<(serde_json::Value,)> = sqlx::query_as(
        "SELECT checkpoint FROM round_checkpoints
          WHERE thread_id = $1 AND round = $2 AND run_id = $3 ORDER BY step DESC LIMIT 1",
    )
    .bind(thread_id)
    .bind(round as i32)
    .bind(run_id)
    .fetch_optional(pool)
    .await?;
    row.map(|(json,)| {
        serde_json::from_value(json).map_err(|error| RoundError::BadCheckpoint {
            thread_id,
            round,
            error,
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_starts_from_what_answers_named_and_never_overrides_the_alert() {
        use firstline_model::{HumanAnswer, Question, QuestionKind, ThreadContext, ThreadKey};
        let answer = |text: &str| HumanAnswer {
            user: "U1".into(),
            text: text.into(),
            ts: "1733140200.000100".into(),
            question: None,
        };
        let mut input = RunGraphInput {
            thread: ThreadKey {
                team_id: "T1".into(),
                channel_id: "C1".into(),
                thread_ts: "1733140000.000100".into(),
            },
            thread_id: 1,
            round: 2,
            run_id: "r".into(),
            alert: firstline_workflows::types::AlertMessage {
                text: "[FIRING:1] CheckoutSlow\nservice=checkout".into(),
                ts: "1733140000.000100".into(),
            },
            context: ThreadContext {
                open_questions: vec![
                    Question::of(QuestionKind::Namespace, "Which namespace is `checkout` in?")
                        .with_choices(["payments".to_string(), "shop".to_string()]),
                ],
                human_answers: vec![answer("it's in Payments")],
                ..ThreadContext::default()
            },
            mentions: Vec::new(),
        };
        let state = initial_state(&input, chrono_tz::UTC);
        assert_eq!(state.alert.target.namespace.as_deref(), Some("payments"));
        assert_eq!(state.alert.target.service.as_deref(), Some("checkout"));
        assert_eq!(state.answers.len(), 1);

        // Labels in an answer fill in what the alert lacks; what it says stands.
        input.alert.text = "[FIRING:1] KubePodCrashLooping\nnamespace=payments".into();
        input.context.human_answers =
            vec![answer("pod=payments-api-6d8f7b9c4-x2x7q namespace=other")];
        let state = initial_state(&input, chrono_tz::UTC);
        assert_eq!(state.alert.target.namespace.as_deref(), Some("payments"));
        assert_eq!(
            state.alert.target.pod.as_deref(),
            Some("payments-api-6d8f7b9c4-x2x7q")
        );
        // With no question open, labels are still read; prose is not.
        input.context.open_questions.clear();
        let state = initial_state(&input, chrono_tz::UTC);
        assert_eq!(
            state.alert.target.pod.as_deref(),
            Some("payments-api-6d8f7b9c4-x2x7q")
        );
        input.context.human_answers = vec![answer("it's in payments")];
        let state = initial_state(&input, chrono_tz::UTC);
        assert!(state.answers.is_empty());
    }

    async fn thread(pool: &PgPool) -> i64 {
        sqlx::query_scalar(
            "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T1', 'C1', '1.0')
             RETURNING id",
        )
        .fetch_one(pool)
        .await
        .expect("a thread")
    }

    fn checkpoint(step: usize) -> IncidentCheckpoint {
        Checkpoint {
            step,
            state: IncidentState::default(),
            next: vec!["judge".into()],
            joins: Vec::new(),
            pending_writes: Vec::new(),
        }
    }

    async fn owners(pool: &PgPool, thread_id: i64) -> Vec<(i32, String, i32)> {
        sqlx::query_as(
            "SELECT step, run_id, attempt FROM round_checkpoints WHERE thread_id = $1 ORDER BY step",
        )
        .bind(thread_id)
        .fetch_all(pool)
        .await
        .expect("rows")
    }

    #[tokio::test]
    async fn a_later_attempt_fences_off_an_earlier_one_and_a_new_run_starts_over() {
        let db = firstline_testkit::test_db().await;
        let thread_id = thread(&db.pool).await;
        let first = Owner {
            thread_id,
            round: 1,
            run_id: "run-a",
            attempt: 1,
        };
        first.claim(&db.pool).await.expect("claim");
        first
            .store(&db.pool, &[], &checkpoint(0))
            .await
            .expect("step 0");
        first
            .store(&db.pool, &[], &checkpoint(1))
            .await
            .expect("step 1");

        // The retry takes the round over; the stalled first attempt can write nothing more.
        let retry = Owner {
            attempt: 2,
            ..first
        };
        retry.claim(&db.pool).await.expect("takeover");
        assert!(matches!(
            first.store(&db.pool, &[], &checkpoint(2)).await,
            Err(RoundError::Superseded { attempt: 1, .. })
        ));
        assert!(matches!(
            first.claim(&db.pool).await,
            Err(RoundError::Superseded { .. })
        ));
        retry
            .store(&db.pool, &[], &checkpoint(2))
            .await
            .expect("the retry writes");
        let rows = owners(&db.pool, thread_id).await;
        assert!(rows.iter().all(|(_, _, attempt)| *attempt == 2), "{rows:?}");
        assert_eq!(rows.len(), 3);

        // Another run at the same round (the first run failed) starts from nothing.
        let next_run = Owner {
            thread_id,
            round: 1,
            run_id: "run-b",
            attempt: 1,
        };
        next_run.claim(&db.pool).await.expect("a new run's claim");
        assert!(owners(&db.pool, thread_id).await.is_empty());
        assert!(
            latest_checkpoint(&db.pool, thread_id, 1, "run-b")
                .await
                .expect("read")
                .is_none()
        );
    }
}
