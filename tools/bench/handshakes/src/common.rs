//! What both drivers share: addresses, names, and the traffic counters.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The client's address (no socket is opened: the libraries only see it).
pub const CLIENT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 40_000);
/// The server's address.
pub const SERVER_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 4433);
/// A name in the test certificate (quiche/tests/certs: `quic.tech`, `localhost`, ...), checked
/// by both clients.
pub const SERVER_NAME: &str = "quic.tech";
/// The apps' and quinn-peer's protocol.
pub const ALPN: &[u8] = b"hq-interop";
/// Exchange rounds after which a handshake counts as stuck (one takes three or four).
pub const MAX_ROUNDS: usize = 50;

/// Datagrams and bytes one way.
#[derive(Clone, Copy, Default, Debug)]
pub struct Flow {
    /// Datagrams.
    pub datagrams: u64,
    /// UDP payload bytes.
    pub bytes: u64,
}

impl Flow {
    /// Counts one datagram of `len` bytes.
    pub fn add(&mut self, len: usize) {
        self.datagrams += 1;
        self.bytes += len as u64;
    }
}

/// What handshakes exchanged, summed over many.
#[derive(Clone, Copy, Default, Debug)]
pub struct Traffic {
    /// Client to server.
    pub c2s: Flow,
    /// Server to client.
    pub s2c: Flow,
    /// Times a handshake stalled and the clock was moved to the next timer (0 expected).
    pub timer_jumps: u64,
}
