//! The HTTP/3 experiments: a large upload with auto-tuned receive windows against a large fixed
//! window (HTTP/2's upload problem), and a page of many small objects over one multiplexed
//! connection against one-at-a-time fetching on one connection and on six (the SPDY
//! experiment). Both run `quiche::h3` over the shared-bottleneck simulator [`crate::net`].

use std::time::Duration;

use quiche::testing::Rng;

use crate::http::{config, Client, Server};
use crate::net::{LinkModel, Net};
use crate::scenario::{Scenario, Windows};
use crate::summary::{parallel_map, Stat};
use crate::units::{fmt_duration, fmt_rate, fmt_size, Queue};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn links(s: &Scenario) -> (LinkModel, LinkModel) {
    let queue_bytes = s.queue_bytes();
    let link = |delay, loss| LinkModel {
        delay,
        rate_bps: s.rate_bps,
        queue_bytes,
        loss,
        rate_change: None,
    };
    (link(s.delay_up, s.loss_up), link(s.delay_down, s.loss_down))
}

fn conn_err(net: &Net) -> Option<String> {
    net.pairs.iter().enumerate().find_map(|(i, p)| {
        let e = p
            .client
            .peer_error()
            .or(p.client.local_error())
            .or(p.server.local_error())?;
        Some(format!("connection {i} closed: {e:?}"))
    })
}

// ---------------------------------------------------------------------------------------------
// Uploads.

/// The upload path of the experiment: `size` bytes POSTed over 200 Mbit/s with a 40 ms RTT
/// and a one-BDP (1 MB) drop-tail queue, no random loss, the library's default congestion
/// control (CUBIC with HyStart++).
pub fn upload_scenario(size: u64) -> Scenario {
    Scenario {
        size,
        upload: true,
        rate_bps: 200_000_000,
        delay_up: Duration::from_millis(20),
        delay_down: Duration::from_millis(20),
        queue: Queue::Bdp(1.0),
        time_limit: Duration::from_secs(600),
        ..Scenario::default()
    }
}

/// The server's receive windows start at 64 KiB (connection and stream) and auto-tune up to
/// the library's default ceilings (24 MiB and 16 MiB).
pub fn tuned_windows() -> Windows {
    Windows {
        max_data: 64 * KIB,
        max_stream_data: 64 * KIB,
        max_window: None,
        max_stream_window: None,
    }
}

/// A fixed 16 MiB stream window (ceiling = initial: no auto-tuning) under a fixed 24 MiB
/// connection window, so that the stream window is the one that binds.
pub fn fixed_windows() -> Windows {
    Windows {
        max_data: 24 * MIB,
        max_stream_data: 16 * MIB,
        max_window: Some(24 * MIB),
        max_stream_window: Some(16 * MIB),
    }
}

/// A fixed 64 KiB window (connection and stream, no auto-tuning): the HTTP/2 upload problem,
/// one window per round trip whatever the path could carry.
pub fn small_fixed_windows() -> Windows {
    Windows {
        max_data: 64 * KIB,
        max_stream_data: 64 * KIB,
        max_window: Some(64 * KIB),
        max_stream_window: Some(64 * KIB),
    }
}

/// The outcome of one upload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UploadResult {
    /// Whether the server read the whole body within the time limit.
    pub completed: bool,
    /// From the client's first datagram until the server had read the body and its end.
    pub time: Duration,
    /// Body bytes the server read.
    pub received: u64,
    /// Packets the client sent.
    pub sent: u64,
    /// Packets the client declared lost.
    pub lost: u64,
}

impl UploadResult {
    /// Body bits per second over the whole run, handshake included.
    pub fn goodput_bps(&self) -> f64 {
        self.received as f64 * 8.0 / self.time.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// POSTs `s.size` bytes with the server's receive windows set to `server_windows` (the
/// client keeps the quiche-client defaults).
pub fn upload(s: &Scenario, server_windows: Windows, seed: u64) -> Result<UploadResult, String> {
    let mut client_config = config(s, Windows::default(), false)?;
    let mut server_config = config(s, server_windows, true)?;
    let (up, down) = links(s);
    let mut net = Net::new(up, down, seed);
    net.connect(&mut client_config, &mut server_config)
        .map_err(|e| format!("connect: {e:?}"))?;
    let (mut client, mut server) = (Client::default(), Server::default());
    let mut posted = false;
    let mut done = Vec::new();
    loop {
        let pair = &mut net.pairs[0];
        server.poll(&mut pair.server)?;
        client.poll(&mut pair.client, &mut done)?;
        if !posted && client.ready() {
            client.post(&mut pair.client, 0, s.size)?;
            posted = true;
        }
        if !server.finished_uploads.is_empty() {
            break;
        }
        if let Some(e) = conn_err(&net) {
            return Err(e);
        }
        if net.elapsed() >= s.time_limit || !net.step().map_err(|e| format!("step: {e:?}"))? {
            break;
        }
    }
    let stats = net.pairs[0].client.stats();
    Ok(UploadResult {
        completed: server.finished_uploads.first() == Some(&s.size),
        time: net.elapsed(),
        received: server.finished_uploads.first().copied().unwrap_or(0),
        sent: stats.sent as u64,
        lost: stats.lost as u64,
    })
}

/// The upload experiment: the same POST with auto-tuned windows, a large fixed one and a small
/// fixed one.
#[derive(Clone, Debug)]
pub struct UploadComparison {
    /// The path and size.
    pub scenario: Scenario,
    /// With windows starting at 64 KiB and auto-tuned.
    pub tuned: UploadResult,
    /// With a fixed 16 MiB stream window.
    pub fixed: UploadResult,
    /// With a fixed 64 KiB window, no auto-tuning.
    pub small: UploadResult,
}

impl UploadComparison {
    /// Auto-tuned goodput as a fraction of the fixed window's.
    pub fn ratio(&self) -> f64 {
        self.tuned.goodput_bps() / self.fixed.goodput_bps().max(f64::MIN_POSITIVE)
    }
}

/// Runs the uploads of `s` with the three sets of windows (in parallel when `threads` > 1).
pub fn upload_experiment(
    s: &Scenario,
    seed: u64,
    threads: usize,
) -> Result<UploadComparison, String> {
    let windows = [tuned_windows(), fixed_windows(), small_fixed_windows()];
    let mut runs = parallel_map(&windows, threads, |w| upload(s, *w, seed)).into_iter();
    let mut next = || {
        runs.next()
            .unwrap_or_else(|| Err("a run is missing".to_string()))
    };
    let tuned = next()?;
    let fixed = next()?;
    let small = next()?;
    Ok(UploadComparison {
        scenario: s.clone(),
        tuned,
        fixed,
        small,
    })
}

/// The upload experiment as a table.
pub fn upload_report(c: &UploadComparison) -> String {
    let s = &c.scenario;
    let mut out = format!(
        "HTTP/3 POST of {} over {}, RTT {}, queue {}, loss 0%; {}\n",
        fmt_size(s.size as f64),
        fmt_rate(s.rate_bps as f64),
        fmt_duration(s.rtt()),
        fmt_size(s.queue_bytes().unwrap_or(0) as f64),
        s.cc,
    );
    out += "server receive windows                         time s       Mbps   sent   lost\n";
    for (label, r) in [
        ("64 KiB, auto-tuned (ceilings 16/24 MiB)", &c.tuned),
        ("16 MiB stream / 24 MiB connection, fixed", &c.fixed),
        ("64 KiB, fixed (no auto-tuning)", &c.small),
    ] {
        out += &format!(
            "{label:<44} {:>9.3} {:>10.2} {:>6} {:>6}{}\n",
            r.time.as_secs_f64(),
            r.goodput_bps() / 1e6,
            r.sent,
            r.lost,
            if r.completed { "" } else { "  NOT COMPLETED" },
        );
    }
    out += &format!("auto-tuned / fixed goodput: {:.3}\n", c.ratio());
    out
}

// ---------------------------------------------------------------------------------------------
// Multiplexing.

/// The page's objects: the HTML first, then this many objects.
pub const PAGE_OBJECTS: usize = 80;
/// Sizes of the HTML and of the objects are uniform in this range (bytes).
pub const OBJECT_SIZES: std::ops::RangeInclusive<u64> = 5_000..=50_000;

/// The page of `seed`: the HTML's size, then the 80 objects' (5-50 kB each).
pub fn page(seed: u64) -> Vec<u64> {
    // A stream of its own, so that the sizes do not depend on the link's draws.
    let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let span = OBJECT_SIZES.end() - OBJECT_SIZES.start() + 1;
    (0..=PAGE_OBJECTS)
        .map(|_| OBJECT_SIZES.start() + rng.below(span))
        .collect()
}

/// The multiplexing path: 20 Mbit/s, 100 ms RTT, 1 % random loss both ways, a one-BDP
/// (250 kB) queue.
pub fn multiplex_scenario() -> Scenario {
    Scenario {
        rate_bps: 20_000_000,
        delay_up: Duration::from_millis(50),
        delay_down: Duration::from_millis(50),
        queue: Queue::Bdp(1.0),
        loss_up: 0.01,
        loss_down: 0.01,
        time_limit: Duration::from_secs(300),
        ..Scenario::default()
    }
}

/// How the browser fetches the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// HTTP/3: the HTML, then every object at once on the same connection.
    Multiplexed,
    /// HTTP/1.1 without pipelining on one connection, modelled with HTTP/3 requests issued
    /// one at a time: the next only once the previous response is complete.
    Sequential,
    /// HTTP/1.1 over this many connections: the HTML on the first; once it has arrived the
    /// others open, and each idle connection takes the next object, one at a time.
    Parallel(usize),
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Mode::Multiplexed => f.write_str("HTTP/3, 1 connection, multiplexed"),
            Mode::Sequential => f.write_str("1 connection, one request at a time"),
            Mode::Parallel(n) => write!(f, "{n} connections, one request at a time each"),
        }
    }
}

/// The three ways the experiment compares.
pub const MODES: [Mode; 3] = [Mode::Multiplexed, Mode::Sequential, Mode::Parallel(6)];

/// The outcome of one page load.
#[derive(Clone, Debug, PartialEq)]
pub struct PageResult {
    /// How the page was fetched.
    pub mode: Mode,
    /// The seed of the page's sizes and of the link's randomness.
    pub seed: u64,
    /// Whether every response arrived within the time limit.
    pub completed: bool,
    /// From the first connection's first datagram until the last response was complete.
    pub time: Duration,
    /// Responses complete.
    pub objects: usize,
    /// Body bytes of the page.
    pub bytes: u64,
    /// Connections opened.
    pub connections: usize,
    /// Packets the servers sent.
    pub sent: u64,
    /// Packets the servers declared lost.
    pub lost: u64,
}

/// Loads `sizes` (the HTML first) over `s`'s path as `mode` says.
pub fn load_page(s: &Scenario, sizes: &[u64], mode: Mode, seed: u64) -> Result<PageResult, String> {
    let mut client_config = config(s, Windows::default(), false)?;
    let mut server_config = config(s, Windows::default(), true)?;
    let (up, down) = links(s);
    let mut net = Net::new(up, down, seed);
    let (mut clients, mut servers) = (Vec::new(), Vec::new());
    let mut open = |net: &mut Net, clients: &mut Vec<Client>, servers: &mut Vec<Server>| {
        clients.push(Client::default());
        servers.push(Server::default());
        net.connect(&mut client_config, &mut server_config)
            .map(|_| ())
            .map_err(|e| format!("connect: {e:?}"))
    };
    open(&mut net, &mut clients, &mut servers)?;
    let (mut html_requested, mut html_done) = (false, false);
    let mut next = 1;
    let mut complete = 0;
    let mut done = Vec::new();
    while complete < sizes.len() {
        for (i, pair) in net.pairs.iter_mut().enumerate() {
            servers[i].poll(&mut pair.server)?;
            clients[i].poll(&mut pair.client, &mut done)?;
        }
        for tag in done.drain(..) {
            complete += 1;
            if tag == 0 {
                html_done = true;
                if let Mode::Parallel(n) = mode {
                    for _ in 1..n {
                        open(&mut net, &mut clients, &mut servers)?;
                    }
                }
            }
        }
        if !html_requested && clients[0].ready() {
            clients[0].get(&mut net.pairs[0].client, 0, sizes[0])?;
            html_requested = true;
        }
        if html_done {
            for (client, pair) in clients.iter_mut().zip(net.pairs.iter_mut()) {
                let idle = client.ready() && client.outstanding() == 0;
                while next < sizes.len() && (mode == Mode::Multiplexed || idle) {
                    client.get(&mut pair.client, next, sizes[next])?;
                    next += 1;
                    if mode != Mode::Multiplexed {
                        break;
                    }
                }
            }
        }
        if complete == sizes.len() {
            break;
        }
        if let Some(e) = conn_err(&net) {
            return Err(e);
        }
        if net.elapsed() >= s.time_limit || !net.step().map_err(|e| format!("step: {e:?}"))? {
            break;
        }
    }
    let (sent, lost) = net.pairs.iter().fold((0, 0), |(s, l), p| {
        let st = p.server.stats();
        (s + st.sent as u64, l + st.lost as u64)
    });
    Ok(PageResult {
        mode,
        seed,
        completed: complete == sizes.len(),
        time: net.elapsed(),
        objects: complete,
        bytes: sizes.iter().sum(),
        connections: net.pairs.len(),
        sent,
        lost,
    })
}

/// One mode's runs over every seed.
#[derive(Clone, Debug)]
pub struct ModeRow {
    /// The mode.
    pub mode: Mode,
    /// One run per seed.
    pub runs: Vec<PageResult>,
}

impl ModeRow {
    /// Min/median/max page load time in seconds.
    pub fn time(&self) -> Stat {
        Stat::of(self.runs.iter().map(|r| r.time.as_secs_f64()).collect())
    }

    /// Whether every run loaded the whole page.
    pub fn all_completed(&self) -> bool {
        self.runs.iter().all(|r| r.completed)
    }
}

/// Loads the page of every seed in every mode of `modes` over `s`'s path.
pub fn multiplex_experiment(
    s: &Scenario,
    modes: &[Mode],
    seeds: &[u64],
    threads: usize,
) -> Result<Vec<ModeRow>, String> {
    let jobs: Vec<(Mode, u64)> = modes
        .iter()
        .flat_map(|&m| seeds.iter().map(move |&seed| (m, seed)))
        .collect();
    let mut results = parallel_map(&jobs, threads, |&(mode, seed)| {
        load_page(s, &page(seed), mode, seed)
    })
    .into_iter();
    let mut rows = Vec::new();
    for &mode in modes {
        let runs = results
            .by_ref()
            .take(seeds.len())
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(ModeRow { mode, runs });
    }
    Ok(rows)
}

/// The multiplexing experiment as a table.
pub fn multiplex_report(s: &Scenario, rows: &[ModeRow]) -> String {
    let seeds = rows.first().map_or(0, |r| r.runs.len());
    let bytes = Stat::of(
        rows.first()
            .map(|r| r.runs.iter().map(|x| x.bytes as f64).collect())
            .unwrap_or_default(),
    );
    let mut out = format!(
        "page: 1 HTML + {PAGE_OBJECTS} objects of 5-50 kB (median {} in all) over {}, RTT {}, \
         queue {}, loss {}% both ways; {}; {seeds} seeds\n",
        fmt_size(bytes.median),
        fmt_rate(s.rate_bps as f64),
        fmt_duration(s.rtt()),
        fmt_size(s.queue_bytes().unwrap_or(0) as f64),
        s.loss_down * 100.0,
        s.cc,
    );
    out += "mode                                        load s: median      min      max   \
            lost   done\n";
    for row in rows {
        let t = row.time();
        let lost = Stat::of(row.runs.iter().map(|r| r.lost as f64).collect());
        let done = row.runs.iter().filter(|r| r.completed).count();
        out += &format!(
            "{:<44} {:>14.3} {:>8.3} {:>8.3} {:>6.0} {:>3}/{}\n",
            row.mode.to_string(),
            t.median,
            t.min,
            t.max,
            lost.median,
            done,
            row.runs.len()
        );
    }
    out
}
