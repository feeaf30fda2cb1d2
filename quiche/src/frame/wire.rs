//! Reading and writing the fields frames are made of: varints, length-prefixed bytes and
//! stream counts, with the error a frame gets when one is truncated or out of range.

use octets::{Octets, OctetsMut};

use super::{MAX_STREAM_COUNT, MAX_VARINT};
use crate::error::{Error, Result};

/// A varint's encoded length. Unlike `octets::varint_len` it does not panic on values above
/// [`MAX_VARINT`]; those cannot be encoded and make [`put_varint`] fail.
pub(super) fn vlen(v: u64) -> usize {
    if v <= MAX_VARINT {
        octets::varint_len(v)
    } else {
        8
    }
}

pub(super) fn vlen_usize(v: usize) -> usize {
    vlen(u64::try_from(v).unwrap_or(u64::MAX))
}

pub(super) fn put_varint(b: &mut OctetsMut, v: u64) -> Result<()> {
    if v > MAX_VARINT {
        return Err(Error::InvalidFrame);
    }
    b.put_varint(v)?;
    Ok(())
}

pub(super) fn put_bytes_with_len(b: &mut OctetsMut, v: &[u8]) -> Result<()> {
    put_varint(b, v.len() as u64)?;
    b.put_bytes(v)?;
    Ok(())
}

pub(super) fn put_stream_count(b: &mut OctetsMut, v: u64) -> Result<()> {
    if v > MAX_STREAM_COUNT {
        return Err(Error::InvalidFrame);
    }
    put_varint(b, v)
}

/// Reads a varint; running out of bytes inside a frame is a FRAME_ENCODING_ERROR.
pub(super) fn get_varint(b: &mut Octets) -> Result<u64> {
    b.get_varint().map_err(|_| Error::InvalidFrame)
}

pub(super) fn get_bytes<'a>(b: &mut Octets<'a>, len: u64) -> Result<&'a [u8]> {
    let len = usize::try_from(len).map_err(|_| Error::InvalidFrame)?;
    Ok(b.get_bytes(len).map_err(|_| Error::InvalidFrame)?.buf())
}

pub(super) fn get_bytes_with_len<'a>(b: &mut Octets<'a>) -> Result<&'a [u8]> {
    let len = get_varint(b)?;
    get_bytes(b, len)
}

pub(super) fn get_rest<'a>(b: &mut Octets<'a>) -> Result<&'a [u8]> {
    let len = b.cap();
    get_bytes(b, len as u64)
}

pub(super) fn get_array<const N: usize>(b: &mut Octets) -> Result<[u8; N]> {
    let s = b.get_bytes(N).map_err(|_| Error::InvalidFrame)?;
    s.buf().try_into().map_err(|_| Error::InvalidFrame)
}

/// RFC 9000 §19.11, §19.14: a count above 2^60 is a FRAME_ENCODING_ERROR.
pub(super) fn get_stream_count(b: &mut Octets) -> Result<u64> {
    let v = get_varint(b)?;
    if v > MAX_STREAM_COUNT {
        return Err(Error::InvalidFrame);
    }
    Ok(v)
}
