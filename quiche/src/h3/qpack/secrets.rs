//! Which field lines are secrets, and how far the encoder may index them (RFC 9204 §7.1).
//!
//! A probe of the dynamic table confirms or refutes a guess of a whole field line, never a
//! part of it (§7.1.1), so what protects a secret in the table is its value's entropy: a
//! long value cannot be guessed, a short one can (§7.1.3, RFC 7541 §7.1.3). One rule serves
//! every secret name: values shorter than [`MIN_INDEXED_SECRET`] bytes go out as never-indexed
//! literals; longer ones may be inserted and referenced like any other line. For credentials
//! (`authorization`, `proxy-authorization`), of which a connection legitimately carries one or
//! two, at most [`MAX_CREDENTIAL_VALUES`] distinct values are ever inserted per connection;
//! any further value goes out never-indexed: the penalty for many values of one name that
//! §7.1.2 suggests, so that whoever can make us send chosen values cannot fill the table with
//! them. Cookies are not capped: a browser's cookie line changes with every Set-Cookie (19
//! distinct long values in one connection of the `shop` corpus), and capping them would send
//! those lines in full. `set-cookie` values are never indexed: each one is a new secret.
//!
//! The HTTP/3 API (`h3::Header`, as quiche's) has no way to mark a field as sensitive, so these
//! names are the only secrets the encoder knows.

/// Values of secret names shorter than this are guessable, so never indexed.
pub const MIN_INDEXED_SECRET: usize = 20;

/// Distinct values of one credential name inserted per connection, at most.
pub const MAX_CREDENTIAL_VALUES: usize = 4;

/// How the values of a secret name may be indexed.
#[derive(Clone, Copy)]
struct Rule {
    /// Shorter values go out as never-indexed literals.
    min_indexed: usize,
    /// Distinct values inserted per connection, at most (`None`: no cap).
    max_values: Option<usize>,
    /// Index into `Secrets::indexed` of the name's record (for capped names).
    slot: usize,
}

/// The rule for `name`, if its values are secrets.
fn rule(name: &[u8]) -> Option<Rule> {
    let capped = |slot| Rule {
        min_indexed: MIN_INDEXED_SECRET,
        max_values: Some(MAX_CREDENTIAL_VALUES),
        slot,
    };
    match name {
        b"authorization" => Some(capped(0)),
        b"proxy-authorization" => Some(capped(1)),
        b"cookie" => Some(Rule {
            min_indexed: MIN_INDEXED_SECRET,
            max_values: None,
            slot: 0,
        }),
        b"set-cookie" => Some(Rule {
            min_indexed: usize::MAX,
            max_values: None,
            slot: 0,
        }),
        _ => None,
    }
}

/// The encoder's record of the credential values it inserted (per connection).
#[derive(Default)]
pub struct Secrets {
    /// Per capped name, the distinct values inserted (at most [`MAX_CREDENTIAL_VALUES`] each,
    /// each no larger than an entry the table can hold). Kept whole, not hashed: an unkeyed
    /// hash would let chosen values collide with ones already counted and pass the cap.
    indexed: [Vec<Vec<u8>>; 2],
}

impl Secrets {
    /// Whether a field line must go out as a never-indexed literal and stay out of the table:
    /// a secret's short value, or a credential value beyond the cap.
    pub fn never_indexed(&self, name: &[u8], value: &[u8]) -> bool {
        let Some(rule) = rule(name) else {
            return false;
        };
        if value.len() < rule.min_indexed {
            return true;
        }
        match rule.max_values {
            Some(max) => {
                let known = &self.indexed[rule.slot];
                known.len() >= max && !known.iter().any(|v| v == value)
            }
            None => false,
        }
    }

    /// A line was inserted into the dynamic table: a credential value counts against the cap.
    pub fn inserted(&mut self, name: &[u8], value: &[u8]) {
        let Some(Rule {
            max_values: Some(max),
            slot,
            ..
        }) = rule(name)
        else {
            return;
        };
        let known = &mut self.indexed[slot];
        if known.len() < max && !known.iter().any(|v| v == value) {
            known.push(value.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_of_secret_names_are_never_indexed() {
        let s = Secrets::default();
        for name in ["authorization", "proxy-authorization", "cookie"] {
            assert!(s.never_indexed(name.as_bytes(), b"Bearer 0123456789"));
            assert!(!s.never_indexed(name.as_bytes(), b"Bearer 0123456789abcdef"));
        }
        assert!(s.never_indexed(b"set-cookie", &[b'a'; 200]));
        assert!(!s.never_indexed(b"x-token", b"short"));
    }

    #[test]
    fn credentials_beyond_the_cap_are_never_indexed() {
        let mut s = Secrets::default();
        let value = |i: usize| format!("Bearer token-number-{i:04}").into_bytes();
        for i in 0..MAX_CREDENTIAL_VALUES {
            assert!(!s.never_indexed(b"authorization", &value(i)));
            s.inserted(b"authorization", &value(i));
            // A value inserted again (after its eviction) does not count twice.
            s.inserted(b"authorization", &value(i));
        }
        let next = value(MAX_CREDENTIAL_VALUES);
        assert!(s.never_indexed(b"authorization", &next));
        for i in 0..MAX_CREDENTIAL_VALUES {
            assert!(!s.never_indexed(b"authorization", &value(i)), "{i}");
        }
        // Each credential name has its own cap; cookies have none.
        assert!(!s.never_indexed(b"proxy-authorization", &next));
        for i in 0..100 {
            s.inserted(b"cookie", &value(i));
        }
        assert!(!s.never_indexed(b"cookie", &next));
    }
}
