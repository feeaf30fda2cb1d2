use super::*;
use crate::cc::test_sender::TestSender;
use crate::cc::{CcStats, CongestionControl, CongestionControlAlgorithm, Controller, Cubic};

const MSS: usize = 1200;

/// N_RTT_SAMPLE as a count of ACKs (each `ack_each` ACK carries one sample).
const N: usize = N_RTT_SAMPLE as usize;

/// Conservative Slow Start's growth for `bytes` acknowledged (whole divisions only: the
/// tests acknowledge multiples of 1200 bytes, which 4, 8 and 12 all divide).
fn css(bytes: usize) -> usize {
    bytes / CSS_GROWTH_DIVISOR
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn config(variant: HystartVariant, pacing: bool, initial_window_packets: usize) -> CcConfig {
    CcConfig {
        initial_window_packets,
        hystart: true,
        hystart_variant: variant,
        pacing,
        ..CcConfig::default()
    }
}

fn sender_with(
    algorithm: CongestionControlAlgorithm,
    cfg: &CcConfig,
    mss: usize,
) -> TestSender<Controller> {
    TestSender::new(Controller::new(algorithm, cfg), mss, ms(60))
}

fn sender(variant: HystartVariant) -> TestSender<Controller> {
    let cfg = config(variant, true, 10);
    sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS)
}

/// Three round trips at 60 ms (cwnd 10 -> 80 datagrams), then the window of 80 datagrams
/// is sent and acknowledged after `rtt`, one frame each. Returns those 80 packets.
fn rise_to(s: &mut TestSender<Controller>, rtt: Duration) -> Vec<u64> {
    for _ in 0..3 {
        s.round_trip_rtt(ms(60));
    }
    assert_eq!(s.cc.cwnd(), 80 * MSS);
    assert_eq!(s.cc.state(), CcState::SlowStart);
    let sent = s.send_window();
    s.advance(rtt);
    sent
}

/// The window after [`sender_in_css`]: 80 datagrams, one more for each of the first
/// N_RTT_SAMPLE ACKs, then Conservative Slow Start's share of the other ACKs.
const CSS_CWND: usize = (80 + N) * MSS + (80 - N) * MSS / CSS_GROWTH_DIVISOR;

/// Enters Conservative Slow Start in the fourth round trip (RTT 60 -> 70 ms) and finishes
/// that round trip: cwnd = [`CSS_CWND`].
fn sender_in_css(algorithm: CongestionControlAlgorithm) -> TestSender<Controller> {
    let cfg = config(HystartVariant::Css, true, 10);
    let mut s = sender_with(algorithm, &cfg, MSS);
    let sent = rise_to(&mut s, ms(70));
    s.ack_each(&sent);
    assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
    assert_eq!(s.cc.cwnd(), CSS_CWND);
    s
}

#[test]
fn tuned_constants_stay_within_rfc_9406() {
    // §4.3: CSS_GROWTH_DIVISOR MUST be at least 2; every TCP takes at least one RTT sample
    // per round. The tests below need a round minimum over two samples or more.
    const { assert!(CSS_GROWTH_DIVISOR >= 2) };
    const { assert!(N_RTT_SAMPLE >= 2) };
    assert_eq!(MSS % CSS_GROWTH_DIVISOR, 0);
}

#[test]
fn rtt_threshold_is_a_sixteenth_clamped_to_4_and_16_ms() {
    assert_eq!(HyStart::rtt_threshold(ms(60)), ms(4));
    assert_eq!(HyStart::rtt_threshold(ms(100)), Duration::from_micros(6250));
    assert_eq!(
        HyStart::rtt_threshold(ms(200)),
        Duration::from_micros(12_500)
    );
    assert_eq!(HyStart::rtt_threshold(ms(20)), ms(4));
    assert_eq!(HyStart::rtt_threshold(ms(300)), ms(16));
    assert_eq!(HyStart::rtt_threshold(Duration::ZERO), ms(4));
}

#[test]
fn leaves_slow_start_when_the_rtt_rises_by_the_threshold() {
    let mut s = sender(HystartVariant::Css);
    let sent = rise_to(&mut s, ms(70));
    let start = s.now;
    // 70 >= 60 + 4 ms, but only once the round has N_RTT_SAMPLE samples.
    s.ack_each(&sent[..N - 1]);
    assert_eq!(s.cc.state(), CcState::SlowStart);
    assert_eq!(s.cc.cwnd(), (80 + N - 1) * MSS);
    s.ack_each(&sent[N - 1..N]);
    assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
    assert_eq!(s.cc.cwnd(), (80 + N) * MSS);
    assert_eq!(s.cc.ssthresh(), None);
    assert_eq!(
        s.cc.stats(),
        CcStats {
            slow_start_delay_exits: 1,
            first_slow_start_exit: Some(start),
            first_slow_start_exit_cwnd: Some((80 + N) * MSS),
            ..CcStats::default()
        }
    );
    // Conservative Slow Start: 1/CSS_GROWTH_DIVISOR of the acknowledged bytes.
    s.ack_each(&sent[N..]);
    assert_eq!(s.cc.cwnd(), (80 + N) * MSS + (80 - N) * css(MSS));
}

#[test]
fn rtt_noise_below_the_threshold_does_not_end_slow_start() {
    // +3 ms of jitter at 60 ms, in every other round.
    let mut s = sender(HystartVariant::Css);
    for round in 0..7 {
        let rtt = if round % 2 == 0 { 60 } else { 63 };
        s.round_trip_rtt(ms(rtt));
        assert_eq!(s.cc.state(), CcState::SlowStart, "round {round}");
    }
    assert_eq!(s.cc.cwnd(), (10 * MSS) << 7);
    // Just under the threshold (63 < 60 + 4 ms) is still noise.
    let mut s = sender(HystartVariant::Css);
    let sent = rise_to(&mut s, ms(63));
    s.ack_each(&sent);
    assert_eq!(s.cc.state(), CcState::SlowStart);
    assert_eq!(s.cc.cwnd(), 160 * MSS);
    assert_eq!(s.cc.stats().slow_start_delay_exits, 0);
    // The rise must last: a lower sample among the round's first N_RTT_SAMPLE keeps its
    // minimum below.
    let mut s = sender(HystartVariant::Css);
    let sent = rise_to(&mut s, ms(70));
    s.ack_each(&sent[..N - 1]);
    s.now -= ms(10);
    s.ack_each(&sent[N - 1..]);
    assert_eq!(s.cc.state(), CcState::SlowStart);
}

#[test]
fn conservative_slow_start_resumes_slow_start_when_the_rtt_falls() {
    let mut s = sender_in_css(CongestionControlAlgorithm::Reno);
    let cwnd = s.cc.cwnd();
    // The next round trip is back at 65 ms, below the 70 ms baseline: the first
    // N_RTT_SAMPLE ACKs grow at Conservative Slow Start's rate, then slow start resumes.
    let sent = s.send_window();
    assert_eq!(sent.len(), cwnd / MSS);
    s.advance(ms(65));
    s.ack_each(&sent[..N - 1]);
    assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
    s.ack_each(&sent[N - 1..N]);
    assert_eq!(s.cc.state(), CcState::SlowStart);
    assert_eq!(s.cc.cwnd(), cwnd + N * css(MSS));
    s.ack_each(&sent[N..]);
    assert_eq!(s.cc.cwnd(), cwnd + N * css(MSS) + (sent.len() - N) * MSS);
    assert_eq!(s.cc.stats().css_resumed_slow_start, 1);
    // Detection is live again: a rise over the 65 ms round re-enters CSS.
    let sent = s.send_window();
    s.advance(ms(80));
    s.ack_each(&sent);
    assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
    assert_eq!(s.cc.stats().slow_start_delay_exits, 2);
}

#[test]
fn conservative_slow_start_ends_in_congestion_avoidance_after_five_rounds() {
    let mut s = sender_in_css(CongestionControlAlgorithm::Reno);
    // The partial round CSS began in counts: four more full rounds at a quarter rate.
    for round in 2..=5 {
        let cwnd = s.cc.cwnd();
        let sent = s.round_trip_rtt(ms(70));
        assert_eq!(
            s.cc.state(),
            CcState::ConservativeSlowStart,
            "round {round}"
        );
        // The first ACK of the round trip ended the previous round and grew too.
        assert_eq!(s.cc.cwnd(), cwnd + sent.len() * css(MSS), "round {round}");
    }
    let cwnd = s.cc.cwnd();
    let sent = s.send_window();
    s.advance(ms(70));
    // The ACK that ends the fifth round ends CSS: ssthresh = cwnd.
    let css_start = s.cc.stats().first_slow_start_exit;
    assert_eq!(
        s.cc.stats().first_slow_start_end,
        None,
        "CSS is still slow start"
    );
    s.ack_each(&sent[..1]);
    assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
    assert_eq!(s.cc.stats().first_slow_start_end, Some(s.now));
    assert!(css_start.is_some_and(|t| t < s.now));
    assert_eq!(s.cc.ssthresh(), Some(cwnd));
    assert_eq!(s.cc.cwnd(), cwnd);
    // Then Reno's one datagram per window.
    s.ack_each(&sent[1..]);
    s.round_trip_rtt(ms(70));
    assert_eq!(s.cc.cwnd(), cwnd + MSS);
    assert_eq!(s.cc.stats().slow_start_delay_exits, 1);
    assert_eq!(s.cc.stats().slow_start_loss_exits, 0);
}

#[test]
fn cubic_starts_its_curve_at_k_zero_after_hystart() {
    let mut s = sender_in_css(CongestionControlAlgorithm::CUBIC);
    for _ in 2..=5 {
        s.round_trip_rtt(ms(70));
    }
    let cwnd = s.cc.cwnd();
    s.round_trip_rtt(ms(70));
    assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
    assert_eq!(s.cc.ssthresh(), Some(cwnd));
    let Controller::CubicHystart(c) = &s.cc else {
        panic!("CUBIC with HyStart++ expected");
    };
    let cubic: &Cubic = c.growth();
    assert_eq!(cubic.k(), Some(0.0));
    assert_eq!(cubic.w_max(), None);
    assert_eq!(cubic.cwnd_prior(), cwnd as f64);
}

#[test]
fn loss_in_conservative_slow_start_ends_it() {
    let mut s = sender_in_css(CongestionControlAlgorithm::Reno);
    let sent = s.send_window();
    s.advance(ms(70));
    let lost_at = s.now;
    assert!(s.lose(&sent[..1], false));
    assert_eq!(s.cc.stats().first_slow_start_end, Some(lost_at));
    assert_eq!(s.cc.state(), CcState::Recovery);
    assert_eq!(s.cc.cwnd(), CSS_CWND / 2);
    s.ack_each(&sent[1..]);
    s.advance(ms(1));
    s.round_trip_rtt(ms(70));
    assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
    let stats = s.cc.stats();
    assert_eq!(stats.slow_start_delay_exits, 1);
    assert_eq!(stats.slow_start_loss_exits, 1);
    assert_eq!(stats.first_slow_start_exit_cwnd, Some((80 + N) * MSS));
}

#[test]
fn limited_slow_start_grows_by_a_quarter_of_ssthresh_over_cwnd() {
    let mut s = sender(HystartVariant::Lss);
    s.round_trip_rtt(ms(60));
    s.round_trip_rtt(ms(60));
    let sent = s.send_window();
    assert_eq!(sent.len(), 40);
    s.advance(ms(70));
    s.ack_each(&sent[..N]);
    // ssthresh = cwnd = 40 + N_RTT_SAMPLE datagrams at the N_RTT_SAMPLE-th sample.
    let ssthresh = (40 + N) * MSS;
    assert_eq!(s.cc.state(), CcState::LimitedSlowStart);
    assert_eq!(s.cc.ssthresh(), Some(ssthresh));
    assert_eq!(s.cc.cwnd(), ssthresh);
    // K = cwnd / (0.25 * ssthresh); cwnd += acked / K: a quarter datagram while
    // cwnd = ssthresh, a little less after.
    s.ack_each(&sent[N..N + 1]);
    assert_eq!(
        s.cc.cwnd(),
        ssthresh + 300,
        "1200 * ssthresh / (4 * ssthresh)"
    );
    let (mut cwnd, mut frac) = (ssthresh + 300, 0.0);
    for _ in N + 1..40 {
        let grow = frac + 1200.0 * ssthresh as f64 / (4.0 * cwnd as f64);
        assert!(grow < 300.0);
        cwnd += grow.floor() as usize;
        frac = grow - grow.floor();
    }
    s.ack_each(&sent[N + 1..]);
    assert_eq!(s.cc.cwnd(), cwnd);
    // It stays in charge above ssthresh, until the first congestion event.
    s.round_trip_rtt(ms(70));
    assert_eq!(s.cc.state(), CcState::LimitedSlowStart);
    assert!(s.cc.cwnd() > cwnd);
    let before = s.cc.cwnd();
    let sent = s.send_window();
    s.advance(ms(70));
    assert!(s.lose(&sent[..1], false));
    assert_eq!(s.cc.cwnd(), before / 2);
    s.ack_each(&sent[1..]);
    s.advance(ms(1));
    // Reno's congestion avoidance: 33 datagrams per round trip, one more per window.
    s.round_trip_rtt(ms(70));
    s.round_trip_rtt(ms(70));
    assert_eq!(s.cc.state(), CcState::CongestionAvoidance);
    assert_eq!(s.cc.cwnd(), before / 2 + MSS);
    let stats = s.cc.stats();
    assert_eq!(
        (stats.slow_start_delay_exits, stats.slow_start_loss_exits),
        (1, 1)
    );
}

#[test]
fn limited_slow_start_waits_for_low_cwnd() {
    // 600-byte packets on a 1200-byte-MSS controller, so that a round has N_RTT_SAMPLE
    // samples well before cwnd reaches LOW_CWND = 16 * 1200 bytes.
    for variant in [HystartVariant::Css, HystartVariant::Lss] {
        let cfg = config(variant, true, 4);
        let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, 600);
        s.round_trip_rtt(ms(60));
        assert_eq!(s.cc.cwnd(), 9_600);
        let sent = s.send_window();
        assert_eq!(sent.len(), 16);
        s.advance(ms(80));
        s.ack_each(&sent[..N]);
        assert_eq!(s.cc.cwnd(), 9_600 + N * 600);
        if variant == HystartVariant::Css {
            assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
            continue;
        }
        s.ack_each(&sent[N..15]);
        assert_eq!(s.cc.state(), CcState::SlowStart);
        s.ack_each(&sent[15..]);
        assert_eq!(s.cc.state(), CcState::LimitedSlowStart);
        assert_eq!(s.cc.ssthresh(), Some(LOW_CWND_PACKETS * MSS));
    }
}

#[test]
fn l_limit_caps_growth_per_ack_only_without_pacing() {
    for (pacing, grown) in [(false, 8 * MSS), (true, 10 * MSS)] {
        let cfg = config(HystartVariant::Css, pacing, 10);
        let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS);
        let sent = s.send_window();
        s.advance(ms(60));
        s.ack(&sent);
        assert_eq!(s.cc.cwnd(), 10 * MSS + grown, "pacing {pacing}");
    }
    // Conservative Slow Start applies the cap before dividing.
    let cfg = config(HystartVariant::Css, false, 10);
    let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS);
    let sent = rise_to(&mut s, ms(70));
    s.ack_each(&sent);
    assert_eq!(s.cc.state(), CcState::ConservativeSlowStart);
    let cwnd = s.cc.cwnd();
    let sent = s.send_window();
    s.advance(ms(70));
    s.ack(&sent[..20]);
    assert_eq!(s.cc.cwnd(), cwnd + css(8 * MSS));
}

#[test]
fn persistent_congestion_collapses_every_variant() {
    use CongestionControlAlgorithm::{Reno, CUBIC};
    let variants = [
        (Reno, false, HystartVariant::Css, CcState::SlowStart),
        (
            Reno,
            true,
            HystartVariant::Css,
            CcState::ConservativeSlowStart,
        ),
        (Reno, true, HystartVariant::Lss, CcState::LimitedSlowStart),
        (CUBIC, false, HystartVariant::Css, CcState::SlowStart),
        (
            CUBIC,
            true,
            HystartVariant::Css,
            CcState::ConservativeSlowStart,
        ),
        (CUBIC, true, HystartVariant::Lss, CcState::LimitedSlowStart),
    ];
    for (algorithm, hystart, variant, state) in variants {
        let cfg = CcConfig {
            hystart,
            ..config(variant, true, 10)
        };
        let mut s = sender_with(algorithm, &cfg, MSS);
        let sent = rise_to(&mut s, ms(70));
        s.ack_each(&sent);
        assert_eq!(s.cc.state(), state, "{algorithm:?} {hystart} {variant:?}");
        let sent = s.send_window();
        s.advance(ms(700));
        assert!(s.lose(&sent, true));
        assert_eq!(s.cc.cwnd(), 2 * MSS, "{algorithm:?} {hystart} {variant:?}");
        assert_eq!(s.cc.state(), CcState::SlowStart);
        // Plain slow start afterwards (HyStart++ only runs the first one).
        s.round_trip_rtt(ms(60));
        s.round_trip_rtt(ms(90));
        assert_eq!(s.cc.cwnd(), 8 * MSS);
        assert_eq!(s.cc.state(), CcState::SlowStart);
    }
}

#[test]
fn loss_ends_standard_slow_start_and_is_counted() {
    let cfg = CcConfig {
        hystart: false,
        ..CcConfig::default()
    };
    let mut s = sender_with(CongestionControlAlgorithm::Reno, &cfg, MSS);
    s.round_trip();
    let sent = s.send_window();
    s.advance(ms(60));
    let at = s.now;
    assert!(s.lose(&sent[..1], false));
    assert_eq!(
        s.cc.stats(),
        CcStats {
            slow_start_loss_exits: 1,
            first_slow_start_exit: Some(at),
            first_slow_start_exit_cwnd: Some(24_000),
            first_slow_start_end: Some(at),
            startup_exit: Some(crate::cc::StartupExit {
                cwnd: 24_000,
                bandwidth: None,
                reason: crate::cc::StartupExitReason::Loss,
            }),
            ..CcStats::default()
        }
    );
    // A later undo does not erase the record.
    s.cc.on_spurious_congestion(s.now);
    assert_eq!(s.cc.stats().slow_start_loss_exits, 1);
    assert_eq!(s.cc.stats().spurious_undos, 1);
    assert_eq!(s.cc.state(), CcState::SlowStart);
}

#[test]
fn only_application_space_packets_delimit_rounds() {
    let mut hs = HyStart::new(&CcConfig::default());
    let win = Window {
        cwnd: 12_000,
        ssthresh: usize::MAX,
        mss: MSS,
        min_cwnd: 2 * MSS,
    };
    let info = |epoch, pkt_num| SentInfo {
        epoch,
        pkt_num,
        size: MSS,
        ack_eliciting: true,
        bytes_in_flight: MSS,
    };
    let now = crate::recovery::test_now();
    hs.on_packet_sent(now, &info(Epoch::Handshake, 7), &win);
    assert_eq!(hs.window_end, None);
    hs.on_packet_sent(now, &info(Epoch::Application, 3), &win);
    hs.on_packet_sent(now, &info(Epoch::Application, 4), &win);
    assert_eq!((hs.window_end, hs.next_pkt_num), (Some(3), 5));
}
