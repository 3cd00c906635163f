//! The Slack stand-in on a real socket, driven through the bot's Web API client and through the
//! bot itself: Events API delivery (signed, with app_mention + message for one mention), the 👀
//! reaction, the bot's own echo, Slack-shaped errors and 429 + Retry-After, Socket Mode; Block
//! Kit + message metadata through post, update, replies and the echo; reactions add/remove; ✅
//! on an alert resolving its thread end to end.

mod common;

use common::*;
use firstline_bot::slack::{OutgoingMessage, SlackApi, SlackApiError};
use firstline_bot::standin::state::{BOT_USER_ID, Failure, INCIDENTS, Message, ONCALL_USER};
use firstline_bot::standin::{StandIn, StandInConfig};
use firstline_config::{SecretString, SlackMode};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

async fn standin(cancel: &CancellationToken) -> StandIn {
    StandIn::start(
        StandInConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            signing_secret: SECRET.into(),
            events_url: None,
            retry_delay: Duration::from_millis(200),
        },
        cancel.clone(),
    )
    .await
    .expect("stand-in")
}

/// The HTTP statuses of the stand-in's answers to `method`, in order.
fn statuses(standin: &StandIn, method: &str) -> Vec<u16> {
    standin
        .calls()
        .iter()
        .filter(|c| c.method == method)
        .map(|c| c.status)
        .collect()
}

fn api(standin: &StandIn) -> SlackApi {
    SlackApi::new(
        &standin.api_url(),
        &SecretString::new("xoxb-standin-token"),
        Duration::from_secs(5),
    )
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
async fn the_web_api_client_posts_updates_reacts_and_reads_threads() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let api = api(&slack);
    let me = api.auth_test().await.unwrap();
    assert_eq!(me.user_id, "U07F1RSTBOT");
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "checkout is down", None);
    let reply = api
        .post_in_thread(INCIDENTS, &parent, "looking into it")
        .await
        .unwrap();
    api.update(INCIDENTS, &reply, "found it: OOMKilled")
        .await
        .unwrap();
    api.add_reaction(INCIDENTS, &parent, "eyes").await.unwrap();
    api.add_reaction(INCIDENTS, &parent, "eyes")
        .await
        .expect("already_reacted is success");
    let thread = api.thread_replies(INCIDENTS, &parent, 100).await.unwrap();
    assert_eq!(thread.len(), 2);
    assert_eq!(thread[1].text, "found it: OOMKilled");
    assert_eq!(thread[1].bot_id.as_deref(), Some("B07F1RSTBOT"));
    // Long text is split into ≤ 3,000-char sections, ≤ 50 blocks.
    let long = "line of evidence\n".repeat(1000);
    api.post_in_thread(INCIDENTS, &parent, &long).await.unwrap();
    let call = slack
        .calls()
        .into_iter()
        .rfind(|c| c.method == "chat.postMessage")
        .unwrap();
    let blocks = call.params["blocks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(blocks.len() > 1 && blocks.len() <= 50);
    assert!(
        blocks
            .iter()
            .all(|b| b["text"]["text"].as_str().unwrap().chars().count() <= 3000)
    );
    // Slack-shaped errors.
    let err = api
        .post_in_thread("C07NOSUCHCH", &parent, "x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, SlackApiError::Api { ref code, .. } if code == "channel_not_found"),
        "{err}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn rate_limits_are_honoured_and_posts_are_paced_per_channel() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    slack.fail_next(
        "chat.postMessage",
        Failure::RateLimited {
            retry_after_secs: 1,
        },
    );
    let started = Instant::now();
    api.post_in_thread(INCIDENTS, &parent, "after a 429")
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited Retry-After"
    );
    assert_eq!(statuses(&slack, "chat.postMessage"), [429, 200]);
    // Pacing: three posts to one channel take ≥ 2 s; the 429 pushed the channel back too.
    let started = Instant::now();
    for i in 0..3 {
        api.post_in_thread(INCIDENTS, &parent, &format!("paced {i}"))
            .await
            .unwrap();
    }
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Rate limited beyond the retries: an error, not a hang.
    for _ in 0..4 {
        slack.fail_next(
            "reactions.add",
            Failure::RateLimited {
                retry_after_secs: 0,
            },
        );
    }
    let err = api
        .add_reaction(INCIDENTS, &parent, "eyes")
        .await
        .unwrap_err();
    assert!(matches!(err, SlackApiError::RateLimited { .. }), "{err}");
    cancel.cancel();
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
    api.post_in_thread(INCIDENTS, &alert_ts, "<@U07F1RSTBOT> note to self")
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
async fn post_message_carries_blocks_and_metadata_to_replies_and_updates_replace_blocks() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "checkout is down", None);
    let ts = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            thread_ts: Some(parent.clone()),
            text: "checkout is crash-looping: memory limit too low".into(),
            blocks: Some(report_blocks()),
            metadata: Some(json!({"event_type": "firstline_round",
                "event_payload": {"round": 1, "grounded": true, "thread": "T/C/1"}})),
        })
        .await
        .unwrap();
    let thread = api.thread_replies(INCIDENTS, &parent, 100).await.unwrap();
    assert_eq!(thread.len(), 2);
    assert_eq!(thread[0].metadata, None);
    let reply = &thread[1];
    assert_eq!(reply.ts, ts);
    assert_eq!(reply.user.as_deref(), Some(BOT_USER_ID));
    assert_eq!(
        reply.text,
        "checkout is crash-looping: memory limit too low"
    );
    assert_eq!(
        reply.metadata,
        Some(json!({"event_type": "firstline_round",
            "event_payload": {"round": "1", "grounded": "true", "thread": "T/C/1"}}))
    );
    let replies_call = slack
        .calls()
        .into_iter()
        .rfind(|c| c.method == "conversations.replies")
        .unwrap();
    assert_eq!(replies_call.params["include_all_metadata"], "true");
    // Without include_all_metadata the stand-in, like Slack, leaves metadata out.
    let plain = http_client()
        .get(&format!(
            "{}/conversations.replies?token=xoxb-t&channel={INCIDENTS}&ts={parent}",
            slack.api_url()
        ))
        .send()
        .await;
    assert!(
        plain.body.contains("\"blocks\"") && !plain.body.contains("firstline_round"),
        "{}",
        plain.body
    );
    let stored = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(stored[1].blocks, Some(report_blocks()));
    // The HTML view shows the blocks, not only the fallback.
    let page = http_client().get(&slack.url()).send().await;
    assert!(
        page.body.contains("checkout is crash-looping</div>"),
        "header shown"
    );
    assert!(
        page.body.contains("round 1 · grounded")
            && page.body.contains("[metadata: firstline_round]")
    );
    // Update: new blocks replace the old; no blocks keeps them.
    let updated =
        json!([{"type": "section", "text": {"type": "mrkdwn", "text": "resolved: rolled back"}}]);
    api.update_message(
        INCIDENTS,
        &ts,
        "resolved: rolled back",
        Some(updated.clone()),
    )
    .await
    .unwrap();
    let stored = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(stored[1].blocks, Some(updated.clone()));
    assert!(stored[1].edited);
    api.update_message(INCIDENTS, &ts, "text only", None)
        .await
        .unwrap();
    let stored = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(stored[1].text, "text only");
    assert_eq!(stored[1].blocks, Some(updated));
    // Caller blocks over Slack's limits are cut, not rejected.
    let many: Vec<_> = (0..80)
        .map(|i| json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("{i} {}", "x".repeat(4000))}}))
        .collect();
    api.post_message(&OutgoingMessage {
        channel: INCIDENTS.into(),
        thread_ts: Some(parent.clone()),
        text: "z".repeat(50_000),
        blocks: Some(json!(many)),
        metadata: None,
    })
    .await
    .unwrap();
    let call = slack
        .calls()
        .into_iter()
        .rfind(|c| c.method == "chat.postMessage")
        .unwrap();
    let blocks = call.params["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 50);
    assert!(
        blocks[..49]
            .iter()
            .all(|b| b["text"]["text"].as_str().unwrap().chars().count() <= 3000)
    );
    assert_eq!(
        call.params["text"].as_str().unwrap().chars().count(),
        40_000
    );
    // A malformed request is refused before it is sent.
    let err = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            text: "x".into(),
            blocks: Some(json!({"type": "section"})),
            ..OutgoingMessage::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, SlackApiError::Invalid { .. }), "{err}");
    cancel.cancel();
}

#[tokio::test]
async fn thread_replies_follow_the_cursor_within_the_limit() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "parent", None);
    for i in 0..450 {
        slack.user_says(INCIDENTS, ONCALL_USER, &format!("reply {i}"), Some(&parent));
    }
    let all = api.thread_replies(INCIDENTS, &parent, 1000).await.unwrap();
    assert_eq!(all.len(), 451);
    assert_eq!(all[450].text, "reply 449");
    let pages = statuses(&slack, "conversations.replies").len();
    assert_eq!(pages, 3, "pages of 200");
    let some = api.thread_replies(INCIDENTS, &parent, 250).await.unwrap();
    assert_eq!(some.len(), 250);
    cancel.cancel();
}

#[tokio::test]
async fn reactions_add_and_remove_are_idempotent() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    let reactions = |slack: &StandIn| {
        slack.workspace().thread(INCIDENTS, &parent).unwrap()[0]
            .reactions
            .iter()
            .map(|r| (r.name.clone(), r.user.clone()))
            .collect::<Vec<_>>()
    };
    api.add_reaction(INCIDENTS, &parent, "eyes").await.unwrap();
    api.add_reaction(INCIDENTS, &parent, "eyes")
        .await
        .expect("already_reacted is success");
    slack
        .user_reacts(INCIDENTS, ONCALL_USER, &parent, "eyes")
        .unwrap();
    assert_eq!(
        reactions(&slack),
        [
            ("eyes".to_string(), BOT_USER_ID.to_string()),
            ("eyes".to_string(), ONCALL_USER.to_string())
        ]
    );
    api.remove_reaction(INCIDENTS, &parent, "eyes")
        .await
        .unwrap();
    api.remove_reaction(INCIDENTS, &parent, "eyes")
        .await
        .expect("no_reaction is success");
    assert_eq!(
        reactions(&slack),
        [("eyes".to_string(), ONCALL_USER.to_string())],
        "only ours removed"
    );
    let statuses: Vec<String> = slack
        .calls()
        .iter()
        .filter(|c| c.method.starts_with("reactions."))
        .map(|c| c.method.clone())
        .collect();
    assert_eq!(
        statuses,
        [
            "reactions.add",
            "reactions.add",
            "reactions.remove",
            "reactions.remove"
        ]
    );
    // Other errors still are errors.
    let err = api
        .remove_reaction(INCIDENTS, "1.000000", "eyes")
        .await
        .unwrap_err();
    assert!(
        matches!(err, SlackApiError::Api { ref code, .. } if code == "message_not_found"),
        "{err}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn post_message_waits_out_a_429() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    slack.fail_next(
        "chat.postMessage",
        Failure::RateLimited {
            retry_after_secs: 2,
        },
    );
    let started = Instant::now();
    let ts = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            thread_ts: Some(parent.clone()),
            text: "after a 429".into(),
            blocks: Some(report_blocks()),
            metadata: Some(
                json!({"event_type": "firstline_round", "event_payload": {"round": "1"}}),
            ),
        })
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(statuses(&slack, "chat.postMessage"), [429, 200]);
    let thread = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(thread.len(), 2, "posted once");
    assert_eq!(thread[1].ts, ts);
    cancel.cancel();
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
