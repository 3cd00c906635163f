//! Next steps: one concrete action per finding, by detector kind, naming the objects and
//! settings the evidence names (the deployment, the container, the missing key), plus what to
//! check by hand when evidence is missing. Used by `summarise`.

use crate::detectors::{DetectorKind, Finding};
use crate::evidence::Capability;

use super::state::{IncidentState, MissingKind};
use super::summarise::subject;

/// Most next steps a report lists.
pub const MAX_NEXT_STEPS: usize = 5;

/// The next steps for a finished investigation, most important first, without duplicates.
pub fn next_steps(state: &IncidentState) -> Vec<String> {
    let names = Names::of(state);
    let mut steps: Vec<String> = Vec::new();
    let mut push = |step: String| {
        if !steps.contains(&step) {
            steps.push(step);
        }
    };
    let any_verified = state.findings.iter().any(|f| f.verified);
    for finding in &state.findings {
        // With a verified cause, unverified suspicions are not acted on (see summarise).
        if any_verified && !finding.verified && finding.detector != DetectorKind::DeployInWindow {
            continue;
        }
        push(step_for(finding, &names, state));
    }
    let failed: Vec<&Capability> = state
        .missing
        .iter()
        .filter(|m| m.kind == MissingKind::Failed)
        .map(|m| &m.capability)
        .collect();
    if let Some(step) = cluster_by_hand(&failed, &names) {
        push(step);
    }
    for capability in failed {
        if let Some(step) = by_hand(capability, &names) {
            push(step);
        }
    }
    if state.findings.is_empty()
        && !state.evidence.is_empty()
        && let Some(expr) = &state.alert.target.expression
    {
        push(format!(
            "Nothing checked shows a fault: run the alert's expression `{expr}` in Prometheus to \
             see whether it still fires and for which series."
        ));
    }
    steps.truncate(MAX_NEXT_STEPS);
    steps
}

/// The names a step mentions, from the alert.
struct Names {
    namespace: String,
    pod: Option<String>,
    workload: Option<String>,
    container: Option<String>,
    /// `deployment/payments-api`, or `the workload`.
    workload_ref: String,
}

impl Names {
    fn of(state: &IncidentState) -> Self {
        let target = &state.alert.target;
        let kind = target
            .workload_kind
            .as_deref()
            .unwrap_or("deployment")
            .to_ascii_lowercase();
        Self {
            namespace: target
                .namespace
                .clone()
                .unwrap_or_else(|| "<namespace>".to_string()),
            pod: target.pod.clone(),
            workload: target.workload.clone(),
            container: target.container.clone(),
            workload_ref: match &target.workload {
                Some(w) => format!("{kind}/{w}"),
                None => subject(target).map_or("the workload".to_string(), |s| format!("`{s}`")),
            },
        }
    }

    fn previous_log_command(&self, container: Option<&str>) -> String {
        let container = container
            .or(self.container.as_deref())
            .map(|c| format!(" -c {c}"))
            .unwrap_or_default();
        match (&self.pod, self.workload_ref.strip_prefix("job/")) {
            // A Job's failed runs are pods of their own, not restarts: read their logs, not a
            // previous container's.
            (None, Some(_)) => format!(
                "kubectl -n {} logs {}{container}",
                self.namespace, self.workload_ref
            ),
            (pod, _) => format!(
                "kubectl -n {} logs {}{container} --previous",
                self.namespace,
                pod.as_deref().unwrap_or("<pod>")
            ),
        }
    }

    fn owner(&self) -> String {
        match &self.workload {
            Some(w) => format!("`{w}`"),
            None => "the workload".to_string(),
        }
    }
}

fn step_for(finding: &Finding, names: &Names, state: &IncidentState) -> String {
    let container = container_of(&finding.title);
    let ns = &names.namespace;
    match finding.detector {
        DetectorKind::ConfigError => {
            if let Some(key) = finding.title.strip_prefix("Missing configuration: ") {
                format!(
                    "Set `{key}` in {}'s env / ConfigMap and roll out \
                     (`kubectl -n {ns} rollout restart {}` after changing a ConfigMap).",
                    names.owner(),
                    names.workload_ref
                )
            } else if finding.title.starts_with("Volume mount failing") {
                format!(
                    "Create the Secret/ConfigMap or fix the volume the event names, then let \
                     {} retry (`kubectl -n {ns} rollout restart {}`).",
                    names.owner(),
                    names.workload_ref
                )
            } else {
                format!(
                    "Fix the configuration the error names in {}'s spec or ConfigMap and roll out.",
                    names.owner()
                )
            }
        }
        DetectorKind::OomKilled => {
            let limit = finding
                .detail
                .split("memory limit is ")
                .nth(1)
                .map(|rest| rest.trim_end_matches('.').to_string());
            let which = container.map_or("the container".to_string(), |c| format!("`{c}`"));
            let now = limit.map(|l| format!(" (now {l})")).unwrap_or_default();
            let grew_steadily = state
                .findings
                .iter()
                .any(|f| f.detector == DetectorKind::MemoryGrowth);
            if grew_steadily {
                // Memory that climbs steadily until the kill is a leak: a higher limit only
                // moves the next kill later.
                format!(
                    "Find the leak in {which}: its memory grew steadily until the OOM kill, so a \
                     higher limit{now} only delays the next one. Take a heap profile of a running \
                     pod and compare with the previous release (`kubectl -n {ns} rollout \
                     history {}`).",
                    names.workload_ref
                )
            } else {
                format!(
                    "Check what {which} needs at peak (`container_memory_working_set_bytes` over \
                     the last hours): if it is a spike the limit{now} is too low for, raise it in \
                     {}; if it only grows, look for a leak first.",
                    names.workload_ref
                )
            }
        }
        DetectorKind::ExitCode | DetectorKind::CrashLoop => format!(
            "Read the crashed container's whole log: `{}`.",
            names.previous_log_command(container)
        ),
        DetectorKind::ImagePull => format!(
            "Check that the image exists in the registry with that tag and that the pod's \
             imagePullSecrets can read it; fix the image in {} and roll out.",
            names.workload_ref
        ),
        DetectorKind::Unschedulable => {
            let pod = names.pod.as_deref().unwrap_or("<pod>");
            let says = format!("{} {}", finding.title, finding.detail);
            if says.contains("taint") {
                format!(
                    "Give the pod a toleration for the taint the scheduler names, or schedule it \
                     elsewhere (`kubectl -n {ns} describe pod {pod}` lists the taints)."
                )
            } else if says.contains("affinity") || says.contains("selector") {
                format!(
                    "Fix the pod's node selector / affinity or label the nodes it expects \
                     (`kubectl -n {ns} describe pod {pod}`)."
                )
            } else if says.contains("PersistentVolumeClaim") || says.contains("volume") {
                format!(
                    "Fix the pod's volume claim first: `kubectl -n {ns} describe pvc` shows why \
                     it does not bind."
                )
            } else {
                format!(
                    "Make room for the pod: add node capacity or lower its requests \
                     (`kubectl -n {ns} describe pod {pod}` names what is insufficient)."
                )
            }
        }
        DetectorKind::CertificateError => "Renew the certificate the log names and restart what \
             loaded it; check when it was last rotated (cert-manager `Certificate` status)."
            .to_string(),
        DetectorKind::DependencyError => {
            let endpoint = finding
                .title
                .rsplit(' ')
                .next()
                .filter(|e| !e.is_empty())
                .unwrap_or("the dependency");
            format!(
                "Check that {endpoint} is up and reachable from namespace `{ns}` (its pods, \
                 Service endpoints, NetworkPolicies)."
            )
        }
        DetectorKind::DiskPressure => "Free space on the full volume or node (log rotation, old \
             data) or expand the PersistentVolumeClaim, then restart the pod."
            .to_string(),
        DetectorKind::ProbeFailure => format!(
            "Check the probe's path and port against what the app serves, and its start-up \
             time; if it is only slow, raise initialDelaySeconds / failureThreshold in {}.",
            names.workload_ref
        ),
        DetectorKind::ConnectionsExhausted if finding.title.starts_with("Connection limit") => {
            "The server's connection limit is reached: count its connections per client (on \
             Postgres `SELECT application_name, count(*) FROM pg_stat_activity GROUP BY 1`), \
             then bring pool size × replicas of every client under the server's limit (smaller \
             pools, fewer replicas, or a pooler such as PgBouncer)."
                .to_string()
        }
        DetectorKind::ConnectionsExhausted => format!(
            "Every connection of the pool{} is busy: find what holds them (slow queries, long \
             transactions, a leak) before raising the pool size; the database must allow pool \
             size × replicas.",
            finding
                .resource
                .as_deref()
                .map(|r| format!(" in `{r}`"))
                .unwrap_or_default()
        ),
        DetectorKind::DeployInWindow => {
            let deployment = finding
                .resource
                .as_deref()
                .or(names.workload.as_deref())
                .unwrap_or("<deployment>");
            let workload_recovered = state.findings.iter().any(|f| {
                f.detector == DetectorKind::Recovered && !f.title.starts_with("Container")
            });
            match scale_change(&finding.title) {
                _ if workload_recovered => format!(
                    "The rollout of `{deployment}` has completed and every replica is available: \
                     nothing needs undoing unless the alert fires again."
                ),
                Some((before, _)) => format!(
                    "If the extra replicas overload what they share (database connections, \
                     quotas, nodes), scale back while that is fixed: `kubectl -n {ns} scale \
                     deployment/{deployment} --replicas={before}`."
                ),
                None => format!(
                    "Compare this revision with the previous one; if the change is the cause, \
                     roll back: `kubectl -n {ns} rollout undo deployment/{deployment}`."
                ),
            }
        }
        DetectorKind::MetricStepChange => format!(
            "Find what changed when the metric stepped (deploys, config, traffic, a \
             dependency) {}.",
            super::summarise::around(&state.alert)
        ),
        DetectorKind::NodeNotReady => {
            let node = finding.resource.as_deref().unwrap_or("<node>");
            format!(
                "Check node `{node}`: `kubectl describe node {node}`, its kubelet \
                 (`journalctl -u kubelet`) and the machine behind it; if it does not come back, \
                 cordon and drain it so its pods run elsewhere."
            )
        }
        DetectorKind::NodePressure => {
            let node = finding.resource.as_deref().unwrap_or("<node>");
            format!(
                "Relieve node `{node}`: find the pods using most of the resource under pressure \
                 (`kubectl top pods -A --sort-by=memory`, or disk use on the node) and fix or \
                 move them."
            )
        }
        DetectorKind::VolumeProvisioning => {
            let class = finding
                .title
                .strip_prefix("StorageClass `")
                .and_then(|rest| rest.split('`').next());
            match class {
                Some(class) => format!(
                    "Create StorageClass `{class}` or point the claim at an existing class \
                     (`kubectl get storageclass`); the pod starts once its claim binds. Adding \
                     nodes does not help."
                ),
                None => format!(
                    "Read the provisioner's error (`kubectl -n {ns} describe pvc`) and fix the \
                     storage backend or class it names."
                ),
            }
        }
        DetectorKind::VolumeClaim => format!(
            "See why the claim does not bind: `kubectl -n {ns} describe pvc {}` (its events \
             name the provisioner's error).",
            finding.resource.as_deref().unwrap_or("<claim>")
        ),
        DetectorKind::VolumeFailed => format!(
            "Restore the volume behind `{}` (the backing disk is gone or broken) from a \
             snapshot or backup, or recreate the claim; pods that mount it cannot start until then.",
            finding.resource.as_deref().unwrap_or("the claim")
        ),
        DetectorKind::QuotaExceeded => {
            let quota = finding
                .title
                .strip_prefix("ResourceQuota `")
                .and_then(|rest| rest.split('`').next())
                .unwrap_or("<quota>");
            format!(
                "Raise ResourceQuota `{quota}` in `{ns}` or lower the requests/limits of \
                 {} (`kubectl -n {ns} describe quota {quota}` shows used vs hard).",
                names.workload_ref
            )
        }
        DetectorKind::AutoscalerMaxed => format!(
            "Find why the load per pod rose (traffic, a slow dependency, a regression) and, if \
             the cluster has room, raise the autoscaler's maxReplicas for {}.",
            names.workload_ref
        ),
        DetectorKind::NoEndpoints => format!(
            "Compare Service `{}`'s selector with its pods' labels (`kubectl -n {ns} get pods \
             --show-labels`) and fix whichever changed; make sure the pods are ready.",
            finding.resource.as_deref().unwrap_or("<service>")
        ),
        DetectorKind::SlowSpan => format!(
            "Look at where the requests wait: {} (its query plan and \
             indexes, locks, and the load on what it calls).",
            finding.title.trim_start_matches("Slowest span: ")
        ),
        DetectorKind::ErrorLine | DetectorKind::WarningEvent => format!(
            "Check whether this explains the alert: {}.",
            finding
                .refs
                .first()
                .map_or(finding.title.clone(), |c| format!("\"{}\"", c.quote))
        ),
        DetectorKind::MemoryGrowth => format!(
            "Memory grows steadily in {}: find the leak (heap profile, the release it started \
             with) before it reaches the limit.",
            names.workload_ref
        ),
        DetectorKind::CpuThrottling => format!(
            "The container is CPU-throttled: raise its CPU limit in {} (or remove it and keep a \
             request), or cut the work per request.",
            throttled_workload(finding).unwrap_or_else(|| names.workload_ref.clone())
        ),
        DetectorKind::Recovered if !finding.title.starts_with("Container") => format!(
            "{} is fully available again: confirm the alert resolves, and if the rollout was \
             slow, look at what held each new replica back (readiness, `minReadySeconds`).",
            names.workload_ref
        ),
        DetectorKind::Recovered => format!(
            "It has recovered for now: check whether the alert has resolved and what the \
             restarts {} had in common (`{}`) before closing the thread.",
            super::summarise::around(&state.alert),
            names.previous_log_command(container)
        ),
        DetectorKind::RestartTrend | DetectorKind::MetricSpike => format!(
            "Find what happens when the metric moves {}.",
            super::summarise::around(&state.alert)
        ),
        DetectorKind::JobFailed => format!(
            "Read the failed job's log (`kubectl -n {ns} logs job/{}`) and re-run it once \
             fixed.",
            finding
                .resource
                .as_deref()
                .or(names.workload.as_deref())
                .unwrap_or("<job>")
        ),
    }
}

/// One step for the pod's own views (description, logs, events) that could not be read.
fn cluster_by_hand(failed: &[&Capability], names: &Names) -> Option<String> {
    let ns = &names.namespace;
    let pod = names.pod.as_deref().unwrap_or("<pod>");
    let mut commands = Vec::new();
    if failed.contains(&&Capability::PodDescribe) {
        commands.push(format!("`kubectl -n {ns} describe pod {pod}`"));
    }
    if failed.contains(&&Capability::PodLogsPrevious) {
        commands.push(format!("`{}`", names.previous_log_command(None)));
    } else if failed.contains(&&Capability::PodLogsCurrent) {
        commands.push(format!("`kubectl -n {ns} logs {pod}`"));
    }
    if failed.contains(&&Capability::Events) {
        let object = names
            .pod
            .as_deref()
            .or(names.workload.as_deref())
            .unwrap_or("<pod>");
        commands.push(format!(
            "`kubectl -n {ns} get events --field-selector involvedObject.name={object}`"
        ));
    }
    if commands.is_empty() {
        return None;
    }
    Some(format!(
        "Firstline could not read the pod; check by hand: {}.",
        commands.join(", ")
    ))
}

/// What to check by hand when a capability outside the pod's own views could not be read.
fn by_hand(capability: &Capability, names: &Names) -> Option<String> {
    let ns = &names.namespace;
    Some(match capability {
        Capability::DeployHistory => format!(
            "Firstline could not read the deploy history: run `kubectl -n {ns} rollout history {}`.",
            names.workload_ref
        ),
        Capability::MetricRange => {
            "Firstline could not query the alert's metric: open the alert's graph link.".to_string()
        }
        _ => return None,
    })
}

/// The container a pod detector's title names: ``Container `api` OOMKilled`` → `api`.
fn container_of(title: &str) -> Option<&str> {
    let rest = title.strip_prefix("Container `")?;
    rest.split('`').next().filter(|name| !name.is_empty())
}

/// `(before, after)` replica counts of a scale-up finding's title ("… scaled up from 4 to 12
/// replicas …").
fn scale_change(title: &str) -> Option<(u64, u64)> {
    let rest = title.split_once("scaled up from ")?.1;
    let (before, rest) = rest.split_once(" to ")?;
    let after = rest.split_whitespace().next()?;
    Some((before.parse().ok()?, after.parse().ok()?))
}

/// The workload of the pod a finding is about, when that pod is not the alert's (CoreDNS
/// throttled under an application's latency alert): `deployment/coredns`.
fn throttled_workload(finding: &Finding) -> Option<String> {
    let pod = crate::investigate::kube::PodInfo {
        name: finding.resource.clone()?,
        ..Default::default()
    };
    crate::investigate::kube::deployment_of(&pod).map(|d| format!("deployment/{d}"))
}

#[cfg(test)]
mod tests {
    //! The first step of a report answers its first cause: one test per family of causes, each
    //! from the evidence its detector reads (so a title the step parses is the detector's own).

    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::*;
    use crate::detectors::{Confidence, DetectionContext, run_detectors};
    use crate::evidence::{Evidence, EvidenceId};
    use crate::state::AlertInput;
    use firstline_model::ThreadContext;

    const START: &str = "startsAt=2025-03-04T14:02:00Z";

    fn ev(n: u32, capability: Capability, args: serde_json::Value, text: &str) -> Evidence {
        Evidence::new(
            EvidenceId::new(n).expect("id"),
            capability,
            "k8s",
            "tool",
            args,
            text,
            DateTime::parse_from_rfc3339("2025-03-04T14:40:00Z")
                .expect("time")
                .with_timezone(&Utc),
        )
    }

    /// A round over `evidence` for an alert with these `key=value` labels, started 14:02.
    fn round(labels: &str, evidence: Vec<Evidence>) -> IncidentState {
        let mut state = IncidentState::new(
            AlertInput::parse(format!("{labels} {START}"), None),
            ThreadContext::default(),
        );
        assert!(state.alert.anchor().is_some(), "{:?}", state.alert.target);
        let mut ctx = DetectionContext::for_alert(&state.alert.target);
        ctx.alert_start = state.alert.anchor();
        state.findings = run_detectors(&evidence, &ctx);
        state.evidence = evidence;
        state
    }

    /// The steps of `state`, checking that its first finding is a verified cause when
    /// `verified` says so.
    fn steps(state: &IncidentState, verified: bool) -> Vec<String> {
        let first = state.findings.first().expect("a finding");
        assert_eq!(first.verified, verified, "{:#?}", state.findings);
        let steps = next_steps(state);
        assert!(!steps.is_empty());
        steps
    }

    fn pod_args(pod: &str) -> serde_json::Value {
        json!({"name": pod, "namespace": "default"})
    }

    const CRASH_POD: &str = "alertname=KubePodCrashLooping namespace=default \
                             pod=payments-api-7d9f8c6b5-x2k4q container=api";

    fn describe(container_state: &str) -> String {
        format!(
            "\
Name:             payments-api-7d9f8c6b5-x2k4q
Namespace:        default
Containers:
  api:
    Image:          registry/payments:2.4.1
{container_state}
    Limits:
      memory:  256Mi
"
        )
    }

    const SHIPMENT_ALERT: &str =
        "alertname=ShipmentApiErrorRate namespace=fulfilment service=shipment-api";

    const HIKARI: &str = "2025-01-01T00:00:00.104Z ERROR 1 --- [shipment-api] [nio-8080-exec-3] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - Connection is not available, request timed out after 30000ms (total=4, active=4, idle=0, waiting=11)";

    fn scale_up_events() -> String {
        let event = |message: &str, at: &str| {
            format!(
                "- InvolvedObject:\n    Kind: Deployment\n    Name: shipment-api\n    apiVersion: apps/v1\n  Message: {message}\n  Namespace: fulfilment\n  Reason: ScalingReplicaSet\n  Timestamp: 2025-03-04 {at} +0000 UTC\n  Type: Normal\n"
            )
        };
        format!(
            "# The following events (YAML format) were found:\n{}{}{}",
            event(
                "Scaled up replica set shipment-api-6c9f8d7b5 to 3",
                "13:40:00"
            ),
            event(
                "Scaled up replica set shipment-api-6c9f8d7b5 to 12 from 3",
                "13:41:00"
            ),
            event(
                "Scaled down replica set shipment-api-5b8c7d6f4 to 0 from 4",
                "13:42:00"
            ),
        )
    }

    const SCALE_BACK: &str = "If the extra replicas overload what they share (database \
                              connections, quotas, nodes), scale back while that is fixed: \
                              `kubectl -n fulfilment scale deployment/shipment-api --replicas=4`.";

    #[test]
    fn a_connection_limit_is_answered_by_counting_connections_then_scaling_back() {
        let postgres = "\
2025-01-01 00:00:00.118 UTC [412873] FATAL:  sorry, too many clients already
2025-01-01 00:00:01.902 UTC [412881] FATAL:  sorry, too many clients already
";
        let readiness = "- message: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\n  reason: Unhealthy\n  type: Warning\n";
        let state = round(
            SHIPMENT_ALERT,
            vec![
                ev(
                    1,
                    Capability::PodLogsCurrent,
                    pod_args("fulfilment-pg-0"),
                    postgres,
                ),
                ev(
                    2,
                    Capability::PodLogsCurrent,
                    pod_args("shipment-api-6c9f8d7b5-k7mxp"),
                    &format!(
                        "{HIKARI}\norg.postgresql.util.PSQLException: FATAL: sorry, too many clients already\n"
                    ),
                ),
                ev(3, Capability::Events, json!({}), readiness),
                ev(4, Capability::Events, json!({}), &scale_up_events()),
            ],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("The server's connection limit is reached: count its connections"),
            "{steps:#?}"
        );
        assert!(steps.contains(&SCALE_BACK.to_string()), "{steps:#?}");
        assert!(
            steps.iter().all(|s| !s.contains("probe")),
            "the readiness probe's 503 is a symptom here: {steps:#?}"
        );
    }

    #[test]
    fn an_exhausted_pool_is_answered_by_finding_what_holds_its_connections() {
        let state = round(
            SHIPMENT_ALERT,
            vec![ev(
                1,
                Capability::PodLogsCurrent,
                pod_args("shipment-api-6c9f8d7b5-k7mxp"),
                &format!("{HIKARI}\n{HIKARI}\n"),
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with(
                "Every connection of the pool in `shipment-api-6c9f8d7b5-k7mxp` is busy: find \
                 what holds them"
            ),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_scale_up_before_the_alert_is_answered_by_scaling_back_to_the_old_size() {
        let state = round(
            SHIPMENT_ALERT,
            vec![ev(1, Capability::Events, json!({}), &scale_up_events())],
        );
        let steps = steps(&state, false);
        assert_eq!(steps[0], SCALE_BACK, "{:#?}", state.findings);
    }

    #[test]
    fn a_deploy_before_the_alert_is_answered_by_rolling_back_its_owning_deployment() {
        let history = "\
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    annotations:
      deployment.kubernetes.io/revision: \"7\"
    creationTimestamp: \"2025-03-04T13:52:10Z\"
    name: payments-api-7d9f8c6b5
    ownerReferences:
    - apiVersion: apps/v1
      controller: true
      kind: Deployment
      name: payments-api
";
        // The alert names a Service only: the Deployment comes from the ReplicaSet's owner.
        let state = round(
            "alertname=PaymentsErrorRate namespace=payments service=payments",
            vec![ev(1, Capability::DeployHistory, json!({}), history)],
        );
        let steps = steps(&state, false);
        assert_eq!(
            steps[0],
            "Compare this revision with the previous one; if the change is the cause, roll back: \
             `kubectl -n payments rollout undo deployment/payments-api`."
        );
    }

    #[test]
    fn a_rollout_that_recovered_is_answered_without_undoing_anything() {
        let deployment = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  generation: 7
  name: checkout
  namespace: shop
spec:
  replicas: 4
status:
  availableReplicas: 4
  conditions:
  - lastTransitionTime: \"2025-03-04T11:00:00Z\"
    lastUpdateTime: \"2025-03-04T14:06:00Z\"
    reason: NewReplicaSetAvailable
    status: \"True\"
    type: Progressing
  observedGeneration: 7
  readyReplicas: 4
  replicas: 4
  updatedReplicas: 4
";
        let history = "\
- kind: ReplicaSet
  metadata:
    annotations:
      deployment.kubernetes.io/revision: \"12\"
    creationTimestamp: \"2025-03-04T13:55:00Z\"
    name: checkout-6b8d7c5f9
    ownerReferences:
    - kind: Deployment
      name: checkout
";
        let state = round(
            "alertname=KubeDeploymentReplicasMismatch namespace=shop deployment=checkout",
            vec![
                ev(
                    1,
                    Capability::ObjectGet,
                    json!({"kind": "Deployment"}),
                    deployment,
                ),
                ev(2, Capability::DeployHistory, json!({}), history),
            ],
        );
        let steps = steps(&state, false);
        assert!(
            steps[0].starts_with(
                "deployment/checkout is fully available again: confirm the alert resolves"
            ),
            "{steps:#?}"
        );
        assert!(
            steps.contains(
                &"The rollout of `checkout` has completed and every replica is available: nothing \
                  needs undoing unless the alert fires again."
                    .to_string()
            ),
            "{steps:#?}"
        );
        assert!(
            steps.iter().all(|s| !s.contains("rollout undo")),
            "{steps:#?}"
        );
    }

    /// CFS counters of `pod`'s `container`, throttled 78 % of periods for two hours.
    fn throttled_counters(pod: &str, container: &str) -> String {
        let start = 1_741_093_200; // 13:00
        let series = |name: &str, f: &dyn Fn(i64) -> i64| {
            let values: Vec<serde_json::Value> = (0..24)
                .map(|i| json!([start + 300 * i, f(i).to_string()]))
                .collect();
            json!({"metric": {"__name__": name, "namespace": "kube-system", "pod": pod, "container": container}, "values": values})
        };
        json!({"status": "success", "data": {"resultType": "matrix", "result": [
            series("container_cpu_cfs_throttled_periods_total", &|i| 1000 + 78 * i),
            series("container_cpu_cfs_periods_total", &|i| 2000 + 100 * i),
        ]}})
        .to_string()
    }

    #[test]
    fn cpu_throttling_is_answered_in_the_throttled_pods_own_deployment() {
        let coredns = "\
Name:             coredns-5d78c9869d-x2k4q
Namespace:        kube-system
Containers:
  coredns:
    State:          Running
    Ready:          True
    Restart Count:  0
    Limits:
      cpu:     100m
      memory:  170Mi
";
        let lookups = "time=2025-03-04T14:01:00Z level=WARN msg=\"quote failed\" err=\"dial tcp: lookup api.carrierhub.io on 10.96.0.10:53: read udp 10.244.5.23:48812->10.96.0.10:53: i/o timeout\"\n";
        let state = round(
            "alertname=ShippingRatesLatencyHigh namespace=logistics service=shipping-rates",
            vec![
                ev(
                    1,
                    Capability::MetricRange,
                    json!({"query": "container_cpu_cfs_throttled_periods_total"}),
                    &throttled_counters("coredns-5d78c9869d-x2k4q", "coredns"),
                ),
                ev(
                    2,
                    Capability::PodDescribe,
                    pod_args("coredns-5d78c9869d-x2k4q"),
                    coredns,
                ),
                ev(
                    3,
                    Capability::PodLogsCurrent,
                    pod_args("shipping-rates-6b8d7c5f9-abcde"),
                    lookups,
                ),
            ],
        );
        let steps = steps(&state, true);
        assert_eq!(state.findings[0].detector, DetectorKind::CpuThrottling);
        assert_eq!(
            steps[0],
            "The container is CPU-throttled: raise its CPU limit in deployment/coredns (or remove \
             it and keep a request), or cut the work per request."
        );
    }

    #[test]
    fn a_slow_span_is_answered_where_the_requests_wait() {
        let trace = |id: &str, total: u64| {
            format!(
                r#"{{"traceID":"{id}","rootTraceName":"POST /checkout","durationMs":{total},"spanSet":{{"spans":[{{"spanID":"{id}1","name":"POST /checkout","serviceName":"checkout","durationMs":{total}}},{{"spanID":"{id}2","parentSpanID":"{id}1","name":"SELECT stock","serviceName":"inventory-db","durationMs":{}}}]}}}}"#,
                total * 92 / 100
            )
        };
        let traces = format!(
            r#"{{"traces":[{},{}]}}"#,
            trace("a", 5000),
            trace("b", 4000)
        );
        let state = round(
            "alertname=CheckoutLatencyHigh namespace=shop service=checkout",
            vec![ev(1, Capability::TraceSearch, json!({}), &traces)],
        );
        let steps = steps(&state, true);
        assert_eq!(
            steps[0],
            "Look at where the requests wait: `SELECT stock` in `inventory-db` took 4.6 s of a \
             5.0 s request (its query plan and indexes, locks, and the load on what it calls)."
        );
    }

    #[test]
    fn an_oom_kill_is_answered_by_sizing_the_containers_memory() {
        let state = round(
            CRASH_POD,
            vec![ev(
                1,
                Capability::PodDescribe,
                pod_args("payments-api-7d9f8c6b5-x2k4q"),
                &describe(
                    "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n    Restart Count:  12",
                ),
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Check what `api` needs at peak")
                && steps[0].contains("the limit (now 256Mi) is too low for"),
            "{steps:#?}"
        );
        assert!(
            steps.iter().all(|s| !s.contains("--previous")),
            "the crash loop is the OOM's symptom: {steps:#?}"
        );
    }

    #[test]
    fn an_oom_kill_after_steady_growth_is_answered_by_finding_the_leak() {
        let mut state = round(
            CRASH_POD,
            vec![ev(
                1,
                Capability::PodDescribe,
                pod_args("payments-api-7d9f8c6b5-x2k4q"),
                &describe(
                    "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n    Restart Count:  3",
                ),
            )],
        );
        state.findings.push(crate::detectors::Finding {
            detector: DetectorKind::MemoryGrowth,
            title: "Container `api` memory grows 40 MiB/h".to_string(),
            detail: String::new(),
            confidence: Confidence::High,
            verified: false,
            resource: Some("payments-api-7d9f8c6b5-x2k4q".to_string()),
            refs: Vec::new(),
            at: None,
        });
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Find the leak in `api`: its memory grew steadily until the OOM kill, so a higher limit (now 256Mi) only delays the next one."),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_crash_explained_by_its_log_is_answered_by_reading_the_whole_previous_log() {
        let state = round(
            CRASH_POD,
            vec![
                ev(
                    1,
                    Capability::PodDescribe,
                    pod_args("payments-api-7d9f8c6b5-x2k4q"),
                    &describe(
                        "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    2\n    Restart Count:  5",
                    ),
                ),
                ev(
                    2,
                    Capability::PodLogsPrevious,
                    pod_args("payments-api-7d9f8c6b5-x2k4q"),
                    "starting\npanic: runtime error: invalid memory address or nil pointer dereference\ngoroutine 1 [running]:\n",
                ),
            ],
        );
        let steps = steps(&state, true);
        assert_eq!(
            steps[0],
            "Read the crashed container's whole log: `kubectl -n default logs \
             payments-api-7d9f8c6b5-x2k4q -c api --previous`."
        );
    }

    #[test]
    fn an_image_pull_failure_is_answered_by_checking_the_image() {
        let state = round(
            CRASH_POD,
            vec![ev(
                1,
                Capability::PodDescribe,
                pod_args("payments-api-7d9f8c6b5-x2k4q"),
                &describe(
                    "    State:          Waiting\n      Reason:       ImagePullBackOff\nEvents:\n  Warning  Failed  10s  kubelet  Failed to pull image \"registry/payments:2.4.2\": manifest unknown",
                ),
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Check that the image exists in the registry with that tag"),
            "{steps:#?}"
        );
    }

    #[test]
    fn an_unschedulable_pod_is_answered_by_what_the_scheduler_names() {
        let pending = |message: &str| {
            round(
                CRASH_POD,
                vec![ev(
                    1,
                    Capability::PodDescribe,
                    pod_args("payments-api-7d9f8c6b5-x2k4q"),
                    &format!(
                        "Name:  payments-api-7d9f8c6b5-x2k4q\nStatus:  Pending\nEvents:\n  Warning  FailedScheduling  12s  default-scheduler  {message}\n"
                    ),
                )],
            )
        };
        let taint = pending(
            "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/3 nodes are available.",
        );
        assert!(steps(&taint, true)[0].starts_with("Give the pod a toleration for the taint"));
        let memory = pending("0/3 nodes are available: 3 Insufficient memory.");
        assert!(steps(&memory, true)[0].starts_with("Make room for the pod: add node capacity"));
        let affinity = pending(
            "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.",
        );
        assert!(steps(&affinity, true)[0].starts_with("Fix the pod's node selector / affinity"));
    }

    /// A crash (exit code 1) whose previous log ends with `last_line`.
    fn crashed_with(last_line: &str) -> IncidentState {
        round(
            CRASH_POD,
            vec![
                ev(
                    1,
                    Capability::PodDescribe,
                    pod_args("payments-api-7d9f8c6b5-x2k4q"),
                    &describe(
                        "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n    Restart Count:  5",
                    ),
                ),
                ev(
                    2,
                    Capability::PodLogsPrevious,
                    pod_args("payments-api-7d9f8c6b5-x2k4q"),
                    &format!("2025-03-04T14:02:00Z INFO starting\n{last_line}\n"),
                ),
            ],
        )
    }

    #[test]
    fn a_certificate_error_is_answered_by_renewing_the_certificate() {
        let state = crashed_with(
            "2025-03-04T14:02:01Z ERROR x509: certificate has expired or is not yet valid: current time 2025-03-04T14:02:01Z is after 2025-03-01T00:00:00Z",
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Renew the certificate the log names"),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_refused_dependency_is_answered_by_checking_that_endpoint() {
        let state = crashed_with(
            "2025-03-04T14:02:01Z FATAL dial tcp 10.20.0.7:5432: connect: connection refused",
        );
        let steps = steps(&state, true);
        assert_eq!(state.findings[0].detector, DetectorKind::DependencyError);
        assert!(
            steps[0].starts_with(
                "Check that 10.20.0.7:5432 is up and reachable from namespace `default`"
            ),
            "{steps:#?}"
        );
    }

    #[test]
    fn full_disk_is_answered_by_freeing_space() {
        let state = crashed_with(
            "2025-03-04T14:02:01Z ERROR write /var/lib/data/wal.log: no space left on device",
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Free space on the full volume or node"),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_failing_probe_is_answered_by_checking_the_probe() {
        let state = round(
            "alertname=KubePodNotReady namespace=default pod=payments-api-7d9f8c6b5-x2k4q",
            vec![ev(
                1,
                Capability::Events,
                json!({}),
                "- message: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\n  reason: Unhealthy\n  type: Warning\n",
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Check the probe's path and port"),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_failing_volume_mount_is_answered_by_creating_what_it_mounts() {
        let state = round(
            CRASH_POD,
            vec![ev(
                1,
                Capability::Events,
                json!({}),
                "- message: 'MountVolume.SetUp failed for volume \"certs\" : configmap \"tls-bundle\" not found'\n  reason: FailedMount\n  type: Warning\n",
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Create the Secret/ConfigMap or fix the volume the event names"),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_metric_step_alone_is_answered_by_what_changed_at_that_time() {
        let start = 1_741_096_200; // 13:50
        let values: Vec<serde_json::Value> = (0..15)
            .map(|i| json!([start + 60 * i, if i < 8 { "0.01" } else { "0.2" }]))
            .collect();
        let matrix = json!({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"__name__": "http_error_ratio", "service": "payments"}, "values": values}
        ]}})
        .to_string();
        let state = round(
            "alertname=PaymentsErrorRate namespace=payments service=payments",
            vec![ev(1, Capability::MetricRange, json!({}), &matrix)],
        );
        let steps = steps(&state, false);
        assert_eq!(
            steps[0],
            "Find what changed when the metric stepped (deploys, config, traffic, a dependency) \
             around 14:02 UTC."
        );
    }

    #[test]
    fn a_node_not_ready_is_answered_on_that_node() {
        let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-eu-1b-5\nstatus:\n  conditions:\n  - message: Kubelet stopped posting node status.\n    reason: NodeStatusUnknown\n    status: Unknown\n    type: Ready\n";
        let state = round(
            "alertname=KubeNodeNotReady node=worker-eu-1b-5",
            vec![ev(1, Capability::ObjectGet, json!({"kind": "Node"}), node)],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0]
                .starts_with("Check node `worker-eu-1b-5`: `kubectl describe node worker-eu-1b-5`"),
            "{steps:#?}"
        );
    }

    #[test]
    fn node_pressure_is_answered_by_relieving_that_node() {
        let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\nstatus:\n  conditions:\n  - message: kubelet has insufficient memory available\n    reason: KubeletHasInsufficientMemory\n    status: \"True\"\n    type: MemoryPressure\n  - status: \"True\"\n    type: Ready\n";
        let state = round(
            "alertname=KubeNodePressure node=worker-1",
            vec![ev(1, Capability::ObjectGet, json!({"kind": "Node"}), node)],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Relieve node `worker-1`"),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_missing_storage_class_is_answered_by_creating_it() {
        let events = "- message: 'storageclass.storage.k8s.io \"fast-ssd\" not found'\n  reason: ProvisioningFailed\n  type: Warning\n";
        let state = round(
            "alertname=KubePersistentVolumeClaimPending namespace=analytics persistentvolumeclaim=data-0",
            vec![ev(1, Capability::Events, json!({}), events)],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with(
                "Create StorageClass `fast-ssd` or point the claim at an existing class"
            ),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_pending_claim_alone_is_answered_by_its_events() {
        let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data-0\n  namespace: analytics\nspec:\n  storageClassName: standard\nstatus:\n  phase: Pending\n";
        let state = round(
            "alertname=KubePersistentVolumeClaimPending namespace=analytics persistentvolumeclaim=data-0",
            vec![ev(
                1,
                Capability::ObjectGet,
                json!({"kind": "PersistentVolumeClaim"}),
                claim,
            )],
        );
        let steps = steps(&state, false);
        assert!(
            steps[0].starts_with(
                "See why the claim does not bind: `kubectl -n analytics describe pvc data-0`"
            ),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_failed_volume_is_answered_by_restoring_what_backs_its_claim() {
        let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pvc-2e9a6c4b\nspec:\n  claimRef:\n    name: data-feature-store-0\n    namespace: analytics\nstatus:\n  phase: Failed\n";
        let state = round(
            "alertname=KubePersistentVolumeErrors persistentvolume=pvc-2e9a6c4b",
            vec![ev(
                1,
                Capability::ObjectGet,
                json!({"kind": "PersistentVolume"}),
                pv,
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Restore the volume behind `data-feature-store-0`"),
            "{steps:#?}"
        );
    }

    #[test]
    fn an_exceeded_quota_is_answered_by_raising_that_quota() {
        let events = "- message: 'Error creating: pods \"api-7d9f8c6b5-x2k4q\" is forbidden: exceeded quota: compute-quota, requested: limits.memory=512Mi, used: limits.memory=8Gi, limited: limits.memory=8Gi'\n  reason: FailedCreate\n  type: Warning\n";
        let state = round(
            "alertname=KubeDeploymentReplicasMismatch namespace=shop deployment=api",
            vec![ev(1, Capability::Events, json!({}), events)],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Raise ResourceQuota `compute-quota` in `shop`"),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_maxed_autoscaler_is_answered_by_why_the_load_rose() {
        let hpa = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: api\nspec:\n  maxReplicas: 10\n  scaleTargetRef:\n    kind: Deployment\n    name: api\nstatus:\n  currentReplicas: 10\n";
        let state = round(
            "alertname=KubeHpaMaxedOut namespace=shop horizontalpodautoscaler=api deployment=api",
            vec![ev(
                1,
                Capability::ObjectGet,
                json!({"kind": "HorizontalPodAutoscaler"}),
                hpa,
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Find why the load per pod rose")
                && steps[0].ends_with("raise the autoscaler's maxReplicas for deployment/api."),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_service_without_endpoints_is_answered_by_its_selector() {
        let endpoints =
            "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: metrics\nsubsets: []\n";
        let state = round(
            "alertname=TargetDown namespace=monitoring service=metrics",
            vec![ev(
                1,
                Capability::ObjectGet,
                json!({"kind": "Endpoints"}),
                endpoints,
            )],
        );
        let steps = steps(&state, true);
        assert!(
            steps[0].starts_with("Compare Service `metrics`'s selector"),
            "{steps:#?}"
        );
    }

    #[test]
    fn an_error_line_alone_is_answered_by_checking_that_line() {
        let log = "2025-03-04T14:01:00Z INFO GET /pay 200\n2025-03-04T14:01:30Z ERROR ledger rejected batch 42: checksum mismatch\n";
        let state = round(
            "alertname=PaymentsErrorRate namespace=payments service=payments",
            vec![ev(
                1,
                Capability::PodLogsCurrent,
                pod_args("payments-7d9f8c6b5-x2k4q"),
                log,
            )],
        );
        let steps = steps(&state, false);
        assert_eq!(
            steps[0],
            "Check whether this explains the alert: \"2025-03-04T14:01:30Z ERROR ledger rejected \
             batch 42: checksum mismatch\"."
        );
    }

    #[test]
    fn a_failed_job_is_answered_by_its_log() {
        let job = "Name:             nightly-report\nBackoff Limit:    2\nEvents:\n  Warning  BackoffLimitExceeded  1m   job-controller  Job has reached the specified backoff limit\n";
        let state = round(
            "alertname=KubeJobFailed namespace=batch job_name=nightly-report",
            vec![ev(
                1,
                Capability::PodDescribe,
                json!({"kind": "job", "name": "nightly-report"}),
                job,
            )],
        );
        let steps = steps(&state, false);
        assert!(
            steps[0].starts_with(
                "Read the failed job's log (`kubectl -n batch logs job/nightly-report`)"
            ),
            "{steps:#?}"
        );
    }

    #[test]
    fn a_container_that_recovered_is_answered_by_confirming_the_alert_resolved() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: payments-api-7d9f8c6b5-x2k4q\nstatus:\n  containerStatuses:\n  - name: api\n    ready: true\n    restartCount: 4\n    state:\n      running:\n        startedAt: \"2025-03-04T13:58:00Z\"\n";
        let state = round(
            CRASH_POD,
            vec![ev(
                1,
                Capability::PodDescribe,
                pod_args("payments-api-7d9f8c6b5-x2k4q"),
                pod,
            )],
        );
        let steps = steps(&state, false);
        assert!(
            steps[0].starts_with("It has recovered for now: check whether the alert has resolved")
                && steps[0].contains(
                    "`kubectl -n default logs payments-api-7d9f8c6b5-x2k4q -c api --previous`"
                ),
            "{steps:#?}"
        );
    }
}
