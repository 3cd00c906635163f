//! Error-rate or latency step change in a metric range (the alert's own metric over the alert
//! window).
//!
//! The evidence is a Prometheus range-query result (`{"resultType":"matrix","result":[…]}`,
//! alone or inside the API envelope `{"status":…,"data":{…}}`). For each series the detector
//! finds the single best change point (least squared error of two constant segments), then
//! requires a *sustained step up*: the median after is at least `min_ratio` × the median before,
//! higher by at least `min_absolute_increase`, and most points after the change stay above the
//! midpoint. A one-point spike or a slow drift does not qualify.
//!
//! Quotes are cut from the raw JSON text (the series' label object and the first value pair
//! after the change), so they are verbatim however the JSON was formatted.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;

use super::{Confidence, DetectionContext, DetectorKind, Finding, StepChangeParams, cite};
use crate::evidence::{Capability, Evidence};
use firstline_alert::timeparse::from_unix_seconds;

static METRIC_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""metric"\s*:\s*(\{[^{}]*\})"#).expect("static regex"));
static VALUE_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\[\s*(-?[0-9][0-9.eE+-]*)\s*,\s*"([^"]*)"\s*\]"#).expect("static regex")
});

/// An elision marker left by the excerpt (`… [12 lines omitted] …`, `… [900 chars
/// omitted]`): text behind it may belong to another series.
static OMISSION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[\d+ (?:lines?|chars) omitted").expect("static regex"));

/// One series of a range query.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSeries {
    pub labels: BTreeMap<String, String>,
    /// (Unix seconds, value), in time order; non-finite values dropped.
    pub points: Vec<(f64, f64)>,
}

impl MetricSeries {
    /// `name{k="v", …}` for humans.
    pub fn display_name(&self) -> String {
        let name = self.labels.get("__name__").cloned().unwrap_or_default();
        let rest: Vec<String> = self
            .labels
            .iter()
            .filter(|(k, _)| k.as_str() != "__name__")
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        if rest.is_empty() && !name.is_empty() {
            name
        } else {
            format!("{name}{{{}}}", rest.join(", "))
        }
    }
}

/// Why a metric result could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MetricParseError {
    #[error("metric result is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("metric result has no matrix (`resultType: matrix` with `result`)")]
    NotAMatrix,
}

/// Parses a Prometheus range-query result into series.
pub fn parse_prometheus_matrix(text: &str) -> Result<Vec<MetricSeries>, MetricParseError> {
    let value: serde_json::Value = serde_json::from_str(text.trim())?;
    let matrix = find_matrix(&value).ok_or(MetricParseError::NotAMatrix)?;
    let series = matrix
        .iter()
        .map(|item| {
            let labels = item
                .get("metric")
                .and_then(|m| m.as_object())
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let points = item
                .get("values")
                .and_then(|v| v.as_array())
                .map(|values| values.iter().filter_map(parse_point).collect())
                .unwrap_or_default();
            MetricSeries { labels, points }
        })
        .collect();
    Ok(series)
}

fn find_matrix(value: &serde_json::Value) -> Option<&Vec<serde_json::Value>> {
    if value.get("resultType").and_then(|t| t.as_str()) == Some("matrix") {
        return value.get("result").and_then(|r| r.as_array());
    }
    value.get("data").and_then(find_matrix)
}

fn parse_point(pair: &serde_json::Value) -> Option<(f64, f64)> {
    let pair = pair.as_array()?;
    let ts = pair.first()?.as_f64()?;
    let raw = pair.get(1)?;
    let value = match raw {
        serde_json::Value::String(s) => s.parse::<f64>().ok()?,
        other => other.as_f64()?,
    };
    value.is_finite().then_some((ts, value))
}

/// A series as it stands in an evidence excerpt, with the verbatim text of its label object and
/// of each value pair, so detectors can quote exactly what the excerpt shows.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct QuotedSeries<'a> {
    pub series: MetricSeries,
    /// The `{…}` label object, verbatim.
    pub labels_text: &'a str,
    /// The `[ts, "value"]` pair of each point, verbatim; parallel to `series.points`.
    pub pair_texts: Vec<&'a str>,
}

impl QuotedSeries<'_> {
    /// The verbatim pair of the point at Unix time `ts`, if the excerpt shows it.
    pub fn pair_at(&self, ts: f64) -> Option<&str> {
        self.series
            .points
            .iter()
            .position(|(t, _)| (t - ts).abs() < 1e-3)
            .and_then(|i| self.pair_texts.get(i).copied())
    }
}

/// The series of a Prometheus matrix as far as `text` shows them. Unlike
/// [`parse_prometheus_matrix`] this reads an excerpt the bound has cut (a long range query
/// rarely fits): each `"metric"` label object takes the value pairs that follow it, up to the
/// next label object or the first elision marker, whichever comes first, so points are never
/// attributed to the wrong series. Pairs must be in time order with finite values; a label
/// object that is not flat JSON is skipped.
pub(super) fn quoted_series(text: &str) -> Vec<QuotedSeries<'_>> {
    let objects: Vec<(usize, usize, &str)> = METRIC_KEY
        .captures_iter(text)
        .filter_map(|c| {
            let whole = c.get(0)?;
            let labels = c.get(1)?;
            Some((whole.start(), labels.end(), labels.as_str()))
        })
        .collect();
    let mut out = Vec::new();
    for (k, (_, labels_end, labels_text)) in objects.iter().enumerate() {
        let Ok(map) =
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(labels_text)
        else {
            continue;
        };
        let labels = map
            .into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
            .collect();
        let region_end = objects.get(k + 1).map_or(text.len(), |next| next.0);
        let mut region = &text[*labels_end..region_end];
        if let Some(marker) = OMISSION.find(region) {
            region = &region[..marker.start()];
        }
        let mut points = Vec::new();
        let mut pair_texts = Vec::new();
        for c in VALUE_PAIR.captures_iter(region) {
            let (Some(whole), Ok(ts), Ok(value)) =
                (c.get(0), c[1].parse::<f64>(), c[2].parse::<f64>())
            else {
                continue;
            };
            let in_order = points.last().is_none_or(|(last, _)| ts > *last);
            if value.is_finite() && in_order && from_unix_seconds(ts).is_some() {
                points.push((ts, value));
                pair_texts.push(whole.as_str());
            }
        }
        out.push(QuotedSeries {
            series: MetricSeries { labels, points },
            labels_text,
            pair_texts,
        });
    }
    out
}

/// A sustained step up in a series.
#[derive(Debug, Clone, PartialEq)]
pub struct StepChange {
    /// Index of the first point after the change.
    pub index: usize,
    pub started_at: DateTime<Utc>,
    pub before_median: f64,
    pub after_median: f64,
}

/// Finds a sustained step up in `points`, if there is one.
pub fn find_step_change(points: &[(f64, f64)], params: &StepChangeParams) -> Option<StepChange> {
    let m = params.min_points_each_side.max(1);
    let n = points.len();
    if n < 2 * m {
        return None;
    }
    let values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    // Prefix sums make every split's squared error O(1).
    let mut sum = vec![0.0; n + 1];
    let mut sum_sq = vec![0.0; n + 1];
    for (i, v) in values.iter().enumerate() {
        sum[i + 1] = sum[i] + v;
        sum_sq[i + 1] = sum_sq[i] + v * v;
    }
    let sse = |a: usize, b: usize| {
        let len = (b - a) as f64;
        let s = sum[b] - sum[a];
        (sum_sq[b] - sum_sq[a]) - s * s / len
    };
    let split = (m..=n - m).min_by(|&a, &b| {
        let cost_a = sse(0, a) + sse(a, n);
        let cost_b = sse(0, b) + sse(b, n);
        cost_a.total_cmp(&cost_b)
    })?;
    let before_median = median(&values[..split]);
    let after_median = median(&values[split..]);
    let increase = after_median - before_median;
    let ratio_ok = if before_median > 0.0 {
        after_median >= params.min_ratio * before_median
    } else {
        after_median > 0.0
    };
    if !ratio_ok || increase < params.min_absolute_increase {
        return None;
    }
    let midpoint = (before_median + after_median) / 2.0;
    let after = &values[split..];
    let above = after.iter().filter(|v| **v > midpoint).count();
    if (above as f64) < params.min_sustained_share * after.len() as f64 {
        return None;
    }
    Some(StepChange {
        index: split,
        started_at: from_unix_seconds(points[split].0)?,
        before_median,
        after_median,
    })
}

pub(super) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.is_empty() {
        0.0
    } else if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// Step-change findings for one metric evidence item.
pub(super) fn detect(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    if evidence.capability != Capability::MetricRange {
        return Vec::new();
    }
    let Ok(series) = parse_prometheus_matrix(&evidence.excerpt) else {
        return Vec::new();
    };
    let metric_positions: Vec<(usize, &str)> = METRIC_KEY
        .captures_iter(&evidence.excerpt)
        .filter_map(|c| c.get(1).map(|m| (m.start(), m.as_str())))
        .collect();
    let mut out = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let Some(step) = find_step_change(&s.points, &ctx.step) else {
            continue;
        };
        let mut refs = Vec::new();
        if let Some((position, label_text)) = metric_positions.get(i) {
            refs.push(cite(evidence, (*label_text).to_string()));
            let step_ts = s.points[step.index].0;
            let search_from = &evidence.excerpt[*position..];
            if let Some(pair) = VALUE_PAIR.captures_iter(search_from).find(|c| {
                c[1].parse::<f64>()
                    .is_ok_and(|ts| (ts - step_ts).abs() < 1e-6)
            }) && let Some(m) = pair.get(0)
            {
                refs.push(cite(evidence, m.as_str().to_string()));
            }
        }
        let name = s.display_name();
        let when = match ctx.alert_start {
            Some(start) => {
                let minutes = (start - step.started_at).num_minutes();
                if minutes >= 0 {
                    format!(", {minutes} min before the alert started")
                } else {
                    format!(", {} min after the alert started", -minutes)
                }
            }
            None => String::new(),
        };
        let factor = if step.before_median > 0.0 {
            format!(" (×{:.1})", step.after_median / step.before_median)
        } else {
            String::new()
        };
        let strong = step.before_median <= 0.0
            || step.after_median >= 2.0 * ctx.step.min_ratio * step.before_median;
        out.push(Finding {
            detector: DetectorKind::MetricStepChange,
            title: format!(
                "Step up in `{name}`: {} → {}{factor} from {} UTC",
                format_value(step.before_median),
                format_value(step.after_median),
                step.started_at.format("%H:%M")
            ),
            detail: format!(
                "`{name}` rose from a median of {} to {}{factor} starting {} UTC{when}, and stayed up.",
                format_value(step.before_median),
                format_value(step.after_median),
                step.started_at.format("%H:%M:%S")
            ),
            confidence: if strong { Confidence::High } else { Confidence::Medium },
            // A step shows *when* the symptom began, not why.
            verified: false,
            resource: s
                .labels
                .get("service")
                .or_else(|| s.labels.get("deployment"))
                .or_else(|| s.labels.get("pod"))
                .cloned(),
            refs,
            at: Some(step.started_at),
        });
    }
    out
}

pub(super) fn format_value(value: f64) -> String {
    let text = if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.4}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}
