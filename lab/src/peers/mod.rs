//! Real peers in the loop: a scenario served through the *real* servers Firstline
//! runs against in production, instead of the lab MCP server.
//!
//! - [`kube_api`]: a small fake Kubernetes API server serving the scenario's objects and logs,
//!   queried by the real `kubernetes-mcp-server` (npm 0.0.67; its Go binary run directly, with
//!   `--read-only --list-output yaml`) — [`start_kubernetes_mcp`].
//! - [`prometheus`]: the real Prometheus (Debian's 2.42) with the scenario's metric series
//!   backfilled by `promtool tsdb create-blocks-from openmetrics`, queried through the real
//!   `prometheus-mcp-server` (PyPI 1.6.2) — [`start_prometheus`], [`start_prometheus_mcp`].
//!
//! `scripts/setup` installs all of them; [`PeerTools::locate`] finds them and says to run it
//! when one is missing. Every child process is started in its own process group and killed
//! (the whole group) when its [`Peer`] is dropped; every wait is bounded.

pub mod kube_api;
pub mod prometheus;

use std::ffi::OsStr;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use kube_api::{KubeApiHandle, serve_kube_api};
pub use prometheus::{PrometheusPeer, openmetrics, start_prometheus, start_prometheus_mcp};

/// Why a real peer could not be started.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PeerError(pub String);

/// The real servers' executables.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerTools {
    /// The Go binary shipped inside the npm package (run directly, not through node).
    pub kubernetes_mcp_server: PathBuf,
    pub prometheus: PathBuf,
    pub promtool: PathBuf,
    /// The console script in the tools virtualenv.
    pub prometheus_mcp_server: PathBuf,
}

/// Where `scripts/setup` puts the npm package's Go binary for this platform, relative to the
/// repository root (npm installs only the matching `kubernetes-mcp-server-<os>-<arch>` package).
pub fn kubernetes_mcp_server_bin() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let platform = format!("{}-{arch}", std::env::consts::OS);
    format!(
        ".tools/npm/node_modules/kubernetes-mcp-server-{platform}/bin/kubernetes-mcp-server-{platform}"
    )
}
/// Where `scripts/setup` puts prometheus-mcp-server, relative to the repository root.
pub const PROMETHEUS_MCP_SERVER_BIN: &str = ".tools/venv/bin/prometheus-mcp-server";

fn on_path(path_var: Option<&OsStr>, name: &str) -> Option<PathBuf> {
    path_var.and_then(|paths| {
        std::env::split_paths(paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

impl PeerTools {
    /// Finds the executables: `.tools/` under `repo_root` (where `scripts/setup` installs the
    /// MCP servers), then `PATH` (Debian's `prometheus` and `promtool`). The error names every
    /// missing one and says to run `scripts/setup`.
    pub fn locate(repo_root: &Path) -> Result<Self, PeerError> {
        Self::locate_with(repo_root, std::env::var_os("PATH").as_deref())
    }

    /// [`Self::locate`] with an explicit `PATH` value.
    pub fn locate_with(repo_root: &Path, path_var: Option<&OsStr>) -> Result<Self, PeerError> {
        let mut missing = Vec::new();
        let mut find = |what: &str, local: Option<&str>, name: &str| -> PathBuf {
            let local = local.map(|rel| repo_root.join(rel));
            if let Some(found) = local
                .clone()
                .filter(|p| p.is_file())
                .or_else(|| on_path(path_var, name))
            {
                return found;
            }
            missing.push(match local {
                Some(p) => format!("{what} (not at {} nor on PATH)", p.display()),
                None => format!("{what} (`{name}` not on PATH)"),
            });
            PathBuf::new()
        };
        let tools = Self {
            kubernetes_mcp_server: find(
                "kubernetes-mcp-server (npm 0.0.67)",
                Some(&kubernetes_mcp_server_bin()),
                "kubernetes-mcp-server",
            ),
            prometheus: find(
                "prometheus (Debian package `prometheus`)",
                None,
                "prometheus",
            ),
            promtool: find("promtool (Debian package `prometheus`)", None, "promtool"),
            prometheus_mcp_server: find(
                "prometheus-mcp-server (PyPI 1.6.2)",
                Some(PROMETHEUS_MCP_SERVER_BIN),
                "prometheus-mcp-server",
            ),
        };
        if missing.is_empty() {
            Ok(tools)
        } else {
            Err(PeerError(format!(
                "real peer servers are not installed: {}. Run scripts/setup (it installs them).",
                missing.join("; ")
            )))
        }
    }
}

/// A child process in its own process group, killed with its group on drop. Its stdout and
/// stderr go to a log file, quoted in start-up errors.
pub struct Peer {
    name: String,
    child: tokio::process::Child,
    log: PathBuf,
}

impl Peer {
    /// Starts `program` with `args` and `env`, logging to `log`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Self, PeerError> {
        let out = std::fs::File::create(log)
            .map_err(|e| PeerError(format!("{name}: cannot create {}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| PeerError(format!("{name}: {e}")))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .kill_on_drop(true);
        let child = cmd
            .spawn()
            .map_err(|e| PeerError(format!("{name}: cannot start {}: {e}", program.display())))?;
        Ok(Self {
            name: name.to_string(),
            child,
            log: log.to_path_buf(),
        })
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// An error if it has exited.
    fn check_running(&mut self) -> Result<(), PeerError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(PeerError(format!(
                "{} exited ({status}); its log ends:\n{}",
                self.name,
                self.log_tail()
            ))),
            Err(e) => Err(PeerError(format!("{}: {e}", self.name))),
        }
    }

    /// Waits until `GET http://addr{path}` answers 200, at most `timeout`.
    pub async fn wait_http_ok(
        &mut self,
        addr: SocketAddr,
        path: &str,
        timeout: Duration,
    ) -> Result<(), PeerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.check_running()?;
            if let Some((200, _)) = http_get(addr, path).await {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(PeerError(format!(
                    "{} did not answer GET {path} on {addr} within {timeout:?}; its log ends:\n{}",
                    self.name,
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `addr` accepts connections, at most `timeout`.
    pub async fn wait_listening(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<(), PeerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.check_running()?;
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(PeerError(format!(
                    "{} was not listening on {addr} within {timeout:?}; its log ends:\n{}",
                    self.name,
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            // The group is the child's own (process_group(0)): its children go too.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.start_kill();
    }
}

/// A real MCP server over streamable HTTP.
pub struct McpPeer {
    pub peer: Peer,
    /// `http://127.0.0.1:P/mcp`.
    pub url: String,
}

/// A free loopback port (bound, then released for the child to take).
pub fn free_port() -> Result<u16, PeerError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| PeerError(format!("no free port: {e}")))
}

/// A bounded plain-HTTP GET: the status code and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        let code = response.split_whitespace().nth(1)?.parse().ok()?;
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Some((code, body))
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
}

/// Starts the real `kubernetes-mcp-server` over streamable HTTP on a free loopback port,
/// read-only with YAML list output, against `kubeconfig`; waits (at most 30 s) until it listens.
pub async fn start_kubernetes_mcp(
    tools: &PeerTools,
    kubeconfig: &Path,
    work_dir: &Path,
) -> Result<McpPeer, PeerError> {
    let port = free_port()?;
    let args: Vec<String> = [
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--read-only",
        "--list-output",
        "yaml",
        "--port",
        &port.to_string(),
        "--bind-address",
        "127.0.0.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut peer = Peer::spawn(
        "kubernetes-mcp-server",
        &tools.kubernetes_mcp_server,
        &args,
        &[],
        &work_dir.join("kubernetes-mcp-server.log"),
    )?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    peer.wait_listening(addr, Duration::from_secs(30)).await?;
    Ok(McpPeer {
        peer,
        url: format!("http://{addr}/mcp"),
    })
}

/// The arguments to run the real `kubernetes-mcp-server` as a stdio child against `kubeconfig`.
pub fn kubernetes_mcp_stdio_args(kubeconfig: &Path) -> Vec<String> {
    vec![
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--read-only".into(),
        "--list-output".into(),
        "yaml".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tools_are_named_and_setup_is_the_remedy() {
        let empty = tempfile::tempdir().unwrap();
        let error = PeerTools::locate_with(empty.path(), Some(empty.path().as_os_str()))
            .unwrap_err()
            .to_string();
        for tool in [
            "kubernetes-mcp-server",
            "prometheus (",
            "promtool",
            "prometheus-mcp-server",
        ] {
            assert!(error.contains(tool), "{tool}: {error}");
        }
        assert!(error.contains("Run scripts/setup"), "{error}");
    }

    #[tokio::test]
    async fn a_dropped_peer_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let peer = Peer::spawn(
            "sleeper",
            Path::new("/bin/sleep"),
            &["30".to_string()],
            &[],
            &dir.path().join("sleep.log"),
        )
        .unwrap();
        let pid = nix::unistd::Pid::from_raw(peer.pid().unwrap() as i32);
        drop(peer);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // Gone (or a zombie nobody reaped yet: signal 0 then still succeeds, so read its state).
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = state
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            if matches!(state, None | Some("Z")) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{pid} still running");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
