//! The `recall` node: have we seen this before? (Step 6 of the seven: ARCHITECTURE.md.)
//!
//! First version, no vectors yet: past incidents of the same workspace (Slack team) found by
//! Postgres full-text search over `incidents.search` plus exact identifier matches (alertname,
//! service), best three, each with summary, root cause, resolution, link and a score.
//! The query itself is `firstline_store::incidents::search`; pgvector similarity and rank
//! fusion replace its ordering, not this node's shape.
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

use firstline_store::PgPool;
use firstline_store::incidents::{self, IncidentSearch, PastIncident};
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use crate::evidence::Capability;
use firstline_alert::AlertTarget;

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
    #[serde(flatten)]
    pub incident: PastIncident,
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

/// The best `limit` past incidents of `query.team_id` for `query`.
pub async fn search_incidents(
    pool: &PgPool,
    query: &RecallQuery,
    limit: u32,
) -> Result<Vec<PriorIncident>, sqlx::Error> {
    let search = IncidentSearch {
        team_id: query.team_id.clone(),
        text: query.websearch(),
        alertname: query.alertname.clone(),
        service: query.service.clone(),
        namespace: query.namespace.clone(),
    };
    let hits = incidents::search(pool, &search, limit).await?;
    Ok(hits
        .into_iter()
        .map(|hit| {
            let matched_on = [
                (hit.alertname_match, "alertname"),
                (hit.service_match, "service"),
                (hit.namespace_match, "namespace"),
                (hit.text_match, "text"),
            ]
            .into_iter()
            .filter(|(matched, _)| *matched)
            .map(|(_, name)| name.to_string())
            .collect();
            PriorIncident {
                incident: hit.incident,
                score: (hit.score * 1000.0).round() / 1000.0,
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
