//! A short excursion that came back: a spike in memory usage or in any other gauge the round
//! read (counters only ever climb; their shape is not news). Steps are the alert metric's
//! (`steps.rs`), climbs are memory's (`memory.rs`).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`MetricSpike`] | symptom | never: a spike shows when something moved, not why |

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::series::shape::{Classified, Shape, classify, describe_shape};
use super::series::{
    QuotedSeries, SeriesKind, Unit, all_series, format_amount, items, quotes, resource, short_name,
    shown,
};
use super::{
    Confidence, DetectionContext, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom,
};
use crate::evidence::Evidence;

/// A spike in a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSpike {
    pub series: String,
    pub peak: f64,
    pub baseline: f64,
    pub at: DateTime<Utc>,
    pub unit: SpikeUnit,
    pub resource: Option<String>,
    /// The shape in words, for the detail.
    pub words: String,
    pub shown: String,
}

/// How a spike's amounts are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpikeUnit {
    Bytes,
    Plain,
}

impl SpikeUnit {
    fn unit(self) -> Unit {
        match self {
            SpikeUnit::Bytes => Unit::Bytes,
            SpikeUnit::Plain => Unit::Plain,
        }
    }
}

impl Payload for MetricSpike {
    const SPEC: KindSpec = KindSpec {
        name: "metric-spike",
        role: Role::Symptom,
        verified_when: "never: a spike shows when something moved, not why",
        accounts_for: &[Symptom::Saturation, Symptom::Latency, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            series: "container_memory_working_set_bytes{container=\"api\"}".into(),
            peak: 900.0 * 1048576.0,
            baseline: 300.0 * 1048576.0,
            at: DateTime::<Utc>::UNIX_EPOCH,
            unit: SpikeUnit::Bytes,
            resource: Some("api-7d9f8c6b5-x2k4q".into()),
            words: "spiked to 900 MiB".into(),
            shown: "03-04 08:00 UTC to 03-04 14:00 UTC".into(),
        }
    }

    fn title(&self) -> String {
        format!(
            "Spike in `{}`: {} at {} UTC (baseline {})",
            self.series,
            format_amount(self.peak, self.unit.unit()),
            self.at.format("%H:%M"),
            format_amount(self.baseline, self.unit.unit())
        )
    }

    fn detail(&self) -> String {
        format!(
            "`{}` {} (data shown {}).",
            self.series, self.words, self.shown
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Series, self.resource.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.series == other.series && self.at == other.at
    }

    fn step(&self, scene: &Scene) -> String {
        format!("Find what happens when the metric moves {}.", scene.when)
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let all = items(round.evidence);
    all_series(&all)
        .filter_map(|(item, kind, series)| spike(item.evidence, kind, series, round.ctx))
        .collect()
}

/// A spike in a memory series or another gauge; counters only ever climb, so their shape is
/// not news.
fn spike(
    evidence: &Evidence,
    kind: SeriesKind,
    series: &QuotedSeries<'_>,
    ctx: &DetectionContext,
) -> Option<Finding> {
    let name = series.series.labels.get("__name__").map(String::as_str);
    let counter = name.is_some_and(|n| {
        ["_total", "_count", "_sum", "_bucket"]
            .iter()
            .any(|s| n.ends_with(s))
    });
    let unit = match kind {
        SeriesKind::MemoryUsage => SpikeUnit::Bytes,
        SeriesKind::Other if !counter && name.is_some_and(|n| n.ends_with("_bytes")) => {
            SpikeUnit::Bytes
        }
        SeriesKind::Other if !counter => SpikeUnit::Plain,
        _ => return None,
    };
    let classified = classify(&series.series.points);
    let Classified {
        shape: Shape::Spike { at, peak, baseline },
        anchors,
    } = &classified
    else {
        return None;
    };
    Some(
        Finding::new(
            MetricSpike {
                series: short_name(&series.series.labels),
                peak: *peak,
                baseline: *baseline,
                at: *at,
                unit,
                resource: resource(series, ctx),
                words: describe_shape(&classified.shape, unit.unit()),
                shown: shown(series),
            },
            if *baseline <= 0.0 || *peak >= 2.0 * baseline {
                Confidence::High
            } else {
                Confidence::Medium
            },
            false,
        )
        .dated(Some(*at))
        .citing(quotes(evidence, series, anchors)),
    )
}

#[cfg(test)]
mod tests;
