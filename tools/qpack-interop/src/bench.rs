//! The compression benchmark: bytes on the wire for a corpus with the static table only, with
//! our encoder at a dynamic table, and (through the Python tool) with ls-qpack; and the time
//! our encoder and decoder take per header list.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::blocks;
use crate::codec::{self, EncodeOptions};
use crate::qif::HeaderList;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The dynamic table size for the compressed runs (the static run uses 0).
    pub table_size: u64,
    /// The peer's blocked-streams limit.
    pub max_blocked: u64,
    /// Timed repetitions of each encode and decode.
    pub repeat: u32,
    /// The Python tool (`pylsqpack_tool.py`) to run for ls-qpack's figures, if any.
    pub lsqpack_tool: Option<PathBuf>,
    /// Also print, per field name, how many wire bytes the name's lines cost.
    pub by_header: bool,
}

/// Figures for one corpus file.
#[derive(Clone, Debug, Default)]
pub struct FileFigures {
    /// Number of header lists.
    pub lists: usize,
    /// Uncompressed size: sum of name + value lengths.
    pub raw_bytes: usize,
    /// Static table only: wire bytes.
    pub static_only: usize,
    /// Ours at the table size, acknowledged at once: (sections, encoder stream).
    pub ours_ack: (usize, usize),
    /// Ours at the table size, never acknowledged: (sections, encoder stream).
    pub ours_noack: (usize, usize),
    /// ls-qpack with immediate acknowledgement, wire bytes.
    pub lsqpack_ack: Option<usize>,
    /// ls-qpack without acknowledgement, wire bytes.
    pub lsqpack_noack: Option<usize>,
    /// Our encode time per list (acknowledged run).
    pub encode_per_list: Duration,
    /// Our decode time per list (acknowledged run's file).
    pub decode_per_list: Duration,
    /// ls-qpack (Python binding) encode and decode microseconds per list.
    pub lsqpack_us: Option<(f64, f64)>,
}

fn total((a, b): (usize, usize)) -> usize {
    a + b
}

fn opts(o: &BenchOptions, table_size: u64, immediate_ack: bool) -> EncodeOptions {
    EncodeOptions {
        table_size,
        max_blocked: o.max_blocked,
        immediate_ack,
    }
}

/// Measures one corpus file with our encoder and decoder.
pub fn measure(lists: &[HeaderList], o: &BenchOptions) -> anyhow::Result<FileFigures> {
    let mut f = FileFigures {
        lists: lists.len(),
        raw_bytes: lists.iter().flatten().map(|(n, v)| n.len() + v.len()).sum(),
        ..FileFigures::default()
    };
    // (a): our encoder limited to the static table although the peer allows a table.
    let st = codec::encode_with_limit(lists, &opts(o, o.table_size, true), 0)?;
    f.static_only = st.wire_bytes();
    let ack = codec::encode(lists, &opts(o, o.table_size, true))?;
    f.ours_ack = (ack.section_bytes, ack.encoder_stream_bytes);
    let noack = codec::encode(lists, &opts(o, o.table_size, false))?;
    f.ours_noack = (noack.section_bytes, noack.encoder_stream_bytes);

    let file_blocks = blocks::parse(&ack.file)?;
    let repeat = o.repeat.max(1);
    let mut enc_time = Duration::ZERO;
    let mut dec_time = Duration::ZERO;
    for _ in 0..repeat {
        // Without acknowledgements the encode loop holds no decoder: closer to the encoder's
        // own cost. Both modes are timed; the acknowledged one is reported since it is what a
        // connection does, and it excludes the helper decoder's time.
        enc_time += codec::encode(lists, &opts(o, o.table_size, true))?.encode_time;
        let d = codec::decode(&file_blocks, o.table_size, o.max_blocked)?;
        dec_time += d.decode_time;
    }
    let n = (lists.len().max(1) as u32) * repeat;
    f.encode_per_list = enc_time / n;
    f.decode_per_list = dec_time / n;
    Ok(f)
}

/// Runs the Python tool's benchmark on `file` and fills in ls-qpack's figures.
fn measure_lsqpack(
    tool: &Path,
    file: &Path,
    o: &BenchOptions,
    f: &mut FileFigures,
) -> anyhow::Result<()> {
    let output = Command::new("python3")
        .arg(tool)
        .arg("bench")
        .arg("--table-size")
        .arg(o.table_size.to_string())
        .arg("--max-blocked")
        .arg(o.max_blocked.to_string())
        .arg("--repeat")
        .arg(o.repeat.clamp(1, 20).to_string())
        .arg(file)
        .output()
        .with_context(|| format!("running python3 {}", tool.display()))?;
    if !output.status.success() {
        bail!(
            "{} bench failed: {}",
            tool.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .with_context(|| format!("no RESULT line from {} bench:\n{text}", tool.display()))?;
    let mut enc_us = None;
    let mut dec_us = None;
    for kv in line.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        match k {
            "ack" => f.lsqpack_ack = Some(v.parse()?),
            "noack" => f.lsqpack_noack = Some(v.parse()?),
            "encode_us" => enc_us = Some(v.parse::<f64>()?),
            "decode_us" => dec_us = Some(v.parse::<f64>()?),
            _ => {}
        }
    }
    if let (Some(e), Some(d)) = (enc_us, dec_us) {
        f.lsqpack_us = Some((e, d));
    }
    Ok(())
}

/// Per field name: the wire bytes the corpus saves when every line with that name is left
/// out (ours, at the table size, acknowledged), largest first. Interactions between names
/// make these only approximately additive.
pub fn by_header(
    lists: &[HeaderList],
    o: &BenchOptions,
) -> anyhow::Result<Vec<(String, usize, usize)>> {
    let full = codec::encode(lists, &opts(o, o.table_size, true))?.wire_bytes();
    let stat = codec::encode_with_limit(lists, &opts(o, o.table_size, true), 0)?.wire_bytes();
    let mut names: Vec<&[u8]> = lists.iter().flatten().map(|(n, _)| n.as_slice()).collect();
    names.sort();
    names.dedup();
    let mut rows = Vec::new();
    for name in names {
        let without: Vec<HeaderList> = lists
            .iter()
            .map(|l| l.iter().filter(|(n, _)| n != name).cloned().collect())
            .filter(|l: &HeaderList| !l.is_empty())
            .collect();
        let dynamic = codec::encode(&without, &opts(o, o.table_size, true))?.wire_bytes();
        let stat_without =
            codec::encode_with_limit(&without, &opts(o, o.table_size, true), 0)?.wire_bytes();
        rows.push((
            String::from_utf8_lossy(name).into_owned(),
            full.saturating_sub(dynamic),
            stat.saturating_sub(stat_without),
        ));
    }
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(rows)
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.1} %", 100.0 * part as f64 / whole as f64)
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

/// Runs the benchmark on the corpus files (each one connection direction, with its own
/// encoder) and renders the report.
pub fn run(files: &[PathBuf], o: &BenchOptions) -> anyhow::Result<String> {
    let mut all = Vec::new();
    for path in files {
        let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let lists = crate::qif::parse(&text).with_context(|| format!("{}", path.display()))?;
        let mut f = measure(&lists, o).with_context(|| format!("{}", path.display()))?;
        if let Some(tool) = &o.lsqpack_tool {
            measure_lsqpack(tool, path, o, &mut f)
                .with_context(|| format!("ls-qpack on {}", path.display()))?;
        }
        let rows = if o.by_header {
            by_header(&lists, o)?
        } else {
            Vec::new()
        };
        all.push((path.clone(), f, rows));
    }

    let mut s = String::new();
    let _ = writeln!(
        s,
        "QPACK compression: table {} bytes, max-blocked {}, wire bytes = field sections + encoder stream",
        o.table_size, o.max_blocked
    );
    let mut sum = FileFigures::default();
    let mut have_ls = true;
    for (path, f, _) in &all {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let _ = writeln!(
            s,
            "\n{} ({} lists, {} bytes of names and values)",
            name.unwrap_or_default(),
            f.lists,
            f.raw_bytes
        );
        render(&mut s, f);
        sum.lists += f.lists;
        sum.raw_bytes += f.raw_bytes;
        sum.static_only += f.static_only;
        sum.ours_ack.0 += f.ours_ack.0;
        sum.ours_ack.1 += f.ours_ack.1;
        sum.ours_noack.0 += f.ours_noack.0;
        sum.ours_noack.1 += f.ours_noack.1;
        match (f.lsqpack_ack, f.lsqpack_noack) {
            (Some(a), Some(b)) => {
                sum.lsqpack_ack = Some(sum.lsqpack_ack.unwrap_or(0) + a);
                sum.lsqpack_noack = Some(sum.lsqpack_noack.unwrap_or(0) + b);
            }
            _ => have_ls = false,
        }
    }
    if !have_ls {
        sum.lsqpack_ack = None;
        sum.lsqpack_noack = None;
    }
    if all.len() > 1 {
        let _ = writeln!(
            s,
            "\nall files ({} lists, {} bytes of names and values)",
            sum.lists, sum.raw_bytes
        );
        render(&mut s, &sum);
    }
    let b = total(sum.ours_ack);
    let _ = write!(
        s,
        "\nours / static = {}, target <= 35 %: {}",
        pct(b, sum.static_only),
        if b * 100 <= sum.static_only * 35 {
            "met"
        } else {
            "MISSED"
        }
    );
    if let Some(c) = sum.lsqpack_ack {
        let _ = write!(
            s,
            "; ls-qpack / static = {}; ours / ls-qpack = {}, target <= 100 %: {}",
            pct(c, sum.static_only),
            pct(b, c),
            if b <= c { "met" } else { "MISSED" }
        );
    }
    let _ = writeln!(s, " (immediate ack, all files)");
    let _ = writeln!(s, "\ntime per header list (microseconds)");
    let _ = writeln!(
        s,
        "  {:<24} {:>12} {:>12} {:>20} {:>20}",
        "file", "ours encode", "ours decode", "ls-qpack encode (py)", "ls-qpack decode (py)"
    );
    for (path, f, _) in &all {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let (le, ld) = match f.lsqpack_us {
            Some((e, d)) => (format!("{e:.2}"), format!("{d:.2}")),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "  {:<24} {:>12} {:>12} {:>20} {:>20}",
            name.unwrap_or_default(),
            us(f.encode_per_list),
            us(f.decode_per_list),
            le,
            ld
        );
    }
    if o.lsqpack_tool.is_some() {
        let _ = writeln!(
            s,
            "  (ls-qpack times are measured from Python through the pylsqpack binding: they \
             include the binding's conversions)"
        );
    }
    for (path, _, rows) in &all {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "\nbytes per field name in {} (wire bytes saved when the name's lines are left out)",
            path.display()
        );
        let _ = writeln!(s, "  {:<36} {:>10} {:>12}", "name", "ours", "static only");
        for (name, d, st) in rows {
            let _ = writeln!(s, "  {name:<36} {d:>10} {st:>12}");
        }
    }
    Ok(s)
}

fn render(s: &mut String, f: &FileFigures) {
    let a = f.static_only;
    let _ = writeln!(
        s,
        "  {:<34} {:>9} {:>9} {:>9} {:>9}",
        "", "sections", "enc.str.", "total", "/ static"
    );
    let _ = writeln!(
        s,
        "  {:<34} {:>9} {:>9} {:>9} {:>9}",
        "(a) static table only",
        "",
        "",
        a,
        pct(a, a)
    );
    for (label, v) in [
        ("(b) ours, immediate ack", f.ours_ack),
        ("    ours, no ack", f.ours_noack),
    ] {
        let _ = writeln!(
            s,
            "  {:<34} {:>9} {:>9} {:>9} {:>9}",
            label,
            v.0,
            v.1,
            total(v),
            pct(total(v), a)
        );
    }
    for (label, v) in [
        ("(c) ls-qpack, immediate ack", f.lsqpack_ack),
        ("    ls-qpack, no ack", f.lsqpack_noack),
    ] {
        if let Some(v) = v {
            let _ = writeln!(
                s,
                "  {:<34} {:>9} {:>9} {:>9} {:>9}",
                label,
                "",
                "",
                v,
                pct(v, a)
            );
        }
    }
}
