//! A small fake Kubernetes API server: a scenario's world as the Kubernetes REST API (JSON), for
//! the *real* `kubernetes-mcp-server` to query.
//!
//! It serves (every request is logged: [`KubeApiHandle::requests`]) discovery (`/version`,
//! `/api`, `/api/v1`, `/apis`, `/apis/<group>/<version>` for every served group), and every kind
//! of [`crate::render::objects::KINDS`] on its real REST path — core/v1 pods (with `log`:
//! `container`, `previous`, `tailLines`), events, namespaces, nodes, services, endpoints,
//! persistentvolumeclaims, persistentvolumes, configmaps, resourcequotas; apps/v1 deployments,
//! replicasets, statefulsets, daemonsets; batch/v1 jobs, cronjobs; autoscaling/v2
//! horizontalpodautoscalers; networking.k8s.io/v1 ingresses, networkpolicies; policy/v1
//! poddisruptionbudgets; storage.k8s.io/v1 storageclasses, volumeattachments — get, list
//! (namespaced or across namespaces), `labelSelector` and `fieldSelector` (`spec.nodeName=…`,
//! `involvedObject.name=…`, `type=Warning`, kubectl's node-event selector). The objects are the ones the lab renders
//! ([`crate::render`]), so both paths describe the same world. Anything else answers a
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
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::render::objects::kinds::{by_resource, group_versions};
use crate::render::objects::{KINDS, KUBELET_VERSION};
use crate::render::selector::object_matches;
use crate::render::world::World;
use crate::render::{initializing, log_container, log_text};
use crate::scenario::Scenario;

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

fn not_found(qualified: &str, name: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("{qualified} \"{name}\" not found"),
    )
}

fn no_such_resource(what: Option<&str>) -> Response {
    let suffix = what.map(|w| format!(" ({w})")).unwrap_or_default();
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("the server could not find the requested resource{suffix}"),
    )
}

fn bad_request(message: String) -> Response {
    status(StatusCode::BAD_REQUEST, "BadRequest", message)
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

fn resource(name: &str, kind: &str, namespaced: bool, verbs: &[&str]) -> Value {
    json!({
        "name": name, "singularName": kind.to_lowercase(), "namespaced": namespaced,
        "kind": kind, "verbs": verbs,
    })
}

const READ: &[&str] = &["get", "list", "watch"];

/// The resources of one group/version, for its `APIResourceList`.
fn resources_of(group_version: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for kind in KINDS.iter().filter(|k| k.api_version == group_version) {
        out.push(resource(kind.plural, kind.kind, kind.namespaced, READ));
        if kind.kind == "Pod" {
            out.push(json!({"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]}));
        }
    }
    out
}

fn discovery(path: &str, host: &str) -> Option<Value> {
    let groups = group_versions();
    Some(match path {
        "/version" => json!({
            "major": "1", "minor": "31", "gitVersion": KUBELET_VERSION,
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
            "groups": groups.iter().map(|gv| {
                let (name, version) = gv.split_once('/').unwrap_or((gv, ""));
                let preferred = json!({"groupVersion": gv, "version": version});
                json!({"name": name, "versions": [preferred], "preferredVersion": preferred})
            }).collect::<Vec<_>>(),
        }),
        "/api/v1" => json!({
            "kind": "APIResourceList", "groupVersion": "v1", "resources": resources_of("v1"),
        }),
        _ => {
            let gv = path.strip_prefix("/apis/")?;
            if !groups.contains(&gv) {
                return None;
            }
            json!({
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": resources_of(gv),
            })
        }
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
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Normalise to (group/version, namespace, resource, name, subresource).
    let (gv, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("v1".to_string(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return no_such_resource(None),
    };
    let (namespace, resource, name, sub) = match rest {
        ["namespaces"] => (None, "namespaces", None, None),
        ["namespaces", ns] => (None, "namespaces", Some(*ns), None),
        ["namespaces", ns, res] => (Some(*ns), *res, None, None),
        ["namespaces", ns, res, name] => (Some(*ns), *res, Some(*name), None),
        ["namespaces", ns, res, name, sub] => (Some(*ns), *res, Some(*name), Some(*sub)),
        [res] => (None, *res, None, None),
        [res, name] => (None, *res, Some(*name), None),
        _ => return no_such_resource(None),
    };
    let Some(kind) = by_resource(&gv, resource) else {
        return no_such_resource(Some(resource));
    };
    if kind.namespaced && namespace.is_none() && name.is_some() {
        return no_such_resource(Some(resource));
    }
    let scenario = &shared.scenario;
    let world = World::new(scenario);
    let items: Vec<Value> = kind
        .build(&world)
        .into_iter()
        .filter(|o| !kind.namespaced || namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns))
        .collect();
    match (name, sub) {
        (None, _) => {
            let labels = param(&params, "labelSelector");
            let fields = param(&params, "fieldSelector");
            let items = items
                .into_iter()
                .filter(|o| object_matches(o, labels, fields))
                .collect();
            list(kind.kind, &gv, items)
        }
        (Some(name), None) => match items.into_iter().find(|o| o["metadata"]["name"] == name) {
            Some(object) => json_response(StatusCode::OK, object),
            None => not_found(&kind.qualified(), name),
        },
        (Some(name), Some("log")) if resource == "pods" => {
            pod_log(scenario, namespace.unwrap_or("default"), name, &params)
        }
        (Some(_), Some(other)) => no_such_resource(Some(&format!("{resource}/{other}"))),
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
    let container = match log_container(pod, param(params, "container")) {
        Ok(container) => container,
        Err(message) => return bad_request(message),
    };
    if pod.node.is_none() {
        return bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        ));
    }
    let previous = param(params, "previous").is_some_and(|v| v == "true" || v == "1");
    if let (false, Some(waiting)) = (previous, initializing(pod, &container)) {
        return bad_request(waiting);
    }
    let Some(text) = log_text(scenario, pod, &container, previous) else {
        return bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{name}\" not found"
        ));
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
    use crate::peers::http_get;

    const WORLD: &str = r#"
alert: {text: x, at: -2m}
deployments:
  - {name: api, namespace: shop, replicas: 2, revisions: [{image: "api:1", created: -1d}]}
pods:
  - {name: api-a, namespace: shop, node: n1, deployment: api, containers: [{name: api, image: "api:1"}]}
  - {name: other, namespace: shop, node: n2, containers: [{name: o, image: o}]}
  - name: db-0
    namespace: shop
    node: n1
    owner: {kind: StatefulSet, name: db}
    initContainers: [{name: init, image: i, ready: false, state: {waiting: {reason: CrashLoopBackOff}}}]
    containers: [{name: db, image: "db:1"}]
statefulsets: [{name: db, namespace: shop, replicas: 1}]
storageclasses: [{name: gp3, provisioner: ebs.csi.aws.com}]
logs: [{pod: db-0, container: init, current: "migration failed"}]
events:
  - {type: Warning, reason: BackOff, message: m, involvedObject: {kind: Pod, name: db-0, namespace: shop}, at: -1m}
  - {reason: Pulled, message: m, involvedObject: {kind: Pod, name: db-0, namespace: shop}, at: -1m}
expect: {verdict: post}
"#;

    async fn get(api: &KubeApiHandle, path: &str) -> (u16, Value) {
        let (code, body) = http_get(api.addr, path)
            .await
            .expect("the fake API answers");
        (
            code,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )
    }

    fn names(list: &Value) -> Vec<&str> {
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect()
    }

    #[tokio::test]
    async fn serves_every_kind_on_its_rest_path_with_selectors() {
        let scenario =
            Scenario::parse("t", Path::new("t"), WORLD, chrono::Utc::now()).expect("loads");
        let api = serve_kube_api(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("listens");
        let (_, groups) = get(&api, "/apis").await;
        let served: Vec<&str> = groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g["preferredVersion"]["groupVersion"].as_str())
            .collect();
        assert_eq!(
            served,
            [
                "apps/v1",
                "batch/v1",
                "autoscaling/v2",
                "networking.k8s.io/v1",
                "policy/v1",
                "storage.k8s.io/v1"
            ]
        );
        let (_, batch) = get(&api, "/apis/batch/v1").await;
        assert_eq!(batch["resources"][1]["name"], "cronjobs");

        let (_, pods) = get(&api, "/api/v1/namespaces/shop/pods?labelSelector=app%3Dapi").await;
        assert_eq!(names(&pods), ["api-a"]);
        let (_, on_n1) = get(&api, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").await;
        assert_eq!(names(&on_n1), ["api-a", "db-0"]);
        let (_, sets) = get(&api, "/apis/apps/v1/namespaces/shop/statefulsets").await;
        assert_eq!(names(&sets), ["db"]);
        assert_eq!(sets["kind"], "StatefulSetList");
        let (_, warnings) = get(&api, "/api/v1/events?fieldSelector=type%3DWarning").await;
        assert_eq!(warnings["items"].as_array().map(Vec::len), Some(1));
        let (_, nodes) = get(&api, "/api/v1/nodes").await;
        assert_eq!(names(&nodes), ["n1", "n2"]);
        let (code, class) = get(&api, "/apis/storage.k8s.io/v1/storageclasses/gp3").await;
        assert_eq!(
            (code, class["provisioner"].as_str()),
            (200, Some("ebs.csi.aws.com"))
        );

        let (code, missing) = get(&api, "/apis/apps/v1/namespaces/shop/daemonsets/ghost").await;
        assert_eq!(code, 404);
        assert_eq!(missing["message"], "daemonsets.apps \"ghost\" not found");
        let (code, log) = get(&api, "/api/v1/namespaces/shop/pods/db-0/log?container=init").await;
        assert_eq!((code, log), (200, json!("migration failed\n")));
        let (code, waiting) = get(&api, "/api/v1/namespaces/shop/pods/db-0/log?container=db").await;
        assert_eq!(code, 400);
        assert!(
            waiting["message"]
                .as_str()
                .unwrap_or_default()
                .contains("PodInitializing"),
            "{waiting}"
        );
        api.shutdown().await;
    }

    const NEW_KINDS: &str = r#"
alert: {text: x, at: -2m}
statefulsets: [{name: db, namespace: shop, replicas: 3}]
pods:
  - {name: db-0, namespace: shop, node: n1, ip: 10.244.7.31, owner: {kind: StatefulSet, name: db}, containers: [{name: db, image: "db:1", ready: false}]}
ingresses:
  - {name: web, namespace: shop, ingressClassName: nginx, rules: [{host: shop.example.com, paths: [{path: /api, service: api, port: http}]}]}
networkpolicies:
  - {name: deny-all, namespace: shop}
poddisruptionbudgets:
  - {name: db, namespace: shop, selector: {app: db}, maxUnavailable: 1}
volumeattachments:
  - {name: csi-abc, attacher: ebs.csi.aws.com, node: n2, persistentVolume: pv-1, attached: false, attachError: {message: "rpc error: code = Internal", at: -5m}}
events:
  - {type: Warning, reason: NodeNotReady, message: "Node n1 status is now: NodeNotReady", involvedObject: {kind: Node, name: n1}, at: -3m}
  - {reason: Pulled, message: m, involvedObject: {kind: Pod, name: db-0, namespace: shop}, at: -1m}
expect: {verdict: post}
"#;

    #[tokio::test]
    async fn serves_the_networking_policy_and_attachment_kinds_and_node_events() {
        let scenario =
            Scenario::parse("t", Path::new("t"), NEW_KINDS, chrono::Utc::now()).expect("loads");
        let api = serve_kube_api(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("listens");
        let (_, networking) = get(&api, "/apis/networking.k8s.io/v1").await;
        let plural: Vec<&str> = networking["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(plural, ["ingresses", "networkpolicies"]);
        let (_, policy) = get(&api, "/apis/policy/v1").await;
        assert_eq!(policy["resources"][0]["name"], "poddisruptionbudgets");

        let (code, ingress) = get(
            &api,
            "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web",
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(
            ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"],
            json!({"name": "api", "port": {"name": "http"}})
        );
        let (_, policies) = get(&api, "/apis/networking.k8s.io/v1/networkpolicies").await;
        assert_eq!(names(&policies), ["deny-all"]);
        assert_eq!(policies["kind"], "NetworkPolicyList");
        let (_, budget) = get(
            &api,
            "/apis/policy/v1/namespaces/shop/poddisruptionbudgets/db",
        )
        .await;
        assert_eq!(budget["status"]["disruptionsAllowed"], 0, "{budget}");
        let (_, attachments) = get(&api, "/apis/storage.k8s.io/v1/volumeattachments").await;
        assert_eq!(names(&attachments), ["csi-abc"]);
        let (code, attachment) =
            get(&api, "/apis/storage.k8s.io/v1/volumeattachments/csi-abc").await;
        assert_eq!(code, 200);
        assert_eq!(attachment["status"]["attached"], false);
        let (code, _) = get(&api, "/apis/policy/v1/poddisruptionbudgets/db").await;
        assert_eq!(code, 404, "a namespaced object is got in its namespace");

        let (_, pod) = get(&api, "/api/v1/namespaces/shop/pods/db-0").await;
        assert_eq!(pod["status"]["podIP"], "10.244.7.31");
        assert_eq!(pod["status"]["podIPs"], json!([{"ip": "10.244.7.31"}]));

        // What `kubectl describe node n1` asks for.
        let (_, described) = get(
            &api,
            "/api/v1/events?fieldSelector=involvedObject.kind%3DNode%2CinvolvedObject.name%3Dn1%2CinvolvedObject.namespace%3D%2CinvolvedObject.uid%3Dn1",
        )
        .await;
        assert_eq!(names(&described).len(), 1, "{described}");
        assert_eq!(described["items"][0]["metadata"]["namespace"], "default");
        assert_eq!(described["items"][0]["source"]["host"], "n1");
        let (_, in_default) = get(
            &api,
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dn1",
        )
        .await;
        assert_eq!(in_default["items"][0]["reason"], "NodeNotReady");
        api.shutdown().await;
    }
}
