//! What the investigation must produce for a scenario, and the check of an outcome against it.

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
}

/// Post a grounded summary, ask questions, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedVerdict {
    Post,
    Ask,
    Either,
}

/// How an outcome compares with an [`Expect`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExpectCheck {
    pub verdict_ok: bool,
    /// Inner lists none of whose phrases appeared.
    pub missing: Vec<Vec<String>>,
    /// Forbidden phrases that appeared.
    pub forbidden: Vec<String>,
}

impl ExpectCheck {
    pub fn passed(&self) -> bool {
        self.verdict_ok && self.missing.is_empty() && self.forbidden.is_empty()
    }
}

impl Expect {
    /// Compares the text that would be posted to Slack (case-insensitive) and whether the
    /// round posted a summary (`true`) or asked (`false`).
    pub fn check(&self, posted_text: &str, posted: bool) -> ExpectCheck {
        let text = posted_text.to_lowercase();
        let verdict_ok = match self.verdict {
            ExpectedVerdict::Post => posted,
            ExpectedVerdict::Ask => !posted,
            ExpectedVerdict::Either => true,
        };
        ExpectCheck {
            verdict_ok,
            missing: self
                .must_mention
                .iter()
                .filter(|any| !any.iter().any(|p| text.contains(&p.to_lowercase())))
                .cloned()
                .collect(),
            forbidden: self
                .must_not_mention
                .iter()
                .filter(|p| text.contains(&p.to_lowercase()))
                .cloned()
                .collect(),
        }
    }
}
