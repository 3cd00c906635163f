//! The HolmesGPT adapter: one of their investigation fixtures as a lab scenario.
//!
//! - `investigate_request.json` becomes the alert: the target comes from the holmes alert adapter
//!   (`firstline_alert::holmes`), the text from the request's title, description
//!   and subject, the way an integration would post it.
//! - Each recorded `*.txt` tool call becomes a lab `raw_tool_results` entry under the tool name
//!   and arguments our capabilities' lab profile uses (the real servers' names):
//!   `kubectl_describe` → `pods_get` for a pod, `resources_get` {apiVersion, kind} for any
//!   other kind (a Job); `kubectl_logs`, `fetch_pod_logs`, `kubectl_logs_all_containers` →
//!   `pods_log` for that pod (`previous: false`); `kubectl_previous_logs*` → `pods_log`
//!   (`previous: true`); `kubectl_events` → `events_list`; `kubectl_get_by_kind_in_namespace`
//!   → `pods_list_in_namespace` for pods, `resources_list` for other kinds. A recording of a failed call is
//!   served as a tool error (missing evidence). Tools we have no capability for
//!   (`fetch_finding_by_id`) are not served.
//! - `rubric.yaml` (ours, beside their files) holds the `expect` block.
//!
//! Their recordings are never edited: a miss is information.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use firstline_alert::holmes::from_investigate_request;
use firstline_investigation::AlertInput;
use firstline_investigation::tools::template::api_version;
use firstline_lab::Scenario;
use firstline_lab::holmes_fixture::RecordedToolCall;
use firstline_lab::scenario::{Expect, RawToolResult};
use serde_json::{Value, json};

/// A HolmesGPT case, ready to serve.
pub struct HolmesCase {
    pub scenario: Scenario,
    pub alert: AlertInput,
    /// Recordings not served (no matching capability), for the record.
    pub unserved: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Rubric {
    expect: Expect,
}

/// Loads the case in `dir` with the alert firing at `now`.
pub fn load(name: &str, dir: &Path, now: DateTime<Utc>) -> anyhow::Result<HolmesCase> {
    let request_path = dir.join("investigate_request.json");
    let request = std::fs::read_to_string(&request_path)
        .with_context(|| format!("reading {}", request_path.display()))?;
    let target = from_investigate_request(&request)
        .with_context(|| format!("{}", request_path.display()))?;
    let request_json: Value =
        serde_json::from_str(&request).with_context(|| format!("{}", request_path.display()))?;
    let text = alert_text(&request_json);

    let rubric_path = dir.join("rubric.yaml");
    let rubric: Rubric = serde_norway::from_str(
        &std::fs::read_to_string(&rubric_path)
            .with_context(|| format!("reading {}", rubric_path.display()))?,
    )
    .with_context(|| format!("{}", rubric_path.display()))?;

    let mut recordings: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    recordings.sort();
    let mut raw = Vec::new();
    let mut unserved = Vec::new();
    for path in recordings {
        let file = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let call = RecordedToolCall::parse(&text).with_context(|| format!("{}", path.display()))?;
        match to_lab_result(&file, &call) {
            Some(result) => raw.push(result),
            None => unserved.push(format!("{file} ({})", call.tool_name)),
        }
    }

    let spec = json!({
        "description": format!("HolmesGPT fixture {name}"),
        "alert": {"text": text},
        "expect": serde_json::to_value(&rubric.expect)?,
        "raw_tool_results": serde_json::to_value(&raw)?,
    });
    let spec = serde_json::from_value(spec).context("building the lab scenario")?;
    let scenario = Scenario {
        name: name.to_string(),
        path: request_path,
        alert_at: now,
        spec,
    };
    let alert = AlertInput {
        text: scenario.alert_text(),
        target,
        posted_at: Some(now),
    };
    Ok(HolmesCase {
        scenario,
        alert,
        unserved,
    })
}

/// The request as an integration would post it: title, description, subject.
fn alert_text(request: &Value) -> String {
    let field = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let mut lines = Vec::new();
    lines.push(field(request, "title").unwrap_or_else(|| "HolmesGPT investigation".into()));
    if let Some(description) = field(request, "description") {
        lines.push(description);
    }
    let subject = request.get("subject").cloned().unwrap_or(Value::Null);
    for key in ["name", "namespace", "container", "node", "cluster"] {
        if let Some(value) = field(&subject, key) {
            lines.push(format!("{key}={value}"));
        }
    }
    if let Some(kind) = field(&subject, "kind").or_else(|| field(&subject, "subject_type")) {
        lines.push(format!("kind={kind}"));
    }
    lines.join("\n")
}

/// What a recorded call becomes in the lab, or `None` when we have no capability for it.
fn to_lab_result(file: &str, call: &RecordedToolCall) -> Option<RawToolResult> {
    let params = &call.match_params;
    let param = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(|s| Value::String(s.to_string()))
    };
    let tool = call.tool_name.as_str();
    // Their file name says "previous" even where the recorded tool name does not (01_oom_kill).
    let previous = tool.starts_with("kubectl_previous_logs") || file.contains("previous_logs");
    let mut args = BTreeMap::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            args.insert(key.to_string(), value);
        }
    };
    let lab_tool = match tool {
        "kubectl_describe" => {
            put("namespace", param("namespace"));
            put("name", param("name"));
            match param("kind").map(|k| kind_name(&k)) {
                None => "pods_get",
                Some(kind) if kind == "Pod" => "pods_get",
                Some(kind) => {
                    put("apiVersion", Some(Value::from(api_version(&kind))));
                    put("kind", Some(Value::String(kind)));
                    "resources_get"
                }
            }
        }
        "kubectl_logs"
        | "fetch_pod_logs"
        | "kubectl_logs_all_containers"
        | "kubectl_previous_logs"
        | "kubectl_previous_logs_all_containers" => {
            put("namespace", param("namespace"));
            put("name", param("pod_name"));
            put("previous", Some(Value::Bool(previous)));
            "pods_log"
        }
        "kubectl_events" => {
            put("namespace", param("namespace"));
            "events_list"
        }
        "kubectl_get_by_kind_in_namespace" => {
            put("namespace", param("namespace"));
            match param("kind").map(|k| kind_name(&k)) {
                Some(kind) if kind == "Pod" => "pods_list_in_namespace",
                kind => {
                    put("kind", kind.map(Value::String));
                    "resources_list"
                }
            }
        }
        _ => return None,
    };
    let output = call.output().to_string();
    let failed = call.failed();
    Some(RawToolResult {
        tool: lab_tool.to_string(),
        args,
        text: (!failed).then(|| output.clone()),
        error: failed.then_some(output),
        delay_ms: None,
    })
}

/// `pod` → `Pod`, as the Kubernetes API names kinds.
fn kind_name(kind: &Value) -> String {
    let kind = kind.as_str().unwrap_or_default();
    let mut chars = kind.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(tool: &str, params: &str, status: &str, body: &str) -> RecordedToolCall {
        let text = format!(
            "{{\"tool_name\":\"{tool}\",\"match_params\":{params}}}\n{{\"status\":\"{status}\"}}\n{body}"
        );
        RecordedToolCall::parse(&text).unwrap()
    }

    #[test]
    fn maps_their_tools_onto_the_lab_profile() {
        let describe = recording(
            "kubectl_describe",
            r#"{"kind":"pod","name":"p-1","namespace":"ns"}"#,
            "success",
            "Name: p-1",
        );
        let r = to_lab_result("kubectl_describe", &describe).unwrap();
        assert_eq!(r.tool, "pods_get");
        assert_eq!(r.args["name"], "p-1");
        assert_eq!(r.text.as_deref(), Some("Name: p-1"));

        let logs = recording(
            "fetch_pod_logs",
            r#"{"pod_name":"*","namespace":"ns"}"#,
            "success",
            "stdout:\nboom\nstderr:\n",
        );
        let previous = to_lab_result("kubectl_previous_logs_all_containers", &logs).unwrap();
        assert_eq!(previous.tool, "pods_log");
        assert_eq!(previous.args["previous"], true);
        assert!(!previous.args.contains_key("name"), "`*` matches any pod");
        let current = to_lab_result("kubectl_logs", &logs).unwrap();
        assert_eq!(current.args["previous"], false);

        let failed = recording(
            "kubectl_previous_logs",
            r#"{"pod_name":"p","namespace":"ns"}"#,
            "error",
            "Error from server (BadRequest): previous terminated container not found",
        );
        let r = to_lab_result("kubectl_previous_logs", &failed).unwrap();
        assert!(r.text.is_none());
        assert!(r.error.unwrap().contains("not found"));

        let list = recording(
            "kubectl_get_by_kind_in_namespace",
            r#"{"kind":"pod","namespace":"ns"}"#,
            "success",
            "NAME",
        );
        let pods = to_lab_result("x", &list).unwrap();
        assert_eq!(pods.tool, "pods_list_in_namespace");
        assert_eq!(pods.args["namespace"], "ns");
        assert!(!pods.args.contains_key("kind"));
        let services = recording(
            "kubectl_get_by_kind_in_namespace",
            r#"{"kind":"service","namespace":"ns"}"#,
            "success",
            "NAME",
        );
        let services = to_lab_result("x", &services).unwrap();
        assert_eq!(services.tool, "resources_list");
        assert_eq!(services.args["kind"], "Service");

        let job = recording(
            "kubectl_describe",
            r#"{"kind":"job","name":"backup","namespace":"ns"}"#,
            "success",
            "Name: backup",
        );
        let job = to_lab_result("kubectl_describe", &job).unwrap();
        assert_eq!(job.tool, "resources_get");
        assert_eq!(job.args["kind"], "Job");
        assert_eq!(job.args["apiVersion"], "batch/v1");
        assert_eq!(job.args["name"], "backup");

        let pod_logs = recording(
            "kubectl_logs_all_containers",
            r#"{"pod_name":"backup-x1","namespace":"ns"}"#,
            "success",
            "boom",
        );
        let pod_logs = to_lab_result("kubectl_logs_all_containers_x1", &pod_logs).unwrap();
        assert_eq!(pod_logs.tool, "pods_log");
        assert_eq!(pod_logs.args["name"], "backup-x1");
        assert_eq!(pod_logs.args["previous"], false);

        let finding = recording("fetch_finding_by_id", r#"{"id":"1"}"#, "success", "x");
        assert!(to_lab_result("fetch_finding_by_id", &finding).is_none());
    }

    #[test]
    fn the_alert_text_names_the_subject() {
        let text = alert_text(&json!({
            "title": "KubePodCrashLooping",
            "description": "",
            "subject": {"name": "db-1", "namespace": "default", "kind": "pod", "node": null}
        }));
        assert_eq!(
            text,
            "KubePodCrashLooping\nname=db-1\nnamespace=default\nkind=pod"
        );
    }
}
