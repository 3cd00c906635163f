//! The wake relay against the shared Temporal dev server: signal-with-start of `incident_round`
//! with the thread's workflow id, a second mention signalling the same open run, a decision on a
//! proposed action signalled to the open run (and to no run at all when none is open: delivered,
//! never started), and a (private) Temporal server stopped while a mention arrives: acked, woken
//! after it is started again.
//!
//! No worker runs the workflow here (`tests/round.rs` runs the whole path); the server accepting
//! the call, the execution's id/type/task queue and the `mention` signals in its history are the
//! contract.

mod common;

use common::*;
use firstline_model::{Action, Decision, DecisionSignal};
use firstline_store::actions::{self, Decided, NewAction};
use firstline_testkit::private::PrivateServer;
use std::time::Duration;
use temporalio_client::errors::WorkflowInteractionError;
use temporalio_client::{
    Client, ClientOptions, ConnectionOptions, UntypedWorkflow, WorkflowDescribeOptions,
    WorkflowFetchHistoryOptions, WorkflowTerminateOptions,
};
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

async fn client() -> Client {
    client_of(&firstline_testkit::stack().temporal_address).await
}

async fn client_of(address: &str) -> Client {
    let connection =
        ConnectionOptions::new(address.parse::<temporalio_client::Url>().unwrap()).build();
    Client::connect(connection, ClientOptions::new("default").build())
        .await
        .expect("connecting to Temporal")
}

/// Texts of the `mention` signals in the workflow's history.
async fn mentions(client: &Client, workflow_id: &str) -> Vec<String> {
    let handle = client.get_workflow_handle::<UntypedWorkflow>(workflow_id);
    let events = handle
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap_or_default();
    events
        .into_iter()
        .filter_map(|e| match e.attributes {
            Some(Attributes::WorkflowExecutionSignaledEventAttributes(a))
                if a.signal_name == "mention" =>
            {
                let payload = a.input?.payloads.into_iter().next()?;
                let v: serde_json::Value = serde_json::from_slice(&payload.data).ok()?;
                v["text"].as_str().map(str::to_string)
            }
            _ => None,
        })
        .collect()
}

/// The `decision` signals in the workflow's history (of every run with that id).
async fn decisions(client: &Client, workflow_id: &str) -> Vec<DecisionSignal> {
    let handle = client.get_workflow_handle::<UntypedWorkflow>(workflow_id);
    let events = handle
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap_or_default();
    events
        .into_iter()
        .filter_map(|e| match e.attributes {
            Some(Attributes::WorkflowExecutionSignaledEventAttributes(a))
                if a.signal_name == "decision" =>
            {
                let payload = a.input?.payloads.into_iter().next()?;
                serde_json::from_slice(&payload.data).ok()
            }
            _ => None,
        })
        .collect()
}

/// Round `round` of thread `thread_ts` (inserted if new) proposes an action, and `user`'s
/// `decision` on it is recorded as the bot records a click: with its `wake` outbox row.
async fn decided(
    pool: &sqlx::PgPool,
    thread_ts: &str,
    round: i32,
    user: &str,
    decision: Decision,
) -> i64 {
    let thread_id: i64 = sqlx::query_scalar(
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T07F1RSTDEV', 'C07INCIDENT', $1)
         ON CONFLICT (team_id, channel_id, thread_ts) DO UPDATE SET last_activity_at = now()
         RETURNING id",
    )
    .bind(thread_ts)
    .fetch_one(pool)
    .await
    .expect("the thread");
    let round_id: i64 = sqlx::query_scalar(
        "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result)
         VALUES ($1, $2, 'w', 'r', now(), true, '{}') RETURNING id",
    )
    .bind(thread_id)
    .bind(round)
    .fetch_one(pool)
    .await
    .expect("the round");
    let hash = format!("{round:064x}");
    let action = actions::propose(
        pool,
        &NewAction {
            thread_id,
            round_id,
            action: Action::DeletePod {
                namespace: "shop".into(),
                name: "checkout-7d9f-abcde".into(),
            },
            cause: "checkout-7d9f-abcde is stuck".into(),
            change: serde_json::json!({"delete": "pod"}),
            change_hash: hash.clone(),
            expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
        },
    )
    .await
    .expect("the proposal");
    let recorded = actions::decide(pool, action.id, &hash, user, decision, None)
        .await
        .expect("the decision");
    assert!(matches!(recorded, Decided::Recorded(_)), "{recorded:?}");
    action.id
}

fn mention(event_id: &str, ts: &str, thread_ts: &str, text: &str) -> String {
    let mut e = message_event(event_id, "C07INCIDENT", ts, "U07ONCALL01", text);
    e["event"]["thread_ts"] = thread_ts.into();
    e.to_string()
}

#[tokio::test]
async fn a_mention_signal_with_starts_the_threads_round_and_a_second_signals_the_same_run() {
    let db = firstline_testkit::test_db().await;
    let s = settings(&db.url);
    let bot = TestBot::start(&s, INGEST_AND_WAKE).await;
    let thread = unique_ts();
    let workflow_id = format!("incident-T07F1RSTDEV-C07INCIDENT-{thread}");
    assert_eq!(
        post_signed(
            &bot.events_url,
            &mention(
                "Ev07T0000001",
                &unique_ts(),
                &thread,
                "<@U07F1RSTBOT> first"
            ),
            0,
            &[]
        )
        .await,
        200
    );
    let client = client().await;
    firstline_testkit::wait_for(
        "the first mention signal",
        Duration::from_secs(30),
        || async {
            (mentions(&client, &workflow_id).await == ["<@U07F1RSTBOT> first"]).then_some(())
        },
    )
    .await;
    let handle = client.get_workflow_handle::<UntypedWorkflow>(&workflow_id);
    let described = handle
        .describe(WorkflowDescribeOptions::default())
        .await
        .expect("describe");
    let info = described
        .raw_description
        .workflow_execution_info
        .clone()
        .expect("execution info");
    assert_eq!(
        info.r#type.map(|t| t.name).as_deref(),
        Some("incident_round")
    );
    assert_eq!(info.task_queue, s.temporal.task_queue);
    let first_run = info.execution.map(|e| e.run_id).unwrap_or_default();

    assert_eq!(
        post_signed(
            &bot.events_url,
            &mention(
                "Ev07T0000002",
                &unique_ts(),
                &thread,
                "<@U07F1RSTBOT> second"
            ),
            0,
            &[]
        )
        .await,
        200
    );
    firstline_testkit::wait_for(
        "the second mention signal",
        Duration::from_secs(30),
        || async { (mentions(&client, &workflow_id).await.len() == 2).then_some(()) },
    )
    .await;
    let again = handle
        .describe(WorkflowDescribeOptions::default())
        .await
        .expect("describe");
    let run = again
        .raw_description
        .workflow_execution_info
        .and_then(|i| i.execution)
        .map(|e| e.run_id)
        .unwrap_or_default();
    assert_eq!(run, first_run, "a mention while the run is open signals it");
    let _ = handle.terminate(WorkflowTerminateOptions::default()).await;
    bot.stop().await;
}

#[tokio::test]
async fn a_decision_is_signalled_to_the_open_round_and_never_starts_one() {
    let db = firstline_testkit::test_db().await;
    let s = settings(&db.url);
    let bot = TestBot::start(&s, INGEST_AND_WAKE).await;
    let client = client().await;

    // A mention starts the thread's round (no worker runs it: it stays open).
    let thread = unique_ts();
    let workflow_id = format!("incident-T07F1RSTDEV-C07INCIDENT-{thread}");
    let body = mention("Ev07TA000001", &unique_ts(), &thread, "<@U07F1RSTBOT> look");
    assert_eq!(post_signed(&bot.events_url, &body, 0, &[]).await, 200);
    firstline_testkit::wait_for("the round started", Duration::from_secs(30), || async {
        (mentions(&client, &workflow_id).await.len() == 1).then_some(())
    })
    .await;

    // An approval recorded: signalled as `decision` to that run, its row marked sent.
    let approved = decided(&db.pool, &thread, 1, "U07LEAD0001", Decision::Approve).await;
    firstline_testkit::wait_for("the decision signal", Duration::from_secs(30), || async {
        let signalled = decisions(&client, &workflow_id).await;
        (signalled
            == [DecisionSignal {
                action_id: approved,
                decision: Decision::Approve,
                user: "U07LEAD0001".into(),
            }])
        .then_some(())
    })
    .await;
    wait_outbox_drained(&db.pool, "wake", Duration::from_secs(30)).await;

    // A decision in a thread with no round: delivered (nothing waits for it), nothing started.
    let quiet = unique_ts();
    let quiet_id = format!("incident-T07F1RSTDEV-C07INCIDENT-{quiet}");
    decided(&db.pool, &quiet, 1, "U07OUTSIDER", Decision::Reject).await;
    wait_outbox_drained(&db.pool, "wake", Duration::from_secs(30)).await;
    let described = client
        .get_workflow_handle::<UntypedWorkflow>(&quiet_id)
        .describe(WorkflowDescribeOptions::default())
        .await;
    assert!(
        matches!(described, Err(WorkflowInteractionError::NotFound(_))),
        "no workflow started for a decision: {described:?}"
    );

    // The round closed: a later decision is delivered to nothing, and starts nothing.
    let handle = client.get_workflow_handle::<UntypedWorkflow>(&workflow_id);
    handle
        .terminate(WorkflowTerminateOptions::default())
        .await
        .expect("terminated");
    let late = decided(&db.pool, &thread, 2, "U07LEAD0001", Decision::Reject).await;
    wait_outbox_drained(&db.pool, "wake", Duration::from_secs(30)).await;
    let (sent, errors): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE sent_at IS NOT NULL), count(*) FILTER (WHERE last_error IS NOT NULL)
           FROM outbox WHERE action_id = $1 AND kind = 'wake'",
    )
    .bind(late)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((sent, errors), (1, 0), "delivered at the first attempt");
    let info = handle
        .describe(WorkflowDescribeOptions::default())
        .await
        .expect("describe")
        .raw_description
        .workflow_execution_info
        .expect("execution info");
    assert_eq!(
        info.status,
        temporalio_common::protos::temporal::api::enums::v1::WorkflowExecutionStatus::Terminated
            as i32,
        "still the terminated run: no new one"
    );
    assert_eq!(decisions(&client, &workflow_id).await.len(), 1);
    bot.stop().await;
}

#[tokio::test]
async fn temporal_stopped_delays_wake_ups_and_they_are_delivered_after_it_returns() {
    let _ = firstline_testkit::stack();
    let private = PrivateServer::new("test temporal");
    let port = private.port;
    let address = format!("http://127.0.0.1:{port}");
    let server = private.start_temporal().await;

    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.temporal.address = address.clone();
    // A stopped server refuses at once; a just-restarted one may answer slowly, and a signal
    // that lands after the deadline would be sent again.
    s.bot.relay_call_timeout_secs = 10;
    let bot = TestBot::start(&s, INGEST_AND_WAKE).await;
    let delivered = |thread: &str, id: &str, text: &str| {
        let body = mention(id, thread, thread, text);
        let url = bot.events_url.clone();
        async move { post_signed(&url, &body, 0, &[]).await }
    };
    let before = unique_ts();
    assert_eq!(
        delivered(&before, "Ev07TD000000", "<@U07F1RSTBOT> up?").await,
        200
    );
    wait_outbox_drained(&db.pool, "wake", Duration::from_secs(30)).await;

    server.stop(Duration::from_secs(10)).await;
    let thread = unique_ts();
    let workflow_id = format!("incident-T07F1RSTDEV-C07INCIDENT-{thread}");
    assert_eq!(
        delivered(&thread, "Ev07TD000001", "<@U07F1RSTBOT> down?").await,
        200,
        "acked while Temporal is stopped"
    );
    wait_count(
        &db.pool,
        "a failed wake attempt",
        "SELECT count(*) FROM outbox WHERE kind = 'wake' AND sent_at IS NULL AND attempts > 0",
        1,
        Duration::from_secs(30),
    )
    .await;

    let server = private.start_temporal().await;
    let client = client_of(&address).await;
    firstline_testkit::wait_for(
        "the wake-up after Temporal returns",
        Duration::from_secs(60),
        || async {
            (mentions(&client, &workflow_id).await == ["<@U07F1RSTBOT> down?"]).then_some(())
        },
    )
    .await;
    // The signal lands before the relay commits its row as sent: wait for that commit.
    wait_outbox_drained(&db.pool, "wake", Duration::from_secs(30)).await;
    let before_id = format!("incident-T07F1RSTDEV-C07INCIDENT-{before}");
    assert_eq!(
        mentions(&client, &before_id).await,
        ["<@U07F1RSTBOT> up?"],
        "the run started before the stop survived it, signalled once"
    );
    bot.stop().await;
    server.stop(Duration::from_secs(10)).await;
}

/// A random Slack-shaped ts, so workflow ids differ between tests and runs.
fn unique_ts() -> String {
    let n = uuid::Uuid::new_v4().as_u128();
    format!(
        "{}.{:06}",
        1_733_000_000 + (n % 1_000_000) as u64,
        (n >> 64) % 1_000_000
    )
}
