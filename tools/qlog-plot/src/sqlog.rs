//! Reading qlog files: JSON-SEQ (`.sqlog`, RFC 7464 records separated by 0x1E, the first one the
//! header) as qlog 0.3 writes them, and the plain-JSON form (`.qlog`, events inside
//! `traces[0].events`) as a fallback.

use serde_json::Value;

/// The header of a trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// `qlog_version`, e.g. "0.3".
    pub qlog_version: String,
    /// The trace's title (or the file's, if the trace has none).
    pub title: String,
    /// The trace's description.
    pub description: String,
    /// `vantage_point.type`: "client", "server", "network" ...
    pub vantage: String,
    /// `common_fields.group_id` (the original destination connection ID).
    pub group_id: String,
}

/// One event, with its time in milliseconds relative to the start of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Milliseconds since the trace's reference time.
    pub time: f64,
    /// `category:event`, e.g. "recovery:metrics_updated".
    pub name: String,
    /// The event's `data` object (`Value::Null` when absent).
    pub data: Value,
}

/// A parsed trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// The header.
    pub header: Header,
    /// Events in file order.
    pub events: Vec<Event>,
    /// Records that were not valid JSON or not events (a trace cut short by a crash ends in
    /// a partial record).
    pub skipped: usize,
}

/// Why a file could not be read as a qlog trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The file is empty or holds no JSON record.
    Empty,
    /// The first record is not a qlog header.
    NotQlog(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Empty => write!(f, "no qlog records in the input"),
            Error::NotQlog(why) => write!(f, "not a qlog file: {why}"),
        }
    }
}

impl std::error::Error for Error {}

/// How event times are written (`common_fields.time_format`).
#[derive(Clone, Copy, PartialEq)]
enum TimeFormat {
    Relative,
    Delta,
    Absolute,
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn header_of(file: &Value, trace: &Value) -> (Header, TimeFormat) {
    let common = trace.get("common_fields").unwrap_or(&Value::Null);
    let pick = |key: &str| {
        let t = str_field(trace, key);
        if t.is_empty() {
            str_field(file, key)
        } else {
            t
        }
    };
    let header = Header {
        qlog_version: str_field(file, "qlog_version"),
        title: pick("title"),
        description: pick("description"),
        vantage: trace
            .get("vantage_point")
            .map(|v| str_field(v, "type"))
            .unwrap_or_default(),
        group_id: str_field(common, "group_id"),
    };
    let format = match common.get("time_format").and_then(Value::as_str) {
        Some("delta") => TimeFormat::Delta,
        Some("absolute") => TimeFormat::Absolute,
        _ => TimeFormat::Relative,
    };
    (header, format)
}

/// Turns raw event times into milliseconds since the start of the trace.
struct Clock {
    format: TimeFormat,
    last: f64,
    first: Option<f64>,
}

impl Clock {
    fn time(&mut self, raw: f64) -> f64 {
        match self.format {
            TimeFormat::Relative => raw,
            TimeFormat::Delta => {
                self.last += raw;
                self.last
            }
            TimeFormat::Absolute => raw - *self.first.get_or_insert(raw),
        }
    }
}

fn event_of(v: &Value, clock: &mut Clock) -> Option<Event> {
    let time = v.get("time")?.as_f64()?;
    if !time.is_finite() {
        return None;
    }
    let name = v.get("name")?.as_str()?.to_string();
    Some(Event {
        time: clock.time(time),
        name,
        data: v.get("data").cloned().unwrap_or(Value::Null),
    })
}

/// Parses a qlog file: JSON-SEQ if it contains the record separator, plain JSON otherwise.
pub fn parse(input: &[u8]) -> Result<Trace, Error> {
    if input.contains(&0x1E) {
        parse_json_seq(input)
    } else {
        parse_json(input)
    }
}

fn parse_json_seq(input: &[u8]) -> Result<Trace, Error> {
    let mut records = input
        .split(|&b| b == 0x1E)
        .filter(|r| !r.iter().all(u8::is_ascii_whitespace));
    let first = records.next().ok_or(Error::Empty)?;
    let head: Value =
        serde_json::from_slice(first).map_err(|e| Error::NotQlog(format!("header: {e}")))?;
    let trace = head
        .get("trace")
        .ok_or_else(|| Error::NotQlog("the header record has no \"trace\"".into()))?;
    let (header, format) = header_of(&head, trace);
    let mut clock = Clock {
        format,
        last: 0.0,
        first: None,
    };
    let mut out = Trace {
        header,
        ..Trace::default()
    };
    for record in records {
        match serde_json::from_slice::<Value>(record)
            .ok()
            .and_then(|v| event_of(&v, &mut clock))
        {
            Some(ev) => out.events.push(ev),
            None => out.skipped += 1,
        }
    }
    Ok(out)
}

fn parse_json(input: &[u8]) -> Result<Trace, Error> {
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::Empty);
    }
    let file: Value =
        serde_json::from_slice(input).map_err(|e| Error::NotQlog(format!("JSON: {e}")))?;
    let trace = file
        .get("traces")
        .and_then(|t| t.get(0))
        .ok_or_else(|| Error::NotQlog("no JSON-SEQ records and no \"traces\"".into()))?;
    let (header, format) = header_of(&file, trace);
    let mut clock = Clock {
        format,
        last: 0.0,
        first: None,
    };
    let mut out = Trace {
        header,
        ..Trace::default()
    };
    for v in trace
        .get("events")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        match event_of(v, &mut clock) {
            Some(ev) => out.events.push(ev),
            None => out.skipped += 1,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_seq_header_and_events() {
        let input = b"\x1e{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"t\",\
            \"trace\":{\"vantage_point\":{\"type\":\"server\"},\"description\":\"d\",\
            \"common_fields\":{\"group_id\":\"abcd\",\"time_format\":\"relative\"}}}\n\
            \x1e{\"time\":1.5,\"name\":\"transport:packet_sent\",\"data\":{\"x\":1}}\n\
            \x1e{\"time\":2,\"name\":\"recovery:packet_lost\"}\n\
            \x1e{\"time\":3,\"na";
        let t = parse(input).unwrap();
        assert_eq!(t.header.qlog_version, "0.3");
        assert_eq!(t.header.title, "t");
        assert_eq!(t.header.description, "d");
        assert_eq!(t.header.vantage, "server");
        assert_eq!(t.header.group_id, "abcd");
        assert_eq!(t.events.len(), 2);
        assert_eq!(t.events[0].time, 1.5);
        assert_eq!(t.events[0].data["x"], 1);
        assert_eq!(t.events[1].data, Value::Null);
        assert_eq!(t.skipped, 1, "the truncated last record");
    }

    #[test]
    fn plain_json_with_delta_times() {
        let input = br#"{"qlog_version":"0.3","traces":[{"common_fields":{"time_format":"delta"},
            "events":[{"time":5,"name":"a:b","data":{}},{"time":2.5,"name":"a:c","data":{}}]}]}"#;
        let t = parse(input).unwrap();
        let times: Vec<f64> = t.events.iter().map(|e| e.time).collect();
        assert_eq!(times, [5.0, 7.5]);
    }

    #[test]
    fn absolute_times_start_at_zero() {
        let input = b"\x1e{\"trace\":{\"common_fields\":{\"time_format\":\"absolute\"}}}\
            \x1e{\"time\":1000.5,\"name\":\"a:b\"}\x1e{\"time\":1010.5,\"name\":\"a:b\"}";
        let t = parse(input).unwrap();
        assert_eq!(t.events[0].time, 0.0);
        assert_eq!(t.events[1].time, 10.0);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(parse(b"").unwrap_err(), Error::Empty);
        assert_eq!(parse(b" \n\x1e \n").unwrap_err(), Error::Empty);
        assert!(matches!(parse(b"\x1e[1,2]"), Err(Error::NotQlog(_))));
        assert!(matches!(parse(b"{\"x\":1}"), Err(Error::NotQlog(_))));
        assert!(matches!(parse(b"\xff\xfe"), Err(Error::NotQlog(_))));
        // Events of the wrong shape are skipped, not fatal.
        let t = parse(b"\x1e{\"trace\":{}}\x1e{\"time\":\"x\",\"name\":\"a\"}\x1e7").unwrap();
        assert_eq!((t.events.len(), t.skipped), (0, 2));
    }
}
