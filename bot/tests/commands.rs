//! `/firstline`, delivered by the Slack stand-in as Slack does — a signed form POST to
//! `/slack/commands`, or a `slash_commands` envelope over Socket Mode — against a real bot and
//! database: `investigate` posts a new thread and records its alert (which wakes its round),
//! `help` and anything else are answered privately, and a forged request changes nothing.

mod common;

use common::*;
use firstline_config::SlackMode;
use firstline_slack::standin::state::{INCIDENTS, ONCALL_USER};
use std::time::Duration;

fn ephemeral(answer: Option<serde_json::Value>) -> String {
    let answer = answer.expect("an HTTP answer");
    assert_eq!(answer["response_type"], "ephemeral", "{answer}");
    answer["text"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn investigate_starts_a_thread_help_and_usage_answer_privately() {
    let (slack, bot, db, cancel) = bot_on_standin(SlackMode::Http).await;
    let help = ephemeral(
        slack
            .user_runs_command(INCIDENTS, ONCALL_USER, "help")
            .await
            .unwrap(),
    );
    assert!(help.contains("/firstline investigate"), "{help}");
    let usage = ephemeral(
        slack
            .user_runs_command(INCIDENTS, ONCALL_USER, "deploy to prod")
            .await
            .unwrap(),
    );
    assert!(
        usage.starts_with("I did not understand `deploy to prod`. Usage:"),
        "{usage}"
    );
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 0);

    let started = ephemeral(
        slack
            .user_runs_command(INCIDENTS, ONCALL_USER, "investigate payments/checkout-api")
            .await
            .unwrap(),
    );
    assert_eq!(
        started,
        "Started an investigation of `checkout-api` in `payments` in a new thread."
    );
    // The thread's first message, posted by the bot at the top of the channel…
    let posted = slack
        .workspace()
        .channels()
        .into_iter()
        .find(|(id, ..)| id == INCIDENTS)
        .and_then(|(_, _, messages)| messages.into_iter().find(|m| m.text.starts_with("🔎")))
        .expect("the thread's first message");
    assert!(posted.thread_ts.is_none());
    // …recorded as its alert, with the labels the round starts from, and a wake-up; its echo
    // is the same message, stored once.
    let (kind, text): (String, String) =
        sqlx::query_as("SELECT kind, text FROM messages WHERE ts = $1")
            .bind(&posted.ts)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(kind, "alert");
    assert!(
        text.contains("namespace=payments\nservice=checkout-api"),
        "{text}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        1
    );

    // Signed with another secret: refused, nothing posted or stored.
    let url = bot.events_url.replace("/slack/events", "/slack/commands");
    let body = "team_id=T07F1RSTDEV&channel_id=C07INCIDENT&user_id=U1&command=%2Ffirstline&text=investigate+x";
    assert_eq!(post_signed(&url, body, -600, &[]).await, 401);
    assert_eq!(count(&db.pool, "SELECT count(*) FROM messages").await, 1);
    bot.stop().await;
    cancel.cancel();
}

#[tokio::test]
async fn investigate_over_socket_mode_records_the_new_threads_alert() {
    let (slack, bot, db, cancel) = bot_on_standin(SlackMode::Socket).await;
    let answered = slack
        .user_runs_command(INCIDENTS, ONCALL_USER, "investigate checkout")
        .await
        .expect("sent over the socket");
    assert_eq!(answered, None, "Socket Mode answers in the ack");
    wait_count(
        &db.pool,
        "the requested alert",
        "SELECT count(*) FROM messages WHERE kind = 'alert' AND text LIKE '%service=checkout%'",
        1,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        count(&db.pool, "SELECT count(*) FROM outbox WHERE kind = 'wake'").await,
        1
    );
    bot.stop().await;
    cancel.cancel();
}
