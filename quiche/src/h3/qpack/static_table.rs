//! The QPACK static table (RFC 9204 Appendix A) and the lookups the encoder needs.

/// The static table, index by index (RFC 9204 Appendix A).
pub const STATIC_TABLE: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// Where a field line is in the static table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticMatch {
    /// Name and value match the entry at this index.
    Exact(u64),
    /// Only the name matches the entry at this index (the first one with that name).
    Name(u64),
}

/// Slots of [`NAMES`]: a power of two, about four times the distinct names.
const SLOTS: usize = 256;

/// No entry (in [`NAMES`] and [`NEXT`]).
const NONE: u8 = u8::MAX;

/// Where a name hashes to in [`NAMES`].
const fn slot(name: &[u8]) -> usize {
    let n = name.len();
    if n == 0 {
        return 0;
    }
    (n * 31 + name[n / 2] as usize * 7 + name[n - 1] as usize) % SLOTS
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// An open-addressing table (linear probing) of the first index of each distinct name, built
/// at compile time, so that a lookup compares one or two names instead of scanning the table.
const NAMES: [u8; SLOTS] = {
    let mut names = [NONE; SLOTS];
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        let name = STATIC_TABLE[i].0;
        let mut s = slot(name);
        loop {
            if names[s] == NONE {
                names[s] = i as u8;
                break;
            }
            if same(STATIC_TABLE[names[s] as usize].0, name) {
                break;
            }
            s = (s + 1) % SLOTS;
        }
        i += 1;
    }
    names
};

/// For each index, the next index with the same name.
const NEXT: [u8; 99] = {
    let mut next = [NONE; 99];
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        let mut j = i + 1;
        while j < STATIC_TABLE.len() {
            if same(STATIC_TABLE[i].0, STATIC_TABLE[j].0) {
                next[i] = j as u8;
                break;
            }
            j += 1;
        }
        i += 1;
    }
    next
};

/// Looks `name` and `value` up: an exact match if there is one, else a name match.
pub fn find(name: &[u8], value: &[u8]) -> Option<StaticMatch> {
    let mut s = slot(name);
    let first = loop {
        let i = NAMES[s];
        if i == NONE {
            return None;
        }
        if STATIC_TABLE[usize::from(i)].0 == name {
            break i;
        }
        s = (s + 1) % SLOTS;
    };
    let mut i = first;
    while i != NONE {
        if STATIC_TABLE[usize::from(i)].1 == value {
            return Some(StaticMatch::Exact(u64::from(i)));
        }
        i = NEXT[usize::from(i)];
    }
    Some(StaticMatch::Name(u64::from(first)))
}

/// The entry at `index`, if there is one.
pub fn get(index: u64) -> Option<(&'static [u8], &'static [u8])> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC_TABLE.get(i))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(get(0), Some((&b":authority"[..], &b""[..])));
        assert_eq!(get(98), Some((&b"x-frame-options"[..], &b"sameorigin"[..])));
        assert_eq!(get(99), None);
        assert_eq!(find(b":method", b"GET"), Some(StaticMatch::Exact(17)));
        assert_eq!(find(b":method", b"PATCH"), Some(StaticMatch::Name(15)));
        assert_eq!(find(b"x-unknown", b"1"), None);
        assert_eq!(
            find(b"content-type", b"text/plain;charset=utf-8"),
            Some(StaticMatch::Exact(54))
        );
        assert_eq!(find(b":status", b"500"), Some(StaticMatch::Exact(71)));
        assert_eq!(find(b":status", b"503"), Some(StaticMatch::Exact(28)));
        assert_eq!(find(b"", b""), None);
    }

    /// The lookup table gives what a scan of the static table gives, for every entry and for
    /// names and values close to them.
    #[test]
    fn lookups_agree_with_a_scan() {
        let scan = |name: &[u8], value: &[u8]| {
            let exact = STATIC_TABLE
                .iter()
                .position(|&(n, v)| n == name && v == value);
            let by_name = STATIC_TABLE.iter().position(|&(n, _)| n == name);
            match (exact, by_name) {
                (Some(i), _) => Some(StaticMatch::Exact(i as u64)),
                (None, Some(i)) => Some(StaticMatch::Name(i as u64)),
                (None, None) => None,
            }
        };
        for &(name, value) in &STATIC_TABLE {
            let mut other = value.to_vec();
            other.push(b'x');
            let mut longer = name.to_vec();
            longer.push(b's');
            for (n, v) in [(name, value), (name, &other[..]), (&longer[..], value)] {
                assert_eq!(find(n, v), scan(n, v), "{n:?} {v:?}");
            }
        }
    }
}
