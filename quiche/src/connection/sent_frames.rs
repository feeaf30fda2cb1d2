//! What each sent packet carried, so that a loss resends the information rather than the packet
//! (RFC 9000 §13.3) and an acknowledgement releases what it covers.

use crate::stream::ControlFrame;

/// One frame's worth of information in a sent packet, kept only as far as a loss or an
/// acknowledgement needs it (stream bytes are re-read from the send buffer, not copied here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SentFrame {
    /// An ACK frame whose largest acknowledged packet number was this.
    Ack {
        /// Largest packet number the ACK reported.
        largest: u64,
    },
    /// CRYPTO data of the packet's epoch.
    Crypto {
        /// Offset in the crypto stream.
        offset: u64,
        /// Length of the data.
        len: u64,
    },
    /// STREAM data.
    Stream {
        /// Stream ID.
        stream_id: u64,
        /// Offset in the stream.
        offset: u64,
        /// Length of the data.
        len: u64,
        /// Whether the frame carried FIN.
        fin: bool,
    },
    /// A stream-level control frame (RESET_STREAM, STOP_SENDING, MAX_STREAM_DATA, MAX_STREAMS,
    /// STREAM_DATA_BLOCKED, STREAMS_BLOCKED): the stream map decides what a loss means.
    Control(ControlFrame),
    /// MAX_DATA (the current value is resent, not the old one).
    MaxData,
    /// DATA_BLOCKED.
    DataBlocked,
    /// HANDSHAKE_DONE.
    HandshakeDone,
    /// NEW_CONNECTION_ID or RETIRE_CONNECTION_ID.
    Cid(crate::cid::CidFrame),
    /// DATAGRAM: never repaired, only counted when lost.
    Datagram,
    /// ACK_FREQUENCY with this Sequence Number.
    AckFrequency {
        /// The frame's Sequence Number.
        seq: u64,
    },
    /// PING, or another frame whose loss needs no repair (PADDING, PATH_RESPONSE,
    /// CONNECTION_CLOSE, IMMEDIATE_ACK).
    Other,
}

/// The frames of one sent packet, with a little inline room so the common packet (ACK + one
/// data frame) needs no heap allocation.
#[derive(Clone, Debug, Default)]
pub struct SentFrames {
    inline: [Option<SentFrame>; INLINE],
    spill: Vec<SentFrame>,
    /// Whether the packet carried STREAM or CRYPTO bytes again after a loss.
    pub retransmission: bool,
    /// Whether the packet's datagram went out with ECT(0): ECN validation counts these when
    /// they are acknowledged or lost.
    pub ecn_marked: bool,
    /// The uid of the path the packet went out on (`crate::path::Path::uid`): ECN validation
    /// credits its acknowledgement or loss to that path.
    pub path: u64,
}

const INLINE: usize = 3;

impl SentFrames {
    /// Adds a frame to the record.
    pub fn push(&mut self, frame: SentFrame) {
        if let Some(slot) = self.inline.iter_mut().find(|s| s.is_none()) {
            *slot = Some(frame);
        } else {
            self.spill.push(frame);
        }
    }

    /// The recorded frames, in the order they were written.
    pub fn iter(&self) -> impl Iterator<Item = &SentFrame> + '_ {
        self.inline.iter().flatten().chain(self.spill.iter())
    }

    /// Empties the record for reuse, keeping its allocation.
    pub fn clear(&mut self) {
        self.inline = [None; INLINE];
        self.spill.clear();
        self.retransmission = false;
        self.ecn_marked = false;
        self.path = 0;
    }

    /// Whether the record holds a heap buffer worth reusing (it once had more frames than fit
    /// inline).
    pub fn has_spill_capacity(&self) -> bool {
        self.spill.capacity() > 0
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inline[0].is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_across_inline_and_spill() {
        let mut f = SentFrames::default();
        assert!(f.is_empty());
        for i in 0..6 {
            f.push(SentFrame::Ack { largest: i });
        }
        let got: Vec<_> = f.iter().copied().collect();
        let want: Vec<_> = (0..6).map(|i| SentFrame::Ack { largest: i }).collect();
        assert_eq!(got, want);
        assert!(!f.is_empty());
    }
}
