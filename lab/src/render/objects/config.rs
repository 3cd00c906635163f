//! Namespace policy and configuration: ResourceQuotas (`hard` and `used`) and ConfigMaps.
//! Secrets are never served.

use chrono::Duration;
use serde_json::{Value, json};

use super::{rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{ConfigMapSpec, ResourceQuotaSpec};

/// The ResourceQuota object.
pub(crate) fn quota_object(world: &World, quota: &ResourceQuotaSpec) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": quota.name,
            "namespace": quota.namespace,
            "uid": uid("ResourceQuota", &quota.namespace, &quota.name),
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "spec": {"hard": quota.hard},
        "status": {"hard": quota.hard, "used": quota.used},
    })
}

/// The ConfigMap object.
pub(crate) fn config_map_object(world: &World, map: &ConfigMapSpec) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": map.name,
            "namespace": map.namespace,
            "uid": uid("ConfigMap", &map.namespace, &map.name),
            "creationTimestamp": rfc3339(world.scenario.alert_at - Duration::days(30)),
        },
        "data": map.data,
    })
}
