//! Where slow requests spend their time: the span that takes most of the slowest traces of a
//! trace search (found by descending from the root into the child holding most of its parent's
//! time, as long as it holds at least half of it — a SELECT inside a reservation call inside a
//! checkout; without parent ids, the longest span other than the root).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`SlowSpan`] | cause | the same span dominates two or more slow traces under a latency or error alert (timings the tracing system recorded, not claims an application wrote) |

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};
use crate::evidence::{Capability, Evidence};

/// The span the slow requests spend their time in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowSpan {
    pub span: String,
    pub service: Option<String>,
    pub span_ms: f64,
    pub total_ms: f64,
    /// Traces searched (the excerpt's and those it left out).
    pub searched: usize,
    pub failing: usize,
    /// Slow traces (at least half as slow as the slowest), and how many of them this span
    /// dominates.
    pub slow: usize,
    pub agreeing: usize,
}

impl Payload for SlowSpan {
    const SPEC: KindSpec = KindSpec {
        name: "slow-span",
        role: Role::Cause,
        verified_when: "the same span dominates two or more of the slow traces under a latency \
                        or error alert",
        accounts_for: &[Symptom::Latency, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            span: "SELECT orders".into(),
            service: Some("orders-db".into()),
            span_ms: 4700.0,
            total_ms: 5000.0,
            searched: 20,
            failing: 1,
            slow: 2,
            agreeing: 2,
        }
    }

    fn title(&self) -> String {
        format!(
            "Slowest span: `{}`{} took {:.1} s of a {:.1} s request",
            self.span,
            self.in_service(),
            self.span_ms / 1000.0,
            self.total_ms / 1000.0
        )
    }

    fn detail(&self) -> String {
        format!(
            "In the slowest of {} traces searched{}, `{}`{} took {:.0} % of the request's time, \
             and it is where {} of the {} slow traces spend most of theirs: the latency is spent \
             there.",
            self.searched,
            if self.failing > 0 {
                format!(" ({} failing)", self.failing)
            } else {
                String::new()
            },
            self.span,
            self.in_service(),
            self.span_ms / self.total_ms * 100.0,
            self.agreeing,
            self.slow
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Span, self.service.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.span == other.span && self.service == other.service
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "Look at where the requests wait: `{}`{} (its query plan and indexes, locks, and the \
             load on what it calls).",
            self.span,
            self.in_service()
        )
    }
}

impl SlowSpan {
    fn in_service(&self) -> String {
        self.service
            .as_deref()
            .map(|s| format!(" in `{s}`"))
            .unwrap_or_default()
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    round
        .of(Capability::TraceSearch)
        .filter_map(|e| slowest_span(e, round.ctx.service_level))
        .collect()
}

/// Where one trace spends its time.
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

/// The span the slowest traces spend their time in; verified at medium confidence when the
/// same span dominates two or more of the slow traces under a service-level alert, a lead when
/// one trace alone shows it.
fn slowest_span(evidence: &Evidence, service_level: bool) -> Option<Finding> {
    let value = serde_json::from_str::<Value>(evidence.excerpt.trim()).ok()?;
    let traces: Vec<&Value> = value
        .get("traces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let slowest = traces
        .iter()
        .max_by(|a, b| duration_ms(a).total_cmp(&duration_ms(b)))?;
    let top = dominant_span(slowest)?;
    if top.total_ms <= 0.0 || top.span_ms / top.total_ms < 0.5 {
        return None;
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
    let start = evidence.excerpt.find(&needle)?;
    let quote = evidence.excerpt[start..start + needle.len()].to_string();
    let failing = traces
        .iter()
        .filter(|t| t.get("status").and_then(Value::as_str) == Some("error"))
        .count();
    // The excerpt keeps the slowest traces and counts the faster ones it left out.
    let left_out = value
        .get("omitted")
        .and_then(Value::as_str)
        .and_then(|o| o.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    Some(
        Finding::new(
            SlowSpan {
                span: top.name.to_string(),
                service: top.service.map(str::to_string),
                span_ms: top.span_ms,
                total_ms: top.total_ms,
                searched: traces.len() + left_out,
                failing,
                slow: slow.len(),
                agreeing,
            },
            Confidence::Medium,
            service_level && agreeing >= 2,
        )
        .citing(vec![cite(evidence, quote)]),
    )
}

#[cfg(test)]
mod tests;
