//! The command line: parsing flags into a [`Scenario`] and what to do with it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use quiche::HystartVariant;

use crate::h3exp;
use crate::matrix::{algorithms, matrix, LOSS_RATES, SEEDS};
use crate::report;
use crate::scenario::Scenario;
use crate::sim::{run_traced, Trace};
use crate::summary::{default_threads, run_seeds, Summary};
use crate::units::{parse_duration, parse_probability, parse_rate, parse_size, Queue};

/// The help text.
pub const USAGE: &str = "\
Usage: netsim [options]
       netsim --matrix [options]
       netsim --experiment upload|multiplex [--size SIZE] [--loss P] [--runs K] [--seed S]

Simulates a transfer between a quiche client and server over a modelled bottleneck on virtual
time and prints completion time, goodput, packets sent/lost/retransmitted and how slow start
ended. Deterministic: the same options and seed give the same result.

Path:
  --size SIZE              bytes to transfer (8MB; units B, kB, MB, GB, KiB, MiB, GiB)
  --rate RATE              bottleneck rate, both directions (5Mbps; bps, kbps, Mbps, Gbps)
  --rtt TIME               base round-trip time, split evenly between directions (60ms)
  --delay-up TIME          one-way delay client -> server (overrides --rtt's half)
  --delay-down TIME        one-way delay server -> client (overrides --rtt's half)
  --queue Q                drop-tail queue per direction: NNbdp, a size, or unlimited
                           (1.2MB: 1000 datagrams, like tc-netem's default queue)
  --loss P                 random loss in both directions, 0.01 or 1% (0)
  --loss-up P, --loss-down P   random loss in one direction (override --loss)
  --reorder P              probability that a datagram is held back by --reorder-delay (0)
  --reorder-delay TIME     how long a reordered datagram is held back (5ms)
Transfer:
  --upload                 the client sends (default: the client downloads from the server)
  --max-data N, --max-stream-data N      initial flow-control windows (10MB, 1MB)
  --max-window N, --max-stream-window N  auto-tuning ceilings (library defaults)
Congestion control (the sender's):
  --cc reno|cubic|bbr      algorithm (cubic)
  --no-hystart             standard slow start instead of HyStart++
  --hystart-variant css|lss    RFC 9406 Conservative Slow Start or the drafts' Limited Slow Start
  --iw N                   initial window in packets (10)
  --no-pacing              send bursts instead of pacing
Runs:
  --runs K                 K runs with seeds S, S+1, ...: prints min/median/max (1; 20 with --matrix)
  --seed S                 first seed (1)
  --threads N              runs in parallel (the machine's cores)
  --time-limit TIME        give up on a transfer after this much virtual time (600s)
  --qlog-dir DIR           write a qlog file per endpoint and run into DIR
  --verbose                with --runs, also print each run
  --trace TIME             print the sender's controller state at most every TIME and at every
                           state change or loss (one run only)
  --matrix                 the issue's experiment: loss 0,1,2,5,8 % x {reno, reno+hystart,
                           cubic, cubic+hystart}, on the path given by the other options
  --experiment upload      HTTP/3: a 100 MB POST (or --size) over 200 Mbps, 40 ms, 1-BDP
                           queue, server windows auto-tuned from 64 KiB vs fixed at 16 MiB
  --experiment multiplex   HTTP/3: a page of 1 HTML + 80 objects of 5-50 kB over 20 Mbps,
                           100 ms, 1% loss, 1-BDP queue: multiplexed on one connection vs one
                           request at a time on 1 and on 6 connections (--runs pages, 10;
                           --loss replaces the 1%)
                           (both experiments fix the path themselves; --cc and the other
                           congestion-control flags apply)
  --help                   this text
";

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
    /// Print the help text.
    pub help: bool,
    /// Trace the sender's congestion controller at this interval (single runs only).
    pub trace: Option<Duration>,
}

/// The HTTP/3 experiments of `--experiment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experiment {
    /// A large POST with auto-tuned against fixed receive windows.
    Upload,
    /// A page of many objects: multiplexed, sequential, six connections.
    Multiplex,
}

/// Splits `--flag=value` and fetches a flag's value.
struct Flags<'a> {
    args: std::slice::Iter<'a, String>,
    inline: Option<String>,
}

impl Flags<'_> {
    fn next_flag(&mut self) -> Option<String> {
        let arg = self.args.next()?;
        match arg.split_once('=') {
            Some((flag, value)) if arg.starts_with("--") => {
                self.inline = Some(value.to_string());
                Some(flag.to_string())
            }
            _ => {
                self.inline = None;
                Some(arg.clone())
            }
        }
    }

    fn value(&mut self, flag: &str) -> Result<String, String> {
        if let Some(v) = self.inline.take() {
            return Ok(v);
        }
        self.args
            .next()
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    }

    fn parsed<T>(
        &mut self,
        flag: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, String> {
        let v = self.value(flag)?;
        parse(&v).map_err(|e| format!("{flag}: {e}"))
    }
}

fn parse_count(s: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("{s:?}: expected a whole number"))
}

/// Parses the command line (without the program name).
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut s = Scenario::default();
    let (mut rtt, mut delay_up, mut delay_down) = (None, None, None);
    let (mut loss, mut loss_up, mut loss_down) = (None, None, None);
    let mut runs = None;
    let mut size = None;
    let mut o = Options {
        scenario: Scenario::default(),
        runs: 1,
        seed: 1,
        threads: default_threads(),
        qlog_dir: None,
        verbose: false,
        matrix: false,
        experiment: None,
        loss: None,
        help: false,
        trace: None,
    };
    let mut flags = Flags {
        args: args.iter(),
        inline: None,
    };
    while let Some(flag) = flags.next_flag() {
        let f = flag.as_str();
        match f {
            "--size" => size = Some(flags.parsed(f, parse_size)?),
            "--rate" => s.rate_bps = flags.parsed(f, parse_rate)?,
            "--rtt" => rtt = Some(flags.parsed(f, parse_duration)?),
            "--delay-up" => delay_up = Some(flags.parsed(f, parse_duration)?),
            "--delay-down" => delay_down = Some(flags.parsed(f, parse_duration)?),
            "--queue" => s.queue = flags.parsed(f, Queue::parse)?,
            "--loss" => loss = Some(flags.parsed(f, parse_probability)?),
            "--loss-up" => loss_up = Some(flags.parsed(f, parse_probability)?),
            "--loss-down" => loss_down = Some(flags.parsed(f, parse_probability)?),
            "--reorder" => s.reorder = flags.parsed(f, parse_probability)?,
            "--reorder-delay" => s.reorder_delay = flags.parsed(f, parse_duration)?,
            "--upload" => s.upload = true,
            "--max-data" => s.windows.max_data = flags.parsed(f, parse_size)?,
            "--max-stream-data" => s.windows.max_stream_data = flags.parsed(f, parse_size)?,
            "--max-window" => s.windows.max_window = Some(flags.parsed(f, parse_size)?),
            "--max-stream-window" => {
                s.windows.max_stream_window = Some(flags.parsed(f, parse_size)?)
            }
            "--cc" => {
                s.cc.algorithm = flags.parsed(f, |v| {
                    v.parse()
                        .map_err(|_| format!("{v:?}: expected reno, cubic or bbr"))
                })?
            }
            "--no-hystart" => s.cc.hystart = false,
            "--hystart-variant" => {
                s.cc.hystart_variant = flags.parsed(f, |v| match v {
                    "css" => Ok(HystartVariant::Css),
                    "lss" => Ok(HystartVariant::Lss),
                    _ => Err(format!("{v:?}: expected css or lss")),
                })?
            }
            "--iw" => {
                s.cc.initial_window_packets = flags.parsed(f, |v| {
                    parse_count(v).and_then(|n| usize::try_from(n).map_err(|e| e.to_string()))
                })?
            }
            "--no-pacing" => s.cc.pacing = false,
            "--runs" => runs = Some(flags.parsed(f, parse_count)?.max(1)),
            "--seed" => o.seed = flags.parsed(f, parse_count)?,
            "--threads" => o.threads = flags.parsed(f, parse_count)?.max(1) as usize,
            "--time-limit" => s.time_limit = flags.parsed(f, parse_duration)?,
            "--qlog-dir" => o.qlog_dir = Some(PathBuf::from(flags.value(f)?)),
            "--verbose" | "-v" => o.verbose = true,
            "--trace" => o.trace = Some(flags.parsed(f, parse_duration)?),
            "--matrix" => o.matrix = true,
            "--experiment" => {
                o.experiment = Some(flags.parsed(f, |v| match v {
                    "upload" => Ok(Experiment::Upload),
                    "multiplex" => Ok(Experiment::Multiplex),
                    _ => Err(format!("{v:?}: expected upload or multiplex")),
                })?)
            }
            "--help" | "-h" => o.help = true,
            _ => return Err(format!("unknown option {flag:?} (see --help)")),
        }
    }
    if let Some(rtt) = rtt {
        s.delay_up = rtt / 2;
        s.delay_down = rtt - rtt / 2;
    }
    s.delay_up = delay_up.unwrap_or(s.delay_up);
    s.delay_down = delay_down.unwrap_or(s.delay_down);
    if s.rtt() == Duration::ZERO {
        return Err("the round-trip time must be positive".to_string());
    }
    o.loss = loss;
    s.loss_up = loss_up.or(loss).unwrap_or(s.loss_up);
    s.loss_down = loss_down.or(loss).unwrap_or(s.loss_down);
    s.size = match (size, o.experiment) {
        (Some(size), _) => size,
        (None, Some(Experiment::Upload)) => UPLOAD_SIZE,
        (None, _) => s.size,
    };
    if s.size == 0 {
        return Err("--size must be positive".to_string());
    }
    o.runs = runs.unwrap_or(match o.experiment {
        Some(Experiment::Multiplex) => MULTIPLEX_SEEDS,
        _ if o.matrix => SEEDS,
        _ => 1,
    });
    if o.trace.is_some() && (o.runs > 1 || o.matrix || o.experiment.is_some()) {
        return Err("--trace needs a single run".to_string());
    }
    o.scenario = s;
    Ok(o)
}

/// Why the command line failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad options, or a run that could not be set up or whose connection failed.
    Failed(String),
    /// Writing the output failed (for example, the reader of a pipe went away).
    Output(std::io::Error),
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

/// Runs the command line, writing to `out`; returns whether every transfer completed.
pub fn main(args: &[String], out: &mut dyn Write) -> Result<bool, CliError> {
    let o = parse(args)?;
    if o.help {
        write!(out, "{USAGE}")?;
        return Ok(true);
    }
    if let Some(dir) = &o.qlog_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("--qlog-dir {}: {e}", dir.display()))?;
    }
    let seeds: Vec<u64> = (o.seed..o.seed.saturating_add(o.runs)).collect();
    if let Some(experiment) = o.experiment {
        return run_experiment(experiment, &o, &seeds, out);
    }
    if o.matrix {
        if o.qlog_dir.is_some() {
            return Err(CliError::Failed(
                "--qlog-dir is not supported with --matrix".to_string(),
            ));
        }
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
        let rows = matrix(s, &LOSS_RATES, &algorithms(s.cc), &seeds, o.threads)?;
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
    if o.qlog_dir.is_some() {
        return Err(CliError::Failed(
            "--qlog-dir is not supported with --experiment".to_string(),
        ));
    }
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
    }

    #[test]
    fn every_flag_reaches_the_scenario() {
        let o = parse(&args(
            "--size 2MB --rate=260Mbps --rtt 31ms --queue 2bdp --loss 1% --loss-down 0.02 \
             --reorder 0.1 --reorder-delay 3ms --cc reno --no-hystart --hystart-variant lss \
             --iw 32 --no-pacing --max-data 1MB --max-stream-data 100kB --max-window 2MB \
             --max-stream-window 1MiB --upload --runs 5 --seed 7 --threads 3 \
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
        assert!(String::from_utf8_lossy(&out).starts_with("Usage: netsim"));
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
            Err(CliError::Failed(_))
        ));
        assert!(matches!(
            main(&args("--matrix --qlog-dir /tmp/x"), &mut out),
            Err(CliError::Failed(_))
        ));
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
            Err(CliError::Failed(_))
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
            "--loss 2",
            "--queue lots",
            "--frobnicate",
            "--runs many",
            "--experiment",
            "--experiment download",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }
}
