//! Batch jobs that started when something rose: the only running Job that started minutes
//! before a load growth is the verified suspect; two at once are suspects only, and a Job that
//! finished before, or started long before, is not one.

use serde_json::json;

use crate::detectors::Kind;
use crate::detectors::testing::{
    Style, alert_at, all_of, detect, ev, find, matrix, metric, minutely, utc,
};
use crate::evidence::Capability;

/// A request rate that steps from ~1.3k to ~4.2k at 13:40.
fn requests() -> crate::evidence::Evidence {
    let labels = json!({"__name__": "nginx_ingress_controller_requests", "namespace": "catalog", "service": "catalog-search"});
    let mut values = vec![1320.0; 20];
    values.extend(vec![4200.0; 20]);
    let start = utc("2025-03-04T13:20:00Z").timestamp() as f64;
    metric(
        1,
        "sum(rate(nginx_ingress_controller_requests{namespace=\"catalog\"}[5m]))",
        &matrix(&[(labels, minutely(&values, start))], true, Style::Compact),
    )
}

fn job(name: &str, start: &str, active: u32, completion: Option<&str>) -> String {
    let completion = completion
        .map(|c| format!("    completionTime: '{c}'\n"))
        .unwrap_or_default();
    format!(
        "\
- apiVersion: batch/v1
  kind: Job
  metadata:
    name: {name}
    namespace: marketing
    ownerReferences:
    - apiVersion: batch/v1
      kind: CronJob
      name: feed-exporter
  status:
    active: {active}
{completion}    startTime: '{start}'
"
    )
}

fn jobs(items: &[String]) -> crate::evidence::Evidence {
    ev(
        2,
        Capability::ObjectList,
        json!({"kind": "Job"}),
        &items.concat(),
    )
}

#[test]
fn the_only_job_that_started_just_before_the_load_rose_is_the_suspect() {
    let evidence = [
        requests(),
        jobs(&[
            job("feed-exporter-29087400", "2025-03-04T13:39:00Z", 1, None),
            job(
                "feed-exporter-29085960",
                "2025-03-03T13:39:00Z",
                0,
                Some("2025-03-03T20:19:00Z"),
            ),
        ]),
    ];
    let findings = detect(&evidence, &alert_at("2025-03-04T14:00:00Z"));
    let started = find(&findings, Kind::BatchStarted);
    assert!(started.is_verified_cause(), "{started:#?}");
    assert!(
        started.title().starts_with(
            "Job `feed-exporter-29087400` (CronJob `feed-exporter`) started 1 min before"
        ),
        "{}",
        started.title()
    );
    assert!(
        started
            .step(&crate::detectors::Scene {
                namespace: "catalog".into(),
                pod: None,
                workload: None,
                container: None,
                workload_ref: "deployment/catalog-search".into(),
                when: "around 14:00 UTC".into(),
                headline: true,
            })
            .contains("kubectl -n marketing patch cronjob feed-exporter")
    );
    assert_eq!(
        all_of(&findings, Kind::BatchStarted).len(),
        1,
        "yesterday's run is history"
    );
}

#[test]
fn two_jobs_at_once_are_suspects_and_a_long_finished_one_is_none() {
    let evidence = [
        requests(),
        jobs(&[
            job("feed-exporter-29087400", "2025-03-04T13:38:00Z", 1, None),
            job("report-builder-1", "2025-03-04T13:37:00Z", 1, None),
            job(
                "cleanup-1",
                "2025-03-04T13:36:00Z",
                0,
                Some("2025-03-04T13:37:00Z"),
            ),
        ]),
    ];
    let findings = detect(&evidence, &alert_at("2025-03-04T14:00:00Z"));
    let suspects = all_of(&findings, Kind::BatchStarted);
    assert_eq!(suspects.len(), 2, "{suspects:#?}");
    assert!(suspects.iter().all(|f| !f.verified), "neither alone");
}

/// A CloudWatch statistic per period (`dimension_*` labels) stepping from `before` to `after`
/// at 13:20 + `minutes`.
fn table_series(
    name: &str,
    minutes: usize,
    before: f64,
    after: f64,
) -> (serde_json::Value, Vec<(f64, f64)>) {
    let labels = json!({"__name__": name, "dimension_TableName": "carts-prod"});
    let mut values = vec![before; minutes];
    values.extend(vec![after; 40 - minutes]);
    let start = utc("2025-03-04T13:20:00Z").timestamp() as f64;
    (labels, minutely(&values, start))
}

#[test]
fn a_job_is_named_with_the_first_rise_after_it_started() {
    let with_it = table_series("aws_dynamodb_write_throttle_events_sum", 21, 0.0, 4000.0);
    let first = table_series(
        "aws_dynamodb_consumed_write_capacity_units_sum",
        20,
        8000.0,
        30000.0,
    );
    let later = table_series("aws_dynamodb_returned_item_count_sum", 30, 10.0, 900.0);
    let evidence = [
        metric(
            1,
            "{dimension_TableName=\"carts-prod\"}",
            &matrix(&[with_it, first, later], true, Style::Compact),
        ),
        jobs(&[job("cart-ttl-backfill", "2025-03-04T13:39:00Z", 1, None)]),
    ];
    let findings = detect(&evidence, &alert_at("2025-03-04T14:00:00Z"));
    let started = find(&findings, Kind::BatchStarted);
    assert!(started.is_verified_cause(), "{started:#?}");
    assert!(
        started.title().starts_with(
            "Job `cart-ttl-backfill` (CronJob `feed-exporter`) started 1 min before \
             `aws_dynamodb_consumed_write_capacity_units_sum"
        ),
        "{}",
        started.title()
    );
    // The rise that came with it is its load too; one ten minutes later is not said to be.
    let steps = all_of(&findings, Kind::MetricStep);
    let explained = |series: &str| {
        steps
            .iter()
            .find(|s| s.title().contains(series))
            .is_some_and(|s| started.explains(s))
    };
    assert!(explained("write_throttle_events"), "{steps:#?}");
    assert!(explained("consumed_write_capacity"));
    assert!(!explained("returned_item_count"));
}
