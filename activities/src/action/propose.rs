//! `propose_action`: a committed, grounded round's proposal, prepared for approval. The action
//! comes from the round's report (its verified headline cause decided it); here it becomes the
//! exact change against the object as the write server returns it now, and is stored once per
//! round with its hash and expiry. A proposal that cannot be prepared (the object moved on, the
//! write server down) is not shown, and the round's reply is posted as it would have been.

use chrono::{Duration, SecondsFormat, Utc};
use sqlx::PgPool;

use firstline_investigation::investigate::alert_expression;
use firstline_investigation::{AlertInput, RoundResult};
use firstline_store::actions::{self as store, NewAction};
use firstline_workflows::types::{ProposeInput, ProposeOutcome};

use super::ActionDeps;
use super::change::{self, Change};
use crate::RoundError;

/// Prepares round `input.round`'s proposal, if it has one; idempotent on the round.
pub async fn propose_action(
    pool: &PgPool,
    deps: &ActionDeps,
    input: &ProposeInput,
) -> Result<ProposeOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let row: Option<(i64, bool, serde_json::Value)> = sqlx::query_as(
        "SELECT id, grounded, result FROM rounds WHERE thread_id = $1 AND number = $2",
    )
    .bind(thread_id)
    .bind(round as i32)
    .fetch_optional(pool)
    .await?;
    let Some((round_id, grounded, result)) = row else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    if let Some(existing) = store::of_round(pool, round_id).await? {
        return Ok(ProposeOutcome {
            action_id: Some(existing.id),
            not_shown: None,
        });
    }
    let not_shown = |reason: String| {
        tracing::info!(%reason, "the round's proposal is not shown");
        super::count("not_shown");
        Ok(ProposeOutcome {
            action_id: None,
            not_shown: Some(reason),
        })
    };
    if !deps.settings.enabled || !grounded {
        return Ok(ProposeOutcome {
            action_id: None,
            not_shown: None,
        });
    }
    let result: RoundResult =
        serde_json::from_value(result).map_err(|error| RoundError::BadResult {
            thread_id,
            round,
            error,
        })?;
    let Some(proposal) = result.report.and_then(|report| report.proposal) else {
        return Ok(ProposeOutcome {
            action_id: None,
            not_shown: None,
        });
    };
    let calls = deps.writer.scope("propose", thread_id, round, 0);
    let read = match deps.writer.read(&calls, &proposal.action).await {
        Ok(read) => read,
        Err(reason) => return not_shown(format!("could not read what it would change: {reason}")),
    };
    let key = format!("firstline-{thread_id}-{round}");
    let now = Utc::now();
    let mut change = match change::plan(
        &proposal.action,
        &read,
        &key,
        &now.to_rfc3339_opts(SecondsFormat::Secs, true),
    ) {
        Ok(change) => change,
        Err(error) => return not_shown(error.to_string()),
    };
    let alert = AlertInput::parse(input.alert.text.clone(), None);
    change.query = alert_expression(&alert.target).map(|(query, _)| query);
    let row = store::propose(
        pool,
        &NewAction {
            thread_id,
            round_id,
            action: proposal.action.clone(),
            cause: proposal.cause.clone(),
            change: serde_json::to_value(shown(change.clone(), &proposal.why)).unwrap_or_default(),
            change_hash: change.hash.clone(),
            expires_at: now
                + Duration::seconds(
                    i64::try_from(deps.settings.approval_timeout_secs).unwrap_or(i64::MAX / 1000),
                ),
        },
    )
    .await?;
    super::count("proposed");
    tracing::info!(action_id = row.id, object = %row.object, "action proposed");
    Ok(ProposeOutcome {
        action_id: Some(row.id),
        not_shown: None,
    })
}

/// The change as stored and shown: each field's values redacted (a template may hold literal
/// credentials), and why the action fits.
fn shown(mut change: Change, why: &str) -> Change {
    for field in &mut change.fields {
        let key = field_key(&field.field);
        field.before = redacted(key, &field.before);
        field.after = redacted(key, &field.after);
    }
    change.why = firstline_redact::redact(why).text;
    change
}

/// What names a field's value: an env entry's name (`env[DB_PASSWORD].value` → `DB_PASSWORD`),
/// else the path's last segment.
fn field_key(path: &str) -> &str {
    let path = path.strip_suffix(".value").unwrap_or(path);
    match path.rsplit_once('[') {
        Some((_, name)) if path.ends_with(']') => name.trim_end_matches(']'),
        _ => path.rsplit('.').next().unwrap_or(path),
    }
}

/// `value` as shown: hidden whole when its key makes it a secret (`DB_PASSWORD=…`), else with
/// what the redaction rules find in it removed.
fn redacted(key: &str, value: &str) -> String {
    let keyed = format!("{key}={value}");
    if firstline_redact::redact(&keyed).text != keyed {
        return "(redacted)".to_string();
    }
    firstline_redact::redact(value).text
}

#[cfg(test)]
mod tests {
    use super::{field_key, redacted};

    #[test]
    fn a_value_its_key_names_a_secret_is_hidden_whole() {
        let field = "spec.template.spec.containers[app].env[DB_PASSWORD].value";
        assert_eq!(field_key(field), "DB_PASSWORD");
        assert_eq!(redacted(field_key(field), "Summer2024!"), "(redacted)");
        let level = "spec.template.spec.containers[app].env[LOG_LEVEL].value";
        assert_eq!(redacted(field_key(level), "debug"), "debug");
        let image = "spec.template.spec.containers[app].image";
        assert_eq!(field_key(image), "image");
        assert_eq!(
            redacted(field_key(image), "shop/checkout:1.8.2"),
            "shop/checkout:1.8.2"
        );
    }
}
