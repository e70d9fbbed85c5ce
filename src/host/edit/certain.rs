//! Whether a line's place in the current file is certain (docs/host.md "Edits under drift"): the version the model
//! was shown and the current file usually admit more than one alignment (a run of equal lines into which one more
//! was inserted can be aligned with the new line anywhere in the run). The diff picks one of them; an edit carried
//! over by it is right only when every other alignment agrees. "Alignment" here is a longest common subsequence of
//! the two files' lines (compared as the diff compares them): drift is taken to be the fewest lines added and
//! removed that explain the change, and a line is placed only when all of those explanations put it in one place.
//!
//! Old line `i` is certainly new line `j` when some longest alignment pairs them and no longest alignment crosses
//! old line `i` any other way: neither pairing it with another line nor leaving it out. With `F(i, k)` the longest
//! alignment of the first `i` old lines with the first `k` new lines and `B(i, k)` that of the rest, an alignment
//! crosses old line `i` at new column `k` by leaving the line out (`F(i, k) + B(i + 1, k)`) or by pairing it with new
//! line `k` (`F(i, k) + 1 + B(i + 1, k + 1)`); the pair is certain when only column `j`'s pairing reaches the longest
//! length. `F` and `B` rows come from the bit-parallel LCS recurrence (Hyyrö 2004: one machine word per 64 columns
//! and row), computed from checkpoints every `step` rows, so a question costs at most `step` rows of the sweep.

use std::collections::HashMap;

/// At most this many checkpoints per direction (memory: `CHECKPOINTS` rows of `m / 64` words each way).
const CHECKPOINTS: usize = 64;

/// The least checkpoint spacing (small files: a question recomputes at most this many rows).
const MIN_STEP: usize = 32;

/// The shown version (`old`) and the current file (`new`) as line ids, and the sweeps over them.
pub struct Certainty {
    old: Vec<u32>,
    new: Vec<u32>,
    /// New-file positions of each id, ascending.
    at: Vec<Vec<u32>>,
    words: usize,
    step: usize,
    /// `fwd[c]`: the row after old lines `0 .. c * step`. `bwd[c]`: the row of the reversed files after the last
    /// `c * step` old lines.
    fwd: Vec<Vec<u64>>,
    bwd: Vec<Vec<u64>>,
    /// The length of a longest alignment.
    total: usize,
}

/// Why a pair is not certain: another alignment puts the old line on new line `Some(k)` or leaves it out (`None`);
/// `span` covers every new line some longest alignment pairs it with or leaves it next to (0-based, inclusive).
#[derive(Debug, PartialEq, Eq)]
pub struct Doubt {
    pub other: Option<usize>,
    pub span: (usize, usize),
}

impl Certainty {
    /// The two files, compared by `key`.
    #[cfg(test)]
    pub fn new<'a>(old: &[&'a str], new: &[&'a str], key: impl Fn(&'a str) -> &'a str) -> Certainty {
        Certainty::within(old, new, key, u64::MAX).expect("no budget")
    }

    /// The two files, compared by `key`, when one sweep costs at most `budget` steps (each old line: a step per
    /// machine word of the new file and one per new line equal to it); `None` when it would cost more, so a caller
    /// refuses instead of stalling (a file of short repeated lines costs quadratically, docs/host.md "Edits under
    /// drift").
    pub fn within<'a>(
        old: &[&'a str],
        new: &[&'a str],
        key: impl Fn(&'a str) -> &'a str,
        budget: u64,
    ) -> Option<Certainty> {
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let mut id = |s: &'a str| -> u32 {
            let n = ids.len() as u32;
            *ids.entry(key(s)).or_insert(n)
        };
        let new_ids: Vec<u32> = new.iter().map(|l| id(l)).collect();
        let old_ids: Vec<u32> = old.iter().map(|l| id(l)).collect();
        let distinct = new_ids.iter().chain(&old_ids).max().map_or(0, |&x| x as usize + 1);
        let mut at = vec![Vec::new(); distinct];
        for (k, &c) in new_ids.iter().enumerate() {
            at[c as usize].push(k as u32);
        }
        let words = new.len().div_ceil(64).max(1);
        let cost: u64 = old_ids.iter().map(|&c| (words + at[c as usize].len()) as u64).sum();
        if cost > budget {
            return None;
        }
        let step = old.len().div_ceil(CHECKPOINTS).max(MIN_STEP);
        let mut c = Certainty {
            old: old_ids,
            new: new_ids,
            at,
            words,
            step,
            fwd: Vec::new(),
            bwd: Vec::new(),
            total: 0,
        };
        c.sweep();
        Some(c)
    }

    /// Both sweeps, keeping a row every `step` old lines.
    fn sweep(&mut self) {
        let n = self.old.len();
        let mut mask = vec![0u64; self.words];
        let mut v = self.ones();
        for i in 0..n {
            if i.is_multiple_of(self.step) {
                self.fwd.push(v.clone());
            }
            self.advance(&mut v, &mut mask, i, false);
        }
        if n.is_multiple_of(self.step) {
            self.fwd.push(v.clone());
        }
        self.total = self.zeros(&v, self.new.len());
        let mut v = self.ones();
        for r in 0..n {
            if r.is_multiple_of(self.step) {
                self.bwd.push(v.clone());
            }
            self.advance(&mut v, &mut mask, n - 1 - r, true);
        }
        if n.is_multiple_of(self.step) {
            self.bwd.push(v);
        }
    }

    fn ones(&self) -> Vec<u64> {
        vec![u64::MAX; self.words]
    }

    /// One row of the recurrence for old line `i`: `V = (V + (V & M)) | (V & !M)`, `M` the new lines equal to it
    /// (in reversed column order when `rev`).
    fn advance(&self, v: &mut [u64], mask: &mut [u64], i: usize, rev: bool) {
        let m = self.new.len();
        let col = |k: u32| if rev { m - 1 - k as usize } else { k as usize };
        let hits = &self.at[self.old[i] as usize];
        for &k in hits {
            let c = col(k);
            mask[c / 64] |= 1 << (c % 64);
        }
        let mut carry = 0u64;
        for (w, x) in v.iter_mut().enumerate() {
            let u = *x & mask[w];
            let (s1, c1) = x.overflowing_add(u);
            let (s2, c2) = s1.overflowing_add(carry);
            carry = u64::from(c1 | c2);
            *x = s2 | (*x & !mask[w]);
        }
        for &k in hits {
            mask[col(k) / 64] = 0;
        }
    }

    /// Zero bits among the first `len` bits of `v`: the alignment length up to that column.
    fn zeros(&self, v: &[u64], len: usize) -> usize {
        let full = len / 64;
        let mut z: usize = v[..full].iter().map(|w| w.count_zeros() as usize).sum();
        if !len.is_multiple_of(64) {
            let part = v[full] | (u64::MAX << (len % 64));
            z += part.count_zeros() as usize;
        }
        z
    }

    /// `F(i, k)` for every `k` in `0..=m`.
    fn forward_row(&self, i: usize) -> Vec<usize> {
        let c = i / self.step;
        let mut v = self.fwd[c].clone();
        let mut mask = vec![0u64; self.words];
        for r in c * self.step..i {
            self.advance(&mut v, &mut mask, r, false);
        }
        prefix_zeros(&v, self.new.len())
    }

    /// `B(i, k)` for every `k` in `0..=m` (`B(n, k) = 0`).
    fn backward_row(&self, i: usize) -> Vec<usize> {
        let n = self.old.len();
        let done = n - i;
        let c = done / self.step;
        let mut v = self.bwd[c].clone();
        let mut mask = vec![0u64; self.words];
        for r in c * self.step..done {
            self.advance(&mut v, &mut mask, n - 1 - r, true);
        }
        let z = prefix_zeros(&v, self.new.len());
        let m = self.new.len();
        (0..=m).map(|k| z[m - k]).collect()
    }

    /// Whether every longest alignment pairs old line `i` with new line `j` (0-based); otherwise where another one
    /// puts it.
    pub fn pair(&self, i: usize, j: usize) -> Result<(), Doubt> {
        let m = self.new.len();
        let last = m.saturating_sub(1);
        if i >= self.old.len() || j >= m || self.old[i] != self.new[j] {
            return Err(Doubt {
                other: None,
                span: (j.min(last), j.min(last)),
            });
        }
        let (f, b) = (self.forward_row(i), self.backward_row(i + 1));
        if f[j] + 1 + b[j + 1] != self.total {
            return Err(Doubt {
                other: None,
                span: (j, j),
            });
        }
        let (other, span, removable) = self.alternatives(i, &f, &b, Some(j));
        if other.is_none() && !removable {
            Ok(())
        } else {
            Err(Doubt { other, span })
        }
    }

    /// Whether every longest alignment leaves old line `i` out (it was changed or removed, whichever way the drift
    /// is explained); otherwise a new line some longest alignment pairs it with.
    pub fn gone(&self, i: usize) -> Result<(), Doubt> {
        let (f, b) = (self.forward_row(i), self.backward_row(i + 1));
        match self.alternatives(i, &f, &b, None) {
            (None, _, _) => Ok(()),
            (other, span, _) => Err(Doubt { other, span }),
        }
    }

    /// For old line `i` with the rows `f = F(i, ·)` and `b = B(i + 1, ·)`: the first new line other than `j` that a
    /// longest alignment pairs it with; the span of those lines, `j` and (with `j` given) every column where a
    /// longest alignment leaves the line out; and whether there is such a column.
    fn alternatives(
        &self,
        i: usize,
        f: &[usize],
        b: &[usize],
        j: Option<usize>,
    ) -> (Option<usize>, (usize, usize), bool) {
        let last = self.new.len().saturating_sub(1);
        let mut span: Option<(usize, usize)> = j.map(|j| (j, j));
        let mut grow = |k: usize| {
            let k = k.min(last);
            span = Some(span.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
        };
        let mut other = None;
        for &k in &self.at[self.old[i] as usize] {
            let k = k as usize;
            if Some(k) != j && f[k] + 1 + b[k + 1] >= self.total {
                other.get_or_insert(k);
                grow(k);
            }
        }
        let mut removable = false;
        if j.is_some() {
            for k in 0..=self.new.len() {
                if f[k] + b[k] >= self.total {
                    removable = true;
                    grow(k);
                }
            }
        }
        (other, span.unwrap_or((0, 0)), removable)
    }
}

/// `z[k]` = zero bits among the first `k` bits of `v`, for `k` in `0..=len`.
fn prefix_zeros(v: &[u64], len: usize) -> Vec<usize> {
    let mut z = Vec::with_capacity(len + 1);
    let mut acc = 0;
    z.push(0);
    for k in 0..len {
        acc += usize::from(v[k / 64] >> (k % 64) & 1 == 0);
        z.push(acc);
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every longest alignment of `a` and `b`, each as its list of pairs (exhaustive; tiny inputs only).
    fn all_longest(a: &[&str], b: &[&str]) -> Vec<Vec<(usize, usize)>> {
        let (n, m) = (a.len(), b.len());
        let mut l = vec![vec![0usize; m + 1]; n + 1];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                l[i][j] = if a[i] == b[j] {
                    1 + l[i + 1][j + 1]
                } else {
                    l[i + 1][j].max(l[i][j + 1])
                };
            }
        }
        fn walk(
            a: &[&str],
            b: &[&str],
            l: &[Vec<usize>],
            i: usize,
            j: usize,
            cur: &mut Vec<(usize, usize)>,
            out: &mut Vec<Vec<(usize, usize)>>,
        ) {
            if l[i][j] == 0 {
                out.push(cur.clone());
                return;
            }
            // Every way to take the next pair of some longest alignment: the first pair (p, q) with p >= i, q >= j.
            for p in i..a.len() {
                for q in j..b.len() {
                    if a[p] == b[q] && l[p][q] == l[i][j] && 1 + l[p + 1][q + 1] == l[i][j] {
                        cur.push((p, q));
                        walk(a, b, l, p + 1, q + 1, cur, out);
                        cur.pop();
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(a, b, &l, 0, 0, &mut Vec::new(), &mut out);
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn a_line_inserted_into_a_run_leaves_the_run_uncertain() {
        let old = ["begin", "item", "item", "item", "end"];
        let new = ["begin", "item", "item", "item", "item", "end"];
        let c = Certainty::new(&old, &new, |s| s);
        assert!(c.pair(0, 0).is_ok());
        assert!(c.pair(2, 2).is_err(), "the middle item could be line 3 or 4");
        assert!(c.pair(4, 5).is_ok());
    }

    #[test]
    fn the_budget_is_the_cost_of_one_sweep() {
        // Each old line: one step per word of the new file (1 here) and one per new line equal to it (`a`: 3, `b`: 0).
        let (old, new) = (["a", "a", "b"], ["a", "a", "a", "c"]);
        let cost = 3 + 3 + 3;
        assert!(Certainty::within(&old, &new, |s| s, cost).is_some());
        assert!(Certainty::within(&old, &new, |s| s, cost - 1).is_none());
    }

    #[test]
    fn big_files_cross_checkpoints() {
        // 300 distinct lines with a line added at 150: every old line is certain, on either side of the insertion.
        let old: Vec<String> = (0..300).map(|k| format!("line {k}")).collect();
        let mut new = old.clone();
        new.insert(150, "added".into());
        let (o, n): (Vec<&str>, Vec<&str>) = (
            old.iter().map(|s| s.as_str()).collect(),
            new.iter().map(|s| s.as_str()).collect(),
        );
        let c = Certainty::new(&o, &n, |s| s);
        for i in [0, 31, 32, 33, 149, 150, 200, 299] {
            let j = if i < 150 { i } else { i + 1 };
            assert_eq!(c.pair(i, j), Ok(()), "line {i}");
        }
        assert!(c.pair(10, 11).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn certain_pairs_are_those_every_longest_alignment_makes(
            a in proptest::collection::vec(0u8..3, 0..8),
            b in proptest::collection::vec(0u8..3, 0..8),
        ) {
            const W: [&str; 3] = ["x", "y", "z"];
            let a: Vec<&str> = a.iter().map(|&k| W[k as usize]).collect();
            let b: Vec<&str> = b.iter().map(|&k| W[k as usize]).collect();
            let all = all_longest(&a, &b);
            let c = Certainty::new(&a, &b, |s| s);
            for i in 0..a.len() {
                for j in 0..b.len() {
                    let every = all.iter().all(|al| al.contains(&(i, j)));
                    prop_assert_eq!(c.pair(i, j).is_ok(), every, "pair ({}, {}) of {:?} / {:?}", i, j, a, b);
                }
                let never = all.iter().all(|al| al.iter().all(|&(p, _)| p != i));
                prop_assert_eq!(c.gone(i).is_ok(), never, "line {} of {:?} / {:?}", i, a, b);
            }
        }
    }
}
