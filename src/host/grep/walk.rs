//! Grep's walk in path order (docs/host.md "Grep"): the tree is listed lazily in the order its paths sort as strings,
//! and the files are searched on every core in that order with a bounded look-ahead, handed back one by one in order
//! to the caller, which stops the walk as soon as it knows its answer (the first `limit` matches in path order, and
//! whether there are more). Nothing past that point is listed, and what was searched ahead is bounded.
//!
//! Why not `ignore`'s parallel walk: it visits files in no fixed order, so the first matches in path order are only
//! known once every file has been searched. The sorted walk here is `ignore`'s single-threaded one (the same ignore
//! rules as Glob); one thread at a time pulls a batch of paths from it while the others search.

use crate::host::error::Deadline;
use ignore::Walk;
use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as Atomic};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Paths pulled from the walk per turn at most (one thread lists while the others search).
const BATCH: usize = 64;
/// Files a thread takes to search per turn at most.
const CLAIM: usize = 4;
/// A thread lists the next paths once fewer than this many listed files are left for the others to take (with
/// `BATCH`, measured on the corpus of docs/host.md "Benchmark": 16 and 32 made twice as many threads wait, 128 gained
/// nothing).
const LOW_WATER: usize = 64;
/// Files searched ahead of the caller at most, per thread. Large, so that a slow file at the front (a 9 MB bundle)
/// does not leave the other threads idle once the window is full; what is searched past the point where the caller
/// stops stays a fraction of what it took (see `Shared::ahead`).
const AHEAD_PER_THREAD: usize = 256;

/// Whether `long` continues `short` with a byte that sorts before `/`: only then does a folder `short` sort differently
/// as a path (`short/…`) than as a name (`a` before `a.txt` by name, but `a.txt` before `a/x` by path).
fn continues_below_slash(short: &[u8], long: &[u8]) -> bool {
    long.len() > short.len() && long.starts_with(short) && long[short.len()] < b'/'
}

/// The order of two entries of one folder such that a depth-first walk lists paths exactly as they sort as strings
/// (the order Grep's results are shown in): by name, except that a folder sorts as its name followed by `/`. The
/// type is looked up (without following a symlink, which is never descended) only for the rare pair where that
/// matters, and remembered, so the order stays consistent within a sort even if the tree changes meanwhile.
pub(super) fn path_order() -> impl Fn(&Path, &Path) -> Ordering + Send + Sync + 'static {
    let folders: Mutex<HashMap<PathBuf, bool>> = Mutex::new(HashMap::new());
    move |a: &Path, b: &Path| {
        let (x, y) = (name(a), name(b));
        let is_dir = |p: &Path| {
            let mut known = folders.lock().unwrap_or_else(|e| e.into_inner());
            *known
                .entry(p.to_path_buf())
                .or_insert_with(|| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        };
        if continues_below_slash(x, y) && is_dir(a) {
            return Ordering::Greater;
        }
        if continues_below_slash(y, x) && is_dir(b) {
            return Ordering::Less;
        }
        x.cmp(y)
    }
}

/// The last component of a path the walk produced (joined names, never ending in `/` or `..`): the bytes after the
/// last `/`, found without parsing the path's components (this runs for every comparison of the sort).
fn name(p: &Path) -> &[u8] {
    let b = p.as_os_str().as_bytes();
    memchr::memrchr(b'/', b).map_or(b, |i| &b[i + 1..])
}

/// The regular files of a sorted walk, in order; the deadline is checked per entry, and a passed one ends the list
/// and sets `timed_out`. `ignore`'s sorted walk can panic when a folder is replaced while it lists it (its stack of
/// ignore rules is popped for a folder it never pushed): that ends the list and sets `changed`, so Grep answers with
/// an error instead of a partial list or a panic.
pub(super) struct Files<'a> {
    pub(super) walk: Walk,
    pub(super) deadline: Deadline,
    pub(super) timed_out: &'a AtomicBool,
    pub(super) changed: &'a AtomicBool,
}

impl Iterator for Files<'_> {
    type Item = PathBuf;

    fn next(&mut self) -> Option<PathBuf> {
        loop {
            if self.deadline.passed() {
                self.timed_out.store(true, Atomic::Relaxed);
                return None;
            }
            if self.changed.load(Atomic::Relaxed) {
                return None;
            }
            let walk = &mut self.walk;
            let Ok(next) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| walk.next())) else {
                self.changed.store(true, Atomic::Relaxed);
                return None;
            };
            // An entry the walk could not read (a folder without permission) is skipped, as ripgrep does.
            match next? {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => return Some(e.into_path()),
                _ => {}
            }
        }
    }
}

/// One listed file: its path until a thread takes it, then its result.
struct Slot<R> {
    path: Option<PathBuf>,
    done: Option<(PathBuf, R)>,
}

struct State<R> {
    /// Index of `slots[0]` in the walk's order (files before it were handed to the caller).
    base: usize,
    slots: VecDeque<Slot<R>>,
    /// Index of the first file no thread has taken.
    claimed: usize,
    /// A thread is pulling paths from the walk.
    walking: bool,
    /// The walk has no more paths.
    exhausted: bool,
    /// The caller has its answer: threads stop.
    stop: bool,
    /// Threads waiting on `changed`.
    sleepers: usize,
}

type Search<'a, W, R> = dyn Fn(&mut W, &Path) -> R + Sync + 'a;

struct Shared<'a, W, R> {
    state: Mutex<State<R>>,
    changed: Condvar,
    source: Mutex<Box<dyn Iterator<Item = PathBuf> + Send + 'a>>,
    search: &'a Search<'a, W, R>,
    cancel: &'a AtomicBool,
    threads: usize,
}

impl<W, R> Shared<'_, W, R> {
    fn lock(&self) -> MutexGuard<'_, State<R>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many files may be listed and not yet handed back: small at first (a call whose first files hold its
    /// answer searches little past them), growing with what the caller took (a quarter of it: the files searched in
    /// vain past the caller's answer stay under a quarter of those it needed, plus a few per thread), up to
    /// `AHEAD_PER_THREAD` per thread.
    fn ahead(&self, base: usize) -> usize {
        (base / 4 + 8 * self.threads).min(AHEAD_PER_THREAD * self.threads)
    }

    /// One unit of work for a thread: search the next file nobody has taken, or pull the next paths from the walk,
    /// or wait for either to become possible. Returns the lock again, and `true` when a helper may leave (the caller
    /// stopped, or every file is taken and the walk is done).
    fn step<'g>(
        &'g self,
        mut st: MutexGuard<'g, State<R>>,
        w: &mut W,
        helper: bool,
    ) -> (MutexGuard<'g, State<R>>, bool) {
        if st.stop {
            return (st, true);
        }
        let end = st.base + st.slots.len();
        let room = self.ahead(st.base).saturating_sub(st.slots.len());
        // The next paths are listed while the others still have files to search (fewer than `LOW_WATER` left
        // unclaimed), not once the queue ran dry: listing only then left the other threads waiting for every batch
        // (on two cores, four times as many waits per search).
        if !st.exhausted && !st.walking && room > 0 && end - st.claimed < LOW_WATER {
            return (self.walk(st, room), false);
        }
        if st.claimed < end {
            // A few files at a time: fewer turns of the lock per file searched.
            let (i, k) = (st.claimed, (end - st.claimed).min(CLAIM));
            st.claimed += k;
            let base = st.base;
            let paths: Vec<PathBuf> = (i..i + k)
                .map(|j| st.slots[j - base].path.take().expect("an unclaimed slot has its path"))
                .collect();
            drop(st);
            for (j, path) in (i..).zip(paths) {
                if self.cancel.load(Atomic::Relaxed) {
                    break;
                }
                let r = (self.search)(w, &path);
                // Each result is handed in as soon as it is ready: the caller may be waiting for this very file
                // (slots leave only once done, so this one is still queued).
                let mut g = self.lock();
                let base = g.base;
                g.slots[j - base].done = Some((path, r));
                if j == base {
                    self.wake(&g);
                }
            }
            return (self.lock(), false);
        }
        if helper && st.exhausted && st.claimed == st.base + st.slots.len() {
            return (st, true);
        }
        st.sleepers += 1;
        let mut st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        st.sleepers -= 1;
        (st, false)
    }

    /// Pulls up to `BATCH` paths (at most `room`) from the walk, outside the state's lock, and queues them.
    fn walk<'g>(&'g self, mut st: MutexGuard<'g, State<R>>, room: usize) -> MutexGuard<'g, State<R>> {
        st.walking = true;
        drop(st);
        let mut got = Vec::with_capacity(room.min(BATCH));
        let mut ended = false;
        {
            let mut source = self.source.lock().unwrap_or_else(|e| e.into_inner());
            while got.len() < room.min(BATCH) && !self.cancel.load(Atomic::Relaxed) {
                match source.next() {
                    Some(p) => got.push(p),
                    None => {
                        ended = true;
                        break;
                    }
                }
            }
        }
        let mut st = self.lock();
        st.walking = false;
        st.exhausted |= ended;
        st.slots.extend(got.into_iter().map(|p| Slot {
            path: Some(p),
            done: None,
        }));
        self.wake(&st);
        st
    }

    /// Wakes the threads waiting for a change, if any (a notification with no one waiting still costs a system call,
    /// and this runs about once per file).
    fn wake(&self, st: &State<R>) {
        if st.sleepers > 0 {
            self.changed.notify_all();
        }
    }
}

/// The caller's side of a walk in progress: results in path order (see `run`).
pub(super) struct Stream<'s, 'a, W, R> {
    shared: &'s Shared<'a, W, R>,
    local: W,
}

impl<W, R> Stream<'_, '_, W, R> {
    /// The next file in path order with its result, searched here if no other thread has it ready; `None` once the
    /// walk is done (or stopped).
    pub(super) fn next(&mut self) -> Option<(PathBuf, R)> {
        let shared = self.shared;
        let mut st = shared.lock();
        loop {
            if st.slots.front().is_some_and(|s| s.done.is_some()) {
                let was_full = st.slots.len() >= shared.ahead(st.base);
                let slot = st.slots.pop_front().expect("a front slot");
                st.base += 1;
                if was_full && !st.exhausted {
                    // Room to list again: a waiting thread may walk on.
                    shared.wake(&st);
                }
                return slot.done;
            }
            if st.stop || (st.slots.is_empty() && st.exhausted) {
                return None;
            }
            st = shared.step(st, &mut self.local, false).0;
        }
    }

    /// This thread's search state (for work the caller does itself, outside the walk).
    pub(super) fn local(&mut self) -> &mut W {
        &mut self.local
    }

    /// Ends the walk: no more paths are listed, searches in progress are abandoned (`cancel` is set), and the helper
    /// threads leave.
    pub(super) fn stop(&mut self) {
        self.shared.cancel.store(true, Atomic::Relaxed);
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
    }
}

/// Searches the files of `source` (in the order they come) on `threads` threads and runs `consume` with the results
/// handed back in that order. `local` is this thread's search state; each helper makes its own with `make` (a helper
/// that cannot leaves the work to the others). At most `AHEAD_PER_THREAD` files per thread are listed and not yet
/// handed back. When `consume` returns (or calls `stop`), `cancel` is set, the walk ends and the helpers are joined,
/// so no search outlives the call.
pub(super) fn run<'a, W, R: Send, T>(
    source: Box<dyn Iterator<Item = PathBuf> + Send + 'a>,
    threads: usize,
    cancel: &'a AtomicBool,
    local: W,
    make: &'a (dyn Fn() -> Option<W> + Sync + 'a),
    search: &'a Search<'a, W, R>,
    consume: impl FnOnce(&mut Stream<'_, 'a, W, R>) -> T,
) -> T {
    let threads = threads.max(1);
    let shared = Shared {
        state: Mutex::new(State {
            base: 0,
            slots: VecDeque::new(),
            claimed: 0,
            walking: false,
            exhausted: false,
            stop: false,
            sleepers: 0,
        }),
        changed: Condvar::new(),
        source: Mutex::new(source),
        search,
        cancel,
        threads,
    };
    let shared = &shared;
    std::thread::scope(|sc| {
        for _ in 1..threads {
            sc.spawn(move || {
                let Some(mut w) = make() else { return };
                let mut st = shared.lock();
                loop {
                    let (g, leave) = shared.step(st, &mut w, true);
                    if leave {
                        return;
                    }
                    st = g;
                }
            });
        }
        let mut stream = Stream { shared, local };
        let out = consume(&mut stream);
        stream.stop();
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::{Duration, Instant};
    use tempfile::TempDir;

    /// The files of a sorted walk of `root`, as `/`-separated paths relative to it.
    fn walked(root: &Path) -> Vec<String> {
        let mut w = crate::host::glob::walker(
            root,
            std::sync::Arc::new(crate::host::sensitive::Sensitive::new(None, None, &[])),
        );
        w.sort_by_file_path(path_order());
        let timed_out = AtomicBool::new(false);
        let changed = AtomicBool::new(false);
        Files {
            walk: w.build(),
            deadline: Deadline::none(),
            timed_out: &timed_out,
            changed: &changed,
        }
        .map(|p| p.strip_prefix(root).unwrap().to_str().unwrap().to_string())
        .collect()
    }

    #[test]
    fn a_folder_sorts_as_its_name_and_a_slash() {
        let t = TempDir::new().unwrap();
        for f in ["a/x", "a.txt", "a-b/y", "a b", "ab", "a0/z", "b", "é/q", "B"] {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        // By name alone "a" would come before "a b", "a-b" and "a.txt"; as a path "a/x" comes after them.
        assert_eq!(
            walked(t.path()),
            vec!["B", "a b", "a-b/y", "a.txt", "a/x", "a0/z", "ab", "b", "é/q"]
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        /// Whatever the names (prefixes of each other, bytes on both sides of `/`, multi-byte characters), the walk
        /// lists files exactly as their paths sort as strings.
        #[test]
        fn the_walk_lists_files_in_string_order(
            files in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec!["a", "a.", "a-", "a b", "a0", "b", "é", "A"]), 1..4),
                1..24,
            )
        ) {
            let t = TempDir::new().unwrap();
            let mut made: Vec<String> = Vec::new();
            for parts in files {
                let rel = parts.join("/");
                let p = t.path().join(&rel);
                // A name already taken by a file (or a folder) at another depth is skipped.
                if std::fs::create_dir_all(p.parent().unwrap()).is_err() || p.is_dir() || p.exists() {
                    continue;
                }
                std::fs::write(&p, "x").unwrap();
                made.push(rel);
            }
            made.sort();
            prop_assert_eq!(walked(t.path()), made);
        }
    }

    /// A source of `n` numbered paths that counts how many were pulled.
    fn numbered(n: usize, pulled: &AtomicUsize) -> Box<dyn Iterator<Item = PathBuf> + Send + '_> {
        Box::new((0..n).map(move |i| {
            pulled.fetch_add(1, Atomic::Relaxed);
            PathBuf::from(format!("{i:06}"))
        }))
    }

    fn index(p: &Path) -> usize {
        p.to_str().unwrap().parse().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Results come back in the walk's order whatever each search costs, and when the caller stops after `take`
        /// files, the walk has listed at most one look-ahead past them (a quarter of `take` plus eight per thread).
        #[test]
        fn results_come_back_in_order_and_the_walk_stops_with_the_caller(
            n in 0usize..400,
            take in 0usize..450,
            threads in 1usize..5,
            costs in proptest::collection::vec(0u32..2000, 1..64),
        ) {
            let pulled = AtomicUsize::new(0);
            let searched = AtomicUsize::new(0);
            let cancel = AtomicBool::new(false);
            let make = || Some(());
            let search = |_: &mut (), p: &Path| {
                searched.fetch_add(1, Atomic::Relaxed);
                let i = index(p);
                // Uneven work, so results are ready out of order.
                let mut x = i as u64;
                for _ in 0..costs[i % costs.len()] {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                (i, x)
            };
            let got = run(numbered(n, &pulled), threads, &cancel, (), &make, &search, |s| {
                let mut got = Vec::new();
                while got.len() < take {
                    match s.next() {
                        Some((p, (i, _))) => {
                            assert_eq!(index(&p), i);
                            got.push(i);
                        }
                        None => break,
                    }
                }
                got
            });
            prop_assert_eq!(got, (0..n.min(take)).collect::<Vec<_>>());
            // The look-ahead at its boundary: a quarter of what the caller took plus eight per thread, capped.
            let bound = take + (take / 4 + 8 * threads).min(AHEAD_PER_THREAD * threads);
            prop_assert!(pulled.load(Atomic::Relaxed) <= bound.min(n), "pulled {} of {n}", pulled.load(Atomic::Relaxed));
            prop_assert!(searched.load(Atomic::Relaxed) <= pulled.load(Atomic::Relaxed));
            prop_assert_eq!(cancel.load(Atomic::Relaxed), true);
        }
    }

    /// The walk lists the next paths while listed files are still waiting to be searched, not once every one was
    /// taken (the other threads would wait for each listing): with the caller alone, the path after the first window
    /// is pulled as soon as the window has room again, long before the window's files are all searched.
    #[test]
    fn the_next_paths_are_listed_before_the_queue_runs_dry() {
        let searched = AtomicUsize::new(0);
        let at_pull = Mutex::new(Vec::new());
        let source: Box<dyn Iterator<Item = PathBuf> + Send + '_> = Box::new((0..200usize).map(|i| {
            at_pull.lock().unwrap().push(searched.load(Atomic::SeqCst));
            PathBuf::from(format!("{i:06}"))
        }));
        let cancel = AtomicBool::new(false);
        let make = || Some(());
        let search = |_: &mut (), p: &Path| {
            searched.fetch_add(1, Atomic::SeqCst);
            index(p)
        };
        let got = run(source, 1, &cancel, (), &make, &search, |s| {
            std::iter::from_fn(|| s.next().map(|(_, i)| i)).collect::<Vec<_>>()
        });
        assert_eq!(got, (0..200).collect::<Vec<_>>());
        let at_pull = at_pull.into_inner().unwrap();
        // The first window is eight per thread plus nothing yet taken: 8 paths (one thread).
        let first = 8;
        assert!(at_pull[..first].iter().all(|&n| n == 0), "{at_pull:?}");
        assert!(
            at_pull[first] < first,
            "path {first} was pulled only after {} of the first {first} files were searched",
            at_pull[first]
        );
    }

    /// A search still running when the caller has its answer is cancelled (it sees `cancel`), and `run` returns only
    /// after every helper has left: no search outlives the call.
    #[test]
    fn stopping_cancels_searches_in_progress_and_joins_the_helpers() {
        let pulled = AtomicUsize::new(0);
        let (running, abandoned) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let cancel = AtomicBool::new(false);
        // The helpers' state is `false`; the caller's own is `true` and never blocks.
        let make = || Some(false);
        let search = |caller: &mut bool, p: &Path| {
            if *caller || index(p) == 0 {
                return index(p);
            }
            running.fetch_add(1, Atomic::SeqCst);
            let start = Instant::now();
            while !cancel.load(Atomic::Relaxed) {
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "a search was never cancelled"
                );
                std::thread::yield_now();
            }
            abandoned.fetch_add(1, Atomic::SeqCst);
            running.fetch_sub(1, Atomic::SeqCst);
            usize::MAX
        };
        let first = run(numbered(10_000, &pulled), 4, &cancel, true, &make, &search, |s| {
            let first = s.next().map(|(_, i)| i);
            // Wait (bounded) until the helpers are inside searches that only a cancel ends.
            let start = Instant::now();
            while running.load(Atomic::SeqCst) < 3 && start.elapsed() < Duration::from_secs(30) {
                std::thread::yield_now();
            }
            first
        });
        assert_eq!(first, Some(0));
        assert_eq!(
            running.load(Atomic::SeqCst),
            0,
            "every search ended before run returned"
        );
        assert_eq!(abandoned.load(Atomic::SeqCst), 3);
        assert!(
            pulled.load(Atomic::Relaxed) <= 1 + 8 * 4,
            "one taken: the look-ahead is eight per thread"
        );
    }
}
