//! Telemetry and tool answers: metric series (PromQL), log streams (LogQL), traces (TraceQL)
//! and verbatim tool results that override the world.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Scenario;
use crate::reltime::RelTime;

/// One metric series, answered for a PromQL query that names it exactly (`query`) or selects
/// it (`metric` with `labels`, or the first selector of `query`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// The PromQL as the investigation will send it (compared without whitespace).
    #[serde(default)]
    pub query: Option<String>,
    /// The metric name of the series, for queries that select it.
    #[serde(default)]
    pub metric: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `[[-30m, 0.01], [-12m, 0.35]]`: each value holds until the next point.
    #[serde(default)]
    pub points: Option<Vec<(RelTime, f64)>>,
    /// A step change.
    #[serde(default)]
    pub step: Option<StepSpec>,
    /// A flat line.
    #[serde(default)]
    pub constant: Option<f64>,
}

impl MetricSpec {
    /// The value at `t` (`None` before its first point): each point holds until the next.
    pub fn value_at(&self, scenario: &Scenario, t: DateTime<Utc>) -> Option<f64> {
        if let Some(c) = self.constant {
            return Some(c);
        }
        if let Some(step) = &self.step {
            return Some(if t < scenario.time(step.at) {
                step.before
            } else {
                step.after
            });
        }
        self.points.as_ref().and_then(|points| {
            points
                .iter()
                .filter(|(at, _)| scenario.time(*at) <= t)
                .max_by_key(|(at, _)| scenario.time(*at))
                .map(|(_, v)| *v)
        })
    }
}

/// `before` until `at`, `after` from then on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    pub before: f64,
    pub after: f64,
    pub at: RelTime,
}

/// Log lines of one stream, answered for LogQL queries whose selector matches its `labels`
/// (or that equal its `query`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogStreamSpec {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub lines: Vec<LogLineSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogLineSpec {
    pub at: RelTime,
    pub line: String,
}

/// One trace, rooted in `service`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub service: String,
    pub trace_id: String,
    pub root_name: String,
    pub start: RelTime,
    pub duration_ms: u64,
    /// Default: `error` when a span is, else `ok`.
    #[serde(default)]
    pub status: Option<TraceStatus>,
    #[serde(default)]
    pub spans: Vec<SpanSpec>,
}

impl TraceSpec {
    /// The trace's status: its own, or `error` when any span failed.
    pub fn status(&self) -> TraceStatus {
        self.status.unwrap_or(
            if self.spans.iter().any(|s| s.status == TraceStatus::Error) {
                TraceStatus::Error
            } else {
                TraceStatus::Ok
            },
        )
    }
}

/// A trace's or span's status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceStatus {
    #[default]
    Ok,
    Error,
}

impl TraceStatus {
    /// `ok` / `error`, as TraceQL spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceStatus::Ok => "ok",
            TraceStatus::Error => "error",
        }
    }
}

/// One span of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanSpec {
    pub name: String,
    /// Default: the trace's service.
    #[serde(default)]
    pub service: Option<String>,
    pub duration_ms: u64,
    #[serde(default)]
    pub status: TraceStatus,
    /// The parent span's name.
    #[serde(default)]
    pub parent: Option<String>,
}

/// A verbatim answer for a tool call, overriding the world (fault injection, peer fixtures).
/// In a scenario file, `namespace: x` is the same as `args: {namespace: x}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawToolResultFile")]
pub struct RawToolResult {
    /// Tool name, or `*` for every tool.
    pub tool: String,
    /// Arguments that must match (a subset of the call's); empty matches any call.
    #[serde(default)]
    pub args: BTreeMap<String, Value>,
    /// The text to answer with.
    #[serde(default)]
    pub text: Option<String>,
    /// Answer with a tool error (`isError: true`) carrying this text.
    #[serde(default)]
    pub error: Option<String>,
    /// Wait this long first (a timeout, when longer than the client's limit).
    #[serde(default)]
    pub delay_ms: Option<u64>,
}

/// [`RawToolResult`] as written: `namespace` folds into `args` (so the struct others build
/// in code keeps its shape).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolResultFile {
    tool: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    args: BTreeMap<String, Value>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    delay_ms: Option<u64>,
}

impl TryFrom<RawToolResultFile> for RawToolResult {
    type Error = String;

    fn try_from(file: RawToolResultFile) -> Result<Self, String> {
        let mut args = file.args;
        if let Some(namespace) = file.namespace {
            let namespace = Value::String(namespace);
            if let Some(given) = args.get("namespace").filter(|given| **given != namespace) {
                return Err(format!(
                    "`namespace: {namespace}` disagrees with `args.namespace: {given}`"
                ));
            }
            args.insert("namespace".into(), namespace);
        }
        Ok(Self {
            tool: file.tool,
            args,
            text: file.text,
            error: file.error,
            delay_ms: file.delay_ms,
        })
    }
}
