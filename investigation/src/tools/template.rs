//! Argument templates: how a [`CapabilityRequest`]'s fields become a tool's arguments.
//!
//! A binding's arguments are JSON values (from a built-in profile or `mcp.capabilities`). In a
//! string, `{field}` is replaced by a request field and `{var.NAME}` by a server variable
//! (`mcp.servers[].vars`); `{{` and `}}` are literal braces (TraceQL and LogQL use them). A string
//! that is *exactly* one placeholder takes the field's typed value (`"{previous}"` → `true`,
//! `"{tail_lines}"` → `200`). An argument whose placeholder has no value in this request (no
//! container, no involved object) is left out, so the tool's own default applies.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::CapabilityRequest;

/// Every field a template may name, across all capabilities.
pub const FIELDS: &[&str] = &[
    "namespace",
    "pod",
    "container",
    "previous",
    "tail_lines",
    "object",
    "event_selector",
    "workload",
    "name",
    "kind",
    "api_version",
    "label_selector",
    "query",
    "start",
    "end",
    "start_unix",
    "end_unix",
    "step_secs",
    "step",
    "limit",
    "service",
];

/// A template that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unknown placeholder `{{{0}}}` (known: {known}, and var.NAME)", known = FIELDS.join(", "))]
    UnknownField(String),
    #[error("placeholder `{{var.{0}}}` has no value in the server's `vars`")]
    MissingVar(String),
    #[error("unclosed `{{` in `{0}` (write `{{{{` for a literal brace)")]
    Unclosed(String),
}

/// The values of one request's fields.
pub fn request_fields(request: &CapabilityRequest) -> BTreeMap<&'static str, Value> {
    let mut fields = BTreeMap::new();
    let window = |start: &chrono::DateTime<chrono::Utc>,
                  end: &chrono::DateTime<chrono::Utc>,
                  fields: &mut BTreeMap<&'static str, Value>| {
        fields.insert(
            "start",
            Value::from(start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        );
        fields.insert(
            "end",
            Value::from(end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        );
        fields.insert("start_unix", Value::from(start.timestamp()));
        fields.insert("end_unix", Value::from(end.timestamp()));
    };
    match request {
        CapabilityRequest::PodDescribe { namespace, pod } => {
            fields.insert("namespace", Value::from(namespace.as_str()));
            fields.insert("pod", Value::from(pod.as_str()));
        }
        CapabilityRequest::ObjectGet {
            namespace,
            kind,
            name,
        } => {
            if let Some(namespace) = namespace {
                fields.insert("namespace", Value::from(namespace.as_str()));
            }
            fields.insert("kind", Value::from(kind.as_str()));
            fields.insert("api_version", Value::from(api_version(kind)));
            fields.insert("name", Value::from(name.as_str()));
        }
        CapabilityRequest::ObjectList {
            namespace,
            kind,
            label_selector,
        } => {
            if let Some(namespace) = namespace {
                fields.insert("namespace", Value::from(namespace.as_str()));
            }
            fields.insert("kind", Value::from(kind.as_str()));
            fields.insert("api_version", Value::from(api_version(kind)));
            if let Some(selector) = label_selector {
                fields.insert("label_selector", Value::from(selector.as_str()));
            }
        }
        CapabilityRequest::PodList {
            namespace,
            label_selector,
        } => {
            fields.insert("namespace", Value::from(namespace.as_str()));
            if let Some(selector) = label_selector {
                fields.insert("label_selector", Value::from(selector.as_str()));
            }
        }
        CapabilityRequest::PodLogs {
            namespace,
            pod,
            container,
            previous,
            tail_lines,
        } => {
            fields.insert("namespace", Value::from(namespace.as_str()));
            fields.insert("pod", Value::from(pod.as_str()));
            if let Some(container) = container {
                fields.insert("container", Value::from(container.as_str()));
            }
            fields.insert("previous", Value::from(*previous));
            fields.insert("tail_lines", Value::from(*tail_lines));
        }
        CapabilityRequest::Events {
            namespace,
            object,
            warnings_only,
        } => {
            fields.insert("namespace", Value::from(namespace.as_str()));
            let mut selector = Vec::new();
            if let Some(object) = object {
                fields.insert("object", Value::from(object.as_str()));
                selector.push(format!("involvedObject.name={object}"));
            }
            if *warnings_only {
                selector.push("type=Warning".to_string());
            }
            if !selector.is_empty() {
                fields.insert("event_selector", Value::from(selector.join(",")));
            }
        }
        CapabilityRequest::DeployHistory {
            namespace,
            workload,
        } => {
            fields.insert("namespace", Value::from(namespace.as_str()));
            fields.insert("workload", Value::from(workload.as_str()));
        }
        CapabilityRequest::MetricRange {
            query,
            start,
            end,
            step_secs,
        } => {
            fields.insert("query", Value::from(query.as_str()));
            window(start, end, &mut fields);
            fields.insert("step_secs", Value::from(*step_secs));
            fields.insert("step", Value::from(format!("{step_secs}s")));
        }
        CapabilityRequest::LogQuery {
            query,
            start,
            end,
            limit,
        } => {
            fields.insert("query", Value::from(query.as_str()));
            window(start, end, &mut fields);
            fields.insert("limit", Value::from(*limit));
        }
        CapabilityRequest::TraceSearch {
            service,
            start,
            end,
            limit,
        } => {
            fields.insert("service", Value::from(service.as_str()));
            window(start, end, &mut fields);
            fields.insert("limit", Value::from(*limit));
        }
    }
    fields
}

/// The API group/version of a built-in kind (`Job` → `batch/v1`); `v1` for the core kinds.
pub fn api_version(kind: &str) -> &'static str {
    match kind.to_ascii_lowercase().as_str() {
        "job" | "cronjob" => "batch/v1",
        "deployment" | "statefulset" | "daemonset" | "replicaset" | "controllerrevision" => {
            "apps/v1"
        }
        "storageclass" | "volumeattachment" | "csidriver" => "storage.k8s.io/v1",
        "horizontalpodautoscaler" => "autoscaling/v2",
        "ingress" | "networkpolicy" => "networking.k8s.io/v1",
        "poddisruptionbudget" => "policy/v1",
        _ => "v1",
    }
}

/// Checks a template without a request: every placeholder is a known field or a defined var.
pub fn check(
    template: &BTreeMap<String, Value>,
    vars: &BTreeMap<String, String>,
) -> Result<(), TemplateError> {
    fn walk(value: &Value, vars: &BTreeMap<String, String>) -> Result<(), TemplateError> {
        match value {
            Value::String(text) => {
                for name in placeholders(text)? {
                    if let Some(var) = name.strip_prefix("var.") {
                        if !vars.contains_key(var) {
                            return Err(TemplateError::MissingVar(var.to_string()));
                        }
                    } else if !FIELDS.contains(&name.as_str()) {
                        return Err(TemplateError::UnknownField(name));
                    }
                }
                Ok(())
            }
            Value::Array(items) => items.iter().try_for_each(|v| walk(v, vars)),
            Value::Object(map) => map.values().try_for_each(|v| walk(v, vars)),
            _ => Ok(()),
        }
    }
    template.values().try_for_each(|v| walk(v, vars))
}

/// Renders a template for one request. Call [`check`] first: unknown names render as absent.
pub fn render(
    template: &BTreeMap<String, Value>,
    fields: &BTreeMap<&'static str, Value>,
    vars: &BTreeMap<String, String>,
) -> Map<String, Value> {
    let lookup = |name: &str| -> Option<Value> {
        match name.strip_prefix("var.") {
            Some(var) => vars.get(var).map(|v| Value::from(v.as_str())),
            None => fields.get(name).cloned(),
        }
    };
    template
        .iter()
        .filter_map(|(key, value)| render_value(value, &lookup).map(|v| (key.clone(), v)))
        .collect()
}

fn render_value(value: &Value, lookup: &dyn Fn(&str) -> Option<Value>) -> Option<Value> {
    match value {
        Value::String(text) => render_string(text, lookup),
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|v| render_value(v, lookup))
                .collect(),
        )),
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter_map(|(k, v)| render_value(v, lookup).map(|v| (k.clone(), v)))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

fn render_string(text: &str, lookup: &dyn Fn(&str) -> Option<Value>) -> Option<Value> {
    let parts = parse(text).ok()?;
    if let [Part::Field(name)] = parts.as_slice() {
        return lookup(name);
    }
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text(t) => out.push_str(&t),
            Part::Field(name) => match lookup(&name)? {
                Value::String(s) => out.push_str(&s),
                other => out.push_str(&other.to_string()),
            },
        }
    }
    Some(Value::String(out))
}

#[derive(Debug, PartialEq)]
enum Part {
    Text(String),
    Field(String),
}

fn placeholders(text: &str) -> Result<Vec<String>, TemplateError> {
    Ok(parse(text)?
        .into_iter()
        .filter_map(|p| match p {
            Part::Field(name) => Some(name),
            Part::Text(_) => None,
        })
        .collect())
}

fn parse(text: &str) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err(TemplateError::Unclosed(text.to_string())),
                    }
                }
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Field(name.trim().to_string()));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn template(value: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn exact_placeholders_keep_their_type_and_absent_fields_are_omitted() {
        let request = CapabilityRequest::PodLogs {
            namespace: "payments".into(),
            pod: "api-1".into(),
            container: None,
            previous: true,
            tail_lines: 200,
        };
        let t = template(json!({
            "namespace": "{namespace}", "name": "{pod}", "container": "{container}",
            "previous": "{previous}", "tail": "{tail_lines}", "kind": "Pod"
        }));
        let args = render(&t, &request_fields(&request), &BTreeMap::new());
        assert_eq!(
            Value::Object(args),
            json!({"namespace": "payments", "name": "api-1", "previous": true, "tail": 200, "kind": "Pod"})
        );
    }

    #[test]
    fn interpolation_escapes_and_vars() {
        let start = chrono::Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let request = CapabilityRequest::TraceSearch {
            service: "checkout".into(),
            start,
            end: start + chrono::Duration::minutes(30),
            limit: 20,
        };
        let vars = BTreeMap::from([("tempo".to_string(), "tempo-uid".to_string())]);
        let t = template(json!({
            "datasourceUid": "{var.tempo}",
            "query": "{{ resource.service.name = \"{service}\" }}",
            "start": "{start}", "end": "{end}"
        }));
        check(&t, &vars).unwrap();
        let args = render(&t, &request_fields(&request), &vars);
        assert_eq!(args["datasourceUid"], json!("tempo-uid"));
        assert_eq!(
            args["query"],
            json!("{ resource.service.name = \"checkout\" }")
        );
        assert_eq!(args["start"], json!("2025-01-02T03:04:05Z"));
        assert_eq!(args["end"], json!("2025-01-02T03:34:05Z"));
    }

    #[test]
    fn a_composite_string_with_an_absent_field_is_omitted() {
        let request = CapabilityRequest::Events {
            namespace: "n".into(),
            object: None,
            warnings_only: false,
        };
        let t = template(
            json!({"namespace": "{namespace}", "fieldSelector": "involvedObject.name={object}"}),
        );
        let args = render(&t, &request_fields(&request), &BTreeMap::new());
        assert_eq!(Value::Object(args), json!({"namespace": "n"}));
    }

    #[test]
    fn check_rejects_unknown_fields_missing_vars_and_unclosed_braces() {
        let none = BTreeMap::new();
        assert_eq!(
            check(&template(json!({"a": "{podname}"})), &none),
            Err(TemplateError::UnknownField("podname".into()))
        );
        assert_eq!(
            check(&template(json!({"a": ["{var.loki}"]})), &none),
            Err(TemplateError::MissingVar("loki".into()))
        );
        assert!(matches!(
            check(&template(json!({"a": "{pod"})), &none),
            Err(TemplateError::Unclosed(_))
        ));
        assert!(check(&template(json!({"a": "{{literal}}", "b": 3})), &none).is_ok());
    }
}
