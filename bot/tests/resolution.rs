//! Resolution at ingest against a real bot and a real database: a resolved-mention, a recovery
//! alert (top-level and in the thread; never waking a round), and ✅ on the alert by a person —
//! and what must resolve nothing: another alertname, the bot's own ✅, another bot's ✅, a second
//! resolution of a resolved thread.

mod common;

use common::*;
use serde_json::{Value, json};

const CHANNEL: &str = "C07INCIDENT";
const ONCALL: &str = "U07ONCALL01";
const ALERTMANAGER: &str = "B07ALERTMGR";

/// A message from a bot (Alertmanager by default), top-level or in `thread_ts`.
fn bot_event(
    event_id: &str,
    ts: &str,
    thread_ts: Option<&str>,
    bot_id: &str,
    username: &str,
    text: &str,
) -> Value {
    let mut event = json!({"type": "message", "subtype": "bot_message", "channel": CHANNEL,
        "bot_id": bot_id, "username": username, "text": text, "ts": ts, "event_ts": ts,
        "channel_type": "channel", "team": "T07F1RSTDEV"});
    if let Some(t) = thread_ts {
        event["thread_ts"] = json!(t);
    }
    json!({"token": "x", "team_id": "T07F1RSTDEV", "api_app_id": "A07F1RSTAPP",
        "type": "event_callback", "event_id": event_id, "event_time": 1733140000, "event": event})
}

fn reply_event(event_id: &str, ts: &str, thread_ts: &str, user: &str, text: &str) -> Value {
    let mut e = message_event(event_id, CHANNEL, ts, user, text);
    e["event"]["thread_ts"] = json!(thread_ts);
    e
}

fn reaction_event(event_id: &str, user: &str, reaction: &str, ts: &str) -> Value {
    json!({"token": "x", "team_id": "T07F1RSTDEV", "api_app_id": "A07F1RSTAPP",
        "type": "event_callback", "event_id": event_id, "event_time": 1733140000,
        "event": {"type": "reaction_added", "user": user, "reaction": reaction,
                  "item": {"type": "message", "channel": CHANNEL, "ts": ts},
                  "event_ts": "1733149999.000001"}})
}

async fn send(bot: &TestBot, payload: &Value) {
    assert_eq!(
        post_signed(&bot.events_url, &payload.to_string(), 0, &[]).await,
        200
    );
}

async fn status(db: &sqlx::PgPool, thread_ts: &str) -> String {
    sqlx::query_scalar("SELECT status FROM threads WHERE thread_ts = $1")
        .bind(thread_ts)
        .fetch_one(db)
        .await
        .unwrap()
}

/// team_id, alertname, namespace, service, title, summary, root_cause, resolution, no embedding.
type IncidentRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    String,
    String,
    String,
    bool,
);

/// Alertmanager posts `text` (in `thread` when given) as event `event_id` with ts `ts`.
async fn alertmanager_says(
    bot: &TestBot,
    event_id: &str,
    ts: &str,
    thread: Option<&str>,
    text: &str,
) {
    send(
        bot,
        &bot_event(event_id, ts, thread, ALERTMANAGER, "Alertmanager", text),
    )
    .await;
}

const ALERT: &str = "[FIRING:1] KubePodCrashLooping checkout\nLabels:\n - alertname = KubePodCrashLooping\n - namespace = shop\n - service = checkout";

#[tokio::test]
async fn a_resolved_mention_resolves_with_the_humans_cause_and_the_rounds_summary() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let alert_ts = "1733150000.000100";
    alertmanager_says(&bot, "Ev07RM000001", alert_ts, None, ALERT).await;
    let thread_id: i64 = sqlx::query_scalar("SELECT id FROM threads WHERE thread_ts = $1")
        .bind(alert_ts)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    // A committed grounded round, as the worker writes it: its result and its outline.
    let result = json!({"grounded": true, "text": "checkout-7f9c restarts: OOMKilled at 512Mi (E1, E2)",
        "report": {"headline": "checkout is crash-looping", "causes": [
            {"statement": "memory limit too low for the new cache", "detail": "E1"}]}});
    sqlx::query(
        "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result,
                             headline, cause, text)
         VALUES ($1, 1, 'wf', 'run', now(), true, $2, $3, $4, $5)",
    )
    .bind(thread_id)
    .bind(&result)
    .bind("checkout is crash-looping")
    .bind("memory limit too low for the new cache")
    .bind("checkout-7f9c restarts: OOMKilled at 512Mi (E1, E2)")
    .execute(&db.pool)
    .await
    .unwrap();
    // A question first: not a resolution.
    send(
        &bot,
        &reply_event(
            "Ev07RM000002",
            "1733150001.000100",
            alert_ts,
            ONCALL,
            "<@U07F1RSTBOT> is this resolved?",
        ),
    )
    .await;
    assert_eq!(status(&db.pool, alert_ts).await, "open");
    send(
        &bot,
        &reply_event(
            "Ev07RM000003",
            "1733150002.000100",
            alert_ts,
            ONCALL,
            "<@U07F1RSTBOT> resolved bad ConfigMap rollout, rolled back",
        ),
    )
    .await;
    assert_eq!(status(&db.pool, alert_ts).await, "resolved");
    let row: IncidentRow = sqlx::query_as(
        "SELECT team_id, alertname, namespace, service, title, summary, root_cause, resolution,
                    embedding IS NULL
             FROM incidents WHERE thread_id = $1",
    )
    .bind(thread_id)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(row.0, "T07F1RSTDEV");
    assert_eq!(row.1.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(row.2.as_deref(), Some("shop"));
    assert_eq!(row.3.as_deref(), Some("checkout"));
    assert_eq!(row.4, "[FIRING:1] KubePodCrashLooping checkout");
    assert_eq!(row.5, "checkout-7f9c restarts: OOMKilled at 512Mi (E1, E2)");
    assert_eq!(row.6, "bad ConfigMap rollout, rolled back");
    assert_eq!(row.7, "bad ConfigMap rollout, rolled back");
    assert!(row.8, "no embedding yet");
    let resolved_at_matches: bool = sqlx::query_scalar(
        "SELECT i.resolved_at = t.resolved_at FROM incidents i JOIN threads t ON t.id = i.thread_id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(resolved_at_matches);
    // The mention is a mention like any other: stored, published, and it wakes (the workflow's
    // guard sees `resolved`).
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        3
    );
    // Resolving again is a no-op: same incident, first cause kept.
    send(
        &bot,
        &reply_event(
            "Ev07RM000004",
            "1733150003.000100",
            alert_ts,
            ONCALL,
            "<@U07F1RSTBOT> resolved something else",
        ),
    )
    .await;
    assert_eq!(count(&db.pool, "SELECT count(*) FROM incidents").await, 1);
    let cause: String = sqlx::query_scalar("SELECT root_cause FROM incidents")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(cause, "bad ConfigMap rollout, rolled back");
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM audit WHERE action = 'resolve' AND detail->>'via' = 'mention'"
        )
        .await,
        1
    );
    bot.stop().await;
}

#[tokio::test]
async fn a_recovery_alert_resolves_the_matching_open_thread_and_never_wakes() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let crash = "1733160000.000100";
    let latency = "1733160001.000100";
    alertmanager_says(&bot, "Ev07RA000001", crash, None, ALERT).await;
    alertmanager_says(
        &bot,
        "Ev07RA000002",
        latency,
        None,
        "[FIRING:1] HighLatency payments\nnamespace: payments",
    )
    .await;
    // A recovery for another alertname resolves nothing.
    alertmanager_says(
        &bot,
        "Ev07RA000003",
        "1733160002.000100",
        None,
        "[RESOLVED] DiskFull shop",
    )
    .await;
    // Same alertname, other namespace: nothing either.
    alertmanager_says(&bot, "Ev07RA000004", "1733160003.000100", None, "[RESOLVED] KubePodCrashLooping checkout\n - alertname = KubePodCrashLooping\n - namespace = staging").await;
    // Same alertname from another integration: nothing.
    send(
        &bot,
        &bot_event(
            "Ev07RA000005",
            "1733160004.000100",
            None,
            "B07GRAFANA1",
            "Grafana",
            "[RESOLVED] KubePodCrashLooping",
        ),
    )
    .await;
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM threads WHERE status = 'resolved'"
        )
        .await,
        0
    );
    // The matching recovery.
    alertmanager_says(&bot, "Ev07RA000006", "1733160005.000100", None, "[RESOLVED] KubePodCrashLooping checkout\n - alertname = KubePodCrashLooping\n - namespace = shop").await;
    assert_eq!(status(&db.pool, crash).await, "resolved");
    assert_eq!(status(&db.pool, latency).await, "open");
    let (root_cause, resolution, alertname): (String, String, Option<String>) =
        sqlx::query_as("SELECT root_cause, resolution, alertname FROM incidents")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(root_cause, "unknown (resolved by recovery alert)");
    assert_eq!(
        resolution,
        "recovery alert: [RESOLVED] KubePodCrashLooping checkout"
    );
    assert_eq!(alertname.as_deref(), Some("KubePodCrashLooping"));
    // Recovery alerts are recorded and published, never woken: only the two firing alerts wake.
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE kind = 'alert'"
        )
        .await,
        6
    );
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM outbox WHERE kind = 'publish' AND message_id IS NOT NULL"
        )
        .await,
        6
    );
    // Each incident is published too (the embedder reads it from the topic), once.
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM outbox o JOIN incidents i ON i.id = o.incident_id
             WHERE o.kind = 'publish' AND o.payload->>'schema' = 'firstline.incident.v1'
               AND (o.payload->>'incident_id')::bigint = i.id"
        )
        .await,
        count(&db.pool, "SELECT count(*) FROM incidents").await
    );
    let woken: Vec<String> = sqlx::query_scalar(
        "SELECT m.ts FROM outbox o JOIN messages m ON m.id = o.message_id WHERE o.kind = 'wake' ORDER BY m.ts",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(woken, [crash, latency]);
    // A second recovery of the same alert finds no open thread (the recovery threads themselves
    // never match).
    alertmanager_says(
        &bot,
        "Ev07RA000007",
        "1733160006.000100",
        None,
        "[RESOLVED] KubePodCrashLooping checkout",
    )
    .await;
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM threads WHERE status = 'resolved'"
        )
        .await,
        1
    );
    // A recovery posted as a reply resolves its own thread (Grafana-style marker).
    alertmanager_says(
        &bot,
        "Ev07RA000008",
        "1733160007.000100",
        Some(latency),
        "Resolved: HighLatency payments",
    )
    .await;
    assert_eq!(status(&db.pool, latency).await, "resolved");
    assert_eq!(count(&db.pool, "SELECT count(*) FROM incidents").await, 2);
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        2
    );
    bot.stop().await;
}

#[tokio::test]
async fn a_persons_check_mark_on_the_alert_resolves_and_bots_check_marks_do_not() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let alert_ts = "1733170000.000100";
    alertmanager_says(&bot, "Ev07CM000001", alert_ts, None, ALERT).await;
    // Another bot with a user id (it posts as a bot in the channel).
    let mut other_bot = bot_event(
        "Ev07CM000002",
        "1733170001.000100",
        Some(alert_ts),
        "B07TRIAGEBT",
        "triage",
        "triaged",
    );
    other_bot["event"]["user"] = json!("U07TRIAGEBT");
    send(&bot, &other_bot).await;
    let chatter_ts = "1733170002.000100";
    send(
        &bot,
        &reply_event("Ev07CM000003", chatter_ts, alert_ts, ONCALL, "looking"),
    )
    .await;
    for (event_id, user, reaction, ts) in [
        ("Ev07CM000010", "U07F1RSTBOT", "white_check_mark", alert_ts), // the bot itself
        ("Ev07CM000011", "U07TRIAGEBT", "white_check_mark", alert_ts), // another bot
        ("Ev07CM000012", ONCALL, "eyes", alert_ts),                    // another emoji
        ("Ev07CM000013", ONCALL, "white_check_mark", chatter_ts),      // not the alert
    ] {
        send(&bot, &reaction_event(event_id, user, reaction, ts)).await;
    }
    assert_eq!(status(&db.pool, alert_ts).await, "open");
    assert_eq!(count(&db.pool, "SELECT count(*) FROM incidents").await, 0);
    // A person's ✅ on the alert, delivered twice (Slack's retry): resolved once.
    let check = reaction_event("Ev07CM000020", ONCALL, "white_check_mark", alert_ts);
    send(&bot, &check).await;
    assert_eq!(
        post_signed(
            &bot.events_url,
            &check.to_string(),
            0,
            &[("x-slack-retry-num", "1")]
        )
        .await,
        200
    );
    assert_eq!(status(&db.pool, alert_ts).await, "resolved");
    let (root_cause, resolution, summary): (String, String, String) =
        sqlx::query_as("SELECT root_cause, resolution, summary FROM incidents")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(root_cause, "(resolved by ✅)");
    assert_eq!(resolution, "marked resolved with ✅ by <@U07ONCALL01>");
    assert_eq!(summary, ALERT, "no round: the alert's text");
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM audit WHERE action = 'resolve'"
        )
        .await,
        1
    );
    // Reactions are not messages: nothing stored for them, nothing woken.
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 3);
    bot.stop().await;
}
