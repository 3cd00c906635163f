//! `firstline doctor`: checks the environment and says how to fix each problem.
//!
//! It checks the tools `scripts/setup` installs, the unprivileged Postgres user, the dev ports,
//! and whether PostgreSQL (with pgvector), Temporal and Kafka answer. When `firstline dev` is
//! running it checks the addresses that dev wrote to `<state_dir>/env`; otherwise the configured
//! ones. Exit code 1 when anything fails.

use firstline_config::env_var;
use firstline_config::{DatabaseUrl, Settings, TemporalSettings};
use firstline_stack::ports::{self, PortSetting};
use firstline_stack::tools::Tools;
use std::process::ExitCode;
use std::time::Duration;

struct Report {
    failures: usize,
}

impl Report {
    fn ok(&mut self, what: &str, detail: impl std::fmt::Display) {
        println!("ok    {what:<10} {detail}");
    }

    fn fail(&mut self, what: &str, problem: impl std::fmt::Display) {
        self.failures += 1;
        println!("FAIL  {what:<10} {problem}");
    }
}

pub async fn run(mut settings: Settings) -> anyhow::Result<ExitCode> {
    let mut report = Report { failures: 0 };
    let dev = &settings.dev;

    let tools = match Tools::locate(&dev.tools_dir) {
        Ok(tools) => {
            report.ok("tools", format!("in {}", dev.tools_dir.display()));
            Some(tools)
        }
        Err(e) => {
            report.fail("tools", e);
            None
        }
    };

    if nix::unistd::Uid::effective().is_root() {
        match nix::unistd::User::from_name(&dev.postgres_os_user) {
            Ok(Some(_)) => report.ok(
                "os user",
                format!("PostgreSQL will run as `{}`", dev.postgres_os_user),
            ),
            _ => report.fail(
                "os user",
                format!(
                    "system user `{0}` missing (PostgreSQL refuses root): run scripts/setup or `useradd --system {0}`",
                    dev.postgres_os_user
                ),
            ),
        }
    }

    let dev_pid = firstline_stack::running(&dev.state_dir);
    match dev_pid {
        Some(pid) => {
            report.ok(
                "dev",
                format!("firstline dev is running (pid {pid}); checking its stack"),
            );
            adopt_dev_addresses(&mut settings);
        }
        None => {
            for (port, purpose, setting) in [
                (dev.postgres_port, "PostgreSQL", "dev.postgres_port"),
                (dev.temporal_port, "Temporal", "dev.temporal_port"),
                (dev.kafka_port, "Kafka", "dev.kafka_port"),
            ] {
                match ports::resolve(PortSetting {
                    port,
                    purpose,
                    setting,
                }) {
                    Ok(_) => report.ok("port", format!("{port} free for {purpose}")),
                    Err(e) => report.fail("port", e),
                }
            }
        }
    }

    check_database(
        &mut report,
        &settings.database.url,
        settings.database.connect_timeout_secs,
    )
    .await;
    check_temporal(&mut report, &settings.temporal, tools.as_ref()).await;
    check_kafka(&mut report, &settings.kafka).await;

    if report.failures == 0 {
        println!("all checks passed");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} check(s) failed", report.failures);
        Ok(ExitCode::FAILURE)
    }
}

/// Uses the addresses a running `firstline dev` wrote, so doctor checks what is really running.
fn adopt_dev_addresses(settings: &mut Settings) {
    let env_file = settings.dev.state_dir.join("env");
    let Ok(contents) = std::fs::read_to_string(env_file) else {
        return;
    };
    for line in contents.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name == env_var("database.url") {
            settings.database.url = DatabaseUrl::new(value);
        } else if name == env_var("temporal.address") {
            settings.temporal.address = value.to_string();
        } else if name == env_var("kafka.brokers") {
            settings.kafka.brokers = value.to_string();
        }
    }
}

async fn check_database(report: &mut Report, url: &DatabaseUrl, timeout_secs: u64) {
    let timeout = Duration::from_secs(timeout_secs);
    let mut connection = match firstline_store::connect_one(url, timeout).await {
        Ok(connection) => connection,
        Err(e) => {
            return report.fail("database", format!("{e}; `firstline dev` runs one locally"));
        }
    };
    match firstline_store::describe_server(&mut connection).await {
        Ok(server) if server.pgvector_available => report.ok(
            "database",
            format!(
                "{url} answers: {}; pgvector {}",
                server.version,
                server
                    .pgvector_installed
                    .as_deref()
                    .unwrap_or("available, not yet installed (firstline migrate installs it)")
            ),
        ),
        Ok(server) => report.fail(
            "database",
            format!(
                "{url} answers ({}) but has no pgvector: install pgvector on that server",
                server.version
            ),
        ),
        Err(e) => report.fail("database", e),
    }
}

async fn check_temporal(report: &mut Report, temporal: &TemporalSettings, tools: Option<&Tools>) {
    let address = &temporal.address;
    if temporal.tls() {
        // TLS, a client certificate or an API key: ask the way the bot and the worker connect.
        let answer =
            firstline_temporal::connect(temporal, "firstline-doctor", Duration::from_secs(5))
                .await
                .map(drop);
        match answer {
            Ok(()) => report.ok("temporal", format!("{address} answers over TLS")),
            Err(e) => report.fail("temporal", e.to_string()),
        }
        return;
    }
    let host_port = address
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let result = match tools {
        Some(tools) => firstline_stack::temporal::health(tools.temporal.clone(), host_port).await,
        None => tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect(host_port.as_str()),
        )
        .await
        .map_err(|_| "no answer within 3 s".to_string())
        .and_then(|r| r.map(drop).map_err(|e| e.to_string())),
    };
    let answer = if tools.is_some() {
        "is SERVING"
    } else {
        "accepts connections (install the tools for a real health check)"
    };
    match result {
        Ok(()) => report.ok("temporal", format!("{address} {answer}")),
        Err(e) => report.fail(
            "temporal",
            format!(
                "{address}: {e} (start `firstline dev`, or set {})",
                env_var("temporal.address")
            ),
        ),
    }
}

async fn check_kafka(report: &mut Report, kafka: &firstline_config::KafkaSettings) {
    let brokers = kafka.brokers.as_str();
    let first = brokers
        .split(',')
        .next()
        .unwrap_or(brokers)
        .trim()
        .to_string();
    if kafka.security != firstline_config::KafkaSecurity::Plaintext {
        // TLS and SASL: a real client's handshake and login, then the cluster's metadata.
        match kafka_metadata(kafka.clone()).await {
            Ok(brokers) => report.ok(
                "kafka",
                format!("{first}: logged in, {brokers} broker(s) in the metadata"),
            ),
            Err(e) => report.fail(
                "kafka",
                format!(
                    "{first}: {e} (check {}, {} and {})",
                    env_var("kafka.security"),
                    env_var("kafka.ca_file"),
                    env_var("kafka.sasl_username")
                ),
            ),
        }
        return;
    }
    match firstline_stack::broker::api_versions(first.clone()).await {
        Ok(()) => report.ok("kafka", format!("{first} answers ApiVersions")),
        Err(e) => report.fail(
            "kafka",
            format!(
                "{first}: {e} (start `firstline dev`, or set {})",
                env_var("kafka.brokers")
            ),
        ),
    }
}

/// The number of brokers the cluster's metadata lists, asked with the configured security.
async fn kafka_metadata(kafka: firstline_config::KafkaSettings) -> Result<usize, String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    // librdkafka's calls block their thread.
    tokio::task::spawn_blocking(move || {
        let mut config = rdkafka::ClientConfig::new();
        for (key, value) in kafka.client_properties().map_err(|e| e.to_string())? {
            config.set(key, value);
        }
        let context = LastError::default();
        let consumer: BaseConsumer<LastError> = config
            .create_with_context(context)
            .map_err(|e| e.to_string())?;
        consumer
            .fetch_metadata(None, std::time::Duration::from_secs(10))
            .map(|metadata| metadata.brokers().len())
            .map_err(|e| {
                // "Broker transport failure" hides why: the client's own error says it (a
                // refused login, an untrusted certificate), delivered when its events are served.
                let _ = consumer.poll(std::time::Duration::from_millis(200));
                let why = consumer
                    .context()
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                why.unwrap_or_else(|| e.to_string())
            })
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The client's most recent error, as librdkafka reported it.
#[derive(Default)]
struct LastError(std::sync::Mutex<Option<String>>);

impl rdkafka::ClientContext for LastError {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        let said = format!("{error}: {reason}");
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(said);
    }
}

impl rdkafka::consumer::ConsumerContext for LastError {}
