//! One run's picture: each flow's goodput over time (averaged over the rate window, one point
//! per step), the fair share as a black step line (the link rate over the flows started so far),
//! and below it Jain's index over sliding windows.

use plotters::prelude::*;

use crate::metrics::{sliding_jain, FlowTrace, Params};

/// The flows' colours, in order (a fifth flow reuses the first).
const COLOURS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// The picture's size in pixels.
pub const SIZE: (u32, u32) = (1200, 760);

fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing: {e:?}")
}

/// Draws the picture into an RGB buffer of [`SIZE`].
fn draw(
    rgb: &mut [u8],
    flows: &[FlowTrace],
    end: f64,
    link_mbps: f64,
    title: &str,
    p: &Params,
) -> Result<(), String> {
    let root = BitMapBackend::with_buffer(rgb, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(de)?;
    let (top, bottom) = root.split_vertically(SIZE.1 * 7 / 10);
    let y_max = link_mbps * 1.25;
    let mut chart = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..end, 0f64..y_max)
        .map_err(de)?;
    chart
        .configure_mesh()
        .y_desc("goodput (Mbit/s)")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(de)?;
    // The fair share: the link rate over the flows started so far.
    let mut starts: Vec<f64> = flows.iter().map(|f| f.start).collect();
    starts.sort_by(|a, b| a.total_cmp(b));
    let mut fair = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let share = link_mbps / (i + 1) as f64;
        if let Some(&(_, prev)) = fair.last() {
            fair.push((s, prev));
        }
        fair.push((s, share));
    }
    fair.push((end, link_mbps / starts.len().max(1) as f64));
    chart
        .draw_series(LineSeries::new(fair, BLACK.stroke_width(2)))
        .map_err(de)?
        .label("fair share")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    for (i, f) in flows.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let from = f.start + p.rate_window;
        let n = ((end - from) / p.step).floor().max(0.0) as usize;
        let pts: Vec<(f64, f64)> = (0..=n)
            .map(|k| {
                let t = from + k as f64 * p.step;
                (t, f.rate(t - p.rate_window, t) * 8.0 / 1e6)
            })
            .collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(de)?
            .label(format!("{} (from {:.0} s)", f.label, f.start))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(de)?;

    let last_start = starts.last().copied().unwrap_or(0.0);
    let jain = sliding_jain(flows, last_start, end, p);
    let lo = 1.0 / flows.len().max(1) as f64;
    let mut jc = ChartBuilder::on(&bottom)
        .margin(12)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..end, lo..1.0f64)
        .map_err(de)?;
    jc.configure_mesh()
        .x_desc("time (s)")
        .y_desc(format!("Jain ({:.0} s)", p.jain_window))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(de)?;
    jc.draw_series(LineSeries::new(jain, BLACK.stroke_width(1)))
        .map_err(de)?;
    root.present().map_err(de)?;
    Ok(())
}

/// The picture as PNG bytes.
pub fn png(
    flows: &[FlowTrace],
    end: f64,
    link_mbps: f64,
    title: &str,
    p: &Params,
) -> Result<Vec<u8>, String> {
    qlog_plot::fonts::ensure()?;
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    draw(&mut rgb, flows, end, link_mbps, title, p)?;
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, SIZE.0, SIZE.1);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let err = |e: png::EncodingError| format!("PNG: {e}");
    let mut w = enc.write_header().map_err(err)?;
    w.write_image_data(&rgb).map_err(err)?;
    w.finish().map_err(err)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_png_of_the_expected_size() {
        if qlog_plot::fonts::ensure().is_err() {
            // qlog-plot's tests require the font; here the picture's content is not the point.
            panic!("no font: install fonts-dejavu-core (tools/test.sh does)");
        }
        let f = |start: f64| FlowTrace {
            label: format!("flow from {start}"),
            start,
            samples: (0..=200)
                .map(|i| (start + i as f64 * 0.1, i as u64 * 100_000))
                .collect(),
        };
        let bytes = png(&[f(0.0), f(5.0)], 25.0, 20.0, "test", &Params::default()).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        // IHDR: width and height, big-endian, after the signature and the chunk header.
        assert_eq!(
            u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
            SIZE.0
        );
        assert_eq!(
            u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
            SIZE.1
        );
    }
}
