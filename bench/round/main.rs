//! `bench/round`: alert-to-reply latency through the whole stack — Slack stand-in → bot →
//! Postgres → Temporal → `firstline worker` → incident graph (lab MCP server) → post — on the
//! lab's crash-loop scenario, broken down by stage. A measurement, not a test: it fails only
//! when something cannot be set up or a round does not finish in time. See README.md.
//!
//! Every time comes from what the system already records, all on this machine's clock: the
//! alert's Slack ts (the stand-in's posting time), `messages.received_at`, `outbox.sent_at`,
//! Temporal's workflow start time, `round_checkpoints.created_at` per graph step, and
//! `rounds.finished_at`, `post_attempted_at` and `posted_at`.
//!
//! Env: `ALERTS` (default 20) alerts per series; `TWO_WORKERS=0` skips the two-worker series;
//! `MODEL=scripted` runs one series with the model path on: a scripted OpenAI-compatible server
//! on a real socket answers each model call after [`MODEL_DELAY`], and the table adds the time
//! to the first (deterministic) post, the model's pass, and the time to the edited summary.

#[path = "../../tests/support/round_app.rs"]
mod round_app;

use std::time::{Duration, Instant, UNIX_EPOCH};

use firstline_llm::scripted::{ScriptedReply, ScriptedServer};
use firstline_slack::standin::state::TEAM_ID;
use firstline_workflows::IncidentRound;
use round_app::{RoundApp, test_settings};

const SCENARIO: &str = "crashloop-config-exit-78";
/// How long one round may take before the bench gives up.
const ROUND_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a whole concurrent batch may take.
const BATCH_TIMEOUT: Duration = Duration::from_secs(300);
/// The target for the end-to-end p50 with no model.
const TARGET_P50_MS: f64 = 3000.0;
const END_TO_END: &str = "end to end (alert → reply)";
const FIRST_POST: &str = "worker → first post";
const EDITED: &str = "alert → edited summary";
/// The scripted model's think time per call.
const MODEL_DELAY: Duration = Duration::from_millis(300);
/// The target for the first post after the worker takes the round, with a model.
const TARGET_FIRST_POST_MS: f64 = 1000.0;

/// One round's stages, in order, in milliseconds.
struct Sample {
    stages: Vec<(String, f64)>,
    grounded: bool,
    /// Epoch seconds of the alert and of the stored reply (for a batch's makespan).
    t0: f64,
    posted: f64,
}

/// A series: its samples and, for a batch, its wall time.
struct Series {
    name: String,
    samples: Vec<Sample>,
    makespan_s: Option<f64>,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let alerts: usize = std::env::var("ALERTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(20);
    let two_workers = std::env::var("TWO_WORKERS").map_or(true, |v| v != "0");
    let scripted = std::env::var("MODEL").is_ok_and(|v| v == "scripted");

    eprintln!("bench/round: starting the stack, the stand-in, the bot and the lab server...");
    let started = Instant::now();
    let mut settings = test_settings();
    // Every alert is the scenario's own, again: each must be a round of its own to be timed
    // (grouping would answer the repeats with one line each; bench/storm measures that).
    settings.grouping.window_secs = 0;
    let model = if scripted {
        let server = ScriptedServer::start(model_replies(alerts + 1))
            .await
            .unwrap_or_else(|e| panic!("the scripted model server: {e}"));
        settings.llm.base_url = server.base_url();
        settings.llm.model = "scripted".into();
        Some(server)
    } else {
        None
    };
    let mut app = RoundApp::spawn(SCENARIO, settings).await;
    let outcome = run(&mut app, alerts, two_workers, model.is_some()).await;
    app.stop().await;
    match outcome {
        Ok((series, warmup_ms)) => {
            print_report(
                &series,
                warmup_ms,
                alerts,
                started.elapsed(),
                model.is_some(),
            );
        }
        Err(e) => {
            eprintln!("bench/round: {e}");
            std::process::exit(1);
        }
    }
}

/// A model that reads nothing more, finds nothing new and says post: three calls per round,
/// each after [`MODEL_DELAY`] (rounds run one after another, so the queue stays in order).
fn model_replies(rounds: usize) -> Vec<ScriptedReply> {
    let delay = |reply: ScriptedReply| reply.with_delay(MODEL_DELAY).with_usage(1500, 40);
    (0..rounds)
        .flat_map(|_| {
            [
                delay(ScriptedReply::text("Nothing more to read.")),
                delay(ScriptedReply::json(
                    &serde_json::json!({"causes": [], "observations": []}),
                )),
                delay(ScriptedReply::json(&serde_json::json!({
                    "decision": "post", "questions": [], "confidence": "high",
                    "reason": "the detector's cause stands"
                }))),
            ]
        })
        .collect()
}

async fn run(
    app: &mut RoundApp,
    alerts: usize,
    two_workers: bool,
    model: bool,
) -> Result<(Vec<Series>, f64), String> {
    let client = app.temporal().await;
    eprintln!("bench/round: starting one `firstline worker`...");
    app.start_worker(None).await;

    // One round first, not counted: connections, pollers and caches warm up.
    eprintln!("bench/round: warm-up round...");
    let text = app.scenario.alert_text();
    let channel = app.channel.clone();
    let ts = app.post_alert(None).await;
    wait_posted(app, &[(channel.clone(), ts.clone())], ROUND_TIMEOUT).await?;
    let warmup = measure(app, &client, &channel, &ts).await?;

    let mut series = Vec::new();
    if model {
        // One series: the model's calls are scripted in order, one round after another.
        eprintln!("bench/round: {alerts} sequential alerts, a channel each, 1 worker, model on...");
        series.push(sequential(app, &client, &text, alerts, None, "seq, model (scripted)").await?);
        return Ok((series, end_to_end(&warmup)));
    }
    eprintln!("bench/round: {alerts} sequential alerts in one channel, 1 worker...");
    series.push(
        sequential(
            app,
            &client,
            &text,
            alerts,
            Some(&channel),
            "seq, 1 channel",
        )
        .await?,
    );
    eprintln!("bench/round: {alerts} sequential alerts, a channel each, 1 worker...");
    series.push(sequential(app, &client, &text, alerts, None, "seq, own channels").await?);

    eprintln!("bench/round: {alerts} concurrent alerts in {alerts} channels, 1 worker...");
    series.push(batch(app, &client, &text, alerts, "concurrent, 1 worker").await?);

    if two_workers {
        eprintln!("bench/round: starting a second worker...");
        app.start_worker(None).await;
        eprintln!("bench/round: {alerts} concurrent alerts in {alerts} channels, 2 workers...");
        series.push(batch(app, &client, &text, alerts, "concurrent, 2 workers").await?);
    }
    Ok((series, end_to_end(&warmup)))
}

/// `n` alerts one after the other, each waited for until its reply is stored: all in `channel`
/// (posts there are paced to one a second) or, when `None`, each in a channel of its own.
async fn sequential(
    app: &RoundApp,
    client: &temporalio_client::Client,
    text: &str,
    n: usize,
    channel: Option<&str>,
    name: &str,
) -> Result<Series, String> {
    let mut samples = Vec::new();
    for i in 0..n {
        let channel = channel.map_or_else(unique_channel, str::to_string);
        let ts = app.slack.integration_posts(&channel, "Alertmanager", text);
        wait_posted(app, &[(channel.clone(), ts.clone())], ROUND_TIMEOUT)
            .await
            .map_err(|e| format!("{name}, alert {}: {e}", i + 1))?;
        samples.push(measure(app, client, &channel, &ts).await?);
    }
    Ok(Series {
        name: name.into(),
        samples,
        makespan_s: None,
    })
}

/// `n` alerts posted at once, each in a channel of its own; waits for every reply.
async fn batch(
    app: &RoundApp,
    client: &temporalio_client::Client,
    text: &str,
    n: usize,
    name: &str,
) -> Result<Series, String> {
    let threads: Vec<(String, String)> = (0..n)
        .map(|_| {
            let channel = unique_channel();
            let ts = app.slack.integration_posts(&channel, "Alertmanager", text);
            (channel, ts)
        })
        .collect();
    wait_posted(app, &threads, BATCH_TIMEOUT).await?;
    let mut samples = Vec::new();
    for (channel, ts) in &threads {
        samples.push(measure(app, client, channel, ts).await?);
    }
    let first = samples.iter().map(|s| s.t0).fold(f64::INFINITY, f64::min);
    let last = samples.iter().map(|s| s.posted).fold(0.0, f64::max);
    Ok(Series {
        name: name.into(),
        samples,
        makespan_s: Some(last - first),
    })
}

/// Waits until round 1 of every (channel, thread ts) is committed and posted (and, with a
/// model, its reply edited).
async fn wait_posted(
    app: &RoundApp,
    threads: &[(String, String)],
    timeout: Duration,
) -> Result<(), String> {
    let channels: Vec<&str> = threads.iter().map(|(c, _)| c.as_str()).collect();
    let stamps: Vec<&str> = threads.iter().map(|(_, t)| t.as_str()).collect();
    let deadline = Instant::now() + timeout;
    let mut done = 0;
    while Instant::now() < deadline {
        done = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM rounds r JOIN threads t ON t.id = r.thread_id
              WHERE r.number = 1 AND r.posted_at IS NOT NULL
                AND (NOT $3 OR r.edited_at IS NOT NULL)
                AND (t.channel_id, t.thread_ts) IN
                    (SELECT * FROM unnest($1::text[], $2::text[]))",
        )
        .bind(&channels)
        .bind(&stamps)
        .bind(app.settings.llm.enabled())
        .fetch_one(&app.db.pool)
        .await
        .map_err(|e| format!("counting posted rounds: {e}"))?;
        if done as usize == threads.len() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(format!(
        "only {done} of {} round(s) posted within {timeout:?}",
        threads.len()
    ))
}

type TimesRow = (i64, f64, f64, f64, f64, Option<f64>, f64, bool);

/// The stages of round 1 of thread (`channel`, `ts`), from the rows and Temporal.
async fn measure(
    app: &RoundApp,
    client: &temporalio_client::Client,
    channel: &str,
    ts: &str,
) -> Result<Sample, String> {
    let pool = &app.db.pool;
    let (thread_id, t0, received, woke, finished, attempted, posted, grounded): TimesRow =
        sqlx::query_as(
            "SELECT t.id, $2::float8,
                    extract(epoch FROM m.received_at)::float8,
                    extract(epoch FROM o.sent_at)::float8,
                    extract(epoch FROM r.finished_at)::float8,
                    extract(epoch FROM r.post_attempted_at)::float8,
                    extract(epoch FROM r.posted_at)::float8,
                    r.grounded
               FROM threads t
               JOIN messages m ON m.thread_id = t.id AND m.ts = t.thread_ts
               JOIN outbox o ON o.message_id = m.id AND o.kind = 'wake'
               JOIN rounds r ON r.thread_id = t.id AND r.number = 1
              WHERE t.channel_id = $1 AND t.thread_ts = $3",
        )
        .bind(channel)
        .bind(
            ts.parse::<f64>()
                .map_err(|e| format!("alert ts {ts}: {e}"))?,
        )
        .bind(ts)
        .fetch_one(pool)
        .await
        .map_err(|e| format!("the rows of thread {channel}/{ts}: {e}"))?;
    let steps: Vec<(i32, String, f64)> = sqlx::query_as(
        "SELECT step, array_to_string(nodes, '+'), extract(epoch FROM created_at)::float8
           FROM round_checkpoints WHERE thread_id = $1 AND round = 1 ORDER BY step",
    )
    .bind(thread_id)
    .fetch_all(pool)
    .await
    .map_err(|e| format!("the checkpoints of thread {channel}/{ts}: {e}"))?;
    let Some((0, _, graph_start)) = steps.first().cloned() else {
        return Err(format!("thread {channel}/{ts} has no step-0 checkpoint"));
    };

    let workflow_id = firstline_model::ThreadKey {
        team_id: TEAM_ID.to_string(),
        channel_id: channel.to_string(),
        thread_ts: ts.to_string(),
    }
    .workflow_id();
    let started = client
        .get_workflow_handle::<IncidentRound>(workflow_id.clone())
        .describe(Default::default())
        .await
        .ok()
        .and_then(|d| d.start_time())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64());

    let ms = |from: f64, to: f64| (to - from) * 1000.0;
    let mut stages = vec![
        ("ack: posted → alert row".to_string(), ms(t0, received)),
        ("wake relay: row → claimed".into(), ms(received, woke)),
    ];
    match started {
        Some(started) => {
            stages.push(("workflow start (signal)".into(), ms(woke, started)));
            stages.push(("load_context → run_graph".into(), ms(started, graph_start)));
        }
        None => stages.push((
            "workflow start + load_context".into(),
            ms(woke, graph_start),
        )),
    }
    let mut previous = graph_start;
    for (_, nodes, at) in &steps[1..] {
        stages.push((format!("graph: {nodes}"), ms(previous, *at)));
        previous = *at;
    }
    stages.push(("commit: graph → round row".into(), ms(previous, finished)));
    match attempted {
        Some(attempted) => {
            stages.push(("post: activity start".into(), ms(finished, attempted)));
            stages.push(("post: chat.postMessage".into(), ms(attempted, posted)));
        }
        None => stages.push(("post".into(), ms(finished, posted))),
    }
    if let Some(started) = started {
        stages.push((FIRST_POST.into(), ms(started, posted)));
    }
    let model: Option<(Option<f64>, Option<f64>, i32)> = sqlx::query_as(
        "SELECT extract(epoch FROM refined_at)::float8, extract(epoch FROM edited_at)::float8,
                model_latency_ms
           FROM rounds WHERE thread_id = $1 AND number = 1 AND model IS NOT NULL",
    )
    .bind(thread_id)
    .fetch_optional(pool)
    .await
    .map_err(|e| format!("the model columns of thread {channel}/{ts}: {e}"))?;
    if let Some((Some(refined), Some(edited), latency_ms)) = model {
        stages.push(("model pass: post → refined".into(), ms(posted, refined)));
        stages.push(("  of which the model's own".into(), f64::from(latency_ms)));
        stages.push(("edit: chat.update".into(), ms(refined, edited)));
        stages.push((EDITED.into(), ms(t0, edited)));
    }
    stages.push((END_TO_END.into(), ms(t0, posted)));
    Ok(Sample {
        stages,
        grounded,
        t0,
        posted,
    })
}

fn end_to_end(sample: &Sample) -> f64 {
    sample
        .stages
        .iter()
        .find(|(name, _)| name == END_TO_END)
        .map_or(f64::NAN, |(_, ms)| *ms)
}

/// A channel id of Slack's shape, unique to this run (workflow ids include it).
fn unique_channel() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
    format!("C0{}", &id[..9])
}

/// Nearest-rank percentile of sorted `values`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// (p50, p95, max, n) of stage `stage` in `series`.
fn stats(series: &Series, stage: &str) -> Option<(f64, f64, f64, usize)> {
    let mut values: Vec<f64> = series
        .samples
        .iter()
        .flat_map(|s| s.stages.iter())
        .filter(|(name, _)| name == stage)
        .map(|(_, ms)| *ms)
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some((
        percentile(&values, 0.50),
        percentile(&values, 0.95),
        values[values.len() - 1],
        values.len(),
    ))
}

fn print_report(series: &[Series], warmup_ms: f64, alerts: usize, took: Duration, model: bool) {
    // Stage names in first-seen order, end to end last.
    let mut stages: Vec<String> = Vec::new();
    for sample in series.iter().flat_map(|s| s.samples.iter()) {
        for (name, _) in &sample.stages {
            if !stages.contains(name) {
                stages.push(name.clone());
            }
        }
    }
    stages.retain(|s| s != END_TO_END);
    stages.push(END_TO_END.into());

    let label = 27;
    let group = 21;
    println!(
        "bench/round  {}  {} cores  {}  scenario {SCENARIO}, {}, {alerts} alerts per series",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        std::thread::available_parallelism().map_or(0, usize::from),
        if cfg!(debug_assertions) {
            "debug build (--profile dev)"
        } else {
            "optimised build"
        },
        if model {
            format!("scripted model ({} ms per call)", MODEL_DELAY.as_millis())
        } else {
            "no model".to_string()
        },
    );
    println!();
    let mut header = format!("{:label$}", "stage (ms)");
    let mut sub = format!("{:label$}", "");
    for s in series {
        header.push_str(&format!(" | {:^group$}", s.name));
        sub.push_str(&format!(" | {:>6} {:>6} {:>7}", "p50", "p95", "max"));
    }
    println!("{header}");
    println!("{sub}");
    println!("{}", "-".repeat(sub.chars().count()));
    for stage in &stages {
        if stage == END_TO_END {
            println!("{}", "-".repeat(sub.chars().count()));
        }
        let mut line = format!("{:label$}", stage);
        for s in series {
            match stats(s, stage) {
                Some((p50, p95, max, n)) => {
                    let partial = if n < s.samples.len() {
                        format!(" ({n}/{})", s.samples.len())
                    } else {
                        String::new()
                    };
                    let cell = format!("{p50:>6.0} {p95:>6.0} {max:>7.0}{partial}");
                    line.push_str(&format!(" | {cell:group$}"));
                }
                None => line.push_str(&format!(" | {:>6} {:>6} {:>7}", "-", "-", "-")),
            }
        }
        println!("{}", line.trim_end());
    }
    println!();
    for s in series {
        let grounded = s.samples.iter().filter(|x| x.grounded).count();
        let mut line = format!("{}: {grounded}/{} grounded", s.name, s.samples.len());
        if let Some(makespan) = s.makespan_s {
            line.push_str(&format!(
                ", first alert → last reply {:.1} s ({:.1} rounds/s)",
                makespan,
                s.samples.len() as f64 / makespan
            ));
        }
        println!("{line}");
    }
    println!("warm-up round (not counted): {warmup_ms:.0} ms end to end");
    if model {
        println!(
            "target: first post p50 < {TARGET_FIRST_POST_MS:.0} ms after the worker takes the round"
        );
        for s in series {
            if let Some((p50, p95, ..)) = stats(s, FIRST_POST) {
                let verdict = if p50 < TARGET_FIRST_POST_MS {
                    "met"
                } else {
                    "NOT met"
                };
                println!(
                    "  {:22} first post p50 {p50:>5.0} ms, p95 {p95:>5.0} ms  {verdict}",
                    s.name
                );
            }
            if let Some((p50, p95, ..)) = stats(s, EDITED) {
                println!(
                    "  {:22} edited summary p50 {p50:>5.0} ms, p95 {p95:>5.0} ms after the alert",
                    s.name
                );
            }
        }
        println!("total bench time {:.0} s", took.as_secs_f64());
        return;
    }
    println!("target: end-to-end p50 < {TARGET_P50_MS:.0} ms with no model");
    for s in series {
        if let Some((p50, ..)) = stats(s, END_TO_END) {
            let verdict = if p50 < TARGET_P50_MS {
                "met"
            } else {
                "NOT met"
            };
            println!("  {:22} p50 {p50:>5.0} ms  {verdict}", s.name);
        }
    }
    println!("total bench time {:.0} s", took.as_secs_f64());
}
