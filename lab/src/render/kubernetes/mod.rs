//! kubernetes-mcp-server's tools: their arguments, their error messages and their text, YAML
//! with sorted keys as the server marshals it with sigs.k8s.io/yaml. `pods` answers the pod
//! tools (get, lists, logs), `events` the event list, `resources` the generic object tools.

mod events;
mod pods;
mod resources;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

pub use events::events_list;
pub(crate) use pods::{initializing, log_container, log_text};
pub use pods::{pods_get, pods_list, pods_list_in_namespace, pods_log};
pub use resources::{namespaces_list, resources_get, resources_list};

/// YAML with keys sorted at every level, whatever serde_json's map order is.
pub fn to_yaml(value: &Value) -> String {
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Sorted<'a> {
        Map(BTreeMap<&'a str, Sorted<'a>>),
        List(Vec<Sorted<'a>>),
        Leaf(&'a Value),
    }
    fn sort(value: &Value) -> Sorted<'_> {
        match value {
            Value::Object(map) => {
                Sorted::Map(map.iter().map(|(k, v)| (k.as_str(), sort(v))).collect())
            }
            Value::Array(items) => Sorted::List(items.iter().map(sort).collect()),
            leaf => Sorted::Leaf(leaf),
        }
    }
    serde_norway::to_string(&sort(value)).unwrap_or_else(|e| format!("# unrenderable: {e}\n"))
}
