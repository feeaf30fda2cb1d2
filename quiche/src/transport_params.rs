//! Transport parameters (RFC 9000 §18): encoding, decoding and validation.
