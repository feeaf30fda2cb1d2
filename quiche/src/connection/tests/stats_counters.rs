//! Every counter of `Stats` and `PathStats` that quiche 0.30 has, each shown to move when
//! what it counts happens.

use std::time::Duration;

use super::tuning::{pipe_without_address_validation, UNVALIDATED_RUN};
use super::{client_config, server_config};
use crate::cc::StartupExitReason;
use crate::connection::stats::TxBufferTrackingState;
use crate::path::PathState;
use crate::testing::{Direction, LinkConfig, Pipe, Verdict};
use crate::{CongestionControlAlgorithm, Shutdown};

fn pipe() -> Pipe {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    pipe
}

/// The client uploads `len` bytes on stream 0 and the server reads them.
fn upload(pipe: &mut Pipe, len: usize) {
    let data = vec![1u8; len];
    let (mut sent, mut got) = (0, 0);
    let mut buf = vec![0u8; 65536];
    let deadline = pipe.now + Duration::from_secs(60);
    while got < len {
        if sent < len {
            sent += pipe.client.stream_send(0, &data[sent..], true).unwrap_or(0);
        }
        pipe.step().unwrap();
        while let Ok((n, _)) = pipe.server.stream_recv(0, &mut buf) {
            got += n;
        }
        assert!(pipe.now < deadline, "upload stalled at {got}");
    }
    pipe.run_for(Duration::from_millis(100)).unwrap();
}

#[test]
fn acked_bytes_in_flight_time_and_delivery_rate_follow_a_transfer() {
    let mut pipe = pipe();
    let before = pipe.client.stats();
    let start = pipe.now;
    upload(&mut pipe, 300_000);
    let s = pipe.client.stats();
    assert!(
        s.acked_bytes > before.acked_bytes + 300_000,
        "{}",
        s.acked_bytes
    );
    assert!(s.acked_bytes <= s.sent_bytes);
    assert!(s.bytes_in_flight_duration > before.bytes_in_flight_duration);
    assert!(s.bytes_in_flight_duration <= pipe.now - start + before.bytes_in_flight_duration);
    assert_eq!(s.tx_buffered_state, TxBufferTrackingState::Ok);
    let p = pipe.client.path_stats();
    assert!(p.delivery_rate > 0);
    assert!(p.max_rtt.is_some_and(|m| m >= p.min_rtt.unwrap()));
    assert_eq!(p.validation_state, PathState::Validated);
    assert!(p.active);
    assert_eq!(p.max_bandwidth, None, "CUBIC keeps no bandwidth estimate");
}

#[test]
fn resets_and_stops_are_counted_on_both_sides() {
    let mut pipe = pipe();
    pipe.client.stream_send(0, b"a", false).unwrap();
    pipe.client.stream_send(4, b"b", false).unwrap();
    pipe.run_for(Duration::from_millis(50)).unwrap();
    pipe.client.stream_shutdown(0, Shutdown::Write, 7).unwrap();
    pipe.client.stream_shutdown(4, Shutdown::Read, 8).unwrap();
    pipe.run_for(Duration::from_millis(50)).unwrap();
    let (c, s) = (pipe.client.stats(), pipe.server.stats());
    assert_eq!(c.reset_stream_count_local, 1);
    assert_eq!(c.stopped_stream_count_local, 1);
    assert_eq!(s.reset_stream_count_remote, 1);
    assert_eq!(s.stopped_stream_count_remote, 1);
    // The STOP_SENDING made the server reset its side of stream 4 (quiche counts that as a
    // local reset, and the client sees a remote one).
    assert_eq!(
        (s.reset_stream_count_local, s.stopped_stream_count_local),
        (1, 0)
    );
    assert_eq!(c.reset_stream_count_remote, 1);
}

#[test]
fn blocked_frames_are_counted_when_sent_and_received() {
    let mut server = server_config();
    server.set_initial_max_data(4000);
    server.set_initial_max_stream_data_bidi_remote(2000);
    server.set_initial_max_streams_uni(0);
    let mut pipe = Pipe::new(&mut client_config(), &mut server).unwrap();
    pipe.handshake().unwrap();
    // Stream 0 hits its stream window, stream 4 the connection's.
    pipe.client.stream_send(0, &[0; 3000], false).unwrap();
    pipe.client.stream_send(4, &[0; 3000], false).unwrap();
    assert!(
        pipe.client.stream_send(2, b"x", false).is_err(),
        "no uni stream allowed"
    );
    pipe.run_for(Duration::from_millis(100)).unwrap();
    let (c, s) = (pipe.client.stats(), pipe.server.stats());
    assert!(c.stream_data_blocked_sent_count >= 1);
    assert!(c.data_blocked_sent_count >= 1);
    assert_eq!(
        s.stream_data_blocked_recv_count,
        c.stream_data_blocked_sent_count
    );
    assert_eq!(s.data_blocked_recv_count, c.data_blocked_sent_count);
    assert_eq!(s.streams_blocked_uni_recv_count, 1);
}

#[test]
fn datagrams_are_counted_sent_received_and_lost() {
    let mut client = client_config();
    client.enable_dgram(true, 10, 10);
    let mut server = server_config();
    server.enable_dgram(true, 10, 10);
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    pipe.client.dgram_send(b"one").unwrap();
    pipe.run_for(Duration::from_millis(50)).unwrap();
    // The next client datagram is lost.
    let base = pipe.link_stats(Direction::ToServer).sent;
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToServer && d.index == base {
            Verdict::Drop
        } else {
            Verdict::Deliver
        }
    }));
    pipe.client.dgram_send(b"two").unwrap();
    pipe.run_for(Duration::from_millis(50)).unwrap();
    pipe.client.stream_send(0, b"later", false).unwrap();
    pipe.run_for(Duration::from_secs(2)).unwrap();
    let (c, s) = (pipe.client.stats(), pipe.server.stats());
    assert_eq!((c.dgram_sent, s.dgram_recv), (2, 1));
    let p = pipe.client.path_stats();
    assert_eq!((p.dgram_sent, p.dgram_lost), (2, 1));
    assert_eq!(pipe.server.path_stats().dgram_recv, 1);
}

#[test]
fn an_unvalidated_server_counts_its_amplification_stalls() {
    let mut pipe = pipe_without_address_validation(&mut server_config());
    let _ = pipe.run_for(UNVALIDATED_RUN);
    assert!(pipe.server.stats().amplification_limited_count >= 1);
    assert_eq!(pipe.client.stats().amplification_limited_count, 0);
    let p = pipe.server.path_stats();
    assert_eq!(p.validation_state, PathState::Unknown);
    assert!(p.total_pto_count >= 1, "the server's probes timed out");
}

#[test]
fn path_challenges_received_are_counted() {
    let mut pipe = pipe();
    pipe.run_for(Duration::from_millis(200)).unwrap();
    // A NAT rebinding: the server validates the new address with a PATH_CHALLENGE.
    pipe.nat
        .push((pipe.client_addr, "10.1.2.3:999".parse().unwrap()));
    pipe.client
        .stream_send(0, b"after rebinding", false)
        .unwrap();
    pipe.run_for(Duration::from_millis(300)).unwrap();
    assert!(pipe.client.stats().path_challenge_rx_count >= 1);
}

#[test]
fn startup_exit_is_recorded_with_its_reason() {
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps: Some(20_000_000),
        queue_bytes: Some(30_000),
        ..LinkConfig::default()
    };
    for (algo, reasons) in [
        (
            CongestionControlAlgorithm::CUBIC,
            &[
                StartupExitReason::Loss,
                StartupExitReason::ConservativeSlowStartRounds,
            ][..],
        ),
        (
            CongestionControlAlgorithm::Bbr,
            &[StartupExitReason::Loss, StartupExitReason::BandwidthPlateau][..],
        ),
    ] {
        let mut client = client_config();
        client.set_cc_algorithm(algo);
        let mut pipe = Pipe::with_links(
            &mut client,
            &mut server_config(),
            link.clone(),
            link.clone(),
            9,
        )
        .unwrap();
        pipe.handshake().unwrap();
        assert!(pipe.client.path_stats().startup_exit.is_none());
        upload(&mut pipe, 3_000_000);
        let p = pipe.client.path_stats();
        let exit = p.startup_exit.expect("slow start ended");
        assert!(reasons.contains(&exit.reason), "{algo:?}: {exit:?}");
        assert!(exit.cwnd > 0);
        if algo == CongestionControlAlgorithm::Bbr {
            assert!(exit.bandwidth.is_some() && p.max_bandwidth.is_some());
        }
    }
}
