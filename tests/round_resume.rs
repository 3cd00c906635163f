//! Bounded resume (issue 24): a worker killed (SIGKILL) inside each long or side-effecting
//! activity — `run_graph` between steps, `post_to_thread` after Slack accepted the reply,
//! `refine_round` after the model answered, `edit_post` after Slack accepted the edit — is
//! replaced by another that finishes the round within the activity's bound (its heartbeat timeout
//! for the two that heartbeat, its start-to-close for the two short ones; then the round's next
//! workflow task waits `worker.sticky_timeout_secs` for the dead worker) plus a few seconds,
//! counted from the kill, with exactly one reply, one edit, and no tool or model call repeated
//! (the lab's and the model's counts equal a clean run's). Each test prints `resume: <point>
//! <seconds> <bound> <margin>`, which `bench/round/run --resume` collects into a table.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

use firstline_llm::scripted::{ScriptedReply, ScriptedServer};
use support::round_app::{RoundApp, test_settings};

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);
/// Heartbeat timeouts of `run_graph` and `refine_round`, and the start-to-close of the others.
const HEARTBEAT_SECS: u64 = 5;
const SHORT_ACTIVITY_SECS: u64 = 6;
/// How long the round's next workflow task waits for the killed worker (`worker.sticky_timeout_secs`).
const STICKY_SECS: u64 = 2;
/// What a resume may take beyond its bounds: the retry's backoff, a poll, the rest of the round.
const MARGIN: Duration = Duration::from_secs(5);

/// A model that reads the namespace's warnings, then says post.
fn model() -> Vec<ScriptedReply> {
    vec![
        ScriptedReply::tool_call(
            "events",
            json!({"namespace": "payments", "object": null, "warnings_only": true}),
        ),
        ScriptedReply::text("The previous log already names the missing key."),
        ScriptedReply::json(&json!({"causes": [], "observations": []})),
        ScriptedReply::json(
            &json!({"decision": "post", "questions": [], "confidence": "high",
                                    "reason": "the log names the key"}),
        ),
    ]
}

fn settings(server: &ScriptedServer) -> firstline_config::Settings {
    let mut s = test_settings();
    s.round.run_graph_heartbeat_secs = HEARTBEAT_SECS;
    s.round.activity_timeout_secs = SHORT_ACTIVITY_SECS;
    s.llm.base_url = server.base_url();
    s.llm.model = "scripted-model".into();
    s.llm.request_timeout_secs = 5;
    s.llm.budget_secs = 60;
    s.llm.heartbeat_secs = HEARTBEAT_SECS;
    s.worker.sticky_timeout_secs = STICKY_SECS;
    s
}

/// Where the first worker pauses (and is killed).
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    RunGraph,
    Post,
    Refine,
    Edit,
}

impl KillPoint {
    fn failpoint(self) -> &'static str {
        match self {
            KillPoint::RunGraph => "round.graph.after_step=return(60000)",
            KillPoint::Post => "round.post.after_send=return(60000)",
            KillPoint::Refine => "round.refine.after_model=return(60000)",
            KillPoint::Edit => "round.edit.after_send=return(60000)",
        }
    }

    /// What Temporal waits before it retries the attempt elsewhere (the activity's heartbeat
    /// timeout or start-to-close), plus the sticky timeout of the round's next workflow task.
    fn bound(self) -> Duration {
        Duration::from_secs(
            STICKY_SECS
                + match self {
                    KillPoint::RunGraph | KillPoint::Refine => HEARTBEAT_SECS,
                    KillPoint::Post | KillPoint::Edit => SHORT_ACTIVITY_SECS,
                },
        )
    }

    async fn reached(self, app: &RoundApp, server: &ScriptedServer, alert: &str) -> bool {
        match self {
            KillPoint::RunGraph => {
                app.count("SELECT count(*) FROM round_checkpoints WHERE step = 1")
                    .await
                    == 1
            }
            KillPoint::Post => app.bot_replies(alert).len() == 1,
            KillPoint::Refine => {
                server.request_count() == 4
                    && app.count("SELECT count(*) FROM model_replies").await == 4
            }
            KillPoint::Edit => app.bot_replies(alert).iter().any(|m| m.edited),
        }
    }
}

/// The round, posted and edited once: waits for `edited_at`.
async fn wait_done(app: &RoundApp) {
    firstline_testkit::wait_for("the reply to be posted and edited", ROUND, || async {
        (app.count("SELECT count(*) FROM rounds WHERE edited_at IS NOT NULL")
            .await
            == 1)
            .then_some(())
    })
    .await;
}

/// A clean run's lab call counts and model requests.
async fn clean_run(at: chrono::DateTime<chrono::Utc>) -> (BTreeMap<String, u64>, usize) {
    let server = ScriptedServer::start(model()).await.expect("model");
    let mut app = RoundApp::spawn_at(CRASHLOOP, settings(&server), at).await;
    app.start_worker(None).await;
    app.post_alert(None).await;
    wait_done(&app).await;
    let counts = (app.lab.counts().snapshot(), server.request_count());
    app.stop().await;
    counts
}

async fn killed_and_resumed(point: KillPoint) {
    let at = chrono::Utc::now();
    let (clean_calls, clean_requests) = clean_run(at).await;

    let server = ScriptedServer::start(model()).await.expect("model");
    let mut app = RoundApp::spawn_at(CRASHLOOP, settings(&server), at).await;
    let first = app.start_worker(Some(point.failpoint())).await;
    let alert = app.post_alert(None).await;
    let deadline = tokio::time::Instant::now() + ROUND;
    while !point.reached(&app, &server, &alert).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker never reached {point:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The pause begins right after the point's effect shows.
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.kill_worker(first).await;
    let killed = Instant::now();

    app.start_worker(None).await;
    wait_done(&app).await;
    let resume = killed.elapsed();
    println!(
        "resume: {point:?} {:.1} {} {}",
        resume.as_secs_f64(),
        point.bound().as_secs(),
        MARGIN.as_secs()
    );
    assert!(
        resume <= point.bound() + MARGIN,
        "{point:?}: finished {resume:?} after the kill; bound {:?} + {MARGIN:?}",
        point.bound()
    );
    // Let a straggling retry show itself before counting.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        app.bot_replies(&alert).len(),
        1,
        "{point:?}: exactly one reply"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM rounds").await,
        1,
        "{point:?}: one round"
    );
    assert_eq!(
        app.lab.counts().snapshot(),
        clean_calls,
        "{point:?}: every tool called as often as in a clean run"
    );
    assert_eq!(
        server.request_count(),
        clean_requests,
        "{point:?}: no model call repeated"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_in_run_graph_resumes_within_its_heartbeat_timeout() {
    killed_and_resumed(KillPoint::RunGraph).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_posting_resumes_within_the_activity_timeout() {
    killed_and_resumed(KillPoint::Post).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_in_refine_round_resumes_within_its_heartbeat_timeout() {
    killed_and_resumed(KillPoint::Refine).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_editing_resumes_within_the_activity_timeout() {
    killed_and_resumed(KillPoint::Edit).await;
}
