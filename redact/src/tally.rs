//! Replacing matches and counting them per [`Kind`]: every rule goes through [`Tally::replace`],
//! so the count is exact and a rule that decides to keep a match costs nothing.

use std::collections::BTreeMap;

use regex::{Captures, Regex};

use crate::{Kind, Redacted};

/// Redactions so far, per kind.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    kinds: BTreeMap<Kind, usize>,
}

impl Tally {
    /// `text` with each match of `pattern` replaced by what `replace` returns for it, counted
    /// under `kind`; `None` keeps the match as it was, uncounted.
    pub(crate) fn replace(
        &mut self,
        kind: Kind,
        pattern: &Regex,
        text: &str,
        mut replace: impl FnMut(&Captures<'_>) -> Option<String>,
    ) -> String {
        let mut count = 0usize;
        let out = pattern
            .replace_all(text, |caps: &Captures<'_>| match replace(caps) {
                Some(replacement) => {
                    count += 1;
                    replacement
                }
                None => caps[0].to_string(),
            })
            .into_owned();
        if count > 0 {
            *self.kinds.entry(kind).or_default() += count;
        }
        out
    }

    pub(crate) fn finish(self, text: String) -> Redacted {
        Redacted {
            text,
            redactions: self.kinds.values().sum(),
            kinds: self.kinds,
        }
    }
}
