//! A client's data stores, read from their side: a client that logs slow queries or cache
//! misses without naming a host waits on a cache or a database its spec names (`REDIS_URL`,
//! `DATABASE_HOST`, `…:5432`), or, when it names none, on the caches and databases of its own
//! namespace (the pods whose image is one). Each store's own log (a database logs the lock
//! waits and who holds the lock) and the stores' own metrics (memory against its configured
//! maximum, evictions, lock waits, the longest transaction by application) are read, so the
//! detectors (`detectors/datastores.rs`) can say what state the store is in.
//!
//! A filling volume is read the same way ([`growth`]): the claim's free bytes over two days
//! (how fast it fills, when it is full), and, when a pod that mounts it runs Postgres, that
//! database's own growth series selected by the pod — each replication slot's retained WAL and
//! whether a consumer reads it, and the database's size — so `detectors/slots.rs` can tell an
//! abandoned slot from a database that grows.

use chrono::{DateTime, Duration, Utc};

use crate::detectors::datastores::hosts_in;
use crate::detectors::lead::{HostName, host_name, split_endpoint};
use crate::detectors::slots;
use crate::kube::{self, selector_of};
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::super::collect::Collector;

/// The most stores one lead reads.
const MAX_STORES: usize = 2;
/// Hours of the stores' metrics read before the alert.
const WINDOW_HOURS: i64 = 6;

/// The metrics data stores' exporters publish about the states that slow their clients:
/// memory against its maximum and evictions (redis_exporter, memcached_exporter), lock waits
/// and the longest transaction (postgres_exporter).
pub const STORE_METRICS: &[&str] = &[
    "redis_memory_used_bytes",
    "redis_memory_max_bytes",
    "redis_evicted_keys_total",
    "memcached_current_bytes",
    "memcached_limit_bytes",
    "memcached_items_evicted_total",
    "pg_locks_waiting",
    "pg_stat_activity_max_tx_duration",
];

/// Data store products other than Postgres ([`kube::is_postgres_image`]), as their images are
/// named.
const PRODUCTS: &[&str] = &[
    "redis",
    "valkey",
    "keydb",
    "memcached",
    "mysql",
    "mariadb",
    "percona",
];

/// Whether an image is a data store's (`docker.io/library/redis:7.2`, `…/postgres:16`), not
/// its exporter's.
pub fn is_store_image(image: &str) -> bool {
    let name = kube::image_name(image);
    kube::is_postgres_image(image)
        || (!name.contains("exporter")
            && PRODUCTS
                .iter()
                .any(|p| name == *p || name.starts_with(&format!("{p}-"))))
}

/// Reads the stores: resolves them, reads each one's log, then their metrics. Returns the
/// stores' pods, which the alert now leads to.
pub async fn read<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    hosts: &[String],
    config_maps: &[String],
    at: Option<DateTime<Utc>>,
    tail_lines: u32,
) -> Vec<String> {
    let mut hosts = hosts.to_vec();
    if hosts.is_empty() {
        for name in config_maps {
            let text = c
                .fetch(
                    CapabilityRequest::ObjectGet {
                        namespace: Some(namespace.to_string()),
                        kind: "ConfigMap".into(),
                        name: name.clone(),
                    },
                    format!(
                        "the client takes its environment from ConfigMap `{name}`: which data \
                         stores it names"
                    ),
                )
                .await
                .unwrap_or_default();
            for host in configured_hosts(&text) {
                if !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
        }
    }
    let mut stores: Vec<(String, String)> = Vec::new();
    for host in &hosts {
        if stores.len() >= MAX_STORES {
            break;
        }
        if let Some(pod) = resolve(c, namespace, host).await
            && !stores.contains(&pod)
        {
            stores.push(pod);
        }
    }
    if stores.is_empty() {
        let listed = c
            .fetch(
                CapabilityRequest::PodList {
                    namespace: namespace.to_string(),
                    label_selector: None,
                },
                format!(
                    "the client names no data store: the caches and databases running in \
                     `{namespace}` (pods whose image is one)"
                ),
            )
            .await
            .unwrap_or_default();
        for pod in kube::objects(&listed).iter().filter(|p| runs_a_store(p)) {
            if let Some(name) = kube::str_at(pod, "/metadata/name")
                && stores.len() < MAX_STORES
            {
                stores.push((namespace.to_string(), name.to_string()));
            }
        }
    }
    for (ns, pod) in &stores {
        c.fetch(
            CapabilityRequest::PodLogs {
                namespace: ns.clone(),
                pod: pod.clone(),
                container: None,
                previous: false,
                tail_lines,
            },
            format!("data store `{pod}`: what it logs itself (lock waits, evictions, limits)"),
        )
        .await;
    }
    let mut namespaces: Vec<&str> = vec![namespace];
    for (ns, _) in &stores {
        if !namespaces.contains(&ns.as_str()) {
            namespaces.push(ns);
        }
    }
    let at = at.unwrap_or_else(Utc::now);
    c.fetch(
        CapabilityRequest::MetricRange {
            query: format!(
                "{{__name__=~\"{}\", namespace=~\"{}\"}}",
                STORE_METRICS.join("|"),
                namespaces.join("|")
            ),
            start: at - Duration::hours(WINDOW_HOURS),
            end: at + Duration::minutes(5),
            step_secs: 300,
        },
        "the data stores' own metrics: memory against its maximum, evictions, lock waits, the \
         longest transaction",
    )
    .await;
    stores.into_iter().map(|(_, pod)| pod).collect()
}

/// Hours of a filling volume's and its database's growth read before the alert: enough to
/// see a slot that stopped being consumed a day or two ago.
pub const GROWTH_HOURS: i64 = 48;
/// The resolution of the growth series (one point an hour keeps two days in one excerpt).
const GROWTH_STEP_SECS: u32 = 3600;

/// What postgres_exporter publishes about a database's own growth on its volume: each
/// replication slot's retained WAL and whether a consumer reads it, and the database's size.
pub const DATABASE_GROWTH_METRICS: &[(&str, &str)] = &[
    (
        slots::RETAINED,
        "the WAL each replication slot of the database retains",
    ),
    (
        slots::ACTIVE,
        "whether a consumer reads each replication slot",
    ),
    (slots::SIZE, "the database's own size"),
];

/// A filling volume's growth: the claim's free bytes over [`GROWTH_HOURS`] (how fast it fills,
/// when it is full), and, when `database_pod` runs a database on it, that database's own growth
/// series selected by the pod and its namespace, one request each.
pub async fn growth<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    claim: &str,
    database_pod: Option<&str>,
    at: Option<DateTime<Utc>>,
) {
    let at = at.unwrap_or_else(Utc::now);
    let start = at - Duration::hours(GROWTH_HOURS);
    let end = at + Duration::minutes(5);
    c.fetch(
        CapabilityRequest::MetricRange {
            query: format!(
                "kubelet_volume_stats_available_bytes{{namespace=\"{namespace}\", \
                 persistentvolumeclaim=\"{claim}\"}}"
            ),
            start,
            end,
            step_secs: GROWTH_STEP_SECS,
        },
        format!(
            "claim `{claim}`'s free bytes over {GROWTH_HOURS} h: how fast it fills, and when it \
             is full at this rate"
        ),
    )
    .await;
    let Some(pod) = database_pod else {
        return;
    };
    for (metric, what) in DATABASE_GROWTH_METRICS {
        c.fetch(
            CapabilityRequest::MetricRange {
                query: format!("{metric}{{namespace=\"{namespace}\", pod=\"{pod}\"}}"),
                start,
                end,
                step_secs: GROWTH_STEP_SECS,
            },
            format!("database `{pod}` writes claim `{claim}`: {what}, over the span it filled"),
        )
        .await;
    }
}

/// The in-cluster hosts the values of a ConfigMap's `data` name, each read as the setting
/// its key is ([`hosts_in`]).
pub fn configured_hosts(text: &str) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for object in kube::objects(text) {
        let Some(data) = object.get("data").and_then(serde_json::Value::as_object) else {
            continue;
        };
        for (key, value) in data {
            for host in value
                .as_str()
                .map(|v| hosts_in(Some(key), v))
                .unwrap_or_default()
            {
                if !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
        }
    }
    hosts
}

/// Whether a pod runs a data store.
fn runs_a_store(pod: &serde_json::Value) -> bool {
    pod.pointer("/spec/containers")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| kube::str_at(c, "/image"))
        .any(is_store_image)
}

/// The pod behind a host: a Service's first pod by its selector, or the pod a headless
/// Service's name names.
async fn resolve<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    namespace: &str,
    host: &str,
) -> Option<(String, String)> {
    let (host, _) = split_endpoint(host);
    match host_name(&host) {
        HostName::ServicePod { namespace, pod, .. } => Some((namespace, pod)),
        HostName::Service {
            namespace: ns,
            name,
        } => {
            let ns = ns.unwrap_or_else(|| namespace.to_string());
            let described = c
                .fetch(
                    CapabilityRequest::ObjectGet {
                        namespace: Some(ns.clone()),
                        kind: "Service".into(),
                        name: name.clone(),
                    },
                    format!("data store `{host}` the client's spec or log names: its Service"),
                )
                .await?;
            let selector = selector_of(&described)?;
            let listed = c
                .fetch(
                    CapabilityRequest::PodList {
                        namespace: ns.clone(),
                        label_selector: Some(selector.clone()),
                    },
                    format!("the pods behind Service `{name}` (`{selector}`)"),
                )
                .await?;
            let mut pods = kube::pods_in_list(&listed);
            kube::rank_pods(&mut pods);
            pods.into_iter().next().map(|p| (ns, p.name))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_images_and_not_their_exporters() {
        assert!(is_store_image("docker.io/library/redis:7.2.5-alpine"));
        assert!(is_store_image(
            "registry.example.com/platform/postgres:16.4-bookworm"
        ));
        assert!(is_store_image("memcached:1.6.29"));
        assert!(is_store_image("bitnami/mysql@sha256:abc"));
        assert!(!is_store_image("oliver006/redis_exporter:v1.62.0"));
        assert!(!is_store_image(
            "quay.io/prometheuscommunity/postgres-exporter:v0.15.0"
        ));
        assert!(!is_store_image(
            "registry.example.com/inventory/inventory-api:7.4.0"
        ));
    }

    #[test]
    fn a_configmap_names_the_stores_by_url_and_by_host_keys() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"checkout-env"},"data":{"REDIS_URL":"redis://cart-redis:6379/1","DB_HOST":"checkout-pg.shop.svc","DB_PORT":"5432","PAYMENTS_URL":"https://api.stripe.com","LOG_LEVEL":"info"}}"#;
        let mut hosts = configured_hosts(text);
        hosts.sort();
        assert_eq!(hosts, ["cart-redis:6379", "checkout-pg.shop.svc"]);
    }
}
