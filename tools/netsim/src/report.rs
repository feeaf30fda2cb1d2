//! The text the CLI prints: one run, the min/median/max of several, the experiment matrix.

use std::fmt::Write;

use crate::matrix::MatrixRow;
use crate::scenario::Scenario;
use crate::sim::RunResult;
use crate::summary::{Stat, Summary};
use crate::units::{fmt_duration, fmt_rate, fmt_size};

/// A run in three lines.
pub fn run(r: &RunResult, s: &Scenario) -> String {
    let mut out = String::new();
    let outcome = if r.completed {
        format!("completed in {:.3} s", r.time.as_secs_f64())
    } else {
        format!(
            "NOT COMPLETED: {} of {} after {:.3} s",
            fmt_size(r.received as f64),
            fmt_size(s.size as f64),
            r.time.as_secs_f64()
        )
    };
    let _ = writeln!(
        out,
        "seed {}: {outcome} (handshake {}, {:.1} RTTs), goodput {}",
        r.seed,
        fmt_duration(r.handshake),
        r.round_trips(s.rtt()),
        fmt_rate(r.goodput_bps()),
    );
    let _ = writeln!(
        out,
        "  packets: sent {}, lost {} (spurious {}), retransmitted {} ({} of stream data), \
         PTOs {}; link drops: queue {}, random {}",
        r.sent,
        r.lost,
        r.spurious_lost,
        r.retrans,
        fmt_size(r.retrans_bytes as f64),
        r.pto,
        r.dropped_queue,
        r.dropped_random
    );
    if s.max_payload > 1200 || s.mtu.is_some() || s.mtu_drop.is_some() {
        let _ = writeln!(
            out,
            "  path MTU: payload {} at the end, probes {} ({} lost), black holes {}, \
             MTU drops {}",
            r.pmtu, r.pmtu_probes.0, r.pmtu_probes.1, r.black_holes, r.dropped_mtu
        );
    }
    let exit = match (r.first_slow_start_exit, r.first_slow_start_exit_cwnd) {
        (Some(t), Some(cwnd)) => format!(
            "first exit at {} with cwnd {}",
            fmt_duration(t),
            fmt_size(cwnd as f64)
        ),
        _ => "never left slow start".to_string(),
    };
    let end = r
        .first_slow_start_end
        .map_or(String::new(), |t| format!(", over at {}", fmt_duration(t)));
    let _ = writeln!(
        out,
        "  slow start: ended by loss {}, by delay {}; {exit}{end}; lost in first slow start {}",
        r.slow_start_loss_exits, r.slow_start_delay_exits, r.lost_in_first_slow_start
    );
    if s.ecn || s.ce_threshold.is_some() {
        let _ = writeln!(
            out,
            "  ECN: sent ECT(0) {}, marked CE by the link {}, window reductions on CE {}",
            r.ecn_ect0_sent, r.ce_marked, r.ecn_ce_congestion_events
        );
    }
    out
}

fn stat_row(out: &mut String, name: &str, s: Stat, decimals: usize) {
    let _ = writeln!(
        out,
        "{name:<28} {:>10.*} {:>10.*} {:>10.*}",
        decimals, s.min, decimals, s.median, decimals, s.max
    );
}

/// The min/median/max table of several runs.
pub fn summary(sum: &Summary, s: &Scenario) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28} {:>10} {:>10} {:>10}",
        "", "min", "median", "max"
    );
    stat_row(&mut out, "completion time (s)", sum.time(), 3);
    stat_row(
        &mut out,
        "round trips",
        sum.stat(|r| r.round_trips(s.rtt())),
        1,
    );
    stat_row(&mut out, "goodput (Mbps)", sum.goodput_mbps(), 3);
    stat_row(&mut out, "packets sent", sum.stat(|r| r.sent as f64), 0);
    stat_row(&mut out, "packets lost", sum.lost(), 0);
    stat_row(
        &mut out,
        "packets retransmitted",
        sum.stat(|r| r.retrans as f64),
        0,
    );
    stat_row(
        &mut out,
        "retransmitted stream kB",
        sum.stat(|r| r.retrans_bytes as f64 / 1e3),
        1,
    );
    stat_row(
        &mut out,
        "lost in first slow start",
        sum.lost_in_first_slow_start(),
        0,
    );
    stat_row(
        &mut out,
        "slow start ended by loss",
        sum.stat(|r| r.slow_start_loss_exits as f64),
        0,
    );
    stat_row(
        &mut out,
        "slow start ended by delay",
        sum.stat(|r| r.slow_start_delay_exits as f64),
        0,
    );
    let _ = writeln!(
        out,
        "completed {}/{} (seeds {}..={})",
        sum.completed(),
        sum.runs.len(),
        sum.runs.first().map_or(0, |r| r.seed),
        sum.runs.last().map_or(0, |r| r.seed),
    );
    out
}

/// The matrix table: one row per loss rate and algorithm, medians over the seeds.
pub fn matrix(rows: &[MatrixRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<14} {:>8} {:>8} {:>8} {:>6} {:>7} {:>9} {:>6} {:>6} {:>6}",
        "loss",
        "algorithm",
        "time s",
        "Mbps",
        "sent",
        "lost",
        "retx kB",
        "lost 1st",
        "ss-end",
        "ss-end",
        "done"
    );
    let _ = writeln!(
        out,
        "{:>5}  {:<14} {:>8} {:>8} {:>8} {:>6} {:>7} {:>9} {:>6} {:>6} {:>6}",
        "", "", "median", "median", "median", "median", "median", "SS median", "loss", "delay", ""
    );
    let mut last_loss = None;
    for row in rows {
        if last_loss.is_some_and(|l| l != row.loss) {
            out.push('\n');
        }
        last_loss = Some(row.loss);
        let s = &row.summary;
        let _ = writeln!(
            out,
            "{:>4}%  {:<14} {:>8.2} {:>8.3} {:>8.0} {:>6.0} {:>7.1} {:>9.1} {:>6.1} {:>6.1} {:>3}/{:<2}",
            row.loss * 100.0,
            row.cc.to_string(),
            s.time().median,
            s.goodput_mbps().median,
            s.stat(|r| r.sent as f64).median,
            s.lost().median,
            s.stat(|r| r.retrans_bytes as f64 / 1e3).median,
            s.lost_in_first_slow_start().median,
            s.stat(|r| r.slow_start_loss_exits as f64).median,
            s.stat(|r| r.slow_start_delay_exits as f64).median,
            s.completed(),
            s.runs.len(),
        );
    }
    out
}
