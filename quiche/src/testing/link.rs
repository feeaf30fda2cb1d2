//! The parts of the link model that simulators share: a bottleneck that serialises datagrams
//! behind a drop-tail queue (with an optional AQM that marks ECN-CE above a threshold), and the datagrams in flight in order of arrival. [`super::Pipe`]
//! joins one client and one server with them; simulators of several connections on one path
//! (tools/netsim) build on the same pieces, so every simulator models a link the same way.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// The CE codepoint (RFC 3168 §5).
pub const CE: u8 = 0b11;

/// A bottleneck of a given rate with a drop-tail queue in front of it and a propagation delay
/// behind it. It only remembers when it finishes serialising what it has accepted; the rate,
/// queue and delay are passed in, so a link whose model changes mid-run stays consistent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bottleneck {
    busy_until: Option<Instant>,
}

impl Bottleneck {
    /// When a datagram of `len` bytes offered at `now` reaches the far end, or `None` when the
    /// queue (`queue_bytes`; `None` is unbounded) has no room for it. `rate_bps` is in bits per
    /// second of the bytes given; `None` is infinitely fast (no queue either).
    pub fn schedule(
        &mut self,
        now: Instant,
        len: usize,
        rate_bps: Option<u64>,
        queue_bytes: Option<usize>,
        delay: Duration,
    ) -> Option<Instant> {
        let Some(rate) = rate_bps else {
            return Some(now + delay);
        };
        let rate = rate.max(1) as f64;
        let start = self.busy_until.map_or(now, |b| b.max(now));
        if let Some(limit) = queue_bytes {
            let backlog = start.saturating_duration_since(now).as_secs_f64() * rate / 8.0;
            if backlog + len as f64 > limit as f64 {
                return None;
            }
        }
        let done = start + Duration::from_secs_f64(len as f64 * 8.0 / rate);
        self.busy_until = Some(done);
        Some(done + delay)
    }

    /// An AQM in front of the queue (RFC 3168 §5, §6.1.1): an ECN-capable datagram (`ecn` is
    /// ECT(0) or ECT(1)) offered at `now` while more than `ce_threshold` bytes wait is marked
    /// CE instead of being left to grow the queue until it drops. Returns the codepoint the
    /// datagram leaves with. `None` (or an infinitely fast link) marks nothing.
    pub fn ecn_mark(
        &self,
        now: Instant,
        ecn: u8,
        rate_bps: Option<u64>,
        ce_threshold: Option<usize>,
    ) -> u8 {
        let (Some(rate), Some(threshold)) = (rate_bps, ce_threshold) else {
            return ecn;
        };
        if ecn & 0b11 == 0 {
            // Not-ECT: the AQM leaves it to the drop-tail queue.
            return ecn;
        }
        let backlog = self.queue_delay(now).as_secs_f64() * rate.max(1) as f64 / 8.0;
        if backlog > threshold as f64 {
            CE
        } else {
            ecn
        }
    }

    /// How long a datagram offered at `now` would wait before its serialisation starts.
    pub fn queue_delay(&self, now: Instant) -> Duration {
        self.busy_until
            .map_or(Duration::ZERO, |b| b.saturating_duration_since(now))
    }
}

/// IPv4 and UDP header bytes in front of a UDP payload: a link MTU of 1500 carries 1472-byte
/// payloads. The simulators' addresses are IPv4.
pub const IPV4_UDP_OVERHEAD: usize = 28;

/// The MTU of a link, which may change during a run. Datagrams too large for it vanish
/// silently: no ICMP Packet Too Big comes back, so a drop of the MTU is a black hole for the
/// sizes in between, as on paths that filter ICMP (RFC 8899 §1.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathMtu {
    /// The IP MTU from the start; `None` carries any datagram.
    pub mtu: Option<usize>,
    /// Changes, in time order: from this much time into the run on, the MTU is this.
    pub changes: Vec<(Duration, Option<usize>)>,
}

impl PathMtu {
    /// A link whose MTU is `mtu` IP bytes for the whole run.
    pub fn fixed(mtu: usize) -> Self {
        PathMtu {
            mtu: Some(mtu),
            changes: Vec::new(),
        }
    }

    /// The same link with the MTU changed to `mtu` from `after` into the run on.
    pub fn then(mut self, after: Duration, mtu: Option<usize>) -> Self {
        self.changes.push((after, mtu));
        self
    }

    /// The IP MTU `elapsed` into the run.
    pub fn at(&self, elapsed: Duration) -> Option<usize> {
        self.changes
            .iter()
            .rev()
            .find(|(t, _)| elapsed >= *t)
            .map_or(self.mtu, |&(_, m)| m)
    }

    /// Whether a datagram with a UDP payload of `len` bytes, sent `elapsed` into the run, fits.
    pub fn carries(&self, elapsed: Duration, len: usize) -> bool {
        self.at(elapsed)
            .is_none_or(|mtu| len.saturating_add(IPV4_UDP_OVERHEAD) <= mtu)
    }
}

/// Random extra delay on a link, for paths whose RTT varies (radio links, busy routers):
/// each datagram is delayed by a uniform draw in `[0, max]` on top of the link model, but never
/// arrives before the datagram sent before it, so jitter does not reorder (reordering is a
/// separate knob). A late datagram holds back the ones behind it, as on a real link whose delay
/// varies; the draws come from the caller's seeded generator, so runs stay deterministic.
#[derive(Clone, Copy, Debug, Default)]
pub struct Jitter {
    last_arrival: Option<Instant>,
}

impl Jitter {
    /// The arrival of a datagram the link model delivers at `arrival`, with `draw` in `[0, 1)`
    /// picking its extra delay in `[0, max]`.
    pub fn apply(&mut self, arrival: Instant, max: Duration, draw: f64) -> Instant {
        let extra = max.mul_f64(draw.clamp(0.0, 1.0));
        let at = self
            .last_arrival
            .map_or(arrival + extra, |last| (arrival + extra).max(last));
        self.last_arrival = Some(at);
        at
    }
}

/// Items in flight, taken out in order of arrival; items arriving at the same moment come out
/// in the order they were put in.
#[derive(Debug)]
pub struct InFlight<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    seq: u64,
}

#[derive(Debug)]
struct Entry<T> {
    arrival: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.arrival, self.seq) == (other.arrival, other.seq)
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.arrival, self.seq).cmp(&(other.arrival, other.seq))
    }
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        InFlight {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<T> InFlight<T> {
    /// Puts `item` in flight, to arrive at `arrival`.
    pub fn push(&mut self, arrival: Instant, item: T) {
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            arrival,
            seq: self.seq,
            item,
        }));
    }

    /// When the next item arrives.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.arrival)
    }

    /// The next item that has arrived by `now`, if any.
    pub fn pop_arrived(&mut self, now: Instant) -> Option<T> {
        if self.next_arrival()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse(e)| e.item)
    }

    /// Makes room for `additional` more items without reallocating.
    pub fn reserve(&mut self, additional: usize) {
        self.heap.reserve(additional);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_by_arrival_then_by_order_sent() {
        let t0 = super::super::virtual_epoch();
        let mut q = InFlight::default();
        q.push(t0 + Duration::from_millis(5), "late");
        q.push(t0 + Duration::from_millis(1), "first");
        q.push(t0 + Duration::from_millis(1), "second");
        assert_eq!(q.next_arrival(), Some(t0 + Duration::from_millis(1)));
        assert_eq!(q.pop_arrived(t0), None);
        assert_eq!(q.pop_arrived(t0 + Duration::from_millis(1)), Some("first"));
        assert_eq!(q.pop_arrived(t0 + Duration::from_millis(1)), Some("second"));
        assert_eq!(q.pop_arrived(t0 + Duration::from_millis(4)), None);
        assert_eq!(q.pop_arrived(t0 + Duration::from_millis(9)), Some("late"));
        assert_eq!(q.next_arrival(), None);
    }

    #[test]
    fn the_path_mtu_drops_large_datagrams_and_changes_on_schedule() {
        let mtu = PathMtu::fixed(1500)
            .then(Duration::from_secs(2), Some(1280))
            .then(Duration::from_secs(5), None);
        let s = Duration::from_secs;
        assert!(mtu.carries(s(0), 1472));
        assert!(!mtu.carries(s(0), 1473));
        assert!(!mtu.carries(s(2), 1253));
        assert!(mtu.carries(s(3), 1252));
        assert!(mtu.carries(s(5), 60_000));
        assert!(PathMtu::default().carries(s(0), 65_507));
    }

    #[test]
    fn jitter_delays_within_its_bound_and_keeps_the_order() {
        let t0 = super::super::virtual_epoch();
        let max = Duration::from_millis(10);
        let mut j = Jitter::default();
        assert_eq!(j.apply(t0, max, 0.5), t0 + Duration::from_millis(5));
        // Sent later but drawn shorter: held behind the first.
        let second = j.apply(t0 + Duration::from_millis(1), max, 0.0);
        assert_eq!(second, t0 + Duration::from_millis(5));
        assert_eq!(
            j.apply(t0 + Duration::from_millis(20), max, 1.0),
            t0 + Duration::from_millis(30)
        );
        // Without jitter the arrival is the model's.
        let mut none = Jitter::default();
        assert_eq!(none.apply(t0, Duration::ZERO, 0.7), t0);
    }

    #[test]
    fn the_bottleneck_serialises_and_drops_when_the_queue_is_full() {
        let t0 = super::super::virtual_epoch();
        let delay = Duration::from_millis(10);
        let mut b = Bottleneck::default();
        // 8 kbit/s: 1,000 bytes take one second; the queue holds 1,500 bytes.
        let sched = |b: &mut Bottleneck, len| b.schedule(t0, len, Some(8_000), Some(1_500), delay);
        assert_eq!(
            sched(&mut b, 1_000),
            Some(t0 + Duration::from_secs(1) + delay)
        );
        assert_eq!(b.queue_delay(t0), Duration::from_secs(1));
        assert_eq!(
            sched(&mut b, 500),
            Some(t0 + Duration::from_millis(1_500) + delay)
        );
        assert_eq!(sched(&mut b, 100), None, "1,500 bytes queued already");
        // Above 1,000 queued bytes ECN-capable datagrams are marked, others are not.
        assert_eq!(b.ecn_mark(t0, 0b10, Some(8_000), Some(1_000)), CE);
        assert_eq!(b.ecn_mark(t0, 0b00, Some(8_000), Some(1_000)), 0);
        assert_eq!(b.ecn_mark(t0, 0b10, Some(8_000), Some(2_000)), 0b10);
        assert_eq!(b.ecn_mark(t0, 0b10, Some(8_000), None), 0b10);
        // Infinitely fast: only the delay.
        let mut fast = Bottleneck::default();
        assert_eq!(
            fast.schedule(t0, 1_000, None, Some(1), delay),
            Some(t0 + delay)
        );
    }
}
