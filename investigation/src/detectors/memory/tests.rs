//! Memory that climbs, over evidence as Prometheus servers write it (compact, spaced,
//! indented; with or without the envelope; thinned when long): toward a limit from another
//! query, in a sawtooth of restarts, and what is not a leak (a pod's total against one
//! container's limit, a short climb after a start).

use serde_json::{Value, json};

use crate::detectors::series::shape::time;
use crate::detectors::testing::{
    MIB, POD, Style, T0, assert_contains, assert_starts_with, container_labels, ctx, detect, find,
    jitter, matrix, metric, samples,
};
use crate::detectors::{Confidence, Kind, Role};

fn limit_labels() -> Value {
    json!({
        "__name__": "kube_pod_container_resource_limits",
        "namespace": "shop",
        "pod": POD,
        "container": "api",
        "resource": "memory",
        "unit": "byte",
    })
}

/// The pod's container's working set, as Prometheus writes a range query's answer.
fn working_set(points: Vec<(f64, f64)>) -> String {
    let labels = container_labels("container_memory_working_set_bytes");
    matrix(&[(labels, points)], false, Style::Compact)
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
        let usage = samples(n, step, |i, h| {
            (200.0 * MIB + 5.8 * MIB * h + MIB * jitter(i)).round()
        });
        let limit = samples(n, step, |_, _| 512.0 * MIB);
        for envelope in [false, true] {
            let items = [
                metric(
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
                metric(
                    2,
                    "kube_pod_container_resource_limits{resource=\"memory\"}",
                    &matrix(&[(limit_labels(), limit.clone())], envelope, style),
                ),
            ];
            let findings = detect(&items, &ctx());
            assert_eq!(findings.len(), 1, "{style:?}: {findings:#?}");
            let f = &findings[0];
            assert_eq!(f.kind(), Kind::MemoryGrowth);
            assert_eq!(f.confidence, Confidence::High);
            // Intentional change: a clear climb is a verified cause (a leak) now.
            assert!(f.verified);
            assert_eq!(f.role(), Role::Cause);
            assert_eq!(f.resource().as_deref(), Some(POD));
            assert_starts_with(
                &f.title(),
                "Container `api` memory grew steadily: 200 MiB → ",
            );
            assert_contains(&f.title(), ", limit 512 MiB in ~");
            assert_contains(&f.detail(), "at this rate the limit 512 MiB is reached in");
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
    let usage = samples(97, 1800.0, |i, h| {
        (200.0 * MIB + 5.8 * MIB * h + MIB * jitter(i)).round()
    });
    let alone = [metric(
        1,
        "",
        &matrix(
            &[(container_labels("container_memory_rss"), usage)],
            false,
            Style::Compact,
        ),
    )];
    let findings = detect(&alone, &ctx());
    let growth = find(&findings, Kind::MemoryGrowth);
    assert!(!growth.title().contains("limit"), "{}", growth.title());
}

#[test]
fn a_long_range_is_thinned_and_read_whole() {
    // 48 h at 5 min (576 points) does not fit 3,500 characters: the excerpt keeps every
    // k-th point of the whole window instead of a head or a tail.
    let usage = samples(576, 300.0, |i, h| {
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
        let items = [metric(1, "", &text)];
        assert_contains(&items[0].excerpt, "\"thinned\"");
        let findings = detect(&items, &ctx());
        assert_eq!(findings.len(), 1, "{findings:#?}");
        // The whole window.
        assert_contains(
            &findings[0].detail(),
            "data shown 03-03 11:06 UTC to 03-05 11:01 UTC",
        );
    }
}

#[test]
fn restart_sawtooth_and_periodic_restarts_over_evidence() {
    // 6 h at 5 min: memory climbs 45 MiB a sample from 150 MiB, killed every 40 min.
    let memory = samples(72, 300.0, |i, _| 150.0 * MIB + 45.0 * MIB * (i % 8) as f64);
    let restarts = samples(72, 300.0, |i, _| (i / 8) as f64);
    let limit = samples(72, 300.0, |_, _| 512.0 * MIB);
    let items = [
        metric(1, "", &working_set(memory)),
        metric(
            2,
            "",
            &matrix(
                &[(
                    container_labels("kube_pod_container_status_restarts_total"),
                    restarts,
                )],
                true,
                Style::Spaced,
            ),
        ),
        metric(
            3,
            "",
            &matrix(&[(limit_labels(), limit)], true, Style::Compact),
        ),
    ];
    let findings = detect(&items, &ctx());
    // The old test ran the shape detectors alone; the `steps` part reads every range query
    // and sees the restart counter climb, which is its own story.
    let shapes: Vec<&str> = findings
        .iter()
        .map(|f| f.kind().part())
        .filter(|part| *part != "steps")
        .collect();
    assert_eq!(shapes, ["memory", "restarts"], "{findings:#?}");
    let saw = find(&findings, Kind::MemoryGrowth);
    // Titles are computed now, and say what a sawtooth means.
    assert_eq!(
        saw.title(),
        "Container `api` memory climbs steadily and drops back every ~40 min (8 drops): a leak \
         cut short by restarts"
    );
    assert_contains(
        &saw.detail(),
        "peaking at 465 MiB (91 % of the 512 MiB limit)",
    );
    assert_eq!(saw.confidence, Confidence::High);
    assert!(saw.verified, "three drops or more: a verified leak");
    let trend = find(&findings, Kind::RestartTrend);
    assert_eq!(
        trend.title(),
        "Container `api` restarted 8 times in 5.9 h, every ~40 min"
    );
    assert_eq!(trend.confidence, Confidence::High);
    assert!(!trend.verified);
    assert_eq!(trend.at, Some(time(T0 + 8.0 * 300.0)));
    assert!(saw.explains(trend), "the leak explains the restarts");
}

#[test]
fn a_pod_total_is_not_measured_against_one_containers_limit() {
    let usage = samples(25, 7200.0, |_, h| 200.0 * MIB + 5.0 * MIB * h);
    let pod_total = json!({"pod": POD});
    let limit_of = |container: &str, mib: f64| {
        let mut labels = limit_labels();
        labels["container"] = json!(container);
        (labels, samples(25, 7200.0, move |_, _| mib * MIB))
    };
    let items = [
        metric(
            1,
            "sum by (pod) (container_memory_working_set_bytes{namespace=\"shop\"})",
            &matrix(&[(pod_total, usage)], false, Style::Compact),
        ),
        metric(
            2,
            "",
            &matrix(
                &[limit_of("api", 512.0), limit_of("sidecar", 64.0)],
                false,
                Style::Compact,
            ),
        ),
    ];
    let findings = detect(&items, &ctx());
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_starts_with(
        &findings[0].title(),
        "Pod `payments-api-7d9f8c6b5-x2k4q` memory grew steadily",
    );
    assert!(
        !findings[0].detail().contains("limit"),
        "{}",
        findings[0].detail()
    );
}

#[test]
fn a_short_climb_is_not_memory_growth() {
    // 40 min of climbing after a start: warm-up as often as a leak.
    let memory = samples(41, 60.0, |i, _| 100.0 * MIB + 5.0 * MIB * i as f64);
    let item = [metric(1, "", &working_set(memory))];
    let findings = detect(&item, &ctx());
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn a_sawtooth_nothing_killed_is_not_a_verified_leak() {
    // The same climb and drop as a leak cut short by restarts, but no container was seen
    // killed: a garbage-collected heap or a cache looks like this too.
    let memory = samples(72, 300.0, |i, _| 150.0 * MIB + 45.0 * MIB * (i % 8) as f64);
    let findings = detect(&[metric(1, "", &working_set(memory))], &ctx());
    let saw = find(&findings, Kind::MemoryGrowth);
    assert_eq!(saw.confidence, Confidence::High);
    assert!(!saw.verified, "{saw:#?}");
}

#[test]
fn a_climb_names_the_revision_it_began_with_not_the_newest() {
    use chrono::{DateTime, Utc};
    let iso = |t: f64| {
        DateTime::<Utc>::from_timestamp(t as i64, 0)
            .expect("time")
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    // Flat for 12 h, then a steady climb from when revision 7 rolled out.
    let memory = samples(73, 1800.0, |i, h| {
        (280.0 * MIB + 28.0 * MIB * (h - 12.0).max(0.0) + MIB * jitter(i)).round()
    });
    let history = format!(
        "- creationTimestamp: \"{}\"\n  revision: 6\n  image: registry/gateway:5.1.9\n\
         - creationTimestamp: \"{}\"\n  revision: 7\n  image: registry/gateway:5.2.0\n\
         - creationTimestamp: \"{}\"\n  revision: 8\n  image: registry/gateway:5.2.1\n",
        iso(T0 - 9.0 * 86400.0),
        iso(T0 + 11.5 * 3600.0),
        iso(T0 + 26.0 * 3600.0),
    );
    let evidence = [
        metric(1, "", &working_set(memory)),
        crate::detectors::testing::history(2, &history),
    ];
    let growth = find(&detect(&evidence, &ctx()), Kind::MemoryGrowth).clone();
    assert_contains(
        &growth.title(),
        "since revision 7 (`registry/gateway:5.2.0`)",
    );
    assert!(!growth.title().contains("5.2.1"), "{}", growth.title());

    // A climb that starts with the series (a new container) names no revision.
    let fresh = samples(49, 1800.0, |i, h| {
        (280.0 * MIB + 28.0 * MIB * h + MIB * jitter(i)).round()
    });
    let evidence = [
        metric(1, "", &working_set(fresh)),
        crate::detectors::testing::history(2, &history),
    ];
    let growth = find(&detect(&evidence, &ctx()), Kind::MemoryGrowth).clone();
    assert!(!growth.title().contains("since"), "{}", growth.title());
}

#[test]
fn a_new_pods_climb_names_the_revision_the_workloads_climb_began_with() {
    use chrono::{DateTime, Utc};
    let iso = |t: f64| {
        DateTime::<Utc>::from_timestamp(t as i64, 0)
            .expect("time")
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let hour = 3600.0;
    // The current pod (revision 8, started at 36 h) climbs from its own start.
    let current: Vec<(f64, f64)> = (0..25)
        .map(|i| {
            let h = 36.0 + f64::from(i) * 0.5;
            (T0 + h * hour, (300.0 + 55.0 * (h - 36.0)) * MIB)
        })
        .collect();
    // The workload's pods over a week: revision 6's flat, revision 7's climbing from its start
    // at 12 h (and killed at 24 h), revision 8's climbing from 36 h.
    let pod_labels = |pod: &str| {
        json!({"__name__": "container_memory_working_set_bytes", "namespace": "shop",
               "pod": pod, "container": "api"})
    };
    let flat: Vec<(f64, f64)> = (0..13)
        .map(|i| (T0 + f64::from(i) * hour, 310.0 * MIB))
        .collect();
    let seven: Vec<(f64, f64)> = (12..25)
        .map(|h| {
            (
                T0 + f64::from(h) * hour,
                (300.0 + 55.0 * f64::from(h - 12)) * MIB,
            )
        })
        .collect();
    let across = matrix(
        &[
            (pod_labels("gateway-5d8f7c6b4-aaaaa"), flat),
            (pod_labels("gateway-6c9d8e7f5-bbbbb"), seven),
            (pod_labels(POD), current.clone()),
        ],
        false,
        Style::Compact,
    );
    let history = format!(
        "- creationTimestamp: \"{}\"\n  revision: 6\n  image: registry/gateway:5.1.4\n\
         - creationTimestamp: \"{}\"\n  revision: 7\n  image: registry/gateway:5.2.0\n\
         - creationTimestamp: \"{}\"\n  revision: 8\n  image: registry/gateway:5.2.1\n",
        iso(T0 - 9.0 * 86400.0),
        iso(T0 + 11.8 * hour),
        iso(T0 + 35.9 * hour),
    );
    let query = "sum by (pod) (container_memory_working_set_bytes{namespace=\"shop\", pod=~\"gateway-[a-z0-9]+-[a-z0-9]+\"})";
    let evidence = [
        metric(1, "", &working_set(current.clone())),
        metric(2, query, &across),
        crate::detectors::testing::history(3, &history),
    ];
    let findings = detect(&evidence, &ctx());
    // One finding, about the current pod: the workload's series date it, they are not leaks
    // of their own.
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.kind() == Kind::MemoryGrowth)
            .count(),
        1
    );
    let growth = find(&findings, Kind::MemoryGrowth);
    assert_contains(
        &growth.title(),
        "since revision 7 (`registry/gateway:5.2.0`)",
    );
    assert!(
        growth
            .refs
            .iter()
            .any(|r| r.evidence == evidence[1].id && r.quote.contains("gateway-6c9d8e7f5-bbbbb")),
        "{:#?}",
        growth.refs
    );

    // With no pod flat before the climb, nothing dates it.
    let no_baseline = matrix(&[(pod_labels(POD), current.clone())], false, Style::Compact);
    let evidence = [
        metric(1, "", &working_set(current)),
        metric(2, query, &no_baseline),
        crate::detectors::testing::history(3, &history),
    ];
    let growth = find(&detect(&evidence, &ctx()), Kind::MemoryGrowth).clone();
    assert!(!growth.title().contains("since"), "{}", growth.title());
}
