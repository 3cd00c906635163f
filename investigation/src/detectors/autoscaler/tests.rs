//! Autoscalers at their maximum: what they scale on and where it stands, always a consequence
//! of the load per pod; and one with room left.

use crate::detectors::testing::{ctx, detect, find, hpa, object, quotes};
use crate::detectors::{Kind, Role};

#[test]
fn an_autoscaler_at_its_maximum_is_a_consequence_of_the_load() {
    let findings = detect(
        &[object(1, "HorizontalPodAutoscaler", &hpa(10, true))],
        &ctx(),
    );
    let maxed = find(&findings, Kind::AutoscalerMaxed);
    assert!(maxed.verified);
    assert_eq!(maxed.role(), Role::Consequence, "never the cause itself");
    assert_eq!(
        maxed.title(),
        "Autoscaler `storefront-web` is at its maximum of 10 replicas, scaling on CPU"
    );
    assert!(
        maxed.detail().contains("(TooManyReplicas)")
            && maxed
                .detail()
                .ends_with("It scales on CPU: 96 % of requests against a target of 70 %."),
        "{}",
        maxed.detail()
    );
    assert_eq!(maxed.resource().as_deref(), Some("storefront-web"));
    assert_eq!(
        quotes(maxed),
        [
            "maxReplicas: 10",
            "currentReplicas: 10",
            "reason: TooManyReplicas"
        ]
    );
}

#[test]
fn an_autoscaler_with_room_left_is_not_maxed() {
    let findings = detect(
        &[object(1, "HorizontalPodAutoscaler", &hpa(6, false))],
        &ctx(),
    );
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn an_autoscaler_whose_minimum_is_its_maximum_cannot_scale_and_that_is_a_cause() {
    let pinned = hpa(10, true).replace("minReplicas: 3", "minReplicas: 10");
    let findings = detect(&[object(1, "HorizontalPodAutoscaler", &pinned)], &ctx());
    let maxed = find(&findings, Kind::AutoscalerMaxed);
    assert_eq!(maxed.role(), Role::Cause, "its own spec forbids scaling");
    assert!(maxed.is_verified_cause());
    assert_eq!(
        maxed.title(),
        "Autoscaler `storefront-web` cannot scale: its minReplicas and maxReplicas are both 10 \
         (ScalingLimited: TooManyReplicas)"
    );
    assert!(quotes(maxed).contains(&"minReplicas: 10"), "{maxed:#?}");
}
