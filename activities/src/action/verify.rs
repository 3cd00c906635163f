//! `verify_action`: after an action ran, the evidence that made the cause is read again through
//! the read-only tools — the alert's own expression (as the round re-ran it) and the workload's
//! pods — every `actions.verify_interval_secs`, for at most `actions.verify_secs`. Recovered when
//! the expression returns nothing breaching since the action and every pod is ready; otherwise,
//! when the window ends, not recovered, with the values last read. Stored once on the row (with
//! the action's record), whatever a retry reads later.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;

use firstline_investigation::detectors::series::parse_prometheus_matrix;
use firstline_investigation::kube;
use firstline_investigation::tools::{
    CallScope, CapabilityRequest, EvidenceSource, Fetched, McpTools,
};
use firstline_model::ActionState;
use firstline_store::actions as store;
use firstline_workflows::types::{ActionInput, ActionOutcome};

use super::change::Change;
use super::execute::outcome;
use crate::RoundError;

/// (Unix seconds, value).
type Point = (f64, f64);

/// How far before the action the expression is read, to show what it was.
const BEFORE: chrono::Duration = chrono::Duration::minutes(10);

/// What one reading found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub recovered: bool,
    pub readings: u32,
    /// The alert's expression, when there was one to re-run.
    pub query: Option<String>,
    /// Its largest value in the ten minutes before the action.
    pub before: Option<f64>,
    /// Its latest breaching value since the action, and when; `None`: nothing breaching.
    pub breaching: Option<(f64, DateTime<Utc>)>,
    /// Why the metric could not be read, if it could not.
    pub metric_missing: Option<String>,
    pub pods_ready: Option<u32>,
    pub pods_total: Option<u32>,
    /// One line with the values, for the thread.
    pub summary: String,
}

/// Verifies action `input.action_id` once it executed; `tick` runs between readings (the
/// activity heartbeats there).
pub async fn verify_action<F, Fut>(
    pool: &PgPool,
    tools: &McpTools,
    every: Duration,
    window: Duration,
    input: &ActionInput,
    mut tick: F,
) -> Result<ActionOutcome, RoundError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let action_id = input.action_id;
    let row = store::get(pool, action_id)
        .await?
        .ok_or(RoundError::UnknownAction(action_id))?;
    if row.state != ActionState::Executed || row.verification.is_some() {
        return Ok(outcome(&row));
    }
    let change: Change = serde_json::from_value(row.change.clone())
        .map_err(|error| RoundError::BadChange { action_id, error })?;
    let executed_at = row.executed_at.unwrap_or_else(Utc::now);
    let namespace = row.action.namespace().map(str::to_string);
    let started = tokio::time::Instant::now();
    let readings_max = (window.as_secs() / every.as_secs().max(1)).max(1) + 1;
    let mut last = None;
    // Bounded: one reading per interval within the window.
    for reading in 1..=readings_max {
        let calls = tools.round(CallScope {
            key: format!(
                "action-{action_id}-verify-{reading}-{}",
                Utc::now().timestamp_millis()
            ),
            thread_id: Some(row.thread_id),
            round: i32::try_from(row.round).ok(),
        });
        let mut found = read(&calls, &change, namespace.as_deref(), executed_at, every).await;
        found.readings = u32::try_from(reading).unwrap_or(u32::MAX);
        let done = found.recovered || started.elapsed() + every > window;
        last = Some(found);
        if done {
            break;
        }
        tick().await;
        tokio::time::sleep(every).await;
    }
    let Some(found) = last else {
        return Ok(outcome(&row));
    };
    super::count(if found.recovered {
        "recovered"
    } else {
        "not_recovered"
    });
    tracing::info!(recovered = found.recovered, summary = %found.summary, "action verified");
    let row = store::verified(
        pool,
        action_id,
        &serde_json::to_value(&found).unwrap_or_default(),
    )
    .await?;
    Ok(outcome(&row))
}

/// One reading: the expression since before the action, and the pods.
async fn read(
    calls: &impl EvidenceSource,
    change: &Change,
    namespace: Option<&str>,
    executed_at: DateTime<Utc>,
    every: Duration,
) -> Verification {
    let now = Utc::now();
    let step = u32::try_from(every.as_secs().clamp(15, 300)).unwrap_or(15);
    let mut found = Verification {
        recovered: false,
        readings: 0,
        query: change.query.clone(),
        before: None,
        breaching: None,
        metric_missing: None,
        pods_ready: None,
        pods_total: None,
        summary: String::new(),
    };
    let mut parts = Vec::new();
    let mut metric_ok = true;
    // Two evaluations after the action before its absence of breaches says anything.
    let judged_from = executed_at + chrono::Duration::seconds(2 * i64::from(step));
    if let Some(query) = &change.query {
        let fetched = calls
            .fetch(CapabilityRequest::MetricRange {
                query: query.clone(),
                start: executed_at - BEFORE,
                end: now,
                step_secs: step,
            })
            .await;
        match fetched {
            Fetched::Found(output) => match parse_prometheus_matrix(&output.text) {
                Ok(series) => {
                    let at = |t: f64| Utc.timestamp_opt(t as i64, 0).single();
                    let points = series.iter().flat_map(|s| s.points.iter().copied());
                    let (before, after): (Vec<Point>, Vec<Point>) =
                        points.partition(|(t, _)| at(*t).is_some_and(|t| t <= executed_at));
                    found.before = before.iter().map(|p| p.1).reduce(f64::max);
                    // Breaching now: a sample in the last two steps on the wrong side of the
                    // expression's own threshold. Prometheus keeps only such samples; a server
                    // that answers with every value is judged by the same comparison.
                    let recent = now - chrono::Duration::seconds(2 * i64::from(step));
                    let threshold = Threshold::of(query);
                    found.breaching = after
                        .iter()
                        .filter(|(_, v)| threshold.is_none_or(|th| th.breached(*v)))
                        .filter_map(|(t, v)| at(*t).filter(|t| *t >= recent).map(|t| (*v, t)))
                        .max_by_key(|(_, t)| *t);
                    let seen_after = !after.is_empty();
                    parts.push(match (&found.breaching, found.before) {
                        (Some((value, t)), _) => {
                            metric_ok = false;
                            format!("`{query}` still {} at {}", number(*value), t.format("%H:%M"))
                        }
                        _ if now < judged_from => {
                            metric_ok = false;
                            format!("`{query}`: too soon after the action to judge")
                        }
                        (None, Some(before)) => format!(
                            "`{query}` was {} before the action and returns nothing breaching since",
                            number(before)
                        ),
                        // Nothing before and nothing after: a query that selects nothing
                        // (the series gone, a label changed) shows no recovery either.
                        (None, None) if !seen_after => {
                            metric_ok = false;
                            format!("`{query}` returns nothing before or after the action: cannot judge")
                        }
                        (None, None) => format!("`{query}` returns nothing breaching"),
                    });
                }
                Err(error) => {
                    metric_ok = false;
                    found.metric_missing = Some(error.to_string());
                    parts.push(format!("`{query}` could not be read: {error}"));
                }
            },
            Fetched::Missing(missing) => {
                metric_ok = false;
                found.metric_missing = Some(missing.reason.clone());
                parts.push(format!("`{query}` could not be read: {}", missing.reason));
            }
        }
    }
    let mut pods_ok = true;
    if let (Some(selector), Some(namespace)) = (&change.selector, namespace) {
        let fetched = calls
            .fetch(CapabilityRequest::PodList {
                namespace: namespace.to_string(),
                label_selector: Some(selector.clone()),
            })
            .await;
        match fetched {
            Fetched::Found(output) => {
                let pods = kube::pods_in_list(&output.text);
                let ready = pods
                    .iter()
                    .filter(|p| p.status == "Running" && p.ready == Some(true))
                    .count();
                found.pods_ready = u32::try_from(ready).ok();
                found.pods_total = u32::try_from(pods.len()).ok();
                pods_ok = !pods.is_empty() && ready == pods.len();
                parts.push(format!("{ready} of {} pods ({selector}) ready", pods.len()));
            }
            Fetched::Missing(missing) => {
                pods_ok = false;
                parts.push(format!("the pods could not be read: {}", missing.reason));
            }
        }
    }
    found.recovered = metric_ok && pods_ok && (change.query.is_some() || change.selector.is_some());
    if parts.is_empty() {
        parts.push("nothing to re-read: the alert has no expression and the object no pods".into());
    }
    found.summary = parts.join("; ");
    found
}

/// The comparison an alert expression ends with (`… > 0.05`): what breaching means.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Threshold {
    op: &'static str,
    value: f64,
}

impl Threshold {
    fn of(query: &str) -> Option<Self> {
        let query = query.trim_end();
        let number_start = query
            .rfind(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
            .map_or(0, |i| i + 1);
        let value: f64 = query[number_start..].parse().ok()?;
        let head = query[..number_start].trim_end();
        let op = [">=", "<=", "==", "!=", ">", "<"]
            .into_iter()
            .find(|op| head.ends_with(op))?;
        Some(Self { op, value })
    }

    fn breached(self, sample: f64) -> bool {
        match self.op {
            ">=" => sample >= self.value,
            "<=" => sample <= self.value,
            "==" => sample == self.value,
            "!=" => sample != self.value,
            ">" => sample > self.value,
            _ => sample < self.value,
        }
    }
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

impl Verification {
    /// Reads a stored verification back.
    pub fn from_value(value: &Value) -> Option<Self> {
        serde_json::from_value(value.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::Threshold;

    #[test]
    fn the_threshold_is_the_expressions_trailing_comparison() {
        let rate = Threshold::of("sum(rate(http_requests_total{code=~\"5..\"}[5m])) / sum(rate(http_requests_total[5m])) > 0.05")
            .expect("a threshold");
        assert!(rate.breached(0.31));
        assert!(!rate.breached(0.0034));
        let low = Threshold::of("kube_deployment_status_replicas_available < 2").expect("<");
        assert!(low.breached(1.0) && !low.breached(3.0));
        let ge = Threshold::of("x >= 1e3").expect(">=");
        assert!(ge.breached(1000.0) && !ge.breached(999.0));
        assert_eq!(Threshold::of("rate(errors_total[5m])"), None);
        assert_eq!(Threshold::of("histogram_quantile(0.99, x)"), None);
    }
}
