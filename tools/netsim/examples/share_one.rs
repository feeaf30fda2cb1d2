//! Prints the per-interval table of one two-flow run (or a rate-halving run): `share_one
//! bbr|cubic bbr|cubic QUEUE_BDP SEED`, or `share_one halving bbr|cubic|reno QUEUE_BDP SEED`.

use netsim::share::{run_share, share_table, ShareScenario};
use netsim::{Cc, Queue};
use quiche::CongestionControlAlgorithm;

fn cc(name: &str) -> Cc {
    match name {
        "bbr" => Cc::new(CongestionControlAlgorithm::Bbr, false),
        "reno" => Cc::new(CongestionControlAlgorithm::Reno, true),
        _ => Cc::default(),
    }
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 4 {
        eprintln!("usage: share_one bbr|cubic|reno bbr|cubic|reno QUEUE_BDP SEED");
        eprintln!("       share_one halving bbr|cubic|reno QUEUE_BDP SEED");
        std::process::exit(2);
    }
    let s = if a[0] == "halving" {
        ShareScenario::rate_halving(
            cc(&a[1]),
            Queue::Bdp(a[2].parse().unwrap()),
            a[3].parse().unwrap(),
        )
    } else {
        ShareScenario::two_flows(
            cc(&a[0]),
            cc(&a[1]),
            Queue::Bdp(a[2].parse().unwrap()),
            a[3].parse().unwrap(),
        )
    };
    let seed = a.last().unwrap().parse().unwrap();
    let r = run_share(&s, seed).unwrap();
    print!("{}", share_table(&r));
    if s.rate_change.is_some() {
        println!(
            "recovery (+10 ms): {:?}",
            r.queue_recovery(std::time::Duration::from_millis(10))
        );
    } else {
        println!(
            "convergence: {:?}",
            r.convergence(0.2, std::time::Duration::from_secs(1))
        );
    }
}
