//! Reading what the tools say about pods: a Job's failed pods in a pod list, and whether a pod
//! description shows a restart. The text comes from whichever server the operator configured,
//! so each reader accepts every shape those servers answer in (`kubectl` tables and describe
//! text, YAML, JSON) and treats anything it cannot read as "not found", never as an error.

use crate::detectors::text::field;

/// The failed pods of `job` in a pod list, newest first (ties by name). Reads a `kubectl get
/// pods` table (with or without `--show-labels`) and kubernetes-mcp-server's YAML list. A pod
/// belongs to the job when its labels carry `job-name=<job>`, or, when no labels are shown, when
/// its name is `<job>-<suffix>`.
pub fn failed_job_pods(list: &str, job: &str) -> Vec<String> {
    let mut pods = if list
        .lines()
        .any(|l| l.split_whitespace().next() == Some("NAME"))
    {
        table_pods(list, job)
    } else {
        yaml_pods(list, job)
    };
    // Newest first: smallest age; then by name, so the order is deterministic.
    pods.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    pods.dedup_by(|a, b| a.0 == b.0);
    pods.into_iter().map(|(name, _)| name).collect()
}

/// A sort key: lower is newer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Age {
    /// Seconds since creation (a table's AGE).
    Secs(u64),
    /// Reverse creation time: `creationTimestamp` RFC 3339 text, inverted for sorting.
    Created(std::cmp::Reverse<String>),
    Unknown,
}

fn labels_name_job(labels: &str, job: &str) -> bool {
    labels.split(',').any(|label| {
        label.split_once('=').is_some_and(|(key, value)| {
            (key == "job-name" || key.ends_with("/job-name")) && value == job
        })
    })
}

fn looks_failed(status: &str) -> bool {
    !matches!(
        status,
        "Running"
            | "Completed"
            | "Succeeded"
            | "Pending"
            | "ContainerCreating"
            | "PodInitializing"
            | "Terminating"
            | ""
    )
}

fn parse_age(age: &str) -> Age {
    let mut total = 0u64;
    let mut number = String::new();
    for c in age.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'y' => 31_536_000,
            _ => return Age::Unknown,
        };
        let Ok(n) = number.parse::<u64>() else {
            return Age::Unknown;
        };
        total = total.saturating_add(n.saturating_mul(unit));
        number.clear();
    }
    if number.is_empty() && total > 0 || age == "0s" {
        Age::Secs(total)
    } else {
        Age::Unknown
    }
}

fn table_pods(list: &str, job: &str) -> Vec<(String, Age)> {
    let mut lines = list
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some("NAME"));
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    // Column starts from the header (cells are left-aligned; some hold spaces, like
    // `56 (4h43m ago)` under RESTARTS).
    let mut columns: Vec<(&str, usize)> = Vec::new();
    let mut offset = 0;
    for word in header.split_whitespace() {
        let start = header[offset..].find(word).map_or(offset, |i| offset + i);
        columns.push((word, start));
        offset = start + word.len();
    }
    let cell = |row: &str, name: &str| -> Option<String> {
        let i = columns.iter().position(|(c, _)| *c == name)?;
        let start = columns[i].1;
        let end = columns.get(i + 1).map_or(row.len(), |c| c.1).min(row.len());
        row.get(start.min(end)..end).map(|s| s.trim().to_string())
    };
    let has_labels = columns.iter().any(|(c, _)| *c == "LABELS");
    let mut out = Vec::new();
    for row in lines.take(1000) {
        let Some(name) = row.split_whitespace().next() else {
            continue;
        };
        let member = if has_labels {
            cell(row, "LABELS").is_some_and(|labels| labels_name_job(&labels, job))
        } else {
            name.strip_prefix(job)
                .is_some_and(|rest| rest.starts_with('-'))
        };
        let status = cell(row, "STATUS").unwrap_or_default();
        if member && looks_failed(&status) {
            let age = cell(row, "AGE").map_or(Age::Unknown, |a| parse_age(&a));
            out.push((name.to_string(), age));
        }
    }
    out
}

fn yaml_pods(list: &str, job: &str) -> Vec<(String, Age)> {
    fn indent(line: &str) -> usize {
        line.len() - line.trim_start_matches([' ', '-']).len()
    }
    fn key_value(line: &str) -> Option<(&str, &str)> {
        let (key, value) = line.trim_start_matches([' ', '-']).split_once(':')?;
        Some((
            key.trim().trim_matches('"'),
            value.trim().trim_matches(['"', '\'']),
        ))
    }
    // Items start at the shallowest `- ` lines.
    let item_indent = list
        .lines()
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| l.len() - l.trim_start().len())
        .min();
    let Some(item_indent) = item_indent else {
        return Vec::new();
    };
    let mut items: Vec<Vec<&str>> = Vec::new();
    for line in list.lines().take(20_000) {
        let starts_item = line.len() - line.trim_start().len() == item_indent
            && line.trim_start().starts_with("- ");
        if starts_item {
            items.push(Vec::new());
        }
        if let Some(item) = items.last_mut() {
            item.push(line);
        }
    }
    let mut out = Vec::new();
    for item in items {
        let mut name = None;
        let mut phase = "";
        let mut created = None;
        let mut member = false;
        let mut crashed = false;
        let mut metadata: Option<usize> = None;
        for line in &item {
            let Some((key, value)) = key_value(line) else {
                continue;
            };
            let depth = indent(line);
            if metadata.is_some_and(|m| depth <= m) {
                metadata = None;
            }
            match key {
                "metadata" => metadata = Some(depth),
                "name" if metadata.is_some() && name.is_none() && !value.is_empty() => {
                    name = Some(value.to_string());
                }
                "creationTimestamp" if created.is_none() => created = Some(value.to_string()),
                "phase" => phase = value,
                "job-name" | "batch.kubernetes.io/job-name" if value == job => member = true,
                "reason" if matches!(value, "Error" | "CrashLoopBackOff" | "OOMKilled") => {
                    crashed = true;
                }
                _ => {}
            }
        }
        let Some(name) = name else { continue };
        let member = member
            || name
                .strip_prefix(job)
                .is_some_and(|rest| rest.starts_with('-'));
        let failed = phase == "Failed" || (crashed && phase != "Succeeded");
        if member && failed {
            let age = created.map_or(Age::Unknown, |c| Age::Created(std::cmp::Reverse(c)));
            out.push((name, age));
        }
    }
    out
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
