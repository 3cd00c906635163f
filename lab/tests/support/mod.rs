//! What the lab's MCP tests share: a real MCP client over streamable HTTP (plain http, a
//! ring-backed rustls config for reqwest, as the tool layer's), calls that tell answers from
//! tool errors, and the YAML the Kubernetes tools answer with.

#![allow(dead_code)]

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

pub type Client = RunningService<RoleClient, ()>;

pub fn http() -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .expect("HTTP client")
}

pub async fn connect(url: String) -> Client {
    let transport = StreamableHttpClientTransport::with_client(
        http(),
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    ().serve(transport).await.expect("MCP session")
}

/// A tool's answer: `Ok(text)`, or `Err(text)` for a tool error.
pub async fn try_call(
    client: &Client,
    tool: &str,
    args: Value,
) -> Result<Result<String, String>, ServiceError> {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await?;
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    let text = text.join("\n");
    Ok(if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    })
}

pub async fn call(client: &Client, tool: &str, args: Value) -> String {
    match try_call(client, tool, args.clone()).await {
        Ok(Ok(text)) => text,
        other => panic!("{tool} {args}: {other:?}"),
    }
}

pub async fn refused(client: &Client, tool: &str, args: Value) -> String {
    match try_call(client, tool, args.clone()).await {
        Ok(Err(text)) => text,
        other => panic!("{tool} {args} should be a tool error: {other:?}"),
    }
}

pub fn yaml(text: &str) -> Value {
    let body: String = text
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    serde_norway::from_str(&body).unwrap_or_else(|e| panic!("YAML: {e}\n{text}"))
}

pub async fn get(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Value {
    let args =
        json!({"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name});
    yaml(&call(client, "resources_get", args).await)
}

pub async fn pods(client: &Client, namespace: &str, selector: &str) -> Vec<Value> {
    let args = json!({"namespace": namespace, "labelSelector": selector});
    let list = yaml(&call(client, "pods_list_in_namespace", args).await);
    list.as_array().cloned().unwrap_or_default()
}

pub fn names(pods: &[Value]) -> Vec<String> {
    pods.iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
        .collect()
}

/// The Deployment `namespace/name` as read, its template set back to revision `revision`'s
/// ReplicaSet (`kubectl rollout undo --to-revision`), annotated with the action.
pub async fn rollback_object(
    client: &Client,
    namespace: &str,
    name: &str,
    revision: &str,
    action: &str,
) -> Value {
    let mut deployment = get(client, "apps/v1", "Deployment", namespace, name).await;
    let args = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": namespace});
    let sets = yaml(&call(client, "resources_list", args).await);
    let previous = sets
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| {
            s["metadata"]["ownerReferences"][0]["name"] == name
                && s["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == revision
        })
        .unwrap_or_else(|| panic!("a ReplicaSet of revision {revision}: {sets}"))
        .clone();
    let mut template = previous["spec"]["template"].clone();
    if let Some(labels) = template["metadata"]["labels"].as_object_mut() {
        labels.remove("pod-template-hash");
    }
    deployment["spec"]["template"] = template;
    deployment["metadata"]["annotations"]["firstline.dev/action"] = json!(action);
    if let Some(object) = deployment.as_object_mut() {
        object.remove("status");
    }
    deployment
}

/// `resources_create_or_update`'s arguments for `object`.
pub fn apply(object: &Value) -> Value {
    json!({"resource": object.to_string()})
}

/// The value of the instant query `query` now, if it has one.
pub async fn value_now(client: &Client, query: &str) -> Option<f64> {
    let answer: Value =
        serde_json::from_str(&call(client, "execute_query", json!({"query": query})).await)
            .expect("JSON");
    answer["result"][0]["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
}
