use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::*;
use crate::frame::{AckRanges, EcnCounts, Frame};
use crate::packet::ConnectionId;
use crate::ranges::RangeSet;
use crate::testing::virtual_epoch;
use crate::transport_params::PreferredAddress;

/// A writer whose bytes the test can read while the logger still owns it.
#[derive(Clone, Default)]
struct SharedBuf {
    data: Arc<Mutex<Vec<u8>>>,
    flushes: Arc<Mutex<usize>>,
}

impl SharedBuf {
    fn bytes(&self) -> Vec<u8> {
        self.data.lock().unwrap().clone()
    }

    fn flushes(&self) -> usize {
        *self.flushes.lock().unwrap()
    }
}

impl io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.data.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        *self.flushes.lock().unwrap() += 1;
        Ok(())
    }
}

/// A writer that accepts `budget` bytes and then fails every write.
struct FailingWriter {
    budget: usize,
    writes_after_failure: Arc<Mutex<usize>>,
}

impl io::Write for FailingWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            *self.writes_after_failure.lock().unwrap() += 1;
            return Err(io::Error::other("disk full"));
        }
        let n = b.len().min(self.budget);
        self.budget -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

const ODCID: [u8; 8] = [0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03];

fn logger(vantage: Vantage, start: Instant) -> (QlogLogger, SharedBuf) {
    let buf = SharedBuf::default();
    let q = QlogLogger::new(
        Box::new(buf.clone()),
        "test title".to_string(),
        "test description".to_string(),
        vantage,
        &ODCID,
        1_700_000_000_123.0,
        start,
    );
    (q, buf)
}

/// Splits a JSON text sequence into its records, checking the framing on the way: each record
/// starts with RS and ends with LF (RFC 7464 §2).
fn records(bytes: &[u8]) -> Vec<Value> {
    assert_eq!(bytes.first(), Some(&0x1e), "the stream starts with RS");
    bytes[1..]
        .split(|&b| b == 0x1e)
        .map(|r| {
            assert_eq!(r.last(), Some(&b'\n'), "every record ends with LF");
            serde_json::from_slice(r).expect("every record is one JSON text")
        })
        .collect()
}

fn events(buf: &SharedBuf) -> Vec<Value> {
    let mut r = records(&buf.bytes());
    r.remove(0);
    r
}

fn names(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["name"].as_str().unwrap()).collect()
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn header_record() {
    let start = virtual_epoch();
    let (_q, buf) = logger(Vantage::Client, start);
    let recs = records(&buf.bytes());
    assert_eq!(recs.len(), 1);
    let h = &recs[0];
    assert_eq!(h["qlog_version"], "0.3");
    assert_eq!(h["qlog_format"], "JSON-SEQ");
    assert_eq!(h["title"], "test title");
    assert_eq!(h["description"], "test description");
    let t = &h["trace"];
    assert_eq!(t["vantage_point"]["type"], "client");
    let cf = &t["common_fields"];
    assert_eq!(cf["group_id"], "deadbeef00010203");
    assert_eq!(cf["time_format"], "relative");
    assert_eq!(cf["reference_time"].as_f64(), Some(1_700_000_000_123.0));
    assert_eq!(cf["protocol_type"], serde_json::json!(["QUIC"]));
    assert!(h.get("events").is_none() && t.get("events").is_none());

    let (_q, buf) = logger(Vantage::Server, start);
    assert_eq!(
        records(&buf.bytes())[0]["trace"]["vantage_point"]["type"],
        "server"
    );
}

fn one_of_each<'a>(acked: &'a RangeSet) -> Vec<Frame<'a>> {
    vec![
        Frame::Padding { len: 17 },
        Frame::Ping,
        Frame::ACK {
            ack_delay: 250,
            ranges: AckRanges::Set(acked),
            ecn_counts: Some(EcnCounts {
                ect0: 4,
                ect1: 5,
                ecn_ce: 6,
            }),
        },
        Frame::ResetStream {
            stream_id: 4,
            error_code: 7,
            final_size: 1000,
        },
        Frame::StopSending {
            stream_id: 8,
            error_code: 9,
        },
        Frame::Crypto {
            offset: 100,
            data: &[1, 2, 3],
        },
        Frame::NewToken {
            token: &[0xaa, 0xbb],
        },
        Frame::Stream {
            stream_id: 12,
            offset: 5000,
            data: &[0; 40],
            fin: true,
        },
        Frame::MaxData { max: 1 << 20 },
        Frame::MaxStreamData {
            stream_id: 12,
            max: 1 << 16,
        },
        Frame::MaxStreamsBidi { max: 100 },
        Frame::MaxStreamsUni { max: 50 },
        Frame::DataBlocked { limit: 4096 },
        Frame::StreamDataBlocked {
            stream_id: 16,
            limit: 2048,
        },
        Frame::StreamsBlockedBidi { limit: 10 },
        Frame::StreamsBlockedUni { limit: 11 },
        Frame::NewConnectionId {
            seq_num: 3,
            retire_prior_to: 1,
            conn_id: &[0x11, 0x22, 0x33, 0x44],
            reset_token: [0x55; 16],
        },
        Frame::RetireConnectionId { seq_num: 2 },
        Frame::PathChallenge { data: [1; 8] },
        Frame::PathResponse { data: [2; 8] },
        Frame::ConnectionClose {
            error_code: 0x0a,
            frame_type: 0x08,
            reason: b"bad \xff stream",
        },
        Frame::ApplicationClose {
            error_code: 0x100,
            reason: b"bye",
        },
        Frame::HandshakeDone,
        Frame::Datagram { data: &[0; 9] },
        Frame::AckFrequency {
            seq_num: 1,
            ack_eliciting_threshold: 9,
            request_max_ack_delay: 2500,
            reordering_threshold: 3,
        },
        Frame::ImmediateAck,
    ]
}

/// The `frame_type` each variant must be logged as. The match is exhaustive, so a new `Frame`
/// variant does not compile until it is covered here and in `one_of_each`.
fn expected_frame_type(f: &Frame) -> &'static str {
    match f {
        Frame::Padding { .. } => "padding",
        Frame::Ping => "ping",
        Frame::ACK { .. } => "ack",
        Frame::ResetStream { .. } => "reset_stream",
        Frame::StopSending { .. } => "stop_sending",
        Frame::Crypto { .. } => "crypto",
        Frame::NewToken { .. } => "new_token",
        Frame::Stream { .. } => "stream",
        Frame::MaxData { .. } => "max_data",
        Frame::MaxStreamData { .. } => "max_stream_data",
        Frame::MaxStreamsBidi { .. } | Frame::MaxStreamsUni { .. } => "max_streams",
        Frame::DataBlocked { .. } => "data_blocked",
        Frame::StreamDataBlocked { .. } => "stream_data_blocked",
        Frame::StreamsBlockedBidi { .. } | Frame::StreamsBlockedUni { .. } => "streams_blocked",
        Frame::NewConnectionId { .. } => "new_connection_id",
        Frame::RetireConnectionId { .. } => "retire_connection_id",
        Frame::PathChallenge { .. } => "path_challenge",
        Frame::PathResponse { .. } => "path_response",
        Frame::ConnectionClose { .. } | Frame::ApplicationClose { .. } => "connection_close",
        Frame::HandshakeDone => "handshake_done",
        Frame::Datagram { .. } => "datagram",
        // Newer than qlog 0.16's schema: logged as unknown frames with their wire form.
        Frame::AckFrequency { .. } | Frame::ImmediateAck => "unknown",
    }
}

#[test]
fn every_frame_variant_converts() {
    let mut acked = RangeSet::new(8);
    acked.insert(0..4);
    acked.insert(6..10);
    let frames = one_of_each(&acked);
    assert_eq!(frames.len(), 26);
    let json: Vec<Value> = frames
        .iter()
        .map(|f| serde_json::to_value(to_qlog_frame(f, 3)).unwrap())
        .collect();
    for (f, j) in frames.iter().zip(&json) {
        assert_eq!(j["frame_type"], expected_frame_type(f), "{f:?}");
    }

    let ack = &json[2];
    assert_eq!(ack["acked_ranges"], serde_json::json!([[0, 3], [6, 9]]));
    // 250 << 3 = 2000 microseconds.
    assert_eq!(ack["ack_delay"].as_f64(), Some(2.0));
    assert_eq!(
        (ack["ect0"].as_u64(), ack["ect1"].as_u64()),
        (Some(4), Some(5))
    );
    assert_eq!(ack["ce"], 6);
    let want = [
        (
            0,
            serde_json::json!({"frame_type": "padding", "payload_length": 17}),
        ),
        (1, serde_json::json!({"frame_type": "ping"})),
        (
            3,
            serde_json::json!({"frame_type": "reset_stream", "stream_id": 4, "error_code": 7,
                               "final_size": 1000}),
        ),
        (
            4,
            serde_json::json!({"frame_type": "stop_sending", "stream_id": 8, "error_code": 9}),
        ),
        (
            5,
            serde_json::json!({"frame_type": "crypto", "offset": 100, "length": 3}),
        ),
        (
            6,
            serde_json::json!({"frame_type": "new_token", "token": {"type": "resumption",
                               "raw": {"length": 2, "data": "aabb"}}}),
        ),
        (
            7,
            serde_json::json!({"frame_type": "stream", "stream_id": 12, "offset": 5000,
                               "length": 40, "fin": true}),
        ),
        (
            8,
            serde_json::json!({"frame_type": "max_data", "maximum": 1 << 20}),
        ),
        (
            9,
            serde_json::json!({"frame_type": "max_stream_data", "stream_id": 12,
                               "maximum": 1 << 16}),
        ),
        (
            10,
            serde_json::json!({"frame_type": "max_streams", "stream_type": "bidirectional",
                               "maximum": 100}),
        ),
        (
            11,
            serde_json::json!({"frame_type": "max_streams", "stream_type": "unidirectional",
                               "maximum": 50}),
        ),
        (
            12,
            serde_json::json!({"frame_type": "data_blocked", "limit": 4096}),
        ),
        (
            13,
            serde_json::json!({"frame_type": "stream_data_blocked", "stream_id": 16,
                               "limit": 2048}),
        ),
        (
            14,
            serde_json::json!({"frame_type": "streams_blocked", "stream_type": "bidirectional",
                               "limit": 10}),
        ),
        (
            15,
            serde_json::json!({"frame_type": "streams_blocked",
                               "stream_type": "unidirectional", "limit": 11}),
        ),
        (
            16,
            serde_json::json!({"frame_type": "new_connection_id", "sequence_number": 3,
                               "retire_prior_to": 1, "connection_id_length": 4,
                               "connection_id": "11223344",
                               "stateless_reset_token": "55".repeat(16)}),
        ),
        (
            17,
            serde_json::json!({"frame_type": "retire_connection_id", "sequence_number": 2}),
        ),
        (
            18,
            serde_json::json!({"frame_type": "path_challenge", "data": "01".repeat(8)}),
        ),
        (
            19,
            serde_json::json!({"frame_type": "path_response", "data": "02".repeat(8)}),
        ),
        (
            20,
            serde_json::json!({"frame_type": "connection_close", "error_space": "transport_error",
                               "error_code": 10, "reason": "bad \u{fffd} stream",
                               "trigger_frame_type": 8}),
        ),
        (
            21,
            serde_json::json!({"frame_type": "connection_close",
                               "error_space": "application_error", "error_code": 256,
                               "reason": "bye"}),
        ),
        (22, serde_json::json!({"frame_type": "handshake_done"})),
        (
            23,
            serde_json::json!({"frame_type": "datagram", "length": 9}),
        ),
        (
            24,
            // Type 0xaf as a two-byte varint, then 1, 9, 2500 (two bytes) and 3.
            serde_json::json!({"frame_type": "unknown", "raw_frame_type": 0xaf,
                               "frame_type_value": 0xaf,
                               "raw": {"length": 7, "data": "40af010949c403"}}),
        ),
        (
            25,
            serde_json::json!({"frame_type": "unknown", "raw_frame_type": 0x1f,
                               "frame_type_value": 0x1f, "raw": {"length": 1, "data": "1f"}}),
        ),
    ];
    for (i, w) in want {
        assert_eq!(json[i], w, "frame {i}: {:?}", frames[i]);
    }
}

#[test]
fn wire_ack_ranges_and_peer_exponent() {
    // An ACK as received: encode, then decode so the ranges are the in-buffer form.
    let mut set = RangeSet::new(8);
    set.insert(2..3);
    set.insert(5..8);
    set.insert(10..20);
    let ack = Frame::ACK {
        ack_delay: 100,
        ranges: AckRanges::Set(&set),
        ecn_counts: None,
    };
    let mut wire = [0u8; 64];
    let n = ack
        .to_bytes(&mut octets::OctetsMut::with_slice(&mut wire))
        .unwrap();
    let decoded =
        Frame::from_bytes(&mut octets::Octets::with_slice(&wire[..n]), Type::Short).unwrap();
    assert!(matches!(
        decoded,
        Frame::ACK {
            ranges: AckRanges::Wire(_),
            ..
        }
    ));

    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Client, start);
    let peer = TransportParams {
        ack_delay_exponent: 5,
        ..Default::default()
    };
    q.parameters_set(start, Owner::Remote, &peer);
    q.packet_received(start + ms(1), Type::Short, 9, 40, [&decoded]);
    let ev = events(&buf);
    let f = &ev[1]["data"]["frames"][0];
    assert_eq!(
        f["acked_ranges"],
        serde_json::json!([[2, 2], [5, 7], [10, 19]])
    );
    // 100 << 5 = 3200 microseconds.
    assert_eq!(
        f["ack_delay"].as_f64().map(|d| (d * 1000.0).round()),
        Some(3200.0)
    );
    assert!(f.get("ect0").is_none());
}

#[test]
fn event_sequence() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Client, start);
    let mut acked = RangeSet::new(8);
    acked.insert(0..4);
    acked.insert(5..10);

    q.connection_state_updated(start, ConnectionState::Attempted);
    q.parameters_set(start, Owner::Local, &TransportParams::default());
    let stream = Frame::Stream {
        stream_id: 4,
        offset: 1200,
        data: &[7; 300],
        fin: false,
    };
    let ack = Frame::ACK {
        ack_delay: 0,
        ranges: AckRanges::Set(&acked),
        ecn_counts: None,
    };
    q.packet_sent(start + ms(1), Type::Short, 42, 1252, [&ack, &stream]);
    q.packet_received(start + ms(30), Type::Handshake, 0, 600, [&Frame::Ping]);
    let m = Metrics {
        cwnd: 12_000,
        bytes_in_flight: 1252,
        smoothed_rtt: ms(30),
        latest_rtt: ms(30),
        min_rtt: ms(30),
        rtt_variance: ms(15),
        ssthresh: None,
        pacing_rate: None,
        bandwidth_estimate: None,
        cc_min_rtt: None,
    };
    q.metrics_updated(start + ms(30), &m);
    q.congestion_state_updated(start + ms(30), "slow_start", None);
    q.congestion_state_updated(start + ms(31), "slow_start", None);
    // An earlier `now` than the last event's must not make time go backwards.
    q.packet_lost(start + ms(20), Type::Short, 41, LossTrigger::TimeThreshold);
    q.loss_timer_updated(
        start + ms(40),
        LossTimer::Pto,
        Some(Epoch::Application),
        TimerEvent::Set(ms(90)),
    );
    q.packet_dropped(start + ms(41), None, 77, DropReason::HeaderParseError);
    q.connection_state_updated(start + ms(42), ConnectionState::HandshakeConfirmed);
    q.connection_state_updated(start + ms(43), ConnectionState::HandshakeConfirmed);

    let ev = events(&buf);
    assert_eq!(
        names(&ev),
        [
            "connectivity:connection_state_updated",
            "transport:parameters_set",
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:metrics_updated",
            "recovery:congestion_state_updated",
            "recovery:packet_lost",
            "recovery:loss_timer_updated",
            "transport:packet_dropped",
            "connectivity:connection_state_updated",
        ]
    );
    let mut last = 0.0;
    for e in &ev {
        let t = e["time"].as_f64().expect("every event has a time");
        assert!(t >= last, "time went backwards: {t} after {last}");
        last = t;
        assert!(e["data"].is_object(), "every event has data: {e}");
    }
    assert_eq!(ev[2]["time"].as_f64(), Some(1.0));
    assert_eq!(
        ev[6]["time"].as_f64(),
        Some(30.0),
        "clamped to the previous event's time"
    );

    let sent = &ev[2]["data"];
    assert_eq!(sent["header"]["packet_type"], "1RTT");
    assert_eq!(sent["header"]["packet_number"], 42);
    assert_eq!(sent["raw"]["length"], 1252);
    assert_eq!(sent["frames"][0]["frame_type"], "ack");
    assert_eq!(
        sent["frames"][0]["acked_ranges"],
        serde_json::json!([[0, 3], [5, 9]])
    );
    assert_eq!(sent["frames"][0]["ack_delay"].as_f64(), Some(0.0));
    let s = &sent["frames"][1];
    assert_eq!(s["frame_type"], "stream");
    assert_eq!(
        (s["stream_id"].as_u64(), s["offset"].as_u64()),
        (Some(4), Some(1200))
    );
    assert_eq!(
        (s["length"].as_u64(), s["fin"].as_bool()),
        (Some(300), Some(false))
    );

    let recv = &ev[3]["data"];
    assert_eq!(recv["header"]["packet_type"], "handshake");
    assert_eq!(recv["header"]["packet_number"], 0);
    assert_eq!(recv["raw"]["length"], 600);
    assert_eq!(recv["frames"], serde_json::json!([{"frame_type": "ping"}]));

    let metrics = &ev[4]["data"];
    assert_eq!(metrics["congestion_window"], 12_000);
    assert_eq!(metrics["smoothed_rtt"].as_f64(), Some(30.0));
    assert_eq!(metrics["rtt_variance"].as_f64(), Some(15.0));
    assert!(metrics.get("ssthresh").is_none() && metrics.get("pacing_rate").is_none());

    assert_eq!(ev[5]["data"], serde_json::json!({"new": "slow_start"}));
    assert_eq!(
        ev[6]["data"],
        serde_json::json!({"header": {"packet_type": "1RTT", "packet_number": 41},
                           "trigger": "time_threshold"})
    );
    assert_eq!(
        ev[7]["data"],
        serde_json::json!({"timer_type": "pto", "packet_number_space": "application_data",
                           "event_type": "set", "delta": 90.0})
    );
    assert_eq!(
        ev[8]["data"],
        serde_json::json!({"raw": {"length": 77}, "details": "header_parse_error",
                           "trigger": "invalid"})
    );
    assert_eq!(ev[0]["data"], serde_json::json!({"new": "attempted"}));
    assert_eq!(
        ev[9]["data"],
        serde_json::json!({"old": "attempted", "new": "handshake_confirmed"})
    );
}

#[test]
fn metrics_carry_only_changes() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Server, start);
    let mut m = Metrics {
        cwnd: 14_720,
        bytes_in_flight: 0,
        smoothed_rtt: ms(333),
        latest_rtt: Duration::ZERO,
        min_rtt: Duration::ZERO,
        rtt_variance: Duration::from_micros(166_500),
        ssthresh: None,
        pacing_rate: Some(1000),
        bandwidth_estimate: None,
        cc_min_rtt: None,
    };
    q.metrics_updated(start, &m);
    q.metrics_updated(start + ms(1), &m);
    m.cwnd = 16_000;
    m.bytes_in_flight = 1200;
    q.metrics_updated(start + ms(2), &m);
    m.ssthresh = Some(8000);
    m.latest_rtt = ms(25);
    q.metrics_updated(start + ms(3), &m);
    m.pacing_rate = Some(2000);
    q.metrics_updated(start + ms(4), &m);
    q.metrics_updated(start + ms(5), &m);

    let ev = events(&buf);
    assert_eq!(ev.len(), 4, "unchanged snapshots write nothing: {ev:?}");
    let first = ev[0]["data"].as_object().unwrap();
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "bytes_in_flight",
            "congestion_window",
            "latest_rtt",
            "min_rtt",
            "pacing_rate",
            "rtt_variance",
            "smoothed_rtt"
        ]
    );
    // Bytes per second in, bits per second out.
    assert_eq!(first["pacing_rate"], 8000);
    assert_eq!(first["rtt_variance"].as_f64(), Some(166.5));
    assert_eq!(
        ev[1]["data"],
        serde_json::json!({"congestion_window": 16_000,
                                                  "bytes_in_flight": 1200})
    );
    assert_eq!(
        ev[2]["data"],
        serde_json::json!({"latest_rtt": 25.0, "ssthresh": 8000})
    );
    assert_eq!(ev[3]["data"], serde_json::json!({"pacing_rate": 16_000}));
}

#[test]
fn model_estimates_are_custom_metrics_fields() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Server, start);
    let mut m = Metrics {
        cwnd: 14_720,
        bandwidth_estimate: Some(625_000),
        cc_min_rtt: Some(ms(60)),
        ..Metrics::default()
    };
    q.metrics_updated(start, &m);
    m.bandwidth_estimate = Some(600_000);
    q.metrics_updated(start + ms(1), &m);
    q.metrics_updated(start + ms(2), &m);
    let ev = events(&buf);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(
        ev[0]["data"]["bandwidth_estimate"], 5_000_000,
        "bits per second"
    );
    assert_eq!(ev[0]["data"]["cc_min_rtt"].as_f64(), Some(60.0));
    assert_eq!(
        ev[1]["data"],
        serde_json::json!({"bandwidth_estimate": 4_800_000})
    );
}

#[test]
fn congestion_state_changes_only() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Server, start);
    q.congestion_state_updated(start, "slow_start", None);
    q.congestion_state_updated(start, "slow_start", None);
    q.congestion_state_updated(start + ms(5), "recovery", None);
    q.congestion_state_updated(
        start + ms(6),
        "congestion_avoidance",
        Some(CongestionTrigger::PersistentCongestion),
    );
    let ev = events(&buf);
    let data: Vec<&Value> = ev.iter().map(|e| &e["data"]).collect();
    assert_eq!(
        data,
        [
            &serde_json::json!({"new": "slow_start"}),
            &serde_json::json!({"old": "slow_start", "new": "recovery"}),
            &serde_json::json!({"old": "recovery", "new": "congestion_avoidance",
                                "trigger": "persistent_congestion"}),
        ]
    );
}

#[test]
fn frame_log_builds_sent_and_received_packets() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Client, start);
    q.parameters_set(
        start,
        Owner::Local,
        &TransportParams {
            ack_delay_exponent: 2,
            ..Default::default()
        },
    );
    let mut acked = RangeSet::new(8);
    acked.insert(3..5);

    let log = q.sent_frames();
    assert_eq!(
        log.ack_delay_exponent(),
        2,
        "learned from the local parameters"
    );
    log.push_ack(&acked, Duration::from_micros(1500), None);
    log.push_stream(0, 10, 20, true);
    log.push_crypto(0, 300);
    log.push_frame(&Frame::MaxData { max: 99 });
    log.push_frame(&Frame::ACK {
        ack_delay: 10,
        ranges: AckRanges::Set(&acked),
        ecn_counts: None,
    });
    log.push_datagram(33);
    log.push_ping();
    log.push_padding(900);
    assert_eq!(log.len(), 8);
    q.packet_sent_from_log(start + ms(1), Type::Initial, 0, 1200);
    assert!(
        q.sent_frames().is_empty(),
        "logging a packet clears its frame log"
    );

    q.sent_frames().push_stream(4, 0, 5, false);
    q.packet_sent_from_log(start + ms(2), Type::Short, 1, 50);

    q.received_frames().push_frame(&Frame::HandshakeDone);
    q.packet_received_from_log(start + ms(3), Type::Short, 7, 60);
    assert!(q.received_frames().is_empty());

    let ev = events(&buf);
    assert_eq!(ev.len(), 4);
    let f = &ev[1]["data"]["frames"];
    let types: Vec<&str> = f
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["frame_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["ack", "stream", "crypto", "max_data", "ack", "datagram", "ping", "padding"]
    );
    assert_eq!(f[0]["acked_ranges"], serde_json::json!([[3, 4]]));
    assert_eq!(f[0]["ack_delay"].as_f64(), Some(1.5));
    // 10 << 2 = 40 microseconds.
    assert_eq!(
        f[4]["ack_delay"].as_f64().map(|d| (d * 1000.0).round()),
        Some(40.0)
    );
    assert_eq!(
        f[1],
        serde_json::json!({"frame_type": "stream", "stream_id": 0, "offset": 10,
                                        "length": 20, "fin": true})
    );
    assert_eq!(
        f[2],
        serde_json::json!({"frame_type": "crypto", "offset": 0, "length": 300})
    );
    assert_eq!(ev[1]["data"]["header"]["packet_type"], "initial");
    assert_eq!(ev[1]["data"]["raw"]["length"], 1200);
    // The second packet holds only its own frame.
    assert_eq!(
        ev[2]["data"]["frames"],
        serde_json::json!([{"frame_type": "stream", "stream_id": 4, "offset": 0,
                            "length": 5, "fin": false}])
    );
    assert_eq!(ev[3]["name"], "transport:packet_received");
    assert_eq!(
        ev[3]["data"]["frames"],
        serde_json::json!([{"frame_type": "handshake_done"}])
    );
}

#[test]
fn frame_log_is_bounded() {
    let mut log = FrameLog::default();
    for _ in 0..MAX_LOGGED_FRAMES + 76 {
        log.push_ping();
    }
    assert_eq!(log.len(), MAX_LOGGED_FRAMES);
    assert_eq!(log.omitted(), 76);
    log.clear();
    assert!(log.is_empty());
    assert_eq!(log.omitted(), 0);
}

#[test]
fn parameters_set_fields() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Server, start);
    let p = TransportParams {
        original_destination_connection_id: Some(ConnectionId::from_vec(ODCID.to_vec())),
        initial_source_connection_id: Some(ConnectionId::from_vec(vec![1, 2])),
        stateless_reset_token: Some(0x0102),
        max_idle_timeout: 30_000,
        initial_max_data: 1 << 20,
        initial_max_stream_data_bidi_local: 1000,
        initial_max_streams_bidi: 100,
        disable_active_migration: true,
        active_conn_id_limit: 4,
        preferred_address: Some(PreferredAddress {
            ipv4: Some(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 4433)),
            ipv6: None,
            connection_id: ConnectionId::from_vec(vec![9; 4]),
            stateless_reset_token: [7; 16],
        }),
        max_datagram_frame_size: Some(1200),
        grease_quic_bit: true,
        ..Default::default()
    };
    q.parameters_set(start, Owner::Local, &p);
    let ev = events(&buf);
    let d = &ev[0]["data"];
    assert_eq!(ev[0]["name"], "transport:parameters_set");
    assert_eq!(d["owner"], "local");
    assert_eq!(d["original_destination_connection_id"], "deadbeef00010203");
    assert_eq!(d["initial_source_connection_id"], "0102");
    assert_eq!(
        d["stateless_reset_token"],
        format!("{}0102", "00".repeat(14))
    );
    assert_eq!(d["max_idle_timeout"], 30_000);
    assert_eq!(d["max_udp_payload_size"], 65527);
    assert_eq!(d["ack_delay_exponent"], 3);
    assert_eq!(d["max_ack_delay"], 25);
    assert_eq!(d["active_connection_id_limit"], 4);
    assert_eq!(d["initial_max_data"], 1 << 20);
    assert_eq!(d["initial_max_stream_data_bidi_local"], 1000);
    assert_eq!(d["initial_max_streams_bidi"], 100);
    assert_eq!(d["disable_active_migration"], true);
    assert_eq!(d["preferred_address"]["ip_v4"], "192.0.2.1");
    assert_eq!(d["preferred_address"]["port_v4"], 4433);
    assert_eq!(d["preferred_address"]["connection_id"], "09090909");
    // 1200 as a two-byte varint is 0x44b0.
    assert_eq!(
        d["unknown_parameters"],
        serde_json::json!([{"id": 0x20, "value": "44b0"}, {"id": 0x2ab2, "value": ""}])
    );
}

#[test]
fn retry_and_version_negotiation_have_no_packet_number() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Client, start);
    q.packet_received(start, Type::Retry, 0, 80, std::iter::empty());
    q.packet_received(start, Type::VersionNegotiation, 0, 50, std::iter::empty());
    q.packet_received(start, Type::ZeroRTT, 3, 50, std::iter::empty());
    let ev = events(&buf);
    assert_eq!(
        ev[0]["data"]["header"],
        serde_json::json!({"packet_type": "retry"})
    );
    assert_eq!(
        ev[1]["data"]["header"],
        serde_json::json!({"packet_type": "version_negotiation"})
    );
    assert_eq!(
        ev[2]["data"]["header"],
        serde_json::json!({"packet_type": "0RTT", "packet_number": 3})
    );
}

#[test]
fn io_error_disables_the_logger() {
    let start = virtual_epoch();
    let after = Arc::new(Mutex::new(0));
    // Enough for the header, not for the first event.
    let w = FailingWriter {
        budget: 400,
        writes_after_failure: after.clone(),
    };
    let mut q = QlogLogger::new(
        Box::new(w),
        "t".into(),
        "d".into(),
        Vantage::Client,
        &ODCID,
        0.0,
        start,
    );
    assert!(q.is_enabled());
    let big = Frame::Stream {
        stream_id: 0,
        offset: 0,
        data: &[0; 10],
        fin: false,
    };
    let frames = [&big; 20];
    q.packet_sent(start, Type::Short, 0, 1200, frames.iter().copied());
    assert!(!q.is_enabled());
    assert_eq!(
        q.error().map(|e| e.to_string()).as_deref(),
        Some("disk full")
    );
    let failed_writes = *after.lock().unwrap();
    q.packet_sent(start, Type::Short, 1, 1200, frames.iter().copied());
    q.metrics_updated(start, &Metrics::default());
    q.sent_frames().push_ping();
    q.packet_sent_from_log(start, Type::Short, 2, 100);
    q.flush();
    assert_eq!(
        *after.lock().unwrap(),
        failed_writes,
        "nothing is written after the error"
    );
    assert!(q.sent_frames().is_empty());

    // A writer that fails at once: the header is lost, the logger is off, nothing panics.
    let w = FailingWriter {
        budget: 0,
        writes_after_failure: Arc::new(Mutex::new(0)),
    };
    let mut q = QlogLogger::new(
        Box::new(w),
        "t".into(),
        "d".into(),
        Vantage::Server,
        &[],
        0.0,
        start,
    );
    assert!(q.error().is_some());
    q.packet_lost(start, Type::Short, 1, LossTrigger::PtoExpired);
}

#[test]
fn flush_reaches_the_writer() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Client, start);
    assert_eq!(buf.flushes(), 0);
    q.flush();
    assert_eq!(buf.flushes(), 1);
    drop(q);
    assert_eq!(buf.flushes(), 2, "dropping the logger flushes");
}

/// The records are the ones qlog's own streamer writes (the writer qvis users get from quiche),
/// and qlog's own JSON-SEQ reader reads every one of them back as a typed event.
#[test]
fn same_bytes_as_qlog_streamer_and_readable_by_qlog_reader() {
    use ::qlog::events::quic::{PacketSent, QuicFrame};
    use ::qlog::events::EventImportance;
    use ::qlog::streamer::QlogStreamer;

    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Server, start);
    let stream = Frame::Stream {
        stream_id: 40,
        offset: 40,
        data: &[0; 400],
        fin: true,
    };
    q.packet_sent(start + ms(2), Type::Handshake, 0, 1251, [&stream]);
    q.packet_lost(start + ms(3), Type::Handshake, 0, LossTrigger::PtoExpired);
    let ours = buf.bytes();

    // The same header and events through qlog's QlogStreamer.
    let theirs = SharedBuf::default();
    let header = &records(&ours)[0];
    let trace: ::qlog::TraceSeq = serde_json::from_value(header["trace"].clone()).unwrap();
    let mut s = QlogStreamer::new(
        "0.3".to_string(),
        Some("test title".to_string()),
        Some("test description".to_string()),
        None,
        start,
        trace,
        EventImportance::Extra,
        Box::new(theirs.clone()),
    );
    s.start_log().unwrap();
    let sent = EventData::PacketSent(PacketSent {
        header: PacketHeader {
            packet_type: q::PacketType::Handshake,
            packet_number: Some(0),
            ..Default::default()
        },
        raw: Some(RawInfo {
            length: Some(1251),
            payload_length: None,
            data: None,
        }),
        frames: Some(
            vec![QuicFrame::Stream {
                stream_id: 40,
                offset: 40,
                length: 400,
                fin: Some(true),
                raw: None,
            }]
            .into(),
        ),
        ..Default::default()
    });
    s.add_event(Event::with_time(2.0, sent)).unwrap();
    let lost = EventData::PacketLost(PacketLost {
        header: Some(PacketHeader {
            packet_type: q::PacketType::Handshake,
            packet_number: Some(0),
            ..Default::default()
        }),
        frames: None,
        trigger: Some(q::PacketLostTrigger::PtoExpired),
    });
    s.add_event(Event::with_time(3.0, lost)).unwrap();
    s.finish_log().unwrap();
    assert_eq!(
        String::from_utf8(ours.clone()).unwrap(),
        String::from_utf8(theirs.bytes()).unwrap()
    );

    // qlog's reader: header first, then one typed event per record.
    let reader = ::qlog::reader::QlogSeqReader::new(Box::new(io::Cursor::new(ours))).unwrap();
    assert_eq!(reader.qlog.qlog_version, "0.3");
    assert_eq!(reader.qlog.qlog_format, "JSON-SEQ");
    let read: Vec<_> = reader.collect();
    assert_eq!(read.len(), 2);
    assert!(read
        .iter()
        .all(|e| matches!(e, ::qlog::reader::Event::Qlog(_))));
}

/// Every kind of event the logger writes parses back through qlog's reader as a typed event,
/// so none of them is malformed for tools built on the same schema.
#[test]
fn every_event_kind_is_readable_by_qlog_reader() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Client, start);
    let mut acked = RangeSet::new(8);
    acked.insert(0..4);
    let frames = one_of_each(&acked);
    q.parameters_set(start, Owner::Remote, &TransportParams::default());
    q.packet_sent(start, Type::Short, 1, 1200, frames.iter());
    q.packet_received(start, Type::Short, 1, 1200, frames.iter());
    q.packet_dropped(start, Some(Type::Initial), 1200, DropReason::DosPrevention);
    q.metrics_updated(start, &Metrics::default());
    q.congestion_state_updated(start, "slow_start", Some(CongestionTrigger::Ecn));
    q.packet_lost(start, Type::Short, 1, LossTrigger::ReorderingThreshold);
    q.loss_timer_updated(start, LossTimer::Ack, None, TimerEvent::Expired);
    q.loss_timer_updated(
        start,
        LossTimer::Pto,
        Some(Epoch::Initial),
        TimerEvent::Cancelled,
    );
    q.connection_state_updated(start, ConnectionState::Closed);
    let bytes = buf.bytes();
    let written = records(&bytes).len() - 1;
    assert_eq!(written, 10);
    let reader = ::qlog::reader::QlogSeqReader::new(Box::new(io::Cursor::new(bytes))).unwrap();
    let read: Vec<_> = reader.collect();
    assert_eq!(read.len(), written);
    assert!(read
        .iter()
        .all(|e| matches!(e, ::qlog::reader::Event::Qlog(_))));
}

#[test]
fn loss_counters_written_once_and_read_as_json() {
    let start = virtual_epoch();
    let (mut q, buf) = logger(Vantage::Server, start);
    q.loss_counters(
        start + ms(7),
        &[("lost", 3), ("retrans", 4), ("spurious_lost", 1)],
    );
    // A second close event (Closing, then Closed) must not repeat the counters.
    q.loss_counters(start + ms(9), &[("lost", 5)]);
    let ev = events(&buf);
    assert_eq!(names(&ev), ["quiche:loss_counters"]);
    assert_eq!(ev[0]["time"], serde_json::json!(7.0));
    let keys: Vec<&String> = ev[0]["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["lost", "retrans", "spurious_lost"]);
    assert_eq!(ev[0]["data"]["retrans"], serde_json::json!(4));
    let bytes = buf.bytes();
    let reader = ::qlog::reader::QlogSeqReader::new(Box::new(io::Cursor::new(bytes))).unwrap();
    let read: Vec<_> = reader.collect();
    assert_eq!(read.len(), 1);
    assert!(matches!(read[0], ::qlog::reader::Event::Json(_)));
}
