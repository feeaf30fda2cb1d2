//! Packet number spaces (RFC 9000 §12.3): keys, packet numbers, acknowledgements and the CRYPTO
//! stream of each. The 1-RTT keys and their phases are in `key_phase.rs`.

use crate::ack_tracker::AckTracker;
use crate::error::{Error, Result};
use crate::ranges::RangeSet;
use crate::tls::DirectionalKeys;
use std::collections::BTreeMap;

/// How far beyond the read offset CRYPTO data may arrive before it is refused with
/// CRYPTO_BUFFER_EXCEEDED (RFC 9000 §7.5 asks for at least 4096 bytes).
pub const MAX_CRYPTO_BUFFER: u64 = 64 * 1024;

/// The outgoing half of a CRYPTO stream: handshake bytes are few, so they are all kept until
/// acknowledged.
#[derive(Debug, Default)]
pub struct CryptoSend {
    data: Vec<u8>,
    /// Offset of `data[0]` in the stream.
    base: u64,
    /// Bytes below this were sent at least once.
    sent: u64,
    /// Ranges to send again after a loss.
    lost: Vec<(u64, u64)>,
    acked: AckedRanges,
}

/// Acknowledged ranges of the crypto stream: only ever a few, kept inline by [`RangeSet`] (no
/// allocation until more than a handful).
#[derive(Debug)]
struct AckedRanges(RangeSet);

impl Default for AckedRanges {
    fn default() -> Self {
        AckedRanges(RangeSet::new(64))
    }
}

impl AckedRanges {
    fn insert(&mut self, r: std::ops::Range<u64>) {
        self.0.insert(r);
    }

    fn covers(&self, start: u64, end: u64) -> bool {
        self.0
            .iter()
            .any(|range| range.start <= start && range.end >= end)
    }
}

impl CryptoSend {
    /// Appends handshake bytes from TLS.
    pub fn push(&mut self, data: &[u8]) {
        self.data.extend_from_slice(data);
    }

    /// Whether there is something to send.
    pub fn has_pending(&self) -> bool {
        !self.lost.is_empty() || self.sent < self.end()
    }

    fn end(&self) -> u64 {
        self.base + self.data.len() as u64
    }

    /// Bytes below this offset were sent at least once: a chunk starting below it is a
    /// retransmission.
    pub fn sent_off(&self) -> u64 {
        self.sent
    }

    /// The next chunk to send, at most `max` bytes: lost ranges first, then new data.
    /// Returns the offset and the bytes.
    pub fn next_chunk(&mut self, max: usize) -> Option<(u64, &[u8])> {
        if max == 0 {
            return None;
        }
        while let Some(&(start, end)) = self.lost.first() {
            if self.acked.covers(start, end) || end <= self.base {
                self.lost.remove(0);
                continue;
            }
            let start = start.max(self.base);
            let len = ((end - start) as usize).min(max);
            if len as u64 == end - start {
                self.lost.remove(0);
            } else {
                self.lost[0].0 = start + len as u64;
            }
            let from = (start - self.base) as usize;
            return Some((start, &self.data[from..from + len]));
        }
        if self.sent >= self.end() {
            return None;
        }
        let start = self.sent;
        let len = ((self.end() - start) as usize).min(max);
        self.sent += len as u64;
        let from = (start - self.base) as usize;
        Some((start, &self.data[from..from + len]))
    }

    /// A packet carrying `[offset, offset + len)` was lost.
    pub fn on_lost(&mut self, offset: u64, len: u64) {
        if len > 0 && !self.acked.covers(offset, offset + len) {
            self.lost.push((offset, offset + len));
            self.lost.sort_unstable();
            // Overlapping ranges (the same bytes requeued from two probes) go out once.
            self.lost.dedup_by(|next, kept| {
                let overlaps = next.0 <= kept.1;
                if overlaps {
                    kept.1 = kept.1.max(next.1);
                }
                overlaps
            });
        }
    }

    /// A packet carrying `[offset, offset + len)` was acknowledged.
    pub fn on_acked(&mut self, offset: u64, len: u64) {
        if len > 0 {
            self.acked.insert(offset..offset + len);
        }
    }

    /// Everything sent so far must go out again (Retry, or a PTO probe with no new data).
    pub fn resend_all_unacked(&mut self) {
        if self.sent > self.base {
            self.on_lost(self.base, self.sent - self.base);
        }
    }
}

/// The incoming half of a CRYPTO stream: reassembles data for TLS, within a bound.
#[derive(Debug, Default)]
pub struct CryptoRecv {
    /// Out-of-order chunks by offset.
    pending: BTreeMap<u64, Vec<u8>>,
    /// Bytes below this were handed to TLS.
    read: u64,
    buffered: u64,
}

impl CryptoRecv {
    /// Accepts a CRYPTO frame's data. Data beyond the buffer bound is refused
    /// (CRYPTO_BUFFER_EXCEEDED, RFC 9000 §7.5).
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(Error::InvalidFrame)?;
        if end <= self.read {
            return Ok(());
        }
        if end - self.read > MAX_CRYPTO_BUFFER
            || self.buffered + data.len() as u64 > MAX_CRYPTO_BUFFER
        {
            return Err(Error::CryptoBufferExceeded);
        }
        // Keep only the part not yet delivered; overlaps with pending chunks are resolved when
        // reading (the earliest copy wins).
        let skip = self.read.saturating_sub(offset) as usize;
        let start = offset.max(self.read);
        if self
            .pending
            .get(&start)
            .is_some_and(|c| c.len() >= data.len() - skip)
        {
            return Ok(());
        }
        self.buffered += (data.len() - skip) as u64;
        if let Some(old) = self.pending.insert(start, data[skip..].to_vec()) {
            self.buffered -= old.len() as u64;
        }
        Ok(())
    }

    /// Hands the contiguous data at the read offset to `f`, chunk by chunk.
    pub fn read(&mut self, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        while let Some((&offset, _)) = self.pending.first_key_value() {
            if offset > self.read {
                break;
            }
            let Some((offset, chunk)) = self.pending.pop_first() else {
                break;
            };
            self.buffered -= chunk.len() as u64;
            let skip = (self.read - offset) as usize;
            if skip >= chunk.len() {
                continue;
            }
            self.read += (chunk.len() - skip) as u64;
            f(&chunk[skip..])?;
        }
        Ok(())
    }
}

/// One packet number space.
#[derive(Default)]
pub struct PacketSpace {
    /// Keys to remove protection from received packets (Initial and Handshake spaces).
    pub open: Option<DirectionalKeys>,
    /// Keys to protect sent packets (Initial and Handshake spaces).
    pub seal: Option<DirectionalKeys>,
    /// The next packet number to send.
    pub next_pn: u64,
    /// Receive-side acknowledgement state.
    pub acks: AckTracker,
    /// Outgoing CRYPTO data.
    pub crypto_send: CryptoSend,
    /// Incoming CRYPTO data.
    pub crypto_recv: CryptoRecv,
    /// Keys were discarded: nothing is sent or received in this space any more.
    pub discarded: bool,
    /// An ack-eliciting probe must be sent in this space (PTO).
    pub probes: usize,
}

impl PacketSpace {
    /// Drops the keys and all state (RFC 9001 §4.9).
    pub fn discard(&mut self) {
        self.open = None;
        self.seal = None;
        self.crypto_send = CryptoSend::default();
        self.crypto_recv = CryptoRecv::default();
        self.acks = AckTracker::new();
        self.probes = 0;
        self.discarded = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crypto_send_resends_lost_ranges_first() {
        let mut s = CryptoSend::default();
        s.push(&[1; 100]);
        assert_eq!(s.next_chunk(60).map(|(o, d)| (o, d.len())), Some((0, 60)));
        assert_eq!(s.next_chunk(60).map(|(o, d)| (o, d.len())), Some((60, 40)));
        assert!(!s.has_pending());
        s.on_lost(0, 60);
        s.on_acked(60, 40);
        assert!(s.has_pending());
        assert_eq!(s.next_chunk(50).map(|(o, d)| (o, d.len())), Some((0, 50)));
        assert_eq!(s.next_chunk(50).map(|(o, d)| (o, d.len())), Some((50, 10)));
        assert_eq!(s.next_chunk(50), None);
        // A loss of something already acknowledged is not resent.
        s.on_lost(60, 40);
        assert!(!s.has_pending());
    }

    #[test]
    fn crypto_send_resends_overlapping_losses_once() {
        let mut s = CryptoSend::default();
        s.push(&[1; 162]);
        assert_eq!(s.next_chunk(500).map(|(o, d)| (o, d.len())), Some((0, 162)));
        // Two probes carried the same bytes and both are requeued: they go out once.
        s.on_lost(0, 162);
        s.on_lost(0, 162);
        s.on_lost(100, 62);
        assert_eq!(s.next_chunk(500).map(|(o, d)| (o, d.len())), Some((0, 162)));
        assert_eq!(s.next_chunk(500), None);
        // Adjacent and disjoint ranges keep their extent.
        s.on_lost(0, 50);
        s.on_lost(50, 10);
        s.on_lost(100, 20);
        assert_eq!(s.next_chunk(500).map(|(o, d)| (o, d.len())), Some((0, 60)));
        assert_eq!(
            s.next_chunk(500).map(|(o, d)| (o, d.len())),
            Some((100, 20))
        );
        assert_eq!(s.next_chunk(500), None);
    }

    #[test]
    fn crypto_recv_reassembles_out_of_order() {
        let mut r = CryptoRecv::default();
        r.write(5, b"world").unwrap();
        let mut got = Vec::new();
        r.read(|d| {
            got.extend_from_slice(d);
            Ok(())
        })
        .unwrap();
        assert!(got.is_empty());
        r.write(0, b"hello").unwrap();
        r.write(3, b"loworl").unwrap();
        r.read(|d| {
            got.extend_from_slice(d);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, b"helloworld");
        // Old data is ignored.
        r.write(0, b"hello").unwrap();
    }

    #[test]
    fn crypto_recv_is_bounded() {
        let mut r = CryptoRecv::default();
        assert_eq!(
            r.write(MAX_CRYPTO_BUFFER, b"x"),
            Err(Error::CryptoBufferExceeded)
        );
        assert!(r.write(MAX_CRYPTO_BUFFER - 1, b"x").is_ok());
        assert_eq!(r.write(u64::MAX - 1, b"xx"), Err(Error::InvalidFrame));
    }
}
