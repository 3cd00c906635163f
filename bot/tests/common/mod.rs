//! Helpers shared by the bot's integration tests: settings pointing at the shared test stack, a
//! bot started on a free port, signed requests. Tests that stop a dependency start a private
//! one (never the shared stack's).

#![allow(dead_code)]

use firstline_bot::{Parts, Running};
use firstline_config::{DatabaseUrl, SecretString, Settings};
use firstline_slack::signing;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub const BOT_USER: &str = "U07F1RSTBOT";

/// Settings for a test: its own database, topic and task queue on the shared stack.
pub fn settings(db: &DatabaseUrl) -> Settings {
    let stack = firstline_testkit::stack();
    let mut s = Settings::default();
    s.database.url = db.clone();
    s.database.max_connections = 8;
    s.kafka.brokers = stack.kafka_brokers.clone();
    s.kafka.topic = firstline_testkit::unique_name("fl-test-messages");
    s.temporal.address = stack.temporal_address.clone();
    s.temporal.task_queue = firstline_testkit::unique_name("fl-test-queue");
    s.slack.signing_secret = SecretString::new(SECRET);
    s.slack.bot_user_id = BOT_USER.into();
    s.bot.listen = "127.0.0.1:0".into();
    s.bot.relay_poll_ms = 50;
    s.bot.relay_backoff_initial_ms = 100;
    s.bot.relay_backoff_max_secs = 2;
    s.bot.relay_call_timeout_secs = 5;
    // Production's 2.5 s recording deadline is Slack's 3 s budget; a loaded CI machine can miss
    // it without anything being wrong. The test that exercises the deadline sets its own.
    s.bot.ingest_timeout_ms = 10_000;
    s
}

/// Recording only: no relay runs.
pub const INGEST_ONLY: Parts = Parts {
    ingest: true,
    publish: false,
    wake: false,
};

/// Recording and the Kafka relay.
pub const INGEST_AND_PUBLISH: Parts = Parts {
    ingest: true,
    publish: true,
    wake: false,
};

/// Recording and the Temporal relay.
pub const INGEST_AND_WAKE: Parts = Parts {
    ingest: true,
    publish: false,
    wake: true,
};

/// This test process's Prometheus recorder (as `firstline bot` installs one), so `/metrics`
/// shows what the bot counted.
fn metrics() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| PrometheusBuilder::new().install_recorder().ok())
        .clone()
}

/// A running bot and the token that stops it.
pub struct TestBot {
    pub running: Option<Running>,
    pub cancel: CancellationToken,
    pub events_url: String,
}

impl TestBot {
    pub async fn start(settings: &Settings, parts: Parts) -> Self {
        let cancel = CancellationToken::new();
        let running = firstline_bot::start(settings, parts, metrics(), cancel.clone())
            .await
            .expect("starting the bot");
        let events_url = running.events_url().unwrap_or_default();
        Self {
            running: Some(running),
            cancel,
            events_url,
        }
    }

    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(running) = self.running.take() {
            tokio::time::timeout(Duration::from_secs(20), running.wait())
                .await
                .expect("the bot stops within 20 s");
        }
    }
}

/// A message event payload from a person.
pub fn message_event(
    event_id: &str,
    channel: &str,
    ts: &str,
    user: &str,
    text: &str,
) -> serde_json::Value {
    serde_json::json!({
        "token": "x", "team_id": "T07F1RSTDEV", "api_app_id": "A07F1RSTAPP", "type": "event_callback",
        "event_id": event_id, "event_time": 1733140000,
        "event": {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts,
                  "event_ts": ts, "channel_type": "channel", "team": "T07F1RSTDEV"}
    })
}

/// POSTs `body` signed at now + `skew_secs`; extra headers appended. Returns the status.
pub async fn post_signed(url: &str, body: &str, skew_secs: i64, extra: &[(&str, &str)]) -> u16 {
    let ts = signing::now() + skew_secs;
    let mut request = http_client().post(url).body(body.to_string());
    for (k, v) in signing::headers(SECRET, ts, body.as_bytes()) {
        request = request.header(k, v);
    }
    for (k, v) in extra {
        request = request.header(k, *v);
    }
    request.send().await.status()
}

/// Counts rows.
pub async fn count(pool: &sqlx::PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect(sql)
}

/// Waits until `sql` counts `expected` rows, or panics after `timeout` naming `what`.
pub async fn wait_count(
    pool: &sqlx::PgPool,
    what: &str,
    sql: &str,
    expected: i64,
    timeout: Duration,
) {
    firstline_testkit::wait_for(what, timeout, || async {
        (count(pool, sql).await == expected).then_some(())
    })
    .await;
}

/// `(threads.status, incidents.root_cause)` of the one resolved thread's incident.
pub async fn resolution(pool: &sqlx::PgPool) -> (String, String) {
    sqlx::query_as(
        "SELECT t.status, i.root_cause FROM threads t JOIN incidents i ON i.thread_id = t.id",
    )
    .fetch_one(pool)
    .await
    .expect("one thread with its incident")
}

/// A tiny HTTP/1.1 client on hyper (no extra dependencies).
pub fn http_client() -> Http {
    Http
}

pub struct Http;

pub struct RequestBuilder {
    method: hyper::Method,
    url: String,
    headers: Vec<(String, String)>,
    body: String,
}

pub struct Response {
    status: u16,
    pub body: String,
}

impl Response {
    pub fn status(&self) -> u16 {
        self.status
    }
}

impl Http {
    pub fn post(&self, url: &str) -> RequestBuilder {
        RequestBuilder {
            method: hyper::Method::POST,
            url: url.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: String::new(),
        }
    }
    pub fn get(&self, url: &str) -> RequestBuilder {
        RequestBuilder {
            method: hyper::Method::GET,
            url: url.into(),
            headers: vec![],
            body: String::new(),
        }
    }
}

impl RequestBuilder {
    /// Sets header `k` (replacing one of the same name).
    pub fn header(mut self, k: &str, v: impl Into<String>) -> Self {
        self.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        self.headers.push((k.into(), v.into()));
        self
    }
    pub fn body(mut self, b: String) -> Self {
        self.body = b;
        self
    }
    pub async fn send(self) -> Response {
        use http_body_util::BodyExt;
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Full<bytes::Bytes>>();
        let mut request = hyper::Request::builder().method(self.method).uri(&self.url);
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        let request = request
            .body(http_body_util::Full::new(bytes::Bytes::from(self.body)))
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(30), client.request(request))
            .await
            .expect("HTTP request timed out")
            .expect("HTTP request failed");
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        Response {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// Waits until the outbox has no undelivered rows, or panics listing their last errors.
pub async fn wait_outbox_drained(pool: &sqlx::PgPool, kind: &str, timeout: Duration) {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let pending: i64 =
            sqlx::query_scalar("SELECT count(*) FROM outbox WHERE sent_at IS NULL AND kind = $1")
                .bind(kind)
                .fetch_one(pool)
                .await
                .unwrap_or(-1);
        if pending == 0 {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            let errors: Vec<(String, i32, Option<String>)> = sqlx::query_as(
                "SELECT kind, attempts, last_error FROM outbox WHERE sent_at IS NULL AND kind = $1 ORDER BY id LIMIT 5",
            )
            .bind(kind)
            .fetch_all(pool)
            .await
            .unwrap_or_default();
            panic!("outbox not drained after {timeout:?}; pending rows: {errors:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Slack stand-in on a free port, signing with [`SECRET`], delivering nowhere yet.
pub async fn standin(cancel: &CancellationToken) -> firstline_slack::standin::StandIn {
    firstline_slack::standin::StandIn::start(
        firstline_slack::standin::StandInConfig {
            listen: "127.0.0.1:0".parse().expect("an address"),
            signing_secret: SECRET.into(),
            events_url: None,
            retry_delay: Duration::from_millis(200),
        },
        cancel.clone(),
    )
    .await
    .expect("stand-in")
}

/// A recording-only bot on its own database, talking to a new stand-in in `mode` (HTTP: the
/// stand-in delivers to its events URL; Socket Mode: connected before this returns).
pub async fn bot_on_standin(
    mode: firstline_config::SlackMode,
) -> (
    firstline_slack::standin::StandIn,
    TestBot,
    firstline_testkit::TestDb,
    CancellationToken,
) {
    bot_on_standin_with(mode, |_| {}).await
}

/// [`bot_on_standin`], its settings changed by `configure` before the bot starts.
pub async fn bot_on_standin_with(
    mode: firstline_config::SlackMode,
    configure: impl FnOnce(&mut Settings),
) -> (
    firstline_slack::standin::StandIn,
    TestBot,
    firstline_testkit::TestDb,
    CancellationToken,
) {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel).await;
    let db = firstline_testkit::test_db().await;
    let mut s = settings(&db.url);
    s.slack.mode = mode;
    s.slack.app_token = SecretString::new("xapp-standin-token");
    s.slack.bot_token = SecretString::new("xoxb-standin-token");
    s.slack.api_url = slack.api_url();
    configure(&mut s);
    let bot = TestBot::start(&s, INGEST_ONLY).await;
    match mode {
        firstline_config::SlackMode::Http => slack.set_events_url(Some(bot.events_url.clone())),
        firstline_config::SlackMode::Socket => {
            firstline_testkit::wait_for("the socket", Duration::from_secs(30), || async {
                (slack.sockets_connected() > 0).then_some(())
            })
            .await
        }
    }
    (slack, bot, db, cancel)
}
