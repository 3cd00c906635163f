//! Probes that fail: the kubelet's "Readiness/Liveness/Startup probe failed: …" in a pod's
//! description or events.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ProbeFailure`] | cause; a symptom when a readiness probe answers 5xx under a service-level alert | the kubelet reports it |
//!
//! A liveness probe that fails gets the container killed: it explains that container's exits
//! (143, 137), its crash loop and its restarts. A readiness probe answered with a server error
//! while the service's requests fail is the application saying it cannot serve — one more
//! symptom, whose cause is in its log. One failure while a container starts is routine
//! (`standing.rs`).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::finding::in_pod;
use super::text::{event_time, looks_like_injection, object_name, quote_from, quote_line};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite, same_pod,
};
use crate::kube;

static PROBE: LazyLock<Regex> =
    regex!(r"(?i)\b(Readiness|Liveness|Startup) probe (?:failed|errored)\b:?\s*(.*)");
static SERVER_ERROR_STATUS: LazyLock<Regex> = regex!(r"(?i)status ?code:? 5\d\d\b");
/// An event's repeat count: `(x40 over 30m)` in a description, `count: 40` in a list.
static REPEATS: LazyLock<Regex> = regex!(r"\(x(\d+) over|(?i)^\s*count:\s*(\d+)");

/// Which probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    Readiness,
    Liveness,
    Startup,
}

impl Probe {
    fn name(self) -> &'static str {
        match self {
            Probe::Readiness => "Readiness",
            Probe::Liveness => "Liveness",
            Probe::Startup => "Startup",
        }
    }
}

/// A probe the kubelet reports failing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeFailure {
    pub pod: Option<String>,
    pub probe: Probe,
    /// What the probe got (`HTTP probe failed with statuscode: 503`).
    pub message: String,
    /// How many times the event was seen, when it says.
    pub count: Option<u32>,
    /// A readiness probe answered with a server error under an alert about the service's
    /// requests: the application says it cannot serve.
    pub answers_server_error: bool,
    /// What an HTTP probe asks for, from the pod's spec (`GET :8080/actuator/health`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asks: Option<String>,
    /// The probe's connections are refused on one port while the container's own log says it
    /// listens on this other one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listens_on: Option<u16>,
}

impl Payload for ProbeFailure {
    const SPEC: KindSpec = KindSpec {
        name: "probe-failure",
        role: Role::Cause,
        verified_when: "the kubelet reports the probe failing",
        accounts_for: &[Symptom::Unavailable, Symptom::Restarts, Symptom::Errors],
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            probe: Probe::Liveness,
            message: "Get \"http://10.1.2.3:8080/healthz\": context deadline exceeded".into(),
            count: Some(12),
            answers_server_error: false,
            asks: None,
            listens_on: None,
        }
    }

    fn title(&self) -> String {
        if let Some(port) = self.listens_on {
            return format!(
                "{} probe refused: it probes a port the container does not listen on (the \
                 container listens on {port})",
                self.probe.name()
            );
        }
        let asks = self
            .asks
            .as_deref()
            .map_or(String::new(), |a| format!(" (`{a}`)"));
        format!(
            "{} probe failing: {}{asks}",
            self.probe.name(),
            firstline_model::text::clip(&self.message, 100, "…")
        )
    }

    fn detail(&self) -> String {
        if self.answers_server_error {
            return format!(
                "The readiness probe{} gets {}: the application reports itself unable to \
                 serve, so the pod is taken out of service endpoints. Why it cannot serve is in \
                 its log.",
                in_pod(self.pod.as_deref()),
                self.message
            );
        }
        let consequence = match self.probe {
            Probe::Liveness => "the kubelet restarts the container",
            Probe::Startup => "the container never becomes started and is restarted",
            Probe::Readiness => "the pod is taken out of service endpoints",
        };
        format!(
            "The {} probe{} fails ({}); {consequence}.",
            self.probe.name().to_ascii_lowercase(),
            in_pod(self.pod.as_deref()),
            self.message
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn role(&self) -> Role {
        if self.answers_server_error {
            Role::Symptom
        } else {
            Role::Cause
        }
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.probe == other.probe
            && super::same_subject(self.subject().as_ref(), other.subject().as_ref())
    }

    fn step(&self, scene: &Scene) -> String {
        if let Some(port) = self.listens_on {
            return format!(
                "Make the probe and the container agree on the port: the container listens on \
                 {port} — point the probe (and the containerPort and Service targetPort) there, \
                 or put the listen address back, in {}.",
                scene.workload_of(self.pod.as_deref())
            );
        }
        match self.probe {
            Probe::Liveness | Probe::Startup => format!(
                "Check the probe against the app's start-up time: if it is only slow to start, \
                 give it a startupProbe or raise initialDelaySeconds / failureThreshold in {} \
                 rather than letting the kubelet kill it.",
                scene.workload_of(self.pod.as_deref())
            ),
            Probe::Readiness => format!(
                "Check the probe's path and port against what the app serves, and its start-up \
                 time; if it is only slow, raise initialDelaySeconds / failureThreshold in {}.",
                scene.workload_of(self.pod.as_deref())
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        let same = |pod: &Option<String>| same_pod(self.pod.as_deref(), pod.as_deref());
        match (self.probe, &effect.fact) {
            (Probe::Liveness | Probe::Startup, Fact::Exited(e)) => e.signalled() && same(&e.pod),
            (Probe::Liveness | Probe::Startup, Fact::CrashLoop(c)) => same(&c.pod),
            (Probe::Liveness | Probe::Startup, Fact::RestartTrend(r)) => same(&r.pod),
            // A pod failing its startup probe is never ready either.
            (Probe::Readiness | Probe::Startup, Fact::NoEndpoints(e)) => self
                .pod
                .as_deref()
                .is_some_and(|pod| e.not_ready_pods.iter().any(|n| n == pod)),
            _ => false,
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = failures(round);
    let pods = round.pods();
    for finding in &mut out {
        let Fact::ProbeFailure(failure) = &mut finding.fact else {
            continue;
        };
        let Some((evidence, pod)) = pods.iter().find(|(_, p)| {
            kube::str_at(p, "/metadata/name").is_some_and(|n| Some(n) == failure.pod.as_deref())
        }) else {
            continue;
        };
        if let Some((asks, path)) = http_probe(pod, failure.probe) {
            failure.asks = Some(asks);
            if let Some(line) = evidence
                .excerpt
                .lines()
                .find(|l| l.trim_start().starts_with("path:") && l.contains(path.as_str()))
            {
                finding.add_ref(cite(evidence, quote_line(line)), 4);
            }
        }
    }
    // A probe refused on one port while the container's log names the one it listens on.
    let logs = super::logscan::LogScan::all(round, false);
    for finding in &mut out {
        let Fact::ProbeFailure(failure) = &mut finding.fact else {
            continue;
        };
        let Some(refused) = REFUSED_PORT
            .captures(&failure.message)
            .and_then(|c| c[1].parse::<u16>().ok())
        else {
            continue;
        };
        let listening = logs
            .iter()
            .filter(|scan| same_pod(scan.pod.as_deref(), failure.pod.as_deref()))
            .find_map(|scan| {
                scan.lines.iter().rev().find_map(|(_, line)| {
                    let port = LISTENING.captures(line)?[1].parse::<u16>().ok()?;
                    Some((scan.evidence, *line, port))
                })
            });
        if let Some((evidence, line, port)) = listening.filter(|(_, _, p)| *p != refused) {
            failure.listens_on = Some(port);
            finding.add_ref(cite(evidence, quote_line(line)), 4);
        }
    }
    out
}

/// A probe's connection refused, and the port it tried.
static REFUSED_PORT: LazyLock<Regex> = regex!(r":(\d{2,5}): connect: connection refused");
/// A server saying which port it listens on.
static LISTENING: LazyLock<Regex> = regex!(
    r#"(?i)\b(?:listening on|listen(?:ing)? address|started on port\(s\)?:?|server listening on)\b[^\n]{0,40}?[:\s=](\d{2,5})\b"#
);

/// What the pod's `probe` asks for when it is an HTTP probe: (`GET :port/path`, the path).
fn http_probe(pod: &serde_json::Value, probe: Probe) -> Option<(String, String)> {
    let key = match probe {
        Probe::Liveness => "livenessProbe",
        Probe::Readiness => "readinessProbe",
        Probe::Startup => "startupProbe",
    };
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .find_map(|c| c.get(key)?.get("httpGet"))
        .and_then(|get| {
            let path = kube::str_at(get, "/path")?.to_string();
            let port = get.get("port").map(|p| match p {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            let asks = match port {
                Some(port) => format!("GET :{port}{path}"),
                None => format!("GET {path}"),
            };
            Some((asks, path))
        })
}

/// The probe failures the kubelet reports, each probe once per object.
fn failures(round: &Round<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for (evidence, ctx) in round.structural() {
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        let pod = object_name(evidence).or_else(|| ctx.default_resource.clone());
        let mut seen: Vec<Probe> = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if looks_like_injection(line) {
                continue;
            }
            let Some(caps) = PROBE.captures(line) else {
                continue;
            };
            let probe = match caps[1].to_ascii_lowercase().as_str() {
                "liveness" => Probe::Liveness,
                "startup" => Probe::Startup,
                _ => Probe::Readiness,
            };
            if seen.contains(&probe) {
                continue;
            }
            seen.push(probe);
            let message =
                with_block_continuation(&lines, index, caps[2].trim().trim_matches(['"', '\'']));
            let answers_server_error = ctx.service_level
                && probe == Probe::Readiness
                && SERVER_ERROR_STATUS.is_match(&message);
            let count = repeat_count(&lines, index);
            let start = caps.get(0).map_or(0, |m| m.start());
            out.push(
                Finding::new(
                    ProbeFailure {
                        pod: pod.clone(),
                        probe,
                        message,
                        count,
                        answers_server_error,
                        asks: None,
                        listens_on: None,
                    },
                    Confidence::Medium,
                    !answers_server_error,
                )
                .dated(event_time(&lines, index, evidence.fetched_at))
                .citing(vec![cite(evidence, quote_from(line, start))]),
            );
        }
    }
    out
}

/// A probe's output that spans lines (a YAML block scalar, `Message: |-`, holding `vault
/// status`'s table) read as one message, whitespace collapsed: what it says is often not on its
/// first line (`Key  Value` … `Sealed  true`).
fn with_block_continuation(lines: &[&str], index: usize, first: &str) -> String {
    const MAX_LINES: usize = 12;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let in_block = index
        .checked_sub(1)
        .and_then(|i| lines.get(i))
        .is_some_and(|prev| {
            let prev = prev.trim_end();
            prev.ends_with('|') || prev.ends_with("|-") || prev.ends_with('>')
        });
    if !in_block {
        return first.to_string();
    }
    let own = indent(lines[index]);
    let rest = lines[index + 1..]
        .iter()
        .take(MAX_LINES)
        .take_while(|l| !l.trim().is_empty() && indent(l) == own)
        .map(|l| l.trim());
    std::iter::once(first)
        .chain(rest)
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// How many times the event on line `index` was seen: on its own line (a description's
/// `(x40 over 30m)`) or in its list item (`count: 40`).
fn repeat_count(lines: &[&str], index: usize) -> Option<u32> {
    let own = REPEATS.captures(lines[index]).and_then(|c| c.get(1));
    if let Some(m) = own {
        return m.as_str().parse().ok();
    }
    let blocks = super::text::event_blocks(lines);
    let block = blocks
        .iter()
        .find(|b| b.iter().any(|l| std::ptr::eq(*l, lines[index])))?;
    block
        .iter()
        .find_map(|l| REPEATS.captures(l).and_then(|c| c.get(2)))
        .and_then(|m| m.as_str().parse().ok())
}

#[cfg(test)]
mod tests;
