//! A worker can die anywhere (invariant 11): `kill -9` of the worker process while
//! `investigate` is calling tools, right after the join's step is checkpointed, and between
//! Slack accepting the reply and its ts being stored. A second worker finishes the round with
//! exactly one post, no tool call repeated (counted at the lab MCP server) and the same
//! evidence as a clean run. Also killed in the round a person's answer woke: that round
//! finishes, once, on the answer.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::round_app::{RoundApp, test_settings};

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);

type Evidence = Vec<(String, String, String, String)>;

/// A clean run's lab call counts and evidence.
async fn clean_run(at: chrono::DateTime<chrono::Utc>) -> (BTreeMap<String, u64>, Evidence) {
    let mut app = RoundApp::spawn_at(CRASHLOOP, test_settings(), at).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;
    let result = (app.lab.counts().snapshot(), app.evidence(&alert, 1).await);
    app.stop().await;
    result
}

/// Where the first worker is paused (and killed).
enum KillPoint {
    /// After the third tool call's result is cached.
    Investigating,
    /// After step 1 (investigate ∥ recall, the join's sources) is checkpointed.
    AfterJoin,
    /// After Slack accepted the reply, before its ts is stored.
    Posting,
}

impl KillPoint {
    fn failpoints(&self) -> &'static str {
        match self {
            KillPoint::Investigating => "round.tool.after_call=2*off->return(60000)",
            KillPoint::AfterJoin => "round.graph.after_step=return(60000)",
            KillPoint::Posting => "round.post.after_send=return(60000)",
        }
    }

    async fn reached(&self, app: &RoundApp, alert: &str) -> bool {
        match self {
            KillPoint::Investigating => {
                app.count("SELECT count(*) FROM tool_cache").await >= 3
                    && app.lab.counts().total() == 3
            }
            KillPoint::AfterJoin => {
                app.count("SELECT count(*) FROM round_checkpoints WHERE step = 1")
                    .await
                    == 1
            }
            KillPoint::Posting => app.bot_replies(alert).len() == 1,
        }
    }
}

/// Runs the scenario with a worker paused at `point`, kills it with SIGKILL there, lets a
/// second worker finish, and checks the result against a clean run.
async fn killed_and_finished(point: KillPoint) {
    let failpoints = point.failpoints();
    let at = chrono::Utc::now();
    let (clean_counts, clean_evidence) = clean_run(at).await;

    let mut settings = test_settings();
    settings.round.activity_timeout_secs = 6;
    let mut app = RoundApp::spawn_at(CRASHLOOP, settings, at).await;
    let first = app.start_worker(Some(failpoints)).await;
    let alert = app.post_alert(None).await;
    let deadline = tokio::time::Instant::now() + ROUND;
    while !point.reached(&app, &alert).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker never reached {failpoints}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let killed_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&app.db.pool)
        .await
        .expect("the database clock");
    app.kill_worker(first).await;
    let calls_at_kill = app.lab.counts().total();

    app.start_worker(None).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert_eq!(rounds.len(), 1);
    assert!(rounds[0].grounded, "{rounds:?}");
    // Let any straggling retry show itself before counting.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(app.bot_replies(&alert).len(), 1, "exactly one post");
    assert_eq!(
        app.lab.counts().snapshot(),
        clean_counts,
        "every tool called as often as in a clean run (calls at the kill: {calls_at_kill})"
    );
    let evidence = app.evidence(&alert, 1).await;
    assert_eq!(
        evidence.len(),
        clean_evidence.len(),
        "{evidence:#?}\n{clean_evidence:#?}"
    );
    if let KillPoint::AfterJoin = point {
        // Resumed, not started over: step 1 is still the row the killed worker stored.
        let stored: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
            "SELECT created_at FROM round_checkpoints WHERE round = 1 AND step = 1",
        )
        .fetch_one(&app.db.pool)
        .await
        .expect("step 1's checkpoint");
        assert!(
            stored < killed_at,
            "step 1 re-run after the kill ({stored} ≥ {killed_at})"
        );
    }
    for (got, want) in evidence.iter().zip(&clean_evidence) {
        assert_eq!(got, want, "evidence differs from a clean run's");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_while_investigate_calls_tools() {
    killed_and_finished(KillPoint::Investigating).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_the_join_step_is_checkpointed() {
    killed_and_finished(KillPoint::AfterJoin).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_between_posting_and_storing_the_reply() {
    killed_and_finished(KillPoint::Posting).await;
}

/// A worker that stalls (SIGSTOP) past the heartbeat timeout and wakes up after another worker
/// took the round over cannot write over the new attempt's checkpoints, and nothing is posted
/// twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_worker_that_wakes_up_late_is_fenced_off() {
    use nix::sys::signal::Signal;
    let mut settings = test_settings();
    // The stopped worker's outstanding task polls (five) stay open, and the server may hand
    // retries to them, each lost until its heartbeat times out: enough attempts to outlast them.
    settings.round.activity_attempts = 8;
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let stalled = app
        .start_worker(Some("round.graph.after_step=1*return(3000)"))
        .await;
    let alert = app.post_alert(None).await;
    app.wait_step_one_stored(ROUND).await;
    app.signal_worker(stalled, Signal::SIGSTOP);
    app.start_worker(None).await;
    firstline_testkit::wait_for("the retry to take the round over", ROUND, || async {
        (app.count("SELECT count(*) FROM round_checkpoints WHERE attempt >= 2")
            .await
            > 0)
        .then_some(())
    })
    .await;
    app.signal_worker(stalled, Signal::SIGCONT);
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        app.count("SELECT count(*) FROM round_checkpoints WHERE attempt < 2")
            .await,
        0,
        "the stalled attempt wrote nothing after the takeover"
    );
    assert_eq!(app.count("SELECT count(*) FROM rounds").await, 1);
    assert_eq!(app.bot_replies(&alert).len(), 1, "exactly one post");
    app.stop().await;
}

/// A worker killed after a person's answer was recorded, in the round it woke: the next worker
/// finishes that round — grounded on the answer — with exactly one reply, and no third round.
#[tokio::test(flavor = "multi_thread")]
async fn killed_in_the_round_an_answer_woke() {
    let mut settings = test_settings();
    settings.round.activity_timeout_secs = 6;
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let first = app.start_worker(None).await;
    let alert = app
        .post_alert(Some(
            "[FIRING:1] KubePodCrashLooping\n*Alert:* a pod is in waiting state (reason: \"CrashLoopBackOff\"). - `critical`",
        ))
        .await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(!rounds[0].grounded, "round 1 asked: {rounds:?}");
    app.kill_worker(first).await;

    // The answer is recorded and wakes round 2 on a worker that pauses after its first step…
    let second = app
        .start_worker(Some("round.graph.after_step=return(60000)"))
        .await;
    app.say(&alert, "it's the payments-api one").await;
    firstline_testkit::wait_for("round 2's first step", ROUND, || async {
        (app.count("SELECT count(*) FROM round_checkpoints WHERE round = 2 AND step = 1")
            .await
            == 1)
            .then_some(())
    })
    .await;
    // …and is killed there.
    app.kill_worker(second).await;
    app.start_worker(None).await;
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert!(rounds[1].grounded, "round 2 used the answer: {rounds:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.rounds(&alert).await.len(), 2, "exactly one next round");
    assert_eq!(app.bot_replies(&alert).len(), 2, "one reply per round");
    app.stop().await;
}
