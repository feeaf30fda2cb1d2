//! Tests of the connection-ID calls: IDs the application supplies (`new_scid`), how many the
//! peer still stores (`scids_left`), retiring the peer's IDs (`retire_dcid`) and ours the peer
//! retired (`retired_scids`, `retired_scid_next`).

use std::time::Duration;

use super::{client_config, server_config};
use crate::packet::ConnectionId;
use crate::testing::Pipe;
use crate::Error;

/// Through the handshake and the NEW_CONNECTION_ID exchange that follows it.
fn settled(limit: u64) -> Pipe {
    let mut client = client_config();
    client.set_active_connection_id_limit(limit);
    let mut server = server_config();
    server.set_active_connection_id_limit(limit);
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    pipe.run_for(Duration::from_millis(200)).unwrap();
    pipe
}

#[test]
fn new_scid_respects_the_peers_limit_unless_told_to_retire() {
    let mut pipe = settled(3);
    // Each side issued IDs up to the other's limit on its own.
    assert_eq!(pipe.server.active_scids(), 3);
    assert_eq!(pipe.server.scids_left(), 0);
    let cid = ConnectionId::from_ref(&[0xab; 16]);
    assert_eq!(pipe.server.new_scid(&cid, 7, false), Err(Error::IdLimit));

    let seq = pipe.server.new_scid(&cid, 7, true).unwrap();
    // The same ID and token again: the same sequence number; another token: refused.
    assert_eq!(pipe.server.new_scid(&cid, 7, true), Ok(seq));
    assert_eq!(
        pipe.server.new_scid(&cid, 8, true),
        Err(Error::InvalidState)
    );

    // The client learns the new ID, retires the oldest as asked, and the server hears of it.
    pipe.run_for(Duration::from_millis(200)).unwrap();
    assert_eq!(pipe.server.retired_scids(), 1);
    let retired = pipe.server.retired_scid_next().expect("a retired ID");
    assert_ne!(retired.as_ref(), cid.as_ref());
    assert_eq!(pipe.server.retired_scids(), 0);
    assert!(pipe
        .server
        .source_ids()
        .any(|id| id.as_ref() == cid.as_ref()));
    // Still usable both ways.
    pipe.client.stream_send(0, b"after", true).unwrap();
    pipe.run_for(Duration::from_millis(100)).unwrap();
    assert!(pipe.server.stream_readable(0));
}

#[test]
fn retire_dcid_moves_to_a_spare_id_and_tells_the_peer() {
    let mut pipe = settled(3);
    let spare = pipe.client.available_dcids();
    assert!(spare >= 2, "the server gave spare IDs ({spare})");
    let before = pipe.client.destination_id().into_owned();
    assert_eq!(pipe.client.retire_dcid(99), Err(Error::InvalidState));

    // The ID in use (sequence 0, the handshake's).
    pipe.client.retire_dcid(0).unwrap();
    let after = pipe.client.destination_id().into_owned();
    assert_ne!(before.as_ref(), after.as_ref());
    assert_eq!(pipe.client.available_dcids(), spare - 1);
    pipe.run_for(Duration::from_millis(200)).unwrap();
    // The server replaced it (its peer's limit allows 3 again) and saw the retirement.
    assert_eq!(pipe.server.retired_scids(), 1);
    assert_eq!(
        pipe.server.retired_scid_next().as_deref(),
        Some(before.as_ref())
    );
    pipe.client.stream_send(0, b"still", true).unwrap();
    pipe.run_for(Duration::from_millis(100)).unwrap();
    assert!(pipe.server.stream_readable(0));
}

#[test]
fn retire_dcid_keeps_the_last_id() {
    let mut pipe = settled(2);
    // Use up the spare one, then the current one cannot go.
    while pipe.client.available_dcids() > 0 {
        let current = pipe.client.cids.current_dcid_seq();
        pipe.client.retire_dcid(current).unwrap();
    }
    let current = pipe.client.cids.current_dcid_seq();
    assert_eq!(
        pipe.client.retire_dcid(current),
        Err(Error::OutOfIdentifiers)
    );
}

/// quiche's default: a connection issues no ID beyond the handshake's by itself; the IDs the
/// application gives `new_scid` reach the peer, and one the peer retires is not replaced.
#[test]
fn without_automatic_ids_only_the_applications_ids_are_issued() {
    let mut client = client_config();
    client.enable_automatic_connection_ids(false);
    let mut server = server_config();
    server.enable_automatic_connection_ids(false);
    for c in [&mut client, &mut server] {
        c.set_active_connection_id_limit(3);
    }
    let mut pipe = Pipe::new(&mut client, &mut server).unwrap();
    pipe.handshake().unwrap();
    pipe.run_for(Duration::from_millis(200)).unwrap();
    assert_eq!(pipe.server.active_scids(), 1);
    assert_eq!(pipe.server.scids_left(), 2);
    assert_eq!(pipe.client.available_dcids(), 0);
    // Only one ID held: nothing to retire, whatever the sequence number.
    assert_eq!(pipe.client.retire_dcid(0), Err(Error::OutOfIdentifiers));
    assert_eq!(pipe.client.retire_dcid(7), Err(Error::OutOfIdentifiers));

    let cid = ConnectionId::from_ref(&[0x5e; 16]);
    assert_eq!(pipe.server.new_scid(&cid, 9, false), Ok(1));
    assert_eq!(pipe.server.new_scid(&cid, 9, false), Ok(1));
    pipe.run_for(Duration::from_millis(200)).unwrap();
    assert_eq!(pipe.client.available_dcids(), 1);
    assert_eq!(pipe.client.retire_dcid(7), Err(Error::InvalidState));

    // The client retires the handshake ID: it moves to the application's, and the server,
    // left with one active ID, issues no replacement.
    pipe.client.retire_dcid(0).unwrap();
    assert_eq!(pipe.client.destination_id().as_ref(), cid.as_ref());
    pipe.run_for(Duration::from_millis(200)).unwrap();
    assert_eq!(pipe.server.retired_scids(), 1);
    assert_eq!(pipe.server.active_scids(), 1);
    assert_eq!(pipe.client.available_dcids(), 0);
    pipe.client.stream_send(0, b"on the new ID", true).unwrap();
    pipe.run_for(Duration::from_millis(100)).unwrap();
    assert!(pipe.server.stream_readable(0));
}
