//! Test support: a pcap writer for dissecting what connections exchanged.

pub mod pcap;

use std::time::Instant;

/// The origin of a virtual clock. Any `Instant` would do: virtual time is never compared with
/// the wall clock, and this is the one place in the library core that reads it.
#[allow(clippy::disallowed_methods)]
pub fn virtual_epoch() -> Instant {
    Instant::now()
}
