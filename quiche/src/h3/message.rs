//! HTTP message validation (RFC 9114 §4.1.2, §4.2, §4.3): what makes a request, response or
//! trailer section malformed. A malformed message resets its stream with H3_MESSAGE_ERROR.

use super::NameValue;

/// Which section a header list is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// A request's header section.
    Request,
    /// A response's header section (interim or final).
    Response,
    /// A trailer section (no pseudo-header allowed).
    Trailers,
}

/// What validation learnt of a valid section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// The `content-length`, if given.
    pub content_length: Option<u64>,
    /// A response's status.
    pub status: Option<u16>,
    /// The request's method.
    pub method: Option<Vec<u8>>,
    /// The request's `priority` field value.
    pub priority: Option<Vec<u8>>,
}

/// Fields that HTTP/3 forbids (connection-specific, §4.2).
const CONNECTION_SPECIFIC: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

fn valid_name(name: &[u8]) -> bool {
    let name = name.strip_prefix(b":").unwrap_or(name);
    !name.is_empty()
        && name.iter().all(|&b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b)
        })
}

/// RFC 9110 §5.5 field-content (RFC 9114 §10.3): visible ASCII, obs-text, and spaces or tabs
/// inside; no control character.
fn valid_value(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b) || b >= 0x80)
        && !value.first().is_some_and(|b| *b == b' ' || *b == b'\t')
        && !value.last().is_some_and(|b| *b == b' ' || *b == b'\t')
}

/// A malformed message (RFC 9114 §4.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// Checks a header list; `extended_connect` says whether we allow `:protocol` (RFC 9220).
pub fn check<T: NameValue>(
    list: &[T],
    section: Section,
    extended_connect: bool,
) -> Result<Checked, Malformed> {
    let mut checked = Checked::default();
    let mut pseudo: Vec<&[u8]> = Vec::new();
    let mut regular_seen = false;
    let (mut scheme, mut path, mut authority, mut protocol, mut host) =
        (None, None, None, None, None);
    for h in list {
        let (name, value) = (h.name(), h.value());
        if !valid_name(name) || !valid_value(value) {
            return Err(Malformed);
        }
        if name.starts_with(b":") {
            if regular_seen || section == Section::Trailers || pseudo.contains(&name) {
                return Err(Malformed);
            }
            pseudo.push(name);
            match (section, name) {
                (Section::Request, b":method") => checked.method = Some(value.to_vec()),
                (Section::Request, b":scheme") => scheme = Some(value),
                (Section::Request, b":path") => path = Some(value),
                (Section::Request, b":authority") => authority = Some(value),
                (Section::Request, b":protocol") if extended_connect => protocol = Some(value),
                (Section::Response, b":status") => {
                    let s = std::str::from_utf8(value).ok().filter(|s| s.len() == 3);
                    let s = s.and_then(|s| s.parse::<u16>().ok()).ok_or(Malformed)?;
                    if !(100..=599).contains(&s) || s == 101 {
                        return Err(Malformed);
                    }
                    checked.status = Some(s);
                }
                _ => return Err(Malformed),
            }
            continue;
        }
        regular_seen = true;
        if CONNECTION_SPECIFIC.contains(&name) || (name == b"te" && value != b"trailers") {
            return Err(Malformed);
        }
        match name {
            b"content-length" => {
                let len = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or(Malformed)?;
                if checked.content_length.is_some_and(|l| l != len) {
                    return Err(Malformed);
                }
                checked.content_length = Some(len);
            }
            b"host" => {
                if host.is_some() {
                    return Err(Malformed);
                }
                host = Some(value);
            }
            b"priority" => checked.priority = Some(value.to_vec()),
            _ => {}
        }
    }
    match section {
        Section::Request => check_request(&checked, scheme, path, authority, protocol, host)?,
        Section::Response if checked.status.is_none() => return Err(Malformed),
        _ => {}
    }
    Ok(checked)
}

fn check_request(
    c: &Checked,
    scheme: Option<&[u8]>,
    path: Option<&[u8]>,
    authority: Option<&[u8]>,
    protocol: Option<&[u8]>,
    host: Option<&[u8]>,
) -> Result<(), Malformed> {
    let method = c.method.as_deref().ok_or(Malformed)?;
    // §4.3.1: an authority, where given, is not empty, and Host agrees with :authority.
    if authority.is_some_and(|a| a.is_empty()) || host.is_some_and(|h| h.is_empty()) {
        return Err(Malformed);
    }
    if let (Some(a), Some(h)) = (authority, host) {
        if a != h {
            return Err(Malformed);
        }
    }
    if method == b"CONNECT" && protocol.is_none() {
        // §4.4: only :method and :authority.
        return if authority.is_some() && scheme.is_none() && path.is_none() {
            Ok(())
        } else {
            Err(Malformed)
        };
    }
    if protocol.is_some() && method != b"CONNECT" {
        return Err(Malformed);
    }
    let (scheme, path) = (scheme.ok_or(Malformed)?, path.ok_or(Malformed)?);
    if path.is_empty() {
        return Err(Malformed);
    }
    // http and https have a mandatory authority (§4.3.1).
    if scheme == b"http" || scheme == b"https" {
        if authority.is_none() && host.is_none() {
            return Err(Malformed);
        }
        // No userinfo in their authority (§4.3.1).
        if authority.is_some_and(|a| a.contains(&b'@')) {
            return Err(Malformed);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut l: Vec<(String, String)> = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "a.example"),
            (":path", "/"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        l.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        l
    }

    fn ok(list: &[(String, String)], s: Section) -> bool {
        check(list, s, false).is_ok()
    }

    fn list(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn requests() {
        assert!(ok(&req(&[("accept", "*/*")]), Section::Request));
        assert_eq!(
            check(&req(&[("content-length", "5")]), Section::Request, false)
                .unwrap()
                .content_length,
            Some(5)
        );
        for bad in [
            req(&[("Accept", "x")]),         // uppercase
            req(&[("connection", "close")]), // connection-specific
            req(&[("te", "gzip")]),          // te other than trailers
            req(&[("x", "a\nb")]),           // LF in a value
            req(&[("x", "a\x7fb")]),         // DEL in a value
            req(&[("x", "a\x01b")]),         // another control character
            req(&[(":path", "/again")]),     // repeated pseudo-header
            req(&[("content-length", "1"), ("content-length", "2")]),
            req(&[("content-length", "-1")]),
            list(&[(":method", "GET"), ("x", "1"), (":path", "/")]), // pseudo after regular
            list(&[(":method", "GET"), (":scheme", "https"), (":path", "/")]), // no authority
            list(&[(":scheme", "https"), (":authority", "a"), (":path", "/")]), // no method
            list(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "a"),
                (":path", ""),
            ]),
            req(&[(":status", "200")]), // response pseudo in a request
            req(&[(":protocol", "websocket")]), // extended CONNECT not enabled
            req(&[("host", "b.example")]), // Host differs from :authority
            list(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", ""),
                (":path", "/"),
                ("host", "a"),
            ]), // empty :authority, even with a Host
            list(&[(":method", "CONNECT"), (":authority", "")]),
        ] {
            assert!(!ok(&bad, Section::Request), "{bad:?}");
        }
        assert!(te_trailers_is_fine());
        let connect = list(&[(":method", "CONNECT"), (":authority", "a:443")]);
        assert!(ok(&connect, Section::Request));
        let extended = list(&[
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/chat"),
        ]);
        assert!(check(&extended, Section::Request, true).is_ok());
        assert!(check(&extended, Section::Request, false).is_err());
    }

    fn te_trailers_is_fine() -> bool {
        ok(&req(&[("te", "trailers")]), Section::Request)
    }

    #[test]
    fn responses_and_trailers() {
        assert_eq!(
            check(&list(&[(":status", "204")]), Section::Response, false)
                .unwrap()
                .status,
            Some(204)
        );
        assert!(ok(
            &list(&[(":status", "103"), ("link", "</a>")]),
            Section::Response
        ));
        for bad in [
            list(&[]),
            list(&[(":status", "101")]),
            list(&[(":status", "2000")]),
            list(&[(":status", "abc")]),
            list(&[(":status", "200"), (":path", "/")]),
        ] {
            assert!(!ok(&bad, Section::Response), "{bad:?}");
        }
        assert!(ok(&list(&[("x-checksum", "abc")]), Section::Trailers));
        assert!(!ok(&list(&[(":status", "200")]), Section::Trailers));
    }
}
