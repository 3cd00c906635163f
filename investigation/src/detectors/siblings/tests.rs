//! What only the failing pods of a workload share: a node (a lead to read), a zone or node
//! generation, a revision; nothing when they are spread like the healthy ones, and with no
//! healthy sibling only a node the workload's other pods do not run on.

use serde_json::json;

use super::*;
use crate::detectors::testing::{assert_contains, ctx, detect, ev, find, has, quotes};
use crate::detectors::{DetectionContext, Kind, Role};

/// How a pod of Deployment `api` is doing.
#[derive(Clone, Copy)]
enum State {
    Healthy,
    CrashLooping,
    NotReady,
    /// Ready again after a restart: neither failing nor a healthy baseline.
    Restarted,
}

/// A pod of Deployment `api` as kubernetes-mcp-server lists it: template hash `hash`, on `node`.
fn pod(suffix: &str, hash: &str, node: &str, state: State) -> String {
    let (ready, restarts, container_state) = match state {
        State::Healthy => (
            "true",
            0,
            "running:\n          startedAt: 2025-03-04T10:00:00Z",
        ),
        State::CrashLooping => ("false", 7, "waiting:\n          reason: CrashLoopBackOff"),
        State::NotReady => (
            "false",
            0,
            "running:\n          startedAt: 2025-03-04T13:30:00Z",
        ),
        State::Restarted => (
            "true",
            1,
            "running:\n          startedAt: 2025-03-04T12:00:00Z",
        ),
    };
    let condition = if ready == "true" { "'True'" } else { "'False'" };
    format!(
        "\
- apiVersion: v1
  kind: Pod
  metadata:
    labels:
      app: api
      pod-template-hash: {hash}
    name: api-{hash}-{suffix}
    namespace: shop
    ownerReferences:
    - apiVersion: apps/v1
      controller: true
      kind: ReplicaSet
      name: api-{hash}
  spec:
    containers:
    - image: registry.example.com/shop/api:2.1.0
      name: api
    nodeName: {node}
  status:
    conditions:
    - status: {condition}
      type: Ready
    containerStatuses:
    - name: api
      ready: {ready}
      restartCount: {restarts}
      state:
        {container_state}
    phase: Running
"
    )
}

fn pod_list(pods: &[String]) -> Evidence {
    ev(
        1,
        Capability::PodList,
        json!({"namespace": "shop", "labelSelector": "app=api"}),
        &pods.concat(),
    )
}

const HASH: &str = "7d9f8c6b5";

fn shared_of(finding: &Finding) -> &SharedByFailing {
    let crate::detectors::Fact::SharedByFailing(shared) = &finding.fact else {
        panic!("{finding:#?}");
    };
    shared
}

#[test]
fn failing_pods_on_one_node_while_the_healthy_run_elsewhere_point_at_the_node() {
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        pod("q9z7w", HASH, "worker-3", State::NotReady),
        pod("b4n6c", HASH, "worker-1", State::Healthy),
        pod("m2k8d", HASH, "worker-1", State::Healthy),
        pod("t5w2x", HASH, "worker-2", State::Healthy),
        pod("v7p3s", HASH, "worker-2", State::Healthy),
    ]);
    let findings = detect(&[list], &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    assert_eq!(
        shared.title(),
        "3 failing pods of `api` all run on node `worker-3`; the 4 healthy pods run elsewhere"
    );
    assert_contains(
        &shared.detail(),
        "Failing: `api-7d9f8c6b5-x2k4q` (CrashLoopBackOff), `api-7d9f8c6b5-h8r2m` \
         (CrashLoopBackOff), `api-7d9f8c6b5-q9z7w` (not ready); all run on node `worker-3`.",
    );
    // Three failing pods on one node, four healthy ones of the same revision elsewhere: the
    // failure is located there, a cause.
    assert_eq!(shared.role(), Role::Cause);
    assert!(shared.verified);
    assert_contains(
        &shared.detail(),
        "the failure is the place's, not the code's",
    );
    assert_eq!(shared.confidence, Confidence::Medium);
    assert_eq!(shared.resource().as_deref(), Some("api"));
    // The node they share, and their logs beside a healthy sibling's.
    assert_eq!(
        shared.fact.leads(),
        [
            Lead::Node {
                name: "worker-3".into()
            },
            Lead::CompareLogs {
                failing: vec!["api-7d9f8c6b5-x2k4q".into(), "api-7d9f8c6b5-h8r2m".into()],
                healthy: "api-7d9f8c6b5-b4n6c".into(),
            }
        ]
    );
    assert_eq!(
        quotes(shared),
        [
            "nodeName: worker-3",
            "reason: CrashLoopBackOff",
            "nodeName: worker-1"
        ]
    );
    // The same revision everywhere is not what sets them apart.
    assert_eq!(shared_of(shared).shared.len(), 1);
}

#[test]
fn failing_pods_spread_like_the_healthy_ones_share_nothing() {
    let spread = pod_list(&[
        pod("x2k4q", HASH, "worker-1", State::CrashLooping),
        pod("h8r2m", HASH, "worker-2", State::CrashLooping),
        pod("b4n6c", HASH, "worker-1", State::Healthy),
        pod("t5w2x", HASH, "worker-2", State::Healthy),
    ]);
    let findings = detect(&[spread], &ctx());
    assert!(!has(&findings, Kind::SharedByFailing), "{findings:#?}");

    // On one node, but so is a healthy sibling: the node is not what sets them apart.
    let beside_a_healthy_one = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        pod("b4n6c", HASH, "worker-3", State::Healthy),
        pod("t5w2x", HASH, "worker-2", State::Healthy),
    ]);
    let findings = detect(&[beside_a_healthy_one], &ctx());
    assert!(!has(&findings, Kind::SharedByFailing), "{findings:#?}");

    // One failing pod shares nothing with another.
    let one = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("t5w2x", HASH, "worker-2", State::Healthy),
    ]);
    let findings = detect(&[one], &ctx());
    assert!(!has(&findings, Kind::SharedByFailing), "{findings:#?}");
}

#[test]
fn failing_pods_of_the_new_revision_beside_healthy_pods_of_the_old() {
    let list = pod_list(&[
        pod("k2m8q", "6f9b8c7d54", "worker-eu-1a-7", State::NotReady),
        pod("w7xzn", "6f9b8c7d54", "worker-eu-1c-2", State::NotReady),
        pod("4hpls", "58c6d9f7b4", "worker-eu-1a-3", State::Healthy),
        pod("bq2rd", "58c6d9f7b4", "worker-eu-1b-4", State::Healthy),
        pod("t6wvx", "58c6d9f7b4", "worker-eu-1c-5", State::Healthy),
    ]);
    let findings = detect(&[list], &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    assert_eq!(
        shared.title(),
        "2 failing pods of `api` all run revision `6f9b8c7d54` (pod-template-hash); the 3 \
         healthy pods run `58c6d9f7b4`"
    );
    assert!(shared.fact.leads().is_empty());
    assert_eq!(
        quotes(shared),
        [
            "pod-template-hash: 6f9b8c7d54",
            "pod-template-hash: 58c6d9f7b4"
        ]
    );
    // What a rollout already shows: after the round's other observations.
    assert_eq!(shared.confidence, Confidence::Low);
}

/// Node `name` in zone `zone` as `resources_list` lists it.
fn node(name: &str, zone: &str) -> String {
    format!(
        "\
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: {name}
      topology.kubernetes.io/zone: {zone}
    name: {name}
  status:
    nodeInfo:
      osImage: Bottlerocket OS 1.20.3
"
    )
}

#[test]
fn failing_pods_in_one_zone_while_the_healthy_run_in_others() {
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-a1", State::NotReady),
        pod("h8r2m", HASH, "worker-a2", State::NotReady),
        pod("b4n6c", HASH, "worker-b1", State::Healthy),
        pod("t5w2x", HASH, "worker-c1", State::Healthy),
    ]);
    let nodes = ev(
        2,
        Capability::ObjectList,
        json!({"kind": "Node"}),
        &[
            node("worker-a1", "eu-west-1a"),
            node("worker-a2", "eu-west-1a"),
            node("worker-b1", "eu-west-1b"),
            node("worker-c1", "eu-west-1c"),
        ]
        .concat(),
    );
    let findings = detect(&[list, nodes], &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    assert_eq!(
        shared.title(),
        "2 failing pods of `api` all run on nodes with `topology.kubernetes.io/zone=eu-west-1a`; \
         the 2 healthy pods run on `topology.kubernetes.io/zone=eu-west-1b`, \
         `topology.kubernetes.io/zone=eu-west-1c`"
    );
    // The OS image every node runs is no difference.
    assert_eq!(shared_of(shared).shared.len(), 1);
    assert_eq!(
        quotes(shared),
        [
            "topology.kubernetes.io/zone: eu-west-1a",
            "topology.kubernetes.io/zone: eu-west-1b"
        ]
    );
    assert!(shared.fact.leads().is_empty());
}

#[test]
fn with_no_healthy_sibling_only_a_node_the_others_do_not_run_on_is_named() {
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        pod("b4n6c", HASH, "worker-1", State::Restarted),
    ]);
    let findings = detect(&[list], &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    assert_eq!(
        shared.title(),
        "2 failing pods of `api` all run on node `worker-3`; its 1 other pod runs on other nodes"
    );

    // Every pod of the workload on that node: nothing to compare with.
    let all_there = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        pod("b4n6c", HASH, "worker-3", State::Restarted),
    ]);
    let findings = detect(&[all_there], &ctx());
    assert!(!has(&findings, Kind::SharedByFailing), "{findings:#?}");
}

#[test]
fn a_pod_the_excerpt_cut_is_neither_failing_nor_a_baseline() {
    // The healthy pod on worker-1 was elided: no baseline is left, and the workload is not
    // seen to span another node.
    let healthy = pod("b4n6c", HASH, "worker-1", State::Healthy);
    let lines: Vec<&str> = healthy.lines().collect();
    let cut = format!(
        "{}\n… [18 lines omitted] …\n{}\n",
        lines[..4].join("\n"),
        lines[22..].join("\n")
    );
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        cut,
    ]);
    let findings = detect(&[list], &ctx());
    assert!(!has(&findings, Kind::SharedByFailing), "{findings:#?}");
}

#[test]
fn an_oom_kill_fails_a_pod_only_until_it_is_ready_again() {
    let oom_killed = |ready: bool| PodInfo {
        name: "api-7d9f8c6b5-x2k4q".into(),
        status: "Running".into(),
        ready: Some(ready),
        restarts: 1,
        containers: vec![kube::ContainerInfo {
            name: "api".into(),
            ready,
            restarts: 1,
            last_terminated: Some(("OOMKilled".into(), 137)),
            ..kube::ContainerInfo::default()
        }],
        ..PodInfo::default()
    };
    assert_eq!(failing(&oom_killed(false)).as_deref(), Some("OOMKilled"));
    // Ready again since (an OOM kill days ago): history, not a failing pod.
    assert_eq!(failing(&oom_killed(true)), None);
    // Ready again after an OOM kill an hour ago (a leak kills it every few hours): failing.
    let killed_at = |finished: &str| {
        json!({"status": {"containerStatuses": [{"name": "api", "lastState": {"terminated": {
            "reason": "OOMKilled", "exitCode": 137, "finishedAt": finished}}}]}})
    };
    let now = crate::detectors::testing::utc("2025-03-04T14:02:00Z");
    let recent = killed_at("2025-03-04T13:01:00Z");
    assert_eq!(
        failing_now(&oom_killed(true), Some(&recent), now).as_deref(),
        Some("OOMKilled")
    );
    let days_ago = killed_at("2025-03-01T09:00:00Z");
    assert_eq!(failing_now(&oom_killed(true), Some(&days_ago), now), None);
}

#[test]
fn two_failing_pods_on_one_node_are_only_a_lead() {
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        pod("b4n6c", HASH, "worker-1", State::Healthy),
        pod("t5w2x", HASH, "worker-2", State::Healthy),
    ]);
    let findings = detect(&[list], &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    // Two pods may share a node by chance: where to look, not what broke.
    assert_eq!(shared.role(), Role::Context);
    assert!(!shared.verified);
    assert!(!shared_of(shared).located);
    assert_eq!(
        shared.fact.leads(),
        [Lead::Node {
            name: "worker-3".into()
        }]
    );
}

/// A pod of Job `backfill` on `node`: `Failed`, `Succeeded` or running since `started`.
fn job_pod(suffix: &str, node: &str, phase: &str, created: &str) -> String {
    let (ready, state) = match phase {
        "Failed" => (
            "false",
            "terminated:\n          exitCode: 1\n          reason: Error",
        ),
        "Succeeded" => (
            "false",
            "terminated:\n          exitCode: 0\n          reason: Completed",
        ),
        _ => (
            "true",
            "running:\n          startedAt: 2025-03-04T13:00:00Z",
        ),
    };
    format!(
        "\
- apiVersion: v1
  kind: Pod
  metadata:
    creationTimestamp: {created}
    labels:
      job-name: backfill
    name: backfill-{suffix}
    namespace: ml
  spec:
    containers:
    - image: registry.example.com/ml/backfill:3.2.0
      name: backfill
    nodeName: {node}
  status:
    containerStatuses:
    - name: backfill
      ready: {ready}
      restartCount: 0
      state:
        {state}
    phase: {phase}
"
    )
}

#[test]
fn a_jobs_failed_pods_on_one_node_locate_the_failure_and_explain_the_crash() {
    let alert_start = crate::detectors::testing::utc("2025-03-04T14:00:00Z");
    let ctx = DetectionContext {
        alert_start: Some(alert_start),
        ..ctx()
    };
    let list = ev(
        1,
        Capability::PodList,
        json!({"namespace": "ml", "labelSelector": "job-name=backfill"}),
        &[
            job_pod("j8vxc", "gpu-3", "Failed", "2025-03-04T11:40:00Z"),
            job_pod("m5rqd", "gpu-3", "Failed", "2025-03-04T12:20:00Z"),
            job_pod("p2zlk", "gpu-3", "Failed", "2025-03-04T13:10:00Z"),
            // The retry placed a minute ago on the same node has shown nothing yet.
            job_pod("y2mjt", "gpu-3", "Running", "2025-03-04T13:59:00Z"),
            job_pod("v6n2q", "gpu-1", "Running", "2025-03-04T13:00:00Z"),
            job_pod("4kq8m", "gpu-1", "Succeeded", "2025-03-04T11:40:00Z"),
            job_pod("7hz2p", "gpu-2", "Succeeded", "2025-03-04T11:40:00Z"),
        ]
        .concat(),
    );
    let log = ev(
        2,
        Capability::PodLogsCurrent,
        json!({"namespace": "ml", "name": "backfill-p2zlk"}),
        "INFO loading model\nRuntimeError: Unexpected error from cudaGetDeviceCount(). Error 999: unknown error\n",
    );
    let findings = detect(&[list, log], &ctx);
    let shared = find(&findings, Kind::SharedByFailing);
    assert_eq!(
        shared.title(),
        "3 failing pods of `backfill` all run on node `gpu-3`; the 3 healthy pods run elsewhere"
    );
    assert!(shared.is_verified_cause());
    for effect in findings
        .iter()
        .filter(|f| f.resource().as_deref() == Some("backfill-p2zlk"))
    {
        assert!(shared.explains(effect), "{effect:#?}");
    }
    // A different revision sets pods apart by their code: never located.
    let rolled = pod_list(&[
        pod("x2k4q", "6f9b8c7d54", "worker-3", State::CrashLooping),
        pod("h8r2m", "6f9b8c7d54", "worker-3", State::CrashLooping),
        pod("q9z7w", "6f9b8c7d54", "worker-3", State::CrashLooping),
        pod("b4n6c", HASH, "worker-1", State::Healthy),
        pod("t5w2x", HASH, "worker-2", State::Healthy),
    ]);
    let findings = detect(&[rolled], &crate::detectors::testing::ctx());
    assert!(!find(&findings, Kind::SharedByFailing).verified);
}

#[test]
fn a_node_read_on_its_own_outweighs_a_list_item_cut_to_its_name() {
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-a1", State::NotReady),
        pod("h8r2m", HASH, "worker-a2", State::NotReady),
        pod("b4n6c", HASH, "worker-b1", State::Healthy),
    ]);
    // A long node list keeps each item's name but not its zone.
    let cut = |name: &str| {
        format!("- apiVersion: v1\n  kind: Node\n  metadata:\n# … [3 omitted]\n    name: {name}\n")
    };
    let listed = ev(
        2,
        Capability::ObjectList,
        json!({"kind": "Node"}),
        &[cut("worker-a1"), cut("worker-a2"), cut("worker-b1")].concat(),
    );
    let read = |n: u32, name: &str, zone: &str| {
        let item = node(name, zone);
        let object: String = item
            .lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l.trim_start_matches("- ")))
            .map(|l| format!("{l}\n"))
            .collect();
        ev(
            n,
            Capability::ObjectGet,
            json!({"kind": "Node", "name": name}),
            &object,
        )
    };
    let findings = detect(
        &[
            list,
            listed,
            read(3, "worker-a1", "eu-west-1a"),
            read(4, "worker-a2", "eu-west-1a"),
            read(5, "worker-b1", "eu-west-1b"),
        ],
        &ctx(),
    );
    let shared = find(&findings, Kind::SharedByFailing);
    assert_contains(&shared.title(), "`topology.kubernetes.io/zone=eu-west-1a`");
}

#[test]
fn settings_the_failing_pods_log_alike_and_the_healthy_log_otherwise_are_named() {
    let list = pod_list(&[
        pod("x2k4q", HASH, "worker-3", State::CrashLooping),
        pod("h8r2m", HASH, "worker-3", State::CrashLooping),
        pod("q9z7w", HASH, "worker-3", State::NotReady),
        pod("b4n6c", HASH, "worker-1", State::Healthy),
        pod("m2k8d", HASH, "worker-2", State::Healthy),
    ]);
    let log = |n: u32, suffix: &str, heap: &str, pages: u32| {
        crate::detectors::testing::log_of(
            n,
            &format!("api-{HASH}-{suffix}"),
            &format!(
                "INFO JvmInfo: maxHeap={heap}, availableProcessors=2, gc=ParallelGC\nINFO rendered pages={pages}\nINFO rendered pages={}\n",
                pages + 1
            ),
        )
    };
    let evidence = [
        list,
        log(2, "x2k4q", "44032 MiB", 3),
        log(3, "h8r2m", "44032 MiB", 2),
        log(4, "b4n6c", "1434 MiB", 3),
    ];
    let findings = detect(&evidence, &ctx());
    let shared = find(&findings, Kind::SharedByFailing);
    assert_eq!(
        shared_of(shared).logs_differ,
        [LogDifference {
            key: "maxHeap".into(),
            failing: "44032 MiB".into(),
            healthy: "1434 MiB".into(),
        }],
        "settings alike everywhere, and values a request logs, are not differences"
    );
    assert_contains(
        &shared.detail(),
        "`maxHeap=44032 MiB` (healthy: `1434 MiB`)",
    );

    // One failing pod's log alone may state a request's value: nothing is named.
    let findings = detect(
        &evidence[..2]
            .iter()
            .chain(&evidence[3..])
            .cloned()
            .collect::<Vec<_>>(),
        &ctx(),
    );
    assert!(
        shared_of(find(&findings, Kind::SharedByFailing))
            .logs_differ
            .is_empty()
    );
}
