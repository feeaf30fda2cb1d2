//! Extensions of a ClientHello read before TLS runs. The client's transport parameters: a
//! server that may move a client to another compatible version (RFC 9368 §2.3) decides the
//! version, and so its own transport parameters and its TLS connection's labels, before TLS
//! sees the ClientHello. The offered PSK of a ClientHello that carries early data: a
//! BoringSSL server records it to refuse replayed 0-RTT (`boringssl`); whether it offers a
//! session at all, which a rustls server reports through `early_data_reason`. Nothing here
//! depends on the TLS backend.

/// TLS handshake message type of ClientHello (RFC 8446 §4).
const CLIENT_HELLO: u8 = 1;
/// The quic_transport_parameters extension (RFC 9001 §8.2).
const QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;
/// The largest ClientHello a server buffers before TLS sees it: far beyond any real one
/// (post-quantum key shares included), small enough to bound what a peer can make us keep.
pub(crate) const MAX_CLIENT_HELLO: usize = 16 * 1024;

/// The length of the first handshake message in `buf` (header included), once `buf` holds
/// its header; `None` before.
pub(crate) fn first_message_len(buf: &[u8]) -> Option<usize> {
    let h = buf.get(..4)?;
    Some(4 + ((usize::from(h[1]) << 16) | (usize::from(h[2]) << 8) | usize::from(h[3])))
}

/// The encoded transport parameters in the ClientHello at the start of `buf`, or `None` if
/// `buf` does not start with a whole, well-formed ClientHello carrying them. Nothing is
/// validated beyond the framing: TLS checks the message again when it reads it.
pub(crate) fn client_hello_transport_params(buf: &[u8]) -> Option<&[u8]> {
    client_hello_extension(buf, QUIC_TRANSPORT_PARAMETERS)
}

/// The early_data extension (RFC 8446 §4.2.10).
#[cfg(feature = "boringssl-boring-crate")]
const EARLY_DATA: u16 = 42;
/// The pre_shared_key extension (RFC 8446 §4.2.11).
const PRE_SHARED_KEY: u16 = 41;

/// The body of the pre_shared_key extension (identities and binders) of a whole ClientHello at
/// the start of `buf` that offers early data; `None` otherwise. The binders are MACs over the
/// ClientHello, random included: two ClientHellos share them only if one replays the other.
#[cfg(feature = "boringssl-boring-crate")]
pub(crate) fn client_hello_early_data_psk(buf: &[u8]) -> Option<&[u8]> {
    client_hello_extension(buf, EARLY_DATA)?;
    client_hello_extension(buf, PRE_SHARED_KEY)
}

/// Whether the whole ClientHello at the start of `buf` offers a session to resume (a
/// pre_shared_key extension): what a server's `early_data_reason` tells apart from a session it
/// could not resume.
pub(crate) fn client_hello_offers_psk(buf: &[u8]) -> bool {
    client_hello_extension(buf, PRE_SHARED_KEY).is_some()
}

/// The body of extension `want` in the whole ClientHello at the start of `buf`.
fn client_hello_extension(buf: &[u8], want: u16) -> Option<&[u8]> {
    let len = first_message_len(buf)?;
    if buf.first() != Some(&CLIENT_HELLO) {
        return None;
    }
    let mut b = octets::Octets::with_slice(buf.get(4..len)?);
    b.skip(2 + 32).ok()?; // legacy_version, random
    let session_id = b.get_u8().ok()?;
    b.skip(usize::from(session_id)).ok()?;
    let suites = b.get_u16().ok()?;
    b.skip(usize::from(suites)).ok()?;
    let compression = b.get_u8().ok()?;
    b.skip(usize::from(compression)).ok()?;
    let mut exts = b.get_bytes_with_u16_length().ok()?;
    while exts.cap() > 0 {
        let ty = exts.get_u16().ok()?;
        let body = exts.get_bytes_with_u16_length().ok()?;
        if ty == want {
            return Some(body.buf());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(exts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0]); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        let mut e = Vec::new();
        for (ty, v) in exts {
            e.extend_from_slice(&ty.to_be_bytes());
            e.extend_from_slice(&(v.len() as u16).to_be_bytes());
            e.extend_from_slice(v);
        }
        body.extend_from_slice(&(e.len() as u16).to_be_bytes());
        body.extend_from_slice(&e);
        let mut msg = vec![CLIENT_HELLO, 0, (body.len() >> 8) as u8, body.len() as u8];
        msg.extend_from_slice(&body);
        msg
    }

    #[test]
    fn finds_the_transport_parameters_of_a_whole_client_hello() {
        let msg = hello(&[(0x10, b"alpn"), (0x39, b"params"), (0x2b, b"v")]);
        assert_eq!(first_message_len(&msg), Some(msg.len()));
        assert_eq!(client_hello_transport_params(&msg), Some(&b"params"[..]));
        // Trailing bytes of later messages do not matter.
        let mut more = msg.clone();
        more.extend_from_slice(&[1, 2, 3]);
        assert_eq!(client_hello_transport_params(&more), Some(&b"params"[..]));
        // Incomplete, absent or malformed: nothing.
        for len in 0..msg.len() {
            assert_eq!(client_hello_transport_params(&msg[..len]), None);
        }
        assert_eq!(client_hello_transport_params(&hello(&[(0x10, b"x")])), None);
        assert!(!client_hello_offers_psk(&msg));
        let psk = hello(&[(0x39, b"params"), (PRE_SHARED_KEY, b"identities+binders")]);
        assert!(client_hello_offers_psk(&psk));
        assert!(!client_hello_offers_psk(&psk[..psk.len() - 1]));
        let mut wrong_type = msg.clone();
        wrong_type[0] = 2;
        assert_eq!(client_hello_transport_params(&wrong_type), None);
        let mut bad_ext_len = msg;
        let n = bad_ext_len.len();
        // The extension's length field now runs past the message.
        bad_ext_len[n - 13] = 0xff;
        assert_eq!(client_hello_transport_params(&bad_ext_len), None);
    }
}
