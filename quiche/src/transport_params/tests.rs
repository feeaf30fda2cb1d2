use super::*;
use crate::testing::Rng;

const E: Error = Error::InvalidTransportParam;

fn varint(v: u64) -> Vec<u8> {
    let mut buf = [0; 8];
    let mut b = OctetsMut::with_slice(&mut buf);
    b.put_varint(v).unwrap();
    let len = b.off();
    buf[..len].to_vec()
}

/// A varint of `v` forced to `len` bytes (non-minimal encodings are legal, RFC 9000 §16).
fn varint_with_len(v: u64, len: usize) -> Vec<u8> {
    let mut buf = [0; 8];
    let mut b = OctetsMut::with_slice(&mut buf);
    b.put_varint_with_len(v, len).unwrap();
    buf[..len].to_vec()
}

fn param(id: u64, val: &[u8]) -> Vec<u8> {
    let mut out = varint(id);
    out.extend(varint(val.len() as u64));
    out.extend_from_slice(val);
    out
}

fn varint_param(id: u64, v: u64) -> Vec<u8> {
    param(id, &varint(v))
}

fn cid(bytes: &[u8]) -> ConnectionId<'static> {
    ConnectionId::from_vec(bytes.to_vec())
}

fn preferred_address() -> PreferredAddress {
    PreferredAddress {
        ipv4: Some(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 7), 4433)),
        ipv6: Some(SocketAddrV6::new(
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x42),
            8443,
            0,
            0,
        )),
        connection_id: cid(&[0xab; 8]),
        stateless_reset_token: [0x5a; 16],
    }
}

/// Parameters with every field away from its default.
fn full_server() -> TransportParams {
    TransportParams {
        original_destination_connection_id: Some(cid(&[1, 2, 3, 4, 5, 6, 7, 8])),
        max_idle_timeout: 30_000,
        stateless_reset_token: Some(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff),
        max_udp_payload_size: 1452,
        initial_max_data: 10_000_000,
        initial_max_stream_data_bidi_local: 1_000_000,
        initial_max_stream_data_bidi_remote: 2_000_000,
        initial_max_stream_data_uni: 3_000_000,
        initial_max_streams_bidi: 100,
        initial_max_streams_uni: MAX_STREAMS_LIMIT,
        ack_delay_exponent: 20,
        max_ack_delay: MAX_ACK_DELAY_LIMIT - 1,
        disable_active_migration: true,
        preferred_address: Some(preferred_address()),
        active_conn_id_limit: 8,
        initial_source_connection_id: Some(cid(&[9; 20])),
        retry_source_connection_id: Some(cid(&[7; 5])),
        max_datagram_frame_size: Some(65535),
        grease_quic_bit: true,
        version_information: Some(VersionInformation {
            chosen_version: 1,
            available_versions: vec![1, 0x6b33_43cf],
        }),
        // Equal to max_ack_delay, the largest allowed.
        min_ack_delay: Some((MAX_ACK_DELAY_LIMIT - 1) * 1000),
        // Never encoded: what a peer sent that this library does not know.
        unknown_params: None,
    }
}

fn full_client() -> TransportParams {
    TransportParams {
        original_destination_connection_id: None,
        stateless_reset_token: None,
        preferred_address: None,
        retry_source_connection_id: None,
        ..full_server()
    }
}

/// A valid encoding with the given parameter appended.
fn with(params: &[Vec<u8>]) -> Vec<u8> {
    params.concat()
}

fn encode_pa(pa: &[u8]) -> Vec<u8> {
    param(PREFERRED_ADDRESS, pa)
}

/// The wire form of `preferred_address()`, built by hand from RFC 9000 Figure 22.
fn pa_bytes() -> Vec<u8> {
    let mut v = vec![192, 0, 2, 7, 0x11, 0x51];
    v.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    v.extend_from_slice(&[0; 11]);
    v.push(0x42);
    v.extend_from_slice(&[0x20, 0xfb]);
    v.push(8);
    v.extend_from_slice(&[0xab; 8]);
    v.extend_from_slice(&[0x5a; 16]);
    v
}

/// One valid instance of every known parameter, with non-default values.
fn every_known_param() -> Vec<(u64, Vec<u8>)> {
    vec![
        (
            ORIGINAL_DESTINATION_CONNECTION_ID,
            param(0x00, &[1, 2, 3, 4]),
        ),
        (MAX_IDLE_TIMEOUT, varint_param(0x01, 10)),
        (STATELESS_RESET_TOKEN, param(0x02, &[3; 16])),
        (MAX_UDP_PAYLOAD_SIZE, varint_param(0x03, 1500)),
        (INITIAL_MAX_DATA, varint_param(0x04, 1)),
        (INITIAL_MAX_STREAM_DATA_BIDI_LOCAL, varint_param(0x05, 1)),
        (INITIAL_MAX_STREAM_DATA_BIDI_REMOTE, varint_param(0x06, 1)),
        (INITIAL_MAX_STREAM_DATA_UNI, varint_param(0x07, 1)),
        (INITIAL_MAX_STREAMS_BIDI, varint_param(0x08, 1)),
        (INITIAL_MAX_STREAMS_UNI, varint_param(0x09, 1)),
        (ACK_DELAY_EXPONENT, varint_param(0x0a, 1)),
        (MAX_ACK_DELAY, varint_param(0x0b, 1)),
        (DISABLE_ACTIVE_MIGRATION, param(0x0c, &[])),
        (PREFERRED_ADDRESS, encode_pa(&pa_bytes())),
        (ACTIVE_CONNECTION_ID_LIMIT, varint_param(0x0e, 3)),
        (INITIAL_SOURCE_CONNECTION_ID, param(0x0f, &[5; 3])),
        (RETRY_SOURCE_CONNECTION_ID, param(0x10, &[6; 3])),
        (MAX_DATAGRAM_FRAME_SIZE, varint_param(0x20, 1200)),
        (GREASE_QUIC_BIT, param(0x2ab2, &[])),
        (MIN_ACK_DELAY, varint_param(0xff04_de1b, 1000)),
    ]
}

const VARINT_IDS: [u64; 13] = [
    MAX_IDLE_TIMEOUT,
    MAX_UDP_PAYLOAD_SIZE,
    INITIAL_MAX_DATA,
    INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
    INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
    INITIAL_MAX_STREAM_DATA_UNI,
    INITIAL_MAX_STREAMS_BIDI,
    INITIAL_MAX_STREAMS_UNI,
    ACK_DELAY_EXPONENT,
    MAX_ACK_DELAY,
    ACTIVE_CONNECTION_ID_LIMIT,
    MAX_DATAGRAM_FRAME_SIZE,
    MIN_ACK_DELAY,
];

const SERVER_ONLY_IDS: [u64; 4] = [
    ORIGINAL_DESTINATION_CONNECTION_ID,
    STATELESS_RESET_TOKEN,
    PREFERRED_ADDRESS,
    RETRY_SOURCE_CONNECTION_ID,
];

/// A value valid for a varint parameter of this ID (the defaults 0 are not valid for all).
fn valid_varint_for(id: u64) -> u64 {
    match id {
        MAX_UDP_PAYLOAD_SIZE => 1500,
        ACTIVE_CONNECTION_ID_LIMIT => 4,
        _ => 7,
    }
}

// ---- defaults ----

#[test]
fn default_values_follow_rfc() {
    let tp = TransportParams::default();
    assert_eq!(tp.original_destination_connection_id, None);
    assert_eq!(tp.max_idle_timeout, 0);
    assert_eq!(tp.stateless_reset_token, None);
    assert_eq!(tp.max_udp_payload_size, 65527);
    assert_eq!(tp.initial_max_data, 0);
    assert_eq!(tp.initial_max_stream_data_bidi_local, 0);
    assert_eq!(tp.initial_max_stream_data_bidi_remote, 0);
    assert_eq!(tp.initial_max_stream_data_uni, 0);
    assert_eq!(tp.initial_max_streams_bidi, 0);
    assert_eq!(tp.initial_max_streams_uni, 0);
    assert_eq!(tp.ack_delay_exponent, 3);
    assert_eq!(tp.max_ack_delay, 25);
    assert!(!tp.disable_active_migration);
    assert_eq!(tp.preferred_address, None);
    assert_eq!(tp.active_conn_id_limit, 2);
    assert_eq!(tp.initial_source_connection_id, None);
    assert_eq!(tp.retry_source_connection_id, None);
    assert_eq!(tp.max_datagram_frame_size, None);
    assert!(!tp.grease_quic_bit);
}

#[test]
fn empty_list_decodes_to_defaults() {
    for is_server in [false, true] {
        assert_eq!(
            TransportParams::decode(&[], is_server),
            Ok(TransportParams::default())
        );
    }
}

#[test]
fn defaults_encode_to_nothing() {
    for is_server in [false, true] {
        let tp = TransportParams::default();
        assert_eq!(tp.encode_to_vec(is_server).unwrap(), Vec::<u8>::new());
        assert_eq!(tp.encoded_len(is_server, None), Ok(0));
    }
}

#[test]
fn explicit_defaults_decode_like_omitted_ones() {
    let buf = with(&[
        varint_param(MAX_IDLE_TIMEOUT, 0),
        varint_param(MAX_UDP_PAYLOAD_SIZE, 65527),
        varint_param(ACK_DELAY_EXPONENT, 3),
        varint_param(MAX_ACK_DELAY, 25),
        varint_param(ACTIVE_CONNECTION_ID_LIMIT, 2),
    ]);
    assert_eq!(
        TransportParams::decode(&buf, true),
        Ok(TransportParams::default())
    );
}

#[test]
fn each_default_valued_field_is_omitted() {
    let d = TransportParams::default;
    let cases = [
        (
            TransportParams {
                max_idle_timeout: 1,
                ..d()
            },
            MAX_IDLE_TIMEOUT,
            1,
        ),
        (
            TransportParams {
                ack_delay_exponent: 4,
                ..d()
            },
            ACK_DELAY_EXPONENT,
            4,
        ),
        (
            TransportParams {
                max_ack_delay: 26,
                ..d()
            },
            MAX_ACK_DELAY,
            26,
        ),
        (
            TransportParams {
                active_conn_id_limit: 3,
                ..d()
            },
            ACTIVE_CONNECTION_ID_LIMIT,
            3,
        ),
        (
            TransportParams {
                max_udp_payload_size: 1200,
                ..d()
            },
            MAX_UDP_PAYLOAD_SIZE,
            1200,
        ),
        (
            TransportParams {
                initial_max_streams_uni: 1,
                ..d()
            },
            INITIAL_MAX_STREAMS_UNI,
            1,
        ),
    ];
    for (tp, id, v) in cases {
        assert_eq!(
            tp.encode_to_vec(false).unwrap(),
            varint_param(id, v),
            "{id:#x}"
        );
    }
}

// ---- round trips and exact encoding ----

#[test]
fn full_server_set_round_trips() {
    let tp = full_server();
    let buf = tp.encode_to_vec(true).unwrap();
    assert_eq!(TransportParams::decode(&buf, true), Ok(tp));
}

#[test]
fn full_client_set_round_trips() {
    let tp = full_client();
    let buf = tp.encode_to_vec(false).unwrap();
    assert_eq!(TransportParams::decode(&buf, false), Ok(tp.clone()));
    // A client's parameters are also acceptable as coming from a server.
    assert_eq!(TransportParams::decode(&buf, true), Ok(tp));
}

#[test]
fn client_encoding_omits_server_only_parameters() {
    let buf = full_server().encode_to_vec(false).unwrap();
    assert_eq!(buf, full_client().encode_to_vec(false).unwrap());
    assert_eq!(TransportParams::decode(&buf, false), Ok(full_client()));
}

#[test]
fn encoding_matches_hand_built_bytes() {
    let tp = TransportParams {
        original_destination_connection_id: Some(cid(&[0xaa, 0xbb])),
        max_idle_timeout: 30_000,
        stateless_reset_token: Some(u128::from_be_bytes([0x11; 16])),
        initial_max_data: 100,
        disable_active_migration: true,
        preferred_address: Some(preferred_address()),
        initial_source_connection_id: Some(cid(&[0x33])),
        max_datagram_frame_size: Some(0),
        grease_quic_bit: true,
        ..TransportParams::default()
    };
    let mut expected = vec![0x00, 0x02, 0xaa, 0xbb];
    expected.extend_from_slice(&[0x01, 0x04, 0x80, 0x00, 0x75, 0x30]);
    expected.extend_from_slice(&[0x02, 0x10]);
    expected.extend_from_slice(&[0x11; 16]);
    expected.extend_from_slice(&[0x04, 0x02, 0x40, 0x64]);
    expected.extend_from_slice(&[0x0c, 0x00]);
    // 4 + 2 + 16 + 2 + 1 + 8 + 16 bytes.
    expected.extend_from_slice(&[0x0d, 49]);
    expected.extend(pa_bytes());
    expected.extend_from_slice(&[0x0f, 0x01, 0x33]);
    expected.extend_from_slice(&[0x20, 0x01, 0x00]);
    // 0x2ab2 < 2^14: a two-byte varint.
    expected.extend_from_slice(&[0x6a, 0xb2, 0x00]);
    let buf = tp.encode_to_vec(true).unwrap();
    assert_eq!(buf, expected);
    assert_eq!(TransportParams::decode(&buf, true), Ok(tp));
}

#[test]
fn zero_length_initial_source_connection_id_is_sent() {
    let tp = TransportParams {
        initial_source_connection_id: Some(cid(&[])),
        ..TransportParams::default()
    };
    for is_server in [false, true] {
        let buf = tp.encode_to_vec(is_server).unwrap();
        assert_eq!(buf, [0x0f, 0x00]);
        assert_eq!(TransportParams::decode(&buf, is_server), Ok(tp.clone()));
    }
}

#[test]
fn stateless_reset_token_is_big_endian() {
    let mut raw = [0u8; 16];
    raw[15] = 1;
    let tp = TransportParams::decode(&param(STATELESS_RESET_TOKEN, &raw), true).unwrap();
    assert_eq!(tp.stateless_reset_token, Some(1));
    assert_eq!(tp.stateless_reset_token.unwrap().to_be_bytes(), raw);
}

#[test]
fn preferred_address_zero_family_means_absent() {
    let mut pa = preferred_address();
    pa.ipv4 = None;
    let tp = TransportParams {
        preferred_address: Some(pa.clone()),
        ..TransportParams::default()
    };
    let buf = tp.encode_to_vec(true).unwrap();
    // 0.0.0.0:0 on the wire.
    assert_eq!(&buf[2..8], &[0; 6]);
    assert_eq!(
        TransportParams::decode(&buf, true)
            .unwrap()
            .preferred_address,
        Some(pa)
    );

    let mut pa = preferred_address();
    pa.ipv6 = None;
    let tp = TransportParams {
        preferred_address: Some(pa.clone()),
        ..TransportParams::default()
    };
    let buf = tp.encode_to_vec(true).unwrap();
    assert_eq!(&buf[8..26], &[0; 18]);
    assert_eq!(
        TransportParams::decode(&buf, true)
            .unwrap()
            .preferred_address,
        Some(pa)
    );
}

#[test]
fn preferred_address_zero_address_with_port_is_present() {
    let mut raw = pa_bytes();
    raw[..4].copy_from_slice(&[0; 4]);
    let tp = TransportParams::decode(&encode_pa(&raw), true).unwrap();
    let pa = tp.preferred_address.unwrap();
    assert_eq!(
        pa.ipv4,
        Some(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 4433))
    );
}

#[test]
fn non_minimal_varints_are_accepted() {
    for len in [1, 2, 4, 8] {
        let buf = param(INITIAL_MAX_DATA, &varint_with_len(5, len));
        assert_eq!(
            TransportParams::decode(&buf, false)
                .unwrap()
                .initial_max_data,
            5
        );
    }
    // Non-minimal ID and length fields too.
    let mut buf = varint_with_len(INITIAL_MAX_DATA, 8);
    buf.extend(varint_with_len(1, 4));
    buf.push(9);
    assert_eq!(
        TransportParams::decode(&buf, false)
            .unwrap()
            .initial_max_data,
        9
    );
}

#[test]
fn order_does_not_matter() {
    let mut params = every_known_param();
    params.reverse();
    let forward = with(
        &every_known_param()
            .into_iter()
            .map(|p| p.1)
            .collect::<Vec<_>>(),
    );
    let backward = with(&params.into_iter().map(|p| p.1).collect::<Vec<_>>());
    assert_eq!(
        TransportParams::decode(&forward, true).unwrap(),
        TransportParams::decode(&backward, true).unwrap()
    );
}

// ---- validation: duplicates ----

#[test]
fn every_known_parameter_twice_is_rejected() {
    for (id, p) in every_known_param() {
        assert!(
            TransportParams::decode(&p, true).is_ok(),
            "id {id:#x} alone"
        );
        let twice = with(&[p.clone(), p.clone()]);
        assert_eq!(TransportParams::decode(&twice, true), Err(E), "id {id:#x}");
        // Also when something else sits between the two copies.
        let apart = with(&[p.clone(), param(27, &[1]), varint_param(0x04, 9), p]);
        if id != INITIAL_MAX_DATA {
            assert_eq!(TransportParams::decode(&apart, true), Err(E), "id {id:#x}");
        }
    }
}

#[test]
fn all_known_parameters_once_are_accepted() {
    let buf = with(
        &every_known_param()
            .into_iter()
            .map(|p| p.1)
            .collect::<Vec<_>>(),
    );
    let tp = TransportParams::decode(&buf, true).unwrap();
    assert_eq!(tp.active_conn_id_limit, 3);
    assert_eq!(tp.preferred_address, Some(preferred_address()));
    assert!(tp.grease_quic_bit);
    assert_eq!(tp.max_datagram_frame_size, Some(1200));
    assert_eq!(tp.min_ack_delay, Some(1000));
}

#[test]
fn version_information_round_trips_in_both_roles() {
    for is_server in [false, true] {
        let tp = TransportParams {
            version_information: Some(VersionInformation {
                chosen_version: 1,
                available_versions: vec![0x6b33_43cf, 1, 0x0a1a_2a3a],
            }),
            ..TransportParams::default()
        };
        let wire = tp.encode_to_vec(is_server).unwrap();
        // id 0x11, length 16, then the four versions.
        assert_eq!(&wire[..2], &[0x11, 16]);
        assert_eq!(&wire[2..6], &1u32.to_be_bytes());
        assert_eq!(TransportParams::decode(&wire, is_server).unwrap(), tp);
    }
}

/// RFC 9368 §4: parsing failures are TRANSPORT_PARAMETER_ERROR.
#[test]
fn malformed_version_information_is_rejected() {
    let v = |vs: &[u32]| vs.iter().flat_map(|v| v.to_be_bytes()).collect::<Vec<u8>>();
    let cases: [(Vec<u8>, bool); 6] = [
        (vec![], true),                // empty
        (vec![0, 0, 0, 1, 0], true),   // not a multiple of four
        (vec![0, 0, 1], false),        // shorter than the chosen version
        (v(&[0, 1]), true),            // chosen version zero
        (v(&[1, 0]), true),            // an available version zero
        (v(&[1, 0x6b33_43cf]), false), // a client's chosen version not in its list
    ];
    for (val, from_server) in cases {
        let buf = param(VERSION_INFORMATION, &val);
        assert_eq!(
            TransportParams::decode(&buf, from_server).err(),
            Some(Error::InvalidTransportParam),
            "{val:?} from_server={from_server}"
        );
    }
    // A server may list versions without its chosen one, or none at all (§3).
    let buf = param(VERSION_INFORMATION, &v(&[1]));
    let tp = TransportParams::decode(&buf, true).unwrap();
    assert!(tp
        .version_information
        .unwrap()
        .available_versions
        .is_empty());
    let repeated = with(&[buf.clone(), buf]);
    assert!(TransportParams::decode(&repeated, true).is_err());
}

#[test]
fn repeated_unknown_parameters_are_fine() {
    let buf = with(&[
        param(0x15, &[1]),
        param(0x15, &[2]),
        param(27, &[]),
        param(27, &[]),
    ]);
    assert_eq!(
        TransportParams::decode(&buf, false),
        Ok(TransportParams::default())
    );
}

// ---- validation: value ranges ----

fn decode_one(id: u64, v: u64) -> Result<TransportParams> {
    TransportParams::decode(&varint_param(id, v), true)
}

#[test]
fn max_udp_payload_size_below_1200_is_rejected() {
    assert_eq!(decode_one(MAX_UDP_PAYLOAD_SIZE, 1199), Err(E));
    assert_eq!(decode_one(MAX_UDP_PAYLOAD_SIZE, 0), Err(E));
    assert_eq!(
        decode_one(MAX_UDP_PAYLOAD_SIZE, 1200)
            .unwrap()
            .max_udp_payload_size,
        1200
    );
    // Above 65527 is not invalid, just larger than any UDP payload.
    assert_eq!(
        decode_one(MAX_UDP_PAYLOAD_SIZE, 70000)
            .unwrap()
            .max_udp_payload_size,
        70000
    );
}

#[test]
fn ack_delay_exponent_above_20_is_rejected() {
    assert_eq!(decode_one(ACK_DELAY_EXPONENT, 21), Err(E));
    assert_eq!(decode_one(ACK_DELAY_EXPONENT, u64::from(u32::MAX)), Err(E));
    assert_eq!(
        decode_one(ACK_DELAY_EXPONENT, 20)
            .unwrap()
            .ack_delay_exponent,
        20
    );
    assert_eq!(
        decode_one(ACK_DELAY_EXPONENT, 0)
            .unwrap()
            .ack_delay_exponent,
        0
    );
}

#[test]
fn max_ack_delay_of_2_pow_14_is_rejected() {
    assert_eq!(decode_one(MAX_ACK_DELAY, 1 << 14), Err(E));
    assert_eq!(decode_one(MAX_ACK_DELAY, octets::MAX_VAR_INT), Err(E));
    assert_eq!(
        decode_one(MAX_ACK_DELAY, (1 << 14) - 1)
            .unwrap()
            .max_ack_delay,
        16383
    );
    assert_eq!(decode_one(MAX_ACK_DELAY, 0).unwrap().max_ack_delay, 0);
}

#[test]
fn active_connection_id_limit_below_2_is_rejected() {
    assert_eq!(decode_one(ACTIVE_CONNECTION_ID_LIMIT, 0), Err(E));
    assert_eq!(decode_one(ACTIVE_CONNECTION_ID_LIMIT, 1), Err(E));
    assert_eq!(
        decode_one(ACTIVE_CONNECTION_ID_LIMIT, 2)
            .unwrap()
            .active_conn_id_limit,
        2
    );
}

#[test]
fn max_streams_above_2_pow_60_is_rejected() {
    for id in [INITIAL_MAX_STREAMS_BIDI, INITIAL_MAX_STREAMS_UNI] {
        assert_eq!(decode_one(id, (1 << 60) + 1), Err(E));
        assert_eq!(decode_one(id, octets::MAX_VAR_INT), Err(E));
        let tp = decode_one(id, 1 << 60).unwrap();
        assert_eq!(
            tp.initial_max_streams_bidi.max(tp.initial_max_streams_uni),
            1 << 60
        );
    }
}

#[test]
fn largest_varints_are_accepted_where_unbounded() {
    for id in [
        MAX_IDLE_TIMEOUT,
        INITIAL_MAX_DATA,
        INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
        INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
        INITIAL_MAX_STREAM_DATA_UNI,
        MAX_DATAGRAM_FRAME_SIZE,
    ] {
        let tp = decode_one(id, octets::MAX_VAR_INT).unwrap();
        assert_eq!(
            tp.encode_to_vec(true).unwrap(),
            varint_param(id, octets::MAX_VAR_INT)
        );
    }
}

// ---- validation: value length ----

#[test]
fn varint_parameters_with_wrong_length_are_rejected() {
    for id in VARINT_IDS {
        let v = valid_varint_for(id);
        assert!(
            TransportParams::decode(&varint_param(id, v), true).is_ok(),
            "{id:#x}"
        );
        // Empty value.
        assert_eq!(
            TransportParams::decode(&param(id, &[]), true),
            Err(E),
            "{id:#x}"
        );
        // Length longer than the varint.
        let mut long = varint(v);
        long.push(0);
        assert_eq!(
            TransportParams::decode(&param(id, &long), true),
            Err(E),
            "{id:#x}"
        );
        // Length shorter than the varint: a 2-byte varint with length 1, and a 4-byte one
        // with length 2 (each followed by the rest so the outer list stays well formed).
        for (vlen, cut) in [(2, 1), (4, 2), (8, 4)] {
            let enc = varint_with_len(v, vlen);
            let mut buf = varint(id);
            buf.extend(varint(cut as u64));
            buf.extend_from_slice(&enc);
            assert_eq!(
                TransportParams::decode(&buf, true),
                Err(E),
                "{id:#x} {vlen}"
            );
        }
    }
}

#[test]
fn flags_with_a_value_are_rejected() {
    for id in [DISABLE_ACTIVE_MIGRATION, GREASE_QUIC_BIT] {
        assert_eq!(TransportParams::decode(&param(id, &[0]), false), Err(E));
        assert_eq!(
            TransportParams::decode(&param(id, &[1, 2, 3]), false),
            Err(E)
        );
    }
    let tp = TransportParams::decode(&param(DISABLE_ACTIVE_MIGRATION, &[]), false).unwrap();
    assert!(tp.disable_active_migration);
    let tp = TransportParams::decode(&param(GREASE_QUIC_BIT, &[]), false).unwrap();
    assert!(tp.grease_quic_bit);
}

#[test]
fn stateless_reset_token_must_be_16_bytes() {
    for len in [0, 1, 15, 17, 32] {
        let buf = param(STATELESS_RESET_TOKEN, &vec![1; len]);
        assert_eq!(TransportParams::decode(&buf, true), Err(E), "len {len}");
    }
    let buf = param(STATELESS_RESET_TOKEN, &[1; 16]);
    assert!(TransportParams::decode(&buf, true)
        .unwrap()
        .stateless_reset_token
        .is_some());
}

#[test]
fn connection_ids_longer_than_20_are_rejected() {
    for id in [
        ORIGINAL_DESTINATION_CONNECTION_ID,
        INITIAL_SOURCE_CONNECTION_ID,
        RETRY_SOURCE_CONNECTION_ID,
    ] {
        assert_eq!(TransportParams::decode(&param(id, &[1; 21]), true), Err(E));
        assert_eq!(TransportParams::decode(&param(id, &[1; 255]), true), Err(E));
        for len in [0, 1, 8, 20] {
            let tp = TransportParams::decode(&param(id, &vec![4; len]), true).unwrap();
            let got = [
                tp.original_destination_connection_id,
                tp.initial_source_connection_id,
                tp.retry_source_connection_id,
            ];
            assert_eq!(got.iter().flatten().next().map(|c| c.len()), Some(len));
        }
    }
}

#[test]
fn max_datagram_frame_size_parsing() {
    for v in [0, 1, 63, 64, 65535, octets::MAX_VAR_INT] {
        let tp = decode_one(MAX_DATAGRAM_FRAME_SIZE, v).unwrap();
        assert_eq!(tp.max_datagram_frame_size, Some(v));
        // Zero is still sent when set, since `Some(0)` differs from `None` here.
        assert_eq!(
            tp.encode_to_vec(false).unwrap(),
            varint_param(MAX_DATAGRAM_FRAME_SIZE, v)
        );
    }
    assert_eq!(
        TransportParams::decode(&param(MAX_DATAGRAM_FRAME_SIZE, &[]), true),
        Err(E)
    );
    assert_eq!(
        TransportParams::decode(&param(MAX_DATAGRAM_FRAME_SIZE, &[0x40]), true),
        Err(E)
    );
    assert_eq!(
        TransportParams::decode(&param(MAX_DATAGRAM_FRAME_SIZE, &[1, 1]), true),
        Err(E)
    );
}

#[test]
fn min_ack_delay_is_in_microseconds_and_bounded_by_max_ack_delay() {
    // Absent: the peer does not accept ACK_FREQUENCY frames.
    assert_eq!(TransportParams::default().min_ack_delay, None);
    // At the default max_ack_delay of 25 ms, 25,000 µs is the largest valid value; zero is
    // valid too (a receiver with a perfect timer).
    for v in [0, 1, 1000, 25_000] {
        let tp = decode_one(MIN_ACK_DELAY, v).unwrap();
        assert_eq!(tp.min_ack_delay, Some(v));
        let buf = tp.encode_to_vec(false).unwrap();
        assert_eq!(buf, varint_param(MIN_ACK_DELAY, v));
        assert_eq!(TransportParams::decode(&buf, false), Ok(tp));
    }
    // draft-ietf-quic-ack-frequency-12 §3: greater than max_ack_delay is a
    // TRANSPORT_PARAMETER_ERROR, whichever order the two parameters come in.
    assert_eq!(decode_one(MIN_ACK_DELAY, 25_001), Err(E));
    let min = varint_param(MIN_ACK_DELAY, 5_001);
    let max = varint_param(MAX_ACK_DELAY, 5);
    assert_eq!(
        TransportParams::decode(&with(&[min.clone(), max.clone()]), true),
        Err(E)
    );
    assert_eq!(TransportParams::decode(&with(&[max, min]), true), Err(E));
    let ok = with(&[
        varint_param(MAX_ACK_DELAY, 5),
        varint_param(MIN_ACK_DELAY, 5_000),
    ]);
    assert_eq!(
        TransportParams::decode(&ok, true).map(|tp| tp.min_ack_delay),
        Ok(Some(5_000))
    );
    // A max_ack_delay of zero leaves only a min_ack_delay of zero.
    let zero = with(&[
        varint_param(MAX_ACK_DELAY, 0),
        varint_param(MIN_ACK_DELAY, 1),
    ]);
    assert_eq!(TransportParams::decode(&zero, true), Err(E));
    // A local set that breaks the rule does not encode.
    let tp = TransportParams {
        max_ack_delay: 1,
        min_ack_delay: Some(1_001),
        ..TransportParams::default()
    };
    assert_eq!(tp.encode_to_vec(true), Err(E));
}

// ---- validation: roles ----

#[test]
fn server_only_parameters_from_a_client_are_rejected() {
    let params = every_known_param();
    for id in SERVER_ONLY_IDS {
        let p = &params.iter().find(|(i, _)| *i == id).unwrap().1;
        assert_eq!(TransportParams::decode(p, false), Err(E), "{id:#x}");
        assert!(TransportParams::decode(p, true).is_ok(), "{id:#x}");
        // Also when surrounded by valid ones.
        let buf = with(&[varint_param(0x04, 5), p.clone(), param(0x0f, &[1])]);
        assert_eq!(TransportParams::decode(&buf, false), Err(E), "{id:#x}");
    }
}

#[test]
fn parameters_for_both_roles_are_accepted_from_a_client() {
    for (id, p) in every_known_param() {
        if !SERVER_ONLY_IDS.contains(&id) {
            assert!(TransportParams::decode(&p, false).is_ok(), "{id:#x}");
        }
    }
}

// ---- validation: preferred address ----

#[test]
fn preferred_address_exact_layout() {
    let raw = pa_bytes();
    assert_eq!(raw.len(), 4 + 2 + 16 + 2 + 1 + 8 + 16);
    let tp = TransportParams::decode(&encode_pa(&raw), true).unwrap();
    assert_eq!(tp.preferred_address, Some(preferred_address()));
}

#[test]
fn preferred_address_with_empty_connection_id_is_rejected() {
    let mut raw = pa_bytes();
    // Drop the CID and set its length to 0.
    raw.drain(25..33);
    raw[24] = 0;
    assert_eq!(raw.len(), 4 + 2 + 16 + 2 + 1 + 16);
    assert_eq!(TransportParams::decode(&encode_pa(&raw), true), Err(E));
}

#[test]
fn preferred_address_connection_id_length_bounds() {
    for len in [1u8, 20, 21, 255] {
        let mut raw = pa_bytes();
        raw.drain(24..33);
        raw.insert(24, len);
        for _ in 0..len {
            raw.insert(25, 0xcd);
        }
        let res = TransportParams::decode(&encode_pa(&raw), true);
        if len <= 20 {
            let pa = res.unwrap().preferred_address.unwrap();
            assert_eq!(pa.connection_id.len(), usize::from(len));
            assert_eq!(pa.stateless_reset_token, [0x5a; 16]);
        } else {
            assert_eq!(res, Err(E), "len {len}");
        }
    }
}

#[test]
fn preferred_address_trailing_or_missing_bytes_are_rejected() {
    let raw = pa_bytes();
    for cut in 0..raw.len() {
        let buf = encode_pa(&raw[..cut]);
        assert_eq!(TransportParams::decode(&buf, true), Err(E), "cut {cut}");
    }
    for extra in 1..4 {
        let mut long = raw.clone();
        long.extend(std::iter::repeat_n(0, extra));
        assert_eq!(TransportParams::decode(&encode_pa(&long), true), Err(E));
    }
    // A CID length that claims more bytes than the token leaves room for.
    let mut raw = pa_bytes();
    raw[24] = 9;
    assert_eq!(TransportParams::decode(&encode_pa(&raw), true), Err(E));
    raw[24] = 7;
    assert_eq!(TransportParams::decode(&encode_pa(&raw), true), Err(E));
}

#[test]
fn preferred_address_with_zero_length_server_cid_is_rejected() {
    let pa = encode_pa(&pa_bytes());
    let empty_scid = param(INITIAL_SOURCE_CONNECTION_ID, &[]);
    let buf = with(&[pa.clone(), empty_scid.clone()]);
    assert_eq!(TransportParams::decode(&buf, true), Err(E));
    let buf = with(&[empty_scid, pa.clone()]);
    assert_eq!(TransportParams::decode(&buf, true), Err(E));
    let buf = with(&[pa, param(INITIAL_SOURCE_CONNECTION_ID, &[1])]);
    assert!(TransportParams::decode(&buf, true).is_ok());
}

// ---- truncation and hostile input ----

#[test]
fn truncation_in_the_parameter_list_is_rejected() {
    // Id only; id and length only; value shorter than the length.
    assert_eq!(TransportParams::decode(&[0x04], false), Err(E));
    assert_eq!(TransportParams::decode(&[0x04, 0x02, 0x40], false), Err(E));
    assert_eq!(TransportParams::decode(&[0x40], false), Err(E));
    assert_eq!(TransportParams::decode(&[0x1b, 0x05, 1, 2], false), Err(E));
    // A length too large for the address space is also a truncation.
    let mut buf = vec![0x1b];
    buf.extend(varint(octets::MAX_VAR_INT));
    assert_eq!(TransportParams::decode(&buf, false), Err(E));
}

#[test]
fn every_prefix_of_a_valid_encoding() {
    for (tp, is_server) in [(full_server(), true), (full_client(), false)] {
        let buf = tp
            .encode_to_vec_with_grease(is_server, Some(&GreaseParam::new(58, &[1; 9]).unwrap()))
            .unwrap();
        // Parameter boundaries, found by walking the list.
        let mut boundaries = vec![0];
        let mut b = Octets::with_slice(&buf);
        while b.cap() > 0 {
            b.get_varint().unwrap();
            let len = b.get_varint().unwrap() as usize;
            b.skip(len).unwrap();
            boundaries.push(b.off());
        }
        for cut in 0..=buf.len() {
            let res = TransportParams::decode(&buf[..cut], is_server);
            if boundaries.contains(&cut) {
                assert!(res.is_ok(), "cut {cut}");
            } else {
                assert_eq!(res, Err(E), "cut {cut}");
            }
        }
    }
}

/// Decodes; on success re-encodes and checks the result decodes to the same parameters.
fn check_round_trip(buf: &[u8], is_server: bool) -> bool {
    match TransportParams::decode(buf, is_server) {
        Ok(tp) => {
            let again = tp.encode_to_vec(is_server).unwrap();
            assert_eq!(TransportParams::decode(&again, is_server), Ok(tp));
            true
        }
        Err(e) => {
            assert_eq!(e, E);
            assert_eq!(e.to_wire(), 0x8);
            false
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let len = rng.below(96) as usize;
        let buf = rng.bytes(len);
        check_round_trip(&buf, false);
        check_round_trip(&buf, true);
    }
}

#[test]
fn random_parameter_lists_never_panic() {
    // Well-formed (id, length, value) lists with IDs drawn mostly from the known ones, so
    // decoding gets past the framing and into the per-parameter checks.
    let mut rng = Rng(42);
    let known: Vec<u64> = every_known_param().iter().map(|p| p.0).collect();
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut buf = Vec::new();
        for _ in 0..rng.below(6) {
            let id = match rng.below(4) {
                0 => rng.below(64),
                1 => 31 * rng.below(1000) + 27,
                _ => known[rng.below(known.len() as u64) as usize],
            };
            let val = match rng.below(3) {
                0 => varint(rng.below(1 << 15)),
                1 => {
                    let len = rng.below(4) as usize;
                    rng.bytes(len)
                }
                _ => {
                    let len = rng.below(70) as usize;
                    rng.bytes(len)
                }
            };
            buf.extend(param(id, &val));
        }
        for is_server in [false, true] {
            accepted += usize::from(check_round_trip(&buf, is_server));
        }
    }
    // The generator must reach the success path too, or this test proves little.
    assert!(accepted > 1000, "accepted {accepted}");
}

#[test]
fn mutated_valid_encodings_never_panic() {
    let mut rng = Rng(7);
    let base = full_server().encode_to_vec(true).unwrap();
    for _ in 0..20_000 {
        let mut buf = base.clone();
        for _ in 0..=rng.below(3) {
            let i = rng.below(buf.len() as u64) as usize;
            buf[i] = rng.next() as u8;
        }
        check_round_trip(&buf, true);
        check_round_trip(&buf, false);
    }
}

// ---- GREASE and unknown parameters ----

#[test]
fn reserved_ids() {
    for n in [0u64, 1, 2, 100, 1 << 40] {
        assert!(is_reserved_id(31 * n + 27));
        assert!(!is_reserved_id(31 * n + 26));
        assert!(!is_reserved_id(31 * n + 28));
    }
    for id in 0..27 {
        assert!(!is_reserved_id(id));
    }
    assert!(!is_reserved_id(GREASE_QUIC_BIT));
    assert!(!is_reserved_id(MAX_DATAGRAM_FRAME_SIZE));
}

#[test]
fn grease_and_unknown_parameters_are_skipped() {
    let base = full_server().encode_to_vec(true).unwrap();
    let extras = [
        param(27, &[]),
        param(58, &[0xff; 40]),
        param(31 * 1_000_000 + 27, &[1, 2, 3]),
        param(0x15, &[0xde, 0xad]),
        param(0x21, &[]),
        param(0x2ab3, &[9; 3]),
        param(0xff73db, &[0x40]),
        param(octets::MAX_VAR_INT, &[7]),
    ];
    for extra in &extras {
        for buf in [
            with(&[extra.clone(), base.clone()]),
            with(&[base.clone(), extra.clone()]),
        ] {
            assert_eq!(TransportParams::decode(&buf, true), Ok(full_server()));
        }
    }
    let all = with(&extras);
    assert_eq!(
        TransportParams::decode(&all, false),
        Ok(TransportParams::default())
    );
}

#[test]
fn grease_param_is_sent_and_ignored() {
    let grease = GreaseParam::new(31 * 7 + 27, &[0xaa, 0xbb, 0xcc]).unwrap();
    let tp = full_client();
    let plain = tp.encode_to_vec(false).unwrap();
    let greased = tp.encode_to_vec_with_grease(false, Some(&grease)).unwrap();
    let mut expected = param(31 * 7 + 27, &[0xaa, 0xbb, 0xcc]);
    expected.extend(&plain);
    assert_eq!(greased, expected);
    assert_eq!(tp.encoded_len(false, Some(&grease)), Ok(greased.len()));
    assert_eq!(TransportParams::decode(&greased, false), Ok(tp));
}

#[test]
fn grease_param_constructor_checks() {
    assert_eq!(GreaseParam::new(26, &[]), Err(E));
    assert_eq!(GreaseParam::new(0x2ab2, &[]), Err(E));
    assert_eq!(GreaseParam::new(27, &[0; 17]), Err(E));
    // 31 * N + 27 above the varint range.
    let too_big = (octets::MAX_VAR_INT / 31 + 1) * 31 + 27;
    assert!(is_reserved_id(too_big));
    assert_eq!(GreaseParam::new(too_big, &[]), Err(E));
    let g = GreaseParam::new(27, &[5; 16]).unwrap();
    assert_eq!(g.id(), 27);
    assert_eq!(g.value(), &[5; 16]);
    let g = GreaseParam::new(58, &[]).unwrap();
    assert_eq!(g.value(), &[] as &[u8]);
}

#[test]
fn grease_param_from_random() {
    let mut rng = Rng(99);
    let mut lens = [false; 14];
    for _ in 0..2000 {
        let mut r = [0u8; 16];
        r.iter_mut().for_each(|b| *b = rng.next() as u8);
        let g = GreaseParam::from_random(&r);
        assert!(is_reserved_id(g.id()));
        assert!(g.id() <= 31 * 65535 + 27);
        assert!(g.value().len() <= 13);
        assert_eq!(g.value(), &r[3..3 + g.value().len()]);
        lens[g.value().len()] = true;
        let buf = full_client()
            .encode_to_vec_with_grease(false, Some(&g))
            .unwrap();
        assert_eq!(TransportParams::decode(&buf, false), Ok(full_client()));
    }
    assert!(lens.iter().all(|&seen| seen));
    let fixed = GreaseParam::from_random(&[0, 2, 3, 9, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(fixed.id(), 31 * 2 + 27);
    assert_eq!(fixed.value(), &[9, 8, 7]);
}

// ---- encoding errors ----

#[test]
fn encoding_into_a_short_buffer_fails() {
    let grease = GreaseParam::new(27, &[1, 2]).unwrap();
    for (tp, is_server) in [(full_server(), true), (full_client(), false)] {
        let need = tp.encoded_len(is_server, Some(&grease)).unwrap();
        let mut out = vec![0; need + 10];
        for short in 0..need {
            assert_eq!(
                tp.encode_with_grease(is_server, Some(&grease), &mut out[..short]),
                Err(Error::BufferTooShort),
                "len {short}"
            );
        }
        assert_eq!(
            tp.encode_with_grease(is_server, Some(&grease), &mut out),
            Ok(need)
        );
        let exact = &mut vec![0; need][..];
        assert_eq!(
            tp.encode_with_grease(is_server, Some(&grease), exact),
            Ok(need)
        );
        assert_eq!(&out[..need], exact);
    }
    let mut empty = [];
    assert_eq!(
        full_client().encode(false, &mut empty),
        Err(Error::BufferTooShort)
    );
    assert_eq!(TransportParams::default().encode(false, &mut empty), Ok(0));
}

#[test]
fn encoding_invalid_values_fails() {
    let cases: Vec<fn(&mut TransportParams)> = vec![
        |tp| tp.max_udp_payload_size = 1199,
        |tp| tp.ack_delay_exponent = 21,
        |tp| tp.max_ack_delay = 1 << 14,
        |tp| tp.active_conn_id_limit = 1,
        |tp| tp.initial_max_streams_bidi = (1 << 60) + 1,
        |tp| tp.initial_max_streams_uni = (1 << 60) + 1,
        |tp| tp.initial_max_data = octets::MAX_VAR_INT + 1,
        |tp| tp.max_idle_timeout = u64::MAX,
        |tp| tp.max_datagram_frame_size = Some(u64::MAX),
        |tp| tp.min_ack_delay = Some(tp.max_ack_delay * 1000 + 1),
        |tp| tp.initial_source_connection_id = Some(cid(&[0; 21])),
        |tp| tp.original_destination_connection_id = Some(cid(&[0; 300])),
        |tp| tp.preferred_address.as_mut().unwrap().connection_id = cid(&[]),
        |tp| tp.preferred_address.as_mut().unwrap().connection_id = cid(&[1; 21]),
        |tp| tp.initial_source_connection_id = Some(cid(&[])),
    ];
    for (i, mutate) in cases.into_iter().enumerate() {
        let mut tp = full_server();
        mutate(&mut tp);
        let mut out = [0; 512];
        assert_eq!(tp.encode(true, &mut out), Err(E), "case {i}");
        assert_eq!(tp.encode_to_vec(true), Err(E), "case {i}");
        assert_eq!(tp.encoded_len(true, None), Err(E), "case {i}");
        assert_eq!(tp.validate(true), Err(E), "case {i}");
    }
}

#[test]
fn client_encoding_ignores_server_only_preferred_address_shape() {
    // The preferred address is never sent by a client, so its shape does not matter there.
    let mut tp = full_server();
    tp.preferred_address.as_mut().unwrap().connection_id = cid(&[]);
    assert_eq!(tp.encode_to_vec(false), full_client().encode_to_vec(false));
}

// ---- connection ID authentication (RFC 9000 §7.3) ----

#[test]
fn validate_connection_ids_of_a_server() {
    let tp = full_server();
    let odcid = [1, 2, 3, 4, 5, 6, 7, 8];
    let iscid = [9; 20];
    let rscid = [7; 5];
    let ok = ExpectedCids {
        initial_source: &iscid,
        original_destination: Some(&odcid),
        retry_source: Some(&rscid),
    };
    assert_eq!(tp.validate_connection_ids(&ok), Ok(()));
    let wrong_iscid = ExpectedCids {
        initial_source: &[9; 19],
        ..ok
    };
    assert_eq!(tp.validate_connection_ids(&wrong_iscid), Err(E));
    let wrong_odcid = ExpectedCids {
        original_destination: Some(&[1, 2, 3]),
        ..ok
    };
    assert_eq!(tp.validate_connection_ids(&wrong_odcid), Err(E));
    let no_retry = ExpectedCids {
        retry_source: None,
        ..ok
    };
    assert_eq!(tp.validate_connection_ids(&no_retry), Err(E));
    let wrong_retry = ExpectedCids {
        retry_source: Some(&[7; 4]),
        ..ok
    };
    assert_eq!(tp.validate_connection_ids(&wrong_retry), Err(E));

    let mut missing = tp.clone();
    missing.retry_source_connection_id = None;
    assert_eq!(missing.validate_connection_ids(&no_retry), Ok(()));
    assert_eq!(missing.validate_connection_ids(&ok), Err(E));
    missing.original_destination_connection_id = None;
    assert_eq!(missing.validate_connection_ids(&no_retry), Err(E));
    let mut missing = tp;
    missing.initial_source_connection_id = None;
    assert_eq!(missing.validate_connection_ids(&ok), Err(E));
}

#[test]
fn validate_connection_ids_of_a_client() {
    let tp = full_client();
    let expected = ExpectedCids {
        initial_source: &[9; 20],
        original_destination: None,
        retry_source: None,
    };
    assert_eq!(tp.validate_connection_ids(&expected), Ok(()));
    let mut empty = tp.clone();
    empty.initial_source_connection_id = Some(cid(&[]));
    let zero_len = ExpectedCids {
        initial_source: &[],
        ..expected
    };
    assert_eq!(empty.validate_connection_ids(&zero_len), Ok(()));
    assert_eq!(empty.validate_connection_ids(&expected), Err(E));
    let mut absent = tp;
    absent.initial_source_connection_id = None;
    assert_eq!(absent.validate_connection_ids(&zero_len), Err(E));
}
