//! Following leads: after the alert's own objects are read, what was found so far proposes what
//! to read next ([`Lead`]), and a bounded work list decides the order.
//!
//! - **Who proposes**: every finding ([`crate::detectors::Fact::leads`]: a client's failing
//!   connection names a host, an eviction its node, a lost node's taint the nodes carrying it),
//!   and the pods read (the node that several failing pods share, the node of a pod pending or
//!   not ready with no failing container, the claims of a pending pod), and under a
//!   service-level alert a failure only one pod's log shows (a sibling of the same owner: does
//!   its log repeat it? [`sibling_leads`]).
//! - **Data stores**: a client that waits on a store without naming it in the line (slow
//!   queries, cache misses; `detectors/datastores.rs`) leads to the stores its line or spec
//!   names, else those the ConfigMaps it takes in name, else its namespace's cache and database
//!   pods: each one's log and their own metrics ([`stores`]). A filling volume leads to its
//!   free bytes and, for a Postgres' volume, to the database's own growth series
//!   ([`stores::growth`]).
//! - **Order**: strongest first — a verified cause's lead before a verified finding's before an
//!   unverified one's; ties in the order proposed. The detectors run again after each lead, so
//!   what one lead found can propose the next.
//! - **Bounds**: at most [`MAX_LEADS`] leads a round, within the round's tool-call and time
//!   budgets (the [`Collector`] refuses requests beyond them and the report says so), and at
//!   most [`MAX_DEPTH`] links from the alert's objects unless the proposing finding is verified.
//! - **Resolution**: a host's shape says where it points ([`host_name`]): a Service by name
//!   (its Endpoints, then its pods by selector), one pod of a headless Service, an address (the
//!   Service whose cluster IP it is, else the pod whose IP it is), or a public host: the
//!   Service an Ingress routes it to, else the one selecting the workload configured with it as
//!   its own ([`public`]), else outside the cluster (nothing to read there; recorded).
//!
//! Every request made for a lead is recorded in the plan with the lead and what proposed it.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::detectors::lead::{HostName, host_name};
use crate::detectors::{Finding, Kind, Lead, Role};
use crate::evidence::{Capability, Evidence};
use crate::kube::{self, PodInfo, pod_of, pods_in_list, rank_pods, selector_of};
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::collect::Collector;
use super::found::Found;

mod public;
pub mod stores;

/// The most leads one round follows.
pub const MAX_LEADS: usize = 6;
/// How many links from the alert's objects an unverified lead may reach.
pub const MAX_DEPTH: u8 = 2;
/// The most nodes one taint lead reads.
const MAX_TAINTED: usize = 2;

/// A lead with what proposed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    pub lead: Lead,
    /// What proposed it, as the plan shows it (a finding's title, "3 failing pods share …").
    pub by: String,
    /// Higher is followed first: 3 a verified cause, 2 another verified signal, 1 the rest.
    pub strength: u8,
    /// Links from the alert's objects to the object the lead names.
    pub depth: u8,
    /// Whether what proposed it is verified (a verified lead may go deeper).
    pub verified: bool,
}

impl Proposed {
    /// A finding's lead, one link beyond the object the finding is about (`depth` of it).
    pub fn of_finding(finding: &Finding, lead: Lead, depth: u8) -> Self {
        let strength = match (finding.verified, finding.role() == Role::Cause) {
            (true, true) => 3,
            (true, false) => 2,
            _ => 1,
        };
        Self {
            lead,
            by: finding.title(),
            strength,
            depth: depth.saturating_add(1),
            verified: finding.verified,
        }
    }
}

/// The bounded work list of leads.
#[derive(Debug, Default)]
pub struct WorkList {
    pending: Vec<Proposed>,
    seen: BTreeSet<Lead>,
    followed: usize,
}

impl WorkList {
    /// Adds a lead unless it was offered before or reaches too deep. Returns whether it was
    /// added.
    pub fn offer(&mut self, proposed: Proposed) -> bool {
        if (proposed.depth > MAX_DEPTH && !proposed.verified)
            || !self.seen.insert(proposed.lead.clone())
        {
            return false;
        }
        self.pending.push(proposed);
        true
    }

    /// The strongest lead not yet followed (the earliest among equals), while fewer than
    /// [`MAX_LEADS`] were followed.
    pub fn take_strongest(&mut self) -> Option<Proposed> {
        if self.followed >= MAX_LEADS {
            return None;
        }
        let strongest = self.pending.iter().map(|p| p.strength).max()?;
        let at = self.pending.iter().position(|p| p.strength == strongest)?;
        self.followed += 1;
        Some(self.pending.remove(at))
    }

    /// Leads offered and never followed (the cap was reached first).
    pub fn left(&self) -> &[Proposed] {
        &self.pending
    }
}

/// Leads the pods read propose: the node several failing pods share; the node of a pod that is
/// pending, evicted or not ready with no failing container; the claims of a pending pod.
pub fn pod_leads(found: &Found) -> Vec<Proposed> {
    let mut leads = Vec::new();
    let failing: Vec<&PodInfo> = found.pods.iter().filter(|p| p.trouble() > 0).collect();
    let mut nodes: Vec<(&str, usize)> = Vec::new();
    for node in failing.iter().filter_map(|p| p.node.as_deref()) {
        match nodes.iter_mut().find(|(n, _)| *n == node) {
            Some((_, count)) => *count += 1,
            None => nodes.push((node, 1)),
        }
    }
    for (node, count) in nodes.iter().filter(|(_, count)| *count > 1) {
        leads.push(Proposed {
            lead: Lead::Node {
                name: (*node).to_string(),
            },
            by: format!("{count} failing pods share node `{node}`"),
            strength: 3,
            depth: 1,
            verified: true,
        });
    }
    for pod in found.pods.iter().filter(|p| node_may_explain(p)) {
        if let Some(node) = &pod.node {
            leads.push(Proposed {
                lead: Lead::Node { name: node.clone() },
                by: format!(
                    "pod `{}` is {} without a failing container",
                    pod.name,
                    if pod.status == "Running" {
                        "not ready"
                    } else {
                        pod.status.as_str()
                    }
                ),
                strength: 2,
                depth: 1,
                verified: true,
            });
        }
    }
    leads
}

/// The failure classes one pod's log may show once and its siblings' logs repeat (a
/// dependency's refusal, a failing connection, a certificate, an exhausted pool): repeats
/// verify them under a service-level alert ([`crate::detectors::logscan`]).
const REPEATABLE: &[Kind] = &[
    Kind::Refusal,
    Kind::Dependency,
    Kind::Certificate,
    Kind::ConnectionsExhausted,
];

/// Under a service-level alert, a failure of a repeatable class seen in only one pod's log is an
/// anecdote until a sibling shows it too: one listed pod of the same owner, not read yet, for
/// each such finding (one sibling a round).
pub fn sibling_leads(evidence: &[Evidence], findings: &[Finding], found: &Found) -> Vec<Proposed> {
    let listed: Vec<PodInfo> = evidence
        .iter()
        .filter(|e| e.capability == Capability::PodList)
        .flat_map(|e| pods_in_list(&e.excerpt))
        .collect();
    let read = |name: &str| found.pods.iter().any(|p| p.name == name);
    findings
        .iter()
        .filter(|f| !f.verified && REPEATABLE.contains(&f.kind()))
        .filter_map(|finding| {
            let logs: BTreeSet<&str> = finding
                .refs
                .iter()
                .filter_map(|r| evidence.iter().find(|e| e.id == r.evidence))
                .filter(|e| e.capability.is_container_log())
                .filter_map(|e| e.string_arg(&["name", "pod"]))
                .collect();
            let [pod] = logs.into_iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            let owner = listed.iter().find(|p| p.name == pod)?.owner.clone()?;
            let sibling = listed
                .iter()
                .find(|p| p.name != pod && p.owner.as_ref() == Some(&owner) && !read(&p.name))?;
            Some(Proposed {
                lead: Lead::Pod {
                    namespace: sibling.namespace.clone()?,
                    name: sibling.name.clone(),
                },
                by: format!(
                    "only `{pod}`'s log shows it: does a sibling's? ({})",
                    finding.title()
                ),
                strength: 1,
                depth: 1,
                verified: false,
            })
        })
        .take(1)
        .collect()
}

/// Whether a pod's trouble can come from its node: pending, evicted, unknown, or not ready with
/// no failing container (unless its own readiness probe is what fails: `ContainersNotReady`).
pub fn node_may_explain(pod: &PodInfo) -> bool {
    let status = pod.status.as_str();
    let container_failing = pod.containers.iter().any(|c| c.failing());
    matches!(
        status,
        "Pending" | "Unknown" | "Evicted" | "Terminating" | "ContainerCreating"
    ) || pod.reason.as_deref() == Some("Evicted")
        || (pod.ready == Some(false)
            && !container_failing
            && pod.ready_reason.as_deref() != Some("ContainersNotReady"))
}

/// What following a lead reached: pods to inspect and the names to relate to the alert.
#[derive(Debug, Default)]
pub struct Reached {
    pub pods: Vec<PodInfo>,
    pub nodes: Vec<String>,
    pub names: Vec<String>,
}

/// Reads what a lead names. `namespace` is the alert's, for a host without one.
pub async fn follow<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    lead: &Lead,
    namespace: Option<&str>,
    tail_lines: u32,
) -> Reached {
    let mut reached = Reached::default();
    match lead {
        Lead::Host {
            host,
            port,
            namespace: client_ns,
        } => {
            let namespace = client_ns.as_deref().or(namespace);
            match host_name(host) {
                HostName::Service {
                    namespace: ns,
                    name,
                } => match ns.as_deref().or(namespace) {
                    Some(ns) => service_end(c, ns, &name, *port, &mut reached).await,
                    None => c.skip(
                        Capability::ObjectGet,
                        format!("host `{host}` names no namespace and the alert none either"),
                    ),
                },
                HostName::ServicePod {
                    namespace,
                    service,
                    pod,
                } => {
                    reached.names.push(service);
                    reached.pods.push(PodInfo {
                        name: pod,
                        namespace: Some(namespace),
                        ..PodInfo::default()
                    });
                }
                HostName::Address(ip) => match namespace {
                    Some(ns) => address(c, ns, &ip, *port, &mut reached).await,
                    None => c.skip(
                        Capability::ObjectList,
                        format!("address `{ip}`: the alert names no namespace to look in"),
                    ),
                },
                HostName::Loopback => c.skip(
                    Capability::ObjectGet,
                    format!("host `{host}` is the pod itself (a sidecar or the same container)"),
                ),
                HostName::External => public::follow(c, host, *port, namespace, &mut reached).await,
            }
        }
        Lead::Node { name } => reached.nodes.push(name.clone()),
        Lead::NodesTainted { key } => {
            let listed = c
                .fetch(
                    CapabilityRequest::ObjectList {
                        namespace: None,
                        kind: "Node".into(),
                        label_selector: None,
                    },
                    format!("which nodes carry taint `{key}`"),
                )
                .await;
            let tainted = listed
                .as_deref()
                .map(|text| nodes_tainted(text, key))
                .unwrap_or_default();
            reached.nodes.extend(tainted.into_iter().take(MAX_TAINTED));
        }
        Lead::ClientNode { pod } => match namespace {
            Some(namespace) => {
                let described = c
                    .fetch(
                        CapabilityRequest::PodDescribe {
                            namespace: namespace.to_string(),
                            pod: pod.clone(),
                        },
                        format!("pod `{pod}`: which node it runs on"),
                    )
                    .await;
                if let Some(node) = described
                    .as_deref()
                    .and_then(|text| pod_of(text, pod))
                    .and_then(|info| info.node)
                {
                    reached.nodes.push(node);
                }
            }
            None => c.skip(
                Capability::PodDescribe,
                format!("the node of pod `{pod}`: the alert names no namespace"),
            ),
        },
        Lead::Sidecars { pod, .. } => match namespace {
            Some(namespace) => sidecars(c, namespace, pod, tail_lines).await,
            None => c.skip(
                Capability::PodLogsCurrent,
                format!("pod `{pod}`'s other containers: the alert names no namespace"),
            ),
        },
        Lead::CompareLogs { failing, healthy } => match namespace {
            Some(namespace) => {
                // Current logs: a crash-looping container's restarted instance logs its start
                // again, and the alert's own pod's crashed instance was read already.
                let logs = failing
                    .iter()
                    .map(|pod| (pod, false))
                    .chain([(healthy, true)]);
                for (pod, is_healthy) in logs {
                    c.fetch(
                        CapabilityRequest::PodLogs {
                            namespace: namespace.to_string(),
                            pod: pod.clone(),
                            container: None,
                            previous: false,
                            tail_lines,
                        },
                        if is_healthy {
                            format!("healthy pod `{pod}`: what it logs, the baseline")
                        } else {
                            format!("failing pod `{pod}`: what it logs, beside the baseline")
                        },
                    )
                    .await;
                }
            }
            None => c.skip(
                Capability::PodLogsCurrent,
                "the failing and healthy pods' logs: the alert names no namespace".to_string(),
            ),
        },
        Lead::JobsStarted => {
            c.fetch(
                CapabilityRequest::ObjectList {
                    namespace: None,
                    kind: "Job".into(),
                    label_selector: None,
                },
                "the Jobs of every namespace: did a batch job start when it rose?",
            )
            .await;
        }
        Lead::Policies { namespace } => {
            c.fetch(
                CapabilityRequest::ObjectList {
                    namespace: Some(namespace.clone()),
                    kind: "NetworkPolicy".into(),
                    label_selector: None,
                },
                format!(
                    "the other end is ready while connections to it fail: which NetworkPolicies \
                     of `{namespace}` admit whom"
                ),
            )
            .await;
        }
        Lead::CertificatesIssued => match namespace {
            Some(namespace) => {
                c.fetch(
                    CapabilityRequest::Events {
                        namespace: namespace.to_string(),
                        object: None,
                        warnings_only: false,
                    },
                    format!(
                        "events in `{namespace}`, to see which certificates cert-manager issued \
                         anew and when"
                    ),
                )
                .await;
            }
            None => c.skip(
                Capability::Events,
                "certificates issued anew: the alert names no namespace".to_string(),
            ),
        },
        Lead::DataStores {
            namespace: client_ns,
            hosts,
            config_maps,
            at,
        } => {
            let read = stores::read(c, client_ns, hosts, config_maps, *at, tail_lines).await;
            reached.names.extend(read);
        }
        Lead::VolumeGrowth {
            namespace,
            claim,
            database_pod,
            at,
        } => stores::growth(c, namespace, claim, database_pod.as_deref(), *at).await,
        Lead::Pod { namespace, name } => reached.pods.push(PodInfo {
            name: name.clone(),
            namespace: Some(namespace.clone()),
            ..PodInfo::default()
        }),
    }
    reached
}

/// The most containers of one pod whose logs a sidecar lead reads.
const MAX_SIDECARS: usize = 3;

/// The containers of `pod` beside the one that cannot reach `localhost`: each one's log (and
/// its crashed instance's, when it restarted), so the sidecar serving the port says why. Logs
/// are asked as the round asks them, so the client's own, read already, costs no call.
async fn sidecars<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    pod: &str,
    tail_lines: u32,
) {
    let described = c
        .fetch(
            CapabilityRequest::PodDescribe {
                namespace: namespace.to_string(),
                pod: pod.to_string(),
            },
            format!("pod `{pod}`: its containers, to read the one serving `localhost`"),
        )
        .await;
    let Some(info) = described.as_deref().and_then(|text| pod_of(text, pod)) else {
        return;
    };
    for container in info
        .containers
        .iter()
        .filter(|c| !c.init && !c.name.is_empty())
        .take(MAX_SIDECARS)
    {
        let logs = |previous: bool| CapabilityRequest::PodLogs {
            namespace: namespace.to_string(),
            pod: pod.to_string(),
            container: Some(container.name.clone()),
            previous,
            tail_lines,
        };
        if container.restarts > 0 {
            c.fetch(
                logs(true),
                format!(
                    "container `{}` restarted: its crashed instance's log",
                    container.name
                ),
            )
            .await;
        }
        c.fetch(
            logs(false),
            format!(
                "container `{}` of pod `{pod}`: what the side the client cannot reach logs",
                container.name
            ),
        )
        .await;
    }
}

/// A Service's side: the Service (its selector and ports), its Endpoints, its pods.
async fn service_end<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
    port: Option<u16>,
    reached: &mut Reached,
) {
    let port_words = port.map_or(String::new(), |p| format!(" (port {p})"));
    let Some((_, mut pods)) = read_service(
        c,
        namespace,
        name,
        format!(
            "the other end of the failing calls: Service `{name}`{port_words}, its selector and \
             ports"
        ),
        format!("which pods back Service `{name}` now, on which ports"),
        |selector| format!("the pods behind Service `{name}` (`{selector}`)"),
    )
    .await
    else {
        return;
    };
    reached.names.push(name.to_string());
    rank_pods(&mut pods);
    reached.pods.extend(pods.into_iter().take(1));
}

/// Service `name` read from its side, each step with its reason: the Service (`why_service`),
/// its Endpoints (`why_endpoints`) and the pods its selector picks (`why_pods`, given the
/// selector). The selector and those pods; `None` when the Service or its selector cannot be
/// read.
pub async fn read_service<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
    why_service: String,
    why_endpoints: String,
    why_pods: impl FnOnce(&str) -> String,
) -> Option<(String, Vec<PodInfo>)> {
    let described = c
        .fetch(
            CapabilityRequest::ObjectGet {
                namespace: Some(namespace.to_string()),
                kind: "Service".into(),
                name: name.to_string(),
            },
            why_service,
        )
        .await;
    let selector = described.as_deref().and_then(selector_of)?;
    c.fetch(
        CapabilityRequest::ObjectGet {
            namespace: Some(namespace.to_string()),
            kind: "Endpoints".into(),
            name: name.to_string(),
        },
        why_endpoints,
    )
    .await;
    let listed = c
        .fetch(
            CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: Some(selector.clone()),
            },
            why_pods(&selector),
        )
        .await;
    let pods = listed.as_deref().map(pods_in_list).unwrap_or_default();
    Some((selector, pods))
}

/// An address: the Service whose cluster IP it is, else the pod whose IP it is.
async fn address<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    ip: &str,
    port: Option<u16>,
    reached: &mut Reached,
) {
    let services = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: Some(namespace.to_string()),
                kind: "Service".into(),
                label_selector: None,
            },
            format!("which Service has cluster IP `{ip}`"),
        )
        .await;
    if let Some((ns, service)) = services
        .as_deref()
        .and_then(|text| service_with_ip(text, ip))
    {
        service_end(
            c,
            ns.as_deref().unwrap_or(namespace),
            &service,
            port,
            reached,
        )
        .await;
        return;
    }
    // A client calls Services in other namespaces too.
    let everywhere = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: None,
                kind: "Service".into(),
                label_selector: None,
            },
            format!("no Service in `{namespace}` has cluster IP `{ip}`: which Service in the cluster has it"),
        )
        .await;
    if let Some((Some(ns), service)) = everywhere
        .as_deref()
        .and_then(|text| service_with_ip(text, ip))
    {
        service_end(c, &ns, &service, port, reached).await;
        return;
    }
    let pods = c
        .fetch(
            CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: None,
            },
            format!("no Service has cluster IP `{ip}`: which pod has it"),
        )
        .await;
    match pods
        .as_deref()
        .map(pods_in_list)
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.ip.as_deref() == Some(ip))
    {
        Some(pod) => reached.pods.push(pod),
        None => c.skip(
            Capability::PodList,
            format!("no Service or pod in `{namespace}` has address `{ip}`"),
        ),
    }
}

/// The namespace and name of the Service in a list whose cluster IP is `ip`.
pub fn service_with_ip(text: &str, ip: &str) -> Option<(Option<String>, String)> {
    kube::objects(text).into_iter().find_map(|service| {
        let ips = [
            kube::str_at(&service, "/spec/clusterIP"),
            service
                .pointer("/spec/clusterIPs")
                .and_then(Value::as_array)
                .and_then(|ips| ips.iter().find_map(Value::as_str)),
        ];
        let name = kube::str_at(&service, "/metadata/name")?.to_string();
        let namespace = kube::str_at(&service, "/metadata/namespace").map(str::to_string);
        ips.contains(&Some(ip)).then_some((namespace, name))
    })
}

/// The names of the nodes in a list that carry a taint with `key`.
pub fn nodes_tainted(text: &str, key: &str) -> Vec<String> {
    kube::objects(text)
        .into_iter()
        .filter(|node| {
            node.pointer("/spec/taints")
                .and_then(Value::as_array)
                .is_some_and(|taints| taints.iter().any(|t| kube::str_at(t, "/key") == Some(key)))
        })
        .filter_map(|node| kube::str_at(&node, "/metadata/name").map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests;
