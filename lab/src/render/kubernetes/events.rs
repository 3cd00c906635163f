//! `events_list`: kubernetes-mcp-server's `# The following events (YAML format) were found:`
//! list of `{InvolvedObject, Message, Namespace, Reason, Timestamp, Type}`, oldest first. The
//! field selector applies to the Event objects the fake Kubernetes API serves, so both paths
//! select the same events (a Node's: in `default`, with no `involvedObject.namespace`).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::to_yaml;
use crate::render::Rendered;
use crate::render::args::str_arg;
use crate::render::objects::{api_version_of, event_object};
use crate::render::selector::{field_at, fields_match};
use crate::render::world::World;
use crate::scenario::Scenario;

/// Go's `time.Time.String()` for UTC, as kubernetes-mcp-server prints event timestamps.
fn go_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S +0000 UTC").to_string()
}

/// `events_list` {namespace, fieldSelector}: without a namespace, every namespace's; the field
/// selector any combination of the Event's fields (`involvedObject.name|kind|namespace|uid`,
/// `type`, `reason`, `source.component`).
pub fn events_list(scenario: &Scenario, args: &Map<String, Value>) -> Rendered {
    let namespace = str_arg(args, "namespace");
    let selector = str_arg(args, "fieldSelector");
    let world = World::new(scenario);
    let mut events: Vec<(DateTime<Utc>, Value)> = scenario
        .spec
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let ns = e.namespace();
            if namespace.is_some_and(|want| want != ns) {
                return None;
            }
            let object = event_object(&world, i, e);
            if !fields_match(selector, |path| field_at(&object, path)) {
                return None;
            }
            let at = scenario.time(e.at);
            Some((
                at,
                json!({
                    "InvolvedObject": {"Kind": e.involved_object.kind, "Name": e.involved_object.name, "apiVersion": api_version_of(&e.involved_object.kind)},
                    "Message": e.message.trim(),
                    "Namespace": ns,
                    "Reason": e.reason,
                    "Timestamp": go_time(at),
                    "Type": e.kind,
                }),
            ))
        })
        .collect();
    if events.is_empty() {
        return Ok("# No events found".into());
    }
    events.sort_by_key(|(at, _)| *at);
    let list = Value::Array(events.into_iter().map(|(_, v)| v).collect());
    Ok(format!(
        "# The following events (YAML format) were found:\n{}",
        to_yaml(&list)
    ))
}
