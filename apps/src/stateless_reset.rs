//! The server's stateless resets (RFC 9000 §10.3): the static key they derive from and how
//! many it sends.
//!
//! A short-header datagram whose connection ID the server does not know belongs to a
//! connection it lost (a restart) or forgot (a late packet after the close). The library builds
//! the answer ([`quiche::Config::stateless_reset`]): smaller than the datagram, never for a
//! datagram too small to be a packet addressed to our 16-byte IDs (37 bytes), so neither
//! amplification nor a loop between two endpoints can start. This module adds the limit per
//! peer address that §10.3.3 suggests, so that the server cannot be made to send a stream of
//! resets at an address whose datagrams an attacker forges: [`RESET_BURST`] in a row, then
//! one per [`RESET_INTERVAL`], per address (IP and port), per worker with `--threads`. With
//! `--server-id`, IDs that do not name this server get no reset ([`StatelessResets`]).
//!
//! The key comes from `--reset-key FILE`: the file's bytes are a secret (created with 32
//! random bytes if the file does not exist), hashed into the key, so that a server restarted
//! with the same file computes the tokens of the IDs it issued before. Without the option the
//! key is random per run: resets then reach only the clients of connections this run forgot.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use quiche::quic_lb::{LbConfig, ServerId};
use quiche::Config;
use ring::hmac;

/// Resets one peer address may get in a row.
pub const RESET_BURST: u32 = 3;

/// After a burst, one more reset per address per this interval.
pub const RESET_INTERVAL: Duration = Duration::from_millis(200);

/// The most peer addresses whose limits are tracked. When full, addresses whose allowance
/// has refilled are forgotten (at most once a second); new addresses get no
/// reset until there is room, so a flood from forged addresses costs bounded memory.
pub const MAX_TRACKED: usize = 65_536;

/// The shortest time between two sweeps of the full table.
const PRUNE_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest secret accepted from a `--reset-key` file.
pub const MIN_SECRET_LEN: usize = 16;

/// The largest `--reset-key` file read (a secret, not a data file).
const MAX_SECRET_LEN: usize = 4096;

/// Separates this use of the secret from any other the operator makes of it.
const KEY_LABEL: &[u8] = b"quiche-server stateless reset key v1";

/// The 32-byte static key derived from the secret in `path`, creating the file with 32
/// random bytes (readable by its owner only) if it does not exist.
pub fn load_or_create_key(path: &Path) -> Result<[u8; 32], String> {
    let what = |e: io::Error| format!("--reset-key {}: {e}", path.display());
    let secret = match fs::read(path) {
        Ok(secret) => secret,
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_secret(path).map_err(what)?,
        Err(e) => return Err(what(e)),
    };
    if !(MIN_SECRET_LEN..=MAX_SECRET_LEN).contains(&secret.len()) {
        return Err(format!(
            "--reset-key {}: {} bytes; the secret must be {MIN_SECRET_LEN} to {MAX_SECRET_LEN} \
             bytes (e.g. `head -c 32 /dev/urandom > FILE`)",
            path.display(),
            secret.len()
        ));
    }
    Ok(key_from_secret(&secret))
}

/// A random key, for a run without `--reset-key`.
pub fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    crate::setup::fill_random(&mut key);
    key
}

/// HMAC-SHA256 under a fixed label: any secret of enough entropy becomes a uniform key.
fn key_from_secret(secret: &[u8]) -> [u8; 32] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, KEY_LABEL), secret);
    let mut key = [0u8; 32];
    key.copy_from_slice(tag.as_ref());
    key
}

/// Writes 32 random bytes to a new file at `path`; if another process created it first, its
/// secret is used.
fn create_secret(path: &Path) -> io::Result<Vec<u8>> {
    let mut secret = vec![0u8; 32];
    crate::setup::fill_random(&mut secret);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(&secret)?;
            file.sync_all()?;
            log::info!("--reset-key {}: new secret written", path.display());
            Ok(secret)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => fs::read(path),
        Err(e) => Err(e),
    }
}

/// What becomes of a short-header datagram for no connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetDecision {
    /// Send the reset written into the output buffer, this long.
    Send(usize),
    /// The address had its share.
    Limited,
    /// No reset, for this reason.
    None(&'static str),
}

/// The server's side of stateless resets: which datagrams get one.
#[derive(Debug)]
pub struct StatelessResets {
    limiter: ResetLimiter,
    /// With `--server-id`: the QUIC-LB configuration and our server ID. Only IDs naming us get
    /// a reset: another server behind the load balancer may share the key and serve the
    /// connection of an ID that reached us by mistake (RFC 9000 §10.3.2).
    lb_self: Option<(LbConfig, ServerId)>,
}

impl StatelessResets {
    /// Resets for IDs naming the server `lb_self` (any ID without QUIC-LB).
    pub fn new(lb_self: Option<(LbConfig, ServerId)>) -> Self {
        StatelessResets {
            limiter: ResetLimiter::new(),
            lb_self,
        }
    }

    /// Decides about a `len`-byte short-header datagram from `from` addressed to `dcid`, an ID
    /// no connection has; a reset to send is written into `out`.
    pub fn answer(
        &mut self,
        config: &Config,
        dcid: &[u8],
        len: usize,
        from: SocketAddr,
        now: Instant,
        out: &mut [u8],
    ) -> ResetDecision {
        let ours = self
            .lb_self
            .as_ref()
            .is_none_or(|(lb, me)| lb.decode_server_id(dcid).as_ref() == Some(me));
        if !ours {
            return ResetDecision::None("another server's connection ID");
        }
        let n = match config.stateless_reset(dcid, len, out) {
            Ok(n) => n,
            Err(quiche::Error::Done) => return ResetDecision::None("too small to answer"),
            Err(_) => return ResetDecision::None("no reset could be made"),
        };
        if !self.limiter.allow(from, now) {
            return ResetDecision::Limited;
        }
        ResetDecision::Send(n)
    }
}

/// One address's allowance: `left` resets now, one more every [`RESET_INTERVAL`] after
/// `refilled_at`, up to [`RESET_BURST`].
#[derive(Clone, Copy, Debug)]
struct Allowance {
    left: u32,
    refilled_at: Instant,
}

impl Allowance {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled_at);
        let earned = (elapsed.as_nanos() / RESET_INTERVAL.as_nanos()).min(u128::from(RESET_BURST));
        if earned > 0 {
            self.left = (self.left + earned as u32).min(RESET_BURST);
            self.refilled_at = if self.left == RESET_BURST {
                now
            } else {
                self.refilled_at + RESET_INTERVAL * earned as u32
            };
        }
    }
}

/// The per-address limit on stateless resets.
#[derive(Debug)]
pub struct ResetLimiter {
    allowances: HashMap<SocketAddr, Allowance>,
    last_prune: Option<Instant>,
}

impl Default for ResetLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl ResetLimiter {
    /// No address has had a reset yet.
    pub fn new() -> Self {
        ResetLimiter {
            allowances: HashMap::new(),
            last_prune: None,
        }
    }

    /// Whether a reset may go to `to` at `now`; if so, it is counted.
    pub fn allow(&mut self, to: SocketAddr, now: Instant) -> bool {
        if !self.allowances.contains_key(&to) && !self.make_room(now) {
            return false;
        }
        let allowance = self.allowances.entry(to).or_insert(Allowance {
            left: RESET_BURST,
            refilled_at: now,
        });
        allowance.refill(now);
        if allowance.left == 0 {
            return false;
        }
        allowance.left -= 1;
        true
    }

    /// Addresses tracked now.
    pub fn tracked(&self) -> usize {
        self.allowances.len()
    }

    /// Whether a new address fits, forgetting those whose allowance is whole again when the
    /// table is full (they are as if never seen).
    fn make_room(&mut self, now: Instant) -> bool {
        if self.allowances.len() < MAX_TRACKED {
            return true;
        }
        if self
            .last_prune
            .is_some_and(|t| now.saturating_duration_since(t) < PRUNE_INTERVAL)
        {
            return false;
        }
        self.last_prune = Some(now);
        self.allowances.retain(|_, a| {
            a.refill(now);
            a.left < RESET_BURST
        });
        self.allowances.len() < MAX_TRACKED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn a_burst_then_one_per_interval_per_address() {
        let start = Instant::now();
        let mut l = ResetLimiter::new();
        for _ in 0..RESET_BURST {
            assert!(l.allow(addr(1), start));
        }
        assert!(!l.allow(addr(1), start));
        assert!(!l.allow(addr(1), start + RESET_INTERVAL / 2));
        // Another address has its own allowance.
        assert!(l.allow(addr(2), start));
        assert!(l.allow(addr(1), start + RESET_INTERVAL));
        assert!(!l.allow(addr(1), start + RESET_INTERVAL));
        // Over ten seconds of a flood, a burst plus one per interval.
        let mut sent = 0;
        for ms in 0..10_000u64 {
            if l.allow(addr(3), start + Duration::from_millis(ms)) {
                sent += 1;
            }
        }
        let expected = RESET_BURST as u64 + 9_999 / RESET_INTERVAL.as_millis() as u64;
        assert_eq!(sent, expected);
        // A quiet address gets its whole burst back, no more.
        let later = start + Duration::from_secs(60);
        for _ in 0..RESET_BURST {
            assert!(l.allow(addr(1), later));
        }
        assert!(!l.allow(addr(1), later));
    }

    #[test]
    fn the_table_is_bounded_and_forgets_idle_addresses() {
        let start = Instant::now();
        let mut l = ResetLimiter::new();
        for i in 0..MAX_TRACKED {
            let a = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 443));
            assert!(l.allow(a, start));
        }
        assert_eq!(l.tracked(), MAX_TRACKED);
        // Full, and every allowance still short: a new address gets nothing.
        assert!(!l.allow(addr(9), start));
        // Soon after, the sweep waits for its interval.
        assert!(!l.allow(addr(9), start + RESET_INTERVAL));
        // Once the allowances are whole again, the sweep frees them.
        let later = start + PRUNE_INTERVAL + RESET_INTERVAL;
        assert!(l.allow(addr(9), later));
        assert_eq!(l.tracked(), 1);
    }

    #[test]
    fn the_key_file_is_created_once_and_read_back() {
        let dir = std::env::temp_dir().join(format!("quiche-reset-key-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        let first = load_or_create_key(&path).unwrap();
        assert_eq!(fs::read(&path).unwrap().len(), 32);
        assert_eq!(
            load_or_create_key(&path).unwrap(),
            first,
            "the same key after a restart"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "readable by its owner only");
        }
        // An operator's own secret; too short or too long ones are refused.
        fs::write(&path, b"a passphrase of some length").unwrap();
        let own = load_or_create_key(&path).unwrap();
        assert_ne!(own, first);
        assert_eq!(own, key_from_secret(b"a passphrase of some length"));
        fs::write(&path, b"short").unwrap();
        assert!(load_or_create_key(&path).unwrap_err().contains("5 bytes"));
        fs::write(&path, vec![1u8; MAX_SECRET_LEN + 1]).unwrap();
        assert!(load_or_create_key(&path).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
