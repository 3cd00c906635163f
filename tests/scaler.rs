//! The scaler's input is real (issue 16): KEDA's `temporal` scaler decides how many workers run
//! from one `DescribeTaskQueue { report_stats: true }` per queue type, summing
//! `stats.approximate_backlog_count` (`deploy/keda/`). Against the Temporal dev server of the test
//! stack, with the request built exactly as the scaler builds it:
//!
//! - alerts posted through the Slack stand-in with no worker running are a backlog > 0, and a
//!   worker started then drains it to 0 and answers every thread;
//! - scale-down: a worker sent SIGTERM mid-round either finishes the round's `run_graph` within
//!   `worker.shutdown_grace_secs` or hands it back when the grace runs out, exits cleanly, and
//!   the round completes on the other worker exactly once (one committed round, one reply).
//!   While the round runs, the backlog reads 0 — why the ScaledObject's `cooldownPeriod` must
//!   outlast the longest round.
//!
//! `deploy/measure` runs the ignored `scaler_request_latency` (release build) for the latency row
//! of `deploy/README.md`'s Measures.

#[path = "support/prometheus.rs"]
mod prometheus;
mod support;

use std::time::{Duration, Instant};

use firstline_workflows::activities::names;
use prometheus::Scraper;
use support::round_app::{RoundApp, test_settings};
use temporalio_client::{Client, UntypedWorkflow, WorkflowFetchHistoryOptions};
use temporalio_common::protos::temporal::api::enums::v1::{TaskQueueKind, TaskQueueType};
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
use temporalio_common::protos::temporal::api::taskqueue::v1::TaskQueue;
use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeTaskQueueRequest;

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);
/// How long the backlog statistic may lag what happened.
const STATS_LAG: Duration = Duration::from_secs(30);
/// What a stopping worker may take beyond its grace (cancelling, reporting, closing the pool).
const EXIT_MARGIN: Duration = Duration::from_secs(8);

/// The queue types `deploy/keda/` sets (`queueTypes: workflow,activity`), in the scaler's order.
const QUEUE_TYPES: [TaskQueueType; 2] = [TaskQueueType::Workflow, TaskQueueType::Activity];

/// The request KEDA's scaler sends for one queue type (`pkg/scalers/temporal_scaler.go`,
/// `getQueueSize`, KEDA ≥ 2.20): the normal (not sticky) queue, stats reported, nothing else.
fn scaler_request(namespace: &str, queue: &str, kind: TaskQueueType) -> DescribeTaskQueueRequest {
    DescribeTaskQueueRequest {
        namespace: namespace.to_string(),
        task_queue: Some(TaskQueue {
            name: queue.to_string(),
            kind: TaskQueueKind::Normal as i32,
            normal_name: String::new(),
        }),
        task_queue_type: kind as i32,
        report_stats: true,
        ..Default::default()
    }
}

/// The scaler's metric input: `approximate_backlog_count` per queue type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Backlog {
    workflow: i64,
    activity: i64,
}

impl Backlog {
    /// What the scaler compares with `targetQueueSize`: the sum over the queue types.
    fn total(self) -> i64 {
        self.workflow + self.activity
    }
}

/// One scaler poll: the request per queue type, in turn, on one connection.
async fn backlog(client: &Client, app: &RoundApp) -> Backlog {
    let mut counts = [0; QUEUE_TYPES.len()];
    for (count, kind) in counts.iter_mut().zip(QUEUE_TYPES) {
        *count = describe(client, app, kind).await;
    }
    Backlog {
        workflow: counts[0],
        activity: counts[1],
    }
}

/// `approximate_backlog_count` of one queue type.
async fn describe(client: &Client, app: &RoundApp, kind: TaskQueueType) -> i64 {
    let s = &app.settings.temporal;
    let response = client
        .connection()
        .workflow_service()
        .describe_task_queue(temporalio_client::tonic::Request::new(scaler_request(
            &s.namespace,
            &s.task_queue,
            kind,
        )))
        .await
        .unwrap_or_else(|e| panic!("DescribeTaskQueue ({kind:?}): {e}"))
        .into_inner();
    let stats = response
        .stats
        .unwrap_or_else(|| panic!("no stats in the answer to report_stats ({kind:?})"));
    stats.approximate_backlog_count
}

/// Polls as the scaler does until `ok` holds for the backlog; returns it, or panics after
/// [`STATS_LAG`] with the last reading.
async fn wait_backlog(
    client: &Client,
    app: &RoundApp,
    what: &str,
    ok: impl Fn(Backlog) -> bool,
) -> Backlog {
    let deadline = tokio::time::Instant::now() + STATS_LAG;
    loop {
        let now = backlog(client, app).await;
        if ok(now) {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the backlog never {what} within {STATS_LAG:?}; last read {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The database's clock.
async fn db_now(app: &RoundApp) -> chrono::DateTime<chrono::Utc> {
    sqlx::query_scalar("SELECT now()")
        .fetch_one(&app.db.pool)
        .await
        .expect("the database clock")
}

/// Waits until the bot's relay has signal-with-started the round of `n` alerts.
async fn wait_woken(app: &RoundApp, n: i64) {
    firstline_testkit::wait_for("the wake-ups relayed", STATS_LAG, || async {
        (app.count("SELECT count(*) FROM outbox WHERE kind = 'wake' AND sent_at IS NOT NULL")
            .await
            == n)
            .then_some(())
    })
    .await;
}

/// The worker's in-flight trigger as `deploy/keda/base/worker-scaledobject.yaml` states it: its
/// query, with the manifest's task queue replaced by `task_queue` (as an install renames it), and
/// its activation threshold.
fn in_flight_trigger(task_queue: &str) -> (String, f64) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/keda/base/worker-scaledobject.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let scaled: serde_json::Value =
        serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let triggers = scaled["spec"]["triggers"].as_array().expect("triggers");
    let temporal = triggers
        .iter()
        .find(|t| t["type"] == "temporal")
        .expect("a temporal trigger");
    let prometheus = triggers
        .iter()
        .find(|t| t["type"] == "prometheus")
        .expect("a prometheus trigger: the in-flight signal");
    let meta = |trigger: &serde_json::Value, key: &str| {
        trigger["metadata"][key]
            .as_str()
            .unwrap_or_else(|| panic!("{path}: trigger metadata `{key}`"))
            .to_string()
    };
    let deployed_queue = meta(temporal, "taskQueue");
    let query = meta(prometheus, "query");
    let matcher = format!("task_queue=\"{deployed_queue}\"");
    assert!(
        query.contains(&matcher),
        "the in-flight query selects the temporal trigger's queue ({matcher}): {query}"
    );
    let activation: f64 = meta(prometheus, "activationThreshold")
        .parse()
        .expect("activationThreshold is a number");
    (
        query.replace(&matcher, &format!("task_queue=\"{task_queue}\"")),
        activation,
    )
}

/// Polls `query` (as KEDA's scaler does, every 250 ms here) until `ok` holds for its value;
/// returns it, or panics after [`STATS_LAG`] with the last reading.
async fn wait_query(
    prometheus: &Scraper,
    query: &str,
    what: &str,
    ok: impl Fn(Option<f64>) -> bool,
) -> Option<f64> {
    let deadline = tokio::time::Instant::now() + STATS_LAG;
    loop {
        let value = prometheus.query(query).await;
        if ok(value) {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "`{query}` never {what} within {STATS_LAG:?}; last read {value:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The second trigger holds a worker while a round runs: the manifest's query, run by a real
/// Prometheus scraping a real worker, reads 0 while the worker idles (inactive: KEDA may scale to
/// zero), above its activation threshold while the round's activities run — when the task
/// queue's backlog, all the temporal trigger sees, reads 0 — and 0 again once the round is done.
#[tokio::test(flavor = "multi_thread")]
async fn the_in_flight_trigger_is_active_exactly_while_a_round_runs() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    let (query, activation) = in_flight_trigger(&app.settings.temporal.task_queue);
    let client = app.temporal().await;
    // Each graph step holds for 5 s: long enough for scrapes and polls to see the round.
    let worker = app
        .start_worker(Some("round.graph.after_step=return(5000)"))
        .await;
    let target = app.worker_health[worker]
        .trim_start_matches("http://")
        .trim_end_matches("/healthz")
        .to_string();
    let prometheus = Scraper::start(&target).await;

    let idle = wait_query(&prometheus, &query, "read 0 for an idle worker", |v| {
        v == Some(0.0)
    })
    .await;
    assert!(idle.is_some_and(|v| v <= activation), "inactive: {idle:?}");

    let alert = app.post_alert(None).await;
    let busy = wait_query(&prometheus, &query, "rose above activation", |v| {
        v.is_some_and(|v| v > activation)
    })
    .await;
    eprintln!("scaler: in flight during the round: {busy:?}");
    // Meanwhile the temporal trigger alone would read "no work".
    wait_backlog(&client, &app, "read 0 during the round", |b| b.total() == 0).await;
    let still = prometheus.query(&query).await;
    assert!(
        still.is_some_and(|v| v > activation),
        "the in-flight trigger is active while the backlog reads 0: {still:?}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM rounds").await,
        0,
        "mid-round"
    );

    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    wait_query(&prometheus, &query, "fell back to 0 after the round", |v| {
        v == Some(0.0)
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn alerts_with_no_worker_are_a_backlog_and_a_started_worker_drains_it() {
    const ALERTS: usize = 3;
    // The same alert three times: each its own incident here (grouping would answer the
    // repeats with a line each), so that each is a round the backlog counts.
    let mut settings = test_settings();
    settings.grouping.window_secs = 0;
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let client = app.temporal().await;
    // A fresh queue: nothing to scale for.
    assert_eq!(backlog(&client, &app).await.total(), 0);

    // Each alert opens its own thread, whose round the relay signal-with-starts.
    let mut alerts = Vec::new();
    for _ in 0..ALERTS {
        alerts.push(app.post_alert(None).await);
    }
    wait_woken(&app, ALERTS as i64).await;
    let waiting = wait_backlog(&client, &app, "counted the alerts", |b| {
        b.total() >= ALERTS as i64
    })
    .await;
    // One first workflow task per round; no activity was scheduled yet.
    assert_eq!(
        waiting,
        Backlog {
            workflow: ALERTS as i64,
            activity: 0
        },
        "the scaler would see {waiting:?}"
    );
    // Nothing picks them up while no worker runs: the backlog holds (KEDA would activate).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(backlog(&client, &app).await, waiting);
    assert_eq!(app.count("SELECT count(*) FROM rounds").await, 0);

    // Scaled from zero: one worker answers every thread and the backlog drains to 0.
    app.start_worker(None).await;
    for alert in &alerts {
        let rounds = app.wait_rounds(alert, 1, ROUND).await;
        assert_eq!(rounds.len(), 1, "{rounds:?}");
        assert!(rounds[0].grounded, "{rounds:?}");
    }
    let drained = wait_backlog(&client, &app, "drained to 0", |b| b.total() == 0).await;
    assert_eq!(
        drained,
        Backlog {
            workflow: 0,
            activity: 0
        }
    );
    for alert in &alerts {
        assert_eq!(app.bot_replies(alert).len(), 1, "one reply in {alert}");
    }
    app.stop().await;
}

/// A held round's activity as the workflow history records it: who ran the attempt that
/// closed it, which attempt that was, and the failure it was retried after.
#[derive(Debug)]
struct Attempt {
    identity: String,
    attempt: i32,
    last_failure: Option<String>,
}

/// The closing attempt of each activity named `name` in the thread's workflow history.
async fn attempts(app: &RoundApp, thread_ts: &str, name: &str) -> Vec<Attempt> {
    let events: Vec<HistoryEvent> = app
        .temporal()
        .await
        .get_workflow_handle::<UntypedWorkflow>(app.workflow_id(thread_ts))
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .expect("the workflow's history");
    let scheduled: Vec<i64> = events
        .iter()
        .filter_map(|e| match &e.attributes {
            Some(Attributes::ActivityTaskScheduledEventAttributes(a))
                if a.activity_type.as_ref().is_some_and(|t| t.name == name) =>
            {
                Some(e.event_id)
            }
            _ => None,
        })
        .collect();
    events
        .into_iter()
        .filter_map(|e| match e.attributes {
            Some(Attributes::ActivityTaskStartedEventAttributes(a))
                if scheduled.contains(&a.scheduled_event_id) =>
            {
                Some(Attempt {
                    identity: a.identity,
                    attempt: a.attempt,
                    last_failure: a.last_failure.map(|f| f.message),
                })
            }
            _ => None,
        })
        .collect()
}

/// The Temporal identity of a `firstline worker` process.
fn identity(pid: u32) -> String {
    format!("firstline-worker@{pid}")
}

/// Waits for worker `index`, sent SIGTERM at `signalled`, to exit; asserts it exited cleanly
/// and returns how long it took from the signal.
async fn exited(app: &mut RoundApp, index: usize, signalled: Instant) -> Duration {
    // Sends SIGTERM (where it was sent already, a stopping worker ignores the repeat) and reaps
    // the process.
    let clean = app.terminate_worker(index).await;
    let took = signalled.elapsed();
    eprintln!("scaler: worker {index} exited {took:?} after SIGTERM (clean: {clean})");
    assert!(
        clean,
        "the worker exited cleanly on SIGTERM (after {took:?})"
    );
    took
}

/// The round completed once, on the other worker: one committed round, one reply, its post
/// made by `poster`.
async fn completed_once(app: &RoundApp, alert: &str, poster: u32) {
    let rounds = app.wait_rounds(alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    // Let a straggling retry show itself before counting.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(app.count("SELECT count(*) FROM rounds").await, 1);
    assert_eq!(app.bot_replies(alert).len(), 1, "exactly one reply");
    let posts = attempts(app, alert, names::POST_TO_THREAD).await;
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].identity, identity(poster), "{posts:?}");
}

/// Scale-down while a round runs longer than the grace: the stopping worker keeps the round for
/// `worker.shutdown_grace_secs`, then hands it back (its attempt fails as `WorkerShutdown`, which
/// Temporal retries), exits cleanly, and the other worker resumes the round from its checkpoint.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stopped_mid_round_hands_the_round_back_after_its_grace() {
    let settings = test_settings();
    let grace = Duration::from_secs(settings.worker.shutdown_grace_secs);
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let client = app.temporal().await;
    // Every step is followed by a minute's pause: longer than the grace.
    let first = app
        .start_worker(Some("round.graph.after_step=return(60000)"))
        .await;
    let first_pid = app.worker_pid(first);
    let alert = app.post_alert(None).await;
    // The first worker's failpoint holds the round at its step-1 checkpoint.
    app.wait_step_one_stored(ROUND).await;
    // The round is running: a started activity is not in the backlog, so the scaler reads 0
    // (hence a cooldownPeriod longer than the longest round).
    let running = wait_backlog(&client, &app, "read 0 during the round", |b| b.total() == 0).await;
    assert_eq!(running.total(), 0);
    assert_eq!(app.count("SELECT count(*) FROM rounds").await, 0);

    let second = app.start_worker(None).await;
    let second_pid = app.worker_pid(second);
    let stopped_at = db_now(&app).await;
    let took = exited(&mut app, first, Instant::now()).await;
    assert!(
        took >= grace - Duration::from_secs(1),
        "the round was held for the grace ({grace:?}), not dropped: exited after {took:?}"
    );
    assert!(
        took <= grace + EXIT_MARGIN,
        "exited within the grace ({grace:?}) + {EXIT_MARGIN:?}: took {took:?}"
    );

    completed_once(&app, &alert, second_pid).await;
    let runs = attempts(&app, &alert, names::RUN_GRAPH).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].identity, identity(second_pid), "{runs:?}");
    assert!(runs[0].attempt >= 2, "{runs:?}");
    assert!(
        runs[0]
            .last_failure
            .as_deref()
            .is_some_and(|m| m.contains("shutting down")),
        "handed back by the stopping worker ({}): {runs:?}",
        identity(first_pid)
    );
    // Resumed, not started over: step 1 is still the row the stopped worker stored.
    let stored: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT created_at FROM round_checkpoints WHERE step = 1")
            .fetch_one(&app.db.pool)
            .await
            .expect("step 1's checkpoint");
    assert!(
        stored < stopped_at,
        "step 1 re-run after the hand-back ({stored} ≥ {stopped_at})"
    );
    app.stop().await;
}

/// Scale-down while a round runs shorter than the grace: the stopping worker finishes its
/// `run_graph` (one attempt, its own), exits cleanly before the grace runs out, and the rest of
/// the round (commit, post) runs on the worker started meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_stopped_mid_round_finishes_it_within_its_grace() {
    const HOLD: Duration = Duration::from_secs(12);
    let settings = test_settings();
    let grace = Duration::from_secs(settings.worker.shutdown_grace_secs);
    assert!(HOLD < grace, "the hold must end within the grace");
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let first = app
        .start_worker(Some(&format!(
            "round.graph.after_step=1*return({})",
            HOLD.as_millis()
        )))
        .await;
    let first_pid = app.worker_pid(first);
    let alert = app.post_alert(None).await;
    // The first worker's failpoint holds the round at its step-1 checkpoint.
    app.wait_step_one_stored(ROUND).await;
    // Scaled down while the round is held at step 1 (step 2 not stored yet); the replacement
    // worker starts while the first one is stopping.
    assert_eq!(
        app.count("SELECT count(*) FROM round_checkpoints WHERE step >= 2")
            .await,
        0
    );
    let signalled = Instant::now();
    app.signal_worker(first, nix::sys::signal::Signal::SIGTERM);
    let second = app.start_worker(None).await;
    let second_pid = app.worker_pid(second);
    let took = exited(&mut app, first, signalled).await;
    assert!(
        took < grace,
        "finished the round and exited before the grace ({grace:?}) ran out: took {took:?}"
    );
    assert!(
        took >= HOLD - Duration::from_secs(1),
        "kept the round until it was done ({HOLD:?} held): exited after {took:?}"
    );

    completed_once(&app, &alert, second_pid).await;
    let runs = attempts(&app, &alert, names::RUN_GRAPH).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].identity, identity(first_pid), "{runs:?}");
    assert_eq!(runs[0].attempt, 1, "finished, not handed back: {runs:?}");
    app.stop().await;
}

/// Percentile `p` (0–100) of sorted `values`, nearest rank.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

/// The scaler request's latency against the dev server, on a queue with a backlog: `POLLS`
/// scaler polls (one request per queue type each, on one connection, as KEDA keeps its client).
/// Prints `measure:` lines that `deploy/measure` turns into the Measures table.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: deploy/measure runs it with --release"]
async fn scaler_request_latency() {
    const POLLS: usize = 50;
    let app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    let client = app.temporal().await;
    for _ in 0..3 {
        app.post_alert(None).await;
    }
    wait_woken(&app, 3).await;
    wait_backlog(&client, &app, "counted the alerts", |b| b.total() >= 3).await;
    for _ in 0..5 {
        backlog(&client, &app).await; // warm-up
    }
    let mut requests = Vec::new();
    let mut polls = Vec::new();
    for _ in 0..POLLS {
        let poll = Instant::now();
        for kind in QUEUE_TYPES {
            let started = Instant::now();
            let count = describe(&client, &app, kind).await;
            requests.push(started.elapsed());
            assert!(count >= 0);
        }
        polls.push(poll.elapsed());
    }
    requests.sort();
    polls.sort();
    println!(
        "measure: request n={} p50_ms={} p95_ms={}",
        requests.len(),
        ms(percentile(&requests, 50)),
        ms(percentile(&requests, 95))
    );
    println!(
        "measure: poll n={} p50_ms={} p95_ms={}",
        polls.len(),
        ms(percentile(&polls, 50)),
        ms(percentile(&polls, 95))
    );
    app.stop().await;
}
