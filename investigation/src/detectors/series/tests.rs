//! Metric series as pure maths: parsing a matrix (whole, or as far as a cut excerpt shows it),
//! what a series holds, the shape of a window (flat, step, spike, growth, sawtooth), the step
//! detector of the alert's metric, projections to a limit, throttling and restart counters, and
//! amounts as people read them.

use chrono::Duration;
use serde_json::json;

use super::shape::*;
use super::*;
use crate::detectors::testing::{MIB, Style, T0, jitter, matrix, samples};
use crate::excerpt::excerpt;

fn classify_shape(points: &[(f64, f64)]) -> Shape {
    classify(points).shape
}

fn summarise_throttling(ratio: &[(f64, f64)]) -> Option<Throttling> {
    throttling(ratio).map(|(t, _)| t)
}

fn summarise_restarts(counter: &[(f64, f64)]) -> Option<Restarts> {
    restarts(counter).map(|(r, _)| r)
}

/// R² a climb needs to count as growth (`shape`'s `GROWTH_MIN_R2`).
const GROWTH_MIN_R2: f64 = 0.6;

fn growth(shape: &Shape) -> &LinearTrend {
    match shape {
        Shape::Growth(trend) => trend,
        other => panic!("expected growth, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

#[test]
fn parses_bare_matrix_and_rejects_other_results() {
    let bare = r#"{"resultType":"matrix","result":[{"metric":{"job":"api"},"values":[[1,"1"],[2,"NaN"],[3,"2"]]}]}"#;
    let series = parse_prometheus_matrix(bare).expect("matrix");
    assert_eq!(series[0].points, vec![(1.0, 1.0), (3.0, 2.0)]);
    assert_eq!(series[0].display_name(), "{job=\"api\"}");
    assert!(parse_prometheus_matrix(r#"{"resultType":"vector","result":[]}"#).is_err());
    assert!(parse_prometheus_matrix("not json").is_err());
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
    let a = samples(3000, 60.0, |i, _| 1.0 + i as f64);
    let b = samples(8, 60.0, |i, _| 5000.0 + i as f64);
    let text = matrix(
        &[
            (json!({"__name__": "up", "pod": "a"}), a),
            (json!({"__name__": "up", "pod": "b"}), b),
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
    // A ratio query whose answer still carries a counter's name was not divided.
    assert_eq!(
        kind_of(
            &named(THROTTLED_PERIODS),
            Some(&format!("{THROTTLED_PERIODS} / {CFS_PERIODS}"))
        ),
        SeriesKind::ThrottledPeriods
    );
    assert_eq!(kind_of(&named(RESTARTS), None), SeriesKind::Restarts);
}

// ---------------------------------------------------------------------------------------------
// The alert metric's step

#[test]
fn metric_spike_noise_and_drops_are_not_steps() {
    let params = StepChangeParams::default();
    let pts = |vals: &[f64]| -> Vec<(f64, f64)> {
        vals.iter()
            .enumerate()
            .map(|(i, v)| (i as f64 * 60.0, *v))
            .collect()
    };
    let spike = [0.01, 0.01, 0.01, 0.5, 0.01, 0.01, 0.01, 0.01];
    assert!(find_step_change(&pts(&spike), &params).is_none());
    let noise = [0.01, 0.012, 0.009, 0.011, 0.013, 0.01, 0.012, 0.011];
    assert!(find_step_change(&pts(&noise), &params).is_none());
    let drop = [0.3, 0.3, 0.3, 0.3, 0.01, 0.01, 0.01, 0.01];
    assert!(find_step_change(&pts(&drop), &params).is_none());
    let tiny = [
        0.0001, 0.0001, 0.0001, 0.0001, 0.0009, 0.0009, 0.0009, 0.0009,
    ];
    assert!(
        find_step_change(&pts(&tiny), &params).is_none(),
        "below the absolute threshold"
    );
    let latency = [0.2, 0.21, 0.19, 0.2, 1.4, 1.5, 1.45, 1.6];
    let step = find_step_change(&pts(&latency), &params).expect("a step");
    assert_eq!(step.index, 4);
}

// ---------------------------------------------------------------------------------------------
// Shapes

#[test]
fn noise_around_a_level_is_flat() {
    let points = samples(360, 60.0, |i, _| 500.0 * MIB + 5.0 * MIB * jitter(i));
    assert!(matches!(classify_shape(&points), Shape::Flat { .. }));
    assert!(matches!(classify_shape(&points[..5]), Shape::Unclear));
}

#[test]
fn steady_growth_over_two_days_is_growth_not_a_spike() {
    // 48 h at 5 min: 200 MiB climbing 6 MiB/h, ±4 MiB noise.
    let points = samples(576, 300.0, |i, h| {
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
    let points = samples(360, 60.0, |i, h| 100.0 + 10.0 * h + 20.0 * jitter(i));
    let shape = classify_shape(&points);
    let trend = growth(&shape);
    assert!(trend.r2 > GROWTH_MIN_R2 && trend.r2 < 0.9, "{trend:?}");
}

#[test]
fn a_single_outlier_is_a_spike_never_growth() {
    let mut points = samples(288, 300.0, |i, _| 300.0 + 3.0 * jitter(i));
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
    let mut last = samples(288, 300.0, |i, _| 300.0 + 3.0 * jitter(i));
    last[287].1 = 900.0;
    assert!(matches!(classify_shape(&last), Shape::Flat { .. }));
}

#[test]
fn spike_then_back_is_a_spike() {
    let mut points = samples(120, 60.0, |i, _| 0.01 + 0.002 * jitter(i));
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
        let points = samples(240, 60.0, |i, _| {
            (if i < at { 0.2 } else { 1.4 }) + 0.03 * jitter(i)
        });
        match classify_shape(&points) {
            Shape::Step { at: when, .. } => assert_eq!(when, time(points[at].0)),
            other => panic!("step at {at}: got {other:?}"),
        }
    }
    let drop = samples(240, 60.0, |i, _| {
        (if i < 150 { 120.0 } else { 5.0 }) + 2.0 * jitter(i)
    });
    assert!(matches!(classify_shape(&drop), Shape::Drop { .. }));
}

#[test]
fn a_spike_on_a_climb_keeps_the_climb() {
    let mut points = samples(288, 300.0, |i, h| 100.0 + 4.0 * h + jitter(i));
    points[100].1 += 300.0;
    assert!(matches!(classify_shape(&points), Shape::Growth(_)));
}

#[test]
fn steady_decline_is_a_decline() {
    let points = samples(200, 60.0, |i, h| 900.0 - 100.0 * h + 5.0 * jitter(i));
    assert!(matches!(classify_shape(&points), Shape::Decline(_)));
}

#[test]
fn leak_with_periodic_restarts_is_a_sawtooth() {
    // 6 h at 1 min; climbs 8 MiB a minute from 150 MiB and restarts every 40 min.
    let points = samples(360, 60.0, |i, _| {
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
    let points = samples(576, 300.0, |i, h| {
        300.0 * MIB + 5.0 * MIB * h + 20.0 * MIB * (i % 6) as f64 / 5.0
    });
    let shape = classify_shape(&points);
    assert!((growth(&shape).slope_per_hour / MIB - 5.0).abs() < 0.3);
}

#[test]
fn climb_ended_by_one_kill_is_growth_up_to_the_kill() {
    // Two days of climbing to the kill at point 560, then a new container from 150 MiB.
    let points = samples(576, 300.0, |i, h| {
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
    let points = samples(121, 300.0, |_, h| 200.0 * MIB + 20.0 * MIB * h);
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

// ---------------------------------------------------------------------------------------------
// Throttling and restart counters

#[test]
fn sustained_throttling_is_reported_with_median_and_max() {
    let ratio = samples(360, 60.0, |i, _| 0.4 + 0.1 * jitter(i));
    let t = summarise_throttling(&ratio).expect("summary");
    assert!(t.sustained);
    assert!((t.median - 0.4).abs() < 0.02);
    assert!(t.max <= 0.5 && t.max > 0.48);
    assert!(t.share_above > 0.9);
    let text = describe_throttling(&t);
    assert!(text.starts_with("throttled above 25 % in"), "{text}");
    assert!(text.contains("median 40 %"), "{text}");

    // Two-minute bursts every hour: throttled, but not sustained.
    let bursts = samples(360, 60.0, |i, _| if i % 60 < 2 { 0.9 } else { 0.05 });
    let t = summarise_throttling(&bursts).expect("summary");
    assert!(!t.sustained);
    assert_eq!(t.max, 0.9);
}

#[test]
fn throttling_ratio_from_counters_survives_a_counter_reset() {
    let throttled = samples(60, 60.0, |i, _| {
        if i < 30 {
            1000.0 + 30.0 * i as f64
        } else {
            30.0 * (i - 29) as f64
        }
    });
    let periods = samples(60, 60.0, |i, _| {
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

fn minutely(values: &[f64]) -> Vec<(f64, f64)> {
    crate::detectors::testing::minutely(values, T0)
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
fn periodic_restarts_are_recognised() {
    // Every 40 min over 6 h at 1 min: 8 restarts, the first at 40 min.
    let counter = samples(361, 60.0, |i, _| 3.0 + (i / 40) as f64);
    let r = summarise_restarts(&counter).expect("restarts");
    assert_eq!(r.count, 9);
    assert_eq!(r.period, Some(Duration::minutes(40)));
    assert_eq!(r.first, time(counter[40].0));
    assert!(describe_restarts(&r).contains("every ~40 min: a steady period"));

    let irregular = samples(361, 60.0, |i, _| {
        [10, 25, 130, 140, 300]
            .iter()
            .filter(|&&at| i >= at)
            .count() as f64
    });
    let r = summarise_restarts(&irregular).expect("restarts");
    assert_eq!((r.count, r.period), (5, None));

    // Two restarts inside one sample hide the interval.
    let bunched = samples(100, 300.0, |i, _| (i / 10 * 2) as f64);
    assert_eq!(summarise_restarts(&bunched).and_then(|r| r.period), None);

    let none = samples(100, 60.0, |_, _| 4.0);
    assert_eq!(summarise_restarts(&none), None);

    let backoff = samples(100, 60.0, |i, _| (i / 5) as f64);
    let r = summarise_restarts(&backoff).expect("restarts");
    assert!(describe_restarts(&r).contains("crash-loop back-off"));
}
