//! Alert-rule arithmetic over gauges, evaluated as Prometheus does: a ratio compared to a
//! threshold keeps only the samples past it, `and` / `unless` filter by a match, aggregations
//! group by their labels; ranges and functions are not evaluated here.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Three volume series over four instants: available bytes falling then recovering, constant
/// capacity, used bytes.
fn volume() -> (Vec<(String, Labels)>, Vec<Vec<f64>>) {
    let claim = labels(&[
        ("namespace", "billing"),
        ("persistentvolumeclaim", "data-pg-0"),
    ]);
    let series = vec![
        (
            "kubelet_volume_stats_available_bytes".to_string(),
            claim.clone(),
        ),
        (
            "kubelet_volume_stats_capacity_bytes".to_string(),
            claim.clone(),
        ),
        ("kubelet_volume_stats_used_bytes".to_string(), claim),
    ];
    let values = vec![
        vec![90.0, 2.0, 1.0, 90.0],
        vec![100.0, 100.0, 100.0, 100.0],
        vec![10.0, 98.0, 99.0, 10.0],
    ];
    (series, values)
}

fn run(query: &str) -> Option<Evaluated> {
    let (series, values) = volume();
    evaluate(query, &series, &|i, t| values[i].get(t).copied(), 4)
}

#[test]
fn a_ratio_compared_to_a_threshold_keeps_only_the_samples_past_it() {
    let result = run(
        "(kubelet_volume_stats_available_bytes{job=\"kubelet\"} / kubelet_volume_stats_capacity_bytes{job=\"kubelet\"}) < 0.03 and kubelet_volume_stats_used_bytes > 0 unless on (namespace, persistentvolumeclaim) kube_persistentvolumeclaim_access_mode{access_mode=\"ReadOnlyMany\"} == 1",
    )
    .expect("evaluated");
    assert_eq!(result.len(), 1, "{result:?}");
    let (shown, points) = &result[0];
    assert!(!shown.contains_key("__name__"), "a ratio has no name");
    assert_eq!(points, &[(1, 0.02), (2, 0.01)]);
}

#[test]
fn aggregations_group_by_their_labels_and_unless_drops_a_match() {
    let by = run("max by (namespace) (kubelet_volume_stats_used_bytes)").expect("evaluated");
    assert_eq!(by[0].0, labels(&[("namespace", "billing")]));
    assert_eq!(by[0].1[1], (1, 98.0));

    let none =
        run("kubelet_volume_stats_used_bytes > 0 unless kubelet_volume_stats_capacity_bytes > 0")
            .expect("evaluated");
    assert!(none.is_empty(), "{none:?}");
}

#[test]
fn ranges_functions_and_bare_selectors_are_not_evaluated_here() {
    for query in [
        "rate(http_requests_total[5m])",
        "histogram_quantile(0.99, sum by (le) (x))",
        "kubelet_volume_stats_used_bytes",
        "kubelet_volume_stats_used_bytes{namespace=\"billing\"}",
        "a > bool 1",
        "sum(increase(x[5m])) / sum(increase(y[5m]))",
    ] {
        assert!(run(query).is_none(), "{query}");
    }
}
