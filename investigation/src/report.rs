//! The report a round produces and the judge's verdict on it: plain data, serialisable, shared
//! by `summarise` (writes the report), `judge` (checks it), `ask` and the renderers.
//!
//! A report makes *claims*; every claim cites evidence ids and carries a short verbatim quote
//! (ARCHITECTURE.md, invariant 8). Claims hang off *findings* — a suspected cause or an observation —
//! so a reader sees which detector supports what, and with which lines.

use serde::{Deserialize, Serialize};

use crate::detectors::{Confidence, Kind};
use crate::evidence::EvidenceId;
use crate::missing::Missing;
use crate::prior::PriorIncident;
use crate::propose::Proposal;
use crate::root::Root;
use firstline_model::Question;

/// What `summarise` wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What happened, in one line, from the alert.
    pub headline: String,
    /// The causes, the headline's first: each a verified cause that explains the alert's
    /// symptom, with what it explains under it; with none, the unverified suspicions, strongest
    /// first.
    pub causes: Vec<Cause>,
    /// Symptoms the evidence shows that explain nothing by themselves (a crash loop, a metric
    /// step): context for the reader.
    pub observations: Vec<Cause>,
    /// With no cause: what still stands and says most (a symptom or a consequence), for the
    /// first line to name.
    #[serde(default)]
    pub lead: Option<String>,
    /// What could not be checked.
    pub missing: Vec<Missing>,
    /// Concrete next steps, per finding.
    pub next_steps: Vec<String>,
    /// Similar past incidents in this workspace.
    pub similar: Vec<PriorIncident>,
    /// Set for a heartbeat alert (it fires on purpose): what it means. Nothing was investigated.
    #[serde(default)]
    pub heartbeat: Option<String>,
    /// With no confirmed cause: the alert's own metric, re-run, is back (a verified recovery).
    /// The reply says so with the evidence and proposes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<Cause>,
    /// The one reversible action the headline's verified cause supports, if any
    /// ([`crate::propose`]). Not part of the text: the worker shows it as buttons when actions
    /// are enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
    /// The headline's verified root, as incident groups compare it ([`crate::root`]): an alert
    /// whose round finds an open group's root is linked to that group's analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<Root>,
}

impl Report {
    /// Every claim of every cause (and of what it explains) and observation, in report order.
    pub fn claims(&self) -> impl Iterator<Item = &Claim> {
        self.causes
            .iter()
            .flat_map(Cause::with_evidence)
            .chain(&self.recovered)
            .chain(&self.observations)
            .flat_map(|c| c.claims.iter())
    }
}

/// A suspected cause or an observation, with the detector that supports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// One line: what the evidence shows.
    pub statement: String,
    /// One or two sentences of detail.
    pub detail: String,
    /// The supporting detector; `None` for a cause no detector found (a model's hypothesis).
    pub detector: Option<Kind>,
    pub confidence: Confidence,
    /// The report presents this as confirmed. The judge accepts that only when a verified
    /// finding of `detector` backs it.
    pub confirmed: bool,
    /// The lines that show it.
    pub claims: Vec<Claim>,
    /// What it explains, shown under it: evidence for it, not causes of their own (the exit
    /// code 78 a missing setting explains).
    #[serde(default)]
    pub explains: Vec<Cause>,
    /// What led to it without being a cause (a scale-up before a connection limit).
    #[serde(default)]
    pub led_by: Vec<Cause>,
}

impl Cause {
    /// This cause, then what it explains and what led to it.
    pub fn with_evidence(&self) -> impl Iterator<Item = &Cause> {
        std::iter::once(self)
            .chain(&self.explains)
            .chain(&self.led_by)
    }
}

/// One claim: a statement, the evidence it cites and a verbatim quote from that evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub statement: String,
    /// The evidence cited. The quote must occur in each of them.
    pub evidence: Vec<EvidenceId>,
    /// Verbatim (after whitespace/case normalisation) from the cited evidence; at most a
    /// detector's quote ([`crate::detectors::text::quote_line`]): evidence text is untrusted,
    /// so quotes stay short and the post never pastes whole excerpts.
    pub quote: String,
}

/// The judge's decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Post the report (true) or ask the thread (false).
    pub grounded: bool,
    /// Claims that failed a check, with why.
    pub unsupported_claims: Vec<UnsupportedClaim>,
    /// Up to three questions the judge raises about its doubts (the `ask` node adds the ones
    /// about missing evidence).
    pub questions: Vec<Question>,
    /// Why, in one sentence.
    pub reason: String,
}

/// A claim the judge rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsupportedClaim {
    pub statement: String,
    pub reason: String,
}
