//! `resources_create_or_update`: server-side apply of one complete object to an object of the
//! world (the lab changes its world; it creates no new objects).
//!
//! A `metadata.resourceVersion` in the applied object is a precondition, as for the API server:
//! a stale one is refused (`Operation cannot be fulfilled on deployments.apps "…": the object
//! has been modified; …`). The applied `metadata.annotations` are kept on the object (the
//! controllers' own `deployment.kubernetes.io/…` aside). Then, by kind:
//!
//! - Deployment: `spec.replicas` (a scale), `spec.paused`, `spec.template` (a rollback or a
//!   restart, see `rollout`);
//! - StatefulSet: `spec.replicas`, `spec.template` (a restart, see `restart`);
//! - DaemonSet: `spec.template` (a restart);
//! - CronJob: `spec.suspend`;
//! - Node: `spec.unschedulable` (a cordon: the `node.kubernetes.io/unschedulable:NoSchedule`
//!   taint follows it);
//! - any other kind: metadata only (a changed `spec` is refused).
//!
//! The answer is the real server's: `# The following resources (YAML) have been created or
//! updated successfully` and the object as stored.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::manifest::{Manifest, parse, scalar_text};
use super::pods::UNSCHEDULABLE_TAINT;
use super::{ACTION_ANNOTATION, Effect, Refusal, Target, WriteTool, Written, event, finish};
use super::{refusal, restart, rollout, scale};
use crate::render::objects::Kind;
use crate::render::to_yaml;
use crate::render::world::World;
use crate::scenario::{Change, NodeSpec, Scenario, TaintSpec};

/// Annotations only controllers write.
const CONTROLLER_PREFIX: &str = "deployment.kubernetes.io/";

/// What applying did by kind: the change, and the pods it created.
type Applied = (Option<Change>, Vec<String>);

/// The served object of `kind` named `name` (in `namespace`, for a namespaced kind).
fn served(world: &Scenario, kind: &Kind, namespace: Option<&str>, name: &str) -> Option<Value> {
    kind.build(&World::new(world)).into_iter().find(|o| {
        o["metadata"]["name"] == name && namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns)
    })
}

/// `spec.replicas` of an applied object, if it states one.
fn replicas(spec: Option<&Value>) -> Result<Option<u32>, String> {
    let Some(value) = spec
        .and_then(|s| s.get("replicas"))
        .filter(|v| !v.is_null())
    else {
        return Ok(None);
    };
    scalar_text(value)
        .and_then(|t| t.parse::<u32>().ok())
        .map(Some)
        .ok_or_else(|| {
            format!("spec.replicas: Invalid value: {value}: must be greater than or equal to 0")
        })
}

fn deployment(world: &mut Scenario, m: &Manifest, now: DateTime<Utc>) -> Result<Applied, String> {
    let namespace = m.namespace.as_deref().unwrap_or("default");
    let Some(index) = world
        .spec
        .deployments
        .iter()
        .position(|d| d.name == m.name && d.namespace == namespace)
    else {
        return Ok((None, Vec::new()));
    };
    let spec = m.object.get("spec");
    let mut change = None;
    let mut created = Vec::new();
    if let Some(n) = replicas(spec)?
        && let Some(new) = scale::deployment(world, index, n, now)?
    {
        change = Some(Change::Scale);
        created = new;
    }
    let paused = spec
        .and_then(|s| s.get("paused"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let d = &mut world.spec.deployments[index];
    if d.paused != paused {
        d.paused = paused;
        let generation = d.generation.unwrap_or(d.revisions.len() as u64);
        d.generation = Some(generation + 1);
        change.get_or_insert(Change::Update);
    }
    if let Some(template) = spec
        .and_then(|s| s.get("template"))
        .filter(|t| t.is_object())
    {
        let cause = m.annotations.get("kubernetes.io/change-cause").cloned();
        if let Some((rolled, new)) = rollout::deployment(world, index, template, cause, now)? {
            change = Some(rolled);
            created = new;
        }
    }
    Ok((change, created))
}

fn statefulset(world: &mut Scenario, m: &Manifest, now: DateTime<Utc>) -> Result<Applied, String> {
    let namespace = m.namespace.as_deref().unwrap_or("default");
    let Some(index) = world
        .spec
        .statefulsets
        .iter()
        .position(|s| s.name == m.name && s.namespace == namespace)
    else {
        return Ok((None, Vec::new()));
    };
    let spec = m.object.get("spec");
    let mut change = None;
    let mut created = Vec::new();
    if let Some(n) = replicas(spec)?
        && let Some(new) = scale::statefulset(world, index, n, now)?
    {
        change = Some(Change::Scale);
        created = new;
    }
    if let Some(template) = spec
        .and_then(|s| s.get("template"))
        .filter(|t| t.is_object())
        && let Some((rolled, new)) = restart::statefulset(world, index, template, now)?
    {
        change = Some(rolled);
        created.extend(new);
    }
    Ok((change, created))
}

fn daemonset(world: &mut Scenario, m: &Manifest, now: DateTime<Utc>) -> Result<Applied, String> {
    let namespace = m.namespace.as_deref().unwrap_or("default");
    let Some(index) = world
        .spec
        .daemonsets
        .iter()
        .position(|d| d.name == m.name && d.namespace == namespace)
    else {
        return Ok((None, Vec::new()));
    };
    match m.object.pointer("/spec/template").filter(|t| t.is_object()) {
        Some(template) => Ok(restart::daemonset(world, index, template, now)?
            .map_or((None, Vec::new()), |(c, created)| (Some(c), created))),
        None => Ok((None, Vec::new())),
    }
}

fn cronjob(world: &mut Scenario, m: &Manifest) -> Applied {
    let namespace = m.namespace.as_deref().unwrap_or("default");
    let wanted = m
        .object
        .pointer("/spec/suspend")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(cronjob) = world
        .spec
        .cronjobs
        .iter_mut()
        .find(|c| c.name == m.name && c.namespace == namespace)
        .filter(|c| c.suspend != wanted)
    else {
        return (None, Vec::new());
    };
    cronjob.suspend = wanted;
    let change = if wanted {
        Change::Suspend
    } else {
        Change::Resume
    };
    (Some(change), Vec::new())
}

fn node(world: &mut Scenario, m: &Manifest, now: DateTime<Utc>) -> Result<Applied, String> {
    let wanted = m
        .object
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let position = match world.spec.nodes.iter().position(|n| n.name == m.name) {
        Some(position) => position,
        None if !wanted => return Ok((None, Vec::new())),
        None => {
            // A node only pods name: listed from now on, to carry its cordon.
            let node: NodeSpec =
                serde_json::from_value(json!({"name": m.name})).map_err(|e| e.to_string())?;
            world.spec.nodes.push(node);
            world.spec.nodes.len() - 1
        }
    };
    let node = &mut world.spec.nodes[position];
    if node.unschedulable == wanted {
        return Ok((None, Vec::new()));
    }
    node.unschedulable = wanted;
    node.taints.retain(|t| t.key != UNSCHEDULABLE_TAINT);
    if wanted {
        node.taints.push(TaintSpec {
            key: UNSCHEDULABLE_TAINT.into(),
            value: None,
            effect: "NoSchedule".into(),
        });
    }
    let status = if wanted {
        "NodeNotSchedulable"
    } else {
        "NodeSchedulable"
    };
    let message = format!("Node {} status is now: {status}", m.name);
    event(world, status, message, ("Node", &m.name, None), now);
    let change = if wanted {
        Change::Cordon
    } else {
        Change::Uncordon
    };
    Ok((Some(change), Vec::new()))
}

/// Metadata only: a `spec` other than the served one is refused.
fn metadata_only(current: &Value, m: &Manifest) -> Result<Applied, String> {
    match m.object.get("spec") {
        Some(spec) if current.get("spec") != Some(spec) => Err(format!(
            "the lab applies only metadata to {}, not a changed spec",
            m.kind.plural
        )),
        _ => Ok((None, Vec::new())),
    }
}

/// `resources_create_or_update` {resource}.
pub(super) fn create_or_update(
    world: &Scenario,
    args: &Map<String, Value>,
    now: DateTime<Utc>,
    forbidden: Refusal,
) -> Result<Written, String> {
    let failed = |why: String| format!("failed to create or update resources: {why}");
    let text = args
        .get("resource")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or("failed to create or update resources, missing argument resource")?;
    let m = parse(text).map_err(failed)?;
    let namespace = m.namespace.as_deref();
    if let Some(user) = forbidden {
        let refused = refusal::forbidden(user, "patch", m.kind, None, &m.name, namespace);
        return Err(failed(refused));
    }
    let qualified = m.kind.qualified();
    let current = served(world, m.kind, namespace, &m.name).ok_or_else(|| {
        failed(format!(
            "{qualified} \"{}\" not found (the lab changes the objects of its world; it creates none)",
            m.name
        ))
    })?;
    let stored = current["metadata"]["resourceVersion"].as_str();
    if let Some(sent) = &m.resource_version
        && stored != Some(sent.as_str())
    {
        return Err(failed(format!(
            "Operation cannot be fulfilled on {qualified} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
            m.name
        )));
    }
    let mut next = world.clone();
    let key = (
        m.kind.kind.to_string(),
        namespace.unwrap_or_default().to_string(),
        m.name.clone(),
    );
    let applied: BTreeMap<String, String> = m
        .annotations
        .iter()
        .filter(|(k, _)| !k.starts_with(CONTROLLER_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if applied.is_empty() {
        next.spec.live.annotations.remove(&key);
    } else {
        next.spec.live.annotations.insert(key, applied);
    }
    let (change, created) = match m.kind.kind {
        "Deployment" => deployment(&mut next, &m, now),
        "StatefulSet" => statefulset(&mut next, &m, now),
        "DaemonSet" => daemonset(&mut next, &m, now),
        "CronJob" => Ok(cronjob(&mut next, &m)),
        "Node" => node(&mut next, &m, now),
        _ => metadata_only(&current, &m),
    }
    .map_err(failed)?;
    let target = Target {
        api_version: m.kind.api_version.to_string(),
        kind: m.kind.kind.to_string(),
        namespace: m.namespace.clone(),
        name: m.name.clone(),
    };
    let effect = Effect {
        change: change.unwrap_or(Change::Update),
        created,
    };
    let action = m.annotations.get(ACTION_ANNOTATION).cloned();
    let changed = finish(
        world,
        next,
        WriteTool::CreateOrUpdate,
        target,
        effect,
        action,
        now,
    );
    let shown = changed.as_ref().map_or(world, |(w, _)| w);
    let object = served(shown, m.kind, namespace, &m.name).unwrap_or(current);
    Ok(Written {
        text: format!(
            "# The following resources (YAML) have been created or updated successfully\n{}",
            to_yaml(&Value::Array(vec![object]))
        ),
        changed,
    })
}
