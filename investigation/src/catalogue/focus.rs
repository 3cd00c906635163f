//! What an alert is about ([`Focus`]), whether it is a heartbeat, and how far back its metrics are
//! read — decided from the rule itself (group, name, the metrics and functions of its
//! expression) by a short ordered list of rules, with the few alerts the rules get wrong listed
//! explicitly. The unit tests pin the result for every vendored alert.

use serde::Serialize;

/// What an alert is about: which objects the investigation looks at first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Focus {
    /// A pod or its containers (crash loops, readiness, waiting, CPU throttling).
    Pod,
    /// A Deployment, StatefulSet or DaemonSet (replicas, rollouts, generations), or the
    /// PodDisruptionBudget that guards one.
    Workload,
    /// A Job.
    Job,
    /// A node: its readiness and conditions, or what node-exporter sees on it (filesystems, CPU,
    /// memory, clock, RAID, systemd).
    Node,
    /// A PersistentVolume or claim (filling up, errors).
    Volume,
    /// A HorizontalPodAutoscaler.
    Autoscaler,
    /// A ResourceQuota, or requests overcommitting the cluster.
    Quota,
    /// The API server, scheduler, controller manager, kubelet, etcd or proxy.
    ControlPlane,
    /// The monitoring stack itself: Prometheus, Alertmanager, the operator, kube-state-metrics,
    /// Grafana, scrape targets, and the heartbeats.
    Monitoring,
    /// A node's network interfaces (errors, flapping, bonding).
    Network,
    Other,
}

impl Focus {
    pub const ALL: [Focus; 11] = [
        Focus::Pod,
        Focus::Workload,
        Focus::Job,
        Focus::Node,
        Focus::Volume,
        Focus::Autoscaler,
        Focus::Quota,
        Focus::ControlPlane,
        Focus::Monitoring,
        Focus::Network,
        Focus::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Focus::Pod => "pod",
            Focus::Workload => "workload",
            Focus::Job => "job",
            Focus::Node => "node",
            Focus::Volume => "volume",
            Focus::Autoscaler => "autoscaler",
            Focus::Quota => "quota",
            Focus::ControlPlane => "control_plane",
            Focus::Monitoring => "monitoring",
            Focus::Network => "network",
            Focus::Other => "other",
        }
    }
}

impl std::fmt::Display for Focus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the rules look at.
pub(super) struct Facts<'a> {
    pub name: &'a str,
    pub group: &'a str,
    pub severity: Option<&'a str>,
    /// Metric names of the expression's selectors.
    pub metrics: &'a [String],
    /// Functions and aggregations the expression calls, lowercase.
    pub functions: &'a [String],
}

impl Facts<'_> {
    fn metric(&self, prefixes: &[&str]) -> bool {
        self.metrics
            .iter()
            .any(|m| prefixes.iter().any(|p| m.starts_with(p)))
    }
}

/// kube-prometheus gives `severity: none` exactly to the alerts that fire on purpose (Watchdog:
/// always; InfoInhibitor: whenever an info alert fires) and are routed to a dead man's switch or
/// a null receiver: there is nothing to investigate.
pub(super) fn is_heartbeat(facts: &Facts<'_>) -> bool {
    facts.severity == Some("none")
}

/// Groups of the monitoring stack's own rules (`general.rules` holds TargetDown and the
/// heartbeats).
const MONITORING_GROUPS: [&str; 7] = [
    "alertmanager.rules",
    "prometheus",
    "prometheus-operator",
    "config-reloaders",
    "kube-state-metrics",
    "GrafanaAlerts",
    "general.rules",
];

/// Alerts the rules below get wrong, each with why.
const EXCEPTIONS: [(&str, Focus, &str); 1] = [(
    "KubeletTooManyPods",
    Focus::Node,
    // Named after, and measured on, the kubelet, but what ran out is the node's pod capacity
    // (`kube_node_status_capacity{resource="pods"}`): the fix is moving pods or adding nodes.
    "a node running out of pod slots",
)];

/// An exception if there is one; else the first rule that matches decides, the order going from
/// the most specific subject to the broadest.
pub(super) fn focus_of(facts: &Facts<'_>) -> Focus {
    match EXCEPTIONS.iter().find(|(name, ..)| *name == facts.name) {
        Some((_, focus, _)) => *focus,
        None => by_rules(facts),
    }
}

fn by_rules(facts: &Facts<'_>) -> Focus {
    let name = facts.name;
    if is_heartbeat(facts) {
        // They test the alerting pipeline itself.
        Focus::Monitoring
    } else if name.contains("Quota") || name.contains("Overcommit") {
        // Before the metric rules: overcommit alerts read node allocatable, but are about requests.
        Focus::Quota
    } else if facts.metric(&["kube_horizontalpodautoscaler_"]) {
        Focus::Autoscaler
    } else if facts.metric(&["kube_job_"]) {
        Focus::Job
    } else if facts.metric(&["kubelet_volume_stats_", "kube_persistentvolume"]) {
        Focus::Volume
    } else if facts.metric(&[
        "kube_deployment_",
        "kube_statefulset_",
        "kube_daemonset_",
        "kube_replicaset_",
        "kube_poddisruptionbudget_",
    ]) {
        Focus::Workload
    } else if facts.metric(&["kube_pod_", "container_"]) {
        // `container_*`: cAdvisor's per-container series.
        Focus::Pod
    } else if MONITORING_GROUPS.contains(&facts.group)
        || facts.metric(&[
            "prometheus_",
            "alertmanager_",
            "kube_state_metrics_",
            "reloader_",
        ])
    {
        Focus::Monitoring
    } else if facts.metric(&["node_network_", "node_bonding_"]) {
        Focus::Network
    } else if name.starts_with("Kubelet") {
        // Before the node rule: KubeletDown counts `kube_node_info`, KubeletPlegDurationHigh
        // reads `node_quantile:…`, but both are about the kubelet.
        Focus::ControlPlane
    } else if name.starts_with("KubeNode")
        || facts.group == "node-exporter"
        || facts.metric(&["kube_node_", "node_"])
    {
        Focus::Node
    } else if facts.group.starts_with("kubernetes-system")
        || facts.group.starts_with("kube-apiserver")
        || facts.metric(&[
            "apiserver_",
            "kubelet_",
            "scheduler_",
            "etcd_",
            "rest_client_",
            "kubeproxy_",
            "kubernetes_build_info",
        ])
    {
        Focus::ControlPlane
    } else {
        Focus::Other
    }
}

/// How many hours of an alert's metrics show its trend: 48 for what builds up over days —
/// memory, restarts, filling up (or running out, the end of filling up) and predictions, quota and
/// overcommit — else 6.
pub(super) fn window_hours(facts: &Facts<'_>, focus: Focus) -> u32 {
    let name = facts.name.to_ascii_lowercase();
    let memory = name.contains("memory") || facts.metrics.iter().any(|m| m.contains("memory"));
    let restarts =
        name.contains("crashloop") || facts.metrics.iter().any(|m| m.contains("restart"));
    let filling = name.contains("fillingup")
        || name.contains("almostoutof")
        || facts.functions.iter().any(|f| f == "predict_linear");
    if memory || restarts || filling || focus == Focus::Quota {
        48
    } else {
        6
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{lookup, promql};

    #[test]
    fn every_exception_overrides_what_the_rules_decide() {
        for (name, focus, why) in EXCEPTIONS {
            let alert = lookup(name).expect("an exception names a catalogue alert");
            let functions = promql::parse(&alert.expr).expect("parses").functions();
            let facts = Facts {
                name,
                group: &alert.group,
                severity: alert.severity.as_deref(),
                metrics: &alert.metrics,
                functions: &functions,
            };
            assert_ne!(
                by_rules(&facts),
                focus,
                "{name}: the exception ({why}) is not needed"
            );
            assert_eq!(alert.focus, focus, "{name}");
        }
    }
}
