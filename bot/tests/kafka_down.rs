//! Kafka broker stopped for 30 s while 1,000 events arrive: every event is acked, everything is
//! published after the broker returns, exactly once per message (counted by key).
//!
//! Uses a private broker (same port and data directory across the restart) so the shared one is
//! never stopped.

mod common;

use common::*;
use firstline_testkit::kafka::{count_by_key, read_topic};
use firstline_testkit::private::PrivateServer;
use std::time::{Duration, Instant};

#[tokio::test]
async fn kafka_down_for_30_s_while_1000_events_arrive_loses_and_duplicates_nothing() {
    let _ = firstline_testkit::stack();
    let private = PrivateServer::new("test broker");
    let port = private.port;
    let broker = private.start_broker().await;

    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.kafka.brokers = format!("127.0.0.1:{port}");
    // Long enough that a broker busy catching up still confirms within it: a confirmation that
    // comes after the deadline is sent again, and would show as a duplicate here.
    s.bot.relay_call_timeout_secs = 10;
    let bot = TestBot::start(&s, INGEST_AND_PUBLISH).await;
    let send = |i: usize| {
        let url = bot.events_url.clone();
        async move {
            let body = message_event(
                &format!("Ev07D{i:07}"),
                "C07INCIDENT",
                &format!("1733141000.{i:06}"),
                "U07ONCALL01",
                "event",
            )
            .to_string();
            post_signed(&url, &body, 0, &[]).await
        }
    };
    // Broker up: the path works.
    for i in 0..10 {
        assert_eq!(send(i).await, 200);
    }
    wait_outbox_drained(&db.pool, "publish", Duration::from_secs(60)).await;

    broker.stop(Duration::from_secs(5)).await;
    let stopped = Instant::now();
    let mut statuses = Vec::new();
    for chunk in (10..1010).collect::<Vec<_>>().chunks(16) {
        let acks = futures::future::join_all(chunk.iter().map(|i| send(*i))).await;
        statuses.extend(acks);
    }
    assert!(
        statuses.iter().all(|s| *s == 200),
        "every event acked while Kafka is down"
    );
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1010);
    let pending = count(
        &db.pool,
        "SELECT count(*) FROM outbox WHERE sent_at IS NULL",
    )
    .await;
    assert!(
        pending >= 990,
        "nothing can be published while the broker is down ({pending} pending)"
    );
    if let Some(rest) = Duration::from_secs(30).checked_sub(stopped.elapsed()) {
        tokio::time::sleep(rest).await;
    }

    let broker = private.start_broker().await;
    wait_outbox_drained(&db.pool, "publish", Duration::from_secs(180)).await;
    let records = read_topic(
        &s.kafka.brokers,
        &s.kafka.topic,
        |r| count_by_key(r).len() >= 1010,
        Duration::from_secs(60),
    )
    .await;
    let by_key = count_by_key(&records);
    assert_eq!(by_key.len(), 1010, "every message published");
    let duplicated: Vec<_> = by_key.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        duplicated.is_empty(),
        "exactly once per message: {duplicated:?}"
    );
    bot.stop().await;
    broker.stop(Duration::from_secs(5)).await;
}
