//! `qlog-plot FILE.sqlog [--out PREFIX] [--width W] [--height H] [--detail MS]`: writes
//! PREFIX.png and PREFIX.svg with the connection's congestion graph and prints a summary.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

/// Draws the congestion graph of a qlog trace (cwnd, bytes in flight, ssthresh, smoothed and
/// min RTT, lost packets, congestion states, the slow-start exit) to PREFIX.png and
/// PREFIX.svg and prints a summary.
#[derive(Parser, Debug)]
#[command(name = "qlog-plot", version)]
struct Args {
    /// The qlog trace: .sqlog (JSON-SEQ) or .qlog (JSON).
    #[arg(value_name = "FILE.sqlog")]
    input: PathBuf,
    /// Writes PREFIX.png and PREFIX.svg [default: FILE without its extension].
    #[arg(short, long, value_name = "PREFIX")]
    out: Option<PathBuf>,
    /// Picture width in pixels (clamped to 320..8000).
    #[arg(long, value_name = "W", default_value_t = 1000)]
    width: u32,
    /// Picture height in pixels (clamped to 200..8000).
    #[arg(long, value_name = "H", default_value_t = 500)]
    height: u32,
    /// Adds a panel that shows the first MS milliseconds (start-up, slow start) next to the
    /// whole connection.
    #[arg(long, value_name = "MS", value_parser = positive_ms, allow_negative_numbers = true)]
    detail: Option<f64>,
    /// TrueType/OpenType font for the pictures' text [default: $QLOG_PLOT_FONT, else DejaVu
    /// Sans from the system's fonts, e.g. Debian's fonts-dejavu-core].
    #[arg(long, value_name = "FILE.ttf")]
    font: Option<PathBuf>,
}

fn positive_ms(v: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .ok_or_else(|| format!("not a positive number of ms: {v}"))
}

impl Args {
    fn out(&self) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| self.input.with_extension(""))
    }

    fn opts(&self) -> qlog_plot::Options {
        qlog_plot::Options {
            detail_until: self.detail,
        }
    }
}

fn with_suffix(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(font) = &args.font {
        qlog_plot::fonts::use_font_file(font)?;
    }
    let bytes = std::fs::read(&args.input).map_err(|e| format!("{}: {e}", args.input.display()))?;
    let trace =
        qlog_plot::sqlog::parse(&bytes).map_err(|e| format!("{}: {e}", args.input.display()))?;
    let a = qlog_plot::Analysis::new(&trace);
    // The summary first: it needs no font, so a missing font still leaves it on stdout.
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
    let out = args.out();
    let png_path = with_suffix(&out, "png");
    let svg_path = with_suffix(&out, "svg");
    let opts = args.opts();
    let png =
        qlog_plot::render_png(&a, args.width, args.height, &opts).map_err(|e| e.to_string())?;
    std::fs::write(&png_path, png).map_err(|e| format!("{}: {e}", png_path.display()))?;
    let svg =
        qlog_plot::render_svg(&a, args.width, args.height, &opts).map_err(|e| e.to_string())?;
    std::fs::write(&svg_path, svg).map_err(|e| format!("{}: {e}", svg_path.display()))?;

    println!(
        "wrote            {} {}",
        png_path.display(),
        svg_path.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
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
    use clap::CommandFactory;

    fn args(list: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("qlog-plot").chain(list.iter().copied()))
    }

    #[test]
    fn arguments() {
        Args::command().debug_assert();
        let a = args(&["dir/x.sqlog"]).unwrap();
        assert_eq!(a.out(), PathBuf::from("dir/x"));
        assert_eq!((a.width, a.height), (1000, 500));
        let a = args(&[
            "x.sqlog", "--out", "p/q", "--width", "800", "--height", "400",
        ])
        .unwrap();
        assert_eq!(a.out(), PathBuf::from("p/q"));
        assert_eq!((a.width, a.height), (800, 400));
        assert_eq!(a.opts().detail_until, None);
        assert_eq!(args(&["x", "-o", "r"]).unwrap().out(), PathBuf::from("r"));
        let a = args(&["x.sqlog", "--detail", "1500"]).unwrap();
        assert_eq!(a.opts().detail_until, Some(1500.0));
        assert!(args(&["x", "--detail", "-3"]).is_err());
        assert!(args(&["x", "--detail", "0"]).is_err());
        assert_eq!(
            with_suffix(Path::new("p/q.v1"), "png"),
            PathBuf::from("p/q.v1.png")
        );
        assert!(args(&[]).is_err());
        assert!(args(&["x", "--width"]).is_err());
        assert!(args(&["x", "--width", "wide"]).is_err());
        assert!(args(&["x", "--bogus"]).is_err());
        assert!(args(&["x", "y"]).is_err());
        let help = Args::command().render_help().to_string();
        for flag in [
            "--out",
            "--width",
            "--height",
            "--detail",
            "--font",
            "--version",
        ] {
            assert!(help.contains(flag), "{flag} in --help");
        }
    }
}
