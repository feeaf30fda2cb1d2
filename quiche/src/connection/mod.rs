//! The QUIC connection: the public API and the coordination of TLS, packet spaces, recovery and
//! streams. The receive pipeline is in `recv.rs`, the send pipeline in `send.rs`, the effects of
//! each frame in `frames.rs`, and the handshake glue in `handshake.rs`.
//!
//! Everything takes `now` from the caller. The methods without `_at` (`recv`, `send`,
//! `timeout`, `on_timeout`) are quiche-compatible wrappers and the only places that read the
//! clock.

mod ack_frequency;
mod datagram;
pub mod ecn;
mod frames;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzzing;
mod handshake;
mod ids;
mod migration;
mod pmtud;
mod qlog;
mod recv;
mod send;
pub mod sent;
pub mod spaces;
pub mod state;
pub mod stats;
#[cfg(test)]
pub(crate) mod tests;
mod version;

use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::buffers::{BufFactory, DefaultBufFactory};
use crate::cid::{ConnectionIds, ResetTokenKey};
use crate::config::Config;
use crate::dgram::DatagramQueue;
use crate::error::{Error, Result};
use crate::flow_control::FlowControl;
use crate::packet::{ConnectionId, Epoch};
use crate::recovery::{AckOutcome, Recovery, RecoveryConfig};
use crate::stream::{Shutdown, StreamConfig, StreamIter, StreamMap};
use crate::tls::{DirectionalKeys, Handshake};
use crate::transport_params::TransportParams;

use self::sent::SentFrames;
use self::spaces::{OneRttKeys, PacketSpace};
use self::state::Lifecycle;

pub use self::state::ConnectionError;
pub use self::stats::{PathStats, PathStatsIter, Stats};

/// Information about a received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// The address the datagram came from.
    pub from: SocketAddr,
    /// The address it was received on.
    pub to: SocketAddr,
}

/// Information about a datagram to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendInfo {
    /// The local address to send from.
    pub from: SocketAddr,
    /// The address to send to.
    pub to: SocketAddr,
    /// When to send it: pacing asks the application to hold the datagram until then.
    pub at: Instant,
    /// The ECN codepoint to put in the two low bits of the IP header's TOS / traffic class
    /// byte: [`ecn::ECT0`] while the path the datagram goes out on is being validated for ECN
    /// or was found capable, 0 (not-ECT) otherwise and on probes of other paths (RFC 9000
    /// §13.4; each path is validated on its own). Beyond quiche's API.
    pub ecn: u8,
}

/// The ACK Delay exponent of Initial and Handshake packets, in both directions, whatever the
/// transport parameters say (they may not be known yet).
const HANDSHAKE_ACK_DELAY_EXPONENT: u64 = 3;

/// A QUIC connection.
///
/// `F` makes the buffers that hold stream and datagram data (see [`BufFactory`]); plain
/// `Connection` uses the default, heap-allocated ones.
pub struct Connection<F: BufFactory = DefaultBufFactory> {
    is_server: bool,
    version: u32,

    /// The connection ID we chose; the peer addresses packets to it.
    scid: ConnectionId<'static>,
    /// The connection ID we address packets to.
    dcid: ConnectionId<'static>,
    /// The Destination Connection ID of the client's first Initial (derives Initial keys and
    /// must come back in the server's `original_destination_connection_id`).
    odcid: ConnectionId<'static>,
    /// Whether the client has learnt the server's connection ID from its first packet.
    dcid_from_peer: bool,
    /// The token a client puts in its Initial packets (from a Retry).
    token: Option<Vec<u8>>,
    /// The Source Connection ID of the Retry the client processed, which the server's
    /// `retry_source_connection_id` must match (RFC 9000 §7.3).
    retry_scid: Option<ConnectionId<'static>>,
    /// The version of the first flight, once a client answered Version Negotiation with a new
    /// one (RFC 9368 §2.1); the server's Version Information is checked against it.
    vn_original_version: Option<u32>,
    /// The version of the client's first Initial when compatible version negotiation moved
    /// the connection to another one (RFC 9368 §2.3).
    compat_original: Option<u32>,
    /// The versions compatible negotiation may pick, in order of preference (see
    /// [`Config::set_compatible_versions`]).
    compatible_versions: Vec<u32>,
    /// A client's tentative move to the version of a received packet, with what to restore
    /// if the packet does not authenticate: the version and the Initial keys.
    pending_switch: Option<(
        u32,
        Option<crate::crypto::DirectionalKeys>,
        Option<crate::crypto::DirectionalKeys>,
    )>,

    /// The connection's paths (RFC 9000 §9): addresses, validation, amplification budgets.
    paths: crate::path::PathSet,
    /// The path the datagram being processed arrived on (`None`: a path not seen before,
    /// created once a packet of the datagram authenticates).
    recv_path: Option<usize>,
    /// `recv_path` was created by the packet being processed (see `settle_new_path`).
    recv_path_new: bool,
    /// The path a new path's packet moved the peer to, once the path is settled.
    migrate_to: Option<usize>,
    /// The datagram being processed (for the path that `recv_path` may create).
    recv_info: Option<(RecvInfo, usize)>,
    /// The path the datagram being built goes out on.
    send_path: usize,
    /// The packet being built is a probe on a path other than the active one: only
    /// PATH_CHALLENGE/PATH_RESPONSE frames go in it.
    probe_only: bool,
    /// A PATH_CHALLENGE or PATH_RESPONSE went into the packet being built: the datagram is
    /// padded to 1200 bytes (RFC 9000 §8.2.1, §8.2.2).
    pad_for_path_frames: bool,
    /// The validated path to come back to if the active path fails validation (§9.3.2).
    fallback_path: Option<usize>,

    tls: Handshake,
    local_tp: TransportParams,
    peer_tp: Option<TransportParams>,

    spaces: [PacketSpace; 3],
    one_rtt: Option<OneRttKeys>,
    /// 0-RTT keys: the client seals with them, the server opens with them.
    zero_rtt: Option<DirectionalKeys>,

    recovery: Recovery<SentFrames>,
    /// Spaces ack-eliciting datagrams out at the congestion controller's rate.
    pacer: crate::cc::pacer::Pacer,
    recovery_config: RecoveryConfig,
    cc_factory: Option<std::sync::Arc<dyn crate::cc::CcFactory>>,
    /// Makes the IDs we issue (random bytes without one).
    cid_generator: Option<std::sync::Arc<dyn crate::cid::ConnectionIdGenerator>>,
    ack_outcome: AckOutcome<SentFrames>,
    /// Records of sent packets reused to avoid an allocation per packet.
    frames_pool: Vec<SentFrames>,

    streams: StreamMap,
    /// Connection-level receive window (MAX_DATA we advertise).
    rx_fc: FlowControl,
    /// Sum of the highest offsets received on all streams (checked against our MAX_DATA).
    rx_data: u64,
    /// Stream bytes the application committed for sending.
    tx_data: u64,
    /// Stream bytes sent for the first time (not retransmissions): `tx_data - tx_emitted` were
    /// written and wait to be sent.
    tx_emitted: u64,
    /// CRYPTO data went to TLS since the last `drive_handshake`.
    tls_fed: bool,
    /// `Config::set_max_unsent_stream_data`.
    max_unsent_stream_data: u64,
    /// The peer's MAX_DATA.
    tx_max_data: u64,
    max_data_pending: bool,
    data_blocked_sent_at: Option<u64>,

    lifecycle: Lifecycle,
    handshake_complete: bool,
    handshake_confirmed: bool,
    handshake_done_pending: bool,
    /// The peer acknowledged our HANDSHAKE_DONE (server): probes stop repeating it.
    handshake_done_acked: bool,
    /// Anti-deadlock probe asked for by recovery (clients, RFC 9002 §6.2.2.1).
    anti_deadlock_probe: bool,
    /// Where the last PTO without new data stopped queueing a stream's unacknowledged bytes
    /// again (stream ID, offset): the next one goes on from there.
    probe_requeue_cursor: Option<(u64, u64)>,
    /// ECN bookkeeping per packet number space (RFC 9000 §13.4.1); each path has its own
    /// validation (`Path::ecn`).
    ecn: crate::ecn::EcnLedger,
    /// The ECN codepoint of the datagram being processed (`recv_with_ecn`), counted for each of
    /// its packets that is processed.
    recv_ecn: u8,
    /// 1-RTT packets that arrived before the keys to open them (servers before the handshake
    /// completes); replayed once the keys are usable. Bounded.
    undecryptable: Vec<(Vec<u8>, RecvInfo, u8)>,

    /// Our connection IDs and the peer's (NEW/RETIRE_CONNECTION_ID, stateless reset tokens).
    cids: ConnectionIds,
    /// DATAGRAM payloads waiting for a packet (RFC 9221).
    dgram_send: DatagramQueue,
    /// DATAGRAM payloads received and not yet read.
    dgram_recv: DatagramQueue,

    /// The largest datagram to send: the PLPMTU while path MTU discovery runs, otherwise the
    /// configured size (both capped by the peer's `max_udp_payload_size`).
    max_send_udp_payload_size: usize,
    /// The path MTU search (held by the connection until paths own one each).
    pmtud: crate::pmtud::Pmtud,
    /// The packet being written is a PMTU probe: PING + PADDING only.
    pmtu_probe_building: bool,
    /// The peer's ACK delay exponent, for decoding its ACK frames.
    peer_ack_delay_exponent: u64,
    last_now: Option<Instant>,
    /// Which 1-RTT packet numbers to skip, to catch optimistic ACKs.
    pn_skipper: crate::recovery::PnSkipper,
    /// The ACK frequency policy towards the peer, when both sides offered the extension.
    ack_freq: Option<crate::ack_frequency::AckFrequencySender>,
    stats: Stats,
    #[cfg(feature = "qlog")]
    qlog: Option<Box<crate::qlog::QlogLogger>>,
    /// A server's trace waiting for the client's first Initial (see `set_qlog`).
    #[cfg(feature = "qlog")]
    qlog_pending: Option<Box<self::qlog::PendingQlog>>,
    buf_factory: PhantomData<F>,
}

/// Builds recovery with the configured controller.
fn build_recovery(
    cfg: &RecoveryConfig,
    factory: Option<&dyn crate::cc::CcFactory>,
) -> Recovery<SentFrames> {
    match factory {
        Some(factory) => {
            Recovery::with_controller(cfg, crate::cc::Controller::from_factory(factory, &cfg.cc))
        }
        None => Recovery::new(cfg),
    }
}

/// The time whose worth of data at the sending rate one burst may hold (see
/// [`Connection::send_quantum`]); Linux sizes TSO bursts to about a millisecond the same way.
pub const SEND_QUANTUM_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// The largest burst [`Connection::send_quantum`] suggests: what one UDP GSO send can carry.
pub const MAX_SEND_QUANTUM: usize = 64 * 1024;

/// Creates a new client-side connection.
pub fn connect(
    server_name: Option<&str>,
    scid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection> {
    connect_with_buffer_factory(server_name, scid, local, peer, config)
}

/// Creates a new client-side connection whose buffers come from the factory `F`.
pub fn connect_with_buffer_factory<F: BufFactory>(
    server_name: Option<&str>,
    scid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    let mut odcid = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut odcid)
        .map_err(|_| Error::CryptoFail)?;
    new_client(
        server_name,
        scid,
        &ConnectionId::from_ref(&odcid),
        local,
        peer,
        config,
    )
}

/// Creates a new client-side connection that addresses its first packets to `dcid` instead of
/// a random connection ID. RFC 9000 §7.2 asks for at least 8 unpredictable bytes: the caller
/// is responsible for that.
#[cfg(feature = "custom-client-dcid")]
pub fn connect_with_dcid(
    server_name: Option<&str>,
    scid: &ConnectionId,
    dcid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection> {
    connect_with_dcid_and_buffer_factory(server_name, scid, dcid, local, peer, config)
}

/// [`connect_with_dcid`] with the buffers of the factory `F`.
#[cfg(feature = "custom-client-dcid")]
pub fn connect_with_dcid_and_buffer_factory<F: BufFactory>(
    server_name: Option<&str>,
    scid: &ConnectionId,
    dcid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    new_client(server_name, scid, dcid, local, peer, config)
}

fn new_client<F: BufFactory>(
    server_name: Option<&str>,
    scid: &ConnectionId,
    dcid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    let mut conn = Connection::new(false, server_name, scid, Some(dcid), local, peer, config)?;
    // The ClientHello is built at the first `send`, so that `set_session` can still offer a
    // session to resume; the Initial keys are ready now.
    conn.install_initial_keys()?;
    Ok(conn)
}

/// Creates a new server-side connection. `odcid` is the original Destination Connection ID
/// when the client's Initial arrived after a Retry (its token validated the address).
pub fn accept(
    scid: &ConnectionId,
    odcid: Option<&ConnectionId>,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection> {
    accept_with_buf_factory(scid, odcid, local, peer, config)
}

/// Creates a new server-side connection whose buffers come from the factory `F`.
pub fn accept_with_buf_factory<F: BufFactory>(
    scid: &ConnectionId,
    odcid: Option<&ConnectionId>,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    Connection::new(true, None, scid, odcid, local, peer, config)
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    fn new(
        is_server: bool,
        server_name: Option<&str>,
        scid: &ConnectionId,
        odcid: Option<&ConnectionId>,
        local: SocketAddr,
        peer: SocketAddr,
        config: &mut Config,
    ) -> Result<Self> {
        if scid.len() > crate::packet::MAX_CONN_ID_LEN {
            return Err(Error::InvalidState);
        }
        if is_server && !crate::packet::version_is_supported(config.version) {
            // A reserved version only serves a client testing Version Negotiation.
            return Err(Error::UnknownVersion);
        }
        let mut local_tp = config.local_transport_params.clone();
        local_tp.initial_source_connection_id = Some(scid.clone().into_owned());
        local_tp.version_information = Some(version::local_version_information(
            config.version,
            is_server,
            &config.compatible_versions,
        ));
        let cids = ConnectionIds::new(
            ResetTokenKey::new(&config.stateless_reset_key),
            scid,
            local_tp.active_conn_id_limit,
        );
        if is_server && !scid.is_empty() {
            // Only servers send a token for the handshake ID (RFC 9000 §18.2).
            local_tp.stateless_reset_token = Some(u128::from_be_bytes(cids.handshake_token()));
        }
        // A server that sent a Retry echoes both connection IDs (RFC 9000 §7.3); without a
        // Retry it learns the original DCID from the client's first Initial.
        if let (true, Some(odcid)) = (is_server, odcid) {
            local_tp.original_destination_connection_id = Some(odcid.clone().into_owned());
            local_tp.retry_source_connection_id = Some(scid.clone().into_owned());
        }

        let mut tls = if is_server {
            // The transport parameters are set once the client's DCID is known.
            Handshake::new_server(&mut config.tls, Vec::new())?
        } else {
            Handshake::new_client(&mut config.tls, server_name, local_tp.encode_to_vec(false)?)?
        };
        version::prepare_tls(
            &mut tls,
            is_server,
            config.version,
            &config.compatible_versions,
        )?;

        let pmtud = crate::pmtud::Pmtud::new(crate::pmtud::PmtudConfig {
            max: config.max_send_udp_payload_size,
            ..config.pmtud
        });
        // With path MTU discovery, BASE_PLPMTU until probes prove more (RFC 8899 §5.1.2).
        let max_datagram = if pmtud.is_enabled() {
            pmtud.current()
        } else {
            config.max_send_udp_payload_size
        };
        let recovery_config = RecoveryConfig {
            max_ack_delay: Duration::from_millis(25),
            initial_rtt: crate::rtt::INITIAL_RTT,
            is_server,
            cc_algorithm: config.cc_algorithm,
            cc: config.cc_config(max_datagram),
        };
        let mut recovery = build_recovery(&recovery_config, config.cc_factory.as_deref());
        // The source connection ID is random per connection: it seeds BBR's probe timing, so
        // that flows sharing a bottleneck do not probe in lockstep.
        let seed = scid
            .as_ref()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        recovery.controller_mut().seed(seed);

        let streams = StreamMap::new(
            is_server,
            StreamConfig {
                initial_max_streams_bidi: local_tp.initial_max_streams_bidi,
                initial_max_streams_uni: local_tp.initial_max_streams_uni,
                initial_max_stream_data_bidi_local: local_tp.initial_max_stream_data_bidi_local,
                initial_max_stream_data_bidi_remote: local_tp.initial_max_stream_data_bidi_remote,
                initial_max_stream_data_uni: local_tp.initial_max_stream_data_uni,
                max_stream_window: config.max_stream_window,
                ..StreamConfig::default()
            },
        );
        let mut rx_fc = FlowControl::new(local_tp.initial_max_data, config.max_connection_window);
        rx_fc.ensure_window_lower_bound(streams.largest_recv_window().saturating_mul(3) / 2);

        let idle = (local_tp.max_idle_timeout > 0)
            .then(|| Duration::from_millis(local_tp.max_idle_timeout));

        let validated_by_retry = is_server && odcid.is_some();
        let odcid = odcid.map(|c| c.clone().into_owned()).unwrap_or_default();
        let mut conn = Connection {
            is_server,
            version: config.version,
            scid: scid.clone().into_owned(),
            dcid: odcid.clone(),
            odcid,
            dcid_from_peer: false,
            token: None,
            retry_scid: None,
            vn_original_version: None,
            compat_original: None,
            compatible_versions: config.compatible_versions.clone(),
            pending_switch: None,
            paths: crate::path::PathSet::new({
                // A server accepting after a Retry has validated the address with the token
                // (RFC 9000 §8.1.2).
                let mut path =
                    crate::path::Path::new(local, peer, !is_server || validated_by_retry);
                path.amplification_limited = is_server;
                path.ecn = crate::ecn::EcnValidation::new(config.ecn);
                path
            }),
            recv_path: None,
            recv_path_new: false,
            migrate_to: None,
            recv_info: None,
            send_path: 0,
            probe_only: false,
            pad_for_path_frames: false,
            fallback_path: None,
            tls,
            local_tp,
            peer_tp: None,
            spaces: Default::default(),
            one_rtt: None,
            zero_rtt: None,
            recovery,
            pacer: crate::cc::pacer::Pacer::new(config.pacing, max_datagram),
            recovery_config,
            cc_factory: config.cc_factory.clone(),
            cid_generator: config.cid_generator.clone(),
            ack_outcome: AckOutcome::new(),
            frames_pool: Vec::new(),
            streams,
            rx_fc,
            rx_data: 0,
            tx_data: 0,
            tx_emitted: 0,
            tls_fed: false,
            max_unsent_stream_data: config.max_unsent_stream_data,
            tx_max_data: 0,
            max_data_pending: false,
            data_blocked_sent_at: None,
            lifecycle: Lifecycle::new(idle),
            handshake_complete: false,
            handshake_confirmed: false,
            handshake_done_pending: false,
            handshake_done_acked: false,
            anti_deadlock_probe: false,
            probe_requeue_cursor: None,
            ecn: crate::ecn::EcnLedger::new(config.ecn),
            recv_ecn: 0,
            undecryptable: Vec::new(),
            cids,
            dgram_send: DatagramQueue::new(config.dgram_send_queue_len),
            dgram_recv: DatagramQueue::new(config.dgram_recv_queue_len),
            max_send_udp_payload_size: max_datagram,
            pmtud,
            pmtu_probe_building: false,
            peer_ack_delay_exponent: 3,
            last_now: None,
            pn_skipper: crate::recovery::PnSkipper::new(seed.rotate_left(17)),
            ack_freq: None,
            stats: Stats {
                paths_count: 1,
                ..Stats::default()
            },
            #[cfg(feature = "qlog")]
            qlog: None,
            #[cfg(feature = "qlog")]
            qlog_pending: None,
            buf_factory: PhantomData,
        };

        // A client's Initial keys are installed by `connect`.
        if is_server && conn.local_tp.original_destination_connection_id.is_some() {
            // After a Retry the server knows everything its transport parameters need.
            conn.set_server_transport_params()?;
        }
        Ok(conn)
    }

    /// Whether this is the server side.
    pub fn is_server(&self) -> bool {
        self.is_server
    }

    // ---------------------------------------------------------------------------------------
    // The clock-reading compatibility wrappers.

    #[allow(clippy::disallowed_methods)]
    fn wall_now() -> Instant {
        Instant::now()
    }

    /// Processes a datagram received from the peer; returns the bytes consumed.
    pub fn recv(&mut self, buf: &mut [u8], info: RecvInfo) -> Result<usize> {
        self.recv_at(buf, info, Self::wall_now())
    }

    /// As [`Connection::recv`], for a datagram whose IP header carried the ECN codepoint `ecn`
    /// (the two low bits of the TOS / traffic class byte): the codepoints are counted and
    /// reported to the peer in ACK frames (RFC 9000 §13.4.1). Beyond quiche's API.
    pub fn recv_with_ecn(&mut self, buf: &mut [u8], info: RecvInfo, ecn: u8) -> Result<usize> {
        self.recv_with_ecn_at(buf, info, ecn, Self::wall_now())
    }

    /// Writes one datagram to send into `out`; `Error::Done` when there is nothing to send.
    pub fn send(&mut self, out: &mut [u8]) -> Result<(usize, SendInfo)> {
        self.send_at(out, Self::wall_now())
    }

    /// How long until `on_timeout` must be called, if a timer is armed.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_at(Self::wall_now())
    }

    /// Handles expired timers.
    pub fn on_timeout(&mut self) {
        self.on_timeout_at(Self::wall_now());
    }

    // ---------------------------------------------------------------------------------------
    // Timers.

    /// How long after `now` until `on_timeout_at` must be called, if a timer is armed.
    pub fn timeout_at(&self, now: Instant) -> Option<Duration> {
        self.timeout_instant()
            .map(|t| t.saturating_duration_since(now))
    }

    /// The instant the next timer fires, if one is armed.
    pub fn timeout_instant(&self) -> Option<Instant> {
        if self.lifecycle.is_closed() {
            return None;
        }
        let lifecycle = self.lifecycle.deadline();
        if self.lifecycle.is_closing_or_draining() {
            return lifecycle;
        }
        let acks = self.spaces.iter().filter_map(|s| s.acks.ack_deadline());
        let paths = self.paths.next_timeout(self.recovery.pto());
        [lifecycle, self.recovery.loss_detection_timer(), paths]
            .into_iter()
            .flatten()
            .chain(acks)
            .min()
    }

    /// Handles the timers due at `now`.
    pub fn on_timeout_at(&mut self, now: Instant) {
        self.last_now = Some(now);
        self.lifecycle.on_timeout(now);
        if self.lifecycle.is_closed() {
            #[cfg(feature = "qlog")]
            {
                self.qlog_state(now, crate::qlog::ConnectionState::Closed);
                if let Some(q) = self.qlog.as_deref_mut() {
                    q.flush();
                }
            }
            return;
        }
        if self.lifecycle.is_closing_or_draining() {
            return;
        }
        if let Some(keys) = self.one_rtt.as_mut() {
            keys.expire_prev(now);
        }
        self.on_loss_detection_timeout(now);
        self.on_path_timeout(now);
        // Delayed ACK deadlines need no action here: `send` sees them as due.
    }

    // ---------------------------------------------------------------------------------------
    // Streams.

    /// Writes data to a stream; returns how much was accepted (back-pressure: the rest must be
    /// written again later), `Error::Done` if nothing fits.
    pub fn stream_send(&mut self, stream_id: u64, buf: &[u8], fin: bool) -> Result<usize> {
        if self.lifecycle.is_closing_or_draining() {
            return Err(Error::InvalidState);
        }
        let capacity = self.send_capacity();
        let n = self.streams.stream_send(stream_id, buf, fin, capacity)?;
        self.tx_data += n as u64;
        Ok(n)
    }

    /// A reset (ours, or the answer to the peer's STOP_SENDING) withdrew streams' unsent
    /// bytes: they no longer count against the peer's connection window nor wait to be sent.
    fn reclaim_unsent_stream_data(&mut self) {
        let reclaimed = self.streams.take_send_reclaimed();
        self.tx_data = self.tx_data.saturating_sub(reclaimed);
    }

    /// How many more stream bytes the connection accepts over all streams: the peer's
    /// connection window (MAX_DATA) and the bound on data written but not yet sent.
    fn send_capacity(&self) -> u64 {
        let unsent = self.tx_data.saturating_sub(self.tx_emitted);
        self.tx_max_data
            .saturating_sub(self.tx_data)
            .min(self.max_unsent_stream_data.saturating_sub(unsent))
    }

    /// Reads data from a stream into `out`; returns the bytes read and whether the stream
    /// ended. `Error::Done` when nothing is readable.
    pub fn stream_recv(&mut self, stream_id: u64, out: &mut [u8]) -> Result<(usize, bool)> {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let srtt = self.recovery.rtt().smoothed_rtt();
        let result = self.streams.stream_recv(stream_id, out, now, srtt);
        let read = match &result {
            Ok((n, _)) => *n as u64,
            Err(_) => 0,
        };
        let consumed = read + self.streams.take_recv_discarded();
        self.on_consumed(consumed, now);
        result
    }

    /// Sets a stream's priority (RFC 9218: urgency 0..=7, lower first; incremental streams of
    /// one urgency share bandwidth round-robin).
    pub fn stream_priority(
        &mut self,
        stream_id: u64,
        urgency: u8,
        incremental: bool,
    ) -> Result<()> {
        self.streams
            .stream_priority(stream_id, urgency, incremental)
    }

    /// Shuts down reading (STOP_SENDING) or writing (RESET_STREAM) of a stream.
    pub fn stream_shutdown(&mut self, stream_id: u64, direction: Shutdown, err: u64) -> Result<()> {
        self.streams.stream_shutdown(stream_id, direction, err)?;
        self.reclaim_unsent_stream_data();
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        let discarded = self.streams.take_recv_discarded();
        self.on_consumed(discarded, now);
        Ok(())
    }

    /// How many bytes `stream_send` would accept on the stream now.
    pub fn stream_capacity(&self, stream_id: u64) -> Result<usize> {
        let stream = self.streams.stream_capacity(stream_id)?;
        Ok(stream
            .min(self.send_capacity())
            .try_into()
            .unwrap_or(usize::MAX))
    }

    /// Whether the stream has data to read (or an end to report).
    pub fn stream_readable(&self, stream_id: u64) -> bool {
        self.streams.stream_readable(stream_id)
    }

    /// Whether all of the stream's data was read, including its end.
    pub fn stream_finished(&self, stream_id: u64) -> bool {
        self.streams.stream_finished(stream_id)
    }

    /// Whether `len` bytes can be written to the stream now.
    pub fn stream_writable(&self, stream_id: u64, len: usize) -> Result<bool> {
        Ok(self.streams.stream_writable(stream_id, len)? && self.send_capacity() >= len as u64)
    }

    /// Stream bytes written by the application and not yet acknowledged by the peer, over all
    /// streams: what back-pressure bounds (each stream holds at most the peer's window).
    pub fn stream_send_buffered(&self) -> u64 {
        self.streams.send_buffered()
    }

    /// The streams with data to read.
    pub fn readable(&self) -> StreamIter {
        self.streams.readable()
    }

    /// The streams that accept data.
    pub fn writable(&self) -> StreamIter {
        self.streams.writable()
    }

    /// How many more bidirectional streams we may open.
    pub fn peer_streams_left_bidi(&self) -> u64 {
        self.streams.peer_streams_left_bidi()
    }

    /// How many more unidirectional streams we may open.
    pub fn peer_streams_left_uni(&self) -> u64 {
        self.streams.peer_streams_left_uni()
    }

    /// The application read or discarded `n` bytes: credit the connection window.
    fn on_consumed(&mut self, n: u64, now: Instant) {
        if n == 0 {
            return;
        }
        self.rx_fc.add_consumed(n);
        // A stream window that grew raises the connection window at once, not only at the next
        // update: otherwise the connection lags one update behind and throttles the stream.
        self.rx_fc
            .ensure_window_lower_bound(self.streams.largest_recv_window().saturating_mul(3) / 2);
        // One decision per MAX_DATA frame: a pending one carries the newest credit anyway. A
        // stream update about to go out takes the connection's along a little early.
        let alongside = self.streams.has_control_frames() && self.rx_fc.worth_updating_alongside();
        if !self.max_data_pending && (self.rx_fc.should_update_max_data() || alongside) {
            self.rx_fc
                .autotune_window(now, self.recovery.rtt().smoothed_rtt());
            self.max_data_pending = true;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Key update.

    /// Starts a key update (RFC 9001 §6): packets are sent with the next key phase from now
    /// on. Only after the handshake is confirmed, and only once a packet sent with the current
    /// keys was acknowledged (§6.5); `Error::Done` when that is not the case yet.
    pub fn initiate_key_update(&mut self) -> Result<()> {
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        self.initiate_key_update_at(now)
    }

    fn initiate_key_update_at(&mut self, now: Instant) -> Result<()> {
        if !self.handshake_confirmed {
            return Err(Error::InvalidState);
        }
        let largest_acked = self.recovery.largest_acked(Epoch::Application);
        let keep_prev = now + self.recovery.pto() * 3;
        let keys = self.one_rtt.as_mut().ok_or(Error::InvalidState)?;
        match keys.first_sent_in_phase {
            Some(first) if largest_acked.is_some_and(|l| l >= first) => {}
            _ => return Err(Error::Done),
        }
        keys.update(keep_prev);
        self.stats.local_key_updates += 1;
        Ok(())
    }

    /// Updates keys before the AEAD confidentiality limit is reached (RFC 9001 §6.6).
    pub(super) fn maybe_update_keys_for_limit(&mut self, now: Instant) {
        let Some(keys) = self.one_rtt.as_ref() else {
            return;
        };
        let limit = keys.seal.confidentiality_limit();
        if keys.sealed_in_phase >= limit - limit / 4 {
            let _ = self.initiate_key_update_at(now);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Closing.

    /// Closes the connection with the given error and reason (an application close when `app`).
    pub fn close(&mut self, app: bool, err: u64, reason: &[u8]) -> Result<()> {
        if self.lifecycle.is_closing_or_draining() {
            return Err(Error::Done);
        }
        let error = ConnectionError {
            is_app: app,
            error_code: err,
            reason: reason.to_vec(),
        };
        let now = self.last_now.unwrap_or_else(Self::wall_now);
        self.close_with(error, now);
        Ok(())
    }

    /// Starts closing with `error`: CONNECTION_CLOSE goes out in every space we have keys for,
    /// or nothing does and the connection ends if there are none (a server that never heard
    /// from the client).
    fn close_with(&mut self, error: ConnectionError, now: Instant) {
        if self.spaces.iter().all(|s| s.seal.is_none()) && self.one_rtt.is_none() {
            self.lifecycle.close_immediately(Some(error));
            return;
        }
        let pto = self.recovery.pto();
        self.lifecycle.close(error, now, pto);
        #[cfg(feature = "qlog")]
        self.qlog_state(now, crate::qlog::ConnectionState::Closing);
    }

    /// Closes because of a protocol error detected locally.
    fn close_on_error(&mut self, err: Error, now: Instant) {
        self.close_with(
            ConnectionError {
                is_app: false,
                error_code: err.to_wire(),
                reason: Vec::new(),
            },
            now,
        );
    }

    // ---------------------------------------------------------------------------------------
    // State queries.

    /// Whether the handshake completed.
    pub fn is_established(&self) -> bool {
        self.handshake_complete && !self.lifecycle.is_closing_or_draining()
    }

    /// Whether the connection is sending or accepting 0-RTT data.
    pub fn is_in_early_data(&self) -> bool {
        !self.handshake_complete && self.zero_rtt.is_some()
    }

    /// Whether the connection resumed an earlier session.
    pub fn is_resumed(&self) -> bool {
        self.tls.is_resumed()
    }

    /// The QUIC version the connection uses now: the configured one, or the one a client
    /// switched to after Version Negotiation (RFC 9368 §2.1).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Whether the connection is draining, as quiche means it: the peer closed it, or we did
    /// and our CONNECTION_CLOSE has been sent. No application data moves any more; keep calling
    /// `recv`, `timeout` and `on_timeout` until [`Connection::is_closed`] (calling `send` is
    /// optional: it only repeats CONNECTION_CLOSE to a peer that keeps sending).
    pub fn is_draining(&self) -> bool {
        self.lifecycle.is_draining_for_api()
    }

    /// Whether the connection is closed and can be freed.
    pub fn is_closed(&self) -> bool {
        self.lifecycle.is_closed()
    }

    /// Whether the idle timeout closed the connection.
    pub fn is_timed_out(&self) -> bool {
        self.lifecycle.is_timed_out()
    }

    /// The error the peer closed the connection with.
    pub fn peer_error(&self) -> Option<&ConnectionError> {
        self.lifecycle.peer_error()
    }

    /// The error we closed the connection with.
    pub fn local_error(&self) -> Option<&ConnectionError> {
        self.lifecycle.local_error()
    }

    /// The negotiated ALPN protocol (empty before the handshake chose one).
    pub fn application_proto(&self) -> &[u8] {
        self.tls.alpn().unwrap_or(&[])
    }

    /// The server name the client asked for (SNI).
    pub fn server_name(&self) -> Option<&str> {
        self.tls.server_name()
    }

    /// A string identifying the connection in logs: our connection ID in hex.
    pub fn trace_id(&self) -> String {
        format!("{:?}", self.scid)
    }

    /// Our connection ID.
    pub fn source_id(&self) -> ConnectionId<'_> {
        ConnectionId::from_ref(&self.scid)
    }

    /// The peer's connection ID.
    pub fn destination_id(&self) -> ConnectionId<'_> {
        ConnectionId::from_ref(&self.dcid)
    }

    /// The session to resume later with `set_session`: unlike quiche's, valid only in this
    /// process, for connections made from the same `Config` (rustls 0.23 has no public way to
    /// write a client session out and read it back). `None` until a ticket arrived.
    pub fn session(&self) -> Option<Vec<u8>> {
        self.tls.session()
    }

    /// Resumes a session saved by `session` (client, before the first `send`). Bytes from
    /// another process (a session file), from another `Config` or whose tickets were all used
    /// fail with `TlsFail`, the reason logged as a warning; the connection then makes a full
    /// handshake.
    pub fn set_session(&mut self, session: &[u8]) -> Result<()> {
        self.tls.set_session(session)
    }

    /// Writes TLS secrets in the NSS key log format to `writer`, including those logged before
    /// this call (quiche's signature). Lines are written only when the config enabled
    /// [`Config::log_keys`]; without it the writer is dropped, as quiche ignores it then.
    ///
    /// [`Config::log_keys`]: crate::Config::log_keys
    pub fn set_keylog(&mut self, writer: Box<dyn std::io::Write + Send + Sync>) {
        // The only failure is "key logging not enabled", which quiche also passes over silently.
        let _ = self.tls.set_keylog(writer);
    }

    /// The largest UDP payload this connection sends now: with path MTU discovery, the
    /// largest size found to get through.
    pub fn max_send_udp_payload_size(&self) -> usize {
        self.max_send_udp_payload_size
    }

    /// How many bytes the application may send in one burst (GSO batch) now: the controller's
    /// quantum (the initial window for the built-in ones, RFC 9002 §7.7), or, when that is
    /// less, what the sending rate moves in [`SEND_QUANTUM_INTERVAL`], up to
    /// [`MAX_SEND_QUANTUM`]. A fast path then needs a system call per 64 KiB rather than per ten
    /// datagrams, while a burst stays a fraction of a millisecond of the rate. The datagrams of
    /// a burst still carry their own paced `SendInfo::at`.
    pub fn send_quantum(&self) -> usize {
        use crate::cc::CongestionControl;
        let cc = self.recovery.controller();
        let rate = self.pacer.rate().or_else(|| {
            crate::cc::pacer::Pacer::default_rate(cc.cwnd(), self.recovery.rtt().smoothed_rtt())
        });
        let by_rate = rate.map_or(0, |r| {
            let bytes = u128::from(r) * SEND_QUANTUM_INTERVAL.as_nanos() / 1_000_000_000;
            usize::try_from(bytes).unwrap_or(usize::MAX)
        });
        cc.send_quantum()
            .max(by_rate.min(MAX_SEND_QUANTUM))
            .min(cc.cwnd().max(self.max_send_udp_payload_size))
    }

    /// Connection statistics.
    pub fn stats(&self) -> Stats {
        let r = self.recovery.stats();
        Stats {
            lost: r.lost_packets as usize,
            lost_bytes: r.lost_bytes,
            lost_by_packet_threshold: r.lost_by_packet_threshold as usize,
            lost_by_time_threshold: r.lost_by_time_threshold as usize,
            spurious_lost: r.spurious_losses as usize,
            pto_count: r.pto_count as usize,
            pto_probes_sent: r.probes_sent as usize,
            persistent_congestion: r.persistent_congestion as usize,
            lost_in_first_slow_start: r.lost_in_first_slow_start as usize,
            ..self.stats.clone()
        }
    }

    /// How the congestion controller's slow starts ended (exits by delay and by loss, when the
    /// first one ended), as the controller counts them.
    pub fn cc_stats(&self) -> crate::cc::CcStats {
        use crate::cc::CongestionControl;
        self.recovery.controller().stats()
    }

    /// Statistics of the connection's paths, as quiche's `path_stats()` gives them: an
    /// iterator over the active path (the one recovery and congestion control serve; probed
    /// paths are queried with [`Connection::is_path_validated`]). The iterator also
    /// dereferences to that path's statistics, so `conn.path_stats().cwnd` reads the path directly.
    pub fn path_stats(&self) -> PathStatsIter {
        PathStatsIter::new(self.active_path_stats())
    }

    /// Statistics of the path the connection uses.
    fn active_path_stats(&self) -> PathStats {
        use crate::cc::CongestionControl;
        let stats = self.stats();
        let rtt = self.recovery.rtt();
        let cc = self.recovery.controller();
        PathStats {
            local_addr: self.paths.active().local,
            peer_addr: self.paths.active().peer,
            validated: self.paths.active().validated(),
            recv: stats.recv,
            sent: stats.sent,
            lost: stats.lost,
            retrans: stats.retrans,
            rtt: rtt.smoothed_rtt(),
            min_rtt: rtt.stats().has_sample().then(|| rtt.min_rtt()),
            latest_rtt: rtt.latest_rtt(),
            rttvar: rtt.rttvar(),
            cwnd: self.recovery.cwnd(),
            ssthresh: cc.ssthresh(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            pacing_rate: cc.pacing_rate(),
            cc_state: cc.state().as_str(),
            sent_bytes: stats.sent_bytes,
            recv_bytes: stats.recv_bytes,
            lost_bytes: stats.lost_bytes,
            stream_retrans_bytes: stats.stream_retrans_bytes,
            pmtu: self.max_send_udp_payload_size,
        }
    }

    /// The peer's transport parameters, once received.
    pub fn peer_transport_params(&self) -> Option<&TransportParams> {
        self.peer_tp.as_ref()
    }

    /// The space of `epoch`.
    fn space(&mut self, epoch: Epoch) -> &mut PacketSpace {
        &mut self.spaces[epoch.index()]
    }
}
