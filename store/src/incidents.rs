//! `incidents`: what a resolved thread taught us. The bot writes one when it resolves a thread;
//! `firstline eval` imports a case's past incidents; the investigation's recall searches them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool};

/// An incident to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIncident {
    /// `threads.id` of the resolved thread (one incident per thread).
    pub thread_id: i64,
    /// Workspace: recall never crosses it.
    pub team_id: String,
    /// Link to the old Slack thread.
    pub permalink: Option<String>,
    pub alertname: Option<String>,
    pub service: Option<String>,
    pub namespace: Option<String>,
    pub title: String,
    pub summary: String,
    pub root_cause: String,
    pub resolution: String,
    pub resolved_at: DateTime<Utc>,
}

/// Records `incident`; `None` when its thread already has one.
pub async fn insert(
    conn: &mut PgConnection,
    incident: &NewIncident,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO incidents (thread_id, team_id, permalink, alertname, service, namespace,
                                title, summary, root_cause, resolution, resolved_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (thread_id) DO NOTHING
         RETURNING id",
    )
    .bind(incident.thread_id)
    .bind(&incident.team_id)
    .bind(&incident.permalink)
    .bind(&incident.alertname)
    .bind(&incident.service)
    .bind(&incident.namespace)
    .bind(&incident.title)
    .bind(&incident.summary)
    .bind(&incident.root_cause)
    .bind(&incident.resolution)
    .bind(incident.resolved_at)
    .fetch_optional(&mut *conn)
    .await
}

/// What to look for: full-text words and exact identifiers, in one workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncidentSearch {
    pub team_id: String,
    /// A `websearch_to_tsquery` query (never a syntax error, whatever it holds).
    pub text: String,
    pub alertname: Option<String>,
    pub service: Option<String>,
    pub namespace: Option<String>,
}

/// A recorded incident, as recall shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
pub struct PastIncident {
    /// `incidents.id`.
    pub id: i64,
    pub title: String,
    pub summary: String,
    pub root_cause: String,
    pub resolution: String,
    /// Link to the old Slack thread.
    pub permalink: Option<String>,
    pub alertname: Option<String>,
    pub service: Option<String>,
    pub namespace: Option<String>,
    pub resolved_at: DateTime<Utc>,
}

/// A past incident that matched, with its score and what matched.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct IncidentHit {
    #[sqlx(flatten)]
    pub incident: PastIncident,
    /// An exact alertname and an exact service match count 1.0 each, the text rank
    /// (normalised to 0..1) adds up to 1.0, a matching namespace 0.25.
    pub score: f64,
    pub text_match: bool,
    pub alertname_match: bool,
    pub service_match: bool,
    pub namespace_match: bool,
}

const SEARCH_SQL: &str = r#"
WITH q AS (SELECT websearch_to_tsquery('english', $2) AS query),
scored AS (
    SELECT i.*,
           coalesce(i.search @@ q.query, false) AS text_match,
           coalesce(i.alertname = $3, false) AS alertname_match,
           coalesce(i.service = $4, false) AS service_match,
           coalesce(i.namespace = $5, false) AS namespace_match,
           CASE WHEN i.search @@ q.query THEN ts_rank(i.search, q.query, 32)::float8 ELSE 0 END
               AS text_rank
    FROM incidents i, q
    WHERE i.team_id = $1
)
SELECT id, title, summary, root_cause, resolution, permalink, alertname, service, namespace,
       resolved_at, text_match, alertname_match, service_match, namespace_match,
       (CASE WHEN alertname_match THEN 1.0 ELSE 0 END
        + CASE WHEN service_match THEN 1.0 ELSE 0 END
        + CASE WHEN namespace_match THEN 0.25 ELSE 0 END
        + text_rank)::float8 AS score
FROM scored
WHERE text_match OR alertname_match OR service_match
ORDER BY score DESC, resolved_at DESC, id DESC
LIMIT $6
"#;

/// The best `limit` incidents of `search.team_id`. A namespace alone never matches (every
/// incident in `default` would); it only breaks ties.
pub async fn search(
    pool: &PgPool,
    search: &IncidentSearch,
    limit: u32,
) -> Result<Vec<IncidentHit>, sqlx::Error> {
    sqlx::query_as(SEARCH_SQL)
        .bind(&search.team_id)
        .bind(&search.text)
        .bind(&search.alertname)
        .bind(&search.service)
        .bind(&search.namespace)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await
}
