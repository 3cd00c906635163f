//! A case's past incidents, written where recall looks for them: a resolved `threads` row and
//! an `incidents` row each, under the case's own team id so cases never see each other's
//! memory. With an embedding model, each incident is embedded as the embedder would embed it.
//! Every statement is bounded by a timeout.

use std::time::Duration;

use firstline_embed::Embedder;
use firstline_lab::Scenario;
use firstline_model::ThreadKey;
use firstline_store::PgPool;
use firstline_store::embeddings;
use firstline_store::incidents::{self, NewIncident};
use firstline_store::threads;

/// How long one insert may take.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Inserts `scenario`'s past incidents for `team_id`; returns how many.
pub async fn insert_past_incidents(
    pool: &PgPool,
    embedder: Option<&dyn Embedder>,
    team_id: &str,
    scenario: &Scenario,
) -> Result<usize, String> {
    for (i, past) in scenario.spec.past_incidents.iter().enumerate() {
        let resolved_at = past
            .at
            .map(|at| scenario.time(at))
            .unwrap_or(scenario.alert_at - chrono::Duration::days(7));
        let insert = async {
            let mut conn = pool.acquire().await?;
            let key = ThreadKey {
                team_id: team_id.to_string(),
                channel_id: "CEVAL".to_string(),
                thread_ts: format!("{}.{:06}", resolved_at.timestamp(), i),
            };
            let thread_id = threads::insert_resolved(&mut conn, &key, resolved_at).await?;
            let incident = NewIncident {
                thread_id,
                team_id: team_id.to_string(),
                permalink: past.thread_link.clone(),
                alertname: past.alertname.clone(),
                service: past.service.clone(),
                namespace: past.namespace.clone(),
                title: past.title.clone(),
                summary: past.summary.clone(),
                root_cause: past.root_cause.clone().unwrap_or_default(),
                resolution: past.resolution.clone().unwrap_or_default(),
                resolved_at,
                alert_count: 1,
            };
            let id = incidents::insert(&mut conn, &incident).await?;
            if let (Some(id), Some(embedder)) = (id, embedder) {
                let text = incident.text();
                let vectors = embedder
                    .embed(&[text])
                    .await
                    .map_err(|e| sqlx::Error::Protocol(format!("embedding: {e}")))?;
                let pairs: Vec<(i64, Vec<f32>)> = vectors.into_iter().map(|v| (id, v)).collect();
                embeddings::write(pool, embedder.model(), &[], &pairs).await?;
            }
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
