//! Drift recovery (docs/spec/host-tools.md "Gates"): the model's tag names a snapshot that is no longer the live file.
//! The snapshot's lines are diffed against the live lines (`similar`, Myers, with a time bound); an operation is
//! carried over only when every line it touches and its neighbours on both sides are unchanged lines that moved by one
//! and the same offset, an operation at the file's first or last line still is at the first or last line, and the
//! whole window (neighbours included) occurs exactly once in the live file (so a duplicated block refuses instead of
//! picking a copy). Each operation gets its own offset, so edits above and between operations are carried over;
//! the mapping is monotonic, so carried operations keep their order and never overlap.

use similar::{capture_diff_deadline, Algorithm, DiffOp};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long the diff may run before it settles for a coarser (still correct) answer.
const DIFF_BUDGET: Duration = Duration::from_secs(2);

/// The old→new line map of a snapshot against the live file (0-based; `None` = changed or removed).
pub struct LineMap {
    map: Vec<Option<usize>>,
    new_len: usize,
    /// Live line index by content, for the uniqueness check.
    by_line: HashMap<String, Vec<usize>>,
}

impl LineMap {
    pub fn new(old: &[&str], new: &[&str]) -> LineMap {
        let ops = capture_diff_deadline(
            Algorithm::Myers,
            old,
            0..old.len(),
            new,
            0..new.len(),
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
        let mut by_line: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, l) in new.iter().enumerate() {
            by_line.entry((*l).to_string()).or_default().push(i);
        }
        LineMap {
            map,
            new_len: new.len(),
            by_line,
        }
    }

    /// The offset by which old lines `a..=b` (1-based claim of one operation) moved, checked with their neighbours;
    /// `Err` says why the operation cannot be carried over.
    pub fn offset(&self, old: &[&str], new: &[&str], a: usize, b: usize) -> Result<isize, String> {
        let old_len = self.map.len();
        let wa = a.saturating_sub(1).max(1);
        let wb = (b + 1).min(old_len);
        let mut delta: Option<isize> = None;
        for i in wa..=wb {
            let Some(j) = self.map[i - 1] else {
                return Err(format!("line {i} changed or was removed since the tag was shown"));
            };
            let d = j as isize - (i as isize - 1);
            match delta {
                None => delta = Some(d),
                Some(x) if x == d => {}
                Some(_) => return Err(format!("lines around line {i} were split by an insertion or deletion")),
            }
        }
        let d = delta.unwrap_or(0);
        if a == 1 && d != 0 {
            return Err("line 1 is no longer the first line".to_string());
        }
        if b == old_len && (b as isize + d) as usize != self.new_len {
            return Err(format!("line {b} is no longer the last line"));
        }
        // The window must occur exactly once in the live file.
        let window = &old[wa - 1..wb];
        let starts = self.by_line.get(window[0]).map_or(&[][..], |v| v.as_slice());
        let hits = starts
            .iter()
            .filter(|&&s| s + window.len() <= new.len() && new[s..s + window.len()] == *window)
            .count();
        if hits != 1 {
            return Err(format!(
                "lines {wa}-{wb} occur {hits} times in the current file, so their place is ambiguous"
            ));
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    #[test]
    fn insertions_above_shift_and_deletions_shift_back() {
        let old = lines("a\nb\nc\nd\ne");
        let new = lines("x\ny\na\nb\nc\nd\ne");
        let m = LineMap::new(&old, &new);
        assert_eq!(m.offset(&old, &new, 3, 3), Ok(2));
        assert!(m.offset(&old, &new, 1, 1).unwrap_err().contains("first line"));
        let new2 = lines("b\nc\nd\ne");
        let m2 = LineMap::new(&old, &new2);
        assert_eq!(m2.offset(&old, &new2, 3, 4), Ok(-1));
        assert!(m2.offset(&old, &new2, 5, 5).is_ok());
    }

    #[test]
    fn changed_neighbours_or_duplicates_refuse() {
        let old = lines("a\nb\nc\nd\ne");
        let new = lines("a\nB\nc\nd\ne");
        let m = LineMap::new(&old, &new);
        assert!(m.offset(&old, &new, 3, 3).unwrap_err().contains("line 2"));
        assert!(m.offset(&old, &new, 4, 4).is_ok());
        // The block a..c duplicated above: the window occurs twice.
        let old = lines("a\nb\nc\nz");
        let new = lines("a\nb\nc\na\nb\nc\nz");
        let m = LineMap::new(&old, &new);
        assert!(m.offset(&old, &new, 2, 2).unwrap_err().contains("ambiguous"));
        // A line between two neighbours inserted: the window was split.
        let old = lines("p\nq\nr\ns");
        let new = lines("p\nq\nNEW\nr\ns");
        let m = LineMap::new(&old, &new);
        assert!(m.offset(&old, &new, 2, 3).is_err());
        assert_eq!(m.offset(&old, &new, 4, 4), Ok(1));
    }
}
