//! The shape of a series over its window, with robust statistics: flat, a step up or down, a
//! spike, steady growth or decline, a sawtooth of climbs cut short by drops — and what CPU
//! throttling and restart counters add up to. Pure maths over `(Unix seconds, value)` points,
//! in time order; the one step-change implementation ([`best_split`]) serves both the alert
//! metric's step detector ([`find_step_change`]) and the shape classifier.
//!
//! An OOM kill says *that* a container died; the memory series of the last two days says
//! whether it was a leak (a steady climb), a burst (a spike), or a limit set too low (flat near
//! it).

use chrono::{DateTime, Duration, Utc};

use super::{format_amount, format_duration, format_hours, format_percent, median};
use firstline_alert::timeparse::from_unix_seconds;

/// Fewer points than this say nothing about shape (an hour at 5-minute steps).
pub const MIN_POINTS: usize = 12;
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
pub const HIGH_R2: f64 = 0.85;
/// Memory climbing for less than this is start-up (caches, JIT, pools) as often as a leak.
pub const MIN_MEMORY_GROWTH_HOURS: f64 = 1.0;
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
pub const THROTTLING_MIN_RUN_SAMPLES: usize = 3;
/// Restarts needed before a period is claimed (two intervals that agree).
const MIN_PERIODIC_RESTARTS: usize = 3;
/// Intervals within this share of their median (or 1.5 samples) are the same period.
const PERIOD_TOLERANCE: f64 = 0.25;
/// Below this period restarts are paced by the kubelet's crash-loop back-off (at most 5 min),
/// not by something building up.
const BACKOFF_PACE_SECS: i64 = 6 * 60;

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
pub fn per_step(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
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

// ---------------------------------------------------------------------------------------------
// Classification

/// A shape and the points (indices) that show it: quotes are cut at these.
pub struct Classified {
    pub shape: Shape,
    pub anchors: Vec<usize>,
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
pub fn since_last_reset(points: &[(f64, f64)]) -> Option<Classified> {
    let start = (1..points.len())
        .rev()
        .find(|&i| points[i].1 < 0.7 * points[i - 1].1)?;
    let current = classify(&points[start..]);
    matches!(current.shape, Shape::Growth(_)).then(|| Classified {
        anchors: current.anchors.iter().map(|i| i + start).collect(),
        shape: current.shape,
    })
}

pub fn classify(points: &[(f64, f64)]) -> Classified {
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
        if !gradual {
            continue;
        }
        // A window that opens in the middle of a climb shows only its end: that first drop
        // is not counted, but the next climb is measured from it.
        if climbed {
            resets.push(i);
        }
        start = i;
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

/// The points of a series up to its first reset (a value under half the one before it, a
/// restarted container or a pod gone), leading zeros skipped.
pub fn first_run(points: &[(f64, f64)]) -> &[(f64, f64)] {
    let start = points
        .iter()
        .position(|(_, v)| *v > 0.0)
        .unwrap_or(points.len());
    let run = &points[start..];
    let end = run
        .windows(2)
        .position(|w| w[1].1 < w[0].1 * 0.5)
        .map_or(run.len(), |i| i + 1);
    &run[..end]
}

/// Whether `points` (three or more) climb along a line (R² ≥ [`HIGH_R2`]) by a fifth or more.
pub fn rises_steadily(points: &[(f64, f64)]) -> bool {
    let (Some((_, first)), Some((_, last))) = (points.first(), points.last()) else {
        return false;
    };
    points.len() >= 3
        && *first > 0.0
        && last / first >= 1.2
        && fit(points).is_some_and(|f| f.slope > 0.0 && f.r2 >= HIGH_R2)
}

/// Whether `points` climb from their first sample: a line fits them and their first quarter
/// (three samples at least) rises at half the whole climb's rate or more.
pub fn climbs_from_start(points: &[(f64, f64)]) -> bool {
    let head = &points[..(points.len() / 4).max(3).min(points.len())];
    match (fit(points), fit(head)) {
        (Some(whole), Some(start)) => rises_steadily(points) && start.slope >= whole.slope * 0.5,
        _ => false,
    }
}

/// Whether `points` stay within a tenth of their median: a flat baseline.
pub fn stays_flat(points: &[(f64, f64)]) -> bool {
    let values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    let level = super::median(&values);
    level > 0.0 && values.iter().all(|v| (v - level).abs() <= level * 0.1)
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
pub fn time(ts: f64) -> DateTime<Utc> {
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
pub fn throttling(ratio: &[(f64, f64)]) -> Option<(Throttling, [usize; 2])> {
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
pub fn restarts(counter: &[(f64, f64)]) -> Option<(Restarts, [usize; 2])> {
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

/// Thresholds for the alert metric's step-change detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepChangeParams {
    /// Points required on each side of the change.
    pub min_points_each_side: usize,
    /// After/before median ratio required.
    pub min_ratio: f64,
    /// After − before median required, in the series' unit.
    pub min_absolute_increase: f64,
    /// Share of points after the change that must stay above the midpoint ("sustained").
    pub min_sustained_share: f64,
}

impl Default for StepChangeParams {
    fn default() -> Self {
        Self {
            min_points_each_side: 3,
            min_ratio: 2.0,
            min_absolute_increase: 0.01,
            min_sustained_share: 0.8,
        }
    }
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

/// A sustained step up in `points` by the alert metric's thresholds: the best split into two
/// levels ([`best_split`]), the median after at least `min_ratio` × the median before and
/// higher by `min_absolute_increase`, and most points after it above the midpoint. A one-point
/// spike or a slow drift does not qualify.
pub fn find_step_change(points: &[(f64, f64)], params: &StepChangeParams) -> Option<StepChange> {
    let values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    let (split, _) = best_split(&values, params.min_points_each_side.max(1))?;
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
