//! A QUIC transport library (RFC 9000, 9001, 9002) with pluggable congestion control.
//!
//! The library is sans-IO: the application reads and writes UDP datagrams itself and passes the
//! current time in, so the same code runs on sockets, in tests on a virtual clock and in the
//! network simulator. The API follows the shape of Cloudflare's quiche.
//!
//! The modules below the crate root are the building blocks (wire format, packet protection,
//! recovery, congestion control); they are public so that tools, fuzz targets and users who
//! extend the library can reach them, but the re-exports at the crate root are the stable API.

pub mod ack_frequency;
pub mod ack_tracker;
pub mod buffers;
pub mod cc;
pub mod cid;
pub mod config;
pub mod connection;
pub mod crypto;
pub mod dgram;
pub mod ecn;
pub mod error;
#[cfg(feature = "ffi")]
mod ffi;
pub mod flow_control;
pub mod frame;
pub mod h3;
pub mod packet;
pub mod path;
pub mod pmtud;
#[cfg(feature = "qlog")]
pub mod qlog;
pub mod quic_lb;
pub mod ranges;
pub mod recovery;
pub mod rtt;
pub mod sender;
pub mod stream;
#[cfg(any(test, feature = "internal"))]
pub mod testing;
pub mod tls;
pub mod transport_params;

pub use crate::buffers::{BufFactory, BufSplit};
pub use crate::cc::pacer::ReleaseDecision;
pub use crate::cc::{
    BbrOptions, CcFactory, CongestionControl, CongestionControlAlgorithm, HystartVariant,
    SlowStartStrategy, StartupExit, StartupExitReason,
};
pub use crate::cid::ConnectionIdGenerator;
pub use crate::config::Config;
pub use crate::connection::{
    accept, accept_with_buf_factory, accept_with_retry, connect, connect_with_buffer_factory,
    Connection, ConnectionError, PathStats, PathStatsIter, RecvInfo, RetryConnectionIds, SendInfo,
    Stats, TxBufferTrackingState, MAX_SEND_QUANTUM, SEND_QUANTUM_INTERVAL,
};
#[cfg(feature = "custom-client-dcid")]
pub use crate::connection::{connect_with_dcid, connect_with_dcid_and_buffer_factory};
pub use crate::ecn::{EcnState, ECT0};
pub use crate::error::{Error, Result, WireErrorCode};
pub use crate::packet::{
    negotiate_version, retry, version_is_supported, ConnectionId, Header, Type, MAX_CONN_ID_LEN,
};
pub use crate::path::{PathEvent, SocketAddrIter};
#[cfg(feature = "qlog")]
pub use crate::qlog::QlogLevel;
pub use crate::stream::{Shutdown, StreamIter};
pub use crate::transport_params::{
    TransportParams, UnknownTransportParameter, UnknownTransportParameterIterator,
    UnknownTransportParameters, MAX_ACK_DELAY_EXPONENT,
};

/// The QUIC version this library speaks: QUIC v1 (RFC 9000).
pub const PROTOCOL_VERSION: u32 = 0x0000_0001;

/// The smallest datagram that may carry a client's Initial packet (RFC 9000 §14.1): clients
/// pad theirs to this size, servers drop smaller ones.
pub const MIN_CLIENT_INITIAL_LEN: usize = crate::config::MIN_UDP_PAYLOAD_SIZE;
