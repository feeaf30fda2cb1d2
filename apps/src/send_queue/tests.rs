//! Which datagrams join a batch, pacing, burst limits and a full socket, with a scripted
//! datagram source and a recording socket; then the same path over a real loopback socket.

use std::collections::VecDeque;

use super::*;
use crate::udp::UdpIo;

const MAX: usize = 1350;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// One scripted datagram: its size, destination and due time.
#[derive(Clone, Copy, Debug)]
struct Item {
    len: usize,
    to: SocketAddr,
    at: Instant,
}

/// Hands out the scripted datagrams; each carries its sequence number in its first 4 bytes
/// (or as many as fit) and that number's low byte in the rest.
struct Script {
    items: VecDeque<Item>,
    next_id: u32,
    quantum: usize,
    calls: usize,
}

impl Script {
    fn new(items: impl IntoIterator<Item = Item>) -> Script {
        Script {
            items: items.into_iter().collect(),
            next_id: 0,
            quantum: usize::MAX,
            calls: 0,
        }
    }
}

fn stamp(out: &mut [u8], id: u32) {
    let bytes = id.to_be_bytes();
    for (i, b) in out.iter_mut().enumerate() {
        *b = bytes.get(i).copied().unwrap_or(id as u8);
    }
}

/// The sequence number `stamp` wrote (datagrams of 4 bytes or more).
fn id_of(datagram: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&datagram[..4]);
    u32::from_be_bytes(b)
}

impl DatagramSource for Script {
    fn next_datagram(
        &mut self,
        out: &mut [u8],
        _now: Instant,
    ) -> quiche::Result<(usize, SocketAddr, Instant, u8)> {
        self.calls += 1;
        let item = self.items.pop_front().ok_or(Error::Done)?;
        let dst = out.get_mut(..item.len).ok_or(Error::BufferTooShort)?;
        stamp(dst, self.next_id);
        self.next_id += 1;
        Ok((item.len, item.to, item.at, 0))
    }

    fn send_quantum(&self) -> usize {
        self.quantum
    }

    fn name(&self) -> String {
        "script".into()
    }
}

/// One batch as the socket saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    to: SocketAddr,
    sizes: Vec<usize>,
    ids: Vec<u32>,
}

/// Records batches; takes at most `room` datagrams (then the socket is "full").
struct Recorder {
    batches: Vec<Sent>,
    room: usize,
}

impl Recorder {
    fn new() -> Recorder {
        Recorder {
            batches: Vec::new(),
            room: usize::MAX,
        }
    }

    fn sizes(&self) -> Vec<Vec<usize>> {
        self.batches.iter().map(|b| b.sizes.clone()).collect()
    }

    fn ids(&self) -> Vec<u32> {
        self.batches.iter().flat_map(|b| b.ids.clone()).collect()
    }
}

impl Transmit for Recorder {
    fn transmit(&mut self, s: Segments<'_>) -> usize {
        let take = s.count().min(self.room);
        self.room -= take;
        if take > 0 {
            let datagrams: Vec<&[u8]> = s.datagrams().take(take).collect();
            self.batches.push(Sent {
                to: s.to,
                sizes: datagrams.iter().map(|d| d.len()).collect(),
                ids: datagrams.iter().map(|d| id_of(d)).collect(),
            });
        }
        take
    }
}

struct Harness {
    bufs: SendBuffers,
    queue: SendQueue,
    out: Recorder,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            bufs: SendBuffers::new(MAX),
            queue: SendQueue::new(),
            out: Recorder::new(),
        }
    }

    fn flush(&mut self, source: &mut Script, burst: usize, now: Instant) -> Flush {
        flush(
            source,
            &mut self.queue,
            &mut self.bufs,
            &mut self.out,
            burst,
            now,
        )
    }
}

fn items(sizes: &[usize], to: SocketAddr, at: Instant) -> Vec<Item> {
    sizes.iter().map(|&len| Item { len, to, at }).collect()
}

#[test]
fn datagrams_of_one_size_to_one_destination_share_a_batch() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut source = Script::new(items(&[1200; 5], addr(1), now));
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1200; 5]]);
    assert_eq!(h.out.ids(), [0, 1, 2, 3, 4]);
    assert!(h.queue.is_empty());
}

#[test]
fn a_shorter_datagram_ends_its_batch_and_a_longer_one_starts_the_next() {
    let mut h = Harness::new();
    let now = Instant::now();
    let sizes = [1200, 1200, 800, 1200, 300, 1350, 1350, 1000];
    let mut source = Script::new(items(&sizes, addr(1), now));
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(
        h.out.sizes(),
        [
            vec![1200, 1200, 800],
            vec![1200, 300],
            vec![1350, 1350, 1000]
        ]
    );
    assert_eq!(h.out.ids(), (0..8).collect::<Vec<_>>());
}

#[test]
fn a_small_first_datagram_sends_alone_when_a_larger_follows() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut source = Script::new(items(&[60, 1350, 1350], addr(1), now));
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![60], vec![1350, 1350]]);
}

#[test]
fn a_new_destination_starts_a_new_batch() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut list = items(&[1200, 1200], addr(1), now);
    list.extend(items(&[1200, 1200], addr(2), now));
    list.extend(items(&[1200], addr(1), now));
    let mut source = Script::new(list);
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    let to: Vec<SocketAddr> = h.out.batches.iter().map(|b| b.to).collect();
    assert_eq!(to, [addr(1), addr(2), addr(1)]);
    assert_eq!(h.out.sizes(), [vec![1200; 2], vec![1200; 2], vec![1200]]);
}

#[test]
fn the_send_quantum_caps_a_batch() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut source = Script::new(items(&[1200; 12], addr(1), now));
    source.quantum = 5 * 1200 + 100;
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1200; 5], vec![1200; 5], vec![1200; 2]]);
    // A quantum under one datagram still lets one datagram through per batch.
    let mut h = Harness::new();
    let mut source = Script::new(items(&[1200; 2], addr(1), now));
    source.quantum = 10;
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1200], vec![1200]]);
}

#[test]
fn the_kernel_limits_cap_a_batch() {
    // 64 segments at most.
    let mut h = Harness::new();
    let now = Instant::now();
    let mut source = Script::new(items(&[100; 150], addr(1), now));
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![100; 64], vec![100; 64], vec![100; 22]]);
    // Under 64 KiB: 48 datagrams of 1350 bytes (64,800 bytes; 49 would be 66,150).
    let mut h = Harness::new();
    let mut source = Script::new(items(&[1350; 100], addr(1), now));
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(
        h.out.sizes(),
        [vec![1350; 48], vec![1350; 48], vec![1350; 4]]
    );
    assert_eq!(h.out.ids(), (0..100).collect::<Vec<_>>());
}

#[test]
fn a_datagram_due_later_waits_and_stops_the_connection() {
    let mut h = Harness::new();
    let now = Instant::now();
    let later = now + Duration::from_secs(60);
    let mut list = items(&[1200, 1200], addr(1), now);
    list.extend(items(&[1200, 1200], addr(1), later));
    let mut source = Script::new(list);

    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Paced(later));
    assert_eq!(h.out.sizes(), [vec![1200; 2]]);
    assert_eq!((h.queue.len(), h.queue.next_at()), (1, Some(later)));
    assert_eq!(source.calls, 3);

    // While one waits, the connection is not asked for more.
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Paced(later));
    assert_eq!(h.out.batches.len(), 1);
    assert_eq!(source.calls, 3);

    // Once due, it opens the next batch and the one after it joins.
    assert_eq!(h.flush(&mut source, usize::MAX, later), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1200; 2], vec![1200; 2]]);
    assert_eq!(h.out.ids(), [0, 1, 2, 3]);
    assert!(h.queue.is_empty());
}

#[test]
fn datagrams_due_within_the_horizon_join_those_due_now() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut list = items(&[1200], addr(1), now);
    list.extend(items(&[1200], addr(1), now + PACING_HORIZON / 2));
    list.extend(items(&[1200], addr(1), now + PACING_HORIZON));
    list.extend(items(&[1200], addr(1), now + PACING_HORIZON * 2));
    let mut source = Script::new(list);
    let paced = h.flush(&mut source, usize::MAX, now);
    assert_eq!(paced, Flush::Paced(now + PACING_HORIZON * 2));
    assert_eq!(h.out.sizes(), [vec![1200; 3]]);
}

#[test]
fn the_burst_limit_hands_over_and_resumes() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut source = Script::new(items(&[1000; 10], addr(1), now));
    assert_eq!(h.flush(&mut source, 4, now), Flush::Burst);
    assert_eq!(h.out.sizes(), [vec![1000; 4]]);
    assert_eq!(h.flush(&mut source, 4, now), Flush::Burst);
    assert_eq!(h.flush(&mut source, 4, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1000; 4], vec![1000; 4], vec![1000; 2]]);
    // 10 datagrams, then one `Done`.
    assert_eq!(source.calls, 11);
    assert_eq!(h.out.ids(), (0..10).collect::<Vec<_>>());
}

#[test]
fn the_burst_limit_keeps_a_datagram_that_did_not_join() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut source = Script::new(items(&[1000, 1000, 500, 1000, 1000], addr(1), now));
    // The first batch ends with the short datagram; the burst (3) is used up by then.
    assert_eq!(h.flush(&mut source, 3, now), Flush::Burst);
    assert_eq!(h.out.sizes(), [vec![1000, 1000, 500]]);
    assert_eq!(h.flush(&mut source, 3, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1000, 1000, 500], vec![1000, 1000]]);
    assert_eq!(h.out.ids(), [0, 1, 2, 3, 4]);
}

#[test]
fn a_full_socket_keeps_the_rest_of_the_batch_for_later() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut list = items(&[1200; 5], addr(1), now);
    list.extend(items(&[1200, 1200], addr(2), now));
    let mut source = Script::new(list);
    h.out.room = 2;
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Blocked);
    assert_eq!(h.out.sizes(), [vec![1200; 2]]);
    // The refused three, and the datagram to the other destination that ended the batch.
    assert_eq!(h.queue.len(), 4);
    assert_eq!(source.calls, 6);

    // Still full: nothing moves, the connection is not asked.
    h.out.room = 0;
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Blocked);
    assert_eq!(source.calls, 6);

    h.out.room = usize::MAX;
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Idle);
    assert_eq!(h.out.sizes(), [vec![1200; 2], vec![1200; 3], vec![1200; 2]]);
    assert_eq!(h.out.ids(), (0..7).collect::<Vec<_>>());
    assert!(h.queue.is_empty());
    // The refused batch's buffer went back for reuse.
    assert_eq!(h.bufs.batches.len(), 1);
}

#[test]
fn clearing_a_queue_returns_its_buffers() {
    let mut h = Harness::new();
    let now = Instant::now();
    let mut list = items(&[1200; 3], addr(1), now);
    list.extend(items(&[1200], addr(1), now + Duration::from_secs(1)));
    let mut source = Script::new(list);
    h.out.room = 1;
    assert_eq!(h.flush(&mut source, usize::MAX, now), Flush::Blocked);
    h.out.room = usize::MAX;
    assert_eq!(
        h.flush(&mut source, usize::MAX, now),
        Flush::Paced(now + Duration::from_secs(1))
    );
    assert_eq!(h.queue.len(), 1);
    h.queue.clear(&mut h.bufs);
    assert!(h.queue.is_empty() && h.queue.next_at().is_none());
    assert_eq!(h.bufs.singles.len(), 1);
}

/// xorshift64*: deterministic pseudo-random numbers for the randomized test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Checks the rules every batch obeys.
fn check_batch(b: &Sent, quantum: usize) {
    let (first, rest) = b.sizes.split_first().expect("empty batch");
    assert!(b.sizes.len() <= GSO_MAX_SEGMENTS, "{b:?}");
    let total: usize = b.sizes.iter().sum();
    assert!(total <= GSO_MAX_BYTES, "{b:?}");
    assert!(b.sizes.len() == 1 || total <= quantum, "{b:?}");
    if let Some((last, middle)) = rest.split_last() {
        assert!(middle.iter().all(|s| s == first), "{b:?}");
        assert!(last <= first, "{b:?}");
    }
}

#[test]
fn random_traffic_is_sent_once_in_order_in_well_formed_batches() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let start = Instant::now();
        let mut at = start;
        let list: Vec<Item> = (0..2000)
            .map(|_| {
                // Mostly full-size datagrams, sometimes short ones; a few destinations;
                // due times creeping forward, sometimes past the horizon.
                let len = match rng.below(10) {
                    0 => 1 + rng.below(MAX as u64) as usize,
                    1 => 4 + rng.below(100) as usize,
                    _ => MAX,
                };
                let to = addr(1 + (rng.below(20) / 18) as u16);
                at += Duration::from_micros(rng.below(300));
                Item {
                    len: len.max(4),
                    to,
                    at,
                }
            })
            .collect();
        let mut source = Script::new(list);
        source.quantum = 4_000 + rng.below(80_000) as usize;
        let quantum = source.quantum.min(GSO_MAX_BYTES);
        let mut h = Harness::new();
        let mut now = start;
        for _ in 0..100_000 {
            h.out.room = if rng.below(4) == 0 {
                rng.below(5) as usize
            } else {
                usize::MAX
            };
            let burst = 1 + rng.below(100) as usize;
            match h.flush(&mut source, burst, now) {
                Flush::Idle if source.items.is_empty() && h.queue.is_empty() => break,
                Flush::Paced(t) => now = now.max(t),
                _ => now += Duration::from_micros(rng.below(500)),
            }
        }
        assert!(source.items.is_empty() && h.queue.is_empty(), "seed {seed}");
        assert_eq!(h.out.ids(), (0..2000).collect::<Vec<_>>(), "seed {seed}");
        for b in &h.out.batches {
            check_batch(b, quantum.max(MAX));
        }
        let batches = h.out.batches.len();
        assert!(
            batches < 1500,
            "seed {seed}: {batches} batches for 2000 datagrams"
        );
    }
}

#[test]
fn batches_reach_a_real_receiver_intact() {
    let mut io = UdpIo::bind(addr(0), false).unwrap();
    let receiver = std::net::UdpSocket::bind(addr(0)).unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let to = receiver.local_addr().unwrap();
    let now = Instant::now();
    let sizes = [1350, 1350, 1350, 900, 1350, 1350, 60];
    let mut source = Script::new(items(&sizes, to, now));
    let mut bufs = SendBuffers::new(MAX);
    let mut queue = SendQueue::new();
    let flushed = flush(&mut source, &mut queue, &mut bufs, &mut io, usize::MAX, now);
    assert_eq!(flushed, Flush::Idle);
    let mut buf = [0u8; 2048];
    for (id, &len) in sizes.iter().enumerate() {
        let (n, _) = receiver.recv_from(&mut buf).unwrap();
        assert_eq!(n, len);
        assert_eq!(id_of(&buf[..n]), id as u32);
    }
}
