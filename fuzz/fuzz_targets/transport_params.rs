#![no_main]

//! Decodes arbitrary bytes as the transport parameters of a client and of a server; whatever
//! decodes must re-encode, and the re-encoding must decode to the same parameters.

use libfuzzer_sys::fuzz_target;
use quiche::transport_params::TransportParams;
use quiche::Error;

fuzz_target!(|data: &[u8]| {
    for peer_is_server in [false, true] {
        match TransportParams::decode(data, peer_is_server) {
            Ok(tp) => {
                let encoded = tp
                    .encode_to_vec(peer_is_server)
                    .expect("decoded parameters must re-encode");
                let again = TransportParams::decode(&encoded, peer_is_server)
                    .expect("re-encoded parameters must decode");
                assert_eq!(tp, again);
                // The encoding of decoded parameters is canonical: encoding again changes
                // nothing.
                assert_eq!(again.encode_to_vec(peer_is_server).ok(), Some(encoded));
            }
            Err(e) => assert_eq!(e, Error::InvalidTransportParam),
        }
    }
});
