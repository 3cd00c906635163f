//! Replication slots that fill a database's volume: an inactive slot whose retained WAL grew by
//! most of what the volume lost is the cause, and explains the volume filling; an active slot,
//! a slot whose WAL is small against the loss, and a database that grew as much itself are
//! not. The filling volume says when it is full at its recent rate, and leads to the
//! database's growth series.

use serde_json::{Value, json};

use crate::detectors::lead::Lead;
use crate::detectors::testing::{Style, assert_contains, detect, ev, find, has, matrix, samples};
use crate::detectors::{DetectionContext, Fact, Kind, Role, Symptom};
use crate::evidence::{Capability, Evidence};

const POD: &str = "orders-db-0";
const CLAIM: &str = "data-orders-db-0";
const GB: f64 = 1e9;
/// Hours of series read (one point an hour, as the lead reads them).
const HOURS: usize = 48;
/// The hour (from the first point) the slot stops being read.
const STOPPED: f64 = 17.0;

/// The database pod as `pods_get` returns it, running `image` and mounting the claim.
fn pod(n: u32, image: &str) -> Evidence {
    let text = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {POD}
  namespace: orders
spec:
  containers:
  - name: postgres
    image: {image}
    volumeMounts:
    - mountPath: /var/lib/postgresql/data
      name: data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: {CLAIM}
status:
  phase: Running
"
    );
    ev(
        n,
        Capability::PodDescribe,
        json!({"name": POD, "namespace": "orders"}),
        &text,
    )
}

/// One metric's answer, hourly over [`HOURS`], with `labels` besides the pod's.
fn series(n: u32, name: &str, labels: Value, f: impl Fn(f64) -> f64) -> Evidence {
    let mut all = json!({"__name__": name, "namespace": "orders", "pod": POD});
    if let (Some(all), Some(extra)) = (all.as_object_mut(), labels.as_object()) {
        all.extend(extra.clone());
    }
    let points = samples(HOURS + 1, 3600.0, |_, h| f(h));
    let text = matrix(&[(all, points)], true, Style::Compact);
    ev(
        n,
        Capability::MetricRange,
        json!({"query": format!("{name}{{namespace=\"orders\", pod=\"{POD}\"}}")}),
        &text,
    )
}

/// The kubelet's free bytes of the claim: flat, then losing `per_hour` from [`STOPPED`].
fn free(n: u32, per_hour: f64) -> Evidence {
    let points = samples(HOURS + 1, 3600.0, |_, h| {
        126.0 * GB - per_hour * (h - STOPPED).max(0.0)
    });
    let labels = json!({"__name__": "kubelet_volume_stats_available_bytes", "namespace": "orders", "persistentvolumeclaim": CLAIM});
    ev(
        n,
        Capability::MetricRange,
        json!({"query": format!("kubelet_volume_stats_available_bytes{{persistentvolumeclaim=\"{CLAIM}\"}}")}),
        &matrix(&[(labels, points)], true, Style::Compact),
    )
}

/// The database's growth series: slot `debezium_orders` active (or not after [`STOPPED`]), its
/// retained WAL growing `wal_per_hour` from then, and the database growing `db_per_hour`.
fn database(active: bool, wal_per_hour: f64, db_per_hour: f64) -> Vec<Evidence> {
    let slot = json!({"slot_name": "debezium_orders"});
    vec![
        series(
            3,
            "pg_replication_slots_pg_wal_lsn_diff",
            slot.clone(),
            |h| 0.2 * GB + wal_per_hour * (h - STOPPED).max(0.0),
        ),
        series(
            4,
            "pg_replication_slot_slot_is_active",
            json!({"slot_name": "debezium_orders", "slot_type": "logical"}),
            |h| if active || h < STOPPED { 1.0 } else { 0.0 },
        ),
        series(
            5,
            "pg_database_size_bytes",
            json!({"datname": "orders"}),
            |h| 58.0 * GB + db_per_hour * (h - STOPPED).max(0.0),
        ),
    ]
}

fn filling() -> DetectionContext {
    DetectionContext {
        symptom: Symptom::Storage,
        alert_claim: Some(CLAIM.into()),
        ..DetectionContext::default()
    }
}

fn evidence(active: bool, wal_per_hour: f64, db_per_hour: f64) -> Vec<Evidence> {
    let mut evidence = vec![
        pod(1, "registry.example.com/platform/postgres:15.8-bookworm"),
        free(2, 2.0 * GB),
    ];
    evidence.extend(database(active, wal_per_hour, db_per_hour));
    evidence
}

#[test]
fn an_inactive_slot_retaining_what_the_volume_lost_fills_it() {
    let evidence = evidence(false, 2.0 * GB, 0.01 * GB);
    let findings = detect(&evidence, &filling());
    let slot = find(&findings, Kind::SlotRetainsWal);
    assert!(slot.verified);
    assert_eq!(slot.role(), Role::Cause);
    let title = slot.title();
    assert_contains(
        &title,
        "Replication slot `debezium_orders` is inactive since 31 h ago",
    );
    assert_contains(&title, "filling `data-orders-db-0`");
    assert_contains(&slot.detail(), "full in about 32 hours");
    let volume = find(&findings, Kind::VolumeFilling);
    assert!(volume.verified);
    assert_eq!(volume.role(), Role::Symptom);
    assert_contains(
        &volume.title(),
        "full in about 32 hours at the current rate",
    );
    assert!(slot.explains(volume));
}

#[test]
fn the_filling_volume_leads_to_its_databases_growth() {
    let findings = detect(
        &[pod(1, "docker.io/bitnami/postgresql:16.4.0-debian-12-r9")],
        &filling(),
    );
    let volume = find(&findings, Kind::VolumeFilling);
    assert!(!volume.verified, "no free-bytes series read yet");
    assert_eq!(
        volume.fact.leads(),
        [Lead::VolumeGrowth {
            namespace: "orders".into(),
            claim: CLAIM.into(),
            database_pod: Some(POD.into()),
            at: None,
        }]
    );
    // A pod that runs no database: only the volume's own free bytes.
    let findings = detect(
        &[pod(1, "registry.example.com/media/transcoder:3.4.0")],
        &filling(),
    );
    let Fact::VolumeFilling(volume) = &find(&findings, Kind::VolumeFilling).fact else {
        panic!("not a volume");
    };
    assert_eq!(volume.database_pod, None);
}

#[test]
fn an_active_slot_is_read_however_much_it_holds() {
    let findings = detect(&evidence(true, 2.0 * GB, 0.01 * GB), &filling());
    assert!(!has(&findings, Kind::SlotRetainsWal), "{findings:#?}");
}

#[test]
fn an_inactive_slot_with_little_wal_does_not_account_for_the_loss() {
    let findings = detect(&evidence(false, 0.2 * GB, 0.01 * GB), &filling());
    assert!(!has(&findings, Kind::SlotRetainsWal), "{findings:#?}");
    assert!(has(&findings, Kind::VolumeFilling));
}

#[test]
fn a_database_that_grew_as_much_fills_its_volume_itself() {
    let findings = detect(&evidence(false, 1.0 * GB, 1.0 * GB), &filling());
    assert!(!has(&findings, Kind::SlotRetainsWal), "{findings:#?}");
    assert!(has(&findings, Kind::DatabaseGrew), "{findings:#?}");
}

#[test]
fn a_bulk_import_beside_an_active_small_slot_is_the_databases_own_growth() {
    let findings = detect(&evidence(true, 0.05 * GB, 2.0 * GB), &filling());
    assert!(!has(&findings, Kind::SlotRetainsWal), "{findings:#?}");
    let grew = find(&findings, Kind::DatabaseGrew);
    assert_eq!(grew.role(), Role::Symptom);
    assert_contains(
        &grew.title(),
        "The database in pod `orders-db-0` grew 57.7 GiB over 48 h, 100 % of what volume \
         `data-orders-db-0` lost",
    );
}

#[test]
fn no_volume_alert_no_slot_finding() {
    let findings = detect(
        &evidence(false, 2.0 * GB, 0.01 * GB),
        &DetectionContext::default(),
    );
    assert!(!has(&findings, Kind::SlotRetainsWal));
    assert!(!has(&findings, Kind::VolumeFilling));
}
