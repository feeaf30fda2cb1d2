//! The congestion graph's layout, drawn with plotters on any of its backends (the bitmap one
//! for the PNG, the SVG one): metrics as step lines against time (bytes on the left axis, RTT
//! in ms on the right), lost packets as crosses in a lane along the bottom, congestion states
//! as a coloured strip above the plot with a dashed line at each change, the first slow-start
//! exit as a solid line with its name, a legend and a title.

use plotters::chart::DualCoordChartContext;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::analysis::{Analysis, ExitCause, Series};
use crate::fonts::{self, FAMILY};

/// Smallest picture the layout supports.
pub const MIN_SIZE: (u32, u32) = (320, 200);
/// Largest picture (bounds the bitmap's memory).
pub const MAX_SIZE: (u32, u32) = (8000, 8000);

const DARK: RGBColor = RGBColor(50, 50, 50);
const GRID: RGBColor = RGBColor(228, 228, 228);
const FRAME: RGBColor = RGBColor(120, 120, 120);
const HIGHLIGHT: RGBColor = RGBColor(255, 246, 214);
/// Colour of the lost-packet crosses.
pub const LOSS: RGBColor = RGBColor(214, 39, 40);
/// Colour of the slow-start exit line.
pub const EXIT: RGBColor = RGBColor(20, 20, 20);
/// Beyond this many state changes the dashed lines would hide the data; the strip remains.
const MAX_STATE_LINES: usize = 80;
/// Legend text size, relative to the label font size.
const LEGEND_TEXT: f64 = 0.9;
/// Length of a legend swatch, in label font sizes.
const LEGEND_SWATCH: f64 = 1.7;

/// A panel's coordinates: time in ms against bytes (primary) or RTT in ms (secondary).
type Coords = Cartesian2d<RangedCoordf64, RangedCoordf64>;

/// Which axis a series is read against.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Left,
    Right,
}

/// How one metric is drawn.
#[derive(Clone, Copy)]
pub struct SeriesStyle {
    /// The metric's field name in `recovery:metrics_updated`.
    pub class: &'static str,
    /// Its name in the legend.
    pub label: &'static str,
    side: Side,
    /// Line colour (each series has its own, so the SVG's lines can be told apart by it).
    pub color: RGBColor,
    width: u32,
    /// Dash length and gap in pixels; `None` is solid.
    pub dash: Option<(i32, i32)>,
}

impl SeriesStyle {
    fn shape(&self) -> ShapeStyle {
        self.color.stroke_width(self.width)
    }
}

/// Draw order: bytes in flight below, cwnd on top.
pub const SERIES: [SeriesStyle; 5] = [
    SeriesStyle {
        class: "bytes_in_flight",
        label: "bytes in flight",
        side: Side::Left,
        color: RGBColor(44, 160, 44),
        width: 1,
        dash: None,
    },
    SeriesStyle {
        class: "ssthresh",
        label: "ssthresh",
        side: Side::Left,
        color: RGBColor(255, 127, 14),
        width: 2,
        dash: Some((8, 5)),
    },
    SeriesStyle {
        class: "min_rtt",
        label: "min RTT",
        side: Side::Right,
        color: RGBColor(120, 80, 170),
        width: 1,
        dash: Some((5, 4)),
    },
    SeriesStyle {
        class: "smoothed_rtt",
        label: "smoothed RTT",
        side: Side::Right,
        color: RGBColor(148, 103, 189),
        width: 2,
        dash: None,
    },
    SeriesStyle {
        class: "cwnd",
        label: "cwnd",
        side: Side::Left,
        color: RGBColor(31, 119, 180),
        width: 2,
        dash: None,
    },
];

/// The series `class` names of an analysis.
fn series_of<'a>(a: &'a Analysis, class: &str) -> &'a Series {
    match class {
        "bytes_in_flight" => &a.bytes_in_flight,
        "ssthresh" => &a.ssthresh,
        "min_rtt" => &a.min_rtt,
        "smoothed_rtt" => &a.smoothed_rtt,
        _ => &a.cwnd,
    }
}

/// Fill colour and short name of a congestion state.
fn state_style(state: &str) -> (RGBColor, &'static str) {
    match state {
        "slow_start" => (RGBColor(152, 223, 138), "SS"),
        "conservative_slow_start" => (RGBColor(158, 218, 229), "CSS"),
        "limited_slow_start" => (RGBColor(219, 219, 141), "LSS"),
        "congestion_avoidance" => (RGBColor(205, 205, 205), "CA"),
        "recovery" => (RGBColor(255, 152, 150), "REC"),
        "application_limited" => (RGBColor(247, 182, 210), "APP"),
        _ => (RGBColor(230, 230, 230), "?"),
    }
}

fn darker(c: RGBColor, f: f64) -> RGBColor {
    let d = |v: u8| (v as f64 * f).round() as u8;
    RGBColor(d(c.0), d(c.1), d(c.2))
}

/// An axis from `min` to `max` with ticks every `step`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    /// Lowest value.
    pub min: f64,
    /// Highest value.
    pub max: f64,
    /// Tick spacing.
    pub step: f64,
}

impl Axis {
    /// An axis from `min` to a round number at or above `max`, with about `ticks` ticks at
    /// steps of 1, 2, 2.5 or 5 times a power of ten.
    pub fn nice(min: f64, max: f64, ticks: usize) -> Axis {
        let span = if max > min { max - min } else { 1.0 };
        let raw = span / ticks.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let norm = raw / mag;
        let step = mag
            * if norm <= 1.0 {
                1.0
            } else if norm <= 2.0 {
                2.0
            } else if norm <= 2.5 {
                2.5
            } else if norm <= 5.0 {
                5.0
            } else {
                10.0
            };
        let top = min + (span / step - 1e-9).ceil().max(1.0) * step;
        Axis {
            min,
            max: top,
            step,
        }
    }

    /// How many ticks the axis has, `min` included.
    pub fn tick_count(&self) -> usize {
        ((self.max - self.min) / self.step + 1e-6).floor() as usize + 1
    }
}

/// A number with at most three decimals and no trailing zeros: "0", "1.5", "0.125".
pub fn short_number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A byte-axis label on an axis up to `axis_max`: "0", "250k", "1.5M".
pub fn byte_label(v: f64, axis_max: f64) -> String {
    let (unit, suffix) = if axis_max >= 2e6 {
        (1e6, "M")
    } else if axis_max >= 2e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    if v.abs() < 1e-9 {
        return "0".into();
    }
    format!("{}{suffix}", short_number(v / unit))
}

/// Turns the part of a step series between `from` and `to` into vertices, keeping at most
/// four per pixel column (enter, lowest, highest, leave) so a trace with many thousands of
/// updates stays a light path with the same look. `x_of` and `y_of` map to pixels.
pub fn step_path(
    s: &Series,
    from: f64,
    to: f64,
    x_of: impl Fn(f64) -> f64,
    y_of: impl Fn(f64) -> f64,
) -> Vec<(f64, f64)> {
    let first = s.points.partition_point(|&(t, _)| t <= from);
    let mut raw: Vec<(f64, f64)> = Vec::new();
    let mut value = s.at(from);
    if let Some(v) = value {
        raw.push((x_of(from), y_of(v)));
    }
    for &(t, v) in s.points[first..].iter().take_while(|&&(t, _)| t <= to) {
        let x = x_of(t);
        if let Some(prev) = value {
            raw.push((x, y_of(prev)));
        }
        raw.push((x, y_of(v)));
        value = Some(v);
    }
    if let (Some(v), Some(&(last_x, _))) = (value, raw.last()) {
        if x_of(to) > last_x {
            raw.push((x_of(to), y_of(v)));
        }
    }
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let col = raw[i].0.floor();
        let mut j = i;
        while j + 1 < raw.len() && raw[j + 1].0.floor() == col {
            j += 1;
        }
        let group = &raw[i..=j];
        let lo = group.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        let hi = group.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let (enter, leave) = (group[0], group[group.len() - 1]);
        // An extreme is drawn anyway by the line from enter to leave if one of them has it.
        let span = (enter.1.min(leave.1), enter.1.max(leave.1));
        let mut keep = vec![enter];
        if lo < span.0 {
            keep.push((leave.0, lo));
        }
        if hi > span.1 {
            keep.push((leave.0, hi));
        }
        keep.push(leave);
        for p in keep {
            if out.last() != Some(&p) {
                out.push(p);
            }
        }
        i = j + 1;
    }
    out
}

/// Splits a path into the runs that lie at or below `top`: a segment leaving the range is cut
/// at the top edge, and one wholly above it is left out (an "infinite" ssthresh).
pub fn below(path: &[(f64, f64)], top: f64) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut run: Vec<(f64, f64)> = Vec::new();
    for (i, &(x, y)) in path.iter().enumerate() {
        let next_in = path.get(i + 1).is_some_and(|p| p.1 <= top);
        let prev_in = i > 0 && path[i - 1].1 <= top;
        if y <= top || next_in || prev_in {
            run.push((x, y.min(top)));
        }
        if y > top && !next_in && !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// The text of the title line.
fn title_of(a: &Analysis) -> String {
    let title = if a.header.title.is_empty() {
        "qlog"
    } else {
        &a.header.title
    };
    if a.header.vantage.is_empty() {
        title.to_string()
    } else {
        format!("{title} ({})", a.header.vantage)
    }
}

/// Choices beyond the picture size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Options {
    /// Adds a panel on the left that shows only the first this many milliseconds (start-up and
    /// slow start in detail), next to the whole connection.
    pub detail_until: Option<f64>,
}

/// A drawing failure, as text.
fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// Sizes that follow from the picture size, and text measuring.
struct Style {
    /// Font size of labels, in pixels.
    fs: f64,
    pad: f64,
    /// Draw text glyph by glyph (see [`fonts::layout`]).
    glyph_by_glyph: bool,
}

impl Style {
    /// Draws `text` with its anchor (`pos.0` across, `pos.1` up and down) at `at`, in pixels
    /// of `area`.
    fn text<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        text: &str,
        at: (f64, f64),
        scale: f64,
        color: &RGBColor,
        pos: (HPos, VPos),
    ) -> Result<(), String> {
        let style = self.font(scale).color(color);
        let y = at.1.round() as i32;
        if self.glyph_by_glyph {
            if let Some((glyphs, width)) = fonts::layout(text, self.fs * scale) {
                let x0 = match pos.0 {
                    HPos::Left => at.0,
                    HPos::Center => at.0 - width / 2.0,
                    HPos::Right => at.0 - width,
                };
                let style = style.pos(Pos::new(HPos::Left, pos.1));
                for (c, dx) in glyphs {
                    let x = (x0 + dx).round() as i32;
                    area.draw(&Text::new(c.to_string(), (x, y), style.clone()))
                        .map_err(de)?;
                }
                return Ok(());
            }
        }
        let style = style.pos(Pos::new(pos.0, pos.1));
        area.draw(&Text::new(
            text.to_string(),
            (at.0.round() as i32, y),
            style,
        ))
        .map_err(de)
    }

    fn font(&self, scale: f64) -> TextStyle<'static> {
        TextStyle::from((FAMILY, self.fs * scale).into_font()).color(&DARK)
    }

    fn width<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        text: &str,
        scale: f64,
    ) -> f64 {
        area.estimate_text_size(text, &self.font(scale))
            .map_or(text.len() as f64 * self.fs * scale * 0.6, |(w, _)| w as f64)
    }

    /// Shortens `text` with "..." to fit `max` pixels.
    fn fit<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        text: &str,
        scale: f64,
        max: f64,
    ) -> String {
        if self.width(area, text, scale) <= max {
            return text.to_string();
        }
        let chars: Vec<char> = text.chars().collect();
        let mut n = chars.len();
        while n > 0 {
            n -= 1;
            let s: String = chars[..n].iter().collect::<String>() + "...";
            if self.width(area, &s, scale) <= max {
                return s;
            }
        }
        String::new()
    }
}

/// The value axes, shared by the panels.
struct Frame {
    yl: Axis,
    yr: Axis,
    has_rtt: bool,
}

fn frame(a: &Analysis, target_ticks: usize) -> Frame {
    let main_max = [&a.cwnd, &a.bytes_in_flight]
        .iter()
        .filter_map(|s| s.max())
        .fold(0.0, f64::max);
    let left_max = [&a.cwnd, &a.bytes_in_flight, &a.ssthresh]
        .iter()
        .filter_map(|s| s.max())
        // An ssthresh far above the window (an "infinite" initial value) would flatten the rest.
        .filter(|&v| main_max == 0.0 || v <= 2.0 * main_max)
        .fold(0.0, f64::max);
    let rtt_max = [&a.smoothed_rtt, &a.min_rtt]
        .iter()
        .filter_map(|s| s.max())
        .fold(0.0, f64::max);
    Frame {
        yl: Axis::nice(0.0, left_max * 1.05, target_ticks),
        yr: Axis::nice(0.0, rtt_max * 1.1, target_ticks),
        has_rtt: !a.smoothed_rtt.is_empty() || !a.min_rtt.is_empty(),
    }
}

/// One time window of the graph.
struct Panel {
    t0: f64,
    t1: f64,
    /// Pixels left of the plot for the byte axis's labels (0: none), and right for the RTT's.
    left_labels: f64,
    right_labels: f64,
    margin_left: f64,
    margin_right: f64,
    exit_note: bool,
    /// A time range to shade (the part another panel shows in detail).
    highlight: Option<(f64, f64)>,
}

/// Draws the congestion graph of `a` on `root`. `glyph_by_glyph` places each glyph of a text
/// itself (for the bitmap backend, see [`fonts::layout`]); the SVG backend writes whole texts.
pub fn draw<DB: DrawingBackend>(
    a: &Analysis,
    root: &DrawingArea<DB, Shift>,
    opts: &Options,
    glyph_by_glyph: bool,
) -> Result<(), String> {
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (w as f64, h as f64);
    let fs = (w / 62.0).min(h / 31.0).clamp(10.0, 17.0);
    let st = Style {
        fs,
        pad: (fs * 0.5).round(),
        glyph_by_glyph,
    };
    root.fill(&WHITE).map_err(de)?;

    // Title and description.
    let mut y = st.pad;
    let title = st.fit(root, &title_of(a), 1.15, w - 2.0 * st.pad);
    let top_centre = (HPos::Center, VPos::Top);
    st.text(root, &title, (w / 2.0, y), 1.15, &BLACK, top_centre)?;
    y += fs * 1.15 * 1.25;
    if !a.header.description.is_empty() {
        let desc = st.fit(root, &a.header.description, 0.9, w - 2.0 * st.pad);
        st.text(root, &desc, (w / 2.0, y), 0.9, &DARK, top_centre)?;
        y += fs * 0.9 * 1.25;
    }

    // The legend at the bottom, laid out first since its height sets the plot's.
    let legend = legend_items(a);
    let rows = legend_rows(root, &st, &legend, w - 2.0 * st.pad);
    let row_h = (fs * 1.35).round();
    let n_rows = rows.last().map_or(0, |r| r.1 + 1) as f64;
    let legend_top = h - st.pad - n_rows * row_h;

    let strip_h = (fs * 1.3).round();
    let area_h = (legend_top - y - st.pad).max(40.0);
    let target_ticks = (area_h / (fs * 3.0)).clamp(2.0, 10.0) as usize;
    let f = frame(a, target_ticks);

    let max_label = |labels: Vec<String>| {
        labels
            .iter()
            .map(|l| st.width(root, l, 1.0))
            .fold(0.0, f64::max)
    };
    let yl_labels = (0..f.yl.tick_count()).map(|i| byte_label(i as f64 * f.yl.step, f.yl.max));
    let yr_labels = (0..f.yr.tick_count()).map(|i| short_number(i as f64 * f.yr.step));
    // Tick labels, the tick marks and the rotated axis title.
    let left_labels = max_label(yl_labels.collect()) + fs * 1.6 + 10.0;
    let right_labels = if f.has_rtt {
        max_label(yr_labels.collect()) + fs * 1.6 + 10.0
    } else {
        0.0
    };

    let t0 = a.start.min(0.0);
    let t1 = if a.end > t0 { a.end } else { t0 + 1.0 };
    let body = root.margin(y as i32, (h - legend_top) as i32, 0, 0);
    let detail = opts.detail_until.filter(|&d| d > t0 && d < t1);
    let mut panels = Vec::new();
    if let Some(until) = detail {
        let gap = 2.0 * st.pad;
        // The detail plot gets 40% of the plotting width.
        let plots = w - 2.0 * st.pad - left_labels - right_labels - 2.0 * gap;
        let split = st.pad + left_labels + 0.4 * plots + gap;
        let (l, r) = body.split_horizontally(split as i32);
        panels.push((
            l,
            Panel {
                t0,
                t1: until,
                left_labels,
                right_labels: 0.0,
                margin_left: st.pad,
                margin_right: gap,
                exit_note: true,
                highlight: None,
            },
        ));
        panels.push((
            r,
            Panel {
                t0,
                t1,
                left_labels: 0.0,
                right_labels,
                margin_left: gap,
                margin_right: st.pad,
                exit_note: false,
                highlight: Some((t0, until)),
            },
        ));
    } else {
        panels.push((
            body,
            Panel {
                t0,
                t1,
                left_labels,
                right_labels,
                margin_left: st.pad,
                margin_right: st.pad,
                exit_note: true,
                highlight: None,
            },
        ));
    }
    for (area, p) in &panels {
        let (strip, plot) = area.split_vertically(strip_h as i32 + 2);
        draw_strip(a, &st, &strip, p)?;
        draw_panel(a, &st, &f, &plot, p)?;
    }
    draw_legend(root, &st, &legend, &rows, w, legend_top, row_h)
}

/// Starts a chart on `area` with the panel's label areas, so the strip and the plot line up.
fn chart_on<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    p: &Panel,
    bottom: f64,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin_left(p.margin_left as i32)
        .margin_right(p.margin_right as i32)
        .y_label_area_size(p.left_labels as i32)
        .right_y_label_area_size(p.right_labels as i32)
        .x_label_area_size(bottom as i32);
    b
}

/// The congestion-state strip above a plot.
fn draw_strip<DB: DrawingBackend>(
    a: &Analysis,
    st: &Style,
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
) -> Result<(), String> {
    let chart = chart_on(area, p, 0.0)
        .margin_bottom(2)
        .build_cartesian_2d(p.t0..p.t1, 0.0..1.0)
        .map_err(de)?;
    let plot = chart.plotting_area();
    let px = plot.strip_coord_spec();
    let x_of = |t: f64| chart.backend_coord(&(t, 0.0)).0 as f64;
    for (i, sc) in a.states.iter().enumerate() {
        let s0 = sc.time.max(p.t0);
        let s1 = a.states.get(i + 1).map_or(p.t1, |n| n.time).min(p.t1);
        if s1 <= s0 {
            continue;
        }
        let (color, short) = state_style(&sc.new);
        plot.draw(&Rectangle::new([(s0, 0.0), (s1, 1.0)], color.filled()))
            .map_err(de)?;
        let long = sc.new.replace('_', " ");
        let room = x_of(s1) - x_of(s0) - 6.0;
        let label = [long.as_str(), short]
            .into_iter()
            .find(|l| st.width(area, l, 0.85) <= room);
        if let Some(label) = label {
            let x = x_of(s0) - plot.get_base_pixel().0 as f64 + 3.0;
            let mid = px.dim_in_pixel().1 as f64 / 2.0;
            st.text(
                &px,
                label,
                (x, mid),
                0.85,
                &BLACK,
                (HPos::Left, VPos::Center),
            )?;
        }
    }
    plot.draw(&Rectangle::new(
        [(p.t0, 0.0), (p.t1, 1.0)],
        FRAME.stroke_width(1),
    ))
    .map_err(de)?;
    Ok(())
}

/// One panel: grid and axes, the shaded detail range, state lines, curves, losses, the exit.
fn draw_panel<DB: DrawingBackend>(
    a: &Analysis,
    st: &Style,
    f: &Frame,
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
) -> Result<(), String> {
    let fs = st.fs;
    let mut chart = chart_on(area, p, fs * 2.9)
        .margin_top(2)
        .build_cartesian_2d(p.t0..p.t1, 0.0..f.yl.max)
        .map_err(de)?
        .set_secondary_coord(p.t0..p.t1, 0.0..f.yr.max);
    let ymax = f.yl.max;
    let seconds = p.t1 - p.t0 > 2000.0;
    let tname = if seconds { "time (s)" } else { "time (ms)" };
    let x_fmt = |v: &f64| short_number(if seconds { v / 1000.0 } else { *v });
    let y_fmt = |v: &f64| byte_label(*v, ymax);
    let plot_w = chart.plotting_area().dim_in_pixel().0 as f64;
    let x_ticks = (plot_w / (fs * 5.0)).clamp(2.0, 12.0) as usize;

    if let Some((h0, h1)) = p.highlight {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(h0, 0.0), (h1, ymax)],
                HIGHLIGHT.filled(),
            )))
            .map_err(de)?;
    }
    let mut mesh = chart.configure_mesh();
    mesh.bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(FRAME.stroke_width(1))
        .label_style(st.font(1.0))
        .axis_desc_style(st.font(1.0))
        .x_labels(x_ticks)
        .y_labels(f.yl.tick_count())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(tname);
    if p.left_labels > 0.0 {
        mesh.y_desc("bytes");
    }
    mesh.draw().map_err(de)?;
    if f.has_rtt && p.right_labels > 0.0 {
        let r_fmt = |v: &f64| short_number(*v);
        chart
            .configure_secondary_axes()
            .axis_style(FRAME.stroke_width(1))
            .label_style(st.font(1.0))
            .axis_desc_style(st.font(1.0))
            .y_labels(f.yr.tick_count())
            .y_label_formatter(&r_fmt)
            .y_desc("RTT (ms)")
            .draw()
            .map_err(de)?;
    }

    // A dashed line at each state change (the strip above names the states).
    if a.states.len() <= MAX_STATE_LINES {
        for sc in a.states.iter().filter(|s| s.time > p.t0 && s.time <= p.t1) {
            let (color, _) = state_style(&sc.new);
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    vec![(sc.time, 0.0), (sc.time, ymax)],
                    4,
                    3,
                    darker(color, 0.7).stroke_width(1),
                )))
                .map_err(de)?;
        }
    }

    draw_curves(a, f, &mut chart, p, plot_w)?;

    // Lost packets sit in a lane along the bottom of the plot, where they hide no curve; a
    // burst shows as a solid run. Markers on the same pixel add nothing.
    let cross = (fs * 0.3).round().max(3.0) as i32;
    let mut marks: Vec<(f64, i32)> = a
        .losses
        .iter()
        .filter(|l| l.time >= p.t0 && l.time <= p.t1)
        .map(|l| (l.time, chart.backend_coord(&(l.time, 0.0)).0))
        .collect();
    marks.dedup_by_key(|m| m.1);
    chart
        .draw_series(marks.iter().map(|&(t, _)| {
            EmptyElement::at((t, 0.0)) + Cross::new((0, -cross - 3), cross, LOSS.stroke_width(2))
        }))
        .map_err(de)?;

    if let Some(exit) = &a.summary.slow_start_exit {
        if exit.time >= p.t0 && exit.time <= p.t1 {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(exit.time, 0.0), (exit.time, ymax)],
                    EXIT.stroke_width(2),
                )))
                .map_err(de)?;
            if p.exit_note {
                draw_exit_note(a, st, &chart.plotting_area().strip_coord_spec(), |t| {
                    (chart.backend_coord(&(t, 0.0)).0 - chart.plotting_area().get_base_pixel().0)
                        as f64
                })?;
            }
        }
    }
    // A full frame around the plot (the mesh draws only the left and bottom axes).
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(p.t0, 0.0), (p.t1, ymax)],
            FRAME.stroke_width(1),
        )))
        .map_err(de)?;
    if a.cwnd.is_empty() && a.bytes_in_flight.is_empty() && !f.has_rtt {
        let px = chart.plotting_area().strip_coord_spec();
        let (pw, ph) = px.dim_in_pixel();
        st.text(
            &px,
            "no recovery:metrics_updated events",
            (pw as f64 / 2.0, ph as f64 / 2.0),
            1.0,
            &DARK,
            (HPos::Center, VPos::Center),
        )?;
    }
    Ok(())
}

/// The metrics' step lines, each against its axis, thinned to the plot's pixel columns.
fn draw_curves<DB: DrawingBackend>(
    a: &Analysis,
    f: &Frame,
    chart: &mut DualCoordChartContext<'_, DB, Coords, Coords>,
    p: &Panel,
    plot_w: f64,
) -> Result<(), String> {
    let end = p.t1.min(a.end.max(p.t0));
    // Thinning works on pixel columns of the plot.
    let col = (p.t1 - p.t0) / plot_w.max(1.0);
    for style in &SERIES {
        let series = series_of(a, style.class);
        if series.is_empty() {
            continue;
        }
        let path: Vec<(f64, f64)> = step_path(series, p.t0, end, |t| (t - p.t0) / col, |v| v)
            .into_iter()
            .map(|(x, v)| (p.t0 + x * col, v))
            .collect();
        let top = if style.side == Side::Left {
            f.yl.max
        } else {
            f.yr.max
        };
        for run in below(&path, top) {
            match (style.side, style.dash) {
                (Side::Left, None) => chart.draw_series(LineSeries::new(run, style.shape())),
                (Side::Left, Some((on, off))) => {
                    chart.draw_series(DashedLineSeries::new(run, on, off, style.shape()))
                }
                (Side::Right, None) => {
                    chart.draw_secondary_series(LineSeries::new(run, style.shape()))
                }
                (Side::Right, Some((on, off))) => {
                    chart.draw_secondary_series(DashedLineSeries::new(run, on, off, style.shape()))
                }
            }
            .map_err(de)?;
        }
    }
    Ok(())
}

/// Names the first slow-start exit next to its line, at the top of the plot: left of the line
/// if it fits there (on one line or two), else right of it. `px` has the plot's pixel coordinates.
fn draw_exit_note<DB: DrawingBackend>(
    a: &Analysis,
    st: &Style,
    px: &DrawingArea<DB, Shift>,
    x_of: impl Fn(f64) -> f64,
) -> Result<(), String> {
    let Some(exit) = &a.summary.slow_start_exit else {
        return Ok(());
    };
    let x = x_of(exit.time);
    let what = match exit.cause {
        ExitCause::Delay => "HyStart++ exit",
        ExitCause::Loss => "slow start ends by loss",
    };
    let when = format!("{:.0} ms", exit.time);
    let one = [format!("{what} {when}")];
    let two = match exit.cause {
        ExitCause::Delay => [what.to_string(), when],
        ExitCause::Loss => ["slow start ends".to_string(), format!("by loss, {when}")],
    };
    let layouts: [&[String]; 2] = [&one, &two];
    let plot_w = px.dim_in_pixel().0 as f64;
    let (lo, hi) = (4.0, plot_w - 4.0);
    let width_of = |lines: &[String]| {
        lines
            .iter()
            .map(|l| st.width(px, l, 1.0))
            .fold(0.0, f64::max)
    };
    let mut choice = None;
    // Left of the line first: before the exit the curves are still low (slow start), after
    // it the window and the RTT are at their peak, right under the note.
    'search: for before in [true, false] {
        for lines in layouts {
            let width = width_of(lines);
            let left = if before { x - 8.0 - width } else { x + 6.0 };
            if left >= lo && left + width <= hi {
                choice = Some((lines, left, width));
                break 'search;
            }
        }
    }
    let (lines, left, width) = choice.unwrap_or_else(|| {
        let width = width_of(&two);
        (&two[..], (x + 6.0).min(hi - width).max(lo), width)
    });
    let top = 6.0;
    let line_h = (st.fs * 1.25).round();
    px.draw(&Rectangle::new(
        [
            ((left - 3.0) as i32, (top - 3.0) as i32),
            (
                (left + width + 3.0) as i32,
                (top + line_h * lines.len() as f64 + 1.0) as i32,
            ),
        ],
        WHITE.mix(0.85).filled(),
    ))
    .map_err(de)?;
    for (i, line) in lines.iter().enumerate() {
        let y = top + i as f64 * line_h;
        st.text(px, line, (left, y), 1.0, &BLACK, (HPos::Left, VPos::Top))?;
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Swatch {
    Line(SeriesStyle),
    Cross,
    Exit,
    Fill(RGBColor),
}

struct LegendItem {
    label: String,
    swatch: Swatch,
    /// Starts a new legend row.
    new_row: bool,
}

impl PartialEq for SeriesStyle {
    fn eq(&self, other: &Self) -> bool {
        self.class == other.class
    }
}

fn legend_items(a: &Analysis) -> Vec<LegendItem> {
    // Legend order: the main curves first.
    let order = [
        "cwnd",
        "bytes_in_flight",
        "ssthresh",
        "smoothed_rtt",
        "min_rtt",
    ];
    let mut items: Vec<LegendItem> = order
        .iter()
        .filter_map(|class| SERIES.iter().find(|s| s.class == *class))
        .filter(|s| !series_of(a, s.class).is_empty())
        .map(|s| LegendItem {
            label: s.label.to_string(),
            swatch: Swatch::Line(*s),
            new_row: false,
        })
        .collect();
    if !a.losses.is_empty() {
        items.push(LegendItem {
            label: format!("lost packet ({})", a.losses.len()),
            swatch: Swatch::Cross,
            new_row: false,
        });
    }
    if let Some(exit) = &a.summary.slow_start_exit {
        items.push(LegendItem {
            label: match exit.cause {
                ExitCause::Delay => "slow-start exit (delay)".into(),
                ExitCause::Loss => "slow-start exit (loss)".into(),
            },
            swatch: Swatch::Exit,
            // Markers, then the states, on the second row.
            new_row: true,
        });
    }
    // The congestion states that occur, in order of first appearance.
    let mut seen: Vec<&str> = Vec::new();
    for sc in &a.states {
        if !seen.contains(&sc.new.as_str()) {
            seen.push(&sc.new);
        }
    }
    for (i, state) in seen.into_iter().enumerate() {
        let (color, _) = state_style(state);
        items.push(LegendItem {
            label: state.replace('_', " "),
            swatch: Swatch::Fill(color),
            new_row: i == 0 && a.summary.slow_start_exit.is_none(),
        });
    }
    items
}

/// Lays the legend items out in rows within `width`; returns each item's x offset and row.
fn legend_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    st: &Style,
    items: &[LegendItem],
    width: f64,
) -> Vec<(f64, usize)> {
    let swatch = st.fs * LEGEND_SWATCH + 6.0;
    let gap = st.fs * 0.9;
    let mut out = Vec::with_capacity(items.len());
    let (mut x, mut row) = (0.0, 0);
    for item in items {
        let w = swatch + st.width(area, &item.label, LEGEND_TEXT);
        if x > 0.0 && (x + w > width || item.new_row) {
            x = 0.0;
            row += 1;
        }
        out.push((x, row));
        x += w + gap;
    }
    out
}

fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    st: &Style,
    items: &[LegendItem],
    rows: &[(f64, usize)],
    w: f64,
    top: f64,
    row_h: f64,
) -> Result<(), String> {
    let swatch = st.fs * LEGEND_SWATCH;
    let n_rows = rows.last().map_or(0, |r| r.1 + 1);
    for row in 0..n_rows {
        let members: Vec<usize> = (0..items.len()).filter(|&i| rows[i].1 == row).collect();
        let Some(&last) = members.last() else {
            continue;
        };
        let row_w = rows[last].0 + swatch + 6.0 + st.width(root, &items[last].label, LEGEND_TEXT);
        let x0 = (w - row_w) / 2.0;
        let mid = (top + row as f64 * row_h + row_h / 2.0) as i32;
        for &i in &members {
            let item = &items[i];
            let x = (x0 + rows[i].0) as i32;
            let sw = swatch as i32;
            match item.swatch {
                Swatch::Line(s) => match s.dash {
                    None => root.draw(&PathElement::new(vec![(x, mid), (x + sw, mid)], s.shape())),
                    Some((on, off)) => root.draw(&DashedPathElement::new(
                        vec![(x, mid), (x + sw, mid)],
                        on.min(sw / 3),
                        off.min(sw / 4),
                        s.shape(),
                    )),
                },
                Swatch::Cross => {
                    let r = (st.fs * 0.3).round().max(3.0) as i32;
                    root.draw(&Cross::new((x + sw / 2, mid), r, LOSS.stroke_width(2)))
                }
                Swatch::Exit => root.draw(&PathElement::new(
                    vec![(x + sw / 2, mid - sw / 3), (x + sw / 2, mid + sw / 3)],
                    EXIT.stroke_width(2),
                )),
                Swatch::Fill(color) => {
                    let half = (st.fs * 0.55) as i32;
                    root.draw(&Rectangle::new(
                        [(x, mid - half), (x + sw, mid + half)],
                        color.filled(),
                    ))
                }
            }
            .map_err(de)?;
            let at = ((x + sw + 6) as f64, mid as f64);
            st.text(
                root,
                &item.label,
                at,
                LEGEND_TEXT,
                &DARK,
                (HPos::Left, VPos::Center),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axes() {
        let a = Axis::nice(0.0, 476_591.0, 6);
        assert_eq!(a.step, 100_000.0);
        assert_eq!(a.max, 500_000.0);
        assert_eq!(a.tick_count(), 6);
        assert_eq!(byte_label(300_000.0, a.max), "300k");
        let b = Axis::nice(0.0, 3.7, 8);
        assert_eq!(b.step, 0.5);
        assert_eq!(b.max, 4.0);
        assert_eq!(short_number(1.5), "1.5");
        assert_eq!(short_number(2.0), "2");
        assert_eq!(short_number(0.125), "0.125");
        let c = Axis::nice(0.0, 2.4e6, 5);
        assert_eq!(byte_label(1.5e6, c.max), "1.5M");
        assert_eq!(byte_label(0.0, c.max), "0");
        assert_eq!(byte_label(900.0, 1000.0), "900");
        // A degenerate range still gives a usable axis.
        let d = Axis::nice(0.0, 0.0, 5);
        assert!(d.max > 0.0 && d.step > 0.0);
    }

    #[test]
    fn step_path_keeps_four_vertices_per_column() {
        let mut s = Series::default();
        // Two changes per pixel over 100 pixels.
        for i in 0..200 {
            s.points.push((i as f64 * 0.5, (i % 7) as f64));
        }
        let path = step_path(&s, 0.0, 100.0, |t| t, |v| 50.0 - v);
        assert!(path.len() <= 4 * 101, "{}", path.len());
        // The extremes survive the thinning.
        assert!(path.iter().any(|p| p.1 == 44.0));
        assert!(path.iter().any(|p| p.1 == 50.0));
        assert_eq!(path.last(), Some(&(100.0, 50.0 - (199 % 7) as f64)));
        // A sparse series is drawn as horizontal and vertical steps.
        let sparse = Series {
            points: vec![(0.0, 1.0), (10.0, 3.0)],
        };
        let p = step_path(&sparse, 0.0, 20.0, |t| t, |v| v);
        assert_eq!(p, vec![(0.0, 1.0), (10.0, 1.0), (10.0, 3.0), (20.0, 3.0)]);
        // A window starts with the value in force and ignores what lies outside.
        let p = step_path(&sparse, 5.0, 8.0, |t| t, |v| v);
        assert_eq!(p, vec![(5.0, 1.0), (8.0, 1.0)]);
        let p = step_path(&sparse, -5.0, 12.0, |t| t, |v| v);
        assert_eq!(p, vec![(0.0, 1.0), (10.0, 1.0), (10.0, 3.0), (12.0, 3.0)]);
    }

    #[test]
    fn paths_above_the_axis_are_cut() {
        // An "infinite" ssthresh, then a real one: the drop is drawn from the top edge.
        let p = [(0.0, 1e9), (5.0, 1e9), (5.0, 3.0), (9.0, 3.0)];
        assert_eq!(
            below(&p, 10.0),
            vec![vec![(5.0, 10.0), (5.0, 3.0), (9.0, 3.0)]]
        );
        // Up and out, then back: two runs.
        let p = [(0.0, 1.0), (1.0, 20.0), (2.0, 20.0), (3.0, 2.0)];
        assert_eq!(
            below(&p, 10.0),
            vec![vec![(0.0, 1.0), (1.0, 10.0)], vec![(2.0, 10.0), (3.0, 2.0)]]
        );
        assert!(below(&[(0.0, 50.0), (1.0, 60.0)], 10.0).is_empty());
    }
}
