//! When a log the round read says the time was rejected — a signed timestamp outside its
//! tolerance, a token used before it was issued, a request "too skewed" — the clocks of the
//! nodes the workload's pods run on, side by side (node-exporter's `node_timex_offset_seconds`
//! and `node_timex_sync_status`): one node's clock off is where its pods fail and their
//! siblings do not (`detectors/clocks.rs` reads them). The log only proposes the reading; the
//! metric decides.

use std::sync::LazyLock;

use regex::Regex;

use crate::detectors::clocks::{OFFSET_METRIC, SYNC_METRIC};
use crate::kube::PodInfo;
use crate::state::IncidentState;
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::InvestigateOptions;
use super::collect::Collector;
use super::found::Found;

/// The most nodes whose clocks one round reads.
const MAX_NODES: usize = 8;

static TIME_REJECTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:was(?:n't| not)|is not|not) within (?:the )?tolerance|outside (?:the |its )?(?:allowed |time )?(?:tolerance|window)|clock (?:skew|drift)|time ?skew|token used before issued|used before (?:it was )?issued|not (?:yet )?valid yet|issued in the future|\biat\b.{0,40}future|request ?time ?too ?skewed|signature (?:has )?expired|timestamp (?:is )?too (?:old|far)",
    )
    .expect("time-rejected pattern")
});

/// Reads the nodes' clocks when a log read shows time rejected; `pods` are the workload's pods
/// listed (the baseline's nodes) beside the ones read.
pub async fn read_clocks<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    state: &IncidentState,
    found: &Found,
    pods: &[PodInfo],
    options: &InvestigateOptions,
) {
    let Some(anchor) = state.alert.anchor() else {
        return;
    };
    let rejected = c.evidence.iter().any(|e| {
        (e.capability.is_container_log() || e.capability == crate::evidence::Capability::LogQuery)
            && e.excerpt.lines().any(|l| TIME_REJECTED.is_match(l))
    });
    if !rejected {
        return;
    }
    let mut nodes: Vec<&str> = Vec::new();
    for node in found
        .pods
        .iter()
        .chain(pods.iter())
        .filter_map(|p| p.node.as_deref())
    {
        if !nodes.contains(&node) && nodes.len() < MAX_NODES {
            nodes.push(node);
        }
    }
    if nodes.is_empty() {
        return;
    }
    let selector = nodes
        .iter()
        .map(|n| regex::escape(n))
        .collect::<Vec<_>>()
        .join("|");
    for (metric, why) in [
        (
            OFFSET_METRIC,
            "a log read rejects a time: the clock offset of the nodes the pods run on, side by side",
        ),
        (
            SYNC_METRIC,
            "whether those nodes' clocks are synchronised (NTP)",
        ),
    ] {
        c.fetch(
            CapabilityRequest::MetricRange {
                query: format!("{metric}{{node=~\"{selector}\"}}"),
                start: anchor - chrono::Duration::hours(6),
                end: anchor + options.window_after,
                step_secs: 300,
            },
            why,
        )
        .await;
    }
}
