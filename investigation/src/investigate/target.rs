//! Targeting: the objects an investigation starts from, read off the alert's labels — every
//! label kube-prometheus alerts carry (`pod`, `deployment`, `statefulset`, `daemonset`,
//! `job_name`, `node`, `persistentvolumeclaim`, `service`, `horizontalpodautoscaler`,
//! `namespace`) — and, when the alert names none of them, resolved through the cluster from
//! what it does name: a scrape `job` or `service` is looked up as a Service (its selector finds
//! the pods) and then as a workload of that name; a bare namespace is swept for failing pods and
//! warnings. Only an alert with nothing to look up at all makes the round ask.

use firstline_alert::AlertTarget;

use crate::catalogue::{self, Focus};

/// Where to start walking the object graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A named pod.
    Pod { namespace: String, name: String },
    /// A workload: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob.
    Workload {
        namespace: String,
        kind: String,
        name: String,
    },
    /// A Service; its selector finds the pods. `or_workload`: when the Service does not exist,
    /// try a Deployment of the same name (a scrape job named after its app).
    Service {
        namespace: String,
        name: String,
        or_workload: bool,
    },
    /// A node.
    Node { name: String },
    /// A PersistentVolume (cluster-scoped); its claim leads to the pods.
    Volume { name: String },
    /// A PersistentVolumeClaim.
    Claim { namespace: String, name: String },
    /// A HorizontalPodAutoscaler; its scale target is a workload.
    Autoscaler { namespace: String, name: String },
    /// Only a namespace: sweep it for failing pods and warnings.
    Namespace { namespace: String },
}

/// Scrape jobs that name an exporter, never the failing workload.
const EXPORTER_JOBS: &[&str] = &[
    "kube-state-metrics",
    "node-exporter",
    "kubelet",
    "apiserver",
    "kube-proxy",
    "kube-scheduler",
    "kube-controller-manager",
    "coredns",
    "prometheus",
    "alertmanager",
    "prometheus-operator",
    "cadvisor",
];

/// The starting objects for `target`, most specific first. Empty when the alert names nothing
/// the cluster could resolve.
pub fn starts(target: &AlertTarget) -> Vec<Start> {
    let mut out = Vec::new();
    let focus = target
        .alertname
        .as_deref()
        .and_then(catalogue::lookup)
        .map(|alert| alert.focus);
    let node = target.node.clone().or_else(|| {
        // node-exporter alerts carry the node only as `instance` (host:port).
        (focus == Some(Focus::Node))
            .then(|| target.instance.as_deref().map(host_of))
            .flatten()
            .filter(|host| {
                !host.is_empty() && !host.chars().all(|c| c.is_ascii_digit() || c == '.')
            })
    });
    let Some(namespace) = target.namespace.clone() else {
        if let Some(name) = &target.volume {
            out.push(Start::Volume { name: name.clone() });
        }
        if let Some(name) = node {
            out.push(Start::Node { name });
        }
        return out;
    };
    if let Some(name) = &target.volume {
        out.push(Start::Volume { name: name.clone() });
    }
    if let Some(pod) = &target.pod {
        out.push(Start::Pod {
            namespace: namespace.clone(),
            name: pod.clone(),
        });
    }
    if let Some(name) = &target.autoscaler {
        out.push(Start::Autoscaler {
            namespace: namespace.clone(),
            name: name.clone(),
        });
    }
    if let Some(workload) = &target.workload {
        out.push(Start::Workload {
            namespace: namespace.clone(),
            kind: target
                .workload_kind
                .clone()
                .unwrap_or_else(|| "Deployment".to_string()),
            name: workload.clone(),
        });
    }
    if let Some(name) = &target.volume_claim {
        out.push(Start::Claim {
            namespace: namespace.clone(),
            name: name.clone(),
        });
    }
    if let Some(name) = node {
        out.push(Start::Node { name });
    }
    let named_object = !out.is_empty();
    if let Some(service) = &target.service {
        // With a pod or workload named, the Service adds nothing the pods do not show.
        if !named_object {
            out.push(Start::Service {
                namespace: namespace.clone(),
                name: service.clone(),
                or_workload: true,
            });
        }
    } else if !named_object && let Some(job) = target.job.as_deref().filter(|j| !is_exporter_job(j))
    {
        out.push(Start::Service {
            namespace: namespace.clone(),
            name: job.to_string(),
            or_workload: true,
        });
    }
    if out.is_empty() {
        out.push(Start::Namespace { namespace });
    }
    out
}

fn is_exporter_job(job: &str) -> bool {
    EXPORTER_JOBS
        .iter()
        .any(|exporter| job == *exporter || job.ends_with(&format!("/{exporter}")))
}

/// `10.0.0.1:9100` → `10.0.0.1`; `worker-1:9100` → `worker-1`.
fn host_of(instance: &str) -> String {
    instance
        .rsplit_once(':')
        .map_or(instance, |(host, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                host
            } else {
                instance
            }
        })
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use firstline_alert::parse_alert;

    fn starts_of(labels: &str) -> Vec<Start> {
        starts(&parse_alert(labels))
    }

    #[test]
    fn each_label_kind_becomes_its_starting_object() {
        let ns = || "shop".to_string();
        assert_eq!(
            starts_of("namespace=shop pod=api-7d9f8c6b5-x2k4q"),
            [
                Start::Pod {
                    namespace: ns(),
                    name: "api-7d9f8c6b5-x2k4q".into()
                },
                // The pod name implies its Deployment.
                Start::Workload {
                    namespace: ns(),
                    kind: "Deployment".into(),
                    name: "api".into()
                }
            ]
        );
        for (label, kind) in [
            ("deployment", "Deployment"),
            ("statefulset", "StatefulSet"),
            ("daemonset", "DaemonSet"),
            ("job_name", "Job"),
        ] {
            assert_eq!(
                starts_of(&format!("namespace=shop {label}=web")),
                [Start::Workload {
                    namespace: ns(),
                    kind: kind.into(),
                    name: "web".into()
                }],
                "{label}"
            );
        }
        assert_eq!(
            starts_of("namespace=shop persistentvolumeclaim=data-db-0"),
            [Start::Claim {
                namespace: ns(),
                name: "data-db-0".into()
            }]
        );
        assert_eq!(
            starts_of("namespace=shop horizontalpodautoscaler=web"),
            [Start::Autoscaler {
                namespace: ns(),
                name: "web".into()
            }]
        );
        assert_eq!(
            starts_of("node=worker-3"),
            [Start::Node {
                name: "worker-3".into()
            }]
        );
        assert_eq!(
            starts_of("namespace=shop service=checkout"),
            [Start::Service {
                namespace: ns(),
                name: "checkout".into(),
                or_workload: true
            }]
        );
        assert_eq!(
            starts_of("namespace=shop"),
            [Start::Namespace { namespace: ns() }]
        );
    }

    #[test]
    fn a_scrape_job_is_resolved_as_a_service_unless_it_names_an_exporter() {
        assert_eq!(
            starts_of("alertname=TargetDown namespace=shop job=checkout"),
            [Start::Service {
                namespace: "shop".into(),
                name: "checkout".into(),
                or_workload: true
            }]
        );
        assert_eq!(
            starts_of("namespace=shop job=kube-state-metrics"),
            [Start::Namespace {
                namespace: "shop".into()
            }]
        );
    }

    #[test]
    fn node_alerts_find_the_node_in_the_instance_label() {
        assert_eq!(
            starts_of(
                "alertname=NodeFilesystemAlmostOutOfSpace instance=worker-2:9100 mountpoint=/"
            ),
            [Start::Node {
                name: "worker-2".into()
            }]
        );
        // An IP is not a node name.
        assert!(
            starts_of("alertname=NodeFilesystemAlmostOutOfSpace instance=10.0.0.7:9100").is_empty()
        );
        assert!(starts_of("something is broken").is_empty());
    }
}
