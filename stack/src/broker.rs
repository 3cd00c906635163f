//! The Kafka-protocol broker for development and tests (PyPI `noida-db`, Kafka service only).
//!
//! Production runs Apache Kafka; nothing in Firstline depends on this broker beyond the Kafka
//! protocol. Ready means it answers a Kafka `ApiVersions` request without error.

use crate::StackError;
use crate::process::{ChildSpec, Supervised};
use crate::tools::Tools;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Starts the broker on 127.0.0.1:`port` with data under `data_dir` (not yet ready).
pub fn start(
    tools: &Tools,
    port: u16,
    data_dir: &Path,
    log: PathBuf,
    pid_file: PathBuf,
) -> Result<Supervised, StackError> {
    let mut args: Vec<std::ffi::OsString> = vec!["start".into(), "--data-dir".into()];
    args.push(data_dir.as_os_str().to_owned());
    args.extend([
        "--only".into(),
        "kafka".into(),
        "--host".into(),
        "127.0.0.1".into(),
    ]);
    args.extend(["--kafka-port".into(), port.to_string().into()]);
    Supervised::spawn(ChildSpec {
        name: "kafka",
        program: tools.broker.clone(),
        args,
        run_as: None,
        stop_signal: Signal::SIGTERM,
        log,
        pid_file,
    })
}

/// Polls until the broker answers `ApiVersions`.
pub async fn wait_ready(
    child: &mut Supervised,
    port: u16,
    timeout: Duration,
) -> Result<(), StackError> {
    let address = format!("127.0.0.1:{port}");
    child
        .wait_ready(timeout, || api_versions(address.clone()))
        .await
}

/// One Kafka `ApiVersions` (v0) round trip: the smallest request every broker must answer.
pub async fn api_versions(address: String) -> Result<(), String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address.as_str())
            .await
            .map_err(|e| format!("connect {address}: {e}"))?;
        const API_VERSIONS: i16 = 18;
        const CORRELATION_ID: i32 = 0x0f1e_57a1;
        let client_id = b"firstline";
        let mut request = Vec::with_capacity(32);
        request.extend_from_slice(&API_VERSIONS.to_be_bytes());
        request.extend_from_slice(&0i16.to_be_bytes()); // version 0
        request.extend_from_slice(&CORRELATION_ID.to_be_bytes());
        request.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
        request.extend_from_slice(client_id);
        let mut frame = (request.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&request);
        stream.write_all(&frame).await.map_err(|e| e.to_string())?;
        let size = stream.read_i32().await.map_err(|e| e.to_string())?;
        if !(6..=1 << 20).contains(&size) {
            return Err(format!("implausible response size {size}"));
        }
        let correlation = stream.read_i32().await.map_err(|e| e.to_string())?;
        let error_code = stream.read_i16().await.map_err(|e| e.to_string())?;
        match (correlation, error_code) {
            (CORRELATION_ID, 0) => Ok(()),
            (CORRELATION_ID, code) => Err(format!("ApiVersions error code {code}")),
            (other, _) => Err(format!("response for correlation id {other}")),
        }
    };
    tokio::time::timeout(Duration::from_secs(3), exchange)
        .await
        .unwrap_or_else(|_| Err("no ApiVersions answer within 3 s".into()))
}
