//! resourceVersions after a write: every served object whose content changed, or that is new,
//! gets the next version; a deleted object's are forgotten. Comparing the whole world before and
//! after catches what controllers change on the side (ReplicaSets, Endpoints, budgets' status).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::render::objects::KINDS;
use crate::render::world::World;
use crate::scenario::Scenario;
use crate::scenario::live::ObjectKey;

/// Every served object but events, as served, without its resourceVersion, by key.
fn snapshot(world: &Scenario) -> BTreeMap<ObjectKey, Value> {
    let view = World::new(world);
    let mut objects = BTreeMap::new();
    for kind in KINDS.iter().filter(|k| k.kind != "Event") {
        for mut object in kind.build(&view) {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("resourceVersion");
            }
            objects.insert(crate::render::objects::key_of(kind.kind, &object), object);
        }
    }
    objects
}

/// Versions `after`'s changed and new objects against `before`; whether anything changed.
pub(super) fn bump(before: &Scenario, after: &mut Scenario) -> bool {
    let old = snapshot(before);
    let new = snapshot(after);
    let live = &mut after.spec.live;
    let mut changed = false;
    for (key, object) in &new {
        if old.get(key) != Some(object) {
            let version = live.next_version();
            live.versions.insert(key.clone(), version);
            changed = true;
        }
    }
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        live.versions.remove(key);
        live.annotations.remove(key);
        changed = true;
    }
    changed
}
