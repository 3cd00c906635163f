//! What the investigation must produce for a scenario, and the check of an outcome against it.
//!
//! Besides what the reply must and must not say anywhere, a scenario names what its **first
//! line** must say when the round posts (`headline`): the first line is where the reply states
//! its cause, and a post whose first line names something else is a *wrong headline* — the
//! costliest outcome, counted apart from misses. A stated cause containing a `must_not_mention`
//! phrase is a wrong headline too.

use serde::{Deserialize, Serialize};

/// What the investigation must produce. Also used by peer fixtures' `rubric.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub verdict: ExpectedVerdict,
    /// Each inner list: at least one of its phrases must appear.
    #[serde(default)]
    pub must_mention: Vec<Vec<String>>,
    /// None of these may appear.
    #[serde(default)]
    pub must_not_mention: Vec<String>,
    /// When the round posts, its first line must contain at least one of these phrases.
    /// Empty: the first line is not checked.
    #[serde(default)]
    pub headline: Vec<String>,
}

/// Post a grounded summary, ask questions, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedVerdict {
    Post,
    Ask,
    Either,
}

/// A finished round's reply, as the check reads it.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    /// The text that would be posted to Slack.
    pub text: &'a str,
    /// The round posted a summary (`true`) or asked (`false`).
    pub posted: bool,
    /// The causes the reply states (empty when it asks).
    pub causes: &'a [String],
}

/// How the reply's first line compares with `expect.headline`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HeadlineCheck {
    /// The scenario names no headline.
    #[default]
    NotExpected,
    /// The round asked: a first line that asks states no cause.
    Asked,
    /// The first line contains one of the phrases.
    Right,
    /// The round posted and its first line contains none of the phrases.
    Wrong { first_line: String },
}

/// How an outcome compares with an [`Expect`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpectCheck {
    pub verdict_ok: bool,
    /// Inner lists none of whose phrases appeared.
    pub missing: Vec<Vec<String>>,
    /// Forbidden phrases that appeared.
    pub forbidden: Vec<String>,
    pub headline: HeadlineCheck,
    /// Stated causes that contain a forbidden phrase.
    pub wrong_causes: Vec<String>,
}

impl ExpectCheck {
    pub fn passed(&self) -> bool {
        self.verdict_ok
            && self.missing.is_empty()
            && self.forbidden.is_empty()
            && !self.wrong_headline()
    }

    /// The reply posted a cause that is not the truth: its first line misses the expected
    /// headline, or a cause it states is one the scenario forbids.
    pub fn wrong_headline(&self) -> bool {
        matches!(self.headline, HeadlineCheck::Wrong { .. }) || !self.wrong_causes.is_empty()
    }
}

impl Expect {
    /// Compares a reply (case-insensitively) with the expectation.
    pub fn check(&self, reply: &Reply<'_>) -> ExpectCheck {
        let text = reply.text.to_lowercase();
        let contains = |haystack: &str, phrase: &str| haystack.contains(&phrase.to_lowercase());
        let verdict_ok = match self.verdict {
            ExpectedVerdict::Post => reply.posted,
            ExpectedVerdict::Ask => !reply.posted,
            ExpectedVerdict::Either => true,
        };
        let first_line = reply.text.lines().next().unwrap_or_default();
        let headline = if self.headline.is_empty() {
            HeadlineCheck::NotExpected
        } else if !reply.posted {
            HeadlineCheck::Asked
        } else if self
            .headline
            .iter()
            .any(|p| contains(&first_line.to_lowercase(), p))
        {
            HeadlineCheck::Right
        } else {
            HeadlineCheck::Wrong {
                first_line: first_line.to_string(),
            }
        };
        let wrong_causes = if reply.posted {
            reply
                .causes
                .iter()
                .filter(|cause| {
                    let cause = cause.to_lowercase();
                    self.must_not_mention.iter().any(|p| contains(&cause, p))
                })
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        ExpectCheck {
            verdict_ok,
            missing: self
                .must_mention
                .iter()
                .filter(|any| !any.iter().any(|p| contains(&text, p)))
                .cloned()
                .collect(),
            forbidden: self
                .must_not_mention
                .iter()
                .filter(|p| contains(&text, p))
                .cloned()
                .collect(),
            headline,
            wrong_causes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(headline: &[&str], forbidden: &[&str]) -> Expect {
        Expect {
            verdict: ExpectedVerdict::Post,
            must_mention: Vec::new(),
            must_not_mention: forbidden.iter().map(|s| s.to_string()).collect(),
            headline: headline.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_headline_is_read_from_the_first_line_only() {
        let e = expect(&["node `worker-3`", "NotReady"], &[]);
        let right = "*Likely cause (high confidence): Node `worker-3` is NotReady*\nalert";
        let check = e.check(&Reply {
            text: right,
            posted: true,
            causes: &[],
        });
        assert_eq!(check.headline, HeadlineCheck::Right);
        assert!(check.passed());

        let wrong = "*Likely cause (high confidence): Pod unschedulable: untolerated taint*\nNode `worker-3` is NotReady";
        let check = e.check(&Reply {
            text: wrong,
            posted: true,
            causes: &[],
        });
        assert!(check.wrong_headline(), "{check:?}");
        assert!(!check.passed());

        // An ask states no cause: its first line is not a headline.
        let check = e.check(&Reply {
            text: wrong,
            posted: false,
            causes: &[],
        });
        assert_eq!(check.headline, HeadlineCheck::Asked);
    }

    #[test]
    fn a_stated_cause_the_scenario_forbids_is_a_wrong_headline() {
        let e = expect(&[], &["rollout undo"]);
        let causes = vec!["Deploy (revision 7): run rollout undo".to_string()];
        let check = e.check(&Reply {
            text: "*Likely cause*",
            posted: true,
            causes: &causes,
        });
        assert!(check.wrong_headline());
        // Asking never states a cause.
        let check = e.check(&Reply {
            text: "*No cause confirmed yet*",
            posted: false,
            causes: &causes,
        });
        assert!(!check.wrong_headline());
    }
}
