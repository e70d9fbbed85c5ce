//! Applying validated steps to the live file and rendering the result (docs/host.md "Edit"). The file is split into
//! lines with their own terminators (LF, CRLF or a lone CR, as the tag's normalisation counts them); unchanged lines
//! keep their bytes and terminator, new lines take the file's dominant line ending (its first terminator; LF for a file
//! without one), the final newline keeps its state (present or absent), and a leading BOM stays.

use super::limits::{CONTEXT_LINES, MAX_RENDER_ROWS};
use crate::host::snapshot::LineSet;
use crate::host::tag::{self, BOM, MAX_LINE_CHARS};

/// A file split for editing. `lines[i]` is line i+1 without its terminator; `terms[i]` is that terminator.
pub struct Doc<'a> {
    pub bom: bool,
    /// The text after the BOM; `lines` and `terms` are slices of it.
    pub body: &'a str,
    pub lines: Vec<&'a str>,
    pub terms: Vec<&'a str>,
    /// The line ending new lines get.
    pub eol: &'static str,
    /// Whether the file ends with a line terminator (an empty file counts as ending with one).
    pub final_newline: bool,
}

impl<'a> Doc<'a> {
    pub fn split(text: &'a str) -> Doc<'a> {
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let b = body.as_bytes();
        let mut lines = Vec::new();
        let mut terms = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while let Some(off) = memchr::memchr2(b'\n', b'\r', &b[i..]) {
            let p = i + off;
            let end = if b[p] == b'\r' && b.get(p + 1) == Some(&b'\n') {
                p + 2
            } else {
                p + 1
            };
            lines.push(&body[start..p]);
            terms.push(&body[p..end]);
            start = end;
            i = end;
        }
        if start < body.len() {
            lines.push(&body[start..]);
            terms.push("");
        }
        let eol = match terms.first().copied() {
            Some("\r\n") => "\r\n",
            Some("\r") => "\r",
            _ => "\n",
        };
        let final_newline = terms.last().is_none_or(|t| !t.is_empty());
        Doc {
            bom,
            body,
            lines,
            terms,
            eol,
            final_newline,
        }
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Byte offset of a slice of `body` within it.
    fn offset(&self, part: &str) -> usize {
        part.as_ptr() as usize - self.body.as_ptr() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// One change in live-file coordinates (0-based): remove lines `start..end`, then insert `lines` there. Steps are
/// sorted by `(start, order)` and do not overlap.
pub struct Step<'s> {
    pub start: usize,
    pub end: usize,
    /// Among steps at one gap: insertions after a line (0), before a line (1), replacements (2).
    pub order: u8,
    pub lines: &'s [String],
}

/// The new file and what changed.
pub struct Applied {
    /// The new file (valid UTF-8: built from UTF-8 pieces).
    pub bytes: String,
    /// New line count.
    pub total: usize,
    /// Changed regions in the new file (0-based start, inserted count, removed count).
    pub regions: Vec<(usize, usize, usize)>,
    /// Runs of unchanged lines: (old start, new start, length), 0-based.
    pub kept: Vec<(usize, usize, usize)>,
    pub added: usize,
    pub removed: usize,
}

/// Applies `steps` (sorted, non-overlapping, within the file) to `doc`.
pub fn apply(doc: &Doc<'_>, steps: &[Step<'_>]) -> Applied {
    let mut regions = Vec::with_capacity(steps.len());
    let mut kept = Vec::with_capacity(steps.len() + 1);
    let (mut added, mut removed) = (0, 0);
    let cap = doc.body.len()
        + steps
            .iter()
            .map(|s| s.lines.iter().map(|l| l.len() + 2).sum::<usize>())
            .sum::<usize>();
    let mut text = String::with_capacity(cap + BOM.len());
    if doc.bom {
        text.push_str(BOM);
    }
    // Every emitted line ends with a terminator here; the last one is dropped at the end when the file had no final
    // newline. `last_term` is the length of the terminator written last.
    let mut last_term = 0usize;
    let mut n = 0usize;
    // An unchanged run is one contiguous span of the original bytes: copied at once.
    let copy_run = |text: &mut String, a: usize, b: usize, n: &mut usize, last_term: &mut usize| {
        let start = doc.offset(doc.lines[a]);
        let end_term = doc.terms[b - 1];
        let end = doc.offset(doc.lines[b - 1]) + doc.lines[b - 1].len() + end_term.len();
        text.push_str(&doc.body[start..end]);
        if end_term.is_empty() {
            text.push_str(doc.eol);
            *last_term = doc.eol.len();
        } else {
            *last_term = end_term.len();
        }
        *n += b - a;
    };
    let mut cur = 0usize;
    for s in steps {
        if s.start > cur {
            kept.push((cur, n, s.start - cur));
            copy_run(&mut text, cur, s.start, &mut n, &mut last_term);
            cur = s.start;
        }
        regions.push((n, s.lines.len(), s.end - s.start));
        for l in s.lines {
            text.push_str(l);
            text.push_str(doc.eol);
            last_term = doc.eol.len();
        }
        n += s.lines.len();
        added += s.lines.len();
        removed += s.end - s.start;
        cur = cur.max(s.end);
    }
    if cur < doc.len() {
        kept.push((cur, n, doc.len() - cur));
        copy_run(&mut text, cur, doc.len(), &mut n, &mut last_term);
    }
    if n > 0 && !doc.final_newline {
        text.truncate(text.len() - last_term);
    }
    Applied {
        bytes: text,
        total: n,
        regions,
        kept,
        added,
        removed,
    }
}

/// Lines of the new version the model now knows: the written ones, the unchanged lines it had seen (`old_seen`,
/// `None` = every line), and `shown` (the rows of the render).
pub fn new_seen(a: &Applied, old_seen: Option<Option<&LineSet>>, shown: &LineSet) -> LineSet {
    let mut s = shown.clone();
    for &(start, ins, _) in &a.regions {
        if ins > 0 {
            s.insert_range(start as u32 + 1, (start + ins) as u32);
        }
    }
    match old_seen {
        None => {}
        Some(None) => {
            for &(_, ns, len) in &a.kept {
                s.insert_range(ns as u32 + 1, (ns + len) as u32);
            }
        }
        Some(Some(old)) => {
            for &(os, ns, len) in &a.kept {
                let (lo, hi) = (os as u32 + 1, (os + len) as u32);
                let r = old.ranges();
                let first = r.partition_point(|&(_, b)| b < lo);
                for &(a0, b0) in &r[first..] {
                    if a0 > hi {
                        break;
                    }
                    let (x, y) = (a0.max(lo), b0.min(hi));
                    s.insert_range(x - os as u32 + ns as u32, y - os as u32 + ns as u32);
                }
            }
        }
    }
    s
}

/// The success render: `[path#TAG]` then each changed region with `CONTEXT_LINES` numbered lines around it (`…`
/// between groups), at most `MAX_RENDER_ROWS` rows. Returns the text and the unclipped lines it showed.
pub fn render(shown_path: &str, tag_: &str, new_text: &str, a: &Applied) -> (String, LineSet) {
    let norm_lines = tag::lines(new_text);
    let mut text = tag::header(shown_path, tag_);
    let mut seen = LineSet::new();
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for &(start, ins, _) in &a.regions {
        let lo = start.saturating_sub(CONTEXT_LINES);
        let hi = (start + ins + CONTEXT_LINES).min(norm_lines.len());
        match windows.last_mut() {
            Some(w) if lo <= w.1 => w.1 = w.1.max(hi),
            _ => windows.push((lo, hi)),
        }
    }
    let mut rows = 0;
    let mut cut = false;
    for (k, &(lo, hi)) in windows.iter().enumerate() {
        if k > 0 {
            text.push_str("\n…");
        }
        for (i, line) in norm_lines.iter().enumerate().take(hi).skip(lo) {
            if rows == MAX_RENDER_ROWS {
                cut = true;
                break;
            }
            let (shown, clipped) = tag::clip_line(line, MAX_LINE_CHARS);
            text.push('\n');
            tag::row(&mut text, i + 1, &shown);
            if !clipped {
                seen.insert(i as u32 + 1);
            }
            rows += 1;
        }
        if cut {
            break;
        }
    }
    if norm_lines.is_empty() {
        text.push_str("\n(empty file)");
    }
    if cut {
        text.push_str(&format!(
            "\n[… more changes not shown ({} changed regions in all); Read the file to see them.]",
            a.regions.len()
        ));
    }
    (text, seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, steps: &[(usize, usize, u8, &[&str])]) -> String {
        let doc = Doc::split(text);
        let owned: Vec<Vec<String>> = steps
            .iter()
            .map(|s| s.3.iter().map(|x| x.to_string()).collect())
            .collect();
        let st: Vec<Step> = steps
            .iter()
            .zip(&owned)
            .map(|(s, l)| Step {
                start: s.0,
                end: s.1,
                order: s.2,
                lines: l,
            })
            .collect();
        apply(&doc, &st).bytes
    }

    #[test]
    fn keeps_crlf_bom_final_newline_state_and_untouched_bytes() {
        assert_eq!(
            run("\u{feff}a\r\nb\r\nc\r\n", &[(1, 2, 2, &["B", "B2"])]),
            "\u{feff}a\r\nB\r\nB2\r\nc\r\n"
        );
        assert_eq!(run("a\nb", &[(2, 2, 0, &["c"])]), "a\nb\nc");
        assert_eq!(run("a\nb", &[(1, 2, 2, &["x"])]), "a\nx");
        assert_eq!(run("a\nb\n", &[(1, 2, 2, &[])]), "a\n");
        // Mixed endings: untouched lines keep their own; new lines take the first one.
        assert_eq!(run("a\r\nb\nc\rd", &[(0, 0, 1, &["0"])]), "0\r\na\r\nb\nc\rd");
        // Trailing spaces of untouched lines stay.
        assert_eq!(run("a  \nb\t\n", &[(1, 2, 2, &["x"])]), "a  \nx\n");
        assert_eq!(run("", &[(0, 0, 0, &["x"])]), "x\n");
        assert_eq!(run("a\nb\nc\n", &[(0, 1, 2, &[]), (2, 3, 2, &[])]), "b\n");
    }

    #[test]
    fn seen_lines_follow_the_edit() {
        let doc = Doc::split("1\n2\n3\n4\n5\n");
        let ins = vec!["a".to_string(), "b".to_string()];
        let a = apply(
            &doc,
            &[Step {
                start: 1,
                end: 2,
                order: 2,
                lines: &ins,
            }],
        );
        let mut old = LineSet::new();
        old.insert(1);
        old.insert_range(4, 5);
        let s = new_seen(&a, Some(Some(&old)), &LineSet::new());
        // old 1 -> 1, written 2..3, old 4,5 -> 5,6; old 3 (unseen) -> 4 stays unseen.
        assert_eq!(s.ranges(), &[(1, 3), (5, 6)]);
        let (text, shown) = render("f", "ABCD", "1\na\nb\n3\n4\n5\n", &a);
        assert_eq!(text, "[f#ABCD]\n1:1\n2:a\n3:b\n4:3\n5:4");
        assert_eq!(shown.ranges(), &[(1, 5)]);
    }
}
