//! What the walk found: the objects the alert led to, read by the telemetry step and by the
//! attribution of findings.

use crate::kube::PodInfo;

/// What the walk found: the objects related to the alert, for attributing findings and for the
/// report's next steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// Pods inspected, in the order read.
    pub pods: Vec<PodInfo>,
    /// Names of every object the alert's targets led to (pods, workloads, nodes, claims,
    /// services); findings about other objects are context, not the cause.
    pub related: Vec<String>,
    /// A cluster DNS pod inspected because the application's lookups failed there.
    pub dns_pod: Option<PodInfo>,
}

impl Found {
    pub(super) fn relate(&mut self, name: &str) {
        if !name.is_empty() && !self.related.iter().any(|r| r == name) {
            self.related.push(name.to_string());
        }
    }
}
