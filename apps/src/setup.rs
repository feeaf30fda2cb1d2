//! What both programs set up the same way: the `Config` from the transport options, logging,
//! the `SSLKEYLOGFILE` key log, the qlog hook and connection IDs.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use quiche::{Config, Connection, ConnectionId};
use ring::rand::SecureRandom;

use crate::args::TransportArgs;

/// Length of the connection IDs the server issues. The server routes short-header packets by
/// their first `LOCAL_CID_LEN` bytes, the length its IDs have.
pub const LOCAL_CID_LEN: usize = 16;

/// Length of the connection IDs the client issues. Every packet the server sends carries one,
/// and a download is mostly such packets: 4 random bytes (quic-go's client default) keep the
/// IDs of one connection's paths unlinkable (the client routes nothing by them), and each byte
/// less is a byte more of data per datagram: against 16 bytes, 12 more, 0.8 % of a 1452-byte
/// datagram. On a 5 Mbit/s path an 8 MiB download took 14.22 s with 8-byte IDs, 14.08 s over
/// Linux TCP, whose 1448 bytes of data per 1500-byte packet QUIC cannot match.
pub const CLIENT_CID_LEN: usize = 4;

/// Receive buffer size: the largest UDP payload there is.
pub const MAX_DATAGRAM_SIZE: usize = 65535;

/// Streams of each kind a peer may open at first (the server raises the limit as they end).
pub const MAX_STREAMS: u64 = 100;

/// Starts logging to stderr; `RUST_LOG` chooses what (warnings and errors by default).
pub fn init_logging() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .init();
}

/// A `Config` offering the ALPN protocols `alpn`, in order of preference, with the transport
/// options applied.
pub fn config(t: &TransportArgs, alpn: &[&[u8]]) -> Result<Config, String> {
    let version = t.quic_version.unwrap_or(quiche::PROTOCOL_VERSION);
    let mut config = Config::new(version).map_err(|e| format!("{e:?}"))?;
    config
        .set_compatible_versions(&t.compatible_versions)
        .map_err(|e| format!("--compatible-versions: {e:?}"))?;
    config
        .set_application_protos(alpn)
        .map_err(|e| format!("ALPN: {e:?}"))?;
    // Spare connection IDs for the peer's migrations; the server routes every ID a
    // connection issues (`source_ids`).
    config.enable_automatic_connection_ids(true);
    if let Some(name) = &t.cc_algorithm {
        config
            .set_cc_algorithm_name(name)
            .map_err(|e| format!("--cc-algorithm {name}: {e:?}"))?;
    }
    config.enable_hystart(!t.disable_hystart);
    // After enable_hystart: of the two, the last call decides the strategy.
    if let Some(name) = &t.slow_start {
        config
            .set_slow_start_name(name)
            .map_err(|e| format!("--slow-start {name}: {e:?}"))?;
    }
    if let Some(n) = t.initial_cwnd_packets {
        config.set_initial_congestion_window_packets(n);
    }
    config.enable_pacing(!t.disable_pacing);
    // Either flag overrides the library's default (`Config::enable_ack_frequency`).
    if t.ack_frequency || t.disable_ack_frequency {
        config.enable_ack_frequency(t.ack_frequency);
    }
    config.enable_ecn(!t.disable_ecn);
    config.set_initial_max_data(t.max_data);
    config.set_initial_max_stream_data_bidi_local(t.max_stream_data);
    config.set_initial_max_stream_data_bidi_remote(t.max_stream_data);
    config.set_initial_max_stream_data_uni(t.max_stream_data);
    if let Some(n) = t.max_window {
        config.set_max_connection_window(n);
    }
    if let Some(n) = t.max_stream_window {
        config.set_max_stream_window(n);
    }
    config.set_initial_max_streams_bidi(MAX_STREAMS);
    config.set_initial_max_streams_uni(MAX_STREAMS);
    config.set_max_idle_timeout(t.idle_timeout_ms);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE.min(65527));
    config.set_max_send_udp_payload_size(t.max_udp_payload);
    config.discover_pmtu(!t.disable_pmtud);
    config.set_disable_active_migration(t.disable_active_migration);
    if keylog_path().is_some() {
        config.log_keys();
    }
    Ok(config)
}

fn keylog_path() -> Option<std::ffi::OsString> {
    std::env::var_os("SSLKEYLOGFILE").filter(|p| !p.is_empty())
}

/// The `SSLKEYLOGFILE` key log, shared by all connections of the process: one open file,
/// appended to (several processes may write the same file, as browsers do).
#[derive(Clone)]
pub struct KeyLog(Arc<Mutex<File>>);

impl KeyLog {
    /// Opens `$SSLKEYLOGFILE` for appending, if it is set.
    pub fn from_env() -> io::Result<Option<KeyLog>> {
        let Some(path) = keylog_path() else {
            return Ok(None);
        };
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Some(KeyLog(Arc::new(Mutex::new(file)))))
    }

    /// Sends the connection's TLS secrets to this key log.
    pub fn attach(&self, conn: &mut Connection) {
        conn.set_keylog(Box::new(self.clone()));
    }
}

impl Write for KeyLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.0.lock() {
            Ok(mut f) => f.write(buf),
            Err(poisoned) => poisoned.into_inner().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.0.lock() {
            Ok(mut f) => f.flush(),
            Err(poisoned) => poisoned.into_inner().flush(),
        }
    }
}

/// Sets the connection's qlog writer when `QLOGDIR` is set: one file per connection,
/// `$QLOGDIR/<trace id>-<role>.sqlog` (JSON-SEQ, qlog 0.3, which qvis opens).
pub fn setup_qlog(conn: &mut Connection, role: &str) {
    let Some(dir) = std::env::var_os("QLOGDIR").filter(|d| !d.is_empty()) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let path = dir.join(format!("{}-{role}.sqlog", conn.trace_id()));
    let file = std::fs::create_dir_all(&dir).and_then(|()| std::fs::File::create(&path));
    match file {
        Ok(file) => {
            let reference_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64() * 1000.0)
                .unwrap_or(0.0);
            conn.set_qlog_with_reference_time(
                Box::new(std::io::BufWriter::new(file)),
                format!("quiche {role}"),
                format!("{role} connection {}", conn.trace_id()),
                reference_ms,
            );
        }
        Err(e) => log::warn!("qlog {}: {e}", path.display()),
    }
}

/// A random connection ID of [`CLIENT_CID_LEN`] bytes, for the client.
pub fn new_cid() -> ConnectionId<'static> {
    let mut cid = vec![0; CLIENT_CID_LEN];
    fill_random(&mut cid);
    ConnectionId::from_vec(cid)
}

/// Fills `buf` with cryptographically secure random bytes.
///
/// Panics if the operating system has no randomness to give: nothing secure can be done then.
pub fn fill_random(buf: &mut [u8]) {
    #[allow(clippy::expect_used)]
    ring::rand::SystemRandom::new()
        .fill(buf)
        .expect("the operating system's random number generator failed");
}
