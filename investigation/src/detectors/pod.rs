//! Detectors over Kubernetes' own account of a pod or job: `kubectl describe` text, YAML/JSON
//! object dumps (kubernetes-mcp-server's `pods_get`, `resources_get`) and event lists
//! (`events_list`, `kubectl events`). These are structural signals written by the kubelet,
//! scheduler and controllers, so findings here can be verified causes.

use firstline_model::text::prefix;
use std::sync::LazyLock;

use regex::Regex;

use super::logs::crash_line;
use super::text::{
    container_for_line, field, field_value, is_application_log, is_structural,
    looks_like_injection, object_name, quote_from, quote_line,
};
use super::{Confidence, DetectionContext, DetectorKind, Finding, cite, same_resource};
use crate::evidence::{Capability, Evidence};

static CRASH_LOOP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bCrashLoopBackOff\b").expect("static regex"));
static BACKOFF_RESTART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)back-off \S+ ?restarting failed container(?:[= ]([A-Za-z0-9._-]+))?")
        .expect("static regex")
});
static OOM_EVENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bOOMKill(?:ed|ing)\b|out of memory|memory cgroup out of memory")
        .expect("static regex")
});
static IMAGE_PULL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(ErrImagePull|ImagePullBackOff|ErrImageNeverPull|InvalidImageName)\b|failed to pull (?:and unpack )?image|back-off pulling image")
        .expect("static regex")
});
static PULL_MESSAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)failed to pull (?:and unpack )?image").expect("static regex")
});
static QUOTED_IMAGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)image\s+\\*"([^"\\\s]+)\\*""#).expect("static regex"));
static UNSCHEDULABLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bFailedScheduling\b|\d+/\d+ nodes are available|didn't match (?:pod's )?node (?:affinity|selector)|untolerated taint|(?-i:\bInsufficient) [a-z./-]+|unbound immediate PersistentVolumeClaims|volume node affinity conflict")
        .expect("static regex")
});
static NODES_AVAILABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d+/\d+ nodes are available").expect("static regex"));
static INSUFFICIENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bInsufficient ([A-Za-z./-]+)").expect("static regex"));
static TAINT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"untolerated taint\(?s?\)? ?(\{[^}]*\})?").expect("static regex"));
static PROBE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(Readiness|Liveness|Startup) probe (?:failed|errored)\b:?\s*(.*)")
        .expect("static regex")
});
static CONFIG_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:secrets?|configmaps?)\s+\\?"[^"\\]+\\?"\s+not found|couldn't find key \S+ in (?:Secret|ConfigMap)\s+\S+|\bCreateContainerConfigError\b|\bCreateContainerError\b|\bFailedMount\b|MountVolume\.\S+ failed|Unable to attach or mount volumes"#)
        .expect("static regex")
});
static CONFIG_SPECIFIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:secrets?|configmaps?)\s+\\?"[^"\\]+\\?"\s+not found|couldn't find key \S+ in (?:Secret|ConfigMap)\s+\S+|MountVolume\.\S+ failed.*"#)
        .expect("static regex")
});
static SERVER_ERROR_STATUS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)status ?code:? 5\d\d\b").expect("static regex"));
static DISK_PRESSURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bNodeHasDiskPressure\b|\bDiskPressure\b\s+True\b|condition:?\s*\[?DiskPressure|low on resource: ephemeral-storage|ephemeral local storage usage exceeds|no space left on device|node\.kubernetes\.io/disk-pressure|\bEvicted\b.*ephemeral-storage")
        .expect("static regex")
});
static JOB_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bBackoffLimitExceeded\b|Job has reached the specified backoff limit|\bDeadlineExceeded\b|Job was active longer than specified deadline")
        .expect("static regex")
});

/// Structural detectors over one evidence item.
pub(super) fn detect(evidence: &Evidence, ctx: &DetectionContext) -> Vec<Finding> {
    if !is_structural(evidence) {
        return Vec::new();
    }
    let mut lines: Vec<&str> = evidence.excerpt.lines().collect();
    let mut resource = object_name(evidence).or_else(|| ctx.default_resource.clone());
    if is_table(&lines) {
        // A `kubectl get` table lists many objects: keep the rows about the target only, so a
        // neighbour's CrashLoopBackOff is not reported as the target's.
        let rows: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .filter(|row| {
                let name = row.split_whitespace().next().unwrap_or("");
                ctx.default_resource
                    .as_deref()
                    .is_none_or(|target| same_resource(Some(target), Some(name)))
            })
            .collect();
        if rows.is_empty() {
            return Vec::new();
        }
        if rows.len() == 1 {
            resource = rows[0].split_whitespace().next().map(str::to_string);
        }
        lines = std::iter::once(lines[0]).chain(rows).collect();
    }
    let scan = Scan {
        evidence,
        lines: &lines,
        resource: resource.as_deref(),
        service_level: ctx.service_level,
    };
    let mut out = Vec::new();
    out.extend(scan.crash_loop());
    out.extend(scan.terminations());
    out.extend(scan.image_pull());
    out.extend(scan.unschedulable());
    out.extend(scan.probes());
    out.extend(scan.config_errors());
    out.extend(scan.disk_pressure());
    out.extend(scan.job_failed());
    out
}

struct Scan<'a> {
    evidence: &'a Evidence,
    lines: &'a [&'a str],
    resource: Option<&'a str>,
    /// The alert is about the service's requests, not the pod's readiness.
    service_level: bool,
}

impl Scan<'_> {
    fn finding(&self, detector: DetectorKind, title: String, detail: String) -> Finding {
        Finding {
            detector,
            title,
            detail,
            confidence: Confidence::High,
            verified: true,
            resource: self.resource.map(str::to_string),
            refs: Vec::new(),
            at: None,
        }
    }

    fn in_pod(&self) -> String {
        self.resource
            .map(|r| format!(" in `{r}`"))
            .unwrap_or_default()
    }

    fn crash_loop(&self) -> Option<Finding> {
        let reason = self
            .lines
            .iter()
            .position(|l| CRASH_LOOP.is_match(l) && !looks_like_injection(l));
        let backoff = self
            .lines
            .iter()
            .position(|l| BACKOFF_RESTART.is_match(l) && !looks_like_injection(l));
        let restarts = self
            .lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                field_value(l, "restartcount")
                    .and_then(|v| v.parse::<u32>().ok())
                    .map(|n| (i, n))
            })
            .max_by_key(|(_, n)| *n);
        let many_restarts = restarts.filter(|(_, n)| *n >= 3);
        if reason.is_none() && backoff.is_none() && many_restarts.is_none() {
            return None;
        }
        let container = reason
            .and_then(|i| container_for_line(self.lines, i))
            .or_else(|| {
                backoff.and_then(|i| {
                    BACKOFF_RESTART
                        .captures(self.lines[i])
                        .and_then(|c| c.get(1).map(|m| m.as_str().to_string()))
                })
            })
            .or_else(|| restarts.and_then(|(i, _)| container_for_line(self.lines, i)));
        let what = container
            .as_deref()
            .map_or("Container".to_string(), |c| format!("Container `{c}`"));
        let mut detail = format!("{what}{} is crash-looping", self.in_pod());
        if reason.is_some() {
            detail.push_str(" (CrashLoopBackOff)");
        }
        if let Some((_, n)) = restarts.filter(|(_, n)| *n > 0) {
            detail.push_str(&format!("; restarted {n} times"));
        }
        if backoff.is_some() {
            detail.push_str("; the kubelet is backing off restarts");
        }
        detail.push('.');
        let mut finding = self.finding(
            DetectorKind::CrashLoop,
            format!("{what} crash-looping (CrashLoopBackOff)"),
            detail,
        );
        // A crash loop is a symptom: the cause is why the container exits.
        finding.verified = false;
        for index in [reason, backoff, many_restarts.map(|(i, _)| i)]
            .into_iter()
            .flatten()
        {
            let line = self.lines[index];
            let quote = match BACKOFF_RESTART.find(line) {
                Some(m) => quote_from(line, m.start()),
                None => quote_line(line),
            };
            finding.refs.push(cite(self.evidence, quote));
        }
        Some(finding)
    }

    /// OOM kills and other non-zero exits, from `Exit Code:` / `exitCode:` lines and the
    /// `Reason` / `Message` fields of the same termination.
    fn terminations(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut seen_containers: Vec<Option<String>> = Vec::new();
        for (index, line) in self.lines.iter().enumerate() {
            let Some(code) = field_value(line, "exitcode").and_then(|v| v.parse::<i32>().ok())
            else {
                continue;
            };
            if code == 0 {
                continue;
            }
            let container = container_for_line(self.lines, index);
            if seen_containers.contains(&container) {
                continue;
            }
            seen_containers.push(container.clone());
            let reason = self.sibling_field(index, "reason");
            let message = self.sibling_field(index, "message");
            let what = container
                .as_deref()
                .map_or("Container".to_string(), |c| format!("Container `{c}`"));
            let reason_text = reason.map(|(_, v)| v);

            let oom = reason_text == Some("OOMKilled")
                || (code == 137 && self.lines.iter().any(|l| OOM_EVENT.is_match(l)));
            if oom {
                let mut finding = self.finding(
                    DetectorKind::OomKilled,
                    format!("{what} OOMKilled (exit code {code})"),
                    format!(
                        "{what}{} was killed for running out of memory (OOMKilled, exit code {code}){}.",
                        self.in_pod(),
                        self.memory_limit(container.as_deref())
                            .map(|(_, limit)| format!("; its memory limit is {limit}"))
                            .unwrap_or_default()
                    ),
                );
                for index in [reason.map(|(i, _)| i), Some(index)].into_iter().flatten() {
                    finding
                        .refs
                        .push(cite(self.evidence, quote_line(self.lines[index])));
                }
                if let Some((limit_index, _)) = self.memory_limit(container.as_deref()) {
                    finding
                        .refs
                        .push(cite(self.evidence, quote_line(self.lines[limit_index])));
                }
                out.push(finding);
                continue;
            }

            let reason_suffix = reason_text.map(|r| format!(" ({r})")).unwrap_or_default();
            // When the kubelet lost the container, the exit code and message are its own
            // placeholders, not the process's account of why it ended.
            let lost = reason_text == Some(CONTAINER_LOST);
            let usable_message = message
                .filter(|(_, m)| !m.is_empty() && !looks_like_injection(m))
                .filter(|_| !lost);
            let meaning = if lost {
                "the kubelet lost track of the container (its pod was evicted, deleted or its node \
                 failed); the exit code is a placeholder, not the process's own"
            } else {
                exit_code_meaning(code)
            };
            let mut detail = format!(
                "{what}{} exited with code {code}{reason_suffix}: {meaning}.",
                self.in_pod(),
            );
            if let Some((_, text)) = usable_message {
                detail.push_str(&format!(" The runtime reported: {text}"));
            }
            let mut finding = self.finding(
                DetectorKind::ExitCode,
                format!("{what} exited with code {code}{reason_suffix}"),
                detail,
            );
            // Verified only once a line says *why* (the runtime's message here, or the crash
            // line from the previous log, attached later).
            finding.verified = usable_message.is_some();
            finding.confidence = if finding.verified {
                Confidence::High
            } else {
                Confidence::Medium
            };
            for index in [
                Some(index),
                reason.map(|(i, _)| i),
                usable_message.map(|(i, _)| i),
            ]
            .into_iter()
            .flatten()
            {
                finding
                    .refs
                    .push(cite(self.evidence, quote_line(self.lines[index])));
            }
            out.push(finding);
        }

        if out.iter().all(|f| f.detector != DetectorKind::OomKilled)
            && let Some(index) = self.lines.iter().position(|l| {
                OOM_EVENT.is_match(l) && !looks_like_injection(l) && !l.contains("--")
            })
        {
            let mut finding = self.finding(
                DetectorKind::OomKilled,
                "Container OOMKilled".to_string(),
                format!(
                    "A container{} was killed for running out of memory.",
                    self.in_pod()
                ),
            );
            finding
                .refs
                .push(cite(self.evidence, quote_line(self.lines[index])));
            out.push(finding);
        }
        out
    }

    /// A field of the same termination as the line at `index`: same indentation, within a few
    /// lines, not past another state block. (Describe lists Reason above Exit Code; YAML sorts
    /// keys, so `reason` comes below `exitCode`.)
    fn sibling_field(&self, index: usize, key: &str) -> Option<(usize, &str)> {
        let indent = |l: &str| l.len() - l.trim_start().len();
        let own_indent = indent(self.lines[index]);
        let same_block = |i: usize| {
            let l = self.lines[i];
            !l.trim().is_empty() && indent(l) == own_indent
        };
        let below = (index + 1..self.lines.len().min(index + 8)).take_while(|&i| same_block(i));
        let above = (index.saturating_sub(7)..index)
            .rev()
            .take_while(|&i| same_block(i));
        above
            .chain(below)
            .find_map(|i| field_value(self.lines[i], key).map(|v| (i, v)))
    }

    /// The memory limit of a container: `Limits:` / `limits:` followed by `memory: …`.
    fn memory_limit(&self, container: Option<&str>) -> Option<(usize, &str)> {
        self.lines.iter().enumerate().find_map(|(i, l)| {
            let (key, value) = field(l)?;
            if key != "limits" || !value.is_empty() {
                return None;
            }
            if container.is_some() && container_for_line(self.lines, i).as_deref() != container {
                return None;
            }
            (i + 1..self.lines.len().min(i + 4))
                .find_map(|j| field_value(self.lines[j], "memory").map(|v| (j, v)))
        })
    }

    fn image_pull(&self) -> Option<Finding> {
        let usable = |l: &&str| IMAGE_PULL.is_match(l) && !looks_like_injection(l);
        let first = self.lines.iter().position(&usable)?;
        let message_line = self
            .lines
            .iter()
            .position(|l| PULL_MESSAGE.is_match(l) && !looks_like_injection(l));
        let reason_line = self.lines.iter().position(|l| {
            usable(l)
                && !PULL_MESSAGE.is_match(l)
                && (l.contains("ErrImagePull") || l.contains("ImagePullBackOff"))
        });
        let image = message_line
            .or(Some(first))
            .and_then(|i| QUOTED_IMAGE.captures(self.lines[i]))
            .map(|c| c[1].to_string())
            .or_else(|| {
                self.lines
                    .iter()
                    .find_map(|l| field_value(l, "image").map(str::to_string))
            });
        let registry_says = message_line.map(|i| classify_pull_failure(self.lines[i]));
        let image_text = image
            .as_deref()
            .map_or("the image".to_string(), |i| format!("`{i}`"));
        let mut detail = format!("Pulling {image_text}{} fails", self.in_pod());
        if let Some(reason) = registry_says {
            detail.push_str(&format!(": {reason}"));
        }
        detail.push('.');
        let mut finding = self.finding(
            DetectorKind::ImagePull,
            format!("Image pull failing for {image_text}"),
            detail,
        );
        if let Some(i) = message_line {
            let line = self.lines[i];
            let start = PULL_MESSAGE.find(line).map_or(0, |m| m.start());
            finding
                .refs
                .push(cite(self.evidence, quote_from(line, start)));
        }
        for i in [reason_line, Some(first)].into_iter().flatten() {
            let quote = quote_line(self.lines[i]);
            if finding.refs.len() < 2 && !finding.refs.iter().any(|c| c.quote == quote) {
                finding.refs.push(cite(self.evidence, quote));
            }
        }
        Some(finding)
    }

    fn unschedulable(&self) -> Option<Finding> {
        let index = self
            .lines
            .iter()
            .position(|l| NODES_AVAILABLE.is_match(l) && !looks_like_injection(l))
            .or_else(|| {
                self.lines
                    .iter()
                    .position(|l| UNSCHEDULABLE.is_match(l) && !looks_like_injection(l))
            })?;
        let line = self.lines[index];
        let mut reasons: Vec<String> = INSUFFICIENT
            .captures_iter(line)
            .map(|c| format!("insufficient {}", c[1].trim_end_matches(['.', ',', ';'])))
            .collect();
        let lower = line.to_ascii_lowercase();
        if lower.contains("node affinity") || lower.contains("node selector") {
            reasons.push("no node matches the pod's node selector/affinity".to_string());
        }
        if let Some(c) = TAINT.captures(line) {
            let taint = c
                .get(1)
                .map_or(String::new(), |m| format!(" {}", m.as_str()));
            reasons.push(format!("untolerated taint{taint}"));
        }
        if lower.contains("persistentvolumeclaim") {
            reasons.push("unbound PersistentVolumeClaim".to_string());
        }
        reasons.dedup();
        let why = if reasons.is_empty() {
            "the scheduler found no node for it".to_string()
        } else {
            reasons.join(", ")
        };
        let start = UNSCHEDULABLE.find(line).map_or(0, |m| {
            NODES_AVAILABLE.find(line).map_or(m.start(), |n| n.start())
        });
        let mut finding = self.finding(
            DetectorKind::Unschedulable,
            format!("Pod unschedulable: {why}"),
            format!("The pod{} cannot be scheduled: {why}.", self.in_pod()),
        );
        finding
            .refs
            .push(cite(self.evidence, quote_from(line, start)));
        Some(finding)
    }

    fn probes(&self) -> Vec<Finding> {
        let mut out: Vec<Finding> = Vec::new();
        for line in self.lines {
            if looks_like_injection(line) {
                continue;
            }
            let Some(caps) = PROBE.captures(line) else {
                continue;
            };
            let kind = caps[1].to_string();
            if out.iter().any(|f| f.title.starts_with(&kind)) {
                continue;
            }
            let message = caps[2].trim().trim_matches(['"', '\'']).to_string();
            let consequence = match kind.to_ascii_lowercase().as_str() {
                "liveness" => "the kubelet restarts the container",
                "startup" => "the container never becomes started and is restarted",
                _ => "the pod is taken out of service endpoints",
            };
            let short = prefix(&message, 100);
            let mut finding = self.finding(
                DetectorKind::ProbeFailure,
                format!("{kind} probe failing: {short}"),
                format!(
                    "The {} probe{} fails ({message}); {consequence}.",
                    kind.to_ascii_lowercase(),
                    self.in_pod()
                ),
            );
            finding.confidence = Confidence::Medium;
            // Under an error-rate or latency alert, a readiness probe answered with a server
            // error is one more symptom: the application itself reports that it cannot serve
            // (a dependency, a pool). For a not-ready alert it is the explanation.
            if self.service_level
                && kind.eq_ignore_ascii_case("readiness")
                && SERVER_ERROR_STATUS.is_match(&message)
            {
                finding.verified = false;
                finding.detail = format!(
                    "The readiness probe{} gets {message}: the application reports itself unable \
                     to serve, so the pod is taken out of service endpoints. Why it cannot serve \
                     is in its log.",
                    self.in_pod()
                );
            }
            let start = caps.get(0).map_or(0, |m| m.start());
            finding
                .refs
                .push(cite(self.evidence, quote_from(line, start)));
            out.push(finding);
        }
        out
    }

    fn config_errors(&self) -> Option<Finding> {
        let usable = |l: &str| !looks_like_injection(l);
        let specific = self
            .lines
            .iter()
            .position(|l| CONFIG_SPECIFIC.is_match(l) && usable(l));
        let any = self
            .lines
            .iter()
            .position(|l| CONFIG_ERROR.is_match(l) && usable(l))?;
        let index = specific.unwrap_or(any);
        let line = self.lines[index];
        let matched = CONFIG_SPECIFIC
            .find(line)
            .or_else(|| CONFIG_ERROR.find(line))
            .map_or("", |m| m.as_str());
        let is_mount = matched.contains("Mount") || matched.contains("mount");
        let headline = prefix(matched, 120);
        let title = if is_mount {
            format!("Volume mount failing: {headline}")
        } else {
            format!("Configuration error: {headline}")
        };
        let mut finding = self.finding(
            DetectorKind::ConfigError,
            title,
            format!(
                "The container{} cannot start because its configuration is missing or wrong: {headline}.",
                self.in_pod()
            ),
        );
        let start = line.find(matched).unwrap_or(0);
        finding
            .refs
            .push(cite(self.evidence, quote_from(line, start)));
        if index != any {
            finding
                .refs
                .push(cite(self.evidence, quote_line(self.lines[any])));
        }
        Some(finding)
    }

    fn disk_pressure(&self) -> Option<Finding> {
        let index = self.lines.iter().position(|l| {
            let lower = l.to_ascii_lowercase();
            DISK_PRESSURE.is_match(l)
                && !looks_like_injection(l)
                // Tolerations of the disk-pressure taint are normal for DaemonSets.
                && !lower.contains("toleration")
                && !lower.contains("op=exists")
                && !lower.contains("no disk pressure")
                && !lower.contains("nodiskpressure")
        })?;
        let line = self.lines[index];
        let start = DISK_PRESSURE.find(line).map_or(0, |m| m.start());
        let mut finding = self.finding(
            DetectorKind::DiskPressure,
            "Disk pressure / out of disk space".to_string(),
            format!(
                "The node or container{} is out of disk space (disk pressure, eviction or ENOSPC).",
                self.in_pod()
            ),
        );
        finding
            .refs
            .push(cite(self.evidence, quote_from(line, start)));
        Some(finding)
    }

    fn job_failed(&self) -> Option<Finding> {
        let index = self
            .lines
            .iter()
            .position(|l| JOB_FAILED.is_match(l) && !looks_like_injection(l))?;
        let line = self.lines[index];
        let matched = JOB_FAILED.find(line).map_or("", |m| m.as_str());
        let limit = self
            .lines
            .iter()
            .position(|l| field_value(l, "backofflimit").is_some());
        let statuses = self
            .lines
            .iter()
            .position(|l| field_value(l, "podsstatuses").is_some());
        let (reason, explanation) = if matched.contains("eadline") {
            ("DeadlineExceeded", "it ran longer than its active deadline")
        } else {
            (
                "BackoffLimitExceeded",
                "its pods failed until the backoff limit was reached",
            )
        };
        let what = self
            .resource
            .map_or("The job".to_string(), |r| format!("Job `{r}`"));
        let mut finding = self.finding(
            DetectorKind::JobFailed,
            format!("{what} failed: {reason}"),
            format!("{what} failed ({reason}): {explanation}."),
        );
        finding.verified = false;
        finding.refs.push(cite(
            self.evidence,
            quote_from(line, line.find(matched).unwrap_or(0)),
        ));
        for i in [limit, statuses].into_iter().flatten() {
            finding
                .refs
                .push(cite(self.evidence, quote_line(self.lines[i])));
        }
        Some(finding)
    }
}

/// A `kubectl get` / `kubectl events` table: a header row of upper-case column names.
fn is_table(lines: &[&str]) -> bool {
    lines.first().is_some_and(|header| {
        let columns: Vec<&str> = header.split_whitespace().collect();
        columns.len() >= 3
            && columns.first() == Some(&"NAME")
            && columns.iter().all(|c| {
                c.chars()
                    .all(|ch| ch.is_ascii_uppercase() || "-()_".contains(ch))
            })
    })
}

/// What the registry's answer means, from the kubelet's pull failure message.
fn classify_pull_failure(message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    if lower.contains("manifest unknown")
        || lower.contains("manifest for")
        || lower.contains(": not found")
    {
        "the tag or manifest does not exist in the registry"
    } else if lower.contains("pull access denied")
        || lower.contains("unauthorized")
        || lower.contains("authorization failed")
        || lower.contains("403")
        || lower.contains("forbidden")
    {
        "the registry denied access: the repository does not exist or needs credentials"
    } else if lower.contains("no such host")
        || lower.contains("i/o timeout")
        || lower.contains("connection refused")
    {
        "the registry is unreachable"
    } else if lower.contains("not found") {
        "the image was not found"
    } else {
        "the registry rejected the pull"
    }
}

/// The termination reason the kubelet records when a container disappeared without a status
/// (eviction, pod deletion, node loss); it comes with exit code 137 and a bookkeeping message.
const CONTAINER_LOST: &str = "ContainerStatusUnknown";

/// A short reading of common exit codes (shell and signal conventions).
fn exit_code_meaning(code: i32) -> &'static str {
    match code {
        1 => "the application reported a general error",
        2 => "misuse of a shell builtin or bad arguments",
        78 => "configuration error (EX_CONFIG)",
        126 => "the command is not executable",
        127 => "command not found",
        128 => "the container process could not be started",
        134 => "aborted (SIGABRT)",
        137 => "killed with SIGKILL (out of memory or a failed liveness probe)",
        139 => "segmentation fault (SIGSEGV)",
        143 => "terminated with SIGTERM",
        _ => "the process failed",
    }
}

/// Adds the crash line — the last error-ish line of the previous container's log (or of the
/// current log when there is no previous one) — to exit-code findings, which verifies them.
/// When a crash is evident (crash loop, failed job) but no exit code was seen, the crash line
/// becomes an exit-code finding of its own.
pub(super) fn attach_crash_lines(
    findings: &mut Vec<Finding>,
    evidence: &[Evidence],
    ctx: &DetectionContext,
) {
    let crashed: Vec<Option<String>> = findings
        .iter()
        .filter(|f| {
            matches!(
                f.detector,
                DetectorKind::CrashLoop | DetectorKind::JobFailed | DetectorKind::ExitCode
            )
        })
        .map(|f| f.resource.clone())
        .collect();
    if crashed.is_empty() {
        return;
    }
    let logs_in_order = evidence
        .iter()
        .filter(|e| e.capability == Capability::PodLogsPrevious)
        .chain(
            evidence
                .iter()
                .filter(|e| is_application_log(e) && e.capability != Capability::PodLogsPrevious),
        );
    let mut best: Option<(&Evidence, String, bool)> = None;
    for log in logs_in_order {
        let log_resource = object_name(log).or_else(|| ctx.default_resource.clone());
        let relevant = crashed
            .iter()
            .any(|r| same_resource(r.as_deref(), log_resource.as_deref()));
        if !relevant {
            continue;
        }
        if let Some(line) = crash_line(&log.excerpt) {
            best = Some((
                log,
                quote_line(line),
                log.capability == Capability::PodLogsPrevious,
            ));
            break;
        }
    }
    let Some((log, quote, from_previous)) = best else {
        return;
    };
    let confidence = if from_previous {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let source = if from_previous {
        "previous container's log"
    } else {
        "container log"
    };
    if let Some(exit) = findings
        .iter_mut()
        .find(|f| f.detector == DetectorKind::ExitCode && !f.verified)
    {
        exit.detail
            .push_str(&format!(" Last error line in the {source}: `{quote}`"));
        exit.refs.push(cite(log, quote));
        exit.verified = true;
        exit.confidence = confidence;
        return;
    }
    if findings
        .iter()
        .any(|f| f.detector == DetectorKind::ExitCode)
    {
        return;
    }
    let resource = object_name(log).or_else(|| ctx.default_resource.clone());
    let in_pod = resource
        .as_deref()
        .map(|r| format!(" of `{r}`"))
        .unwrap_or_default();
    findings.push(Finding {
        detector: DetectorKind::ExitCode,
        title: format!("Crash log line: {}", prefix(&quote, 100)),
        detail: format!("The last error line in the {source}{in_pod} before it failed: `{quote}`"),
        confidence,
        verified: true,
        resource,
        refs: vec![cite(log, quote)],
        at: None,
    });
}
