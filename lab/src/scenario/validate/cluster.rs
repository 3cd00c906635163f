//! Checks of the cluster around the workloads: pod IPs (unique, and only on scheduled pods),
//! Ingress paths and ports, NetworkPolicy types and rules, PodDisruptionBudget budgets and
//! node journals. Types serde already checks (an `ip` that is no IPv4 address) are not
//! repeated here.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::{Problem, problem};
use crate::scenario::ScenarioSpec;
use crate::scenario::network::PortRef;
use crate::scenario::policy::IntOrPercent;

/// Checks the cluster objects of a parsed scenario.
pub(super) fn validate_cluster(spec: &ScenarioSpec) -> Result<(), Problem> {
    validate_pod_ips(spec)?;
    validate_ingresses(spec)?;
    validate_network_policies(spec)?;
    validate_budgets(spec)?;
    validate_journals(spec)
}

/// A stated pod IP belongs to one scheduled pod: Kubernetes gives an IP to a pod's sandbox on
/// its node, and two pods sharing one would make Endpoints ambiguous.
fn validate_pod_ips(spec: &ScenarioSpec) -> Result<(), Problem> {
    let mut seen: BTreeMap<Ipv4Addr, usize> = BTreeMap::new();
    for (i, pod) in spec.pods.iter().enumerate() {
        let Some(ip) = pod.ip else {
            continue;
        };
        let field = format!("pods[{i}].ip");
        if pod.node.is_none() {
            return problem(field, "a pod without `node` is not scheduled and has no IP");
        }
        if ip.is_unspecified() || ip.is_broadcast() {
            return problem(field, "is not a pod address");
        }
        if let Some(first) = seen.insert(ip, i) {
            return Err((
                field,
                format!(
                    "{ip} is also the IP of pods[{first}] ({}); pod IPs are unique",
                    spec.pods[first].name
                ),
            ));
        }
    }
    Ok(())
}

/// An IANA service name, as a port name must be: 1–15 lowercase letters, digits and inner
/// single dashes, with at least one letter.
fn port_name_ok(name: &str) -> bool {
    (1..=15).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn validate_ingresses(spec: &ScenarioSpec) -> Result<(), Problem> {
    for (i, ingress) in spec.ingresses.iter().enumerate() {
        // The API server refuses an Ingress with neither rules nor a default backend, and the
        // lab serves no default backend.
        if ingress.rules.is_empty() {
            return problem(format!("ingresses[{i}].rules"), "needs at least one rule");
        }
        for (j, rule) in ingress.rules.iter().enumerate() {
            for (k, path) in rule.paths.iter().enumerate() {
                let field = format!("ingresses[{i}].rules[{j}].paths[{k}]");
                if path.path.as_deref().is_some_and(|p| !p.starts_with('/')) {
                    return problem(format!("{field}.path"), "must be an absolute path (`/…`)");
                }
                if path
                    .path_type
                    .as_deref()
                    .is_some_and(|t| !matches!(t, "Prefix" | "Exact" | "ImplementationSpecific"))
                {
                    return problem(
                        format!("{field}.pathType"),
                        "must be Prefix, Exact or ImplementationSpecific",
                    );
                }
                let port_ok = match &path.port {
                    PortRef::Number(n) => *n > 0,
                    PortRef::Name(name) => port_name_ok(name),
                };
                if !port_ok {
                    return problem(
                        format!("{field}.port"),
                        "must be a port number (1-65535) or a port name (lowercase, at most 15 characters)",
                    );
                }
            }
        }
    }
    Ok(())
}

fn validate_network_policies(spec: &ScenarioSpec) -> Result<(), Problem> {
    for (i, policy) in spec.networkpolicies.iter().enumerate() {
        for (j, kind) in policy.policy_types.iter().enumerate() {
            if !matches!(kind.as_str(), "Ingress" | "Egress") {
                return problem(
                    format!("networkpolicies[{i}].policyTypes[{j}]"),
                    "must be Ingress or Egress",
                );
            }
            if policy.policy_types[..j].contains(kind) {
                return problem(
                    format!("networkpolicies[{i}].policyTypes[{j}]"),
                    "is listed twice",
                );
            }
        }
        for (key, rules) in [("ingress", &policy.ingress), ("egress", &policy.egress)] {
            if let Some(j) = rules.iter().position(|r| !r.is_object()) {
                return problem(
                    format!("networkpolicies[{i}].{key}[{j}]"),
                    "a rule is a mapping (`from` / `to`, `ports`; `{}` allows everything)",
                );
            }
        }
    }
    Ok(())
}

fn validate_budgets(spec: &ScenarioSpec) -> Result<(), Problem> {
    for (i, budget) in spec.poddisruptionbudgets.iter().enumerate() {
        let field = format!("poddisruptionbudgets[{i}]");
        let (budget_key, value) = match (&budget.min_available, &budget.max_unavailable) {
            (Some(min), None) => ("minAvailable", min),
            (None, Some(max)) => ("maxUnavailable", max),
            _ => {
                return problem(field, "set exactly one of minAvailable, maxUnavailable");
            }
        };
        if matches!(value, IntOrPercent::Percent(_)) && value.percent().is_none() {
            return problem(
                format!("{field}.{budget_key}"),
                "must be a number or a percentage from 0% to 100% (\"50%\")",
            );
        }
    }
    Ok(())
}

fn validate_journals(spec: &ScenarioSpec) -> Result<(), Problem> {
    for (i, node) in spec.nodes.iter().enumerate() {
        for (j, line) in node.journal.iter().enumerate() {
            if line.unit.as_deref().is_some_and(|u| u.trim().is_empty()) {
                return problem(
                    format!("nodes[{i}].journal[{j}].unit"),
                    "must not be empty (leave it out for `kubelet`)",
                );
            }
        }
    }
    Ok(())
}
