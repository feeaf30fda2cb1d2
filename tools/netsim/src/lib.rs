//! netsim: a deterministic network simulator for congestion-control experiments.
//!
//! It drives a client and a server [`quiche::Connection`] through the library's in-memory pipe
//! ([`quiche::testing::Pipe`]), which models each direction of the path as a bottleneck of a
//! given rate with a drop-tail queue, a one-way delay, random loss and optional reordering, on
//! a virtual clock. A [`Scenario`] describes one transfer; [`run`] plays it with one seed and
//! returns a [`RunResult`]; [`run_seeds`] plays several seeds in parallel and [`Summary`] gives
//! min/median/max of each figure; [`matrix`] runs the congestion-control comparison of the
//! project's issue 5. [`h3exp`] runs HTTP/3 (`quiche::h3`) experiments over [`net::Net`], a
//! simulator in the same model whose bottleneck several connection pairs share.

pub mod args;
pub mod h3exp;
pub mod http;
pub mod matrix;
pub mod net;
pub mod report;
pub mod scenario;
pub mod shallow;
pub mod share;
pub mod sim;
pub mod summary;
pub mod units;

pub use crate::scenario::{Cc, Scenario, Windows};
pub use crate::sim::{run, RunResult};
pub use crate::summary::{run_seeds, Summary};
pub use crate::units::Queue;
