//! End to end: a Slack alert to a reply in its thread through the whole stack — the Slack
//! stand-in, the bot, Postgres, Temporal, `firstline worker` processes, the incident graph and
//! the lab MCP server. Includes workers killed with SIGKILL at three points.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::round_app::{BOT_USER, RoundApp, http_get, test_settings};

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(90);
/// An alert that names no pod: the round asks which, offering `payments-api`.
const NO_POD_ALERT: &str = "[FIRING:1] KubePodCrashLooping\n*Alert:* a pod is in waiting state (reason: \"CrashLoopBackOff\"). - `critical`";

fn mention(text: &str) -> String {
    format!("<@{BOT_USER}> {text}")
}

/// The scenario's expectation block holds for `text`.
fn assert_expected(app: &RoundApp, text: &str) {
    let expect = &app.scenario.spec.expect;
    for alternatives in &expect.must_mention {
        assert!(
            alternatives.iter().any(|word| text.contains(word.as_str())),
            "none of {alternatives:?} in the reply:\n{text}"
        );
    }
    for banned in &expect.must_not_mention {
        assert!(
            !text.contains(banned.as_str()),
            "`{banned}` in the reply:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_alert_gets_one_grounded_summary_in_its_thread_and_chatter_wakes_nothing() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;

    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert_eq!(rounds.len(), 1);
    assert!(rounds[0].grounded, "{rounds:?}");
    let text = rounds[0].text.clone().unwrap_or_default();
    assert_expected(&app, &text);
    let outcome = app.run_outcome(&alert, ROUND).await;
    assert_eq!(outcome["outcome"], "answered", "{outcome}");

    // Posted once, as Block Kit with the round's metadata, and the alert got ✅.
    let replies = app.bot_replies(&alert);
    assert_eq!(replies.len(), 1, "{replies:?}");
    let blocks = replies[0].blocks.clone().unwrap_or(Value::Null);
    assert!(blocks.as_array().is_some_and(|b| b.len() >= 2), "{blocks}");
    assert!(blocks.to_string().contains("PAYMENT_MODE"), "{blocks}");
    assert_eq!(
        replies[0]
            .metadata
            .as_ref()
            .map(|m| m["event_type"].clone()),
        Some(Value::from("firstline_round"))
    );
    app.wait_reaction(&alert, &alert, "white_check_mark").await;

    // Committed with its evidence and supported claims.
    assert!(app.count("SELECT count(*) FROM evidence").await >= 3);
    let claims = app.count("SELECT count(*) FROM claims").await;
    assert!(claims >= 1);
    assert_eq!(
        app.count("SELECT count(*) FROM claims WHERE supported")
            .await,
        claims
    );

    // The bot's own reply came back as an event and was recorded as a bot echo; chatter is
    // recorded too. Neither wakes a round.
    app.say(&alert, "looking at the configmap now").await;
    firstline_testkit::wait_for("the reply's echo", Duration::from_secs(10), || async {
        (app.count("SELECT count(*) FROM messages WHERE kind = 'bot_echo'")
            .await
            >= 1)
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        app.count("SELECT count(*) FROM outbox WHERE kind = 'wake'")
            .await,
        1
    );
    assert_eq!(app.rounds(&alert).await.len(), 1);
    app.wait_run_count(&alert, 1).await;
    assert_eq!(app.bot_replies(&alert).len(), 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn questions_then_an_answer_in_own_words_without_a_mention_gives_a_grounded_second_round() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    // An alert that does not say which pod.
    let alert = app.post_alert(Some(NO_POD_ALERT)).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(!rounds[0].grounded, "{rounds:?}");
    let asked = app.bot_replies(&alert);
    assert_eq!(asked.len(), 1);
    assert!(asked[0].text.contains('?'), "{}", asked[0].text);

    // A reply in the thread, no mention, no labels: the asked question reads it.
    let answer = "I think it's the payments-api one";
    app.say(&alert, answer).await;
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert_eq!(rounds.len(), 2);
    assert!(rounds[1].grounded, "{rounds:?}");
    let text = rounds[1].text.as_deref().unwrap_or_default();
    assert_expected(&app, text);
    assert!(
        text.contains("*From the thread*") && text.contains("`payments-api`"),
        "the reply says what it took from the answer:\n{text}"
    );
    assert_eq!(
        rounds[0].run_id, rounds[1].run_id,
        "the waiting run took the answer"
    );

    // Round 2 saw the answer, round 1's questions (typed) and its summary.
    let input = app.round_input(&alert, 2).await;
    let answers = input["context"]["human_answers"].to_string();
    assert!(answers.contains("payments-api one"), "{answers}");
    assert_eq!(
        input["context"]["open_questions"][0]["kind"], "workload",
        "{}",
        input["context"]["open_questions"]
    );
    assert_eq!(
        input["answers"][0]["reading"]["name"], "payments-api",
        "{}",
        input["answers"]
    );
    assert_eq!(
        input["context"]["earlier_rounds"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(app.bot_replies(&alert).len(), 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_click_on_a_question_choice_gives_a_grounded_round_and_a_second_click_changes_nothing() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    let alert = app.post_alert(Some(NO_POD_ALERT)).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(!rounds[0].grounded, "{rounds:?}");
    let asked = app.bot_replies(&alert);
    let question = &asked[0];
    let blocks = question.blocks.clone().unwrap_or(Value::Null);
    // The question's choices are buttons bound to round 1, question 1.
    let actions = blocks
        .as_array()
        .and_then(|b| b.iter().find(|b| b["block_id"] == "firstline.answer.1.0"))
        .unwrap_or_else(|| panic!("a question with choices: {blocks:#}"));
    let button = actions["elements"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["value"] == "payments-api"))
        .unwrap_or_else(|| panic!("`payments-api` offered: {actions:#}"))
        .clone();

    // A value the question never offered is refused: nothing recorded, nothing woken.
    let mut forged = button.clone();
    forged["value"] = Value::from("kube-system");
    app.slack
        .user_acts(&app.channel, "U07ONCALL01", &question.ts, forged)
        .await
        .expect("acknowledged");
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE kind = 'answer'")
            .await,
        0
    );

    app.slack
        .user_acts(&app.channel, "U07ONCALL01", &question.ts, button.clone())
        .await
        .expect("acknowledged");
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert!(rounds[1].grounded, "{rounds:?}");
    let text = rounds[1].text.as_deref().unwrap_or_default();
    assert_expected(&app, text);
    assert!(text.contains("`payments-api` (matched by name)"), "{text}");
    // Recorded once, published and woken like a message.
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE kind = 'answer'")
            .await,
        1
    );
    // The question now says who answered what.
    firstline_testkit::wait_for("the question edited", Duration::from_secs(10), || async {
        let edited = app.slack.workspace().message(&app.channel, &question.ts)?;
        let shown = edited.blocks.unwrap_or(Value::Null).to_string();
        (shown.contains("<@U07ONCALL01> answered question 1")
            && !shown.contains("firstline.answer.1.0"))
        .then_some(())
    })
    .await;

    // A click on the question already answered, from the old message: recorded, no round.
    app.slack
        .user_acts(&app.channel, "U07ONCALL02", &question.ts, button)
        .await
        .expect("acknowledged");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.rounds(&alert).await.len(), 2, "exactly one next round");
    // Two replies and no failure note: a click is no message to react to.
    let replies = app.bot_replies(&alert);
    assert_eq!(replies.len(), 2, "{replies:#?}");
    assert!(
        replies.iter().all(|r| r
            .metadata
            .as_ref()
            .is_some_and(|m| m["event_type"] == "firstline_round")),
        "{replies:#?}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_nobody_can_read_gets_one_clarification_with_the_candidates() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    let alert = app.post_alert(Some(NO_POD_ALERT)).await;
    app.wait_rounds(&alert, 1, ROUND).await;
    app.say(&alert, "no idea, ask the platform team").await;
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert!(!rounds[1].grounded, "{rounds:?}");
    let asked = rounds[1].text.as_deref().unwrap_or_default();
    assert!(
        asked.contains("I could not match \"no idea, ask the platform team\"")
            && asked.contains("`payments-api`"),
        "one clarification, with the candidates:\n{asked}"
    );
    let questions = app.round_input(&alert, 2).await;
    assert_eq!(
        questions["answers"][0]["reading"]["read"], "unread",
        "{}",
        questions["answers"]
    );
    // The clarification answered: the round uses it.
    app.say(&alert, "payments-api").await;
    let rounds = app.wait_rounds(&alert, 3, ROUND).await;
    assert!(rounds[2].grounded, "{rounds:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_written_while_the_round_runs_starts_exactly_one_next_round() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    // Round 1's first step pauses: the reply lands before it has asked anything.
    app.start_worker(Some("round.graph.after_step=1*return(8000)"))
        .await;
    let alert = app.post_alert(Some(NO_POD_ALERT)).await;
    firstline_testkit::wait_for("round 1's first step", ROUND, || async {
        (app.count("SELECT count(*) FROM round_checkpoints WHERE round = 1 AND step = 1")
            .await
            == 1)
            .then_some(())
    })
    .await;
    app.say(&alert, "it's the payments-api one").await;
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert!(!rounds[0].grounded, "round 1 asked: {rounds:?}");
    assert!(rounds[1].grounded, "round 2 used the answer: {rounds:?}");
    assert!(
        rounds[1]
            .text
            .as_deref()
            .is_some_and(|t| t.contains("`payments-api` (matched by name)")),
        "{rounds:?}"
    );
    app.wait_run_count(&alert, 1).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.rounds(&alert).await.len(), 2, "exactly one next round");
    assert_eq!(
        app.count("SELECT count(*) FROM threads WHERE awaiting_answer")
            .await,
        0
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mentions_during_a_round_cause_exactly_one_more_and_a_later_one_starts_a_new_run() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    // The first graph step of the first round pauses for 12 s, past the 5 s heartbeat timeout:
    // mentions land while it runs, and the paused step keeps heartbeating (no second attempt).
    app.start_worker(Some("round.graph.after_step=1*return(12000)"))
        .await;
    let alert = app.post_alert(None).await;
    firstline_testkit::wait_for("round 1's first step", ROUND, || async {
        (app.count("SELECT count(*) FROM round_checkpoints WHERE round = 1 AND step = 1")
            .await
            == 1)
            .then_some(())
    })
    .await;
    for text in ["is it the deploy?", "any update?", "ping"] {
        app.say(&alert, &mention(text)).await;
    }
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    let outcome = app.run_outcome(&alert, ROUND).await;
    assert_eq!(
        outcome,
        serde_json::json!({"outcome": "answered", "rounds_run": 2})
    );
    let rounds_after = app.rounds(&alert).await;
    assert_eq!(
        rounds_after.len(),
        2,
        "exactly one more round: {rounds_after:?}"
    );
    assert_eq!(rounds[0].run_id, rounds[1].run_id);
    assert_eq!(
        app.count("SELECT count(*) FROM round_checkpoints WHERE attempt > 1")
            .await,
        0,
        "a long step heartbeats: Temporal never timed its attempt out"
    );
    // Three mentions signalled the open run.
    app.wait_run_count(&alert, 1).await;
    let input = app.round_input(&alert, 2).await;
    let conversation = input["context"]["conversation"].to_string();
    for text in ["is it the deploy?", "any update?", "ping"] {
        assert!(
            conversation.contains(text),
            "round 2 saw `{text}`: {conversation}"
        );
    }
    // Round 2's reply answers the question a mention asked, first, from the evidence.
    let answered = rounds[1].text.as_deref().unwrap_or_default();
    assert!(
        answered.starts_with("*Is it the deploy? Possibly: revision 2 of `payments-api`"),
        "{answered}"
    );

    // After the run closed, a mention starts a new run that rebuilds the thread from Postgres.
    app.say(&alert, &mention("and now?")).await;
    let rounds = app.wait_rounds(&alert, 3, ROUND).await;
    assert_ne!(rounds[2].run_id, rounds[1].run_id);
    app.wait_run_count(&alert, 2).await;
    let input = app.round_input(&alert, 3).await;
    assert_eq!(
        input["context"]["earlier_rounds"].as_array().map(Vec::len),
        Some(2)
    );
    let conversation = input["context"]["conversation"].to_string();
    assert!(conversation.contains("is it the deploy?"), "{conversation}");
    assert_eq!(app.bot_replies(&alert).len(), 3);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_alert_posted_only_in_attachments_is_investigated_like_any_other() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    // Alertmanager's legacy Slack format: empty text, the alert in an attachment.
    let alert_text = app.scenario.alert_text();
    let (title, details) = alert_text.split_once('\n').unwrap_or((&alert_text, ""));
    let alert = app
        .post_webhook_alert(&serde_json::json!({
            "username": "Alertmanager",
            "text": "",
            "attachments": [{"fallback": title, "title": title, "text": details, "color": "danger"}],
        }))
        .await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    assert_expected(&app, rounds[0].text.as_deref().unwrap_or_default());
    // What the round read is the attachment's alert, stored as the message's text.
    let input = app.round_input(&alert, 1).await;
    let read = input["alert"]["text"].as_str().unwrap_or_default();
    assert!(read.starts_with(title), "{read}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn guards_resolved_max_rounds_and_age_stop_a_round_before_it_starts() {
    let mut settings = test_settings();
    settings.round.max_rounds = 1;
    settings.round.max_thread_age_secs = 3600;
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;

    // Resolved before any worker ran: the queued run finds the thread resolved.
    let resolved = app.post_alert(None).await;
    app.say(
        &resolved,
        &mention("resolved bad PAYMENT_MODE rollout, rolled back"),
    )
    .await;
    app.start_worker(None).await;
    let outcome = app.run_outcome(&resolved, ROUND).await;
    assert_eq!(outcome["guard"]["guard"], "resolved", "{outcome}");
    assert!(app.rounds(&resolved).await.is_empty());

    // One round allowed: the second mention's run stops at the guard.
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;
    assert_eq!(app.run_outcome(&alert, ROUND).await["outcome"], "answered");
    app.say(&alert, &mention("again please")).await;
    app.wait_run_count(&alert, 2).await;
    let outcome = app.run_outcome(&alert, ROUND).await;
    assert_eq!(outcome["guard"]["guard"], "max_rounds", "{outcome}");
    assert_eq!(app.rounds(&alert).await.len(), 1);

    // The run bounds itself too: with the thread's round count lost (as if the rows lied), the
    // waiting run still stops at max_rounds instead of running another round.
    let asking = app
        .post_alert(Some(
            "[FIRING:1] KubePodCrashLooping\n*Alert:* a pod keeps restarting",
        ))
        .await;
    let rounds = app.wait_rounds(&asking, 1, ROUND).await;
    assert!(!rounds[0].grounded, "the round asked and waits: {rounds:?}");
    let reset = format!(
        "WITH reset AS (UPDATE threads SET rounds = 0 WHERE thread_ts = '{asking}' RETURNING 1)
         SELECT count(*) FROM reset"
    );
    assert_eq!(app.count(&reset).await, 1);
    app.say(&asking, &mention("here is more")).await;
    let outcome = app.run_outcome(&asking, ROUND).await;
    assert_eq!(
        outcome,
        serde_json::json!({"outcome": "skipped", "rounds_run": 1,
                           "guard": {"guard": "max_rounds", "rounds": 1, "max": 1}}),
    );
    assert_eq!(app.rounds(&asking).await.len(), 1);

    // A mention in a thread older than round.max_thread_age_secs (2 h > 1 h).
    let old_ts = format!("{}.000100", chrono::Utc::now().timestamp() - 7200);
    let ts = app.slack.user_says(
        &app.channel,
        support::round_app::ONCALL,
        &mention("still broken?"),
        Some(&old_ts),
    );
    let _ = ts;
    let outcome = app.run_outcome(&old_ts, ROUND).await;
    assert_eq!(outcome["guard"]["guard"], "too_old", "{outcome}");
    assert!(app.rounds(&old_ts).await.is_empty());
    assert!(app.bot_replies(&old_ts).is_empty());
    assert_eq!(app.bot_replies(&resolved).len(), 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_worker_reports_health_and_metrics_and_finishes_its_activity_on_sigterm() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    // The first graph step pauses 3 s: SIGTERM lands while run_graph is in flight.
    let first = app
        .start_worker(Some("round.graph.after_step=1*return(3000)"))
        .await;
    let health = app.worker_health[first].clone();
    assert_eq!(http_get(&health).await, (200, "ok\n".to_string()));
    let alert = app.post_alert(None).await;
    app.wait_step_one_stored(ROUND).await;
    assert!(
        app.terminate_worker(first).await,
        "the worker exits cleanly on SIGTERM"
    );
    // It finished the graph run it had started (no retry needed): all steps are stored.
    assert!(
        app.count("SELECT count(*) FROM round_checkpoints WHERE finished")
            .await
            == 1
    );

    // A new worker commits and posts it; its metrics count the round.
    let second = app.start_worker(None).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded);
    assert_eq!(app.bot_replies(&alert).len(), 1);
    let metrics_url = app.worker_health[second].replace("/healthz", "/metrics");
    let (status, metrics) = http_get(&metrics_url).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("firstline_rounds_finished_total{outcome=\"grounded\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resolved_thread_becomes_a_past_incident_the_next_alert_recalls() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    let first = app.post_alert(None).await;
    app.wait_rounds(&first, 1, ROUND).await;
    let cause = "PAYMENT_MODE missing from the ConfigMap after the 2.14.0 rollout; added it";
    app.say(&first, &mention(&format!("resolved {cause}")))
        .await;
    assert_eq!(app.count("SELECT count(*) FROM incidents").await, 1);
    assert_eq!(
        app.count("SELECT count(*) FROM threads WHERE status = 'resolved'")
            .await,
        1
    );
    // The resolving mention's run stops at the guard: no second round in the resolved thread.
    // (The mention starts a run of its own, or reaches the first one before it closed: either
    // way the latest run ends at the guard.)
    firstline_testkit::wait_for("a run stopped at the resolved guard", ROUND, || async {
        let outcome = app.run_outcome(&first, ROUND).await;
        (outcome["guard"]["guard"] == "resolved").then_some(())
    })
    .await;

    let second = app.post_alert(None).await;
    let rounds = app.wait_rounds(&second, 1, ROUND).await;
    let text = rounds[0].text.clone().unwrap_or_default();
    assert!(text.contains("Seen before"), "{text}");
    assert!(text.contains("added it"), "{text}");
    assert_eq!(app.rounds(&first).await.len(), 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_nobody_answers_ends_idle_and_a_later_mention_starts_a_run_with_its_history() {
    let mut settings = test_settings();
    settings.round.idle_timeout_secs = 3;
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    app.start_worker(None).await;
    let alert = app.post_alert(Some(NO_POD_ALERT)).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(!rounds[0].grounded, "round 1 asked: {rounds:?}");
    // Nobody answers within the idle timeout: the run ends as idle.
    let outcome = app.run_outcome(&alert, ROUND).await;
    assert_eq!(
        outcome,
        serde_json::json!({"outcome": "idle", "rounds_run": 1}),
        "{outcome}"
    );
    // A mention after that starts a new run, which rebuilds the thread from Postgres.
    app.say(&alert, &mention("it's the payments-api one")).await;
    let rounds = app.wait_rounds(&alert, 2, ROUND).await;
    assert!(rounds[1].grounded, "{rounds:?}");
    assert_ne!(rounds[0].run_id, rounds[1].run_id);
    app.wait_run_count(&alert, 2).await;
    let input = app.round_input(&alert, 2).await;
    assert_eq!(
        input["context"]["earlier_rounds"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(input["context"]["open_questions"][0]["kind"], "workload");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reaction_slack_refuses_never_fails_the_round() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    // The message the round reacts to is gone by then (deleted, or never in this workspace):
    // Slack says so however often it is asked.
    for _ in 0..20 {
        app.slack.fail_next(
            "reactions.add",
            firstline_slack::standin::state::Failure::Error("message_not_found".into()),
        );
    }
    let alert = app.post_alert(None).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    let outcome = app.run_outcome(&alert, ROUND).await;
    assert_eq!(outcome["outcome"], "answered", "{outcome}");
    let replies = app.bot_replies(&alert);
    assert_eq!(
        replies.len(),
        1,
        "the report and no failure note: {replies:#?}"
    );
    assert!(
        app.slack
            .calls()
            .iter()
            .any(|c| c.method == "reactions.add"),
        "the refused reaction was tried"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_that_cannot_post_says_so_in_the_thread() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    // Slack refuses the reply for good (`is_archived` is not worth retrying).
    app.slack.fail_next(
        "chat.postMessage",
        firstline_slack::standin::state::Failure::Error("is_archived".into()),
    );
    let alert = app.post_alert(None).await;
    let note = firstline_testkit::wait_for("the failure note", ROUND, || async {
        app.bot_replies(&alert)
            .into_iter()
            .find(|m| m.text.contains("could not finish"))
    })
    .await;
    assert!(note.text.contains("is_archived"), "{}", note.text);
    assert_eq!(
        note.metadata.as_ref().map(|m| m["event_type"].clone()),
        Some(Value::from("firstline_round_failed"))
    );
    app.wait_reaction(&alert, &alert, "warning").await;
    // The round itself is committed; only its post failed.
    assert_eq!(
        app.count("SELECT count(*) FROM rounds WHERE posted_ts IS NULL")
            .await,
        1
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(app.bot_replies(&alert).len(), 1, "one note, no report");
    app.stop().await;
}
