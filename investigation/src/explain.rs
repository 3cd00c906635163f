//! What explains what: the round's findings linked by their kinds' typed "explains" rules
//! (`Payload::explains`: an OOM kill explains its container's restarts; a lost node explains
//! the pods Pending on its taints), and the cause a reply may headline.
//!
//! A **chain** starts at a *root*: a current, detector-verified cause that explains the alert's
//! symptom — its kind accounts for the symptom, or it explains (through any number of links)
//! a finding whose kind does — and that no other such cause explains. Everything the root
//! explains is its evidence, shown under it (a crash line and the exit code it explains are one
//! story, told once); findings that led to it without being causes themselves (a scale-up
//! before a connection limit) are shown with it. The chain's confidence is the lowest along the
//! path from the root to the symptom.
//!
//! A symptom, a consequence or context never roots a chain: with no root, the reply says no
//! cause is confirmed and names the strongest lead.

use std::collections::VecDeque;

use crate::detectors::{Confidence, Finding, Role, Standing, Symptom};

/// Links followed from a root (a chain longer than this explains too little to trust).
const MAX_DEPTH: usize = 6;

/// One cause and what it explains.
#[derive(Debug, Clone)]
pub struct Chain<'a> {
    pub cause: &'a Finding,
    /// What the cause explains, directly or through one another, nearest first.
    pub explained: Vec<&'a Finding>,
    /// Current findings that explain the cause without being causes (what led to it).
    pub led_by: Vec<&'a Finding>,
    /// The finding through which the cause reaches the alert's symptom: the first it explains
    /// that accounts for the symptom, when the cause's own kind does not; else a consequence it
    /// explains that does (an autoscaler at its maximum, behind rising load). The headline
    /// names it after the cause.
    pub via: Option<&'a Finding>,
    /// The lowest confidence on the path from the cause to the symptom.
    pub confidence: Confidence,
}

impl Chain<'_> {
    /// Every finding of the chain, the cause first.
    pub fn members(&self) -> Vec<&Finding> {
        std::iter::once(self.cause)
            .chain(self.explained.iter().copied())
            .chain(self.led_by.iter().copied())
            .collect()
    }
}

/// The findings of a round, read as a story.
#[derive(Debug, Clone, Default)]
pub struct Explanation<'a> {
    /// The chains, the headline's first.
    pub chains: Vec<Chain<'a>>,
    /// With no chain: the strongest lead (a cause that heads no chain, else a symptom or
    /// consequence).
    pub lead: Option<&'a Finding>,
    /// Findings in no chain, in rank order.
    pub rest: Vec<&'a Finding>,
}

impl<'a> Explanation<'a> {
    /// The headline's chain, if there is one.
    pub fn headline(&self) -> Option<&Chain<'a>> {
        self.chains.first()
    }
}

/// Links `findings` (ranked, as the detectors return them) and picks the chains that explain
/// `symptom`.
pub fn explain(findings: &[Finding], symptom: Symptom) -> Explanation<'_> {
    let current = |f: &Finding| f.standing == Standing::Current;
    let edges: Vec<Vec<usize>> = findings
        .iter()
        .map(|cause| {
            if !current(cause) {
                return Vec::new();
            }
            findings
                .iter()
                .enumerate()
                .filter(|(_, effect)| current(effect) && cause.explains(effect))
                .map(|(j, _)| j)
                .collect()
        })
        .collect();
    let candidate = |i: usize| findings[i].is_verified_cause();
    let accounts = |i: usize| findings[i].kind().spec().accounts_for(symptom);
    // Paths from each candidate: (node, parent), breadth first, bounded.
    let reach = |from: usize| -> Vec<(usize, Option<usize>)> {
        let mut seen = vec![(from, None)];
        let mut queue = VecDeque::from([(from, 0usize)]);
        while let Some((node, depth)) = queue.pop_front() {
            if depth == MAX_DEPTH {
                continue;
            }
            for &next in &edges[node] {
                if !seen.iter().any(|(n, _)| *n == next) {
                    seen.push((next, Some(node)));
                    queue.push_back((next, depth + 1));
                }
            }
        }
        seen
    };
    let reaches: Vec<Vec<(usize, Option<usize>)>> = (0..findings.len())
        .map(|i| if candidate(i) { reach(i) } else { Vec::new() })
        .collect();
    let explains_symptom = |i: usize| reaches[i].iter().any(|(n, _)| accounts(*n));
    let reached_by = |i: usize, c: usize| c != i && reaches[c].iter().any(|(n, _)| *n == i);
    let roots: Vec<usize> = (0..findings.len())
        .filter(|&i| candidate(i) && explains_symptom(i))
        .filter(|&i| {
            // Not explained by another candidate — unless they explain each other, when the
            // higher-ranked one roots.
            (0..findings.len())
                .filter(|&c| candidate(c) && reached_by(i, c))
                .all(|c| reached_by(c, i) && c > i)
        })
        .collect();

    let mut in_chain = vec![false; findings.len()];
    let mut chains = Vec::new();
    // Every root gets its chain (a report lists the first few): a root left out would be told
    // as a finding the causes do not explain.
    for &root in &roots {
        let paths = &reaches[root];
        let explained: Vec<&Finding> = paths
            .iter()
            .skip(1)
            .filter(|(n, _)| !in_chain[*n])
            .map(|(n, _)| &findings[*n])
            .collect();
        let led_by: Vec<&Finding> = (0..findings.len())
            .filter(|&j| {
                !candidate(j)
                    && !in_chain[j]
                    && edges[j].contains(&root)
                    && findings[j].role() != Role::Cause
            })
            .map(|j| &findings[j])
            .collect();
        let via = if accounts(root) {
            paths
                .iter()
                .skip(1)
                .find(|(n, _)| accounts(*n) && findings[*n].role() == Role::Consequence)
                .map(|(n, _)| *n)
        } else {
            paths.iter().find(|(n, _)| accounts(*n)).map(|(n, _)| *n)
        };
        // A cause that accounts for the symptom itself stands on its own confidence; one that
        // reaches it through other findings, on the weakest of them.
        let confidence = match via.filter(|_| !accounts(root)) {
            Some(target) => path_confidence(findings, paths, target),
            None => findings[root].confidence,
        };
        for f in std::iter::once(&findings[root])
            .chain(explained.iter().copied())
            .chain(led_by.iter().copied())
        {
            if let Some(i) = findings.iter().position(|g| std::ptr::eq(g, f)) {
                in_chain[i] = true;
            }
        }
        chains.push(Chain {
            cause: &findings[root],
            explained,
            led_by,
            via: via.map(|i| &findings[i]),
            confidence,
        });
    }
    let rest: Vec<&Finding> = findings
        .iter()
        .enumerate()
        .filter(|(i, _)| !in_chain[*i])
        .map(|(_, f)| f)
        .collect();
    let lead = if chains.is_empty() {
        strongest_lead(&rest)
    } else {
        None
    };
    Explanation { chains, lead, rest }
}

/// The lowest confidence on the path from a chain's root to `target`.
fn path_confidence(
    findings: &[Finding],
    paths: &[(usize, Option<usize>)],
    target: usize,
) -> Confidence {
    let mut lowest = findings[target].confidence;
    let mut node = target;
    // Bounded by the path's length: each step goes to a parent found earlier.
    for _ in 0..paths.len() {
        let Some((_, Some(parent))) = paths.iter().find(|(n, _)| *n == node) else {
            break;
        };
        lowest = lowest.min(findings[*parent].confidence);
        node = *parent;
    }
    lowest
}

/// The strongest lead among findings no chain holds: a cause (a suspect, or a verified cause
/// that does not reach the alert's symptom), else a symptom or consequence, by rank. A finding
/// that no longer stands plays no part ([`Finding::role`]), so it is never the lead.
fn strongest_lead<'a>(rest: &[&'a Finding]) -> Option<&'a Finding> {
    let with_role = |wanted: &[Role]| rest.iter().find(|f| wanted.contains(&f.role())).copied();
    with_role(&[Role::Cause]).or_else(|| with_role(&[Role::Symptom, Role::Consequence]))
}

#[cfg(test)]
mod tests;
