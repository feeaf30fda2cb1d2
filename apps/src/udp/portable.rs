//! The same interface as `sys.rs` where neither GSO/GRO nor `sendmmsg`/`recvmmsg` are
//! available: one datagram per system call, through std.

use std::io;
use std::net::SocketAddr;

use mio::net::UdpSocket;

use super::{CmsgBuf, Received, MMSG_MAX};

fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "not on this system")
}

/// GSO is Linux-only.
pub fn probe_gso(_socket: &UdpSocket) -> io::Result<()> {
    Err(unsupported())
}

/// GRO is Linux-only.
pub fn enable_gro(_socket: &UdpSocket) -> io::Result<()> {
    Err(unsupported())
}

/// Reading the TOS byte of received datagrams is done on Linux only.
pub fn enable_ecn_recv(_socket: &UdpSocket, _v6: bool) -> io::Result<()> {
    Err(unsupported())
}

/// Setting the TOS byte is done on Linux only.
pub fn set_tos(_socket: &UdpSocket, _v6: bool, _tos: u8) -> io::Result<()> {
    Err(unsupported())
}

/// Never called: [`probe_gso`] fails.
pub fn send_gso(
    _socket: &UdpSocket,
    _buf: &[u8],
    _segment: u16,
    _to: SocketAddr,
) -> io::Result<usize> {
    Err(unsupported())
}

/// Sends the datagrams one by one; returns how many went before the first error, which is
/// returned only if none went.
pub fn send_mmsg(socket: &UdpSocket, datagrams: &[&[u8]], to: SocketAddr) -> io::Result<usize> {
    let mut sent = 0;
    for d in datagrams.iter().take(MMSG_MAX) {
        let result = loop {
            match socket.send_to(d, to) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match result {
            Ok(_) => sent += 1,
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(sent)
}

/// Nothing to keep between receives without `recvmmsg`.
#[derive(Default)]
pub struct RecvHeaders;

/// Receives datagrams one by one until none waits or the buffers are full.
pub fn recv_mmsg(
    socket: &UdpSocket,
    bufs: &mut [&mut [u8]],
    _cmsgs: &mut [CmsgBuf],
    _headers: &mut RecvHeaders,
    out: &mut [Received],
) -> io::Result<usize> {
    let mut got = 0;
    for (buf, meta) in bufs.iter_mut().zip(out.iter_mut()) {
        match socket.recv_from(buf) {
            Ok((len, from)) => {
                *meta = Received {
                    len,
                    from: Some(from),
                    segment: None,
                    truncated: false,
                    ecn: 0,
                };
                got += 1;
            }
            Err(e) if got == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(got)
}
