//! Version negotiation on the connection: a client answers a Version Negotiation packet with a
//! new first flight in a version both sides support (RFC 9368 §2.1), and both sides check the
//! peer's Version Information so that a forged Version Negotiation cannot downgrade the
//! connection (RFC 9368 §4).

use super::state::ConnectionError;
use super::version_state::{local_version_information, select_version};
use super::Connection;
use crate::error::{Error, Result};
use crate::packet::{Epoch, HeaderLayout};
use crate::transport_params::{TransportParams, VersionInformation};

/// Sets up the handshake for compatible version negotiation: a client that may be moved to
/// another version keeps its traffic secrets, a server that may move clients reads their
/// ClientHello before TLS starts.
pub(super) fn prepare_tls(
    tls: &mut crate::tls::Handshake,
    is_server: bool,
    version: u32,
    compatible: &[u32],
) -> Result<()> {
    tls.set_version(version)?;
    if is_server {
        if !compatible.is_empty() {
            tls.hold_server();
        }
        return Ok(());
    }
    if compatible.iter().any(|v| *v != version) {
        tls.capture_secrets()?;
    }
    Ok(())
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// A Version Negotiation packet arrived. The client ignores it unless it is an answer to its
    /// first flight that does not list the version it tried (RFC 9000 §6.2, RFC 9368 §4); then
    /// it starts again in a version from the list, or gives up if there is none.
    pub(super) fn on_version_negotiation(&mut self, b: &[u8], hdr: &HeaderLayout) -> Result<()> {
        let answered = self.versions.answered_version_negotiation();
        if self.is_server || answered || self.dcid_from_peer || self.stats.recv > 0 {
            return Ok(());
        }
        let Ok(header) = hdr.header(b) else {
            return Ok(());
        };
        // The packet must echo our connection IDs (RFC 8999 §6).
        if header.dcid[..] != self.scid[..] || header.scid[..] != self.dcid[..] {
            return Ok(());
        }
        let versions = header.versions.unwrap_or_default();
        if versions.contains(&self.versions.current()) {
            // A VN listing our own version is bogus: ignore it.
            return Ok(());
        }
        match select_version(&versions) {
            Some(version) => self.restart_in_version(version),
            None => {
                self.lifecycle.close_immediately(Some(ConnectionError {
                    is_app: false,
                    error_code: 0,
                    reason: b"version negotiation: no common version".to_vec(),
                }));
                Err(Error::UnknownVersion)
            }
        }
    }

    /// Throws the first flight away and builds a new one in `version`: a new ClientHello
    /// (its transport parameters carry the new Version Information), new Initial keys, loss
    /// recovery from scratch. Connection IDs and packet numbers carry on.
    fn restart_in_version(&mut self, version: u32) -> Result<()> {
        self.versions.restart_in(version);
        self.local_tp.version_information = Some(local_version_information(
            version,
            false,
            self.versions.compatible(),
        ));
        let params = self.local_tp.encode_to_vec(false)?;
        self.tls.restart_client(params)?;
        self.tls.set_version(version)?;

        // Stream data sent as 0-RTT goes out again under the new handshake's keys.
        let early: Vec<_> = self
            .recovery
            .sent_packets(Epoch::Application)
            .iter()
            .map(|p| p.payload.clone())
            .collect();
        for frames in &early {
            self.on_frames_lost(Epoch::Application, frames);
        }
        self.zero_rtt.discard();
        self.recovery = crate::recovery::Recovery::new(&self.recovery_config);
        *self.sender_mut() = self.fresh_sender();

        let next_pn = self.spaces[Epoch::Initial.index()].next_pn;
        let space = self.space(Epoch::Initial);
        space.discard();
        space.discarded = false;
        space.next_pn = next_pn;
        self.install_initial_keys()?;
        self.drive_handshake()
    }

    /// Checks the peer's Version Information (RFC 9368 §4). Returns the error to close with.
    pub(super) fn check_version_information(
        &self,
        tp: &TransportParams,
    ) -> std::result::Result<(), ConnectionError> {
        self.versions.check_peer_information(self.is_server, tp)
    }
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// A server whose TLS waits for the whole ClientHello: once it is there, reads the client's
    /// Version Information and moves the connection to the version it prefers among those the
    /// client offers (compatible version negotiation, RFC 9368 §2.3, RFC 9369 §4), then starts
    /// TLS, whose first flight goes out in that version.
    pub(super) fn on_client_hello(&mut self) -> Result<()> {
        let Some(params) = self.tls.held_client_params() else {
            return Ok(());
        };
        let offered = params
            .and_then(|raw| TransportParams::decode(raw, false).ok())
            .and_then(|tp| tp.version_information);
        let chosen = offered
            .as_ref()
            .and_then(|vi| self.versions.choose_compatible(vi));
        if let Some(version) = chosen.filter(|v| *v != self.versions.current()) {
            // Only a client's first flight can be converted, and the choice is made once.
            if self.versions.switch_compatible(version) {
                self.tls.set_version(version)?;
                if let Some(vi) = self.local_tp.version_information.as_mut() {
                    vi.chosen_version = version;
                }
                self.set_server_transport_params()?;
                self.install_initial_keys()?;
                #[cfg(feature = "qlog")]
                self.qlog_version_information(offered.as_ref());
            }
        }
        let switched = self.versions.compat_original().is_some();
        self.tls.release_server(switched)
    }

    /// A client sees a long header packet in another version than its own: the server moved
    /// the connection to a compatible version (RFC 9368 §2.3). It follows if that version is
    /// one it offered and nothing came from the server before; the Initial keys of the new
    /// version are installed tentatively (`true`), to be kept only if the packet authenticates
    /// ([`Connection::confirm_version_switch`]) and otherwise restored.
    pub(super) fn try_follow_version(&mut self, ty: crate::packet::Type, version: u32) -> bool {
        if self.is_server || self.dcid_from_peer || !self.versions.may_follow(ty, version) {
            return false;
        }
        let initial_dcid = self
            .retry_scid
            .clone()
            .unwrap_or_else(|| self.odcid.clone());
        let Ok((open, seal)) = crate::crypto::initial_keys_for(version, &initial_dcid, false)
        else {
            return false;
        };
        let space = self.space(Epoch::Initial);
        let old = (space.open.replace(open), space.seal.replace(seal));
        self.versions.begin_switch(version, old.0, old.1);
        true
    }

    /// The packet of the new version authenticated: the switch is final, and TLS derives the
    /// Handshake and 1-RTT keys with the new version's labels.
    pub(super) fn confirm_version_switch(&mut self) -> Result<()> {
        if self.versions.confirm_switch() {
            self.tls.set_version(self.versions.current())?;
            #[cfg(feature = "qlog")]
            self.qlog_version_information(None);
        }
        Ok(())
    }

    /// The packet of the new version did not authenticate: back to the original version.
    pub(super) fn undo_version_switch(&mut self) {
        if let Some((open, seal)) = self.versions.undo_switch() {
            let space = self.space(Epoch::Initial);
            space.open = open;
            space.seal = seal;
        }
    }

    /// Whether a long header packet of `version` is one this connection takes: its own
    /// version, or, on a server that moved the client, the client's Initial and 0-RTT packets
    /// in the original version (RFC 9369 §4.1).
    pub(super) fn accepts_version(&self, ty: crate::packet::Type, version: u32) -> bool {
        self.versions.accepts(self.is_server, ty, version)
    }

    /// The Initial receive keys of the client's original version, for its Initial packets
    /// that still come in that version after the server moved it.
    pub(super) fn original_initial_open(&self) -> Result<crate::crypto::DirectionalKeys> {
        let version = self.versions.first_packets();
        Ok(crate::crypto::initial_keys_for(version, &self.odcid, self.is_server)?.0)
    }
}

#[cfg(feature = "qlog")]
impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Logs a compatible version switch: `transport:version_information` and the version of
    /// later long headers. `client` is the client's offer, when the server logs it.
    fn qlog_version_information(&mut self, client: Option<&VersionInformation>) {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let version = self.versions.current();
        let ours = self
            .local_tp
            .version_information
            .as_ref()
            .map(|vi| vi.available_versions.clone());
        let is_server = self.is_server;
        if let Some(q) = self.qlog.as_deref_mut() {
            q.set_version(version);
            let (server, client) = if is_server {
                (ours, client.map(|vi| vi.available_versions.clone()))
            } else {
                (None, ours)
            };
            q.version_information(now, server.as_deref(), client.as_deref(), version);
        }
    }
}
