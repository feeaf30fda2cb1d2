//! The library's own qlog of a lossy transfer through the in-memory pipe, read back by
//! qlog-plot: the counts and final values must match what the connection reports.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use quiche::testing::{LinkConfig, Pipe};
use quiche::{Config, CongestionControlAlgorithm};

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn config(server: bool) -> Config {
    let certs = format!("{}/../../quiche/tests/certs", env!("CARGO_MANIFEST_DIR"));
    let mut c = Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(16 << 20);
    c.set_initial_max_stream_data_bidi_local(16 << 20);
    c.set_initial_max_stream_data_bidi_remote(16 << 20);
    c.set_initial_max_streams_bidi(10);
    c.set_cc_algorithm(CongestionControlAlgorithm::CUBIC);
    if server {
        c.load_cert_chain_from_pem_file(&format!("{certs}/cert.crt"))
            .unwrap();
        c.load_priv_key_from_pem_file(&format!("{certs}/cert.key"))
            .unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

#[test]
fn summary_matches_the_connection() {
    let link = LinkConfig {
        delay: Duration::from_millis(20),
        rate_bps: Some(20_000_000),
        queue_bytes: Some(100_000),
        loss: 0.01,
        ..LinkConfig::default()
    };
    let mut pipe =
        Pipe::with_links(&mut config(false), &mut config(true), link.clone(), link, 3).unwrap();
    let log = SharedBuf::default();
    let mut buf = vec![0u8; 65536];
    // Give the server the virtual time before the trace starts (see the demo example).
    let _ = pipe.server.send_at(&mut buf, pipe.now);
    pipe.server
        .set_qlog(Box::new(log.clone()), "t".into(), "lossy".into());
    pipe.handshake().unwrap();
    pipe.client.stream_send(0, b"GET /\r\n", true).unwrap();

    let data = vec![1u8; 2_000_000];
    let (mut sent, mut received, mut asked) = (0, 0, false);
    let deadline = pipe.now + Duration::from_secs(60);
    while received < data.len() {
        assert!(pipe.now < deadline, "transfer stalled at {received}");
        while let Ok((_, fin)) = pipe.server.stream_recv(0, &mut buf) {
            asked |= fin;
        }
        if asked && sent < data.len() {
            if let Ok(n) = pipe.server.stream_send(0, &data[sent..], true) {
                sent += n;
            }
        }
        while let Ok((n, _)) = pipe.client.stream_recv(0, &mut buf) {
            received += n;
        }
        pipe.step().unwrap();
    }
    pipe.run_until(Duration::from_secs(10), |p| {
        p.server.path_stats().bytes_in_flight == 0
    })
    .unwrap();

    let bytes = log.0.lock().unwrap().clone();
    let trace = qlog_plot::sqlog::parse(&bytes).unwrap();
    assert_eq!(trace.skipped, 0);
    assert_eq!(trace.header.qlog_version, "0.3");
    assert_eq!(trace.header.vantage, "server");
    let a = qlog_plot::Analysis::new(&trace);
    let stats = pipe.server.stats();
    let path = pipe.server.path_stats();
    let s = &a.summary;
    assert_eq!(s.packets_sent, stats.sent as u64);
    assert_eq!(s.packets_received, stats.recv as u64);
    assert_eq!(s.packets_lost, stats.lost as u64);
    assert!(s.packets_lost > 0, "the link loses 1%");
    assert_eq!(s.final_cwnd, Some(path.cwnd as f64));
    assert_eq!(a.bytes_in_flight.last(), Some(0.0));
    let srtt = path.rtt.as_secs_f64() * 1000.0;
    assert!((s.final_smoothed_rtt.unwrap() - srtt).abs() < 0.01);
    // The path's RTT is at least the 40 ms of propagation delay.
    assert!(s.min_rtt.unwrap() >= 40.0);
    let exit = s.slow_start_exit.as_ref().expect("slow start ended");
    assert!(exit.time > 0.0 && exit.time <= a.end);
    assert!(s.max_cwnd.unwrap() >= s.final_cwnd.unwrap());

    // Both pictures of a real trace are valid.
    let opts = qlog_plot::Options {
        detail_until: Some(exit.time * 2.0),
    };
    let png = qlog_plot::render_png(&a, 800, 400, &opts).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    assert_eq!(&png[16..24], &[0, 0, 3, 32, 0, 0, 1, 144], "800 x 400");
    let svg = qlog_plot::render_svg(&a, 800, 400, &opts).unwrap();
    // The cwnd in both panels and in the legend.
    assert_eq!(svg.matches("stroke=\"#1F77B4\"").count(), 3);
    // One cross (two lines) per lost packet's pixel column, at least one in each panel.
    assert!(svg.matches("stroke=\"#D62728\"").count() >= 2 * 3);
    assert!(svg.trim_end().ends_with("</svg>"));
}
