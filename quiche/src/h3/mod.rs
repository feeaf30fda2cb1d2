//! HTTP/3 (RFC 9114) in the shape of quiche's `quiche::h3` module.
//!
//! [`qpack`] is the field compression below it (RFC 9204); it knows nothing of HTTP/3.

pub mod qpack;
