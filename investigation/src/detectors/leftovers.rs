//! What fills a volume: the pod that mounts the claim the alert says is filling, whose failures
//! keep coming back and each name a new place under the mount — the same work failed again
//! and again (a redelivered message, a retried upload, a crash's core dump), each attempt
//! leaving its files behind (`/scratch/job-r37`, `/scratch/job-r38`).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`FailedWorkKept`] | cause | the alert names the claim, the pod's spec mounts it writable, and at least [`MIN_ATTEMPTS`] error lines of its log each name a different entry of one shape under the mount |
//!
//! The structural half (the alert's claim, the pod's own volumes and mounts) says where the
//! pod writes; the log half is repetition, never one line's words: entries of one shape that
//! differ only in their numbers (an attempt counter, a timestamp, a process id) are one piece
//! of work tried again, in a new place each time. A failure that says the disk is full is what
//! the full volume does to its writer, not what filled it, and counts for nothing. A pod that
//! is gone writes nothing more.
//!
//! What explains what: the writer explains its own error lines, its own "no space left", and
//! its claim filling.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::disk::NO_SPACE;
use super::text::{
    LogLevel, is_application_log, line_with, log_level, log_lines, looks_like_injection,
    object_name, quote_line,
};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::evidence::Evidence;
use crate::kube::{str_at, writable_mounts};

/// Distinct entries of one shape a pod's failures must name to show work tried again.
pub const MIN_ATTEMPTS: usize = 2;
/// Entries a finding names.
const MAX_ENTRIES: usize = 3;

/// A pod that mounts the filling claim and keeps failing the same work, each attempt leaving a
/// new entry on the volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedWorkKept {
    pub claim: String,
    pub namespace: Option<String>,
    pub pod: String,
    pub container: String,
    /// Where the container sees the volume.
    pub mount_path: String,
    /// The entries under the mount the failures name, oldest first (at most [`MAX_ENTRIES`]).
    pub entries: Vec<String>,
    /// How many distinct entries of that shape the failures name.
    pub attempts: usize,
}

impl Payload for FailedWorkKept {
    const SPEC: KindSpec = KindSpec {
        name: "failed-work-on-volume",
        role: Role::Cause,
        verified_when: "the alert names the claim, the pod's spec mounts it writable, and its \
                        error lines name at least two entries of one shape under the mount \
                        (the same work failed again, in a new place each time)",
        accounts_for: &[Symptom::Storage],
    };

    fn example() -> Self {
        Self {
            claim: "transcode-scratch".into(),
            namespace: Some("media".into()),
            pod: "transcoder-7c9d8f6b5-wq4zp".into(),
            container: "worker".into(),
            mount_path: "/scratch".into(),
            entries: vec![
                "/scratch/tx_88f1c2-r37".into(),
                "/scratch/tx_88f1c2-r38".into(),
            ],
            attempts: 2,
        }
    }

    fn title(&self) -> String {
        format!(
            "Pod `{}` fails the same work again and again, each failed attempt leaving a new \
             entry on filling volume `{}`: {}",
            self.pod,
            self.claim,
            entry_list(&self.entries)
        )
    }

    fn detail(&self) -> String {
        format!(
            "Container `{}` of pod `{}` writes to claim `{}` at `{}`. Its log shows {} failed \
             attempts of one piece of work, each naming a different entry there ({}): every \
             retry writes again and the failed attempts' files stay, so the volume fills at \
             the pace of the retries.",
            self.container,
            self.pod,
            self.claim,
            self.mount_path,
            self.attempts,
            entry_list(&self.entries)
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Pod, self.pod.clone()))
    }

    fn step(&self, _scene: &Scene) -> String {
        let ns = super::text::namespace_flag(self.namespace.as_deref());
        format!(
            "Stop the retries of the failing work in pod `{}` (dead-letter or skip it, bound its \
             attempts), then remove what the failed attempts left under `{}` (`kubectl exec{ns} \
             {} -- du -sh {}/*`) and clean up after a failure as after a success, so claim `{}` \
             stops filling.",
            self.pod,
            self.mount_path,
            self.pod,
            self.mount_path.trim_end_matches('/'),
            self.claim
        )
    }

    fn merge_from(&mut self, other: &Self) {
        for entry in &other.entries {
            if !self.entries.contains(entry) && self.entries.len() < MAX_ENTRIES {
                self.entries.push(entry.clone());
            }
        }
        self.attempts = self.attempts.max(other.attempts);
    }

    /// Its own error lines (the failures it keeps retrying), its own full disk, and the claim
    /// it fills.
    fn explains(&self, effect: &Finding) -> bool {
        let ours = |pod: &Option<String>| pod.as_deref() == Some(self.pod.as_str());
        match &effect.fact {
            Fact::ErrorLine(e) => ours(&e.pod),
            Fact::DiskFull(d) => ours(&d.pod),
            Fact::VolumeFilling(v) => v.claim == self.claim,
            _ => false,
        }
    }
}

/// `` `a`, `b` `` for sentences.
fn entry_list(entries: &[String]) -> String {
    entries
        .iter()
        .map(|e| format!("`{e}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a pod's containers mount claim `claim` writable: (container, mount path).
pub fn claim_mounts(pod: &Value, claim: &str) -> Vec<(String, String)> {
    let volumes: Vec<&str> = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| str_at(v, "/persistentVolumeClaim/claimName") == Some(claim))
        .filter(|v| {
            v.pointer("/persistentVolumeClaim/readOnly")
                .and_then(Value::as_bool)
                != Some(true)
        })
        .filter_map(|v| str_at(v, "/name"))
        .collect();
    writable_mounts(pod)
        .into_iter()
        .filter(|m| volumes.contains(&m.volume))
        .map(|m| (m.container, m.mount_path.trim_end_matches('/')))
        .filter(|(_, path)| !path.is_empty())
        .map(|(container, path)| (container.to_string(), path.to_string()))
        .collect()
}

/// The entries directly under `mount` that `line` names (`/scratch/job-r37` of
/// `/scratch/job-r37/source.mov: …`), in order.
pub fn entries_under(line: &str, mount: &str) -> Vec<String> {
    let prefix = format!("{mount}/");
    let mut out: Vec<String> = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find(&prefix).map(|i| from + i) {
        from = at + prefix.len();
        // The path starts here, not inside a longer one (`/data/scratch/…`).
        let starts = line[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')));
        if !starts {
            continue;
        }
        let name: String = line[from..]
            .chars()
            .take_while(|c| {
                !c.is_whitespace() && !matches!(c, '/' | '"' | '\'' | ',' | ';' | ':' | ')' | ']')
            })
            .collect();
        let name = name.trim_end_matches('.');
        if name.is_empty() || name == ".." {
            continue;
        }
        let entry = format!("{prefix}{name}");
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    out
}

/// An entry's shape: its digits folded (`/scratch/tx_#f#c#-r#`), so attempts of one piece of
/// work (a counter, a timestamp, a process id) share it.
pub fn shape(entry: &str) -> String {
    let mut out = String::with_capacity(entry.len());
    for c in entry.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The entries of one shape a pod's failures name, each with the first line naming it.
struct Attempts<'a> {
    shape: String,
    entries: Vec<String>,
    lines: Vec<(&'a Evidence, &'a str)>,
}

/// A line the application logged as a failure (error level or worse) that does not say the
/// disk is full.
fn failure_line(line: &str) -> bool {
    log_level(line).is_some_and(|level| level >= LogLevel::Error)
        && !NO_SPACE.is_match(line)
        && !looks_like_injection(line)
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let Some(claim) = round.ctx.alert_claim.as_deref() else {
        return Vec::new();
    };
    if round.ctx.symptom != Symptom::Storage {
        return Vec::new();
    }
    let mut out: Vec<Finding> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (spec_evidence, pod) in round.pods() {
        let Some(name) = str_at(pod, "/metadata/name") else {
            continue;
        };
        if seen.iter().any(|s| s == name)
            || matches!(str_at(pod, "/status/phase"), Some("Failed" | "Succeeded"))
        {
            continue;
        }
        for (container, mount) in claim_mounts(pod, claim) {
            // Per shape, the distinct entries the failures name and the lines naming them.
            let mut shapes: Vec<Attempts<'_>> = Vec::new();
            for log in round
                .evidence
                .iter()
                .filter(|e| is_application_log(e) && object_name(e).as_deref() == Some(name))
            {
                for line in log_lines(log).into_iter().filter(|l| failure_line(l)) {
                    for entry in entries_under(line, &mount) {
                        let key = shape(&entry);
                        let at = match shapes.iter().position(|a| a.shape == key) {
                            Some(at) => at,
                            None => {
                                shapes.push(Attempts {
                                    shape: key,
                                    entries: Vec::new(),
                                    lines: Vec::new(),
                                });
                                shapes.len() - 1
                            }
                        };
                        let attempts = &mut shapes[at];
                        if !attempts.entries.contains(&entry) {
                            attempts.entries.push(entry);
                            attempts.lines.push((log, line));
                        }
                    }
                }
            }
            let Some(Attempts { entries, lines, .. }) = shapes
                .into_iter()
                .filter(|a| a.entries.len() >= MIN_ATTEMPTS)
                .max_by_key(|a| a.entries.len())
            else {
                continue;
            };
            let mut refs = Vec::new();
            for needle in [format!("claimName: {claim}"), format!("mountPath: {mount}")] {
                if let Some(quote) = line_with(spec_evidence, &needle) {
                    refs.push(cite(spec_evidence, quote));
                }
            }
            if refs.is_empty() {
                // The excerpt does not show the spec: nothing to cite for the mount.
                continue;
            }
            // The latest attempts' lines, newest last.
            for (log, line) in lines.iter().rev().take(2).rev() {
                refs.push(cite(log, quote_line(line)));
            }
            let attempts = entries.len();
            let skip = entries.len().saturating_sub(MAX_ENTRIES);
            out.push(
                Finding::new(
                    FailedWorkKept {
                        claim: claim.to_string(),
                        namespace: str_at(pod, "/metadata/namespace").map(str::to_string),
                        pod: name.to_string(),
                        container,
                        mount_path: mount,
                        entries: entries[skip..].to_vec(),
                        attempts,
                    },
                    Confidence::Medium,
                    true,
                )
                .citing(refs),
            );
            seen.push(name.to_string());
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
