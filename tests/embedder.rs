//! `firstline embedder` on real engines: the bot (with the Slack stand-in) records messages and
//! publishes them to a real Kafka-protocol broker; embedder *processes* read the topic and write
//! vectors into a real Postgres with pgvector, with the local all-MiniLM-L6-v2.
//!
//! Each fault the embedder promises to survive is injected: a second consumer group re-reading
//! everything, `kill -9` between a batch's write and its commit, the broker down for 30 s,
//! unreadable records in the partition, a model whose vectors do not fit the columns.

mod support;

use std::time::Duration;

use firstline_llm::scripted::{ScriptedReply, ScriptedServer};
use rdkafka::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use support::round_app::{BOT_USER, RoundApp, http_get, test_settings};

/// A scenario whose alert opens the thread (the embedder does not care which).
const SCENARIO: &str = "crashloop-config-exit-78";
const WAIT: Duration = Duration::from_secs(90);

/// Person messages in the app's database (what the embedder must embed).
const PERSON_MESSAGES: &str = "SELECT count(*) FROM messages
     WHERE kind IN ('mention', 'chatter') AND user_id IS NOT NULL AND bot_id IS NULL
       AND btrim(text) <> ''";
const EMBEDDED_MESSAGES: &str = "SELECT count(*) FROM message_embeddings";

/// Waits until every person message has exactly one vector; returns how many there are.
async fn wait_all_embedded(app: &RoundApp, expected: i64) -> i64 {
    firstline_testkit::wait_for("every person message embedded", WAIT, || async {
        let people = app.count(PERSON_MESSAGES).await;
        let embedded = app.count(EMBEDDED_MESSAGES).await;
        (people == expected && embedded == expected).then_some(embedded)
    })
    .await
}

/// `(message_id, embedded_at)` of every vector: a rewrite would change `embedded_at`.
async fn vector_rows(app: &RoundApp) -> Vec<(i64, chrono::DateTime<chrono::Utc>)> {
    sqlx::query_as("SELECT message_id, embedded_at FROM message_embeddings ORDER BY message_id")
        .fetch_all(&app.db.pool)
        .await
        .expect("reading vectors")
}

/// The value of metric `name` (with its labels, as Prometheus renders them) at `health`'s
/// `/metrics`; 0 when absent.
async fn metric(health: &str, name: &str) -> f64 {
    let url = health.replace("/healthz", "/metrics");
    let (status, body) = http_get(&url).await;
    assert_eq!(status, 200, "{url}: {body}");
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse::<f64>().ok())
        .unwrap_or(0.0)
}

const EMBEDDED: &str = r#"firstline_embedder_records_total{outcome="embedded"}"#;
const POISON: &str = r#"firstline_embedder_records_total{outcome="poison"}"#;
const MESSAGES_WRITTEN: &str = r#"firstline_embedder_vectors_written_total{kind="message"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_and_incidents_are_embedded_once_even_when_the_topic_is_read_again() {
    let mut app = RoundApp::spawn(SCENARIO, test_settings()).await;
    app.start_embedder(None).await;
    let alert = app.post_alert(None).await;
    app.say(
        &alert,
        "payments pods keep restarting since the 2.14 rollout",
    )
    .await;
    app.say(&alert, "PAYMENT_MODE looks unset in the new ConfigMap")
        .await;
    app.say(
        &alert,
        &format!("<@{BOT_USER}> resolved PAYMENT_MODE was dropped in 2.14; restored it"),
    )
    .await;
    wait_all_embedded(&app, 3).await;
    firstline_testkit::wait_for("the incident embedded", WAIT, || async {
        let n = app
            .count("SELECT count(*) FROM incidents WHERE embedding_model = 'all-MiniLM-L6-v2'")
            .await;
        (n == 1).then_some(())
    })
    .await;
    // The alert and the bot's own posts are not people's words.
    let alert_vectors = app
        .count(
            "SELECT count(*) FROM message_embeddings e JOIN messages m ON m.id = e.message_id
             WHERE m.kind NOT IN ('mention', 'chatter')",
        )
        .await;
    assert_eq!(alert_vectors, 0);
    let dimensions = app
        .count("SELECT vector_dims(embedding)::bigint FROM message_embeddings LIMIT 1")
        .await;
    assert_eq!(dimensions, 384);
    let before = vector_rows(&app).await;

    // Another group reads the whole topic again: every record is embedded again, nothing is
    // written again.
    let again = app
        .start_embedder_in(&firstline_testkit::unique_name("fl-embedder-again"), None)
        .await;
    let health = app.embedder_health[again].clone();
    firstline_testkit::wait_for("the topic read again", WAIT, || async {
        (metric(&health, EMBEDDED).await >= 4.0).then_some(())
    })
    .await;
    assert_eq!(metric(&health, MESSAGES_WRITTEN).await, 0.0);
    assert_eq!(vector_rows(&app).await, before);
    assert_eq!(app.count(EMBEDDED_MESSAGES).await, 3);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_killed_between_write_and_commit_leaves_nothing_missing_or_twice() {
    let mut app = RoundApp::spawn(SCENARIO, test_settings()).await;
    // The first embedder writes its first batch, then stalls before committing the offsets.
    let first = app
        .start_embedder(Some("embedder.after_write=return(60000)"))
        .await;
    let alert = app.post_alert(None).await;
    for text in [
        "checkout is down",
        "pods are crash looping",
        "rolling back now",
    ] {
        app.say(&alert, text).await;
    }
    firstline_testkit::wait_for("the first batch written", WAIT, || async {
        (app.count(EMBEDDED_MESSAGES).await >= 1).then_some(())
    })
    .await;
    let written_before_kill = vector_rows(&app).await;
    app.kill_embedder(first).await;

    let second = app.start_embedder(None).await;
    app.say(&alert, "rollback done, error rate back to normal")
        .await;
    wait_all_embedded(&app, 4).await;
    let health = app.embedder_health[second].clone();
    // The killed embedder never committed: its records came again to the second one, which
    // embedded them and wrote only what was not there.
    firstline_testkit::wait_for("the redelivered records counted", WAIT, || async {
        (metric(&health, EMBEDDED).await >= 4.0).then_some(())
    })
    .await;
    assert_eq!(
        metric(&health, MESSAGES_WRITTEN).await as usize,
        4 - written_before_kill.len()
    );
    let after = vector_rows(&app).await;
    for row in &written_before_kill {
        assert!(after.contains(row), "{row:?} was rewritten: {after:?}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_records_are_skipped_and_counted_and_never_block_the_partition() {
    let mut app = RoundApp::spawn(SCENARIO, test_settings()).await;
    let embedder = app.start_embedder(None).await;
    let alert = app.post_alert(None).await;
    app.say(&alert, "first words before the garbage").await;
    wait_all_embedded(&app, 1).await;

    // Garbage on the thread's own partition (same key), between two good records.
    let key = app.thread_key(&alert).kafka_key();
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &app.settings.kafka.brokers)
        .create()
        .expect("a producer");
    let topic = app.settings.kafka.topic.clone();
    for value in [
        &b"not json at all"[..],
        br#"{"schema":"firstline.message.v9","message_id":1}"#,
        br#"{"schema":"firstline.message.v2","message_id":"seven"}"#,
    ] {
        producer
            .send(
                FutureRecord::to(&topic).key(&key).payload(value),
                Duration::from_secs(10),
            )
            .await
            .map_err(|(e, _)| e)
            .expect("producing a bad record");
    }
    app.say(&alert, "second words after the garbage").await;
    wait_all_embedded(&app, 2).await;
    let health = app.embedder_health[embedder].clone();
    firstline_testkit::wait_for("three poison records counted", WAIT, || async {
        (metric(&health, POISON).await == 3.0).then_some(())
    })
    .await;
    // It is still consuming.
    assert_eq!(http_get(&health).await.0, 200);
    assert!(
        app.terminate_embedder(embedder).await,
        "clean exit on SIGTERM"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_catches_up_after_the_broker_was_down_for_30_seconds() {
    let private = firstline_testkit::private::PrivateServer::new("test broker");
    let broker = private.start_broker().await;
    let mut settings = test_settings();
    settings.kafka.brokers = format!("127.0.0.1:{}", private.port);
    let mut app = RoundApp::spawn(SCENARIO, settings).await;
    app.start_embedder(None).await;
    let alert = app.post_alert(None).await;
    app.say(&alert, "disk is filling on node 3").await;
    wait_all_embedded(&app, 1).await;

    broker.stop(Duration::from_secs(5)).await;
    // The bot records these (Postgres is up); its relay keeps them until the broker is back.
    app.say(&alert, "logrotate stopped after the upgrade").await;
    app.say(&alert, "cleared old logs, 40% free").await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(app.count(EMBEDDED_MESSAGES).await, 1);
    let _broker = private.start_broker().await;
    wait_all_embedded(&app, 3).await;
    app.stop().await;
}

/// Runs `firstline embedder` with `env` and expects it to refuse to start; returns stderr.
async fn refused_start(app: &RoundApp, env: &[(&str, String)]) -> String {
    let mut command = app.embedder_command("fl-embedder-refused");
    for (key, value) in env {
        command.env(key, value);
    }
    command.stderr(std::process::Stdio::piped());
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the embedder gives up within 60 s")
        .expect("running the embedder");
    assert!(!output.status.success(), "it must not start");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_whose_vectors_do_not_fit_is_refused_at_start_with_both_sizes() {
    let app = RoundApp::spawn(SCENARIO, test_settings()).await;
    // The local model makes 384 numbers; configured as 512 it is refused by its own probe.
    let stderr = refused_start(&app, &[("FIRSTLINE_EMBEDDING__DIMENSIONS", "512".into())]).await;
    assert!(
        stderr.contains("returned 384 dimensions where 512 were expected"),
        "{stderr}"
    );

    // An endpoint that really makes 512-dimensional vectors does not fit the 384 columns.
    let vector: Vec<f32> = (0..512).map(|i| (i as f32).sin()).collect();
    let body = serde_json::json!({
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "model": "wide-embedder",
    });
    let server = ScriptedServer::start([ScriptedReply::raw(200, body.to_string())])
        .await
        .expect("scripted endpoint");
    let stderr = refused_start(
        &app,
        &[
            ("FIRSTLINE_EMBEDDING__BASE_URL", server.base_url()),
            ("FIRSTLINE_EMBEDDING__MODEL", "wide-embedder".into()),
            ("FIRSTLINE_EMBEDDING__DIMENSIONS", "512".into()),
        ],
    )
    .await;
    assert!(
        stderr.contains("makes 512-dimensional vectors but incidents.embedding holds 384"),
        "{stderr}"
    );
    assert_eq!(server.request_count(), 1, "one probe, then the refusal");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reindex_embeds_what_the_model_has_not_and_a_second_run_finds_nothing_left() {
    let app = RoundApp::spawn(SCENARIO, test_settings()).await;
    let alert = app.post_alert(None).await;
    app.say(&alert, "the cache cluster is evicting everything")
        .await;
    // Two incidents that never went through the topic (as `eval` or an import writes them).
    for title in ["redis evictions", "memcached restarts"] {
        sqlx::query(
            "WITH t AS (INSERT INTO threads (team_id, channel_id, thread_ts, status, resolved_at)
                        VALUES ('T1', 'C1', $1, 'resolved', now()) RETURNING id)
             INSERT INTO incidents (thread_id, team_id, title, summary, root_cause, resolved_at)
             SELECT id, 'T1', $2, 'cache misses spiked', 'maxmemory too low', now() FROM t",
        )
        .bind(firstline_testkit::unique_name("ts"))
        .bind(title)
        .execute(&app.db.pool)
        .await
        .expect("inserting an incident");
    }
    let run = || async {
        let mut command = app.embedder_command("unused");
        command.arg("--reindex");
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("reindex finishes")
            .expect("running reindex");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let first = run().await;
    assert!(
        first.contains("reindexed 1 messages and 2 incidents with all-MiniLM-L6-v2"),
        "{first}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM incidents WHERE embedding IS NOT NULL")
            .await,
        2
    );
    let second = run().await;
    assert!(
        second.contains("reindexed 0 messages and 0 incidents"),
        "{second}"
    );
    app.stop().await;
}

/// An OpenAI-compatible `/v1/embeddings` on a real socket: 384 numbers per input, a distinct
/// unit vector per text (its length picks the axis), in the order of `input`.
fn embeddings_endpoint(request: &firstline_llm::scripted::RecordedRequest) -> ScriptedReply {
    let inputs = request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let mut vector = vec![0.0f32; 384];
            vector[text.as_str().map_or(0, str::len) % 384] = 1.0;
            serde_json::json!({"object": "embedding", "index": index, "embedding": vector})
        })
        .collect();
    let body = serde_json::json!({"object": "list", "data": data, "model": "remote-minilm"});
    ScriptedReply::raw(200, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_compatible_endpoint_embeds_in_place_of_the_local_model() {
    let server = ScriptedServer::responding(("127.0.0.1", 0), Box::new(embeddings_endpoint))
        .await
        .expect("embeddings endpoint");
    let app = RoundApp::spawn(SCENARIO, test_settings()).await;
    let mut command = app.embedder_command(&app.embedder_group);
    command
        .env("FIRSTLINE_EMBEDDING__BASE_URL", server.base_url())
        .env("FIRSTLINE_EMBEDDING__MODEL", "remote-minilm")
        .env("FIRSTLINE_EMBEDDING__API_KEY", "sk-embedding-test");
    let mut child = command.spawn().expect("spawning the embedder");
    let alert = app.post_alert(None).await;
    app.say(&alert, "the queue consumer is stuck").await;
    app.say(&alert, "restarted it, lag is dropping").await;
    firstline_testkit::wait_for("both messages embedded by the endpoint", WAIT, || async {
        let n = app
            .count("SELECT count(*) FROM message_embeddings WHERE model = 'remote-minilm'")
            .await;
        (n == 2).then_some(())
    })
    .await;
    // The probe at start, then the messages; every request carried the key and the model.
    let requests = server.requests();
    assert!(requests.len() >= 2, "{requests:?}");
    for request in &requests {
        assert_eq!(request.body["model"], "remote-minilm");
        assert_eq!(
            request.authorization.as_deref(),
            Some("Bearer sk-embedding-test")
        );
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    app.stop().await;
}
