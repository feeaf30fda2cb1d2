//! Encoding frames: [`Frame`]s, and STREAM, CRYPTO and ACK frames written straight into the
//! packet buffer by the send path without building a [`Frame`] first.

use octets::OctetsMut;

use super::ack_ranges::{ecn_len, gap_and_len, put_ecn, put_set_ack_ranges, set_ack_head_len};
use super::decode::{check_end, check_new_conn_id, stream_type};
use super::wire::{put_bytes_with_len, put_stream_count, put_varint, vlen, vlen_usize};
use super::*;
use crate::error::Result;
use crate::ranges::RangeSet;

impl Frame<'_> {
    pub(super) fn encode(&self, b: &mut OctetsMut) -> Result<()> {
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
            } => super::ack_frequency::encode(
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
