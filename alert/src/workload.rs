//! Deriving the owning workload from a pod name.
//!
//! A Deployment's pods are named `<deployment>-<pod-template-hash>-<suffix>`, where both the
//! hash and the 5-character suffix are drawn from Kubernetes' "safe" alphabet (no vowels, no
//! `0`, `1`, `3`), so the shape is specific enough to strip without guessing. Other shapes
//! (StatefulSet `name-0`, Job/DaemonSet `name-abcde`) are ambiguous and are not derived.

use std::sync::LazyLock;

use regex::Regex;

/// `SafeEncodeString` alphabet from k8s.io/apimachinery/pkg/util/rand.
const SAFE: &str = "bcdfghjklmnpqrstvwxz2456789";

static REPLICASET_POD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^([a-z0-9][a-z0-9.-]*?)-([{SAFE}]{{6,10}})-([{SAFE}]{{5}})$"
    ))
    .expect("static regex")
});

static REPLICASET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^([a-z0-9][a-z0-9.-]*?)-([{SAFE}]{{6,10}})$")).expect("static regex")
});

/// The Deployment that owns a pod named like `payments-api-7d9f8c6b5-x2k4q` → `payments-api`.
pub fn deployment_from_pod_name(pod: &str) -> Option<String> {
    let caps = REPLICASET_POD.captures(pod)?;
    // A hash must contain a digit: without this, `my-service-backend-worker` would look like
    // `<name>-<hash>-<suffix>` whenever its last two words happen to avoid vowels.
    if !caps[2].bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(caps[1].to_string())
}

/// The Deployment that owns a ReplicaSet named like `payments-api-7d9f8c6b5` → `payments-api`.
pub fn deployment_from_replicaset_name(replicaset: &str) -> Option<String> {
    let caps = REPLICASET.captures(replicaset)?;
    if !caps[2].bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(caps[1].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_replicaset_hash_and_suffix() {
        for (pod, deployment) in [
            ("payments-api-7d9f8c6b5-x2k4q", "payments-api"),
            (
                "analytics-exporter-fast-76897854c-cw5wh",
                "analytics-exporter-fast",
            ),
            (
                "db-certs-authenticator-757f89d977-795x7",
                "db-certs-authenticator",
            ),
            (
                "customer-relations-webapp-5d98ffcfd-tz4nc",
                "customer-relations-webapp",
            ),
        ] {
            assert_eq!(deployment_from_pod_name(pod).as_deref(), Some(deployment));
        }
    }

    #[test]
    fn does_not_guess_for_other_shapes() {
        for pod in [
            "logging-agent",
            "java-api-checker-2lhkn",
            "alertmanager-main-0",
            "web-backend-worker",
            "api-aeiou12-x2k4q",
        ] {
            assert_eq!(deployment_from_pod_name(pod), None, "{pod}");
        }
    }

    #[test]
    fn strips_replicaset_hash() {
        assert_eq!(
            deployment_from_replicaset_name("payments-api-7d9f8c6b5").as_deref(),
            Some("payments-api")
        );
        assert_eq!(deployment_from_replicaset_name("payments-api"), None);
    }
}
