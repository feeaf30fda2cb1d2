//! The TLS 1.3 handshake through rustls's QUIC support.
