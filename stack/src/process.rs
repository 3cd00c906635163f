//! Supervised child processes: spawn, record, stop, and clean up after a crash.
//!
//! Each service runs in its own process group, so stopping it stops everything it forked. Each
//! has a pid file (`<state>/run/<name>.pid`: pid and kernel start time, so a recycled pid is never
//! mistaken for ours). If the process that started the stack was killed with `kill -9`, the
//! parent-death signal normally takes the children down; if anything survived, the next start
//! finds the pid files and stops those groups before binding ports again.

use crate::StackError;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

/// An unprivileged identity to run a child as.
#[derive(Debug, Clone, Copy)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// How to start one service.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Short name: pid file and log file are named after it.
    pub name: &'static str,
    /// The binary.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Run as this user instead of ours.
    pub run_as: Option<RunAs>,
    /// The signal that asks it to shut down cleanly.
    pub stop_signal: Signal,
    /// Where stdout and stderr go.
    pub log: PathBuf,
    /// Where the pid file goes.
    pub pid_file: PathBuf,
}

/// A running child we own.
#[derive(Debug)]
pub struct Supervised {
    name: &'static str,
    child: tokio::process::Child,
    pid: i32,
    stop_signal: Signal,
    pid_file: PathBuf,
    log: PathBuf,
}

impl Supervised {
    /// Starts the child in a new process group with a parent-death signal, and writes its pid file.
    pub fn spawn(spec: ChildSpec) -> Result<Self, StackError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log)
            .map_err(StackError::io(format!("opening {}", spec.log.display())))?;
        let log_err = log
            .try_clone()
            .map_err(StackError::io("duplicating a log handle"))?;
        let mut command = tokio::process::Command::new(&spec.program);
        command
            .args(&spec.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0)
            .kill_on_drop(true);
        if let Some(run_as) = spec.run_as {
            command.uid(run_as.uid).gid(run_as.gid);
        }
        let death_signal = spec.stop_signal;
        // SAFETY: prctl is async-signal-safe; nothing here allocates or takes locks.
        unsafe {
            command.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(death_signal).map_err(std::io::Error::from)
            });
        }
        let child = command.spawn().map_err(StackError::io(format!(
            "starting {} ({})",
            spec.name,
            spec.program.display()
        )))?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| StackError::Io {
                context: format!("{} exited before it could be recorded", spec.name),
                source: std::io::Error::other("no pid"),
            })?;
        write_pid_file(&spec.pid_file, pid)?;
        tracing::debug!(service = spec.name, pid, "started");
        Ok(Self {
            name: spec.name,
            child,
            pid,
            stop_signal: spec.stop_signal,
            pid_file: spec.pid_file,
            log: spec.log,
        })
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The service's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The exit status, if it has already exited.
    pub fn try_exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Resolves when the child exits.
    pub async fn exited(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Asks the whole group to stop, waits up to `grace`, then kills what is left.
    pub async fn stop(mut self, grace: Duration) {
        let group = Pid::from_raw(self.pid);
        let _ = killpg(group, self.stop_signal);
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!(service = self.name, "did not stop in time; killing it");
            let _ = killpg(group, Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
        // Anything the service forked that outlived it.
        let _ = killpg(group, Signal::SIGKILL);
        let _ = std::fs::remove_file(&self.pid_file);
        tracing::debug!(service = self.name, "stopped");
    }
}

fn write_pid_file(path: &Path, pid: i32) -> Result<(), StackError> {
    let start = start_time(pid).unwrap_or(0);
    std::fs::write(path, format!("{pid} {start}\n"))
        .map_err(StackError::io(format!("writing {}", path.display())))
}

/// A process recorded in a pid file, if it is still the same process.
pub fn live_process_in(pid_file: &Path) -> Option<i32> {
    let contents = std::fs::read_to_string(pid_file).ok()?;
    let mut fields = contents.split_whitespace();
    let pid: i32 = fields.next()?.parse().ok()?;
    let recorded_start: u64 = fields.next()?.parse().ok()?;
    (pid > 0 && start_time(pid) == Some(recorded_start)).then_some(pid)
}

/// The kernel's start time of `pid` (clock ticks since boot), field 22 of `/proc/<pid>/stat`.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses; fields after it don't.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Stops the process group recorded in `pid_file` if it is still alive (left by a run that was
/// killed), then removes the file. Returns the pid that was stopped.
pub async fn reap_stale(pid_file: &Path, signal: Signal, grace: Duration) -> Option<i32> {
    let pid = live_process_in(pid_file);
    if let Some(pid) = pid {
        tracing::warn!(pid_file = %pid_file.display(), pid, "stopping a service left by an earlier run");
        let group = Pid::from_raw(pid);
        let _ = killpg(group, signal);
        let deadline = tokio::time::Instant::now() + grace;
        while kill(Pid::from_raw(pid), None).is_ok() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = killpg(group, Signal::SIGKILL);
    }
    let _ = std::fs::remove_file(pid_file);
    pid
}

/// Exclusive ownership of a state directory by one running process: an advisory `flock` on
/// its pid file (so two starts can never both win), and the pid inside for people and `doctor`.
#[derive(Debug)]
pub struct InstanceLock {
    path: PathBuf,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl InstanceLock {
    /// Takes the lock, or names the live process that holds it. The kernel drops a dead
    /// holder's lock, so a pid file left by a killed process is simply taken over.
    pub fn acquire(path: PathBuf, state_dir: &Path) -> Result<Self, StackError> {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(StackError::io(format!("opening {}", path.display())))?;
        let mut lock =
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                Err((_, _)) => {
                    return Err(StackError::AlreadyRunning {
                        pid: live_process_in(&path).unwrap_or(0),
                        state_dir: state_dir.to_path_buf(),
                    });
                }
            };
        let pid = std::process::id() as i32;
        let record = format!("{pid} {}\n", start_time(pid).unwrap_or(0));
        lock.set_len(0)
            .and_then(|()| lock.write_all(record.as_bytes()))
            .map_err(StackError::io(format!("writing {}", path.display())))?;
        Ok(Self { path, _lock: lock })
    }
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The last `lines` lines of a log file, for error messages.
pub fn log_tail(log: &Path, lines: usize) -> String {
    let contents = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = contents.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

impl Supervised {
    /// Polls `probe` until it succeeds, the child exits, or `timeout` passes.
    pub async fn wait_ready<F, Fut>(
        &mut self,
        timeout: Duration,
        mut probe: F,
    ) -> Result<(), StackError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exited() {
                return Err(StackError::NotReady {
                    service: self.name,
                    reason: format!("exited with {status}: {}", log_tail(&self.log, 5)),
                    log: self.log.clone(),
                });
            }
            let last_error = match probe().await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(StackError::NotReady {
                    service: self.name,
                    reason: format!("not answering after {} s: {last_error}", timeout.as_secs()),
                    log: self.log.clone(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_start_time_is_readable_and_matches_a_pid_file() {
        let dir = std::env::temp_dir().join(format!("fl-pid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("self.pid");
        write_pid_file(&file, std::process::id() as i32).unwrap();
        assert_eq!(live_process_in(&file), Some(std::process::id() as i32));
        // A recycled pid has another start time: not ours.
        std::fs::write(&file, format!("{} 1\n", std::process::id())).unwrap();
        assert_eq!(live_process_in(&file), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
