//! Runs one scenario with one seed: a client and a server [`Connection`] joined by the library's
//! in-memory [`Pipe`] on a virtual clock, the server sending `size` bytes on a stream the client
//! asked for (or the client sending them, for an upload).

use std::path::Path;
use std::time::{Duration, Instant};

use quiche::testing::{Direction, LinkConfig, Pipe};
use quiche::{Config, Connection, Error};

use crate::scenario::Scenario;

/// The stream the transfer uses: the client's first bidirectional stream.
const STREAM: u64 = 0;

/// What the client asks for in a download.
const REQUEST: &[u8] = b"GET /netsim\r\n";

/// The bytes the sender writes, over and over (their value does not matter).
static CHUNK: [u8; 64 * 1024] = [0x5a; 64 * 1024];

/// The outcome of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    /// The seed of the link's randomness (loss, reordering) and of the connection IDs.
    pub seed: u64,
    /// Whether the receiver got every byte and the end of the stream within the time limit.
    pub completed: bool,
    /// Virtual time from the client's first datagram until the receiver read the end of the
    /// stream (or the time limit).
    pub time: Duration,
    /// Virtual time until the client had completed the handshake.
    pub handshake: Duration,
    /// Bytes the receiver read.
    pub received: u64,
    /// Packets the sender sent.
    pub sent: u64,
    /// Packets the sender declared lost.
    pub lost: u64,
    /// Packets the sender sent with retransmitted data (`Stats::retrans`).
    pub retrans: u64,
    /// Stream bytes the sender had to send again because the packets carrying them were
    /// declared lost (`Stats::stream_retrans_bytes`).
    pub retrans_bytes: u64,
    /// Packets declared lost and acknowledged later (spurious losses).
    pub spurious_lost: u64,
    /// Probe timeouts of the sender.
    pub pto: u64,
    /// Losses of packets sent during the first slow start: before the sender first left
    /// standard slow start and any HyStart++ Conservative or Limited Slow Start after it, for
    /// congestion avoidance or recovery.
    pub lost_in_first_slow_start: u64,
    /// Times a congestion event (loss) ended slow start.
    pub slow_start_loss_exits: u64,
    /// Times HyStart++ ended standard slow start on an RTT rise.
    pub slow_start_delay_exits: u64,
    /// When standard slow start first ended (by delay or loss), from the start.
    pub first_slow_start_exit: Option<Duration>,
    /// The congestion window then, in bytes.
    pub first_slow_start_exit_cwnd: Option<usize>,
    /// When the first slow start ended for good (HyStart++ phases included), from the start.
    pub first_slow_start_end: Option<Duration>,
    /// Datagrams the data direction's queue dropped.
    pub dropped_queue: u64,
    /// Datagrams the data direction lost at random.
    pub dropped_random: u64,
    /// How long the data direction's queue was full (a full-sized datagram arriving then
    /// would have been dropped), over the whole run.
    pub queue_full: Duration,
    /// The part of `queue_full` that began before the first slow start ended for good plus
    /// one base RTT (what the slow start's overshoot filled), or over the whole run if it never
    /// ended.
    pub queue_full_first_slow_start: Duration,
    /// Datagrams the data direction dropped for being larger than the link MTU.
    pub dropped_mtu: u64,
    /// The sender's datagram size at the end (the path MTU it found).
    pub pmtu: usize,
    /// The sender's path MTU probes, sent and lost.
    pub pmtu_probes: (u64, u64),
    /// Black holes the sender detected.
    pub black_holes: u64,
    /// Packets the sender sent marked ECT(0).
    pub ecn_ect0_sent: u64,
    /// Datagrams of the data direction the AQM marked CE.
    pub ce_marked: u64,
    /// Window reductions the sender made on CE counts (at most one per round trip).
    pub ecn_ce_congestion_events: u64,
}

impl RunResult {
    /// Received bytes per second of the whole run, in bits per second.
    pub fn goodput_bps(&self) -> f64 {
        let secs = self.time.as_secs_f64();
        if secs == 0.0 {
            0.0
        } else {
            self.received as f64 * 8.0 / secs
        }
    }

    /// The run's duration in round trips of `rtt`.
    pub fn round_trips(&self, rtt: Duration) -> f64 {
        self.time.as_secs_f64() / rtt.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

fn cert(name: &str) -> String {
    format!(
        "{}/../../quiche/tests/certs/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn err(what: &str, e: Error) -> String {
    format!("{what}: {e:?}")
}

/// The configuration both endpoints share; only the sender's congestion control matters, but
/// both get it so that uploads and downloads are symmetric.
pub(crate) fn config(s: &Scenario) -> Result<Config, String> {
    let mut c = Config::new(quiche::PROTOCOL_VERSION).map_err(|e| err("config", e))?;
    c.set_application_protos(&[b"hq-interop"])
        .map_err(|e| err("alpn", e))?;
    // Long enough for the slowest run: an idle timeout only ends a run that is stuck.
    c.set_max_idle_timeout(120_000);
    c.set_initial_max_data(s.windows.max_data);
    c.set_initial_max_stream_data_bidi_local(s.windows.max_stream_data);
    c.set_initial_max_stream_data_bidi_remote(s.windows.max_stream_data);
    c.set_initial_max_stream_data_uni(s.windows.max_stream_data);
    c.set_initial_max_streams_bidi(16);
    c.set_initial_max_streams_uni(16);
    if let Some(w) = s.windows.max_window {
        c.set_max_connection_window(w);
    }
    if let Some(w) = s.windows.max_stream_window {
        c.set_max_stream_window(w);
    }
    c.set_max_send_udp_payload_size(s.max_payload);
    c.discover_pmtu(s.pmtud);
    c.set_cc_algorithm(s.cc.algorithm);
    c.set_slow_start(s.cc.slow_start);
    c.enable_hystart(s.cc.hystart);
    c.set_hystart_variant(s.cc.hystart_variant);
    c.set_bbr_options(s.cc.bbr);
    c.enable_pacing(s.cc.pacing);
    c.enable_ecn(s.ecn);
    c.set_initial_congestion_window_packets(s.cc.initial_window_packets);
    if let Some(on) = s.ack_frequency {
        c.enable_ack_frequency(on);
    }
    Ok(c)
}

fn links(s: &Scenario) -> (LinkConfig, LinkConfig) {
    let queue_bytes = s
        .queue_bytes()
        .map(|b| usize::try_from(b).unwrap_or(usize::MAX));
    let link = |delay, loss| LinkConfig {
        delay,
        rate_bps: Some(s.rate_bps),
        queue_bytes,
        loss,
        reorder: s.reorder,
        reorder_delay: s.reorder_delay,
        duplicate: 0.0,
        mtu: s.path_mtu(),
        ce_threshold: s
            .ce_threshold
            .map(|b| usize::try_from(b).unwrap_or(usize::MAX)),
        ecn_bleach: false,
        jitter: s.jitter,
    };
    (link(s.delay_up, s.loss_up), link(s.delay_down, s.loss_down))
}

/// Gives a connection a qlog writer: a JSON-SEQ file at `path`, with times relative to `now`
/// (the start of the run on the virtual clock).
fn attach_qlog(
    conn: &mut Connection,
    path: &Path,
    title: &str,
    description: &str,
    now: Instant,
) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    conn.set_qlog_at(
        Box::new(std::io::BufWriter::new(file)),
        title.to_string(),
        description.to_string(),
        now,
    );
    Ok(())
}

/// The application on both ends: the request, the data, and what the receiver has read.
struct Transfer {
    size: u64,
    upload: bool,
    request_sent: bool,
    request_read: bool,
    written: u64,
    received: u64,
    fin: bool,
    buf: Vec<u8>,
}

impl Transfer {
    fn new(s: &Scenario) -> Transfer {
        Transfer {
            size: s.size,
            upload: s.upload,
            request_sent: s.upload,
            request_read: s.upload,
            written: 0,
            received: 0,
            fin: false,
            buf: vec![0; 64 * 1024],
        }
    }

    /// Lets both applications do what they can now.
    fn poll(&mut self, pipe: &mut Pipe) -> Result<(), String> {
        if !pipe.client.is_established() {
            return Ok(());
        }
        let (sender, receiver) = if self.upload {
            (&mut pipe.client, &mut pipe.server)
        } else {
            (&mut pipe.server, &mut pipe.client)
        };
        if !self.request_sent {
            // The client, the receiver of a download, asks for the data.
            match receiver.stream_send(STREAM, REQUEST, true) {
                Ok(_) => self.request_sent = true,
                Err(Error::Done) => {}
                Err(e) => return Err(err("request", e)),
            }
        }
        if !self.request_read {
            while let Some((_, fin)) = read(sender, &mut self.buf)? {
                self.request_read |= fin;
            }
        }
        if self.request_read {
            self.write(sender)?;
        }
        while let Some((n, fin)) = read(receiver, &mut self.buf)? {
            self.received += n as u64;
            self.fin |= fin;
        }
        Ok(())
    }

    /// Writes as much of the data as the sender's stream accepts.
    fn write(&mut self, sender: &mut Connection) -> Result<(), String> {
        while self.written < self.size {
            let capacity = match sender.stream_capacity(STREAM) {
                Ok(c) => c,
                Err(Error::InvalidStreamState(_)) if self.upload => usize::MAX,
                Err(e) => return Err(err("stream_capacity", e)),
            };
            let left = usize::try_from(self.size - self.written).unwrap_or(usize::MAX);
            let n = left.min(CHUNK.len()).min(capacity);
            if n == 0 {
                break;
            }
            let fin = n == left;
            match sender.stream_send(STREAM, &CHUNK[..n], fin) {
                Ok(k) => {
                    self.written += k as u64;
                    if k < n {
                        break;
                    }
                }
                Err(Error::Done) => break,
                Err(e) => return Err(err("stream_send", e)),
            }
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.fin && self.received >= self.size
    }
}

/// Reads once from the transfer's stream: `None` when nothing is readable (or the stream does
/// not exist yet).
fn read(conn: &mut Connection, buf: &mut [u8]) -> Result<Option<(usize, bool)>, String> {
    match conn.stream_recv(STREAM, buf) {
        Ok(v) => Ok(Some(v)),
        Err(Error::Done) | Err(Error::InvalidStreamState(_)) => Ok(None),
        Err(e) => Err(err("stream_recv", e)),
    }
}

/// Runs `scenario` with `seed`. With `qlog_dir`, writes one qlog file per endpoint there.
///
/// A transfer that does not finish in the scenario's time limit is reported with
/// `completed == false`; errors are for runs that could not be set up or whose connection
/// failed.
pub fn run(scenario: &Scenario, seed: u64, qlog_dir: Option<&Path>) -> Result<RunResult, String> {
    simulate(scenario, seed, qlog_dir, None)
}

/// Where and how often to write a trace of the sender's congestion controller.
pub struct Trace<'a> {
    /// At most one line per this much virtual time, plus one at every state change.
    pub interval: Duration,
    /// Where the lines go.
    pub out: &'a mut dyn std::io::Write,
}

/// As [`run`], writing a trace of the sender (time, controller state, window, bytes in flight,
/// RTTs, the data direction's queueing delay, losses) to `trace`. Tracing stops at the first
/// write error.
pub fn run_traced(
    scenario: &Scenario,
    seed: u64,
    qlog_dir: Option<&Path>,
    trace: Trace,
) -> Result<RunResult, String> {
    simulate(scenario, seed, qlog_dir, Some(trace))
}

/// Writes a trace line when the state changed or the interval passed.
struct Tracer<'a> {
    trace: Trace<'a>,
    last_line: Option<Instant>,
    last_state: &'static str,
    last_lost: usize,
}

impl Tracer<'_> {
    fn header(&mut self) -> std::io::Result<()> {
        writeln!(
            self.trace.out,
            "{:>9} {:<24} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>6}",
            "t ms",
            "state",
            "cwnd",
            "ssthresh",
            "inflight",
            "srtt",
            "latest",
            "min",
            "queue",
            "lost"
        )
    }

    fn sample(&mut self, pipe: &Pipe, upload: bool, start: Instant) -> std::io::Result<()> {
        let (sender, direction) = if upload {
            (&pipe.client, Direction::ToServer)
        } else {
            (&pipe.server, Direction::ToClient)
        };
        let p = sender.path_stats();
        let due = self
            .last_line
            .is_none_or(|t| pipe.now >= t + self.trace.interval);
        if !due && p.cc_state == self.last_state && p.lost == self.last_lost {
            return Ok(());
        }
        self.last_line = Some(pipe.now);
        self.last_state = p.cc_state;
        self.last_lost = p.lost;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(
            self.trace.out,
            "{:>9.3} {:<24} {:>9} {:>9} {:>9} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>6}",
            ms(pipe.now - start),
            p.cc_state,
            p.cwnd,
            p.ssthresh.map_or("-".to_string(), |s| s.to_string()),
            p.bytes_in_flight,
            ms(p.rtt),
            ms(p.latest_rtt),
            p.min_rtt.map_or(0.0, ms),
            ms(pipe.queue_delay(direction)),
            p.lost,
        )
    }
}

/// Measures how long the data direction's bottleneck queue stays full: a datagram of
/// [`FULL_DATAGRAM`] bytes arriving then would be dropped.
struct QueueWatch {
    direction: Direction,
    /// How long the bottleneck takes to serialise a queue that is full.
    full_backlog: Option<Duration>,
    /// The end of the full time already counted.
    counted_until: Option<Instant>,
    base_rtt: Duration,
    total: Duration,
    first_slow_start: Duration,
}

/// The datagram size a queue must have room for not to count as full: the library's default.
const FULL_DATAGRAM: u64 = 1200;

impl QueueWatch {
    fn new(scenario: &Scenario) -> QueueWatch {
        let full_backlog = scenario.queue_bytes().map(|limit| {
            let bytes = limit.saturating_sub(FULL_DATAGRAM) as f64;
            Duration::from_secs_f64(bytes * 8.0 / scenario.rate_bps.max(1) as f64)
        });
        QueueWatch {
            direction: if scenario.upload {
                Direction::ToServer
            } else {
                Direction::ToClient
            },
            full_backlog,
            counted_until: None,
            base_rtt: scenario.rtt(),
            total: Duration::ZERO,
            first_slow_start: Duration::ZERO,
        }
    }

    /// After a step that began at `before`: whatever the step queued was queued at `before`,
    /// and the queue stays full until its backlog falls below the threshold. `ss_end` is
    /// when the sender's first slow start ended, if it has.
    fn sample(&mut self, pipe: &Pipe, before: Instant, ss_end: Option<Instant>) {
        let Some(full_backlog) = self.full_backlog else {
            return;
        };
        let delay = pipe.queue_delay(self.direction);
        let Some(full_until) = (pipe.now + delay).checked_sub(full_backlog) else {
            return;
        };
        let from = self.counted_until.map_or(before, |c| c.max(before));
        if full_until <= from {
            return;
        }
        let span = full_until - from;
        self.total += span;
        if ss_end.is_none_or(|end| from <= end + self.base_rtt) {
            self.first_slow_start += span;
        }
        self.counted_until = Some(full_until);
    }
}

fn simulate(
    scenario: &Scenario,
    seed: u64,
    qlog_dir: Option<&Path>,
    trace: Option<Trace>,
) -> Result<RunResult, String> {
    let mut client_config = config(scenario)?;
    client_config.verify_peer(false);
    let mut server_config = config(scenario)?;
    server_config
        .load_cert_chain_from_pem_file(&cert("cert.crt"))
        .map_err(|e| err("certificate", e))?;
    server_config
        .load_priv_key_from_pem_file(&cert("cert.key"))
        .map_err(|e| err("private key", e))?;
    let (up, down) = links(scenario);
    let mut pipe = Pipe::with_links(&mut client_config, &mut server_config, up, down, seed)
        .map_err(|e| err("pipe", e))?;
    let start = pipe.now;
    if let Some(dir) = qlog_dir {
        let tag = format!("netsim-{}-seed{seed}", scenario.cc);
        let description = scenario.describe();
        for (conn, side) in [(&mut pipe.client, "client"), (&mut pipe.server, "server")] {
            let path = dir.join(format!("{tag}-{side}.sqlog"));
            attach_qlog(conn, &path, &tag, &description, start)?;
        }
    }

    let mut transfer = Transfer::new(scenario);
    let mut handshake = None;
    let deadline = start + scenario.time_limit;
    let mut tracer = trace.map(|trace| Tracer {
        trace,
        last_line: None,
        last_state: "",
        last_lost: 0,
    });
    // A trace that cannot be written (say, its reader went away) ends; the run goes on.
    if tracer.as_mut().is_some_and(|t| t.header().is_err()) {
        tracer = None;
    }
    let mut watch = QueueWatch::new(scenario);
    loop {
        if handshake.is_none() && pipe.client.is_established() {
            handshake = Some(pipe.now - start);
        }
        if tracer
            .as_mut()
            .is_some_and(|t| t.sample(&pipe, scenario.upload, start).is_err())
        {
            tracer = None;
        }
        transfer.poll(&mut pipe)?;
        if transfer.done() {
            break;
        }
        if let Some(e) = pipe.client.peer_error().or(pipe.client.local_error()) {
            return Err(format!("connection closed: {e:?}"));
        }
        let before = pipe.now;
        if pipe.now >= deadline || !pipe.step().map_err(|e| err("step", e))? {
            break;
        }
        let sender = if scenario.upload {
            &pipe.client
        } else {
            &pipe.server
        };
        watch.sample(&pipe, before, sender.cc_stats().first_slow_start_end);
    }
    let mut r = result(&pipe, scenario, seed, start, handshake, &transfer);
    r.queue_full = watch.total;
    r.queue_full_first_slow_start = watch.first_slow_start;
    Ok(r)
}

fn result(
    pipe: &Pipe,
    scenario: &Scenario,
    seed: u64,
    start: Instant,
    handshake: Option<Duration>,
    transfer: &Transfer,
) -> RunResult {
    let (sender, data_direction) = if scenario.upload {
        (&pipe.client, Direction::ToServer)
    } else {
        (&pipe.server, Direction::ToClient)
    };
    let stats = sender.stats();
    let cc = sender.cc_stats();
    let link = pipe.link_stats(data_direction);
    let since_start = |t: Instant| t.saturating_duration_since(start);
    RunResult {
        seed,
        completed: transfer.done(),
        time: pipe.now - start,
        handshake: handshake.unwrap_or(pipe.now - start),
        received: transfer.received,
        sent: stats.sent as u64,
        lost: stats.lost as u64,
        retrans: stats.retrans as u64,
        retrans_bytes: stats.stream_retrans_bytes,
        spurious_lost: stats.spurious_lost as u64,
        pto: stats.pto_count as u64,
        lost_in_first_slow_start: stats.lost_in_first_slow_start as u64,
        slow_start_loss_exits: cc.slow_start_loss_exits,
        slow_start_delay_exits: cc.slow_start_delay_exits,
        first_slow_start_exit: cc.first_slow_start_exit.map(since_start),
        first_slow_start_exit_cwnd: cc.first_slow_start_exit_cwnd,
        first_slow_start_end: cc.first_slow_start_end.map(since_start),
        dropped_queue: link.dropped_queue,
        dropped_random: link.dropped_random,
        queue_full: Duration::ZERO,
        queue_full_first_slow_start: Duration::ZERO,
        dropped_mtu: link.dropped_mtu,
        pmtu: sender.max_send_udp_payload_size(),
        pmtu_probes: (
            sender.pmtud_stats().probes_sent,
            sender.pmtud_stats().probes_lost,
        ),
        black_holes: sender.pmtud_stats().black_holes,
        ecn_ect0_sent: stats.ecn_ect0_sent as u64,
        ce_marked: link.ce_marked,
        ecn_ce_congestion_events: stats.ecn_ce_congestion_events as u64,
    }
}
