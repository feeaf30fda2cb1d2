//! Batched sends and receives over loopback, against plain sockets and each other.

use std::net::UdpSocket;
use std::time::Duration;

use super::*;

/// The running kernel's version, `(major, minor)`.
fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Whether GSO and GRO are on for `io`. They may be missing only before Linux 5.0 (GSO came
/// in 4.18, GRO in 5.0): there the GSO/GRO tests skip, saying so; on any later kernel a
/// failed probe fails the test instead of skipping it.
fn gso_gro_or_skip(io: &UdpIo) -> bool {
    if kernel_version() >= (5, 0) {
        assert!(io.gso(), "GSO probe failed on Linux {:?}", kernel_version());
        assert!(io.gro(), "GRO refused on Linux {:?}", kernel_version());
    }
    if !(io.gso() && io.gro()) {
        eprintln!("skipped: Linux {:?} refuses UDP GSO/GRO", kernel_version());
        return false;
    }
    true
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn plain_receiver() -> UdpSocket {
    let socket = UdpSocket::bind(loopback()).unwrap();
    // Room for every datagram a test sends before reading.
    crate::socket::set_buffer_sizes(&socket, 1 << 20);
    socket
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    socket
}

/// `n` datagrams: `segment` bytes each but the last, `last` bytes; byte `i` of datagram `d`
/// is `d * 7 + i` (mod 256), so that order and boundaries show.
fn pattern(n: usize, segment: usize, last: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    for d in 0..n {
        let len = if d + 1 == n { last } else { segment };
        buf.extend((0..len).map(|i| (d * 7 + i) as u8));
    }
    buf
}

/// Reads datagrams from `socket` until `n` arrived (each recv waits up to 2 s).
fn read_plain(socket: &UdpSocket, n: usize) -> Vec<Vec<u8>> {
    let mut buf = [0u8; 65536];
    (0..n)
        .map(|_| {
            let (len, _) = socket.recv_from(&mut buf).expect("datagram missing");
            buf[..len].to_vec()
        })
        .collect()
}

/// Receives with `io` until `n` datagrams arrived; returns them, and how many buffers
/// (messages) carried them.
fn read_batched(io: &mut UdpIo, n: usize) -> (Vec<Vec<u8>>, usize, SocketAddr) {
    let mut batch = RecvBatch::new();
    let mut datagrams = Vec::new();
    let mut messages = 0;
    let mut from = None;
    for _ in 0..2000 {
        if datagrams.len() >= n {
            break;
        }
        match io.recv(&mut batch) {
            Ok(k) => {
                for i in 0..k {
                    let m = batch.message(i).expect("message");
                    from = Some(m.from);
                    messages += 1;
                    datagrams.extend(m.datagrams().map(|d| d.to_vec()));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("recv: {e}"),
        }
    }
    assert_eq!(datagrams.len(), n, "datagrams received");
    (datagrams, messages, from.unwrap())
}

fn expected(n: usize, segment: usize, last: usize) -> Vec<Vec<u8>> {
    let buf = pattern(n, segment, last);
    buf.chunks(segment).map(<[u8]>::to_vec).collect()
}

#[test]
fn a_gso_send_arrives_as_separate_datagrams_at_a_plain_receiver() {
    let mut io = UdpIo::bind(loopback(), false).unwrap();
    if !gso_gro_or_skip(&io) {
        return;
    }
    let receiver = plain_receiver();
    let to = receiver.local_addr().unwrap();
    let buf = pattern(10, 1200, 345);
    let sent = io.transmit(Segments {
        buf: &buf,
        segment: 1200,
        to,
        ecn: 0,
    });
    assert_eq!(sent, 10);
    assert!(io.gso(), "GSO stays on after a good send");
    let got = read_plain(&receiver, 10);
    assert_eq!(got, expected(10, 1200, 345));
    let sizes: Vec<usize> = got.iter().map(Vec::len).collect();
    assert_eq!(sizes, [&[1200; 9][..], &[345]].concat());
}

#[test]
fn a_gro_receiver_splits_coalesced_datagrams() {
    let mut sender = UdpIo::bind(loopback(), false).unwrap();
    let mut receiver = UdpIo::bind(loopback(), false).unwrap();
    if !(gso_gro_or_skip(&sender) && gso_gro_or_skip(&receiver)) {
        return;
    }
    let to = receiver.local_addr().unwrap();
    // Over loopback a GSO send reaches a GRO socket as one buffer with its segment size.
    let buf = pattern(20, 1350, 1350);
    assert_eq!(
        sender.transmit(Segments {
            buf: &buf,
            segment: 1350,
            to,
            ecn: 0,
        }),
        20
    );
    let buf = pattern(5, 1000, 10);
    assert_eq!(
        sender.transmit(Segments {
            buf: &buf,
            segment: 1000,
            to,
            ecn: 0,
        }),
        5
    );
    let (got, messages, from) = read_batched(&mut receiver, 25);
    assert_eq!(from, sender.local_addr().unwrap());
    assert_eq!(messages, 2, "one coalesced buffer per GSO send");
    let mut want = expected(20, 1350, 1350);
    want.extend(expected(5, 1000, 10));
    assert_eq!(got, want);
}

#[test]
fn a_gro_receiver_takes_plain_datagrams_one_per_buffer_several_per_call() {
    let mut receiver = UdpIo::bind(loopback(), false).unwrap();
    if !gso_gro_or_skip(&receiver) {
        return;
    }
    let to = receiver.local_addr().unwrap();
    let plain = UdpSocket::bind(loopback()).unwrap();
    let want: Vec<Vec<u8>> = (0..40).map(|i| vec![i as u8; 100 + i]).collect();
    for d in &want {
        plain.send_to(d, to).unwrap();
    }
    // Loopback delivers synchronously: all 40 wait, and one call fills every buffer.
    let mut batch = RecvBatch::new();
    assert_eq!(receiver.recv(&mut batch).unwrap(), RECV_SLOTS);
    let mut got = Vec::new();
    for i in 0..RECV_SLOTS {
        let m = batch.message(i).unwrap();
        assert_eq!(m.from, plain.local_addr().unwrap());
        assert_eq!(m.segment, m.buf.len(), "a lone datagram is its own segment");
        got.extend(m.datagrams().map(|d| d.to_vec()));
    }
    assert!(batch.message(RECV_SLOTS).is_none());
    let (rest, messages, _) = read_batched(&mut receiver, 40 - RECV_SLOTS);
    assert_eq!(messages, 40 - RECV_SLOTS);
    got.extend(rest);
    assert_eq!(got, want);
}

#[test]
fn without_gso_batches_go_out_with_sendmmsg_and_come_in_with_recvmmsg() {
    let mut sender = UdpIo::bind(loopback(), true).unwrap();
    let mut receiver = UdpIo::bind(loopback(), true).unwrap();
    assert!(!sender.gso() && !sender.gro() && !receiver.gro());
    let to = receiver.local_addr().unwrap();
    let buf = pattern(30, 1350, 700);
    let sent = sender.transmit(Segments {
        buf: &buf,
        segment: 1350,
        to,
        ecn: 0,
    });
    assert_eq!(sent, 30);
    let (got, messages, _) = read_batched(&mut receiver, 30);
    assert_eq!(got, expected(30, 1350, 700));
    assert_eq!(messages, 30, "without GRO one datagram per buffer");
}

#[test]
fn a_gso_send_the_kernel_refuses_turns_gso_off_and_goes_out_singly() {
    let mut io = UdpIo::bind(loopback(), false).unwrap();
    if !gso_gro_or_skip(&io) {
        return;
    }
    let receiver = plain_receiver();
    let to = receiver.local_addr().unwrap();
    // More segments than the kernel's UDP_MAX_SEGMENTS (64 in older kernels, 128 in recent
    // ones): it answers EINVAL.
    let n = 150;
    let buf = pattern(n, 10, 10);
    let sent = io.transmit(Segments {
        buf: &buf,
        segment: 10,
        to,
        ecn: 0,
    });
    assert_eq!(sent, n);
    assert!(!io.gso(), "GSO is off after EINVAL");
    assert_eq!(read_plain(&receiver, n), expected(n, 10, 10));
    // Later batches go out with sendmmsg.
    let buf = pattern(3, 100, 100);
    assert_eq!(
        io.transmit(Segments {
            buf: &buf,
            segment: 100,
            to,
            ecn: 0,
        }),
        3
    );
    assert_eq!(read_plain(&receiver, 3), expected(3, 100, 100));
}

/// Receives with `io` until `n` datagrams arrived; returns the ECN codepoint of each.
fn read_ecn(io: &mut UdpIo, n: usize) -> Vec<u8> {
    let mut batch = RecvBatch::new();
    let mut codepoints = Vec::new();
    for _ in 0..2000 {
        if codepoints.len() >= n {
            break;
        }
        match io.recv(&mut batch) {
            Ok(k) => {
                for i in 0..k {
                    let m = batch.message(i).expect("message");
                    let ecn = m.ecn;
                    codepoints.extend(m.datagrams().map(|_| ecn));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("recv: {e}"),
        }
    }
    codepoints
}

#[test]
fn ecn_codepoints_survive_gso_gro_and_single_sends_on_both_families() {
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let addr: SocketAddr = addr.parse().unwrap();
        let Ok(mut sender) = UdpIo::bind(addr, false) else {
            // A machine without IPv6 loopback: the IPv4 round still ran.
            assert!(addr.is_ipv6(), "binding {addr}");
            continue;
        };
        let mut receiver = UdpIo::bind(addr, false).unwrap();
        assert!(receiver.ecn_recv(), "{addr}: TOS reporting refused");
        let to = receiver.local_addr().unwrap();
        // A GSO batch marked ECT(0), one unmarked datagram, then one marked CE.
        let buf = pattern(5, 1200, 1200);
        let batch = Segments {
            buf: &buf,
            segment: 1200,
            to,
            ecn: quiche::ECT0,
        };
        assert_eq!(sender.transmit(batch), 5);
        let one = pattern(1, 100, 100);
        for ecn in [0, 0b11] {
            let single = Segments {
                buf: &one,
                segment: 100,
                to,
                ecn,
            };
            assert_eq!(sender.transmit(single), 1);
        }
        let got = read_ecn(&mut receiver, 7);
        assert_eq!(got, [2, 2, 2, 2, 2, 0, 3], "{addr}");
    }
}
