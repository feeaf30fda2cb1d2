//! Tests of the relay: the impairment's statistics on their own, then real UDP sockets on
//! loopback through a relay thread (each bounded by socket read timeouts and a stop flag).

use super::*;
use std::net::UdpSocket as StdSocket;

fn long_packet(i: u32) -> Vec<u8> {
    let mut p = vec![0xc0u8, 0, 0, 0, 1];
    p.extend_from_slice(&i.to_be_bytes());
    p.resize(60, 0x5a);
    p
}

fn short_packet(i: u32) -> Vec<u8> {
    let mut p = long_packet(i);
    p[0] = 0x40;
    p
}

/// Impairs 100,000 datagrams at 30 % with a cap of 3 in a row and checks the rate and the
/// longest run of `kind`.
fn check_rate_and_burst_cap(imp: Impairment, kind: Verdict) {
    let mut j = Impairer::new(imp, false, 3, 7);
    let (mut hit, mut run, mut longest) = (0u32, 0u32, 0u32);
    for i in 0..100_000 {
        let v = j.judge(&long_packet(i));
        assert!(v == kind || v == Verdict::Forward, "{v:?}");
        if v == kind {
            hit += 1;
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    // With the cap of 3 the rate falls a little below 30 % (0.3^4 of the draws are forced
    // through); a broken generator or a missing cap would land far outside this band.
    assert!((27_000..31_000).contains(&hit), "{kind:?} {hit} of 100000");
    assert_eq!(longest, 3);
}

#[test]
fn drop_rate_and_burst_cap() {
    let imp = Impairment {
        drop_rate: 0.3,
        corrupt_rate: 0.0,
    };
    check_rate_and_burst_cap(imp, Verdict::Drop);
}

#[test]
fn corrupt_rate_and_burst_cap() {
    let imp = Impairment {
        drop_rate: 0.0,
        corrupt_rate: 0.3,
    };
    check_rate_and_burst_cap(imp, Verdict::Corrupt);
}

/// The cap counts drops and corruptions together: with both at 30 % no more than 3
/// datagrams in a row are impaired.
#[test]
fn burst_cap_counts_drops_and_corruptions_together() {
    let imp = Impairment {
        drop_rate: 0.3,
        corrupt_rate: 0.3,
    };
    let mut j = Impairer::new(imp, false, 3, 11);
    let (mut run, mut longest, mut kinds) = (0u32, 0u32, [0u32; 2]);
    for i in 0..100_000 {
        match j.judge(&long_packet(i)) {
            Verdict::Forward => run = 0,
            v => {
                kinds[usize::from(v == Verdict::Corrupt)] += 1;
                run += 1;
                longest = longest.max(run);
            }
        }
    }
    assert_eq!(longest, 3);
    assert!(kinds[0] > 10_000 && kinds[1] > 10_000, "{kinds:?}");
}

#[test]
fn same_seed_same_choices_and_directions_differ() {
    let imp = Impairment {
        drop_rate: 0.5,
        corrupt_rate: 0.2,
    };
    let run = |seed| {
        let mut j = Impairer::new(imp.clone(), false, 0, seed);
        (0..200)
            .map(|i| j.judge(&long_packet(i)))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn long_header_only_spares_short_headers() {
    let imp = Impairment {
        drop_rate: 1.0,
        corrupt_rate: 1.0,
    };
    let mut j = Impairer::new(imp, true, 0, 3);
    for i in 0..100 {
        assert_eq!(j.judge(&short_packet(i)), Verdict::Forward);
        assert_eq!(j.judge(&long_packet(i)), Verdict::Drop);
    }
}

#[test]
fn corruption_flips_one_byte_of_the_tag() {
    let mut j = Impairer::new(Impairment::default(), false, 0, 9);
    for i in 0..1000 {
        let orig = long_packet(i);
        let mut p = orig.clone();
        j.corrupt(&mut p);
        let diff: Vec<usize> = (0..p.len()).filter(|&k| p[k] != orig[k]).collect();
        assert_eq!(diff.len(), 1);
        assert!(
            diff[0] >= p.len() - 16,
            "flipped byte {} of {}",
            diff[0],
            p.len()
        );
    }
    // Datagrams shorter than a tag are still changed, never overrun.
    let mut tiny = vec![1u8, 2, 3];
    j.corrupt(&mut tiny);
    assert_ne!(tiny, vec![1u8, 2, 3]);
}

/// What the echo server saw: each datagram with its source address.
type Seen = Vec<(SocketAddr, Vec<u8>)>;

/// A server socket on loopback that echoes what it gets and records the source addresses.
fn echo_server() -> (SocketAddr, std::thread::JoinHandle<Seen>) {
    let s = StdSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    let addr = s.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = s.recv_from(&mut buf) {
            got.push((from, buf[..n].to_vec()));
            let _ = s.send_to(&buf[..n], from);
        }
        got
    });
    (addr, h)
}

/// Sends `n` long-header datagrams through the relay, `gap` apart, and collects the echoes.
fn client_run(relay: SocketAddr, n: u32, gap: Duration) -> Vec<Vec<u8>> {
    let c = StdSocket::bind("127.0.0.1:0").unwrap();
    c.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    let mut back = Vec::new();
    let mut buf = [0u8; 2048];
    for i in 0..n {
        c.send_to(&long_packet(i), relay).unwrap();
        std::thread::sleep(gap);
        while let Ok((k, _)) = c.recv_from(&mut buf) {
            back.push(buf[..k].to_vec());
        }
    }
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    while let Ok((k, _)) = c.recv_from(&mut buf) {
        back.push(buf[..k].to_vec());
    }
    back
}

#[test]
fn relays_drops_corrupts_and_counts_over_loopback() {
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    o.c2s = Impairment {
        drop_rate: 0.3,
        corrupt_rate: 0.2,
    };
    o.s2c = Impairment {
        drop_rate: 0.3,
        corrupt_rate: 0.0,
    };
    o.seed = 42;
    o.delay = Duration::from_millis(2);
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    let back = client_run(addr, 300, Duration::from_micros(300));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();

    assert_eq!(c.sessions, 1);
    assert_eq!(c.c2s.received, 300);
    assert_eq!(c.c2s.received_long, 300);
    assert_eq!(c.c2s.dropped + c.c2s.forwarded + c.c2s.send_errors, 300);
    assert!((60..120).contains(&c.c2s.dropped), "{c:?}");
    assert!(c.c2s.corrupted > 10, "{c:?}");
    // The server got exactly what the relay says it forwarded, and saw the corruption.
    assert_eq!(at_server.len() as u64, c.c2s.forwarded);
    let damaged = at_server
        .iter()
        .filter(|(_, p)| p[9..] != long_packet(0)[9..])
        .count();
    assert_eq!(damaged as u64, c.c2s.corrupted);
    // The way back: everything the server echoed passed through the relay.
    assert_eq!(c.s2c.received, c.c2s.forwarded);
    assert_eq!(back.len() as u64, c.s2c.forwarded);
    assert!(c.s2c.dropped > 0 && c.s2c.corrupted == 0, "{c:?}");
    // One client, no rebinding: one source address at the server.
    assert!(at_server.windows(2).all(|w| w[0].0 == w[1].0));
    assert!(c.report().contains(&format!(
        "c2s: received=300 received_long=300 forwarded={}",
        c.c2s.forwarded
    )));
}

#[test]
fn rebinds_the_source_port_on_schedule() {
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    o.rebind_port_every = Some(Duration::from_millis(150));
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    // About 0.6 s of traffic: three or four rebindings.
    let back = client_run(addr, 120, Duration::from_millis(5));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();

    let mut ports: Vec<u16> = at_server.iter().map(|(a, _)| a.port()).collect();
    ports.dedup();
    assert!(
        ports.len() >= 3,
        "source ports seen by the server: {ports:?}"
    );
    // Rebinding goes on while the echo server waits out its timeout, with no traffic to show.
    assert!(ports.len() as u64 <= c.rebinds + 1, "{ports:?} {c:?}");
    assert!(at_server
        .iter()
        .all(|(a, _)| a.ip() == IpAddr::from([127, 0, 0, 1])));
    // Answers to the current mapping still reach the client.
    assert_eq!(c.c2s.forwarded, 120);
    assert_eq!(back.len() as u64, c.s2c.forwarded);
    assert!(back.len() >= 115, "{} echoes came back", back.len());
}

#[test]
fn rebinds_the_source_port_at_byte_counts() {
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    // Each echo is 60 bytes: new ports after the 30th and the 70th.
    o.rebind_port_at_s2c_bytes = vec![70 * 60, 30 * 60];
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    let back = client_run(addr, 100, Duration::from_millis(5));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();

    let mut ports: Vec<u16> = at_server.iter().map(|(a, _)| a.port()).collect();
    ports.dedup();
    assert_eq!(ports.len(), 3, "source ports seen by the server: {ports:?}");
    assert_eq!(c.rebinds, 2, "{c:?}");
    // Only an echo in flight at a rebinding can be lost (to the old mapping).
    assert!(back.len() >= 98, "{} echoes came back", back.len());
}

#[test]
fn rebinds_the_source_address_once() {
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    o.rebind_addr_at = Some(Duration::from_millis(200));
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    let back = client_run(addr, 80, Duration::from_millis(5));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();

    let ips: Vec<IpAddr> = at_server.iter().map(|(a, _)| a.ip()).collect();
    let first_new = ips
        .iter()
        .position(|ip| *ip == IpAddr::from([127, 0, 0, 2]));
    let k = first_new.expect("the server never saw 127.0.0.2");
    assert!(
        k > 0
            && ips[..k]
                .iter()
                .all(|ip| *ip == IpAddr::from([127, 0, 0, 1]))
    );
    assert!(ips[k..]
        .iter()
        .all(|ip| *ip == IpAddr::from([127, 0, 0, 2])));
    assert_eq!(c.rebinds, 1);
    // The old upstream socket closes at the rebinding, as a NAT forgets its mapping: an echo
    // the server sent to it just before is lost (at most one, datagrams being 5 ms apart).
    assert!(
        (79..=80).contains(&back.len()),
        "{} echoes came back",
        back.len()
    );
}

#[test]
fn blackhole_and_drop_range() {
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    o.drop_c2s_range = Some((2, 7));
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    let back = client_run(addr, 20, Duration::from_millis(2));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();
    let seen: Vec<u32> = at_server
        .iter()
        .map(|(_, p)| u32::from_be_bytes(p[5..9].try_into().unwrap()))
        .collect();
    assert_eq!(seen, [0].into_iter().chain(7..20).collect::<Vec<u32>>());
    assert_eq!((c.c2s.dropped, back.len()), (6, 14));

    // A black-out from 100 ms to 300 ms: nothing sent in it gets through.
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    o.blackhole_at = Some(Duration::from_millis(100));
    o.blackhole_for = Duration::from_millis(200);
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    let back = client_run(addr, 100, Duration::from_millis(5));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();
    let seen: Vec<u32> = at_server
        .iter()
        .map(|(_, p)| u32::from_be_bytes(p[5..9].try_into().unwrap()))
        .collect();
    // At most 40 of the 100 (200 ms at 5 ms or more apart) are lost, in one run.
    assert!((5..=40).contains(&c.c2s.dropped), "{c:?}");
    assert_eq!(seen.len() as u64, 100 - c.c2s.dropped);
    let gaps = seen.windows(2).filter(|w| w[1] != w[0] + 1).count();
    assert_eq!(gaps, 1, "{seen:?}");
    assert_eq!(*seen.last().unwrap(), 99);
    assert_eq!(back.len() as u64, c.s2c.forwarded);
}

#[test]
fn clock_from_first_datagram_delays_the_rebinding_for_a_late_client() {
    let (server, srv) = echo_server();
    let mut o = Options::transparent("127.0.0.1:0".parse().unwrap(), server);
    o.rebind_addr_at = Some(Duration::from_millis(200));
    o.clock_from_first_datagram = true;
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, relay) = spawn(o, Arc::clone(&stop)).unwrap();
    // The client starts after the relay's own 200 ms are over: from the relay's start, the
    // rebinding would come before its first datagram (and with no session, move nothing).
    std::thread::sleep(Duration::from_millis(400));
    let back = client_run(addr, 80, Duration::from_millis(5));
    let at_server = srv.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let c = relay.join().unwrap().unwrap();

    let ips: Vec<IpAddr> = at_server.iter().map(|(a, _)| a.ip()).collect();
    assert_eq!(ips.first(), Some(&IpAddr::from([127, 0, 0, 1])));
    assert_eq!(ips.last(), Some(&IpAddr::from([127, 0, 0, 2])));
    assert_eq!(c.rebinds, 1);
    // The old upstream socket closes at the rebinding, as a NAT forgets its mapping: an echo
    // the server sent to it just before is lost (at most one, datagrams being 5 ms apart).
    assert!(
        (79..=80).contains(&back.len()),
        "{} echoes came back",
        back.len()
    );
}
