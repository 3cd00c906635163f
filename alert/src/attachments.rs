//! Alerts that live in Slack attachments. Alertmanager's and Grafana's legacy Slack formats post
//! a message whose `text` is empty (or a one-line summary) and put the alert in `attachments`:
//! `pretext`, `title`, `text` and `fields` (`{title, value}`). The bot stores the flattened text,
//! so everything downstream (classification rules, resolution, the round) reads the alert.

use serde_json::Value;

/// `text`, then each attachment's pretext, title, text and fields (`title: value`), one per line
/// — parts already in the text are not repeated; an attachment with none of them gives its
/// `fallback`. `message` is the Slack message object (an event, or an edit's `message`).
pub fn message_text(text: &str, message: &Value) -> String {
    let mut out = text.to_string();
    let mut push = |part: &str| {
        if !part.trim().is_empty() && !out.contains(part) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(part);
        }
    };
    let attachments = message.get("attachments").and_then(Value::as_array);
    for attachment in attachments.into_iter().flatten() {
        let field = |key: &str| attachment.get(key).and_then(Value::as_str).unwrap_or("");
        for key in ["pretext", "title", "text"] {
            push(field(key));
        }
        let fields = attachment.get("fields").and_then(Value::as_array);
        for f in fields.into_iter().flatten() {
            let title = f.get("title").and_then(Value::as_str).unwrap_or("");
            let value = f.get("value").and_then(Value::as_str).unwrap_or("");
            if !value.is_empty() {
                push(&format!("{title}: {value}"));
            }
        }
        if ["pretext", "title", "text"]
            .iter()
            .all(|k| field(k).is_empty())
        {
            push(field("fallback"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attachments_are_read_like_text() {
        let message = json!({"text": "", "attachments": [{
            "fallback": "[FIRING:1] X", "title": "[FIRING:1] KubePodCrashLooping checkout",
            "text": "namespace: shop", "fields": [{"title": "service", "value": "checkout"}]}]});
        assert_eq!(
            message_text("", &message),
            "[FIRING:1] KubePodCrashLooping checkout\nnamespace: shop\nservice: checkout"
        );
    }

    #[test]
    fn text_comes_first_and_is_not_repeated() {
        let message = json!({"attachments": [{"title": "disk full", "text": "on db-1"}]});
        assert_eq!(message_text("disk full", &message), "disk full\non db-1");
        assert_eq!(message_text("plain", &json!({})), "plain");
        let only_fallback = json!({"attachments": [{"fallback": "[OK] High CPU"}]});
        assert_eq!(message_text("", &only_fallback), "[OK] High CPU");
    }
}
