//! The round's reply as Slack Block Kit: the rendered report (headline, causes with their
//! evidence quotes, next steps, similar incidents — or the questions) as mrkdwn sections, the
//! questions' inputs (choices as buttons or a select, Yes/No, a text box for something else),
//! feedback buttons, and a context line saying which round this is and how it was judged. Sections stay under Slack's
//! 3,000 characters and the message under 50 blocks; the client enforces both again.

use serde_json::{Value, json};

use firstline_slack::limits::sections;

use firstline_investigation::RoundResult;
use firstline_model::{AnswerBlock, FeedbackBlock, Question, QuestionKind, Verdict};
use firstline_slack::limits;

/// Blocks kept for the report and the questions' inputs (the feedback buttons and the context
/// line are two more).
const MAX_REPORT_BLOCKS: usize = 45;
/// `metadata.event_type` of every round reply; a retry finds its own reply by it.
pub const ROUND_EVENT_TYPE: &str = "firstline_round";

/// The blocks of round `round`'s reply.
pub fn round_blocks(result: &RoundResult, round: u32) -> Vec<Value> {
    let mut blocks: Vec<Value> = Vec::new();
    for paragraph in result
        .text
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        for chunk in sections(paragraph) {
            blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": chunk}}));
        }
    }
    let inputs: Vec<Value> = if result.grounded {
        Vec::new()
    } else {
        result
            .questions
            .iter()
            .enumerate()
            .flat_map(|(i, q)| question_inputs(q, round, u32::try_from(i).unwrap_or(u32::MAX)))
            .collect()
    };
    let room = MAX_REPORT_BLOCKS.saturating_sub(inputs.len());
    if blocks.len() > room {
        blocks.truncate(room);
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn",
            "text": "_(report shortened to fit one Slack message)_"}}));
    }
    blocks.extend(inputs);
    blocks.push(feedback_buttons(round));
    let verdict = if result.grounded {
        "grounded: every claim's quote was found in its evidence"
    } else {
        "not grounded yet: reply in this thread to answer"
    };
    let evidence = match result.evidence.len() {
        0 => "no evidence".to_string(),
        1 => "evidence E1".to_string(),
        n => format!("evidence E1–E{n}"),
    };
    blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn",
        "text": format!("Firstline · round {round} · {verdict} · {evidence} · {} tool calls",
                        result.usage.tool_calls)}]}));
    blocks
}

/// `blocks` (a round's reply) with `more` inserted above the feedback buttons: what the reply
/// gained since the round (a proposal, the alerts linked to it).
pub fn above_feedback(mut blocks: Vec<Value>, more: Vec<Value>) -> Vec<Value> {
    let at = blocks
        .iter()
        .position(|b| {
            b.get("block_id")
                .and_then(Value::as_str)
                .is_some_and(|id| FeedbackBlock::parse(id).is_some())
        })
        .unwrap_or(blocks.len());
    blocks.splice(at..at, more);
    blocks
}

/// "Helpful" and "Wrong cause" on every reply, bound to its round: the bot stores one verdict
/// per person per round, and a cause marked wrong never becomes its incident's cause.
fn feedback_buttons(round: u32) -> Value {
    let button = |label: &str, verdict: Verdict| {
        json!({"type": "button", "action_id": format!("feedback_{}", verdict.as_str()),
               "text": {"type": "plain_text", "text": label}, "value": verdict.as_str()})
    };
    json!({"type": "actions", "block_id": FeedbackBlock { round }.block_id(), "elements": [
        button("Helpful", Verdict::Helpful),
        button("Wrong cause", Verdict::Wrong),
    ]})
}

/// Buttons shown for a question's choices; more become a select.
const MAX_BUTTONS: usize = 5;

/// What a person can answer question `index` of round `round` with, besides a reply: its
/// choices (buttons, or a select when there are many; Yes/No for a hypothesis) and a text box
/// for something else. Every block is bound to the round and question ([`AnswerBlock`]), and the
/// bot accepts only a value the question offered.
fn question_inputs(question: &Question, round: u32, index: u32) -> Vec<Value> {
    let block = AnswerBlock {
        round,
        index,
        typed: false,
    };
    let button = |i: usize, label: &str, value: &str| {
        json!({"type": "button", "action_id": format!("answer_{i}"),
               "text": {"type": "plain_text", "text": limits::truncate(label, 75)},
               "value": value})
    };
    let choices: Vec<Value> = match question.kind {
        QuestionKind::Hypothesis => vec![
            button(0, "Yes", firstline_model::question::YES),
            button(1, "No", firstline_model::question::NO),
        ],
        _ if question.choices.is_empty() => Vec::new(),
        _ if question.choices.len() <= MAX_BUTTONS => question
            .choices
            .iter()
            .enumerate()
            .map(|(i, c)| button(i, c, c))
            .collect(),
        _ => vec![
            json!({"type": "static_select", "action_id": "answer_select",
            "placeholder": {"type": "plain_text", "text": "Pick one"},
            "options": question.choices.iter().take(MAX_SELECT_OPTIONS).map(|c| json!({
                "text": {"type": "plain_text", "text": limits::truncate(c, 75)}, "value": c
            })).collect::<Vec<_>>()}),
        ],
    };
    let mut out = Vec::new();
    if !choices.is_empty() {
        out.push(json!({"type": "actions", "block_id": block.block_id(), "elements": choices}));
    }
    if question.kind != QuestionKind::FreeText || !out.is_empty() {
        out.push(
            json!({"type": "input", "block_id": AnswerBlock { typed: true, ..block }.block_id(),
            "dispatch_action": true, "optional": true,
            "label": {"type": "plain_text", "text": format!("Something else ({})", index + 1)},
            "element": {"type": "plain_text_input", "action_id": "answer_text",
                "placeholder": {"type": "plain_text", "text": "Type an answer and press Enter"}}}),
        );
    }
    out
}

/// Options a select offers (Slack's limit is 100; the round offers at most 25).
const MAX_SELECT_OPTIONS: usize = 100;

/// `metadata.event_type` of the note posted when a round could not finish.
pub const FAILURE_EVENT_TYPE: &str = "firstline_round_failed";

/// The reply's metadata: which thread and round it answers.
pub fn round_metadata(thread_id: i64, round: u32, grounded: bool) -> Value {
    json!({"event_type": ROUND_EVENT_TYPE,
           "event_payload": {"thread_id": thread_id, "round": round, "grounded": grounded}})
}

/// Whether `metadata` marks the reply of `round` in `thread_id`.
pub fn is_round_reply(metadata: Option<&Value>, thread_id: i64, round: u32) -> bool {
    marks_round(metadata, ROUND_EVENT_TYPE, thread_id, round)
}

/// Whether `metadata` is of `event_type` and names `round` of `thread_id`.
pub fn marks_round(metadata: Option<&Value>, event_type: &str, thread_id: i64, round: u32) -> bool {
    let Some(metadata) = metadata else {
        return false;
    };
    let payload = &metadata["event_payload"];
    metadata["event_type"] == event_type
        && number(&payload["thread_id"]) == Some(thread_id)
        && number(&payload["round"]) == Some(i64::from(round))
}

/// A number, or a number written as a string (Slack returns metadata values as sent; the
/// client sends them as strings).
fn number(value: &Value) -> Option<i64> {
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use firstline_investigation::Usage;
    use firstline_slack::limits::MAX_SECTION_CHARS;

    fn result(text: &str, grounded: bool) -> RoundResult {
        RoundResult {
            grounded,
            text: text.into(),
            report: None,
            verdict: None,
            questions: Vec::new(),
            findings: Vec::new(),
            evidence: Vec::new(),
            missing: Vec::new(),
            usage: Usage::default(),
            model: None,
        }
    }

    #[test]
    fn paragraphs_become_sections_then_feedback_buttons_and_a_context_line_close_the_reply() {
        let blocks = round_blocks(&result("*Headline*\n\n*Cause*: x\n> E1: \"q\"", true), 2);
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[0]["text"]["text"], "*Headline*");
        assert_eq!(blocks[2]["block_id"], "firstline.feedback.2");
        let values: Vec<&Value> = blocks[2]["elements"]
            .as_array()
            .map(|e| e.iter().map(|b| &b["value"]).collect())
            .unwrap_or_default();
        assert_eq!(values, [&json!("helpful"), &json!("wrong")]);
        let context = blocks[3]["elements"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            context.contains("round 2") && context.contains("grounded"),
            "{context}"
        );
    }

    #[test]
    fn questions_offer_their_choices_bound_to_round_and_question() {
        use firstline_model::{Question, QuestionKind};
        let mut asked = result("*No cause confirmed yet*\n\n*Questions*\n1. Which?", false);
        asked.questions = vec![
            Question::of(QuestionKind::Namespace, "Which namespace?")
                .with_choices(["payments".to_string(), "shop".to_string()]),
            Question::of(QuestionKind::Hypothesis, "Is it the deploy?"),
            Question::free("Did anything change?"),
            Question::of(QuestionKind::Workload, "Which workload?")
                .with_choices((0..8).map(|i| format!("api-{i}"))),
        ];
        let blocks = round_blocks(&asked, 3);
        let block = |id: &str| {
            blocks
                .iter()
                .find(|b| b["block_id"] == id)
                .unwrap_or_else(|| panic!("{id} in {blocks:#?}"))
        };
        let buttons = &block("firstline.answer.3.0")["elements"];
        assert_eq!(buttons[1]["value"], "shop");
        assert_eq!(
            block("firstline.text.3.0")["element"]["type"],
            "plain_text_input"
        );
        assert_eq!(block("firstline.answer.3.1")["elements"][0]["value"], "yes");
        // A free-text question is answered by a reply: no inputs of its own.
        assert!(
            !blocks
                .iter()
                .any(|b| b["block_id"] == "firstline.answer.3.2"
                    || b["block_id"] == "firstline.text.3.2")
        );
        // Many choices become one select.
        let select = &block("firstline.answer.3.3")["elements"][0];
        assert_eq!(select["type"], "static_select");
        assert_eq!(select["options"].as_array().map(Vec::len), Some(8));
        // A grounded reply asks nothing.
        asked.grounded = true;
        assert!(!round_blocks(&asked, 3).iter().any(|b| {
            b["block_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("firstline.answer"))
        }));
    }

    #[test]
    fn long_reports_respect_slack_limits() {
        let long_line = "x".repeat(7_000);
        let many = (0..80)
            .map(|i| format!("para {i}"))
            .collect::<Vec<_>>()
            .join("\n\n");
        let text = format!("{long_line}\n\n{many}");
        let blocks = round_blocks(&result(&text, false), 1);
        assert!(blocks.len() <= 50, "{}", blocks.len());
        for block in &blocks {
            let text = block["text"]["text"].as_str().unwrap_or_default();
            assert!(text.chars().count() <= MAX_SECTION_CHARS);
        }
    }

    #[test]
    fn metadata_identifies_the_round_reply() {
        let metadata = round_metadata(7, 2, true);
        assert!(is_round_reply(Some(&metadata), 7, 2));
        assert!(!is_round_reply(Some(&metadata), 7, 3));
        assert!(!is_round_reply(Some(&metadata), 8, 2));
        assert!(!is_round_reply(None, 7, 2));
        let as_strings = json!({"event_type": ROUND_EVENT_TYPE,
                                "event_payload": {"thread_id": "7", "round": "2"}});
        assert!(is_round_reply(Some(&as_strings), 7, 2));
    }
}
