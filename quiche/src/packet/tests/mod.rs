//! Packet protection against RFC 9001 Appendix A, and robustness on hostile input. QUIC v2's
//! vectors (RFC 9369 Appendix A) are in `v2.rs`.

mod v2;

use super::*;
use crate::crypto::tests::{hex, RFC_DCID};
use crate::crypto::{derive_keys, initial_keys, Algorithm, DirectionalKeys};
use crate::error::Error;
use crate::testing::Rng;

/// The CRYPTO frame of the client Initial in RFC 9001 Appendix A.2.
pub(super) const A2_CRYPTO_FRAME: &str = "
    060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868
    04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578
    616d706c652e636f6dff01000100000a 00080006001d00170018001000070005
    04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
    baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400
    0d0010000e0403050306030203080408 050806002d00020101001c0002400100
    3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
    75300901100f088394c8f03e51570806 048000ffff";

/// The protected client Initial of RFC 9001 Appendix A.2.
const A2_PACKET: &str = "
    c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11
    d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
    1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c
    8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
    30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5
    457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
    4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec
    4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
    485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db
    059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
    7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8
    9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
    be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74
    68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
    c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00
    f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
    291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964
    25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
    14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff
    ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
    e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd
    c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
    203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f
    cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
    fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade
    a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
    90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2
    162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
    40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0
    6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
    8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0
    be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
    54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab
    760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
    f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4
    056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
    7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241
    e221af44860018ab0856972e194cd934";

/// The payload of the server Initial of RFC 9001 Appendix A.3.
pub(super) const A3_PAYLOAD: &str = "
    02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
    88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94
    0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00
    020304";

/// The protected server Initial of RFC 9001 Appendix A.3.
const A3_PACKET: &str = "
    cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a
    5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
    dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84
    022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
    2158407dd074ee";

/// The Retry of RFC 9001 Appendix A.4.
const A4_RETRY: &str = "
    ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f
    0f2496ba";

/// The server's 1-RTT secret of RFC 9001 Appendix A.5.
const A5_SECRET: &str = "9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b";

/// The protected short header packet of RFC 9001 Appendix A.5.
const A5_PACKET: &str = "4cfe4189655e5cd55c41f69080575d7999c25a5bfb";

/// The server connection ID of RFC 9001 Appendix A.3 and A.4.
pub(super) const SERVER_CID: &str = "f067a5502a4262b5";

/// Builds a protected packet: `hdr` (with its packet number fields set), then `payload`
/// padded with zeros (PADDING frames) to `padded_len`.
pub(super) fn seal(
    hdr: &Header,
    payload: &[u8],
    padded_len: usize,
    keys: &DirectionalKeys,
) -> Vec<u8> {
    let mut buf = vec![0; 1500];
    let mut out = octets::OctetsMut::with_slice(&mut buf);
    let pn_offset = hdr.to_bytes(&mut out).unwrap();
    let hdr_len = out.off();
    buf[hdr_len..hdr_len + payload.len()].copy_from_slice(payload);

    let len = encrypt_pkt(
        &mut buf,
        hdr.pkt_num,
        pn_offset,
        hdr.pkt_num_len,
        padded_len.max(payload.len()),
        &*keys.header,
        &*keys.packet,
    )
    .unwrap();
    buf.truncate(len);
    buf
}

/// Parses, unprotects and decrypts the packet at the start of `buf`.
fn open(
    buf: &mut [u8],
    dcid_len: usize,
    keys: &DirectionalKeys,
    largest_pn: u64,
) -> crate::Result<(HeaderLayout, Span)> {
    let mut hdr = HeaderLayout::parse(buf, dcid_len)?;
    decrypt_hdr(buf, &mut hdr, &*keys.header, largest_pn)?;
    let payload = decrypt_pkt(buf, &hdr, &*keys.packet)?;
    Ok((hdr, payload))
}

fn client_initial_header(dcid: &[u8]) -> Header<'_> {
    let mut hdr = Header::new_long(
        Type::Initial,
        QUIC_V1,
        ConnectionId::from_ref(dcid),
        ConnectionId::default(),
        None,
    );
    hdr.pkt_num = 2;
    hdr.pkt_num_len = 4;
    hdr
}

fn a2_payload() -> Vec<u8> {
    let mut payload = hex(A2_CRYPTO_FRAME);
    payload.resize(1162, 0);
    payload
}

#[test]
fn rfc9001_a2_client_initial() {
    let dcid = hex(RFC_DCID);
    let (_, client_seal) = initial_keys(&dcid, false).unwrap();
    let hdr = client_initial_header(&dcid);

    let pkt = seal(&hdr, &hex(A2_CRYPTO_FRAME), 1162, &client_seal);
    assert_eq!(pkt.len(), 1200);
    assert_eq!(pkt, hex(A2_PACKET));

    let (server_open, _) = initial_keys(&dcid, true).unwrap();
    let mut buf = pkt;
    let (hdr, payload) = open(&mut buf, 0, &server_open, 0).unwrap();
    assert_eq!(hdr.ty, Type::Initial);
    assert_eq!(hdr.pkt_num, 2);
    assert_eq!(hdr.pkt_num_len, 4);
    assert_eq!(hdr.packet_len, 1200);
    assert_eq!(payload.get(&buf), &a2_payload()[..]);
    // The unprotected header of the RFC.
    assert_eq!(
        &buf[..22],
        &hex("c300000001088394c8f03e5157080000449e00000002")[..]
    );

    let view = hdr.header(&buf).unwrap();
    assert_eq!(&view.dcid[..], &dcid[..]);
    assert_eq!((view.pkt_num, view.pkt_num_len, view.length), (2, 4, 1182));
}

#[test]
fn rfc9001_a3_server_initial() {
    let dcid = hex(RFC_DCID);
    let scid = hex(SERVER_CID);
    let (_, server_seal) = initial_keys(&dcid, true).unwrap();
    let mut hdr = Header::new_long(
        Type::Initial,
        QUIC_V1,
        ConnectionId::default(),
        ConnectionId::from_ref(&scid),
        None,
    );
    hdr.pkt_num = 1;
    hdr.pkt_num_len = 2;

    let payload = hex(A3_PAYLOAD);
    let pkt = seal(&hdr, &payload, 0, &server_seal);
    assert_eq!(pkt, hex(A3_PACKET));

    let (client_open, _) = initial_keys(&dcid, false).unwrap();
    let mut buf = pkt;
    let (hdr, span) = open(&mut buf, 0, &client_open, 0).unwrap();
    assert_eq!((hdr.pkt_num, hdr.pkt_num_len), (1, 2));
    assert_eq!(hdr.scid.get(&buf), &scid[..]);
    assert_eq!(span.get(&buf), &payload[..]);
    assert_eq!(
        &buf[..20],
        &hex("c1000000010008f067a5502a4262b50040750001")[..]
    );
}

#[test]
fn rfc9001_a4_retry() {
    let odcid = hex(RFC_DCID);
    let new_scid = hex(SERVER_CID);
    let mut out = [0; 64];
    let len = retry(
        &ConnectionId::default(),
        &ConnectionId::from_ref(&odcid),
        &ConnectionId::from_ref(&new_scid),
        b"token",
        QUIC_V1,
        &mut out,
    )
    .unwrap();
    let pkt = &out[..len];
    assert_eq!(pkt, &hex(A4_RETRY)[..]);

    assert_eq!(verify_retry_integrity(pkt, &odcid), Ok(()));
    assert_eq!(
        verify_retry_integrity(pkt, &hex("8394c8f03e515709")),
        Err(Error::CryptoFail)
    );
    assert_eq!(verify_retry_integrity(pkt, &[]), Err(Error::CryptoFail));
    assert_eq!(
        verify_retry_integrity(pkt, &[0; 21]),
        Err(Error::InvalidPacket)
    );

    // Any single flipped bit invalidates the packet.
    for bit in 0..len * 8 {
        let mut bad = pkt.to_vec();
        bad[bit / 8] ^= 1 << (bit % 8);
        assert!(verify_retry_integrity(&bad, &odcid).is_err(), "bit {bit}");
    }
    for len in 0..len {
        assert!(verify_retry_integrity(&pkt[..len], &odcid).is_err());
    }
}

#[test]
fn retry_arguments_are_checked() {
    let cid = ConnectionId::from_ref(&[1; 20]);
    let long = ConnectionId::from_vec(vec![1; 21]);
    let mut out = [0; 128];
    assert_eq!(
        retry(&cid, &cid, &cid, b"t", 2, &mut out),
        Err(Error::UnknownVersion)
    );
    assert_eq!(
        retry(&long, &cid, &cid, b"t", 1, &mut out),
        Err(Error::InvalidPacket)
    );

    let needed = 1 + 4 + 1 + 20 + 1 + 20 + 1 + 16;
    assert_eq!(retry(&cid, &cid, &cid, b"t", 1, &mut out), Ok(needed));
    // The original DCID is prepended while the tag is computed: 5 more bytes here.
    for len in 0..needed + 5 {
        assert_eq!(
            retry(&cid, &cid, &cid, b"t", 1, &mut out[..len]),
            Err(Error::BufferTooShort)
        );
    }
    let mut exact = vec![0; needed + 5];
    assert_eq!(retry(&cid, &cid, &cid, b"t", 1, &mut exact), Ok(needed));
    assert_eq!(verify_retry_integrity(&exact[..needed], &cid), Ok(()));
    let parsed = Header::from_slice(&mut exact[..needed], 0).unwrap();
    assert_eq!(parsed.ty, Type::Retry);
    assert_eq!(parsed.token.as_deref(), Some(&b"t"[..]));
}

#[test]
fn rfc9001_a5_chacha20_short_header() {
    let keys = derive_keys(Algorithm::ChaCha20Poly1305, &hex(A5_SECRET)).unwrap();
    let mut hdr = Header::new_short(ConnectionId::default(), false);
    hdr.pkt_num = 654360564;
    hdr.pkt_num_len = 3;

    let pkt = seal(&hdr, &[0x01], 0, &keys);
    assert_eq!(pkt, hex(A5_PACKET));

    let mut buf = pkt;
    let (hdr, payload) = open(&mut buf, 0, &keys, 654360563).unwrap();
    assert_eq!(hdr.ty, Type::Short);
    assert_eq!((hdr.pkt_num, hdr.pkt_num_len), (654360564, 3));
    assert!(!hdr.key_phase);
    assert_eq!(payload.get(&buf), &[0x01]);
    assert_eq!(&buf[..4], &hex("4200bff4")[..]);
}

#[test]
fn rustls_keys_open_our_packets() {
    let dcid = hex(RFC_DCID);
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .unwrap()
        .quic_suite()
        .unwrap();
    let theirs = suite.keys(&dcid, rustls::Side::Server, rustls::quic::Version::V1);

    let mut buf = hex(A2_PACKET);
    let (hdr, payload) = open(&mut buf, 0, &theirs.remote, 0).unwrap();
    assert_eq!(hdr.pkt_num, 2);
    assert_eq!(payload.get(&buf), &a2_payload()[..]);

    // And the other way: rustls seals, we open.
    let mut hdr = Header::new_long(
        Type::Initial,
        QUIC_V1,
        ConnectionId::default(),
        ConnectionId::from_ref(&[1, 2]),
        None,
    );
    hdr.pkt_num = 300;
    hdr.pkt_num_len = 2;
    let mut pkt = seal(&hdr, b"\x01hello", 30, &theirs.local);
    let (client_open, _) = initial_keys(&dcid, false).unwrap();
    let (layout, span) = open(&mut pkt, 0, &client_open, 299).unwrap();
    assert_eq!(layout.pkt_num, 300);
    assert_eq!(&span.get(&pkt)[..6], b"\x01hello");
}

#[test]
fn key_phase_is_read_after_header_protection_removal() {
    let keys = derive_keys(Algorithm::Aes256Gcm, &[3; 48]).unwrap();
    for key_phase in [false, true] {
        let dcid = [9; 8];
        let mut hdr = Header::new_short(ConnectionId::from_ref(&dcid), key_phase);
        hdr.pkt_num = 77;
        hdr.pkt_num_len = 1;
        let mut pkt = seal(&hdr, b"\x01", 20, &keys);
        let (layout, span) = open(&mut pkt, 8, &keys, 76).unwrap();
        assert_eq!(layout.key_phase, key_phase);
        assert_eq!(layout.dcid.get(&pkt), &dcid);
        assert_eq!(span.len, 20);
    }
}

/// Builds a packet whose first byte has `extra_bits` set before protection.
fn seal_with_first_bits(hdr: &Header, payload_len: usize, extra_bits: u8) -> Vec<u8> {
    let keys = derive_keys(Algorithm::Aes128Gcm, &[5; 32]).unwrap();
    let mut buf = vec![0; 200];
    let mut out = octets::OctetsMut::with_slice(&mut buf);
    let pn_offset = hdr.to_bytes(&mut out).unwrap();
    let hdr_len = out.off();
    buf[0] |= extra_bits;
    buf[hdr_len] = 0x01;
    let len = encrypt_pkt(
        &mut buf,
        hdr.pkt_num,
        pn_offset,
        hdr.pkt_num_len,
        payload_len,
        &*keys.header,
        &*keys.packet,
    )
    .unwrap();
    buf.truncate(len);
    buf
}

#[test]
fn reserved_bits_are_a_violation_only_once_authenticated() {
    let keys = derive_keys(Algorithm::Aes128Gcm, &[5; 32]).unwrap();
    let dcid = [1; 4];
    let mut long = Header::new_long(
        Type::Handshake,
        QUIC_V1,
        ConnectionId::from_ref(&dcid),
        ConnectionId::from_ref(&dcid),
        None,
    );
    long.pkt_num_len = 2;
    let mut short = Header::new_short(ConnectionId::from_ref(&dcid), false);
    short.pkt_num_len = 2;

    for (hdr, bits) in [(&long, 0x04), (&long, 0x08), (&short, 0x08), (&short, 0x10)] {
        let pkt = seal_with_first_bits(hdr, 10, bits);
        let mut ok = pkt.clone();
        assert_eq!(
            open(&mut ok, 4, &keys, 0).err(),
            Some(Error::ProtocolViolation)
        );
        assert_eq!(Error::ProtocolViolation.to_wire(), 0xa);

        let mut forged = pkt;
        *forged.last_mut().unwrap() ^= 1;
        assert_eq!(
            open(&mut forged, 4, &keys, 0).err(),
            Some(Error::CryptoFail)
        );
    }

    // Without reserved bits the same packets are fine.
    for hdr in [&long, &short] {
        let mut pkt = seal_with_first_bits(hdr, 10, 0);
        assert!(open(&mut pkt, 4, &keys, 0).is_ok());
    }
}

#[test]
fn packets_without_frames_are_a_violation() {
    let keys = derive_keys(Algorithm::Aes128Gcm, &[5; 32]).unwrap();
    let mut hdr = Header::new_short(ConnectionId::default(), false);
    hdr.pkt_num_len = 4;
    let mut pkt = seal(&hdr, &[], 0, &keys);
    assert_eq!(pkt.len(), 1 + 4 + 16);
    assert_eq!(
        open(&mut pkt, 0, &keys, 0).err(),
        Some(Error::ProtocolViolation)
    );
}

#[test]
fn packets_too_short_for_a_sample_are_rejected() {
    let keys = derive_keys(Algorithm::ChaCha20Poly1305, &hex(A5_SECRET)).unwrap();

    // Sending: a 1-byte packet number with 2 bytes of payload leaves no room for the sample.
    let mut hdr = Header::new_short(ConnectionId::from_ref(&[7; 4]), false);
    hdr.pkt_num_len = 1;
    let mut buf = [0; 64];
    let mut out = octets::OctetsMut::with_slice(&mut buf);
    let pn_offset = hdr.to_bytes(&mut out).unwrap();
    let before = buf;
    let res = encrypt_pkt(&mut buf, 0, pn_offset, 1, 2, &*keys.header, &*keys.packet);
    assert_eq!(res, Err(Error::BufferTooShort));
    assert_eq!(
        buf, before,
        "a failed encryption leaves the buffer untouched"
    );
    // No room for the tag.
    assert_eq!(
        encrypt_pkt(
            &mut buf[..20],
            0,
            pn_offset,
            1,
            3,
            &*keys.header,
            &*keys.packet
        ),
        Err(Error::BufferTooShort)
    );
    // The packet number length must agree with the first byte.
    assert_eq!(
        encrypt_pkt(&mut buf, 0, pn_offset, 2, 3, &*keys.header, &*keys.packet),
        Err(Error::InvalidState)
    );
    assert_eq!(buf, before);
    assert_eq!(
        encrypt_pkt(&mut buf, 0, pn_offset, 1, 3, &*keys.header, &*keys.packet),
        Ok(1 + 4 + 1 + 3 + 16)
    );

    // Receiving: every prefix of the smallest possible packet.
    let pkt = hex(A5_PACKET);
    for len in 0..pkt.len() {
        let mut buf = pkt[..len].to_vec();
        let res = open(&mut buf, 0, &keys, 654360563);
        assert_eq!(res.err(), Some(Error::InvalidPacket), "len {len}");
    }
}

#[test]
fn protection_functions_refuse_misuse() {
    let keys = derive_keys(Algorithm::Aes128Gcm, &[5; 32]).unwrap();
    let mut pkt = hex(A4_RETRY);
    let mut hdr = HeaderLayout::parse(&pkt, 0).unwrap();
    assert_eq!(
        decrypt_hdr(&mut pkt, &mut hdr, &*keys.header, 0),
        Err(Error::InvalidPacket)
    );
    // Decrypting before header protection is removed.
    let mut pkt = hex(A2_PACKET);
    let hdr = HeaderLayout::parse(&pkt, 0).unwrap();
    assert_eq!(
        decrypt_pkt(&mut pkt, &hdr, &*keys.packet),
        Err(Error::InvalidState)
    );
    // A layout used on a shorter buffer than it was parsed from.
    let mut hdr = hdr;
    assert_eq!(
        decrypt_hdr(&mut pkt[..100], &mut hdr, &*keys.header, 0),
        Err(Error::InvalidPacket)
    );

    // The Length placeholder must be a 2-byte varint and the value must fit.
    let mut buf = [0xc0, 0, 0x40, 0x00, 0];
    assert_eq!(write_length(&mut buf, 4, 16383), Ok(()));
    assert_eq!(&buf[2..4], &[0x7f, 0xff]);
    assert_eq!(write_length(&mut buf, 4, 16384), Err(Error::BufferTooShort));
    assert_eq!(write_length(&mut buf, 3, 10), Err(Error::InvalidState));
    assert_eq!(write_length(&mut buf, 1, 10), Err(Error::InvalidState));
    assert_eq!(write_length(&mut buf, 9, 10), Err(Error::BufferTooShort));
}

#[test]
fn flipped_bits_in_the_rfc_initial_fail() {
    let dcid = hex(RFC_DCID);
    let (server_open, _) = initial_keys(&dcid, true).unwrap();
    let pkt = hex(A2_PACKET);

    for bit in 0..pkt.len() * 8 {
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        let mut bad = pkt.clone();
        bad[byte] ^= mask;
        let res = open(&mut bad, 0, &server_open, 0);

        // Protected bits of the first byte, the connection ID, the packet number and the
        // payload are all authenticated: they fail decryption. Other header fields may fail
        // earlier (unknown version, bad lengths), but every flip fails.
        let authenticated =
            (byte == 0 && mask & 0x0f != 0) || (6..14).contains(&byte) || byte >= 18;
        if authenticated {
            assert_eq!(res.err(), Some(Error::CryptoFail), "bit {bit}");
        } else {
            assert!(res.is_err(), "bit {bit}");
        }
    }
}

#[test]
fn every_prefix_of_the_rfc_initial_fails_cleanly() {
    let dcid = hex(RFC_DCID);
    let (server_open, _) = initial_keys(&dcid, true).unwrap();
    let pkt = hex(A2_PACKET);
    for len in 0..=pkt.len() {
        for dcid_len in [0, 8, 20] {
            let mut buf = pkt[..len].to_vec();
            let res = open(&mut buf, dcid_len, &server_open, 0);
            assert_eq!(res.is_ok(), len == pkt.len(), "len {len}");
            let mut buf = pkt[..len].to_vec();
            let _ = Header::from_slice(&mut buf, dcid_len);
        }
    }
}

/// Makes random bytes a plausible v1 long header: small connection IDs, an empty token and a
/// Length that usually fits.
fn steer_to_long_header(pkt: &mut [u8], rng: &mut Rng) {
    let len = pkt.len();
    pkt[0] |= 0xc0;
    if rng.below_usize(2) == 0 {
        pkt[0] &= 0xcf;
    }
    pkt[1..5].copy_from_slice(&QUIC_V1.to_be_bytes());
    let mut off = 5;
    for _ in 0..2 {
        let cid_len = rng.below_usize(9);
        if let Some(b) = pkt.get_mut(off) {
            *b = cid_len as u8;
        }
        off += 1 + cid_len;
    }
    if pkt[0] & 0x30 == 0 {
        if let Some(b) = pkt.get_mut(off) {
            *b = 0;
        }
        off += 1;
    }
    if off + 2 <= len {
        let length = rng.below_usize(len - off - 2 + 8) as u16;
        pkt[off..off + 2].copy_from_slice(&(0x4000 | length).to_be_bytes());
    }
}

#[test]
fn random_input_never_panics() {
    let (open_keys, _) = initial_keys(&hex(RFC_DCID), true).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut buf = vec![0u8; 1400];
    let mut parsed = 0;
    let mut unprotected = 0;

    for i in 0..300_000 {
        let len = if rng.below_usize(16) == 0 {
            rng.below_usize(1400)
        } else {
            rng.below_usize(96)
        };
        let pkt = &mut buf[..len];
        rng.fill(pkt);

        // Steer half the inputs into v1 long headers with short connection IDs, to get past
        // the first checks.
        if len > 7 && rng.below_usize(2) == 0 {
            steer_to_long_header(pkt, &mut rng);
        }
        let dcid_len = rng.below_usize(21);

        let _ = Header::parse(pkt, dcid_len);
        let _ = packet_len(pkt, dcid_len);
        let Ok(mut hdr) = HeaderLayout::parse(pkt, dcid_len) else {
            continue;
        };
        parsed += 1;
        assert!(hdr.packet_len <= len);
        let _ = hdr.header(pkt).unwrap();

        // Fresh keys from the packet's own DCID now and then, as a server would derive them.
        let derived;
        let keys = if i % 512 == 0 {
            derived = initial_keys(hdr.dcid.get(pkt), true).unwrap().0;
            &derived
        } else {
            &open_keys
        };

        if decrypt_hdr(pkt, &mut hdr, &*keys.header, rng.next() >> 2).is_ok() {
            unprotected += 1;
            assert!((1..=4).contains(&hdr.pkt_num_len));
            assert_eq!(
                decrypt_pkt(pkt, &hdr, &*keys.packet),
                Err(Error::CryptoFail)
            );
        }
    }

    // The input reached the deeper layers.
    assert!(parsed > 100_000, "{parsed}");
    assert!(unprotected > 10_000, "{unprotected}");
}

#[test]
fn random_datagrams_split_without_panicking() {
    let mut rng = Rng(42);
    let mut buf = vec![0u8; 600];
    for _ in 0..100_000 {
        let len = rng.below_usize(600);
        let dgram = &mut buf[..len];
        rng.fill(dgram);
        if len > 8 && rng.below_usize(2) == 0 {
            dgram[0] |= 0xc0;
            dgram[1..5].copy_from_slice(&QUIC_V1.to_be_bytes());
            dgram[5] %= 4;
            dgram[6 + usize::from(dgram[5]).min(len - 7)] %= 4;
        }

        let mut total = 0;
        let mut count = 0;
        for pkt in coalesced(dgram, rng.below_usize(21)) {
            count += 1;
            match pkt {
                Ok(pkt) => {
                    assert!(!pkt.is_empty());
                    total += pkt.len();
                }
                Err(_) => break,
            }
        }
        assert!(total <= len);
        assert!(count <= len.max(1));
    }
}

#[test]
fn coalesced_packets_split_by_their_length_fields() {
    let dcid = hex(RFC_DCID);
    let (_, initial_seal) = initial_keys(&dcid, false).unwrap();
    let (initial_open, _) = initial_keys(&dcid, true).unwrap();
    let handshake = derive_keys(Algorithm::Aes128Gcm, &[0x11; 32]).unwrap();
    let one_rtt = derive_keys(Algorithm::ChaCha20Poly1305, &[0x22; 32]).unwrap();
    let scid = [0xee; 5];

    let mut initial = client_initial_header(&dcid);
    initial.scid = ConnectionId::from_ref(&scid);
    initial.pkt_num = 0;
    let initial = seal(&initial, b"\x06\x00\x05hello", 300, &initial_seal);

    let mut hs = Header::new_long(
        Type::Handshake,
        QUIC_V1,
        ConnectionId::from_ref(&dcid),
        ConnectionId::from_ref(&scid),
        None,
    );
    hs.pkt_num = 0;
    hs.pkt_num_len = 1;
    let handshake_pkt = seal(&hs, b"\x06\x00\x02hs", 40, &handshake);

    // A packet for another connection: ignored (RFC 9000 §12.2).
    let other_dcid = [0x33; 8];
    hs.dcid = ConnectionId::from_ref(&other_dcid);
    let stray = seal(&hs, b"\x01", 40, &handshake);

    let mut short = Header::new_short(ConnectionId::from_ref(&dcid), false);
    short.pkt_num = 0;
    short.pkt_num_len = 1;
    let short_pkt = seal(&short, b"\x01", 100, &one_rtt);

    let mut dgram = [
        initial.clone(),
        handshake_pkt.clone(),
        stray.clone(),
        short_pkt.clone(),
    ]
    .concat();
    assert_eq!(packet_len(&dgram, 8), Ok(initial.len()));

    let pkts: Vec<_> = coalesced(&mut dgram, 8).map(|p| p.unwrap()).collect();
    assert_eq!(pkts.len(), 3);
    assert_eq!(pkts[0].len(), initial.len());
    assert_eq!(pkts[1].len(), handshake_pkt.len());
    assert_eq!(pkts[2].len(), short_pkt.len());

    let mut pkts = pkts.into_iter();
    let pkt = pkts.next().unwrap();
    let (hdr, span) = open(pkt, 8, &initial_open, 0).unwrap();
    assert_eq!(hdr.ty, Type::Initial);
    assert_eq!(&span.get(pkt)[..8], b"\x06\x00\x05hello");

    let pkt = pkts.next().unwrap();
    let (hdr, span) = open(pkt, 8, &handshake, 0).unwrap();
    assert_eq!(hdr.ty, Type::Handshake);
    assert_eq!(&span.get(pkt)[..5], b"\x06\x00\x02hs");

    let pkt = pkts.next().unwrap();
    let (hdr, span) = open(pkt, 8, &one_rtt, 0).unwrap();
    assert_eq!(hdr.ty, Type::Short);
    assert_eq!(span.get(pkt)[0], 0x01);

    // Garbage after the Initial: the Initial comes out, then the error, then nothing.
    let mut dgram = [initial.clone(), vec![0; 30]].concat();
    let mut it = coalesced(&mut dgram, 8);
    assert_eq!(it.next().unwrap().unwrap().len(), initial.len());
    assert_eq!(it.next().unwrap().err(), Some(Error::InvalidPacket));
    assert!(it.next().is_none());

    // A truncated last packet is an error too.
    let mut dgram = [initial.clone(), handshake_pkt[..20].to_vec()].concat();
    let results: Vec<_> = coalesced(&mut dgram, 8)
        .map(|p| p.map(|p| p.len()))
        .collect();
    assert_eq!(results, vec![Ok(initial.len()), Err(Error::InvalidPacket)]);
}

#[test]
fn connection_ids_convert_to_and_from_vectors() {
    let borrowed = [7u8, 8, 9];
    let v: Vec<u8> = ConnectionId::from_ref(&borrowed).into();
    assert_eq!(v, [7, 8, 9]);
    let back = ConnectionId::from(v.clone());
    assert_eq!(&*back, &borrowed[..]);
    assert_eq!(Vec::from(back), v);
}
