//! Diffs for people to look at (docs/render.md "Diffs"): what a Write, an Edit or an apply_patch changes, as the
//! numbered rows Pi's own `renderDiff` colours (`+12 text`, `-12 text`, ` 12 text`, `   ...` for a gap), with three
//! lines of context around each change.
//!
//! Everything here is bounded, because a view is drawn on a person's screen and must never hold up Pi: the diff
//! (the `similar` crate) stops at a deadline, and a diff that hit it is given up for counts and a summary; a side
//! larger than `max_bytes` is not compared at all; the rows kept are capped (`max_rows`, the rest counted) and so is
//! each row's width (`max_line_chars`). Nothing here decides what lands: the engine's tools have already applied the
//! change (or are about to, for a card) when a view is made.

use similar::{capture_diff_slices_deadline, Algorithm, DiffOp, TextDiff};
use std::time::{Duration, Instant};

/// The bounds of one view.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long the diff may run; past it the view gives counts and a summary instead of rows.
    pub deadline: Duration,
    /// Sides larger than this (bytes) are not compared.
    pub max_bytes: usize,
    /// Rows kept in `text`; the rest are counted in `omitted_rows`.
    pub max_rows: usize,
    /// Characters kept of one row's line (a minified file's single line stays a row, not a screenful).
    pub max_line_chars: usize,
    /// Unchanged lines kept around each change.
    pub context: usize,
}

/// The bounds the tools and cards use: a quarter second of diffing off Node's main thread, 2 MiB a side, 500 rows
/// of at most 400 characters (what a person reads, and what Pi's TUI draws in well under 50 ms; `/pct review show`
/// has the whole change).
pub const LIMITS: Limits = Limits {
    deadline: Duration::from_millis(250),
    max_bytes: 2 * 1024 * 1024,
    max_rows: 500,
    max_line_chars: 400,
    context: 3,
};

/// A view of a change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// Rows in Pi's diff form, joined by `\n`; "" when there is nothing to show (no change, or not compared).
    pub text: String,
    /// Lines added and removed. When `exact` is false these are upper bounds (the coarse diff at the deadline, or
    /// the whole sides when they were not compared).
    pub added: u64,
    pub removed: u64,
    /// Whether the diff ran to its end (false: the deadline hit or a side was too large; `summary` says which).
    pub exact: bool,
    /// Rows of the diff not kept in `text` (over `max_rows`).
    pub omitted_rows: u64,
    /// The first changed line, numbered in the new file.
    pub first_changed_line: Option<u64>,
    /// Why there are no rows, for the person.
    pub summary: Option<String>,
    pub before_lines: u64,
    pub after_lines: u64,
}

/// Lines of `text` as an editor counts them (a final newline does not start another line).
pub fn count_lines(text: &str) -> u64 {
    let b = text.as_bytes();
    let n = memchr::memchr_iter(b'\n', b).count() as u64;
    n + u64::from(!b.is_empty() && b[b.len() - 1] != b'\n')
}

/// A line without its terminator.
fn bare(s: &str) -> &str {
    let s = s.strip_suffix('\n').unwrap_or(s);
    s.strip_suffix('\r').unwrap_or(s)
}

/// One changed row of the view (0-based index in the old or new file), before it is numbered and written.
#[derive(Debug, Clone, Copy)]
enum Row {
    Del(usize),
    Add(usize),
}

/// The change as a run of pieces: unchanged runs (old start, new start, length) and changed blocks (their rows).
enum Piece {
    Equal(usize, usize, usize),
    Change(Vec<Row>),
}

/// Writes `pieces` as rows with context, kept under the limits. `old`/`new` give a line's text by index.
fn render<'a>(
    pieces: &[Piece],
    old: &dyn Fn(usize) -> &'a str,
    new: &dyn Fn(usize) -> &'a str,
    width: usize,
    limits: &Limits,
) -> (String, u64) {
    let mut out = String::new();
    let (mut kept, mut omitted) = (0usize, 0u64);
    let mut push = |out: &mut String, row: String| {
        if kept < limits.max_rows {
            if kept > 0 {
                out.push('\n');
            }
            out.push_str(&row);
            kept += 1;
        } else {
            omitted += 1;
        }
    };
    let clip = |s: &str| -> String {
        match s.char_indices().nth(limits.max_line_chars) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s.to_string(),
        }
    };
    let line = |sign: char, n: usize, text: &str| format!("{sign}{:>width$} {}", n + 1, clip(bare(text)));
    let gap = format!(" {:>width$} ...", "");
    let c = limits.context;
    let changed = |p: &Piece| matches!(p, Piece::Change(rows) if !rows.is_empty());
    for (i, p) in pieces.iter().enumerate() {
        match p {
            Piece::Change(rows) => {
                for r in rows {
                    match *r {
                        Row::Del(o) => push(&mut out, line('-', o, old(o))),
                        Row::Add(n) => push(&mut out, line('+', n, new(n))),
                    }
                }
            }
            Piece::Equal(os, _, len) => {
                let (os, len) = (*os, *len);
                let before = i > 0 && changed(&pieces[i - 1]);
                let after = pieces.get(i + 1).is_some_and(changed);
                let head = if before { c.min(len) } else { 0 };
                let tail = if after { c.min(len - head) } else { 0 };
                for k in 0..head {
                    push(&mut out, line(' ', os + k, old(os + k)));
                }
                if len - head - tail > 0 && before && after {
                    push(&mut out, gap.clone());
                }
                for k in len - tail..len {
                    push(&mut out, line(' ', os + k, old(os + k)));
                }
            }
        }
    }
    (out, omitted)
}

/// The view of a diff that finished within its deadline: every row's place is known, so the first change is too.
fn exact_view(pieces: &[Piece], rows: (String, u64), counts: (u64, u64), lines: (u64, u64)) -> View {
    View {
        text: rows.0,
        added: counts.0,
        removed: counts.1,
        exact: true,
        omitted_rows: rows.1,
        first_changed_line: first_change(pieces),
        summary: None,
        before_lines: lines.0,
        after_lines: lines.1,
    }
}

/// The first changed line of `pieces`, numbered in the new file (a pure deletion: the line after it).
fn first_change(pieces: &[Piece]) -> Option<u64> {
    let mut new_pos = 0usize;
    for p in pieces {
        match p {
            Piece::Equal(_, ns, len) => new_pos = ns + len,
            Piece::Change(rows) => match rows.first() {
                Some(Row::Add(n)) => return Some(*n as u64 + 1),
                Some(Row::Del(_)) => return Some(new_pos as u64 + 1),
                None => {}
            },
        }
    }
    None
}

/// Appends an unchanged run, joined to the run before it when they touch (context is counted per run).
fn push_equal(pieces: &mut Vec<Piece>, os: usize, ns: usize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(Piece::Equal(pos, pns, plen)) = pieces.last_mut() {
        if *pos + *plen == os && *pns + *plen == ns {
            *plen += len;
            return;
        }
    }
    pieces.push(Piece::Equal(os, ns, len));
}

/// The pieces of `ops` (similar's), offset by `old0`/`new0`, appended to `pieces`; returns the added/removed counts.
fn pieces_of(ops: &[DiffOp], old0: usize, new0: usize, pieces: &mut Vec<Piece>) -> (u64, u64) {
    let (mut added, mut removed) = (0u64, 0u64);
    let change = |pieces: &mut Vec<Piece>| -> usize {
        if !matches!(pieces.last(), Some(Piece::Change(_))) {
            pieces.push(Piece::Change(Vec::new()));
        }
        pieces.len() - 1
    };
    for op in ops {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => push_equal(pieces, old0 + old_index, new0 + new_index, len),
            DiffOp::Delete { old_index, old_len, .. } => {
                let i = change(pieces);
                if let Piece::Change(rows) = &mut pieces[i] {
                    rows.extend((0..old_len).map(|k| Row::Del(old0 + old_index + k)));
                }
                removed += old_len as u64;
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                let i = change(pieces);
                if let Piece::Change(rows) = &mut pieces[i] {
                    rows.extend((0..new_len).map(|k| Row::Add(new0 + new_index + k)));
                }
                added += new_len as u64;
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let i = change(pieces);
                if let Piece::Change(rows) = &mut pieces[i] {
                    rows.extend((0..old_len).map(|k| Row::Del(old0 + old_index + k)));
                    rows.extend((0..new_len).map(|k| Row::Add(new0 + new_index + k)));
                }
                removed += old_len as u64;
                added += new_len as u64;
            }
        }
    }
    (added, removed)
}

fn digits(n: u64) -> usize {
    n.max(1).to_string().len()
}

fn over_deadline(limits: &Limits, before: u64, after: u64, added: u64, removed: u64) -> View {
    View {
        added,
        removed,
        exact: false,
        summary: Some(format!(
            "{before} → {after} lines: too many changes to compare within {} ms; at most +{added} -{removed}",
            limits.deadline.as_millis()
        )),
        before_lines: before,
        after_lines: after,
        ..View::default()
    }
}

/// The view of `before` → `after` (two whole texts).
pub fn texts(before: &str, after: &str, limits: &Limits) -> View {
    let (bl, al) = (count_lines(before), count_lines(after));
    if before.len() > limits.max_bytes || after.len() > limits.max_bytes {
        return View {
            added: al,
            removed: bl,
            exact: false,
            summary: Some(format!(
                "{bl} → {al} lines: not compared (a side is over the {} MiB diff limit)",
                limits.max_bytes / (1024 * 1024)
            )),
            before_lines: bl,
            after_lines: al,
            ..View::default()
        };
    }
    let deadline = Instant::now() + limits.deadline;
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .deadline(deadline)
        .diff_lines(before, after);
    let mut pieces = Vec::new();
    let (added, removed) = pieces_of(diff.ops(), 0, 0, &mut pieces);
    if added + removed > 0 && Instant::now() >= deadline {
        return over_deadline(limits, bl, al, added, removed);
    }
    let (olds, news) = (diff.old_slices(), diff.new_slices());
    let width = digits(bl.max(al));
    let (text, omitted_rows) = render(&pieces, &|i| olds[i], &|j| news[j], width, limits);
    exact_view(&pieces, (text, omitted_rows), (added, removed), (bl, al))
}

/// The view of `before` → `after` as bytes: binary content (a NUL byte or invalid UTF-8) gets a summary, no rows.
pub fn bytes(before: &[u8], after: &[u8], limits: &Limits) -> View {
    match (
        crate::review::diff::as_text(before),
        crate::review::diff::as_text(after),
    ) {
        (Some(a), Some(b)) => texts(a, b, limits),
        _ => View {
            summary: Some(format!(
                "binary content ({} → {} bytes): no line diff",
                before.len(),
                after.len()
            )),
            ..View::default()
        },
    }
}

/// The view of a new file: its lines, all added.
pub fn created(after: &str, limits: &Limits) -> View {
    let al = count_lines(after);
    // Only the rows a view keeps are split off (a new 64 MiB file costs its line count, not a slice per line).
    let lines: Vec<&str> = after.split_inclusive('\n').take(limits.max_rows).collect();
    let pieces = if lines.is_empty() {
        Vec::new()
    } else {
        vec![Piece::Change((0..lines.len()).map(Row::Add).collect())]
    };
    let (text, kept_omitted) = render(&pieces, &|_| "", &|j| lines[j], digits(al), limits);
    let omitted_rows = kept_omitted + (al - lines.len() as u64);
    View {
        text,
        added: al,
        removed: 0,
        exact: true,
        omitted_rows,
        first_changed_line: (al > 0).then_some(1),
        summary: None,
        before_lines: 0,
        after_lines: al,
    }
}

/// One replacement of an Edit: old lines `start..end` (0-based, of `old`) became `lines`.
pub struct Replacement<'a, S: AsRef<str>> {
    pub start: usize,
    pub end: usize,
    pub lines: &'a [S],
}

/// The view of an Edit's replacements (sorted, not overlapping) on a file of `old` lines: only the replaced ranges
/// are compared (the rest of the file is unchanged by construction), each within the deadline.
pub fn replacements<S: AsRef<str>>(old: &[&str], reps: &[Replacement<'_, S>], limits: &Limits) -> View {
    let deadline = Instant::now() + limits.deadline;
    let mut pieces = Vec::new();
    let (mut added, mut removed) = (0u64, 0u64);
    let mut new_lines: Vec<(usize, &str)> = Vec::new();
    let (mut o, mut delta) = (0usize, 0isize);
    for r in reps {
        if r.start > o {
            push_equal(&mut pieces, o, (o as isize + delta) as usize, r.start - o);
        }
        let new0 = (r.start as isize + delta) as usize;
        let a: Vec<&str> = old[r.start..r.end].to_vec();
        let b: Vec<&str> = r.lines.iter().map(|s| s.as_ref()).collect();
        let ops = capture_diff_slices_deadline(Algorithm::Myers, &a, &b, Some(deadline));
        let (ad, rm) = pieces_of(&ops, r.start, new0, &mut pieces);
        added += ad;
        removed += rm;
        new_lines.extend(b.iter().enumerate().map(|(k, s)| (new0 + k, *s)));
        delta += b.len() as isize - (r.end - r.start) as isize;
        o = r.end;
    }
    if o < old.len() {
        push_equal(&mut pieces, o, (o as isize + delta) as usize, old.len() - o);
    }
    let (bl, al) = (old.len() as u64, (old.len() as isize + delta) as u64);
    if added + removed > 0 && Instant::now() >= deadline {
        return over_deadline(limits, bl, al, added, removed);
    }
    let new_at = |j: usize| -> &str {
        match new_lines.binary_search_by_key(&j, |(n, _)| *n) {
            Ok(k) => new_lines[k].1,
            Err(_) => "",
        }
    };
    let (text, omitted_rows) = render(&pieces, &|i| old[i], &new_at, digits(bl.max(al)), limits);
    exact_view(&pieces, (text, omitted_rows), (added, removed), (bl, al))
}

/// A Write's preview before it runs: the file at `path` as it is now against `content` (`created` when there is no
/// regular file there). A file that cannot be read as text, or is too large, gets a summary instead of rows.
pub fn write_preview(path: &std::path::Path, content: &str, limits: &Limits) -> (bool, View) {
    let meta = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => {
            return (
                false,
                View {
                    summary: Some("not a regular file".into()),
                    ..View::default()
                },
            )
        }
        Err(_) => return (true, created(content, limits)),
    };
    if meta.len() as usize > limits.max_bytes {
        let al = count_lines(content);
        return (
            false,
            View {
                added: al,
                exact: false,
                summary: Some(format!(
                    "the file on disk ({} bytes) is over the {} MiB diff limit: not compared",
                    meta.len(),
                    limits.max_bytes / (1024 * 1024)
                )),
                after_lines: al,
                ..View::default()
            },
        );
    }
    match std::fs::read(path) {
        Ok(bytes) => match std::str::from_utf8(&bytes) {
            Ok(before) if memchr::memchr(0, before.as_bytes()).is_none() => (false, texts(before, content, limits)),
            _ => (
                false,
                View {
                    added: count_lines(content),
                    exact: false,
                    summary: Some("the file on disk is binary: not compared".into()),
                    after_lines: count_lines(content),
                    ..View::default()
                },
            ),
        },
        Err(e) => (
            false,
            View {
                summary: Some(format!("the file could not be read ({e})")),
                ..View::default()
            },
        ),
    }
}

#[cfg(test)]
mod tests;
