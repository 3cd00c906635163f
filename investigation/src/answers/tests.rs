use super::*;

use chrono::Timelike;

/// 14:30 UTC on 4 Dec 2026, as a Slack ts.
const TS: &str = "1796394600.000100";

fn answer(text: &str) -> HumanAnswer {
    HumanAnswer {
        user: "U1".into(),
        text: text.into(),
        ts: TS.into(),
        question: None,
    }
}

fn namespace_question(choices: &[&str]) -> Question {
    Question::of(QuestionKind::Namespace, "Which namespace is `checkout` in?")
        .with_choices(choices.iter().map(|c| c.to_string()))
}

fn read_as(question: &Question, text: &str) -> Reading {
    read(
        std::slice::from_ref(question),
        &[answer(text)],
        chrono_tz::UTC,
    )
    .remove(0)
    .reading
}

fn name(name: &str, matched: NameMatch) -> Reading {
    Reading::Name {
        name: name.into(),
        matched,
    }
}

#[test]
fn a_name_is_matched_exactly_then_ignoring_case_then_by_prefix_then_by_spelling() {
    let q = namespace_question(&["payments", "payments-staging", "shop"]);
    assert_eq!(
        read_as(&q, "it's in payments"),
        name("payments", NameMatch::Exact)
    );
    assert_eq!(
        read_as(&q, "<@U0BOT> Payments"),
        name("payments", NameMatch::IgnoringCase)
    );
    assert_eq!(read_as(&q, "the sho one"), name("shop", NameMatch::Prefix));
    assert_eq!(
        read_as(&q, "paymnets-staging I think"),
        name("payments-staging", NameMatch::Spelling { edits: 2 })
    );
}

#[test]
fn two_names_matching_alike_or_none_at_all_leave_the_answer_unread() {
    let q = namespace_question(&["payments", "payments-staging", "shop"]);
    // `pay` starts two names.
    assert!(matches!(read_as(&q, "pay"), Reading::Unread { .. }));
    let Reading::Unread { candidates } = read_as(&q, "no idea, ask the platform team") else {
        panic!("nothing names a namespace");
    };
    assert_eq!(candidates, ["payments", "payments-staging", "shop"]);
}

#[test]
fn with_no_choices_the_one_word_that_can_be_a_name_is_taken_as_written() {
    let q = namespace_question(&[]);
    assert_eq!(
        read_as(&q, "it's in payments"),
        name("payments", NameMatch::Stated)
    );
    assert!(matches!(
        read_as(&q, "payments or shop?"),
        Reading::Unread { .. }
    ));
    assert!(matches!(
        read_as(&q, "yes since about 14:00"),
        Reading::Unread { .. }
    ));
}

#[test]
fn labels_are_read_whatever_was_asked() {
    let q = namespace_question(&["shop"]);
    let Reading::Labels { labels } =
        read_as(&q, "it's this one:\nnamespace=payments\npod=\"api-1\"")
    else {
        panic!("labels");
    };
    assert_eq!(
        labels.get("namespace").map(String::as_str),
        Some("payments")
    );
    assert_eq!(labels.get("pod").map(String::as_str), Some("api-1"));
}

#[test]
fn yes_and_no_with_negation_and_a_time() {
    let q = Question::of(QuestionKind::Hypothesis, "Is it the deploy of 2.4.1?");
    assert!(matches!(
        read_as(&q, "yes"),
        Reading::YesNo {
            yes: true,
            since: None
        }
    ));
    assert!(matches!(
        read_as(&q, "Nope."),
        Reading::YesNo { yes: false, .. }
    ));
    assert!(matches!(
        read_as(&q, "I don't think it's the deploy"),
        Reading::YesNo { yes: false, .. }
    ));
    assert!(matches!(
        read_as(&q, "that's it"),
        Reading::YesNo { yes: true, .. }
    ));
    let Reading::YesNo {
        yes: true,
        since: Some(at),
    } = read_as(&q, "yes since about 14:00")
    else {
        panic!("a yes with a time");
    };
    assert_eq!((at.hour(), at.minute()), (14, 0));
    assert!(matches!(
        read_as(&q, "maybe, let me look"),
        Reading::Unread { .. }
    ));
}

#[test]
fn times_in_the_workspace_zone_and_durations_ago() {
    let at = slack_time(TS).expect("ts");
    let berlin: Tz = "Europe/Berlin".parse().expect("zone");
    // 14:30 UTC is 15:30 in Berlin: "since 15:05" there is 14:05 UTC.
    let since = time_in("since 15:05", at, berlin).expect("a clock time");
    assert_eq!((since.hour(), since.minute()), (14, 5));
    // A time later than the answer is yesterday's.
    let late = time_in("since 23:10", at, chrono_tz::UTC).expect("a clock time");
    assert_eq!(
        late.date_naive(),
        at.date_naive().pred_opt().expect("a day before")
    );
    assert_eq!(
        time_in("about 20 minutes ago", at, berlin),
        Some(at - Duration::minutes(20))
    );
    assert_eq!(time_in("2h ago", at, berlin), Some(at - Duration::hours(2)));
    let pm = time_in("since 2pm", at, chrono_tz::UTC).expect("2pm");
    assert_eq!(pm.hour(), 14);
    assert_eq!(time_in("we have 3 pods", at, chrono_tz::UTC), None);
}

#[test]
fn prose_is_unread_while_a_typed_question_waits_for_its_answer() {
    let questions = [
        namespace_question(&["payments", "shop"]),
        Question::free("Did anything change around 14:02 UTC?"),
    ];
    let read = read(
        &questions,
        &[answer("no idea, ask the platform team")],
        chrono_tz::UTC,
    );
    assert_eq!(read[0].question.kind, QuestionKind::Namespace);
    assert!(read[0].unread(), "{read:?}");
}

#[test]
fn each_answer_goes_to_the_question_that_reads_it() {
    let questions = [
        namespace_question(&["payments", "shop"]),
        Question::of(
            QuestionKind::Hypothesis,
            "Is this the outage of 3 March again?",
        ),
        Question::free("Did anything change around 14:02 UTC?"),
    ];
    let read = read(
        &questions,
        &[
            answer("shop"),
            answer("no"),
            answer("we rotated the db password"),
        ],
        chrono_tz::UTC,
    );
    assert_eq!(read[0].question.kind, QuestionKind::Namespace);
    assert_eq!(read[1].question.kind, QuestionKind::Hypothesis);
    assert_eq!(read[2].reading, Reading::Prose);
    assert_eq!(read[2].question.kind, QuestionKind::FreeText);
}

#[test]
fn applying_answers_names_the_target_and_keeps_what_the_alert_said() {
    let target = firstline_alert::parse_alert("[FIRING:1] checkout latency high\nservice=checkout");
    assert_eq!(target.namespace, None);
    let read = read(
        &[namespace_question(&["payments"])],
        &[answer("payments")],
        chrono_tz::UTC,
    );
    let target = apply(target, &read);
    assert_eq!(target.namespace.as_deref(), Some("payments"));
    assert_eq!(target.service.as_deref(), Some("checkout"));

    let pod = Question::of(
        QuestionKind::Workload,
        "Which pod of `checkout` is failing?",
    )
    .with_choices(["checkout-6d8f7b9c4-x2x7q".to_string()]);
    let read = super::read(&[pod], &[answer("the x2x7q one")], chrono_tz::UTC);
    assert!(
        matches!(read[0].reading, Reading::Unread { .. }),
        "{read:?}"
    );
    let read = super::read(
        &[Question::of(QuestionKind::Workload, "Which pod?")
            .with_choices(["checkout-6d8f7b9c4-x2x7q".to_string()])],
        &[answer("checkout-6d8f7b9c4-x2x7q")],
        chrono_tz::UTC,
    );
    let target = apply(firstline_alert::parse_alert("namespace=shop"), &read);
    assert_eq!(target.pod.as_deref(), Some("checkout-6d8f7b9c4-x2x7q"));
    assert_eq!(target.workload.as_deref(), Some("checkout"));
}
