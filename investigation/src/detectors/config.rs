//! Configuration a container cannot start or run without: a Secret or ConfigMap that does not
//! exist, a key missing from one, a volume that cannot be mounted (from the kubelet's events
//! and status), or a setting the application says is missing (from its log).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ConfigError`] | cause | the kubelet reports it; from a log: the container crashed and the line ends its log |
//!
//! What explains what: a configuration error explains its pod's exits, crash loop and crash
//! line (the crash line is the same story told by the log). The kubelet's start-up warning
//! about `kube-root-ca.crt` "not registered" is routine noise, not a missing object
//! (`standing.rs`).

use std::sync::LazyLock;

use firstline_model::text::prefix;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::logscan::LogScan;
use super::text::{looks_like_injection, object_name, quote_deciding, quote_from, quote_line};
use super::{
    Confidence, Finding, KindSpec, ObjectKind, POD_FAILURES, Payload, Role, Round, Scene, Subject,
    cite,
};

static CONFIG_ERROR: LazyLock<Regex> = regex!(
    r#"(?i)\b(?:secrets?|configmaps?)\s+\\?"[^"\\]+\\?"\s+not found|couldn't find key \S+ in (?:Secret|ConfigMap)\s+\S+|\bCreateContainerConfigError\b|\bCreateContainerError\b|\bFailedMount\b|MountVolume\.\S+ failed|Unable to attach or mount volumes"#
);
static CONFIG_SPECIFIC: LazyLock<Regex> = regex!(
    r#"(?i)\b(?:secrets?|configmaps?)\s+\\?"[^"\\]+\\?"\s+not found|couldn't find key \S+ in (?:Secret|ConfigMap)\s+\S+|MountVolume\.\S+ failed.*"#
);
static MISSING_OBJECT: LazyLock<Regex> =
    regex!(r#"(?i)\b(secret|configmap)s?\s+\\?"([^"\\]+)\\?"\s+not found"#);
static MISSING_KEY: LazyLock<Regex> =
    regex!(r"(?i)couldn't find key (\S+) in (Secret|ConfigMap)\s+(\S+)");
static MOUNT_VOLUME: LazyLock<Regex> =
    regex!(r#"(?i)MountVolume\.\S+ failed for volume \\?"([^"\\]+)\\?""#);
static MISSING_SETTING: LazyLock<Regex> = regex!(
    r"(?i)\b(?:missing|required|not set|undefined|unset|no value for)\b.{0,40}\b(?:env(?:ironment)?(?: var(?:iable)?)?|config(?:uration)?|setting|key|variable|option|parameter)\b|\b(?:env(?:ironment)?(?: var(?:iable)?)?|config(?:uration)?(?: key)?|setting|variable|option|parameter)\b.{0,60}\b(?:is missing|missing|is required|not set|not defined|undefined|unset|is empty)\b|\bKeyError: '"
);
static UPPER_NAME: LazyLock<Regex> = regex!(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{4,}\b");

/// What is wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum ConfigProblem {
    /// A Secret or ConfigMap the pod references does not exist.
    MissingObject { object_kind: String, name: String },
    /// A key the pod references is not in its Secret or ConfigMap.
    MissingKey {
        key: String,
        object_kind: String,
        object: String,
    },
    /// A volume cannot be mounted (`MountVolume.SetUp failed for volume "certs": …`).
    Mount {
        volume: Option<String>,
        says: String,
    },
    /// The kubelet reports `CreateContainerConfigError` / `CreateContainerError` without
    /// saying which reference.
    Container { reason: String },
    /// The application says a setting is missing (`required key PAYMENT_MODE is not set`).
    MissingSetting { name: Option<String>, says: String },
}

/// Configuration a container cannot start or run without.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigError {
    pub pod: Option<String>,
    pub problem: ConfigProblem,
}

impl ConfigProblem {
    /// What is missing or wrong, in a few words (`Secret "db" not found`).
    fn what(&self) -> String {
        match self {
            Self::MissingObject { object_kind, name } => {
                format!("{object_kind} \"{name}\" not found")
            }
            Self::MissingKey {
                key,
                object_kind,
                object,
            } => format!("couldn't find key {key} in {object_kind} {object}"),
            Self::Mount { says, .. } => prefix(says, 120).to_string(),
            Self::Container { reason } => reason.clone(),
            Self::MissingSetting { name, says } => name.clone().unwrap_or_else(|| says.clone()),
        }
    }
}

impl Payload for ConfigError {
    const SPEC: KindSpec = KindSpec {
        name: "config-error",
        role: Role::Cause,
        verified_when: "the kubelet reports the missing object, key or mount; from a log, the \
                        container crashed and the line ends its log",
        accounts_for: POD_FAILURES,
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            problem: ConfigProblem::MissingSetting {
                name: Some("PAYMENT_MODE".into()),
                says: "config: required key PAYMENT_MODE is not set".into(),
            },
        }
    }

    fn title(&self) -> String {
        match &self.problem {
            ConfigProblem::Mount { .. } => format!("Volume mount failing: {}", self.problem.what()),
            ConfigProblem::MissingSetting { name: Some(_), .. } => {
                format!("Missing configuration: {}", self.problem.what())
            }
            ConfigProblem::MissingSetting { name: None, .. } => "Missing configuration".into(),
            _ => format!("Configuration error: {}", self.problem.what()),
        }
    }

    fn detail(&self) -> String {
        match &self.problem {
            ConfigProblem::MissingSetting { says, .. } => format!(
                "The application{} reports missing configuration: `{says}`",
                in_pod(self.pod.as_deref())
            ),
            _ => format!(
                "The container{} cannot start because its configuration is missing or wrong: {}.",
                in_pod(self.pod.as_deref()),
                self.problem.what()
            ),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn step(&self, scene: &Scene) -> String {
        let ns = &scene.namespace;
        match &self.problem {
            ConfigProblem::MissingSetting {
                name: Some(key), ..
            } => format!(
                "Set `{key}` in {}'s env / ConfigMap and roll out (`kubectl -n {ns} rollout \
                 restart {}` after changing a ConfigMap).",
                scene.owner(),
                scene.workload_ref
            ),
            ConfigProblem::MissingKey {
                key,
                object_kind,
                object,
            } => format!(
                "Add key `{key}` to {object_kind} `{}` (or fix the reference in {}'s spec), \
                 then let the pods restart (`kubectl -n {ns} rollout restart {}`).",
                object.rsplit('/').next().unwrap_or(object),
                scene.owner(),
                scene.workload_ref
            ),
            ConfigProblem::MissingObject { object_kind, name } => format!(
                "Create {object_kind} `{name}` in `{ns}` (or fix the reference to it in {}'s \
                 spec), then let {} retry (`kubectl -n {ns} rollout restart {}`).",
                scene.owner(),
                scene.owner(),
                scene.workload_ref
            ),
            ConfigProblem::Mount { .. } => format!(
                "Fix the volume the event names (the object it mounts, or the storage behind \
                 it), then let {} retry (`kubectl -n {ns} rollout restart {}`).",
                scene.owner(),
                scene.workload_ref
            ),
            ConfigProblem::Container { .. } | ConfigProblem::MissingSetting { name: None, .. } => {
                format!(
                    "Fix the configuration the error names in {}'s spec or ConfigMap and roll \
                     out (`kubectl -n {ns} describe pod` names it).",
                    scene.owner()
                )
            }
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        pod_failure_explains(self.pod.as_deref(), effect)
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let logs = LogScan::all(round, false);
    round
        .structural()
        .iter()
        .flat_map(|(evidence, ctx)| {
            let lines: Vec<&str> = evidence.excerpt.lines().collect();
            let pod = object_name(evidence).or_else(|| ctx.default_resource.clone());
            from_kubelet(evidence, &lines, pod)
        })
        .chain(logs.iter().filter_map(missing_setting))
        .collect()
}

/// What the kubelet says about a pod's configuration references.
fn from_kubelet(
    evidence: &crate::evidence::Evidence,
    lines: &[&str],
    pod: Option<String>,
) -> Option<Finding> {
    let usable = |l: &str| !looks_like_injection(l);
    let specific = lines
        .iter()
        .position(|l| CONFIG_SPECIFIC.is_match(l) && usable(l));
    let any = lines
        .iter()
        .position(|l| CONFIG_ERROR.is_match(l) && usable(l))?;
    let index = specific.unwrap_or(any);
    let line = lines[index];
    let matched = CONFIG_SPECIFIC
        .find(line)
        .or_else(|| CONFIG_ERROR.find(line))
        .map_or("", |m| m.as_str());
    let problem = if let Some(c) = MISSING_KEY.captures(line) {
        ConfigProblem::MissingKey {
            key: c[1].to_string(),
            object_kind: c[2].to_string(),
            object: c[3].trim_end_matches(['.', ',', '"', '\'']).to_string(),
        }
    } else if let Some(c) = MISSING_OBJECT.captures(line) {
        let kind = if c[1].eq_ignore_ascii_case("secret") {
            "Secret"
        } else {
            "ConfigMap"
        };
        ConfigProblem::MissingObject {
            object_kind: kind.to_string(),
            name: c[2].to_string(),
        }
    } else if matched.contains("Mount") || matched.contains("mount") {
        ConfigProblem::Mount {
            volume: MOUNT_VOLUME.captures(line).map(|c| c[1].to_string()),
            says: prefix(matched, 240).to_string(),
        }
    } else {
        ConfigProblem::Container {
            reason: prefix(matched, 120).to_string(),
        }
    };
    let mut finding = Finding::new(ConfigError { pod, problem }, Confidence::High, true);
    let start = line.find(matched).unwrap_or(0);
    finding.refs.push(cite(evidence, quote_from(line, start)));
    if index != any {
        finding.refs.push(cite(evidence, quote_line(lines[any])));
    }
    Some(finding)
}

/// A setting the application says is missing, from its log.
fn missing_setting(scan: &LogScan<'_>) -> Option<Finding> {
    let (index, line) = scan.last(&MISSING_SETTING)?;
    let name = UPPER_NAME.find_iter(line).map(|m| m.as_str()).find(|n| {
        !matches!(
            *n,
            "ERROR" | "FATAL" | "WARN" | "WARNING" | "INFO" | "DEBUG" | "PANIC"
        )
    });
    let quote = quote_deciding(line, &MISSING_SETTING);
    let (verified, confidence) = scan.strength(index);
    Some(
        Finding::new(
            ConfigError {
                pod: scan.pod.clone(),
                problem: ConfigProblem::MissingSetting {
                    name: name.map(str::to_string),
                    says: quote.clone(),
                },
            },
            confidence,
            verified,
        )
        .citing(vec![cite(scan.evidence, quote)]),
    )
}

#[cfg(test)]
mod tests;
