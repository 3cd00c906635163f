//! Load generator of `bench/ingest/run`: signed Slack Events API deliveries over loopback.
//!
//! - `sustained`: open loop at a fixed rate (requests leave on schedule whether or not earlier
//!   ones were acked); latency is measured from each request's *scheduled* send time, so a
//!   stalled server cannot hide its queue (no coordinated omission).
//! - `max`: C connections, each sending its next request as soon as the previous one is acked.
//! - `verify`: rows in `messages` and records on the Kafka topic for one phase's event ids.
//! - `table`: the JSON lines of the phases as a table with ratios.
//!
//! Every request is a realistic `message` `event_callback` with a unique `event_id` and `ts`,
//! signed (`v0`, HMAC-SHA256) at send time. Prints one JSON line per phase on stdout.

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Parser, Subcommand};
use firstline_slack::signing;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Http = Client<HttpConnector, Full<Bytes>>;

/// How long one delivery may take before it counts as an error (Slack waits 3 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Open loop at `--rate` events/s for `--duration` seconds.
    Sustained {
        #[command(flatten)]
        target: Target,
        #[arg(long, default_value_t = 500)]
        rate: u64,
        #[arg(long, default_value_t = 60)]
        duration: u64,
    },
    /// Closed loop on `--concurrency` connections for `--duration` seconds (after `--warmup`).
    Max {
        #[command(flatten)]
        target: Target,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        #[arg(long, default_value_t = 20)]
        duration: u64,
        #[arg(long, default_value_t = 2)]
        warmup: u64,
    },
    /// Counts the phase's rows and Kafka records and compares them with its acks.
    Verify {
        /// Event id prefix of the phase (`prefix` in its JSON line).
        #[arg(long)]
        prefix: String,
        /// Acked deliveries of the phase.
        #[arg(long)]
        acked: u64,
        #[arg(long)]
        database_url: String,
        #[arg(long)]
        brokers: String,
        #[arg(long, default_value = "firstline.messages")]
        topic: String,
        /// Seconds to wait for the outbox relay to drain.
        #[arg(long, default_value_t = 60)]
        drain_timeout: u64,
    },
    /// Prints the table of a JSON lines file of phases and verifications.
    Table { file: std::path::PathBuf },
}

#[derive(clap::Args)]
struct Target {
    /// Name in the table (`firstline`, `bolt`).
    #[arg(long)]
    name: String,
    /// The Events API endpoint.
    #[arg(long)]
    url: String,
    #[arg(long, env = "BENCH_SIGNING_SECRET")]
    secret: String,
    /// Unique per phase: event ids are `Ev{run}{n}`.
    #[arg(long)]
    run: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Sustained {
            target,
            rate,
            duration,
        } => sustained(target, rate, duration).await,
        Command::Max {
            target,
            concurrency,
            duration,
            warmup,
        } => max(target, concurrency, duration, warmup).await,
        Command::Verify {
            prefix,
            acked,
            database_url,
            brokers,
            topic,
            drain_timeout,
        } => {
            verify(
                &prefix,
                acked,
                &database_url,
                &brokers,
                &topic,
                drain_timeout,
            )
            .await
        }
        Command::Table { file } => table(&file),
    }
}

/// Builds signed deliveries with unique ids.
struct Events {
    secret: String,
    run: String,
    /// Channel per phase, so `(channel, ts)` never collides across phases.
    channel: String,
    base_secs: i64,
    next: AtomicU64,
}

impl Events {
    fn new(target: &Target) -> Self {
        Self {
            secret: target.secret.clone(),
            run: target.run.clone(),
            channel: format!("C{}", target.run.to_uppercase()),
            base_secs: signing::now() - 3600,
            next: AtomicU64::new(0),
        }
    }

    fn prefix(&self) -> String {
        format!("Ev{}", self.run)
    }

    /// The next delivery: a person's message in a channel, as Slack sends it.
    fn request(&self, url: &str) -> hyper::Request<Full<Bytes>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let ts = format!(
            "{}.{:06}",
            self.base_secs + (n / 1_000_000) as i64,
            n % 1_000_000
        );
        let text = format!(
            "checkout-api p99 back under 300 ms after rollback of deploy #{n}; keeping an eye on it"
        );
        let now = signing::now();
        let body = json!({
            "token": "bench-verification-token",
            "team_id": "T0BENCH01",
            "context_team_id": "T0BENCH01",
            "context_enterprise_id": null,
            "api_app_id": "A0BENCH01",
            "event": {
                "user": "U0BENCHUSR",
                "type": "message",
                "ts": ts,
                "client_msg_id": format!("{:08x}-bench-4000-8000-{:012x}", n as u32, n),
                "text": text,
                "team": "T0BENCH01",
                "blocks": [{
                    "type": "rich_text",
                    "block_id": format!("b{n}"),
                    "elements": [{
                        "type": "rich_text_section",
                        "elements": [{ "type": "text", "text": text }]
                    }]
                }],
                "channel": self.channel,
                "event_ts": ts,
                "channel_type": "channel"
            },
            "type": "event_callback",
            "event_id": format!("{}{n:09}", self.prefix()),
            "event_time": now,
            "authorizations": [{
                "enterprise_id": null,
                "team_id": "T0BENCH01",
                "user_id": "U0BENCHBOT",
                "is_bot": true,
                "is_enterprise_install": false
            }],
            "is_ext_shared_channel": false,
            "event_context": "4-eyJldCI6Im1lc3NhZ2UiLCJ0aWQiOiJUMEJFTkNIMDEifQ"
        });
        let body = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
        let mut builder = hyper::Request::post(url)
            .header("content-type", "application/json")
            .header("user-agent", "Slackbot 1.0 (+https://api.slack.com/robots)");
        for (name, value) in signing::headers(&self.secret, now, &body) {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(body))
            .unwrap_or_else(|_| unreachable!("static request parts"))
    }
}

fn client(max_idle: usize) -> Http {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(max_idle)
        .build(connector)
}

/// Sends one delivery: `Ok(())` for a 2xx ack, otherwise what went wrong (`503`, `timeout`, …).
async fn send(http: &Http, request: hyper::Request<Full<Bytes>>) -> Result<(), String> {
    match tokio::time::timeout(REQUEST_TIMEOUT, async {
        let response = http.request(request).await?;
        let status = response.status();
        // Read the body so the connection goes back to the pool.
        let _ = response.into_body().collect().await;
        Ok::<_, hyper_util::client::legacy::Error>(status)
    })
    .await
    {
        Ok(Ok(status)) if status.is_success() => Ok(()),
        Ok(Ok(status)) => Err(status.as_u16().to_string()),
        Ok(Err(_)) => Err("connection".into()),
        Err(_) => Err("timeout".into()),
    }
}

/// Error counts by kind, e.g. `{"503": 12}`.
fn tally(kinds: Vec<String>) -> Value {
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for kind in kinds {
        *counts.entry(kind).or_default() += 1;
    }
    json!(counts)
}

/// Latencies (µs) of acked deliveries, summarised.
fn summary(mut micros: Vec<u64>) -> Value {
    micros.sort_unstable();
    let pick = |q: f64| -> f64 {
        if micros.is_empty() {
            return f64::NAN;
        }
        let i = ((q * micros.len() as f64).ceil() as usize).clamp(1, micros.len()) - 1;
        micros[i] as f64 / 1000.0
    };
    json!({ "p50_ms": pick(0.50), "p99_ms": pick(0.99), "max_ms": pick(1.0) })
}

/// What one phase measured.
struct Phase {
    mode: String,
    prefix: String,
    sent: u64,
    acked_total: u64,
    errors: Vec<String>,
    seconds: f64,
    /// Acks counted towards throughput (the max phase excludes its warm-up).
    counted: u64,
    /// Ack latencies in microseconds.
    micros: Vec<u64>,
}

/// One phase's result line.
fn phase_line(target: &Target, phase: Phase) -> Value {
    let Phase {
        mode,
        prefix,
        sent,
        acked_total,
        errors,
        seconds,
        counted,
        micros,
    } = phase;
    let mut line = json!({
        "kind": "phase",
        "target": target.name,
        "mode": mode,
        "prefix": prefix,
        "sent": sent,
        "acked": acked_total,
        "errors": errors.len(),
        "error_kinds": tally(errors),
        "seconds": seconds,
        "events_per_s": counted as f64 / seconds.max(1e-9),
    });
    if let (Some(line), Value::Object(s)) = (line.as_object_mut(), summary(micros)) {
        line.extend(s);
    }
    line
}

async fn sustained(target: Target, rate: u64, duration: u64) -> anyhow::Result<()> {
    if rate == 0 || duration == 0 {
        bail!("--rate and --duration must be positive");
    }
    let events = Arc::new(Events::new(&target));
    let http = client(usize::MAX);
    let total = rate * duration;
    let interval = Duration::from_nanos(1_000_000_000 / rate);
    let mut tasks = tokio::task::JoinSet::new();
    let mut micros = Vec::with_capacity(total as usize);
    let mut errors = Vec::new();
    let mut reap = |done: Result<(Result<(), String>, Duration), tokio::task::JoinError>,
                    micros: &mut Vec<u64>| match done {
        Ok((Ok(()), latency)) => micros.push(latency.as_micros() as u64),
        Ok((Err(kind), _)) => errors.push(kind),
        Err(_) => errors.push("panic".into()),
    };
    let started = tokio::time::Instant::now();
    for i in 0..total {
        let scheduled = started + interval * i as u32;
        tokio::time::sleep_until(scheduled).await;
        let request = events.request(&target.url);
        let http = http.clone();
        tasks.spawn(async move {
            let ok = send(&http, request).await;
            (ok, scheduled.elapsed())
        });
        while let Some(done) = tasks.try_join_next() {
            reap(done, &mut micros);
        }
    }
    while let Some(done) = tasks.join_next().await {
        reap(done, &mut micros);
    }
    let seconds = started.elapsed().as_secs_f64();
    let acked = micros.len() as u64;
    let line = phase_line(
        &target,
        Phase {
            mode: format!("sustained {rate}/s {duration}s"),
            prefix: events.prefix(),
            sent: total,
            acked_total: acked,
            errors,
            seconds,
            counted: acked,
            micros,
        },
    );
    println!("{line}");
    Ok(())
}

async fn max(target: Target, concurrency: usize, duration: u64, warmup: u64) -> anyhow::Result<()> {
    if concurrency == 0 || duration == 0 {
        bail!("--concurrency and --duration must be positive");
    }
    let events = Arc::new(Events::new(&target));
    let http = client(concurrency);
    let started = Instant::now();
    let measure_from = started + Duration::from_secs(warmup);
    let stop = measure_from + Duration::from_secs(duration);
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let events = events.clone();
        let http = http.clone();
        let url = target.url.clone();
        workers.spawn(async move {
            // (latencies counted, acked in total, errors in total, sent)
            let mut micros = Vec::new();
            let (mut acked, mut errors, mut sent) = (0u64, Vec::new(), 0u64);
            while Instant::now() < stop {
                let request = events.request(&url);
                let begun = Instant::now();
                sent += 1;
                let ok = send(&http, request).await;
                let ended = Instant::now();
                if let Err(kind) = ok {
                    errors.push(kind);
                } else {
                    acked += 1;
                    if begun >= measure_from && ended <= stop {
                        micros.push((ended - begun).as_micros() as u64);
                    }
                }
            }
            (micros, acked, errors, sent)
        });
    }
    let (mut micros, mut acked, mut errors, mut sent) = (Vec::new(), 0, Vec::new(), 0);
    while let Some(done) = workers.join_next().await {
        let (m, a, e, s) = done.context("a load worker panicked")?;
        micros.extend(m);
        acked += a;
        errors.extend(e);
        sent += s;
    }
    let counted = micros.len() as u64;
    let line = phase_line(
        &target,
        Phase {
            mode: format!("max c={concurrency} {duration}s"),
            prefix: events.prefix(),
            sent,
            acked_total: acked,
            errors,
            seconds: duration as f64,
            counted,
            micros,
        },
    );
    println!("{line}");
    Ok(())
}

async fn verify(
    prefix: &str,
    acked: u64,
    database_url: &str,
    brokers: &str,
    topic: &str,
    drain_timeout: u64,
) -> anyhow::Result<()> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(database_url)
        .await
        .context("connecting to the bench database")?;
    let pattern = format!("{prefix}%");
    let deadline = Instant::now() + Duration::from_secs(drain_timeout);
    // Rows, their publish outbox rows, and how many of those the relay has sent.
    let (rows, outboxed, sent) = loop {
        let (rows, outboxed, sent): (i64, i64, i64) = sqlx::query_as(
            "SELECT count(*), count(o.id), count(o.sent_at)
             FROM messages m LEFT JOIN outbox o ON o.message_id = m.id AND o.kind = 'publish'
             WHERE m.event_id LIKE $1",
        )
        .bind(&pattern)
        .fetch_one(&pool)
        .await
        .context("counting rows")?;
        if sent >= outboxed || Instant::now() >= deadline {
            break (rows, outboxed, sent);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    pool.close().await;
    let (kafka, kafka_dups) = {
        let (prefix, brokers, topic) = (prefix.to_string(), brokers.to_string(), topic.to_string());
        tokio::task::spawn_blocking(move || count_kafka(&prefix, &brokers, &topic))
            .await
            .context("kafka count panicked")??
    };
    let lossless = rows as u64 >= acked && sent == rows && kafka as i64 >= rows;
    println!(
        "{}",
        json!({
            "kind": "verify",
            "prefix": prefix,
            "acked": acked,
            "rows": rows,
            "outbox_publish": outboxed,
            "outbox_sent": sent,
            "kafka": kafka,
            "kafka_dups": kafka_dups,
            "lossless": lossless,
        })
    );
    Ok(())
}

/// Records on `topic` whose `event_id` starts with `prefix`, read from the earliest offset in a
/// fresh consumer group up to the high watermark of every partition: (distinct message ids,
/// duplicates).
fn count_kafka(prefix: &str, brokers: &str, topic: &str) -> anyhow::Result<(u64, u64)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set(
            "group.id",
            format!("bench-ingest-{prefix}-{}", std::process::id()),
        )
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .context("creating the Kafka consumer")?;
    let timeout = Duration::from_secs(10);
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .context("Kafka metadata")?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    if partitions.is_empty() {
        bail!("topic {topic} has no partitions");
    }
    let mut assignment = TopicPartitionList::new();
    let mut remaining = std::collections::HashMap::new();
    for &partition in &partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, partition, timeout)
            .context("Kafka watermarks")?;
        if high > low {
            remaining.insert(partition, high);
        }
        assignment.add_partition_offset(topic, partition, Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    let mut seen = std::collections::HashSet::new();
    let mut dups = 0u64;
    let deadline = Instant::now() + Duration::from_secs(90);
    while !remaining.is_empty() && Instant::now() < deadline {
        let Some(message) = consumer.poll(Duration::from_millis(500)) else {
            continue;
        };
        let message = message.context("consuming")?;
        if let Some(payload) = message.payload()
            && let Ok(record) = serde_json::from_slice::<Value>(payload)
            && record["event_id"]
                .as_str()
                .is_some_and(|e| e.starts_with(prefix))
            && !seen.insert(record["message_id"].as_i64().unwrap_or(-1))
        {
            dups += 1;
        }
        if let Some(&high) = remaining.get(&message.partition())
            && message.offset() + 1 >= high
        {
            remaining.remove(&message.partition());
        }
    }
    if !remaining.is_empty() {
        bail!("Kafka: did not reach the end of the topic within 90 s");
    }
    Ok((seen.len() as u64, dups))
}

/// The table of `file` (JSON lines written by the phases, `verify`, and the script's `rss` lines).
fn table(file: &std::path::Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file).context("reading results")?;
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |kind: &'static str| lines.iter().filter(move |l| l["kind"] == kind);
    let ms = |v: &Value| {
        v.as_f64()
            .filter(|f| f.is_finite())
            .map_or("-".to_string(), |f| format!("{f:.2}"))
    };
    println!(
        "{:<10} {:<22} {:>10} {:>8} {:>8} {:>9} {:>7}  loss check",
        "target", "mode", "events/s", "p50 ms", "p99 ms", "max ms", "errors"
    );
    for phase in of("phase") {
        let check = of("verify")
            .find(|v| v["prefix"] == phase["prefix"])
            .map_or_else(
                || {
                    if phase["target"] == "bolt" {
                        "n/a (acks without storing)".to_string()
                    } else {
                        "not checked".to_string()
                    }
                },
                |v| {
                    format!(
                        "{}: acked {} rows {} kafka {}{}",
                        if v["lossless"] == true { "ok" } else { "LOSS" },
                        v["acked"],
                        v["rows"],
                        v["kafka"],
                        match v["kafka_dups"].as_u64() {
                            Some(0) | None => String::new(),
                            Some(d) => format!(" (+{d} dup)"),
                        }
                    )
                },
            );
        println!(
            "{:<10} {:<22} {:>10.0} {:>8} {:>8} {:>9} {:>7}  {}",
            phase["target"].as_str().unwrap_or("?"),
            phase["mode"].as_str().unwrap_or("?"),
            phase["events_per_s"].as_f64().unwrap_or(0.0),
            ms(&phase["p50_ms"]),
            ms(&phase["p99_ms"]),
            ms(&phase["max_ms"]),
            phase["errors"].as_u64().unwrap_or(0),
            check
        );
        if phase["errors"].as_u64().unwrap_or(0) > 0 {
            println!("{:<10}   errors by kind: {}", "", phase["error_kinds"]);
        }
    }
    let max_of = |target: &str| {
        of("phase").find(|p| {
            p["target"] == target && p["mode"].as_str().is_some_and(|m| m.starts_with("max"))
        })
    };
    if let (Some(f), Some(b)) = (max_of("firstline"), max_of("bolt")) {
        let ratio = |key: &str| match (f[key].as_f64(), b[key].as_f64()) {
            (Some(x), Some(y)) if y > 0.0 => format!("{:.2}x", x / y),
            _ => "-".to_string(),
        };
        println!();
        println!(
            "Firstline/Bolt at max load: throughput {}, p50 {}, p99 {}",
            ratio("events_per_s"),
            ratio("p50_ms"),
            ratio("p99_ms")
        );
        println!(
            "(Firstline verifies the signature, commits each event durably in Postgres before the \
             ack and publishes it to Kafka through the outbox; Bolt verifies the signature and \
             acks without storing anything.)"
        );
    }
    let rss: Vec<String> = of("rss")
        .map(|r| {
            format!(
                "{} {} MB",
                r["process"].as_str().unwrap_or("?"),
                r["rss_mb"]
                    .as_u64()
                    .map_or("?".to_string(), |m| m.to_string())
            )
        })
        .collect();
    if !rss.is_empty() {
        println!("RSS at the end: {}", rss.join(", "));
    }
    Ok(())
}
