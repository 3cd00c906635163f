//! The "explains" rules and the choice of headline, over typed findings: what explains what,
//! that only a verified cause which explains the alert's symptom heads a chain, that a
//! consequence, a symptom or stale evidence never does, and that confidence follows the chain.

use chrono::{DateTime, Utc};

use super::*;
use crate::detectors::autoscaler::AutoscalerMaxed;
use crate::detectors::changes::{FollowingStep, Rollout, ScaleChange};
use crate::detectors::config::{ConfigError, ConfigProblem};
use crate::detectors::connections::ConnectionsExhausted;
use crate::detectors::containers::{CrashLine, CrashLoop, Exited, OomKilled};
use crate::detectors::disk::{DiskFull, DiskSource};
use crate::detectors::disruptions::{Disrupted, Disruption};
use crate::detectors::endpoints::NoEndpoints;
use crate::detectors::errors::WarningEvent;
use crate::detectors::images::ImagePull;
use crate::detectors::jobs::{JobFailed, JobFailure};
use crate::detectors::nodes::{NodeNotReady, NodePressure, Pressure};
use crate::detectors::probes::{Probe, ProbeFailure};
use crate::detectors::scheduling::{SchedulingReason, Unschedulable};
use crate::detectors::steps::{LoadGrowth, MetricStep};
use crate::detectors::{Citation, Confidence, Fact, Kind, Payload};
use crate::evidence::EvidenceId;

const POD: &str = "api-7d9f8c6b5-x2k4q";

fn found(fact: impl Into<Fact>, confidence: Confidence, verified: bool) -> Finding {
    Finding::new(fact, confidence, verified).citing(vec![Citation {
        evidence: EvidenceId::new(1).expect("E1"),
        quote: "quoted".into(),
    }])
}

fn verified(fact: impl Into<Fact>) -> Finding {
    found(fact, Confidence::High, true)
}

fn symptom(fact: impl Into<Fact>) -> Finding {
    found(fact, Confidence::High, false)
}

fn crash_loop() -> CrashLoop {
    CrashLoop {
        pod: Some(POD.into()),
        container: Some("api".into()),
        restarts: Some(5),
        backing_off: true,
        backoff_event: true,
    }
}

fn exited(code: i32) -> Exited {
    Exited {
        pod: Some(POD.into()),
        container: Some("api".into()),
        code,
        reason: Some("Error".into()),
        message: None,
        finished_at: None,
        node: None,
    }
}

fn kinds(findings: &[&Finding]) -> Vec<Kind> {
    findings.iter().map(|f| f.kind()).collect()
}

#[test]
fn an_oom_kill_explains_its_containers_exits_and_crash_loop_and_heads_one_chain() {
    let findings = vec![
        verified(OomKilled {
            pod: Some(POD.into()),
            container: Some("api".into()),
            exit_code: Some(137),
            limit: Some("256Mi".into()),
        }),
        symptom(crash_loop()),
        symptom(exited(137)),
    ];
    let story = explain(&findings, Symptom::Restarts);
    assert_eq!(story.chains.len(), 1);
    let chain = &story.chains[0];
    assert_eq!(chain.cause.kind(), Kind::OomKilled);
    assert_eq!(kinds(&chain.explained), [Kind::CrashLoop, Kind::Exited]);
    assert!(story.rest.is_empty());
}

#[test]
fn one_story_is_one_cause_a_missing_setting_and_the_exit_it_causes_are_not_two() {
    let findings = vec![
        verified(ConfigError {
            pod: Some(POD.into()),
            problem: ConfigProblem::MissingSetting {
                name: Some("PAYMENT_MODE".into()),
                says: "config: required key PAYMENT_MODE is not set".into(),
            },
        }),
        verified(CrashLine {
            pod: Some(POD.into()),
            container: Some("api".into()),
            line: "ERROR config: required key PAYMENT_MODE is not set".into(),
            deciding: None,
            deciding_within: false,
            from_previous: true,
            after_signal: false,
            node_setting: None,
        }),
        symptom(exited(78)),
        symptom(crash_loop()),
    ];
    let story = explain(&findings, Symptom::Restarts);
    assert_eq!(story.chains.len(), 1, "{:#?}", story.chains);
    assert_eq!(story.chains[0].cause.kind(), Kind::ConfigError);
    assert_eq!(
        kinds(&story.chains[0].explained),
        [Kind::CrashLine, Kind::Exited, Kind::CrashLoop]
    );
}

/// A node lost, and a pod Pending on its unreachable taint.
fn lost_node_and_pending_pod() -> Vec<Finding> {
    vec![
        verified(Unschedulable {
            pod: Some(POD.into()),
            reasons: vec![
                SchedulingReason::Taint {
                    taint: Some("{node.kubernetes.io/unreachable: }".into()),
                    key: Some("node.kubernetes.io/unreachable".into()),
                },
                SchedulingReason::Affinity,
            ],
        }),
        verified(NodeNotReady {
            node: "gpu-a10-pool-7d2k".into(),
            status: "Unknown".into(),
            reason: Some("NodeStatusUnknown".into()),
            message: Some("Kubelet stopped posting node status.".into()),
            reported: None,
        }),
    ]
}

#[test]
fn a_lost_node_explains_the_pods_pending_on_its_taint() {
    let findings = lost_node_and_pending_pod();
    // The pod waits for the lost node: the other nodes are ruled out by its own affinity.
    assert_eq!(findings[0].role(), Role::Consequence);
    assert!(findings[1].explains(&findings[0]));
    let story = explain(&findings, Symptom::Unavailable);
    let chain = story.headline().expect("a headline");
    assert_eq!(chain.cause.kind(), Kind::NodeNotReady);
    assert_eq!(kinds(&chain.explained), [Kind::Unschedulable]);

    // Without the node, the Pending pod is a lead, never a cause.
    let story = explain(&findings[..1], Symptom::Unavailable);
    assert!(story.chains.is_empty());
    assert_eq!(story.lead.map(Finding::kind), Some(Kind::Unschedulable));
}

#[test]
fn a_connection_limit_explains_the_pools_and_the_scale_up_only_led_there() {
    let limit = ConnectionsExhausted {
        pod: Some("fulfilment-pg-0".into()),
        limit_reached: true,
        pool_empty: false,
        says: "FATAL: sorry, too many clients already".into(),
    };
    let pool = ConnectionsExhausted {
        pod: Some(POD.into()),
        limit_reached: false,
        pool_empty: true,
        says: "HikariPool-1 - Connection is not available".into(),
    };
    let scale_up = ScaleChange {
        deployment: Some("shipment-api".into()),
        from: 4,
        to: 12,
        at: DateTime::<Utc>::UNIX_EPOCH,
        minutes_before: 37,
    };
    let findings = vec![
        found(limit, Confidence::Medium, true),
        found(pool, Confidence::Medium, true),
        found(scale_up, Confidence::Medium, false),
    ];
    let story = explain(&findings, Symptom::Errors);
    assert_eq!(story.chains.len(), 1, "{:#?}", story.chains);
    let chain = &story.chains[0];
    assert!(matches!(&chain.cause.fact, Fact::ConnectionsExhausted(c) if c.limit_reached));
    assert_eq!(kinds(&chain.explained), [Kind::ConnectionsExhausted]);
    assert_eq!(kinds(&chain.led_by), [Kind::ScaleChange]);
}

fn maxed() -> AutoscalerMaxed {
    AutoscalerMaxed {
        hpa: "storefront-web".into(),
        target: Some("storefront-web".into()),
        max: 12,
        current: 12,
        desired: Some(17),
        limited: Some("TooManyReplicas".into()),
        scales_on: Vec::new(),
        resources: vec!["CPU".into()],
        pinned: false,
    }
}

#[test]
fn load_growth_explains_an_autoscaler_at_its_maximum_which_never_heads_alone() {
    // The load of the service the autoscaler scales.
    let load = LoadGrowth {
        resource: Some("storefront-web".into()),
        ..LoadGrowth::example()
    };
    let findings = vec![verified(maxed()), verified(load)];
    let story = explain(&findings, Symptom::Saturation);
    let chain = story.headline().expect("a headline");
    assert_eq!(chain.cause.kind(), Kind::LoadGrowth);
    assert_eq!(kinds(&chain.explained), [Kind::AutoscalerMaxed]);

    let story = explain(&findings[..1], Symptom::Saturation);
    assert!(
        story.chains.is_empty(),
        "an autoscaler at its maximum is a consequence"
    );
    assert_eq!(story.lead.map(Finding::kind), Some(Kind::AutoscalerMaxed));
}

#[test]
fn a_drain_explains_the_sigterm_its_teardown_lines_and_the_failed_job() {
    let findings = vec![
        symptom(JobFailed {
            job: Some("ledger-reconcile-29087415".into()),
            reason: JobFailure::BackoffLimit,
        }),
        verified(CrashLine {
            pod: Some("ledger-reconcile-29087415-q8k2d".into()),
            container: None,
            line: "ERROR reconcile failed: context canceled".into(),
            deciding: None,
            deciding_within: false,
            from_previous: false,
            after_signal: true,
            node_setting: None,
        }),
        symptom(Exited {
            pod: Some("ledger-reconcile-29087415-q8k2d".into()),
            code: 143,
            ..exited(143)
        }),
        verified(Disrupted {
            pod: "ledger-reconcile-29087415-q8k2d".into(),
            how: Disruption::ScaleDown,
            node: Some("worker-eu-1a-4".into()),
            says: None,
        }),
    ];
    // Exit 143 and the lines after it are what followed the signal.
    assert_eq!(findings[1].role(), Role::Consequence);
    assert_eq!(findings[2].role(), Role::Consequence);
    let story = explain(&findings, Symptom::JobFailed);
    let chain = story.headline().expect("a headline");
    assert_eq!(chain.cause.kind(), Kind::Disrupted);
    assert_eq!(
        kinds(&chain.explained),
        [Kind::JobFailed, Kind::CrashLine, Kind::Exited]
    );
}

#[test]
fn a_symptom_alone_heads_nothing_and_is_the_lead() {
    let findings = vec![symptom(crash_loop()), symptom(exited(1))];
    let story = explain(&findings, Symptom::Restarts);
    assert!(story.chains.is_empty());
    assert_eq!(story.lead.map(Finding::kind), Some(Kind::CrashLoop));
}

#[test]
fn a_verified_cause_that_does_not_explain_the_alerts_symptom_is_not_its_headline() {
    let pull = verified(ImagePull {
        pod: Some("batch-runner-5c6d7-abcde".into()),
        image: Some("registry/batch:1.0".into()),
        failure: None,
        status: None,
    });
    let story = explain(std::slice::from_ref(&pull), Symptom::Latency);
    assert!(story.chains.is_empty());
    assert_eq!(story.rest.len(), 1);
    // An alert that says nothing a symptom names lets any verified cause head.
    assert_eq!(explain(&[pull], Symptom::Any).chains.len(), 1);
}

#[test]
fn stale_evidence_never_heads_a_chain() {
    let mut stale = lost_node_and_pending_pod().remove(0);
    stale.fact = Fact::Unschedulable(Unschedulable {
        pod: Some(POD.into()),
        reasons: vec![SchedulingReason::Insufficient {
            resource: "cpu".into(),
        }],
    });
    assert!(stale.is_verified_cause());
    stale.standing = Standing::Superseded {
        because: "the pod has since been scheduled".into(),
    };
    let story = explain(std::slice::from_ref(&stale), Symptom::Unavailable);
    assert!(story.chains.is_empty());
    assert!(
        story.lead.is_none(),
        "superseded evidence is no lead either"
    );
}

#[test]
fn confidence_follows_the_chain_to_the_symptom() {
    // A verified node loss reaches a Pending-pods alert only through the pod's own (medium)
    // scheduling finding.
    let mut findings = lost_node_and_pending_pod();
    findings[0].confidence = Confidence::Medium;
    let story = explain(&findings, Symptom::Unavailable);
    let chain = story.headline().expect("a headline");
    // The node accounts for Unavailable itself: its own confidence, and the headline names the
    // consequence the alert sees.
    assert_eq!(chain.confidence, Confidence::High);
    assert_eq!(chain.via.map(Finding::kind), Some(Kind::Unschedulable));

    // An OOM kill explains a Job alert only through the Job's failure.
    let oom = found(
        OomKilled {
            pod: Some(POD.into()),
            container: None,
            exit_code: Some(137),
            limit: None,
        },
        Confidence::High,
        true,
    );
    let job = found(
        JobFailed {
            job: Some("api".into()),
            reason: JobFailure::BackoffLimit,
        },
        Confidence::Medium,
        false,
    );
    let findings = vec![oom, job];
    let story = explain(&findings, Symptom::Storage);
    assert!(story.chains.is_empty(), "neither accounts for storage");
    let story = explain(&findings, Symptom::JobFailed);
    let chain = story.headline().expect("a headline");
    assert_eq!(
        chain.confidence,
        Confidence::High,
        "OOM accounts for a Job failure itself"
    );
}

#[test]
fn a_cause_another_cause_explains_is_shown_under_it_not_beside_it() {
    let a = verified(ConnectionsExhausted {
        pod: Some(POD.into()),
        limit_reached: true,
        pool_empty: true,
        says: "too many clients".into(),
    });
    let b = verified(ConnectionsExhausted {
        pod: Some("worker-1".into()),
        limit_reached: false,
        pool_empty: true,
        says: "pool exhausted".into(),
    });
    let findings = [b, a];
    let story = explain(&findings, Symptom::Errors);
    assert_eq!(story.chains.len(), 1, "{:#?}", story.chains);
    assert!(
        matches!(&story.chains[0].cause.fact, Fact::ConnectionsExhausted(c) if c.limit_reached)
    );
    assert_eq!(
        kinds(&story.chains[0].explained),
        [Kind::ConnectionsExhausted]
    );
}

fn node_lost(node: &str) -> NodeNotReady {
    NodeNotReady {
        node: node.into(),
        status: "Unknown".into(),
        reason: Some("NodeStatusUnknown".into()),
        message: None,
        reported: None,
    }
}

fn job_failed(job: &str) -> Finding {
    symptom(JobFailed {
        job: Some(job.into()),
        reason: JobFailure::BackoffLimit,
    })
}

#[test]
fn a_pods_failure_explains_only_the_job_that_pod_ran_for() {
    let line = |pod: Option<&str>| {
        verified(CrashLine {
            pod: pod.map(str::to_string),
            container: None,
            line: "FATAL: password authentication failed".into(),
            deciding: None,
            deciding_within: false,
            from_previous: true,
            after_signal: false,
            node_setting: None,
        })
    };
    let ours = job_failed("report-29087415");
    let neighbours = job_failed("billing-sync-29087415");
    assert!(line(Some("report-29087415-q8k2d")).explains(&ours));
    assert!(!line(Some("report-29087415-q8k2d")).explains(&neighbours));
    // A round may hold many Jobs: a pod nobody named explains none of them.
    assert!(!line(None).explains(&ours));
    let oom = verified(OomKilled {
        pod: Some("billing-sync-29087415-x7k2p".into()),
        container: None,
        exit_code: Some(137),
        limit: None,
    });
    assert!(oom.explains(&neighbours));
    assert!(!oom.explains(&ours));
}

#[test]
fn a_lost_node_explains_only_what_was_lost_with_it() {
    let node = verified(node_lost("worker-3"));
    let lost_on = |node: Option<&str>| {
        symptom(Exited {
            reason: Some("ContainerStatusUnknown".into()),
            node: node.map(str::to_string),
            ..exited(137)
        })
    };
    assert!(node.explains(&lost_on(Some("worker-3"))));
    assert!(!node.explains(&lost_on(Some("worker-4"))));
    assert!(!node.explains(&lost_on(None)));
    let evicted = |how: Disruption, node: &str| {
        verified(Disrupted {
            pod: POD.into(),
            how,
            node: Some(node.into()),
            says: None,
        })
    };
    assert!(node.explains(&evicted(Disruption::TaintManager, "worker-3")));
    assert!(!node.explains(&evicted(Disruption::TaintManager, "worker-4")));
    assert!(!node.explains(&evicted(Disruption::ScaleDown, "worker-3")));
}

#[test]
fn a_pod_waits_for_a_lost_node_only_when_nothing_else_keeps_it_out() {
    let pending = |other: SchedulingReason| Unschedulable {
        pod: Some(POD.into()),
        reasons: vec![
            SchedulingReason::Taint {
                taint: Some("{node.kubernetes.io/unreachable: }".into()),
                key: Some("node.kubernetes.io/unreachable".into()),
            },
            other,
        ],
    };
    assert!(pending(SchedulingReason::Affinity).waits_for_lost_node());
    // Other nodes lacking memory is a reason of its own: the pod could run there.
    let short = pending(SchedulingReason::Insufficient {
        resource: "memory".into(),
    });
    assert!(!short.waits_for_lost_node());
    assert_eq!(verified(short).role(), Role::Cause);
}

#[test]
fn a_deploy_explains_only_the_step_that_followed_it() {
    let at = |minute: i64| {
        DateTime::<Utc>::from_timestamp(1_741_096_200 + minute * 60, 0).expect("a time")
    };
    let step = |series: &str| {
        symptom(MetricStep {
            series: series.into(),
            before: 0.01,
            after: 0.2,
            at: at(2),
            minutes_before: Some(3),
            resource: Some("payments".into()),
        })
    };
    let deploy = verified(Rollout {
        deployment: Some("payments-api".into()),
        revision: Some("7".into()),
        image: None,
        at: at(0),
        minutes_before: 5,
        followed_by: Some(FollowingStep {
            series: "http_error_ratio".into(),
            at: at(2),
            lag_minutes: 2,
        }),
    });
    assert!(deploy.explains(&step("http_error_ratio")));
    assert!(!deploy.explains(&step("queue_depth")));
}

#[test]
fn a_readiness_probe_explains_an_empty_service_only_when_its_pod_is_behind_it() {
    let probe = verified(ProbeFailure {
        pod: Some(POD.into()),
        probe: Probe::Readiness,
        message: "HTTP probe failed with statuscode: 503".into(),
        count: Some(12),
        answers_server_error: false,
        asks: None,
        listens_on: None,
    });
    let service = |behind: &str| {
        symptom(NoEndpoints {
            service: "api".into(),
            not_ready: 1,
            not_ready_pods: vec![behind.into()],
            pods_failing: false,
            cluster_ip: None,
            hosts: Vec::new(),
        })
    };
    assert!(probe.explains(&service(POD)));
    assert!(!probe.explains(&service("worker-5d8f7b9c4-q2w3e")));
}

#[test]
fn a_jobs_deadline_explains_the_sigterm_of_its_own_pods_only() {
    let deadline = verified(JobFailed {
        job: Some("ledger-reconcile-29087415".into()),
        reason: JobFailure::Deadline,
    });
    let stopped = |pod: &str| {
        symptom(Exited {
            pod: Some(pod.into()),
            ..exited(143)
        })
    };
    assert!(deadline.explains(&stopped("ledger-reconcile-29087415-q8k2d")));
    assert!(!deadline.explains(&stopped("search-indexer-5c9d8f7b6-q2w3e")));
}

#[test]
fn a_pull_failure_explains_the_pull_warnings_of_its_own_pod_only() {
    let pull = verified(ImagePull {
        pod: Some(POD.into()),
        ..ImagePull::example()
    });
    let warning = |object: &str| {
        symptom(WarningEvent {
            reason: "Failed".into(),
            object: Some(object.into()),
            message: Some("Failed to pull image \"registry/api:2.4.2\": manifest unknown".into()),
            line: "Failed to pull image".into(),
        })
    };
    assert!(pull.explains(&warning(POD)));
    assert!(!pull.explains(&warning("search-indexer-5c9d8f7b6-q2w3e")));
}

#[test]
fn a_nodes_disk_pressure_explains_the_kubelets_account_on_that_node_only() {
    let pressure = verified(NodePressure {
        node: "worker-3".into(),
        pressure: Pressure::DiskPressure,
        reason: Some("KubeletHasDiskPressure".into()),
        message: None,
        restates_alert: false,
    });
    let full_on = |node: Option<&str>| {
        verified(DiskFull {
            pod: Some(POD.into()),
            source: DiskSource::Kubelet,
            restates_alert: false,
            node: node.map(str::to_string),
        })
    };
    assert!(pressure.explains(&full_on(Some("worker-3"))));
    assert!(!pressure.explains(&full_on(Some("worker-4"))));
    assert!(!pressure.explains(&full_on(None)));
}
