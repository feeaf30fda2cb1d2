//! QIF ("QPACK interop format"): header lists as text.
//!
//! One field line per text line, `name<TAB>value`; an empty line ends a header list; a line
//! whose first byte is `#` is a comment. Names and values are taken as bytes: the format does
//! not care about their encoding. A value may contain tabs (the name ends at the first one)
//! but no line break, and a name may contain neither.

use std::fmt;

/// One field line: name and value.
pub type Field = (Vec<u8>, Vec<u8>);

/// One header list (a field section before encoding / after decoding).
pub type HeaderList = Vec<Field>;

/// Why a QIF text could not be read, or header lists could not be written as QIF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QifError {
    /// A non-empty, non-comment line without a tab (1-based line number).
    MissingTab {
        /// The 1-based line number.
        line: usize,
    },
    /// A field line whose name is empty (1-based line number).
    EmptyName {
        /// The 1-based line number.
        line: usize,
    },
    /// A field that QIF cannot represent: list index and field index, both 0-based.
    Unrepresentable {
        /// Index of the header list.
        list: usize,
        /// Index of the field within the list.
        field: usize,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl fmt::Display for QifError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QifError::MissingTab { line } => {
                write!(f, "line {line}: expected `name<TAB>value`, found no tab")
            }
            QifError::EmptyName { line } => write!(f, "line {line}: empty field name"),
            QifError::Unrepresentable { list, field, why } => {
                write!(f, "header list {list}, field {field}: {why}")
            }
        }
    }
}

impl std::error::Error for QifError {}

/// Parses a QIF text into its header lists, in order.
///
/// Several empty lines in a row separate lists just like one does, and comment lines are
/// ignored wherever they are (a comment does not end a list). A trailing `\r` is dropped from
/// every line, so files written with CRLF line ends read the same.
pub fn parse(text: &[u8]) -> Result<Vec<HeaderList>, QifError> {
    let mut lists = Vec::new();
    let mut current: HeaderList = Vec::new();
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.first() == Some(&b'#') {
            continue;
        }
        if line.is_empty() {
            if !current.is_empty() {
                lists.push(std::mem::take(&mut current));
            }
            continue;
        }
        let tab = line
            .iter()
            .position(|&b| b == b'\t')
            .ok_or(QifError::MissingTab { line: i + 1 })?;
        if tab == 0 {
            return Err(QifError::EmptyName { line: i + 1 });
        }
        current.push((line[..tab].to_vec(), line[tab + 1..].to_vec()));
    }
    if !current.is_empty() {
        lists.push(current);
    }
    Ok(lists)
}

/// Writes header lists as QIF: `name<TAB>value` lines, one empty line between lists.
///
/// Fails for what QIF cannot carry: an empty name, a name with a tab, a line break in a name
/// or value, a name starting with `#`, and an empty header list.
pub fn write(lists: &[HeaderList]) -> Result<Vec<u8>, QifError> {
    let mut out = Vec::new();
    for (l, list) in lists.iter().enumerate() {
        if list.is_empty() {
            return Err(QifError::Unrepresentable {
                list: l,
                field: 0,
                why: "an empty header list has no QIF form",
            });
        }
        if l > 0 {
            out.push(b'\n');
        }
        for (f, (name, value)) in list.iter().enumerate() {
            let bad = |why| QifError::Unrepresentable {
                list: l,
                field: f,
                why,
            };
            if name.is_empty() {
                return Err(bad("empty name"));
            }
            if name[0] == b'#' {
                return Err(bad("a name starting with `#` would read as a comment"));
            }
            if name.contains(&b'\t') {
                return Err(bad("tab in a name"));
            }
            if name.iter().chain(value).any(|&b| b == b'\n' || b == b'\r') {
                return Err(bad("line break in a name or value"));
            }
            out.extend_from_slice(name);
            out.push(b'\t');
            out.extend_from_slice(value);
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// Describes the first difference between two sequences of header lists, or `None` when they
/// are equal (same lists, same fields, same order).
pub fn first_difference(expected: &[HeaderList], got: &[HeaderList]) -> Option<String> {
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        if e == g {
            continue;
        }
        for (j, (ef, gf)) in e.iter().zip(g).enumerate() {
            if ef != gf {
                return Some(format!(
                    "list {} field {}: expected {}, got {}",
                    i + 1,
                    j,
                    show(ef),
                    show(gf)
                ));
            }
        }
        return Some(format!(
            "list {}: expected {} fields, got {}",
            i + 1,
            e.len(),
            g.len()
        ));
    }
    if expected.len() != got.len() {
        return Some(format!(
            "expected {} header lists, got {}",
            expected.len(),
            got.len()
        ));
    }
    None
}

fn show((name, value): &Field) -> String {
    format!(
        "`{}: {}`",
        String::from_utf8_lossy(name).escape_debug(),
        String::from_utf8_lossy(value).escape_debug()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(n: &str, v: &str) -> Field {
        (n.as_bytes().to_vec(), v.as_bytes().to_vec())
    }

    #[test]
    fn parses_lists_comments_and_blank_runs() {
        let text = b"# corpus\n:method\tGET\n:path\t/\n\n\n# second\nx\ta\tb\nempty\t\n";
        let lists = parse(text).unwrap();
        assert_eq!(
            lists,
            vec![
                vec![f(":method", "GET"), f(":path", "/")],
                vec![f("x", "a\tb"), f("empty", "")],
            ]
        );
    }

    #[test]
    fn comment_inside_a_list_does_not_split_it() {
        let lists = parse(b"a\t1\n# note\nb\t2\n").unwrap();
        assert_eq!(lists, vec![vec![f("a", "1"), f("b", "2")]]);
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        let lists = parse(b"a\t1\r\nb\t2\r\n\r\nc\t3").unwrap();
        assert_eq!(
            lists,
            vec![vec![f("a", "1"), f("b", "2")], vec![f("c", "3")]]
        );
    }

    #[test]
    fn empty_and_comment_only_inputs_have_no_lists() {
        assert_eq!(parse(b"").unwrap(), Vec::<HeaderList>::new());
        assert_eq!(parse(b"# only\n\n\n").unwrap(), Vec::<HeaderList>::new());
    }

    #[test]
    fn rejects_lines_without_tab_or_name() {
        assert_eq!(
            parse(b"a\t1\nbroken\n"),
            Err(QifError::MissingTab { line: 2 })
        );
        assert_eq!(parse(b"\tvalue\n"), Err(QifError::EmptyName { line: 1 }));
    }

    #[test]
    fn write_then_parse_round_trips() {
        let lists = vec![
            vec![f(":status", "200"), f("x-empty", ""), f("x-tab", "a\tb")],
            vec![f("cookie", "a=b"), f("cookie", "c=d")],
            vec![f("\u{e9}t\u{e9}", "\u{2603}")],
        ];
        let text = write(&lists).unwrap();
        assert_eq!(
            &text[..],
            "\
:status\t200\nx-empty\t\nx-tab\ta\tb\n\ncookie\ta=b\ncookie\tc=d\n\n\u{e9}t\u{e9}\t\u{2603}\n"
                .as_bytes()
        );
        assert_eq!(parse(&text).unwrap(), lists);
    }

    #[test]
    fn write_rejects_what_qif_cannot_carry() {
        for bad in [
            vec![f("", "v")],
            vec![f("a\tb", "v")],
            vec![f("a", "line\nbreak")],
            vec![f("a", "cr\r")],
            vec![f("#x", "v")],
            vec![],
        ] {
            assert!(write(std::slice::from_ref(&bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn first_difference_reports_position() {
        let a = vec![vec![f("a", "1"), f("b", "2")]];
        assert_eq!(first_difference(&a, &a), None);
        let b = vec![vec![f("a", "1"), f("b", "3")]];
        assert!(first_difference(&a, &b).unwrap().contains("list 1 field 1"));
        let c = vec![vec![f("a", "1")]];
        assert!(first_difference(&a, &c)
            .unwrap()
            .contains("2 fields, got 1"));
        assert!(first_difference(&a, &[])
            .unwrap()
            .contains("1 header lists, got 0"));
    }
}
