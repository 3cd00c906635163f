//! Kafka over TLS and SASL (issue 24): managed Kafka services ask for TLS and a SASL login
//! (SCRAM-SHA-512 on MSK, PLAIN on Confluent Cloud and Event Hubs). The test broker speaks only
//! plaintext, so a front (`support/kafka_front.py`) terminates TLS with a certificate from a CA of
//! the test's own and checks SASL logins (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) against one user,
//! before the real broker run in a network namespace of its own — so the address the broker
//! advertises is the front's, and every client connection goes through it.
//!
//! - SCRAM-SHA-512 over TLS: an alert and a person's reply go from the bot's relay (its
//!   idempotent producer) through the front to the embedder (its consumer group), which embeds
//!   the reply; the front saw the logins.
//! - `firstline doctor` logs in with PLAIN and SCRAM-SHA-256, and names the failure for a wrong
//!   password and for a certificate from another CA.
//!
//! Needs root for `ip netns` (CI runs as root; `scripts/setup` installs iproute2).

mod support;

// Its client certificates are for the Temporal and PostgreSQL fronts.
#[allow(dead_code)]
#[path = "support/test_ca.rs"]
mod test_ca;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use firstline_config::{KafkaSecurity, KafkaSettings, SecretString};
use support::round_app::{RoundApp, kafka_env, test_settings};
use test_ca::TestCa;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const USER: &str = "firstline";
const PASSWORD: &str = "Kq7-scram-pw-3f9d";
const WAIT: Duration = Duration::from_secs(60);

/// The plaintext broker in its own network namespace, and the front before it.
struct SecuredBroker {
    port: u16,
    ca_file: PathBuf,
    namespace: String,
    children: Vec<Child>,
    logins: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

fn tools() -> PathBuf {
    firstline_testkit::workspace_root().join(".tools")
}

fn python() -> PathBuf {
    tools().join("venv/bin/python")
}

fn front_script() -> PathBuf {
    firstline_testkit::workspace_root().join("tests/support/kafka_front.py")
}

fn spawn(command: &mut Command, what: &str) -> Child {
    command
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"))
}

async fn ip(args: &[&str]) {
    let output = Command::new("ip")
        .args(args)
        .output()
        .await
        .expect("running ip (iproute2; scripts/setup installs it)");
    assert!(
        output.status.success(),
        "ip {args:?}: {} (needs root)",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl SecuredBroker {
    /// Starts the broker and a front with TLS, with a SASL login, or both.
    async fn start(tls: bool, sasl: bool) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let namespace = firstline_testkit::unique_name("fl-kafka");
        ip(&["netns", "add", &namespace]).await;
        ip(&["-n", &namespace, "link", "set", "lo", "up"]).await;
        let broker_bin = firstline_stack::tools::Tools::locate(&tools())
            .expect("the stack's tools (scripts/setup)")
            .broker;
        let socket = dir.path().join("broker.sock");
        let mut children = vec![spawn(
            Command::new("ip")
                .args(["netns", "exec", &namespace])
                .arg(&broker_bin)
                .args(["start", "--data-dir"])
                .arg(dir.path().join("data"))
                .args(["--only", "kafka", "--host", "127.0.0.1", "--kafka-port"])
                .arg(port.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            "the broker",
        )];
        children.push(spawn(
            Command::new("ip")
                .args(["netns", "exec", &namespace])
                .arg(python())
                .arg(front_script())
                .arg("bridge")
                .arg(&socket)
                .arg(port.to_string()),
            "the bridge",
        ));
        let ca = TestCa::new("kafka test CA");
        let ca_file = dir.path().join("ca.pem");
        ca.write_pem(&ca_file);
        let mut front = Command::new(python());
        front
            .arg(front_script())
            .arg("front")
            .arg(port.to_string())
            .arg(&socket)
            .stdout(Stdio::piped());
        if tls {
            let (cert, key) = ca.server_files(dir.path(), &["localhost", "127.0.0.1"]);
            front.arg("--tls").arg(cert).arg(key);
        }
        if sasl {
            front.args(["--sasl", USER, PASSWORD]);
        }
        let mut child = spawn(&mut front, "the front");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("the front starts")
            .expect("its stdout");
        assert_eq!(first.as_deref(), Some("listening"));
        let logins = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&logins);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        children.push(child);
        // The bridge's socket is up once it listens.
        firstline_testkit::wait_for("the bridge's socket", WAIT, || async {
            socket.exists().then_some(())
        })
        .await;
        Self {
            port,
            ca_file,
            namespace,
            children,
            logins,
            _dir: dir,
        }
    }

    /// The settings a client uses to reach it.
    fn settings(&self, security: KafkaSecurity, mechanism: &str, password: &str) -> KafkaSettings {
        let (tls, sasl) = (security.tls(), security.sasl());
        KafkaSettings {
            brokers: format!("127.0.0.1:{}", self.port),
            security,
            ca_file: tls.then(|| self.ca_file.clone()),
            sasl_mechanism: if sasl {
                mechanism.into()
            } else {
                String::new()
            },
            sasl_username: if sasl { USER.into() } else { String::new() },
            sasl_password: SecretString::new(if sasl { password } else { "" }),
            ..KafkaSettings::default()
        }
    }

    fn logins(&self) -> Vec<String> {
        self.logins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for SecuredBroker {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.start_kill();
        }
        // `ip netns exec` children die with their parent's kill; the namespace goes last.
        let _ = std::process::Command::new("ip")
            .args(["netns", "delete", &self.namespace])
            .status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn scram_sha_512_over_tls_carries_messages_from_the_bot_to_the_embedder() {
    let broker = SecuredBroker::start(true, true).await;
    let mut settings = test_settings();
    settings.kafka = broker.settings(KafkaSecurity::SaslSsl, "SCRAM-SHA-512", PASSWORD);
    let mut app = RoundApp::spawn("crashloop-config-exit-78", settings).await;
    app.start_embedder(None).await;

    let alert = app.post_alert(None).await;
    app.say(
        &alert,
        "checkout pods restarted right after the 14:05 deploy",
    )
    .await;
    // The relay's producer published both over TLS after its login (acks=all) ...
    firstline_testkit::wait_for("both records published", WAIT, || async {
        (app.count("SELECT count(*) FROM outbox WHERE kind = 'publish' AND sent_at IS NOT NULL")
            .await
            >= 2)
            .then_some(())
    })
    .await;
    // ... and the embedder's consumer read the reply back through the same front.
    firstline_testkit::wait_for("the reply embedded", WAIT, || async {
        (app.count("SELECT count(*) FROM message_embeddings").await >= 1).then_some(())
    })
    .await;
    let logins = broker.logins();
    assert!(
        logins.iter().any(|l| l == "login SCRAM-SHA-512 ok "),
        "{logins:?}"
    );
    assert!(!logins.iter().any(|l| l.contains("failed")), "{logins:?}");
    app.stop().await;
}

/// `firstline doctor`'s Kafka line with `kafka`'s settings.
async fn doctor_kafka_line(kafka: &KafkaSettings) -> String {
    let output = tokio::time::timeout(
        WAIT,
        Command::new(env!("CARGO_BIN_EXE_firstline"))
            .arg("doctor")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FIRSTLINE_DEV__TOOLS_DIR", tools())
            .envs(kafka_env(kafka))
            .output(),
    )
    .await
    .expect("doctor answers within a minute")
    .expect("running firstline doctor");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("kafka"))
        .unwrap_or_else(|| panic!("no kafka line in {stdout}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_and_scram_sha_256_log_in_and_a_wrong_password_or_ca_is_named() {
    let broker = SecuredBroker::start(true, true).await;
    for mechanism in ["PLAIN", "SCRAM-SHA-256"] {
        let line =
            doctor_kafka_line(&broker.settings(KafkaSecurity::SaslSsl, mechanism, PASSWORD)).await;
        assert!(line.starts_with("ok"), "{mechanism}: {line}");
        assert!(line.contains("logged in"), "{mechanism}: {line}");
    }
    let line = doctor_kafka_line(&broker.settings(
        KafkaSecurity::SaslSsl,
        "SCRAM-SHA-256",
        "not-the-password",
    ))
    .await;
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(line.to_lowercase().contains("authentication"), "{line}");
    assert!(!line.contains("not-the-password"), "{line}");

    let stranger = tempfile::tempdir().expect("temp dir");
    let other_ca = stranger.path().join("other-ca.pem");
    TestCa::new("someone else's CA").write_pem(&other_ca);
    let mut untrusted = broker.settings(KafkaSecurity::SaslSsl, "PLAIN", PASSWORD);
    untrusted.ca_file = Some(other_ca);
    let line = doctor_kafka_line(&untrusted).await;
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(
        line.to_lowercase().contains("certificate") || line.to_lowercase().contains("ssl"),
        "{line}"
    );
    let logins = broker.logins();
    assert!(logins.iter().any(|l| l == "login PLAIN ok "), "{logins:?}");
    assert!(
        logins
            .iter()
            .any(|l| l.starts_with("login SCRAM-SHA-256 failed")),
        "{logins:?}"
    );
}
