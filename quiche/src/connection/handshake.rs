//! The handshake glue: Initial keys, TLS output into CRYPTO streams, key installation,
//! transport parameters, and the moments keys are discarded (RFC 9001 §4.9).

use std::time::{Duration, Instant};

use super::key_phase::OneRttKeys;
use super::Connection;
use crate::error::{Error, Result};
use crate::packet::{ConnectionId, Epoch};
use crate::tls::HandshakeEvent;
use crate::transport_params::{ExpectedCids, TransportParams};

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Derives the Initial keys from the client's first Destination Connection ID.
    pub(super) fn install_initial_keys(&mut self) -> Result<()> {
        let (open, seal) =
            crate::crypto::initial_keys_for(self.versions.current(), &self.odcid, self.is_server)?;
        let space = self.space(Epoch::Initial);
        space.open = Some(open);
        space.seal = Some(seal);
        Ok(())
    }

    /// The server learnt the client's original DCID: its transport parameters can be set.
    /// A server accepted after a Retry whose Source Connection ID was `retry_scid`: its
    /// parameters echo it (RFC 9000 §7.3), and the client's Initial and 0-RTT packets
    /// addressed to it are the connection's until the client switches to our own ID.
    pub(super) fn set_retry_source(&mut self, retry_scid: &ConnectionId) -> Result<()> {
        let retry_scid = retry_scid.clone().into_owned();
        self.local_tp.retry_source_connection_id = Some(retry_scid.clone());
        self.retry_scid = Some(retry_scid);
        self.set_server_transport_params()
    }

    pub(super) fn set_server_transport_params(&mut self) -> Result<()> {
        if self.local_tp.original_destination_connection_id.is_none() {
            self.local_tp.original_destination_connection_id = Some(self.odcid.clone());
        }
        let encoded = self.local_tp.encode_to_vec(true)?;
        self.tls.set_transport_params(encoded)
    }

    /// Moves everything TLS has to say into the CRYPTO streams and key slots, and notices the
    /// end of the handshake.
    pub(super) fn drive_handshake(&mut self) -> Result<()> {
        #[cfg(feature = "boringssl-boring-crate")]
        self.apply_handshake_overrides();
        while let Some(event) = self.tls.next_event()? {
            match event {
                HandshakeEvent::Data { epoch, data } => {
                    self.space(epoch).crypto_send.push(&data);
                }
                HandshakeEvent::HandshakeKeys(keys) => {
                    let space = self.space(Epoch::Handshake);
                    space.open = Some(keys.remote);
                    space.seal = Some(keys.local);
                }
                HandshakeEvent::OneRttKeys { keys, next } => {
                    self.one_rtt = Some(OneRttKeys::new(keys, next));
                }
            }
        }

        self.install_zero_rtt_keys();

        if !self.is_server && self.tls.is_handshaking() {
            // Before the server's parameters arrive, rustls gives a resuming client the ones
            // remembered from the earlier connection: they set the limits of 0-RTT data only
            // (RFC 9000 §7.4.1).
            if self.zero_rtt.is_installed() && self.flow.tx_max_data() == 0 {
                if let Some(raw) = self.tls.peer_transport_params() {
                    let raw = raw.to_vec();
                    self.apply_remembered_transport_params(&raw)?;
                }
            }
        } else if self.peer_tp.is_none() {
            if let Some(raw) = self.tls.peer_transport_params() {
                let raw = raw.to_vec();
                self.apply_peer_transport_params(&raw)?;
            }
        }

        if !self.handshake_complete && !self.tls.is_handshaking() {
            self.on_handshake_complete()?;
        }
        Ok(())
    }

    /// Validates and applies the peer's transport parameters (RFC 9000 §7.3, §18).
    fn apply_peer_transport_params(&mut self, raw: &[u8]) -> Result<()> {
        let tp = TransportParams::decode_keeping_unknown(
            raw,
            !self.is_server,
            self.tuning.unknown_transport_params_budget,
        )?;
        if let Err(e) = self.check_version_information(&tp) {
            let now = self.last_now.unwrap_or_else(Self::wall_now);
            self.close_with(e, now);
            return Err(Error::InvalidTransportParam);
        }
        if self.is_server {
            tp.validate_connection_ids(&ExpectedCids {
                initial_source: &self.dcid,
                original_destination: None,
                retry_source: None,
            })?;
        } else {
            tp.validate_connection_ids(&ExpectedCids {
                initial_source: &self.dcid,
                original_destination: Some(&self.odcid),
                retry_source: self.retry_scid.as_deref(),
            })?;
        }

        self.lifecycle.on_peer_idle_timeout(
            (tp.max_idle_timeout > 0).then(|| Duration::from_millis(tp.max_idle_timeout)),
        );
        self.flow.on_peer_max_data(tp.initial_max_data);
        self.streams.set_peer_transport_params(
            tp.initial_max_stream_data_bidi_local,
            tp.initial_max_stream_data_bidi_remote,
            tp.initial_max_stream_data_uni,
            tp.initial_max_streams_bidi,
            tp.initial_max_streams_uni,
        )?;
        self.peer_ack_delay_exponent = tp.ack_delay_exponent;
        self.set_peer_max_ack_delay(Duration::from_millis(tp.max_ack_delay));
        let peer_max = usize::try_from(tp.max_udp_payload_size).unwrap_or(usize::MAX);
        self.pmtud_set_peer_max(peer_max);
        #[cfg(feature = "qlog")]
        if let Some(q) = self.qlog.as_deref_mut() {
            let now = self.last_now.unwrap_or_else(Self::wall_now);
            q.parameters_set(now, crate::qlog::Owner::Remote, &tp);
        }
        self.init_peer_cids(&tp);
        self.negotiate_ack_frequency(&tp);
        self.peer_tp = Some(tp);
        Ok(())
    }

    /// The remembered parameters of a resumed session: only the limits 0-RTT data needs.
    fn apply_remembered_transport_params(&mut self, raw: &[u8]) -> Result<()> {
        let tp = TransportParams::decode(raw, true)?;
        self.flow.set_remembered_max_data(tp.initial_max_data);
        self.streams.set_peer_transport_params(
            tp.initial_max_stream_data_bidi_local,
            tp.initial_max_stream_data_bidi_remote,
            tp.initial_max_stream_data_uni,
            tp.initial_max_streams_bidi,
            tp.initial_max_streams_uni,
        )
    }

    fn on_handshake_complete(&mut self) -> Result<()> {
        if self.peer_tp.is_none() {
            return Err(Error::InvalidTransportParam);
        }
        self.handshake_complete = true;
        self.lifecycle.on_established();
        #[cfg(feature = "qlog")]
        {
            let now = self.last_now.unwrap_or_else(Self::wall_now);
            self.qlog_state(now, crate::qlog::ConnectionState::HandshakeCompleted);
        }
        if self.tuning.automatic_connection_ids {
            self.issue_scids()?;
        }
        self.early_data_reason = self.settle_early_data_reason();
        if !self.is_server && self.zero_rtt.is_installed() && !self.tls.is_early_data_accepted() {
            self.on_zero_rtt_rejected()?;
        }
        // 0-RTT keys are done with once 1-RTT keys are in use (RFC 9001 §4.9.3); a server keeps
        // them briefly for reordered 0-RTT packets, which we simply drop.
        self.zero_rtt.discard();
        if self.is_server {
            // The server's handshake is confirmed as soon as it completes (RFC 9001 §4.1.2).
            self.handshake_done_pending = true;
            let now = self.last_now.unwrap_or_else(Self::wall_now);
            self.on_handshake_confirmed(now);
        }
        Ok(())
    }

    /// Why 0-RTT was or was not used, in BoringSSL's `ssl_early_data_reason_t` numbering
    /// (what quiche's `early_data_reason` reports), once the handshake completed: BoringSSL's
    /// own answer on that backend; on rustls, derived as BoringSSL decides it (client:
    /// `should_offer_early_data` and the server's answer; server: its choice on reading the
    /// ClientHello) from what rustls tells.
    fn settle_early_data_reason(&self) -> u32 {
        if let Some(reason) = self.tls.early_data_reason() {
            return reason;
        }
        use crate::tls::early_data_reason::{
            ACCEPTED, DISABLED, NO_SESSION_OFFERED, PEER_DECLINED, SESSION_NOT_RESUMED,
            UNSUPPORTED_FOR_SESSION,
        };
        if !self.early_data_enabled {
            return DISABLED;
        }
        if self.tls.is_early_data_accepted() {
            return ACCEPTED;
        }
        if !self.tls.session_offered() {
            return NO_SESSION_OFFERED;
        }
        // A client given a session that did not offer early data: the session does not allow
        // it. A server that resumed but did not accept: the client did not ask for it, or rustls
        // refused it (another ALPN, a stale ticket), which BoringSSL would name more precisely.
        let offered_early_data = self.zero_rtt.is_installed();
        match (self.is_server, offered_early_data, self.tls.is_resumed()) {
            (false, false, _) => UNSUPPORTED_FOR_SESSION,
            (_, _, false) => SESSION_NOT_RESUMED,
            _ => PEER_DECLINED,
        }
    }

    /// Why 0-RTT was or was not used: BoringSSL's `ssl_early_data_reason_t` as quiche reports
    /// it (0 until the handshake completes, 1 early data not enabled, 2 accepted, 4 the peer
    /// declined or did not offer it, 5 no session offered, 6 the offered session was not
    /// resumed, 7 the session does not allow early data; on BoringSSL also its other reasons,
    /// e.g. 9 for a ticket issued under another ALPN).
    pub fn early_data_reason(&self) -> u32 {
        self.early_data_reason
    }

    /// The server rejected 0-RTT (RFC 9001 §4.6.2). Its packets will never be acknowledged:
    /// their recovery state goes without a congestion signal (RFC 9002 §6.4) and what they
    /// carried is sent again in 1-RTT, within the server's new limits rather than the
    /// remembered ones (RFC 9000 §7.4.1; see `stream::zero_rtt` for streams beyond them).
    fn on_zero_rtt_rejected(&mut self) -> Result<()> {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let tp = self.peer_tp.as_ref().ok_or(Error::InvalidTransportParam)?;
        let kept = self.streams.on_zero_rtt_rejected(
            tp.initial_max_stream_data_bidi_local,
            tp.initial_max_stream_data_bidi_remote,
            tp.initial_max_stream_data_uni,
            tp.initial_max_streams_bidi,
            tp.initial_max_streams_uni,
            tp.initial_max_data,
        )?;
        self.flow.on_zero_rtt_rejected(tp.initial_max_data, kept);
        let sent: Vec<_> = self
            .recovery
            .sent_packets(Epoch::Application)
            .iter()
            .map(|p| p.payload.clone())
            .collect();
        self.recovery.discard_in_flight(
            Epoch::Application,
            now,
            &mut self.paths.active_mut().sender,
        );
        for frames in &sent {
            self.on_frames_lost(Epoch::Application, frames);
        }
        Ok(())
    }

    /// The handshake is confirmed: Handshake keys go (RFC 9001 §4.9.2).
    pub(super) fn on_handshake_confirmed(&mut self, now: Instant) {
        if self.handshake_confirmed {
            return;
        }
        self.handshake_confirmed = true;
        self.recovery
            .on_handshake_confirmed(now, &self.paths.active().sender);
        self.pmtud_start(now);
        #[cfg(feature = "qlog")]
        self.qlog_state(now, crate::qlog::ConnectionState::HandshakeConfirmed);
        self.discard_epoch(Epoch::Handshake, now);
        // No Initial packet can matter any more either.
        self.discard_epoch(Epoch::Initial, now);
    }

    /// Drops the keys and recovery state of `epoch`.
    pub(super) fn discard_epoch(&mut self, epoch: Epoch, now: Instant) {
        if self.spaces[epoch.index()].discarded {
            return;
        }
        self.spaces[epoch.index()].discard();
        self.recovery
            .discard_epoch(epoch, now, &mut self.paths.active_mut().sender);
    }

    /// The max_ack_delay the peer may use (its transport parameter, or what ACK frequency asked
    /// for): every path's RTT estimate needs it, the ones not in use yet too.
    pub(super) fn set_peer_max_ack_delay(&mut self, max_ack_delay: Duration) {
        for (_, path) in self.paths.iter_mut() {
            path.sender.set_max_ack_delay(max_ack_delay);
        }
    }

    /// A client learns the server's connection ID from the first packet it receives
    /// (RFC 9000 §7.2).
    pub(super) fn learn_peer_cid(&mut self, scid: &[u8]) {
        if !self.is_server && !self.dcid_from_peer {
            self.dcid = ConnectionId::from_vec(scid.to_vec());
            self.dcid_from_peer = true;
        }
    }

    /// A server learns the client's connection IDs from its first Initial.
    pub(super) fn on_first_client_initial(
        &mut self,
        dcid: &[u8],
        scid: &[u8],
        version: u32,
    ) -> Result<()> {
        // A server takes clients in every version it supports (RFC 9369 §4): the connection
        // speaks the client's, unless compatible negotiation moves it (`on_client_hello`).
        if version != self.versions.current() {
            self.versions.take_client_version(version);
            self.tls.set_version(version)?;
            self.local_tp.version_information =
                Some(super::version_state::local_version_information(
                    version,
                    true,
                    self.versions.compatible(),
                ));
        }
        self.dcid = ConnectionId::from_vec(scid.to_vec());
        self.dcid_from_peer = true;
        if self.local_tp.original_destination_connection_id.is_none() {
            self.odcid = ConnectionId::from_vec(dcid.to_vec());
        }
        #[cfg(feature = "qlog")]
        self.start_pending_qlog();
        // The Initial keys, derived from this DCID (after a Retry, the one the server chose),
        // were installed when the packet was opened.
        self.set_server_transport_params()
    }
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Sets our `max_idle_timeout` transport parameter, in milliseconds (0: none), as quiche's
    /// `Connection::set_max_idle_timeout`: only right after the connection was created, before
    /// any packet was sent or received. `InvalidState` once the handshake took the
    /// parameters.
    pub fn set_max_idle_timeout(&mut self, v: u64) -> Result<()> {
        if self.stats.sent > 0 || self.stats.recv > 0 {
            return Err(Error::InvalidState);
        }
        let v = v.min(octets::MAX_VAR_INT);
        self.local_tp.max_idle_timeout = v;
        self.lifecycle
            .set_local_idle_timeout((v > 0).then(|| Duration::from_millis(v)));
        // A server's parameters are encoded once the client's original DCID is known.
        if self.is_server && self.local_tp.original_destination_connection_id.is_none() {
            return Ok(());
        }
        let encoded = self.local_tp.encode_to_vec(self.is_server)?;
        self.tls.set_transport_params(encoded)
    }
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// A client received a Retry (RFC 9000 §17.2.5.2): check it, then start over towards the
    /// connection ID the server chose, with its token, keeping packet numbers.
    pub(super) fn on_retry(&mut self, b: &[u8], hdr: &crate::packet::HeaderLayout) -> Result<()> {
        // Only one Retry, only before anything else came from the server, and only in the
        // client's version (RFC 9369 §4.1).
        if self.is_server
            || self.retry_scid.is_some()
            || self.dcid_from_peer
            || self.stats.recv > 0
            || hdr.version != self.versions.current()
        {
            return Ok(());
        }
        let packet = b.get(..hdr.packet_len).ok_or(Error::InvalidPacket)?;
        if crate::packet::verify_retry_integrity(packet, &self.odcid).is_err() {
            self.stats.dropped += 1;
            return Ok(());
        }
        let token = hdr.token.map(|t| t.get(b)).unwrap_or(&[]);
        if token.is_empty() {
            self.stats.dropped += 1;
            return Ok(());
        }
        let scid = ConnectionId::from_vec(hdr.scid.get(b).to_vec());
        self.token = Some(token.to_vec());
        self.dcid = scid.clone();
        self.retry_scid = Some(scid);

        // New Initial keys from the server's chosen connection ID (RFC 9001 §5.2).
        let (open, seal) =
            crate::crypto::initial_keys_for(self.versions.current(), &self.dcid, false)?;
        let space = self.space(Epoch::Initial);
        space.open = Some(open);
        space.seal = Some(seal);

        // Loss recovery starts afresh (RFC 9002 §6.3), but what was sent must be sent again:
        // the ClientHello and any 0-RTT data.
        for epoch in [Epoch::Initial, Epoch::Application] {
            let sent: Vec<_> = self
                .recovery
                .sent_packets(epoch)
                .iter()
                .map(|p| p.payload.clone())
                .collect();
            for frames in &sent {
                self.on_frames_lost(epoch, frames);
            }
        }
        self.recovery = crate::recovery::Recovery::new(&self.recovery_config);
        *self.sender_mut() = self.fresh_sender();
        self.space(Epoch::Initial).crypto_send.resend_all_unacked();
        Ok(())
    }
}

/// The connection's BoringSSL `SSL`, as quiche gives it: for BoringSSL settings made per
/// connection (e.g. in a certificate selection callback, as tokio-quiche does).
///
/// # Panics
/// If the connection runs on rustls, which only happens when its config was made with
/// [`crate::Config::with_tls_backend`]`(.., TlsBackend::Rustls)`.
#[cfg(feature = "boringssl-boring-crate")]
impl<F: crate::buffers::BufFactory> AsMut<boring::ssl::SslRef> for Connection<F> {
    fn as_mut(&mut self) -> &mut boring::ssl::SslRef {
        match self.tls.boringssl_mut() {
            Some(ssl) => ssl,
            None => panic!("AsMut<SslRef>: this connection runs on rustls, not BoringSSL"),
        }
    }
}
