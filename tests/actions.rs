//! Acting with approval, end to end on real engines: an alert whose verified cause is a bad
//! rollout gets a reply proposing the rollback (what changes, Approve / Reject); an approver's
//! click in the stand-in runs it through the lab's write endpoint exactly once, and the round
//! re-reads the alert's expression and the pods until they show recovery, then says so in the
//! thread. Faults: a worker killed before and after the write, the write server refusing (RBAC)
//! or down, nobody deciding in time.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::round_app::{BOT_USER, ONCALL, RoundApp, test_settings};

/// A Deployment's new revision fails its requests; the lab's world recovers once it is rolled back.
const ROLLBACK: &str = "rollback-search-api-es-client-400-recovers";
const APPROVER: &str = "U07APPROVER";
const ROUND: Duration = Duration::from_secs(120);
const ACTED: Duration = Duration::from_secs(90);

fn action_settings() -> firstline_config::Settings {
    let mut settings = test_settings();
    settings.actions.enabled = true;
    settings
        .actions
        .approvers
        .insert("*".into(), vec![APPROVER.into()]);
    settings.actions.approval_timeout_secs = 600;
    settings.actions.verify_secs = 60;
    settings.actions.verify_interval_secs = 2;
    settings
}

/// The reply's Approve or Reject button, and the reply's ts, once the proposal is shown.
async fn proposal_button(app: &RoundApp, alert: &str, action_id: &str) -> (String, Value) {
    firstline_testkit::wait_for("the proposal shown", ROUND, || async {
        app.bot_replies(alert).into_iter().find_map(|reply| {
            let blocks = reply.blocks.clone()?;
            let block = blocks
                .as_array()?
                .iter()
                .find(|b| {
                    b["block_id"]
                        .as_str()
                        .is_some_and(|id| id.starts_with("firstline.action."))
                })?
                .clone();
            let mut button = block["elements"]
                .as_array()?
                .iter()
                .find(|e| e["action_id"] == action_id)?
                .clone();
            // As a client that still shows the buttons sends it, after they are gone too.
            button["block_id"] = block["block_id"].clone();
            Some((reply.ts.clone(), button))
        })
    })
    .await
}

/// The scenario's alert, its first round, and the proposal's reply and Approve button.
async fn alert_and_proposal(app: &RoundApp) -> (String, String, Value) {
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;
    let (reply_ts, approve) = proposal_button(app, &alert, "approve").await;
    (alert, reply_ts, approve)
}

#[derive(Debug, sqlx::FromRow)]
struct AuditRow {
    state: String,
    decided_by: Option<String>,
    attempts: i32,
    result: Option<String>,
    verification: Option<Value>,
    outcome_ts: Option<String>,
}

async fn audit(app: &RoundApp) -> Option<AuditRow> {
    sqlx::query_as(
        "SELECT state, decided_by, attempts, result, verification, outcome_ts FROM actions",
    )
    .fetch_optional(&app.db.pool)
    .await
    .expect("actions")
}

async fn wait_state(app: &RoundApp, states: &[&str], timeout: Duration) -> AuditRow {
    firstline_testkit::wait_for("the action's state", timeout, || async {
        audit(app)
            .await
            .filter(|row| states.contains(&row.state.as_str()) && row.outcome_ts.is_some())
    })
    .await
}

#[tokio::test]
async fn an_approved_rollback_runs_once_and_the_thread_hears_it_recovered() {
    let mut app = RoundApp::spawn(ROLLBACK, action_settings()).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    let (reply_ts, approve) = proposal_button(&app, &alert, "approve").await;
    let shown = app.bot_replies(&alert)[0]
        .blocks
        .clone()
        .unwrap_or(Value::Null)
        .to_string();
    assert!(shown.contains("Roll back Deployment"), "{shown}");
    assert!(shown.contains("What changes in Deployment"), "{shown}");
    assert_eq!(app.lab.writes().all().len(), 0, "nothing before approval");

    // Someone not listed may not approve: told why, nothing decided.
    app.slack
        .user_acts(&app.channel, ONCALL, &reply_ts, approve.clone())
        .await
        .expect("acknowledged");
    firstline_testkit::wait_for("told why", Duration::from_secs(10), || async {
        app.slack
            .ephemerals_for(ONCALL)
            .into_iter()
            .find(|e| e.text.contains(APPROVER))
    })
    .await;
    assert_eq!(
        audit(&app).await.map(|r| r.state).as_deref(),
        Some("proposed")
    );

    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve.clone())
        .await
        .expect("acknowledged");
    let row = wait_state(&app, &["executed"], ACTED).await;
    assert_eq!(row.decided_by.as_deref(), Some(APPROVER));
    assert_eq!(row.attempts, 1);
    let verification = row.verification.expect("verified");
    assert_eq!(verification["recovered"], true, "{verification:#}");
    // Exactly one write changed the lab's world: the rollback.
    let writes = app.lab.writes().all();
    assert_eq!(writes.len(), 1, "{writes:?}");
    // The thread hears how it ended, and the proposal shows it.
    let replies = app.bot_replies(&alert);
    let outcome = replies
        .iter()
        .find(|r| Some(&r.ts) == row.outcome_ts.as_ref())
        .expect("the outcome reply");
    assert!(outcome.text.contains("Recovered"), "{}", outcome.text);
    let proposal = app
        .slack
        .workspace()
        .message(&app.channel, &reply_ts)
        .expect("the proposal");
    let shown = proposal.blocks.unwrap_or(Value::Null).to_string();
    assert!(shown.contains("Executed at"), "{shown}");
    assert!(
        !shown.contains("firstline.action."),
        "no buttons left: {shown}"
    );
    // A second approval changes nothing.
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(app.lab.writes().all().len(), 1);
    // The audit: one record of the action on the topic's outbox, once.
    assert_eq!(
        app.count("SELECT count(*) FROM outbox WHERE kind = 'publish' AND action_id IS NOT NULL")
            .await,
        1
    );
    assert!(
        app.count("SELECT count(*) FROM audit WHERE action = 'tool_write' AND outcome = 'ok'")
            .await
            == 1
    );
    // Resolved: the incident recall offers next time says what was done and how it went.
    app.say(
        &alert,
        &format!("<@{BOT_USER}> resolved search-api 3.9.0 rolled back"),
    )
    .await;
    let resolution: String =
        firstline_testkit::wait_for("the incident recorded", Duration::from_secs(20), || async {
            sqlx::query_scalar("SELECT resolution FROM incidents")
                .fetch_optional(&app.db.pool)
                .await
                .ok()
                .flatten()
        })
        .await;
    assert!(
        resolution.contains("action taken: Roll back Deployment `catalog/search-api`")
            && resolution.contains(&format!("approved by <@{APPROVER}>"))
            && resolution.contains("the alert recovered after it"),
        "{resolution}"
    );
    app.stop().await;
}

/// Kills the worker while it is paused at `failpoint` during the execution, then lets another
/// worker finish: the lab sees exactly one write.
async fn killed_at(failpoint: &str, writes_before_kill: usize) {
    let mut app = RoundApp::spawn(ROLLBACK, action_settings()).await;
    let first = app
        .start_worker(Some(&format!("{failpoint}=return(60000)")))
        .await;
    let (_, reply_ts, approve) = alert_and_proposal(&app).await;
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    firstline_testkit::wait_for("the execution paused", ACTED, || async {
        let started = audit(&app).await.is_some_and(|r| r.attempts >= 1);
        (started && app.lab.writes().all().len() == writes_before_kill).then_some(())
    })
    .await;
    // Give the pause a moment to be the only thing left to happen.
    tokio::time::sleep(Duration::from_millis(500)).await;
    app.kill_worker(first).await;
    app.start_worker(None).await;
    let row = wait_state(&app, &["executed"], Duration::from_secs(150)).await;
    assert!(row.attempts >= 2, "another attempt finished it: {row:?}");
    assert_eq!(app.lab.writes().all().len(), 1, "exactly one write");
    app.stop().await;
}

#[tokio::test]
async fn a_worker_killed_after_approval_before_the_write_executes_it_once() {
    killed_at(firstline_model::faults::ACTION_BEFORE_WRITE, 0).await;
}

#[tokio::test]
async fn a_worker_killed_after_the_write_before_its_outcome_is_stored_never_writes_again() {
    killed_at(firstline_model::faults::ACTION_AFTER_WRITE, 1).await;
}

#[tokio::test]
async fn a_write_the_server_refuses_is_reported_and_not_retried() {
    let mut app = RoundApp::spawn(ROLLBACK, action_settings()).await;
    app.start_worker(None).await;
    let (alert, reply_ts, approve) = alert_and_proposal(&app).await;
    app.lab.forbid_writes(true);
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    let row = wait_state(&app, &["failed"], ACTED).await;
    let result = row.result.unwrap_or_default();
    assert!(result.contains("forbidden"), "{result}");
    assert_eq!(row.attempts, 1, "a refusal is not retried");
    assert!(app.lab.writes().all().is_empty());
    let said = app
        .bot_replies(&alert)
        .into_iter()
        .find(|r| Some(&r.ts) == row.outcome_ts.as_ref())
        .expect("the outcome reply");
    assert!(said.text.contains("Not executed"), "{}", said.text);
    app.stop().await;
}

#[tokio::test]
async fn a_write_server_that_went_down_is_reported_and_nothing_is_written() {
    // The write endpoint is reached through a front the test can take down.
    let front = support::tcp_front::TcpFront::start().await;
    let mut settings = action_settings();
    settings.actions.server = Some(firstline_config::McpServerSettings {
        name: "lab-write".into(),
        url: Some(front.url("/write/mcp")),
        profile: Some("kubernetes-mcp-server".into()),
        ..Default::default()
    });
    let mut app = RoundApp::spawn(ROLLBACK, settings).await;
    let lab: std::net::SocketAddr = app
        .lab
        .write_url()
        .trim_start_matches("http://")
        .trim_end_matches("/write/mcp")
        .parse()
        .expect("the lab's address");
    front.forward_to(lab);
    app.start_worker(None).await;
    let (_, reply_ts, approve) = alert_and_proposal(&app).await;
    front.stop().await;
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    let row = wait_state(&app, &["failed"], ACTED).await;
    let result = row.result.unwrap_or_default();
    assert!(
        result.contains("not executed") || result.contains("not sent"),
        "{result}"
    );
    assert!(app.lab.writes().all().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn a_proposal_nobody_decides_expires_and_says_so() {
    let mut settings = action_settings();
    settings.actions.approval_timeout_secs = 4;
    let mut app = RoundApp::spawn(ROLLBACK, settings).await;
    app.start_worker(None).await;
    let (_, reply_ts, approve) = alert_and_proposal(&app).await;
    firstline_testkit::wait_for("expired", ACTED, || async {
        audit(&app).await.filter(|r| r.state == "expired")
    })
    .await;
    firstline_testkit::wait_for("the reply says it expired", ACTED, || async {
        let shown = app
            .slack
            .workspace()
            .message(&app.channel, &reply_ts)?
            .blocks?
            .to_string();
        (shown.contains("Expired: nobody decided") && !shown.contains("firstline.action."))
            .then_some(())
    })
    .await;
    // A late click decides nothing and is told why.
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    firstline_testkit::wait_for("told it expired", Duration::from_secs(10), || async {
        app.slack.ephemerals_for(APPROVER).into_iter().next()
    })
    .await;
    assert_eq!(
        audit(&app).await.map(|r| r.state).as_deref(),
        Some("expired")
    );
    assert!(app.lab.writes().all().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn the_wait_for_approval_outlives_its_worker_and_a_scale_to_zero() {
    let mut app = RoundApp::spawn(ROLLBACK, action_settings()).await;
    let first = app.start_worker(None).await;
    let (_, reply_ts, approve) = alert_and_proposal(&app).await;
    // No worker at all while the approval comes in: the decision waits in Temporal.
    app.kill_worker(first).await;
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    firstline_testkit::wait_for("the decision recorded", Duration::from_secs(10), || async {
        audit(&app).await.filter(|r| r.state == "approved")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        app.lab.writes().all().is_empty(),
        "nothing runs without a worker"
    );
    app.start_worker(None).await;
    let row = wait_state(&app, &["executed"], Duration::from_secs(150)).await;
    assert_eq!(row.decided_by.as_deref(), Some(APPROVER));
    assert_eq!(app.lab.writes().all().len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn a_change_to_the_object_after_it_was_shown_is_refused_with_the_reason() {
    let mut app = RoundApp::spawn(ROLLBACK, action_settings()).await;
    app.start_worker(None).await;
    let (_, reply_ts, approve) = alert_and_proposal(&app).await;
    // Someone scales the Deployment meanwhile: its resourceVersion moves on.
    let settings = firstline_config::McpSettings {
        servers: vec![firstline_config::McpServerSettings {
            name: "someone".into(),
            url: Some(app.lab.write_url()),
            allow: vec!["resources_scale".into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let someone = firstline_investigation::tools::McpTools::from_settings(&settings, None)
        .expect("a client")
        .round(firstline_investigation::tools::CallScope::adhoc("someone"));
    let args = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "namespace": "catalog", "name": "search-api", "scale": 5});
    let scaled = someone
        .write(
            "someone",
            "resources_scale",
            args.as_object().cloned().unwrap_or_default(),
        )
        .await;
    assert!(
        matches!(scaled, firstline_investigation::tools::Written::Applied(_)),
        "{scaled:?}"
    );
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    let row = wait_state(&app, &["failed"], ACTED).await;
    let result = row.result.unwrap_or_default();
    assert!(
        result.contains("changed since the change was shown")
            && result.contains("nothing was written"),
        "{result}"
    );
    // Only the other person's scale changed the world.
    assert_eq!(app.lab.writes().all().len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn with_actions_off_nothing_is_proposed() {
    let mut app = RoundApp::spawn(ROLLBACK, test_settings()).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    let shown = app.bot_replies(&alert)[0]
        .blocks
        .clone()
        .unwrap_or(Value::Null)
        .to_string();
    assert!(!shown.contains("firstline.action."), "{shown}");
    assert!(audit(&app).await.is_none());
    app.stop().await;
}

#[tokio::test]
async fn a_rollback_after_which_the_errors_go_on_is_reported_not_recovered_with_its_undo() {
    // The lab's world for this scenario says nothing of what follows an action: the error rate
    // stays where it was.
    let mut settings = action_settings();
    settings.actions.verify_secs = 40;
    let mut app = RoundApp::spawn("bad-deploy-error-rate", settings).await;
    app.start_worker(None).await;
    let (alert, reply_ts, approve) = alert_and_proposal(&app).await;
    app.slack
        .user_acts(&app.channel, APPROVER, &reply_ts, approve)
        .await
        .expect("acknowledged");
    let row = wait_state(&app, &["executed"], Duration::from_secs(150)).await;
    let verification = row.verification.expect("verified");
    assert_eq!(verification["recovered"], false, "{verification:#}");
    assert!(
        verification["summary"]
            .as_str()
            .is_some_and(|s| s.contains("still")),
        "{verification:#}"
    );
    let said = app
        .bot_replies(&alert)
        .into_iter()
        .find(|r| Some(&r.ts) == row.outcome_ts.as_ref())
        .expect("the outcome reply");
    assert!(said.text.contains("Not recovered"), "{}", said.text);
    assert!(said.text.contains("Undo: roll back"), "{}", said.text);
    assert_eq!(app.lab.writes().all().len(), 1);
    app.stop().await;
}
