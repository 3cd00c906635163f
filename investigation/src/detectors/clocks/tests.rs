//! A node's clock off, from node-exporter's time-sync metrics for the nodes a workload runs on:
//! one node beyond the tolerance while the others are in sync is the cause; every node off
//! alike, or offsets of milliseconds, is no finding.

use crate::detectors::testing::{assert_contains, ctx, detect, find, has, metric, service_level};
use crate::detectors::{Kind, Role};

/// A Prometheus matrix of `node_timex_offset_seconds`, one series per (node, latest offset).
fn offsets(nodes: &[(&str, f64)]) -> String {
    let series: Vec<String> = nodes
        .iter()
        .map(|(node, offset)| {
            format!(
                r#"{{"metric":{{"__name__":"node_timex_offset_seconds","job":"node-exporter","node":"{node}"}},"values":[[1735689600,"0.0002"],[1735689900,"{offset}"],[1735690200,"{offset}"]]}}"#
            )
        })
        .collect();
    format!(
        r#"{{"resultType":"matrix","result":[{}]}}"#,
        series.join(",")
    )
}

const QUERY: &str = r#"node_timex_offset_seconds{node=~"a|b|c"}"#;

#[test]
fn one_node_off_while_the_others_are_in_sync_is_the_cause() {
    let evidence = [metric(
        1,
        QUERY,
        &offsets(&[
            ("worker-1c-4", 412.6),
            ("worker-1a-3", 0.0002),
            ("worker-1b-6", -0.0001),
        ]),
    )];
    let findings = detect(&evidence, &service_level());
    let skew = find(&findings, Kind::ClockSkew);
    assert!(skew.verified);
    assert_eq!(skew.role(), Role::Cause);
    assert_contains(&skew.title(), "worker-1c-4");
    assert_contains(&skew.title(), "+412.6 s");
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.kind() == Kind::ClockSkew)
            .count(),
        1
    );
}

#[test]
fn a_clock_behind_counts_too() {
    let evidence = [metric(
        1,
        QUERY,
        &offsets(&[("ip-10-8-3-77", -96.3), ("ip-10-8-1-12", 0.0001)]),
    )];
    let skew = find(&detect(&evidence, &ctx()), Kind::ClockSkew).clone();
    assert_contains(&skew.title(), "-96.3 s");
}

#[test]
fn milliseconds_of_offset_are_no_finding() {
    // Negative: every node within NTP's usual milliseconds.
    let evidence = [metric(
        1,
        QUERY,
        &offsets(&[("a", 0.004), ("b", -0.002), ("c", 0.0009)]),
    )];
    assert!(!has(&detect(&evidence, &service_level()), Kind::ClockSkew));
}

#[test]
fn every_node_off_alike_blames_no_node() {
    // Red herring: the reference is what is off, not one node.
    let evidence = [metric(
        1,
        QUERY,
        &offsets(&[("a", 30.2), ("b", 30.1), ("c", 30.3)]),
    )];
    assert!(!has(&detect(&evidence, &service_level()), Kind::ClockSkew));
}
