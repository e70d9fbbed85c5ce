//! Source files as lines, and back: the checks every existing source passes (UTF-8, one line-ending style) and
//! the per-file style (BOM, LF/CRLF, final newline) that the new content keeps.

use super::error::{PatchCode, PatchError};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The style of a text file that a rewrite must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub bom: bool,
    pub crlf: bool,
    pub final_newline: bool,
}

impl Style {
    /// What Add File writes (and what an empty source behaves like): LF with a final newline, no BOM.
    pub const NEW_FILE: Style = Style {
        bom: false,
        crlf: false,
        final_newline: true,
    };
}

/// A decoded source: its style and its lines without line endings (borrowed from the file bytes).
#[derive(Debug)]
pub struct Source<'a> {
    pub style: Style,
    pub lines: Vec<&'a str>,
}

/// Checks and splits a source. `shown` is the path used in messages.
pub fn decode<'a>(bytes: &'a [u8], shown: &str) -> Result<Source<'a>, PatchError> {
    let (bom, body) = match bytes.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    let text = std::str::from_utf8(body).map_err(|_| {
        PatchError::no_change(
            PatchCode::NonUtf8Source,
            format!("non-UTF-8 source: '{shown}'. This tool edits UTF-8 text files only"),
        )
    })?;
    if text.is_empty() {
        return Ok(Source {
            style: Style { bom, ..Style::NEW_FILE },
            lines: Vec::new(),
        });
    }
    let b = text.as_bytes();
    let (mut crlf, mut lf) = (0usize, 0usize);
    for i in memchr::memchr2_iter(b'\r', b'\n', b) {
        if b[i] == b'\r' {
            if b.get(i + 1) == Some(&b'\n') {
                crlf += 1;
            } else {
                return Err(PatchError::no_change(
                    PatchCode::BareCr,
                    format!("bare CR line ending in '{shown}'. This tool edits files with one line-ending style (LF or CRLF) only"),
                ));
            }
        } else if i == 0 || b[i - 1] != b'\r' {
            lf += 1;
        }
    }
    if crlf > 0 && lf > 0 {
        return Err(PatchError::no_change(
            PatchCode::MixedLineEndings,
            format!(
                "mixed line endings in '{shown}'. This tool edits files with one line-ending style (LF or CRLF) only"
            ),
        ));
    }
    let is_crlf = crlf > 0;
    let sep = if is_crlf { "\r\n" } else { "\n" };
    let final_newline = text.ends_with(sep);
    let mut lines: Vec<&str> = text.split(sep).collect();
    if final_newline {
        lines.pop();
    }
    Ok(Source {
        style: Style {
            bom,
            crlf: is_crlf,
            final_newline,
        },
        lines,
    })
}

/// Writes lines back in a style. No lines gives an empty file (plus the BOM if the source had one).
pub fn encode<'s, I>(lines: I, style: Style, size_hint: usize) -> Vec<u8>
where
    I: IntoIterator<Item = &'s str>,
{
    let sep: &[u8] = if style.crlf { b"\r\n" } else { b"\n" };
    let mut out = Vec::with_capacity(size_hint + 3);
    if style.bom {
        out.extend_from_slice(BOM);
    }
    let mut any = false;
    for line in lines {
        if any {
            out.extend_from_slice(sep);
        }
        out.extend_from_slice(line.as_bytes());
        any = true;
    }
    if any && style.final_newline {
        out.extend_from_slice(sep);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_round_trip() {
        for input in [
            &b"a\nb\n"[..],
            b"a\nb",
            b"a\r\nb\r\n",
            b"a\r\nb",
            b"\xEF\xBB\xBFa\r\nb",
            b"\xEF\xBB\xBFx\n",
            b"\n",
            b"\n\n",
            b"\r\n",
            b"single",
        ] {
            let s = decode(input, "f").unwrap();
            assert_eq!(
                encode(s.lines.iter().copied(), s.style, input.len()),
                input,
                "{input:?}"
            );
        }
    }

    #[test]
    fn empty_and_bom_only_are_new_files() {
        let s = decode(b"", "f").unwrap();
        assert_eq!(s.style, Style::NEW_FILE);
        assert!(s.lines.is_empty());
        let s = decode(b"\xEF\xBB\xBF", "f").unwrap();
        assert_eq!(
            s.style,
            Style {
                bom: true,
                ..Style::NEW_FILE
            }
        );
        assert_eq!(encode(["x"], s.style, 1), b"\xEF\xBB\xBFx\n");
    }

    #[test]
    fn refusals() {
        assert_eq!(
            decode(b"a\xffb", "x.bin").unwrap_err().to_string(),
            "apply_patch failed (no-change): non-UTF-8 source: 'x.bin'. This tool edits UTF-8 text files only"
        );
        assert_eq!(
            decode(b"a\rb\n", "x").unwrap_err().to_string(),
            "apply_patch failed (no-change): bare CR line ending in 'x'. This tool edits files with one line-ending style (LF or CRLF) only"
        );
        assert_eq!(decode(b"a\r", "x").unwrap_err().code, "bare-cr");
        assert_eq!(
            decode(b"a\r\nb\n", "x").unwrap_err().to_string(),
            "apply_patch failed (no-change): mixed line endings in 'x'. This tool edits files with one line-ending style (LF or CRLF) only"
        );
    }
}
