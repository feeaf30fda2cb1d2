//! The release-time calls (`get_next_release_time`, `max_release_into_future`,
//! `pacing_enabled`, `gcongestion_enabled`): what they say is what the send path does.

use std::time::Duration;

use super::{client_config, server_config};
use crate::testing::{LinkConfig, Pipe};
use crate::{Config, CongestionControl, CongestionControlAlgorithm};

/// A handshake over a link with `delay` each way.
fn pipe_with_delay(client: &mut Config, delay: Duration) -> Pipe {
    let link = LinkConfig {
        delay,
        ..LinkConfig::default()
    };
    let mut pipe = Pipe::with_links(client, &mut server_config(), link.clone(), link, 5).unwrap();
    pipe.handshake().unwrap();
    pipe
}

/// Sends everything the client may send at one instant, checking that each ack-eliciting
/// datagram is released when `get_next_release_time` said before it was built. Returns how
/// many of them the pacer held back.
fn sends_follow_the_release_decision(pipe: &mut Pipe) -> usize {
    // A window well beyond one burst first: then a window's worth at once must be paced.
    pipe.client
        .stream_send(0, &vec![7u8; 4 << 20], false)
        .unwrap();
    pipe.run_until(Duration::from_secs(10), |p| {
        p.client.path_stats().cwnd > 60 * 1200
    })
    .unwrap();
    let now = pipe.now;
    let mut out = [0u8; 1500];
    let mut held = 0;
    for _ in 0..200 {
        let decision = pipe.client.get_next_release_time().unwrap();
        let Ok((_, info)) = pipe.client.send_at(&mut out, now) else {
            break;
        };
        assert_eq!(info.at, decision.time(now).unwrap_or(now));
        if decision.time(now).is_some() {
            held += 1;
            assert!(!decision.can_burst());
        }
    }
    held
}

#[test]
fn release_decisions_announce_the_send_times() {
    let mut pipe = pipe_with_delay(&mut client_config(), Duration::from_millis(20));
    assert!(pipe.client.pacing_enabled());
    let held = sends_follow_the_release_decision(&mut pipe);
    assert!(held > 5, "only {held} datagrams were paced");

    let mut unpaced = client_config();
    unpaced.enable_pacing(false);
    let mut pipe = pipe_with_delay(&mut unpaced, Duration::from_millis(20));
    assert!(!pipe.client.pacing_enabled());
    assert_eq!(sends_follow_the_release_decision(&mut pipe), 0);
    let d = pipe.client.get_next_release_time().unwrap();
    assert!(d.can_burst());
}

#[test]
fn the_release_horizon_is_an_eighth_of_the_rtt_within_1_to_5_ms() {
    // Before any RTT sample: the initial 333 ms, capped at 5 ms.
    let pipe = Pipe::new(&mut client_config(), &mut server_config()).unwrap();
    assert_eq!(
        pipe.client.max_release_into_future(),
        Duration::from_millis(5)
    );
    // 16 ms round trips: 2 ms.
    let pipe = pipe_with_delay(&mut client_config(), Duration::from_millis(8));
    let srtt = pipe.client.sender().rtt().smoothed_rtt();
    assert_eq!(pipe.client.max_release_into_future(), srtt / 8);
    assert!(srtt / 8 >= Duration::from_millis(2));
    // A LAN: 1 ms.
    let pipe = pipe_with_delay(&mut client_config(), Duration::from_micros(100));
    assert_eq!(
        pipe.client.max_release_into_future(),
        Duration::from_millis(1)
    );
}

#[test]
fn gcongestion_is_quiches_bbr() {
    let pipe = pipe_with_delay(&mut client_config(), Duration::from_millis(1));
    assert_eq!(pipe.client.gcongestion_enabled(), Some(false));
    let mut bbr = client_config();
    bbr.set_cc_algorithm(CongestionControlAlgorithm::Bbr2Gcongestion);
    let pipe = pipe_with_delay(&mut bbr, Duration::from_millis(1));
    assert_eq!(pipe.client.gcongestion_enabled(), Some(true));
    assert_eq!(pipe.client.sender().controller().name(), "bbr");
}
