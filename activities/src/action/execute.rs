//! `execute_action`: an approved action's write, sent at most once.
//!
//! Each attempt is counted on the row before anything is sent. An attempt then reads the object
//! as the write server returns it now:
//! - the action's idempotency key is on it (or the replicas are the target, or the pod is gone):
//!   an earlier attempt's write landed and its outcome was lost with its worker — recorded as
//!   executed, nothing sent again;
//! - it moved on since the approver saw the change (another resourceVersion, other replicas):
//!   refused with the reason, nothing sent;
//! - otherwise the write is computed again from it and sent only if its hash is the approved one.
//!
//! The write's answer is kept under the action's scope (`tool_cache`), so a retry that gets past
//! the read gets the first answer back instead of writing twice. A refusal (RBAC, a conflict) or a
//! server that cannot be reached ends the action as failed at once: an approval is for the change
//! as shown now, and a later retry would act on a cluster nobody looked at. Only a write whose
//! answer was lost is retried (by Temporal, within `round.activity_attempts`), and the next
//! attempt reads the object first.

use sqlx::PgPool;

use firstline_investigation::tools::Written;
use firstline_model::{ActionState, faults};
use firstline_store::actions::{self as store, ActionRow, Execution};
use firstline_workflows::types::{ActionInput, ActionOutcome};

use super::ActionDeps;
use super::change::{self, Change, Read};
use crate::RoundError;

/// Executes action `input.action_id` if it is approved and not yet done.
pub async fn execute_action(
    pool: &PgPool,
    deps: &ActionDeps,
    input: &ActionInput,
) -> Result<ActionOutcome, RoundError> {
    let action_id = input.action_id;
    let (attempt, row) = match store::start_execution(pool, action_id).await? {
        Execution::Start { attempt, row } => (attempt, row),
        Execution::Finished(row) | Execution::NotApproved(row) => return Ok(outcome(&row)),
    };
    let change: Change = serde_json::from_value(row.change.clone())
        .map_err(|error| RoundError::BadChange { action_id, error })?;
    faults::pause(faults::ACTION_BEFORE_WRITE).await;
    let reads = deps.writer.scope(
        &format!("read-{attempt}"),
        row.thread_id,
        row.round,
        action_id,
    );
    let target = row.action.object();
    let finish = |executed: bool, result: String| async move {
        let row = store::finish_execution(pool, action_id, executed, &result).await?;
        super::count(if row.state == ActionState::Executed {
            "executed"
        } else {
            "failed"
        });
        tracing::info!(state = row.state.as_str(), %result, "action finished");
        Ok::<_, RoundError>(outcome(&row))
    };
    // Once a write may have been sent, not knowing is a reason to look again, never an outcome.
    let write_sent = row.write_sent;
    let shown = target.to_string();
    let unreadable = |reason: String| async move {
        let target = shown;
        if write_sent {
            Err(RoundError::WriteUnknown {
                action_id,
                reason: format!("could not read {target} after a write was sent: {reason}"),
            })
        } else {
            finish(
                false,
                format!("not executed: could not read {target}: {reason}"),
            )
            .await
        }
    };
    // One read: what it shows decides, and the write is computed from it.
    let read = match &row.action {
        firstline_model::Action::DeletePod { .. } => match deps.writer.get(&reads, &target).await {
            Ok(Some(object)) => Some(Read {
                object,
                replica_sets: Vec::new(),
            }),
            Ok(None) => None,
            Err(reason) => return unreadable(reason).await,
        },
        action => match deps.writer.read(&reads, action).await {
            Ok(read) => Some(read),
            Err(reason) => return unreadable(reason).await,
        },
    };
    let now = read.as_ref().map(|r| &r.object);
    if change::already_applied(&change, &row.action, now) {
        // The key is this action's own; a target state without it (replicas, a pod gone) is
        // ours only if this action sent its write.
        if change.tool == "resources_create_or_update" || row.write_sent {
            return finish(
                true,
                format!("{target} already carries this change (an earlier attempt applied it)"),
            )
            .await;
        }
        return finish(
            false,
            format!("refused: {target} is already as this action would leave it, by someone else's hand; nothing was written"),
        )
        .await;
    }
    if let Some(why) = change::moved_on(&change, now) {
        return finish(false, format!("refused: {why}; nothing was written")).await;
    }
    let Some(read) = read else {
        return finish(
            false,
            format!("refused: {target} no longer exists; nothing was written"),
        )
        .await;
    };
    let planned = match change::plan(&row.action, &read, &change.key, &change.stamp) {
        Ok(planned) => planned,
        Err(error) => return finish(false, format!("refused: {error}; nothing was written")).await,
    };
    if planned.hash != row.change_hash {
        return finish(
            false,
            format!(
                "refused: the change computed from {target} now is not the one approved; nothing was written"
            ),
        )
        .await;
    }
    store::write_sent(pool, action_id).await?;
    let writes = deps
        .writer
        .scope("write", row.thread_id, row.round, action_id);
    let written = deps.writer.send(&writes, &planned).await;
    faults::pause(faults::ACTION_AFTER_WRITE).await;
    match written {
        Written::Applied(answer) => {
            finish(true, format!("applied: {}", said(&answer, &target))).await
        }
        Written::Refused(words) => {
            finish(false, format!("the write server refused: {words}")).await
        }
        Written::NotSent(reason) => finish(false, format!("not sent: {reason}")).await,
        Written::Unknown(reason) => Err(RoundError::WriteUnknown { action_id, reason }),
    }
}

/// The outcome the workflow sees.
pub(super) fn outcome(row: &ActionRow) -> ActionOutcome {
    ActionOutcome {
        action_id: row.id,
        state: row.state,
        detail: row.result.clone(),
        recovered: row
            .verification
            .as_ref()
            .and_then(|v| v.get("recovered"))
            .and_then(serde_json::Value::as_bool),
    }
}

/// What the server answered, in words: a create-or-update answers with the object written,
/// whose first line says nothing.
fn said(first_line: &str, target: &firstline_model::ObjectRef) -> String {
    if first_line.starts_with("apiVersion:")
        || first_line.starts_with('{')
        || first_line.starts_with('#')
    {
        format!("{target} updated")
    } else {
        first_line.to_string()
    }
}
