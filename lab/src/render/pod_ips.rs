//! Pod IPs: the one a pod states (`pods[].ip`), else one derived from its name — a hash into
//! the pod network 10.244.0.0/16 — so a pod keeps its IP whatever else the scenario lists or
//! when it runs, and a scenario can quote it (a readiness probe's `Get "http://10.244.…"`).
//!
//! Derived host parts stay in 1–254, so no IP looks like a node's /24 network or broadcast
//! address. Stated IPs are reserved first; then pods take derived ones in name order, a pod
//! whose IP is taken moving to the next free one: collisions resolve the same way every time,
//! whatever order the pods are listed in. Only scheduled pods have an IP.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use crate::scenario::PodSpec;

/// Host parts per third octet (1–254).
const HOSTS: u32 = 254;
/// Addresses derived IPs are drawn from: 256 third octets × 254 host parts.
const SPACE: u32 = 256 * HOSTS;

/// FNV-1a: stable across runs and platforms (std's hasher is neither).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The `slot`th address of the derived space.
fn address(slot: u32) -> Ipv4Addr {
    let third = u8::try_from(slot / HOSTS).unwrap_or(u8::MAX);
    let host = u8::try_from(slot % HOSTS + 1).unwrap_or(1);
    Ipv4Addr::new(10, 244, third, host)
}

/// The IP a pod named `name` gets when it is free.
pub fn derived_ip(name: &str) -> Ipv4Addr {
    address(slot_of(name))
}

fn slot_of(name: &str) -> u32 {
    // SPACE fits in u32, so the remainder does too.
    u32::try_from(fnv1a(name) % u64::from(SPACE)).unwrap_or(0)
}

/// Every scheduled pod's IP, by its index in `pods`.
pub fn assign(pods: &[PodSpec]) -> BTreeMap<usize, Ipv4Addr> {
    let scheduled = || pods.iter().enumerate().filter(|(_, p)| p.node.is_some());
    let mut ips: BTreeMap<usize, Ipv4Addr> = scheduled()
        .filter_map(|(i, p)| p.ip.map(|ip| (i, ip)))
        .collect();
    let mut taken: BTreeSet<Ipv4Addr> = ips.values().copied().collect();
    let mut derived: Vec<(usize, &PodSpec)> = scheduled().filter(|(_, p)| p.ip.is_none()).collect();
    derived.sort_by(|(i, a), (j, b)| (&a.name, &a.namespace, i).cmp(&(&b.name, &b.namespace, j)));
    for (i, pod) in derived {
        let start = slot_of(&pod.name);
        // Bounded: a scenario with more pods than addresses leaves the rest without an IP.
        let free = (0..SPACE)
            .map(|step| address((start + step) % SPACE))
            .find(|ip| !taken.contains(ip));
        if let Some(ip) = free {
            taken.insert(ip);
            ips.insert(i, ip);
        }
    }
    ips
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, node: Option<&str>, ip: Option<&str>) -> PodSpec {
        let yaml = format!("{{name: {name}, namespace: n, containers: [{{name: c, image: i}}]}}");
        let mut pod: PodSpec = serde_norway::from_str(&yaml).unwrap();
        pod.node = node.map(String::from);
        pod.ip = ip.map(|ip| ip.parse().unwrap());
        pod
    }

    #[test]
    fn a_derived_ip_is_a_stable_hash_of_the_name_in_the_pod_network() {
        // Fixed: a scenario may quote it.
        assert_eq!(derived_ip("api-7c9-x2x7q").to_string(), "10.244.225.179");
        for name in ["a", "web-0", "cart-api-58d7c9f6b4-jq5xw"] {
            let [a, b, _, host] = derived_ip(name).octets();
            assert_eq!((a, b), (10, 244), "{name}");
            assert!((1..=254).contains(&host), "{name}");
        }
        assert_ne!(derived_ip("web-0"), derived_ip("web-1"));
    }

    #[test]
    fn stated_ips_win_and_collisions_resolve_the_same_in_any_order() {
        let taken = derived_ip("web-0").to_string();
        let pods = vec![
            pod("web-0", Some("n1"), None),
            pod("pinned", Some("n1"), Some(&taken)),
            pod("pending", None, None),
        ];
        let ips = assign(&pods);
        assert_eq!(ips[&1].to_string(), taken, "the stated IP is kept");
        assert_ne!(ips[&0], ips[&1], "web-0 moves on");
        assert!(!ips.contains_key(&2), "an unscheduled pod has no IP");
        let reversed: Vec<PodSpec> = pods.iter().rev().cloned().collect();
        let again = assign(&reversed);
        assert_eq!(
            again[&2], ips[&0],
            "web-0's IP does not depend on the order"
        );

        // Two pods with the same name in different namespaces hash alike: name order, then
        // namespace order, decides who moves.
        let mut twin = pod("web-0", Some("n2"), None);
        twin.namespace = "a".into();
        let ips = assign(&[pod("web-0", Some("n1"), None), twin]);
        assert_eq!(ips[&1], derived_ip("web-0"));
        assert_ne!(ips[&0], ips[&1]);
    }
}
