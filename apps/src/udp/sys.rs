//! The system calls behind [`super::UdpIo`] on Linux: `sendmsg` with a `UDP_SEGMENT` control
//! message (GSO), `sendmmsg`, `recvmmsg` with the `UDP_GRO` control message, and the socket
//! options that switch GSO and GRO on. Every `unsafe` block of the batching code is here.
//!
//! Nothing here keeps raw pointers beyond one call: the message headers are built on the stack
//! for each call and point into buffers borrowed for its duration.
#![allow(unsafe_code)]

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};

use mio::net::UdpSocket;

use super::{CmsgBuf, Received, MMSG_MAX, RECV_MAX};

/// Sets an `int` socket option.
fn setsockopt_int(fd: RawFd, level: i32, opt: i32, value: i32) -> io::Result<()> {
    let len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is an open socket borrowed for the call; the value points to a c_int on our
    // stack whose size is passed as the length, and the kernel only reads it.
    let rc =
        unsafe { libc::setsockopt(fd, level, opt, (&value as *const libc::c_int).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the kernel accepts `UDP_SEGMENT` on this socket (Linux ≥ 4.18). Setting the
/// socket-wide segment size to 0 changes nothing: each send passes its own size.
pub fn probe_gso(socket: &UdpSocket) -> io::Result<()> {
    setsockopt_int(socket.as_raw_fd(), libc::SOL_UDP, libc::UDP_SEGMENT, 0)
}

/// Asks the kernel to coalesce received datagrams (Linux ≥ 5.0).
pub fn enable_gro(socket: &UdpSocket) -> io::Result<()> {
    setsockopt_int(socket.as_raw_fd(), libc::SOL_UDP, libc::UDP_GRO, 1)
}

/// Asks the kernel to report the TOS / traffic class byte of received datagrams (`IP_TOS` and
/// `IPV6_TCLASS` control messages), whose two low bits are the ECN codepoint. An IPv6 socket
/// also receives IPv4 datagrams (mapped addresses), so it asks for both.
pub fn enable_ecn_recv(socket: &UdpSocket, v6: bool) -> io::Result<()> {
    let fd = socket.as_raw_fd();
    if v6 {
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
        // Only matters for IPv4-mapped peers; an IPv6-only socket may refuse it.
        let _ = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1);
        Ok(())
    } else {
        setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)
    }
}

/// Sets the TOS / traffic class byte of what the socket sends: the ECN codepoint `tos` (the
/// DSCP bits stay 0). An IPv6 socket sets both, for its IPv4-mapped peers.
pub fn set_tos(socket: &UdpSocket, v6: bool, tos: u8) -> io::Result<()> {
    let fd = socket.as_raw_fd();
    let tos = i32::from(tos & 0b11);
    if v6 {
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos)?;
        let _ = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos);
        Ok(())
    } else {
        setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos)
    }
}

/// A socket address in the C layout, and its length.
fn to_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero bytes are a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for any sockaddr type,
            // sockaddr_in included; the write stays inside `storage`.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// The address the kernel wrote into `storage`; `None` for a family other than IPv4/IPv6.
fn from_sockaddr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in; sockaddr_storage is
            // aligned for it and large enough.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddrV4::new(ip, u16::from_be(sin.sin_port)).into())
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            let flow = u32::from_be(sin6.sin6_flowinfo);
            Some(SocketAddrV6::new(ip, port, flow, sin6.sin6_scope_id).into())
        }
        _ => None,
    }
}

fn retry_eintr(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let rc = call();
        if let Ok(n) = usize::try_from(rc) {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Sends `buf` to `to` in one `sendmsg` as datagrams of `segment` bytes (the last may be
/// shorter), which the kernel (or the NIC) splits: UDP GSO.
pub fn send_gso(socket: &UdpSocket, buf: &[u8], segment: u16, to: SocketAddr) -> io::Result<usize> {
    let (mut addr, addr_len) = to_sockaddr(to);
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cmsg_buf: CmsgBuf = [0; 8];
    // SAFETY: msghdr is plain old data; all-zero bytes are a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = addr_len;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg_buf.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
    debug_assert!(space <= size_of::<CmsgBuf>());
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points to `cmsg_buf`, aligned for cmsghdr and at least `space` bytes long,
    // so CMSG_FIRSTHDR returns a pointer inside it with room for one header and a u16.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
    }
    let fd = socket.as_raw_fd();
    // SAFETY: every pointer in `msg` refers to a live local or to `buf`, borrowed for the
    // call; the kernel only reads them.
    retry_eintr(|| unsafe { libc::sendmsg(fd, &msg, 0) })
}

/// Sends each of `datagrams` (at most [`MMSG_MAX`]) to `to` with one `sendmmsg`; returns how
/// many the kernel took (an error only if it took none).
pub fn send_mmsg(socket: &UdpSocket, datagrams: &[&[u8]], to: SocketAddr) -> io::Result<usize> {
    let n = datagrams.len().min(MMSG_MAX);
    let (mut addr, addr_len) = to_sockaddr(to);
    // SAFETY: iovec and mmsghdr are plain old data; all-zero bytes are valid (empty) values.
    let mut iovs: [libc::iovec; MMSG_MAX] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MMSG_MAX] = unsafe { zeroed() };
    for ((d, iov), m) in datagrams.iter().zip(iovs.iter_mut()).zip(msgs.iter_mut()) {
        iov.iov_base = d.as_ptr() as *mut libc::c_void;
        iov.iov_len = d.len();
        m.msg_hdr.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
        m.msg_hdr.msg_namelen = addr_len;
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
    }
    let fd = socket.as_raw_fd();
    // SAFETY: the first `n` headers point to `addr`, to their own iovec and through it to a
    // datagram borrowed for the call; the kernel reads those and writes only `msg_len`.
    retry_eintr(|| unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) as isize })
}

/// The headers `recvmmsg` reads and writes, kept from one call to the next: zeroing 6.5 kB of
/// them for every call cost the receiving client 3 % of its cycles. Each call rewrites every
/// field the kernel reads for the messages it asks for.
pub struct RecvHeaders {
    addrs: [libc::sockaddr_storage; RECV_MAX],
    iovs: [libc::iovec; RECV_MAX],
    msgs: [libc::mmsghdr; RECV_MAX],
}

// SAFETY: the raw pointers inside the headers are set at the start of every `recv_mmsg` call to
// buffers that call borrows, and only the kernel follows them, during the call; between calls
// nothing reads them, so the headers may move to another thread.
unsafe impl Send for RecvHeaders {}

impl Default for RecvHeaders {
    /// Zeroed headers.
    fn default() -> Self {
        RecvHeaders {
            // SAFETY: plain old data; all-zero bytes are valid values (null pointers, zero
            // lengths), and no pointer is followed before `recv_mmsg` sets it.
            addrs: unsafe { zeroed() },
            // SAFETY: as above.
            iovs: unsafe { zeroed() },
            // SAFETY: as above.
            msgs: unsafe { zeroed() },
        }
    }
}

/// Receives up to `bufs.len()` (at most [`RECV_MAX`]) messages with one `recvmmsg`, each into
/// its buffer, with its control messages in the matching `cmsgs` entry; returns how many
/// arrived, described in `out`.
pub fn recv_mmsg(
    socket: &UdpSocket,
    bufs: &mut [&mut [u8]],
    cmsgs: &mut [CmsgBuf],
    headers: &mut RecvHeaders,
    out: &mut [Received],
) -> io::Result<usize> {
    let n = bufs.len().min(cmsgs.len()).min(out.len()).min(RECV_MAX);
    let RecvHeaders { addrs, iovs, msgs } = headers;
    for i in 0..n {
        iovs[i].iov_base = bufs[i].as_mut_ptr().cast();
        iovs[i].iov_len = bufs[i].len();
        msgs[i].msg_len = 0;
        let hdr = &mut msgs[i].msg_hdr;
        hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_storage).cast();
        hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        hdr.msg_iov = &mut iovs[i];
        hdr.msg_iovlen = 1;
        hdr.msg_control = cmsgs[i].as_mut_ptr().cast();
        hdr.msg_controllen = size_of::<CmsgBuf>() as _;
        hdr.msg_flags = 0;
    }
    let fd = socket.as_raw_fd();
    // SAFETY: the first `n` headers were just pointed at `headers`' own address and iovec
    // entries and, through the iovecs and control pointers, at buffers borrowed mutably for the
    // call, with their true lengths; the kernel writes within those lengths. No timeout is
    // passed (null).
    let got = retry_eintr(|| unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            0,
            std::ptr::null_mut(),
        ) as isize
    })?;
    for i in 0..got.min(n) {
        let hdr = &msgs[i].msg_hdr;
        let (segment, ecn) = control(hdr);
        out[i] = Received {
            len: msgs[i].msg_len as usize,
            from: from_sockaddr(&addrs[i]),
            segment,
            truncated: hdr.msg_flags & libc::MSG_TRUNC != 0,
            ecn,
        };
    }
    Ok(got.min(n))
}

/// What the control messages of a received header say: the segment size of a `UDP_GRO`
/// message, and the ECN codepoint of an `IP_TOS` (one byte) or `IPV6_TCLASS` (an `int`)
/// message.
fn control(hdr: &libc::msghdr) -> (Option<usize>, u8) {
    let mut segment = None;
    let mut ecn = 0;
    // SAFETY: `hdr` was filled by recvmmsg: its control pointer and length describe the part
    // of our control buffer the kernel wrote, which the CMSG macros walk without leaving it;
    // each message's data is read only as the size its level and type give it, and the kernel
    // wrote a header of that length (cmsg_len is checked before reading).
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            let (level, ty) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            let data_len = ((*cmsg).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
            let data = libc::CMSG_DATA(cmsg);
            if level == libc::SOL_UDP && ty == libc::UDP_GRO && data_len >= size_of::<libc::c_int>()
            {
                let size = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                segment = usize::try_from(size).ok().filter(|&s| s > 0);
            } else if level == libc::IPPROTO_IP
                && (ty == libc::IP_TOS || ty == libc::IP_RECVTOS)
                && data_len >= 1
            {
                ecn = *data & 0b11;
            } else if level == libc::IPPROTO_IPV6
                && ty == libc::IPV6_TCLASS
                && data_len >= size_of::<libc::c_int>()
            {
                let tclass = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                ecn = (tclass & 0b11) as u8;
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    (segment, ecn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_survive_the_c_layout() {
        for addr in [
            "127.0.0.1:4433",
            "10.1.2.3:1",
            "[::1]:443",
            "[fe80::1%3]:65535",
        ] {
            let addr: SocketAddr = addr.parse().unwrap();
            let (storage, len) = to_sockaddr(addr);
            assert!(len as usize <= size_of::<libc::sockaddr_storage>());
            assert_eq!(from_sockaddr(&storage), Some(addr));
        }
        // SAFETY: plain old data.
        let unknown: libc::sockaddr_storage = unsafe { zeroed() };
        assert_eq!(from_sockaddr(&unknown), None);
    }
}
