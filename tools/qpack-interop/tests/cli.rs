//! Runs the `qpack-interop` binary: encode then decode round trips at several settings, on the
//! committed corpus and on edge cases, and its error exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qpack_interop::blocks::{self, ENCODER_STREAM};
use qpack_interop::qif;

const BIN: &str = env!("CARGO_BIN_EXE_qpack-interop");

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("qpack-interop-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run qpack-interop")
}

fn ok(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "qpack-interop {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Encodes `input` and decodes the result at the given settings; the decoded lists must equal
/// the input's.
fn round_trip(input: &Path, table: u64, blocked: u64, ack: bool) {
    let tag = format!(
        "{}-{table}-{blocked}-{}",
        input.file_stem().unwrap().to_string_lossy(),
        if ack { "ack" } else { "noack" }
    );
    let enc = scratch(&format!("{tag}.out"));
    let dec = scratch(&format!("{tag}.qif"));
    let (t, b) = (table.to_string(), blocked.to_string());
    let mut args = vec!["encode", "--table-size", &t, "--max-blocked", &b];
    if ack {
        args.push("--immediate-ack");
    }
    let (i, e, d) = (
        input.to_str().unwrap(),
        enc.to_str().unwrap(),
        dec.to_str().unwrap(),
    );
    args.extend([i, e]);
    ok(&args);
    ok(&["decode", "--table-size", &t, "--max-blocked", &b, e, d]);
    // Our encoder sets the capacity first: RFC 9204's strict start reads it too.
    let strict = scratch(&format!("{tag}-strict.qif"));
    let s = strict.to_str().unwrap();
    ok(&[
        "decode",
        "--strict-start",
        "--table-size",
        &t,
        "--max-blocked",
        &b,
        e,
        s,
    ]);
    ok(&["compare", i, s]);

    let expected = qif::parse(&std::fs::read(input).unwrap()).unwrap();
    let got = qif::parse(&std::fs::read(&dec).unwrap()).unwrap();
    assert_eq!(qif::first_difference(&expected, &got), None, "{tag}");
    ok(&["compare", i, d]);

    // Sections are on streams 1..=n in list order, each encoder-stream block before the
    // section that follows it.
    let file = blocks::parse(&std::fs::read(&enc).unwrap()).unwrap();
    let ids: Vec<u64> = file
        .iter()
        .map(|b| b.stream_id)
        .filter(|&id| id != ENCODER_STREAM)
        .collect();
    assert_eq!(
        ids,
        (1..=expected.len() as u64).collect::<Vec<_>>(),
        "{tag}"
    );
    if table == 0 {
        // No dynamic table: nothing but (perhaps) a capacity instruction of 0 on stream 0.
        let enc_bytes: usize = file
            .iter()
            .filter(|b| b.stream_id == ENCODER_STREAM)
            .map(|b| b.data.len())
            .sum();
        assert!(
            enc_bytes <= 1,
            "{tag}: {enc_bytes} encoder-stream bytes at table 0"
        );
    }
}

const SETTINGS: [(u64, u64); 6] = [
    (0, 0),
    (0, 100),
    (256, 0),
    (256, 100),
    (4096, 100),
    (65536, 100),
];

#[test]
fn corpus_requests_round_trip() {
    for (t, b) in SETTINGS {
        for ack in [false, true] {
            round_trip(&corpus("news-requests.qif"), t, b, ack);
        }
    }
}

#[test]
fn corpus_responses_round_trip() {
    for (t, b) in SETTINGS {
        for ack in [false, true] {
            round_trip(&corpus("news-responses.qif"), t, b, ack);
        }
    }
}

#[test]
fn edge_cases_round_trip() {
    let long = "v".repeat(5000);
    let mut text = String::from("# edge cases\n");
    text.push_str(":method\tGET\n:path\t/\nx-empty\t\ncookie\ta=1\ncookie\ta=1\n\n");
    text.push_str(&format!("x-long\t{long}\nx-long\t{long}\n\n"));
    text.push_str("x-tab\tone\ttwo\n\u{e9}\t\u{2603} snow\n\n");
    // The same list many times: the dynamic table fills and evicts.
    for i in 0..40 {
        text.push_str(&format!(
            ":status\t200\nx-counter\t{i}\nx-repeat\t{}\n\n",
            "abc".repeat(i)
        ));
    }
    let input = scratch("edge.qif");
    std::fs::write(&input, text).unwrap();
    for (t, b) in SETTINGS {
        for ack in [false, true] {
            round_trip(&input, t, b, ack);
        }
    }
}

#[test]
fn decode_errors_exit_non_zero() {
    // A truncated file.
    let enc = scratch("trunc.out");
    ok(&[
        "encode",
        "--table-size",
        "4096",
        "--max-blocked",
        "100",
        corpus("news-requests.qif").to_str().unwrap(),
        enc.to_str().unwrap(),
    ]);
    let mut bytes = std::fs::read(&enc).unwrap();
    bytes.truncate(bytes.len() - 3);
    let cut = scratch("trunc-cut.out");
    std::fs::write(&cut, &bytes).unwrap();
    let out = run(&[
        "decode",
        "--table-size",
        "4096",
        "--max-blocked",
        "100",
        cut.to_str().unwrap(),
        scratch("trunc.qif").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("block announces"));

    // Without its encoder stream, a file whose sections use the dynamic table cannot decode.
    let file = blocks::parse(&std::fs::read(&enc).unwrap()).unwrap();
    let mut sections_only = Vec::new();
    for b in file.iter().filter(|b| b.stream_id != ENCODER_STREAM) {
        blocks::write_block(&mut sections_only, b.stream_id, &b.data);
    }
    let stripped = scratch("stripped.out");
    std::fs::write(&stripped, &sections_only).unwrap();
    let had_inserts = file
        .iter()
        .any(|b| b.stream_id == ENCODER_STREAM && b.data.len() > 1);
    let out = run(&[
        "decode",
        "--table-size",
        "4096",
        "--max-blocked",
        "100",
        stripped.to_str().unwrap(),
        scratch("stripped.qif").to_str().unwrap(),
    ]);
    assert_eq!(out.status.success(), !had_inserts);
    if had_inserts {
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn bad_qif_and_missing_files_exit_non_zero() {
    let bad = scratch("bad.qif");
    std::fs::write(&bad, "a\t1\nno tab here\n").unwrap();
    let out = run(&[
        "encode",
        "--table-size",
        "0",
        "--max-blocked",
        "0",
        bad.to_str().unwrap(),
        scratch("bad.out").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));

    let out = run(&[
        "decode",
        "--table-size",
        "0",
        "--max-blocked",
        "0",
        scratch("does-not-exist.out").to_str().unwrap(),
        scratch("x.qif").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading"));

    // Missing required options are a usage error.
    assert!(!run(&["encode", "a", "b"]).status.success());
}

#[test]
fn compare_reports_differences() {
    let a = scratch("cmp-a.qif");
    let b = scratch("cmp-b.qif");
    let c = scratch("cmp-c.qif");
    std::fs::write(&a, "# a\nx\t1\ny\t2\n").unwrap();
    std::fs::write(&b, "x\t1\ny\t2\n\n\n").unwrap();
    std::fs::write(&c, "x\t1\ny\t3\n").unwrap();
    ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let out = run(&["compare", a.to_str().unwrap(), c.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("list 1 field 1"));
}

#[test]
fn bench_prints_every_setting_the_checks_and_the_times() {
    let out = run(&[
        "bench",
        "--repeat",
        "1",
        "--by-header",
        corpus("news-responses.qif").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "news-responses.qif",
        "4096/100",
        "256/0",
        "checks at 4096/100",
        "no field name costs more than with the static table alone: met",
        "time per header list",
        "bytes per field name in news-responses.qif",
    ] {
        assert!(text.contains(expected), "{expected:?} missing in:\n{text}");
    }
    // The per-name table adds up to less than the static table's for the corpus's dates.
    let date = text
        .lines()
        .find(|l| l.trim_start().starts_with("date "))
        .expect("a row for date");
    let cols: Vec<usize> = date
        .split_whitespace()
        .skip(1)
        .take(3)
        .map(|c| c.parse().unwrap())
        .collect();
    assert!(cols[1] < cols[2], "{date}");

    let out = run(&["bench", "--setting", "4096", "x.qif"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TABLE/BLOCKED"));
}

/// Files in the offline interop's older style (insertions first, no Set Dynamic Table
/// Capacity) decode by default, as the published files assume, and fail with --strict-start
/// (RFC 9204 §3.2.3); files in either style decode the same by default.
#[test]
fn older_style_files_decode_by_default_and_not_strictly() {
    let input = corpus("news-responses.qif");
    let i = input.to_str().unwrap();
    for (t, b, ack) in [
        (256, 100, true),
        (4096, 0, true),
        (4096, 100, false),
        (4096, 100, true),
    ] {
        let (ts, bs) = (t.to_string(), b.to_string());
        let old = scratch(&format!("old-{t}-{b}-{ack}.out"));
        let mut args = vec!["encode", "--table-size", &ts, "--max-blocked", &bs];
        if ack {
            args.push("--immediate-ack");
        }
        args.push("--no-set-capacity");
        args.extend([i, old.to_str().unwrap()]);
        ok(&args);
        let file = blocks::parse(&std::fs::read(&old).unwrap()).unwrap();
        let first = file.iter().find(|b| b.stream_id == ENCODER_STREAM).unwrap();
        assert_ne!(first.data[0] & 0xe0, 0x20, "begins with an insertion");

        let got = scratch(&format!("old-{t}-{b}-{ack}.qif"));
        let o = old.to_str().unwrap();
        ok(&[
            "decode",
            "--table-size",
            &ts,
            "--max-blocked",
            &bs,
            o,
            got.to_str().unwrap(),
        ]);
        ok(&["compare", i, got.to_str().unwrap()]);

        let out = run(&[
            "decode",
            "--strict-start",
            "--table-size",
            &ts,
            "--max-blocked",
            &bs,
            o,
            got.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("EncoderStreamError"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn compare_in_any_order() {
    let a = scratch("order-a.qif");
    let b = scratch("order-b.qif");
    std::fs::write(&a, "x\t1\n\ny\t2\n").unwrap();
    std::fs::write(&b, "y\t2\n\nx\t1\n").unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    assert_eq!(run(&["compare", a, b]).status.code(), Some(1));
    ok(&["compare", "--any-order", a, b]);
}
