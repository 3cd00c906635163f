//! Leads: what a finding says to read next. A client that cannot use `orders-db:5432` points at
//! that Service's Endpoints and pods; a pod evicted from a node points at the node; pods the
//! scheduler keeps off nodes tainted `not-ready` point at the nodes carrying that taint.
//!
//! A lead names an object, never a request: the investigation decides how to read it (the
//! calls, their order, the budget), so a detector stays evidence in, findings and leads out.

use serde::{Deserialize, Serialize};

/// An object a finding points at, to be read next.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "lead", rename_all = "snake_case")]
pub enum Lead {
    /// A host a client talks to, as its log names it: a Service's DNS name (`orders-db`,
    /// `orders-db.shop.svc.cluster.local`), a StatefulSet pod's (`db-0.db-headless.shop.svc`)
    /// or an address (a Service's cluster IP, a pod's IP). `namespace` is the client's, for a
    /// short name.
    Host {
        host: String,
        port: Option<u16>,
        namespace: Option<String>,
    },
    /// A node: its conditions, taints and events, and its journal.
    Node { name: String },
    /// The nodes carrying a taint (`node.kubernetes.io/not-ready`): which ones, and why.
    NodesTainted { key: String },
    /// A pod another object names (an event's, a log's).
    Pod { namespace: String, name: String },
    /// The other containers of a pod whose log cannot reach `localhost:port`: the sidecar that
    /// serves it (a database proxy, a mesh proxy) says why.
    Sidecars { pod: String, port: Option<u16> },
    /// The node a client pod runs on, when its calls time out toward several destinations.
    ClientNode { pod: String },
    /// The logs of failing pods and of a healthy sibling of the same workload, to compare what
    /// they say (the settings a process logs at start: its heap, its CPUs, its config).
    CompareLogs {
        failing: Vec<String>,
        healthy: String,
    },
    /// The NetworkPolicies of a namespace whose Service is ready while a client's connections
    /// to it fail: whether they admit that client.
    Policies { namespace: String },
    /// The Jobs of every namespace: which started just before something rose.
    JobsStarted,
    /// The certificates issued anew in the alert's namespace (cert-manager's events): a
    /// certificate that fails verification after working was usually just replaced.
    CertificatesIssued,
    /// The data stores a client waits on without naming them in the failing line (slow
    /// queries, cache misses): the hosts its line or its spec names (`REDIS_URL`,
    /// `DATABASE_HOST`), else those the ConfigMaps it takes in name, else the cache and
    /// database pods of its namespace; their logs and their own metrics (memory against its
    /// maximum, evictions, lock waits) around `at`.
    DataStores {
        namespace: String,
        hosts: Vec<String>,
        #[serde(default)]
        config_maps: Vec<String>,
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// A filling volume's own growth: the claim's free bytes over the last two days (how fast
    /// it fills, when it is full), and, when a pod that mounts it runs a database, that
    /// database's own growth series selected by the pod (each replication slot's retained WAL
    /// and whether it is active, the database's size) over the same span.
    VolumeGrowth {
        namespace: String,
        claim: String,
        database_pod: Option<String>,
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
}

impl Lead {
    /// The lead in a few words, for the plan.
    pub fn label(&self) -> String {
        match self {
            Lead::Host { host, port, .. } => match port {
                Some(port) => format!("host `{host}:{port}`"),
                None => format!("host `{host}`"),
            },
            Lead::Node { name } => format!("node `{name}`"),
            Lead::NodesTainted { key } => format!("nodes tainted `{key}`"),
            Lead::Pod { namespace, name } => format!("pod `{namespace}/{name}`"),
            Lead::ClientNode { pod } => format!("the node pod `{pod}` runs on"),
            Lead::CertificatesIssued => "certificates issued anew in the namespace".to_string(),
            Lead::Policies { namespace } => format!("the NetworkPolicies of `{namespace}`"),
            Lead::DataStores {
                namespace,
                hosts,
                config_maps,
                ..
            } => match hosts.as_slice() {
                [] if !config_maps.is_empty() => format!(
                    "the data stores ConfigMap `{}` names, else the caches and databases of \
                     `{namespace}`",
                    config_maps.join("`, `")
                ),
                [] => format!("the caches and databases of `{namespace}`"),
                hosts => format!(
                    "the data stores `{}` (from the client's spec)",
                    hosts.join("`, `")
                ),
            },
            Lead::JobsStarted => "the Jobs that started when it rose".to_string(),
            Lead::VolumeGrowth {
                claim,
                database_pod,
                ..
            } => match database_pod {
                Some(pod) => format!(
                    "how fast claim `{claim}` fills, and the growth of the database in pod \
                     `{pod}` (replication slots' retained WAL, its size)"
                ),
                None => format!("how fast claim `{claim}` fills"),
            },
            Lead::CompareLogs { healthy, .. } => {
                format!("the failing pods' logs beside healthy `{healthy}`'s")
            }
            Lead::Sidecars { pod, port } => match port {
                Some(port) => {
                    format!("the containers beside the client in pod `{pod}` (port {port})")
                }
                None => format!("the containers beside the client in pod `{pod}`"),
            },
        }
    }
}

/// Where a host name points inside the cluster, read from its shape alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostName {
    /// A Service: `name`, `name.ns`, `name.ns.svc`, `name.ns.svc.cluster.local`.
    Service {
        namespace: Option<String>,
        name: String,
    },
    /// One pod behind a headless Service: `pod.service.ns.svc.cluster.local`.
    ServicePod {
        namespace: String,
        service: String,
        pod: String,
    },
    /// An IPv4 address: a Service's cluster IP or a pod's IP.
    Address(String),
    /// The pod itself (`localhost`, `127.0.0.1`): a sidecar or the same container.
    Loopback,
    /// A name outside the cluster (`api.fxprovider.example`).
    External,
}

/// Endings of public names, so `example.com` is not read as Service `example` in namespace
/// `com`.
const TOP_LEVEL: &[&str] = &[
    "com", "net", "org", "io", "dev", "app", "cloud", "example", "internal", "local", "co", "ai",
    "eu", "us", "uk", "de", "fr",
];

/// Reads a host's shape: in-cluster DNS names as Kubernetes builds them, addresses, the rest
/// external. A bare single label (`redis-master`) is a Service in the client's namespace.
pub fn host_name(host: &str) -> HostName {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    if host == "localhost" || host == "::1" {
        return HostName::Loopback;
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return if ip.is_loopback() {
            HostName::Loopback
        } else {
            HostName::Address(host)
        };
    }
    let labels: Vec<&str> = host.split('.').collect();
    let valid = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
    };
    if labels.is_empty() || !labels.iter().all(valid) {
        return HostName::External;
    }
    // Strip the cluster suffix: `svc.cluster.local`, `svc.<domain>` or `svc`.
    let svc_at = labels.iter().position(|l| *l == "svc");
    let names: &[&str] = match svc_at {
        Some(at) => &labels[..at],
        None if labels.len() == 1 => &labels,
        None if labels.len() == 2 && !TOP_LEVEL.contains(&labels[1]) => &labels,
        None => return HostName::External,
    };
    match names {
        [name] if svc_at.is_none() => HostName::Service {
            namespace: None,
            name: (*name).to_string(),
        },
        [name, namespace] => HostName::Service {
            namespace: Some((*namespace).to_string()),
            name: (*name).to_string(),
        },
        [pod, service, namespace] if svc_at.is_some() => HostName::ServicePod {
            namespace: (*namespace).to_string(),
            service: (*service).to_string(),
            pod: (*pod).to_string(),
        },
        _ => HostName::External,
    }
}

/// The hosts (and ports) of the URLs a text names (`https://auth.example.com:8443/realms/x` →
/// `auth.example.com`, 8443), lowercased, in order.
pub fn url_hosts(text: &str) -> Vec<(String, Option<u16>)> {
    static URL_HOST: std::sync::LazyLock<regex::Regex> = regex!(
        r"(?i)\bhttps?://([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)(?::(\d{2,5}))?"
    );
    URL_HOST
        .captures_iter(text)
        .map(|c| {
            (
                c[1].to_ascii_lowercase(),
                c.get(2).and_then(|p| p.as_str().parse().ok()),
            )
        })
        .collect()
}

/// In-cluster DNS names a line mentions (`orders-db.shop.svc.cluster.local:5432`), with their
/// ports.
pub fn service_hosts(text: &str) -> Vec<(String, Option<u16>)> {
    static SERVICE_HOST: std::sync::LazyLock<regex::Regex> = regex!(
        r"(?i)\b((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+svc(?:\.cluster\.local)?)(?::(\d{2,5}))?\b"
    );
    SERVICE_HOST
        .captures_iter(text)
        .map(|c| {
            (
                c[1].to_ascii_lowercase(),
                c.get(2).and_then(|p| p.as_str().parse().ok()),
            )
        })
        .collect()
}

/// Whether a `name:number` is a source location a log line prints (`batch.go:96`,
/// `views.py:212`), not a host and a port.
pub fn is_source_location(host: &str) -> bool {
    const SOURCE: &[&str] = &[
        "go", "py", "java", "kt", "scala", "rs", "js", "ts", "mjs", "rb", "php", "c", "cc", "cpp",
        "h", "hpp", "cs", "ex", "exs", "erl", "swift",
    ];
    host.rsplit_once('.')
        .is_some_and(|(_, ext)| SOURCE.contains(&ext.to_ascii_lowercase().as_str()))
}

/// Whether a lead to `host` can read anything: not the pod itself.
pub fn worth_following(host: &str) -> bool {
    host_name(host) != HostName::Loopback
}

/// Whether `endpoint` (`host:port` or a host) names Service `service`: by its DNS name, or by
/// its cluster IP when that is known.
pub fn names_service(endpoint: &str, service: &str, cluster_ip: Option<&str>) -> bool {
    let (host, _) = split_endpoint(endpoint);
    match host_name(&host) {
        HostName::Address(ip) => cluster_ip == Some(ip.as_str()),
        HostName::Service { name, .. } => name == service,
        _ => false,
    }
}

/// `host:port` → the host and the port, when the text names one.
pub fn split_endpoint(endpoint: &str) -> (String, Option<u16>) {
    match endpoint.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host.to_string(), Some(port)),
            Err(_) => (endpoint.to_string(), None),
        },
        _ => (endpoint.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_in_every_form_kubernetes_resolves() {
        let service = |ns: Option<&str>, name: &str| HostName::Service {
            namespace: ns.map(str::to_string),
            name: name.to_string(),
        };
        assert_eq!(host_name("redis-master"), service(None, "redis-master"));
        assert_eq!(
            host_name("orders-db.shop"),
            service(Some("shop"), "orders-db")
        );
        assert_eq!(
            host_name("orders-db.shop.svc"),
            service(Some("shop"), "orders-db")
        );
        assert_eq!(
            host_name("Orders-DB.shop.svc.cluster.local."),
            service(Some("shop"), "orders-db")
        );
        assert_eq!(
            host_name("session-redis-0.session-redis-headless.shop.svc.cluster.local"),
            HostName::ServicePod {
                namespace: "shop".into(),
                service: "session-redis-headless".into(),
                pod: "session-redis-0".into(),
            }
        );
    }

    #[test]
    fn addresses_and_outside_names() {
        assert_eq!(
            host_name("10.96.14.7"),
            HostName::Address("10.96.14.7".into())
        );
        assert_eq!(host_name("api.fxprovider.example"), HostName::External);
        assert_eq!(host_name("localhost"), HostName::Loopback);
        assert_eq!(host_name("127.0.0.1"), HostName::Loopback);
        assert_eq!(host_name("stripe.com"), HostName::External);
        assert_eq!(host_name("db_primary"), HostName::External);
        assert_eq!(host_name("a.b.c.d.svc.cluster.local"), HostName::External);
    }

    #[test]
    fn source_locations_are_not_hosts() {
        assert!(is_source_location("batch.go"));
        assert!(is_source_location("views.py"));
        assert!(!is_source_location("orders-db.shop.svc"));
        assert!(!is_source_location("10.96.0.10"));
    }

    #[test]
    fn endpoints_split_into_host_and_port() {
        assert_eq!(
            split_endpoint("orders-db.shop.svc:5432"),
            ("orders-db.shop.svc".to_string(), Some(5432))
        );
        assert_eq!(split_endpoint("redis"), ("redis".to_string(), None));
        assert_eq!(split_endpoint("host:http"), ("host:http".to_string(), None));
    }
}
