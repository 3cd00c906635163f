//! Evidence: what a tool call returned, as the investigation stores and cites it.
//!
//! Every tool result becomes one [`Evidence`] item with a stable id (`E1`, `E2`, …), the
//! capability it serves, where it came from (server, tool, arguments), a digest that keys the
//! tool cache, and a redacted, bounded excerpt. A call that failed becomes
//! [`MissingEvidence`] so the report can say what could not be checked.
//!
//! The judge enforces invariant 8 (ARCHITECTURE.md) with [`quote_occurs_in`]: a claim's quote must occur in
//! the evidence it cites after whitespace and case normalisation.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The id of an evidence item within one round: `E1`, `E2`, … (1-based, as shown to humans).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EvidenceId(u32);

impl EvidenceId {
    /// An id from its number. Zero is not a valid id: ids are shown to humans and start at 1.
    pub fn new(number: u32) -> Result<Self, EvidenceIdError> {
        if number == 0 {
            return Err(EvidenceIdError::Zero);
        }
        Ok(Self(number))
    }

    /// The number after the `E`.
    pub fn number(self) -> u32 {
        self.0
    }

    /// The id that follows this one.
    pub fn next(self) -> Self {
        Self(self.0.saturating_add(1))
    }
}

impl fmt::Display for EvidenceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "E{}", self.0)
    }
}

/// Why a string is not an evidence id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceIdError {
    #[error("evidence id must look like `E<number>`, got `{0}`")]
    Malformed(String),
    #[error("evidence ids start at E1")]
    Zero,
}

impl FromStr for EvidenceId {
    type Err = EvidenceIdError;

    /// Accepts `E3` and, because models and humans write both, `e3`; nothing else.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let digits = trimmed
            .strip_prefix('E')
            .or_else(|| trimmed.strip_prefix('e'))
            .ok_or_else(|| EvidenceIdError::Malformed(text.to_string()))?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(EvidenceIdError::Malformed(text.to_string()));
        }
        let number: u32 = digits
            .parse()
            .map_err(|_| EvidenceIdError::Malformed(text.to_string()))?;
        Self::new(number)
    }
}

impl TryFrom<String> for EvidenceId {
    type Error = EvidenceIdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<EvidenceId> for String {
    fn from(id: EvidenceId) -> Self {
        id.to_string()
    }
}

/// What a piece of evidence is *for*. The fixed investigation steps ask for capabilities;
/// configuration maps each to a concrete MCP server tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    PodDescribe,
    /// One Kubernetes object by kind and name (a Deployment, a Job, a Service, a Node, a PVC…).
    ObjectGet,
    /// Kubernetes objects of one kind, optionally selected by labels.
    ObjectList,
    /// The pods of a namespace, optionally matching a label selector (a workload's pods).
    PodList,
    PodLogsCurrent,
    PodLogsPrevious,
    Events,
    DeployHistory,
    MetricRange,
    LogQuery,
    TraceSearch,
    /// A tool called by the model's ReAct leaf that maps to no fixed capability.
    Other(String),
}

impl Capability {
    /// A short human label for reports ("previous container log").
    pub fn label(&self) -> &str {
        match self {
            Capability::PodDescribe => "pod description",
            Capability::ObjectGet => "object description",
            Capability::ObjectList => "object list",
            Capability::PodList => "pod list",
            Capability::PodLogsCurrent => "current container log",
            Capability::PodLogsPrevious => "previous container log",
            Capability::Events => "events",
            Capability::DeployHistory => "deploy history",
            Capability::MetricRange => "metric range query",
            Capability::LogQuery => "log query",
            Capability::TraceSearch => "trace search",
            Capability::Other(name) => name,
        }
    }

    /// True for the two container-log capabilities.
    pub fn is_container_log(&self) -> bool {
        matches!(
            self,
            Capability::PodLogsCurrent | Capability::PodLogsPrevious
        )
    }
}

/// One tool result, as stored, shown and cited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub id: EvidenceId,
    pub capability: Capability,
    /// The MCP server's configured name.
    pub server: String,
    pub tool: String,
    pub args: serde_json::Value,
    /// [`call_digest`] of server, tool and args: the tool-cache key.
    pub digest: String,
    /// Redacted and bounded text; the only text a claim may quote.
    pub excerpt: String,
    pub fetched_at: DateTime<Utc>,
}

impl Evidence {
    /// Builds an evidence item, computing the digest from server, tool and args.
    /// The excerpt must already be redacted and bounded (see `redact` and `excerpt`).
    pub fn new(
        id: EvidenceId,
        capability: Capability,
        server: impl Into<String>,
        tool: impl Into<String>,
        args: serde_json::Value,
        excerpt: impl Into<String>,
        fetched_at: DateTime<Utc>,
    ) -> Self {
        let server = server.into();
        let tool = tool.into();
        let digest = call_digest(&server, &tool, &args);
        Self {
            id,
            capability,
            server,
            tool,
            args,
            digest,
            excerpt: excerpt.into(),
            fetched_at,
        }
    }

    /// The first string argument among `keys` (e.g. the pod name a log was fetched for).
    pub fn string_arg(&self, keys: &[&str]) -> Option<&str> {
        keys.iter()
            .find_map(|key| self.args.get(*key).and_then(|v| v.as_str()))
            .filter(|v| !v.is_empty())
    }
}

/// A capability the investigation wanted but could not get: a tool error, a timeout, a refusal
/// by the allowlist, or no tool configured. Recorded in the report as "what is missing".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingEvidence {
    pub capability: Capability,
    pub reason: String,
}

/// SHA-256 (hex) over server, tool and canonical JSON of the arguments.
///
/// Canonical means object keys sorted at every level, so `{"a":1,"b":2}` and `{"b":2,"a":1}`
/// hit the same cache entry. Fields are length-prefixed so that `("ab","c")` and `("a","bc")`
/// cannot collide.
pub fn call_digest(server: &str, tool: &str, args: &serde_json::Value) -> String {
    let canonical = canonical_json(args);
    let mut hasher = Sha256::new();
    for part in [server, tool, canonical.as_str()] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// JSON text with object keys sorted recursively and no insignificant whitespace.
pub fn canonical_json(value: &serde_json::Value) -> String {
    fn write(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::String((*key).clone()).to_string());
                    out.push(':');
                    if let Some(inner) = map.get(*key) {
                        write(inner, out);
                    }
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Collapses every run of whitespace to one space, trims, and lowercases: the normal form in
/// which quotes are compared with evidence.
pub fn normalise_for_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// True when `quote`, normalised, occurs in `evidence_text`, normalised. An empty (or
/// whitespace-only) quote supports nothing and never occurs.
pub fn quote_occurs_in(quote: &str, evidence_text: &str) -> bool {
    let quote = normalise_for_quote(quote);
    if quote.is_empty() {
        return false;
    }
    normalise_for_quote(evidence_text).contains(&quote)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evidence_id_round_trips_through_display_and_parse() {
        let id = EvidenceId::new(12).unwrap();
        assert_eq!(id.to_string(), "E12");
        assert_eq!("E12".parse::<EvidenceId>().unwrap(), id);
        assert_eq!(" e12 ".parse::<EvidenceId>().unwrap(), id);
        assert_eq!(id.next().to_string(), "E13");
    }

    #[test]
    fn evidence_id_rejects_malformed_text() {
        for bad in [
            "",
            "E",
            "12",
            "E0",
            "E-1",
            "E1a",
            "EE1",
            "F1",
            "E 1",
            "E99999999999",
        ] {
            assert!(
                bad.parse::<EvidenceId>().is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn evidence_id_serialises_as_its_display_form() {
        let id = EvidenceId::new(3).unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"E3\"");
        assert_eq!(serde_json::from_str::<EvidenceId>("\"E3\"").unwrap(), id);
        assert!(serde_json::from_str::<EvidenceId>("\"X3\"").is_err());
    }

    #[test]
    fn digest_ignores_key_order_but_not_values() {
        let a = call_digest("k8s", "pods_log", &json!({"name": "p", "namespace": "n"}));
        let b = call_digest("k8s", "pods_log", &json!({"namespace": "n", "name": "p"}));
        let c = call_digest("k8s", "pods_log", &json!({"namespace": "n", "name": "q"}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn digest_separates_fields() {
        let args = json!({});
        assert_ne!(call_digest("ab", "c", &args), call_digest("a", "bc", &args));
    }

    #[test]
    fn canonical_json_sorts_nested_keys() {
        let value = json!({"b": [{"z": 1, "a": 2}], "a": "x"});
        assert_eq!(canonical_json(&value), r#"{"a":"x","b":[{"a":2,"z":1}]}"#);
    }

    #[test]
    fn evidence_new_computes_digest_and_reads_args() {
        let e = Evidence::new(
            EvidenceId::new(1).unwrap(),
            Capability::PodLogsPrevious,
            "k8s",
            "pods_log",
            json!({"name": "api-1", "previous": true}),
            "boom",
            DateTime::<Utc>::UNIX_EPOCH,
        );
        assert_eq!(
            e.digest,
            call_digest(
                "k8s",
                "pods_log",
                &json!({"previous": true, "name": "api-1"})
            )
        );
        assert_eq!(e.string_arg(&["pod", "name"]), Some("api-1"));
        assert_eq!(e.string_arg(&["pod"]), None);
        let round_trip: Evidence =
            serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(round_trip, e);
    }

    #[test]
    fn normalise_collapses_whitespace_and_case() {
        assert_eq!(
            normalise_for_quote("  Back-off\trestarting\n  FAILED  container "),
            "back-off restarting failed container"
        );
    }

    #[test]
    fn quote_occurs_after_normalisation_only() {
        let evidence = "Last State:     Terminated\n      Reason:       OOMKilled\n";
        assert!(quote_occurs_in("reason: oomkilled", evidence));
        assert!(quote_occurs_in("Terminated Reason:", evidence));
        assert!(!quote_occurs_in("Reason: Error", evidence));
        assert!(!quote_occurs_in("   ", evidence));
        assert!(!quote_occurs_in("", evidence));
    }
}
