//! ACK range set fuzzing: a bounded `RangeSet` against a model (an ordered set of numbers
//! that evicts its lowest runs beyond the capacity), compared after every operation.
#![no_main]

use std::collections::BTreeSet;
use std::ops::Range;

use libfuzzer_sys::fuzz_target;
use quiche::ranges::RangeSet;

fn runs(m: &BTreeSet<u64>) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for &v in m {
        match out.last_mut() {
            Some(r) if r.end == v => r.end = v + 1,
            _ => out.push(v..v + 1),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&cap, ops)) = data.split_first() else {
        return;
    };
    let cap = usize::from(cap % 8) + 1;
    let mut s = RangeSet::new(cap);
    let mut m = BTreeSet::new();
    for op in ops.chunks_exact(3) {
        // Numbers in a small window so that ranges meet, overlap and split.
        let a = u64::from(op[1]);
        match op[0] % 3 {
            0 => {
                let b = a + u64::from(op[2] % 16);
                s.insert(a..b);
                m.extend(a..b);
            }
            1 => {
                s.push_item(a);
                m.insert(a);
            }
            _ => {
                s.remove_until(a);
                m.retain(|&v| v > a);
            }
        }
        loop {
            let r = runs(&m);
            if r.len() <= cap {
                break;
            }
            for v in r[0].clone() {
                m.remove(&v);
            }
        }
        let got: Vec<Range<u64>> = s.iter().collect();
        assert_eq!(got, runs(&m), "capacity {cap}");
        assert!(s.len() <= s.capacity());
        assert_eq!(s.first(), m.first().copied());
        assert_eq!(s.last(), m.last().copied());
    }
});
