//! The Slack stand-in on a real socket, driven through the bot's Web API client and through the
//! bot itself: Events API delivery (signed, with app_mention + message for one mention), the 👀
//! reaction, the bot's own echo, Slack-shaped errors and 429 + Retry-After, Socket Mode.

mod common;

use common::*;
use firstline_bot::Parts;
use firstline_bot::slack::{SlackApi, SlackApiError};
use firstline_bot::standin::state::{Failure, INCIDENTS, ONCALL_USER};
use firstline_bot::standin::{StandIn, StandInConfig};
use firstline_config::{SecretString, SlackMode};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const INGEST_ONLY: Parts = Parts {
    ingest: true,
    publish: false,
    wake: false,
};

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

fn api(standin: &StandIn) -> SlackApi {
    SlackApi::new(
        &standin.api_url(),
        &SecretString::new("xoxb-standin-token"),
        Duration::from_secs(5),
    )
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
    let posts: Vec<u16> = slack
        .calls()
        .iter()
        .filter(|c| c.method == "chat.postMessage")
        .map(|c| c.status)
        .collect();
    assert_eq!(posts, [429, 200]);
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
    firstline_testkit::wait_for("the alert", Duration::from_secs(10), || async {
        (count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE kind = 'alert'",
        )
        .await
            == 1)
            .then_some(())
    })
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
    firstline_testkit::wait_for("the 👀 reaction", Duration::from_secs(10), || async {
        let thread = slack.workspace().thread(INCIDENTS, &alert_ts)?;
        thread
            .iter()
            .any(|m| m.ts == ts && m.reactions.contains(&"eyes".to_string()))
            .then_some(())
    })
    .await;
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
    firstline_testkit::wait_for("the echo", Duration::from_secs(10), || async {
        (count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE kind = 'bot_echo'",
        )
        .await
            == 1)
            .then_some(())
    })
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
    firstline_testkit::wait_for("the socket connection", Duration::from_secs(15), || async {
        slack
            .calls()
            .iter()
            .any(|c| c.method == "apps.connections.open")
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ts = slack.user_says(
        INCIDENTS,
        ONCALL_USER,
        "<@U07F1RSTBOT> over the socket",
        None,
    );
    firstline_testkit::wait_for(
        "the mention over Socket Mode",
        Duration::from_secs(15),
        || async {
            (count(
                &db.pool,
                "SELECT count(*) FROM messages WHERE kind = 'mention'",
            )
            .await
                == 1)
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    let stored: String = sqlx::query_scalar("SELECT ts FROM messages")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, ts);
    bot.stop().await;
    cancel.cancel();
}
