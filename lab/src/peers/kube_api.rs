//! A small fake Kubernetes API server: a scenario's world as the Kubernetes REST API (JSON), for
//! the *real* `kubernetes-mcp-server` to query.
//!
//! It serves what kubernetes-mcp-server 0.0.67 (`--read-only --list-output yaml`) was seen to
//! request (every request is logged: [`KubeApiHandle::requests`]): discovery (`/version`, `/api`,
//! `/api/v1`, `/apis`, `/apis/apps/v1`, …), pods (get, list, `log` with `container`,
//! `previous`, `tailLines`), core/v1 events (with `fieldSelector`), namespaces, and apps/v1
//! ReplicaSets and Deployments (get, list, `labelSelector`). The objects are the ones the lab
//! renders ([`crate::render`]), so both paths describe the same world. Anything else answers a
//! Kubernetes `Status` 404. No authentication: the kubeconfig carries a dummy token.
//! Server-side tables (`Accept: …;as=Table`) are not served: run the MCP server with
//! `--list-output yaml`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::render::{deployment_object, pod_object, replica_sets};
use crate::scenario::{EventSpec, Scenario};

/// The Kubernetes version reported by `/version`.
const GIT_VERSION: &str = "v1.31.4";

struct Shared {
    scenario: Scenario,
    requests: Mutex<Vec<String>>,
}

/// A running fake API server. Dropping it does not stop it: call [`KubeApiHandle::shutdown`]
/// (the test runtime's end stops it too).
pub struct KubeApiHandle {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl KubeApiHandle {
    /// `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, as `METHOD /path?query`, in arrival order.
    pub fn requests(&self) -> Vec<String> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// A kubeconfig whose only context points at this server (plain HTTP, a dummy token, the
    /// given default namespace).
    pub fn kubeconfig(&self, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: {}\n\
             users:\n- name: lab\n  user:\n    token: lab-dummy-token\n\
             contexts:\n- name: lab\n  context:\n    cluster: lab\n    user: lab\n    namespace: {namespace}\n\
             current-context: lab\n",
            self.url()
        )
    }

    /// Writes [`Self::kubeconfig`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path, namespace: &str) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig(namespace))
    }

    /// Stops serving and waits for the server task.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }
}

/// Serves `scenario` as a Kubernetes API on `addr` (port 0 picks one).
pub async fn serve_kube_api(
    scenario: Scenario,
    addr: SocketAddr,
) -> std::io::Result<KubeApiHandle> {
    let shared = Arc::new(Shared {
        scenario,
        requests: Mutex::new(Vec::new()),
    });
    let router = axum::Router::new()
        .fallback(handle)
        .with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled_owned().await })
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "fake Kubernetes API server stopped with an error");
        }
    });
    Ok(KubeApiHandle {
        addr,
        shared,
        shutdown,
        task,
    })
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A Kubernetes `Status` failure.
fn status(code: StatusCode, reason: &str, message: String) -> Response {
    json_response(
        code,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code.as_u16(),
        }),
    )
}

fn not_found(what: &str, name: &str) -> Response {
    let (resource, group) = what.split_once('.').unwrap_or((what, ""));
    let shown = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("{shown} \"{name}\" not found"),
    )
}

fn query_params(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
}

fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The value at a dotted path (`involvedObject.name`, `metadata.name`, `spec.nodeName`) as text.
fn field(object: &Value, path: &str) -> Option<String> {
    let mut at = object;
    for key in path.split('.') {
        at = at.get(key)?;
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `a=b,c!=d,e==f` against `lookup`; `key` alone (labels) means "exists", `!key` "absent".
fn selector_matches(selector: Option<&str>, lookup: impl Fn(&str) -> Option<String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    selector
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .all(|term| {
            if let Some((k, v)) = term.split_once("!=") {
                lookup(k.trim()).as_deref() != Some(v.trim())
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                lookup(k.trim()).as_deref() == Some(v.trim())
            } else if let Some(k) = term.strip_prefix('!') {
                lookup(k.trim()).is_none()
            } else {
                lookup(term).is_some()
            }
        })
}

fn filter_list(items: Vec<Value>, params: &[(String, String)]) -> Vec<Value> {
    let fields = param(params, "fieldSelector");
    let labels = param(params, "labelSelector");
    items
        .into_iter()
        .filter(|o| selector_matches(fields, |path| field(o, path)))
        .filter(|o| {
            selector_matches(labels, |key| {
                o["metadata"]["labels"]
                    .get(key)
                    .and_then(Value::as_str)
                    .map(String::from)
            })
        })
        .collect()
}

fn list(kind: &str, api_version: &str, items: Vec<Value>) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "kind": format!("{kind}List"),
            "apiVersion": api_version,
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }),
    )
}

fn event_namespace(event: &EventSpec) -> String {
    event
        .namespace
        .clone()
        .or_else(|| event.involved_object.namespace.clone())
        .unwrap_or_else(|| "default".into())
}

/// A core/v1 Event.
fn event_object(scenario: &Scenario, index: usize, event: &EventSpec) -> Value {
    let at = scenario.time(event.at);
    let namespace = event_namespace(event);
    let object = &event.involved_object;
    let api_version = match object.kind.as_str() {
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" => "apps/v1",
        "Job" | "CronJob" => "batch/v1",
        _ => "v1",
    };
    let component = match object.kind.as_str() {
        "Pod" if event.reason == "Scheduled" => "default-scheduler",
        "Pod" => "kubelet",
        _ => "deployment-controller",
    };
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{}.{:016x}", object.name, 0x17f0_0000_0000_0000_u64 + index as u64),
            "namespace": namespace,
            "creationTimestamp": rfc3339(at),
            "resourceVersion": (100 + index).to_string(),
        },
        "involvedObject": {
            "apiVersion": api_version,
            "kind": object.kind,
            "name": object.name,
            "namespace": object.namespace.clone().unwrap_or_else(|| namespace.clone()),
        },
        "reason": event.reason,
        "message": event.message.trim(),
        "type": event.kind,
        "count": event.count.unwrap_or(1),
        "firstTimestamp": rfc3339(at),
        "lastTimestamp": rfc3339(at),
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
    })
}

fn namespaces(scenario: &Scenario) -> Vec<String> {
    let spec = &scenario.spec;
    let mut all: Vec<String> = spec
        .pods
        .iter()
        .map(|p| p.namespace.clone())
        .chain(spec.deployments.iter().map(|d| d.namespace.clone()))
        .chain(spec.events.iter().map(event_namespace))
        .chain(["default".to_string(), "kube-system".to_string()])
        .collect();
    all.sort();
    all.dedup();
    all
}

fn namespace_object(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn resource(name: &str, kind: &str, namespaced: bool, verbs: &[&str]) -> Value {
    json!({
        "name": name, "singularName": kind.to_lowercase(), "namespaced": namespaced,
        "kind": kind, "verbs": verbs,
    })
}

const READ: &[&str] = &["get", "list", "watch"];

fn discovery(path: &str, host: &str) -> Option<Value> {
    Some(match path {
        "/version" => json!({
            "major": "1", "minor": "31", "gitVersion": GIT_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2024-12-10T00:00:00Z", "goVersion": "go1.22.10", "compiler": "gc",
            "platform": "linux/amd64",
        }),
        "/api" => json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        }),
        "/apis" => json!({
            "kind": "APIGroupList", "apiVersion": "v1",
            "groups": [{
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            }],
        }),
        "/api/v1" => json!({
            "kind": "APIResourceList", "groupVersion": "v1",
            "resources": [
                resource("pods", "Pod", true, READ),
                {"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                resource("events", "Event", true, READ),
                resource("namespaces", "Namespace", false, READ),
            ],
        }),
        "/apis/apps/v1" => json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
            "resources": [
                resource("deployments", "Deployment", true, READ),
                resource("replicasets", "ReplicaSet", true, READ),
            ],
        }),
        _ => return None,
    })
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request<Body>) -> Response {
    let uri = request.uri().clone();
    let path = uri.path().trim_end_matches('/').to_string();
    let line = format!(
        "{} {}",
        request.method(),
        uri.path_and_query().map_or(uri.path(), |p| p.as_str())
    );
    tracing::debug!(request = %line, "fake Kubernetes API");
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(line);
    }
    if request.method() != axum::http::Method::GET {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the lab's Kubernetes API is read-only".into(),
        );
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    if let Some(body) = discovery(&path, &host) {
        return json_response(StatusCode::OK, body);
    }
    let params = query_params(uri.query());
    let scenario = &shared.scenario;
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Normalise to (group/version, namespace, resource, name, subresource).
    let (gv, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("v1", rest),
        ["apis", "apps", "v1", rest @ ..] => ("apps/v1", rest),
        _ => {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource".into(),
            );
        }
    };
    let (namespace, resource, name, sub) = match rest {
        ["namespaces"] => (None, "namespaces", None, None),
        ["namespaces", ns] => (None, "namespaces", Some(*ns), None),
        ["namespaces", ns, res] => (Some(*ns), *res, None, None),
        ["namespaces", ns, res, name] => (Some(*ns), *res, Some(*name), None),
        ["namespaces", ns, res, name, sub] => (Some(*ns), *res, Some(*name), Some(*sub)),
        [res] => (None, *res, None, None),
        _ => {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource".into(),
            );
        }
    };
    let in_ns = |o: &Value| namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns);
    let (kind, items): (&str, Vec<Value>) = match (gv, resource) {
        ("v1", "namespaces") => (
            "Namespace",
            namespaces(scenario)
                .iter()
                .map(|n| namespace_object(n))
                .collect(),
        ),
        ("v1", "pods") => (
            "Pod",
            scenario
                .spec
                .pods
                .iter()
                .map(|p| pod_object(scenario, p))
                .collect(),
        ),
        ("v1", "events") => (
            "Event",
            scenario
                .spec
                .events
                .iter()
                .enumerate()
                .map(|(i, e)| event_object(scenario, i, e))
                .collect(),
        ),
        ("apps/v1", "replicasets") => (
            "ReplicaSet",
            scenario
                .spec
                .deployments
                .iter()
                .flat_map(|d| replica_sets(scenario, d))
                .collect(),
        ),
        ("apps/v1", "deployments") => (
            "Deployment",
            scenario
                .spec
                .deployments
                .iter()
                .map(|d| deployment_object(scenario, d))
                .collect(),
        ),
        (_, other) => {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("the server could not find the requested resource ({other})"),
            );
        }
    };
    let items: Vec<Value> = items.into_iter().filter(in_ns).collect();
    let qualified = if gv == "v1" {
        resource.to_string()
    } else {
        format!("{resource}.apps")
    };
    match (name, sub) {
        (None, _) => list(kind, gv, filter_list(items, &params)),
        (Some(name), None) => match items.into_iter().find(|o| o["metadata"]["name"] == name) {
            Some(object) => json_response(StatusCode::OK, object),
            None => not_found(&qualified, name),
        },
        (Some(name), Some("log")) if resource == "pods" => {
            pod_log(scenario, namespace.unwrap_or("default"), name, &params)
        }
        (Some(_), Some(other)) => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("the server could not find the requested resource ({resource}/{other})"),
        ),
    }
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}/log?container=&previous=&tailLines=`, with the
/// kubelet's error texts.
fn pod_log(
    scenario: &Scenario,
    namespace: &str,
    name: &str,
    params: &[(String, String)],
) -> Response {
    let Some(pod) = scenario
        .spec
        .pods
        .iter()
        .find(|p| p.name == name && p.namespace == namespace)
    else {
        return not_found("pods", name);
    };
    let container = match param(params, "container") {
        Some(c) if pod.containers.iter().any(|pc| pc.name == c) => c.to_string(),
        Some(c) => {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                format!("container {c} is not valid for pod {name}"),
            );
        }
        None if pod.containers.len() == 1 => pod.containers[0].name.clone(),
        None => {
            let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    names.join(" ")
                ),
            );
        }
    };
    if pod.node.is_none() {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            format!(
                "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
            ),
        );
    }
    let previous = param(params, "previous").is_some_and(|v| v == "true" || v == "1");
    let log = scenario.spec.logs.iter().find(|l| {
        l.pod == pod.name
            && l.container
                .as_deref()
                .unwrap_or(pod.containers[0].name.as_str())
                == container
    });
    let text = if previous {
        match log.and_then(|l| l.previous.as_deref()) {
            Some(text) => text,
            None => {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    format!(
                        "previous terminated container \"{container}\" in pod \"{name}\" not found"
                    ),
                );
            }
        }
    } else {
        log.and_then(|l| l.current.as_deref()).unwrap_or("")
    };
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(tail) = param(params, "tailLines").and_then(|t| t.parse::<usize>().ok()) {
        lines.drain(..lines.len().saturating_sub(tail));
    }
    let body = if lines.iter().all(|l| l.trim().is_empty()) {
        String::new()
    } else {
        lines.join("\n") + "\n"
    };
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_like_kubernetes() {
        let event = json!({"involvedObject": {"name": "p", "kind": "Pod"}, "type": "Warning",
                           "metadata": {"labels": {"app": "x"}}});
        let f = |s| selector_matches(Some(s), |path| field(&event, path));
        assert!(f("involvedObject.name=p"));
        assert!(f("involvedObject.name==p,type=Warning"));
        assert!(!f("involvedObject.name=q"));
        assert!(f("type!=Normal"));
        assert!(!f("involvedObject.name=p,type=Normal"));
        let labels = |s| {
            selector_matches(Some(s), |key| {
                event["metadata"]["labels"]
                    .get(key)
                    .and_then(Value::as_str)
                    .map(String::from)
            })
        };
        assert!(labels("app=x") && labels("app") && labels("!team") && !labels("app=y"));
    }
}
