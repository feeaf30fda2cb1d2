//! `Stats::retrans`: packets that carried STREAM or CRYPTO bytes sent before, on lossy pipes.

use std::time::Duration;

use super::tests::{client_config, server_config};
use crate::testing::{Direction, LinkConfig, Pipe, Rng, Verdict};
use crate::Error;

/// A pipe on a 10 ms, 100 Mbps link with random `loss`, before the handshake.
fn pipe(loss: f64, seed: u64) -> Pipe {
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps: Some(100_000_000),
        queue_bytes: Some(1_000_000),
        loss,
        ..LinkConfig::default()
    };
    Pipe::with_links(
        &mut client_config(),
        &mut server_config(),
        link.clone(),
        link,
        seed,
    )
    .unwrap()
}

/// Uploads `len` pseudo-random bytes on stream 0 and checks they arrive intact.
fn upload(pipe: &mut Pipe, len: usize, seed: u64) {
    let data = Rng(seed | 1).bytes(len);
    let mut sent = 0;
    let mut got = Vec::with_capacity(len);
    let mut buf = vec![0u8; 65536];
    let mut fin = false;
    pipe.run_until(Duration::from_secs(120), |p| {
        if sent < data.len() {
            match p.client.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        while let Ok((n, f)) = p.server.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
            fin |= f;
        }
        fin
    })
    .unwrap();
    assert!(got == data, "the upload arrives intact");
}

/// Drops the client datagrams sent from now on whose index (counted from now) is in `drop`.
fn drop_client_datagrams(pipe: &mut Pipe, drop: &'static [u64]) {
    let base = pipe.link_stats(Direction::ToServer).sent;
    pipe.hook = Some(Box::new(move |d| {
        if d.direction == Direction::ToServer && drop.contains(&(d.index - base)) {
            Verdict::Drop
        } else {
            Verdict::Deliver
        }
    }));
}

#[test]
fn no_loss_no_retransmission() {
    let mut pipe = pipe(0.0, 1);
    pipe.handshake().unwrap();
    upload(&mut pipe, 200_000, 1);
    let stats = pipe.client.stats();
    assert_eq!(stats.lost, 0);
    assert_eq!(stats.retrans, 0, "{stats:?}");
    assert_eq!(pipe.client.path_stats().retrans, 0);
}

#[test]
fn each_lost_data_packet_is_repaired_by_a_counted_packet() {
    let mut pipe = pipe(0.0, 2);
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    // Two full data packets lost: their bytes need at least two packets to go again.
    drop_client_datagrams(&mut pipe, &[3, 7]);
    upload(&mut pipe, 50_000, 2);
    let stats = pipe.client.stats();
    assert_eq!(stats.lost - stats.spurious_lost, 2, "{stats:?}");
    assert!((2..=4).contains(&stats.retrans), "{stats:?}");
    assert_eq!(pipe.client.path_stats().retrans, stats.retrans);
    assert_eq!(pipe.server.stats().retrans, 0, "the server lost nothing");
}

#[test]
fn lost_client_hello_is_a_retransmission() {
    let mut pipe = pipe(0.0, 3);
    // The first Initial is lost; the PTO sends the ClientHello again.
    drop_client_datagrams(&mut pipe, &[0]);
    pipe.handshake().unwrap();
    let stats = pipe.client.stats();
    assert!(stats.retrans >= 1, "{stats:?}");
    assert!(stats.pto_count >= 1, "{stats:?}");
}

#[test]
fn random_loss_is_counted() {
    let mut pipe = pipe(0.05, 4);
    pipe.handshake().unwrap();
    upload(&mut pipe, 2 << 20, 4);
    let stats = pipe.client.stats();
    assert!(stats.lost > 0 && stats.retrans > 0, "{stats:?}");
    assert!(stats.retrans < stats.sent, "{stats:?}");
    // Most of what was declared lost carried data, and each such loss is repaired by at
    // least one packet (several losses can share a repair only if they carried little).
    assert!(
        stats.retrans * 2 >= stats.lost - stats.spurious_lost,
        "{stats:?}"
    );
}
