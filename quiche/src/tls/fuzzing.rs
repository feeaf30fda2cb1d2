//! A handshake without TLS, for fuzzing the established connection (feature `fuzzing`, and
//! tests): a full TLS handshake per fuzz input would cost far more than what the input then
//! drives, so the fuzz targets start from a pair put straight into the state a handshake leaves
//! behind (the connection installs 1-RTT keys of fixed secrets itself). The handshake itself
//! is fuzzed on its own.

use std::io::Write;

use super::{Backend, CipherSuite, DirectionalKeys, Handshake, HandshakeEvent, Inner};
use crate::error::{Error, Result};
use crate::packet::Epoch;

/// The alert rustls answers a handshake message it does not expect with.
const UNEXPECTED_MESSAGE: u8 = 10;

/// What a handshake would have left behind.
pub(super) struct Bypassed {
    is_server: bool,
    /// The peer's encoded transport parameters.
    peer_params: Vec<u8>,
    /// The application protocol taken as negotiated.
    alpn: Vec<u8>,
    /// The server name the handshake knew.
    server_name: Option<String>,
    /// Set by the first CRYPTO data: no post-handshake message can be read.
    error: Option<Error>,
}

impl Handshake {
    /// Ends the handshake without TLS: `peer_params` are the peer's encoded transport
    /// parameters and `alpn` the protocol taken as negotiated. No keys come out: the caller
    /// installs its own.
    pub fn fuzz_establish(&mut self, peer_params: Vec<u8>, alpn: Vec<u8>) {
        self.inner = Inner::Bypassed(Bypassed {
            is_server: self.is_server(),
            peer_params,
            alpn,
            server_name: self.server_name().map(str::to_owned),
            error: None,
        });
        self.held_hello = None;
    }

    /// The encoded transport parameters a pending handshake would have sent (taken: the
    /// handshake will not send them any more), or `None` once TLS runs.
    pub fn fuzz_take_local_params(&mut self) -> Option<Vec<u8>> {
        self.backend_mut().fuzz_take_local_params()
    }
}

impl Backend for Bypassed {
    fn set_transport_params(&mut self, _: Vec<u8>) -> Result<()> {
        Err(Error::InvalidState)
    }

    fn set_version(&mut self, _: u32) -> Result<()> {
        Ok(())
    }

    fn capture_secrets(&mut self) -> Result<()> {
        Err(Error::InvalidState)
    }

    fn restart_client(&mut self, _: Vec<u8>) -> Result<()> {
        Err(Error::InvalidState)
    }

    fn next_event(&mut self) -> Result<Option<HandshakeEvent>> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    fn read_epoch(&self) -> Epoch {
        Epoch::Application
    }

    fn write_epoch(&self) -> Epoch {
        Epoch::Application
    }

    /// CRYPTO data after a handshake without TLS fails the handshake as a message rustls did
    /// not expect would.
    fn provide_data(&mut self, epoch: Epoch, data: &[u8]) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if epoch != Epoch::Application {
            return Err(Error::ProtocolViolation);
        }
        if data.is_empty() {
            return Ok(());
        }
        let error = Error::TlsAlert(UNEXPECTED_MESSAGE);
        self.error = Some(error);
        Err(error)
    }

    fn is_server(&self) -> bool {
        self.is_server
    }

    fn is_handshaking(&self) -> bool {
        false
    }

    fn peer_transport_params(&self) -> Option<&[u8]> {
        Some(&self.peer_params)
    }

    fn alpn(&self) -> Option<&[u8]> {
        Some(&self.alpn)
    }

    fn server_name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    fn is_resumed(&self) -> bool {
        false
    }

    fn zero_rtt_keys(&self) -> Option<DirectionalKeys> {
        None
    }

    fn is_early_data_accepted(&self) -> bool {
        false
    }

    fn session_offered(&self) -> bool {
        false
    }

    fn reject_early_data(&mut self) -> Result<()> {
        Err(Error::InvalidState)
    }

    fn cipher_suite(&self) -> Option<CipherSuite> {
        None
    }

    fn peer_cert_chain(&self) -> Option<Vec<&[u8]>> {
        None
    }

    fn peer_cert(&self) -> Option<&[u8]> {
        None
    }

    fn alert(&self) -> Option<u8> {
        None
    }

    fn session(&self) -> Option<&[u8]> {
        None
    }

    fn set_session(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::InvalidState)
    }

    fn set_keylog(&mut self, _: Box<dyn Write + Send>) -> Result<()> {
        Err(Error::InvalidState)
    }

    fn fuzz_take_local_params(&mut self) -> Option<Vec<u8>> {
        None
    }
}
