//! Firstline's PostgreSQL store: the source of truth (ARCHITECTURE.md, invariant 1).
//!
//! This crate owns connecting to Postgres and the schema. The SQL lives in `/migrations` at the
//! workspace root and is embedded into the binary at compile time, so `firstline migrate` can
//! bring any reachable database (production included) to the current schema.
//!
//! Typed repositories cover the tables more than one crate touches: [`threads`], [`rounds`],
//! [`feedback`], [`incidents`], [`actions`], [`groups`]. A table one crate owns (messages and the outbox: the bot's ingest; evidence,
//! claims, checkpoints: the worker's activities; `tool_cache` and `audit`: the tool layer) keeps
//! its SQL with that crate, next to the transaction it belongs to.

pub mod actions;
pub mod embeddings;
pub mod feedback;
pub mod groups;
pub mod incidents;
pub mod rounds;
pub mod threads;

use firstline_config::{DatabaseSettings, DatabaseUrl};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection};
use std::str::FromStr;
use std::time::Duration;

pub use sqlx::PgPool;

/// The migrations under `/migrations`, embedded.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// What can go wrong talking to the store. Each message names the problem and the fix.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL does not parse.
    #[error("invalid database URL {url}: {source} (check FIRSTLINE_DATABASE__URL)")]
    InvalidUrl {
        /// The URL, password redacted.
        url: String,
        /// Why it does not parse.
        source: sqlx::Error,
    },
    /// Nothing answered, or it refused us.
    #[error(
        "cannot reach the database at {host_port}: {reason} (is PostgreSQL running? check FIRSTLINE_DATABASE__URL)"
    )]
    Unreachable {
        /// `host:port` we tried.
        host_port: String,
        /// The driver's reason, on one line.
        reason: String,
    },
    /// TLS failed: the server wants it and the URL does not ask for it, or a certificate was
    /// refused on either side.
    #[error(
        "TLS to the database at {host_port} failed: {reason} (check sslmode, sslrootcert, sslcert and sslkey in FIRSTLINE_DATABASE__URL)"
    )]
    Tls {
        /// `host:port` we tried.
        host_port: String,
        /// The driver's or the server's reason, on one line.
        reason: String,
    },
    /// A certificate or key file the URL names cannot be read.
    #[error("database.url {parameter} `{path}`: {source} (check FIRSTLINE_DATABASE__URL)")]
    TlsFile {
        /// `sslrootcert`, `sslcert` or `sslkey`.
        parameter: String,
        /// The file.
        path: String,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The server answered but refused the connection.
    #[error(
        "the database at {host_port} refused the connection: {reason} (check the user, password and database name in FIRSTLINE_DATABASE__URL)"
    )]
    Refused {
        /// `host:port` we tried.
        host_port: String,
        /// The server's reason.
        reason: String,
    },
    /// The server has no pgvector extension available to install.
    #[error(
        "the database at {host_port} has no pgvector extension: install pgvector (https://github.com/pgvector/pgvector) on that server, or use `firstline dev`, which ships it"
    )]
    PgvectorMissing {
        /// `host:port` of the server.
        host_port: String,
    },
    /// A migration failed to apply.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Any other database error.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

fn connect_options(url: &DatabaseUrl) -> Result<PgConnectOptions, StoreError> {
    check_tls_files(url.expose())?;
    PgConnectOptions::from_str(url.expose())
        .map(|options| options.disable_statement_logging())
        .map_err(|source| StoreError::InvalidUrl {
            url: url.redacted(),
            source,
        })
}

/// The driver reads the files `sslrootcert`, `sslcert` and `sslkey` name only while connecting,
/// and then reports a missing one without its name; read them first, so the error names them.
/// The query is decoded as the driver decodes it (`url`'s `query_pairs`).
fn check_tls_files(url: &str) -> Result<(), StoreError> {
    let Ok(parsed) = url::Url::parse(url) else {
        // The driver's own parse names what is wrong with the URL.
        return Ok(());
    };
    for (parameter, path) in parsed.query_pairs() {
        let is_file = matches!(
            parameter.as_ref(),
            "sslrootcert"
                | "ssl-root-cert"
                | "ssl-ca"
                | "sslcert"
                | "ssl-cert"
                | "sslkey"
                | "ssl-key"
        );
        if !is_file {
            continue;
        }
        if let Err(source) = std::fs::File::open(path.as_ref()) {
            return Err(StoreError::TlsFile {
                parameter: parameter.into_owned(),
                path: path.into_owned(),
                source,
            });
        }
    }
    Ok(())
}

/// A failed connection: the server refused us (wrong password, no such database), TLS failed,
/// or nothing answered. Each needs a different fix, so each is its own error.
fn unreachable(url: &DatabaseUrl, error: sqlx::Error) -> StoreError {
    let host_port = url.host_port();
    match &error {
        // pg_hba.conf's answer to a client that did not ask for TLS where only TLS is allowed.
        sqlx::Error::Database(refusal) if refusal.message().contains("no encryption") => {
            StoreError::Tls {
                host_port,
                reason: refusal.message().replace('\n', " "),
            }
        }
        sqlx::Error::Database(refusal) => StoreError::Refused {
            host_port,
            reason: refusal.message().replace('\n', " "),
        },
        _ => {
            let reason = error.to_string().replace('\n', " ");
            // rustls' errors reach the driver as I/O errors on the TLS stream.
            let tls = matches!(error, sqlx::Error::Tls(_))
                || [
                    "certificate",
                    "fatal alert",
                    "UnknownIssuer",
                    "close_notify",
                ]
                .iter()
                .any(|sign| reason.contains(sign));
            if tls {
                StoreError::Tls { host_port, reason }
            } else {
                StoreError::Unreachable { host_port, reason }
            }
        }
    }
}

/// Opens a pool and proves it works with one round trip, within the connect timeout.
///
/// The pool does not ping a connection before handing it out (sqlx's default does): that is one
/// more round trip per query, and on the ingest path the ping was 8 % of the bot's CPU in
/// `bench/ingest` besides the server's share. A connection the server dropped fails its next
/// query with an I/O error and is discarded; every caller already treats a database error as
/// retryable (ingest answers 503 and Slack retries, relays back off, activities retry).
pub async fn connect(settings: &DatabaseSettings) -> Result<PgPool, StoreError> {
    let timeout = Duration::from_secs(settings.connect_timeout_secs);
    let pool = PgPoolOptions::new()
        .max_connections(settings.max_connections)
        .acquire_timeout(timeout)
        .test_before_acquire(false)
        .connect_with(connect_options(&settings.url)?)
        .await
        .map_err(|e| unreachable(&settings.url, e))?;
    Ok(pool)
}

/// One connection, for administrative work (creating databases) and readiness checks.
pub async fn connect_one(url: &DatabaseUrl, timeout: Duration) -> Result<PgConnection, StoreError> {
    let options = connect_options(url)?;
    match tokio::time::timeout(timeout, PgConnection::connect_with(&options)).await {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(e)) => Err(unreachable(url, e)),
        Err(_) => Err(StoreError::Unreachable {
            host_port: url.host_port(),
            reason: format!("no answer within {} s", timeout.as_secs()),
        }),
    }
}

/// Applies every pending migration, after checking that pgvector can be installed so the
/// failure is a clear sentence rather than an SQL error halfway through.
pub async fn migrate(pool: &PgPool, url: &DatabaseUrl) -> Result<(), StoreError> {
    let available: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
    )
    .fetch_one(pool)
    .await?;
    if !available {
        return Err(StoreError::PgvectorMissing {
            host_port: url.host_port(),
        });
    }
    MIGRATOR.run(pool).await?;
    tracing::info!(
        migrations = MIGRATOR.iter().count(),
        database = %url,
        "schema up to date"
    );
    Ok(())
}

/// What a server is and whether it can hold Firstline's schema.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// `PostgreSQL 18.6 …`, shortened to the first two words.
    pub version: String,
    /// pgvector can be installed.
    pub pgvector_available: bool,
    /// pgvector's installed version in this database, if installed.
    pub pgvector_installed: Option<String>,
}

/// Asks the server what it is.
pub async fn describe_server(connection: &mut PgConnection) -> Result<ServerInfo, StoreError> {
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(&mut *connection)
        .await?;
    let (available, installed): (bool, Option<String>) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
                (SELECT extversion FROM pg_extension WHERE extname = 'vector')",
    )
    .fetch_one(&mut *connection)
    .await?;
    Ok(ServerInfo {
        version: version
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" "),
        pgvector_available: available,
        pgvector_installed: installed,
    })
}

/// How many migrations the database has applied successfully.
pub async fn applied_migrations(pool: &PgPool) -> Result<i64, StoreError> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
            .fetch_one(pool)
            .await?,
    )
}

/// Creates database `name` on the server behind `admin_url` unless it exists. `template`, when
/// given, is copied (tests use a migrated template so each gets a fresh schema in milliseconds).
pub async fn ensure_database(
    admin_url: &DatabaseUrl,
    name: &str,
    template: Option<&str>,
    timeout: Duration,
) -> Result<(), StoreError> {
    let mut admin = connect_one(admin_url, timeout).await?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(name)
            .fetch_one(&mut admin)
            .await?;
    if !exists {
        let mut statement = format!("CREATE DATABASE {}", quote_identifier(name));
        if let Some(template) = template {
            statement.push_str(&format!(" TEMPLATE {}", quote_identifier(template)));
        }
        sqlx::raw_sql(&statement).execute(&mut admin).await?;
    }
    admin.close().await?;
    Ok(())
}

/// `url` with its database name replaced, e.g. to go from the admin database to a test database.
pub fn with_database(url: &DatabaseUrl, database: &str) -> DatabaseUrl {
    let raw = url.expose();
    let scheme_end = raw.find("://").map_or(0, |i| i + 3);
    let (base, query) = match raw.find('?') {
        Some(q) => (&raw[..q], &raw[q..]),
        None => (raw, ""),
    };
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    DatabaseUrl::new(format!("{base}/{database}{query}"))
}

/// Double-quotes an SQL identifier.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_database_swaps_only_the_database_name() {
        let url = DatabaseUrl::new("postgres://u:p@h:5/admin?sslmode=disable");
        assert_eq!(
            with_database(&url, "t1").expose(),
            "postgres://u:p@h:5/t1?sslmode=disable"
        );
        let bare = DatabaseUrl::new("postgres://u:p@h:5");
        assert_eq!(with_database(&bare, "t2").expose(), "postgres://u:p@h:5/t2");
    }

    #[test]
    fn tls_files_the_url_names_must_be_readable_and_are_named_when_not() {
        let dir = std::env::temp_dir();
        let present = dir.join(format!("firstline-store-root-{}.crt", std::process::id()));
        std::fs::write(&present, "x").expect("write");
        let escaped = present.display().to_string().replace('/', "%2F");
        check_tls_files(&format!(
            "postgres://u:p@h:5/db?sslmode=verify-full&sslrootcert={escaped}"
        ))
        .expect("an escaped path to a file that exists");
        let error = check_tls_files(
            "postgres://u:p@h:5/db?sslmode=verify-full&sslcert=/nonexistent/client.crt",
        )
        .expect_err("missing");
        let text = error.to_string();
        assert!(
            text.starts_with("database.url sslcert `/nonexistent/client.crt`"),
            "{text}"
        );
        check_tls_files("postgres://u:p@h:5/db").expect("no TLS files");
        let _ = std::fs::remove_file(present);
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_identifier(r#"a"b"#), r#""a""b""#);
    }
}
