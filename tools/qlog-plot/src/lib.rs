//! Pictures of a QUIC connection from its qlog: reads a `.sqlog` (qlog 0.3 JSON-SEQ, as the
//! library writes it), extracts congestion window, bytes in flight, ssthresh, smoothed and
//! minimum RTT, lost packets and congestion-state changes, and draws them as PNG and SVG — the
//! congestion graph qvis shows, without a browser — plus a short text summary.
//!
//! Everything is written here: the SVG by hand, the PNG with a small rasteriser, a 5x7 bitmap
//! font and a deflate/zlib/PNG encoder; the only dependency is `serde_json`.

pub mod analysis;
pub mod canvas;
pub mod font;
pub mod plot;
pub mod png;
pub mod raster;
pub mod sqlog;
pub mod svg;

pub use analysis::{Analysis, ExitCause, SlowStartExit, Summary};
pub use plot::Options;

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
pub fn render_png(a: &Analysis, width: u32, height: u32, opts: &plot::Options) -> Vec<u8> {
    let (width, height) = clamp_size(width, height);
    let mut img = raster::Image::new(width, height);
    plot::draw(a, &mut img, width, height, opts);
    png::encode_rgb(width, height, &img.pixels, png::Compression::Fixed)
}

/// The congestion graph as an SVG document (size clamped as for [`render_png`]).
pub fn render_svg(a: &Analysis, width: u32, height: u32, opts: &plot::Options) -> String {
    let (width, height) = clamp_size(width, height);
    let title = format!("congestion graph of {}", a.header.title);
    let mut svg = svg::Svg::new(width, height, &title);
    plot::draw(a, &mut svg, width, height, opts);
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::synthetic_qlog;

    #[test]
    fn png_of_the_synthetic_trace_decodes() {
        let a = analyse(&synthetic_qlog()).unwrap();
        let png = render_png(&a, 640, 360, &Options::default());
        let d = png::tests::decode_png(&png);
        assert_eq!((d.width, d.height), (640, 360));
        assert_eq!(
            d.raw.len(),
            640 * 360 * 3 + 360,
            "w*h*3 bytes plus a filter byte per row"
        );
        let pixels = png::tests::unfilter(&d.raw, 640, 360);
        // The plot has ink: the cwnd blue and the loss red are both somewhere.
        let has = |c: [u8; 3]| pixels.chunks(3).any(|p| p == c);
        assert!(has([31, 119, 180]), "cwnd colour");
        assert!(has([214, 39, 40]), "loss colour");
        assert!(has([255, 255, 255]));
        // Sizes outside the supported range are clamped, not rejected.
        let tiny = png::tests::decode_png(&render_png(&a, 1, 1, &Options::default()));
        assert_eq!((tiny.width, tiny.height), plot::MIN_SIZE);
    }

    #[test]
    fn svg_of_the_synthetic_trace_is_well_formed() {
        let a = analyse(&synthetic_qlog()).unwrap();
        let doc = render_svg(&a, 1000, 500, &Options::default());
        let names = svg::tests::check_xml(&doc);
        assert_eq!(names.first().map(String::as_str), Some("svg"));
        for class in [
            "cwnd",
            "bytes_in_flight",
            "ssthresh",
            "smoothed_rtt",
            "min_rtt",
        ] {
            let n = doc
                .matches(&format!(r#"<polyline class="{class}""#))
                .count();
            assert_eq!(n, 1, "one polyline for {class}");
        }
        assert_eq!(doc.matches(r#"<path class="loss""#).count(), 1);
        // Three changes after the initial state get a dashed line each.
        assert_eq!(doc.matches(r#"class="state_change""#).count(), 3);
        for label in [
            "cwnd",
            "bytes in flight",
            "lost packet (2)",
            "time (ms)",
            "conservative slow start",
            "RTT (ms)",
        ] {
            assert!(doc.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(doc.contains(">synthetic (server)</text>"));
        assert!(
            doc.contains(">HyStart++ exit 300 ms</text>"),
            "the exit is named"
        );
    }

    #[test]
    fn detail_panel_draws_every_series_twice() {
        let a = analyse(&synthetic_qlog()).unwrap();
        let opts = Options {
            detail_until: Some(350.0),
        };
        let doc = render_svg(&a, 1000, 500, &opts);
        svg::tests::check_xml(&doc);
        for class in ["cwnd", "bytes_in_flight", "smoothed_rtt"] {
            let n = doc
                .matches(&format!(r#"<polyline class="{class}""#))
                .count();
            assert_eq!(n, 2, "{class} in both panels");
        }
        // The detail panel ends at 350 ms: its cwnd path stops there.
        let detail_cwnd = doc
            .split(r#"<polyline class="cwnd" points=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        let xs: Vec<f64> = detail_cwnd
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        let main_cwnd = doc
            .split(r#"<polyline class="cwnd" points=""#)
            .nth(2)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        let main_first_x: f64 = main_cwnd.split(',').next().unwrap().parse().unwrap();
        assert!(xs.iter().all(|&x| x < main_first_x), "detail left of main");
        // The loss at 400 ms lies outside the detail window: only the main panel marks it.
        assert_eq!(doc.matches(r#"<path class="loss""#).count(), 1);
        // A detail window beyond the trace is ignored.
        let doc = render_svg(
            &a,
            1000,
            500,
            &Options {
                detail_until: Some(1e9),
            },
        );
        assert_eq!(doc.matches(r#"<polyline class="cwnd""#).count(), 1);
        png::tests::decode_png(&render_png(&a, 1000, 500, &opts));
    }

    #[test]
    fn empty_and_metric_free_traces_still_draw() {
        let a = analyse(b"\x1e{\"trace\":{}}\n").unwrap();
        let doc = render_svg(&a, 400, 300, &Options::default());
        svg::tests::check_xml(&doc);
        assert!(doc.contains("no recovery:metrics_updated events"));
        png::tests::decode_png(&render_png(&a, 400, 300, &Options::default()));
    }
}
