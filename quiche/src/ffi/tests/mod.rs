//! Tests of the translation helpers and of argument checking; the C programs in
//! quiche/examples (run by tools/ffi-check.sh) test the API end to end.
#![allow(unsafe_code)]

use super::conn::*;
use super::stream::*;
use super::*;

fn roundtrip(addr: SocketAddr) -> SocketAddr {
    let mut storage = zeroed_storage();
    let len = std_to_sockaddr(&addr, &mut storage);
    let p: *const sockaddr_storage = &storage;
    // SAFETY: `storage` holds `len` initialized bytes.
    unsafe { sockaddr_to_std(p.cast(), len as usize) }.unwrap()
}

#[test]
fn socket_addresses_survive_the_c_layout() {
    for a in [
        "127.0.0.1:4433",
        "10.1.2.3:1",
        "[::1]:443",
        "[fe80::1%3]:8443",
    ] {
        let addr: SocketAddr = a.parse().unwrap();
        assert_eq!(roundtrip(addr), addr);
    }
    // The port and address are in network byte order in the C layout.
    let mut storage = zeroed_storage();
    let addr: SocketAddr = "1.2.3.4:258".parse().unwrap();
    std_to_sockaddr(&addr, &mut storage);
    let p: *const sockaddr_storage = &storage;
    // SAFETY: `storage` is at least as large as a sockaddr_in.
    let bytes = unsafe { slice::from_raw_parts(p.cast::<u8>(), size_of::<sockaddr_in>()) };
    assert_eq!(&bytes[2..8], &[1, 2, 1, 2, 3, 4]);
}

#[test]
fn short_or_foreign_socket_addresses_are_refused() {
    let mut storage = zeroed_storage();
    let addr: SocketAddr = "[::1]:443".parse().unwrap();
    let len = std_to_sockaddr(&addr, &mut storage);
    let p: *const sockaddr_storage = &storage;
    // SAFETY: every length passed is within `storage`.
    unsafe {
        assert!(sockaddr_to_std(p.cast(), len as usize - 1).is_none());
        assert!(sockaddr_to_std(ptr::null(), len as usize).is_none());
    }
    storage.ss_family = libc::AF_UNIX as sa_family_t;
    let p: *const sockaddr_storage = &storage;
    // SAFETY: as above.
    assert!(unsafe { sockaddr_to_std(p.cast(), len as usize) }.is_none());
}

#[test]
fn alpn_wire_format() {
    assert_eq!(
        parse_alpn_list(b"\x0ahq-interop\x02h3").unwrap(),
        vec![&b"hq-interop"[..], b"h3"]
    );
    assert!(parse_alpn_list(b"\x05hq").is_none());
    assert_eq!(parse_alpn_list(b"").unwrap().len(), 0);
}

#[test]
fn send_times_land_on_the_monotonic_clock() {
    #[allow(clippy::disallowed_methods)]
    let now = Instant::now();
    let at = instant_to_timespec(now + std::time::Duration::from_millis(250));
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0);
    let ahead = (i128::from(at.tv_sec) - i128::from(ts.tv_sec)) * NANOS_PER_SEC
        + i128::from(at.tv_nsec)
        - i128::from(ts.tv_nsec);
    assert!((200_000_000..=250_000_000).contains(&ahead), "{ahead}");
    assert!((0..NANOS_PER_SEC).contains(&i128::from(at.tv_nsec)));
}

#[test]
fn header_info_reads_a_version_negotiation_packet() {
    let mut pkt = [0u8; 128];
    let scid = [1u8; 8];
    let dcid = [2u8; 16];
    // SAFETY: every buffer is valid for the length passed with it.
    let n = unsafe {
        quiche_negotiate_version(
            scid.as_ptr(),
            scid.len(),
            dcid.as_ptr(),
            dcid.len(),
            pkt.as_mut_ptr(),
            pkt.len(),
        )
    };
    assert!(n > 0);
    let (mut version, mut ty) = (7u32, 0u8);
    let (mut s, mut d, mut t) = ([0u8; 20], [0u8; 20], [0u8; 4]);
    let (mut s_len, mut d_len, mut t_len) = (s.len(), d.len(), t.len());
    // SAFETY: as above.
    let rc = unsafe {
        quiche_header_info(
            pkt.as_ptr(),
            n as usize,
            16,
            &mut version,
            &mut ty,
            s.as_mut_ptr(),
            &mut s_len,
            d.as_mut_ptr(),
            &mut d_len,
            t.as_mut_ptr(),
            &mut t_len,
        )
    };
    assert_eq!(rc, 0);
    assert_eq!((version, ty, t_len), (0, 6, 0));
    // The answer swaps the IDs: its DCID is the SCID it answers.
    assert_eq!(&d[..d_len], &scid);
    assert_eq!(&s[..s_len], &dcid);

    // Output buffers that are too small are an error, not an overflow.
    let mut d_len = 4;
    // SAFETY: as above (capacity 4 of 20).
    let rc = unsafe {
        quiche_header_info(
            pkt.as_ptr(),
            n as usize,
            16,
            &mut version,
            &mut ty,
            s.as_mut_ptr(),
            &mut s_len,
            d.as_mut_ptr(),
            &mut d_len,
            t.as_mut_ptr(),
            &mut t_len,
        )
    };
    assert_eq!(rc, Error::BufferTooShort.to_c());
}

#[test]
fn null_arguments_are_errors() {
    // SAFETY: NULL is what is being tested; nothing else is passed.
    unsafe {
        assert!(quiche_conn_readable(ptr::null()).is_null());
        assert_eq!(quiche_conn_timeout_as_nanos(ptr::null()), u64::MAX);
        assert_eq!(
            quiche_conn_send(ptr::null_mut(), ptr::null_mut(), 0, ptr::null_mut()),
            invalid_ssize()
        );
        assert_eq!(
            quiche_config_set_application_protos(ptr::null_mut(), ptr::null(), 0),
            invalid()
        );
    }
    let config = quiche_config_new(crate::PROTOCOL_VERSION);
    assert!(!config.is_null());
    // SAFETY: `config` is live until freed at the end; NULL buffers go with length 4.
    unsafe {
        assert_eq!(
            quiche_config_set_application_protos(config, ptr::null(), 4),
            invalid()
        );
        assert_eq!(
            quiche_config_set_application_protos(config, b"\x02h3".as_ptr(), 3),
            0
        );
        quiche_config_free(config);
    }
}

#[test]
fn slow_start_strategy_from_c() {
    let config = quiche_config_new(crate::PROTOCOL_VERSION);
    assert!(!config.is_null());
    // SAFETY: `config` is live until freed at the end; NULL is ignored.
    unsafe {
        quiche_config_set_slow_start(ptr::null_mut(), 2);
        let strategy = |c: *mut crate::Config| (*c).cc_config(1200).strategy();
        quiche_config_set_slow_start(config, 2);
        assert_eq!(strategy(config), crate::SlowStartStrategy::Search);
        // Out of range: ignored.
        quiche_config_set_slow_start(config, 7);
        assert_eq!(strategy(config), crate::SlowStartStrategy::Search);
        quiche_config_enable_hystart(config, false);
        assert_eq!(strategy(config), crate::SlowStartStrategy::Standard);
        quiche_config_set_slow_start(config, 1);
        assert_eq!(strategy(config), crate::SlowStartStrategy::HyStartPlusPlus);
        quiche_config_set_slow_start(config, 0);
        assert_eq!(strategy(config), crate::SlowStartStrategy::Standard);
        quiche_config_free(config);
    }
}

#[test]
fn c_api_knows_quic_v2_but_defaults_to_v1() {
    // QUICHE_PROTOCOL_VERSION stays version 1; QUIC v2 (RFC 9369) is supported beside it.
    assert_eq!(crate::PROTOCOL_VERSION, 1);
    assert!(quiche_version_is_supported(1));
    assert!(quiche_version_is_supported(0x6b33_43cf));
    assert!(!quiche_version_is_supported(0x1a2a_3a4a));
    let config = quiche_config_new(0x6b33_43cf);
    assert!(!config.is_null());
    // SAFETY: the pointer was just returned by quiche_config_new and is freed once.
    unsafe { quiche_config_free(config) };
}

#[test]
fn cc_algorithm_values_and_names_are_quiches() {
    use crate::CongestionControlAlgorithm as A;
    let config = quiche_config_new(crate::PROTOCOL_VERSION);
    assert!(!config.is_null());
    // SAFETY: `config` is live until freed at the end; the names are NUL-terminated.
    unsafe {
        quiche_config_set_cc_algorithm(config, 4);
        assert_eq!((*config).cc_algorithm, A::Bbr, "QUICHE_CC_BBR2_GCONGESTION");
        quiche_config_set_cc_algorithm(config, 77);
        assert_eq!(
            (*config).cc_algorithm,
            A::Bbr,
            "out-of-range values are ignored"
        );
        quiche_config_set_cc_algorithm(config, 1);
        assert_eq!((*config).cc_algorithm, A::CUBIC);
        assert_eq!(
            quiche_config_set_cc_algorithm_name(config, c"bbr2".as_ptr()),
            0
        );
        assert_eq!((*config).cc_algorithm, A::Bbr);
        quiche_config_free(config);
    }
}

#[test]
fn migration_functions_check_their_arguments_and_state() {
    use super::path::*;
    let config = quiche_config_new(crate::PROTOCOL_VERSION);
    assert!(!config.is_null());
    // A client offers ALPN: without it BoringSSL builds no ClientHello (as with quiche).
    // SAFETY: `config` is live; the buffer is 3 readable bytes.
    let rc = unsafe { quiche_config_set_application_protos(config, b"\x02h3".as_ptr(), 3) };
    assert_eq!(rc, 0);
    let mut local = zeroed_storage();
    let mut peer = zeroed_storage();
    let mut other = zeroed_storage();
    let local_len = std_to_sockaddr(&"127.0.0.1:1000".parse().unwrap(), &mut local) as socklen_t;
    let peer_len = std_to_sockaddr(&"127.0.0.1:443".parse().unwrap(), &mut peer) as socklen_t;
    let other_len = std_to_sockaddr(&"127.0.0.2:1000".parse().unwrap(), &mut other) as socklen_t;
    let (l, p, o): (*const sockaddr, *const sockaddr, *const sockaddr) = (
        (&local as *const sockaddr_storage).cast(),
        (&peer as *const sockaddr_storage).cast(),
        (&other as *const sockaddr_storage).cast(),
    );
    // SAFETY: every pointer is NULL or points to live storage of the given length; `conn`
    // and `config` are live until freed at the end.
    unsafe {
        assert_eq!(
            quiche_conn_probe_path(ptr::null_mut(), l, local_len, p, peer_len, ptr::null_mut()),
            invalid()
        );
        let scid = [7u8; 16];
        let conn = quiche_connect(
            ptr::null(),
            scid.as_ptr(),
            scid.len(),
            l,
            local_len,
            p,
            peer_len,
            config,
        );
        assert!(!conn.is_null());
        assert_eq!(
            quiche_conn_is_path_validated(conn, l, local_len as usize, p, peer_len as usize),
            1
        );
        assert_eq!(
            quiche_conn_is_path_validated(conn, o, other_len as usize, p, peer_len as usize),
            invalid()
        );
        let mut seq = 99u64;
        // Before the handshake is confirmed nobody migrates.
        assert_eq!(
            quiche_conn_migrate_source(conn, o, other_len, &mut seq),
            invalid()
        );
        assert_eq!(
            quiche_conn_migrate(conn, o, other_len, p, peer_len, &mut seq),
            invalid()
        );
        assert_eq!(seq, 99);
        assert_eq!(
            quiche_conn_migrate_source(conn, ptr::null(), 0, &mut seq),
            invalid()
        );
        // The first flight goes out on the only path; an unknown one is refused.
        let mut out = [0u8; 1500];
        let mut info: CSendInfo = std::mem::zeroed();
        let n = quiche_conn_send_on_path(
            conn,
            out.as_mut_ptr(),
            out.len(),
            l,
            local_len,
            ptr::null(),
            0,
            &mut info,
        );
        assert!(n >= 1200, "{n}");
        let n = quiche_conn_send_on_path(
            conn,
            out.as_mut_ptr(),
            out.len(),
            o,
            other_len,
            ptr::null(),
            0,
            &mut info,
        );
        assert_eq!(n, invalid_ssize());
        quiche_conn_free(conn);
        quiche_config_free(config);
    }
}

#[test]
fn path_events_and_path_iterators_from_c() {
    use super::path::*;
    use crate::path::PathEvent;
    let a: SocketAddr = "127.0.0.1:1000".parse().unwrap();
    let b: SocketAddr = "[::1]:443".parse().unwrap();
    let mut local = zeroed_storage();
    let mut peer = zeroed_storage();
    let (mut local_len, mut peer_len): (socklen_t, socklen_t) = (0, 0);
    let p: *const sockaddr = (&local as *const sockaddr_storage).cast();
    // SAFETY: the events are live until freed; the out pointers point to live storage.
    unsafe {
        let ev = Box::into_raw(Box::new(PathEvent::PeerMigrated(a, b)));
        assert_eq!(quiche_path_event_type(ev), 5);
        // Another type's accessor writes nothing.
        quiche_path_event_new(ev, &mut local, &mut local_len, &mut peer, &mut peer_len);
        assert_eq!(local_len, 0);
        quiche_path_event_peer_migrated(ev, &mut local, &mut local_len, &mut peer, &mut peer_len);
        assert_eq!(sockaddr_to_std(p, local_len as usize), Some(a));
        let q: *const sockaddr = (&peer as *const sockaddr_storage).cast();
        assert_eq!(sockaddr_to_std(q, peer_len as usize), Some(b));
        quiche_path_event_free(ev);
        assert_eq!(quiche_path_event_type(ptr::null()), -1);
        quiche_path_event_free(ptr::null_mut());
        assert!(quiche_conn_path_event_next(ptr::null_mut()).is_null());

        // The peers of a client's only path.
        let config = quiche_config_new(crate::PROTOCOL_VERSION);
        let mut l = zeroed_storage();
        let mut r = zeroed_storage();
        let l_len = std_to_sockaddr(&a, &mut l);
        let r_len = std_to_sockaddr(&b, &mut r);
        let (lp, rp): (*const sockaddr, *const sockaddr) = (
            (&l as *const sockaddr_storage).cast(),
            (&r as *const sockaddr_storage).cast(),
        );
        let scid = [3u8; 16];
        let conn = quiche_connect(
            ptr::null(),
            scid.as_ptr(),
            scid.len(),
            lp,
            l_len,
            rp,
            r_len,
            config,
        );
        assert!(!conn.is_null());
        assert!(quiche_conn_path_event_next(conn).is_null());
        let iter = quiche_conn_paths_iter(conn, lp, l_len as usize);
        assert!(!iter.is_null());
        // quiche.h's length is a size_t: all of it is written, whatever it held.
        let mut iter_len: libc::size_t = usize::MAX;
        assert!(quiche_socket_addr_iter_next(iter, &mut peer, &mut iter_len));
        assert_eq!(iter_len, std::mem::size_of::<libc::sockaddr_in6>());
        let q: *const sockaddr = (&peer as *const sockaddr_storage).cast();
        assert_eq!(sockaddr_to_std(q, iter_len), Some(b));
        assert!(!quiche_socket_addr_iter_next(
            iter,
            &mut peer,
            &mut iter_len
        ));
        quiche_socket_addr_iter_free(iter);
        assert!(quiche_conn_paths_iter(conn, ptr::null(), 0).is_null());
        quiche_conn_free(conn);
        quiche_config_free(config);
    }
}

#[test]
fn varints_round_trip_through_the_c_helpers() {
    let mut buf = [0u8; 8];
    for (v, len) in [
        (0u64, 1),
        (63, 1),
        (15_293, 2),
        (494_878_333, 4),
        ((1 << 62) - 1, 8),
    ] {
        // SAFETY: `buf` is writable and readable for its length; `out` is writable.
        unsafe {
            assert_eq!(super::tuning::quiche_put_varint(buf.as_mut_ptr(), 8, v), 0);
            let mut out = 0;
            assert_eq!(
                super::tuning::quiche_get_varint(buf.as_ptr(), 8, &mut out),
                len
            );
            assert_eq!(out, v);
        }
    }
    let too_short = Error::BufferTooShort.to_c();
    // SAFETY: as above; lengths never exceed the buffer.
    unsafe {
        assert_eq!(
            super::tuning::quiche_put_varint(buf.as_mut_ptr(), 1, 64),
            too_short
        );
        assert_eq!(
            super::tuning::quiche_put_varint(buf.as_mut_ptr(), 8, 1 << 62),
            too_short
        );
        let mut out = 0;
        assert_eq!(
            super::tuning::quiche_get_varint(buf.as_ptr(), 0, &mut out),
            too_short as ssize_t
        );
    }
}
