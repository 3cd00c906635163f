//! Restarts over a window, from the restart counter in a range query — and only from one.

use crate::detectors::series::shape::time;
use crate::detectors::testing::{
    Style, T0, assert_contains, container_labels, ctx, detect, find, has, matrix, metric, samples,
};
use crate::detectors::{Confidence, Kind, Role};
use crate::evidence::Capability;

const RESTARTS: &str = "kube_pod_container_status_restarts_total";

fn restart_counter(f: impl Fn(usize, f64) -> f64, n: usize) -> String {
    matrix(
        &[(container_labels(RESTARTS), samples(n, 60.0, f))],
        false,
        Style::Compact,
    )
}

#[test]
fn a_container_restarting_every_forty_minutes_is_a_periodic_restart_trend() {
    // 6 h at 1 min: the counter starts at 3 and goes up every 40 min.
    let items = [metric(
        1,
        RESTARTS,
        &restart_counter(|i, _| 3.0 + (i / 40) as f64, 361),
    )];
    let findings = detect(&items, &ctx());
    let trend = find(&findings, Kind::RestartTrend);
    assert_eq!(
        trend.title(),
        "Container `api` restarted 9 times in 6.0 h, every ~40 min"
    );
    assert_contains(&trend.detail(), "a steady period like this");
    assert_eq!(trend.confidence, Confidence::High);
    assert!(!trend.verified, "restarts show that it dies, not why");
    assert_eq!(trend.role(), Role::Symptom);
    assert_eq!(trend.at, Some(time(T0 + 40.0 * 60.0)));
}

#[test]
fn only_metric_range_evidence_is_read() {
    let text = restart_counter(|i, _| (i / 5) as f64, 40);
    let mut log = metric(1, "", &text);
    log.capability = Capability::PodLogsCurrent;
    assert!(!has(&detect(&[log], &ctx()), Kind::RestartTrend));
    assert!(detect(&[metric(1, "", "not json")], &ctx()).is_empty());
}
