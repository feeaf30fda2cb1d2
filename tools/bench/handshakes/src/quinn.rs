//! quinn-proto (the state machine under quinn): an `Endpoint` per side and their `Connection`s,
//! datagrams shuttled in memory (`poll_transmit` -> `Endpoint::handle` -> `handle_event` ...),
//! with the endpoint events processed as quinn's own driver does.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig,
    EndpointEvent, ServerConfig, TransportConfig,
};
use rustls::client::Resumption;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::common::{Traffic, CLIENT_ADDR, MAX_ROUNDS, SERVER_ADDR, SERVER_NAME};

/// The configs, shared by every connection.
pub struct Quinn {
    client: ClientConfig,
    server: Arc<ServerConfig>,
    endpoint: Arc<EndpointConfig>,
    buf: Vec<u8>,
    response: Vec<u8>,
}

/// A client endpoint and a server endpoint: what holds the connection-ID routing tables.
pub struct Endpoints {
    /// The client's endpoint.
    pub client: Endpoint,
    /// The server's endpoint.
    pub server: Endpoint,
}

/// One connection and its handle in its endpoint.
pub struct Side {
    handle: ConnectionHandle,
    conn: Connection,
}

/// One established connection pair.
pub struct QuinnPair {
    /// The client side.
    pub client: Side,
    /// The server side.
    pub server: Side,
}

fn err(what: &str, e: impl std::fmt::Debug) -> String {
    format!("quinn: {what}: {e:?}")
}

/// Only TLS_AES_128_GCM_SHA256 (the ring provider prefers AES-256-GCM, ours AES-128-GCM); the
/// key exchange groups stay the provider's, X25519 first, as ours.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: vec![ring::cipher_suite::TLS13_AES_128_GCM_SHA256],
        ..ring::default_provider()
    })
}

/// quinn-peer's transport settings: quinn's defaults with a 30 s idle timeout.
fn transport() -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.max_idle_timeout(Some(
        Duration::from_secs(30)
            .try_into()
            .expect("30 s is a valid idle timeout"),
    ));
    Arc::new(t)
}

impl Quinn {
    /// Configs with the test certificate (server) and its CA (client, verification on).
    pub fn new(certs: &Path) -> Result<Quinn, String> {
        let alpn = vec![crate::common::ALPN.to_vec()];
        let chain = CertificateDer::pem_file_iter(certs.join("cert.crt"))
            .map_err(|e| err("certificate", e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| err("certificate", e))?;
        let key =
            PrivateKeyDer::from_pem_file(certs.join("cert.key")).map_err(|e| err("key", e))?;
        let mut tls = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| err("TLS", e))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| err("TLS", e))?;
        tls.alpn_protocols = alpn.clone();
        let mut server = ServerConfig::with_crypto(Arc::new(
            QuicServerConfig::try_from(tls).map_err(|e| err("TLS", e))?,
        ));
        server.transport_config(transport());

        let mut roots = rustls::RootCertStore::empty();
        for ca in
            CertificateDer::pem_file_iter(certs.join("rootca.crt")).map_err(|e| err("CA", e))?
        {
            roots
                .add(ca.map_err(|e| err("CA", e))?)
                .map_err(|e| err("CA", e))?;
        }
        let mut tls = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| err("TLS", e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = alpn;
        // Every handshake is a full one: no session is remembered, so none is resumed.
        tls.resumption = Resumption::disabled();
        let mut client = ClientConfig::new(Arc::new(
            QuicClientConfig::try_from(tls).map_err(|e| err("TLS", e))?,
        ));
        client.transport_config(transport());
        Ok(Quinn {
            client,
            server: Arc::new(server),
            endpoint: Arc::new(EndpointConfig::default()),
            buf: Vec::with_capacity(65535),
            response: Vec::new(),
        })
    }

    /// A client endpoint and a server endpoint. Path MTU discovery is off (`allow_mtud`
    /// false): with no socket there is no path to probe, and its probes would follow the
    /// handshake.
    pub fn endpoints(&self) -> Endpoints {
        Endpoints {
            client: Endpoint::new(self.endpoint.clone(), None, false, None),
            server: Endpoint::new(
                self.endpoint.clone(),
                Some(self.server.clone()),
                false,
                None,
            ),
        }
    }

    /// One complete handshake: until both sides are established and neither has anything left
    /// to send (so the client has processed the server's HANDSHAKE_DONE).
    pub fn handshake(
        &mut self,
        eps: &mut Endpoints,
        mut now: Instant,
        t: &mut Traffic,
    ) -> Result<QuinnPair, String> {
        let (handle, conn) = eps
            .client
            .connect(now, self.client.clone(), SERVER_ADDR, SERVER_NAME)
            .map_err(|e| err("connect", e))?;
        let mut client = Side { handle, conn };
        let mut server: Option<Side> = None;
        for _ in 0..MAX_ROUNDS {
            let mut moved = 0;
            loop {
                self.buf.clear();
                let Some(tx) = client.conn.poll_transmit(now, 1, &mut self.buf) else {
                    break;
                };
                t.c2s.add(tx.size);
                moved += 1;
                let data = BytesMut::from(&self.buf[..tx.size]);
                self.response.clear();
                match eps
                    .server
                    .handle(now, CLIENT_ADDR, None, None, data, &mut self.response)
                {
                    Some(DatagramEvent::NewConnection(incoming)) => {
                        let (handle, conn) = eps
                            .server
                            .accept(incoming, now, &mut self.response, None)
                            .map_err(|e| err("accept", e.cause))?;
                        server = Some(Side { handle, conn });
                    }
                    Some(DatagramEvent::ConnectionEvent(ch, ev)) => match &mut server {
                        Some(s) if s.handle == ch => s.conn.handle_event(ev),
                        _ => return Err("quinn: a datagram for an unknown connection".into()),
                    },
                    Some(DatagramEvent::Response(_)) => {
                        return Err("quinn: the server endpoint answered statelessly".into())
                    }
                    None => {}
                }
            }
            moved += endpoint_events(&mut eps.client, &mut client);
            if let Some(srv) = &mut server {
                moved += endpoint_events(&mut eps.server, srv);
                loop {
                    self.buf.clear();
                    let Some(tx) = srv.conn.poll_transmit(now, 1, &mut self.buf) else {
                        break;
                    };
                    t.s2c.add(tx.size);
                    moved += 1;
                    let data = BytesMut::from(&self.buf[..tx.size]);
                    self.response.clear();
                    match eps
                        .client
                        .handle(now, SERVER_ADDR, None, None, data, &mut self.response)
                    {
                        Some(DatagramEvent::ConnectionEvent(ch, ev)) if ch == client.handle => {
                            client.conn.handle_event(ev)
                        }
                        None => {}
                        Some(_) => {
                            return Err("quinn: unexpected datagram event at the client".into())
                        }
                    }
                }
                moved += endpoint_events(&mut eps.client, &mut client);
                moved += endpoint_events(&mut eps.server, srv);
            }
            // What an application would read; nothing here needs it.
            while client.conn.poll().is_some() {}
            if let Some(srv) = &mut server {
                while srv.conn.poll().is_some() {}
            }
            if moved > 0 {
                continue;
            }
            let srv = server.as_mut().ok_or("quinn: the client sent nothing")?;
            if !client.conn.is_handshaking() && !srv.conn.is_handshaking() {
                return Ok(QuinnPair {
                    client,
                    server: server.take().ok_or("quinn: no server")?,
                });
            }
            let next = [client.conn.poll_timeout(), srv.conn.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .ok_or("quinn: the handshake stalled with no timer armed")?;
            now = now.max(next);
            client.conn.handle_timeout(now);
            srv.conn.handle_timeout(now);
            t.timer_jumps += 1;
        }
        Err("quinn: the handshake did not finish".into())
    }

    /// Frees a pair as quinn does when a connection is dropped: each endpoint forgets it
    /// (its connection IDs leave the routing table), then the state is dropped.
    pub fn release(eps: &mut Endpoints, pair: QuinnPair) {
        eps.client
            .handle_event(pair.client.handle, EndpointEvent::drained());
        eps.server
            .handle_event(pair.server.handle, EndpointEvent::drained());
    }
}

/// Hands a connection's events to its endpoint and the endpoint's answers back (new connection
/// IDs to issue, ...); returns how many there were.
fn endpoint_events(ep: &mut Endpoint, side: &mut Side) -> usize {
    let mut n = 0;
    while let Some(ev) = side.conn.poll_endpoint_events() {
        n += 1;
        if let Some(answer) = ep.handle_event(side.handle, ev) {
            side.conn.handle_event(answer);
        }
    }
    n
}
