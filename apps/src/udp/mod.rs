//! Batched UDP I/O: many datagrams per system call.
//!
//! Sending and receiving one datagram per system call costs far more kernel time than the
//! QUIC work on it (each call walks the whole UDP/IP path). On Linux:
//! - sending uses UDP GSO: datagrams of one size to one destination, back to back in one
//!   buffer, go out in one `sendmsg` with a `UDP_SEGMENT` control message; the kernel cuts
//!   them apart late (or the NIC does). Without GSO, `sendmmsg` hands several datagrams over
//!   in one call;
//! - receiving uses UDP GRO: datagrams of one flow arriving together are delivered as one
//!   buffer with a `UDP_GRO` control message giving their size; `recvmmsg` fills several such
//!   buffers per call (one datagram each without GRO).
//!
//! Support is probed when the socket is bound; `sendmsg` failing with `EIO` or `EINVAL` for
//! a GSO send (a device without checksum offload, an old kernel that took the option but not
//! the size) switches GSO off for the socket, and the batch goes out again with `sendmmsg`.
//! Elsewhere the same interface sends and receives one datagram per call.

use std::io;
use std::net::SocketAddr;

use crate::socket;

#[cfg(any(target_os = "linux", target_os = "android"))]
mod sys;

#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[path = "portable.rs"]
mod sys;

/// The most datagrams one GSO send may carry: the kernel's `UDP_MAX_SEGMENTS` (64 in older
/// kernels, 128 in recent ones).
pub const GSO_MAX_SEGMENTS: usize = 64;

/// The most bytes one GSO send may carry: a UDP/IPv4 datagram's largest payload (65535 less
/// 20 bytes of IPv4 header and 8 of UDP header), which also fits IPv6.
pub const GSO_MAX_BYTES: usize = 65_507;

/// The most datagrams one `sendmmsg` call handles (the arrays live on the stack).
pub const MMSG_MAX: usize = 64;

/// The most messages one `recvmmsg` call takes: as many buffers of [`RECV_SLOT_SIZE`] as one
/// call usefully fills.
pub const RECV_MAX: usize = 32;

/// Room for the control messages of one received message, aligned for `cmsghdr`: the
/// `UDP_GRO` segment size and the TOS / traffic class byte (`IP_TOS` or `IPV6_TCLASS`), each
/// `CMSG_SPACE(sizeof(int))`, 24 bytes on 64-bit Linux, with room to spare.
pub type CmsgBuf = [u64; 8];

/// One received message: the bytes written to its buffer, the sender, and the segment size
/// the kernel reported with `UDP_GRO` (`None`: the buffer holds one datagram).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Bytes in the buffer.
    pub len: usize,
    /// The sender.
    pub from: Option<SocketAddr>,
    /// The size of each datagram but the last, when several were coalesced.
    pub segment: Option<usize>,
    /// The datagram did not fit the buffer (`MSG_TRUNC`; not reported without `recvmmsg`).
    pub truncated: bool,
    /// The ECN codepoint of the IP header (0 where it cannot be read).
    pub ecn: u8,
}

/// Buffers filled per `recvmmsg` call.
pub const RECV_SLOTS: usize = RECV_MAX;

/// The size of each receive buffer: the largest UDP payload, which also holds anything GRO
/// coalesces (the kernel keeps a coalesced buffer under 64 KiB).
pub const RECV_SLOT_SIZE: usize = 65_535;

/// Datagrams of one size (but the last, which may be shorter) to one destination, back to
/// back in `buf`.
#[derive(Clone, Copy, Debug)]
pub struct Segments<'a> {
    /// The datagrams' bytes.
    pub buf: &'a [u8],
    /// The size of each datagram but the last; at least 1.
    pub segment: usize,
    /// Where they go.
    pub to: SocketAddr,
    /// The ECN codepoint of their IP headers (RFC 3168; 0 is not-ECT).
    pub ecn: u8,
}

impl<'a> Segments<'a> {
    /// How many datagrams there are.
    pub fn count(&self) -> usize {
        self.buf.len().div_ceil(self.segment.max(1))
    }

    /// The datagrams, in order.
    pub fn datagrams(&self) -> std::slice::Chunks<'a, u8> {
        self.buf.chunks(self.segment.max(1))
    }

    /// The datagrams from the `skip`-th on.
    pub fn skip(&self, skip: usize) -> Segments<'a> {
        let start = skip.saturating_mul(self.segment).min(self.buf.len());
        Segments {
            buf: self.buf.get(start..).unwrap_or(&[]),
            ..*self
        }
    }
}

/// Where batches of datagrams go: the socket, or a recorder in tests.
pub trait Transmit {
    /// Sends `segments`; returns how many datagrams, from the first, the socket took or
    /// dropped for an error (logged). Fewer than all means the socket's buffer is full: the
    /// rest must wait until it is writable.
    fn transmit(&mut self, segments: Segments<'_>) -> usize;
}

/// A non-blocking UDP socket with large buffers and, where the system has them, batched
/// sends and receives.
pub struct UdpIo {
    socket: mio::net::UdpSocket,
    gso: bool,
    gro: bool,
    /// Whether received datagrams report their TOS / traffic class byte.
    ecn_recv: bool,
    /// The ECN codepoint the socket's TOS / traffic class option is set to now: sends switch
    /// it only when a batch needs another one.
    tos: u8,
}

impl UdpIo {
    /// Binds `addr` (see [`socket::bind`]) and, unless `disable_gso`, switches GSO and GRO on
    /// when the kernel supports them.
    pub fn bind(addr: SocketAddr, disable_gso: bool) -> io::Result<UdpIo> {
        Self::bind_with(addr, disable_gso, false)
    }

    /// [`UdpIo::bind`], with `SO_REUSEPORT` when `reuseport` (see [`socket::bind_reuseport`]).
    pub fn bind_with(addr: SocketAddr, disable_gso: bool, reuseport: bool) -> io::Result<UdpIo> {
        let socket = if reuseport {
            socket::bind_reuseport(addr)?
        } else {
            socket::bind(addr)?
        };
        let mut io = UdpIo {
            socket,
            gso: false,
            gro: false,
            ecn_recv: false,
            tos: 0,
        };
        if !disable_gso {
            io.gso = sys::probe_gso(&io.socket).is_ok();
            io.gro = sys::enable_gro(&io.socket).is_ok();
        }
        io.ecn_recv = sys::enable_ecn_recv(&io.socket, addr.is_ipv6()).is_ok();
        log::debug!(
            "socket {addr}: GSO {}, GRO {}, ECN {}",
            on_off(io.gso),
            on_off(io.gro),
            on_off(io.ecn_recv)
        );
        Ok(io)
    }

    /// The socket, for registering with mio and plain sends.
    pub fn socket(&self) -> &mio::net::UdpSocket {
        &self.socket
    }

    /// The socket, for registering with mio.
    pub fn socket_mut(&mut self) -> &mut mio::net::UdpSocket {
        &mut self.socket
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Whether sends use GSO.
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// Whether the kernel coalesces received datagrams.
    pub fn gro(&self) -> bool {
        self.gro
    }

    /// Whether received datagrams report their ECN codepoint.
    pub fn ecn_recv(&self) -> bool {
        self.ecn_recv
    }

    /// Sets the ECN codepoint of what the socket sends next, if it is not set already. A
    /// system that refuses keeps sending not-ECT, which ECN validation notices.
    fn set_ecn(&mut self, ecn: u8) {
        if ecn == self.tos {
            return;
        }
        let v6 = self.local_addr().is_ok_and(|a| a.is_ipv6());
        match sys::set_tos(&self.socket, v6, ecn) {
            Ok(()) => self.tos = ecn,
            Err(e) => log::debug!("setting ECN codepoint {ecn}: {e}"),
        }
    }

    /// Reads as many messages as are waiting, up to [`RECV_SLOTS`], into `batch`; returns how
    /// many (0 with `WouldBlock` when none).
    pub fn recv(&mut self, batch: &mut RecvBatch) -> io::Result<usize> {
        let mut bufs: [&mut [u8]; RECV_SLOTS] = Default::default();
        for (slot, chunk) in bufs.iter_mut().zip(batch.buf.chunks_mut(RECV_SLOT_SIZE)) {
            *slot = chunk;
        }
        batch.filled = 0;
        let n = sys::recv_mmsg(
            &self.socket,
            &mut bufs,
            &mut batch.cmsgs,
            &mut batch.headers,
            &mut batch.meta,
        )?;
        batch.filled = n;
        Ok(n)
    }

    /// Sends with GSO; `None` when GSO is (now) off and the datagrams must go another way.
    fn transmit_gso(&mut self, s: Segments<'_>) -> Option<usize> {
        let segment = u16::try_from(s.segment).ok()?;
        match sys::send_gso(&self.socket, s.buf, segment, s.to) {
            Ok(_) => Some(s.count()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(0),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) => {
                log::warn!("GSO send to {} failed ({e}): GSO off for this socket", s.to);
                self.gso = false;
                None
            }
            Err(e) => {
                // The datagrams are dropped; recovery treats them as lost.
                log::debug!("sendmsg (GSO, {} datagrams) to {}: {e}", s.count(), s.to);
                Some(s.count())
            }
        }
    }

    /// Sends one datagram with `sendto`.
    fn transmit_one(&mut self, datagram: &[u8], to: SocketAddr) -> usize {
        loop {
            match self.socket.send_to(datagram, to) {
                Ok(_) => return 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return 0,
                Err(e) => {
                    // The datagram is dropped; recovery treats it as lost.
                    log::debug!("sendto {to}: {e}");
                    return 1;
                }
            }
        }
    }

    /// Sends with `sendmmsg`, as many calls as it takes.
    fn transmit_mmsg(&mut self, s: Segments<'_>) -> usize {
        let mut datagrams: [&[u8]; MMSG_MAX] = [&[]; MMSG_MAX];
        let count = s.count();
        let mut done = 0;
        while done < count {
            let mut n = 0;
            for (slot, d) in datagrams.iter_mut().zip(s.skip(done).datagrams()) {
                *slot = d;
                n += 1;
            }
            match sys::send_mmsg(&self.socket, datagrams.get(..n).unwrap_or(&[]), s.to) {
                Ok(0) => {
                    // sendmmsg takes at least one message or fails; never loop in place.
                    log::warn!(
                        "sendmmsg to {} took none of {n} datagrams: one dropped",
                        s.to
                    );
                    done += 1;
                }
                Ok(sent) => done += sent.min(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    // The first datagram of the call failed: it is dropped (recovery treats
                    // it as lost) and the others go on.
                    log::debug!("sendmmsg to {}: {e}", s.to);
                    done += 1;
                }
            }
        }
        done
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

impl Transmit for UdpIo {
    fn transmit(&mut self, s: Segments<'_>) -> usize {
        self.set_ecn(s.ecn);
        let count = s.count();
        if count == 1 {
            return self.transmit_one(s.buf, s.to);
        }
        if count > 1 && self.gso {
            if let Some(n) = self.transmit_gso(s) {
                return n;
            }
        }
        self.transmit_mmsg(s)
    }
}

/// Receive buffers for [`UdpIo::recv`], and what the last call put in them.
pub struct RecvBatch {
    buf: Vec<u8>,
    cmsgs: [CmsgBuf; RECV_SLOTS],
    headers: sys::RecvHeaders,
    meta: [Received; RECV_SLOTS],
    filled: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One received buffer: one datagram, or several of `segment` bytes (the last may be shorter)
/// from one sender, coalesced by GRO.
pub struct Message<'a> {
    /// The buffer's bytes.
    pub buf: &'a mut [u8],
    /// Who sent them.
    pub from: SocketAddr,
    /// The size of each datagram but the last.
    pub segment: usize,
    /// The ECN codepoint their IP headers carried (GRO only coalesces datagrams with the same
    /// one).
    pub ecn: u8,
}

impl<'a> Message<'a> {
    /// The datagrams in the buffer, in the order they were sent.
    pub fn datagrams(self) -> std::slice::ChunksMut<'a, u8> {
        let segment = self.segment.max(1);
        self.buf.chunks_mut(segment)
    }
}

impl RecvBatch {
    /// Buffers for [`RECV_SLOTS`] messages.
    pub fn new() -> Self {
        RecvBatch {
            buf: vec![0; RECV_SLOTS * RECV_SLOT_SIZE],
            cmsgs: [[0; 8]; RECV_SLOTS],
            headers: sys::RecvHeaders::default(),
            meta: [Received::default(); RECV_SLOTS],
            filled: 0,
        }
    }

    /// The `i`-th message of the last [`UdpIo::recv`]; `None` past the last one, or for a
    /// message that was truncated or came from an address that is not IP (both logged).
    pub fn message(&mut self, i: usize) -> Option<Message<'_>> {
        if i >= self.filled {
            return None;
        }
        let meta = *self.meta.get(i)?;
        let from = meta.from?;
        if meta.truncated {
            log::debug!("{from}: datagram over {RECV_SLOT_SIZE} bytes truncated: dropped");
            return None;
        }
        let start = i.checked_mul(RECV_SLOT_SIZE)?;
        let buf = self.buf.get_mut(start..start.checked_add(meta.len)?)?;
        Some(Message {
            buf,
            from,
            segment: meta.segment.unwrap_or(meta.len),
            ecn: meta.ecn,
        })
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests;
