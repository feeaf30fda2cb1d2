//! `accept_with_retry`: a server accepted after a Retry with its own connection ID, not the
//! Retry's.

use std::time::Duration;

use super::client_config;
use super::{handshake_through_retry_with, payload, server_config, upload};
use crate::testing::Pipe;
use crate::{ConnectionId, RetryConnectionIds};

const SERVER_SCID: [u8; 16] = [0x5e; 16];

/// A server accepted with `SERVER_SCID`, telling the client the Retry came from `claimed`
/// (`None`: the Retry's real SCID).
fn accept_after_retry(pipe: &mut Pipe, claimed: Option<&ConnectionId>) {
    handshake_through_retry_with(pipe, false, |odcid, retry_scid, pipe| {
        let retry_source = claimed.unwrap_or(retry_scid);
        crate::accept_with_retry(
            &ConnectionId::from_ref(&SERVER_SCID),
            RetryConnectionIds {
                original_destination_cid: odcid,
                retry_source_cid: retry_source,
            },
            pipe.server_addr,
            pipe.client_addr,
            &mut server_config(),
        )
        .unwrap()
    });
}

#[test]
fn a_server_with_its_own_id_completes_the_handshake() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    accept_after_retry(&mut pipe, None);
    pipe.handshake().unwrap();
    let tp = pipe.client.peer_transport_params().unwrap();
    assert_eq!(
        tp.retry_source_connection_id.as_deref(),
        Some(&[0x77u8; 16][..])
    );
    assert_eq!(
        tp.initial_source_connection_id.as_deref(),
        Some(&SERVER_SCID[..])
    );
    // The client moved to the server's own ID.
    assert_eq!(&pipe.client.destination_id()[..], &SERVER_SCID[..]);
    let data = payload(100_000, 3);
    assert_eq!(upload(&mut pipe, &data, Duration::from_secs(30)), data);
}

#[test]
fn a_wrong_retry_source_fails_the_clients_handshake() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    let wrong = ConnectionId::from_vec(vec![0x66; 16]);
    accept_after_retry(&mut pipe, Some(&wrong));
    let _ = pipe.handshake();
    pipe.run_until(Duration::from_secs(5), |p| p.client.local_error().is_some())
        .unwrap();
    // TRANSPORT_PARAMETER_ERROR (RFC 9000 §7.3).
    assert_eq!(pipe.client.local_error().unwrap().error_code, 0x08);
    assert!(!pipe.client.is_established());
}

#[test]
fn initials_to_the_retry_source_reach_the_server_until_the_client_moves() {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    accept_after_retry(&mut pipe, None);
    // The server's first flight is lost: the client, which has not learnt the server's ID,
    // probes with an Initial to the Retry's SCID again, and the server must take it.
    let mut out = [0u8; 1500];
    let probe_at = pipe.client.timeout_instant().unwrap();
    pipe.client.on_timeout_at(probe_at);
    let (n, _) = pipe.client.send_at(&mut out, probe_at).unwrap();
    let hdr = crate::packet::Header::from_slice(&mut out[..n], 16).unwrap();
    assert_eq!(hdr.ty, crate::Type::Initial);
    assert_eq!(&hdr.dcid[..], &[0x77; 16][..]);
    let before = pipe.server.stats().recv;
    let info = crate::RecvInfo {
        from: pipe.client_addr,
        to: pipe.server_addr,
    };
    pipe.now = probe_at;
    pipe.server.recv_at(&mut out[..n], info, probe_at).unwrap();
    assert!(pipe.server.stats().recv > before, "the probe was dropped");
    pipe.handshake().unwrap();
    assert_eq!(&pipe.client.destination_id()[..], &SERVER_SCID[..]);
}
