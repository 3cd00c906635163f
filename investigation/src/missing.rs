//! What a round could not check, and why: a request that failed, or one never made because the
//! alert did not say what to ask about.

use serde::{Deserialize, Serialize};

use crate::evidence::{Capability, MissingEvidence};

/// Something the investigation wanted but does not have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing {
    /// What was wanted.
    pub capability: Capability,
    /// Why it is missing, in words an on-call engineer can act on.
    pub reason: String,
    /// Whether it was asked for and failed, or never asked for.
    pub kind: MissingKind,
}

/// Why a piece of evidence is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingKind {
    /// Asked for; the source could not answer (error, timeout, refusal, not configured).
    Failed,
    /// Not asked for: the alert did not say what to ask about (no pod, no namespace, …).
    Skipped,
}

impl Missing {
    /// A step not taken because the alert lacks its target.
    pub fn skipped(capability: Capability, reason: impl Into<String>) -> Self {
        Self {
            capability,
            reason: reason.into(),
            kind: MissingKind::Skipped,
        }
    }

    /// A request the source could not answer.
    pub fn failed(capability: Capability, reason: impl Into<String>) -> Self {
        Self {
            capability,
            reason: reason.into(),
            kind: MissingKind::Failed,
        }
    }
}

impl From<MissingEvidence> for Missing {
    fn from(missing: MissingEvidence) -> Self {
        Self::failed(missing.capability, missing.reason)
    }
}
