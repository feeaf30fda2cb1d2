#![no_main]

//! Header parsing, datagram splitting, and Initial header protection removal and decryption
//! on arbitrary input: none of it may panic.

use libfuzzer_sys::fuzz_target;

use quiche::crypto::initial_keys;
use quiche::packet::{coalesced, decrypt_hdr, decrypt_pkt, HeaderLayout, Type};
use quiche::Header;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let dcid_len = usize::from(first) % 21;
    let mut buf = rest.to_vec();

    if let Ok(hdr) = Header::from_slice(&mut buf, dcid_len) {
        assert!(hdr.dcid.len() <= 255 && hdr.scid.len() <= 255);
    }

    let mut total = 0;
    for pkt in coalesced(&mut buf, dcid_len) {
        match pkt {
            Ok(pkt) => {
                assert!(!pkt.is_empty());
                total += pkt.len();
            }
            Err(_) => break,
        }
    }
    assert!(total <= rest.len());

    let Ok(mut hdr) = HeaderLayout::parse(&buf, dcid_len) else {
        return;
    };
    assert!(hdr.packet_len <= buf.len());
    if !matches!(hdr.ty, Type::Initial | Type::Handshake | Type::ZeroRTT) {
        return;
    }

    // As a server receiving a client's first Initial: keys from the packet's own DCID.
    let Ok((open, _)) = initial_keys(hdr.dcid.get(&buf), true) else {
        return;
    };
    if decrypt_hdr(&mut buf, &mut hdr, &*open.header, 0).is_ok() {
        assert!((1..=4).contains(&hdr.pkt_num_len));
        if let Ok(payload) = decrypt_pkt(&mut buf, &hdr, &*open.packet) {
            assert!(payload.end() <= hdr.packet_len);
        }
    }
});
