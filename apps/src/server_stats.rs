//! The server's counters, for its log's stats line and the tests that read it.

/// Counters for logs and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ServerStats {
    /// Datagrams read from the socket.
    pub datagrams: u64,
    /// Connections created.
    pub accepted: u64,
    /// Connections removed after closing.
    pub closed: u64,
    /// Retry packets sent.
    pub retries: u64,
    /// Version Negotiation packets sent.
    pub version_negotiations: u64,
    /// Initials refused because their token was not valid.
    pub invalid_tokens: u64,
    /// Datagrams dropped before reaching a connection.
    pub dropped: u64,
    /// Connection states discarded at once because the datagram that would have opened them
    /// held no packet that decrypted (forged or corrupted Initials).
    pub unauthenticated: u64,
    /// The most connections served at once so far.
    pub peak: usize,
    /// Connections served now whose handshake is not complete (what `--retry auto`
    /// compares with its threshold).
    pub half_open: usize,
    /// Datagrams handed to the worker owning their connection (`--threads`): the kernel
    /// chose this worker by a 4-tuple the connection did not start from.
    pub forwarded: u64,
    /// Stateless resets sent (short-header datagrams for no connection).
    pub resets: u64,
    /// Stateless resets withheld by the limit per address (also counted in `dropped`).
    pub resets_limited: u64,
}

impl ServerStats {
    /// The stats line's fields: `connections=N accepted=N ...`, `live` being the
    /// connections served now.
    pub fn line(&self, live: usize) -> String {
        format!(
            "connections={live} peak={} half_open={} accepted={} closed={} datagrams={} \
             retries={} version_negotiations={} invalid_tokens={} unauthenticated={} \
             dropped={} forwarded={} resets={} resets_limited={}",
            self.peak,
            self.half_open,
            self.accepted,
            self.closed,
            self.datagrams,
            self.retries,
            self.version_negotiations,
            self.invalid_tokens,
            self.unauthenticated,
            self.dropped,
            self.forwarded,
            self.resets,
            self.resets_limited,
        )
    }
}
