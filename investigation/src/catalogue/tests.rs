//! Tests of the catalogue against every vendored rule and runbook: everything loads and parses,
//! expressions round-trip and stay well-formed when narrowed, the injection is exact on real
//! rules, and the focus, heartbeat and window of every alert are pinned (checked by eye once).

use std::collections::{BTreeMap, BTreeSet};

use super::promql::{self, TokenKind};
use super::runbook;
use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn the_vendored_catalogue_loads_every_alerting_rule() {
    assert_eq!(
        alerts().len(),
        139,
        "kube-prometheus ships 139 alerting rules"
    );
    let names: BTreeSet<&str> = alerts().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names.len(), 125, "some alerts ship as several rules");
    for alert in alerts() {
        assert!(
            !alert.expr.is_empty() && !alert.group.is_empty(),
            "{}",
            alert.name
        );
        assert!(
            !alert.expr.ends_with('\n'),
            "{}: trailing newline kept",
            alert.name
        );
        assert!(
            alert.severity.is_some(),
            "{}: every rule has a severity",
            alert.name
        );
        assert!(
            alert.summary.is_some() || alert.description.is_some(),
            "{}",
            alert.name
        );
        assert!(alert.runbook_url.is_some(), "{}", alert.name);
        assert!(
            !alert.metrics.is_empty() || alert.name == "Watchdog",
            "{}",
            alert.name
        );
    }
    // Grafana's rule has `message` instead of `description`.
    assert!(
        lookup("GrafanaRequestsFailing")
            .and_then(|a| a.description.as_deref())
            .is_some()
    );
}

#[test]
fn lookup_is_by_exact_name_and_picks_the_variant_the_alert_labels_name() {
    assert_eq!(
        lookup("KubePodCrashLooping").map(|a| a.group.as_str()),
        Some("kubernetes-apps")
    );
    assert!(lookup("kubepodcrashlooping").is_none(), "case-sensitive");
    assert!(lookup("NoSuchAlert").is_none());
    assert_eq!(variants("KubeAPIErrorBudgetBurn").count(), 4);

    let critical = lookup_matching(
        "NodeFilesystemSpaceFillingUp",
        &labels(&[("severity", "critical"), ("instance", "n1")]),
    )
    .expect("in the catalogue");
    assert_eq!(critical.severity.as_deref(), Some("critical"));
    assert!(critical.expr.contains("< 10"));
    let slow_burn = lookup_matching(
        "KubeAPIErrorBudgetBurn",
        &labels(&[("severity", "warning"), ("long", "3d"), ("short", "6h")]),
    )
    .expect("in the catalogue");
    assert!(slow_burn.expr.contains("burnrate3d"));
    // Unknown severity: the first variant rather than nothing.
    let any = lookup_matching(
        "NodeFilesystemSpaceFillingUp",
        &labels(&[("severity", "page")]),
    );
    assert_eq!(any.and_then(|a| a.severity.as_deref()), Some("warning"));
}

#[test]
fn variants_of_one_alert_agree_on_group_focus_heartbeat_and_window() {
    for alert in alerts() {
        for other in variants(&alert.name) {
            assert_eq!(
                (
                    &other.group,
                    other.focus,
                    other.heartbeat,
                    other.window_hours,
                    other.runbook
                ),
                (
                    &alert.group,
                    alert.focus,
                    alert.heartbeat,
                    alert.window_hours,
                    alert.runbook
                ),
                "{}",
                alert.name
            );
        }
    }
}

#[test]
fn the_heartbeats_are_watchdog_and_info_inhibitor() {
    let heartbeats: Vec<&str> = alerts()
        .iter()
        .filter(|a| a.heartbeat)
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(heartbeats, ["Watchdog", "InfoInhibitor"]);
    assert!(is_heartbeat("Watchdog") && is_heartbeat("InfoInhibitor"));
    assert!(!is_heartbeat("KubePodCrashLooping") && !is_heartbeat("NoSuchAlert"));
}

/// Every alert's focus, checked by eye against its rule and runbook.
#[test]
fn every_alert_has_the_focus_it_is_about() {
    let expected: [(Focus, &[&str]); 11] = [
        (
            Focus::Pod,
            &[
                "KubePodCrashLooping",
                "KubePodNotReady",
                "KubeContainerWaiting",
                "CPUThrottlingHigh",
            ],
        ),
        (
            Focus::Workload,
            &[
                "KubeDeploymentGenerationMismatch",
                "KubeDeploymentReplicasMismatch",
                "KubeDeploymentRolloutStuck",
                "KubeStatefulSetReplicasMismatch",
                "KubeStatefulSetGenerationMismatch",
                "KubeStatefulSetUpdateNotRolledOut",
                "KubeDaemonSetRolloutStuck",
                "KubeDaemonSetNotScheduled",
                "KubeDaemonSetMisScheduled",
                "KubePdbNotEnoughHealthyPods",
            ],
        ),
        (Focus::Job, &["KubeJobNotCompleted", "KubeJobFailed"]),
        (
            Focus::Node,
            &[
                "KubeNodeNotReady",
                "KubeNodePressure",
                "KubeNodeUnreachable",
                "KubeletTooManyPods",
                "KubeNodeReadinessFlapping",
                "KubeNodeEviction",
                "NodeFilesystemSpaceFillingUp",
                "NodeFilesystemAlmostOutOfSpace",
                "NodeFilesystemFilesFillingUp",
                "NodeFilesystemAlmostOutOfFiles",
                "NodeHighNumberConntrackEntriesUsed",
                "NodeTextFileCollectorScrapeError",
                "NodeClockSkewDetected",
                "NodeClockNotSynchronising",
                "NodeRAIDDegraded",
                "NodeRAIDDiskFailure",
                "NodeFileDescriptorLimit",
                "NodeCPUHighUsage",
                "NodeSystemSaturation",
                "NodeMemoryMajorPagesFaults",
                "NodeMemoryHighUtilization",
                "NodeDiskIOSaturation",
                "NodeSystemdServiceFailed",
                "NodeSystemdServiceCrashlooping",
            ],
        ),
        (
            Focus::Volume,
            &[
                "KubePersistentVolumeFillingUp",
                "KubePersistentVolumeInodesFillingUp",
                "KubePersistentVolumeErrors",
            ],
        ),
        (
            Focus::Autoscaler,
            &["KubeHpaReplicasMismatch", "KubeHpaMaxedOut"],
        ),
        (
            Focus::Quota,
            &[
                "KubeCPUOvercommit",
                "KubeMemoryOvercommit",
                "KubeCPUQuotaOvercommit",
                "KubeMemoryQuotaOvercommit",
                "KubeQuotaAlmostFull",
                "KubeQuotaFullyUsed",
                "KubeQuotaExceeded",
            ],
        ),
        (
            Focus::ControlPlane,
            &[
                "KubeVersionMismatch",
                "KubeClientErrors",
                "KubeAPIErrorBudgetBurn",
                "KubeClientCertificateExpiration",
                "KubeAggregatedAPIErrors",
                "KubeAggregatedAPIDown",
                "KubeAPIDown",
                "KubeAPIInstanceUnreachable",
                "KubeAPITerminatedRequests",
                "KubeletPlegDurationHigh",
                "KubeletPodStartUpLatencyHigh",
                "KubeletClientCertificateExpiration",
                "KubeletServerCertificateExpiration",
                "KubeletClientCertificateRenewalErrors",
                "KubeletServerCertificateRenewalErrors",
                "KubeletInstanceUnreachable",
                "KubeletDown",
                "KubeSchedulerDown",
                "KubeSchedulerInstanceUnreachable",
                "KubeControllerManagerDown",
                "KubeControllerManagerInstanceUnreachable",
            ],
        ),
        (
            Focus::Monitoring,
            &[
                "AlertmanagerFailedReload",
                "AlertmanagerMembersInconsistent",
                "AlertmanagerFailedToSendAlerts",
                "AlertmanagerClusterFailedToSendAlerts",
                "AlertmanagerConfigInconsistent",
                "AlertmanagerClusterDown",
                "AlertmanagerClusterCrashlooping",
                "AlertmanagerClusterFailedPeers",
                "GrafanaRequestsFailing",
                "TargetDown",
                "Watchdog",
                "InfoInhibitor",
                "KubeStateMetricsListErrors",
                "KubeStateMetricsWatchErrors",
                "KubeStateMetricsShardingMismatch",
                "KubeStateMetricsShardsMissing",
                "PrometheusBadConfig",
                "PrometheusSDRefreshFailure",
                "PrometheusKubernetesListWatchFailures",
                "PrometheusNotificationQueueRunningFull",
                "PrometheusErrorSendingAlertsToSomeAlertmanagers",
                "PrometheusNotConnectedToAlertmanagers",
                "PrometheusTSDBReloadsFailing",
                "PrometheusTSDBCompactionsFailing",
                "PrometheusNotIngestingSamples",
                "PrometheusDuplicateTimestamps",
                "PrometheusOutOfOrderTimestamps",
                "PrometheusRemoteStorageFailures",
                "PrometheusRemoteWriteBehind",
                "PrometheusRemoteWriteDesiredShards",
                "PrometheusRuleFailures",
                "PrometheusMissingRuleEvaluations",
                "PrometheusTargetLimitHit",
                "PrometheusLabelLimitHit",
                "PrometheusScrapeBodySizeLimitHit",
                "PrometheusScrapeSampleLimitHit",
                "PrometheusTargetSyncFailure",
                "PrometheusHighQueryLoad",
                "PrometheusErrorSendingAlertsToAnyAlertmanager",
                "PrometheusOperatorListErrors",
                "PrometheusOperatorWatchErrors",
                "PrometheusOperatorSyncFailed",
                "PrometheusOperatorReconcileErrors",
                "PrometheusOperatorStatusUpdateErrors",
                "PrometheusOperatorNodeLookupErrors",
                "PrometheusOperatorNotReady",
                "PrometheusOperatorRejectedResources",
                "ConfigReloaderSidecarErrors",
            ],
        ),
        (
            Focus::Network,
            &[
                "NodeNetworkInterfaceFlapping",
                "NodeNetworkReceiveErrs",
                "NodeNetworkTransmitErrs",
                "NodeBondingDegraded",
            ],
        ),
        (Focus::Other, &[]),
    ];
    for (focus, names) in expected {
        let mut actual: Vec<&str> = alerts()
            .iter()
            .filter(|a| a.focus == focus)
            .map(|a| a.name.as_str())
            .collect();
        actual.dedup();
        assert_eq!(actual, names, "{focus}");
    }
    // Rules per focus (variants counted): what the report quotes.
    let counts: Vec<(Focus, usize)> = Focus::ALL
        .iter()
        .map(|&f| (f, alerts().iter().filter(|a| a.focus == f).count()))
        .collect();
    assert_eq!(
        counts,
        [
            (Focus::Pod, 4),
            (Focus::Workload, 10),
            (Focus::Job, 2),
            (Focus::Node, 29),
            (Focus::Volume, 5),
            (Focus::Autoscaler, 2),
            (Focus::Quota, 7),
            (Focus::ControlPlane, 27),
            (Focus::Monitoring, 49),
            (Focus::Network, 4),
            (Focus::Other, 0),
        ]
    );
}

#[test]
fn memory_restart_filling_and_quota_alerts_read_two_days_of_metrics() {
    let mut long: Vec<&str> = alerts()
        .iter()
        .filter(|a| a.window_hours == 48)
        .map(|a| a.name.as_str())
        .collect();
    long.dedup();
    assert_eq!(
        long,
        [
            "AlertmanagerClusterCrashlooping",
            "KubePodCrashLooping",
            "KubeCPUOvercommit",
            "KubeMemoryOvercommit",
            "KubeCPUQuotaOvercommit",
            "KubeMemoryQuotaOvercommit",
            "KubeQuotaAlmostFull",
            "KubeQuotaFullyUsed",
            "KubeQuotaExceeded",
            "KubePersistentVolumeFillingUp",
            "KubePersistentVolumeInodesFillingUp",
            "NodeFilesystemSpaceFillingUp",
            "NodeFilesystemAlmostOutOfSpace",
            "NodeFilesystemFilesFillingUp",
            "NodeFilesystemAlmostOutOfFiles",
            "NodeMemoryMajorPagesFaults",
            "NodeMemoryHighUtilization",
            "NodeSystemdServiceCrashlooping",
            "PrometheusNotificationQueueRunningFull",
        ]
    );
    assert!(
        alerts()
            .iter()
            .all(|a| a.window_hours == 48 || a.window_hours == 6)
    );
}

#[test]
fn runbooks_give_meaning_and_short_mitigation_points() {
    let crash = lookup("KubePodCrashLooping").expect("in the catalogue");
    assert_eq!(crash.runbook, Some("kubernetes/KubePodCrashLooping.md"));
    assert_eq!(
        crash.meaning.as_deref(),
        Some(
            "Pod is in CrashLoop which means the app dies or is unresponsive and kubernetes tries \
             to restart it automatically."
        )
    );
    assert_eq!(
        crash.mitigation,
        [
            "Talk with developers or read documentation about the app, ensure to define sane \
             default values to start the app.",
            "See Debugging Pods (https://kubernetes.io/docs/tasks/debug-application-cluster/\
             debug-application/#debugging-pods)",
        ]
    );
    // Lead-ins to commands are dropped; the one that carries the advice stays, as a sentence.
    let disk = lookup("NodeFilesystemSpaceFillingUp").expect("in the catalogue");
    assert_eq!(
        disk.mitigation,
        [
            "For the case that the mountpoint label is /, /sysroot or /var; then removing unused \
             images solves that issue."
        ]
    );
    assert!(
        disk.meaning
            .as_deref()
            .is_some_and(|m| m.contains("both the current usage"))
    );
    // A lead-in joined to an enumeration of names.
    let volume = lookup("KubePersistentVolumeFillingUp").expect("in the catalogue");
    assert!(volume.mitigation.contains(
        &"Example services that support this: cassandra, ceph, elasticsearch/opensearch, gluster, \
          hadoop, kafka, minio."
            .to_owned()
    ));
    // The runbook of an alert the rules renamed, or of none: nothing rather than a guess.
    assert!(
        lookup("KubeJobNotCompleted").is_some_and(|a| a.runbook.is_none() && a.meaning.is_none())
    );
    // A runbook without a Meaning section.
    let dup = lookup("PrometheusDuplicateTimestamps").expect("in the catalogue");
    assert!(dup.runbook.is_some() && dup.meaning.is_none() && dup.mitigation.is_empty());
    for alert in alerts() {
        assert!(alert.mitigation.len() <= 6, "{}", alert.name);
        for point in &alert.mitigation {
            assert!(point.chars().count() <= 241, "{}: {point}", alert.name);
            assert!(
                !point.contains("](") && !point.contains('`'),
                "{}: {point}",
                alert.name
            );
            assert_ne!(point, "TODO", "{}", alert.name);
        }
        if let Some(meaning) = &alert.meaning {
            assert!(
                !meaning.contains('\n') && !meaning.contains("]("),
                "{}",
                alert.name
            );
        }
    }
    let with_runbook = alerts().iter().filter(|a| a.runbook.is_some()).count();
    let with_meaning = alerts().iter().filter(|a| a.meaning.is_some()).count();
    assert_eq!((with_runbook, with_meaning), (112, 105));
}

#[test]
fn runbook_markdown_becomes_plain_text() {
    assert_eq!(
        runbook::plain_text(
            "**Notice**: the `node_filesystem_free_bytes` metric, _and_ [here][ref]",
            false
        ),
        "Notice: the node_filesystem_free_bytes metric, and here"
    );
    assert_eq!(
        runbook::plain_text("See [Quotas](https://k8s.io/q) and [local](./x.md)", true),
        "See Quotas (https://k8s.io/q) and local"
    );
    assert_eq!(
        runbook::plain_text("2 * 3 and snake_case_name", false),
        "2 * 3 and snake_case_name"
    );
    let markdown = "## Meaning\n\nFirst\nline.\n\nSecond.\n\n## Mitigation\n\n```shell\n# not a heading\n```\n\n- one\n  more\n- [1](https://x)\n\n## Other\n";
    assert_eq!(
        runbook::section(markdown, "Meaning"),
        Some("\nFirst\nline.\n\nSecond.\n\n")
    );
    assert_eq!(runbook::meaning(markdown).as_deref(), Some("First line."));
    assert_eq!(runbook::mitigation(markdown), ["one more"]);
}

#[test]
fn every_expression_tokenizes_parses_and_round_trips_byte_for_byte() {
    for alert in alerts() {
        let tokens = promql::tokenize(&alert.expr).expect("tokenizes");
        let joined: String = tokens.iter().map(|t| t.text(&alert.expr)).collect();
        assert_eq!(
            joined, alert.expr,
            "{}: tokens cover every byte",
            alert.name
        );
        assert!(
            tokens.windows(2).all(|w| w[0].end == w[1].start),
            "{}: tokens are contiguous",
            alert.name
        );
        promql::parse(&alert.expr).unwrap_or_else(|e| panic!("{}: {e}", alert.name));
        assert_eq!(
            expression_for(alert, &BTreeMap::new()),
            alert.expr,
            "{}",
            alert.name
        );
        // Labels that identify nothing change nothing.
        let other = labels(&[("severity", "critical"), ("job", "x"), ("reason", "y")]);
        assert_eq!(expression_for(alert, &other), alert.expr, "{}", alert.name);
    }
}

#[test]
fn every_expression_stays_well_formed_with_all_identifying_labels_set() {
    // A value with a quote and a backslash: it must be escaped, not break the selector.
    let all: BTreeMap<String, String> = IDENTIFYING_LABELS
        .iter()
        .map(|l| ((*l).to_owned(), format!("v-{l}-\"q\\")))
        .collect();
    let mut narrowed = 0;
    for alert in alerts() {
        let out = expression_for(alert, &all);
        let before = promql::parse(&alert.expr).expect("parses");
        let after = promql::parse(&out).unwrap_or_else(|e| panic!("{}: {e}\n{out}", alert.name));
        let (old, new) = (before.selectors(), after.selectors());
        assert_eq!(old.len(), new.len(), "{}", alert.name);
        for (old, new) in old.iter().zip(&new) {
            assert_eq!(old.metric, new.metric, "{}", alert.name);
            assert_eq!(
                new.matchers[..old.matchers.len()],
                old.matchers[..],
                "{}",
                alert.name
            );
            for added in &new.matchers[old.matchers.len()..] {
                assert!(
                    IDENTIFYING_LABELS.contains(&added.label.as_str()),
                    "{}",
                    alert.name
                );
                assert_eq!(added.op, "=", "{}", alert.name);
                // Never a second `=` for a label the rule pins already.
                assert!(
                    !old.matchers
                        .iter()
                        .any(|m| m.label == added.label && m.op == "="),
                    "{}",
                    alert.name
                );
            }
        }
        for (open, close) in [('(', ')'), ('{', '}'), ('[', ']')] {
            let outside_strings = strip_strings(&out);
            assert_eq!(
                outside_strings.matches(open).count(),
                outside_strings.matches(close).count(),
                "{}: balanced {open}{close}",
                alert.name
            );
        }
        // Only insertions: every byte of the rule is still there, in order.
        let mut rest = out.chars();
        assert!(
            alert.expr.chars().all(|c| rest.any(|o| o == c)),
            "{}: the rule's text is kept",
            alert.name
        );
        if out != alert.expr {
            narrowed += 1;
        }
    }
    // Unchanged: Watchdog's `vector(1)`, the three `absent(up{…})`, KubePersistentVolumeErrors
    // (volumes are not namespaced) and 29 Prometheus/Alertmanager/operator rules whose only
    // identifying label, `namespace`, they pin already.
    assert_eq!(narrowed, 105);
}

/// The expression with string literals removed, for counting brackets.
fn strip_strings(expr: &str) -> String {
    let tokens = promql::tokenize(expr).expect("tokenizes");
    tokens
        .iter()
        .filter(|t| t.kind != TokenKind::Str && t.kind != TokenKind::Comment)
        .map(|t| {
            let text = t.text(expr);
            if t.kind == TokenKind::Matchers {
                // Keep the braces, drop the quoted values inside.
                format!("{{{}}}", text.len())
            } else {
                text.to_owned()
            }
        })
        .collect()
}

/// A real rule, the labels its alert carries, and the exact expression to query.
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const INJECTED: &[Case] = &[
    (
        "KubePodCrashLooping",
        &[
            ("alertname", "KubePodCrashLooping"),
            ("container", "api"),
            ("instance", "10.2.0.7:8443"),
            ("job", "kube-state-metrics"),
            ("namespace", "shop"),
            ("pod", "api-7d9c4-x2"),
            ("reason", "CrashLoopBackOff"),
            ("service", "kube-state-metrics"),
            ("severity", "warning"),
        ],
        r##"max_over_time(kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff", job="kube-state-metrics", namespace="shop", pod="api-7d9c4-x2", container="api"}[5m]) >= 1"##,
    ),
    (
        "KubeContainerWaiting",
        &[
            ("container", "api"),
            ("instance", "10.2.0.7:8443"),
            ("job", "kube-state-metrics"),
            ("namespace", "shop"),
            ("pod", "api-7d9c4-x2"),
            ("reason", "ContainerCreating"),
            ("severity", "warning"),
        ],
        r##"kube_pod_container_status_waiting_reason{reason!="CrashLoopBackOff", job="kube-state-metrics", namespace="shop", pod="api-7d9c4-x2", container="api"} > 0"##,
    ),
    (
        "KubePodNotReady",
        &[
            ("job", "kube-state-metrics"),
            ("namespace", "shop"),
            ("pod", "api-7d9c4-x2"),
            ("severity", "warning"),
        ],
        r##"sum by (namespace, pod, job, cluster) (
  max by(namespace, pod, job, cluster) (
    kube_pod_status_phase{job="kube-state-metrics", phase=~"Pending|Unknown", namespace="shop", pod="api-7d9c4-x2"}
    or
    (
      kube_pod_status_phase{job="kube-state-metrics", phase="Running", namespace="shop", pod="api-7d9c4-x2"} == 1
      and on(namespace, pod, cluster)
      kube_pod_status_ready{job="kube-state-metrics", condition="true", namespace="shop", pod="api-7d9c4-x2"} == 0
    )
  ) * on(namespace, pod, cluster) group_left() topk by(namespace, pod, cluster) (
    1, max by(namespace, pod, owner_kind, cluster) (kube_pod_owner{owner_kind!="Job", namespace="shop", pod="api-7d9c4-x2"})
  )
) > 0
unless on(namespace, pod, cluster)
kube_pod_status_reason{job="kube-state-metrics", reason="SchedulingGated", namespace="shop", pod="api-7d9c4-x2"} == 1"##,
    ),
    (
        "KubeDeploymentReplicasMismatch",
        &[
            ("deployment", "api"),
            ("instance", "10.2.0.7:8443"),
            ("job", "kube-state-metrics"),
            ("namespace", "shop"),
            ("service", "kube-state-metrics"),
            ("severity", "warning"),
        ],
        r##"(
  kube_deployment_spec_replicas{job="kube-state-metrics", namespace="shop", deployment="api"}
    >
  kube_deployment_status_replicas_available{job="kube-state-metrics", namespace="shop", deployment="api"}
) and (
  changes(kube_deployment_status_replicas_updated{job="kube-state-metrics", namespace="shop", deployment="api"}[10m])
    ==
  0
)"##,
    ),
    (
        "KubeJobFailed",
        &[
            ("condition", "true"),
            ("job_name", "nightly-report-28740"),
            ("namespace", "batch"),
            ("job", "kube-state-metrics"),
            ("severity", "warning"),
        ],
        r##"kube_job_failed{job="kube-state-metrics", namespace="batch", job_name="nightly-report-28740"}  > 0"##,
    ),
    (
        "KubePersistentVolumeFillingUp",
        &[
            ("instance", "10.0.1.5:10250"),
            ("job", "kubelet"),
            ("metrics_path", "/metrics"),
            ("namespace", "db"),
            ("node", "ip-10-0-1-5"),
            ("persistentvolumeclaim", "data-pg-0"),
            ("service", "kubelet"),
            ("severity", "warning"),
        ],
        r##"(
  kubelet_volume_stats_available_bytes{job="kubelet", metrics_path="/metrics", namespace="db", persistentvolumeclaim="data-pg-0"}
    /
  kubelet_volume_stats_capacity_bytes{job="kubelet", metrics_path="/metrics", namespace="db", persistentvolumeclaim="data-pg-0"}
) < 0.15
and
kubelet_volume_stats_used_bytes{job="kubelet", metrics_path="/metrics", namespace="db", persistentvolumeclaim="data-pg-0"} > 0
and
predict_linear(kubelet_volume_stats_available_bytes{job="kubelet", metrics_path="/metrics", namespace="db", persistentvolumeclaim="data-pg-0"}[6h], 4 * 24 * 3600) < 0
unless on(cluster, namespace, persistentvolumeclaim)
kube_persistentvolumeclaim_access_mode{ access_mode="ReadOnlyMany", namespace="db", persistentvolumeclaim="data-pg-0"} == 1
unless on(cluster, namespace, persistentvolumeclaim)
kube_persistentvolumeclaim_labels{label_excluded_from_alerts="true", namespace="db", persistentvolumeclaim="data-pg-0"} == 1"##,
    ),
    (
        "KubeNodeNotReady",
        &[
            ("condition", "Ready"),
            ("instance", "10.2.0.7:8443"),
            ("job", "kube-state-metrics"),
            ("node", "ip-10-0-1-5"),
            ("status", "true"),
            ("severity", "warning"),
        ],
        r##"kube_node_status_condition{job="kube-state-metrics",condition="Ready",status="true", node="ip-10-0-1-5"} == 0
and on (cluster, node)
kube_node_spec_unschedulable{job="kube-state-metrics", node="ip-10-0-1-5"} == 0"##,
    ),
    (
        "CPUThrottlingHigh",
        &[
            ("container", "api"),
            ("instance", "10.0.1.5:10250"),
            ("namespace", "shop"),
            ("node", "ip-10-0-1-5"),
            ("pod", "api-7d9c4-x2"),
            ("service", "kubelet"),
            ("severity", "info"),
        ],
        r##"sum without (id, metrics_path, name, image, endpoint, job, node) (
  topk by (cluster, namespace, pod, container, instance) (1,
    increase(
      container_cpu_cfs_throttled_periods_total{container!="", job="kubelet", metrics_path="/metrics/cadvisor", namespace="shop", pod="api-7d9c4-x2", container="api", instance="10.0.1.5:10250"}
    [5m])
  )
)
/ on (cluster, namespace, pod, container, instance) group_left
sum without (id, metrics_path, name, image, endpoint, job, node) (
  topk by (cluster, namespace, pod, container, instance) (1,
    increase(
      container_cpu_cfs_periods_total{job="kubelet", metrics_path="/metrics/cadvisor", namespace="shop", pod="api-7d9c4-x2", container="api", instance="10.0.1.5:10250"}
    [5m])
  )
)
> ( 25 / 100 )"##,
    ),
    (
        "KubeHpaMaxedOut",
        &[
            ("horizontalpodautoscaler", "api"),
            ("instance", "10.2.0.7:8443"),
            ("job", "kube-state-metrics"),
            ("namespace", "shop"),
            ("severity", "warning"),
        ],
        r##"(
  kube_horizontalpodautoscaler_status_current_replicas{job="kube-state-metrics", namespace="shop", horizontalpodautoscaler="api"}
    ==
  kube_horizontalpodautoscaler_spec_max_replicas{job="kube-state-metrics", namespace="shop", horizontalpodautoscaler="api"}
)
and on(namespace, horizontalpodautoscaler, cluster) (
  kube_horizontalpodautoscaler_spec_max_replicas{job="kube-state-metrics", namespace="shop", horizontalpodautoscaler="api"}
    !=
  kube_horizontalpodautoscaler_spec_min_replicas{job="kube-state-metrics", namespace="shop", horizontalpodautoscaler="api"}
)"##,
    ),
    (
        "KubeQuotaAlmostFull",
        &[
            ("instance", "10.2.0.7:8443"),
            ("job", "kube-state-metrics"),
            ("namespace", "shop"),
            ("resource", "requests.cpu"),
            ("resourcequota", "compute"),
            ("severity", "info"),
        ],
        r##"topk by (cluster, namespace, resource, resourcequota) (1,
  max without (instance, job, type) (
    kube_resourcequota{job="kube-state-metrics", type="used", namespace="shop"}
  )
)
/ on (cluster, namespace, resource, resourcequota) group_left()
topk by (cluster, namespace, resource, resourcequota) (1,
  max without (instance, job, type) (
    kube_resourcequota{job="kube-state-metrics", type="hard", namespace="shop"}
  ) > 0
)
> 0.9 < 1"##,
    ),
    (
        "NodeFilesystemSpaceFillingUp",
        &[
            ("container", "node-exporter"),
            ("device", "/dev/nvme0n1p1"),
            ("fstype", "xfs"),
            ("instance", "ip-10-0-1-5"),
            ("job", "node-exporter"),
            ("mountpoint", "/"),
            ("namespace", "monitoring"),
            ("pod", "node-exporter-8xk2p"),
            ("service", "node-exporter"),
            ("severity", "critical"),
        ],
        r##"(
  node_filesystem_avail_bytes{job="node-exporter",fstype!="",mountpoint!="", instance="ip-10-0-1-5"} / node_filesystem_size_bytes{job="node-exporter",fstype!="",mountpoint!="", instance="ip-10-0-1-5"} * 100 < 10
and
  predict_linear(node_filesystem_avail_bytes{job="node-exporter",fstype!="",mountpoint!="", instance="ip-10-0-1-5"}[6h], 4*60*60) < 0
and
  node_filesystem_readonly{job="node-exporter",fstype!="",mountpoint!="", instance="ip-10-0-1-5"} == 0
)"##,
    ),
    (
        "KubeletTooManyPods",
        &[
            ("instance", "10.0.1.5:10250"),
            ("node", "ip-10-0-1-5"),
            ("severity", "info"),
        ],
        r##"(
  max by (cluster, instance) (
    kubelet_running_pods{job="kubelet", metrics_path="/metrics", instance="10.0.1.5:10250"} > 1
  )
  * on (cluster, instance) group_left(node)
  max by (cluster, instance, node) (
    kubelet_node_name{job="kubelet", metrics_path="/metrics", node="ip-10-0-1-5", instance="10.0.1.5:10250"}
  )
)
/ on (cluster, node) group_left()
max by (cluster, node) (
  kube_node_status_capacity{job="kube-state-metrics", resource="pods", node="ip-10-0-1-5"} != 1
) > 0.95"##,
    ),
    (
        "TargetDown",
        &[
            ("job", "payments"),
            ("namespace", "shop"),
            ("service", "payments"),
            ("severity", "warning"),
        ],
        r##"100 * (count(up{namespace="shop", service="payments"} == 0) BY (cluster, job, namespace, service) / count(up{namespace="shop", service="payments"}) BY (cluster, job, namespace, service)) > 10"##,
    ),
    ("Watchdog", &[("severity", "none")], r##"vector(1)"##),
    (
        "KubeAPIErrorBudgetBurn",
        &[
            ("cluster", "prod-eu"),
            ("long", "6h"),
            ("short", "30m"),
            ("severity", "critical"),
        ],
        r##"sum by(cluster) (apiserver_request:burnrate6h{cluster="prod-eu"}) > (6.00 * 0.01000)
and on(cluster)
sum by(cluster) (apiserver_request:burnrate30m{cluster="prod-eu"}) > (6.00 * 0.01000)"##,
    ),
    (
        "KubeVersionMismatch",
        &[("cluster", "prod-eu"), ("severity", "warning")],
        r##"count by (cluster) (count by (git_version, cluster) (label_replace(kubernetes_build_info{job!~"kube-dns|coredns", cluster="prod-eu"},"git_version","$1","git_version","(v[0-9]*.[0-9]*).*"))) > 1"##,
    ),
    (
        "AlertmanagerMembersInconsistent",
        &[
            ("container", "alertmanager"),
            ("instance", "10.2.3.4:9093"),
            ("job", "alertmanager-main"),
            ("namespace", "monitoring"),
            ("pod", "alertmanager-main-1"),
            ("service", "alertmanager-main"),
            ("severity", "critical"),
        ],
        r##"# Without max_over_time, failed scrapes could create false negatives, see
# https://www.robustperception.io/alerting-on-gauges-in-prometheus-2-0 for details.
  max_over_time(alertmanager_cluster_members{job="alertmanager-main",container="alertmanager",namespace="monitoring", service="alertmanager-main"}[5m])
< on (namespace,service) group_left
  count by (namespace,service) (max_over_time(alertmanager_cluster_members{job="alertmanager-main",container="alertmanager",namespace="monitoring", service="alertmanager-main"}[5m]))"##,
    ),
    (
        "ConfigReloaderSidecarErrors",
        &[
            ("container", "config-reloader"),
            ("namespace", "monitoring"),
            ("pod", "prometheus-k8s-0"),
            ("severity", "warning"),
        ],
        r##"max_over_time(reloader_last_reload_successful{namespace=~".+", namespace="monitoring"}[5m]) == 0"##,
    ),
    (
        "KubeAPIDown",
        &[("job", "apiserver"), ("severity", "critical")],
        r##"absent(up{job="apiserver"})"##,
    ),
];

#[test]
fn identifying_labels_go_into_the_selectors_that_carry_them() {
    for (name, pairs, expected) in INJECTED {
        let labels = labels(pairs);
        let alert = lookup_matching(name, &labels).expect("in the catalogue");
        assert_eq!(&expression_for(alert, &labels), expected, "{name}");
    }
}

#[test]
fn injection_respects_existing_matchers_strings_and_ranges() {
    let labels = labels(&[("namespace", "shop"), ("pod", "p\"1"), ("cluster", "c")]);
    // A bare metric gets braces; `=` pins are kept, `=~` is narrowed further.
    assert_eq!(
        promql::with_labels("kube_pod_info", &labels).expect("parses"),
        r#"kube_pod_info{namespace="shop", pod="p\"1"}"#
    );
    assert_eq!(
        promql::with_labels(r#"kube_pod_info{namespace="other"}"#, &labels).expect("parses"),
        r#"kube_pod_info{namespace="other", pod="p\"1"}"#
    );
    // Keywords are case-insensitive; `by` lists, strings and ranges are never touched.
    assert_eq!(
        promql::with_labels(
            r#"sum(rate(x_total{a="}"}[5m] offset 1h)) BY (cluster, pod) > 0"#,
            &labels
        )
        .expect("parses"),
        r#"sum(rate(x_total{a="}", pod="p\"1", cluster="c"}[5m] offset 1h)) BY (cluster, pod) > 0"#
    );
    // `without` drops a label on the way down; `group_left(…)` labels come from the "one" side.
    assert_eq!(
        promql::with_labels(
            "sum without (pod) (kube_pod_info) * on (namespace) group_left (pod) kube_x",
            &labels
        )
        .expect("parses"),
        r#"sum without (pod) (kube_pod_info{namespace="shop"}) * on (namespace) group_left (pod) kube_x{namespace="shop", pod="p\"1"}"#
    );
    assert!(matches!(
        promql::with_labels("sum(x", &labels),
        Err(PromqlError::UnexpectedEnd { .. })
    ));
    assert!(promql::parse("x{a=1}").is_err());
}
