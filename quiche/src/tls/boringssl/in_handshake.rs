//! Settings an application changes from inside one of BoringSSL's handshake callbacks (e.g.
//! certificate selection), for the connection being handshaken: quiche's
//! `Connection::set_*_in_handshake(ssl, ..)`. The callback has only the `SslRef`, so the
//! changes are recorded in the connection's state behind it (its ex_data) and taken by the
//! connection when the TLS call that ran the callback returns. Transport parameters change in
//! TLS at once, so that the server's EncryptedExtensions, written after the callback, carry
//! them.
//!
//! Outside a handshake call (`QuicState::in_tls_call` false) the `SslRef` belongs to no
//! running handshake, and every setter fails with `TlsFail`, as quiche's do.

use boring::ssl::SslRef;
use foreign_types_shared::ForeignTypeRef;

use super::callbacks::state_index;
pub use super::state::HandshakeOverrides;
use super::state::QuicState;
use crate::error::{Error, Result};
use crate::transport_params::TransportParams;

/// The state of the connection whose handshake call is running a callback on `ssl`.
fn running_state(ssl: &mut SslRef) -> Result<&mut QuicState> {
    let index = state_index().ok_or(Error::TlsFail)?;
    match ssl.ex_data_mut(index) {
        Some(state) if state.in_tls_call => Ok(state),
        _ => Err(Error::TlsFail),
    }
}

/// Records a change made from a callback on `ssl`: `TlsFail` outside a handshake call.
pub fn change(ssl: &mut SslRef, f: impl FnOnce(&mut HandshakeOverrides)) -> Result<()> {
    f(&mut running_state(ssl)?.overrides);
    Ok(())
}

/// Changes our transport parameters from a callback on `ssl`: re-encoded and given to TLS at
/// once (BoringSSL writes them into the server's EncryptedExtensions, or the client's
/// ClientHello, after the callback), and recorded for the connection.
pub fn change_transport_params(
    ssl: &mut SslRef,
    f: impl FnOnce(&mut TransportParams, &mut HandshakeOverrides),
) -> Result<()> {
    let state = running_state(ssl)?;
    let is_server = state.is_server;
    let mut params = TransportParams::decode(&state.local_params, is_server)?;
    f(&mut params, &mut state.overrides);
    let encoded = params.encode_to_vec(is_server)?;
    // SAFETY: `ssl` is a valid `SSL` (a live reference); BoringSSL copies the bytes.
    let rc = unsafe {
        boring_sys::SSL_set_quic_transport_params(ssl.as_ptr(), encoded.as_ptr(), encoded.len())
    };
    if rc != 1 {
        return Err(Error::TlsFail);
    }
    if let Some(state) = state_index().and_then(|i| ssl.ex_data_mut(i)) {
        state.local_params = encoded;
    }
    Ok(())
}
