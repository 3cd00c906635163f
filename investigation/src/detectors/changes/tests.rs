//! Changes inside the alert window: rollouts of a new revision (from ReplicaSets, events and
//! text lines; verified by a metric step that follows), the Deployment that owns them, and
//! scale-ups (context, never a cause).

use super::*;
use crate::detectors::testing::{
    alert_at, all_of, assert_contains, ctx, detect, error_ratio, event_list, events, find, has,
    history, metric, quotes, scaled, shipment_api_scale_up, utc,
};
use crate::detectors::{DetectionContext, Role};

const ALERT: &str = "2025-03-04T14:02:00Z";

fn at_1402() -> DetectionContext {
    alert_at(ALERT)
}

/// A ReplicaSet of Deployment `payments-api` as the rollout history lists it: revision
/// `revision`, created at `created`, its pods' template `hash`, running `image`.
fn replica_set(revision: u32, created: &str, hash: &str, image: &str) -> String {
    format!(
        "\
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    annotations:
      deployment.kubernetes.io/desired-replicas: \"3\"
      deployment.kubernetes.io/revision: \"{revision}\"
    creationTimestamp: \"{created}\"
    labels:
      app: payments-api
      pod-template-hash: {hash}
    name: payments-api-{hash}
    namespace: default
  spec:
    template:
      spec:
        containers:
        - image: {image}
          name: api
"
    )
}

/// Revision 7 (registry/payments:2.4.1) at 13:52:10, after revision 6 (2.4.0) three days
/// before.
fn deploy_history() -> String {
    replica_set(
        7,
        "2025-03-04T13:52:10Z",
        "7d9f8c6b5",
        "registry/payments:2.4.1",
    ) + &replica_set(
        6,
        "2025-03-01T09:00:00Z",
        "6b8d7c5f9",
        "registry/payments:2.4.0",
    )
}

#[test]
fn deploy_inside_the_alert_window() {
    let evidence = [history(1, &deploy_history())];
    let findings = detect(&evidence, &at_1402());
    let deploys = all_of(&findings, Kind::Rollout);
    assert_eq!(deploys.len(), 1, "{findings:#?}");
    let deploy = deploys[0];
    assert_contains(&deploy.title(), "revision 7");
    assert_contains(&deploy.title(), "registry/payments:2.4.1");
    assert_contains(&deploy.title(), "9 min before");
    assert_eq!(deploy.at, Some(utc("2025-03-04T13:52:10Z")));
    assert!(!deploy.verified);

    // Outside the window, or with no alert start: nothing.
    assert!(detect(&evidence, &alert_at("2025-03-04T18:00:00Z")).is_empty());
    assert!(detect(&evidence, &ctx()).is_empty());
}

#[test]
fn deploy_events_and_text_lines() {
    let list = "\
- firstTimestamp: \"2025-03-04T13:58:00Z\"
  lastTimestamp: \"2025-03-04T13:58:00Z\"
  message: Scaled up replica set payments-api-7d9f8c6b5 to 3
  reason: ScalingReplicaSet
  type: Normal
";
    let findings = detect(&[history(1, list)], &at_1402());
    let deploy = find(&findings, Kind::Rollout);
    assert_contains(&deploy.title(), "4 min before");

    let text = "REVISION  DEPLOYED              IMAGE\n6         2025-03-01T09:00:00Z  registry/payments:2.4.0\n7         2025-03-04T13:45:00Z  registry/payments:2.4.1\n";
    let findings = detect(&[history(1, text)], &at_1402());
    let deploy = find(&findings, Kind::Rollout);
    assert_contains(&deploy.title(), "17 min before");
}

/// A deploy at 13:56:30 and the alert's metric stepping up at 13:58.
fn deploy_then_step() -> [Evidence; 2] {
    let mut values = vec![0.01; 8];
    values.extend([0.2; 7]);
    let record = "- creationTimestamp: \"2025-03-04T13:56:30Z\"\n  revision: 8\n  image: registry/payments:2.5.0\n";
    [history(1, record), metric(2, "", &error_ratio(&values))]
}

#[test]
fn deploy_followed_by_step_becomes_a_verified_cause() {
    let evidence = deploy_then_step();
    let findings = detect(&evidence, &at_1402());
    let deploy = find(&findings, Kind::Rollout);
    assert!(deploy.verified);
    assert_contains(&deploy.detail(), "began 1 min after this deploy");
    assert_eq!(findings[0].kind(), Kind::Rollout);
    assert!(deploy.explains(find(&findings, Kind::MetricStep)));
}

#[test]
fn a_deploy_verified_by_timing_alone_is_a_medium_confidence_cause() {
    // A deploy the metric stepped after is verified by when, not by how: medium, so a cause
    // with a mechanism (a connection limit, an OOM kill) ranks above it.
    let evidence = deploy_then_step();
    let findings = detect(&evidence, &at_1402());
    let deploy = find(&findings, Kind::Rollout);
    assert!(deploy.verified);
    assert_eq!(deploy.confidence, Confidence::Medium);
}

#[test]
fn a_deploy_in_the_window_is_about_the_deployment_owning_its_replica_set() {
    // The revision-7 record, as the API returns it for a ReplicaSet a Deployment owns.
    let owned = deploy_history().replacen(
        "    namespace: default\n",
        "    namespace: default\n    ownerReferences:\n    - apiVersion: apps/v1\n      \
         blockOwnerDeletion: true\n      controller: true\n      kind: Deployment\n      \
         name: payments-api\n      uid: 0b4f6c2e-1d5a-4b7e-9c3f-8a2d1e6f5b90\n",
        1,
    );
    let findings = detect(&[history(1, &owned)], &at_1402());
    let deploy = find(&findings, Kind::Rollout);
    assert_contains(&deploy.title(), "revision 7");
    assert_eq!(deploy.resource().as_deref(), Some("payments-api"));
    // Without an owner reference the deploy names no resource (not the ReplicaSet).
    let findings = detect(&[history(1, &deploy_history())], &at_1402());
    assert_eq!(find(&findings, Kind::Rollout).resource(), None);
}

// ---------------------------------------------------------------------------------------------
// Scale-ups

/// An event list holding `items` (each [`scaled`]).
fn scaling_events(items: &[String]) -> Evidence {
    events(1, &event_list(items))
}

#[test]
fn scaling_replica_set_events_show_a_scale_up_before_the_alert() {
    let list = events(1, &shipment_api_scale_up());
    let findings = detect(&[list], &at_1402());
    let scale_up = find(&findings, Kind::ScaleChange);
    assert_eq!(
        scale_up.title(),
        "Deployment `shipment-api` scaled up from 4 to 12 replicas, 22 min before the alert"
    );
    assert_eq!(scale_up.resource().as_deref(), Some("shipment-api"));
    assert_eq!(scale_up.at, Some(utc("2025-03-04T13:40:00Z")));
    assert!(!scale_up.verified);
    // A scale-up is context now: more replicas add load, they are never the cause.
    assert_eq!(scale_up.role(), Role::Context);
    assert_eq!(
        quotes(scale_up),
        [
            "Message: Scaled up replica set shipment-api-6c9f8d7b5 to 3",
            "Message: Scaled up replica set shipment-api-6c9f8d7b5 to 12 from 3",
        ]
    );

    // Without a scale-down, the scale-up's own "from" is the old size.
    let list = scaling_events(&[scaled(
        "Scaled up replica set shipment-api-6c9f8d7b5 to 6 from 2",
        "13:50:00",
    )]);
    let findings = detect(&[list], &at_1402());
    assert_eq!(
        find(&findings, Kind::ScaleChange).title(),
        "Deployment `shipment-api` scaled up from 2 to 6 replicas, 12 min before the alert"
    );
}

#[test]
fn a_rollout_at_constant_size_or_a_scale_up_outside_the_window_is_no_scale_up() {
    let rollout = scaling_events(&[
        scaled(
            "Scaled up replica set shipment-api-6c9f8d7b5 to 4",
            "13:40:00",
        ),
        scaled(
            "Scaled down replica set shipment-api-5b8c7d6f4 to 0 from 4",
            "13:41:00",
        ),
    ]);
    let findings = detect(&[rollout], &at_1402());
    assert!(!has(&findings, Kind::ScaleChange), "{findings:#?}");

    let long_ago = scaling_events(&[scaled(
        "Scaled up replica set shipment-api-6c9f8d7b5 to 12 from 4",
        "12:40:00",
    )]);
    let findings = detect(&[long_ago], &at_1402());
    assert!(!has(&findings, Kind::ScaleChange), "{findings:#?}");
}
