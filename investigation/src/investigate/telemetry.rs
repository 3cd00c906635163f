//! Metrics, logs and traces: the alert's own expression over a window long enough to show a
//! trend, resource metrics of the pods involved when the alert or the pods point at memory, CPU
//! or restarts, and — for service-level alerts, or when no container log could be read — error
//! lines from Loki and slow or failing traces from Tempo.
//!
//! The alert's expression is the one its message carries; when it carries none, the standard
//! catalogue's rule of the same name supplies it with the alert's labels substituted, and
//! failing that the latency quantile the alert's words state (`stated.rs`). Windows:
//! 6 h by default, 48 h for memory, restarts and filling-up alerts (the catalogue says which), so
//! a leak that grew for two days does not look like a spike.

use chrono::Duration;

use crate::catalogue;
use crate::evidence::Capability;
use crate::kube;
use crate::state::IncidentState;
use crate::tools::{CapabilityRequest, EvidenceSource};
use firstline_alert::AlertTarget;

use super::InvestigateOptions;
use super::collect::Collector;
use super::found::Found;

/// Points a range query asks for: enough to show a shape, few enough that one series fits an
/// evidence excerpt (each point costs about 25 characters of the 3,500).
const POINTS: i64 = 96;
/// Default trend window, hours.
const WINDOW_HOURS: i64 = 6;
/// Window for memory and restarts, hours.
const LONG_WINDOW_HOURS: i64 = 48;
/// Window for a workload's memory across its pods and revisions, hours.
const WORKLOAD_WINDOW_HOURS: i64 = 168;
/// Error lines asked from Loki.
const LOG_LINES: u32 = 50;
/// Traces asked from Tempo.
const TRACES: u32 = 20;
/// Counters of requests served, as the common exporters name them.
const REQUEST_COUNTERS: [&str; 5] = [
    "nginx_ingress_controller_requests",
    "istio_requests_total",
    "http_requests_total",
    "http_server_requests_seconds_count",
    "http_server_request_duration_seconds_count",
];

/// Whether `pod` was created after `since` (not known: no).
fn created_after(pod: &kube::PodInfo, since: chrono::DateTime<chrono::Utc>) -> bool {
    pod.created
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.with_timezone(&chrono::Utc) > since)
}

/// Queries the alert's metric, resource metrics, Loki and Tempo, as far as they apply.
pub async fn gather<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    state: &IncidentState,
    found: &Found,
    options: &InvestigateOptions,
) {
    let target = &state.alert.target;
    let Some(anchor) = state.alert.anchor() else {
        c.skip(
            Capability::MetricRange,
            "the alert has no start time, so there is no window to query",
        );
        return;
    };
    let rule = target.alertname.as_deref().and_then(catalogue::lookup);
    let window = rule.map_or(WINDOW_HOURS, |r| i64::from(r.window_hours).max(1));
    let range = |hours: i64, query: String| CapabilityRequest::MetricRange {
        query,
        start: anchor - Duration::hours(hours),
        end: anchor + options.window_after,
        step_secs: step_secs(hours),
    };

    let expression = alert_expression(target);
    match expression {
        Some((query, whose)) => {
            // Up to now when the alert fired a while ago (at most a window later): whether
            // what it measures is back is part of the answer.
            let end = (anchor + options.window_after)
                .max(chrono::Utc::now().min(anchor + Duration::hours(window)));
            let hours = (end - (anchor - Duration::hours(window)))
                .num_hours()
                .max(1);
            c.fetch(
                CapabilityRequest::MetricRange {
                    query,
                    start: anchor - Duration::hours(window),
                    end,
                    step_secs: step_secs(hours),
                },
                format!("{whose}, over {window} h to show its shape before and since it fired"),
            )
            .await;
        }
        None => c.skip(
            Capability::MetricRange,
            "the alert message carries no expression to re-run, and no catalogue rule has its name",
        ),
    }

    // Resource metrics of the first pod inspected, when something points at them.
    let words = alert_words(state);
    if let (Some(pod), Some(namespace)) = (found.pods.first(), target.namespace.as_deref()) {
        let oom = pod.containers.iter().any(|c| {
            [&c.terminated, &c.last_terminated]
                .iter()
                .any(|t| t.as_ref().is_some_and(|(reason, _)| reason == "OOMKilled"))
        });
        let selector = format!("namespace=\"{namespace}\", pod=\"{}\"", pod.name);
        if oom || mentions(&words, &["memory", "oom", "leak"]) {
            c.fetch(
                range(
                    LONG_WINDOW_HOURS,
                    format!(
                        "sum by (container) (container_memory_working_set_bytes{{{selector}, container!=\"\", container!=\"POD\"}})"
                    ),
                ),
                "memory: how the working set grew over two days",
            )
            .await;
            c.fetch(
                range(
                    LONG_WINDOW_HOURS,
                    format!(
                        "max by (container) (kube_pod_container_resource_limits{{{selector}, resource=\"memory\"}})"
                    ),
                ),
                "memory: the limit the working set is measured against",
            )
            .await;
            // A pod younger than the window shows a climb from its own start, whichever
            // revision it runs: the workload's pods over a week show where the climb began.
            if let Some(workload) = kube::deployment_of(pod)
                && created_after(pod, anchor - Duration::hours(LONG_WINDOW_HOURS))
            {
                c.fetch(
                    range(
                        WORKLOAD_WINDOW_HOURS,
                        format!(
                            "sum by (pod) (container_memory_working_set_bytes{{namespace=\"{namespace}\", pod=~\"{workload}-[a-z0-9]+-[a-z0-9]+\", container!=\"\", container!=\"POD\"}})"
                        ),
                    ),
                    format!(
                        "memory: every pod of `{workload}` over a week (past ones too), to see \
                         whether the climb began before this pod, with an earlier revision"
                    ),
                )
                .await;
            }
        }
        if mentions(&words, &["cpu", "throttl", "latency", "slow"]) {
            c.fetch(
                range(
                    WINDOW_HOURS,
                    format!(
                        "sum by (container) (increase(container_cpu_cfs_throttled_periods_total{{{selector}, container!=\"\"}}[5m])) / sum by (container) (increase(container_cpu_cfs_periods_total{{{selector}, container!=\"\"}}[5m]))"
                    ),
                ),
                "CPU: the share of periods the container was throttled",
            )
            .await;
        }
        if pod.restarts > 0 || mentions(&words, &["restart", "crashloop", "oom"]) {
            c.fetch(
                range(
                    LONG_WINDOW_HOURS,
                    format!(
                        "sum by (container) (kube_pod_container_status_restarts_total{{{selector}}})"
                    ),
                ),
                "restarts over two days: when they began and whether they recur",
            )
            .await;
        }
    }

    // Saturation and latency: did the load itself rise? The request rate the namespace serves,
    // under the names the common exporters give it (ingress-nginx, Istio, Prometheus client
    // libraries, Spring).
    if let Some(namespace) = target.namespace.as_deref().filter(|_| {
        matches!(
            crate::detectors::alert_symptom(target),
            crate::detectors::Symptom::Saturation | crate::detectors::Symptom::Latency
        )
    }) {
        c.fetch(
            range(
                WINDOW_HOURS,
                format!(
                    "sum(rate({{__name__=~\"{}\", namespace=\"{namespace}\"}}[5m]))",
                    REQUEST_COUNTERS.join("|")
                ),
            ),
            "load: did the request rate rise before the alert?",
        )
        .await;
    }

    // The cluster DNS pod the application's lookups fail at: is it starved of CPU?
    if let Some(pod) = &found.dns_pod {
        let selector = format!(
            "namespace=\"{}\", pod=\"{}\"",
            pod.namespace.as_deref().unwrap_or("kube-system"),
            pod.name
        );
        c.fetch(
            range(
                WINDOW_HOURS,
                format!(
                    "sum by (container) (increase(container_cpu_cfs_throttled_periods_total{{{selector}, container!=\"\"}}[5m])) / sum by (container) (increase(container_cpu_cfs_periods_total{{{selector}, container!=\"\"}}[5m]))"
                ),
            ),
            "DNS lookups time out: is the cluster DNS pod CPU-throttled?",
        )
        .await;
    }

    // Logs and traces, for service-level alerts or when no container log was read.
    let service_level = crate::detectors::is_service_level(target);
    let no_container_log = !c
        .evidence
        .iter()
        .any(|e| e.capability.is_container_log() && !e.excerpt.trim().is_empty());
    let app = app_name(state, found);
    let window_start = anchor - options.window_before;
    let window_end = anchor + options.window_after;
    if service_level || no_container_log {
        let selectors: Vec<String> = match (&target.namespace, &app) {
            (Some(ns), _) => vec![format!("namespace=\"{ns}\"")],
            (None, Some(app)) => vec![format!("app=\"{app}\""), format!("service_name=\"{app}\"")],
            (None, None) => Vec::new(),
        };
        for selector in selectors {
            let text = c
                .fetch(
                    CapabilityRequest::LogQuery {
                        query: format!(
                            "{{{selector}}} |~ \"(?i)(error|fatal|panic|exception|fail|timeout|refused|denied|unauthorized|too many)\""
                        ),
                        start: window_start,
                        end: window_end,
                        limit: LOG_LINES,
                    },
                    "error lines around the alert, from the log store",
                )
                .await;
            if text.as_deref().is_some_and(has_lines) {
                break;
            }
        }
    }
    if let Some(app) = app.filter(|_| service_level) {
        c.fetch(
            CapabilityRequest::TraceSearch {
                service: app.clone(),
                start: window_start,
                end: window_end,
                limit: TRACES,
            },
            format!("slow and failing requests of `{app}`, and their slowest span"),
        )
        .await;
    }
}

/// The alert's own expression, narrowed to the alert's labels (the rule's expression covers
/// every series; the alert is about one), or the catalogue's for its name, or the latency
/// quantile its words state; with whose it is.
pub fn alert_expression(target: &AlertTarget) -> Option<(String, &'static str)> {
    let rule = target.alertname.as_deref().and_then(catalogue::lookup);
    target
        .expression
        .as_deref()
        .map(|e| {
            let narrowed = catalogue::promql::with_labels(e, &target.labels);
            (
                narrowed.unwrap_or_else(|_| e.to_string()),
                "the alert's own expression with its labels",
            )
        })
        .or_else(|| {
            rule.map(|r| {
                (
                    catalogue::expression_for(r, &target.labels),
                    "the catalogue's expression for this alert, with its labels",
                )
            })
        })
        .or_else(|| {
            super::stated::latency_expression(target).map(|q| {
                (
                    q,
                    "the latency quantile the alert states, over its service's request histogram",
                )
            })
        })
}

/// A step that keeps the query at about [`POINTS`] points, in whole minutes.
fn step_secs(hours: i64) -> u32 {
    let secs = (hours * 3600 / POINTS).max(60);
    u32::try_from(secs - secs % 60).unwrap_or(60)
}

/// The alert's name, summary and description, lower-cased, to tell what it is about.
fn alert_words(state: &IncidentState) -> String {
    let t = &state.alert.target;
    [&t.alertname, &t.rule, &t.summary, &t.description]
        .iter()
        .filter_map(|s| s.as_deref())
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

fn mentions(words: &str, any: &[&str]) -> bool {
    any.iter().any(|w| words.contains(w))
}

/// The application's name for logs and traces: the alert's service, else its workload, else
/// the `app` label of the first pod inspected.
fn app_name(state: &IncidentState, found: &Found) -> Option<String> {
    let t = &state.alert.target;
    t.service
        .clone()
        .or_else(|| t.workload.clone())
        .or_else(|| {
            found.pods.first().and_then(|p| {
                p.labels
                    .get("app")
                    .or_else(|| p.labels.get("app.kubernetes.io/name"))
                    .cloned()
            })
        })
}

/// Whether a log query's answer holds any line (JSON array with elements, or text lines).
fn has_lines(text: &str) -> bool {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(items)) => !items.is_empty(),
        Ok(_) => false,
        Err(_) => text.lines().any(|l| !l.trim().is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_keep_long_windows_within_a_few_hundred_points() {
        assert_eq!(step_secs(6), 180);
        assert_eq!(step_secs(48), 1800);
        assert!(48 * 3600 / i64::from(step_secs(48)) <= 100);
    }
}
