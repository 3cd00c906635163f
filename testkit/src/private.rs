//! Private servers for the tests that stop a dependency (the shared stack is never stopped).
//! A [`PrivateServer`] owns a temp directory and a free port; each `start_*` starts its server
//! there and waits until it is ready, and starting it again after a stop reuses the data, so a
//! test can stop a server and bring the same one back.

use firstline_config::Settings;
use firstline_stack::postgres::PostgresSpec;
use firstline_stack::process::Supervised;
use firstline_stack::tools::Tools;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

/// Where a server starts to be ready.
const READY: Duration = Duration::from_secs(60);

/// A directory and a port for one private server.
pub struct PrivateServer {
    /// Data, log and pid files.
    pub dir: tempfile::TempDir,
    /// Its port on 127.0.0.1.
    pub port: u16,
    tools: Tools,
}

impl PrivateServer {
    /// A fresh directory and a free port; `purpose` names the port in errors.
    pub fn new(purpose: &'static str) -> Self {
        let tools =
            Tools::locate(&crate::workspace_root().join(".tools")).expect("tools (scripts/setup)");
        let dir = tempfile::tempdir().expect("temp dir");
        // Postgres runs as an unprivileged user when we are root; it must enter the directory.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("opening the temp dir");
        let port = firstline_stack::ports::resolve(firstline_stack::ports::PortSetting {
            port: 0,
            purpose,
            setting: "-",
        })
        .expect("a free port");
        Self { dir, port, tools }
    }

    /// PostgreSQL with fsync on (initdb on the first start).
    pub async fn start_postgres(&self) -> Supervised {
        let spec = PostgresSpec {
            data_dir: self.dir.path().join("pg"),
            port: self.port,
            os_user: Settings::default().dev.postgres_os_user,
            durable: true,
        };
        let mut server = firstline_stack::postgres::start(
            &self.tools,
            &spec,
            self.dir.path().join("postgres.log"),
            self.dir.path().join("postgres.pid"),
        )
        .await
        .expect("starting the private Postgres");
        firstline_stack::postgres::wait_ready(&mut server, self.port, READY)
            .await
            .expect("private Postgres ready");
        server
    }

    /// The Temporal dev server with a database file.
    pub async fn start_temporal(&self) -> Supervised {
        let mut server = firstline_stack::temporal::start(
            &self.tools,
            self.port,
            Some(&self.dir.path().join("temporal.db")),
            self.dir.path().join("temporal.log"),
            self.dir.path().join("temporal.pid"),
        )
        .expect("starting the private Temporal dev server");
        firstline_stack::temporal::wait_ready(&mut server, &self.tools, self.port, READY)
            .await
            .expect("private Temporal ready");
        server
    }

    /// The Kafka-protocol broker.
    pub async fn start_broker(&self) -> Supervised {
        let data = self.dir.path().join("kafka");
        std::fs::create_dir_all(&data).expect("broker data dir");
        let mut server = firstline_stack::broker::start(
            &self.tools,
            self.port,
            &data,
            self.dir.path().join("kafka.log"),
            self.dir.path().join("kafka.pid"),
        )
        .expect("starting the private broker");
        firstline_stack::broker::wait_ready(&mut server, self.port, READY)
            .await
            .expect("private broker ready");
        server
    }
}
