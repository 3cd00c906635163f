//! What a storm's replies say: a linked thread's one line, and the primary reply's list of the
//! alerts linked to it (count, newest first, bounded).

use firstline_investigation::render::escape;
use firstline_model::text::clip;
use firstline_slack::limits;
use firstline_store::groups::{Listed, Membership, Reason};
use serde_json::{Value, json};

/// `metadata.event_type` of a linked thread's one line; a retry finds its own line by it.
pub const LINK_EVENT_TYPE: &str = "firstline_group_link";
/// `block_id` of the primary reply's list of linked alerts.
pub const LINKED_BLOCK_ID: &str = "firstline.group.linked";
/// Linked alerts the primary's reply names; the rest are counted.
pub const MAX_LISTED: u32 = 10;

/// The link reply's metadata: the thread and group it belongs to.
pub fn link_metadata(thread_id: i64, group_id: i64) -> Value {
    json!({"event_type": LINK_EVENT_TYPE,
           "event_payload": {"thread_id": thread_id, "group_id": group_id}})
}

/// Whether `metadata` marks thread `thread_id`'s one line.
pub fn is_link_reply(metadata: Option<&Value>, thread_id: i64) -> bool {
    metadata.is_some_and(|m| {
        m["event_type"] == LINK_EVENT_TYPE
            && (m["event_payload"]["thread_id"] == thread_id
                || m["event_payload"]["thread_id"].as_str() == Some(&thread_id.to_string()))
    })
}

/// `text` as a Slack link to `url`, or as it is without one.
fn linked(text: &str, url: Option<&str>) -> String {
    let text = escape(text);
    match url {
        Some(url) => format!("<{url}|{text}>"),
        None => text,
    }
}

/// A linked thread's one line: what links it, and where the analysis is.
pub fn link_text(member: &Membership) -> String {
    let there = linked("this thread", member.primary_permalink.as_deref());
    match member.reason {
        Reason::SameRoot => {
            let root = member.root_title.as_deref().unwrap_or("the same root");
            let evidence = member.evidence.as_deref().unwrap_or_default();
            format!(
                ":link: Same cause as {there}: {}. Evidence here: {}. It is answered in that \
                 thread; mention me to investigate this alert on its own.",
                escape(root),
                escape(evidence),
            )
        }
        _ if member.repeats_primary() => format!(
            ":link: Same alert as {there}, still firing; it is answered in that thread. Mention \
             me to investigate this one on its own."
        ),
        _ => format!(
            ":link: This alert fired again; it is part of the incident answered in {there}. \
             Mention me to investigate this one on its own."
        ),
    }
}

/// The primary reply's list: `count` linked alerts, the newest of them in `newest`.
pub fn linked_block(count: i64, newest: &[Listed]) -> Option<Value> {
    if count <= 0 {
        return None;
    }
    let mut text = format!(
        ":link: *{count} more alert{} linked to this analysis* (newest first):",
        if count == 1 { "" } else { "s" }
    );
    for alert in newest {
        let why = match alert.reason.as_str() {
            "same_root" => "same cause",
            _ => "same alert",
        };
        text.push_str(&format!(
            "\n• {} ({why})",
            linked(&clip(&alert.title, 120, "…"), alert.permalink.as_deref())
        ));
    }
    let more = count - i64::try_from(newest.len()).unwrap_or(0);
    if more > 0 {
        text.push_str(&format!("\n…and {more} more"));
    }
    Some(json!({"type": "section", "block_id": LINKED_BLOCK_ID,
                "text": {"type": "mrkdwn", "text": limits::truncate(&text, 2900)}}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use firstline_model::ThreadKey;

    fn listed(title: &str, reason: &str) -> Listed {
        Listed {
            channel_id: "C1".into(),
            thread_ts: "1.1".into(),
            title: title.into(),
            permalink: Some("https://x.slack.com/archives/C1/p11".into()),
            reason: reason.into(),
            linked_at: Utc::now(),
        }
    }

    #[test]
    fn the_list_counts_every_alert_and_names_the_newest() {
        assert_eq!(linked_block(0, &[]), None);
        let block = linked_block(
            12,
            &[
                listed("KubePodNotReady a", "same_root"),
                listed("<b>", "same_alert"),
            ],
        )
        .expect("a block");
        let text = block["text"]["text"].as_str().expect("text");
        assert!(text.contains("12 more alerts linked"), "{text}");
        assert!(text.contains("KubePodNotReady a> (same cause)"), "{text}");
        assert!(text.contains("&lt;b&gt;"), "{text}");
        assert!(text.contains("…and 10 more"), "{text}");
    }

    #[test]
    fn a_line_says_why_it_is_linked_and_where_to() {
        let mut member = Membership {
            group_id: 1,
            reason: Reason::SameAlert,
            primary: ThreadKey {
                team_id: "T".into(),
                channel_id: "C".into(),
                thread_ts: "1.0".into(),
            },
            primary_thread_id: 1,
            evidence: None,
            root_title: None,
            link_ts: None,
            permalink: None,
            primary_permalink: Some("https://x/p10".into()),
            fingerprint: Some("f".into()),
            primary_fingerprint: Some("f".into()),
            link_attempted: false,
            resolved: false,
        };
        assert!(link_text(&member).starts_with(":link: Same alert as <https://x/p10|this thread>"));
        member.reason = Reason::SameRoot;
        member.root_title = Some("Node n1 is not ready".into());
        member.evidence = Some("\u{201c}Ready Unknown\u{201d}".into());
        let line = link_text(&member);
        assert!(
            line.contains("Same cause as") && line.contains("Node n1 is not ready"),
            "{line}"
        );
        assert!(
            line.contains("Evidence here: \u{201c}Ready Unknown"),
            "{line}"
        );
        // A repeat of an alert that joined by its root is no repeat of the primary's alert.
        member.reason = Reason::SameAlert;
        member.fingerprint = Some("g".into());
        assert!(link_text(&member).contains("part of the incident answered in"));
        assert!(is_link_reply(Some(&link_metadata(7, 1)), 7));
        assert!(!is_link_reply(Some(&link_metadata(7, 1)), 8));
    }
}
