//! A handshake without TLS, for fuzzing the established connection (feature `fuzzing`, and
//! tests): a full TLS handshake per fuzz input would cost far more than what the input then
//! drives, so the fuzz targets start from a pair put straight into the state a handshake leaves
//! behind (the connection installs 1-RTT keys of fixed secrets itself). The handshake itself
//! is fuzzed on its own.

use super::{Handshake, State};
use crate::error::{Error, Result};
use crate::packet::Epoch;

/// The alert rustls answers a handshake message it does not expect with.
const UNEXPECTED_MESSAGE: u8 = 10;

impl Handshake {
    /// Ends the handshake without TLS: `peer_params` are the peer's encoded transport
    /// parameters and `alpn` the protocol taken as negotiated. No keys come out: the caller
    /// installs its own.
    pub fn fuzz_establish(&mut self, peer_params: Vec<u8>, alpn: Vec<u8>) {
        self.state = State::Bypassed { peer_params, alpn };
        self.hold_server = false;
        self.write_epoch = Epoch::Application;
        self.have_handshake_keys = true;
        self.have_one_rtt_keys = true;
        self.events.clear();
    }

    /// The encoded transport parameters a pending handshake would have sent (taken: the
    /// handshake will not send them any more), or `None` once TLS runs.
    pub fn fuzz_take_local_params(&mut self) -> Option<Vec<u8>> {
        match &mut self.state {
            State::ClientPending { params, .. } | State::ServerPending { params, .. } => {
                Some(std::mem::take(params))
            }
            _ => None,
        }
    }

    /// CRYPTO data after a handshake without TLS: no post-handshake message can be read, so
    /// the data fails the handshake as a message rustls did not expect would.
    pub(super) fn fuzz_post_handshake_data(&mut self) -> Result<()> {
        let error = Error::TlsAlert(UNEXPECTED_MESSAGE);
        self.error = Some(error);
        Err(error)
    }
}
