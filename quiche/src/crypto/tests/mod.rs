use super::*;

/// Decodes hex, ignoring whitespace, as the RFCs print it.
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => panic!("not a hex digit: {}", b as char),
        })
        .collect();
    assert!(digits.len() % 2 == 0, "odd number of hex digits");
    digits.chunks(2).map(|d| (d[0] << 4) | d[1]).collect()
}

/// The Destination Connection ID of RFC 9001 Appendix A.
pub(crate) const RFC_DCID: &str = "8394c8f03e515708";

fn expand(secret: &[u8], alg: Algorithm, label: &[u8], len: usize) -> Vec<u8> {
    let prk = hkdf::Prk::new_less_safe(alg.hkdf(), secret);
    let mut out = vec![0; len];
    hkdf_expand_label(&prk, label, &mut out).unwrap();
    out
}

#[test]
fn hex_helper_ignores_whitespace() {
    assert_eq!(hex("00 ff\n  1a"), vec![0x00, 0xff, 0x1a]);
    assert_eq!(hex(""), Vec::<u8>::new());
}

#[test]
fn rfc9001_a1_initial_secrets() {
    let (client, server) = initial_secrets(&hex(RFC_DCID)).unwrap();
    assert_eq!(
        client.to_vec(),
        hex("c00cf151ca5be075ed0ebfb5c80323c4 2d6b7db67881289af4008f1f6c357aea")
    );
    assert_eq!(
        server.to_vec(),
        hex("3c199828fd139efd216c155ad844cc81 fb82fa8d7446fa7d78be803acdda951b")
    );

    // The same secrets from the initial secret the RFC prints.
    let initial = hex("7db5df06e7a69e432496adedb0085192 3595221596ae2ae9fb8115c1e9ed0a44");
    let aes = Algorithm::Aes128Gcm;
    assert_eq!(expand(&initial, aes, b"client in", 32), client.to_vec());
    assert_eq!(expand(&initial, aes, b"server in", 32), server.to_vec());
}

#[test]
fn rfc9001_a1_initial_key_material() {
    let (client, server) = initial_secrets(&hex(RFC_DCID)).unwrap();
    let aes = Algorithm::Aes128Gcm;

    assert_eq!(
        expand(&client, aes, b"quic key", aes.key_len()),
        hex("1f369613dd76d5467730efcbe3b1a22d")
    );
    assert_eq!(
        expand(&client, aes, b"quic iv", aes.iv_len()),
        hex("fa044b2f42a3fd3b46fb255c")
    );
    assert_eq!(
        expand(&client, aes, b"quic hp", aes.hp_key_len()),
        hex("9f50449e04a0e810283a1e9933adedd2")
    );

    assert_eq!(
        expand(&server, aes, b"quic key", aes.key_len()),
        hex("cf3a5331653c364c88f0f379b6067e37")
    );
    assert_eq!(
        expand(&server, aes, b"quic iv", aes.iv_len()),
        hex("0ac1493ca1905853b0bba03e")
    );
    assert_eq!(
        expand(&server, aes, b"quic hp", aes.hp_key_len()),
        hex("c206b8d9b9f0f37644430b490eeaa314")
    );
}

#[test]
fn rfc9001_a5_chacha20_key_material() {
    let secret = hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b");
    let alg = Algorithm::ChaCha20Poly1305;

    assert_eq!(
        expand(&secret, alg, b"quic key", alg.key_len()),
        hex("c6d98ff3441c3fe1b2182094f69caa2e d4b716b65488960a7a984979fb23e1c8")
    );
    assert_eq!(
        expand(&secret, alg, b"quic iv", alg.iv_len()),
        hex("e0459b3474bdd0e44a41c144")
    );
    assert_eq!(
        expand(&secret, alg, b"quic hp", alg.hp_key_len()),
        hex("25a282b9e82f06f21f488917a4fc8f1b 73573685608597d0efcb076b0ab7a7a4")
    );

    let mut ku = [0; 32];
    next_secret(alg, &secret, &mut ku).unwrap();
    assert_eq!(
        ku.to_vec(),
        hex("1223504755036d556342ee9361d25342 1a826c9ecdf3c7148684b36b714881f9")
    );
    assert_eq!(
        next_secret(alg, &secret, &mut [0; 48]),
        Err(Error::CryptoFail)
    );
}

#[test]
fn rfc9001_a5_nonce() {
    let secret = hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b");
    let key = PacketKey::from_secret(Algorithm::ChaCha20Poly1305, &secret).unwrap();
    let nonce = key.nonce_for_test(654360564);
    assert_eq!(nonce.to_vec(), hex("e0459b3474bdd0e46d417eb0"));
}

#[test]
fn rfc9001_a2_header_protection_mask() {
    use rustls::quic::HeaderProtectionKey as _;

    let (client, _) = initial_secrets(&hex(RFC_DCID)).unwrap();
    let hp = HeaderProtectionKey::from_secret(Algorithm::Aes128Gcm, &client).unwrap();
    assert_eq!(hp.sample_len(), 16);

    let sample = hex("d1b1c98dd7689fb8ec11d242b123dc9b");
    let mut first = 0xc3;
    let mut pn = [0, 0, 0, 2];
    hp.encrypt_in_place(&sample, &mut first, &mut pn).unwrap();
    assert_eq!(first, 0xc0);
    assert_eq!(pn.to_vec(), hex("7b9aec34"));

    hp.decrypt_in_place(&sample, &mut first, &mut pn).unwrap();
    assert_eq!((first, pn), (0xc3, [0, 0, 0, 2]));
}

#[test]
fn header_protection_masks_only_the_encoded_packet_number() {
    use rustls::quic::HeaderProtectionKey as _;

    let (client, _) = initial_secrets(&hex(RFC_DCID)).unwrap();
    let hp = HeaderProtectionKey::from_secret(Algorithm::Aes128Gcm, &client).unwrap();
    let sample = [0x55; 16];

    // A 1-byte packet number in a short header: 5 bits of the first byte and 1 PN byte change,
    // the other 3 bytes (payload) stay.
    let mut first = 0x40;
    let mut pn = [7, 8, 9, 10];
    hp.encrypt_in_place(&sample, &mut first, &mut pn).unwrap();
    assert_eq!(first & 0xe0, 0x40);
    assert_eq!(&pn[1..], &[8, 9, 10]);
    hp.decrypt_in_place(&sample, &mut first, &mut pn).unwrap();
    assert_eq!((first, pn), (0x40, [7, 8, 9, 10]));

    // Invalid inputs leave everything untouched.
    let (mut first, mut pn) = (0xc3, [1, 2, 3, 4, 5]);
    assert!(hp.encrypt_in_place(&sample, &mut first, &mut pn).is_err());
    assert!(hp
        .decrypt_in_place(&sample[..15], &mut first, &mut pn[..4])
        .is_err());
    assert!(hp
        .decrypt_in_place(&[0; 17], &mut first, &mut pn[..4])
        .is_err());
    assert_eq!((first, pn), (0xc3, [1, 2, 3, 4, 5]));
}

#[test]
fn packet_keys_seal_and_open_in_place() {
    use rustls::quic::PacketKey as _;

    for alg in [
        Algorithm::Aes128Gcm,
        Algorithm::Aes256Gcm,
        Algorithm::ChaCha20Poly1305,
    ] {
        let secret = vec![0x42; alg.secret_len()];
        let key = PacketKey::from_secret(alg, &secret).unwrap();
        assert_eq!(key.algorithm(), alg);
        assert_eq!(key.tag_len(), 16);
        assert_eq!(key.confidentiality_limit(), alg.confidentiality_limit());
        assert_eq!(key.integrity_limit(), alg.integrity_limit());

        let header = [0x40, 1, 2, 3];
        let mut buf = *b"hello, quic world\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
        let (payload, tag_room) = buf.split_at_mut(17);
        let tag = key.encrypt_in_place(7, &header, payload).unwrap();
        tag_room.copy_from_slice(tag.as_ref());
        assert_ne!(&buf[..17], b"hello, quic world");

        // Wrong packet number, wrong header, or a corrupted byte: all fail.
        assert!(key.decrypt_in_place(8, &header, &mut buf.clone()).is_err());
        assert!(key
            .decrypt_in_place(7, &[0x41, 1, 2, 3], &mut buf.clone())
            .is_err());
        let mut corrupt = buf;
        corrupt[20] ^= 1;
        assert!(key.decrypt_in_place(7, &header, &mut corrupt).is_err());
        // Shorter than a tag.
        assert!(key.decrypt_in_place(7, &header, &mut [0; 15]).is_err());

        let plain = key.decrypt_in_place(7, &header, &mut buf).unwrap();
        assert_eq!(plain, b"hello, quic world");
    }
}

#[test]
fn limits_follow_rfc9001_section_6_6() {
    assert_eq!(Algorithm::Aes128Gcm.confidentiality_limit(), 1 << 23);
    assert_eq!(Algorithm::Aes256Gcm.confidentiality_limit(), 1 << 23);
    assert!(Algorithm::ChaCha20Poly1305.confidentiality_limit() >= 1 << 62);
    assert_eq!(Algorithm::Aes128Gcm.integrity_limit(), 1 << 52);
    assert_eq!(Algorithm::Aes256Gcm.integrity_limit(), 1 << 52);
    assert_eq!(Algorithm::ChaCha20Poly1305.integrity_limit(), 1 << 36);
}

#[test]
fn algorithm_lengths_and_suites() {
    use rustls::CipherSuite;

    let aes128 = Algorithm::from_cipher_suite(CipherSuite::TLS13_AES_128_GCM_SHA256).unwrap();
    let aes256 = Algorithm::from_cipher_suite(CipherSuite::TLS13_AES_256_GCM_SHA384).unwrap();
    let chacha = Algorithm::from_cipher_suite(CipherSuite::TLS13_CHACHA20_POLY1305_SHA256).unwrap();
    assert_eq!(
        (aes128, aes256, chacha),
        (
            Algorithm::Aes128Gcm,
            Algorithm::Aes256Gcm,
            Algorithm::ChaCha20Poly1305
        )
    );
    assert_eq!(
        Algorithm::from_cipher_suite(CipherSuite::TLS13_AES_128_CCM_SHA256),
        None
    );

    assert_eq!(
        (aes128.key_len(), aes128.iv_len(), aes128.hp_key_len()),
        (16, 12, 16)
    );
    assert_eq!(
        (aes256.key_len(), aes256.iv_len(), aes256.hp_key_len()),
        (32, 12, 32)
    );
    assert_eq!(
        (chacha.key_len(), chacha.iv_len(), chacha.hp_key_len()),
        (32, 12, 32)
    );
    assert_eq!((aes128.secret_len(), aes256.secret_len()), (32, 48));
}

#[test]
fn wrong_key_material_is_an_error() {
    let aes = Algorithm::Aes128Gcm;
    assert_eq!(
        PacketKey::new(aes, &[0; 15], &[0; 12]).err(),
        Some(Error::CryptoFail)
    );
    assert_eq!(
        PacketKey::new(aes, &[0; 16], &[0; 11]).err(),
        Some(Error::CryptoFail)
    );
    assert_eq!(
        HeaderProtectionKey::new(aes, &[0; 32]).err(),
        Some(Error::CryptoFail)
    );
    assert!(PacketKey::new(aes, &[0; 16], &[0; 12]).is_ok());
    assert!(HeaderProtectionKey::new(Algorithm::ChaCha20Poly1305, &[0; 32]).is_ok());

    // HKDF-Expand-Label cannot express more than 2^16 - 1 bytes or a label over 249 bytes.
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &[0; 32]);
    assert_eq!(
        hkdf_expand_label(&prk, &[b'a'; 250], &mut [0; 16]),
        Err(Error::CryptoFail)
    );
    assert!(hkdf_expand_label(&prk, &[b'a'; 249], &mut [0; 16]).is_ok());
    assert_eq!(
        hkdf_expand_label(&prk, b"x", &mut [0; 255 * 32 + 1]),
        Err(Error::CryptoFail)
    );
}

/// rustls's own Initial keys, to check that ours interoperate with them.
fn rustls_initial_keys(dcid: &[u8], side: rustls::Side) -> rustls::quic::Keys {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .unwrap()
        .quic_suite()
        .unwrap();
    suite.keys(dcid, side, rustls::quic::Version::V1)
}

#[test]
fn initial_keys_interoperate_with_rustls() {
    let dcid = hex(RFC_DCID);
    let (client_open, client_seal) = initial_keys(&dcid, false).unwrap();
    let (server_open, server_seal) = initial_keys(&dcid, true).unwrap();
    let theirs_client = rustls_initial_keys(&dcid, rustls::Side::Client);
    let theirs_server = rustls_initial_keys(&dcid, rustls::Side::Server);

    let pairs: [(&DirectionalKeys, &DirectionalKeys); 4] = [
        (&client_seal, &theirs_server.remote),
        (&theirs_client.local, &server_open),
        (&server_seal, &theirs_client.remote),
        (&theirs_server.local, &client_open),
    ];

    let header = [0xc3, 0, 0, 0, 1, 0, 0, 0, 0, 9];
    for (i, (seal, open)) in pairs.iter().enumerate() {
        let mut buf = [0u8; 64];
        for (j, b) in buf.iter_mut().enumerate() {
            *b = (i * 64 + j) as u8;
        }
        let plain = buf;
        let (payload, tag_room) = buf.split_at_mut(48);
        let tag = seal.packet.encrypt_in_place(9, &header, payload).unwrap();
        tag_room.copy_from_slice(tag.as_ref());
        let opened = open.packet.decrypt_in_place(9, &header, &mut buf).unwrap();
        assert_eq!(opened, &plain[..48], "pair {i}");

        // Header protection: same mask on both sides, for long and short headers.
        let sample = [i as u8; 16];
        for first in [0xc3u8, 0x41] {
            let (mut f, mut pn) = (first, [1, 2, 3, 4]);
            seal.header
                .encrypt_in_place(&sample, &mut f, &mut pn)
                .unwrap();
            open.header
                .decrypt_in_place(&sample, &mut f, &mut pn)
                .unwrap();
            assert_eq!((f, pn), (first, [1, 2, 3, 4]), "pair {i}");
        }
    }
}
