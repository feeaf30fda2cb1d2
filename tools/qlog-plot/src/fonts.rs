//! The font the pictures' text is measured and drawn with. plotters' `ab_glyph` backend takes a
//! font file's bytes; we read one at run time from where Linux distributions install DejaVu
//! Sans (Debian: the `fonts-dejavu-core` package), so the build needs no system font lookup
//! (fontconfig, freetype) and the binary carries no font.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ab_glyph::{Font, FontRef, ScaleFont};
use plotters::style::FontStyle;

/// The family name the plot asks plotters for.
pub const FAMILY: &str = "sans-serif";

/// Environment variable naming a TrueType/OpenType font file to use instead of the defaults.
pub const FONT_ENV: &str = "QLOG_PLOT_FONT";

/// Where the regular sans-serif face is looked for, in order, when neither `--font` nor
/// [`FONT_ENV`] names one: Debian/Ubuntu, Fedora, Arch, then Liberation Sans on Debian.
pub const DEFAULT_FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// The font in use, once one is registered (the path it came from, or why none could be).
static REGISTERED: Mutex<Option<PathBuf>> = Mutex::new(None);
/// The face registered last, for [`layout`].
static FACE: Mutex<Option<FontRef<'static>>> = Mutex::new(None);
/// The outcome of the default search, done at most once.
static DEFAULT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

fn register(path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("font {}: {e}", path.display()))?;
    // plotters keeps `&'static` font data; a process registers one or two fonts, so the leak
    // is bounded.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    let bad = || format!("font {}: not a TrueType/OpenType font", path.display());
    let face = FontRef::try_from_slice(bytes).map_err(|_| bad())?;
    plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).map_err(|_| bad())?;
    if let Ok(mut f) = FACE.lock() {
        *f = Some(face);
    }
    if let Ok(mut r) = REGISTERED.lock() {
        *r = Some(path.to_path_buf());
    }
    Ok(())
}

/// Draws all later text with the font file at `path`.
pub fn use_font_file(path: &Path) -> Result<(), String> {
    register(path)
}

/// Makes sure a font is registered: the one given to [`use_font_file`], else the file named
/// by [`FONT_ENV`], else the first of [`DEFAULT_FONTS`] that exists. Returns its path.
pub fn ensure() -> Result<PathBuf, String> {
    if let Some(p) = REGISTERED.lock().ok().and_then(|r| r.clone()) {
        return Ok(p);
    }
    DEFAULT
        .get_or_init(|| {
            if let Some(p) = std::env::var_os(FONT_ENV) {
                let p = PathBuf::from(p);
                return register(&p).map(|()| p);
            }
            let found = DEFAULT_FONTS
                .iter()
                .map(Path::new)
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "no font found (looked for {}); install DejaVu Sans (Debian: apt-get \
                         install fonts-dejavu-core) or name a .ttf file with --font or {FONT_ENV}",
                        DEFAULT_FONTS.join(", ")
                    )
                })?;
            register(found).map(|()| found.to_path_buf())
        })
        .clone()
}

/// Where each glyph of `text` goes at `size` pixels, for drawing glyph by glyph: the x of
/// each glyph's left ink edge from the start of the run, and the run's advance width.
///
/// plotters 0.3.7 draws an `ab_glyph` text run without each glyph's left side bearing, so
/// glyphs in a run sit unevenly ("50 5"); drawn one at a time at these offsets they sit where
/// the font puts them. `None` before a font is registered.
pub fn layout(text: &str, size: f64) -> Option<(Vec<(char, f64)>, f64)> {
    let face = FACE.lock().ok()?.clone()?;
    let font = face.as_scaled(size as f32);
    let mut pen = 0f32;
    let mut prev = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(p) = prev {
            pen += font.kern(p, id);
        }
        let mut glyph = font.scaled_glyph(c);
        glyph.position = ab_glyph::point(pen, 0.0);
        if let Some(outline) = font.outline_glyph(glyph) {
            glyphs.push((c, outline.px_bounds().min.x as f64));
        }
        pen += font.h_advance(id);
        prev = Some(id);
    }
    Some((glyphs, pen as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_font_is_refused() {
        let path = std::env::temp_dir().join(format!("qlog-plot-notafont-{}", std::process::id()));
        std::fs::write(&path, b"not a font").unwrap();
        let err = use_font_file(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("not a TrueType"), "{err}");
        assert!(use_font_file(Path::new("/nonexistent/font.ttf")).is_err());
    }

    #[test]
    fn glyphs_advance_along_the_run() {
        ensure().unwrap();
        let (glyphs, width) = layout("505 ms", 16.0).unwrap();
        // The space has no ink; the other five glyphs do, left to right.
        assert_eq!(glyphs.iter().map(|g| g.0).collect::<String>(), "505ms");
        assert!(glyphs.windows(2).all(|w| w[0].1 < w[1].1));
        // Digits have one advance: the two fives sit two advances apart.
        let digit = layout("0", 16.0).unwrap().1;
        assert!((glyphs[2].1 - glyphs[0].1 - 2.0 * digit).abs() < 1.0);
        assert!(width > glyphs[4].1);
    }
}
