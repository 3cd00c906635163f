//! `refine_round`: the model's pass over a round already committed and posted (only with a
//! model configured). It resumes from the round's final checkpoint, runs
//! `firstline_investigation::model_path::refine` over the same tool scope as `run_graph` (so
//! the model's tool calls land in `tool_cache`) with its answers cached in `model_replies`, and
//! stores the outcome on the round in one transaction: the result and text `edit_post` will
//! show, the usage, the model's columns, the evidence the model read and the claims. Idempotent
//! on the round: a retry that finds `refined_at` set returns what was stored. A model that
//! fails is not an error here: the outcome records the fallback and the round stands.

use std::time::Instant;

use sqlx::PgPool;

use crate::RoundError;
use crate::commit::{awaits_answer, clamp, first_cause, headline, insert_claims, insert_evidence};
use crate::graph_run::latest_checkpoint;
use firstline_investigation::model_path::{ModelPath, refine};
use firstline_investigation::model_run::ModelRun;
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{GraphOptions, RoundResult};
use firstline_llm::{ChatAnswer, ReplyCache};
use firstline_model::faults;
use firstline_workflows::types::{RefineInput, RefineOutcome};

/// Refines round `input.round` unless it already was.
pub async fn refine_round(
    pool: &PgPool,
    tools: &McpTools,
    model: Option<&ModelPath>,
    options: &GraphOptions,
    input: &RefineInput,
) -> Result<RefineOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let stored: Option<(i64, bool, Option<String>, bool)> = sqlx::query_as(
        "SELECT id, grounded, model_fallback, refined_at IS NOT NULL
           FROM rounds WHERE thread_id = $1 AND number = $2",
    )
    .bind(thread_id)
    .bind(round as i32)
    .fetch_optional(pool)
    .await?;
    let Some((round_id, grounded, fallback, refined)) = stored else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    if refined {
        return Ok(RefineOutcome { grounded, fallback });
    }
    let Some(model) = model else {
        // Only a worker configured with a model is offered this activity; one without (another
        // configuration mid-deploy) leaves the round as posted.
        return Ok(RefineOutcome {
            grounded,
            fallback: Some("config".to_string()),
        });
    };
    let checkpoint = latest_checkpoint(pool, thread_id, round, &input.run_id)
        .await?
        .filter(|c| c.step > 0 && c.is_finished())
        .ok_or(RoundError::NotRun { thread_id, round })?;
    let before = checkpoint.state;

    // The same scope as `run_graph`'s: a tool call the model repeats after a retry is served
    // from `tool_cache`.
    let cache_key = format!("{}@{}", input.thread.kafka_key(), input.run_id);
    let source = tools.round(CallScope::round(&cache_key, Some(thread_id), round));
    let replies = StoredReplies {
        pool: pool.clone(),
        thread_id,
        round,
    };
    let started = Instant::now();
    let state = refine(
        model,
        &source,
        &replies,
        &input.run_id,
        &before,
        &options.investigate,
    )
    .await;
    let run = state.model.clone().unwrap_or_else(|| ModelRun {
        model: model.model().to_string(),
        ..ModelRun::default()
    });
    record_metrics(&run, started.elapsed().as_secs_f64());
    faults::pause(faults::REFINE_AFTER_MODEL).await;

    let result = RoundResult::from_state(&state);
    let result_json = serde_json::to_value(&result).map_err(|error| RoundError::BadResult {
        thread_id,
        round,
        error,
    })?;
    let mut tx = pool.begin().await?;
    let updated = sqlx::query(
        "UPDATE rounds SET grounded = $2, result = $3, text = $4, headline = $5, cause = $6,
                asked = $7, tool_calls = $8, model_calls = $9, prompt_tokens = $10,
                completion_tokens = $11, model = $12, model_fallback = $13,
                model_tool_calls = $14, model_latency_ms = $15, refined_at = now()
          WHERE id = $1 AND refined_at IS NULL",
    )
    .bind(round_id)
    .bind(result.grounded)
    .bind(&result_json)
    .bind(&result.text)
    .bind(headline(&result))
    .bind(first_cause(&result))
    .bind(sqlx::types::Json(&result.questions))
    .bind(clamp(u64::from(state.usage.tool_calls)))
    .bind(clamp(u64::from(state.usage.model_calls)))
    .bind(clamp(state.usage.prompt_tokens))
    .bind(clamp(state.usage.completion_tokens))
    .bind(&run.model)
    .bind(&run.fallback)
    .bind(clamp(u64::from(run.tool_calls)))
    .bind(clamp(run.latency_ms))
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 0 {
        // A concurrent attempt stored its outcome first: that one stands.
        tx.rollback().await?;
        let (grounded, fallback): (bool, Option<String>) =
            sqlx::query_as("SELECT grounded, model_fallback FROM rounds WHERE id = $1")
                .bind(round_id)
                .fetch_one(pool)
                .await?;
        return Ok(RefineOutcome { grounded, fallback });
    }
    for evidence in state.evidence.iter().skip(before.evidence.len()) {
        insert_evidence(&mut tx, round_id, evidence).await?;
    }
    // The claims as the refined report makes them; the model's dropped ones are kept, marked
    // unsupported, so what was refused stays visible.
    sqlx::query("DELETE FROM claims WHERE round_id = $1")
        .bind(round_id)
        .execute(&mut *tx)
        .await?;
    insert_claims(&mut tx, round_id, &result, &run.dropped_claims).await?;
    // The model may have asked where the deterministic round posted, or the other way round.
    sqlx::query("UPDATE threads SET awaiting_answer = $3 WHERE id = $1 AND rounds = $2")
        .bind(thread_id)
        .bind(round as i32)
        .bind(awaits_answer(&result))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!(
        round_id,
        grounded = result.grounded,
        fallback = run.fallback.as_deref().unwrap_or(""),
        model_calls = run.model_calls,
        "round refined"
    );
    Ok(RefineOutcome {
        grounded: result.grounded,
        fallback: run.fallback,
    })
}

fn record_metrics(run: &firstline_investigation::model_run::ModelRun, seconds: f64) {
    use crate::metrics::*;
    let outcome = run.fallback.clone().unwrap_or_else(|| "used".to_string());
    metrics::counter!(MODEL_ROUNDS, "outcome" => outcome).increment(1);
    metrics::counter!(MODEL_CALLS).increment(u64::from(run.model_calls));
    metrics::counter!(MODEL_TOOL_CALLS).increment(u64::from(run.tool_calls));
    metrics::counter!(MODEL_TOKENS, "kind" => "prompt").increment(run.prompt_tokens);
    metrics::counter!(MODEL_TOKENS, "kind" => "completion").increment(run.completion_tokens);
    metrics::histogram!(MODEL_LATENCY_SECONDS).record(run.latency_ms as f64 / 1000.0);
    metrics::histogram!(REFINE_SECONDS).record(seconds);
}

/// The model's answers of one round, in `model_replies`. A read or write that fails is a
/// cache miss, never an error: the model is asked again.
struct StoredReplies {
    pool: PgPool,
    thread_id: i64,
    round: u32,
}

impl ReplyCache for StoredReplies {
    async fn get(&self, key: &str) -> Option<ChatAnswer> {
        let row: Result<Option<(serde_json::Value,)>, sqlx::Error> = sqlx::query_as(
            "SELECT answer FROM model_replies WHERE thread_id = $1 AND round = $2 AND step = $3",
        )
        .bind(self.thread_id)
        .bind(self.round as i32)
        .bind(key)
        .fetch_optional(&self.pool)
        .await;
        match row {
            Ok(Some((answer,))) => serde_json::from_value(answer).ok(),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "model reply cache unreadable");
                None
            }
        }
    }

    async fn put(&self, key: &str, answer: &ChatAnswer) {
        let Ok(json) = serde_json::to_value(answer) else {
            return;
        };
        let stored = sqlx::query(
            "INSERT INTO model_replies (thread_id, round, step, answer) VALUES ($1, $2, $3, $4)
             ON CONFLICT (thread_id, round, step) DO NOTHING",
        )
        .bind(self.thread_id)
        .bind(self.round as i32)
        .bind(key)
        .bind(json)
        .execute(&self.pool)
        .await;
        if let Err(e) = stored {
            tracing::warn!(error = %e, "model reply not cached");
        }
    }
}
