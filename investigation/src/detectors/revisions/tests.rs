//! What a rollout changed: the newest revision's pod template against the previous one, field by
//! field, with both revisions named and every value cited from the history verbatim; nothing when
//! only the template hash differs, nor against a revision the excerpt cut.

use super::*;
use crate::detectors::testing::{
    alert_at, all_of, assert_contains, ctx, detect, find, has, history, quotes,
};
use crate::detectors::{DetectionContext, Fact, Kind, Role};
use crate::explain::explain;

/// A ReplicaSet of Deployment `shipment-tracker` as kubernetes-mcp-server lists it (keys
/// sorted, list items at the margin): revision `revision`, created at `created`, template hash
/// `hash`, running `version` with its readiness probe on `path`, and `env` lines (already
/// indented) in its container.
fn replica_set(
    revision: u32,
    created: &str,
    hash: &str,
    version: &str,
    path: &str,
    env: &str,
) -> String {
    format!(
        "\
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    annotations:
      deployment.kubernetes.io/desired-replicas: '4'
      deployment.kubernetes.io/revision: '{revision}'
    creationTimestamp: {created}
    labels:
      app: shipment-tracker
      pod-template-hash: {hash}
    name: shipment-tracker-{hash}
    namespace: fulfilment
    ownerReferences:
    - apiVersion: apps/v1
      controller: true
      kind: Deployment
      name: shipment-tracker
  spec:
    replicas: 2
    template:
      metadata:
        labels:
          app: shipment-tracker
          pod-template-hash: {hash}
      spec:
        containers:
        - env:
{env}          image: registry.example.com/fulfilment/shipment-tracker:{version}
          name: tracker
          readinessProbe:
            httpGet:
              path: {path}
              port: 8080
          resources:
            limits:
              memory: 1536Mi
        serviceAccountName: shipment-tracker
"
    )
}

const ENV: &str = "          - name: JAVA_TOOL_OPTIONS\n            value: -XX:MaxRAMPercentage=75\n          - name: SPRING_PROFILES_ACTIVE\n            value: prod\n";

/// Revision 1 (3.4.2, probe on /manage/health) and revision 2 (3.5.0, probe on
/// /actuator/health/readiness) 17 minutes before the alert.
fn image_and_probe_path() -> String {
    replica_set(
        1,
        "2025-02-16T09:00:00Z",
        "58c6d9f7b4",
        "3.4.2",
        "/manage/health",
        ENV,
    ) + &replica_set(
        2,
        "2025-03-04T13:45:00Z",
        "6f9b8c7d54",
        "3.5.0",
        "/actuator/health/readiness",
        ENV,
    )
}

/// An alert at 14:02 about the Deployment.
fn about_the_deployment() -> DetectionContext {
    DetectionContext {
        default_resource: Some("shipment-tracker".into()),
        ..alert_at("2025-03-04T14:02:00Z")
    }
}

fn the_diff(finding: &Finding) -> &RevisionDiff {
    let Fact::RevisionDiff(diff) = &finding.fact else {
        panic!("{finding:#?}");
    };
    diff
}

#[test]
fn a_new_image_and_probe_path_are_named_with_both_revisions() {
    let evidence = [history(1, &image_and_probe_path())];
    let findings = detect(&evidence, &about_the_deployment());
    let diff = find(&findings, Kind::RevisionDiff);
    assert_eq!(
        diff.title(),
        "Revision 2 of `shipment-tracker` changed from revision 1: image 3.4.2→3.5.0, \
         readinessProbe.httpGet.path /manage/health→/actuator/health/readiness"
    );
    assert_contains(
        &diff.detail(),
        "Revision 2 (`registry.example.com/fulfilment/shipment-tracker:3.5.0`) of \
         `shipment-tracker`, created 2025-03-04 13:45 UTC, differs from revision 1 \
         (`registry.example.com/fulfilment/shipment-tracker:3.4.2`)",
    );
    // Context, never a cause, whatever it shows.
    assert_eq!(diff.role(), Role::Context);
    assert!(!diff.verified);
    assert_eq!(diff.confidence, Confidence::Medium);
    assert_eq!(diff.resource().as_deref(), Some("shipment-tracker"));
    // Both revisions and both values of each change, quoted from their own records.
    assert_eq!(
        quotes(diff),
        [
            "deployment.kubernetes.io/revision: '2'",
            "deployment.kubernetes.io/revision: '1'",
            "image: registry.example.com/fulfilment/shipment-tracker:3.5.0",
            "image: registry.example.com/fulfilment/shipment-tracker:3.4.2",
            "path: /actuator/health/readiness",
            "path: /manage/health",
        ]
    );
    let scene = Scene {
        namespace: "fulfilment".into(),
        pod: None,
        workload: Some("shipment-tracker".into()),
        container: None,
        workload_ref: "deployment/shipment-tracker".into(),
        when: "around 14:02 UTC".into(),
        headline: false,
    };
    assert_contains(
        &diff.step(&scene),
        "`kubectl -n fulfilment rollout history deployment/shipment-tracker --revision=2`",
    );
}

#[test]
fn only_a_new_template_hash_is_no_diff() {
    let same = replica_set(
        1,
        "2025-02-16T09:00:00Z",
        "58c6d9f7b4",
        "3.4.2",
        "/manage/health",
        ENV,
    ) + &replica_set(
        2,
        "2025-03-04T13:45:00Z",
        "6f9b8c7d54",
        "3.4.2",
        "/manage/health",
        ENV,
    );
    let findings = detect(&[history(1, &same)], &about_the_deployment());
    assert!(!has(&findings, Kind::RevisionDiff), "{findings:#?}");

    // Env vars listed in another order are the same env.
    let reordered = "          - name: SPRING_PROFILES_ACTIVE\n            value: prod\n          - name: JAVA_TOOL_OPTIONS\n            value: -XX:MaxRAMPercentage=75\n";
    let shuffled = replica_set(
        1,
        "2025-02-16T09:00:00Z",
        "58c6d9f7b4",
        "3.4.2",
        "/manage/health",
        ENV,
    ) + &replica_set(
        2,
        "2025-03-04T13:45:00Z",
        "6f9b8c7d54",
        "3.4.2",
        "/manage/health",
        reordered,
    );
    let findings = detect(&[history(1, &shuffled)], &about_the_deployment());
    assert!(!has(&findings, Kind::RevisionDiff), "{findings:#?}");
}

#[test]
fn env_values_and_references_are_compared_by_name() {
    let changed = "          - name: JAVA_TOOL_OPTIONS\n            value: -XX:MaxRAMPercentage=50\n          - name: DB_PASSWORD\n            valueFrom:\n              secretKeyRef:\n                key: password\n                name: tracker-db\n";
    let text = replica_set(
        1,
        "2025-02-16T09:00:00Z",
        "58c6d9f7b4",
        "3.4.2",
        "/manage/health",
        ENV,
    ) + &replica_set(
        2,
        "2025-03-04T13:45:00Z",
        "6f9b8c7d54",
        "3.4.2",
        "/manage/health",
        changed,
    );
    let findings = detect(&[history(1, &text)], &about_the_deployment());
    let diff = find(&findings, Kind::RevisionDiff);
    let described: Vec<String> = the_diff(diff)
        .changes
        .iter()
        .map(FieldChange::describe)
        .collect();
    assert_eq!(
        described,
        [
            "env.JAVA_TOOL_OPTIONS -XX:MaxRAMPercentage=75→-XX:MaxRAMPercentage=50",
            "env.DB_PASSWORD.valueFrom.secretKeyRef.key added: password",
            "env.DB_PASSWORD.valueFrom.secretKeyRef.name added: tracker-db",
            "env.SPRING_PROFILES_ACTIVE removed (was prod)",
        ]
    );
    assert_contains(&diff.title(), "and 1 more");
}

#[test]
fn a_revision_the_excerpt_cut_is_not_compared() {
    // The previous revision's template was elided: half a template is no baseline.
    let old = replica_set(
        1,
        "2025-02-16T09:00:00Z",
        "58c6d9f7b4",
        "3.4.2",
        "/manage/health",
        ENV,
    );
    let cut: Vec<&str> = old.lines().collect();
    let elided = format!(
        "{}\n… [12 lines omitted] …\n{}\n",
        cut[..20].join("\n"),
        cut[32..].join("\n")
    );
    let text = elided
        + &replica_set(
            2,
            "2025-03-04T13:45:00Z",
            "6f9b8c7d54",
            "3.5.0",
            "/actuator/health/readiness",
            ENV,
        );
    let findings = detect(&[history(1, &text)], &about_the_deployment());
    assert!(!has(&findings, Kind::RevisionDiff), "{findings:#?}");
}

#[test]
fn the_diff_is_shown_beside_the_deploy_and_explains_nothing() {
    // The deploy of revision 2 is inside the window of an alert at 14:02: the deploy stays the
    // suspect, the diff says what it changed.
    let evidence = [history(1, &image_and_probe_path())];
    let findings = detect(&evidence, &alert_at("2025-03-04T14:02:00Z"));
    let rollout = find(&findings, Kind::Rollout);
    let diff = find(&findings, Kind::RevisionDiff);
    assert_eq!(rollout.resource(), diff.resource());
    assert!(findings.iter().all(|f| !diff.explains(f)));
    let story = explain(&findings, crate::detectors::Symptom::Unavailable);
    assert!(story.chains.is_empty());
    assert_eq!(story.lead.map(Finding::kind), Some(Kind::Rollout));
}

#[test]
fn a_history_with_no_deploy_in_the_window_is_no_diff() {
    // The same two revisions under an alert four hours later, or with no alert start.
    let evidence = [history(1, &image_and_probe_path())];
    assert!(detect(&evidence, &alert_at("2025-03-04T18:00:00Z")).is_empty());
    assert!(detect(&evidence, &ctx()).is_empty());

    // A neighbour's deploy in the window is diffed beside that deploy, not the alert's.
    let neighbour = image_and_probe_path().replace("shipment-tracker", "label-printer");
    let older = image_and_probe_path().replace("2025-03-04T13:45:00Z", "2025-03-02T10:00:00Z");
    let findings = detect(
        &[history(1, &(older + &neighbour))],
        &about_the_deployment(),
    );
    let diffs = all_of(&findings, Kind::RevisionDiff);
    assert_eq!(diffs.len(), 1, "{findings:#?}");
    assert_eq!(diffs[0].resource().as_deref(), Some("label-printer"));
    assert_eq!(
        find(&findings, Kind::Rollout).resource().as_deref(),
        Some("label-printer")
    );
}

#[test]
fn a_json_list_is_read_and_quoted_from_its_own_lines() {
    let yaml = image_and_probe_path();
    let objects: Vec<Value> = records(&yaml).into_iter().map(|(_, o)| o).collect();
    assert_eq!(objects.len(), 2);
    let json = serde_json::to_string_pretty(
        &serde_json::json!({"kind": "ReplicaSetList", "items": objects}),
    )
    .expect("json");
    let findings = detect(&[history(1, &json)], &about_the_deployment());
    let diff = find(&findings, Kind::RevisionDiff);
    assert_contains(&diff.title(), "image 3.4.2→3.5.0");
    assert!(
        quotes(diff).contains(&"\"deployment.kubernetes.io/revision\": \"2\""),
        "{:#?}",
        diff.refs
    );
}

/// Pod `shipment-tracker-6f9b8c7d54-k2m8q` of revision 2 as `pods_get` returns it, ready or not.
fn new_pod(ready: bool) -> String {
    format!(
        "\
apiVersion: v1
kind: Pod
metadata:
  labels:
    app: shipment-tracker
    pod-template-hash: 6f9b8c7d54
  name: shipment-tracker-6f9b8c7d54-k2m8q
  namespace: fulfilment
spec:
  containers:
  - image: registry.example.com/fulfilment/shipment-tracker:3.5.0
    name: tracker
  nodeName: worker-eu-1a-7
status:
  conditions:
  - status: '{}'
    type: Ready
  containerStatuses:
  - name: tracker
    ready: {ready}
    restartCount: 0
    state:
      running:
        startedAt: 2025-03-04T13:00:30Z
  phase: Running
",
        if ready { "True" } else { "False" }
    )
}

#[test]
fn a_rollout_stuck_since_before_the_window_is_diffed_when_its_pods_fail() {
    // Revision 2 rolled out an hour before the alert: no deploy in the window, but its pod
    // never became ready, so what it changed is what to read.
    let text = image_and_probe_path().replace("2025-03-04T13:45:00Z", "2025-03-04T13:00:00Z");
    let stuck = [
        history(1, &text),
        crate::detectors::testing::describe(2, &new_pod(false)),
    ];
    let findings = detect(&stuck, &about_the_deployment());
    assert!(!has(&findings, Kind::Rollout), "{findings:#?}");
    assert_contains(
        &find(&findings, Kind::RevisionDiff).title(),
        "readinessProbe.httpGet.path /manage/health→/actuator/health/readiness",
    );

    let fine = [
        history(1, &text),
        crate::detectors::testing::describe(2, &new_pod(true)),
    ];
    let findings = detect(&fine, &about_the_deployment());
    assert!(!has(&findings, Kind::RevisionDiff), "{findings:#?}");
}

#[test]
fn a_cause_on_a_pod_of_a_revision_deployed_before_the_window_names_what_it_changed() {
    // Revision 2 (a smaller CPU limit) rolled out an hour before the alert; its pod has been
    // throttled since. No deploy in the window, no pod failing: the throttling is the cause,
    // and the diff says where the limit came from.
    let text = image_and_probe_path()
        .replace("2025-03-04T13:45:00Z", "2025-03-04T13:00:00Z")
        .replacen("memory: 1536Mi", "cpu: '2'", 1)
        .replacen("memory: 1536Mi", "cpu: 500m", 1);
    let pod = "shipment-tracker-6f9b8c7d54-k2m8q";
    let series =
        |name: &str| serde_json::json!({"__name__": name, "pod": pod, "container": "tracker"});
    let counters = crate::detectors::testing::matrix(
        &[
            (
                series("container_cpu_cfs_throttled_periods_total"),
                crate::detectors::testing::samples(24, 300.0, |i, _| 80.0 * i as f64),
            ),
            (
                series("container_cpu_cfs_periods_total"),
                crate::detectors::testing::samples(24, 300.0, |i, _| 100.0 * i as f64),
            ),
        ],
        true,
        crate::detectors::testing::Style::Compact,
    );
    let description = format!(
        "Name:             {pod}\nNamespace:        fulfilment\nContainers:\n  tracker:\n    Limits:\n      cpu:     500m\n"
    );
    let throttled = [
        history(1, &text),
        crate::detectors::testing::metric(2, "", &counters),
        crate::detectors::testing::ev(
            3,
            Capability::PodDescribe,
            serde_json::json!({"name": pod, "namespace": "fulfilment"}),
            &description,
        ),
    ];
    let findings = detect(&throttled, &about_the_deployment());
    assert!(
        find(&findings, Kind::CpuThrottling).is_verified_cause(),
        "{findings:#?}"
    );
    assert_contains(
        &find(&findings, Kind::RevisionDiff).title(),
        "resources.limits.cpu 2→500m",
    );

    // The same history with nothing found on revision 2's pods is no news.
    let findings = detect(&throttled[..1], &about_the_deployment());
    assert!(!has(&findings, Kind::RevisionDiff), "{findings:#?}");
}

/// A StatefulSet's ControllerRevision as `resources_list` returns it: revision `revision` named
/// `zookeeper-{hash}`, its container running as `uid`.
fn controller_revision(revision: u32, hash: &str, uid: u32) -> String {
    format!(
        "\
- apiVersion: apps/v1
  data:
    spec:
      template:
        $patch: replace
        spec:
          containers:
          - image: docker.io/bitnami/zookeeper:3.9.2
            name: zookeeper
            securityContext:
              runAsUser: {uid}
  kind: ControllerRevision
  metadata:
    creationTimestamp: 2025-03-04T13:40:00Z
    name: zookeeper-{hash}
    namespace: streaming
    ownerReferences:
    - apiVersion: apps/v1
      controller: true
      kind: StatefulSet
      name: zookeeper
  revision: {revision}
"
    )
}

#[test]
fn a_statefulsets_controller_revisions_are_diffed_when_the_new_ones_pod_fails() {
    let revisions =
        controller_revision(1, "7b9c6d5f48", 1001) + &controller_revision(2, "5d8f9c7b64", 10001);
    let crashing = "\
apiVersion: v1
kind: Pod
metadata:
  labels:
    controller-revision-hash: zookeeper-5d8f9c7b64
  name: zookeeper-2
  namespace: streaming
spec:
  containers:
  - name: zookeeper
status:
  containerStatuses:
  - name: zookeeper
    ready: false
    restartCount: 9
    state:
      waiting:
        reason: CrashLoopBackOff
  phase: Running
";
    let evidence = [
        crate::detectors::testing::ev(
            1,
            Capability::ObjectList,
            serde_json::json!({"kind": "ControllerRevision", "namespace": "streaming"}),
            &revisions,
        ),
        crate::detectors::testing::describe(2, crashing),
    ];
    let findings = detect(&evidence, &about_the_deployment());
    let diff = find(&findings, Kind::RevisionDiff);
    assert_eq!(
        diff.title(),
        "Revision 2 of `zookeeper` changed from revision 1: securityContext.runAsUser 1001→10001"
    );
    assert!(quotes(diff).contains(&"revision: 2"), "{:#?}", diff.refs);
    let scene = Scene {
        namespace: "streaming".into(),
        pod: None,
        workload: Some("zookeeper".into()),
        container: None,
        workload_ref: "statefulset/zookeeper".into(),
        when: "around 14:02 UTC".into(),
        headline: false,
    };
    assert_contains(
        &diff.step(&scene),
        "rollout history statefulset/zookeeper --revision=2",
    );

    // The same history with its new pod running fine is no news.
    let findings = detect(&evidence[..1], &about_the_deployment());
    assert!(!has(&findings, Kind::RevisionDiff), "{findings:#?}");
}
