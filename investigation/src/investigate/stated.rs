//! An expression for an alert that carries none and has no catalogue rule: the latency quantile
//! its words state ("p99 latency of accounts-api is 2.41s"), over the histograms the common
//! client libraries export, selected by the alert's own labels. Grafana-managed alerts rarely
//! carry their query; without one, whether the latency is still high cannot be seen.
//!
//! A simpler first version: one quantile over whichever of the known bucket names the service
//! exports (a service exporting two of them would have their buckets summed together), and
//! latency only — an error ratio has no name common enough to guess.

use std::sync::LazyLock;

use regex::Regex;

use firstline_alert::AlertTarget;

/// Request-duration histograms as the common client libraries name them (Spring, the
/// Prometheus clients, OpenTelemetry's semantic conventions old and new).
const LATENCY_BUCKETS: [&str; 4] = [
    "http_server_requests_seconds_bucket",
    "http_request_duration_seconds_bucket",
    "http_server_request_duration_seconds_bucket",
    "http_server_duration_milliseconds_bucket",
];

/// Labels that name the service on a request histogram, in the order they are tried.
const SERVICE_LABELS: [&str; 4] = ["service", "app", "job", "deployment"];

/// `p99`, `p99.9`, `p999`, `99th percentile`.
static QUANTILE: LazyLock<Regex> =
    regex!(r"(?i)\bp(\d{2,3}(?:\.\d)?)\b|\b(\d{2}(?:\.\d)?)(?:th)? percentile\b");

/// The quantile a text states, as a fraction (`p99` → 0.99, `p999` → 0.999).
fn quantile(text: &str) -> Option<f64> {
    let captures = QUANTILE.captures(text)?;
    let digits = captures.get(1).or_else(|| captures.get(2))?.as_str();
    let value: f64 = if !digits.contains('.') && digits.len() == 3 {
        // `p999` is the 99.9th percentile.
        digits.parse::<f64>().ok()? / 10.0
    } else {
        digits.parse().ok()?
    };
    // In tenths of a percent, so 99.9 reads back as 0.999 exactly.
    (value > 0.0 && value < 100.0).then_some((value * 10.0).round() / 1000.0)
}

/// The latency quantile the alert states, over its service's request histogram.
pub fn latency_expression(target: &AlertTarget) -> Option<String> {
    let words = [
        &target.alertname,
        &target.rule,
        &target.summary,
        &target.description,
    ]
    .iter()
    .filter_map(|s| s.as_deref())
    .collect::<Vec<_>>()
    .join(" ");
    let lower = words.to_ascii_lowercase();
    if !["latency", "duration", "response time"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return None;
    }
    let q = quantile(&words)?;
    let namespace = target.namespace.as_deref()?;
    let (key, service) = SERVICE_LABELS
        .iter()
        .find_map(|k| target.labels.get(*k).map(|v| (*k, v)))?;
    let quote = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!(
        "histogram_quantile({q}, sum by (le) (rate({{__name__=~\"{}\", namespace=\"{}\", {key}=\"{}\"}}[5m])))",
        LATENCY_BUCKETS.join("|"),
        quote(namespace),
        quote(service),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(rule: &str, labels: &[(&str, &str)]) -> AlertTarget {
        AlertTarget {
            rule: Some(rule.to_string()),
            namespace: Some("accounts".into()),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..AlertTarget::default()
        }
    }

    #[test]
    fn quantiles_as_written() {
        assert_eq!(quantile("p99 latency high"), Some(0.99));
        assert_eq!(quantile("P95 latency"), Some(0.95));
        assert_eq!(quantile("p999 latency"), Some(0.999));
        assert_eq!(quantile("p99.9 latency"), Some(0.999));
        assert_eq!(quantile("the 90th percentile of latency"), Some(0.9));
        assert_eq!(quantile("api5 latency"), None);
        assert_eq!(quantile("latency high"), None);
    }

    #[test]
    fn a_stated_latency_quantile_selects_the_service_by_its_own_label() {
        let t = target(
            "accounts-api p99 latency high",
            &[("service", "accounts-api"), ("team", "identity")],
        );
        let query = latency_expression(&t).expect("a p99 latency alert with a service label");
        assert!(query.starts_with("histogram_quantile(0.99, sum by (le) (rate({__name__=~\""));
        assert!(query.contains("namespace=\"accounts\", service=\"accounts-api\""));

        let by_app = target("checkout p95 latency", &[("app", "checkout")]);
        assert!(
            latency_expression(&by_app)
                .is_some_and(|q| q.contains("app=\"checkout\"") && q.contains("(0.95,"))
        );
    }

    #[test]
    fn no_expression_without_latency_a_quantile_or_a_service_label() {
        assert_eq!(
            latency_expression(&target("p99 error budget burn", &[("service", "a")])),
            None
        );
        assert_eq!(
            latency_expression(&target("accounts-api latency high", &[("service", "a")])),
            None
        );
        assert_eq!(
            latency_expression(&target("accounts-api p99 latency high", &[("team", "a")])),
            None
        );
    }
}
