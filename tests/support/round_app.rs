//! `RoundApp`: the whole round path for one test, on real engines — its own database and task
//! queue on the shared Postgres and Temporal, a Slack stand-in, the bot (in-process), the lab MCP
//! server serving a scenario, and `firstline worker` and `firstline embedder` *processes* (so a
//! test can `kill -9` one).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use firstline_config::{SecretString, Settings};
use firstline_lab::scenario::Scenario;
use firstline_lab::server::LabHandle;
use firstline_slack::standin::{StandIn, StandInConfig};
use firstline_testkit::TestDb;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "round-test-signing-secret";
pub const TOKEN: &str = "xoxb-round-test";
pub const BOT_USER: &str = "U07F1RSTBOT";
pub const ONCALL: &str = "U07ONCALL01";

/// Round limits for tests: quick retries and heartbeats so a killed worker's round moves on in
/// seconds; the rest are the defaults unless a test changes them. The heartbeat timeout leaves a
/// loaded CI machine room (the worker sends one at least every third of it).
pub fn test_settings() -> Settings {
    let mut s = Settings::default();
    s.round.run_graph_heartbeat_secs = 5;
    s.round.run_graph_timeout_secs = 120;
    s.round.activity_timeout_secs = 20;
    s.round.retry_initial_ms = 300;
    s.round.retry_max_secs = 2;
    s.round.activity_attempts = 5;
    s
}

pub struct RoundApp {
    pub db: TestDb,
    pub slack: StandIn,
    pub lab: LabHandle,
    pub scenario: Scenario,
    pub settings: Settings,
    /// The test's own channel (workflow ids are global on the shared Temporal server).
    pub channel: String,
    bot: Option<firstline_bot::Running>,
    workers: Vec<Child>,
    /// Each worker's `/healthz` URL, by index.
    pub worker_health: Vec<String>,
    embedders: Vec<Child>,
    /// Each embedder's `/healthz` URL, by index.
    pub embedder_health: Vec<String>,
    /// The embedders' consumer group (unique to the test).
    pub embedder_group: String,
    dir: tempfile::TempDir,
    cancel: CancellationToken,
}

impl RoundApp {
    /// Everything but the workers, serving lab scenario `scenario` (its alert fired just now).
    pub async fn spawn(scenario: &str, settings: Settings) -> Self {
        Self::spawn_at(scenario, settings, chrono::Utc::now()).await
    }

    /// Like [`RoundApp::spawn`], with the scenario's alert fired at `at`: two apps with the same
    /// `at` serve identical worlds.
    pub async fn spawn_at(
        scenario: &str,
        mut settings: Settings,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        let root = firstline_testkit::workspace_root();
        let scenario = Scenario::load_at(&root.join("lab/scenarios").join(scenario), at)
            .unwrap_or_else(|e| panic!("loading scenario {scenario}: {e}"));
        let lab =
            firstline_lab::server::serve_http(scenario.clone(), "127.0.0.1:0".parse().unwrap())
                .await
                .expect("lab MCP server");
        let cancel = CancellationToken::new();
        let slack = StandIn::start(
            StandInConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                signing_secret: SECRET.into(),
                events_url: None,
                retry_delay: Duration::from_millis(200),
            },
            cancel.child_token(),
        )
        .await
        .expect("Slack stand-in");
        let channel = unique_channel();
        slack.workspace().ensure_channel(&channel, "incidents");

        let db = firstline_testkit::test_db().await;
        let stack = firstline_testkit::stack();
        settings.database.url = db.url.clone();
        settings.database.max_connections = 8;
        // A test may bring its own Temporal server (e.g. one it restarts).
        if settings.temporal.address == firstline_config::TemporalSettings::default().address {
            settings.temporal.address = stack.temporal_address.clone();
        }
        settings.temporal.task_queue = firstline_testkit::unique_name("fl-round");
        // A test may bring its own broker (e.g. one it stops).
        if settings.kafka.brokers == firstline_config::KafkaSettings::default().brokers {
            settings.kafka.brokers = stack.kafka_brokers.clone();
        }
        settings.kafka.topic = firstline_testkit::unique_name("fl-round-messages");
        settings.slack.signing_secret = SecretString::new(SECRET);
        settings.slack.bot_token = SecretString::new(TOKEN);
        settings.slack.api_url = slack.api_url();
        settings.slack.bot_user_id = BOT_USER.into();
        settings.bot.listen = "127.0.0.1:0".into();
        settings.bot.relay_poll_ms = 50;
        settings.bot.relay_backoff_initial_ms = 100;
        settings.bot.relay_backoff_max_secs = 2;
        settings.worker.listen = "127.0.0.1:0".into();

        // Actions run through the lab's write endpoint unless a test names another server.
        if settings.actions.enabled && settings.actions.server.is_none() {
            settings.actions.server = Some(firstline_config::McpServerSettings {
                name: "lab-write".into(),
                url: Some(lab.write_url()),
                profile: Some("kubernetes-mcp-server".into()),
                ..Default::default()
            });
        }
        let bot = firstline_bot::start(
            &settings,
            firstline_bot::Parts::ALL,
            None,
            cancel.child_token(),
        )
        .await
        .expect("starting the bot");
        let events = bot.http_addr.map(|a| format!("http://{a}/slack/events"));
        slack.set_events_url(events);

        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = format!(
            "[[mcp.servers]]\nname = \"lab\"\nurl = \"{}\"\nprofile = \"lab\"\n",
            lab.mcp_url()
        );
        config.push_str(&actions_section(&settings.actions));
        std::fs::write(dir.path().join("firstline.toml"), config)
            .expect("writing the worker's configuration");
        Self {
            db,
            slack,
            lab,
            scenario,
            settings,
            channel,
            bot: Some(bot),
            workers: Vec::new(),
            worker_health: Vec::new(),
            embedders: Vec::new(),
            embedder_health: Vec::new(),
            embedder_group: firstline_testkit::unique_name("fl-embedder"),
            dir,
            cancel,
        }
    }

    /// Starts a `firstline worker` process (with `FAILPOINTS` when given) and waits until it
    /// polls. Returns its index.
    pub async fn start_worker(&mut self, failpoints: Option<&str>) -> usize {
        let mut command = self.worker_command();
        if let Some(failpoints) = failpoints {
            command.env("FAILPOINTS", failpoints);
        }
        let (child, health) = spawn_ready(command, "worker").await;
        self.worker_health.push(health);
        self.workers.push(child);
        self.workers.len() - 1
    }

    /// `firstline worker` with the app's settings as its environment, not started.
    pub fn worker_command(&self) -> Command {
        let s = &self.settings;
        let mut command = self.service_command("worker");
        let t = &s.temporal;
        for (key, value) in [
            ("API_KEY", t.api_key.expose().to_string()),
            ("SERVER_CA_FILE", t.server_ca_file.display().to_string()),
            ("SERVER_NAME", t.server_name.clone()),
            ("CLIENT_CERT_FILE", t.client_cert_file.display().to_string()),
            ("CLIENT_KEY_FILE", t.client_key_file.display().to_string()),
        ] {
            if !value.is_empty() {
                command.env(format!("FIRSTLINE_TEMPORAL__{key}"), value);
            }
        }
        command
            .env("FIRSTLINE_CONFIG", self.config_path())
            .env("FIRSTLINE_TEMPORAL__ADDRESS", &t.address)
            .env("FIRSTLINE_TEMPORAL__NAMESPACE", &t.namespace)
            .env("FIRSTLINE_TEMPORAL__TASK_QUEUE", &t.task_queue)
            .env("FIRSTLINE_SLACK__API_URL", &s.slack.api_url)
            .env("FIRSTLINE_SLACK__BOT_TOKEN", TOKEN)
            .env("FIRSTLINE_WORKER__LISTEN", "127.0.0.1:0")
            .env(
                "FIRSTLINE_WORKER__STICKY_TIMEOUT_SECS",
                s.worker.sticky_timeout_secs.to_string(),
            );
        let r = &s.round;
        for (key, value) in [
            ("MAX_ROUNDS", r.max_rounds.to_string()),
            ("MAX_THREAD_AGE_SECS", r.max_thread_age_secs.to_string()),
            ("IDLE_TIMEOUT_SECS", r.idle_timeout_secs.to_string()),
            (
                "RUN_GRAPH_TIMEOUT_SECS",
                r.run_graph_timeout_secs.to_string(),
            ),
            (
                "RUN_GRAPH_HEARTBEAT_SECS",
                r.run_graph_heartbeat_secs.to_string(),
            ),
            ("ACTIVITY_TIMEOUT_SECS", r.activity_timeout_secs.to_string()),
            ("ACTIVITY_ATTEMPTS", r.activity_attempts.to_string()),
            ("RETRY_INITIAL_MS", r.retry_initial_ms.to_string()),
            ("RETRY_MAX_SECS", r.retry_max_secs.to_string()),
        ] {
            command.env(format!("FIRSTLINE_ROUND__{key}"), value);
        }
        let llm = &s.llm;
        if llm.enabled() {
            for (key, value) in [
                ("BASE_URL", llm.base_url.clone()),
                ("MODEL", llm.model.clone()),
                ("REQUEST_TIMEOUT_SECS", llm.request_timeout_secs.to_string()),
                ("MAX_MODEL_CALLS", llm.max_model_calls.to_string()),
                ("MAX_TOOL_CALLS", llm.max_tool_calls.to_string()),
                ("MAX_TOKENS", llm.max_tokens.to_string()),
                ("BUDGET_SECS", llm.budget_secs.to_string()),
                ("HEARTBEAT_SECS", llm.heartbeat_secs.to_string()),
            ] {
                command.env(format!("FIRSTLINE_LLM__{key}"), value);
            }
        }
        if s.telemetry.enabled() {
            command.env(
                "FIRSTLINE_TELEMETRY__OTLP_ENDPOINT",
                &s.telemetry.otlp_endpoint,
            );
        }
        command
    }

    /// Starts a `firstline embedder` process in the test's consumer group (with `FAILPOINTS`
    /// when given) and waits until it consumes. Returns its index.
    pub async fn start_embedder(&mut self, failpoints: Option<&str>) -> usize {
        let group = self.embedder_group.clone();
        self.start_embedder_in(&group, failpoints).await
    }

    /// Like [`RoundApp::start_embedder`], in consumer group `group`.
    pub async fn start_embedder_in(&mut self, group: &str, failpoints: Option<&str>) -> usize {
        let mut command = self.embedder_command(group);
        if let Some(failpoints) = failpoints {
            command.env("FAILPOINTS", failpoints);
        }
        let (child, health) = spawn_ready(command, "embedder").await;
        self.embedder_health.push(health);
        self.embedders.push(child);
        self.embedders.len() - 1
    }

    /// `firstline embedder` pointed at this app's database and topic, in consumer group `group`.
    pub fn embedder_command(&self, group: &str) -> Command {
        let s = &self.settings;
        let mut command = self.service_command("embedder");
        for (key, value) in kafka_env(&s.kafka) {
            command.env(key, value);
        }
        command
            .env("FIRSTLINE_KAFKA__TOPIC", &s.kafka.topic)
            .env("FIRSTLINE_EMBEDDER__GROUP_ID", group)
            .env("FIRSTLINE_EMBEDDER__INSTANCE_ID", format!("{group}-0"))
            .env("FIRSTLINE_EMBEDDER__LISTEN", "127.0.0.1:0")
            .env("FIRSTLINE_EMBEDDER__BATCH_WAIT_MS", "50")
            .env("FIRSTLINE_EMBEDDER__RETRY_INITIAL_MS", "100")
            .env("FIRSTLINE_EMBEDDER__RETRY_MAX_SECS", "2");
        command
    }

    /// `firstline <subcommand>` with only this app's database and the workspace's tools in its
    /// environment, stdout piped (it prints its `/healthz` URL there), killed when dropped.
    fn service_command(&self, subcommand: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
        command
            .arg(subcommand)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(
                "FIRSTLINE_DATABASE__URL",
                self.settings.database.url.expose(),
            )
            .env(
                "FIRSTLINE_DEV__TOOLS_DIR",
                firstline_testkit::workspace_root().join(".tools"),
            )
            .env("FIRSTLINE_LOG__FILTER", "warn,firstline=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        command
    }

    /// `kill -9` embedder `index` and reaps it.
    pub async fn kill_embedder(&mut self, index: usize) {
        let child = &mut self.embedders[index];
        child.start_kill().expect("SIGKILL the embedder");
        let _ = child.wait().await;
    }

    /// SIGTERM embedder `index` and wait for it to exit; returns whether it exited cleanly.
    pub async fn terminate_embedder(&mut self, index: usize) -> bool {
        terminate(&mut self.embedders[index]).await
    }

    /// Worker `index`'s process id while it runs; its Temporal identity is
    /// `firstline-worker@<pid>`.
    pub fn worker_pid(&self, index: usize) -> u32 {
        self.workers[index].id().expect("the worker runs")
    }

    /// Sends `signal` to worker `index` (e.g. SIGSTOP / SIGCONT to stall it).
    pub fn signal_worker(&self, index: usize, signal: nix::sys::signal::Signal) {
        let pid = self.workers[index].id().expect("the worker runs");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal)
            .expect("signalling the worker");
    }

    /// `kill -9` worker `index` and reaps it.
    pub async fn kill_worker(&mut self, index: usize) {
        let child = &mut self.workers[index];
        child.start_kill().expect("SIGKILL the worker");
        let _ = child.wait().await;
    }

    /// SIGTERM worker `index` and wait for it to exit; returns whether it exited cleanly.
    pub async fn terminate_worker(&mut self, index: usize) -> bool {
        terminate(&mut self.workers[index]).await
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("firstline.toml")
    }

    /// Alertmanager posts `text` (the scenario's alert when `None`) in the channel; returns the
    /// alert's ts once the bot recorded it.
    pub async fn post_alert(&self, text: Option<&str>) -> String {
        let text = text
            .map(str::to_string)
            .unwrap_or_else(|| self.scenario.alert_text());
        let ts = self
            .slack
            .integration_posts(&self.channel, "Alertmanager", &text);
        self.wait_recorded(&ts).await;
        ts
    }

    /// An integration posts `payload` through the channel's incoming webhook, as Alertmanager's
    /// Slack receiver does (attachments and all); returns the alert's ts once the bot recorded
    /// it.
    pub async fn post_webhook_alert(&self, payload: &serde_json::Value) -> String {
        let url = format!("{}/webhook/{}", self.slack.url(), self.channel);
        let (status, body) = http_request("POST", &url, Some(&payload.to_string())).await;
        assert_eq!(status, 200, "webhook: {body}");
        let pool = &self.db.pool;
        firstline_testkit::wait_for(
            "the alert to be recorded",
            Duration::from_secs(20),
            || async {
                sqlx::query_scalar::<_, String>(
                    "SELECT ts FROM messages WHERE channel_id = $1 AND kind = 'alert'
                  ORDER BY id DESC LIMIT 1",
                )
                .bind(&self.channel)
                .fetch_optional(pool)
                .await
                .ok()
                .flatten()
            },
        )
        .await
    }

    /// A person writes `text` in the thread; returns its ts once recorded.
    pub async fn say(&self, thread_ts: &str, text: &str) -> String {
        let ts = self
            .slack
            .user_says(&self.channel, ONCALL, text, Some(thread_ts));
        self.wait_recorded(&ts).await;
        ts
    }

    async fn wait_recorded(&self, ts: &str) {
        let pool = &self.db.pool;
        firstline_testkit::wait_for(
            "the message to be recorded",
            Duration::from_secs(20),
            || async {
                let n: i64 = sqlx::query_scalar("SELECT count(*) FROM messages WHERE ts = $1")
                    .bind(ts)
                    .fetch_one(pool)
                    .await
                    .ok()?;
                (n == 1).then_some(())
            },
        )
        .await;
    }

    /// Waits until message `ts` in the thread has reaction `name` (reactions follow the post).
    pub async fn wait_reaction(&self, thread_ts: &str, ts: &str, name: &str) {
        let what = format!(":{name}: on {ts}");
        firstline_testkit::wait_for(&what, Duration::from_secs(30), || async {
            let thread = self.slack.workspace().thread(&self.channel, thread_ts)?;
            let message = thread.into_iter().find(|m| m.ts == ts)?;
            message
                .reactions
                .iter()
                .any(|r| r.name == name)
                .then_some(())
        })
        .await;
    }

    /// The messages Firstline posted in the thread, oldest first.
    pub fn bot_replies(&self, thread_ts: &str) -> Vec<firstline_slack::standin::state::Message> {
        self.bot_replies_in(&self.channel, thread_ts)
    }

    /// Firstline's replies in thread `thread_ts` of `channel`.
    pub fn bot_replies_in(
        &self,
        channel: &str,
        thread_ts: &str,
    ) -> Vec<firstline_slack::standin::state::Message> {
        self.slack
            .workspace()
            .thread(channel, thread_ts)
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.ts != thread_ts && from_firstline(m))
            .collect()
    }

    /// Waits until the thread has `n` committed *and posted* rounds; returns their rows.
    pub async fn wait_rounds(&self, thread_ts: &str, n: i64, timeout: Duration) -> Vec<RoundRow> {
        let pool = &self.db.pool;
        let what = format!("{n} posted round(s) in thread {thread_ts}");
        firstline_testkit::wait_for(&what, timeout, || async {
            let rows = self.rounds(thread_ts).await;
            (rows.len() as i64 >= n && rows.iter().all(|r| r.posted_ts.is_some())).then_some(rows)
        })
        .await;
        let _ = pool;
        self.rounds(thread_ts).await
    }

    /// The thread's rounds.
    pub async fn rounds(&self, thread_ts: &str) -> Vec<RoundRow> {
        sqlx::query_as::<_, RoundRow>(
            "SELECT r.number, r.grounded, r.result->>'text' AS text, r.posted_ts, r.run_id,
                    r.tool_calls
               FROM rounds r JOIN threads t ON t.id = r.thread_id
              WHERE t.channel_id = $1 AND t.thread_ts = $2 ORDER BY r.number",
        )
        .bind(&self.channel)
        .bind(thread_ts)
        .fetch_all(&self.db.pool)
        .await
        .unwrap_or_default()
    }

    /// The key of the thread the alert `thread_ts` started, in the test's channel.
    pub fn thread_key(&self, thread_ts: &str) -> firstline_model::ThreadKey {
        firstline_model::ThreadKey {
            team_id: firstline_slack::standin::state::TEAM_ID.to_string(),
            channel_id: self.channel.clone(),
            thread_ts: thread_ts.to_string(),
        }
    }

    /// The workflow id of the thread.
    pub fn workflow_id(&self, thread_ts: &str) -> String {
        self.thread_key(thread_ts).workflow_id()
    }

    pub async fn stop(mut self) {
        for child in self.workers.iter_mut().chain(self.embedders.iter_mut()) {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        self.cancel.cancel();
        if let Some(bot) = self.bot.take() {
            let _ = tokio::time::timeout(Duration::from_secs(20), bot.wait()).await;
        }
        self.lab.shutdown().await;
    }
}

/// Spawns `command` (a service printing its `…/healthz` URL on stdout) and waits until the URL
/// answers 200: for the worker, polling; for the embedder, consuming.
async fn spawn_ready(mut command: Command, what: &str) -> (Child, String) {
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawning firstline {what}: {e}"));
    let stdout = child.stdout.take().expect("the child's stdout");
    let mut lines = BufReader::new(stdout).lines();
    let health = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.split_whitespace().find(|w| w.ends_with("/healthz")) {
                return url.to_string();
            }
        }
        panic!("the {what} exited before it was ready");
    })
    .await
    .unwrap_or_else(|_| panic!("the {what} is ready within 60 s"));
    // Its HTTP server is up before it works; healthy means working.
    firstline_testkit::wait_for(
        &format!("the {what} to be healthy"),
        Duration::from_secs(60),
        || async { (http_get(&health).await.0 == 200).then_some(()) },
    )
    .await;
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, health)
}

/// The environment that gives a `firstline` process `kafka`'s brokers and security settings.
pub fn kafka_env(kafka: &firstline_config::KafkaSettings) -> Vec<(String, String)> {
    let var = |key: &str| firstline_config::env_var(&format!("kafka.{key}"));
    let mut env = vec![(var("brokers"), kafka.brokers.clone())];
    env.push((var("security"), kafka.security.protocol().into()));
    if let Some(ca) = &kafka.ca_file {
        env.push((var("ca_file"), ca.display().to_string()));
    }
    if !kafka.sasl_mechanism.is_empty() {
        env.push((var("sasl_mechanism"), kafka.sasl_mechanism.clone()));
        env.push((var("sasl_username"), kafka.sasl_username.clone()));
        env.push((var("sasl_password"), kafka.sasl_password.expose().into()));
    }
    env
}

/// SIGTERM `child` and wait (30 s at most) for it to exit; whether it exited cleanly.
async fn terminate(child: &mut Child) -> bool {
    if let Some(pid) = child.id() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
        Ok(Ok(status)) => status.success(),
        _ => false,
    }
}

/// Whether Firstline (the bot user) wrote `message`.
fn from_firstline(message: &firstline_slack::standin::state::Message) -> bool {
    matches!(&message.author, firstline_slack::standin::state::Author::Bot { user: Some(user), .. } if user == BOT_USER)
}

/// A channel id of Slack's shape no other test uses.
pub fn unique_channel() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
    format!("C0{}", &id[..9])
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RoundRow {
    pub number: i32,
    pub grounded: bool,
    pub text: Option<String>,
    pub posted_ts: Option<String>,
    pub run_id: String,
    pub tool_calls: i32,
}

impl RoundApp {
    /// A Temporal client on the test stack.
    pub async fn temporal(&self) -> temporalio_client::Client {
        firstline_temporal::connect(
            &self.settings.temporal,
            "firstline-test",
            Duration::from_secs(15),
        )
        .await
        .expect("connecting to Temporal")
    }

    /// Waits until a round has stored its step-1 checkpoint (investigate ∥ recall joined), where
    /// the crash and shutdown tests hold or stop a worker.
    pub async fn wait_step_one_stored(&self, timeout: Duration) {
        firstline_testkit::wait_for("step 1 stored", timeout, || async {
            (self
                .count("SELECT count(*) FROM round_checkpoints WHERE step = 1")
                .await
                == 1)
                .then_some(())
        })
        .await;
    }

    /// The result of the thread's latest workflow run, waiting up to `timeout` for it to close.
    pub async fn run_outcome(&self, thread_ts: &str, timeout: Duration) -> serde_json::Value {
        let client = self.temporal().await;
        let handle = client
            .get_workflow_handle::<firstline_workflows::IncidentRound>(self.workflow_id(thread_ts));
        // The run may not exist yet: the wake-up is relayed from the outbox.
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, handle.get_result(Default::default())).await {
                Ok(Ok(outcome)) => {
                    return serde_json::to_value(outcome).expect("a run outcome is JSON");
                }
                Ok(Err(e)) if tokio::time::Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok(Err(e)) => panic!("the run did not complete: {e}"),
                Err(_) => panic!("the run did not close within {timeout:?}"),
            }
        }
    }

    /// Waits until the thread's workflow id has had `runs` runs, or panics after 30 s.
    pub async fn wait_run_count(&self, thread_ts: &str, runs: usize) {
        let client = self.temporal().await;
        let query = format!("WorkflowId = '{}'", self.workflow_id(thread_ts));
        // Temporal's visibility store lags the runs themselves: wait for the count to catch up.
        firstline_testkit::wait_for(
            &format!("{runs} run(s) of the thread's workflow"),
            Duration::from_secs(30),
            || async {
                let counted = client
                    .count_workflows(query.clone(), Default::default())
                    .await
                    .ok()?
                    .count();
                (counted == runs).then_some(())
            },
        )
        .await;
    }

    /// The round's input context as `run_graph` stored it (step 0).
    pub async fn round_input(&self, thread_ts: &str, round: i32) -> serde_json::Value {
        sqlx::query_scalar(
            "SELECT c.checkpoint->'state' FROM round_checkpoints c
               JOIN threads t ON t.id = c.thread_id
              WHERE t.channel_id = $1 AND t.thread_ts = $2 AND c.round = $3 AND c.step = 0",
        )
        .bind(&self.channel)
        .bind(thread_ts)
        .bind(round)
        .fetch_one(&self.db.pool)
        .await
        .expect("round input checkpoint")
    }

    /// The evidence of the thread's round `round`, without times: (ref, tool, args, excerpt).
    pub async fn evidence(
        &self,
        thread_ts: &str,
        round: i32,
    ) -> Vec<(String, String, String, String)> {
        sqlx::query_as(
            "SELECT e.ref, e.tool, e.args::text, e.excerpt FROM evidence e
               JOIN rounds r ON r.id = e.round_id JOIN threads t ON t.id = r.thread_id
              WHERE t.channel_id = $1 AND t.thread_ts = $2 AND r.number = $3
              ORDER BY substring(e.ref from 2)::int",
        )
        .bind(&self.channel)
        .bind(thread_ts)
        .bind(round)
        .fetch_all(&self.db.pool)
        .await
        .expect("evidence rows")
    }

    /// A scalar count.
    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(&self.db.pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

/// `GET url` over plain HTTP/1.0: (status, body).
pub async fn http_get(url: &str) -> (u16, String) {
    http_request("GET", url, None).await
}

/// `method url` with an optional JSON body over plain HTTP/1.0: (status, body).
pub async fn http_request(method: &str, url: &str, json: Option<&str>) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    let body = json.unwrap_or_default();
    let headers = match json {
        Some(_) => format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ),
        None => String::new(),
    };
    stream
        .write_all(
            format!("{method} {path} HTTP/1.0\r\nHost: {host}\r\n{headers}\r\n{body}").as_bytes(),
        )
        .await
        .expect("request");
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("response in time")
    .expect("response");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// `[actions]` as the worker's configuration file states it (empty when actions are off).
fn actions_section(actions: &firstline_config::ActionsSettings) -> String {
    if !actions.enabled {
        return String::new();
    }
    let mut out = format!(
        "\n[actions]\nenabled = true\napproval_timeout_secs = {}\nverify_secs = {}\nverify_interval_secs = {}\n",
        actions.approval_timeout_secs, actions.verify_secs, actions.verify_interval_secs
    );
    if let Some(server) = &actions.server {
        out.push_str(&format!(
            "[actions.server]\nname = \"{}\"\nurl = \"{}\"\n",
            server.name,
            server.url.as_deref().unwrap_or_default()
        ));
        if let Some(timeout) = server.call_timeout_secs {
            out.push_str(&format!("call_timeout_secs = {timeout}\n"));
        }
    }
    out.push_str("[actions.approvers]\n");
    for (namespace, ids) in &actions.approvers {
        let ids: Vec<String> = ids.iter().map(|id| format!("\"{id}\"")).collect();
        out.push_str(&format!("\"{namespace}\" = [{}]\n", ids.join(", ")));
    }
    out
}
