use super::*;
use crate::crypto::tests::hex;

/// Encodes `hdr` followed by `payload_len` zero bytes, with the Length field filled in.
fn encode(hdr: &Header, payload_len: usize) -> Vec<u8> {
    let mut buf = vec![0; 256 + payload_len];
    let mut out = octets::OctetsMut::with_slice(&mut buf);
    let pn_offset = hdr.to_bytes(&mut out).unwrap();
    let len = out.off() + payload_len;
    if hdr.ty != Type::Short {
        let length = len - pn_offset;
        buf[pn_offset - 2..pn_offset].copy_from_slice(&(0x4000 | length as u16).to_be_bytes());
    }
    buf.truncate(len);
    buf
}

fn long(ty: Type, token: Option<&[u8]>) -> Header<'_> {
    let mut hdr = Header::new_long(
        ty,
        1,
        ConnectionId::from_ref(&[1, 2, 3, 4, 5, 6, 7, 8]),
        ConnectionId::from_ref(&[9, 10, 11]),
        token.map(<[u8]>::to_vec),
    );
    hdr.pkt_num = 0x1234;
    hdr.pkt_num_len = 2;
    hdr
}

#[test]
fn parses_the_rfc9001_a2_initial_header() {
    let mut buf = hex("c300000001088394c8f03e5157080000449e00000002");
    buf.resize(18 + 1182, 0);
    let hdr = Header::from_slice(&mut buf, 0).unwrap();
    assert_eq!(hdr.ty, Type::Initial);
    assert_eq!(hdr.version, 1);
    assert_eq!(&hdr.dcid[..], &hex("8394c8f03e515708")[..]);
    assert!(hdr.scid.is_empty());
    assert_eq!(hdr.token.as_deref(), Some(&[][..]));
    assert_eq!(hdr.versions, None);
    assert_eq!(hdr.length, 1182);
    assert_eq!(hdr.pn_offset, 18);

    let layout = HeaderLayout::parse(&buf, 0).unwrap();
    assert_eq!(layout.packet_len, 1200);
    assert_eq!(layout.length(), 1182);
    assert_eq!(layout.dcid, Span { offset: 6, len: 8 });
    assert_eq!(layout.token, Some(Span { offset: 16, len: 0 }));
}

#[test]
fn encoded_headers_parse_back() {
    let token = [0xaa; 5];
    for ty in [Type::Initial, Type::ZeroRTT, Type::Handshake] {
        let hdr = long(ty, Some(&token));
        let buf = encode(&hdr, 30);
        let parsed = Header::parse(&buf, 0).unwrap();
        assert_eq!(parsed.ty, ty);
        assert_eq!(parsed.version, 1);
        assert_eq!(parsed.dcid, hdr.dcid);
        assert_eq!(parsed.scid, hdr.scid);
        let expected_token = (ty == Type::Initial).then_some(&token[..]);
        assert_eq!(parsed.token.as_deref(), expected_token);
        assert_eq!(parsed.length, 2 + 30);
        // The packet number is still protected as far as parsing knows.
        assert_eq!((parsed.pkt_num, parsed.pkt_num_len), (0, 0));
        assert_eq!(&buf[parsed.pn_offset..parsed.pn_offset + 2], &[0x12, 0x34]);
        // Type bits and packet number length bits.
        assert_eq!(buf[0] & 0x03, 1);
    }

    let mut short = Header::new_short(ConnectionId::from_ref(&[5; 20]), true);
    short.pkt_num = 0xabcdef;
    short.pkt_num_len = 3;
    let mut buf = encode(&short, 10);
    assert_eq!(buf[0], 0x40 | 0x04 | 0x02);
    let parsed = Header::from_slice(&mut buf, 20).unwrap();
    assert_eq!(parsed.ty, Type::Short);
    assert_eq!(&parsed.dcid[..], &[5; 20]);
    assert_eq!(parsed.pn_offset, 21);
    assert_eq!(parsed.length, 13);
    assert_eq!(parsed.token.as_deref(), None);
}

#[test]
fn encoding_rejects_what_it_cannot_write() {
    let mut buf = [0; 512];
    let mut hdr = long(Type::Initial, None);
    for pn_len in [0, 5] {
        hdr.pkt_num_len = pn_len;
        let mut out = octets::OctetsMut::with_slice(&mut buf);
        assert_eq!(hdr.to_bytes(&mut out), Err(Error::InvalidState));
    }
    for ty in [Type::Retry, Type::VersionNegotiation] {
        let hdr = long(ty, None);
        let mut out = octets::OctetsMut::with_slice(&mut buf);
        assert_eq!(hdr.to_bytes(&mut out), Err(Error::InvalidState));
    }
    let mut hdr = long(Type::Handshake, None);
    hdr.dcid = ConnectionId::from_vec(vec![0; 21]);
    let mut out = octets::OctetsMut::with_slice(&mut buf);
    assert_eq!(hdr.to_bytes(&mut out), Err(Error::InvalidState));

    let hdr = long(Type::Initial, Some(&[0; 200]));
    for len in 0..encode(&hdr, 0).len() {
        let mut out = octets::OctetsMut::with_slice(&mut buf[..len]);
        assert_eq!(hdr.to_bytes(&mut out), Err(Error::BufferTooShort));
    }
}

#[test]
fn fixed_bit_must_be_set_except_in_version_negotiation() {
    let mut initial = encode(&long(Type::Initial, None), 20);
    initial[0] &= !FIXED_BIT;
    assert_eq!(
        Header::from_slice(&mut initial, 0).err(),
        Some(Error::InvalidPacket)
    );
    assert_eq!(
        HeaderLayout::parse(&initial, 0).err(),
        Some(Error::InvalidPacket)
    );

    let mut short = vec![0x01, 1, 2, 3, 4, 5];
    assert_eq!(
        Header::from_slice(&mut short, 2).err(),
        Some(Error::InvalidPacket)
    );

    let mut vn = hex("80 00000000 01aa 02bbcc 00000001 1a2a3a4a");
    let hdr = Header::from_slice(&mut vn, 0).unwrap();
    assert_eq!(hdr.ty, Type::VersionNegotiation);
    assert_eq!(&hdr.dcid[..], &[0xaa]);
    assert_eq!(&hdr.scid[..], &[0xbb, 0xcc]);
    assert_eq!(hdr.versions, Some(vec![1, 0x1a2a3a4a]));
    assert_eq!(hdr.length, 0);

    // A version list that is not a whole number of versions.
    let mut vn = hex("c0 00000000 00 00 00000001 1a2a3a");
    assert_eq!(
        Header::from_slice(&mut vn, 0).err(),
        Some(Error::InvalidPacket)
    );
}

#[test]
fn v1_connection_ids_are_limited_to_20_bytes() {
    let mut pkt = hex("c3 00000001 15");
    pkt.extend_from_slice(&[0; 21]);
    pkt.extend_from_slice(&hex("00 00 01 00"));
    assert_eq!(
        Header::from_slice(&mut pkt.clone(), 0).err(),
        Some(Error::InvalidPacket)
    );

    let mut pkt = hex("c3 00000001 00 15");
    pkt.extend_from_slice(&[0; 21]);
    pkt.extend_from_slice(&hex("00 01 00"));
    assert_eq!(
        Header::from_slice(&mut pkt.clone(), 0).err(),
        Some(Error::InvalidPacket)
    );

    // Short headers: the local length is at most 20 too.
    assert_eq!(
        Header::from_slice(&mut [0x40; 64], 21).err(),
        Some(Error::InvalidPacket)
    );
}

#[test]
fn unknown_versions_expose_their_connection_ids() {
    // A long header of another version, with connection IDs longer than v1 allows and
    // without the fixed bit.
    let mut pkt = hex("80 ff00abcd 1e");
    pkt.extend_from_slice(&[0x11; 30]);
    pkt.push(25);
    pkt.extend_from_slice(&[0x22; 25]);
    pkt.extend_from_slice(&[0xee; 100]);

    assert_eq!(
        HeaderLayout::parse(&pkt, 0).err(),
        Some(Error::UnknownVersion)
    );
    assert_eq!(packet_len_of(&pkt), Err(Error::UnknownVersion));

    let hdr = Header::from_slice(&mut pkt, 0).unwrap();
    assert_eq!(hdr.version, 0xff00_abcd);
    assert!(!version_is_supported(hdr.version));
    assert_eq!(hdr.ty, Type::Initial);
    assert_eq!(&hdr.dcid[..], &[0x11; 30][..]);
    assert_eq!(&hdr.scid[..], &[0x22; 25][..]);
    assert_eq!(hdr.token.as_deref(), None);

    // Truncated connection IDs are invalid in any version.
    let mut truncated = hex("c0 0000000a 04 0102");
    assert_eq!(
        Header::from_slice(&mut truncated, 0).err(),
        Some(Error::InvalidPacket)
    );
}

fn packet_len_of(buf: &[u8]) -> Result<usize> {
    crate::packet::packet_len(buf, 0)
}

#[test]
fn length_field_must_fit_in_the_datagram() {
    let hdr = long(Type::Handshake, None);
    let mut pkt = encode(&hdr, 40);
    let full = pkt.len();
    assert_eq!(packet_len_of(&pkt), Ok(full));

    pkt.pop();
    assert_eq!(packet_len_of(&pkt), Err(Error::InvalidPacket));

    // Extra bytes after the packet belong to the next packet.
    let mut longer = encode(&hdr, 40);
    longer.extend_from_slice(&[0; 9]);
    assert_eq!(packet_len_of(&longer), Ok(full));

    // A Length varint larger than any buffer.
    let mut huge = hex("e3 00000001 00 00 ffffffffffffffff 00");
    huge.resize(64, 0);
    assert_eq!(packet_len_of(&huge), Err(Error::InvalidPacket));
    // A token length larger than the packet.
    let huge = hex("c3 00000001 00 00 bfffffff 00");
    assert_eq!(packet_len_of(&huge), Err(Error::InvalidPacket));
}

#[test]
fn retry_headers_carry_the_token_before_the_tag() {
    let mut pkt = hex(
        "ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f
         0f2496ba",
    );
    let hdr = Header::from_slice(&mut pkt, 0).unwrap();
    assert_eq!(hdr.ty, Type::Retry);
    assert!(hdr.dcid.is_empty());
    assert_eq!(&hdr.scid[..], &hex("f067a5502a4262b5")[..]);
    assert_eq!(hdr.token.as_deref(), Some(&b"token"[..]));
    assert_eq!(hdr.length, 0);

    // Not even room for the integrity tag.
    let mut short = hex("f0 00000001 00 00 000102030405060708090a0b0c0d0e");
    assert_eq!(
        Header::from_slice(&mut short, 0).err(),
        Some(Error::InvalidPacket)
    );
}

#[test]
fn every_prefix_of_valid_headers_parses_or_fails_cleanly() {
    let token = [7; 3];
    let mut packets = vec![
        encode(&long(Type::Initial, Some(&token)), 30),
        encode(&long(Type::ZeroRTT, None), 30),
        encode(&long(Type::Handshake, None), 30),
        hex("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba"),
        hex("80 00000000 01aa 02bbcc 00000001 1a2a3a4a"),
    ];
    let mut short = Header::new_short(ConnectionId::from_ref(&[3; 8]), false);
    short.pkt_num_len = 1;
    packets.push(encode(&short, 30));

    for pkt in &packets {
        for len in 0..=pkt.len() {
            for dcid_len in [0, 8, 20] {
                let mut prefix = pkt[..len].to_vec();
                let layout = HeaderLayout::parse(&prefix, dcid_len);
                let hdr = Header::from_slice(&mut prefix, dcid_len);
                assert_eq!(layout.is_ok(), hdr.is_ok());
                if let Ok(layout) = layout {
                    assert!(layout.packet_len <= len);
                    assert!(layout.pn_offset <= layout.packet_len);
                    assert!(layout.dcid.end() <= len && layout.scid.end() <= len);
                }
            }
        }
        // Long headers with a Length field fail when truncated.
        if pkt[0] & 0x80 != 0 && pkt[0] & 0x30 != 0x30 && pkt[1..5] != [0; 4] {
            for len in 0..pkt.len() {
                assert!(HeaderLayout::parse(&pkt[..len], 0).is_err());
            }
        }
    }
}

/// quiche's server loop: parse the header, keep its DCID as a map key, then hand the same buffer
/// to `recv` (a mutable use) while the header lives. This only compiles if `from_slice`'s header
/// owns its connection IDs.
#[test]
fn from_slice_header_outlives_the_buffer_borrow() {
    let mut buf = encode(&long(Type::Initial, Some(b"tok")), 20);
    let hdr = Header::from_slice(&mut buf, 0).unwrap();
    let mut conns = std::collections::HashMap::new();
    conns.insert(hdr.dcid.clone(), ());
    buf.fill(0);
    assert!(conns.contains_key(&ConnectionId::from_ref(&[1, 2, 3, 4, 5, 6, 7, 8])));
    assert_eq!(&hdr.scid[..], &[9, 10, 11]);
    assert_eq!(hdr.token.as_deref(), Some(&b"tok"[..]));
}
