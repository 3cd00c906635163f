use super::*;

const BOT: &str = "U07F1RSTBOT";

#[test]
fn resolved_mentions_give_the_rest_as_the_cause() {
    let cases = [
        (
            "<@U07F1RSTBOT> resolved bad ConfigMap rollout, rolled back",
            Some("bad ConfigMap rollout, rolled back"),
        ),
        (
            "<@U07F1RSTBOT> Resolved: OOM after the 2.3 deploy",
            Some("OOM after the 2.3 deploy"),
        ),
        (
            "<@U07F1RSTBOT|firstline> RESOLVED — disk full",
            Some("disk full"),
        ),
        ("<@U07F1RSTBOT>   resolved", Some("")),
        ("resolved <@U07F1RSTBOT> node drained", Some("node drained")),
        ("<@U07F1RSTBOT> resolvedness is a word?", None),
        ("<@U07F1RSTBOT> is this resolved?", None),
        ("<@U07F1RSTBOT> what happened?", None),
        ("<@U07OTHERUSR> resolved it", None),
        ("", None),
    ];
    for (text, expected) in cases {
        assert_eq!(
            parse_resolved_mention(text, BOT).as_deref(),
            expected,
            "{text}"
        );
    }
    // Without a known bot user id, a leading mention token is removed.
    assert_eq!(
        parse_resolved_mention("<@U07F1RSTBOT> resolved x", "").as_deref(),
        Some("x")
    );
    // Multibyte text right after the token does not panic.
    assert_eq!(parse_resolved_mention("<@U07F1RSTBOT> ✅✅✅", BOT), None);
}

#[test]
fn recovery_alerts_are_recognised_through_the_alert_parser() {
    let message = |text: &str| Incoming {
        event_id: None,
        thread: firstline_model::ThreadKey {
            team_id: "T1".into(),
            channel_id: "C1".into(),
            thread_ts: "1.0".into(),
        },
        ts: "1.0".into(),
        thread_ts: None,
        kind: Kind::Alert,
        user_id: None,
        bot_id: Some("B1".into()),
        app_id: None,
        username: None,
        text: text.into(),
        raw: serde_json::Value::Null,
        traceparent: None,
    };
    assert!(is_recovery_alert(&message(
        "[RESOLVED] KubePodCrashLooping checkout"
    )));
    assert!(is_recovery_alert(&message(
        "Recovered: [P1] High CPU on web-1"
    )));
    assert!(!is_recovery_alert(&message(
        "[FIRING:1] KubePodCrashLooping checkout"
    )));
    let mut chatter = message("[RESOLVED] KubePodCrashLooping checkout");
    chatter.kind = Kind::Chatter;
    assert!(!is_recovery_alert(&chatter), "only alerts are recoveries");
}

#[test]
fn check_marks_are_picked_out_of_reaction_events() {
    let payload = |reaction: &str, kind: &str| {
        serde_json::json!({"type": "event_callback", "team_id": "T07F1RSTDEV", "event_id": "Ev1",
            "event": {"type": kind, "user": "U07ONCALL01", "reaction": reaction,
                      "item": {"type": "message", "channel": "C07INCIDENT", "ts": "1733140000.000100"},
                      "event_ts": "1733140100.000100"}})
    };
    assert_eq!(
        check_mark_of(&payload("white_check_mark", "reaction_added")),
        Some(CheckMark {
            event_id: Some("Ev1".into()),
            team_id: "T07F1RSTDEV".into(),
            channel: "C07INCIDENT".into(),
            ts: "1733140000.000100".into(),
            user: "U07ONCALL01".into(),
        })
    );
    assert_eq!(check_mark_of(&payload("eyes", "reaction_added")), None);
    assert_eq!(
        check_mark_of(&payload("white_check_mark", "reaction_removed")),
        None
    );
    let mut file = payload("white_check_mark", "reaction_added");
    file["event"]["item"] = serde_json::json!({"type": "file", "file": "F1"});
    assert_eq!(check_mark_of(&file), None);
}

#[test]
fn incidents_prefer_the_humans_cause_then_the_grounded_round() {
    let alert = "[FIRING:1] KubePodCrashLooping checkout\nnamespace: shop";
    let round = RoundOutline {
        headline: "checkout is crash-looping".into(),
        cause: Some("memory limit too low".into()),
        text: "checkout restarts: OOMKilled (E1)".into(),
        grounded: true,
        marked_wrong: false,
    };
    let by_human = IncidentDraft::build(
        Some(alert),
        Some(&round),
        Some(&round),
        &Resolver::Mention {
            user: "U1".into(),
            text: "bad ConfigMap rollout".into(),
        },
    );
    assert_eq!(by_human.title, "[FIRING:1] KubePodCrashLooping checkout");
    assert_eq!(by_human.summary, "checkout restarts: OOMKilled (E1)");
    assert_eq!(by_human.root_cause, "bad ConfigMap rollout");
    assert_eq!(by_human.resolution, "bad ConfigMap rollout");
    assert_eq!(by_human.alert.namespace.as_deref(), Some("shop"));
    assert_eq!(
        by_human.alert.alertname.as_deref(),
        Some("KubePodCrashLooping")
    );
    let by_recovery = IncidentDraft::build(
        Some(alert),
        Some(&round),
        Some(&round),
        &Resolver::Recovery {
            ts: "1.2".into(),
            first_line: "[RESOLVED] KubePodCrashLooping".into(),
        },
    );
    assert_eq!(by_recovery.root_cause, "memory limit too low");
    let bare = IncidentDraft::build(
        Some(alert),
        None,
        None,
        &Resolver::CheckMark { user: "U1".into() },
    );
    assert_eq!(bare.root_cause, "(resolved by ✅)");
    assert_eq!(bare.summary, alert);
    let no_alert = IncidentDraft::build(
        None,
        Some(&round),
        None,
        &Resolver::Recovery {
            ts: "1".into(),
            first_line: "x".into(),
        },
    );
    assert_eq!(no_alert.title, "checkout is crash-looping");
    assert_eq!(no_alert.root_cause, "unknown (resolved by recovery alert)");
    let long = "y".repeat(MAX_SUMMARY_CHARS * 2);
    let long_round = RoundOutline {
        text: long,
        ..RoundOutline::default()
    };
    let cut = IncidentDraft::build(
        Some(alert),
        Some(&long_round),
        None,
        &Resolver::CheckMark { user: "U1".into() },
    );
    assert_eq!(cut.summary.chars().count(), MAX_SUMMARY_CHARS);
}
