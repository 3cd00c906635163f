//! Slack's size limits: ≤ 40,000 characters of message text, ≤ 3,000 per section block, ≤ 50
//! blocks (and, for Block Kit a caller builds: ≤ 150 per header, ≤ 10 section fields of ≤ 2,000,
//! ≤ 10 context elements). Long text is split into sections at line boundaries where possible,
//! and what does not fit is truncated with a marker, never rejected by Slack.

use serde_json::{Value, json};

/// Longest `text` Slack accepts.
pub const MAX_TEXT_CHARS: usize = 40_000;
/// Longest text of one section block.
pub const MAX_SECTION_CHARS: usize = 3_000;
/// Most blocks in one message.
pub const MAX_BLOCKS: usize = 50;

/// Longest text of one section field.
pub const MAX_FIELD_CHARS: usize = 2_000;
/// Most fields in one section block.
pub const MAX_FIELDS: usize = 10;
/// Longest text of a header block (plain text).
pub const MAX_HEADER_CHARS: usize = 150;
/// Most elements in one context block.
pub const MAX_CONTEXT_ELEMENTS: usize = 10;

const TRUNCATED: &str = "\n… (truncated)";

/// `text` cut to at most `max` characters (with a marker when cut).
pub fn truncate(text: &str, max: usize) -> String {
    firstline_model::text::clip(text, max, TRUNCATED)
}

/// `text` split into at most [`MAX_BLOCKS`] chunks of at most [`MAX_SECTION_CHARS`] characters,
/// breaking after a newline when one is near the end of a chunk.
pub fn sections(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        if chunks.len() == MAX_BLOCKS - 1 {
            let rest: String = chars[start..].iter().collect();
            chunks.push(truncate(&rest, MAX_SECTION_CHARS));
            break;
        }
        let mut end = (start + MAX_SECTION_CHARS).min(chars.len());
        if end < chars.len()
            && let Some(newline) = chars[start..end].iter().rposition(|c| *c == '\n')
            && newline > MAX_SECTION_CHARS / 2
        {
            end = start + newline + 1;
        }
        chunks.push(chars[start..end].iter().collect());
        start = end;
    }
    chunks
}

/// `blocks` (a caller's Block Kit) cut to Slack's limits: at most [`MAX_BLOCKS`] blocks (the last
/// one saying how many were left out), section texts ≤ [`MAX_SECTION_CHARS`], ≤ [`MAX_FIELDS`]
/// fields of ≤ [`MAX_FIELD_CHARS`], headers ≤ [`MAX_HEADER_CHARS`], ≤ [`MAX_CONTEXT_ELEMENTS`]
/// context elements. Blocks of other types pass unchanged.
pub fn fit_blocks(blocks: Vec<Value>) -> Vec<Value> {
    let total = blocks.len();
    if total <= MAX_BLOCKS {
        return blocks.into_iter().map(fit_block).collect();
    }
    let keep = MAX_BLOCKS - 1;
    let mut out: Vec<Value> = blocks.into_iter().take(keep).map(fit_block).collect();
    out.push(json!({
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": format!("… {} more blocks not shown", total - keep)}],
    }));
    out
}

fn fit_block(mut block: Value) -> Value {
    match block.get("type").and_then(Value::as_str) {
        Some("section") => {
            cut_text(block.get_mut("text"), MAX_SECTION_CHARS);
            if let Some(fields) = block.get_mut("fields").and_then(Value::as_array_mut) {
                fields.truncate(MAX_FIELDS);
                for field in fields.iter_mut() {
                    cut_text(Some(field), MAX_FIELD_CHARS);
                }
            }
        }
        Some("header") => cut_text(block.get_mut("text"), MAX_HEADER_CHARS),
        Some("context") => {
            if let Some(elements) = block.get_mut("elements").and_then(Value::as_array_mut) {
                elements.truncate(MAX_CONTEXT_ELEMENTS);
                for element in elements.iter_mut() {
                    cut_text(Some(element), MAX_SECTION_CHARS);
                }
            }
        }
        _ => {}
    }
    block
}

/// Cuts a text object's `text` (`{"type": "mrkdwn", "text": …}`) to `max` characters.
fn cut_text(object: Option<&mut Value>, max: usize) {
    if let Some(Value::String(text)) = object.and_then(|o| o.get_mut("text"))
        && text.chars().count() > max
    {
        *text = if max < 40 {
            // Short plain-text fields (headers): an ellipsis, no line break.
            firstline_model::text::clip(text, max, "…")
        } else {
            truncate(text, max)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_section_unchanged() {
        assert_eq!(sections("hello"), vec!["hello".to_string()]);
        assert_eq!(truncate("hello", 10), "hello");
    }

    #[test]
    fn long_text_splits_within_limits_and_keeps_everything_that_fits() {
        let line = "x".repeat(99) + "\n";
        let text = line.repeat(100); // 10,000 chars
        let parts = sections(&text);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_SECTION_CHARS));
        assert_eq!(parts.concat(), text);
        assert!(parts.len() >= 4);
    }

    #[test]
    fn huge_text_is_capped_at_fifty_blocks_and_marked() {
        let text = "y".repeat(MAX_SECTION_CHARS * 60);
        let parts = sections(&text);
        assert_eq!(parts.len(), MAX_BLOCKS);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_SECTION_CHARS));
        assert!(parts[MAX_BLOCKS - 1].ends_with("(truncated)"));
        let t = truncate(&"z".repeat(MAX_TEXT_CHARS + 5), MAX_TEXT_CHARS);
        assert_eq!(t.chars().count(), MAX_TEXT_CHARS);
    }

    #[test]
    fn caller_blocks_are_cut_to_slacks_limits() {
        let mut blocks = vec![
            json!({"type": "header", "text": {"type": "plain_text", "text": "h".repeat(400)}}),
            json!({"type": "section", "text": {"type": "mrkdwn", "text": "s".repeat(5000)},
                   "fields": (0..12).map(|_| json!({"type": "mrkdwn", "text": "f".repeat(2500)})).collect::<Vec<_>>()}),
            json!({"type": "context", "elements": (0..12).map(|i| json!({"type": "mrkdwn", "text": format!("c{i}")})).collect::<Vec<_>>()}),
            json!({"type": "divider"}),
        ];
        let fitted = fit_blocks(blocks.clone());
        assert_eq!(fitted.len(), 4);
        assert_eq!(
            fitted[0]["text"]["text"].as_str().unwrap().chars().count(),
            MAX_HEADER_CHARS
        );
        assert_eq!(
            fitted[1]["text"]["text"].as_str().unwrap().chars().count(),
            MAX_SECTION_CHARS
        );
        let fields = fitted[1]["fields"].as_array().unwrap();
        assert_eq!(fields.len(), MAX_FIELDS);
        assert!(
            fields
                .iter()
                .all(|f| f["text"].as_str().unwrap().chars().count() == MAX_FIELD_CHARS)
        );
        assert_eq!(
            fitted[2]["elements"].as_array().unwrap().len(),
            MAX_CONTEXT_ELEMENTS
        );
        assert_eq!(fitted[3], json!({"type": "divider"}));
        // Too many blocks: 49 kept, the 50th says how many were dropped.
        blocks.extend((0..60).map(
            |i| json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("b{i}")}}),
        ));
        let fitted = fit_blocks(blocks);
        assert_eq!(fitted.len(), MAX_BLOCKS);
        assert_eq!(
            fitted[MAX_BLOCKS - 1]["elements"][0]["text"],
            "… 15 more blocks not shown"
        );
    }
}
