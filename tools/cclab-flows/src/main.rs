//! tools/cclab's several-flows helper (driven by `tools/cclab/flows.sh`):
//!
//! ```text
//! cclab-flows analyze --epoch-ms MS --end S --rate-mbit R [--png FILE] [--title T]
//!                     LABEL@START=LOG...
//! cclab-flows tcp-recv --connect ADDR --duration S --log FILE
//! ```
//!
//! `analyze` reads each flow's receiver log (`UNIX_MS BYTES` every 100 ms; START is the flow's
//! start in seconds from the epoch), prints one JSON line with the run's figures (settling time,
//! Jain's index over the last 30 s and over sliding 5-s windows, each flow's share of the last
//! 30 s) and draws the run's picture. `tcp-recv` is the Linux TCP flows' receiver: it asks
//! netlab's `tcpbench.py server` for data and logs what arrives every 100 ms.

// A measuring tool: it reads the clock (the repository's clippy.toml keeps the clock out of the
// library core, not out of tools like this one).
#![allow(clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};

use cclab_flows::metrics::{analyse, FlowTrace, Params};
use cclab_flows::plot;

#[derive(Parser)]
#[command(about = "tools/cclab's several-flows analysis and TCP receiver")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prints one run's figures as a JSON line and draws its picture.
    Analyze {
        /// The run's start (the first flow's), Unix time in milliseconds.
        #[arg(long)]
        epoch_ms: f64,
        /// The run's end, seconds from the epoch.
        #[arg(long)]
        end: f64,
        /// The bottleneck's rate, for the fair-share line.
        #[arg(long)]
        rate_mbit: f64,
        /// Where the picture goes.
        #[arg(long)]
        png: Option<PathBuf>,
        /// The picture's title.
        #[arg(long, default_value = "")]
        title: String,
        /// The flows: LABEL@START=LOGFILE.
        #[arg(required = true)]
        flows: Vec<String>,
    },
    /// Downloads from `tcpbench.py server` for a while, logging bytes every 100 ms.
    TcpRecv {
        /// The server's address.
        #[arg(long)]
        connect: String,
        /// How long to receive, in seconds.
        #[arg(long)]
        duration: f64,
        /// The log (`UNIX_MS BYTES` lines).
        #[arg(long)]
        log: PathBuf,
    },
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn tcp_recv(connect: &str, duration: f64, log: &PathBuf) -> Result<(), String> {
    let mut out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(duration.clamp(0.1, 86_400.0));
    let mut s = TcpStream::connect(connect).map_err(|e| format!("connect {connect}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(|e| e.to_string())?;
    // tcpbench's protocol: ask for more than the run can take (its server's limit is 10 GB),
    // close when the time is up.
    s.write_all(b"GET 9000000000\n")
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut got: u64 = 0;
    let mut next_log = start;
    loop {
        let now = Instant::now();
        if now >= next_log {
            writeln!(out, "{} {got}", unix_ms()).map_err(|e| e.to_string())?;
            next_log += Duration::from_millis(100);
        }
        if now >= end {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "bytes={got} secs={secs:.3} mbps={:.3}",
        got as f64 * 8.0 / secs / 1e6
    );
    Ok(())
}

fn parse_flow(spec: &str, epoch_ms: f64) -> Result<FlowTrace, String> {
    let (head, file) = spec
        .split_once('=')
        .ok_or(format!("{spec}: expected LABEL@START=LOG"))?;
    let (label, start) = head
        .rsplit_once('@')
        .ok_or(format!("{spec}: expected LABEL@START=LOG"))?;
    let start: f64 = start.parse().map_err(|e| format!("{spec}: {e}"))?;
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    Ok(FlowTrace::parse(label, start, &text, epoch_ms))
}

fn main() {
    let r = match Cli::parse().cmd {
        Cmd::TcpRecv {
            connect,
            duration,
            log,
        } => tcp_recv(&connect, duration, &log),
        Cmd::Analyze {
            epoch_ms,
            end,
            rate_mbit,
            png,
            title,
            flows,
        } => (|| {
            let flows = flows
                .iter()
                .map(|s| parse_flow(s, epoch_ms))
                .collect::<Result<Vec<_>, _>>()?;
            let p = Params::default();
            let m = analyse(&flows, end, &p);
            if let Some(path) = png {
                let bytes = plot::png(&flows, end, rate_mbit, &title, &p)?;
                let mut f =
                    std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                f.write_all(&bytes).map_err(|e| e.to_string())?;
            }
            let j = serde_json::json!({
                "settle_s": m.settle,
                "jain_tail": m.jain_tail,
                "jain5_median": m.jain_sliding_median,
                "jain5_min": m.jain_sliding_min,
                "shares": m.shares,
                "tail_mbps": m.tail_bps / 1e6,
                "labels": flows.iter().map(|f| f.label.clone()).collect::<Vec<_>>(),
            });
            println!("{j}");
            Ok(())
        })(),
    };
    if let Err(e) = r {
        eprintln!("cclab-flows: {e}");
        std::process::exit(1);
    }
}
