//! The connection: lifecycle, packet number spaces, what sent packets carried, and statistics.
//!
//! The `Connection` type that coordinates these pieces with TLS, recovery and streams is being
//! built on top of them (the "Connection core" issue).

pub mod sent;
pub mod spaces;
pub mod state;
pub mod stats;

pub use self::state::ConnectionError;
pub use self::stats::{PathStats, Stats};
