//! 0-RTT accepted and rejected on the pipe: what the server delivers, what the client resends
//! in 1-RTT after a rejection (RFC 9001 §4.6.2, RFC 9002 §6.4) and which limits apply to it
//! (RFC 9000 §7.4.1).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use super::{client_config, server_config};
use crate::testing::{Direction, Pipe, Rng, Verdict};
use crate::{Config, Error, RecvInfo};

/// Deterministic pseudo-random payload.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).bytes(len)
}

/// A session ticket from a first, full handshake between the two configs.
fn ticket(client: &mut Config, server: &mut Config) -> Vec<u8> {
    let mut first = Pipe::new(client, server).unwrap();
    first.handshake().unwrap();
    assert!(!first.client.is_resumed());
    // BoringSSL's ssl_early_data_no_session_offered, on both sides.
    assert_eq!(first.client.early_data_reason(), 5);
    assert_eq!(first.server.early_data_reason(), 5);
    first
        .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    first.client.session().unwrap().to_vec()
}

/// Counts the 0-RTT packets the client sends.
fn count_zero_rtt(pipe: &mut Pipe) -> Rc<Cell<usize>> {
    let count = Rc::new(Cell::new(0));
    let counter = count.clone();
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToServer {
            let mut dgram = d.data.to_vec();
            for pkt in crate::packet::coalesced(&mut dgram, 16).flatten() {
                if crate::packet::HeaderLayout::parse(pkt, 16)
                    .is_ok_and(|h| h.ty == crate::Type::ZeroRTT)
                {
                    counter.set(counter.get() + 1);
                }
            }
        }
        Verdict::Deliver
    }));
    count
}

/// Streams the client writes before the handshake: (stream ID, data). Several packets' worth,
/// so that more than one 0-RTT packet is in flight when the server answers.
fn early_streams() -> Vec<(u64, Vec<u8>)> {
    vec![
        (0, b"GET /index.html\r\n".to_vec()),
        (4, payload(6000, 4)),
        (8, payload(2500, 8)),
    ]
}

/// Resumes `session` on the pipe's client and writes `streams` (each with FIN) while the
/// connection is in early data: the first datagram carries the ClientHello, the data goes in
/// 0-RTT packets.
fn send_early(pipe: &mut Pipe, session: &[u8], streams: &[(u64, Vec<u8>)]) {
    pipe.client.set_session(session).unwrap();
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    assert!(pipe.client.is_in_early_data(), "the client offers 0-RTT");
    for (id, data) in streams {
        assert_eq!(
            pipe.client.stream_send(*id, data, true),
            Ok(data.len()),
            "remembered limits allow the whole stream"
        );
    }
    assert!(pipe.client.is_in_early_data());
    let info = RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
}

/// Runs the pipe until the server has read every stream to its end, checking on the way that
/// nothing is delivered before the handshake completes unless `early_ok`. Returns what was
/// read per stream.
fn read_all(pipe: &mut Pipe, streams: &[(u64, Vec<u8>)], early_ok: bool) -> Vec<Vec<u8>> {
    let mut got: Vec<Vec<u8>> = vec![Vec::new(); streams.len()];
    let mut done = vec![false; streams.len()];
    let mut buf = vec![0u8; 65536];
    let mut early_reads = 0;
    pipe.run_until(Duration::from_secs(10), |p| {
        for (i, (id, _)) in streams.iter().enumerate() {
            while let Ok((n, fin)) = p.server.stream_recv(*id, &mut buf) {
                if !p.server.is_established() {
                    early_reads += 1;
                }
                assert!(!done[i], "nothing after the FIN on stream {id}");
                got[i].extend_from_slice(&buf[..n]);
                done[i] |= fin;
            }
        }
        done.iter().all(|d| *d)
    })
    .unwrap();
    if early_ok {
        assert!(
            early_reads > 0,
            "accepted 0-RTT data is read before the handshake ends"
        );
    } else {
        assert_eq!(
            early_reads, 0,
            "a server that rejected 0-RTT delivers none of it"
        );
    }
    got
}

/// Early-data configs for both sides and a ticket that allows 0-RTT.
fn early_configs() -> (Config, Config, Vec<u8>) {
    let mut client = client_config();
    client.enable_early_data();
    let mut server = server_config();
    server.enable_early_data();
    let session = ticket(&mut client, &mut server);
    (client, server, session)
}

/// What every rejection must look like from the client: it learnt the rejection, nothing was
/// declared lost (the 0-RTT packets' recovery state was discarded, RFC 9002 §6.4, which is no
/// congestion signal) and the window did not shrink.
fn assert_clean_rejection(pipe: &Pipe, initial_cwnd: usize) {
    assert!(!pipe.client.tls.is_early_data_accepted());
    assert!(!pipe.server.tls.is_early_data_accepted());
    let stats = pipe.client.stats();
    assert_eq!(stats.lost, 0, "{stats:?}");
    assert!(pipe.client.path_stats().cwnd >= initial_cwnd);
    assert!(pipe.client.local_error().is_none() && pipe.server.local_error().is_none());
}

#[test]
fn accepted_zero_rtt_data_is_delivered_before_the_handshake_completes() {
    let (mut client, mut server, session) = early_configs();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    let zero_rtt = count_zero_rtt(&mut pipe);
    let streams = early_streams();
    send_early(&mut pipe, &session, &streams);
    // 1-RTT packets are not processed before the handshake completes (RFC 9001 §5.7): what the
    // server reads earlier came in 0-RTT packets.
    let got = read_all(&mut pipe, &streams, true);
    for ((id, want), got) in streams.iter().zip(&got) {
        assert_eq!(got, want, "stream {id}");
    }
    pipe.handshake().unwrap();
    assert!(pipe.client.tls.is_early_data_accepted() && pipe.server.tls.is_early_data_accepted());
    assert!(pipe.client.is_resumed() && pipe.server.is_resumed());
    // ssl_early_data_accepted.
    assert_eq!(pipe.client.early_data_reason(), 2);
    assert_eq!(pipe.server.early_data_reason(), 2);
    assert!(zero_rtt.get() >= 2, "{} 0-RTT packets", zero_rtt.get());
    assert_eq!(
        pipe.client.stats().stream_retrans_bytes,
        0,
        "nothing was sent twice"
    );
}

#[test]
fn rejected_by_a_restarted_server_is_resent_in_one_rtt() {
    let (mut client, _, session) = early_configs();
    // The server restarted: a new config knows nothing of the ticket (full handshake).
    let mut restarted = server_config();
    restarted.enable_early_data();
    let mut pipe = Pipe::new(&mut client, &mut restarted).unwrap();
    let initial_cwnd = pipe.client.path_stats().cwnd;
    let zero_rtt = count_zero_rtt(&mut pipe);
    let streams = early_streams();
    send_early(&mut pipe, &session, &streams);
    let got = read_all(&mut pipe, &streams, false);
    for ((id, want), got) in streams.iter().zip(&got) {
        assert_eq!(got, want, "stream {id} arrives intact, once");
    }
    assert!(zero_rtt.get() >= 2, "{} 0-RTT packets", zero_rtt.get());
    assert!(!pipe.client.is_resumed() && !pipe.server.is_resumed());
    // ssl_early_data_session_not_resumed.
    assert_eq!(pipe.client.early_data_reason(), 6);
    assert_clean_rejection(&pipe, initial_cwnd);
    let total: usize = streams.iter().map(|(_, d)| d.len()).sum();
    assert!(pipe.client.stats().stream_retrans_bytes >= total as u64);
}

#[test]
fn rejected_by_a_reconfigured_server_is_resent_in_one_rtt() {
    let (mut client, mut server, session) = early_configs();
    // The server now prefers another application protocol, which the client also offers. The
    // session resumes, but early data needs the ALPN the ticket was issued under (RFC 8446
    // §4.2.10, RFC 9001 §4.6.2): the server refuses it.
    server
        .set_application_protos(&[b"hq-next", b"hq-interop"])
        .unwrap();
    client
        .set_application_protos(&[b"hq-interop", b"hq-next"])
        .unwrap();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    let initial_cwnd = pipe.client.path_stats().cwnd;
    let zero_rtt = count_zero_rtt(&mut pipe);
    let streams = early_streams();
    send_early(&mut pipe, &session, &streams);
    let got = read_all(&mut pipe, &streams, false);
    for ((id, want), got) in streams.iter().zip(&got) {
        assert_eq!(got, want, "stream {id} arrives intact, once");
    }
    assert!(zero_rtt.get() >= 2);
    assert!(pipe.client.is_resumed() && pipe.server.is_resumed());
    assert_eq!(pipe.client.application_proto(), b"hq-next");
    // ssl_early_data_peer_declined for the client; the server's reason is BoringSSL's
    // ssl_early_data_alpn_mismatch there, rustls does not tell (see `early_data_reason.rs`).
    assert_eq!(pipe.client.early_data_reason(), 4);
    let alpn_mismatch = match server.tls_backend() {
        crate::tls::TlsBackend::Rustls => 4,
        #[cfg(feature = "boringssl-boring-crate")]
        crate::tls::TlsBackend::BoringSsl => 9,
    };
    assert_eq!(pipe.server.early_data_reason(), alpn_mismatch);
    assert_clean_rejection(&pipe, initial_cwnd);
}

#[test]
fn rejection_with_lower_stream_limits_resets_what_no_longer_fits() {
    let (mut client, _, session) = early_configs();
    // The restarted server allows two bidirectional streams of 4000 bytes each.
    let mut restarted = server_config();
    restarted.enable_early_data();
    restarted.set_initial_max_streams_bidi(2);
    restarted.set_initial_max_stream_data_bidi_remote(4000);
    let mut pipe = Pipe::new(&mut client, &mut restarted).unwrap();
    let initial_cwnd = pipe.client.path_stats().cwnd;
    let streams = early_streams();
    send_early(&mut pipe, &session, &streams);
    pipe.handshake().unwrap();

    // Stream 0 fits and arrives; stream 4 (6000 bytes) is reset with final size 0; stream 8 is
    // beyond the stream limit and the server never hears of it.
    let mut buf = vec![0u8; 65536];
    pipe.run_until(Duration::from_secs(5), |p| {
        matches!(
            p.server.stream_recv(4, &mut buf),
            Err(Error::StreamReset(0))
        )
    })
    .unwrap();
    let got = read_all(&mut pipe, &streams[..1], false);
    assert_eq!(got[0], streams[0].1);
    pipe.run_until(Duration::from_secs(1), |p| {
        p.client.stream_send_buffered() == 0
    })
    .unwrap();
    assert!(!pipe.server.stream_readable(8));
    assert_eq!(
        pipe.server.stream_recv(8, &mut buf),
        Err(Error::InvalidStreamState(8))
    );
    assert_clean_rejection(&pipe, initial_cwnd);

    // The application learns it when it writes to them again.
    assert_eq!(
        pipe.client.stream_send(4, b"x", false),
        Err(Error::InvalidStreamState(4))
    );
    assert_eq!(
        pipe.client.stream_send(8, b"x", false),
        Err(Error::InvalidStreamState(8))
    );
    assert_eq!(pipe.client.peer_streams_left_bidi(), 0);
}

#[test]
fn rejection_with_a_lower_connection_window_keeps_what_fits() {
    let (mut client, _, session) = early_configs();
    let mut restarted = server_config();
    restarted.enable_early_data();
    restarted.set_initial_max_data(3000);
    let mut pipe = Pipe::new(&mut client, &mut restarted).unwrap();
    let initial_cwnd = pipe.client.path_stats().cwnd;
    let streams = vec![
        (0, b"GET /a\r\n".to_vec()),
        (4, payload(2000, 4)),
        (8, payload(2500, 8)),
    ];
    send_early(&mut pipe, &session, &streams);
    // The first two streams (2008 bytes) fit in 3000; the third would not.
    let got = read_all(&mut pipe, &streams[..2], false);
    for ((id, want), got) in streams.iter().zip(&got) {
        assert_eq!(got, want, "stream {id}");
    }
    let mut buf = vec![0u8; 65536];
    pipe.run_until(Duration::from_secs(5), |p| {
        matches!(
            p.server.stream_recv(8, &mut buf),
            Err(Error::StreamReset(0))
        )
    })
    .unwrap();
    assert_clean_rejection(&pipe, initial_cwnd);
    // What is left of the window is usable at once.
    assert_eq!(
        pipe.client.stream_send(12, &[7u8; 2000], true),
        Ok(3000 - 2008)
    );
}
