//! CPU throttling from the CFS counters (paired, or already per step) and from a ratio a query
//! computed; verified by the CPU limit the pod's description shows; and a throttled CoreDNS,
//! which explains the DNS lookups that time out at it.

use serde_json::{Value, json};

use super::*;
use crate::detectors::Kind;
use crate::detectors::dependencies::{Dependency, DependencyFailure};
use crate::detectors::series::shape::time;
use crate::detectors::testing::{
    Style, T0, all_of, assert_starts_with, ctx, detect, ev, find, jitter, log_of, matrix, metric,
    samples, service_level,
};

const THROTTLED: &str = "container_cpu_cfs_throttled_periods_total";
const PERIODS: &str = "container_cpu_cfs_periods_total";

fn web(name: &str) -> Value {
    json!({"__name__": name, "pod": "web-1", "container": "web"})
}

/// The two CFS counters of `web-1`, 6 h at 5 min: `throttled` and `periods` at sample `i`.
fn counters(throttled: impl Fn(usize) -> f64, periods: impl Fn(usize) -> f64) -> String {
    matrix(
        &[
            (web(THROTTLED), samples(72, 300.0, |i, _| throttled(i))),
            (web(PERIODS), samples(72, 300.0, |i, _| periods(i))),
        ],
        true,
        Style::Compact,
    )
}

#[test]
fn throttling_from_counters_and_from_an_aggregated_ratio() {
    let items = [metric(
        1,
        "",
        &counters(|i| 1000.0 + 40.0 * i as f64, |i| 2000.0 + 100.0 * i as f64),
    )];
    let findings = detect(&items, &ctx());
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let throttled = find(&findings, Kind::CpuThrottling);
    assert_eq!(
        throttled.title(),
        "Container `web` CPU-throttled: median 40 %, max 40 % of CFS periods"
    );
    assert_eq!(throttled.resource().as_deref(), Some("web-1"));
    assert!(!throttled.verified, "no CPU limit shown");

    // `sum by (pod) (rate(throttled)) / sum by (pod) (rate(periods))` has no name.
    let ratio = samples(72, 300.0, |i, _| {
        0.1 + 0.05 * jitter(i) + if i > 40 { 0.3 } else { 0.0 }
    });
    let query = "sum by (pod) (rate(container_cpu_cfs_throttled_periods_total[5m])) \
                 / sum by (pod) (rate(container_cpu_cfs_periods_total[5m]))";
    let items = [metric(
        2,
        query,
        &matrix(&[(json!({"pod": "web-1"}), ratio)], false, Style::Spaced),
    )];
    let findings = detect(&items, &ctx());
    let throttling = all_of(&findings, Kind::CpuThrottling);
    assert_eq!(throttling.len(), 1, "{findings:#?}");
    // Throttled without a break up to the last sample: a recent onset, still going on.
    let recent = throttling[0];
    assert_eq!(recent.confidence, Confidence::High);
    assert_starts_with(&recent.title(), "Pod `web-1` CPU-throttled since ");
    assert_eq!(recent.at, Some(time(T0 + 41.0 * 300.0)));
}

#[test]
fn counter_named_series_holding_per_step_values_are_divided_as_they_are() {
    // A server that matched `increase(…)`'s selectors but returned its values under the
    // counters' names: neither series rises on most steps.
    let cycle = [38.0, 42.0, 40.0, 41.0, 39.0];
    let items = [metric(
        1,
        "",
        &counters(|i| cycle[i % cycle.len()], |_| 100.0),
    )];
    let findings = detect(&items, &ctx());
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(
        findings[0].title(),
        "Container `web` CPU-throttled: median 40 %, max 42 % of CFS periods"
    );
}

#[test]
fn throttling_against_the_cpu_limit_its_description_shows_is_a_verified_cause() {
    let description = "\
Name:             web-1
Namespace:        shop
Containers:
  web:
    Image:          registry.example.com/shop/web:3.1.0
    Limits:
      cpu:     250m
      memory:  512Mi
    Requests:
      cpu:     100m
";
    let items = [
        metric(
            1,
            "",
            &counters(|i| 1000.0 + 60.0 * i as f64, |i| 2000.0 + 100.0 * i as f64),
        ),
        ev(
            2,
            Capability::PodDescribe,
            json!({"name": "web-1", "namespace": "shop"}),
            description,
        ),
    ];
    let findings = detect(&items, &ctx());
    let throttled = find(&findings, Kind::CpuThrottling);
    assert!(throttled.verified, "{throttled:#?}");
    assert!(throttled.is_verified_cause());
    assert_eq!(
        throttled.title(),
        "Container `web` CPU-throttled: median 60 %, max 60 % of CFS periods against a CPU \
         limit of 250m"
    );
    assert!(
        throttled
            .refs
            .iter()
            .any(|c| c.evidence.number() == 2 && c.quote == "cpu:     250m"),
        "{:#?}",
        throttled.refs
    );
}

// ---------------------------------------------------------------------------------------------
// DNS timeouts and a throttled CoreDNS

fn throttled(who: &str, pod: &str) -> Finding {
    Finding::new(
        CpuThrottling {
            who: who.into(),
            series: format!("{THROTTLED}{{pod=\"{pod}\"}}"),
            pod: Some(pod.into()),
            median: 0.78,
            max: 0.91,
            since: None,
            limit: None,
            words: "throttled above 25 % in 96 % of the samples".into(),
            shown: "03-04 13:00 UTC to 03-04 15:00 UTC".into(),
        },
        Confidence::High,
        false,
    )
}

fn unreachable(failure: DependencyFailure) -> Finding {
    Finding::new(
        Dependency {
            pod: Some("shipping-rates-6b8d7c5f9-abcde".into()),
            endpoint: Some("10.96.0.10:53".into()),
            failure,
            count: 2,
            says: "lookup api.carrierhub.io on 10.96.0.10:53: read udp: i/o timeout".into(),
            peer_ready: None,
            peer_namespace: None,
            node: None,
            client_side: false,
        },
        Confidence::High,
        false,
    )
}

#[test]
fn a_throttled_coredns_explains_the_dns_timeouts_and_nothing_else() {
    // Intentional change: no longer a merge of the two findings (whichever came first), but an
    // "explains" link between them.
    let coredns = throttled("Container `coredns`", "coredns-5d78c9869d-x2k4q");
    let timeouts = unreachable(DependencyFailure::DnsTimeout);
    assert!(coredns.explains(&timeouts));
    assert!(!timeouts.explains(&coredns));
    // Names that do not exist are no load on the DNS server.
    assert!(!coredns.explains(&unreachable(DependencyFailure::DnsLookup)));
    let other = Finding::new(Kind::ErrorLine.example(), Confidence::Low, false);
    assert!(!coredns.explains(&other), "the rest is untouched");

    // An application pod throttled is another story.
    let app = throttled("Container `api`", "shipping-rates-6b8d7c5f9-abcde");
    assert!(!app.explains(&timeouts));
}

#[test]
fn dns_timeouts_beside_a_throttled_coredns_are_told_as_one_story() {
    let labels = |name: &str| json!({"__name__": name, "namespace": "kube-system", "pod": "coredns-5d78c9869d-x2k4q", "container": "coredns"});
    let metrics = matrix(
        &[
            (
                labels(THROTTLED),
                samples(24, 300.0, |i, _| 1000.0 + 78.0 * i as f64),
            ),
            (
                labels(PERIODS),
                samples(24, 300.0, |i, _| 2000.0 + 100.0 * i as f64),
            ),
        ],
        true,
        Style::Compact,
    );
    let log = "time=2025-03-04T14:01:00Z level=WARN msg=\"quote failed, retrying\" err=\"dial tcp: lookup api.carrierhub.io on 10.96.0.10:53: read udp 10.244.5.23:48812->10.96.0.10:53: i/o timeout\"\n";
    let evidence = [
        metric(1, THROTTLED, &metrics),
        log_of(2, "shipping-rates-6b8d7c5f9-abcde", log),
    ];
    let findings = detect(&evidence, &service_level());
    let cpu = find(&findings, Kind::CpuThrottling);
    assert_eq!(cpu.resource().as_deref(), Some("coredns-5d78c9869d-x2k4q"));
    // Intentional change: the timeouts stay a finding of their own, which the throttling
    // explains, instead of being folded into the throttling's detail and citations.
    let dns = find(&findings, Kind::Dependency);
    assert_eq!(dns.title(), "DNS lookups time out at 10.96.0.10:53");
    assert!(
        dns.refs
            .iter()
            .any(|c| c.evidence.number() == 2 && c.quote.contains("i/o timeout")),
        "{:#?}",
        dns.refs
    );
    assert!(cpu.explains(dns));
}
