//! Connection configuration: every setting an application chooses, validated, and turned into
//! the smaller configurations of the modules below (transport parameters, TLS, recovery).

pub(crate) mod tuning;

use std::sync::Arc;
use std::time::Duration;

use crate::cc::{
    BbrOptions, CcConfig, CcFactory, CongestionControlAlgorithm, HystartVariant, SlowStartStrategy,
};
use crate::error::{Error, Result};
use crate::tls::TlsConfig;
use crate::transport_params::TransportParams;

/// The smallest UDP payload a QUIC endpoint must support (RFC 9000 §14).
pub const MIN_UDP_PAYLOAD_SIZE: usize = 1200;

/// Default ceiling of the connection-level receive window that auto-tuning may reach.
pub const DEFAULT_MAX_CONNECTION_WINDOW: u64 = 24 * 1024 * 1024;

/// Default ceiling of a stream's receive window that auto-tuning may reach.
pub const DEFAULT_MAX_STREAM_WINDOW: u64 = 16 * 1024 * 1024;

/// Default bound on stream data written but not yet sent, over all streams of a connection.
pub const DEFAULT_MAX_UNSENT_STREAM_DATA: u64 = 1024 * 1024;

/// The smallest bound [`Config::set_max_unsent_stream_data`] accepts: a dozen full packets.
const MIN_UNSENT_STREAM_DATA: u64 = 16 * 1024;

/// Stores configuration shared between multiple connections.
pub struct Config {
    pub(crate) version: u32,
    /// Versions for compatible version negotiation (RFC 9368), in order of preference.
    pub(crate) compatible_versions: Vec<u32>,
    pub(crate) local_transport_params: TransportParams,
    pub(crate) tls: TlsConfig,
    pub(crate) cc_algorithm: CongestionControlAlgorithm,
    pub(crate) cc_factory: Option<Arc<dyn CcFactory>>,
    pub(crate) hystart: bool,
    pub(crate) slow_start: SlowStartStrategy,
    pub(crate) hystart_variant: HystartVariant,
    pub(crate) bbr_options: BbrOptions,
    pub(crate) pacing: bool,
    pub(crate) ecn: bool,
    pub(crate) initial_congestion_window_packets: usize,
    pub(crate) max_connection_window: u64,
    pub(crate) max_stream_window: u64,
    pub(crate) max_unsent_stream_data: u64,
    pub(crate) max_send_udp_payload_size: usize,
    /// Path MTU discovery (see [`Config::discover_pmtu`]).
    pub(crate) pmtud: crate::pmtud::PmtudConfig,
    pub(crate) dgram_recv_queue_len: usize,
    pub(crate) dgram_send_queue_len: usize,
    /// Derives stateless reset tokens from the static key (see [`crate::cid`]).
    pub(crate) stateless_reset_key: crate::cid::ResetTokenKey,
    /// Makes our connection IDs; random bytes without one.
    pub(crate) cid_generator: Option<Arc<dyn crate::cid::ConnectionIdGenerator>>,
    /// What the setters of [`tuning`] set.
    pub(crate) tuning: crate::config::tuning::Tuning,
}

impl Config {
    /// Creates a config object with the given version: [`crate::PROTOCOL_VERSION`], QUIC v2
    /// (`0x6b3343cf`, RFC 9369; see also [`Config::set_compatible_versions`]), or, for a
    /// client that tests Version Negotiation, a reserved version of the form 0x?a?a?a?a
    /// (RFC 9000 §15). A server answers such a client's first Initial with Version
    /// Negotiation, and the client gives up (RFC 9000 §6.2): `recv` fails with
    /// `UnknownVersion` and the connection is closed; the application may then connect again
    /// with version 1. `accept` refuses a config with a reserved version.
    pub fn new(version: u32) -> Result<Config> {
        Self::with_tls(version, TlsConfig::new()?)
    }

    /// Beyond quiche: a config whose connections run their TLS handshakes on `backend`
    /// (rustls, or BoringSSL in a build with the `boringssl-boring-crate` feature). `new` takes
    /// the build's default: BoringSSL when the feature is on, as in quiche, rustls otherwise.
    pub fn with_tls_backend(version: u32, backend: crate::tls::TlsBackend) -> Result<Config> {
        Self::with_tls(version, TlsConfig::with_backend(backend)?)
    }

    /// A config whose connections run on BoringSSL configured by the application's own
    /// context builder (verification, certificates, curves, callbacks ...): quiche's way to
    /// reach BoringSSL settings it has no setter for. The builder is restricted to TLS 1.3 and
    /// given the QUIC hooks; everything else stays as the application set it.
    #[cfg(feature = "boringssl-boring-crate")]
    pub fn with_boring_ssl_ctx_builder(
        version: u32,
        tls_ctx_builder: boring::ssl::SslContextBuilder,
    ) -> Result<Config> {
        Self::with_tls(
            version,
            TlsConfig::with_boring_ssl_ctx_builder(tls_ctx_builder)?,
        )
    }

    fn with_tls(version: u32, tls: TlsConfig) -> Result<Config> {
        if !crate::packet::version_is_supported(version)
            && !crate::packet::is_grease_version(version)
        {
            return Err(Error::UnknownVersion);
        }
        // A random key by default: tokens then survive only as long as this config, which is
        // enough unless several processes must answer for the same connections.
        let mut reset_key = [0u8; crate::cid::RESET_KEY_LEN];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut reset_key)
            .map_err(|_| Error::CryptoFail)?;
        // The ACK frequency extension stays off by default until interop with quinn, which
        // offers it, has run with it on (see `enable_ack_frequency`).
        let local_transport_params = TransportParams {
            max_udp_payload_size: 65527,
            ..TransportParams::default()
        };
        Ok(Config {
            version,
            compatible_versions: Vec::new(),
            local_transport_params,
            tls,
            cc_algorithm: CongestionControlAlgorithm::CUBIC,
            cc_factory: None,
            hystart: true,
            slow_start: SlowStartStrategy::default(),
            hystart_variant: HystartVariant::Css,
            bbr_options: BbrOptions::default(),
            pacing: true,
            ecn: true,
            initial_congestion_window_packets: 10,
            max_connection_window: DEFAULT_MAX_CONNECTION_WINDOW,
            max_stream_window: DEFAULT_MAX_STREAM_WINDOW,
            max_unsent_stream_data: DEFAULT_MAX_UNSENT_STREAM_DATA,
            max_send_udp_payload_size: MIN_UDP_PAYLOAD_SIZE,
            pmtud: crate::pmtud::PmtudConfig::default(),
            dgram_recv_queue_len: 0,
            dgram_send_queue_len: 0,
            stateless_reset_key: crate::cid::ResetTokenKey::new(&reset_key),
            cid_generator: None,
            tuning: crate::config::tuning::Tuning::default(),
        })
    }

    /// Configures the certificate chain from a PEM file.
    pub fn load_cert_chain_from_pem_file(&mut self, file: &str) -> Result<()> {
        self.tls.load_cert_chain_from_pem_file(file)
    }

    /// Configures the private key from a PEM file.
    pub fn load_priv_key_from_pem_file(&mut self, file: &str) -> Result<()> {
        self.tls.load_priv_key_from_pem_file(file)
    }

    /// Loads trusted CA certificates from a PEM file for verifying the peer.
    pub fn load_verify_locations_from_file(&mut self, file: &str) -> Result<()> {
        self.tls.load_verify_locations_from_file(file)
    }

    /// Loads trusted CA certificates from a directory for verifying the peer. With rustls,
    /// every PEM file in it; with BoringSSL, as OpenSSL does, certificates named by subject
    /// hash (`c_rehash`), looked up during verification.
    pub fn load_verify_locations_from_directory(&mut self, dir: &str) -> Result<()> {
        self.tls.load_verify_locations_from_directory(dir)
    }

    /// Sets the TLS key exchange groups, a colon-separated list in order of preference, e.g.
    /// `"X25519:P-256"` (OpenSSL names). rustls offers X25519, P-256 and P-384; BoringSSL
    /// also its post-quantum hybrids, e.g. `"X25519MLKEM768"`.
    pub fn set_curves_list(&mut self, curves: &str) -> Result<()> {
        self.tls.set_curves_list(curves)
    }

    /// Sets the key that encrypts the server's session tickets (48 bytes), so that servers
    /// sharing it resume each other's sessions; the application then rotates it itself. By
    /// default BoringSSL makes a random key and rotates it. BoringSSL only (rustls resumes
    /// from its own server-side session cache instead, which is what lets it refuse replayed
    /// 0-RTT).
    #[cfg(feature = "boringssl-boring-crate")]
    pub fn set_ticket_key(&mut self, key: &[u8]) -> Result<()> {
        self.tls.set_ticket_key(key)
    }

    /// The TLS backend this config's connections run on.
    pub fn tls_backend(&self) -> crate::tls::TlsBackend {
        self.tls.backend()
    }

    /// Whether to verify the peer's certificate. Off by default on both sides, as in quiche:
    /// a client should call `verify_peer(true)` (with `load_verify_locations_from_file`, or
    /// the system's CA bundle) to authenticate the server.
    pub fn verify_peer(&mut self, verify: bool) {
        self.tls.verify_peer(verify);
    }

    /// Enables logging of TLS secrets, written to the connection's `set_keylog` writer.
    pub fn log_keys(&mut self) {
        self.tls.log_keys();
    }

    /// Enables sending and accepting 0-RTT data.
    pub fn enable_early_data(&mut self) {
        self.tls.enable_early_data();
    }

    /// Beyond quiche: how many resumable TLS sessions a server remembers for resumption and
    /// 0-RTT (default 4,096), shared by the connections made from this config. The cache is
    /// what bounds the memory a server keeps across handshakes: rustls issues two tickets per
    /// handshake, one entry each, so it is full after half as many handshakes, the oldest
    /// sessions then being forgotten. 0 remembers none (no tickets are issued: no resumption,
    /// no 0-RTT). Forgets the sessions remembered so far.
    pub fn set_session_cache_size(&mut self, n: usize) {
        self.tls.set_server_session_cache_size(n);
    }

    /// Offers only the TLS_CHACHA20_POLY1305_SHA256 cipher suite (the interop runner's
    /// chacha20 case).
    pub fn set_chacha20_only(&mut self) -> Result<()> {
        self.tls
            .set_cipher_suites(&[rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256])
    }

    /// Configures the ALPN protocols, in order of preference.
    pub fn set_application_protos(&mut self, protos: &[&[u8]]) -> Result<()> {
        if protos.is_empty() || protos.iter().any(|p| p.is_empty() || p.len() > 255) {
            return Err(Error::TlsFail);
        }
        self.tls.set_application_protos(protos)
    }

    /// Sets the `max_idle_timeout` transport parameter, in milliseconds (0: none).
    pub fn set_max_idle_timeout(&mut self, ms: u64) {
        self.local_transport_params.max_idle_timeout = ms;
    }

    /// Sets the `max_udp_payload_size` transport parameter: the largest datagram we accept.
    pub fn set_max_recv_udp_payload_size(&mut self, size: usize) {
        self.local_transport_params.max_udp_payload_size = size as u64;
    }

    /// Sets the largest UDP payload we send (at least 1200; the peer's limit also applies).
    pub fn set_max_send_udp_payload_size(&mut self, size: usize) {
        self.max_send_udp_payload_size = size.max(MIN_UDP_PAYLOAD_SIZE);
    }

    /// Sets the `initial_max_data` transport parameter: the initial connection window.
    pub fn set_initial_max_data(&mut self, v: u64) {
        self.local_transport_params.initial_max_data = v;
    }

    /// Sets `initial_max_stream_data_bidi_local`: the window of bidirectional streams we open.
    pub fn set_initial_max_stream_data_bidi_local(&mut self, v: u64) {
        self.local_transport_params
            .initial_max_stream_data_bidi_local = v;
    }

    /// Sets `initial_max_stream_data_bidi_remote`: the window of bidirectional streams the
    /// peer opens.
    pub fn set_initial_max_stream_data_bidi_remote(&mut self, v: u64) {
        self.local_transport_params
            .initial_max_stream_data_bidi_remote = v;
    }

    /// Sets `initial_max_stream_data_uni`: the window of unidirectional streams.
    pub fn set_initial_max_stream_data_uni(&mut self, v: u64) {
        self.local_transport_params.initial_max_stream_data_uni = v;
    }

    /// Sets `initial_max_streams_bidi`: how many bidirectional streams the peer may open.
    pub fn set_initial_max_streams_bidi(&mut self, v: u64) {
        self.local_transport_params.initial_max_streams_bidi = v;
    }

    /// Sets `initial_max_streams_uni`: how many unidirectional streams the peer may open.
    pub fn set_initial_max_streams_uni(&mut self, v: u64) {
        self.local_transport_params.initial_max_streams_uni = v;
    }

    /// Sets the `ack_delay_exponent` transport parameter (at most 20).
    pub fn set_ack_delay_exponent(&mut self, v: u64) {
        self.local_transport_params.ack_delay_exponent = v.min(20);
    }

    /// Sets the `max_ack_delay` transport parameter, in milliseconds (below 2^14).
    pub fn set_max_ack_delay(&mut self, v: u64) {
        let tp = &mut self.local_transport_params;
        tp.max_ack_delay = v.min((1 << 14) - 1);
        // min_ack_delay may not exceed it (draft-ietf-quic-ack-frequency-12 §3).
        if tp.min_ack_delay.is_some() {
            tp.min_ack_delay = Some(offered_min_ack_delay(tp.max_ack_delay));
        }
    }

    /// Whether to offer and use the ACK frequency extension (draft-ietf-quic-ack-frequency-12),
    /// off by default (beyond quiche, which has no such setter and never offers it). On, the `min_ack_delay` transport parameter tells the peer it may send
    /// ACK_FREQUENCY and IMMEDIATE_ACK frames, which this endpoint then honours; and if the
    /// peer offers the extension too, this endpoint asks it for fewer ACKs while its
    /// congestion window is large (see `ack_frequency` in ARCHITECTURE.md). Peers that do not
    /// offer it (quiche, ngtcp2, quic-go) see no difference either way.
    pub fn enable_ack_frequency(&mut self, v: bool) {
        let tp = &mut self.local_transport_params;
        tp.min_ack_delay = v.then(|| offered_min_ack_delay(tp.max_ack_delay));
    }

    /// Sets the `active_connection_id_limit` transport parameter (at least 2).
    pub fn set_active_connection_id_limit(&mut self, v: u64) {
        self.local_transport_params.active_conn_id_limit = v.max(2);
    }

    /// Sets the `disable_active_migration` transport parameter.
    pub fn set_disable_active_migration(&mut self, v: bool) {
        self.local_transport_params.disable_active_migration = v;
    }

    /// Selects a built-in congestion control algorithm.
    pub fn set_cc_algorithm(&mut self, algo: CongestionControlAlgorithm) {
        self.cc_algorithm = algo;
        self.cc_factory = None;
    }

    /// Selects a built-in congestion control algorithm by name ("reno", "cubic", "bbr"; "bbr2"
    /// is an alias).
    pub fn set_cc_algorithm_name(&mut self, name: &str) -> Result<()> {
        self.set_cc_algorithm(name.parse()?);
        Ok(())
    }

    /// Uses a user-written congestion controller built by `factory` for every connection.
    pub fn set_cc_factory(&mut self, factory: Arc<dyn CcFactory>) {
        self.cc_factory = Some(factory);
    }

    /// Enables or disables an early slow-start exit (on by default). `false` forces standard
    /// slow start; `true` runs the strategy [`Config::set_slow_start`] chose (by default
    /// [`SlowStartStrategy::default`]), which is HyStart++ unless changed.
    pub fn enable_hystart(&mut self, v: bool) {
        self.hystart = v;
    }

    /// Selects how slow start ends (beyond quiche's API): standard slow start, HyStart++
    /// (RFC 9406) or SEARCH (draft-chung-ccwg-search). Also undoes an earlier
    /// `enable_hystart(false)`: the last call wins.
    pub fn set_slow_start(&mut self, strategy: SlowStartStrategy) {
        self.slow_start = strategy;
        self.hystart = true;
    }

    /// Selects the slow-start strategy by name: `standard`, `hystart` or `search`
    /// ([`Error::CongestionControl`] for anything else).
    pub fn set_slow_start_name(&mut self, name: &str) -> Result<()> {
        self.set_slow_start(name.parse()?);
        Ok(())
    }

    /// Selects the HyStart++ variant: RFC 9406's Conservative Slow Start (the default) or the
    /// earlier drafts' Limited Slow Start.
    pub fn set_hystart_variant(&mut self, variant: HystartVariant) {
        self.hystart_variant = variant;
    }

    /// Departures from draft-ietf-ccwg-bbr-06 for connections that use BBR (none by default:
    /// [`BbrOptions::default`] is the draft).
    pub fn set_bbr_options(&mut self, options: BbrOptions) {
        self.bbr_options = options;
    }

    /// Enables or disables path MTU discovery (DPLPMTUD, RFC 8899 and RFC 9000 §14.3; on by
    /// default, unlike quiche). With it, a connection sends 1200-byte datagrams until the
    /// handshake is confirmed, then probes with PING + PADDING packets up to
    /// [`Config::set_max_send_udp_payload_size`] (and the peer's `max_udp_payload_size`), uses
    /// the largest size that gets through, falls back to 1200 bytes when full-size packets stop
    /// getting through (a black hole), and searches again every
    /// [`Config::set_pmtud_raise_interval`]. Without it the connection sends datagrams of the
    /// configured size from the start. The socket should set the Don't Fragment bit (Linux:
    /// `IP_PMTUDISC_PROBE`), or probes are fragmented and prove nothing.
    pub fn discover_pmtu(&mut self, discover: bool) {
        self.pmtud.enabled = discover;
    }

    /// How long a completed path MTU search stands before the next one tries larger sizes
    /// again (RFC 8899's PMTU_RAISE_TIMER; default 600 seconds).
    pub fn set_pmtud_raise_interval(&mut self, interval: std::time::Duration) {
        self.pmtud.raise_interval = interval;
    }

    /// How many probes of one size must be lost in a row before the path MTU search gives
    /// that size up (RFC 8899's MAX_PROBES; default 2, see [`crate::pmtud::DEFAULT_MAX_PROBES`]; at least 1).
    pub fn set_pmtud_max_probes(&mut self, max_probes: u8) {
        self.pmtud.max_probes = max_probes.max(1);
    }

    /// Enables or disables pacing (on by default).
    pub fn enable_pacing(&mut self, v: bool) {
        self.pacing = v;
    }

    /// Whether connections mark their packets ECT(0) while validating the path for ECN and
    /// once it is found capable (RFC 9000 §13.4; default on). The codepoint to set is in
    /// [`SendInfo::ecn`](crate::SendInfo::ecn); received codepoints come in through
    /// [`Connection::recv_with_ecn`](crate::Connection::recv_with_ecn) and are reported to the
    /// peer whatever this says. An application that cannot set the codepoint loses nothing by
    /// leaving it on: validation fails and marking stops. Beyond quiche's API.
    pub fn enable_ecn(&mut self, v: bool) {
        self.ecn = v;
    }

    /// Sets the initial congestion window in packets (default 10).
    pub fn set_initial_congestion_window_packets(&mut self, packets: usize) {
        self.initial_congestion_window_packets = packets.max(2);
    }

    /// Sets the ceiling of the connection-level receive window that auto-tuning may reach.
    pub fn set_max_connection_window(&mut self, v: u64) {
        self.max_connection_window = v;
    }

    /// Sets the ceiling of a stream's receive window that auto-tuning may reach.
    pub fn set_max_stream_window(&mut self, v: u64) {
        self.max_stream_window = v;
    }

    /// Sets how many bytes of stream data the application may have written but the connection
    /// not yet sent, over all streams (default [`DEFAULT_MAX_UNSENT_STREAM_DATA`]):
    /// `stream_send` accepts no more beyond it, as it accepts no more beyond the peer's flow
    /// control windows. Data is copied into the stream buffer when written and out into a
    /// packet when sent; keeping the distance between the two short keeps it in the CPU cache
    /// (a quarter of the sender's CPU time at gigabit rates over loopback). Written data waits
    /// for at most the time the path needs to carry this much, so the application should write
    /// again whenever it handles the connection's events. `u64::MAX` removes the bound; values
    /// below 16 KiB are raised to 16 KiB.
    pub fn set_max_unsent_stream_data(&mut self, v: u64) {
        self.max_unsent_stream_data = v.max(MIN_UNSENT_STREAM_DATA);
    }

    /// Enables DATAGRAM frames (RFC 9221) with the given queue lengths.
    pub fn enable_dgram(&mut self, enabled: bool, recv_queue_len: usize, send_queue_len: usize) {
        self.local_transport_params.max_datagram_frame_size = enabled.then_some(65536);
        self.dgram_recv_queue_len = recv_queue_len;
        self.dgram_send_queue_len = send_queue_len;
    }

    /// Sets the static key stateless reset tokens are derived from (RFC 9000 §10.3.2): the
    /// token of a connection ID is HMAC-SHA256(key, ID) cut to 16 bytes, for the IDs issued
    /// with NEW_CONNECTION_ID and (unless [`Config::set_stateless_reset_token`] chose it) for a
    /// server's handshake ID. A server that restarts with the same key, or another process
    /// sharing it, recomputes the token of an ID it issued before and can answer a packet for
    /// a connection it lost with [`Config::stateless_reset`]. The default is random per
    /// config, so tokens do not outlive it. Beyond quiche's API.
    pub fn set_stateless_reset_key(&mut self, key: &[u8; crate::cid::RESET_KEY_LEN]) {
        self.stateless_reset_key = crate::cid::ResetTokenKey::new(key);
    }

    /// Sets the stateless reset token a server sends for its handshake connection ID (the
    /// `stateless_reset_token` transport parameter), as quiche does; it applies to the
    /// connections accepted from now on, so a quiche program sets it before each `accept`.
    /// Clients send none (RFC 9000 §18.2), so it does nothing there. `None` (the default)
    /// derives the token from the static key of [`Config::set_stateless_reset_key`], which
    /// also makes the tokens of the IDs issued later (quiche's default is to send none).
    pub fn set_stateless_reset_token(&mut self, v: Option<u128>) {
        self.local_transport_params.stateless_reset_token = v;
    }

    /// With `true` (beyond quiche's API), connections made from this config issue connection
    /// IDs of their own with NEW_CONNECTION_ID up to the peer's `active_connection_id_limit`
    /// once the handshake completes, and replace each one the peer retires, so the peer always
    /// has spare IDs for a migration (RFC 9000 §5.1.1). A server that routes datagrams by
    /// connection ID must then route every ID in [`crate::Connection::source_ids`] (and drop
    /// those [`crate::Connection::retired_scid_next`] returns). Default `false`, as in quiche:
    /// the application issues IDs with [`crate::Connection::new_scid`] and knows each one.
    pub fn enable_automatic_connection_ids(&mut self, v: bool) {
        self.tuning.automatic_connection_ids = v;
    }

    /// Makes the connection IDs that connections made from this config issue by themselves
    /// ([`Config::enable_automatic_connection_ids`]; beyond quiche's API), e.g. a
    /// [`crate::quic_lb::QuicLbGenerator`] so that load balancers route them. The handshake ID
    /// and those given to `new_scid` are the application's: make them with
    /// [`Config::new_scid`] so that they come from the generator too.
    pub fn set_cid_generator(&mut self, generator: Arc<dyn crate::cid::ConnectionIdGenerator>) {
        self.cid_generator = Some(generator);
    }

    /// The connection-ID generator, if one is set.
    pub fn cid_generator(&self) -> Option<&Arc<dyn crate::cid::ConnectionIdGenerator>> {
        self.cid_generator.as_ref()
    }

    /// A new connection ID of `len` bytes (at most [`crate::packet::MAX_CONN_ID_LEN`]) from the
    /// generator, or random without one: what a server passes to `accept` (or puts in a
    /// Retry). Errors: `InvalidState` for a length over the maximum, or the generator's error.
    pub fn new_scid(&self, len: usize) -> Result<crate::packet::ConnectionId<'static>> {
        let mut bytes = [0u8; crate::packet::MAX_CONN_ID_LEN];
        let cid = bytes.get_mut(..len).ok_or(Error::InvalidState)?;
        match &self.cid_generator {
            Some(g) => g.generate(cid)?,
            None => ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), cid)
                .map_err(|_| Error::CryptoFail)?,
        }
        Ok(crate::packet::ConnectionId::from_vec(cid.to_vec()))
    }

    /// The stateless reset token connections made from this config give connection ID `cid`
    /// (derived from the static key; see [`Config::set_stateless_reset_key`]).
    pub fn stateless_reset_token(&self, cid: &[u8]) -> [u8; crate::cid::RESET_TOKEN_LEN] {
        self.stateless_reset_key.token(cid)
    }

    /// Writes into `out` a stateless reset (RFC 9000 §10.3) answering a short-header datagram
    /// of `received_len` bytes addressed to `dcid`, a connection ID no connection of this
    /// server knows (any more): a datagram that looks like a short-header packet and ends in
    /// the token of `dcid`, which the peer recognizes if `dcid` was one of the IDs of its
    /// connection. Returns the reset's length. Beyond quiche's API.
    ///
    /// Safe to call for any such datagram: the reset is always smaller than the datagram
    /// (between 21 and 64 bytes, one byte smaller than a datagram of up to 43 bytes), and
    /// datagrams too small to be a packet addressed to a `dcid.len()`-byte ID, which may
    /// themselves be stateless resets, are never answered (`Err(Done)`), so two endpoints
    /// cannot keep resetting each other (§10.3.3). Rate limiting per peer address is the
    /// application's (`quiche-server` allows a few per second). Errors: `Done` for datagrams
    /// not to answer and for a zero-length `dcid` (such IDs have no token, §10.3.2),
    /// `BufferTooShort` if `out` is too small for the reset, `CryptoFail` without randomness.
    ///
    /// Only answer datagrams addressed to IDs that no process sharing the key serves now: a
    /// reset ends the connection of that ID wherever it lives (§10.3.2).
    pub fn stateless_reset(
        &self,
        dcid: &[u8],
        received_len: usize,
        out: &mut [u8],
    ) -> Result<usize> {
        if dcid.is_empty() {
            return Err(Error::Done);
        }
        let mut random = |buf: &mut [u8]| {
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), buf)
                .map_err(|_| Error::CryptoFail)
        };
        let mut pick = [0u8; 4];
        random(&mut pick)?;
        let len =
            crate::cid::stateless_reset_len(received_len, dcid.len(), u32::from_ne_bytes(pick))
                .ok_or(Error::Done)?;
        let token = self.stateless_reset_key.token(dcid);
        crate::cid::write_stateless_reset(&token, len, &mut random, out)
    }

    /// Whether to send reserved ("GREASE") values where the protocols allow them, so that
    /// peers stay tolerant of extensions (on by default). As in quiche, this is HTTP/3's: with
    /// `false`, [`crate::h3::Connection`] sends no reserved setting (RFC 9114 §7.2.4.1), no
    /// reserved frame type (§7.2.8) and no stream of a reserved type (§6.2.3). The transport's
    /// reserved values (the reserved version a Version Negotiation packet lists) do not depend
    /// on it, as in quiche.
    pub fn grease(&mut self, v: bool) {
        self.tuning.grease = v;
    }

    /// The QUIC version connections from this config speak.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Sets the versions, in order of preference, that compatible version negotiation
    /// (RFC 9368) may move a connection to; beyond quiche's API. QUIC v1 (`0x00000001`) and v2
    /// (`0x6b3343cf`, RFC 9369) are compatible with each other.
    ///
    /// - A client still starts in [`Config::new`]'s version, and lists these in its
    ///   `version_information` transport parameter: a server may answer in one of them, and the
    ///   client follows it (e.g. `Config::new(1)` with `&[0x6b3343cf, 1]` starts in v1 and
    ///   moves to v2 at once with a server that prefers v2).
    /// - A server accepts clients in every supported version whatever this list says; it
    ///   moves a client to the first version of this list that the client offers, and lists
    ///   these as the versions it supports. Empty (the default): it stays in the client's
    ///   version, and lists every supported version.
    ///
    /// Fails with `UnknownVersion` if a version is not supported (reserved versions included).
    pub fn set_compatible_versions(&mut self, versions: &[u32]) -> Result<()> {
        if !versions
            .iter()
            .all(|v| crate::packet::version_is_supported(*v))
        {
            return Err(Error::UnknownVersion);
        }
        self.compatible_versions.clear();
        for v in versions {
            if !self.compatible_versions.contains(v) {
                self.compatible_versions.push(*v);
            }
        }
        Ok(())
    }

    /// The congestion-control configuration every connection's controller starts from.
    pub fn cc_config(&self, max_datagram_size: usize) -> CcConfig {
        CcConfig {
            max_datagram_size,
            initial_window_packets: self.initial_congestion_window_packets,
            hystart: self.hystart,
            slow_start: self.slow_start,
            pacing: self.pacing,
            hystart_variant: self.hystart_variant,
            bbr: self.bbr_options,
            cubic_idle_restart_fix: self.tuning.cubic_idle_restart_fix,
        }
    }

    /// The local max_ack_delay as a duration.
    pub fn max_ack_delay(&self) -> Duration {
        Duration::from_millis(self.local_transport_params.max_ack_delay)
    }
}

/// The `min_ack_delay` we offer, in microseconds: the timer granularity of RFC 9002 §6.1.2
/// (kGranularity, 1 ms), which is also the resolution our delayed-ACK timer is expected to fire
/// with; never above our `max_ack_delay` (in milliseconds).
fn offered_min_ack_delay(max_ack_delay_ms: u64) -> u64 {
    const TIMER_GRANULARITY_MICROS: u64 = 1000;
    TIMER_GRANULARITY_MICROS.min(max_ack_delay_ms.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_reach_the_transport_parameters() {
        let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
        c.set_max_idle_timeout(5000);
        c.set_initial_max_data(1 << 20);
        c.set_initial_max_stream_data_bidi_local(1000);
        c.set_initial_max_stream_data_bidi_remote(2000);
        c.set_initial_max_stream_data_uni(3000);
        c.set_initial_max_streams_bidi(7);
        c.set_initial_max_streams_uni(8);
        c.set_ack_delay_exponent(99);
        c.set_max_ack_delay(1 << 20);
        c.set_active_connection_id_limit(0);
        let tp = &c.local_transport_params;
        assert_eq!(tp.max_idle_timeout, 5000);
        assert_eq!(tp.initial_max_data, 1 << 20);
        assert_eq!(tp.initial_max_stream_data_bidi_local, 1000);
        assert_eq!(tp.initial_max_stream_data_bidi_remote, 2000);
        assert_eq!(tp.initial_max_stream_data_uni, 3000);
        assert_eq!(tp.initial_max_streams_bidi, 7);
        assert_eq!(tp.initial_max_streams_uni, 8);
        // Out-of-range values are clamped to what RFC 9000 §18.2 allows, so that the
        // parameters we send always validate.
        assert_eq!(tp.ack_delay_exponent, 20);
        assert_eq!(tp.max_ack_delay, (1 << 14) - 1);
        assert_eq!(tp.active_conn_id_limit, 2);
        assert!(tp.validate(false).is_ok());
    }

    #[test]
    fn ack_frequency_offers_a_min_ack_delay_within_max_ack_delay() {
        let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
        // Off by default.
        assert_eq!(c.local_transport_params.min_ack_delay, None);
        c.enable_ack_frequency(true);
        assert_eq!(c.local_transport_params.min_ack_delay, Some(1000));
        // A max_ack_delay of 0 ms leaves 0 µs as the only valid min_ack_delay, whichever
        // setter comes first.
        c.set_max_ack_delay(0);
        assert_eq!(c.local_transport_params.min_ack_delay, Some(0));
        assert!(c.local_transport_params.validate(false).is_ok());
        c.enable_ack_frequency(false);
        c.enable_ack_frequency(true);
        assert_eq!(c.local_transport_params.min_ack_delay, Some(0));
        c.set_max_ack_delay(25);
        assert_eq!(c.local_transport_params.min_ack_delay, Some(1000));
        c.enable_ack_frequency(false);
        assert_eq!(c.local_transport_params.min_ack_delay, None);
        c.set_max_ack_delay(3);
        assert_eq!(c.local_transport_params.min_ack_delay, None);
    }

    #[test]
    fn unknown_version_and_bad_alpn_are_refused() {
        assert!(matches!(
            Config::new(0xbabababb),
            Err(Error::UnknownVersion)
        ));
        assert!(
            Config::new(0xbabababa).is_ok(),
            "a reserved version, for VN tests"
        );
        let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
        assert_eq!(c.set_application_protos(&[]), Err(Error::TlsFail));
        assert_eq!(c.set_application_protos(&[b""]), Err(Error::TlsFail));
        assert!(c.set_application_protos(&[b"hq-interop", b"h3"]).is_ok());
    }

    #[test]
    fn congestion_control_settings() {
        let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
        assert!(c.set_cc_algorithm_name("reno").is_ok());
        assert_eq!(c.cc_algorithm, CongestionControlAlgorithm::Reno);
        assert_eq!(
            c.set_cc_algorithm_name("bbr9"),
            Err(Error::CongestionControl)
        );
        c.set_initial_congestion_window_packets(32);
        c.enable_hystart(false);
        let cc = c.cc_config(1350);
        assert_eq!(cc.initial_window_packets, 32);
        assert_eq!(cc.max_datagram_size, 1350);
        assert!(!cc.hystart);
        assert_eq!(cc.strategy(), SlowStartStrategy::Standard);
        // enable_hystart(true) brings back the chosen strategy; set_slow_start wins over an
        // earlier enable_hystart(false).
        c.enable_hystart(true);
        assert_eq!(c.cc_config(1200).strategy(), SlowStartStrategy::default());
        c.enable_hystart(false);
        assert!(c.set_slow_start_name("search").is_ok());
        assert_eq!(c.cc_config(1200).strategy(), SlowStartStrategy::Search);
        c.enable_hystart(false);
        assert_eq!(c.cc_config(1200).strategy(), SlowStartStrategy::Standard);
        c.enable_hystart(true);
        assert_eq!(c.cc_config(1200).strategy(), SlowStartStrategy::Search);
        assert_eq!(c.set_slow_start_name("fast"), Err(Error::CongestionControl));
        c.set_slow_start(SlowStartStrategy::Standard);
        assert_eq!(c.cc_config(1200).strategy(), SlowStartStrategy::Standard);
    }
}
