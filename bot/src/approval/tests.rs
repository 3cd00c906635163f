use super::tell;
use super::*;
use chrono::{TimeZone, Utc};
use firstline_model::ThreadKey;
use serde_json::json;

fn thread() -> ThreadKey {
    ThreadKey {
        team_id: "T07F1RSTDEV".into(),
        channel_id: "C07INCIDENT".into(),
        thread_ts: "1733140000.000100".into(),
    }
}

fn row(state: ActionState, by: Option<&str>) -> Standing {
    let at = Utc
        .with_ymd_and_hms(2024, 12, 2, 12, 30, 0)
        .single()
        .expect("a time");
    Standing {
        state,
        decided_by: by.map(str::to_string),
        decided_at: by.map(|_| at),
        expires_at: at,
    }
}

fn click(user: &str, decision: Decision) -> DecisionClick {
    DecisionClick {
        thread: thread(),
        message_ts: "1733140300.000100".into(),
        action_id: 42,
        decision,
        hash: "a".repeat(64),
        user: user.into(),
        action_ts: None,
        trigger_id: None,
        response_url: None,
    }
}

#[test]
fn the_buttons_become_who_decided() {
    let ours = firstline_model::ActionBlock { action_id: 42 }.block_id();
    let other = firstline_model::ActionBlock { action_id: 7 }.block_id();
    let payload = json!({"message": {"blocks": [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Proposed*: delete pod"}},
        {"type": "actions", "block_id": ours, "elements": []},
        {"type": "actions", "block_id": other, "elements": []},
        {"type": "context", "elements": []}
    ]}});
    let approved = row(ActionState::Approved, Some("U07ONCALL01"));
    let line = tell::decided_line(&approved);
    assert_eq!(line, "✅ Approved by <@U07ONCALL01> — running …");
    let blocks = tell::decided_blocks(&payload, 42, &line).expect("the action's block");
    let blocks = blocks.as_array().expect("blocks");
    assert_eq!(blocks.len(), 4);
    assert_eq!(blocks[1]["type"], "context");
    assert_eq!(blocks[1]["elements"][0]["text"], line.as_str());
    assert_eq!(
        blocks[2]["block_id"],
        other.as_str(),
        "another action's buttons stay"
    );
    assert_eq!(tell::decided_blocks(&payload, 9, &line), None);
    assert_eq!(tell::decided_blocks(&json!({}), 42, &line), None);
    let rejected = row(ActionState::Rejected, Some("U07ONCALL02"));
    assert!(tell::decided_line(&rejected).starts_with("✖️ Rejected by <@U07ONCALL02>"));
}

#[test]
fn a_refused_click_says_why() {
    let outsider = click("U07OUTSIDER", Decision::Approve);
    let not_allowed = Refusal::NotAllowed {
        namespace: Some("shop".into()),
        approvers: vec!["S07SRE0001".into(), "U07LEAD001".into()],
    };
    let said = tell::refusal(&not_allowed, &outsider);
    assert!(said.contains("namespace `shop`"), "{said}");
    assert!(
        said.contains("<!subteam^S07SRE0001>, <@U07LEAD001>"),
        "{said}"
    );
    assert!(said.contains("Anyone may reject"), "{said}");
    let node = Refusal::NotAllowed {
        namespace: None,
        approvers: vec![],
    };
    assert!(tell::refusal(&node, &outsider).contains("lists no one"));

    let decided = Refusal::AlreadyDecided(row(ActionState::Approved, Some("U07ONCALL01")));
    let said = tell::refusal(&decided, &outsider);
    assert!(
        said.contains("already approved by <@U07ONCALL01> at <!date^1733142600^"),
        "{said}"
    );
    assert!(said.contains("|2024-12-02 12:30 UTC>"), "{said}");
    let own = tell::refusal(&decided, &click("U07ONCALL01", Decision::Approve));
    assert!(own.starts_with("You already approved"), "{own}");
    let expired = tell::refusal(
        &Refusal::Expired(row(ActionState::Expired, None)),
        &outsider,
    );
    assert!(expired.contains("expired"), "{expired}");
    for (refusal, words) in [
        (Refusal::Disabled, "turned off"),
        (Refusal::Unknown, "do not know"),
        (Refusal::NotShownHere, "not on the message"),
        (Refusal::OtherChange, "other than the one proposed"),
        (
            Refusal::GroupUnchecked {
                group: "S07SRE0001".into(),
                reason: "missing_scope".into(),
            },
            "could not check whether you are in <!subteam^S07SRE0001>",
        ),
    ] {
        let said = tell::refusal(&refusal, &outsider);
        assert!(said.contains(words), "{said}");
    }
}

#[test]
fn each_outcome_has_its_label() {
    let recorded = Outcome::Recorded(row(ActionState::Approved, Some("U1")));
    assert_eq!(recorded.label(Decision::Approve), "recorded_approve");
    assert_eq!(recorded.label(Decision::Reject), "recorded_reject");
    assert_eq!(Refusal::NotShownHere.label(), "unknown");
    assert_eq!(
        Refusal::GroupUnchecked {
            group: "S1".into(),
            reason: String::new()
        }
        .label(),
        "not_allowed"
    );
}

#[tokio::test]
async fn a_group_that_cannot_be_read_never_counts_as_membership() {
    let groups = groups::Groups::new(None);
    assert_eq!(groups.any_has_member(&[], "U1").await, Ok(false));
    let err = groups
        .any_has_member(&["S07SRE0001"], "U1")
        .await
        .expect_err("no API: unchecked");
    assert_eq!(err.group, "S07SRE0001");
    assert!(err.reason.contains("slack.bot_token"), "{}", err.reason);
}
