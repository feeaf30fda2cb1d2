//! The relay's sockets: bound with large kernel buffers (the one place with `unsafe`, for
//! `setsockopt`).
#![allow(unsafe_code)]

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use mio::net::UdpSocket;

/// Socket buffers asked for (the kernel caps them at `net.core.rmem_max`/`wmem_max`).
const SOCKET_BUFFER: libc::c_int = 4 << 20;

/// Binds a UDP socket with large kernel buffers: with a delay the relay holds a whole window
/// of a fast transfer, and on a busy machine it may not run for a few milliseconds; with the
/// default ~200 KB receive buffer the kernel then drops datagrams that no counter shows (seen:
/// 129 of 8299 server datagrams in one blackhole test), and the trace no longer matches the
/// counters.
pub(crate) fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = UdpSocket::bind(addr)?;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: a valid socket descriptor, and a pointer to a c_int with its size.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&SOCKET_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // Best effort: a smaller buffer only makes kernel drops more likely.
        let _ = rc;
    }
    Ok(socket)
}
