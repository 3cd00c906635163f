//! A short excursion that came back: a spike in a gauge is reported; a steady gauge and a
//! counter are not spikes.

use serde_json::json;

use crate::detectors::testing::{
    Style, all_of, assert_contains, assert_starts_with, ctx, detect, has, jitter, matrix, metric,
    samples,
};
use crate::detectors::{Confidence, Kind};

#[test]
fn generic_series_report_spikes_only() {
    let noisy = |i: usize, _| ((0.2 + 0.01 * jitter(i)) * 1000.0).round() / 1000.0;
    let mut latency = samples(40, 60.0, noisy);
    latency[20].1 = 2.5;
    let steady = samples(40, 60.0, noisy);
    let counter = samples(40, 60.0, |i, _| 10.0 * i as f64);
    let items = [metric(
        1,
        "",
        &matrix(
            &[
                (
                    json!({"__name__": "http_p99_seconds", "service": "payments"}),
                    latency,
                ),
                (
                    json!({"__name__": "http_p50_seconds", "service": "payments"}),
                    steady,
                ),
                (
                    json!({"__name__": "http_requests_total", "service": "payments"}),
                    counter,
                ),
            ],
            false,
            Style::Compact,
        ),
    )];
    let findings = detect(&items, &ctx());
    let spikes = all_of(&findings, Kind::MetricSpike);
    assert_eq!(spikes.len(), 1, "{findings:#?}");
    let spike = spikes[0];
    assert_eq!(spike.confidence, Confidence::High);
    assert!(!spike.verified);
    assert_starts_with(
        &spike.title(),
        "Spike in `http_p99_seconds{service=\"payments\"}`: 2.5 at",
    );
    assert_eq!(spike.resource().as_deref(), Some("payments"));
    assert_contains(&spike.refs[1].quote, "\"2.5\"");
    for shape in [Kind::MemoryGrowth, Kind::CpuThrottling, Kind::RestartTrend] {
        assert!(!has(&findings, shape), "{findings:#?}");
    }
}
