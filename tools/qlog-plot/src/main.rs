//! `qlog-plot FILE.sqlog [--out PREFIX] [--width W] [--height H]`: writes PREFIX.png and
//! PREFIX.svg with the connection's congestion graph and prints a summary.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str =
    "usage: qlog-plot FILE.sqlog [--out PREFIX] [--width W] [--height H] [--detail MS]

Draws the congestion graph of a qlog trace (cwnd, bytes in flight, ssthresh,
smoothed and min RTT, lost packets, congestion states) to PREFIX.png and
PREFIX.svg and prints a summary. PREFIX defaults to FILE without its extension.
Default size 1000x500. --detail MS adds a panel that shows the first MS
milliseconds (start-up, slow start) next to the whole connection.";

struct Args {
    input: PathBuf,
    out: PathBuf,
    width: u32,
    height: u32,
    opts: qlog_plot::Options,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut input = None;
    let mut out = None;
    let (mut width, mut height) = (1000, 500);
    let mut opts = qlog_plot::Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |name: &str, v: String| {
            v.parse::<u32>()
                .map_err(|_| format!("{name}: not a number: {v}"))
        };
        match a.as_str() {
            "--out" | "-o" => out = Some(PathBuf::from(value(a)?)),
            "--width" => width = number(a, value(a)?)?,
            "--height" => height = number(a, value(a)?)?,
            "--detail" => {
                let v = value(a)?;
                let ms = v
                    .parse::<f64>()
                    .ok()
                    .filter(|ms| ms.is_finite() && *ms > 0.0)
                    .ok_or_else(|| format!("--detail: not a positive number of ms: {v}"))?;
                opts.detail_until = Some(ms);
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if input.is_none() => input = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    let input = input.ok_or("no input file")?;
    let out = out.unwrap_or_else(|| input.with_extension(""));
    Ok(Args {
        input,
        out,
        width,
        height,
        opts,
    })
}

fn with_suffix(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

fn run(args: &Args) -> Result<(), String> {
    let bytes = std::fs::read(&args.input).map_err(|e| format!("{}: {e}", args.input.display()))?;
    let trace =
        qlog_plot::sqlog::parse(&bytes).map_err(|e| format!("{}: {e}", args.input.display()))?;
    let a = qlog_plot::Analysis::new(&trace);
    let png_path = with_suffix(&args.out, "png");
    let svg_path = with_suffix(&args.out, "svg");
    std::fs::write(
        &png_path,
        qlog_plot::render_png(&a, args.width, args.height, &args.opts),
    )
    .map_err(|e| format!("{}: {e}", png_path.display()))?;
    std::fs::write(
        &svg_path,
        qlog_plot::render_svg(&a, args.width, args.height, &args.opts),
    )
    .map_err(|e| format!("{}: {e}", svg_path.display()))?;

    let h = &a.header;
    println!(
        "trace            {} ({}) {}",
        h.title, h.vantage, h.description
    );
    if trace.skipped > 0 {
        println!(
            "skipped          {} records that were not events",
            trace.skipped
        );
    }
    print!("{}", a.summary);
    println!(
        "wrote            {} {}",
        png_path.display(),
        svg_path.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("qlog-plot: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qlog-plot: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse_args(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn arguments() {
        let a = args(&["dir/x.sqlog"]).unwrap();
        assert_eq!(a.out, PathBuf::from("dir/x"));
        assert_eq!((a.width, a.height), (1000, 500));
        let a = args(&[
            "x.sqlog", "--out", "p/q", "--width", "800", "--height", "400",
        ])
        .unwrap();
        assert_eq!(a.out, PathBuf::from("p/q"));
        assert_eq!((a.width, a.height), (800, 400));
        assert_eq!(a.opts.detail_until, None);
        let a = args(&["x.sqlog", "--detail", "1500"]).unwrap();
        assert_eq!(a.opts.detail_until, Some(1500.0));
        assert!(args(&["x", "--detail", "-3"]).is_err());
        assert_eq!(
            with_suffix(Path::new("p/q.v1"), "png"),
            PathBuf::from("p/q.v1.png")
        );
        assert!(args(&[]).is_err());
        assert!(args(&["x", "--width"]).is_err());
        assert!(args(&["x", "--width", "wide"]).is_err());
        assert!(args(&["x", "--bogus"]).is_err());
        assert!(args(&["x", "y"]).is_err());
    }
}
