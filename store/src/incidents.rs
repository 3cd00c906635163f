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
    /// Alerts the incident's group linked (1: an alert of its own).
    pub alert_count: i64,
}

impl NewIncident {
    /// What the incident is embedded from (`firstline_model::incident_text`).
    pub fn text(&self) -> String {
        firstline_model::incident_text(
            &self.title,
            &self.root_cause,
            &self.resolution,
            &self.summary,
            self.alertname.as_deref(),
            self.service.as_deref(),
        )
    }
}

/// Records `incident`; `None` when its thread already has one.
pub async fn insert(
    conn: &mut PgConnection,
    incident: &NewIncident,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO incidents (thread_id, team_id, permalink, alertname, service, namespace,
                                title, summary, root_cause, resolution, resolved_at,
                                alert_count)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
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
    .bind(i32::try_from(incident.alert_count.max(1)).unwrap_or(i32::MAX))
    .fetch_optional(&mut *conn)
    .await
}

/// What to look for, in one workspace: a vector (by meaning), full-text words and exact
/// identifiers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IncidentSearch {
    pub team_id: String,
    /// A `websearch_to_tsquery` query (never a syntax error, whatever it holds).
    pub text: String,
    pub alertname: Option<String>,
    pub service: Option<String>,
    pub namespace: Option<String>,
    /// The alert embedded by `embedding_model`; `None` searches by keywords and identifiers only.
    pub embedding: Option<Vec<f32>>,
    /// The model `embedding` came from: only incidents embedded by the same model are compared.
    pub embedding_model: String,
    /// Cosine similarity below which a nearest neighbour is not similar at all (every query has
    /// nearest neighbours; most are unrelated).
    pub min_similarity: f64,
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
    /// Alerts its group linked (a storm is one incident).
    #[serde(default = "one")]
    pub alert_count: i32,
}

fn one() -> i32 {
    1
}

/// A past incident that matched, with its fused score and what matched.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct IncidentHit {
    #[sqlx(flatten)]
    pub incident: PastIncident,
    /// Reciprocal rank fusion: the sum over the signals that found it of 1 / (60 + its rank in
    /// that signal's list).
    pub score: f64,
    /// Cosine similarity to the query vector, when the vector search found it.
    pub similarity: Option<f64>,
    pub vector_match: bool,
    pub text_match: bool,
    pub alertname_match: bool,
    pub service_match: bool,
    pub namespace_match: bool,
}

/// Candidates each signal contributes to the fusion.
const CANDIDATES_PER_SIGNAL: i64 = 20;

/// Most recent incidents sharing a word with the alert that full-text ranking reads (1,000:
/// about 5 ms of `ts_rank` on this machine). An alert's
/// words are OR-ed (recall is lenient), so in a large history most incidents share one; ranking
/// them all would cost a scan of the team's history per round. Older ones are still found by
/// meaning and by identifiers.
const TEXT_CANDIDATES: i64 = 1_000;

/// The three ranked lists and their reciprocal rank fusion (k = 60, the constant of Cormack et
/// al.), all scoped to the team. The vector list is pgvector's HNSW nearest neighbours of the
/// same embedding model, cut at the similarity floor; the text list is `ts_rank` order over the
/// [`TEXT_CANDIDATES`] most recent matches; the identifier list ranks an incident matching both
/// alertname and service above one matching either, then those in the alert's namespace (a
/// namespace alone never matches: every incident in `default` would), among the most recent
/// [`CANDIDATES_PER_SIGNAL`] of each kind of match, read from indexes in `resolved_at` order.
const SEARCH_SQL: &str = r#"
WITH q AS (SELECT websearch_to_tsquery('english', $2) AS query),
nearest AS (
    SELECT id, 1 - (embedding <=> $7::text::vector) AS similarity
    FROM incidents
    WHERE $7::text IS NOT NULL AND team_id = $1 AND embedding_model = $8
    ORDER BY embedding <=> $7::text::vector
    LIMIT $10
),
by_vector AS (
    SELECT id, similarity, row_number() OVER (ORDER BY similarity DESC, id DESC) AS rank
    FROM nearest WHERE similarity >= $9
),
recent_text AS (
    SELECT i.id, ts_rank(i.search, q.query, 32) AS text_rank
    FROM incidents i, q
    WHERE i.team_id = $1 AND i.search @@ q.query
    ORDER BY i.resolved_at DESC
    LIMIT $11
),
by_text AS (
    SELECT id, row_number() OVER (ORDER BY text_rank DESC, id DESC) AS rank
    FROM recent_text
    ORDER BY rank
    LIMIT $10
),
identified AS (
    (SELECT id, 2 AS strength, coalesce(namespace = $5, false) AS same_namespace, resolved_at
     FROM incidents WHERE team_id = $1 AND alertname = $3 AND service = $4
     ORDER BY resolved_at DESC LIMIT $10)
    UNION ALL
    (SELECT id, 1, coalesce(namespace = $5, false), resolved_at
     FROM incidents WHERE team_id = $1 AND alertname = $3
     ORDER BY resolved_at DESC LIMIT $10)
    UNION ALL
    (SELECT id, 1, coalesce(namespace = $5, false), resolved_at
     FROM incidents WHERE team_id = $1 AND service = $4
     ORDER BY resolved_at DESC LIMIT $10)
),
by_identifiers AS (
    SELECT id, row_number() OVER (
               ORDER BY max(strength) DESC, bool_or(same_namespace) DESC, max(resolved_at) DESC,
                        id DESC) AS rank
    FROM identified
    GROUP BY id
    ORDER BY rank
    LIMIT $10
),
fused AS (
    SELECT id, sum(1.0 / (60 + rank))::float8 AS score,
           bool_or(signal = 'vector') AS vector_match,
           bool_or(signal = 'text') AS text_match,
           max(similarity) AS similarity
    FROM (
        SELECT id, rank, 'vector' AS signal, similarity FROM by_vector
        UNION ALL SELECT id, rank, 'text', NULL FROM by_text
        UNION ALL SELECT id, rank, 'identifiers', NULL FROM by_identifiers
    ) ranked
    GROUP BY id
)
SELECT i.id, i.title, i.summary, i.root_cause, i.resolution, i.permalink, i.alertname,
       i.service, i.namespace, i.resolved_at, i.alert_count, f.score, f.similarity::float8 AS similarity,
       f.vector_match, f.text_match,
       coalesce(i.alertname = $3, false) AS alertname_match,
       coalesce(i.service = $4, false) AS service_match,
       coalesce(i.namespace = $5, false) AS namespace_match
FROM fused f JOIN incidents i USING (id)
ORDER BY f.score DESC, i.resolved_at DESC, i.id DESC
LIMIT $6
"#;

/// The best `limit` incidents of `search.team_id`, by the fusion of the signals `search` has.
pub async fn search(
    pool: &PgPool,
    search: &IncidentSearch,
    limit: u32,
) -> Result<Vec<IncidentHit>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // Both for this transaction only, in one round trip. The team (and model) filter is applied
    // to the HNSW scan's output; iterative scans keep reading the index until enough rows pass
    // it, instead of returning too few. A generic plan of the statement cannot see the query
    // vector and may not use the index.
    sqlx::query(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
                set_config('plan_cache_mode', 'force_custom_plan', true)",
    )
    .execute(&mut *tx)
    .await?;
    let hits = sqlx::query_as(SEARCH_SQL)
        .bind(&search.team_id)
        .bind(&search.text)
        .bind(&search.alertname)
        .bind(&search.service)
        .bind(&search.namespace)
        .bind(i64::from(limit))
        .bind(search.embedding.as_deref().map(vector_literal))
        .bind(&search.embedding_model)
        .bind(search.min_similarity)
        .bind(CANDIDATES_PER_SIGNAL)
        .bind(TEXT_CANDIDATES)
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(hits)
}

/// Whether any incident of `team_id` has an embedding of `model` (without one, recall by meaning
/// has nothing to compare with and says so).
pub async fn any_embedded(pool: &PgPool, team_id: &str, model: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM incidents WHERE team_id = $1 AND embedding_model = $2)",
    )
    .bind(team_id)
    .bind(model)
    .fetch_one(pool)
    .await
}

/// pgvector's text form of `vector`: `[0.1,0.2,…]`.
pub fn vector_literal(vector: &[f32]) -> String {
    let mut text = String::with_capacity(vector.len() * 12 + 2);
    text.push('[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&x.to_string());
    }
    text.push(']');
    text
}
