//! From a catalogue [`Action`] and the objects as read now to the exact write: the tool call the
//! write server will get, the fields it changes (what the approver is shown), the resourceVersion
//! it was computed against and its hash, which the approval is bound to. Pure functions: reading
//! the objects and sending the write are `writer.rs`'s.
//!
//! What is stored and shown is the change's description (the fields, redacted by the caller) and
//! its hash; the write itself is never stored (a pod template may hold literal credentials): it is
//! computed again from the object read at execution, and sent only if its hash is the one
//! approved.
//!
//! kubernetes-mcp-server 0.0.67 has no dry-run parameter; the change is computed here against
//! the object as the API server returned it, and the object sent carries that
//! `metadata.resourceVersion`, so the API server itself refuses the write if the object moved on
//! in between (a conflict), as a server-side dry run followed by a conditional apply would.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use firstline_investigation::evidence::canonical_json;
use firstline_investigation::kube;
use firstline_model::Action;

/// The annotation that carries an action's idempotency key on the object it changed: a retried
/// execution that finds it knows the write already happened.
pub const ACTION_ANNOTATION: &str = "firstline.dev/action";
/// The annotation `kubectl rollout restart` sets on a pod template.
const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";
/// A Deployment's and its ReplicaSets' revision annotation.
const REVISION: &str = "deployment.kubernetes.io/revision";

/// One field the write changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub before: String,
    pub after: String,
}

/// The exact write an approver is shown and approves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The write server's tool and its arguments, as they will be sent (never stored).
    pub tool: String,
    #[serde(skip)]
    pub arguments: Map<String, Value>,
    /// sha256 hex over the tool and its arguments, keys sorted at every level: what the click
    /// is bound to and what execution computes again before sending.
    pub hash: String,
    /// `Deployment shop/checkout`.
    pub object: String,
    /// The object's resourceVersion when the change was computed.
    pub resource_version: Option<String>,
    /// The idempotency key written on the object (`firstline.dev/action`).
    pub key: String,
    pub fields: Vec<FieldChange>,
    /// The workload's pods, for verification: its selector (`app=checkout`), when it has pods.
    pub selector: Option<String>,
    /// For a pod deletion: the pod's uid (a pod of the same name later is another pod).
    pub uid: Option<String>,
    /// For a restart: the time stamped on the template (the same write, computed again).
    pub stamp: String,
    /// Why the action fits the cause, in one line (from the round's proposal).
    #[serde(default)]
    pub why: String,
    /// The alert's expression, re-run to verify the outcome; `None`: the pods' state only.
    #[serde(default)]
    pub query: Option<String>,
}

fn hash(tool: &str, arguments: &Map<String, Value>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(canonical_json(&Value::Object(arguments.clone())).as_bytes());
    hex::encode(hasher.finalize())
}

/// Why no change can be computed: each names what was expected and what was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("{object} is not as the round read it: {detail}")]
    Moved { object: String, detail: String },
    #[error("{object}: {detail}")]
    Unfit { object: String, detail: String },
}

/// What the change is computed from: the object, and for a rollback the Deployment's
/// ReplicaSets.
#[derive(Debug, Clone, Default)]
pub struct Read {
    pub object: Value,
    pub replica_sets: Vec<Value>,
}

/// The write `action` takes, computed against `read`; `key` is its idempotency key and `now` the
/// time a restart stamps (RFC 3339).
pub fn plan(action: &Action, read: &Read, key: &str, now: &str) -> Result<Change, ChangeError> {
    let mut change = plan_unhashed(action, read, key, now)?;
    change.hash = hash(&change.tool, &change.arguments);
    Ok(change)
}

fn plan_unhashed(
    action: &Action,
    read: &Read,
    key: &str,
    now: &str,
) -> Result<Change, ChangeError> {
    let target = action.object();
    let object_name = target.to_string();
    let object = &read.object;
    let moved = |detail: String| ChangeError::Moved {
        object: object_name.clone(),
        detail,
    };
    let unfit = |detail: &str| ChangeError::Unfit {
        object: object_name.clone(),
        detail: detail.to_string(),
    };
    if object.pointer("/metadata/name").and_then(Value::as_str) != Some(target.name.as_str()) {
        return Err(unfit("the write server did not return this object"));
    }
    let resource_version = text(object, "/metadata/resourceVersion");
    let selector = kube::selector_of(&object.to_string());
    let mut change = Change {
        tool: "resources_create_or_update".to_string(),
        arguments: Map::new(),
        hash: String::new(),
        object: object_name.clone(),
        resource_version: resource_version.clone(),
        key: key.to_string(),
        fields: Vec::new(),
        selector,
        uid: None,
        stamp: now.to_string(),
        why: String::new(),
        query: None,
    };
    let mut desired = applied(object, key);
    match action {
        Action::Rollback {
            deployment,
            from_revision,
            to_revision,
            ..
        } => {
            let current = text(
                object,
                &format!("/metadata/annotations/{}", escape(REVISION)),
            );
            if current.as_deref() != Some(from_revision.to_string().as_str()) {
                return Err(moved(format!(
                    "it runs revision {}, not {from_revision}",
                    current.as_deref().unwrap_or("(none)")
                )));
            }
            let previous = read
                .replica_sets
                .iter()
                .find(|rs| {
                    owned_by(rs, "Deployment", deployment, text(object, "/metadata/uid"))
                        && text(rs, &format!("/metadata/annotations/{}", escape(REVISION)))
                            .as_deref()
                            == Some(to_revision.to_string().as_str())
                })
                .ok_or_else(|| {
                    unfit(&format!(
                        "no ReplicaSet of revision {to_revision} is left to roll back to"
                    ))
                })?;
            let mut template = previous
                .pointer("/spec/template")
                .cloned()
                .ok_or_else(|| unfit("the earlier ReplicaSet has no pod template"))?;
            // The ReplicaSet's own hash label is the controller's, not the template's.
            if let Some(labels) = template
                .pointer_mut("/metadata/labels")
                .and_then(Value::as_object_mut)
            {
                labels.remove("pod-template-hash");
            }
            let before = object
                .pointer("/spec/template")
                .cloned()
                .unwrap_or(Value::Null);
            change.fields = diff("spec.template", &before, &template);
            if change.fields.len() >= MAX_FIELDS {
                return Err(unfit(&format!(
                    "revision {to_revision}'s template differs in more than {MAX_FIELDS} fields: too much to approve from a message"
                )));
            }
            if change.fields.is_empty() {
                return Err(unfit(&format!(
                    "revision {to_revision}'s pod template is the one running now"
                )));
            }
            desired["spec"]["template"] = template;
        }
        Action::Restart { .. } => {
            let before = text(
                object,
                &format!(
                    "/spec/template/metadata/annotations/{}",
                    escape(RESTARTED_AT)
                ),
            )
            .unwrap_or_else(|| "(unset)".into());
            desired["spec"]["template"] = json!({"metadata": {"annotations": {RESTARTED_AT: now}}});
            change.fields.push(FieldChange {
                field: format!("spec.template.metadata.annotations.{RESTARTED_AT}"),
                before,
                after: now.to_string(),
            });
        }
        Action::Scale {
            namespace,
            kind,
            name,
            from,
            to,
        } => {
            let replicas = object.pointer("/spec/replicas").and_then(Value::as_u64);
            if replicas != Some(u64::from(*from)) {
                return Err(moved(format!(
                    "it has {} replicas, not {from}",
                    replicas.map_or("no".to_string(), |r| r.to_string())
                )));
            }
            change.tool = "resources_scale".to_string();
            change.arguments = json_map(json!({
                "apiVersion": "apps/v1", "kind": kind.as_str(), "name": name,
                "namespace": namespace, "scale": to,
            }));
            change.fields.push(FieldChange {
                field: "spec.replicas".into(),
                before: from.to_string(),
                after: to.to_string(),
            });
            return Ok(change);
        }
        Action::SuspendCronJob { suspend, .. } => {
            let now_suspended = object
                .pointer("/spec/suspend")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if now_suspended == *suspend {
                return Err(moved(format!("spec.suspend is already {suspend}")));
            }
            desired["spec"]["suspend"] = json!(suspend);
            change.fields.push(FieldChange {
                field: "spec.suspend".into(),
                before: now_suspended.to_string(),
                after: suspend.to_string(),
            });
        }
        Action::DeletePod { namespace, name } => {
            let controlled = object
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|owners| {
                    owners
                        .iter()
                        .any(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
                });
            if !controlled {
                return Err(unfit(
                    "no controller owns this pod, so nothing would replace it",
                ));
            }
            change.tool = "pods_delete".to_string();
            change.arguments = json_map(json!({"name": name, "namespace": namespace}));
            change.uid = text(object, "/metadata/uid");
            change.fields.push(FieldChange {
                field: "pod".into(),
                before: format!("{namespace}/{name} ({})", phase(object)),
                after: "deleted; its controller starts a replacement".into(),
            });
            return Ok(change);
        }
        Action::Cordon { cordon, .. } => {
            let now_cordoned = object
                .pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if now_cordoned == *cordon {
                return Err(moved(format!("spec.unschedulable is already {cordon}")));
            }
            desired["spec"]["unschedulable"] = json!(cordon);
            change.fields.push(FieldChange {
                field: "spec.unschedulable".into(),
                before: now_cordoned.to_string(),
                after: cordon.to_string(),
            });
        }
    }
    change.fields.push(FieldChange {
        field: format!("metadata.annotations.{ACTION_ANNOTATION}"),
        before: text(
            object,
            &format!("/metadata/annotations/{}", escape(ACTION_ANNOTATION)),
        )
        .unwrap_or_else(|| "(unset)".into()),
        after: key.to_string(),
    });
    change.arguments = json_map(json!({"resource": desired.to_string()}));
    Ok(change)
}

/// Whether the write of `change` is already on `object` as read now: its key is on the object
/// (create-or-update), the replicas are already the target (scale), the pod is gone or is another
/// pod (delete).
pub fn already_applied(change: &Change, action: &Action, object: Option<&Value>) -> bool {
    match change.tool.as_str() {
        "pods_delete" => match object {
            None => true,
            Some(object) => change.uid.is_some() && text(object, "/metadata/uid") != change.uid,
        },
        "resources_scale" => {
            let target = match action {
                Action::Scale { to, .. } => Some(u64::from(*to)),
                _ => None,
            };
            object
                .and_then(|o| o.pointer("/spec/replicas"))
                .and_then(Value::as_u64)
                .is_some_and(|replicas| Some(replicas) == target)
        }
        _ => object.is_some_and(|object| {
            text(
                object,
                &format!("/metadata/annotations/{}", escape(ACTION_ANNOTATION)),
            )
            .as_deref()
                == Some(change.key.as_str())
        }),
    }
}

/// Why `change` may no longer be sent: the object moved on since it was computed (another
/// resourceVersion, other replicas, a pod replaced), or is gone.
pub fn moved_on(change: &Change, object: Option<&Value>) -> Option<String> {
    let Some(object) = object else {
        return Some(format!("{} no longer exists", change.object));
    };
    match change.tool.as_str() {
        "resources_scale" => {
            let before = change
                .fields
                .first()
                .and_then(|f| f.before.parse::<u64>().ok());
            let now = object.pointer("/spec/replicas").and_then(Value::as_u64);
            (now != before).then(|| {
                format!(
                    "{} has {} replicas now, not the {} shown",
                    change.object,
                    now.map_or("no".into(), |n| n.to_string()),
                    before.map_or("?".into(), |n| n.to_string())
                )
            })
        }
        "pods_delete" => None,
        _ => {
            let now = text(object, "/metadata/resourceVersion");
            (now != change.resource_version).then(|| {
                format!(
                    "{} changed since the change was shown (resourceVersion {} → {})",
                    change.object,
                    change.resource_version.as_deref().unwrap_or("?"),
                    now.as_deref().unwrap_or("?")
                )
            })
        }
    }
}

/// The object to apply: its identity, the resourceVersion read (so the API server refuses it if
/// the object moved on) and the idempotency key — the spec fields each action sets are added to
/// it. Nothing else: a server-side apply takes ownership of every field it sends, and the fields
/// other managers (a deployer, Helm, Argo CD) own stay theirs.
fn applied(object: &Value, key: &str) -> Value {
    let mut metadata = json!({"name": object.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
                              "annotations": {ACTION_ANNOTATION: key}});
    for field in ["namespace", "resourceVersion"] {
        if let Some(value) = object.pointer(&format!("/metadata/{field}")) {
            metadata[field] = value.clone();
        }
    }
    json!({
        "apiVersion": object.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": object.get("kind").cloned().unwrap_or(Value::Null),
        "metadata": metadata,
        "spec": {},
    })
}

/// The fields in which `after` differs from `before`, as dotted paths under `path`.
fn diff(path: &str, before: &Value, after: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk_diff(path, before, after, &mut out, 0);
    out
}

/// Nesting followed at most; deeper differences are reported whole.
const MAX_DEPTH: usize = 12;
/// Fields listed at most; an approver reads every one.
const MAX_FIELDS: usize = 40;

fn walk_diff(path: &str, before: &Value, after: &Value, out: &mut Vec<FieldChange>, depth: usize) {
    if before == after || out.len() >= MAX_FIELDS {
        return;
    }
    match (before, after) {
        (Value::Object(b), Value::Object(a)) if depth < MAX_DEPTH => {
            let keys: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
            for key in keys {
                walk_diff(
                    &format!("{path}.{key}"),
                    b.get(key).unwrap_or(&Value::Null),
                    a.get(key).unwrap_or(&Value::Null),
                    out,
                    depth + 1,
                );
            }
        }
        // Containers, env entries, volumes, ports: matched by name, so an entry added or
        // removed is one field, not every later index.
        (Value::Array(b), Value::Array(a)) if depth < MAX_DEPTH && named(b) && named(a) => {
            let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
            let names: std::collections::BTreeSet<String> =
                b.iter().chain(a.iter()).filter_map(name).collect();
            for entry in names {
                let find = |items: &[Value]| {
                    items
                        .iter()
                        .find(|v| name(v).as_deref() == Some(entry.as_str()))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                walk_diff(
                    &format!("{path}[{entry}]"),
                    &find(b),
                    &find(a),
                    out,
                    depth + 1,
                );
            }
        }
        (Value::Array(b), Value::Array(a)) if depth < MAX_DEPTH && b.len() == a.len() => {
            for (i, (b, a)) in b.iter().zip(a).enumerate() {
                walk_diff(&format!("{path}[{i}]"), b, a, out, depth + 1);
            }
        }
        _ => out.push(FieldChange {
            field: path.to_string(),
            before: shown(before),
            after: shown(after),
        }),
    }
}

/// Every item an object with a `name`.
fn named(items: &[Value]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|v| v.get("name").is_some_and(Value::is_string))
}

fn shown(value: &Value) -> String {
    match value {
        Value::Null => "(unset)".into(),
        Value::String(s) => s.clone(),
        other => firstline_model::text::clip(&other.to_string(), 200, "…"),
    }
}

/// Whether `object` is owned by the `kind` named `name` (and, when both say, of uid `uid`: a
/// Deployment deleted and made again under its name owns none of the old ReplicaSets).
fn owned_by(object: &Value, kind: &str, name: &str, uid: Option<String>) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|owners| {
            owners.iter().any(|o| {
                let same_uid = match (o.get("uid").and_then(Value::as_str), uid.as_deref()) {
                    (Some(owner), Some(uid)) => owner == uid,
                    _ => true,
                };
                o.get("kind").and_then(Value::as_str) == Some(kind)
                    && o.get("name").and_then(Value::as_str) == Some(name)
                    && same_uid
            })
        })
}

fn phase(object: &Value) -> String {
    text(object, "/status/phase").unwrap_or_else(|| "phase unknown".into())
}

fn text(value: &Value, pointer: &str) -> Option<String> {
    match value.pointer(pointer)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A JSON pointer segment for a key holding `/` (annotation names do).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

pub(super) fn json_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests;
