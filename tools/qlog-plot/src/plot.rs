//! The congestion graph's layout, drawn on any [`Canvas`]: metrics as step lines against time
//! (bytes on the left axis, RTT in ms on the right), lost packets as crosses, congestion states
//! as a coloured strip above the plot with a dashed line at each change, a legend and a title.

use crate::analysis::{Analysis, ExitCause, Series};
use crate::canvas::{Anchor, Canvas, Color, Rect, Stroke, Text};
use crate::font;

/// Smallest picture the layout supports.
pub const MIN_SIZE: (u32, u32) = (320, 200);
/// Largest picture (bounds the raster's memory).
pub const MAX_SIZE: (u32, u32) = (8000, 8000);

const BLACK: Color = Color(0, 0, 0);
const DARK: Color = Color(60, 60, 60);
const GRID: Color = Color(228, 228, 228);
const FRAME: Color = Color(120, 120, 120);
const LOSS: Color = Color(214, 39, 40);
/// Beyond this many state changes the dashed lines would hide the data; the strip remains.
const MAX_STATE_LINES: usize = 80;

/// Which axis a series is read against.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Left,
    Right,
}

struct SeriesStyle {
    class: &'static str,
    label: &'static str,
    side: Side,
    stroke: Stroke,
}

/// Draw order: bytes in flight below, cwnd on top.
fn series_styles(a: &Analysis) -> Vec<(&Series, SeriesStyle)> {
    vec![
        (
            &a.bytes_in_flight,
            SeriesStyle {
                class: "bytes_in_flight",
                label: "bytes in flight",
                side: Side::Left,
                stroke: Stroke {
                    opacity: 0.85,
                    ..Stroke::solid(Color(44, 160, 44), 1.0)
                },
            },
        ),
        (
            &a.ssthresh,
            SeriesStyle {
                class: "ssthresh",
                label: "ssthresh",
                side: Side::Left,
                stroke: Stroke::dashed(Color(255, 127, 14), 2.0, 8.0, 5.0),
            },
        ),
        (
            &a.min_rtt,
            SeriesStyle {
                class: "min_rtt",
                label: "min RTT",
                side: Side::Right,
                stroke: Stroke::dashed(Color(148, 103, 189), 1.0, 5.0, 4.0),
            },
        ),
        (
            &a.smoothed_rtt,
            SeriesStyle {
                class: "smoothed_rtt",
                label: "smoothed RTT",
                side: Side::Right,
                stroke: Stroke::solid(Color(148, 103, 189), 2.0),
            },
        ),
        (
            &a.cwnd,
            SeriesStyle {
                class: "cwnd",
                label: "cwnd",
                side: Side::Left,
                stroke: Stroke::solid(Color(31, 119, 180), 2.0),
            },
        ),
    ]
}

/// Fill colour and short name of a congestion state.
fn state_style(state: &str) -> (Color, &'static str) {
    match state {
        "slow_start" => (Color(152, 223, 138), "SS"),
        "conservative_slow_start" => (Color(158, 218, 229), "CSS"),
        "limited_slow_start" => (Color(219, 219, 141), "LSS"),
        "congestion_avoidance" => (Color(205, 205, 205), "CA"),
        "recovery" => (Color(255, 152, 150), "REC"),
        "application_limited" => (Color(247, 182, 210), "APP"),
        _ => (Color(230, 230, 230), "?"),
    }
}

fn darker(c: Color, f: f64) -> Color {
    let d = |v: u8| (v as f64 * f).round() as u8;
    Color(d(c.0), d(c.1), d(c.2))
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

    /// The tick values, `min` included.
    pub fn ticks(&self) -> Vec<f64> {
        let n = ((self.max - self.min) / self.step + 1e-6).floor() as usize;
        (0..=n.min(1000))
            .map(|i| self.min + i as f64 * self.step)
            .collect()
    }
}

/// How many decimals show a multiple of `step` exactly (up to 3).
fn decimals(step: f64) -> usize {
    (0..3)
        .find(|&d| {
            let scaled = step * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(3)
}

/// A byte-axis label: "0", "250k", "1.5M".
pub fn byte_label(v: f64, axis: &Axis) -> String {
    let (unit, suffix) = if axis.max >= 2e6 {
        (1e6, "M")
    } else if axis.max >= 2e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    if v == 0.0 {
        return "0".into();
    }
    format!("{:.*}{suffix}", decimals(axis.step / unit), v / unit)
}

fn plain_label(v: f64, step: f64) -> String {
    format!("{:.*}", decimals(step), v)
}

/// Turns the part of a step series between `from` and `to` into pixel vertices, keeping at
/// most four per pixel column (enter, lowest, highest, leave) so a trace with many thousands of
/// updates stays a light path with the same look.
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

/// Pixel sizes that follow from the picture size.
struct Metrics {
    /// Font scale of labels.
    s: u32,
    /// Character height.
    ch: f64,
    pad: f64,
}

impl Metrics {
    fn text<'a>(&self, text: &'a str, x: f64, y: f64, anchor: Anchor) -> Text<'a> {
        Text {
            text,
            x,
            y,
            scale: self.s,
            anchor,
            color: DARK,
            vertical: false,
        }
    }

    fn width(&self, text: &str) -> f64 {
        (font::text_width(text) * self.s) as f64
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Swatch {
    Line,
    Cross,
    Fill(Color),
}

struct LegendItem {
    label: String,
    stroke: Stroke,
    swatch: Swatch,
    /// Starts a new legend row.
    new_row: bool,
}

/// Lays the legend items out in rows within `width`; returns each item's x offset and row.
fn legend_rows(items: &[LegendItem], m: &Metrics, width: f64) -> Vec<(f64, usize)> {
    let swatch = 8.0 * m.s as f64 + 8.0;
    let gap = 6.0 * m.s as f64;
    let mut out = Vec::with_capacity(items.len());
    let (mut x, mut row) = (0.0, 0);
    for item in items {
        let w = swatch + m.width(&item.label);
        if x > 0.0 && (x + w > width || item.new_row) {
            x = 0.0;
            row += 1;
        }
        out.push((x, row));
        x += w + gap;
    }
    out
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

/// Shortens `text` with "..." to fit `max` pixels at `scale`.
fn fit(text: &str, scale: u32, max: f64) -> String {
    let per = (font::ADVANCE * scale) as f64;
    let n = ((max + (font::ADVANCE - font::GLYPH_W) as f64 * scale as f64) / per).floor() as usize;
    if text.chars().count() <= n {
        return text.to_string();
    }
    let keep: String = text.chars().take(n.saturating_sub(3)).collect();
    format!("{keep}...")
}

/// Choices beyond the picture size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Options {
    /// Adds a panel on the left that shows only the first this many milliseconds (start-up and
    /// slow start in detail), next to the whole connection.
    pub detail_until: Option<f64>,
}

/// What every panel shares: the font metrics and the value axes.
struct Frame {
    m: Metrics,
    yl: Axis,
    yr: Axis,
    has_rtt: bool,
    left_labels: Vec<(f64, String)>,
    right_labels: Vec<(f64, String)>,
    tick: f64,
}

impl Frame {
    fn yl_of(&self, plot: Rect, v: f64) -> f64 {
        plot.bottom() - (v - self.yl.min) / (self.yl.max - self.yl.min) * plot.h
    }

    fn yr_of(&self, plot: Rect, v: f64) -> f64 {
        plot.bottom() - (v - self.yr.min) / (self.yr.max - self.yr.min) * plot.h
    }
}

/// One time window of the graph.
struct Panel {
    plot: Rect,
    strip: Rect,
    t0: f64,
    t1: f64,
    left_labels: bool,
    right_labels: bool,
    exit_note: bool,
    /// A time range to shade (the part another panel shows in detail).
    highlight: Option<(f64, f64)>,
}

impl Panel {
    fn x_of(&self, t: f64) -> f64 {
        self.plot.x + (t - self.t0) / (self.t1 - self.t0) * self.plot.w
    }
}

/// The value axes and the tick labels, which set the margins.
fn frame(a: &Analysis, m: Metrics, plot_h: f64) -> Frame {
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
    let target_ticks = (plot_h / (m.ch * 3.5)).clamp(2.0, 10.0) as usize;
    let yl = Axis::nice(0.0, left_max * 1.05, target_ticks);
    let yr = Axis::nice(0.0, rtt_max * 1.1, target_ticks);
    let left_labels = yl
        .ticks()
        .into_iter()
        .map(|v| (v, byte_label(v, &yl)))
        .collect();
    let right_labels = yr
        .ticks()
        .into_iter()
        .map(|v| (v, plain_label(v, yr.step)))
        .collect();
    let tick = m.s as f64 * 2.0 + 2.0;
    Frame {
        m,
        yl,
        yr,
        has_rtt: !a.smoothed_rtt.is_empty() || !a.min_rtt.is_empty(),
        left_labels,
        right_labels,
        tick,
    }
}

/// Draws the title and description; returns the y below them.
fn draw_title(a: &Analysis, c: &mut dyn Canvas, m: &Metrics, w: f64) -> f64 {
    let title = fit(&title_of(a), m.s, w - 2.0 * m.pad);
    let mut y = m.pad;
    c.text(&Text {
        color: BLACK,
        ..m.text(&title, w / 2.0, y, Anchor::Middle)
    });
    y += m.ch + m.pad / 2.0;
    if !a.header.description.is_empty() {
        let ds = if m.width(&a.header.description) <= w - 2.0 * m.pad {
            m.s
        } else {
            1
        };
        let desc = fit(&a.header.description, ds, w - 2.0 * m.pad);
        c.text(&Text {
            scale: ds,
            ..m.text(&desc, w / 2.0, y, Anchor::Middle)
        });
        y += (font::GLYPH_H * ds) as f64 + m.pad / 2.0;
    }
    y
}

/// Draws the congestion graph of `a` on a `width` x `height` canvas.
pub fn draw(a: &Analysis, c: &mut dyn Canvas, width: u32, height: u32, opts: &Options) {
    let (w, h) = (width as f64, height as f64);
    let s = if width >= 700 && height >= 350 { 2 } else { 1 };
    let m = Metrics {
        s,
        ch: (font::GLYPH_H * s) as f64,
        pad: 6.0 * s as f64,
    };
    c.fill_rect(
        Rect {
            x: 0.0,
            y: 0.0,
            w,
            h,
        },
        Color(255, 255, 255),
        1.0,
    );
    let below_title = draw_title(a, c, &m, w);
    let strip_y = below_title + m.pad / 2.0;
    let strip_h = m.ch + 6.0;
    let plot_top = strip_y + strip_h + 2.0;

    let styles = series_styles(a);
    let legend = legend_items(a, &styles);
    let rows = legend_rows(&legend, &m, w - 2.0 * m.pad);
    let legend_lines = rows.last().map_or(0, |r| r.1 + 1) as f64;
    let row_h = m.ch + m.pad;
    let bottom_space = m.pad + m.ch + m.pad + m.ch + m.pad + legend_lines * row_h;
    let plot_h = (h - plot_top - bottom_space).max(20.0);
    let f = frame(a, m, plot_h);
    let m = &f.m;

    let label_w =
        |labels: &[(f64, String)]| labels.iter().map(|(_, l)| m.width(l)).fold(0.0, f64::max);
    let left = m.pad + m.ch + m.pad + label_w(&f.left_labels) + f.tick + 4.0;
    let right = if f.has_rtt {
        w - (m.pad + m.ch + m.pad + label_w(&f.right_labels) + f.tick + 4.0)
    } else {
        w - 2.0 * m.pad
    };
    let t0 = a.start.min(0.0);
    let t1 = if a.end > t0 { a.end } else { t0 + 1.0 };
    let area = |x: f64, w: f64| {
        (
            Rect {
                x,
                y: plot_top,
                w: w.max(10.0),
                h: plot_h,
            },
            Rect {
                x,
                y: strip_y,
                w: w.max(10.0),
                h: strip_h,
            },
        )
    };
    let mut panels = Vec::new();
    let detail = opts.detail_until.filter(|&d| d > t0 && d < t1);
    if let Some(until) = detail {
        let gap = 2.0 * m.pad;
        let dw = ((right - left) - gap) * 0.4;
        let (plot, strip) = area(left, dw);
        panels.push(Panel {
            plot,
            strip,
            t0,
            t1: until,
            left_labels: true,
            right_labels: false,
            exit_note: true,
            highlight: None,
        });
        let (plot, strip) = area(left + dw + gap, right - left - dw - gap);
        panels.push(Panel {
            plot,
            strip,
            t0,
            t1,
            left_labels: false,
            right_labels: true,
            exit_note: false,
            highlight: Some((t0, until)),
        });
    } else {
        let (plot, strip) = area(left, right - left);
        panels.push(Panel {
            plot,
            strip,
            t0,
            t1,
            left_labels: true,
            right_labels: true,
            exit_note: true,
            highlight: None,
        });
    }
    for p in &panels {
        draw_panel(a, c, &f, &styles, p);
    }

    let mid_y = plot_top + plot_h / 2.0;
    let axis_title = |text: &'static str, x: f64| Text {
        vertical: true,
        ..m.text(text, x, mid_y, Anchor::Middle)
    };
    c.text(&axis_title("bytes", m.pad));
    if f.has_rtt {
        c.text(&axis_title("RTT (ms)", w - m.pad - m.ch));
    }
    let legend_top = plot_top + plot_h + f.tick + 3.0 + m.ch + m.pad / 2.0 + m.ch + m.pad;
    draw_legend(c, m, &legend, &rows, w, legend_top, row_h);
}

/// One panel: grid, state strip, curves, losses, frame, ticks and the time axis.
fn draw_panel(
    a: &Analysis,
    c: &mut dyn Canvas,
    f: &Frame,
    styles: &[(&Series, SeriesStyle)],
    p: &Panel,
) {
    let m = &f.m;
    let plot = p.plot;
    let x_of = |t: f64| p.x_of(t);
    let seconds = p.t1 - p.t0 > 2000.0;
    let (tunit, tname) = if seconds {
        (1000.0, "time (s)")
    } else {
        (1.0, "time (ms)")
    };
    let xt = Axis::nice(
        p.t0 / tunit,
        p.t1 / tunit,
        (plot.w / (m.ch * 5.5)).clamp(2.0, 12.0) as usize,
    );

    if let Some((h0, h1)) = p.highlight {
        let (x0, x1) = (x_of(h0), x_of(h1));
        let r = Rect {
            x: x0,
            y: plot.y,
            w: x1 - x0,
            h: plot.h,
        };
        c.fill_rect(r, Color(255, 246, 214), 1.0);
    }
    let grid = Stroke::solid(GRID, 1.0);
    for v in f.yl.ticks() {
        let y = f.yl_of(plot, v);
        c.polyline("grid", &[(plot.x, y), (plot.right(), y)], &grid);
    }
    // The time axis ends at the last event, not at a rounded tick, so the data fills it.
    let xticks: Vec<f64> = xt
        .ticks()
        .into_iter()
        .filter(|&v| x_of(v * tunit) <= plot.right() + 0.5)
        .collect();
    for &v in &xticks {
        let x = x_of(v * tunit);
        c.polyline("grid", &[(x, plot.y), (x, plot.bottom())], &grid);
    }

    draw_states(a, c, m, p.strip, plot, &x_of, p.t1);

    c.clip(Some(plot));
    let end = p.t1.min(a.end.max(p.t0));
    for (series, st) in styles {
        if series.is_empty() {
            continue;
        }
        let path = match st.side {
            Side::Left => step_path(series, p.t0, end, x_of, |v| f.yl_of(plot, v)),
            Side::Right => step_path(series, p.t0, end, x_of, |v| f.yr_of(plot, v)),
        };
        c.polyline(st.class, &path, &st.stroke);
    }
    // Lost packets sit in a lane along the bottom of the plot, where they hide no curve; a
    // burst shows as a solid run.
    let cross = 1.5 * m.s as f64 + 1.0;
    let lane = plot.bottom() - cross - 3.0;
    let mut marks: Vec<(f64, f64)> = a
        .losses
        .iter()
        .map(|l| (x_of(l.time), lane))
        .filter(|&(x, _)| x >= plot.x - cross && x <= plot.right() + cross)
        .collect();
    // Markers on the same pixel add nothing.
    marks.dedup_by(|p, q| p.0.round() == q.0.round());
    c.crosses("loss", &marks, cross, &Stroke::solid(LOSS, 1.5));
    if p.exit_note {
        draw_exit_note(a, c, m, plot, x_of);
    }
    if a.cwnd.is_empty() && a.bytes_in_flight.is_empty() && !f.has_rtt {
        c.text(&m.text(
            "no recovery:metrics_updated events",
            plot.x + plot.w / 2.0,
            plot.y + plot.h / 2.0 - m.ch / 2.0,
            Anchor::Middle,
        ));
    }
    c.clip(None);

    let frame = Stroke::solid(FRAME, 1.0);
    c.polyline(
        "frame",
        &[
            (plot.x, plot.y),
            (plot.right(), plot.y),
            (plot.right(), plot.bottom()),
            (plot.x, plot.bottom()),
            (plot.x, plot.y),
        ],
        &frame,
    );
    let tick = f.tick;
    for (v, label) in &f.left_labels {
        let y = f.yl_of(plot, *v);
        c.polyline("tick", &[(plot.x - tick, y), (plot.x, y)], &frame);
        if p.left_labels {
            c.text(&m.text(label, plot.x - tick - 4.0, y - m.ch / 2.0, Anchor::End));
        }
    }
    if f.has_rtt {
        for (v, label) in &f.right_labels {
            let y = f.yr_of(plot, *v);
            c.polyline(
                "tick",
                &[(plot.right(), y), (plot.right() + tick, y)],
                &frame,
            );
            if p.right_labels {
                let x = plot.right() + tick + 4.0;
                c.text(&m.text(label, x, y - m.ch / 2.0, Anchor::Start));
            }
        }
    }
    for &v in &xticks {
        let x = x_of(v * tunit);
        c.polyline(
            "tick",
            &[(x, plot.bottom()), (x, plot.bottom() + tick)],
            &frame,
        );
        let label = plain_label(v, xt.step);
        c.text(&m.text(&label, x, plot.bottom() + tick + 3.0, Anchor::Middle));
    }
    let xlabel_y = plot.bottom() + tick + 3.0 + m.ch + m.pad / 2.0;
    c.text(&m.text(tname, plot.x + plot.w / 2.0, xlabel_y, Anchor::Middle));
}

fn legend_items(a: &Analysis, styles: &[(&Series, SeriesStyle)]) -> Vec<LegendItem> {
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
        .filter_map(|class| styles.iter().find(|(_, st)| st.class == *class))
        .filter(|(s, _)| !s.is_empty())
        .map(|(_, st)| LegendItem {
            label: st.label.to_string(),
            stroke: st.stroke,
            swatch: Swatch::Line,
            new_row: false,
        })
        .collect();
    if !a.losses.is_empty() {
        items.push(LegendItem {
            label: format!("lost packet ({})", a.losses.len()),
            stroke: Stroke::solid(LOSS, 1.5),
            swatch: Swatch::Cross,
            new_row: false,
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
            stroke: Stroke::solid(FRAME, 1.0),
            swatch: Swatch::Fill(color),
            new_row: i == 0,
        });
    }
    items
}

fn draw_legend(
    c: &mut dyn Canvas,
    m: &Metrics,
    items: &[LegendItem],
    rows: &[(f64, usize)],
    w: f64,
    top: f64,
    row_h: f64,
) {
    let swatch = 8.0 * m.s as f64;
    let n_rows = rows.last().map_or(0, |r| r.1 + 1);
    for row in 0..n_rows {
        let members: Vec<usize> = (0..items.len()).filter(|&i| rows[i].1 == row).collect();
        let Some(&last) = members.last() else {
            continue;
        };
        let row_w = rows[last].0 + swatch + 8.0 + m.width(&items[last].label);
        let x0 = (w - row_w) / 2.0;
        let y = top + row as f64 * row_h;
        for &i in &members {
            let item = &items[i];
            let x = x0 + rows[i].0;
            let mid = y + m.ch / 2.0;
            match item.swatch {
                Swatch::Cross => {
                    let r = 1.5 * m.s as f64 + 1.0;
                    c.crosses("legend", &[(x + swatch / 2.0, mid)], r, &item.stroke);
                }
                Swatch::Line => {
                    c.polyline("legend", &[(x, mid), (x + swatch, mid)], &item.stroke);
                }
                Swatch::Fill(color) => {
                    let r = Rect {
                        x,
                        y: y - 1.0,
                        w: swatch,
                        h: m.ch + 2.0,
                    };
                    c.fill_rect(r, color, 1.0);
                }
            }
            c.text(&m.text(&item.label, x + swatch + 8.0, y, Anchor::Start));
        }
    }
}

/// Names the first slow-start exit next to its line, at the top of the plot: on one line if it
/// fits beside the line, else on two.
fn draw_exit_note(
    a: &Analysis,
    c: &mut dyn Canvas,
    m: &Metrics,
    plot: Rect,
    x_of: impl Fn(f64) -> f64,
) {
    let Some(exit) = &a.summary.slow_start_exit else {
        return;
    };
    let x = x_of(exit.time);
    if x < plot.x || x > plot.right() {
        return;
    }
    let what = match exit.cause {
        ExitCause::Delay => "HyStart++ exit",
        ExitCause::Loss => "slow start ends by loss",
    };
    let when = format!("{:.0} ms", exit.time);
    let one = [format!("{what} {when}")];
    let two = [what.to_string(), when];
    let layouts: [&[String]; 2] = [&one, &two];
    let (lo, hi) = (plot.x + 4.0, plot.right() - 4.0);
    let mut choice = None;
    'search: for lines in layouts {
        let width = lines.iter().map(|l| m.width(l)).fold(0.0, f64::max);
        for left in [x + 6.0, x - 6.0 - width] {
            if left >= lo && left + width <= hi {
                choice = Some((lines, left, width));
                break 'search;
            }
        }
    }
    let (lines, left, width) = choice.unwrap_or_else(|| {
        let width = two.iter().map(|l| m.width(l)).fold(0.0, f64::max);
        (&two[..], (x + 6.0).min(hi - width).max(lo), width)
    });
    let y = plot.y + 6.0;
    let line_h = m.ch + 4.0;
    c.fill_rect(
        Rect {
            x: left - 3.0,
            y: y - 3.0,
            w: width + 6.0,
            h: line_h * lines.len() as f64 + 2.0,
        },
        Color(255, 255, 255),
        0.85,
    );
    for (i, line) in lines.iter().enumerate() {
        c.text(&Text {
            color: BLACK,
            ..m.text(line, left, y + i as f64 * line_h, Anchor::Start)
        });
    }
}

/// The state strip above the plot and a dashed line down the plot at each change.
fn draw_states(
    a: &Analysis,
    c: &mut dyn Canvas,
    m: &Metrics,
    strip: Rect,
    plot: Rect,
    x_of: &dyn Fn(f64) -> f64,
    end: f64,
) {
    if a.states.is_empty() {
        return;
    }
    c.clip(Some(strip));
    for (i, sc) in a.states.iter().enumerate() {
        let x0 = x_of(sc.time).max(strip.x);
        let x1 = a
            .states
            .get(i + 1)
            .map_or(x_of(end), |n| x_of(n.time))
            .min(strip.right());
        let (color, short) = state_style(&sc.new);
        let seg = Rect {
            x: x0,
            y: strip.y,
            w: (x1 - x0).max(0.0),
            h: strip.h,
        };
        c.fill_rect(seg, color, 1.0);
        let long = sc.new.replace('_', " ");
        let label = [long.as_str(), short]
            .into_iter()
            .find(|l| m.width(l) + 6.0 <= seg.w);
        if let Some(label) = label {
            c.text(&Text {
                color: BLACK,
                ..m.text(label, x0 + 3.0, strip.y + 3.0, Anchor::Start)
            });
        }
    }
    c.clip(None);
    let outline = Stroke::solid(FRAME, 1.0);
    c.polyline(
        "strip",
        &[
            (strip.x, strip.y),
            (strip.right(), strip.y),
            (strip.right(), strip.bottom()),
            (strip.x, strip.bottom()),
            (strip.x, strip.y),
        ],
        &outline,
    );
    if a.states.len() > MAX_STATE_LINES {
        return;
    }
    for sc in &a.states {
        let x = x_of(sc.time);
        if x <= plot.x + 0.5 || x > plot.right() {
            continue;
        }
        let (color, _) = state_style(&sc.new);
        c.polyline(
            "state_change",
            &[(x, strip.y), (x, plot.bottom())],
            &Stroke::dashed(darker(color, 0.7), 1.0, 4.0, 3.0),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axes() {
        let a = Axis::nice(0.0, 476_591.0, 6);
        assert_eq!(a.step, 100_000.0);
        assert_eq!(a.max, 500_000.0);
        assert_eq!(a.ticks().len(), 6);
        assert_eq!(byte_label(300_000.0, &a), "300k");
        let b = Axis::nice(0.0, 3.7, 8);
        assert_eq!(b.step, 0.5);
        assert_eq!(b.max, 4.0);
        assert_eq!(plain_label(1.5, b.step), "1.5");
        assert_eq!(plain_label(2.0, 1.0), "2");
        let c = Axis::nice(0.0, 2.4e6, 5);
        assert_eq!(byte_label(1.5e6, &c), "1.5M");
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
    fn fit_shortens() {
        assert_eq!(fit("abcdef", 1, 100.0), "abcdef");
        // 17 px holds 3 characters at scale 1 (5 + 6 + 6).
        assert_eq!(fit("abcdef", 1, 17.0), "...");
        assert_eq!(fit("abcdefghij", 1, 35.0), "abc...");
    }
}
