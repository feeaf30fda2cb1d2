//! Decoding frame bodies (RFC 9000 §19, RFC 9221 §4) from the packet buffer, without
//! allocating: everything a frame can get wrong on its own is checked here.

use octets::Octets;

use super::ack_ranges::read_ack_range;
use super::wire::{
    get_array, get_bytes, get_bytes_with_len, get_rest, get_stream_count, get_varint,
};
use super::*;
use crate::error::{Error, Result};
use crate::packet::{Type, MAX_CONN_ID_LEN};

/// Decodes the body of a frame whose (known, allowed) type `ty` has just been read.
pub(super) fn decode_body<'a>(b: &mut Octets<'a>, ty: u64) -> Result<Frame<'a>> {
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
        ACK_FREQUENCY => super::ack_frequency::decode(b)?,
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
pub(super) fn check_new_conn_id(seq_num: u64, retire_prior_to: u64, len: usize) -> Result<()> {
    if len == 0 || len > MAX_CONN_ID_LEN || retire_prior_to > seq_num {
        return Err(Error::InvalidFrame);
    }
    Ok(())
}

/// RFC 9000 §19.8: the end of the data, offset plus length, may not exceed 2^62-1.
pub(super) fn check_end(offset: u64, len: usize) -> Result<()> {
    let end = u64::try_from(len)
        .ok()
        .and_then(|l| offset.checked_add(l))
        .ok_or(Error::InvalidFrame)?;
    if end > MAX_VARINT {
        return Err(Error::InvalidFrame);
    }
    Ok(())
}

pub(super) fn is_known_type(ty: u64) -> bool {
    ty <= IMMEDIATE_ACK || ty == DATAGRAM || ty == DATAGRAM_LEN || ty == ACK_FREQUENCY
}

/// Table 3 of RFC 9000 §12.4 ("Pkts" column) plus RFC 9221 §4 for DATAGRAM, which is
/// application data and so only travels under 0-RTT or 1-RTT keys.
pub(super) fn type_allowed_in(ty: u64, pkt: Type) -> bool {
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

pub(super) fn stream_type(offset: u64, fin: bool) -> u64 {
    let mut ty = STREAM | STREAM_LEN;
    if offset > 0 {
        ty |= STREAM_OFF;
    }
    if fin {
        ty |= STREAM_FIN;
    }
    ty
}
