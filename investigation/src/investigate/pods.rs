//! Whether a pod description shows a restart, read from any shape a server answers in
//! (`kubectl describe` text, YAML, JSON), where [`super::kube`] could not parse the pod.

use crate::detectors::text::field;

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
