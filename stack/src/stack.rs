//! The three services together: start in parallel, wait for all, stop in reverse.

use crate::StackError;
use crate::ports::{self, PortSetting};
use crate::postgres::{self, PostgresSpec};
use crate::process::{InstanceLock, Supervised, reap_stale};
use crate::tools::Tools;
use crate::{broker, temporal};
use firstline_config::{DatabaseUrl, DevSettings};
use nix::sys::signal::Signal;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Services in start order; stopped in reverse. The stop signal is also used for leftovers.
const SERVICES: [(&str, Signal); 3] = [
    ("postgres", Signal::SIGINT),
    ("temporal", Signal::SIGTERM),
    ("kafka", Signal::SIGTERM),
];

/// What to start, where.
#[derive(Debug, Clone)]
pub struct StackConfig {
    /// Data, logs and pid files.
    pub state_dir: PathBuf,
    /// The tools virtualenv's parent.
    pub tools_dir: PathBuf,
    /// PostgreSQL port (0 = any free port).
    pub postgres_port: u16,
    /// Temporal gRPC port (0 = any free port).
    pub temporal_port: u16,
    /// Kafka port (0 = any free port).
    pub kafka_port: u16,
    /// System user for Postgres when we are root.
    pub postgres_os_user: String,
    /// Per-service readiness deadline.
    pub ready_timeout: Duration,
    /// Keep data across restarts with crash safety (dev) or run fast and throwaway (tests:
    /// Postgres without fsync, Temporal in memory).
    pub durable: bool,
}

impl StackConfig {
    /// The stack `firstline dev` runs, from its settings.
    pub fn from_settings(dev: &DevSettings) -> Self {
        Self {
            state_dir: dev.state_dir.clone(),
            tools_dir: dev.tools_dir.clone(),
            postgres_port: dev.postgres_port,
            temporal_port: dev.temporal_port,
            kafka_port: dev.kafka_port,
            postgres_os_user: dev.postgres_os_user.clone(),
            ready_timeout: Duration::from_secs(dev.ready_timeout_secs),
            durable: dev.durable,
        }
    }

    fn run_dir(&self) -> PathBuf {
        self.state_dir.join("run")
    }

    fn pid_file(&self, service: &str) -> PathBuf {
        self.run_dir().join(format!("{service}.pid"))
    }

    fn log_file(&self, service: &str) -> PathBuf {
        self.state_dir.join("logs").join(format!("{service}.log"))
    }
}

/// Where the running services answer.
#[derive(Debug, Clone)]
pub struct Addresses {
    /// PostgreSQL port on 127.0.0.1.
    pub postgres_port: u16,
    /// Temporal gRPC port on 127.0.0.1.
    pub temporal_port: u16,
    /// Kafka port on 127.0.0.1.
    pub kafka_port: u16,
}

impl Addresses {
    /// URL of a database on the embedded server.
    pub fn database_url(&self, database: &str) -> DatabaseUrl {
        postgres::url(self.postgres_port, database)
    }

    /// Temporal's frontend as the SDK wants it.
    pub fn temporal_address(&self) -> String {
        format!("http://127.0.0.1:{}", self.temporal_port)
    }

    /// Kafka bootstrap servers.
    pub fn kafka_brokers(&self) -> String {
        format!("127.0.0.1:{}", self.kafka_port)
    }
}

/// The running stack. Stop it with [`Stack::stop`]; dropping it kills the children abruptly.
#[derive(Debug)]
pub struct Stack {
    addresses: Addresses,
    children: Vec<Supervised>,
    _lock: InstanceLock,
}

impl Stack {
    /// Starts PostgreSQL, Temporal and the broker and waits until each answers.
    pub async fn start(config: StackConfig) -> Result<Self, StackError> {
        let tools = Tools::locate(&config.tools_dir)?;
        for dir in [config.run_dir(), config.state_dir.join("logs")] {
            std::fs::create_dir_all(&dir)
                .map_err(StackError::io(format!("creating {}", dir.display())))?;
        }
        let lock = InstanceLock::acquire(config.run_dir().join("stack.pid"), &config.state_dir)?;
        // Leftovers of a run that was killed hold our ports: stop them before checking ports.
        for (service, signal) in SERVICES {
            reap_stale(&config.pid_file(service), signal, Duration::from_secs(5)).await;
        }
        let addresses = Addresses {
            postgres_port: ports::resolve(PortSetting {
                port: config.postgres_port,
                purpose: "PostgreSQL",
                setting: "dev.postgres_port",
            })?,
            temporal_port: ports::resolve(PortSetting {
                port: config.temporal_port,
                purpose: "Temporal",
                setting: "dev.temporal_port",
            })?,
            kafka_port: ports::resolve(PortSetting {
                port: config.kafka_port,
                purpose: "Kafka",
                setting: "dev.kafka_port",
            })?,
        };

        let mut children = Vec::with_capacity(SERVICES.len());
        let started = Self::spawn_all(&config, &tools, &addresses, &mut children).await;
        let ready = match started {
            Ok(()) => Self::wait_all(&config, &tools, &addresses, &mut children).await,
            Err(e) => Err(e),
        };
        let stack = Self {
            addresses,
            children,
            _lock: lock,
        };
        match ready {
            Ok(()) => Ok(stack),
            Err(error) => {
                stack.stop(Duration::from_secs(5)).await;
                Err(error)
            }
        }
    }

    async fn spawn_all(
        config: &StackConfig,
        tools: &Tools,
        addresses: &Addresses,
        children: &mut Vec<Supervised>,
    ) -> Result<(), StackError> {
        // Temporal and the broker start while initdb runs.
        children.push(temporal::start(
            tools,
            addresses.temporal_port,
            config
                .durable
                .then(|| config.state_dir.join("temporal.db"))
                .as_deref(),
            config.log_file("temporal"),
            config.pid_file("temporal"),
        )?);
        let kafka_data = config.state_dir.join("kafka");
        std::fs::create_dir_all(&kafka_data)
            .map_err(StackError::io(format!("creating {}", kafka_data.display())))?;
        children.push(broker::start(
            tools,
            addresses.kafka_port,
            &kafka_data,
            config.log_file("kafka"),
            config.pid_file("kafka"),
        )?);
        let spec = PostgresSpec {
            data_dir: config.state_dir.join("pg"),
            port: addresses.postgres_port,
            os_user: config.postgres_os_user.clone(),
            durable: config.durable,
        };
        children.push(
            postgres::start(
                tools,
                &spec,
                config.log_file("postgres"),
                config.pid_file("postgres"),
            )
            .await?,
        );
        Ok(())
    }

    async fn wait_all(
        config: &StackConfig,
        tools: &Tools,
        addresses: &Addresses,
        children: &mut [Supervised],
    ) -> Result<(), StackError> {
        let timeout = config.ready_timeout;
        let [temporal_child, kafka_child, postgres_child] = children else {
            unreachable!("spawn_all starts exactly three services");
        };
        let (t, k, p) = tokio::join!(
            temporal::wait_ready(temporal_child, tools, addresses.temporal_port, timeout),
            broker::wait_ready(kafka_child, addresses.kafka_port, timeout),
            postgres::wait_ready(postgres_child, addresses.postgres_port, timeout),
        );
        p.and(t).and(k)
    }

    /// Where the services answer.
    pub fn addresses(&self) -> &Addresses {
        &self.addresses
    }

    /// `(service, pid)` of each running service; each pid is also its process group.
    pub fn pids(&self) -> Vec<(&'static str, i32)> {
        self.children.iter().map(|c| (c.name(), c.pid())).collect()
    }

    /// Resolves when any service exits on its own, naming it.
    pub async fn exited(&mut self) -> (&'static str, std::io::Result<ExitStatus>) {
        let waits = self.children.iter_mut().map(|child| {
            let name = child.name();
            Box::pin(async move { (name, child.exited().await) })
        });
        futures::future::select_all(waits).await.0
    }

    /// Stops every service (reverse start order), each within `grace`.
    pub async fn stop(self, grace: Duration) {
        for child in self.children.into_iter().rev() {
            child.stop(grace).await;
        }
    }
}

/// The pid of the process running a stack on `state_dir`, if one is alive.
pub fn running(state_dir: &std::path::Path) -> Option<i32> {
    crate::process::live_process_in(&state_dir.join("run").join("stack.pid"))
}
