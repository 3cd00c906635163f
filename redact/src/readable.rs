//! What stays readable although it looks random: the identifiers an investigation follows from
//! one tool answer to the next. A git commit (7–40 hex digits), a trace id (32) or span id (16),
//! a UUID (also behind a short prefix, `GPU-<uuid>`), a Kubernetes name with its pod-template
//! hash (`payments-api-5d8f7c9b4-x7k2p`), an image digest or container id (`sha256:` + 64 hex),
//! an id of upper-case letters and digits (AWS request ids), an SSH public key, a certificate or
//! public key block, and paths or identifiers made of words. The high-entropy rule
//! ([`crate::entropy`]) asks [`stays_readable`] before it redacts a token; named secrets (a key
//! name, a provider prefix) are redacted whatever they look like.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// Words that, just before a 64- or 128-hex-digit run, make it a digest, a fingerprint or an id.
const DIGEST_CONTEXT: &[&str] = &[
    "sha256",
    "sha-256",
    "sha512",
    "sha-512",
    "sha384",
    "digest",
    "checksum",
    "hash",
    "fingerprint",
    "container",
    "sandbox",
    "image",
    "layer",
    "blob",
    "manifest",
    "commit",
    "cri-o://",
    "docker://",
];

/// How far before a token [`DIGEST_CONTEXT`] is looked for, in characters.
pub(crate) const CONTEXT_CHARS: usize = 40;

/// Certificates and public keys: public by design, and evidence (an expired or re-keyed CA).
static PUBLIC_BLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN (?:[A-Z0-9 ]*CERTIFICATE|[A-Z0-9 ]*PUBLIC KEY)-----[\s\S]*?(?:-----END [A-Z0-9 ]*-----|\z)")
        .expect("static regex")
});

/// The base64 of an SSH public key's type name (`ssh-rsa`, `ssh-ed25519`, `ecdsa-sha2-…`,
/// `ssh-dss`), which every OpenSSH public key starts with.
const SSH_PUBLIC_KEY_PREFIXES: &[&str] = &[
    "AAAAB3NzaC1yc2E",
    "AAAAC3NzaC1lZDI1NTE5",
    "AAAAE2VjZHNhLXNoYTItbmlzdHA",
    "AAAAB3NzaC1kc3M",
];

/// Where `text` holds a certificate or a public key block; tokens inside stay.
pub(crate) fn public_blocks(text: &str) -> Vec<Range<usize>> {
    PUBLIC_BLOCK.find_iter(text).map(|m| m.range()).collect()
}

/// Whether `token` (a run of base64/base64url characters, trailing `=` removed) is an identifier
/// to keep; `before` is the text just before it (up to [`CONTEXT_CHARS`]).
pub(crate) fn stays_readable(token: &str, before: &str) -> bool {
    is_hex_id(token)
        || is_uuid(token)
        || is_prefixed_id(token)
        || is_digest(token, before)
        || is_kubernetes_name(token)
        || is_upper_case_id(token)
        || is_ssh_public_key(token)
        || is_path_or_words(token)
}

pub(crate) fn is_hex(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// 7 to 40 hex digits: an abbreviated or full git commit, a 16-digit span id, a 32-digit trace id.
fn is_hex_id(token: &str) -> bool {
    (7..=40).contains(&token.len()) && is_hex(token)
}

/// `8-4-4-4-12` hex digits, either case.
fn is_uuid(token: &str) -> bool {
    let groups: Vec<&str> = token.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && is_hex(group))
}

/// A short prefix before a UUID (`GPU-<uuid>`, `MIG-<uuid>`), or one to three capitals before
/// 32 hex digits (Twilio-style resource ids such as `MG…` and `PN…`; account and API key SIDs
/// are redacted by their own rule first).
fn is_prefixed_id(token: &str) -> bool {
    let uuid_behind_prefix = token.split_once('-').is_some_and(|(prefix, rest)| {
        (1..=8).contains(&prefix.len())
            && prefix.bytes().all(|b| b.is_ascii_alphanumeric())
            && is_uuid(rest)
    });
    let capitals = token.bytes().take_while(u8::is_ascii_uppercase).count();
    let capitals_before_hex =
        (1..=3).contains(&capitals) && token.len() - capitals == 32 && is_hex(&token[capitals..]);
    uuid_behind_prefix || capitals_before_hex
}

/// 64 or 128 hex digits after `sha256:` (an image digest) or a word that names a digest, a
/// container or an id (`containerd://…`, `Container ID:`, `checksum`, `host id:`).
fn is_digest(token: &str, before: &str) -> bool {
    if !(token.len() == 64 || token.len() == 128) || !is_hex(token) {
        return false;
    }
    let lower = before.to_ascii_lowercase();
    DIGEST_CONTEXT.iter().any(|word| lower.contains(word))
        || before
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| matches!(word, "id" | "ID" | "Id" | "ids" | "IDs") || word.ends_with("Id"))
}

/// Lower-case letters and digits in `-`-joined parts none of which is long: a Kubernetes object
/// name, generated suffixes included (`payments-api-5d8f7c9b4-x7k2p`, `tile-rollup-28501920-8vx6d`).
fn is_kubernetes_name(token: &str) -> bool {
    token
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && token.split('-').all(|part| part.len() < 32)
}

/// Upper-case letters and digits only (`-` and `_` allowed): request ids
/// (`8QJ2K0V6B5N1M4R7…`), constants (`KUBE_DEPLOYMENT_REPLICAS_MISMATCH`).
fn is_upper_case_id(token: &str) -> bool {
    token
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// An OpenSSH public key's base64 (a host key that changed is evidence).
fn is_ssh_public_key(token: &str) -> bool {
    SSH_PUBLIC_KEY_PREFIXES
        .iter()
        .any(|prefix| token.starts_with(prefix))
}

/// A path (`/var/lib/…`, `com/archives/C024BE91L/p17…`, `docker/<commit>/2024-09-19T10`) or an
/// identifier made of words (`ReplicaSetControllerReconcileLoop`): at least half of its
/// `/`-separated parts are words, or every part is a word or of one case; or, without `/`, at
/// least half of its characters are in words and at most a third of its letters are capitals
/// (random base64 has as many capitals as lower-case letters).
fn is_path_or_words(token: &str) -> bool {
    let parts: Vec<&str> = token.split('/').filter(|p| p.len() >= 2).collect();
    if parts.len() >= 2 {
        let words = parts.iter().filter(|p| is_word_part(p)).count();
        if words * 2 >= parts.len() || parts.iter().all(|p| is_word_part(p) || is_one_case(p)) {
            return true;
        }
    }
    let letters = token.bytes().filter(u8::is_ascii_alphabetic).count();
    let capitals = token.bytes().filter(u8::is_ascii_uppercase).count();
    word_chars(token) * 2 >= token.len() && capitals * 3 <= letters
}

/// No lower-case letters, or no capitals.
fn is_one_case(part: &str) -> bool {
    !part.bytes().any(|b| b.is_ascii_lowercase()) || !part.bytes().any(|b| b.is_ascii_uppercase())
}

/// A path segment made of words: `archives`, `payments-overview`, `Orders`, `v2`.
fn is_word_part(part: &str) -> bool {
    let lower_name = part.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && part.bytes().filter(u8::is_ascii_lowercase).count() >= 3;
    let capitalised = part.len() >= 3
        && part.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && part[1..].bytes().all(|b| b.is_ascii_lowercase());
    let version =
        part.starts_with('v') && part.len() > 1 && part[1..].bytes().all(|b| b.is_ascii_digit());
    lower_name || capitalised || version
}

/// Characters of `token` inside words: an optional capital and three or more lower-case letters.
fn word_chars(token: &str) -> usize {
    let bytes = token.as_bytes();
    let mut total = 0;
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i].is_ascii_uppercase() {
            i += 1;
        }
        let lower_start = i;
        while i < bytes.len() && bytes[i].is_ascii_lowercase() {
            i += 1;
        }
        if i - lower_start >= 3 {
            total += i - start;
        }
        if i == start {
            i += 1;
        } else if i == lower_start {
            // A capital not followed by lower-case letters: look again from the next character.
            i = start + 1;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_hashes_trace_and_span_ids_stay() {
        for token in [
            "3f9a2b1",                                  // short commit
            "9fceb02d0ae598e95dc970b74767f19372d61af8", // full commit
            "4bf92f3577b34da6a3ce929d0e0e4736",         // trace id
            "00f067aa0ba902b7",                         // span id
        ] {
            assert!(stays_readable(token, ""), "{token}");
        }
    }

    #[test]
    fn uuids_stay_in_either_case() {
        assert!(stays_readable("916704eb-fc7f-4d6f-825f-5ad94f5a116e", ""));
        assert!(stays_readable("916704EB-FC7F-4D6F-825F-5AD94F5A116E", ""));
        assert!(!is_uuid("916704eb-fc7f-4d6f-825f-5ad94f5a116"));
    }

    #[test]
    fn pod_names_with_their_template_hash_stay() {
        for token in [
            "payments-api-5d8f7c9b4-x7k2p",
            "tile-rollup-28501920-8vx6d",
            "gke-prod-default-pool-3f1c2a9b-x7k2",
            "pvc-916704eb-fc7f-4d6f-825f-5ad94f5a116e",
        ] {
            assert!(stays_readable(token, ""), "{token}");
        }
    }

    #[test]
    fn digests_and_container_ids_stay_only_where_they_are_named() {
        let hex64 = "141c253bc4c3fd0a201d32dc1f493bcf3fff003b6df416dea4f41046e0f37d47";
        assert!(stays_readable(hex64, "busybox@sha256:"));
        assert!(stays_readable(hex64, "Container ID:  containerd://"));
        assert!(!stays_readable(hex64, "the new signing value is "));
    }

    #[test]
    fn paths_and_word_identifiers_stay() {
        for token in [
            "/var/lib/kubelet/pods/916704eb/volumes",
            "com/archives/C024BE91L/p1773483328123456",
            "com/d/AbC123xYz/payments-overview",
            "ReplicaSetControllerReconcileLoop2",
        ] {
            assert!(stays_readable(token, ""), "{token}");
        }
    }

    #[test]
    fn prefixed_and_upper_case_ids_stay() {
        for token in [
            "GPU-6f2c8a14-93b7-4e21-b0d5-7a9c3e1f4b82",
            "MG5c1e9a07d3f24b8e9a61c2d0f7b3e418",
            "8QJ2K0V6B5N1M4R7T9C3F8H2L6P0S5D1G4J7K9Q3VV4KQNSO5AEMVJF66Q9ASUAAJG",
            "KUBE_DEPLOYMENT_REPLICAS_MISMATCH_FOR_LONG",
            "docker/98adf7bf6bb69b66ab95b761c9e5aadb0bb059a3/2024-09-19T10",
        ] {
            assert!(stays_readable(token, ""), "{token}");
        }
        let hex64 = "dd9025bab4ad464b049177c95eb6ebf374d3b3fd1af9251148b658df7ac2e3e8";
        assert!(stays_readable(hex64, "status code: 507, host id: "));
        assert!(stays_readable(hex64, "fingerprint: "));
    }

    #[test]
    fn ssh_public_keys_and_certificate_blocks_stay() {
        assert!(stays_readable(
            "AAAAC3NzaC1lZDI1NTE5AAAAIF9qVx2m8Lr0cT4kWb7yHn3JpQe6sDu1GzKa5oNf2XvR",
            "ssh-ed25519 "
        ));
        let text = "ca.crt: -----BEGIN CERTIFICATE-----\nMIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsF\n-----END CERTIFICATE-----\nnext";
        let blocks = public_blocks(text);
        assert_eq!(blocks.len(), 1);
        assert_eq!(&text[blocks[0].clone()], &text[8..text.len() - 5]);
    }

    #[test]
    fn random_base64_is_not_readable() {
        for token in [
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "Q2hhbmdlTWVQbGVhc2UgVGhpcyBJcyBSYW5kb20gRGF0YQ",
            "kQ3x9ZpL0vT7mW2yB8nR4sF6hJ1cA5dE",
            "oUoOHDmfrQdtlwGECCyvypkEzYlwubxs",
            "/+CWrWdhiC9+aEvpagpuk+X95GdJ2HRfOJvz7CJ/e5ADiXWiddoDNiYpf8F5p00K",
        ] {
            assert!(!stays_readable(token, ""), "{token}");
        }
    }
}
