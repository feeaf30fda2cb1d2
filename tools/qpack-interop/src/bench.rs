//! The compression benchmark: bytes on the wire for each corpus file with the static table
//! only, with our encoder and (through the Python tool) with ls-qpack, at several table sizes
//! and blocked-stream limits, acknowledged at once and never; what each field name costs; and
//! the time our encoder and decoder take per header list.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};

use crate::blocks;
use crate::codec::{self, DecodeOptions, EncodeOptions, NameCost};
use crate::qif::HeaderList;

/// A table size and a blocked-streams limit, written `TABLE/BLOCKED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub table_size: u64,
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub max_blocked: u64,
}

impl FromStr for Setting {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Setting> {
        let (t, b) = s
            .split_once('/')
            .ok_or_else(|| anyhow!("expected TABLE/BLOCKED, as in 4096/100: {s:?}"))?;
        Ok(Setting {
            table_size: t.parse().with_context(|| format!("table size in {s:?}"))?,
            max_blocked: b
                .parse()
                .with_context(|| format!("blocked streams in {s:?}"))?,
        })
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.table_size, self.max_blocked)
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The settings to measure; the first is the one the checks and timings use.
    pub settings: Vec<Setting>,
    /// Timed repetitions of each encode and decode.
    pub repeat: u32,
    /// The Python tool (`pylsqpack_tool.py`) to run for ls-qpack's figures, if any.
    pub lsqpack_tool: Option<PathBuf>,
    /// Also print, per field name, what its lines cost.
    pub by_header: bool,
}

/// Wire bytes at one setting.
#[derive(Clone, Copy, Debug)]
pub struct SettingFigures {
    /// The setting.
    pub setting: Setting,
    /// Ours, acknowledged at once: (sections, encoder stream).
    pub ours_ack: (usize, usize),
    /// Ours, never acknowledged: (sections, encoder stream).
    pub ours_noack: (usize, usize),
    /// ls-qpack acknowledged at once, and never.
    pub lsqpack: Option<(usize, usize)>,
}

/// What one field name's lines cost in a file at the first setting (acknowledged at once).
#[derive(Clone, Debug)]
pub struct NameRow {
    /// The field name.
    pub name: String,
    /// Lines with it.
    pub lines: usize,
    /// Their bytes with our dynamic table (representations and the insertions they caused).
    pub ours: usize,
    /// Their bytes with the static table only.
    pub static_only: usize,
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
    /// Per setting, in the order asked.
    pub runs: Vec<SettingFigures>,
    /// Per field name at the first setting, most expensive first.
    pub names: Vec<NameRow>,
    /// Our encode time per list (first setting, acknowledged).
    pub encode_per_list: Duration,
    /// Our decode time per list (that run's file).
    pub decode_per_list: Duration,
    /// ls-qpack (Python binding) encode and decode microseconds per list, first setting.
    pub lsqpack_us: Option<(f64, f64)>,
}

fn total((a, b): (usize, usize)) -> usize {
    a + b
}

fn enc_opts(s: Setting, immediate_ack: bool, costs: bool) -> EncodeOptions {
    EncodeOptions {
        table_size: s.table_size,
        max_blocked: s.max_blocked,
        immediate_ack,
        no_set_capacity: false,
        costs,
    }
}

fn name_rows(
    ours: &BTreeMap<Vec<u8>, NameCost>,
    stat: &BTreeMap<Vec<u8>, NameCost>,
) -> Vec<NameRow> {
    let mut rows: Vec<NameRow> = ours
        .iter()
        .map(|(name, c)| NameRow {
            name: String::from_utf8_lossy(name).into_owned(),
            lines: c.lines,
            ours: c.bytes,
            static_only: stat.get(name).map_or(0, |s| s.bytes),
        })
        .collect();
    rows.sort_by(|a, b| b.ours.cmp(&a.ours).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// Measures one corpus file with our encoder and decoder.
pub fn measure(lists: &[HeaderList], o: &BenchOptions) -> anyhow::Result<FileFigures> {
    let first = *o.settings.first().context("no setting to measure")?;
    let mut f = FileFigures {
        lists: lists.len(),
        raw_bytes: lists.iter().flatten().map(|(n, v)| n.len() + v.len()).sum(),
        ..FileFigures::default()
    };
    // Our encoder limited to the static table although the peer allows a table.
    let st = codec::encode_with_limit(lists, &enc_opts(first, true, true), 0)?;
    f.static_only = st.wire_bytes();
    for &setting in &o.settings {
        let ack = codec::encode(lists, &enc_opts(setting, true, true))?;
        let noack = codec::encode(lists, &enc_opts(setting, false, false))?;
        if setting == first {
            f.names = name_rows(&ack.name_costs, &st.name_costs);
        }
        f.runs.push(SettingFigures {
            setting,
            ours_ack: (ack.section_bytes, ack.encoder_stream_bytes),
            ours_noack: (noack.section_bytes, noack.encoder_stream_bytes),
            lsqpack: None,
        });
    }

    let ack = codec::encode(lists, &enc_opts(first, true, false))?;
    let file_blocks = blocks::parse(&ack.file)?;
    let dec_opts = DecodeOptions {
        table_size: first.table_size,
        max_blocked: first.max_blocked,
        strict_start: true,
    };
    // The best of the repetitions, list by list for encoding (a list takes microseconds, so
    // its best time is one the machine's other work did not interrupt) and for the whole file
    // when decoding: both stay meaningful on a busy machine.
    let repeat = o.repeat.max(1);
    let mut best_encode = vec![Duration::MAX; lists.len()];
    let mut best_decode = Duration::MAX;
    for _ in 0..repeat {
        // Only the time inside the encoder is counted, not the helper decoder's.
        let run = codec::encode(lists, &enc_opts(first, true, false))?;
        for (best, t) in best_encode.iter_mut().zip(&run.list_times) {
            *best = (*best).min(*t);
        }
        best_decode = best_decode.min(codec::decode(&file_blocks, &dec_opts)?.decode_time);
    }
    let n = lists.len().max(1) as u32;
    f.encode_per_list = best_encode.iter().sum::<Duration>() / n;
    f.decode_per_list = best_decode / n;
    Ok(f)
}

/// ls-qpack's figures for one file at one setting.
struct LsqpackRun {
    /// Wire bytes acknowledged at once, and never.
    bytes: (usize, usize),
    /// Encode and decode microseconds per list (Python binding).
    times: Option<(f64, f64)>,
}

/// Runs the Python tool's benchmark on `file` at `setting`.
fn measure_lsqpack(
    tool: &Path,
    file: &Path,
    setting: Setting,
    repeat: u32,
) -> anyhow::Result<LsqpackRun> {
    let output = Command::new("python3")
        .arg(tool)
        .arg("bench")
        .arg("--table-size")
        .arg(setting.table_size.to_string())
        .arg("--max-blocked")
        .arg(setting.max_blocked.to_string())
        .arg("--repeat")
        .arg(repeat.to_string())
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
    let mut fields = BTreeMap::new();
    for kv in line.split_whitespace() {
        if let Some((k, v)) = kv.split_once('=') {
            fields.insert(k, v);
        }
    }
    let get = |k: &str| -> anyhow::Result<&str> {
        fields
            .get(k)
            .copied()
            .with_context(|| format!("no {k}= in {line:?}"))
    };
    let bytes = (get("ack")?.parse()?, get("noack")?.parse()?);
    let times = match (get("encode_us"), get("decode_us")) {
        (Ok(e), Ok(d)) => Some((e.parse()?, d.parse()?)),
        _ => None,
    };
    Ok(LsqpackRun { bytes, times })
}

fn ratio(ours: usize, theirs: Option<usize>) -> String {
    match theirs {
        Some(t) if t > 0 => format!("{:.3}", ours as f64 / t as f64),
        _ => "-".into(),
    }
}

fn opt(v: Option<usize>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
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
            for (i, run) in f.runs.iter_mut().enumerate() {
                // ls-qpack is timed at the first setting only.
                let repeat = if i == 0 { o.repeat.clamp(1, 20) } else { 1 };
                let ls = measure_lsqpack(tool, path, run.setting, repeat)
                    .with_context(|| format!("ls-qpack on {}", path.display()))?;
                run.lsqpack = Some(ls.bytes);
                if i == 0 {
                    f.lsqpack_us = ls.times;
                }
            }
        }
        all.push((path.clone(), f));
    }
    let mut s = String::new();
    render_bytes(&mut s, &all);
    render_checks(&mut s, &all, o);
    render_times(&mut s, &all, o);
    if o.by_header {
        render_names(&mut s, &all, o);
    }
    Ok(s)
}

fn render_bytes(s: &mut String, all: &[(PathBuf, FileFigures)]) {
    let _ = writeln!(
        s,
        "QPACK compression: wire bytes = field sections + encoder stream; setting = table \
         size/blocked streams; ours/ls = our bytes / ls-qpack's"
    );
    let _ = writeln!(
        s,
        "\n{:<24} {:>6} {:>8} {:>7}  {:<9} {:>7} {:>8} {:>7}  {:>7} {:>8} {:>7}",
        "", "", "names+", "static", "", "ack", "", "", "no ack", "", ""
    );
    let _ = writeln!(
        s,
        "{:<24} {:>6} {:>8} {:>7}  {:<9} {:>7} {:>8} {:>7}  {:>7} {:>8} {:>7}",
        "corpus",
        "lists",
        "values",
        "only",
        "setting",
        "ours",
        "ls-qpack",
        "ours/ls",
        "ours",
        "ls-qpack",
        "ours/ls"
    );
    for (path, f) in all {
        for (i, r) in f.runs.iter().enumerate() {
            let (head, lists, raw, st) = if i == 0 {
                (
                    file_name(path),
                    f.lists.to_string(),
                    f.raw_bytes.to_string(),
                    f.static_only.to_string(),
                )
            } else {
                Default::default()
            };
            let (ack, noack) = (total(r.ours_ack), total(r.ours_noack));
            let _ = writeln!(
                s,
                "{:<24} {:>6} {:>8} {:>7}  {:<9} {:>7} {:>8} {:>7}  {:>7} {:>8} {:>7}",
                head,
                lists,
                raw,
                st,
                r.setting.to_string(),
                ack,
                opt(r.lsqpack.map(|l| l.0)),
                ratio(ack, r.lsqpack.map(|l| l.0)),
                noack,
                opt(r.lsqpack.map(|l| l.1)),
                ratio(noack, r.lsqpack.map(|l| l.1)),
            );
        }
    }
}

fn render_checks(s: &mut String, all: &[(PathBuf, FileFigures)], o: &BenchOptions) {
    let Some(first) = o.settings.first() else {
        return;
    };
    let _ = writeln!(s, "\nchecks at {first}, acknowledged at once:");
    if o.lsqpack_tool.is_some() {
        let over: Vec<String> = all
            .iter()
            .filter_map(|(path, f)| {
                let r = f.runs.first()?;
                let ls = r.lsqpack?.0;
                (total(r.ours_ack) > ls).then(|| {
                    format!(
                        "{} ({})",
                        file_name(path),
                        ratio(total(r.ours_ack), Some(ls))
                    )
                })
            })
            .collect();
        let _ = writeln!(
            s,
            "  ours <= ls-qpack on every file: {}",
            if over.is_empty() {
                "met".to_string()
            } else {
                format!("MISSED on {}", over.join(", "))
            }
        );
    }
    let worse: Vec<String> = all
        .iter()
        .flat_map(|(path, f)| {
            f.names
                .iter()
                .filter(|r| r.ours > r.static_only)
                .map(move |r| {
                    format!(
                        "{}: {} ({} B, static only {} B)",
                        file_name(path),
                        r.name,
                        r.ours,
                        r.static_only
                    )
                })
        })
        .collect();
    let _ = writeln!(
        s,
        "  no field name costs more than with the static table alone: {}",
        if worse.is_empty() {
            "met".to_string()
        } else {
            format!("MISSED: {}", worse.join("; "))
        }
    );
}

fn render_times(s: &mut String, all: &[(PathBuf, FileFigures)], o: &BenchOptions) {
    let setting = o
        .settings
        .first()
        .map(|f| f.to_string())
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "\ntime per header list at {setting}, acknowledged at once (microseconds; ours: the best \
         of {} repetitions, list by list for encoding)",
        o.repeat.max(1)
    );
    let _ = writeln!(
        s,
        "  {:<24} {:>12} {:>12} {:>20} {:>20}",
        "file", "ours encode", "ours decode", "ls-qpack encode (py)", "ls-qpack decode (py)"
    );
    for (path, f) in all {
        let (le, ld) = match f.lsqpack_us {
            Some((e, d)) => (format!("{e:.2}"), format!("{d:.2}")),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "  {:<24} {:>12} {:>12} {:>20} {:>20}",
            file_name(path),
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
}

fn render_names(s: &mut String, all: &[(PathBuf, FileFigures)], o: &BenchOptions) {
    let setting = o
        .settings
        .first()
        .map(|f| f.to_string())
        .unwrap_or_default();
    for (path, f) in all {
        let _ = writeln!(
            s,
            "\nbytes per field name in {} at {setting}, acknowledged at once (a line's \
             representation plus the encoder instructions it caused)",
            file_name(path)
        );
        let _ = writeln!(
            s,
            "  {:<40} {:>6} {:>9} {:>12} {:>8}",
            "name", "lines", "ours", "static only", "ratio"
        );
        for r in &f.names {
            let _ = writeln!(
                s,
                "  {:<40} {:>6} {:>9} {:>12} {:>8}",
                r.name,
                r.lines,
                r.ours,
                r.static_only,
                ratio(r.ours, Some(r.static_only))
            );
        }
    }
}
