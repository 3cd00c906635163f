//! What the parts' tests share: evidence as the tools return it (a pod's description, its logs,
//! an event list and the events in it, a Prometheus matrix), the detectors run over it with
//! every quote checked verbatim in the evidence it cites, findings looked up by kind, their text
//! checked for what it must say, and series to build matrices from. Fixtures more than one part reads (a crash-looping pod's description, its last log)
//! live here too.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{DetectionContext, Finding, Kind, run_detectors};
use crate::evidence::{Capability, Evidence, EvidenceId, quote_occurs_in};
use crate::excerpt::{DEFAULT_EXCERPT_CHARS, excerpt};

/// The alert's pod.
pub const POD: &str = "payments-api-7d9f8c6b5-x2k4q";

pub fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("RFC 3339 time")
        .with_timezone(&Utc)
}

/// Evidence `E{n}`: the text a tool called with `args` returned, fetched at the epoch.
pub fn ev(n: u32, capability: Capability, args: Value, text: &str) -> Evidence {
    let id = EvidenceId::new(n).expect("evidence ids start at 1");
    let (server, tool) = match capability {
        Capability::MetricRange => ("prometheus", "execute_range_query"),
        Capability::TraceSearch => ("tempo", "traceql_search"),
        _ => ("kubernetes", "tool"),
    };
    Evidence::new(
        id,
        capability,
        server,
        tool,
        args,
        text,
        DateTime::<Utc>::UNIX_EPOCH,
    )
}

/// The arguments of a call about the alert's pod.
pub fn pod_args() -> Value {
    json!({"name": POD, "namespace": "default"})
}

/// The alert's pod, described.
pub fn describe(n: u32, text: &str) -> Evidence {
    ev(n, Capability::PodDescribe, pod_args(), text)
}

/// The alert's pod's previous (crashed) container's log.
pub fn previous_log(n: u32, text: &str) -> Evidence {
    ev(n, Capability::PodLogsPrevious, pod_args(), text)
}

/// The current log of `pod`.
pub fn log_of(n: u32, pod: &str, text: &str) -> Evidence {
    ev(
        n,
        Capability::PodLogsCurrent,
        json!({"name": pod, "namespace": "default"}),
        text,
    )
}

/// A Deployment's rollout history (its ReplicaSets).
pub fn history(n: u32, text: &str) -> Evidence {
    ev(n, Capability::DeployHistory, json!({}), text)
}

/// An event list (kubernetes-mcp-server's `events_list`).
pub fn events(n: u32, text: &str) -> Evidence {
    ev(n, Capability::Events, json!({}), text)
}

/// One object's YAML as an item of a list (`- ` before its first line, the rest indented).
pub fn list_item(object: &str) -> String {
    object
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("- {l}\n")
            } else {
                format!("  {l}\n")
            }
        })
        .collect()
}

/// One object as `resources_get` returns it.
pub fn object(n: u32, kind: &str, text: &str) -> Evidence {
    ev(n, Capability::ObjectGet, json!({"kind": kind}), text)
}

/// A range query's answer, bounded as the round bounds every excerpt (a long range is
/// thinned).
pub fn metric(n: u32, query: &str, text: &str) -> Evidence {
    ev(
        n,
        Capability::MetricRange,
        json!({"query": query, "step": "300s"}),
        &excerpt(text, DEFAULT_EXCERPT_CHARS, 2),
    )
}

/// `evidence` as a round fetched it at `at` (RFC 3339): what a part dates from the time of the
/// call (an event's age, how long a container has run) counts back from there.
pub fn fetched_at(at: &str, evidence: impl IntoIterator<Item = Evidence>) -> Vec<Evidence> {
    let at = utc(at);
    evidence
        .into_iter()
        .map(|e| Evidence {
            fetched_at: at,
            ..e
        })
        .collect()
}

/// One event as kubernetes-mcp-server's `events_list` writes it: a `kind` (`Normal`,
/// `Warning`) event for `reason` about `object` (`Kind/name`) in `namespace`, at `at` on
/// 2025-03-04 (`13:58:00`, UTC). `message` stands as written (quoted as YAML needs, or not).
pub fn event(
    kind: &str,
    reason: &str,
    object: &str,
    namespace: &str,
    message: &str,
    at: &str,
) -> String {
    let (object_kind, name) = object.split_once('/').expect("Kind/name");
    let api_version = match object_kind {
        "Deployment" | "ReplicaSet" => "apps/v1",
        _ => "v1",
    };
    format!(
        "- InvolvedObject:\n    Kind: {object_kind}\n    Name: {name}\n    apiVersion: {api_version}\n  \
         Message: {message}\n  Namespace: {namespace}\n  Reason: {reason}\n  \
         Timestamp: 2025-03-04 {at} +0000 UTC\n  Type: {kind}\n"
    )
}

/// The text of an `events_list` answer holding `items` (each an [`event`]).
pub fn event_list(items: &[String]) -> String {
    format!(
        "# The following events (YAML format) were found:\n{}",
        items.concat()
    )
}

/// One event in the shorter form some servers list (no time, no namespace): a `kind` event for
/// `reason` about `object` (`Kind/name`), `message` as written.
pub fn short_event(kind: &str, reason: &str, object: &str, message: &str) -> String {
    let (object_kind, name) = object.split_once('/').expect("Kind/name");
    format!(
        "- InvolvedObject:\n    Kind: {object_kind}\n    Name: {name}\n  Message: {message}\n  \
         Reason: {reason}\n  Type: {kind}\n"
    )
}

/// The kubelet's warning that it evicted the alert's pod, `message` as written.
pub fn evicted(message: &str) -> String {
    short_event("Warning", "Evicted", &format!("Pod/{POD}"), message)
}

/// The ReplicaSet controller's event about Deployment `shipment-api` (namespace `fulfilment`),
/// at `at`.
pub fn scaled(message: &str, at: &str) -> String {
    event(
        "Normal",
        "ScalingReplicaSet",
        "Deployment/shipment-api",
        "fulfilment",
        message,
        at,
    )
}

/// Deployment `shipment-api` scaled up from 4 to 12 replicas from 13:40 on: its new ReplicaSet
/// to 3 and then 12, the old one down to 0.
pub fn shipment_api_scale_up() -> String {
    event_list(&[
        scaled(
            "Scaled up replica set shipment-api-6c9f8d7b5 to 3",
            "13:40:00",
        ),
        scaled(
            "Scaled up replica set shipment-api-6c9f8d7b5 to 12 from 3",
            "13:41:00",
        ),
        scaled(
            "Scaled down replica set shipment-api-5b8c7d6f4 to 0 from 4",
            "13:42:00",
        ),
    ])
}

/// A container status's `terminated` block (under `state` or `lastState`) as `resources_get`
/// writes a pod's: exited with `exit_code` for `reason`, having run from `started` to
/// `finished`.
pub fn terminated(exit_code: u32, reason: &str, started: &str, finished: &str) -> String {
    format!(
        "      terminated:\n        exitCode: {exit_code}\n        finishedAt: \"{finished}\"\n        \
         reason: {reason}\n        startedAt: \"{started}\"\n"
    )
}

/// `kubectl describe pod` of `name`, whose one container, `container`, shows `lines`.
pub fn described(name: &str, container: &str, lines: &str) -> String {
    format!("Name:             {name}\nContainers:\n  {container}:\n{lines}")
}

/// An alert about the pod, with no start time.
pub fn ctx() -> DetectionContext {
    DetectionContext {
        default_resource: Some(POD.into()),
        ..DetectionContext::default()
    }
}

/// An alert about the pod's requests (error rate, latency).
pub fn service_level() -> DetectionContext {
    DetectionContext {
        service_level: true,
        ..ctx()
    }
}

/// An alert about the pod that started at `start`.
pub fn alert_at(start: &str) -> DetectionContext {
    DetectionContext {
        alert_start: Some(utc(start)),
        ..ctx()
    }
}

/// Runs every part and checks what every finding must satisfy: it cites something, and each
/// quote is a verbatim substring of the cited evidence's excerpt (so the judge's check passes).
pub fn detect(evidence: &[Evidence], ctx: &DetectionContext) -> Vec<Finding> {
    let findings = run_detectors(evidence, ctx);
    assert_verbatim(&findings, evidence);
    findings
}

/// Every finding cites, and every quote is verbatim in the evidence it names.
pub fn assert_verbatim(findings: &[Finding], evidence: &[Evidence]) {
    for finding in findings {
        assert!(!finding.refs.is_empty(), "no refs: {}", finding.title());
        for citation in &finding.refs {
            let cited = evidence
                .iter()
                .find(|e| e.id == citation.evidence)
                .unwrap_or_else(|| {
                    panic!("{} cites a missing {}", finding.title(), citation.evidence)
                });
            assert!(
                cited.excerpt.contains(&citation.quote)
                    && quote_occurs_in(&citation.quote, &cited.excerpt),
                "quote {:?} is not verbatim in {}",
                citation.quote,
                citation.evidence
            );
        }
    }
}

/// The first (highest-ranked) finding of `kind`.
pub fn find(findings: &[Finding], kind: Kind) -> &Finding {
    findings
        .iter()
        .find(|f| f.kind() == kind)
        .unwrap_or_else(|| panic!("no {kind} finding in {findings:#?}"))
}

/// Runs every part over `evidence` under an alert about the pod ([`detect`] with [`ctx`]): its
/// first finding of `kind`.
pub fn detect_kind(evidence: &[Evidence], kind: Kind) -> Finding {
    find(&detect(evidence, &ctx()), kind).clone()
}

pub fn has(findings: &[Finding], kind: Kind) -> bool {
    findings.iter().any(|f| f.kind() == kind)
}

pub fn all_of(findings: &[Finding], kind: Kind) -> Vec<&Finding> {
    findings.iter().filter(|f| f.kind() == kind).collect()
}

/// The finding of `kind` whose title is `title`.
pub fn titled<'a>(findings: &'a [Finding], kind: Kind, title: &str) -> &'a Finding {
    findings
        .iter()
        .find(|f| f.kind() == kind && f.title() == title)
        .unwrap_or_else(|| panic!("no {kind} titled {title:?} in {findings:#?}"))
}

/// Asserts that `text` contains `part`.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is not in {text:?}");
}

/// Asserts that `text` starts with `start`.
#[track_caller]
pub fn assert_starts_with(text: &str, start: &str) {
    assert!(
        text.starts_with(start),
        "{text:?} does not start with {start:?}"
    );
}

/// Asserts that `text` ends with `end`.
#[track_caller]
pub fn assert_ends_with(text: &str, end: &str) {
    assert!(text.ends_with(end), "{text:?} does not end with {end:?}");
}

/// The finding's quotes, in order.
pub fn quotes(finding: &Finding) -> Vec<&str> {
    finding.refs.iter().map(|c| c.quote.as_str()).collect()
}

/// What a report shows of a quote: its first 200 characters.
pub fn shown(quote: &str) -> String {
    quote.chars().take(200).collect()
}

/// Everything a finding says: title, detail and quotes.
pub fn all_text(finding: &Finding) -> String {
    format!(
        "{}\n{}\n{}",
        finding.title(),
        finding.detail(),
        quotes(finding).join("\n")
    )
}

// ---------------------------------------------------------------------------------------------
// A pod crash-looping on a configuration error (exit 78), and what its last container logged

pub const DESCRIBE_EXIT_78: &str = "\
Name:             payments-api-7d9f8c6b5-x2k4q
Containers:
  api:
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    78
    Restart Count:  5
";

pub const PREVIOUS_LOG_78: &str = "\
2025-03-04T14:02:01.204Z INFO  starting payments-api 2.4.1 (commit 9f3c2ab)
2025-03-04T14:02:01.219Z WARN  deprecated flag --legacy-ledger ignored
2025-03-04T14:02:01.830Z INFO  loading configuration from /etc/payments
2025-03-04T14:02:02.011Z INFO  ledger endpoint ledger.payments.svc:9090
2025-03-04T14:02:02.012Z ERROR config: required key PAYMENT_MODE is not set
2025-03-04T14:02:02.013Z INFO  shutting down
";

/// A pod whose container was OOMKilled and now backs off, as `kubectl describe` prints it.
pub const DESCRIBE_OOM: &str = "\
Name:             payments-api-7d9f8c6b5-x2k4q
Namespace:        default
Priority:         0
Node:             worker-eu-1a-2/10.0.12.7
Status:           Running
Controlled By:    ReplicaSet/payments-api-7d9f8c6b5
Containers:
  api:
    Container ID:   containerd://5c1e0a4b
    Image:          registry/payments:2.4.1
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Ready:          False
    Restart Count:  12
    Limits:
      memory:  256Mi
Events:
  Type     Reason   Age                  From     Message
  ----     ------   ----                 ----     -------
  Warning  BackOff  2m (x40 over 30m)    kubelet  Back-off restarting failed container api in pod payments-api-7d9f8c6b5-x2k4q_default(abc)
";

// ---------------------------------------------------------------------------------------------
// Metric series

pub const MIB: f64 = 1024.0 * 1024.0;
/// 2025-03-03T11:06:40Z.
pub const T0: f64 = 1_741_000_000.0;

/// Deterministic noise in −1..1.
pub fn jitter(i: usize) -> f64 {
    let x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
    x as f64 / (1u64 << 24) as f64 * 2.0 - 1.0
}

/// `n` points `step` seconds apart from [`T0`]; `f(index, hours since the first)`.
pub fn samples(n: usize, step: f64, f: impl Fn(usize, f64) -> f64) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let t = T0 + step * i as f64;
            (t, f(i, (t - T0) / 3600.0))
        })
        .collect()
}

/// How a matrix is written.
#[derive(Clone, Copy, Debug)]
pub enum Style {
    /// `{"a":1}` as Prometheus itself writes it.
    Compact,
    /// `{"a": 1}` as Python's `json.dumps` (prometheus-mcp-server) writes it.
    Spaced,
    /// Indented, one value per line.
    Pretty,
}

/// A Prometheus range-query answer holding `series` (labels, points), under `data` with a
/// status when `envelope`.
pub fn matrix(series: &[(Value, Vec<(f64, f64)>)], envelope: bool, style: Style) -> String {
    let result: Vec<Value> = series
        .iter()
        .map(|(labels, points)| {
            let values: Vec<Value> = points
                .iter()
                .map(|(t, v)| json!([*t as i64, v.to_string()]))
                .collect();
            json!({"metric": labels, "values": values})
        })
        .collect();
    let data = json!({"resultType": "matrix", "result": result});
    let value = if envelope {
        json!({"status": "success", "data": data})
    } else {
        data
    };
    match style {
        Style::Compact => value.to_string(),
        // No label value or number in these tests holds a comma or a colon.
        Style::Spaced => value.to_string().replace(',', ", ").replace("\":", "\": "),
        Style::Pretty => serde_json::to_string_pretty(&value).expect("json"),
    }
}

/// `values` a minute apart from `start` (Unix seconds).
pub fn minutely(values: &[f64], start: f64) -> Vec<(f64, f64)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (start + 60.0 * i as f64, *v))
        .collect()
}

/// 2025-03-04T13:50:00Z.
pub const AT_1350: f64 = 1_741_096_200.0;

/// The alert's metric, `http_error_ratio{service="payments"}`, a minute apart from 13:50.
pub fn error_ratio(values: &[f64]) -> String {
    let labels = json!({"__name__": "http_error_ratio", "service": "payments"});
    matrix(&[(labels, minutely(values, AT_1350))], true, Style::Compact)
}

/// Labels of one of the alert's pod's containers' series.
pub fn container_labels(name: &str) -> Value {
    json!({
        "__name__": name,
        "namespace": "shop",
        "pod": POD,
        "container": "api",
    })
}

// ---------------------------------------------------------------------------------------------
// Objects more than one part reads

/// HorizontalPodAutoscaler `storefront-web` as `resources_get` returns it: `current` of at most
/// 10 replicas, at 96 % CPU against a target of 70 %, `ScalingLimited` when `limited`.
pub fn hpa(current: u32, limited: bool) -> String {
    let condition = if limited {
        "  - lastTransitionTime: \"2025-03-04T13:40:00Z\"
    message: the desired replica count is more than the maximum replica count
    reason: TooManyReplicas
    status: \"True\"
    type: ScalingLimited
"
    } else {
        ""
    };
    format!(
        "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: storefront-web
  namespace: shop
spec:
  maxReplicas: 10
  metrics:
  - resource:
      name: cpu
      target:
        averageUtilization: 70
        type: Utilization
    type: Resource
  minReplicas: 3
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: storefront-web
status:
  conditions:
{condition}  - lastTransitionTime: \"2025-03-01T09:00:00Z\"
    message: recommended size matches current size
    reason: ReadyForNewScale
    status: \"True\"
    type: AbleToScale
  currentMetrics:
  - resource:
      current:
        averageUtilization: 96
        averageValue: 480m
      name: cpu
    type: Resource
  currentReplicas: {current}
  desiredReplicas: {current}
"
    )
}
