//! What every object carries from the writes to the world: `metadata.resourceVersion` (its
//! initial one until a write changes it, see `scenario::live`) and the annotations a client
//! applied, over those the lab computes (a controller's own `deployment.kubernetes.io/…` keys
//! stay the lab's). Events keep the resourceVersion they are built with.

use serde_json::{Map, Value, json};

use crate::render::world::World;
use crate::scenario::live::ObjectKey;

/// Annotations only the controllers write: a client's copy never replaces them.
const CONTROLLER_PREFIX: &str = "deployment.kubernetes.io/";

/// The key of an object of `kind` as built (namespace empty for a cluster-scoped one).
pub(crate) fn key_of(kind: &str, object: &Value) -> ObjectKey {
    let text = |field: &str| {
        object["metadata"][field]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    (kind.to_string(), text("namespace"), text("name"))
}

/// Sets the object's resourceVersion and adds the annotations clients applied to it.
pub(crate) fn stamp(world: &World, kind: &str, object: &mut Value) {
    let key = key_of(kind, object);
    let live = &world.spec.live;
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    metadata.insert(
        "resourceVersion".into(),
        json!(live.version(&key).to_string()),
    );
    let Some(applied) = live.annotations.get(&key).filter(|a| !a.is_empty()) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        for (k, v) in applied {
            if !k.starts_with(CONTROLLER_PREFIX) {
                annotations.insert(k.clone(), json!(v));
            }
        }
    }
}
