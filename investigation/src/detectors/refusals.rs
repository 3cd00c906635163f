//! A dependency that answers, and refuses the work for a reason of its own state: read-only (a
//! replica after a failover, a flood-stage disk block), out of room (Redis at `maxmemory`), unable
//! to persist (Redis's `MISCONF` after a failed snapshot, a data file it cannot extend), locked,
//! overloaded (ClickHouse's too many parts, Elasticsearch's rejected executions), not serving
//! yet (loading, in recovery, no leader), over a rate limit it enforces (HTTP 429, an
//! ingestion limit, an SDK's throttling exception), cut off by the client's own proxy (Envoy's
//! circuit breaker over its connection-pool limits), or refusing the client's credentials (HTTP
//! 401/403, a cloud API's `NOT_AUTHORIZED`, `AccessDenied`). Read from the clients' logs, in the
//! words the servers themselves answer with, one finding per dependency and state.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Refusal`] | cause | as any log line (`logscan.rs`): a crash it ends, or repeated under a service-level alert (a rate limit or a refused credential at any level the client logs it), or the wait a Job or unready pod ends its log repeating |
//!
//! What explains what: the refusal explains its clients' errors and latency (the alert's
//! symptom directly) and the crashes and failing probes of the pods that log it. It names the
//! dependency when the line does, and leads there (its Service, its pods), so the reply can say
//! why the dependency is in that state.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::lead::{
    HostName, Lead, host_name, is_source_location, service_hosts, split_endpoint, url_hosts,
};
use super::logscan::{LogScan, answer_repeats, repeats};
use super::text::quote_deciding;
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Round, Scene, Subject, Symptom, cite,
};

/// The state a dependency refuses work in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusedState {
    /// Writes refused: a replica, a read-only block, a read-only transaction.
    ReadOnly,
    /// Out of room: memory at its cap, a disk past its flood-stage watermark, a full table.
    Full,
    /// Writes refused because it cannot persist them: Redis's `MISCONF` after a failed
    /// snapshot, a server that cannot extend its data files.
    CannotPersist,
    /// Waiting on a lock another session holds; lock timeouts; deadlocks.
    Locked,
    /// More work than it takes: too many parts, rejected executions, an overloaded node.
    Overloaded,
    /// Not serving yet: loading, in recovery, starting up, no leader or master.
    NotServing,
    /// Over a rate limit or quota the dependency enforces: HTTP 429, an ingestion limit, an
    /// SDK's throttling exception.
    RateLimited,
    /// Rejected by the client's own proxy before leaving the pod: Envoy's circuit breaker over
    /// its connection-pool limits (response flag `UO`, reset reason `overflow`).
    Overflow,
    /// The client's credentials or permissions refused, as the client hears it: HTTP 401 or
    /// 403, a cloud API's `NOT_AUTHORIZED` / `PERMISSION_DENIED` / `AccessDenied`.
    Denied,
    /// Answered by the proxy in front of it with nothing healthy behind: `503 Service
    /// Unavailable`, `502 Bad Gateway`, `504 Gateway Timeout`, as the client hears them.
    Unavailable,
}

impl RefusedState {
    /// States only a client hears, as the answer to its own request (a status code, an API
    /// error): the client's log level says how it copes, not whether it was refused. The other
    /// states' words may be the server's own warning about itself.
    fn is_an_answer(self) -> bool {
        matches!(
            self,
            RefusedState::RateLimited
                | RefusedState::Denied
                | RefusedState::Overflow
                | RefusedState::Unavailable
        )
    }

    fn words(self) -> &'static str {
        match self {
            RefusedState::ReadOnly => "refuses writes (read-only)",
            RefusedState::Full => "is full and refuses writes",
            RefusedState::CannotPersist => "cannot persist to disk and refuses writes",
            RefusedState::Locked => "makes requests wait on a lock",
            RefusedState::Overloaded => "rejects work it is too loaded to take",
            RefusedState::NotServing => "is not serving (loading, recovering or leaderless)",
            RefusedState::RateLimited => "throttles the client over its rate limit",
            RefusedState::Overflow => {
                "is cut off by the client's proxy: its circuit breaker rejects calls over the \
                 connection-pool limits (overflow)"
            }
            RefusedState::Denied => "refuses the client's credentials or permissions",
            RefusedState::Unavailable => {
                "answers through the proxy in front of it with a gateway status: its backend \
                 did not serve the call"
            }
        }
    }

    fn check(self) -> &'static str {
        match self {
            RefusedState::ReadOnly => {
                "which instance is the primary now (a failover promotes another) and whether \
                 the client still writes to the old one, or what put the read-only block on"
            }
            RefusedState::Full => {
                "what filled it (its memory or disk against its limit) and free room or raise \
                 the limit; a write block lifts once usage drops"
            }
            RefusedState::CannotPersist => {
                "why its own log says the write to disk fails (its data volume full, its data \
                 directory's permissions) and free room or fix it; writes resume once a save \
                 succeeds"
            }
            RefusedState::Locked => {
                "which session holds the lock (a migration, a VACUUM FULL, a long transaction) \
                 and end it"
            }
            RefusedState::Overloaded => {
                "what loads it (merges or mutations behind, a burst of small writes) and let it \
                 catch up before raising limits"
            }
            RefusedState::NotServing => {
                "why it restarted or lost its leader, and whether it is back"
            }
            RefusedState::RateLimited => {
                "which limit the client hits (its quota, a per-tenant or per-app rate) and \
                 whether the client's volume grew; slow the client or raise the limit"
            }
            RefusedState::Overflow => {
                "which connection-pool limits the client's proxy enforces toward it (a \
                 DestinationRule's or the proxy's circuit breakers: maxConnections, \
                 http1MaxPendingRequests) against the calls in flight, and raise them or pool \
                 the calls; the rejected calls never reach the dependency"
            }
            RefusedState::Denied => {
                "which identity the client uses (its service account, key or token) and what it \
                 may do now: a rotated key, a removed role or binding, a changed key policy"
            }
            RefusedState::Unavailable => {
                "what serves it behind the proxy — in the cluster, the Service an Ingress routes \
                 it to, its endpoints and pods; outside it, its owner's status page — and why \
                 nothing healthy is there"
            }
        }
    }
}

/// The answers servers give, by the state they refuse in. Each is the server's own wording
/// (Redis, Postgres, MySQL, MongoDB, Elasticsearch/OpenSearch, ClickHouse, Kafka, Cassandra).
static STATES: LazyLock<Vec<(RefusedState, Regex)>> = LazyLock::new(|| {
    let states = [
        (
            RefusedState::ReadOnly,
            r"(?i)\bREADONLY You can't write against a read only (?:replica|slave)|cannot execute \w+ in a read-only transaction|running with the --(?:super-)?read-only option|read-only-allow-delete|index read-only|\bNotWritablePrimary\b|\bnot master and slaveOk=false",
        ),
        (
            RefusedState::Full,
            r"(?i)\bOOM command not allowed when used memory|flood[- ]stage (?:disk )?watermark|\bThe table '?\S+'? is full\b|\bquota exceeded for (?:disk|storage)|\bXMinioStorageFull\b|minimum free drive threshold|\b507 Insufficient Storage\b|\bInsufficientStorage\b",
        ),
        (
            RefusedState::CannotPersist,
            r"(?i)\bMISCONF Redis is configured to save RDB snapshots|\bcould not extend file\b.*\bNo space left on device|\bcould not write to file\b.*\bNo space left on device",
        ),
        (
            RefusedState::Locked,
            r"(?i)still waiting for \w+Lock on|canceling statement due to lock timeout|Lock wait timeout exceeded|\bdeadlock detected\b|could not obtain lock on|\block\b.{0,80}\bis held by another (?:session|process|transaction|connection|instance)\b|\bwaiting (?:for|on) (?:an? |the )?(?:[\w-]+ )?lock\b|\bcould not (?:obtain|acquire) (?:the |a )?(?:[\w-]+ ){0,2}lock\b|\bcurrently locked by\b",
        ),
        (
            RefusedState::Overloaded,
            r"(?i)\bToo many parts\b|\bTOO_MANY_PARTS\b|es_rejected_execution_exception|\bOverloadedException\b|\bTHROTTLING_QUOTA_EXCEEDED\b",
        ),
        (
            RefusedState::NotServing,
            r"(?i)\bLOADING Redis is loading the dataset|\bMASTERDOWN\b|\bCLUSTERDOWN\b|the database system is (?:starting up|in recovery mode|shutting down)|\bLEADER_NOT_AVAILABLE\b|\bNOT_LEADER_(?:FOR_PARTITION|OR_FOLLOWER)\b|master_not_discovered_exception",
        ),
        (
            RefusedState::RateLimited,
            r"(?i)\bHTTP(?: status)?[ =:]*429\b|\bcode\(429\)|\b429 Too Many Requests\b|\bToo Many Requests\b|\b(?:ingestion )?rate limit (?:exceeded|reached)\b|\bThrottlingException\b|\bTooManyRequestsException\b|\bProvisionedThroughputExceededException\b|\bRequestLimitExceeded\b",
        ),
        (
            RefusedState::Overflow,
            r#"(?i)\breset reason: overflow\b|\bupstream_reset_before_response_started\{overflow\}|\bx-envoy-overloaded\b|" 503 UO "#,
        ),
        // As the client hears it, with the reason phrase: a server's own access log of the
        // status it answered carries the code alone.
        (
            RefusedState::Unavailable,
            r"(?i)\b50[234] (?:Server Error: )?(?:Service (?:Temporarily )?Unavailable|Bad Gateway|Gateway Time-?out)\b",
        ),
        // As the client hears it: a server's own log of a stranger's failed login is not.
        (
            RefusedState::Denied,
            r"\bError 40[13]\b|\b40[13] (?:Forbidden|Unauthorized)\b|\b(?i:status(?:Code)?|HTTP(?: status)?)[ =:]*40[13]\b|\bcode\(40[13]\)|\bNOT_AUTHORIZED\b|\bPERMISSION_DENIED\b|\b\w*AccessDenied(?:Exception)?\b|\bUnrecognizedClientException\b|\bInvalidClientTokenId\b|\bExpiredTokenException\b|(?:SASL auth|SQLSTATE 28P01|PSQLException|OperationalError|connection to server|failed to connect)[^\n]{0,200}\bpassword authentication failed for user\b|\bpassword authentication failed for user\b[^\n]{0,80}\bSQLSTATE 28P01\b|\b(?:1045|SQLException)\b[^\n]{0,40}\bAccess denied for user\b|\bWRONGPASS\b|\bNOAUTH Authentication required\b",
        ),
    ];
    states
        .into_iter()
        .filter_map(|(state, pattern)| Regex::new(pattern).ok().map(|re| (state, re)))
        .collect()
});

static ENDPOINT: LazyLock<Regex> = regex!(
    r"\b((?:[A-Za-z][A-Za-z0-9-]*\.)*[A-Za-z][A-Za-z0-9-]*|\d{1,3}(?:\.\d{1,3}){3}):(\d{2,5})\b"
);

/// A dependency refusing work because of its own state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    /// The pod whose log shows it (a client's, or the dependency's own).
    pub pod: Option<String>,
    /// The container whose log it is, when the log was read per container (a sidecar's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The dependency as the line names it (`host:port`, a Service's DNS name).
    pub dependency: Option<String>,
    pub state: RefusedState,
    /// Lines of this log that show it.
    pub count: usize,
    /// The last of them, quoted.
    pub says: String,
}

impl Payload for Refusal {
    const SPEC: KindSpec = KindSpec::read_from_log("dependency-refuses");

    fn example() -> Self {
        Self {
            pod: Some("checkout-7d9f6c8b54-2lq8n".into()),
            container: None,
            dependency: Some(
                "session-redis-0.session-redis-headless.shop.svc.cluster.local:6379".into(),
            ),
            state: RefusedState::ReadOnly,
            count: 4,
            says: "READONLY You can't write against a read only replica.".into(),
        }
    }

    fn title(&self) -> String {
        let who = self
            .dependency
            .as_deref()
            .map_or("A dependency".to_string(), |d| format!("Dependency `{d}`"));
        format!("{who} {}: `{}`", self.state.words(), self.says)
    }

    fn detail(&self) -> String {
        let times = if self.count == 1 {
            "once".to_string()
        } else {
            format!("{} times", self.count)
        };
        let log = match &self.container {
            Some(container) => format!("The log of container `{container}`"),
            None => "The log".to_string(),
        };
        let why = match self.state {
            RefusedState::Denied => {
                "the dependency is up and answers, and it refuses this client's identity"
            }
            RefusedState::Overflow => {
                "the calls never left the pod: the client's own proxy rejected them, whatever \
                 state the dependency is in"
            }
            _ => "the dependency is up, and its state is what fails the requests",
        };
        let shows = match self.state {
            RefusedState::Overflow => "its calls to the dependency rejected",
            _ => "the dependency answering with a refusal of its own",
        };
        format!(
            "{log}{} shows {shows} ({times}); {why}.",
            in_pod(self.pod.as_deref()),
        )
    }

    fn subject(&self) -> Option<Subject> {
        match &self.dependency {
            Some(d) => Subject::named(ObjectKind::Endpoint, Some(d)),
            None => Subject::named(ObjectKind::Pod, self.pod.as_deref()),
        }
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.state == other.state && self.dependency == other.dependency
    }

    fn merge_from(&mut self, other: &Self) {
        self.count += other.count;
    }

    fn step(&self, _scene: &Scene) -> String {
        let who = self
            .dependency
            .as_deref()
            .map_or("the dependency".to_string(), |d| format!("`{d}`"));
        format!("On {who}, find {}.", self.state.check())
    }

    /// Its pod's failures, and the connections that fail in that pod for it: to the sidecar
    /// that logs the refusal (`localhost`), or to the dependency the line does not name.
    fn explains(&self, effect: &super::Finding) -> bool {
        if let super::Fact::Dependency(d) = &effect.fact {
            return super::same_pod(self.pod.as_deref(), d.pod.as_deref())
                && d.endpoint.as_deref().is_none_or(|e| {
                    host_name(&split_endpoint(e).0) == HostName::Loopback
                        || self.dependency.as_deref() == Some(e)
                });
        }
        pod_failure_explains(self.pod.as_deref(), effect)
    }

    /// The dependency's side: its Service and pods, to see why it is in that state. A public
    /// host answered by a proxy with nothing behind it is followed too: an Ingress may route it
    /// to a Service in the cluster.
    fn leads(&self) -> Vec<Lead> {
        let Some(dependency) = &self.dependency else {
            return Vec::new();
        };
        let (host, port) = split_endpoint(dependency);
        match host_name(&host) {
            HostName::Loopback => return Vec::new(),
            HostName::External if self.state != RefusedState::Unavailable => return Vec::new(),
            _ => {}
        }
        vec![Lead::Host {
            host,
            port,
            namespace: None,
        }]
    }
}

/// How long a pod that never restarted must have existed, unready, for a wait it logs to count
/// as stuck: a new replica waits a minute or two for a peer's migration in a normal rollout.
const UNREADY_FOR_SECS: u64 = 600;

/// A server's own log of a request it served (`"GET /ready HTTP/1.1" 503 Service
/// Unavailable`, Rails' `Completed 503 Service Unavailable`): the status is its answer to
/// someone else, not one this pod heard.
static SERVED: LazyLock<Regex> = regex!(
    r#""(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+ HTTP/[\d.]+" \d{3}\b|\bCompleted \d{3} "#
);

/// The state a line refuses in, and the pattern that decided it. A status only a client hears
/// does not count in a server's log of the requests it served — but Envoy's access log is the
/// client's own proxy, which hears its upstream's answer.
fn refused(line: &str) -> Option<(RefusedState, &'static Regex)> {
    STATES
        .iter()
        .find(|(_, re)| re.is_match(line))
        .map(|(state, re)| (*state, re))
        .filter(|(state, _)| {
            let served =
                state.is_an_answer() && *state != RefusedState::Overflow && SERVED.is_match(line);
            let unreachable =
                *state == RefusedState::Unavailable && UPSTREAM_CONNECT.is_match(line);
            !served && !unreachable
        })
}

/// A proxy's gateway status that says why: it could not connect to its upstream (Envoy's
/// `upstream connect error … reset reason: connection timeout`). That is a connection that
/// fails (`dependencies.rs`), not a backend with nothing ready behind it.
static UPSTREAM_CONNECT: LazyLock<Regex> = regex!(
    r"(?i)upstream connect error|reset reason: (?:connection (?:failure|timeout)|(?:remote|local) connection failure)|delayed connect error"
);

/// The dependency a line names.
fn dependency_in(line: &str) -> Option<String> {
    if let Some((host, port)) = service_hosts(line).into_iter().next() {
        return Some(match port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        });
    }
    // A match that starts inside a longer name (`process_response.js:41` matches at `js`) is
    // no endpoint.
    let inside_a_name =
        |c: &regex::Captures<'_>| line[..c.get(1).map_or(0, |m| m.start())].ends_with(['.', '_']);
    ENDPOINT
        .captures_iter(line)
        .filter(|c| !is_source_location(&c[1]) && !inside_a_name(c))
        .map(|c| format!("{}:{}", &c[1], &c[2]))
        .last()
        .or_else(|| {
            url_hosts(line)
                .into_iter()
                .next()
                .map(|(host, port)| match port {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                })
        })
}

/// One dependency's refusals in one log: state, dependency, count, the last line's index, the
/// last line, the pattern that decided it.
type Seen<'a> = (
    RefusedState,
    Option<String>,
    usize,
    usize,
    &'a str,
    &'static Regex,
);

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let class_repeats = repeats(round.evidence, |l| refused(l).is_some());
    let heard_repeats = answer_repeats(round.evidence, |l| {
        refused(l).is_some_and(|(state, _)| state.is_an_answer())
    });
    let not_ready: Vec<String> = round
        .pods()
        .into_iter()
        .filter_map(|(_, pod)| crate::kube::pod_from_object(pod))
        .filter(|pod| {
            pod.ready == Some(false)
                && (pod.restarts > 0 || pod.age_secs.is_some_and(|age| age >= UNREADY_FOR_SECS))
        })
        .map(|pod| pod.name)
        .collect();
    let mut findings: Vec<Finding> = Vec::new();
    for scan in LogScan::all(round, false) {
        // (state, dependency) → (count, last line index, last line, pattern)
        let mut seen: Vec<Seen<'_>> = Vec::new();
        for &(index, line) in &scan.lines {
            let Some((state, re)) = refused(line) else {
                continue;
            };
            let dependency = dependency_in(line);
            match seen
                .iter_mut()
                .find(|(s, d, ..)| *s == state && *d == dependency)
            {
                Some(entry) => {
                    entry.2 += 1;
                    entry.3 = index;
                    entry.4 = line;
                }
                None => seen.push((state, dependency, 1, index, line, re)),
            }
        }
        for (state, dependency, count, index, line, re) in seen {
            let quote = quote_deciding(line, re);
            // Stuck: a Job's log, or the log of a pod not ready for a while (restarted, or
            // older than a rollout's wait for a peer's migration), ends repeating the wait.
            let stuck = || {
                (matches!(round.ctx.symptom, Symptom::JobFailed | Symptom::Unavailable)
                    || scan
                        .pod
                        .as_deref()
                        .is_some_and(|p| not_ready.iter().any(|n| n == p)))
                    && scan.ends_stuck_on(|l| refused(l).is_some_and(|(s, _)| s == state))
            };
            let (verified, confidence) = match if state.is_an_answer() {
                scan.answer_strength(index, heard_repeats)
            } else {
                scan.class_strength(index, class_repeats)
            } {
                (false, _) if stuck() => (true, Confidence::Medium),
                strength => strength,
            };
            findings.push(
                Finding::new(
                    Refusal {
                        pod: scan.pod.clone(),
                        container: scan
                            .evidence
                            .string_arg(&["container", "container_name"])
                            .map(str::to_string),
                        dependency,
                        state,
                        count,
                        says: quote.clone(),
                    },
                    confidence,
                    verified,
                )
                .citing(vec![cite(scan.evidence, quote)]),
            );
        }
    }
    findings
}

#[cfg(test)]
mod tests;
