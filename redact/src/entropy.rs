//! Long random-looking tokens no other rule named: a run of 32 or more base64/base64url
//! characters whose characters are random enough, or more than 40 hex digits, is redacted
//! unless it is one of the identifiers [`crate::readable`] keeps (commits, trace ids, UUIDs,
//! Kubernetes names, digests, paths). Runs last, so a secret a named rule recognised is already
//! `[REDACTED]` and its key name kept.

use std::sync::LazyLock;

use regex::Regex;

use crate::readable::{self, CONTEXT_CHARS};
use crate::tally::Tally;
use crate::value::shannon_entropy;
use crate::{Kind, REDACTED};

/// Shortest run judged.
const MIN_LEN: usize = 32;
/// Bits per character a base64 run must reach: random base64 averages 4.6 over 32 characters
/// (1 in 2,000 falls below 4.0) and 4.8 over 40 (none below 4.3).
const BASE64_BITS: f64 = 4.0;
/// Bits per character a hex run must reach: random hex averages 3.75 over 48 digits, none of
/// 2,000 below 3.4; a run of few distinct digits (`000000…`, `abab…`) stays.
const HEX_BITS: f64 = 3.0;

/// A maximal run of base64 or base64url characters, padding included, not starting with `/`
/// (the slashes of `containerd://…` and of a path's root belong to what comes before).
static RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+_-][A-Za-z0-9+/_-]*=*").expect("static regex"));

pub(crate) fn redact(text: &str, tally: &mut Tally) -> String {
    let public = readable::public_blocks(text);
    tally.replace(Kind::HighEntropy, &RUN, text, |caps| {
        let run = caps.get(0)?;
        if public.iter().any(|block| block.contains(&run.start())) {
            return None;
        }
        let before = tail(&text[..run.start()], CONTEXT_CHARS);
        is_random(run.as_str(), before).then(|| REDACTED.to_string())
    })
}

/// The last `chars` characters of `text`.
fn tail(text: &str, chars: usize) -> &str {
    match text.char_indices().rev().nth(chars.saturating_sub(1)) {
        Some((at, _)) => &text[at..],
        None => text,
    }
}

/// Whether a run is a random token rather than an identifier or words.
fn is_random(run: &str, before: &str) -> bool {
    let token = run.trim_end_matches('=');
    if token.len() < MIN_LEN || readable::stays_readable(token, before) {
        return false;
    }
    if readable::is_hex(token) {
        return shannon_entropy(token) >= HEX_BITS;
    }
    let upper = token.bytes().any(|b| b.is_ascii_uppercase());
    let lower = token.bytes().any(|b| b.is_ascii_lowercase());
    let digit = token.bytes().any(|b| b.is_ascii_digit());
    if upper && lower {
        return shannon_entropy(token) >= BASE64_BITS;
    }
    // Lower case only (upper-case ids stay readable): a name or an id made of parts
    // (`dop_v1_<hex>`, `build_2026_03_14`); one of its parts may still be a random token.
    token
        .split(['-', '_', '/', '+'])
        .any(|part| part != token && is_random(part, ""))
        || (digit && !token.contains(['-', '_', '/', '+']) && shannon_entropy(token) >= BASE64_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> String {
        redact(text, &mut Tally::default())
    }

    #[test]
    fn random_tokens_are_redacted() {
        for (input, expected) in [
            (
                "rotated, new value 9vQ2mX7LkP4wR8tZ1bN6cJ3hF5dS0aYe",
                "rotated, new value [REDACTED]",
            ),
            (
                "HMAC: 'kF3n+Vq9/Lw2ZtR8bX1cYp6sH4mJ0dGa7eUo5iNq='",
                "HMAC: '[REDACTED]'",
            ),
            (
                "new value is 3c6e0b8a9c15224a8228b9a98ca1531d6cde4f7bb2a1d0c3",
                "new value is [REDACTED]",
            ),
            (
                "key dop_v1_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7",
                "key [REDACTED]",
            ),
        ] {
            assert_eq!(redacted(input), expected);
        }
    }

    #[test]
    fn a_64_hex_run_is_a_secret_unless_named_a_digest_or_container() {
        let hex = "141c253bc4c3fd0a201d32dc1f493bcf3fff003b6df416dea4f41046e0f37d47";
        assert_eq!(
            redacted(&format!("signing value {hex}")),
            "signing value [REDACTED]"
        );
        for kept in [
            format!("busybox@sha256:{hex}"),
            format!("Container ID:  containerd://{hex}"),
            format!("sha256sum orders.csv: {hex}  orders.csv"),
        ] {
            assert_eq!(redacted(&kept), kept);
        }
    }

    #[test]
    fn identifiers_stay() {
        for kept in [
            "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
            "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "uid: 916704eb-fc7f-4d6f-825f-5ad94f5a116e",
            "payments-api-5d8f7c9b4-x7k2p_payments(5c1e0a52-8f57-4c43-9b47-0c2a8f7d1e11)",
            "kube_deployment_status_replicas_unavailable{namespace=\"payments\"}",
            "/subscriptions/5c1e0a52-8f57-4c43-9b47-0c2a8f7d1e11/resourceGroups/rg-prod-weu/providers/Microsoft",
            "https://acme.slack.com/archives/C024BE91L/p1773483328123456",
            "dd.trace_id=4832659938724756123",
            "AbstractAutowireCapableBeanFactory",
        ] {
            assert_eq!(redacted(kept), kept);
        }
    }

    #[test]
    fn tail_counts_characters_not_bytes() {
        assert_eq!(tail("café", 2), "fé");
        assert_eq!(tail("ab", 5), "ab");
    }
}
