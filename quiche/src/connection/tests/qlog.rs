//! qlog written during a lossy pipe transfer, checked against the schema and for invariants.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::testing::{LinkConfig, Pipe};

use super::{client_config, server_config};

/// A qlog writer whose bytes the test reads back.
#[derive(Clone, Default)]
pub(super) struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON records written to `buf`.
pub(super) fn records(buf: &SharedBuf) -> Vec<serde_json::Value> {
    let bytes = buf.0.lock().unwrap().clone();
    bytes
        .split(|&b| b == 0x1e)
        .filter(|r| !r.iter().all(u8::is_ascii_whitespace))
        .map(|r| serde_json::from_slice(r).expect("every record is JSON"))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Legal moves of the congestion controller's state (qlog names).
fn legal(from: &str, to: &str) -> bool {
    let allowed: &[&str] = match from {
        "slow_start" => &[
            "conservative_slow_start",
            "limited_slow_start",
            "recovery",
            "congestion_avoidance",
            "application_limited",
        ],
        "conservative_slow_start" => &[
            "slow_start",
            "congestion_avoidance",
            "recovery",
            "application_limited",
        ],
        "limited_slow_start" => &["recovery", "application_limited"],
        // Persistent congestion restarts slow start.
        "recovery" => &["congestion_avoidance", "slow_start", "application_limited"],
        "congestion_avoidance" => &["recovery", "slow_start", "application_limited"],
        "application_limited" => &[
            "slow_start",
            "conservative_slow_start",
            "limited_slow_start",
            "congestion_avoidance",
            "recovery",
        ],
        _ => &[],
    };
    allowed.contains(&to)
}

fn space_of(packet_type: &str) -> &'static str {
    match packet_type {
        "initial" => "initial",
        "handshake" => "handshake",
        _ => "application",
    }
}

/// Checks a packet_sent or packet_received event's header, length and frames; returns its
/// packet type and number.
fn check_packet_event(data: &serde_json::Value) -> (&str, u64) {
    let ty = data["header"]["packet_type"].as_str().expect("packet_type");
    let pn = data["header"]["packet_number"]
        .as_u64()
        .expect("packet_number");
    assert!(data["raw"]["length"].as_u64().is_some(), "raw.length");
    let frames = data["frames"].as_array().expect("frames");
    for f in frames {
        let ft = f["frame_type"].as_str().expect("frame_type");
        match ft {
            "ack" => assert!(f["acked_ranges"].is_array()),
            "stream" => {
                assert!(f["stream_id"].is_u64() && f["offset"].is_u64());
                assert!(f["length"].is_u64() && f["fin"].is_boolean());
            }
            "crypto" => assert!(f["offset"].is_u64() && f["length"].is_u64()),
            _ => {}
        }
    }
    (ty, pn)
}

fn check_trace(recs: &[serde_json::Value], conn: &crate::Connection, vantage: &str) {
    let header = &recs[0];
    assert_eq!(header["qlog_version"], "0.3");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert_eq!(header["trace"]["vantage_point"]["type"], vantage);
    // Both sides group their traces under the client's original DCID.
    assert!(!conn.odcid.is_empty());
    assert_eq!(
        header["trace"]["common_fields"]["group_id"],
        hex(&conn.odcid)
    );

    let mut last_time = f64::MIN;
    let mut sent: HashSet<(&'static str, u64)> = HashSet::new();
    let mut lost = 0;
    let mut metrics: HashMap<String, f64> = HashMap::new();
    let mut cc_state: Option<String> = None;
    let mut names = HashSet::new();
    for ev in &recs[1..] {
        let time = ev["time"].as_f64().expect("time");
        assert!(time >= last_time, "time went back: {time} < {last_time}");
        last_time = time;
        let name = ev["name"].as_str().expect("name");
        let data = &ev["data"];
        assert!(data.is_object(), "{name} has data");
        names.insert(name.to_string());
        match name {
            "transport:packet_sent" | "transport:packet_received" => {
                let (ty, pn) = check_packet_event(data);
                if name == "transport:packet_sent" {
                    assert!(
                        sent.insert((space_of(ty), pn)),
                        "packet {pn} sent twice in the {ty} space"
                    );
                }
            }
            "recovery:packet_lost" => {
                let ty = data["header"]["packet_type"].as_str().expect("packet_type");
                let pn = data["header"]["packet_number"]
                    .as_u64()
                    .expect("packet_number");
                assert!(
                    sent.contains(&(space_of(ty), pn)),
                    "lost {ty} {pn} was never sent"
                );
                lost += 1;
            }
            "recovery:metrics_updated" => {
                let obj = data.as_object().unwrap();
                assert!(!obj.is_empty(), "metrics_updated with nothing changed");
                for (k, v) in obj {
                    metrics.insert(k.clone(), v.as_f64().expect("numeric metric"));
                }
            }
            "recovery:congestion_state_updated" => {
                let new = data["new"].as_str().expect("new state").to_string();
                if let Some(old) = &cc_state {
                    assert!(legal(old, &new), "illegal transition {old} -> {new}");
                }
                cc_state = Some(new);
            }
            _ => {}
        }
    }
    for required in [
        "transport:parameters_set",
        "transport:packet_sent",
        "transport:packet_received",
        "recovery:metrics_updated",
        "recovery:congestion_state_updated",
        "connectivity:connection_state_updated",
    ] {
        assert!(names.contains(required), "{required} missing");
    }

    // The metrics the events add up to are what the connection reports now.
    let ps = conn.path_stats();
    assert_eq!(metrics["congestion_window"], ps.cwnd as f64);
    assert_eq!(metrics["bytes_in_flight"], ps.bytes_in_flight as f64);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    assert!((metrics["smoothed_rtt"] - ms(ps.rtt)).abs() < 0.01);
    assert!((metrics["latest_rtt"] - ms(ps.latest_rtt)).abs() < 0.01);
    assert!((metrics["rtt_variance"] - ms(ps.rttvar)).abs() < 0.01);
    assert_eq!(cc_state.as_deref(), Some(ps.cc_state));
    assert_eq!(lost, conn.stats().lost, "every loss logged once");
}

#[test]
fn qlog_of_a_lossy_transfer_is_valid_and_consistent() {
    let link = LinkConfig {
        delay: Duration::from_millis(15),
        rate_bps: Some(50_000_000),
        queue_bytes: Some(200_000),
        loss: 0.03,
        ..LinkConfig::default()
    };
    let mut pipe = Pipe::with_links(
        &mut client_config(),
        &mut server_config(),
        link.clone(),
        link,
        21,
    )
    .unwrap();
    let (client_log, server_log) = (SharedBuf::default(), SharedBuf::default());
    pipe.client
        .set_qlog(Box::new(client_log.clone()), "client".into(), "test".into());
    pipe.server
        .set_qlog(Box::new(server_log.clone()), "server".into(), "test".into());
    pipe.handshake().unwrap();

    let data = vec![7u8; 2 << 20];
    let mut sent = 0;
    let mut received = 0;
    let mut buf = vec![0u8; 65536];
    let deadline = pipe.now + Duration::from_secs(120);
    while received < data.len() {
        assert!(pipe.now < deadline);
        if sent < data.len() {
            if let Ok(n) = pipe.client.stream_send(0, &data[sent..], true) {
                sent += n;
            }
        }
        while let Ok((n, _)) = pipe.server.stream_recv(0, &mut buf) {
            received += n;
        }
        pipe.step().unwrap();
    }
    assert!(pipe.client.stats().lost > 0, "the link must lose packets");

    check_trace(&records(&client_log), &pipe.client, "client");
    check_trace(&records(&server_log), &pipe.server, "server");

    // Closing writes the sender's loss counters by cause, once, as Stats has them.
    let s = pipe.client.stats();
    pipe.client.close(true, 0, b"done").unwrap();
    pipe.step().unwrap();
    let log = records(&client_log);
    let counters: Vec<_> = log
        .iter()
        .filter(|r| r["name"] == "quiche:loss_counters")
        .collect();
    assert_eq!(counters.len(), 1, "one loss_counters event");
    let c = &counters[0]["data"];
    assert_eq!(c["lost"], s.lost as u64);
    assert_eq!(c["retrans"], s.retrans as u64);
    assert_eq!(c["retrans_after_loss"], s.retrans_after_loss as u64);
    assert_eq!(c["spurious_lost"], s.spurious_lost as u64);
    assert_eq!(c["stream_resent_bytes"], s.stream_resent_bytes);
    assert!(
        s.stream_resent_bytes > 0,
        "a lossy upload resends stream data"
    );
}

#[test]
fn without_qlog_nothing_is_logged() {
    // The default connection has no logger: the hot path's qlog hooks are a None check.
    let pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    assert!(pipe.client.qlog.is_none() && pipe.server.qlog.is_none());
}

#[test]
fn server_trace_set_before_the_first_packet_has_the_group_id() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    let (client_log, server_log) = (SharedBuf::default(), SharedBuf::default());
    let now = pipe.now;
    pipe.client.set_qlog_at(
        Box::new(client_log.clone()),
        "client".into(),
        "test".into(),
        now,
    );
    pipe.server.set_qlog_at(
        Box::new(server_log.clone()),
        "server".into(),
        "test".into(),
        now,
    );
    pipe.handshake().unwrap();

    let odcid = hex(&pipe.client.odcid);
    assert_eq!(odcid.len(), 32);
    let (client, server) = (records(&client_log), records(&server_log));
    assert_eq!(client[0]["trace"]["common_fields"]["group_id"], odcid);
    assert_eq!(server[0]["trace"]["common_fields"]["group_id"], odcid);
    // The server's trace still covers the client's first Initial.
    let first_received = server
        .iter()
        .find(|r| r["name"] == "transport:packet_received")
        .expect("a packet_received event");
    assert_eq!(first_received["data"]["header"]["packet_type"], "initial");
    assert_eq!(first_received["data"]["header"]["packet_number"], 0);
}

#[test]
fn the_path_mtu_search_is_logged_as_mtu_updated() {
    let mut client = client_config();
    let mut server = server_config();
    for c in [&mut client, &mut server] {
        c.set_max_send_udp_payload_size(1452);
    }
    let link = LinkConfig {
        mtu: crate::testing::PathMtu::fixed(1400),
        ..LinkConfig::default()
    };
    let mut pipe = Pipe::with_links(&mut client, &mut server, link.clone(), link, 3).unwrap();
    let log = SharedBuf::default();
    pipe.server
        .set_qlog(Box::new(log.clone()), "server".into(), "test".into());
    pipe.handshake().unwrap();
    pipe.run_until(Duration::from_secs(10), |p| {
        p.server.sender().pmtud().is_search_complete()
    })
    .unwrap();
    let updates: Vec<_> = records(&log)
        .into_iter()
        .filter(|r| r["name"] == "connectivity:mtu_updated")
        .collect();
    assert!(!updates.is_empty());
    // Each event continues from the previous one and the last is the size in use, flagged done.
    let mut old = 1200;
    for u in &updates {
        assert_eq!(u["data"]["old"], old, "{updates:?}");
        old = u["data"]["new"].as_u64().unwrap();
    }
    let last = &updates.last().unwrap()["data"];
    assert_eq!(last["new"], pipe.server.max_send_udp_payload_size() as u64);
    assert_eq!(last["done"], true);
    assert!(old <= 1400 - 28 && old > 1200, "{old}");
}

/// The event names of a client trace written at `level` during a short lossy transfer.
fn event_names(level: Option<crate::QlogLevel>) -> HashSet<String> {
    let link = LinkConfig {
        delay: Duration::from_millis(10),
        loss: 0.05,
        ..LinkConfig::default()
    };
    let mut pipe = Pipe::with_links(
        &mut client_config(),
        &mut server_config(),
        link.clone(),
        link,
        11,
    )
    .unwrap();
    let buf = SharedBuf::default();
    let (title, desc) = ("t".to_string(), "d".to_string());
    match level {
        Some(level) => pipe
            .client
            .set_qlog_with_level(Box::new(buf.clone()), title, desc, level),
        None => pipe.client.set_qlog(Box::new(buf.clone()), title, desc),
    }
    pipe.handshake().unwrap();
    pipe.client.stream_send(0, &[0; 200_000], true).unwrap();
    let _ = pipe.run_for(Duration::from_secs(3));
    records(&buf)
        .iter()
        .filter_map(|r| r.get("name").and_then(|n| n.as_str()).map(str::to_owned))
        .collect()
}

#[test]
fn qlog_level_keeps_only_events_that_important_enough() {
    let all = event_names(None);
    let core = event_names(Some(crate::QlogLevel::Core));
    let base = event_names(Some(crate::QlogLevel::Base));
    let extra = event_names(Some(crate::QlogLevel::Extra));
    assert_eq!(extra, all, "Extra is everything, as set_qlog writes");
    assert!(core.contains("transport:packet_sent") && core.contains("transport:packet_received"));
    assert!(core.is_subset(&base) && base.is_subset(&extra));
    assert!(
        core.len() < base.len() && base.len() < extra.len(),
        "{core:?} {base:?} {extra:?}"
    );
    assert!(!core.contains("recovery:loss_timer_updated"));
}
