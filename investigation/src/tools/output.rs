//! Turning a raw MCP tool result into text that may be stored and shown: flatten the content
//! blocks, redact secrets (before any cut, so a cut can never expose half a secret), and cap the
//! size, marking what was dropped.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use firstline_redact::redact;

/// A result ready to be stored: redacted and within the size cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CleanText {
    pub text: String,
    /// Size in bytes before the cap.
    pub original_bytes: usize,
    pub truncated: bool,
    pub redactions: usize,
}

/// The text of a tool result: text blocks joined by newlines; structured content as JSON when
/// there is no text; other blocks as a short note.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Resource(_) | ContentBlock::ResourceLink(_) => {
                parts.push("[resource omitted]".into())
            }
            _ => parts.push("[binary content omitted]".into()),
        }
    }
    if parts.iter().all(|p| p.ends_with("omitted]"))
        && let Some(structured) = &result.structured_content
    {
        return structured.to_string();
    }
    parts.join("\n")
}

/// The marker appended to a truncated result.
pub(crate) fn truncation_marker(original_bytes: usize, cap: usize) -> String {
    format!(
        "\n… [truncated: the result was {original_bytes} bytes; the first {cap} bytes are kept (mcp.max_result_bytes)]"
    )
}

/// Redacts, then caps `text` to `max_bytes` bytes including the marker, on a char boundary.
pub(crate) fn clean(text: &str, max_bytes: usize) -> CleanText {
    let redacted = redact(text);
    let original_bytes = redacted.text.len();
    if original_bytes <= max_bytes {
        return CleanText {
            text: redacted.text,
            original_bytes,
            truncated: false,
            redactions: redacted.redactions,
        };
    }
    let marker = truncation_marker(original_bytes, max_bytes);
    let mut keep = max_bytes.saturating_sub(marker.len());
    while keep > 0 && !redacted.text.is_char_boundary(keep) {
        keep -= 1;
    }
    let mut out = redacted.text[..keep].to_string();
    out.push_str(&marker);
    CleanText {
        text: out,
        original_bytes,
        truncated: true,
        redactions: redacted.redactions,
    }
}

/// Arguments with every string value redacted (for the audit trail, the cache and evidence).
pub(crate) fn redact_args(args: &Value) -> Value {
    match args {
        Value::String(s) => Value::String(redact(s).text),
        Value::Array(items) => Value::Array(items.iter().map(redact_args).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_args(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_text_passes_through_redacted() {
        let out = clean("ok password=hunter2", 1024);
        assert_eq!(out.text, "ok password=[REDACTED]");
        assert!(!out.truncated);
        assert_eq!(out.redactions, 1);
    }

    #[test]
    fn large_text_is_cut_to_the_cap_on_a_char_boundary_and_marked() {
        let text = "é".repeat(5_000);
        let out = clean(&text, 1_000);
        assert!(out.truncated);
        assert!(out.text.len() <= 1_000, "{}", out.text.len());
        assert!(out.text.contains("[truncated: the result was 10000 bytes"));
        assert_eq!(out.original_bytes, 10_000);
    }

    #[test]
    fn a_secret_across_the_cut_is_redacted_not_halved() {
        let text = format!(
            "{}token=4f9a8b7c6d5e4f3a2b1c{}",
            "a ".repeat(200),
            " b".repeat(400)
        );
        let out = clean(&text, 600);
        assert!(!out.text.contains("4f9a8b7c"), "{}", out.text);
    }

    #[test]
    fn args_are_redacted_recursively() {
        let args =
            json!({"url": "postgres://u:pw@h/db", "n": 3, "list": ["Bearer abcdefghijklmnop"]});
        assert_eq!(
            redact_args(&args),
            json!({"url": "postgres://u:[REDACTED]@h/db", "n": 3, "list": ["Bearer [REDACTED]"]})
        );
    }
}
