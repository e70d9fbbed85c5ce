//! The per-session snapshot store (docs/spec/host-tools.md, "Session snapshot store"): what the model has been shown.
//! Read, Grep and Write record the text they showed under its tag together with the lines the model actually saw;
//! Edit uses it for the provenance gate (anchors must be seen) and for drift recovery (the tagged snapshot diffed
//! against the live file). Memory only, bounded: per path at most 4 versions, per session at most 64 paths and
//! 8 MiB of retained text; a file over 2 MiB is tagged but its text is not retained.
//!
//! Two states must never be confused: **no record** (no version with that tag: the provenance gate is skipped) and
//! an **empty seen set** (a version exists but the model saw none of its lines: every anchor is refused).

use super::tag::{Normalized, Tagged};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Versions kept per path.
pub const MAX_VERSIONS: usize = 4;
/// Paths kept per session.
pub const MAX_PATHS: usize = 64;
/// Retained bytes per session (text plus seen-set bookkeeping).
pub const MAX_SESSION_BYTES: usize = 8 * 1024 * 1024;
/// Files larger than this are tagged but their text is not retained.
pub const MAX_RETAINED_FILE: usize = 2 * 1024 * 1024;

/// A set of 1-based line numbers kept as sorted, disjoint, non-adjacent inclusive ranges (paged reads stay small).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineSet {
    ranges: Vec<(u32, u32)>,
}

impl LineSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds lines `a..=b` (`a <= b`), merging with overlapping or adjacent ranges.
    pub fn insert_range(&mut self, a: u32, b: u32) {
        debug_assert!(a <= b);
        let start = self.ranges.partition_point(|&(_, hi)| hi.saturating_add(1) < a);
        let mut lo = a;
        let mut hi = b;
        let mut end = start;
        while end < self.ranges.len() && self.ranges[end].0 <= b.saturating_add(1) {
            lo = lo.min(self.ranges[end].0);
            hi = hi.max(self.ranges[end].1);
            end += 1;
        }
        self.ranges.splice(start..end, [(lo, hi)]);
    }

    pub fn insert(&mut self, n: u32) {
        self.insert_range(n, n);
    }

    pub fn union_with(&mut self, other: &LineSet) {
        for &(a, b) in &other.ranges {
            self.insert_range(a, b);
        }
    }

    pub fn contains(&self, n: u32) -> bool {
        let i = self.ranges.partition_point(|&(_, hi)| hi < n);
        i < self.ranges.len() && self.ranges[i].0 <= n
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many lines are in the set.
    pub fn count(&self) -> u64 {
        self.ranges.iter().map(|&(a, b)| u64::from(b - a) + 1).sum()
    }

    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    fn bytes(&self) -> usize {
        self.ranges.len() * std::mem::size_of::<(u32, u32)>()
    }
}

/// Which lines of a version the model has seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Every line (Write: the model supplied the whole text).
    All,
    /// Exactly these lines (possibly none: Grep's count/files-with-matches modes).
    Lines(LineSet),
}

impl Seen {
    pub fn contains(&self, n: u32) -> bool {
        match self {
            Seen::All => true,
            Seen::Lines(s) => s.contains(n),
        }
    }

    fn union_with(&mut self, other: &Seen) {
        match (&mut *self, other) {
            (Seen::All, _) => {}
            (_, Seen::All) => *self = Seen::All,
            (Seen::Lines(a), Seen::Lines(b)) => a.union_with(b),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Seen::All => 0,
            Seen::Lines(s) => s.bytes(),
        }
    }
}

/// One recorded version of a file.
#[derive(Debug, Clone)]
pub struct Version {
    pub tag: String,
    /// SHA-256 of the normalized text: two versions are the same text only if these are equal.
    pub digest: [u8; 32],
    /// Length of the normalized text in bytes.
    pub len: usize,
    /// XXH3-128 of the normalized text (`Normalized::fp`): kept for every version, retained text or not, so Edit can
    /// tell that a file over `MAX_RETAINED_FILE` is still this version without hashing it with SHA-256.
    pub fp: u128,
    /// The text, unless the file was over `MAX_RETAINED_FILE` (tagged, not retained) or trimmed for the byte budget.
    pub text: Option<Arc<str>>,
    pub seen: Seen,
    used: u64,
}

impl Version {
    fn bytes(&self) -> usize {
        self.text.as_ref().map_or(0, |t| t.len()) + self.seen.bytes()
    }
}

/// What the store knows about one path and tag, for the provenance gate.
#[derive(Debug, PartialEq, Eq)]
pub enum Provenance<'a> {
    /// No version with this tag is recorded: the gate is skipped.
    NoRecord,
    /// The seen lines of the newest version with this tag (an empty set refuses every anchor).
    Seen(&'a Seen),
}

/// The store of one session. Keys are canonical absolute paths (so aliases share one entry).
#[derive(Debug, Default)]
pub struct SnapshotStore {
    paths: HashMap<PathBuf, Vec<Version>>,
    bytes: usize,
    tick: u64,
}

impl SnapshotStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// Records that the model was shown `norm` at `key` with `seen` lines. The same text re-read unions the seen
    /// sets (paged reads combine) and becomes the newest version; new text is added, the oldest version beyond
    /// `MAX_VERSIONS` dropped; then the path and byte bounds are enforced, evicting least recently used versions.
    pub fn record(&mut self, key: &Path, norm: &Normalized, seen: Seen) {
        self.record_tagged(key, &Tagged::of(norm), Some(&norm.text), seen)
    }

    /// `record` of a version known by its hashes (a large file streamed by Read or Grep, docs/host.md "Large files");
    /// `text` is retained only if given and at most `MAX_RETAINED_FILE`.
    pub fn record_tagged(&mut self, key: &Path, t: &Tagged, text: Option<&str>, seen: Seen) {
        let tick = self.next_tick();
        if !self.paths.contains_key(key) && self.paths.len() >= MAX_PATHS {
            self.evict_oldest_path();
        }
        let versions = self.paths.entry(key.to_path_buf()).or_default();
        if let Some(i) = versions
            .iter()
            .position(|v| v.digest == t.digest && v.len as u64 == t.len)
        {
            let mut v = versions.remove(i);
            let before = v.bytes();
            v.seen.union_with(&seen);
            v.used = tick;
            self.bytes = self.bytes - before + v.bytes();
            versions.push(v);
        } else {
            let text = text.filter(|x| x.len() <= MAX_RETAINED_FILE).map(Arc::<str>::from);
            let v = Version {
                tag: t.tag.clone(),
                digest: t.digest,
                len: usize::try_from(t.len).unwrap_or(usize::MAX),
                fp: t.fp,
                text,
                seen,
                used: tick,
            };
            self.bytes += v.bytes();
            versions.push(v);
            if versions.len() > MAX_VERSIONS {
                let old = versions.remove(0);
                self.bytes -= old.bytes();
            }
        }
        self.enforce_bytes(key);
    }

    /// Marks `lines` seen in the version of `key` whose text has `digest` (the complete reveal of EDIT_LINES_UNSEEN).
    /// Returns false when that version is no longer recorded.
    pub fn mark_seen(&mut self, key: &Path, digest: &[u8; 32], lines: &LineSet) -> bool {
        let Some(v) = self
            .paths
            .get_mut(key)
            .and_then(|vs| vs.iter_mut().find(|v| &v.digest == digest))
        else {
            return false;
        };
        let before = v.bytes();
        v.seen.union_with(&Seen::Lines(lines.clone()));
        self.bytes = self.bytes - before + v.bytes();
        self.enforce_bytes(key);
        true
    }

    /// The newest version of `key` with `tag` (tags are compared case-insensitively).
    pub fn lookup(&mut self, key: &Path, tag: &str) -> Option<&Version> {
        let tick = self.next_tick();
        let v = self
            .paths
            .get_mut(key)?
            .iter_mut()
            .rev()
            .find(|v| v.tag.eq_ignore_ascii_case(tag))?;
        v.used = tick;
        Some(v)
    }

    /// The provenance gate's question: which lines of `key` under `tag` has the model seen?
    pub fn provenance(&mut self, key: &Path, tag: &str) -> Provenance<'_> {
        match self.lookup(key, tag) {
            None => Provenance::NoRecord,
            Some(v) => Provenance::Seen(&v.seen),
        }
    }

    /// All recorded versions of `key`, oldest first.
    pub fn versions(&self, key: &Path) -> &[Version] {
        self.paths.get(key).map_or(&[], |v| v.as_slice())
    }

    /// Recorded paths whose file name is `name` and that have a version tagged `tag` (Edit's path rebinding).
    pub fn find_by_name_and_tag(&self, name: &str, tag: &str) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .paths
            .iter()
            .filter(|(p, vs)| {
                p.file_name().is_some_and(|n| n == name) && vs.iter().any(|v| v.tag.eq_ignore_ascii_case(tag))
            })
            .map(|(p, _)| p.clone())
            .collect();
        out.sort();
        out
    }

    /// Forgets every version of `key` (a rollback replaced its content, docs/spec/host-tools.md "Mutation ordering").
    pub fn invalidate(&mut self, key: &Path) {
        if let Some(vs) = self.paths.remove(key) {
            self.bytes -= vs.iter().map(Version::bytes).sum::<usize>();
        }
    }

    pub fn path_count(&self) -> usize {
        self.paths.len()
    }

    /// Bytes currently retained (text plus seen-set ranges); never above `MAX_SESSION_BYTES` after a call returns.
    pub fn retained_bytes(&self) -> usize {
        self.bytes
    }

    fn evict_oldest_path(&mut self) {
        let oldest = self
            .paths
            .iter()
            .map(|(p, vs)| (vs.iter().map(|v| v.used).max().unwrap_or(0), p))
            .min()
            .map(|(_, p)| p.clone());
        if let Some(p) = oldest {
            self.invalidate(&p);
        }
    }

    /// Drops least recently used versions (the newest version of `keep` last) until within the byte budget. The
    /// newest version of `keep` is never dropped: its text is released instead (tagged, not retained), which keeps
    /// its seen set for the provenance gate.
    fn enforce_bytes(&mut self, keep: &Path) {
        while self.bytes > MAX_SESSION_BYTES {
            let victim = self
                .paths
                .iter()
                .flat_map(|(p, vs)| {
                    let n = vs.len();
                    vs.iter()
                        .enumerate()
                        .filter(move |(i, _)| !(p.as_path() == keep && *i + 1 == n))
                        .map(move |(i, v)| (v.used, p.clone(), i))
                })
                .min();
            match victim {
                Some((_, p, i)) => {
                    let vs = self.paths.get_mut(&p).expect("victim path exists");
                    let v = vs.remove(i);
                    self.bytes -= v.bytes();
                    if vs.is_empty() {
                        self.paths.remove(&p);
                    }
                }
                None => {
                    let Some(v) = self.paths.get_mut(keep).and_then(|vs| vs.last_mut()) else {
                        return;
                    };
                    let freed = v.text.take().map_or(0, |t| t.len());
                    self.bytes -= freed;
                    if freed == 0 {
                        return;
                    }
                }
            }
        }
    }
}

/// Where Read and Grep record what they showed: the store itself, or a session's shared store, locked only for the
/// moment of recording so searches of one session run in parallel.
pub trait Recorder {
    fn record(&mut self, key: &Path, norm: &Normalized, seen: Seen);
    /// Records a version known only by its hashes (a streamed large file; its text is not retained).
    fn record_tagged(&mut self, key: &Path, t: &Tagged, seen: Seen);
}

impl Recorder for SnapshotStore {
    fn record(&mut self, key: &Path, norm: &Normalized, seen: Seen) {
        SnapshotStore::record(self, key, norm, seen)
    }
    fn record_tagged(&mut self, key: &Path, t: &Tagged, seen: Seen) {
        SnapshotStore::record_tagged(self, key, t, None, seen)
    }
}

impl Recorder for &Mutex<SnapshotStore> {
    fn record(&mut self, key: &Path, norm: &Normalized, seen: Seen) {
        // A poisoned lock only means another call panicked mid-record; the store's bounds still hold.
        self.lock().unwrap_or_else(|p| p.into_inner()).record(key, norm, seen)
    }
    fn record_tagged(&mut self, key: &Path, t: &Tagged, seen: Seen) {
        self.lock()
            .unwrap_or_else(|p| p.into_inner())
            .record_tagged(key, t, None, seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tag::normalize;

    fn lines(r: &[(u32, u32)]) -> Seen {
        let mut s = LineSet::new();
        for &(a, b) in r {
            s.insert_range(a, b);
        }
        Seen::Lines(s)
    }

    #[test]
    fn line_set_merges_overlapping_and_adjacent_ranges() {
        let mut s = LineSet::new();
        s.insert_range(10, 20);
        s.insert_range(1, 3);
        s.insert_range(4, 5);
        s.insert_range(30, 30);
        s.insert_range(19, 29);
        assert_eq!(s.ranges(), &[(1, 5), (10, 30)]);
        assert_eq!(s.count(), 26);
        assert!(s.contains(1) && s.contains(30) && !s.contains(6) && !s.contains(31) && !s.contains(0));
        s.insert(u32::MAX);
        assert!(s.contains(u32::MAX));
    }

    proptest::proptest! {
        /// LineSet against a plain set: same membership and count, and ranges stay sorted, disjoint, non-adjacent.
        #[test]
        fn line_set_agrees_with_a_plain_set(ranges in proptest::collection::vec((1u32..200, 0u32..20), 0..30)) {
            let mut s = LineSet::new();
            let mut model = std::collections::BTreeSet::new();
            for (a, len) in ranges {
                s.insert_range(a, a + len);
                model.extend(a..=a + len);
            }
            for n in 0..230 {
                proptest::prop_assert_eq!(s.contains(n), model.contains(&n), "line {}", n);
            }
            proptest::prop_assert_eq!(s.count(), model.len() as u64);
            for w in s.ranges().windows(2) {
                proptest::prop_assert!(w[0].1 + 1 < w[1].0, "{:?}", s.ranges());
            }
        }
    }

    #[test]
    fn same_text_reread_unions_seen_lines() {
        let mut st = SnapshotStore::new();
        let k = Path::new("/w/a.txt");
        let n = normalize(b"1\n2\n3\n4\n");
        st.record(k, &n, lines(&[(1, 2)]));
        st.record(k, &n, lines(&[(4, 4)]));
        assert_eq!(st.versions(k).len(), 1);
        let Provenance::Seen(seen) = st.provenance(k, &n.tag) else {
            panic!("recorded")
        };
        assert!(seen.contains(1) && seen.contains(2) && !seen.contains(3) && seen.contains(4));
        st.record(k, &n, Seen::All);
        assert_eq!(st.provenance(k, &n.tag), Provenance::Seen(&Seen::All));
        // Lowercase tags find the same version.
        assert!(st.lookup(k, &n.tag.to_lowercase()).is_some());
    }

    #[test]
    fn no_record_and_empty_seen_set_stay_different() {
        let mut st = SnapshotStore::new();
        let k = Path::new("/w/a.txt");
        let n = normalize(b"x\n");
        assert_eq!(st.provenance(k, &n.tag), Provenance::NoRecord);
        st.record(k, &n, Seen::Lines(LineSet::new()));
        match st.provenance(k, &n.tag) {
            Provenance::Seen(Seen::Lines(s)) => assert!(s.is_empty() && !s.contains(1)),
            other => panic!("expected an empty seen set, got {other:?}"),
        }
        assert_eq!(st.provenance(k, "0000"), Provenance::NoRecord);
    }

    #[test]
    fn at_most_four_versions_per_path() {
        let mut st = SnapshotStore::new();
        let k = Path::new("/w/a.txt");
        let texts: Vec<_> = (0..5).map(|i| normalize(format!("v{i}\n").as_bytes())).collect();
        for t in &texts {
            st.record(k, t, Seen::All);
        }
        let vs = st.versions(k);
        assert_eq!(vs.len(), MAX_VERSIONS);
        assert_eq!(vs[0].digest, texts[1].digest, "the oldest version went first");
        assert!(st.lookup(k, &texts[0].tag).is_none_or(|v| v.digest != texts[0].digest));
        assert_eq!(st.retained_bytes(), 4 * 3);
    }

    #[test]
    fn at_most_64_paths_evicting_the_least_recently_used() {
        let mut st = SnapshotStore::new();
        let n = normalize(b"same\n");
        for i in 0..MAX_PATHS {
            st.record(&PathBuf::from(format!("/w/{i}")), &n, Seen::All);
        }
        assert_eq!(st.path_count(), MAX_PATHS);
        // Touch path 0 so path 1 is now the least recently used.
        assert!(st.lookup(Path::new("/w/0"), &n.tag).is_some());
        st.record(Path::new("/w/new"), &n, Seen::All);
        assert_eq!(st.path_count(), MAX_PATHS);
        assert!(st.versions(Path::new("/w/1")).is_empty());
        assert!(!st.versions(Path::new("/w/0")).is_empty());
        assert_eq!(st.retained_bytes(), MAX_PATHS * 5);
    }

    #[test]
    fn files_over_2_mib_are_tagged_but_not_retained() {
        let mut st = SnapshotStore::new();
        let at = normalize(&vec![b'a'; MAX_RETAINED_FILE]);
        let over = normalize(&vec![b'b'; MAX_RETAINED_FILE + 1]);
        st.record(Path::new("/w/at"), &at, Seen::All);
        st.record(Path::new("/w/over"), &over, lines(&[(1, 1)]));
        assert!(st.versions(Path::new("/w/at"))[0].text.is_some());
        let v = st.lookup(Path::new("/w/over"), &over.tag).expect("tagged");
        assert!(v.text.is_none() && v.seen.contains(1));
        // Not retained, but fingerprinted: Edit can still recognise the unchanged file.
        assert_eq!((v.fp, v.len), (over.fp, over.text.len()));
        assert_eq!(st.retained_bytes(), MAX_RETAINED_FILE + 8);
    }

    #[test]
    fn session_bytes_stay_within_8_mib() {
        let mut st = SnapshotStore::new();
        let texts: Vec<_> = (0..5u8)
            .map(|i| normalize(&vec![b'a' + i; MAX_RETAINED_FILE]))
            .collect();
        for (i, t) in texts.iter().enumerate() {
            st.record(&PathBuf::from(format!("/w/{i}")), t, Seen::All);
            assert!(st.retained_bytes() <= MAX_SESSION_BYTES);
        }
        // Four 2 MiB texts fit exactly; the fifth evicted the least recently used one.
        assert_eq!(st.retained_bytes(), MAX_SESSION_BYTES);
        assert!(st.versions(Path::new("/w/0")).is_empty());
        assert!(!st.versions(Path::new("/w/4")).is_empty());
        // Many small reads: still bounded, and the newest is always kept.
        for i in 0..10_000u32 {
            let t = normalize(format!("{i}\n").repeat(50).as_bytes());
            st.record(&PathBuf::from(format!("/w/f{}", i % 200)), &t, lines(&[(1, 1), (3, 3)]));
            assert!(st.retained_bytes() <= MAX_SESSION_BYTES && st.path_count() <= MAX_PATHS);
        }
        let accounted: usize = st.paths.values().flatten().map(Version::bytes).sum();
        assert_eq!(accounted, st.retained_bytes());
    }

    #[test]
    fn mark_seen_invalidate_and_rebinding_lookup() {
        let mut st = SnapshotStore::new();
        let n = normalize(b"a\nb\nc\n");
        st.record(Path::new("/w/x/lib.rs"), &n, lines(&[(1, 1)]));
        st.record(Path::new("/w/y/lib.rs"), &normalize(b"other\n"), Seen::All);
        let mut reveal = LineSet::new();
        reveal.insert_range(2, 3);
        assert!(st.mark_seen(Path::new("/w/x/lib.rs"), &n.digest, &reveal));
        assert!(!st.mark_seen(Path::new("/w/none"), &n.digest, &reveal));
        assert!(st.lookup(Path::new("/w/x/lib.rs"), &n.tag).unwrap().seen.contains(3));
        assert_eq!(
            st.find_by_name_and_tag("lib.rs", &n.tag),
            vec![PathBuf::from("/w/x/lib.rs")]
        );
        st.invalidate(Path::new("/w/x/lib.rs"));
        assert_eq!(st.provenance(Path::new("/w/x/lib.rs"), &n.tag), Provenance::NoRecord);
        assert_eq!(st.retained_bytes(), "other\n".len());
    }
}
