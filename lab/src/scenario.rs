//! The scenario format: one incident, as `lab/scenarios/<name>/scenario.yaml` (documented in
//! `lab/README.md`).
//!
//! A scenario holds the Slack alert, the world the tools see (pods, events, deployments, logs,
//! metric series, log streams, traces — all at times relative to the alert), optional verbatim
//! tool results for fault injection, optional past incidents and thread replies, and the
//! expectation the investigation is scored against. Kubernetes-shaped fields use Kubernetes'
//! own camelCase names (`restartCount`, `lastState`, `exitCode`); everything else is snake_case.
//! Unknown keys are errors, so a typo never silently drops part of the world.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::reltime::RelTime;

/// Why a scenario could not be loaded. Messages name the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: `{field}`: {message}")]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

/// A loaded scenario, with its alert time fixed.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The directory name.
    pub name: String,
    /// Where it was loaded from (`…/scenario.yaml`).
    pub path: PathBuf,
    /// When the alert fired; the world's relative times are relative to this.
    pub alert_at: DateTime<Utc>,
    /// The file's content.
    pub spec: ScenarioSpec,
}

/// The content of `scenario.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// What the scenario is about, for people.
    #[serde(default)]
    pub description: Option<String>,
    pub alert: AlertSpec,
    #[serde(default)]
    pub pods: Vec<PodSpec>,
    #[serde(default)]
    pub events: Vec<EventSpec>,
    #[serde(default)]
    pub deployments: Vec<DeploymentSpec>,
    #[serde(default)]
    pub logs: Vec<LogSpec>,
    #[serde(default)]
    pub metrics: Vec<MetricSpec>,
    #[serde(default)]
    pub log_streams: Vec<LogStreamSpec>,
    #[serde(default)]
    pub traces: Vec<TraceSpec>,
    #[serde(default)]
    pub raw_tool_results: Vec<RawToolResult>,
    #[serde(default)]
    pub past_incidents: Vec<PastIncident>,
    #[serde(default)]
    pub thread_replies: Vec<ThreadReply>,
    pub expect: Expect,
}

/// The alert as an integration posts it to Slack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertSpec {
    /// The message text. `{{at}}` is replaced by the alert time (RFC 3339).
    pub text: String,
    #[serde(default)]
    pub integration: Option<Integration>,
    /// When the alert fired: relative to now (`-10m`) or absolute. Default: now.
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// Which integration posted the alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Integration {
    Alertmanager,
    Grafana,
    Generic,
}

/// A pod and its containers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The Deployment owning it (its ReplicaSet is the deployment's latest revision).
    #[serde(default)]
    pub deployment: Option<String>,
    /// Default: `Running`, or `Pending` when no node is set.
    #[serde(default)]
    pub phase: Option<String>,
    /// Creation time; default `-1h`.
    #[serde(default)]
    pub created: Option<RelTime>,
    /// Pod conditions; default: PodScheduled, and Ready from the containers.
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    pub containers: Vec<ContainerSpec>,
    /// Copied into the pod's `spec` verbatim (e.g. `nodeSelector`, `tolerations`, `volumes`).
    #[serde(default)]
    pub spec_extra: BTreeMap<String, Value>,
}

/// A pod condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConditionSpec {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// A container with its status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    #[serde(default = "yes")]
    pub ready: bool,
    #[serde(default)]
    pub restart_count: u32,
    /// Default: running since the pod was created.
    #[serde(default)]
    pub state: Option<ContainerStateSpec>,
    #[serde(default)]
    pub last_state: Option<ContainerStateSpec>,
    /// `{limits: {memory: 256Mi}, requests: {cpu: 100m}}`.
    #[serde(default)]
    pub resources: BTreeMap<String, BTreeMap<String, String>>,
    /// Copied into the container's spec verbatim (`env`, `args`, `readinessProbe`, …).
    #[serde(default)]
    pub spec_extra: BTreeMap<String, Value>,
}

fn yes() -> bool {
    true
}

/// Kubernetes' ContainerState: exactly one of the three.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerStateSpec {
    #[serde(default)]
    pub waiting: Option<WaitingSpec>,
    #[serde(default)]
    pub running: Option<RunningSpec>,
    #[serde(default)]
    pub terminated: Option<TerminatedSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitingSpec {
    pub reason: String,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunningSpec {
    #[serde(default)]
    pub started_at: Option<RelTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerminatedSpec {
    pub exit_code: i32,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub signal: Option<i32>,
    #[serde(default)]
    pub started_at: Option<RelTime>,
    #[serde(default)]
    pub finished_at: Option<RelTime>,
}

/// A Kubernetes event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventSpec {
    /// `Normal` (default) or `Warning`.
    #[serde(default = "normal", rename = "type")]
    pub kind: String,
    pub reason: String,
    pub message: String,
    pub involved_object: ObjectRef,
    /// Default: the involved object's namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// When it was last seen (relative to the alert).
    pub at: RelTime,
    #[serde(default)]
    pub count: Option<u32>,
}

fn normal() -> String {
    "Normal".into()
}

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// A Deployment with its revisions (served as ReplicaSets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentSpec {
    pub name: String,
    pub namespace: String,
    #[serde(default = "one")]
    pub replicas: u32,
    /// Container name in the pod template; default: the deployment's name.
    #[serde(default)]
    pub container: Option<String>,
    /// Oldest first; the last one is current.
    pub revisions: Vec<RevisionSpec>,
}

fn one() -> u32 {
    1
}

/// One rollout of a Deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionSpec {
    pub image: String,
    pub created: RelTime,
    /// `kubernetes.io/change-cause`.
    #[serde(default)]
    pub change_cause: Option<String>,
}

/// A container's logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSpec {
    pub pod: String,
    /// Default: the pod's only container.
    #[serde(default)]
    pub container: Option<String>,
    #[serde(default)]
    pub current: Option<String>,
    /// The previous (terminated) instance's log.
    #[serde(default)]
    pub previous: Option<String>,
}

/// One metric series, answered for a PromQL query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// The PromQL as the investigation will send it (compared without whitespace).
    pub query: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `[[-30m, 0.01], [-12m, 0.35]]`: each value holds until the next point.
    #[serde(default)]
    pub points: Option<Vec<(RelTime, f64)>>,
    /// A step change.
    #[serde(default)]
    pub step: Option<StepSpec>,
    /// A flat line.
    #[serde(default)]
    pub constant: Option<f64>,
}

/// `before` until `at`, `after` from then on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    pub before: f64,
    pub after: f64,
    pub at: RelTime,
}

/// Log lines answered for a LogQL query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogStreamSpec {
    pub query: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub lines: Vec<LogLineSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogLineSpec {
    pub at: RelTime,
    pub line: String,
}

/// Traces of one service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub service: String,
    pub trace_id: String,
    pub root_name: String,
    pub start: RelTime,
    pub duration_ms: u64,
}

/// A verbatim answer for a tool call, overriding the world (fault injection, peer fixtures).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawToolResult {
    /// Tool name, or `*` for every tool.
    pub tool: String,
    /// Arguments that must match (a subset of the call's); empty matches any call.
    #[serde(default)]
    pub args: BTreeMap<String, Value>,
    /// The text to answer with.
    #[serde(default)]
    pub text: Option<String>,
    /// Answer with a tool error (`isError: true`) carrying this text.
    #[serde(default)]
    pub error: Option<String>,
    /// Wait this long first (a timeout, when longer than the client's limit).
    #[serde(default)]
    pub delay_ms: Option<u64>,
}

/// A past incident recall may surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PastIncident {
    pub title: String,
    #[serde(default)]
    pub alertname: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub summary: String,
    #[serde(default)]
    pub root_cause: Option<String>,
    #[serde(default)]
    pub resolution: Option<String>,
    #[serde(default)]
    pub thread_link: Option<String>,
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// A human reply in the incident thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadReply {
    pub user: String,
    pub text: String,
    #[serde(default)]
    pub at: Option<RelTime>,
}

/// What the investigation must produce. Also used by peer fixtures' `rubric.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub verdict: ExpectedVerdict,
    /// Each inner list: at least one of its phrases must appear.
    #[serde(default)]
    pub must_mention: Vec<Vec<String>>,
    /// None of these may appear.
    #[serde(default)]
    pub must_not_mention: Vec<String>,
}

/// Post a grounded summary, ask questions, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedVerdict {
    Post,
    Ask,
    Either,
}

/// How an outcome compares with an [`Expect`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpectCheck {
    pub verdict_ok: bool,
    /// Inner lists none of whose phrases appeared.
    pub missing: Vec<Vec<String>>,
    /// Forbidden phrases that appeared.
    pub forbidden: Vec<String>,
}

impl ExpectCheck {
    pub fn passed(&self) -> bool {
        self.verdict_ok && self.missing.is_empty() && self.forbidden.is_empty()
    }
}

impl Expect {
    /// Compares the text that would be posted to Slack (case-insensitive) and whether the
    /// round posted a summary (`true`) or asked (`false`).
    pub fn check(&self, posted_text: &str, posted: bool) -> ExpectCheck {
        let text = posted_text.to_lowercase();
        let verdict_ok = match self.verdict {
            ExpectedVerdict::Post => posted,
            ExpectedVerdict::Ask => !posted,
            ExpectedVerdict::Either => true,
        };
        ExpectCheck {
            verdict_ok,
            missing: self
                .must_mention
                .iter()
                .filter(|any| !any.iter().any(|p| text.contains(&p.to_lowercase())))
                .cloned()
                .collect(),
            forbidden: self
                .must_not_mention
                .iter()
                .filter(|p| text.contains(&p.to_lowercase()))
                .cloned()
                .collect(),
        }
    }
}

impl Scenario {
    /// Loads `dir/scenario.yaml` with the alert placed relative to now.
    pub fn load(dir: &Path) -> Result<Self, ScenarioError> {
        Self::load_at(dir, Utc::now())
    }

    /// Loads `dir/scenario.yaml` (or `dir` itself if it is a file) with `now` as the base of
    /// the alert time.
    pub fn load_at(dir: &Path, now: DateTime<Utc>) -> Result<Self, ScenarioError> {
        let path = if dir.is_file() {
            dir.to_path_buf()
        } else {
            dir.join("scenario.yaml")
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ScenarioError::Read {
            path: path.clone(),
            source,
        })?;
        let name = if dir.is_file() {
            dir.parent()
        } else {
            Some(dir)
        }
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
        Self::parse(&name, &path, &text, now)
    }

    /// Parses scenario text (`path` is only used in messages).
    pub fn parse(
        name: &str,
        path: &Path,
        text: &str,
        now: DateTime<Utc>,
    ) -> Result<Self, ScenarioError> {
        let spec: ScenarioSpec =
            serde_norway::from_str(text).map_err(|e| ScenarioError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        validate(&spec).map_err(|(field, message)| ScenarioError::Invalid {
            path: path.to_path_buf(),
            field,
            message,
        })?;
        let alert_at = spec
            .alert
            .at
            .map_or(now, |at| at.at(now))
            .with_timezone(&Utc);
        Ok(Self {
            name: name.to_string(),
            path: path.to_path_buf(),
            alert_at,
            spec,
        })
    }

    /// The alert text as posted, with `{{at}}` filled in.
    pub fn alert_text(&self) -> String {
        self.spec.alert.text.replace(
            "{{at}}",
            &self
                .alert_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )
    }

    /// A time of the world, relative to the alert.
    pub fn time(&self, at: RelTime) -> DateTime<Utc> {
        at.at(self.alert_at)
    }
}

/// Loads every scenario directory under `root` (each holding a `scenario.yaml`), by name.
pub fn load_all(root: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let entries = std::fs::read_dir(root).map_err(|source| ScenarioError::Read {
        path: root.to_path_buf(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("scenario.yaml").is_file())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| Scenario::load(d)).collect()
}

type Problem = (String, String);

fn validate(spec: &ScenarioSpec) -> Result<(), Problem> {
    let problem = |field: String, message: &str| Err((field, message.to_string()));
    if spec.alert.text.trim().is_empty() {
        return problem("alert.text".into(), "must not be empty");
    }
    for (i, pod) in spec.pods.iter().enumerate() {
        if pod.containers.is_empty() {
            return problem(
                format!("pods[{i}].containers"),
                "a pod needs at least one container",
            );
        }
        for (j, container) in pod.containers.iter().enumerate() {
            for (which, state) in [
                ("state", &container.state),
                ("lastState", &container.last_state),
            ] {
                if let Some(state) = state {
                    let set = [
                        state.waiting.is_some(),
                        state.running.is_some(),
                        state.terminated.is_some(),
                    ]
                    .iter()
                    .filter(|b| **b)
                    .count();
                    if set != 1 {
                        return problem(
                            format!("pods[{i}].containers[{j}].{which}"),
                            "set exactly one of waiting, running, terminated",
                        );
                    }
                }
            }
        }
        if let Some(deployment) = &pod.deployment
            && !spec
                .deployments
                .iter()
                .any(|d| &d.name == deployment && d.namespace == pod.namespace)
        {
            return problem(
                format!("pods[{i}].deployment"),
                "names a deployment that is not in `deployments` (same namespace)",
            );
        }
    }
    for (i, log) in spec.logs.iter().enumerate() {
        let Some(pod) = spec.pods.iter().find(|p| p.name == log.pod) else {
            return problem(
                format!("logs[{i}].pod"),
                "names a pod that is not in `pods`",
            );
        };
        match &log.container {
            Some(c) if !pod.containers.iter().any(|pc| &pc.name == c) => {
                return problem(
                    format!("logs[{i}].container"),
                    "names a container the pod does not have",
                );
            }
            None if pod.containers.len() > 1 => {
                return problem(
                    format!("logs[{i}].container"),
                    "the pod has several containers: name one",
                );
            }
            _ => {}
        }
        if log.current.is_none() && log.previous.is_none() {
            return problem(format!("logs[{i}]"), "set `current`, `previous` or both");
        }
    }
    for (i, deployment) in spec.deployments.iter().enumerate() {
        if deployment.revisions.is_empty() {
            return problem(
                format!("deployments[{i}].revisions"),
                "needs at least one revision",
            );
        }
    }
    for (i, metric) in spec.metrics.iter().enumerate() {
        let set = [
            metric.points.is_some(),
            metric.step.is_some(),
            metric.constant.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if set != 1 {
            return problem(
                format!("metrics[{i}]"),
                "set exactly one of points, step, constant",
            );
        }
    }
    for (i, raw) in spec.raw_tool_results.iter().enumerate() {
        if raw.text.is_some() && raw.error.is_some() {
            return problem(
                format!("raw_tool_results[{i}]"),
                "set `text` or `error`, not both",
            );
        }
        if raw.text.is_none() && raw.error.is_none() && raw.delay_ms.is_none() {
            return problem(
                format!("raw_tool_results[{i}]"),
                "set `text`, `error` or `delay_ms`",
            );
        }
        if raw.tool.trim().is_empty() {
            return problem(format!("raw_tool_results[{i}].tool"), "must not be empty");
        }
    }
    for (i, any) in spec.expect.must_mention.iter().enumerate() {
        if any.is_empty() || any.iter().any(|p| p.trim().is_empty()) {
            return problem(
                format!("expect.must_mention[{i}]"),
                "needs at least one non-empty phrase",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap()
    }

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse("t", Path::new("t/scenario.yaml"), text, now())
    }

    const MINIMAL: &str =
        "alert:\n  text: 'FIRING at {{at}}'\n  at: -10m\nexpect:\n  verdict: ask\n";

    #[test]
    fn a_minimal_scenario_loads_and_places_the_alert() {
        let scenario = parse(MINIMAL).unwrap();
        assert_eq!(scenario.alert_at, now() - chrono::Duration::minutes(10));
        assert_eq!(scenario.alert_text(), "FIRING at 2025-03-01T11:50:00Z");
        assert_eq!(scenario.spec.expect.verdict, ExpectedVerdict::Ask);
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let typo = format!("{MINIMAL}podz: []\n");
        let error = parse(&typo).unwrap_err().to_string();
        assert!(error.starts_with("t/scenario.yaml: "), "{error}");
        assert!(error.contains("podz"), "{error}");

        let bad_time = "alert:\n  text: x\n  at: yesterday\nexpect:\n  verdict: post\n";
        let error = parse(bad_time).unwrap_err().to_string();
        assert!(
            error.contains("yesterday") && error.contains("alert"),
            "{error}"
        );

        let orphan_log = format!("{MINIMAL}logs:\n  - pod: ghost\n    current: hi\n");
        let error = parse(&orphan_log).unwrap_err().to_string();
        assert!(error.contains("`logs[0].pod`"), "{error}");

        let two_states = format!(
            "{MINIMAL}pods:\n  - name: p\n    namespace: n\n    containers:\n      - name: c\n        image: i\n        state: {{running: {{}}, waiting: {{reason: X}}}}\n"
        );
        let error = parse(&two_states).unwrap_err().to_string();
        assert!(error.contains("pods[0].containers[0].state"), "{error}");
    }

    #[test]
    fn expectations_match_case_insensitively() {
        let expect = Expect {
            verdict: ExpectedVerdict::Post,
            must_mention: vec![
                vec!["OOMKilled".into(), "out of memory".into()],
                vec!["analytics-exporter".into()],
            ],
            must_not_mention: vec!["DEPLOY_ENV".into()],
        };
        let ok = expect.check("Container was oomkilled in Analytics-Exporter", true);
        assert!(ok.passed(), "{ok:?}");
        let bad = expect.check("deploy_env changed", false);
        assert!(!bad.verdict_ok);
        assert_eq!(bad.missing.len(), 2);
        assert_eq!(bad.forbidden, vec!["DEPLOY_ENV".to_string()]);
    }
}
