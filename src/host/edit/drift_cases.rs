//! Generated drift over duplicate-heavy files, for the property tests of Edit and apply_patch under drift
//! (docs/host.md "Edits under drift", docs/patch.md "Drift"): a file the model was shown, the drift that landed
//! since (as hunks against it), and the truth an edit carried over must equal — the edit applied to the shown file,
//! then the drift replayed. Only drift that is the fewest lines added and removed explaining the change is
//! generated (otherwise a different drift with another truth produces the same file, and no tool can tell); where
//! the edit and the drift touch the same lines there is no truth, and only a refusal is right.

/// A hunk against the shown file: `(start, removed, added)`, 0-based, `removed` lines from `start` replaced.
pub type Hunk = (usize, usize, Vec<String>);

/// A seeded generator (SplitMix64): every case is reproducible from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.draw() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Lines that repeat a lot, as in real files: runs of `item`, closing braces, blank lines.
const WORDS: [&str; 6] = ["item", "item", "}", "", "a", "b"];

fn word(rng: &mut Rng) -> String {
    WORDS[rng.below(WORDS.len())].to_string()
}

/// A shown file of 1 to 12 lines.
pub fn file(rng: &mut Rng) -> Vec<String> {
    let n = 1 + rng.below(12);
    let mut out: Vec<String> = (0..n).map(|_| word(rng)).collect();
    // Sometimes a distinct line, so that some places are certain.
    if rng.chance(50) {
        let k = rng.below(n);
        out[k] = format!("line {k}");
    }
    out
}

/// `old` with `hunks` (sorted, not overlapping) applied.
pub fn apply(old: &[String], hunks: &[Hunk]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    for (s, d, add) in hunks {
        out.extend_from_slice(&old[at..*s]);
        out.extend(add.iter().cloned());
        at = s + d;
    }
    out.extend_from_slice(&old[at..]);
    out
}

/// The length of a longest common subsequence of `a` and `b`.
pub fn lcs(a: &[String], b: &[String]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diag = 0;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[b.len()]
}

/// Drift of 1 to 3 hunks: touching hunks merged, lines a hunk removes and adds again at its ends trimmed, and only
/// when it is the fewest lines explaining the change (`None` otherwise, or when nothing changed).
pub fn drift(rng: &mut Rng, old: &[String]) -> Option<(Vec<Hunk>, Vec<String>)> {
    let n = old.len();
    let mut raw: Vec<Hunk> = (0..1 + rng.below(3))
        .map(|_| {
            let s = rng.below(n + 1);
            let d = if s == n { 0 } else { rng.below(3).min(n - s) };
            let add = (0..rng.below(3)).map(|_| word(rng)).collect();
            (s, d, add)
        })
        .collect();
    raw.sort_by_key(|h| (h.0, h.1));
    let mut hunks: Vec<Hunk> = Vec::new();
    for (s, d, add) in raw {
        match hunks.last_mut() {
            Some(p) if s < p.0 + p.1 => return None, // overlapping: drawn again by the caller
            Some(p) if s == p.0 + p.1 => {
                p.1 += d;
                p.2.extend(add);
            }
            _ => hunks.push((s, d, add)),
        }
    }
    for h in &mut hunks {
        while h.1 > 0 && !h.2.is_empty() && old[h.0] == h.2[0] {
            h.0 += 1;
            h.1 -= 1;
            h.2.remove(0);
        }
        while h.1 > 0 && !h.2.is_empty() && old[h.0 + h.1 - 1] == *h.2.last().unwrap() {
            h.1 -= 1;
            h.2.pop();
        }
    }
    hunks.retain(|h| h.1 > 0 || !h.2.is_empty());
    let new = apply(old, &hunks);
    let removed: usize = hunks.iter().map(|h| h.1).sum();
    (new != old && lcs(old, &new) == n - removed).then_some((hunks, new))
}

/// The truth: `edit` applied to `old`, then `drift` replayed (both as hunks against `old`); `None` when they touch
/// the same lines (a conflict: no truth). Insertions at the same place: at the head the drift's lines come first
/// (`<1` goes before the line it was written against), at the tail the edit's (`>$` goes after it); anywhere
/// else that is a conflict.
pub fn merge(old: &[String], edit: &[Hunk], drift: &[Hunk]) -> Option<Vec<String>> {
    let n = old.len();
    let mut covered = vec![0u8; n];
    for (side, hs) in [(1u8, edit), (2, drift)] {
        for (s, d, _) in hs {
            for c in &mut covered[*s..s + d] {
                if *c != 0 {
                    return None;
                }
                *c = side;
            }
        }
    }
    let inserts = |hs: &[Hunk], g: usize| -> Vec<String> {
        hs.iter()
            .filter(|h| h.1 == 0 && h.0 == g)
            .flat_map(|h| h.2.iter().cloned())
            .collect()
    };
    let range_at = |hs: &[Hunk], i: usize| hs.iter().find(|h| h.1 > 0 && h.0 == i).cloned();
    // An insertion strictly inside the other side's range: its place is gone.
    for (ins, ranges) in [(edit, drift), (drift, edit)] {
        for h in ins.iter().filter(|h| h.1 == 0) {
            if ranges.iter().any(|r| r.1 > 0 && r.0 < h.0 && h.0 < r.0 + r.1) {
                return None;
            }
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let (e, d) = (inserts(edit, i), inserts(drift, i));
        if !e.is_empty() && !d.is_empty() && i != 0 && i != n {
            return None;
        }
        if i == 0 {
            out.extend(d);
            out.extend(e);
        } else {
            out.extend(e);
            out.extend(d);
        }
        if i >= n {
            return Some(out);
        }
        match range_at(edit, i).or_else(|| range_at(drift, i)) {
            Some((s, d, add)) => {
                out.extend(add);
                i = s + d;
            }
            None => {
                out.push(old[i].clone());
                i += 1;
            }
        }
    }
}

/// The text of `lines` with a final newline.
pub fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_truth_replays_the_drift_after_the_edit() {
        let old = v(&["begin", "item", "item", "item", "end"]);
        // `sed -i '1a item'` and a replacement of line 3: the replaced line is the shown line 3, now line 4.
        let drift = vec![(1, 0, v(&["item"]))];
        let edit = vec![(2, 1, v(&["ITEM"]))];
        assert_eq!(
            merge(&old, &edit, &drift),
            Some(v(&["begin", "item", "item", "ITEM", "item", "end"]))
        );
        // The same line touched by both: no truth.
        assert_eq!(merge(&old, &edit, &[(2, 1, v(&["x"]))]), None);
        // Insertions at the head and the tail, and in the middle (a conflict).
        let (h, t) = (vec![(0, 0, v(&["h"]))], vec![(5, 0, v(&["t"]))]);
        assert_eq!(merge(&old, &h, &[(0, 0, v(&["d"]))]).unwrap()[..2], v(&["d", "h"]));
        assert_eq!(merge(&old, &t, &[(5, 0, v(&["d"]))]).unwrap()[5..], v(&["t", "d"]));
        assert_eq!(merge(&old, &[(2, 0, v(&["e"]))], &[(2, 0, v(&["d"]))]), None);
    }

    #[test]
    fn generated_drift_is_minimal() {
        let mut rng = Rng::new(7);
        let mut made = 0;
        for _ in 0..500 {
            let old = file(&mut rng);
            if let Some((hunks, new)) = drift(&mut rng, &old) {
                made += 1;
                assert_eq!(apply(&old, &hunks), new);
                assert_eq!(lcs(&old, &new), old.len() - hunks.iter().map(|h| h.1).sum::<usize>());
            }
        }
        assert!(made > 200, "{made}");
    }
}
