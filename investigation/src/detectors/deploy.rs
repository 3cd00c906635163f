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

/// Deploys whose time falls inside the alert window. Returns nothing without an alert start.
pub fn detect_deploys_in_window(evidence: &[Evidence], ctx: &DetectionContext) -> Vec<Finding> {
    let Some(alert_start) = ctx.alert_start else {
        return Vec::new();
    };
    let window_start = alert_start - ctx.deploy_window_before;
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
            out.push(Finding {
                detector: DetectorKind::DeployInWindow,
                title,
                detail: format!(
                    "{what} at {} UTC, {when}: a change inside the alert window is a likely suspect.",
                    time.format("%H:%M:%S")
                ),
                confidence: Confidence::Medium,
                verified: false,
                resource: None,
                refs,
                at: Some(time),
            });
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.at));
    out
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
