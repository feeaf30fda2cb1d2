//! Two flows sharing a 20 Mbit/s, 40 ms bottleneck (netsim's `--experiment share`, seed 1):
//! each flow's goodput per second, BBR+BBR, BBR+CUBIC and CUBIC+CUBIC behind a 1-BDP and an
//! 8-BDP queue, one panel each, drawn into one PNG.
//!
//! ```text
//! cargo run --release -p qlog-plot --example shares -- [OUT.png] [--seed S]
//! ```

use plotters::prelude::*;

use netsim::share::{run_share, ShareResult, ShareScenario, SHARE_QUEUES};
use netsim::Cc;
use quiche::CongestionControlAlgorithm;

const WIDTH: u32 = 1500;
const HEIGHT: u32 = 900;

fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    r: &ShareResult,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    let s = &r.scenario;
    let n = r.flows[0].bytes.len();
    let title = format!(
        "{} + {}, queue {:?} BDP",
        r.flows[0].flow.cc,
        r.flows[1].flow.cc,
        match s.queue {
            netsim::Queue::Bdp(b) => b,
            _ => 0.0,
        }
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d(0f64..n as f64, 0f64..22f64)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("Mbit/s")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    let colours = [RGBColor(31, 119, 180), RGBColor(214, 39, 40)];
    for (f, fl) in r.flows.iter().enumerate() {
        let points: Vec<(f64, f64)> = (0..n).map(|i| (i as f64 + 0.5, r.mbps(f, i))).collect();
        let c = colours[f % 2];
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(e)?
            .label(format!(
                "flow {} ({}, from {:.2} s)",
                f + 1,
                fl.flow.cc,
                fl.flow.start.as_secs_f64()
            ))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(e)?;
    Ok(())
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut out = "shares.png".to_string();
    let mut seed = 1;
    while let Some(a) = args.next() {
        if a == "--seed" {
            seed = args
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or("--seed takes a number")?;
        } else {
            out = a;
        }
    }
    qlog_plot::fonts::ensure()?;
    let bbr = Cc::new(CongestionControlAlgorithm::Bbr, false);
    let cubic = Cc::default();
    let pairs = [(bbr, bbr), (bbr, cubic), (cubic, cubic)];
    let mut runs = Vec::new();
    for queue in SHARE_QUEUES {
        for (a, b) in pairs {
            runs.push(run_share(
                &ShareScenario::two_flows(a, b, queue, seed),
                seed,
            )?);
        }
    }
    let mut rgb = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| format!("{e:?}"))?;
        for (area, r) in root.split_evenly((2, 3)).iter().zip(&runs) {
            panel(area, r)?;
        }
        root.present().map_err(|e| format!("{e:?}"))?;
    }
    let file = std::fs::File::create(&out).map_err(|e| format!("{out}: {e}"))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), WIDTH, HEIGHT);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(&rgb).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    println!("{out}");
    Ok(())
}
