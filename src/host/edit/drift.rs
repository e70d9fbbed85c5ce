//! Drift recovery (docs/host.md "Edits under drift"): the model's tag names a snapshot that is no longer the live
//! file. The snapshot's lines are diffed against the live lines (`similar`, Myers, with a time bound), comparing lines
//! without their surrounding whitespace, so a reindented or trailing-space neighbour still counts as the same line.
//! An operation is carried over only when
//! - the lines it replaces or cuts are byte-identical in the live file (a change to them is a conflict),
//! - it and one neighbour on each side (the evidence) moved by one and the same offset, and
//! - every alignment of the two files agrees on that (`certain.rs`): a line in a run of equal lines (`}` lines, a
//!   repeated block, `item` lines one more of which was added) is not evidence that it stayed put, since the drift
//!   could have added or removed any line of the run; where the alignments disagree, the place is ambiguous.
//!
//! `<1` and `>$` follow their neighbour: when lines were added above the first line (or below the last), the
//! insertion goes next to the line it was written against, proven the same way; the head or tail of a file whose
//! first (last) line was itself changed stays the head (tail). Each operation gets its own offset, so edits above and
//! between operations are carried over; the mapping is monotonic, so carried operations keep their order and never
//! overlap.

use super::certain::Certainty;
use similar::{capture_diff_deadline, Algorithm, DiffOp};
use std::time::{Duration, Instant};

/// How long the diff may run before it settles for a coarser (still correct) answer.
const DIFF_BUDGET: Duration = Duration::from_secs(2);

/// The most steps one alignment sweep may take (`Certainty::within`): about a second on a busy machine. A 2 MiB
/// file of code-like lines costs about a tenth of it; one of short lines repeated thousands of times is over it.
const ALIGN_BUDGET: u64 = 200_000_000;

/// The longest span of doubt (in lines) a refusal shows whole; a longer one shows only the places it names.
const SHORT_SPAN: usize = 24;

/// A line as the diff compares it: without surrounding whitespace.
fn key(s: &str) -> &str {
    s.trim()
}

/// Why an operation could not be carried over, and which live lines (1-based, inclusive) show it.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub why: String,
    pub show: Vec<(usize, usize)>,
}

/// The old→new line map of a snapshot against the live file (0-based; `None` = changed or removed).
pub struct LineMap {
    map: Vec<Option<usize>>,
    new_len: usize,
    /// Whether a pair of the diff is one every alignment of the two files makes (`certain.rs`); `None` when that
    /// would cost more than `ALIGN_BUDGET` (every question then refuses).
    cert: Option<Certainty>,
}

/// A line for a message: clipped at 80 characters.
fn quote(s: &str) -> String {
    let t: String = s.trim().chars().take(80).collect();
    if t.len() < s.trim().len() {
        format!("`{t}…`")
    } else {
        format!("`{t}`")
    }
}

impl LineMap {
    pub fn new(old: &[&str], new: &[&str]) -> LineMap {
        LineMap::with_budget(old, new, ALIGN_BUDGET)
    }

    /// [`LineMap::new`] with the alignment check's budget `budget` (tests).
    pub fn with_budget(old: &[&str], new: &[&str], budget: u64) -> LineMap {
        let ok: Vec<&str> = old.iter().map(|l| key(l)).collect();
        let nk: Vec<&str> = new.iter().map(|l| key(l)).collect();
        let ops = capture_diff_deadline(
            Algorithm::Myers,
            &ok,
            0..ok.len(),
            &nk,
            0..nk.len(),
            Some(Instant::now() + DIFF_BUDGET),
        );
        let mut map = vec![None; old.len()];
        for op in ops {
            if let DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = op
            {
                for k in 0..len {
                    map[old_index + k] = Some(new_index + k);
                }
            }
        }
        LineMap {
            map,
            new_len: new.len(),
            cert: Certainty::within(old, new, key, budget),
        }
    }

    /// The alignment check, or the refusal when the two files were too costly to align.
    fn cert(&self) -> Result<&Certainty, Refusal> {
        self.cert.as_ref().ok_or_else(|| Refusal {
            why: format!(
                "the version shown ({} lines) and the current file ({} lines) are too large to prove where the edit \
                 belongs now (many repeated lines); Read the file again and redo the change against it",
                self.map.len(),
                self.new_len
            ),
            show: Vec::new(),
        })
    }

    /// Where old lines `a..=b` (1-based) are most likely now: moved by the offset of the nearest unchanged line
    /// (for the rows a refusal shows).
    pub fn guess(&self, a: usize, b: usize) -> (usize, usize) {
        let n = self.map.len();
        if n == 0 {
            return (1, 1);
        }
        let a0 = a.clamp(1, n) - 1;
        let mut d = 0isize;
        for k in 0..n {
            let probe = [a0.checked_sub(k), Some(a0 + k).filter(|&i| i < n)];
            if let Some((i, j)) = probe.iter().flatten().find_map(|&i| self.map[i].map(|j| (i, j))) {
                d = j as isize - i as isize;
                break;
            }
        }
        let m = |x: usize| ((x as isize + d).max(1) as usize).min(self.new_len.max(1));
        (m(a), m(b))
    }

    /// The offset by which the lines `a..=b` (1-based claim of one operation) moved, proven by their neighbours.
    /// `exact`: the operation replaces or cuts these lines, so they must be byte-identical in the live file.
    pub fn offset(&self, old: &[&str], new: &[&str], a: usize, b: usize, exact: bool) -> Result<isize, Refusal> {
        let n = self.map.len();
        let (wa, wb) = (a.saturating_sub(1).max(1), (b + 1).min(n));
        let d = self.delta(old, wa, wb)?;
        // The lines themselves must be placed by every alignment; a neighbour another alignment would call a line
        // added since does not change where they are (only the diff's alignment must keep it next to them).
        self.certain(old, a, b, d)?;
        if exact {
            for i in a..=b {
                let j = (i as isize - 1 + d) as usize;
                if old[i - 1] != new[j] {
                    return Err(Refusal {
                        why: format!(
                            "line {i} is one the edit replaces, and its whitespace changed since the tag was shown (it \
                             is line {} now)",
                            j + 1
                        ),
                        show: vec![(j + 1, j + 1)],
                    });
                }
            }
        }
        Ok(d)
    }

    /// The offset of the gap after old line `after` (1-based; an insertion between `after` and `after + 1`), proven
    /// by the two lines that face it: lines drifting in further out do not move the gap, lines drifting into it
    /// make its place a conflict.
    pub fn gap(&self, old: &[&str], after: usize) -> Result<isize, Refusal> {
        let n = self.map.len();
        let (wa, wb) = (after.clamp(1, n.max(1)), (after + 1).min(n));
        let d = self.delta(old, wa, wb)?;
        self.certain(old, wa, wb, d)?;
        Ok(d)
    }

    /// Where `PUT <1` (`head`) or `PUT >$` goes: `None` (the head or tail) while the snapshot's first (last) line is
    /// still the first (last) line or was itself changed; otherwise `Some` offset of that line, proven like any other
    /// anchor, so the insertion goes next to it.
    pub fn edge(&self, old: &[&str], head: bool) -> Result<Option<isize>, Refusal> {
        let n = self.map.len();
        if n == 0 {
            return Ok(None);
        }
        let (i, at_edge) = if head {
            (0, 0)
        } else {
            (n - 1, self.new_len.saturating_sub(1))
        };
        // The evidence is the edge line alone: a change to its neighbour says nothing about where the edge is.
        let w = i + 1;
        match self.map[i] {
            // Changed or removed: the edge stays where it is, if every alignment agrees the line is gone.
            None => match self.cert()?.gone(i) {
                Ok(()) => Ok(None),
                Err(doubt) => {
                    let k = doubt.other.unwrap_or(0);
                    Err(Refusal {
                        why: format!(
                            "line {w} ({}) may have been changed since the tag was shown or may still be line {} of \
                             the current file (lines like it were added or removed next to it), so the {} of the file \
                             is ambiguous",
                            quote(old[i]),
                            k + 1,
                            if head { "head" } else { "tail" }
                        ),
                        show: vec![(doubt.span.0 + 1, doubt.span.1 + 1)],
                    })
                }
            },
            Some(j) => {
                let d = self.delta(old, w, w)?;
                // Still at the edge, or moved: either way the line must be placed beyond doubt (a copy of it
                // elsewhere that another alignment could pick makes the edge ambiguous too).
                self.certain(old, w, w, d)?;
                Ok((j != at_edge).then_some(d))
            }
        }
    }

    /// Whether the pairs of old lines `wa` and `wb` (1-based) with their lines moved by `d` are made by every
    /// alignment of the two files (the lines between them, moved by `d` too, then are as well: two equal runs
    /// between two certain pairs align only one way).
    fn certain(&self, old: &[&str], wa: usize, wb: usize, d: isize) -> Result<(), Refusal> {
        for i in if wa == wb { vec![wa] } else { vec![wa, wb] } {
            let j = (i as isize - 1 + d) as usize;
            if let Err(doubt) = self.cert()?.pair(i - 1, j) {
                let (why, show) = match doubt.other {
                    Some(k) => {
                        // Both places whole (the lines `wa..=wb` at each), so a retry built from the rows sees that
                        // they are alike instead of one of them alone; the span between them only when it is short,
                        // so the rows are not cut off before the second place.
                        let at = |shift: isize| {
                            let lo = (wa as isize + shift).max(1) as usize;
                            (lo, ((wb as isize + shift).max(1) as usize).min(self.new_len.max(1)))
                        };
                        let mut show = vec![at(d), at(d + k as isize - j as isize)];
                        if doubt.span.1 - doubt.span.0 < SHORT_SPAN {
                            show.push((doubt.span.0 + 1, doubt.span.1 + 1));
                        }
                        (
                            format!(
                                "line {i} ({}) could be line {} or line {} of the current file (lines like it were added \
                                 or removed next to it since the tag was shown), so its place is ambiguous (the lines \
                                 there match at both places: Read the file and choose one)",
                                quote(old[i - 1]),
                                j + 1,
                                k + 1
                            ),
                            show,
                        )
                    }
                    None => (
                        format!(
                            "line {i} ({}) could be line {} of the current file or a line removed since the tag was \
                             shown (lines like it were added or removed next to it), so its place is ambiguous",
                            quote(old[i - 1]),
                            j + 1
                        ),
                        vec![(doubt.span.0 + 1, doubt.span.1 + 1)],
                    ),
                };
                return Err(Refusal { why, show });
            }
        }
        Ok(())
    }

    /// The one offset by which old lines `wa..=wb` (1-based) all moved.
    fn delta(&self, old: &[&str], wa: usize, wb: usize) -> Result<isize, Refusal> {
        let mut delta: Option<isize> = None;
        for i in wa..=wb {
            let Some(j) = self.map[i - 1] else {
                let (ga, _) = self.guess(i, i);
                return Err(Refusal {
                    why: format!(
                        "line {i} ({}) was changed or removed since the tag was shown",
                        quote(old[i - 1])
                    ),
                    show: vec![(ga, ga)],
                });
            };
            let d = j as isize - (i as isize - 1);
            match delta {
                None => delta = Some(d),
                Some(x) if x == d => {}
                Some(_) => {
                    return Err(Refusal {
                        why: format!("lines were inserted or removed between lines {} and {i}", i - 1),
                        show: vec![(j.max(1), j + 1)],
                    })
                }
            }
        }
        Ok(delta.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    fn off(old: &str, new: &str, a: usize, b: usize) -> Result<isize, String> {
        let (o, n) = (lines(old), lines(new));
        LineMap::new(&o, &n).offset(&o, &n, a, b, true).map_err(|r| r.why)
    }

    #[test]
    fn a_window_repeated_only_in_the_version_shown_is_ambiguous() {
        // `k k` is once in the live file but twice in the tagged text, and its neighbour below changed: the live
        // `k k` may be either copy (the other one then changed).
        let why = off("k\nk\nX\nk\nk", "k\nk\nY\nk\nQ", 1, 1).unwrap_err();
        assert!(
            why.contains("line 1 (`k`) could be line 1 of the current file or a line removed"),
            "{why}"
        );
    }

    #[test]
    fn an_insertion_is_proven_by_the_two_lines_of_its_gap() {
        let old = "a\nb\nc\nd\ne";
        let (o, n) = (lines(old), lines("a\nb\nx\ny\nc\nd\ne"));
        let map = LineMap::new(&o, &n);
        // After line 3 (`c`): lines drifted in between 2 and 3, outside the gap, so it moved by 2.
        assert_eq!(map.gap(&o, 3), Ok(2));
        // After line 2 (`b`): the drift landed in that very gap, so its place is a conflict.
        assert!(map
            .gap(&o, 2)
            .unwrap_err()
            .why
            .contains("inserted or removed between lines 2 and 3"));
        // A replacement of line 3 still needs its neighbour above, which the drift separated from it.
        assert!(map.offset(&o, &n, 3, 3, true).is_err());
        // After the last line and after line 0 (before the first) need only the one line there is.
        assert_eq!(map.gap(&o, 5), Ok(2));
        assert_eq!(map.gap(&o, 0), Ok(0));
    }

    #[test]
    fn insertions_above_shift_and_deletions_shift_back() {
        let old = "a\nb\nc\nd\ne";
        assert_eq!(off(old, "x\ny\na\nb\nc\nd\ne", 3, 3), Ok(2));
        // The first line after a prepend and the last line after an append are carried over too.
        assert_eq!(off(old, "x\ny\na\nb\nc\nd\ne", 1, 1), Ok(2));
        assert_eq!(off(old, "a\nb\nc\nd\ne\nx", 5, 5), Ok(0));
        assert_eq!(off(old, "b\nc\nd\ne", 3, 4), Ok(-1));
        assert!(off(old, "b\nc\nd\ne", 5, 5).is_ok());
    }

    #[test]
    fn changed_neighbours_or_duplicates_refuse() {
        let old = "a\nb\nc\nd\ne";
        let e = off(old, "a\nB\nc\nd\ne", 3, 3).unwrap_err();
        assert!(e.contains("line 2 (`b`) was changed"), "{e}");
        assert!(off(old, "a\nB\nc\nd\ne", 4, 4).is_ok());
        // The block a..c duplicated above, and nothing around it to tell the copies apart: ambiguous.
        let e = off("a\nb\nc", "a\nb\nc\na\nb\nc", 2, 2).unwrap_err();
        assert!(
            e.contains("line 2 (`b`) could be line 2 or line 5 of the current file"),
            "{e}"
        );
        // A line inserted between two neighbours: the window was split.
        assert!(off("p\nq\nr\ns", "p\nq\nNEW\nr\ns", 2, 3)
            .unwrap_err()
            .contains("between lines 2 and 3"));
        assert_eq!(off("p\nq\nr\ns", "p\nq\nNEW\nr\ns", 4, 4), Ok(1));
        // A replaced line whose content changed is a conflict, even if only its indentation did.
        assert!(off("a\nb\nc", "a\nb!\nc", 2, 2).is_err());
        assert!(off("a\nb\nc", "a\n  b\nc", 2, 2)
            .unwrap_err()
            .contains("whitespace changed"));
    }

    #[test]
    fn repeated_windows_are_placed_where_every_alignment_agrees() {
        // `}` / `}` repeats in the version read; every alignment keeps the whole file below `top`.
        let old = "a\n}\n}\n}\nb\n}\n}\n}\nc";
        let new = format!("top\n{old}");
        assert_eq!(off(old, &new, 3, 3), Ok(1));
        // The edited window duplicated elsewhere: its surroundings tell the original from the copy.
        let old = "h\ni\nk\nl\nm\nn";
        let new = "k\nl\nm\nh\ni\nk\nl\nm\nn";
        assert_eq!(off(old, new, 4, 4), Ok(3));
        // The whole file copied: either copy is the original, so refused, showing every place the line could be.
        let (o, n) = (lines("k\nl\nm"), lines("k\nl\nm\nk\nl\nm"));
        let r = LineMap::new(&o, &n).offset(&o, &n, 2, 2, true).unwrap_err();
        assert_eq!(r.show, vec![(2, 2), (5, 5), (2, 5)]);
        // Neighbours that changed around a repeated window do not make it ambiguous when no other alignment is
        // as long: the first copy is still the first.
        assert_eq!(
            off("P\nk\nl\nm\nQ\nk\nl\nm\nR", "P2\nk\nl\nm\nQ2\nk\nl\nm\nR2", 3, 3),
            Ok(0)
        );
    }

    #[test]
    fn whitespace_only_changes_of_neighbours_are_still_evidence() {
        assert_eq!(off("a\nb\nc", "a  \nb\n\tc", 2, 2), Ok(0));
        assert_eq!(off("a\nb\nc", "x\n  a\nb\nc ", 2, 2), Ok(1));
    }

    #[test]
    fn head_and_tail_follow_their_neighbour() {
        let edge = |old: &str, new: &str, head| {
            let (o, n) = (lines(old), lines(new));
            LineMap::new(&o, &n).edge(&o, head).map_err(|r| r.why)
        };
        assert_eq!(edge("a\nb\nc", "a\nb\nc\nd", true), Ok(None));
        assert_eq!(edge("a\nb\nc", "x\ny\na\nb\nc", true), Ok(Some(2)));
        assert_eq!(
            edge("a\nb\nc", "A\nb\nc", true),
            Ok(None),
            "a changed first line stays the head"
        );
        assert_eq!(edge("a\nb\nc", "a\nb\nc\nx\ny", false), Ok(Some(0)));
        assert_eq!(edge("x\na\nb\nc", "a\nb\nc\nx", false), Ok(Some(-1)));
        assert_eq!(edge("a\nb\nc", "x\na\nb\nc", false), Ok(None));
        assert!(edge("a\nb", "x\na\nb\na\nb", true).unwrap_err().contains("ambiguous"));
        assert!(edge("a\nb\nc", "a\nb\na\nb\nc", true)
            .unwrap_err()
            .contains("ambiguous"));
    }

    #[test]
    fn a_line_added_inside_a_run_of_equal_lines_makes_the_run_ambiguous() {
        // `sed -i '1a item'`: the fourth `item` could be any of the run, so the middle one's place is unknown.
        let (old, new) = ("begin\nitem\nitem\nitem\nend", "begin\nitem\nitem\nitem\nitem\nend");
        let e = off(old, new, 3, 3).unwrap_err();
        assert!(e.contains("so its place is ambiguous"), "{e}");
        let (o, n) = (lines(old), lines(new));
        let map = LineMap::new(&o, &n);
        assert!(map.gap(&o, 2).is_err() && map.gap(&o, 3).is_err());
        // Outside the run every alignment agrees: `begin` stayed, `end` moved by one.
        assert_eq!(
            off(old, new, 5, 5).map_err(|_| ()),
            Err(()),
            "its neighbour is in the run"
        );
        assert_eq!(map.gap(&o, 0), Ok(0));
        assert_eq!(map.edge(&o, false).map_err(|r| r.why), Ok(None));
    }

    #[test]
    fn the_tail_is_proven_by_the_last_line_alone() {
        // The line above the last one changed: `>$` still belongs after `third`, which is still the last line.
        let (o, n) = (lines("first\nsecond\nthird"), lines("first\nSECOND\nthird"));
        assert_eq!(LineMap::new(&o, &n).edge(&o, false).map_err(|r| r.why), Ok(None));
        assert_eq!(LineMap::new(&o, &n).edge(&o, true).map_err(|r| r.why), Ok(None));
        // A common last line (`}`) whose neighbour changed is still certain: no other alignment moves it.
        let (o, n) = (lines("a\n}\nb\n}"), lines("a\n}\nB\n}"));
        assert_eq!(LineMap::new(&o, &n).edge(&o, false).map_err(|r| r.why), Ok(None));
    }

    #[test]
    fn over_the_alignment_budget_every_carry_over_is_refused() {
        let (o, n) = (lines("a\nb\nc"), lines("x\na\nb\nc"));
        // Three old lines, one word each and one equal new line each: 6 steps.
        assert_eq!(LineMap::with_budget(&o, &n, 6).offset(&o, &n, 2, 2, true), Ok(1));
        let map = LineMap::with_budget(&o, &n, 5);
        let why = map.offset(&o, &n, 2, 2, true).unwrap_err().why;
        assert!(why.contains("too large to prove where the edit belongs"), "{why}");
        assert!(map.gap(&o, 1).is_err() && map.edge(&o, true).is_err());
    }

    #[test]
    fn guess_follows_the_nearest_unchanged_line() {
        let (o, n) = (lines("a\nb\nc\nd"), lines("x\nx\na\nB\nc\nd"));
        assert_eq!(LineMap::new(&o, &n).guess(2, 2), (4, 4));
    }
}
