//! Finds where each chunk of an Update applies, Codex-style but refusing ambiguity.
//!
//! Lines are compared in four tiers (exact, trailing whitespace ignored, surrounding whitespace ignored, Unicode
//! punctuation folded); the first tier with a hit wins and more than one hit in that tier is refused. To keep a
//! whole patch linear in the file size, each tier has a lazily built hash index of the file's lines
//! (hash -> ascending chain of line numbers); a pattern is looked up through its rarest line and verified.
//!
//! Over 600 lines only with its inline tests (the code itself is about 590 lines).

use super::error::{PatchCode, PatchError};
use super::parser::{clip, Chunk, ChunkLine};
use rustc_hash::{FxHashMap, FxHasher};
use std::cell::OnceCell;
use std::hash::Hasher;

/// The comparison tiers, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Exact = 0,
    TrimEnd = 1,
    Trim = 2,
    Punctuation = 3,
}

const TIERS: [Tier; 4] = [Tier::Exact, Tier::TrimEnd, Tier::Trim, Tier::Punctuation];

/// Folds the Unicode punctuation Codex folds (dashes, quotes, odd spaces) to ASCII.
pub fn fold_char(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

fn view(s: &str, tier: Tier) -> &str {
    match tier {
        Tier::Exact => s,
        Tier::TrimEnd => s.trim_end(),
        Tier::Trim | Tier::Punctuation => s.trim(),
    }
}

/// Whether two lines are equal in a tier.
pub fn line_eq(a: &str, b: &str, tier: Tier) -> bool {
    let (a, b) = (view(a, tier), view(b, tier));
    if tier != Tier::Punctuation || (a.is_ascii() && b.is_ascii()) {
        return a == b;
    }
    a.chars().map(fold_char).eq(b.chars().map(fold_char))
}

fn line_hash(s: &str, tier: Tier) -> u64 {
    let v = view(s, tier);
    let mut h = FxHasher::default();
    if tier == Tier::Punctuation && !v.is_ascii() {
        let folded: String = v.chars().map(fold_char).collect();
        h.write(folded.as_bytes());
    } else {
        h.write(v.as_bytes());
    }
    h.write_u8(0xff);
    h.finish()
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Posting {
    first: u32,
    last: u32,
    count: u32,
}

/// Line numbers of the file by line hash for one tier: `head` gives the first/last/count, `next` chains them.
struct Index {
    head: FxHashMap<u64, Posting>,
    next: Vec<u32>,
}

impl Index {
    fn build(lines: &[&str], tier: Tier) -> Index {
        let mut head: FxHashMap<u64, Posting> = FxHashMap::default();
        head.reserve(lines.len());
        let mut next = vec![NONE; lines.len()];
        for (i, line) in lines.iter().enumerate() {
            let i = i as u32;
            head.entry(line_hash(line, tier))
                .and_modify(|p| {
                    next[p.last as usize] = i;
                    p.last = i;
                    p.count += 1;
                })
                .or_insert(Posting {
                    first: i,
                    last: i,
                    count: 1,
                });
        }
        Index { head, next }
    }

    fn chain(&self, hash: u64) -> (u32, u32) {
        match self.head.get(&hash) {
            Some(p) => (p.first, p.count),
            None => (NONE, 0),
        }
    }
}

/// Where a pattern was found in one tier.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    None,
    One(usize),
    Two(usize, usize),
}

/// A file's lines with its lazily built per-tier indexes.
pub struct Matcher<'f> {
    lines: &'f [&'f str],
    indexes: [OnceCell<Index>; 4],
}

impl<'f> Matcher<'f> {
    pub fn new(lines: &'f [&'f str]) -> Self {
        Matcher {
            lines,
            indexes: Default::default(),
        }
    }

    fn index(&self, tier: Tier) -> &Index {
        self.indexes[tier as usize].get_or_init(|| Index::build(self.lines, tier))
    }

    fn matches_at(&self, pattern: &[&str], p: usize, tier: Tier) -> bool {
        pattern
            .iter()
            .enumerate()
            .all(|(j, pat)| line_eq(self.lines[p + j], pat, tier))
    }

    /// Up to two start positions `>= start` where `pattern` matches in `tier`.
    fn find(&self, pattern: &[&str], start: usize, tier: Tier) -> Found {
        let (n, m) = (self.lines.len(), pattern.len());
        if m == 0 || m > n || start > n - m {
            return Found::None;
        }
        let index = self.index(tier);
        // Look the pattern up through its rarest line.
        let mut best = (0usize, NONE, u32::MAX);
        for (j, pat) in pattern.iter().enumerate() {
            let (first, count) = index.chain(line_hash(pat, tier));
            if count == 0 {
                return Found::None;
            }
            if count < best.2 {
                best = (j, first, count);
            }
        }
        let (j, mut q, _) = best;
        let mut hits = Vec::with_capacity(2);
        while q != NONE {
            let qu = q as usize;
            q = index.next[qu];
            if qu < start + j {
                continue;
            }
            let p = qu - j;
            if p > n - m {
                break;
            }
            if self.matches_at(pattern, p, tier) {
                hits.push(p);
                if hits.len() == 2 {
                    break;
                }
            }
        }
        match hits[..] {
            [] => Found::None,
            [a] => Found::One(a),
            [a, b, ..] => Found::Two(a, b),
        }
    }

    /// First tier with a hit wins; `end_of_file` tries only the last possible position.
    fn seek(&self, pattern: &[&str], start: usize, end_of_file: bool) -> Found {
        let (n, m) = (self.lines.len(), pattern.len());
        for tier in TIERS {
            let found = if end_of_file {
                if m <= n && n - m >= start && self.matches_at(pattern, n - m, tier) {
                    Found::One(n - m)
                } else {
                    Found::None
                }
            } else {
                self.find(pattern, start, tier)
            };
            if found != Found::None {
                return found;
            }
        }
        Found::None
    }

    /// The first line at or after `start` equal to `locator` in the first tier that has one.
    fn seek_locator(&self, locator: &str, start: usize) -> Option<usize> {
        for tier in TIERS {
            let index = self.index(tier);
            let (mut q, _) = index.chain(line_hash(locator, tier));
            while q != NONE {
                let qu = q as usize;
                q = index.next[qu];
                if qu >= start && line_eq(self.lines[qu], locator, tier) {
                    return Some(qu);
                }
            }
        }
        None
    }

    /// The region most similar to `pattern` (most lines equal ignoring surrounding whitespace), for error messages.
    fn nearest(&self, pattern: &[&str], cursor: usize) -> Option<(usize, usize)> {
        const PER_LINE_CAP: usize = 2000;
        let n = self.lines.len();
        if n == 0 {
            return None;
        }
        let index = self.index(Tier::Trim);
        let mut votes: FxHashMap<usize, u32> = FxHashMap::default();
        for (j, pat) in pattern.iter().enumerate() {
            if pat.trim().is_empty() {
                continue;
            }
            let (mut q, _) = index.chain(line_hash(pat, Tier::Trim));
            let mut seen = 0;
            while q != NONE && seen < PER_LINE_CAP {
                let qu = q as usize;
                q = index.next[qu];
                seen += 1;
                if qu >= j && line_eq(self.lines[qu], pat, Tier::Trim) {
                    *votes.entry(qu - j).or_default() += 1;
                }
            }
        }
        let best = votes.into_iter().max_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| b.0.abs_diff(cursor).cmp(&a.0.abs_diff(cursor)))
        });
        let start = match best {
            Some((start, _)) => start,
            None => self.similar_line(pattern)?,
        };
        let start = start.min(n - 1);
        let end = (start + pattern.len().max(1)).min(n);
        Some((start, end))
    }

    /// No line is equal: the region around the file line sharing the most words with a pattern line
    /// (Jaccard over word tokens, at least 0.4), scanning at most 200,000 lines.
    fn similar_line(&self, pattern: &[&str]) -> Option<usize> {
        fn words(s: &str) -> Vec<&str> {
            let mut w: Vec<&str> = s
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .filter(|t| !t.is_empty())
                .collect();
            w.sort_unstable();
            w.dedup();
            w
        }
        let (j, pat) = pattern.iter().enumerate().find(|(_, p)| !words(p).is_empty())?;
        let want = words(pat);
        let mut best: Option<(f64, usize)> = None;
        for (i, line) in self.lines.iter().enumerate().take(200_000) {
            let have = words(line);
            if have.is_empty() {
                continue;
            }
            let common = want.iter().filter(|w| have.binary_search(w).is_ok()).count();
            let score = common as f64 / (want.len() + have.len() - common) as f64;
            if score >= 0.4 && best.is_none_or(|(b, _)| score > b) {
                best = Some((score, i));
            }
        }
        best.map(|(_, i)| i.saturating_sub(j))
    }
}

/// Where a new line's text comes from: the file's own bytes (context lines) or the patch (`+` lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewLine<'p> {
    File(usize),
    Patch(&'p str),
}

/// One replacement in the file: `old_len` lines at `start` become `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit<'p> {
    pub start: usize,
    pub old_len: usize,
    pub new: Vec<NewLine<'p>>,
}

fn show_lines(out: &mut String, lines: &[&str]) {
    const MAX: usize = 12;
    for l in lines.iter().take(MAX) {
        out.push_str("\n  | ");
        out.push_str(&clip(l));
    }
    if lines.len() > MAX {
        let more = lines.len() - MAX;
        out.push_str(&format!("\n  … ({more} more line{})", if more == 1 { "" } else { "s" }));
    }
}

/// Drops the last old-side line (an empty one) and, if the new side also ends with an empty line, that one too.
fn without_trailing_empty<'p>(lines: &[ChunkLine<'p>]) -> Vec<ChunkLine<'p>> {
    let last_old = lines.iter().rposition(|l| l.old_side().is_some());
    let last_new = lines
        .iter()
        .rposition(|l| l.new_side().is_some())
        .filter(|&i| lines[i].new_side() == Some(""));
    lines
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != last_old && Some(*i) != last_new)
        .map(|(_, l)| *l)
        .collect()
}

/// The most candidate places a drifted chunk's recovery weighs before it gives up (and the chunk is refused).
const MAX_RECOVERY_CANDIDATES: usize = 100_000;

/// Drift recovery (docs/patch.md "Drift"): the chunk matched nowhere in any tier, so lines near it changed since the
/// patch was written. Its core (everything from the first to the last `-`/`+` line) must be byte-identical in the
/// file; each place the core could sit is weighed by how many of the chunk's context lines still stand next to it
/// unbroken (loosest tier, counted outward from the core on each side). The place with the byte-identical core and
/// the most standing context wins only when no other such place at or after the cursor has as much, no place whose
/// core could be the chunk's own with a line changed since (a one-line core, or one with a line still in its slot)
/// has as much either, and at least one context line stands on each side that had any; so a window whose context two
/// places share equally, or whose own core changed (a conflict: its context then still points at it), is refused,
/// never guessed. Places level on that count are weighed again, first with the context that stands past lines
/// inserted since ([`resumed`]), then by how much of their standing context holds in each stricter tier; the
/// byte-identical one then strictly ahead wins. Returns the place where the kept lines start and the chunk lines kept
/// (the core and its standing context).
fn recover<'p>(m: &Matcher<'_>, lines: &[ChunkLine<'p>], cursor: usize) -> Option<(usize, Vec<ChunkLine<'p>>)> {
    let is_ctx = |l: &ChunkLine<'_>| matches!(l, ChunkLine::Context(_));
    let lead = lines.iter().take_while(|l| is_ctx(l)).count();
    if lead == lines.len() {
        return None;
    }
    let trail = lines.iter().rev().take_while(|l| is_ctx(l)).count();
    if lead == 0 && trail == 0 {
        return None;
    }
    let old: Vec<&str> = lines.iter().filter_map(|l| l.old_side()).collect();
    let core_len = old.len() - lead - trail;
    let (file, n) = (m.lines, m.lines.len());
    let standing = |g: usize| -> (usize, usize) {
        let mut a = 0;
        // Above the cursor lies an earlier chunk (or the `@@` line): never evidence, so edits never overlap.
        while a < lead && g - a > cursor && line_eq(file[g - a - 1], old[lead - a - 1], Tier::Punctuation) {
            a += 1;
        }
        let mut b = 0;
        while b < trail
            && g + core_len + b < n
            && line_eq(file[g + core_len + b], old[lead + core_len + b], Tier::Punctuation)
        {
            b += 1;
        }
        (a, b)
    };
    // Every place with any standing context has its innermost context line on one side right next to the core.
    let index = m.index(Tier::Punctuation);
    let mut places = Vec::new();
    let mut add_chain = |pat: &str, shift: isize| -> bool {
        let (mut q, count) = index.chain(line_hash(pat, Tier::Punctuation));
        if places.len() + count as usize > MAX_RECOVERY_CANDIDATES {
            return false;
        }
        while q != NONE {
            let qu = q as usize;
            q = index.next[qu];
            let g = qu as isize + shift;
            if g >= cursor as isize && g as usize + core_len <= n && line_eq(file[qu], pat, Tier::Punctuation) {
                places.push(g as usize);
            }
        }
        true
    };
    if lead > 0 && !add_chain(old[lead - 1], 1) {
        return None;
    }
    if trail > 0 && !add_chain(old[lead + core_len], -(core_len as isize)) {
        return None;
    }
    places.sort_unstable();
    places.dedup();
    let core_at = |g: usize| (0..core_len).all(|j| file[g + j] == old[lead + j]);
    // A place whose core differs still competes when it could be the chunk's own place with a line of its core
    // changed since (a conflict): the core is one line, or a line of it still stands in its slot.
    let could_be_changed =
        |g: usize| core_len == 1 || (0..core_len).any(|j| line_eq(file[g + j], old[lead + j], Tier::Punctuation));
    // Every competing place: (place, standing above, standing below, whether its core is byte-identical).
    let mut weighed = Vec::new();
    for g in places {
        let (a, b) = standing(g);
        let own = core_at(g);
        if own || could_be_changed(g) {
            weighed.push((g, a, b, own));
        }
    }
    let most = weighed.iter().filter(|w| w.3).map(|w| w.1 + w.2).max()?;
    if weighed.iter().any(|w| !w.3 && w.1 + w.2 > most) {
        return None;
    }
    // The places level at the top, in file order; one of them alone is the answer, several are weighed again.
    let level: Vec<(usize, usize, usize, bool)> = weighed.into_iter().filter(|w| w.1 + w.2 == most).collect();
    let (g, a, b) = if let [(g, a, b, _)] = level[..] {
        (g, a, b)
    } else {
        // Weighed again: first the context standing past lines inserted since, then (as in matching, where the
        // strictest tier with a hit wins) how much of the standing context also holds in each stricter tier.
        let weight = |&(g, a, b, _): &(usize, usize, usize, bool)| {
            let holds = |tier| {
                let above = (0..a).filter(|&j| line_eq(file[g - a + j], old[lead - a + j], tier));
                let below = (0..b).filter(|&j| line_eq(file[g + core_len + j], old[lead + core_len + j], tier));
                above.count() + below.count()
            };
            let strict = [holds(Tier::Exact), holds(Tier::TrimEnd), holds(Tier::Trim)];
            (resumed(m, &old, (lead, trail), (g, a, b), cursor), strict)
        };
        let weights: Vec<_> = level.iter().map(weight).collect();
        let top = *weights.iter().max()?;
        let mut at_top = level.iter().zip(&weights).filter(|(_, w)| **w == top);
        match (at_top.next(), at_top.next()) {
            (Some((&(g, a, b, true), _)), None) => (g, a, b),
            _ => return None,
        }
    };
    if (lead > 0 && a == 0) || (trail > 0 && b == 0) {
        return None;
    }
    Some((g - a, lines[lead - a..lines.len() - (trail - b)].to_vec()))
}

/// How far past the point where a side's standing context breaks off the rest of that side may still be found.
const MAX_DRIFT_GAP: usize = 100;

/// The tie-break of [`recover`] (docs/patch.md "Drift"): how many of the chunk's context lines stand at place `g`
/// (standing `a` above, `b` below) once lines inserted since are skipped. A side whose context broke off also counts
/// the rest of its lines when they stand as one block, in order, past at least one other line and at most
/// [`MAX_DRIFT_GAP`] lines past the break (above, never before the cursor). The skipped lines may hold anything, even
/// another place of the chunk, so a rest that two places can reach counts for both and keeps them level.
fn resumed(
    m: &Matcher<'_>,
    old: &[&str],
    (lead, trail): (usize, usize),
    (g, a, b): (usize, usize, usize),
    cursor: usize,
) -> usize {
    let file = m.lines;
    let core_len = old.len() - lead - trail;
    let block_at = |rest: &[&str], p: usize| {
        rest.iter()
            .enumerate()
            .all(|(j, l)| line_eq(file[p + j], l, Tier::Punctuation))
    };
    let mut found = 0;
    // Above: the rest `old[..lead - a]` ends (exclusive) at `e`, skipping 1..=MAX_DRIFT_GAP rows above row `g - a`.
    let rest = &old[..lead - a];
    if !rest.is_empty()
        && (1..=MAX_DRIFT_GAP)
            .map_while(|gap| (g - a).checked_sub(gap))
            .take_while(|&e| e >= cursor + rest.len())
            .any(|e| block_at(rest, e - rest.len()))
    {
        found += rest.len();
    }
    // Below: the rest starts at `p`, skipping 1..=MAX_DRIFT_GAP rows below row `g + core_len + b - 1`.
    let rest = &old[lead + core_len + b..];
    let limit = file.len();
    if !rest.is_empty()
        && (1..=MAX_DRIFT_GAP)
            .map(|gap| g + core_len + b + gap)
            .take_while(|&p| p + rest.len() <= limit)
            .any(|p| block_at(rest, p))
    {
        found += rest.len();
    }
    a + b + found
}

/// Change-by-change recovery (docs/patch.md "Drift"): a chunk with unchanged lines between its changes that matched
/// nowhere, not even by [`recover`], because drift landed between two of its changes. It is split at that interior
/// context into one part per run of changes; each part keeps the context on both of its sides (an interior run is the
/// trailing context of one part and the leading context of the next). The parts are placed in order, each at or after
/// the previous part's changed lines, each either matching exactly once (in any tier) or placed by [`recover`]; a
/// part that cannot be placed so refuses the whole chunk. Returns one edit per part covering only its changed lines
/// (its context is checked, not rewritten), so the parts never overlap.
fn split_recover<'p>(m: &Matcher<'_>, lines: &[ChunkLine<'p>], cursor: usize) -> Option<Vec<Edit<'p>>> {
    let is_ctx = |l: &ChunkLine<'_>| matches!(l, ChunkLine::Context(_));
    // The runs of changed lines, as [start, end) into `lines`.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match runs.last_mut() {
            _ if is_ctx(l) => {}
            Some((_, e)) if *e == i => *e = i + 1,
            _ => runs.push((i, i + 1)),
        }
    }
    if runs.len() < 2 {
        return None;
    }
    let mut edits = Vec::with_capacity(runs.len());
    let mut cur = cursor;
    for (k, &(s, e)) in runs.iter().enumerate() {
        let lo = if k == 0 { 0 } else { runs[k - 1].1 };
        let hi = runs.get(k + 1).map_or(lines.len(), |r| r.0);
        let part = &lines[lo..hi];
        let old: Vec<&str> = part.iter().filter_map(|l| l.old_side()).collect();
        let (p, kept) = match m.seek(&old, cur, false) {
            Found::One(p) => (p, part.to_vec()),
            Found::Two(..) => return None,
            Found::None => recover(m, part, cur)?,
        };
        // The changed lines start after the part's kept leading context.
        let lead = kept.iter().take_while(|l| is_ctx(l)).count();
        let change = &lines[s..e];
        let start = p + lead;
        if start < cur {
            return None;
        }
        let old_len = change.iter().filter(|l| matches!(l, ChunkLine::Remove(_))).count();
        let new = change
            .iter()
            .filter_map(|l| match l {
                ChunkLine::Add(t) => Some(NewLine::Patch(t)),
                _ => None,
            })
            .collect();
        edits.push(Edit { start, old_len, new });
        cur = start + old_len;
    }
    Some(edits)
}

/// Computes every edit of an Update (in file order), or the first mismatch/ambiguity as an error.
pub fn plan<'p>(shown: &str, file: &[&str], chunks: &[Chunk<'p>]) -> Result<Vec<Edit<'p>>, PatchError> {
    plan_with(shown, file, chunks, true)
}

/// [`plan`], with drift recovery (a chunk whose context matches nowhere, placed by its standing context) only when
/// `recover`: without it, only chunks that match (exactly once, in some tier) are placed.
pub fn plan_with<'p>(
    shown: &str,
    file: &[&str],
    chunks: &[Chunk<'p>],
    recover_drift: bool,
) -> Result<Vec<Edit<'p>>, PatchError> {
    let m = Matcher::new(file);
    let total = chunks.len();
    let mut cursor = 0usize;
    let mut edits = Vec::with_capacity(chunks.len());
    for (ci, chunk) in chunks.iter().enumerate() {
        let which = format!("Chunk {} of {}", ci + 1, total);
        if let Some(loc) = chunk.locator {
            match m.seek_locator(loc, cursor) {
                Some(i) => cursor = i + 1,
                None => {
                    return Err(PatchError::no_change(
                        PatchCode::ContextMismatch,
                        format!(
                            "context mismatch in '{shown}'. {which}: the '@@ {}' line was not found at or after line {}. Re-read the file and retry with a '@@' line copied from it (or drop the '@@' text)",
                            clip(loc),
                            cursor + 1
                        ),
                    ))
                }
            }
        }
        let mut lines: Vec<ChunkLine<'p>> = chunk.lines.clone();
        let mut old: Vec<&str> = lines.iter().filter_map(|l| l.old_side()).collect();
        if old.is_empty() {
            let at = if chunk.locator.is_some() && !chunk.end_of_file {
                cursor
            } else {
                file.len()
            };
            let new = lines.iter().filter_map(|l| l.new_side()).map(NewLine::Patch).collect();
            edits.push(Edit {
                start: at,
                old_len: 0,
                new,
            });
            continue;
        }
        let mut found = m.seek(&old, cursor, chunk.end_of_file);
        if found == Found::None && old.len() > 1 && old.last() == Some(&"") {
            let retry = without_trailing_empty(&lines);
            let retry_old: Vec<&str> = retry.iter().filter_map(|l| l.old_side()).collect();
            let f = m.seek(&retry_old, cursor, chunk.end_of_file);
            if f != Found::None {
                found = f;
                lines = retry;
                old = retry_old;
            }
        }
        if found == Found::None && !chunk.end_of_file && recover_drift {
            if let Some((p, kept)) = recover(&m, &lines, cursor) {
                found = Found::One(p);
                lines = kept;
                old = lines.iter().filter_map(|l| l.old_side()).collect();
            } else if let Some(parts) = split_recover(&m, &lines, cursor) {
                cursor = parts.last().map_or(cursor, |e| e.start + e.old_len);
                edits.extend(parts);
                continue;
            }
        }
        match found {
            Found::One(p) => {
                let mut oi = 0;
                let mut new = Vec::with_capacity(lines.len());
                for l in &lines {
                    match l {
                        ChunkLine::Context(_) => {
                            new.push(NewLine::File(p + oi));
                            oi += 1;
                        }
                        ChunkLine::Remove(_) => oi += 1,
                        ChunkLine::Add(s) => new.push(NewLine::Patch(s)),
                    }
                }
                edits.push(Edit { start: p, old_len: old.len(), new });
                cursor = p + old.len();
            }
            Found::Two(a, b) => {
                return Err(PatchError::no_change(
                    PatchCode::AmbiguousContext,
                    format!(
                        "ambiguous context in '{shown}'. {which} matches at line {} and at line {} (searching from line {}). Add more unchanged context lines so the chunk matches exactly once",
                        a + 1,
                        b + 1,
                        cursor + 1
                    ),
                ))
            }
            Found::None => {
                let mut msg = format!(
                    "context mismatch in '{shown}'. {which} did not match {}. Expected lines:",
                    if chunk.end_of_file {
                        "at the end of the file".to_string()
                    } else {
                        format!("at or after line {}", cursor + 1)
                    }
                );
                show_lines(&mut msg, &old);
                match m.nearest(&old, cursor) {
                    Some((s, e)) => {
                        msg.push_str(&format!("\nNearest candidate region (lines {}-{}):", s + 1, e));
                        show_lines(&mut msg, &file[s..e]);
                    }
                    None => msg.push_str("\nNo similar lines were found in the file."),
                }
                if let (Some(loc), Some(first)) = (chunk.locator, old.first()) {
                    if line_eq(loc, first, Tier::Trim) {
                        msg.push_str("\nNote: the '@@' line is consumed before the search; do not repeat it as the first context line.");
                    }
                }
                msg.push_str("\nRe-read the file and retry with context lines copied exactly from it.");
                return Err(PatchError::no_change(PatchCode::ContextMismatch, msg));
            }
        }
    }
    edits.sort_by_key(|e| e.start);
    Ok(edits)
}

/// The new lines of a file after its edits (edits in file order, non-overlapping).
pub fn apply_edits<'a>(file: &[&'a str], edits: &[Edit<'a>]) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(file.len() + edits.iter().map(|e| e.new.len()).sum::<usize>());
    let mut pos = 0;
    for e in edits {
        debug_assert!(e.start >= pos, "edits overlap");
        out.extend_from_slice(&file[pos..e.start.max(pos)]);
        for nl in &e.new {
            out.push(match *nl {
                NewLine::File(i) => file[i],
                NewLine::Patch(s) => s,
            });
        }
        pos = pos.max(e.start + e.old_len);
    }
    out.extend_from_slice(&file[pos.min(file.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parser::parse;

    /// Applies the single Update hunk of `patch_body` to `file` (lines joined with \n).
    fn run(file: &str, body: &str) -> Result<String, String> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let parsed = parse(&patch).map_err(|e| e.to_string())?;
        let chunks = match &parsed.hunks[0] {
            crate::patch::parser::Hunk::Update { chunks, .. } => chunks.clone(),
            _ => unreachable!(),
        };
        let lines: Vec<&str> = if file.is_empty() {
            vec![]
        } else {
            file.split('\n').collect()
        };
        let edits = plan("f", &lines, &chunks).map_err(|e| e.to_string())?;
        Ok(apply_edits(&lines, &edits).join("\n"))
    }

    #[test]
    fn tier1_exact() {
        assert_eq!(run("a\nb\nc", "@@\n a\n-b\n+B\n").unwrap(), "a\nB\nc");
    }

    #[test]
    fn tier2_trailing_whitespace_keeps_file_bytes_for_context() {
        assert_eq!(run("a  \nb\nc", "@@\n a\n-b\n+B\n").unwrap(), "a  \nB\nc");
    }

    #[test]
    fn tier3_surrounding_whitespace() {
        assert_eq!(run("  a\n\tb\nc", "@@\n a\n-b\n+B\n").unwrap(), "  a\nB\nc");
    }

    #[test]
    fn tier4_unicode_punctuation() {
        let file = "let s = \u{201C}hi\u{201D}; // a \u{2014} b\u{00A0}c\nnext";
        assert_eq!(
            run(file, "@@\n-let s = \"hi\"; // a - b c\n+let s = \"bye\";\n").unwrap(),
            "let s = \"bye\";\nnext"
        );
        for c in ['\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2015}', '\u{2212}'] {
            assert_eq!(run(&format!("x{c}y"), "-x-y\n+z\n").unwrap(), "z");
        }
        for c in ['\u{2018}', '\u{2019}', '\u{201A}', '\u{201B}'] {
            assert_eq!(run(&format!("{c}q"), "-'q\n+z\n").unwrap(), "z");
        }
        for c in ['\u{201E}', '\u{201F}'] {
            assert_eq!(run(&format!("{c}q"), "-\"q\n+z\n").unwrap(), "z");
        }
        for c in ['\u{2002}', '\u{2009}', '\u{200A}', '\u{202F}', '\u{205F}', '\u{3000}'] {
            assert_eq!(run(&format!("a{c}b"), "-a b\n+z\n").unwrap(), "z");
        }
        // U+2001 is not folded by the contract
        assert!(run("a\u{2001}b", "-a b\n+z\n")
            .unwrap_err()
            .contains("context mismatch"));
    }

    #[test]
    fn stricter_tier_wins_over_a_looser_duplicate() {
        // exact hit on line 3, trimmed hit on line 1: exact tier wins, no ambiguity
        assert_eq!(run(" x\ny\nx\nz", "-x\n+X\n").unwrap(), " x\ny\nX\nz");
    }

    #[test]
    fn ambiguity_is_refused() {
        assert_eq!(
            run("x\na\nx\nb", "@@\n-x\n+X\n").unwrap_err(),
            "apply_patch failed (no-change): ambiguous context in 'f'. Chunk 1 of 1 matches at line 1 and at line 3 (searching from line 1). Add more unchanged context lines so the chunk matches exactly once"
        );
        // more context disambiguates
        assert_eq!(run("x\na\nx\nb", "@@\n-x\n+X\n b\n").unwrap(), "x\na\nX\nb");
        // ambiguity within the looser tier too
        assert!(run(" x\n\tx\ny", "-x\n+X\n").unwrap_err().contains("ambiguous context"));
    }

    #[test]
    fn locator_moves_cursor() {
        let file = "fn a() {\n    return 1;\n}\nfn b() {\n    return 1;\n}";
        // without locator: ambiguous
        assert!(run(file, "-    return 1;\n+    return 2;\n")
            .unwrap_err()
            .contains("ambiguous"));
        // the locator narrows the search to after fn b
        assert_eq!(
            run(file, "@@ fn b() {\n-    return 1;\n+    return 2;\n").unwrap(),
            "fn a() {\n    return 1;\n}\nfn b() {\n    return 2;\n}"
        );
        assert_eq!(
            run(file, "@@ fn zzz\n-x\n").unwrap_err(),
            "apply_patch failed (no-change): context mismatch in 'f'. Chunk 1 of 1: the '@@ fn zzz' line was not found at or after line 1. Re-read the file and retry with a '@@' line copied from it (or drop the '@@' text)"
        );
    }

    #[test]
    fn a_locator_only_narrows_the_search_forward() {
        let file = "fn a() {\n    return 1;\n}\nfn b() {\n    return 1;\n}\nfn c() {\n    return 1;\n}";
        // Two hits after the locator are still refused: it narrows the search, it never picks the first.
        assert!(run(file, "@@ fn b() {\n-    return 1;\n+    return 2;\n")
            .unwrap_err()
            .contains("matches at line 5 and at line 8 (searching from line 5)"));
        // A repeated locator line: the first at or after the cursor, so a later place is never skipped.
        let file = "x\n    return 1;\nx\n    return 2;";
        assert_eq!(
            run(file, "@@ x\n-    return 2;\n+    return 3;\n").unwrap(),
            "x\n    return 1;\nx\n    return 3;"
        );
    }

    #[test]
    fn chunks_apply_in_order() {
        let file = "a\nb\nc\nd\ne";
        assert_eq!(run(file, "@@\n-b\n+B\n@@\n-d\n+D\n").unwrap(), "a\nB\nc\nD\ne");
        // a chunk before the cursor does not match
        assert!(run(file, "@@\n-d\n+D\n@@\n-b\n+B\n")
            .unwrap_err()
            .contains("Chunk 2 of 2 did not match at or after line 5"));
    }

    #[test]
    fn mismatch_shows_expected_and_nearest() {
        let err = run("alpha\nbeta\ngamma\ndelta", "@@\n beta\n-gamma2\n+x\n").unwrap_err();
        assert_eq!(
            err,
            "apply_patch failed (no-change): context mismatch in 'f'. Chunk 1 of 1 did not match at or after line 1. Expected lines:\n  | beta\n  | gamma2\nNearest candidate region (lines 2-3):\n  | beta\n  | gamma\nRe-read the file and retry with context lines copied exactly from it."
        );
        let err = run("alpha", "@@\n-zzz\n").unwrap_err();
        assert!(err.contains("No similar lines were found in the file."), "{err}");
        // no equal line: the most similar one by words
        let err = run(
            "a\nfn greet(name) {\n  return name;\n}",
            "@@\n-fn greet(person) {\n+x\n",
        )
        .unwrap_err();
        assert!(
            err.contains("Nearest candidate region (lines 2-2):\n  | fn greet(name) {"),
            "{err}"
        );
        let err = run("fn a\nx", "@@ fn a\n fn a\n-x\n+y\n").unwrap_err();
        assert!(err.contains("do not repeat it as the first context line"), "{err}");
    }

    #[test]
    fn expected_lines_are_listed_up_to_twelve() {
        let old: String = (0..13).map(|i| format!("-gone {i}\n")).collect();
        let err = run("x", &format!("@@\n{old}")).unwrap_err();
        assert!(err.contains("  | gone 11\n  … (1 more line)"), "{err}");
        assert!(!err.contains("| gone 12"));
        let old: String = (0..12).map(|i| format!("-gone {i}\n")).collect();
        let err = run("x", &format!("@@\n{old}")).unwrap_err();
        assert!(err.contains("  | gone 11\nNo similar lines"), "{err}");
    }

    #[test]
    fn long_lines_are_clipped_at_200_characters() {
        let exact = "é".repeat(200);
        assert_eq!(clip(&exact), exact);
        let long = "é".repeat(201);
        assert_eq!(clip(&long), format!("{}…", "é".repeat(200)));
    }

    #[test]
    fn trailing_empty_line_retry() {
        // old side ends with an empty context line that the file lacks (file ends at 'c')
        assert_eq!(run("a\nb\nc", "@@\n b\n-c\n+C\n\n").unwrap(), "a\nb\nC");
        // new side's trailing empty line is dropped too
        assert_eq!(run("a\nb", "@@\n-b\n+B\n+\n-\n").unwrap(), "a\nB");
        // never shrinks to an empty pattern
        assert!(run("a", "@@\n-\n").unwrap_err().contains("context mismatch"));
    }

    #[test]
    fn end_of_file_only_tries_the_end() {
        let file = "x\ny\nx";
        assert_eq!(run(file, "@@\n-x\n+Z\n*** End of File\n").unwrap(), "x\ny\nZ");
        assert!(run("x\ny", "@@\n-x\n+Z\n*** End of File\n")
            .unwrap_err()
            .contains("did not match at the end of the file"));
    }

    #[test]
    fn pure_additions() {
        // no locator: end of file (Codex)
        assert_eq!(run("a\nb", "+c\n").unwrap(), "a\nb\nc");
        assert_eq!(run("a\nb", "@@\n+c\n").unwrap(), "a\nb\nc");
        // with a locator: at the cursor, right after the locator line
        assert_eq!(run("a\nb\nc", "@@ a\n+x\n").unwrap(), "a\nx\nb\nc");
        // into an empty file
        assert_eq!(run("", "+x\n+y\n").unwrap(), "x\ny");
        // EOF pure addition after an edit at the end
        assert_eq!(run("a\nb", "@@\n-b\n+B\n@@\n+c\n").unwrap(), "a\nB\nc");
    }

    #[test]
    fn linear_lookup_on_a_big_file() {
        let lines: Vec<String> = (0..50_000).map(|i| format!("line {i}")).collect();
        let refs: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
        let mut body = String::new();
        for i in (100..50_000).step_by(100) {
            body.push_str(&format!("@@\n line {}\n-line {}\n+LINE {}\n", i - 1, i, i));
        }
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let parsed = parse(&patch).unwrap();
        let crate::patch::parser::Hunk::Update { chunks, .. } = &parsed.hunks[0] else {
            unreachable!()
        };
        let edits = plan("f", &refs, chunks).unwrap();
        assert_eq!(edits.len(), 499);
        let out = apply_edits(&refs, &edits);
        assert_eq!(out[200], "LINE 200");
        assert_eq!(out.len(), 50_000);
    }

    #[test]
    fn drifted_context_is_recovered_where_the_standing_context_points_alone() {
        let chunk = "@@\n b\n c\n d\n-x\n+X\n e\n f\n g\n";
        // c and g changed since the patch was written: d (above) and e, f (below) still stand next to x.
        assert_eq!(
            run("a\nb\nC2\nd\nx\ne\nf\ng2\nh", chunk).unwrap(),
            "a\nb\nC2\nd\nX\ne\nf\ng2\nh"
        );
        // A line inserted between the context lines of one side: what stands next to the core is the evidence.
        assert_eq!(
            run("b\nc\nd\nx\ne\nnew\nf\ng", chunk).unwrap(),
            "b\nc\nd\nX\ne\nnew\nf\ng"
        );
        // The other places of the core have less context standing: the drifted place still wins.
        assert_eq!(
            run("d\nx\nq\nb\nc\nd\nx\ne\nf\nG", chunk).unwrap(),
            "d\nx\nq\nb\nc\nd\nX\ne\nf\nG"
        );
        // Reindented context still stands (loosest tier); the core itself is the file's bytes.
        assert_eq!(run("b\n  c\nd\nx\n\te\nF", chunk).unwrap(), "b\n  c\nd\nX\n\te\nF");
    }

    #[test]
    fn drift_recovery_refuses_what_it_cannot_prove() {
        let chunk = "@@\n b\n c\n d\n-x\n+X\n e\n f\n g\n";
        let refused = |file: &str| {
            let e = run(file, chunk).unwrap_err();
            assert!(e.contains("context mismatch"), "{e}");
            assert!(e.contains("Re-read the file"), "{e}");
        };
        // A line the chunk replaces changed (here only its whitespace): a conflict, even though its context stands.
        refused("b\nc\nd\nx \ne\nf\nG");
        // The core's own line changed, and a copy of it elsewhere has some of the context: the copy is not taken,
        // because the changed place's context still stands whole and points there.
        refused("d\nx\ne\nq\nb\nc\nd\nx2\ne\nf\ng");
        // Two places with the same standing context: ambiguous.
        refused("d\nx\ne\nq\nd\nx\ne\nr");
        // No context stands on one side that had some.
        refused("b\nc\nd\nx\nE\nf\ng2");
        refused("b\nc\nD\nx\ne\nf\ng2");
        // A pure insertion between two blank lines, after a block that also ends in two blank lines was added
        // in between: above the block, three context lines stand before and one after; below it, one before and
        // three after. Equal evidence: refused (placing it below the block would be wrong).
        let ins = "@@\n p\n q\n \n+new\n \n r\n s\n";
        let e = run("p\nq\n\n\nt\nu\n\n\nr\ns", ins).unwrap_err();
        assert!(e.contains("context mismatch"), "{e}");
        // Without the block, the insertion lands as usual; with drift on one side only, it lands where it stands.
        assert_eq!(run("p\nq\n\n\nr\ns", ins).unwrap(), "p\nq\n\nnew\n\nr\ns");
        assert_eq!(run("p\nq\n\n\nr\nS2", ins).unwrap(), "p\nq\n\nnew\n\nr\nS2");
        // The end-of-file anchor is never recovered.
        assert!(run("a\nb\nc2", "@@\n a\n-b\n+B\n c\n*** End of File\n").is_err());
        // Chunks stay in order: the only recoverable place lies before the cursor.
        assert!(run("d\nx\ne\nz\nb\nz", "@@\n z\n-b\n+B\n z\n@@\n c\n d\n-x\n+X\n e\n").is_err());
    }

    #[test]
    fn a_tie_is_broken_by_context_that_resumes_past_lines_inserted_since() {
        let chunk = "@@\n b\n c\n d\n-x\n+X\n e\n f\n g\n";
        // Both places have b c d above and e below; only at the first do f, g follow, past one line inserted since.
        assert_eq!(
            run("b\nc\nd\nx\ne\nnew\nf\ng\nq\nb\nc\nd\nx\ne\nr", chunk).unwrap(),
            "b\nc\nd\nX\ne\nnew\nf\ng\nq\nb\nc\nd\nx\ne\nr"
        );
        // The rest of the context resumes at both places: still a tie, refused.
        let both = "b\nc\nd\nx\ne\nnew\nf\ng\nq\nb\nc\nd\nx\ne\nnew2\nf\ng";
        assert!(run(both, chunk).unwrap_err().contains("context mismatch"));
        // The skipped lines may hold the other place: f, g below the second place are reached from both, so they
        // count for both and the tie stands (they could be the first place's context with a copy inserted between).
        let across = "b\nc\nd\nx\ne\nr\nb\nc\nd\nx\ne\nnew\nf\ng";
        assert!(run(across, chunk).unwrap_err().contains("context mismatch"));
        // At most MAX_DRIFT_GAP lines may lie between the break and the rest.
        let gap = |k: usize| {
            let inserted: String = (0..k).map(|i| format!("new{i}\n")).collect();
            format!("b\nc\nd\nx\ne\n{inserted}f\ng\nq\nb\nc\nd\nx\ne\nr")
        };
        assert!(run(&gap(MAX_DRIFT_GAP), chunk).unwrap().starts_with("b\nc\nd\nX\ne\n"));
        assert!(run(&gap(MAX_DRIFT_GAP + 1), chunk)
            .unwrap_err()
            .contains("context mismatch"));
        // Above the core too: b, c stand above the second place past one inserted line.
        assert_eq!(
            run("q\nd\nx\ne\nf\ng\nb\nc\nnew\nd\nx\ne\nf\ng", chunk).unwrap(),
            "q\nd\nx\ne\nf\ng\nb\nc\nnew\nd\nX\ne\nf\ng"
        );
        // No line stands right below the core at either place: refused, even though e, f, g stand further down.
        assert!(run("b\nc\nd\nx\nnew\ne\nf\ng\nq\nb\nc\nd\nx\nr", chunk)
            .unwrap_err()
            .contains("context mismatch"));
    }

    #[test]
    fn a_tie_in_the_loosest_tier_is_broken_by_context_that_holds_in_a_stricter_one() {
        // A line added inside a closing block, whose line above changed since: between `  }` and `}`, and between
        // the two `}`, as much context stands ignoring indentation, but only at the first does it hold exactly.
        let chunk = "@@\n     a\n   }\n+  b\n }\n";
        assert_eq!(run("    z\n  }\n}\n}", chunk).unwrap(), "    z\n  }\n  b\n}\n}");
        // The same indentation at both places: nothing tells them apart, refused.
        assert!(run("    z\n}\n}\n}", chunk).unwrap_err().contains("context mismatch"));
    }

    #[test]
    fn a_changed_copy_level_with_the_place_loses_to_context_that_resumes_there() {
        let chunk = "@@\n });\n \n req\n-.get(0)\n-.expect(0)\n+.get(1)\n+.expect(1)\n })\n \n it(n)\n";
        let own = "});\n\nreq\n.get(0)\n.expect(0)\n})\n\nit(c)\n";
        let copy = "});\n\nreq\n.get(0)\n.expect(9)\n})\n\nit(z)";
        // The copy could be the chunk's place with `.expect` changed, and as much context stands there; but only
        // past the byte-identical place does `it(n)` follow, after a test inserted since.
        let file = [own, "})\n\nit(n)\n", copy].concat();
        assert_eq!(
            run(&file, chunk).unwrap(),
            [own.replace("(0)", "(1)").as_str(), "})\n\nit(n)\n", copy].concat()
        );
        // `it(n)` after the copy instead: the copy is as well explained, and as its core differs, nothing is guessed.
        let file = [own, copy, "\nit(n)"].concat();
        assert!(run(&file, chunk).unwrap_err().contains("context mismatch"));
    }

    #[test]
    fn drift_between_two_changes_of_one_chunk_is_recovered_change_by_change() {
        // One chunk, two changes with `m1 m2 m3` between them; drift added two lines inside that run.
        let chunk = "@@\n a\n b\n c\n-x\n+X\n m1\n m2\n m3\n-y\n+Y\n d\n e\n f\n";
        let file = "a\nb\nc\nx\nm1\nnew1\nnew2\nm2\nm3\ny\nd\ne\nf";
        assert_eq!(
            run(file, chunk).unwrap(),
            "a\nb\nc\nX\nm1\nnew1\nnew2\nm2\nm3\nY\nd\ne\nf"
        );
        // A part that is ambiguous on its own refuses the whole chunk: nothing is half applied.
        let twice = "a\nb\nc\nx\nm1\nnew\nm2\nm3\ny\nd\ne\nf\nm2\nm3\ny\nd\ne\nf";
        let e = run(twice, chunk).unwrap_err();
        assert!(e.contains("context mismatch"), "{e}");
        // A changed line of the second change (a conflict) refuses it too.
        assert!(run("a\nb\nc\nx\nm1\nnew\nm2\nm3\ny2\nd\ne\nf", chunk).is_err());
    }

    #[test]
    fn drift_that_blanks_a_whitespace_line_and_adds_a_block_below_is_recovered() {
        let file = "a\n});\n\nrequest(app)\n.get(0)\n.expect(0)\n})\n\nit('cross')\nrequest(app)\n})\n\nit('naming')";
        let chunk =
            "@@\n });\n \n request(app)\n-.get(0)\n-.expect(0)\n+.get(1)\n+.expect(1)\n })\n     \n it('naming')\n";
        assert_eq!(
            run(file, chunk).unwrap(),
            "a\n});\n\nrequest(app)\n.get(1)\n.expect(1)\n})\n\nit('cross')\nrequest(app)\n})\n\nit('naming')"
        );
    }

    #[test]
    fn places_with_another_core_compete_only_when_they_could_be_a_changed_copy() {
        let chunk = "@@\n });\n \n req\n-.get(0)\n-.expect(0)\n+.get(1)\n+.expect(1)\n })\n \n it(n)\n";
        let tail = "});\n\nreq\n.get(0)\n.expect(0)\n})\n\nit(c)";
        // Another test with the same standing context and an unrelated core: the drifted place is still proven.
        let file = ["});\n\nreq\n.get(9)\n.expect(9)\n})\n\nit(z)\n", tail].concat();
        assert_eq!(
            run(&file, chunk).unwrap(),
            "});\n\nreq\n.get(9)\n.expect(9)\n})\n\nit(z)\n});\n\nreq\n.get(1)\n.expect(1)\n})\n\nit(c)"
        );
        // One whose core shares a line in its slot could be the chunk's own place with the other line changed.
        let file = ["});\n\nreq\n.get(0)\n.expect(9)\n})\n\nit(z)\n", tail].concat();
        assert!(run(&file, chunk).unwrap_err().contains("context mismatch"));
    }
}
