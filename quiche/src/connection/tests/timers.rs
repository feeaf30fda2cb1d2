//! Timers as an event loop drives them: called a little early, `on_timeout` must not leave
//! `timeout()` at zero with nothing done (quiche's client.c stops its libev timer on a zero
//! repeat, and a closing client then never closed).

use std::time::Duration;

use super::{client_config, server_config};
use crate::testing::Pipe;

fn established() -> Pipe {
    let mut pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    pipe.handshake().unwrap();
    pipe.run_for(Duration::from_millis(200)).unwrap();
    pipe
}

#[test]
fn an_event_loop_call_just_before_the_closing_deadline_ends_the_closing_period() {
    let mut pipe = established();
    pipe.client.close(true, 0, b"").unwrap();
    let mut buf = [0u8; 1500];
    pipe.client.send_at(&mut buf, pipe.now).unwrap();
    let deadline = pipe.client.timeout_instant().expect("closing timer");

    // Too early by more than the granularity: nothing happens, and the timer stays armed.
    pipe.client
        .on_timeout_from_event_loop_at(deadline - Duration::from_millis(5));
    assert!(!pipe.client.is_closed());
    assert_eq!(pipe.client.timeout_instant(), Some(deadline));

    // Virtual time stays exact: at 0.4 ms before the deadline `on_timeout_at` waits.
    let early = deadline - Duration::from_micros(400);
    pipe.client.on_timeout_at(early);
    assert!(!pipe.client.is_closed());

    // An event loop's early wake-up within the granularity is the deadline.
    pipe.client.on_timeout_from_event_loop_at(early);
    assert!(pipe.client.is_closed());
    assert_eq!(pipe.client.timeout_instant(), None);
}

#[test]
fn a_due_delayed_ack_is_sent_even_by_a_send_that_reads_an_earlier_clock() {
    let mut pipe = established();
    let mut buf = [0u8; 1500];
    // One ack-eliciting packet: the server delays its ACK (it acknowledges every second one).
    pipe.client.stream_send(0, b"ping", false).unwrap();
    let (len, info) = pipe.client.send_at(&mut buf, pipe.now).unwrap();
    let recv = crate::RecvInfo {
        from: info.from,
        to: info.to,
    };
    pipe.server
        .recv_at(&mut buf[..len], recv, pipe.now)
        .unwrap();
    let deadline = pipe.server.spaces[2]
        .acks
        .ack_deadline()
        .expect("a delayed ACK");
    assert_eq!(pipe.server.timeout_instant(), Some(deadline));

    pipe.server.on_timeout_from_event_loop_at(deadline);
    // The application's clock, read before the timer's: the ACK is owed all the same.
    let (len, _) = pipe
        .server
        .send_at(&mut buf, deadline - Duration::from_micros(300))
        .expect("the delayed ACK");
    assert!(len > 0);
    assert!(pipe.server.timeout_instant().is_none_or(|t| t > deadline));
}
