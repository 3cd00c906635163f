//! RBAC's refusal, as the API server words it for the verb and resource a tool needs:
//! server-side apply patches (`cannot patch resource "deployments"`), a scale updates the scale
//! subresource (`cannot update resource "deployments/scale"`), a pod deletion deletes
//! (`cannot delete resource "pods" in API group ""`); a cluster-scoped object is refused "at the
//! cluster scope".

use crate::render::objects::Kind;

/// `deployments.apps "checkout" is forbidden: User "…" cannot patch resource "deployments" in
/// API group "apps" in the namespace "shop"`.
pub(super) fn forbidden(
    user: &str,
    verb: &str,
    kind: &Kind,
    subresource: Option<&str>,
    name: &str,
    namespace: Option<&str>,
) -> String {
    let resource = match subresource {
        Some(sub) => format!("{}/{sub}", kind.plural),
        None => kind.plural.to_string(),
    };
    let scope = match namespace.filter(|_| kind.namespaced) {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    format!(
        "{} \"{name}\" is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{}\" {scope}",
        kind.qualified(),
        kind.group()
    )
}
