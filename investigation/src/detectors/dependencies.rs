//! Dependencies an application cannot reach: connections refused, reset or timing out, DNS
//! lookups that fail or time out, and calls to a named endpoint that time out waiting for the
//! answer (the other end is slow), one finding per endpoint, from application logs.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Dependency`] | cause | as any log line (`logscan.rs`): a crash it ends, or repeated under a service-level alert |
//!
//! What explains what: an unreachable dependency explains its clients' errors and latency (the
//! alert's symptom directly), and its pod's exits, crash loop, crash line and failing
//! readiness probe. DNS lookups that time out at the cluster DNS are explained in turn by a
//! CPU-throttled CoreDNS (`throttling.rs`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::lead::{
    HostName, Lead, host_name, is_source_location, service_hosts, split_endpoint, worth_following,
};
use super::logscan::{LogScan, repeats};
use super::text::{quote_deciding, quote_line};
use super::{Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, cite};
use crate::kube;

static DEPENDENCY: LazyLock<Regex> = regex!(
    r"(?i)connection refused|connection reset|connection timed out|connect(?:ion)? timeout|i/o timeout|could not connect|couldn't connect|failed to connect|unable to connect|cannot connect|can't connect|no route to host|host is unreachable|network is unreachable|all host\(s\) tried|\bECONNREFUSED\b|\bETIMEDOUT\b|\bEHOSTUNREACH\b|server closed the connection unexpectedly|could not translate host name|\bconnectexception\b|connect timed out|waiting for connection"
);
static TIMED_OUT: LazyLock<Regex> = regex!(
    r"(?i)i/o timeout|connection timed out|connect(?:ion)? timeout|\bETIMEDOUT\b|connect timed out|waiting for connection"
);
static DNS: LazyLock<Regex> = regex!(
    r"(?i)no such host|name or service not known|temporary failure in name resolution|could not resolve host|nodename nor servname|\bNXDOMAIN\b|server misbehaving|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|UnknownHostException|could not translate host name"
);
/// A call that timed out waiting for its answer, in the client libraries' words.
static SLOW: LazyLock<Regex> = regex!(
    r"context deadline exceeded|Client\.Timeout exceeded|timeout awaiting response headers|(?i:\bread timed out\b)|\bReadTimeout(?:Error|Exception)\b|SocketTimeoutException: Read timed out|HttpTimeoutException|\bESOCKETTIMEDOUT\b"
);
/// A lookup that reached the DNS server and got no answer in time (the server is slow or
/// overloaded, not the name wrong): `lookup x on 10.96.0.10:53: read udp …: i/o timeout`.
static DNS_TIMEOUT: LazyLock<Regex> =
    regex!(r"(?i)lookup \S+ on (\S+:53): .*(?:i/o timeout|timed out|timeout)");
static ENDPOINT: LazyLock<Regex> = regex!(
    r"\b((?:[A-Za-z][A-Za-z0-9-]*\.)*[A-Za-z][A-Za-z0-9-]*|\d{1,3}(?:\.\d{1,3}){3}):(\d{2,5})\b"
);
static DNS_HOST: LazyLock<Regex> = regex!(
    r#"(?i)(?:lookup|resolve host:?|host name|getaddrinfo \w+)\s+\\?"?([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])"#
);

/// How the dependency fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyFailure {
    /// Connections refused, reset, timing out or unroutable.
    Connect,
    /// The name does not resolve.
    DnsLookup,
    /// Lookups reach the DNS server and get no answer in time.
    DnsTimeout,
    /// Calls are accepted and time out waiting for the answer (`context deadline exceeded`,
    /// `Read timed out`): the other end is slow, not unreachable.
    Slow,
}

/// A dependency an application cannot reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dependency {
    pub pod: Option<String>,
    /// `host:port`, a host name or the DNS server (`10.96.0.10:53`), when the line names one.
    pub endpoint: Option<String>,
    pub failure: DependencyFailure,
    /// Lines of this log that show it.
    pub count: usize,
    /// The last of them, quoted.
    pub says: String,
    /// The Service the endpoint resolves to, when the round read it and its Endpoints list
    /// ready addresses: the other end is up, so the failure lies between (the client's node,
    /// the network, a policy), not in the dependency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_ready: Option<String>,
    /// That Service's namespace, when the round read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_namespace: Option<String>,
    /// The node the client pod runs on, when the round read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The same pod times out toward other destinations too (a database and DNS): what they
    /// share is the client's side — its node, its network — so that is where to look.
    #[serde(default)]
    pub client_side: bool,
}

impl Dependency {
    /// Whether the calls time out (no answer at all), rather than being refused or reset.
    pub fn timed_out(&self) -> bool {
        self.failure == DependencyFailure::DnsTimeout
            || (self.failure == DependencyFailure::Connect && TIMED_OUT.is_match(&self.says))
    }

    /// Whether its packets may be silently dropped on the way (a policy, a firewall): the
    /// connection times out, or the call waits out its deadline — which is how a client's
    /// library reports a peer that never answers the handshake too. A refused or reset
    /// connection was answered.
    pub fn may_be_dropped(&self) -> bool {
        self.failure == DependencyFailure::Slow
            || (self.failure == DependencyFailure::Connect && self.timed_out())
    }

    /// Whether the endpoint is the pod itself (`localhost`, `127.0.0.1`): a sidecar.
    fn to_sidecar(&self) -> bool {
        self.endpoint
            .as_deref()
            .is_some_and(|e| host_name(&split_endpoint(e).0) == HostName::Loopback)
    }

    /// The endpoint as a report names it.
    fn name(&self) -> &str {
        self.endpoint
            .as_deref()
            .unwrap_or("a dependency the log does not name")
    }
}

impl Payload for Dependency {
    const SPEC: KindSpec = KindSpec::read_from_log("dependency-connection");

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            endpoint: Some("10.20.0.7:5432".into()),
            failure: DependencyFailure::Connect,
            count: 3,
            says: "dial tcp 10.20.0.7:5432: connect: connection refused".into(),
            peer_ready: None,
            peer_namespace: None,
            node: None,
            client_side: false,
        }
    }

    /// A symptom when the other end is up (a ready Service) or is the pod itself (a sidecar
    /// on `localhost`): the failure is where the connection goes, and that side says why.
    fn role(&self) -> Role {
        if self.peer_ready.is_some() || self.to_sidecar() {
            Role::Symptom
        } else {
            Self::SPEC.role
        }
    }

    fn title(&self) -> String {
        if let (Some(service), DependencyFailure::Connect) = (&self.peer_ready, self.failure) {
            return format!(
                "Cannot connect to dependency {}, though Service `{service}` has ready endpoints",
                self.name()
            );
        }
        let endpoint = self.name();
        match self.failure {
            DependencyFailure::DnsTimeout => format!("DNS lookups time out at {endpoint}"),
            DependencyFailure::DnsLookup => format!("DNS resolution failing for {endpoint}"),
            DependencyFailure::Connect if self.endpoint.is_none() => {
                format!("Cannot connect to {endpoint}")
            }
            DependencyFailure::Connect => format!("Cannot connect to dependency {endpoint}"),
            DependencyFailure::Slow => {
                format!("Calls to dependency {endpoint} time out waiting for an answer")
            }
        }
    }

    fn detail(&self) -> String {
        let what = match self.failure {
            DependencyFailure::DnsTimeout => "DNS queries get no answer in time from",
            DependencyFailure::DnsLookup => "DNS lookups fail for",
            DependencyFailure::Connect => "connections fail to",
            DependencyFailure::Slow => "calls time out waiting for an answer from",
        };
        let times = if self.count == 1 {
            "once".to_string()
        } else {
            format!("{} times", self.count)
        };
        format!(
            "The log{} reports that {what} {} ({times}), last: `{}`",
            in_pod(self.pod.as_deref()),
            self.name(),
            self.says
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Endpoint, self.endpoint.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.endpoint.is_some() && self.endpoint == other.endpoint && self.failure == other.failure
    }

    fn step(&self, scene: &Scene) -> String {
        let ns = &scene.namespace;
        let endpoint = self.name();
        match self.failure {
            DependencyFailure::Connect => format!(
                "Check that {endpoint} is up and reachable from namespace `{ns}` (its pods, \
                 Service endpoints, NetworkPolicies)."
            ),
            DependencyFailure::DnsLookup => match &self.endpoint {
                Some(host) => format!(
                    "Check that `{host}` exists: a Service renamed or deleted, or a host name \
                     mistyped in the configuration (`kubectl get svc -A | grep {}`).",
                    host.split('.').next().unwrap_or(host)
                ),
                None => "Find the host name the log fails to resolve (the full log line names \
                         it), then check it exists: a Service renamed or deleted, or a host \
                         name mistyped in the configuration."
                    .to_string(),
            },
            DependencyFailure::DnsTimeout => format!(
                "Check the cluster DNS behind {endpoint}: CoreDNS pods' CPU throttling, restarts \
                 and load (`kubectl -n kube-system top pods -l k8s-app=kube-dns`)."
            ),
            DependencyFailure::Slow => format!(
                "Find why {endpoint} answers slowly: its pods' CPU, memory and garbage \
                 collection, its own slow-request log, and the load on it."
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        pod_failure_explains(self.pod.as_deref(), effect)
    }

    /// The other end of a connection that fails: the Service or pod the endpoint names.
    /// The other end: the endpoint, and any Service the line names by its DNS name (a client
    /// often logs both, `host=db.shop.svc … dial tcp 10.96.4.7:5432`).
    fn leads(&self) -> Vec<Lead> {
        // Its own node first when it times out everywhere, then the other end as usual.
        let client_node: Vec<Lead> = self
            .pod
            .iter()
            .filter(|_| self.client_side)
            .map(|pod| Lead::ClientNode { pod: pod.clone() })
            .collect();
        let (DependencyFailure::Connect | DependencyFailure::Slow, Some(endpoint)) =
            (&self.failure, &self.endpoint)
        else {
            return client_node;
        };
        if self.to_sidecar() {
            return self
                .pod
                .iter()
                .map(|pod| Lead::Sidecars {
                    pod: pod.clone(),
                    port: split_endpoint(endpoint).1,
                })
                .collect();
        }
        let named = service_hosts(&self.says);
        let hosts = std::iter::once(split_endpoint(endpoint))
            .chain(named)
            .filter(|(host, _)| worth_following(host))
            .map(|(host, port)| Lead::Host {
                host,
                port,
                namespace: None,
            });
        // Its Service is ready: what may stand between is a policy of that namespace.
        let policies = self
            .peer_ready
            .as_ref()
            .filter(|_| self.may_be_dropped())
            .and(self.peer_namespace.clone())
            .map(|namespace| Lead::Policies { namespace });
        client_node
            .into_iter()
            .chain(hosts)
            .chain(policies)
            .collect()
    }
}

fn is_dns(line: &str) -> bool {
    DNS.is_match(line) || DNS_TIMEOUT.is_match(line)
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let connect_repeats = repeats(round.evidence, |l| DEPENDENCY.is_match(l) && !is_dns(l));
    let slow_repeats = repeats(round.evidence, |l| {
        SLOW.is_match(l) && !DEPENDENCY.is_match(l) && !is_dns(l) && last_endpoint(l).is_some()
    });
    let dns_repeats = repeats(round.evidence, is_dns);
    let mut findings: Vec<Finding> = LogScan::all(round, false)
        .iter()
        .flat_map(|scan| dependency_errors(scan, connect_repeats, dns_repeats, slow_repeats))
        .collect();
    for finding in &mut findings {
        if let Fact::Dependency(d) = &mut finding.fact
            && matches!(
                d.failure,
                DependencyFailure::Connect | DependencyFailure::Slow
            )
        {
            let peer = d.endpoint.as_deref().and_then(|e| ready_service(round, e));
            (d.peer_ready, d.peer_namespace) = match peer {
                Some((name, namespace)) => (Some(name), namespace),
                None => (None, None),
            };
        }
    }
    // Timeouts from one pod toward several destinations point at the pod's own side.
    let timing_out = |d: &Dependency| d.endpoint.is_some() && d.timed_out();
    let mut per_pod: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for finding in &findings {
        if let Fact::Dependency(d) = &finding.fact
            && timing_out(d)
            && let (Some(pod), Some(endpoint)) = (&d.pod, &d.endpoint)
        {
            let seen = per_pod.entry(pod.clone()).or_default();
            if !seen.contains(endpoint) {
                seen.push(endpoint.clone());
            }
        }
    }
    let pods = round.pods();
    for finding in &mut findings {
        if let Fact::Dependency(d) = &mut finding.fact {
            d.node = d.pod.as_deref().and_then(|pod| {
                pods.iter()
                    .find(|(_, p)| crate::kube::str_at(p, "/metadata/name") == Some(pod))
                    .and_then(|(_, p)| crate::kube::str_at(p, "/spec/nodeName"))
                    .map(str::to_string)
            });
            d.client_side = timing_out(d)
                && d.pod
                    .as_ref()
                    .and_then(|pod| per_pod.get(pod))
                    .is_some_and(|destinations| destinations.len() >= 2);
        }
    }
    findings
}

/// The Service an endpoint (`host:port`) resolves to — by cluster IP, or by the name its DNS
/// name gives — when the round read it and its Endpoints list at least one ready address.
fn ready_service(round: &Round<'_>, endpoint: &str) -> Option<(String, Option<String>)> {
    let (host, _) = split_endpoint(endpoint);
    let (named, named_namespace) = match host_name(&host) {
        HostName::Service { name, namespace } => (Some(name), namespace),
        _ => (None, None),
    };
    let objects = round.parsed_objects();
    let (service, namespace) = objects.iter().find_map(|(_, o)| {
        (kube::str_at(o, "/kind") == Some("Service")).then_some(())?;
        let name = kube::str_at(o, "/metadata/name")?;
        let namespace = kube::str_at(o, "/metadata/namespace");
        let by_ip = kube::str_at(o, "/spec/clusterIP") == Some(host.as_str());
        // A name that says its namespace is that namespace's Service only.
        let by_name = named.as_deref() == Some(name)
            && named_namespace
                .as_deref()
                .is_none_or(|ns| namespace.is_none_or(|n| n == ns));
        (by_ip || by_name).then(|| (name.to_string(), namespace.map(str::to_string)))
    })?;
    let ready = objects.iter().any(|(_, o)| {
        kube::str_at(o, "/kind") == Some("Endpoints")
            && kube::str_at(o, "/metadata/name") == Some(service.as_str())
            && namespace
                .as_deref()
                .is_none_or(|ns| kube::str_at(o, "/metadata/namespace").is_none_or(|n| n == ns))
            && o.pointer("/subsets")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|subsets| {
                    subsets.iter().any(|s| {
                        s.get("addresses")
                            .and_then(serde_json::Value::as_array)
                            .is_some_and(|a| !a.is_empty())
                    })
                })
    });
    ready.then_some((service, namespace))
}

/// Connection and DNS failures in one log, one finding per endpoint.
fn dependency_errors(
    scan: &LogScan<'_>,
    connect_repeats: usize,
    dns_repeats: usize,
    slow_repeats: usize,
) -> Vec<Finding> {
    // endpoint → (failure, count, last line index, last line)
    let mut by_endpoint: BTreeMap<Option<String>, (DependencyFailure, usize, usize, &str)> =
        BTreeMap::new();
    for &(index, line) in &scan.lines {
        let (endpoint, failure) = if let Some(caps) = DNS_TIMEOUT.captures(line) {
            (Some(caps[1].to_string()), DependencyFailure::DnsTimeout)
        } else if DNS.is_match(line) {
            let host = DNS_HOST.captures(line).map(|c| c[1].to_string());
            (
                host.or_else(|| last_endpoint(line)),
                DependencyFailure::DnsLookup,
            )
        } else if DEPENDENCY.is_match(line) {
            (last_endpoint(line), DependencyFailure::Connect)
        } else if SLOW.is_match(line)
            && let Some(endpoint) = last_endpoint(line)
        {
            // Only a call to a named endpoint: a bare deadline names nothing to look at.
            (Some(endpoint), DependencyFailure::Slow)
        } else {
            continue;
        };
        let entry = by_endpoint
            .entry(endpoint)
            .or_insert((failure, 0, index, line));
        // A name that fails to resolve anywhere is a DNS failure, whatever else its lines say;
        // a connection that fails is more than a slow answer.
        if matches!(
            failure,
            DependencyFailure::DnsLookup | DependencyFailure::DnsTimeout
        ) || (failure == DependencyFailure::Connect && entry.0 == DependencyFailure::Slow)
        {
            entry.0 = failure;
        }
        entry.1 += 1;
        entry.2 = index;
        entry.3 = line;
    }
    by_endpoint
        .into_iter()
        .map(|(endpoint, (failure, count, index, line))| {
            let quote = [&*DNS_TIMEOUT, &*DNS, &*DEPENDENCY, &*SLOW]
                .into_iter()
                .find(|re| re.is_match(line))
                .map_or_else(|| quote_line(line), |re| quote_deciding(line, re));
            let class_repeats = match failure {
                DependencyFailure::Connect => connect_repeats,
                DependencyFailure::Slow => slow_repeats,
                _ => dns_repeats,
            };
            let (verified, confidence) = scan.class_strength(index, class_repeats);
            Finding::new(
                Dependency {
                    pod: scan.pod.clone(),
                    endpoint,
                    failure,
                    count,
                    says: quote.clone(),
                    peer_ready: None,
                    peer_namespace: None,
                    node: None,
                    client_side: false,
                },
                confidence,
                verified,
            )
            .citing(vec![cite(scan.evidence, quote)])
        })
        .collect()
}

/// The last `host:port` a line names.
fn last_endpoint(line: &str) -> Option<String> {
    ENDPOINT
        .captures_iter(line)
        .filter(|c| !is_source_location(&c[1]))
        .map(|c| format!("{}:{}", &c[1], &c[2]))
        .last()
}

#[cfg(test)]
mod tests;
