//! Parsing and printing the quantities a scenario is written in: sizes (`8MB`, `512KiB`), rates
//! (`5Mbps`), durations (`60ms`), probabilities (`0.01`, `1%`) and queue sizes (`1bdp`, `64kB`).
//!
//! Decimal prefixes are powers of 1000 (`MB` = 10⁶ bytes, `Mbps` = 10⁶ bit/s), binary ones powers
//! of 1024 (`MiB`); prefixes and units are case-insensitive.

use std::time::Duration;

/// Splits `"12.5ms"` into `(12.5, "ms")`.
fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?}: expected a number followed by a unit"))?;
    if !num.is_finite() || num < 0.0 {
        return Err(format!("{s:?}: expected a non-negative number"));
    }
    Ok((num, unit.trim()))
}

/// The multiplier of a size or rate prefix (`""`, `k`, `m`, `g`, `ki`, `mi`, `gi`).
fn prefix(p: &str) -> Option<f64> {
    Some(match p.to_ascii_lowercase().as_str() {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// Converts to an integer, refusing what does not fit.
fn to_u64(v: f64, what: &str) -> Result<u64, String> {
    if v > u64::MAX as f64 {
        return Err(format!("{what} is too large"));
    }
    Ok(v.round() as u64)
}

/// A size in bytes: `8000000`, `8MB`, `8M`, `512kB`, `2MiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (n, unit) = split_number(s)?;
    let p = unit
        .strip_suffix(['b', 'B'])
        .unwrap_or(unit)
        .to_ascii_lowercase();
    let m = prefix(&p).ok_or_else(|| format!("{s:?}: unknown size unit {unit:?}"))?;
    to_u64(n * m, s)
}

/// A rate in bits per second: `5000000`, `5Mbps`, `5Mbit/s`, `5M`, `100kbps`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (n, unit) = split_number(s)?;
    let lower = unit.to_ascii_lowercase();
    let p = ["bps", "bit/s", "b/s", "bit"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
        .unwrap_or(&lower);
    let m = prefix(p).ok_or_else(|| format!("{s:?}: unknown rate unit {unit:?}"))?;
    let rate = to_u64(n * m, s)?;
    if rate == 0 {
        return Err(format!("{s:?}: a rate must be positive"));
    }
    Ok(rate)
}

/// A duration: `60ms`, `1.5s`, `250us`, `100ns`; a bare number is milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (n, unit) = split_number(s)?;
    let secs = match unit.to_ascii_lowercase().as_str() {
        "" | "ms" => n / 1e3,
        "s" => n,
        "us" | "µs" => n / 1e6,
        "ns" => n / 1e9,
        _ => return Err(format!("{s:?}: unknown time unit {unit:?}")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

/// A probability: `0.01` or `1%`.
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let p = match t.strip_suffix('%') {
        Some(pct) => split_number(pct).map(|(n, _)| n / 100.0)?,
        None => t
            .parse::<f64>()
            .map_err(|_| format!("{s:?}: expected a probability such as 0.01 or 1%"))?,
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{s:?}: a probability is between 0 and 1"));
    }
    Ok(p)
}

/// How large the bottleneck's drop-tail queue is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Queue {
    /// A multiple of the bandwidth-delay product (rate × base RTT).
    Bdp(f64),
    /// A fixed number of bytes.
    Bytes(u64),
    /// Never drops.
    Unlimited,
}

impl Queue {
    /// Parses `1bdp`, `0.5bdp`, a size such as `64kB`, or `unlimited`.
    pub fn parse(s: &str) -> Result<Queue, String> {
        let t = s.trim().to_ascii_lowercase();
        if matches!(t.as_str(), "unlimited" | "inf" | "none") {
            return Ok(Queue::Unlimited);
        }
        if let Some(n) = t.strip_suffix("bdp") {
            let (n, rest) = split_number(n)?;
            if !rest.is_empty() {
                return Err(format!("{s:?}: expected e.g. 1bdp"));
            }
            return Ok(Queue::Bdp(n));
        }
        parse_size(&t).map(Queue::Bytes)
    }

    /// The queue's size in bytes on a path of `rate_bps` and base round-trip time `rtt`;
    /// `None` when unlimited.
    pub fn bytes(&self, rate_bps: u64, rtt: Duration) -> Option<u64> {
        match *self {
            Queue::Bdp(n) => Some((n * bdp_bytes(rate_bps, rtt)).round() as u64),
            Queue::Bytes(b) => Some(b),
            Queue::Unlimited => None,
        }
    }
}

/// The bandwidth-delay product in bytes.
pub fn bdp_bytes(rate_bps: u64, rtt: Duration) -> f64 {
    rate_bps as f64 * rtt.as_secs_f64() / 8.0
}

/// `8.00 MB`, `512.0 kB`, `900 B`: decimal units, three significant digits or so.
pub fn fmt_size(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.2} GB", bytes / 1e9)
    } else if bytes >= 1e6 {
        format!("{:.2} MB", bytes / 1e6)
    } else if bytes >= 1e3 {
        format!("{:.1} kB", bytes / 1e3)
    } else {
        format!("{bytes:.0} B")
    }
}

/// `5.00 Mbps`, `260 Mbps`, `100.0 kbps`.
pub fn fmt_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbps", bps / 1e9)
    } else if bps >= 1e8 {
        format!("{:.0} Mbps", bps / 1e6)
    } else if bps >= 1e6 {
        format!("{:.2} Mbps", bps / 1e6)
    } else {
        format!("{:.1} kbps", bps / 1e3)
    }
}

/// `60 ms`, `12.5 ms`, `1.234 s`.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1000.0 {
        format!("{:.3} s", ms / 1e3)
    } else if ms.fract() == 0.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8MB"), Ok(8_000_000));
        assert_eq!(parse_size("8mb"), Ok(8_000_000));
        assert_eq!(parse_size("8M"), Ok(8_000_000));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1.5kB"), Ok(1500));
        assert_eq!(parse_size("1_000"), Ok(1000));
        assert_eq!(parse_size("1200"), Ok(1200));
        assert!(parse_size("8 parsecs").is_err());
        assert!(parse_size("MB").is_err());
        assert!(parse_size("-1MB").is_err());
        assert!(parse_size("99999999999999999999999GB").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("5Mbps"), Ok(5_000_000));
        assert_eq!(parse_rate("260mbit/s"), Ok(260_000_000));
        assert_eq!(parse_rate("100kbps"), Ok(100_000));
        assert_eq!(parse_rate("1Gbps"), Ok(1_000_000_000));
        assert_eq!(parse_rate("64000"), Ok(64_000));
        assert!(parse_rate("0Mbps").is_err());
        assert!(parse_rate("5 furlongs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60ms"), Ok(Duration::from_millis(60)));
        assert_eq!(parse_duration("31"), Ok(Duration::from_millis(31)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("1 fortnight").is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("0.01"), Ok(0.01));
        assert_eq!(parse_probability("8%"), Ok(0.08));
        assert_eq!(parse_probability("0"), Ok(0.0));
        assert!(parse_probability("1.5").is_err());
        assert!(parse_probability("150%").is_err());
        assert!(parse_probability("lots").is_err());
    }

    #[test]
    fn queues() {
        let rtt = Duration::from_millis(60);
        assert_eq!(Queue::parse("1bdp"), Ok(Queue::Bdp(1.0)));
        assert_eq!(Queue::parse("0.5BDP"), Ok(Queue::Bdp(0.5)));
        assert_eq!(Queue::parse("64kB"), Ok(Queue::Bytes(64_000)));
        assert_eq!(Queue::parse("unlimited"), Ok(Queue::Unlimited));
        assert!(Queue::parse("xbdp").is_err());
        // 5 Mbps x 60 ms = 37.5 kB.
        assert_eq!(Queue::Bdp(1.0).bytes(5_000_000, rtt), Some(37_500));
        assert_eq!(Queue::Bdp(2.0).bytes(5_000_000, rtt), Some(75_000));
        assert_eq!(Queue::Unlimited.bytes(5_000_000, rtt), None);
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_size(8e6), "8.00 MB");
        assert_eq!(fmt_size(37_500.0), "37.5 kB");
        assert_eq!(fmt_rate(5e6), "5.00 Mbps");
        assert_eq!(fmt_rate(260e6), "260 Mbps");
        assert_eq!(fmt_duration(Duration::from_millis(60)), "60 ms");
        assert_eq!(fmt_duration(Duration::from_micros(12_500)), "12.5 ms");
        assert_eq!(fmt_duration(Duration::from_millis(13_912)), "13.912 s");
    }
}
