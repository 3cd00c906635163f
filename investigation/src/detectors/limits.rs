//! A process at a limit of its own: it cannot take more connections, open more files or start
//! more threads, whatever its dependencies do — nginx's `worker_connections`, the open-files
//! limit (`EMFILE`, "Too many open files"), a thread pool or the threads the JVM may start.
//! Read from the process's own log; such lines are often the quiet ones beside louder, routine
//! errors.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ProcessLimit`] | cause | as any log line (`logscan.rs`): a crash it ends, or repeated under a service-level alert |
//!
//! What explains what: the limit explains its own pod's crashes and failing probes; for a
//! service-level alert it is why requests fail or wait (the alert's symptom directly).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::logscan::{LogScan, repeats};
use super::text::quote_deciding;
use super::{Finding, KindSpec, ObjectKind, Payload, Round, Scene, Subject, cite};

/// Which of its own limits a process reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Connections per worker (nginx's `worker_connections`).
    Connections,
    /// Open file descriptors (every socket is one): `EMFILE`.
    OpenFiles,
    /// Threads: a full request-thread pool, or no more native threads.
    Threads,
}

impl Limit {
    fn words(self) -> &'static str {
        match self {
            Limit::Connections => "its connections per worker",
            Limit::OpenFiles => "its open files (every socket is one)",
            Limit::Threads => "its threads",
        }
    }

    fn step(self) -> &'static str {
        match self {
            Limit::Connections => {
                "raise the per-worker connection limit (nginx: `worker_connections`, with \
                 `worker_rlimit_nofile` and `worker_processes`) or free slots sooner (a shorter \
                 `keepalive_timeout`); add replicas meanwhile"
            }
            Limit::OpenFiles => {
                "raise the open-files limit of the container's process (its `nofile` ulimit or \
                 the runtime's default) or find what holds descriptors open (a connection or \
                 file leak: `ls /proc/1/fd | wc -l` over time)"
            }
            Limit::Threads => {
                "find what keeps the threads busy (a slow dependency, blocking calls: a thread \
                 dump shows it) before raising the pool size; native threads are bounded by the \
                 container's memory and its pids limit"
            }
        }
    }
}

/// Each limit in the words of the process that reached it.
static LIMITS: LazyLock<Vec<(Limit, Regex)>> = LazyLock::new(|| {
    let limits = [
        (
            Limit::Connections,
            r"(?i)\bworker_connections are not enough\b",
        ),
        (
            Limit::OpenFiles,
            r"(?i)\btoo many open files\b|\bEMFILE\b|\baccept4?\(\) failed \(24:",
        ),
        (
            Limit::Threads,
            r"(?i)\bunable to create (?:new )?native thread\b|\bAll threads \(\d+\) are currently busy\b|\bthread pool (?:is )?(?:exhausted|full)\b",
        ),
    ];
    limits
        .into_iter()
        .filter_map(|(limit, pattern)| Regex::new(pattern).ok().map(|re| (limit, re)))
        .collect()
});

/// A process at one of its own limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessLimit {
    pub pod: Option<String>,
    pub limit: Limit,
    /// Lines of this log that show it.
    pub count: usize,
    /// The last of them, quoted.
    pub says: String,
}

impl Payload for ProcessLimit {
    const SPEC: KindSpec = KindSpec::read_from_log("process-limit");

    fn example() -> Self {
        Self {
            pod: Some("storefront-proxy-6b9d7c5f48-qz4lm".into()),
            limit: Limit::Connections,
            count: 6,
            says: "1024 worker_connections are not enough".into(),
        }
    }

    fn title(&self) -> String {
        format!(
            "The process is at a limit of its own ({}): `{}`",
            self.limit.words(),
            self.says
        )
    }

    fn detail(&self) -> String {
        let times = if self.count == 1 {
            "once".to_string()
        } else {
            format!("{} times", self.count)
        };
        format!(
            "The log{} shows the process refusing or delaying work at {} ({times}): the limit \
             is its own configuration, not a dependency's state.",
            in_pod(self.pod.as_deref()),
            self.limit.words()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.limit == other.limit
    }

    fn merge_from(&mut self, other: &Self) {
        self.count += other.count;
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "The process{} is at {}: {}.",
            in_pod(self.pod.as_deref()),
            self.limit.words(),
            self.limit.step()
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        pod_failure_explains(self.pod.as_deref(), effect)
    }
}

fn limit_in(line: &str) -> Option<(Limit, &'static Regex)> {
    LIMITS
        .iter()
        .find(|(_, re)| re.is_match(line))
        .map(|(limit, re)| (*limit, re))
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let class_repeats = repeats(round.evidence, |l| limit_in(l).is_some());
    let mut findings = Vec::new();
    for scan in LogScan::all(round, false) {
        // Per limit: count, last line index, last line, the pattern that decided it.
        let mut seen: Vec<(Limit, usize, usize, &str, &'static Regex)> = Vec::new();
        for &(index, line) in &scan.lines {
            let Some((limit, re)) = limit_in(line) else {
                continue;
            };
            match seen.iter_mut().find(|(l, ..)| *l == limit) {
                Some(entry) => {
                    entry.1 += 1;
                    entry.2 = index;
                    entry.3 = line;
                }
                None => seen.push((limit, 1, index, line, re)),
            }
        }
        for (limit, count, index, line, re) in seen {
            let says = quote_deciding(line, re);
            let (verified, confidence) = scan.class_strength(index, class_repeats);
            findings.push(
                Finding::new(
                    ProcessLimit {
                        pod: scan.pod.clone(),
                        limit,
                        count,
                        says: says.clone(),
                    },
                    confidence,
                    verified,
                )
                .citing(vec![cite(scan.evidence, says)]),
            );
        }
    }
    findings
}

#[cfg(test)]
mod tests;
