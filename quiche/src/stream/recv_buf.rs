//! The receiving part of a stream (RFC 9000 §3.2): out-of-order reassembly, final-size rules
//! (§4.5), stream flow control (§4.1) and in-order reads by the application.
//!
//! Storage: one byte ring holding `[read_off, highest)` (bytes not yet read, with holes where data
//! has not arrived) and a bitmap of which bytes above the contiguous prefix have arrived. Both
//! are bounded by the stream window (data beyond the advertised limit is a flow-control error
//! before anything is stored), keep their capacity between frames (no allocation per frame in
//! steady state) and, unlike a list of ranges, cannot be inflated by a peer that sends many tiny
//! disjoint chunks: the bitmap costs one bit per byte of window whatever the pattern.
//!
//! Copies: one into the ring when a frame arrives, one out of it when the application reads.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::flow_control::{FlowControl, MAX_LIMIT};
use crate::stream::ring;

/// Flow-control credit effects of one received frame, for the connection-level accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Credit {
    /// Bytes beyond the stream's previous highest received offset: they count against the
    /// connection-level limit.
    pub(crate) new: u64,
    /// Bytes dropped without the application reading them (after a reset or a read shutdown):
    /// the connection counts them as consumed so its window keeps moving.
    pub(crate) discarded: u64,
}

/// Which bytes at or above the contiguous prefix have arrived, one bit per byte.
///
/// Bit `i` of word `w` stands for offset `base + 64·w + i`. Only bits at or above the owner's
/// contiguous end are meaningful; words wholly below it are dropped as the prefix advances.
#[derive(Debug, Default)]
struct Bitmap {
    words: VecDeque<u64>,
    base: u64,
}

impl Bitmap {
    fn clear(&mut self) {
        self.words.clear();
    }

    /// Marks `[start, end)` as received. `floor` is the owner's contiguous end: `floor <= start`,
    /// and the bitmap is anchored at it (not at `start`) so that later arrivals between `floor`
    /// and `start` are representable.
    fn set(&mut self, start: u64, end: u64, floor: u64) {
        if start >= end {
            return;
        }
        if self.words.is_empty() {
            self.base = floor & !63;
        }
        let Some(rel_start) = start.checked_sub(self.base) else {
            return;
        };
        let rel_last = end - 1 - self.base;
        let (first, last) = ((rel_start / 64) as usize, (rel_last / 64) as usize);
        if self.words.len() <= last {
            self.words.resize(last + 1, 0);
        }
        for w in first..=last {
            let lo = if w == first { rel_start % 64 } else { 0 };
            let hi = if w == last { rel_last % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            if let Some(word) = self.words.get_mut(w) {
                *word |= mask;
            }
        }
    }

    /// The first offset at or after `from` whose bit is clear (bits past the stored words are
    /// clear). `from` must be at or above `base`.
    fn first_clear_from(&self, from: u64) -> u64 {
        let mut pos = from;
        loop {
            let Some(rel) = pos.checked_sub(self.base) else {
                return pos;
            };
            let Some(&word) = self.words.get((rel / 64) as usize) else {
                return pos;
            };
            let bit = rel % 64;
            let ones = u64::from((word >> bit).trailing_ones());
            if ones < 64 - bit {
                return pos + ones;
            }
            pos += 64 - bit;
        }
    }

    /// Drops the words that lie wholly below `to`.
    fn advance_base(&mut self, to: u64) {
        while self.base.saturating_add(64) <= to && self.words.pop_front().is_some() {
            self.base += 64;
        }
    }
}

/// The receiving part of one stream.
#[derive(Debug)]
pub(crate) struct RecvBuf {
    /// Bytes `[read_off, read_off + data.len())`; holes are zero until filled.
    data: VecDeque<u8>,
    /// Offset of the next byte the application reads.
    read_off: u64,
    /// Every byte below this has arrived.
    contig_end: u64,
    /// One past the highest byte received (or the final size once reset).
    highest: u64,
    /// Arrivals at or above `contig_end`.
    bits: Bitmap,
    /// The final size, once a FIN or RESET_STREAM has told it.
    final_size: Option<u64>,
    /// Stream flow control: the MAX_STREAM_DATA we advertise.
    flow: FlowControl,
    /// Error code of a RESET_STREAM received.
    reset: Option<u64>,
    /// The application has been told of the reset ("Reset Read").
    reset_read: bool,
    /// The application has read every byte and the FIN ("Data Read").
    fin_read: bool,
    /// The application shut reading down: data is dropped on arrival.
    discarding: bool,
}

impl RecvBuf {
    /// A receiving part whose initial limit is `window`, auto-tuned up to `max_window`.
    pub(crate) fn new(window: u64, max_window: u64) -> Self {
        RecvBuf {
            data: VecDeque::new(),
            read_off: 0,
            contig_end: 0,
            highest: 0,
            bits: Bitmap::default(),
            final_size: None,
            flow: FlowControl::new(window, max_window),
            reset: None,
            reset_read: false,
            fin_read: false,
            discarding: false,
        }
    }

    /// Applies a STREAM frame. Errors: data beyond the advertised limit → `FlowControl`;
    /// final-size violations (§4.5) → `FinalSize`.
    pub(crate) fn write(&mut self, off: u64, data: &[u8], fin: bool) -> Result<Credit> {
        let end = off
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_LIMIT)
            .ok_or(Error::FlowControl)?;
        if data.is_empty() && !fin {
            // Carries no data and no final size: nothing to account for.
            return Ok(Credit::default());
        }
        match self.final_size {
            Some(fs) if end > fs || (fin && end != fs) => return Err(Error::FinalSize),
            None if fin && end < self.highest => return Err(Error::FinalSize),
            _ => {}
        }
        if end > self.flow.max_data() {
            return Err(Error::FlowControl);
        }

        let highest_before = self.highest;
        let new = end.saturating_sub(highest_before);
        self.highest = highest_before.max(end);
        if fin {
            self.final_size = Some(end);
        }
        if self.reset.is_some() || self.discarding || self.fin_read {
            let discarded = self.discard();
            return Ok(Credit { new, discarded });
        }

        // Bytes below the contiguous end are already held (or were read): copy only the rest.
        let start = off.max(self.contig_end);
        if start < end {
            let at = usize::try_from(start - self.read_off).map_err(|_| Error::FlowControl)?;
            let skip = (start - off) as usize;
            let src = data.get(skip..).unwrap_or(&[]);
            // Bytes inside the buffer overwrite its holes; the rest is appended with one copy
            // (zero-filling it first would write every in-order byte twice). Only a gap before
            // out-of-order data is zeroed.
            if self.data.len() < at {
                self.data.resize(at, 0);
            }
            let inside = (self.data.len() - at).min(src.len());
            let (overwrite, append) = src.split_at(inside);
            ring::copy_into(&mut self.data, at, overwrite);
            self.data.extend(append);
            self.mark_received(start, end, highest_before);
        }
        Ok(Credit { new, discarded: 0 })
    }

    fn mark_received(&mut self, start: u64, end: u64, highest_before: u64) {
        if start == self.contig_end && highest_before <= end {
            // In order with nothing pending beyond: no bitmap work.
            self.contig_end = end;
            self.bits.clear();
            return;
        }
        self.bits.set(start, end, self.contig_end);
        if start == self.contig_end {
            self.contig_end = self.bits.first_clear_from(end);
            if self.contig_end >= self.highest {
                self.bits.clear();
            } else {
                self.bits.advance_base(self.contig_end);
            }
        }
    }

    /// Applies a RESET_STREAM frame. Errors as for [`RecvBuf::write`].
    pub(crate) fn reset(&mut self, code: u64, final_size: u64) -> Result<Credit> {
        match self.final_size {
            Some(fs) if fs != final_size => return Err(Error::FinalSize),
            None if final_size < self.highest => return Err(Error::FinalSize),
            _ => {}
        }
        if final_size > self.flow.max_data() {
            return Err(Error::FlowControl);
        }
        let new = final_size.saturating_sub(self.highest);
        self.highest = self.highest.max(final_size);
        self.final_size = Some(final_size);
        if self.reset.is_some() || self.fin_read {
            // A repeat, or everything was already delivered ("Data Read" is terminal).
            return Ok(Credit { new, discarded: 0 });
        }
        self.reset = Some(code);
        let discarded = self.discard();
        Ok(Credit { new, discarded })
    }

    /// The application stops reading: buffered and future data is dropped. Returns the bytes
    /// dropped now and whether a STOP_SENDING is worth sending (§3.5: only in "Recv" or
    /// "Size Known", i.e. not reset and not all data received).
    pub(crate) fn shutdown(&mut self) -> (u64, bool) {
        if self.discarding || self.fin_read {
            return (0, false);
        }
        // After a reset the application need not read it any more: shutting down is enough for
        // the part to be complete.
        let all_received = self.final_size.is_some_and(|fs| self.contig_end >= fs);
        let stop = !all_received && self.reset.is_none();
        self.discarding = true;
        (self.discard(), stop)
    }

    /// Drops everything received so far, advancing the read offset past it. Returns the bytes
    /// dropped.
    fn discard(&mut self) -> u64 {
        let dropped = self.highest.saturating_sub(self.read_off);
        self.read_off = self.highest;
        self.contig_end = self.contig_end.max(self.highest);
        self.data = VecDeque::new();
        self.bits = Bitmap::default();
        self.flow.add_consumed(dropped);
        dropped
    }

    /// Reads in order into `out`. Returns the byte count and whether the FIN was reached.
    /// `Done` when nothing is readable; `StreamReset(code)` once the peer has reset the stream.
    #[cfg(test)]
    pub(crate) fn read(&mut self, out: &mut [u8]) -> Result<(usize, bool)> {
        let mut filled = 0;
        self.read_with(out.len(), |chunk| {
            if let Some(dst) = out.get_mut(filled..filled + chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            filled += chunk.len();
        })
    }

    /// Takes up to `max` bytes in order, handing them to `sink` in one or two slices (the
    /// buffer is a ring), as [`RecvBuf::read`] does; a sink that ignores them discards them.
    pub(crate) fn read_with(
        &mut self,
        max: usize,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(usize, bool)> {
        if let Some(code) = self.reset {
            self.reset_read = true;
            return Err(Error::StreamReset(code));
        }
        if self.discarding {
            return Err(Error::Done);
        }
        let n = self.readable_len().min(max);
        let (a, b) = self.data.as_slices();
        let from_a = n.min(a.len());
        if from_a > 0 {
            sink(a.get(..from_a).unwrap_or(&[]));
        }
        if n > from_a {
            sink(b.get(..n - from_a).unwrap_or(&[]));
        }
        self.data.drain(..n);
        self.read_off += n as u64;
        self.flow.add_consumed(n as u64);
        let at_fin = self.final_size == Some(self.read_off);
        // Nothing taken is still a result when it delivers the FIN for the first time.
        if n == 0 && (!at_fin || self.fin_read) {
            return Err(Error::Done);
        }
        if at_fin {
            self.fin_read = true;
            self.data = VecDeque::new();
        }
        Ok((n, at_fin))
    }

    /// How many bytes a read would return now: the in-order bytes received and not read; 0
    /// after a reset or once reading was shut down.
    pub(crate) fn readable_len(&self) -> usize {
        if self.reset.is_some() || self.discarding {
            return 0;
        }
        usize::try_from(self.contig_end - self.read_off).unwrap_or(usize::MAX)
    }

    /// If the advertised limit is due for an update (and the stream still needs credit, i.e. is
    /// in "Recv"), auto-tunes the window and raises the limit; returns whether it did.
    pub(crate) fn update_max_data(&mut self, now: Instant, srtt: Duration) -> bool {
        if !self.wants_credit() || !self.flow.should_update_max_data() {
            return false;
        }
        self.flow.autotune_window(now, srtt);
        self.flow.update_max_data(now);
        true
    }

    /// Brings the advertised limit up to date just before MAX_STREAM_DATA is written (see
    /// [`FlowControl::refresh_max_data`]).
    pub(crate) fn refresh_max_data(&mut self) {
        if self.wants_credit() {
            self.flow.refresh_max_data();
        }
    }

    /// Whether MAX_STREAM_DATA is still useful: "Recv" state and still reading (§3.3).
    pub(crate) fn wants_credit(&self) -> bool {
        self.final_size.is_none() && self.reset.is_none() && !self.discarding
    }

    /// The limit currently advertised (MAX_STREAM_DATA).
    pub(crate) fn max_data(&self) -> u64 {
        self.flow.max_data()
    }

    /// The current window size.
    pub(crate) fn window(&self) -> u64 {
        self.flow.window()
    }

    /// Whether `read` would return something (data, the FIN or the reset).
    pub(crate) fn is_readable(&self) -> bool {
        if self.discarding {
            return false;
        }
        if self.reset.is_some() {
            return !self.reset_read;
        }
        self.contig_end > self.read_off
            || (self.final_size == Some(self.read_off) && !self.fin_read)
    }

    /// Whether the application is done with this part: all data and the FIN read, the reset
    /// delivered, or reading shut down and the final size known.
    pub(crate) fn is_complete(&self) -> bool {
        self.fin_read
            || self.reset_read
            || (self.discarding && (self.reset.is_some() || self.final_size.is_some()))
    }

    /// Whether the stream has ended for the application: all data read including the FIN, or
    /// reset by the peer.
    pub(crate) fn is_finished(&self) -> bool {
        self.fin_read || self.reset.is_some() || (self.discarding && self.final_size.is_some())
    }

    /// Whether a RESET_STREAM has been received.
    pub(crate) fn is_reset(&self) -> bool {
        self.reset.is_some()
    }

    /// Bytes buffered (received, not yet read), including holes: bounded by the window.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.data.len()
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl RecvBuf {
    /// Panics when the buffer delivered or holds bytes beyond the final size or the credit we
    /// granted, or holds more than that credit allows.
    pub(crate) fn debug_check_invariants(&self) {
        assert!(self.read_off <= self.contig_end && self.contig_end <= self.highest);
        if let Some(fs) = self.final_size {
            assert!(
                self.highest <= fs,
                "received {} beyond final size {fs}",
                self.highest
            );
        }
        if self.reset.is_none() {
            assert!(
                self.highest <= self.flow.max_data(),
                "received {} beyond stream credit {}",
                self.highest,
                self.flow.max_data()
            );
        }
        assert!(self.data.len() as u64 <= self.highest - self.read_off);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    fn payload(len: usize, seed: u64) -> Vec<u8> {
        let mut rng = Rng(seed | 1);
        (0..len).map(|_| rng.next() as u8).collect()
    }

    fn read_all(rb: &mut RecvBuf, chunk: usize) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            match rb.read(&mut buf) {
                Ok((n, fin)) => {
                    out.extend_from_slice(&buf[..n]);
                    if fin {
                        return (out, true);
                    }
                }
                Err(Error::Done) => return (out, false),
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
    }

    #[test]
    fn in_order_reassembly() {
        let mut rb = RecvBuf::new(1000, 1000);
        assert_eq!(rb.write(0, b"hello ", false).unwrap().new, 6);
        assert_eq!(rb.write(6, b"world", true).unwrap().new, 5);
        assert!(rb.is_readable());
        assert_eq!(read_all(&mut rb, 4), (b"hello world".to_vec(), true));
        assert!(rb.is_complete());
        assert!(!rb.is_readable());
        assert_eq!(rb.read(&mut [0; 4]), Err(Error::Done));
    }

    #[test]
    fn out_of_order_waits_for_the_hole() {
        let mut rb = RecvBuf::new(1000, 1000);
        assert_eq!(rb.write(5, b"56789", false).unwrap().new, 10);
        assert!(!rb.is_readable());
        assert_eq!(rb.read(&mut [0; 10]), Err(Error::Done));
        assert_eq!(rb.write(0, b"01234", false).unwrap().new, 0);
        assert_eq!(read_all(&mut rb, 100), (b"0123456789".to_vec(), false));
    }

    /// Random chunks, out of order, overlapping and duplicated, with random read sizes
    /// interleaved: the reassembled stream must equal the original, and the buffer never holds
    /// more than the window.
    #[test]
    fn random_reassembly_reproduces_data() {
        for seed in 1..40u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let len = 1 + rng.below(20_000) as usize;
            let data = payload(len, seed);
            let window = 4096;
            let mut rb = RecvBuf::new(window, window);
            let mut got = Vec::new();
            let mut fin_seen = false;
            let mut rounds = 0;
            while !fin_seen {
                rounds += 1;
                assert!(rounds < 1_000_000, "no progress");
                // Pick a chunk within what the window allows, biased around the read offset.
                let lim = rb.max_data().min(len as u64);
                let lo = rb.read_off.saturating_sub(100);
                if lim <= lo {
                    break;
                }
                let a = lo + rng.below(lim - lo);
                let b = (a + 1 + rng.below(1500)).min(lim);
                let fin = b == len as u64;
                let before = rb.highest;
                let c = rb.write(a, &data[a as usize..b as usize], fin).unwrap();
                assert_eq!(c.new, b.saturating_sub(before));
                assert!(rb.buffered() as u64 <= window);
                if rng.below(3) == 0 {
                    let mut buf = vec![0u8; 1 + rng.below(3000) as usize];
                    match rb.read(&mut buf) {
                        Ok((n, fin)) => {
                            got.extend_from_slice(&buf[..n]);
                            fin_seen = fin;
                        }
                        Err(Error::Done) => {}
                        Err(e) => panic!("{e:?}"),
                    }
                    let t0 = crate::stream::tests::epoch();
                    rb.update_max_data(t0, Duration::from_millis(10));
                }
            }
            assert!(fin_seen, "seed {seed}: stream not finished");
            assert_eq!(got.len(), data.len(), "seed {seed}");
            assert!(got == data, "seed {seed}: data differs");
        }
    }

    /// Every byte is delivered exactly once, in random order within the window, plus
    /// duplicates and overlaps of data already delivered: the receiver must reassemble the
    /// stream without any byte being sent a second time (a lost mark would deadlock here).
    #[test]
    fn each_byte_delivered_once_suffices() {
        for seed in 1..60u64 {
            let mut rng = Rng(seed.wrapping_mul(0xd1b5_4a32_d192_ed03) | 1);
            let len = 1 + rng.below(30_000) as usize;
            let data = payload(len, seed + 1000);
            let window = 256 + rng.below(8000);
            let mut rb = RecvBuf::new(window, window);
            // Chunks covering the stream, at most half a window each: the reader guarantees
            // only that much credit beyond what it has read.
            let max_chunk = (window / 2).min(1500);
            let mut chunks = Vec::new();
            let mut at = 0u64;
            while at < len as u64 {
                let end = (at + 1 + rng.below(max_chunk)).min(len as u64);
                chunks.push((at, end));
                at = end;
            }
            let mut pending: Vec<usize> = (0..chunks.len()).collect();
            let mut got = Vec::new();
            let mut buf = vec![0u8; 4096];
            let mut steps = 0;
            loop {
                steps += 1;
                assert!(steps < 1_000_000, "seed {seed}: no progress");
                let fits: Vec<usize> = (0..pending.len())
                    .filter(|&i| chunks[pending[i]].1 <= rb.max_data())
                    .collect();
                if !fits.is_empty() && rng.below(3) != 0 {
                    let pos = fits[rng.below(fits.len() as u64) as usize];
                    let (a, b) = chunks[pending.swap_remove(pos)];
                    let fin = b == len as u64;
                    rb.write(a, &data[a as usize..b as usize], fin).unwrap();
                    // Sometimes a duplicate or partial overlap of delivered data.
                    if rng.below(4) == 0 {
                        let x = a + rng.below(b - a);
                        let y = x + 1 + rng.below(b - x);
                        rb.write(x, &data[x as usize..y as usize], fin && y == b)
                            .unwrap();
                    }
                    assert!(rb.buffered() as u64 <= window);
                    continue;
                }
                let n = 1 + rng.below(buf.len() as u64) as usize;
                match rb.read(&mut buf[..n]) {
                    Ok((k, fin)) => {
                        got.extend_from_slice(&buf[..k]);
                        if fin {
                            break;
                        }
                    }
                    Err(Error::Done) => {
                        assert!(!fits.is_empty(), "seed {seed}: stuck at {}", got.len());
                    }
                    Err(e) => panic!("{e:?}"),
                }
                rb.update_max_data(crate::stream::tests::epoch(), Duration::from_millis(10));
            }
            assert!(pending.is_empty());
            assert!(got == data, "seed {seed}: data differs");
        }
    }

    #[test]
    fn bitmap_handles_word_boundaries() {
        let mut rb = RecvBuf::new(10_000, 10_000);
        let data = payload(1000, 7);
        // Fill odd 1-byte slots first, then even ones, across several bitmap words.
        for i in (1..1000).step_by(2) {
            rb.write(i, &data[i as usize..i as usize + 1], false)
                .unwrap();
        }
        assert!(!rb.is_readable());
        for i in (0..1000).step_by(2) {
            rb.write(i, &data[i as usize..i as usize + 1], false)
                .unwrap();
        }
        rb.write(999, &data[999..], true).unwrap();
        assert_eq!(read_all(&mut rb, 333), (data, true));
    }

    #[test]
    fn flow_control_violation() {
        let mut rb = RecvBuf::new(100, 100);
        assert!(rb.write(0, &[0; 100], false).is_ok());
        assert_eq!(rb.write(100, &[0; 1], false), Err(Error::FlowControl));
        assert_eq!(rb.write(50, &[0; 51], false), Err(Error::FlowControl));
        assert_eq!(rb.reset(0, 101), Err(Error::FlowControl));
        assert_eq!(rb.write(MAX_LIMIT, &[0; 1], false), Err(Error::FlowControl));
        assert_eq!(rb.write(u64::MAX, &[0; 1], false), Err(Error::FlowControl));
    }

    #[test]
    fn window_grows_as_the_application_reads() {
        let t0 = crate::stream::tests::epoch();
        let mut rb = RecvBuf::new(100, 100);
        rb.write(0, &[1; 100], false).unwrap();
        let mut buf = [0u8; 60];
        assert_eq!(rb.read(&mut buf).unwrap(), (60, false));
        assert!(rb.update_max_data(t0, Duration::from_millis(10)));
        assert_eq!(rb.max_data(), 160);
        assert!(rb.write(100, &[1; 60], false).is_ok());
        assert!(!rb.update_max_data(t0, Duration::from_millis(10)));
    }

    #[test]
    fn final_size_violations() {
        // FIN lower than data already received.
        let mut rb = RecvBuf::new(1000, 1000);
        rb.write(0, &[0; 50], false).unwrap();
        assert_eq!(rb.write(10, &[0; 10], true), Err(Error::FinalSize));
        // RESET_STREAM lower than data already received.
        assert_eq!(rb.reset(0, 49), Err(Error::FinalSize));

        // A second, different FIN.
        let mut rb = RecvBuf::new(1000, 1000);
        rb.write(0, &[0; 10], true).unwrap();
        assert_eq!(rb.write(0, &[0; 11], true), Err(Error::FinalSize));
        assert_eq!(rb.write(0, &[0; 9], true), Err(Error::FinalSize));
        // Data beyond the final size.
        assert_eq!(rb.write(10, &[0; 1], false), Err(Error::FinalSize));
        // A reset with a different final size.
        assert_eq!(rb.reset(0, 11), Err(Error::FinalSize));
        assert_eq!(rb.reset(0, 9), Err(Error::FinalSize));
        // The same FIN again is a harmless duplicate.
        assert_eq!(rb.write(0, &[0; 10], true), Ok(Credit::default()));

        // After a reset, data beyond the final size, or a different FIN.
        let mut rb = RecvBuf::new(1000, 1000);
        rb.reset(7, 20).unwrap();
        assert_eq!(rb.write(15, &[0; 10], false), Err(Error::FinalSize));
        assert_eq!(rb.write(0, &[0; 5], true), Err(Error::FinalSize));
        assert_eq!(rb.reset(7, 21), Err(Error::FinalSize));
        assert!(rb.write(0, &[0; 20], true).is_ok());
    }

    #[test]
    fn reset_discards_and_reports_credit() {
        let mut rb = RecvBuf::new(1000, 1000);
        rb.write(0, &[1; 30], false).unwrap();
        rb.write(40, &[1; 10], false).unwrap();
        let mut buf = [0; 10];
        rb.read(&mut buf).unwrap();
        let c = rb.reset(9, 100).unwrap();
        assert_eq!(
            c,
            Credit {
                new: 50,
                discarded: 90
            }
        );
        assert!(rb.is_readable());
        assert!(rb.is_finished());
        assert!(!rb.is_complete());
        assert_eq!(rb.read(&mut buf), Err(Error::StreamReset(9)));
        assert!(rb.is_complete());
        assert_eq!(rb.buffered(), 0);
        // Duplicate reset: no new credit.
        assert_eq!(rb.reset(9, 100).unwrap(), Credit::default());
    }

    #[test]
    fn shutdown_discards_incoming_data() {
        let mut rb = RecvBuf::new(1000, 1000);
        rb.write(0, &[1; 30], false).unwrap();
        assert_eq!(rb.shutdown(), (30, true));
        assert_eq!(
            rb.write(30, &[1; 20], false).unwrap(),
            Credit {
                new: 20,
                discarded: 20
            }
        );
        assert_eq!(rb.write(0, &[1; 10], false).unwrap(), Credit::default());
        assert!(!rb.is_readable());
        assert_eq!(rb.read(&mut [0; 10]), Err(Error::Done));
        assert!(!rb.is_complete());
        assert_eq!(
            rb.write(50, &[1; 5], true).unwrap(),
            Credit {
                new: 5,
                discarded: 5
            }
        );
        assert!(rb.is_complete());
        // After a reset: no STOP_SENDING, and the part is complete without reading the reset.
        let mut rb = RecvBuf::new(1000, 1000);
        rb.reset(3, 10).unwrap();
        assert!(!rb.is_complete());
        assert_eq!(rb.shutdown(), (0, false));
        assert!(rb.is_complete());
        assert!(!rb.is_readable());
        // Nothing more to stop once all data has arrived.
        let mut rb = RecvBuf::new(1000, 1000);
        rb.write(0, &[1; 30], true).unwrap();
        assert_eq!(rb.shutdown(), (30, false));
    }

    #[test]
    fn empty_fin_is_delivered_once() {
        let mut rb = RecvBuf::new(1000, 1000);
        rb.write(0, &[], true).unwrap();
        assert!(rb.is_readable());
        assert_eq!(rb.read(&mut [0; 4]), Ok((0, true)));
        assert_eq!(rb.read(&mut [0; 4]), Err(Error::Done));
        assert!(rb.is_complete());
    }
}
