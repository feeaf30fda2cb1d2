//! Path MTU discovery in the real binaries over loopback: the connection starts at 1200-byte
//! datagrams and settles on the default 1452-byte payload within the first second, as the
//! server's qlog (`connectivity:mtu_updated`) records.

// These tests bound real processes by wall-clock deadlines, like the apps they test.
#![allow(clippy::disallowed_methods)]

use std::fs;

mod common;

use common::{client, client_args, data, describe, sha256, Server, TempDir};

/// The `mtu_updated` events of a JSON-SEQ qlog: (time in ms, new size).
fn mtu_updates(qlog: &str) -> Vec<(f64, u64)> {
    qlog.split('\u{1e}')
        .filter(|r| r.contains(":mtu_updated\""))
        .filter_map(|r| {
            let time = number_after(r, "\"time\":")?;
            let new = number_after(r, "\"new\":")?;
            Some((time, new as u64))
        })
        .collect()
}

fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[test]
fn the_apps_settle_on_1452_byte_payloads_within_the_first_second() {
    let dir = TempDir::new("pmtud");
    let body = data(2 << 20, 3);
    fs::write(dir.root().join("two.bin"), &body).unwrap();
    let qlogs = dir.root().join("qlog");
    let server = Server::start_with_env(&dir, &["--no-retry"], &[("QLOGDIR", &qlogs)]);
    let out = client(&client_args(Some(&dir.out()), [server.url("/two.bin")]));
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        sha256(&fs::read(dir.out().join("two.bin")).unwrap()),
        sha256(&body)
    );
    drop(server);
    let qlog = fs::read_dir(&qlogs)
        .unwrap()
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|q| q.contains("mtu_updated"))
        .expect("the server's qlog has an mtu_updated event");
    let updates = mtu_updates(&qlog);
    let records: Vec<&str> = qlog
        .split('\u{1e}')
        .filter(|r| r.contains("mtu_updated"))
        .collect();
    let (time, size) = *updates.last().unwrap_or_else(|| panic!("{records:?}"));
    assert_eq!(size, 1452, "{updates:?}");
    assert!(time < 1000.0, "settled at {time} ms: {updates:?}");
}
