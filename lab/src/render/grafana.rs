//! mcp-grafana's Loki and Tempo tools (`query_loki_logs`, `search_tempo_traces`): the
//! scenario's log streams and traces as JSON. The shapes are approximated; no Grafana server
//! could be run to record them.
//!
//! Logs: a stream (`log_streams[]`, or a node's journal: `streams`) answers a query equal to
//! its `query` (lines as written) or whose stream selector matches its `labels` (lines through
//! the query's line filters); lines of every answering stream merge in time order, then the
//! window, direction and limit apply.
//! Traces: the TraceQL conditions (`traceql`), the window, newest first, the limit.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::Rendered;
use super::args::{required, squash, str_arg, time_arg};
use super::logql::LogQuery;
use super::objects::k8s_hash;
use super::streams::streams;
use super::traceql::TraceQuery;
use crate::scenario::{Scenario, TraceSpec, TraceStatus};

fn nanos(at: DateTime<Utc>) -> String {
    at.timestamp_nanos_opt().unwrap_or_default().to_string()
}

/// `query_loki_logs` {datasourceUid, logql, startRfc3339, endRfc3339, limit, direction}.
pub fn query_loki_logs(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let logql = required(args, "logql")?;
    let start = time_arg(args, "startRfc3339")?;
    let end = time_arg(args, "endRfc3339")?;
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(10)
        .min(100) as usize;
    let forward = str_arg(args, "direction") == Some("forward");
    let wanted = squash(logql);
    let parsed = LogQuery::parse(logql);
    let mut entries: Vec<(DateTime<Utc>, Value)> = Vec::new();
    for stream in streams(&scenario.spec) {
        let exact = stream.query.is_some_and(|q| squash(q) == wanted);
        let selected =
            !stream.labels.is_empty() && parsed.as_ref().is_some_and(|q| q.selects(&stream.labels));
        if !exact && !selected {
            continue;
        }
        for (at, line) in &stream.lines {
            let at = scenario.time(*at);
            if start.is_some_and(|s| at < s) || end.is_some_and(|e| at > e) {
                continue;
            }
            // A query written for the stream gets its lines as written.
            if !exact && parsed.as_ref().is_some_and(|q| !q.keeps(line)) {
                continue;
            }
            entries.push((
                at,
                json!({"timestamp": nanos(at), "line": line, "labels": stream.labels}),
            ));
        }
    }
    entries.sort_by_key(|(at, _)| *at);
    if !forward {
        entries.reverse();
    }
    entries.truncate(limit);
    Ok(Value::Array(entries.into_iter().map(|(_, v)| v).collect()).to_string())
}

/// A trace's spans, slowest first (the root alone when it lists none).
fn spans(scenario: &Scenario, trace: &TraceSpec) -> Vec<Value> {
    let start = nanos(scenario.time(trace.start));
    let span_id = |name: &str| k8s_hash(&format!("{}/{name}", trace.trace_id), 16);
    let span =
        |name: &str, service: &str, duration_ms: u64, status: TraceStatus, parent: Option<&str>| {
            let mut m = Map::new();
            m.insert("spanID".into(), json!(span_id(name)));
            if let Some(parent) = parent {
                m.insert("parentSpanID".into(), json!(span_id(parent)));
            }
            m.insert("name".into(), json!(name));
            m.insert("serviceName".into(), json!(service));
            m.insert("durationMs".into(), json!(duration_ms));
            m.insert(
                "durationNanos".into(),
                json!((duration_ms * 1_000_000).to_string()),
            );
            m.insert("startTimeUnixNano".into(), json!(start));
            m.insert("status".into(), json!(status.as_str()));
            (duration_ms, Value::Object(m))
        };
    let mut list: Vec<(u64, Value)> = if trace.spans.is_empty() {
        vec![span(
            &trace.root_name,
            &trace.service,
            trace.duration_ms,
            trace.status(),
            None,
        )]
    } else {
        trace
            .spans
            .iter()
            .map(|s| {
                span(
                    &s.name,
                    s.service.as_deref().unwrap_or(&trace.service),
                    s.duration_ms,
                    s.status,
                    s.parent.as_deref(),
                )
            })
            .collect()
    };
    list.sort_by_key(|(duration, _)| std::cmp::Reverse(*duration));
    list.into_iter().map(|(_, v)| v).collect()
}

/// `search_tempo_traces` {datasourceUid, query, start, end, limit}.
pub fn search_tempo_traces(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let query = TraceQuery::parse(required(args, "query")?);
    let start = time_arg(args, "start")?;
    let end = time_arg(args, "end")?;
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map(|l| l as usize);
    let mut traces: Vec<&TraceSpec> = scenario
        .spec
        .traces
        .iter()
        .filter(|t| query.matches(t))
        .filter(|t| {
            let at = scenario.time(t.start);
            !(start.is_some_and(|s| at < s) || end.is_some_and(|e| at > e))
        })
        .collect();
    traces.sort_by_key(|t| std::cmp::Reverse(scenario.time(t.start)));
    traces.truncate(limit.unwrap_or(usize::MAX));
    let traces: Vec<Value> = traces
        .into_iter()
        .map(|t| {
            let spans = spans(scenario, t);
            json!({
                "traceID": t.trace_id,
                "rootServiceName": t.service,
                "rootTraceName": t.root_name,
                "startTimeUnixNano": nanos(scenario.time(t.start)),
                "durationMs": t.duration_ms,
                "status": t.status().as_str(),
                "spanSet": {"matched": spans.len(), "spans": spans},
            })
        })
        .collect();
    Ok(json!({"traces": traces}).to_string())
}
