//! Clicks on a question's choices, delivered by the Slack stand-in as Slack does — a signed form
//! POST to `/slack/interactivity`, or an `interactive` envelope over Socket Mode — against a real
//! bot and database: recorded once like a message (with its Kafka record and, while the thread
//! awaits an answer, its wake-up, as outbox rows; no relay runs here), bound to the round, question and message they were rendered
//! for, and shown on the question; forged, stale, replayed and repeated clicks change nothing.

mod common;

use common::*;
use firstline_config::{SecretString, SlackMode};
use firstline_model::{AnswerBlock, Question, QuestionKind};
use firstline_slack::standin::StandIn;
use firstline_slack::standin::delivery::Deliverer;
use firstline_slack::standin::state::{INCIDENTS, ONCALL_USER};
use firstline_slack::{OutgoingMessage, SlackApi};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const ROUND: u32 = 1;

struct Asked {
    slack: StandIn,
    bot: TestBot,
    db: firstline_testkit::TestDb,
    /// The round's reply holding the question.
    reply_ts: String,
    cancel: CancellationToken,
}

/// A bot in `mode` with a thread whose round 1 asked which namespace (`payments` or `shop`) in
/// a reply posted with the question's buttons; the thread awaits an answer.
async fn asked(mode: SlackMode) -> Asked {
    let (slack, bot, db, cancel) = bot_on_standin(mode).await;
    let alert = slack.user_says(INCIDENTS, ONCALL_USER, "checkout is slow", None);
    wait_count(
        &db.pool,
        "the thread",
        "SELECT count(*) FROM threads",
        1,
        Duration::from_secs(30),
    )
    .await;
    let question = Question::of(QuestionKind::Namespace, "Which namespace is `checkout` in?")
        .with_choices(["payments".to_string(), "shop".to_string()]);
    let block = AnswerBlock {
        round: ROUND,
        index: 0,
        typed: false,
    };
    let api = SlackApi::new(
        &slack.api_url(),
        &SecretString::new("xoxb-standin-token"),
        Duration::from_secs(5),
    );
    let reply_ts = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            thread_ts: Some(alert.clone()),
            text: "Which namespace is `checkout` in?".into(),
            blocks: Some(json!([
                {"type": "section", "text": {"type": "mrkdwn", "text": "*Questions*"}},
                {"type": "actions", "block_id": block.block_id(), "elements": [
                    {"type": "button", "action_id": "answer_0", "value": "payments",
                     "text": {"type": "plain_text", "text": "payments"}},
                    {"type": "button", "action_id": "answer_1", "value": "shop",
                     "text": {"type": "plain_text", "text": "shop"}}]},
                {"type": "input", "block_id": AnswerBlock { typed: true, ..block }.block_id(),
                 "dispatch_action": true,
                 "label": {"type": "plain_text", "text": "Something else"},
                 "element": {"type": "plain_text_input", "action_id": "answer_text"}}
            ])),
            metadata: None,
        })
        .await
        .expect("the question posted");
    sqlx::query(
        "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result,
                             asked, posted_ts, posted_at)
         SELECT id, 1, 'w', 'r', now(), false, '{}', $1, $2, now() FROM threads",
    )
    .bind(sqlx::types::Json(vec![question]))
    .bind(&reply_ts)
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query("UPDATE threads SET rounds = 1, awaiting_answer = true")
        .execute(&db.pool)
        .await
        .unwrap();
    Asked {
        slack,
        bot,
        db,
        reply_ts,
        cancel,
    }
}

fn button(value: &str) -> Value {
    json!({"type": "button", "action_id": if value == "shop" { "answer_1" } else { "answer_0" },
           "value": value})
}

impl Asked {
    async fn answers(&self) -> i64 {
        count(
            &self.db.pool,
            "SELECT count(*) FROM messages WHERE kind = 'answer'",
        )
        .await
    }

    async fn wakes(&self) -> i64 {
        count(
            &self.db.pool,
            "SELECT count(*) FROM outbox WHERE kind = 'wake'",
        )
        .await
    }

    /// The `block_actions` payload of `user` clicking `action` on the reply.
    fn click(&self, user: &str, action: Value) -> Value {
        let message = self
            .slack
            .workspace()
            .message(INCIDENTS, &self.reply_ts)
            .expect("the reply");
        Deliverer::block_actions(self.slack.workspace(), INCIDENTS, &message, user, action).0
    }

    async fn stop(self) {
        self.bot.stop().await;
        self.cancel.cancel();
    }
}

/// Over either transport: one click recorded once (delivered twice), a wake-up, the question
/// edited; a second person's later click recorded without another wake-up; a value the question
/// did not offer and a click bound to another round recorded nowhere.
async fn clicks_are_bound_recorded_once_and_wake_once(mode: SlackMode) {
    let asked = asked(mode).await;
    let deliverer = asked.slack.deliverer();

    // Not offered, or bound to a round that is not the thread's latest: refused.
    let forged = asked.click(ONCALL_USER, button("kube-system"));
    deliverer.interact(forged).await.expect("acknowledged");
    let mut stale = asked.click(ONCALL_USER, button("payments"));
    stale["actions"][0]["block_id"] = json!(
        AnswerBlock {
            round: 7,
            index: 0,
            typed: false
        }
        .block_id()
    );
    deliverer.interact(stale).await.expect("acknowledged");
    let mut elsewhere = asked.click(ONCALL_USER, button("payments"));
    elsewhere["message"]["ts"] = json!("1733140000.000999");
    elsewhere["container"]["message_ts"] = json!("1733140000.000999");
    deliverer.interact(elsewhere).await.expect("acknowledged");

    // The click, delivered twice.
    let click = asked.click(ONCALL_USER, button("payments"));
    deliverer
        .interact(click.clone())
        .await
        .expect("acknowledged");
    deliverer.interact(click).await.expect("acknowledged");
    wait_count(
        &asked.db.pool,
        "the answer",
        "SELECT count(*) FROM messages WHERE kind = 'answer'",
        1,
        Duration::from_secs(30),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        asked.answers().await,
        1,
        "forged and stale clicks record nothing"
    );
    assert_eq!(asked.wakes().await, 1);
    let (text, user): (String, String) =
        sqlx::query_as("SELECT text, user_id FROM messages WHERE kind = 'answer'")
            .fetch_one(&asked.db.pool)
            .await
            .unwrap();
    assert_eq!((text.as_str(), user.as_str()), ("payments", ONCALL_USER));
    assert_eq!(
        count(
            &asked.db.pool,
            "SELECT count(*) FROM outbox o JOIN messages m ON m.id = o.message_id
              WHERE m.kind = 'answer' AND o.kind = 'publish'"
        )
        .await,
        1,
        "the answer's Kafka record"
    );
    // The question shows who answered what, its buttons gone.
    firstline_testkit::wait_for("the question edited", Duration::from_secs(10), || async {
        let shown = asked
            .slack
            .workspace()
            .message(INCIDENTS, &asked.reply_ts)?;
        let blocks = shown.blocks.unwrap_or(Value::Null).to_string();
        (blocks.contains("<@U07ONCALL01> answered question 1: *payments*")
            && !blocks.contains("answer_0"))
        .then_some(())
    })
    .await;

    // Someone else types an answer after it was answered: recorded, no second round.
    let typed = json!({"type": "plain_text_input", "action_id": "answer_text",
                       "block_id": AnswerBlock { round: ROUND, index: 0, typed: true }.block_id(),
                       "value": "shop, I think"});
    let late = asked.click("U07ONCALL02", typed);
    deliverer.interact(late).await.expect("acknowledged");
    wait_count(
        &asked.db.pool,
        "the late answer",
        "SELECT count(*) FROM messages WHERE kind = 'answer'",
        2,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        asked.wakes().await,
        1,
        "a question already answered wakes nothing"
    );
    asked.stop().await;
}

#[tokio::test]
async fn clicks_over_http_are_bound_recorded_once_and_wake_once() {
    clicks_are_bound_recorded_once_and_wake_once(SlackMode::Http).await;
}

#[tokio::test]
async fn clicks_over_socket_mode_are_bound_recorded_once_and_wake_once() {
    clicks_are_bound_recorded_once_and_wake_once(SlackMode::Socket).await;
}

#[tokio::test]
async fn interactions_are_verified_like_events() {
    let asked = asked(SlackMode::Http).await;
    let url = asked
        .bot
        .events_url
        .replace("/slack/events", "/slack/interactivity");
    let click = asked.click(ONCALL_USER, button("payments"));
    let body: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &click.to_string())
        .finish();
    // Signed with another secret, or replayed ten minutes later: 401, nothing stored.
    let forged = Deliverer::new(
        "not-the-signing-secret",
        Some(asked.bot.events_url.clone()),
        Duration::from_millis(10),
    );
    let refused = forged.interact(click.clone()).await;
    assert_eq!(refused, Err("HTTP 401 Unauthorized".into()));
    assert_eq!(post_signed(&url, &body, -600, &[]).await, 401);
    // Verified, but no payload, or not JSON: 400.
    assert_eq!(post_signed(&url, "token=x", 0, &[]).await, 400);
    assert_eq!(post_signed(&url, "payload=%7Bnot-json", 0, &[]).await, 400);
    assert_eq!(asked.answers().await, 0);
    assert_eq!(asked.wakes().await, 0);
    // The same body, signed now: recorded.
    assert_eq!(post_signed(&url, &body, 0, &[]).await, 200);
    assert_eq!(asked.answers().await, 1);
    // A pick from a select is read like a button (a question with many choices shows one).
    let select = asked.click(
        "U07ONCALL03",
        json!({"type": "static_select", "action_id": "answer_select",
               "block_id": "firstline.answer.1.0", "selected_option": {"value": "shop"}}),
    );
    asked
        .slack
        .deliverer()
        .interact(select)
        .await
        .expect("acknowledged");
    let picked: String = sqlx::query_scalar(
        "SELECT text FROM messages WHERE kind = 'answer' AND user_id = 'U07ONCALL03'",
    )
    .fetch_one(&asked.db.pool)
    .await
    .unwrap();
    assert_eq!(picked, "shop");
    asked.stop().await;
}

#[tokio::test]
async fn feedback_is_stored_once_per_person_per_round_and_counted() {
    let asked = asked(SlackMode::Http).await;
    let deliverer = asked.slack.deliverer();
    let feedback = |verdict: &str| {
        json!({"type": "button", "action_id": format!("feedback_{verdict}"), "value": verdict,
               "block_id": "firstline.feedback.1"})
    };
    let rows = || async {
        sqlx::query_as::<_, (String, String)>(
            "SELECT user_id, verdict FROM round_feedback ORDER BY user_id",
        )
        .fetch_all(&asked.db.pool)
        .await
        .unwrap()
    };
    // A double click, then a change of mind: one row, the latest verdict.
    let mut trigger = String::new();
    for verdict in ["helpful", "helpful", "wrong"] {
        let click = asked.click(ONCALL_USER, feedback(verdict));
        trigger = click["trigger_id"].as_str().unwrap_or_default().to_string();
        deliverer.interact(click).await.expect("acknowledged");
    }
    assert_eq!(
        rows().await,
        [(ONCALL_USER.to_string(), "wrong".to_string())]
    );

    // "Wrong cause" opened the dialog for the right cause; its text is stored on that verdict,
    // redacted, and someone who did not mark the round wrong cannot add one.
    let (view_id, view) =
        firstline_testkit::wait_for("the dialog", Duration::from_secs(10), || async {
            asked.slack.workspace().view_for(&trigger)
        })
        .await;
    assert_eq!(view["callback_id"], "firstline.wrong_cause");
    let typed = [(
        "right_cause",
        "text",
        "the node's disk filled up; password=hunter2hunter2",
    )];
    asked
        .slack
        .user_submits_view("U07ONCALL02", &view_id, &view, &typed)
        .await
        .expect("acknowledged");
    asked
        .slack
        .user_submits_view(ONCALL_USER, &view_id, &view, &typed)
        .await
        .expect("acknowledged");
    let note: Option<String> = sqlx::query_scalar("SELECT note FROM round_feedback")
        .fetch_one(&asked.db.pool)
        .await
        .unwrap();
    let note = note.expect("the right cause stored");
    assert!(note.starts_with("the node's disk filled up"), "{note}");
    assert!(!note.contains("hunter2"), "redacted: {note}");
    // On a message that is not the round's reply, or a round that does not exist: nothing.
    let mut elsewhere = asked.click("U07ONCALL02", feedback("helpful"));
    elsewhere["message"]["ts"] = json!("1733140000.000999");
    elsewhere["container"]["message_ts"] = json!("1733140000.000999");
    deliverer.interact(elsewhere).await.expect("acknowledged");
    let mut no_round = asked.click("U07ONCALL02", feedback("helpful"));
    no_round["actions"][0]["block_id"] = json!("firstline.feedback.9");
    deliverer.interact(no_round).await.expect("acknowledged");
    assert_eq!(rows().await.len(), 1);
    assert_eq!(asked.answers().await, 0, "feedback is not an answer");
    assert_eq!(asked.wakes().await, 0, "feedback wakes nothing");
    // Exported on /metrics: the helpful click and the change to wrong, not the repeat.
    let metrics = http_client()
        .get(&asked.bot.events_url.replace("/slack/events", "/metrics"))
        .send()
        .await;
    let counted = |verdict: &str| {
        metrics
            .body
            .lines()
            .find(|l| l.starts_with("firstline_round_feedback_total") && l.contains(verdict))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<f64>().ok())
    };
    assert!(
        counted("helpful").is_some_and(|n| n >= 1.0),
        "{}",
        metrics.body
    );
    assert!(
        counted("wrong").is_some_and(|n| n >= 1.0),
        "{}",
        metrics.body
    );
    asked.stop().await;
}

#[tokio::test]
async fn a_person_answers_from_the_standins_page_by_click_or_reply() {
    let asked = asked(SlackMode::Http).await;
    let page = http_client()
        .get(&format!("{}/", asked.slack.url()))
        .send()
        .await;
    assert!(
        page.body
            .contains("<button name=value value='payments'>payments</button>"),
        "the question's choices are buttons on the page: {}",
        page.body
    );
    let form = |pairs: &[(&str, &str)]| {
        let mut body = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            body.append_pair(k, v);
        }
        body.finish()
    };
    let clicked = http_client()
        .post(&format!("{}/ui/act", asked.slack.url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("channel", INCIDENTS),
            ("ts", &asked.reply_ts),
            ("block_id", "firstline.answer.1.0"),
            ("action_id", "answer_1"),
            ("kind", "button"),
            ("value", "shop"),
        ]))
        .send()
        .await;
    assert_eq!(clicked.status(), 303, "{}", clicked.body);
    wait_count(
        &asked.db.pool,
        "the clicked answer",
        "SELECT count(*) FROM messages WHERE kind = 'answer' AND text = 'shop'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let thread_ts: String = sqlx::query_scalar("SELECT thread_ts FROM threads")
        .fetch_one(&asked.db.pool)
        .await
        .unwrap();
    let replied = http_client()
        .post(&format!("{}/ui/say", asked.slack.url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("channel", INCIDENTS),
            ("thread_ts", &thread_ts),
            ("text", "it's in shop"),
        ]))
        .send()
        .await;
    assert_eq!(replied.status(), 303);
    wait_count(
        &asked.db.pool,
        "the reply",
        "SELECT count(*) FROM messages WHERE kind = 'chatter' AND text = 'it''s in shop' AND thread_ts IS NOT NULL",
        1,
        Duration::from_secs(30),
    )
    .await;
    asked.stop().await;
}
