//! What recall hands the report: similar past incidents, each with how it matched.

use firstline_store::incidents::PastIncident;
use serde::{Deserialize, Serialize};

use crate::evidence::Capability;

/// A similar past incident.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorIncident {
    #[serde(flatten)]
    pub incident: PastIncident,
    /// The fused rank score (higher is better; comparable within one recall only).
    pub score: f64,
    /// Cosine similarity of meaning, when that signal found it.
    #[serde(default)]
    pub similarity: Option<f64>,
    /// What matched: `meaning`, `text`, `alertname`, `service`, `namespace`.
    pub matched_on: Vec<String>,
}

/// The capability name recall's missing evidence is recorded under.
pub fn memory() -> Capability {
    Capability::Other("incident memory".to_string())
}
