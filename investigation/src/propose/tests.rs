//! Each rule from the evidence its detector reads: a deploy the errors stepped after is rolled
//! back to the revision before it, a suspended CronJob resumed, a node whose kernel faults (or
//! that only the failing pods share) cordoned — and nothing for an unverified deploy, a
//! StatefulSet's revision, a diff of another Deployment, a revision no longer running, a deploy
//! beside another headline, a lost or pressured node, an OOM kill, a resolved or recovered
//! alert, a heartbeat, or a call that did not say its namespace.

use serde_json::json;

use super::*;
use crate::detectors::testing::{describe, error_ratio, ev, fetched_at, list_item, object};
use crate::detectors::{DetectionContext, run_detectors};
use crate::evidence::Capability;
use crate::report::Report;
use crate::state::{AlertInput, IncidentState};
use crate::summarise::{build_report, story};
use firstline_model::ThreadContext;

const START: &str = "startsAt=2025-03-04T14:02:00Z";
/// When the round's tools answered.
const FETCHED: &str = "2025-03-04T14:40:00Z";

const PAYMENTS_ALERT: &str =
    "alertname=PaymentsErrorRate namespace=payments service=payments deployment=payments-api";

/// A round over `evidence` (fetched at 14:40) for an alert with these `key=value` labels,
/// started 14:02.
fn round(labels: &str, evidence: Vec<Evidence>) -> IncidentState {
    let mut state = IncidentState::new(
        AlertInput::parse(format!("{labels} {START}"), None),
        ThreadContext::default(),
    );
    let evidence = fetched_at(FETCHED, evidence);
    let mut ctx = DetectionContext::for_alert(&state.alert.target);
    ctx.alert_start = state.alert.anchor();
    state.findings = run_detectors(&evidence, &ctx);
    state.evidence = evidence;
    state
}

/// The report of `state`, checking that its headline cause is of `kind` (`None`: no headline).
#[track_caller]
fn report(state: &IncidentState, kind: Option<Kind>) -> Report {
    assert_eq!(
        story(state).headline().map(|c| c.cause.kind()),
        kind,
        "{:#?}",
        state.findings
    );
    build_report(state)
}

/// The finding of `kind`.
#[track_caller]
fn finding(state: &mut IncidentState, kind: Kind) -> &mut Finding {
    let found = format!("{:#?}", state.findings);
    state
        .findings
        .iter_mut()
        .find(|f| f.kind() == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {found}"))
}

/// A ReplicaSet of Deployment `deployment` as kubernetes-mcp-server lists it: revision
/// `revision`, created at `created`, running `image` with `log_level`.
fn replica_set(
    deployment: &str,
    revision: u32,
    created: &str,
    hash: &str,
    image: &str,
    log_level: &str,
) -> String {
    format!(
        "\
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    annotations:
      deployment.kubernetes.io/revision: '{revision}'
    creationTimestamp: {created}
    labels:
      app: {deployment}
      pod-template-hash: {hash}
    name: {deployment}-{hash}
    ownerReferences:
    - apiVersion: apps/v1
      controller: true
      kind: Deployment
      name: {deployment}
  spec:
    template:
      metadata:
        labels:
          pod-template-hash: {hash}
      spec:
        containers:
        - env:
          - name: LOG_LEVEL
            value: {log_level}
          image: {image}
          name: api
"
    )
}

/// `records` as the rollout history of namespace `namespace` (its ReplicaSets, listed).
fn history_in(n: u32, namespace: &str, records: &[String]) -> Evidence {
    ev(
        n,
        Capability::DeployHistory,
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": namespace}),
        &records.concat(),
    )
}

/// Revision 6 of `payments-api` (2.4.0, for two weeks), revision 7 (2.4.1, with debug logs)
/// created 13:52:10.
fn payments_revisions() -> Vec<String> {
    vec![
        replica_set(
            "payments-api",
            6,
            "2025-02-18T09:00:00Z",
            "58c6d9f7b4",
            "registry/payments:2.4.0",
            "info",
        ),
        replica_set(
            "payments-api",
            7,
            "2025-03-04T13:52:10Z",
            "7d9f8c6b5",
            "registry/payments:2.4.1",
            "debug",
        ),
    ]
}

/// The payments error ratio a minute apart from 13:50: 1 % until 13:57, then 20 %.
fn errors_step_at_1357(n: u32) -> Evidence {
    let mut values = vec![0.01; 7];
    values.resize(15, 0.2);
    ev(
        n,
        Capability::MetricRange,
        json!({"query": "http_error_ratio"}),
        &error_ratio(&values),
    )
}

/// Revision 7 of `payments-api` rolled out at 13:52:10 and the error ratio stepped at 13:57.
fn bad_deploy() -> IncidentState {
    round(
        PAYMENTS_ALERT,
        vec![
            history_in(1, "payments", &payments_revisions()),
            errors_step_at_1357(2),
        ],
    )
}

fn rollback_7_to_6() -> Action {
    Action::Rollback {
        namespace: "payments".into(),
        deployment: "payments-api".into(),
        from_revision: 7,
        to_revision: 6,
    }
}

#[test]
fn a_deploy_the_errors_stepped_after_is_rolled_back_to_the_revision_before_it() {
    let state = bad_deploy();
    let proposal = report(&state, Some(Kind::Rollout))
        .proposal
        .expect("a rollback");
    assert_eq!(proposal.action, rollback_7_to_6());
    assert_eq!(
        proposal.cause,
        "Deploy (revision 7) of `registry/payments:2.4.1` 9 min before the alert"
    );
    assert_eq!(
        proposal.why,
        "revision 7 of `payments-api` rolled out at 13:52 UTC and `http_error_ratio{service=\
         \"payments\"}` stepped 4 min later; it changed image registry/payments:2.4.0 → \
         registry/payments:2.4.1, env.LOG_LEVEL info → debug"
    );
    assert_eq!(
        proposal.diff,
        [
            FieldChange {
                field: "image".into(),
                old: Some("registry/payments:2.4.0".into()),
                new: Some("registry/payments:2.4.1".into()),
            },
            FieldChange {
                field: "env.LOG_LEVEL".into(),
                old: Some("info".into()),
                new: Some("debug".into()),
            },
        ]
    );
    // The history (the deploy and its diff) and the metric step the deploy explains.
    assert_eq!(proposal.evidence, ["E1", "E2"]);
}

#[test]
fn an_unverified_deploy_proposes_nothing() {
    // No metric stepped after it: a suspect, not a cause.
    let state = round(
        PAYMENTS_ALERT,
        vec![history_in(1, "payments", &payments_revisions())],
    );
    let report = report(&state, None);
    assert!(state.findings.iter().any(|f| f.kind() == Kind::Rollout));
    assert_eq!(report.proposal, None);
}

#[test]
fn a_statefulsets_revision_is_never_rolled_back() {
    let controller_revision = |revision: u32, created: &str, hash: &str, image: &str| {
        format!(
            "\
- apiVersion: apps/v1
  data:
    spec:
      template:
        spec:
          containers:
          - image: {image}
            name: ledger
  kind: ControllerRevision
  metadata:
    creationTimestamp: {created}
    name: ledger-{hash}
    ownerReferences:
    - apiVersion: apps/v1
      controller: true
      kind: StatefulSet
      name: ledger
  revision: {revision}
"
        )
    };
    let revisions = [
        controller_revision(
            1,
            "2025-02-18T09:00:00Z",
            "7b9c6d5f48",
            "registry/ledger:3.1",
        ),
        controller_revision(
            2,
            "2025-03-04T13:52:10Z",
            "5d8f9c7b64",
            "registry/ledger:3.2",
        ),
    ];
    let state = round(
        "alertname=PaymentsErrorRate namespace=payments service=payments",
        vec![
            history_in(1, "payments", &revisions),
            errors_step_at_1357(2),
        ],
    );
    let report = report(&state, Some(Kind::Rollout));
    assert!(
        state.findings.iter().any(|f| matches!(&f.fact,
            Fact::RevisionDiff(d) if d.workload_kind == "StatefulSet" && d.revision == 2)),
        "{:#?}",
        state.findings
    );
    assert_eq!(report.proposal, None);

    // Even were the deploy to name it, a StatefulSet's diff is no Deployment's rollback.
    let mut state = bad_deploy();
    if let Fact::RevisionDiff(d) = &mut finding(&mut state, Kind::RevisionDiff).fact {
        d.workload_kind = "StatefulSet".into();
    }
    assert_eq!(build_report(&state).proposal, None);
}

#[test]
fn a_diff_of_another_deployment_than_the_deploys_proposes_nothing() {
    let mut state = bad_deploy();
    if let Fact::RevisionDiff(d) = &mut finding(&mut state, Kind::RevisionDiff).fact {
        d.deployment = "ledger-api".into();
    }
    assert_eq!(report(&state, Some(Kind::Rollout)).proposal, None);
}

#[test]
fn a_revision_no_longer_running_is_not_rolled_back() {
    // Someone already rolled back at 14:20: revision 8 (2.4.0 again) runs now.
    let mut revisions = payments_revisions();
    revisions.push(replica_set(
        "payments-api",
        8,
        "2025-03-04T14:20:00Z",
        "58c6d9f7b4",
        "registry/payments:2.4.0",
        "info",
    ));
    let state = round(
        PAYMENTS_ALERT,
        vec![
            history_in(1, "payments", &revisions),
            errors_step_at_1357(2),
        ],
    );
    assert_eq!(report(&state, Some(Kind::Rollout)).proposal, None);
}

#[test]
fn a_deploy_of_an_unrelated_deployment_is_no_rollback_beside_another_headline() {
    let oom = describe(
        1,
        "\
Name:             payments-api-7d9f8c6b5-x2k4q
Namespace:        default
Containers:
  api:
    Image:          registry/payments:2.4.1
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Restart Count:  12
    Limits:
      memory:  256Mi
",
    );
    let billing = [
        replica_set(
            "billing-ui",
            30,
            "2025-02-01T09:00:00Z",
            "4c7d9b8f6",
            "registry/billing-ui:1.0",
            "info",
        ),
        replica_set(
            "billing-ui",
            31,
            "2025-03-04T13:50:00Z",
            "5f6d7c8b9",
            "registry/billing-ui:1.1",
            "info",
        ),
    ];
    let state = round(
        "alertname=KubePodCrashLooping namespace=default pod=payments-api-7d9f8c6b5-x2k4q \
         container=api",
        vec![oom, history_in(2, "default", &billing)],
    );
    let report = report(&state, Some(Kind::OomKilled));
    for kind in [Kind::Rollout, Kind::RevisionDiff] {
        assert!(
            state
                .findings
                .iter()
                .any(|f| f.kind() == kind && f.resource().as_deref() == Some("billing-ui")),
            "{kind:?}: {:#?}",
            state.findings
        );
    }
    assert_eq!(report.proposal, None);
}

const CRONJOB_ALERT: &str = "alertname=InvoiceDunningMissed namespace=collections";

fn suspended_cronjob(args: serde_json::Value) -> Evidence {
    ev(
        1,
        Capability::ObjectGet,
        args,
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: invoice-dunning\n  namespace: collections\nspec:\n  schedule: 15 2 * * *\n  suspend: true\nstatus:\n  lastScheduleTime: '2025-03-03T02:15:00Z'\n",
    )
}

#[test]
fn a_suspended_cronjob_is_resumed() {
    let state = round(
        CRONJOB_ALERT,
        vec![suspended_cronjob(
            json!({"kind": "CronJob", "namespace": "collections", "name": "invoice-dunning"}),
        )],
    );
    let proposal = report(&state, Some(Kind::CronJobSuspended))
        .proposal
        .expect("a resume");
    assert_eq!(
        proposal.action,
        Action::SuspendCronJob {
            namespace: "collections".into(),
            name: "invoice-dunning".into(),
            suspend: false,
        }
    );
    assert_eq!(
        proposal.why,
        "CronJob `invoice-dunning` (schedule `15 2 * * *`) has `spec.suspend: true`, so the \
         controller starts none of its runs"
    );
    assert_eq!(proposal.evidence, ["E1"]);
    assert!(proposal.diff.is_empty());
}

#[test]
fn a_call_that_does_not_say_its_namespace_proposes_nothing() {
    // A custom binding's own argument names: the object says `collections`, but Firstline
    // acts only where it asked.
    let state = round(
        CRONJOB_ALERT,
        vec![suspended_cronjob(
            json!({"kind": "CronJob", "ns": "collections", "name": "invoice-dunning"}),
        )],
    );
    assert_eq!(report(&state, Some(Kind::CronJobSuspended)).proposal, None);
}

/// A pod of Deployment `api` on `node`, crash-looping or healthy, as `pods_get` returns it.
fn api_pod(suffix: &str, node: &str, failing: bool) -> String {
    let (ready, restarts, state) = if failing {
        ("false", 7, "waiting:\n        reason: CrashLoopBackOff")
    } else {
        (
            "true",
            0,
            "running:\n        startedAt: 2025-03-01T10:00:00Z",
        )
    };
    format!(
        "\
apiVersion: v1
kind: Pod
metadata:
  labels:
    app: api
    pod-template-hash: 7d9f8c6b5
  name: api-7d9f8c6b5-{suffix}
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    controller: true
    kind: ReplicaSet
    name: api-7d9f8c6b5
spec:
  nodeName: {node}
status:
  containerStatuses:
  - name: api
    ready: {ready}
    restartCount: {restarts}
    state:
      {state}
  phase: Running
"
    )
}

/// `pods` (suffix, node, failing) of Deployment `api`, listed, and the first one described
/// (the alert's: the round reads the pods most in trouble).
fn api_pods(pods: &[(&str, &str, bool)]) -> Vec<Evidence> {
    let listed: Vec<String> = pods
        .iter()
        .map(|(suffix, node, failing)| list_item(&api_pod(suffix, node, *failing)))
        .collect();
    let (suffix, node, failing) = pods[0];
    vec![
        ev(
            1,
            Capability::PodList,
            json!({"namespace": "shop", "labelSelector": "app=api"}),
            &listed.concat(),
        ),
        ev(
            2,
            Capability::PodDescribe,
            json!({"namespace": "shop", "name": format!("api-7d9f8c6b5-{suffix}")}),
            &api_pod(suffix, node, failing),
        ),
    ]
}

/// A log store's answer for `{node="<node>"}`: its kernel's `line`, twice.
fn journal(n: u32, node: &str, line: &str) -> Evidence {
    let entry = |i: u64| {
        json!({
            "labels": {"job": "systemd-journal", "node": node, "unit": "kernel"},
            "line": line,
            "timestamp": format!("{}", 1_741_096_800_000_000_000_u64 - i * 60_000_000_000),
        })
    };
    ev(
        n,
        Capability::LogQuery,
        json!({"datasourceUid": "loki", "logql": format!("{{node=\"{node}\"}}"), "limit": 50}),
        &json!([entry(0), entry(1)]).to_string(),
    )
}

const API_CRASH_ALERT: &str =
    "alertname=KubePodCrashLooping namespace=shop pod=api-7d9f8c6b5-x2k4q container=api";

/// Two crash-looping pods of `api` on `gpu-3`, a healthy one on `gpu-1`, and `gpu-3`'s kernel
/// reporting `line`.
fn faulty_node(line: &str) -> IncidentState {
    let mut evidence = api_pods(&[
        ("x2k4q", "gpu-3", true),
        ("h8r2m", "gpu-3", true),
        ("b4n6c", "gpu-1", false),
    ]);
    evidence.push(journal(3, "gpu-3", line));
    round(API_CRASH_ALERT, evidence)
}

fn cordon(node: &str) -> Action {
    Action::Cordon {
        node: node.into(),
        cordon: true,
    }
}

#[test]
fn a_node_whose_kernel_lost_its_gpu_under_the_failing_pods_is_cordoned() {
    let state = faulty_node(
        "NVRM: Xid (PCI:0000:00:1e): 79, pid=1882342, name=python, GPU has fallen off the bus.",
    );
    let proposal = report(&state, Some(Kind::KernelFault))
        .proposal
        .expect("a cordon");
    assert_eq!(proposal.action, cordon("gpu-3"));
    assert_eq!(
        proposal.why,
        "node `gpu-3`'s kernel journal reports the fault 2 times, and the 2 failing pods of \
         `api` all run there; cordoned, no new pod is placed on it"
    );
    assert!(
        proposal.evidence.contains(&"E3".to_string()),
        "{proposal:#?}"
    );
}

#[test]
fn a_node_the_alert_names_is_cordoned_for_its_own_kernels_fault_only() {
    let io_errors = |node: &str| {
        round(
            "alertname=KubeNodeNotReady node=worker-9",
            vec![journal(
                1,
                node,
                "blk_update_request: I/O error, dev nvme1n1, sector 2048 op 0x1:(WRITE)",
            )],
        )
    };
    let proposal = report(&io_errors("worker-9"), Some(Kind::KernelFault))
        .proposal
        .expect("a cordon");
    assert_eq!(proposal.action, cordon("worker-9"));
    assert_eq!(
        proposal.why,
        "node `worker-9`'s kernel journal reports the fault 2 times, the node the alert is \
         about; cordoned, no new pod is placed on it"
    );
    // Another node's fault heads the story too (it accounts for any node alert), but ties
    // nothing to the alert's node.
    let other = io_errors("worker-4");
    assert_eq!(report(&other, Some(Kind::KernelFault)).proposal, None);
}

#[test]
fn a_full_conntrack_table_is_not_cordoned() {
    let state = faulty_node("nf_conntrack: nf_conntrack: table full, dropping packet");
    assert_eq!(report(&state, Some(Kind::KernelFault)).proposal, None);
}

/// Three crash-looping pods of `api` on `worker-3`, three healthy ones on two other nodes.
fn shared_node() -> IncidentState {
    round(
        API_CRASH_ALERT,
        api_pods(&[
            ("x2k4q", "worker-3", true),
            ("h8r2m", "worker-3", true),
            ("q9z7w", "worker-3", true),
            ("b4n6c", "worker-1", false),
            ("m2k8d", "worker-1", false),
            ("t5w2x", "worker-2", false),
        ]),
    )
}

#[test]
fn a_node_only_the_failing_pods_share_is_cordoned() {
    let state = shared_node();
    let proposal = report(&state, Some(Kind::SharedByFailing))
        .proposal
        .expect("a cordon");
    assert_eq!(proposal.action, cordon("worker-3"));
    assert_eq!(
        proposal.why,
        "3 failing pods of `api` all run on node `worker-3` while its 3 healthy pods run \
         elsewhere; cordoned, no new pod is placed on it"
    );
}

#[test]
fn failing_pods_sharing_a_zone_cordon_nothing() {
    let node = |name: &str, zone: &str| {
        format!(
            "- apiVersion: v1\n  kind: Node\n  metadata:\n    labels:\n      topology.kubernetes.io/zone: {zone}\n    name: {name}\n"
        )
    };
    let mut evidence = api_pods(&[
        ("x2k4q", "worker-a1", true),
        ("h8r2m", "worker-a2", true),
        ("q9z7w", "worker-a3", true),
        ("b4n6c", "worker-b1", false),
        ("t5w2x", "worker-c1", false),
    ]);
    evidence.push(ev(
        3,
        Capability::ObjectList,
        json!({"kind": "Node"}),
        &[
            node("worker-a1", "eu-west-1a"),
            node("worker-a2", "eu-west-1a"),
            node("worker-a3", "eu-west-1a"),
            node("worker-b1", "eu-west-1b"),
            node("worker-c1", "eu-west-1c"),
        ]
        .concat(),
    ));
    let state = round(API_CRASH_ALERT, evidence);
    assert_eq!(report(&state, Some(Kind::SharedByFailing)).proposal, None);
}

#[test]
fn a_lost_or_pressured_node_is_not_cordoned() {
    let lost = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-eu-1b-5\nstatus:\n  conditions:\n  - message: Kubelet stopped posting node status.\n    reason: NodeStatusUnknown\n    status: Unknown\n    type: Ready\n";
    let state = round(
        "alertname=KubeNodeNotReady node=worker-eu-1b-5",
        vec![object(1, "Node", lost)],
    );
    assert_eq!(report(&state, Some(Kind::NodeNotReady)).proposal, None);

    let pressured = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\nstatus:\n  conditions:\n  - message: kubelet has insufficient memory available\n    reason: KubeletHasInsufficientMemory\n    status: \"True\"\n    type: MemoryPressure\n  - status: \"True\"\n    type: Ready\n";
    let state = round(
        "alertname=KubeNodePressure node=worker-1",
        vec![object(1, "Node", pressured)],
    );
    assert_eq!(report(&state, Some(Kind::NodePressure)).proposal, None);
}

#[test]
fn a_resolved_or_recovered_alert_proposes_nothing() {
    let mut resolved = bad_deploy();
    resolved.alert.target.status = Some(AlertStatus::Resolved);
    assert_eq!(report(&resolved, Some(Kind::Rollout)).proposal, None);

    // The alert's own metric back at its baseline: what it saw has ended.
    let mut recovered = bad_deploy();
    recovered.findings.push(Finding::new(
        Kind::Recovered.example(),
        Confidence::High,
        true,
    ));
    assert_eq!(report(&recovered, Some(Kind::Rollout)).proposal, None);
}

#[test]
fn a_heartbeat_proposes_nothing_whatever_the_round_holds() {
    let mut state = round(
        "alertname=Watchdog namespace=monitoring",
        vec![suspended_cronjob(
            json!({"kind": "CronJob", "namespace": "collections", "name": "invoice-dunning"}),
        )],
    );
    assert!(
        state
            .findings
            .iter()
            .any(|f| f.kind() == Kind::CronJobSuspended)
    );
    assert_eq!(build_report(&state).proposal, None);
    // The same findings under an ordinary alert would propose: only the heartbeat stops it.
    state.alert = AlertInput::parse(format!("{CRONJOB_ALERT} {START}"), None);
    assert!(build_report(&state).proposal.is_some());
}

#[test]
fn a_weak_chain_proposes_nothing() {
    let mut state = bad_deploy();
    finding(&mut state, Kind::Rollout).confidence = Confidence::Low;
    assert_eq!(report(&state, Some(Kind::Rollout)).proposal, None);
}

#[test]
fn every_proposal_is_what_the_headlines_next_step_says() {
    let cases = [
        (bad_deploy(), "rollout undo deployment/payments-api"),
        (
            round(
                CRONJOB_ALERT,
                vec![suspended_cronjob(
                    json!({"kind": "CronJob", "namespace": "collections", "name": "invoice-dunning"}),
                )],
            ),
            "patch cronjob invoice-dunning -p '{\"spec\":{\"suspend\":false}}'",
        ),
        (
            faulty_node(
                "NVRM: Xid (PCI:0000:00:1e): 79, pid=1, name=python, GPU has fallen off the bus.",
            ),
            "kubectl cordon gpu-3",
        ),
        (
            shared_node(),
            "cordoning it shows whether the pods recover elsewhere",
        ),
    ];
    for (state, says) in cases {
        let report = build_report(&state);
        assert!(report.proposal.is_some(), "{:#?}", state.findings);
        assert!(
            report.next_steps[0].contains(says),
            "{says:?}: {:#?}",
            report.next_steps
        );
    }
}

#[test]
fn a_proposal_is_stored_with_the_report_and_an_old_report_loads_without_one() {
    let report = build_report(&bad_deploy());
    let stored = serde_json::to_value(&report).expect("serialises");
    assert_eq!(stored["proposal"]["action"]["action"], "rollback");
    assert_eq!(stored["proposal"]["diff"][1]["field"], "env.LOG_LEVEL");
    let loaded: Report = serde_json::from_value(stored).expect("loads");
    assert_eq!(loaded, report);

    // A round stored before proposals existed, and one that proposes nothing.
    let old = json!({"headline": "KubePodCrashLooping", "causes": [], "observations": [],
                     "missing": [], "next_steps": [], "similar": []});
    let loaded: Report = serde_json::from_value(old).expect("an old row loads");
    assert_eq!(loaded.proposal, None);
    let none = serde_json::to_value(&loaded).expect("serialises");
    assert!(none.get("proposal").is_none(), "{none}");
}

#[test]
fn a_namespace_is_the_one_every_cited_call_asked() {
    let mut state = bad_deploy();
    // The diff also cites another namespace's history: which `payments-api` is ambiguous.
    state.evidence.push(ev(
        3,
        Capability::DeployHistory,
        json!({"namespace": "payments-staging"}),
        "",
    ));
    let diff = finding(&mut state, Kind::RevisionDiff);
    let mut moved = diff.refs[0].clone();
    moved.evidence = EvidenceId::new(3).expect("an id");
    diff.refs.push(moved);
    assert_eq!(report(&state, Some(Kind::Rollout)).proposal, None);
}
