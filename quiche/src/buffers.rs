//! Buffer factories: who allocates the buffers that hold a connection's stream and datagram
//! bytes (quiche's `BufFactory` API). [`Connection`](crate::Connection) is generic over one,
//! with [`DefaultBufFactory`] (heap buffers) as the default type parameter, so code that names
//! plain `Connection` gets the default.

use std::fmt::Debug;
use std::sync::Arc;

/// Makes the buffers a connection stores application data in.
///
/// `Buf` is what a stream keeps until the bytes are acknowledged: cloning it must be cheap (a
/// reference count), as a retransmission clones it. `DgramBuf` holds one DATAGRAM payload.
pub trait BufFactory: Clone + Default + Debug {
    /// A buffer of stream bytes; cheap to clone.
    type Buf: Clone + Debug + AsRef<[u8]>;

    /// A buffer holding one datagram payload.
    type DgramBuf: AsRef<[u8]> + From<Vec<u8>>;

    /// A buffer holding a copy of `buf`.
    fn buf_from_slice(buf: &[u8]) -> Self::Buf;

    /// A datagram buffer holding a copy of `buf`.
    fn dgram_buf_from_slice(buf: &[u8]) -> Self::DgramBuf;
}

/// A buffer that can be cut in two without copying its bytes, which the zero-copy send calls
/// need when a stream takes only part of a buffer.
pub trait BufSplit {
    /// Keeps the first `at` bytes in `self` and returns the rest as a new buffer.
    fn split_at(&mut self, at: usize) -> Self;

    /// Puts `prefix` in front of the buffer's bytes if the buffer has room for it without
    /// moving them; returns whether it did. The default never does.
    fn try_add_prefix(&mut self, _prefix: &[u8]) -> bool {
        false
    }
}

/// The default factory: buffers allocated on the heap when needed.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultBufFactory;

/// The default stream buffer: a shared, immutable byte slice.
#[derive(Clone, Debug, Default)]
pub struct DefaultBuf(Arc<[u8]>);

impl BufFactory for DefaultBufFactory {
    type Buf = DefaultBuf;
    type DgramBuf = Vec<u8>;

    fn buf_from_slice(buf: &[u8]) -> DefaultBuf {
        DefaultBuf(Arc::from(buf))
    }

    fn dgram_buf_from_slice(buf: &[u8]) -> Vec<u8> {
        buf.to_vec()
    }
}

impl AsRef<[u8]> for DefaultBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl BufSplit for bytes::Bytes {
    fn split_at(&mut self, at: usize) -> Self {
        self.split_off(at)
    }
}

impl BufSplit for bytes::BytesMut {
    fn split_at(&mut self, at: usize) -> Self {
        self.split_off(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_factory_copies_the_slice() {
        let buf = DefaultBufFactory::buf_from_slice(b"abc");
        let copy = buf.clone();
        assert_eq!(buf.as_ref(), b"abc");
        assert_eq!(copy.as_ref(), b"abc");
        assert_eq!(
            DefaultBufFactory::dgram_buf_from_slice(b"xy"),
            b"xy".to_vec()
        );
    }
}
