//! "Did anything ship just before this started?" — changes inside the alert window (step 3 of
//! the seven in ARCHITECTURE.md): a rollout of a new revision, or a Deployment scaled to more
//! replicas.
//!
//! Deploy history arrives as ReplicaSet/Deployment objects (YAML or JSON, `creationTimestamp`
//! and `deployment.kubernetes.io/revision`), as events (`ScalingReplicaSet`, "Scaled up replica
//! set …", with their timestamps), or as text lines with a timestamp. The evidence is split
//! into records (YAML list items, documents, blank-line paragraphs); a record with a timestamp
//! inside `[onset − before, alert start + after]` is a change in the window, where the onset is
//! the alert's start or an earlier metric step (`steps` runs before this part). Only
//! `DeployHistory` evidence is read for rollouts, so a pod's own `creationTimestamp` is never
//! mistaken for a deploy.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Rollout`] | cause (a suspect until verified) | a metric step begins within 15 min after it |
//! | [`ScaleChange`] | context | never: more replicas add load; they are never the cause themselves |
//!
//! What explains what: a rollout explains the metric step that followed it. A scale-up leads to
//! a server's connection limit (it is shown with that cause, never instead of it); an
//! autoscaler at its maximum explains the scale-up it made.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::steps::MetricStep;
use super::text::{event_field, looks_like_injection, quote_line};
use super::{
    Confidence, Fact, Finding, Kind, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject,
    Symptom, cite,
};
use crate::evidence::{Capability, Evidence};
use firstline_alert::timeparse::find_timestamps;

static REVISION: LazyLock<Regex> = regex!(r#"(?i)revision["']?\s*[:=]?\s*["']?(\d+)\b"#);
static IMAGE: LazyLock<Regex> = regex!(r#"(?i)\bimage"?\s*[:=]\s*"?([A-Za-z0-9][^\s"',]*)"#);
static SCALED: LazyLock<Regex> =
    regex!(r"(?i)Scaled (up|down) replica set \S+ to (\d+)(?: from (\d+))?");
static CREATION_TIME_KEY: LazyLock<Regex> =
    regex!(r"(?i)(creationTimestamp|firstTimestamp|eventTime|deployed|created)");
/// Keys whose timestamps are not "when this change happened".
static IGNORED_TIME_KEY: LazyLock<Regex> =
    regex!(r"(?i)(lastUpdateTime|lastTransitionTime|lastHeartbeatTime|startedAt|finishedAt|expir)");

/// A new revision rolled out inside the alert window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// The Deployment owning the ReplicaSet, when the record says.
    pub deployment: Option<String>,
    pub revision: Option<String>,
    pub image: Option<String>,
    pub at: DateTime<Utc>,
    /// Minutes before the alert started (negative: after).
    pub minutes_before: i64,
    /// The metric step that began shortly after it.
    pub followed_by: Option<FollowingStep>,
}

/// A metric step that began shortly after a deploy: which series, when, and how long after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FollowingStep {
    pub series: String,
    pub at: DateTime<Utc>,
    pub lag_minutes: i64,
}

impl Rollout {
    fn what(&self) -> String {
        let mut what = String::from("Deploy");
        if let Some(revision) = &self.revision {
            what.push_str(&format!(" (revision {revision})"));
        }
        if let Some(image) = &self.image {
            what.push_str(&format!(" of `{image}`"));
        }
        what
    }

    fn when(&self) -> String {
        if self.minutes_before >= 0 {
            format!("{} min before the alert", self.minutes_before)
        } else {
            format!("{} min after the alert started", -self.minutes_before)
        }
    }
}

impl Payload for Rollout {
    const SPEC: KindSpec = KindSpec {
        name: "deploy-in-window",
        role: Role::Cause,
        verified_when: "a metric step (the alert's symptom) begins within 15 minutes after it",
        accounts_for: &[
            Symptom::Errors,
            Symptom::Latency,
            Symptom::Restarts,
            Symptom::Unavailable,
            Symptom::Saturation,
        ],
    };

    fn example() -> Self {
        Self {
            deployment: Some("checkout".into()),
            revision: Some("3".into()),
            image: Some("registry/checkout:5.3.0".into()),
            at: DateTime::<Utc>::UNIX_EPOCH,
            minutes_before: 11,
            followed_by: Some(FollowingStep {
                series: "http_error_ratio".into(),
                at: DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::minutes(2),
                lag_minutes: 2,
            }),
        }
    }

    fn title(&self) -> String {
        format!("{} {}", self.what(), self.when())
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "{} at {} UTC, {}: a change inside the alert window is a likely suspect.",
            self.what(),
            self.at.format("%H:%M:%S"),
            self.when()
        );
        if let Some(step) = &self.followed_by {
            detail.push_str(&format!(
                " A step in `{}` began {} min after this deploy.",
                step.series, step.lag_minutes
            ));
        }
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Workload, self.deployment.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.revision == other.revision && self.image == other.image && self.at == other.at
    }

    fn step(&self, scene: &Scene) -> String {
        let deployment = self
            .deployment
            .as_deref()
            .or(scene.workload.as_deref())
            .unwrap_or("<deployment>");
        let ns = &scene.namespace;
        if scene.headline {
            format!(
                "Roll back `{deployment}` to the revision before this deploy while the change is \
                 fixed: `kubectl -n {ns} rollout undo deployment/{deployment}`; then compare the \
                 two revisions to find what broke."
            )
        } else {
            format!(
                "Compare this revision of `{deployment}` with the previous one (`kubectl -n {ns} \
                 rollout history deployment/{deployment} --revision={}`) before suspecting it \
                 further.",
                self.revision.as_deref().unwrap_or("<n>")
            )
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        match (&effect.fact, &self.followed_by) {
            (Fact::MetricStep(m), Some(step)) => m.series == step.series && m.at == step.at,
            _ => false,
        }
    }
}

/// A Deployment scaled to more replicas inside the alert window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleChange {
    pub deployment: Option<String>,
    pub from: u64,
    pub to: u64,
    pub at: DateTime<Utc>,
    pub minutes_before: i64,
}

impl Payload for ScaleChange {
    const SPEC: KindSpec = KindSpec {
        name: "scale-change",
        role: Role::Context,
        verified_when: "never a cause: more replicas add load to what they share",
        accounts_for: &[],
    };

    fn example() -> Self {
        Self {
            deployment: Some("shipment-api".into()),
            from: 4,
            to: 12,
            at: DateTime::<Utc>::UNIX_EPOCH,
            minutes_before: 37,
        }
    }

    fn title(&self) -> String {
        format!(
            "{} scaled up from {} to {} replicas, {} min before the alert",
            self.name(),
            self.from,
            self.to,
            self.minutes_before
        )
    }

    fn detail(&self) -> String {
        format!(
            "{} went from {} to {} replicas at {} UTC, {} min before the alert: more replicas \
             mean more load on what they share (database connections, quotas, nodes).",
            self.name(),
            self.from,
            self.to,
            self.at.format("%H:%M:%S"),
            self.minutes_before
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Workload, self.deployment.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.deployment == other.deployment && self.to == other.to
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Check what the extra replicas of {} share (database connections, quotas, nodes) \
             against its limits before changing the replica count.",
            self.deployment
                .as_deref()
                .map_or(scene.workload_ref.clone(), |d| format!("`{d}`"))
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        matches!(&effect.fact, Fact::ConnectionsExhausted(c) if c.limit_reached)
    }
}

impl ScaleChange {
    fn name(&self) -> String {
        self.deployment.as_deref().map_or_else(
            || "The Deployment".to_string(),
            |d| format!("Deployment `{d}`"),
        )
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let ctx = round.ctx;
    let Some(alert_start) = ctx.alert_start else {
        return Vec::new();
    };
    // The symptom's onset: a metric step that began before the alert fired.
    let steps: Vec<&MetricStep> = round
        .found
        .iter()
        .filter_map(|f| match &f.fact {
            Fact::MetricStep(m) => Some(m),
            _ => None,
        })
        .collect();
    let onset = round
        .found_of(Kind::MetricStep)
        .filter(|f| f.confidence == Confidence::High)
        .filter_map(|f| f.at)
        .min();
    let window_start = onset.unwrap_or(alert_start).min(alert_start) - ctx.deploy_window_before;
    let window_end = alert_start + ctx.deploy_window_after;
    let mut out: Vec<Finding> = Vec::new();
    for item in round.of(Capability::DeployHistory) {
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
            // The Deployment owning this ReplicaSet (`ownerReferences`: `kind: Deployment`,
            // then `name:`), for the rollback command.
            let deployment = record.windows(2).find_map(|pair| {
                (pair[0].trim().trim_start_matches("- ") == "kind: Deployment")
                    .then(|| pair[1].trim().strip_prefix("name:"))
                    .flatten()
                    .map(|n| n.trim().to_string())
            });
            let followed_by = steps
                .iter()
                .find(|step| step.at >= time && step.at - time <= ctx.deploy_step_correlation)
                .map(|step| FollowingStep {
                    series: step.series.clone(),
                    at: step.at,
                    lag_minutes: (step.at - time).num_minutes(),
                });
            let rollout = Rollout {
                deployment,
                revision: revision_line
                    .and_then(|i| REVISION.captures(record[i]))
                    .map(|c| c[1].to_string()),
                image: image_line
                    .and_then(|i| IMAGE.captures(record[i]))
                    .map(|c| c[1].to_string()),
                at: time,
                minutes_before: (alert_start - time).num_minutes(),
                followed_by,
            };
            if out
                .iter()
                .any(|f| matches!(&f.fact, Fact::Rollout(r) if r.merges_with(&rollout)))
            {
                continue;
            }
            let mut refs = vec![cite(item, quote_line(record[time_index]))];
            for i in [revision_line, image_line].into_iter().flatten() {
                let quote = quote_line(record[i]);
                if !refs.iter().any(|c| c.quote == quote) {
                    refs.push(cite(item, quote));
                }
            }
            // Verified by timing alone: medium, whatever else the deploy shows, so a cause
            // with a mechanism (a refused dependency, a connection limit) ranks above it.
            let verified = rollout.followed_by.is_some();
            out.push(
                Finding::new(rollout, Confidence::Medium, verified)
                    .dated(Some(time))
                    .citing(refs),
            );
        }
    }
    for item in round.of(Capability::Events) {
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
            deployment = event_field(record, "name").map(|(name, _)| name.to_string());
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
    let mut refs = vec![cite(item, quote_line(first_line))];
    if let Some(&(_, _, _, largest)) = ups.iter().find(|(to, ..)| *to == new_size) {
        let quote = quote_line(largest);
        if !refs.iter().any(|c| c.quote == quote) {
            refs.push(cite(item, quote));
        }
    }
    Some(
        Finding::new(
            ScaleChange {
                deployment,
                from: old_size,
                to: new_size,
                at: first_at,
                minutes_before: (alert_start - first_at).num_minutes(),
            },
            Confidence::Medium,
            false,
        )
        .dated(Some(first_at))
        .citing(refs),
    )
}

/// One revision of a workload as its rollout history shows it.
pub(crate) struct Revision<'a> {
    pub evidence: &'a Evidence,
    pub revision: Option<String>,
    pub image: Option<String>,
    pub at: DateTime<Utc>,
    /// The line its time was read from, verbatim.
    pub time_line: &'a str,
}

/// Every revision the round's rollout histories show, oldest first.
pub(super) fn revisions<'a>(round: &'a Round<'a>) -> Vec<Revision<'a>> {
    revisions_in(round.of(Capability::DeployHistory))
}

/// Every revision the rollout histories `items` show, oldest first.
pub(crate) fn revisions_in<'a>(items: impl Iterator<Item = &'a Evidence>) -> Vec<Revision<'a>> {
    let mut out = Vec::new();
    for item in items {
        let lines: Vec<&str> = item.excerpt.lines().collect();
        for (start, end) in records(&lines) {
            let record = &lines[start..end];
            let Some((time_index, at)) = record_time(record) else {
                continue;
            };
            out.push(Revision {
                evidence: item,
                revision: record
                    .iter()
                    .find_map(|l| REVISION.captures(l))
                    .map(|c| c[1].to_string()),
                image: record
                    .iter()
                    .find_map(|l| IMAGE.captures(l))
                    .map(|c| c[1].to_string()),
                at,
                time_line: record[time_index],
            });
        }
    }
    out.sort_by_key(|r| r.at);
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

#[cfg(test)]
mod tests;
