use super::*;
use firstline_model::Verdict;
use serde_json::json;

fn payload(action: Value) -> Value {
    json!({
        "type": "block_actions",
        "team": {"id": "T07F1RSTDEV"},
        "user": {"id": "U07ONCALL01"},
        "api_app_id": "A07F1RSTAPP",
        "trigger_id": "1.2.3",
        "container": {"type": "message", "message_ts": "1733140300.000100", "channel_id": "C07INCIDENT"},
        "channel": {"id": "C07INCIDENT"},
        "message": {"ts": "1733140300.000100", "thread_ts": "1733140000.000100",
                    "blocks": [
                        {"type": "section", "text": {"type": "mrkdwn", "text": "*No cause confirmed yet*"}},
                        {"type": "actions", "block_id": "firstline.answer.1.0", "elements": []},
                        {"type": "input", "block_id": "firstline.text.1.0", "element": {}},
                        {"type": "context", "elements": []}
                    ]},
        "actions": [action]
    })
}

#[test]
fn a_button_a_select_and_typed_text_are_read_with_their_question() {
    let button = payload(json!({"type": "button", "block_id": "firstline.answer.1.0",
        "action_id": "answer_1", "value": "payments", "action_ts": "1733140310.123456"}));
    let Ok(Interaction::Answer(click)) = read(&button) else {
        panic!("a click")
    };
    assert_eq!(click.thread.thread_ts, "1733140000.000100");
    assert_eq!(click.thread.channel_id, "C07INCIDENT");
    assert_eq!(click.message_ts, "1733140300.000100");
    assert_eq!(
        click.block,
        AnswerBlock {
            round: 1,
            index: 0,
            typed: false
        }
    );
    assert_eq!(click.value, "payments");
    let recorded = click.incoming(&button);
    assert_eq!(recorded.kind, Kind::Answer);
    assert_eq!(recorded.ts, "1733140310.123456");
    assert_eq!(recorded.thread_ts.as_deref(), Some("1733140000.000100"));

    let select = payload(
        json!({"type": "static_select", "block_id": "firstline.answer.1.2",
        "action_id": "answer_select", "selected_option": {"value": "shop", "text": {"type": "plain_text", "text": "shop"}},
        "action_ts": "1733140311.000001"}),
    );
    let Ok(Interaction::Answer(click)) = read(&select) else {
        panic!("a selection")
    };
    assert_eq!((click.block.index, click.value.as_str()), (2, "shop"));

    let typed = payload(
        json!({"type": "plain_text_input", "block_id": "firstline.text.1.0",
        "action_id": "answer_text", "value": "  it's in payments-eu  ", "action_ts": "1733140312.000001"}),
    );
    let Ok(Interaction::Answer(click)) = read(&typed) else {
        panic!("typed text")
    };
    assert!(click.block.typed);
    assert_eq!(click.value, "it's in payments-eu");
}

#[test]
fn other_interactions_and_incomplete_payloads_are_not_answers() {
    let mut shortcut = payload(json!({}));
    shortcut["type"] = json!("shortcut");
    assert_eq!(read(&shortcut), Err(NotAnAnswer::Type("shortcut".into())));
    let other_block = payload(json!({"block_id": "feedback", "value": "x", "action_ts": "1.0"}));
    assert!(matches!(
        read(&other_block),
        Err(NotAnAnswer::OtherBlock(_))
    ));
    let empty_value =
        payload(json!({"block_id": "firstline.answer.1.0", "value": " ", "action_ts": "1.0"}));
    assert!(matches!(
        read(&empty_value),
        Err(NotAnAnswer::Incomplete(_))
    ));
    let mut no_user =
        payload(json!({"block_id": "firstline.answer.1.0", "value": "x", "action_ts": "1.0"}));
    no_user.as_object_mut().map(|o| o.remove("user"));
    assert_eq!(read(&no_user), Err(NotAnAnswer::Incomplete("/user/id")));
    assert!(matches!(
        read(&json!("not an object")),
        Err(NotAnAnswer::Type(_))
    ));
}

#[test]
fn the_answered_question_shows_who_answered_what_in_place_of_its_inputs() {
    let button = payload(
        json!({"block_id": "firstline.answer.1.0", "value": "<!channel> payments",
        "action_ts": "1733140310.123456"}),
    );
    let Ok(Interaction::Answer(click)) = read(&button) else {
        panic!("a click")
    };
    let blocks = click.answered_blocks(&button).expect("blocks to change");
    let blocks = blocks.as_array().expect("an array");
    assert_eq!(
        blocks.len(),
        3,
        "both inputs replaced by one line: {blocks:#?}"
    );
    let line = blocks[1]["elements"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        line.contains("<@U07ONCALL01> answered question 1"),
        "{line}"
    );
    assert!(
        line.contains("&lt;!channel&gt; payments"),
        "escaped: {line}"
    );
    assert_eq!(blocks[2]["type"], "context");
}

#[test]
fn feedback_buttons_carry_a_verdict_for_their_round() {
    let helpful = payload(json!({"type": "button", "block_id": "firstline.feedback.2",
        "action_id": "feedback_helpful", "value": "helpful", "action_ts": "1733140320.000001"}));
    let Ok(Interaction::Feedback(click)) = read(&helpful) else {
        panic!("feedback");
    };
    assert_eq!((click.round, click.verdict), (2, Verdict::Helpful));
    assert_eq!(click.message_ts, "1733140300.000100");
    let odd =
        payload(json!({"block_id": "firstline.feedback.2", "value": "meh", "action_ts": "1.0"}));
    assert_eq!(read(&odd), Err(NotAnAnswer::NoVerdict("meh".into())));
}

#[test]
fn the_wrong_cause_dialog_submitted_carries_its_round_and_text() {
    let mut view = right_cause_view(42);
    view["id"] = json!("V00000001");
    view["state"] = json!({"values": {"right_cause": {"text": {"type": "plain_text_input",
        "value": "  the node's disk filled up  "}}}});
    let submitted = json!({"type": "view_submission", "team": {"id": "T07F1RSTDEV"},
        "user": {"id": "U07ONCALL01"}, "view": view});
    let Ok(Interaction::RightCause(right)) = read(&submitted) else {
        panic!("the dialog's answer");
    };
    assert_eq!((right.round_id, right.user.as_str()), (42, "U07ONCALL01"));
    assert_eq!(right.text, "the node's disk filled up");
    // Another app's dialog is not ours.
    let mut other = submitted.clone();
    other["view"]["callback_id"] = json!("something_else");
    assert!(matches!(read(&other), Err(NotAnAnswer::Type(_))));
}

#[test]
fn approve_and_reject_carry_their_action_and_the_hash_of_the_change_shown() {
    let hash = "a".repeat(64);
    let block_id = firstline_model::ActionBlock { action_id: 42 }.block_id();
    let approve = payload(json!({"type": "button", "block_id": block_id,
        "action_id": "action_approve", "value": format!("approve:{hash}"),
        "action_ts": "1733140330.000001"}));
    let Ok(Interaction::Decision(click)) = read(&approve) else {
        panic!("a decision");
    };
    assert_eq!(
        (click.action_id, click.decision, click.hash.as_str()),
        (42, firstline_model::Decision::Approve, hash.as_str())
    );
    assert_eq!(click.message_ts, "1733140300.000100");
    assert_eq!(click.thread.thread_ts, "1733140000.000100");
    assert_eq!(click.user, "U07ONCALL01");
    assert_eq!(click.action_ts.as_deref(), Some("1733140330.000001"));
    assert_eq!(click.trigger_id.as_deref(), Some("1.2.3"));
    let reject = payload(json!({"block_id": block_id, "value": format!("reject:{hash}")}));
    let Ok(Interaction::Decision(click)) = read(&reject) else {
        panic!("a decision");
    };
    assert_eq!(click.decision, firstline_model::Decision::Reject);
    assert_eq!(click.action_ts, None, "not needed to decide");

    // Anything but `approve:`/`reject:` and a sha256 is refused, named.
    for value in [
        "maybe:".to_string() + &hash,
        "approve:".to_string(),
        "approve:not-a-hash".to_string(),
        format!("approve:{}", "A".repeat(64)),
        hash.clone(),
    ] {
        let odd = payload(json!({"block_id": block_id, "value": value}));
        assert!(
            matches!(read(&odd), Err(NotAnAnswer::NoDecision(_))),
            "{value}: {:?}",
            read(&odd)
        );
    }
    let no_id = payload(
        json!({"block_id": block_id.replace("42", "x"), "value": format!("approve:{hash}")}),
    );
    assert!(matches!(read(&no_id), Err(NotAnAnswer::OtherBlock(_))));
}
