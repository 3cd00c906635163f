//! Cutting text to a character budget: the one helper every crate bounds strings with (Slack's
//! limits, excerpts, reasons, stored titles).
//!
//! Budgets are in characters (`char`s), never bytes, so a cut never splits a UTF-8 sequence.

/// The longest prefix of `text` with at most `max` characters.
pub fn prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((byte_index, _)) => &text[..byte_index],
        None => text,
    }
}

/// `text` unchanged when it has at most `max` characters; otherwise cut so that the result,
/// `marker` included, has exactly `max` characters. A marker longer than `max` is itself cut.
pub fn clip(text: &str, max: usize, marker: &str) -> String {
    if text.chars().nth(max).is_none() {
        return text.to_string();
    }
    let marker_len = marker.chars().count();
    if marker_len >= max {
        return prefix(marker, max).to_string();
    }
    let mut out = prefix(text, max - marker_len).to_string();
    out.push_str(marker);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_counts_characters_not_bytes() {
        assert_eq!(prefix("héllo", 2), "hé");
        assert_eq!(prefix("hé", 5), "hé");
        assert_eq!(prefix("", 3), "");
        assert_eq!(prefix("abc", 0), "");
    }

    #[test]
    fn clip_keeps_text_within_budget_marker_included() {
        assert_eq!(clip("short", 5, "…"), "short");
        assert_eq!(clip("longer text", 5, "…"), "long…");
        assert_eq!(clip("longer text", 5, "…").chars().count(), 5);
        assert_eq!(clip("ééééééé", 4, "…"), "ééé…");
        assert_eq!(clip("longer text", 2, " [cut]"), " [");
        assert_eq!(clip("abc", 0, "…"), "");
    }
}
