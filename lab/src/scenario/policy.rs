//! policy/v1 PodDisruptionBudgets: how many of the pods a selector picks must stay up. The
//! status (healthy, desired, allowed disruptions, expected pods) is computed from those pods
//! unless the scenario states it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A PodDisruptionBudget; exactly one of `minAvailable` and `maxUnavailable`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodDisruptionBudgetSpec {
    pub name: String,
    pub namespace: String,
    /// `spec.selector.matchLabels`; empty selects every pod of the namespace (policy/v1).
    #[serde(default)]
    pub selector: BTreeMap<String, String>,
    #[serde(default)]
    pub min_available: Option<IntOrPercent>,
    #[serde(default)]
    pub max_unavailable: Option<IntOrPercent>,
    /// Replaces the computed counts (each optional).
    #[serde(default)]
    pub status: Option<PodDisruptionBudgetStatusSpec>,
}

/// A count or a percentage of the expected pods (`2`, `"50%"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, expecting = "a number or a percentage like \"50%\"")]
pub enum IntOrPercent {
    Int(u32),
    Percent(String),
}

impl IntOrPercent {
    /// The percentage, when it is one written as Kubernetes accepts it (`0%` to `100%`).
    pub fn percent(&self) -> Option<u32> {
        match self {
            IntOrPercent::Int(_) => None,
            IntOrPercent::Percent(text) => text
                .strip_suffix('%')
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse().ok())
                .filter(|p| *p <= 100),
        }
    }

    /// The value scaled to `total`, rounding a percentage up as the disruption controller does
    /// (`None` for a malformed percentage, which validation refuses).
    pub fn scaled(&self, total: u32) -> Option<u32> {
        match self {
            IntOrPercent::Int(n) => Some(*n),
            IntOrPercent::Percent(_) => self.percent().map(|p| {
                // At most `total`: p ≤ 100.
                u32::try_from((u64::from(p) * u64::from(total)).div_ceil(100)).unwrap_or(total)
            }),
        }
    }
}

/// Stated PodDisruptionBudget status counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodDisruptionBudgetStatusSpec {
    #[serde(default)]
    pub current_healthy: Option<u32>,
    #[serde(default)]
    pub desired_healthy: Option<u32>,
    #[serde(default)]
    pub disruptions_allowed: Option<u32>,
    #[serde(default)]
    pub expected_pods: Option<u32>,
}
