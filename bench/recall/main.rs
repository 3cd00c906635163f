//! `bench/recall`: recall by meaning at scale, and the embedder's throughput, in one table.
//!
//! 1. **Model**: the local all-MiniLM-L6-v2 embeds `MESSAGES` incident-chat messages through
//!    `LocalEmbedder` (batches of 32, one batch per CPU at once): messages/s.
//! 2. **Embedder**: the same messages as rows in Postgres and records on a Kafka topic; a
//!    `firstline embedder` process consumes them and writes the vectors: messages/s from its
//!    first record to the last vector stored (start-up excluded).
//! 3. **Index**: `INCIDENTS` synthetic incidents (clustered unit vectors and templated texts in
//!    one workspace, the worst case for the team filter) plus the lab's paraphrase set embedded
//!    by the real model; the HNSW index built from scratch afterwards: its build time.
//! 4. **Queries**: the paraphrase set's 30 alerts and `QUERIES` − 30 synthetic ones, hybrid
//!    and keyword-only, through `search_incidents` (what the recall node runs): p50/p95 of the
//!    search, of embedding the alert, and recall@3 of the paraphrase alerts among all of it.
//!
//! A measurement, not a test: it fails only when something cannot be set up. Env: `INCIDENTS`
//! (default 100000), `MESSAGES` (default 2000), `QUERIES` (default 300).

#[path = "../../tests/support/paraphrases.rs"]
mod paraphrases;
#[path = "../../tests/support/round_app.rs"]
mod round_app;

use std::time::{Duration, Instant};

use firstline_alert::AlertTarget;
use firstline_embed::Embedder;
use firstline_investigation::recall::{RecallOptions, RecallQuery, meaning_text, search_incidents};
use firstline_model::{MESSAGE_SCHEMA, MessageRecord, ThreadKey, incident_text};
use firstline_store::incidents::vector_literal;
use rdkafka::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use round_app::{RoundApp, test_settings};

const TEAM: &str = "TBENCH";
const DIMENSIONS: usize = 384;
const CLUSTERS: usize = 500;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: reproducible synthetic data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Roughly normal (sum of uniforms).
    fn normal(&mut self) -> f32 {
        (0..4)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
            .sum::<f32>()
            - 2.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

const SERVICES: &[&str] = &[
    "payments",
    "checkout",
    "orders",
    "search",
    "catalog",
    "auth",
    "gateway",
    "billing",
    "ledger",
    "shipping",
    "inventory",
    "notifications",
    "reports",
    "media",
    "profile",
    "recommendations",
];
const SYMPTOMS: &[&str] = &[
    "crash looping after deploy",
    "latency p99 above SLO",
    "5xx spike on ingress",
    "OOMKilled repeatedly",
    "disk filling on data volume",
    "consumer lag growing",
    "connection pool exhausted",
    "certificate about to expire",
    "DNS lookups timing out",
    "pods pending, insufficient cpu",
    "replication lag on replica",
    "queue backlog growing",
];
const CAUSES: &[&str] = &[
    "a missing environment variable in the new release",
    "a memory leak in the image decoder",
    "debug logging left on",
    "the connection limit of the database",
    "an expired intermediate CA",
    "a CoreDNS pod throttled by its CPU limit",
    "a node pool at capacity",
    "a slow query without an index",
    "a feature flag enabling a heavy code path",
    "a retry storm from a dependency",
    "the autoscaler at its maximum",
    "a lost ILM policy",
];
const FIXES: &[&str] = &[
    "rolled back the release",
    "raised the limit and redeployed",
    "added the missing index",
    "rotated the certificate",
    "scaled the node pool",
    "turned the flag off",
    "restored the config value",
    "deleted old indices and reattached the policy",
];
const ALERTS: &[&str] = &[
    "KubePodCrashLooping",
    "KubeDeploymentReplicasMismatch",
    "TargetDown",
    "HighErrorRate",
    "KubePersistentVolumeFillingUp",
    "CPUThrottlingHigh",
    "KafkaConsumerLag",
    "SLOBurnRate",
];

/// One synthetic incident: its fields and a vector near one of the clusters.
struct Synthetic {
    alertname: String,
    service: String,
    title: String,
    summary: String,
    root_cause: String,
    resolution: String,
    vector: Vec<f32>,
}

fn synthetic(rng: &mut Rng, centers: &[Vec<f32>]) -> Synthetic {
    let service = rng.pick(SERVICES);
    let symptom = rng.pick(SYMPTOMS);
    let cause = rng.pick(CAUSES);
    let fix = rng.pick(FIXES);
    let center = &centers[rng.below(centers.len())];
    let vector = unit(center.iter().map(|c| c + 0.01 * rng.normal()).collect());
    Synthetic {
        alertname: rng.pick(ALERTS).to_string(),
        service: format!("{service}-{}", rng.below(40)),
        title: format!("{service} {symptom}"),
        summary: format!(
            "On-call saw {symptom} for {service}; the investigation found {cause} and the team {fix}."
        ),
        root_cause: cause.to_string(),
        resolution: fix.to_string(),
        vector,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn millis(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (percentile(samples, 0.5), percentile(samples, 0.95))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let incidents = env_usize("INCIDENTS", 100_000);
    let messages = env_usize("MESSAGES", 2_000);
    let queries = env_usize("QUERIES", 300);
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut app = RoundApp::spawn("crashloop-config-exit-78", test_settings()).await;
    let pool = app.db.pool.clone();
    let embedder: std::sync::Arc<dyn Embedder> = firstline_embed::from_settings(
        &firstline_config::Settings::default().embedding,
        &firstline_testkit::workspace_root().join(".tools"),
    )
    .await
    .expect("the local model (scripts/setup installs it)");
    let mut rng = Rng(0x5EED_F1A5_7115_E000);

    // 1. The model alone.
    let texts: Vec<String> = (0..messages)
        .map(|i| {
            format!(
                "{} {}: seeing {} again, maybe {}? ({i})",
                rng.pick(&["hey", "fyi", "heads up", "ok so"]),
                rng.pick(SERVICES),
                rng.pick(SYMPTOMS),
                rng.pick(CAUSES)
            )
        })
        .collect();
    eprintln!("bench/recall: embedding {messages} messages with the model");
    let started = Instant::now();
    let vectors = embedder.embed(&texts).await.expect("embedding");
    let model_rate = messages as f64 / started.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), messages);
    rows.push((
        format!("model: {messages} messages, batches of 32, {} CPUs", cpus()),
        format!("{model_rate:.0} messages/s"),
    ));

    // 2. The embedder process, Kafka to pgvector.
    eprintln!("bench/recall: the embedder consuming {messages} records");
    let thread: i64 = sqlx::query_scalar(
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ($1, 'CBENCH', '1.0')
         RETURNING id",
    )
    .bind(TEAM)
    .fetch_one(&pool)
    .await
    .expect("thread");
    let ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO messages (thread_id, team_id, channel_id, ts, thread_ts, kind, user_id, text, raw)
         SELECT $1, $2, 'CBENCH', '2.' || n, '1.0', 'chatter', 'UBENCH', t, '{}'::jsonb
         FROM unnest($3::text[]) WITH ORDINALITY AS u(t, n)
         RETURNING id",
    )
    .bind(thread)
    .bind(TEAM)
    .bind(&texts)
    .fetch_all(&pool)
    .await
    .expect("messages");
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &app.settings.kafka.brokers)
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    let key = ThreadKey {
        team_id: TEAM.into(),
        channel_id: "CBENCH".into(),
        thread_ts: "1.0".into(),
    };
    let sends = ids.iter().zip(&texts).map(|(id, text)| {
        let record = MessageRecord {
            schema: MESSAGE_SCHEMA.into(),
            message_id: *id,
            event_id: None,
            thread: key.clone(),
            ts: format!("2.{id}"),
            kind: "chatter".into(),
            user_id: Some("UBENCH".into()),
            bot_id: None,
            app_id: None,
            username: None,
            text: text.clone(),
            received_at: chrono::Utc::now().to_rfc3339(),
        };
        let value = serde_json::to_string(&record).expect("record");
        let producer = producer.clone();
        let topic = app.settings.kafka.topic.clone();
        let partition_key = format!("{}-{}", key.kafka_key(), id % 3);
        async move {
            producer
                .send(
                    FutureRecord::to(&topic).key(&partition_key).payload(&value),
                    Duration::from_secs(30),
                )
                .await
                .map_err(|(e, _)| e)
                .expect("producing");
        }
    });
    futures::future::join_all(sends).await;
    app.start_embedder(None).await;
    let first: chrono::DateTime<chrono::Utc> =
        firstline_testkit::wait_for("the first vector", Duration::from_secs(120), || async {
            sqlx::query_scalar("SELECT min(embedded_at) FROM message_embeddings")
                .fetch_one(&pool)
                .await
                .ok()
                .flatten()
        })
        .await;
    let last: chrono::DateTime<chrono::Utc> =
        firstline_testkit::wait_for("every vector", Duration::from_secs(600), || async {
            let (n, last): (i64, Option<chrono::DateTime<chrono::Utc>>) =
                sqlx::query_as("SELECT count(*), max(embedded_at) FROM message_embeddings")
                    .fetch_one(&pool)
                    .await
                    .ok()?;
            (n as usize == messages).then_some(last).flatten()
        })
        .await;
    // A batch's rows share their transaction's time: the first batch's own work is before
    // `first`, so the rate counts the records after it.
    let first_batch: i64 =
        sqlx::query_scalar("SELECT count(*) FROM message_embeddings WHERE embedded_at = $1")
            .bind(first)
            .fetch_one(&pool)
            .await
            .expect("first batch");
    let seconds = (last - first).num_milliseconds().max(1) as f64 / 1000.0;
    let pipeline_rate = (messages as f64 - first_batch as f64) / seconds;
    rows.push((
        format!("embedder: Kafka → model → pgvector, {messages} records"),
        format!("{pipeline_rate:.0} messages/s"),
    ));

    // 3. The index over synthetic incidents and the paraphrase set.
    eprintln!("bench/recall: inserting {incidents} synthetic incidents");
    // Synthetic incidents sit where real ones do: near the real embeddings of templated
    // incident texts (a cloud of random vectors would make a graph real queries never enter).
    let templates: Vec<String> = (0..CLUSTERS)
        .map(|_| {
            let s = synthetic(&mut rng, &[vec![0.0; DIMENSIONS]]);
            incident_text(
                &s.title,
                &s.root_cause,
                &s.resolution,
                &s.summary,
                Some(&s.alertname),
                Some(&s.service),
            )
        })
        .collect();
    let centers = embedder
        .embed(&templates)
        .await
        .expect("embedding the templates");
    sqlx::query("DROP INDEX incidents_embedding")
        .execute(&pool)
        .await
        .expect("dropping the index");
    let inserted = Instant::now();
    for chunk_start in (0..incidents).step_by(5_000) {
        let chunk: Vec<Synthetic> = (chunk_start..(chunk_start + 5_000).min(incidents))
            .map(|_| synthetic(&mut rng, &centers))
            .collect();
        insert_synthetic(&pool, chunk_start, &chunk).await;
    }
    let set = paraphrases::load();
    let mut names = std::collections::BTreeMap::new();
    let mut vectors = Vec::new();
    for (i, past) in set.past.iter().chain(&set.distractors).enumerate() {
        let team = if past.team == "T1" { TEAM } else { "TOTHER" };
        let vector = embedder
            .embed(&[past.text()])
            .await
            .expect("embedding")
            .remove(0);
        let id = past
            .record(&pool, team, &format!("3.{i}"), chrono::Utc::now())
            .await;
        names.insert(id, past.id.clone());
        vectors.push((id, vector));
    }
    firstline_store::embeddings::write(&pool, embedder.model(), &[], &vectors)
        .await
        .expect("paraphrase vectors");
    rows.push((
        format!("insert {incidents} incidents (no vector index)"),
        format!("{:.1} s", inserted.elapsed().as_secs_f64()),
    ));
    eprintln!("bench/recall: building the HNSW index");
    let built = Instant::now();
    let mut conn = pool.acquire().await.expect("connection");
    sqlx::query("SET maintenance_work_mem = '512MB'")
        .execute(&mut *conn)
        .await
        .expect("maintenance_work_mem");
    sqlx::query(
        "CREATE INDEX incidents_embedding ON incidents USING hnsw (embedding vector_cosine_ops)",
    )
    .execute(&mut *conn)
    .await
    .expect("building the index");
    rows.push((
        format!(
            "HNSW index build, {} vectors (m=16, ef_construction=64)",
            incidents + names.len()
        ),
        format!("{:.1} s", built.elapsed().as_secs_f64()),
    ));
    drop(conn);
    sqlx::query("ANALYZE incidents")
        .execute(&pool)
        .await
        .expect("analyze");

    // 4. Queries.
    eprintln!("bench/recall: {queries} recall queries, hybrid and keyword-only");
    let options = RecallOptions::default();
    let mut alerts: Vec<(AlertTarget, Option<String>)> = set
        .queries
        .iter()
        .filter(|q| q.team == "T1")
        .map(|q| (q.alert.target(), Some(q.expect.clone())))
        .collect();
    while alerts.len() < queries {
        let s = synthetic(&mut rng, &centers);
        alerts.push((
            AlertTarget {
                alertname: Some(s.alertname),
                service: Some(s.service),
                summary: Some(s.title),
                description: Some(s.summary),
                ..AlertTarget::default()
            },
            None,
        ));
    }
    let (mut embed_ms, mut hybrid_ms, mut keyword_ms) = (Vec::new(), Vec::new(), Vec::new());
    let (mut hybrid_hits, mut keyword_hits, mut labelled) = (0, 0, 0);
    for (target, expect) in &alerts {
        let query = RecallQuery::for_alert(TEAM, target, options.max_terms);
        let started = Instant::now();
        let vector = embedder
            .embed(&[meaning_text(target)])
            .await
            .expect("embedding the alert")
            .remove(0);
        embed_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let hybrid = search_incidents(&pool, &query, Some((vector, embedder.model())), &options)
            .await
            .expect("hybrid search");
        hybrid_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let keyword = search_incidents(&pool, &query, None, &options)
            .await
            .expect("keyword search");
        keyword_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        if let Some(expect) = expect {
            labelled += 1;
            let hit = |found: &[firstline_investigation::PriorIncident]| {
                found
                    .iter()
                    .any(|p| names.get(&p.incident.id) == Some(expect))
            };
            hybrid_hits += usize::from(hit(&hybrid));
            keyword_hits += usize::from(hit(&keyword));
        }
    }
    let (embed_p50, embed_p95) = millis(&mut embed_ms);
    let (hybrid_p50, hybrid_p95) = millis(&mut hybrid_ms);
    let (keyword_p50, keyword_p95) = millis(&mut keyword_ms);
    let total = incidents + names.len();
    rows.push((
        format!("hybrid recall query over {total} incidents (goal p95 < 20 ms)"),
        format!(
            "p50 {hybrid_p50:.1} ms, p95 {hybrid_p95:.1} ms{}",
            if hybrid_p95 < 20.0 {
                ""
            } else {
                "  (over the goal)"
            }
        ),
    ));
    rows.push((
        format!("keyword-only recall query over {total} incidents"),
        format!("p50 {keyword_p50:.1} ms, p95 {keyword_p95:.1} ms"),
    ));
    rows.push((
        "embedding the alert (local model)".to_string(),
        format!("p50 {embed_p50:.1} ms, p95 {embed_p95:.1} ms"),
    ));
    rows.push((
        format!("paraphrase alerts found in top 3 among {total}"),
        format!("hybrid {hybrid_hits}/{labelled}, keyword-only {keyword_hits}/{labelled}"),
    ));

    println!(
        "\n| bench/recall ({} queries, {} CPUs) | result |",
        alerts.len(),
        cpus()
    );
    println!("|---|---|");
    for (what, result) in &rows {
        println!("| {what} | {result} |");
    }
    app.stop().await;
}

async fn insert_synthetic(pool: &sqlx::PgPool, offset: usize, chunk: &[Synthetic]) {
    let ts: Vec<String> = (0..chunk.len())
        .map(|i| format!("4.{}", offset + i))
        .collect();
    let column = |f: fn(&Synthetic) -> String| chunk.iter().map(f).collect::<Vec<String>>();
    sqlx::query(
        "WITH t AS (
             INSERT INTO threads (team_id, channel_id, thread_ts, status, resolved_at)
             SELECT $1, 'CSYN', ts, 'resolved', now() FROM unnest($2::text[]) AS ts
             RETURNING id, thread_ts),
         u AS (SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                    $7::text[], $8::text[], $9::text[])
                   AS u(ts, alertname, service, title, summary, root_cause, resolution, vector))
         INSERT INTO incidents (thread_id, team_id, alertname, service, namespace, title, summary,
                                root_cause, resolution, resolved_at, embedding, embedding_model)
         SELECT t.id, $1, u.alertname, u.service, 'prod', u.title, u.summary, u.root_cause,
                u.resolution, now() - interval '30 days', u.vector::vector, $10
         FROM u JOIN t ON t.thread_ts = u.ts",
    )
    .bind(TEAM)
    .bind(&ts)
    .bind(column(|s| s.alertname.clone()))
    .bind(column(|s| s.service.clone()))
    .bind(column(|s| s.title.clone()))
    .bind(column(|s| s.summary.clone()))
    .bind(column(|s| s.root_cause.clone()))
    .bind(column(|s| s.resolution.clone()))
    .bind(column(|s| vector_literal(&s.vector)))
    .bind(firstline_config::LOCAL_EMBEDDING_MODEL)
    .execute(pool)
    .await
    .expect("inserting synthetic incidents");
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
