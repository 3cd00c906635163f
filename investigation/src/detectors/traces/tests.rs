//! Where slow requests spend their time: the span found by descending the parent tree,
//! durations in milliseconds or nanoseconds, verified when it dominates two slow traces under
//! an alert about the service's requests, and none when the time is spread.

use serde_json::json;

use super::*;
use crate::detectors::Kind;
use crate::detectors::testing::{assert_contains, assert_verbatim, ctx, detect, ev};

fn search(text: &str) -> Evidence {
    ev(
        1,
        Capability::TraceSearch,
        json!({"query": "{ status = error }"}),
        text,
    )
}

/// The finding [`slowest_span`] makes of `text`, its quotes checked.
fn slowest(text: &str, service_level: bool) -> Option<Finding> {
    let evidence = search(text);
    let found = slowest_span(&evidence, service_level);
    assert_verbatim(found.as_slice(), std::slice::from_ref(&evidence));
    found
}

#[test]
fn a_span_taking_most_of_the_slowest_trace_is_named() {
    let traces = r#"{"traces":[{"traceID":"a1","rootServiceName":"checkout","rootTraceName":"POST /checkout","durationMs":5000,"spanSet":{"spans":[{"name":"POST /checkout","service":"checkout","durationMs":5000},{"name":"SELECT orders","service":"orders-db","durationMs":4700}]}},{"traceID":"b2","durationMs":120,"spanSet":{"spans":[]}}]}"#;
    let findings = detect(&[search(traces)], &ctx());
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].kind(), Kind::SlowSpan);
    assert!(
        findings[0].title().contains("SELECT orders") && findings[0].title().contains("orders-db"),
        "{}",
        findings[0].title()
    );
    assert_eq!(findings[0].refs[0].quote, "\"SELECT orders\"");
}

/// A checkout trace: the root, a reservation call holding most of it, and under that a
/// query holding most of the call; a cache read beside the query and a short price call
/// beside the reservation. `ms(n)` writes one span's duration.
fn checkout_trace(id: &str, total: u64, ms: impl Fn(u64) -> String) -> String {
    let span = |span_id: &str, parent: Option<&str>, name: &str, service: &str, d: u64| {
        let parent = parent
            .map(|p| format!(r#""parentSpanID":"{p}","#))
            .unwrap_or_default();
        format!(
            r#"{{"spanID":"{id}-{span_id}",{parent}"name":"{name}","serviceName":"{service}",{}}}"#,
            ms(d)
        )
    };
    let p = |s: &str| format!("{id}-{s}");
    // Slowest first, as Tempo lists them, so the tree is not in order.
    let spans = [
        span("root", None, "POST /checkout", "checkout", total),
        span(
            "r",
            Some(&p("root")),
            "reserve stock",
            "inventory",
            total * 96 / 100,
        ),
        span(
            "q",
            Some(&p("r")),
            "SELECT stock",
            "inventory-db",
            total * 92 / 100,
        ),
        span(
            "c",
            Some(&p("r")),
            "GET stock cache",
            "inventory",
            total / 50,
        ),
        span("pr", Some(&p("root")), "GET /price", "pricing", total / 25),
    ];
    format!(
        r#"{{"traceID":"{id}","rootServiceName":"checkout","rootTraceName":"POST /checkout","durationMs":{total},"status":"error","spanSet":{{"spans":[{}]}}}}"#,
        spans.join(",")
    )
}

fn millis(d: u64) -> String {
    format!(r#""durationMs":{d}"#)
}

fn traces(items: &[String]) -> String {
    format!(r#"{{"traces":[{}]}}"#, items.join(","))
}

#[test]
fn the_dominant_span_is_found_by_descending_the_parent_tree() {
    let text = traces(&[checkout_trace("a1", 5000, millis)]);
    let found = slowest(&text, false).expect("a slow span");
    // Not the longest span other than the root (`reserve stock`): the query inside it.
    assert_eq!(
        found.title(),
        "Slowest span: `SELECT stock` in `inventory-db` took 4.6 s of a 5.0 s request"
    );
    assert_eq!(found.resource().as_deref(), Some("inventory-db"));
    assert_eq!(found.refs[0].quote, "\"SELECT stock\"");
    assert_contains(&found.detail(), "(1 failing)");
}

#[test]
fn span_durations_may_come_in_nanoseconds() {
    let nanos = |d: u64| format!(r#""durationNanos":"{}""#, d * 1_000_000);
    let text = traces(&[checkout_trace("a1", 5000, nanos)]);
    let found = slowest(&text, false).expect("a slow span");
    assert!(
        found.title().starts_with("Slowest span: `SELECT stock`")
            && found.title().ends_with("took 4.6 s of a 5.0 s request"),
        "{}",
        found.title()
    );
    let numeric = |d: u64| format!(r#""durationNanos":{}"#, d * 1_000_000);
    let text = traces(&[checkout_trace("a1", 5000, numeric)]);
    let found = slowest(&text, false).expect("a slow span");
    assert_contains(&found.title(), "took 4.6 s");
}

#[test]
fn the_same_span_dominating_two_slow_traces_under_a_service_alert_is_verified() {
    let text = traces(&[
        checkout_trace("a1", 5000, millis),
        checkout_trace("b2", 4200, millis),
        checkout_trace("c3", 300, millis),
    ]);
    let found = slowest(&text, true).expect("a slow span");
    assert!(found.verified);
    assert_eq!(found.confidence, Confidence::Medium);
    // The fast trace is not a slow one.
    assert_contains(&found.detail(), "where 2 of the 2 slow traces");

    // The same traces under an alert that is not about requests: a lead.
    assert!(!slowest(&text, false).expect("a slow span").verified);
}

#[test]
fn one_slow_trace_alone_is_a_lead_not_a_cause() {
    let text = traces(&[
        checkout_trace("a1", 5000, millis),
        checkout_trace("c3", 300, millis),
    ]);
    let found = slowest(&text, true).expect("a slow span");
    assert!(!found.verified);
    assert_eq!(found.confidence, Confidence::Medium);
    assert_contains(&found.detail(), "where 1 of the 1 slow traces");
}

#[test]
fn a_trace_whose_time_is_spread_over_its_children_names_no_span() {
    // No child holds half of the root's time: the request itself is not a "slowest span",
    // whether or not the trace names its root.
    let spread = r#"{"traces":[{"traceID":"a1","durationMs":5000,"spanSet":{"spans":[{"spanID":"1","name":"POST /checkout","serviceName":"checkout","durationMs":5000},{"spanID":"2","parentSpanID":"1","name":"reserve stock","serviceName":"inventory","durationMs":2000},{"spanID":"3","parentSpanID":"1","name":"charge card","serviceName":"payments","durationMs":1900}]}}]}"#;
    let named = spread.replace(
        r#""durationMs":5000,"spanSet""#,
        r#""rootTraceName":"POST /checkout","durationMs":5000,"spanSet""#,
    );
    for text in [named.as_str(), spread] {
        assert_eq!(slowest(text, true), None);
    }
}
