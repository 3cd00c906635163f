//! `firstline_store::actions` against a real Postgres: every step of an action happens once,
//! whoever races for it — approvers clicking together, a replayed click, a click after expiry,
//! expiry racing an approval, a retried execution — and each decision and last state leaves
//! exactly one outbox row.

use chrono::{Duration, Utc};
use firstline_model::{ACTION_SCHEMA, Action, ActionState, Decision, DecisionWake, TopicRecord};
use firstline_store::actions::{self, Decided, Execution, NewAction};
use firstline_store::{PgPool, migrate};
use firstline_testkit::{connect, empty_db};

async fn seeded() -> (PgPool, i64) {
    let (_, url) = empty_db().await;
    let pool = connect(&url).await;
    migrate(&pool, &url).await.expect("migrations");
    sqlx::raw_sql(
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T1', 'C1', '1733130000.000100');
         INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result)
             VALUES (1, 1, 'incident-T1-C1-1733130000.000100', 'r', now(), true, '{}');",
    )
    .execute(&pool)
    .await
    .expect("seed");
    let row = actions::propose(&pool, &proposal(Duration::hours(1)))
        .await
        .expect("proposed");
    (pool, row.id)
}

fn proposal(expires_in: Duration) -> NewAction {
    NewAction {
        thread_id: 1,
        round_id: 1,
        action: Action::Rollback {
            namespace: "shop".into(),
            deployment: "checkout".into(),
            from_revision: 7,
            to_revision: 6,
        },
        cause: "Revision 7 of checkout broke it".into(),
        change: serde_json::json!({"tool": "resources_create_or_update"}),
        change_hash: "ab".repeat(32),
        expires_at: Utc::now() + expires_in,
    }
}

async fn outbox(pool: &PgPool, kind: &str) -> Vec<serde_json::Value> {
    sqlx::query_scalar(
        "SELECT payload FROM outbox WHERE kind = $1 AND action_id IS NOT NULL ORDER BY id",
    )
    .bind(kind)
    .fetch_all(pool)
    .await
    .expect("outbox")
}

#[tokio::test]
async fn a_proposal_is_stored_once_per_round() {
    let (pool, id) = seeded().await;
    let again = actions::propose(&pool, &proposal(Duration::hours(2)))
        .await
        .expect("a retry");
    assert_eq!(again.id, id);
    assert_eq!(again.state, ActionState::Proposed);
    assert_eq!(again.object, "Deployment shop/checkout");
}

#[tokio::test]
async fn of_twenty_approvers_clicking_at_once_exactly_one_decides() {
    let (pool, id) = seeded().await;
    let hash = "ab".repeat(32);
    let clicks = (0..20).map(|i| {
        let pool = pool.clone();
        let hash = hash.clone();
        tokio::spawn(async move {
            actions::decide(
                &pool,
                id,
                &hash,
                &format!("U{i:03}"),
                Decision::Approve,
                None,
            )
            .await
        })
    });
    let mut recorded = 0;
    let mut told = 0;
    for click in clicks {
        match click.await.expect("joined").expect("decided") {
            Decided::Recorded(_) => recorded += 1,
            Decided::AlreadyDecided(row) => {
                assert_eq!(row.state, ActionState::Approved);
                assert!(row.decided_by.is_some(), "the others are told who");
                told += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((recorded, told), (1, 19));
    let wakes = outbox(&pool, "wake").await;
    assert_eq!(wakes.len(), 1, "{wakes:?}");
    let wake: DecisionWake = serde_json::from_value(wakes[0].clone()).expect("a decision wake");
    assert_eq!(wake.decision.action_id, id);
    assert_eq!(wake.decision.decision, Decision::Approve);
    // A rejection after the approval changes nothing; nor does a replay.
    let late = actions::decide(&pool, id, &hash, "U999", Decision::Reject, None)
        .await
        .expect("decided");
    assert!(matches!(late, Decided::AlreadyDecided(_)), "{late:?}");
    assert_eq!(outbox(&pool, "wake").await.len(), 1);
}

#[tokio::test]
async fn another_change_an_expired_proposal_and_an_unknown_one_decide_nothing() {
    let (pool, id) = seeded().await;
    let other = actions::decide(&pool, id, &"cd".repeat(32), "U1", Decision::Approve, None)
        .await
        .expect("decided");
    assert!(matches!(other, Decided::OtherChange(_)), "{other:?}");
    let unknown = actions::decide(&pool, 99, &"ab".repeat(32), "U1", Decision::Approve, None)
        .await
        .expect("decided");
    assert_eq!(unknown, Decided::Unknown);

    sqlx::query("UPDATE actions SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .expect("aged");
    let late = actions::decide(&pool, id, &"ab".repeat(32), "U1", Decision::Approve, None)
        .await
        .expect("decided");
    assert!(matches!(late, Decided::TooLate(_)), "{late:?}");
    assert!(outbox(&pool, "wake").await.is_empty());
    // The round marks it expired once, and publishes its record once.
    let expired = actions::expire(&pool, id)
        .await
        .expect("expired")
        .expect("row");
    assert_eq!(expired.state, ActionState::Expired);
    actions::expire(&pool, id).await.expect("again");
    let published = outbox(&pool, "publish").await;
    assert_eq!(published.len(), 1);
    let bytes = serde_json::to_vec(&published[0]).expect("bytes");
    match TopicRecord::decode(&bytes) {
        Ok(TopicRecord::Action(record)) => {
            assert_eq!(record.schema, ACTION_SCHEMA);
            assert_eq!(record.state, ActionState::Expired);
            assert_eq!(record.decided_by, None);
        }
        other => panic!("an action record, got {other:?}"),
    }
    // Nothing expired is ever executed.
    let run = actions::start_execution(&pool, id).await.expect("start");
    assert!(matches!(run, Execution::NotApproved(_)), "{run:?}");
}

#[tokio::test]
async fn an_approval_that_won_the_race_is_not_expired_and_executes_once() {
    let (pool, id) = seeded().await;
    let hash = "ab".repeat(32);
    let decided = actions::decide(&pool, id, &hash, "U1", Decision::Approve, None)
        .await
        .expect("decided");
    assert!(matches!(decided, Decided::Recorded(_)));
    let not_expired = actions::expire(&pool, id)
        .await
        .expect("expire")
        .expect("row");
    assert_eq!(not_expired.state, ActionState::Approved);

    let first = actions::start_execution(&pool, id).await.expect("start");
    let second = actions::start_execution(&pool, id).await.expect("a retry");
    match (first, second) {
        (Execution::Start { attempt: 1, .. }, Execution::Start { attempt: 2, .. }) => {}
        other => panic!("attempts are counted: {other:?}"),
    }
    let done = actions::finish_execution(&pool, id, true, "applied")
        .await
        .expect("finished");
    assert_eq!(done.state, ActionState::Executed);
    // A late attempt's outcome does not replace the first one's.
    let late = actions::finish_execution(&pool, id, false, "refused")
        .await
        .expect("late");
    assert_eq!(late.state, ActionState::Executed);
    assert_eq!(late.result.as_deref(), Some("applied"));
    let after = actions::start_execution(&pool, id).await.expect("after");
    assert!(matches!(after, Execution::Finished(_)), "{after:?}");
    // Verified once; its record published once, with the verification.
    let verification = serde_json::json!({"recovered": true, "summary": "ok"});
    actions::verified(&pool, id, &verification)
        .await
        .expect("verified");
    let again = actions::verified(&pool, id, &serde_json::json!({"recovered": false}))
        .await
        .expect("again");
    assert_eq!(again.verification, Some(verification));
    let published = outbox(&pool, "publish").await;
    assert_eq!(published.len(), 1);
    assert_eq!(published[0]["state"], "executed");
    assert_eq!(published[0]["decided_by"], "U1");
}

#[tokio::test]
async fn a_rejection_by_anyone_is_recorded_and_published_once() {
    let (pool, id) = seeded().await;
    let decided = actions::decide(&pool, id, &"ab".repeat(32), "U42", Decision::Reject, None)
        .await
        .expect("decided");
    let Decided::Recorded(row) = decided else {
        panic!("recorded: {decided:?}");
    };
    assert_eq!(row.state, ActionState::Rejected);
    assert_eq!(outbox(&pool, "wake").await.len(), 1);
    let published = outbox(&pool, "publish").await;
    assert_eq!(published.len(), 1);
    assert_eq!(published[0]["state"], "rejected");
    assert_eq!(published[0]["decided_by"], "U42");
}
