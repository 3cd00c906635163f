//! Slack's size limits: ≤ 40,000 characters of message text, ≤ 3,000 per section block, ≤ 50
//! blocks. Long text is split into sections at line boundaries where possible, and what does not
//! fit is truncated with a marker, never rejected by Slack.

/// Longest `text` Slack accepts.
pub const MAX_TEXT_CHARS: usize = 40_000;
/// Longest text of one section block.
pub const MAX_SECTION_CHARS: usize = 3_000;
/// Most blocks in one message.
pub const MAX_BLOCKS: usize = 50;

const TRUNCATED: &str = "\n… (truncated)";

/// `text` cut to at most `max` characters (with a marker when cut).
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(TRUNCATED.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(TRUNCATED);
    out
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
}
