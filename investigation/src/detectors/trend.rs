//! Metrics that show shape: what a series did over a long window (6 h, 48 h), not only whether
//! it stepped.
//!
//! An OOM kill says *that* a container died; the memory series of the last two days says
//! whether it was a leak (a steady climb), a burst (a spike), or a limit set too low (flat near
//! it). This module classifies a series' shape with robust statistics ([`classify_shape`]) and
//! reads four kinds of Kubernetes series:
//!
//! - memory usage (`container_memory_working_set_bytes`, `container_memory_rss`): growth, with
//!   a projection to the memory limit (`kube_pod_container_resource_limits{resource="memory"}`
//!   or `container_spec_memory_limit_bytes`, from the same or another evidence item), or a
//!   sawtooth of climbs cut short by restarts → [`DetectorKind::MemoryGrowth`];
//! - CPU throttling (`container_cpu_cfs_throttled_periods_total` / `…_periods_total` counters,
//!   or a precomputed ratio) → [`DetectorKind::CpuThrottling`];
//! - restarts (`kube_pod_container_status_restarts_total`): how many, and whether periodic →
//!   [`DetectorKind::RestartTrend`];
//! - anything else: a spike → [`DetectorKind::MetricSpike`] (steps are the step detector's).
//!
//! A series is recognised by its `__name__`; aggregated results have none, so then by the
//! query in the evidence's arguments. Every finding is a symptom (`verified: false`): a climb
//! gives the OOM detector its "leak over two days" context but never claims a cause itself.
//! Quotes are the series' label object and value pairs cut from the excerpt, which is usually
//! cut too (a 48 h series does not fit): the series are read as far as the excerpt shows them
//! (`metric::quoted_series`), and the text says over which span.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use super::metric::{QuotedSeries, format_value, median, quoted_series};
use super::{Citation, Confidence, DetectionContext, DetectorKind, Finding, cite};
use crate::evidence::{Capability, Evidence};
use firstline_alert::timeparse::from_unix_seconds;

/// Fewer points than this say nothing about shape (an hour at 5-minute steps).
const MIN_POINTS: usize = 12;
/// A change smaller than this many robust standard deviations of the noise is noise.
const NOISE_SIGMAS: f64 = 6.0;
/// A change smaller than this share of the level is not worth a finding (memory moving 30 MiB
/// around 500 MiB is flat).
const MIN_RELATIVE_CHANGE: f64 = 0.10;
/// A spike must stand this many noise deviations above its baseline …
const SPIKE_MIN_SIGMAS: f64 = 8.0;
/// … and this share of the baseline above it.
const SPIKE_MIN_RELATIVE: f64 = 0.3;
/// A spike is short: at most this share of the window (or 3 points) above its half height.
const SPIKE_MAX_SHARE: f64 = 0.1;
/// Points on each side of a spike that make its local baseline.
const SPIKE_CONTEXT: usize = 10;
/// A step must explain the series this much better than a line (two-level squared error at
/// most this share of the line's): a line through a step leaves ~h²/16 per point.
const STEP_SSE_RATIO: f64 = 0.5;
/// Share of points on each side of a step that must lie on their side of the midpoint.
const STEP_SUSTAINED_SHARE: f64 = 0.8;
/// Points required on each side of a step.
const STEP_MIN_SIDE: usize = 3;
/// R² of the line needed to call a climb growth: noise of a tenth of the rise still passes
/// (R² ≈ 0.9), a flat series with a few bumps does not.
const GROWTH_MIN_R2: f64 = 0.6;
/// R² above which growth is clear enough for high confidence.
const HIGH_R2: f64 = 0.85;
/// Memory climbing for less than this is start-up (caches, JIT, pools) as often as a leak.
const MIN_MEMORY_GROWTH_HOURS: f64 = 1.0;
/// A drop is a reset (restart, GC) when it falls at least this share of the series' range.
const RESET_MIN_SHARE: f64 = 0.5;
/// Resets needed to call a series a sawtooth rather than one climb and a drop.
const MIN_RESETS: usize = 2;
/// R² a climb between resets needs.
const CLIMB_MIN_R2: f64 = 0.5;
/// Usage at this share of the limit has reached it: the working set rarely shows the last
/// pages before the kernel kills the container.
const LIMIT_REACHED_SHARE: f64 = 0.98;
/// Throttled share of CFS periods that counts as throttling; the kubernetes-mixin alert
/// `CPUThrottlingHigh` uses 25 %, where latency starts to suffer.
pub const THROTTLING_THRESHOLD: f64 = 0.25;
/// Throttling is sustained when above the threshold this long without a break …
const THROTTLING_MIN_RUN_SECS: f64 = 15.0 * 60.0;
/// … over at least this many samples.
const THROTTLING_MIN_RUN_SAMPLES: usize = 3;
/// Restarts needed before a period is claimed (two intervals that agree).
const MIN_PERIODIC_RESTARTS: usize = 3;
/// Intervals within this share of their median (or 1.5 samples) are the same period.
const PERIOD_TOLERANCE: f64 = 0.25;
/// Below this period restarts are paced by the kubelet's crash-loop back-off (at most 5 min),
/// not by something building up.
const BACKOFF_PACE_SECS: i64 = 6 * 60;

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

/// The shape of a series over its window.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Too few points, or movement without a shape (a random walk, several regimes).
    Unclear,
    /// No change beyond noise or 10 % of the level.
    Flat { level: f64 },
    /// A sustained step up at `at`.
    Step {
        at: DateTime<Utc>,
        before: f64,
        after: f64,
    },
    /// A sustained step down at `at`.
    Drop {
        at: DateTime<Utc>,
        before: f64,
        after: f64,
    },
    /// A short excursion above a baseline that came back.
    Spike {
        at: DateTime<Utc>,
        peak: f64,
        baseline: f64,
    },
    /// A steady climb (a leak, a filling disk).
    Growth(LinearTrend),
    /// A steady fall.
    Decline(LinearTrend),
    /// Climbs cut short by drops, again and again (a leak and restarts, GC).
    Sawtooth(Sawtooth),
}

/// A least-squares line through (part of) a series.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearTrend {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// The fitted value at `start` and at `end` (robust to a noisy first or last point).
    pub from: f64,
    pub to: f64,
    pub slope_per_hour: f64,
    /// Share of the variance the line explains.
    pub r2: f64,
}

impl LinearTrend {
    /// Hours from `start` to `end`.
    pub fn hours(&self) -> f64 {
        (self.end - self.start).num_seconds() as f64 / 3600.0
    }
}

/// Repeated climbs and drops.
#[derive(Debug, Clone, PartialEq)]
pub struct Sawtooth {
    /// When each drop was first seen.
    pub resets: Vec<DateTime<Utc>>,
    /// Median time between drops.
    pub period: Duration,
    /// The highest value before a drop.
    pub peak: f64,
    /// The median value right after a drop.
    pub trough: f64,
    /// Median slope of the climbs.
    pub rise_per_hour: f64,
}

/// How to print a series' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes, printed as KiB / MiB / GiB.
    Bytes,
    /// A share in 0..1, printed as a percentage.
    Ratio,
    /// Anything else, printed as a number.
    Plain,
}

/// Where usage stands against a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitProjection {
    pub limit: f64,
    /// When usage first came within 2 % of the limit, if it did.
    pub reached_at: Option<DateTime<Utc>>,
    /// Hours from the end of the trend until the line meets the limit, when it has not been
    /// reached and usage grows.
    pub hours_left: Option<f64>,
}

/// CPU throttling over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Throttling {
    pub samples: usize,
    pub median: f64,
    pub max: f64,
    pub max_at: DateTime<Utc>,
    /// Share of samples above [`THROTTLING_THRESHOLD`].
    pub share_above: f64,
    /// The longest unbroken stretch above the threshold: start, and length (counting the
    /// last sample's step).
    pub longest_run: Option<(DateTime<Utc>, Duration)>,
    /// Whether that stretch is long enough (15 min, 3 samples) to call throttling sustained.
    pub sustained: bool,
    /// Time from the first to the last sample.
    pub window: Duration,
}

/// Container restarts over a window, from a restart counter.
#[derive(Debug, Clone, PartialEq)]
pub struct Restarts {
    /// Restarts counted in the window (increases of the counter).
    pub count: u32,
    pub first: DateTime<Utc>,
    pub last: DateTime<Utc>,
    /// The regular interval between restarts, when there is one.
    pub period: Option<Duration>,
    /// Time from the first to the last sample.
    pub window: Duration,
}

/// The shape of `points` ((Unix seconds, value), in time order).
pub fn classify_shape(points: &[(f64, f64)]) -> Shape {
    classify(points).shape
}

/// Usage against a constant `limit` (or the last value of a limit series): when it reached
/// the limit, else when the trend's line meets it.
pub fn project_to_limit(points: &[(f64, f64)], trend: &LinearTrend, limit: f64) -> LimitProjection {
    let reached_at = points
        .iter()
        .find(|(_, v)| *v >= LIMIT_REACHED_SHARE * limit)
        .map(|(t, _)| time(*t));
    let hours_left = (reached_at.is_none() && trend.slope_per_hour > 0.0)
        .then(|| ((limit - trend.to) / trend.slope_per_hour).max(0.0));
    LimitProjection {
        limit,
        reached_at,
        hours_left,
    }
}

/// The limit a limit series sets now: its last positive value (0 means "no limit").
pub fn limit_from_series(points: &[(f64, f64)]) -> Option<f64> {
    points.last().map(|(_, v)| *v).filter(|v| *v > 0.0)
}

/// "grew from 210 MiB to 480 MiB over 46 h (+5.9 MiB/h, 2.8 %/h); at this rate the limit
/// 512 MiB is reached in 5.4 h (around 19:20 UTC)".
pub fn describe_growth(
    trend: &LinearTrend,
    unit: Unit,
    projection: Option<&LimitProjection>,
) -> String {
    let verb = if trend.slope_per_hour >= 0.0 {
        "grew"
    } else {
        "fell"
    };
    let relative = if unit != Unit::Ratio && trend.from > 0.0 {
        format!(
            ", {:.1} %/h",
            100.0 * trend.slope_per_hour.abs() / trend.from
        )
    } else {
        String::new()
    };
    let mut text = format!(
        "{verb} from {} to {} over {} ({}{}/h{relative})",
        format_amount(trend.from, unit),
        format_amount(trend.to, unit),
        format_hours(trend.hours()),
        if trend.slope_per_hour >= 0.0 {
            "+"
        } else {
            "−"
        },
        format_amount(trend.slope_per_hour.abs(), unit),
    );
    if let Some(p) = projection {
        let limit = format_amount(p.limit, unit);
        if let Some(at) = p.reached_at {
            text.push_str(&format!(
                "; it reached the limit {limit} at {} UTC",
                at.format("%H:%M")
            ));
        } else if let Some(hours) = p.hours_left {
            let when = trend.end + Duration::seconds((hours * 3600.0).round() as i64);
            text.push_str(&format!(
                "; at this rate the limit {limit} is reached in {} (around {} UTC)",
                format_hours(hours),
                when.format("%H:%M")
            ));
        } else {
            text.push_str(&format!("; the limit is {limit}"));
        }
    }
    text
}

/// One sentence for any shape, for the report writer.
pub fn describe_shape(shape: &Shape, unit: Unit) -> String {
    let v = |x: f64| format_amount(x, unit);
    match shape {
        Shape::Unclear => "moved without a clear shape".to_string(),
        Shape::Flat { level } => format!("stayed flat around {}", v(*level)),
        Shape::Step { at, before, after } => format!(
            "stepped up from {} to {} at {} UTC and stayed there",
            v(*before),
            v(*after),
            at.format("%H:%M")
        ),
        Shape::Drop { at, before, after } => format!(
            "dropped from {} to {} at {} UTC and stayed there",
            v(*before),
            v(*after),
            at.format("%H:%M")
        ),
        Shape::Spike { at, peak, baseline } => format!(
            "spiked to {} at {} UTC from a baseline of {}, then came back",
            v(*peak),
            at.format("%H:%M"),
            v(*baseline)
        ),
        Shape::Growth(trend) | Shape::Decline(trend) => describe_growth(trend, unit, None),
        Shape::Sawtooth(s) => format!(
            "climbs about {}/h and falls back to ~{} every ~{} ({} drops), peaking at {}",
            v(s.rise_per_hour),
            v(s.trough),
            format_duration(s.period),
            s.resets.len(),
            v(s.peak)
        ),
    }
}

/// "throttled above 25 % in 72 % of the samples over 6.0 h (median 41 %, max 88 % at 11:05
/// UTC); longest stretch 3.2 h from 10:05 UTC".
pub fn describe_throttling(t: &Throttling) -> String {
    let mut text = format!(
        "throttled above {} in {} of the samples over {} (median {}, max {} at {} UTC)",
        format_percent(THROTTLING_THRESHOLD),
        format_percent(t.share_above),
        format_duration(t.window),
        format_percent(t.median),
        format_percent(t.max),
        t.max_at.format("%H:%M")
    );
    if let Some((start, length)) = t.longest_run {
        text.push_str(&format!(
            "; longest stretch {} from {} UTC",
            format_duration(length),
            start.format("%H:%M")
        ));
    }
    text
}

/// "restarted 9 times in 6.0 h (first 08:40, last 14:00 UTC), every ~40 min: …".
pub fn describe_restarts(r: &Restarts) -> String {
    let times = if r.count == 1 {
        "once".to_string()
    } else {
        format!("{} times", r.count)
    };
    let mut text = format!(
        "restarted {times} in {} (first {}, last {} UTC)",
        format_duration(r.window),
        r.first.format("%H:%M"),
        r.last.format("%H:%M")
    );
    if let Some(period) = r.period {
        text.push_str(&format!(", every ~{}", format_duration(period)));
        if period.num_seconds() <= BACKOFF_PACE_SECS {
            text.push_str(": the pace of the kubelet's crash-loop back-off");
        } else {
            text.push_str(
                ": a steady period like this is typical of something that builds up until the \
                 container dies, such as memory filling until the OOM killer stops it (the last \
                 termination reason tells)",
            );
        }
    }
    text
}

/// Throttling over a window from a ratio series (throttled periods / periods, 0..1).
pub fn summarise_throttling(ratio: &[(f64, f64)]) -> Option<Throttling> {
    throttling(ratio).map(|(t, _)| t)
}

/// Per-step increases of a counter (the later sample's time). A decrease is a counter reset:
/// the counter restarted from zero, so its new value is the increase.
pub fn counter_increases(counter: &[(f64, f64)]) -> Vec<(f64, f64)> {
    counter
        .windows(2)
        .map(|w| {
            let delta = w[1].1 - w[0].1;
            (w[1].0, if delta >= 0.0 { delta } else { w[1].1 })
        })
        .collect()
}

/// Per-step amounts of a series that may be a raw counter (rising, reset to zero now and then)
/// or already per-step values (an `increase(…)` the server evaluated, or a flat rate): a counter
/// gives its increases, anything else its values.
fn per_step(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    // A busy counter rises at nearly every sample; per-step values mostly hold or wobble.
    let steps = points.len().saturating_sub(1);
    let rises = points.windows(2).filter(|w| w[1].1 > w[0].1).count();
    let falls = points.windows(2).filter(|w| w[1].1 < w[0].1).count();
    let counter = steps >= 2 && rises * 5 >= steps * 4 && falls * 10 <= rises;
    if counter {
        counter_increases(points)
    } else {
        points.to_vec()
    }
}

/// Throttled share per step from the increases of the throttled-periods and periods counters
/// (joined on time; steps without periods are skipped).
pub fn throttling_ratio(throttled: &[(f64, f64)], periods: &[(f64, f64)]) -> Vec<(f64, f64)> {
    throttled
        .iter()
        .filter_map(|(t, thr)| {
            let (_, per) = periods.iter().find(|(pt, _)| (pt - t).abs() < 1e-3)?;
            (*per > 0.0).then(|| (*t, (thr / per).clamp(0.0, 1.0)))
        })
        .collect()
}

/// Restarts in a window from a restart counter; `None` when it did not move.
pub fn summarise_restarts(counter: &[(f64, f64)]) -> Option<Restarts> {
    restarts(counter).map(|(r, _)| r)
}

/// Shape findings for one metric evidence item; memory limits and CFS period counters are
/// looked for in the same item only. [`detect_trends`] pools them across a round's items.
pub fn detect_shapes(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    let Some(item) = parse_item(evidence) else {
        return Vec::new();
    };
    findings_for(&item, std::slice::from_ref(&item), ctx)
}

/// Shape findings for all metric evidence of a round: a working-set series in one item is
/// measured against a limit series fetched in another.
pub fn detect_trends(evidence: &[Evidence], ctx: &DetectionContext) -> Vec<Finding> {
    let items: Vec<Item> = evidence.iter().filter_map(parse_item).collect();
    items
        .iter()
        .flat_map(|item| findings_for(item, &items, ctx))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Classification

/// A shape and the points (indices) that show it: quotes are cut at these.
struct Classified {
    shape: Shape,
    anchors: Vec<usize>,
}

impl Classified {
    fn unclear() -> Self {
        Self {
            shape: Shape::Unclear,
            anchors: Vec::new(),
        }
    }

    /// Re-indexes anchors found in a subset of the points.
    fn mapped(self, index: impl Fn(usize) -> usize) -> Self {
        Self {
            shape: self.shape,
            anchors: self.anchors.into_iter().map(index).collect(),
        }
    }
}

/// The growth of the running instance: the points after the last drop to under 70 % of the
/// value before it (a restart), when there are enough of them and they climb.
fn since_last_reset(points: &[(f64, f64)]) -> Option<Classified> {
    let start = (1..points.len())
        .rev()
        .find(|&i| points[i].1 < 0.7 * points[i - 1].1)?;
    let current = classify(&points[start..]);
    matches!(current.shape, Shape::Growth(_)).then(|| Classified {
        anchors: current.anchors.iter().map(|i| i + start).collect(),
        shape: current.shape,
    })
}

fn classify(points: &[(f64, f64)]) -> Classified {
    if points.len() < MIN_POINTS {
        return Classified::unclear();
    }
    let values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    let Some(spike) = find_spike(&values, noise(&values)) else {
        return classify_without_spike(points);
    };
    // A spike on top of a climb: the climb is the bigger story (a leak with one burst).
    let rest: Vec<usize> = (0..points.len())
        .filter(|i| !spike.run.contains(i))
        .collect();
    let rest_points: Vec<(f64, f64)> = rest.iter().map(|&i| points[i]).collect();
    let under = classify_without_spike(&rest_points);
    if matches!(under.shape, Shape::Flat { .. } | Shape::Unclear) {
        return Classified {
            shape: Shape::Spike {
                at: time(points[spike.peak].0),
                peak: values[spike.peak],
                baseline: spike.baseline,
            },
            anchors: vec![spike.peak],
        };
    }
    under.mapped(|i| rest[i])
}

fn classify_without_spike(points: &[(f64, f64)]) -> Classified {
    let n = points.len();
    if n < MIN_POINTS {
        return Classified::unclear();
    }
    let values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    let resets = find_resets(&values, noise(&values));
    if resets.len() >= MIN_RESETS
        && let Some(saw) = sawtooth(points, &values, &resets)
    {
        return saw;
    }
    if let [reset] = resets[..] {
        // One climb ended by one drop (the OOM kill at the end of the window): the climb is
        // the shape, measured where it happened.
        let (a, b) = if reset >= n - reset {
            (0, reset)
        } else {
            (reset, n)
        };
        if b - a >= MIN_POINTS && 2 * (b - a) >= n {
            let part = classify_core(&points[a..b]);
            if matches!(part.shape, Shape::Growth(_)) {
                return part.mapped(|i| i + a);
            }
        }
    }
    classify_core(points)
}

/// Flat, step, drop, growth or decline: two constant levels against one line.
fn classify_core(points: &[(f64, f64)]) -> Classified {
    let n = points.len();
    if n < MIN_POINTS {
        return Classified::unclear();
    }
    let Some(line) = fit(points) else {
        return Classified::unclear();
    };
    let values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    let sigma = noise(&values);
    let material = |a: f64, b: f64| {
        let d = (b - a).abs();
        d >= NOISE_SIGMAS * sigma && d >= MIN_RELATIVE_CHANGE * a.abs().max(b.abs())
    };
    if let Some((split, sse_two)) = best_split(&values, STEP_MIN_SIDE) {
        let before = median(&values[..split]);
        let after = median(&values[split..]);
        if sse_two <= STEP_SSE_RATIO * line.sse
            && material(before, after)
            && sustained(&values, split, before, after)
        {
            let at = time(points[split].0);
            let shape = if after > before {
                Shape::Step { at, before, after }
            } else {
                Shape::Drop { at, before, after }
            };
            return Classified {
                shape,
                anchors: vec![split - 1, split],
            };
        }
    }
    let (first, last) = (points[0].0, points[n - 1].0);
    let (from, to) = (line.value_at(first), line.value_at(last));
    // The line's R² already weighs the rise against the noise (R² ≥ 0.6 needs a rise of
    // over 4 noise deviations), so only the share of the level is asked here.
    let grew_enough = (to - from).abs() >= MIN_RELATIVE_CHANGE * from.abs().max(to.abs());
    if line.r2 >= GROWTH_MIN_R2 && grew_enough && steady(&values, to - from) {
        let trend = LinearTrend {
            start: time(first),
            end: time(last),
            from,
            to,
            slope_per_hour: line.slope * 3600.0,
            r2: line.r2,
        };
        let shape = if to > from {
            Shape::Growth(trend)
        } else {
            Shape::Decline(trend)
        };
        return Classified {
            shape,
            anchors: vec![0, n - 1],
        };
    }
    let shape = if material(percentile(&values, 0.05), percentile(&values, 0.95)) {
        Shape::Unclear
    } else {
        Shape::Flat {
            level: median(&values),
        }
    };
    Classified {
        shape,
        anchors: Vec::new(),
    }
}

/// Most points on each side of a split lie on their side of the midpoint.
fn sustained(values: &[f64], split: usize, before: f64, after: f64) -> bool {
    let mid = (before + after) / 2.0;
    let up = after > before;
    let share = |part: &[f64], high: bool| {
        part.iter().filter(|v| (**v > mid) == high).count() as f64 / part.len() as f64
    };
    share(&values[..split], !up) >= STEP_SUSTAINED_SHARE
        && share(&values[split..], up) >= STEP_SUSTAINED_SHARE
}

/// The quarter medians move the way the line does, without a quarter falling back: a line
/// through "flat, then a jump at the end" has a decent R² but is not steady.
fn steady(values: &[f64], rise: f64) -> bool {
    let q = values.len() / 4;
    let quarters: Vec<f64> = (0..4)
        .map(|k| {
            let end = if k == 3 { values.len() } else { (k + 1) * q };
            median(&values[k * q..end])
        })
        .collect();
    let sign = rise.signum();
    quarters
        .windows(2)
        .all(|w| sign * (w[1] - w[0]) >= -0.1 * rise.abs())
        && sign * (quarters[3] - quarters[0]) >= 0.5 * rise.abs()
}

struct SpikeAt {
    peak: usize,
    run: std::ops::Range<usize>,
    baseline: f64,
}

/// The highest point, when it is a short excursion that came back to where it started.
fn find_spike(values: &[f64], sigma: f64) -> Option<SpikeAt> {
    let n = values.len();
    let peak = (0..n).max_by(|&a, &b| values[a].total_cmp(&values[b]))?;
    let mut baseline = median(values);
    let mut run = peak..peak + 1;
    // The run depends on the baseline and the local baseline on the run: settle twice.
    for _ in 0..2 {
        let half = baseline + (values[peak] - baseline) / 2.0;
        let mut a = peak;
        while a > 0 && values[a - 1] > half {
            a -= 1;
        }
        let mut b = peak + 1;
        while b < n && values[b] > half {
            b += 1;
        }
        run = a..b;
        let around: Vec<f64> = values[a.saturating_sub(SPIKE_CONTEXT)..a]
            .iter()
            .chain(&values[b..(b + SPIKE_CONTEXT).min(n)])
            .copied()
            .collect();
        if around.is_empty() {
            return None;
        }
        baseline = median(&around);
    }
    let excursion = values[peak] - baseline;
    let short = run.len() as f64 <= (SPIKE_MAX_SHARE * n as f64).max(3.0);
    // Points on both sides: a climb that ends at its maximum is not a spike.
    let inside = run.start >= 2 && n - run.end >= 2;
    let big =
        excursion >= SPIKE_MIN_SIGMAS * sigma && excursion >= SPIKE_MIN_RELATIVE * baseline.abs();
    let before = median(&values[run.start.saturating_sub(SPIKE_CONTEXT)..run.start]);
    let after = median(&values[run.end..(run.end + SPIKE_CONTEXT).min(n)]);
    let came_back = (after - before).abs() <= 0.25 * excursion;
    (short && inside && big && came_back).then_some(SpikeAt {
        peak,
        run,
        baseline,
    })
}

/// Indices right after a drop that ends a climb: a restart, or GC. A drop after a single high
/// point is a spike's end, not a reset.
fn find_resets(values: &[f64], sigma: f64) -> Vec<usize> {
    let range = percentile(values, 0.95) - percentile(values, 0.05);
    let threshold = (RESET_MIN_SHARE * range).max(NOISE_SIGMAS * sigma);
    let mut resets = Vec::new();
    let mut start = 0;
    for i in 2..values.len() {
        let drop = values[i - 1] - values[i];
        if drop < threshold || i - start < 3 {
            continue;
        }
        let base = median(&values[start..(start + 3).min(i)]);
        let climbed = values[i - 1] - base >= 0.5 * drop;
        let gradual = values[i - 1] - values[i - 2] <= 0.5 * drop;
        if climbed && gradual {
            resets.push(i);
            start = i;
        }
    }
    resets
}

fn sawtooth(points: &[(f64, f64)], values: &[f64], resets: &[usize]) -> Option<Classified> {
    let n = values.len();
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(resets.iter().copied())
        .chain(std::iter::once(n))
        .collect();
    let mut long = 0;
    let mut climbs = Vec::new();
    for w in bounds.windows(2) {
        if w[1] - w[0] < 3 {
            continue;
        }
        long += 1;
        if let Some(f) = fit(&points[w[0]..w[1]])
            && f.slope > 0.0
            && f.r2 >= CLIMB_MIN_R2
        {
            climbs.push(f.slope * 3600.0);
        }
    }
    if climbs.len() < 2 || 3 * climbs.len() < 2 * long {
        return None;
    }
    let peak_index = resets
        .iter()
        .map(|&r| r - 1)
        .max_by(|&a, &b| values[a].total_cmp(&values[b]))?;
    let troughs: Vec<f64> = resets.iter().map(|&r| values[r]).collect();
    let intervals: Vec<f64> = resets
        .windows(2)
        .map(|w| points[w[1]].0 - points[w[0]].0)
        .collect();
    let first = *resets.first()?;
    Some(Classified {
        shape: Shape::Sawtooth(Sawtooth {
            resets: resets.iter().map(|&r| time(points[r].0)).collect(),
            period: Duration::seconds(median(&intervals).round() as i64),
            peak: values[peak_index],
            trough: median(&troughs),
            rise_per_hour: median(&climbs),
        }),
        anchors: vec![peak_index, first - 1, first],
    })
}

struct Fit {
    /// Per second.
    slope: f64,
    intercept: f64,
    t0: f64,
    r2: f64,
    sse: f64,
}

impl Fit {
    fn value_at(&self, t: f64) -> f64 {
        self.intercept + self.slope * (t - self.t0)
    }
}

/// Ordinary least squares of value on time.
fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    let (first, _) = *points.first()?;
    let n = points.len() as f64;
    let mean_t = points.iter().map(|(t, _)| t - first).sum::<f64>() / n;
    let mean_v = points.iter().map(|(_, v)| v).sum::<f64>() / n;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (t, v) in points {
        let (dt, dv) = (t - first - mean_t, v - mean_v);
        sxx += dt * dt;
        sxy += dt * dv;
        syy += dv * dv;
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let line = Fit {
        slope,
        intercept: mean_v - slope * mean_t,
        t0: first,
        r2: 0.0,
        sse: 0.0,
    };
    let sse: f64 = points
        .iter()
        .map(|(t, v)| (v - line.value_at(*t)).powi(2))
        .sum();
    let r2 = if syy > 0.0 { 1.0 - sse / syy } else { 0.0 };
    Some(Fit { r2, sse, ..line })
}

/// The split into two constant levels with the least squared error, and that error.
fn best_split(values: &[f64], min_side: usize) -> Option<(usize, f64)> {
    let n = values.len();
    if n < 2 * min_side {
        return None;
    }
    let mut sum = vec![0.0; n + 1];
    let mut sum_sq = vec![0.0; n + 1];
    for (i, v) in values.iter().enumerate() {
        sum[i + 1] = sum[i] + v;
        sum_sq[i + 1] = sum_sq[i] + v * v;
    }
    let sse = |a: usize, b: usize| {
        let s = sum[b] - sum[a];
        ((sum_sq[b] - sum_sq[a]) - s * s / (b - a) as f64).max(0.0)
    };
    (min_side..=n - min_side)
        .map(|k| (k, sse(0, k) + sse(k, n)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Robust noise: the spread of point-to-point differences (median absolute deviation), so a
/// trend, a step or a few jumps do not inflate it. Floored at 0.1 % of the level so perfectly
/// smooth series still have a scale.
fn noise(values: &[f64]) -> f64 {
    let diffs: Vec<f64> = values.windows(2).map(|w| w[1] - w[0]).collect();
    let centre = median(&diffs);
    let deviations: Vec<f64> = diffs.iter().map(|d| (d - centre).abs()).collect();
    let sigma = 1.4826 * median(&deviations) / std::f64::consts::SQRT_2;
    sigma.max(1e-3 * median(values).abs()).max(1e-12)
}

fn percentile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let index = (q * (sorted.len().saturating_sub(1)) as f64).round() as usize;
    sorted.get(index).copied().unwrap_or(0.0)
}

/// A sample's time. `quoted_series` keeps only timestamps that convert, so the epoch fallback
/// only ever shows for points handed to the pure API.
fn time(ts: f64) -> DateTime<Utc> {
    from_unix_seconds(ts).unwrap_or_default()
}

/// Median time between samples, in seconds.
fn sample_step(points: &[(f64, f64)]) -> f64 {
    let diffs: Vec<f64> = points.windows(2).map(|w| w[1].0 - w[0].0).collect();
    median(&diffs)
}

fn span(points: &[(f64, f64)]) -> Duration {
    match (points.first(), points.last()) {
        (Some(a), Some(b)) => Duration::seconds((b.0 - a.0).round() as i64),
        _ => Duration::zero(),
    }
}

/// Throttling and the index of its maximum and of its longest stretch's start.
fn throttling(ratio: &[(f64, f64)]) -> Option<(Throttling, [usize; 2])> {
    let values: Vec<f64> = ratio.iter().map(|(_, v)| *v).collect();
    let max_index = (0..values.len()).max_by(|&a, &b| values[a].total_cmp(&values[b]))?;
    let step = sample_step(ratio);
    let above: Vec<bool> = values.iter().map(|v| *v > THROTTLING_THRESHOLD).collect();
    // The longest run of consecutive samples above the threshold.
    let mut best: Option<(usize, usize)> = None;
    let mut start = None;
    for (i, &high) in above.iter().chain(std::iter::once(&false)).enumerate() {
        match (high, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if best.is_none_or(|(bs, be)| i - s > be - bs) {
                    best = Some((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    let run = best.map(|(s, e)| {
        let seconds = ratio[e - 1].0 - ratio[s].0 + step;
        (s, e - s, seconds)
    });
    let sustained = run.is_some_and(|(_, samples, seconds)| {
        samples >= THROTTLING_MIN_RUN_SAMPLES && seconds >= THROTTLING_MIN_RUN_SECS
    });
    let summary = Throttling {
        samples: values.len(),
        median: median(&values),
        max: values[max_index],
        max_at: time(ratio[max_index].0),
        share_above: above.iter().filter(|a| **a).count() as f64 / values.len() as f64,
        longest_run: run
            .map(|(s, _, seconds)| (time(ratio[s].0), Duration::seconds(seconds.round() as i64))),
        sustained,
        window: span(ratio),
    };
    Some((summary, [max_index, run.map_or(max_index, |(s, _, _)| s)]))
}

/// Restarts and the indices of the first and last restart.
fn restarts(counter: &[(f64, f64)]) -> Option<(Restarts, [usize; 2])> {
    // (index, restarts in that step); a decrease is a new series (pod replaced), not a restart.
    let events: Vec<(usize, u32)> = counter
        .windows(2)
        .enumerate()
        .filter_map(|(i, w)| {
            let delta = w[1].1 - w[0].1;
            (delta >= 0.5).then(|| (i + 1, delta.round() as u32))
        })
        .collect();
    let (first, _) = *events.first()?;
    let (last, _) = *events.last()?;
    let step = sample_step(counter);
    // Several restarts inside one sample hide their interval: no period then.
    let period = (events.len() >= MIN_PERIODIC_RESTARTS && events.iter().all(|(_, k)| *k == 1))
        .then(|| {
            let intervals: Vec<f64> = events
                .windows(2)
                .map(|w| counter[w[1].0].0 - counter[w[0].0].0)
                .collect();
            let typical = median(&intervals);
            let tolerance = (PERIOD_TOLERANCE * typical).max(1.5 * step);
            intervals
                .iter()
                .all(|i| (i - typical).abs() <= tolerance)
                .then(|| Duration::seconds(typical.round() as i64))
        })
        .flatten();
    Some((
        Restarts {
            count: events.iter().map(|(_, k)| k).sum(),
            first: time(counter[first].0),
            last: time(counter[last].0),
            period,
            window: span(counter),
        },
        [first, last],
    ))
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

fn format_bytes(bytes: f64) -> String {
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

fn format_percent(share: f64) -> String {
    let percent = share * 100.0;
    if percent.abs() >= 10.0 || percent == 0.0 {
        format!("{percent:.0} %")
    } else {
        format!("{percent:.1} %")
    }
}

fn format_hours(hours: f64) -> String {
    format_duration(Duration::seconds((hours * 3600.0).round() as i64))
}

/// "40 min", "5.4 h", "46 h".
fn format_duration(d: Duration) -> String {
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
// Evidence

/// What a series holds, from its name or the query that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeriesKind {
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

fn kind_of_query(query: &str) -> SeriesKind {
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
struct Item<'a> {
    evidence: &'a Evidence,
    series: Vec<(SeriesKind, QuotedSeries<'a>)>,
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

fn findings_for(item: &Item, all: &[Item], ctx: &DetectionContext) -> Vec<Finding> {
    let mut out = Vec::new();
    for (kind, series) in &item.series {
        let found = match kind {
            SeriesKind::MemoryUsage => memory(item.evidence, series, all, ctx),
            SeriesKind::ThrottleRatio => ratio_throttling(item.evidence, series, ctx),
            // Undivided counters pair up; a lone "counter" from a ratio query holds the
            // ratio's values under the numerator's name.
            SeriesKind::ThrottledPeriods => {
                counter_throttling(item, series, all, ctx).or_else(|| {
                    let ratio_query = item
                        .evidence
                        .string_arg(&["query", "expr", "promql"])
                        .is_some_and(|q| kind_of_query(q) == SeriesKind::ThrottleRatio);
                    ratio_query
                        .then(|| ratio_throttling(item.evidence, series, ctx))
                        .flatten()
                })
            }
            SeriesKind::Restarts => restart_trend(item.evidence, series, ctx),
            SeriesKind::Other => generic(item.evidence, series, ctx),
            // Read alongside the series they belong to.
            SeriesKind::MemoryLimit | SeriesKind::CfsPeriods => None,
        };
        out.extend(found);
    }
    out
}

/// The label object plus the pairs at `anchors`.
fn quotes(evidence: &Evidence, series: &QuotedSeries, anchors: &[usize]) -> Vec<Citation> {
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

/// "Container `api`" / "Pod `api-7d9…`" / "`name{…}`", as titles start (next steps read the
/// container from "Container `…`").
fn subject(series: &QuotedSeries) -> String {
    let labels = &series.series.labels;
    match (labels.get("container"), labels.get("pod")) {
        (Some(c), _) if !c.is_empty() && c != "POD" => format!("Container `{c}`"),
        (_, Some(p)) if !p.is_empty() => format!("Pod `{p}`"),
        _ => format!("`{}`", short_name(labels)),
    }
}

/// The name and the labels that identify a workload, without cAdvisor's long `id`s.
fn short_name(labels: &BTreeMap<String, String>) -> String {
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

fn resource(series: &QuotedSeries, ctx: &DetectionContext) -> Option<String> {
    let labels = &series.series.labels;
    ["pod", "deployment", "service", "job_name"]
        .iter()
        .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()).cloned())
        .or_else(|| ctx.default_resource.clone())
}

/// The span of the series the excerpt shows: a long range is often cut, and the finding says
/// what it saw.
fn shown(series: &QuotedSeries) -> String {
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
fn memory_limit<'a>(
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

fn memory(
    evidence: &Evidence,
    series: &QuotedSeries,
    all: &[Item],
    ctx: &DetectionContext,
) -> Option<Finding> {
    let points = &series.series.points;
    let classified = match classify(points) {
        whole
            if matches!(
                whole.shape,
                Shape::Growth(_) | Shape::Sawtooth(_) | Shape::Spike { .. }
            ) =>
        {
            whole
        }
        whole => since_last_reset(points).unwrap_or(whole),
    };
    let limit = memory_limit(series, all);
    let who = subject(series);
    let name = short_name(&series.series.labels);
    let mut refs = quotes(evidence, series, &classified.anchors);
    let (title, detail, confidence, at) = match &classified.shape {
        Shape::Growth(trend) if trend.hours() >= MIN_MEMORY_GROWTH_HOURS => {
            let projection = limit.map(|(_, _, l)| project_to_limit(points, trend, l));
            let suffix = match &projection {
                Some(LimitProjection {
                    reached_at: Some(_),
                    limit,
                    ..
                }) => format!(", reaching its limit {}", format_bytes(*limit)),
                Some(LimitProjection {
                    hours_left: Some(h),
                    limit,
                    ..
                }) => format!(", limit {} in ~{}", format_bytes(*limit), format_hours(*h)),
                _ => String::new(),
            };
            if let Some(reached) = projection.as_ref().and_then(|p| p.reached_at)
                && let Some(pair) = series.pair_at(reached.timestamp_millis() as f64 / 1000.0)
            {
                let citation = cite(evidence, pair.to_string());
                if !refs.contains(&citation) {
                    refs.push(citation);
                }
            }
            let clear = trend.r2 >= HIGH_R2 && trend.hours() >= 2.0;
            (
                format!(
                    "{who} memory grew steadily: {} → {} over {}{suffix}",
                    format_bytes(trend.from),
                    format_bytes(trend.to),
                    format_hours(trend.hours())
                ),
                format!(
                    "`{name}` {} (line fit R² {:.2}, data shown {}). A steady climb like this is \
                     what a leak looks like; on its own it does not say why the container failed.",
                    describe_growth(trend, Unit::Bytes, projection.as_ref()),
                    trend.r2,
                    shown(series)
                ),
                if clear {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                projection.and_then(|p| p.reached_at).unwrap_or(trend.start),
            )
        }
        Shape::Sawtooth(saw) => {
            let of_limit = limit.map_or_else(String::new, |(_, _, l)| {
                format!(
                    " ({} of the {} limit)",
                    format_percent(saw.peak / l),
                    format_bytes(l)
                )
            });
            (
                format!(
                    "{who} memory climbs and drops back every ~{} ({} drops)",
                    format_duration(saw.period),
                    saw.resets.len()
                ),
                format!(
                    "`{name}` {}{of_limit}, data shown {}. Memory that climbs and falls back \
                     again and again is typical of a leak cut short by restarts; the \
                     termination reason tells whether the OOM killer did it.",
                    describe_shape(&classified.shape, Unit::Bytes),
                    shown(series)
                ),
                if saw.resets.len() >= 3 {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
                saw.resets.first().copied().unwrap_or_default(),
            )
        }
        Shape::Spike { .. } => return spike(evidence, series, &classified, Unit::Bytes, ctx),
        _ => return None,
    };
    if let Some((limit_evidence, limit_series, _)) = limit {
        refs.push(cite(limit_evidence, limit_series.labels_text.to_string()));
        if let Some(pair) = limit_series.pair_texts.last() {
            refs.push(cite(limit_evidence, (*pair).to_string()));
        }
    }
    Some(Finding {
        detector: DetectorKind::MemoryGrowth,
        title,
        detail,
        confidence,
        verified: false,
        resource: resource(series, ctx),
        refs,
        at: Some(at),
    })
}

fn spike(
    evidence: &Evidence,
    series: &QuotedSeries,
    classified: &Classified,
    unit: Unit,
    ctx: &DetectionContext,
) -> Option<Finding> {
    let Shape::Spike { at, peak, baseline } = classified.shape else {
        return None;
    };
    let name = short_name(&series.series.labels);
    Some(Finding {
        detector: DetectorKind::MetricSpike,
        title: format!(
            "Spike in `{name}`: {} at {} UTC (baseline {})",
            format_amount(peak, unit),
            at.format("%H:%M"),
            format_amount(baseline, unit)
        ),
        detail: format!(
            "`{name}` {} (data shown {}).",
            describe_shape(&classified.shape, unit),
            shown(series)
        ),
        confidence: if baseline <= 0.0 || peak >= 2.0 * baseline {
            Confidence::High
        } else {
            Confidence::Medium
        },
        verified: false,
        resource: resource(series, ctx),
        refs: quotes(evidence, series, &classified.anchors),
        at: Some(at),
    })
}

fn generic(evidence: &Evidence, series: &QuotedSeries, ctx: &DetectionContext) -> Option<Finding> {
    let name = series.series.labels.get("__name__").map(String::as_str);
    // Counters only ever climb; their shape is not news.
    if name.is_some_and(|n| {
        ["_total", "_count", "_sum", "_bucket"]
            .iter()
            .any(|s| n.ends_with(s))
    }) {
        return None;
    }
    let unit = if name.is_some_and(|n| n.ends_with("_bytes")) {
        Unit::Bytes
    } else {
        Unit::Plain
    };
    spike(
        evidence,
        series,
        &classify(&series.series.points),
        unit,
        ctx,
    )
}

fn throttling_finding(
    series: &QuotedSeries,
    ratio: &[(f64, f64)],
    refs: impl FnOnce([usize; 2]) -> Vec<Citation>,
    ctx: &DetectionContext,
) -> Option<Finding> {
    let (t, anchors) = throttling(ratio)?;
    if !t.sustained {
        return None;
    }
    let ongoing = ratio
        .iter()
        .rev()
        .take(THROTTLING_MIN_RUN_SAMPLES)
        .all(|(_, v)| *v > THROTTLING_THRESHOLD);
    Some(Finding {
        detector: DetectorKind::CpuThrottling,
        title: match t.longest_run {
            // A recent onset: the median over the window understates it.
            Some((since, _)) if ongoing && t.median <= THROTTLING_THRESHOLD => format!(
                "{} CPU-throttled since {} UTC: up to {} of CFS periods",
                subject(series),
                since.format("%H:%M"),
                format_percent(t.max)
            ),
            _ => format!(
                "{} CPU-throttled: median {}, max {} of CFS periods",
                subject(series),
                format_percent(t.median),
                format_percent(t.max)
            ),
        },
        detail: format!(
            "`{}` {} (data shown {}). Throttling slows requests; it does not by itself say why \
             the alert fired.",
            short_name(&series.series.labels),
            describe_throttling(&t),
            shown(series)
        ),
        // Throttled most of the time, or without a break up to the last sample (a recent
        // onset that is still going on), not only in a past stretch.
        confidence: if t.median > THROTTLING_THRESHOLD || ongoing {
            Confidence::High
        } else {
            Confidence::Medium
        },
        verified: false,
        resource: resource(series, ctx),
        refs: refs(anchors),
        at: t.longest_run.map(|(start, _)| start),
    })
}

fn ratio_throttling(
    evidence: &Evidence,
    series: &QuotedSeries,
    ctx: &DetectionContext,
) -> Option<Finding> {
    let points = &series.series.points;
    // A "ratio" outside 0..1 is something else (a percentage, a rate): not read as one.
    if points.len() < MIN_POINTS || points.iter().any(|(_, v)| !(0.0..=1.05).contains(v)) {
        return None;
    }
    throttling_finding(
        series,
        points,
        |anchors| quotes(evidence, series, &anchors),
        ctx,
    )
}

fn counter_throttling(
    item: &Item,
    throttled: &QuotedSeries,
    all: &[Item],
    ctx: &DetectionContext,
) -> Option<Finding> {
    let same_labels = |s: &QuotedSeries| {
        let strip = |l: &BTreeMap<String, String>| {
            l.iter()
                .filter(|(k, _)| k.as_str() != "__name__")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        strip(&s.series.labels) == strip(&throttled.series.labels)
    };
    // The partner counter of the same container, preferably from the same query.
    let (periods_evidence, periods) = std::iter::once(item)
        .chain(all.iter())
        .flat_map(|i| i.series.iter().map(move |(k, s)| (i.evidence, *k, s)))
        .find(|(_, kind, s)| *kind == SeriesKind::CfsPeriods && same_labels(s))
        .map(|(e, _, s)| (e, s))?;
    let ratio = throttling_ratio(
        &per_step(&throttled.series.points),
        &per_step(&periods.series.points),
    );
    if ratio.len() < MIN_POINTS {
        return None;
    }
    throttling_finding(
        throttled,
        &ratio,
        |anchors| {
            let mut refs = vec![
                cite(item.evidence, throttled.labels_text.to_string()),
                cite(periods_evidence, periods.labels_text.to_string()),
            ];
            for i in anchors {
                if let Some(pair) = ratio.get(i).and_then(|(t, _)| throttled.pair_at(*t)) {
                    let citation = cite(item.evidence, pair.to_string());
                    if !refs.contains(&citation) {
                        refs.push(citation);
                    }
                }
            }
            refs
        },
        ctx,
    )
}

fn restart_trend(
    evidence: &Evidence,
    series: &QuotedSeries,
    ctx: &DetectionContext,
) -> Option<Finding> {
    let (r, anchors) = restarts(&series.series.points)?;
    let every = r
        .period
        .map_or_else(String::new, |p| format!(", every ~{}", format_duration(p)));
    Some(Finding {
        detector: DetectorKind::RestartTrend,
        title: format!(
            "{} restarted {} in {}{every}",
            subject(series),
            if r.count == 1 {
                "once".to_string()
            } else {
                format!("{} times", r.count)
            },
            format_duration(r.window)
        ),
        detail: format!(
            "`{}` {} (data shown {}).",
            short_name(&series.series.labels),
            describe_restarts(&r),
            shown(series)
        ),
        // The counter is unambiguous; a few restarts or a period make the trend clear.
        confidence: if r.count >= 3 || r.period.is_some() {
            Confidence::High
        } else {
            Confidence::Medium
        },
        verified: false,
        resource: resource(series, ctx),
        refs: quotes(evidence, series, &anchors),
        at: Some(r.first),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::detectors::{MetricSeries, parse_prometheus_matrix};
    use crate::evidence::{EvidenceId, quote_occurs_in};
    use crate::excerpt::{DEFAULT_EXCERPT_CHARS, excerpt};

    const MIB: f64 = 1024.0 * 1024.0;
    /// 2025-03-03T11:06:40Z.
    const T0: f64 = 1_741_000_000.0;

    /// Deterministic noise in −1..1.
    fn jitter(i: usize) -> f64 {
        let x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        x as f64 / (1u64 << 24) as f64 * 2.0 - 1.0
    }

    /// `n` points `step` seconds apart; `f(index, hours since start)`.
    fn series(n: usize, step: f64, f: impl Fn(usize, f64) -> f64) -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| {
                let t = T0 + step * i as f64;
                (t, f(i, (t - T0) / 3600.0))
            })
            .collect()
    }

    fn growth(shape: &Shape) -> &LinearTrend {
        match shape {
            Shape::Growth(trend) => trend,
            other => panic!("expected growth, got {other:?}"),
        }
    }

    #[test]
    fn noise_around_a_level_is_flat() {
        let points = series(360, 60.0, |i, _| 500.0 * MIB + 5.0 * MIB * jitter(i));
        assert!(matches!(classify_shape(&points), Shape::Flat { .. }));
        assert!(matches!(classify_shape(&points[..5]), Shape::Unclear));
    }

    #[test]
    fn steady_growth_over_two_days_is_growth_not_a_spike() {
        // 48 h at 5 min: 200 MiB climbing 6 MiB/h, ±4 MiB noise.
        let points = series(576, 300.0, |i, h| {
            200.0 * MIB + 6.0 * MIB * h + 4.0 * MIB * jitter(i)
        });
        let shape = classify_shape(&points);
        let trend = growth(&shape);
        assert!((trend.slope_per_hour / MIB - 6.0).abs() < 0.3, "{trend:?}");
        assert!(trend.r2 > 0.95);
        assert!((trend.hours() - 47.9).abs() < 0.1);
    }

    #[test]
    fn noisy_growth_is_still_growth() {
        // Noise of a third of the rise: R² around 0.7.
        let points = series(360, 60.0, |i, h| 100.0 + 10.0 * h + 20.0 * jitter(i));
        let shape = classify_shape(&points);
        let trend = growth(&shape);
        assert!(trend.r2 > GROWTH_MIN_R2 && trend.r2 < 0.9, "{trend:?}");
    }

    #[test]
    fn a_single_outlier_is_a_spike_never_growth() {
        let mut points = series(288, 300.0, |i, _| 300.0 + 3.0 * jitter(i));
        points[150].1 = 900.0;
        match classify_shape(&points) {
            Shape::Spike { at, peak, baseline } => {
                assert_eq!(at, time(points[150].0));
                assert_eq!(peak, 900.0);
                assert!((baseline - 300.0).abs() < 3.0);
            }
            other => panic!("expected spike, got {other:?}"),
        }
        // At the very end it cannot be told from a beginning: nothing but flat.
        let mut last = series(288, 300.0, |i, _| 300.0 + 3.0 * jitter(i));
        last[287].1 = 900.0;
        assert!(matches!(classify_shape(&last), Shape::Flat { .. }));
    }

    #[test]
    fn spike_then_back_is_a_spike() {
        let mut points = series(120, 60.0, |i, _| 0.01 + 0.002 * jitter(i));
        for (k, v) in [0.12, 0.3, 0.28, 0.2, 0.09].iter().enumerate() {
            points[70 + k].1 = *v;
        }
        match classify_shape(&points) {
            Shape::Spike { at, peak, .. } => {
                assert_eq!(at, time(points[71].0));
                assert_eq!(peak, 0.3);
            }
            other => panic!("expected spike, got {other:?}"),
        }
    }

    #[test]
    fn step_then_flat_is_a_step_not_growth() {
        for at in [40, 100, 200] {
            let points = series(240, 60.0, |i, _| {
                (if i < at { 0.2 } else { 1.4 }) + 0.03 * jitter(i)
            });
            match classify_shape(&points) {
                Shape::Step { at: when, .. } => assert_eq!(when, time(points[at].0)),
                other => panic!("step at {at}: got {other:?}"),
            }
        }
        let drop = series(240, 60.0, |i, _| {
            (if i < 150 { 120.0 } else { 5.0 }) + 2.0 * jitter(i)
        });
        assert!(matches!(classify_shape(&drop), Shape::Drop { .. }));
    }

    #[test]
    fn a_spike_on_a_climb_keeps_the_climb() {
        let mut points = series(288, 300.0, |i, h| 100.0 + 4.0 * h + jitter(i));
        points[100].1 += 300.0;
        assert!(matches!(classify_shape(&points), Shape::Growth(_)));
    }

    #[test]
    fn steady_decline_is_a_decline() {
        let points = series(200, 60.0, |i, h| 900.0 - 100.0 * h + 5.0 * jitter(i));
        assert!(matches!(classify_shape(&points), Shape::Decline(_)));
    }

    #[test]
    fn leak_with_periodic_restarts_is_a_sawtooth() {
        // 6 h at 1 min; climbs 8 MiB a minute from 150 MiB and restarts every 40 min.
        let points = series(360, 60.0, |i, _| {
            150.0 * MIB + 8.0 * MIB * (i % 40) as f64 + 2.0 * MIB * jitter(i)
        });
        match classify_shape(&points) {
            Shape::Sawtooth(s) => {
                assert_eq!(s.resets.len(), 8);
                assert_eq!(s.period, Duration::minutes(40));
                assert!((s.rise_per_hour / MIB - 480.0).abs() < 20.0, "{s:?}");
                assert!(s.peak > 455.0 * MIB && s.trough < 155.0 * MIB);
            }
            other => panic!("expected sawtooth, got {other:?}"),
        }
    }

    #[test]
    fn gc_sawtooth_with_a_rising_floor_is_growth() {
        // 48 h at 5 min; GC every 30 min takes back 20 MiB, the floor rises 5 MiB/h.
        let points = series(576, 300.0, |i, h| {
            300.0 * MIB + 5.0 * MIB * h + 20.0 * MIB * (i % 6) as f64 / 5.0
        });
        let shape = classify_shape(&points);
        assert!((growth(&shape).slope_per_hour / MIB - 5.0).abs() < 0.3);
    }

    #[test]
    fn climb_ended_by_one_kill_is_growth_up_to_the_kill() {
        // Two days of climbing to the kill at point 560, then a new container from 150 MiB.
        let points = series(576, 300.0, |i, h| {
            if i < 560 {
                200.0 * MIB + 6.5 * MIB * h + MIB * jitter(i)
            } else {
                150.0 * MIB + MIB * (i - 560) as f64
            }
        });
        let classified = classify(&points);
        let trend = growth(&classified.shape);
        assert_eq!(trend.end, time(points[559].0));
        assert_eq!(classified.anchors, vec![0, 559]);
        let projection = project_to_limit(&points, trend, 512.0 * MIB);
        assert!(projection.reached_at.is_some());
        assert_eq!(projection.hours_left, None);
    }

    #[test]
    fn projection_reaches_the_limit_at_the_fitted_slope() {
        // 200 → 400 MiB over 10 h: 20 MiB/h, so 512 MiB is 5.6 h away.
        let points = series(121, 300.0, |_, h| 200.0 * MIB + 20.0 * MIB * h);
        let shape = classify_shape(&points);
        let trend = growth(&shape);
        let projection = project_to_limit(&points, trend, 512.0 * MIB);
        let hours = projection.hours_left.expect("hours left");
        assert!((hours - 5.6).abs() < 1e-6, "{hours}");
        let text = describe_growth(trend, Unit::Bytes, Some(&projection));
        assert_eq!(
            text,
            "grew from 200 MiB to 400 MiB over 10 h (+20 MiB/h, 10.0 %/h); at this rate the \
             limit 512 MiB is reached in 5.6 h (around 02:42 UTC)"
        );
        let reached = project_to_limit(&points, trend, 300.0 * MIB);
        assert_eq!(
            reached.reached_at,
            Some(time(points[57].0)),
            "98 % of the limit"
        );
        assert!(
            describe_growth(trend, Unit::Bytes, Some(&reached))
                .ends_with("it reached the limit 300 MiB at 15:51 UTC")
        );
        let flat = LinearTrend {
            slope_per_hour: 0.0,
            ..trend.clone()
        };
        assert_eq!(project_to_limit(&points, &flat, 1e12).hours_left, None);
        assert_eq!(limit_from_series(&[(T0, 512.0), (T0 + 60.0, 0.0)]), None);
    }

    #[test]
    fn amounts_are_human_friendly() {
        assert_eq!(format_amount(512.0 * MIB, Unit::Bytes), "512 MiB");
        assert_eq!(format_amount(1.5 * 1024.0 * MIB, Unit::Bytes), "1.5 GiB");
        assert_eq!(format_amount(47.25 * MIB, Unit::Bytes), "47.2 MiB");
        assert_eq!(format_amount(1536.0, Unit::Bytes), "1.5 KiB");
        assert_eq!(format_amount(0.4123, Unit::Ratio), "41 %");
        assert_eq!(format_amount(0.012, Unit::Ratio), "1.2 %");
        assert_eq!(format_duration(Duration::minutes(40)), "40 min");
        assert_eq!(format_duration(Duration::minutes(46 * 60)), "46 h");
    }

    #[test]
    fn sustained_throttling_is_reported_with_median_and_max() {
        let ratio = series(360, 60.0, |i, _| 0.4 + 0.1 * jitter(i));
        let t = summarise_throttling(&ratio).expect("summary");
        assert!(t.sustained);
        assert!((t.median - 0.4).abs() < 0.02);
        assert!(t.max <= 0.5 && t.max > 0.48);
        assert!(t.share_above > 0.9);
        let text = describe_throttling(&t);
        assert!(text.starts_with("throttled above 25 % in"), "{text}");
        assert!(text.contains("median 40 %"), "{text}");

        // Two-minute bursts every hour: throttled, but not sustained.
        let bursts = series(360, 60.0, |i, _| if i % 60 < 2 { 0.9 } else { 0.05 });
        let t = summarise_throttling(&bursts).expect("summary");
        assert!(!t.sustained);
        assert_eq!(t.max, 0.9);
    }

    #[test]
    fn throttling_ratio_from_counters_survives_a_counter_reset() {
        let throttled = series(60, 60.0, |i, _| {
            if i < 30 {
                1000.0 + 30.0 * i as f64
            } else {
                30.0 * (i - 29) as f64
            }
        });
        let periods = series(60, 60.0, |i, _| {
            if i < 30 {
                5000.0 + 100.0 * i as f64
            } else {
                100.0 * (i - 29) as f64
            }
        });
        let ratio = throttling_ratio(&counter_increases(&throttled), &counter_increases(&periods));
        assert_eq!(ratio.len(), 59);
        assert!(
            ratio.iter().all(|(_, r)| (r - 0.3).abs() < 1e-9),
            "{ratio:?}"
        );
    }

    #[test]
    fn periodic_restarts_are_recognised() {
        // Every 40 min over 6 h at 1 min: 8 restarts, the first at 40 min.
        let counter = series(361, 60.0, |i, _| 3.0 + (i / 40) as f64);
        let r = summarise_restarts(&counter).expect("restarts");
        assert_eq!(r.count, 9);
        assert_eq!(r.period, Some(Duration::minutes(40)));
        assert_eq!(r.first, time(counter[40].0));
        assert!(describe_restarts(&r).contains("every ~40 min: a steady period"));

        let irregular = series(361, 60.0, |i, _| {
            [10, 25, 130, 140, 300]
                .iter()
                .filter(|&&at| i >= at)
                .count() as f64
        });
        let r = summarise_restarts(&irregular).expect("restarts");
        assert_eq!((r.count, r.period), (5, None));

        // Two restarts inside one sample hide the interval.
        let bunched = series(100, 300.0, |i, _| (i / 10 * 2) as f64);
        assert_eq!(summarise_restarts(&bunched).and_then(|r| r.period), None);

        let none = series(100, 60.0, |_, _| 4.0);
        assert_eq!(summarise_restarts(&none), None);

        let backoff = series(100, 60.0, |i, _| (i / 5) as f64);
        let r = summarise_restarts(&backoff).expect("restarts");
        assert!(describe_restarts(&r).contains("crash-loop back-off"));
    }

    // -----------------------------------------------------------------------------------------
    // Over evidence

    #[derive(Clone, Copy)]
    enum Style {
        /// `{"a":1}` as Prometheus itself writes it.
        Compact,
        /// `{"a": 1}` as Python's `json.dumps` (prometheus-mcp-server) writes it.
        Spaced,
        /// Indented, one value per line.
        Pretty,
    }

    fn matrix(
        series: &[(serde_json::Value, Vec<(f64, f64)>)],
        envelope: bool,
        style: Style,
    ) -> String {
        let result: Vec<serde_json::Value> = series
            .iter()
            .map(|(labels, points)| {
                let values: Vec<serde_json::Value> = points
                    .iter()
                    .map(|(t, v)| json!([*t as i64, v.to_string()]))
                    .collect();
                json!({"metric": labels, "values": values})
            })
            .collect();
        let data = json!({"resultType": "matrix", "result": result});
        let value = if envelope {
            json!({"status": "success", "data": data})
        } else {
            data
        };
        match style {
            Style::Compact => value.to_string(),
            // No label value or number in these tests holds a comma or a colon.
            Style::Spaced => value.to_string().replace(',', ", ").replace("\":", "\": "),
            Style::Pretty => serde_json::to_string_pretty(&value).expect("json"),
        }
    }

    fn evidence(n: u32, query: &str, text: &str) -> Evidence {
        Evidence::new(
            EvidenceId::new(n).expect("id"),
            Capability::MetricRange,
            "prometheus",
            "execute_range_query",
            json!({"query": query, "step": "300s"}),
            excerpt(text, DEFAULT_EXCERPT_CHARS, 2),
            DateTime::<Utc>::UNIX_EPOCH,
        )
    }

    fn ctx() -> DetectionContext {
        DetectionContext {
            default_resource: Some("payments-api-7d9f8c6b5-x2k4q".into()),
            ..DetectionContext::default()
        }
    }

    /// Every quote is verbatim in the evidence it cites, and passes the judge's check.
    fn assert_verbatim(findings: &[Finding], evidence: &[Evidence]) {
        for finding in findings {
            assert!(!finding.refs.is_empty(), "{}", finding.title);
            assert!(!finding.verified, "{}", finding.title);
            for citation in &finding.refs {
                let cited = evidence
                    .iter()
                    .find(|e| e.id == citation.evidence)
                    .expect("cited evidence exists");
                assert!(
                    cited.excerpt.contains(&citation.quote),
                    "{:?} not verbatim in {}",
                    citation.quote,
                    citation.evidence
                );
                assert!(quote_occurs_in(&citation.quote, &cited.excerpt));
            }
        }
    }

    fn container_labels(name: &str) -> serde_json::Value {
        json!({
            "__name__": name,
            "namespace": "shop",
            "pod": "payments-api-7d9f8c6b5-x2k4q",
            "container": "api",
        })
    }

    fn limit_labels() -> serde_json::Value {
        json!({
            "__name__": KUBE_LIMITS,
            "namespace": "shop",
            "pod": "payments-api-7d9f8c6b5-x2k4q",
            "container": "api",
            "resource": "memory",
            "unit": "byte",
        })
    }

    #[test]
    fn memory_growth_with_a_limit_in_another_item_in_every_format() {
        for style in [Style::Compact, Style::Spaced, Style::Pretty] {
            // 48 h at 30 min fits an excerpt whole on one line; indented, one value per line,
            // only at 2 h. Growth 200 → ~480 MiB, limit 512 MiB.
            let step = if let Style::Pretty = style {
                7200.0
            } else {
                1800.0
            };
            let n = (48.0 * 3600.0 / step) as usize + 1;
            let usage = series(n, step, |i, h| {
                (200.0 * MIB + 5.8 * MIB * h + MIB * jitter(i)).round()
            });
            let limit = series(n, step, |_, _| 512.0 * MIB);
            for envelope in [false, true] {
                let items = [
                    evidence(
                        1,
                        "container_memory_working_set_bytes{pod=~\"payments-api-.*\"}",
                        &matrix(
                            &[(
                                container_labels("container_memory_working_set_bytes"),
                                usage.clone(),
                            )],
                            envelope,
                            style,
                        ),
                    ),
                    evidence(
                        2,
                        "kube_pod_container_resource_limits{resource=\"memory\"}",
                        &matrix(&[(limit_labels(), limit.clone())], envelope, style),
                    ),
                ];
                let findings = detect_trends(&items, &ctx());
                assert_verbatim(&findings, &items);
                assert_eq!(findings.len(), 1, "{findings:#?}");
                let f = &findings[0];
                assert_eq!(f.detector, DetectorKind::MemoryGrowth);
                assert_eq!(f.confidence, Confidence::High);
                assert_eq!(f.resource.as_deref(), Some("payments-api-7d9f8c6b5-x2k4q"));
                assert!(
                    f.title
                        .starts_with("Container `api` memory grew steadily: 200 MiB → "),
                    "{}",
                    f.title
                );
                assert!(f.title.contains(", limit 512 MiB in ~"), "{}", f.title);
                assert!(
                    f.detail
                        .contains("at this rate the limit 512 MiB is reached in"),
                    "{}",
                    f.detail
                );
                // Labels and start/end pairs of the usage, labels and value of the limit.
                assert_eq!(f.refs.len(), 5, "{:#?}", f.refs);
                assert!(
                    f.refs[0]
                        .quote
                        .contains("container_memory_working_set_bytes")
                );
                assert!(f.refs[1].quote.contains(&format!("{}", T0 as i64)));
                assert!(
                    f.refs
                        .iter()
                        .any(|r| r.evidence.number() == 2 && r.quote.contains("536870912"))
                );
                assert_eq!(f.at, Some(time(T0)));
            }
        }
        // Alone, the usage item still shows the growth, without a projection.
        let usage = series(97, 1800.0, |i, h| {
            (200.0 * MIB + 5.8 * MIB * h + MIB * jitter(i)).round()
        });
        let alone = evidence(
            1,
            "",
            &matrix(
                &[(container_labels("container_memory_rss"), usage)],
                false,
                Style::Compact,
            ),
        );
        let findings = detect_shapes(&alone, &ctx());
        assert_verbatim(&findings, std::slice::from_ref(&alone));
        assert!(
            !findings[0].title.contains("limit"),
            "{}",
            findings[0].title
        );
    }

    #[test]
    fn a_long_range_is_thinned_and_read_whole() {
        // 48 h at 5 min (576 points) does not fit 3,500 characters: the excerpt keeps every
        // k-th point of the whole window instead of a head or a tail.
        let usage = series(576, 300.0, |i, h| {
            (200.0 * MIB + 6.0 * MIB * h + MIB * jitter(i)).round()
        });
        for style in [Style::Spaced, Style::Pretty] {
            let text = matrix(
                &[(
                    container_labels("container_memory_working_set_bytes"),
                    usage.clone(),
                )],
                true,
                style,
            );
            let item = evidence(1, "", &text);
            assert!(item.excerpt.contains("\"thinned\""), "{}", item.excerpt);
            let findings = detect_shapes(&item, &ctx());
            assert_verbatim(&findings, std::slice::from_ref(&item));
            assert_eq!(findings.len(), 1, "{findings:#?}");
            assert!(
                findings[0]
                    .detail
                    .contains("data shown 03-03 11:06 UTC to 03-05 11:01 UTC"),
                "the whole window: {}",
                findings[0].detail
            );
        }
    }

    #[test]
    fn points_never_cross_into_another_series_across_a_cut() {
        // One series per line, the first shortened by the excerpt: what follows its marker
        // is not its data.
        let cut = "{\"resultType\":\"matrix\",\"result\":[\n\
                   {\"metric\":{\"pod\":\"a\"},\"values\":[[1,\"1\"],[2,\"2\"] \
                   … [900 chars omitted]\n\
                   … [3 lines omitted] …\n\
                   [90,\"5\"],[91,\"6\"]]},\n\
                   {\"metric\":{\"pod\":\"b\"},\"values\":[[1,\"7\"],[2,\"8\"]]}]}";
        let read = quoted_series(cut);
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].series.points, vec![(1.0, 1.0), (2.0, 2.0)]);
        assert_eq!(read[1].series.points, vec![(1.0, 7.0), (2.0, 8.0)]);
        assert_eq!(read[1].pair_texts, vec!["[1,\"7\"]", "[2,\"8\"]"]);

        // An indented result cut by the excerpt (too long to thin): every point read belongs
        // to its series.
        let a = series(3000, 60.0, |i, _| 1.0 + i as f64);
        let b = series(8, 60.0, |i, _| 5000.0 + i as f64);
        let text = matrix(
            &[
                (json!({"__name__": "up", "pod": "a"}), a.clone()),
                (json!({"__name__": "up", "pod": "b"}), b.clone()),
            ],
            true,
            Style::Pretty,
        );
        let read = quoted_series(&text);
        let cut = excerpt(&text, 1_500, 2);
        let read_cut = quoted_series(&cut);
        assert_eq!(read_cut.len(), 1, "only b's label object survives");
        assert_eq!(read_cut[0].series, read[1].series);

        // Whole, the lenient reading matches the strict parser.
        let strict = parse_prometheus_matrix(&text).expect("matrix");
        let lenient: Vec<MetricSeries> = read.into_iter().map(|s| s.series).collect();
        assert_eq!(lenient, strict);
    }

    #[test]
    fn restart_sawtooth_and_periodic_restarts_over_evidence() {
        // 6 h at 5 min: memory climbs 45 MiB a sample from 150 MiB, killed every 40 min.
        let memory = series(72, 300.0, |i, _| 150.0 * MIB + 45.0 * MIB * (i % 8) as f64);
        let restarts = series(72, 300.0, |i, _| (i / 8) as f64);
        let limit = series(72, 300.0, |_, _| 512.0 * MIB);
        let items = [
            evidence(
                1,
                "",
                &matrix(
                    &[(
                        container_labels("container_memory_working_set_bytes"),
                        memory,
                    )],
                    false,
                    Style::Compact,
                ),
            ),
            evidence(
                2,
                "",
                &matrix(
                    &[(container_labels(RESTARTS), restarts)],
                    true,
                    Style::Spaced,
                ),
            ),
            evidence(
                3,
                "",
                &matrix(&[(limit_labels(), limit)], true, Style::Compact),
            ),
        ];
        let findings = detect_trends(&items, &ctx());
        assert_verbatim(&findings, &items);
        assert_eq!(findings.len(), 2, "{findings:#?}");
        let saw = findings
            .iter()
            .find(|f| f.detector == DetectorKind::MemoryGrowth)
            .expect("memory finding");
        assert_eq!(
            saw.title,
            "Container `api` memory climbs and drops back every ~40 min (8 drops)"
        );
        assert!(
            saw.detail
                .contains("peaking at 465 MiB (91 % of the 512 MiB limit)"),
            "{}",
            saw.detail
        );
        assert_eq!(saw.confidence, Confidence::High);
        let trend = findings
            .iter()
            .find(|f| f.detector == DetectorKind::RestartTrend)
            .expect("restart finding");
        assert_eq!(
            trend.title,
            "Container `api` restarted 8 times in 5.9 h, every ~40 min"
        );
        assert_eq!(trend.confidence, Confidence::High);
        assert_eq!(trend.at, Some(time(T0 + 8.0 * 300.0)));
    }

    #[test]
    fn a_pod_total_is_not_measured_against_one_containers_limit() {
        let usage = series(25, 7200.0, |_, h| 200.0 * MIB + 5.0 * MIB * h);
        let pod_total = json!({"pod": "payments-api-7d9f8c6b5-x2k4q"});
        let limit_of = |container: &str, mib: f64| {
            let mut labels = limit_labels();
            labels["container"] = json!(container);
            (labels, series(25, 7200.0, move |_, _| mib * MIB))
        };
        let items = [
            evidence(
                1,
                "sum by (pod) (container_memory_working_set_bytes{namespace=\"shop\"})",
                &matrix(&[(pod_total, usage)], false, Style::Compact),
            ),
            evidence(
                2,
                "",
                &matrix(
                    &[limit_of("api", 512.0), limit_of("sidecar", 64.0)],
                    false,
                    Style::Compact,
                ),
            ),
        ];
        let findings = detect_trends(&items, &ctx());
        assert_verbatim(&findings, &items);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert!(
            findings[0]
                .title
                .starts_with("Pod `payments-api-7d9f8c6b5-x2k4q` memory grew steadily"),
            "{}",
            findings[0].title
        );
        assert!(
            !findings[0].detail.contains("limit"),
            "{}",
            findings[0].detail
        );
    }

    #[test]
    fn a_short_climb_is_not_memory_growth() {
        // 40 min of climbing after a start: warm-up as often as a leak.
        let memory = series(41, 60.0, |i, _| 100.0 * MIB + 5.0 * MIB * i as f64);
        let item = evidence(
            1,
            "",
            &matrix(
                &[(
                    container_labels("container_memory_working_set_bytes"),
                    memory,
                )],
                false,
                Style::Compact,
            ),
        );
        assert!(detect_shapes(&item, &ctx()).is_empty());
    }

    #[test]
    fn throttling_from_counters_and_from_an_aggregated_ratio() {
        let labels = |name: &str| json!({"__name__": name, "pod": "web-1", "container": "web"});
        let throttled = series(72, 300.0, |i, _| 1000.0 + 40.0 * i as f64);
        let periods = series(72, 300.0, |i, _| 2000.0 + 100.0 * i as f64);
        let counters = evidence(
            1,
            "",
            &matrix(
                &[
                    (labels(THROTTLED_PERIODS), throttled),
                    (labels(CFS_PERIODS), periods),
                ],
                true,
                Style::Compact,
            ),
        );
        let findings = detect_shapes(&counters, &ctx());
        assert_verbatim(&findings, std::slice::from_ref(&counters));
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert_eq!(findings[0].detector, DetectorKind::CpuThrottling);
        assert_eq!(
            findings[0].title,
            "Container `web` CPU-throttled: median 40 %, max 40 % of CFS periods"
        );
        assert_eq!(findings[0].resource.as_deref(), Some("web-1"));

        // `sum by (pod) (rate(throttled)) / sum by (pod) (rate(periods))` has no name.
        let ratio = series(72, 300.0, |i, _| {
            0.1 + 0.05 * jitter(i) + if i > 40 { 0.3 } else { 0.0 }
        });
        let query = "sum by (pod) (rate(container_cpu_cfs_throttled_periods_total[5m])) \
                     / sum by (pod) (rate(container_cpu_cfs_periods_total[5m]))";
        let aggregated = evidence(
            2,
            query,
            &matrix(&[(json!({"pod": "web-1"}), ratio)], false, Style::Spaced),
        );
        let findings = detect_shapes(&aggregated, &ctx());
        assert_verbatim(&findings, std::slice::from_ref(&aggregated));
        assert_eq!(findings.len(), 1, "{findings:#?}");
        // Throttled without a break up to the last sample: a recent onset, still going on.
        assert_eq!(findings[0].confidence, Confidence::High);
        assert!(
            findings[0]
                .title
                .starts_with("Pod `web-1` CPU-throttled since "),
            "{}",
            findings[0].title
        );
        assert_eq!(findings[0].at, Some(time(T0 + 41.0 * 300.0)));
    }

    #[test]
    fn generic_series_report_spikes_only() {
        let noisy = |i: usize, _| ((0.2 + 0.01 * jitter(i)) * 1000.0).round() / 1000.0;
        let mut latency = series(40, 60.0, noisy);
        latency[20].1 = 2.5;
        let steady = series(40, 60.0, noisy);
        let counter = series(40, 60.0, |i, _| 10.0 * i as f64);
        let item = evidence(
            1,
            "",
            &matrix(
                &[
                    (
                        json!({"__name__": "http_p99_seconds", "service": "payments"}),
                        latency,
                    ),
                    (
                        json!({"__name__": "http_p50_seconds", "service": "payments"}),
                        steady,
                    ),
                    (
                        json!({"__name__": "http_requests_total", "service": "payments"}),
                        counter,
                    ),
                ],
                false,
                Style::Compact,
            ),
        );
        let findings = detect_shapes(&item, &ctx());
        assert_verbatim(&findings, std::slice::from_ref(&item));
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let spike = &findings[0];
        assert_eq!(spike.detector, DetectorKind::MetricSpike);
        assert_eq!(spike.confidence, Confidence::High);
        assert!(
            spike
                .title
                .starts_with("Spike in `http_p99_seconds{service=\"payments\"}`: 2.5 at")
        );
        assert_eq!(spike.resource.as_deref(), Some("payments"));
        assert!(spike.refs[1].quote.contains("\"2.5\""));
    }

    #[test]
    fn kinds_come_from_names_then_queries() {
        let named = |name: &str| BTreeMap::from([("__name__".to_string(), name.to_string())]);
        assert_eq!(
            kind_of(&named("container_memory_rss"), None),
            SeriesKind::MemoryUsage
        );
        assert_eq!(
            kind_of(&named(KUBE_LIMITS), None),
            SeriesKind::Other,
            "cpu or unknown"
        );
        assert_eq!(
            kind_of(&named("container:cpu_cfs_throttled:ratio"), None),
            SeriesKind::ThrottleRatio
        );
        let bare = BTreeMap::new();
        let q = |query: &str| kind_of(&bare, Some(query));
        assert_eq!(
            q("sum by (pod) (container_memory_working_set_bytes{namespace=\"shop\"})"),
            SeriesKind::MemoryUsage
        );
        assert_eq!(
            q("rate(container_memory_working_set_bytes[5m])"),
            SeriesKind::Other
        );
        assert_eq!(
            q("container_memory_working_set_bytes / on(pod) \
                 kube_pod_container_resource_limits{resource=\"memory\"}"),
            SeriesKind::Other
        );
        assert_eq!(
            q("max by (pod) (kube_pod_container_resource_limits{resource=\"memory\"})"),
            SeriesKind::MemoryLimit
        );
        assert_eq!(
            q("sum by (pod) (kube_pod_container_status_restarts_total)"),
            SeriesKind::Restarts
        );
        assert_eq!(
            q("increase(kube_pod_container_status_restarts_total[1h])"),
            SeriesKind::Other
        );
    }

    #[test]
    fn only_metric_range_evidence_is_read() {
        let text = matrix(
            &[(
                container_labels(RESTARTS),
                series(40, 60.0, |i, _| (i / 5) as f64),
            )],
            false,
            Style::Compact,
        );
        let mut log = evidence(1, "", &text);
        log.capability = Capability::PodLogsCurrent;
        assert!(detect_shapes(&log, &ctx()).is_empty());
        assert!(detect_shapes(&evidence(1, "", "not json"), &ctx()).is_empty());
    }

    fn minutely(values: &[f64]) -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (T0 + 60.0 * i as f64, *v))
            .collect()
    }

    #[test]
    fn per_step_reads_a_series_as_a_counter_only_when_it_rises_on_four_steps_in_five() {
        // Ten steps, eight rises and two holds: a counter, read as its increases.
        let eight = minutely(&[0., 10., 20., 30., 30., 40., 50., 60., 60., 70., 80.]);
        let steps: Vec<f64> = per_step(&eight).iter().map(|(_, v)| *v).collect();
        assert_eq!(steps, [10., 10., 10., 0., 10., 10., 10., 0., 10., 10.]);
        assert_eq!(
            per_step(&eight)[0].0,
            T0 + 60.0,
            "an increase is dated at its later sample"
        );
        // Seven rises in ten: per-step values already, read as they are.
        let seven = minutely(&[0., 10., 20., 30., 30., 40., 50., 50., 60., 60., 70.]);
        assert_eq!(per_step(&seven), seven);
        // Values that wobble around a level are never a counter.
        let wobble = minutely(&[40., 42., 39., 41., 40., 43., 38., 41., 40., 42., 39.]);
        assert_eq!(per_step(&wobble), wobble);
    }

    #[test]
    fn per_step_takes_a_counter_reset_as_the_new_values_increase() {
        let mut values: Vec<f64> = (0..15).map(|i| 1000.0 + 30.0 * i as f64).collect();
        values.extend((1..=6).map(|i| 30.0 * i as f64));
        let steps = per_step(&minutely(&values));
        assert_eq!(steps.len(), 20);
        assert!(steps.iter().all(|(_, v)| *v == 30.0), "{steps:?}");
    }

    #[test]
    fn counter_named_series_holding_per_step_values_are_divided_as_they_are() {
        // A server that matched `increase(…)`'s selectors but returned its values under the
        // counters' names: neither series rises on most steps.
        let labels = |name: &str| json!({"__name__": name, "pod": "web-1", "container": "web"});
        let cycle = [38.0, 42.0, 40.0, 41.0, 39.0];
        let throttled = series(72, 300.0, |i, _| cycle[i % cycle.len()]);
        let periods = series(72, 300.0, |_, _| 100.0);
        let item = evidence(
            1,
            "",
            &matrix(
                &[
                    (labels(THROTTLED_PERIODS), throttled),
                    (labels(CFS_PERIODS), periods),
                ],
                true,
                Style::Compact,
            ),
        );
        let findings = detect_shapes(&item, &ctx());
        assert_verbatim(&findings, std::slice::from_ref(&item));
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert_eq!(
            findings[0].title,
            "Container `web` CPU-throttled: median 40 %, max 42 % of CFS periods"
        );
    }
}
