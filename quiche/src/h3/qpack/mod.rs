//! QPACK field compression for HTTP/3 (RFC 9204).
//!
//! Depends on nothing above it: no `Connection`, no HTTP/3 types.
