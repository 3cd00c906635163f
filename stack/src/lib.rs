//! The embedded stack: everything Firstline needs, on one machine, as supervised child processes.
//!
//! `firstline dev` and the test harness both run PostgreSQL (with pgvector), the Temporal dev
//! server and a Kafka-protocol broker from the tools virtualenv that `scripts/setup` fills. This
//! crate starts them, proves each is ready with a real protocol round trip, and stops them.
//!
//! The parts:
//! - [`tools`] finds the binaries and says how to get them when they are missing;
//! - [`ports`] resolves configured ports (0 = any free port) and refuses occupied ones by name;
//! - [`process`] spawns a child in its own process group, records a pid file, stops the whole
//!   group, and cleans up after a previous run that was killed with `kill -9`;
//! - [`postgres`], [`temporal`], [`broker`] know one service each: how to start it and how to
//!   tell that it answers;
//! - [`Stack`] puts them together.
//!
//! Children are started with a parent-death signal, so they die with the process that started
//! them even when it is killed. Linux delivers that signal when the *thread* that spawned them
//! exits, so start the stack from a thread that lives as long as the stack (the main thread, or a
//! dedicated one), never from a short-lived blocking-pool thread.

pub mod broker;
pub mod ports;
pub mod postgres;
pub mod process;
mod stack;
pub mod temporal;
pub mod tools;

pub use stack::{Addresses, Stack, StackConfig, running};

use std::path::PathBuf;

/// Why the stack could not start or stop. Every message names the problem and the fix.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// The tools virtualenv, or a binary in it, is missing.
    #[error("{what} not found at {path}: run scripts/setup (or set {setting})")]
    ToolMissing {
        /// What was looked for.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The setting that points there.
        setting: &'static str,
    },
    /// A configured port is taken by another process.
    #[error(
        "port {port} on 127.0.0.1 is already in use ({purpose}): stop whatever holds it or set {setting} ({}) to another port",
        firstline_config::env_var(setting)
    )]
    PortInUse {
        /// The port.
        port: u16,
        /// What we wanted it for.
        purpose: &'static str,
        /// The environment variable to change.
        setting: &'static str,
    },
    /// Another `firstline dev` owns this state directory.
    #[error(
        "firstline dev is already running with state in {state_dir} (pid {pid}): stop it first, or set FIRSTLINE_DEV__STATE_DIR"
    )]
    AlreadyRunning {
        /// Its pid.
        pid: i32,
        /// The contested directory.
        state_dir: PathBuf,
    },
    /// PostgreSQL must not run as root and we are root: it needs an unprivileged user.
    #[error(
        "PostgreSQL refuses to run as root and the system user `{user}` does not exist: run scripts/setup (or `useradd --system {user}`), or set FIRSTLINE_DEV__POSTGRES_OS_USER"
    )]
    NoPostgresUser {
        /// The configured user name.
        user: String,
    },
    /// The unprivileged user cannot reach a directory it needs.
    #[error(
        "PostgreSQL runs as `{user}`, which cannot enter {dir}: run `chmod o+x {dir}`, or set FIRSTLINE_DEV__STATE_DIR / FIRSTLINE_DEV__TOOLS_DIR to paths under a world-traversable directory"
    )]
    NotTraversable {
        /// The user.
        user: String,
        /// The directory it cannot enter.
        dir: PathBuf,
    },
    /// A service did not become ready in time, or exited while starting.
    #[error("{service} did not become ready: {reason} (its log: {log})")]
    NotReady {
        /// Which service.
        service: &'static str,
        /// What we saw.
        reason: String,
        /// Where its output went.
        log: PathBuf,
    },
    /// A filesystem or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Creating the database or migrating failed.
    #[error(transparent)]
    Store(#[from] firstline_store::StoreError),
}

impl StackError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| StackError::Io { context, source }
    }
}
