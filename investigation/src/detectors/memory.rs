//! Memory that climbs: a container's working set over a long window (6 h, 48 h) growing
//! steadily toward its limit (`kube_pod_container_resource_limits{resource="memory"}` or
//! `container_spec_memory_limit_bytes`, from the same or another evidence item), or climbing
//! and dropping back again and again (a leak cut short by restarts). A spike in memory is a
//! spike (`spikes.rs`).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`MemoryGrowth`] | cause (a leak) | the climb is clear (R² ≥ 0.85 over 2 h or more), or the sawtooth has 3 drops and the container was seen killed |
//!
//! What explains what: a leak explains the OOM kill at the end of its climb, and the restarts
//! and crash loop that follow — so the headline is the leak, and its next step is finding it,
//! never a higher limit that only moves the next kill later.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::containers::same_container;
use super::series::shape::{
    HIGH_R2, LimitProjection, MIN_MEMORY_GROWTH_HOURS, Shape, classify, climbs_from_start,
    describe_growth, describe_shape, first_run, project_to_limit, since_last_reset, stays_flat,
};
use super::series::{
    Item, QuotedSeries, SeriesKind, Unit, all_series, format_bytes, format_duration, format_hours,
    format_percent, items, memory_limit, quotes, resource, short_name, shown, subject,
};
use super::text::quote_line;
use super::{
    Confidence, DetectionContext, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom, cite,
};
use crate::evidence::Evidence;

/// How the memory climbs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
pub enum Climb {
    /// One steady climb.
    Steady {
        from: f64,
        to: f64,
        hours: f64,
        r2: f64,
        /// When it came within 2 % of the limit, if it did.
        reached_at: Option<DateTime<Utc>>,
        /// Hours left until the line meets the limit, if it has not.
        hours_left: Option<f64>,
    },
    /// Climbs cut short by drops (restarts, GC), again and again.
    Sawtooth {
        period_secs: i64,
        drops: usize,
        peak: f64,
    },
}

/// Memory growing steadily, or in a sawtooth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryGrowth {
    /// How the title names the series' subject ("Container `engine`").
    pub who: String,
    /// The series, by name and identifying labels.
    pub series: String,
    pub pod: Option<String>,
    pub container: Option<String>,
    pub climb: Climb,
    /// The memory limit, in bytes, when a limit series fits.
    pub limit: Option<f64>,
    /// The shape in words (`grew from 210 MiB to 480 MiB over 46 h (+5.9 MiB/h, …)`).
    pub shape_words: String,
    /// The span of data shown.
    pub shown: String,
    /// When the climb began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    /// The revision rolled out when the climb began, when the rollout history shows one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began_with: Option<BeganWith>,
}

/// The revision a climb began with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeganWith {
    pub revision: Option<String>,
    pub image: Option<String>,
    pub at: DateTime<Utc>,
}

impl BeganWith {
    /// `, since revision 7 (`registry/app:5.2.0`) rolled out at 02:10 UTC`.
    fn words(&self) -> String {
        let revision = self
            .revision
            .as_deref()
            .map_or("a revision".to_string(), |r| format!("revision {r}"));
        let image = self
            .image
            .as_deref()
            .map_or(String::new(), |i| format!(" (`{i}`)"));
        format!(
            ", since {revision}{image} rolled out at {} UTC",
            self.at.format("%m-%d %H:%M")
        )
    }
}

impl Payload for MemoryGrowth {
    const SPEC: KindSpec = KindSpec {
        name: "memory-growth",
        role: Role::Cause,
        verified_when: "the climb is clear: a line fits it with R² ≥ 0.85 over 2 h or more, or \
                        it climbs and drops back at least three times",
        accounts_for: &[Symptom::Restarts, Symptom::Saturation, Symptom::Unavailable],
    };

    fn example() -> Self {
        Self {
            who: "Container `engine`".into(),
            series: "container_memory_working_set_bytes{container=\"engine\"}".into(),
            pod: Some("engine-7d9f8c6b5-x2k4q".into()),
            container: Some("engine".into()),
            climb: Climb::Steady {
                from: 120.0 * 1048576.0,
                to: 500.0 * 1048576.0,
                hours: 36.0,
                r2: 0.97,
                reached_at: None,
                hours_left: None,
            },
            limit: Some(512.0 * 1048576.0),
            shape_words: "grew from 120 MiB to 500 MiB over 36 h".into(),
            shown: "03-02 00:00 UTC to 03-03 12:00 UTC".into(),
            started: None,
            began_with: None,
        }
    }

    fn title(&self) -> String {
        match &self.climb {
            Climb::Steady {
                from,
                to,
                hours,
                reached_at,
                hours_left,
                ..
            } => {
                let suffix = match (self.limit, reached_at, hours_left) {
                    (Some(limit), Some(_), _) => {
                        format!(", reaching its limit {}", format_bytes(limit))
                    }
                    (Some(limit), None, Some(h)) => {
                        format!(", limit {} in ~{}", format_bytes(limit), format_hours(*h))
                    }
                    _ => String::new(),
                };
                format!(
                    "{} memory grew steadily: {} → {} over {}{suffix}{}",
                    self.who,
                    format_bytes(*from),
                    format_bytes(*to),
                    format_hours(*hours),
                    self.began_with
                        .as_ref()
                        .map_or(String::new(), BeganWith::words)
                )
            }
            Climb::Sawtooth {
                period_secs, drops, ..
            } => format!(
                "{} memory climbs steadily and drops back every ~{} ({drops} drops): a leak cut \
                 short by restarts{}",
                self.who,
                format_duration(chrono::Duration::seconds(*period_secs)),
                self.began_with
                    .as_ref()
                    .map_or(String::new(), BeganWith::words)
            ),
        }
    }

    fn detail(&self) -> String {
        match &self.climb {
            Climb::Steady { r2, .. } => format!(
                "`{}` {} (line fit R² {r2:.2}, data shown {}). A steady climb like this is what \
                 a leak looks like.",
                self.series, self.shape_words, self.shown
            ),
            Climb::Sawtooth { peak, .. } => {
                let of_limit = self.limit.map_or_else(String::new, |l| {
                    format!(
                        " ({} of the {} limit)",
                        format_percent(peak / l),
                        format_bytes(l)
                    )
                });
                format!(
                    "`{}` {}{of_limit}, data shown {}. Memory that climbs and falls back again \
                     and again is typical of a leak cut short by restarts; the termination \
                     reason tells whether the OOM killer did it.",
                    self.series, self.shape_words, self.shown
                )
            }
        }
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.series == other.series
    }

    fn step(&self, scene: &Scene) -> String {
        let which = self
            .container
            .as_deref()
            .map_or_else(|| self.who.clone(), |c| format!("`{c}`"));
        let limit = self
            .limit
            .map(|l| format!(" (now {})", format_bytes(l)))
            .unwrap_or_default();
        format!(
            "Find the leak in {which}: its memory grows steadily, so a higher limit{limit} only \
             delays the next OOM kill. Take a heap profile of a running pod and compare with the \
             release it started with (`kubectl -n {} rollout history {}`).",
            scene.namespace, scene.workload_ref
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        let ours = |pod: &Option<String>, container: &Option<String>| {
            same_container(&self.pod, &self.container, pod, container)
        };
        match &effect.fact {
            Fact::OomKilled(o) => ours(&o.pod, &o.container),
            Fact::RestartTrend(r) => ours(&r.pod, &None),
            Fact::CrashLoop(c) => ours(&c.pod, &c.container),
            Fact::Exited(e) => e.code == 137 && ours(&e.pod, &e.container),
            _ => false,
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let all = items(round.evidence);
    let revisions = super::changes::revisions(round);
    let onset = workload_onset(&all);
    all_series(&all)
        .filter(|(item, kind, _)| *kind == SeriesKind::MemoryUsage && !across_pods(item))
        .filter_map(|(item, _, series)| growth(item.evidence, series, &all, round.ctx))
        .map(|mut finding| {
            if let Some(onset) = &onset {
                onset.date(&mut finding);
            }
            began_with(&mut finding, &revisions);
            finding
        })
        .map(|mut finding| {
            // A sawtooth is also how a garbage-collected heap or a cache looks: its drops are
            // a leak cut short only when the control plane saw the container killed.
            if let Fact::MemoryGrowth(m) = &finding.fact
                && matches!(m.climb, Climb::Sawtooth { .. })
                && !round.found.iter().any(|f| m.explains(f))
            {
                finding.verified = false;
            }
            finding
        })
        .collect()
}

/// When a steady climb left the level the series began at: the last sample still within a
/// tenth of the way from that level to the peak, before the series' first reset. A series
/// that climbs from its first sample began with it.
fn climb_onset(points: &[(f64, f64)]) -> Option<DateTime<Utc>> {
    let points = first_run(points);
    if climbs_from_start(points) {
        return DateTime::from_timestamp(points.first()?.0 as i64, 0);
    }
    let mut first: Vec<f64> = points.iter().take(4).map(|(_, v)| *v).collect();
    if points.len() < 6 {
        return None;
    }
    first.sort_by(f64::total_cmp);
    let level = first[first.len() / 2];
    let peak = points.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max);
    let near_level = level + (peak - level) * 0.1;
    let last_low = points.iter().rposition(|(_, v)| *v <= near_level)?;
    DateTime::from_timestamp(points[last_low].0 as i64, 0)
}

/// Whether `item` is a query over a workload's pods (`pod=~"api-.+"`, answered with a series
/// per pod): read for where a climb began, not as one container's memory.
fn across_pods(item: &Item<'_>) -> bool {
    let mut pods: Vec<&str> = item
        .series
        .iter()
        .filter_map(|(_, s)| s.series.labels.get("pod").map(String::as_str))
        .collect();
    pods.dedup();
    pods.len() >= 2
        && item
            .evidence
            .string_arg(&["query", "expr", "promql"])
            .is_some_and(|q| q.contains("pod=~"))
}

/// Where a workload's climb began, read across its pods: the earliest pod whose memory climbed
/// from its start, while another pod's stayed flat for an hour or more before that.
struct Onset<'a> {
    at: DateTime<Utc>,
    evidence: &'a Evidence,
    series: &'a QuotedSeries<'a>,
}

impl Onset<'_> {
    /// Dates `finding`'s climb by the workload's, when its own series starts with its climb.
    fn date(&self, finding: &mut Finding) {
        let Fact::MemoryGrowth(growth) = &mut finding.fact else {
            return;
        };
        if growth.started.is_some() {
            return;
        }
        growth.started = Some(self.at);
        finding.add_ref(cite(self.evidence, self.series.labels_text.to_string()), 8);
        if let Some(pair) = self.series.pair_texts.first() {
            finding.add_ref(cite(self.evidence, (*pair).to_string()), 8);
        }
    }
}

fn workload_onset<'a>(all: &'a [Item<'a>]) -> Option<Onset<'a>> {
    let across: Vec<(&Evidence, &QuotedSeries<'_>)> = all_series(all)
        .filter(|(item, kind, _)| *kind == SeriesKind::MemoryUsage && across_pods(item))
        .map(|(item, _, series)| (item.evidence, series))
        .collect();
    let climbing = across
        .iter()
        .filter(|(_, s)| climbs_from_start(first_run(&s.series.points)))
        .filter_map(|(e, s)| Some((first_run(&s.series.points).first()?.0, *e, *s)))
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    let (start, evidence, series) = climbing;
    let baseline = across.iter().any(|(_, s)| {
        let before: Vec<(f64, f64)> = first_run(&s.series.points)
            .iter()
            .copied()
            .filter(|(t, _)| *t <= start)
            .collect();
        before.first().is_some_and(|(t, _)| start - t >= 3600.0) && stays_flat(&before)
    });
    baseline.then(|| Onset {
        at: DateTime::from_timestamp(start as i64, 0).unwrap_or_default(),
        evidence,
        series,
    })
}

/// How close before a climb's start (or after it, clocks and scrape intervals apart) a rollout
/// counts as the one it began with.
const BEGAN_BEFORE: Duration = Duration::hours(3);
const BEGAN_AFTER: Duration = Duration::minutes(30);

/// Names the revision rolled out when the climb began: the newest one shortly before its
/// start, cited by its creation time.
fn began_with(finding: &mut Finding, revisions: &[super::changes::Revision<'_>]) {
    let Fact::MemoryGrowth(growth) = &mut finding.fact else {
        return;
    };
    let Some(start) = growth.started else {
        return;
    };
    let Some(revision) = revisions
        .iter()
        .rev()
        .find(|r| r.at >= start - BEGAN_BEFORE && r.at <= start + BEGAN_AFTER)
    else {
        return;
    };
    growth.began_with = Some(BeganWith {
        revision: revision.revision.clone(),
        image: revision.image.clone(),
        at: revision.at,
    });
    finding
        .refs
        .push(cite(revision.evidence, quote_line(revision.time_line)));
}

/// A memory series that grew steadily or in a sawtooth, measured against the limit any item
/// of the round shows for it.
fn growth(
    evidence: &Evidence,
    series: &QuotedSeries<'_>,
    all: &[Item<'_>],
    ctx: &DetectionContext,
) -> Option<Finding> {
    let points = &series.series.points;
    let classified = match classify(points) {
        whole if matches!(whole.shape, Shape::Growth(_) | Shape::Sawtooth(_)) => whole,
        whole if matches!(whole.shape, Shape::Spike { .. }) => return None,
        whole => since_last_reset(points).unwrap_or(whole),
    };
    let limit = memory_limit(series, all);
    let labels = &series.series.labels;
    let mut refs = quotes(evidence, series, &classified.anchors);
    let (climb, confidence, at, shape_words, started) = match &classified.shape {
        Shape::Growth(trend) if trend.hours() >= MIN_MEMORY_GROWTH_HOURS => {
            let projection = limit.map(|(_, _, l)| project_to_limit(points, trend, l));
            if let Some(reached) = projection.as_ref().and_then(|p| p.reached_at)
                && let Some(pair) = series.pair_at(reached.timestamp_millis() as f64 / 1000.0)
            {
                let citation = cite(evidence, pair.to_string());
                if !refs.contains(&citation) {
                    refs.push(citation);
                }
            }
            let clear = trend.r2 >= HIGH_R2 && trend.hours() >= 2.0;
            let (reached_at, hours_left) = match &projection {
                Some(LimitProjection {
                    reached_at,
                    hours_left,
                    ..
                }) => (*reached_at, *hours_left),
                None => (None, None),
            };
            (
                Climb::Steady {
                    from: trend.from,
                    to: trend.to,
                    hours: trend.hours(),
                    r2: trend.r2,
                    reached_at,
                    hours_left,
                },
                if clear {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                reached_at.unwrap_or(trend.start),
                describe_growth(trend, Unit::Bytes, projection.as_ref()),
                climb_onset(points),
            )
        }
        Shape::Sawtooth(saw) => (
            Climb::Sawtooth {
                period_secs: saw.period.num_seconds(),
                drops: saw.resets.len(),
                peak: saw.peak,
            },
            if saw.resets.len() >= 3 {
                Confidence::High
            } else {
                Confidence::Medium
            },
            saw.resets.first().copied().unwrap_or_default(),
            describe_shape(&classified.shape, Unit::Bytes),
            saw.resets.first().map(|first| *first - saw.period),
        ),
        _ => return None,
    };
    // A climb names the revision it began with only when the series shows the container
    // before it (a flat hour or more): a climb that starts with the series starts with the
    // container, whichever revision it runs.
    let first = points.first().map_or(f64::INFINITY, |(t, _)| *t);
    let started = started.filter(|s| s.timestamp() as f64 - first >= 3600.0);
    if let Some((limit_evidence, limit_series, _)) = limit {
        refs.push(cite(limit_evidence, limit_series.labels_text.to_string()));
        if let Some(pair) = limit_series.pair_texts.last() {
            refs.push(cite(limit_evidence, (*pair).to_string()));
        }
    }
    Some(
        Finding::new(
            MemoryGrowth {
                who: subject(series),
                series: short_name(labels),
                pod: labels.get("pod").cloned().or_else(|| resource(series, ctx)),
                container: labels
                    .get("container")
                    .filter(|c| !c.is_empty() && *c != "POD")
                    .cloned(),
                climb,
                limit: limit.map(|(_, _, l)| l),
                shape_words,
                shown: shown(series),
                started,
                began_with: None,
            },
            confidence,
            confidence == Confidence::High,
        )
        .dated(Some(at))
        .citing(refs),
    )
}

#[cfg(test)]
mod tests;
