//! mcp-grafana's Loki and Tempo tools (`query_loki_logs`, `search_tempo_traces`): the
//! scenario's log streams and traces as JSON. The shapes are approximated; no Grafana server
//! could be run to record them.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::Rendered;
use super::args::{required, squash, str_arg, time_arg};
use crate::scenario::Scenario;

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
    let mut entries: Vec<(DateTime<Utc>, Value)> = Vec::new();
    for stream in scenario
        .spec
        .log_streams
        .iter()
        .filter(|s| squash(&s.query) == wanted)
    {
        for line in &stream.lines {
            let at = scenario.time(line.at);
            if start.is_some_and(|s| at < s) || end.is_some_and(|e| at > e) {
                continue;
            }
            let nanos = at.timestamp_nanos_opt().unwrap_or_default();
            entries.push((
                at,
                json!({"timestamp": nanos.to_string(), "line": line.line, "labels": stream.labels}),
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

/// The service a TraceQL query filters on (`resource.service.name = "x"`), if any.
fn traceql_service(query: &str) -> Option<String> {
    let at = query.find("service.name")?;
    let rest = &query[at..];
    let open = rest.find('"')?;
    let close = rest[open + 1..].find('"')?;
    Some(rest[open + 1..open + 1 + close].to_string())
}

/// `search_tempo_traces` {datasourceUid, query, start, end}.
pub fn search_tempo_traces(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let query = required(args, "query")?;
    let start = time_arg(args, "start")?;
    let end = time_arg(args, "end")?;
    let service = traceql_service(query);
    let traces: Vec<Value> = scenario
        .spec
        .traces
        .iter()
        .filter(|t| service.as_ref().is_none_or(|s| s == &t.service))
        .filter(|t| {
            let at = scenario.time(t.start);
            !(start.is_some_and(|s| at < s) || end.is_some_and(|e| at > e))
        })
        .map(|t| {
            json!({
                "traceID": t.trace_id,
                "rootServiceName": t.service,
                "rootTraceName": t.root_name,
                "startTimeUnixNano": scenario.time(t.start).timestamp_nanos_opt().unwrap_or_default().to_string(),
                "durationMs": t.duration_ms,
            })
        })
        .collect();
    Ok(json!({"traces": traces}).to_string())
}
