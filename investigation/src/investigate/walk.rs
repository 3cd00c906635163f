//! The walk over the object graph: from the objects the alert names to the pods that matter and
//! what explains them, in the order an on-call engineer would look, each request with its reason.
//!
//! 1. **Resolve** each starting object ([`super::target`]): a workload's pods by its selector
//!    (a Job's by `job-name`, a CronJob's through its newest Job), a Service's pods by its
//!    selector (else a Deployment of that name), an HPA's scale target, a PVC and its
//!    StorageClass, a node's conditions, a namespace's pods.
//! 2. **Inspect** at most [`MAX_PODS`] pods, in trouble first (failed, crash-looping, pending,
//!    not ready), then newest: the description, each failing init or app container's previous
//!    log (when it restarted) and current log, the pod's events.
//!    The baseline: a named pod's siblings (its workload's pods, by the workload's selector),
//!    and, when the failing pods run on several nodes no healthy sibling uses, a few of those
//!    nodes and of the healthy ones' (zone, node group, OS image compared by `siblings`).
//! 3. **Follow** what the pods point at: the nodes of pods that are pending, evicted or unknown;
//!    the claims of pending pods; the workload's events and rollout history; the namespace's
//!    Warning events.
//! 4. **Telemetry** ([`super::telemetry`]): the alert's own expression (or the catalogue's,
//!    with the alert's labels) over a window long enough to show a trend, resource metrics when
//!    the alert or the pods point at memory, CPU or restarts, Loki error lines and Tempo traces
//!    for service-level alerts.
//!
//! Every request goes through the [`Collector`], which enforces the round's tool-call and time
//! budgets: steps are ordered so the budget cuts the least useful ones.

use firstline_alert::AlertTarget;

use crate::evidence::Capability;
use crate::state::IncidentState;
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::InvestigateOptions;
use super::anywhere;
use super::collect::Collector;
use super::found::Found;
use super::leads::{self, MAX_LEADS, Proposed, WorkList, pod_leads};
use super::outside;
use super::pods::{main_container, restart_signal};
use super::target::{self, Start};
use super::telemetry;
use crate::detectors::hostpaths::{disk_alert, host_writes};
use crate::detectors::{Standing, run_detectors};
use crate::kube::{
    self, PodInfo, claim_of, jobs_of_cronjob, pod_of, pods_in_list, rank_pods, scale_target_of,
    selector_of,
};

/// The most pods whose logs and events are read.
pub const MAX_PODS: usize = 2;
/// The most containers of one pod whose logs are read.
const MAX_CONTAINERS: usize = 2;
/// The most nodes and claims followed.
const MAX_FOLLOWED: usize = 2;
/// The most nodes read to compare where failing and healthy siblings run (half of each).
const MAX_COMPARED_NODES: usize = 6;

/// Walks from the alert's objects through the graph, within `c`'s budgets.
pub async fn walk<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    state: &IncidentState,
    options: &InvestigateOptions,
) -> Found {
    let target = &state.alert.target;
    let starts = target::starts(target);
    let mut found = Found::default();
    let mut candidates: Vec<PodInfo> = Vec::new();
    if starts.is_empty() {
        // A resource outside the cluster: its metrics, and its clients found by their logs.
        let clients = outside::gather(c, state, options).await;
        if clients.is_empty() {
            skip_everything(c, target);
        }
        for pod in clients {
            found.relate(&pod.name);
            candidates.push(pod);
        }
    }
    let named_pod = starts.iter().any(|s| matches!(s, Start::Pod { .. }));
    let mut deployments: Vec<(String, String)> = Vec::new();
    let mut workload_objects: Vec<(String, String)> = Vec::new();
    let mut statefulsets: Vec<(String, String)> = Vec::new();
    for start in &starts {
        match start {
            Start::Pod { namespace, name } => {
                found.relate(name);
                candidates.push(PodInfo {
                    name: name.clone(),
                    namespace: Some(namespace.clone()),
                    ..PodInfo::default()
                });
            }
            Start::Workload {
                namespace,
                kind,
                name,
            } => {
                found.relate(name);
                workload_objects.push((namespace.clone(), name.clone()));
                if kind.eq_ignore_ascii_case("deployment") {
                    deployments.push((namespace.clone(), name.clone()));
                }
                if kind.eq_ignore_ascii_case("statefulset") {
                    statefulsets.push((namespace.clone(), name.clone()));
                }
                if !named_pod {
                    let pods = workload_pods(c, namespace, kind, name, &mut found).await;
                    candidates.extend(pods);
                }
                if kind.eq_ignore_ascii_case("daemonset") {
                    c.fetch(
                        CapabilityRequest::ObjectList {
                            namespace: None,
                            kind: "Node".into(),
                            label_selector: None,
                        },
                        format!(
                            "the nodes DaemonSet `{name}` should cover: their taints and labels"
                        ),
                    )
                    .await;
                }
            }
            Start::Service {
                namespace,
                name,
                or_workload,
            } => {
                found.relate(name);
                let pods = service_pods(
                    c,
                    namespace,
                    name,
                    *or_workload,
                    &mut found,
                    &mut deployments,
                )
                .await;
                candidates.extend(pods);
            }
            Start::Autoscaler { namespace, name } => {
                found.relate(name);
                let text = c
                    .fetch(
                        CapabilityRequest::ObjectGet {
                            namespace: Some(namespace.clone()),
                            kind: "HorizontalPodAutoscaler".into(),
                            name: name.clone(),
                        },
                        "the autoscaler the alert names: its limits, replicas and conditions",
                    )
                    .await;
                if let Some((kind, workload)) = text.as_deref().and_then(scale_target_of) {
                    found.relate(&workload);
                    workload_objects.push((namespace.clone(), workload.clone()));
                    if kind.eq_ignore_ascii_case("deployment") {
                        deployments.push((namespace.clone(), workload.clone()));
                    }
                    candidates
                        .extend(workload_pods(c, namespace, &kind, &workload, &mut found).await);
                }
            }
            Start::Claim { namespace, name } => {
                found.relate(name);
                claim(c, namespace, name, "the volume claim the alert names").await;
                candidates.extend(mounting_pods(c, namespace, name, &mut found).await);
            }
            Start::Node { name } => {
                found.relate(name);
                node(
                    c,
                    name,
                    "the node the alert names: its conditions and taints",
                )
                .await;
                if let Some(namespace) = &target.namespace {
                    candidates.extend(pods_on_node(c, namespace, name).await);
                } else if disk_alert(target) {
                    host_writers(c, name, &mut found).await;
                }
            }
            Start::Volume { name } => {
                found.relate(name);
                let text = c
                    .fetch(
                        CapabilityRequest::ObjectGet {
                            namespace: None,
                            kind: "PersistentVolume".into(),
                            name: name.clone(),
                        },
                        "the volume the alert names: its phase, backing disk and claim",
                    )
                    .await;
                if let Some((namespace, claim_name)) = text.as_deref().and_then(kube::claim_ref_of)
                {
                    found.relate(&claim_name);
                    claim(c, &namespace, &claim_name, "the claim bound to this volume").await;
                    warnings_in(
                        c,
                        &namespace,
                        "the claim's namespace: pods that cannot mount it",
                    )
                    .await;
                }
            }
            Start::Namespace { namespace } => {
                let listed = c
                    .fetch(
                        CapabilityRequest::PodList {
                            namespace: namespace.clone(),
                            label_selector: None,
                        },
                        "the alert names only a namespace: its pods, to find the failing ones",
                    )
                    .await;
                let mut pods = listed.as_deref().map(pods_in_list).unwrap_or_default();
                // The alert's own words may name the workload ("fluent-bit cannot ship
                // logs"): its pods are the subject, troubled or not.
                let named = named_in_text(&pods, target);
                let reason = match &named {
                    Some(workload) => {
                        pods.retain(|p| workload_name(p).as_deref() == Some(workload.as_str()));
                        found.relate(workload);
                        format!(
                            "the alert names no workload label: its text names `{workload}`, \
                             so its pods in `{namespace}` are the ones read"
                        )
                    }
                    None => {
                        pods.retain(|p| p.trouble() > 0);
                        format!(
                            "the alert names no workload, service or pod: the pods read are \
                             `{namespace}`'s troubled ones ({}), a namespace-wide fallback",
                            pods.len()
                        )
                    }
                };
                for pod in &pods {
                    found.relate(&pod.name);
                }
                // Said in the report, so a reader weighs the pods read as such.
                c.skip(Capability::PodList, reason);
                candidates.extend(pods);
            }
        }
    }

    // 2. The pods that matter, in trouble first.
    let named: Vec<PodInfo> = candidates
        .iter()
        .filter(|p| p.status.is_empty())
        .cloned()
        .collect();
    let mut listed: Vec<PodInfo> = candidates
        .into_iter()
        .filter(|p| !p.status.is_empty())
        .collect();
    rank_pods(&mut listed);
    let mut listed_siblings = listed.clone();
    let in_trouble = listed.iter().filter(|p| p.trouble() > 0).count();
    let listed_count = listed.len();
    let chosen: Vec<PodInfo> = named
        .into_iter()
        .chain(listed.into_iter().take(in_trouble.clamp(1, MAX_PODS)))
        .take(MAX_PODS)
        .collect();
    if in_trouble > chosen.len() {
        c.skip(
            Capability::PodDescribe,
            format!(
                "{in_trouble} of {listed_count} listed pods are in trouble; only the {} most in \
                 trouble (newest first) were read",
                chosen.len()
            ),
        );
    }
    for pod in chosen {
        let pod = inspect_pod(c, pod, target, options).await;
        found.relate(&pod.name);
        found.pods.push(pod);
    }
    // The baseline: a named pod's siblings, and where the failing ones run.
    if named_pod {
        listed_siblings = named_pod_siblings(c, &mut found).await;
    }
    compare_nodes(c, &listed_siblings).await;

    // 3. What the pods point at.
    follow_cluster_dns(c, &mut found, target, options).await;
    let mut work = WorkList::default();
    follow_leads(c, &mut found, state, options, &mut work).await;
    follow_claims(c, &mut found).await;
    if let Some(namespace) = target.namespace.as_deref() {
        if found.pods.is_empty() {
            for (ns, name) in &workload_objects {
                c.fetch(
                    CapabilityRequest::Events {
                        namespace: ns.clone(),
                        object: Some(name.clone()),
                        warnings_only: false,
                    },
                    format!("events of `{name}`: no pod of it could be inspected"),
                )
                .await;
            }
        }
        warnings_in(
            c,
            namespace,
            "warnings anywhere in the namespace (ReplicaSets, quotas, volumes, neighbours)",
        )
        .await;
    }
    let pod_deployment = target
        .workload
        .as_ref()
        .filter(|_| {
            target
                .workload_kind
                .as_deref()
                .is_none_or(|k| k.eq_ignore_ascii_case("deployment"))
        })
        .zip(target.namespace.as_ref())
        .map(|(w, ns)| (ns.clone(), w.clone()));
    let mut histories: Vec<(String, String)> = Vec::new();
    for pair in deployments.iter().cloned().chain(pod_deployment) {
        if !histories.contains(&pair) {
            histories.push(pair);
        }
    }
    // Slow or saturated: an autoscaler that cannot add pods is part of the answer.
    if matches!(
        crate::detectors::alert_symptom(target),
        crate::detectors::Symptom::Latency | crate::detectors::Symptom::Saturation
    ) && !starts.iter().any(|s| matches!(s, Start::Autoscaler { .. }))
        && let Some((namespace, workload)) = histories.first()
    {
        c.fetch(
            CapabilityRequest::ObjectList {
                namespace: Some(namespace.clone()),
                kind: "HorizontalPodAutoscaler".into(),
                label_selector: None,
            },
            format!("can `{workload}` scale out? The autoscalers of `{namespace}`"),
        )
        .await;
    }
    for (namespace, workload) in histories {
        c.fetch(
            CapabilityRequest::DeployHistory {
                namespace: namespace.clone(),
                workload: workload.clone(),
            },
            format!("did `{workload}` change just before the alert? (rollout history)"),
        )
        .await;
        c.fetch(
            CapabilityRequest::Events {
                namespace,
                object: Some(workload.clone()),
                warnings_only: false,
            },
            format!("what the controller did to `{workload}`: scaling and rollout steps"),
        )
        .await;
    }
    for (namespace, name) in &statefulsets {
        controller_revisions(c, namespace, name).await;
    }
    if deployments.is_empty() && statefulsets.is_empty() {
        match target.workload_kind.as_deref() {
            Some(kind) if target.workload.is_some() && !kind.eq_ignore_ascii_case("deployment") => {
                c.skip(
                    Capability::DeployHistory,
                    format!("a {kind} has no Deployment rollout history to read"),
                )
            }
            _ if target.workload.is_none() => {
                c.skip(Capability::DeployHistory, no_deploy_reason(target))
            }
            _ => {}
        }
    }

    // 4. Metrics, logs and traces.
    telemetry::gather(c, state, &found, options).await;
    super::clocks::read_clocks(c, state, &found, &listed_siblings, options).await;
    // What the metrics showed may lead further (a rise: the batch job that started then).
    follow_leads(c, &mut found, state, options, &mut work).await;
    leads_left(c, &work);
    c.note_spent();
    found
}

/// A workload's pods: by its selector when it can be read, else by name prefix.
async fn workload_pods<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    kind: &str,
    name: &str,
    found: &mut Found,
) -> Vec<PodInfo> {
    if kind.eq_ignore_ascii_case("cronjob") {
        return cronjob_pods(c, namespace, name, found).await;
    }
    let why = format!(
        "the {} the alert names: its spec, status and conditions",
        canonical_kind(kind)
    );
    pods_of(c, namespace, kind, name, &why, found).await
}

/// The pods of workload `kind`/`name`, by its selector (read with the workload, for `why`),
/// else by name prefix.
async fn pods_of<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    kind: &str,
    name: &str,
    why: &str,
    found: &mut Found,
) -> Vec<PodInfo> {
    let kind = canonical_kind(kind);
    let described = c
        .fetch(
            CapabilityRequest::ObjectGet {
                namespace: Some(namespace.to_string()),
                kind: kind.to_string(),
                name: name.to_string(),
            },
            why.to_string(),
        )
        .await;
    let selector = described
        .as_deref()
        .and_then(selector_of)
        .or_else(|| (kind == "Job").then(|| format!("job-name={name}")));
    let listed = c
        .fetch(
            CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: selector.clone(),
            },
            match &selector {
                Some(s) => format!("the pods of {kind} `{name}`, by its selector `{s}`"),
                None => format!(
                    "the pods of the namespace, to find {kind} `{name}`'s by name (its selector \
                     could not be read)"
                ),
            },
        )
        .await;
    let mut pods = listed.as_deref().map(pods_in_list).unwrap_or_default();
    if selector.is_none() {
        pods.retain(|p| owned_by_name(&p.name, name));
    }
    if pods.is_empty() {
        let kind = kind.to_ascii_lowercase();
        c.skip(
            Capability::PodLogsCurrent,
            if listed.is_none() {
                format!("the pods of {kind} `{name}` could not be listed, so no log was read")
            } else {
                format!("no pod of {kind} `{name}` was found, so no log was read")
            },
        );
    }
    for pod in &pods {
        found.relate(&pod.name);
    }
    pods
}

/// The pods that mount claim `name`: what writes to the volume the alert is about.
async fn mounting_pods<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
    found: &mut Found,
) -> Vec<PodInfo> {
    let listed = c
        .fetch(
            CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: None,
            },
            format!("the pods of `{namespace}`, to find those that mount claim `{name}`"),
        )
        .await;
    let pods: Vec<PodInfo> = listed
        .as_deref()
        .map(pods_in_list)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.claims.iter().any(|claim| claim == name))
        .collect();
    if pods.is_empty() && listed.is_some() {
        c.skip(
            Capability::PodDescribe,
            format!("no pod of `{namespace}` mounts claim `{name}` now"),
        );
    }
    for pod in &pods {
        found.relate(&pod.name);
    }
    pods
}

/// The other pods of the workload each inspected pod the alert names belongs to: what a
/// failure is compared against (do the healthy siblings run elsewhere, another revision?).
async fn named_pod_siblings<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    found: &mut Found,
) -> Vec<PodInfo> {
    let owners: Vec<(String, String, String, String)> = found
        .pods
        .iter()
        .filter_map(|pod| {
            let namespace = pod.namespace.clone()?;
            let (owner_kind, _) = pod.owner.as_ref()?;
            let kind = match owner_kind.as_str() {
                "ReplicaSet" => "Deployment",
                "StatefulSet" | "DaemonSet" | "Job" => owner_kind.as_str(),
                _ => return None,
            };
            Some((
                namespace,
                kind.to_string(),
                workload_name(pod)?,
                pod.name.clone(),
            ))
        })
        .collect();
    let mut siblings: Vec<PodInfo> = Vec::new();
    let mut done: Vec<(String, String)> = Vec::new();
    for (namespace, kind, workload, pod) in owners {
        if done.contains(&(namespace.clone(), workload.clone())) {
            continue;
        }
        let why = format!(
            "the {kind} pod `{pod}` belongs to: its selector, to compare the pod with its \
             siblings"
        );
        siblings.extend(pods_of(c, &namespace, &kind, &workload, &why, found).await);
        done.push((namespace, workload));
    }
    siblings
}

/// When the failing pods among `pods` run on several nodes and no healthy sibling shares one,
/// those nodes and a few healthy siblings' nodes: whether a zone, node group or OS image sets
/// the failing ones apart. (One shared node is a lead the detectors propose.)
async fn compare_nodes<E: EvidenceSource>(c: &mut Collector<'_, E>, pods: &[PodInfo]) {
    let failing: Vec<&str> = distinct_nodes(pods.iter().filter(|p| p.trouble() > 0));
    let healthy: Vec<&str> = distinct_nodes(pods.iter().filter(|p| p.trouble() == 0));
    if failing.len() < 2 || healthy.is_empty() || failing.iter().any(|n| healthy.contains(n)) {
        return;
    }
    let per_side = MAX_COMPARED_NODES / 2;
    for (name, side) in failing
        .iter()
        .take(per_side)
        .map(|n| (n, "a failing pod's"))
        .chain(
            healthy
                .iter()
                .take(per_side)
                .map(|n| (n, "a healthy sibling's")),
        )
    {
        c.fetch(
            CapabilityRequest::ObjectGet {
                namespace: None,
                kind: "Node".into(),
                name: name.to_string(),
            },
            format!(
                "node `{name}`, {side}: its zone, node group and OS image, to compare where \
                 the failing pods run with where the healthy ones do"
            ),
        )
        .await;
    }
}

fn distinct_nodes<'a>(pods: impl Iterator<Item = &'a PodInfo>) -> Vec<&'a str> {
    let mut nodes: Vec<&str> = Vec::new();
    for node in pods.filter_map(|p| p.node.as_deref()) {
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    nodes
}

/// A CronJob's pods: those of its newest Job.
async fn cronjob_pods<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
    found: &mut Found,
) -> Vec<PodInfo> {
    c.fetch(
        CapabilityRequest::ObjectGet {
            namespace: Some(namespace.to_string()),
            kind: "CronJob".into(),
            name: name.to_string(),
        },
        "the CronJob the alert names: its schedule and last runs",
    )
    .await;
    let jobs = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: Some(namespace.to_string()),
                kind: "Job".into(),
                label_selector: None,
            },
            format!("the Jobs of the namespace, to find `{name}`'s newest run"),
        )
        .await;
    let Some(job) = jobs
        .as_deref()
        .and_then(|text| jobs_of_cronjob(text, name).into_iter().next())
    else {
        c.skip(
            Capability::PodDescribe,
            format!("no Job of CronJob `{name}` was found"),
        );
        return Vec::new();
    };
    found.relate(&job);
    Box::pin(workload_pods(c, namespace, "Job", &job, found)).await
}

/// A Service's pods by its selector; when the Service cannot be read and `or_workload`, a
/// Deployment of the same name.
async fn service_pods<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
    or_workload: bool,
    found: &mut Found,
    deployments: &mut Vec<(String, String)>,
) -> Vec<PodInfo> {
    let side = leads::read_service(
        c,
        namespace,
        name,
        format!("no pod is named: Service `{name}`'s selector finds the pods of `{name}`"),
        format!("which pods back Service `{name}` right now (ready and not ready)"),
        |selector| format!("the pods of Service `{name}`, by its selector `{selector}`"),
    )
    .await;
    match side {
        Some((selector, pods)) => {
            if pods.is_empty() {
                // A selector matching nothing is itself the finding; the namespace shows what
                // the pods are labelled instead.
                let all = c
                    .fetch(
                        CapabilityRequest::PodList {
                            namespace: namespace.to_string(),
                            label_selector: None,
                        },
                        format!(
                            "Service `{name}`'s selector `{selector}` matches no pod: what the \
                             namespace's pods are labelled"
                        ),
                    )
                    .await;
                let mut pods = all.as_deref().map(pods_in_list).unwrap_or_default();
                pods.retain(|p| owned_by_name(&p.name, name));
                for pod in &pods {
                    found.relate(&pod.name);
                }
                return pods;
            }
            for pod in &pods {
                found.relate(&pod.name);
            }
            // The Deployment behind the Service, for its rollout history.
            for deployment in pods.iter().filter_map(kube::deployment_of) {
                let pair = (namespace.to_string(), deployment);
                if !deployments.contains(&pair) {
                    found.relate(&pair.1);
                    deployments.push(pair);
                }
            }
            pods
        }
        None if or_workload => {
            deployments.push((namespace.to_string(), name.to_string()));
            workload_pods(c, namespace, "Deployment", name, found).await
        }
        None => Vec::new(),
    }
}

/// The pods of `namespace` that run on `node`, when an alert names both (a node-level failure
/// of one namespace's workload: its agent on that node, say).
async fn pods_on_node<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    node: &str,
) -> Vec<PodInfo> {
    let listed = c
        .fetch(
            CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: None,
            },
            format!("the alert names namespace `{namespace}` and node `{node}`: the pods of one on the other"),
        )
        .await;
    listed
        .as_deref()
        .map(pods_in_list)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.node.as_deref() == Some(node))
        .collect()
}

/// The most pods writing to a node's disk that one round describes.
const MAX_WRITERS: usize = 2;

/// A node's disk fills and the alert names no namespace: the pods of every namespace on that
/// node, and a description of those that mount one of its directories writable (`hostPath`,
/// which the kubelet does not count against a pod's ephemeral storage).
async fn host_writers<E: EvidenceSource>(c: &mut Collector<'_, E>, node: &str, found: &mut Found) {
    let listed = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: None,
                kind: "Pod".into(),
                label_selector: None,
            },
            format!(
                "node `{node}`'s disk fills and the alert names no namespace: the pods of every \
                 namespace, to find those on it that write to its disk"
            ),
        )
        .await;
    let writers: Vec<(String, String)> = listed
        .as_deref()
        .map(kube::objects)
        .unwrap_or_default()
        .iter()
        .filter(|o| kube::str_at(o, "/spec/nodeName") == Some(node))
        .filter(|o| {
            !matches!(
                kube::str_at(o, "/status/phase"),
                Some("Failed" | "Succeeded")
            )
        })
        .filter(|o| !host_writes(o).is_empty())
        .filter_map(|o| {
            Some((
                kube::str_at(o, "/metadata/namespace")?.to_string(),
                kube::str_at(o, "/metadata/name")?.to_string(),
            ))
        })
        .take(MAX_WRITERS)
        .collect();
    for (namespace, pod) in writers {
        found.relate(&pod);
        c.fetch(
            CapabilityRequest::PodDescribe {
                namespace,
                pod: pod.clone(),
            },
            format!(
                "pod `{pod}` runs on node `{node}` and mounts one of its directories writable \
                 (hostPath): what it writes there (its volumes, env, log level)"
            ),
        )
        .await;
    }
}

/// A StatefulSet's rollout history: its ControllerRevisions, by the selector its object (read
/// with its pods) shows, each holding the pod template of one revision.
async fn controller_revisions<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
) {
    let selector = c
        .evidence
        .iter()
        .find(|e| {
            e.capability == Capability::ObjectGet
                && e.string_arg(&["kind"]) == Some("StatefulSet")
                && e.string_arg(&["name"]) == Some(name)
        })
        .and_then(|e| selector_of(&e.excerpt));
    c.fetch(
        CapabilityRequest::ObjectList {
            namespace: Some(namespace.to_string()),
            kind: "ControllerRevision".into(),
            label_selector: selector,
        },
        format!("did `{name}` change its pod template? (its revisions: ControllerRevisions)"),
    )
    .await;
}

/// Describes a pod (unless already described) and reads its failing containers' logs and its
/// events. Returns what is known of it afterwards.
async fn inspect_pod<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    pod: PodInfo,
    target: &AlertTarget,
    options: &InvestigateOptions,
) -> PodInfo {
    let namespace = pod
        .namespace
        .clone()
        .or_else(|| target.namespace.clone())
        .unwrap_or_default();
    let why = if target.pod.as_deref() == Some(pod.name.as_str()) {
        "the pod the alert names: its containers' states, restarts and exit codes".to_string()
    } else if pod.status.is_empty() {
        format!(
            "pod `{}`: its containers' states, restarts and exit codes",
            pod.name
        )
    } else {
        format!(
            "pod `{}` ({}): its containers' states, restarts and exit codes",
            pod.name, pod.status
        )
    };
    let described = c
        .fetch(
            CapabilityRequest::PodDescribe {
                namespace: namespace.clone(),
                pod: pod.name.clone(),
            },
            why,
        )
        .await;
    // A listed pod with no restarts did not crash in place (a Job's failed run is a new pod).
    let listed_restarted = pod.status.is_empty() || pod.restarts > 0;
    let info = described
        .as_deref()
        .and_then(|text| pod_of(text, &pod.name))
        .map(|mut info| {
            info.namespace.get_or_insert(namespace.clone());
            info
        })
        .unwrap_or(pod);

    let mut containers: Vec<_> = info
        .containers
        .iter()
        .filter(|c| c.failing())
        .cloned()
        .collect();
    // Init containers run first: their failure is the one that blocks the pod.
    containers.sort_by_key(|c| !c.init);
    containers.truncate(MAX_CONTAINERS);
    let several = info.containers.iter().filter(|c| !c.init).count() > 1;
    let logs = |container: Option<String>, previous: bool| CapabilityRequest::PodLogs {
        namespace: namespace.clone(),
        pod: info.name.clone(),
        container,
        previous,
        tail_lines: options.tail_lines,
    };
    if containers.is_empty() {
        // Nothing says which container failed (or the description is unreadable): the
        // previous log explains a crash when there was one, the current log the rest.
        let restarted = described
            .as_deref()
            .map_or(listed_restarted, restart_signal);
        let container = target.container.clone().or_else(|| {
            let workload = workload_name(&info).unwrap_or_else(|| info.name.clone());
            several.then(|| main_container(&info, &workload)).flatten()
        });
        if restarted {
            c.fetch(
                logs(container.clone(), true),
                "the pod restarted (or its state is unknown): the crashed instance's log",
            )
            .await;
        }
        c.fetch(logs(container, false), "what the container logs now")
            .await;
    } else {
        for container in &containers {
            let name = (container.init || several || target.container.is_some())
                .then(|| container.name.clone())
                .filter(|n| !n.is_empty())
                .or_else(|| target.container.clone());
            let label = if container.init {
                format!("init container `{}`", container.name)
            } else {
                format!("container `{}`", container.name)
            };
            if container.restarted() {
                c.fetch(
                    logs(name.clone(), true),
                    format!("{label} restarted: the log of the instance that crashed"),
                )
                .await;
            }
            c.fetch(
                logs(name, false),
                format!("{label} is failing: what it logs now"),
            )
            .await;
        }
    }
    c.fetch(
        CapabilityRequest::Events {
            namespace,
            object: Some(info.name.clone()),
            warnings_only: false,
        },
        format!("what Kubernetes reported about pod `{}`", info.name),
    )
    .await;
    info
}

/// When the application's lookups fail at the cluster's DNS (`lookup … on 10.96.0.10:53: …
/// timeout`), the DNS pods themselves: CoreDNS in `kube-system`, by its `k8s-app=kube-dns` label.
async fn follow_cluster_dns<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    found: &mut Found,
    target: &AlertTarget,
    options: &InvestigateOptions,
) {
    let dns_failing = c.evidence.iter().any(|e| {
        e.capability.is_container_log()
            && e.excerpt.lines().any(|l| {
                let l = l.to_ascii_lowercase();
                l.contains(":53")
                    && (l.contains("lookup") || l.contains("dns"))
                    && (l.contains("timeout")
                        || l.contains("timed out")
                        || l.contains("refused")
                        || l.contains("server misbehaving"))
            })
    });
    if !dns_failing {
        return;
    }
    let listed = c
        .fetch(
            CapabilityRequest::PodList {
                namespace: "kube-system".into(),
                label_selector: Some("k8s-app=kube-dns".into()),
            },
            "the application's DNS lookups time out at the cluster DNS: its pods (CoreDNS)",
        )
        .await;
    let mut pods = listed.as_deref().map(pods_in_list).unwrap_or_default();
    rank_pods(&mut pods);
    if let Some(pod) = pods.into_iter().next() {
        let pod = inspect_pod(c, pod, target, options).await;
        found.relate(&pod.name);
        found.dns_pod = Some(pod);
    }
}

/// Follows the leads what was read so far proposes, strongest first, re-running the detectors
/// after each so a lead's findings can propose the next ([`super::leads`]). `work` is the
/// round's: a lead is followed once, and at most [`MAX_LEADS`] in all.
async fn follow_leads<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    found: &mut Found,
    state: &IncidentState,
    options: &InvestigateOptions,
    work: &mut WorkList,
) {
    let target = &state.alert.target;
    let ctx = super::detection_context(state);
    loop {
        for proposed in pod_leads(found) {
            work.offer(proposed);
        }
        let findings = run_detectors(&c.evidence, &ctx);
        if ctx.service_level {
            for proposed in leads::sibling_leads(&c.evidence, &findings, found) {
                work.offer(proposed);
            }
        }
        for finding in findings.iter().filter(|f| f.standing == Standing::Current) {
            let depth = finding
                .refs
                .iter()
                .map(|r| c.depth_of(r.evidence))
                .max()
                .unwrap_or(0);
            for lead in finding.fact.leads() {
                work.offer(Proposed::of_finding(finding, lead, depth));
            }
        }
        if !c.has_budget() {
            break;
        }
        let Some(next) = work.take_strongest() else {
            break;
        };
        let label = next.lead.label();
        c.follow(Some((
            format!("{label}, proposed by: {}", next.by),
            next.depth,
        )));
        let reached = leads::follow(
            c,
            &next.lead,
            target.namespace.as_deref(),
            options.tail_lines,
        )
        .await;
        for name in &reached.names {
            found.relate(name);
        }
        for name in reached.nodes.iter().take(MAX_FOLLOWED) {
            found.relate(name);
            node(c, name, &format!("{label}: its conditions and taints")).await;
            node_journal(c, name, state, options).await;
        }
        for pod in reached.pods {
            if found.pods.iter().any(|p| p.name == pod.name) {
                continue;
            }
            let pod = inspect_pod(c, pod, target, options).await;
            found.relate(&pod.name);
            found.pods.push(pod);
        }
        c.follow(None);
    }
}

/// Says which leads the round proposed and did not follow.
fn leads_left<E: EvidenceSource>(c: &mut Collector<'_, E>, work: &WorkList) {
    if !work.left().is_empty() {
        let left: Vec<String> = work.left().iter().map(|p| p.lead.label()).collect();
        c.skip(
            Capability::Other("leads".to_string()),
            format!(
                "not followed (a round follows at most {MAX_LEADS} leads, within its budgets): {}",
                left.join(", ")
            ),
        );
    }
}

/// A node's own log lines (kubelet, container runtime, kernel) around the alert, when a log
/// store is configured.
async fn node_journal<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    name: &str,
    state: &IncidentState,
    options: &InvestigateOptions,
) {
    let Some(anchor) = state.alert.anchor() else {
        return;
    };
    c.fetch(
        CapabilityRequest::LogQuery {
            query: format!("{{node=\"{name}\"}}"),
            start: anchor - chrono::Duration::hours(2),
            end: anchor + options.window_after,
            limit: 50,
        },
        format!("node `{name}`'s own log (kubelet, runtime, kernel) around the alert"),
    )
    .await;
}

/// The claims of pending pods (a claim that cannot bind keeps its pod pending).
async fn follow_claims<E: EvidenceSource>(c: &mut Collector<'_, E>, found: &mut Found) {
    let claims: Vec<(String, String)> = found
        .pods
        .iter()
        .filter(|p| matches!(p.status.as_str(), "Pending" | "ContainerCreating"))
        .flat_map(|p| {
            let namespace = p.namespace.clone().unwrap_or_default();
            p.claims
                .iter()
                .map(move |claim| (namespace.clone(), claim.clone()))
        })
        .collect();
    for (namespace, name) in claims.into_iter().take(MAX_FOLLOWED) {
        found.relate(&name);
        claim(c, &namespace, &name, "a pending pod mounts this claim").await;
    }
}

/// The Warning events of a namespace.
async fn warnings_in<E: EvidenceSource>(c: &mut Collector<'_, E>, namespace: &str, why: &str) {
    c.fetch(
        CapabilityRequest::Events {
            namespace: namespace.to_string(),
            object: None,
            warnings_only: true,
        },
        why.to_string(),
    )
    .await;
}

/// A claim, its events, and its StorageClass.
async fn claim<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    name: &str,
    why: &str,
) {
    let text = c
        .fetch(
            CapabilityRequest::ObjectGet {
                namespace: Some(namespace.to_string()),
                kind: "PersistentVolumeClaim".into(),
                name: name.to_string(),
            },
            format!("{why}: its phase, size and storage class"),
        )
        .await;
    c.fetch(
        CapabilityRequest::Events {
            namespace: namespace.to_string(),
            object: Some(name.to_string()),
            warnings_only: false,
        },
        format!("what the provisioner and attacher reported about claim `{name}`"),
    )
    .await;
    if let Some(class) = text.as_deref().and_then(|t| claim_of(t).0) {
        c.fetch(
            CapabilityRequest::ObjectGet {
                namespace: None,
                kind: "StorageClass".into(),
                name: class.clone(),
            },
            format!(
                "claim `{name}` asks for StorageClass `{class}`: does it exist, who provisions it"
            ),
        )
        .await;
    }
}

/// A node and its events.
async fn node<E: EvidenceSource>(c: &mut Collector<'_, E>, name: &str, why: &str) {
    c.fetch(
        CapabilityRequest::ObjectGet {
            namespace: None,
            kind: "Node".into(),
            name: name.to_string(),
        },
        why.to_string(),
    )
    .await;
    c.fetch(
        CapabilityRequest::Events {
            namespace: "default".into(),
            object: Some(name.to_string()),
            warnings_only: false,
        },
        format!("what the kubelet and node controller reported about node `{name}`"),
    )
    .await;
}

/// The workload a pod belongs to: its Deployment, its StatefulSet, DaemonSet or Job, else its
/// `app` label.
fn workload_name(pod: &PodInfo) -> Option<String> {
    kube::deployment_of(pod)
        .or_else(|| {
            pod.owner
                .as_ref()
                .filter(|(kind, _)| kind != "ReplicaSet")
                .map(|(kind, name)| match kind.as_str() {
                    // A CronJob's Job is named `<cronjob>-<scheduled minute>`: the alert names
                    // the CronJob.
                    "Job" => cronjob_of_job(name).unwrap_or(name).to_string(),
                    _ => name.clone(),
                })
        })
        .or_else(|| {
            pod.labels
                .get("app.kubernetes.io/name")
                .or_else(|| pod.labels.get("app"))
                .cloned()
        })
}

/// The CronJob a Job's name says made it (`nightly-export-29087100` → `nightly-export`): the
/// suffix is the scheduled time in minutes since the epoch (2017–2046), not a date
/// (`backup-20241205`) nor a version.
fn cronjob_of_job(job: &str) -> Option<&str> {
    let (prefix, minute) = job.rsplit_once('-')?;
    let minute: u64 = minute.parse().ok()?;
    ((25_000_000..40_000_000).contains(&minute) && !prefix.is_empty()).then_some(prefix)
}

/// The one workload among `pods` that one of the alert's label values is (`worker:
/// payouts-worker` in a webhook's text; not a key that places it or names a peer); else whose
/// name the alert's name, summary or
/// description spells (`Fluent Bit output failing` names `fluent-bit`): letters and digits
/// compared, names of at least five of them, the longest when several match.
fn named_in_text(pods: &[PodInfo], target: &AlertTarget) -> Option<String> {
    // Keys that name something other than the alert's subject: where it is, who scraped it,
    // who called whom.
    let elsewhere = |key: &str| {
        let key = key.to_ascii_lowercase();
        [
            "namespace",
            "job",
            "instance",
            "cluster",
            "prometheus",
            "endpoint",
            "container",
        ]
        .contains(&key.as_str())
            || [
                "source",
                "client",
                "upstream",
                "destination",
                "peer",
                "caller",
            ]
            .iter()
            .any(|side| key.starts_with(side))
    };
    let mut labelled: Vec<String> = pods
        .iter()
        .filter_map(workload_name)
        .filter(|w| {
            target
                .labels
                .iter()
                .any(|(key, value)| !elsewhere(key) && value.trim() == w)
        })
        .collect();
    labelled.sort();
    labelled.dedup();
    if let [one] = labelled.as_slice() {
        return Some(one.clone());
    }
    let words = anywhere::squash(&crate::detectors::alert_words(target));
    let mut named: Vec<String> = pods
        .iter()
        .filter_map(workload_name)
        .filter(|w| anywhere::spells(&words, w))
        .collect();
    named.sort_by_key(|w| std::cmp::Reverse(w.len()));
    named.dedup();
    named.into_iter().next()
}

/// Records why nothing could be looked up.
fn skip_everything<E: EvidenceSource>(c: &mut Collector<'_, E>, target: &AlertTarget) {
    let reason = match (&target.namespace, target.subject()) {
        (None, Some(subject)) => {
            format!("the alert names `{subject}` but no namespace, so it could not be looked up")
        }
        _ => "the alert names no pod, workload, service, node, volume or namespace".to_string(),
    };
    for capability in [
        Capability::PodDescribe,
        Capability::PodLogsPrevious,
        Capability::PodLogsCurrent,
        Capability::Events,
    ] {
        c.skip(capability, reason.clone());
    }
}

fn no_deploy_reason(target: &AlertTarget) -> String {
    match (&target.namespace, &target.service) {
        (None, _) => match target.subject() {
            Some(subject) => format!("the alert names `{subject}` but no namespace"),
            None => "the alert names no namespace".to_string(),
        },
        (Some(_), Some(service)) => format!(
            "no Deployment behind service `{service}` was identified, so no rollout history was read"
        ),
        (Some(_), None) => "the alert names no workload whose deploys to read".to_string(),
    }
}

/// `sts` → `StatefulSet`, `deployment` → `Deployment`.
fn canonical_kind(kind: &str) -> &'static str {
    match kind.to_ascii_lowercase().as_str() {
        "statefulset" | "sts" => "StatefulSet",
        "daemonset" | "ds" => "DaemonSet",
        "job" => "Job",
        "cronjob" => "CronJob",
        "replicaset" | "rs" => "ReplicaSet",
        _ => "Deployment",
    }
}

/// Whether a pod named `pod` belongs to a workload named `owner` (`owner-<hash>-<id>`, or
/// `owner-<ordinal>` for a StatefulSet).
fn owned_by_name(pod: &str, owner: &str) -> bool {
    kube::is_generated_from(pod, owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cronjobs_job_is_named_after_it_and_other_jobs_are_their_own() {
        assert_eq!(
            cronjob_of_job("nightly-billing-export-29087100"),
            Some("nightly-billing-export")
        );
        assert_eq!(cronjob_of_job("db-migrate-v42"), None);
        assert_eq!(cronjob_of_job("backfill-2024"), None);
        assert_eq!(cronjob_of_job("backup-20241205"), None);
        let pod = PodInfo {
            name: "nightly-billing-export-29087100-m4x7c".into(),
            owner: Some(("Job".into(), "nightly-billing-export-29087100".into())),
            ..PodInfo::default()
        };
        assert_eq!(
            workload_name(&pod).as_deref(),
            Some("nightly-billing-export")
        );
    }
}
