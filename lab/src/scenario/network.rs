//! networking.k8s.io/v1 objects: Ingresses (host and path rules to Service ports, TLS) and
//! NetworkPolicies (which pods may talk to which). Both are served as written; the lab routes
//! and enforces nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An Ingress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngressSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub ingress_class_name: Option<String>,
    #[serde(default)]
    pub rules: Vec<IngressRuleSpec>,
    #[serde(default)]
    pub tls: Vec<IngressTlsSpec>,
}

/// A host's HTTP paths (no host: every host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressRuleSpec {
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub paths: Vec<IngressPathSpec>,
}

/// A path routed to a Service port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngressPathSpec {
    /// Default `/`.
    #[serde(default)]
    pub path: Option<String>,
    /// `Prefix` (default), `Exact` or `ImplementationSpecific`.
    #[serde(default)]
    pub path_type: Option<String>,
    /// The backend Service (need not be listed: a missing one is an incident too).
    pub service: String,
    pub port: PortRef,
}

/// A Service port by number or by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, expecting = "a port number (1-65535) or a port name")]
pub enum PortRef {
    Number(u16),
    Name(String),
}

/// Hosts served over TLS with a Secret's certificate (the Secret itself is never served).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngressTlsSpec {
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default)]
    pub secret_name: Option<String>,
}

/// A NetworkPolicy; `ingress` and `egress` rules are copied into its spec verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    pub name: String,
    pub namespace: String,
    /// `spec.podSelector.matchLabels`; empty selects every pod of the namespace.
    #[serde(default)]
    pub pod_selector: BTreeMap<String, String>,
    /// `Ingress` and/or `Egress`; default as the API server defaults it: `Ingress`, plus
    /// `Egress` when there are egress rules.
    #[serde(default)]
    pub policy_types: Vec<String>,
    /// Rules (`{from: […], ports: […]}`), served as `spec.ingress`.
    #[serde(default)]
    pub ingress: Vec<Value>,
    /// Rules (`{to: […], ports: […]}`), served as `spec.egress`.
    #[serde(default)]
    pub egress: Vec<Value>,
}

impl NetworkPolicySpec {
    /// The policy types as served.
    pub fn policy_types(&self) -> Vec<String> {
        if !self.policy_types.is_empty() {
            return self.policy_types.clone();
        }
        let mut types = vec!["Ingress".to_string()];
        if !self.egress.is_empty() {
            types.push("Egress".into());
        }
        types
    }
}
