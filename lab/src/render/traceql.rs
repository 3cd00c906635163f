//! Just enough TraceQL for traces: the conditions of the first spanset filter, joined by `&&`
//! (`{ resource.service.name = "x" && duration > 500ms && status = error }`). A trace matches
//! when one of its spans — or the trace itself, as its root — satisfies every condition.
//! Conditions on attributes the lab does not model (`span.http.status_code`) are ignored.

use regex::Regex;

use super::matchers::read_string;
use crate::scenario::{TraceSpec, TraceStatus};

/// What a condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Service,
    Name,
    Duration,
    Status,
    RootService,
    RootName,
    TraceDuration,
}

impl Field {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "resource.service.name" | ".service.name" | "service.name" | "span.service.name" => {
                Field::Service
            }
            "name" | "span:name" => Field::Name,
            "duration" | "span:duration" => Field::Duration,
            "status" | "span:status" => Field::Status,
            "rootServiceName" | "trace:rootService" => Field::RootService,
            "rootName" | "trace:rootName" => Field::RootName,
            "traceDuration" | "trace:duration" => Field::TraceDuration,
            _ => return None,
        })
    }
}

/// One condition: `field op value` (durations in milliseconds).
#[derive(Debug, Clone, PartialEq)]
struct Condition {
    field: Field,
    op: &'static str,
    text: String,
    millis: Option<f64>,
}

/// A span as conditions see it.
struct Candidate<'a> {
    service: &'a str,
    name: &'a str,
    duration_ms: u64,
    status: TraceStatus,
}

/// `500ms`, `1.5s`, `2m`, `100us` → milliseconds.
fn duration_ms(text: &str) -> Option<f64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let value: f64 = text[..split].parse().ok()?;
    let unit = match &text[split..] {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3_600e3,
        _ => return None,
    };
    Some(value * unit)
}

impl Condition {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let op_at = text.find(['=', '!', '>', '<'])?;
        let field = Field::parse(text[..op_at].trim())?;
        let op = ["!=", "=~", "!~", ">=", "<=", "=", ">", "<"]
            .into_iter()
            .find(|op| text[op_at..].starts_with(op))?;
        let raw = text[op_at + op.len()..].trim();
        let value = if raw.starts_with('"') || raw.starts_with('`') {
            read_string(raw, 0).map_or_else(|| raw.to_string(), |(v, _)| v)
        } else {
            raw.to_string()
        };
        Some(Self {
            field,
            op,
            millis: duration_ms(&value),
            text: value,
        })
    }

    fn compare_number(&self, actual: f64) -> bool {
        let Some(want) = self.millis else {
            return false;
        };
        match self.op {
            "=" => actual == want,
            "!=" => actual != want,
            ">" => actual > want,
            ">=" => actual >= want,
            "<" => actual < want,
            "<=" => actual <= want,
            _ => false,
        }
    }

    fn compare_text(&self, actual: &str) -> bool {
        match self.op {
            "=" => actual == self.text,
            "!=" => actual != self.text,
            "=~" | "!~" => Regex::new(&format!("^(?:{})$", self.text))
                .is_ok_and(|re| re.is_match(actual) == (self.op == "=~")),
            _ => false,
        }
    }

    fn holds(&self, trace: &TraceSpec, span: &Candidate) -> bool {
        match self.field {
            Field::Service => self.compare_text(span.service),
            Field::Name => self.compare_text(span.name),
            Field::Duration => self.compare_number(span.duration_ms as f64),
            Field::Status => {
                let want = if self.text == "unset" {
                    "ok"
                } else {
                    &self.text
                };
                let same = span.status.as_str() == want;
                if self.op == "!=" { !same } else { same }
            }
            Field::RootService => self.compare_text(&trace.service),
            Field::RootName => self.compare_text(&trace.root_name),
            Field::TraceDuration => self.compare_number(trace.duration_ms as f64),
        }
    }
}

/// A parsed TraceQL query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TraceQuery {
    conditions: Vec<Condition>,
}

impl TraceQuery {
    /// Parses the first `{…}`; no braces (or `{}`) selects every trace.
    pub fn parse(query: &str) -> Self {
        let inner = query
            .find('{')
            .and_then(|open| {
                super::matchers::brace_end(query, open).map(|close| &query[open + 1..close])
            })
            .unwrap_or_default();
        Self {
            conditions: inner.split("&&").filter_map(Condition::parse).collect(),
        }
    }

    /// Some span of the trace (or its root) satisfies every condition.
    pub fn matches(&self, trace: &TraceSpec) -> bool {
        let root = Candidate {
            service: &trace.service,
            name: &trace.root_name,
            duration_ms: trace.duration_ms,
            status: trace.status(),
        };
        let spans = trace.spans.iter().map(|s| Candidate {
            service: s.service.as_deref().unwrap_or(&trace.service),
            name: &s.name,
            duration_ms: s.duration_ms,
            status: s.status,
        });
        std::iter::once(root)
            .chain(spans)
            .any(|span| self.conditions.iter().all(|c| c.holds(trace, &span)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> TraceSpec {
        serde_norway::from_str(
            r#"{service: frontend, trace_id: t, root_name: "GET /cart", start: -1m, duration_ms: 1200,
                spans: [{name: "GET /cart", duration_ms: 1200}, {name: SELECT, service: cart-db, duration_ms: 1100, status: error, parent: "GET /cart"}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn conditions_hold_on_one_span_or_the_root() {
        let t = trace();
        let m = |q: &str| TraceQuery::parse(q).matches(&t);
        assert!(m("{}") && m("") && m(r#"{ resource.service.name = "frontend" }"#));
        assert!(m(r#"{ .service.name = "cart-db" && status = error }"#));
        assert!(!m(
            r#"{ resource.service.name = "frontend" && status = error && duration < 1s }"#
        ));
        assert!(m(
            r#"{ resource.service.name = "frontend" && duration > 500ms }"#
        ));
        assert!(!m(r#"{ resource.service.name = "checkout" }"#));
        assert!(m(
            r#"{ resource.service.name =~ "front.*" && span.http.status_code >= 500 }"#
        ));
        assert!(m(
            r#"{ rootServiceName = "frontend" && traceDuration >= 1.2s }"#
        ));
        assert!(!m("{ duration > 2s }"));
    }
}
