//! An RGB raster that implements [`Canvas`]: antialiased strokes by distance to each segment,
//! area-covered rectangles, and the 5x7 bitmap font.

use crate::canvas::{Canvas, Color, Rect, Stroke, Text};
use crate::font;

/// An 8-bit RGB image.
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Rows top to bottom, 3 bytes per pixel.
    pub pixels: Vec<u8>,
    /// Drawing is limited to this pixel box: x0, y0, x1, y1 (exclusive).
    clip: (i64, i64, i64, i64),
}

impl Image {
    /// A white image.
    pub fn new(width: u32, height: u32) -> Image {
        Image {
            width,
            height,
            pixels: vec![255; width as usize * height as usize * 3],
            clip: (0, 0, width as i64, height as i64),
        }
    }

    /// The colour of a pixel, if it is inside the image.
    pub fn get(&self, x: u32, y: u32) -> Option<Color> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        Some(Color(
            self.pixels[i],
            self.pixels[i + 1],
            self.pixels[i + 2],
        ))
    }

    /// Mixes `color` into a pixel with weight `alpha`; outside the clip box it does nothing.
    pub fn blend(&mut self, x: i64, y: i64, color: Color, alpha: f64) {
        let (x0, y0, x1, y1) = self.clip;
        if x < x0 || y < y0 || x >= x1 || y >= y1 || alpha <= 0.0 {
            return;
        }
        let a = alpha.min(1.0);
        let i = (y as usize * self.width as usize + x as usize) * 3;
        for (k, c) in [color.0, color.1, color.2].into_iter().enumerate() {
            let old = self.pixels[i + k] as f64;
            self.pixels[i + k] = (old + (c as f64 - old) * a).round() as u8;
        }
    }

    /// The clip box intersected with a box around `points` grown by `margin`.
    fn bounds(&self, points: &[(f64, f64)], margin: f64) -> Option<(i64, i64, i64, i64)> {
        let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
        for &(x, y) in points {
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        let (cx0, cy0, cx1, cy1) = self.clip;
        let bx0 = ((x0 - margin).floor() as i64).max(cx0);
        let by0 = ((y0 - margin).floor() as i64).max(cy0);
        let bx1 = ((x1 + margin).ceil() as i64 + 1).min(cx1);
        let by1 = ((y1 + margin).ceil() as i64 + 1).min(cy1);
        (bx0 < bx1 && by0 < by1).then_some((bx0, by0, bx1, by1))
    }

    /// Strokes every path in `paths` into one coverage mask and composites it once, so joints
    /// and overlaps of the same stroke are not darkened twice.
    fn stroke_paths(&mut self, paths: &[Vec<(f64, f64)>], stroke: &Stroke) {
        let half = (stroke.width / 2.0).max(0.5);
        let all: Vec<(f64, f64)> = paths.iter().flatten().copied().collect();
        let Some((bx0, by0, bx1, by1)) = self.bounds(&all, half + 1.0) else {
            return;
        };
        let bw = (bx1 - bx0) as usize;
        let mut mask = vec![0f32; bw * (by1 - by0) as usize];
        for path in paths {
            let segments: Vec<((f64, f64), (f64, f64))> = if path.len() == 1 {
                vec![(path[0], path[0])]
            } else {
                path.windows(2).map(|w| (w[0], w[1])).collect()
            };
            for (a, b) in segments {
                let sx0 = ((a.0.min(b.0) - half - 1.0).floor() as i64).max(bx0);
                let sx1 = ((a.0.max(b.0) + half + 1.0).ceil() as i64).min(bx1);
                let sy0 = ((a.1.min(b.1) - half - 1.0).floor() as i64).max(by0);
                let sy1 = ((a.1.max(b.1) + half + 1.0).ceil() as i64).min(by1);
                for py in sy0..sy1 {
                    for px in sx0..sx1 {
                        let d = distance_to_segment((px as f64 + 0.5, py as f64 + 0.5), a, b);
                        let cov = (half + 0.5 - d).clamp(0.0, 1.0) as f32;
                        let m = &mut mask[(py - by0) as usize * bw + (px - bx0) as usize];
                        *m = m.max(cov);
                    }
                }
            }
        }
        for py in by0..by1 {
            for px in bx0..bx1 {
                let cov = mask[(py - by0) as usize * bw + (px - bx0) as usize];
                if cov > 0.0 {
                    self.blend(px, py, stroke.color, cov as f64 * stroke.opacity);
                }
            }
        }
    }

    fn snap(v: f64, width: f64) -> f64 {
        // Lines of odd pixel width are crisp on pixel centres, even widths on pixel edges.
        if (width.round() as i64) % 2 == 1 {
            v.floor() + 0.5
        } else {
            v.round()
        }
    }
}

fn distance_to_segment(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (qx, qy) = (a.0 + t * dx, a.1 + t * dy);
    ((p.0 - qx).powi(2) + (p.1 - qy).powi(2)).sqrt()
}

/// Cuts a path into dashes of `on` pixels separated by gaps of `off`, measured along it.
pub fn dash(points: &[(f64, f64)], on: f64, off: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    if points.len() < 2 || on <= 0.0 || off < 0.0 {
        return vec![points.to_vec()];
    }
    let mut drawing = true;
    let mut left = on;
    let mut current = vec![points[0]];
    for w in points.windows(2) {
        let (mut a, b) = (w[0], w[1]);
        let mut seg = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        while seg > left {
            let t = left / seg;
            let cut = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
            if drawing {
                current.push(cut);
                out.push(std::mem::take(&mut current));
            } else {
                current = vec![cut];
            }
            seg -= left;
            a = cut;
            drawing = !drawing;
            left = if drawing { on } else { off };
        }
        left -= seg;
        if drawing {
            current.push(b);
        }
    }
    if drawing && current.len() > 1 {
        out.push(current);
    }
    out
}

impl Canvas for Image {
    fn fill_rect(&mut self, r: Rect, color: Color, opacity: f64) {
        // Each pixel is covered by the area of its overlap with the rectangle.
        let (x0, y0) = (r.x.floor() as i64, r.y.floor() as i64);
        let (x1, y1) = (r.right().ceil() as i64, r.bottom().ceil() as i64);
        for py in y0.max(0)..y1.min(self.height as i64) {
            let cy = (r.bottom().min(py as f64 + 1.0) - r.y.max(py as f64)).max(0.0);
            for px in x0.max(0)..x1.min(self.width as i64) {
                let cx = (r.right().min(px as f64 + 1.0) - r.x.max(px as f64)).max(0.0);
                self.blend(px, py, color, cx * cy * opacity);
            }
        }
    }

    fn polyline(&mut self, _class: &str, points: &[(f64, f64)], stroke: &Stroke) {
        if points.is_empty() {
            return;
        }
        let snapped: Vec<(f64, f64)> = points
            .iter()
            .map(|&(x, y)| (Self::snap(x, stroke.width), Self::snap(y, stroke.width)))
            .collect();
        let paths = match stroke.dash {
            Some((on, off)) => dash(&snapped, on, off),
            None => vec![snapped],
        };
        self.stroke_paths(&paths, stroke);
    }

    fn crosses(&mut self, _class: &str, points: &[(f64, f64)], size: f64, stroke: &Stroke) {
        let mut paths = Vec::with_capacity(points.len() * 2);
        for &(x, y) in points {
            paths.push(vec![(x - size, y - size), (x + size, y + size)]);
            paths.push(vec![(x - size, y + size), (x + size, y - size)]);
        }
        if !paths.is_empty() {
            self.stroke_paths(&paths, stroke);
        }
    }

    fn text(&mut self, t: &Text) {
        let s = t.scale.max(1) as i64;
        let start = t.run_start().round() as i64;
        let across = if t.vertical { t.x } else { t.y }.round() as i64;
        for (i, c) in t.text.chars().enumerate() {
            let base =
                start + (i as i64) * (font::ADVANCE as i64) * s * if t.vertical { -1 } else { 1 };
            for gy in 0..font::GLYPH_H + font::DESCENT {
                for gx in 0..font::GLYPH_W {
                    if !font::pixel(c, gx, gy) {
                        continue;
                    }
                    for dy in 0..s {
                        for dx in 0..s {
                            // Along the run u, across it v (downwards from the glyph top).
                            let u = gx as i64 * s + dx;
                            let v = gy as i64 * s + dy;
                            let (px, py) = if t.vertical {
                                (across + v, base - 1 - u)
                            } else {
                                (base + u, across + v)
                            };
                            self.blend(px, py, t.color, 1.0);
                        }
                    }
                }
            }
        }
    }

    fn clip(&mut self, rect: Option<Rect>) {
        let (w, h) = (self.width as i64, self.height as i64);
        self.clip = match rect {
            Some(r) => (
                (r.x.floor() as i64).clamp(0, w),
                (r.y.floor() as i64).clamp(0, h),
                (r.right().ceil() as i64).clamp(0, w),
                (r.bottom().ceil() as i64).clamp(0, h),
            ),
            None => (0, 0, w, h),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canvas::Anchor;

    const RED: Color = Color(255, 0, 0);
    const WHITE: Color = Color(255, 255, 255);

    #[test]
    fn lines_rects_and_clipping() {
        let mut img = Image::new(40, 30);
        img.polyline("h", &[(2.0, 10.0), (30.0, 10.0)], &Stroke::solid(RED, 1.0));
        // A 1-pixel horizontal line lands on exactly one row.
        assert_eq!(img.get(15, 10), Some(RED));
        assert_eq!(img.get(15, 9), Some(WHITE));
        assert_eq!(img.get(15, 11), Some(WHITE));
        img.fill_rect(
            Rect {
                x: 5.0,
                y: 20.0,
                w: 2.0,
                h: 2.0,
            },
            RED,
            1.0,
        );
        assert_eq!(img.get(5, 20), Some(RED));
        assert_eq!(img.get(7, 20), Some(WHITE));
        img.clip(Some(Rect {
            x: 0.0,
            y: 0.0,
            w: 20.0,
            h: 30.0,
        }));
        img.polyline("v", &[(25.0, 0.0), (25.0, 29.0)], &Stroke::solid(RED, 2.0));
        assert_eq!(img.get(25, 5), Some(WHITE), "clipped away");
        img.clip(None);
        // A diagonal is antialiased: some pixels only partly covered.
        img.polyline("d", &[(0.0, 0.0), (39.0, 29.0)], &Stroke::solid(RED, 1.0));
        let partial = img
            .pixels
            .chunks(3)
            .any(|p| p[0] == 255 && p[1] > 0 && p[1] < 255);
        assert!(partial);
    }

    #[test]
    fn dashes_cover_the_pattern() {
        let d = dash(&[(0.0, 0.0), (10.0, 0.0), (10.0, 10.0)], 3.0, 2.0);
        // 20 px of path: dashes at 0-3, 5-8, 10-13 (around the corner), 15-18.
        assert_eq!(d.len(), 4);
        assert_eq!(d[0], vec![(0.0, 0.0), (3.0, 0.0)]);
        assert_eq!(d[2], vec![(10.0, 0.0), (10.0, 3.0)]);
        assert_eq!(d[3], vec![(10.0, 5.0), (10.0, 8.0)]);
        let corner = dash(&[(0.0, 0.0), (9.0, 0.0), (9.0, 9.0)], 3.0, 2.0);
        assert_eq!(corner[1], vec![(5.0, 0.0), (8.0, 0.0)]);
        assert_eq!(corner[2], vec![(9.0, 1.0), (9.0, 4.0)]);
    }

    #[test]
    fn text_draws_glyph_pixels() {
        let mut img = Image::new(40, 40);
        img.text(&Text {
            text: "1",
            x: 0.0,
            y: 0.0,
            scale: 2,
            anchor: Anchor::Start,
            color: RED,
            vertical: false,
        });
        // '1' has its top pixel in column 2 and a full bottom row from column 1 to 3.
        assert_eq!(img.get(4, 0), Some(RED));
        assert_eq!(img.get(0, 0), Some(WHITE));
        assert_eq!(img.get(2, 13), Some(RED));
        let mut v = Image::new(40, 40);
        v.text(&Text {
            text: "L",
            x: 0.0,
            y: 39.0,
            scale: 1,
            anchor: Anchor::Start,
            color: RED,
            vertical: true,
        });
        // 'L' is a vertical bar on the left and a bar at the bottom; rotated, the bar is at
        // the bottom of the run and the foot on the right.
        assert_eq!(v.get(0, 38), Some(RED));
        assert_eq!(v.get(6, 38), Some(RED));
        assert_eq!(v.get(6, 34), Some(RED));
        assert_eq!(v.get(0, 34), Some(WHITE));
    }
}
