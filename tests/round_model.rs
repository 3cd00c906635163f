//! The model path through the whole round: the deterministic reply is posted first and the
//! model's pass edits it in place; a failing model leaves a reply that says why; and a worker
//! killed after the model answered is replaced by one that asks the model nothing again and
//! calls no tool again. The model is a scripted OpenAI-compatible server on a real socket.

mod support;

use std::time::Duration;

use serde_json::json;

use firstline_llm::scripted::{ScriptedReply, ScriptedServer};
use support::round_app::{RoundApp, http_get, test_settings};

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);

fn with_model(server: &ScriptedServer) -> firstline_config::Settings {
    let mut settings = test_settings();
    settings.llm.base_url = server.base_url();
    settings.llm.model = "scripted-model".into();
    settings.llm.request_timeout_secs = 5;
    settings.llm.budget_secs = 8;
    settings
}

/// A model that reads the namespace's warnings, then summarises nothing new and says post.
fn reading_model() -> Vec<ScriptedReply> {
    vec![
        ScriptedReply::tool_call(
            "events",
            json!({"namespace": "payments", "object": null, "warnings_only": true}),
        )
        .with_usage(1500, 30),
        ScriptedReply::text("The previous log already names the missing key.").with_usage(1800, 15),
        ScriptedReply::json(&json!({"causes": [], "observations": []})).with_usage(1900, 20),
        ScriptedReply::json(
            &json!({"decision": "post", "questions": [], "confidence": "high",
                                    "reason": "the log names the key"}),
        )
        .with_usage(1200, 20),
    ]
}

/// The round's model columns.
async fn model_columns(app: &RoundApp) -> (Option<String>, Option<String>, i32, i32, bool, bool) {
    sqlx::query_as(
        "SELECT model, model_fallback, model_calls, model_tool_calls,
                refined_at IS NOT NULL, edited_at IS NOT NULL
           FROM rounds WHERE number = 1",
    )
    .fetch_one(&app.db.pool)
    .await
    .expect("the round's row")
}

async fn wait_edited(app: &RoundApp) {
    firstline_testkit::wait_for("the reply to be edited", ROUND, || async {
        let edited: Option<bool> =
            sqlx::query_scalar("SELECT edited_at IS NOT NULL FROM rounds WHERE number = 1")
                .fetch_optional(&app.db.pool)
                .await
                .ok()
                .flatten();
        edited.filter(|e| *e).map(|_| ())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reply_is_posted_first_then_edited_in_place_with_the_models_pass() {
    let server = ScriptedServer::start(reading_model()).await.expect("model");
    let mut app = RoundApp::spawn(CRASHLOOP, with_model(&server)).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;
    wait_edited(&app).await;

    let replies = app.bot_replies(&alert);
    assert_eq!(
        replies.len(),
        1,
        "one reply, edited rather than posted twice"
    );
    assert!(replies[0].edited);
    assert!(
        replies[0]
            .text
            .starts_with("*Likely cause (high confidence):"),
        "the first line is the cause: {}",
        replies[0].text
    );
    assert!(
        replies[0]
            .text
            .contains("Reviewed by scripted-model (4 model calls, 1 tool calls")
    );
    let (model, fallback, calls, tool_calls, refined, edited) = model_columns(&app).await;
    assert_eq!(model.as_deref(), Some("scripted-model"));
    assert_eq!(fallback, None);
    assert_eq!((calls, tool_calls), (4, 1));
    assert!(refined && edited);
    let tokens: i32 = sqlx::query_scalar("SELECT prompt_tokens FROM rounds WHERE number = 1")
        .fetch_one(&app.db.pool)
        .await
        .expect("tokens");
    assert_eq!(tokens, 1500 + 1800 + 1900 + 1200);
    assert_eq!(server.request_count(), 4);
    let rounds = app.rounds(&alert).await;
    assert!(rounds[0].grounded);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_model_leaves_the_deterministic_reply_saying_why() {
    // Every request answers 500: retried, then given up.
    let server = ScriptedServer::start([]).await.expect("model");
    let mut app = RoundApp::spawn(CRASHLOOP, with_model(&server)).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;
    wait_edited(&app).await;

    let (_, fallback, _, tool_calls, refined, _) = model_columns(&app).await;
    assert_eq!(fallback.as_deref(), Some("http_5xx"));
    assert_eq!(tool_calls, 0);
    assert!(refined);
    let replies = app.bot_replies(&alert);
    assert_eq!(replies.len(), 1);
    assert!(
        replies[0]
            .text
            .contains("The model (scripted-model) was not used: its server kept failing."),
        "{}",
        replies[0].text
    );
    assert!(
        app.rounds(&alert).await[0].grounded,
        "the deterministic verdict stands"
    );
    let metrics_url = app.worker_health[0].replace("/healthz", "/metrics");
    let (status, metrics) = http_get(&metrics_url).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("firstline_model_rounds_total{outcome=\"http_5xx\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_after_the_model_answered_asks_nothing_and_calls_nothing_again() {
    let server = ScriptedServer::start(reading_model()).await.expect("model");
    let mut app = RoundApp::spawn(CRASHLOOP, with_model(&server)).await;
    let first = app
        .start_worker(Some("round.refine.after_model=return(60000)"))
        .await;
    let alert = app.post_alert(None).await;
    firstline_testkit::wait_for("the model to have answered", ROUND, || async {
        (server.request_count() == 4 && app.count("SELECT count(*) FROM model_replies").await == 4)
            .then_some(())
    })
    .await;
    // The pause is after the model's pass and before its outcome is stored.
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.kill_worker(first).await;
    let calls_at_kill = app.lab.counts().snapshot();

    app.start_worker(None).await;
    wait_edited(&app).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(server.request_count(), 4, "no model call repeated");
    assert_eq!(
        app.lab.counts().snapshot(),
        calls_at_kill,
        "no tool call repeated"
    );
    let (_, fallback, calls, tool_calls, _, _) = model_columns(&app).await;
    assert_eq!(fallback, None, "the replayed answers were used");
    assert_eq!((calls, tool_calls), (4, 1));
    assert_eq!(app.bot_replies(&alert).len(), 1);
    app.stop().await;
}
