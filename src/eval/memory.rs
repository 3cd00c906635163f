//! A case's past incidents, written where recall looks for them: a resolved `threads` row and
//! an `incidents` row each, under the case's own team id so cases never see each other's
//! memory. Every statement is bounded by a timeout.

use std::time::Duration;

use firstline_lab::Scenario;
use firstline_store::PgPool;

/// How long one insert may take.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Inserts `scenario`'s past incidents for `team_id`; returns how many.
pub async fn insert_past_incidents(
    pool: &PgPool,
    team_id: &str,
    scenario: &Scenario,
) -> Result<usize, String> {
    for (i, past) in scenario.spec.past_incidents.iter().enumerate() {
        let resolved_at = past
            .at
            .map(|at| scenario.time(at))
            .unwrap_or(scenario.alert_at - chrono::Duration::days(7));
        let insert = async {
            let thread: i64 = sqlx::query_scalar(
                "INSERT INTO threads (team_id, channel_id, thread_ts, status, opened_at, resolved_at)
                 VALUES ($1, 'CEVAL', $2, 'resolved', $3, $3) RETURNING id",
            )
            .bind(team_id)
            .bind(format!("{}.{:06}", resolved_at.timestamp(), i))
            .bind(resolved_at)
            .fetch_one(pool)
            .await?;
            sqlx::query(
                "INSERT INTO incidents (thread_id, team_id, permalink, alertname, service,
                                        namespace, title, summary, root_cause, resolution,
                                        resolved_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(thread)
            .bind(team_id)
            .bind(&past.thread_link)
            .bind(&past.alertname)
            .bind(&past.service)
            .bind(&past.namespace)
            .bind(&past.title)
            .bind(&past.summary)
            .bind(past.root_cause.as_deref().unwrap_or_default())
            .bind(past.resolution.as_deref().unwrap_or_default())
            .bind(resolved_at)
            .execute(pool)
            .await?;
            Ok::<_, sqlx::Error>(())
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, insert).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("inserting past incident {}: {e}", i + 1)),
            Err(_) => {
                return Err(format!(
                    "inserting past incident {} took longer than {STATEMENT_TIMEOUT:?}",
                    i + 1
                ));
            }
        }
    }
    Ok(scenario.spec.past_incidents.len())
}
