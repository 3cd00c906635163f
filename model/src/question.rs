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
