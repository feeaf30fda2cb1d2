//! The `relay` command line: a UDP relay between QUIC clients and a server that drops,
//! corrupts, delays, blacks out and rebinds (see the library's documentation and
//! tools/interop/README.md). It prints its counters when it stops: at SIGTERM/SIGINT or at the
//! end of `--duration`.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use relay::{Impairment, Options, Relay};

/// A loopback UDP relay between QUIC clients and a server, for loss, corruption and
/// NAT-rebinding tests. Times count from the start of the relay.
#[derive(Parser, Debug)]
#[command(name = "relay", version)]
struct Cli {
    /// Address the clients send to.
    #[arg(long, default_value = "127.0.0.1:4433")]
    listen: SocketAddr,
    /// The server's address.
    #[arg(long)]
    server: SocketAddr,
    /// Drop rate (0..1) in both directions; --drop-c2s/--drop-s2c override it per direction.
    #[arg(long, default_value_t = 0.0)]
    drop: f64,
    /// Drop rate of client-to-server datagrams.
    #[arg(long)]
    drop_c2s: Option<f64>,
    /// Drop rate of server-to-client datagrams.
    #[arg(long)]
    drop_s2c: Option<f64>,
    /// Corruption rate (0..1) in both directions: one byte of the datagram's last 16 (the
    /// last packet's AEAD tag) is flipped, so that packet fails to authenticate.
    #[arg(long, default_value_t = 0.0)]
    corrupt: f64,
    /// Corruption rate of client-to-server datagrams.
    #[arg(long)]
    corrupt_c2s: Option<f64>,
    /// Corruption rate of server-to-client datagrams.
    #[arg(long)]
    corrupt_s2c: Option<f64>,
    /// Drop and corrupt only datagrams that start with a long-header (handshake) packet.
    #[arg(long)]
    long_header_only: bool,
    /// At most this many datagrams in a row dropped or corrupted per direction (0: no cap;
    /// the interop runner's loss and corruption cases use 3).
    #[arg(long, default_value_t = 0)]
    max_burst: u32,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Extra one-way delay in milliseconds, both directions.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Give the upstream sockets a new source port every this many seconds.
    #[arg(long, value_name = "SECS")]
    rebind_port_every: Option<f64>,
    /// Give the upstream sockets a new source port when the bytes received from the server
    /// reach each of these counts.
    #[arg(long, value_name = "BYTES", value_delimiter = ',')]
    rebind_port_at_bytes: Vec<u64>,
    /// Move the upstream sockets to --rebind-addr (and a new port) at this time (seconds).
    #[arg(long, value_name = "SECS")]
    rebind_addr_at: Option<f64>,
    /// Source address towards the server after --rebind-addr-at.
    #[arg(long, default_value = "127.0.0.2")]
    rebind_addr: IpAddr,
    /// Drop everything, both ways, from this time (seconds) ...
    #[arg(long, value_name = "SECS")]
    blackhole_at: Option<f64>,
    /// ... for this long (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    blackhole_for: f64,
    /// Drop the client-to-server datagrams numbered A to B (1-based, over all clients), e.g.
    /// 2-7 for the amplification-limit case.
    #[arg(long, value_name = "A-B", value_parser = parse_range)]
    drop_c2s_packets: Option<(u64, u64)>,
    /// Count the rebinding and black-out times from the first client datagram, not from the
    /// start of the relay.
    #[arg(long)]
    clock_from_first_datagram: bool,
    /// Stop after this many seconds (default: at SIGTERM/SIGINT).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
}

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once('-').ok_or("expected A-B")?;
    let a: u64 = a.parse().map_err(|e| format!("{a}: {e}"))?;
    let b: u64 = b.parse().map_err(|e| format!("{b}: {e}"))?;
    if a == 0 || a > b {
        return Err("expected 1 <= A <= B".into());
    }
    Ok((a, b))
}

fn rate(name: &str, v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("--{name} must be between 0 and 1, not {v}"))
    }
}

fn secs(name: &str, v: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(v).map_err(|_| format!("--{name}: {v} is not a time in seconds"))
}

fn options(cli: &Cli) -> Result<Options, String> {
    let mut o = Options::transparent(cli.listen, cli.server);
    o.c2s = Impairment {
        drop_rate: rate("drop-c2s", cli.drop_c2s.unwrap_or(cli.drop))?,
        corrupt_rate: rate("corrupt-c2s", cli.corrupt_c2s.unwrap_or(cli.corrupt))?,
    };
    o.s2c = Impairment {
        drop_rate: rate("drop-s2c", cli.drop_s2c.unwrap_or(cli.drop))?,
        corrupt_rate: rate("corrupt-s2c", cli.corrupt_s2c.unwrap_or(cli.corrupt))?,
    };
    o.long_header_only = cli.long_header_only;
    o.max_burst = cli.max_burst;
    o.seed = cli.seed;
    o.delay = Duration::from_millis(cli.delay_ms);
    o.rebind_port_every = cli
        .rebind_port_every
        .map(|v| secs("rebind-port-every", v))
        .transpose()?;
    if o.rebind_port_every
        .is_some_and(|d| d < Duration::from_millis(10))
    {
        return Err("--rebind-port-every must be at least 0.01 s".into());
    }
    o.rebind_port_at_s2c_bytes = cli.rebind_port_at_bytes.clone();
    o.rebind_addr_at = cli
        .rebind_addr_at
        .map(|v| secs("rebind-addr-at", v))
        .transpose()?;
    o.rebind_addr = cli.rebind_addr;
    o.blackhole_at = cli
        .blackhole_at
        .map(|v| secs("blackhole-at", v))
        .transpose()?;
    o.blackhole_for = secs("blackhole-for", cli.blackhole_for)?;
    o.drop_c2s_range = cli.drop_c2s_packets;
    o.duration = cli.duration.map(|v| secs("duration", v)).transpose()?;
    o.clock_from_first_datagram = cli.clock_from_first_datagram;
    Ok(o)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let opts = match options(&cli) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("relay: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            eprintln!("relay: cannot handle signal {sig}: {e}");
            return ExitCode::from(2);
        }
    }
    let relay = match Relay::bind(opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("relay: binding {}: {e}", cli.listen);
            return ExitCode::from(2);
        }
    };
    match relay.local_addr() {
        Ok(a) => println!("relay: listening on {a}, server {}", cli.server),
        Err(e) => eprintln!("relay: {e}"),
    }
    match relay.run(&stop) {
        Ok(counters) => {
            print!("{}", counters.report());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("relay: {e}");
            ExitCode::from(1)
        }
    }
}
