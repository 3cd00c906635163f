//! Times in scenarios: relative to the alert (`-10m`, `+30s`, `-1h30m`, `-2d`, `0`) or absolute
//! (RFC 3339). Relative times keep a scenario valid whenever it is run: the world is laid out
//! around the alert, and the alert around "now".

use std::fmt;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A time given relative to a base (the alert time) or absolutely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelTime {
    /// Offset from the base.
    Offset(Duration),
    /// A fixed instant.
    Absolute(DateTime<Utc>),
}

impl RelTime {
    /// The instant, given the base it is relative to.
    pub fn at(self, base: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            RelTime::Offset(offset) => base + offset,
            RelTime::Absolute(at) => at,
        }
    }

    /// Parses `-10m`, `+1h30m`, `45s`, `-2d`, `0`, or an RFC 3339 time.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(at) = DateTime::parse_from_rfc3339(text) {
            return Ok(RelTime::Absolute(at.with_timezone(&Utc)));
        }
        parse_offset(text).map(RelTime::Offset).ok_or_else(|| {
            format!(
                "`{text}` is not a time: use an offset from the alert like -10m, +30s, -1h30m, -2d, 0, or RFC 3339"
            )
        })
    }
}

/// `-1h30m` → −5400 s. Units: d, h, m, s, ms.
pub fn parse_offset(text: &str) -> Option<Duration> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'-' => (-1, &text[1..]),
        b'+' => (1, &text[1..]),
        _ => (1, text),
    };
    if rest == "0" {
        return Some(Duration::zero());
    }
    let mut total = Duration::zero();
    let mut number = String::new();
    let mut chars = rest.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let value: i64 = number.parse().ok()?;
        number.clear();
        let unit = match c {
            'd' => Duration::days(value),
            'h' => Duration::hours(value),
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                Duration::milliseconds(value)
            }
            'm' => Duration::minutes(value),
            's' => Duration::seconds(value),
            _ => return None,
        };
        total += unit;
        any = true;
    }
    if !number.is_empty() || !any {
        return None;
    }
    Some(total * sign)
}

impl fmt::Display for RelTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelTime::Absolute(at) => write!(f, "{}", at.to_rfc3339()),
            RelTime::Offset(offset) => {
                let secs = offset.num_seconds();
                let sign = if secs < 0 { "-" } else { "+" };
                write!(f, "{sign}{}s", secs.abs())
            }
        }
    }
}

impl<'de> Deserialize<'de> for RelTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(i64),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Text(text) => RelTime::parse(&text).map_err(serde::de::Error::custom),
            Raw::Number(0) => Ok(RelTime::Offset(Duration::zero())),
            Raw::Number(n) => Err(serde::de::Error::custom(format!(
                "`{n}` is not a time: write an offset with a unit, like -{}m",
                n.abs()
            ))),
        }
    }
}

impl Serialize for RelTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn parses_offsets_and_absolute_times() {
        let base = Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap();
        let cases = [
            ("-10m", "2025-03-01T11:50:00+00:00"),
            ("+30s", "2025-03-01T12:00:30+00:00"),
            ("-1h30m", "2025-03-01T10:30:00+00:00"),
            ("-2d", "2025-02-27T12:00:00+00:00"),
            ("0", "2025-03-01T12:00:00+00:00"),
            ("1500ms", "2025-03-01T12:00:01.500+00:00"),
            ("2024-12-31T23:00:00Z", "2024-12-31T23:00:00+00:00"),
        ];
        for (text, expected) in cases {
            assert_eq!(
                RelTime::parse(text).unwrap().at(base).to_rfc3339(),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_a_time() {
        for bad in ["", "-", "10", "-10x", "m", "-10m5", "yesterday"] {
            assert!(RelTime::parse(bad).is_err(), "{bad:?}");
        }
    }
}
