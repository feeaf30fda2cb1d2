//! Extra one-way delay for chosen flows, added by tools/cclab/flows.sh to its copy of netlab's
//! linkem (netlab itself is read-only): the environment variable LINKEM_PORT_DELAY lists
//! `PORT:MILLISECONDS` pairs, comma-separated, and every TCP or UDP packet whose source or
//! destination port is listed is released that much later, in both directions, after the
//! shared bottleneck. Flows with different round-trip times then share one queue (RTT-fairness
//! runs). The extra delay is constant per flow, so each flow's packets stay in order.

use std::sync::OnceLock;

fn table() -> &'static [(u16, u64)] {
    static TABLE: OnceLock<Vec<(u16, u64)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let spec = std::env::var("LINKEM_PORT_DELAY").unwrap_or_default();
        let mut t = Vec::new();
        for pair in spec.split(',').filter(|s| !s.is_empty()) {
            let (port, ms) = pair
                .split_once(':')
                .unwrap_or_else(|| panic!("LINKEM_PORT_DELAY: {pair}: expected PORT:MS"));
            let port: u16 = port.parse().expect("LINKEM_PORT_DELAY: port");
            let ms: f64 = ms.parse().expect("LINKEM_PORT_DELAY: milliseconds");
            t.push((port, (ms * 1e6) as u64));
        }
        if !t.is_empty() {
            eprintln!("linkem: extra one-way delay per port {t:?} (ns)");
        }
        t
    })
}

/// The extra delay, in nanoseconds, of the IPv4 packet `pkt`.
pub fn extra_ns(pkt: &[u8]) -> u64 {
    let t = table();
    if t.is_empty() || pkt.len() < 20 || pkt[0] >> 4 != 4 || !matches!(pkt[9], 6 | 17) {
        return 0;
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    if pkt.len() < ihl + 4 {
        return 0;
    }
    let src = u16::from_be_bytes([pkt[ihl], pkt[ihl + 1]]);
    let dst = u16::from_be_bytes([pkt[ihl + 2], pkt[ihl + 3]]);
    t.iter()
        .find(|&&(p, _)| p == src || p == dst)
        .map_or(0, |&(_, ns)| ns)
}
