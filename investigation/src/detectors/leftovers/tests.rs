//! What fills a volume: the pod mounting the filling claim whose failures each leave a new entry
//! of one shape under the mount is the cause; one failure, entries of different shapes, "no space
//! left" lines, a read-only mount, another claim or an alert not about storage are no finding.

use serde_json::json;

use super::*;
use crate::detectors::testing::{assert_contains, detect, ev, find, has, log_of};
use crate::detectors::{DetectionContext, Kind, Role, Symptom};
use crate::evidence::{Capability, Evidence};

const POD: &str = "transcoder-7c9d8f6b5-wq4zp";

/// The pod as `pods_get` returns it (YAML), mounting `claim` at `/scratch`.
fn pod(n: u32, claim: &str, read_only: bool) -> Evidence {
    let text = format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {POD}
  namespace: media
spec:
  containers:
  - name: worker
    image: registry.example.com/media/transcoder:3.4.0
    volumeMounts:
    - mountPath: /scratch
      name: scratch
      readOnly: {read_only}
  nodeName: worker-eu2-1b-6
  volumes:
  - name: scratch
    persistentVolumeClaim:
      claimName: {claim}
status:
  phase: Running
"
    );
    ev(
        n,
        Capability::PodDescribe,
        json!({"name": POD, "namespace": "media"}),
        &text,
    )
}

/// A worker's log: the same job failing in attempts `first..=last`, each in its own work dir.
fn retries(first: u32, last: u32) -> String {
    let mut log = String::from(
        "2025-01-01T00:00:00.004Z INFO  worker: job=tx_91ab02 done; removed /scratch/tx_91ab02-r1\n",
    );
    for attempt in first..=last {
        log.push_str(&format!(
            "2025-01-01T00:0{attempt}:00.120Z INFO  worker: job=tx_88f1c2 downloading to /scratch/tx_88f1c2-r{attempt}/source.mov\n\
             2025-01-01T00:0{attempt}:45.311Z ERROR ffmpeg: /scratch/tx_88f1c2-r{attempt}/source.mov: Invalid data found when processing input\n\
             2025-01-01T00:0{attempt}:45.315Z ERROR worker: job=tx_88f1c2 failed; keeping /scratch/tx_88f1c2-r{attempt} for inspection\n"
        ));
    }
    log.push_str("2025-01-01T00:09:31.990Z WARNING worker: low space on /scratch: 2.4 GiB free\n");
    log
}

fn filling(claim: &str) -> DetectionContext {
    DetectionContext {
        symptom: Symptom::Storage,
        alert_claim: Some(claim.into()),
        ..DetectionContext::default()
    }
}

#[test]
fn the_same_work_failing_in_a_new_place_each_time_fills_the_volume() {
    let evidence = [
        pod(1, "transcode-scratch", false),
        log_of(2, POD, &retries(7, 8)),
    ];
    let findings = detect(&evidence, &filling("transcode-scratch"));
    let kept = find(&findings, Kind::FailedWorkKept);
    assert!(kept.verified);
    assert_eq!(kept.role(), Role::Cause);
    let Fact::FailedWorkKept(k) = &kept.fact else {
        panic!("not failed work");
    };
    assert_eq!(k.mount_path, "/scratch");
    assert_eq!(k.container, "worker");
    assert_eq!(
        k.entries,
        ["/scratch/tx_88f1c2-r7", "/scratch/tx_88f1c2-r8"]
    );
    assert_eq!(k.attempts, 2);
    assert_contains(&kept.title(), POD);
    assert_contains(&kept.title(), "transcode-scratch");
    assert_contains(&kept.title(), "/scratch/tx_88f1c2-r8");
    // The work that succeeded and cleaned up is not named.
    assert!(!kept.title().contains("tx_91ab02"), "{}", kept.title());
    // It explains the error lines it leaves.
    assert!(
        findings
            .iter()
            .filter(|f| f.kind() == Kind::ErrorLine)
            .all(|e| kept.explains(e))
    );
}

#[test]
fn one_failure_is_no_retry() {
    let evidence = [
        pod(1, "transcode-scratch", false),
        log_of(2, POD, &retries(7, 7)),
    ];
    assert!(!has(
        &detect(&evidence, &filling("transcode-scratch")),
        Kind::FailedWorkKept
    ));
}

#[test]
fn a_read_only_mount_another_claim_or_another_alert_is_no_finding() {
    let log = log_of(2, POD, &retries(7, 8));
    let read_only = [pod(1, "transcode-scratch", true), log.clone()];
    assert!(!has(
        &detect(&read_only, &filling("transcode-scratch")),
        Kind::FailedWorkKept
    ));
    let other_claim = [pod(1, "transcode-scratch", false), log.clone()];
    assert!(!has(
        &detect(&other_claim, &filling("media-cache")),
        Kind::FailedWorkKept
    ));
    let not_storage = DetectionContext {
        symptom: Symptom::Errors,
        ..filling("transcode-scratch")
    };
    let same = [pod(1, "transcode-scratch", false), log];
    assert!(!has(&detect(&same, &not_storage), Kind::FailedWorkKept));
}

#[test]
fn a_full_disk_failing_writes_is_the_effect_not_the_writer() {
    // Red herring: once the volume is full every write fails, each naming its own file.
    let log = "2025-01-01 00:00:01 ERROR could not write /scratch/seg-0001.tmp: No space left on device\n\
               2025-01-01 00:00:02 ERROR could not write /scratch/seg-0002.tmp: No space left on device\n";
    let evidence = [pod(1, "transcode-scratch", false), log_of(2, POD, log)];
    assert!(!has(
        &detect(&evidence, &filling("transcode-scratch")),
        Kind::FailedWorkKept
    ));
}

#[test]
fn failures_naming_different_kinds_of_entry_are_not_one_work_retried() {
    let log = "2025-01-01 00:00:01 ERROR could not open /scratch/index/main.idx\n\
               2025-01-01 00:00:02 ERROR could not open /scratch/cache.db\n\
               2025-01-01 00:00:03 INFO wrote /scratch/out-1 and /scratch/out-2\n";
    let evidence = [pod(1, "transcode-scratch", false), log_of(2, POD, log)];
    assert!(!has(
        &detect(&evidence, &filling("transcode-scratch")),
        Kind::FailedWorkKept
    ));
}

#[test]
fn entries_are_read_directly_under_the_mount() {
    assert_eq!(
        entries_under(
            "ERROR ffmpeg: /scratch/tx_1-r38/source.mov: bad; keeping /scratch/tx_1-r38.",
            "/scratch"
        ),
        ["/scratch/tx_1-r38"]
    );
    // A longer path that only contains the mount's is not under it.
    assert!(entries_under("ERROR open /data/scratch/x failed", "/scratch").is_empty());
    assert!(entries_under("ERROR low space on /scratch: 2%", "/scratch").is_empty());
    assert_eq!(
        entries_under("ERROR path=\"/scratch/job-7\"", "/scratch"),
        ["/scratch/job-7"]
    );
}

#[test]
fn attempts_share_a_shape_whatever_their_numbers() {
    assert_eq!(
        shape("/scratch/tx_88f1c2-r37"),
        shape("/scratch/tx_88f1c2-r38")
    );
    assert_eq!(shape("/data/core.1234"), shape("/data/core.98765"));
    assert_ne!(shape("/scratch/index"), shape("/scratch/cache.db"));
}

#[test]
fn mounts_of_the_claim_are_read_from_the_spec() {
    let spec = json!({
        "spec": {
            "volumes": [
                {"name": "scratch", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "ro", "persistentVolumeClaim": {"claimName": "c", "readOnly": true}},
                {"name": "other", "persistentVolumeClaim": {"claimName": "d"}}
            ],
            "containers": [
                {"name": "w", "volumeMounts": [
                    {"name": "scratch", "mountPath": "/scratch/"},
                    {"name": "ro", "mountPath": "/ro"},
                    {"name": "other", "mountPath": "/other"}
                ]},
                {"name": "reader", "volumeMounts": [
                    {"name": "scratch", "mountPath": "/in", "readOnly": true}
                ]}
            ]
        }
    });
    assert_eq!(
        claim_mounts(&spec, "c"),
        [("w".to_string(), "/scratch".to_string())]
    );
}
