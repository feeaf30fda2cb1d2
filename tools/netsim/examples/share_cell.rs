//! One cell of the two-flow experiment with BBR's departures from the draft as flags, for
//! quick comparisons: `share_cell bbr+bbr|bbr+cubic|cubic+bbr QUEUE_BDP SEEDS [maxbw=N]
//! [gain=G] [cruisebw] [skiprtt] [from=FIRST_SEED]`. Prints per seed the first flow's share, the balance and the
//! convergence time (from 10 s after the second flow starts), then medians.

use std::time::Duration;

use netsim::share::{run_share, ShareScenario, SETTLE};
use netsim::summary::{default_threads, parallel_map};
use netsim::{Cc, Queue};
use quiche::{BbrOptions, CongestionControlAlgorithm};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 3 {
        eprintln!("usage: share_cell bbr+bbr|bbr+cubic|cubic+bbr QUEUE_BDP SEEDS [maxbw=N] [gain=G] [cruisebw]");
        std::process::exit(2);
    }
    let mut o = BbrOptions::default();
    let mut first_seed = 1;
    for opt in &a[3..] {
        if let Some(n) = opt.strip_prefix("maxbw=") {
            o.max_bw_filter_cycles = n.parse().unwrap();
        } else if let Some(g) = opt.strip_prefix("gain=") {
            o.probe_bw_cwnd_gain = (g.parse::<f64>().unwrap() * 1000.0) as u16;
        } else if opt == "cruisebw" {
            o.cruise_on_bounded_bw = true;
        } else if let Some(n) = opt.strip_prefix("from=") {
            first_seed = n.parse().unwrap();
        } else if opt == "skiprtt" {
            o.skip_probe_rtt_without_queue = true;
        }
    }
    let bbr = Cc {
        bbr: o,
        ..Cc::new(CongestionControlAlgorithm::Bbr, false)
    };
    let cc = |n: &str| if n == "bbr" { bbr } else { Cc::default() };
    let (x, y) = a[0].split_once('+').unwrap();
    let (first, second) = (cc(x), cc(y));
    let queue = Queue::Bdp(a[1].parse().unwrap());
    let n: u64 = a[2].parse().unwrap();
    let seeds: Vec<u64> = (first_seed..first_seed + n).collect();
    let rows = parallel_map(&seeds, default_threads().min(2), |&seed| {
        let r = run_share(&ShareScenario::two_flows(first, second, queue, seed), seed).unwrap();
        let from = r.flows[1].flow.start + SETTLE;
        let to = r.scenario.duration;
        let conv = r.convergence(0.2, Duration::from_secs(1));
        (r.share(0, from, to), r.balance(from, to), conv)
    });
    let mut conv_s = Vec::new();
    for (seed, (share, bal, conv)) in seeds.iter().zip(&rows) {
        println!("seed {seed}: first's share {share:.3} balance {bal:.3} converged {conv:?}");
        conv_s.push(conv.map_or(30.0, |d| d.as_secs_f64()));
    }
    let shares: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let bals: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let within = rows
        .iter()
        .filter(|r| r.2.is_some_and(|d| d <= SETTLE))
        .count();
    println!(
        "{} {queue:?} {o:?}: share median {:.3} (min {:.3}, max {:.3}); balance median {:.3} (min {:.3}); converged median {:.1} s, {within}/{} within 10 s",
        a[0],
        median(shares.clone()),
        shares.iter().cloned().fold(1.0, f64::min),
        shares.iter().cloned().fold(0.0, f64::max),
        median(bals.clone()),
        bals.iter().cloned().fold(1.0, f64::min),
        median(conv_s),
        seeds.len()
    );
}
