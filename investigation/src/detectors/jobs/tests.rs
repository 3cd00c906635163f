//! Jobs that failed: the backoff limit (a symptom) and the active deadline (a cause that
//! explains the SIGTERM its pods got), and a gRPC `DeadlineExceeded` that is no Job's.

use serde_json::json;

use super::*;
use crate::detectors::testing::{assert_contains, ctx, describe, described, detect, ev, find, has};
use crate::detectors::{DetectionContext, Kind};
use crate::evidence::Capability;

#[test]
fn job_failed_backoff_limit() {
    let description = "\
Name:             nightly-export
Backoff Limit:    2
Pods Statuses:    0 Active (0 Ready) / 0 Succeeded / 3 Failed
Events:
  Warning  BackoffLimitExceeded  1m   job-controller  Job has reached the specified backoff limit
";
    let args = json!({"kind": "job", "name": "nightly-export"});
    let findings = detect(
        &[ev(1, Capability::PodDescribe, args, description)],
        &DetectionContext::default(),
    );
    let job = find(&findings, Kind::JobFailed);
    assert!(!job.verified, "a failed job is a symptom");
    assert_eq!(job.role(), Role::Symptom);
    assert_contains(&job.title(), "nightly-export");
    assert_contains(&job.title(), "BackoffLimitExceeded");
    assert_eq!(
        job.refs.len(),
        3,
        "the reason, the limit and the pods' statuses"
    );
}

/// A Job stopped by `activeDeadlineSeconds`, as `resources_get` returns it.
const DEADLINE_JOB: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  creationTimestamp: \"2025-03-04T13:50:00Z\"
  name: ledger-reconcile-29087415
  namespace: finance
spec:
  activeDeadlineSeconds: 600
  backoffLimit: 2
  template:
    spec:
      containers:
      - image: registry.example.com/finance/ledger-reconcile:4.2.0
        name: reconcile
status:
  conditions:
  - lastProbeTime: \"2025-03-04T14:00:00Z\"
    lastTransitionTime: \"2025-03-04T14:00:00Z\"
    message: Job was active longer than specified deadline
    reason: DeadlineExceeded
    status: \"True\"
    type: Failed
  failed: 1
  startTime: \"2025-03-04T13:50:00Z\"
";

#[test]
fn a_job_stopped_by_its_deadline_explains_the_sigterm_its_pod_got() {
    let pod = described(
        "ledger-reconcile-29087415-q8k2d",
        "reconcile",
        "    State:          Terminated
      Reason:       Error
      Exit Code:    143
    Restart Count:  0
",
    );
    let evidence = [
        ev(
            1,
            Capability::ObjectGet,
            json!({"kind": "Job", "name": "ledger-reconcile-29087415", "namespace": "finance"}),
            DEADLINE_JOB,
        ),
        ev(
            2,
            Capability::PodDescribe,
            json!({"name": "ledger-reconcile-29087415-q8k2d", "namespace": "finance"}),
            &pod,
        ),
    ];
    let findings = detect(&evidence, &DetectionContext::default());
    let job = find(&findings, Kind::JobFailed);
    assert!(job.verified, "the Job controller reports the deadline");
    assert_eq!(job.role(), Role::Cause);
    assert_eq!(
        job.title(),
        "Job `ledger-reconcile-29087415` failed: DeadlineExceeded, it ran past its \
         activeDeadlineSeconds and was stopped"
    );
    let stopped = find(&findings, Kind::Exited);
    assert_eq!(stopped.role(), Role::Consequence);
    assert!(job.explains(stopped));
}

#[test]
fn a_grpc_deadline_exceeded_is_no_jobs_failure() {
    // Intentional change: `DeadlineExceeded` counts only as a Job's reason, not as the gRPC
    // status code every client timeout prints.
    let description = "\
Name:             payments-api-7d9f8c6b5-x2k4q
Events:
  Warning  Unhealthy  30s (x4 over 2m)  kubelet  Readiness probe errored: rpc error: code = DeadlineExceeded desc = context deadline exceeded
";
    let findings = detect(&[describe(1, description)], &ctx());
    assert!(!has(&findings, Kind::JobFailed), "{findings:#?}");
    assert!(has(&findings, Kind::ProbeFailure), "{findings:#?}");
}
