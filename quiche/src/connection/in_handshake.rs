//! quiche's `Connection::set_*_in_handshake(ssl, ..)` (feature `boringssl-boring-crate`):
//! settings of the connection being handshaken, changed from inside one of BoringSSL's
//! handshake callbacks (e.g. a server's certificate selection, which sees the SNI) where only
//! the `SslRef` is at hand. `tls::in_handshake` records them behind the `SslRef`; the
//! connection applies them when the TLS call returns, as long as nothing was sent yet on its
//! path (a controller cannot be swapped under packets in flight). Called at any other time
//! they fail with `TlsFail` and change nothing.

use boring::ssl::SslRef;

use super::Connection;
use crate::cc::CongestionControlAlgorithm;
use crate::error::Result;
use crate::tls::in_handshake::{change, change_transport_params, HandshakeOverrides};

impl<F: crate::buffers::BufFactory> Connection<F> {
    /// Sets the congestion control algorithm, from inside a BoringSSL handshake callback and
    /// before any packet was sent (see [`crate::Config::set_cc_algorithm`]); `TlsFail`
    /// outside a handshake callback.
    pub fn set_cc_algorithm_in_handshake(
        ssl: &mut SslRef,
        algo: CongestionControlAlgorithm,
    ) -> Result<()> {
        change(ssl, |o| o.cc_algorithm = Some(algo))
    }

    /// [`Connection::set_cc_algorithm_in_handshake`] by name (see
    /// [`crate::Config::set_cc_algorithm_name`]).
    pub fn set_cc_algorithm_name_in_handshake(ssl: &mut SslRef, name: &str) -> Result<()> {
        Self::set_cc_algorithm_in_handshake(ssl, name.parse()?)
    }

    /// Sets the initial congestion window in packets, from inside a BoringSSL handshake
    /// callback (see [`crate::Config::set_initial_congestion_window_packets`]).
    pub fn set_initial_congestion_window_packets_in_handshake(
        ssl: &mut SslRef,
        packets: usize,
    ) -> Result<()> {
        change(ssl, |o| o.initial_congestion_window_packets = Some(packets))
    }

    /// Sets relaxed loss detection, from inside a BoringSSL handshake callback (see
    /// [`crate::Config::set_enable_relaxed_loss_threshold`]).
    pub fn set_enable_relaxed_loss_threshold_in_handshake(
        ssl: &mut SslRef,
        enable: bool,
    ) -> Result<()> {
        change(ssl, |o| o.relaxed_loss_threshold = Some(enable))
    }

    /// Sets the CUBIC idle restart fix, from inside a BoringSSL handshake callback (see
    /// [`crate::Config::set_enable_cubic_idle_restart_fix`]).
    pub fn set_enable_cubic_idle_restart_fix_in_handshake(
        ssl: &mut SslRef,
        enable: bool,
    ) -> Result<()> {
        change(ssl, |o| o.cubic_idle_restart_fix = Some(enable))
    }

    /// Turns HyStart++ on or off, from inside a BoringSSL handshake callback (see
    /// [`crate::Config::enable_hystart`]).
    pub fn set_hystart_in_handshake(ssl: &mut SslRef, v: bool) -> Result<()> {
        change(ssl, |o| o.hystart = Some(v))
    }

    /// Turns pacing on or off, from inside a BoringSSL handshake callback (see
    /// [`crate::Config::enable_pacing`]).
    pub fn set_pacing_in_handshake(ssl: &mut SslRef, v: bool) -> Result<()> {
        change(ssl, |o| o.pacing = Some(v))
    }

    /// Caps the pacing rate in bytes per second (`None`: no cap), from inside a BoringSSL
    /// handshake callback (see [`crate::Config::set_max_pacing_rate`]).
    pub fn set_max_pacing_rate_in_handshake(ssl: &mut SslRef, v: Option<u64>) -> Result<()> {
        change(ssl, |o| o.max_pacing_rate = Some(v))
    }

    /// Sets the largest UDP payload to send, from inside a BoringSSL handshake callback (see
    /// [`crate::Config::set_max_send_udp_payload_size`]).
    pub fn set_max_send_udp_payload_size_in_handshake(ssl: &mut SslRef, v: usize) -> Result<()> {
        change(ssl, |o| o.max_send_udp_payload_size = Some(v))
    }

    /// Sets the send capacity factor, from inside a BoringSSL handshake callback (see
    /// [`crate::Config::set_send_capacity_factor`]).
    pub fn set_send_capacity_factor_in_handshake(ssl: &mut SslRef, v: f64) -> Result<()> {
        change(ssl, |o| o.send_capacity_factor = Some(v))
    }

    /// Turns path MTU discovery on or off with `max_probes` probes per size, from inside a
    /// BoringSSL handshake callback (see [`crate::Config::discover_pmtu`]).
    pub fn set_discover_pmtu_in_handshake(
        ssl: &mut SslRef,
        discover: bool,
        max_probes: u8,
    ) -> Result<()> {
        change(ssl, |o| o.discover_pmtu = Some((discover, max_probes)))
    }

    /// Sets the `max_idle_timeout` transport parameter in milliseconds, from inside a
    /// BoringSSL handshake callback, before TLS sends the parameters (see
    /// [`crate::Config::set_max_idle_timeout`]).
    pub fn set_max_idle_timeout_in_handshake(ssl: &mut SslRef, v: u64) -> Result<()> {
        change_transport_params(ssl, |tp, o| {
            tp.max_idle_timeout = v;
            o.max_idle_timeout = Some(v);
        })
    }

    /// Sets the `initial_max_streams_bidi` transport parameter, from inside a BoringSSL
    /// handshake callback, before TLS sends the parameters (see
    /// [`crate::Config::set_initial_max_streams_bidi`]).
    pub fn set_initial_max_streams_bidi_in_handshake(ssl: &mut SslRef, v: u64) -> Result<()> {
        change_transport_params(ssl, |tp, o| {
            tp.initial_max_streams_bidi = v;
            o.initial_max_streams_bidi = Some(v);
        })
    }

    /// Does nothing, as quiche's: the initial `initial_max_data` is always the flow control
    /// window.
    #[deprecated(note = "This is now always enabled. This method is a no-op.")]
    pub fn set_use_initial_max_data_as_flow_control_win_in_handshake(
        _ssl: &mut SslRef,
    ) -> Result<()> {
        Ok(())
    }

    /// Applies what handshake callbacks changed during the TLS call that just returned.
    pub(super) fn apply_handshake_overrides(&mut self) {
        let Some(o) = self.tls.take_overrides() else {
            return;
        };
        if self.recovery.bytes_in_flight() > 0 || self.stats.sent > 0 {
            log::debug!(
                "{} *_in_handshake settings after the first packet: ignored",
                self.trace_id()
            );
            return;
        }
        self.apply_transport_overrides(&o);
        if let Some(v) = o.relaxed_loss_threshold {
            self.tuning.relaxed_loss_threshold = v;
        }
        if let Some(v) = o.cubic_idle_restart_fix {
            self.tuning.cubic_idle_restart_fix = v;
        }
        if let Some(v) = o
            .send_capacity_factor
            .filter(|v| v.is_finite() && *v >= 0.0)
        {
            self.tuning.send_capacity_factor = Some(v);
        }
        if let Some(v) = o.max_pacing_rate {
            self.tuning.max_pacing_rate = v.map(|v| v.max(1));
        }
        self.apply_datagram_overrides(&o);
        self.apply_sender_overrides(&o);
    }

    fn apply_transport_overrides(&mut self, o: &HandshakeOverrides) {
        if let Some(v) = o.max_idle_timeout {
            self.local_tp.max_idle_timeout = v;
            self.lifecycle
                .set_local_idle_timeout((v > 0).then(|| std::time::Duration::from_millis(v)));
        }
        if let Some(v) = o.initial_max_streams_bidi {
            self.local_tp.initial_max_streams_bidi = v;
            self.streams.set_initial_local_max_streams_bidi(v);
        }
    }

    /// The datagram size and the path MTU search: the search starts over with the new
    /// settings.
    fn apply_datagram_overrides(&mut self, o: &HandshakeOverrides) {
        if o.max_send_udp_payload_size.is_none() && o.discover_pmtu.is_none() {
            return;
        }
        let mut pmtud = self.pmtud.config();
        if let Some(v) = o.max_send_udp_payload_size {
            pmtud.max = v.max(crate::config::MIN_UDP_PAYLOAD_SIZE);
        }
        if let Some((discover, max_probes)) = o.discover_pmtu {
            pmtud.enabled = discover;
            pmtud.max_probes = max_probes.max(1);
        }
        self.pmtud = crate::pmtud::Pmtud::new(pmtud);
        self.max_send_udp_payload_size = if self.pmtud.is_enabled() {
            self.pmtud.current()
        } else {
            pmtud.max
        };
    }

    /// A new controller and pacer for the path, from the changed settings.
    fn apply_sender_overrides(&mut self, o: &HandshakeOverrides) {
        let cfg = &mut self.recovery_config;
        if let Some(algo) = o.cc_algorithm {
            cfg.cc_algorithm = algo;
            self.cc_factory = None;
        }
        if let Some(packets) = o.initial_congestion_window_packets {
            cfg.cc.initial_window_packets = packets.max(2);
        }
        if let Some(v) = o.hystart {
            cfg.cc.hystart = v;
        }
        if let Some(v) = o.pacing {
            cfg.cc.pacing = v;
        }
        cfg.cc.cubic_idle_restart_fix = self.tuning.cubic_idle_restart_fix;
        cfg.relaxed_loss_threshold = self.tuning.relaxed_loss_threshold;
        self.recovery
            .set_relaxed_loss_threshold(self.tuning.relaxed_loss_threshold);
        cfg.cc.max_datagram_size = self.max_send_udp_payload_size;
        let cc = super::open::build_controller(cfg, self.cc_factory.as_deref());
        let mut sender = cfg.sender_with(cc, cfg.cc.pacing);
        sender.set_max_pacing_rate(self.tuning.max_pacing_rate);
        sender
            .controller_mut()
            .seed(super::open::controller_seed(&self.scid));
        *self.sender_mut() = sender;
    }
}
