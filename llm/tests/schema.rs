//! Strict schemas from schemars output.

use firstline_llm::{SchemaError, bounded, strict, strict_schema};
use schemars::JsonSchema;
use serde_json::{Value, json};

/// A cause the model proposes.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct Summary {
    /// The likely cause, first line of the post.
    headline: String,
    confidence: Confidence,
    causes: Vec<Cause>,
    note: Option<String>,
    lead: Option<Cause>,
    count: u32,
    action: Action,
}

/// An internally tagged enum with data: schemars writes `oneOf`.
#[derive(JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Action {
    Post,
    Ask { questions: Vec<String> },
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Cause {
    title: String,
    claims: Vec<Claim>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Claim {
    evidence_id: String,
    quote: String,
    at: Option<u64>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Confidence {
    Low,
    Medium,
    High,
}

/// Every object node, wherever it is.
fn objects<'a>(value: &'a Value, found: &mut Vec<&'a serde_json::Map<String, Value>>) {
    match value {
        Value::Object(map) => {
            if map.get("type").is_some_and(|kind| kind == "object") {
                found.push(map);
            }
            for member in map.values() {
                objects(member, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| objects(item, found)),
        _ => {}
    }
}

/// Every schema keyword, wherever it is (property names are not keywords).
fn keys(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                found.push(key.clone());
                if key == "properties"
                    && let Value::Object(properties) = member
                {
                    properties
                        .values()
                        .for_each(|property| keys(property, found));
                } else {
                    keys(member, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| keys(item, found)),
        _ => {}
    }
}

#[test]
fn a_schemars_struct_becomes_strict() {
    let schema = strict_schema::<Summary>().expect("strict");

    let mut all_keys = Vec::new();
    keys(&schema, &mut all_keys);
    for banned in [
        "$ref",
        "$defs",
        "definitions",
        "$schema",
        "format",
        "title",
        "oneOf",
    ] {
        assert!(
            !all_keys.iter().any(|key| key == banned),
            "{banned} left in {schema:#}"
        );
    }

    let mut found = Vec::new();
    objects(&schema, &mut found);
    assert!(
        found.len() >= 4,
        "root, cause, claim, inlined twice: {schema:#}"
    );
    for object in found {
        assert_eq!(object["additionalProperties"], false, "{object:?}");
        let properties: Vec<&String> = object["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .collect();
        let required: Vec<&str> = object["required"]
            .as_array()
            .expect("required")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            properties.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
            required,
            "every property required, in key order"
        );
    }

    let properties = &schema["properties"];
    assert_eq!(properties["note"]["type"], json!(["string", "null"]));
    assert_eq!(properties["headline"]["type"], "string");
    assert_eq!(
        properties["headline"]["description"],
        "The likely cause, first line of the post."
    );
    assert_eq!(
        properties["confidence"]["enum"],
        json!(["low", "medium", "high"])
    );
    assert_eq!(properties["causes"]["type"], "array");
    // A property may be called like a keyword; only keywords are dropped.
    assert_eq!(
        properties["causes"]["items"]["properties"]["title"]["type"],
        "string"
    );
    assert_eq!(
        properties["causes"]["items"]["properties"]["claims"]["items"]["properties"]["quote"]["type"],
        "string"
    );
    // An optional struct: its object or null.
    let lead = properties["lead"]["anyOf"].as_array().expect("anyOf");
    assert!(lead.iter().any(|branch| branch["type"] == "null"));
    assert!(lead.iter().any(|branch| branch["type"] == "object"));
    // A tagged enum: each variant a closed object, offered through `anyOf`.
    let variants = properties["action"]["anyOf"].as_array().expect("anyOf");
    assert_eq!(variants.len(), 2);
    assert!(
        variants
            .iter()
            .all(|variant| variant["additionalProperties"] == false)
    );
    assert_eq!(
        variants[1]["required"],
        json!(["kind", "questions"]),
        "{variants:?}"
    );
    // A u32 keeps its minimum but loses `format: uint32`.
    assert_eq!(properties["count"]["type"], "integer");
    assert_eq!(properties["count"]["minimum"], 0);

    // Same type, same schema (stable key order).
    assert_eq!(
        serde_json::to_string(&schema).expect("json"),
        serde_json::to_string(&strict_schema::<Summary>().expect("strict")).expect("json")
    );
}

#[test]
fn optional_properties_of_a_hand_written_schema_become_nullable() {
    let schema = strict(json!({
        "type": "object",
        "properties": {
            "pod": {"type": "string"},
            "lines": {"type": "integer", "format": "uint32"},
            "level": {"enum": ["info", "error"], "type": "string"},
        },
        "required": ["pod"],
    }))
    .expect("strict");
    assert_eq!(schema["required"], json!(["level", "lines", "pod"]));
    assert_eq!(schema["properties"]["pod"]["type"], "string");
    assert_eq!(
        schema["properties"]["lines"]["type"],
        json!(["integer", "null"])
    );
    assert!(schema["properties"]["lines"].get("format").is_none());
    assert_eq!(
        schema["properties"]["level"]["enum"],
        json!(["info", "error", null])
    );
}

#[test]
fn what_strict_mode_cannot_express_is_refused() {
    assert_eq!(
        strict(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        Err(SchemaError::Unsupported("a map (an object with free keys)"))
    );
    assert_eq!(
        strict(json!({"type": "string"})),
        Err(SchemaError::RootNotObject)
    );
    assert!(matches!(
        strict(json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Nope"}}})),
        Err(SchemaError::UnknownRef(_))
    ));
    // A recursive type cannot be inlined.
    let recursive = json!({
        "type": "object",
        "properties": {"child": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
    });
    assert_eq!(strict(recursive), Err(SchemaError::TooDeep));
}

#[test]
fn bounded_adds_lengths_and_item_caps_where_missing() {
    let schema = bounded(strict_schema::<Summary>().expect("strict"), 200, 5);
    let properties = &schema["properties"];
    assert_eq!(properties["headline"]["maxLength"], 200);
    assert_eq!(properties["note"]["maxLength"], 200);
    assert_eq!(properties["causes"]["maxItems"], 5);
    assert_eq!(
        properties["causes"]["items"]["properties"]["claims"]["maxItems"],
        5
    );
    assert!(
        properties["confidence"].get("maxLength").is_none(),
        "an enum is bounded already"
    );
    let kept = bounded(json!({"type": "string", "maxLength": 10}), 200, 5);
    assert_eq!(kept["maxLength"], 10);
}
