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

use std::fmt;
use std::ops::Range;

use octets::{Octets, OctetsMut};

use crate::error::{Error, Result};
use crate::packet::{Type, MAX_CONN_ID_LEN};
use crate::ranges::RangeSet;

mod ack_frequency;

pub use self::ack_frequency::MAX_REQUESTED_MAX_ACK_DELAY;
use self::ack_frequency::{ACK_FREQUENCY, IMMEDIATE_ACK};

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

/// The ranges of an ACK frame, in one of two forms that compare equal when they hold the same
/// packet numbers.
#[derive(Clone, Copy)]
pub enum AckRanges<'a> {
    /// As received: the encoded fields, read in place and validated when the frame was decoded.
    Wire(WireAckRanges<'a>),
    /// A receiver's set of packet numbers, to be encoded.
    Set(&'a RangeSet),
}

/// The ranges of a received ACK frame, still in their encoded form (RFC 9000 §19.3.1).
///
/// Only the decoder builds these, after checking that every range lies at or above zero, so
/// iterating over them cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct WireAckRanges<'a> {
    largest: u64,
    first_range: u64,
    count: u64,
    smallest: u64,
    /// The ACK Range Count gap/length pairs, as encoded.
    raw: &'a [u8],
}

impl<'a> AckRanges<'a> {
    /// Iterates over the acknowledged ranges, largest first (descending order).
    pub fn iter(&self) -> AckRangesIter<'a> {
        match self {
            AckRanges::Wire(w) => AckRangesIter(IterInner::Wire {
                next: Some((w.largest, w.largest.saturating_sub(w.first_range))),
                remaining: w.count,
                raw: w.raw,
            }),
            AckRanges::Set(s) => AckRangesIter(IterInner::Set(s.iter().rev())),
        }
    }

    /// The largest acknowledged packet number (0 for an empty set, which cannot be encoded).
    pub fn largest(&self) -> u64 {
        match self {
            AckRanges::Wire(w) => w.largest,
            AckRanges::Set(s) => s.last().unwrap_or(0),
        }
    }

    /// The smallest acknowledged packet number (0 for an empty set, which cannot be encoded).
    pub fn smallest(&self) -> u64 {
        match self {
            AckRanges::Wire(w) => w.smallest,
            AckRanges::Set(s) => s.first().unwrap_or(0),
        }
    }

    /// The number of ranges.
    pub fn len(&self) -> usize {
        match self {
            AckRanges::Wire(w) => {
                usize::try_from(w.count).map_or(usize::MAX, |c| c.saturating_add(1))
            }
            AckRanges::Set(s) => s.len(),
        }
    }

    /// Whether there is no range (only possible for an empty [`AckRanges::Set`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn encoded_len(&self) -> usize {
        match self {
            AckRanges::Wire(w) => {
                vlen(w.largest) + vlen(w.count) + vlen(w.first_range) + w.raw.len()
            }
            AckRanges::Set(s) => set_ack_ranges_len(s, s.len().saturating_sub(1)),
        }
    }

    fn encode(&self, b: &mut OctetsMut, ack_delay: u64) -> Result<()> {
        match self {
            AckRanges::Wire(w) => {
                put_varint(b, w.largest)?;
                put_varint(b, ack_delay)?;
                put_varint(b, w.count)?;
                put_varint(b, w.first_range)?;
                b.put_bytes(w.raw)?;
                Ok(())
            }
            AckRanges::Set(s) => put_set_ack_ranges(b, s, s.len().saturating_sub(1), ack_delay),
        }
    }
}

impl PartialEq for AckRanges<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for AckRanges<'_> {}

impl fmt::Debug for AckRanges<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over [`AckRanges`], largest range first.
#[derive(Clone)]
pub struct AckRangesIter<'a>(IterInner<'a>);

#[derive(Clone)]
enum IterInner<'a> {
    /// Walking the encoded gap/length pairs.
    Wire {
        /// Largest and smallest packet number of the range to yield next.
        next: Option<(u64, u64)>,
        /// Encoded pairs left in `raw`.
        remaining: u64,
        /// The encoded pairs not yet read.
        raw: &'a [u8],
    },
    /// Walking a set from its top.
    Set(std::iter::Rev<crate::ranges::Iter<'a>>),
}

impl Iterator for AckRangesIter<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        match &mut self.0 {
            IterInner::Wire {
                next,
                remaining,
                raw,
            } => {
                let (largest, smallest) = next.take()?;
                if *remaining > 0 {
                    *remaining -= 1;
                    // Validated at decode time; a failure here would only end the iteration.
                    let mut b = Octets::with_slice(raw);
                    *next = read_ack_range(&mut b, smallest).ok();
                    *raw = raw.get(b.off()..).unwrap_or(&[]);
                }
                Some(smallest..largest.saturating_add(1))
            }
            IterInner::Set(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterInner::Wire { next: None, .. } => (0, Some(0)),
            IterInner::Wire { remaining, .. } => {
                let n = usize::try_from(*remaining).map_or(usize::MAX, |r| r.saturating_add(1));
                (n, Some(n))
            }
            IterInner::Set(it) => it.size_hint(),
        }
    }
}

impl std::iter::FusedIterator for AckRangesIter<'_> {}

/// Reads one Gap/ACK Range Length pair following a range whose smallest packet number is
/// `prev_smallest`, and returns the next range's largest and smallest packet numbers.
fn read_ack_range(b: &mut Octets, prev_smallest: u64) -> Result<(u64, u64)> {
    let gap = get_varint(b)?;
    let len = get_varint(b)?;
    // RFC 9000 §19.3.1: largest = previous_smallest - gap - 2, smallest = largest - length;
    // a negative result is a FRAME_ENCODING_ERROR.
    let largest = prev_smallest
        .checked_sub(gap)
        .and_then(|v| v.checked_sub(2))
        .ok_or(Error::InvalidFrame)?;
    let smallest = largest.checked_sub(len).ok_or(Error::InvalidFrame)?;
    Ok((largest, smallest))
}

impl<'a> Frame<'a> {
    /// Decodes one frame from `b`, which is advanced past it, checking that the frame may be
    /// carried by a packet of type `pkt` (RFC 9000 §12.4, Table 3).
    ///
    /// Errors: [`Error::InvalidFrame`] (FRAME_ENCODING_ERROR) for a truncated or malformed frame
    /// or an unknown frame type; [`Error::ProtocolViolation`] for a frame not allowed in `pkt`,
    /// a frame type that is not minimally encoded, or an ACK_FREQUENCY frame whose Requested
    /// Max Ack Delay is 2^14 ms or more (draft-ietf-quic-ack-frequency-12 §4). On error the position of `b` is
    /// unspecified.
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

    fn encode(&self, b: &mut OctetsMut) -> Result<()> {
        match self {
            Frame::Padding { len } => {
                b.get_bytes_mut(*len)?.as_mut().fill(0);
                return Ok(());
            }
            Frame::Crypto { offset, data } => {
                encode_crypto_header(*offset, data.len(), b)?;
                b.put_bytes(data)?;
                return Ok(());
            }
            Frame::Stream {
                stream_id,
                offset,
                data,
                fin,
            } => {
                encode_stream_header(*stream_id, *offset, data.len(), *fin, b)?;
                b.put_bytes(data)?;
                return Ok(());
            }
            _ => (),
        }
        put_varint(b, self.ty())?;
        match self {
            Frame::ACK {
                ack_delay,
                ranges,
                ecn_counts,
            } => {
                ranges.encode(b, *ack_delay)?;
                if let Some(ecn) = ecn_counts {
                    put_ecn(b, ecn)?;
                }
            }
            Frame::ResetStream {
                stream_id,
                error_code,
                final_size,
            } => {
                put_varint(b, *stream_id)?;
                put_varint(b, *error_code)?;
                put_varint(b, *final_size)?;
            }
            Frame::StopSending {
                stream_id,
                error_code,
            } => {
                put_varint(b, *stream_id)?;
                put_varint(b, *error_code)?;
            }
            Frame::NewToken { token } => {
                if token.is_empty() {
                    return Err(Error::InvalidFrame);
                }
                put_bytes_with_len(b, token)?;
            }
            Frame::MaxData { max } => put_varint(b, *max)?,
            Frame::MaxStreamsBidi { max } | Frame::MaxStreamsUni { max } => {
                put_stream_count(b, *max)?
            }
            Frame::DataBlocked { limit } => put_varint(b, *limit)?,
            Frame::StreamsBlockedBidi { limit } | Frame::StreamsBlockedUni { limit } => {
                put_stream_count(b, *limit)?
            }
            Frame::MaxStreamData { stream_id, max: v }
            | Frame::StreamDataBlocked {
                stream_id,
                limit: v,
            } => {
                put_varint(b, *stream_id)?;
                put_varint(b, *v)?;
            }
            Frame::NewConnectionId {
                seq_num,
                retire_prior_to,
                conn_id,
                reset_token,
            } => {
                check_new_conn_id(*seq_num, *retire_prior_to, conn_id.len())?;
                put_varint(b, *seq_num)?;
                put_varint(b, *retire_prior_to)?;
                // Checked above: at most MAX_CONN_ID_LEN, so it fits in a byte.
                b.put_u8(conn_id.len() as u8)?;
                b.put_bytes(conn_id)?;
                b.put_bytes(reset_token)?;
            }
            Frame::RetireConnectionId { seq_num } => put_varint(b, *seq_num)?,
            Frame::PathChallenge { data } | Frame::PathResponse { data } => b.put_bytes(data)?,
            Frame::ConnectionClose {
                error_code,
                frame_type,
                reason,
            } => {
                put_varint(b, *error_code)?;
                put_varint(b, *frame_type)?;
                put_bytes_with_len(b, reason)?;
            }
            Frame::ApplicationClose { error_code, reason } => {
                put_varint(b, *error_code)?;
                put_bytes_with_len(b, reason)?;
            }
            Frame::Datagram { data } => put_bytes_with_len(b, data)?,
            Frame::AckFrequency {
                seq_num,
                ack_eliciting_threshold,
                request_max_ack_delay,
                reordering_threshold,
            } => ack_frequency::encode(
                b,
                *seq_num,
                *ack_eliciting_threshold,
                *request_max_ack_delay,
                *reordering_threshold,
            )?,
            Frame::Ping
            | Frame::ImmediateAck
            | Frame::HandshakeDone
            | Frame::Padding { .. }
            | Frame::Crypto { .. }
            | Frame::Stream { .. } => (),
        }
        Ok(())
    }
}

/// Decodes the body of a frame whose (known, allowed) type `ty` has just been read.
fn decode_body<'a>(b: &mut Octets<'a>, ty: u64) -> Result<Frame<'a>> {
    let frame = match ty {
        PADDING => {
            let rest = b.slice(b.cap()).map_err(|_| Error::InvalidFrame)?;
            let zeros = rest.iter().take_while(|&&x| x == 0).count();
            b.skip(zeros).map_err(|_| Error::InvalidFrame)?;
            Frame::Padding { len: zeros + 1 }
        }
        PING => Frame::Ping,
        ACK | ACK_ECN => decode_ack(b, ty == ACK_ECN)?,
        RESET_STREAM => Frame::ResetStream {
            stream_id: get_varint(b)?,
            error_code: get_varint(b)?,
            final_size: get_varint(b)?,
        },
        STOP_SENDING => Frame::StopSending {
            stream_id: get_varint(b)?,
            error_code: get_varint(b)?,
        },
        CRYPTO => {
            let offset = get_varint(b)?;
            let data = get_bytes_with_len(b)?;
            // RFC 9000 §19.6: the crypto stream has the same 2^62-1 bound as other streams.
            check_end(offset, data.len())?;
            Frame::Crypto { offset, data }
        }
        NEW_TOKEN => {
            let token = get_bytes_with_len(b)?;
            // RFC 9000 §19.7: an empty token is a FRAME_ENCODING_ERROR.
            if token.is_empty() {
                return Err(Error::InvalidFrame);
            }
            Frame::NewToken { token }
        }
        STREAM..=STREAM_MAX => decode_stream(b, ty)?,
        MAX_DATA => Frame::MaxData {
            max: get_varint(b)?,
        },
        MAX_STREAM_DATA => Frame::MaxStreamData {
            stream_id: get_varint(b)?,
            max: get_varint(b)?,
        },
        MAX_STREAMS_BIDI => Frame::MaxStreamsBidi {
            max: get_stream_count(b)?,
        },
        MAX_STREAMS_UNI => Frame::MaxStreamsUni {
            max: get_stream_count(b)?,
        },
        DATA_BLOCKED => Frame::DataBlocked {
            limit: get_varint(b)?,
        },
        STREAM_DATA_BLOCKED => Frame::StreamDataBlocked {
            stream_id: get_varint(b)?,
            limit: get_varint(b)?,
        },
        STREAMS_BLOCKED_BIDI => Frame::StreamsBlockedBidi {
            limit: get_stream_count(b)?,
        },
        STREAMS_BLOCKED_UNI => Frame::StreamsBlockedUni {
            limit: get_stream_count(b)?,
        },
        NEW_CONNECTION_ID => decode_new_conn_id(b)?,
        RETIRE_CONNECTION_ID => Frame::RetireConnectionId {
            seq_num: get_varint(b)?,
        },
        PATH_CHALLENGE => Frame::PathChallenge {
            data: get_array(b)?,
        },
        PATH_RESPONSE => Frame::PathResponse {
            data: get_array(b)?,
        },
        CONNECTION_CLOSE => Frame::ConnectionClose {
            error_code: get_varint(b)?,
            frame_type: get_varint(b)?,
            reason: get_bytes_with_len(b)?,
        },
        APPLICATION_CLOSE => Frame::ApplicationClose {
            error_code: get_varint(b)?,
            reason: get_bytes_with_len(b)?,
        },
        HANDSHAKE_DONE => Frame::HandshakeDone,
        // RFC 9221 §4: without the LEN bit the datagram extends to the end of the packet.
        DATAGRAM => Frame::Datagram { data: get_rest(b)? },
        DATAGRAM_LEN => Frame::Datagram {
            data: get_bytes_with_len(b)?,
        },
        ACK_FREQUENCY => ack_frequency::decode(b)?,
        IMMEDIATE_ACK => Frame::ImmediateAck,
        _ => return Err(Error::InvalidFrame),
    };
    Ok(frame)
}

fn decode_ack<'a>(b: &mut Octets<'a>, ecn: bool) -> Result<Frame<'a>> {
    let largest = get_varint(b)?;
    let ack_delay = get_varint(b)?;
    let count = get_varint(b)?;
    let first_range = get_varint(b)?;
    let mut smallest = largest
        .checked_sub(first_range)
        .ok_or(Error::InvalidFrame)?;
    // Every further range takes at least two bytes: reject impossible counts before looping.
    if count > (b.cap() / 2) as u64 {
        return Err(Error::InvalidFrame);
    }
    let raw_start = b.off();
    for _ in 0..count {
        smallest = read_ack_range(b, smallest)?.1;
    }
    let raw = b.buf().get(raw_start..b.off()).ok_or(Error::InvalidFrame)?;
    let ecn_counts = if ecn {
        Some(EcnCounts {
            ect0: get_varint(b)?,
            ect1: get_varint(b)?,
            ecn_ce: get_varint(b)?,
        })
    } else {
        None
    };
    Ok(Frame::ACK {
        ack_delay,
        ranges: AckRanges::Wire(WireAckRanges {
            largest,
            first_range,
            count,
            smallest,
            raw,
        }),
        ecn_counts,
    })
}

fn decode_stream<'a>(b: &mut Octets<'a>, ty: u64) -> Result<Frame<'a>> {
    let stream_id = get_varint(b)?;
    let offset = if ty & STREAM_OFF != 0 {
        get_varint(b)?
    } else {
        0
    };
    // RFC 9000 §19.8: without the LEN bit the data extends to the end of the packet.
    let data = if ty & STREAM_LEN != 0 {
        get_bytes_with_len(b)?
    } else {
        get_rest(b)?
    };
    check_end(offset, data.len())?;
    Ok(Frame::Stream {
        stream_id,
        offset,
        data,
        fin: ty & STREAM_FIN != 0,
    })
}

fn decode_new_conn_id<'a>(b: &mut Octets<'a>) -> Result<Frame<'a>> {
    let seq_num = get_varint(b)?;
    let retire_prior_to = get_varint(b)?;
    let len = b.get_u8().map_err(|_| Error::InvalidFrame)?;
    check_new_conn_id(seq_num, retire_prior_to, usize::from(len))?;
    let conn_id = get_bytes(b, u64::from(len))?;
    Ok(Frame::NewConnectionId {
        seq_num,
        retire_prior_to,
        conn_id,
        reset_token: get_array(b)?,
    })
}

/// RFC 9000 §19.15: a connection ID of 1 to 20 bytes, and retire_prior_to no greater than the
/// sequence number, else FRAME_ENCODING_ERROR.
fn check_new_conn_id(seq_num: u64, retire_prior_to: u64, len: usize) -> Result<()> {
    if len == 0 || len > MAX_CONN_ID_LEN || retire_prior_to > seq_num {
        return Err(Error::InvalidFrame);
    }
    Ok(())
}

/// RFC 9000 §19.8: the end of the data, offset plus length, may not exceed 2^62-1.
fn check_end(offset: u64, len: usize) -> Result<()> {
    let end = u64::try_from(len)
        .ok()
        .and_then(|l| offset.checked_add(l))
        .ok_or(Error::InvalidFrame)?;
    if end > MAX_VARINT {
        return Err(Error::InvalidFrame);
    }
    Ok(())
}

fn is_known_type(ty: u64) -> bool {
    ty <= IMMEDIATE_ACK || ty == DATAGRAM || ty == DATAGRAM_LEN || ty == ACK_FREQUENCY
}

/// Table 3 of RFC 9000 §12.4 ("Pkts" column) plus RFC 9221 §4 for DATAGRAM, which is
/// application data and so only travels under 0-RTT or 1-RTT keys.
fn type_allowed_in(ty: u64, pkt: Type) -> bool {
    let all = IN_INITIAL | IN_HANDSHAKE | IN_0RTT | IN_1RTT;
    let allowed = match ty {
        PADDING | PING | CONNECTION_CLOSE => all,
        // ACK is not allowed in 0-RTT: the client cannot yet acknowledge 1-RTT packets there
        // (RFC 9000 §17.2.3).
        ACK | ACK_ECN | CRYPTO => IN_INITIAL | IN_HANDSHAKE | IN_1RTT,
        NEW_TOKEN | PATH_RESPONSE | HANDSHAKE_DONE => IN_1RTT,
        // Not in 0-RTT: the peer's min_ack_delay, which allows them, is not remembered across
        // connections (draft-ietf-quic-ack-frequency-12 §3).
        ACK_FREQUENCY | IMMEDIATE_ACK => IN_1RTT,
        _ if is_known_type(ty) => IN_0RTT | IN_1RTT,
        _ => 0,
    };
    let bit = match pkt {
        Type::Initial => IN_INITIAL,
        Type::Handshake => IN_HANDSHAKE,
        Type::ZeroRTT => IN_0RTT,
        Type::Short => IN_1RTT,
        Type::Retry | Type::VersionNegotiation => 0,
    };
    allowed & bit != 0
}

fn stream_type(offset: u64, fin: bool) -> u64 {
    let mut ty = STREAM | STREAM_LEN;
    if offset > 0 {
        ty |= STREAM_OFF;
    }
    if fin {
        ty |= STREAM_FIN;
    }
    ty
}

/// The length of a STREAM frame header as [`encode_stream_header`] writes it, for `len` bytes
/// of data.
pub fn stream_header_len(stream_id: u64, offset: u64, len: usize) -> usize {
    let off_len = if offset > 0 { vlen(offset) } else { 0 };
    1 + vlen(stream_id) + off_len + vlen_usize(len)
}

/// Writes the header of a STREAM frame carrying `len` bytes of data at `offset`; the caller
/// writes the data right after it. The header always has the LEN bit, and the OFF bit only
/// when `offset > 0`. Returns the header's length.
pub fn encode_stream_header(
    stream_id: u64,
    offset: u64,
    len: usize,
    fin: bool,
    b: &mut OctetsMut,
) -> Result<usize> {
    put_stream_header(stream_id, offset, len, fin, true, b)
}

/// Writes a STREAM frame header, with the Length field or without it (`with_len`).
fn put_stream_header(
    stream_id: u64,
    offset: u64,
    len: usize,
    fin: bool,
    with_len: bool,
    b: &mut OctetsMut,
) -> Result<usize> {
    check_end(offset, len)?;
    let start = b.off();
    let ty = stream_type(offset, fin);
    put_varint(b, if with_len { ty } else { ty & !STREAM_LEN })?;
    put_varint(b, stream_id)?;
    if offset > 0 {
        put_varint(b, offset)?;
    }
    if with_len {
        put_varint(b, len as u64)?;
    }
    Ok(b.off() - start)
}

/// The length of the header of a STREAM frame that ends its packet and so has no Length field
/// (RFC 9000 §19.8: without the LEN bit the data extends to the end of the packet).
pub fn stream_header_len_to_end(stream_id: u64, offset: u64) -> usize {
    let off_len = if offset > 0 { vlen(offset) } else { 0 };
    1 + vlen(stream_id) + off_len
}

/// Writes the header of a STREAM frame without a Length field: its `len` bytes of data, which
/// the caller writes right after it, must end the packet's payload (no padding after them).
/// Returns the header's length.
pub fn encode_stream_header_to_end(
    stream_id: u64,
    offset: u64,
    len: usize,
    fin: bool,
    b: &mut OctetsMut,
) -> Result<usize> {
    put_stream_header(stream_id, offset, len, fin, false, b)
}

/// The length of a CRYPTO frame header as [`encode_crypto_header`] writes it.
pub fn crypto_header_len(offset: u64, len: usize) -> usize {
    1 + vlen(offset) + vlen_usize(len)
}

/// Writes the header of a CRYPTO frame carrying `len` bytes of data at `offset`; the caller
/// writes the data right after it. Returns the header's length.
pub fn encode_crypto_header(offset: u64, len: usize, b: &mut OctetsMut) -> Result<usize> {
    check_end(offset, len)?;
    let start = b.off();
    put_varint(b, CRYPTO)?;
    put_varint(b, offset)?;
    put_varint(b, len as u64)?;
    Ok(b.off() - start)
}

/// Writes an ACK (or ACK_ECN when `ecn` is given) frame for the packet numbers in `ranges`,
/// taking at most `max_len` bytes (and no more than `b` has room for).
///
/// The largest ranges go first, since they matter most to the peer's loss detection; lower
/// ranges that do not fit are left out. Returns the number of bytes written. Fails with
/// [`Error::Done`] when `ranges` is empty, and with [`Error::BufferTooShort`] (writing
/// nothing) when not even the largest range fits.
pub fn encode_ack(
    ranges: &RangeSet,
    ack_delay: u64,
    ecn: Option<&EcnCounts>,
    max_len: usize,
    b: &mut OctetsMut,
) -> Result<usize> {
    if ranges.is_empty() {
        return Err(Error::Done);
    }
    let limit = max_len.min(b.cap());
    let fixed = 1 + vlen(ack_delay) + ecn.map_or(0, ecn_len);
    // Find how many ranges below the first fit. The range count is written before the ranges,
    // so its own length (which grows with the count) is part of the check.
    let mut extra = 0;
    let mut pairs_len = 0;
    let mut it = ranges.iter().rev();
    let mut prev = it.next().unwrap_or(0..0);
    let head = |n: usize| fixed + set_ack_head_len(ranges, n);
    if head(0) > limit {
        return Err(Error::BufferTooShort);
    }
    for r in it {
        let (gap, len) = gap_and_len(&prev, &r);
        let add = vlen(gap) + vlen(len);
        if head(extra + 1) + pairs_len + add > limit {
            break;
        }
        extra += 1;
        pairs_len += add;
        prev = r;
    }
    let start = b.off();
    put_varint(b, if ecn.is_some() { ACK_ECN } else { ACK })?;
    put_set_ack_ranges(b, ranges, extra, ack_delay)?;
    if let Some(ecn) = ecn {
        put_ecn(b, ecn)?;
    }
    Ok(b.off() - start)
}

/// Length of Largest Acknowledged, ACK Range Count and First ACK Range for `extra` ranges below
/// the first. `set` must not be empty.
fn set_ack_head_len(set: &RangeSet, extra: usize) -> usize {
    let first = set.iter().next_back().unwrap_or(0..0);
    let largest = first.end.saturating_sub(1);
    vlen(largest) + vlen_usize(extra) + vlen(largest.saturating_sub(first.start))
}

/// Length of the ACK range fields (without type, delay and ECN) for the top `extra + 1` ranges.
fn set_ack_ranges_len(set: &RangeSet, extra: usize) -> usize {
    let mut it = set.iter().rev();
    let Some(mut prev) = it.next() else {
        return 0;
    };
    let mut len = set_ack_head_len(set, extra);
    for r in it.take(extra) {
        let (gap, l) = gap_and_len(&prev, &r);
        len += vlen(gap) + vlen(l);
        prev = r;
    }
    len
}

/// Writes Largest Acknowledged, ACK Delay, ACK Range Count, First ACK Range and `extra`
/// Gap/Length pairs for the top ranges of `set`.
fn put_set_ack_ranges(b: &mut OctetsMut, set: &RangeSet, extra: usize, delay: u64) -> Result<()> {
    let mut it = set.iter().rev();
    let Some(first) = it.next() else {
        return Err(Error::InvalidFrame);
    };
    let largest = first.end - 1;
    put_varint(b, largest)?;
    put_varint(b, delay)?;
    put_varint(b, extra as u64)?;
    put_varint(b, largest - first.start)?;
    let mut prev = first;
    for r in it.take(extra) {
        let (gap, len) = gap_and_len(&prev, &r);
        put_varint(b, gap)?;
        put_varint(b, len)?;
        prev = r;
    }
    Ok(())
}

/// The Gap and ACK Range Length fields for range `cur` following the higher range `prev`
/// (RFC 9000 §19.3.1). A [`RangeSet`] never holds adjacent ranges, so the gap is never negative.
fn gap_and_len(prev: &Range<u64>, cur: &Range<u64>) -> (u64, u64) {
    let gap = prev.start.saturating_sub(cur.end).saturating_sub(1);
    let len = cur.end.saturating_sub(1).saturating_sub(cur.start);
    (gap, len)
}

fn ecn_len(ecn: &EcnCounts) -> usize {
    vlen(ecn.ect0) + vlen(ecn.ect1) + vlen(ecn.ecn_ce)
}

fn put_ecn(b: &mut OctetsMut, ecn: &EcnCounts) -> Result<()> {
    put_varint(b, ecn.ect0)?;
    put_varint(b, ecn.ect1)?;
    put_varint(b, ecn.ecn_ce)
}

/// A varint's encoded length. Unlike `octets::varint_len` it does not panic on values above
/// [`MAX_VARINT`]; those cannot be encoded and make [`put_varint`] fail.
fn vlen(v: u64) -> usize {
    if v <= MAX_VARINT {
        octets::varint_len(v)
    } else {
        8
    }
}

fn vlen_usize(v: usize) -> usize {
    vlen(u64::try_from(v).unwrap_or(u64::MAX))
}

fn put_varint(b: &mut OctetsMut, v: u64) -> Result<()> {
    if v > MAX_VARINT {
        return Err(Error::InvalidFrame);
    }
    b.put_varint(v)?;
    Ok(())
}

fn put_bytes_with_len(b: &mut OctetsMut, v: &[u8]) -> Result<()> {
    put_varint(b, v.len() as u64)?;
    b.put_bytes(v)?;
    Ok(())
}

fn put_stream_count(b: &mut OctetsMut, v: u64) -> Result<()> {
    if v > MAX_STREAM_COUNT {
        return Err(Error::InvalidFrame);
    }
    put_varint(b, v)
}

/// Reads a varint; running out of bytes inside a frame is a FRAME_ENCODING_ERROR.
fn get_varint(b: &mut Octets) -> Result<u64> {
    b.get_varint().map_err(|_| Error::InvalidFrame)
}

fn get_bytes<'a>(b: &mut Octets<'a>, len: u64) -> Result<&'a [u8]> {
    let len = usize::try_from(len).map_err(|_| Error::InvalidFrame)?;
    Ok(b.get_bytes(len).map_err(|_| Error::InvalidFrame)?.buf())
}

fn get_bytes_with_len<'a>(b: &mut Octets<'a>) -> Result<&'a [u8]> {
    let len = get_varint(b)?;
    get_bytes(b, len)
}

fn get_rest<'a>(b: &mut Octets<'a>) -> Result<&'a [u8]> {
    let len = b.cap();
    get_bytes(b, len as u64)
}

fn get_array<const N: usize>(b: &mut Octets) -> Result<[u8; N]> {
    let s = b.get_bytes(N).map_err(|_| Error::InvalidFrame)?;
    s.buf().try_into().map_err(|_| Error::InvalidFrame)
}

/// RFC 9000 §19.11, §19.14: a count above 2^60 is a FRAME_ENCODING_ERROR.
fn get_stream_count(b: &mut Octets) -> Result<u64> {
    let v = get_varint(b)?;
    if v > MAX_STREAM_COUNT {
        return Err(Error::InvalidFrame);
    }
    Ok(v)
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
