//! The calls quiche 0.30 has beyond its examples' core: the stream and datagram iterators and
//! buffer calls, the connection ID calls, `send_ack_eliciting`, `send_quantum_on_path`,
//! `is_readable`, and the `Stats` counters they move. Printed values are what both stacks
//! must agree on: results, error variants, and booleans where counts legitimately differ.

use crate::loopback::{pump, settle, CidGen, Client, Server};
use crate::Report;

/// Runs on the established connection, after the stream and datagram checks.
pub fn run(client: &mut Client, server: &mut Server, r: &mut Report) {
    settle(client, server, 20);
    iterators(client, server, r);
    dgram_buffers(client, server, r);
    ids(client, server, r);
    r.line(
        "calls.client.send_ack_eliciting",
        format!("{:?}", client.conn.send_ack_eliciting()),
    );
    let (local, peer) = (client.local, server.local);
    r.line(
        "calls.client.send_quantum_on_path>0",
        client.conn.send_quantum_on_path(local, peer) > 0,
    );
    r.line(
        "calls.client.send_quantum_on_path(unknown path)",
        client
            .conn
            .send_quantum_on_path(local, "127.0.0.1:9".parse().unwrap()),
    );
    settle(client, server, 20);
}

/// Streams 16 (client writes, the server reads through the iterators and `stream_discard`)
/// and the readable/writable queries.
fn iterators(client: &mut Client, server: &mut Server, r: &mut Report) {
    r.line("calls.client.is_readable(idle)", client.conn.is_readable());
    r.line(
        "calls.client.stream_send(16)",
        format!("{:?}", client.conn.stream_send(16, &[7u8; 100], true)),
    );
    let mut writable = Vec::new();
    while let Some(id) = client.conn.stream_writable_next() {
        writable.push(id);
    }
    r.line(
        "calls.client.stream_writable_next has 16",
        writable.contains(&16),
    );
    pump(client, server, |_, s| {
        s.only().is_some_and(|sc| sc.conn.stream_readable(16))
    });
    // Wait for the whole stream, so that what follows does not depend on packetization.
    pump(client, server, |_, s| {
        s.only()
            .is_some_and(|sc| sc.conn.stream_readable_len(16, usize::MAX) == 100)
    });
    let sc = server.only().expect("server connection");
    r.line("calls.server.is_readable", sc.conn.is_readable());
    r.line(
        "calls.server.stream_readable_len(16, 30)",
        sc.conn.stream_readable_len(16, 30),
    );
    let mut readable = Vec::new();
    while let Some(id) = sc.conn.stream_readable_next() {
        readable.push(id);
    }
    r.line(
        "calls.server.stream_readable_next has 16",
        readable.contains(&16),
    );
    r.line(
        "calls.server.stream_discard(16, 40)",
        format!("{:?}", sc.conn.stream_discard(16, 40)),
    );
    let mut rest = [0u8; 200];
    r.line(
        "calls.server.stream_recv(16) after discard",
        format!("{:?}", sc.conn.stream_recv(16, &mut rest)),
    );
    r.line(
        "calls.server.stream_closed(16) (send side open)",
        sc.conn.stream_closed(16),
    );
    r.line(
        "calls.server.stream_send(16, fin)",
        format!("{:?}", sc.conn.stream_send(16, b"ok", true)),
    );
    let mut back = [0u8; 16];
    let mut got = None;
    pump(client, server, |c, _| {
        if let Ok(v) = c.conn.stream_recv(16, &mut back) {
            got = Some(v);
        }
        got.is_some()
    });
    r.line("calls.client.stream_recv(16)", format!("{got:?}"));
    settle(client, server, 20);
    let sc = server.only().expect("server connection");
    r.line(
        "calls.server.stream_closed(16) (both sides done)",
        sc.conn.stream_closed(16),
    );
}

/// `dgram_send_buf`, `dgram_recv_peek`, `dgram_recv_buf`.
fn dgram_buffers(client: &mut Client, server: &mut Server, r: &mut Report) {
    r.line(
        "calls.client.dgram_send_buf",
        format!("{:?}", client.conn.dgram_send_buf(b"owned".to_vec())),
    );
    pump(client, server, |_, s| {
        s.only()
            .is_some_and(|sc| sc.conn.dgram_recv_front_len().is_some())
    });
    let sc = server.only().expect("server connection");
    let mut two = [0u8; 8];
    let peeked = sc.conn.dgram_recv_peek(&mut two, 2);
    r.line(
        "calls.server.dgram_recv_peek(2)",
        format!("{peeked:?} {:?}", String::from_utf8_lossy(&two[..2])),
    );
    r.line(
        "calls.server.dgram_recv_buf",
        format!(
            "{:?}",
            sc.conn
                .dgram_recv_buf()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        ),
    );
    r.line(
        "calls.server.dgram_recv_buf(empty)",
        format!("{:?}", sc.conn.dgram_recv_buf()),
    );
}

/// A new source connection ID from the client, seen by the server; retiring an unknown one.
fn ids(client: &mut Client, server: &mut Server, r: &mut Report) {
    let mut cids = CidGen::new(0x1d5);
    let cid = cids.next();
    r.line(
        "calls.client.source_ids>=1",
        client.conn.source_ids().count() >= 1,
    );
    let left = client.conn.scids_left();
    let issued = client.conn.new_scid(&cid, 0x1234_5678, true);
    r.line("calls.client.new_scid.is_ok", issued.is_ok());
    r.line(
        "calls.client.new_scid(same id again)",
        format!("{:?}", client.conn.new_scid(&cid, 0x1234_5678, true)),
    );
    r.line(
        "calls.client.active_scids>=2 (when one was left)",
        left == 0 || client.conn.active_scids() >= 2,
    );
    r.line(
        "calls.client.source_ids has the new id",
        left == 0 || client.conn.source_ids().any(|c| *c == cid),
    );
    settle(client, server, 20);
    let sc = server.only().expect("server connection");
    r.line(
        "calls.server.available_dcids>=1",
        left == 0 || sc.conn.available_dcids() >= 1,
    );
    r.line(
        "calls.server.retire_dcid(1000)",
        format!("{:?}", sc.conn.retire_dcid(1000)),
    );
    r.line(
        "calls.client.retired_scid_next(none yet)",
        format!("{:?}", client.conn.retired_scid_next()),
    );
}
