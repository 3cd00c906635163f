//! Connections exhausted: a client's pool with no free connection (HikariCP, SQLAlchemy, DBCP,
//! pgx) or a server refusing new ones at its limit (Postgres' "too many clients", MySQL, Redis),
//! from application logs — one finding per log, led by the server's refusal when there is one
//! (the pool waits because the server will not open more).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ConnectionsExhausted`] | cause | as any log line (`logscan.rs`): a crash it ends, or repeated under a service-level alert |
//!
//! What explains what: the server's limit explains every client's exhausted pool; either
//! explains failing readiness probes and crashes of the pods that log it. A scale-up that
//! multiplied the clients is what led there (`changes.rs`), shown with it, never instead of it.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::logscan::{LogScan, repeats};
use super::text::quote_deciding;
use super::{Fact, Finding, KindSpec, ObjectKind, Payload, Round, Scene, Subject, cite};

/// A client's pool has no free connection (HikariCP, SQLAlchemy, DBCP, pgx, generic).
static POOL_EXHAUSTED: LazyLock<Regex> = regex!(
    r"(?i)connection is not available, request timed out|connection pool (?:is )?exhausted|\bpool exhausted|timeout (?:waiting for|acquiring) (?:a |an idle )?connection|timed out waiting for (?:a |an )?(?:free |idle |available )?connection|QueuePool limit of size \d+ overflow \d+ reached|unable to acquire (?:a )?(?:JDBC )?connection|failed to acquire (?:a )?connection|could not get (?:a )?connection from (?:the )?pool|cannot get a connection, pool error|no available connection"
);
/// The server refuses new connections: its connection limit is reached (Postgres, MySQL,
/// Redis, generic).
static CONNECTION_LIMIT: LazyLock<Regex> = regex!(
    r"(?i)sorry, too many clients already|remaining connection slots are reserved|\btoo many connections\b|max number of clients reached|maximum number of (?:client )?connections (?:reached|exceeded)|connection limit (?:exceeded|reached)"
);

/// Connections exhausted: a server at its limit, a client's pool empty, or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionsExhausted {
    pub pod: Option<String>,
    /// The server refuses new connections (its limit is reached).
    pub limit_reached: bool,
    /// The client's pool has no free connection.
    pub pool_empty: bool,
    /// The deciding line, quoted.
    pub says: String,
}

impl Payload for ConnectionsExhausted {
    const SPEC: KindSpec = KindSpec::read_from_log("connections-exhausted");

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            limit_reached: true,
            pool_empty: true,
            says: "FATAL: sorry, too many clients already".into(),
        }
    }

    fn title(&self) -> String {
        if self.limit_reached {
            "Connection limit reached: the server refuses new connections".to_string()
        } else {
            "Connection pool exhausted: requests wait for a free connection".to_string()
        }
    }

    fn detail(&self) -> String {
        if self.limit_reached {
            format!(
                "The log{} shows the server refusing new connections because its connection \
                 limit is reached: `{}`{}",
                in_pod(self.pod.as_deref()),
                self.says,
                if self.pool_empty {
                    "; the client's pool waits for connections it cannot open."
                } else {
                    "."
                }
            )
        } else {
            format!(
                "Every connection of the pool{} is in use; requests wait for one and time out: \
                 `{}`",
                in_pod(self.pod.as_deref()),
                self.says
            )
        }
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.limit_reached == other.limit_reached && self.pool_empty == other.pool_empty
    }

    fn step(&self, _scene: &Scene) -> String {
        if self.limit_reached {
            "The server's connection limit is reached: count its connections per client (on \
             Postgres `SELECT application_name, count(*) FROM pg_stat_activity GROUP BY 1`), \
             then bring pool size × replicas of every client under the server's limit (smaller \
             pools, or a pooler such as PgBouncer) rather than scaling clients up."
                .to_string()
        } else {
            format!(
                "Every connection of the pool{} is busy: find what holds them (slow queries, \
                 long transactions, a leak) before raising the pool size; the database must \
                 allow pool size × replicas.",
                in_pod(self.pod.as_deref())
            )
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        // The server's refusal is why the pools wait.
        let pools_wait = matches!(&effect.fact, Fact::ConnectionsExhausted(other)
            if self.limit_reached && !other.limit_reached && other.pool_empty);
        pools_wait || pod_failure_explains(self.pod.as_deref(), effect)
    }
}

fn is_connections_line(line: &str) -> bool {
    POOL_EXHAUSTED.is_match(line) || CONNECTION_LIMIT.is_match(line)
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let class_repeats = repeats(round.evidence, is_connections_line);
    LogScan::all(round, false)
        .iter()
        .filter_map(|scan| exhausted(scan, class_repeats))
        .collect()
}

fn exhausted(scan: &LogScan<'_>, class_repeats: usize) -> Option<Finding> {
    let limit = scan.last(&CONNECTION_LIMIT);
    let pool = scan.last(&POOL_EXHAUSTED);
    let (says, index) = match (limit, pool) {
        (Some((index, line)), _) => (quote_deciding(line, &CONNECTION_LIMIT), index),
        (None, Some((index, line))) => (quote_deciding(line, &POOL_EXHAUSTED), index),
        (None, None) => return None,
    };
    let mut refs = vec![cite(scan.evidence, says.clone())];
    if let (Some(_), Some((_, line))) = (limit, pool) {
        let quoted = quote_deciding(line, &POOL_EXHAUSTED);
        if !refs.iter().any(|c| c.quote == quoted) {
            refs.push(cite(scan.evidence, quoted));
        }
    }
    let latest = index.max(pool.map_or(0, |(i, _)| i));
    let (verified, confidence) = scan.class_strength(latest, class_repeats);
    Some(
        Finding::new(
            ConnectionsExhausted {
                pod: scan.pod.clone(),
                limit_reached: limit.is_some(),
                pool_empty: pool.is_some(),
                says,
            },
            confidence,
            verified,
        )
        .citing(refs),
    )
}

#[cfg(test)]
mod tests;
