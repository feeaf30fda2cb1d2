//! UDP sockets for the event loops: bound, non-blocking, with large kernel buffers and the
//! Don't Fragment bit set.
//!
//! The default buffers (about 200 KiB on Linux) overflow in a fraction of a millisecond at
//! gigabit rates, and every datagram the kernel drops there is a loss the congestion controller
//! reacts to. Setting the buffer sizes needs `setsockopt`, which std does not offer for UDP,
//! hence the only `unsafe` code of the crate, in this module.
#![allow(unsafe_code)]

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// The kernel buffer size asked for in each direction.
pub const SOCKET_BUFFER_SIZE: usize = 4 << 20;

/// Binds a non-blocking UDP socket to `addr` and enlarges its buffers (best effort: a smaller
/// buffer is logged, not an error).
pub fn bind(addr: SocketAddr) -> io::Result<mio::net::UdpSocket> {
    let socket = mio::net::UdpSocket::bind(addr)?;
    Ok(configure(socket, addr))
}

/// Like [`bind`], with `SO_REUSEPORT` set first: several sockets (one per worker thread) then
/// share the address, and the kernel spreads datagrams over them by a hash of the 4-tuple.
pub fn bind_reuseport(addr: SocketAddr) -> io::Result<mio::net::UdpSocket> {
    use std::os::fd::FromRawFd;
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: a plain system call with constant arguments; the result is checked.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a socket we just opened and own; the std socket takes it over and closes
    // it on every path from here, errors included.
    let socket = unsafe { std::net::UdpSocket::from_raw_fd(fd) };
    setsockopt_int(fd, libc::SO_REUSEPORT, 1)?;
    let (storage, len) = sockaddr_of(addr);
    // SAFETY: `storage` holds a sockaddr of the family of `fd`, `len` is its size, and the
    // kernel only reads it during the call.
    let rc = unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(configure(mio::net::UdpSocket::from_std(socket), addr))
}

/// `addr` as the C socket address `bind` takes.
fn sockaddr_of(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid sockaddr_storage (a plain C struct).
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

/// Enlarges a bound socket's buffers and logs what the kernel granted.
fn configure(socket: mio::net::UdpSocket, addr: SocketAddr) -> mio::net::UdpSocket {
    let (rcv, snd) = set_buffer_sizes(&socket, SOCKET_BUFFER_SIZE);
    if let Err(e) = set_dont_fragment(&socket, addr) {
        log::info!("socket {addr}: cannot set Don't Fragment ({e}): PMTU probes may be fragmented");
    }
    log::debug!("socket {addr}: receive buffer {rcv} bytes, send buffer {snd} bytes");
    if rcv < SOCKET_BUFFER_SIZE || snd < SOCKET_BUFFER_SIZE {
        log::info!(
            "socket buffers are {rcv}/{snd} bytes (asked for {SOCKET_BUFFER_SIZE}); \
             raise net.core.rmem_max/wmem_max for more"
        );
    }
    socket
}

/// Asks for `size`-byte receive and send buffers and returns the sizes the kernel reports.
///
/// On Linux the `*BUFFORCE` options pass over the `net.core.[rw]mem_max` limits when the
/// process may (CAP_NET_ADMIN); otherwise the plain options are capped by those limits.
pub fn set_buffer_sizes(socket: &impl AsRawFd, size: usize) -> (usize, usize) {
    let fd = socket.as_raw_fd();
    let value = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
    for (force, plain) in [
        (FORCE_RCVBUF, libc::SO_RCVBUF),
        (FORCE_SNDBUF, libc::SO_SNDBUF),
    ] {
        if force.is_none_or(|opt| setsockopt_int(fd, opt, value).is_err()) {
            if let Err(e) = setsockopt_int(fd, plain, value) {
                log::warn!("setsockopt({plain}): {e}");
            }
        }
    }
    let read = |opt| getsockopt_int(fd, opt).map_or(0, |v| usize::try_from(v).unwrap_or(0));
    // Linux reports twice the requested size (it counts its bookkeeping overhead).
    let scale = if cfg!(any(target_os = "linux", target_os = "android")) {
        2
    } else {
        1
    };
    (read(libc::SO_RCVBUF) / scale, read(libc::SO_SNDBUF) / scale)
}

/// Sets the Don't Fragment bit on every datagram the socket sends, so that a path MTU probe
/// that is too large for the path is dropped rather than fragmented (which would make it
/// "succeed" and the connection then send datagrams that only arrive in pieces; RFC 8899 §3).
///
/// On Linux `IP_PMTUDISC_PROBE` (and its IPv6 twin) sets DF but ignores the kernel's own path
/// MTU estimate: a probe larger than a cached (possibly stale or forged) value still goes out
/// instead of failing with `EMSGSIZE`, and QUIC's own search decides. An IPv6 socket bound to
/// the unspecified address also carries IPv4 (mapped addresses): both levels are set, and a
/// refusal of the IPv4 one is not an error there.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn set_dont_fragment(socket: &impl AsRawFd, addr: SocketAddr) -> io::Result<()> {
    let fd = socket.as_raw_fd();
    if addr.is_ipv4() {
        return setsockopt_at(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        );
    }
    setsockopt_at(
        fd,
        libc::IPPROTO_IPV6,
        libc::IPV6_MTU_DISCOVER,
        libc::IPV6_PMTUDISC_PROBE,
    )?;
    // IPv4-mapped traffic of a dual-stack socket.
    let _ = setsockopt_at(
        fd,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_PROBE,
    );
    Ok(())
}

/// Sets the Don't Fragment bit where the system has a portable option for it (IPv6's
/// `IPV6_DONTFRAG`); IPv4 sockets keep the system's default.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn set_dont_fragment(socket: &impl AsRawFd, addr: SocketAddr) -> io::Result<()> {
    if addr.is_ipv4() {
        return Ok(());
    }
    setsockopt_at(
        socket.as_raw_fd(),
        libc::IPPROTO_IPV6,
        libc::IPV6_DONTFRAG,
        1,
    )
}

/// The socket's `IP_MTU_DISCOVER` (or `IPV6_MTU_DISCOVER`) mode, for tests and diagnostics.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn mtu_discover_mode(socket: &impl AsRawFd, addr: SocketAddr) -> io::Result<libc::c_int> {
    let (level, opt) = if addr.is_ipv4() {
        (libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER)
    };
    getsockopt_at(socket.as_raw_fd(), level, opt)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const FORCE_RCVBUF: Option<libc::c_int> = Some(libc::SO_RCVBUFFORCE);
#[cfg(any(target_os = "linux", target_os = "android"))]
const FORCE_SNDBUF: Option<libc::c_int> = Some(libc::SO_SNDBUFFORCE);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const FORCE_RCVBUF: Option<libc::c_int> = None;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const FORCE_SNDBUF: Option<libc::c_int> = None;

fn setsockopt_int(fd: libc::c_int, opt: libc::c_int, value: libc::c_int) -> io::Result<()> {
    setsockopt_at(fd, libc::SOL_SOCKET, opt, value)
}

fn setsockopt_at(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is an open socket borrowed from a live socket object for the duration of the
    // call; the option value points to a c_int on our stack whose size is passed as its length,
    // and the kernel only reads it.
    let rc =
        unsafe { libc::setsockopt(fd, level, opt, (&value as *const libc::c_int).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(fd: libc::c_int, opt: libc::c_int) -> io::Result<libc::c_int> {
    getsockopt_at(fd, libc::SOL_SOCKET, opt)
}

fn getsockopt_at(fd: libc::c_int, level: libc::c_int, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is an open socket borrowed from a live socket object; `value` and `len` are
    // valid, writable locals, and `len` tells the kernel how many bytes it may write to `value`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            opt,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limit unprivileged processes get (`net.core.rmem_max`/`wmem_max`).
    fn sysctl(name: &str) -> Option<usize> {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn sockets_set_dont_fragment_in_probe_mode() {
        for addr in ["127.0.0.1:0", "[::1]:0"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let Ok(socket) = bind(addr) else {
                // No IPv6 loopback on this machine.
                assert!(addr.is_ipv6());
                continue;
            };
            let mode = mtu_discover_mode(&socket, addr).unwrap();
            assert_eq!(mode, 3, "{addr}: IP(V6)_PMTUDISC_PROBE");
            // A datagram larger than a 1500-byte MTU is refused only by a real interface's
            // MTU, never fragmented; loopback's 64 KiB carries a 1452-byte one.
            let big = [0u8; 1452];
            let target = socket.local_addr().unwrap();
            socket.send_to(&big, target).unwrap();
        }
    }

    #[test]
    fn buffers_get_the_size_asked_for_or_the_system_limit() {
        let socket = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let (rcv, snd) = set_buffer_sizes(&socket, SOCKET_BUFFER_SIZE);
        // With CAP_NET_ADMIN the forced size, else the sysctl cap (or more, if it is larger).
        let rcv_floor = sysctl("rmem_max").unwrap_or(0).min(SOCKET_BUFFER_SIZE);
        let snd_floor = sysctl("wmem_max").unwrap_or(0).min(SOCKET_BUFFER_SIZE);
        assert!(
            rcv >= rcv_floor && rcv > 0,
            "receive buffer {rcv}, floor {rcv_floor}"
        );
        assert!(
            snd >= snd_floor && snd > 0,
            "send buffer {snd}, floor {snd_floor}"
        );
        assert!(rcv <= SOCKET_BUFFER_SIZE && snd <= SOCKET_BUFFER_SIZE);
    }
}
