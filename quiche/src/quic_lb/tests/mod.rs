//! QUIC-LB: the draft's test vectors, round trips over every permitted length, hostile input,
//! the generator's rotation and fallbacks. Routing real connections is in `tests_routing`.

use super::*;

mod routing;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const VECTOR_KEY: &str = "8f95f09245765f80256934e50c66207f";

fn key(s: &str) -> [u8; KEY_LEN] {
    hex(s).try_into().unwrap()
}

/// Encodes with the length self-described (as every vector of Appendix B is) and checks the
/// result, then decodes it back to the server ID and the nonce.
fn check_vector(cr: u8, sid: &str, nonce: &str, cid: &str, k: Option<&str>) {
    let (sid, nonce, expected) = (hex(sid), hex(nonce), hex(cid));
    let k = k.map(key);
    let mut config = LbConfig::new(cr, sid.len(), nonce.len(), k.as_ref()).unwrap();
    config.set_encode_length(true);
    let mut out = vec![0u8; config.cid_len()];
    config.encode(&sid, &nonce, 0, &mut out).unwrap();
    assert_eq!(out, expected, "cr {cr}");
    assert_eq!(config.decode_server_id(&out).unwrap().as_bytes(), &sid[..]);
    let mut got_nonce = vec![0u8; nonce.len()];
    assert_eq!(
        config.decode(&out, &mut got_nonce).unwrap().as_bytes(),
        &sid[..]
    );
    assert_eq!(got_nonce, nonce);
}

#[test]
fn unencrypted_vectors() {
    check_vector(0, "c4605e", "4504cc4f", "07c4605e4504cc4f", None);
    // The draft prints this nonce as "3487d970b" and the ID as "20a350d28b4203487d970b": hex
    // bytes with their leading zeros dropped. With the zeros back (nonce 34 87 d9 70 0b, first
    // octet 0x2a: rotation 1, 10 bytes follow) the row is consistent.
    check_vector(
        1,
        "350d28b420",
        "3487d9700b",
        "2a350d28b4203487d9700b",
        None,
    );
}

#[test]
fn encrypted_vectors() {
    let k = Some(VECTOR_KEY);
    // 7 bytes: four-pass, odd length (the halves share a byte).
    check_vector(0, "ed793a", "ee080dbf", "0720b1d07b359d3c", k);
    // 15 bytes, server ID longer than the nonce: decoding needs the fourth pass.
    check_vector(
        1,
        "ed793a51d49b8f5fab65",
        "ee080dbf48",
        "2fcc381bc74cb4fbad2823a3d1f8fed2",
        k,
    );
    // 16 bytes: the single-pass special case.
    check_vector(
        2,
        "ed793a51d49b8f5f",
        "ee080dbf48c0d1e5",
        "504dd2d05a7b0de9b2b9907afb5ecf8cc3",
        k,
    );
    // 18 bytes. The draft prints the first octet as 0x12, which says rotation 0, not the row's
    // 3; (3 << 5) | 18 is 0x72. The 18 encrypted bytes are the draft's.
    check_vector(
        3,
        "ed793a51d49b8f5fab",
        "ee080dbf48c0d1e55d",
        "725779c9cc86beb3a3a4a3ca96fce4bfe0cdbc",
        k,
    );
}

#[test]
fn encryption_example_of_section_5_4_2_4() {
    check_vector(
        0,
        "31441a",
        "9c69c275",
        "0767947d29be054a",
        Some("fdf726a9893ec05c0632d3956680baf0"),
    );
}

#[test]
fn feistel_intermediate_values_match_the_example() {
    // Step 3 of §5.4.2.4: one round on left_0 gives the printed AES output's first half.
    let k = key("fdf726a9893ec05c0632d3956680baf0");
    let aes = Aes128::new(&GenericArray::from(k));
    let mut right = hex("0c69c275");
    feistel_round(&aes, 7, 1, &hex("31441a90"), &mut right);
    // right_1 before its first nibble is cleared.
    assert_eq!(right, hex("ae3c1ff9"));
}

#[test]
fn every_length_round_trips_with_and_without_key() {
    let k = key(VECTOR_KEY);
    for n in 5..=MAX_PLAINTEXT_LEN {
        for sid_len in 1..=n - MIN_NONCE_LEN {
            for keyed in [false, true] {
                let config =
                    LbConfig::new((n % 7) as u8, sid_len, n - sid_len, keyed.then_some(&k))
                        .unwrap();
                let sid: Vec<u8> = (0..sid_len as u8).map(|i| 0xa0 ^ i).collect();
                let nonce: Vec<u8> = (0..(n - sid_len) as u8).map(|i| 0x3c ^ i).collect();
                let mut cid = [0x55u8; 20];
                config.encode(&sid, &nonce, 0x1b, &mut cid).unwrap();
                // Random low bits are kept; the bytes after the ID are untouched.
                assert_eq!(cid[0], ((n % 7) as u8) << 5 | 0x1b);
                assert!(cid[config.cid_len()..].iter().all(|&b| b == 0x55));
                if keyed {
                    assert_ne!(&cid[1..1 + sid_len], &sid[..], "n {n} sid {sid_len}");
                }
                assert_eq!(config.decode_server_id(&cid).unwrap().as_bytes(), &sid[..]);
                let mut got = vec![0u8; nonce.len()];
                assert_eq!(config.decode(&cid, &mut got).unwrap().as_bytes(), &sid[..]);
                assert_eq!(got, nonce, "n {n} sid {sid_len} keyed {keyed}");
            }
        }
    }
}

#[test]
fn configurations_the_draft_forbids_are_refused() {
    assert!(LbConfig::new(7, 3, 4, None).is_err());
    assert!(LbConfig::new(0, 0, 4, None).is_err());
    assert!(LbConfig::new(0, 3, 3, None).is_err());
    assert!(LbConfig::new(0, 10, 10, None).is_err());
    assert!(LbConfig::new(6, 15, 4, None).is_ok());
    let config = LbConfig::new(0, 3, 4, None).unwrap();
    let mut cid = [0u8; 8];
    assert!(config.encode(&[1, 2], &[0; 4], 0, &mut cid).is_err());
    assert!(config.encode(&[1, 2, 3], &[0; 5], 0, &mut cid).is_err());
    assert!(config
        .encode(&[1, 2, 3], &[0; 4], 0, &mut cid[..7])
        .is_err());
}

#[test]
fn hostile_ids_are_unroutable_never_a_panic() {
    let k = key(VECTOR_KEY);
    let mut lb = QuicLbDecoder::new();
    lb.add_config(LbConfig::new(0, 3, 4, Some(&k)).unwrap());
    lb.add_config(LbConfig::new(2, 8, 8, Some(&k)).unwrap());
    // Empty, short for its configuration, unknown rotation, the reserved 0b111.
    assert_eq!(lb.server_id(&[]), None);
    assert_eq!(lb.server_id(&[0x07, 1, 2, 3, 4, 5, 6]), None);
    assert_eq!(lb.server_id(&[0x20, 1, 2, 3, 4, 5, 6, 7, 8]), None);
    assert_eq!(lb.server_id(&[0xe7; 20]), None);
    assert_eq!(lb.server_id(&[0x40; 16]), None);
    assert!(lb.server_id(&[0x40; 17]).is_some());
    // Datagrams: truncated long headers, DCID lengths beyond the datagram, empty.
    assert_eq!(lb.route_datagram(&[]), None);
    assert_eq!(lb.route_datagram(&[0xc0, 0, 0, 0, 1]), None);
    assert_eq!(lb.route_datagram(&[0xc0, 0, 0, 0, 1, 20, 0x07]), None);
    assert_eq!(lb.route_datagram(&[0x40]), None);
    assert_eq!(lb.route_datagram(&[0x40, 0x07, 1, 2]), None);
    // Every short input of every first byte: decoding is total.
    let mut rng = crate::testing::Rng(7);
    for len in 0..40 {
        for _ in 0..200 {
            let d = rng.bytes(len);
            let _ = lb.route_datagram(&d);
            let _ = lb.server_id(&d);
        }
    }
    // Removing a configuration makes its IDs unroutable.
    let mut cid = [0u8; 8];
    LbConfig::new(0, 3, 4, Some(&k))
        .unwrap()
        .encode(&[9, 9, 9], &[1, 2, 3, 4], 0, &mut cid)
        .unwrap();
    assert_eq!(lb.server_id(&cid).unwrap().as_bytes(), &[9, 9, 9]);
    lb.remove_config(0);
    assert_eq!(lb.server_id(&cid), None);
}

#[test]
fn generator_encodes_its_server_id_with_unique_nonces() {
    let k = key(VECTOR_KEY);
    let config = LbConfig::new(1, 2, 6, Some(&k)).unwrap();
    let g = QuicLbGenerator::new(config.clone(), &[0xbe, 0xef]).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..1000 {
        // Longer than the configuration: the extra bytes are the server's.
        let mut cid = [0u8; 16];
        g.generate(&mut cid).unwrap();
        assert_eq!(cid[0] >> 5, 1);
        assert_eq!(
            config.decode_server_id(&cid).unwrap().as_bytes(),
            &[0xbe, 0xef]
        );
        let mut nonce = [0u8; 6];
        config.decode(&cid, &mut nonce).unwrap();
        assert!(seen.insert(nonce), "nonce repeated");
    }
    // Wrong server ID length.
    assert!(QuicLbGenerator::new(config, &[1]).is_err());
}

#[test]
fn generator_rotation_and_fallbacks() {
    let k = key(VECTOR_KEY);
    let old = LbConfig::new(1, 2, 6, Some(&k)).unwrap();
    let new = LbConfig::new(2, 3, 12, None).unwrap();
    let mut lb = QuicLbDecoder::new();
    lb.add_config(old.clone());
    lb.add_config(new.clone());
    let g = QuicLbGenerator::new(old, &[1, 2]).unwrap();
    let mut cid = [0u8; 16];
    g.generate(&mut cid).unwrap();
    assert_eq!(lb.server_id(&cid).unwrap().as_bytes(), &[1, 2]);

    // After a rotation, new IDs use the new codepoint and server ID; the old ones still route
    // while the load balancer keeps the old configuration.
    let before = cid;
    g.rotate(new, &[7, 8, 9]).unwrap();
    assert_eq!(g.config_id(), Some(2));
    g.generate(&mut cid).unwrap();
    assert_eq!(cid[0] >> 5, 2);
    assert_eq!(lb.server_id(&cid).unwrap().as_bytes(), &[7, 8, 9]);
    assert_eq!(lb.server_id(&before).unwrap().as_bytes(), &[1, 2]);

    // An ID too short for the configuration (16 > 8) is unroutable, length self-encoded.
    let mut short = [0u8; 8];
    g.generate(&mut short).unwrap();
    assert_eq!(short[0], 0xe0 | 7);
    assert_eq!(lb.server_id(&short), None);

    // Without a configuration, every ID is unroutable.
    g.clear_config();
    g.generate(&mut cid).unwrap();
    assert_eq!(cid[0], 0xe0 | 15);
    assert_eq!(lb.server_id(&cid), None);
}

#[test]
fn generator_stops_before_reusing_a_nonce() {
    let k = key(VECTOR_KEY);
    let config = LbConfig::new(0, 1, 4, Some(&k)).unwrap();
    let g = QuicLbGenerator::new(config.clone(), &[5]).unwrap();
    // Put the counter just before its random start: two more IDs use the last two nonces.
    let start = g.lock().nonce_start;
    let mut before = [start[0], start[1], start[2], start[3]];
    let v = u32::from_be_bytes(before).wrapping_sub(2);
    before = v.to_be_bytes();
    g.set_nonce_for_test(&before);
    let mut cid = [0u8; 8];
    g.generate(&mut cid).unwrap();
    assert_eq!(config.decode_server_id(&cid).unwrap().as_bytes(), &[5]);
    g.generate(&mut cid).unwrap();
    assert_eq!(config.decode_server_id(&cid).unwrap().as_bytes(), &[5]);
    // The space is used up: the next ID is unroutable rather than a repeat.
    g.generate(&mut cid).unwrap();
    assert_eq!(cid[0] >> 5, UNROUTABLE_CONFIG_ID);
}
