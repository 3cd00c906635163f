//! Outbox retention: delivered rows past `bot.outbox_retention_hours` are deleted in bounded
//! batches; undelivered rows and recently delivered ones stay, however old their message.

mod common;

use common::*;
use firstline_bot::relay::prune::prune;
use std::time::Duration;

const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

/// Records `n` messages through a bot that relays nothing; returns their outbox ids in order.
async fn recorded(
    db_url: &firstline_config::DatabaseUrl,
    pool: &sqlx::PgPool,
    n: usize,
) -> Vec<i64> {
    let bot = TestBot::start(&settings(db_url), INGEST_ONLY).await;
    for i in 0..n {
        let body = message_event(
            &format!("Ev07KEEP{i:04}"),
            "C07INCIDENT",
            &format!("1733142000.{i:06}"),
            "U07ONCALL01",
            "x",
        )
        .to_string();
        assert_eq!(post_signed(&bot.events_url, &body, 0, &[]).await, 200);
    }
    bot.stop().await;
    remaining(pool).await
}

/// Backdates rows: created `created_days` ago, sent `sent_days` ago (or never).
async fn age(pool: &sqlx::PgPool, ids: &[i64], created_days: i32, sent_days: Option<i32>) {
    sqlx::query(
        "UPDATE outbox SET created_at = now() - make_interval(days => $2),
                sent_at = now() - make_interval(days => $3)
          WHERE id = ANY($1)",
    )
    .bind(ids)
    .bind(created_days)
    .bind(sent_days)
    .execute(pool)
    .await
    .unwrap();
}

/// The outbox's ids, in order.
async fn remaining(pool: &sqlx::PgPool) -> Vec<i64> {
    sqlx::query_scalar("SELECT id FROM outbox ORDER BY id")
        .fetch_all(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn delivered_rows_past_retention_go_in_bounded_batches_and_undelivered_ones_stay() {
    let db = firstline_testkit::test_db().await;
    let ids = recorded(&db.url, &db.pool, 8).await;
    assert_eq!(ids.len(), 8);
    age(&db.pool, &ids[..5], 8, Some(8)).await; // delivered a week and a day ago
    age(&db.pool, &ids[5..6], 30, Some(1)).await; // old, but delivered only yesterday
    age(&db.pool, &ids[6..7], 30, None).await; // never delivered: still the relays' work
    // ids[7]: new and undelivered.

    // The bound holds: two statements of two rows each, then the pass stops.
    assert_eq!(prune(&db.pool, WEEK, 2, 2).await.unwrap(), 4);
    assert_eq!(remaining(&db.pool).await.len(), 4);
    // The next pass finishes the backlog and stops at a short batch.
    assert_eq!(prune(&db.pool, WEEK, 2, 100).await.unwrap(), 1);
    assert_eq!(remaining(&db.pool).await, ids[5..].to_vec());
    // Nothing more qualifies.
    assert_eq!(prune(&db.pool, WEEK, 2, 100).await.unwrap(), 0);
}

#[tokio::test]
async fn a_bot_running_a_relay_prunes_at_start() {
    let db = firstline_testkit::test_db().await;
    let ids = recorded(&db.url, &db.pool, 3).await;
    age(&db.pool, &ids[..2], 2, Some(2)).await;
    let mut s = settings(&db.url);
    s.bot.outbox_retention_hours = 24;
    let bot = TestBot::start(&s, INGEST_AND_PUBLISH).await;
    // The third row is delivered by the relay and kept: it was sent just now.
    firstline_testkit::wait_for("the aged rows pruned", Duration::from_secs(30), || async {
        (remaining(&db.pool).await == ids[2..]).then_some(())
    })
    .await;
    wait_outbox_drained(&db.pool, "publish", Duration::from_secs(30)).await;
    assert_eq!(remaining(&db.pool).await, ids[2..].to_vec());
    bot.stop().await;
}
