//! The packet threshold raised by spurious losses (`Config::set_enable_relaxed_loss_threshold`,
//! RFC 9002 §6.1.1), and left alone without it.

use super::*;

/// Packets 0..8 sent; an ACK of 2..8 declares 0 and 1 lost by the packet threshold (the
/// largest acknowledged, 7, is 7 and 6 past them); then they are acknowledged after all.
fn after_spurious_losses(relaxed: bool) -> Harness {
    let mut h = Harness::new(RecoveryConfig {
        relaxed_loss_threshold: relaxed,
        ..RecoveryConfig::default()
    });
    h.r.on_handshake_confirmed(h.now, &h.s);
    for _ in 0..8 {
        h.send(APP);
    }
    h.at(ms(10));
    h.ack(APP, &[2..8], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [0, 1]);
    h.at(ms(12));
    h.ack(APP, &[0..8], Duration::ZERO).unwrap();
    assert_eq!(h.out.spurious_losses, 2);
    h
}

/// Packets 8..16 sent at 12 ms, 12..16 acknowledged at 14 ms (far within the time
/// threshold): what is declared lost of 8..12, which trail the largest by 4 to 7.
fn lost_after_reordering(h: &mut Harness) -> Vec<u64> {
    for _ in 8..16 {
        h.send(APP);
    }
    h.at(ms(14));
    h.ack(APP, &[12..16], Duration::ZERO).unwrap();
    h.lost()
}

#[test]
fn spurious_losses_raise_the_packet_threshold_when_relaxed() {
    let mut h = after_spurious_losses(true);
    // One more than the larger reordering seen (7).
    assert_eq!(h.r.packet_threshold(), 8);
    assert!(lost_after_reordering(&mut h).is_empty());
}

#[test]
fn the_packet_threshold_stays_at_three_by_default() {
    let mut h = after_spurious_losses(false);
    assert_eq!(h.r.packet_threshold(), PACKET_THRESHOLD);
    assert_eq!(lost_after_reordering(&mut h), [8, 9, 10, 11]);
}

#[test]
fn the_raised_threshold_is_bounded_and_never_lowered() {
    let mut h = after_spurious_losses(true);
    // A much deeper reordering: 40 packets, the first acknowledged last.
    for _ in 8..48 {
        h.send(APP);
    }
    h.at(ms(14));
    h.ack(APP, &[9..48], Duration::ZERO).unwrap();
    assert_eq!(h.lost(), [8]);
    h.ack(APP, &[8..48], Duration::ZERO).unwrap();
    assert_eq!(h.r.packet_threshold(), MAX_PACKET_THRESHOLD);
    // A smaller reordering later leaves it where it is.
    for _ in 48..60 {
        h.send(APP);
    }
    h.at(ms(16));
    h.ack(APP, &[49..60], Duration::ZERO).unwrap();
    assert!(
        h.lost().is_empty(),
        "11 past it: within the raised threshold"
    );
    assert_eq!(h.r.packet_threshold(), MAX_PACKET_THRESHOLD);
    // Turned off, the threshold is kPacketThreshold again.
    h.r.set_relaxed_loss_threshold(false);
    assert_eq!(h.r.packet_threshold(), PACKET_THRESHOLD);
}
