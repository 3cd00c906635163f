//! Secrets people paste into a thread are removed at ingest and found nowhere after: not in
//! Postgres (messages, outbox, rounds, checkpoints), not in the Kafka records, not in the
//! Temporal history (the `mention` signals), not in the next round's context, not in the reply.

mod support;

use std::time::Duration;

use support::round_app::{BOT_USER, RoundApp, test_settings};
use temporalio_client::{UntypedWorkflow, WorkflowFetchHistoryOptions};
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);

/// One of each kind the redaction rules know, as people paste them.
const SECRETS: &[(&str, &str)] = &[
    ("password", "password=Hunter2-Xq9vL3mZ"),
    ("api key", "api_key=sk-live-9f8e7d6c5b4a39281706"),
    (
        "bearer header",
        "Authorization: Bearer abc.def-ghi_jkl9f8e7d6c",
    ),
    (
        "connection string",
        "postgres://app:s3cr3tPa55@db.prod:5432/orders",
    ),
    ("aws key id", "AKIAIOSFODNN7EXAMPLE"),
    ("slack token", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"),
    ("github token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7zSecretKeyMaterial\n-----END RSA PRIVATE KEY-----",
    ),
];

/// The part of each secret that must not survive (what the rules replace).
const SECRET_PARTS: &[&str] = &[
    "Hunter2-Xq9vL3mZ",
    "sk-live-9f8e7d6c5b4a39281706",
    "abc.def-ghi_jkl9f8e7d6c",
    "s3cr3tPa55",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "MIIEowIBAAKCAQEAq7zSecretKeyMaterial",
];

fn leaked(place: &str, text: &str) -> Vec<String> {
    SECRET_PARTS
        .iter()
        .filter(|secret| text.contains(*secret))
        .map(|secret| format!("{place} holds {secret}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_pasted_into_a_thread_are_found_nowhere() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;

    let pasted: Vec<String> = SECRETS
        .iter()
        .map(|(kind, secret)| format!("{kind}: {secret}"))
        .collect();
    let text = format!(
        "<@{BOT_USER}> the deploy used these, maybe it matters:\n{}",
        pasted.join("\n")
    );
    app.say(&alert, &text).await;
    app.wait_rounds(&alert, 2, ROUND).await;

    let mut leaks = Vec::new();
    let pool = &app.db.pool;
    for (place, sql) in [
        (
            "messages",
            "SELECT coalesce(string_agg(text || raw::text, ' '), '') FROM messages",
        ),
        (
            "outbox",
            "SELECT coalesce(string_agg(payload::text, ' '), '') FROM outbox",
        ),
        (
            "rounds",
            "SELECT coalesce(string_agg(result::text || text, ' '), '') FROM rounds",
        ),
        (
            "round checkpoints",
            "SELECT coalesce(string_agg(checkpoint::text, ' '), '') FROM round_checkpoints",
        ),
    ] {
        let stored: String = sqlx::query_scalar(sql)
            .fetch_one(pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        leaks.extend(leaked(place, &stored));
    }
    // The mention itself was stored (redacted), so the check above read the right rows.
    let redacted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM messages WHERE text LIKE '%the deploy used these%[REDACTED]%'",
    )
    .fetch_one(pool)
    .await
    .expect("count");
    assert_eq!(redacted, 1, "the mention is stored, redacted");

    let records = firstline_testkit::kafka::read_topic(
        &app.settings.kafka.brokers,
        &app.settings.kafka.topic,
        |records| {
            records
                .iter()
                .any(|(_, v)| v.contains("the deploy used these"))
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        records
            .iter()
            .any(|(_, v)| v.contains("the deploy used these")),
        "the mention reached Kafka"
    );
    for (_, value) in &records {
        leaks.extend(leaked("a Kafka record", value));
    }

    let client = app.temporal().await;
    let events = client
        .get_workflow_handle::<UntypedWorkflow>(app.workflow_id(&alert))
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .expect("the workflow's history");
    let decoded = decoded_payloads(events);
    assert!(
        decoded.contains("the deploy used these"),
        "the mention reached the workflow history"
    );
    leaks.extend(leaked("the Temporal history", &decoded));

    let context = app.round_input(&alert, 2).await.to_string();
    assert!(
        context.contains("the deploy used these"),
        "the answer is in round 2's context"
    );
    leaks.extend(leaked("round 2's context", &context));
    for reply in app.bot_replies(&alert) {
        leaks.extend(leaked("a reply", &reply.text));
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
    app.stop().await;
}

/// Every signal's and activity's input payload in a history, as text.
fn decoded_payloads(events: Vec<HistoryEvent>) -> String {
    let mut out = String::new();
    for event in events {
        let payloads = match event.attributes {
            Some(Attributes::WorkflowExecutionSignaledEventAttributes(a)) => a.input,
            Some(Attributes::ActivityTaskScheduledEventAttributes(a)) => a.input,
            Some(Attributes::ActivityTaskCompletedEventAttributes(a)) => a.result,
            _ => None,
        };
        for payload in payloads.map(|p| p.payloads).unwrap_or_default() {
            out.push_str(&String::from_utf8_lossy(&payload.data));
            out.push('\n');
        }
    }
    out
}
