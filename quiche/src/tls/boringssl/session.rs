//! Client sessions in quiche's encoding, so that a session saved by quiche (BoringSSL) resumes
//! here and the other way round: BoringSSL's own `SSL_SESSION` serialization followed by the
//! server's transport parameters (which 0-RTT must respect, RFC 9000 §7.4.1), each behind a
//! 64-bit big-endian length:
//!
//! ```text
//! u64 session_len, session_len bytes of SSL_SESSION_to_bytes,
//! u64 params_len,  params_len bytes of the server's quic_transport_parameters
//! ```
//!
//! Also the server's early data context: what must not change between the connection that
//! issued a ticket and one that sends 0-RTT with it.

use boring_sys as ffi;

use crate::error::{Error, Result};

/// The longest session accepted from an application: far beyond any real one (a ticket, a few
/// certificates), small enough to bound what a damaged file makes us allocate.
const MAX_SESSION_LEN: usize = 64 * 1024;

/// Encodes `session` with the transport parameters the server of `ssl` sent.
///
/// # Safety
/// `ssl` and `session` must be valid for the duration of the call.
pub(crate) unsafe fn encode(
    ssl: *const ffi::SSL,
    session: *const ffi::SSL_SESSION,
) -> Option<Vec<u8>> {
    let mut out: *mut u8 = std::ptr::null_mut();
    let mut out_len = 0usize;
    // SAFETY: valid session; BoringSSL allocates `out`, freed below with OPENSSL_free.
    if unsafe { ffi::SSL_SESSION_to_bytes(session, &mut out, &mut out_len) } != 1 || out.is_null() {
        return None;
    }
    // SAFETY: BoringSSL wrote `out_len` bytes at `out`.
    let bytes = unsafe { std::slice::from_raw_parts(out, out_len) }.to_vec();
    // SAFETY: `out` was allocated by BoringSSL and is not used after this.
    unsafe { ffi::OPENSSL_free(out.cast()) };

    let mut params: *const u8 = std::ptr::null();
    let mut params_len = 0usize;
    // SAFETY: valid `ssl`; the parameters stay owned by it.
    unsafe { ffi::SSL_get_peer_quic_transport_params(ssl, &mut params, &mut params_len) };
    let params = if params.is_null() || params_len == 0 {
        &[][..]
    } else {
        // SAFETY: BoringSSL reports `params_len` readable bytes owned by `ssl`.
        unsafe { std::slice::from_raw_parts(params, params_len) }
    };

    let mut encoded = Vec::with_capacity(16 + bytes.len() + params.len());
    encoded.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    encoded.extend_from_slice(&bytes);
    encoded.extend_from_slice(&(params.len() as u64).to_be_bytes());
    encoded.extend_from_slice(params);
    Some(encoded)
}

/// Splits an encoded session into BoringSSL's bytes and the remembered transport parameters.
pub(crate) fn decode(encoded: &[u8]) -> Result<(&[u8], &[u8])> {
    let mut b = octets::Octets::with_slice(encoded);
    let field = |b: &mut octets::Octets<'_>| -> Result<&[u8]> {
        let len = b.get_u64().map_err(|_| Error::TlsFail)?;
        let len = usize::try_from(len)
            .ok()
            .filter(|len| *len <= MAX_SESSION_LEN)
            .ok_or(Error::TlsFail)?;
        let start = b.off();
        b.skip(len).map_err(|_| Error::TlsFail)?;
        Ok(&encoded[start..start + len])
    };
    let session = field(&mut b)?;
    let params = field(&mut b)?;
    if session.is_empty() {
        return Err(Error::TlsFail);
    }
    Ok((session, params))
}

/// The early data context of a server: its encoded transport parameters without those that
/// differ from one connection to the next (connection IDs, stateless reset token, preferred
/// address) or that are random (GREASE), so that a ticket allows 0-RTT as long as the limits
/// a client remembers did not change (RFC 9000 §7.4.1). `None` for malformed parameters.
pub(crate) fn early_data_context(params: &[u8]) -> Option<Vec<u8>> {
    /// original_destination_connection_id, stateless_reset_token, preferred_address,
    /// initial_source_connection_id, retry_source_connection_id (RFC 9000 §18.2).
    const PER_CONNECTION: [u64; 5] = [0x00, 0x02, 0x0d, 0x0f, 0x10];
    let mut b = octets::Octets::with_slice(params);
    let mut context = Vec::with_capacity(params.len() + 8);
    context.extend_from_slice(b"quiche-rs 0-RTT context v1");
    while b.cap() > 0 {
        let start = b.off();
        let id = b.get_varint().ok()?;
        let len = b.get_varint().ok()?;
        b.skip(usize::try_from(len).ok()?).ok()?;
        // Reserved parameters (31 * N + 27) are GREASE (RFC 9000 §18.1).
        if PER_CONNECTION.contains(&id) || id % 31 == 27 {
            continue;
        }
        context.extend_from_slice(&params[start..b.off()]);
    }
    Some(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_takes_both_fields_and_refuses_damage() {
        let mut encoded = 3u64.to_be_bytes().to_vec();
        encoded.extend_from_slice(b"ses");
        encoded.extend_from_slice(&2u64.to_be_bytes());
        encoded.extend_from_slice(b"tp");
        assert_eq!(decode(&encoded), Ok((&b"ses"[..], &b"tp"[..])));
        for len in 0..encoded.len() {
            assert_eq!(decode(&encoded[..len]), Err(Error::TlsFail), "{len}");
        }
        let mut huge = u64::MAX.to_be_bytes().to_vec();
        huge.extend_from_slice(b"x");
        assert_eq!(decode(&huge), Err(Error::TlsFail));
        // A rustls session handle is no BoringSSL session.
        assert_eq!(decode(b"QRSH\x02handle"), Err(Error::TlsFail));
    }

    #[test]
    fn context_ignores_per_connection_and_grease_parameters() {
        // initial_max_data = 1000, then an odcid, a GREASE parameter, a stateless reset token.
        let limits = [0x04, 0x02, 0x43, 0xe8];
        let mut a = limits.to_vec();
        a.extend_from_slice(&[0x00, 0x02, 0xaa, 0xbb]);
        a.extend_from_slice(&[0x1b, 0x01, 0x11]);
        a.extend_from_slice(&[0x02, 0x02, 0x01, 0x02]);
        let mut b = limits.to_vec();
        b.extend_from_slice(&[0x00, 0x01, 0xcc]);
        b.extend_from_slice(&[0x1b, 0x02, 0x22, 0x33]);
        assert_eq!(early_data_context(&a), early_data_context(&b));
        // A changed limit changes the context.
        let c = [0x04, 0x02, 0x43, 0xe9];
        assert_ne!(early_data_context(&a), early_data_context(&c));
        assert_eq!(early_data_context(&[0x04, 0x05, 0x00]), None);
    }
}
