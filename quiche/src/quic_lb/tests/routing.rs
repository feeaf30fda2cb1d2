//! Three servers behind one load balancer that routes by connection ID alone: every datagram
//! of a connection reaches the server that holds it, also after the client's address changes
//! (where routing by address would send it elsewhere).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::{LbConfig, QuicLbDecoder, QuicLbGenerator, ServerId};
use crate::connection::tests::{client_config, server_config};
use crate::testing::virtual_epoch;
use crate::{Connection, ConnectionId, Header, RecvInfo, Type};

/// The length of every server's connection IDs (the configuration's 12 plus 4 random bytes).
const CID_LEN: usize = 16;
const SERVER_IDS: [[u8; 2]; 3] = [[0x11, 0x01], [0x22, 0x02], [0x33, 0x03]];
const CLIENTS: usize = 12;

struct Server {
    id: ServerId,
    config: crate::Config,
    conns: Vec<Connection>,
    by_cid: HashMap<Vec<u8>, usize>,
    /// Datagrams that named no connection here: the load balancer got one wrong.
    strays: usize,
}

struct Client {
    conn: Connection,
    local: SocketAddr,
    /// The address the servers see (a NAT's): changes at the rebinding.
    external: SocketAddr,
    /// Earlier external addresses the NAT still maps back to the client: the library does
    /// not move a connection to a new peer address yet (no path validation or migration),
    /// so the servers keep answering to the old one.
    old_external: Vec<SocketAddr>,
    /// The server IDs in the responses.
    answers: Vec<Vec<u8>>,
}

struct Net {
    lb: QuicLbDecoder,
    servers: Vec<Server>,
    clients: Vec<Client>,
    vip: SocketAddr,
    now: Instant,
    /// Datagrams routed by server ID, and by the 4-tuple fallback (client Initials only).
    by_id: usize,
    by_fallback: usize,
    /// Per datagram the load balancer delivered: its source address and the server.
    delivered: Vec<(SocketAddr, usize)>,
}

/// The fallback for unroutable IDs (draft §4.3.1 style): a hash of the client's address.
fn fallback(from: SocketAddr) -> usize {
    (from.port() as usize * 31 + from.ip().to_string().len()) % SERVER_IDS.len()
}

impl Net {
    fn new(key: Option<[u8; 16]>) -> Net {
        let lb_config = LbConfig::new(3, 2, 10, key.as_ref()).unwrap();
        let mut lb = QuicLbDecoder::new();
        lb.add_config(lb_config.clone());
        let servers = SERVER_IDS
            .iter()
            .map(|sid| {
                let mut config = server_config();
                let g = QuicLbGenerator::new(lb_config.clone(), sid).unwrap();
                config.set_cid_generator(Arc::new(g));
                Server {
                    id: ServerId::new(sid).unwrap(),
                    config,
                    conns: Vec::new(),
                    by_cid: HashMap::new(),
                    strays: 0,
                }
            })
            .collect();
        let vip: SocketAddr = "192.0.2.1:443".parse().unwrap();
        let clients = (0..CLIENTS)
            .map(|i| {
                let local: SocketAddr = format!("10.0.0.{}:{}", i + 1, 5000 + i).parse().unwrap();
                let mut scid = [0u8; CID_LEN];
                crate::testing::Rng(i as u64 + 1).fill(&mut scid);
                let conn = crate::connect(
                    Some("localhost"),
                    &ConnectionId::from_ref(&scid),
                    local,
                    vip,
                    &mut client_config(),
                )
                .unwrap();
                Client {
                    conn,
                    local,
                    external: local,
                    old_external: Vec::new(),
                    answers: Vec::new(),
                }
            })
            .collect();
        Net {
            lb,
            servers,
            clients,
            vip,
            now: virtual_epoch(),
            by_id: 0,
            by_fallback: 0,
            delivered: Vec::new(),
        }
    }

    /// The load balancer: the server ID in the DCID, or the fallback for unroutable ones.
    fn balance(&mut self, datagram: &mut [u8], from: SocketAddr) {
        // An ID naming no server of the pool (a client's random Initial DCID may decode to
        // anything) is unroutable too (draft §4.1).
        let known = self
            .lb
            .route_datagram(datagram)
            .and_then(|sid| self.servers.iter().position(|s| s.id == sid));
        let idx = match known {
            Some(idx) => {
                self.by_id += 1;
                idx
            }
            None => {
                // Only a client's first flight may carry an ID the servers did not make.
                assert!(datagram[0] & 0x80 != 0, "short header not routable by ID");
                self.by_fallback += 1;
                fallback(from)
            }
        };
        self.delivered.push((from, idx));
        let (vip, now) = (self.vip, self.now);
        let server = &mut self.servers[idx];
        let Ok(hdr) = Header::from_slice(datagram, CID_LEN) else {
            return;
        };
        let conn_idx = match server.by_cid.get(&hdr.dcid[..]) {
            Some(&i) => i,
            None if hdr.ty == Type::Initial => {
                let scid = server.config.new_scid(CID_LEN).unwrap();
                let conn = crate::accept(&scid, None, vip, from, &mut server.config).unwrap();
                server.conns.push(conn);
                let i = server.conns.len() - 1;
                // The client's Initial DCID routes its retransmissions until it switches.
                server.by_cid.insert(hdr.dcid.to_vec(), i);
                i
            }
            None => {
                server.strays += 1;
                return;
            }
        };
        let conn = &mut server.conns[conn_idx];
        let info = RecvInfo { from, to: vip };
        let _ = conn.recv_at(datagram, info, now);
        for cid in conn.source_ids() {
            server.by_cid.insert(cid.to_vec(), conn_idx);
        }
    }

    /// One round: every endpoint sends what it has, each datagram is delivered at once.
    /// Returns whether anything was sent.
    fn round(&mut self) -> bool {
        let mut buf = [0u8; 1500];
        let mut sent = false;
        for c in 0..self.clients.len() {
            while let Ok((len, _)) = self.clients[c].conn.send_at(&mut buf, self.now) {
                sent = true;
                let from = self.clients[c].external;
                self.balance(&mut buf[..len], from);
            }
        }
        for s in 0..self.servers.len() {
            for i in 0..self.servers[s].conns.len() {
                while let Ok((len, info)) = self.servers[s].conns[i].send_at(&mut buf, self.now) {
                    sent = true;
                    // The NAT maps the external address back to the client.
                    let Some(client) = self
                        .clients
                        .iter_mut()
                        .find(|c| c.external == info.to || c.old_external.contains(&info.to))
                    else {
                        continue;
                    };
                    let rinfo = RecvInfo {
                        from: self.vip,
                        to: client.local,
                    };
                    let _ = client.conn.recv_at(&mut buf[..len], rinfo, self.now);
                }
            }
        }
        sent
    }

    /// Advances the virtual clock to the next timer and fires the timers due.
    fn advance(&mut self) {
        let next = self
            .clients
            .iter()
            .map(|c| &c.conn)
            .chain(self.servers.iter().flat_map(|s| s.conns.iter()))
            .filter_map(|c| c.timeout_at(self.now))
            .min()
            .unwrap_or(Duration::from_millis(1));
        self.now += next.max(Duration::from_micros(1));
        for c in &mut self.clients {
            c.conn.on_timeout_at(self.now);
        }
        for s in &mut self.servers {
            for c in &mut s.conns {
                c.on_timeout_at(self.now);
            }
        }
    }

    /// Runs rounds, advancing the clock when all are idle, until `done` holds (bounded).
    fn run_until(&mut self, done: impl Fn(&Net) -> bool) {
        for _ in 0..2000 {
            if done(self) {
                return;
            }
            if !self.round() {
                self.advance();
            }
        }
        panic!("not done in 2000 rounds");
    }

    /// Each client sends a request on `stream`; each server answers with its server ID.
    fn request(&mut self, stream: u64) {
        for c in &mut self.clients {
            c.conn.stream_send(stream, b"who?", true).unwrap();
        }
        let answered = |n: &Net| {
            n.clients
                .iter()
                .all(|c| c.answers.len() as u64 > stream / 4)
        };
        for _ in 0..2000 {
            let sent = self.round();
            for s in &mut self.servers {
                for conn in &mut s.conns {
                    let readable: Vec<u64> = conn.readable().collect();
                    for id in readable {
                        let mut b = [0u8; 64];
                        while let Ok((_, fin)) = conn.stream_recv(id, &mut b) {
                            if fin {
                                conn.stream_send(id, s.id.as_bytes(), true).unwrap();
                            }
                        }
                    }
                }
            }
            for c in &mut self.clients {
                let mut b = [0u8; 64];
                if let Ok((n, true)) = c.conn.stream_recv(stream, &mut b) {
                    c.answers.push(b[..n].to_vec());
                }
            }
            if answered(self) {
                return;
            }
            if !sent {
                self.advance();
            }
        }
        panic!("requests on stream {stream} not answered");
    }
}

fn routes_by_connection_id(key: Option<[u8; 16]>) {
    let mut net = Net::new(key);
    net.run_until(|n| n.clients.iter().all(|c| c.conn.is_established()));
    net.request(0);

    // Every server got connections (the fallback spread the first flights), and each
    // connection's answer came from the server holding it.
    let per_server: Vec<usize> = net.servers.iter().map(|s| s.conns.len()).collect();
    assert_eq!(per_server.iter().sum::<usize>(), CLIENTS, "{per_server:?}");
    assert!(per_server.iter().all(|&n| n > 0), "{per_server:?}");
    let owner: Vec<Vec<u8>> = net.clients.iter().map(|c| c.answers[0].clone()).collect();

    // The servers issued only IDs that decode to themselves.
    for s in &net.servers {
        for conn in &s.conns {
            assert!(conn.source_ids().count() > 1, "NEW_CONNECTION_ID issued");
            for cid in conn.source_ids() {
                assert_eq!(net.lb.server_id(cid), Some(s.id));
            }
        }
    }

    // NAT rebinding: every client's address changes to one the fallback would send to
    // another server than its own.
    for (i, c) in net.clients.iter_mut().enumerate() {
        let own = SERVER_IDS
            .iter()
            .position(|sid| sid[..] == owner[i][..])
            .unwrap();
        let mut port = 20000 + i as u16 * 100;
        let ip = "198.51.100.7";
        while fallback(format!("{ip}:{port}").parse().unwrap()) == own {
            port += 1;
        }
        c.old_external.push(c.external);
        c.external = format!("{ip}:{port}").parse().unwrap();
    }
    let fallback_before = net.by_fallback;
    net.request(4);
    for (i, c) in net.clients.iter().enumerate() {
        assert_eq!(
            c.answers[1], owner[i],
            "client {i} answered by another server"
        );
    }
    // Nothing after the handshakes needed the fallback, no server saw a stray datagram, and
    // no connection was opened twice.
    assert_eq!(net.by_fallback, fallback_before);
    assert!(net.by_id > 0);
    for s in &net.servers {
        assert_eq!(s.strays, 0);
    }
    let total: usize = net.servers.iter().map(|s| s.conns.len()).sum();
    assert_eq!(total, CLIENTS);
    // Every datagram from a client's new address reached the server that owns it.
    for (i, c) in net.clients.iter().enumerate() {
        let own = SERVER_IDS
            .iter()
            .position(|sid| sid[..] == owner[i][..])
            .unwrap();
        let to: Vec<usize> = net
            .delivered
            .iter()
            .filter(|(from, _)| *from == c.external)
            .map(|&(_, s)| s)
            .collect();
        assert!(!to.is_empty());
        assert!(to.iter().all(|&s| s == own), "client {i}: {to:?}");
        assert_ne!(fallback(c.external), own);
    }
}

#[test]
fn three_servers_routed_by_encrypted_ids() {
    routes_by_connection_id(Some([0x42; 16]));
}

#[test]
fn three_servers_routed_by_plaintext_ids() {
    routes_by_connection_id(None);
}
