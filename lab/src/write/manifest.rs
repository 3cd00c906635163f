//! The object `resources_create_or_update` applies: one complete Kubernetes object as JSON or
//! YAML, its kind one the lab serves, with a name; the namespace defaults to `default` (the
//! server's configured namespace) for a namespaced kind.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::render::objects::Kind;
use crate::render::objects::kinds::by_kind;

/// An applied object, read.
pub(super) struct Manifest {
    pub object: Value,
    pub kind: &'static Kind,
    pub name: String,
    /// None for a cluster-scoped kind.
    pub namespace: Option<String>,
    /// `metadata.resourceVersion`, when the client sent one (a precondition).
    pub resource_version: Option<String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// A scalar as Kubernetes reads it into a string (`"5"`, `5` and `true` alike).
pub(super) fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A string map (`labels`, `annotations`) of an object, scalars read as strings.
pub(super) fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), scalar_text(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads `text`; `Err` says what is wrong with it.
pub(super) fn parse(text: &str) -> Result<Manifest, String> {
    let object: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => serde_norway::from_str(text)
            .map_err(|e| format!("error parsing the resource as JSON or YAML: {e}"))?,
    };
    if !object.is_object() {
        return Err("the resource must be one Kubernetes object (a mapping)".into());
    }
    let text_at = |path: &str| object.pointer(path).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (text_at("/apiVersion"), text_at("/kind")) else {
        return Err(
            "Object 'Kind' is missing in the resource: apiVersion and kind are required".into(),
        );
    };
    let served = by_kind(api_version, kind)
        .ok_or_else(|| format!("no matches for kind \"{kind}\" in version \"{api_version}\""))?;
    let name = text_at("/metadata/name")
        .filter(|n| !n.is_empty())
        .ok_or("metadata.name: Required value: name is required")?
        .to_string();
    let namespace = served.namespaced.then(|| {
        text_at("/metadata/namespace")
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
            .to_string()
    });
    let resource_version = object
        .pointer("/metadata/resourceVersion")
        .and_then(scalar_text)
        .filter(|v| !v.is_empty());
    let annotations = string_map(object.pointer("/metadata/annotations"));
    Ok(Manifest {
        object,
        kind: served,
        name,
        namespace,
        resource_version,
        annotations,
    })
}
