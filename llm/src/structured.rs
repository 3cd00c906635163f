//! Decoding a structured (JSON-schema) answer into a Rust type, with the failure named.

use crate::{ChatAnswer, FinishReason, LlmError};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Characters of the model's content quoted in an error.
const QUOTE_CHARS: usize = 120;

/// Decodes `answer`'s content as JSON into `T`.
///
/// In order: a refusal (or content filter) is [`LlmError::Refusal`]; `finish_reason = length` is
/// [`LlmError::Length`] (the JSON is cut off); content that is missing or not JSON is
/// [`LlmError::Unparsable`]; JSON that does not fit `T` is [`LlmError::SchemaInvalid`].
///
/// Object members whose value is `null` are dropped before decoding: strict mode makes optional
/// fields "required but nullable", and dropping the `null` lets serde apply the field's default
/// (`None` for an `Option`, `#[serde(default)]` otherwise). A code fence around the JSON
/// (```` ```json … ``` ````), which small models add, is ignored.
pub fn parse_structured<T: DeserializeOwned>(answer: &ChatAnswer) -> Result<T, LlmError> {
    if let Some(refusal) = &answer.refusal {
        return Err(LlmError::Refusal(crate::transport::shorten(
            refusal,
            QUOTE_CHARS,
        )));
    }
    match answer.finish_reason {
        FinishReason::ContentFilter => {
            return Err(LlmError::Refusal("stopped by the content filter".into()));
        }
        FinishReason::Length => return Err(LlmError::Length),
        _ => {}
    }
    let content = answer.content.as_deref().map(str::trim).unwrap_or_default();
    if content.is_empty() {
        return Err(LlmError::Unparsable(if answer.tool_calls.is_empty() {
            "the answer has no content".into()
        } else {
            "the model called tools instead of answering".into()
        }));
    }
    let json = strip_fence(content);
    let mut value: Value = serde_json::from_str(json).map_err(|error| {
        LlmError::Unparsable(format!(
            "not JSON ({error}): {}",
            crate::transport::shorten(json, QUOTE_CHARS)
        ))
    })?;
    drop_nulls(&mut value, 0);
    serde_json::from_value(value).map_err(|error| LlmError::SchemaInvalid(error.to_string()))
}

/// The JSON inside a Markdown code fence, or `text` unchanged.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// Deepest nesting [`drop_nulls`] walks (serde_json's own parser stops at 128).
const MAX_DEPTH: usize = 128;

fn drop_nulls(value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            map.retain(|_, member| !member.is_null());
            for member in map.values_mut() {
                drop_nulls(member, depth + 1);
            }
        }
        Value::Array(items) => {
            for item in items {
                drop_nulls(item, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{drop_nulls, strip_fence};
    use serde_json::json;

    #[test]
    fn fences_are_stripped() {
        assert_eq!(strip_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_fence("```\n[1]\n```"), "[1]");
        assert_eq!(strip_fence("{\"a\":1}"), "{\"a\":1}");
    }

    #[test]
    fn nulls_in_objects_are_dropped_at_every_depth() {
        let mut value = json!({"a": null, "b": [{"c": null, "d": 1}], "e": {"f": null}});
        drop_nulls(&mut value, 0);
        assert_eq!(value, json!({"b": [{"d": 1}], "e": {}}));
    }
}
