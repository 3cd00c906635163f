//! `bench/storm`: what an alert storm costs, through the whole stack — Slack stand-in → bot →
//! Postgres → Temporal → one `firstline worker` process → incident graph (lab MCP server) → post.
//! Two series of 30 alerts, each posted at once in a channel of its own:
//!
//! - **identical**: the lab's crash-loop alert (`crashloop-config-exit-78`), 30 times;
//! - **failed node**: 30 different alerts from one lost node (`node-lost-thirty-pods-storm`):
//!   KubeNodeNotReady, KubeNodeUnreachable, TargetDown, KubePodNotReady for every terminating
//!   pod on the node, KubeStatefulSetReplicasMismatch, KubeDaemonSetRolloutStuck and
//!   KafkaUnderReplicatedPartitions, in Alertmanager's Slack format.
//!
//! After posting, it waits until every thread has a reply from Firstline and nothing Firstline
//! wrote in the channel has changed for [`QUIET`] (at most [`LIMIT`]), then prints one JSON line
//! per series on stdout, `bench/storm: result {…}`, labelled with `STORM_BUILD` (default
//! `current`). A measurement, not a test: it fails only when something cannot be set up.
//! `bench/storm/run` builds it at the base revision and at the working tree and prints the
//! table. See README.md.
//!
//! The counts: replies with Slack message metadata `event_type` `firstline_round` (full
//! analyses) and `firstline_group_link` (one-line links), read from the stand-in; `audit` rows
//! with `action = 'tool_call'` of the series' threads; Firstline's messages in the channel; the
//! first alert's ts → the last reply's ts (both the stand-in's clock).

#[path = "../../tests/support/round_app.rs"]
mod round_app;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use firstline_slack::standin::state::{Author, Message};
use round_app::{BOT_USER, RoundApp, test_settings};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The identical series' scenario: its alert is posted 30 times.
const IDENTICAL: &str = "crashloop-config-exit-78";
/// The failed-node series' scenario: the world of the 30 alerts.
const FAILED_NODE: &str = "node-lost-thirty-pods-storm";
/// Alerts per series.
const ALERTS: usize = 30;
/// Settled: every thread has a reply and nothing Firstline wrote changed for this long.
const QUIET: Duration = Duration::from_secs(10);
/// How long a series may take from the first alert before the bench reports what was there.
const LIMIT: Duration = Duration::from_secs(360);
/// Full analyses (activities/src/blocks.rs `ROUND_EVENT_TYPE`).
const ROUND_EVENT: &str = "firstline_round";
/// One-line links to an earlier thread (issue 26).
const LINK_EVENT: &str = "firstline_group_link";

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let build = std::env::var("STORM_BUILD").unwrap_or_else(|_| "current".into());
    eprintln!(
        "bench/storm: [{build}] starting the stack, two apps (one per series) and their workers..."
    );
    // The workers run a copy of the `firstline` binary this build made: the shared target
    // directory's `debug/firstline` is rewritten by any other build (the base's or the working
    // tree's) while the bench runs.
    let bin = tempfile::tempdir().expect("a temp dir for the worker binary");
    let worker_bin = bin.path().join("firstline");
    std::fs::copy(env!("CARGO_BIN_EXE_firstline"), &worker_bin)
        .unwrap_or_else(|e| panic!("copying {}: {e}", env!("CARGO_BIN_EXE_firstline")));
    // Both apps and their workers start now; each series then runs on its own app with exactly
    // one worker (the other app's worker is idle).
    let identical = RoundApp::spawn(IDENTICAL, test_settings()).await;
    let node = RoundApp::spawn(FAILED_NODE, test_settings()).await;
    let mut identical_worker = start_worker(&identical, &worker_bin).await;
    let mut node_worker = start_worker(&node, &worker_bin).await;

    let texts = vec![identical.scenario.alert_text(); ALERTS];
    eprintln!("bench/storm: [{build}] identical: {ALERTS} × {IDENTICAL}...");
    let first = storm(&identical, "identical", &build, &texts).await;
    stop_worker(&mut identical_worker).await;
    identical.stop().await;

    let texts = node_storm(&node.scenario);
    eprintln!(
        "bench/storm: [{build}] failed node: {} alerts from one node ({FAILED_NODE})...",
        texts.len()
    );
    let second = storm(&node, "failed node", &build, &texts).await;
    stop_worker(&mut node_worker).await;
    node.stop().await;
    drop(bin);

    let mut failed = false;
    for result in [first, second] {
        match result {
            Ok(row) => println!("bench/storm: result {row}"),
            Err(e) => {
                eprintln!("bench/storm: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

async fn stop_worker(worker: &mut Child) {
    let _ = worker.start_kill();
    let _ = worker.wait().await;
}

/// Starts `firstline worker` for `app` (its settings, as `RoundApp::start_worker` gives them)
/// from `exe`, and waits until it is healthy.
async fn start_worker(app: &RoundApp, exe: &Path) -> Child {
    let template = app.worker_command();
    let template = template.as_std();
    let mut command = Command::new(exe);
    command.args(template.get_args()).env_clear();
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {}: {e}", exe.display()));
    let mut lines = BufReader::new(child.stdout.take().expect("the worker's stdout")).lines();
    let health = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.split_whitespace().find(|w| w.ends_with("/healthz")) {
                return url.to_string();
            }
        }
        panic!("the worker exited before it was ready");
    })
    .await
    .expect("the worker prints its /healthz URL within 60 s");
    let ready = Instant::now() + Duration::from_secs(60);
    while round_app::http_get(&health).await.0 != 200 {
        assert!(Instant::now() < ready, "the worker is healthy within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Keep draining stdout so the worker never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// Posts `texts` at once in the app's channel (each a thread of its own), waits until settled
/// and measures. Returns the JSON row.
async fn storm(
    app: &RoundApp,
    series: &str,
    build: &str,
    texts: &[String],
) -> Result<serde_json::Value, String> {
    let channel = app.channel.clone();
    let posting = Instant::now();
    let stamps: Vec<String> = texts
        .iter()
        .map(|text| app.slack.integration_posts(&channel, "Alertmanager", text))
        .collect();
    let posted_in = posting.elapsed();

    // Settle: every thread answered, then nothing new or changed for QUIET; at most LIMIT.
    let deadline = posting + LIMIT;
    let mut last = String::new();
    let mut changed = Instant::now();
    let complete = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let messages = channel_messages(app, &channel);
        let snapshot = snapshot(&messages);
        if snapshot != last {
            last = snapshot;
            changed = Instant::now();
        }
        let answered = unanswered(&messages, &stamps) == 0;
        if answered && changed.elapsed() >= QUIET {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
    };
    let settled_in = posting.elapsed();
    if !complete {
        eprintln!(
            "bench/storm: {series}: not settled within {LIMIT:?}; reporting what is there (incomplete)"
        );
    }

    let messages = channel_messages(app, &channel);
    let ours: Vec<&Message> = messages.iter().filter(|m| from_firstline(m)).collect();
    let event = |m: &Message| {
        m.metadata
            .as_ref()
            .and_then(|md| md.get("event_type"))
            .and_then(|e| e.as_str())
            .map(str::to_string)
    };
    let mut events: BTreeMap<String, usize> = BTreeMap::new();
    for m in &ours {
        *events
            .entry(event(m).unwrap_or_else(|| "none".into()))
            .or_default() += 1;
    }
    let full = events.get(ROUND_EVENT).copied().unwrap_or(0);
    let links = events.get(LINK_EVENT).copied().unwrap_or(0);
    let first_alert = stamps
        .iter()
        .filter_map(|ts| ts.parse::<f64>().ok())
        .fold(f64::INFINITY, f64::min);
    let last_reply = ours
        .iter()
        .filter_map(|m| m.ts.parse::<f64>().ok())
        .fold(f64::NEG_INFINITY, f64::max);
    let span = (last_reply.is_finite() && first_alert.is_finite())
        .then(|| ((last_reply - first_alert) * 1000.0).round() / 1000.0);

    let pool = &app.db.pool;
    let in_channel = |sql: &'static str| async move {
        sqlx::query_scalar::<_, i64>(sql)
            .bind(&app.channel)
            .fetch_one(pool)
            .await
            .map_err(|e| format!("{sql}: {e}"))
    };
    let tool_calls = in_channel(
        "SELECT count(*) FROM audit a JOIN threads t ON t.id = a.thread_id
          WHERE t.channel_id = $1 AND a.action = 'tool_call'",
    )
    .await?;
    let audit_posts = in_channel(
        "SELECT count(*) FROM audit a JOIN threads t ON t.id = a.thread_id
          WHERE t.channel_id = $1 AND a.action = 'slack_post'",
    )
    .await?;
    let rounds = in_channel(
        "SELECT count(*) FROM rounds r JOIN threads t ON t.id = r.thread_id
          WHERE t.channel_id = $1",
    )
    .await?;
    let threads = in_channel("SELECT count(*) FROM threads WHERE channel_id = $1").await?;

    Ok(serde_json::json!({
        "build": build,
        "series": series,
        "alerts": stamps.len(),
        "full_analyses": full,
        "links": links,
        "replies_by_event_type": events,
        "tool_calls": tool_calls,
        "slack_posts": ours.len(),
        "slack_edits": ours.iter().filter(|m| m.edited).count(),
        "audit_slack_posts": audit_posts,
        "rounds": rounds,
        "threads": threads,
        "first_alert_to_last_reply_s": span,
        "without_reply": unanswered(&messages, &stamps),
        "complete": complete,
        "posted_in_ms": (posted_in.as_secs_f64() * 1000.0 * 10.0).round() / 10.0,
        "settled_after_s": (settled_in.as_secs_f64() * 10.0).round() / 10.0,
    }))
}

/// Every message in `channel` (top level and replies), oldest first.
fn channel_messages(app: &RoundApp, channel: &str) -> Vec<Message> {
    app.slack
        .workspace()
        .channels()
        .into_iter()
        .find(|(id, _, _)| id == channel)
        .map(|(_, _, messages)| messages)
        .unwrap_or_default()
}

/// What Firstline wrote in the channel, as a comparable string: its messages (text, blocks,
/// metadata, edited) and the reactions on the alerts.
fn snapshot(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        if from_firstline(m) {
            out.push_str(&format!(
                "{}|{}|{}|{}|{}\n",
                m.ts,
                m.edited,
                m.text,
                m.blocks.as_ref().map(|b| b.to_string()).unwrap_or_default(),
                m.metadata
                    .as_ref()
                    .map(|b| b.to_string())
                    .unwrap_or_default()
            ));
        } else {
            let reactions: Vec<&str> = m.reactions.iter().map(|r| r.name.as_str()).collect();
            out.push_str(&format!("{}:{}\n", m.ts, reactions.join(",")));
        }
    }
    out
}

/// How many of the alerts `stamps` have no reply from Firstline in their thread.
fn unanswered(messages: &[Message], stamps: &[String]) -> usize {
    stamps
        .iter()
        .filter(|ts| {
            !messages
                .iter()
                .any(|m| from_firstline(m) && m.thread_ts.as_deref() == Some(ts.as_str()))
        })
        .count()
}

/// Whether Firstline (the bot user) wrote `message`.
fn from_firstline(message: &Message) -> bool {
    matches!(&message.author, Author::Bot { user: Some(user), .. } if user == BOT_USER)
}

/// One alert as Alertmanager's default Slack template renders it (the lab scenarios' shape).
struct Alert {
    name: &'static str,
    summary: String,
    description: String,
    /// Path under runbooks.prometheus-operator.dev/runbooks/, if the rule has one.
    runbook: Option<&'static str>,
    labels: BTreeMap<&'static str, String>,
}

impl Alert {
    fn text(&self, at: &str) -> String {
        let severity = self.labels.get("severity").cloned().unwrap_or_default();
        let values: Vec<&str> = self.labels.values().map(String::as_str).collect();
        let mut out = format!("[FIRING:1] {} ({})\n", self.name, values.join(" "));
        out.push_str(&format!("*Alert:* {} - `{severity}`\n", self.summary));
        out.push_str(&format!("*Description:* {}\n", self.description));
        if let Some(path) = self.runbook {
            out.push_str(&format!(
                "*Runbook:* <https://runbooks.prometheus-operator.dev/runbooks/{path}|:spiral_note_pad:>\n"
            ));
        }
        out.push_str("*Details:*\n");
        out.push_str(&format!("  • *alertname:* `{}`\n", self.name));
        for (key, value) in &self.labels {
            out.push_str(&format!("  • *{key}:* `{value}`\n"));
        }
        out.push_str(&format!("Starts at: {at}\n"));
        out
    }
}

const CLUSTER: &str = "prod-eu-1";
const KSM_INSTANCE: &str = "10.42.3.17:8080";
const KSM_SERVICE: &str = "kube-prometheus-stack-kube-state-metrics";

/// The labels a kube-state-metrics series gives its alert, plus `extra`.
fn ksm(extra: &[(&'static str, &str)]) -> BTreeMap<&'static str, String> {
    let mut labels: BTreeMap<&'static str, String> = [
        ("cluster", CLUSTER),
        ("instance", KSM_INSTANCE),
        ("job", "kube-state-metrics"),
        ("service", KSM_SERVICE),
        ("severity", "warning"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect();
    labels.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    labels
}

/// The failed-node storm: 30 alerts, all caused by the scenario's lost node, each a different
/// alertname or different labels. Pods and workloads come from the scenario, so they agree
/// with the world the lab serves.
fn node_storm(scenario: &firstline_lab::scenario::Scenario) -> Vec<String> {
    let spec = &scenario.spec;
    let lost = spec
        .nodes
        .iter()
        .find(|n| {
            n.taints
                .iter()
                .any(|t| t.key == "node.kubernetes.io/unreachable")
        })
        .map(|n| n.name.clone())
        .expect("the scenario has an unreachable node");
    let on_node: Vec<_> = spec
        .pods
        .iter()
        .filter(|p| p.node.as_deref() == Some(lost.as_str()))
        .collect();
    let owned_by = |kind: &str| {
        let mut names: Vec<(String, String)> = on_node
            .iter()
            .filter_map(|p| p.owner.as_ref().map(|o| (p, o)))
            .filter(|(_, o)| o.kind == kind)
            .map(|(p, o)| (p.namespace.clone(), o.name.clone()))
            .collect();
        names.dedup();
        names
    };
    let mut alerts = vec![
        Alert {
            name: "KubeNodeNotReady",
            summary: "Node is not ready.".into(),
            description: format!(
                "{lost} has been unready for more than 15 minutes on cluster {CLUSTER}."
            ),
            runbook: Some("kubernetes/kubenodenotready"),
            labels: ksm(&[("condition", "Ready"), ("node", &lost), ("status", "true")]),
        },
        Alert {
            name: "KubeNodeUnreachable",
            summary: "Node is unreachable.".into(),
            description: format!(
                "{lost} is unreachable and some workloads may be rescheduled on cluster {CLUSTER}."
            ),
            runbook: Some("kubernetes/kubenodeunreachable"),
            labels: ksm(&[
                ("effect", "NoSchedule"),
                ("key", "node.kubernetes.io/unreachable"),
                ("node", &lost),
            ]),
        },
    ];
    // Prometheus cannot scrape what ran on the node: one target of six (DaemonSets, the
    // kubelet) or of three (the StatefulSets' exporters).
    for (job, namespace, service, share) in [
        (
            "kubelet",
            "kube-system",
            "kube-prometheus-stack-kubelet",
            "16.67",
        ),
        (
            "node-exporter",
            "monitoring",
            "kube-prometheus-stack-prometheus-node-exporter",
            "16.67",
        ),
        (
            "kube-proxy",
            "kube-system",
            "kube-prometheus-stack-kube-proxy",
            "16.67",
        ),
        ("fluent-bit", "logging", "fluent-bit", "16.67"),
        (
            "redis-sessions-metrics",
            "shop",
            "redis-sessions-metrics",
            "33.33",
        ),
        ("kafka-jmx", "data", "kafka-jmx-metrics", "33.33"),
    ] {
        alerts.push(Alert {
            name: "TargetDown",
            summary: "One or more targets are unreachable.".into(),
            description: format!(
                "{share}% of the {job}/{service} targets in {namespace} namespace are down."
            ),
            runbook: Some("general/targetdown"),
            labels: [
                ("cluster", CLUSTER),
                ("job", job),
                ("namespace", namespace),
                ("service", service),
                ("severity", "warning"),
            ]
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect(),
        });
    }
    // KubePodNotReady: kube-state-metrics reports the terminating pods of the lost node as
    // phase Unknown. The rule keeps namespace and pod only.
    for pod in on_node
        .iter()
        .filter(|p| p.phase.as_deref() == Some("Unknown"))
    {
        alerts.push(Alert {
            name: "KubePodNotReady",
            summary: "Pod has been in a non-ready state for more than 15 minutes.".into(),
            description: format!(
                "Pod {}/{} has been in a non-ready state for longer than 15 minutes on cluster {CLUSTER}.",
                pod.namespace, pod.name
            ),
            runbook: Some("kubernetes/kubepodnotready"),
            labels: [
                ("cluster", CLUSTER),
                ("namespace", pod.namespace.as_str()),
                ("pod", pod.name.as_str()),
                ("severity", "warning"),
            ]
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect(),
        });
    }
    for (namespace, name) in owned_by("StatefulSet") {
        alerts.push(Alert {
            name: "KubeStatefulSetReplicasMismatch",
            summary: "StatefulSet has not matched the expected number of replicas.".into(),
            description: format!(
                "StatefulSet {namespace}/{name} has not matched the expected number of replicas for longer than 15 minutes on cluster {CLUSTER}."
            ),
            runbook: Some("kubernetes/kubestatefulsetreplicasmismatch"),
            labels: ksm(&[
                ("container", "kube-state-metrics"),
                ("endpoint", "http"),
                ("namespace", &namespace),
                ("statefulset", &name),
            ]),
        });
    }
    for (namespace, name) in owned_by("DaemonSet") {
        alerts.push(Alert {
            name: "KubeDaemonSetRolloutStuck",
            summary: "DaemonSet rollout is stuck.".into(),
            description: format!(
                "DaemonSet {namespace}/{name} has not finished or progressed for at least 15m on cluster {CLUSTER}."
            ),
            runbook: Some("kubernetes/kubedaemonsetrolloutstuck"),
            labels: ksm(&[
                ("container", "kube-state-metrics"),
                ("daemonset", &name),
                ("endpoint", "http"),
                ("namespace", &namespace),
            ]),
        });
    }
    // The lost broker's partitions, per topic (kafka-exporter runs on another node).
    for (topic, partitions) in [("orders", 4), ("payments", 2), ("notifications", 3)] {
        alerts.push(Alert {
            name: "KafkaUnderReplicatedPartitions",
            summary: "Kafka topic has under-replicated partitions.".into(),
            description: format!(
                "Topic {topic} has {partitions} under-replicated partitions on cluster {CLUSTER}."
            ),
            runbook: None,
            labels: [
                ("cluster", CLUSTER),
                ("instance", "10.244.5.12:9308"),
                ("job", "kafka-exporter"),
                ("namespace", "data"),
                ("service", "kafka-exporter"),
                ("severity", "warning"),
                ("topic", topic),
            ]
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect(),
        });
    }
    assert_eq!(
        alerts.len(),
        ALERTS,
        "the failed-node storm is {ALERTS} alerts; the scenario gives {}",
        alerts.len()
    );
    let at = scenario
        .alert_at
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    alerts.iter().map(|a| a.text(&at)).collect()
}
