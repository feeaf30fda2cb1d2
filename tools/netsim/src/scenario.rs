//! What a simulation runs: the path (rate, delays, queue, loss, reordering), the transfer (size,
//! direction) and the sender's congestion control and flow-control settings.

use std::fmt;
use std::time::Duration;

use quiche::{BbrOptions, CongestionControlAlgorithm, HystartVariant, SlowStartStrategy};

use crate::units::{bdp_bytes, fmt_duration, fmt_rate, fmt_size, Queue};

/// Flow-control settings, applied to both endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    /// `initial_max_data`: the connection-level window each side advertises first.
    pub max_data: u64,
    /// `initial_max_stream_data_*`: the stream-level window each side advertises first.
    pub max_stream_data: u64,
    /// The ceiling auto-tuning may raise the connection window to (library default if `None`).
    pub max_window: Option<u64>,
    /// The ceiling auto-tuning may raise a stream window to (library default if `None`).
    pub max_stream_window: Option<u64>,
}

impl Default for Windows {
    /// The defaults of quiche-client and quiche-server: 10 MB and 1 MB.
    fn default() -> Self {
        Windows {
            max_data: 10_000_000,
            max_stream_data: 1_000_000,
            max_window: None,
            max_stream_window: None,
        }
    }
}

/// The sender's congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cc {
    /// The window-growth algorithm.
    pub algorithm: CongestionControlAlgorithm,
    /// Whether slow start may end before a loss; `false` is standard slow start whatever
    /// `slow_start` says.
    pub hystart: bool,
    /// The slow-start strategy when `hystart` (`--slow-start`).
    pub slow_start: SlowStartStrategy,
    /// Which HyStart++ variant, when `hystart`.
    pub hystart_variant: HystartVariant,
    /// The initial window in packets.
    pub initial_window_packets: usize,
    /// Whether the sender paces.
    pub pacing: bool,
    /// BBR's departures from the draft (`--bbr-*`; none by default).
    pub bbr: BbrOptions,
}

impl Default for Cc {
    /// The library's defaults: CUBIC with HyStart++ (Conservative Slow Start), an initial
    /// window of 10 packets, pacing.
    fn default() -> Self {
        Cc {
            algorithm: CongestionControlAlgorithm::CUBIC,
            hystart: true,
            slow_start: SlowStartStrategy::default(),
            hystart_variant: HystartVariant::Css,
            initial_window_packets: 10,
            pacing: true,
            bbr: BbrOptions::default(),
        }
    }
}

impl Cc {
    /// `algorithm` with or without HyStart++ (Conservative Slow Start), otherwise the defaults.
    pub fn new(algorithm: CongestionControlAlgorithm, hystart: bool) -> Cc {
        Cc {
            algorithm,
            hystart,
            slow_start: SlowStartStrategy::HyStartPlusPlus,
            ..Cc::default()
        }
    }

    /// `algorithm` with the slow-start `strategy`, otherwise the defaults.
    pub fn with_slow_start(
        algorithm: CongestionControlAlgorithm,
        strategy: SlowStartStrategy,
    ) -> Cc {
        Cc {
            algorithm,
            hystart: strategy != SlowStartStrategy::Standard,
            slow_start: strategy,
            ..Cc::default()
        }
    }

    /// The slow-start strategy in effect.
    pub fn strategy(&self) -> SlowStartStrategy {
        if self.hystart {
            self.slow_start
        } else {
            SlowStartStrategy::Standard
        }
    }
}

impl fmt::Display for Cc {
    /// `reno`, `cubic+hystart`, `cubic+hystart(lss)`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let name = match self.algorithm {
            CongestionControlAlgorithm::Reno => "reno",
            CongestionControlAlgorithm::CUBIC => "cubic",
            CongestionControlAlgorithm::Bbr => "bbr",
        };
        f.write_str(name)?;
        // BBR has its own Startup: no slow-start strategy applies to it. Its departures
        // from the draft, if any, are named.
        if self.algorithm == CongestionControlAlgorithm::Bbr {
            let (o, d) = (self.bbr, BbrOptions::default());
            if o.max_bw_filter_cycles != d.max_bw_filter_cycles {
                write!(f, "+maxbw{}", o.max_bw_filter_cycles)?;
            }
            if o.probe_bw_cwnd_gain != d.probe_bw_cwnd_gain {
                write!(f, "+gain{}", f64::from(o.probe_bw_cwnd_gain) / 1000.0)?;
            }
            if o.cruise_on_bounded_bw {
                f.write_str("+cruisebw")?;
            }
            if o.skip_probe_rtt_without_queue {
                f.write_str("+skiprtt")?;
            }
            if !o.filter_random_loss {
                f.write_str("+nofilter")?;
            }
            return Ok(());
        }
        match self.strategy() {
            SlowStartStrategy::Standard => {}
            SlowStartStrategy::HyStartPlusPlus => {
                f.write_str("+hystart")?;
                if self.hystart_variant == HystartVariant::Lss {
                    f.write_str("(lss)")?;
                }
            }
            SlowStartStrategy::Search => f.write_str("+search")?,
        }
        Ok(())
    }
}

/// The default bottleneck queue: 1000 datagrams of 1200 bytes (the library's datagram size),
/// modelled on tc-netem's default queue of 1000 packets. The reference lab emulated
/// its 5 Mbps / 60 ms path without saying how deep the queue was; a netem bottleneck has this
/// one unless told otherwise. It is 32 BDPs on that path: deep enough that standard slow start
/// overshoots by far, as it does behind the buffers of real access links.
pub const DEFAULT_QUEUE_BYTES: u64 = 1000 * 1200;

/// One experiment: a transfer over a modelled path.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Bytes to transfer.
    pub size: u64,
    /// Whether the client sends (upload) instead of the server (download).
    pub upload: bool,
    /// The bottleneck rate in bits per second, the same in both directions.
    pub rate_bps: u64,
    /// One-way delay from client to server.
    pub delay_up: Duration,
    /// One-way delay from server to client.
    pub delay_down: Duration,
    /// The drop-tail queue in front of each direction's bottleneck.
    pub queue: Queue,
    /// Random loss probability from client to server.
    pub loss_up: f64,
    /// Random loss probability from server to client.
    pub loss_down: f64,
    /// Probability that a datagram (either direction) is held back by `reorder_delay`.
    pub reorder: f64,
    /// How long a reordered datagram is held back.
    pub reorder_delay: Duration,
    /// The link MTU in IP bytes (both directions); `None` carries any datagram.
    pub mtu: Option<usize>,
    /// A black hole: from this time into the run on, the link MTU drops to this (no ICMP).
    pub mtu_drop: Option<(Duration, usize)>,
    /// The largest UDP payload the endpoints may send (`set_max_send_udp_payload_size`):
    /// what path MTU discovery searches up to.
    pub max_payload: usize,
    /// Whether the endpoints run path MTU discovery.
    pub pmtud: bool,
    /// Whether the endpoints use ECN (mark ECT(0), validate and react to CE, RFC 9000 §13.4).
    pub ecn: bool,
    /// An AQM in front of each bottleneck marks ECN-capable datagrams CE while more than this
    /// many bytes are queued (`None`: no marking, drop-tail only).
    pub ce_threshold: Option<u64>,
    /// The largest random extra one-way delay of a datagram, in both directions (uniform,
    /// seeded, order kept: `quiche::testing::Jitter`); zero for none.
    pub jitter: Duration,
    /// The sender's congestion control.
    pub cc: Cc,
    /// Whether both endpoints offer the ACK frequency extension (`--ack-frequency`;
    /// draft-ietf-quic-ack-frequency-12); `None` keeps the library's default.
    pub ack_frequency: Option<bool>,
    /// Flow-control windows.
    pub windows: Windows,
    /// Virtual time after which an unfinished transfer is abandoned.
    pub time_limit: Duration,
}

impl Default for Scenario {
    /// The reference path: an 8 MB download over 5 Mbps with a 60 ms RTT and
    /// [`DEFAULT_QUEUE_BYTES`] of queue, no random loss, with the library's default congestion
    /// control.
    fn default() -> Self {
        Scenario {
            size: 8_000_000,
            upload: false,
            rate_bps: 5_000_000,
            delay_up: Duration::from_millis(30),
            delay_down: Duration::from_millis(30),
            queue: Queue::Bytes(DEFAULT_QUEUE_BYTES),
            loss_up: 0.0,
            loss_down: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(5),
            mtu: None,
            mtu_drop: None,
            max_payload: 1200,
            pmtud: true,
            ecn: false,
            ce_threshold: None,
            jitter: Duration::ZERO,
            cc: Cc::default(),
            ack_frequency: None,
            windows: Windows::default(),
            time_limit: Duration::from_secs(600),
        }
    }
}

impl Scenario {
    /// The base round-trip time: both one-way delays, no queueing or serialisation.
    pub fn rtt(&self) -> Duration {
        self.delay_up + self.delay_down
    }

    /// The bandwidth-delay product in bytes.
    pub fn bdp_bytes(&self) -> f64 {
        bdp_bytes(self.rate_bps, self.rtt())
    }

    /// The link MTU model of both directions.
    pub fn path_mtu(&self) -> quiche::testing::PathMtu {
        let mut mtu = quiche::testing::PathMtu {
            mtu: self.mtu,
            changes: Vec::new(),
        };
        if let Some((at, to)) = self.mtu_drop {
            mtu = mtu.then(at, Some(to));
        }
        mtu
    }

    /// The queue size in bytes (`None`: unlimited).
    pub fn queue_bytes(&self) -> Option<u64> {
        self.queue.bytes(self.rate_bps, self.rtt())
    }

    /// The time the transfer needs at best after a handshake of `handshake`: the request's
    /// round trip plus the bytes at the bottleneck rate (`size / rate + handshake + 1 RTT`).
    pub fn ideal_time(&self, handshake: Duration) -> Duration {
        let transfer = Duration::from_secs_f64(self.size as f64 * 8.0 / self.rate_bps as f64);
        transfer + handshake + self.rtt()
    }

    /// One line describing the scenario.
    pub fn describe(&self) -> String {
        let queue = match self.queue_bytes() {
            Some(b) => format!(
                "queue {} ({:.2} BDP)",
                fmt_size(b as f64),
                b as f64 / self.bdp_bytes().max(1.0)
            ),
            None => "queue unlimited".to_string(),
        };
        let loss = if self.loss_up == self.loss_down {
            format!("loss {}%", self.loss_up * 100.0)
        } else {
            format!(
                "loss {}% up {}% down",
                self.loss_up * 100.0,
                self.loss_down * 100.0
            )
        };
        let reorder = if self.reorder > 0.0 {
            format!(
                ", reorder {}% by {}",
                self.reorder * 100.0,
                fmt_duration(self.reorder_delay)
            )
        } else {
            String::new()
        };
        let mut reorder = reorder;
        if self.max_payload > 1200 {
            let pmtud = if self.pmtud { "PMTUD" } else { "no PMTUD" };
            reorder += &format!(", payload <= {} ({pmtud})", self.max_payload);
        }
        if let Some(mtu) = self.mtu {
            reorder += &format!(", MTU {mtu}");
        }
        if let Some((at, to)) = self.mtu_drop {
            reorder += &format!(", MTU -> {to} at {}", fmt_duration(at));
        }
        let ecn = match (self.ecn, self.ce_threshold) {
            (false, None) => String::new(),
            (true, None) => ", ECN (no CE marking)".to_string(),
            (false, Some(t)) => {
                format!(", CE above {} (endpoints without ECN)", fmt_size(t as f64))
            }
            (true, Some(t)) => format!(", ECN with CE above {}", fmt_size(t as f64)),
        };
        let reorder = if self.jitter.is_zero() {
            reorder
        } else {
            format!("{reorder}, jitter 0-{}", fmt_duration(self.jitter))
        };
        format!(
            "{} {} over {}, RTT {} ({} up + {} down), {queue}, {loss}{reorder}{ecn}; {}, iw {}, {}",
            if self.upload { "upload" } else { "download" },
            fmt_size(self.size as f64),
            fmt_rate(self.rate_bps as f64),
            fmt_duration(self.rtt()),
            fmt_duration(self.delay_up),
            fmt_duration(self.delay_down),
            self.cc,
            self.cc.initial_window_packets,
            if self.cc.pacing {
                "pacing"
            } else {
                "no pacing"
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_reference_path() {
        let s = Scenario::default();
        assert_eq!(s.rtt(), Duration::from_millis(60));
        assert_eq!(s.queue_bytes(), Some(1_200_000));
        assert_eq!(s.bdp_bytes(), 37_500.0);
        // 8 MB at 5 Mbps is 12.8 s.
        let ideal = s.ideal_time(Duration::from_millis(70));
        assert_eq!(ideal, Duration::from_millis(12_800 + 70 + 60));
        assert_eq!(
            s.describe(),
            "download 8.00 MB over 5.00 Mbps, RTT 60 ms (30 ms up + 30 ms down), \
             queue 1.20 MB (32.00 BDP), loss 0%; cubic+hystart, iw 10, pacing"
        );
    }

    #[test]
    fn cc_labels() {
        let mut cc = Cc::new(CongestionControlAlgorithm::Reno, false);
        assert_eq!(cc.to_string(), "reno");
        let search =
            Cc::with_slow_start(CongestionControlAlgorithm::CUBIC, SlowStartStrategy::Search);
        assert_eq!(search.to_string(), "cubic+search");
        cc.hystart = true;
        assert_eq!(cc.to_string(), "reno+hystart");
        cc.hystart_variant = HystartVariant::Lss;
        assert_eq!(cc.to_string(), "reno+hystart(lss)");
        assert_eq!(
            Cc::default().to_string(),
            format!("cubic+{}", SlowStartStrategy::default())
        );
    }
}
