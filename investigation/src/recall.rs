//! The `recall` node: have we seen this before? (Step 6 of the seven: ARCHITECTURE.md.)
//!
//! Past incidents of the same workspace (Slack team), found by three signals and fused by
//! reciprocal rank fusion (`firstline_store::incidents::search`):
//!
//! - **meaning**: the alert's text embedded by the configured model, compared with the incidents'
//!   vectors of the same model (pgvector HNSW, cosine), above a similarity floor;
//! - **text**: Postgres full-text search of the alert's words over `incidents.search`;
//! - **identifiers**: exact alertname and service matches (a namespace only breaks ties).
//!
//! Each prior incident says which signals found it. When meaning cannot be used — no embedding
//! model, no incident embedded yet by this model, or embedding the alert failed — recall still
//! runs on text and identifiers and records why it did so as a skipped piece of evidence, so the
//! report never implies a search it did not make.
//!
//! No database, no workspace, or a failing query: recall reports "memory unavailable" as
//! missing evidence and the round goes on.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use firstline_embed::Embedder;
use firstline_store::PgPool;
use firstline_store::incidents::{self, IncidentSearch};
use tracing::Instrument;

use crate::missing::Missing;
use crate::prior::{PriorIncident, memory};
use firstline_alert::AlertTarget;

use super::state::{IncidentState, IncidentUpdate};

/// Bounds of recall.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallOptions {
    /// Incidents returned at most.
    pub limit: u32,
    /// Longest wait for the query.
    pub query_timeout: Duration,
    /// Words of the alert used as full-text search terms at most.
    pub max_terms: usize,
    /// Longest wait for the alert's embedding.
    pub embed_timeout: Duration,
    /// Cosine similarity under which a neighbour does not count as similar in meaning.
    pub min_similarity: f64,
}

impl Default for RecallOptions {
    fn default() -> Self {
        Self {
            limit: 3,
            query_timeout: Duration::from_secs(5),
            max_terms: 24,
            embed_timeout: Duration::from_secs(5),
            min_similarity: MIN_SIMILARITY,
        }
    }
}

/// The similarity floor for all-MiniLM-L6-v2. On the lab's paraphrase set (`lab/recall/`) the
/// right past incident scored 0.28–0.81 and the closest unrelated one 0.30–0.66: similarity
/// alone does not tell them apart, which is why meaning is one signal of three. The floor only
/// keeps neighbours that share almost nothing out of the fusion (and out of "matched on
/// meaning").
pub const MIN_SIMILARITY: f64 = 0.3;

/// Share of the best match's fused score another match needs to be listed. Every alert has
/// nearest neighbours, and with few incidents in memory even an unrelated one is near: a
/// crash loop about a missing setting sits at cosine 0.53 from an OOMKilled alert. An incident
/// found by one signal at a middling rank, next to one that several signals agree on, is noise
/// in the reply; on the lab's paraphrase set this cut drops 2 of 90 listed incidents and none
/// of the right ones.
pub const RELATIVE_FLOOR: f64 = 0.5;

/// Where recall looks: the incidents table, and the model that embeds the alert (`None`:
/// keywords and identifiers only).
#[derive(Clone, Debug)]
pub struct Memory {
    pub pool: PgPool,
    pub embedder: Option<Arc<dyn Embedder>>,
}

impl Memory {
    /// Memory searched by meaning (with `embedder`) as well as by keywords.
    pub fn new(pool: PgPool, embedder: Option<Arc<dyn Embedder>>) -> Self {
        Self { pool, embedder }
    }

    /// Memory searched by keywords and identifiers only.
    pub fn keywords(pool: PgPool) -> Self {
        Self::new(pool, None)
    }
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

/// The alert's words as recall embeds them: its name, what it is about, and what it says.
pub fn meaning_text(target: &AlertTarget) -> String {
    [
        target.alertname.as_deref(),
        target.service.as_deref().or(target.workload.as_deref()),
        target.summary.as_deref(),
        target.description.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(str::trim)
    .filter(|part| !part.is_empty())
    .collect::<Vec<_>>()
    .join("\n")
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

/// The best `limit` past incidents of `query.team_id` for `query`, by meaning too when
/// `embedding` (the alert's vector from `model`) is given.
pub async fn search_incidents(
    pool: &PgPool,
    query: &RecallQuery,
    embedding: Option<(Vec<f32>, &str)>,
    options: &RecallOptions,
) -> Result<Vec<PriorIncident>, sqlx::Error> {
    let (embedding, embedding_model) = match embedding {
        Some((vector, model)) => (Some(vector), model.to_string()),
        None => (None, String::new()),
    };
    let search = IncidentSearch {
        team_id: query.team_id.clone(),
        text: query.websearch(),
        alertname: query.alertname.clone(),
        service: query.service.clone(),
        namespace: query.namespace.clone(),
        embedding,
        embedding_model,
        min_similarity: options.min_similarity,
    };
    let hits = incidents::search(pool, &search, options.limit).await?;
    let best = hits.first().map_or(0.0, |hit| hit.score);
    Ok(hits
        .into_iter()
        .filter(|hit| hit.score >= RELATIVE_FLOOR * best)
        .map(|hit| {
            let matched_on = [
                (hit.vector_match, "meaning"),
                (hit.text_match, "text"),
                (hit.alertname_match, "alertname"),
                (hit.service_match, "service"),
                (hit.namespace_match, "namespace"),
            ]
            .into_iter()
            .filter(|(matched, _)| *matched)
            .map(|(_, name)| name.to_string())
            .collect();
            PriorIncident {
                incident: hit.incident,
                score: (hit.score * 10_000.0).round() / 10_000.0,
                similarity: hit.similarity.map(|s| (s * 1000.0).round() / 1000.0),
                matched_on,
            }
        })
        .collect())
}

/// The alert's vector, or why recall goes without meaning this time.
async fn embed_alert(
    memory: &Memory,
    team_id: &str,
    target: &AlertTarget,
    options: &RecallOptions,
) -> Result<(Vec<f32>, Arc<dyn Embedder>), String> {
    let Some(embedder) = memory.embedder.clone() else {
        return Err("no embedding model is configured".to_string());
    };
    let embedded = tokio::time::timeout(
        options.query_timeout,
        incidents::any_embedded(&memory.pool, team_id, embedder.model()),
    )
    .await;
    match embedded {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => {
            return Err(format!(
                "no past incident has an embedding from {} yet",
                embedder.model()
            ));
        }
        Ok(Err(error)) => return Err(format!("checking for embeddings failed ({error})")),
        Err(_) => return Err("checking for embeddings timed out".to_string()),
    }
    let text = meaning_text(target);
    if text.is_empty() {
        return Err("the alert has no text to compare".to_string());
    }
    match tokio::time::timeout(options.embed_timeout, embedder.embed(&[text])).await {
        Ok(Ok(mut vectors)) if vectors.len() == 1 => Ok((vectors.remove(0), embedder)),
        Ok(Ok(vectors)) => Err(format!(
            "the embedding model returned {} vectors for one text",
            vectors.len()
        )),
        Ok(Err(error)) => Err(format!("embedding the alert failed ({error})")),
        Err(_) => Err(format!(
            "embedding the alert took longer than {} s",
            options.embed_timeout.as_secs()
        )),
    }
}

/// The recall node's body.
pub async fn recall(
    store: Option<&Memory>,
    state: &IncidentState,
    options: &RecallOptions,
) -> IncidentUpdate {
    let span = tracing::info_span!(
        "incident.recall",
        found = tracing::field::Empty,
        by_meaning = tracing::field::Empty
    );
    async {
        let unavailable = |why: String| {
            IncidentUpdate::default().missing(vec![Missing::failed(
                memory(),
                format!("memory unavailable ({why})"),
            )])
        };
        let Some(store) = store else {
            return unavailable("no database configured".to_string());
        };
        let Some(team_id) = state.context.team_id.as_deref() else {
            return unavailable("the thread's Slack workspace is not known".to_string());
        };
        let target = &state.alert.target;
        let query = RecallQuery::for_alert(team_id, target, options.max_terms);
        let meaning = embed_alert(store, team_id, target, options).await;
        tracing::Span::current().record("by_meaning", meaning.is_ok());
        let embedding = match &meaning {
            Ok((vector, embedder)) => Some((vector.clone(), embedder.model())),
            Err(_) => None,
        };
        let searched = tokio::time::timeout(
            options.query_timeout,
            search_incidents(&store.pool, &query, embedding, options),
        )
        .await;
        match searched {
            Ok(Ok(found)) => {
                tracing::Span::current().record("found", found.len());
                let update = IncidentUpdate::default().prior_incidents(found);
                match meaning {
                    Ok(_) => update,
                    Err(why) => update.missing(vec![Missing::skipped(
                        memory(),
                        format!(
                            "recall by meaning not used: {why}; past incidents were matched by \
                             keywords and identifiers only"
                        ),
                    )]),
                }
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
