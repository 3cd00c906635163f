//! Firstline reaches a Temporal that demands TLS, a client certificate and an API key, as
//! Temporal Cloud and hardened self-hosted frontends do (issue 16). The dev server has no TLS, so
//! a TLS front (`support::temporal_front`) stands before it on a real socket: it verifies the
//! client certificate in the handshake and the bearer key on every call, then forwards to the
//! real server.
//!
//! - a whole round runs through the front: the bot's signal-with-start, the `firstline worker`
//!   process's polls and activities, with nothing refused;
//! - each credential the front would refuse (wrong key, no or a stranger's client certificate,
//!   an untrusted or misnamed server certificate) fails at connect with an error that names the
//!   address and says why, and never shows the key;
//! - a worker with a wrong key stops at start with that error; a bot with a wrong key keeps the
//!   alert's wake-up in the outbox, retried, and loses nothing.

mod support;
// Only this test needs the front; the other test binaries that share `support` don't compile it.
#[path = "support/accept_loop.rs"]
mod accept_loop;
#[path = "support/temporal_front.rs"]
mod temporal_front;
#[path = "support/test_ca.rs"]
mod test_ca;

use std::process::Stdio;
use std::time::Duration;

use firstline_config::{SecretString, TemporalSettings};
use support::round_app::{RoundApp, test_settings};
use temporal_front::{FrontPolicy, SERVER_NAME, TemporalFront};

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(120);
const API_KEY: &str = "tmprl-test-key-b6f1c0";
const WRONG_KEY: &str = "tmprl-wrong-key-77aa";

async fn cloud_like_front() -> TemporalFront {
    TemporalFront::start(
        &firstline_testkit::stack().temporal_address,
        FrontPolicy {
            client_certificate: true,
            api_key: Some(API_KEY.into()),
        },
    )
    .await
}

/// Settings that satisfy `front`.
fn through(front: &TemporalFront) -> TemporalSettings {
    TemporalSettings {
        address: front.address.clone(),
        api_key: SecretString::new(API_KEY),
        server_ca_file: front.ca_file.clone(),
        server_name: SERVER_NAME.into(),
        client_cert_file: front.client.cert_file.clone(),
        client_key_file: front.client.key_file.clone(),
        ..TemporalSettings::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_runs_through_tls_with_a_client_certificate_and_an_api_key() {
    let front = cloud_like_front().await;
    let mut settings = test_settings();
    settings.temporal = through(&front);
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;

    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    assert!(
        rounds[0].posted_ts.is_some(),
        "the reply was posted: {rounds:?}"
    );
    // The run's outcome, read from Temporal through the front too.
    let outcome = app.run_outcome(&alert, ROUND).await;
    assert_eq!(outcome["outcome"], "answered", "{outcome}");

    assert!(
        front.forwarded() > 10,
        "the bot and the worker talked to Temporal through the front: {} calls",
        front.forwarded()
    );
    assert_eq!(front.unauthenticated(), 0, "every call carried the key");
    assert_eq!(
        front.handshakes_refused(),
        0,
        "every connection showed the client certificate"
    );
    app.stop().await;
}

/// Who refuses a bad credential.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Refuser {
    /// The front, in the TLS handshake (a client certificate).
    FrontHandshake,
    /// The front, per call (the API key).
    FrontCall,
    /// The client itself, before it sends anything (the server's certificate).
    Client,
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_front_refuses_fails_at_connect_and_says_why() {
    let front = cloud_like_front().await;
    let good = through(&front);
    let connect = |settings: TemporalSettings| async move {
        firstline_temporal::connect(&settings, "firstline-test", Duration::from_secs(10)).await
    };
    connect(good.clone())
        .await
        .expect("the right key and certificate connect");

    // Each case: the settings, who refuses, and the words the error must hold (what was
    // refused, and the setting the hint sends the operator to).
    let cases: Vec<(&str, TemporalSettings, Refuser, &[&str])> = vec![
        (
            "a wrong API key",
            TemporalSettings {
                api_key: SecretString::new(WRONG_KEY),
                ..good.clone()
            },
            Refuser::FrontCall,
            &["Unauthenticated", "temporal.api_key"],
        ),
        (
            "no API key",
            TemporalSettings {
                api_key: SecretString::default(),
                ..good.clone()
            },
            Refuser::FrontCall,
            &["Unauthenticated", "temporal.api_key"],
        ),
        (
            "no client certificate",
            TemporalSettings {
                client_cert_file: Default::default(),
                client_key_file: Default::default(),
                ..good.clone()
            },
            Refuser::FrontHandshake,
            &["temporal.client_cert_file"],
        ),
        (
            "a client certificate from another CA",
            TemporalSettings {
                client_cert_file: front.stranger.cert_file.clone(),
                client_key_file: front.stranger.key_file.clone(),
                ..good.clone()
            },
            Refuser::FrontHandshake,
            &["temporal.client_cert_file"],
        ),
        (
            "a server certificate from a CA it does not trust",
            TemporalSettings {
                server_ca_file: Default::default(),
                ..good.clone()
            },
            Refuser::Client,
            &["UnknownIssuer", "temporal.server_ca_file"],
        ),
        (
            "a server certificate for another name",
            TemporalSettings {
                server_name: String::new(),
                ..good.clone()
            },
            Refuser::Client,
            &["not valid for name", "temporal.server_name"],
        ),
    ];
    for (what, settings, refuser, words) in cases {
        let (handshakes, calls, forwarded) = (
            front.handshakes_refused(),
            front.unauthenticated(),
            front.forwarded(),
        );
        let error = connect(settings)
            .await
            .expect_err(&format!("{what} is refused"));
        let text = error.to_string();
        eprintln!("{what}: {text}");
        assert!(
            text.starts_with(&format!("connecting to Temporal at {}", front.address)),
            "{what}: the error names the address: {text}"
        );
        for word in words {
            assert!(text.contains(word), "{what}: `{word}` in: {text}");
        }
        for secret in [API_KEY, WRONG_KEY] {
            assert!(!text.contains(secret), "{what}: the key is shown: {text}");
        }
        // Nothing reached the dev server, and the refusal came from where it should.
        assert_eq!(front.forwarded(), forwarded, "{what}: nothing forwarded");
        match refuser {
            Refuser::FrontHandshake => assert!(
                front.handshakes_refused() > handshakes,
                "{what}: the front refused the handshake"
            ),
            Refuser::FrontCall => assert!(
                front.unauthenticated() > calls,
                "{what}: the front refused the call"
            ),
            Refuser::Client => {
                assert_eq!(front.unauthenticated(), calls, "{what}: no call was sent")
            }
        }
    }

    let closed = TemporalSettings {
        address: "https://127.0.0.1:9".into(),
        ..good
    };
    let error = connect(closed).await.expect_err("nothing listens");
    assert!(
        error
            .to_string()
            .starts_with("connecting to Temporal at https://127.0.0.1:9"),
        "{error}"
    );
}

/// Temporal Cloud's usual mode: TLS against the server's certificate, an API key, no client
/// certificate.
#[tokio::test(flavor = "multi_thread")]
async fn an_api_key_over_tls_without_a_client_certificate_connects() {
    let front = TemporalFront::start(
        &firstline_testkit::stack().temporal_address,
        FrontPolicy {
            client_certificate: false,
            api_key: Some(API_KEY.into()),
        },
    )
    .await;
    let settings = TemporalSettings {
        client_cert_file: Default::default(),
        client_key_file: Default::default(),
        ..through(&front)
    };
    let client = firstline_temporal::connect(&settings, "firstline-test", Duration::from_secs(10))
        .await
        .expect("the key over TLS connects");
    // A real call beyond the handshake's GetSystemInfo, through the front.
    let forwarded = front.forwarded();
    let namespaces = client
        .connection()
        .workflow_service()
        .list_namespaces(temporalio_client::tonic::Request::new(Default::default()))
        .await
        .expect("ListNamespaces answers");
    assert!(
        namespaces.into_inner().namespaces.iter().any(|n| n
            .namespace_info
            .as_ref()
            .is_some_and(|i| i.name == "default")),
        "the dev server's namespaces came back through the front"
    );
    assert!(front.forwarded() > forwarded);
    assert_eq!(front.unauthenticated(), 0);

    let wrong = TemporalSettings {
        api_key: SecretString::new(WRONG_KEY),
        ..settings
    };
    let error = firstline_temporal::connect(&wrong, "firstline-test", Duration::from_secs(10))
        .await
        .expect_err("a wrong key is refused");
    assert!(error.to_string().contains("Unauthenticated"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_with_a_wrong_key_stops_at_start_and_a_bot_keeps_the_wake_up() {
    let front = cloud_like_front().await;
    let mut settings = test_settings();
    settings.temporal = through(&front);
    settings.temporal.api_key = SecretString::new(WRONG_KEY);
    let app = RoundApp::spawn(CRASHLOOP, settings).await;

    // The worker: one error line naming the address and the refusal, a non-zero exit.
    let mut worker = app.worker_command();
    worker.stdout(Stdio::null()).stderr(Stdio::piped());
    let output = tokio::time::timeout(Duration::from_secs(90), worker.output())
        .await
        .expect("the worker exits within 90 s")
        .expect("running the worker");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("connecting to Temporal at {}", front.address)),
        "{stderr}"
    );
    assert!(
        stderr.to_lowercase().contains("unauthenticated"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(WRONG_KEY),
        "the key is never printed: {stderr}"
    );

    // The bot: the alert is recorded, its wake-up waits in the outbox with the reason.
    let alert = app.post_alert(None).await;
    let (attempts, error): (i32, String) = firstline_testkit::wait_for(
        "the wake-up to be retried",
        Duration::from_secs(60),
        || async {
            sqlx::query_as::<_, (i32, Option<String>)>(
                "SELECT o.attempts, o.last_error FROM outbox o JOIN messages m ON m.id = o.message_id \
                 WHERE o.kind = 'wake' AND m.ts = $1 AND o.sent_at IS NULL",
            )
            .bind(&alert)
            .fetch_optional(&app.db.pool)
            .await
            .ok()
            .flatten()
            .and_then(|(attempts, error)| (attempts >= 2).then_some((attempts, error?)))
        },
    )
    .await;
    assert!(error.to_lowercase().contains("unauthenticated"), "{error}");
    assert!(
        !error.contains(WRONG_KEY),
        "the key is never stored: {error}"
    );
    assert!(attempts >= 2);
    assert!(
        app.rounds(&alert).await.is_empty(),
        "no round without Temporal"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_checks_a_tls_frontend_the_way_the_worker_connects() {
    let front = cloud_like_front().await;
    let state = tempfile::tempdir().expect("temp dir");
    let doctor = |key: &str| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_firstline"));
        for (name, _) in std::env::vars() {
            if name.starts_with("FIRSTLINE_") {
                command.env_remove(name);
            }
        }
        command
            .arg("doctor")
            .env("FIRSTLINE_DEV__STATE_DIR", state.path())
            .env("FIRSTLINE_TEMPORAL__ADDRESS", &front.address)
            .env("FIRSTLINE_TEMPORAL__API_KEY", key)
            .env("FIRSTLINE_TEMPORAL__SERVER_CA_FILE", &front.ca_file)
            .env("FIRSTLINE_TEMPORAL__SERVER_NAME", SERVER_NAME)
            .env(
                "FIRSTLINE_TEMPORAL__CLIENT_CERT_FILE",
                &front.client.cert_file,
            )
            .env(
                "FIRSTLINE_TEMPORAL__CLIENT_KEY_FILE",
                &front.client.key_file,
            )
            .env("FIRSTLINE_DATABASE__CONNECT_TIMEOUT_SECS", "1");
        command
    };
    // The line of the `temporal` check (not a port or tools line that mentions Temporal).
    let temporal_line = |stdout: &[u8]| {
        String::from_utf8_lossy(stdout)
            .lines()
            .find(|line| line.split_whitespace().nth(1) == Some("temporal"))
            .unwrap_or_default()
            .to_string()
    };

    let good = doctor(API_KEY).output().await.expect("doctor runs");
    let line = temporal_line(&good.stdout);
    assert!(
        line.starts_with("ok") && line.contains(&format!("{} answers over TLS", front.address)),
        "{line}"
    );

    let bad = doctor(WRONG_KEY).output().await.expect("doctor runs");
    let line = temporal_line(&bad.stdout);
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(line.contains("Unauthenticated"), "{line}");
    assert!(line.contains("temporal.api_key"), "{line}");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&bad.stdout),
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(!all.contains(WRONG_KEY), "the key is never printed: {all}");
}
