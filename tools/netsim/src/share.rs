//! Long-running downloads sharing one bottleneck, and a bottleneck whose rate changes
//! mid-transfer, on the shared-path simulator [`crate::net::Net`].
//!
//! Each flow is its own connection pair: the client asks for data on a stream and the server
//! writes to it for as long as the experiment lasts (the stream never ends), so every flow
//! always has data to send and what it gets is what its congestion control takes. The
//! experiment records, per interval, the bytes each client read and the queueing delay at the
//! bottleneck of the data direction (sampled every [`QUEUE_SAMPLE`]): the throughput shares
//! over time, how fast a late flow converges to its share, and how fast a sender drains the
//! queue when the rate drops.

use std::time::{Duration, Instant};

use quiche::testing::Direction;
use quiche::{Connection, Error};

use crate::net::{LinkModel, Net};
use crate::scenario::{Cc, Scenario};
use crate::summary::Stat;
use crate::units::{fmt_duration, fmt_rate, fmt_size, Queue};

/// How often the bottleneck's queueing delay is sampled.
pub const QUEUE_SAMPLE: Duration = Duration::from_millis(10);

/// The stream every flow's data goes on.
const STREAM: u64 = 0;

/// The bytes written (their value does not matter).
static CHUNK: [u8; 64 * 1024] = [0x5a; 64 * 1024];

/// One flow: its sender's congestion control and when its connection opens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Flow {
    /// The server's (the sender's) congestion control; the client gets the same.
    pub cc: Cc,
    /// When the client sends its first Initial, from the start of the experiment.
    pub start: Duration,
}

/// Flows over one path for a fixed time.
#[derive(Clone, Debug, PartialEq)]
pub struct ShareScenario {
    /// Bottleneck rate in bits per second (both directions).
    pub rate_bps: u64,
    /// Base round-trip time (half of it each way).
    pub rtt: Duration,
    /// The drop-tail queue of each direction, sized on `rate_bps`.
    pub queue: Queue,
    /// Random loss probability, both directions.
    pub loss: f64,
    /// From this time on the data direction (server to client) runs at this rate.
    pub rate_change: Option<(Duration, u64)>,
    /// The flows.
    pub flows: Vec<Flow>,
    /// How long the experiment lasts.
    pub duration: Duration,
    /// The width of the throughput table's rows.
    pub interval: Duration,
}

/// The two-flow path of issue 19: 20 Mbit/s, 40 ms RTT.
pub const SHARE_RATE_BPS: u64 = 20_000_000;
/// The base RTT of the two-flow path.
pub const SHARE_RTT: Duration = Duration::from_millis(40);

impl ShareScenario {
    /// Two flows over 20 Mbit/s with a 40 ms RTT and `queue`, for 30 s: `first` from the
    /// start, `second` from 3 s plus 50 ms per seed after the first (so that seeds differ by
    /// the phase at which the second flow arrives, not only by connection IDs).
    pub fn two_flows(first: Cc, second: Cc, queue: Queue, seed: u64) -> ShareScenario {
        let late = Duration::from_secs(3) + Duration::from_millis(50 * seed.saturating_sub(1));
        ShareScenario {
            rate_bps: SHARE_RATE_BPS,
            rtt: SHARE_RTT,
            queue,
            loss: 0.0,
            rate_change: None,
            flows: vec![
                Flow {
                    cc: first,
                    start: Duration::ZERO,
                },
                Flow {
                    cc: second,
                    start: late,
                },
            ],
            duration: Duration::from_secs(30),
            interval: Duration::from_secs(1),
        }
    }

    /// One flow over 20 Mbit/s with a 40 ms RTT and `queue` (sized on 20 Mbit/s) whose rate
    /// halves at 10 s plus 50 ms per seed; 25 s in all, rows of 100 ms.
    pub fn rate_halving(cc: Cc, queue: Queue, seed: u64) -> ShareScenario {
        let at = Duration::from_secs(10) + Duration::from_millis(50 * seed.saturating_sub(1));
        ShareScenario {
            rate_bps: SHARE_RATE_BPS,
            rtt: SHARE_RTT,
            queue,
            loss: 0.0,
            rate_change: Some((at, SHARE_RATE_BPS / 2)),
            flows: vec![Flow {
                cc,
                start: Duration::ZERO,
            }],
            duration: Duration::from_secs(25),
            interval: Duration::from_millis(100),
        }
    }

    fn queue_bytes(&self) -> Option<u64> {
        self.queue.bytes(self.rate_bps, self.rtt)
    }

    /// One line describing the path.
    pub fn describe(&self) -> String {
        let queue = match self.queue_bytes() {
            Some(b) => format!("queue {} ({:?})", fmt_size(b as f64), self.queue),
            None => "queue unlimited".to_string(),
        };
        let change = self.rate_change.map_or(String::new(), |(at, r)| {
            format!(", rate {} from {}", fmt_rate(r as f64), fmt_duration(at))
        });
        format!(
            "{} RTT {}, {queue}, loss {}%{change}; {} s",
            fmt_rate(self.rate_bps as f64),
            fmt_duration(self.rtt),
            self.loss * 100.0,
            self.duration.as_secs_f64()
        )
    }
}

/// What one flow got.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowResult {
    /// The flow.
    pub flow: Flow,
    /// Bytes its client read in each interval of the experiment.
    pub bytes: Vec<u64>,
    /// Packets its server sent.
    pub sent: u64,
    /// Packets its server declared lost.
    pub lost: u64,
    /// Its sender's congestion controller, every [`TRACE_SAMPLE`] from its start.
    pub trace: Vec<TracePoint>,
}

/// How often [`FlowResult::trace`] samples the sender.
pub const TRACE_SAMPLE: Duration = Duration::from_millis(100);

/// One sample of a flow's sender (its server): what its congestion controller holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TracePoint {
    /// Time since the experiment's start.
    pub at: Duration,
    /// The controller's state by its qlog name (for BBR, `probe_bw_up` and so on).
    pub state: &'static str,
    /// Pacing rate in bytes per second (for BBR, the bandwidth estimate times the pacing
    /// gain, less 1 %).
    pub pacing_rate: Option<u64>,
    /// Congestion window in bytes.
    pub cwnd: usize,
    /// Bytes in flight.
    pub in_flight: usize,
    /// Latest RTT sample.
    pub latest_rtt: Duration,
    /// Minimum RTT seen.
    pub min_rtt: Option<Duration>,
}

impl FlowResult {
    /// The trace as text: one line per sample (time, state, pacing rate in Mbit/s, cwnd and
    /// in flight in kB, latest and minimum RTT in ms).
    pub fn trace_table(&self) -> String {
        let mut out = String::from("t_s state pacing_mbps cwnd_kb inflight_kb rtt_ms min_rtt_ms\n");
        for p in &self.trace {
            out.push_str(&format!(
                "{:.1} {} {:.2} {:.1} {:.1} {:.1} {:.1}\n",
                p.at.as_secs_f64(),
                p.state,
                p.pacing_rate.unwrap_or(0) as f64 * 8e-6,
                p.cwnd as f64 / 1e3,
                p.in_flight as f64 / 1e3,
                p.latest_rtt.as_secs_f64() * 1e3,
                p.min_rtt.map_or(0.0, |d| d.as_secs_f64() * 1e3),
            ));
        }
        out
    }
}

/// The outcome of one experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct ShareResult {
    /// The experiment.
    pub scenario: ShareScenario,
    /// Per flow, in the scenario's order.
    pub flows: Vec<FlowResult>,
    /// The data direction's queueing delay, every [`QUEUE_SAMPLE`] from the start.
    pub queue_delay: Vec<Duration>,
    /// Datagrams the data direction's queue dropped.
    pub dropped_queue: u64,
}

impl ShareResult {
    /// Flow `f`'s goodput in interval `i`, in Mbit/s.
    pub fn mbps(&self, f: usize, i: usize) -> f64 {
        let bytes = self.flows[f].bytes.get(i).copied().unwrap_or(0);
        bytes as f64 * 8.0 / self.scenario.interval.as_secs_f64() / 1e6
    }

    fn intervals(&self, from: Duration, to: Duration) -> std::ops::Range<usize> {
        let w = self.scenario.interval.as_secs_f64();
        let n = self.flows.first().map_or(0, |f| f.bytes.len());
        let a = ((from.as_secs_f64() / w).ceil() as usize).min(n);
        let b = ((to.as_secs_f64() / w).floor() as usize).clamp(a, n);
        a..b
    }

    /// Flow `f`'s part of the bytes all flows read in the whole intervals within `from..to`.
    pub fn share(&self, f: usize, from: Duration, to: Duration) -> f64 {
        let range = self.intervals(from, to);
        let sum = |fl: &FlowResult| fl.bytes[range.clone()].iter().sum::<u64>() as f64;
        let total: f64 = self.flows.iter().map(sum).sum();
        sum(&self.flows[f]) / total.max(1.0)
    }

    /// The smaller flow's goodput over the larger one's, for the first two flows, over the
    /// whole intervals within `from..to` (1 is an even split).
    pub fn balance(&self, from: Duration, to: Duration) -> f64 {
        let (a, b) = (self.share(0, from, to), self.share(1, from, to));
        a.min(b) / a.max(b).max(f64::MIN_POSITIVE)
    }

    /// How long after the second flow starts the two first flows are within `tolerance` of
    /// each other (`|a - b| <= tolerance * max(a, b)`) in every window of `window` from then
    /// to the end of the experiment (windows of whole intervals, sliding by one interval);
    /// `None` if they never are.
    pub fn convergence(&self, tolerance: f64, window: Duration) -> Option<Duration> {
        let start = self.flows.get(1)?.flow.start;
        let w = self.scenario.interval;
        let n = self.flows[0].bytes.len();
        let span = ((window.as_secs_f64() / w.as_secs_f64()).round() as usize).max(1);
        let first = self.intervals(start, self.scenario.duration).start;
        let fair = |i: usize| {
            let sum = |f: usize| self.flows[f].bytes[i..i + span].iter().sum::<u64>() as f64;
            let (a, b) = (sum(0), sum(1));
            (a - b).abs() <= tolerance * a.max(b)
        };
        // The last window that is not fair; convergence is the start of the one after it.
        let last_unfair = (first..=n.checked_sub(span)?).rev().find(|&i| !fair(i));
        let converged = last_unfair.map_or(first, |i| i + 1);
        if converged + span > n {
            return None;
        }
        Some((w * converged as u32).saturating_sub(start))
    }

    /// The queueing delay samples taken within `from..to`, summarised (in seconds).
    pub fn queue_stat(&self, from: Duration, to: Duration) -> Stat {
        let step = QUEUE_SAMPLE.as_secs_f64();
        let a = (from.as_secs_f64() / step).ceil() as usize;
        let b = ((to.as_secs_f64() / step).floor() as usize).min(self.queue_delay.len());
        Stat::of(
            self.queue_delay[a.min(b)..b]
                .iter()
                .map(|d| d.as_secs_f64())
                .collect(),
        )
    }

    /// After the rate change: how long until the queueing delay first falls back to within
    /// `margin` of the median it had in the 2 s before the change, and stays there for one
    /// second (for a queue that the sender keeps short, the time it takes to notice the new
    /// rate and drain what the old one queued); `None` without a change or if it never does.
    pub fn queue_recovery(&self, margin: Duration) -> Option<Duration> {
        let (at, _) = self.scenario.rate_change?;
        let before = self
            .queue_stat(at.saturating_sub(Duration::from_secs(2)), at)
            .median;
        let limit = before + margin.as_secs_f64();
        let step = QUEUE_SAMPLE.as_secs_f64();
        let first = (at.as_secs_f64() / step).ceil() as usize;
        let hold = (1.0 / step).round() as usize;
        let ok = |d: &Duration| d.as_secs_f64() <= limit;
        let samples = &self.queue_delay;
        (first..samples.len().saturating_sub(hold))
            .find(|&i| samples[i..i + hold].iter().all(ok))
            .map(|i| QUEUE_SAMPLE * i as u32 - at)
    }

    /// Packets all senders declared lost.
    pub fn lost(&self) -> u64 {
        self.flows.iter().map(|f| f.lost).sum()
    }
}

/// One flow's applications: the client asks once, the server writes until the end.
#[derive(Default)]
struct Apps {
    asked: bool,
    serving: bool,
}

fn err(what: &str, e: Error) -> String {
    format!("{what}: {e:?}")
}

impl Apps {
    fn poll(
        &mut self,
        client: &mut Connection,
        server: &mut Connection,
        buf: &mut [u8],
    ) -> Result<u64, String> {
        if !client.is_established() {
            return Ok(0);
        }
        if !self.asked {
            match client.stream_send(STREAM, b"GET /\r\n", true) {
                Ok(_) => self.asked = true,
                Err(Error::Done) => {}
                Err(e) => return Err(err("request", e)),
            }
        }
        if !self.serving {
            loop {
                match server.stream_recv(STREAM, buf) {
                    Ok((_, fin)) => self.serving |= fin,
                    Err(Error::Done) | Err(Error::InvalidStreamState(_)) => break,
                    Err(e) => return Err(err("request read", e)),
                }
            }
        }
        if self.serving {
            loop {
                match server.stream_send(STREAM, &CHUNK, false) {
                    Ok(n) if n == CHUNK.len() => {}
                    Ok(_) | Err(Error::Done) => break,
                    Err(e) => return Err(err("stream_send", e)),
                }
            }
        }
        let mut read = 0;
        loop {
            match client.stream_recv(STREAM, buf) {
                Ok((n, _)) => read += n as u64,
                Err(Error::Done) | Err(Error::InvalidStreamState(_)) => break,
                Err(e) => return Err(err("stream_recv", e)),
            }
        }
        Ok(read)
    }
}

/// Runs `s` with `seed` (the link's randomness and the connection IDs).
pub fn run_share(s: &ShareScenario, seed: u64) -> Result<ShareResult, String> {
    let half = s.rtt / 2;
    let link = |rate_change| LinkModel {
        delay: half,
        rate_bps: s.rate_bps,
        queue_bytes: s.queue_bytes(),
        loss: s.loss,
        rate_change,
    };
    let mut net = Net::new(link(None), link(s.rate_change), seed);
    let epoch: Instant = net.now;
    let intervals = (s.duration.as_secs_f64() / s.interval.as_secs_f64()).ceil() as usize;
    let mut bytes = vec![vec![0u64; intervals]; s.flows.len()];
    let mut apps: Vec<Apps> = Vec::new();
    let mut queue_delay = Vec::new();
    let mut traces: Vec<Vec<TracePoint>> = vec![Vec::new(); s.flows.len()];
    let mut buf = vec![0; 64 * 1024];
    loop {
        let elapsed = net.elapsed();
        while queue_delay.len() as f64 * QUEUE_SAMPLE.as_secs_f64() <= elapsed.as_secs_f64() {
            queue_delay.push(net.queue_delay(Direction::ToClient));
            let at = QUEUE_SAMPLE * (queue_delay.len() as u32 - 1);
            if at.as_millis() % TRACE_SAMPLE.as_millis() == 0 {
                for (trace, pair) in traces.iter_mut().zip(net.pairs.iter()) {
                    let st = pair.server.path_stats();
                    trace.push(TracePoint {
                        at,
                        state: st.cc_state,
                        pacing_rate: st.pacing_rate,
                        cwnd: st.cwnd,
                        in_flight: st.bytes_in_flight,
                        latest_rtt: st.latest_rtt,
                        min_rtt: st.min_rtt,
                    });
                }
            }
        }
        if elapsed >= s.duration {
            break;
        }
        // Flows open in order; one whose time has come joins now.
        while let Some(flow) = s.flows.get(apps.len()).filter(|f| f.start <= elapsed) {
            let scenario = Scenario {
                cc: flow.cc,
                ..Scenario::default()
            };
            let mut config = crate::sim::config(&scenario)?;
            let mut server_config = crate::sim::config(&scenario)?;
            let cert = |name: &str| {
                format!(
                    "{}/../../quiche/tests/certs/{name}",
                    env!("CARGO_MANIFEST_DIR")
                )
            };
            server_config
                .load_cert_chain_from_pem_file(&cert("cert.crt"))
                .map_err(|e| err("certificate", e))?;
            server_config
                .load_priv_key_from_pem_file(&cert("cert.key"))
                .map_err(|e| err("private key", e))?;
            config.verify_peer(false);
            net.connect(&mut config, &mut server_config)
                .map_err(|e| err("connect", e))?;
            apps.push(Apps::default());
        }
        let slot = (elapsed.as_secs_f64() / s.interval.as_secs_f64()) as usize;
        for (f, (app, pair)) in apps.iter_mut().zip(net.pairs.iter_mut()).enumerate() {
            let read = app.poll(&mut pair.client, &mut pair.server, &mut buf)?;
            if let Some(b) = bytes[f].get_mut(slot) {
                *b += read;
            }
            if let Some(e) = pair.server.local_error().or(pair.client.local_error()) {
                return Err(format!("flow {f} closed: {e:?}"));
            }
        }
        // Wake up for the next flow's start and the next queue sample.
        let next_sample = epoch + QUEUE_SAMPLE * queue_delay.len() as u32;
        let next_flow = s.flows.get(apps.len()).map(|f| epoch + f.start);
        let limit = next_flow.map_or(next_sample, |t| t.min(next_sample));
        if !net.step_until(Some(limit)).map_err(|e| err("step", e))? {
            break;
        }
    }
    let flows = s
        .flows
        .iter()
        .zip(bytes)
        .zip(traces)
        .enumerate()
        .map(|(f, ((flow, bytes), trace))| {
            let stats = net.pairs.get(f).map(|p| p.server.stats());
            FlowResult {
                flow: *flow,
                bytes,
                sent: stats.as_ref().map_or(0, |st| st.sent as u64),
                lost: stats.as_ref().map_or(0, |st| st.lost as u64),
                trace,
            }
        })
        .collect();
    Ok(ShareResult {
        scenario: s.clone(),
        flows,
        queue_delay,
        dropped_queue: net.counters(Direction::ToClient).dropped_queue,
    })
}

/// A per-interval table of one run: each flow's goodput and share, and the queueing delay.
pub fn share_table(r: &ShareResult) -> String {
    let s = &r.scenario;
    let mut out = format!("{}\n", s.describe());
    for (f, fl) in r.flows.iter().enumerate() {
        out += &format!(
            "flow {}: {} from {}, sent {}, lost {}\n",
            f + 1,
            fl.flow.cc,
            fmt_duration(fl.flow.start),
            fl.sent,
            fl.lost
        );
    }
    out += "t s    ";
    for f in 0..r.flows.len() {
        out += &format!("  flow{} Mbps", f + 1);
    }
    if r.flows.len() == 2 {
        out += "  share1";
    }
    out += "  queue ms (mean)\n";
    let n = r.flows.first().map_or(0, |f| f.bytes.len());
    let per = (s.interval.as_secs_f64() / QUEUE_SAMPLE.as_secs_f64()).round() as usize;
    for i in 0..n {
        let t = s.interval * i as u32;
        out += &format!("{:<7.1}", t.as_secs_f64());
        for f in 0..r.flows.len() {
            out += &format!(" {:>11.2}", r.mbps(f, i));
        }
        if r.flows.len() == 2 {
            let total = r.mbps(0, i) + r.mbps(1, i);
            if total > 0.0 {
                out += &format!(" {:>7.2}", r.mbps(0, i) / total);
            } else {
                out += "       -";
            }
        }
        let q = &r.queue_delay
            [(i * per).min(r.queue_delay.len())..((i + 1) * per).min(r.queue_delay.len())];
        let mean = q.iter().map(|d| d.as_secs_f64()).sum::<f64>() / q.len().max(1) as f64;
        out += &format!(" {:>9.1}\n", mean * 1e3);
    }
    out
}

/// The same as tab-separated values (time, then each flow's Mbit/s, then the mean queueing
/// delay in ms), for plotting.
pub fn share_tsv(r: &ShareResult) -> String {
    let s = &r.scenario;
    let mut out = String::from("t_s");
    for (f, fl) in r.flows.iter().enumerate() {
        out += &format!("\tflow{}_{}_mbps", f + 1, fl.flow.cc);
    }
    out += "\tqueue_ms\n";
    let n = r.flows.first().map_or(0, |f| f.bytes.len());
    let per = (s.interval.as_secs_f64() / QUEUE_SAMPLE.as_secs_f64()).round() as usize;
    for i in 0..n {
        out += &format!("{:.3}", (s.interval * i as u32).as_secs_f64());
        for f in 0..r.flows.len() {
            out += &format!("\t{:.3}", r.mbps(f, i));
        }
        let q = &r.queue_delay
            [(i * per).min(r.queue_delay.len())..((i + 1) * per).min(r.queue_delay.len())];
        let mean = q.iter().map(|d| d.as_secs_f64()).sum::<f64>() / q.len().max(1) as f64;
        out += &format!("\t{:.2}\n", mean * 1e3);
    }
    out
}

/// The pairs of the two-flow experiment: (first flow, second flow); BBR with `bbr`'s
/// departures from the draft (the default: none).
pub fn share_pairs(bbr: quiche::BbrOptions) -> [(Cc, Cc); 4] {
    let bbr = Cc {
        bbr,
        ..Cc::new(quiche::CongestionControlAlgorithm::Bbr, false)
    };
    let cubic = Cc::default();
    [(bbr, bbr), (bbr, cubic), (cubic, bbr), (cubic, cubic)]
}

/// The queues of the two-flow and rate-change experiments: 1 BDP and 8 BDP.
pub const SHARE_QUEUES: [Queue; 2] = [Queue::Bdp(1.0), Queue::Bdp(8.0)];

/// How long after the second flow starts the shares are judged: from 10 s on.
pub const SETTLE: Duration = Duration::from_secs(10);

/// One cell of the two-flow experiment: a pair of algorithms and a queue, every seed.
#[derive(Clone, Debug)]
pub struct ShareRow {
    /// First and second flow.
    pub pair: (Cc, Cc),
    /// The queue.
    pub queue: Queue,
    /// One run per seed.
    pub runs: Vec<ShareResult>,
}

impl ShareRow {
    /// Per run, the window in which shares are judged: from [`SETTLE`] after the second
    /// flow started to the end.
    fn judged(r: &ShareResult) -> (Duration, Duration) {
        let start = r.flows.get(1).map_or(Duration::ZERO, |f| f.flow.start);
        (start + SETTLE, r.scenario.duration)
    }

    /// The first flow's share of the bytes after the settling time.
    pub fn first_share(&self) -> Stat {
        Stat::of(
            self.runs
                .iter()
                .map(|r| {
                    let (a, b) = Self::judged(r);
                    r.share(0, a, b)
                })
                .collect(),
        )
    }

    /// The smaller flow's goodput over the larger one's after the settling time.
    pub fn balance(&self) -> Stat {
        Stat::of(
            self.runs
                .iter()
                .map(|r| {
                    let (a, b) = Self::judged(r);
                    r.balance(a, b)
                })
                .collect(),
        )
    }

    /// Seconds after the second flow's start until both are within 20 % of each other in
    /// every 1-second window to the end (runs that never converge count as the experiment's
    /// duration).
    pub fn convergence(&self) -> Stat {
        Stat::of(
            self.runs
                .iter()
                .map(|r| {
                    r.convergence(0.2, Duration::from_secs(1))
                        .unwrap_or(r.scenario.duration)
                        .as_secs_f64()
                })
                .collect(),
        )
    }

    /// Runs that converged (as [`ShareRow::convergence`] says) within [`SETTLE`].
    pub fn converged_in_time(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| {
                r.convergence(0.2, Duration::from_secs(1))
                    .is_some_and(|t| t <= SETTLE)
            })
            .count()
    }

    /// Packets lost (both flows), and the queueing delay (median of the samples after the
    /// settling time), per run.
    pub fn lost(&self) -> Stat {
        Stat::of(self.runs.iter().map(|r| r.lost() as f64).collect())
    }

    /// The median queueing delay after the settling time, in seconds, over the runs.
    pub fn queue(&self) -> Stat {
        Stat::of(
            self.runs
                .iter()
                .map(|r| {
                    let (a, b) = Self::judged(r);
                    r.queue_stat(a, b).median
                })
                .collect(),
        )
    }
}

/// Runs every pair over every queue with every seed.
pub fn share_experiment(
    pairs: &[(Cc, Cc)],
    queues: &[Queue],
    seeds: &[u64],
    threads: usize,
) -> Result<Vec<ShareRow>, String> {
    let cells: Vec<((Cc, Cc), Queue)> = queues
        .iter()
        .flat_map(|&q| pairs.iter().map(move |&p| (p, q)))
        .collect();
    let jobs: Vec<(usize, u64)> = (0..cells.len())
        .flat_map(|c| seeds.iter().map(move |&s| (c, s)))
        .collect();
    let mut results = crate::summary::parallel_map(&jobs, threads, |&(c, seed)| {
        let ((a, b), q) = cells[c];
        run_share(&ShareScenario::two_flows(a, b, q, seed), seed)
    })
    .into_iter();
    let mut rows = Vec::new();
    for &(pair, queue) in &cells {
        let runs = results
            .by_ref()
            .take(seeds.len())
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(ShareRow { pair, queue, runs });
    }
    Ok(rows)
}

/// The two-flow experiment as a table of medians (min-max).
pub fn share_report(rows: &[ShareRow]) -> String {
    let seeds = rows.first().map_or(0, |r| r.runs.len());
    let mut out = format!(
        "two flows over {} RTT {}, the second from 3 s + 50 ms x (seed - 1); shares from {} s \
         after it to 30 s; {seeds} seeds, median (min-max)\n",
        fmt_rate(SHARE_RATE_BPS as f64),
        fmt_duration(SHARE_RTT),
        SETTLE.as_secs()
    );
    out += "queue    first+second         first's share          balance   converged s (<=10s)   \
            lost   queue ms\n";
    for row in rows {
        let (s, b, c, l, q) = (
            row.first_share(),
            row.balance(),
            row.convergence(),
            row.lost(),
            row.queue(),
        );
        out += &format!(
            "{:<8} {:<18} {:>5.2} ({:.2}-{:.2}) {:>5.2} ({:.2}) {:>6.1} ({:.1}) {:>2}/{} {:>8.0} {:>8.1}\n",
            format!("{:?}", row.queue),
            format!("{}+{}", row.pair.0, row.pair.1),
            s.median,
            s.min,
            s.max,
            b.median,
            b.min,
            c.median,
            c.max,
            row.converged_in_time(),
            row.runs.len(),
            l.median,
            q.median * 1e3,
        );
    }
    out
}

/// The algorithms of the rate-change experiment: BBR, CUBIC and Reno (both with HyStart++).
pub fn halving_ccs() -> [Cc; 3] {
    [
        Cc::new(quiche::CongestionControlAlgorithm::Bbr, false),
        Cc::default(),
        Cc::new(quiche::CongestionControlAlgorithm::Reno, true),
    ]
}

/// The margin over the queueing delay before the change within which the queue counts as
/// drained again ([`ShareResult::queue_recovery`]).
pub const RECOVERY_MARGIN: Duration = Duration::from_millis(10);

/// One cell of the rate-change experiment.
#[derive(Clone, Debug)]
pub struct HalvingRow {
    /// The algorithm.
    pub cc: Cc,
    /// The queue.
    pub queue: Queue,
    /// One run per seed.
    pub runs: Vec<ShareResult>,
}

impl HalvingRow {
    fn each(&self, f: impl Fn(&ShareResult, Duration) -> f64) -> Stat {
        Stat::of(
            self.runs
                .iter()
                .filter_map(|r| Some(f(r, r.scenario.rate_change?.0)))
                .collect(),
        )
    }

    /// Median queueing delay in the 2 s before the change (s).
    pub fn queue_before(&self) -> Stat {
        self.each(|r, at| {
            r.queue_stat(at.saturating_sub(Duration::from_secs(2)), at)
                .median
        })
    }

    /// The largest queueing delay after the change (s).
    pub fn queue_peak(&self) -> Stat {
        self.each(|r, at| r.queue_stat(at, r.scenario.duration).max)
    }

    /// Median queueing delay from 5 s after the change to the end (s).
    pub fn queue_after(&self) -> Stat {
        self.each(|r, at| {
            r.queue_stat(at + Duration::from_secs(5), r.scenario.duration)
                .median
        })
    }

    /// Seconds from the change until the queue is back to its earlier level (see
    /// [`ShareResult::queue_recovery`]); a run whose queue never is counts as the rest of
    /// the experiment.
    pub fn recovery(&self) -> Stat {
        self.each(|r, at| {
            r.queue_recovery(RECOVERY_MARGIN)
                .unwrap_or(r.scenario.duration - at)
                .as_secs_f64()
        })
    }

    /// Runs whose queue got back to its earlier level.
    pub fn recovered(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.queue_recovery(RECOVERY_MARGIN).is_some())
            .count()
    }

    /// Goodput from the change to 5 s after it, over the new rate.
    pub fn utilisation_after(&self) -> Stat {
        self.each(|r, at| {
            let w = r.scenario.interval.as_secs_f64();
            let a = (at.as_secs_f64() / w).ceil() as usize;
            let b = (((at + Duration::from_secs(5)).as_secs_f64() / w).floor() as usize)
                .min(r.flows[0].bytes.len());
            let bytes: u64 = r.flows[0].bytes[a.min(b)..b].iter().sum();
            let rate = r.scenario.rate_change.map_or(r.scenario.rate_bps, |c| c.1);
            bytes as f64 * 8.0 / ((b - a.min(b)) as f64 * w).max(w) / rate as f64
        })
    }

    /// Packets lost in the run.
    pub fn lost(&self) -> Stat {
        Stat::of(self.runs.iter().map(|r| r.lost() as f64).collect())
    }
}

/// Runs every algorithm of [`halving_ccs`] over every queue with every seed.
pub fn halving_experiment(
    queues: &[Queue],
    seeds: &[u64],
    threads: usize,
) -> Result<Vec<HalvingRow>, String> {
    let cells: Vec<(Cc, Queue)> = queues
        .iter()
        .flat_map(|&q| halving_ccs().into_iter().map(move |c| (c, q)))
        .collect();
    let jobs: Vec<(usize, u64)> = (0..cells.len())
        .flat_map(|c| seeds.iter().map(move |&s| (c, s)))
        .collect();
    let mut results = crate::summary::parallel_map(&jobs, threads, |&(c, seed)| {
        let (cc, q) = cells[c];
        run_share(&ShareScenario::rate_halving(cc, q, seed), seed)
    })
    .into_iter();
    let mut rows = Vec::new();
    for &(cc, queue) in &cells {
        let runs = results
            .by_ref()
            .take(seeds.len())
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(HalvingRow { cc, queue, runs });
    }
    Ok(rows)
}

/// The rate-change experiment as a table of medians (max).
pub fn halving_report(rows: &[HalvingRow]) -> String {
    let seeds = rows.first().map_or(0, |r| r.runs.len());
    let mut out = format!(
        "one flow over {} RTT {}, rate halved at 10 s + 50 ms x (seed - 1), 25 s; {seeds} \
         seeds, median (max); queue ms: before the change, peak after, from 5 s after; \
         drained: s until the queue is back within {} ms of its level before, for 1 s\n",
        fmt_rate(SHARE_RATE_BPS as f64),
        fmt_duration(SHARE_RTT),
        RECOVERY_MARGIN.as_millis()
    );
    out += "queue    cc              queue before  peak after  5 s after    drained s    \
            use 0-5 s   lost\n";
    for row in rows {
        let (b, p, a, d, u, l) = (
            row.queue_before(),
            row.queue_peak(),
            row.queue_after(),
            row.recovery(),
            row.utilisation_after(),
            row.lost(),
        );
        out += &format!(
            "{:<8} {:<15} {:>12.1} {:>11.1} {:>10.1} {:>6.2} ({:.2}) {:>2}/{} {:>8.2} {:>6.0}\n",
            format!("{:?}", row.queue),
            row.cc.to_string(),
            b.median * 1e3,
            p.median * 1e3,
            a.median * 1e3,
            d.median,
            d.max,
            row.recovered(),
            row.runs.len(),
            u.median,
            l.median,
        );
    }
    out
}
