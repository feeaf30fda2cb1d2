//! One or more runs of the two-flow share experiment with each flow's sender traced:
//! `cargo run --release -p netsim --example share_trace -- PAIR QUEUE_BDP SEED...` where PAIR
//! is `bbr-bbr`, `bbr-cubic`, `cubic-bbr` or `cubic-cubic`. Prints per seed the first flow's
//! share, the balance and the convergence time (as `netsim --experiment share` judges them);
//! with `--trace`, also the goodput per second and each flow's controller every 100 ms
//! (state, pacing rate, cwnd, bytes in flight, RTT), to see why shares move or do not.

use std::time::Duration;

use netsim::share::{run_share, ShareScenario, SETTLE};
use netsim::{Cc, Queue};
use quiche::CongestionControlAlgorithm;

fn cc(name: &str) -> Cc {
    match name {
        "bbr" => Cc::new(CongestionControlAlgorithm::Bbr, false),
        "cubic" => Cc::default(),
        _ => panic!("unknown algorithm {name}: bbr or cubic"),
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let trace = args.iter().any(|a| a == "--trace");
    args.retain(|a| a != "--trace");
    if args.len() < 3 {
        eprintln!("usage: share_trace [--trace] PAIR QUEUE_BDP SEED...");
        std::process::exit(2);
    }
    let (a, b) = args[0].split_once('-').expect("PAIR is like bbr-cubic");
    let (a, b) = (cc(a), cc(b));
    let queue = Queue::Bdp(args[1].parse().expect("QUEUE_BDP is a number"));
    let seeds: Vec<u64> = args[2..]
        .iter()
        .map(|s| s.parse().expect("SEED is a number"))
        .collect();
    let results = netsim::summary::parallel_map(&seeds, 2, |&seed| {
        run_share(&ShareScenario::two_flows(a, b, queue, seed), seed)
    });
    for (seed, r) in seeds.iter().zip(results) {
        let r = r.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let (from, to) = (r.flows[1].flow.start + SETTLE, r.scenario.duration);
        println!(
            "seed {seed}: first's share {:.3} balance {:.3} converged {:?} lost {}",
            r.share(0, from, to),
            r.balance(from, to),
            r.convergence(0.2, Duration::from_secs(1)),
            r.lost()
        );
        if trace {
            println!("second  first_mbps second_mbps");
            for i in 0..r.flows[0].bytes.len() {
                println!("{i:>6} {:>11.2} {:>11.2}", r.mbps(0, i), r.mbps(1, i));
            }
            for (f, flow) in r.flows.iter().enumerate() {
                println!("flow {f}:\n{}", flow.trace_table());
            }
        }
    }
}
