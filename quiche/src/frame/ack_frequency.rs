//! ACK_FREQUENCY and IMMEDIATE_ACK (draft-ietf-quic-ack-frequency-12 §4, §5): their bodies on
//! the wire.

use octets::{Octets, OctetsMut};

use super::wire::{get_varint, put_varint, vlen};
use super::Frame;
use crate::error::{Error, Result};

/// ACK_FREQUENCY's frame type (§11.2, provisional): a two-byte varint.
pub(super) const ACK_FREQUENCY: u64 = 0xaf;
/// IMMEDIATE_ACK's frame type (§11.2, provisional).
pub(super) const IMMEDIATE_ACK: u64 = 0x1f;

/// Requested Max Ack Delay values (microseconds) must be below this: max_ack_delay values of
/// 2^14 ms or more are invalid (§4, RFC 9000 §18.2).
pub const MAX_REQUESTED_MAX_ACK_DELAY: u64 = (1 << 14) * 1000;

/// Decodes an ACK_FREQUENCY body. A Requested Max Ack Delay of 2^14 ms or more is a
/// PROTOCOL_VIOLATION (§4); the bound that depends on our min_ack_delay is the connection's.
pub(super) fn decode<'a>(b: &mut Octets<'a>) -> Result<Frame<'a>> {
    let seq_num = get_varint(b)?;
    let ack_eliciting_threshold = get_varint(b)?;
    let request_max_ack_delay = get_varint(b)?;
    let reordering_threshold = get_varint(b)?;
    check_delay(request_max_ack_delay)?;
    Ok(Frame::AckFrequency {
        seq_num,
        ack_eliciting_threshold,
        request_max_ack_delay,
        reordering_threshold,
    })
}

/// The length of an ACK_FREQUENCY body.
pub(super) fn body_len(
    seq_num: u64,
    ack_eliciting_threshold: u64,
    request_max_ack_delay: u64,
    reordering_threshold: u64,
) -> usize {
    vlen(seq_num)
        + vlen(ack_eliciting_threshold)
        + vlen(request_max_ack_delay)
        + vlen(reordering_threshold)
}

/// Writes an ACK_FREQUENCY body; a delay the decoder would reject fails with
/// [`Error::InvalidFrame`].
pub(super) fn encode(
    b: &mut OctetsMut,
    seq_num: u64,
    ack_eliciting_threshold: u64,
    request_max_ack_delay: u64,
    reordering_threshold: u64,
) -> Result<()> {
    check_delay(request_max_ack_delay).map_err(|_| Error::InvalidFrame)?;
    put_varint(b, seq_num)?;
    put_varint(b, ack_eliciting_threshold)?;
    put_varint(b, request_max_ack_delay)?;
    put_varint(b, reordering_threshold)
}

fn check_delay(request_max_ack_delay: u64) -> Result<()> {
    if request_max_ack_delay >= MAX_REQUESTED_MAX_ACK_DELAY {
        return Err(Error::ProtocolViolation);
    }
    Ok(())
}
