//! Which QUIC version the connection speaks and how it got there: the version of its packets,
//! the one it started in when Version Negotiation (RFC 9368 §2.1) or compatible version
//! negotiation (RFC 9368 §2.3, RFC 9369) moved it, a client's tentative switch, and the rules
//! that check the peer's Version Information against that history (RFC 9368 §4).
//!
//! `version_switch.rs` is the connection's side: it restarts the handshake, installs keys and
//! tells TLS; this file holds the state and the decisions that need nothing else.

use super::state::ConnectionError;
use crate::crypto::DirectionalKeys;
use crate::error::WireErrorCode;
use crate::packet::{is_grease_version, Type, QUIC_V1, SUPPORTED_VERSIONS};
use crate::transport_params::{TransportParams, VersionInformation};

/// The version this library picks from `offered`: the first of its own, in preference order,
/// that the list contains (reserved versions never match, RFC 9368 §3).
pub(super) fn select_version(offered: &[u32]) -> Option<u32> {
    SUPPORTED_VERSIONS
        .iter()
        .copied()
        .find(|v| offered.contains(v) && !is_grease_version(*v))
}

/// The Version Information an endpoint sends: its version, and what it offers (RFC 9368 §5).
/// A client's first flight is compatible with its own version and with the `compatible` ones
/// it may be moved to; a server lists the versions it supports, in its order of preference.
pub(super) fn local_version_information(
    version: u32,
    is_server: bool,
    compatible: &[u32],
) -> VersionInformation {
    let available_versions = if is_server {
        if compatible.is_empty() {
            SUPPORTED_VERSIONS.to_vec()
        } else {
            compatible.to_vec()
        }
    } else {
        // Ordered by descending preference, the chosen version included (RFC 9368 §5).
        let mut list = compatible.to_vec();
        if !list.contains(&version) {
            list.push(version);
        }
        list
    };
    VersionInformation {
        chosen_version: version,
        available_versions,
    }
}

fn version_negotiation_error(reason: &str) -> ConnectionError {
    ConnectionError {
        is_app: false,
        error_code: WireErrorCode::VersionNegotiationError as u64,
        reason: reason.as_bytes().to_vec(),
    }
}

/// A client's tentative move to the version of a received packet, with what to restore if
/// the packet does not authenticate.
struct PendingSwitch {
    /// The version before the switch.
    original: u32,
    /// The Initial keys of that version.
    open: Option<DirectionalKeys>,
    seal: Option<DirectionalKeys>,
}

/// The connection's version and its history.
pub(super) struct VersionState {
    /// The version of the packets we send now.
    current: u32,
    /// The version of the first flight, once a client answered Version Negotiation with a new
    /// one (RFC 9368 §2.1); the server's Version Information is checked against it.
    vn_original: Option<u32>,
    /// The version of the client's first Initial when compatible version negotiation moved
    /// the connection to another one (RFC 9368 §2.3).
    compat_original: Option<u32>,
    /// The versions compatible negotiation may pick, in order of preference (see
    /// `Config::set_compatible_versions`).
    compatible: Vec<u32>,
    /// A client's switch waiting for its packet to authenticate.
    pending_switch: Option<PendingSwitch>,
}

impl VersionState {
    /// A connection starting in `version`, which compatible negotiation may move to one of
    /// `compatible`.
    pub(super) fn new(version: u32, compatible: Vec<u32>) -> Self {
        VersionState {
            current: version,
            vn_original: None,
            compat_original: None,
            compatible,
            pending_switch: None,
        }
    }

    /// The version of the packets we send now.
    pub(super) fn current(&self) -> u32 {
        self.current
    }

    /// The versions compatible negotiation may pick.
    pub(super) fn compatible(&self) -> &[u32] {
        &self.compatible
    }

    /// The client's original version, once compatible negotiation moved the connection.
    pub(super) fn compat_original(&self) -> Option<u32> {
        self.compat_original
    }

    /// The version the client's first packets were in (it chose it; RFC 9368 §4).
    pub(super) fn first_packets(&self) -> u32 {
        self.compat_original.unwrap_or(self.current)
    }

    /// A client answered Version Negotiation already.
    pub(super) fn answered_version_negotiation(&self) -> bool {
        self.vn_original.is_some()
    }

    /// A client starts again in `version` after Version Negotiation.
    pub(super) fn restart_in(&mut self, version: u32) {
        self.vn_original = Some(self.current);
        self.current = version;
    }

    /// A server takes the version of the client's first Initial.
    pub(super) fn take_client_version(&mut self, version: u32) {
        self.current = version;
    }

    /// The version a server prefers among those the client's Version Information offers.
    pub(super) fn choose_compatible(&self, offered: &VersionInformation) -> Option<u32> {
        self.compatible
            .iter()
            .copied()
            .find(|v| offered.available_versions.contains(v) && !is_grease_version(*v))
    }

    /// A server moves the client's connection to `version`; only once. Whether it moved.
    pub(super) fn switch_compatible(&mut self, version: u32) -> bool {
        if self.compat_original.is_some() {
            return false;
        }
        self.compat_original = Some(self.current);
        self.current = version;
        true
    }

    /// Whether a client may follow the server to `version`, seen in a packet of type `ty`:
    /// an Initial in a version it offered and supports, before any switch or negotiation.
    pub(super) fn may_follow(&self, ty: Type, version: u32) -> bool {
        self.compat_original.is_none()
            && self.vn_original.is_none()
            && ty == Type::Initial
            && version != self.current
            && self.compatible.contains(&version)
            && crate::packet::version_is_supported(version)
    }

    /// A client moves to `version` tentatively, keeping the Initial keys it replaced.
    pub(super) fn begin_switch(
        &mut self,
        version: u32,
        open: Option<DirectionalKeys>,
        seal: Option<DirectionalKeys>,
    ) {
        self.pending_switch = Some(PendingSwitch {
            original: self.current,
            open,
            seal,
        });
        self.current = version;
    }

    /// The switch's packet authenticated: the switch is final. Whether there was one.
    pub(super) fn confirm_switch(&mut self) -> bool {
        match self.pending_switch.take() {
            Some(switch) => {
                self.compat_original = Some(switch.original);
                true
            }
            None => false,
        }
    }

    /// The switch's packet did not authenticate: back to the original version; the Initial
    /// keys to restore, if there was a switch.
    #[allow(clippy::type_complexity)]
    pub(super) fn undo_switch(
        &mut self,
    ) -> Option<(Option<DirectionalKeys>, Option<DirectionalKeys>)> {
        let switch = self.pending_switch.take()?;
        self.current = switch.original;
        Some((switch.open, switch.seal))
    }

    /// Whether a long header packet of `version` is one this connection takes: its own
    /// version, or, on a server that moved the client, the client's Initial and 0-RTT packets
    /// in the original version (RFC 9369 §4.1).
    pub(super) fn accepts(&self, is_server: bool, ty: Type, version: u32) -> bool {
        version == self.current
            || (is_server
                && Some(version) == self.compat_original
                && matches!(ty, Type::Initial | Type::ZeroRTT))
    }

    /// The version of a long header we send: 0-RTT stays in the version the client started
    /// in (RFC 9369 §4.1).
    pub(super) fn of_long_header(&self, is_server: bool, ty: Type) -> u32 {
        match (ty, self.compat_original) {
            (Type::ZeroRTT, Some(original)) if !is_server => original,
            _ => self.current,
        }
    }

    /// Checks the peer's Version Information (RFC 9368 §4). Returns the error to close with.
    pub(super) fn check_peer_information(
        &self,
        is_server: bool,
        tp: &TransportParams,
    ) -> std::result::Result<(), ConnectionError> {
        if is_server {
            // The client chose the version of its first packets, which compatible negotiation
            // may have left behind (RFC 9368 §4).
            let packets = self.first_packets();
            return match &tp.version_information {
                Some(vi) if vi.chosen_version != packets => Err(version_negotiation_error(
                    "chosen version differs from the packets'",
                )),
                Some(vi)
                    if self.compat_original.is_some()
                        && !vi.available_versions.contains(&self.current) =>
                {
                    Err(version_negotiation_error(
                        "switched to a version not offered",
                    ))
                }
                _ => Ok(()),
            };
        }
        let Some(original) = self.vn_original else {
            return match &tp.version_information {
                Some(vi) if vi.chosen_version != self.current => Err(version_negotiation_error(
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
            None if self.current == QUIC_V1 => &assumed_v1,
            None => return Err(version_negotiation_error("no version information after VN")),
        };
        if vi.chosen_version != self.current {
            return Err(version_negotiation_error(
                "chosen version is not the negotiated one",
            ));
        }
        // Would we have picked the same version had the VN listed what the server supports?
        let mut offered = vi.available_versions.clone();
        offered.push(self.current);
        if vi.available_versions.is_empty()
            || select_version(&offered) != Some(self.current)
            || offered.contains(&original)
        {
            return Err(version_negotiation_error("version downgrade"));
        }
        Ok(())
    }
}
