//! A `firstline bot` process killed (-9) mid-relay: another bot process finishes the outbox and
//! nothing is lost. Killed while it holds claimed rows it has not delivered: every message lands
//! on the topic exactly once. Killed after delivering and before marking them sent: the next
//! instance delivers those again — at least once, as the schema documents, with the same
//! `message_id` for the consumer to dedupe on — and every other message exactly once.

use firstline_config::Settings;
use firstline_slack::signing;
use firstline_testkit::kafka::{count_by_key, read_topic};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const MESSAGES: usize = 30;

/// A `firstline bot` process and its Events API URL.
struct BotProcess {
    child: Child,
    events_url: String,
    /// Lines the process logged to stderr, as they come.
    log: tokio::sync::mpsc::UnboundedReceiver<String>,
}

async fn start_bot(settings: &Settings, failpoints: Option<&str>) -> BotProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
    command
        .arg("bot")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FIRSTLINE_DATABASE__URL", settings.database.url.expose())
        .env("FIRSTLINE_KAFKA__BROKERS", &settings.kafka.brokers)
        .env("FIRSTLINE_KAFKA__TOPIC", &settings.kafka.topic)
        .env("FIRSTLINE_TEMPORAL__ADDRESS", &settings.temporal.address)
        .env(
            "FIRSTLINE_TEMPORAL__TASK_QUEUE",
            &settings.temporal.task_queue,
        )
        .env("FIRSTLINE_SLACK__SIGNING_SECRET", SECRET)
        .env("FIRSTLINE_SLACK__BOT_USER_ID", "U07F1RSTBOT")
        .env("FIRSTLINE_BOT__LISTEN", "127.0.0.1:0")
        .env("FIRSTLINE_BOT__ACK_REACTION", "false")
        .env("FIRSTLINE_BOT__RELAY_BATCH", "10")
        .env("FIRSTLINE_BOT__RELAY_POLL_MS", "50")
        .env("FIRSTLINE_LOG__FILTER", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(failpoints) = failpoints {
        command.env("FAILPOINTS", failpoints);
    }
    let mut child = command.spawn().expect("spawning firstline bot");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let events_url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = stdout.next_line().await {
            if let Some(url) = line
                .split_whitespace()
                .find(|w| w.ends_with("/slack/events"))
            {
                return url.to_string();
            }
        }
        panic!("the bot exited before it was ready");
    })
    .await
    .expect("the bot is ready within 60 s");
    tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
    let (tx, log) = tokio::sync::mpsc::unbounded_channel();
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            let _ = tx.send(line);
        }
    });
    BotProcess {
        child,
        events_url,
        log,
    }
}

impl BotProcess {
    /// Waits until the process logs a line containing `needle`.
    async fn logged(&mut self, needle: &str) {
        tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = self.log.recv().await {
                if line.contains(needle) {
                    return;
                }
            }
            panic!("the bot exited without logging {needle:?}");
        })
        .await
        .unwrap_or_else(|_| panic!("the bot logged {needle:?} within 30 s"));
    }

    async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL the bot");
        let _ = self.child.wait().await;
    }
}

/// POSTs a signed Events API request (HTTP/1.1, one connection) and returns the status.
async fn post_signed(url: &str, body: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in signing::headers(SECRET, signing::now(), body.as_bytes()) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

fn message_event(i: usize) -> String {
    serde_json::json!({
        "token": "x", "team_id": "T07F1RSTDEV", "api_app_id": "A07F1RSTAPP",
        "type": "event_callback", "event_id": format!("Ev07K{i:07}"), "event_time": 1733140000,
        "event": {"type": "message", "channel": "C07INCIDENT", "user": "U07ONCALL01",
                  "text": format!("message {i}"), "ts": format!("1733150000.{i:06}"),
                  "channel_type": "channel", "team": "T07F1RSTDEV"}
    })
    .to_string()
}

fn settings(db: &firstline_testkit::TestDb) -> Settings {
    let stack = firstline_testkit::stack();
    let mut s = Settings::default();
    s.database.url = db.url.clone();
    s.kafka.brokers = stack.kafka_brokers.clone();
    s.kafka.topic = firstline_testkit::unique_name("fl-test-crash");
    s.temporal.address = stack.temporal_address.clone();
    s.temporal.task_queue = firstline_testkit::unique_name("fl-test-queue");
    s
}

/// Kills bot A (-9) while it is paused at `point` with claimed rows, lets bot B finish the
/// outbox, and returns the topic's records, `(key, value)`.
async fn kill_mid_relay_then_recover(point: &str) -> Vec<(String, String)> {
    let db = firstline_testkit::test_db().await;
    let s = settings(&db);
    let mut a = start_bot(&s, Some(&format!("{point}=return(120000)"))).await;
    for i in 0..MESSAGES {
        assert_eq!(post_signed(&a.events_url, &message_event(i)).await, 200);
    }
    a.logged("fault injection: pausing").await;
    a.kill().await;
    let b = start_bot(&s, None).await;
    firstline_testkit::wait_for(
        "bot B to finish the outbox",
        Duration::from_secs(60),
        || async {
            let pending: i64 =
                sqlx::query_scalar("SELECT count(*) FROM outbox WHERE sent_at IS NULL")
                    .fetch_one(&db.pool)
                    .await
                    .unwrap();
            (pending == 0).then_some(())
        },
    )
    .await;
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM messages")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored, MESSAGES as i64);
    let records = read_topic(
        &s.kafka.brokers,
        &s.kafka.topic,
        // Every message, however many duplicates come first.
        |r| count_by_key(r).len() >= MESSAGES,
        Duration::from_secs(30),
    )
    .await;
    b.kill().await;
    records
}

#[tokio::test]
async fn a_bot_killed_holding_undelivered_rows_leaves_them_to_another_bot_exactly_once() {
    let records = kill_mid_relay_then_recover(firstline_model::faults::RELAY_AFTER_CLAIM).await;
    let by_key = count_by_key(&records);
    assert_eq!(by_key.len(), MESSAGES, "every message published");
    assert!(
        by_key.values().all(|&n| n == 1),
        "nothing published twice: {by_key:?}"
    );
}

#[tokio::test]
async fn a_bot_killed_after_delivering_leaves_a_redelivery_with_the_same_message_id() {
    let records = kill_mid_relay_then_recover(firstline_model::faults::RELAY_AFTER_DELIVER).await;
    let by_key = count_by_key(&records);
    assert_eq!(by_key.len(), MESSAGES, "every message published");
    assert!(by_key.values().all(|&n| n <= 2), "{by_key:?}");
    let mut ids_by_key: HashMap<&str, Vec<i64>> = HashMap::new();
    for (key, value) in &records {
        let record: serde_json::Value = serde_json::from_str(value).expect("a JSON record");
        let id = record["message_id"].as_i64().expect("message_id");
        ids_by_key.entry(key).or_default().push(id);
    }
    let redelivered: Vec<_> = ids_by_key.values().filter(|ids| ids.len() == 2).collect();
    assert!(
        !redelivered.is_empty(),
        "A delivered its claimed rows before it was killed, so B delivers them again"
    );
    assert!(
        redelivered.iter().all(|ids| ids[0] == ids[1]),
        "a redelivery carries the same message_id, the consumer's dedupe key: {redelivered:?}"
    );
}
