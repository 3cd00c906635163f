//! The Web API client ([`SlackApi`]) against the Slack stand-in on a real socket, no bot
//! involved: `auth.test`, posts and updates (Block Kit and message metadata included, cut to
//! Slack's limits), reactions added and removed idempotently, thread replies across cursor pages,
//! ephemeral messages shown to one person, user groups' members, Slack-shaped errors, 429 +
//! `Retry-After` honoured and posts paced per channel.

mod common;

use common::{request, standin};
use firstline_config::SecretString;
use firstline_slack::standin::StandIn;
use firstline_slack::standin::state::{BOT_USER_ID, Failure, INCIDENTS, ONCALL_USER};
use firstline_slack::{OutgoingMessage, SlackApi, SlackApiError, limits};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The HTTP statuses of the stand-in's answers to `method`, in order.
fn statuses(standin: &StandIn, method: &str) -> Vec<u16> {
    standin
        .calls()
        .iter()
        .filter(|c| c.method == method)
        .map(|c| c.status)
        .collect()
}

fn api(standin: &StandIn) -> SlackApi {
    SlackApi::new(
        &standin.api_url(),
        &SecretString::new("xoxb-standin-token"),
        Duration::from_secs(5),
    )
}

/// `text` as section blocks, split with Slack's limits the way Firstline lays out long text.
fn sections(text: &str) -> Value {
    limits::sections(text)
        .into_iter()
        .map(|chunk| json!({"type": "section", "text": {"type": "mrkdwn", "text": chunk}}))
        .collect()
}

/// A reply of `text` (as sections) in `thread_ts`'s thread of `channel`.
fn in_thread(channel: &str, thread_ts: &str, text: &str) -> OutgoingMessage {
    OutgoingMessage {
        channel: channel.into(),
        thread_ts: Some(thread_ts.into()),
        text: text.into(),
        blocks: Some(sections(text)),
        metadata: None,
    }
}

fn report_blocks() -> Value {
    json!([
        {"type": "header", "text": {"type": "plain_text", "text": "checkout is crash-looping"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Cause*: memory limit too low (E1)"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "round 1 · grounded"}]},
    ])
}

#[tokio::test]
async fn the_web_api_client_posts_updates_reacts_and_reads_threads() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let me = api.auth_test().await.unwrap();
    assert_eq!(me.user_id, "U07F1RSTBOT");
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "checkout is down", None);
    let reply = api
        .post_message(&in_thread(INCIDENTS, &parent, "looking into it"))
        .await
        .unwrap();
    api.update_message(
        INCIDENTS,
        &reply,
        "found it: OOMKilled",
        Some(sections("found it: OOMKilled")),
    )
    .await
    .unwrap();
    api.add_reaction(INCIDENTS, &parent, "eyes").await.unwrap();
    api.add_reaction(INCIDENTS, &parent, "eyes")
        .await
        .expect("already_reacted is success");
    let thread = api.thread_replies(INCIDENTS, &parent, 100).await.unwrap();
    assert_eq!(thread.len(), 2);
    assert_eq!(thread[1].text, "found it: OOMKilled");
    assert_eq!(thread[1].bot_id.as_deref(), Some("B07F1RSTBOT"));
    // Long text is split into ≤ 3,000-char sections, ≤ 50 blocks.
    let long = "line of evidence\n".repeat(1000);
    api.post_message(&in_thread(INCIDENTS, &parent, &long))
        .await
        .unwrap();
    let call = slack
        .calls()
        .into_iter()
        .rfind(|c| c.method == "chat.postMessage")
        .unwrap();
    let blocks = call.params["blocks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(blocks.len() > 1 && blocks.len() <= 50);
    assert!(
        blocks
            .iter()
            .all(|b| b["text"]["text"].as_str().unwrap().chars().count() <= 3000)
    );
    // Slack-shaped errors.
    let err = api
        .post_message(&in_thread("C07NOSUCHCH", &parent, "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, SlackApiError::Api { ref code, .. } if code == "channel_not_found"),
        "{err}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn rate_limits_are_honoured_and_posts_are_paced_per_channel() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    slack.fail_next(
        "chat.postMessage",
        Failure::RateLimited {
            retry_after_secs: 1,
        },
    );
    let started = Instant::now();
    api.post_message(&in_thread(INCIDENTS, &parent, "after a 429"))
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited Retry-After"
    );
    assert_eq!(statuses(&slack, "chat.postMessage"), [429, 200]);
    // Pacing: three posts to one channel take ≥ 2 s; the 429 pushed the channel back too.
    let started = Instant::now();
    for i in 0..3 {
        api.post_message(&in_thread(INCIDENTS, &parent, &format!("paced {i}")))
            .await
            .unwrap();
    }
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Rate limited beyond the retries: an error, not a hang.
    for _ in 0..4 {
        slack.fail_next(
            "reactions.add",
            Failure::RateLimited {
                retry_after_secs: 0,
            },
        );
    }
    let err = api
        .add_reaction(INCIDENTS, &parent, "eyes")
        .await
        .unwrap_err();
    assert!(matches!(err, SlackApiError::RateLimited { .. }), "{err}");
    cancel.cancel();
}

#[tokio::test]
async fn post_message_carries_blocks_and_metadata_to_replies_and_updates_replace_blocks() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "checkout is down", None);
    let ts = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            thread_ts: Some(parent.clone()),
            text: "checkout is crash-looping: memory limit too low".into(),
            blocks: Some(report_blocks()),
            metadata: Some(json!({"event_type": "firstline_round",
                "event_payload": {"round": 1, "grounded": true, "thread": "T/C/1"}})),
        })
        .await
        .unwrap();
    let thread = api.thread_replies(INCIDENTS, &parent, 100).await.unwrap();
    assert_eq!(thread.len(), 2);
    assert_eq!(thread[0].metadata, None);
    let reply = &thread[1];
    assert_eq!(reply.ts, ts);
    assert_eq!(reply.user.as_deref(), Some(BOT_USER_ID));
    assert_eq!(
        reply.text,
        "checkout is crash-looping: memory limit too low"
    );
    assert_eq!(
        reply.metadata,
        Some(json!({"event_type": "firstline_round",
            "event_payload": {"round": "1", "grounded": "true", "thread": "T/C/1"}}))
    );
    let replies_call = slack
        .calls()
        .into_iter()
        .rfind(|c| c.method == "conversations.replies")
        .unwrap();
    assert_eq!(replies_call.params["include_all_metadata"], "true");
    // Without include_all_metadata the stand-in, like Slack, leaves metadata out.
    let (_, plain) = request(
        hyper::Method::GET,
        &format!(
            "{}/conversations.replies?token=xoxb-t&channel={INCIDENTS}&ts={parent}",
            slack.api_url()
        ),
        &[],
        String::new(),
    )
    .await;
    assert!(
        plain.contains("\"blocks\"") && !plain.contains("firstline_round"),
        "{plain}"
    );
    let stored = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(stored[1].blocks, Some(report_blocks()));
    // The HTML view shows the blocks, not only the fallback.
    let (_, page) = request(hyper::Method::GET, &slack.url(), &[], String::new()).await;
    assert!(
        page.contains("checkout is crash-looping</div>"),
        "header shown"
    );
    assert!(page.contains("round 1 · grounded") && page.contains("[metadata: firstline_round]"));
    // Update: new blocks replace the old; no blocks keeps them.
    let updated =
        json!([{"type": "section", "text": {"type": "mrkdwn", "text": "resolved: rolled back"}}]);
    api.update_message(
        INCIDENTS,
        &ts,
        "resolved: rolled back",
        Some(updated.clone()),
    )
    .await
    .unwrap();
    let stored = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(stored[1].blocks, Some(updated.clone()));
    assert!(stored[1].edited);
    api.update_message(INCIDENTS, &ts, "text only", None)
        .await
        .unwrap();
    let stored = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(stored[1].text, "text only");
    assert_eq!(stored[1].blocks, Some(updated));
    // Caller blocks over Slack's limits are cut, not rejected.
    let many: Vec<_> = (0..80)
        .map(|i| json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("{i} {}", "x".repeat(4000))}}))
        .collect();
    api.post_message(&OutgoingMessage {
        channel: INCIDENTS.into(),
        thread_ts: Some(parent.clone()),
        text: "z".repeat(50_000),
        blocks: Some(json!(many)),
        metadata: None,
    })
    .await
    .unwrap();
    let call = slack
        .calls()
        .into_iter()
        .rfind(|c| c.method == "chat.postMessage")
        .unwrap();
    let blocks = call.params["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 50);
    assert!(
        blocks[..49]
            .iter()
            .all(|b| b["text"]["text"].as_str().unwrap().chars().count() <= 3000)
    );
    assert_eq!(
        call.params["text"].as_str().unwrap().chars().count(),
        40_000
    );
    // A malformed request is refused before it is sent.
    let err = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            text: "x".into(),
            blocks: Some(json!({"type": "section"})),
            ..OutgoingMessage::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, SlackApiError::Invalid { .. }), "{err}");
    cancel.cancel();
}

#[tokio::test]
async fn thread_replies_follow_the_cursor_within_the_limit() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "parent", None);
    for i in 0..450 {
        slack.user_says(INCIDENTS, ONCALL_USER, &format!("reply {i}"), Some(&parent));
    }
    let all = api.thread_replies(INCIDENTS, &parent, 1000).await.unwrap();
    assert_eq!(all.len(), 451);
    assert_eq!(all[450].text, "reply 449");
    let pages = statuses(&slack, "conversations.replies").len();
    assert_eq!(pages, 3, "pages of 200");
    let some = api.thread_replies(INCIDENTS, &parent, 250).await.unwrap();
    assert_eq!(some.len(), 250);
    cancel.cancel();
}

#[tokio::test]
async fn reactions_add_and_remove_are_idempotent() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    let reactions = |slack: &StandIn| {
        slack.workspace().thread(INCIDENTS, &parent).unwrap()[0]
            .reactions
            .iter()
            .map(|r| (r.name.clone(), r.user.clone()))
            .collect::<Vec<_>>()
    };
    api.add_reaction(INCIDENTS, &parent, "eyes").await.unwrap();
    api.add_reaction(INCIDENTS, &parent, "eyes")
        .await
        .expect("already_reacted is success");
    slack
        .user_reacts(INCIDENTS, ONCALL_USER, &parent, "eyes")
        .unwrap();
    assert_eq!(
        reactions(&slack),
        [
            ("eyes".to_string(), BOT_USER_ID.to_string()),
            ("eyes".to_string(), ONCALL_USER.to_string())
        ]
    );
    api.remove_reaction(INCIDENTS, &parent, "eyes")
        .await
        .unwrap();
    api.remove_reaction(INCIDENTS, &parent, "eyes")
        .await
        .expect("no_reaction is success");
    assert_eq!(
        reactions(&slack),
        [("eyes".to_string(), ONCALL_USER.to_string())],
        "only ours removed"
    );
    let statuses: Vec<String> = slack
        .calls()
        .iter()
        .filter(|c| c.method.starts_with("reactions."))
        .map(|c| c.method.clone())
        .collect();
    assert_eq!(
        statuses,
        [
            "reactions.add",
            "reactions.add",
            "reactions.remove",
            "reactions.remove"
        ]
    );
    // Other errors still are errors.
    let err = api
        .remove_reaction(INCIDENTS, "1.000000", "eyes")
        .await
        .unwrap_err();
    assert!(
        matches!(err, SlackApiError::Api { ref code, .. } if code == "message_not_found"),
        "{err}"
    );
    cancel.cancel();
}

#[tokio::test]
async fn post_message_waits_out_a_429() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    slack.fail_next(
        "chat.postMessage",
        Failure::RateLimited {
            retry_after_secs: 2,
        },
    );
    let started = Instant::now();
    let ts = api
        .post_message(&OutgoingMessage {
            channel: INCIDENTS.into(),
            thread_ts: Some(parent.clone()),
            text: "after a 429".into(),
            blocks: Some(report_blocks()),
            metadata: Some(
                json!({"event_type": "firstline_round", "event_payload": {"round": "1"}}),
            ),
        })
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(statuses(&slack, "chat.postMessage"), [429, 200]);
    let thread = slack.workspace().thread(INCIDENTS, &parent).unwrap();
    assert_eq!(thread.len(), 2, "posted once");
    assert_eq!(thread[1].ts, ts);
    cancel.cancel();
}

#[tokio::test]
async fn ephemerals_reach_one_person_and_user_groups_list_their_members() {
    let cancel = CancellationToken::new();
    let slack = standin(&cancel, None).await;
    let api = api(&slack);
    let parent = slack.user_says(INCIDENTS, ONCALL_USER, "alert", None);
    api.post_ephemeral(INCIDENTS, ONCALL_USER, Some(&parent), "only you see this")
        .await
        .expect("shown");
    let shown = slack.ephemerals_for(ONCALL_USER);
    assert_eq!(shown.len(), 1);
    assert_eq!(
        (shown[0].text.as_str(), shown[0].thread_ts.as_deref()),
        ("only you see this", Some(parent.as_str()))
    );
    assert!(slack.ephemerals_for("U07ONCALL02").is_empty());
    assert_eq!(
        slack.workspace().thread(INCIDENTS, &parent).unwrap().len(),
        1,
        "not a message of the thread"
    );
    let err = api
        .post_ephemeral("C0NOWHERE01", ONCALL_USER, None, "x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, SlackApiError::Api { ref code, .. } if code == "channel_not_found"),
        "{err}"
    );

    slack.define_user_group("S07ONCALL01", &[ONCALL_USER, "U07ONCALL02"]);
    assert_eq!(
        api.user_group_members("S07ONCALL01").await.unwrap(),
        [ONCALL_USER, "U07ONCALL02"]
    );
    let err = api.user_group_members("S07NOBODY01").await.unwrap_err();
    assert!(
        matches!(err, SlackApiError::Api { ref code, .. } if code == "no_such_subteam"),
        "{err}"
    );
    slack.fail_next(
        "usergroups.users.list",
        Failure::Error("missing_scope".into()),
    );
    assert!(api.user_group_members("S07ONCALL01").await.is_err());
    cancel.cancel();
}
