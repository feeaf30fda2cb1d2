//! Frames as qlog `QuicFrame`s (draft-ietf-quic-qlog-quic-events-04 §8.12), from decoded
//! [`Frame`]s or, on the send path that writes frames straight into the packet buffer, from the
//! few numbers that describe them.

use std::time::Duration;

use ::qlog::events::quic::{AckedRanges, ErrorSpace, QuicFrame, StreamType};
use ::qlog::events::RawInfo;
use ::qlog::{HexSlice, Token, TokenType};

use crate::frame::{EcnCounts, Frame};
use crate::ranges::RangeSet;

/// The ack_delay_exponent a peer uses until its transport parameters say otherwise
/// (RFC 9000 §18.2).
pub const DEFAULT_ACK_DELAY_EXPONENT: u64 = 3;

/// The largest ack_delay_exponent RFC 9000 §18.2 allows; larger values are clamped so the
/// conversion cannot overflow.
const MAX_ACK_DELAY_EXPONENT: u64 = 20;

/// The most frames one [`FrameLog`] keeps. A legitimate packet of 64 KB could hold tens of
/// thousands of one-byte PING frames; logging each would let a peer make us allocate per byte
/// it sends, so the frames beyond this are counted but not logged.
pub const MAX_LOGGED_FRAMES: usize = 1024;

/// The frames of one packet, collected while the packet is built or parsed, so that its
/// `packet_sent` or `packet_received` event can list them.
///
/// A `FrameLog` is meant to be reused: [`FrameLog::clear`] keeps its allocation.
#[derive(Clone, Debug)]
pub struct FrameLog {
    frames: Vec<QuicFrame>,
    omitted: usize,
    ack_delay_exponent: u64,
}

impl Default for FrameLog {
    fn default() -> Self {
        FrameLog::new(DEFAULT_ACK_DELAY_EXPONENT)
    }
}

impl FrameLog {
    /// An empty log that scales the ACK Delay of ACK frames given to [`FrameLog::push_frame`]
    /// by `ack_delay_exponent` (the exponent of the endpoint that wrote them).
    pub fn new(ack_delay_exponent: u64) -> Self {
        FrameLog {
            frames: Vec::new(),
            omitted: 0,
            ack_delay_exponent,
        }
    }

    /// Sets the exponent used to scale the ACK Delay of ACK frames pushed from now on.
    pub fn set_ack_delay_exponent(&mut self, exponent: u64) {
        self.ack_delay_exponent = exponent;
    }

    /// The exponent used to scale the ACK Delay of pushed ACK frames.
    pub fn ack_delay_exponent(&self) -> u64 {
        self.ack_delay_exponent
    }

    /// Forgets the frames, keeping the allocation for the next packet.
    pub fn clear(&mut self) {
        self.frames.clear();
        self.omitted = 0;
    }

    /// How many frames are logged.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame is logged.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// How many frames were pushed beyond [`MAX_LOGGED_FRAMES`] and dropped from the log.
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// The logged frames, in the order they were pushed.
    pub fn frames(&self) -> &[QuicFrame] {
        &self.frames
    }

    /// Logs any decoded or about-to-be-encoded frame.
    pub fn push_frame(&mut self, frame: &Frame) {
        if self.has_room() {
            let f = to_qlog_frame(frame, self.ack_delay_exponent);
            self.frames.push(f);
        }
    }

    /// Logs an ACK frame built from the receiver's set of packet numbers, with the delay it
    /// reports (before scaling by the exponent).
    pub fn push_ack(&mut self, ranges: &RangeSet, delay: Duration, ecn: Option<EcnCounts>) {
        if self.has_room() {
            let acked = ranges
                .iter()
                .map(|r| (r.start, r.end.saturating_sub(1)))
                .collect();
            self.frames.push(ack_frame(duration_ms(delay), acked, ecn));
        }
    }

    /// Logs a STREAM frame carrying `len` bytes at `offset`.
    pub fn push_stream(&mut self, stream_id: u64, offset: u64, len: u64, fin: bool) {
        self.push(QuicFrame::Stream {
            stream_id,
            offset,
            length: len,
            fin: Some(fin),
            raw: None,
        });
    }

    /// Logs a CRYPTO frame carrying `len` bytes at `offset`.
    pub fn push_crypto(&mut self, offset: u64, len: u64) {
        self.push(QuicFrame::Crypto {
            offset,
            length: len,
        });
    }

    /// Logs `len` bytes of PADDING.
    pub fn push_padding(&mut self, len: usize) {
        self.push(padding_frame(len));
    }

    /// Logs a PING frame.
    pub fn push_ping(&mut self) {
        self.push(ping_frame());
    }

    /// Logs a DATAGRAM frame with a payload of `len` bytes.
    pub fn push_datagram(&mut self, len: usize) {
        self.push(QuicFrame::Datagram {
            length: len as u64,
            raw: None,
        });
    }

    /// Moves the frames out, leaving the log empty but for the allocation, which the caller
    /// hands back with [`FrameLog::restore`].
    pub(super) fn take(&mut self) -> Vec<QuicFrame> {
        self.omitted = 0;
        std::mem::take(&mut self.frames)
    }

    /// Takes back the vector given out by [`FrameLog::take`] to reuse its allocation.
    pub(super) fn restore(&mut self, mut frames: Vec<QuicFrame>) {
        frames.clear();
        if self.frames.capacity() < frames.capacity() {
            self.frames = frames;
        }
    }

    fn has_room(&mut self) -> bool {
        if self.frames.len() < MAX_LOGGED_FRAMES {
            true
        } else {
            self.omitted = self.omitted.saturating_add(1);
            false
        }
    }

    fn push(&mut self, frame: QuicFrame) {
        if self.has_room() {
            self.frames.push(frame);
        }
    }
}

/// Converts a frame to its qlog form. ACK delays are scaled by `ack_delay_exponent`, the
/// exponent of the endpoint that wrote the frame (RFC 9000 §19.3), and reported in
/// milliseconds.
pub fn to_qlog_frame(frame: &Frame, ack_delay_exponent: u64) -> QuicFrame {
    match frame {
        Frame::Padding { len } => padding_frame(*len),
        Frame::Ping => ping_frame(),
        Frame::ACK {
            ack_delay,
            ranges,
            ecn_counts,
        } => {
            let mut acked: Vec<(u64, u64)> = ranges
                .iter()
                .map(|r| (r.start, r.end.saturating_sub(1)))
                .collect();
            // The wire lists ranges largest first; qlog readers expect them in ascending order
            // like every other sequence of packet numbers in the log.
            acked.reverse();
            let exp = ack_delay_exponent.min(MAX_ACK_DELAY_EXPONENT);
            let micros = ack_delay.saturating_mul(1 << exp);
            ack_frame(micros as f32 / 1000.0, acked, *ecn_counts)
        }
        Frame::Crypto { offset, data } => QuicFrame::Crypto {
            offset: *offset,
            length: data.len() as u64,
        },
        Frame::NewToken { token } => QuicFrame::NewToken {
            token: Token {
                // NEW_TOKEN tokens are for future connections (RFC 9000 §8.1.3).
                ty: Some(TokenType::Resumption),
                details: None,
                raw: Some(RawInfo {
                    length: Some(token.len() as u64),
                    payload_length: None,
                    data: Some(hex(token)),
                }),
            },
        },
        Frame::ResetStream { .. } | Frame::StopSending { .. } | Frame::Stream { .. } => {
            stream_frame(frame)
        }
        Frame::MaxData { .. }
        | Frame::MaxStreamData { .. }
        | Frame::MaxStreamsBidi { .. }
        | Frame::MaxStreamsUni { .. }
        | Frame::DataBlocked { .. }
        | Frame::StreamDataBlocked { .. }
        | Frame::StreamsBlockedBidi { .. }
        | Frame::StreamsBlockedUni { .. } => flow_control_frame(frame),
        Frame::NewConnectionId { .. }
        | Frame::RetireConnectionId { .. }
        | Frame::PathChallenge { .. }
        | Frame::PathResponse { .. } => id_and_path_frame(frame),
        Frame::ConnectionClose { .. } | Frame::ApplicationClose { .. } => close_frame(frame),
        Frame::HandshakeDone => QuicFrame::HandshakeDone,
        Frame::Datagram { data } => QuicFrame::Datagram {
            length: data.len() as u64,
            raw: None,
        },
        Frame::AckFrequency { .. } | Frame::ImmediateAck => extension_frame(frame),
    }
}

// The groups below are reached from `to_qlog_frame`'s match, which names every frame type;
// their last arm (any other frame, logged as unknown with its wire form) is never taken.

/// RESET_STREAM, STOP_SENDING, STREAM.
fn stream_frame(frame: &Frame) -> QuicFrame {
    match frame {
        Frame::ResetStream {
            stream_id,
            error_code,
            final_size,
        } => QuicFrame::ResetStream {
            stream_id: *stream_id,
            error_code: *error_code,
            final_size: *final_size,
            length: None,
            payload_length: None,
        },
        Frame::StopSending {
            stream_id,
            error_code,
        } => QuicFrame::StopSending {
            stream_id: *stream_id,
            error_code: *error_code,
            length: None,
            payload_length: None,
        },
        Frame::Stream {
            stream_id,
            offset,
            data,
            fin,
        } => QuicFrame::Stream {
            stream_id: *stream_id,
            offset: *offset,
            length: data.len() as u64,
            fin: Some(*fin),
            raw: None,
        },
        _ => extension_frame(frame),
    }
}

/// MAX_DATA, MAX_STREAM_DATA, MAX_STREAMS, DATA_BLOCKED, STREAM_DATA_BLOCKED, STREAMS_BLOCKED.
fn flow_control_frame(frame: &Frame) -> QuicFrame {
    match frame {
        Frame::MaxData { max } => QuicFrame::MaxData { maximum: *max },
        Frame::MaxStreamData { stream_id, max } => QuicFrame::MaxStreamData {
            stream_id: *stream_id,
            maximum: *max,
        },
        Frame::MaxStreamsBidi { max } => QuicFrame::MaxStreams {
            stream_type: StreamType::Bidirectional,
            maximum: *max,
        },
        Frame::MaxStreamsUni { max } => QuicFrame::MaxStreams {
            stream_type: StreamType::Unidirectional,
            maximum: *max,
        },
        Frame::DataBlocked { limit } => QuicFrame::DataBlocked { limit: *limit },
        Frame::StreamDataBlocked { stream_id, limit } => QuicFrame::StreamDataBlocked {
            stream_id: *stream_id,
            limit: *limit,
        },
        Frame::StreamsBlockedBidi { limit } => QuicFrame::StreamsBlocked {
            stream_type: StreamType::Bidirectional,
            limit: *limit,
        },
        Frame::StreamsBlockedUni { limit } => QuicFrame::StreamsBlocked {
            stream_type: StreamType::Unidirectional,
            limit: *limit,
        },
        _ => extension_frame(frame),
    }
}

/// NEW_CONNECTION_ID, RETIRE_CONNECTION_ID, PATH_CHALLENGE, PATH_RESPONSE.
fn id_and_path_frame(frame: &Frame) -> QuicFrame {
    match frame {
        Frame::NewConnectionId {
            seq_num,
            retire_prior_to,
            conn_id,
            reset_token,
        } => QuicFrame::NewConnectionId {
            // qlog 0.16 declares these as 32-bit; larger values are clamped rather than
            // wrapped so that a log never shows a smaller number than the wire carried.
            sequence_number: saturate_u32(*seq_num),
            retire_prior_to: saturate_u32(*retire_prior_to),
            connection_id_length: u8::try_from(conn_id.len()).ok(),
            connection_id: hex(conn_id),
            stateless_reset_token: Some(hex(reset_token)),
        },
        Frame::RetireConnectionId { seq_num } => QuicFrame::RetireConnectionId {
            sequence_number: saturate_u32(*seq_num),
        },
        Frame::PathChallenge { data } => QuicFrame::PathChallenge {
            data: Some(hex(data)),
        },
        Frame::PathResponse { data } => QuicFrame::PathResponse {
            data: Some(hex(data)),
        },
        _ => extension_frame(frame),
    }
}

/// CONNECTION_CLOSE of both kinds (transport and application).
fn close_frame(frame: &Frame) -> QuicFrame {
    match frame {
        Frame::ConnectionClose {
            error_code,
            frame_type,
            reason,
        } => QuicFrame::ConnectionClose {
            error_space: Some(ErrorSpace::TransportError),
            error_code: Some(*error_code),
            error_code_value: None,
            reason: Some(String::from_utf8_lossy(reason).into_owned()),
            trigger_frame_type: Some(*frame_type),
        },
        Frame::ApplicationClose { error_code, reason } => QuicFrame::ConnectionClose {
            error_space: Some(ErrorSpace::ApplicationError),
            error_code: Some(*error_code),
            error_code_value: None,
            reason: Some(String::from_utf8_lossy(reason).into_owned()),
            trigger_frame_type: None,
        },
        _ => extension_frame(frame),
    }
}

/// A frame qlog 0.16's schema predates (ACK_FREQUENCY, IMMEDIATE_ACK): logged as `unknown` with
/// its type and its whole wire form in hex, which qvis shows as is.
fn extension_frame(frame: &Frame) -> QuicFrame {
    // Four varints and a two-byte type at most.
    let mut buf = [0u8; 34];
    let len = frame
        .to_bytes(&mut octets::OctetsMut::with_slice(&mut buf))
        .unwrap_or(0);
    let wire = buf.get(..len).unwrap_or(&[]);
    QuicFrame::Unknown {
        raw_frame_type: frame.ty(),
        frame_type_value: Some(frame.ty()),
        raw: Some(RawInfo {
            length: Some(len as u64),
            payload_length: None,
            data: Some(hex(wire)),
        }),
    }
}

fn ack_frame(delay_ms: f32, acked: Vec<(u64, u64)>, ecn: Option<EcnCounts>) -> QuicFrame {
    QuicFrame::Ack {
        ack_delay: Some(delay_ms),
        acked_ranges: Some(AckedRanges::Double(acked)),
        ect1: ecn.map(|e| e.ect1),
        ect0: ecn.map(|e| e.ect0),
        ce: ecn.map(|e| e.ecn_ce),
        length: None,
        payload_length: None,
    }
}

fn padding_frame(len: usize) -> QuicFrame {
    QuicFrame::Padding {
        length: None,
        payload_length: u32::try_from(len).unwrap_or(u32::MAX),
    }
}

fn ping_frame() -> QuicFrame {
    QuicFrame::Ping {
        length: None,
        payload_length: None,
    }
}

/// A duration in milliseconds, the unit of every qlog time field.
pub(super) fn duration_ms(d: Duration) -> f32 {
    (d.as_secs_f64() * 1000.0) as f32
}

/// Bytes as qlog writes them: lowercase hex.
pub(super) fn hex(bytes: &[u8]) -> String {
    HexSlice::new(bytes).to_string()
}

fn saturate_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}
