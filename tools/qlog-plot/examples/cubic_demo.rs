//! Downloads 24 MB over a 20 Mbit/s, 60 ms RTT bottleneck with a one-BDP drop-tail queue through
//! the library's in-memory pipe, once with CUBIC + HyStart++ and once with CUBIC alone, and writes
//! the server's qlog and its plots for each into a directory.
//!
//! ```text
//! cargo run --release -p qlog-plot --example cubic_demo -- [DIR] [--mb 24] [--detail 1200] [--queue-bdp 1] [--width W --height H]
//! ```
//!
//! The run is deterministic (virtual clock, seeded link), so the pictures in `docs/` are
//! reproducible.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use quiche::testing::{LinkConfig, Pipe};
use quiche::{Config, CongestionControlAlgorithm};

/// Bottleneck rate: 20 Mbit/s.
const RATE_BPS: u64 = 20_000_000;
/// Round-trip propagation delay: 60 ms (30 ms each way).
const ONE_WAY: Duration = Duration::from_millis(30);

fn cert_path(name: &str) -> String {
    format!(
        "{}/../../quiche/tests/certs/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn config(server: bool, hystart: bool) -> Result<Config, quiche::Error> {
    let mut c = Config::new(quiche::PROTOCOL_VERSION)?;
    c.set_application_protos(&[b"hq-interop"])?;
    c.set_max_idle_timeout(30_000);
    // Windows far above the transfer: the congestion controller alone limits the sender.
    c.set_initial_max_data(256 << 20);
    c.set_initial_max_stream_data_bidi_local(256 << 20);
    c.set_initial_max_stream_data_bidi_remote(256 << 20);
    c.set_initial_max_stream_data_uni(256 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_cc_algorithm(CongestionControlAlgorithm::CUBIC);
    c.enable_hystart(hystart);
    if server {
        c.load_cert_chain_from_pem_file(&cert_path("cert.crt"))?;
        c.load_priv_key_from_pem_file(&cert_path("cert.key"))?;
    } else {
        c.verify_peer(false);
    }
    Ok(c)
}

/// Runs one download and returns the path of the server's qlog.
fn run(
    dir: &Path,
    name: &str,
    hystart: bool,
    download: usize,
    queue_bdp: f64,
) -> Result<PathBuf, Box<dyn std::error::Error>> {
    // The bandwidth-delay product: 20 Mbit/s * 60 ms = 150 kB.
    let bdp = (RATE_BPS / 8) as usize * (2 * ONE_WAY.as_millis() as usize) / 1000;
    let queue = (bdp as f64 * queue_bdp) as usize;
    let link = LinkConfig {
        delay: ONE_WAY,
        rate_bps: Some(RATE_BPS),
        queue_bytes: Some(queue),
        ..LinkConfig::default()
    };
    let mut pipe = Pipe::with_links(
        &mut config(false, hystart)?,
        &mut config(true, hystart)?,
        link.clone(),
        link,
        7,
    )?;
    let path = dir.join(format!("{name}.sqlog"));
    let file = BufWriter::new(File::create(&path)?);
    let desc = format!(
        "{} MB download, {} Mbit/s, {} ms RTT, {} B queue, CUBIC{}",
        download / 1_000_000,
        RATE_BPS / 1_000_000,
        2 * ONE_WAY.as_millis(),
        queue,
        if hystart { " + HyStart++" } else { "" }
    );
    // The trace starts at the last time the connection was given; a fresh connection has seen
    // none and would take the wall clock, so tell it the pipe's virtual time first (there is
    // nothing to send yet).
    let mut buf = vec![0u8; 65536];
    let _ = pipe.server.send_at(&mut buf, pipe.now);
    pipe.server.set_qlog(Box::new(file), name.to_string(), desc);

    pipe.handshake()?;
    // The request: stream 0 from the client; the server answers on the same stream.
    pipe.client.stream_send(0, b"GET /8MB\r\n", true)?;
    let data = vec![0x5a_u8; download];
    let mut sent = 0;
    let mut received = 0;
    let mut fin = false;
    let mut request_done = false;
    let deadline = pipe.now + Duration::from_secs(300);
    while !fin {
        if pipe.now > deadline {
            return Err(format!("{name}: download did not finish: {received} B").into());
        }
        // The server drains the request, then writes as much of the response as it may.
        while let Ok((_, f)) = pipe.server.stream_recv(0, &mut buf) {
            request_done |= f;
        }
        if request_done && sent < data.len() {
            match pipe.server.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(quiche::Error::Done) => {}
                Err(e) => return Err(e.into()),
            }
        }
        while let Ok((n, f)) = pipe.client.stream_recv(0, &mut buf) {
            received += n;
            fin |= f;
        }
        if !pipe.step()? {
            break;
        }
    }
    // Let the last acknowledgements reach the server, then close so the trace ends cleanly.
    pipe.run_until(Duration::from_secs(10), |p| {
        p.server.path_stats().bytes_in_flight == 0
    })?;
    pipe.client.close(true, 0, b"done")?;
    pipe.run_until(Duration::from_secs(10), |p| p.server.is_closed())?;
    drop(pipe);
    Ok(path)
}

/// Downloads 24 MB with CUBIC + HyStart++ and with CUBIC alone through the in-memory pipe and
/// writes each server's qlog and its congestion graph into DIR.
#[derive(clap::Parser)]
struct Args {
    /// Where the qlogs and pictures go.
    #[arg(value_name = "DIR", default_value = "qlog-demo")]
    dir: PathBuf,
    /// Download size in MB (10^6 bytes).
    #[arg(long, value_name = "MEGABYTES", default_value_t = 24)]
    mb: usize,
    /// The detail panel's time span in ms (0: none).
    #[arg(long, value_name = "MS", default_value_t = 1200.0)]
    detail: f64,
    /// Bottleneck queue in bandwidth-delay products (150 kB each).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    queue_bdp: f64,
    /// Picture width in pixels.
    #[arg(long, value_name = "W", default_value_t = 1000)]
    width: u32,
    /// Picture height in pixels.
    #[arg(long, value_name = "H", default_value_t = 500)]
    height: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    let Args {
        dir,
        mb: megabytes,
        queue_bdp,
        width,
        height,
        ..
    } = args;
    let opts = qlog_plot::Options {
        detail_until: (args.detail > 0.0).then_some(args.detail),
    };
    std::fs::create_dir_all(&dir)?;
    for (name, hystart) in [("cubic-hystart", true), ("cubic-no-hystart", false)] {
        let qlog = run(&dir, name, hystart, megabytes * 1_000_000, queue_bdp)?;
        let a = qlog_plot::analyse(&std::fs::read(&qlog)?)?;
        let png = dir.join(format!("{name}.png"));
        let svg = dir.join(format!("{name}.svg"));
        std::fs::write(&png, qlog_plot::render_png(&a, width, height, &opts)?)?;
        std::fs::write(&svg, qlog_plot::render_svg(&a, width, height, &opts)?)?;
        println!("== {name}: {}", a.header.description);
        print!("{}", a.summary);
        println!(
            "wrote {} {} {}\n",
            qlog.display(),
            png.display(),
            svg.display()
        );
    }
    Ok(())
}
