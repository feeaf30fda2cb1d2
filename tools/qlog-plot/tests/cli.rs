//! The `qlog-plot` binary end to end: the summary lines scripts read, both pictures on disk,
//! and the generated `--help` and `--version`.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_qlog-plot");

/// A small trace: slow start, a HyStart++ exit at 300 ms, a loss at 400 ms.
fn trace() -> String {
    [
        r#"{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"cli","description":"cli test","trace":{"vantage_point":{"type":"server"},"common_fields":{"time_format":"relative","reference_time":0.0}}}"#,
        r#"{"time":0,"name":"recovery:congestion_state_updated","data":{"new":"slow_start"}}"#,
        r#"{"time":0,"name":"recovery:metrics_updated","data":{"congestion_window":12000,"bytes_in_flight":0}}"#,
        r#"{"time":10,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":0}}}"#,
        r#"{"time":70,"name":"transport:packet_received","data":{}}"#,
        r#"{"time":70,"name":"recovery:metrics_updated","data":{"min_rtt":60,"smoothed_rtt":60,"congestion_window":24000,"bytes_in_flight":20000}}"#,
        r#"{"time":300,"name":"recovery:congestion_state_updated","data":{"old":"slow_start","new":"conservative_slow_start"}}"#,
        r#"{"time":300,"name":"recovery:metrics_updated","data":{"smoothed_rtt":70,"congestion_window":96000}}"#,
        r#"{"time":400,"name":"recovery:packet_lost","data":{"header":{"packet_type":"1RTT","packet_number":0}}}"#,
        r#"{"time":400,"name":"recovery:congestion_state_updated","data":{"old":"conservative_slow_start","new":"recovery"}}"#,
        r#"{"time":400,"name":"recovery:metrics_updated","data":{"congestion_window":70000,"ssthresh":70000}}"#,
        r#"{"time":600,"name":"recovery:metrics_updated","data":{"bytes_in_flight":0}}"#,
    ]
    .iter()
    .map(|r| format!("\x1e{r}\n"))
    .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qlog-plot-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn writes_both_pictures_and_the_summary() {
    let dir = temp_dir("cli");
    let input = dir.join("t.sqlog");
    std::fs::write(&input, trace()).unwrap();
    let out = Command::new(BIN)
        .arg(&input)
        .args(["--detail", "350", "--width", "900", "--height", "450"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let starts: Vec<&str> = stdout
        .lines()
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert_eq!(
        starts,
        [
            "trace",
            "duration",
            "packets",
            "slow start exit",
            "first loss",
            "cwnd",
            "rtt",
            "wrote"
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("trace            cli (server) cli test\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("packets          1 sent, 1 received, 1 lost"),
        "{stdout}"
    );
    assert!(
        stdout.contains("slow start exit  300.0 ms by delay (HyStart++)"),
        "{stdout}"
    );
    // PREFIX defaults to the input without its extension.
    let png = std::fs::read(dir.join("t.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    assert_eq!(&png[16..24], &[0, 0, 3, 132, 0, 0, 1, 194], "900 x 450");
    let svg = std::fs::read_to_string(dir.join("t.svg")).unwrap();
    assert!(svg.contains(r#"width="900" height="450""#));
    // cwnd in both panels and the legend.
    assert_eq!(svg.matches(r##"stroke="#1F77B4""##).count(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_a_font_the_summary_still_prints() {
    let dir = temp_dir("nofont");
    let input = dir.join("t.sqlog");
    std::fs::write(&input, trace()).unwrap();
    let out = Command::new(BIN)
        .arg(&input)
        .env("QLOG_PLOT_FONT", dir.join("missing.ttf"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("slow start exit  300.0 ms"), "{stdout}");
    assert!(!stdout.contains("wrote"), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("missing.ttf"), "{stderr}");
    assert!(!dir.join("t.png").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_help_and_version() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("qlog-plot {}", env!("CARGO_PKG_VERSION"))
    );
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in ["--out", "--width", "--height", "--detail", "--font"] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    let out = Command::new(BIN)
        .args(["x.sqlog", "--detail", "-3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("not a positive number of ms: -3"), "{err}");
    // A missing input is a run-time error (1), after the arguments parsed.
    let out = Command::new(BIN)
        .arg("/nonexistent/x.sqlog")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
