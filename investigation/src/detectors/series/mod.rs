//! Metric series as evidence: Prometheus range-query results read into series (whole, or as
//! far as a cut excerpt shows them, with the verbatim text of each label object and value pair
//! so a quote is always exact), what each series holds (memory usage or limit, CFS throttling,
//! restarts, anything else: [`SeriesKind`]), and how to say amounts. [`shape`] classifies what
//! a series did.

pub mod shape;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::Duration;
use regex::Regex;

use super::{Citation, DetectionContext, cite};
use crate::evidence::{Capability, Evidence};
use firstline_alert::timeparse::from_unix_seconds;

pub use shape::{StepChange, StepChangeParams, Unit, find_step_change};
use shape::{limit_from_series, time};

const MEMORY_USAGE: [&str; 2] = ["container_memory_working_set_bytes", "container_memory_rss"];
const KUBE_LIMITS: &str = "kube_pod_container_resource_limits";
const CADVISOR_MEMORY_LIMIT: &str = "container_spec_memory_limit_bytes";
const THROTTLED_PERIODS: &str = "container_cpu_cfs_throttled_periods_total";
const CFS_PERIODS: &str = "container_cpu_cfs_periods_total";
const RESTARTS: &str = "kube_pod_container_status_restarts_total";
/// Functions after which a series no longer holds the metric's own values.
const RATE_LIKE: [&str; 6] = [
    "rate(",
    "increase(",
    "delta(",
    "deriv(",
    "changes(",
    "resets(",
];

static METRIC_KEY: LazyLock<Regex> = regex!(r#""metric"\s*:\s*(\{[^{}]*\})"#);
static VALUE_PAIR: LazyLock<Regex> = regex!(r#"\[\s*(-?[0-9][0-9.eE+-]*)\s*,\s*"([^"]*)"\s*\]"#);

/// An elision marker left by the excerpt (`… [12 lines omitted] …`, `… [900 chars
/// omitted]`): text behind it may belong to another series.
static OMISSION: LazyLock<Regex> = regex!(r"\[\d+ (?:lines?|chars) omitted");

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
pub struct QuotedSeries<'a> {
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
pub fn quoted_series(text: &str) -> Vec<QuotedSeries<'_>> {
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

/// The median of `values` (0 for none).
pub fn median(values: &[f64]) -> f64 {
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

// ---------------------------------------------------------------------------------------------
// Formatting

/// A value in its unit: "512 MiB", "1.25 GiB", "41 %", "0.012".
pub fn format_amount(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes => format_bytes(value),
        Unit::Ratio => format_percent(value),
        Unit::Plain => format_value(value),
    }
}

pub fn format_bytes(bytes: f64) -> String {
    const KIB: f64 = 1024.0;
    let (scaled, unit) = match bytes.abs() {
        b if b >= KIB * KIB * KIB => (bytes / (KIB * KIB * KIB), "GiB"),
        b if b >= KIB * KIB => (bytes / (KIB * KIB), "MiB"),
        b if b >= KIB => (bytes / KIB, "KiB"),
        _ => (bytes, "B"),
    };
    let number = if scaled.abs() >= 100.0 || unit == "B" {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}")
    } else {
        format!("{scaled:.2}")
    };
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        &number
    };
    format!("{number} {unit}")
}

pub fn format_percent(share: f64) -> String {
    let percent = share * 100.0;
    if percent.abs() >= 10.0 || percent == 0.0 {
        format!("{percent:.0} %")
    } else {
        format!("{percent:.1} %")
    }
}

pub fn format_hours(hours: f64) -> String {
    format_duration(Duration::seconds((hours * 3600.0).round() as i64))
}

/// "40 min", "5.4 h", "46 h".
pub fn format_duration(d: Duration) -> String {
    let minutes = d.num_seconds() as f64 / 60.0;
    if minutes < 90.0 {
        format!("{minutes:.0} min")
    } else if minutes < 600.0 {
        format!("{:.1} h", minutes / 60.0)
    } else {
        format!("{:.0} h", minutes / 60.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// A value in plain units: `0.0123`, `1.5`, `240`.
pub fn format_value(value: f64) -> String {
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

// Evidence

/// What a series holds, from its name or the query that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    MemoryUsage,
    MemoryLimit,
    ThrottleRatio,
    ThrottledPeriods,
    CfsPeriods,
    Restarts,
    Other,
}

fn kind_of(labels: &BTreeMap<String, String>, query: Option<&str>) -> SeriesKind {
    // A series still named after one of the two counters was not divided (a server that
    // matched the selectors without evaluating the expression): read it as that counter and
    // pair it with its partner. Otherwise a ratio query's result is the ratio.
    let counter_name = labels
        .get("__name__")
        .is_some_and(|n| n == THROTTLED_PERIODS || n == CFS_PERIODS);
    if !counter_name && query.map(kind_of_query) == Some(SeriesKind::ThrottleRatio) {
        return SeriesKind::ThrottleRatio;
    }
    match labels.get("__name__") {
        Some(name) => kind_of_name(name, labels),
        // Aggregations and functions drop the name; the query still says what went in.
        None => query.map_or(SeriesKind::Other, kind_of_query),
    }
}

fn kind_of_name(name: &str, labels: &BTreeMap<String, String>) -> SeriesKind {
    match name {
        n if MEMORY_USAGE.contains(&n) => SeriesKind::MemoryUsage,
        KUBE_LIMITS if labels.get("resource").map(String::as_str) == Some("memory") => {
            SeriesKind::MemoryLimit
        }
        CADVISOR_MEMORY_LIMIT => SeriesKind::MemoryLimit,
        THROTTLED_PERIODS => SeriesKind::ThrottledPeriods,
        CFS_PERIODS => SeriesKind::CfsPeriods,
        RESTARTS => SeriesKind::Restarts,
        // Recording rules such as `container:cpu_cfs_throttled:ratio`.
        n if n.contains("throttl")
            && ["ratio", "fraction", "share"].iter().any(|w| n.contains(w)) =>
        {
            SeriesKind::ThrottleRatio
        }
        _ => SeriesKind::Other,
    }
}

pub fn kind_of_query(query: &str) -> SeriesKind {
    let rate_like = RATE_LIKE.iter().any(|f| query.contains(f));
    let divided = query.contains('/');
    let usage = MEMORY_USAGE.iter().any(|m| query.contains(m));
    let limit = query.contains(CADVISOR_MEMORY_LIMIT)
        || (query.contains(KUBE_LIMITS) && query.contains("memory"));
    if query.contains(THROTTLED_PERIODS) && query.contains(CFS_PERIODS) && divided {
        SeriesKind::ThrottleRatio
    } else if usage && !limit && !rate_like && !divided {
        SeriesKind::MemoryUsage
    } else if limit && !usage && !rate_like && !divided {
        SeriesKind::MemoryLimit
    } else if query.contains(RESTARTS) && !rate_like && !divided {
        SeriesKind::Restarts
    } else {
        SeriesKind::Other
    }
}

/// A metric evidence item, read.
pub struct Item<'a> {
    pub evidence: &'a Evidence,
    pub series: Vec<(SeriesKind, QuotedSeries<'a>)>,
}

fn parse_item(evidence: &Evidence) -> Option<Item<'_>> {
    if evidence.capability != Capability::MetricRange {
        return None;
    }
    let query = evidence.string_arg(&["query", "expr", "promql"]);
    let series = quoted_series(&evidence.excerpt)
        .into_iter()
        .map(|s| (kind_of(&s.series.labels, query), s))
        .collect();
    Some(Item { evidence, series })
}

/// Every series of `items`, with the item it came from and what it holds.
pub fn all_series<'a>(
    items: &'a [Item<'a>],
) -> impl Iterator<Item = (&'a Item<'a>, SeriesKind, &'a QuotedSeries<'a>)> {
    items
        .iter()
        .flat_map(|item| item.series.iter().map(move |(kind, s)| (item, *kind, s)))
}

/// The round's metric evidence, read.
pub fn items(evidence: &[Evidence]) -> Vec<Item<'_>> {
    evidence.iter().filter_map(parse_item).collect()
}

/// The label object plus the pairs at `anchors`.
pub fn quotes(evidence: &Evidence, series: &QuotedSeries, anchors: &[usize]) -> Vec<Citation> {
    let mut refs = vec![cite(evidence, series.labels_text.to_string())];
    for &i in anchors {
        if let Some(pair) = series.pair_texts.get(i) {
            let citation = cite(evidence, (*pair).to_string());
            if !refs.contains(&citation) {
                refs.push(citation);
            }
        }
    }
    refs
}

/// "Container `api`" / "Pod `api-7d9…`" / "`name{…}`": how a title names a series' subject.
pub fn subject(series: &QuotedSeries) -> String {
    let labels = &series.series.labels;
    match (labels.get("container"), labels.get("pod")) {
        (Some(c), _) if !c.is_empty() && c != "POD" => format!("Container `{c}`"),
        (_, Some(p)) if !p.is_empty() => format!("Pod `{p}`"),
        _ => format!("`{}`", short_name(labels)),
    }
}

/// Whether a label is a CloudWatch dimension as exporters (YACE, the CloudWatch exporter) write
/// them: `dimension_QueueName`, `dimension_DBInstanceIdentifier`.
pub fn is_dimension(label: &str) -> bool {
    label.starts_with("dimension_")
}

/// The name and the labels that identify a workload, without cAdvisor's long `id`s.
pub fn short_name(labels: &BTreeMap<String, String>) -> String {
    let name = labels.get("__name__").map_or("series", String::as_str);
    let keys: Vec<String> = ["namespace", "service", "deployment", "pod", "container"]
        .iter()
        .filter_map(|k| labels.get(*k).map(|v| format!("{k}=\"{v}\"")))
        .collect();
    if keys.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{}}}", keys.join(", "))
    }
}

pub fn resource(series: &QuotedSeries, ctx: &DetectionContext) -> Option<String> {
    let labels = &series.series.labels;
    ["pod", "deployment", "service", "job_name"]
        .iter()
        .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()).cloned())
        .or_else(|| ctx.default_resource.clone())
}

/// The span of the series the excerpt shows: a long range is often cut, and the finding says
/// what it saw.
pub fn shown(series: &QuotedSeries) -> String {
    let at = |point: Option<&(f64, f64)>| {
        point.map_or_else(String::new, |(t, _)| {
            time(*t).format("%m-%d %H:%M").to_string()
        })
    };
    let points = &series.series.points;
    format!("{} UTC to {} UTC", at(points.first()), at(points.last()))
}

/// The memory limit of the usage series: same namespace/pod/container where both say, in this
/// item or another; a lone limit series fits a usage series that names none of them. When the
/// best matches disagree (a pod's total against its containers' limits) there is none.
pub fn memory_limit<'a>(
    usage: &QuotedSeries,
    all: &'a [Item<'a>],
) -> Option<(&'a Evidence, &'a QuotedSeries<'a>, f64)> {
    let limits: Vec<(&Evidence, &QuotedSeries)> = all
        .iter()
        .flat_map(|item| {
            item.series
                .iter()
                .filter(|(kind, _)| *kind == SeriesKind::MemoryLimit)
                .map(move |(_, s)| (item.evidence, s))
        })
        .collect();
    let keys = ["namespace", "pod", "container"];
    let fits = |limit: &QuotedSeries| -> Option<usize> {
        let (u, l) = (&usage.series.labels, &limit.series.labels);
        let common: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| u.contains_key(*k) && l.contains_key(*k))
            .collect();
        let agree = common.iter().all(|k| u.get(*k) == l.get(*k));
        (agree && (!common.is_empty() || limits.len() == 1)).then_some(common.len())
    };
    let candidates: Vec<(&Evidence, &QuotedSeries, usize, f64)> = limits
        .iter()
        .filter_map(|(e, s)| Some((*e, *s, fits(s)?, limit_from_series(&s.series.points)?)))
        .collect();
    let best = candidates.iter().map(|(_, _, common, _)| *common).max()?;
    let mut top = candidates.into_iter().filter(|(_, _, c, _)| *c == best);
    let (e, s, _, value) = top.next()?;
    top.all(|(_, _, _, other)| other == value)
        .then_some((e, s, value))
}

#[cfg(test)]
mod tests;
