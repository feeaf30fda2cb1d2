//! What the plot and the summary show, extracted from a trace: the recovery metrics as step
//! series, lost packets, congestion-state changes, and the slow-start exit.

use std::fmt;

use serde_json::Value;

use crate::sqlog::{Header, Trace};

/// A metric over time as a step function: each point's value holds until the next point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// (time in ms, value) in time order; only points where the value changed.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    fn push(&mut self, time: f64, value: f64) {
        if self.points.last().is_some_and(|&(_, v)| v == value) {
            return;
        }
        self.points.push((time, value));
    }

    /// The value in force at `time`, if the series had started by then.
    pub fn at(&self, time: f64) -> Option<f64> {
        let i = self.points.partition_point(|&(t, _)| t <= time);
        i.checked_sub(1).map(|i| self.points[i].1)
    }

    /// The largest value.
    pub fn max(&self) -> Option<f64> {
        self.points.iter().map(|p| p.1).reduce(f64::max)
    }

    /// The last value.
    pub fn last(&self) -> Option<f64> {
        self.points.last().map(|p| p.1)
    }

    /// Whether the series has no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// A `recovery:packet_lost` event.
#[derive(Clone, Debug, PartialEq)]
pub struct Loss {
    /// When the loss was declared (ms).
    pub time: f64,
    /// The lost packet's number, if logged.
    pub packet_number: Option<u64>,
    /// Bytes in flight just before the loss was declared, where the marker goes.
    pub bytes_in_flight: Option<f64>,
}

/// A `recovery:congestion_state_updated` event.
#[derive(Clone, Debug, PartialEq)]
pub struct StateChange {
    /// When (ms).
    pub time: f64,
    /// The state left (`data.old`, or the previous event's new state).
    pub old: Option<String>,
    /// The state entered (`data.new`).
    pub new: String,
}

/// Why slow start ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCause {
    /// A delay increase (HyStart++): the controller left slow start with no loss just before.
    Delay,
    /// Loss: the controller entered recovery, or left slow start right after a loss.
    Loss,
}

/// The first time the connection left slow start.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowStartExit {
    /// When (ms).
    pub time: f64,
    /// Why.
    pub cause: ExitCause,
    /// The state entered.
    pub to: String,
    /// The congestion window at that moment (bytes).
    pub cwnd: Option<f64>,
    /// When the controller went back to slow start afterwards, if it did (a HyStart++ exit
    /// judged spurious by Conservative Slow Start).
    pub resumed: Option<f64>,
}

/// The text summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// `transport:packet_sent` events.
    pub packets_sent: u64,
    /// `transport:packet_received` events.
    pub packets_received: u64,
    /// `recovery:packet_lost` events.
    pub packets_lost: u64,
    /// When the first loss was declared (ms).
    pub first_loss: Option<f64>,
    /// The first slow-start exit, if any.
    pub slow_start_exit: Option<SlowStartExit>,
    /// The last congestion window (bytes).
    pub final_cwnd: Option<f64>,
    /// The largest congestion window (bytes).
    pub max_cwnd: Option<f64>,
    /// The last smoothed RTT (ms).
    pub final_smoothed_rtt: Option<f64>,
    /// The last minimum RTT (ms).
    pub min_rtt: Option<f64>,
    /// Time from the first to the last event (ms).
    pub duration: f64,
}

/// Everything drawn and summarised.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// The trace's header.
    pub header: Header,
    /// Congestion window (bytes).
    pub cwnd: Series,
    /// Bytes in flight.
    pub bytes_in_flight: Series,
    /// Slow-start threshold (bytes); absent until the first congestion event.
    pub ssthresh: Series,
    /// Smoothed RTT (ms), from the first RTT sample on.
    pub smoothed_rtt: Series,
    /// Minimum RTT (ms), from the first RTT sample on.
    pub min_rtt: Series,
    /// Lost packets.
    pub losses: Vec<Loss>,
    /// Congestion-state changes.
    pub states: Vec<StateChange>,
    /// Time of the first event (ms).
    pub start: f64,
    /// Time of the last event (ms).
    pub end: f64,
    /// The text summary.
    pub summary: Summary,
}

/// How far before a state change a loss still counts as its cause (ms). Loss detection and the
/// resulting state change are logged at the same instant; the margin absorbs rounding.
const LOSS_CAUSE_WINDOW: f64 = 1.0;

fn number(data: &Value, key: &str) -> Option<f64> {
    data.get(key)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
}

fn is_slow_start(state: &str) -> bool {
    state == "slow_start"
}

impl Analysis {
    /// Extracts the series and the summary from a trace.
    pub fn new(trace: &Trace) -> Analysis {
        let mut a = Analysis {
            header: trace.header.clone(),
            start: trace.events.first().map_or(0.0, |e| e.time),
            end: trace.events.last().map_or(0.0, |e| e.time),
            ..Analysis::default()
        };
        // Before the first RTT sample the smoothed RTT is the configured initial guess
        // (RFC 9002 §6.2.2: 333 ms), which would squash the real values on the axis.
        let mut rtt_sampled = false;
        for ev in &trace.events {
            a.start = a.start.min(ev.time);
            a.end = a.end.max(ev.time);
            let data = &ev.data;
            match ev.name.as_str() {
                "transport:packet_sent" => a.summary.packets_sent += 1,
                "transport:packet_received" => a.summary.packets_received += 1,
                "recovery:packet_lost" => {
                    a.losses.push(Loss {
                        time: ev.time,
                        packet_number: data
                            .get("header")
                            .and_then(|h| h.get("packet_number"))
                            .and_then(Value::as_u64),
                        bytes_in_flight: a.bytes_in_flight.last(),
                    });
                }
                "recovery:metrics_updated" => {
                    let t = ev.time;
                    if let Some(v) = number(data, "congestion_window") {
                        a.cwnd.push(t, v);
                    }
                    if let Some(v) = number(data, "bytes_in_flight") {
                        a.bytes_in_flight.push(t, v);
                    }
                    if let Some(v) = number(data, "ssthresh") {
                        a.ssthresh.push(t, v);
                    }
                    let sample = ["latest_rtt", "min_rtt"]
                        .iter()
                        .any(|k| number(data, k).is_some_and(|v| v > 0.0));
                    if sample && !rtt_sampled {
                        rtt_sampled = true;
                    }
                    if rtt_sampled {
                        if let Some(v) = number(data, "smoothed_rtt") {
                            a.smoothed_rtt.push(t, v);
                        }
                        if let Some(v) = number(data, "min_rtt").filter(|&v| v > 0.0) {
                            a.min_rtt.push(t, v);
                        }
                    }
                }
                "recovery:congestion_state_updated" => {
                    if let Some(new) = data.get("new").and_then(Value::as_str) {
                        let old = data
                            .get("old")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                            .or_else(|| a.states.last().map(|s| s.new.clone()));
                        a.states.push(StateChange {
                            time: ev.time,
                            old,
                            new: new.to_string(),
                        });
                    }
                }
                _ => {}
            }
        }
        a.summarise();
        a
    }

    fn summarise(&mut self) {
        let s = &mut self.summary;
        s.packets_lost = self.losses.len() as u64;
        s.first_loss = self.losses.first().map(|l| l.time);
        s.final_cwnd = self.cwnd.last();
        s.max_cwnd = self.cwnd.max();
        s.final_smoothed_rtt = self.smoothed_rtt.last();
        s.min_rtt = self.min_rtt.last();
        s.duration = self.end - self.start;
        s.slow_start_exit = first_slow_start_exit(&self.states, &self.losses, &self.cwnd);
    }
}

/// The first move out of slow start. Application-limited periods are pauses, not exits: the
/// state before one is what an exit is judged against.
fn first_slow_start_exit(
    states: &[StateChange],
    losses: &[Loss],
    cwnd: &Series,
) -> Option<SlowStartExit> {
    let mut active: Option<&str> = None;
    for (i, sc) in states.iter().enumerate() {
        if sc.new == "application_limited" {
            if active.is_none() {
                active = sc.old.as_deref();
            }
            continue;
        }
        let from = active.or(sc.old.as_deref());
        if from.is_some_and(is_slow_start) && !is_slow_start(&sc.new) {
            let loss_just_before = losses
                .iter()
                .any(|l| l.time <= sc.time && l.time >= sc.time - LOSS_CAUSE_WINDOW);
            let cause = if sc.new == "recovery" || loss_just_before {
                ExitCause::Loss
            } else {
                ExitCause::Delay
            };
            let resumed = states[i + 1..]
                .iter()
                .find(|later| is_slow_start(&later.new))
                .map(|later| later.time);
            return Some(SlowStartExit {
                time: sc.time,
                cause,
                to: sc.new.clone(),
                cwnd: cwnd.at(sc.time),
                resumed,
            });
        }
        active = Some(sc.new.as_str());
    }
    None
}

/// Bytes as "12.3 kB" / "1.20 MB".
pub fn fmt_bytes(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} kB", v / 1e3)
    } else {
        format!("{v:.0} B")
    }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lost_pct = if self.packets_sent > 0 {
            format!(
                " ({:.2}% of sent)",
                100.0 * self.packets_lost as f64 / self.packets_sent as f64
            )
        } else {
            String::new()
        };
        writeln!(f, "duration         {:.1} ms", self.duration)?;
        writeln!(
            f,
            "packets          {} sent, {} received, {} lost{lost_pct}",
            self.packets_sent, self.packets_received, self.packets_lost
        )?;
        match &self.slow_start_exit {
            Some(x) => {
                let cause = match x.cause {
                    ExitCause::Delay => "by delay (HyStart++)",
                    ExitCause::Loss => "by loss",
                };
                write!(
                    f,
                    "slow start exit  {:.1} ms {cause}: slow_start -> {}, cwnd {}",
                    x.time,
                    x.to,
                    opt(x.cwnd, fmt_bytes)
                )?;
                if let Some(r) = x.resumed {
                    write!(f, "; back to slow start at {r:.1} ms")?;
                }
                writeln!(f)?;
            }
            None => writeln!(f, "slow start exit  none (never left slow start)")?,
        }
        writeln!(
            f,
            "first loss       {}",
            opt(self.first_loss, |t| format!("{t:.1} ms"))
        )?;
        writeln!(
            f,
            "cwnd             final {}, max {}",
            opt(self.final_cwnd, fmt_bytes),
            opt(self.max_cwnd, fmt_bytes)
        )?;
        writeln!(
            f,
            "rtt              smoothed (final) {}, min {}",
            opt(self.final_smoothed_rtt, |v| format!("{v:.1} ms")),
            opt(self.min_rtt, |v| format!("{v:.1} ms"))
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sqlog;

    /// A small trace in the shape the library writes: HyStart++ leaves slow start by delay at
    /// 300 ms, a loss at 400 ms starts recovery, congestion avoidance from 480 ms.
    pub(crate) fn synthetic_qlog() -> Vec<u8> {
        let mut s = String::new();
        let mut rec = |json: &str| {
            s.push('\x1e');
            s.push_str(json);
            s.push('\n');
        };
        rec(
            r#"{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"synthetic","description":"test trace","trace":{"vantage_point":{"type":"server"},"common_fields":{"group_id":"00","time_format":"relative","reference_time":0.0}}}"#,
        );
        rec(r#"{"time":0,"name":"recovery:congestion_state_updated","data":{"new":"slow_start"}}"#);
        rec(
            r#"{"time":0,"name":"recovery:metrics_updated","data":{"min_rtt":0,"smoothed_rtt":333,"latest_rtt":0,"congestion_window":12000,"bytes_in_flight":0}}"#,
        );
        for i in 0..10u32 {
            let t = 10.0 + i as f64;
            rec(&format!(
                r#"{{"time":{t},"name":"transport:packet_sent","data":{{"header":{{"packet_type":"1RTT","packet_number":{i}}}}}}}"#
            ));
        }
        rec(r#"{"time":20,"name":"recovery:metrics_updated","data":{"bytes_in_flight":12000}}"#);
        rec(r#"{"time":70,"name":"transport:packet_received","data":{}}"#);
        rec(
            r#"{"time":70,"name":"recovery:metrics_updated","data":{"min_rtt":60,"smoothed_rtt":60,"latest_rtt":60,"congestion_window":24000,"bytes_in_flight":20000}}"#,
        );
        rec(
            r#"{"time":150,"name":"recovery:metrics_updated","data":{"smoothed_rtt":62,"congestion_window":48000}}"#,
        );
        rec(
            r#"{"time":300,"name":"recovery:congestion_state_updated","data":{"old":"slow_start","new":"conservative_slow_start"}}"#,
        );
        rec(
            r#"{"time":300,"name":"recovery:metrics_updated","data":{"smoothed_rtt":70,"congestion_window":96000,"bytes_in_flight":90000}}"#,
        );
        rec(
            r#"{"time":400,"name":"recovery:packet_lost","data":{"header":{"packet_type":"1RTT","packet_number":7}}}"#,
        );
        rec(
            r#"{"time":400,"name":"recovery:packet_lost","data":{"header":{"packet_type":"1RTT","packet_number":8}}}"#,
        );
        rec(
            r#"{"time":400,"name":"recovery:congestion_state_updated","data":{"old":"conservative_slow_start","new":"recovery"}}"#,
        );
        rec(
            r#"{"time":400,"name":"recovery:metrics_updated","data":{"congestion_window":70000,"ssthresh":70000,"smoothed_rtt":80,"min_rtt":59.5}}"#,
        );
        rec(
            r#"{"time":480,"name":"recovery:congestion_state_updated","data":{"old":"recovery","new":"congestion_avoidance"}}"#,
        );
        rec(
            r#"{"time":600,"name":"recovery:metrics_updated","data":{"congestion_window":75000,"bytes_in_flight":0}}"#,
        );
        rec(
            r#"{"time":650,"name":"connectivity:connection_state_updated","data":{"new":"closed"}}"#,
        );
        s.into_bytes()
    }

    #[test]
    fn series_keep_the_last_value_of_each_metric() {
        let a = Analysis::new(&sqlog::parse(&synthetic_qlog()).unwrap());
        assert_eq!(a.header.title, "synthetic");
        assert_eq!(
            a.cwnd.points,
            [
                (0.0, 12000.0),
                (70.0, 24000.0),
                (150.0, 48000.0),
                (300.0, 96000.0),
                (400.0, 70000.0),
                (600.0, 75000.0)
            ]
        );
        assert_eq!(
            a.bytes_in_flight.points,
            [
                (0.0, 0.0),
                (20.0, 12000.0),
                (70.0, 20000.0),
                (300.0, 90000.0),
                (600.0, 0.0)
            ]
        );
        assert_eq!(a.ssthresh.points, [(400.0, 70000.0)]);
        // The 333 ms guess before the first sample is not plotted.
        assert_eq!(
            a.smoothed_rtt.points,
            [(70.0, 60.0), (150.0, 62.0), (300.0, 70.0), (400.0, 80.0)]
        );
        assert_eq!(a.min_rtt.points, [(70.0, 60.0), (400.0, 59.5)]);
        assert_eq!(a.cwnd.at(299.0), Some(48000.0));
        assert_eq!(a.cwnd.at(-1.0), None);
        assert_eq!(a.losses.len(), 2);
        assert_eq!(a.losses[0].packet_number, Some(7));
        assert_eq!(a.losses[0].bytes_in_flight, Some(90000.0));
        let names: Vec<&str> = a.states.iter().map(|s| s.new.as_str()).collect();
        assert_eq!(
            names,
            [
                "slow_start",
                "conservative_slow_start",
                "recovery",
                "congestion_avoidance"
            ]
        );
        assert_eq!((a.start, a.end), (0.0, 650.0));
    }

    #[test]
    fn summary_of_a_delay_exit() {
        let a = Analysis::new(&sqlog::parse(&synthetic_qlog()).unwrap());
        let s = &a.summary;
        assert_eq!(
            (s.packets_sent, s.packets_received, s.packets_lost),
            (10, 1, 2)
        );
        assert_eq!(s.first_loss, Some(400.0));
        assert_eq!(s.final_cwnd, Some(75000.0));
        assert_eq!(s.max_cwnd, Some(96000.0));
        assert_eq!(s.final_smoothed_rtt, Some(80.0));
        assert_eq!(s.min_rtt, Some(59.5));
        assert_eq!(s.duration, 650.0);
        let x = s.slow_start_exit.as_ref().unwrap();
        assert_eq!(x.time, 300.0);
        assert_eq!(x.cause, ExitCause::Delay);
        assert_eq!(x.to, "conservative_slow_start");
        // The state change is logged before the metrics of the same instant.
        assert_eq!(x.cwnd, Some(96000.0));
        assert_eq!(x.resumed, None);
        let text = s.to_string();
        assert!(
            text.contains("10 sent, 1 received, 2 lost (20.00% of sent)"),
            "{text}"
        );
        assert!(text.contains("300.0 ms by delay (HyStart++)"), "{text}");
        assert!(text.contains("final 75.0 kB, max 96.0 kB"), "{text}");
        assert!(text.contains("duration         650.0 ms"), "{text}");
    }

    fn states(moves: &[(f64, &str)]) -> Vec<StateChange> {
        let mut out: Vec<StateChange> = Vec::new();
        for &(time, new) in moves {
            out.push(StateChange {
                time,
                old: out.last().map(|s| s.new.clone()),
                new: new.into(),
            });
        }
        out
    }

    fn loss(time: f64) -> Loss {
        Loss {
            time,
            packet_number: None,
            bytes_in_flight: None,
        }
    }

    #[test]
    fn exit_causes() {
        let cwnd = Series::default();
        // Straight into recovery: loss.
        let s = states(&[(0.0, "slow_start"), (50.0, "recovery")]);
        let x = first_slow_start_exit(&s, &[loss(50.0)], &cwnd).unwrap();
        assert_eq!((x.time, x.cause), (50.0, ExitCause::Loss));
        // To congestion avoidance with a loss at the same moment: loss.
        let s = states(&[(0.0, "slow_start"), (50.0, "congestion_avoidance")]);
        let x = first_slow_start_exit(&s, &[loss(49.5)], &cwnd).unwrap();
        assert_eq!(x.cause, ExitCause::Loss);
        // ... with the loss long before: delay.
        let x = first_slow_start_exit(&s, &[loss(10.0)], &cwnd).unwrap();
        assert_eq!(x.cause, ExitCause::Delay);
        // Application-limited pauses are not exits; LSS after one is.
        let s = states(&[
            (0.0, "slow_start"),
            (10.0, "application_limited"),
            (20.0, "slow_start"),
            (30.0, "application_limited"),
            (40.0, "limited_slow_start"),
        ]);
        let x = first_slow_start_exit(&s, &[], &cwnd).unwrap();
        assert_eq!((x.time, x.to.as_str()), (40.0, "limited_slow_start"));
        // A spurious exit that Conservative Slow Start undoes.
        let s = states(&[
            (0.0, "slow_start"),
            (10.0, "conservative_slow_start"),
            (30.0, "slow_start"),
        ]);
        let x = first_slow_start_exit(&s, &[], &cwnd).unwrap();
        assert_eq!((x.time, x.resumed), (10.0, Some(30.0)));
        // Never left.
        let s = states(&[(0.0, "slow_start"), (5.0, "application_limited")]);
        assert!(first_slow_start_exit(&s, &[], &cwnd).is_none());
        assert!(first_slow_start_exit(&[], &[], &cwnd).is_none());
    }
}
