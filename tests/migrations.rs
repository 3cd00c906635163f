//! The schema: every migration applies to an empty database, twice is a no-op, and each unique
//! constraint, foreign key and check the invariants rely on refuses a violating row.

use firstline_model::Question;
use firstline_store::{PgPool, migrate};
use firstline_testkit::{connect, empty_db};

const UNIQUE: &str = "23505";
const FOREIGN_KEY: &str = "23503";
const CHECK: &str = "23514";

async fn expect_violation(pool: &PgPool, sql: &str, code: &str) {
    match sqlx::raw_sql(sql).execute(pool).await {
        Ok(_) => panic!("expected SQLSTATE {code}, but this succeeded: {sql}"),
        Err(sqlx::Error::Database(e)) => {
            assert_eq!(e.code().as_deref(), Some(code), "{sql}: {}", e.message())
        }
        Err(e) => panic!("{sql}: unexpected error {e}"),
    }
}

async fn exec(pool: &PgPool, sql: &str) {
    sqlx::raw_sql(sql)
        .execute(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The count a `SELECT count(*) …` returns.
async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect(sql)
}

async fn migrated_empty_database() -> PgPool {
    let (_, url) = empty_db().await;
    let pool = connect(&url).await;
    migrate(&pool, &url).await.expect("first migration");
    migrate(&pool, &url)
        .await
        .expect("second migration is a no-op");
    pool
}

/// One thread (id 1), one message (id 1) and one round (id 1) to hang violations on.
async fn seed(pool: &PgPool) {
    exec(
        pool,
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T0A1B2C3D', 'C0A1B2C3D', '1733130000.000100');
         INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, kind, text, raw)
             VALUES (1, 'Ev0A1B2C3D', 'T0A1B2C3D', 'C0A1B2C3D', '1733130000.000100', 'alert', 'x', '{}');
         INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result)
             VALUES (1, 1, 'incident-T0A1B2C3D-C0A1B2C3D-1733130000.000100', 'r', now(), true, '{}');",
    )
    .await;
}

#[tokio::test]
async fn migrations_apply_to_an_empty_database_and_install_pgvector() {
    let pool = migrated_empty_database().await;
    let vector: Option<String> =
        sqlx::query_scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            .fetch_optional(&pool)
            .await
            .unwrap();
    assert!(vector.is_some(), "pgvector installed");
    let indexes: Vec<(String, String)> = sqlx::query_as(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let def = |name: &str| {
        indexes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| panic!("index {name} missing: {indexes:?}"))
    };
    assert!(def("incidents_embedding").contains("USING hnsw"));
    assert!(def("message_embeddings_embedding").contains("USING hnsw"));
    assert!(def("incidents_search").contains("USING gin"));
    assert!(def("outbox_pending").contains("WHERE (sent_at IS NULL)"));
}

#[tokio::test]
async fn thread_and_message_constraints_hold() {
    let pool = migrated_empty_database().await;
    seed(&pool).await;
    // Same Slack thread twice.
    expect_violation(&pool,
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T0A1B2C3D', 'C0A1B2C3D', '1733130000.000100')",
        UNIQUE).await;
    expect_violation(&pool,
        "INSERT INTO threads (team_id, channel_id, thread_ts, status) VALUES ('T0A1B2C3D', 'C0A1B2C3D', '2', 'resolved')",
        CHECK).await;
    // Redelivery of the same event.
    expect_violation(&pool,
        "INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, kind, raw) VALUES (1, 'Ev0A1B2C3D', 'T0A1B2C3D', 'C0A1B2C3D', '1733130001.000200', 'chatter', '{}')",
        UNIQUE).await;
    // app_mention and message for one mention: different event ids, same (channel, ts).
    expect_violation(&pool,
        "INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, kind, raw) VALUES (1, 'Ev0OTHER01', 'T0A1B2C3D', 'C0A1B2C3D', '1733130000.000100', 'mention', '{}')",
        UNIQUE).await;
    expect_violation(&pool,
        "INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, kind, raw) VALUES (99, 'Ev0OTHER02', 'T0A1B2C3D', 'C0A1B2C3D', '1733130002.000300', 'chatter', '{}')",
        FOREIGN_KEY).await;
    expect_violation(&pool,
        "INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, kind, raw) VALUES (1, 'Ev0OTHER03', 'T0A1B2C3D', 'C0A1B2C3D', '1733130003.000400', 'gossip', '{}')",
        CHECK).await;
}

#[tokio::test]
async fn outbox_constraints_hold() {
    let pool = migrated_empty_database().await;
    seed(&pool).await;
    exec(
        &pool,
        "INSERT INTO outbox (kind, thread_id, message_id, payload) VALUES ('publish', 1, 1, '{}')",
    )
    .await;
    expect_violation(
        &pool,
        "INSERT INTO outbox (kind, thread_id, message_id, payload) VALUES ('publish', 1, 1, '{}')",
        UNIQUE,
    )
    .await;
    // No foreign keys on the outbox (migration 0007): only the ingest statement writes it.
    let foreign_keys = count(
        &pool,
        "SELECT count(*) FROM pg_constraint WHERE conrelid = 'outbox'::regclass AND contype = 'f'",
    )
    .await;
    assert_eq!(foreign_keys, 0);
    expect_violation(
        &pool,
        "INSERT INTO outbox (kind, thread_id, message_id, payload) VALUES ('email', 1, 1, '{}')",
        CHECK,
    )
    .await;
    // An incident's record (migration 0010): about an incident or a message, never both or none,
    // and once per incident.
    exec(
        &pool,
        "INSERT INTO outbox (kind, thread_id, incident_id, payload) VALUES ('publish', 1, 7, '{}')",
    )
    .await;
    expect_violation(
        &pool,
        "INSERT INTO outbox (kind, thread_id, incident_id, payload) VALUES ('publish', 1, 7, '{}')",
        UNIQUE,
    )
    .await;
    expect_violation(
        &pool,
        "INSERT INTO outbox (kind, thread_id, message_id, incident_id, payload)
         VALUES ('publish', 1, 1, 8, '{}')",
        CHECK,
    )
    .await;
    expect_violation(
        &pool,
        "INSERT INTO outbox (kind, thread_id, payload) VALUES ('publish', 1, '{}')",
        CHECK,
    )
    .await;
}

#[tokio::test]
async fn round_evidence_claim_and_cache_constraints_hold() {
    let pool = migrated_empty_database().await;
    seed(&pool).await;
    expect_violation(&pool,
        "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result) VALUES (1, 1, 'w', 'r2', now(), false, '{}')",
        UNIQUE).await;
    expect_violation(&pool,
        "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result) VALUES (99, 1, 'w', 'r', now(), false, '{}')",
        FOREIGN_KEY).await;
    let evidence = "INSERT INTO evidence (round_id, ref, capability, server, tool, args, digest, excerpt, fetched_at) VALUES";
    exec(
        &pool,
        &format!(
            "{evidence} (1, 'E1', 'pod_describe', 'k8s', 'pods_get', '{{}}', 'd', 'x', now())"
        ),
    )
    .await;
    expect_violation(
        &pool,
        &format!(
            "{evidence} (1, 'E1', 'pod_describe', 'k8s', 'pods_get', '{{}}', 'd', 'y', now())"
        ),
        UNIQUE,
    )
    .await;
    expect_violation(
        &pool,
        &format!(
            "{evidence} (99, 'E2', 'pod_describe', 'k8s', 'pods_get', '{{}}', 'd', 'y', now())"
        ),
        FOREIGN_KEY,
    )
    .await;
    expect_violation(
        &pool,
        &format!(
            "{evidence} (1, 'X7', 'pod_describe', 'k8s', 'pods_get', '{{}}', 'd', 'y', now())"
        ),
        CHECK,
    )
    .await;
    // An excerpt is at most 7,000 characters (migration 0011: a list of objects may take twice
    // the usual 3,500).
    exec(&pool, &format!("{evidence} (1, 'E3', 'pod_list', 'k8s', 'pods_list', '{{}}', 'd', repeat('a', 7000), now())")).await;
    expect_violation(&pool, &format!("{evidence} (1, 'E4', 'pod_describe', 'k8s', 'pods_get', '{{}}', 'd', repeat('a', 7001), now())"), CHECK).await;
    let claim =
        "INSERT INTO claims (round_id, ordinal, text, evidence_refs, quote, supported) VALUES";
    exec(
        &pool,
        &format!("{claim} (1, 1, 'c', ARRAY['E1'], 'x', true)"),
    )
    .await;
    expect_violation(
        &pool,
        &format!("{claim} (1, 1, 'c', ARRAY['E1'], 'x', true)"),
        UNIQUE,
    )
    .await;
    expect_violation(
        &pool,
        &format!("{claim} (99, 1, 'c', ARRAY['E1'], 'x', true)"),
        FOREIGN_KEY,
    )
    .await;
    let digest = "a".repeat(64);
    let cache = "INSERT INTO tool_cache (digest, server, tool, args, is_error, result) VALUES";
    exec(
        &pool,
        &format!("{cache} ('{digest}', 's', 't', '{{}}', false, 'r')"),
    )
    .await;
    expect_violation(
        &pool,
        &format!("{cache} ('{digest}', 's', 't', '{{}}', false, 'r')"),
        UNIQUE,
    )
    .await;
    expect_violation(
        &pool,
        &format!("{cache} ('not-a-digest', 's', 't', '{{}}', false, 'r')"),
        CHECK,
    )
    .await;
}

#[tokio::test]
async fn memory_and_audit_constraints_hold() {
    let pool = migrated_empty_database().await;
    seed(&pool).await;
    let vector = format!("'[{}]'", vec!["0.1"; 384].join(","));
    let incident = "INSERT INTO incidents (thread_id, team_id, alertname, title, summary, root_cause, resolved_at, embedding, embedding_model) VALUES";
    exec(&pool, &format!("{incident} (1, 'T0A1B2C3D', 'KubePodCrashLooping', 'payments crash loop', 'payments-api OOMKilled', 'memory limit too low', now(), {vector}, 'all-MiniLM-L6-v2')")).await;
    expect_violation(
        &pool,
        &format!("{incident} (1, 'T0A1B2C3D', 'X', 't', 's', 'r', now(), NULL, NULL)"),
        UNIQUE,
    )
    .await;
    expect_violation(
        &pool,
        &format!("{incident} (99, 'T0A1B2C3D', 'X', 't', 's', 'r', now(), NULL, NULL)"),
        FOREIGN_KEY,
    )
    .await;
    // An embedding without the model that made it cannot be compared to anything.
    expect_violation(&pool, &format!("INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T', 'C', '9'); {incident} (2, 'T', 'X', 't', 's', 'r', now(), {vector}, NULL)"), CHECK).await;
    // Wrong dimension is refused by pgvector itself (SQLSTATE 22000).
    expect_violation(
        &pool,
        "INSERT INTO message_embeddings (message_id, model, embedding) VALUES (1, 'm', '[1,2,3]')",
        "22000",
    )
    .await;
    exec(&pool, &format!("INSERT INTO message_embeddings (message_id, model, embedding) VALUES (1, 'm', {vector})")).await;
    expect_violation(&pool, &format!("INSERT INTO message_embeddings (message_id, model, embedding) VALUES (1, 'm', {vector})"), UNIQUE).await;
    expect_violation(&pool, &format!("INSERT INTO message_embeddings (message_id, model, embedding) VALUES (99, 'm', {vector})"), FOREIGN_KEY).await;
    expect_violation(&pool, "INSERT INTO audit (thread_id, actor, action, target, outcome) VALUES (99, 'w', 'tool_call', 'k8s/pods_get', 'ok')", FOREIGN_KEY).await;
    expect_violation(&pool, "INSERT INTO audit (actor, action, target, outcome) VALUES ('w', 'tool_call', 'k8s/pods_get', 'maybe')", CHECK).await;

    // Recall's two lookups work on what was stored: full text and cosine distance.
    let found = count(
        &pool,
        "SELECT count(*) FROM incidents WHERE search @@ plainto_tsquery('english', 'oomkilled memory')",
    )
    .await;
    assert_eq!(found, 1);
    let distance: f64 = sqlx::query_scalar(&format!(
        "SELECT embedding <=> {vector} FROM incidents LIMIT 1"
    ))
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(distance.abs() < 1e-6, "{distance}");
}

#[tokio::test]
async fn model_path_columns_and_reply_cache_constraints_hold() {
    let pool = migrated_empty_database().await;
    seed(&pool).await;
    expect_violation(
        &pool,
        "UPDATE rounds SET model_fallback = 'timeout' WHERE id = 1",
        CHECK,
    )
    .await;
    expect_violation(
        &pool,
        "UPDATE rounds SET refined_at = now() WHERE id = 1",
        CHECK,
    )
    .await;
    expect_violation(
        &pool,
        "UPDATE rounds SET model_tool_calls = -1 WHERE id = 1",
        CHECK,
    )
    .await;
    expect_violation(
        &pool,
        "UPDATE rounds SET model_latency_ms = -1 WHERE id = 1",
        CHECK,
    )
    .await;
    exec(
        &pool,
        "UPDATE rounds SET model = 'm', model_fallback = 'timeout', refined_at = now() WHERE id = 1",
    )
    .await;
    exec(&pool, "INSERT INTO model_replies (thread_id, round, step, answer) VALUES (1, 1, 'r/summarise', '{}')").await;
    expect_violation(&pool, "INSERT INTO model_replies (thread_id, round, step, answer) VALUES (1, 1, 'r/summarise', '{}')", UNIQUE).await;
    expect_violation(
        &pool,
        "INSERT INTO model_replies (thread_id, round, step, answer) VALUES (1, 0, 'r/judge', '{}')",
        CHECK,
    )
    .await;
    expect_violation(
        &pool,
        "INSERT INTO model_replies (thread_id, round, step, answer) VALUES (1, 1, '', '{}')",
        CHECK,
    )
    .await;
    expect_violation(&pool, "INSERT INTO model_replies (thread_id, round, step, answer) VALUES (99, 1, 'r/judge', '{}')", FOREIGN_KEY).await;
}

#[tokio::test]
async fn round_outlines_are_backfilled_from_rounds_committed_before_they_existed() {
    let (_, url) = empty_db().await;
    let pool = connect(&url).await;
    // The schema as it was before the outline columns (0008).
    let before = sqlx::migrate::Migrator {
        migrations: std::borrow::Cow::Owned(
            firstline_store::MIGRATOR
                .iter()
                .filter(|m| m.version < 8)
                .cloned()
                .collect(),
        ),
        ..sqlx::migrate::Migrator::DEFAULT
    };
    before.run(&pool).await.expect("migrations 1–7");
    exec(
        &pool,
        r#"INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T0A1B2C3D', 'C0A1B2C3D', '1733130000.000100');
           INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result)
               VALUES (1, 1, 'w', 'r', now(), true,
                       '{"text": "posted", "report": {"headline": "h", "causes": [{"statement": "c"}]}}'),
                      (1, 2, 'w', 'r', now(), false,
                       '{"text": "asked", "report": null, "questions": ["which pod?", "which env?"]}');"#,
    )
    .await;
    migrate(&pool, &url).await.expect("the rest");
    // The questions moved on to typed `asked` (0012): plain strings read back as free text.
    type Outline = (
        String,
        Option<String>,
        String,
        sqlx::types::Json<Vec<Question>>,
    );
    let outlines: Vec<Outline> =
        sqlx::query_as("SELECT headline, cause, text, asked FROM rounds ORDER BY number")
            .fetch_all(&pool)
            .await
            .unwrap();
    let outlines: Vec<_> = outlines
        .into_iter()
        .map(|(h, c, t, asked)| (h, c, t, asked.0))
        .collect();
    assert_eq!(
        outlines,
        [
            ("h".into(), Some("c".into()), "posted".into(), vec![]),
            (
                String::new(),
                None,
                "asked".into(),
                vec![Question::free("which pod?"), Question::free("which env?")]
            ),
        ]
    );
    // Its latest round asked: the thread awaits an answer.
    let awaiting: bool = sqlx::query_scalar("SELECT awaiting_answer FROM threads")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(awaiting);
}

#[tokio::test]
async fn action_constraints_hold() {
    let pool = migrated_empty_database().await;
    seed(&pool).await;
    let hash = "a".repeat(64);
    let action = format!(
        "INSERT INTO actions (thread_id, round_id, action, object, cause, change, change_hash, expires_at, state, decided_by, decided_at)
         VALUES (1, 1, '{{}}', 'Deployment shop/checkout', 'c', '{{}}', '{hash}', now()"
    );
    // A hash is sha256 hex; a decision names who and when; only an approved action executes.
    expect_violation(&pool, "INSERT INTO actions (thread_id, round_id, action, object, cause, change, change_hash, expires_at) VALUES (1, 1, '{}', 'o', 'c', '{}', 'not-a-hash', now())", CHECK).await;
    expect_violation(&pool, &format!("{action}, 'approved', NULL, NULL)"), CHECK).await;
    expect_violation(&pool, &format!("{action}, 'proposed', 'U1', now())"), CHECK).await;
    expect_violation(&pool, &format!("{action}, 'executed', NULL, NULL)"), CHECK).await;
    expect_violation(&pool, &format!("{action}, 'done', NULL, NULL)"), CHECK).await;
    exec(&pool, &format!("{action}, 'proposed', NULL, NULL)")).await;
    // One proposal per round.
    expect_violation(&pool, &format!("{action}, 'proposed', NULL, NULL)"), UNIQUE).await;
    // An outbox row is about one message, incident or action; an action wakes and publishes once.
    expect_violation(&pool, "INSERT INTO outbox (kind, thread_id, message_id, action_id, payload) VALUES ('wake', 1, 1, 1, '{}')", CHECK).await;
    exec(
        &pool,
        "INSERT INTO outbox (kind, thread_id, action_id, payload) VALUES ('wake', 1, 1, '{}')",
    )
    .await;
    expect_violation(
        &pool,
        "INSERT INTO outbox (kind, thread_id, action_id, payload) VALUES ('wake', 1, 1, '{}')",
        UNIQUE,
    )
    .await;
}
