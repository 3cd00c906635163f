//! The first step of a report answers its headline cause: one test per family of causes, each
//! from the evidence its detector reads; and no step names an object outside its chain, acts
//! on a consequence, or comes from evidence that no longer stands.

use serde_json::json;

use super::*;
use crate::detectors::testing::{
    assert_contains, describe, error_ratio, ev, event, event_list, events, fetched_at, history,
    log_of, object, previous_log, shipment_api_scale_up,
};
use crate::detectors::{DetectionContext, Kind, run_detectors};
use crate::evidence::Evidence;
use crate::state::AlertInput;
use crate::summarise::story;
use firstline_model::ThreadContext;

const START: &str = "startsAt=2025-03-04T14:02:00Z";

/// When the round's tools answered.
const FETCHED: &str = "2025-03-04T14:40:00Z";

/// A round over `evidence` (fetched at 14:40) for an alert with these `key=value` labels,
/// started 14:02.
fn round(labels: &str, evidence: Vec<Evidence>) -> IncidentState {
    let mut state = IncidentState::new(
        AlertInput::parse(format!("{labels} {START}"), None),
        ThreadContext::default(),
    );
    assert!(state.alert.anchor().is_some(), "{:?}", state.alert.target);
    let evidence = fetched_at(FETCHED, evidence);
    let mut ctx = DetectionContext::for_alert(&state.alert.target);
    ctx.alert_start = state.alert.anchor();
    state.findings = run_detectors(&evidence, &ctx);
    state.evidence = evidence;
    state
}

/// The steps of `state`, checking that it has a headline cause when `headline` says so.
fn steps(state: &IncidentState, headline: bool) -> Vec<String> {
    let story = story(state);
    assert_eq!(
        story.headline().is_some(),
        headline,
        "{:#?}",
        state.findings
    );
    let steps = next_steps(state, &story);
    assert!(!steps.is_empty());
    steps
}

/// The steps of `state` (as [`steps`] checks them), checking that the first starts with `first`.
fn steps_starting(state: &IncidentState, headline: bool, first: &str) -> Vec<String> {
    let steps = steps(state, headline);
    assert!(steps[0].starts_with(first), "{steps:#?}");
    steps
}

/// Asserts that no step says `text`.
#[track_caller]
fn assert_no_step_says(steps: &[String], text: &str) {
    assert!(
        steps.iter().all(|s| !s.contains(text)),
        "a step says {text:?}: {steps:#?}"
    );
}

const CRASH_POD: &str = "alertname=KubePodCrashLooping namespace=default \
                             pod=payments-api-7d9f8c6b5-x2k4q container=api";

const POD_NOT_READY: &str =
    "alertname=KubePodNotReady namespace=default pod=payments-api-7d9f8c6b5-x2k4q";

const PAYMENTS_ALERT: &str = "alertname=PaymentsErrorRate namespace=payments service=payments";

/// The alert's pod, its one container `api` in `container_state`, as `kubectl describe` prints
/// it.
fn pod_description(container_state: &str) -> String {
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

/// The alert's pod, described: `api` backs off after it terminated for `reason` with
/// `exit_code`, restarted `restarts` times.
fn crash_looping(n: u32, reason: &str, exit_code: u32, restarts: u32) -> Evidence {
    describe(
        n,
        &pod_description(&format!(
            "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       {reason}\n      Exit Code:    {exit_code}\n    Restart Count:  {restarts}"
        )),
    )
}

/// Revision 7 of Deployment `payments-api`, created at 13:52:10.
const PAYMENTS_HISTORY: &str = "\
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

/// The payments error ratio a minute apart from 13:50: 1 % for `minutes` minutes, then 20 %
/// (15 minutes in all).
fn error_ratio_step(n: u32, minutes: usize) -> Evidence {
    let mut values = vec![0.01; minutes];
    values.resize(15, 0.2);
    ev(n, Capability::MetricRange, json!({}), &error_ratio(&values))
}

const SHIPMENT_ALERT: &str =
    "alertname=ShipmentApiErrorRate namespace=fulfilment service=shipment-api";

const HIKARI: &str = "2025-01-01T00:00:00.104Z ERROR 1 --- [shipment-api] [nio-8080-exec-3] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - Connection is not available, request timed out after 30000ms (total=4, active=4, idle=0, waiting=11)";

#[test]
fn a_connection_limit_is_answered_by_counting_connections_not_by_the_scale_up() {
    let postgres = "\
2025-01-01 00:00:00.118 UTC [412873] FATAL:  sorry, too many clients already
2025-01-01 00:00:01.902 UTC [412881] FATAL:  sorry, too many clients already
";
    let readiness = "- message: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\n  reason: Unhealthy\n  type: Warning\n";
    let state = round(
        SHIPMENT_ALERT,
        vec![
            log_of(1, "fulfilment-pg-0", postgres),
            log_of(
                2,
                "shipment-api-6c9f8d7b5-k7mxp",
                &format!(
                    "{HIKARI}\norg.postgresql.util.PSQLException: FATAL: sorry, too many clients already\n"
                ),
            ),
            events(3, readiness),
            events(4, &shipment_api_scale_up()),
        ],
    );
    let steps = steps_starting(
        &state,
        true,
        "The server's connection limit is reached: count its connections",
    );
    // The scale-up led there; the step is the limit's, which already says to bring
    // pools × replicas under it, not a bare "scale back".
    assert_no_step_says(&steps, "--replicas");
    // The readiness probe's 503 is a symptom here.
    assert_no_step_says(&steps, "probe");
}

#[test]
fn an_exhausted_pool_is_answered_by_finding_what_holds_its_connections() {
    let state = round(
        SHIPMENT_ALERT,
        vec![log_of(
            1,
            "shipment-api-6c9f8d7b5-k7mxp",
            &format!("{HIKARI}\n{HIKARI}\n"),
        )],
    );
    steps_starting(
        &state,
        true,
        "Every connection of the pool in `shipment-api-6c9f8d7b5-k7mxp` is busy: find what \
         holds them",
    );
}

#[test]
fn a_scale_up_alone_is_context_and_is_never_answered_by_scaling_down() {
    let state = round(SHIPMENT_ALERT, vec![events(1, &shipment_api_scale_up())]);
    assert_eq!(state.findings[0].kind(), Kind::ScaleChange);
    let steps = steps_starting(
        &state,
        false,
        "Check what the extra replicas of `shipment-api` share",
    );
    assert_no_step_says(&steps, "--replicas");
}

#[test]
fn an_unconfirmed_deploy_is_answered_by_comparing_revisions_not_by_rolling_back() {
    // The alert names a Service only: the Deployment comes from the ReplicaSet's owner.
    let state = round(PAYMENTS_ALERT, vec![history(1, PAYMENTS_HISTORY)]);
    let steps = steps(&state, false);
    assert_eq!(
        steps[0],
        "Compare this revision of `payments-api` with the previous one (`kubectl -n payments \
         rollout history deployment/payments-api --revision=7`) before suspecting it further."
    );
    assert_no_step_says(&steps, "rollout undo");
}

#[test]
fn a_deploy_the_metric_stepped_after_is_answered_by_rolling_back_its_deployment() {
    // The error ratio steps up at 13:57.
    let state = round(
        PAYMENTS_ALERT,
        vec![history(1, PAYMENTS_HISTORY), error_ratio_step(2, 7)],
    );
    let steps = steps_starting(
        &state,
        true,
        "Roll back `payments-api` to the revision before this deploy",
    );
    assert_contains(
        &steps[0],
        "`kubectl -n payments rollout undo deployment/payments-api`",
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
    let checkout_history = "\
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
            object(1, "Deployment", deployment),
            history(2, checkout_history),
        ],
    );
    let steps = steps_starting(
        &state,
        false,
        "deployment/checkout is fully available again: confirm the alert resolves",
    );
    assert_no_step_says(&steps, "rollout undo");
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
                json!({"name": "coredns-5d78c9869d-x2k4q", "namespace": "default"}),
                coredns,
            ),
            log_of(3, "shipping-rates-6b8d7c5f9-abcde", lookups),
        ],
    );
    let steps = steps(&state, true);
    assert_eq!(state.findings[0].kind(), Kind::CpuThrottling);
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
        "Look at where the requests wait: `SELECT stock` in `inventory-db` (its query plan and \
         indexes, locks, and the load on what it calls)."
    );
}

#[test]
fn an_oom_kill_is_answered_by_sizing_the_containers_memory() {
    let state = round(CRASH_POD, vec![crash_looping(1, "OOMKilled", 137, 12)]);
    let steps = steps_starting(&state, true, "Check what `api` needs at peak");
    assert_contains(&steps[0], "the limit (now 256Mi) is too low for");
    // The crash loop is the OOM's symptom.
    assert_no_step_says(&steps, "--previous");
}

#[test]
fn an_oom_kill_after_steady_growth_is_answered_by_finding_the_leak() {
    let mut state = round(
        CRASH_POD,
        vec![describe(
            1,
            &pod_description(
                "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n    Restart Count:  3",
            ),
        )],
    );
    // The working set climbed for two days until the kill: a leak, verified.
    let mut growth = crate::detectors::Finding::new(
        Kind::MemoryGrowth.example(),
        crate::detectors::Confidence::High,
        true,
    );
    if let crate::detectors::Fact::MemoryGrowth(m) = &mut growth.fact {
        m.pod = Some("payments-api-7d9f8c6b5-x2k4q".into());
        m.container = Some("api".into());
    }
    state.findings.push(growth);
    let story = story(&state);
    assert_eq!(
        story.headline().map(|c| c.cause.kind()),
        Some(Kind::MemoryGrowth),
        "the leak explains the OOM kill: {:#?}",
        story.chains
    );
    let steps = steps_starting(
        &state,
        true,
        "Find the leak in `api`: its memory grows steadily, so a higher limit (now 512 MiB) only \
         delays the next OOM kill.",
    );
    // Never a higher limit for growth that is a leak.
    assert_no_step_says(&steps, "raise it");
}

#[test]
fn a_crash_explained_by_its_log_is_answered_by_reading_the_whole_previous_log() {
    let state = round(
        CRASH_POD,
        vec![
            crash_looping(1, "Error", 2, 5),
            previous_log(
                2,
                "starting\npanic: runtime error: invalid memory address or nil pointer dereference\ngoroutine 1 [running]:\n",
            ),
        ],
    );
    let steps = steps(&state, true);
    assert_eq!(
        steps[0],
        "Fix what the crash line names, then read the crashed container's whole log to confirm \
         nothing else failed: `kubectl -n default logs payments-api-7d9f8c6b5-x2k4q -c api \
         --previous`."
    );
}

#[test]
fn an_image_pull_failure_is_answered_by_checking_the_image() {
    let state = round(
        CRASH_POD,
        vec![describe(
            1,
            &pod_description(
                "    State:          Waiting\n      Reason:       ImagePullBackOff\nEvents:\n  Warning  Failed  10s  kubelet  Failed to pull image \"registry/payments:2.4.2\": manifest unknown",
            ),
        )],
    );
    steps_starting(
        &state,
        true,
        "Check that the image exists in the registry with that tag",
    );
}

#[test]
fn an_unschedulable_pod_is_answered_by_what_the_scheduler_names() {
    let pending = |message: &str| {
        round(
            POD_NOT_READY,
            vec![describe(
                1,
                &format!(
                    "Name:  payments-api-7d9f8c6b5-x2k4q\nStatus:  Pending\nEvents:\n  Warning  FailedScheduling  12s  default-scheduler  {message}\n"
                ),
            )],
        )
    };
    let taint = pending(
        "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/3 nodes are available.",
    );
    steps_starting(&taint, true, "Give the pod a toleration for the taint");
    let memory = pending("0/3 nodes are available: 3 Insufficient memory.");
    steps_starting(&memory, true, "Make room for the pod: add node capacity");
    let affinity =
        pending("0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.");
    steps_starting(&affinity, true, "Fix the pod's node selector / affinity");
}

/// A crash (exit code 1) whose previous log ends with `last_line`.
fn crashed_with(last_line: &str) -> IncidentState {
    round(
        CRASH_POD,
        vec![
            crash_looping(1, "Error", 1, 5),
            previous_log(
                2,
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
    steps_starting(&state, true, "Renew the certificate the log names");
}

#[test]
fn a_refused_dependency_is_answered_by_checking_that_endpoint() {
    let state = crashed_with(
        "2025-03-04T14:02:01Z FATAL dial tcp 10.20.0.7:5432: connect: connection refused",
    );
    steps_starting(
        &state,
        true,
        "Check that 10.20.0.7:5432 is up and reachable from namespace `default`",
    );
    assert_eq!(
        story(&state).headline().map(|c| c.cause.kind()),
        Some(Kind::Dependency),
        "the refused connection explains the crash line: {:#?}",
        state.findings
    );
}

#[test]
fn full_disk_is_answered_by_freeing_space() {
    let state = crashed_with(
        "2025-03-04T14:02:01Z ERROR write /var/lib/data/wal.log: no space left on device",
    );
    steps_starting(
        &state,
        true,
        "Free space on the volume the application writes to",
    );
}

#[test]
fn a_node_disk_the_kubelet_reports_full_is_answered_by_finding_what_fills_it() {
    let state = round(
        CRASH_POD,
        vec![events(
            1,
            "- message: 'The node was low on resource: ephemeral-storage. Container api was using 9Gi, which exceeds its request of 0.'\n  reason: Evicted\n  type: Warning\n",
        )],
    );
    let steps = steps_starting(&state, true, "Find what fills the node's disk");
    assert_no_step_says(&steps, "PersistentVolumeClaim");
}

#[test]
fn a_failing_probe_is_answered_by_checking_the_probe() {
    let state = round(
        POD_NOT_READY,
        vec![events(
            1,
            "- message: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\n  reason: Unhealthy\n  type: Warning\n",
        )],
    );
    steps_starting(&state, true, "Check the probe's path and port");
}

#[test]
fn a_failing_volume_mount_is_answered_by_creating_what_it_mounts() {
    let state = round(
        CRASH_POD,
        vec![events(
            1,
            "- message: 'MountVolume.SetUp failed for volume \"certs\" : configmap \"tls-bundle\" not found'\n  reason: FailedMount\n  type: Warning\n",
        )],
    );
    steps_starting(&state, true, "Create ConfigMap `tls-bundle` in `default`");
}

#[test]
fn a_metric_step_alone_is_answered_by_what_changed_at_that_time() {
    // The error ratio steps up at 13:58.
    let state = round(PAYMENTS_ALERT, vec![error_ratio_step(1, 8)]);
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
        vec![object(1, "Node", node)],
    );
    steps_starting(
        &state,
        true,
        "Check node `worker-eu-1b-5`: `kubectl describe node worker-eu-1b-5`",
    );
}

#[test]
fn node_pressure_is_answered_by_relieving_that_node() {
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\nstatus:\n  conditions:\n  - message: kubelet has insufficient memory available\n    reason: KubeletHasInsufficientMemory\n    status: \"True\"\n    type: MemoryPressure\n  - status: \"True\"\n    type: Ready\n";
    let state = round(
        "alertname=KubeNodePressure node=worker-1",
        vec![object(1, "Node", node)],
    );
    steps_starting(&state, true, "Relieve node `worker-1`");
}

const PENDING_CLAIM_ALERT: &str =
    "alertname=KubePersistentVolumeClaimPending namespace=analytics persistentvolumeclaim=data-0";

#[test]
fn a_missing_storage_class_is_answered_by_creating_it() {
    let list = "- message: 'storageclass.storage.k8s.io \"fast-ssd\" not found'\n  reason: ProvisioningFailed\n  type: Warning\n";
    let state = round(PENDING_CLAIM_ALERT, vec![events(1, list)]);
    steps_starting(
        &state,
        true,
        "Create StorageClass `fast-ssd` or point the claim at an existing class",
    );
}

#[test]
fn a_pending_claim_alone_is_answered_by_its_events() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data-0\n  namespace: analytics\nspec:\n  storageClassName: standard\nstatus:\n  phase: Pending\n";
    let state = round(
        PENDING_CLAIM_ALERT,
        vec![object(1, "PersistentVolumeClaim", claim)],
    );
    steps_starting(
        &state,
        false,
        "See why the claim does not bind: `kubectl -n analytics describe pvc data-0`",
    );
}

#[test]
fn a_failed_volume_is_answered_by_restoring_what_backs_its_claim() {
    let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pvc-2e9a6c4b\nspec:\n  claimRef:\n    name: data-feature-store-0\n    namespace: analytics\nstatus:\n  phase: Failed\n";
    let state = round(
        "alertname=KubePersistentVolumeErrors persistentvolume=pvc-2e9a6c4b",
        vec![object(1, "PersistentVolume", pv)],
    );
    steps_starting(
        &state,
        true,
        "Restore the volume behind `data-feature-store-0`",
    );
}

#[test]
fn an_exceeded_quota_is_answered_by_raising_that_quota() {
    let list = "- message: 'Error creating: pods \"api-7d9f8c6b5-x2k4q\" is forbidden: exceeded quota: compute-quota, requested: limits.memory=512Mi, used: limits.memory=8Gi, limited: limits.memory=8Gi'\n  reason: FailedCreate\n  type: Warning\n";
    let state = round(
        "alertname=KubeDeploymentReplicasMismatch namespace=shop deployment=api",
        vec![events(1, list)],
    );
    steps_starting(
        &state,
        true,
        "Raise ResourceQuota `compute-quota` in `shop`",
    );
}

#[test]
fn a_maxed_autoscaler_is_answered_by_why_the_load_rose() {
    let hpa = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: api\nspec:\n  maxReplicas: 10\n  scaleTargetRef:\n    kind: Deployment\n    name: api\nstatus:\n  currentReplicas: 10\n";
    let state = round(
        "alertname=KubeHpaMaxedOut namespace=shop horizontalpodautoscaler=api deployment=api",
        vec![object(1, "HorizontalPodAutoscaler", hpa)],
    );
    // At its maximum is what load leads to: no headline, and the step looks for why.
    let steps = steps_starting(&state, false, "Find why the load per pod rose");
    assert!(
        steps[0].ends_with("raise the autoscaler's maxReplicas for `api`."),
        "{steps:#?}"
    );
}

#[test]
fn a_service_without_endpoints_is_answered_by_its_selector() {
    let endpoints = "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: metrics\nsubsets: []\n";
    let state = round(
        "alertname=TargetDown namespace=monitoring service=metrics",
        vec![object(1, "Endpoints", endpoints)],
    );
    steps_starting(&state, true, "Compare Service `metrics`'s selector");
}

#[test]
fn an_error_line_alone_is_answered_by_checking_that_line() {
    let log = "2025-03-04T14:01:00Z INFO GET /pay 200\n2025-03-04T14:01:30Z ERROR ledger rejected batch 42: checksum mismatch\n";
    let state = round(
        PAYMENTS_ALERT,
        vec![log_of(1, "payments-7d9f8c6b5-x2k4q", log)],
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
    steps_starting(
        &state,
        false,
        "Read the failed job's log (`kubectl -n batch logs job/nightly-report`)",
    );
}

#[test]
fn a_container_that_recovered_is_answered_by_confirming_the_alert_resolved() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: payments-api-7d9f8c6b5-x2k4q\nstatus:\n  containerStatuses:\n  - name: api\n    ready: true\n    restartCount: 4\n    state:\n      running:\n        startedAt: \"2025-03-04T13:58:00Z\"\n";
    let state = round(CRASH_POD, vec![describe(1, pod)]);
    let steps = steps_starting(
        &state,
        false,
        "It has recovered for now: check whether the alert has resolved",
    );
    assert_contains(
        &steps[0],
        "`kubectl -n default logs payments-api-7d9f8c6b5-x2k4q -c api --previous`",
    );
}

/// A round with a red herring beside its cause: the neighbour's crash loop in the namespace's
/// warnings, an unrelated deploy, a stale scheduling failure.
fn round_with_herrings() -> IncidentState {
    let neighbour = |reason: &str, message: &str| {
        event(
            "Warning",
            reason,
            "Pod/ledger-sync-6d5f8c7b9-q2w3e",
            "default",
            message,
            "14:00:00",
        )
    };
    let neighbour_events = event_list(&[
        neighbour(
            "BackOff",
            "Back-off restarting failed container sync in pod ledger-sync-6d5f8c7b9-q2w3e_default(abc)",
        ),
        neighbour(
            "Failed",
            "'Failed to pull image \"registry/ledger-sync:9.9.9\": manifest unknown'",
        ),
    ]);
    let billing_history = "\
- kind: ReplicaSet
  metadata:
    annotations:
      deployment.kubernetes.io/revision: \"31\"
    creationTimestamp: \"2025-03-04T13:50:00Z\"
    name: billing-ui-5f6d7c8b9
    ownerReferences:
    - kind: Deployment
      name: billing-ui
";
    round(
        CRASH_POD,
        vec![
            crash_looping(1, "OOMKilled", 137, 12),
            ev(
                2,
                Capability::Events,
                json!({"namespace": "default"}),
                &neighbour_events,
            ),
            history(3, billing_history),
        ],
    )
}

#[test]
fn no_next_step_names_an_object_outside_the_chain() {
    let state = round_with_herrings();
    let story = story(&state);
    let chain = story.headline().expect("the OOM kill heads");
    assert_eq!(chain.cause.kind(), Kind::OomKilled);
    let steps = next_steps(&state, &story);
    // Every object the round saw outside the chain (the neighbour, the other deploy).
    let outside: Vec<String> = story
        .rest
        .iter()
        .filter_map(|f| f.resource())
        .filter(|name| {
            !chain
                .members()
                .iter()
                .any(|m| m.resource().as_deref() == Some(name.as_str()))
                && !CRASH_POD.contains(name.as_str())
        })
        .collect();
    assert!(
        !outside.is_empty(),
        "the round has herrings: {:#?}",
        story.rest
    );
    for step in &steps {
        for name in &outside {
            assert!(
                !step.contains(name.as_str()),
                "step names `{name}`, outside the chain: {step}"
            );
        }
    }
    assert_no_step_says(&steps, "rollout undo");
}

#[test]
fn a_pod_waiting_for_a_lost_node_is_never_answered_with_a_toleration() {
    let pending = "Name:  payments-api-7d9f8c6b5-x2k4q\nStatus:  Pending\nEvents:\n  Warning  FailedScheduling  12s  default-scheduler  0/4 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 3 node(s) didn't match Pod's node affinity/selector.\n";
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-a10-pool-7d2k\nspec:\n  taints:\n  - effect: NoSchedule\n    key: node.kubernetes.io/unreachable\nstatus:\n  conditions:\n  - message: Kubelet stopped posting node status.\n    reason: NodeStatusUnknown\n    status: Unknown\n    type: Ready\n";
    let without_node = round(POD_NOT_READY, vec![describe(1, pending)]);
    steps_starting(
        &without_node,
        false,
        "Bring back the node the pod waits for",
    );
    let with_node = round(
        POD_NOT_READY,
        vec![describe(1, pending), object(2, "Node", node)],
    );
    let steps = steps_starting(&with_node, true, "Check node `gpu-a10-pool-7d2k`");
    for steps in [steps, next_steps(&without_node, &story(&without_node))] {
        assert_no_step_says(&steps, "toleration for the taint");
    }
}

#[test]
fn a_drained_jobs_failure_is_answered_by_protecting_it_not_by_reading_its_teardown() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ledger-reconcile-29087415-q8k2d\n  namespace: finance\nspec:\n  nodeName: worker-eu-1a-4\nstatus:\n  conditions:\n  - lastTransitionTime: \"2025-03-04T13:53:00Z\"\n    message: 'Eviction API: evicting'\n    reason: EvictionByEvictionAPI\n    status: \"True\"\n    type: DisruptionTarget\n  containerStatuses:\n  - name: reconcile\n    ready: false\n    restartCount: 0\n    state:\n      terminated:\n        exitCode: 143\n        reason: Error\n  phase: Failed\n";
    let log = "2025-01-01T00:13:58.401Z INFO received SIGTERM, stopping\n2025-01-01T00:13:58.415Z ERROR reconcile failed: context canceled\n";
    let args = json!({"name": "ledger-reconcile-29087415-q8k2d"});
    let state = round(
        "alertname=KubeJobFailed namespace=finance job_name=ledger-reconcile-29087415",
        vec![
            ev(1, Capability::PodDescribe, args.clone(), pod),
            ev(2, Capability::PodLogsCurrent, args, log),
        ],
    );
    let story = story(&state);
    assert_eq!(
        story.headline().map(|c| c.cause.kind()),
        Some(Kind::Disrupted),
        "{:#?}",
        state.findings
    );
    let steps = next_steps(&state, &story);
    assert!(
        steps[0].starts_with("Nothing in the pod failed: it was evicted from `worker-eu-1a-4`"),
        "{steps:#?}"
    );
    assert_no_step_says(&steps, "Fix what the crash line");
}
