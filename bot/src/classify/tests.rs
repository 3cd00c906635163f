use super::*;
use crate::message::Kind;
use serde_json::json;
use slack_morphism::prelude::SlackEventCallbackBody;

const BOT: &str = "U07F1RSTBOT";

fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/peer/slack/events")
}

fn rules() -> Vec<AlertRule> {
    vec![
        AlertRule {
            usernames: vec!["Alertmanager".into()],
            ..AlertRule::default()
        },
        AlertRule {
            channels: vec!["C07PAGES001".into()],
            bot_ids: vec!["B07PAGERDTY".into()],
            text_patterns: vec!["^\\[(FIRING|TRIGGERED)".into()],
            ..AlertRule::default()
        },
    ]
}

fn callback(event: serde_json::Value) -> serde_json::Value {
    json!({"type": "event_callback", "team_id": "T07F1RSTDEV", "event_id": "Ev0000000001", "event": event})
}

#[test]
fn every_fixture_parses_and_every_message_subtype_has_a_defined_kind() {
    let classifier = Classifier::new(BOT, &rules());
    let expected: &[(&str, Kind)] = &[
        ("AppMentionPayload.json", Kind::Mention),
        ("MessagePayload.json", Kind::Chatter),
        ("MessageBotPayload.json", Kind::BotEcho),
        ("MessageChangedPayload.json", Kind::Edit),
        ("MessageRepliedPayload.json", Kind::Edit),
        ("MessageDeletedPayload.json", Kind::Deletion),
        ("MessageThreadBroadcastPayload.json", Kind::Chatter),
        ("MessageFileSharePayload.json", Kind::Chatter),
        ("MessageMePayload.json", Kind::Chatter),
        ("MessageChannelJoinPayload.json", Kind::Chatter),
        ("MessageChannelLeavePayload.json", Kind::Chatter),
        ("MessageChannelTopicPayload.json", Kind::Chatter),
        ("MessageChannelPurposePayload.json", Kind::Chatter),
        ("MessageChannelNamePayload.json", Kind::Chatter),
        ("MessageChannelArchivePayload.json", Kind::Chatter),
        ("MessageChannelUnarchivePayload.json", Kind::Chatter),
        (
            "MessageChannelPostingPermissionsPayload.json",
            Kind::Chatter,
        ),
        ("MessageGroupTopicPayload.json", Kind::Chatter),
        ("MessageEkmAccessDeniedPayload.json", Kind::Chatter),
    ];
    let mut files: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("the Slack event fixtures in third_party/peer/slack/events")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 90,
        "expected Slack's ~96 fixtures, found {}",
        files.len()
    );
    let mut messages = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let payload: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let event = payload.get("event").unwrap_or(&payload);
        serde_json::from_value::<SlackEventCallbackBody>(event.clone())
            .unwrap_or_else(|e| panic!("{name} does not parse as a Slack event: {e}"));
        match classifier.kind_of(event) {
            Ok(kind) => {
                messages += 1;
                let want = expected
                    .iter()
                    .find(|(file, _)| *file == name)
                    .unwrap_or_else(|| panic!("{name} is a message event with no expected kind"));
                assert_eq!(kind, want.1, "{name}");
            }
            Err(event_type) => assert!(
                !name.starts_with("Message") && !name.starts_with("AppMention"),
                "{name} ({event_type}) should be a message"
            ),
        }
    }
    assert_eq!(
        messages,
        expected.len(),
        "every expected message fixture was seen"
    );
}

#[test]
fn alerts_come_from_rules_not_from_any_bot() {
    let c = Classifier::new(BOT, &rules());
    let am = callback(
        json!({"type": "message", "subtype": "bot_message", "channel": "C07INCIDENT",
        "ts": "1733140000.000100", "bot_id": "B07ALERTMGR", "username": "alertmanager", "text": "[FIRING:1] KubePodCrashLooping"}),
    );
    assert_eq!(c.classify(&am).unwrap().kind, Kind::Alert);
    let other_bot = callback(
        json!({"type": "message", "subtype": "bot_message", "channel": "C07INCIDENT",
        "ts": "1733140000.000200", "bot_id": "B07DEPLOYBT", "username": "deploybot", "text": "[FIRING:1] looks like an alert"}),
    );
    assert_eq!(c.classify(&other_bot).unwrap().kind, Kind::BotEcho);
    // The PagerDuty rule needs its channel, its bot and its pattern.
    let pd = |channel: &str, text: &str| {
        callback(
            json!({"type": "message", "channel": channel, "ts": "1733140000.000300",
            "bot_id": "B07PAGERDTY", "text": text}),
        )
    };
    assert_eq!(
        c.classify(&pd("C07PAGES001", "[TRIGGERED] db down"))
            .unwrap()
            .kind,
        Kind::Alert
    );
    assert_eq!(
        c.classify(&pd("C07OTHER001", "[TRIGGERED] db down"))
            .unwrap()
            .kind,
        Kind::BotEcho
    );
    assert_eq!(
        c.classify(&pd("C07PAGES001", "resolved: db up"))
            .unwrap()
            .kind,
        Kind::BotEcho
    );
}

#[test]
fn mentions_chatter_and_our_own_echo() {
    let c = Classifier::new(BOT, &rules());
    let say = |user: &str, text: &str, extra: serde_json::Value| {
        let mut e = json!({"type": "message", "channel": "C07INCIDENT", "ts": "1733140001.000100",
            "thread_ts": "1733140000.000100", "user": user, "text": text});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        callback(e)
    };
    let mention = c
        .classify(&say(
            "U07ONCALL01",
            "<@U07F1RSTBOT> what changed?",
            json!({}),
        ))
        .unwrap();
    assert_eq!(mention.kind, Kind::Mention);
    assert_eq!(
        mention.thread.thread_ts, "1733140000.000100",
        "replies key to thread_ts"
    );
    assert_eq!(
        mention.thread.workflow_id(),
        "incident-T07F1RSTDEV-C07INCIDENT-1733140000.000100"
    );
    assert_eq!(
        c.classify(&say("U07ONCALL01", "looking", json!({})))
            .unwrap()
            .kind,
        Kind::Chatter
    );
    // Our own post mentioning ourselves, and another bot mentioning us: never answered.
    let ours = say(
        BOT,
        "<@U07F1RSTBOT> summary",
        json!({"bot_id": "B07F1RSTBOT"}),
    );
    assert_eq!(c.classify(&ours).unwrap().kind, Kind::BotEcho);
    let other = say(
        "U07OTHERBOT",
        "<@U07F1RSTBOT> hi",
        json!({"bot_id": "B07OTHERBOT"}),
    );
    assert_eq!(c.classify(&other).unwrap().kind, Kind::BotEcho);
    // app_mention counts even without a configured bot user id.
    let blind = Classifier::new("", &[]);
    let app_mention = callback(json!({"type": "app_mention", "channel": "C07INCIDENT",
        "ts": "1733140002.000100", "user": "U07ONCALL01", "text": "<@U0SOMEBOT> hi"}));
    assert_eq!(blind.classify(&app_mention).unwrap().kind, Kind::Mention);
    // A top-level alert opens a thread keyed by its own ts.
    let top = callback(
        json!({"type": "message", "channel": "C07INCIDENT", "ts": "1733140003.000100",
        "username": "Alertmanager", "bot_id": "B07ALERTMGR", "text": "[FIRING:1] x"}),
    );
    assert_eq!(
        c.classify(&top).unwrap().thread.thread_ts,
        "1733140003.000100"
    );
}

#[test]
fn non_messages_are_skipped_with_a_reason() {
    let c = Classifier::new(BOT, &rules());
    assert_eq!(
        c.classify(&callback(json!({"type": "reaction_added", "user": "U1"}))),
        Err(Skip::NotAMessage("reaction_added".into()))
    );
    assert_eq!(
        c.classify(&json!({"type": "app_rate_limited"})),
        Err(Skip::NotACallback("app_rate_limited".into()))
    );
    assert_eq!(
        c.classify(&callback(json!({"type": "message", "ts": "1.2"}))),
        Err(Skip::Incomplete("event.channel"))
    );
}

#[test]
fn an_alert_posted_only_in_attachments_is_read_with_its_attachments() {
    let classifier = Classifier::new(BOT, &rules());
    // Alertmanager's legacy Slack receiver: empty text, the alert in an attachment.
    let payload = callback(json!({
        "type": "message", "subtype": "bot_message", "channel": "C07INCIDENT",
        "ts": "1733140000.000100", "bot_id": "B07ALERTMGR", "username": "Alertmanager",
        "text": "",
        "attachments": [{
            "fallback": "[FIRING:1] KubePodCrashLooping",
            "title": "[FIRING:1] KubePodCrashLooping (checkout shop)",
            "text": "*Alert:* Pod shop/checkout-7d9f8c6b5-x2k4q is crash looping",
            "fields": [{"title": "namespace", "value": "shop"}],
        }],
    }));
    let m = classifier.classify(&payload).expect("a message");
    assert_eq!(m.kind, Kind::Alert);
    assert_eq!(
        m.text,
        "[FIRING:1] KubePodCrashLooping (checkout shop)\n\
         *Alert:* Pod shop/checkout-7d9f8c6b5-x2k4q is crash looping\nnamespace: shop"
    );
    let target = firstline_alert::parse_alert(&m.text);
    assert_eq!(target.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(target.namespace.as_deref(), Some("shop"));

    // A person's message keeps its own text: a shared message's attachment is not theirs.
    let shared = callback(json!({
        "type": "message", "channel": "C07INCIDENT", "ts": "1733140001.000100",
        "user": "U07ONCALL01", "text": "see this",
        "attachments": [{"text": "<@U07F1RSTBOT> resolved"}],
    }));
    let m = classifier.classify(&shared).expect("a message");
    assert_eq!((m.kind, m.text.as_str()), (Kind::Chatter, "see this"));
}
