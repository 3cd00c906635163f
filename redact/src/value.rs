//! What a value looks like: a placeholder (`${DB_PASSWORD}`, `<none>`), machine-generated, a
//! password, and how random its characters are. The rules that find a value by its key or its
//! sentence ask these before they redact it.

use std::collections::HashMap;

use crate::REDACTED;

/// A reference to a secret or an empty stand-in, not a secret.
pub(crate) fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.is_empty()
        || value.contains(REDACTED)
        || value.chars().all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
        || matches!(
            lower.as_str(),
            "true"
                | "false"
                | "null"
                | "nil"
                | "none"
                | "<none>"
                | "<nil>"
                | "<unset>"
                | "[redacted]"
                | "<redacted>"
        )
        || is_reference(value)
        // `<your-api-key>`, and the first word of `<redacted by me>`: a closed bracket, or words.
        || (value.starts_with('<')
            && (value.ends_with('>') || value[1..].chars().all(|c| c.is_ascii_alphabetic())))
}

/// `${DB_PASSWORD}` or `$DB_PASSWORD` references a secret, it is not one (`$ecr3t` is).
fn is_reference(value: &str) -> bool {
    // A key's value may be cut before the closing brace.
    let name = value
        .strip_prefix("${")
        .map(|rest| rest.strip_suffix('}').unwrap_or(rest))
        .or_else(|| value.strip_prefix('$'));
    name.is_some_and(|name| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// Long and mixed (letters and digits), or long with high character entropy.
pub(crate) fn looks_machine_generated(value: &str) -> bool {
    let len = value.chars().count();
    let has_digit = value.chars().any(|c| c.is_ascii_digit());
    let has_alpha = value.chars().any(|c| c.is_ascii_alphabetic());
    (len >= 12 && has_digit && has_alpha) || (len >= 20 && shannon_entropy(value) >= 3.5)
}

/// Could be a password someone typed: six characters or more, and not a plain word — it has a
/// digit, a symbol, or capitals inside it ("Hunter2xyz", "P@ss", "correctHorse"), or it is long.
/// "wrong", "expired", "Rotated" and "db-credentials" are not.
pub(crate) fn looks_like_password(value: &str) -> bool {
    let len = value.chars().count();
    if len < 6 || is_placeholder(value) {
        return false;
    }
    let has_digit = value.chars().any(|c| c.is_ascii_digit());
    let has_symbol = value.chars().any(|c| "!@#%^&*+=?~$".contains(c));
    let inner_capital = value.chars().skip(1).any(|c| c.is_ascii_uppercase())
        && value.chars().any(|c| c.is_ascii_lowercase());
    let plain_letters = value.chars().all(|c| c.is_ascii_alphabetic());
    has_digit || has_symbol || inner_capital || (plain_letters && len >= 16)
}

/// A lower-case name with separators: a Kubernetes object, a Secret's name ("payments-db-v2").
pub(crate) fn is_lowercase_name(value: &str) -> bool {
    value.contains(['-', '.', '_'])
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_'))
}

/// Bits per character of the value's character distribution.
pub(crate) fn shannon_entropy(value: &str) -> f64 {
    let mut counts: HashMap<char, f64> = HashMap::new();
    let mut total = 0f64;
    for c in value.chars() {
        *counts.entry(c).or_default() += 1.0;
        total += 1.0;
    }
    if total == 0.0 {
        return 0.0;
    }
    counts
        .values()
        .map(|n| {
            let p = n / total;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_told_from_words() {
        for value in [
            "Hunter2xyz",
            "P@ssw0rd",
            "correctHorse",
            "123456",
            "s3cr3t!",
            "correcthorsebattery",
            // Look like references or placeholders, but are passwords.
            "$ecr3tPass",
            "<Pw9x!",
        ] {
            assert!(looks_like_password(value), "{value}");
        }
        for value in [
            "wrong",
            "expired",
            "Rotated",
            "db-credentials",
            "invalid",
            "${PW}",
            "$DB_PASSWORD",
            "******",
            "<your-password>",
            "<redacted",
        ] {
            assert!(!looks_like_password(value), "{value}");
        }
    }

    #[test]
    fn entropy_of_a_repeated_character_is_zero_and_of_distinct_ones_is_their_log() {
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
        assert_eq!(shannon_entropy(""), 0.0);
    }
}
