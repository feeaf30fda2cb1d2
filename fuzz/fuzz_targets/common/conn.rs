//! The connection fuzzing driver shared by `conn_server`, `conn_client` and `conn_handshake`.
//! The input is read as a program of steps. The peer of the fuzzed endpoint seals arbitrary
//! frames in well-formed, authenticated 1-RTT packets (`Connection::fuzz_seal_1rtt`, feature
//! `fuzzing`), now and then damaged on the way; the clock advances by fuzzed amounts; both sides send and handle timeouts.
//! After every step the fuzzed endpoint's invariants are checked
//! (`Connection::debug_check_invariants`).
//!
//! `conn_server` and `conn_client` start from a pair put straight into the established state
//! (`Pipe::fuzz_established`: no TLS, fixed connection IDs and 1-RTT keys), so that an input
//! costs what its steps cost rather than a TLS handshake. `conn_handshake` runs the real
//! handshake first, with the datagrams the input picks dropped, and then the same program:
//! it covers the handshake and what TLS does after it (CRYPTO frames in 1-RTT packets).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use octets::OctetsMut;
use quiche::frame::{AckRanges, Frame};
use quiche::ranges::RangeSet;
use quiche::testing::{Pipe, Verdict};
use quiche::{Connection, RecvInfo};

fn cert(name: &str) -> String {
    format!(
        "{}/../quiche/tests/certs/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Connection IDs from a counter that restarts with every input, so that a run does not
/// depend on the inputs before it (nor on the system's randomness).
struct CountingIds(AtomicU64);

impl quiche::ConnectionIdGenerator for CountingIds {
    fn generate(&self, cid: &mut [u8]) -> quiche::Result<()> {
        let n = self.0.fetch_add(1, Ordering::Relaxed);
        for (i, b) in cid.iter_mut().enumerate() {
            *b = (n >> (8 * (i % 8))) as u8 ^ i as u8;
        }
        Ok(())
    }
}

fn config(server: bool, ids: &Arc<CountingIds>) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"hq-interop"]).unwrap();
    c.set_initial_max_data(1 << 16);
    c.set_initial_max_stream_data_bidi_local(1 << 14);
    c.set_initial_max_stream_data_bidi_remote(1 << 14);
    c.set_initial_max_stream_data_uni(1 << 14);
    c.set_initial_max_streams_bidi(8);
    c.set_initial_max_streams_uni(8);
    c.set_active_connection_id_limit(4);
    c.enable_dgram(true, 16, 16);
    // ACK_FREQUENCY and IMMEDIATE_ACK reach the receiver only when offered.
    c.enable_ack_frequency(true);
    c.set_stateless_reset_key(&[if server { 0x53 } else { 0x43 }; 32]);
    c.set_cid_generator(ids.clone());
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.crt")).unwrap();
        c.load_priv_key_from_pem_file(&cert("cert.key")).unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

/// The configs of both sides, built once per process (loading the certificate and building
/// the TLS configs cost more than a whole run of a short input).
struct Configs {
    client: quiche::Config,
    server: quiche::Config,
    ids: Arc<CountingIds>,
}

thread_local! {
    static CONFIGS: RefCell<Configs> = RefCell::new({
        let ids = Arc::new(CountingIds(AtomicU64::new(0)));
        Configs {
            client: config(false, &ids),
            server: config(true, &ids),
            ids,
        }
    });
}

/// How the pair of a run starts (each target uses one of the two).
#[derive(Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub enum Start {
    /// Established without TLS (`Pipe::fuzz_established`).
    Established,
    /// A real handshake, the datagrams of the input's drop mask lost.
    Handshake,
}

/// Reads the fuzz input front to back; exhausted input reads as zeros.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A value biased to small numbers and to the edges of the varint range.
    fn varint(&mut self) -> u64 {
        let sel = self.u8();
        match sel >> 6 {
            0 => u64::from(sel & 0x3f),
            1 => u64::from(u16::from_le_bytes([self.u8(), self.u8()])),
            2 => u64::from(u32::from_le_bytes([
                self.u8(),
                self.u8(),
                self.u8(),
                self.u8(),
            ])),
            _ => match sel & 3 {
                0 => (1 << 62) - 1,
                1 => (1 << 62) - 1 - u64::from(self.u8()),
                _ => u64::from_le_bytes(std::array::from_fn(|_| self.u8())) & ((1 << 62) - 1),
            },
        }
    }

    fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = usize::from(self.u8()).min(max).min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.u8())
    }
}

/// Stream IDs a frame picks from: both initiators, both directionalities, and one anywhere.
fn stream_id(inp: &mut Input) -> u64 {
    let sel = inp.u8();
    if sel == 0xff {
        inp.varint()
    } else {
        u64::from(sel % 48)
    }
}

/// Decodes one frame from the input; ACK ranges land in `acks`.
fn frame<'a: 'c, 'b: 'c, 'c>(inp: &mut Input<'a>, acks: &'b RangeSet) -> Frame<'c> {
    match inp.u8() % 24 {
        0 => Frame::Padding {
            len: usize::from(inp.u8()) + 1,
        },
        1 => Frame::Ping,
        2 if !acks.is_empty() => Frame::ACK {
            ack_delay: inp.varint(),
            ranges: AckRanges::Set(acks),
            ecn_counts: None,
        },
        3 => Frame::ResetStream {
            stream_id: stream_id(inp),
            error_code: inp.varint(),
            final_size: inp.varint(),
        },
        4 => Frame::StopSending {
            stream_id: stream_id(inp),
            error_code: inp.varint(),
        },
        5 => Frame::Crypto {
            offset: inp.varint(),
            data: inp.bytes(255),
        },
        6 => Frame::NewToken {
            token: inp.bytes(64),
        },
        7 | 8 | 9 => {
            let stream_id = stream_id(inp);
            let offset = inp.varint();
            let data = inp.bytes(255);
            let fin = inp.u8() & 1 == 1;
            Frame::Stream {
                stream_id,
                offset,
                data,
                fin,
            }
        }
        10 => Frame::MaxData { max: inp.varint() },
        11 => Frame::MaxStreamData {
            stream_id: stream_id(inp),
            max: inp.varint(),
        },
        12 => Frame::MaxStreamsBidi {
            max: inp.varint().min(1 << 60),
        },
        13 => Frame::MaxStreamsUni {
            max: inp.varint().min(1 << 60),
        },
        14 => Frame::DataBlocked {
            limit: inp.varint(),
        },
        15 => Frame::StreamDataBlocked {
            stream_id: stream_id(inp),
            limit: inp.varint(),
        },
        16 => Frame::StreamsBlockedBidi {
            limit: inp.varint().min(1 << 60),
        },
        17 => Frame::StreamsBlockedUni {
            limit: inp.varint().min(1 << 60),
        },
        18 => {
            let seq_num = inp.varint();
            let retire_prior_to = inp.varint();
            let len = 1 + usize::from(inp.u8() % 20);
            let cid = inp.bytes(len);
            let conn_id = if cid.is_empty() { &[7u8][..] } else { cid };
            Frame::NewConnectionId {
                seq_num,
                retire_prior_to,
                conn_id,
                reset_token: inp.array(),
            }
        }
        19 => Frame::RetireConnectionId {
            seq_num: inp.varint(),
        },
        20 => Frame::PathChallenge { data: inp.array() },
        21 => Frame::PathResponse { data: inp.array() },
        22 => Frame::HandshakeDone,
        _ => Frame::Datagram {
            data: inp.bytes(64),
        },
    }
}

/// ACK ranges from the input, around the numbers the fuzzed endpoint really sent.
fn ack_ranges(inp: &mut Input, largest_sent: u64, acks: &mut RangeSet) {
    acks.clear();
    let n = inp.u8() % 4;
    for _ in 0..n {
        let hi = largest_sent.saturating_sub(u64::from(inp.u8() % 32)) + u64::from(inp.u8() < 8);
        let len = u64::from(inp.u8() % 16) + 1;
        acks.insert(hi.saturating_sub(len - 1)..hi + 1);
    }
}

fn check(pipe: &Pipe, server: bool) {
    if server {
        pipe.server.debug_check_invariants();
    } else {
        pipe.client.debug_check_invariants();
    }
}

/// Runs the program `data` against the server (`server`) or the client.
pub fn run(data: &[u8], server: bool, start: Start) {
    let mut inp = Input(data);
    let made = CONFIGS.with_borrow_mut(|c| {
        c.ids.0.store(0, Ordering::Relaxed);
        match start {
            Start::Established => Pipe::fuzz_established(&mut c.client, &mut c.server),
            Start::Handshake => Pipe::new(&mut c.client, &mut c.server),
        }
    });
    let mut pipe = made.expect("the fuzzing configs make a pair");
    if start == Start::Handshake {
        // Up to 16 handshake datagrams, each dropped when its bit is set.
        let mut mask = u16::from_le_bytes([inp.u8(), inp.u8()]);
        pipe.hook = Some(Box::new(move |_| {
            let drop = mask & 1 == 1;
            mask >>= 1;
            if drop {
                Verdict::Drop
            } else {
                Verdict::Deliver
            }
        }));
        let done = pipe.handshake();
        pipe.hook = None;
        if done.is_err() {
            return;
        }
    }
    let mut payload = vec![0u8; 1200];
    let mut sent_by_target = 0u64;
    let mut steps = 0;
    while !inp.is_empty() && steps < 64 {
        steps += 1;
        match inp.u8() % 5 {
            0 | 1 => {
                // One packet of up to 8 frames from the peer.
                let target_stats = if server {
                    pipe.server.stats()
                } else {
                    pipe.client.stats()
                };
                sent_by_target = sent_by_target.max(target_stats.sent as u64);
                let mut acks = RangeSet::new(16);
                ack_ranges(&mut inp, sent_by_target, &mut acks);
                let count = 1 + inp.u8() % 8;
                let mut b = OctetsMut::with_slice(&mut payload);
                for _ in 0..count {
                    let f = frame(&mut inp, &acks);
                    if f.wire_len() > b.cap() || f.to_bytes(&mut b).is_err() {
                        break;
                    }
                }
                let len = b.off();
                if len == 0 {
                    continue;
                }
                let now = pipe.now;
                let (peer, target): (&mut Connection, &mut Connection) = if server {
                    (&mut pipe.client, &mut pipe.server)
                } else {
                    (&mut pipe.server, &mut pipe.client)
                };
                let Ok(mut pkt) = peer.fuzz_seal_1rtt(&payload[..len], now) else {
                    return;
                };
                // Now and then the datagram is damaged on the way: a bit flipped (the packet
                // no longer authenticates, or its header reads differently), or junk after it
                // (a coalesced packet that does not parse).
                let damage = inp.u8();
                match damage {
                    0xf0..=0xf7 => {
                        let i = usize::from(inp.u8()) % pkt.len();
                        pkt[i] ^= 1 << (damage & 7);
                    }
                    0xf8..=0xff => pkt.extend_from_slice(inp.bytes(64)),
                    _ => {}
                }
                let info = if server {
                    RecvInfo {
                        from: pipe.client_addr,
                        to: pipe.server_addr,
                    }
                } else {
                    RecvInfo {
                        from: pipe.server_addr,
                        to: pipe.client_addr,
                    }
                };
                let _ = target.recv_at(&mut pkt, info, now);
            }
            2 => {
                // Time passes; timers fire.
                let ms = u64::from(u16::from_le_bytes([inp.u8(), inp.u8()]) % 4000);
                pipe.now += Duration::from_millis(ms);
                pipe.client.on_timeout_at(pipe.now);
                pipe.server.on_timeout_at(pipe.now);
            }
            3 => {
                // Both sides send and the link delivers what is due.
                let _ = pipe.flush();
                pipe.deliver();
            }
            _ => {
                // The application reads and writes on a stream of the fuzzed endpoint, and
                // now and then one side starts a key update.
                let (target, peer) = if server {
                    (&mut pipe.server, &mut pipe.client)
                } else {
                    (&mut pipe.client, &mut pipe.server)
                };
                let id = u64::from(inp.u8() % 48);
                let mut buf = [0u8; 512];
                let _ = target.stream_recv(id, &mut buf);
                let n = usize::from(inp.u8());
                let flags = inp.u8();
                let _ = target.stream_send(id, &buf[..n.min(buf.len())], flags & 1 == 1);
                match flags >> 5 {
                    6 => {
                        let _ = target.initiate_key_update();
                    }
                    7 => {
                        let _ = peer.initiate_key_update();
                    }
                    _ => {}
                }
            }
        }
        check(&pipe, server);
    }
}
