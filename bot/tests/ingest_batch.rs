//! Group commit against a real database: a batch is one transaction that records what is new
//! and skips repeats; the writer batches what queues while a commit is in flight; a batch the
//! database rejects is split so one bad message cannot fail its neighbours; and a NUL in a
//! payload (which Postgres refuses) does not make a message unrecordable.

mod common;

use common::*;
use firstline_bot::classify::Classifier;
use firstline_bot::ingest::writer::{WriteError, Writer, WriterConfig};
use firstline_bot::ingest::{Recorded, Rules, record, record_batch};
use firstline_bot::message::Incoming;
use firstline_config::Settings;
use serde_json::{Value, json};
use std::time::Duration;

fn classify(payload: &Value) -> Incoming {
    Classifier::new(BOT_USER, &Settings::default().bot.alert_rules)
        .classify(payload)
        .expect("a message event")
}

fn alert(event_id: &str, ts: &str, text: &str) -> Incoming {
    classify(&json!({
        "type": "event_callback", "team_id": "T07F1RSTDEV", "event_id": event_id,
        "event": {"type": "message", "subtype": "bot_message", "channel": "C07INCIDENT",
                  "bot_id": "B07ALERTMGR", "username": "Alertmanager", "text": text, "ts": ts}
    }))
}

fn reply(event_id: &str, event_type: &str, ts: &str, thread_ts: &str, text: &str) -> Incoming {
    classify(&json!({
        "type": "event_callback", "team_id": "T07F1RSTDEV", "event_id": event_id,
        "event": {"type": event_type, "channel": "C07INCIDENT", "user": "U07ONCALL01",
                  "text": text, "ts": ts, "thread_ts": thread_ts}
    }))
}

fn person(event_id: &str, ts: &str, text: &str) -> Incoming {
    classify(&message_event(
        event_id,
        "C07INCIDENT",
        ts,
        "U07ONCALL01",
        text,
    ))
}

/// Distinct transaction ids among the messages with these texts.
async fn transactions_of(pool: &sqlx::PgPool, texts: &[&str]) -> i64 {
    sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM messages WHERE text = ANY($1)")
        .bind(texts)
        .fetch_one(pool)
        .await
        .expect("counting transactions")
}

#[tokio::test]
async fn a_batch_records_what_is_new_in_one_transaction_and_skips_repeats() {
    let db = firstline_testkit::test_db().await;
    let earlier = person("Ev07EARLIER1", "1733140000.000100", "already here");
    assert!(matches!(
        record(&db.pool, &earlier, &Rules::new(BOT_USER))
            .await
            .unwrap(),
        Recorded::Stored { wakes: false, .. }
    ));

    let firing = alert(
        "Ev07ALERT001",
        "1733140001.000100",
        "[FIRING:1] KubePodCrashLooping",
    );
    let chatter = reply(
        "Ev07CHAT0001",
        "message",
        "1733140002.000100",
        "1733140001.000100",
        "looking",
    );
    let mention_text = format!("<@{BOT_USER}> what changed?");
    let as_app_mention = reply(
        "Ev07MENTION1",
        "app_mention",
        "1733140003.000100",
        "1733140001.000100",
        &mention_text,
    );
    let as_message = reply(
        "Ev07MENTION2",
        "message",
        "1733140003.000100",
        "1733140001.000100",
        &mention_text,
    );
    let retry_of_earlier = earlier.clone();
    let other_thread = person("Ev07OTHER001", "1733140004.000100", "unrelated");

    let batch = [
        &chatter,
        &firing,
        &as_app_mention,
        &retry_of_earlier,
        &as_message,
        &other_thread,
    ];
    let recorded = record_batch(&db.pool, &batch, &Rules::new(BOT_USER))
        .await
        .unwrap();

    let wakes: Vec<Option<bool>> = recorded
        .iter()
        .map(|r| match r {
            Recorded::Stored { wakes, .. } => Some(*wakes),
            Recorded::Duplicate => None,
        })
        .collect();
    assert_eq!(
        wakes,
        [Some(false), Some(true), Some(true), None, None, Some(false)],
        "chatter, alert and the mention's first event stored (alert and mention wake); the retry \
         and the mention's second event are repeats"
    );
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 5);
    assert_eq!(count(&db.pool, "SELECT count(*) FROM threads").await, 3);
    assert_eq!(
        transactions_of(
            &db.pool,
            &[
                "[FIRING:1] KubePodCrashLooping",
                "looking",
                &mention_text,
                "unrelated"
            ]
        )
        .await,
        1,
        "the batch is one transaction"
    );
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM messages m JOIN threads t ON t.id = m.thread_id
             WHERE t.thread_ts = '1733140001.000100'"
        )
        .await,
        3,
        "the replies key to the alert's thread, whatever their place in the batch"
    );
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM outbox WHERE kind = 'publish'"
        )
        .await,
        5
    );
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM outbox o JOIN messages m ON m.id = o.message_id
             WHERE o.kind = 'wake' AND m.kind IN ('alert', 'mention')"
        )
        .await,
        2
    );
    let message_ids_in_payloads = count(
        &db.pool,
        "SELECT count(*) FROM outbox WHERE (payload->>'message_id')::bigint = message_id
         AND kind = 'publish'",
    )
    .await;
    assert_eq!(
        message_ids_in_payloads, 5,
        "each Kafka record names its own row"
    );

    let again = record_batch(&db.pool, &batch, &Rules::new(BOT_USER))
        .await
        .unwrap();
    assert!(again.iter().all(|r| *r == Recorded::Duplicate));
    assert_eq!(count(&db.pool, "SELECT count(*) FROM outbox").await, 7);
}

/// Makes the database refuse any message whose text is `poison`.
async fn install_poison_trigger(pool: &sqlx::PgPool) {
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.text = 'poison' THEN RAISE EXCEPTION 'test: poison refused'; END IF;
           RETURN NEW;
         END $$;
         CREATE TRIGGER refuse_poison BEFORE INSERT ON messages
         FOR EACH ROW EXECUTE FUNCTION refuse_poison();",
    )
    .execute(pool)
    .await
    .expect("installing the trigger");
}

/// Holds the one transaction slot of `writer` with a message that waits on a table lock, queues
/// `queued` behind it, releases the lock, and returns what became of each queued message.
async fn queue_behind_a_busy_commit(
    db: &firstline_testkit::TestDb,
    writer: &Writer,
    queued: Vec<Incoming>,
) -> Vec<Result<Recorded, WriteError>> {
    let mut lock = db.pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE threads IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let blocked = tokio::spawn({
        let writer = writer.clone();
        let first = person("Ev07BLOCKED1", "1733140100.000100", "first");
        async move { writer.record(first).await }
    });
    firstline_testkit::wait_for(
        "the first commit to wait on the lock",
        Duration::from_secs(10),
        || async {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(&db.pool)
            .await
            .unwrap();
            (waiting > 0).then_some(())
        },
    )
    .await;
    let tasks: Vec<_> = queued
        .into_iter()
        .map(|m| {
            let writer = writer.clone();
            tokio::spawn(async move { writer.record(m).await })
        })
        .collect();
    // The queued requests only have to reach the writer's channel; nothing can commit them
    // while the lock is held.
    tokio::time::sleep(Duration::from_millis(200)).await;
    lock.rollback().await.unwrap();
    assert!(matches!(
        blocked.await.unwrap(),
        Ok(Recorded::Stored { .. })
    ));
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    results
}

fn one_transaction_at_a_time() -> WriterConfig {
    WriterConfig {
        max_batch: 64,
        transactions: 1,
        group_window: None,
    }
}

#[tokio::test]
async fn the_writer_commits_what_queued_during_a_commit_as_one_batch() {
    let db = firstline_testkit::test_db().await;
    let writer = Writer::spawn(
        db.pool.clone(),
        BOT_USER.into(),
        one_transaction_at_a_time(),
    );
    let texts = ["a", "b", "c"];
    let queued = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            person(
                &format!("Ev07QUEUED{i:02}"),
                &format!("1733140101.00010{i}"),
                t,
            )
        })
        .collect();
    let results = queue_behind_a_busy_commit(&db, &writer, queued).await;
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(Recorded::Stored { .. }))),
        "{results:?}"
    );
    assert_eq!(
        transactions_of(&db.pool, &texts).await,
        1,
        "one commit for the three"
    );
    assert_eq!(transactions_of(&db.pool, &["first", "a"]).await, 2);
}

#[tokio::test]
async fn a_message_the_database_refuses_fails_alone_and_its_batch_is_recorded() {
    let db = firstline_testkit::test_db().await;
    install_poison_trigger(&db.pool).await;
    let writer = Writer::spawn(
        db.pool.clone(),
        BOT_USER.into(),
        one_transaction_at_a_time(),
    );
    let queued = vec![
        person("Ev07GOOD0001", "1733140102.000100", "good one"),
        person("Ev07POISON01", "1733140102.000200", "poison"),
        person("Ev07GOOD0002", "1733140102.000300", "good two"),
    ];
    let results = queue_behind_a_busy_commit(&db, &writer, queued).await;
    assert!(
        matches!(results[0], Ok(Recorded::Stored { .. })),
        "{results:?}"
    );
    match &results[1] {
        Err(WriteError::Database(e)) => assert!(e.to_string().contains("poison refused"), "{e}"),
        other => panic!("the poison message fails with the database's reason, got {other:?}"),
    }
    assert!(
        matches!(results[2], Ok(Recorded::Stored { .. })),
        "{results:?}"
    );
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE text LIKE 'good%'"
        )
        .await,
        2
    );
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox").await,
        3,
        "the blocked first message and the two good ones, each with its publish row"
    );
    assert_eq!(
        count(
            &db.pool,
            "SELECT count(*) FROM messages WHERE text = 'poison'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn a_nul_in_a_payload_is_stored_as_a_replacement_character_not_refused() {
    let db = firstline_testkit::test_db().await;
    let bot = TestBot::start(&settings(&db.url), INGEST_ONLY).await;
    let body = message_event(
        "Ev07NULBYTE1",
        "C07INCIDENT",
        "1733140200.000100",
        "U07ONCALL01",
        "disk \u{0} full",
    )
    .to_string();
    assert!(
        body.contains("\\u0000"),
        "the payload carries the JSON escape"
    );
    assert_eq!(post_signed(&bot.events_url, &body, 0, &[]).await, 200);
    let (text, raw_text): (String, String) =
        sqlx::query_as("SELECT text, raw->'event'->>'text' FROM messages")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(text, "disk \u{FFFD} full");
    assert_eq!(raw_text, "disk \u{FFFD} full");
    bot.stop().await;
}

#[tokio::test]
async fn a_resolution_in_a_batch_commits_with_the_batch() {
    let db = firstline_testkit::test_db().await;
    let firing = alert(
        "Ev07RESALERT",
        "1733140300.000100",
        "[FIRING:1] KubePodCrashLooping checkout",
    );
    let resolved_text = format!("<@{BOT_USER}> resolved memory limit too low for the new cache");
    let resolving = reply(
        "Ev07RESOLVE1",
        "app_mention",
        "1733140301.000100",
        "1733140300.000100",
        &resolved_text,
    );
    let chatter = person("Ev07RESCHAT1", "1733140302.000100", "coffee?");
    let recorded = record_batch(
        &db.pool,
        &[&resolving, &chatter, &firing],
        &Rules::new(BOT_USER),
    )
    .await
    .unwrap();
    let thread_id: i64 =
        sqlx::query_scalar("SELECT id FROM threads WHERE thread_ts = '1733140300.000100'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert!(
        matches!(recorded[0], Recorded::Stored { resolved: Some(t), .. } if t == thread_id),
        "{recorded:?}"
    );
    assert!(matches!(
        recorded[1],
        Recorded::Stored { resolved: None, .. }
    ));
    assert!(matches!(
        recorded[2],
        Recorded::Stored {
            resolved: None,
            wakes: true,
            ..
        }
    ));
    let (status, root_cause) = resolution(&db.pool).await;
    assert_eq!(status, "resolved");
    assert_eq!(root_cause, "memory limit too low for the new cache");
    let same_transaction: bool = sqlx::query_scalar(
        "SELECT (SELECT xmin::text FROM incidents) = ALL (SELECT xmin::text FROM messages)",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(
        same_transaction,
        "the resolution commits with the messages of its batch"
    );
}
