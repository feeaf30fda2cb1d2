//! Hooks for fuzzing the connection state machine (feature `fuzzing`, and tests): sealing an
//! arbitrary payload as the next 1-RTT packet of this endpoint, and checking internal
//! invariants after every step. Hidden from the documented API on purpose: they bypass the
//! send path's own frame selection.

use std::time::Instant;

use octets::OctetsMut;

use super::sent::SentFrames;
use super::Connection;
use crate::packet::{encrypt_pkt, ConnectionId, Epoch, Header};
use crate::recovery::SentPacket;
use crate::{Error, Result};

impl Connection {
    /// Seals `payload` (raw frame bytes, valid or not) in the next 1-RTT packet, as the send
    /// path would, and records it with recovery so that the peer's acknowledgement of it is
    /// legitimate. `Err(Error::Done)` when there are no 1-RTT keys yet.
    #[doc(hidden)]
    pub fn fuzz_seal_1rtt(&mut self, payload: &[u8], now: Instant) -> Result<Vec<u8>> {
        let pn = self.spaces[Epoch::Application.index()].next_pn;
        let pn_len = 4;
        let keys = self.one_rtt.as_ref().ok_or(Error::Done)?;
        let mut hdr = Header::new_short(ConnectionId::from_ref(&self.dcid), keys.key_phase);
        hdr.pkt_num = pn;
        hdr.pkt_num_len = pn_len;
        let mut buf = vec![0u8; payload.len() + 128];
        let pn_offset = hdr.to_bytes(&mut OctetsMut::with_slice(&mut buf))?;
        let hdr_len = pn_offset + pn_len;
        buf[hdr_len..hdr_len + payload.len()].copy_from_slice(payload);
        let len = encrypt_pkt(
            &mut buf,
            pn,
            pn_offset,
            pn_len,
            payload.len(),
            &*keys.hp_seal,
            &*keys.seal,
        )?;
        buf.truncate(len);
        self.spaces[Epoch::Application.index()].next_pn += 1;
        let record = SentPacket::new(pn, now, len, false, false, SentFrames::default());
        self.recovery
            .on_packet_sent(record, Epoch::Application, now)?;
        Ok(buf)
    }

    /// Panics when an internal invariant does not hold: bytes in flight equal the sum of the
    /// in-flight packets' sizes, the peer never got more connection credit than we granted,
    /// streams stay within the limits we advertised, and buffered state stays bounded.
    #[doc(hidden)]
    pub fn debug_check_invariants(&self) {
        self.recovery.debug_check_invariants();
        assert!(
            self.rx_data <= self.rx_fc.max_data(),
            "received {} stream bytes beyond the connection credit {}",
            self.rx_data,
            self.rx_fc.max_data()
        );
        self.streams.debug_check_invariants();
        assert!(self.undecryptable.len() <= super::recv::MAX_UNDECRYPTABLE);
    }
}
