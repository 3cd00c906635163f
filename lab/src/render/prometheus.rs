//! prometheus-mcp-server's `execute_range_query`: the scenario's metric series sampled at the
//! query's step, as a Prometheus range-query matrix.

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::Rendered;
use super::args::{required, squash, time_arg};
use crate::reltime::parse_offset;
use crate::scenario::Scenario;

/// Prometheus' point limit per series.
const MAX_POINTS: i64 = 11_000;

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
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
    let wanted = squash(query);
    let mut result = Vec::new();
    for metric in scenario
        .spec
        .metrics
        .iter()
        .filter(|m| squash(&m.query) == wanted)
    {
        let mut values = Vec::new();
        let mut t = start;
        while t <= end {
            let value = if let Some(c) = metric.constant {
                Some(c)
            } else if let Some(s) = &metric.step {
                Some(if t < scenario.time(s.at) {
                    s.before
                } else {
                    s.after
                })
            } else {
                metric.points.as_ref().and_then(|points| {
                    points
                        .iter()
                        .filter(|(at, _)| scenario.time(*at) <= t)
                        .max_by_key(|(at, _)| scenario.time(*at))
                        .map(|(_, v)| *v)
                })
            };
            if let Some(v) = value {
                values.push(json!([t.timestamp(), format_value(v)]));
            }
            t += step;
        }
        if !values.is_empty() {
            result.push(json!({"metric": metric.labels, "values": values}));
        }
    }
    Ok(json!({"resultType": "matrix", "result": result}).to_string())
}
