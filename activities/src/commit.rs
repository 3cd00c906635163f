//! `commit_round`: the round's outcome in one transaction — the `rounds` row (report, verdict,
//! usage, and the outline others read: headline, first cause, posted text), its evidence and
//! claims, and the thread's round count. Idempotent on (thread, round):
//! a retried commit finds the row and changes nothing.

use sqlx::PgPool;

use crate::RoundError;
use crate::graph_run::latest_checkpoint;
use firstline_investigation::evidence::Evidence;
use firstline_investigation::excerpt::MAX_EXCERPT_CHARS;
use firstline_investigation::{RoundResult, UnsupportedClaim};
use firstline_model::text::prefix;
use firstline_workflows::types::{CommitInput, CommitOutcome};

/// Commits round `input.round` from its finished checkpoint.
pub async fn commit_round(pool: &PgPool, input: &CommitInput) -> Result<CommitOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let checkpoint = latest_checkpoint(pool, thread_id, round, &input.run_id)
        .await?
        .filter(|c| c.step > 0 && c.is_finished())
        .ok_or(RoundError::NotRun { thread_id, round })?;
    let state = checkpoint.state;
    let result = RoundResult::from_state(&state);
    let result_json = serde_json::to_value(&result).map_err(|error| RoundError::BadResult {
        thread_id,
        round,
        error,
    })?;

    let mut tx = pool.begin().await?;
    let inserted: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result,
                             tool_calls, model_calls, prompt_tokens, completion_tokens,
                             headline, cause, text, asked)
         SELECT $1, $2, $3, $4,
                coalesce((SELECT min(created_at) FROM round_checkpoints
                           WHERE thread_id = $1 AND round = $2), now()),
                $5, $6, $7, $8, $9, $10, $11, $12, $13, $14
         ON CONFLICT (thread_id, number) DO NOTHING
         RETURNING id",
    )
    .bind(thread_id)
    .bind(round as i32)
    .bind(&input.workflow_id)
    .bind(&input.run_id)
    .bind(result.grounded)
    .bind(&result_json)
    .bind(clamp(u64::from(state.usage.tool_calls)))
    .bind(clamp(u64::from(state.usage.model_calls)))
    .bind(clamp(state.usage.prompt_tokens))
    .bind(clamp(state.usage.completion_tokens))
    .bind(headline(&result))
    .bind(first_cause(&result))
    .bind(&result.text)
    .bind(sqlx::types::Json(&result.questions))
    .fetch_optional(&mut *tx)
    .await?;
    let Some((round_id,)) = inserted else {
        tx.rollback().await?;
        let (round_id, grounded, asked): (i64, bool, bool) = sqlx::query_as(
            "SELECT id, grounded, jsonb_array_length(asked) > 0 FROM rounds
              WHERE thread_id = $1 AND number = $2",
        )
        .bind(thread_id)
        .bind(round as i32)
        .fetch_one(pool)
        .await?;
        let mut conn = pool.acquire().await?;
        let answered_meanwhile =
            !grounded && asked && replied_since_start(&mut conn, round_id).await?;
        return Ok(CommitOutcome {
            round_id,
            grounded,
            inserted: false,
            answered_meanwhile,
        });
    };

    for evidence in &state.evidence {
        insert_evidence(&mut tx, round_id, evidence).await?;
    }
    insert_claims(&mut tx, round_id, &result, &[]).await?;
    // People who replied while the round ran are its answers already: the next round starts
    // right away. Otherwise the latest round decides whether the thread awaits an answer
    // (`threads.awaiting_answer`): a person's reply then wakes the next round without a mention.
    let answered_meanwhile =
        awaits_answer(&result) && replied_since_start(&mut tx, round_id).await?;
    sqlx::query(
        "UPDATE threads SET rounds = greatest(rounds, $2), last_activity_at = now(),
                awaiting_answer = CASE WHEN $2 >= rounds THEN $3 ELSE awaiting_answer END
          WHERE id = $1",
    )
    .bind(thread_id)
    .bind(round as i32)
    .bind(awaits_answer(&result) && !answered_meanwhile)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!(round_id, grounded = result.grounded, "round committed");
    let outcome = if result.grounded {
        "grounded"
    } else {
        "asking"
    };
    metrics::counter!(crate::metrics::ROUNDS_FINISHED, "outcome" => outcome).increment(1);
    Ok(CommitOutcome {
        round_id,
        grounded: result.grounded,
        inserted: true,
        answered_meanwhile,
    })
}

/// Whether a person wrote in the thread of round `round_id` after it started (a reply, a
/// mention or a click it never read).
async fn replied_since_start(
    tx: &mut sqlx::PgConnection,
    round_id: i64,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM rounds r JOIN messages m ON m.thread_id = r.thread_id
                         WHERE r.id = $1 AND m.user_id IS NOT NULL
                           AND m.kind IN ('chatter', 'mention', 'answer')
                           AND m.received_at > r.started_at)",
    )
    .bind(round_id)
    .fetch_one(tx)
    .await
}

/// Whether a round's reply leaves the thread awaiting an answer: it asked instead of posting.
pub(crate) fn awaits_answer(result: &RoundResult) -> bool {
    !result.grounded && !result.questions.is_empty()
}

/// The report's headline, as the `rounds.headline` column keeps it.
pub(crate) fn headline(result: &RoundResult) -> &str {
    result.report.as_ref().map_or("", |r| r.headline.as_str())
}

/// The report's strongest cause, as the `rounds.cause` column keeps it.
pub(crate) fn first_cause(result: &RoundResult) -> Option<&str> {
    result
        .report
        .as_ref()
        .and_then(|r| r.causes.first())
        .map(|c| c.statement.as_str())
}

/// Stores round `round_id`'s claims: the report's, supported unless the verdict rejected them,
/// then `dropped` ones (unsupported; their reason stands where a quote would).
pub(crate) async fn insert_claims(
    tx: &mut sqlx::PgConnection,
    round_id: i64,
    result: &RoundResult,
    dropped: &[UnsupportedClaim],
) -> Result<(), sqlx::Error> {
    let unsupported: Vec<&str> = result
        .verdict
        .iter()
        .flat_map(|v| v.unsupported_claims.iter().map(|c| c.statement.as_str()))
        .collect();
    let kept = result.report.iter().flat_map(|r| r.claims()).map(|claim| {
        let refs: Vec<String> = claim.evidence.iter().map(ToString::to_string).collect();
        let supported = !unsupported.contains(&claim.statement.as_str());
        (
            claim.statement.as_str(),
            refs,
            claim.quote.as_str(),
            supported,
        )
    });
    let dropped = dropped
        .iter()
        .map(|c| (c.statement.as_str(), Vec::new(), c.reason.as_str(), false));
    for (ordinal, (text, refs, quote, supported)) in kept.chain(dropped).enumerate() {
        sqlx::query(
            "INSERT INTO claims (round_id, ordinal, text, evidence_refs, quote, supported)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(round_id)
        .bind(ordinal as i32 + 1)
        .bind(text)
        .bind(&refs)
        .bind(quote)
        .bind(supported)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// Stores one evidence item of round `round_id`; an item already stored (same ref) is kept.
pub(crate) async fn insert_evidence(
    tx: &mut sqlx::PgConnection,
    round_id: i64,
    evidence: &Evidence,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO evidence (round_id, ref, capability, server, tool, args, digest, excerpt,
                               fetched_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (round_id, ref) DO NOTHING",
    )
    .bind(round_id)
    .bind(evidence.id.to_string())
    .bind(evidence.capability.label())
    .bind(&evidence.server)
    .bind(&evidence.tool)
    .bind(&evidence.args)
    .bind(&evidence.digest)
    .bind(prefix(&evidence.excerpt, MAX_EXCERPT_CHARS))
    .bind(evidence.fetched_at)
    .execute(tx)
    .await?;
    Ok(())
}

pub(crate) fn clamp(value: u64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}
