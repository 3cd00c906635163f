//! A public host a client calls (`auth.example.com`) that a proxy answers with nothing behind
//! it: the cluster may serve it. The Ingresses of every namespace say which Service a host is
//! routed to; that Service is then read from its side like any other (its Endpoints, its
//! pods). When no Ingress routes the host (another controller's routes, a load balancer of its
//! own), the workload configured with the host as its own (a `KC_HOSTNAME`, a public URL in its
//! env or arguments) outside the client's namespace is the candidate, and the Service that
//! selects it is read.

use serde_json::Value;

use crate::evidence::Capability;
use crate::kube::{self, pod_from_object};
use crate::tools::{CapabilityRequest, EvidenceSource};

use super::super::collect::Collector;
use super::{Reached, service_end};

/// Reads the side of a public host the cluster serves, if it does.
pub(super) async fn follow<E: EvidenceSource>(
    c: &mut Collector<'_, E>,
    host: &str,
    port: Option<u16>,
    client_namespace: Option<&str>,
    reached: &mut Reached,
) {
    let ingresses = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: None,
                kind: "Ingress".into(),
                label_selector: None,
            },
            format!("host `{host}` answers with nothing behind it: which Ingress routes it, to which Service"),
        )
        .await;
    let routes = ingresses
        .as_deref()
        .map(|text| kube::ingress_routes(text, host))
        .unwrap_or_default();
    if let Some(route) = routes.first() {
        reached.names.push(route.ingress.clone());
        service_end(c, &route.namespace, &route.service, None, reached).await;
        return;
    }
    let pods = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: None,
                kind: "Pod".into(),
                label_selector: None,
            },
            format!(
                "no Ingress routes `{host}`: which workload is configured with it as its own \
                 (outside the client's namespace)"
            ),
        )
        .await
        .unwrap_or_default();
    let server = kube::objects(&pods).into_iter().find(|pod| {
        kube::str_at(pod, "/metadata/namespace").is_some_and(|ns| Some(ns) != client_namespace)
            && kube::serves_host(pod, host)
    });
    let Some(server) = server else {
        c.skip(
            Capability::ObjectList,
            format!(
                "host `{host}` is routed by no Ingress and configured in no pod outside the \
                 client's namespace: it is served outside the cluster (its status page, its owner)"
            ),
        );
        return;
    };
    let Some(pod) = pod_from_object(&server) else {
        return;
    };
    let Some(namespace) = pod.namespace.clone() else {
        return;
    };
    let services = c
        .fetch(
            CapabilityRequest::ObjectList {
                namespace: Some(namespace.clone()),
                kind: "Service".into(),
                label_selector: None,
            },
            format!("which Service in `{namespace}` selects pod `{}`", pod.name),
        )
        .await
        .unwrap_or_default();
    match selecting_service(&services, &pod.labels) {
        Some(service) => service_end(c, &namespace, &service, port, reached).await,
        None => reached.pods.push(pod),
    }
}

/// The Service whose selector picks a pod with `labels`; one with a cluster IP before a
/// headless one (clients reach the former).
fn selecting_service(
    text: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let mut selecting: Vec<(bool, String)> = kube::objects(text)
        .iter()
        .filter_map(|service| {
            let selector = service
                .pointer("/spec/selector")
                .and_then(Value::as_object)?;
            let picks = kube::selects(selector, labels);
            let headless = kube::str_at(service, "/spec/clusterIP") == Some("None");
            picks.then(|| {
                (
                    headless,
                    kube::str_at(service, "/metadata/name").map(str::to_string),
                )
            })
        })
        .filter_map(|(headless, name)| name.map(|n| (headless, n)))
        .collect();
    selecting.sort_by_key(|(headless, _)| *headless);
    selecting.into_iter().next().map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_selecting_a_pod_is_found_and_a_headless_one_comes_last() {
        let services = r#"
items:
- metadata: {name: keycloak-headless, namespace: identity}
  spec: {clusterIP: None, selector: {app: keycloak}}
- metadata: {name: keycloak, namespace: identity}
  spec: {clusterIP: 10.96.77.145, selector: {app: keycloak}}
- metadata: {name: other, namespace: identity}
  spec: {clusterIP: 10.96.77.146, selector: {app: other}}
"#;
        let labels = [("app".to_string(), "keycloak".to_string())].into();
        assert_eq!(
            selecting_service(services, &labels).as_deref(),
            Some("keycloak")
        );
        let none = [("app".to_string(), "nobody".to_string())].into();
        assert_eq!(selecting_service(services, &none), None);
    }
}
