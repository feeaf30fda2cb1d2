//! Loss detection and recovery (RFC 9002): RTT, sent packets, loss, PTO.
