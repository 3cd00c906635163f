//! The test harness every integration test uses (zero2prod's `spawn_app`, grown up).
//!
//! - **One stack per run.** `scripts/test` starts PostgreSQL, Temporal and the broker once (with
//!   `firstline dev`, on free ports) and hands their addresses to every test process through
//!   `FIRSTLINE_TEST_POSTGRES_URL`, `FIRSTLINE_TEST_TEMPORAL_ADDRESS` and
//!   `FIRSTLINE_TEST_KAFKA_BROKERS`. A plain `cargo test` without them starts a private stack
//!   once per test binary and stops it when the binary exits. Under nextest (a process per
//!   test) that would mean a Postgres per test, so there the variables are required.
//! - **A database per test**, cloned from a migrated template in milliseconds ([`test_db`]).
//! - **Names per test** for Temporal task queues and Kafka topics ([`unique_name`]), so tests
//!   share servers without sharing state and can run in parallel, in any order.
//! - **Reading a topic back** from earliest in a fresh group ([`kafka`]).
//! - **Private servers** for tests that stop a dependency ([`private`]).
//! - **Other packages' binaries** ([`workspace_binary`]), e.g. the lab server run over stdio.

pub mod kafka;
mod own_stack;
pub mod private;

use firstline_config::DatabaseUrl;
use firstline_store::PgPool;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::OnceCell;

/// Where the shared services answer.
#[derive(Debug, Clone)]
pub struct TestStack {
    /// Superuser URL of the `postgres` database (used to create test databases).
    pub postgres_admin_url: DatabaseUrl,
    /// Temporal frontend, `http://127.0.0.1:P`.
    pub temporal_address: String,
    /// Kafka bootstrap servers.
    pub kafka_brokers: String,
}

const POSTGRES_VAR: &str = "FIRSTLINE_TEST_POSTGRES_URL";
const TEMPORAL_VAR: &str = "FIRSTLINE_TEST_TEMPORAL_ADDRESS";
const KAFKA_VAR: &str = "FIRSTLINE_TEST_KAFKA_BROKERS";

/// The run's shared stack: from the environment, or started for this test binary.
pub fn stack() -> &'static TestStack {
    static STACK: OnceLock<TestStack> = OnceLock::new();
    STACK.get_or_init(|| {
        let from_env = (
            std::env::var(POSTGRES_VAR),
            std::env::var(TEMPORAL_VAR),
            std::env::var(KAFKA_VAR),
        );
        if let (Ok(postgres), Ok(temporal), Ok(kafka)) = from_env {
            return TestStack {
                postgres_admin_url: DatabaseUrl::new(postgres),
                temporal_address: temporal,
                kafka_brokers: kafka,
            };
        }
        assert!(
            std::env::var_os("NEXTEST_RUN_ID").is_none(),
            "under nextest each test is a process: run the suite with scripts/test, which \
             starts one stack and sets {POSTGRES_VAR}, {TEMPORAL_VAR} and {KAFKA_VAR}"
        );
        own_stack::start()
    })
}

/// The workspace root (where `.tools/` and `migrations/` live).
pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// A binary of another workspace package (cargo only tells a test where its own package's
/// binaries are), next to the running test in the target directory. `cargo build --workspace`
/// builds it; `scripts/test` does before any test runs.
pub fn workspace_binary(name: &str) -> std::path::PathBuf {
    let profile_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .unwrap_or_default();
    let path = profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --workspace` (scripts/test does) before this test",
        path.display()
    );
    path
}

/// A fresh, migrated database of one's own.
#[derive(Debug)]
pub struct TestDb {
    /// Its name (`fl_test_…`).
    pub name: String,
    /// Its URL.
    pub url: DatabaseUrl,
    /// A pool connected to it.
    pub pool: PgPool,
}

/// Creates a database for the calling test from the migrated template.
pub async fn test_db() -> TestDb {
    let stack = stack();
    let template = template().await;
    let name = format!("fl_test_{}", uuid::Uuid::new_v4().simple());
    firstline_store::ensure_database(
        &stack.postgres_admin_url,
        &name,
        Some(template),
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("creating test database {name}: {e}"));
    let url = firstline_store::with_database(&stack.postgres_admin_url, &name);
    let pool = connect(&url).await;
    TestDb { name, url, pool }
}

/// An empty database with nothing applied, for testing migrations themselves.
pub async fn empty_db() -> (String, DatabaseUrl) {
    let stack = stack();
    let name = format!("fl_empty_{}", uuid::Uuid::new_v4().simple());
    firstline_store::ensure_database(
        &stack.postgres_admin_url,
        &name,
        None,
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("creating database {name}: {e}"));
    let url = firstline_store::with_database(&stack.postgres_admin_url, &name);
    (name, url)
}

/// A pool on `url` for tests.
pub async fn connect(url: &DatabaseUrl) -> PgPool {
    firstline_store::connect(&firstline_config::DatabaseSettings {
        url: url.clone(),
        max_connections: 5,
        connect_timeout_secs: 10,
    })
    .await
    .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

/// The migrated template's name, creating it once per run. Several test processes may race
/// here; a Postgres advisory lock makes exactly one of them build it.
async fn template() -> &'static str {
    static TEMPLATE: OnceCell<String> = OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let checksum: u64 = firstline_store::MIGRATOR
                .iter()
                .flat_map(|m| m.checksum.iter().copied())
                .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
                    (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
                });
            let name = format!("fl_template_{checksum:016x}");
            let admin_url = &stack().postgres_admin_url;
            let admin = connect(admin_url).await;
            let mut lock = admin.acquire().await.expect("admin connection");
            sqlx::query("SELECT pg_advisory_lock(72_331)")
                .execute(&mut *lock)
                .await
                .expect("advisory lock");
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                    .bind(&name)
                    .fetch_one(&mut *lock)
                    .await
                    .expect("listing databases");
            if !exists {
                let building = format!("{name}_building");
                let quoted = firstline_store::quote_identifier(&building);
                for statement in [
                    format!("DROP DATABASE IF EXISTS {quoted}"),
                    format!("CREATE DATABASE {quoted}"),
                ] {
                    sqlx::raw_sql(&statement)
                        .execute(&mut *lock)
                        .await
                        .expect("creating the template");
                }
                let url = firstline_store::with_database(admin_url, &building);
                let pool = connect(&url).await;
                firstline_store::migrate(&pool, &url)
                    .await
                    .expect("migrating the template");
                pool.close().await;
                // Renamed only when complete, so a crash mid-migration never leaves a
                // half-built template that later runs would trust.
                // A closed session's backend may still be exiting, and autovacuum may have
                // connected to the fresh database: end those sessions and retry "being accessed
                // by other users" (55006) briefly.
                let rename = format!(
                    "ALTER DATABASE {} RENAME TO {}",
                    firstline_store::quote_identifier(&building),
                    firstline_store::quote_identifier(&name)
                );
                for attempt in 1..=50 {
                    match sqlx::raw_sql(&rename).execute(&mut *lock).await {
                        Ok(_) => break,
                        Err(sqlx::Error::Database(e))
                            if e.code().as_deref() == Some("55006") && attempt < 50 =>
                        {
                            let _ = sqlx::query(
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                  WHERE datname = $1 AND pid <> pg_backend_pid()",
                            )
                            .bind(&building)
                            .execute(&mut *lock)
                            .await;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Err(e) => panic!("publishing the template: {e}"),
                    }
                }
            }
            sqlx::query("SELECT pg_advisory_unlock(72_331)")
                .execute(&mut *lock)
                .await
                .expect("advisory unlock");
            drop(lock);
            admin.close().await;
            name
        })
        .await
}

/// A name no other test uses: for task queues, topics, workflow ids.
pub fn unique_name(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..12])
}

/// Polls `check` every 50 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
