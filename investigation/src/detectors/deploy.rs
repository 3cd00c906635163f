//! "Did anything ship just before this started?" — deploys inside the alert window (step 3 of
//! the seven in ARCHITECTURE.md).
//!
//! Deploy history arrives as ReplicaSet/Deployment objects (YAML or JSON, `creationTimestamp`
//! and `deployment.kubernetes.io/revision`), as events (`ScalingReplicaSet`, "Scaled up replica
//! set …", with `firstTimestamp`/`lastTimestamp`/`eventTime`), or as text lines with a
//! timestamp. The evidence is split into records (YAML list items, documents, blank-line
//! paragraphs); a record with a timestamp inside `[alert start − before, alert start + after]`
//! is a deploy in the window. Only `DeployHistory` evidence is read, so a pod's own
//! `creationTimestamp` is never mistaken for a deploy.
//!
//! A Deployment's `ScalingReplicaSet` events show a scale-up in the window the same way.
//!
//! A deploy in the window is a suspicion, not a verified cause; it becomes verified when a
//! metric step starts shortly after it ([`correlate_with_steps`]).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;

use super::text::{looks_like_injection, quote_line};
use super::{Confidence, DetectionContext, DetectorKind, Finding, cite};
use crate::evidence::{Capability, Evidence};
use firstline_alert::timeparse::find_timestamps;

static REVISION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)revision"?\s*[:=]?\s*"?(\d+)\b"#).expect("static regex"));
static IMAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bimage"?\s*[:=]\s*"?([A-Za-z0-9][^\s"',]*)"#).expect("static regex")
});
static SCALED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)Scaled (up|down) replica set \S+ to (\d+)(?: from (\d+))?")
        .expect("static regex")
});
static CREATION_TIME_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(creationTimestamp|firstTimestamp|eventTime|deployed|created)")
        .expect("static regex")
});
/// Keys whose timestamps are not "when this change happened".
static IGNORED_TIME_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(lastUpdateTime|lastTransitionTime|lastHeartbeatTime|startedAt|finishedAt|expir)",
    )
    .expect("static regex")
});

/// Deploys whose time falls inside the alert window: from `deploy_window_before` before the
/// symptom's onset (a metric step that began before the alert fired; else the alert's start)
/// to shortly after the alert's start. Returns nothing without an alert start.
pub(super) fn detect_deploys_in_window(
    evidence: &[Evidence],
    ctx: &DetectionContext,
    onset: Option<DateTime<Utc>>,
) -> Vec<Finding> {
    let Some(alert_start) = ctx.alert_start else {
        return Vec::new();
    };
    let window_start = onset.unwrap_or(alert_start).min(alert_start) - ctx.deploy_window_before;
    let window_end = alert_start + ctx.deploy_window_after;
    let mut out: Vec<Finding> = Vec::new();
    for item in evidence
        .iter()
        .filter(|e| e.capability == Capability::DeployHistory)
    {
        let lines: Vec<&str> = item.excerpt.lines().collect();
        for (start, end) in records(&lines) {
            let record = &lines[start..end];
            let Some((time_index, time)) = record_time(record) else {
                continue;
            };
            if time < window_start || time > window_end {
                continue;
            }
            let revision_line = record.iter().position(|l| REVISION.is_match(l));
            let image_line = record.iter().position(|l| IMAGE.is_match(l));
            let revision = revision_line
                .and_then(|i| REVISION.captures(record[i]))
                .map(|c| c[1].to_string());
            let image = image_line
                .and_then(|i| IMAGE.captures(record[i]))
                .map(|c| c[1].to_string());
            let minutes = (alert_start - time).num_minutes();
            let when = if minutes >= 0 {
                format!("{minutes} min before the alert")
            } else {
                format!("{} min after the alert started", -minutes)
            };
            let mut what = String::from("Deploy");
            if let Some(revision) = &revision {
                what.push_str(&format!(" (revision {revision})"));
            }
            if let Some(image) = &image {
                what.push_str(&format!(" of `{image}`"));
            }
            let title = format!("{what} {when}");
            if out.iter().any(|f| f.title == title) {
                continue;
            }
            let mut refs = vec![cite(item, quote_line(record[time_index]))];
            for i in [revision_line, image_line].into_iter().flatten() {
                let quote = quote_line(record[i]);
                if !refs.iter().any(|c| c.quote == quote) {
                    refs.push(cite(item, quote));
                }
            }
            // The Deployment owning this ReplicaSet (`ownerReferences`: `kind: Deployment`,
            // then `name:`), for the rollback command.
            let owner = record.windows(2).find_map(|pair| {
                (pair[0].trim().trim_start_matches("- ") == "kind: Deployment")
                    .then(|| pair[1].trim().strip_prefix("name:"))
                    .flatten()
                    .map(|n| n.trim().to_string())
            });
            out.push(Finding {
                detector: DetectorKind::DeployInWindow,
                title,
                detail: format!(
                    "{what} at {} UTC, {when}: a change inside the alert window is a likely suspect.",
                    time.format("%H:%M:%S")
                ),
                confidence: Confidence::Medium,
                verified: false,
                resource: owner,
                refs,
                at: Some(time),
            });
        }
    }
    for item in evidence
        .iter()
        .filter(|e| e.capability == Capability::Events)
    {
        out.extend(scaling(item, window_start, window_end, alert_start));
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.at));
    out
}

/// A Deployment whose replica count changed inside the window, read from its
/// `ScalingReplicaSet` events: the new ReplicaSet scaled up to more replicas than the old one
/// had ("Scaled up replica set api-7c9 to 12", "Scaled down replica set api-5b8 to 0 from 4").
/// A rollout at a constant size is not a scale change.
fn scaling(
    item: &Evidence,
    window_start: DateTime<Utc>,
    window_end: DateTime<Utc>,
    alert_start: DateTime<Utc>,
) -> Option<Finding> {
    let lines: Vec<&str> = item.excerpt.lines().collect();
    let mut ups: Vec<(u64, Option<u64>, DateTime<Utc>, &str)> = Vec::new();
    let mut downs: Vec<u64> = Vec::new();
    let mut deployment: Option<String> = None;
    for (start, end) in records(&lines) {
        let record = &lines[start..end];
        let Some(message) = record
            .iter()
            .find(|l| SCALED.is_match(l) && !looks_like_injection(l))
        else {
            continue;
        };
        let Some((_, time)) = record_time(record) else {
            continue;
        };
        if time < window_start || time > window_end {
            continue;
        }
        let Some(caps) = SCALED.captures(message) else {
            continue;
        };
        let to: u64 = caps[2].parse().unwrap_or(0);
        let from: Option<u64> = caps.get(3).and_then(|m| m.as_str().parse().ok());
        if deployment.is_none() {
            deployment = record.iter().find_map(|l| {
                let t = l.trim_start().trim_start_matches("- ");
                t.strip_prefix("Name:")
                    .or_else(|| t.strip_prefix("name:"))
                    .map(|n| n.trim().to_string())
            });
        }
        if caps[1].eq_ignore_ascii_case("up") {
            ups.push((to, from, time, message));
        } else if let Some(from) = from {
            downs.push(from);
        }
    }
    let &(new_size, _, _, _) = ups.iter().max_by_key(|(to, ..)| *to)?;
    let old_size = downs
        .iter()
        .copied()
        .max()
        .or_else(|| ups.iter().filter_map(|(_, from, ..)| *from).min())?;
    if new_size <= old_size {
        return None;
    }
    let &(_, _, first_at, first_line) = ups.iter().min_by_key(|(_, _, at, _)| *at)?;
    let minutes = (alert_start - first_at).num_minutes();
    let name = deployment.as_deref().map_or_else(
        || "The Deployment".to_string(),
        |d| format!("Deployment `{d}`"),
    );
    let title = format!(
        "{name} scaled up from {old_size} to {new_size} replicas, {minutes} min before the alert"
    );
    let mut refs = vec![cite(item, quote_line(first_line))];
    if let Some(&(_, _, _, largest)) = ups.iter().find(|(to, ..)| *to == new_size) {
        let quote = quote_line(largest);
        if !refs.iter().any(|c| c.quote == quote) {
            refs.push(cite(item, quote));
        }
    }
    Some(Finding {
        detector: DetectorKind::DeployInWindow,
        detail: format!(
            "{name} went from {old_size} to {new_size} replicas at {} UTC, {minutes} min before \
             the alert: more replicas mean more load on what they share (database connections, \
             quotas, nodes).",
            first_at.format("%H:%M:%S")
        ),
        title,
        confidence: Confidence::Medium,
        verified: false,
        resource: deployment,
        refs,
        at: Some(first_at),
    })
}

/// Ranges of lines forming one record: a YAML list item at the shallowest list indentation, a
/// `---` document, or a blank-line paragraph. Text with none of these is one record per line
/// (a table or log of deploys).
fn records(lines: &[&str]) -> Vec<(usize, usize)> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let item_indent = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| indent(l))
        .min();
    let json_items = lines
        .iter()
        .filter(|l| l.trim() == "{" || l.trim() == "},")
        .count()
        > 1;
    let is_boundary = |l: &str| {
        l.trim().is_empty()
            || l.trim() == "---"
            || item_indent.is_some_and(|i| l.trim_start().starts_with("- ") && indent(l) == i)
            || (json_items && l.trim() == "{")
    };
    let structured = lines.iter().any(|l| is_boundary(l));
    if !structured {
        return (0..lines.len()).map(|i| (i, i + 1)).collect();
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (i, line) in lines.iter().enumerate() {
        if i > start && is_boundary(line) {
            out.push((start, i));
            start = i;
        }
    }
    if start < lines.len() {
        out.push((start, lines.len()));
    }
    out
}

/// The time a record's change happened: its creation / first-seen time when it has one,
/// otherwise the latest timestamp in it.
fn record_time(record: &[&str]) -> Option<(usize, DateTime<Utc>)> {
    let stamped = || {
        record
            .iter()
            .enumerate()
            .filter(|(_, l)| !IGNORED_TIME_KEY.is_match(l) && !looks_like_injection(l))
            .flat_map(|(i, l)| find_timestamps(l).into_iter().map(move |(t, _)| (i, t)))
    };
    stamped()
        .find(|(i, _)| CREATION_TIME_KEY.is_match(record[*i]))
        .or_else(|| stamped().max_by_key(|(_, t)| *t))
}

/// Upgrades a deploy finding to a verified cause when a metric step change starts within
/// `deploy_step_correlation` after it, and says so in both findings.
pub(super) fn correlate_with_steps(findings: &mut [Finding], ctx: &DetectionContext) {
    let steps: Vec<(DateTime<Utc>, String)> = findings
        .iter()
        .filter(|f| f.detector == DetectorKind::MetricStepChange)
        .filter_map(|f| f.at.map(|at| (at, f.title.clone())))
        .collect();
    for deploy in findings
        .iter_mut()
        .filter(|f| f.detector == DetectorKind::DeployInWindow)
    {
        let Some(deployed_at) = deploy.at else {
            continue;
        };
        let Some((step_at, step_title)) = steps.iter().find(|(step_at, _)| {
            *step_at >= deployed_at && *step_at - deployed_at <= ctx.deploy_step_correlation
        }) else {
            continue;
        };
        let lag = (*step_at - deployed_at).num_minutes();
        deploy.verified = true;
        deploy.confidence = Confidence::High;
        deploy.detail.push_str(&format!(
            " The metric step ({step_title}) began {lag} min after this deploy."
        ));
    }
}
