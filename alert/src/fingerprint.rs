//! An alert's identity for grouping repeats: what makes two notifications the *same alert* (a
//! repeat notification, a re-fire), as Alertmanager itself fingerprints an alert by its labels;
//! and the short name a list of an incident's alerts shows for it.

use sha2::{Digest, Sha256};

use crate::AlertTarget;

impl AlertTarget {
    /// The sha256 (hex) of the alert's identity and its labels, sorted; with no labels, of its
    /// identity and the objects it names. `None` when the message names no alert: such messages
    /// are never taken for repeats of one another.
    pub fn fingerprint(&self) -> Option<String> {
        let identity = self.identity()?.to_ascii_lowercase();
        let mut hasher = Sha256::new();
        let mut field = |key: &str, value: &str| {
            hasher.update(key.as_bytes());
            hasher.update([0x1f]);
            hasher.update(value.as_bytes());
            hasher.update([0x1e]);
        };
        field("identity", &identity);
        if self.labels.is_empty() {
            let named = [
                ("cluster", &self.cluster),
                ("namespace", &self.namespace),
                ("workload", &self.workload),
                ("pod", &self.pod),
                ("service", &self.service),
                ("node", &self.node),
                ("instance", &self.instance),
            ];
            for (key, value) in named {
                if let Some(value) = value {
                    field(key, value);
                }
            }
        } else {
            for (key, value) in &self.labels {
                field(key, value);
            }
        }
        Some(
            hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }
}

impl AlertTarget {
    /// The alert in a few words: its name and the object it is about (`KubePodNotReady
    /// shop/cart-web-5b8c7d9f6-w4n2h`, `KubeNodeNotReady worker-3`); `None` when it names
    /// nothing.
    pub fn short_name(&self) -> Option<String> {
        let identity = self.identity()?;
        let in_namespace = |name: &str| match self.namespace.as_deref() {
            Some(namespace) => format!("{namespace}/{name}"),
            None => name.to_string(),
        };
        let object = match (
            self.pod.as_deref(),
            self.workload.as_deref().filter(|_| !self.workload_derived),
            self.volume_claim.as_deref(),
            self.service.as_deref(),
            self.node.as_deref(),
        ) {
            (Some(pod), ..) => Some(in_namespace(pod)),
            (None, Some(workload), ..) => Some(in_namespace(workload)),
            (None, None, Some(claim), ..) => Some(in_namespace(claim)),
            (None, None, None, Some(service), _) => Some(in_namespace(service)),
            (None, None, None, None, Some(node)) => Some(node.to_string()),
            _ => self.namespace.clone(),
        };
        Some(match object {
            Some(object) => format!("{identity} {object}"),
            None => identity.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_alert;

    const CRASH: &str = "[FIRING:1] KubePodCrashLooping (payments api-7d9f8c6b5-x2k4q)\n\
        *Details:*\n  • *alertname:* `KubePodCrashLooping`\n  • *namespace:* `payments`\n  \
        • *pod:* `api-7d9f8c6b5-x2k4q`\n  • *severity:* `warning`";

    #[test]
    fn a_repeat_notification_is_the_same_alert_and_another_pod_is_not() {
        let first = parse_alert(CRASH).fingerprint();
        assert!(first.as_ref().is_some_and(|f| f.len() == 64));
        assert_eq!(parse_alert(CRASH).fingerprint(), first);
        let other_pod = CRASH.replace("x2k4q", "h8r2m");
        assert_ne!(parse_alert(&other_pod).fingerprint(), first);
        let other_alert = CRASH.replace("KubePodCrashLooping", "KubePodNotReady");
        assert_ne!(parse_alert(&other_alert).fingerprint(), first);
    }

    #[test]
    fn a_short_name_is_the_alert_and_its_object() {
        assert_eq!(
            parse_alert(CRASH).short_name().as_deref(),
            Some("KubePodCrashLooping payments/api-7d9f8c6b5-x2k4q")
        );
        let node = parse_alert(
            "[FIRING:1] KubeNodeNotReady (worker-3)\n*Details:*\n  • *alertname:* \
             `KubeNodeNotReady`\n  • *node:* `worker-3`",
        );
        assert_eq!(
            node.short_name().as_deref(),
            Some("KubeNodeNotReady worker-3")
        );
        assert_eq!(parse_alert("just some chatter").short_name(), None);
    }

    #[test]
    fn prose_alerts_are_told_apart_by_what_they_name() {
        let a = parse_alert("Triggered: [P1] High CPU on web-1\nnamespace: shop\nservice: web");
        let b = parse_alert("Triggered: [P1] High CPU on web-1\nnamespace: shop\nservice: api");
        assert!(a.fingerprint().is_some());
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(parse_alert("just some chatter").fingerprint(), None);
    }
}
