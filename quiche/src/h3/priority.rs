//! Extensible priorities (RFC 9218): urgency 0 (first) to 7 and the incremental flag, from the
//! `priority` header field or a PRIORITY_UPDATE frame's Priority Field Value.

use super::{Error, Result};

/// The default urgency (RFC 9218 §4.1).
pub const PRIORITY_URGENCY_DEFAULT: u8 = 3;
/// The lowest urgency (RFC 9218 §4.1).
pub const PRIORITY_URGENCY_LOWEST: u8 = 7;

/// A request's or response's priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    urgency: u8,
    incremental: bool,
}

impl Default for Priority {
    fn default() -> Self {
        Priority {
            urgency: PRIORITY_URGENCY_DEFAULT,
            incremental: false,
        }
    }
}

impl Priority {
    /// A priority; urgencies above 7 are taken as 7.
    pub const fn new(urgency: u8, incremental: bool) -> Self {
        let urgency = if urgency > PRIORITY_URGENCY_LOWEST {
            PRIORITY_URGENCY_LOWEST
        } else {
            urgency
        };
        Priority {
            urgency,
            incremental,
        }
    }

    /// The urgency, 0 (first) to 7.
    pub fn urgency(&self) -> u8 {
        self.urgency
    }

    /// Whether the response can be processed incrementally.
    pub fn incremental(&self) -> bool {
        self.incremental
    }

    /// The Priority Field Value (a Structured Fields dictionary, RFC 9218 §4).
    pub fn to_field_value(&self) -> Vec<u8> {
        let mut v = format!("u={}", self.urgency);
        if self.incremental {
            v.push_str(", i");
        }
        v.into_bytes()
    }
}

impl TryFrom<&[u8]> for Priority {
    type Error = Error;

    /// Parses a Priority Field Value: `u=N` and `i` (or `i=?1` / `i=?0`); unknown members and
    /// out-of-range urgencies are ignored (RFC 9218 §4). Bytes that are not a dictionary are
    /// `Error::Done`.
    fn try_from(value: &[u8]) -> Result<Self> {
        let text = std::str::from_utf8(value).map_err(|_| Error::Done)?;
        let mut p = Priority::default();
        for member in text.split(',') {
            let member = member.trim_matches([' ', '\t']);
            if member.is_empty() {
                continue;
            }
            let (key, val) = match member.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (member.split(';').next().unwrap_or(""), None),
            };
            let key_ok = key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.*".contains(&b));
            if key.is_empty() || !key_ok {
                return Err(Error::Done);
            }
            match (key, val) {
                ("u", Some(v)) => {
                    let v = v.split(';').next().unwrap_or("");
                    match v.parse::<u8>() {
                        Ok(u) if u <= PRIORITY_URGENCY_LOWEST => p.urgency = u,
                        Ok(_) => {}
                        Err(_) if v.parse::<i64>().is_ok() => {}
                        Err(_) => return Err(Error::Done),
                    }
                }
                ("i", None) => p.incremental = true,
                ("i", Some(v)) => match v.split(';').next().unwrap_or("") {
                    "?1" => p.incremental = true,
                    "?0" => p.incremental = false,
                    _ => {}
                },
                _ => {}
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Priority> {
        Priority::try_from(s.as_bytes())
    }

    #[test]
    fn priority_field_values() {
        assert_eq!(parse(""), Ok(Priority::default()));
        assert_eq!(parse("u=0"), Ok(Priority::new(0, false)));
        assert_eq!(parse("u=5, i"), Ok(Priority::new(5, true)));
        assert_eq!(parse("i=?0, u=1"), Ok(Priority::new(1, false)));
        assert_eq!(
            parse("u=9"),
            Ok(Priority::default()),
            "out of range: ignored"
        );
        assert_eq!(parse("u=2, x=foo, i=?1"), Ok(Priority::new(2, true)));
        assert_eq!(parse("U=2"), Err(Error::Done));
        assert_eq!(parse("u=abc"), Err(Error::Done));
        assert_eq!(Priority::new(1, true).to_field_value(), b"u=1, i");
        assert_eq!(Priority::new(200, false).urgency(), 7);
    }
}
