//! Every frame of RFC 9000 §19 plus DATAGRAM (RFC 9221), ACK_FREQUENCY and IMMEDIATE_ACK
//! (draft-ietf-quic-ack-frequency-12): decode, encode, wire length.
//!
//! Decoding borrows from the packet buffer and never allocates: data, tokens, reasons and even
//! the ACK ranges ([`AckRanges::Wire`]) stay in the buffer and are read in place. Everything a
//! frame can get wrong on its own is checked here, once, so that the connection can trust a
//! decoded [`Frame`]; rules that need connection state (stream limits, flow control, which side
//! may send NEW_TOKEN or HANDSHAKE_DONE) are the connection's job.
//!
//! The send path can write STREAM, CRYPTO and ACK frames straight into the packet buffer with
//! [`encode_stream_header`], [`encode_crypto_header`] and [`encode_ack`], without building a
//! [`Frame`] first.

use octets::{Octets, OctetsMut};

use crate::error::{Error, Result};
use crate::packet::Type;

mod ack_frequency;
mod ack_ranges;
mod decode;
mod encode;
mod wire;

use self::ack_frequency::{ACK_FREQUENCY, IMMEDIATE_ACK};
use self::ack_ranges::ecn_len;
use self::decode::{decode_body, is_known_type, stream_type, type_allowed_in};
use self::wire::{get_varint, vlen, vlen_usize};

pub use self::ack_frequency::MAX_REQUESTED_MAX_ACK_DELAY;
pub use self::ack_ranges::{AckRanges, AckRangesIter, WireAckRanges};
pub use self::encode::{
    crypto_header_len, encode_ack, encode_crypto_header, encode_stream_header,
    encode_stream_header_to_end, stream_header_len, stream_header_len_to_end,
};

/// The largest value a variable-length integer can carry (RFC 9000 §16).
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// The largest stream count a MAX_STREAMS or STREAMS_BLOCKED frame may carry (RFC 9000 §19.11,
/// §19.14): a stream ID is a 62-bit integer whose two low bits give the type, so no more than
/// 2^60 streams of one type can ever be opened.
pub const MAX_STREAM_COUNT: u64 = 1 << 60;

const PADDING: u64 = 0x00;
const PING: u64 = 0x01;
const ACK: u64 = 0x02;
const ACK_ECN: u64 = 0x03;
const RESET_STREAM: u64 = 0x04;
const STOP_SENDING: u64 = 0x05;
const CRYPTO: u64 = 0x06;
const NEW_TOKEN: u64 = 0x07;
const STREAM: u64 = 0x08;
const STREAM_MAX: u64 = 0x0f;
const MAX_DATA: u64 = 0x10;
const MAX_STREAM_DATA: u64 = 0x11;
const MAX_STREAMS_BIDI: u64 = 0x12;
const MAX_STREAMS_UNI: u64 = 0x13;
const DATA_BLOCKED: u64 = 0x14;
const STREAM_DATA_BLOCKED: u64 = 0x15;
const STREAMS_BLOCKED_BIDI: u64 = 0x16;
const STREAMS_BLOCKED_UNI: u64 = 0x17;
const NEW_CONNECTION_ID: u64 = 0x18;
const RETIRE_CONNECTION_ID: u64 = 0x19;
const PATH_CHALLENGE: u64 = 0x1a;
const PATH_RESPONSE: u64 = 0x1b;
const CONNECTION_CLOSE: u64 = 0x1c;
const APPLICATION_CLOSE: u64 = 0x1d;
const HANDSHAKE_DONE: u64 = 0x1e;
const DATAGRAM: u64 = 0x30;
const DATAGRAM_LEN: u64 = 0x31;

/// Flag bits in the STREAM frame type (RFC 9000 §19.8).
const STREAM_OFF: u64 = 0x04;
const STREAM_LEN: u64 = 0x02;
const STREAM_FIN: u64 = 0x01;

/// Length of a stateless reset token (RFC 9000 §10.3).
const RESET_TOKEN_LEN: usize = 16;

/// Packet types of Table 3's "Pkts" column, as bits.
const IN_INITIAL: u8 = 1;
const IN_HANDSHAKE: u8 = 2;
const IN_0RTT: u8 = 4;
const IN_1RTT: u8 = 8;

/// ECN counts carried by an ACK_ECN frame (RFC 9000 §19.3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// Packets received with the ECT(0) codepoint.
    pub ect0: u64,
    /// Packets received with the ECT(1) codepoint.
    pub ect1: u64,
    /// Packets received with the ECN-CE codepoint.
    pub ecn_ce: u64,
}

/// A QUIC frame, borrowing its variable-length parts from the packet buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// PADDING (0x00). A run of consecutive padding bytes decodes as one frame of that length.
    Padding {
        /// Number of padding bytes.
        len: usize,
    },
    /// PING (0x01).
    Ping,
    /// ACK (0x02) or ACK_ECN (0x03).
    ACK {
        /// The encoded ACK Delay, not yet scaled by the peer's ack_delay_exponent.
        ack_delay: u64,
        /// The acknowledged packet numbers.
        ranges: AckRanges<'a>,
        /// ECN counts; `Some` makes the frame an ACK_ECN.
        ecn_counts: Option<EcnCounts>,
    },
    /// RESET_STREAM (0x04).
    ResetStream {
        /// The stream being reset.
        stream_id: u64,
        /// The application error code.
        error_code: u64,
        /// The final size of the stream in bytes.
        final_size: u64,
    },
    /// STOP_SENDING (0x05).
    StopSending {
        /// The stream whose data is being discarded.
        stream_id: u64,
        /// The application error code.
        error_code: u64,
    },
    /// CRYPTO (0x06).
    Crypto {
        /// Byte offset of `data` in the crypto stream.
        offset: u64,
        /// The handshake data.
        data: &'a [u8],
    },
    /// NEW_TOKEN (0x07).
    NewToken {
        /// The address validation token (never empty).
        token: &'a [u8],
    },
    /// STREAM (0x08-0x0f).
    Stream {
        /// The stream the data belongs to.
        stream_id: u64,
        /// Byte offset of `data` in the stream.
        offset: u64,
        /// The stream data.
        data: &'a [u8],
        /// Whether this frame ends the stream.
        fin: bool,
    },
    /// MAX_DATA (0x10).
    MaxData {
        /// Connection-level limit on data, in bytes.
        max: u64,
    },
    /// MAX_STREAM_DATA (0x11).
    MaxStreamData {
        /// The stream the limit applies to.
        stream_id: u64,
        /// Stream-level limit on data, in bytes.
        max: u64,
    },
    /// MAX_STREAMS for bidirectional streams (0x12).
    MaxStreamsBidi {
        /// Cumulative number of bidirectional streams the peer may open.
        max: u64,
    },
    /// MAX_STREAMS for unidirectional streams (0x13).
    MaxStreamsUni {
        /// Cumulative number of unidirectional streams the peer may open.
        max: u64,
    },
    /// DATA_BLOCKED (0x14).
    DataBlocked {
        /// The connection-level limit at which the sender is blocked.
        limit: u64,
    },
    /// STREAM_DATA_BLOCKED (0x15).
    StreamDataBlocked {
        /// The blocked stream.
        stream_id: u64,
        /// The stream-level limit at which the sender is blocked.
        limit: u64,
    },
    /// STREAMS_BLOCKED for bidirectional streams (0x16).
    StreamsBlockedBidi {
        /// The stream limit at which the sender is blocked.
        limit: u64,
    },
    /// STREAMS_BLOCKED for unidirectional streams (0x17).
    StreamsBlockedUni {
        /// The stream limit at which the sender is blocked.
        limit: u64,
    },
    /// NEW_CONNECTION_ID (0x18).
    NewConnectionId {
        /// Sequence number of the connection ID.
        seq_num: u64,
        /// Connection IDs below this sequence number must be retired.
        retire_prior_to: u64,
        /// The connection ID (1 to 20 bytes).
        conn_id: &'a [u8],
        /// The stateless reset token tied to the connection ID.
        reset_token: [u8; 16],
    },
    /// RETIRE_CONNECTION_ID (0x19).
    RetireConnectionId {
        /// Sequence number of the connection ID being retired.
        seq_num: u64,
    },
    /// PATH_CHALLENGE (0x1a).
    PathChallenge {
        /// Arbitrary data to be echoed.
        data: [u8; 8],
    },
    /// PATH_RESPONSE (0x1b).
    PathResponse {
        /// The data of the PATH_CHALLENGE being answered.
        data: [u8; 8],
    },
    /// CONNECTION_CLOSE signalling a transport error (0x1c).
    ConnectionClose {
        /// The transport error code (RFC 9000 §20.1).
        error_code: u64,
        /// The type of the frame that triggered the error, 0 when unknown.
        frame_type: u64,
        /// Reason phrase, meant to be UTF-8 but not checked.
        reason: &'a [u8],
    },
    /// CONNECTION_CLOSE signalling an application error (0x1d).
    ApplicationClose {
        /// The application error code.
        error_code: u64,
        /// Reason phrase, meant to be UTF-8 but not checked.
        reason: &'a [u8],
    },
    /// HANDSHAKE_DONE (0x1e).
    HandshakeDone,
    /// DATAGRAM (0x30/0x31, RFC 9221). Always encoded with its length (0x31).
    Datagram {
        /// The datagram payload.
        data: &'a [u8],
    },
    /// ACK_FREQUENCY (0xaf, draft-ietf-quic-ack-frequency-12 §4).
    AckFrequency {
        /// Sequence Number: frames not above the largest processed one are obsolete.
        seq_num: u64,
        /// Ack-Eliciting Threshold: acknowledge once more than this many ack-eliciting
        /// packets wait.
        ack_eliciting_threshold: u64,
        /// Requested Max Ack Delay, in microseconds; below 2^14 ms
        /// ([`MAX_REQUESTED_MAX_ACK_DELAY`]).
        request_max_ack_delay: u64,
        /// Reordering Threshold: 0 ignores reordering, 1 is RFC 9000's rule.
        reordering_threshold: u64,
    },
    /// IMMEDIATE_ACK (0x1f, draft-ietf-quic-ack-frequency-12 §5).
    ImmediateAck,
}

impl<'a> Frame<'a> {
    /// Decodes one frame from `b`, which is advanced past it, checking that the frame may be
    /// carried by a packet of type `pkt` (RFC 9000 §12.4, Table 3).
    ///
    /// Errors: [`Error::InvalidFrame`] (FRAME_ENCODING_ERROR) for a truncated or malformed frame
    /// or an unknown frame type; [`Error::ProtocolViolation`] for a frame not allowed in `pkt`,
    /// a frame type that is not minimally encoded, or an ACK_FREQUENCY frame whose Requested
    /// Max Ack Delay is 2^14 ms or more (draft-ietf-quic-ack-frequency-12 §4). On error the
    /// position of `b` is unspecified.
    pub fn from_bytes(b: &mut Octets<'a>, pkt: Type) -> Result<Frame<'a>> {
        let start = b.off();
        let ty = get_varint(b)?;
        if !is_known_type(ty) {
            return Err(Error::InvalidFrame);
        }
        // RFC 9000 §12.4: frame types must use the shortest encoding; we may reject others.
        if b.off() - start != vlen(ty) {
            return Err(Error::ProtocolViolation);
        }
        if !type_allowed_in(ty, pkt) {
            return Err(Error::ProtocolViolation);
        }
        decode_body(b, ty)
    }

    /// Encodes the frame into `b` and returns the number of bytes written, which is always
    /// [`wire_len`](Self::wire_len).
    ///
    /// Fails with [`Error::BufferTooShort`] (writing nothing) when `b` has less room than that,
    /// and with [`Error::InvalidFrame`] for a frame the decoder would reject (a value above
    /// 2^62-1, an empty token, a bad connection ID length, an empty ACK set, ...).
    pub fn to_bytes(&self, b: &mut OctetsMut) -> Result<usize> {
        let len = self.wire_len();
        if len > b.cap() {
            return Err(Error::BufferTooShort);
        }
        let start = b.off();
        self.encode(b)?;
        Ok(b.off() - start)
    }

    /// The exact number of bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn wire_len(&self) -> usize {
        let body = match self {
            Frame::Padding { len } => return *len,
            Frame::Ping | Frame::HandshakeDone | Frame::ImmediateAck => 0,
            Frame::ACK {
                ack_delay,
                ranges,
                ecn_counts,
            } => vlen(*ack_delay) + ranges.encoded_len() + ecn_counts.as_ref().map_or(0, ecn_len),
            Frame::ResetStream {
                stream_id,
                error_code,
                final_size,
            } => vlen(*stream_id) + vlen(*error_code) + vlen(*final_size),
            Frame::StopSending {
                stream_id,
                error_code,
            } => vlen(*stream_id) + vlen(*error_code),
            Frame::Crypto { offset, data } => {
                return crypto_header_len(*offset, data.len()) + data.len()
            }
            Frame::NewToken { token } => vlen_usize(token.len()) + token.len(),
            Frame::Stream {
                stream_id,
                offset,
                data,
                ..
            } => return stream_header_len(*stream_id, *offset, data.len()) + data.len(),
            Frame::MaxData { max }
            | Frame::MaxStreamsBidi { max }
            | Frame::MaxStreamsUni { max } => vlen(*max),
            Frame::DataBlocked { limit }
            | Frame::StreamsBlockedBidi { limit }
            | Frame::StreamsBlockedUni { limit } => vlen(*limit),
            Frame::MaxStreamData { stream_id, max } => vlen(*stream_id) + vlen(*max),
            Frame::StreamDataBlocked { stream_id, limit } => vlen(*stream_id) + vlen(*limit),
            Frame::NewConnectionId {
                seq_num,
                retire_prior_to,
                conn_id,
                ..
            } => vlen(*seq_num) + vlen(*retire_prior_to) + 1 + conn_id.len() + RESET_TOKEN_LEN,
            Frame::RetireConnectionId { seq_num } => vlen(*seq_num),
            Frame::PathChallenge { .. } | Frame::PathResponse { .. } => 8,
            Frame::ConnectionClose {
                error_code,
                frame_type,
                reason,
            } => vlen(*error_code) + vlen(*frame_type) + vlen_usize(reason.len()) + reason.len(),
            Frame::ApplicationClose { error_code, reason } => {
                vlen(*error_code) + vlen_usize(reason.len()) + reason.len()
            }
            Frame::Datagram { data } => vlen_usize(data.len()) + data.len(),
            Frame::AckFrequency {
                seq_num,
                ack_eliciting_threshold,
                request_max_ack_delay,
                reordering_threshold,
            } => ack_frequency::body_len(
                *seq_num,
                *ack_eliciting_threshold,
                *request_max_ack_delay,
                *reordering_threshold,
            ),
        };
        vlen(self.ty()) + body
    }

    /// The frame type code this frame is encoded with.
    pub fn ty(&self) -> u64 {
        match self {
            Frame::Padding { .. } => PADDING,
            Frame::Ping => PING,
            Frame::ACK {
                ecn_counts: None, ..
            } => ACK,
            Frame::ACK { .. } => ACK_ECN,
            Frame::ResetStream { .. } => RESET_STREAM,
            Frame::StopSending { .. } => STOP_SENDING,
            Frame::Crypto { .. } => CRYPTO,
            Frame::NewToken { .. } => NEW_TOKEN,
            Frame::Stream { offset, fin, .. } => stream_type(*offset, *fin),
            Frame::MaxData { .. } => MAX_DATA,
            Frame::MaxStreamData { .. } => MAX_STREAM_DATA,
            Frame::MaxStreamsBidi { .. } => MAX_STREAMS_BIDI,
            Frame::MaxStreamsUni { .. } => MAX_STREAMS_UNI,
            Frame::DataBlocked { .. } => DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => STREAM_DATA_BLOCKED,
            Frame::StreamsBlockedBidi { .. } => STREAMS_BLOCKED_BIDI,
            Frame::StreamsBlockedUni { .. } => STREAMS_BLOCKED_UNI,
            Frame::NewConnectionId { .. } => NEW_CONNECTION_ID,
            Frame::RetireConnectionId { .. } => RETIRE_CONNECTION_ID,
            Frame::PathChallenge { .. } => PATH_CHALLENGE,
            Frame::PathResponse { .. } => PATH_RESPONSE,
            Frame::ConnectionClose { .. } => CONNECTION_CLOSE,
            Frame::ApplicationClose { .. } => APPLICATION_CLOSE,
            Frame::HandshakeDone => HANDSHAKE_DONE,
            Frame::Datagram { .. } => DATAGRAM_LEN,
            Frame::AckFrequency { .. } => ACK_FREQUENCY,
            Frame::ImmediateAck => IMMEDIATE_ACK,
        }
    }

    /// Whether receiving this frame obliges the receiver to send an ACK (RFC 9000 §13.2):
    /// every frame except ACK, PADDING and CONNECTION_CLOSE.
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::ACK { .. }
                | Frame::Padding { .. }
                | Frame::ConnectionClose { .. }
                | Frame::ApplicationClose { .. }
        )
    }

    /// Whether a packet of type `pkt` may carry this frame (RFC 9000 §12.4, Table 3).
    pub fn allowed_in(&self, pkt: Type) -> bool {
        type_allowed_in(self.ty(), pkt)
    }

    /// Whether this is a probing frame (RFC 9000 §9.1): a packet made only of probing frames
    /// does not make the peer migrate to the path it arrived on.
    pub fn is_probing(&self) -> bool {
        matches!(
            self,
            Frame::PathChallenge { .. }
                | Frame::PathResponse { .. }
                | Frame::NewConnectionId { .. }
                | Frame::Padding { .. }
        )
    }
}

/// Decodes the frames of a packet payload one by one; see [`parse_all`].
pub struct FrameIter<'a> {
    b: Octets<'a>,
    pkt: Type,
    failed: bool,
}

impl FrameIter<'_> {
    /// Offset in the payload of the next frame (or of the frame that failed to decode).
    pub fn offset(&self) -> usize {
        self.b.off()
    }
}

impl<'a> Iterator for FrameIter<'a> {
    type Item = Result<Frame<'a>>;

    fn next(&mut self) -> Option<Result<Frame<'a>>> {
        if self.failed || self.b.cap() == 0 {
            return None;
        }
        let start = self.b.off();
        let r = Frame::from_bytes(&mut self.b, self.pkt);
        if r.is_err() {
            self.failed = true;
            // Leave the offset at the start of the frame that failed, for diagnostics.
            let consumed = self.b.off() - start;
            let _ = self.b.rewind(consumed);
        }
        Some(r)
    }
}

impl std::iter::FusedIterator for FrameIter<'_> {}

/// Decodes every frame of a packet payload carried by a packet of type `pkt`.
///
/// The iterator yields each frame in order and stops after the first error (which it yields).
/// It does not check that the payload holds at least one frame (RFC 9000 §12.4); that is the
/// packet's concern.
pub fn parse_all(payload: &[u8], pkt: Type) -> FrameIter<'_> {
    FrameIter {
        b: Octets::with_slice(payload),
        pkt,
        failed: false,
    }
}

#[cfg(test)]
mod tests;
