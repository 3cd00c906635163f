//! Firstline reaches a PostgreSQL that requires TLS, as managed services do, through the
//! standard `sslmode`, `sslrootcert`, `sslcert` and `sslkey` parameters of `database.url` (issue
//! 16). The embedded PostgreSQL has no SSL, so a TLS front (`support/postgres_front.rs`) speaks
//! PostgreSQL's TLS opening before it and relays to it:
//!
//! - `verify-full` against the operator's CA: the pool, the migrations, the `firstline migrate`
//!   binary, and a worker process's whole round, all over TLS;
//! - a client certificate when the server requires one;
//! - what such a server refuses (no TLS, an untrusted certificate, no client certificate) fails
//!   with one line naming the server and why, never the password.

#[path = "support/accept_loop.rs"]
mod accept_loop;
#[path = "support/postgres_front.rs"]
mod postgres_front;
mod support;
#[path = "support/test_ca.rs"]
mod test_ca;

use std::time::Duration;

use firstline_config::{DatabaseSettings, DatabaseUrl};
use postgres_front::PostgresFront;
use support::round_app::{RoundApp, test_settings};

const CRASHLOOP: &str = "crashloop-config-exit-78";

fn settings(url: String) -> DatabaseSettings {
    DatabaseSettings {
        url: DatabaseUrl::new(url),
        max_connections: 2,
        connect_timeout_secs: 10,
    }
}

fn upstream(db: &firstline_testkit::TestDb) -> String {
    db.url.host_port()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_is_reached_over_verified_tls() {
    let db = firstline_testkit::test_db().await;
    let front = PostgresFront::start(&upstream(&db), false).await;
    let url = front.url(
        &db.url,
        &format!(
            "sslmode=verify-full&sslrootcert={}",
            front.ca_file.display()
        ),
    );

    let pool = firstline_store::connect(&settings(url.clone()))
        .await
        .expect("connects over TLS");
    firstline_store::migrate(&pool, &DatabaseUrl::new(url.clone()))
        .await
        .expect("migrations run over TLS");
    let vector: String =
        sqlx::query_scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            .fetch_one(&pool)
            .await
            .expect("a query over TLS");
    assert!(!vector.is_empty());
    pool.close().await;
    assert!(front.tls_sessions() >= 1, "the pool's connections were TLS");
    assert_eq!(front.plaintext_refused(), 0);

    // The binary, as the migration Job runs it.
    let sessions = front.tls_sessions();
    let migrate = tokio::process::Command::new(env!("CARGO_BIN_EXE_firstline"))
        .arg("migrate")
        .env("FIRSTLINE_DATABASE__URL", &url)
        .env(
            "FIRSTLINE_DEV__TOOLS_DIR",
            firstline_testkit::workspace_root().join(".tools"),
        )
        .output()
        .await
        .expect("firstline migrate runs");
    assert!(
        migrate.status.success(),
        "{}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    assert!(
        front.tls_sessions() > sessions,
        "firstline migrate used TLS"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_runs_a_round_with_its_database_behind_tls() {
    let mut app = RoundApp::spawn(CRASHLOOP, test_settings()).await;
    let front = PostgresFront::start(&app.db.url.host_port(), false).await;
    // The worker process (not the in-process bot) gets the TLS URL.
    app.settings.database.url = DatabaseUrl::new(front.url(
        &app.db.url,
        &format!(
            "sslmode=verify-full&sslrootcert={}",
            front.ca_file.display()
        ),
    ));
    app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    let rounds = app.wait_rounds(&alert, 1, Duration::from_secs(120)).await;
    assert!(rounds[0].grounded, "{rounds:?}");
    assert!(rounds[0].posted_ts.is_some(), "{rounds:?}");
    assert!(
        front.tls_sessions() >= 1,
        "the worker's connections were TLS"
    );
    assert_eq!(front.plaintext_refused(), 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_certificate_is_presented_when_the_server_requires_one() {
    let db = firstline_testkit::test_db().await;
    let front = PostgresFront::start(&upstream(&db), true).await;
    let with_certificate = front.url(
        &db.url,
        &format!(
            "sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
            front.ca_file.display(),
            front.client.cert_file.display(),
            front.client.key_file.display()
        ),
    );
    let pool = firstline_store::connect(&settings(with_certificate))
        .await
        .expect("the client certificate is accepted");
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&pool)
        .await
        .expect("a query");
    assert_eq!(one, 1);
    pool.close().await;

    let refused_before = front.handshakes_refused();
    let without = front.url(
        &db.url,
        &format!(
            "sslmode=verify-full&sslrootcert={}",
            front.ca_file.display()
        ),
    );
    let error = firstline_store::connect(&settings(without))
        .await
        .expect_err("no client certificate");
    let text = error.to_string();
    eprintln!("no client certificate: {text}");
    assert!(
        text.starts_with(&format!("TLS to the database at {}", front.host_port)),
        "{text}"
    );
    assert!(
        text.contains("sslcert"),
        "the hint names the parameter: {text}"
    );
    assert!(
        front.handshakes_refused() > refused_before,
        "the front refused the handshake"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_tls_only_server_refuses_is_one_clear_line() {
    let db = firstline_testkit::test_db().await;
    let front = PostgresFront::start(&upstream(&db), false).await;
    let password = "firstline";
    assert!(
        db.url.expose().contains(&format!(":{password}@")),
        "the test database's URL carries its password"
    );
    let cases = [
        (
            "no TLS",
            "sslmode=disable".to_string(),
            &["TLS to the database", "no encryption", "sslmode"][..],
        ),
        (
            "a certificate from a CA the client does not trust",
            "sslmode=verify-full".to_string(),
            &["TLS to the database", "UnknownIssuer", "sslrootcert"][..],
        ),
        (
            "a CA file that does not exist",
            "sslmode=verify-full&sslrootcert=/nonexistent/root.crt".to_string(),
            &["sslrootcert `/nonexistent/root.crt`"][..],
        ),
    ];
    for (what, query, words) in cases {
        let error = firstline_store::connect(&settings(front.url(&db.url, &query)))
            .await
            .expect_err(what);
        let text = error.to_string();
        eprintln!("{what}: {text}");
        for word in words {
            assert!(text.contains(word), "{what}: `{word}` in: {text}");
        }
        if !query.contains("/nonexistent/") {
            assert!(
                text.contains(&front.host_port),
                "{what}: names the server: {text}"
            );
        }
        assert!(
            !text.contains(&format!(":{password}@")),
            "{what}: the password is shown: {text}"
        );
        assert!(!text.contains('\n'), "{what}: one line: {text}");
    }
    assert!(front.plaintext_refused() >= 1);
}
