//! Packet protection keys: Initial secrets, AEAD and header protection (RFC 9001 §5).
