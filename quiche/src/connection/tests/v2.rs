//! QUIC v2 (RFC 9369) and compatible version negotiation (RFC 9368) on the pipe: what goes on
//! the wire in which version, and what each side ends up speaking.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::{client_config, server_config};
use crate::packet::{QUIC_V1, QUIC_V2};
use crate::testing::{Direction, Pipe, Verdict};
use crate::{Config, Error, RecvInfo, Type};

fn v2(mut c: Config) -> Config {
    c.version = QUIC_V2;
    c
}

/// The (direction, type, version) of every long header packet on the wire, in order.
type Seen = Rc<RefCell<Vec<(Direction, Type, u32)>>>;

fn watch(pipe: &mut Pipe) -> Seen {
    let seen: Seen = Rc::default();
    let log = seen.clone();
    pipe.hook = Some(Box::new(move |d| {
        let mut dgram = d.data.to_vec();
        for pkt in crate::packet::coalesced(&mut dgram, 16).flatten() {
            if let Ok(h) = crate::packet::HeaderLayout::parse(pkt, 16) {
                if h.ty != Type::Short {
                    log.borrow_mut().push((d.direction, h.ty, h.version));
                }
            }
        }
        Verdict::Deliver
    }));
    seen
}

/// Sends `len` bytes on stream 0 from the client and checks the server reads them all.
fn exchange(pipe: &mut Pipe, len: usize) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
    let mut sent = 0;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let deadline = pipe.now + Duration::from_secs(60);
    while got.len() < len {
        assert!(pipe.now < deadline, "stalled at {} of {len}", got.len());
        if sent < len {
            if let Ok(n) = pipe.client.stream_send(0, &data[sent..], true) {
                sent += n;
            }
        }
        while let Ok((n, _)) = pipe.server.stream_recv(0, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        assert!(pipe.step().unwrap(), "stalled at {} of {len}", got.len());
    }
    assert_eq!(got, data);
}

#[test]
fn v2_on_both_sides() {
    let mut pipe = Pipe::new(&mut v2(client_config()), &mut v2(server_config())).unwrap();
    let seen = watch(&mut pipe);
    pipe.handshake().unwrap();
    exchange(&mut pipe, 200_000);
    assert_eq!(
        (pipe.client.version(), pipe.server.version()),
        (QUIC_V2, QUIC_V2)
    );
    let seen = seen.borrow();
    assert!(seen.iter().any(|(_, ty, _)| *ty == Type::Handshake));
    assert!(seen.iter().all(|(_, _, v)| *v == QUIC_V2), "{seen:?}");
    let vi = pipe
        .server
        .peer_tp
        .as_ref()
        .unwrap()
        .version_information
        .clone();
    assert_eq!(vi.unwrap().chosen_version, QUIC_V2);
}

#[test]
fn v1_client_moves_to_v2_with_a_server_that_prefers_it() {
    let mut client = client_config();
    client.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut server = server_config();
    server.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    let seen = watch(&mut pipe);
    pipe.handshake().unwrap();
    exchange(&mut pipe, 300_000);
    assert_eq!(
        (pipe.client.version(), pipe.server.version()),
        (QUIC_V2, QUIC_V2)
    );

    let seen = seen.borrow();
    // The client's first Initial is v1; everything the server sends is v2, and so is every
    // client Handshake packet.
    assert_eq!(seen[0], (Direction::ToServer, Type::Initial, QUIC_V1));
    for (dir, ty, v) in seen.iter() {
        if *dir == Direction::ToClient || *ty == Type::Handshake {
            assert_eq!(*v, QUIC_V2, "{dir:?} {ty:?}");
        }
    }
    assert!(seen.contains(&(Direction::ToClient, Type::Handshake, QUIC_V2)));
    // The client's Version Information offered both, chose v1; the server's chose v2.
    let client_vi = pipe
        .server
        .peer_tp
        .as_ref()
        .unwrap()
        .version_information
        .clone()
        .unwrap();
    assert_eq!(client_vi.chosen_version, QUIC_V1);
    // Listed by preference (RFC 9368 §5): v2 first.
    assert_eq!(client_vi.available_versions, vec![QUIC_V2, QUIC_V1]);
    let server_vi = pipe
        .client
        .peer_tp
        .as_ref()
        .unwrap()
        .version_information
        .clone()
        .unwrap();
    assert_eq!(server_vi.chosen_version, QUIC_V2);
}

#[test]
fn v1_client_moved_to_v2_updates_keys() {
    let mut client = client_config();
    client.set_compatible_versions(&[QUIC_V2]).unwrap();
    let mut server = server_config();
    server.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    assert_eq!(pipe.client.version(), QUIC_V2);
    key_updates(&mut pipe);
}

/// A request and its answer on stream `id`, both read.
fn ping_pong(pipe: &mut Pipe, id: u64) {
    let mut buf = [0u8; 32];
    assert_eq!(pipe.client.stream_send(id, b"request", true), Ok(7));
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(id))
        .unwrap();
    assert_eq!(pipe.server.stream_recv(id, &mut buf), Ok((7, true)));
    assert_eq!(pipe.server.stream_send(id, b"reply", true), Ok(5));
    pipe.run_until(Duration::from_secs(5), |p| p.client.stream_readable(id))
        .unwrap();
    assert_eq!(pipe.client.stream_recv(id, &mut buf), Ok((5, true)));
    pipe.run_until(Duration::from_secs(5), |p| {
        p.client.path_stats().bytes_in_flight == 0 && p.server.path_stats().bytes_in_flight == 0
    })
    .unwrap();
}

/// Four key updates, initiated by either side in turn, with data flowing in both directions
/// after each (RFC 9001 §6; the key update label is "quicv2 ku" in v2).
fn key_updates(pipe: &mut Pipe) {
    pipe.run_until(Duration::from_secs(5), |p| p.client.handshake_confirmed)
        .unwrap();
    for round in 0..4u64 {
        // Each side needs a packet of the current phase acknowledged first (RFC 9001 §6.5).
        ping_pong(pipe, 100 + round * 8);
        let initiator = if round % 2 == 0 {
            &mut pipe.client
        } else {
            &mut pipe.server
        };
        assert_eq!(initiator.initiate_key_update(), Ok(()), "round {round}");
        ping_pong(pipe, 104 + round * 8);
    }
    let (c, s) = (pipe.client.stats(), pipe.server.stats());
    assert_eq!((c.local_key_updates, c.peer_key_updates), (2, 2), "{c:?}");
    assert_eq!((s.local_key_updates, s.peer_key_updates), (2, 2), "{s:?}");
}

#[test]
fn key_update_in_v2() {
    let mut pipe = Pipe::new(&mut v2(client_config()), &mut v2(server_config())).unwrap();
    pipe.handshake().unwrap();
    key_updates(&mut pipe);
}

#[test]
fn v1_only_server_keeps_a_v1_v2_client_in_v1() {
    for server_versions in [&[][..], &[QUIC_V1][..]] {
        let mut client = client_config();
        client.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
        let mut server = server_config();
        server.set_compatible_versions(server_versions).unwrap();
        let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
        let seen = watch(&mut pipe);
        pipe.handshake().unwrap();
        exchange(&mut pipe, 50_000);
        assert_eq!(
            (pipe.client.version(), pipe.server.version()),
            (QUIC_V1, QUIC_V1)
        );
        assert!(seen.borrow().iter().all(|(_, _, v)| *v == QUIC_V1));
        key_updates(&mut pipe);
    }
}

#[test]
fn v1_client_without_v2_is_not_moved() {
    let mut server = server_config();
    server.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut pipe = Pipe::new(&mut client_config(), &mut server).unwrap();
    pipe.handshake().unwrap();
    assert_eq!(
        (pipe.client.version(), pipe.server.version()),
        (QUIC_V1, QUIC_V1)
    );
}

#[test]
fn server_takes_v2_clients_with_a_v1_config() {
    // A server configured for v1 still accepts a client that starts in v2.
    let mut pipe = Pipe::new(&mut v2(client_config()), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    assert_eq!(
        (pipe.client.version(), pipe.server.version()),
        (QUIC_V2, QUIC_V2)
    );
}

#[test]
fn compatible_versions_must_be_supported() {
    let mut c = client_config();
    assert_eq!(c.set_compatible_versions(&[2]), Err(Error::UnknownVersion));
    assert_eq!(
        c.set_compatible_versions(&[0x1a2a_3a4a]),
        Err(Error::UnknownVersion)
    );
    assert_eq!(
        c.set_compatible_versions(&[QUIC_V2, QUIC_V1, QUIC_V2]),
        Ok(())
    );
    assert_eq!(c.compatible_versions, vec![QUIC_V2, QUIC_V1]);
    assert!(Config::new(QUIC_V2).is_ok());
}

/// A v2 client whose Version Information was rewritten to claim v1 (as an attacker that
/// replayed a downgraded first flight would make it): the server closes with
/// VERSION_NEGOTIATION_ERROR (RFC 9368 §4).
#[test]
fn tampered_version_information_is_a_version_negotiation_error() {
    use crate::transport_params::VersionInformation;
    let mut pipe = Pipe::new(&mut v2(client_config()), &mut v2(server_config())).unwrap();
    pipe.client.local_tp.version_information = Some(VersionInformation {
        chosen_version: QUIC_V1,
        available_versions: vec![QUIC_V1],
    });
    let params = pipe.client.local_tp.encode_to_vec(false).unwrap();
    pipe.client.tls.set_transport_params(params).unwrap();
    let _ = pipe.handshake();
    pipe.run_until(Duration::from_secs(5), |p| p.server.local_error().is_some())
        .unwrap();
    assert_eq!(pipe.server.local_error().unwrap().error_code, 0x11);
    assert!(!pipe.server.is_established());
}

/// The client side of downgrade detection after a compatible switch: the server's Version
/// Information must name the version its packets use.
#[test]
fn client_checks_the_server_choice_after_a_switch() {
    use crate::transport_params::{TransportParams, VersionInformation};
    let mut client = client_config();
    client.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut server = server_config();
    server.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    let tp = |chosen| TransportParams {
        version_information: Some(VersionInformation {
            chosen_version: chosen,
            available_versions: vec![QUIC_V2, QUIC_V1],
        }),
        ..TransportParams::default()
    };
    assert!(pipe.client.check_version_information(&tp(QUIC_V2)).is_ok());
    let err = pipe
        .client
        .check_version_information(&tp(QUIC_V1))
        .unwrap_err();
    assert_eq!(err.error_code, 0x11);
}

#[test]
fn retry_in_v2() {
    let mut pipe = Pipe::new(&mut v2(client_config()), &mut v2(server_config())).unwrap();
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let hdr = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(hdr.version, QUIC_V2);
    let odcid = hdr.dcid.clone().into_owned();
    let new_scid = crate::ConnectionId::from_vec(vec![0x77; 16]);
    let token = b"v2 token".to_vec();
    let mut retry = vec![0u8; 256];
    let mut send_retry = |pipe: &mut Pipe, version| {
        let len = crate::retry(&hdr.scid, &odcid, &new_scid, &token, version, &mut retry).unwrap();
        let info = RecvInfo {
            from: pipe.server_addr,
            to: pipe.client_addr,
        };
        pipe.client
            .recv_at(&mut retry[..len], info, pipe.now)
            .unwrap();
    };
    // A Retry in another version than the client's is ignored (RFC 9369 §4.1).
    send_retry(&mut pipe, QUIC_V1);
    assert_eq!(pipe.client.destination_id(), odcid);
    send_retry(&mut pipe, QUIC_V2);
    assert_eq!(&pipe.client.destination_id()[..], &new_scid[..]);

    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    let next = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(
        (next.version, next.token.as_deref()),
        (QUIC_V2, Some(&token[..]))
    );
    pipe.server = crate::accept(
        &new_scid,
        Some(&odcid),
        pipe.server_addr,
        pipe.client_addr,
        &mut v2(server_config()),
    )
    .unwrap();
    let info = RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
    pipe.handshake().unwrap();
    assert_eq!(pipe.server.version(), QUIC_V2);
    exchange(&mut pipe, 20_000);
}

#[test]
fn resumption_with_zero_rtt_in_v2() {
    let mut client = v2(client_config());
    client.enable_early_data();
    let mut server = v2(server_config());
    server.enable_early_data();
    let mut first = Pipe::new(&mut client, &mut server).unwrap();
    first.handshake().unwrap();
    first
        .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    let session = first.client.session().unwrap().to_vec();

    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    let seen = watch(&mut pipe);
    pipe.client.set_session(&session).unwrap();
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    assert!(pipe.client.is_in_early_data());
    assert_eq!(pipe.client.stream_send(0, b"early v2 data", true), Ok(13));
    let info = RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    let mut buf = [0u8; 32];
    assert_eq!(pipe.server.stream_recv(0, &mut buf), Ok((13, true)));
    pipe.handshake().unwrap();
    assert!(pipe.client.is_resumed() && pipe.server.is_resumed());
    let seen = seen.borrow();
    assert!(
        seen.contains(&(Direction::ToServer, Type::ZeroRTT, QUIC_V2)),
        "{seen:?}"
    );
    assert!(seen.iter().all(|(_, _, v)| *v == QUIC_V2));
}

#[test]
fn version_negotiation_lists_v1_and_v2() {
    assert!(crate::version_is_supported(QUIC_V2));
    let mut out = [0u8; 128];
    let cid = crate::ConnectionId::from_ref(&[1, 2, 3, 4]);
    let len = crate::negotiate_version(&cid, &cid, &mut out).unwrap();
    let hdr = crate::Header::from_slice(&mut out[..len], 4).unwrap();
    let versions = hdr.versions.unwrap();
    assert_eq!(&versions[..2], &[QUIC_V1, QUIC_V2]);
}

#[cfg(feature = "qlog")]
mod qlog {
    use std::sync::{Arc, Mutex};

    use super::*;

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

    fn events(buf: &SharedBuf, name: &str) -> Vec<serde_json::Value> {
        let bytes = buf.0.lock().unwrap().clone();
        bytes
            .split(|&b| b == 0x1e)
            .filter(|r| !r.iter().all(u8::is_ascii_whitespace))
            .map(|r| serde_json::from_slice::<serde_json::Value>(r).unwrap())
            .filter(|r| r["name"] == name)
            .map(|r| r["data"].clone())
            .collect()
    }

    /// The versions of the long headers of `packet_sent` events, by packet type.
    fn sent_versions(buf: &SharedBuf, ty: &str) -> Vec<String> {
        events(buf, "transport:packet_sent")
            .iter()
            .filter(|d| d["header"]["packet_type"] == ty)
            .map(|d| {
                d["header"]["version"]
                    .as_str()
                    .unwrap_or("none")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn qlog_shows_the_move_to_v2() {
        let mut client = client_config();
        client.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
        let mut server = server_config();
        server.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
        let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
        let (c, s) = (SharedBuf::default(), SharedBuf::default());
        pipe.client
            .set_qlog(Box::new(c.clone()), "client".into(), "v2".into());
        pipe.server
            .set_qlog(Box::new(s.clone()), "server".into(), "v2".into());
        pipe.handshake().unwrap();

        let client_initials = sent_versions(&c, "initial");
        assert_eq!(client_initials[0], "00000001");
        assert!(sent_versions(&c, "handshake")
            .iter()
            .all(|v| v == "6b3343cf"));
        let server_initials = sent_versions(&s, "initial");
        assert!(!server_initials.is_empty());
        assert!(server_initials.iter().all(|v| v == "6b3343cf"));
        assert!(sent_versions(&s, "handshake")
            .iter()
            .all(|v| v == "6b3343cf"));
        // 1-RTT headers carry no version.
        assert!(sent_versions(&s, "1RTT").iter().all(|v| v == "none"));

        for (log, side) in [(&s, "server"), (&c, "client")] {
            let vi = events(log, "transport:version_information");
            assert_eq!(vi.len(), 1, "{side}");
            assert_eq!(vi[0]["chosen_version"], "6b3343cf", "{side}");
            assert_eq!(
                vi[0]["client_versions"],
                serde_json::json!(["6b3343cf", "00000001"]),
                "{side}"
            );
        }
    }
}

/// A v1 client resuming with 0-RTT is moved to v2: its 0-RTT packets are in v1, so the server
/// rejects 0-RTT (RFC 9368 §7.3) and the client sends the data again in 1-RTT, in v2.
#[test]
fn zero_rtt_of_a_client_moved_to_v2_is_rejected_and_resent() {
    let mut client = client_config();
    client.enable_early_data();
    client.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut server = server_config();
    server.enable_early_data();
    server.set_compatible_versions(&[QUIC_V2, QUIC_V1]).unwrap();
    let mut first = Pipe::new(&mut client, &mut server).unwrap();
    first.handshake().unwrap();
    assert_eq!(first.client.version(), QUIC_V2);
    first
        .run_until(Duration::from_secs(5), |p| p.client.session().is_some())
        .unwrap();
    let session = first.client.session().unwrap().to_vec();

    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    let seen = watch(&mut pipe);
    pipe.client.set_session(&session).unwrap();
    let mut out = vec![0u8; 1500];
    let (n, _) = pipe.client.send_at(&mut out, pipe.now).unwrap();
    assert!(pipe.client.is_in_early_data());
    assert_eq!(pipe.client.stream_send(0, b"early data", true), Ok(10));
    let info = RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.server.recv_at(&mut out[..n], info, pipe.now).unwrap();
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(5), |p| p.server.stream_readable(0))
        .unwrap();
    let mut buf = [0u8; 32];
    assert_eq!(pipe.server.stream_recv(0, &mut buf), Ok((10, true)));
    assert_eq!(
        (pipe.client.version(), pipe.server.version()),
        (QUIC_V2, QUIC_V2)
    );
    assert!(pipe.client.is_resumed());
    assert!(!pipe.client.tls.is_early_data_accepted());
    let seen = seen.borrow();
    // The 0-RTT packets stayed in v1 (RFC 9369 §4.1).
    assert!(
        seen.contains(&(Direction::ToServer, Type::ZeroRTT, QUIC_V1)),
        "{seen:?}"
    );
    assert!(!seen
        .iter()
        .any(|(_, ty, v)| *ty == Type::ZeroRTT && *v == QUIC_V2));
}
