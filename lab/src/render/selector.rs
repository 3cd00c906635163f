//! Kubernetes field and label selectors (`a=b,c!=d`), for the tools that filter lists.

use serde_json::Value;

/// Field selectors as Kubernetes accepts them: `a=b,c!=d`.
pub(super) fn field_selector_matches(
    selector: Option<&str>,
    field: impl Fn(&str) -> Option<String>,
) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (key, value, negate) = if let Some((k, v)) = term.split_once("!=") {
            (k, v, true)
        } else if let Some((k, v)) = term.split_once("==") {
            (k, v, false)
        } else if let Some((k, v)) = term.split_once('=') {
            (k, v, false)
        } else {
            return false;
        };
        let actual = field(key.trim()).unwrap_or_default();
        (actual == value.trim()) != negate
    })
}

pub(super) fn label_selector_matches(selector: Option<&str>, labels: &Value) -> bool {
    field_selector_matches(selector, |key| {
        labels.get(key).and_then(Value::as_str).map(String::from)
    })
}
