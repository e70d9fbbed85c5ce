//! Applying validated steps to the live file and rendering the result (docs/host.md "Edit"). The file is split into
//! lines with their own terminators (LF, CRLF or a lone CR, as the tag's normalisation counts them); unchanged lines
//! keep their bytes and terminator, new lines take the file's dominant line ending (its first terminator; LF for a file
//! without one), the final newline keeps its state (present or absent), and a leading BOM stays.

use super::limits::{CONTEXT_LINES, MAX_RENDER_ROWS};
use super::parse::{Op, Pos};
use crate::host::snapshot::LineSet;
use crate::host::tag::{self, BOM, MAX_LINE_CHARS};
use std::borrow::Cow;

/// A file split for editing. `lines[i]` is line i+1 without its terminator; `terms[i]` is the length in bytes of that
/// terminator (0: none, the last line of a file without a final newline; 1: LF or a lone CR; 2: CRLF). Lengths, not
/// slices: a byte per line instead of sixteen, which a file of 100,000 short lines feels (docs/host.md "Edit").
pub struct Doc<'a> {
    pub bom: bool,
    /// The text after the BOM; `lines` are slices of it.
    pub body: &'a str,
    pub lines: Vec<&'a str>,
    pub terms: Vec<u8>,
    /// The line ending new lines get.
    pub eol: &'static str,
    /// Whether the file ends with a line terminator (an empty file counts as ending with one).
    pub final_newline: bool,
}

/// Bytes per line assumed when reserving room for a file's lines (a larger guess only costs untouched memory).
const RESERVE_BYTES_PER_LINE: usize = 32;

impl<'a> Doc<'a> {
    pub fn split(text: &'a str) -> Doc<'a> {
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let b = body.as_bytes();
        let room = b.len() / RESERVE_BYTES_PER_LINE + 1;
        let mut lines = Vec::with_capacity(room);
        let mut terms = Vec::with_capacity(room);
        let mut start = 0;
        if memchr::memchr(b'\r', b).is_none() {
            // LF only (most files): one iterator over the line ends, no per-line search set-up.
            for p in memchr::memchr_iter(b'\n', b) {
                lines.push(&body[start..p]);
                terms.push(1);
                start = p + 1;
            }
        } else {
            for p in memchr::memchr2_iter(b'\n', b'\r', b) {
                if p < start {
                    continue; // the LF of a CRLF already taken
                }
                let len = if b[p] == b'\r' && b.get(p + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                lines.push(&body[start..p]);
                terms.push(len);
                start = p + len as usize;
            }
        }
        if start < body.len() {
            lines.push(&body[start..]);
            terms.push(0);
        }
        let eol = match terms.first() {
            Some(2) => "\r\n",
            Some(1) if b[lines[0].len()] == b'\r' => "\r",
            _ => "\n",
        };
        let final_newline = terms.last().is_none_or(|&t| t != 0);
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

/// The steps of `ops` (in live line numbers, checked) with the lines each inserts (`sources`, one per operation), in
/// a file of `len` lines, sorted by `(start, order)`.
pub fn steps<'s>(ops: &[(usize, Op)], sources: &'s [Cow<'_, [String]>], len: usize) -> Vec<Step<'s>> {
    let mut steps: Vec<Step<'s>> = ops
        .iter()
        .zip(sources)
        .map(|((_, op), lines)| {
            let (start, end, order) = match *op {
                Op::Replace { from, to, .. } | Op::Cut { from, to, .. } => (from as usize - 1, to as usize, 2),
                Op::Insert { at: Pos::Before(n), .. } => ((n as usize).saturating_sub(1).min(len), 0, 1),
                Op::Insert { at: Pos::After(n), .. } => (n as usize, 0, 0),
                Op::Insert { at: Pos::End, .. } => (len, 0, 0),
            };
            let end = if order == 2 { end } else { start };
            Step {
                start,
                end,
                order,
                lines: lines.as_ref(),
            }
        })
        .collect();
    steps.sort_by_key(|s| (s.start, s.order));
    steps
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
        let end_term = doc.terms[b - 1] as usize;
        let end = doc.offset(doc.lines[b - 1]) + doc.lines[b - 1].len() + end_term;
        text.push_str(&doc.body[start..end]);
        if end_term == 0 {
            text.push_str(doc.eol);
            *last_term = doc.eol.len();
        } else {
            *last_term = end_term;
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
    let mut text = tag::header(shown_path, tag_);
    let mut seen = LineSet::new();
    // Windows by line index; `hi` is not clamped to the line count: the walk below ends with the text.
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for &(start, ins, _) in &a.regions {
        let lo = start.saturating_sub(CONTEXT_LINES);
        let hi = start + ins + CONTEXT_LINES;
        match windows.last_mut() {
            Some(w) if lo <= w.1 => w.1 = w.1.max(hi),
            _ => windows.push((lo, hi)),
        }
    }
    // The lines of `new_text` as `tag::lines` counts them, walked once without splitting the whole text.
    let mut walk = LineWalk::new(new_text);
    let mut rows = 0;
    let mut cut = false;
    'windows: for (k, &(lo, hi)) in windows.iter().enumerate() {
        if !walk.skip_to(lo) {
            break;
        }
        if k > 0 {
            text.push_str("\n…");
        }
        for i in lo..hi {
            let Some(line) = walk.next_line() else {
                break 'windows;
            };
            if rows == MAX_RENDER_ROWS {
                cut = true;
                break 'windows;
            }
            let (shown, clipped) = tag::clip_line(line, MAX_LINE_CHARS);
            text.push('\n');
            tag::row(&mut text, i + 1, &shown);
            if !clipped {
                seen.insert(i as u32 + 1);
            }
            rows += 1;
        }
    }
    if new_text.is_empty() {
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

/// A forward walk over the lines of normalized text (split on LF, a final newline does not start an extra line,
/// empty text has no lines: `tag::lines`), for reading a few windows of a large file without splitting all of it.
struct LineWalk<'t> {
    body: &'t str,
    /// Byte offset of the next line in `body`; `None` once every line was passed.
    at: Option<usize>,
    /// Index of the next line.
    index: usize,
}

impl<'t> LineWalk<'t> {
    fn new(text: &'t str) -> LineWalk<'t> {
        LineWalk {
            body: text.strip_suffix('\n').unwrap_or(text),
            at: (!text.is_empty()).then_some(0),
            index: 0,
        }
    }

    fn next_line(&mut self) -> Option<&'t str> {
        let at = self.at?;
        let rest = &self.body[at..];
        self.index += 1;
        Some(match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(k) => {
                self.at = Some(at + k + 1);
                &rest[..k]
            }
            None => {
                self.at = None;
                rest
            }
        })
    }

    /// Passes lines until the next one is line index `target` (never backwards); false when the text ends first.
    fn skip_to(&mut self, target: usize) -> bool {
        if target > self.index {
            if let Some(at) = self.at {
                let need = target - self.index;
                match memchr::memchr_iter(b'\n', &self.body.as_bytes()[at..]).nth(need - 1) {
                    Some(k) => {
                        self.at = Some(at + k + 1);
                        self.index = target;
                    }
                    None => self.at = None,
                }
            }
        }
        self.at.is_some() && self.index == target
    }
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
    fn steps_order_insertions_after_before_and_replacements_at_one_gap() {
        let p =
            crate::host::edit::parse::parse("PUT 3.=3:\n+r\nPUT <3:\n+b\nPUT >2:\n+a\nPUT >$:\n+t\nCUT 1.=1").unwrap();
        let sources: Vec<Cow<'_, [String]>> = p
            .ops
            .iter()
            .map(|(_, op)| match op {
                Op::Replace {
                    src: crate::host::edit::parse::Src::Body(b),
                    ..
                }
                | Op::Insert {
                    src: crate::host::edit::parse::Src::Body(b),
                    ..
                } => Cow::Borrowed(b.as_slice()),
                _ => Cow::Borrowed(&[][..]),
            })
            .collect();
        let st = steps(&p.ops, &sources, 4);
        let got: Vec<(usize, usize, u8)> = st.iter().map(|s| (s.start, s.end, s.order)).collect();
        assert_eq!(got, vec![(0, 1, 2), (2, 2, 0), (2, 2, 1), (2, 3, 2), (4, 4, 0)]);
        let doc = Doc::split("1\n2\n3\n4\n");
        assert_eq!(apply(&doc, &st).bytes, "2\na\nb\nr\n4\nt\n");
    }

    /// Every text over `alphabet` of up to `max` characters.
    fn all_texts(alphabet: &[char], max: usize) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut layer = vec![String::new()];
        for _ in 0..max {
            layer = layer
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            out.extend(layer.iter().cloned());
        }
        out
    }

    #[test]
    fn split_agrees_with_a_line_by_line_reading_on_every_short_text() {
        // The reference reads one terminator at a time: CRLF, a lone CR or LF each end a line.
        for text in all_texts(&['a', '\r', '\n'], 7) {
            let (mut lines, mut terms) = (Vec::new(), Vec::new());
            let mut rest = text.as_str();
            while let Some(p) = rest.find(['\r', '\n']) {
                let len = if rest[p..].starts_with("\r\n") { 2 } else { 1 };
                lines.push(&rest[..p]);
                terms.push(len as u8);
                rest = &rest[p + len..];
            }
            if !rest.is_empty() {
                lines.push(rest);
                terms.push(0);
            }
            let eol = match text.find(['\r', '\n']) {
                Some(p) if text[p..].starts_with("\r\n") => "\r\n",
                Some(p) if text[p..].starts_with('\r') => "\r",
                _ => "\n",
            };
            let doc = Doc::split(&text);
            assert_eq!((&doc.lines, &doc.terms, doc.eol), (&lines, &terms, eol), "{text:?}");
            assert_eq!(doc.final_newline, terms.last() != Some(&0), "{text:?}");
        }
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

    #[test]
    fn render_walks_windows_to_the_end_of_the_text() {
        let doc = Doc::split("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12");
        let x = vec!["x".to_string()];
        let steps = [(0, 1), (11, 12)].map(|(start, end)| Step {
            start,
            end,
            order: 2,
            lines: &x,
        });
        let a = apply(&doc, &steps);
        assert_eq!(a.bytes, "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nx");
        let (text, shown) = render("f", "ABCD", &a.bytes, &a);
        assert_eq!(text, "[f#ABCD]\n1:x\n2:2\n3:3\n…\n10:10\n11:11\n12:x");
        assert_eq!(shown.ranges(), &[(1, 3), (10, 12)]);
        // A final newline does not start a line; an emptied file says so.
        let (text, _) = render("f", "ABCD", "a\n\n", &a);
        assert_eq!(text, "[f#ABCD]\n1:a\n2:");
        let none = apply(
            &Doc::split("a\n"),
            &[Step {
                start: 0,
                end: 1,
                order: 2,
                lines: &[],
            }],
        );
        assert_eq!(render("f", "B855", "", &none).0, "[f#B855]\n(empty file)");
    }
}
