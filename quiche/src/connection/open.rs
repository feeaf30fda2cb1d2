//! Opening a connection: [`connect`] and [`accept`] (and their buffer-factory and
//! custom-DCID variants), and `Connection::new`, which both sides go through.

use super::*;

/// The configured congestion controller: the factory's if there is one.
pub(super) fn build_controller(
    cfg: &RecoveryConfig,
    factory: Option<&dyn crate::cc::CcFactory>,
) -> crate::cc::Controller {
    match factory {
        Some(factory) => crate::cc::Controller::from_factory(factory, &cfg.cc),
        None => crate::cc::Controller::new(cfg.cc_algorithm, &cfg.cc),
    }
}

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
    let tls = Handshake::new_client(&mut config.tls, server_name, Vec::new())?;
    connect_with_tls(tls, scid, &random_client_dcid()?, local, peer, config)
}

/// A client's first Destination Connection ID: 16 random bytes (RFC 9000 §7.2 asks for at
/// least 8 unpredictable ones).
pub(crate) fn random_client_dcid() -> Result<ConnectionId<'static>> {
    let mut dcid = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut dcid)
        .map_err(|_| Error::CryptoFail)?;
    Ok(ConnectionId::from_vec(dcid.to_vec()))
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
    let tls = Handshake::new_client(&mut config.tls, server_name, Vec::new())?;
    connect_with_tls(tls, scid, dcid, local, peer, config)
}

/// A client connection on a ready handshake, towards `dcid` (its first Destination
/// Connection ID).
pub(crate) fn connect_with_tls<F: BufFactory>(
    tls: Handshake,
    scid: &ConnectionId,
    dcid: &ConnectionId,
    local: SocketAddr,
    peer: SocketAddr,
    config: &Config,
) -> Result<Connection<F>> {
    let mut conn = Connection::new(false, tls, scid, Some(dcid), local, peer, config)?;
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

/// Creates a new server-side connection whose buffers come from the factory `F`. With
/// `odcid`, `scid` is taken to be the Source Connection ID of the Retry as well (see
/// [`accept_with_retry`] for one that differs).
pub fn accept_with_buf_factory<F: BufFactory>(
    scid: &ConnectionId,
    odcid: Option<&ConnectionId>,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    let retry_cids = odcid.map(|odcid| RetryConnectionIds {
        original_destination_cid: odcid,
        retry_source_cid: scid,
    });
    accept_server(scid, retry_cids, local, peer, config)
}

/// The connection IDs of a Retry exchange, which a server accepting the client's second
/// Initial echoes in its transport parameters (RFC 9000 §7.3), for [`accept_with_retry`].
pub struct RetryConnectionIds<'a> {
    /// The Destination Connection ID of the client's first Initial, the one the Retry
    /// answered.
    pub original_destination_cid: &'a ConnectionId<'a>,
    /// The Source Connection ID of the Retry, which the client's second Initial is addressed
    /// to. It may differ from the connection's own Source Connection ID.
    pub retry_source_cid: &'a ConnectionId<'a>,
}

/// Creates a new server-side connection for a client that answered a Retry (made with
/// [`crate::retry`]) with a valid token: `scid` is the connection's own Source Connection ID,
/// which may be a new one (the client's Initial DCID is the Retry's SCID, chosen by whoever
/// sent the Retry, and the client switches to `scid` when the server's first Initial arrives);
/// `retry_cids` ties the connection to the Retry exchange. The client checks both IDs
/// (RFC 9000 §7.3): wrong ones fail its handshake with TRANSPORT_PARAMETER_ERROR.
pub fn accept_with_retry<F: BufFactory>(
    scid: &ConnectionId,
    retry_cids: RetryConnectionIds,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    accept_server(scid, Some(retry_cids), local, peer, config)
}

fn accept_server<F: BufFactory>(
    scid: &ConnectionId,
    retry_cids: Option<RetryConnectionIds>,
    local: SocketAddr,
    peer: SocketAddr,
    config: &mut Config,
) -> Result<Connection<F>> {
    // Before the handshake: a config unfit to serve fails for what it is, not for its TLS.
    check_endpoint(true, scid, config)?;
    // The transport parameters are set once the client's DCID is known.
    let tls = Handshake::new_server(&mut config.tls, Vec::new())?;
    let odcid = retry_cids.as_ref().map(|r| r.original_destination_cid);
    let mut conn = Connection::new(true, tls, scid, odcid, local, peer, config)?;
    if let Some(r) = retry_cids {
        conn.set_retry_source(r.retry_source_cid)?;
    }
    Ok(conn)
}

/// Whether a connection with source connection ID `scid` may be made from `config`.
fn check_endpoint(is_server: bool, scid: &ConnectionId, config: &Config) -> Result<()> {
    if scid.len() > crate::packet::MAX_CONN_ID_LEN {
        return Err(Error::InvalidState);
    }
    if is_server && !crate::packet::version_is_supported(config.version) {
        // A reserved version only serves a client testing Version Negotiation.
        return Err(Error::UnknownVersion);
    }
    Ok(())
}

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// A connection on `tls`, a handshake not yet started: a client's gets its transport
    /// parameters here, a server's once the client's first Initial arrived.
    pub(crate) fn new(
        is_server: bool,
        mut tls: Handshake,
        scid: &ConnectionId,
        odcid: Option<&ConnectionId>,
        local: SocketAddr,
        peer: SocketAddr,
        config: &Config,
    ) -> Result<Self> {
        check_endpoint(is_server, scid, config)?;
        let (local_tp, cids) = local_transport_params(is_server, scid, odcid, config);
        configure_tls(&mut tls, is_server, &local_tp, config)?;
        let (pmtud, max_datagram, recovery_config, sender, seed) =
            build_recovery_parts(is_server, scid, config);
        let (streams, flow) = build_streams(is_server, &local_tp, config);
        let paths = initial_paths(is_server, odcid.is_some(), (local, peer), sender, config);
        let idle = idle_timeout(&local_tp);
        let odcid = odcid.map(|c| c.clone().into_owned()).unwrap_or_default();
        let mut conn = Connection {
            is_server,
            versions: VersionState::new(config.version, config.compatible_versions.clone()),
            scid: scid.clone().into_owned(),
            trace_id: format!("{scid:?}"),
            dcid: odcid.clone(),
            odcid,
            dcid_from_peer: false,
            token: None,
            retry_scid: None,
            paths,
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
            recovery: Recovery::new(&recovery_config),
            recovery_config,
            cc_factory: config.cc_factory.clone(),
            cid_generator: config.cid_generator.clone(),
            scratch: Scratch::default(),
            streams,
            flow,
            tls_fed: false,
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
            tuning: config.tuning,
            tracker: self::stats::StatsTracker::default(),
            early_data_enabled: config.tls.is_early_data_enabled(),
            early_data_reason: 0,
            buf_factory: PhantomData,
        };

        // A client's Initial keys are installed by `connect`.
        if is_server && conn.local_tp.original_destination_connection_id.is_some() {
            // After a Retry the server knows everything its transport parameters need.
            conn.set_server_transport_params()?;
        }
        Ok(conn)
    }
}

/// Our transport parameters and connection IDs (RFC 9000 §7.3, §18.2).
fn local_transport_params(
    is_server: bool,
    scid: &ConnectionId,
    odcid: Option<&ConnectionId>,
    config: &Config,
) -> (TransportParams, ConnectionIds) {
    let mut local_tp = config.local_transport_params.clone();
    local_tp.initial_source_connection_id = Some(scid.clone().into_owned());
    local_tp.version_information = Some(version_state::local_version_information(
        config.version,
        is_server,
        &config.compatible_versions,
    ));
    // Only servers send a token for the handshake ID (RFC 9000 §18.2): the application's
    // (`Config::set_stateless_reset_token`) or one derived from the static key.
    let chosen = local_tp.stateless_reset_token.take().filter(|_| is_server);
    let cids = ConnectionIds::new(
        config.stateless_reset_key.clone(),
        scid,
        local_tp.active_conn_id_limit,
        chosen.map(u128::to_be_bytes),
    );
    if is_server && !scid.is_empty() {
        local_tp.stateless_reset_token = cids.handshake_token().map(u128::from_be_bytes);
    }
    // A server that sent a Retry echoes both connection IDs (RFC 9000 §7.3); without a
    // Retry it learns the original DCID from the client's first Initial.
    if let (true, Some(odcid)) = (is_server, odcid) {
        local_tp.original_destination_connection_id = Some(odcid.clone().into_owned());
        local_tp.retry_source_connection_id = Some(scid.clone().into_owned());
    }
    (local_tp, cids)
}

/// Gives a client's handshake our transport parameters (a server's get them once the
/// client's DCID is known), and sets up the configured version and its compatible versions.
fn configure_tls(
    tls: &mut Handshake,
    is_server: bool,
    local_tp: &TransportParams,
    config: &Config,
) -> Result<()> {
    if !is_server {
        tls.set_transport_params(local_tp.encode_to_vec(false)?)?;
    }
    version_switch::prepare_tls(tls, is_server, config.version, &config.compatible_versions)
}

/// The path MTU search, the datagram size it starts from, recovery's configuration and the
/// first path's sender with its controller (seeded from `scid`).
fn build_recovery_parts(
    is_server: bool,
    scid: &ConnectionId,
    config: &Config,
) -> (
    crate::pmtud::Pmtud,
    usize,
    RecoveryConfig,
    crate::sender::PathSender,
    u64,
) {
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
        initial_rtt: config.tuning.initial_rtt,
        is_server,
        cc_algorithm: config.cc_algorithm,
        cc: config.cc_config(max_datagram),
        relaxed_loss_threshold: config.tuning.relaxed_loss_threshold,
    };
    let cc = build_controller(&recovery_config, config.cc_factory.as_deref());
    let mut sender = recovery_config.sender_with(cc, config.pacing);
    sender.set_max_pacing_rate(config.tuning.max_pacing_rate);
    let seed = controller_seed(scid);
    sender.controller_mut().seed(seed);

    (pmtud, max_datagram, recovery_config, sender, seed)
}

/// The seed of the connection's controllers. The source connection ID is random per
/// connection: it seeds BBR's probe timing, so that flows sharing a bottleneck do not probe in
/// lockstep.
pub(super) fn controller_seed(scid: &ConnectionId) -> u64 {
    scid.as_ref()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// The stream map and the connection's flow control, from our transport parameters.
fn build_streams(
    is_server: bool,
    local_tp: &TransportParams,
    config: &Config,
) -> (StreamMap, ConnFlowControl) {
    let streams = StreamMap::new(
        is_server,
        StreamConfig {
            initial_max_streams_bidi: local_tp.initial_max_streams_bidi,
            initial_max_streams_uni: local_tp.initial_max_streams_uni,
            initial_max_stream_data_bidi_local: local_tp.initial_max_stream_data_bidi_local,
            initial_max_stream_data_bidi_remote: local_tp.initial_max_stream_data_bidi_remote,
            initial_max_stream_data_uni: local_tp.initial_max_stream_data_uni,
            max_stream_window: config.max_stream_window,
            send_streams_blocked: config.tuning.send_streams_blocked,
            ..StreamConfig::default()
        },
    );
    let flow = ConnFlowControl::new(
        local_tp.initial_max_data,
        config.max_connection_window,
        streams.largest_recv_window().saturating_mul(3) / 2,
        config.max_unsent_stream_data,
    );
    (streams, flow)
}

/// The path set with the handshake's path. A client's is validated; so is a server's after a
/// Retry, by the token (RFC 9000 §8.1.2); a server's is amplification-limited until then.
fn initial_paths(
    is_server: bool,
    retried: bool,
    (local, peer): (SocketAddr, SocketAddr),
    sender: crate::sender::PathSender,
    config: &Config,
) -> crate::path::PathSet {
    let mut path = crate::path::Path::new(local, peer, !is_server || retried, sender);
    path.amplification_limited = is_server;
    path.ecn = crate::ecn::EcnValidation::new(config.ecn);
    let mut paths = crate::path::PathSet::new(path);
    paths.set_limits(crate::path::PathLimits {
        amplification_factor: config.tuning.max_amplification_factor,
        max_pending_responses: config.tuning.path_challenge_recv_max_queue_len,
    });
    paths
}

/// Our idle timeout, if we set one (RFC 9000 §10.1).
fn idle_timeout(local_tp: &TransportParams) -> Option<Duration> {
    (local_tp.max_idle_timeout > 0).then(|| Duration::from_millis(local_tp.max_idle_timeout))
}
