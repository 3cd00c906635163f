//! Pod templates compared as the controllers and `kubectl rollout` see them: the same spec and
//! annotations, or — leniently, since a client may add defaults to what it read — the same
//! images and annotations; whether a change is a restart (a new
//! `kubectl.kubernetes.io/restartedAt`) or another update.

use std::collections::BTreeMap;

use serde_json::Value;

use super::pods::template_metadata;
use crate::scenario::{Change, PodSpec};

/// The annotation `kubectl rollout restart` sets on the pod template.
pub(super) const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// A template's annotations.
pub(super) fn annotations(template: &Value) -> BTreeMap<String, String> {
    template_metadata(template).1
}

/// Container name → image, init containers included.
pub(super) fn images(template: &Value) -> BTreeMap<String, String> {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|list| template.pointer(&format!("/spec/{list}"))?.as_array())
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("name")?.as_str()?.to_string(),
                c.get("image")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// The same pod spec and annotations.
pub(super) fn same_template(served: &Value, applied: &Value) -> bool {
    served.get("spec") == applied.get("spec") && annotations(served) == annotations(applied)
}

/// The same images and annotations (a client may add defaults to what it read).
pub(super) fn same_images(served: &Value, applied: &Value) -> bool {
    images(served) == images(applied) && annotations(served) == annotations(applied)
}

/// Sets the containers' images by name.
pub(super) fn set_images(pod: &mut PodSpec, images: &BTreeMap<String, String>) {
    for container in pod
        .containers
        .iter_mut()
        .chain(pod.init_containers.iter_mut())
    {
        if let Some(image) = images.get(&container.name) {
            container.image = image.clone();
        }
    }
}

/// Whether the change restarts (a new `restartedAt`) or updates otherwise.
pub(super) fn restart_or_update(served: &Value, applied: &Value) -> Change {
    if annotations(served).get(RESTARTED_AT) != annotations(applied).get(RESTARTED_AT) {
        Change::Restart
    } else {
        Change::Update
    }
}
