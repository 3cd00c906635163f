//! The `recall` node: have we seen this before? (DESIGN §1 step 6.)
//!
//! First version, no vectors yet: past incidents of the same workspace (Slack team) found by
//! Postgres full-text search over `incidents.search` plus exact identifier matches (alertname,
//! service), best three, each with summary, root cause, resolution, link and a score.
//! pgvector cosine similarity and reciprocal rank fusion of the three rankings come in a later
//! issue (the embedder); they replace [`search_incidents`]'s ordering, not this node's shape.
//!
//! Scoring: an exact alertname match and an exact service match count 1.0 each, the text rank
//! (`ts_rank` normalised to 0..1) adds up to 1.0, and a matching namespace adds 0.25. A namespace
//! alone never makes an incident "similar" (every incident in `default` would be); it only
//! breaks ties.
//!
//! No database, no workspace, or a failing query: recall reports "memory unavailable" as
//! missing evidence and the round goes on.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use tracing::Instrument;

use crate::alert::AlertTarget;
use crate::evidence::Capability;

use super::state::{IncidentState, IncidentUpdate, Missing};

/// Bounds of recall.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallOptions {
    /// Incidents returned at most.
    pub limit: u32,
    /// Longest wait for the query.
    pub query_timeout: Duration,
    /// Words of the alert used as full-text search terms at most.
    pub max_terms: usize,
}

impl Default for RecallOptions {
    fn default() -> Self {
        Self {
            limit: 3,
            query_timeout: Duration::from_secs(5),
            max_terms: 24,
        }
    }
}

/// A similar past incident.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorIncident {
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
    /// Higher is more similar; see the module doc for the scale.
    pub score: f64,
    /// What matched: `alertname`, `service`, `namespace`, `text`.
    pub matched_on: Vec<String>,
}

/// What recall searches for, taken from the alert.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecallQuery {
    pub team_id: String,
    /// Full-text terms, OR-ed.
    pub terms: Vec<String>,
    pub alertname: Option<String>,
    /// The alert's service, else its workload (incidents record the application's name).
    pub service: Option<String>,
    pub namespace: Option<String>,
}

impl RecallQuery {
    /// The query for `target` in workspace `team_id`.
    pub fn for_alert(team_id: &str, target: &AlertTarget, max_terms: usize) -> Self {
        let texts = [
            target.alertname.as_deref(),
            target.service.as_deref(),
            target.workload.as_deref(),
            target.container.as_deref(),
            target.summary.as_deref(),
            target.description.as_deref(),
        ];
        // The namespace is an identifier with its own (small) weight; as a search word it
        // would match every incident in `default`.
        let namespace = target.namespace.as_deref().map(str::to_ascii_lowercase);
        let mut terms = search_terms(texts.into_iter().flatten(), max_terms);
        terms.retain(|t| Some(t) != namespace.as_ref());
        Self {
            team_id: team_id.to_string(),
            terms,
            alertname: target.alertname.clone(),
            service: target.service.clone().or_else(|| target.workload.clone()),
            namespace: target.namespace.clone(),
        }
    }

    /// The terms as a `websearch_to_tsquery` OR-query (never a syntax error).
    fn websearch(&self) -> String {
        self.terms.join(" or ")
    }
}

/// Distinct lowercase words of at least three characters, in order of first appearance, without
/// numbers, stop words and websearch operators.
fn search_terms<'a>(texts: impl Iterator<Item = &'a str>, max_terms: usize) -> Vec<String> {
    const STOP: &[&str] = &[
        "and", "not", "the", "for", "with", "from", "this", "that", "are", "was", "has", "have",
        "its", "pod", "pods", "state", "reason", "waiting", "minutes", "than", "more", "into",
    ];
    let mut seen = BTreeSet::new();
    let mut terms = Vec::new();
    for text in texts {
        for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
            let word = word.to_ascii_lowercase();
            if word.len() < 3
                || word.bytes().all(|b| b.is_ascii_digit())
                || STOP.contains(&word.as_str())
            {
                continue;
            }
            if seen.insert(word.clone()) {
                terms.push(word);
                if terms.len() >= max_terms {
                    return terms;
                }
            }
        }
    }
    terms
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    title: String,
    summary: String,
    root_cause: String,
    resolution: String,
    permalink: Option<String>,
    alertname: Option<String>,
    service: Option<String>,
    namespace: Option<String>,
    resolved_at: DateTime<Utc>,
    score: f64,
    text_match: bool,
    alertname_match: bool,
    service_match: bool,
    namespace_match: bool,
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

/// The best `limit` past incidents of `query.team_id` for `query`.
pub async fn search_incidents(
    pool: &PgPool,
    query: &RecallQuery,
    limit: u32,
) -> Result<Vec<PriorIncident>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(SEARCH_SQL)
        .bind(&query.team_id)
        .bind(query.websearch())
        .bind(&query.alertname)
        .bind(&query.service)
        .bind(&query.namespace)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let matched_on = [
                (row.alertname_match, "alertname"),
                (row.service_match, "service"),
                (row.namespace_match, "namespace"),
                (row.text_match, "text"),
            ]
            .into_iter()
            .filter(|(matched, _)| *matched)
            .map(|(_, name)| name.to_string())
            .collect();
            PriorIncident {
                id: row.id,
                title: row.title,
                summary: row.summary,
                root_cause: row.root_cause,
                resolution: row.resolution,
                permalink: row.permalink,
                alertname: row.alertname,
                service: row.service,
                namespace: row.namespace,
                resolved_at: row.resolved_at,
                score: (row.score * 1000.0).round() / 1000.0,
                matched_on,
            }
        })
        .collect())
}

/// The recall node's body.
pub async fn recall(
    pool: Option<&PgPool>,
    state: &IncidentState,
    options: &RecallOptions,
) -> IncidentUpdate {
    let span = tracing::info_span!("incident.recall", found = tracing::field::Empty);
    async {
        let unavailable = |why: String| {
            IncidentUpdate::default().missing(vec![Missing::failed(
                memory(),
                format!("memory unavailable ({why})"),
            )])
        };
        let Some(pool) = pool else {
            return unavailable("no database configured".to_string());
        };
        let Some(team_id) = state.context.team_id.as_deref() else {
            return unavailable("the thread's Slack workspace is not known".to_string());
        };
        let query = RecallQuery::for_alert(team_id, &state.alert.target, options.max_terms);
        let searched = tokio::time::timeout(
            options.query_timeout,
            search_incidents(pool, &query, options.limit),
        )
        .await;
        match searched {
            Ok(Ok(found)) => {
                tracing::Span::current().record("found", found.len());
                IncidentUpdate::default().prior_incidents(found)
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "recall query failed");
                unavailable(format!("the incident search failed ({error})"))
            }
            Err(_) => unavailable(format!(
                "the incident search took longer than {} s",
                options.query_timeout.as_secs()
            )),
        }
    }
    .instrument(span)
    .await
}

/// The capability name recall's missing evidence is recorded under.
pub fn memory() -> Capability {
    Capability::Other("incident memory".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_distinct_words_without_noise() {
        let terms = search_terms(
            [
                "KubePodCrashLooping",
                "payments-api",
                "Pod default/payments-api-7d9f8c6b5-x2k4q is in waiting state and not ready 15",
            ]
            .into_iter(),
            24,
        );
        assert_eq!(
            terms,
            [
                "kubepodcrashlooping",
                "payments",
                "api",
                "default",
                "7d9f8c6b5",
                "x2k4q",
                "ready"
            ]
        );
        assert_eq!(
            search_terms(["a b c d e f"].into_iter(), 24),
            Vec::<String>::new()
        );
        assert_eq!(
            search_terms(["one two three four"].into_iter(), 2),
            ["one", "two"]
        );
    }
}
