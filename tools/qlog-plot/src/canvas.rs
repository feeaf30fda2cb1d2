//! The drawing operations the plot needs, implemented by the raster image and the SVG writer so
//! both pictures come from the same layout code.

use crate::font;

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Color(pub u8, pub u8, pub u8);

impl Color {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    /// This colour mixed with white: `amount` 0 is unchanged, 1 is white.
    pub fn tint(self, amount: f64) -> Color {
        let mix = |c: u8| (c as f64 + (255.0 - c as f64) * amount).round() as u8;
        Color(mix(self.0), mix(self.1), mix(self.2))
    }
}

/// Where a text's anchor point is along its run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The anchor is where the text starts.
    Start,
    /// The anchor is the text's middle.
    Middle,
    /// The anchor is where the text ends.
    End,
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stroke {
    /// Colour.
    pub color: Color,
    /// Width in pixels.
    pub width: f64,
    /// Dash pattern (on, off) in pixels; `None` is solid.
    pub dash: Option<(f64, f64)>,
    /// Opacity, 0 to 1.
    pub opacity: f64,
}

impl Stroke {
    /// A solid, opaque line.
    pub fn solid(color: Color, width: f64) -> Stroke {
        Stroke {
            color,
            width,
            dash: None,
            opacity: 1.0,
        }
    }

    /// A dashed, opaque line.
    pub fn dashed(color: Color, width: f64, on: f64, off: f64) -> Stroke {
        Stroke {
            dash: Some((on, off)),
            ..Stroke::solid(color, width)
        }
    }
}

/// A text to draw. Text is measured with the bitmap font's metrics: `scale` font pixels per
/// image pixel, `font::ADVANCE * scale` pixels per character, `font::GLYPH_H * scale` high.
#[derive(Clone, Copy, Debug)]
pub struct Text<'a> {
    /// The text (printable ASCII; anything else draws as `?` in the raster).
    pub text: &'a str,
    /// Horizontal text: x of the anchor. Vertical text: the left edge of the glyphs.
    pub x: f64,
    /// Horizontal text: the top of the glyphs. Vertical text: y of the anchor.
    pub y: f64,
    /// Integer scale of the 5x7 font.
    pub scale: u32,
    /// Which point of the run is at the anchor.
    pub anchor: Anchor,
    /// Colour.
    pub color: Color,
    /// Rotated a quarter turn counter-clockwise (reads bottom to top).
    pub vertical: bool,
}

impl Text<'_> {
    /// Length of the run in pixels.
    pub fn length(&self) -> f64 {
        (font::text_width(self.text) * self.scale) as f64
    }

    /// Where the run starts along its direction: x for horizontal text, and for vertical
    /// text the bottom end (runs go upwards).
    pub fn run_start(&self) -> f64 {
        let len = self.length();
        if self.vertical {
            match self.anchor {
                Anchor::Start => self.y,
                Anchor::Middle => self.y + len / 2.0,
                Anchor::End => self.y + len,
            }
        } else {
            match self.anchor {
                Anchor::Start => self.x,
                Anchor::Middle => self.x - len / 2.0,
                Anchor::End => self.x - len,
            }
        }
    }
}

/// A rectangle: x, y, width, height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    /// Right edge.
    pub fn right(&self) -> f64 {
        self.x + self.w
    }

    /// Bottom edge.
    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }
}

/// Something the plot can be drawn on.
pub trait Canvas {
    /// Fills a rectangle.
    fn fill_rect(&mut self, rect: Rect, color: Color, opacity: f64);
    /// Draws a connected line through `points`. `class` names what it is (for the SVG).
    fn polyline(&mut self, class: &str, points: &[(f64, f64)], stroke: &Stroke);
    /// Draws an "x" of half-size `size` at each point.
    fn crosses(&mut self, class: &str, points: &[(f64, f64)], size: f64, stroke: &Stroke);
    /// Draws text.
    fn text(&mut self, text: &Text);
    /// Restricts the following drawing to `rect`, or lifts the restriction with `None`.
    fn clip(&mut self, rect: Option<Rect>);
}
