//! tools/cclab's several-flows analysis: the figures of one run of flows sharing a bottleneck
//! ([`metrics`]) and its picture ([`plot`]).

pub mod metrics;
pub mod plot;
