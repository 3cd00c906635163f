//! A failed Kubernetes Job: the Job is read, its pods are found by `job-name`, and the current
//! logs and events of the newest failed ones are read.

use std::sync::Arc;

use super::fake::FakeSource;
use super::*;
use crate::detectors::Kind;
use crate::investigate::{InvestigateOptions, investigate};
use crate::tools::CapabilityRequest;

const JOB_ALERT: &str = "\
[FIRING:1] KubeJobFailed (batch/nightly-report)
*Alert:* Job failed to complete. - `warning`
*Details:*
  • *alertname:* `KubeJobFailed`
  • *job_name:* `nightly-report`
  • *namespace:* `batch`
  • *severity:* `warning`
  • *startsAt:* `2025-03-04T02:10:00Z`
";

const JOB_DESCRIBE: &str = "\
Name:             nightly-report
Namespace:        batch
Backoff Limit:    2
Pods Statuses:    0 Active (0 Ready) / 0 Succeeded / 3 Failed
Events:
  Type     Reason                Age   From            Message
  ----     ------                ----  ----            -------
  Normal   SuccessfulCreate      9m    job-controller  Created pod: nightly-report-aaaaa
  Warning  BackoffLimitExceeded  2m    job-controller  Job has reached the specified backoff limit
";

/// A `kubectl get pods -l job-name=nightly-report --show-labels` table: three failed pods of
/// the job, of which only the newest two are read.
const POD_TABLE: &str = "\
NAME                   READY   STATUS             RESTARTS        AGE   LABELS
nightly-report-aaaaa   0/1     Error              0               9m    batch.kubernetes.io/job-name=nightly-report,job-name=nightly-report
nightly-report-bbbbb   0/1     Error              0               5m    batch.kubernetes.io/job-name=nightly-report,job-name=nightly-report
nightly-report-ccccc   0/1     Error              0               1h2m  job-name=nightly-report
";

const POD_LOG: &str = "\
starting nightly report
ERROR dial tcp 10.0.0.7:5432: connect: connection refused (host reports-db:5432)
";

fn job_world() -> FakeSource {
    FakeSource::new()
        .serve(Capability::ObjectGet, JOB_DESCRIBE)
        .serve(Capability::PodList, POD_TABLE)
        .serve(Capability::PodLogsCurrent, POD_LOG)
        .serve(Capability::Events, "No resources found in batch namespace.")
}

#[test]
fn a_job_alert_names_the_job_as_its_workload() {
    let state = input(JOB_ALERT);
    let target = &state.alert.target;
    assert_eq!(target.workload.as_deref(), Some("nightly-report"));
    assert_eq!(target.workload_kind.as_deref(), Some("Job"));
    assert_eq!(target.pod, None);
}

#[tokio::test]
async fn investigate_describes_the_job_and_reads_its_newest_failed_pods() {
    let source = job_world();
    let state = input(JOB_ALERT);
    let update = investigate(&source, &state, &InvestigateOptions::default()).await;

    let requests = source.requests();
    let pod_request = |pod: &str, previous| CapabilityRequest::PodLogs {
        namespace: "batch".into(),
        pod: pod.into(),
        container: None,
        previous,
        tail_lines: InvestigateOptions::default().tail_lines,
    };
    let events = |object: Option<&str>| CapabilityRequest::Events {
        namespace: "batch".into(),
        object: object.map(str::to_string),
        warnings_only: object.is_none(),
    };
    assert_eq!(
        requests[..6],
        [
            CapabilityRequest::ObjectGet {
                namespace: Some("batch".into()),
                kind: "Job".into(),
                name: "nightly-report".into(),
            },
            CapabilityRequest::PodList {
                namespace: "batch".into(),
                label_selector: Some("job-name=nightly-report".into()),
            },
            // Newest failed pod first, at most two. Neither restarted in place, so no previous
            // log is asked for (and this world has no pod description to ask for).
            pod_request("nightly-report-bbbbb", false),
            events(Some("nightly-report-bbbbb")),
            pod_request("nightly-report-aaaaa", false),
            events(Some("nightly-report-aaaaa")),
        ]
    );
    // Then the lead the log proposes: the other end of the refused connection.
    assert_eq!(
        requests[6],
        CapabilityRequest::ObjectGet {
            namespace: Some("batch".into()),
            kind: "Service".into(),
            name: "reports-db".into(),
        }
    );
    // The namespace's warnings carry the Job controller's BackoffLimitExceeded; after them only
    // the alert's own expression: a batch job has no request traffic to trace.
    let warnings = requests
        .iter()
        .position(|r| *r == events(None))
        .expect("the namespace's warnings");
    assert!(
        requests[warnings + 1..]
            .iter()
            .all(|r| matches!(r, CapabilityRequest::MetricRange { .. })),
        "{requests:#?}"
    );
    assert!(
        !requests.contains(&pod_request("nightly-report-ccccc", false)),
        "the oldest failed pod is not read"
    );

    // Deterministic ids in call order.
    let ids: Vec<(String, Capability)> = update
        .evidence
        .iter()
        .map(|e| (e.id.to_string(), e.capability.clone()))
        .collect();
    assert_eq!(
        ids,
        [
            ("E1".to_string(), Capability::ObjectGet),
            ("E2".to_string(), Capability::PodList),
            ("E3".to_string(), Capability::PodLogsCurrent),
            ("E4".to_string(), Capability::Events),
            ("E5".to_string(), Capability::PodLogsCurrent),
            ("E6".to_string(), Capability::Events),
            // The lead's Service (this world's single object answer), then the warnings.
            ("E7".to_string(), Capability::ObjectGet),
            ("E8".to_string(), Capability::Events),
        ]
    );

    // The Job's own failure and the dependency its pods could not reach.
    let findings = &update.findings;
    let job_failed = findings
        .iter()
        .find(|f| f.kind() == Kind::JobFailed)
        .unwrap_or_else(|| panic!("no job-failed finding in {findings:#?}"));
    assert!(
        job_failed.title().contains("BackoffLimitExceeded"),
        "{job_failed:?}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f.kind() == Kind::Dependency && f.title().contains("reports-db")),
        "{findings:#?}"
    );
    // The neighbour's CrashLoopBackOff in the pod list is not reported.
    assert!(
        !findings.iter().any(|f| f.kind() == Kind::CrashLoop),
        "{findings:#?}"
    );

    // Every step not taken is recorded with its reason.
    let skipped = |capability: Capability, needle: &str| {
        update
            .missing
            .iter()
            .any(|m| m.capability == capability && m.reason.contains(needle))
    };
    assert!(skipped(
        Capability::PodDescribe,
        "only the 2 most in trouble"
    ));
    assert!(skipped(
        Capability::DeployHistory,
        "no Deployment rollout history"
    ));
    // The plan says why each call was made, in order.
    let plan = update.plan.as_deref().expect("a plan");
    assert_eq!(
        plan.iter().filter(|s| s.outcome.called()).count(),
        requests.len()
    );
    assert!(
        plan[1].why.contains("job-name=nightly-report"),
        "{:?}",
        plan[1]
    );
}

#[tokio::test]
async fn a_job_whose_pods_cannot_be_listed_records_why_no_log_was_read() {
    let source = FakeSource::new()
        .serve(Capability::ObjectGet, JOB_DESCRIBE)
        .fail(Capability::PodList, "pods_list_in_namespace is not allowed");
    let update = investigate(&source, &input(JOB_ALERT), &InvestigateOptions::default()).await;
    assert!(
        !source
            .requests()
            .iter()
            .any(|r| matches!(r, CapabilityRequest::PodLogs { .. }))
    );
    assert!(
        update
            .missing
            .iter()
            .any(|m| m.capability == Capability::PodList)
    );
    assert!(
        update
            .missing
            .iter()
            .any(|m| m.capability == Capability::PodLogsCurrent
                && m.reason.contains("could not be listed"))
    );
}

#[tokio::test]
async fn a_whole_round_on_a_failed_job_cites_the_backoff_limit() {
    let source = Arc::new(job_world());
    let done = run(&source, JOB_ALERT).await;
    let report = done.report.as_ref().expect("report");
    let text = format!("{report:?}");
    assert!(text.contains("BackoffLimitExceeded"), "{text}");
    assert!(text.contains("reports-db"), "{text}");
    // A Job's failed runs are separate pods: no `--previous` advice.
    let posted = crate::render_markdown(&done);
    assert!(!posted.contains("--previous"), "{posted}");
}
