//! The bot receiving what the Slack stand-in delivers on a real socket: Events API delivery
//! (signed, with app_mention + message for one mention), the 👀 reaction, the bot's own echo
//! (Block Kit + message metadata kept), Socket Mode, and ✅ on an alert resolving its thread end
//! to end. The Web API client alone against the stand-in is tested in `slack/tests/client.rs`.

mod common;

use common::*;
use firstline_config::{SecretString, SlackMode};
use firstline_slack::standin::StandIn;
use firstline_slack::standin::state::{INCIDENTS, Message, ONCALL_USER};
use firstline_slack::{OutgoingMessage, SlackApi, limits};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn api(standin: &StandIn) -> SlackApi {
    SlackApi::new(
        &standin.api_url(),
        &SecretString::new("xoxb-standin-token"),
        Duration::from_secs(5),
    )
}

/// `text` as section blocks, split with Slack's limits the way Firstline lays out long text.
fn sections(text: &str) -> serde_json::Value {
    limits::sections(text)
        .into_iter()
        .map(|chunk| json!({"type": "section", "text": {"type": "mrkdwn", "text": chunk}}))
        .collect()
}

/// Waits until message `ts` in `thread_ts`'s thread of #incidents carries reaction `name`.
async fn reacted(slack: &StandIn, thread_ts: &str, ts: &str, name: &str) -> Message {
    firstline_testkit::wait_for(
        &format!("the {name} reaction"),
        Duration::from_secs(30),
        || async {
            let thread = slack.workspace().thread(INCIDENTS, thread_ts)?;
            thread
                .into_iter()
                .find(|m| m.ts == ts && m.has_reaction(name))
        },
    )
    .await
}

#[tokio::test]
async fn the_bot_records_what_the_standin_delivers_reacts_to_mentions_and_ignores_its_echo() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.slack.bot_token = SecretString::new("xoxb-standin-token");
    s.slack.api_url = slack.api_url();
    s.slack.bot_user_id = String::new(); // learnt from auth.test
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    slack.set_events_url(Some(bot.events_url.clone()));

    // An alert through the incoming webhook, as Alertmanager posts it.
    let hook = http_client()
        .post(&format!("{}/webhook/{INCIDENTS}", slack.url()))
        .body(serde_json::json!({"username": "Alertmanager", "text": "[FIRING:1] KubePodCrashLooping checkout"}).to_string())
        .send()
        .await;
    assert_eq!(hook.status(), 200);
    wait_count(
        &db.pool,
        "the alert",
        "SELECT count(*) FROM messages WHERE kind = 'alert'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let alert_ts: String = sqlx::query_scalar("SELECT ts FROM messages WHERE kind = 'alert'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    // A person mentions the bot in the alert's thread: app_mention + message, recorded once.
    let ts = slack.user_says(
        INCIDENTS,
        ONCALL_USER,
        "<@U07F1RSTBOT> what happened?",
        Some(&alert_ts),
    );
    reacted(&slack, &alert_ts, &ts, "eyes").await;
    tokio::time::sleep(Duration::from_millis(500)).await; // let the second event land
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE kind = 'mention'"
        )
        .await,
        1
    );
    // The bot's own post comes back as an event: recorded as an echo, never wakes.
    let api = api(&slack);
    let note = "<@U07F1RSTBOT> note to self";
    api.post_message(&OutgoingMessage {
        channel: INCIDENTS.into(),
        thread_ts: Some(alert_ts.clone()),
        text: note.into(),
        blocks: Some(sections(note)),
        metadata: None,
    })
    .await
    .unwrap();
    wait_count(
        &db.pool,
        "the echo",
        "SELECT count(*) FROM messages WHERE kind = 'bot_echo'",
        1,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM threads").await,
        1,
        "one thread keyed by the alert's ts"
    );
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        2,
        "alert + mention"
    );
    // The HTML view shows the thread.
    let page = http_client().get(&slack.url()).send().await;
    assert!(page.body.contains("KubePodCrashLooping") && page.body.contains("note to self"));
    // A person resolves the thread by mention: ✅ on their message says the bot understood.
    let resolving = slack.user_says(
        INCIDENTS,
        ONCALL_USER,
        "<@U07F1RSTBOT> resolved: bad config rolled back",
        Some(&alert_ts),
    );
    let confirmed = reacted(&slack, &alert_ts, &resolving, "white_check_mark").await;
    assert!(!confirmed.has_reaction("eyes"), "✅ instead of 👀");
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM threads WHERE status = 'resolved'"
        )
        .await,
        1
    );
    bot.stop().await;
    cancel.cancel();
}

#[tokio::test]
async fn socket_mode_receives_the_same_events_and_dedupes_them() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.slack.mode = SlackMode::Socket;
    s.slack.app_token = SecretString::new("xapp-standin-token");
    s.slack.api_url = slack.api_url();
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    firstline_testkit::wait_for("the socket connection", Duration::from_secs(30), || async {
        (slack.sockets_connected() > 0).then_some(())
    })
    .await;
    let ts = slack.user_says(
        INCIDENTS,
        ONCALL_USER,
        "<@U07F1RSTBOT> over the socket",
        None,
    );
    wait_count(
        &db.pool,
        "the mention over Socket Mode",
        "SELECT count(*) FROM messages WHERE kind = 'mention'",
        1,
        Duration::from_secs(30),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    let stored: String = sqlx::query_scalar("SELECT ts FROM messages")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, ts);
    // Over the socket too (events re-serialised through slack-morphism's typed model): an echo
    // keeps its metadata, and a person's ✅ on an alert resolves its thread.
    let hook = http_client()
        .post(&format!("{}/webhook/{INCIDENTS}", slack.url()))
        .body(
            json!({"username": "Alertmanager", "text": "[FIRING:1] KubePodCrashLooping checkout"})
                .to_string(),
        )
        .send()
        .await;
    assert_eq!(hook.status(), 200);
    wait_count(
        &db.pool,
        "the alert over Socket Mode",
        "SELECT count(*) FROM messages WHERE kind = 'alert'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let alert_ts: String = sqlx::query_scalar("SELECT ts FROM messages WHERE kind = 'alert'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    api(&slack)
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            thread_ts: Some(alert_ts.clone()),
            text: "report".into(),
            blocks: Some(report_blocks()),
            metadata: Some(json!({"event_type": "firstline_round", "event_payload": {"round": 1}})),
        })
        .await
        .unwrap();
    slack
        .user_reacts(INCIDENTS, ONCALL_USER, &alert_ts, "white_check_mark")
        .unwrap();
    wait_count(
        &db.pool,
        "the ✅ over Socket Mode",
        "SELECT count(*) FROM incidents",
        1,
        Duration::from_secs(30),
    )
    .await;
    wait_count(
        &db.pool,
        "the echo over Socket Mode",
        "SELECT count(*) FROM messages WHERE kind = 'bot_echo'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let metadata: serde_json::Value =
        sqlx::query_scalar("SELECT raw->'event'->'metadata' FROM messages WHERE kind = 'bot_echo'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(metadata["event_payload"]["round"], "1");
    // No Events API endpoint, but health and metrics for the operator all the same.
    assert!(bot.events_url.is_empty());
    let addr = bot
        .running
        .as_ref()
        .and_then(|r| r.http_addr)
        .expect("a Socket Mode bot serves /healthz and /metrics");
    let health = http_client()
        .get(&format!("http://{addr}/healthz"))
        .send()
        .await;
    assert_eq!((health.status(), health.body.as_str()), (200, "ok"));
    let metrics = http_client()
        .get(&format!("http://{addr}/metrics"))
        .send()
        .await;
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics
            .body
            .lines()
            .any(|l| l.starts_with("firstline_bot_events_total{")
                && l.contains("outcome=\"stored\"")),
        "{}",
        metrics.body
    );
    let events = http_client()
        .post(&format!("http://{addr}/slack/events"))
        .body("{}".into())
        .send()
        .await;
    assert_eq!(
        events.status(),
        404,
        "Socket Mode takes no events over HTTP"
    );
    bot.stop().await;
    cancel.cancel();
}

fn report_blocks() -> serde_json::Value {
    json!([
        {"type": "header", "text": {"type": "plain_text", "text": "checkout is crash-looping"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Cause*: memory limit too low (E1)"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "round 1 · grounded"}]},
    ])
}

#[tokio::test]
async fn echoes_carry_blocks_and_metadata_and_a_persons_check_mark_resolves_the_alert() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.slack.bot_token = SecretString::new("xoxb-standin-token");
    s.slack.api_url = slack.api_url();
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    slack.set_events_url(Some(bot.events_url.clone()));
    let hook = http_client()
        .post(&format!("{}/webhook/{INCIDENTS}", slack.url()))
        .body(
            json!({"username": "Alertmanager", "text": "[FIRING:1] KubePodCrashLooping checkout"})
                .to_string(),
        )
        .send()
        .await;
    assert_eq!(hook.status(), 200);
    wait_count(
        &db.pool,
        "the alert",
        "SELECT count(*) FROM messages WHERE kind = 'alert'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let alert_ts: String = sqlx::query_scalar("SELECT ts FROM messages WHERE kind = 'alert'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let api = api(&slack);
    api.post_message(&OutgoingMessage {
        channel: INCIDENTS.into(),
        thread_ts: Some(alert_ts.clone()),
        text: "report".into(),
        blocks: Some(report_blocks()),
        metadata: Some(json!({"event_type": "firstline_round", "event_payload": {"round": 1}})),
    })
    .await
    .unwrap();
    wait_count(
        &db.pool,
        "the echo",
        "SELECT count(*) FROM messages WHERE kind = 'bot_echo'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let (metadata, blocks): (serde_json::Value, serde_json::Value) = sqlx::query_as(
        "SELECT raw->'event'->'metadata', raw->'event'->'blocks' FROM messages WHERE kind = 'bot_echo'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        metadata,
        json!({"event_type": "firstline_round", "event_payload": {"round": "1"}})
    );
    assert_eq!(blocks, report_blocks());
    // The bot's own ✅ (delivered back as reaction_added) resolves nothing.
    api.add_reaction(INCIDENTS, &alert_ts, "white_check_mark")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM threads WHERE status = 'resolved'"
        )
        .await,
        0
    );
    // A person's ✅ on the alert does.
    slack
        .user_reacts(INCIDENTS, ONCALL_USER, &alert_ts, "white_check_mark")
        .unwrap();
    wait_count(
        &db.pool,
        "the resolution",
        "SELECT count(*) FROM incidents",
        1,
        Duration::from_secs(30),
    )
    .await;
    let (status, root_cause) = resolution(&db.pool).await;
    assert_eq!(status, "resolved");
    assert_eq!(root_cause, "(resolved by ✅)");
    bot.stop().await;
    cancel.cancel();
}
