//! The command line (clap, derive): parsing flags into a [`Scenario`] and what to do with it.
//!
//! Usage errors (unknown flag, bad value, flags that exclude each other) are clap errors naming
//! the flag, which `main` prints on stderr with exit status 2; `--help` and `--version` go to
//! the output with status 0. A repeated flag takes its last value.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::error::ErrorKind;
use clap::{parser::ValueSource, ArgMatches, Args, CommandFactory, FromArgMatches, Parser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use quiche::{CongestionControlAlgorithm, HystartVariant, SlowStartStrategy};

use crate::h3exp;
use crate::matrix::{algorithms, matrix, LOSS_RATES, SEEDS};
use crate::report;
use crate::scenario::Scenario;
use crate::share;
use crate::sim::{run_traced, Trace};
use crate::summary::{default_threads, run_seeds, Summary};
use crate::units::{parse_duration, parse_probability, parse_rate, parse_size, Queue};

/// The congestion-control algorithms `--cc` accepts, as `CongestionControlAlgorithm`'s
/// `FromStr` names them: a new algorithm is one more name here.
pub const CC_NAMES: &[&str] = &["reno", "cubic", "bbr"];

/// The slow-start strategies `--slow-start` accepts (`SlowStartStrategy`'s `FromStr` names).
pub const SLOW_START_NAMES: &[&str] = &["standard", "hystart", "search"];

/// The usage lines of `--help`.
const USAGE_LINES: &str = "netsim [options]
       netsim --matrix [shallow] [options]
       netsim --experiment upload|multiplex [--size SIZE] [--loss P] [--runs K] [--seed S]";

/// What the program does (`--help`'s first paragraph).
const ABOUT: &str = "Simulates a transfer between a quiche client and server over a modelled \
bottleneck on virtual time and prints completion time, goodput, packets sent/lost/retransmitted \
and how slow start ended. Deterministic: the same options and seed give the same result.";

/// The end of `--help`: units and exit status.
const AFTER_HELP: &str = "\
Sizes take B, kB, MB, GB (powers of 1000) or KiB, MiB, GiB; rates bps, kbps, Mbps, Gbps; times \
ns, us, ms, s (a bare number is ms); probabilities 0.01 or 1%.
Exit status: 0 when every transfer completed, 1 when one did not finish within --time-limit, \
2 on bad options or a failed run.";

/// `--help`'s layout: usage first, as the hand-written help had it.
const HELP_TEMPLATE: &str = "\
{usage-heading} {usage}

{about-with-newline}
{all-args}{after-help}";

/// The command line as clap reads it, before the checks that span several flags.
#[derive(Parser, Debug)]
#[command(
    name = "netsim",
    version,
    about = ABOUT,
    override_usage = USAGE_LINES,
    help_template = HELP_TEMPLATE,
    after_help = AFTER_HELP,
    args_override_self = true
)]
struct Cli {
    #[command(flatten)]
    path: PathArgs,
    #[command(flatten)]
    transfer: TransferArgs,
    #[command(flatten)]
    cc: CcArgs,
    #[command(flatten)]
    runs: RunArgs,
}

/// The modelled path.
#[derive(Args, Debug)]
#[command(next_help_heading = "Path")]
struct PathArgs {
    /// Bytes to transfer [default: 8MB; 100MB with --experiment upload]
    #[arg(long, value_name = "SIZE", value_parser = parse_positive_size)]
    size: Option<u64>,
    /// Bottleneck rate, both directions [default: 5Mbps]
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate: Option<u64>,
    /// Base round-trip time, split evenly between directions [default: 60ms]
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    rtt: Option<Duration>,
    /// One-way delay client -> server (overrides --rtt's half)
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    delay_up: Option<Duration>,
    /// One-way delay server -> client (overrides --rtt's half)
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    delay_down: Option<Duration>,
    /// Drop-tail queue per direction: NNbdp, a size, or unlimited [default: 1.2MB, 1000
    /// datagrams, like tc-netem's default queue]
    #[arg(long, value_name = "Q", value_parser = Queue::parse)]
    queue: Option<Queue>,
    /// Random loss in both directions, 0.01 or 1% [default: 0]
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    loss: Option<f64>,
    /// Random loss client -> server (overrides --loss)
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    loss_up: Option<f64>,
    /// Random loss server -> client (overrides --loss)
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    loss_down: Option<f64>,
    /// Probability that a datagram is held back by --reorder-delay [default: 0]
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    reorder: Option<f64>,
    /// How long a reordered datagram is held back [default: 5ms]
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    reorder_delay: Option<Duration>,
    /// Link MTU in IP bytes, both directions; larger datagrams vanish [default: unlimited]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1228..))]
    mtu: Option<u16>,
    /// Black hole: the link MTU drops to --blackhole-mtu at this time into the run
    #[arg(long, value_name = "TIME", value_parser = parse_duration, requires = "blackhole_mtu")]
    blackhole_at: Option<Duration>,
    /// The link MTU after --blackhole-at, in IP bytes
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1228..), requires = "blackhole_at")]
    blackhole_mtu: Option<u16>,
    /// Largest UDP payload the endpoints send, what path MTU discovery searches up to
    /// [default: 1200]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1200..))]
    max_payload: Option<u16>,
    /// Turn path MTU discovery off (datagrams of --max-payload from the start)
    #[arg(long)]
    no_pmtud: bool,
    /// The endpoints use ECN (RFC 9000 §13.4): they mark ECT(0) and take CE as congestion; the
    /// bottleneck marks CE above --ce-threshold [default: off]
    #[arg(long)]
    ecn: bool,
    /// With an AQM in front of each bottleneck: ECN-capable datagrams that find more than this
    /// queued are marked CE: NNbdp or a size [default with --ecn: 1bdp, capped at half the
    /// queue]
    #[arg(long, value_name = "Q", value_parser = Queue::parse)]
    ce_threshold: Option<Queue>,
    /// Largest random extra one-way delay per datagram, both directions (uniform, order kept)
    /// [default: 0]
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    jitter: Option<Duration>,
}

/// The transfer and the receiver's flow control.
#[derive(Args, Debug)]
#[command(next_help_heading = "Transfer")]
struct TransferArgs {
    /// The client sends (default: the client downloads from the server)
    #[arg(long)]
    upload: bool,
    /// Initial connection flow-control window [default: 10MB]
    #[arg(long, value_name = "N", value_parser = parse_size)]
    max_data: Option<u64>,
    /// Initial stream flow-control window [default: 1MB]
    #[arg(long, value_name = "N", value_parser = parse_size)]
    max_stream_data: Option<u64>,
    /// Auto-tuning ceiling of the connection window [default: the library's]
    #[arg(long, value_name = "N", value_parser = parse_size)]
    max_window: Option<u64>,
    /// Auto-tuning ceiling of a stream window [default: the library's]
    #[arg(long, value_name = "N", value_parser = parse_size)]
    max_stream_window: Option<u64>,
}

/// The sender's congestion control.
#[derive(Args, Debug)]
#[command(next_help_heading = "Congestion control (the sender's)")]
struct CcArgs {
    /// Algorithm [default: cubic]
    #[arg(long, value_name = "NAME", ignore_case = true, value_parser = cc_parser())]
    cc: Option<CongestionControlAlgorithm>,
    /// Standard slow start instead of HyStart++ (the later of this and --slow-start counts)
    #[arg(long)]
    no_hystart: bool,
    /// How slow start ends [default: the library's]
    #[arg(long, value_name = "NAME", ignore_case = true, value_parser = slow_start_parser())]
    slow_start: Option<SlowStartStrategy>,
    /// RFC 9406 Conservative Slow Start or the drafts' Limited Slow Start [default: css]
    #[arg(long, value_name = "NAME", value_parser = hystart_variant_parser())]
    hystart_variant: Option<HystartVariant>,
    /// Initial window in packets [default: 10]
    #[arg(long, value_name = "N", value_parser = parse_iw)]
    iw: Option<usize>,
    /// Send bursts instead of pacing
    #[arg(long)]
    no_pacing: bool,
    /// BBR departure: the max-bw filter covers N ProbeBW cycles [default: the draft's 2]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=8))]
    bbr_max_bw_cycles: Option<u8>,
    /// BBR departure: cwnd gain in ProbeBW DOWN/CRUISE/REFILL [default: the draft's 2]
    #[arg(long, value_name = "GAIN", value_parser = parse_bbr_gain)]
    bbr_cwnd_gain: Option<u16>,
    /// BBR departure: ProbeBW_DOWN ends on the BDP of the bounded bw, not max_bw
    #[arg(long)]
    bbr_cruise_on_bounded_bw: bool,
    /// BBR departure: RTT samples without a queue postpone ProbeRTT
    #[arg(long)]
    bbr_skip_probe_rtt: bool,
    /// Both endpoints offer the ACK frequency extension (on) or not (off) [default: the
    /// library's]
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    ack_frequency: Option<bool>,
}

/// How many runs, and what else to do with them.
#[derive(Args, Debug)]
#[command(next_help_heading = "Runs")]
struct RunArgs {
    /// K runs with seeds S, S+1, ...: prints min/median/max [default: 1; 20 with --matrix, 10
    /// pages with --experiment multiplex]
    #[arg(long, value_name = "K", value_parser = parse_count)]
    runs: Option<u64>,
    /// First seed
    #[arg(long, value_name = "S", value_parser = parse_count, default_value_t = 1)]
    seed: u64,
    /// Runs in parallel [default: the machine's cores]
    #[arg(long, value_name = "N", value_parser = parse_count)]
    threads: Option<u64>,
    /// Give up on a transfer after this much virtual time [default: 600s]
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    time_limit: Option<Duration>,
    /// Write a qlog file per endpoint and run into DIR
    #[arg(long, value_name = "DIR")]
    qlog_dir: Option<PathBuf>,
    /// With --runs, also print each run
    #[arg(long, short = 'v')]
    verbose: bool,
    /// Print the sender's controller state at most every TIME and at every state change or
    /// loss (one run only)
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    trace: Option<Duration>,
    /// The experiment: loss 0,1,2,5,8 % x {reno, reno+hystart, cubic,
    /// cubic+hystart}, on the path given by the other options. `--matrix shallow`: queues of
    /// 0.5, 1, 2, 32 BDP x 5, 20, 100 Mbps x 20, 60, 200 ms, every slow-start strategy with
    /// Reno and CUBIC, one run each
    #[arg(long, value_name = "shallow")]
    matrix: Option<Option<MatrixKind>>,
    /// One of the HTTP/3 experiments, which fix the path themselves (the congestion-control
    /// flags apply)
    #[arg(long, value_name = "NAME")]
    experiment: Option<Experiment>,
}

/// The other matrices of `--matrix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum MatrixKind {
    /// The shallow-buffer matrix.
    Shallow,
}

/// What the command line asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The scenario.
    pub scenario: Scenario,
    /// How many runs (seeds).
    pub runs: u64,
    /// The first seed.
    pub seed: u64,
    /// Threads to run on.
    pub threads: usize,
    /// Where to write qlog files.
    pub qlog_dir: Option<PathBuf>,
    /// Print every run too.
    pub verbose: bool,
    /// Run the experiment matrix.
    pub matrix: bool,
    /// `--loss` when given: the multiplexing experiment's loss rate instead of its 1 %.
    pub loss: Option<f64>,
    /// Run one of the HTTP/3 experiments instead.
    pub experiment: Option<Experiment>,
    /// Run the shallow-buffer matrix instead (`--matrix shallow`).
    pub shallow: bool,
    /// Trace the sender's congestion controller at this interval (single runs only).
    pub trace: Option<Duration>,
}

/// The HTTP/3 experiments of `--experiment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// HTTP/3: a 100 MB POST (or --size) over 200 Mbps, 40 ms, 1-BDP queue, server windows
    /// auto-tuned from 64 KiB vs fixed at 16 MiB
    Upload,
    /// HTTP/3: a page of 1 HTML + 80 objects of 5-50 kB over 20 Mbps, 100 ms, 1% loss, 1-BDP
    /// queue: multiplexed on one connection vs one request at a time on 1 and on 6
    /// connections (--runs pages, 10; --loss replaces the 1%)
    Multiplex,
    /// Two flows on one bottleneck (20 Mbps, 40 ms, queues of 1 and 8 BDP), the second
    /// 3 s after the first: BBR+BBR, BBR+CUBIC, CUBIC+BBR, CUBIC+CUBIC (--runs seeds, 20;
    /// -v: the per-second table of the first seed)
    Share,
    /// One flow over 20 Mbps, 40 ms whose rate halves at 10 s (queues of 1 and 8 BDP):
    /// BBR, CUBIC and Reno (with HyStart++), how fast the queue drains (--runs seeds, 20)
    Halving,
}

/// `--cc`'s values: the names of [`CC_NAMES`], parsed by the library.
fn cc_parser() -> impl TypedValueParser<Value = CongestionControlAlgorithm> {
    PossibleValuesParser::new(CC_NAMES).try_map(|name| {
        name.parse::<CongestionControlAlgorithm>()
            .map_err(|_| format!("{name:?}: not a congestion-control algorithm"))
    })
}

/// `--slow-start`'s values ([`SLOW_START_NAMES`]; `hystart++` too).
fn slow_start_parser() -> impl TypedValueParser<Value = SlowStartStrategy> {
    let names = SLOW_START_NAMES.iter().map(|&name| {
        let value = PossibleValue::new(name);
        if name == "hystart" {
            value.alias("hystart++")
        } else {
            value
        }
    });
    PossibleValuesParser::new(names).try_map(|name| {
        name.parse::<SlowStartStrategy>()
            .map_err(|_| format!("{name:?}: not a slow-start strategy"))
    })
}

/// `--hystart-variant`'s values.
/// A cwnd gain between 0.5 and 4, in thousandths.
fn parse_bbr_gain(s: &str) -> Result<u16, String> {
    let g: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(0.5..=4.0).contains(&g) {
        return Err("a gain between 0.5 and 4".into());
    }
    Ok((g * 1000.0).round() as u16)
}

fn hystart_variant_parser() -> impl TypedValueParser<Value = HystartVariant> {
    PossibleValuesParser::new(["css", "lss"]).map(|name| match name.as_str() {
        "lss" => HystartVariant::Lss,
        _ => HystartVariant::Css,
    })
}

fn parse_count(s: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("{s:?}: expected a whole number"))
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s:?}: expected on or off")),
    }
}

fn parse_iw(s: &str) -> Result<usize, String> {
    parse_count(s).and_then(|n| usize::try_from(n).map_err(|e| e.to_string()))
}

fn parse_positive_size(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err(format!("{s:?}: the size must be positive")),
        n => Ok(n),
    }
}

/// Whether `later` was given on the command line after `earlier` (or `earlier` not at all).
fn given_after(m: &ArgMatches, later: &str, earlier: &str) -> bool {
    let index = |id: &str| {
        (m.value_source(id) == Some(ValueSource::CommandLine))
            .then(|| m.index_of(id))
            .flatten()
    };
    match (index(later), index(earlier)) {
        (Some(l), Some(e)) => l > e,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// A usage error for a rule that spans several flags.
fn usage_error(kind: ErrorKind, msg: &str) -> clap::Error {
    Cli::command().error(kind, msg)
}

/// Parses the command line (without the program name). `Err` is a usage error, or the
/// `--help`/`--version` text (`ErrorKind::DisplayHelp`/`DisplayVersion`).
pub fn parse(args: &[String]) -> Result<Options, clap::Error> {
    let m = Cli::command()
        .try_get_matches_from(std::iter::once("netsim").chain(args.iter().map(String::as_str)))?;
    let cli = Cli::from_arg_matches(&m)?;
    let (path, transfer, cc, r) = (cli.path, cli.transfer, cli.cc, cli.runs);
    let mut s = Scenario::default();
    s.rate_bps = path.rate.unwrap_or(s.rate_bps);
    if let Some(rtt) = path.rtt {
        s.delay_up = rtt / 2;
        s.delay_down = rtt - rtt / 2;
    }
    s.delay_up = path.delay_up.unwrap_or(s.delay_up);
    s.delay_down = path.delay_down.unwrap_or(s.delay_down);
    if s.rtt() == Duration::ZERO {
        return Err(usage_error(
            ErrorKind::ValueValidation,
            "the round-trip time (--rtt, --delay-up + --delay-down) must be positive",
        ));
    }
    s.queue = path.queue.unwrap_or(s.queue);
    s.loss_up = path.loss_up.or(path.loss).unwrap_or(s.loss_up);
    s.loss_down = path.loss_down.or(path.loss).unwrap_or(s.loss_down);
    s.reorder = path.reorder.unwrap_or(s.reorder);
    s.reorder_delay = path.reorder_delay.unwrap_or(s.reorder_delay);
    s.mtu = path.mtu.map(usize::from).or(s.mtu);
    if let (Some(at), Some(mtu)) = (path.blackhole_at, path.blackhole_mtu) {
        s.mtu_drop = Some((at, usize::from(mtu)));
    }
    s.max_payload = path.max_payload.map_or(s.max_payload, usize::from);
    s.pmtud &= !path.no_pmtud;
    s.ecn = path.ecn;
    s.ce_threshold = match path.ce_threshold {
        Some(q) => q.bytes(s.rate_bps, s.rtt()),
        None if s.ecn => {
            let bdp = s.bdp_bytes() as u64;
            Some(s.queue_bytes().map_or(bdp, |q| bdp.min(q / 2)))
        }
        None => None,
    };
    s.jitter = path.jitter.unwrap_or(s.jitter);

    s.upload |= transfer.upload;
    s.windows.max_data = transfer.max_data.unwrap_or(s.windows.max_data);
    s.windows.max_stream_data = transfer
        .max_stream_data
        .unwrap_or(s.windows.max_stream_data);
    s.windows.max_window = transfer.max_window.or(s.windows.max_window);
    s.windows.max_stream_window = transfer.max_stream_window.or(s.windows.max_stream_window);

    s.cc.algorithm = cc.cc.unwrap_or(s.cc.algorithm);
    if let Some(strategy) = cc.slow_start {
        s.cc.slow_start = strategy;
    }
    // `--slow-start` turns HyStart++'s switch back on unless `--no-hystart` comes after it.
    s.cc.hystart = if cc.no_hystart {
        given_after(&m, "slow_start", "no_hystart")
    } else {
        s.cc.hystart || cc.slow_start.is_some()
    };
    s.cc.hystart_variant = cc.hystart_variant.unwrap_or(s.cc.hystart_variant);
    s.cc.initial_window_packets = cc.iw.unwrap_or(s.cc.initial_window_packets);
    s.cc.pacing &= !cc.no_pacing;
    s.ack_frequency = cc.ack_frequency.or(s.ack_frequency);
    if let Some(n) = cc.bbr_max_bw_cycles {
        s.cc.bbr.max_bw_filter_cycles = n;
    }
    if let Some(g) = cc.bbr_cwnd_gain {
        s.cc.bbr.probe_bw_cwnd_gain = g;
    }
    s.cc.bbr.cruise_on_bounded_bw |= cc.bbr_cruise_on_bounded_bw;
    s.cc.bbr.skip_probe_rtt_without_queue |= cc.bbr_skip_probe_rtt;
    s.time_limit = r.time_limit.unwrap_or(s.time_limit);

    let experiment = r.experiment;
    s.size = match (path.size, experiment) {
        (Some(size), _) => size,
        (None, Some(Experiment::Upload)) => UPLOAD_SIZE,
        (None, _) => s.size,
    };
    let (matrix, shallow) = match r.matrix {
        None => (false, false),
        Some(kind) => (true, kind == Some(MatrixKind::Shallow)),
    };
    let runs = r.runs.map_or(
        match experiment {
            Some(Experiment::Multiplex) => MULTIPLEX_SEEDS,
            Some(Experiment::Share | Experiment::Halving) => SEEDS,
            _ if matrix => SEEDS,
            _ => 1,
        },
        |k| k.max(1),
    );
    if r.trace.is_some() && (runs > 1 || matrix || experiment.is_some()) {
        return Err(usage_error(
            ErrorKind::ArgumentConflict,
            "--trace needs a single run (no --runs, --matrix or --experiment)",
        ));
    }
    if r.qlog_dir.is_some() && (matrix || experiment.is_some()) {
        return Err(usage_error(
            ErrorKind::ArgumentConflict,
            "--qlog-dir is not supported with --matrix or --experiment",
        ));
    }
    Ok(Options {
        scenario: s,
        runs,
        seed: r.seed,
        threads: r
            .threads
            .map_or_else(default_threads, |n| n.max(1) as usize),
        qlog_dir: r.qlog_dir,
        verbose: r.verbose,
        matrix,
        loss: path.loss,
        experiment,
        shallow,
        trace: r.trace,
    })
}

/// Why the command line failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad options: `clap::Error::exit` prints the error and exits with status 2.
    Usage(clap::Error),
    /// A run that could not be set up or whose connection failed.
    Failed(String),
    /// Writing the output failed (for example, the reader of a pipe went away).
    Output(std::io::Error),
}

impl From<clap::Error> for CliError {
    fn from(e: clap::Error) -> Self {
        CliError::Usage(e)
    }
}

impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::Failed(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Output(e)
    }
}

/// A progress bar on stderr for the long modes, drawn only when stderr is a terminal (so that
/// redirected or piped runs print exactly what they did before).
fn progress_bar(total_runs: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total_runs), ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos}/{len} runs, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    Some(bar)
}

/// Runs `f` on all of `items` at once, or, when a progress bar is shown, on chunks of `chunk`
/// items in order (each run is deterministic and independent, so the results are the same),
/// advancing the bar by `runs_per_item` runs per item. Results keep the items' order.
fn in_chunks<T, R>(
    items: &[T],
    chunk: usize,
    runs_per_item: u64,
    mut f: impl FnMut(&[T]) -> Result<Vec<R>, String>,
) -> Result<Vec<R>, String> {
    let Some(bar) = progress_bar(items.len() as u64 * runs_per_item) else {
        return f(items);
    };
    let mut out = Vec::with_capacity(items.len());
    for part in items.chunks(chunk.max(1)) {
        match f(part) {
            Ok(results) => out.extend(results),
            Err(e) => {
                bar.abandon();
                return Err(e);
            }
        }
        bar.inc(part.len() as u64 * runs_per_item);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// Runs the command line, writing to `out`; returns whether every transfer completed.
pub fn main(args: &[String], out: &mut dyn Write) -> Result<bool, CliError> {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            write!(out, "{}", e.render())?;
            return Ok(true);
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(dir) = &o.qlog_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("--qlog-dir {}: {e}", dir.display()))?;
    }
    let seeds: Vec<u64> = (o.seed..o.seed.saturating_add(o.runs)).collect();
    if let Some(experiment) = o.experiment {
        return run_experiment(experiment, &o, &seeds, out);
    }
    if o.shallow {
        let s = &o.scenario;
        writeln!(
            out,
            "shallow-buffer matrix: {} {}, loss 0, seed {}; time, packets lost in the first \
             slow start, time the queue was full in it (+1 RTT)",
            crate::units::fmt_size(s.size as f64),
            if s.upload { "upload" } else { "download" },
            o.seed,
        )?;
        out.flush()?;
        let strategies = crate::shallow::STRATEGIES.len();
        let rows = in_chunks(
            &crate::shallow::cells(),
            o.threads.div_ceil(strategies).max(1) * 2,
            strategies as u64,
            |cells| crate::shallow::matrix(s, cells, o.seed, o.threads),
        )?;
        write!(out, "{}", crate::shallow::report(&rows))?;
        return Ok(rows.iter().all(|r| r.runs.iter().all(|x| x.completed)));
    }
    if o.matrix {
        let s = &o.scenario;
        writeln!(
            out,
            "matrix: {} seeds per cell ({}..={}); loss in both directions",
            seeds.len(),
            o.seed,
            o.seed + o.runs - 1
        )?;
        writeln!(out, "{}", s.describe())?;
        out.flush()?;
        let ccs = algorithms(s.cc);
        let cells: Vec<_> = LOSS_RATES
            .iter()
            .flat_map(|&loss| ccs.map(|cc| (loss, cc)))
            .collect();
        // `matrix` takes loss rates x algorithms: the whole of it in one go, or (with a
        // progress bar) one cell of `--runs` runs at a time, enough to keep the threads busy.
        let rows = in_chunks(&cells, 1, o.runs, |part| {
            if part.len() == cells.len() {
                return matrix(s, &LOSS_RATES, &ccs, &seeds, o.threads);
            }
            let mut rows = Vec::with_capacity(part.len());
            for &(loss, cc) in part {
                rows.extend(matrix(s, &[loss], &[cc], &seeds, o.threads)?);
            }
            Ok(rows)
        })?;
        write!(out, "{}", report::matrix(&rows))?;
        return Ok(rows.iter().all(|r| r.summary.all_completed()));
    }
    writeln!(out, "{}", o.scenario.describe())?;
    let runs = match o.trace {
        Some(interval) => {
            let trace = Trace { interval, out };
            vec![run_traced(
                &o.scenario,
                o.seed,
                o.qlog_dir.as_deref(),
                trace,
            )?]
        }
        None if seeds.len() > 1 => in_chunks(&seeds, o.threads * 4, 1, |seeds| {
            run_seeds(&o.scenario, seeds, o.threads, o.qlog_dir.as_deref())
        })?,
        None => run_seeds(&o.scenario, &seeds, o.threads, o.qlog_dir.as_deref())?,
    };
    if runs.len() == 1 || o.verbose {
        for r in &runs {
            write!(out, "{}", report::run(r, &o.scenario))?;
        }
    }
    let summary = Summary::new(runs);
    if summary.runs.len() > 1 {
        write!(out, "{}", report::summary(&summary, &o.scenario))?;
    }
    Ok(summary.all_completed())
}

/// The upload experiment's default size: 100 MB.
pub const UPLOAD_SIZE: u64 = 100_000_000;
/// Pages (seeds) the multiplexing experiment loads by default.
pub const MULTIPLEX_SEEDS: u64 = 10;

fn run_experiment(
    experiment: Experiment,
    o: &Options,
    seeds: &[u64],
    out: &mut dyn Write,
) -> Result<bool, CliError> {
    match experiment {
        Experiment::Upload => {
            let mut s = h3exp::upload_scenario(o.scenario.size);
            // The congestion-control flags apply (their defaults are the experiment's own).
            s.cc = o.scenario.cc;
            let c = h3exp::upload_experiment(&s, o.seed, o.threads)?;
            write!(out, "{}", h3exp::upload_report(&c))?;
            Ok(c.tuned.completed && c.fixed.completed && c.small.completed)
        }
        Experiment::Multiplex => {
            let mut s = h3exp::multiplex_scenario();
            s.cc = o.scenario.cc;
            if let Some(loss) = o.loss {
                (s.loss_up, s.loss_down) = (loss, loss);
            }
            let rows = h3exp::multiplex_experiment(&s, &h3exp::MODES, seeds, o.threads)?;
            write!(out, "{}", h3exp::multiplex_report(&s, &rows))?;
            Ok(rows.iter().all(|r| r.all_completed()))
        }
        Experiment::Share => {
            let rows = share::share_experiment(
                &share::share_pairs(o.scenario.cc.bbr),
                &share::SHARE_QUEUES,
                seeds,
                o.threads,
            )?;
            write!(out, "{}", share::share_report(&rows))?;
            if o.verbose {
                for row in &rows {
                    if let Some(r) = row.runs.first() {
                        write!(out, "\n{}", share::share_table(r))?;
                    }
                }
            }
            Ok(true)
        }
        Experiment::Halving => {
            let rows = share::halving_experiment(&share::SHARE_QUEUES, seeds, o.threads)?;
            write!(out, "{}", share::halving_report(&rows))?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiche::CongestionControlAlgorithm;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_are_the_reference_path() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.scenario, Scenario::default());
        assert_eq!((o.runs, o.seed, o.matrix), (1, 1, false));
        assert_eq!(parse(&args("--matrix")).unwrap().runs, 20);
        for shallow in ["--matrix shallow", "--matrix=shallow"] {
            let o = parse(&args(shallow)).unwrap();
            assert!(o.matrix && o.shallow, "{shallow}");
        }
        assert!(!parse(&args("--matrix --loss 1%")).unwrap().shallow);
        let o = parse(&args("--no-hystart --slow-start search")).unwrap();
        assert_eq!(o.scenario.cc.strategy(), SlowStartStrategy::Search);
        let o = parse(&args("--slow-start search --no-hystart")).unwrap();
        assert_eq!(o.scenario.cc.strategy(), SlowStartStrategy::Standard);
    }

    #[test]
    fn path_mtu_flags_reach_the_scenario() {
        let o = parse(&args(
            "--mtu 1400 --blackhole-at 2s --blackhole-mtu 1280 --max-payload 1452 --no-pmtud",
        ))
        .unwrap();
        let s = &o.scenario;
        assert_eq!(s.mtu, Some(1400));
        assert_eq!(s.mtu_drop, Some((Duration::from_secs(2), 1280)));
        assert_eq!((s.max_payload, s.pmtud), (1452, false));
        let mtu = s.path_mtu();
        assert_eq!(mtu.at(Duration::from_secs(1)), Some(1400));
        assert_eq!(mtu.at(Duration::from_secs(3)), Some(1280));
        // A black hole needs both its time and its MTU; an MTU below 1228 (1200 + headers)
        // could not carry QUIC at all.
        assert!(parse(&args("--blackhole-at 2s")).is_err());
        assert!(parse(&args("--mtu 1227")).is_err());
        assert!(parse(&args("--max-payload 1199")).is_err());
    }

    #[test]
    fn every_flag_reaches_the_scenario() {
        let o = parse(&args(
            "--size 2MB --rate=260Mbps --rtt 31ms --queue 2bdp --loss 1% --loss-down 0.02 \
             --reorder 0.1 --reorder-delay 3ms --jitter 4ms --cc reno --no-hystart \
             --hystart-variant lss --iw 32 --no-pacing --max-data 1MB --max-stream-data 100kB \
             --max-window 2MB --max-stream-window 1MiB --upload --runs 5 --seed 7 --threads 3 \
             --time-limit 30s --qlog-dir /tmp/q -v",
        ))
        .unwrap();
        let s = &o.scenario;
        assert_eq!(s.size, 2_000_000);
        assert_eq!(s.rate_bps, 260_000_000);
        assert_eq!(s.delay_up, Duration::from_micros(15_500));
        assert_eq!(s.rtt(), Duration::from_millis(31));
        assert_eq!(s.queue, Queue::Bdp(2.0));
        assert_eq!((s.loss_up, s.loss_down), (0.01, 0.02));
        assert_eq!(s.reorder, 0.1);
        assert_eq!(s.reorder_delay, Duration::from_millis(3));
        assert_eq!(s.jitter, Duration::from_millis(4));
        assert_eq!(s.cc.algorithm, CongestionControlAlgorithm::Reno);
        assert!(!s.cc.hystart && !s.cc.pacing);
        assert_eq!(s.cc.hystart_variant, HystartVariant::Lss);
        assert_eq!(s.cc.initial_window_packets, 32);
        assert_eq!(s.windows.max_data, 1_000_000);
        assert_eq!(s.windows.max_stream_data, 100_000);
        assert_eq!(s.windows.max_window, Some(2_000_000));
        assert_eq!(s.windows.max_stream_window, Some(1 << 20));
        assert!(s.upload);
        assert_eq!(s.time_limit, Duration::from_secs(30));
        assert_eq!((o.runs, o.seed, o.threads), (5, 7, 3));
        assert_eq!(o.qlog_dir, Some(PathBuf::from("/tmp/q")));
        assert!(o.verbose);
    }

    #[test]
    fn one_way_delays_override_the_rtt() {
        let o = parse(&args("--delay-up 10ms --rtt 60ms")).unwrap();
        assert_eq!(o.scenario.delay_up, Duration::from_millis(10));
        assert_eq!(o.scenario.delay_down, Duration::from_millis(30));
    }

    #[test]
    fn main_prints_help_and_a_run() {
        let mut out = Vec::new();
        assert!(main(&args("--help"), &mut out).unwrap());
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("Usage: netsim"), "{text}");
        for heading in ["Path:", "Transfer:", "Congestion control", "Runs:"] {
            assert!(text.contains(heading), "{heading}: {text}");
        }
        let mut out = Vec::new();
        assert!(main(&args("--version"), &mut out).unwrap());
        assert!(String::from_utf8(out).unwrap().starts_with("netsim "));
        let mut out = Vec::new();
        let done = main(&args("--size 100kB --runs 3 --loss 1%"), &mut out).unwrap();
        assert!(done);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("download 100.0 kB over 5.00 Mbps"),
            "{text}"
        );
        assert!(text.contains("completion time (s)"), "{text}");
        assert!(text.contains("completed 3/3 (seeds 1..=3)"), "{text}");
        let mut out = Vec::new();
        assert!(matches!(
            main(&args("--cc vegas"), &mut out),
            Err(CliError::Usage(_))
        ));
        assert!(matches!(
            main(&args("--matrix --qlog-dir /tmp/x"), &mut out),
            Err(CliError::Usage(_))
        ));
        assert!(out.is_empty());
    }

    #[test]
    fn a_transfer_that_cannot_finish_is_reported() {
        let mut out = Vec::new();
        let done = main(&args("--size 1MB --time-limit 300ms"), &mut out).unwrap();
        assert!(!done);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("NOT COMPLETED"), "{text}");
    }

    #[test]
    fn experiments_have_their_own_defaults() {
        let o = parse(&args("--experiment upload")).unwrap();
        assert_eq!(o.experiment, Some(Experiment::Upload));
        assert_eq!((o.scenario.size, o.runs), (UPLOAD_SIZE, 1));
        let o = parse(&args("--experiment=upload --size 2MB")).unwrap();
        assert_eq!(o.scenario.size, 2_000_000);
        let o = parse(&args("--experiment multiplex --loss 0.5%")).unwrap();
        assert_eq!(o.experiment, Some(Experiment::Multiplex));
        assert_eq!((o.runs, o.loss), (MULTIPLEX_SEEDS, Some(0.005)));
        assert_eq!(parse(&args("--experiment multiplex")).unwrap().loss, None);
        assert!(parse(&args("--experiment upload --trace 1ms")).is_err());
    }

    #[test]
    fn main_runs_the_experiments() {
        let mut out = Vec::new();
        assert!(main(&args("--experiment upload --size 500kB"), &mut out).unwrap());
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/3 POST of 500.0 kB over 200 Mbps"),
            "{text}"
        );
        assert!(text.contains("auto-tuned / fixed goodput"), "{text}");
        let mut out = Vec::new();
        let done = main(
            &args("--experiment multiplex --runs 1 --loss 0 --seed 4"),
            &mut out,
        )
        .unwrap();
        assert!(done);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("loss 0% both ways"), "{text}");
        for mode in h3exp::MODES {
            assert!(text.contains(&format!("{mode}")), "{text}");
        }
        assert!(matches!(
            main(
                &args("--experiment upload --qlog-dir /tmp/x"),
                &mut Vec::new()
            ),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn bad_input_is_refused() {
        for bad in [
            "--size",
            "--size 0",
            "--rate 0",
            "--rtt 0ms",
            "--cc vegas",
            "--hystart-variant xyz",
            "--slow-start fast",
            "--loss 2",
            "--queue lots",
            "--frobnicate",
            "--runs many",
            "--experiment",
            "--experiment download",
        ] {
            let e = parse(&args(bad)).unwrap_err();
            // Usage errors exit with status 2, as the hand-written parser's did.
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
            let flag = bad.split_whitespace().next().unwrap();
            if flag != "--rtt" {
                assert!(e.to_string().contains(flag), "{bad}: {e}");
            }
        }
        for conflict in [
            "--matrix --qlog-dir /tmp/x",
            "--matrix shallow --qlog-dir /tmp/x",
            "--runs 2 --trace 1ms",
            "--matrix --trace 1ms",
        ] {
            let e = parse(&args(conflict)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ArgumentConflict, "{conflict}: {e}");
        }
    }

    #[test]
    fn value_syntax_and_aliases_are_kept() {
        let o = parse(&args(
            "--cc RENO --slow-start hystart++ --rate 5mbit/s --rtt 0.06s --queue unlimited \
             --verbose --loss-up 0.5%",
        ))
        .unwrap();
        let s = &o.scenario;
        assert_eq!(s.cc.algorithm, CongestionControlAlgorithm::Reno);
        assert_eq!(s.cc.strategy(), SlowStartStrategy::HyStartPlusPlus);
        assert_eq!(
            (s.rate_bps, s.rtt()),
            (5_000_000, Duration::from_millis(60))
        );
        assert_eq!(s.queue, Queue::Unlimited);
        assert_eq!((s.loss_up, s.loss_down), (0.005, 0.0));
        assert!(o.verbose);
        // The last of a repeated flag counts.
        let o = parse(&args("--seed 3 --seed 5 --size 1MB --size=2MB")).unwrap();
        assert_eq!((o.seed, o.scenario.size), (5, 2_000_000));
        // `--matrix`'s optional value is only `shallow`.
        assert!(parse(&args("--matrix deep")).is_err());
        let o = parse(&args("--matrix --runs 3")).unwrap();
        assert!(o.matrix && !o.shallow && o.runs == 3);
        // Every --cc name reaches the library's parser.
        for name in CC_NAMES {
            assert!(parse(&args(&format!("--cc {name}"))).is_ok(), "{name}");
        }
        for name in SLOW_START_NAMES {
            let o = parse(&args(&format!("--slow-start {name}"))).unwrap();
            assert_eq!(o.scenario.cc.strategy().as_str(), *name);
        }
    }

    #[test]
    fn matrix_prints_every_cell() {
        let mut out = Vec::new();
        let done = main(&args("--matrix --size 20kB --runs 1 --seed 2"), &mut out).unwrap();
        assert!(done);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("matrix: 1 seeds per cell (2..=2)"),
            "{text}"
        );
        let cells = text
            .lines()
            .filter(|l| l.trim_end().ends_with("1/1"))
            .count();
        assert_eq!(cells, LOSS_RATES.len() * 4, "{text}");
    }

    #[test]
    fn chunks_keep_the_order() {
        // Without a terminal (the tests' stderr is captured or piped) the work is one call.
        let items: Vec<u64> = (0..10).collect();
        let mut calls = 0;
        let out = in_chunks(&items, 3, 1, |part| {
            calls += 1;
            Ok(part.iter().map(|x| x * 2).collect())
        })
        .unwrap();
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(calls == 1 || (calls == 4 && std::io::stderr().is_terminal()));
        assert!(in_chunks(&items, 3, 1, |_| Err::<Vec<u64>, _>("no".to_string())).is_err());
    }
}
