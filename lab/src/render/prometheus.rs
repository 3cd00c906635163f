//! prometheus-mcp-server's `execute_range_query` and `execute_query`: the scenario's metric
//! series a query selects, sampled at the query's step (a matrix) or at one instant (a vector).
//!
//! A query equal to an entry's `query` (whitespace aside) answers with those entries only, as
//! written. An alert rule's arithmetic over gauges (ratios, comparisons, `and` / `unless`,
//! aggregations, no ranges or functions) is evaluated as Prometheus would (`evaluate.rs`).
//! Otherwise the answer is leniently every series whose metric the query selects
//! (`promql::selects`), labelled with `__name__`: functions and ranges are not evaluated, the
//! raw series come back.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value, json};

use super::Rendered;
use super::args::{required, squash, time_arg};
use super::promql::{selectors, selects, series_of};
use crate::reltime::parse_offset;
use crate::scenario::{MetricSpec, Scenario};

/// Prometheus' point limit per series.
const MAX_POINTS: i64 = 11_000;

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// The series a query answers with, each with the labels it is shown with.
fn matching<'a>(scenario: &'a Scenario, query: &str) -> Vec<(Value, &'a MetricSpec)> {
    let wanted = squash(query);
    let exact: Vec<(Value, &MetricSpec)> = scenario
        .spec
        .metrics
        .iter()
        .filter(|m| m.query.as_deref().is_some_and(|q| squash(q) == wanted))
        .map(|m| (json!(m.labels), m))
        .collect();
    if !exact.is_empty() {
        return exact;
    }
    let asked = selectors(query);
    scenario
        .spec
        .metrics
        .iter()
        .filter_map(|m| {
            let (name, labels) = series_of(m)?;
            if !asked.iter().any(|s| selects(s, &name, &labels)) {
                return None;
            }
            let mut shown = json!(labels);
            shown["__name__"] = json!(name);
            Some((shown, m))
        })
        .collect()
}

/// One answered series: its labels and its (time, value) points.
type Answered = (Value, Vec<(DateTime<Utc>, f64)>);

/// The series an alert rule's arithmetic over gauges evaluates to at `times` (a ratio compared
/// to a threshold, filtered with `and` / `unless`), as Prometheus would answer it; `None` when
/// the query is not one evaluated here ([`super::evaluate`]), or an entry answers it as written.
fn evaluated(scenario: &Scenario, query: &str, times: &[DateTime<Utc>]) -> Option<Vec<Answered>> {
    let wanted = squash(query);
    if scenario
        .spec
        .metrics
        .iter()
        .any(|m| m.query.as_deref().is_some_and(|q| squash(q) == wanted))
    {
        return None;
    }
    let specs: Vec<&MetricSpec> = scenario.spec.metrics.iter().collect();
    let series: Vec<(String, BTreeMap<String, String>)> = specs
        .iter()
        .map(|m| series_of(m).unwrap_or_default())
        .collect();
    let value_at = |i: usize, t: usize| specs[i].value_at(scenario, times[t]);
    let result = super::evaluate::evaluate(query, &series, &value_at, times.len())?;
    Some(
        result
            .into_iter()
            .map(|(labels, points)| {
                let points = points.into_iter().map(|(t, v)| (times[t], v)).collect();
                (json!(labels), points)
            })
            .collect(),
    )
}

/// `execute_range_query` {query, start, end, step}.
pub fn execute_range_query(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let query = required(args, "query")?;
    let start = time_arg(args, "start")?.ok_or("failed to get required parameter `start`")?;
    let end = time_arg(args, "end")?.ok_or("failed to get required parameter `end`")?;
    let step_text = match args.get("step") {
        Some(Value::Number(n)) => format!("{n}s"),
        Some(Value::String(s)) => s.clone(),
        _ => return Err("failed to get required parameter `step`".into()),
    };
    let step = parse_offset(&step_text)
        .or_else(|| step_text.parse::<i64>().ok().map(Duration::seconds))
        .filter(|d| *d > Duration::zero())
        .ok_or_else(|| {
            format!("invalid parameter \"step\": cannot parse {step_text:?} to a valid duration")
        })?;
    if end < start {
        return Err(
            "invalid parameter \"end\": end timestamp must not be before start time".into(),
        );
    }
    if (end - start).num_milliseconds() / step.num_milliseconds().max(1) > MAX_POINTS {
        return Err("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into());
    }
    let mut times = Vec::new();
    let mut t = start;
    while t <= end {
        times.push(t);
        t += step;
    }
    if let Some(series) = evaluated(scenario, query, &times) {
        let result: Vec<Value> = series
            .into_iter()
            .map(|(labels, points)| {
                let values: Vec<Value> = points
                    .into_iter()
                    .map(|(t, v)| json!([t.timestamp(), format_value(v)]))
                    .collect();
                json!({"metric": labels, "values": values})
            })
            .collect();
        return Ok(json!({"resultType": "matrix", "result": result}).to_string());
    }
    let mut result = Vec::new();
    for (labels, metric) in matching(scenario, query) {
        let mut values = Vec::new();
        let mut t = start;
        while t <= end {
            if let Some(v) = metric.value_at(scenario, t) {
                values.push(json!([t.timestamp(), format_value(v)]));
            }
            t += step;
        }
        if !values.is_empty() {
            result.push(json!({"metric": labels, "values": values}));
        }
    }
    Ok(json!({"resultType": "matrix", "result": result}).to_string())
}

/// `execute_query` {query, time}: each selected series' value at `time` (default now) — the
/// last point at or before it.
pub fn execute_query(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let query = required(args, "query")?;
    // The real server leaves an empty `time` out of the request: Prometheus then uses now.
    let given = match args.get("time") {
        Some(Value::String(s)) if s.trim().is_empty() => None,
        _ => time_arg(args, "time")?,
    };
    let at: DateTime<Utc> = given.unwrap_or_else(Utc::now);
    if let Some(series) = evaluated(scenario, query, &[at]) {
        let result: Vec<Value> = series
            .into_iter()
            .filter_map(|(labels, points)| {
                let (_, v) = points.first()?;
                Some(json!({"metric": labels, "value": [at.timestamp(), format_value(*v)]}))
            })
            .collect();
        return Ok(json!({"resultType": "vector", "result": result}).to_string());
    }
    let result: Vec<Value> = matching(scenario, query)
        .into_iter()
        .filter_map(|(labels, metric)| {
            let v = metric.value_at(scenario, at)?;
            Some(json!({"metric": labels, "value": [at.timestamp(), format_value(v)]}))
        })
        .collect();
    Ok(json!({"resultType": "vector", "result": result}).to_string())
}
