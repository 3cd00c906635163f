//! The Events API ingest path against a real bot on a real socket and a real database:
//! verification, dedupe, retries, malformed and unknown input, limits, Postgres stopped (a private
//! server, really stopped and started again).

mod common;

use common::*;
use firstline_testkit::private::PrivateServer;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn url_verification_is_answered_with_the_challenge() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let body = json!({"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}).to_string();
    let ts = firstline_slack::signing::now();
    let mut request = http_client().post(&bot.events_url).body(body.clone());
    for (k, v) in firstline_slack::signing::headers(SECRET, ts, body.as_bytes()) {
        request = request.header(k, v);
    }
    let response = request.send().await;
    assert_eq!(response.status(), 200);
    assert!(
        response
            .body
            .contains("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"),
        "{}",
        response.body
    );
    bot.stop().await;
}

#[tokio::test]
async fn a_message_is_stored_once_with_outbox_rows_and_retries_are_no_ops() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let body = message_event(
        "Ev07AAAAAAA1",
        "C07INCIDENT",
        "1733140000.000100",
        "U07ONCALL01",
        "pods are restarting",
    )
    .to_string();
    assert_eq!(post_signed(&bot.events_url, &body, 0, &[]).await, 200);
    for retry in ["1", "2", "3"] {
        let headers = [
            ("x-slack-retry-num", retry),
            ("x-slack-retry-reason", "http_timeout"),
        ];
        assert_eq!(post_signed(&bot.events_url, &body, 0, &headers).await, 200);
    }
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    assert_eq!(count(&db.pool, "SELECT count(*) FROM threads").await, 1);
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM outbox WHERE kind = 'publish'"
        )
        .await,
        1
    );
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        0,
        "chatter never wakes"
    );
    let (kind, raw_event_id): (String, String) =
        sqlx::query_as("SELECT kind, raw->>'event_id' FROM messages")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(kind, "chatter");
    assert_eq!(raw_event_id, "Ev07AAAAAAA1", "the raw payload is stored");
    bot.stop().await;
}

#[tokio::test]
async fn app_mention_and_message_for_one_mention_count_once_and_wake_once() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let text = "<@U07F1RSTBOT> what changed?";
    let message = message_event(
        "Ev07MENTION1",
        "C07INCIDENT",
        "1733140001.000200",
        "U07ONCALL01",
        text,
    );
    let mut mention = message.clone();
    mention["event_id"] = json!("Ev07MENTION2");
    mention["event"]["type"] = json!("app_mention");
    // Either order: app_mention first here, message second.
    assert_eq!(
        post_signed(&bot.events_url, &mention.to_string(), 0, &[]).await,
        200
    );
    assert_eq!(
        post_signed(&bot.events_url, &message.to_string(), 0, &[]).await,
        200
    );
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE kind = 'mention'"
        )
        .await,
        1
    );
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        1
    );
    bot.stop().await;
}

#[tokio::test]
async fn bad_or_missing_signatures_and_stale_timestamps_are_rejected_and_store_nothing() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let body = message_event(
        "Ev07SIGNED01",
        "C07INCIDENT",
        "1733140002.000100",
        "U07ONCALL01",
        "hi",
    )
    .to_string();
    // Wrong secret.
    let ts = firstline_slack::signing::now();
    let mut request = http_client().post(&bot.events_url).body(body.clone());
    for (k, v) in firstline_slack::signing::headers("not-the-secret", ts, body.as_bytes()) {
        request = request.header(k, v);
    }
    assert_eq!(request.send().await.status(), 401);
    // Signed body, tampered in transit.
    let mut request = http_client()
        .post(&bot.events_url)
        .body(body.replace("hi", "ho"));
    for (k, v) in firstline_slack::signing::headers(SECRET, ts, body.as_bytes()) {
        request = request.header(k, v);
    }
    assert_eq!(request.send().await.status(), 401);
    // No signature at all.
    assert_eq!(
        http_client()
            .post(&bot.events_url)
            .body(body.clone())
            .send()
            .await
            .status(),
        401
    );
    // Outside the 5-minute window, both ways.
    assert_eq!(post_signed(&bot.events_url, &body, -301, &[]).await, 401);
    assert_eq!(post_signed(&bot.events_url, &body, 301, &[]).await, 401);
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM messages").await,
        0,
        "nothing stored"
    );
    // Inside it, both ways (the second is a duplicate of the first).
    assert_eq!(post_signed(&bot.events_url, &body, -299, &[]).await, 200);
    assert_eq!(post_signed(&bot.events_url, &body, 299, &[]).await, 200);
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    bot.stop().await;
}

#[tokio::test]
async fn bad_json_and_untyped_envelopes_are_400_unknown_types_are_acked_big_bodies_are_413() {
    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.bot.body_limit_bytes = 4096;
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    assert_eq!(
        post_signed(&bot.events_url, "{\"type\": \"event_callback\", ", 0, &[]).await,
        400
    );
    assert_eq!(post_signed(&bot.events_url, "not json", 0, &[]).await, 400);
    // Envelopes: a missing `type`, and a challenge without its challenge, are 400; Slack's
    // rate-limit notice and an envelope type we do not know are acknowledged (and not stored).
    for envelope in [
        json!({"token": "x", "event": {"type": "message"}}),
        json!({"token": "x", "type": 7}),
        json!({"token": "x", "type": "url_verification"}),
    ] {
        assert_eq!(
            post_signed(&bot.events_url, &envelope.to_string(), 0, &[]).await,
            400,
            "{envelope}"
        );
    }
    for envelope in [
        json!({"token": "x", "type": "app_rate_limited", "team_id": "T07F1RSTDEV",
            "minute_rate_limited": 1518467820, "api_app_id": "A07F1RSTAPP"}),
        json!({"token": "x", "type": "brand_new_envelope"}),
    ] {
        assert_eq!(
            post_signed(&bot.events_url, &envelope.to_string(), 0, &[]).await,
            200,
            "{envelope}"
        );
    }
    let unknown = json!({"token": "x", "team_id": "T07F1RSTDEV", "api_app_id": "A07F1RSTAPP", "type": "event_callback",
        "event_id": "Ev07UNKNOWN1", "event_time": 1733140000,
        "event": {"type": "brand_new_event_type", "whatever": {"nested": true}}});
    assert_eq!(
        post_signed(&bot.events_url, &unknown.to_string(), 0, &[]).await,
        200
    );
    let reaction = json!({"token": "x", "team_id": "T07F1RSTDEV", "api_app_id": "A07F1RSTAPP", "type": "event_callback",
        "event_id": "Ev07REACTION", "event_time": 1733140000,
        "event": {"type": "reaction_added", "user": "U07ONCALL01", "reaction": "eyes", "event_ts": "1733140000.000300",
                  "item": {"type": "message", "channel": "C07INCIDENT", "ts": "1733140000.000100"}}});
    assert_eq!(
        post_signed(&bot.events_url, &reaction.to_string(), 0, &[]).await,
        200
    );
    let big = message_event(
        "Ev07BIGBODY1",
        "C07INCIDENT",
        "1733140003.000100",
        "U07ONCALL01",
        &"x".repeat(5000),
    )
    .to_string();
    assert_eq!(post_signed(&bot.events_url, &big, 0, &[]).await, 413);
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 0);
    bot.stop().await;
}

#[tokio::test]
async fn concurrent_deliveries_of_many_events_store_each_exactly_once() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let mut tasks = Vec::new();
    for i in 0..100 {
        let url = bot.events_url.clone();
        tasks.push(tokio::spawn(async move {
            let body = message_event(
                &format!("Ev07C{i:07}"),
                "C07INCIDENT",
                &format!("1733140100.{i:06}"),
                "U07ONCALL01",
                "x",
            )
            .to_string();
            // Every event delivered twice, concurrently; a non-2xx (deadline under load) is
            // retried as Slack would, up to 3 times.
            let (a, b) = tokio::join!(
                post_signed(&url, &body, 0, &[]),
                post_signed(&url, &body, 0, &[("x-slack-retry-num", "1")])
            );
            let mut acked = a == 200 || b == 200;
            for retry in ["2", "3", "4"] {
                if acked {
                    break;
                }
                acked = post_signed(&url, &body, 0, &[("x-slack-retry-num", retry)]).await == 200;
            }
            acked
        }));
    }
    for task in tasks {
        assert!(
            task.await.unwrap(),
            "every event acked after at most 3 retries"
        );
    }
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 100);
    assert_eq!(count(&db.pool, "SELECT count(*) FROM outbox").await, 100);
    bot.stop().await;
}

#[tokio::test]
async fn postgres_stopped_gives_non_2xx_and_the_retry_after_it_returns_stores_once() {
    let _ = firstline_testkit::stack();
    let private = PrivateServer::new("test postgres");
    let port = private.port;
    let server = private.start_postgres().await;
    let url = firstline_stack::postgres::url(port, "firstline");
    firstline_store::ensure_database(
        &firstline_stack::postgres::url(port, "postgres"),
        "firstline",
        None,
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    let pool = firstline_testkit::connect(&url).await;
    firstline_store::migrate(&pool, &url).await.unwrap();
    pool.close().await;

    let mut s = settings(&url);
    s.database.connect_timeout_secs = 1;
    s.bot.ingest_timeout_ms = 1500;
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    let event = |id: &str, ts: &str| {
        message_event(id, "C07INCIDENT", ts, "U07ONCALL01", "<@U07F1RSTBOT> help").to_string()
    };
    let before = event("Ev07PGUP0001", "1733140004.000100");
    acked_within(&bot.events_url, &before, Duration::from_secs(30)).await;

    server.stop(Duration::from_secs(10)).await;
    let body = event("Ev07PGDOWN01", "1733140005.000100");
    for retry in ["", "1"] {
        let headers: &[(&str, &str)] = match retry {
            "" => &[],
            n => &[("x-slack-retry-num", n)],
        };
        let status = post_signed(&bot.events_url, &body, 0, headers).await;
        assert!(
            status >= 500,
            "Postgres stopped must not be acked, got {status}"
        );
    }

    let server = private.start_postgres().await;
    acked_within(&bot.events_url, &body, Duration::from_secs(30)).await;
    let pool = firstline_testkit::connect(&url).await;
    assert_eq!(count(&pool, "SELECT count(*) FROM messages").await, 2);
    assert_eq!(
        count(
            &pool,
            "SELECT count(*) FROM outbox o JOIN messages m ON m.id = o.message_id
             WHERE m.event_id = 'Ev07PGDOWN01'"
        )
        .await,
        2,
        "publish + wake, once"
    );
    pool.close().await;
    bot.stop().await;
    server.stop(Duration::from_secs(10)).await;
}

/// Redelivers `body` as Slack does (each retry numbered) until it is acked, for at most `timeout`:
/// a pool reconnecting to a restarted PostgreSQL may refuse the first few.
async fn acked_within(url: &str, body: &str, timeout: Duration) {
    let mut attempt = 0u32;
    firstline_testkit::wait_for("the delivery to be acked", timeout, || {
        attempt += 1;
        let retry = attempt.to_string();
        async move {
            let headers: &[(&str, &str)] = if attempt == 1 {
                &[]
            } else {
                &[("x-slack-retry-num", &retry)]
            };
            (post_signed(url, body, 0, headers).await == 200).then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn a_reply_wakes_a_thread_awaiting_an_answer_once_and_other_chatter_never() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let thread_ts = "1733140100.000100";
    let reply = |event: &str, ts: &str, text: &str| {
        let mut event = message_event(event, "C07INCIDENT", ts, "U07ONCALL01", text);
        event["event"]["thread_ts"] = json!(thread_ts);
        event.to_string()
    };
    let wakes = || count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'");
    // The thread's first message, then a reply while nothing was asked: chatter.
    let opener = message_event(
        "Ev07ASK00001",
        "C07INCIDENT",
        thread_ts,
        "U07ONCALL01",
        "checkout is slow",
    );
    assert_eq!(
        post_signed(&bot.events_url, &opener.to_string(), 0, &[]).await,
        200
    );
    assert_eq!(
        post_signed(
            &bot.events_url,
            &reply("Ev07ASK00002", "1733140101.000100", "hm"),
            0,
            &[]
        )
        .await,
        200
    );
    assert_eq!(wakes().await, 0, "no question pending: a reply is chatter");

    // The latest round asked (what `commit_round` records).
    sqlx::query("UPDATE threads SET awaiting_answer = true WHERE thread_ts = $1")
        .bind(thread_ts)
        .execute(&db.pool)
        .await
        .unwrap();
    let answer = reply("Ev07ASK00003", "1733140102.000100", "it's in payments");
    assert_eq!(post_signed(&bot.events_url, &answer, 0, &[]).await, 200);
    assert_eq!(
        wakes().await,
        1,
        "the answer wakes the round without a mention"
    );
    let woken: String =
        sqlx::query_scalar("SELECT payload->'mention'->>'text' FROM outbox WHERE kind = 'wake'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(woken, "it's in payments");

    // Redelivered, and a second reply before the next round asks again: no more wake-ups.
    assert_eq!(post_signed(&bot.events_url, &answer, 0, &[]).await, 200);
    assert_eq!(
        post_signed(
            &bot.events_url,
            &reply("Ev07ASK00004", "1733140103.000100", "sorry, payments-eu"),
            0,
            &[]
        )
        .await,
        200
    );
    assert_eq!(wakes().await, 1, "one answer wakes one round");
    let awaiting: bool =
        sqlx::query_scalar("SELECT awaiting_answer FROM threads WHERE thread_ts = $1")
            .bind(thread_ts)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(!awaiting, "the first answer cleared the flag");
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 4);
    bot.stop().await;
}
