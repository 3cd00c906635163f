//! Whether a pod description shows a restart, read from any shape a server answers in
//! (`kubectl describe` text, YAML, JSON), where [`super::kube`] could not parse the pod; and
//! which of a pod's containers a log is asked of.

use crate::detectors::text::field;
use crate::kube::PodInfo;

/// The container a pod of several is about: the one its `workload` is named after (`nats`,
/// beside a `reloader` sidecar), else its first. The log API refuses a pod of several
/// containers without one.
pub fn main_container(pod: &PodInfo, workload: &str) -> Option<String> {
    let apps: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| !c.init && !c.name.is_empty())
        .map(|c| c.name.as_str())
        .collect();
    apps.iter()
        .find(|name| workload.contains(**name))
        .or(apps.first())
        .map(|name| name.to_string())
}

/// Whether a pod description shows a restart: restart count above zero, a terminated last
/// state, or CrashLoopBackOff. Reads `kubectl describe` text, YAML and JSON.
pub fn restart_signal(description: &str) -> bool {
    let lines: Vec<&str> = description.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        if line.contains("CrashLoopBackOff") {
            return true;
        }
        match field(line) {
            Some((key, value)) if key == "restartcount" => value
                .trim_matches(|c: char| !c.is_ascii_digit())
                .parse::<u64>()
                .is_ok_and(|n| n > 0),
            Some((key, value)) if key == "laststate" => {
                value.to_ascii_lowercase().starts_with("terminated")
                    || lines[i + 1..]
                        .iter()
                        .find(|l| !l.trim().is_empty())
                        .and_then(|next| field(next))
                        .is_some_and(|(k, _)| k == "terminated")
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_asked_of_the_container_the_workload_is_named_after() {
        let container = |name: &str, init: bool| crate::kube::ContainerInfo {
            name: name.into(),
            init,
            ..Default::default()
        };
        let pod = PodInfo {
            name: "nats-2".into(),
            containers: vec![
                container("init-config", true),
                container("reloader", false),
                container("nats", false),
            ],
            ..PodInfo::default()
        };
        assert_eq!(main_container(&pod, "nats").as_deref(), Some("nats"));
        // No container named after it: the first app container, never an init container.
        assert_eq!(main_container(&pod, "queue").as_deref(), Some("reloader"));
        assert_eq!(main_container(&PodInfo::default(), "queue"), None);
    }

    #[test]
    fn restart_signal_reads_describe_yaml_and_json() {
        assert!(restart_signal("    Restart Count:  3\n"));
        assert!(!restart_signal(
            "    Restart Count:  0\n    State: Running\n"
        ));
        assert!(restart_signal("    Last State:     Terminated\n"));
        assert!(restart_signal(
            "    lastState:\n      terminated:\n        exitCode: 1\n"
        ));
        assert!(!restart_signal("    lastState: {}\n    restartCount: 0\n"));
        assert!(restart_signal("    \"restartCount\": 2,\n"));
        assert!(restart_signal("      reason: CrashLoopBackOff\n"));
    }
}
