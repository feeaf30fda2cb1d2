//! Our library: `quiche::connect` / `quiche::accept`, datagrams shuttled with `send_at` /
//! `recv_at` in memory.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use quiche::{Config, Connection, ConnectionId, Header, RecvInfo};

use crate::common::{Traffic, CLIENT_ADDR, MAX_ROUNDS, SERVER_ADDR, SERVER_NAME};

/// The length of the connection IDs both sides issue here: the apps' server's `LOCAL_CID_LEN`.
/// (The apps' client issues shorter ones, `CLIENT_CID_LEN`; the server routes only by its own,
/// and the shorter IDs make no difference to what this program measures.)
const CID_LEN: usize = 16;

/// The two configs, shared by every connection as in the apps.
pub struct Ours {
    client: Config,
    server: Config,
    next_cid: u64,
    buf: Vec<u8>,
}

/// One established connection pair. Boxed, as an application that keeps connections in a map
/// holds them, so that heap figures include the `Connection` struct itself.
pub struct OursPair {
    /// The client side.
    pub client: Box<Connection>,
    /// The server side.
    pub server: Box<Connection>,
}

fn err(what: &str, e: quiche::Error) -> String {
    format!("ours: {what}: {e:?}")
}

/// The transport settings the apps use by default (apps/src/setup.rs, apps/src/args.rs).
/// `curves`: the key exchange groups (`Config::set_curves_list`), or the backend's default.
fn base_config(curves: Option<&str>) -> Result<Config, String> {
    let mut c = Config::new(quiche::PROTOCOL_VERSION).map_err(|e| err("config", e))?;
    if let Some(curves) = curves {
        c.set_curves_list(curves).map_err(|e| err("curves", e))?;
    }
    c.set_application_protos(&[crate::common::ALPN])
        .map_err(|e| err("ALPN", e))?;
    c.set_initial_max_data(10_000_000);
    c.set_initial_max_stream_data_bidi_local(1_000_000);
    c.set_initial_max_stream_data_bidi_remote(1_000_000);
    c.set_initial_max_stream_data_uni(1_000_000);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_max_idle_timeout(30_000);
    c.set_max_recv_udp_payload_size(65527);
    c.set_max_send_udp_payload_size(1350);
    c.set_disable_active_migration(true);
    Ok(c)
}

impl Ours {
    /// Configs with the test certificate (server) and its CA (client, verification on), and
    /// the key exchange groups `curves` on both sides (`None`: the TLS backend's default).
    pub fn new(certs: &Path, curves: Option<&str>) -> Result<Ours, String> {
        let path = |f: &str| certs.join(f).to_string_lossy().into_owned();
        let mut client = base_config(curves)?;
        client
            .load_verify_locations_from_file(&path("rootca.crt"))
            .map_err(|e| err("CA", e))?;
        client.verify_peer(true);
        let mut server = base_config(curves)?;
        server
            .load_cert_chain_from_pem_file(&path("cert.crt"))
            .map_err(|e| err("certificate", e))?;
        server
            .load_priv_key_from_pem_file(&path("cert.key"))
            .map_err(|e| err("key", e))?;
        Ok(Ours {
            client,
            server,
            next_cid: 0,
            buf: vec![0; 65535],
        })
    }

    /// A fresh connection ID. Counting, not random: drawing random IDs is the application's
    /// business and not what this program measures.
    fn cid(&mut self) -> ConnectionId<'static> {
        self.next_cid += 1;
        let mut id = vec![0u8; CID_LEN];
        id[..8].copy_from_slice(&self.next_cid.to_be_bytes());
        ConnectionId::from(id)
    }

    /// One complete handshake: until both sides are established and neither has anything left
    /// to send (so the client has processed the server's HANDSHAKE_DONE).
    pub fn handshake(&mut self, mut now: Instant, t: &mut Traffic) -> Result<OursPair, String> {
        let (ccid, scid) = (self.cid(), self.cid());
        let client = quiche::connect(
            Some(SERVER_NAME),
            &ccid,
            CLIENT_ADDR,
            SERVER_ADDR,
            &mut self.client,
        )
        .map_err(|e| err("connect", e))?;
        let mut client = Box::new(client);
        let mut server: Option<Box<Connection>> = None;
        for _ in 0..MAX_ROUNDS {
            let mut moved = 0;
            // Client to server. The server is created when the first Initial arrives, after the
            // header was parsed, as the server app does.
            while let Some(len) = send(&mut client, &mut self.buf, now)? {
                let dgram = &mut self.buf[..len];
                Header::from_slice(dgram, CID_LEN).map_err(|e| err("header", e))?;
                let srv = match &mut server {
                    Some(s) => s,
                    None => {
                        let s =
                            quiche::accept(&scid, None, SERVER_ADDR, CLIENT_ADDR, &mut self.server)
                                .map_err(|e| err("accept", e))?;
                        server.insert(Box::new(s))
                    }
                };
                recv(srv, dgram, CLIENT_ADDR, SERVER_ADDR, now)?;
                t.c2s.add(len);
                moved += 1;
            }
            if let Some(srv) = &mut server {
                while let Some(len) = send(srv, &mut self.buf, now)? {
                    let dgram = &mut self.buf[..len];
                    recv(&mut client, dgram, SERVER_ADDR, CLIENT_ADDR, now)?;
                    t.s2c.add(len);
                    moved += 1;
                }
            }
            if moved > 0 {
                continue;
            }
            let srv = server.as_mut().ok_or("ours: the client sent nothing")?;
            if client.is_established() && srv.is_established() {
                return Ok(OursPair {
                    client,
                    server: server.take().ok_or("ours: no server")?,
                });
            }
            // Stalled on a timer (none is expected without loss): jump to it.
            let next = [client.timeout_instant(), srv.timeout_instant()]
                .into_iter()
                .flatten()
                .min()
                .ok_or("ours: the handshake stalled with no timer armed")?;
            now = now.max(next);
            client.on_timeout_at(now);
            srv.on_timeout_at(now);
            t.timer_jumps += 1;
        }
        Err("ours: the handshake did not finish".into())
    }
}

fn send(conn: &mut Connection, buf: &mut [u8], now: Instant) -> Result<Option<usize>, String> {
    match conn.send_at(buf, now) {
        Ok((len, _)) => Ok(Some(len)),
        Err(quiche::Error::Done) => Ok(None),
        Err(e) => Err(err("send", e)),
    }
}

fn recv(
    conn: &mut Connection,
    dgram: &mut [u8],
    from: SocketAddr,
    to: SocketAddr,
    now: Instant,
) -> Result<(), String> {
    match conn.recv_at(dgram, RecvInfo { from, to }, now) {
        Ok(_) | Err(quiche::Error::Done) => Ok(()),
        Err(e) => Err(err("recv", e)),
    }
}
