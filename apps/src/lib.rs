//! The code shared by `quiche-client` and `quiche-server`: HTTP/0.9 over QUIC (ALPN
//! `hq-interop`, the QUIC interop runner's convention) on a `mio` event loop.
//!
//! The library is sans-IO; these programs are where datagrams meet a UDP socket and where the
//! time comes from: they pass the wall clock in through the library's `recv`/`send`/`timeout`/
//! `on_timeout` wrappers and read it themselves for pacing and statistics.
//!
//! Modules, one job each:
//! - [`args`]: command-line parsing (clap) and the `--help` texts;
//! - [`setup`]: the `Config` both programs build, key logs, the qlog hook, connection IDs;
//! - [`socket`]: binding UDP sockets with large buffers;
//! - [`udp`]: batched UDP I/O: GSO/GRO, `sendmmsg`/`recvmmsg` (with [`socket`], the crate's
//!   only `unsafe` code);
//! - [`send_queue`]: assembling GSO batches, datagrams held back for pacing or a full socket,
//!   and the flush loop;
//! - [`downloads`]: the client's requests on one connection and where the bodies go;
//! - [`http09`]: URLs, requests, path confinement and file responses;
//! - [`http3`]: the server's HTTP/3 requests and responses (ALPN `h3`);
//! - [`token`]: the sealed address-validation tokens of the server's Retry packets;
//! - [`stateless_reset`]: the server's stateless reset key and its limit per address;
//! - [`server`] and [`client`]: the two event loops; [`server_stats`]: the server's counters;
//! - [`progress`]: the client's progress bar (indicatif).

// The library core never reads the clock (clippy's `disallowed-methods` bans `Instant::now`);
// these programs own the sockets and the wall clock, so they are the one place allowed to.
#![allow(clippy::disallowed_methods)]

pub mod args;
pub mod client;
pub mod downloads;
pub mod http09;
pub mod http3;
pub mod progress;
pub mod send_queue;
pub mod server;
pub mod server_stats;
pub mod setup;
pub mod socket;
pub mod stateless_reset;
pub mod token;
pub mod udp;
