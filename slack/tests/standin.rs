//! The Slack stand-in's own behaviour, observed from outside the way the bot sees it: messages
//! keep their legacy `attachments` beside their text, as Slack keeps them, through the incoming
//! webhook, `chat.postMessage` (form or JSON body), the delivered (signed) events and
//! `conversations.replies`.

mod common;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use common::{SECRET, request, standin};
use firstline_slack::signing;
use firstline_slack::standin::StandIn;
use firstline_slack::standin::state::INCIDENTS;
use hyper::Method;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Alertmanager's legacy Slack format: empty `text`, the whole alert in one attachment.
fn alertmanager_attachments() -> Value {
    json!([{
        "color": "danger",
        "fallback": "[FIRING:1] KubePodCrashLooping checkout",
        "pretext": "",
        "title": "[FIRING:1] KubePodCrashLooping checkout",
        "title_link": "http://alertmanager.example/#/alerts?receiver=slack",
        "text": "*Alert:* Pod is crash looping\n*Description:* checkout-7d9f restarted 5 times",
        "fields": [{"title": "namespace", "value": "shop", "short": true}],
        "footer": "Alertmanager",
        "mrkdwn_in": ["fallback", "pretext", "text"],
    }])
}

/// An Events API endpoint on a free port: every POST it receives, `(headers, body)`, in order.
async fn events_endpoint(
    cancel: &CancellationToken,
) -> (String, mpsc::UnboundedReceiver<(HeaderMap, String)>) {
    async fn receive(
        State(tx): State<mpsc::UnboundedSender<(HeaderMap, String)>>,
        headers: HeaderMap,
        body: String,
    ) {
        let _ = tx.send((headers, body));
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/slack/events", listener.local_addr().unwrap());
    let router = axum::Router::new()
        .route("/slack/events", post(receive))
        .with_state(tx);
    let cancel = cancel.clone();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await
            .unwrap();
    });
    (url, rx)
}

/// The next delivered payload, checked to be signed with the bot's secret.
async fn next_event(events: &mut mpsc::UnboundedReceiver<(HeaderMap, String)>) -> Value {
    let (headers, body) = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event within 10 s")
        .expect("the endpoint is running");
    let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_string();
    let timestamp: i64 = header("x-slack-request-timestamp").parse().unwrap();
    assert_eq!(
        header("x-slack-signature"),
        signing::signature(SECRET, timestamp, body.as_bytes())
    );
    serde_json::from_str(&body).unwrap()
}

/// The messages of `thread_ts`'s thread, as `conversations.replies` answers.
async fn replies(slack: &StandIn, thread_ts: &str) -> Vec<Value> {
    let (status, body) = request(
        Method::GET,
        &format!(
            "{}/conversations.replies?token=xoxb-t&channel={INCIDENTS}&ts={thread_ts}",
            slack.api_url()
        ),
        &[],
        String::new(),
    )
    .await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    answer["messages"].as_array().unwrap().clone()
}

async fn webhook(slack: &StandIn, payload: Value) -> (u16, String) {
    request(
        Method::POST,
        &format!("{}/webhook/{INCIDENTS}", slack.url()),
        &[("content-type", "application/json")],
        payload.to_string(),
    )
    .await
}

#[tokio::test]
async fn an_attachments_only_webhook_alert_is_delivered_and_read_back_as_posted() {
    let cancel = CancellationToken::new();
    let (events_url, mut events) = events_endpoint(&cancel).await;
    let slack = standin(&cancel, Some(events_url)).await;
    let attachments = alertmanager_attachments();
    let posted = webhook(
        &slack,
        json!({"username": "Alertmanager", "text": "", "attachments": attachments}),
    )
    .await;
    assert_eq!(posted, (200, "ok".to_string()));

    let payload = next_event(&mut events).await;
    assert_eq!(payload["type"], "event_callback");
    let event = &payload["event"];
    assert_eq!(event["type"], "message");
    assert_eq!(event["subtype"], "bot_message");
    assert_eq!(event["username"], "Alertmanager");
    assert_eq!(event["text"], "", "the text stays as posted: {event}");
    assert_eq!(event["attachments"], attachments);

    let ts = event["ts"].as_str().unwrap();
    let thread = replies(&slack, ts).await;
    assert_eq!(thread.len(), 1);
    assert_eq!(thread[0]["text"], "");
    assert_eq!(thread[0]["attachments"], attachments);
    let stored = slack.workspace().thread(INCIDENTS, ts).unwrap();
    assert_eq!(stored[0].attachments, Some(attachments));

    // The HTML view shows the alert under the (empty) message.
    let (_, page) = request(Method::GET, &slack.url(), &[], String::new()).await;
    assert!(
        page.contains("[FIRING:1] KubePodCrashLooping checkout") && page.contains("namespace"),
        "{page}"
    );

    // Text and attachments both, as Grafana's legacy format posts: both kept, apart.
    let grafana = json!([{"title": "[Alerting] High latency", "text": "p99 above 2 s"}]);
    let posted = webhook(
        &slack,
        json!({"username": "Grafana", "text": "checkout alert", "attachments": grafana}),
    )
    .await;
    assert_eq!(posted.0, 200);
    let event = next_event(&mut events).await["event"].clone();
    assert_eq!(event["text"], "checkout alert");
    assert_eq!(event["attachments"], grafana);

    // Neither text nor attachments: refused, as Slack refuses it, and nothing delivered.
    for empty in [
        json!({"username": "Alertmanager"}),
        json!({"text": "", "attachments": []}),
    ] {
        assert_eq!(webhook(&slack, empty).await, (400, "no_text".to_string()));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(events.try_recv().is_err(), "no event for a refused post");
    cancel.cancel();
}

#[tokio::test]
async fn chat_post_message_keeps_attachments_from_a_form_or_a_json_body() {
    let cancel = CancellationToken::new();
    let (events_url, mut events) = events_endpoint(&cancel).await;
    let slack = standin(&cancel, Some(events_url)).await;
    let attachments = alertmanager_attachments();
    let post = format!("{}/chat.postMessage", slack.api_url());

    let form: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("token", "xoxb-t")
        .append_pair("channel", INCIDENTS)
        .append_pair("text", "")
        .append_pair("attachments", &attachments.to_string())
        .finish();
    let (_, answer) = request(
        Method::POST,
        &post,
        &[("content-type", "application/x-www-form-urlencoded")],
        form,
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["message"]["text"], "");
    assert_eq!(answer["message"]["attachments"], attachments);
    let event = next_event(&mut events).await["event"].clone();
    assert_eq!(event["text"], "");
    assert_eq!(event["attachments"], attachments);

    let parent = answer["ts"].as_str().unwrap();
    let body = json!({"channel": INCIDENTS, "thread_ts": parent, "text": "see below",
        "attachments": attachments});
    let (_, answer) = request(
        Method::POST,
        &post,
        &[
            ("content-type", "application/json; charset=utf-8"),
            ("authorization", "Bearer xoxb-t"),
        ],
        body.to_string(),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    let event = next_event(&mut events).await["event"].clone();
    assert_eq!(event["text"], "see below");
    assert_eq!(event["attachments"], attachments);

    let thread = replies(&slack, parent).await;
    assert_eq!(thread.len(), 2);
    assert!(thread.iter().all(|m| m["attachments"] == attachments));
    assert_eq!(
        thread.iter().map(|m| m["text"].clone()).collect::<Vec<_>>(),
        [json!(""), json!("see below")]
    );
    cancel.cancel();
}
