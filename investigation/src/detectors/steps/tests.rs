//! The alert's metric stepping up (dated, quoted, a symptom), and a request rate stepping up:
//! load growth, the cause an autoscaler at its maximum follows from.

use serde_json::json;

use super::*;
use crate::detectors::Kind;
use crate::detectors::testing::{
    AT_1350, Style, alert_at, assert_contains, ctx, detect, error_ratio, find, has, hpa, matrix,
    metric, minutely, object, utc,
};

#[test]
fn metric_step_change_is_found_and_dated() {
    let mut values = vec![0.01, 0.012, 0.009, 0.011, 0.01, 0.01, 0.011, 0.009];
    values.extend([0.21, 0.22, 0.19, 0.2, 0.23, 0.21, 0.2]);
    let evidence = [metric(1, "", &error_ratio(&values))];
    let findings = detect(&evidence, &alert_at("2025-03-04T14:02:00Z"));
    let step = find(&findings, Kind::MetricStep);
    assert_eq!(step.at, Some(utc("2025-03-04T13:58:00Z")));
    assert_contains(&step.title(), "http_error_ratio");
    assert_contains(&step.detail(), "4 min before the alert");
    assert_eq!(step.refs.len(), 2);
    assert_contains(&step.refs[1].quote, "\"0.21\"");
    assert!(!step.verified);
    assert!(!has(&findings, Kind::LoadGrowth), "errors are not load");
}

/// A request rate with `labels`, a minute apart from 13:30: 1100/s, then 2400/s from 13:40.
fn request_rate(labels: serde_json::Value) -> String {
    let before = [
        1090.0, 1110.0, 1100.0, 1095.0, 1105.0, 1100.0, 1100.0, 1098.0, 1102.0, 1100.0,
    ];
    let after = [
        2400.0, 2390.0, 2410.0, 2400.0, 2405.0, 2395.0, 2400.0, 2400.0,
    ];
    let values: Vec<f64> = before.iter().chain(&after).copied().collect();
    matrix(
        &[(labels, minutely(&values, AT_1350 - 1200.0))],
        true,
        Style::Spaced,
    )
}

#[test]
fn requests_entering_the_cluster_stepping_up_are_load_growth_that_explains_a_maxed_autoscaler() {
    let query = "sum by (destination_service_name, source_workload) \
                 (rate(istio_requests_total{reporter=\"destination\", \
                 destination_service_name=\"storefront-web\"}[5m]))";
    let labels = json!({
        "destination_service_name": "storefront-web",
        "source_workload": "istio-ingressgateway",
    });
    let evidence = [
        metric(1, query, &request_rate(labels)),
        object(2, "HorizontalPodAutoscaler", &hpa(10, true)),
    ];
    let findings = detect(&evidence, &alert_at("2025-03-04T13:55:00Z"));
    let load = find(&findings, Kind::LoadGrowth);
    assert!(load.verified, "traffic counted at the cluster's entry");
    assert_eq!(load.confidence, Confidence::High);
    assert_eq!(load.role(), Role::Cause);
    assert_eq!(
        load.title(),
        "Load rose: `{destination_service_name=\"storefront-web\", \
         source_workload=\"istio-ingressgateway\"}` from 1100 to 2400 (×2.2) from 13:40 UTC"
    );
    assert_eq!(load.at, Some(utc("2025-03-04T13:40:00Z")));
    assert!(!has(&findings, Kind::MetricStep), "{findings:#?}");
    assert!(load.explains(find(&findings, Kind::AutoscalerMaxed)));
}

#[test]
fn a_services_own_request_rate_stepping_up_is_load_growth_not_yet_verified() {
    let query = "sum by (namespace, service) (rate(http_requests_total{namespace=\"shop\", \
                 service=\"storefront-web\"}[5m]))";
    let labels = json!({"namespace": "shop", "service": "storefront-web"});
    let findings = detect(&[metric(1, query, &request_rate(labels))], &ctx());
    let load = find(&findings, Kind::LoadGrowth);
    assert!(
        !load.verified,
        "not counted where traffic enters: {load:#?}"
    );
    assert_eq!(load.confidence, Confidence::Medium);
    assert_eq!(load.resource().as_deref(), Some("storefront-web"));
    assert!(!has(&findings, Kind::MetricStep), "{findings:#?}");
}

#[test]
fn a_latency_stepping_up_is_a_symptom_not_load() {
    let mut values = vec![0.2, 0.21, 0.19, 0.2, 0.2, 0.21, 0.19, 0.2];
    values.extend([1.4, 1.5, 1.45, 1.6, 1.5, 1.4, 1.55]);
    let labels = json!({"service": "storefront-web"});
    let text = matrix(
        &[(labels, minutely(&values, AT_1350))],
        true,
        Style::Compact,
    );
    let query = "histogram_quantile(0.99, sum by (le, service) \
                 (rate(http_request_duration_seconds_bucket{service=\"storefront-web\"}[5m])))";
    let findings = detect(&[metric(1, query, &text)], &ctx());
    assert!(!has(&findings, Kind::LoadGrowth), "{findings:#?}");
    let step = find(&findings, Kind::MetricStep);
    assert_eq!(step.role(), Role::Symptom);
    assert!(!step.verified);
}

#[test]
fn a_cloudwatch_sum_statistic_steps_while_a_raw_counter_only_counts() {
    let mut values = vec![0.0; 8];
    values.extend([1810.0, 3950.0, 4100.0, 4212.0, 4150.0, 4200.0, 4212.0]);
    let series = |labels: serde_json::Value| {
        metric(
            1,
            "",
            &matrix(
                &[(labels, minutely(&values, AT_1350 - 840.0))],
                true,
                Style::Compact,
            ),
        )
    };
    let throttled = series(json!({
        "__name__": "aws_dynamodb_write_throttle_events_sum",
        "dimension_TableName": "carts-prod",
    }));
    let findings = detect(&[throttled], &alert_at("2025-03-04T13:52:00Z"));
    assert_contains(
        &find(&findings, Kind::MetricStep).title(),
        "aws_dynamodb_write_throttle_events_sum",
    );

    let counter =
        series(json!({"__name__": "http_request_duration_seconds_sum", "service": "cart"}));
    let findings = detect(&[counter], &alert_at("2025-03-04T13:52:00Z"));
    assert!(
        !has(&findings, Kind::MetricStep),
        "a raw counter's climb is no step"
    );
}
