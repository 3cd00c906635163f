//! Supersession by time and the routine-noise classes, each from evidence as the cluster shows
//! it, through the whole detector pipeline.

use serde_json::json;

use super::*;
use crate::detectors::testing::{ev, event, event_list, fetched_at, find, utc};
use crate::detectors::{DetectionContext, Finding, Kind, Standing, run_detectors};
use crate::evidence::{Capability, Evidence};

const ALERT: &str = "2025-03-04T14:02:00Z";

/// When the round read the cluster.
const READ_AT: &str = "2025-03-04T14:05:00Z";

fn ctx() -> DetectionContext {
    DetectionContext {
        alert_start: Some(utc(ALERT)),
        ..DetectionContext::default()
    }
}

/// Every part run over `evidence`, read at 14:05.
fn detect(evidence: Vec<Evidence>, ctx: &DetectionContext) -> Vec<Finding> {
    run_detectors(&fetched_at(READ_AT, evidence), ctx)
}

/// A pod as kubernetes-mcp-server returns it: on `node` (none: Pending), its one container
/// running since `started` (none: waiting), with `extra` status lines.
fn pod(name: &str, node: Option<&str>, started: Option<&str>, status_extra: &str) -> String {
    let node_line = node
        .map(|n| format!("  nodeName: {n}\n"))
        .unwrap_or_default();
    let phase = if node.is_some() && started.is_some() {
        "Running"
    } else {
        "Pending"
    };
    let state = match started {
        Some(s) => {
            format!("    ready: true\n    state:\n      running:\n        startedAt: \"{s}\"\n")
        }
        None => "    ready: false\n    state:\n      waiting:\n        reason: ContainerCreating\n"
            .to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n{node_line}  containers:\n  - name: api\nstatus:\n  phase: {phase}\n  containerStatuses:\n  - name: api\n{state}{status_extra}"
    )
}

const POD: &str = "api-7d9f8c6b5-x2k4q";

/// The pod, `text` as `resources_get` returns it.
fn the_pod(text: &str) -> Evidence {
    ev(1, Capability::PodDescribe, json!({"name": POD}), text)
}

/// A warning about the pod for `reason` at `at` on 2025-03-04 (`13:58:00`), saying `message`.
fn pod_warning(reason: &str, message: &str, at: &str) -> String {
    event(
        "Warning",
        reason,
        &format!("Pod/{POD}"),
        "shop",
        &format!("'{message}'"),
        at,
    )
}

/// The events about the pod.
fn pod_events(items: &[String]) -> Evidence {
    ev(
        2,
        Capability::Events,
        json!({"namespace": "shop", "fieldSelector": format!("involvedObject.name={POD}")}),
        &event_list(items),
    )
}

#[test]
fn a_failed_scheduling_event_from_before_the_pod_ran_is_superseded() {
    let scheduling = pod_warning(
        "FailedScheduling",
        "0/6 nodes are available: 6 Insufficient cpu.",
        "13:10:00",
    );
    let running = pod(POD, Some("worker-3"), Some("2025-03-04T13:12:00Z"), "");
    let findings = detect(
        vec![
            the_pod(&running),
            pod_events(std::slice::from_ref(&scheduling)),
        ],
        &ctx(),
    );
    let stale = find(&findings, Kind::Unschedulable);
    assert!(
        matches!(&stale.standing, Standing::Superseded { because } if because.contains("worker-3")),
        "{stale:#?}"
    );
    assert!(!stale.is_verified_cause());

    // A Job's pod that ran to its end after the event was scheduled as surely.
    let finished = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {POD}\n  namespace: shop\nspec:\n  nodeName: batch-1\n  containers:\n  - name: api\nstatus:\n  phase: Failed\n  containerStatuses:\n  - name: api\n    ready: false\n    state:\n      terminated:\n        exitCode: 1\n        reason: Error\n        startedAt: \"2025-03-04T13:13:00Z\"\n"
    );
    let findings = detect(
        vec![
            the_pod(&finished),
            pod_events(std::slice::from_ref(&scheduling)),
        ],
        &ctx(),
    );
    let stale = find(&findings, Kind::Unschedulable);
    assert!(
        matches!(&stale.standing, Standing::Superseded { because } if because.contains("and ran")),
        "{stale:#?}"
    );

    // The same event while the pod is still Pending stands.
    let pending = pod(POD, None, None, "");
    let findings = detect(vec![the_pod(&pending), pod_events(&[scheduling])], &ctx());
    let current = find(&findings, Kind::Unschedulable);
    assert_eq!(current.standing, Standing::Current);
    assert!(current.is_verified_cause());
}

/// A container that was OOM-killed at `finished` and has run since `started`.
fn oom_killed_then_running(finished: &str, started: &str) -> String {
    pod(
        POD,
        Some("worker-3"),
        Some(started),
        &format!(
            "    restartCount: 1\n    lastState:\n      terminated:\n        exitCode: 137\n        finishedAt: \"{finished}\"\n        reason: OOMKilled\n"
        ),
    )
}

#[test]
fn a_termination_days_before_the_alert_is_history_and_a_recent_one_is_not() {
    let old = oom_killed_then_running("2025-03-01T09:00:00Z", "2025-03-01T09:00:05Z");
    let findings = detect(vec![the_pod(&old)], &ctx());
    let oom = find(&findings, Kind::OomKilled);
    assert!(
        matches!(&oom.standing, Standing::Superseded { because } if because.contains("3 days")),
        "{oom:#?}"
    );

    let recent = oom_killed_then_running("2025-03-04T13:58:00Z", "2025-03-04T13:58:10Z");
    let findings = detect(vec![the_pod(&recent)], &ctx());
    assert_eq!(find(&findings, Kind::OomKilled).standing, Standing::Current);
}

#[test]
fn restart_counts_of_a_container_that_recovered_are_superseded() {
    // The alert fired at 13:30; the container came back at 13:25 and has run ready for 40 min
    // when the round reads it at 14:05.
    let recovered = pod(
        POD,
        Some("worker-3"),
        Some("2025-03-04T13:25:00Z"),
        "    restartCount: 6\n",
    );
    let fired_earlier = DetectionContext {
        alert_start: Some(utc("2025-03-04T13:30:00Z")),
        ..DetectionContext::default()
    };
    let findings = detect(vec![the_pod(&recovered)], &fired_earlier);
    assert_eq!(
        find(&findings, Kind::Recovered).role(),
        crate::detectors::Role::Context
    );
    assert!(matches!(
        find(&findings, Kind::CrashLoop).standing,
        Standing::Superseded { .. }
    ));
}

#[test]
fn kubelet_start_up_warnings_are_routine() {
    let running = pod(POD, Some("worker-3"), Some("2025-03-04T13:40:05Z"), "");
    let findings = detect(
        vec![
            the_pod(&running),
            pod_events(&[
                pod_warning(
                    "FailedMount",
                    r#"MountVolume.SetUp failed for volume "kube-api-access-9xk2p" : object "shop"/"kube-root-ca.crt" not registered"#,
                    "13:40:00",
                ),
                pod_warning(
                    "DNSConfigForming",
                    "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 10.0.0.2 10.0.0.3",
                    "13:40:01",
                ),
                pod_warning(
                    "FailedCreatePodSandBox",
                    "Failed to create pod sandbox: plugin type=\"calico\" failed (add): error getting ClusterInformation: connection is unauthorized",
                    "13:40:02",
                ),
            ]),
        ],
        &ctx(),
    );
    let mount = find(&findings, Kind::ConfigError);
    assert_eq!(
        mount.standing,
        Standing::Routine {
            class: Routine::KubeRootCaNotRegistered
        },
        "{mount:#?}"
    );
    assert!(!mount.is_verified_cause());
    let classes: Vec<Routine> = findings
        .iter()
        .filter_map(|f| match f.standing {
            Standing::Routine { class } => Some(class),
            _ => None,
        })
        .collect();
    assert!(
        classes.contains(&Routine::DnsConfigForming),
        "{findings:#?}"
    );
    assert!(
        classes.contains(&Routine::SandboxAtStartup),
        "{findings:#?}"
    );
}

/// A pod stuck before starting, a mount failure about it saying `message`, and `more`.
fn stuck_mounting(message: &str, more: Vec<Evidence>) -> Vec<Finding> {
    let pending = pod(POD, Some("worker-3"), None, "");
    let mut evidence = vec![
        the_pod(&pending),
        pod_events(&[pod_warning("FailedMount", message, "14:00:00")]),
    ];
    evidence.extend(more);
    detect(evidence, &ctx())
}

const MISSING_CONFIG_MAP: &str =
    r#"MountVolume.SetUp failed for volume "config" : configmap "api-config" not found"#;

#[test]
fn a_missing_configmap_is_not_routine_noise() {
    let findings = stuck_mounting(MISSING_CONFIG_MAP, Vec::new());
    let missing = find(&findings, Kind::ConfigError);
    assert_eq!(missing.standing, Standing::Current);
    assert!(missing.is_verified_cause());
}

#[test]
fn the_kube_root_ca_warning_of_a_pod_stuck_before_starting_is_not_routine() {
    let findings = stuck_mounting(
        r#"MountVolume.SetUp failed for volume "kube-api-access-9xk2p" : object "shop"/"kube-root-ca.crt" not registered"#,
        Vec::new(),
    );
    // The pod never started: the volume it cannot mount may really be what it waits for.
    assert_eq!(
        find(&findings, Kind::ConfigError).standing,
        Standing::Current
    );
}

#[test]
fn a_missing_object_that_exists_now_is_superseded() {
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-config\n  namespace: shop\ndata:\n  mode: live\n";
    let findings = stuck_mounting(
        MISSING_CONFIG_MAP,
        vec![ev(
            3,
            Capability::ObjectGet,
            json!({"kind": "ConfigMap", "name": "api-config", "namespace": "shop"}),
            config_map,
        )],
    );
    let missing = find(&findings, Kind::ConfigError);
    assert_eq!(
        missing.standing,
        Standing::Superseded {
            because: "ConfigMap `api-config` exists now".into()
        },
        "{missing:#?}"
    );
    assert!(!missing.is_verified_cause());
}

#[test]
fn one_probe_failure_while_the_container_started_is_routine_and_a_failing_probe_is_not() {
    let running = pod(POD, Some("worker-3"), Some("2025-03-04T13:50:00Z"), "");
    let probe = |at: &str| {
        pod_warning(
            "Unhealthy",
            "Readiness probe failed: Get \"http://10.1.2.3:8080/ready\": dial tcp 10.1.2.3:8080: connect: connection refused",
            at,
        )
    };
    let starting = detect(
        vec![the_pod(&running), pod_events(&[probe("13:50:20")])],
        &ctx(),
    );
    assert_eq!(
        find(&starting, Kind::ProbeFailure).standing,
        Standing::Routine {
            class: Routine::ProbeAtStartup
        }
    );
    // Failing twenty minutes after the start is the container, not its start-up.
    let later = detect(
        vec![the_pod(&running), pod_events(&[probe("14:10:00")])],
        &ctx(),
    );
    assert_eq!(find(&later, Kind::ProbeFailure).standing, Standing::Current);

    // A pod only a pod list shows (a replacement the round did not describe) is read too.
    let item = crate::detectors::testing::list_item(&running);
    let listed = ev(3, Capability::PodList, json!({"namespace": "shop"}), &item);
    let starting = detect(vec![listed, pod_events(&[probe("13:50:20")])], &ctx());
    assert_eq!(
        find(&starting, Kind::ProbeFailure).standing,
        Standing::Routine {
            class: Routine::ProbeAtStartup
        }
    );
}

#[test]
fn every_routine_class_says_what_it_is() {
    for class in [
        Routine::KubeRootCaNotRegistered,
        Routine::SandboxAtStartup,
        Routine::DnsConfigForming,
        Routine::ProbeAtStartup,
    ] {
        assert!(class.describe().len() > 30, "{class:?}");
    }
}
