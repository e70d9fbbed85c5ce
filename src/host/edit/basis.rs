//! The basis gate (docs/host.md "Edit" and "Edits under drift"): how the operations relate to the live file. The
//! live file is identified (its tag and digest, taken from the recorded version when it still is that version), then
//! the call's tag decides: the live tag (fresh), an unknown tag (EDIT_TAG_UNKNOWN), or a stale one, which only
//! head/tail insertions and drift recovery carry over to the live lines; anything else is EDIT_TAG_MISMATCH with the
//! current lines around the anchors.

use super::drift::{self, LineMap, Refusal};
use super::gate;
use super::limits::{CONTEXT_LINES, MAX_RENDER_ROWS, REVEAL_CHARS};
use super::on_the_side;
use super::parse::{Op, Parsed, Pos};
use crate::host::error::{HostError, EDIT_TAG_MISMATCH, EDIT_TAG_UNKNOWN};
use crate::host::paths::Resolved;
use crate::host::snapshot::{LineSet, Seen, SnapshotStore, Version};
use crate::host::tag::{self, Tagged};
use std::borrow::Cow;

/// The live file as the tools see it (borrowed: copied only when a mismatch records it).
pub struct Live<'a> {
    pub text: &'a str,
    pub tag: String,
    pub digest: [u8; 32],
}

impl Live<'_> {
    /// Records the live version with `seen` lines. The text is retained by the store only up to its own limit, so
    /// it is handed over borrowed.
    fn record(&self, store: &mut SnapshotStore, t: &Resolved, seen: LineSet) {
        let facts = Tagged {
            tag: self.tag.clone(),
            digest: self.digest,
            len: self.text.len() as u64,
            fp: tag::fingerprint(self.text),
        };
        store.record_tagged(&t.canonical, &facts, Some(self.text), Seen::Lines(seen));
    }
}

/// The live text after normalisation and its digest and tag: taken from `version` when the live text is that
/// version's, else hashed (SHA-256). "Is that version's": its retained text equals the live text (a full
/// comparison), or, when the text was not retained (over 2 MiB), same length and same XXH3-128 fingerprint
/// (docs/host.md "The live file's fingerprint"); any difference takes the full path.
pub fn identify<'t>(text: &'t str, version: Option<&Version>) -> Identified<'t> {
    let lt = tag::normalize_str(text);
    let id = match version {
        Some(v) if v.text.as_deref().is_some_and(|vt| vt == lt.as_ref()) => (v.digest, v.tag.clone()),
        Some(v) if v.text.is_none() && v.len == lt.len() && v.fp == tag::fingerprint(&lt) => (v.digest, v.tag.clone()),
        _ => tag::digest_and_tag(&lt),
    };
    (lt, id)
}

/// What [`identify`] finds: the normalized live text, and its digest and tag.
pub type Identified<'t> = (Cow<'t, str>, ([u8; 32], String));

/// [`identify`] of a large file on a second thread while this one splits it into lines with `split`.
pub fn identify_beside<'t, D>(
    text: &'t str,
    version: Option<&Version>,
    split: impl FnOnce() -> D,
) -> (D, Identified<'t>) {
    on_the_side(text.len(), || identify(text, version), split)
}

/// How the operations relate to the live file.
pub enum Basis {
    /// The tag is the live file's. `seen`: `None` = no record (gate skipped).
    Fresh { seen: Option<Seen> },
    /// Stale tag, head/tail insertions (or a plain MV) only: applied to the live file as they are.
    HeadTail,
    /// Stale tag, carried over by drift recovery: the operations in live line numbers.
    Drift { ops: Vec<(usize, Op)> },
}

impl Basis {
    /// The operations in live line numbers.
    pub fn live_ops<'o>(&'o self, ops: &'o [(usize, Op)]) -> &'o [(usize, Op)] {
        match self {
            Basis::Drift { ops } => ops,
            _ => ops,
        }
    }

    /// Whether the ranges were already checked against the shown version (drift recovery checks them there).
    pub fn ranges_checked(&self) -> bool {
        matches!(self, Basis::Drift { .. })
    }
}

/// Where the rows of an EDIT_TAG_MISMATCH come from: the operations' own line numbers, or (after a diff) the
/// live lines where each operation's lines are now, plus the lines a refusal names.
enum Around<'m> {
    Claims,
    Moved {
        map: &'m LineMap,
        snap_len: u32,
        extra: Vec<(usize, usize)>,
    },
}

/// What an EDIT_TAG_MISMATCH names: the file, the call's tag, the live file and the call's operations.
struct Refuse<'r, 'l> {
    t: &'r Resolved,
    tag_: &'r str,
    live: &'r Live<'l>,
    ops: &'r [(usize, Op)],
}

impl Refuse<'_, '_> {
    /// The refusal with the rows around the operations' own line numbers.
    fn claims(&self, store: &mut SnapshotStore, why: &str) -> HostError {
        mismatch(store, self, why, Around::Claims)
    }

    /// The refusal of drift recovery for ops line `at`: rows where the operations' lines are now, plus the ones the
    /// refusal names.
    fn moved(&self, store: &mut SnapshotStore, at: usize, r: Refusal, map: &LineMap, snap_len: u32) -> HostError {
        let around = Around::Moved {
            map,
            snap_len,
            extra: r.show,
        };
        mismatch(store, self, &format!("ops line {at}: {}", r.why), around)
    }
}

/// The EDIT_TAG_MISMATCH failure: the live tag and the current content around the anchors (those rows count as
/// seen under the live tag, so an edit with the live tag and these numbers passes the provenance gate).
fn mismatch(store: &mut SnapshotStore, r: &Refuse<'_, '_>, why: &str, around: Around<'_>) -> HostError {
    let (t, live) = (r.t, r.live);
    let lines = tag::lines(live.text);
    let mut rows = LineSet::new();
    let len = lines.len() as u32;
    let mut add = |a: u32, b: u32| {
        let lo = a.saturating_sub(CONTEXT_LINES as u32 + 1).max(1);
        let hi = b.saturating_add(CONTEXT_LINES as u32 + 1).min(len);
        if lo <= hi {
            rows.insert_range(lo, hi);
        }
    };
    match &around {
        Around::Claims => {
            for (_, op) in r.ops {
                let (a, b) = gate::claim(op, len);
                add(a, b);
            }
        }
        Around::Moved { map, snap_len, extra } => {
            for &(a, b) in extra {
                add(a as u32, b as u32);
            }
            for (_, op) in r.ops {
                let (a, b) = gate::claim(op, *snap_len);
                let (ga, gb) = map.guess(a as usize, b as usize);
                add(ga as u32, gb as u32);
            }
        }
    }
    let mut text = tag::header(&t.shown, &live.tag);
    let mut seen = LineSet::new();
    let mut shown = 0;
    'outer: for &(a, b) in rows.ranges() {
        if shown > 0 {
            text.push_str("\n…");
        }
        for n in a..=b {
            if shown == MAX_RENDER_ROWS {
                text.push_str("\n[… more; Read the file for the rest.]");
                break 'outer;
            }
            let (s, clipped) = tag::clip_line(lines[n as usize - 1], REVEAL_CHARS);
            text.push('\n');
            tag::row(&mut text, n as usize, &s);
            if !clipped {
                seen.insert(n);
            }
            shown += 1;
        }
    }
    if len == 0 {
        text.push_str("\n(empty file)");
    }
    live.record(store, t, seen);
    HostError::new(
        EDIT_TAG_MISMATCH,
        format!(
            "{} changed since tag {} was shown (its tag is now {}) and the edit could not be carried over: {why}. \
             Nothing was changed. Redo the edit against the current lines below with tag {}, or Read the file \
             again.\n{text}",
            t.shown, r.tag_, live.tag, live.tag
        ),
    )
}

/// Decides the basis of the call's operations `p` under tag `tag_` against the live file (`live_lines` are its
/// lines), given the recorded `version` with that tag. A stale tag that is carried over adds its warning.
#[allow(clippy::too_many_arguments)] // the gate's inputs, each used; a struct would only rename them
pub fn decide(
    store: &mut SnapshotStore,
    t: &Resolved,
    tag_: &str,
    live: &Live<'_>,
    live_lines: &[&str],
    p: &Parsed,
    version: Option<Version>,
    warnings: &mut Vec<String>,
) -> Result<Basis, HostError> {
    let refuse = Refuse {
        t,
        tag_,
        live,
        ops: &p.ops,
    };
    let only_mv = p.ops.is_empty() && !p.rem;
    let v = match version {
        None if tag_ == live.tag => return Ok(Basis::Fresh { seen: None }),
        None => {
            // The message shows the live tag, but no line: record the live version with an empty seen set, so an
            // Edit with that tag passes the provenance gate only for lines a result actually showed (a later
            // EDIT_LINES_UNSEEN reveals them) instead of skipping the gate as "no record" would.
            live.record(store, t, LineSet::new());
            return Err(HostError::new(
                EDIT_TAG_UNKNOWN,
                format!(
                    "tag {tag_} is not the current tag of {} ({}) and no Read, Grep or Write in this session showed \
                     the file with it. Read {} and use the tag in its [path#TAG] header.",
                    t.shown, live.tag, t.shown
                ),
            ));
        }
        Some(v) => v,
    };
    if v.digest == live.digest {
        return Ok(Basis::Fresh { seen: Some(v.seen) });
    }
    if p.rem {
        return Err(refuse.claims(store, "REM deletes the file only under its current tag"));
    }
    if only_mv || p.ops.iter().all(|(_, op)| gate::head_or_tail(op)) {
        return head_tail(store, &refuse, live_lines, p, v.text.as_deref(), only_mv, warnings);
    }
    let Some(snap) = v.text else {
        return Err(refuse.claims(store, "the shown version was too large to keep for comparison"));
    };
    carry_over(store, &refuse, live_lines, p, &snap, &v.seen, warnings)
}

/// A stale tag with head/tail insertions (or a plain MV) only: `<1` and `>$` follow their neighbour when lines were
/// added above the first or below the last line.
fn head_tail(
    store: &mut SnapshotStore,
    refuse: &Refuse<'_, '_>,
    live_lines: &[&str],
    p: &Parsed,
    snap: Option<&str>,
    only_mv: bool,
    warnings: &mut Vec<String>,
) -> Result<Basis, HostError> {
    let (t, tag_, live) = (refuse.t, refuse.tag_, refuse.live);
    let mut carried = p.ops.clone();
    let mut moved = false;
    if let (Some(snap), false) = (snap, only_mv) {
        let snap_lines = tag::lines(snap);
        let snap_len = snap_lines.len() as u32;
        let map = LineMap::new(&snap_lines, live_lines);
        for (k, (at, op)) in p.ops.iter().enumerate() {
            let head = matches!(op, Op::Insert { at: Pos::Before(1), .. });
            match map.edge(&snap_lines, head) {
                Ok(None) => {}
                Ok(Some(d)) => {
                    carried[k].1 = shift_edge(op, d, snap_len);
                    moved = true;
                }
                Err(r) => return Err(refuse.moved(store, *at, r, &map, snap_len)),
            }
        }
    }
    if !moved {
        warnings.push(format!(
            "tag {tag_} was stale ({} changed since; it was {} before this edit): the head/tail insertions went to \
             the current file.",
            t.shown, live.tag
        ));
        Ok(Basis::HeadTail)
    } else {
        warnings.push(format!(
            "tag {tag_} was stale ({} changed since; it was {} before this edit): lines were added at the head or \
             tail, so the insertions went next to the lines they were written against.",
            t.shown, live.tag
        ));
        Ok(Basis::Drift { ops: carried })
    }
}

/// Drift recovery of a stale tag whose shown version `snap` was retained: the ranges are checked against it, every
/// anchor must have been seen under it, and each operation is carried to the live lines by its own offset.
fn carry_over(
    store: &mut SnapshotStore,
    refuse: &Refuse<'_, '_>,
    live_lines: &[&str],
    p: &Parsed,
    snap: &str,
    seen: &Seen,
    warnings: &mut Vec<String>,
) -> Result<Basis, HostError> {
    let (t, tag_) = (refuse.t, refuse.tag_);
    let snap_lines = tag::lines(snap);
    let snap_len = snap_lines.len() as u32;
    gate::check_ranges(&p.ops, snap_len, &t.shown)?;
    let unseen = gate::unseen(&p.ops, seen, 0);
    if !unseen.is_empty() {
        let why = format!("line {} was never shown to you under that tag", unseen[0]);
        return Err(refuse.claims(store, &why));
    }
    let map = drift::LineMap::new(&snap_lines, live_lines);
    let mut offsets = Vec::with_capacity(p.ops.len());
    let mut carried = Vec::with_capacity(p.ops.len());
    for (at, op) in &p.ops {
        let found = if gate::head_or_tail(op) {
            let head = matches!(op, Op::Insert { at: Pos::Before(1), .. });
            map.edge(&snap_lines, head).map(|d| match d {
                None => (0, op.clone()),
                Some(d) => (d, shift_edge(op, d, snap_len)),
            })
        } else {
            let found = match *op {
                // An insertion needs only the two lines around its gap (docs/host.md "Edits under drift").
                Op::Insert { at: Pos::After(n), .. } => map.gap(&snap_lines, n as usize),
                Op::Insert { at: Pos::Before(n), .. } => map.gap(&snap_lines, (n as usize).saturating_sub(1)),
                _ => {
                    let (ca, cb) = gate::claim(op, snap_len);
                    let exact = matches!(op, Op::Replace { .. } | Op::Cut { .. });
                    map.offset(&snap_lines, live_lines, ca as usize, cb as usize, exact)
                }
            };
            found.map(|d| (d, shift(op, d)))
        };
        match found {
            Ok((d, moved)) => {
                offsets.push(d);
                carried.push((*at, moved));
            }
            Err(r) => return Err(refuse.moved(store, *at, r, &map, snap_len)),
        }
    }
    let moved: Vec<String> = p
        .ops
        .iter()
        .zip(&offsets)
        .filter(|(_, d)| **d != 0)
        .map(|((at, _), d)| format!("ops line {at} by {d:+}"))
        .collect();
    warnings.push(format!(
        "tag {tag_} was stale ({} changed since); the edit was carried over to the current file{}.",
        t.shown,
        if moved.is_empty() {
            " at the same line numbers".to_string()
        } else {
            format!(" with lines shifted ({})", moved.join(", "))
        }
    ));
    Ok(Basis::Drift { ops: carried })
}

/// `PUT <1` or `PUT >$` next to the line that was the first or the last (of `snap_len`), which moved by `d`.
fn shift_edge(op: &Op, d: isize, snap_len: u32) -> Op {
    let at = match op {
        Op::Insert { at: Pos::Before(1), .. } => Pos::Before((1 + d) as u32),
        Op::Insert { at: Pos::End, .. } => Pos::After((snap_len as isize + d) as u32),
        _ => return op.clone(),
    };
    match op {
        Op::Insert { src, .. } => Op::Insert { at, src: src.clone() },
        _ => op.clone(),
    }
}

/// `op` with its line numbers moved by `d` (drift recovery; head/tail insertions stay).
fn shift(op: &Op, d: isize) -> Op {
    let m = |n: u32| (n as isize + d) as u32;
    match op {
        Op::Replace { from, to, src } => Op::Replace {
            from: m(*from),
            to: m(*to),
            src: src.clone(),
        },
        Op::Cut { from, to, reg } => Op::Cut {
            from: m(*from),
            to: m(*to),
            reg: reg.clone(),
        },
        Op::Insert { at: Pos::Before(1), .. } | Op::Insert { at: Pos::End, .. } => op.clone(),
        Op::Insert {
            at: Pos::Before(n),
            src,
        } => Op::Insert {
            at: Pos::Before(m(*n)),
            src: src.clone(),
        },
        Op::Insert { at: Pos::After(n), src } => Op::Insert {
            at: Pos::After(m(*n)),
            src: src.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::edit::parse::parse;
    use crate::host::paths::Roots;

    struct Case {
        _d: tempfile::TempDir,
        t: Resolved,
        store: SnapshotStore,
    }

    fn case() -> Case {
        let d = tempfile::TempDir::new().unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        let roots = Roots::new(&d.path().join("ws"), &d.path().join("agent"), "s1").unwrap();
        let t = roots.resolve("f.txt").unwrap();
        Case {
            _d: d,
            t,
            store: SnapshotStore::new(),
        }
    }

    /// Runs the gate for `ops` under the tag of `shown` (recorded with every line seen unless `record` is false)
    /// against the live text `now`.
    fn decide_on(
        c: &mut Case,
        shown: &str,
        record: bool,
        now: &str,
        ops: &str,
    ) -> (Result<Basis, HostError>, Vec<String>) {
        let n = tag::normalize(shown.as_bytes());
        if record {
            c.store.record(&c.t.canonical, &n, Seen::All);
        }
        let version = c.store.lookup(&c.t.canonical, &n.tag).cloned();
        let (text, (digest, tag_)) = identify(now, version.as_ref());
        let live = Live {
            text: &text,
            tag: tag_,
            digest,
        };
        let lines = tag::lines(now);
        let mut w = Vec::new();
        let p = parse(ops).unwrap();
        let b = decide(&mut c.store, &c.t, &n.tag, &live, &lines, &p, version, &mut w);
        (b, w)
    }

    #[test]
    fn identify_takes_the_recorded_tag_only_for_the_same_text() {
        let mut store = SnapshotStore::new();
        let n = tag::normalize(b"a\nb\n");
        let key = std::path::Path::new("/k");
        store.record(key, &n, Seen::All);
        let v = store.lookup(key, &n.tag).cloned();
        assert_eq!(
            identify("a\r\nb\r\n", v.as_ref()).1,
            (n.digest, n.tag.clone()),
            "normalised first"
        );
        let other = tag::normalize(b"a\nc\n");
        assert_eq!(identify("a\nc\n", v.as_ref()).1, (other.digest, other.tag));
    }

    #[test]
    fn fresh_unknown_and_stale_tags() {
        let mut c = case();
        let (b, w) = decide_on(&mut c, "a\nb\n", true, "a\nb\n", "PUT 1.=1:\n+x");
        assert!(matches!(b, Ok(Basis::Fresh { seen: Some(Seen::All) })) && w.is_empty());
        // Never recorded but the live tag: no record, the provenance gate is skipped.
        let mut c = case();
        let (b, _) = decide_on(&mut c, "a\nb\n", false, "a\nb\n", "PUT 1.=1:\n+x");
        assert!(matches!(b, Ok(Basis::Fresh { seen: None })));
        // Never recorded and not the live tag: EDIT_TAG_UNKNOWN, and the live version is recorded with nothing seen.
        let mut c = case();
        let (b, _) = decide_on(&mut c, "old\n", false, "a\nb\n", "PUT 1.=1:\n+x");
        let e = b.err().unwrap();
        assert_eq!(e.code, EDIT_TAG_UNKNOWN);
        let live = tag::normalize(b"a\nb\n");
        let v = c.store.lookup(&c.t.canonical, &live.tag).unwrap();
        assert!(matches!(&v.seen, Seen::Lines(l) if l.is_empty()));
        // Stale: REM is refused, with the rows around its claims counted as seen under the live tag.
        let mut c = case();
        let (b, _) = decide_on(&mut c, "a\nb\n", true, "a\nB\n", "REM");
        let e = b.err().unwrap();
        assert_eq!(e.code, EDIT_TAG_MISMATCH);
        assert!(
            e.message.contains("REM deletes the file only under its current tag"),
            "{}",
            e.message
        );
    }

    #[test]
    fn stale_tags_are_carried_over_or_refused_with_the_moved_lines() {
        // A line added above: the replacement moves down by one.
        let shown = "a\nb\nc\nd\ne\n";
        let mut c = case();
        let (b, w) = decide_on(&mut c, shown, true, "new\na\nb\nc\nd\ne\n", "PUT 3.=3:\n+C");
        let Ok(Basis::Drift { ops }) = b else {
            panic!("not carried over: {w:?}")
        };
        assert!(matches!(ops[0].1, Op::Replace { from: 4, to: 4, .. }));
        assert!(w[0].contains("with lines shifted (ops line 1 by +1)"), "{w:?}");
        // The replaced line itself changed: refused by the one drift refusal, naming the ops line.
        let mut c = case();
        let (b, _) = decide_on(&mut c, shown, true, "a\nb\nX\nd\ne\n", "PUT 3.=3:\n+C");
        let e = b.err().unwrap();
        assert_eq!(e.code, EDIT_TAG_MISMATCH);
        assert!(
            e.message.contains("could not be carried over: ops line 1:"),
            "{}",
            e.message
        );
        assert!(e.message.contains("\n3:X"), "{}", e.message);
    }

    #[test]
    fn shifts_move_numbers_but_not_the_head_or_tail() {
        let p = parse("PUT 2.=3:\n+x\nPUT <1:\n+h\nPUT >4:\n+y\nPUT >$:\n+t").unwrap();
        let moved: Vec<Op> = p.ops.iter().map(|(_, op)| shift(op, 2)).collect();
        assert!(matches!(moved[0], Op::Replace { from: 4, to: 5, .. }));
        assert_eq!(moved[1], p.ops[1].1);
        assert!(matches!(moved[2], Op::Insert { at: Pos::After(6), .. }));
        assert_eq!(moved[3], p.ops[3].1);
        assert!(matches!(
            shift_edge(&p.ops[1].1, 3, 10),
            Op::Insert { at: Pos::Before(4), .. }
        ));
        assert!(matches!(
            shift_edge(&p.ops[3].1, -1, 10),
            Op::Insert { at: Pos::After(9), .. }
        ));
    }
}
