//! Connection-level tests on the in-memory pipe: this file holds the shared configurations and
//! the basic handshake and transfer tests; each topic's suite is a file beside it.

mod ack_frequency;
mod calls;
mod cid_calls;
mod defences;
mod early_data_reason;
mod ecn;
mod ecn_paths;
mod handshake_loss;
#[cfg(feature = "boringssl-boring-crate")]
mod in_handshake;
mod migration;
mod pacing;
mod pmtud;
#[cfg(feature = "qlog")]
mod qlog;
mod retrans;
mod retry;
mod stateless_reset;
mod stats_counters;
pub(crate) mod stream_calls;
pub(crate) mod streams;
mod timers;
mod transport_params;
mod tuning;
mod v2;
mod zero_rtt;

use std::time::Duration;

use crate::testing::{Direction, LinkConfig, Pipe, Verdict};
use crate::{Config, Error, Shutdown};

fn cert_path(name: &str) -> String {
    format!("{}/tests/certs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn base_config() -> Config {
    let mut c = Config::new(crate::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    // Most suites here exercise migration and ID rotation, which need spare IDs without the
    // test issuing them; `cid_calls.rs` covers quiche's default (the application issues).
    c.enable_automatic_connection_ids(true);
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(16 << 20);
    c.set_initial_max_stream_data_bidi_local(8 << 20);
    c.set_initial_max_stream_data_bidi_remote(8 << 20);
    c.set_initial_max_stream_data_uni(8 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c
}

pub(crate) fn client_config() -> Config {
    let mut c = base_config();
    c.verify_peer(false);
    c
}

/// A client whose ClientHello fits one datagram, for tests that take the first datagram as the
/// whole first flight: BoringSSL's default key shares include X25519MLKEM768 (a 1.2 kB
/// post-quantum share), which makes its ClientHello two datagrams.
pub(crate) fn one_datagram_hello_client_config() -> Config {
    let mut c = client_config();
    c.set_curves_list("X25519").unwrap();
    c
}

pub(crate) fn server_config() -> Config {
    let mut c = base_config();
    c.load_cert_chain_from_pem_file(&cert_path("cert.crt"))
        .unwrap();
    c.load_priv_key_from_pem_file(&cert_path("cert.key"))
        .unwrap();
    c
}

#[test]
fn handshake_without_verification() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    assert_eq!(pipe.client.application_proto(), b"hq-interop");
    assert_eq!(pipe.server.application_proto(), b"hq-interop");
    // The client's handshake is confirmed by HANDSHAKE_DONE shortly after.
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    assert!(pipe.client.spaces[0].discarded && pipe.client.spaces[1].discarded);
    assert!(pipe.server.spaces[0].discarded && pipe.server.spaces[1].discarded);
}

#[test]
fn handshake_with_verification() {
    let mut client = base_config();
    client
        .load_verify_locations_from_file(&cert_path("rootca.crt"))
        .unwrap();
    client.verify_peer(true);
    let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
    pipe.handshake().unwrap();
}

#[test]
fn untrusted_certificate_fails_the_handshake() {
    let mut client = base_config();
    client
        .load_verify_locations_from_file(&cert_path("other-rootca.crt"))
        .unwrap();
    client.verify_peer(true);
    let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
    assert!(pipe.handshake().is_err());
    // The client closes with CRYPTO_ERROR carrying unknown_ca (48): 0x100 + 48.
    let err = pipe.client.local_error().expect("client closed");
    assert_eq!(err.error_code, 0x130);
    pipe.run_until(Duration::from_secs(5), |p| p.server.peer_error().is_some())
        .unwrap();
    assert_eq!(pipe.server.peer_error().unwrap().error_code, 0x130);
}

#[test]
fn alpn_mismatch_fails_cleanly_on_both_sides() {
    let mut server = server_config();
    server.set_application_protos(&[b"h3"]).unwrap();
    let mut pipe = Pipe::new(&mut client_config(), &mut server).unwrap();
    assert!(pipe.handshake().is_err());
    // no_application_protocol (120) as CRYPTO_ERROR: 0x178 (RFC 9001 §8.1).
    assert_eq!(pipe.server.local_error().unwrap().error_code, 0x178);
    pipe.run_until(Duration::from_secs(5), |p| p.client.peer_error().is_some())
        .unwrap();
    assert_eq!(pipe.client.peer_error().unwrap().error_code, 0x178);
    assert!(!pipe.client.is_established() && !pipe.server.is_established());
}

/// Deterministic pseudo-random payload.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = crate::testing::Rng(seed | 1);
    rng.bytes(len)
}

fn sha256(data: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .to_vec()
}

/// Sends `data` from the client to the server on stream 0 and returns what the server read,
/// failing after `limit` of virtual time.
fn upload(pipe: &mut Pipe, data: &[u8], limit: Duration) -> Vec<u8> {
    let mut sent = 0;
    let mut received = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; 65536];
    let mut fin = false;
    let deadline = pipe.now + limit;
    while !fin {
        assert!(
            pipe.now < deadline,
            "transfer did not finish in {limit:?}: {sent} sent, {} received",
            received.len()
        );
        if sent < data.len() {
            match pipe.client.stream_send(0, &data[sent..], true) {
                Ok(n) => sent += n,
                Err(Error::Done) => {}
                Err(e) => panic!("stream_send: {e:?}"),
            }
        }
        for id in pipe.server.readable().collect::<Vec<_>>() {
            loop {
                match pipe.server.stream_recv(id, &mut buf) {
                    Ok((n, f)) => {
                        received.extend_from_slice(&buf[..n]);
                        fin |= f;
                    }
                    Err(Error::Done) => break,
                    Err(e) => panic!("stream_recv: {e:?}"),
                }
            }
        }
        if !pipe.step().unwrap() {
            break;
        }
    }
    received
}

fn lossy_pipe(loss: f64, reorder: f64, seed: u64) -> Pipe {
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        rate_bps: Some(100_000_000),
        queue_bytes: Some(1_000_000),
        loss,
        reorder,
        ..LinkConfig::default()
    };
    established_over(link, seed)
}

/// A pipe whose two directions are both `link`, its handshake done.
pub(crate) fn established_over(link: LinkConfig, seed: u64) -> Pipe {
    let mut pipe = Pipe::with_links(
        &mut client_config(),
        &mut server_config(),
        link.clone(),
        link,
        seed,
    )
    .unwrap();
    pipe.handshake().unwrap();
    pipe
}

fn transfer_intact(loss: f64, reorder: f64, seed: u64) -> Pipe {
    let data = payload(10 << 20, seed);
    let mut pipe = lossy_pipe(loss, reorder, seed);
    let got = upload(&mut pipe, &data, Duration::from_secs(600));
    assert_eq!(got.len(), data.len());
    assert_eq!(sha256(&got), sha256(&data));
    // Let the last acknowledgements arrive.
    pipe.run_until(Duration::from_secs(10), |p| {
        p.client.path_stats().bytes_in_flight == 0
    })
    .unwrap();
    // Every loss the sender declared was a datagram the link dropped, unless later proven
    // spurious (acknowledged after all) or dropped by the receiver as a late duplicate.
    let stats = pipe.client.stats();
    let link = pipe.link_stats(Direction::ToServer);
    let dropped = (link.dropped_random + link.dropped_queue) as usize + pipe.server.stats().dropped;
    assert!(
        stats.lost - stats.spurious_lost <= dropped,
        "lost {} spurious {} dropped {dropped}",
        stats.lost,
        stats.spurious_lost
    );
    pipe
}

/// The send quantum starts at the initial window (RFC 9002 §7.7) and grows with the sending
/// rate to a millisecond's worth, capped at what one GSO send carries.
#[test]
fn send_quantum_follows_the_rate() {
    let link = LinkConfig {
        delay: Duration::from_millis(1),
        ..LinkConfig::default()
    };
    let mut pipe = established_over(link, 3);
    let initial = pipe.client.send_quantum();
    let mss = pipe.client.max_send_udp_payload_size();
    assert!(
        (9 * mss..=12_000.max(10 * mss)).contains(&initial),
        "{initial}"
    );
    let data = payload(4 << 20, 3);
    assert_eq!(
        upload(&mut pipe, &data, Duration::from_secs(60)).len(),
        data.len()
    );
    let stats = pipe.client.path_stats();
    assert!(stats.cwnd > 1 << 20, "the window grew: {stats:?}");
    assert_eq!(pipe.client.send_quantum(), crate::MAX_SEND_QUANTUM);
}

#[test]
fn transfer_10mib_no_loss() {
    let pipe = transfer_intact(0.0, 0.0, 1);
    assert_eq!(pipe.link_stats(Direction::ToServer).dropped_random, 0);
}

#[test]
fn transfer_10mib_5_percent_loss() {
    let pipe = transfer_intact(0.05, 0.0, 2);
    let stats = pipe.client.stats();
    assert!(stats.lost > 0);
    assert!(stats.lost_by_packet_threshold > 0, "{stats:?}");
}

#[test]
fn transfer_10mib_20_percent_loss() {
    let pipe = transfer_intact(0.20, 0.0, 3);
    assert!(pipe.client.stats().lost > 0);
}

#[test]
fn transfer_10mib_with_reordering() {
    transfer_intact(0.0, 0.05, 4);
}

/// After the handshake, drops client datagrams whose index is in `drop`.
fn drop_client_datagrams(pipe: &mut Pipe, drop: Vec<u64>) {
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
fn time_threshold_detects_loss_with_too_few_later_packets() {
    let mut pipe = lossy_pipe(0.0, 0.0, 5);
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    // Three packets of data; the first is dropped. Only two later packets can be
    // acknowledged, fewer than the packet threshold of 3, so only the time threshold can
    // declare it lost (RFC 9002 §6.1.2).
    drop_client_datagrams(&mut pipe, vec![0]);
    let data = payload(3000, 5);
    let got = upload(&mut pipe, &data, Duration::from_secs(30));
    assert_eq!(got, data);
    let stats = pipe.client.stats();
    assert_eq!(stats.lost_by_packet_threshold, 0, "{stats:?}");
    assert!(stats.lost_by_time_threshold >= 1, "{stats:?}");
}

#[test]
fn tail_loss_is_recovered_by_pto_probes() {
    let mut pipe = lossy_pipe(0.0, 0.0, 6);
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    // The only data packet is lost: nothing later can reveal it, so the PTO must fire and a
    // probe carry the data again (RFC 9002 §6.2).
    drop_client_datagrams(&mut pipe, vec![0]);
    let data = payload(500, 6);
    let got = upload(&mut pipe, &data, Duration::from_secs(30));
    assert_eq!(got, data);
    let stats = pipe.client.stats();
    assert!(stats.pto_count >= 1, "{stats:?}");
    assert!(stats.pto_probes_sent >= 1, "{stats:?}");
}

#[test]
fn idle_timeout_closes_both_sides() {
    let mut client = client_config();
    client.set_max_idle_timeout(1_000);
    let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    let start = pipe.now;
    pipe.run_until(Duration::from_secs(10), |p| {
        p.client.is_closed() && p.server.is_closed()
    })
    .unwrap();
    assert!(pipe.client.is_timed_out() && pipe.server.is_timed_out());
    // The smaller of both idle timeouts (1 s, not the server's 30 s) applied.
    assert!(
        pipe.now - start < Duration::from_secs(3),
        "{:?}",
        pipe.now - start
    );
    assert!(pipe.client.peer_error().is_none() && pipe.server.peer_error().is_none());
}

#[test]
fn application_close_from_client_reaches_server() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    pipe.client.close(true, 42, b"bye").unwrap();
    assert_eq!(pipe.client.close(true, 43, b"again"), Err(Error::Done));
    pipe.run_until(Duration::from_secs(5), |p| p.server.is_draining())
        .unwrap();
    let err = pipe.server.peer_error().unwrap();
    assert!(err.is_app);
    assert_eq!(err.error_code, 42);
    assert_eq!(err.reason, b"bye");
    // Both sides end after their closing/draining periods.
    pipe.run_until(Duration::from_secs(10), |p| {
        p.client.is_closed() && p.server.is_closed()
    })
    .unwrap();
    assert!(!pipe.client.is_timed_out());
}

#[test]
fn transport_close_from_server_reaches_client() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    pipe.server
        .close(false, 0x0a, b"protocol violation")
        .unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.client.peer_error().is_some())
        .unwrap();
    let err = pipe.client.peer_error().unwrap();
    assert!(!err.is_app);
    assert_eq!(err.error_code, 0x0a);
    assert_eq!(err.reason, b"protocol violation");
    assert!(pipe.client.is_draining());
}

#[test]
fn stream_reset_is_seen_by_the_reader() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    assert_eq!(pipe.client.stream_send(0, b"hello", false), Ok(5));
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    pipe.client.stream_shutdown(0, Shutdown::Write, 7).unwrap();
    let mut buf = [0u8; 16];
    pipe.run_until(Duration::from_secs(5), |p| {
        matches!(
            p.server.stream_recv(0, &mut buf),
            Err(Error::StreamReset(7))
        )
    })
    .unwrap();
}

/// The client's first datagram, and a server connection that has not seen it.
fn first_flight() -> (Vec<u8>, crate::Connection, crate::RecvInfo) {
    let mut pipe = Pipe::new(
        &mut one_datagram_hello_client_config(),
        &mut server_config(),
    )
    .unwrap();
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    out.truncate(n);
    let info = crate::RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    (out, pipe.server, info)
}

#[test]
fn client_initial_is_padded_to_1200_bytes() {
    let (dgram, _, _) = first_flight();
    assert!(dgram.len() >= 1200, "{}", dgram.len());
}

#[test]
fn corrupted_initial_is_dropped_without_reply() {
    let now = crate::testing::virtual_epoch();
    let mut out = [0u8; 1500];
    for pos in [0usize, 5, 30, 100, 600, 1199] {
        let (mut dgram, mut server, info) = first_flight();
        dgram[pos] ^= 0x41;
        let _ = server.recv_at(&mut dgram, info, now);
        assert_eq!(
            server.send_at(&mut out, now),
            Err(Error::Done),
            "byte {pos}"
        );
        assert!(!server.is_closed() || pos == 0);
    }
}

#[test]
fn short_initial_datagram_is_dropped_by_the_server() {
    let now = crate::testing::virtual_epoch();
    let (mut dgram, mut server, info) = first_flight();
    let mut short = dgram[..1000].to_vec();
    assert_eq!(
        server.recv_at(&mut short, info, now),
        Err(Error::InvalidPacket)
    );
    let mut out = [0u8; 1500];
    assert_eq!(server.send_at(&mut out, now), Err(Error::Done));
    // The full datagram is still accepted afterwards.
    assert!(server.recv_at(&mut dgram, info, now).is_ok());
    assert!(server.send_at(&mut out, now).is_ok());
}

#[test]
fn unknown_version_gets_version_negotiation() {
    // What a server does with a packet of an unknown version: parse the version-independent
    // header, see the version is unsupported, answer with Version Negotiation.
    let (mut dgram, _, _) = first_flight();
    dgram[1..5].copy_from_slice(&0x1a2a_3a4au32.to_be_bytes());
    let hdr = crate::packet::Header::from_slice(&mut dgram, 16).unwrap();
    assert!(!crate::version_is_supported(hdr.version));
    let mut out = [0u8; 256];
    let n = crate::negotiate_version(&hdr.scid, &hdr.dcid, &mut out).unwrap();
    let vn = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(vn.ty, crate::Type::VersionNegotiation);
    assert_eq!(&vn.dcid[..], &hdr.scid[..]);
    assert_eq!(&vn.scid[..], &hdr.dcid[..]);
    assert!(vn.versions.unwrap().contains(&crate::PROTOCOL_VERSION));
}

#[test]
fn client_gives_up_on_version_negotiation_without_its_version() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let hdr = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    // A Version Negotiation packet listing only versions we do not speak.
    let mut vn = vec![0x80, 0, 0, 0, 0];
    vn.push(hdr.scid.len() as u8);
    vn.extend_from_slice(&hdr.scid);
    vn.push(hdr.dcid.len() as u8);
    vn.extend_from_slice(&hdr.dcid);
    vn.extend_from_slice(&0xff00_001du32.to_be_bytes());
    let info = crate::RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    };
    assert_eq!(
        pipe.client.recv_at(&mut vn, info, pipe.now),
        Err(Error::UnknownVersion)
    );
    assert!(pipe.client.is_closed());
}

const RESERVED_VERSION: u32 = 0x1a2a_3a4a;

/// A client configured with the reserved version sends its first Initial; the pipe plays the
/// stateless server answering with Version Negotiation. Returns the pipe, the client's restarted
/// now. `tweak` may change either side before the new first flight.
fn pipe_after_version_negotiation(tweak: impl FnOnce(&mut Pipe)) -> Pipe {
    pipe_after_vn_with(&mut reserved_version_client(), &mut server_config(), tweak)
}

fn reserved_version_client() -> Config {
    let mut client = Config::new(RESERVED_VERSION).unwrap();
    client.set_application_protos(&[b"hq-interop"]).unwrap();
    client.set_initial_max_data(1 << 20);
    client.set_initial_max_stream_data_bidi_local(1 << 20);
    client.set_initial_max_streams_bidi(10);
    client.verify_peer(false);
    client
}

/// [`pipe_after_version_negotiation`] with the configs given (a session handle only works with
/// the client config that received it).
fn pipe_after_vn_with(
    client: &mut Config,
    server: &mut Config,
    tweak: impl FnOnce(&mut Pipe),
) -> Pipe {
    let mut pipe = Pipe::new(client, server).unwrap();
    tweak(&mut pipe);
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    assert!(n >= 1200, "the Initial is padded as usual");
    let hdr = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(hdr.version, RESERVED_VERSION);
    assert!(!crate::version_is_supported(hdr.version));
    let mut vn = [0u8; 256];
    let len = crate::negotiate_version(&hdr.scid, &hdr.dcid, &mut vn).unwrap();
    let info = crate::RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    };
    assert_eq!(pipe.client.recv_at(&mut vn[..len], info, pipe.now), Ok(len));
    assert!(!pipe.client.is_closed());
    // A second Version Negotiation, even a well-formed one, is ignored (RFC 9368 §4).
    assert_eq!(pipe.client.recv_at(&mut vn[..len], info, pipe.now), Ok(len));
    assert!(!pipe.client.is_closed());
    pipe
}

/// quiche's example client starts with a reserved version and relies on the library to answer
/// the server's Version Negotiation with a new first flight in version 1 (RFC 9368 §2.1).
/// A server refuses a reserved-version config.
#[test]
fn client_with_a_reserved_version_restarts_in_version_1() {
    assert!(Config::new(0x1a2a_3a4b).is_err(), "not a reserved version");
    let mut reserved_server = Config::new(RESERVED_VERSION).unwrap();
    let addr = "127.0.0.1:4433".parse().unwrap();
    let scid = crate::ConnectionId::from_ref(&[1; 16]);
    assert_eq!(
        crate::accept(&scid, None, addr, addr, &mut reserved_server).err(),
        Some(Error::UnknownVersion)
    );

    let mut pipe = pipe_after_version_negotiation(|_| {});
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let hdr = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(hdr.version, crate::PROTOCOL_VERSION);
    assert_eq!(hdr.ty, crate::Type::Initial);
    // The pipe delivers the new first flight, and the handshake completes in version 1.
    let info = crate::RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
    pipe.handshake().unwrap();
    assert!(pipe.client.is_established() && pipe.server.is_established());
    let vi = pipe
        .server
        .peer_tp
        .as_ref()
        .unwrap()
        .version_information
        .clone();
    assert_eq!(vi.unwrap().chosen_version, crate::PROTOCOL_VERSION);
    assert_eq!(pipe.client.stream_send(0, b"after VN", true), Ok(8));
    let mut buf = [0u8; 16];
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    assert_eq!(pipe.server.stream_recv(0, &mut buf), Ok((8, true)));
}

/// Delivers the client's restarted first flight and completes the handshake.
fn finish_after_vn(pipe: &mut Pipe) {
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let info = crate::RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
    pipe.handshake().unwrap();
}

/// A session set before the first flight is offered again in the ClientHello rebuilt after
/// Version Negotiation (the first ClientHello consumed its ticket): quiche resumes there too,
/// and its example client starts with a reserved version.
#[test]
fn resumption_survives_version_negotiation() {
    let (mut client, mut server) = (reserved_version_client(), server_config());
    let mut first = pipe_after_vn_with(&mut client, &mut server, |_| {});
    finish_after_vn(&mut first);
    assert!(!first.client.is_resumed());
    first
        .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    let session = first.client.session().unwrap().to_vec();

    let mut second = pipe_after_vn_with(&mut client, &mut server, |p| {
        p.client.set_session(&session).unwrap();
    });
    finish_after_vn(&mut second);
    assert!(second.client.is_resumed() && second.server.is_resumed());
}

/// Downgrade prevention (RFC 9368 §4): after reacting to Version Negotiation, the client closes
/// with VERSION_NEGOTIATION_ERROR if the server's Version Information shows that the
/// negotiation was not genuine.
#[test]
fn client_closes_on_forged_version_negotiation() {
    use crate::transport_params::VersionInformation;
    let cases = [
        // The server supports the version the client first tried: the VN was forged.
        (1, vec![1, RESERVED_VERSION]),
        // The server chose another version than the packets carry.
        (0x6b33_43cf, vec![1]),
        // An empty list after Version Negotiation.
        (1, vec![]),
    ];
    for (chosen_version, available_versions) in cases {
        let vi = VersionInformation {
            chosen_version,
            available_versions: available_versions.clone(),
        };
        let mut pipe = pipe_after_version_negotiation(|p| {
            p.server.local_tp.version_information = Some(vi);
        });
        let _ = pipe.handshake();
        pipe.run_until(Duration::from_secs(5), |p| p.server.peer_error().is_some())
            .unwrap();
        let err = pipe.client.local_error().expect("client closed");
        assert_eq!(err.error_code, 0x11, "{available_versions:?}");
        assert!(!pipe.client.is_established());
    }
}

/// The server checks that the client's chosen version is the one its packets carry.
#[test]
fn server_closes_on_a_chosen_version_mismatch() {
    use crate::transport_params::VersionInformation;
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.client.local_tp.version_information = Some(VersionInformation {
        chosen_version: 0x6b33_43cf,
        available_versions: vec![0x6b33_43cf, 1],
    });
    let params = pipe.client.local_tp.encode_to_vec(false).unwrap();
    pipe.client.tls.set_transport_params(params).unwrap();
    let _ = pipe.handshake();
    pipe.run_until(Duration::from_secs(5), |p| p.server.local_error().is_some())
        .unwrap();
    assert_eq!(pipe.server.local_error().unwrap().error_code, 0x11);
}

/// Plays the stateless server of a Retry: answers the client's first Initial with a Retry,
/// then replaces the pipe's server by one accepted with the original DCID.
fn handshake_through_retry(pipe: &mut Pipe, corrupt_tag: bool) -> Vec<u8> {
    handshake_through_retry_with(pipe, corrupt_tag, |odcid, retry_scid, pipe| {
        crate::accept(
            retry_scid,
            Some(odcid),
            pipe.server_addr,
            pipe.client_addr,
            &mut server_config(),
        )
        .unwrap()
    })
}

/// [`handshake_through_retry`] with the server made by `accept` from the original DCID and
/// the Retry's SCID (`[0x77; 16]`).
pub(crate) fn handshake_through_retry_with(
    pipe: &mut Pipe,
    corrupt_tag: bool,
    accept: impl FnOnce(&crate::ConnectionId, &crate::ConnectionId, &Pipe) -> crate::Connection,
) -> Vec<u8> {
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let hdr = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    let odcid = hdr.dcid.clone().into_owned();
    let client_scid = hdr.scid.clone().into_owned();
    let new_scid = crate::ConnectionId::from_vec(vec![0x77; 16]);
    let token = b"address validation token".to_vec();
    let mut retry = vec![0u8; 256];
    let len = crate::retry(
        &client_scid,
        &odcid,
        &new_scid,
        &token,
        crate::PROTOCOL_VERSION,
        &mut retry,
    )
    .unwrap();
    retry.truncate(len);
    if corrupt_tag {
        *retry.last_mut().unwrap() ^= 1;
    }
    let info = crate::RecvInfo {
        from: pipe.server_addr,
        to: pipe.client_addr,
    };
    pipe.client.recv_at(&mut retry, info, pipe.now).unwrap();
    if corrupt_tag {
        assert_eq!(
            pipe.client.destination_id(),
            odcid,
            "a Retry with a bad tag is ignored"
        );
        assert_eq!(pipe.client.send_at(&mut out, pipe.now), Err(Error::Done));
        return Vec::new();
    }

    // The client's next Initial carries the token, addressed to the new connection ID.
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let next = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(&next.dcid[..], &new_scid[..]);
    assert_eq!(next.token.as_deref(), Some(&token[..]));
    assert!(n >= 1200);

    pipe.server = accept(&odcid, &new_scid, pipe);
    let info = crate::RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
    out[..n].to_vec()
}

#[test]
fn retry_then_handshake_validates_connection_ids() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    handshake_through_retry(&mut pipe, false);
    pipe.handshake().unwrap();
    // Both sides checked original_destination_connection_id and retry_source_connection_id
    // (RFC 9000 §7.3), or the handshake would have failed.
    let tp = pipe.client.peer_transport_params().unwrap();
    assert_eq!(
        tp.retry_source_connection_id.as_deref(),
        Some(&[0x77u8; 16][..])
    );
    let data = payload(100_000, 9);
    assert_eq!(upload(&mut pipe, &data, Duration::from_secs(30)), data);
}

#[test]
fn retry_with_bad_integrity_tag_is_ignored() {
    // One datagram of ClientHello, so that nothing else is due after the first.
    let mut pipe = Pipe::new(
        &mut one_datagram_hello_client_config(),
        &mut server_config(),
    )
    .unwrap();
    handshake_through_retry(&mut pipe, true);
    // The original server still completes the handshake with the client.
    pipe.handshake().unwrap();
}

#[test]
fn key_updates_in_both_directions_during_a_transfer() {
    let mut pipe = lossy_pipe(0.0, 0.0, 11);
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    // Nothing acknowledged in the current phase yet is fine right after confirmation only if
    // a 1-RTT packet was acknowledged; otherwise the call says Done.
    let data = payload(4 << 20, 11);
    let mut sent = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut updates = (0, 0);
    let deadline = pipe.now + Duration::from_secs(120);
    while received.len() < data.len() {
        assert!(pipe.now < deadline);
        if sent < data.len() {
            if let Ok(n) = pipe.client.stream_send(0, &data[sent..], true) {
                sent += n;
            }
        }
        // Alternate who initiates, roughly every 512 KiB received, and only once the other
        // side has followed the previous update (both in the same phase): then every update
        // is a peer update for the other side.
        let (c, s) = (pipe.client.stats(), pipe.server.stats());
        let in_sync =
            c.local_key_updates + c.peer_key_updates == s.local_key_updates + s.peer_key_updates;
        if in_sync && received.len() > (updates.0 + updates.1 + 1) * (512 << 10) {
            let (initiator, count) = if (updates.0 + updates.1) % 2 == 0 {
                (&mut pipe.client, &mut updates.0)
            } else {
                (&mut pipe.server, &mut updates.1)
            };
            if initiator.initiate_key_update().is_ok() {
                *count += 1;
            }
        }
        while let Ok((n, _)) = pipe.server.stream_recv(0, &mut buf) {
            received.extend_from_slice(&buf[..n]);
        }
        assert!(
            pipe.step().unwrap(),
            "stalled: sent {sent} received {} updates {updates:?}\nclient {:?}\nserver {:?}",
            received.len(),
            pipe.client.stats(),
            pipe.server.stats()
        );
    }
    assert_eq!(sha256(&received), sha256(&data));
    // An update initiated just before the last data arrived reaches the other side with the
    // next packets (the server's ACKs): let them arrive.
    pipe.run_until(Duration::from_secs(1), |p| {
        let (c, s) = (p.client.stats(), p.server.stats());
        c.local_key_updates + c.peer_key_updates == s.local_key_updates + s.peer_key_updates
    })
    .unwrap();
    assert!(updates.0 >= 2 && updates.1 >= 2, "{updates:?}");
    assert_eq!(pipe.client.stats().local_key_updates, updates.0);
    assert_eq!(pipe.server.stats().local_key_updates, updates.1);
    // Both sides went through the same phases: each change was either initiated or followed
    // (two updates initiated at once by both sides meet in the same phase, RFC 9001 §6.3).
    let (c, s) = (pipe.client.stats(), pipe.server.stats());
    assert_eq!(
        c.local_key_updates + c.peer_key_updates,
        s.local_key_updates + s.peer_key_updates,
        "client {c:?} server {s:?}"
    );
    assert!(
        c.peer_key_updates >= 1 && s.peer_key_updates >= 1,
        "{c:?} {s:?}"
    );
}

#[test]
fn key_update_needs_confirmation_and_an_acknowledged_packet() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    assert_eq!(pipe.client.initiate_key_update(), Err(Error::InvalidState));
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    assert_eq!(pipe.client.stream_send(0, b"x", false), Ok(1));
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.path_stats().bytes_in_flight == 0
    })
    .unwrap();
    assert_eq!(pipe.client.initiate_key_update(), Ok(()));
    // A second update must wait for a packet of the new phase to be acknowledged.
    assert_eq!(pipe.client.initiate_key_update(), Err(Error::Done));
}

#[test]
fn resumption_with_zero_rtt_data() {
    let mut client = client_config();
    client.enable_early_data();
    let mut server = server_config();
    server.enable_early_data();

    let mut first = Pipe::new(&mut client, &mut server).unwrap();
    first.handshake().unwrap();
    assert!(!first.client.is_resumed());
    first
        .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    let session = first.client.session().unwrap().to_vec();

    let mut second = Pipe::new(&mut client, &mut server).unwrap();
    second.client.set_session(&session).unwrap();
    let zero_rtt_packets = std::rc::Rc::new(std::cell::Cell::new(0));
    let counter = zero_rtt_packets.clone();
    second.hook = Some(Box::new(move |d| {
        let mut dgram = d.data.to_vec();
        for pkt in crate::packet::coalesced(&mut dgram, 16).flatten() {
            if crate::packet::HeaderLayout::parse(pkt, 16)
                .is_ok_and(|h| h.ty == crate::Type::ZeroRTT)
            {
                counter.set(counter.get() + 1);
            }
        }
        Verdict::Deliver
    }));
    // The first send builds the ClientHello offering the session; the remembered transport
    // parameters then allow data before the handshake completes.
    let mut out = vec![0u8; 1500];
    let (n, _) = second.client.send_at(&mut out, second.now).unwrap();
    assert!(second.client.is_in_early_data());
    assert_eq!(second.client.stream_send(0, b"early data", true), Ok(10));
    let info = crate::RecvInfo {
        from: second.client_addr,
        to: second.server_addr,
    };
    second
        .server
        .recv_at(&mut out[..n], info, second.now)
        .unwrap();

    let mut buf = [0u8; 64];
    second
        .run_until(Duration::from_secs(5), |p| {
            matches!(p.server.stream_recv(0, &mut buf), Ok((10, true)))
        })
        .unwrap();
    assert_eq!(&buf[..10], b"early data");
    second.handshake().unwrap();
    assert!(second.client.is_resumed() && second.server.is_resumed());
    assert!(zero_rtt_packets.get() >= 1, "data went in 0-RTT packets");
}

#[test]
fn forged_first_initial_commits_nothing() {
    let (dgram, mut server, info) = first_flight();
    let now = crate::testing::virtual_epoch();
    // A forgery: a valid Initial header with another DCID and SCID, garbage payload.
    let mut forged = dgram.clone();
    for b in &mut forged[6..14] {
        *b ^= 0x5a;
    }
    for b in &mut forged[100..] {
        *b = 0x42;
    }
    let _ = server.recv_at(&mut forged, info, now);
    assert!(
        server.destination_id().is_empty(),
        "no client CID was learnt"
    );
    assert!(server.spaces[0].open.is_none(), "no Initial keys kept");
    // The real client's Initial is then accepted as the first.
    let mut real = dgram;
    assert!(server.recv_at(&mut real, info, now).is_ok());
    assert!(!server.destination_id().is_empty());
    let mut out = [0u8; 1500];
    assert!(
        server.send_at(&mut out, now).is_ok(),
        "the server answers the real client"
    );
}

#[test]
fn connection_that_never_authenticates_a_packet_times_out() {
    let (mut dgram, mut server, info) = first_flight();
    let now = crate::testing::virtual_epoch();
    for b in &mut dgram[100..] {
        *b ^= 0xff;
    }
    let _ = server.recv_at(&mut dgram, info, now);
    let deadline = server.timeout_instant().expect("the idle timer runs");
    assert!(deadline <= now + Duration::from_secs(31));
    server.on_timeout_at(deadline);
    assert!(server.is_closed() && server.is_timed_out());
}

#[test]
fn window_does_not_grow_while_application_limited() {
    let mut pipe = lossy_pipe(0.0, 0.0, 12);
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    let initial = pipe.client.path_stats().cwnd;
    // One small message per round trip for 50 round trips: far below the window.
    let mut buf = [0u8; 64];
    for _ in 0..50 {
        assert_eq!(pipe.client.stream_send(0, b"tick", false), Ok(4));
        pipe.run_for(Duration::from_millis(25)).unwrap();
        while pipe.server.stream_recv(0, &mut buf).is_ok() {}
    }
    assert_eq!(pipe.client.path_stats().cwnd, initial, "RFC 9002 §7.8");
    // A bulk transfer then grows it.
    let data = payload(1 << 20, 12);
    let mut sent = 0;
    pipe.run_until(Duration::from_secs(30), |p| {
        if let Ok(n) = p.client.stream_send(4, &data[sent..], true) {
            sent += n;
        }
        while p.server.stream_recv(4, &mut [0u8; 65536]).is_ok() {}
        p.client.path_stats().cwnd > initial * 2
    })
    .unwrap();
}

/// A `Write` whose bytes the test reads back.
#[derive(Clone, Default)]
struct SharedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// quiche's `set_keylog` returns nothing: with `log_keys` the secrets arrive, without it the
/// writer is ignored.
#[test]
fn set_keylog_writes_secrets_only_with_log_keys() {
    for log_keys in [true, false] {
        let mut client = client_config();
        if log_keys {
            client.log_keys();
        }
        let mut pipe = Pipe::new(&mut client, &mut server_config()).unwrap();
        let log = SharedLog::default();
        pipe.client.set_keylog(Box::new(log.clone()));
        pipe.handshake().unwrap();
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.contains("CLIENT_HANDSHAKE_TRAFFIC_SECRET"),
            log_keys,
            "{text}"
        );
        assert_eq!(text.contains("CLIENT_TRAFFIC_SECRET_0"), log_keys, "{text}");
    }
}

/// quiche's state semantics after a local close: draining once CONNECTION_CLOSE went out, no
/// more data, a timer to the end of the closing period, then closed.
#[test]
fn local_close_reports_draining_once_the_close_is_sent() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    pipe.client.close(true, 7, b"done").unwrap();
    assert!(!pipe.client.is_draining() && !pipe.client.is_closed());
    let mut buf = [0u8; 1500];
    let (len, _) = pipe.client.send_at(&mut buf, pipe.now).unwrap();
    assert!(len > 0);
    assert!(pipe.client.is_draining());
    assert!(!pipe.client.is_closed());
    assert_eq!(pipe.client.send_at(&mut buf, pipe.now), Err(Error::Done));
    let err = pipe.client.local_error().unwrap();
    assert!(err.is_app && err.error_code == 7);
    let left = pipe.client.timeout_at(pipe.now).expect("closing timer");
    assert!(
        left > Duration::ZERO && left < Duration::from_secs(5),
        "{left:?}"
    );
    pipe.client.on_timeout_at(pipe.now + left);
    assert!(pipe.client.is_closed());
    assert_eq!(pipe.client.timeout_at(pipe.now + left), None);
}

#[test]
#[should_panic(expected = "the endpoints keep waking each other up")]
fn run_until_gives_up_after_its_step_cap_instead_of_hanging() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    // A goal never reached, with traffic that keeps the pipe stepping: without the cap only
    // the virtual-time limit would end it.
    pipe.max_steps = 50;
    let _ = pipe.run_until(Duration::from_secs(3600), |p| {
        let _ = p.client.stream_send(0, &[0; 1000], false);
        let mut buf = [0; 2000];
        while p.server.stream_recv(0, &mut buf).is_ok() {}
        false
    });
}

/// An application may build several datagrams at one instant and hold each until its release
/// time (the apps send those due within a millisecond together, in one GSO batch). Their
/// release times must be a pacing interval apart, as if each had been asked for at its time,
/// not the same instant for all: that would turn pacing into bursts of the whole window.
#[test]
fn datagrams_built_at_one_instant_get_spaced_release_times() {
    let mut pipe = lossy_pipe(0.0, 0.0, 5);
    let data = payload(8 << 20, 5);
    let mss = pipe.client.max_send_udp_payload_size();
    let mut sent = 0;
    let mut buf = vec![0u8; 65536];
    // Grow the window well past the pacer's burst (the initial window).
    while pipe.client.path_stats().cwnd < 60 * mss {
        if let Ok(n) = pipe.client.stream_send(0, &data[sent..], false) {
            sent += n;
        }
        for id in pipe.server.readable().collect::<Vec<_>>() {
            while pipe.server.stream_recv(id, &mut buf).is_ok() {}
        }
        assert!(pipe.step().unwrap(), "the transfer stalled");
    }
    // The pipe asks for the next datagram only at its release time; ask for more now.
    let now = pipe.now;
    let mut released = Vec::new();
    let mut out = [0u8; 1500];
    while released.len() < 20 {
        match pipe.client.send_at(&mut out, now) {
            Ok((_, info)) if info.at > now => released.push(info.at),
            Ok(_) => {}
            Err(Error::Done) => break,
            Err(e) => panic!("send: {e:?}"),
        }
    }
    assert!(released.len() >= 5, "the window had room: {released:?}");
    let gaps: Vec<Duration> = released.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| !g.is_zero()), "{gaps:?}");
}

/// The receiver's ACK count against the packets it received during an upload of `len` bytes
/// over a lossless link of `rate_bps` with 30 ms each way.
fn acks_per_packet_uploading(rate_bps: u64, len: usize) -> f64 {
    let link = LinkConfig {
        delay: Duration::from_millis(30),
        rate_bps: Some(rate_bps),
        queue_bytes: Some(10_000_000),
        ..LinkConfig::default()
    };
    let mut pipe = established_over(link, 7);
    let (sent_before, recv_before) = (pipe.server.stats().sent, pipe.server.stats().recv);
    let data = payload(len, 7);
    assert_eq!(upload(&mut pipe, &data, Duration::from_secs(60)).len(), len);
    let stats = pipe.server.stats();
    (stats.sent - sent_before) as f64 / (stats.recv - recv_before) as f64
}

/// RFC 9000 §13.2.2's every-second-packet rule holds the first of each pair until the second
/// arrives; where packets arrive further apart than a thirty-second of the RTT (a slow link,
/// or a small window paced over the round trip) each is acknowledged on arrival, and on a fast
/// link the pair rule still halves the ACKs.
#[test]
fn sparse_arrivals_are_acknowledged_one_by_one_dense_ones_in_pairs() {
    // 2 Mbit/s: a 1200-byte datagram every 4.8 ms, over 60 ms / 32.
    let slow = acks_per_packet_uploading(2_000_000, 300_000);
    assert!(slow > 0.9, "slow link: {slow:.2} ACK packets per packet");
    // 1 Gbit/s: 10 us apart once the window has opened (under the 1 ms floor).
    let fast = acks_per_packet_uploading(1_000_000_000, 20_000_000);
    assert!(fast < 0.6, "fast link: {fast:.2} ACK packets per packet");
}
