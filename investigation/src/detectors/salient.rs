//! The strongest evidence when nothing else explains it: fatal and error lines the applications
//! logged (container logs, Loki), Warning events the cluster recorded, and the slowest span of
//! slow or failing traces. None of these is a verified cause on its own (application text is
//! untrusted, a warning may be noise), so every finding here is unverified; the report lists
//! them verbatim as observations and hypotheses when no detector confirmed a cause, so it never
//! says "nothing wrong" while its evidence holds an error.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::text::{
    LogLevel, is_application_log, is_tool_error_line, log_level, log_lines, looks_like_injection,
    object_name, quote_line,
};
use super::{Confidence, DetectionContext, DetectorKind, Finding, cite};
use crate::evidence::{Capability, Evidence};

/// Error lines kept per evidence item.
const LINES_PER_LOG: usize = 2;
/// Warning events kept per evidence item.
const WARNINGS_PER_LIST: usize = 3;

static STRONG_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(panic:|fatal error:|Exception in thread)|\b(Traceback \(most recent call last\)|\w+(?:Exception|Error)\b:)")
        .expect("static regex")
});
static WARNING_EVENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bWarning\b").expect("static regex"));
/// Event reasons that are routine during any rollout or restart, not evidence of a fault.
const ROUTINE_REASONS: &[&str] = &["BackOff", "Unhealthy", "Killing", "Pulling", "Pulled"];

/// Salient findings over all evidence of the round.
pub(super) fn detect(evidence: &[Evidence], ctx: &DetectionContext) -> Vec<Finding> {
    let mut out = Vec::new();
    for item in evidence {
        if is_application_log(item) {
            out.extend(error_lines(item, ctx));
        } else if item.capability == Capability::Events {
            out.extend(warning_events(item, ctx));
        } else if item.capability == Capability::TraceSearch {
            out.extend(slowest_span(item, ctx));
        }
    }
    out
}

fn unverified(
    detector: DetectorKind,
    title: String,
    detail: String,
    confidence: Confidence,
    resource: Option<String>,
) -> Finding {
    Finding {
        detector,
        title,
        detail,
        confidence,
        verified: false,
        resource,
        refs: Vec::new(),
        at: None,
    }
}

/// The most severe error lines of a log: fatal before error, the last occurrences first.
fn error_lines(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let lines = log_lines(evidence);
    let mut candidates: Vec<(u8, &str)> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !is_tool_error_line(l) && !looks_like_injection(l))
        .filter_map(|l| {
            let level = log_level(l);
            let rank = match level {
                Some(LogLevel::Fatal) => 3,
                Some(LogLevel::Error) => 2,
                None if STRONG_ERROR.is_match(l) => 2,
                _ => return None,
            };
            Some((rank, l))
        })
        .collect();
    if candidates.is_empty() {
        // No error at all: a warning the process keeps repeating (waiting on a lock, retrying
        // a dependency) is what it is stuck on.
        candidates = repeated_warning(&lines)
            .map(|line| vec![(1, line)])
            .unwrap_or_default();
    }
    if candidates.is_empty() {
        return Vec::new();
    }
    // Most severe first; among equals the latest (a process's last words come last).
    candidates.reverse();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    let source = match evidence.capability {
        Capability::LogQuery => "the log store".to_string(),
        _ => object_name(evidence)
            .or_else(|| ctx.default_resource.clone())
            .map_or("a container log".to_string(), |p| format!("`{p}`'s log")),
    };
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (rank, line) in candidates {
        let quote = quote_line(line);
        let key = normalise(&quote);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let mut finding = unverified(
            DetectorKind::ErrorLine,
            format!(
                "{} in {source}: `{}`",
                match rank {
                    3 => "Fatal error",
                    2 => "Error",
                    _ => "Repeated warning",
                },
                message_of(line)
            ),
            format!(
                "{source} logged an error around the alert: it may explain the alert, or be noise."
            ),
            if rank == 3 {
                Confidence::Medium
            } else {
                Confidence::Low
            },
            object_name(evidence).or_else(|| ctx.default_resource.clone()),
        );
        finding.refs.push(cite(evidence, quote));
        out.push(finding);
        if out.len() == LINES_PER_LOG {
            break;
        }
    }
    out
}

/// The last of the warning lines that repeat most (at least three times, ignoring numbers and
/// times).
fn repeated_warning<'a>(lines: &[&'a str]) -> Option<&'a str> {
    let warnings: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| log_level(l) == Some(LogLevel::Warn) && !looks_like_injection(l))
        .collect();
    let mut best: Option<(usize, &str)> = None;
    for line in &warnings {
        let key = normalise(line);
        let count = warnings.iter().filter(|l| normalise(l) == key).count();
        if count >= 3 && best.is_none_or(|(n, _)| count >= n) {
            best = Some((count, line));
        }
    }
    best.map(|(_, line)| line)
}

/// The message of a log line: what follows its level word (timestamps, thread and logger names
/// dropped), at most 120 characters.
fn message_of(line: &str) -> String {
    static LEVEL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:FATAL|CRITICAL|ERROR|ERR|SEVERE|WARN|WARNING|PANIC)\b\s*")
            .expect("static regex")
    });
    let rest = LEVEL.find(line).map_or(line, |m| &line[m.end()..]);
    let rest = rest
        .split_once(" : ")
        .map_or(rest, |(_, message)| message)
        .trim();
    firstline_model::text::clip(&rest.replace('`', "'"), 120, "…")
}

/// Lines of the same error differing only in numbers, ids and times count once.
fn normalise(line: &str) -> String {
    line.chars()
        .filter(|c| c.is_alphabetic() || c.is_whitespace())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Warning events, by reason, skipping the routine ones.
fn warning_events(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let lines: Vec<&str> = evidence.excerpt.lines().collect();
    let mut out: Vec<Finding> = Vec::new();
    for block in event_blocks(&lines) {
        let block_text = block.join("\n");
        let is_warning = block.iter().any(|l| {
            l.trim_start()
                .trim_start_matches("- ")
                .starts_with("Type: Warning")
                || l.trim_start().starts_with("type: Warning")
        }) || (block.len() == 1 && WARNING_EVENT.is_match(block[0]));
        if !is_warning || looks_like_injection(&block_text) {
            continue;
        }
        let field = |key: &str| {
            block.iter().find_map(|l| {
                let t = l.trim_start().trim_start_matches("- ");
                t.strip_prefix(key)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(|v| (v.trim(), *l))
            })
        };
        let reason = field("Reason").or_else(|| field("reason"));
        let message = field("Message").or_else(|| field("message"));
        let object = field("Name")
            .or_else(|| field("name"))
            .map(|(v, _)| v.to_string());
        let Some((reason, reason_line)) = reason else {
            continue;
        };
        if ROUTINE_REASONS.contains(&reason)
            || out.iter().any(|f| f.title.contains(&format!("`{reason}`")))
        {
            continue;
        }
        let resource = object.clone().or_else(|| ctx.default_resource.clone());
        let mut finding = unverified(
            DetectorKind::WarningEvent,
            format!(
                "Warning event `{reason}`{}",
                object
                    .as_deref()
                    .map(|o| format!(" on `{o}`"))
                    .unwrap_or_default()
            ),
            message.map_or_else(
                || format!("Kubernetes recorded a `{reason}` warning."),
                |(m, _)| format!("Kubernetes recorded a `{reason}` warning: {m}"),
            ),
            Confidence::Low,
            resource,
        );
        let quote_source = message.map_or(reason_line, |(_, line)| line);
        finding.refs.push(cite(evidence, quote_line(quote_source)));
        out.push(finding);
        if out.len() == WARNINGS_PER_LIST {
            break;
        }
    }
    out
}

/// An event list split into one block of lines per event (YAML list items), or one line per
/// event for a table.
fn event_blocks<'a>(lines: &[&'a str]) -> Vec<Vec<&'a str>> {
    let item_indent = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| l.len() - l.trim_start().len())
        .min();
    let Some(indent) = item_indent else {
        return lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| vec![*l])
            .collect();
    };
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in lines {
        if line.len() - line.trim_start().len() == indent && line.trim_start().starts_with("- ") {
            blocks.push(Vec::new());
        }
        if let Some(block) = blocks.last_mut() {
            block.push(line);
        }
    }
    blocks
}

/// The span that took most of the slowest trace, from a trace search.
/// Where one trace spends its time: the span found by descending from the root into the child
/// that holds most of its parent's time, as long as it holds at least half of it (a SELECT
/// inside a reservation call inside a checkout). Without parent ids (Tempo's search returns the
/// matched spans only), the longest span other than the root.
struct Dominant<'a> {
    name: &'a str,
    service: Option<&'a str>,
    span_ms: f64,
    total_ms: f64,
}

fn duration_ms(v: &Value) -> f64 {
    v.get("durationMs")
        .or_else(|| v.get("duration_ms"))
        .and_then(Value::as_f64)
        .or_else(|| {
            let nanos = v.get("durationNanos")?;
            nanos
                .as_f64()
                .or_else(|| nanos.as_str().and_then(|n| n.parse::<f64>().ok()))
                .map(|n| n / 1e6)
        })
        .unwrap_or(0.0)
}

fn dominant_span(trace: &Value) -> Option<Dominant<'_>> {
    let total = duration_ms(trace);
    let spans: Vec<&Value> = trace
        .pointer("/spanSet/spans")
        .or_else(|| trace.get("spans"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    fn id(s: &Value) -> Option<&str> {
        s.get("spanID").and_then(Value::as_str)
    }
    fn parent(s: &Value) -> Option<&str> {
        s.get("parentSpanID").and_then(Value::as_str)
    }
    let root_name = trace.get("rootTraceName").and_then(Value::as_str);
    let has_tree = spans.iter().any(|s| parent(s).is_some());
    let chosen = if has_tree {
        let root = *spans.iter().find(|s| parent(s).is_none())?;
        let mut node = root;
        // Bounded by the number of spans: each step goes one level down.
        for _ in 0..spans.len() {
            let Some(child) = spans
                .iter()
                .filter(|s| parent(s).is_some() && parent(s) == id(node))
                .max_by(|a, b| duration_ms(a).total_cmp(&duration_ms(b)))
            else {
                break;
            };
            if duration_ms(child) < 0.5 * duration_ms(node) {
                break;
            }
            node = *child;
        }
        // No child holds half of the root's time: the request itself is no "slowest span",
        // even when the trace does not name its root.
        if std::ptr::eq(node, root) {
            return None;
        }
        node
    } else {
        *spans
            .iter()
            .filter(|s| s.get("name").and_then(Value::as_str) != root_name)
            .max_by(|a, b| duration_ms(a).total_cmp(&duration_ms(b)))?
    };
    let name = chosen.get("name").and_then(Value::as_str)?;
    (Some(name) != root_name || !has_tree).then_some(())?;
    Some(Dominant {
        name,
        service: chosen
            .get("service")
            .or_else(|| chosen.get("serviceName"))
            .and_then(Value::as_str),
        span_ms: duration_ms(chosen),
        total_ms: total,
    })
}

/// The span the slowest traces spend their time in. Traces are timings the tracing system
/// recorded, not claims an application wrote, so when the same span dominates two or more of
/// the slow traces under a latency or error alert it is verified at medium confidence; one
/// trace alone is a lead.
fn slowest_span(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let Ok(value) = serde_json::from_str::<Value>(evidence.excerpt.trim()) else {
        return Vec::new();
    };
    let traces: Vec<&Value> = value
        .get("traces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let Some(slowest) = traces
        .iter()
        .max_by(|a, b| duration_ms(a).total_cmp(&duration_ms(b)))
    else {
        return Vec::new();
    };
    let Some(top) = dominant_span(slowest) else {
        return Vec::new();
    };
    if top.total_ms <= 0.0 || top.span_ms / top.total_ms < 0.5 {
        return Vec::new();
    }
    // The slow traces: at least half as slow as the slowest.
    let slow: Vec<&&Value> = traces
        .iter()
        .filter(|t| duration_ms(t) >= 0.5 * top.total_ms)
        .collect();
    let agreeing = slow
        .iter()
        .filter(|t| {
            dominant_span(t).is_some_and(|d| d.name == top.name && d.service == top.service)
        })
        .count();
    // Cite the span's own name as it appears in the JSON text.
    let needle = format!("\"{}\"", top.name);
    let Some(start) = evidence.excerpt.find(&needle) else {
        return Vec::new();
    };
    let quote = evidence.excerpt[start..start + needle.len()].to_string();
    let failing = traces
        .iter()
        .filter(|t| t.get("status").and_then(Value::as_str) == Some("error"))
        .count();
    let in_service = top
        .service
        .map(|s| format!(" in `{s}`"))
        .unwrap_or_default();
    // The excerpt keeps the slowest traces and counts the faster ones it left out.
    let left_out = value
        .get("omitted")
        .and_then(Value::as_str)
        .and_then(|o| o.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let corroborated = ctx.service_level && agreeing >= 2;
    let mut finding = unverified(
        DetectorKind::SlowSpan,
        format!(
            "Slowest span: `{}`{in_service} took {:.1} s of a {:.1} s request",
            top.name,
            top.span_ms / 1000.0,
            top.total_ms / 1000.0
        ),
        format!(
            "In the slowest of {} traces searched{}, `{}`{in_service} took {:.0} % of the \
             request's time, and it is where {agreeing} of the {} slow traces spend most of \
             theirs: the latency is spent there.",
            traces.len() + left_out,
            if failing > 0 {
                format!(" ({failing} failing)")
            } else {
                String::new()
            },
            top.name,
            top.span_ms / top.total_ms * 100.0,
            slow.len()
        ),
        Confidence::Medium,
        top.service
            .map(str::to_string)
            .or_else(|| ctx.default_resource.clone()),
    );
    finding.verified = corroborated;
    finding.refs.push(cite(evidence, quote));
    vec![finding]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::EvidenceId;

    fn evidence(capability: Capability, text: &str) -> Evidence {
        Evidence::new(
            EvidenceId::new(1).expect("E1"),
            capability,
            "lab",
            "tool",
            serde_json::json!({"name": "api-1"}),
            text,
            chrono::Utc::now(),
        )
    }

    #[test]
    fn the_most_severe_and_latest_error_lines_come_first() {
        let log = "INFO starting\nERROR db: timeout after 30s\nINFO retrying\nERROR db: timeout after 31s\nFATAL cannot load key store\n";
        let found = detect(
            &[evidence(Capability::PodLogsCurrent, log)],
            &DetectionContext::default(),
        );
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].refs[0].quote, "FATAL cannot load key store");
        assert!(
            found[0].title.ends_with("`cannot load key store`"),
            "{}",
            found[0].title
        );
        assert_eq!(found[1].refs[0].quote, "ERROR db: timeout after 31s");
        assert!(found.iter().all(|f| !f.verified));
    }

    #[test]
    fn warning_events_are_listed_by_reason_and_routine_ones_skipped() {
        let events = "# The following events (YAML format) were found:\n- InvolvedObject:\n    Kind: Pod\n    Name: api-1\n  Message: Back-off restarting failed container\n  Reason: BackOff\n  Type: Warning\n- InvolvedObject:\n    Kind: PersistentVolumeClaim\n    Name: data-0\n  Message: 'waiting for first consumer'\n  Reason: FailedBinding\n  Type: Warning\n- InvolvedObject:\n    Kind: Pod\n    Name: api-1\n  Message: Started container\n  Reason: Started\n  Type: Normal\n";
        let found = detect(
            &[evidence(Capability::Events, events)],
            &DetectionContext::default(),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].title, "Warning event `FailedBinding` on `data-0`");
        assert_eq!(
            found[0].refs[0].quote,
            "Message: 'waiting for first consumer'"
        );
    }

    #[test]
    fn a_span_taking_most_of_the_slowest_trace_is_named() {
        let traces = r#"{"traces":[{"traceID":"a1","rootServiceName":"checkout","rootTraceName":"POST /checkout","durationMs":5000,"spanSet":{"spans":[{"name":"POST /checkout","service":"checkout","durationMs":5000},{"name":"SELECT orders","service":"orders-db","durationMs":4700}]}},{"traceID":"b2","durationMs":120,"spanSet":{"spans":[]}}]}"#;
        let found = detect(
            &[evidence(Capability::TraceSearch, traces)],
            &DetectionContext::default(),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].title.contains("SELECT orders") && found[0].title.contains("orders-db"));
        assert_eq!(found[0].refs[0].quote, "\"SELECT orders\"");
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

    fn service_level() -> DetectionContext {
        DetectionContext {
            service_level: true,
            ..DetectionContext::default()
        }
    }

    #[test]
    fn the_dominant_span_is_found_by_descending_the_parent_tree() {
        let text = traces(&[checkout_trace("a1", 5000, millis)]);
        let found = slowest_span(
            &evidence(Capability::TraceSearch, &text),
            &DetectionContext::default(),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        // Not the longest span other than the root (`reserve stock`): the query inside it.
        assert_eq!(
            found[0].title,
            "Slowest span: `SELECT stock` in `inventory-db` took 4.6 s of a 5.0 s request"
        );
        assert_eq!(found[0].resource.as_deref(), Some("inventory-db"));
        assert_eq!(found[0].refs[0].quote, "\"SELECT stock\"");
        assert!(
            found[0].detail.contains("(1 failing)"),
            "{}",
            found[0].detail
        );
    }

    #[test]
    fn span_durations_may_come_in_nanoseconds() {
        let nanos = |d: u64| format!(r#""durationNanos":"{}""#, d * 1_000_000);
        let text = traces(&[checkout_trace("a1", 5000, nanos)]);
        let found = slowest_span(
            &evidence(Capability::TraceSearch, &text),
            &DetectionContext::default(),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].title.starts_with("Slowest span: `SELECT stock`")
                && found[0].title.ends_with("took 4.6 s of a 5.0 s request"),
            "{}",
            found[0].title
        );
        let numeric = |d: u64| format!(r#""durationNanos":{}"#, d * 1_000_000);
        let text = traces(&[checkout_trace("a1", 5000, numeric)]);
        let found = slowest_span(
            &evidence(Capability::TraceSearch, &text),
            &DetectionContext::default(),
        );
        assert!(found[0].title.contains("took 4.6 s"), "{}", found[0].title);
    }

    #[test]
    fn the_same_span_dominating_two_slow_traces_under_a_service_alert_is_verified() {
        let text = traces(&[
            checkout_trace("a1", 5000, millis),
            checkout_trace("b2", 4200, millis),
            checkout_trace("c3", 300, millis),
        ]);
        let item = evidence(Capability::TraceSearch, &text);
        let found = slowest_span(&item, &service_level());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].verified);
        assert_eq!(found[0].confidence, Confidence::Medium);
        assert!(
            found[0].detail.contains("where 2 of the 2 slow traces"),
            "the fast trace is not a slow one: {}",
            found[0].detail
        );

        // The same traces under an alert that is not about requests: a lead.
        let found = slowest_span(&item, &DetectionContext::default());
        assert!(!found[0].verified);
    }

    #[test]
    fn one_slow_trace_alone_is_a_lead_not_a_cause() {
        let text = traces(&[
            checkout_trace("a1", 5000, millis),
            checkout_trace("c3", 300, millis),
        ]);
        let found = slowest_span(&evidence(Capability::TraceSearch, &text), &service_level());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(!found[0].verified);
        assert_eq!(found[0].confidence, Confidence::Medium);
        assert!(
            found[0].detail.contains("where 1 of the 1 slow traces"),
            "{}",
            found[0].detail
        );
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
            let found = slowest_span(&evidence(Capability::TraceSearch, text), &service_level());
            assert!(found.is_empty(), "{found:#?}");
        }
    }
}
