use super::*;
use crate::ranges::RangeSet;
use crate::testing::Rng;

const ALL_PKTS: [Type; 6] = [
    Type::Initial,
    Type::Handshake,
    Type::ZeroRTT,
    Type::Short,
    Type::Retry,
    Type::VersionNegotiation,
];

fn encode(f: &Frame) -> Vec<u8> {
    let mut buf = vec![0xee; f.wire_len()];
    let n = f.to_bytes(&mut OctetsMut::with_slice(&mut buf)).unwrap();
    assert_eq!(n, buf.len(), "wire_len of {f:?}");
    buf
}

fn decode(buf: &[u8], pkt: Type) -> Result<(Frame<'_>, usize)> {
    let mut b = Octets::with_slice(buf);
    let f = Frame::from_bytes(&mut b, pkt)?;
    Ok((f, b.off()))
}

fn sample_set() -> RangeSet {
    let mut s = RangeSet::new(16);
    for r in [0..3, 5..10, 100..101, 1000..2000, 70_000..70_001] {
        s.insert(r);
    }
    s
}

const DATA: &[u8] = b"some stream data";

/// One frame of each kind (several for types with flags), with Table 3's "Pkts" column.
fn samples(set: &RangeSet) -> Vec<(Frame<'_>, &'static str)> {
    let ecn = EcnCounts {
        ect0: 1,
        ect1: 1 << 20,
        ecn_ce: MAX_VARINT,
    };
    let ack = |ecn_counts| Frame::ACK {
        ack_delay: 1234,
        ranges: AckRanges::Set(set),
        ecn_counts,
    };
    let stream = |offset, data, fin| Frame::Stream {
        stream_id: 4,
        offset,
        data,
        fin,
    };
    vec![
        (Frame::Padding { len: 7 }, "IH01"),
        (Frame::Ping, "IH01"),
        (ack(None), "IH_1"),
        (ack(Some(ecn)), "IH_1"),
        (
            Frame::ResetStream {
                stream_id: 3,
                error_code: 0x1_0000,
                final_size: 1 << 40,
            },
            "__01",
        ),
        (
            Frame::StopSending {
                stream_id: 7,
                error_code: 9,
            },
            "__01",
        ),
        (
            Frame::Crypto {
                offset: 0,
                data: DATA,
            },
            "IH_1",
        ),
        (
            Frame::Crypto {
                offset: 1 << 40,
                data: &[],
            },
            "IH_1",
        ),
        (Frame::NewToken { token: b"tok" }, "___1"),
        (stream(0, DATA, false), "__01"),
        (stream(77, DATA, true), "__01"),
        (stream(MAX_VARINT, &[], true), "__01"),
        (Frame::MaxData { max: MAX_VARINT }, "__01"),
        (
            Frame::MaxStreamData {
                stream_id: 8,
                max: 100_000,
            },
            "__01",
        ),
        (
            Frame::MaxStreamsBidi {
                max: MAX_STREAM_COUNT,
            },
            "__01",
        ),
        (Frame::MaxStreamsUni { max: 3 }, "__01"),
        (Frame::DataBlocked { limit: 65 }, "__01"),
        (
            Frame::StreamDataBlocked {
                stream_id: 0,
                limit: 16_384,
            },
            "__01",
        ),
        (Frame::StreamsBlockedBidi { limit: 0 }, "__01"),
        (
            Frame::StreamsBlockedUni {
                limit: MAX_STREAM_COUNT,
            },
            "__01",
        ),
        (
            Frame::NewConnectionId {
                seq_num: 5,
                retire_prior_to: 5,
                conn_id: &[0xab; 20],
                reset_token: [7; 16],
            },
            "__01",
        ),
        (Frame::RetireConnectionId { seq_num: 1 << 30 }, "__01"),
        (Frame::PathChallenge { data: *b"12345678" }, "__01"),
        (Frame::PathResponse { data: *b"87654321" }, "___1"),
        (
            Frame::ConnectionClose {
                error_code: 0x7,
                frame_type: 0x02,
                reason: b"bad ack",
            },
            "IH01",
        ),
        (
            Frame::ApplicationClose {
                error_code: 0x100,
                reason: b"",
            },
            "__01",
        ),
        (Frame::HandshakeDone, "___1"),
        (Frame::Datagram { data: DATA }, "__01"),
        (Frame::Datagram { data: &[] }, "__01"),
        (
            Frame::AckFrequency {
                seq_num: 0,
                ack_eliciting_threshold: 9,
                request_max_ack_delay: MAX_REQUESTED_MAX_ACK_DELAY - 1,
                reordering_threshold: 3,
            },
            "___1",
        ),
        (
            Frame::AckFrequency {
                seq_num: MAX_VARINT,
                ack_eliciting_threshold: MAX_VARINT,
                request_max_ack_delay: 0,
                reordering_threshold: MAX_VARINT,
            },
            "___1",
        ),
        (Frame::ImmediateAck, "___1"),
    ]
}

fn column(pkt: Type) -> Option<char> {
    match pkt {
        Type::Initial => Some('I'),
        Type::Handshake => Some('H'),
        Type::ZeroRTT => Some('0'),
        Type::Short => Some('1'),
        Type::Retry | Type::VersionNegotiation => None,
    }
}

#[test]
fn round_trip_every_frame() {
    let set = sample_set();
    for (f, _) in samples(&set) {
        let buf = encode(&f);
        assert_eq!(buf.len(), f.wire_len());
        let (g, used) = decode(&buf, Type::Short).unwrap();
        assert_eq!(g, f);
        assert_eq!(used, buf.len(), "{f:?} not fully consumed");
        // A decoded frame (ACK in its wire form) encodes back to the same bytes.
        assert_eq!(g.wire_len(), buf.len());
        assert_eq!(encode(&g), buf);
        let ty = Octets::with_slice(&buf).get_varint().unwrap();
        assert_eq!(ty, f.ty(), "type of {f:?}");
    }
}

#[test]
fn type_codes_and_queries() {
    let set = sample_set();
    let tys: Vec<u64> = samples(&set).iter().map(|(f, _)| f.ty()).collect();
    let want = [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x06, 0x07, 0x0a, 0x0f, 0x0f, 0x10, 0x11, 0x12,
        0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x31, 0x31, 0xaf,
        0xaf, 0x1f,
    ];
    assert_eq!(tys, want);
    for (f, _) in samples(&set) {
        let ty = f.ty();
        let not_eliciting = [0x00, 0x02, 0x03, 0x1c, 0x1d].contains(&ty);
        assert_eq!(f.is_ack_eliciting(), !not_eliciting, "{f:?}");
        let probing = [0x00, 0x18, 0x1a, 0x1b].contains(&ty);
        assert_eq!(f.is_probing(), probing, "{f:?}");
    }
}

#[test]
fn table3_is_enforced_for_every_packet_type() {
    let set = sample_set();
    for (f, pkts) in samples(&set) {
        let buf = encode(&f);
        for pkt in ALL_PKTS {
            let allowed = column(pkt).is_some_and(|c| pkts.contains(c));
            assert_eq!(f.allowed_in(pkt), allowed, "{f:?} in {pkt:?}");
            match decode(&buf, pkt) {
                Ok((g, _)) => {
                    assert!(allowed, "{f:?} accepted in {pkt:?}");
                    assert_eq!(g, f);
                }
                Err(e) => {
                    assert!(!allowed, "{f:?} rejected in {pkt:?}: {e:?}");
                    assert_eq!(e, Error::ProtocolViolation);
                    assert_eq!(e.to_wire(), 0xa);
                }
            }
        }
    }
    // The 0x30 form of DATAGRAM follows the same rule as 0x31.
    for pkt in ALL_PKTS {
        let r = decode(&[0x30, 1, 2], pkt).map(|(f, _)| f);
        let want = match pkt {
            Type::ZeroRTT | Type::Short => Ok(Frame::Datagram { data: &[1, 2] }),
            _ => Err(Error::ProtocolViolation),
        };
        assert_eq!(r, want, "{pkt:?}");
    }
}

#[test]
fn padding_run_is_one_frame() {
    let buf = [0, 0, 0, 0, 1, 0];
    let frames: Vec<_> = parse_all(&buf, Type::Initial).collect();
    assert_eq!(
        frames,
        vec![
            Ok(Frame::Padding { len: 4 }),
            Ok(Frame::Ping),
            Ok(Frame::Padding { len: 1 })
        ]
    );
}

#[test]
fn stream_and_datagram_without_len_extend_to_end() {
    // STREAM with OFF and FIN but no LEN: stream 5, offset 64 (two bytes).
    let buf = [0x0d, 0x05, 0x40, 0x40, b'a', b'b', b'c'];
    let (f, used) = decode(&buf, Type::ZeroRTT).unwrap();
    assert_eq!(
        f,
        Frame::Stream {
            stream_id: 5,
            offset: 64,
            data: b"abc",
            fin: true
        }
    );
    assert_eq!(used, buf.len());
    // Bare STREAM type: no offset, no length, no FIN, empty data.
    let (f, _) = decode(&[0x08, 0x00], Type::Short).unwrap();
    assert_eq!(
        f,
        Frame::Stream {
            stream_id: 0,
            offset: 0,
            data: &[],
            fin: false
        }
    );
    let (f, used) = decode(&[0x30, 9, 8, 7], Type::Short).unwrap();
    assert_eq!(f, Frame::Datagram { data: &[9, 8, 7] });
    assert_eq!(used, 4);
    // With LEN, the next frame follows.
    let frames: Vec<_> = parse_all(&[0x31, 1, 9, 0x01], Type::Short).collect();
    assert_eq!(
        frames,
        vec![Ok(Frame::Datagram { data: &[9] }), Ok(Frame::Ping)]
    );
}

#[test]
fn ack_wire_form_follows_rfc_arithmetic() {
    // Largest 60, delay 5, 2 more ranges, first range 3 -> 57..=60;
    // gap 1, length 4 -> largest 57 - 1 - 2 = 54, smallest 50;
    // gap 0, length 0 -> largest 50 - 0 - 2 = 48, smallest 48.
    let buf = [0x02, 60, 5, 2, 3, 1, 4, 0, 0];
    let (f, used) = decode(&buf, Type::Handshake).unwrap();
    assert_eq!(used, buf.len());
    let Frame::ACK {
        ack_delay,
        ranges,
        ecn_counts,
    } = f
    else {
        panic!("not an ACK: {f:?}");
    };
    assert_eq!(ack_delay, 5);
    assert_eq!(ecn_counts, None);
    assert_eq!(
        ranges.iter().collect::<Vec<_>>(),
        vec![57..61, 50..55, 48..49]
    );
    assert_eq!(ranges.iter().size_hint(), (3, Some(3)));
    assert_eq!(
        (ranges.largest(), ranges.smallest(), ranges.len()),
        (60, 48, 3)
    );
    let mut set = RangeSet::new(8);
    set.insert(48..49);
    set.insert(50..55);
    set.insert(57..61);
    assert_eq!(ranges, AckRanges::Set(&set));
    assert_eq!(format!("{ranges:?}"), "[57..61, 50..55, 48..49]");
}

#[test]
fn ack_with_300_ranges_and_ecn() {
    let mut set = RangeSet::new(1000);
    let mut rng = Rng(42);
    let mut pn = 0u64;
    for _ in 0..300 {
        pn += 1 + rng.below(2000);
        let len = 1 + rng.below(100);
        set.insert(pn..pn + len);
        pn += len;
    }
    assert_eq!(set.len(), 300);
    for ecn_counts in [
        None,
        Some(EcnCounts {
            ect0: 500,
            ect1: 0,
            ecn_ce: 3,
        }),
    ] {
        let f = Frame::ACK {
            ack_delay: 25_000,
            ranges: AckRanges::Set(&set),
            ecn_counts,
        };
        let buf = encode(&f);
        let (g, used) = decode(&buf, Type::Short).unwrap();
        assert_eq!(used, buf.len());
        assert_eq!(g, f);
        let Frame::ACK { ranges, .. } = &g else {
            panic!("not an ACK");
        };
        assert!(matches!(ranges, AckRanges::Wire(_)));
        assert!(ranges.iter().eq(set.iter().rev()));
        assert_eq!(ranges.len(), 300);
        assert_eq!(Some(ranges.largest()), set.last());
        assert_eq!(Some(ranges.smallest()), set.first());
    }
}

/// The descending ranges of `set` as their own set, keeping only the top `n`.
fn top(set: &RangeSet, n: usize) -> RangeSet {
    let mut t = RangeSet::new(n);
    for r in set.iter().rev().take(n) {
        t.insert(r);
    }
    t
}

#[test]
fn encode_ack_keeps_largest_ranges_within_max_len() {
    let mut set = RangeSet::new(1000);
    let mut rng = Rng(7);
    let mut pn = 10u64;
    for _ in 0..300 {
        pn += 1 + rng.below(300);
        let len = 1 + rng.below(3000);
        set.insert(pn..pn + len);
        pn += len;
    }
    let ecn = EcnCounts {
        ect0: 70,
        ect1: 0,
        ecn_ce: 1,
    };
    let mut out = vec![0; 4096];
    for ecn in [None, Some(&ecn)] {
        for max_len in 0..1500 {
            let mut b = OctetsMut::with_slice(&mut out);
            match encode_ack(&set, 77, ecn, max_len, &mut b) {
                Ok(n) => {
                    assert!(n <= max_len);
                    let (f, used) = decode(&out[..n], Type::Short).unwrap();
                    assert_eq!(used, n);
                    let Frame::ACK {
                        ranges,
                        ecn_counts,
                        ack_delay,
                    } = f
                    else {
                        panic!("not an ACK");
                    };
                    assert_eq!((ack_delay, ecn_counts.as_ref()), (77, ecn));
                    let k = ranges.len();
                    assert!(ranges.iter().eq(set.iter().rev().take(k)));
                    // Maximal: one more range would not have fit.
                    if k < set.len() {
                        let more = top(&set, k + 1);
                        let g = Frame::ACK {
                            ack_delay: 77,
                            ranges: AckRanges::Set(&more),
                            ecn_counts: ecn.copied(),
                        };
                        assert!(g.wire_len() > max_len, "max_len {max_len}, {k} ranges");
                    } else {
                        assert_eq!(
                            n,
                            Frame::ACK {
                                ack_delay: 77,
                                ranges: AckRanges::Set(&set),
                                ecn_counts: ecn.copied(),
                            }
                            .wire_len()
                        );
                    }
                }
                Err(e) => {
                    assert_eq!(e, Error::BufferTooShort);
                    assert_eq!(b.off(), 0);
                    let one = top(&set, 1);
                    let g = Frame::ACK {
                        ack_delay: 77,
                        ranges: AckRanges::Set(&one),
                        ecn_counts: ecn.copied(),
                    };
                    assert!(g.wire_len() > max_len);
                }
            }
        }
    }
    // The buffer's own room bounds the frame too.
    let mut small = [0u8; 40];
    let n = encode_ack(&set, 0, None, 1000, &mut OctetsMut::with_slice(&mut small)).unwrap();
    assert!(n <= 40 && n > 30, "{n}");
    let empty = RangeSet::new(4);
    let r = encode_ack(&empty, 0, None, 1000, &mut OctetsMut::with_slice(&mut out));
    assert_eq!(r, Err(Error::Done));
}

#[test]
fn stream_and_crypto_headers() {
    let mut buf = [0u8; 64];
    // The LEN bit (0x02) is clear in the frames that end their packet.
    let cases = [
        (0, false, 0x0a, false),
        (0, true, 0x0b, false),
        (9, false, 0x0e, false),
        (0, false, 0x08, true),
        (0, true, 0x09, true),
        (1 << 20, false, 0x0c, true),
    ];
    for (offset, fin, first, to_end) in cases {
        let mut b = OctetsMut::with_slice(&mut buf);
        if to_end {
            let h = encode_stream_header_to_end(4, offset, DATA.len(), fin, &mut b).unwrap();
            assert_eq!(h, stream_header_len_to_end(4, offset));
            assert_eq!(h + 2, stream_header_len(4, offset, 1000), "no Length field");
        } else {
            let h = encode_stream_header(4, offset, DATA.len(), fin, &mut b).unwrap();
            assert_eq!(h, stream_header_len(4, offset, DATA.len()));
        }
        b.put_bytes(DATA).unwrap();
        let total = b.off();
        assert_eq!(buf[0], first);
        let (f, used) = decode(&buf[..total], Type::Short).unwrap();
        assert_eq!(used, total);
        assert_eq!(
            f,
            Frame::Stream {
                stream_id: 4,
                offset,
                data: DATA,
                fin
            }
        );
    }
    let mut b = OctetsMut::with_slice(&mut buf);
    let h = encode_crypto_header(1 << 20, DATA.len(), &mut b).unwrap();
    assert_eq!(h, crypto_header_len(1 << 20, DATA.len()));
    b.put_bytes(DATA).unwrap();
    let total = b.off();
    let (f, _) = decode(&buf[..total], Type::Initial).unwrap();
    assert_eq!(
        f,
        Frame::Crypto {
            offset: 1 << 20,
            data: DATA
        }
    );
    let mut b = OctetsMut::with_slice(&mut buf);
    let r = encode_stream_header(0, MAX_VARINT, 1, false, &mut b);
    assert_eq!(r, Err(Error::InvalidFrame));
    let r = encode_stream_header_to_end(0, MAX_VARINT, 1, false, &mut b);
    assert_eq!(r, Err(Error::InvalidFrame));
    let r = encode_crypto_header(MAX_VARINT - 1, 2, &mut b);
    assert_eq!(r, Err(Error::InvalidFrame));
}

/// Every prefix of every sample encoding short of the whole frame is a truncated frame.
#[test]
fn truncated_frames_are_frame_encoding_errors() {
    let set = sample_set();
    for (f, _) in samples(&set) {
        if matches!(f, Frame::Padding { .. }) {
            continue;
        }
        let buf = encode(&f);
        for cut in 0..buf.len() {
            let r = decode(&buf[..cut], Type::Short).map(|(f, _)| f);
            assert_eq!(r, Err(Error::InvalidFrame), "{f:?} cut at {cut}");
        }
    }
    assert_eq!(Error::InvalidFrame.to_wire(), 0x7);
}

fn varint_bytes(v: u64) -> Vec<u8> {
    let mut buf = vec![0; vlen(v)];
    OctetsMut::with_slice(&mut buf).put_varint(v).unwrap();
    buf
}

fn frame_of(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn malformed_frames_are_rejected_with_the_right_error() {
    let max = varint_bytes(MAX_VARINT);
    let over_count = varint_bytes(MAX_STREAM_COUNT + 1);
    let count = varint_bytes(MAX_STREAM_COUNT);
    let cases: Vec<(Vec<u8>, Result<()>)> = vec![
        // Unknown frame types.
        (vec![0x21], Err(Error::InvalidFrame)),
        (vec![0x40, 0xae], Err(Error::InvalidFrame)),
        (vec![0x40, 0xb0], Err(Error::InvalidFrame)),
        (vec![0x20], Err(Error::InvalidFrame)),
        (vec![0x2f, 0], Err(Error::InvalidFrame)),
        (vec![0x32, 0], Err(Error::InvalidFrame)),
        (vec![0x40, 0x40], Err(Error::InvalidFrame)),
        (vec![0x80, 0, 0x12, 0x34], Err(Error::InvalidFrame)),
        // Known types, not minimally encoded.
        (vec![0x40, 0x01], Err(Error::ProtocolViolation)),
        (vec![0x80, 0, 0, 0x1e], Err(Error::ProtocolViolation)),
        // ACK: first range below zero.
        (vec![0x02, 5, 0, 0, 6], Err(Error::InvalidFrame)),
        (vec![0x02, 5, 0, 0, 5], Ok(())),
        // ACK: 10 - 2 = 8; gap 6 -> largest 0, length 0 is fine, length 1 underflows.
        (vec![0x02, 10, 0, 1, 2, 6, 0], Ok(())),
        (vec![0x02, 10, 0, 1, 2, 6, 1], Err(Error::InvalidFrame)),
        (vec![0x02, 10, 0, 1, 2, 7, 0], Err(Error::InvalidFrame)),
        // ACK: more ranges announced than the bytes can hold.
        (
            vec![0x02, 10, 0, 0x7f, 0xff, 0xff, 0xff, 0xff, 0],
            Err(Error::InvalidFrame),
        ),
        // ACK_ECN without its counts.
        (vec![0x03, 10, 0, 0, 0, 1, 1], Err(Error::InvalidFrame)),
        // STREAM: offset + length beyond 2^62 - 1, with and without LEN.
        (
            frame_of(&[&[0x0e, 0], &max, &[1, b'x']]),
            Err(Error::InvalidFrame),
        ),
        (
            frame_of(&[&[0x0c, 0], &max, b"x"]),
            Err(Error::InvalidFrame),
        ),
        (frame_of(&[&[0x0e, 0], &max, &[0]]), Ok(())),
        // CRYPTO likewise.
        (
            frame_of(&[&[0x06], &max, &[1, b'x']]),
            Err(Error::InvalidFrame),
        ),
        // Stream counts above 2^60.
        (frame_of(&[&[0x12], &over_count]), Err(Error::InvalidFrame)),
        (frame_of(&[&[0x13], &over_count]), Err(Error::InvalidFrame)),
        (frame_of(&[&[0x16], &over_count]), Err(Error::InvalidFrame)),
        (frame_of(&[&[0x17], &over_count]), Err(Error::InvalidFrame)),
        (frame_of(&[&[0x17], &count]), Ok(())),
        // NEW_CONNECTION_ID: length 0 or 21, retire_prior_to above the sequence number.
        (
            frame_of(&[&[0x18, 1, 0, 0], &[0; 16]]),
            Err(Error::InvalidFrame),
        ),
        (
            frame_of(&[&[0x18, 1, 0, 21], &[0; 37]]),
            Err(Error::InvalidFrame),
        ),
        (
            frame_of(&[&[0x18, 1, 2, 1, 9], &[0; 16]]),
            Err(Error::InvalidFrame),
        ),
        (frame_of(&[&[0x18, 2, 2, 1, 9], &[0; 16]]), Ok(())),
        // NEW_TOKEN must carry a token.
        (vec![0x07, 0], Err(Error::InvalidFrame)),
        // ACK_FREQUENCY: a Requested Max Ack Delay of 2^14 ms or more is a PROTOCOL_VIOLATION
        // (draft-ietf-quic-ack-frequency-12 §4); just below is fine.
        (
            frame_of(&[
                &[0x40, 0xaf, 1, 1],
                &varint_bytes(MAX_REQUESTED_MAX_ACK_DELAY),
                &[1],
            ]),
            Err(Error::ProtocolViolation),
        ),
        (
            frame_of(&[&[0x40, 0xaf, 1, 1], &varint_bytes(16_383_999), &[1]]),
            Ok(()),
        ),
        (
            frame_of(&[&[0x40, 0xaf, 1, 1], &max, &[1]]),
            Err(Error::ProtocolViolation),
        ),
        // ACK_FREQUENCY's type (two bytes at least) in four: known, not minimally encoded.
        (
            vec![0x80, 0, 0, 0xaf, 1, 1, 1, 1],
            Err(Error::ProtocolViolation),
        ),
        // Lengths running past the end.
        (vec![0x31, 5, 1, 2], Err(Error::InvalidFrame)),
        (vec![0x1c, 0, 0, 3, b'a'], Err(Error::InvalidFrame)),
        (vec![0x1a, 1, 2, 3], Err(Error::InvalidFrame)),
    ];
    for (buf, want) in cases {
        let r = decode(&buf, Type::Short).map(|(_, used)| {
            assert_eq!(used, buf.len(), "{buf:02x?}");
        });
        assert_eq!(r, want, "{buf:02x?}");
    }
}

#[test]
fn encoding_refuses_what_decoding_rejects() {
    let cid = [1u8; 21];
    let bad = [
        Frame::MaxData {
            max: MAX_VARINT + 1,
        },
        Frame::MaxStreamsUni {
            max: MAX_STREAM_COUNT + 1,
        },
        Frame::StreamsBlockedBidi { limit: u64::MAX },
        Frame::NewToken { token: &[] },
        Frame::NewConnectionId {
            seq_num: 0,
            retire_prior_to: 0,
            conn_id: &[],
            reset_token: [0; 16],
        },
        Frame::NewConnectionId {
            seq_num: 0,
            retire_prior_to: 0,
            conn_id: &cid,
            reset_token: [0; 16],
        },
        Frame::NewConnectionId {
            seq_num: 0,
            retire_prior_to: 1,
            conn_id: &cid[..8],
            reset_token: [0; 16],
        },
        Frame::Stream {
            stream_id: 0,
            offset: MAX_VARINT,
            data: b"x",
            fin: false,
        },
        Frame::AckFrequency {
            seq_num: 0,
            ack_eliciting_threshold: 1,
            request_max_ack_delay: MAX_REQUESTED_MAX_ACK_DELAY,
            reordering_threshold: 1,
        },
        Frame::AckFrequency {
            seq_num: MAX_VARINT + 1,
            ack_eliciting_threshold: 1,
            request_max_ack_delay: 1000,
            reordering_threshold: 1,
        },
    ];
    let mut buf = [0u8; 128];
    for f in &bad {
        let r = f.to_bytes(&mut OctetsMut::with_slice(&mut buf));
        assert_eq!(r, Err(Error::InvalidFrame), "{f:?}");
    }
    let empty = RangeSet::new(4);
    let f = Frame::ACK {
        ack_delay: 0,
        ranges: AckRanges::Set(&empty),
        ecn_counts: None,
    };
    assert_eq!(
        f.to_bytes(&mut OctetsMut::with_slice(&mut buf)),
        Err(Error::InvalidFrame)
    );
    // Too little room: nothing is written.
    let f = Frame::Datagram { data: DATA };
    let mut small = [0u8; 10];
    let mut b = OctetsMut::with_slice(&mut small);
    assert_eq!(f.to_bytes(&mut b), Err(Error::BufferTooShort));
    assert_eq!(b.off(), 0);
}

#[test]
fn frame_iter_stops_at_first_error() {
    let buf = [0x01, 0x1e, 0x21, 0x01];
    let mut it = parse_all(&buf, Type::Short);
    assert_eq!(it.next(), Some(Ok(Frame::Ping)));
    assert_eq!(it.next(), Some(Ok(Frame::HandshakeDone)));
    assert_eq!(it.next(), Some(Err(Error::InvalidFrame)));
    assert_eq!(it.offset(), 2);
    assert_eq!(it.next(), None);
    assert_eq!(parse_all(&[], Type::Short).count(), 0);
}

/// Decodes all of `buf` as `pkt`; every frame must re-encode to an equal frame.
fn decode_all_checked(buf: &[u8], pkt: Type) {
    let mut it = parse_all(buf, pkt);
    while let Some(r) = it.next() {
        assert!(it.offset() <= buf.len());
        let Ok(f) = r else {
            break;
        };
        assert!(f.allowed_in(pkt));
        let enc = encode(&f);
        let (g, used) = decode(&enc, pkt).unwrap();
        assert_eq!(g, f);
        assert_eq!(used, enc.len());
    }
}

#[test]
fn never_panics_on_any_prefix() {
    let set = sample_set();
    let all: Vec<u8> = samples(&set).iter().flat_map(|(f, _)| encode(f)).collect();
    let mut inputs = vec![all];
    inputs.extend(samples(&set).iter().map(|(f, _)| encode(f)));
    for buf in &inputs {
        for cut in 0..=buf.len() {
            for pkt in ALL_PKTS {
                decode_all_checked(&buf[..cut], pkt);
            }
        }
    }
}

#[test]
fn never_panics_on_random_input() {
    const TYPES: &[u8] = &[
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0b, 0x0c, 0x0f, 0x10, 0x11, 0x12,
        0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x30, 0x31,
    ];
    let mut rng = Rng(0x5eed_f00d);
    let mut buf = Vec::with_capacity(64);
    let mut ok = 0;
    for _ in 0..200_000 {
        buf.clear();
        let len = rng.below(48) as usize;
        for j in 0..len {
            let x = rng.next();
            // Mostly small values (short varints, plausible lengths and frame types), so the
            // decoder gets past the first field often.
            let byte = match (j, x % 8) {
                (0, 0..=5) => TYPES[(x >> 8) as usize % TYPES.len()],
                (_, 0..=3) => (x >> 8) as u8 & 0x1f,
                _ => (x >> 8) as u8,
            };
            buf.push(byte);
        }
        for pkt in ALL_PKTS {
            decode_all_checked(&buf, pkt);
        }
        ok += usize::from(matches!(parse_all(&buf, Type::Short).next(), Some(Ok(_))));
    }
    // The generator must reach the decoders' success paths, not just the errors.
    assert!(ok > 50_000, "only {ok} inputs started with a valid frame");
}
