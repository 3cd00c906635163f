//! What the alert saw has ended: a workload fully available again after a recent change (for
//! a replica alert), a container running cleanly since around the alert; and what has not.

use serde_json::json;

use super::*;
use crate::detectors::testing::{assert_contains, detect, ev, find, has, object, quotes, utc};
use crate::detectors::{DetectionContext, Kind, Standing};

fn deployment_yaml(ready: u32, progressed_at: &str) -> String {
    format!(
        "\
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: \"3\"
  creationTimestamp: \"2025-02-11T10:20:00Z\"
  generation: 7
  labels:
    app: checkout
  name: checkout
  namespace: shop
  uid: 6f0c1d2e-8b3a-4c5d-9e7f-0a1b2c3d4e5f
spec:
  replicas: 4
  selector:
    matchLabels:
      app: checkout
status:
  availableReplicas: 4
  conditions:
  - lastTransitionTime: \"2025-03-04T12:00:00Z\"
    lastUpdateTime: \"2025-03-04T12:00:00Z\"
    message: Deployment has minimum availability.
    reason: MinimumReplicasAvailable
    status: \"True\"
    type: Available
  - lastTransitionTime: \"2025-03-04T11:00:00Z\"
    lastUpdateTime: \"{progressed_at}\"
    message: ReplicaSet \"checkout-6b8d7c5f9\" has successfully progressed.
    reason: NewReplicaSetAvailable
    status: \"True\"
    type: Progressing
  observedGeneration: 7
  readyReplicas: {ready}
  replicas: 4
  updatedReplicas: 4
"
    )
}

fn replica_alert() -> DetectionContext {
    DetectionContext {
        alert_start: Some(utc("2025-03-04T14:02:00Z")),
        about_replicas: true,
        default_resource: Some("checkout".into()),
        ..DetectionContext::default()
    }
}

fn checkout(ready: u32, progressed_at: &str) -> [Evidence; 1] {
    [object(
        1,
        "Deployment",
        &deployment_yaml(ready, progressed_at),
    )]
}

#[test]
fn a_workload_fully_available_after_a_recent_change_has_recovered() {
    let findings = detect(&checkout(4, "2025-03-04T14:06:00Z"), &replica_alert());
    let recovered = find(&findings, Kind::Recovered);
    assert_eq!(
        recovered.title(),
        "Deployment `checkout` recovered: all 4 of 4 replicas updated, ready and available since \
         14:06 UTC"
    );
    assert!(!recovered.verified, "not a cause");
    assert_eq!(recovered.role(), Role::Context);
    assert_eq!(recovered.resource().as_deref(), Some("checkout"));
    assert_eq!(
        quotes(recovered),
        ["readyReplicas: 4", "reason: NewReplicaSetAvailable"]
    );

    // Changed exactly ten minutes before the alert: still this alert's recovery.
    let findings = detect(&checkout(4, "2025-03-04T13:52:00Z"), &replica_alert());
    assert!(has(&findings, Kind::Recovered));
}

#[test]
fn a_workload_that_settled_long_before_the_alert_or_is_short_has_not_recovered() {
    let settled_earlier = checkout(4, "2025-03-04T13:51:00Z");
    assert!(
        !has(&detect(&settled_earlier, &replica_alert()), Kind::Recovered),
        "its last change is older than the alert's start minus ten minutes"
    );
    let short = checkout(3, "2025-03-04T14:06:00Z");
    assert!(!has(&detect(&short, &replica_alert()), Kind::Recovered));
    let not_about_replicas = DetectionContext {
        about_replicas: false,
        ..replica_alert()
    };
    assert!(
        !has(
            &detect(&checkout(4, "2025-03-04T14:06:00Z"), &not_about_replicas),
            Kind::Recovered
        ),
        "only replica alerts read a workload's availability"
    );
    let unsettled = [object(
        1,
        "Deployment",
        &deployment_yaml(4, "2025-03-04T14:06:00Z")
            .replace("observedGeneration: 7", "observedGeneration: 6"),
    )];
    assert!(
        !has(&detect(&unsettled, &replica_alert()), Kind::Recovered),
        "the controller has not seen the latest spec yet"
    );
}

#[test]
fn a_container_running_cleanly_since_the_alert_has_recovered_and_its_old_restarts_are_history() {
    let pod = "\
apiVersion: v1
kind: Pod
metadata:
  name: payments-api-7d9f8c6b5-x2k4q
  namespace: payments
spec:
  nodeName: worker-eu-1a-2
status:
  containerStatuses:
  - lastState:
      terminated:
        exitCode: 1
        finishedAt: \"2025-03-04T14:00:30Z\"
        reason: Error
    name: api
    ready: true
    restartCount: 4
    state:
      running:
        startedAt: \"2025-03-04T14:01:00Z\"
  phase: Running
";
    let mut description = ev(
        1,
        Capability::PodDescribe,
        json!({"name": "payments-api-7d9f8c6b5-x2k4q", "namespace": "payments"}),
        pod,
    );
    description.fetched_at = utc("2025-03-04T14:45:00Z");
    let alert = DetectionContext {
        alert_start: Some(utc("2025-03-04T14:02:00Z")),
        ..DetectionContext::default()
    };
    let findings = detect(std::slice::from_ref(&description), &alert);
    let recovered = find(&findings, Kind::Recovered);
    assert_eq!(
        recovered.title(),
        "Container `api` recovered: running and ready since 14:01 UTC"
    );
    assert_contains(&recovered.detail(), "(44 min, no restart since)");
    // The restart count alone is no crash loop any more: kept, as superseded context.
    let restarted = find(&findings, Kind::CrashLoop);
    assert!(
        matches!(restarted.standing, Standing::Superseded { .. }),
        "{restarted:#?}"
    );
    assert_eq!(restarted.role(), Role::Context);

    // Running since long before the alert: it says nothing about the alert.
    let mut earlier = description.clone();
    earlier.excerpt = pod.replace("14:01:00Z", "09:01:00Z");
    assert!(!has(&detect(&[earlier], &alert), Kind::Recovered));
}

const LAG: &str = "pg_replication_lag_bytes{pod=\"ledger-pg-1\"} > 536870912";

/// The alert's own expression re-run: `(minutes from the alert, value)` samples.
fn lag_round(query: &str, samples: &[(i64, f64)]) -> Vec<Finding> {
    let alert = utc("2025-03-04T14:00:00Z");
    let points: Vec<(f64, f64)> = samples
        .iter()
        .map(|(m, v)| ((alert.timestamp() + m * 60) as f64, *v))
        .collect();
    let labels = json!({"__name__": "pg_replication_lag_bytes", "pod": "ledger-pg-1"});
    let text = crate::detectors::testing::matrix(
        &[(labels, points)],
        false,
        crate::detectors::testing::Style::Compact,
    );
    let ctx = DetectionContext {
        alert_start: Some(alert),
        alert_query: Some(crate::detectors::AlertQuery {
            query: LAG.to_string(),
            threshold: crate::detectors::Threshold::of_expression(LAG),
        }),
        ..DetectionContext::default()
    };
    detect(&[crate::detectors::testing::metric(1, query, &text)], &ctx)
}

const BACK: &[(i64, f64)] = &[
    (-180, 0.0),
    (-10, 2.1e8),
    (-2, 1.19e9),
    (0, 1.31e9),
    (3, 9.8e8),
    (5, 4.2e8),
    (7, 0.0),
    (30, 0.0),
    (50, 0.0),
];

#[test]
fn the_alerts_own_metric_back_below_its_threshold_is_a_verified_recovery() {
    let findings = lag_round(LAG, BACK);
    let recovered = find(&findings, Kind::Recovered);
    assert!(recovered.verified);
    assert_contains(&recovered.title(), "back below its threshold");
    assert_contains(&recovered.title(), "536870912");
}

#[test]
fn still_past_its_threshold_or_back_only_briefly_is_no_recovery() {
    let still = [(-180, 0.0), (-2, 1.19e9), (0, 1.31e9), (30, 1.4e9)];
    assert!(!has(&lag_round(LAG, &still), Kind::Recovered));
    let briefly = [(-180, 0.0), (0, 1.31e9), (40, 1.2e9), (45, 0.0), (50, 0.0)];
    assert!(!has(&lag_round(LAG, &briefly), Kind::Recovered));
}

#[test]
fn another_query_than_the_alerts_says_nothing_about_recovery() {
    assert!(!has(
        &lag_round("pg_replication_lag_bytes{pod=\"ledger-pg-2\"}", BACK),
        Kind::Recovered
    ));
}

#[test]
fn without_a_threshold_it_is_back_at_its_baseline() {
    let plain = "pg_replication_lag_bytes{pod=\"ledger-pg-1\"}";
    let alert = utc("2025-03-04T14:00:00Z");
    let at = |m: i64| (alert.timestamp() + m * 60) as f64;
    let points: Vec<(f64, f64)> = [
        (-240, 100.0),
        (-200, 110.0),
        (-160, 90.0),
        (-120, 105.0),
        (-5, 900.0),
        (0, 1000.0),
        (10, 120.0),
        (30, 100.0),
        (45, 95.0),
    ]
    .iter()
    .map(|(m, v)| (at(*m), *v))
    .collect();
    let labels = json!({"__name__": "pg_replication_lag_bytes", "pod": "ledger-pg-1"});
    let text = crate::detectors::testing::matrix(
        &[(labels, points)],
        false,
        crate::detectors::testing::Style::Compact,
    );
    let ctx = DetectionContext {
        alert_start: Some(alert),
        alert_query: Some(crate::detectors::AlertQuery {
            query: plain.to_string(),
            threshold: None,
        }),
        ..DetectionContext::default()
    };
    let findings = detect(&[crate::detectors::testing::metric(1, plain, &text)], &ctx);
    let recovered = find(&findings, Kind::Recovered);
    assert_contains(&recovered.title(), "back to its baseline");
}

/// StatefulSet `nats` of three, all ready: it keeps no condition dating that.
const NATS: &str = "\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  generation: 1
  name: nats
  namespace: messaging
spec:
  replicas: 3
status:
  availableReplicas: 3
  observedGeneration: 1
  readyReplicas: 3
  replicas: 3
  updatedReplicas: 3
";

/// Pod `name` of StatefulSet `nats`, ready since `since`.
fn nats_pod(name: &str, since: &str) -> String {
    format!(
        "\
- apiVersion: v1
  kind: Pod
  metadata:
    name: {name}
    namespace: messaging
    ownerReferences:
    - kind: StatefulSet
      name: nats
  status:
    conditions:
    - lastTransitionTime: '{since}'
      status: 'True'
      type: Ready
    phase: Running
"
    )
}

#[test]
fn a_statefulset_whole_again_for_a_while_is_dated_by_its_pods_and_answers_the_alert() {
    let ctx = DetectionContext {
        default_resource: Some("nats".into()),
        ..replica_alert()
    };
    let pods = ev(
        2,
        Capability::PodList,
        json!({"namespace": "messaging"}),
        &[
            nats_pod("nats-0", "2025-02-20T08:00:00Z"),
            nats_pod("nats-2", "2025-03-04T14:05:00Z"),
        ]
        .concat(),
    );
    let evidence = crate::detectors::testing::fetched_at(
        "2025-03-04T14:40:00Z",
        [object(1, "StatefulSet", NATS), pods],
    );
    let findings = crate::detectors::run_detectors(&evidence, &ctx);
    let recovered = find(&findings, Kind::Recovered);
    assert_eq!(
        recovered.title(),
        "StatefulSet `nats` recovered: all 3 of 3 replicas updated, ready and available since \
         14:05 UTC"
    );
    // The alert's own subject, whole for half an hour: what it saw has ended.
    assert!(recovered.verified);
    assert_eq!(
        quotes(recovered),
        [
            "readyReplicas: 3",
            "- lastTransitionTime: '2025-03-04T14:05:00Z'"
        ]
    );

    // Read minutes after its last pod came back, it is not yet a recovery to answer with.
    let early =
        crate::detectors::testing::fetched_at("2025-03-04T14:08:00Z", evidence.iter().cloned());
    let findings = crate::detectors::run_detectors(&early, &ctx);
    assert!(!find(&findings, Kind::Recovered).verified);
}

#[test]
fn a_rule_filtered_with_and_unless_fires_on_its_first_terms_comparison() {
    use crate::detectors::Threshold;
    let filling = "(kubelet_volume_stats_available_bytes{job=\"kubelet\"} / kubelet_volume_stats_capacity_bytes{job=\"kubelet\"}) < 0.03 and kubelet_volume_stats_used_bytes{job=\"kubelet\"} > 0 unless on (namespace, persistentvolumeclaim) kube_persistentvolumeclaim_access_mode{access_mode=\"ReadOnlyMany\"} == 1";
    assert_eq!(
        Threshold::of_expression(filling),
        Some(Threshold::Below(0.03))
    );
    assert_eq!(
        Threshold::of_expression("sum(rate(errors[5m])) / sum(rate(requests[5m])) > 0.05"),
        Some(Threshold::Above(0.05))
    );
    // An `and` inside parentheses is not the rule's top level.
    assert_eq!(
        Threshold::of_expression("(a > 1 and b) > 4"),
        Some(Threshold::Above(4.0))
    );
    assert_eq!(Threshold::of_expression("up == 0"), None);
}
