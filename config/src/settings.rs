//! The settings tree and its defaults.
//!
//! Each section is one outside system. Field docs are the operator's documentation: the README's
//! configuration table is checked against [`Settings::keys`] by a test, so a new setting cannot
//! go undocumented.

use crate::{ConfigError, DatabaseUrl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// All of Firstline's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// PostgreSQL, the source of truth.
    pub database: DatabaseSettings,
    /// The Temporal cluster that runs incident rounds.
    pub temporal: TemporalSettings,
    /// The Kafka-protocol broker every message is published to.
    pub kafka: KafkaSettings,
    /// The Slack app: tokens, signing secret, how events arrive.
    pub slack: SlackSettings,
    /// The bot process: HTTP listener, alert rules, outbox relays.
    pub bot: BotSettings,
    /// The embedded stack `firstline dev` runs on one machine.
    pub dev: DevSettings,
    /// Logging.
    pub log: LogSettings,
    /// MCP servers the investigation reads through, and which tool answers each capability.
    pub mcp: McpSettings,
    /// Limits of the per-thread round workflow (DESIGN invariant 9).
    pub round: RoundSettings,
    /// The worker process that runs rounds.
    pub worker: WorkerSettings,
}

/// PostgreSQL (with the pgvector extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `postgres://user:password@host:port/database`.
    pub url: DatabaseUrl,
    /// Connections in each process's pool.
    pub max_connections: u32,
    /// Seconds to wait for a connection before giving up.
    pub connect_timeout_secs: u64,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::new("postgres://firstline:firstline@127.0.0.1:55432/firstline"),
            max_connections: 10,
            connect_timeout_secs: 5,
        }
    }
}

/// Temporal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemporalSettings {
    /// Frontend gRPC address, e.g. `http://127.0.0.1:7233`.
    pub address: String,
    /// Namespace the rounds run in.
    pub namespace: String,
    /// Task queue of the incident-analysis workers.
    pub task_queue: String,
}

impl Default for TemporalSettings {
    fn default() -> Self {
        Self {
            address: "http://127.0.0.1:7233".into(),
            namespace: "default".into(),
            task_queue: "incident-analysis".into(),
        }
    }
}

/// Kafka (any Kafka-protocol broker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// Bootstrap servers, comma-separated `host:port`.
    pub brokers: String,
    /// Topic every recorded Slack message is published to.
    pub topic: String,
}

impl Default for KafkaSettings {
    fn default() -> Self {
        Self {
            brokers: "127.0.0.1:9092".into(),
            topic: "firstline.messages".into(),
        }
    }
}

/// A secret (token, signing secret): never printed by `Debug`/`Display`, empty when unset.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for signing or authenticating. Never log this.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether a value was configured.
    pub fn is_set(&self) -> bool {
        !self.0.trim().is_empty()
    }
}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_set() { "\"***\"" } else { "\"\"" })
    }
}

impl std::fmt::Display for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// How Slack delivers events to the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    /// The Events API: Slack POSTs signed requests to `bot.listen`.
    Http,
    /// Socket Mode: the bot opens a websocket with the app-level token.
    Socket,
}

/// The Slack app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlackSettings {
    /// Bot token (`xoxb-…`) for the Web API. Empty: `firstline dev` runs the Slack stand-in.
    pub bot_token: SecretString,
    /// Signing secret that verifies Events API requests (HTTP mode).
    pub signing_secret: SecretString,
    /// App-level token (`xapp-…`) for Socket Mode.
    pub app_token: SecretString,
    /// `http` (Events API) or `socket` (Socket Mode).
    pub mode: SlackMode,
    /// Web API base URL; the stand-in replaces it in dev and tests.
    pub api_url: String,
    /// The bot's own user id (`U…`); empty: asked from `auth.test` at start-up.
    pub bot_user_id: String,
    /// Port of the Slack stand-in `firstline dev` runs when no bot token is set (0 = any free port).
    pub standin_port: u16,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            bot_token: SecretString::default(),
            signing_secret: SecretString::default(),
            app_token: SecretString::default(),
            mode: SlackMode::Http,
            api_url: "https://slack.com/api".into(),
            bot_user_id: String::new(),
            standin_port: 3100,
        }
    }
}

/// Which messages in which channels are alerts. A rule matches when the channel matches, the
/// sender matches one of the sender lists (when any is given), and the text matches one of the
/// patterns (when any is given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AlertRule {
    /// Channel ids the rule applies to; empty or `*` means every channel.
    pub channels: Vec<String>,
    /// Integration bot ids (`B…`) that post alerts.
    pub bot_ids: Vec<String>,
    /// Integration app ids (`A…`) that post alerts.
    pub app_ids: Vec<String>,
    /// Bot usernames that post alerts (case-insensitive), e.g. `Alertmanager`.
    pub usernames: Vec<String>,
    /// Regular expressions over the message text.
    pub text_patterns: Vec<String>,
}

/// Longest `bot.outbox_retention_hours` accepted.
pub const MAX_OUTBOX_RETENTION_HOURS: u64 = 24 * 365 * 10;

/// The bot process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BotSettings {
    /// Address the Events API endpoint (`/slack/events`), `/healthz` and `/metrics` listen on.
    pub listen: String,
    /// Largest request body accepted, in bytes.
    pub body_limit_bytes: usize,
    /// Milliseconds the ingest transaction may take before Slack gets a 503 (Slack waits 3 s).
    pub ingest_timeout_ms: u64,
    /// Most messages committed in one ingest transaction (group commit under load).
    pub ingest_batch_max: u64,
    /// Most ingest transactions in flight at once (each holds a database connection).
    pub ingest_transactions: u64,
    /// Which messages are alerts, per channel.
    pub alert_rules: Vec<AlertRule>,
    /// React with 👀 to a mention as soon as it is recorded (✅ to one that resolved its thread).
    pub ack_reaction: bool,
    /// Outbox rows one relay claims at a time.
    pub relay_batch: u32,
    /// Milliseconds a relay sleeps when the outbox is empty.
    pub relay_poll_ms: u64,
    /// First retry delay of a failed outbox row, in milliseconds (doubles per attempt).
    pub relay_backoff_initial_ms: u64,
    /// Cap on the retry delay of a failed outbox row, in seconds.
    pub relay_backoff_max_secs: u64,
    /// Seconds a Kafka publish or Temporal call may take before it counts as failed.
    pub relay_call_timeout_secs: u64,
    /// Hours a delivered outbox row is kept before it is deleted (undelivered rows never are).
    pub outbox_retention_hours: u64,
}

impl Default for BotSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3000".into(),
            body_limit_bytes: 1024 * 1024,
            ingest_timeout_ms: 2500,
            ingest_batch_max: 64,
            ingest_transactions: 2,
            alert_rules: vec![AlertRule {
                channels: Vec::new(),
                bot_ids: Vec::new(),
                app_ids: Vec::new(),
                usernames: ["Alertmanager", "Grafana", "PagerDuty", "Datadog"]
                    .map(String::from)
                    .to_vec(),
                text_patterns: Vec::new(),
            }],
            ack_reaction: true,
            relay_batch: 100,
            relay_poll_ms: 200,
            relay_backoff_initial_ms: 500,
            relay_backoff_max_secs: 60,
            relay_call_timeout_secs: 10,
            outbox_retention_hours: 168,
        }
    }
}

/// The embedded stack of `firstline dev`. In dev, `database.url`, `temporal.address` and
/// `kafka.brokers` are derived from these ports, so the two can never disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DevSettings {
    /// Where the stack keeps its data, logs and pid files.
    pub state_dir: PathBuf,
    /// The tools virtualenv `scripts/setup` creates (Temporal CLI, PostgreSQL, broker).
    pub tools_dir: PathBuf,
    /// PostgreSQL port on 127.0.0.1 (0 picks a free port).
    pub postgres_port: u16,
    /// Temporal frontend gRPC port on 127.0.0.1 (0 picks a free port).
    pub temporal_port: u16,
    /// Kafka broker port on 127.0.0.1 (0 picks a free port).
    pub kafka_port: u16,
    /// Unprivileged system user PostgreSQL runs as when `firstline dev` runs as root.
    pub postgres_os_user: String,
    /// Seconds each service may take to become ready.
    pub ready_timeout_secs: u64,
    /// Crash-safe stack (fsync on, Temporal on a file). `false` trades that for speed: Postgres
    /// without fsync and Temporal in memory, for throwaway stacks such as the test suite's.
    pub durable: bool,
    /// Where the lab's scenarios are (the lab MCP server serves one when `mcp.servers` is empty).
    pub lab_dir: PathBuf,
    /// The lab scenario `firstline dev` serves over MCP (and posts with `--demo`).
    pub lab_scenario: String,
}

impl Default for DevSettings {
    fn default() -> Self {
        Self {
            state_dir: ".firstline".into(),
            tools_dir: ".tools".into(),
            postgres_port: 55432,
            temporal_port: 7233,
            kafka_port: 9092,
            postgres_os_user: "firstline".into(),
            ready_timeout_secs: 60,
            durable: true,
            lab_dir: "lab/scenarios".into(),
            lab_scenario: "crashloop-config-exit-78".into(),
        }
    }
}

/// The round workflow's limits. Every loop and wait of a round is bounded by one of these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoundSettings {
    /// Most rounds one thread gets; a mention after that is recorded and not answered.
    pub max_rounds: u32,
    /// Seconds after the thread's first message (its `thread_ts`) when no round starts any more.
    pub max_thread_age_secs: u64,
    /// Seconds a run waits for a new mention after asking before it closes.
    pub idle_timeout_secs: u64,
    /// Seconds `run_graph` may take per attempt (start-to-close).
    pub run_graph_timeout_secs: u64,
    /// Seconds without a heartbeat after which `run_graph` is retried on another worker.
    pub run_graph_heartbeat_secs: u64,
    /// Seconds `load_context`, `commit_round` and `post_to_thread` may take per attempt.
    pub activity_timeout_secs: u64,
    /// Attempts per activity (the first included) before the round fails.
    pub activity_attempts: u32,
    /// First retry delay of a failed activity, in milliseconds (doubles per attempt).
    pub retry_initial_ms: u64,
    /// Cap on an activity's retry delay, in seconds.
    pub retry_max_secs: u64,
    /// Characters of thread conversation a round reads (most recent first).
    pub context_chars: usize,
}

impl Default for RoundSettings {
    fn default() -> Self {
        Self {
            max_rounds: 5,
            max_thread_age_secs: 24 * 3600,
            idle_timeout_secs: 30 * 60,
            run_graph_timeout_secs: 300,
            run_graph_heartbeat_secs: 30,
            activity_timeout_secs: 30,
            activity_attempts: 3,
            retry_initial_ms: 1000,
            retry_max_secs: 30,
            context_chars: 6000,
        }
    }
}

/// The worker process (`firstline worker`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// Address `/healthz` and `/metrics` listen on.
    pub listen: String,
    /// Activities (graph runs, commits, posts) one worker runs at once.
    pub max_concurrent_activities: usize,
    /// Workflow tasks one worker processes at once.
    pub max_concurrent_workflow_tasks: usize,
    /// Seconds in-flight activities get to finish after SIGTERM before they are cancelled and
    /// handed back (keep it below the pod's termination grace period).
    pub shutdown_grace_secs: u64,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:3001".into(),
            max_concurrent_activities: 20,
            max_concurrent_workflow_tasks: 20,
            shutdown_grace_secs: 20,
        }
    }
}

/// Log output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `tracing` filter directives, e.g. `info,firstline=debug` (`RUST_LOG` wins when set).
    pub filter: String,
    /// `text` for people, `json` for log pipelines.
    pub format: LogFormat,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            filter: "info,sqlx=warn".into(),
            format: LogFormat::Text,
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Names of the built-in capability profiles (`mcp.servers[].profile`). The profiles themselves
/// (tool names and argument shapes) live with the tool layer in `firstline-activities`, whose
/// tests check this list against them.
pub const MCP_PROFILES: &[&str] = &[
    "kubernetes-mcp-server",
    "prometheus-mcp-server",
    "mcp-grafana",
    "lab",
];

/// Capabilities the fixed investigation steps ask for (keys of `mcp.capabilities`).
pub const MCP_CAPABILITIES: &[&str] = &[
    "pod_describe",
    "workload_describe",
    "pod_list",
    "pod_logs_current",
    "pod_logs_previous",
    "events",
    "deploy_history",
    "metric_range",
    "log_query",
    "trace_search",
];

/// MCP servers (DESIGN §8, invariant 7). Read-only by construction: only tools on a server's
/// `allow` list are ever called.
///
/// ```toml
/// [[mcp.servers]]
/// name = "k8s"
/// command = "kubernetes-mcp-server"
/// args = ["--read-only", "--list-output", "yaml"]
/// profile = "kubernetes-mcp-server"
///
/// [[mcp.servers]]
/// name = "prom"
/// url = "http://prometheus-mcp.monitoring:8080/mcp"
/// profile = "prometheus-mcp-server"
/// call_timeout_secs = 30
///
/// [mcp.capabilities.log_query]      # override or add one capability's tool
/// server = "grafana"
/// tool = "query_loki_logs"
/// args = { datasourceUid = "loki", logql = "{query}", startRfc3339 = "{start}", endRfc3339 = "{end}", limit = "{limit}" }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// The servers, each with its transport, allowlist and limits.
    pub servers: Vec<McpServerSettings>,
    /// Per-capability tool bindings; they override what a server's profile binds.
    pub capabilities: BTreeMap<String, CapabilityBinding>,
    /// Seconds one tool call may take (a server can override it).
    pub call_timeout_secs: u64,
    /// Seconds connecting to (or starting) a server and listing its tools may take.
    pub connect_timeout_secs: u64,
    /// Bytes of one tool result kept; longer results are truncated and marked.
    pub max_result_bytes: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            capabilities: BTreeMap::new(),
            call_timeout_secs: 15,
            connect_timeout_secs: 10,
            max_result_bytes: 64 * 1024,
        }
    }
}

/// One MCP server: either `url` (streamable HTTP) or `command` (a stdio child process).
#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerSettings {
    /// Name used in capability bindings, evidence and the audit trail.
    pub name: String,
    /// Streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: Option<String>,
    /// Program to start for a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment for the child process (may hold credentials: never logged).
    pub env: BTreeMap<String, String>,
    /// A built-in profile binding capabilities to this server's tools (see [`MCP_PROFILES`]).
    pub profile: Option<String>,
    /// Tools that may be called. Empty means "the tools this server's profile uses"; any other
    /// tool is refused and audited.
    pub allow: Vec<String>,
    /// Values for `{var.NAME}` placeholders in tool arguments, e.g. a Grafana datasource uid.
    pub vars: BTreeMap<String, String>,
    /// Overrides `mcp.call_timeout_secs` for this server.
    pub call_timeout_secs: Option<u64>,
    /// Overrides `mcp.connect_timeout_secs` for this server.
    pub connect_timeout_secs: Option<u64>,
    /// Overrides `mcp.max_result_bytes` for this server.
    pub max_result_bytes: Option<usize>,
}

impl std::fmt::Debug for McpServerSettings {
    /// The child's environment may hold credentials: show its names only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerSettings")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("profile", &self.profile)
            .field("allow", &self.allow)
            .field("vars", &self.vars)
            .field("call_timeout_secs", &self.call_timeout_secs)
            .field("connect_timeout_secs", &self.connect_timeout_secs)
            .field("max_result_bytes", &self.max_result_bytes)
            .finish()
    }
}

/// Which tool answers a capability, and how the request's fields become the tool's arguments.
///
/// Each argument is a JSON value; a string that is exactly `{field}` becomes the request field's
/// typed value (omitted when the request has none), and `{field}` inside a longer string is
/// replaced by its text. Fields: `namespace`, `pod`, `container`, `previous`, `tail_lines`,
/// `object`, `workload`, `query`, `start`, `end` (RFC 3339), `start_unix`, `end_unix`,
/// `step_secs`, `step` (`60s`), `limit`, `service`, and `var.NAME` from the server's `vars`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct CapabilityBinding {
    /// Server name (`mcp.servers[].name`).
    pub server: String,
    /// Tool name on that server.
    pub tool: String,
    /// Tool argument name → template.
    pub args: BTreeMap<String, serde_json::Value>,
}

impl McpSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        let reject = |setting: &'static str, env: &'static str, reason: String| {
            Err(ConfigError::Rejected {
                setting,
                env,
                reason,
            })
        };
        const SERVERS: (&str, &str) = ("mcp.servers", "FIRSTLINE_MCP__SERVERS");
        for (field, value) in [
            ("mcp.call_timeout_secs", self.call_timeout_secs),
            ("mcp.connect_timeout_secs", self.connect_timeout_secs),
        ] {
            if value == 0 {
                let env = if field == "mcp.call_timeout_secs" {
                    "FIRSTLINE_MCP__CALL_TIMEOUT_SECS"
                } else {
                    "FIRSTLINE_MCP__CONNECT_TIMEOUT_SECS"
                };
                return reject(field, env, "must be at least 1".into());
            }
        }
        if self.max_result_bytes < 1024 {
            return reject(
                "mcp.max_result_bytes",
                "FIRSTLINE_MCP__MAX_RESULT_BYTES",
                "must be at least 1024".into(),
            );
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, server) in self.servers.iter().enumerate() {
            let at = format!("server #{} (`{}`)", i + 1, server.name);
            if server.name.trim().is_empty() {
                return reject(
                    SERVERS.0,
                    SERVERS.1,
                    format!("server #{} has no name", i + 1),
                );
            }
            if !names.insert(server.name.as_str()) {
                return reject(SERVERS.0, SERVERS.1, format!("{at}: name used twice"));
            }
            match (&server.url, &server.command) {
                (Some(_), Some(_)) | (None, None) => {
                    return reject(
                        SERVERS.0,
                        SERVERS.1,
                        format!(
                            "{at}: set exactly one of `url` (streamable HTTP) and `command` (stdio)"
                        ),
                    );
                }
                (Some(url), None) if url.starts_with("https://") => {
                    return reject(
                        SERVERS.0,
                        SERVERS.1,
                        format!(
                            "{at}: https:// MCP endpoints are not supported yet; use http:// (e.g. in-cluster) or a stdio `command`"
                        ),
                    );
                }
                (Some(url), None) if !url.starts_with("http://") => {
                    return reject(
                        SERVERS.0,
                        SERVERS.1,
                        format!("{at}: `url` must be an http:// URL"),
                    );
                }
                (None, Some(command)) if command.trim().is_empty() => {
                    return reject(SERVERS.0, SERVERS.1, format!("{at}: `command` is empty"));
                }
                _ => {}
            }
            if let Some(profile) = &server.profile
                && !MCP_PROFILES.contains(&profile.as_str())
            {
                return reject(
                    SERVERS.0,
                    SERVERS.1,
                    format!(
                        "{at}: unknown profile `{profile}` (known: {})",
                        MCP_PROFILES.join(", ")
                    ),
                );
            }
            if server.call_timeout_secs == Some(0) || server.connect_timeout_secs == Some(0) {
                return reject(
                    SERVERS.0,
                    SERVERS.1,
                    format!("{at}: timeouts must be at least 1 second"),
                );
            }
            if server.max_result_bytes.is_some_and(|bytes| bytes < 1024) {
                return reject(
                    SERVERS.0,
                    SERVERS.1,
                    format!("{at}: `max_result_bytes` must be at least 1024"),
                );
            }
        }
        for (capability, binding) in &self.capabilities {
            if !MCP_CAPABILITIES.contains(&capability.as_str()) {
                return reject(
                    "mcp.capabilities",
                    "FIRSTLINE_MCP__CAPABILITIES",
                    format!(
                        "unknown capability `{capability}` (known: {})",
                        MCP_CAPABILITIES.join(", ")
                    ),
                );
            }
            if !names.contains(binding.server.as_str()) {
                return reject(
                    "mcp.capabilities",
                    "FIRSTLINE_MCP__CAPABILITIES",
                    format!(
                        "`{capability}` names server `{}`, which is not in mcp.servers",
                        binding.server
                    ),
                );
            }
            if binding.tool.trim().is_empty() {
                return reject(
                    "mcp.capabilities",
                    "FIRSTLINE_MCP__CAPABILITIES",
                    format!("`{capability}` has no tool"),
                );
            }
        }
        Ok(())
    }
}

impl Settings {
    /// Every setting as `(dotted key, environment variable)`, in declaration order.
    pub fn keys() -> Vec<(String, String)> {
        let tree = serde_json::to_value(Settings::default()).unwrap_or_default();
        let mut keys = Vec::new();
        if let serde_json::Value::Object(sections) = tree {
            for (section, fields) in sections {
                if let serde_json::Value::Object(fields) = fields {
                    for field in fields.keys() {
                        keys.push((
                            format!("{section}.{field}"),
                            format!(
                                "{}{}__{}",
                                crate::ENV_PREFIX,
                                section.to_uppercase(),
                                field.to_uppercase()
                            ),
                        ));
                    }
                }
            }
        }
        keys
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let url = self.database.url.expose();
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::Rejected {
                setting: "database.url",
                env: "FIRSTLINE_DATABASE__URL",
                reason: "must start with postgres:// or postgresql://".into(),
            });
        }
        if self.database.max_connections == 0 {
            return Err(ConfigError::Rejected {
                setting: "database.max_connections",
                env: "FIRSTLINE_DATABASE__MAX_CONNECTIONS",
                reason: "must be at least 1".into(),
            });
        }
        if !(self.temporal.address.starts_with("http://")
            || self.temporal.address.starts_with("https://"))
        {
            return Err(ConfigError::Rejected {
                setting: "temporal.address",
                env: "FIRSTLINE_TEMPORAL__ADDRESS",
                reason: "must be an http:// or https:// URL".into(),
            });
        }
        if self.temporal.task_queue.trim().is_empty() {
            return Err(ConfigError::Rejected {
                setting: "temporal.task_queue",
                env: "FIRSTLINE_TEMPORAL__TASK_QUEUE",
                reason: "must not be empty".into(),
            });
        }
        if self.kafka.brokers.trim().is_empty() {
            return Err(ConfigError::Rejected {
                setting: "kafka.brokers",
                env: "FIRSTLINE_KAFKA__BROKERS",
                reason: "must list at least one host:port".into(),
            });
        }
        if self.slack.mode == SlackMode::Socket && !self.slack.app_token.is_set() {
            return Err(ConfigError::Rejected {
                setting: "slack.app_token",
                env: "FIRSTLINE_SLACK__APP_TOKEN",
                reason: "Socket Mode (slack.mode = socket) needs the app-level token".into(),
            });
        }
        if !(self.slack.api_url.starts_with("http://")
            || self.slack.api_url.starts_with("https://"))
        {
            return Err(ConfigError::Rejected {
                setting: "slack.api_url",
                env: "FIRSTLINE_SLACK__API_URL",
                reason: "must be an http:// or https:// URL".into(),
            });
        }
        if self.bot.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::Rejected {
                setting: "bot.listen",
                env: "FIRSTLINE_BOT__LISTEN",
                reason: format!("`{}` is not an ip:port address", self.bot.listen),
            });
        }
        for (name, env, value) in [
            (
                "bot.body_limit_bytes",
                "FIRSTLINE_BOT__BODY_LIMIT_BYTES",
                self.bot.body_limit_bytes as u64,
            ),
            (
                "bot.ingest_timeout_ms",
                "FIRSTLINE_BOT__INGEST_TIMEOUT_MS",
                self.bot.ingest_timeout_ms,
            ),
            (
                "bot.ingest_batch_max",
                "FIRSTLINE_BOT__INGEST_BATCH_MAX",
                self.bot.ingest_batch_max,
            ),
            (
                "bot.ingest_transactions",
                "FIRSTLINE_BOT__INGEST_TRANSACTIONS",
                self.bot.ingest_transactions,
            ),
            (
                "bot.relay_batch",
                "FIRSTLINE_BOT__RELAY_BATCH",
                u64::from(self.bot.relay_batch),
            ),
            (
                "bot.relay_poll_ms",
                "FIRSTLINE_BOT__RELAY_POLL_MS",
                self.bot.relay_poll_ms,
            ),
            (
                "bot.relay_backoff_initial_ms",
                "FIRSTLINE_BOT__RELAY_BACKOFF_INITIAL_MS",
                self.bot.relay_backoff_initial_ms,
            ),
            (
                "bot.relay_backoff_max_secs",
                "FIRSTLINE_BOT__RELAY_BACKOFF_MAX_SECS",
                self.bot.relay_backoff_max_secs,
            ),
            (
                "bot.relay_call_timeout_secs",
                "FIRSTLINE_BOT__RELAY_CALL_TIMEOUT_SECS",
                self.bot.relay_call_timeout_secs,
            ),
            (
                "bot.outbox_retention_hours",
                "FIRSTLINE_BOT__OUTBOX_RETENTION_HOURS",
                self.bot.outbox_retention_hours,
            ),
        ] {
            if value == 0 {
                return Err(ConfigError::Rejected {
                    setting: name,
                    env,
                    reason: "must be at least 1".into(),
                });
            }
        }
        // Past this the cutoff leaves PostgreSQL's timestamp range and retention would fail
        // every pass; ten years is "keep them".
        if self.bot.outbox_retention_hours > MAX_OUTBOX_RETENTION_HOURS {
            return Err(ConfigError::Rejected {
                setting: "bot.outbox_retention_hours",
                env: "FIRSTLINE_BOT__OUTBOX_RETENTION_HOURS",
                reason: format!("must be at most {MAX_OUTBOX_RETENTION_HOURS} (ten years)"),
            });
        }
        for rule in &self.bot.alert_rules {
            for pattern in &rule.text_patterns {
                if let Err(e) = regex::Regex::new(pattern) {
                    return Err(ConfigError::Rejected {
                        setting: "bot.alert_rules",
                        env: "FIRSTLINE_BOT__ALERT_RULES",
                        reason: format!(
                            "text pattern `{pattern}` is not a regular expression: {e}"
                        ),
                    });
                }
            }
        }
        if self.worker.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::Rejected {
                setting: "worker.listen",
                env: "FIRSTLINE_WORKER__LISTEN",
                reason: format!("`{}` is not an ip:port address", self.worker.listen),
            });
        }
        for (name, env, value) in [
            (
                "round.max_rounds",
                "FIRSTLINE_ROUND__MAX_ROUNDS",
                u64::from(self.round.max_rounds),
            ),
            (
                "round.max_thread_age_secs",
                "FIRSTLINE_ROUND__MAX_THREAD_AGE_SECS",
                self.round.max_thread_age_secs,
            ),
            (
                "round.idle_timeout_secs",
                "FIRSTLINE_ROUND__IDLE_TIMEOUT_SECS",
                self.round.idle_timeout_secs,
            ),
            (
                "round.run_graph_timeout_secs",
                "FIRSTLINE_ROUND__RUN_GRAPH_TIMEOUT_SECS",
                self.round.run_graph_timeout_secs,
            ),
            (
                "round.run_graph_heartbeat_secs",
                "FIRSTLINE_ROUND__RUN_GRAPH_HEARTBEAT_SECS",
                self.round.run_graph_heartbeat_secs,
            ),
            (
                "round.activity_timeout_secs",
                "FIRSTLINE_ROUND__ACTIVITY_TIMEOUT_SECS",
                self.round.activity_timeout_secs,
            ),
            (
                "round.activity_attempts",
                "FIRSTLINE_ROUND__ACTIVITY_ATTEMPTS",
                u64::from(self.round.activity_attempts),
            ),
            (
                "round.retry_initial_ms",
                "FIRSTLINE_ROUND__RETRY_INITIAL_MS",
                self.round.retry_initial_ms,
            ),
            (
                "round.retry_max_secs",
                "FIRSTLINE_ROUND__RETRY_MAX_SECS",
                self.round.retry_max_secs,
            ),
            (
                "worker.max_concurrent_activities",
                "FIRSTLINE_WORKER__MAX_CONCURRENT_ACTIVITIES",
                self.worker.max_concurrent_activities as u64,
            ),
            (
                "worker.max_concurrent_workflow_tasks",
                "FIRSTLINE_WORKER__MAX_CONCURRENT_WORKFLOW_TASKS",
                self.worker.max_concurrent_workflow_tasks as u64,
            ),
        ] {
            if value == 0 {
                return Err(ConfigError::Rejected {
                    setting: name,
                    env,
                    reason: "must be at least 1".into(),
                });
            }
        }
        if self.round.run_graph_heartbeat_secs >= self.round.run_graph_timeout_secs {
            return Err(ConfigError::Rejected {
                setting: "round.run_graph_heartbeat_secs",
                env: "FIRSTLINE_ROUND__RUN_GRAPH_HEARTBEAT_SECS",
                reason: "must be shorter than round.run_graph_timeout_secs".into(),
            });
        }
        if self.dev.ready_timeout_secs == 0 {
            return Err(ConfigError::Rejected {
                setting: "dev.ready_timeout_secs",
                env: "FIRSTLINE_DEV__READY_TIMEOUT_SECS",
                reason: "must be at least 1".into(),
            });
        }
        self.mcp.validate()
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn slack_secrets_never_appear_in_debug_output() {
        let mut settings = Settings::default();
        settings.slack.bot_token = SecretString::new("xoxb-1234-very-secret");
        settings.slack.signing_secret = SecretString::new("8f742231b10e8888abcd99yyyzzz85a5");
        settings.slack.app_token = SecretString::new("xapp-1-secret");
        let printed = format!("{settings:?} {}", settings.slack.bot_token);
        for secret in ["very-secret", "8f742231", "xapp-1-secret"] {
            assert!(!printed.contains(secret), "{secret} leaked: {printed}");
        }
        assert!(printed.contains("bot_token: \"***\""), "{printed}");
        assert!(!SecretString::default().is_set());
    }

    #[test]
    fn socket_mode_without_an_app_token_is_rejected_by_name() {
        let mut settings = Settings::default();
        settings.slack.mode = SlackMode::Socket;
        let error = settings.validate().unwrap_err().to_string();
        assert!(error.contains("FIRSTLINE_SLACK__APP_TOKEN"), "{error}");
        settings.slack.mode = SlackMode::Http;
        settings.bot.alert_rules[0].text_patterns = vec!["(unclosed".into()];
        let error = settings.validate().unwrap_err().to_string();
        assert!(error.contains("FIRSTLINE_BOT__ALERT_RULES"), "{error}");
    }
}
