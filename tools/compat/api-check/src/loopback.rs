//! The loopback harness: a client and a server, each on its own UDP socket, driven by one loop
//! in one thread. The server is written the way a quiche application's server loop is: parse
//! the header with `Header::from_slice`, look the connection up by `hdr.dcid`, answer an
//! unsupported version with `negotiate_version`, a token-less Initial with `retry`, and
//! `accept` the rest.

use crate::quiche;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// The longest one phase may take before it is reported as timed out.
const PHASE_LIMIT: Duration = Duration::from_secs(10);
/// Largest UDP payload either side sends or reads.
const MAX_DATAGRAM: usize = 1350;

fn bind() -> UdpSocket {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind a loopback UDP socket");
    sock.set_nonblocking(true).expect("non-blocking socket");
    sock
}

/// Connection IDs from a fixed-seed generator (xorshift): the runs are repeatable and the
/// program needs no random-number crate. Not for production use.
pub struct CidGen(u64);

impl CidGen {
    /// A generator with a fixed seed.
    pub fn new(seed: u64) -> Self {
        CidGen(seed | 1)
    }

    /// A new connection ID of the longest length (the length the server's `from_slice` calls
    /// expect, as in quiche's example server).
    pub fn next(&mut self) -> quiche::ConnectionId<'static> {
        let mut v = Vec::with_capacity(24);
        while v.len() < quiche::MAX_CONN_ID_LEN {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            v.extend_from_slice(&self.0.to_le_bytes());
        }
        v.truncate(quiche::MAX_CONN_ID_LEN);
        quiche::ConnectionId::from_vec(v)
    }
}

/// The connection ID the server answers a client's first DCID with: a function of it, so that
/// a retransmitted Initial finds the same connection (as quiche's example server does with an
/// HMAC; here a plain mix, since this is a test program).
fn derive_cid(dcid: &[u8]) -> quiche::ConnectionId<'static> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v = Vec::with_capacity(24);
    for round in 0..3u8 {
        for b in dcid.iter().chain(std::iter::once(&round)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        v.extend_from_slice(&h.to_be_bytes());
    }
    v.truncate(quiche::MAX_CONN_ID_LEN);
    quiche::ConnectionId::from_vec(v)
}

/// An address-validation token: a fixed prefix, the client's address and the original DCID.
fn mint_token(hdr: &quiche::Header, from: &SocketAddr) -> Vec<u8> {
    let mut token = b"api-check".to_vec();
    token.extend_from_slice(from.to_string().as_bytes());
    token.push(0);
    token.extend_from_slice(&hdr.dcid);
    token
}

fn validate_token(token: &[u8], from: &SocketAddr) -> Option<quiche::ConnectionId<'static>> {
    let rest = token.strip_prefix(b"api-check".as_slice())?;
    let rest = rest.strip_prefix(from.to_string().as_bytes())?;
    let odcid = rest.strip_prefix(&[0u8][..])?;
    Some(quiche::ConnectionId::from_vec(odcid.to_vec()))
}

/// What the server saw of packets that matched no connection: what the header checks print.
#[derive(Default)]
pub struct ServerLog {
    /// One summary per parsed header of a packet that matched no connection.
    pub unmatched: Vec<String>,
    /// Version Negotiation packets sent.
    pub vn_sent: usize,
    /// Retry packets sent.
    pub retry_sent: usize,
    /// Connections accepted.
    pub accepted: usize,
    /// Datagrams whose header did not parse.
    pub bad_headers: usize,
}

/// A connection the server holds, with its HTTP/3 layer once it has one.
pub struct ServerConn {
    /// The QUIC connection.
    pub conn: quiche::Connection,
    /// The HTTP/3 connection, made by the h3 phase.
    pub h3: Option<quiche::h3::Connection>,
}

/// The server: its socket, its configuration and its connections by connection ID.
pub struct Server {
    sock: UdpSocket,
    /// The server's address.
    pub local: SocketAddr,
    /// The configuration every accepted connection is made with.
    pub config: quiche::Config,
    /// The connections, by the connection ID the client addresses them with.
    pub conns: HashMap<quiche::ConnectionId<'static>, ServerConn>,
    /// Whether token-less Initials are answered with a Retry.
    pub retry: bool,
    /// A qlog file for the next accepted connection.
    pub qlog_next: Option<std::fs::File>,
    /// What the server saw.
    pub log: ServerLog,
    out: Vec<u8>,
}

impl Server {
    /// A server on a new loopback socket.
    pub fn new(config: quiche::Config) -> Self {
        let sock = bind();
        let local = sock.local_addr().expect("local address");
        Server {
            sock,
            local,
            config,
            conns: HashMap::new(),
            retry: false,
            qlog_next: None,
            log: ServerLog::default(),
            out: vec![0; MAX_DATAGRAM],
        }
    }

    /// The only connection the server holds (each phase has one client).
    pub fn only(&mut self) -> Option<&mut ServerConn> {
        self.conns.values_mut().next()
    }

    fn handle(&mut self, buf: &mut [u8], from: SocketAddr) {
        let hdr = match quiche::Header::from_slice(buf, quiche::MAX_CONN_ID_LEN) {
            Ok(hdr) => hdr,
            Err(_) => {
                self.log.bad_headers += 1;
                return;
            }
        };
        let derived = derive_cid(&hdr.dcid);
        let key = if self.conns.contains_key(&hdr.dcid) {
            hdr.dcid.clone()
        } else if self.conns.contains_key(&derived) {
            derived
        } else {
            self.log.unmatched.push(format!(
                "ty={:?} version={:#x} dcid_len={} scid_len={} token={}",
                hdr.ty,
                hdr.version,
                hdr.dcid.len(),
                hdr.scid.len(),
                // Not compared for versions neither library speaks: quiche reads the token
                // as in v1, this library reads nothing past the connection IDs (RFC 8999).
                match &hdr.token {
                    _ if !quiche::version_is_supported(hdr.version) => "(other version)",
                    Some(t) if t.is_empty() => "empty",
                    Some(_) => "present",
                    None => "none",
                }
            ));
            if hdr.ty != quiche::Type::Initial {
                return;
            }
            if !quiche::version_is_supported(hdr.version) {
                let len = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut self.out)
                    .expect("negotiate_version");
                self.log.vn_sent += 1;
                let _ = self.sock.send_to(&self.out[..len], from);
                return;
            }
            let (scid, odcid) = if self.retry {
                let token = hdr.token.as_deref().unwrap_or(&[]);
                if token.is_empty() {
                    let new_scid = derive_cid(&hdr.dcid);
                    let token = mint_token(&hdr, &from);
                    let len = quiche::retry(
                        &hdr.scid,
                        &hdr.dcid,
                        &new_scid,
                        &token,
                        hdr.version,
                        &mut self.out,
                    )
                    .expect("retry");
                    self.log.retry_sent += 1;
                    let _ = self.sock.send_to(&self.out[..len], from);
                    return;
                }
                let Some(odcid) = validate_token(token, &from) else {
                    return;
                };
                // After a Retry the client addresses the server by the CID the Retry gave it:
                // that one is the connection's source CID and the map key.
                (hdr.dcid.clone(), Some(odcid))
            } else {
                (derived, None)
            };
            let mut conn = match &odcid {
                // quiche 0.30's call for a server that sent a Retry: the Retry's source CID
                // is the one the client now addresses (the connection's own here).
                Some(odcid) => quiche::accept_with_retry(
                    &scid,
                    quiche::RetryConnectionIds {
                        original_destination_cid: odcid,
                        retry_source_cid: &scid,
                    },
                    self.local,
                    from,
                    &mut self.config,
                ),
                None => quiche::accept(&scid, None, self.local, from, &mut self.config),
            }
            .expect("accept");
            if let Some(file) = self.qlog_next.take() {
                conn.set_qlog(
                    Box::new(file),
                    "api-check".to_string(),
                    "server side".to_string(),
                );
            }
            self.log.accepted += 1;
            self.conns
                .insert(scid.clone(), ServerConn { conn, h3: None });
            scid
        };
        let info = quiche::RecvInfo {
            from,
            to: self.local,
        };
        if let Some(sc) = self.conns.get_mut(&key) {
            let _ = sc.conn.recv(buf, info);
        }
    }

    fn read_all(&mut self) -> bool {
        let mut buf = [0u8; 65535];
        let mut any = false;
        while let Ok((len, from)) = self.sock.recv_from(&mut buf) {
            any = true;
            self.handle(&mut buf[..len], from);
        }
        any
    }

    fn flush(&mut self) {
        for sc in self.conns.values_mut() {
            while let Ok((len, info)) = sc.conn.send(&mut self.out) {
                let _ = self.sock.send_to(&self.out[..len], info.to);
            }
        }
    }

    fn timers(&mut self) {
        for sc in self.conns.values_mut() {
            if sc.conn.timeout() == Some(Duration::ZERO) {
                sc.conn.on_timeout();
            }
        }
    }

    /// Forgets closed connections, as a server loop does.
    pub fn reap(&mut self) {
        self.conns.retain(|_, sc| !sc.conn.is_closed());
    }
}

/// The client: its socket and its one connection.
pub struct Client {
    sock: UdpSocket,
    /// The client's address.
    pub local: SocketAddr,
    /// The connection.
    pub conn: quiche::Connection,
    out: Vec<u8>,
}

impl Client {
    /// A new client connection to `server`, on a new socket.
    pub fn connect(server: SocketAddr, config: &mut quiche::Config, cids: &mut CidGen) -> Self {
        Self::connect_with(server, config, cids, |_| {})
    }

    /// Like `connect`, calling `before` on the connection before its first packet is sent
    /// (for `set_session`, `set_keylog`).
    pub fn connect_with(
        server: SocketAddr,
        config: &mut quiche::Config,
        cids: &mut CidGen,
        before: impl FnOnce(&mut quiche::Connection),
    ) -> Self {
        let sock = bind();
        let local = sock.local_addr().expect("local address");
        let scid = cids.next();
        let mut conn =
            quiche::connect(Some("quic.tech"), &scid, local, server, config).expect("connect");
        before(&mut conn);
        Client {
            sock,
            local,
            conn,
            out: vec![0; MAX_DATAGRAM],
        }
    }

    /// Sends everything the connection has to send.
    pub fn flush(&mut self) {
        while let Ok((len, info)) = self.conn.send(&mut self.out) {
            let _ = self.sock.send_to(&self.out[..len], info.to);
        }
    }

    fn read_all(&mut self) -> bool {
        let mut buf = [0u8; 65535];
        let mut any = false;
        while let Ok((len, from)) = self.sock.recv_from(&mut buf) {
            any = true;
            let info = quiche::RecvInfo {
                from,
                to: self.local,
            };
            let _ = self.conn.recv(&mut buf[..len], info);
        }
        any
    }
}

/// Runs both sides until `step` says the phase is done (true) or the phase limit passes
/// (false). `step` is the application: it reads and writes streams between network rounds.
pub fn pump(
    client: &mut Client,
    server: &mut Server,
    mut step: impl FnMut(&mut Client, &mut Server) -> bool,
) -> bool {
    let deadline = Instant::now() + PHASE_LIMIT;
    loop {
        if step(client, server) {
            client.flush();
            server.flush();
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        client.flush();
        server.flush();
        let mut any = server.read_all();
        any |= client.read_all();
        if !any {
            std::thread::sleep(Duration::from_millis(1));
            if client.conn.timeout() == Some(Duration::ZERO) {
                client.conn.on_timeout();
            }
            server.timers();
        }
    }
}

/// Runs both sides for a short while with no application work: lets acknowledgments and
/// session tickets arrive.
pub fn settle(client: &mut Client, server: &mut Server, rounds: usize) {
    let mut n = 0;
    pump(client, server, |_, _| {
        n += 1;
        n > rounds
    });
}
