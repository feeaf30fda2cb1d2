//! Version negotiation on the connection: a client answers a Version Negotiation packet with a
//! new first flight in a version both sides support (RFC 9368 §2.1), and both sides check the
//! peer's Version Information so that a forged Version Negotiation cannot downgrade the
//! connection (RFC 9368 §4).

use super::state::ConnectionError;
use super::Connection;
use crate::error::{Error, Result, WireErrorCode};
use crate::packet::{is_grease_version, Epoch, HeaderLayout, QUIC_V1, SUPPORTED_VERSIONS};
use crate::transport_params::{TransportParams, VersionInformation};

/// The version this library picks from `offered`: the first of its own, in preference order,
/// that the list contains (reserved versions never match, RFC 9368 §3).
pub(super) fn select_version(offered: &[u32]) -> Option<u32> {
    SUPPORTED_VERSIONS
        .iter()
        .copied()
        .find(|v| offered.contains(v) && !is_grease_version(*v))
}

/// The Version Information an endpoint sends: its version, and what it offers. A client's
/// first flight is compatible with its own version only; a server lists every version it
/// fully supports.
pub(super) fn local_version_information(version: u32, is_server: bool) -> VersionInformation {
    VersionInformation {
        chosen_version: version,
        available_versions: if is_server {
            SUPPORTED_VERSIONS.to_vec()
        } else {
            vec![version]
        },
    }
}

fn version_negotiation_error(reason: &str) -> ConnectionError {
    ConnectionError {
        is_app: false,
        error_code: WireErrorCode::VersionNegotiationError as u64,
        reason: reason.as_bytes().to_vec(),
    }
}

impl Connection {
    /// A Version Negotiation packet arrived. The client ignores it unless it is an answer to its
    /// first flight that does not list the version it tried (RFC 9000 §6.2, RFC 9368 §4); then
    /// it starts again in a version from the list, or gives up if there is none.
    pub(super) fn on_version_negotiation(&mut self, b: &[u8], hdr: &HeaderLayout) -> Result<()> {
        let answered = self.vn_original_version.is_some();
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
        if versions.contains(&self.version) {
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
        self.vn_original_version = Some(self.version);
        self.version = version;
        self.local_tp.version_information = Some(local_version_information(version, false));
        let params = self.local_tp.encode_to_vec(false)?;
        self.tls.restart_client(params)?;

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
        self.zero_rtt = None;
        self.recovery = super::build_recovery(&self.recovery_config, self.cc_factory.as_deref());

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
        if self.is_server {
            return match &tp.version_information {
                Some(vi) if vi.chosen_version != self.version => Err(version_negotiation_error(
                    "chosen version differs from the packets'",
                )),
                _ => Ok(()),
            };
        }
        let Some(original) = self.vn_original_version else {
            return match &tp.version_information {
                Some(vi) if vi.chosen_version != self.version => Err(version_negotiation_error(
                    "server chose a version we did not offer",
                )),
                _ => Ok(()),
            };
        };
        // We reacted to Version Negotiation: the server's information is mandatory, except
        // that a version 1 server may lack it (§8).
        let assumed_v1 = VersionInformation {
            chosen_version: QUIC_V1,
            available_versions: vec![QUIC_V1],
        };
        let vi = match &tp.version_information {
            Some(vi) => vi,
            None if self.version == QUIC_V1 => &assumed_v1,
            None => return Err(version_negotiation_error("no version information after VN")),
        };
        if vi.chosen_version != self.version {
            return Err(version_negotiation_error(
                "chosen version is not the negotiated one",
            ));
        }
        // Would we have picked the same version had the VN listed what the server supports?
        let mut offered = vi.available_versions.clone();
        offered.push(self.version);
        if vi.available_versions.is_empty()
            || select_version(&offered) != Some(self.version)
            || offered.contains(&original)
        {
            return Err(version_negotiation_error("version downgrade"));
        }
        Ok(())
    }
}
