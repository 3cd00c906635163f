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
fn recovery_markers_of_common_integrations_are_recognised() {
    for text in [
        "[RESOLVED] KubePodCrashLooping checkout",
        "*[RESOLVED]* KubePodCrashLooping",
        ":white_check_mark: [RESOLVED] HighLatency",
        "✅ [OK] High CPU alert",
        "[Resolved] DiskFull",
        "Resolved: #1234 High CPU on checkout",
        "Recovered: [P1] High CPU on web-1",
        "Alert summary\nstatus: resolved\nalertname: X",
    ] {
        assert!(is_recovery(text), "{text}");
    }
    for text in [
        "[FIRING:1] KubePodCrashLooping checkout",
        "[FIRING:1] ResolvedConnectionsHigh",
        "ResolvedConnectionsHigh is firing",
        "Triggered: [P1] High CPU on web-1",
        "[Alerting] High CPU alert",
        "",
    ] {
        assert!(!is_recovery(text), "{text}");
    }
}

#[test]
fn labels_come_from_label_lines_then_the_title() {
    let am = "[FIRING:1] KubePodCrashLooping checkout\nLabels:\n - alertname = KubePodCrashLooping\n - namespace = shop\n - service: checkout-api\n";
    assert_eq!(
        alert_labels(am),
        AlertLabels {
            alertname: Some("KubePodCrashLooping".into()),
            namespace: Some("shop".into()),
            service: Some("checkout-api".into()),
        }
    );
    let braces = r#"Alert {alertname="HighLatency", namespace="payments"}"#;
    let l = alert_labels(braces);
    assert_eq!(l.alertname.as_deref(), Some("HighLatency"));
    assert_eq!(l.namespace.as_deref(), Some("payments"));
    assert_eq!(l.service, None);
    let title_only = alert_labels("*[RESOLVED]* KubePodCrashLooping checkout (shop)");
    assert_eq!(title_only.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(
        alert_labels("Recovered: [P1] High CPU on web-1")
            .alertname
            .as_deref(),
        Some("High CPU on web-1")
    );
    assert_eq!(
        alert_labels("Triggered: [P1] High CPU on web-1")
            .alertname
            .as_deref(),
        Some("High CPU on web-1")
    );
    assert_eq!(alert_labels("checkout is slow, anyone?").alertname, None);
}

#[test]
fn same_alert_needs_the_alertname_and_agreeing_scope() {
    let l = |a: &str, ns: Option<&str>| AlertLabels {
        alertname: Some(a.into()),
        namespace: ns.map(str::to_string),
        service: None,
    };
    assert!(
        l("KubePodCrashLooping", Some("shop")).same_alert(&l("kubepodcrashlooping", Some("shop")))
    );
    assert!(l("KubePodCrashLooping", None).same_alert(&l("KubePodCrashLooping", Some("shop"))));
    assert!(
        !l("KubePodCrashLooping", Some("shop")).same_alert(&l("KubePodCrashLooping", Some("web")))
    );
    assert!(!l("HighLatency", None).same_alert(&l("KubePodCrashLooping", None)));
    assert!(!AlertLabels::default().same_alert(&AlertLabels::default()));
}

#[test]
fn attachments_are_read_like_text() {
    let raw = serde_json::json!({"event": {"attachments": [{
        "fallback": "[RESOLVED] X", "title": "[RESOLVED] KubePodCrashLooping checkout",
        "text": "namespace: shop", "fields": [{"title": "service", "value": "checkout"}]}]}});
    let text = alert_text("", &raw);
    assert!(is_recovery(&text), "{text}");
    let l = alert_labels(&text);
    assert_eq!(l.alertname.as_deref(), Some("KubePodCrashLooping"));
    assert_eq!(l.namespace.as_deref(), Some("shop"));
    assert_eq!(l.service.as_deref(), Some("checkout"));
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
    let round = serde_json::json!({"grounded": true, "text": "checkout restarts: OOMKilled (E1)",
        "report": {"headline": "checkout is crash-looping", "causes": [{"statement": "memory limit too low", "detail": "…"}]}});
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
    assert_eq!(by_human.labels.namespace.as_deref(), Some("shop"));
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
    let long_round = serde_json::json!({"text": long});
    let cut = IncidentDraft::build(
        Some(alert),
        Some(&long_round),
        None,
        &Resolver::CheckMark { user: "U1".into() },
    );
    assert_eq!(cut.summary.chars().count(), MAX_SUMMARY_CHARS);
}
