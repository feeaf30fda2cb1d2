//! HTTP/3 frames (RFC 9114 §7.2, RFC 9218 §7.2) and settings (§7.2.4): types, encoding, and
//! decoding of the payloads that HTTP/3 keeps whole (everything but DATA, whose payload goes to
//! the application as it arrives).

use super::{Error, Result};

/// DATA (§7.2.1).
pub const DATA: u64 = 0x0;
/// HEADERS (§7.2.2).
pub const HEADERS: u64 = 0x1;
/// CANCEL_PUSH (§7.2.3).
pub const CANCEL_PUSH: u64 = 0x3;
/// SETTINGS (§7.2.4).
pub const SETTINGS: u64 = 0x4;
/// PUSH_PROMISE (§7.2.5).
pub const PUSH_PROMISE: u64 = 0x5;
/// GOAWAY (§7.2.6).
pub const GOAWAY: u64 = 0x7;
/// MAX_PUSH_ID (§7.2.7).
pub const MAX_PUSH_ID: u64 = 0xd;
/// PRIORITY_UPDATE for a request stream (RFC 9218 §7.2).
pub const PRIORITY_UPDATE_REQUEST: u64 = 0xf0700;
/// PRIORITY_UPDATE for a push (RFC 9218 §7.2).
pub const PRIORITY_UPDATE_PUSH: u64 = 0xf0701;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (§7.2.4.1).
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x6;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x7;
/// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3).
pub const SETTINGS_ENABLE_CONNECT_PROTOCOL: u64 = 0x8;
/// SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1).
pub const SETTINGS_H3_DATAGRAM: u64 = 0x33;

/// The most settings a SETTINGS frame may carry before it is excessive.
const MAX_SETTINGS: usize = 64;

/// Whether a frame type is one HTTP/2 had and HTTP/3 reserves (§7.2.8, §11.2.1).
pub fn is_http2_reserved(ty: u64) -> bool {
    matches!(ty, 0x2 | 0x6 | 0x8 | 0x9)
}

/// Whether a setting identifier is one HTTP/2 had and HTTP/3 forbids (§7.2.4.1).
pub fn is_http2_setting(id: u64) -> bool {
    matches!(id, 0x0 | 0x2 | 0x3 | 0x4 | 0x5)
}

/// A reserved ("grease") identifier of the form 0x1f * N + 0x21 (§7.2.8, §9).
pub fn grease_id(n: u64) -> u64 {
    0x1f * (n % 1000) + 0x21
}

/// The largest N for which 0x1f * N + 0x21 still fits a varint (2^62 - 1).
const GREASE_MAX_N: u64 = (octets::MAX_VAR_INT - 0x21) / 0x1f;

/// A random reserved identifier, 0x1f * N + 0x21 for any N that keeps it within a varint
/// (RFC 9114 §7.2.4.1, §7.2.8, §9): a setting, frame or stream type the peer must ignore.
/// Falls back to the smallest one, 0x21, if the system has no randomness to give.
pub fn grease_value() -> u64 {
    let mut random = [0u8; 8];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random).is_err() {
        return 0x21;
    }
    0x1f * (u64::from_ne_bytes(random) % (GREASE_MAX_N + 1)) + 0x21
}

/// Appends a QUIC variable-length integer.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 8];
    let len = octets::varint_len(v);
    let mut b = octets::OctetsMut::with_slice(&mut buf);
    // `buf` holds any varint up to 2^62 - 1; larger values are never produced here.
    if b.put_varint_with_len(v, len).is_ok() {
        out.extend_from_slice(&buf[..len]);
    }
}

/// Reads a varint at the start of `buf`: its value and length, or `None` if incomplete.
pub fn get_varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = octets::varint_parse_len(first);
    if buf.len() < len {
        return None;
    }
    let v = octets::Octets::with_slice(&buf[..len]).get_varint().ok()?;
    Some((v, len))
}

/// Appends a frame header (type and payload length).
pub fn put_frame_header(out: &mut Vec<u8>, ty: u64, len: u64) {
    put_varint(out, ty);
    put_varint(out, len);
}

/// Appends a whole frame.
pub fn put_frame(out: &mut Vec<u8>, ty: u64, payload: &[u8]) {
    put_frame_header(out, ty, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A SETTINGS payload from `(identifier, value)` pairs.
pub fn settings_payload(settings: &[(u64, u64)]) -> Vec<u8> {
    let mut p = Vec::new();
    for &(id, v) in settings {
        put_varint(&mut p, id);
        put_varint(&mut p, v);
    }
    p
}

/// Parses a SETTINGS payload: malformed pairs are H3_FRAME_ERROR, a repeated identifier or an
/// HTTP/2 one H3_SETTINGS_ERROR (§7.2.4).
pub fn parse_settings(payload: &[u8]) -> Result<Vec<(u64, u64)>> {
    let mut pos = 0;
    let mut settings: Vec<(u64, u64)> = Vec::new();
    while pos < payload.len() {
        let (id, n) = get_varint(&payload[pos..]).ok_or(Error::FrameError)?;
        pos += n;
        let (value, n) = get_varint(&payload[pos..]).ok_or(Error::FrameError)?;
        pos += n;
        if is_http2_setting(id) || settings.iter().any(|(i, _)| *i == id) {
            return Err(Error::SettingsError);
        }
        if settings.len() >= MAX_SETTINGS {
            return Err(Error::ExcessiveLoad);
        }
        settings.push((id, value));
    }
    Ok(settings)
}

/// Parses a payload that is exactly one varint (GOAWAY, MAX_PUSH_ID, CANCEL_PUSH).
pub fn parse_single_varint(payload: &[u8]) -> Result<u64> {
    match get_varint(payload) {
        Some((v, n)) if n == payload.len() => Ok(v),
        _ => Err(Error::FrameError),
    }
}

/// Parses a PRIORITY_UPDATE payload: the prioritized element and the field value.
pub fn parse_priority_update(payload: &[u8]) -> Result<(u64, &[u8])> {
    let (id, n) = get_varint(payload).ok_or(Error::FrameError)?;
    Ok((id, &payload[n..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grease_values_are_random_reserved_varints() {
        let values: Vec<u64> = (0..64).map(|_| grease_value()).collect();
        for &v in &values {
            assert!(
                v >= 0x21 && (v - 0x21) % 0x1f == 0,
                "{v:#x} is not reserved"
            );
            assert!(v <= octets::MAX_VAR_INT, "{v:#x} is not a varint");
        }
        let distinct: std::collections::HashSet<u64> = values.iter().copied().collect();
        assert!(
            distinct.len() > 32,
            "{} distinct values of 64",
            distinct.len()
        );
        // The largest N still fits.
        const { assert!(0x1f * GREASE_MAX_N + 0x21 <= octets::MAX_VAR_INT) };
        const { assert!(0x1f * (GREASE_MAX_N + 1) + 0x21 > octets::MAX_VAR_INT) };
    }

    #[test]
    fn varints_and_frames_round_trip() {
        for v in [
            0,
            63,
            64,
            16383,
            16384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(get_varint(&out), Some((v, out.len())));
            assert_eq!(get_varint(&out[..out.len() - 1]), None);
        }
        let mut f = Vec::new();
        put_frame(&mut f, PRIORITY_UPDATE_REQUEST, b"\x00u=1");
        assert_eq!(f, [0x80, 0x0f, 0x07, 0x00, 0x04, 0x00, b'u', b'=', b'1']);
        assert_eq!(parse_priority_update(&f[5..]).unwrap(), (0, &b"u=1"[..]));
    }

    #[test]
    fn settings_are_checked() {
        let p = settings_payload(&[(SETTINGS_QPACK_MAX_TABLE_CAPACITY, 4096), (grease_id(7), 9)]);
        assert_eq!(parse_settings(&p).unwrap(), [(1, 4096), (grease_id(7), 9)]);
        let dup = settings_payload(&[(1, 1), (1, 2)]);
        assert_eq!(parse_settings(&dup), Err(Error::SettingsError));
        let h2 = settings_payload(&[(0x4, 100)]);
        assert_eq!(parse_settings(&h2), Err(Error::SettingsError));
        assert_eq!(parse_settings(&[0x01]), Err(Error::FrameError));
        assert_eq!(parse_single_varint(&[0x05, 0x00]), Err(Error::FrameError));
        assert_eq!(parse_single_varint(&[0x40, 0x05]), Ok(5));
        assert!(is_http2_reserved(0x2) && !is_http2_reserved(grease_id(3)));
        assert_eq!(grease_id(1) % 0x1f, 0x21 % 0x1f);
    }
}
