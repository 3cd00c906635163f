//! A question the bot asks in a thread, typed so that an answer — a click or a reply in
//! people's own words — can be read against what it asked for.

use serde::{Deserialize, Serialize};

/// What a question asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// Which namespace (environment) the subject is in.
    Namespace,
    /// Which workload, service or pod the alert is about.
    Workload,
    /// Since when something has been happening.
    Since,
    /// Whether a hypothesis is right: yes or no.
    Hypothesis,
    /// Anything else: read as prose.
    #[default]
    FreeText,
}

impl QuestionKind {
    /// What an answer to it names, for a reply that could not be read ("a namespace").
    pub fn wants(self) -> &'static str {
        match self {
            QuestionKind::Namespace => "a namespace",
            QuestionKind::Workload => "a workload, service or pod",
            QuestionKind::Since => "a time",
            QuestionKind::Hypothesis => "yes or no",
            QuestionKind::FreeText => "an answer",
        }
    }
}

/// One question of a round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "QuestionRepr")]
pub struct Question {
    pub kind: QuestionKind,
    /// The question as posted.
    pub text: String,
    /// Answers the round discovered (namespaces or workloads it listed), offered to pick from;
    /// an answer in words is matched against them.
    pub choices: Vec<String>,
    /// Set on a question that re-asks an answer nobody could read: it is not re-asked again.
    pub clarifies: bool,
}

impl Question {
    /// A question read as prose.
    pub fn free(text: impl Into<String>) -> Self {
        Self::of(QuestionKind::FreeText, text)
    }

    /// A question of `kind` with no choices.
    pub fn of(kind: QuestionKind, text: impl Into<String>) -> Self {
        Self {
            kind,
            text: text.into(),
            choices: Vec::new(),
            clarifies: false,
        }
    }

    /// With `choices` to pick from (repeats dropped, order kept).
    pub fn with_choices(mut self, choices: impl IntoIterator<Item = String>) -> Self {
        for choice in choices {
            if !self.choices.contains(&choice) {
                self.choices.push(choice);
            }
        }
        self
    }
}

/// The `block_id` prefix of a question's choices in a round's reply (buttons or a select).
const CHOICES_BLOCK: &str = "firstline.answer";
/// The `block_id` prefix of a question's "something else" text box.
const TEXT_BLOCK: &str = "firstline.text";

/// Where a click or a typed answer came from: question `index` of round `round`, and whether it
/// was typed into the question's text box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerBlock {
    pub round: u32,
    pub index: u32,
    pub typed: bool,
}

impl AnswerBlock {
    /// The `block_id` the reply renders this block with.
    pub fn block_id(self) -> String {
        let prefix = if self.typed {
            TEXT_BLOCK
        } else {
            CHOICES_BLOCK
        };
        format!("{prefix}.{}.{}", self.round, self.index)
    }

    /// The block a `block_id` names; `None` for any other block.
    pub fn parse(block_id: &str) -> Option<Self> {
        let (typed, rest) = match block_id.strip_prefix(CHOICES_BLOCK) {
            Some(rest) => (false, rest),
            None => (true, block_id.strip_prefix(TEXT_BLOCK)?),
        };
        let mut parts = rest.strip_prefix('.')?.split('.');
        let round = parts.next()?.parse().ok()?;
        let index = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Self {
            round,
            index,
            typed,
        })
    }
}

/// The `block_id` prefix of a round reply's feedback buttons.
const FEEDBACK_BLOCK: &str = "firstline.feedback";

/// The feedback buttons of round `round`'s reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedbackBlock {
    pub round: u32,
}

impl FeedbackBlock {
    /// The `block_id` the reply renders its feedback buttons with.
    pub fn block_id(self) -> String {
        format!("{FEEDBACK_BLOCK}.{}", self.round)
    }

    /// The block a `block_id` names; `None` for any other block.
    pub fn parse(block_id: &str) -> Option<Self> {
        let round = block_id.strip_prefix(FEEDBACK_BLOCK)?.strip_prefix('.')?;
        Some(Self {
            round: round.parse().ok()?,
        })
    }
}

/// What a person said of a round's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Helpful,
    Wrong,
}

impl Verdict {
    /// The value its button carries, and `round_feedback.verdict`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Helpful => "helpful",
            Verdict::Wrong => "wrong",
        }
    }

    /// The verdict a button's value names.
    pub fn parse(value: &str) -> Option<Self> {
        [Verdict::Helpful, Verdict::Wrong]
            .into_iter()
            .find(|v| v.as_str() == value)
    }
}

/// What a clicked button or option says for a yes/no question.
pub const YES: &str = "yes";
/// See [`YES`].
pub const NO: &str = "no";

impl Question {
    /// Whether `value`, clicked (not typed) on this question, is one it offered.
    pub fn offers(&self, value: &str) -> bool {
        match self.kind {
            QuestionKind::Hypothesis => value == YES || value == NO,
            _ => self.choices.iter().any(|c| c == value),
        }
    }
}

impl From<&str> for Question {
    fn from(text: &str) -> Self {
        Question::free(text)
    }
}

/// Questions were plain strings before they had kinds: both read back.
#[derive(Deserialize)]
#[serde(untagged)]
enum QuestionRepr {
    Text(String),
    Typed {
        #[serde(default)]
        kind: QuestionKind,
        text: String,
        #[serde(default)]
        choices: Vec<String>,
        #[serde(default)]
        clarifies: bool,
    },
}

impl From<QuestionRepr> for Question {
    fn from(repr: QuestionRepr) -> Self {
        match repr {
            QuestionRepr::Text(text) => Question::free(text),
            QuestionRepr::Typed {
                kind,
                text,
                choices,
                clarifies,
            } => Question {
                kind,
                text,
                choices,
                clarifies,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_blocks_round_trip_and_other_blocks_are_not_answers() {
        for block in [
            AnswerBlock {
                round: 2,
                index: 0,
                typed: false,
            },
            AnswerBlock {
                round: 11,
                index: 2,
                typed: true,
            },
        ] {
            assert_eq!(AnswerBlock::parse(&block.block_id()), Some(block));
        }
        for other in [
            "",
            "firstline.answer",
            "firstline.answer.2",
            "firstline.answer.x.1",
            "firstline.answer.1.2.3",
            "actions",
        ] {
            assert_eq!(AnswerBlock::parse(other), None, "{other}");
        }
        let q = Question::of(QuestionKind::Namespace, "which?").with_choices(["shop".to_string()]);
        assert!(q.offers("shop") && !q.offers("payments") && !q.offers(YES));
        assert!(Question::of(QuestionKind::Hypothesis, "is it?").offers(NO));
    }

    #[test]
    fn feedback_blocks_and_verdicts_round_trip() {
        let block = FeedbackBlock { round: 3 };
        assert_eq!(FeedbackBlock::parse(&block.block_id()), Some(block));
        assert_eq!(FeedbackBlock::parse("firstline.answer.3.0"), None);
        assert_eq!(FeedbackBlock::parse("firstline.feedback.x"), None);
        for verdict in [Verdict::Helpful, Verdict::Wrong] {
            assert_eq!(Verdict::parse(verdict.as_str()), Some(verdict));
        }
        assert_eq!(Verdict::parse("meh"), None);
    }

    #[test]
    fn a_typed_question_round_trips_and_a_plain_string_reads_as_free_text() {
        let asked = Question::of(QuestionKind::Namespace, "Which namespace is `checkout` in?")
            .with_choices(["payments".to_string(), "shop".into(), "payments".into()]);
        assert_eq!(asked.choices, ["payments", "shop"]);
        let json = serde_json::to_string(&asked).expect("serialises");
        assert_eq!(
            serde_json::from_str::<Question>(&json).expect("reads back"),
            asked
        );

        let old: Question = serde_json::from_str("\"Is it still firing?\"").expect("a string");
        assert_eq!(old, Question::free("Is it still firing?"));
        assert_eq!(old.kind, QuestionKind::FreeText);
    }
}
