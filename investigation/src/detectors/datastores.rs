//! Data stores that slow their clients by their own state: a client logs that it waits on a
//! cache or a database without naming it (slow queries, cache misses), and the store, read from
//! its own side (`investigate/leads/stores.rs`), shows why — a cache at its configured memory
//! maximum evicting keys, so the client misses and falls through to its database; a database
//! where one session holds a lock every other waits on.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`DependencyWait`] | symptom | the client's log repeats it under a service-level alert |
//! | [`CacheFull`] | cause | the store's own metrics: memory at its configured maximum, evictions rising, while a client waits |
//! | [`LockHeld`] | cause | the database's own log: sessions waiting for a lock, naming the process that holds it |
//!
//! What explains what: a full cache and a held lock explain their clients' waits, the latency
//! step and slow spans those waits make, exhausted pools and the autoscaler that scaled out on
//! requests held longer; a held lock explains the lock waits clients log as refusals.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::lead::{HostName, Lead, host_name, is_source_location, service_hosts, split_endpoint};
use super::logscan::{LogScan, repeats};
use super::refusals::RefusedState;
use super::series::{self, QuotedSeries, format_bytes, format_duration};
use super::text::quote_deciding;
use super::{
    Citation, Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom, cite,
};
use crate::kube;

/// A client waiting on a store it does not name: slow queries and statements, cache misses.
static WAITS: LazyLock<Regex> = regex!(
    r"(?i)\bslow (?:query|queries|statement|sql|command)\b|\bcache miss(?:es)?\b|\bmissed (?:the )?cache\b|\bquery (?:took|timed out)\b|canceling statement due to (?:user request|statement timeout)"
);
static CACHE_WORDS: LazyLock<Regex> = regex!(r"(?i)\bcache\b");
/// `scheme://user@host:port/…` in an env value or argument.
static URL_HOST: LazyLock<Regex> =
    regex!(r"(?i)\b[a-z][a-z0-9+.-]*://(?:[^@/\s]+@)?([a-z0-9][a-z0-9.-]*)(?::(\d{2,5}))?");
/// `host=orders-db` in a libpq connection string.
static KEY_HOST: LazyLock<Regex> = regex!(r"(?i)\bhost=([a-z0-9][a-z0-9.-]*)");
/// `host:port`, the host starting with a letter (never a timestamp's `T00:00`).
static HOST_PORT: LazyLock<Regex> =
    regex!(r"(?i)(?:^|[^a-z0-9.-])([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*):(\d{2,5})\b");
/// Env names that hold a host (`DATABASE_HOST`, `REDIS_ADDR`, `MEMCACHED_SERVERS`).
static HOST_ENV: LazyLock<Regex> =
    regex!(r"(?i)_(?:HOST|HOSTNAME|ADDR|ADDRESS|SERVER|SERVERS|ENDPOINT)$");
/// Postgres' own log of a lock wait (`log_lock_waits`).
static PG_WAIT: LazyLock<Regex> =
    regex!(r"process (\d+) still waiting for (\w+Lock) on .+? after [\d.]+ ms");
/// Postgres' detail line naming the holder and the queue.
static PG_HOLDER: LazyLock<Regex> =
    regex!(r"Process(?:es)? holding the lock: (\d+)(?:, \d+)*\. Wait queue: ([\d, ]+)\.");

/// What the client waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wait {
    /// Cache misses: the client falls through to its backing store.
    CacheMiss,
    /// Slow or cancelled queries and statements.
    SlowQuery,
}

/// A client's log shows it waiting on a data store, without naming it in the line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DependencyWait {
    pub pod: Option<String>,
    pub namespace: Option<String>,
    pub wait: Wait,
    /// The hosts its line or its spec names (`orders-db-rw.orders.svc:5432`, `redis`).
    pub hosts: Vec<String>,
    /// The ConfigMaps its spec takes its environment from (`envFrom`): where the hosts it does
    /// not name itself are configured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_maps: Vec<String>,
    pub count: usize,
    pub says: String,
    /// When the alert started: the stores' metrics are read around it.
    pub around: Option<DateTime<Utc>>,
}

impl Payload for DependencyWait {
    const SPEC: KindSpec = KindSpec {
        name: "dependency-wait",
        role: Role::Symptom,
        verified_when: "the client's log repeats it under a service-level alert",
        accounts_for: &[Symptom::Latency, Symptom::Saturation],
    };

    fn example() -> Self {
        Self {
            pod: Some("inventory-api-6d5f8c7b94-7hx2c".into()),
            namespace: Some("inventory".into()),
            wait: Wait::CacheMiss,
            hosts: Vec::new(),
            config_maps: Vec::new(),
            count: 2,
            says: "cache miss, loaded from db".into(),
            around: None,
        }
    }

    fn title(&self) -> String {
        let what = match self.wait {
            Wait::CacheMiss => "misses its cache and falls through",
            Wait::SlowQuery => "waits on slow queries",
        };
        let who = self
            .pod
            .as_deref()
            .map_or("The client".to_string(), |p| format!("`{p}`"));
        format!("{who} {what}: `{}`", self.says)
    }

    fn detail(&self) -> String {
        let names = if self.hosts.is_empty() {
            "names no data store".to_string()
        } else {
            format!("is configured for `{}`", self.hosts.join("`, `"))
        };
        format!(
            "The client's log shows it waiting on a data store ({} lines); its spec {names}.",
            self.count
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.wait == other.wait && self.namespace == other.namespace && self.hosts == other.hosts
    }

    fn merge_from(&mut self, other: &Self) {
        self.count += other.count;
    }

    fn step(&self, _scene: &Scene) -> String {
        let stores = if self.hosts.is_empty() {
            "the caches and databases it uses".to_string()
        } else {
            format!("`{}`", self.hosts.join("`, `"))
        };
        format!(
            "Check {stores} from their side: memory against its maximum and evictions for a \
             cache, lock waits and long transactions for a database."
        )
    }

    fn leads(&self) -> Vec<Lead> {
        self.namespace
            .iter()
            .map(|namespace| Lead::DataStores {
                namespace: namespace.clone(),
                hosts: self.hosts.clone(),
                config_maps: self.config_maps.clone(),
                at: self.around,
            })
            .collect()
    }
}

/// The product a cache's metrics come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheProduct {
    Redis,
    Memcached,
}

impl CacheProduct {
    fn name(self) -> &'static str {
        match self {
            CacheProduct::Redis => "Redis",
            CacheProduct::Memcached => "Memcached",
        }
    }

    fn limit(self) -> &'static str {
        match self {
            CacheProduct::Redis => "maxmemory",
            CacheProduct::Memcached => "memory limit (-m)",
        }
    }

    /// (used, maximum, evictions) metric names.
    fn metrics(self) -> (&'static str, &'static str, &'static str) {
        match self {
            CacheProduct::Redis => (
                "redis_memory_used_bytes",
                "redis_memory_max_bytes",
                "redis_evicted_keys_total",
            ),
            CacheProduct::Memcached => (
                "memcached_current_bytes",
                "memcached_limit_bytes",
                "memcached_items_evicted_total",
            ),
        }
    }
}

/// A cache at its configured memory maximum, evicting keys while its clients wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheFull {
    /// The cache as its metrics name it (its pod, else its instance or service).
    pub cache: String,
    pub product: CacheProduct,
    pub used_bytes: f64,
    pub max_bytes: f64,
    /// When it first reached the maximum in the window read.
    pub since: Option<DateTime<Utc>>,
    /// The clients whose logs show them waiting.
    pub clients: Vec<String>,
}

/// The share of its maximum at which a cache counts as full.
const FULL_SHARE: f64 = 0.97;

impl Payload for CacheFull {
    const SPEC: KindSpec = KindSpec {
        name: "cache-full",
        role: Role::Cause,
        verified_when: "the cache's own metrics show its memory at its configured maximum and \
                        its evictions rising, while a client logs that it waits",
        accounts_for: &[Symptom::Latency, Symptom::Saturation, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            cache: "inventory-cache-0".into(),
            product: CacheProduct::Redis,
            used_bytes: 4.29e9,
            max_bytes: 4_294_967_296.0,
            since: None,
            clients: vec!["inventory-api-6d5f8c7b94-7hx2c".into()],
        }
    }

    fn title(&self) -> String {
        format!(
            "{} `{}` is at its {} ({} of {}) and evicts keys: its clients miss the cache and \
             fall through to the store behind it",
            self.product.name(),
            self.cache,
            self.product.limit(),
            format_bytes(self.used_bytes),
            format_bytes(self.max_bytes),
        )
    }

    fn detail(&self) -> String {
        let clients = if self.clients.is_empty() {
            String::new()
        } else {
            format!(" `{}` log the misses.", self.clients.join("`, `"))
        };
        let since = self
            .since
            .map_or(String::new(), |t| format!(" by {}", t.format("%H:%M UTC")));
        format!(
            "The cache's own metrics show its memory at its configured maximum{since} and its \
             evicted keys rising: every new key evicts another, the hit ratio falls and reads go \
             to the store behind it.{clients}"
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, Some(&self.cache))
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "Give {} `{}` room (raise its {} with the memory to back it) or find what filled it \
             (its largest keys, keys without a TTL); restarting or scaling its clients changes \
             nothing.",
            self.product.name(),
            self.cache,
            self.product.limit()
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        explains_waiting(effect)
            || matches!(&effect.fact, Fact::Refusal(r) if r.state == RefusedState::Full)
    }
}

/// A database session holding a lock the others wait on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockHeld {
    /// The database pod whose log shows the waits.
    pub database: Option<String>,
    /// The process holding the lock.
    pub holder: String,
    /// The lock mode the waiters want (`AccessShareLock`).
    pub mode: String,
    /// Sessions in the wait queue.
    pub waiting: usize,
    /// The application of the longest transaction, as the exporter labels it
    /// (`pg_stat_activity_max_tx_duration{application_name}`), and how long it has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_secs: Option<f64>,
    /// What the holder runs, when its own log says (`VACUUM`, `ALTER TABLE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    pub says: String,
}

impl Payload for LockHeld {
    const SPEC: KindSpec = KindSpec {
        name: "lock-held",
        role: Role::Cause,
        verified_when: "the database's own log shows sessions waiting for a lock and names the \
                        process holding it",
        accounts_for: &[Symptom::Latency, Symptom::Saturation, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            database: Some("orders-db-0".into()),
            holder: "87644".into(),
            mode: "AccessShareLock".into(),
            waiting: 8,
            application: Some("orders-db-maintenance".into()),
            held_secs: Some(2160.0),
            statement: None,
            says: "Process holding the lock: 87644.".into(),
        }
    }

    fn title(&self) -> String {
        let db = self
            .database
            .as_deref()
            .map_or("The database".to_string(), |d| format!("Database `{d}`"));
        let who = match (&self.application, self.held_secs) {
            (Some(app), Some(secs)) => format!(
                "`{app}` (process {}, in a transaction for {})",
                self.holder,
                format_duration(chrono::Duration::seconds(secs as i64))
            ),
            (Some(app), None) => format!("`{app}` (process {})", self.holder),
            _ => format!("process {}", self.holder),
        };
        let running = self
            .statement
            .as_deref()
            .map_or(String::new(), |s| format!(", running `{s}`"));
        format!(
            "{db}: {who}{running} holds a lock {} sessions wait on ({})",
            self.waiting, self.mode
        )
    }

    fn detail(&self) -> String {
        format!(
            "The database's own log shows sessions waiting for {} and names the process holding \
             the lock ({}): every query on the locked table queues behind it, so its clients' \
             requests are held until they time out: `{}`",
            self.mode, self.holder, self.says
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.database.as_deref())
    }

    fn merge_from(&mut self, other: &Self) {
        self.waiting = self.waiting.max(other.waiting);
        self.application = self.application.clone().or(other.application.clone());
        self.held_secs = self.held_secs.or(other.held_secs);
        self.statement = self.statement.clone().or(other.statement.clone());
    }

    fn step(&self, _scene: &Scene) -> String {
        let db = self
            .database
            .as_deref()
            .map_or("the database".to_string(), |d| format!("`{d}`"));
        let app = self
            .application
            .as_deref()
            .map_or(String::new(), |a| format!(" or stop `{a}`, which runs it,"));
        format!(
            "On {db}, see what process {} runs (`SELECT pid, application_name, xact_start, query \
             FROM pg_stat_activity WHERE pid = {}`), then cancel it (`SELECT \
             pg_cancel_backend({})`){app} and run lock-taking maintenance (VACUUM FULL, ALTER \
             TABLE, REINDEX) outside peak.",
            self.holder, self.holder, self.holder
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        explains_waiting(effect)
            || matches!(&effect.fact, Fact::Refusal(r) if r.state == RefusedState::Locked)
    }
}

/// What a store's state explains in its clients: their waits, the latency step and slow spans
/// they make, their empty pools, the autoscaler that scaled on requests held longer.
fn explains_waiting(effect: &Finding) -> bool {
    match &effect.fact {
        Fact::DependencyWait(_)
        | Fact::MetricStep(_)
        | Fact::SlowSpan(_)
        | Fact::AutoscalerMaxed(_)
        | Fact::ScaleChange(_) => true,
        Fact::ConnectionsExhausted(c) => !c.limit_reached,
        _ => false,
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let waits = waits(round);
    let clients: Vec<String> = waits
        .iter()
        .filter_map(|f| match &f.fact {
            Fact::DependencyWait(w) => w.pod.clone(),
            _ => None,
        })
        .collect();
    let mut findings = Vec::new();
    if !waits.is_empty() {
        findings.extend(full_caches(round, &clients));
    }
    findings.extend(held_locks(round));
    findings.extend(waits);
    findings
}

/// Clients waiting on a store, under an alert about their requests or their saturation.
fn waits(round: &Round<'_>) -> Vec<Finding> {
    if !matches!(
        round.ctx.symptom,
        Symptom::Latency | Symptom::Saturation | Symptom::Errors | Symptom::Any
    ) {
        return Vec::new();
    }
    let class_repeats = repeats(round.evidence, |l| WAITS.is_match(l));
    let mut findings = Vec::new();
    for scan in LogScan::all(round, false) {
        // A store's own log (Postgres' statement lines) is not a client waiting on it.
        if scan.lines.iter().any(|(_, l)| PG_WAIT.is_match(l)) {
            continue;
        }
        let matching: Vec<&(usize, &str)> = scan
            .lines
            .iter()
            .filter(|(_, l)| WAITS.is_match(l))
            .collect();
        let Some(&&(index, line)) = matching.last() else {
            continue;
        };
        let wait = if matching.iter().any(|(_, l)| CACHE_WORDS.is_match(l)) {
            Wait::CacheMiss
        } else {
            Wait::SlowQuery
        };
        let mut hosts: Vec<String> = Vec::new();
        for (_, l) in &matching {
            for host in line_hosts(l) {
                if !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
        }
        let mut config_maps = Vec::new();
        if let Some(pod) = scan.pod.as_deref() {
            let (named, taken_in) = spec_hosts(round, pod);
            for host in named {
                if !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
            config_maps = taken_in;
        }
        hosts.truncate(3);
        config_maps.truncate(2);
        let quote = quote_deciding(line, &WAITS);
        let (verified, confidence) = scan.class_strength(index, class_repeats);
        findings.push(
            Finding::new(
                DependencyWait {
                    pod: scan.pod.clone(),
                    namespace: scan.evidence.string_arg(&["namespace"]).map(str::to_string),
                    wait,
                    hosts,
                    config_maps,
                    count: matching.len(),
                    says: quote.clone(),
                    around: round.ctx.alert_start,
                },
                confidence,
                verified,
            )
            .citing(vec![cite(scan.evidence, quote)]),
        );
    }
    findings
}

/// Whether a host can be a store inside the cluster.
fn in_cluster(host: &str) -> bool {
    matches!(
        host_name(host),
        HostName::Service { .. } | HostName::ServicePod { .. } | HostName::Address(_)
    ) && !is_source_location(host)
}

/// The in-cluster hosts a client's line names (`"db":"orders-db-rw.orders.svc:5432"`).
fn line_hosts(line: &str) -> Vec<String> {
    let mut hosts: Vec<String> = service_hosts(line)
        .into_iter()
        .map(|(h, p)| p.map_or(h.clone(), |p| format!("{h}:{p}")))
        .collect();
    for caps in HOST_PORT.captures_iter(line) {
        let host = format!("{}:{}", &caps[1], &caps[2]);
        if in_cluster(&caps[1])
            && caps[1].contains(|c: char| c.is_ascii_alphabetic())
            && !hosts.iter().any(|h| h.starts_with(&caps[1]))
        {
            hosts.push(host);
        }
    }
    hosts
}

/// The in-cluster hosts a `name=value` setting names (an env var, a ConfigMap key, an
/// argument with no name): URLs and libpq's `host=` in the value, and the value of a setting
/// named for a host (`DATABASE_HOST`, `REDIS_ADDR`, `MEMCACHED_SERVERS`), each `host[:port]`.
pub fn hosts_in(name: Option<&str>, value: &str) -> Vec<String> {
    let mut found: Vec<(String, Option<String>)> = Vec::new();
    for caps in URL_HOST.captures_iter(value) {
        found.push((
            caps[1].to_string(),
            caps.get(2).map(|p| p.as_str().to_string()),
        ));
    }
    for caps in KEY_HOST.captures_iter(value) {
        found.push((caps[1].to_string(), None));
    }
    if name.is_some_and(|n| HOST_ENV.is_match(n)) {
        for host in value.split([',', ' ']).filter(|h| !h.is_empty()) {
            let (host, port) = split_endpoint(host);
            found.push((host, port.map(|p| p.to_string())));
        }
    }
    let mut hosts: Vec<String> = Vec::new();
    for (host, port) in found {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if !in_cluster(&host) || hosts.iter().any(|h| split_endpoint(h).0 == host) {
            continue;
        }
        hosts.push(port.map_or(host.clone(), |p| format!("{host}:{p}")));
    }
    hosts
}

/// What a pod's spec says about the stores it uses: the in-cluster hosts its env values and
/// arguments name ([`hosts_in`]), and the ConfigMaps it takes its environment from (`envFrom`),
/// whose values may name the rest.
fn spec_hosts(round: &Round<'_>, pod: &str) -> (Vec<String>, Vec<String>) {
    let mut hosts: Vec<String> = Vec::new();
    let mut config_maps: Vec<String> = Vec::new();
    for (_, object) in round.pods() {
        if kube::str_at(object, "/metadata/name") != Some(pod) {
            continue;
        }
        let containers = object
            .pointer("/spec/containers")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten();
        for container in containers {
            let mut values: Vec<(Option<&str>, &str)> = Vec::new();
            for env in container
                .get("env")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(value) = kube::str_at(env, "/value") {
                    values.push((kube::str_at(env, "/name"), value));
                }
            }
            for key in ["args", "command"] {
                for arg in container
                    .get(key)
                    .and_then(serde_json::Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(serde_json::Value::as_str)
                {
                    values.push((None, arg));
                }
            }
            for (name, value) in values {
                for host in hosts_in(name, value) {
                    let bare = split_endpoint(&host).0;
                    if !hosts.iter().any(|h| split_endpoint(h).0 == bare) {
                        hosts.push(host);
                    }
                }
            }
            for from in container
                .get("envFrom")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| kube::str_at(e, "/configMapRef/name"))
            {
                if !config_maps.iter().any(|c| c == from) {
                    config_maps.push(from.to_string());
                }
            }
        }
    }
    (hosts, config_maps)
}

/// A store's identity in its metrics: its namespace and pod, else its instance or service.
fn store_key(labels: &BTreeMap<String, String>) -> Option<(String, String)> {
    let name = ["pod", "instance", "service"]
        .iter()
        .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()))?;
    Some((
        labels.get("namespace").cloned().unwrap_or_default(),
        name.clone(),
    ))
}

/// Caches at their maximum with evictions rising.
fn full_caches(round: &Round<'_>, clients: &[String]) -> Vec<Finding> {
    let items = series::items(round.evidence);
    let all: Vec<_> = series::all_series(&items).collect();
    let named = |name: &str| {
        all.iter()
            .filter(move |(_, _, s)| {
                s.series.labels.get("__name__").map(String::as_str) == Some(name)
            })
            .filter_map(|(item, _, s)| Some((store_key(&s.series.labels)?, item.evidence, *s)))
            .collect::<Vec<_>>()
    };
    let mut findings = Vec::new();
    for product in [CacheProduct::Redis, CacheProduct::Memcached] {
        let (used_name, max_name, evicted_name) = product.metrics();
        let maxima = named(max_name);
        let evictions = named(evicted_name);
        for (key, evidence, used) in named(used_name) {
            let Some((_, max_evidence, max)) = maxima.iter().find(|(k, ..)| *k == key) else {
                continue;
            };
            let Some(&(_, max_bytes)) = max.series.points.last() else {
                continue;
            };
            let Some(&(_, used_bytes)) = used.series.points.last() else {
                continue;
            };
            if max_bytes <= 0.0 || used_bytes < FULL_SHARE * max_bytes {
                continue;
            }
            let Some((_, evicted_evidence, evicted)) = evictions
                .iter()
                .find(|(k, ..)| *k == key)
                .filter(|(_, _, e)| rising(e))
            else {
                continue;
            };
            let reached = used
                .series
                .points
                .iter()
                .position(|(_, v)| *v >= FULL_SHARE * max_bytes);
            // At the maximum from the first point shown: since before the window (or the
            // excerpt's cut), not since then.
            let since = reached
                .filter(|i| *i > 0)
                .and_then(|i| used.series.points.get(i))
                .and_then(|(t, _)| DateTime::from_timestamp(*t as i64, 0));
            let last = used.series.points.len() - 1;
            let mut refs: Vec<Citation> =
                series::quotes(evidence, used, &[reached.unwrap_or(last), last]);
            refs.extend(series::quotes(
                max_evidence,
                max,
                &[max.series.points.len() - 1],
            ));
            refs.extend(series::quotes(
                evicted_evidence,
                evicted,
                &[evicted.series.points.len() - 1],
            ));
            refs.dedup();
            findings.push(
                Finding::new(
                    CacheFull {
                        cache: key.1.clone(),
                        product,
                        used_bytes,
                        max_bytes,
                        since,
                        clients: clients.to_vec(),
                    },
                    Confidence::High,
                    true,
                )
                .citing(refs)
                .dated(since),
            );
        }
    }
    findings
}

/// Whether an evictions series rises in the window: a counter that grew, or a rate that went
/// up from where it was and is above zero at the end.
fn rising(series: &QuotedSeries<'_>) -> bool {
    let points = &series.series.points;
    match (points.first(), points.last()) {
        (Some(&(_, first)), Some(&(_, last))) => last > 0.0 && last > first,
        _ => false,
    }
}

/// Locks the database's own log shows held, with the sessions waiting on them.
fn held_locks(round: &Round<'_>) -> Vec<Finding> {
    let longest = longest_transaction(round);
    let mut findings = Vec::new();
    for scan in LogScan::all(round, false) {
        let mut mode: Option<String> = None;
        let mut holder: Option<(usize, &str, String, usize)> = None;
        for &(index, line) in &scan.lines {
            if let Some(caps) = PG_WAIT.captures(line) {
                mode = Some(caps[2].to_string());
            }
            if let Some(caps) = PG_HOLDER.captures(line) {
                let queue = caps[2].split(',').filter(|p| !p.trim().is_empty()).count();
                holder = Some((index, line, caps[1].to_string(), queue));
            }
        }
        let (Some(mode), Some((_, line, pid, waiting))) = (mode, holder) else {
            continue;
        };
        let says = quote_deciding(line, &PG_HOLDER);
        let mut refs = vec![cite(scan.evidence, says.clone())];
        let (application, held_secs) = match &longest {
            Some((app, secs, citations)) => {
                refs.extend(citations.iter().cloned());
                (Some(app.clone()), Some(*secs))
            }
            None => (None, None),
        };
        findings.push(
            Finding::new(
                LockHeld {
                    database: scan.pod.clone(),
                    holder: pid,
                    mode,
                    waiting,
                    application,
                    held_secs,
                    statement: None,
                    says,
                },
                Confidence::High,
                true,
            )
            .citing(refs),
        );
    }
    findings
}

/// The shortest transaction that counts as holding a lock for long.
const LONG_TRANSACTION_SECS: f64 = 60.0;

/// The application with the longest transaction now, as postgres_exporter labels it, when it
/// has run long: its name, its duration and the lines that show it.
fn longest_transaction(round: &Round<'_>) -> Option<(String, f64, Vec<Citation>)> {
    let items = series::items(round.evidence);
    let mut best: Option<(String, f64, Vec<Citation>)> = None;
    for (item, _, s) in series::all_series(&items) {
        if s.series.labels.get("__name__").map(String::as_str)
            != Some("pg_stat_activity_max_tx_duration")
        {
            continue;
        }
        let Some(app) = s
            .series
            .labels
            .get("application_name")
            .filter(|a| !a.is_empty())
        else {
            continue;
        };
        let Some(&(_, secs)) = s.series.points.last() else {
            continue;
        };
        if secs >= LONG_TRANSACTION_SECS && best.as_ref().is_none_or(|(_, b, _)| secs > *b) {
            let refs = series::quotes(item.evidence, s, &[s.series.points.len() - 1]);
            best = Some((app.clone(), secs, refs));
        }
    }
    best
}

#[cfg(test)]
mod tests;
