//! The publish relay against the shared broker: every message once, keyed by thread, versioned
//! JSON; and two relay instances on one outbox, one of them dying mid-pass.

mod common;

use common::*;
use firstline_bot::relay::kafka::KafkaSink;
use firstline_bot::relay::outbox::{OutboxKind, OutboxRow};
use firstline_bot::relay::{self, RelayConfig, Sink};
use firstline_testkit::kafka::{count_by_key, read_topic};
use std::time::Duration;

#[tokio::test]
async fn recorded_messages_are_published_once_keyed_by_thread() {
    let db = firstline_testkit::test_db().await;
    let s = settings(&db.url);
    let bot = TestBot::start(&s, INGEST_AND_PUBLISH).await;
    // Two threads: an alert with two replies, and a separate top-level message.
    let parent = "1733140010.000100";
    let mut alert = message_event(
        "Ev07K0000001",
        "C07INCIDENT",
        parent,
        "",
        "[FIRING:1] HighErrorRate",
    );
    alert["event"]["subtype"] = "bot_message".into();
    alert["event"]["bot_id"] = "B07ALERTMGR".into();
    alert["event"]["username"] = "Alertmanager".into();
    alert["event"].as_object_mut().unwrap().remove("user");
    assert_eq!(
        post_signed(&bot.events_url, &alert.to_string(), 0, &[]).await,
        200
    );
    for (i, ts) in ["1733140011.000100", "1733140012.000100"]
        .iter()
        .enumerate()
    {
        let mut reply = message_event(
            &format!("Ev07K000001{i}"),
            "C07INCIDENT",
            ts,
            "U07ONCALL01",
            "on it",
        );
        reply["event"]["thread_ts"] = parent.into();
        assert_eq!(
            post_signed(&bot.events_url, &reply.to_string(), 0, &[]).await,
            200
        );
    }
    let other = message_event(
        "Ev07K0000002",
        "C07INCIDENT",
        "1733140013.000100",
        "U07ONCALL01",
        "lunch?",
    );
    assert_eq!(
        post_signed(&bot.events_url, &other.to_string(), 0, &[]).await,
        200
    );

    wait_outbox_drained(&db.pool, "publish", Duration::from_secs(60)).await;
    let records = read_topic(
        &s.kafka.brokers,
        &s.kafka.topic,
        |r| r.len() >= 4,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(records.len(), 4, "{records:?}");
    let by_key = count_by_key(&records);
    assert_eq!(
        by_key.get(&format!("T07F1RSTDEV/C07INCIDENT/{parent}")),
        Some(&3)
    );
    assert_eq!(
        by_key.get("T07F1RSTDEV/C07INCIDENT/1733140013.000100"),
        Some(&1)
    );
    // Per-thread order and the versioned schema.
    let thread: Vec<serde_json::Value> = records
        .iter()
        .filter(|(k, _)| k.ends_with(parent))
        .map(|(_, v)| serde_json::from_str(v).unwrap())
        .collect();
    assert!(thread.iter().all(|r| r["schema"] == "firstline.message.v2"));
    let kinds: Vec<&str> = thread.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["alert", "chatter", "chatter"]);
    let ids: Vec<i64> = thread
        .iter()
        .map(|r| r["message_id"].as_i64().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "thread order kept: {ids:?}"
    );
    bot.stop().await;
}

/// A relay instance that claims a batch and then hangs until it is killed.
struct Hangs;

impl Sink for Hangs {
    fn kind(&self) -> OutboxKind {
        OutboxKind::Publish
    }
    async fn deliver(&self, _rows: &[OutboxRow]) -> Vec<Result<(), String>> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_relay_killed_mid_pass_leaves_its_rows_to_another_instance() {
    let db = firstline_testkit::test_db().await;
    let s = settings(&db.url);
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    for i in 0..30 {
        let body = message_event(
            &format!("Ev07R{i:07}"),
            "C07INCIDENT",
            &format!("1733140200.{i:06}"),
            "U07ONCALL01",
            "x",
        )
        .to_string();
        assert_eq!(post_signed(&bot.events_url, &body, 0, &[]).await, 200);
    }
    let config = RelayConfig {
        batch: 10,
        poll: Duration::from_millis(50),
        backoff_initial: Duration::from_millis(100),
        backoff_max: Duration::from_secs(1),
    };
    // Instance A claims the first 10 rows and hangs mid-delivery.
    let pool_a = firstline_testkit::connect(&db.url).await;
    let config_a = config.clone();
    let a = tokio::spawn(async move { relay::pass(&pool_a, &Hangs, &config_a).await });
    firstline_testkit::wait_for("instance A to hold its claim", Duration::from_secs(10), || async {
        let locked: i64 = count(&db.pool, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'outbox' AND l.mode = 'RowShareLock' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())").await;
        (locked > 0).then_some(())
    })
    .await;
    // Instance B runs meanwhile: SKIP LOCKED lets it deliver the other 20.
    let cancel = tokio_util::sync::CancellationToken::new();
    let sink = KafkaSink::new(&s.kafka, Duration::from_secs(5)).unwrap();
    let b = tokio::spawn(relay::run(db.pool.clone(), sink, config, cancel.clone()));
    wait_count(
        &db.pool,
        "instance B to deliver the unlocked rows",
        "SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL",
        20,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM outbox WHERE sent_at IS NULL"
        )
        .await,
        10
    );
    // A is killed: its transaction dies with it, its rows unlock, B finishes the outbox.
    a.abort();
    let _ = a.await;
    wait_outbox_drained(&db.pool, "publish", Duration::from_secs(60)).await;
    cancel.cancel();
    b.await.unwrap();
    let records = read_topic(
        &s.kafka.brokers,
        &s.kafka.topic,
        |r| r.len() >= 30,
        Duration::from_secs(30),
    )
    .await;
    let by_key = count_by_key(&records);
    assert_eq!(by_key.len(), 30);
    assert!(
        by_key.values().all(|n| *n == 1),
        "each message exactly once: {by_key:?}"
    );
    bot.stop().await;
}

#[tokio::test]
async fn a_payload_that_is_not_a_topic_record_fails_alone_with_its_reason() {
    let db = firstline_testkit::test_db().await;
    let s = settings(&db.url);
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    let body = message_event(
        "Ev07GOOD0001",
        "C07INCIDENT",
        "1733140300.000100",
        "U07ONCALL01",
        "fine",
    )
    .to_string();
    assert_eq!(post_signed(&bot.events_url, &body, 0, &[]).await, 200);
    bot.stop().await;
    // A row no ingest statement would write: garbage in the outbox must not block the rest.
    sqlx::query(
        "INSERT INTO outbox (kind, thread_id, message_id, payload)
         SELECT 'publish', thread_id, message_id + 1000, '{\"not\": \"a record\"}' FROM outbox",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let sink = KafkaSink::new(&s.kafka, Duration::from_secs(10)).unwrap();
    let config = RelayConfig {
        batch: 10,
        poll: Duration::from_millis(50),
        backoff_initial: Duration::from_secs(60),
        backoff_max: Duration::from_secs(60),
    };
    assert_eq!(relay::pass(&db.pool, &sink, &config).await.unwrap(), 2);
    let rows: Vec<(bool, i32, Option<String>)> =
        sqlx::query_as("SELECT sent_at IS NOT NULL, attempts, last_error FROM outbox ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(rows[0], (true, 1, None), "the good row is delivered");
    let (sent, attempts, error) = &rows[1];
    assert!(!sent && *attempts == 1, "{rows:?}");
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("is not a topic record")),
        "{error:?}"
    );
    let records = read_topic(
        &s.kafka.brokers,
        &s.kafka.topic,
        |r| !r.is_empty(),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(records.len(), 1, "{records:?}");
}
