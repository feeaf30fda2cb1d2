//! Pictures of a QUIC connection from its qlog: reads a `.sqlog` (qlog 0.3 JSON-SEQ, as the
//! library writes it), extracts congestion window, bytes in flight, ssthresh, smoothed and
//! minimum RTT, lost packets and congestion-state changes, and draws them as PNG and SVG — the
//! congestion graph qvis shows, without a browser — plus a short text summary.
//!
//! The pictures are drawn with `plotters` (its bitmap backend, encoded with `png`, and its SVG
//! backend); text uses a font file read at run time (see [`fonts`]).

pub mod analysis;
pub mod fonts;
pub mod plot;
pub mod sqlog;

use plotters::prelude::{BitMapBackend, IntoDrawingArea, SVGBackend};

pub use analysis::{Analysis, ExitCause, SlowStartExit, Summary};
pub use plot::Options;

/// Why a picture could not be made: no usable font, or the drawing or encoding failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderError(pub String);

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RenderError {}

/// Reads a qlog file's bytes and extracts what the plot and summary show.
pub fn analyse(input: &[u8]) -> Result<Analysis, sqlog::Error> {
    Ok(Analysis::new(&sqlog::parse(input)?))
}

fn clamp_size(width: u32, height: u32) -> (u32, u32) {
    (
        width.clamp(plot::MIN_SIZE.0, plot::MAX_SIZE.0),
        height.clamp(plot::MIN_SIZE.1, plot::MAX_SIZE.1),
    )
}

/// The congestion graph as a PNG file (size clamped to [`plot::MIN_SIZE`]..[`plot::MAX_SIZE`]).
pub fn render_png(
    a: &Analysis,
    width: u32,
    height: u32,
    opts: &plot::Options,
) -> Result<Vec<u8>, RenderError> {
    fonts::ensure().map_err(RenderError)?;
    let (width, height) = clamp_size(width, height);
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        plot::draw(a, &root, opts, true).map_err(RenderError)?;
        root.present()
            .map_err(|e| RenderError(format!("drawing failed: {e:?}")))?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::High);
    let png_err = |e: png::EncodingError| RenderError(format!("PNG: {e}"));
    let mut w = enc.write_header().map_err(png_err)?;
    w.write_image_data(&rgb).map_err(png_err)?;
    w.finish().map_err(png_err)?;
    Ok(out)
}

/// The congestion graph as an SVG document (size clamped as for [`render_png`]).
pub fn render_svg(
    a: &Analysis,
    width: u32,
    height: u32,
    opts: &plot::Options,
) -> Result<String, RenderError> {
    // The SVG names its font family, but plotters measures text with the font to lay it out.
    fonts::ensure().map_err(RenderError)?;
    let (width, height) = clamp_size(width, height);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        plot::draw(a, &root, opts, false).map_err(RenderError)?;
        root.present()
            .map_err(|e| RenderError(format!("drawing failed: {e:?}")))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::synthetic_qlog;

    /// The `points` of every SVG polyline stroked in `color` (`#RRGGBB`), as (x, y) pairs.
    pub(crate) fn polylines(doc: &str, color: &str) -> Vec<Vec<(f64, f64)>> {
        doc.split("<polyline ")
            .skip(1)
            .filter(|tag| {
                let tag = tag.split("/>").next().unwrap_or("");
                tag.contains(&format!(r#"stroke="{color}""#))
            })
            .map(|tag| {
                let pts = tag
                    .split(r#"points=""#)
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                pts.split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect()
    }

    /// Width and height from a PNG's signature and IHDR chunk.
    fn png_size(png: &[u8]) -> (u32, u32) {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
        assert_eq!(&png[12..16], b"IHDR");
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        (be(&png[16..20]), be(&png[20..24]))
    }

    /// The RGB pixels of a PNG.
    fn png_pixels(png: &[u8]) -> Vec<u8> {
        let mut r = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        buf
    }

    fn has_colour(pixels: &[u8], c: plotters::style::RGBColor) -> bool {
        pixels.chunks(3).any(|p| p == [c.0, c.1, c.2])
    }

    #[test]
    fn png_of_the_synthetic_trace_decodes() {
        let a = analyse(&synthetic_qlog()).unwrap();
        let png = render_png(&a, 640, 360, &Options::default()).unwrap();
        assert_eq!(png_size(&png), (640, 360));
        let pixels = png_pixels(&png);
        assert_eq!(pixels.len(), 640 * 360 * 3);
        // The plot has ink: the cwnd blue, the loss red and the exit line are somewhere, on
        // white.
        let cwnd = plot::SERIES.iter().find(|s| s.class == "cwnd").unwrap();
        assert!(has_colour(&pixels, cwnd.color), "cwnd colour");
        assert!(has_colour(&pixels, plot::LOSS), "loss colour");
        assert!(has_colour(&pixels, plot::EXIT), "exit colour");
        let white = pixels.chunks(3).filter(|p| *p == [255, 255, 255]).count();
        assert!(white > 640 * 360 / 2, "mostly white background");
        assert!(white < 640 * 360 * 97 / 100, "but not blank: {white}");
        // Sizes outside the supported range are clamped, not rejected.
        let tiny = render_png(&a, 1, 1, &Options::default()).unwrap();
        assert_eq!(png_size(&tiny), plot::MIN_SIZE);
    }

    #[test]
    fn svg_of_the_synthetic_trace_has_every_series() {
        let a = analyse(&synthetic_qlog()).unwrap();
        let doc = render_svg(&a, 1000, 500, &Options::default()).unwrap();
        assert!(doc.starts_with("<svg"));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert!(doc.contains(r#"width="1000" height="500""#));
        for s in plot::SERIES {
            let color = format!("#{:02X}{:02X}{:02X}", s.color.0, s.color.1, s.color.2);
            let lines = polylines(&doc, &color);
            // The series in the plot (dashed ones in pieces) and its legend swatch.
            let n = if s.dash.is_some() { 3 } else { 2 };
            assert!(lines.len() >= n, "{}: {} polylines", s.class, lines.len());
            assert!(
                lines.iter().map(Vec::len).sum::<usize>() >= 4,
                "{}",
                s.class
            );
        }
        // Two losses at 400 ms share a pixel column: one cross (two lines) in the plot, one in
        // the legend.
        assert_eq!(doc.matches(r##"stroke="#D62728""##).count(), 2 * 2);
        // The exit line in the plot and in the legend.
        assert_eq!(doc.matches(r##"stroke="#141414""##).count(), 2);
        for label in [
            "cwnd",
            "bytes in flight",
            "lost packet (2)",
            "slow-start exit (delay)",
            "time (ms)",
            "bytes",
            "conservative slow start",
            "RTT (ms)",
            "synthetic (server)",
            "HyStart++ exit 300 ms",
        ] {
            assert!(
                doc.contains(&format!(">{label}</text>"))
                    || doc.contains(&format!(">\n{label}\n</text>")),
                "{label}"
            );
        }
    }

    #[test]
    fn detail_panel_draws_every_series_twice() {
        let a = analyse(&synthetic_qlog()).unwrap();
        let opts = Options {
            detail_until: Some(350.0),
        };
        let doc = render_svg(&a, 1000, 500, &opts).unwrap();
        let mut cwnd = polylines(&doc, "#1F77B4");
        assert_eq!(cwnd.len(), 3, "detail, main, legend");
        // The legend swatch is the lowest.
        cwnd.sort_by(|p, q| p[0].1.total_cmp(&q[0].1));
        let (detail, main) = (&cwnd[0], &cwnd[1]);
        let (detail, main) = if detail[0].0 < main[0].0 {
            (detail, main)
        } else {
            (main, detail)
        };
        let detail_right = detail.iter().map(|p| p.0).fold(f64::MIN, f64::max);
        let main_left = main.iter().map(|p| p.0).fold(f64::MAX, f64::min);
        assert!(detail_right < main_left, "detail left of main");
        // The loss at 400 ms lies outside the detail window: only the main panel marks it.
        assert_eq!(doc.matches(r##"stroke="#D62728""##).count(), 2 * 2);
        // The exit at 300 ms is in both panels.
        assert_eq!(doc.matches(r##"stroke="#141414""##).count(), 3);
        // A detail window beyond the trace is ignored.
        let doc = render_svg(
            &a,
            1000,
            500,
            &Options {
                detail_until: Some(1e9),
            },
        )
        .unwrap();
        assert_eq!(polylines(&doc, "#1F77B4").len(), 2);
        let png = render_png(&a, 1000, 500, &opts).unwrap();
        assert_eq!(png_size(&png), (1000, 500));
    }

    #[test]
    fn empty_and_metric_free_traces_still_draw() {
        let a = analyse(b"\x1e{\"trace\":{}}\n").unwrap();
        let doc = render_svg(&a, 400, 300, &Options::default()).unwrap();
        assert!(doc.contains("no recovery:metrics_updated events"));
        let png = render_png(&a, 400, 300, &Options::default()).unwrap();
        assert_eq!(png_size(&png), (400, 300));
    }
}
