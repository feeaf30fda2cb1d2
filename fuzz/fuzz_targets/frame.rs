//! Frame decoder fuzzing: the first byte picks the packet type, the rest is a packet payload.
//! Every frame that decodes must encode to exactly `wire_len` bytes and decode back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use octets::{Octets, OctetsMut};
use quiche::frame::{self, Frame};
use quiche::Type;

const PKTS: [Type; 6] = [
    Type::Initial,
    Type::Handshake,
    Type::ZeroRTT,
    Type::Short,
    Type::Retry,
    Type::VersionNegotiation,
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, payload)) = data.split_first() else {
        return;
    };
    let pkt = PKTS[usize::from(sel) % PKTS.len()];
    let mut buf = vec![0u8; payload.len() + 64];
    let mut frames = frame::parse_all(payload, pkt);
    while let Some(Ok(f)) = frames.next() {
        assert!(frames.offset() <= payload.len());
        assert!(
            f.allowed_in(pkt),
            "decoded {f:?} that {pkt:?} may not carry"
        );
        let len = f.wire_len();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let n = f
            .to_bytes(&mut OctetsMut::with_slice(&mut buf))
            .expect("a decoded frame must encode");
        assert_eq!(n, len, "wire_len of {f:?}");
        let mut b = Octets::with_slice(&buf[..n]);
        let g = Frame::from_bytes(&mut b, pkt).expect("a re-encoded frame must decode");
        assert_eq!(g, f);
        assert_eq!(b.off(), n, "re-encoded {f:?} not fully consumed");
    }
});
