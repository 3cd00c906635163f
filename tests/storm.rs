//! Storms, end to end on real engines (Postgres, Temporal, Kafka, the Slack stand-in, the lab over
//! MCP, `firstline worker` processes): alerts that share a cause get one analysis and one line
//! each pointing at it; an alert that looks the same but has another root gets its own.
//!
//! Faults: thirty repeats of one alert in the same second on two workers, one of them killed
//! mid-storm (every alert answered exactly once, one analysis); an alert of the same kind whose
//! round finds a different root (its own analysis: grouping never hides a second incident); a
//! lost node's storm of different alerts (one analysis for the node, one object read for each
//! pod on it, and its own analysis for an unrelated pod failing elsewhere in the same second).

mod support;

use std::time::Duration;

use serde_json::Value;
use support::round_app::{BOT_USER, RoundApp, test_settings};

/// Two pods of payments-api crash-loop on a missing setting; analytics-exporter, in another
/// namespace, crash-loops because it is OOMKilled.
const SCENARIO: &str = "storm-crashloops-config-and-oom";
const ROUND: Duration = Duration::from_secs(120);
const STORM: Duration = Duration::from_secs(240);

/// The scenario's alert about pod `pod` of `namespace` (container `container`).
fn crash_alert(app: &RoundApp, namespace: &str, pod: &str, container: &str) -> String {
    app.scenario
        .alert_text()
        .replace("payments-api-6d8f7b9c4-x2x7q", pod)
        .replace("payments/", &format!("{namespace}/"))
        .replace(" payments critical", &format!(" {namespace} critical"))
        .replace("`payments`", &format!("`{namespace}`"))
        .replace("(api)", &format!("({container})"))
        .replace("`api`", &format!("`{container}`"))
}

/// Alertmanager posts every text at once, each a message of its own; their ts once all are
/// recorded.
async fn storm(app: &RoundApp, texts: &[String]) -> Vec<String> {
    let posted: Vec<String> = texts
        .iter()
        .map(|text| {
            app.slack
                .integration_posts(&app.channel, "Alertmanager", text)
        })
        .collect();
    let expected = posted.len() as i64;
    firstline_testkit::wait_for("every alert recorded", Duration::from_secs(30), || async {
        let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM messages WHERE ts = ANY($1)")
            .bind(&posted)
            .fetch_one(&app.db.pool)
            .await
            .ok()?;
        (recorded == expected).then_some(())
    })
    .await;
    posted
}

/// `metadata.event_type` of a bot reply.
fn event_type(reply: &firstline_slack::standin::state::Message) -> String {
    reply
        .metadata
        .as_ref()
        .and_then(|m| m["event_type"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Each alert's bot replies, by `metadata.event_type`.
fn answers(app: &RoundApp, alerts: &[String]) -> Vec<Vec<String>> {
    alerts
        .iter()
        .map(|ts| app.bot_replies(ts).iter().map(event_type).collect())
        .collect()
}

/// All the text of a reply's blocks.
fn blocks_text(reply: &firstline_slack::standin::state::Message) -> String {
    reply
        .blocks
        .as_ref()
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .map(|b| b["text"]["text"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_repeats_on_two_workers_one_killed_mid_storm_get_one_analysis_and_one_line_each() {
    let mut app = RoundApp::spawn(SCENARIO, test_settings()).await;
    app.start_worker(None).await;
    app.start_worker(None).await;
    let text = app.scenario.alert_text();
    let alerts = storm(&app, &vec![text.clone(); 30]).await;

    // A worker dies while the storm is being answered; another takes its place.
    firstline_testkit::wait_for("the first links", STORM, || async {
        let linked = answers(&app, &alerts)
            .iter()
            .filter(|a| a.iter().any(|t| t == "firstline_group_link"))
            .count();
        (linked >= 3).then_some(())
    })
    .await;
    app.kill_worker(0).await;
    app.start_worker(None).await;

    firstline_testkit::wait_for("every alert answered", STORM, || async {
        answers(&app, &alerts)
            .iter()
            .all(|a| !a.is_empty())
            .then_some(())
    })
    .await;
    // Nothing more comes: no alert is answered twice.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let answered = answers(&app, &alerts);
    assert!(
        answered.iter().all(|a| a.len() == 1),
        "every alert answered exactly once: {answered:?}"
    );
    let analyses: Vec<usize> = (0..alerts.len())
        .filter(|&i| answered[i] == ["firstline_round"])
        .collect();
    assert_eq!(analyses.len(), 1, "one full analysis: {answered:?}");
    let links = answered
        .iter()
        .filter(|a| *a == &["firstline_group_link"])
        .count();
    assert_eq!(links, 29, "{answered:?}");
    let primary = &alerts[analyses[0]];

    // Repeats are not investigated: one round, and every tool call is the primary's.
    let rounds = app.count("SELECT count(*) FROM rounds").await;
    assert_eq!(rounds, 1);
    let stray_calls = app
        .count(&format!(
            "SELECT count(*) FROM audit a JOIN threads t ON t.id = a.thread_id
              WHERE a.action = 'tool_call' AND t.thread_ts <> '{primary}'"
        ))
        .await;
    assert_eq!(stray_calls, 0);

    // Each line names the analysis; the primary's reply lists the 29, newest first, bounded.
    for (i, ts) in alerts.iter().enumerate().filter(|(i, _)| *i != analyses[0]) {
        let line = &app.bot_replies(ts)[0];
        assert!(
            line.text.contains("Same alert as") && line.text.contains(&primary.replace('.', "")),
            "alert {i}: {}",
            line.text
        );
        app.wait_reaction(ts, ts, "link").await;
    }
    firstline_testkit::wait_for("the primary lists 29 alerts", ROUND, || async {
        let reply = app.bot_replies(primary).into_iter().next()?;
        let text = blocks_text(&reply);
        (text.contains("29 more alerts linked") && text.contains("…and 19 more")).then_some(())
    })
    .await;

    // The alert's recovery resolves the group's incident once, with its alert count.
    let recovery = text.replace("[FIRING:1]", "[RESOLVED]");
    storm(&app, &[recovery]).await;
    firstline_testkit::wait_for("the incident recorded", ROUND, || async {
        let incidents = app.count("SELECT count(*) FROM incidents").await;
        (incidents >= 1).then_some(())
    })
    .await;
    assert_eq!(app.count("SELECT count(*) FROM incidents").await, 1);
    assert_eq!(
        app.count("SELECT alert_count::bigint FROM incidents").await,
        30
    );
    let group_resolved = app
        .count("SELECT count(*) FROM incident_groups WHERE status = 'resolved'")
        .await;
    assert_eq!(group_resolved, 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_root_gets_one_line_with_its_evidence_and_another_root_its_own_analysis() {
    let mut app = RoundApp::spawn(SCENARIO, test_settings()).await;
    app.start_worker(None).await;
    let first = app.post_alert(None).await;
    app.wait_rounds(&first, 1, ROUND).await;

    // Another payments-api pod pages with the same kind of alert and the same cause; an
    // analytics pod pages with the same alertname for a different one.
    let same_root = crash_alert(&app, "payments", "payments-api-6d8f7b9c4-k4m9t", "api");
    let other_root = crash_alert(
        &app,
        "analytics",
        "analytics-exporter-5b7d9c6f48-qm2kd",
        "exporter",
    );
    let later = storm(&app, &[same_root.clone(), other_root]).await;
    firstline_testkit::wait_for("both answered", ROUND, || async {
        answers(&app, &later)
            .iter()
            .all(|a| !a.is_empty())
            .then_some(())
    })
    .await;
    let answered = answers(&app, &later);
    assert_eq!(answered[0], ["firstline_group_link"], "{answered:?}");
    assert_eq!(answered[1], ["firstline_round"], "{answered:?}");
    // The line names the shared root and cites its own round's evidence.
    let line = &app.bot_replies(&later[0])[0];
    assert!(
        line.text.contains("Same cause as")
            && line.text.contains("PAYMENT_MODE")
            && line.text.contains("Evidence here: \u{201c}"),
        "{}",
        line.text
    );
    // The other root's analysis is its own: it names the OOM kill, not the shared setting.
    let own = &app.bot_replies(&later[1])[0];
    assert!(own.text.contains("OOMKilled"), "{}", own.text);
    assert!(!own.text.contains("Same cause"), "{}", own.text);
    firstline_testkit::wait_for("the primary lists its linked alert", ROUND, || async {
        let reply = app.bot_replies(&first).into_iter().next()?;
        let text = blocks_text(&reply);
        (text.contains("1 more alert linked") && text.contains("(same cause)")).then_some(())
    })
    .await;

    // Someone asks in the linked thread: they get an analysis there, of their own.
    app.say(
        &later[0],
        &format!("<@{BOT_USER}> is this pod's crash the same as the other one?"),
    )
    .await;
    firstline_testkit::wait_for("an analysis in the linked thread", ROUND, || async {
        answers(&app, &later[..1])[0]
            .iter()
            .any(|t| t == "firstline_round")
            .then_some(())
    })
    .await;

    // Resolving the primary resolves the group once; the linked alert's later recovery is
    // recorded on it, not announced as another incident.
    app.say(
        &first,
        &format!("<@{BOT_USER}> resolved rolled back to 2.13.4"),
    )
    .await;
    firstline_testkit::wait_for("the group resolved", ROUND, || async {
        let resolved = app
            .count("SELECT count(*) FROM incident_groups WHERE status = 'resolved'")
            .await;
        (resolved == 1).then_some(())
    })
    .await;
    assert_eq!(
        app.count("SELECT alert_count::bigint FROM incidents").await,
        2
    );
    storm(&app, &[same_root.replace("[FIRING:1]", "[RESOLVED]")]).await;
    firstline_testkit::wait_for("the linked alert's end recorded", ROUND, || async {
        let recorded = app
            .count("SELECT count(*) FROM group_members WHERE recovered_at IS NOT NULL")
            .await;
        (recorded == 1).then_some(())
    })
    .await;
    assert_eq!(app.count("SELECT count(*) FROM incidents").await, 1);
    app.stop().await;
}

/// A KubePodNotReady for pod `pod` of `namespace`, as kube-prometheus sends it.
fn pod_not_ready(namespace: &str, pod: &str) -> String {
    format!(
        "[FIRING:1] KubePodNotReady (prod-eu-1 {namespace} {pod} warning)\n\
         *Alert:* Pod has been in a non-ready state for more than 15 minutes. - `warning`\n\
         *Description:* Pod {namespace}/{pod} has been in a non-ready state for longer than 15 \
         minutes on cluster prod-eu-1.\n*Details:*\n  • *alertname:* `KubePodNotReady`\n  \
         • *cluster:* `prod-eu-1`\n  • *namespace:* `{namespace}`\n  • *pod:* `{pod}`\n  \
         • *severity:* `warning`"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_nodes_storm_gets_one_analysis_and_an_unrelated_pod_its_own() {
    let mut app = RoundApp::spawn("node-lost-thirty-pods-storm", test_settings()).await;
    app.start_worker(None).await;
    let on_node = [
        ("shop", "checkout-api-7d9f8c6b5-k2x9p"),
        ("shop", "cart-web-5b8c7d9f6-w4n2h"),
        ("search", "search-api-84c6d9b7f5-h6j2s"),
        ("billing", "billing-api-6f8b7c9d5-q2w8n"),
        ("orders", "orders-api-6b8d9c7f5-g4m9r"),
        ("shop", "redis-sessions-2"),
    ];
    let mut texts = vec![app.scenario.alert_text()];
    texts.extend(on_node.iter().map(|(ns, pod)| pod_not_ready(ns, pod)));
    // The red herring pages in the same second: its pod runs on a healthy node.
    texts.push(pod_not_ready("analytics", "metabase-6d9c7b8f5-s5k8m"));
    let alerts = storm(&app, &texts).await;
    firstline_testkit::wait_for("every alert answered", STORM, || async {
        answers(&app, &alerts)
            .iter()
            .all(|a| !a.is_empty())
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answered = answers(&app, &alerts);
    // One analysis for the node (whichever of its alerts was linked first), one for the herring.
    let herring = alerts.len() - 1;
    assert_eq!(answered[herring], ["firstline_round"], "{answered:?}");
    let analysed: Vec<usize> = (0..herring)
        .filter(|&i| answered[i] == ["firstline_round"])
        .collect();
    assert_eq!(analysed.len(), 1, "{answered:?}");
    let primary = analysed[0];
    for (i, a) in answered.iter().enumerate().take(herring) {
        if i == primary {
            continue;
        }
        assert_eq!(a, &["firstline_group_link"], "alert {i}: {answered:?}");
        let line = &app.bot_replies(&alerts[i])[0];
        assert!(
            line.text.contains("Same cause as") && line.text.contains("worker-eu-1c-4"),
            "{}",
            line.text
        );
        // It cost two reads at most (the node, then the pod; the node alone for the alert that
        // names it), not a round.
        let calls = app
            .count(&format!(
                "SELECT count(*) FROM audit a JOIN threads t ON t.id = a.thread_id
                  WHERE a.action = 'tool_call' AND t.thread_ts = '{}'",
                alerts[i]
            ))
            .await;
        assert!(calls <= 2, "alert {i}: {calls} tool calls");
    }
    assert_eq!(app.count("SELECT count(*) FROM rounds").await, 2);
    let herring_reply = &app.bot_replies(&alerts[herring])[0];
    assert!(
        !herring_reply.text.contains("Same cause"),
        "{}",
        herring_reply.text
    );
    let node = primary;
    firstline_testkit::wait_for("the node's reply lists its pods", ROUND, || async {
        let reply = app.bot_replies(&alerts[node]).into_iter().next()?;
        blocks_text(&reply)
            .contains("6 more alerts linked")
            .then_some(())
    })
    .await;
    app.stop().await;
}
