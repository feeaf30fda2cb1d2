//! An SVG document that implements [`Canvas`], written as text.

use std::fmt::Write;

use crate::canvas::{Anchor, Canvas, Color, Rect, Stroke, Text};
use crate::font;

/// An SVG document being written.
pub struct Svg {
    body: String,
    clips: usize,
    clipped: bool,
}

/// Escapes the characters XML gives meaning to.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most one decimal (a tenth of a pixel) and no trailing zeros.
fn num(v: f64) -> String {
    let s = format!("{:.1}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

fn stroke_attrs(s: &Stroke) -> String {
    let mut a = format!(
        r#"fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round""#,
        s.color.hex(),
        num(s.width)
    );
    if let Some((on, off)) = s.dash {
        let _ = write!(a, r#" stroke-dasharray="{} {}""#, num(on), num(off));
    }
    if s.opacity < 1.0 {
        let _ = write!(a, r#" stroke-opacity="{}""#, num(s.opacity));
    }
    a
}

impl Svg {
    /// An empty document of the given size with `title` as its accessible name.
    pub fn new(width: u32, height: u32, title: &str) -> Svg {
        let mut body = String::new();
        let _ = writeln!(
            body,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
        );
        let _ = writeln!(body, "<title>{}</title>", escape(title));
        Svg {
            body,
            clips: 0,
            clipped: false,
        }
    }

    /// Closes the document and returns its text.
    pub fn finish(mut self) -> String {
        self.clip(None);
        self.body.push_str("</svg>\n");
        self.body
    }
}

impl Canvas for Svg {
    fn fill_rect(&mut self, r: Rect, color: Color, opacity: f64) {
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}""#,
            num(r.x),
            num(r.y),
            num(r.w.max(0.0)),
            num(r.h.max(0.0)),
            color.hex()
        );
        if opacity < 1.0 {
            let _ = write!(self.body, r#" fill-opacity="{}""#, num(opacity));
        }
        self.body.push_str("/>\n");
    }

    fn polyline(&mut self, class: &str, points: &[(f64, f64)], stroke: &Stroke) {
        if points.is_empty() {
            return;
        }
        let _ = write!(self.body, r#"<polyline class="{}" points=""#, escape(class));
        for (i, &(x, y)) in points.iter().enumerate() {
            if i > 0 {
                self.body.push(' ');
            }
            let _ = write!(self.body, "{},{}", num(x), num(y));
        }
        let _ = writeln!(self.body, r#"" {}/>"#, stroke_attrs(stroke));
    }

    fn crosses(&mut self, class: &str, points: &[(f64, f64)], size: f64, stroke: &Stroke) {
        if points.is_empty() {
            return;
        }
        let _ = write!(self.body, r#"<path class="{}" d=""#, escape(class));
        for &(x, y) in points {
            let _ = write!(
                self.body,
                "M{} {}L{} {}M{} {}L{} {}",
                num(x - size),
                num(y - size),
                num(x + size),
                num(y + size),
                num(x - size),
                num(y + size),
                num(x + size),
                num(y - size)
            );
        }
        let _ = writeln!(
            self.body,
            r#"" stroke-linecap="round" {}/>"#,
            stroke_attrs(stroke)
        );
    }

    fn text(&mut self, t: &Text) {
        // A monospace font at 10 px per scale unit advances about 6 px per character, the
        // bitmap font's advance, so the layout measured with the bitmap fits the SVG too.
        let size = 10 * t.scale.max(1);
        let cap = (font::GLYPH_H * t.scale.max(1)) as f64;
        let anchor = match t.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let place = if t.vertical {
            format!(
                r#"transform="translate({},{}) rotate(-90)""#,
                num(t.x + cap),
                num(t.y)
            )
        } else {
            format!(r#"x="{}" y="{}""#, num(t.x), num(t.y + cap))
        };
        let _ = writeln!(
            self.body,
            r#"<text {place} font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{size}" text-anchor="{anchor}" fill="{}">{}</text>"#,
            t.color.hex(),
            escape(t.text)
        );
    }

    fn clip(&mut self, rect: Option<Rect>) {
        if self.clipped {
            self.body.push_str("</g>\n");
            self.clipped = false;
        }
        if let Some(r) = rect {
            self.clips += 1;
            let id = self.clips;
            let _ = writeln!(
                self.body,
                r#"<defs><clipPath id="clip{id}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
                num(r.x),
                num(r.y),
                num(r.w),
                num(r.h)
            );
            let _ = writeln!(self.body, r#"<g clip-path="url(#clip{id})">"#);
            self.clipped = true;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Checks that every tag is closed in order and attribute quotes balance; returns the
    /// element names in document order.
    pub(crate) fn check_xml(doc: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut names = Vec::new();
        let mut rest = doc;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            assert!(!text.contains('>'), "stray '>' in text: {text:?}");
            let close = rest[open..].find('>').expect("unterminated tag") + open;
            let tag = &rest[open + 1..close];
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
            if let Some(name) = tag.strip_prefix('/') {
                let top = stack.pop().expect("closing tag without an opening one");
                assert_eq!(top, name.trim(), "tags closed out of order");
            } else {
                let name: String = tag
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '/')
                    .collect();
                assert!(!name.is_empty(), "empty tag name");
                names.push(name.clone());
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[close + 1..];
        }
        assert!(stack.is_empty(), "unclosed tags: {stack:?}");
        assert!(!rest.contains('>'));
        names
    }

    #[test]
    fn document_is_balanced_and_escaped() {
        let mut svg = Svg::new(100, 50, "a <b> & \"c\"");
        svg.clip(Some(Rect {
            x: 1.0,
            y: 2.0,
            w: 50.0,
            h: 40.0,
        }));
        svg.polyline(
            "cwnd",
            &[(0.0, 1.0), (2.5, 3.333)],
            &Stroke::dashed(Color(1, 2, 3), 2.0, 4.0, 2.0),
        );
        svg.crosses(
            "loss",
            &[(5.0, 5.0)],
            3.0,
            &Stroke::solid(Color(255, 0, 0), 1.0),
        );
        svg.clip(None);
        svg.text(&Text {
            text: "x<y",
            x: 3.0,
            y: 4.0,
            scale: 2,
            anchor: Anchor::Middle,
            color: Color(0, 0, 0),
            vertical: true,
        });
        let doc = svg.finish();
        let names = check_xml(&doc);
        assert_eq!(names[0], "svg");
        assert!(names.contains(&"polyline".to_string()));
        assert!(doc.contains(r#"points="0,1 2.5,3.3""#), "{doc}");
        assert!(doc.contains("stroke-dasharray=\"4 2\""));
        assert!(doc.contains("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"));
        assert!(doc.contains(">x&lt;y</text>"));
        assert!(doc.contains("rotate(-90)"));
        assert!(doc.contains("#010203"));
    }
}
