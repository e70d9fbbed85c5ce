//! Range checks and the provenance gate (docs/spec/host-tools.md "Gates"). Line numbers refer to the tagged
//! snapshot; every range must lie inside it; no two operations may overlap or share an anchor line. The provenance
//! gate asks the snapshot store which lines the model saw under the tag: every line a range replaces or cuts and the
//! line an insertion is anchored to must be seen (`<1` and `>$` need none: they are the head and the tail). Unseen
//! anchors are refused with EDIT_LINES_UNSEEN revealing at most 40 of them, each clipped at 512 characters; only a
//! complete reveal (all of them, none clipped) marks them seen, so the same call then succeeds.

use super::basis::Live;
use super::limits::{REVEAL_CHARS, REVEAL_LINES};
use super::parse::{Op, Pos};
use crate::host::error::{HostError, EDIT_LINES_UNSEEN, EDIT_RANGE_INVALID};
use crate::host::paths::Resolved;
use crate::host::snapshot::{LineSet, Seen, SnapshotStore};
use crate::host::tag;

/// The lines one operation claims (1-based, inclusive; `0..=0` is the head of an empty file).
pub fn claim(op: &Op, len: u32) -> (u32, u32) {
    match *op {
        Op::Replace { from, to, .. } | Op::Cut { from, to, .. } => (from, to),
        Op::Insert { at: Pos::Before(n), .. } | Op::Insert { at: Pos::After(n), .. } => {
            if len == 0 {
                (0, 0)
            } else {
                (n, n)
            }
        }
        Op::Insert { at: Pos::End, .. } => (len, len),
    }
}

/// Whether `op` is a head or tail insertion (`<1`, `>$`), which needs no seen line and survives a stale tag.
pub fn head_or_tail(op: &Op) -> bool {
    matches!(
        op,
        Op::Insert {
            at: Pos::Before(1) | Pos::End,
            ..
        }
    )
}

/// Checks every operation against a file of `len` lines and against each other.
pub fn check_ranges(ops: &[(usize, Op)], len: u32, shown: &str) -> Result<(), HostError> {
    let bad = |msg: String| HostError::new(EDIT_RANGE_INVALID, msg);
    for (at, op) in ops {
        let (a, b) = match *op {
            Op::Replace { from, to, .. } | Op::Cut { from, to, .. } => (from, to),
            Op::Insert { at: Pos::Before(1), .. } if len == 0 => continue,
            Op::Insert { at: Pos::Before(n), .. } | Op::Insert { at: Pos::After(n), .. } => (n, n),
            Op::Insert { at: Pos::End, .. } => continue,
        };
        if b > len {
            return Err(bad(format!(
                "ops line {at}: line {b} is past the end of {shown}, which has {len} lines under this tag. Use line \
                 numbers from 1 to {len} as Read shows them (`PUT >$:` appends)."
            )));
        }
        debug_assert!(a >= 1 && a <= b);
    }
    let mut claims: Vec<(u32, u32, usize)> = ops
        .iter()
        .map(|(at, op)| {
            let (a, b) = claim(op, len);
            (a, b, *at)
        })
        .collect();
    claims.sort_unstable();
    for w in claims.windows(2) {
        let ((a0, b0, l0), (a1, _, l1)) = (w[0], w[1]);
        if a1 <= b0 {
            let (x, y) = if l0 < l1 { (l0, l1) } else { (l1, l0) };
            return Err(bad(format!(
                "ops lines {x} and {y} both touch line {} (from {a0}); operations may not overlap or share an anchor \
                 line. Merge them into one operation (one PUT N.=M: with all the new rows).",
                a1.max(a0)
            )));
        }
    }
    Ok(())
}

/// Anchor lines of `ops` that are not in `seen`, sorted (at most `limit + 1` collected).
pub fn unseen(ops: &[(usize, Op)], seen: &Seen, limit: usize) -> Vec<u32> {
    let mut out = Vec::new();
    let mut set = LineSet::new();
    for (_, op) in ops {
        if head_or_tail(op) {
            continue;
        }
        let (a, b) = match *op {
            Op::Replace { from, to, .. } | Op::Cut { from, to, .. } => (from, to),
            Op::Insert {
                at: Pos::Before(n) | Pos::After(n),
                ..
            } => (n, n),
            Op::Insert { at: Pos::End, .. } => continue,
        };
        match seen {
            Seen::All => return Vec::new(),
            Seen::Lines(s) => {
                for n in a..=b {
                    if !s.contains(n) && !set.contains(n) {
                        set.insert(n);
                    }
                }
            }
        }
    }
    for &(a, b) in set.ranges() {
        for n in a..=b {
            out.push(n);
            if out.len() > limit {
                return out;
            }
        }
    }
    out
}

/// The EDIT_LINES_UNSEEN failure revealing `unseen` lines of `lines` (the tagged text). Returns the failure and the
/// lines to mark seen (`Some` only for a complete reveal).
pub fn reveal(shown: &str, tag_: &str, lines: &[&str], unseen: &[u32]) -> (HostError, Option<LineSet>) {
    let complete_count = unseen.len() <= REVEAL_LINES;
    let mut text = tag::header(shown, tag_);
    let mut clipped_any = false;
    let mut mark = LineSet::new();
    for &n in unseen.iter().take(REVEAL_LINES) {
        let line = lines.get(n as usize - 1).copied().unwrap_or("");
        let (s, clipped) = tag::clip_line(line, REVEAL_CHARS);
        clipped_any |= clipped;
        text.push('\n');
        tag::row(&mut text, n as usize, &s);
        mark.insert(n);
    }
    let complete = complete_count && !clipped_any;
    let next = if complete {
        "These lines now count as seen: if they are the lines you meant, send the same Edit again unchanged; \
         otherwise fix the line numbers."
            .to_string()
    } else if !complete_count {
        format!(
            "More than {REVEAL_LINES} anchor lines are unseen, so nothing was marked seen. Read {shown} (the lines \
             your operations touch), then send the Edit with the tag Read shows."
        )
    } else {
        format!(
            "Some lines were longer than {REVEAL_CHARS} characters and are shown clipped, so nothing was marked seen. \
             Read {shown} at those lines, then send the Edit again."
        )
    };
    let e = HostError::new(
        EDIT_LINES_UNSEEN,
        format!(
            "the operations touch lines of {shown} you have not been shown under tag {tag_}; nothing was changed. \
             {next}\n{text}"
        ),
    );
    (e, complete.then_some(mark))
}

/// The range gate on the live file: every operation inside it, none overlapping (drift recovery already checked
/// them against the shown version, `checked`).
pub fn ranges(ops: &[(usize, Op)], live_len: u32, shown: &str, checked: bool) -> Result<(), HostError> {
    if checked {
        return Ok(());
    }
    check_ranges(ops, live_len, shown)
}

/// The provenance gate of a call whose tag is the live file's and whose version was recorded with `seen` lines:
/// every anchor must have been seen (an unseen one is revealed, and marked seen only by a complete reveal), and REM
/// needs at least one seen line of a non-empty file.
pub fn provenance(
    store: &mut SnapshotStore,
    t: &Resolved,
    live: &Live<'_>,
    live_lines: &[&str],
    ops: &[(usize, Op)],
    seen: &Seen,
    rem: bool,
) -> Result<(), HostError> {
    // REM claims no anchor, so the check below would pass it whatever was seen: a file none of whose lines a result
    // showed (a tag known only from an error message) is not deleted.
    if rem && !live_lines.is_empty() && matches!(seen, Seen::Lines(l) if l.is_empty()) {
        return Err(HostError::new(
            EDIT_LINES_UNSEEN,
            format!(
                "REM deletes {} but no result in this session showed any of its lines (a tag alone is not \
                 provenance). Nothing was changed. Read {} first, then send the REM again with the tag Read shows.",
                t.shown, t.shown
            ),
        ));
    }
    let unseen = unseen(ops, seen, REVEAL_LINES);
    if unseen.is_empty() {
        return Ok(());
    }
    let (e, mark) = reveal(&t.shown, &live.tag, live_lines, &unseen);
    if let Some(m) = mark {
        store.mark_seen(&t.canonical, &live.digest, &m);
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::edit::parse::parse;

    #[test]
    fn ranges_must_fit_and_never_overlap_or_share_anchors() {
        let ck = |ops: &str, len| check_ranges(&parse(ops).unwrap().ops, len, "f");
        assert!(ck("PUT 1.=3:\n+x\nPUT >3:\n+y", 3).is_err(), "shared anchor 3");
        assert!(ck("PUT <2:\n+x\nPUT >2:\n+y", 3).is_err(), "shared anchor 2");
        assert!(ck("CUT 2.=4\nPUT 3.=3:\n+y", 5).is_err());
        assert!(ck("PUT >$:\n+x\nPUT >3:\n+y", 3).is_err(), ">$ anchors the last line");
        assert!(ck("PUT >$:\n+x\nPUT >$:\n+y", 3).is_err());
        assert!(ck("PUT >1:\n+x\nPUT <2:\n+y\nCUT 3.=3", 3).is_ok());
        assert!(ck("PUT <1:\n+x", 0).is_ok());
        assert!(ck("PUT >$:\n+x", 0).is_ok());
        assert!(
            ck("PUT <1:\n+x\nPUT >$:\n+y", 0).is_err(),
            "both at the head of an empty file"
        );
        let e = ck("PUT 3.=4:\n+x", 3).unwrap_err();
        assert_eq!(e.code, "EDIT_RANGE_INVALID");
        assert!(e.message.contains("has 3 lines"), "{}", e.message);
        assert!(ck("PUT >4:\n+x", 3).is_err());
        assert!(ck("PUT <1:\n+x", 3).is_ok());
        let e = ck("PUT 1.=2:\n+a\nCUT 2.=3", 3).unwrap_err();
        assert!(e.message.contains("ops lines 1 and 3"), "{}", e.message);
    }

    #[test]
    fn unseen_anchors_and_the_reveal() {
        let p = parse("PUT 2.=4:\n+x\nPUT >6:\n+y\nPUT <1:\n+h\nPUT >$:\n+t").unwrap();
        let mut s = LineSet::new();
        s.insert(3);
        assert_eq!(unseen(&p.ops, &Seen::Lines(s.clone()), 40), vec![2, 4, 6]);
        assert!(unseen(&p.ops, &Seen::All, 40).is_empty());
        let lines = ["l1", "l2", "l3", "l4", "l5", "l6"];
        let (e, mark) = reveal("f", "ABCD", &lines, &[2, 4, 6]);
        assert_eq!(e.code, "EDIT_LINES_UNSEEN");
        assert!(e.message.ends_with("[f#ABCD]\n2:l2\n4:l4\n6:l6"), "{}", e.message);
        assert_eq!(mark.unwrap().count(), 3);
        // 41 unseen lines: 40 shown, nothing marked.
        let many: Vec<u32> = (1..=41).collect();
        let long: Vec<&str> = vec!["x"; 41];
        let (e, mark) = reveal("f", "ABCD", &long, &many);
        assert!(mark.is_none() && e.message.contains("More than 40"));
        assert!(e.message.contains("\n40:x") && !e.message.contains("\n41:x"));
        let (_, mark) = reveal("f", "ABCD", &long, &many[..40]);
        assert_eq!(mark.unwrap().count(), 40);
        // A line over 512 characters is clipped: incomplete.
        let big = "y".repeat(REVEAL_CHARS + 1);
        let (e, mark) = reveal("f", "ABCD", &[big.as_str()], &[1]);
        assert!(mark.is_none() && e.message.contains("clipped"));
        let ok = "y".repeat(REVEAL_CHARS);
        assert!(reveal("f", "ABCD", &[ok.as_str()], &[1]).1.is_some());
    }
}
