//! Grep, in process on ripgrep's libraries (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"):
//! Pi's grep parameters (`pattern, path, glob, ignoreCase, literal, context, limit`) plus
//! `outputMode: content | filesWithMatches | count`. The tree is walked in parallel by `ignore` with Glob's rules
//! (`.gitignore` honoured; an explicitly named path inside an ignored tree is still searched because a walk root is
//! never filtered); a named file is searched without walking its siblings. Files containing a NUL byte are binary
//! and skipped. Each file is read once and searched as the tools see it (BOM stripped, CRLF/CR as LF), so line
//! numbers and the file's tag agree with Read; matched lines are recorded as seen in the snapshot store, context
//! lines are not, and count/files-with-matches modes record the tag with an empty seen set.
//!
//! One module over 600 lines because the matcher, the normalizing reader, the parallel walk and the render share one
//! result shape and one set of limits.

use super::args;
use super::error::{Deadline, HostError};
use super::fileio;
use super::glob;
use super::grep_lines::LineMatcher;
use super::paths::{Resolved, Root, Roots};
use super::snapshot::{LineSet, Recorder, Seen, MAX_RETAINED_FILE};
use super::tag::{self, Normalized, TagStream, Tagged};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::WalkState;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Matches (content) or files (other modes) returned when `limit` is omitted (Pi's grep default).
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest accepted `limit`.
pub const MAX_LIMIT: u64 = 100_000;
/// Largest accepted `context` (lines before and after each match).
pub const MAX_CONTEXT: u64 = 100;
/// Output budget of content mode in bytes (Pi's grep also stops at 50 KiB): rows stop before passing it.
pub const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Shown lines are clipped at this many characters (Pi's grep line limit); a clipped match is not counted as seen.
pub const MAX_LINE_CHARS: usize = 500;

/// What Grep returns: matched lines, the names of matching files, or per-file match counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    Content,
    FilesWithMatches,
    Count,
}

impl OutputMode {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputMode::Content => "content",
            OutputMode::FilesWithMatches => "filesWithMatches",
            OutputMode::Count => "count",
        }
    }
}

/// Grep's arguments after alias folding (`pattern` ← `query`) and range checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepArgs {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
    pub ignore_case: bool,
    pub literal: bool,
    pub context: u64,
    pub limit: Option<u64>,
    pub output_mode: OutputMode,
}

impl GrepArgs {
    pub fn from_json(v: &Value) -> Result<GrepArgs, HostError> {
        let a = args::object("Grep", v)?;
        let output_mode = match args::opt_str("Grep", a, "outputMode")?.as_deref() {
            None | Some("content") => OutputMode::Content,
            Some("filesWithMatches") => OutputMode::FilesWithMatches,
            Some("count") => OutputMode::Count,
            Some(other) => {
                return Err(HostError::invalid(format!(
                    "Grep: outputMode '{other}' is not one of content, filesWithMatches, count; call again with one \
                     of them."
                )))
            }
        };
        Ok(GrepArgs {
            pattern: args::fold("Grep", a, "pattern", "query")?,
            path: args::opt_str("Grep", a, "path")?,
            glob: args::opt_str("Grep", a, "glob")?.filter(|g| !g.is_empty()),
            ignore_case: args::opt_bool("Grep", a, "ignoreCase", false)?,
            literal: args::opt_bool("Grep", a, "literal", false)?,
            context: args::opt_uint("Grep", a, "context", 0, MAX_CONTEXT)?.unwrap_or(0),
            limit: args::opt_uint("Grep", a, "limit", 1, MAX_LIMIT)?,
            output_mode,
        })
    }
}

/// One matched line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    pub path: String,
    pub line: u64,
    pub text: String,
}

/// Matched lines of one file (count mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepCount {
    pub path: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepResult {
    /// The searched path as results show it.
    pub path: String,
    pub root: Root,
    pub mode: OutputMode,
    /// Content mode: the matched lines shown (context lines are only in `text`).
    pub matches: Vec<GrepMatch>,
    /// Files shown, sorted (every mode).
    pub files: Vec<String>,
    /// Count mode: matched lines per file.
    pub counts: Vec<GrepCount>,
    /// Shown path → its tag, for a follow-up Edit.
    pub tags: BTreeMap<String, String>,
    /// More matches (content) or files (other modes) exist than `limit` allowed.
    pub truncated: bool,
    /// Files skipped because they contain a NUL byte.
    pub binary_skipped: u64,
    /// Files that could not be searched to their end (shown path, why): their matches are unknown, never "none".
    pub unsearched: Vec<(String, String)>,
    pub text: String,
}

/// One shown row of a file: a match or a context line, already clipped to `MAX_LINE_CHARS` (the flag says whether
/// it was), so a huge line never stays in memory.
#[derive(Debug, Clone)]
enum Row {
    Match(u64, String, bool),
    Context(u64, String, bool),
}

/// What one searched file produced: the walk only counts; the detail pass (files actually shown) also keeps rows
/// and the file's tag (and its text when small enough to retain), from the same read, so rows and tag always agree.
struct FileHits {
    path: PathBuf,
    rows: Vec<Row>,
    count: u64,
    tagged: Option<(Tagged, Option<String>)>,
}

/// Why a file was not searched to its end: it is reported, never silently counted as "no match".
#[derive(Debug)]
enum Stop {
    /// Not a match, or a file that vanished or changed type since the walk saw it.
    Nothing,
    /// A NUL byte: binary, skipped.
    Binary,
    /// The deadline passed inside the file.
    Deadline,
    /// It could not be searched (a line over the line limit, an I/O error, a symlink swapped in): the reason.
    Failed(String),
}

/// Collects rows of one file (`keep_rows` false: counts only).
struct Collect<'a> {
    mode: OutputMode,
    keep_rows: bool,
    rows: &'a mut Vec<Row>,
    count: u64,
}

fn line_text(bytes: &[u8]) -> (String, bool) {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    // At most MAX_LINE_CHARS characters of 4 bytes are ever shown: decode only that much of a long line (the whole
    // line is still counted for the clip note).
    let head = &b[..b.len().min(4 * MAX_LINE_CHARS + 4)];
    let text = String::from_utf8_lossy(head);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        None if head.len() == b.len() => (text.into_owned(), false),
        _ => {
            let total = String::from_utf8_lossy(b).chars().count();
            let cut = text.char_indices().nth(MAX_LINE_CHARS).map_or(text.len(), |(i, _)| i);
            (
                format!(
                    "{} [… line clipped at {MAX_LINE_CHARS} of {total} characters]",
                    &text[..cut]
                ),
                true,
            )
        }
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        if self.keep_rows && self.mode == OutputMode::Content {
            let (t, clipped) = line_text(m.bytes());
            self.rows.push(Row::Match(m.line_number().unwrap_or(0), t, clipped));
        }
        Ok(self.mode != OutputMode::FilesWithMatches)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.keep_rows && self.mode == OutputMode::Content {
            let (t, clipped) = line_text(c.bytes());
            self.rows.push(Row::Context(c.line_number().unwrap_or(0), t, clipped));
        }
        Ok(true)
    }
}

/// Bytes read per chunk when the rest of a file is drained for its tag.
const CHUNK: usize = 64 * 1024;
/// Longest line Grep searches, in bytes (the searcher's buffer holds one line at least): a file with a longer line is
/// reported as not searched (docs/host.md "Large files"). Memory per search thread stays about this size.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The file as Grep searches it, streamed: a leading BOM dropped and CRLF/CR as LF (the tools' line numbering), each
/// raw chunk checked for a NUL (binary: stop), also fed to the tag stream on the detail pass, the deadline checked
/// per chunk. A stop is an I/O error to the searcher; `stop` says which.
///
/// Each chunk is read straight into the searcher's buffer and normalised there in place (the result is never
/// longer than the raw bytes), so a file's bytes are copied once and no buffer is allocated per file.
struct Normalizing<'a> {
    file: fs::File,
    started: bool,
    after_cr: bool,
    eof: bool,
    tag: Option<&'a mut TagStream>,
    text: Option<&'a mut Vec<u8>>,
    deadline: Deadline,
    stop: Option<Stop>,
    /// Normalised bytes not yet handed out, for reads smaller than a BOM (empty otherwise).
    spill: Vec<u8>,
    spill_at: usize,
}

impl<'a> Normalizing<'a> {
    fn new(file: fs::File, deadline: Deadline, tag: Option<&'a mut TagStream>, text: Option<&'a mut Vec<u8>>) -> Self {
        Normalizing {
            file,
            started: false,
            after_cr: false,
            eof: false,
            tag,
            text,
            deadline,
            stop: None,
            spill: Vec::new(),
            spill_at: 0,
        }
    }

    fn halt(&mut self, why: Stop) -> std::io::Error {
        self.stop = Some(why);
        std::io::Error::other("grep: stopped")
    }

    /// Reads the next raw chunk into `buf` and normalises it there: the normalised length, 0 at the end of the file.
    fn fill(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.eof {
                return Ok(0);
            }
            if self.deadline.passed() {
                return Err(self.halt(Stop::Deadline));
            }
            let mut n = match self.file.read(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.halt(Stop::Failed(e.to_string()))),
            };
            // The BOM is decided on the first three bytes (a short first read is topped up).
            while !self.started && n < 3 && n > 0 && n < buf.len() {
                match self.file.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(self.halt(Stop::Failed(e.to_string()))),
                }
            }
            if n == 0 {
                self.eof = true;
                return Ok(0);
            }
            let raw = &buf[..n];
            // One pass finds the first NUL or CR; only a file with CRs is scanned again (for a NUL past the CR).
            let first_cr = match memchr::memchr2(0, b'\r', raw) {
                Some(p) if raw[p] == 0 => return Err(self.halt(Stop::Binary)),
                Some(p) if memchr::memchr(0, &raw[p..]).is_some() => return Err(self.halt(Stop::Binary)),
                Some(p) => p,
                None => n,
            };
            if let Some(t) = self.tag.as_deref_mut() {
                match self.text.as_deref_mut() {
                    Some(keep) => t.push(raw, &mut |x| keep.extend_from_slice(x)),
                    None => t.push(raw, &mut |_| {}),
                }
            }
            let mut i = 0;
            if !self.started {
                self.started = true;
                if raw.starts_with(tag::BOM.as_bytes()) {
                    i = tag::BOM.len();
                }
            }
            if self.after_cr {
                self.after_cr = false;
                if i < n && buf[i] == b'\n' {
                    i += 1;
                }
            }
            if first_cr == n && i == 0 {
                return Ok(n);
            }
            // Compact in place: `w` trails `i`, each CR (or CRLF) becomes one LF.
            let mut w = 0;
            while let Some(off) = memchr::memchr(b'\r', &buf[i..n]) {
                let p = i + off;
                buf.copy_within(i..p, w);
                w += p - i;
                buf[w] = b'\n';
                w += 1;
                i = p + 1;
                if i == n {
                    self.after_cr = true;
                } else if buf[i] == b'\n' {
                    i += 1;
                }
            }
            if w != i {
                buf.copy_within(i..n, w);
            }
            w += n - i;
            if w > 0 {
                return Ok(w);
            }
            // The chunk was only a BOM or the LF of a CRLF split across reads: read on.
        }
    }

    /// Reads what the search left (the tag covers the whole file); a NUL there still makes the file binary.
    fn drain(&mut self) -> std::io::Result<()> {
        let mut buf = vec![0; CHUNK];
        while self.fill(&mut buf)? > 0 {}
        Ok(())
    }
}

impl std::io::Read for Normalizing<'_> {
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        if self.spill_at == self.spill.len() && dst.len() >= tag::BOM.len() {
            return self.fill(dst);
        }
        // A read too small to decide the BOM in (the searcher never asks for one): a chunk is normalised into a
        // buffer of our own and handed out from there.
        if self.spill_at == self.spill.len() {
            let mut spill = std::mem::take(&mut self.spill);
            spill.resize(CHUNK, 0);
            let n = self.fill(&mut spill);
            spill.truncate(*n.as_ref().unwrap_or(&0));
            self.spill = spill;
            self.spill_at = 0;
            n?;
        }
        let n = dst.len().min(self.spill.len() - self.spill_at);
        dst[..n].copy_from_slice(&self.spill[self.spill_at..self.spill_at + n]);
        self.spill_at += n;
        Ok(n)
    }
}

/// Per-thread search state: the matcher, the searcher and the folder handles files are opened through.
struct Worker {
    matcher: LineMatcher,
    searcher: Searcher,
    mode: OutputMode,
    deadline: Deadline,
}

fn searcher(b: &mut SearcherBuilder) -> Searcher {
    b.heap_limit(Some(MAX_LINE_BYTES))
        .bom_sniffing(false)
        .binary_detection(grep_searcher::BinaryDetection::none())
        .build()
}

impl Worker {
    /// The walk's worker: it only asks whether a file matches, so it stops at the first match and keeps no context
    /// (the detail pass recounts and collects rows for the files actually shown).
    fn probe(matcher: &LineMatcher, deadline: Deadline) -> Worker {
        Worker {
            matcher: matcher.clone(),
            searcher: searcher(SearcherBuilder::new().line_number(false).max_matches(Some(1))),
            mode: OutputMode::FilesWithMatches,
            deadline,
        }
    }

    /// The detail pass's worker: line numbers, context and the per-file cap of the requested mode.
    fn new(matcher: &LineMatcher, a: &GrepArgs, per_file: Option<u64>, deadline: Deadline) -> Worker {
        let searcher = searcher(
            SearcherBuilder::new()
                .line_number(true)
                .before_context(a.context as usize)
                .after_context(a.context as usize)
                .max_matches(per_file),
        );
        Worker {
            matcher: matcher.clone(),
            searcher,
            mode: a.output_mode,
            deadline,
        }
    }

    /// Searches the file `rel` beneath `dirs` (opened without following symlinks, never blocking on a FIFO):
    /// `Err(Stop::Nothing)` when it has no match. `detail` keeps the rows and the tag (for files that will be shown).
    fn search(&mut self, dirs: &mut fileio::Fs, rel: &str, path: &Path, detail: bool) -> Result<FileHits, Stop> {
        let shown = path.display().to_string();
        let f = match dirs.open_read(rel, &shown, "Grep", || HostError::invalid("")) {
            Ok((f, meta)) if meta.is_file() => f,
            Ok(_) => return Err(Stop::Nothing),
            Err(e) if e.code == super::error::NOT_FOUND || e.code == super::error::INVALID_ARGUMENT => {
                return Err(Stop::Nothing)
            }
            Err(e) => return Err(Stop::Failed(e.message)),
        };
        let retain = detail && f.metadata().is_ok_and(|m| m.len() <= MAX_RETAINED_FILE as u64);
        let mut ts = TagStream::new();
        let mut kept = Vec::new();
        let mut rows = Vec::new();
        let mut sink = Collect {
            mode: self.mode,
            keep_rows: detail,
            rows: &mut rows,
            count: 0,
        };
        let mut reader = Normalizing::new(f, self.deadline, detail.then_some(&mut ts), retain.then_some(&mut kept));
        let searched = self.searcher.search_reader(&self.matcher, &mut reader, &mut sink);
        let searched = searched.and_then(|()| if detail { reader.drain() } else { Ok(()) });
        if let Err(e) = searched {
            return Err(match reader.stop.take() {
                Some(why) => why,
                // The searcher's own refusal: a line over the heap limit.
                None => Stop::Failed(format!(
                    "a line is longer than {} MiB ({e})",
                    MAX_LINE_BYTES / (1024 * 1024)
                )),
            });
        }
        let count = sink.count;
        if count == 0 {
            return Err(Stop::Nothing);
        }
        let tagged = if detail {
            let mut tail = Vec::new();
            let t = ts
                .finish(&mut |x| tail.extend_from_slice(x))
                .map_err(|_| Stop::Failed("a line ends in too irregular a run of spaces and tabs to tag".into()))?;
            let text = retain.then(|| {
                kept.extend_from_slice(&tail);
                String::from_utf8(kept).unwrap_or_default()
            });
            Some((t, text))
        } else {
            None
        };
        Ok(FileHits {
            path: path.to_path_buf(),
            rows,
            count,
            tagged,
        })
    }
}

/// The detail pass, searched ahead of the render on every core: helper threads take the next files in the render's
/// order while this thread renders, and this thread searches too whenever the file it needs next is not ready. How
/// far ahead they may go grows with what was shown (twice the files taken so far, plus one per thread, and never
/// more than four files per thread ahead of the render), so a call whose first file fills the limit searches about
/// one file per core, a long list keeps every core busy with no pause between batches, the files searched and then
/// not shown stay bounded by those shown, and the results held at once (each file's rows and text, at most
/// `MAX_RETAINED_FILE` of text) stay bounded by the number of threads.
struct Ahead<'a> {
    spec: DetailSpec<'a>,
    /// The files in the render's order.
    paths: &'a [PathBuf],
    threads: usize,
    state: Mutex<AheadState>,
    changed: std::sync::Condvar,
}

struct AheadState {
    /// The next file no thread has taken.
    next: usize,
    /// Files the render has asked for.
    taken: usize,
    done: bool,
    results: Vec<Option<Result<FileHits, Stop>>>,
}

/// What each thread of the detail pass searches with: the matcher and the mode's settings, and the folder its files
/// are opened beneath (each thread makes its own worker and folder handles from it).
struct DetailSpec<'a> {
    matcher: &'a LineMatcher,
    args: &'a GrepArgs,
    per_file: Option<u64>,
    deadline: Deadline,
    walk_root: &'a Path,
    shown_root: &'a str,
}

impl DetailSpec<'_> {
    fn worker(&self) -> Result<(Worker, fileio::Fs), HostError> {
        Ok((
            Worker::new(self.matcher, self.args, self.per_file, self.deadline),
            fileio::Fs::open_dir(self.walk_root, self.shown_root)?,
        ))
    }
}

impl<'a> Ahead<'a> {
    /// Runs `render` with the detail search of each path, in the given order, while helpers search ahead.
    fn run<T>(
        spec: DetailSpec<'a>,
        paths: &'a [PathBuf],
        render: impl FnOnce(&mut dyn FnMut(&Path) -> Result<FileHits, Stop>) -> T,
    ) -> Result<T, HostError> {
        let mut local = spec.worker()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let ahead = Ahead {
            spec,
            paths,
            threads,
            state: Mutex::new(AheadState {
                next: 0,
                taken: 0,
                done: false,
                results: paths.iter().map(|_| None).collect(),
            }),
            changed: std::sync::Condvar::new(),
        };
        let ahead = &ahead;
        Ok(std::thread::scope(|sc| {
            for _ in 1..threads.min(paths.len()) {
                sc.spawn(move || {
                    // A helper that cannot open the folder leaves the files to the others.
                    if let Ok(mut worker) = ahead.spec.worker() {
                        ahead.help(&mut worker);
                    }
                });
            }
            let out = render(&mut |p: &Path| ahead.take(&mut local, p));
            ahead.lock().done = true;
            ahead.changed.notify_all();
            out
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AheadState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next file a thread may take now, if any (and marks it taken).
    fn claim(&self, st: &mut AheadState) -> Option<usize> {
        let reach = (2 * st.taken + self.threads)
            .min(st.taken + 4 * self.threads)
            .min(self.paths.len());
        (st.next < reach).then(|| {
            st.next += 1;
            st.next - 1
        })
    }

    fn search(&self, state: &mut (Worker, fileio::Fs), i: usize) -> Result<FileHits, Stop> {
        let p = &self.paths[i];
        let rel = rel_beneath(self.spec.walk_root, p).unwrap_or_default();
        state.0.search(&mut state.1, &rel, p, true)
    }

    /// A helper's loop: search what may be searched, wait when nothing may, stop when the render is done.
    fn help(&self, state: &mut (Worker, fileio::Fs)) {
        let mut st = self.lock();
        loop {
            if st.done || st.next == self.paths.len() {
                return;
            }
            match self.claim(&mut st) {
                Some(i) => {
                    drop(st);
                    let r = self.search(state, i);
                    st = self.lock();
                    st.results[i] = Some(r);
                    self.changed.notify_all();
                }
                None => st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// The detail search of `p`, the next path in the render's order: ready, searched here, or waited for (this
    /// thread searches other files while it waits).
    fn take(&self, local: &mut (Worker, fileio::Fs), p: &Path) -> Result<FileHits, Stop> {
        let mut st = self.lock();
        let i = st.taken;
        debug_assert_eq!(self.paths.get(i).map(PathBuf::as_path), Some(p));
        st.taken += 1;
        self.changed.notify_all();
        loop {
            if let Some(r) = st.results.get_mut(i).and_then(Option::take) {
                return r;
            }
            if i >= self.paths.len() {
                return Err(Stop::Nothing);
            }
            match self.claim(&mut st) {
                Some(j) => {
                    drop(st);
                    let r = self.search(local, j);
                    if j == i {
                        return r;
                    }
                    st = self.lock();
                    st.results[j] = Some(r);
                    self.changed.notify_all();
                }
                None => st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

thread_local! {
    /// The walk threads' folder handles beneath the searched folder (folder handles are per thread; the walk's
    /// threads live for one search, so a handle never outlives its call).
    static WALK_DIRS: std::cell::RefCell<Option<(PathBuf, fileio::Fs)>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's handles beneath `root` (opened on first use, never through a symlink).
fn with_thread_dirs(
    root: &Path,
    shown: &str,
    f: impl FnOnce(&mut fileio::Fs) -> Result<FileHits, Stop>,
) -> Result<FileHits, Stop> {
    WALK_DIRS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(r, _)| r != root) {
            let fs = fileio::Fs::open_dir(root, shown).map_err(|e| Stop::Failed(e.message))?;
            *slot = Some((root.to_path_buf(), fs));
        }
        let (_, fs) = slot.as_mut().expect("just set");
        f(fs)
    })
}

/// The path of `p` beneath `root` as the folder handles take it.
fn rel_beneath(root: &Path, p: &Path) -> Option<String> {
    p.strip_prefix(root).ok()?.to_str().map(str::to_string)
}

fn build_matcher(a: &GrepArgs) -> Result<LineMatcher, HostError> {
    LineMatcher::new(&a.pattern, a.ignore_case, a.literal).map_err(|e| {
        HostError::invalid(format!(
            "invalid regex '{}': {e}. Fix the pattern, or pass literal: true to search for the text as is.",
            a.pattern
        ))
    })
}

/// Searches `target` (a file or a directory, already resolved and, if external, approved) and records what it
/// showed in `store`.
pub fn grep(
    roots: &Roots,
    target: &Resolved,
    a: &GrepArgs,
    deadline: Deadline,
    store: &mut impl Recorder,
) -> Result<GrepResult, HostError> {
    let meta = fs::metadata(&target.canonical).map_err(|e| HostError::io(&target.shown, &e))?;
    let matcher = build_matcher(a)?;
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT);
    // One more than shown, so truncation is known rather than guessed.
    let per_file = match a.output_mode {
        OutputMode::Content => Some(limit + 1),
        OutputMode::FilesWithMatches => Some(1),
        OutputMode::Count => None,
    };
    let binary = AtomicU64::new(0);
    let failed: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    let timed_out = AtomicBool::new(false);
    let found_in =
        |r: Result<FileHits, Stop>, path: &Path| settle(r, path, &binary, &timed_out, &failed).map(|h| h.path);
    let mut hits: Vec<PathBuf> = Vec::new();
    let parent = target.canonical.parent().unwrap_or(Path::new("/"));
    if meta.is_file() {
        let name_ok = match &a.glob {
            None => true,
            Some(g) => {
                let m = glob::compile(g)?;
                target.canonical.file_name().is_some_and(|n| m.is_match(n))
            }
        };
        if name_ok {
            let mut dirs = fileio::Fs::open_dir(parent, &target.shown)?;
            let name = target.canonical.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let r = Worker::probe(&matcher, deadline).search(&mut dirs, name, &target.canonical, false);
            hits.extend(found_in(r, &target.canonical));
        }
    } else if meta.is_dir() {
        let mut w = glob::walker(&target.canonical, roots.sensitive());
        if let Some(g) = &a.glob {
            let ov = OverrideBuilder::new(&target.canonical)
                .add(g)
                .and_then(|b| b.build())
                .map_err(|e| HostError::invalid(format!("invalid glob '{g}': {e}. Fix the glob and call again.")))?;
            w.overrides(ov);
        }
        let found = Mutex::new(Vec::new());
        w.build_parallel().run(|| {
            let mut worker = Worker::probe(&matcher, deadline);
            let found = &found;
            let timed_out = &timed_out;
            let found_in = &found_in;
            Box::new(move |entry| {
                if deadline.passed() || timed_out.load(Ordering::Relaxed) {
                    timed_out.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    let Some(rel) = rel_beneath(&target.canonical, entry.path()) else {
                        return WalkState::Continue;
                    };
                    let r = with_thread_dirs(&target.canonical, &target.shown, |dirs| {
                        worker.search(dirs, &rel, entry.path(), false)
                    });
                    if let Some(p) = found_in(r, entry.path()) {
                        found.lock().unwrap_or_else(|p| p.into_inner()).push(p);
                    }
                }
                WalkState::Continue
            })
        });
        // With one thread the walk runs on this thread: drop its handles so none outlives the call.
        WALK_DIRS.with(|c| c.borrow_mut().take());
        hits = found.into_inner().unwrap_or_else(|p| p.into_inner());
    } else {
        return Err(HostError::invalid(format!(
            "{} is neither a file nor a directory; Grep searches regular files and directory trees.",
            target.shown
        )));
    }
    if timed_out.load(Ordering::Relaxed) {
        return Err(deadline.error("Grep"));
    }
    let show = |p: &Path| {
        if p == target.canonical {
            target.shown.clone()
        } else {
            roots.show(target.root, p)
        }
    };
    let mut hits: Vec<(String, PathBuf)> = hits.into_iter().map(|p| (show(&p), p)).collect();
    hits.sort_by(|x, y| x.0.cmp(&y.0));
    let paths: Vec<PathBuf> = hits.iter().map(|(_, p)| p.clone()).collect();
    let walk_root = if meta.is_file() {
        parent
    } else {
        target.canonical.as_path()
    };
    let detail_binary = AtomicU64::new(0);
    let binary = binary.into_inner();
    let spec = DetailSpec {
        matcher: &matcher,
        args: a,
        per_file,
        deadline,
        walk_root,
        shown_root: &target.shown,
    };
    let mut out = Ahead::run(spec, &paths, |take| {
        render(
            target,
            a,
            limit,
            hits,
            &mut |p: &Path| settle(take(p), p, &detail_binary, &timed_out, &failed),
            binary,
            store,
        )
    })?;
    if timed_out.load(Ordering::Relaxed) {
        return Err(deadline.error("Grep"));
    }
    out.binary_skipped += detail_binary.into_inner();
    let mut failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort();
    if out.files.is_empty() {
        out.text = if failed.is_empty() {
            format!(
                "No matches for '{}' in '{}'.",
                a.pattern,
                tag::escape_name(&target.shown)
            )
        } else {
            format!(
                "No matches for '{}' in the files of '{}' that could be searched.",
                a.pattern,
                tag::escape_name(&target.shown)
            )
        };
    }
    if out.binary_skipped > 0 {
        out.text
            .push_str(&format!("\n[{} binary file(s) skipped.]", out.binary_skipped));
    }
    if !failed.is_empty() {
        out.text.push_str(&format!(
            "\n[{} file(s) could not be searched, so matches in them are unknown:",
            failed.len()
        ));
        for (p, why) in failed.iter().take(MAX_FAILED_SHOWN) {
            out.text.push_str(&format!("\n  {}: {why}", tag::escape_name(&show(p))));
        }
        if failed.len() > MAX_FAILED_SHOWN {
            out.text
                .push_str(&format!("\n  … and {} more", failed.len() - MAX_FAILED_SHOWN));
        }
        out.text
            .push_str("\nSearch such a file in windows with Read, or with Bash (e.g. grep -n on a part of it).]");
        out.unsearched = failed.into_iter().map(|(p, why)| (show(&p), why)).collect();
    }
    Ok(out)
}

/// What a search that did not finish means for the call: a binary file is counted in `binary`, a passed deadline
/// ends the call, any other stop is reported for that file.
fn settle(
    r: Result<FileHits, Stop>,
    path: &Path,
    binary: &AtomicU64,
    timed_out: &AtomicBool,
    failed: &Mutex<Vec<(PathBuf, String)>>,
) -> Option<FileHits> {
    match r {
        Ok(h) => Some(h),
        Err(Stop::Nothing) => None,
        Err(Stop::Binary) => {
            binary.fetch_add(1, Ordering::Relaxed);
            None
        }
        Err(Stop::Deadline) => {
            timed_out.store(true, Ordering::Relaxed);
            None
        }
        Err(Stop::Failed(why)) => {
            failed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((path.to_path_buf(), why));
            None
        }
    }
}

/// Files that could not be searched listed by name (the count covers the rest).
pub const MAX_FAILED_SHOWN: usize = 20;

/// Builds the result and the model-facing text from the matching files (shown path, canonical path; sorted), and
/// records what was shown. Each shown file is searched again in detail so its rows and tag come from one read; a
/// file that no longer matches by then is left out.
fn render(
    target: &Resolved,
    a: &GrepArgs,
    limit: u64,
    hits: Vec<(String, PathBuf)>,
    search: &mut dyn FnMut(&Path) -> Option<FileHits>,
    binary_skipped: u64,
    store: &mut impl Recorder,
) -> GrepResult {
    let mut out = GrepResult {
        path: target.shown.clone(),
        root: target.root,
        mode: a.output_mode,
        matches: Vec::new(),
        files: Vec::new(),
        counts: Vec::new(),
        tags: BTreeMap::new(),
        truncated: false,
        binary_skipped,
        unsearched: Vec::new(),
        text: String::new(),
    };
    let mut blocks: Vec<String> = Vec::new();
    let mut shown_matches = 0u64;
    let mut used = 0usize;
    let mut budget_hit = false;
    for (shown, path) in hits {
        if a.output_mode != OutputMode::Content && out.files.len() as u64 == limit {
            out.truncated = true;
            break;
        }
        if a.output_mode == OutputMode::Content && shown_matches == limit {
            out.truncated = true;
            break;
        }
        let Some(h) = search(&path) else {
            continue;
        };
        let Some((tagged, text)) = h.tagged else { continue };
        let header = tag::header(&tag::escape_name(&shown), &tagged.tag);
        let mut seen = LineSet::new();
        match a.output_mode {
            OutputMode::FilesWithMatches => blocks.push(header),
            OutputMode::Count => {
                blocks.push(format!(
                    "{header} {} matching line{}",
                    h.count,
                    if h.count == 1 { "" } else { "s" }
                ));
                out.counts.push(GrepCount {
                    path: shown.clone(),
                    count: h.count,
                });
            }
            OutputMode::Content => {
                let mut block = header;
                let mut rows = 0usize;
                let mut last_line: Option<u64> = None;
                let mut last_match: Option<u64> = None;
                for row in &h.rows {
                    let (n, clipped, was_clipped, is_match) = match row {
                        Row::Match(n, t, c) => (*n, t, *c, true),
                        Row::Context(n, t, c) => (*n, t, *c, false),
                    };
                    if is_match && shown_matches == limit {
                        out.truncated = true;
                        break;
                    }
                    if !is_match && shown_matches == limit && last_match.is_some_and(|m| n > m + a.context) {
                        break;
                    }
                    let gap = last_line.is_some_and(|l| n > l + 1);
                    let cost = clipped.len() + 2 + n.to_string().len() + if gap { 3 } else { 0 };
                    if shown_matches > 0 && used + block.len() + cost > MAX_OUTPUT_BYTES {
                        out.truncated = true;
                        budget_hit = true;
                        break;
                    }
                    if gap {
                        block.push_str("\n--");
                    }
                    last_line = Some(n);
                    rows += 1;
                    block.push('\n');
                    if is_match {
                        shown_matches += 1;
                        last_match = Some(n);
                        if !was_clipped {
                            seen.insert(n as u32);
                        }
                        tag::row(&mut block, n as usize, clipped);
                        out.matches.push(GrepMatch {
                            path: shown.clone(),
                            line: n,
                            text: clipped.clone(),
                        });
                    } else {
                        block.push_str(&format!("{n}-{clipped}"));
                    }
                }
                if rows == 0 {
                    break;
                }
                used += block.len() + 2;
                blocks.push(block);
            }
        }
        match text {
            Some(text) => {
                let norm = Normalized {
                    text,
                    tag: tagged.tag.clone(),
                    digest: tagged.digest,
                    fp: tagged.fp,
                };
                store.record(&h.path, &norm, Seen::Lines(seen));
            }
            None => store.record_tagged(&h.path, &tagged, Seen::Lines(seen)),
        }
        out.tags.insert(shown.clone(), tagged.tag.clone());
        out.files.push(shown);
        if budget_hit {
            break;
        }
    }
    // No files: the caller writes the "No matches" line (it knows whether some files could not be searched).
    let mut text = if out.files.is_empty() {
        String::new()
    } else {
        blocks.join(if a.output_mode == OutputMode::Content {
            "\n\n"
        } else {
            "\n"
        })
    };
    if out.truncated {
        let what = if a.output_mode == OutputMode::Content {
            "matches"
        } else {
            "files"
        };
        if budget_hit {
            text.push_str(&format!(
                "\n\n[Showing the first {shown_matches} matches ({} KiB output limit). Narrow the pattern, path or \
                 glob, or use less context.]",
                MAX_OUTPUT_BYTES / 1024
            ));
        } else {
            text.push_str(&format!(
                "\n\n[Showing the first {limit} {what}. Narrow the pattern, path or glob, or raise limit (at most \
                 {MAX_LIMIT}).]"
            ));
        }
    }
    out.text = text;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::snapshot::{Provenance, SnapshotStore};
    use serde_json::json;
    use tempfile::TempDir;

    fn setup(files: &[(&str, &[u8])]) -> (TempDir, Roots) {
        let t = TempDir::new().unwrap();
        let ws = t.path().join("ws");
        fs::create_dir_all(&ws).unwrap();
        for (name, body) in files {
            let p = ws.join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, body).unwrap();
        }
        let roots = Roots::new(&ws, &t.path().join("agent"), "s").unwrap();
        (t, roots)
    }

    fn run(roots: &Roots, st: &mut SnapshotStore, v: Value) -> Result<GrepResult, HostError> {
        let a = GrepArgs::from_json(&v)?;
        let target = roots.resolve_inside(a.path.as_deref().unwrap_or("."))?;
        grep(roots, &target, &a, Deadline::none(), st)
    }

    #[test]
    fn content_mode_renders_headers_rows_and_context() {
        let body = b"alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\nbeta2\n";
        let (_t, roots) = setup(&[("src/a.txt", body), ("b.txt", b"nothing\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"query": "beta", "context": 1})).unwrap();
        let tag = tag::tag_of(std::str::from_utf8(body).unwrap());
        assert_eq!(
            r.text,
            format!("[src/a.txt#{tag}]\n1-alpha\n2:beta\n3-gamma\n--\n7-eta\n8:beta2")
        );
        assert_eq!(
            r.matches,
            vec![
                GrepMatch {
                    path: "src/a.txt".into(),
                    line: 2,
                    text: "beta".into()
                },
                GrepMatch {
                    path: "src/a.txt".into(),
                    line: 8,
                    text: "beta2".into()
                },
            ]
        );
        assert_eq!(r.tags.get("src/a.txt"), Some(&tag));
        assert_eq!(r.files, vec!["src/a.txt"]);
        // Only matched lines count as seen.
        let Provenance::Seen(Seen::Lines(s)) = st.provenance(&roots.workspace().join("src/a.txt"), &tag) else {
            panic!("recorded")
        };
        assert_eq!(s.ranges(), &[(2, 2), (8, 8)]);
    }

    #[test]
    fn ignore_case_literal_and_invalid_regex() {
        let (_t, roots) = setup(&[("a.txt", b"Foo(1)\nfoo(2)\nfoo\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"pattern": "foo\\(", "ignoreCase": true})).unwrap();
        assert_eq!(r.matches.iter().map(|m| m.line).collect::<Vec<_>>(), vec![1, 2]);
        let lit = run(&roots, &mut st, json!({"pattern": "foo(", "literal": true})).unwrap();
        assert_eq!(lit.matches.iter().map(|m| m.line).collect::<Vec<_>>(), vec![2]);
        let e = run(&roots, &mut st, json!({"pattern": "foo("})).unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(e.message.contains("literal: true"));
        let none = run(&roots, &mut st, json!({"pattern": "absent"})).unwrap();
        assert_eq!(
            (none.text.as_str(), none.files.len()),
            ("No matches for 'absent' in '.'.", 0)
        );
    }

    #[test]
    fn gitignore_binary_and_glob_filters() {
        // A NUL after the first probe block still makes the file binary (the whole file is checked).
        let mut late_nul = b"needle\n".repeat(CHUNK / 7 + 1);
        late_nul.push(0);
        let (_t, roots) = setup(&[
            (".gitignore", b"build/\n"),
            ("build/out.txt", b"needle\n"),
            ("src/a.rs", b"needle\n"),
            ("src/a.md", b"needle\n"),
            ("bin.dat", b"needle\0\n"),
            ("late.bin", &late_nul),
            (".hidden", b"needle\n"),
        ]);
        let mut st = SnapshotStore::new();
        let r = run(
            &roots,
            &mut st,
            json!({"pattern": "needle", "outputMode": "filesWithMatches"}),
        )
        .unwrap();
        assert_eq!(r.files, vec![".hidden", "src/a.md", "src/a.rs"]);
        assert_eq!(r.binary_skipped, 2);
        assert!(r.text.ends_with("[2 binary file(s) skipped.]"));
        // An explicit path inside an ignored tree is still searched.
        let inside = run(&roots, &mut st, json!({"pattern": "needle", "path": "build"})).unwrap();
        assert_eq!(inside.files, vec!["build/out.txt"]);
        let g = run(&roots, &mut st, json!({"pattern": "needle", "glob": "*.rs"})).unwrap();
        assert_eq!(g.files, vec!["src/a.rs"]);
        // A named file is searched alone; the glob filters its name.
        let f = run(&roots, &mut st, json!({"pattern": "needle", "path": "src/a.md"})).unwrap();
        assert_eq!(f.files, vec!["src/a.md"]);
        let fg = run(
            &roots,
            &mut st,
            json!({"pattern": "needle", "path": "src/a.md", "glob": "*.rs"}),
        )
        .unwrap();
        assert!(fg.files.is_empty());
        let b = run(&roots, &mut st, json!({"pattern": "needle", "path": "bin.dat"})).unwrap();
        assert_eq!((b.files.len(), b.binary_skipped), (0, 1));
    }

    #[test]
    fn the_detail_pass_searched_ahead_keeps_the_order_the_counts_and_the_tags() {
        // Enough files for the helpers to run ahead of the render, of uneven sizes (one large), with a varying number
        // of matches, so results arrive out of order and the limit falls inside the list.
        let bodies: Vec<(String, String)> = (0..120)
            .map(|k| {
                let rows = if k == 7 { 40_000 } else { 1 + k % 5 };
                let body: String = (0..rows)
                    .map(|r| format!("line {r} {}\n", if r % 2 == 0 { "hit" } else { "no" }))
                    .collect();
                (format!("d{}/f{k:03}.txt", k % 4), body)
            })
            .collect();
        let files: Vec<(&str, &[u8])> = bodies.iter().map(|(n, b)| (n.as_str(), b.as_bytes())).collect();
        let (_t, roots) = setup(&files);
        let mut expected: Vec<&(String, String)> = bodies.iter().collect();
        expected.sort_by(|x, y| x.0.cmp(&y.0));
        let mut st = SnapshotStore::new();
        let r = run(
            &roots,
            &mut st,
            json!({"pattern": "hit", "outputMode": "count", "limit": 100}),
        )
        .unwrap();
        assert!(r.truncated);
        assert_eq!(r.counts.len(), 100);
        for (c, (name, body)) in r.counts.iter().zip(&expected) {
            assert_eq!(&c.path, name);
            assert_eq!(c.count, body.matches("hit").count() as u64, "{name}");
            assert_eq!(r.tags[name], tag::tag_of(body), "{name}");
        }
        // Content mode: the limit of matches ends the list part-way; every shown row is from its own file, in order.
        let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": 150})).unwrap();
        assert!(r.truncated);
        assert_eq!(r.matches.len(), 150);
        let shown: Vec<&String> = expected.iter().map(|(n, _)| n).take(r.files.len()).collect();
        assert_eq!(r.files.iter().collect::<Vec<_>>(), shown);
        let mut at = 0;
        for f in &r.files {
            let body = &expected.iter().find(|(n, _)| n == f).unwrap().1;
            let rows: Vec<&GrepMatch> = r.matches[at..].iter().take_while(|m| &m.path == f).collect();
            at += rows.len();
            for m in rows {
                assert_eq!(
                    body.lines().nth(m.line as usize - 1),
                    Some(m.text.as_str()),
                    "{f}:{}",
                    m.line
                );
            }
        }
        assert_eq!(at, 150);
    }

    #[test]
    fn count_and_files_modes_mint_tags_with_empty_seen_sets() {
        let (_t, roots) = setup(&[("a.txt", b"x\nx\ny\n"), ("b.txt", b"x\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"pattern": "x", "outputMode": "count"})).unwrap();
        assert_eq!(
            r.counts,
            vec![
                GrepCount {
                    path: "a.txt".into(),
                    count: 2
                },
                GrepCount {
                    path: "b.txt".into(),
                    count: 1
                }
            ]
        );
        let ta = tag::tag_of("x\nx\ny\n");
        assert_eq!(
            r.text,
            format!(
                "[a.txt#{ta}] 2 matching lines\n[b.txt#{}] 1 matching line",
                tag::tag_of("x\n")
            )
        );
        match st.provenance(&roots.workspace().join("a.txt"), &ta) {
            Provenance::Seen(Seen::Lines(s)) => assert!(s.is_empty()),
            other => panic!("expected an empty seen set, got {other:?}"),
        }
        assert!(run(&roots, &mut st, json!({"pattern": "x", "outputMode": "lines"})).is_err());
    }

    #[test]
    fn limits_truncate_at_their_boundary() {
        let body: String = (1..=5).map(|i| format!("hit {i}\n")).collect();
        let (_t, roots) = setup(&[
            ("a.txt", body.as_bytes()),
            ("b.txt", b"hit\n"),
            ("c/c.txt", b"hit 1\nx\nhit 2\nx\nhit 3\nx\nhit 4\n"),
        ]);
        let mut st = SnapshotStore::new();
        let exact = run(&roots, &mut st, json!({"pattern": "hit", "limit": 10})).unwrap();
        assert_eq!((exact.matches.len(), exact.truncated), (10, false));
        let cut = run(&roots, &mut st, json!({"pattern": "hit", "limit": 9})).unwrap();
        assert_eq!((cut.matches.len(), cut.truncated, cut.files.len()), (9, true, 3));
        assert!(cut.text.contains("[Showing the first 9 matches."));
        let one = run(&roots, &mut st, json!({"pattern": "hit", "limit": 5, "path": "a.txt"})).unwrap();
        assert_eq!((one.matches.len(), one.truncated), (5, false));
        let within = run(
            &roots,
            &mut st,
            json!({"pattern": "hit", "limit": 2, "path": "c", "context": 1}),
        )
        .unwrap();
        assert_eq!(within.matches.len(), 2);
        assert!(within.truncated && within.text.ends_with("\n3:hit 2\n4-x\n\n[Showing the first 2 matches. Narrow the pattern, path or glob, or raise limit (at most 100000).]"), "{}", within.text);
        let files = run(
            &roots,
            &mut st,
            json!({"pattern": "hit", "limit": 1, "outputMode": "filesWithMatches"}),
        )
        .unwrap();
        assert_eq!((files.files, files.truncated), (vec!["a.txt".to_string()], true));
        for bad in [
            json!({"pattern": "x", "limit": 0}),
            json!({"pattern": "x", "context": MAX_CONTEXT + 1}),
        ] {
            assert_eq!(run(&roots, &mut st, bad).unwrap_err().code, "INVALID_ARGUMENT");
        }
        assert!(run(&roots, &mut st, json!({"pattern": "x", "context": MAX_CONTEXT})).is_ok());
    }

    #[test]
    fn crlf_bom_files_match_with_read_line_numbers_and_long_lines_are_clipped() {
        let long = format!("needle{}\n", "z".repeat(MAX_LINE_CHARS));
        let (_t, roots) = setup(&[
            ("w.txt", b"\xef\xbb\xbfone\r\ntwo needle\r\nthree$\r\n"),
            ("l.txt", long.as_bytes()),
        ]);
        let mut st = SnapshotStore::new();
        let r = run(
            &roots,
            &mut st,
            json!({"pattern": "needle$|three\\$$", "path": "w.txt"}),
        )
        .unwrap();
        assert_eq!(
            r.matches.iter().map(|m| (m.line, m.text.as_str())).collect::<Vec<_>>(),
            vec![(2, "two needle"), (3, "three$")]
        );
        assert_eq!(r.tags["w.txt"], tag::tag_of("one\ntwo needle\nthree$\n"));
        let l = run(&roots, &mut st, json!({"pattern": "needle", "path": "l.txt"})).unwrap();
        assert!(l.matches[0].text.contains("line clipped at 500"));
        match st.provenance(&roots.workspace().join("l.txt"), &l.tags["l.txt"]) {
            Provenance::Seen(Seen::Lines(s)) => assert!(s.is_empty()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn content_output_stops_at_the_byte_budget() {
        // 200 matched lines of 480 characters each (rows ~485 bytes): about 105 fit in 50 KiB, and limit allows 200.
        let body: String = (0..200).map(|i| format!("hit{:0>477}\n", i)).collect();
        let (_t, roots) = setup(&[("a.txt", body.as_bytes()), ("b.txt", b"hit\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": 1000})).unwrap();
        assert!(r.truncated);
        let shown = r.matches.len();
        assert!(shown > 50 && shown < 200, "{shown}");
        let body_len = r.text.find("\n\n[Showing").unwrap();
        assert!(
            body_len <= MAX_OUTPUT_BYTES && body_len + 490 > MAX_OUTPUT_BYTES,
            "{body_len}"
        );
        assert!(r.text.ends_with(&format!("[Showing the first {shown} matches (50 KiB output limit). Narrow the pattern, path or glob, or use less context.]")));
        // b.txt, after the budget, is not shown, and only shown lines are seen.
        assert_eq!(r.files, vec!["a.txt"]);
        let Provenance::Seen(Seen::Lines(s)) = st.provenance(&roots.workspace().join("a.txt"), &r.tags["a.txt"]) else {
            panic!()
        };
        assert_eq!(s.ranges(), &[(1, shown as u32)]);
    }

    #[test]
    fn a_passed_deadline_stops_the_walk_with_tool_timeout() {
        let (_t, roots) = setup(&[("a.txt", b"needle\n"), ("d/b.txt", b"needle\n")]);
        let mut st = SnapshotStore::new();
        let a = GrepArgs::from_json(&json!({"pattern": "needle"})).unwrap();
        let e = grep(&roots, &roots.resolve(".").unwrap(), &a, Deadline::after_ms(0), &mut st).unwrap_err();
        assert_eq!(e.code, "TOOL_TIMEOUT");
        assert!(
            e.message.contains("Grep stopped after its 0 ms budget"),
            "{}",
            e.message
        );
        let ok = grep(
            &roots,
            &roots.resolve(".").unwrap(),
            &a,
            Deadline::after_ms(60_000),
            &mut st,
        )
        .unwrap();
        assert_eq!(ok.files.len(), 2);
    }

    #[test]
    fn symlinked_files_are_not_followed_out_of_the_tree() {
        let (t, roots) = setup(&[("a.txt", b"needle\n")]);
        fs::write(t.path().join("outside.txt"), "needle\n").unwrap();
        std::os::unix::fs::symlink(t.path().join("outside.txt"), roots.workspace().join("link.txt")).unwrap();
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"pattern": "needle"})).unwrap();
        assert_eq!(r.files, vec!["a.txt"]);
    }

    #[test]
    fn the_reader_normalises_in_place_whatever_the_read_size() {
        // CRLF and lone CR split at every possible read boundary, a BOM shorter than some reads, a trailing CR.
        let raw = "\u{feff}a\r\nb\rc\r\n\r\nd\r\re\r".as_bytes();
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, raw).unwrap();
        for size in [1, 2, 3, 4, 5, 7, 64] {
            let mut ts = TagStream::new();
            let mut r = Normalizing::new(fs::File::open(&path).unwrap(), Deadline::none(), Some(&mut ts), None);
            let mut got = Vec::new();
            let mut buf = vec![0; size];
            loop {
                let n = std::io::Read::read(&mut r, &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(
                String::from_utf8(got).unwrap(),
                "a\nb\nc\n\nd\n\ne\n",
                "read size {size}"
            );
            let tag = ts.finish(&mut |_| {}).unwrap();
            assert_eq!(tag.tag, tag::tag_of("a\nb\nc\n\nd\n\ne\n"), "read size {size}");
        }
    }

    #[test]
    fn a_file_it_could_not_search_is_reported_never_no_matches() {
        // One line over the line cap: the searcher cannot hold it, so the file is listed as not searched.
        let mut long = vec![b'a'; MAX_LINE_BYTES + 10];
        long.extend_from_slice(b"\nneedle\n");
        let (_t, roots) = setup(&[("long.txt", &long), ("ok.txt", b"nothing\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"pattern": "needle"})).unwrap();
        assert!(r.files.is_empty());
        assert!(
            r.text.starts_with("No matches for 'needle' in the files of '.' that could be searched.")
                && r.text.contains("[1 file(s) could not be searched, so matches in them are unknown:\n  long.txt: a line is longer than 16 MiB"),
            "{}",
            r.text
        );
        assert_eq!(r.unsearched.len(), 1);
        // Just under the cap it is searched and the match found.
        let mut fits = vec![b'a'; MAX_LINE_BYTES - 4096];
        fits.extend_from_slice(b"\nneedle\n");
        let (_t2, roots2) = setup(&[("fits.txt", &fits)]);
        let r2 = run(&roots2, &mut st, json!({"pattern": "needle"})).unwrap();
        assert_eq!(
            (r2.files.clone(), r2.unsearched.len()),
            (vec!["fits.txt".to_string()], 0),
            "{}",
            r2.text
        );
        assert_eq!(r2.matches[0].line, 2);
    }

    #[test]
    fn the_deadline_is_checked_inside_a_file() {
        let (_t, roots) = setup(&[("a.txt", b"needle\n")]);
        let mut st = SnapshotStore::new();
        let a = GrepArgs::from_json(&json!({"pattern": "needle", "path": "a.txt"})).unwrap();
        // A single named file has no walk: only the per-chunk check inside the file can stop it.
        let e = grep(
            &roots,
            &roots.resolve("a.txt").unwrap(),
            &a,
            Deadline::after_ms(0),
            &mut st,
        )
        .unwrap_err();
        assert_eq!(e.code, "TOOL_TIMEOUT");
    }

    #[test]
    fn names_with_control_characters_are_escaped_in_headers() {
        let (_t, roots) = setup(&[("x\n1:fake.txt", b"needle\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"pattern": "needle"})).unwrap();
        assert!(r.text.starts_with("[x\\n1:fake.txt#"), "{}", r.text);
        assert_eq!(r.text.lines().count(), 2, "{}", r.text);
    }

    /// Grep of a tree while another thread swaps its folder `sub` for a symlink to an outside folder: an outside
    /// file's lines never show.
    #[test]
    fn a_folder_swapped_for_a_symlink_is_never_searched_through() {
        let (t, roots) = setup(&[("sub/f.txt", b"needle inside\n")]);
        let outside = t.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("f.txt"), "needle OUTSIDE\n").unwrap();
        let ws = roots.workspace().to_path_buf();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let swapper = {
            let (ws, outside, stop) = (ws.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = fs::rename(ws.join("sub"), ws.join("real"));
                    let _ = std::os::unix::fs::symlink(&outside, ws.join("sub"));
                    let _ = fs::remove_file(ws.join("sub"));
                    let _ = fs::rename(ws.join("real"), ws.join("sub"));
                }
            })
        };
        let mut st = SnapshotStore::new();
        for _ in 0..400 {
            for path in [".", "sub", "sub/f.txt"] {
                let Ok(r) = run(&roots, &mut st, json!({"pattern": "needle", "path": path})) else {
                    continue;
                };
                assert!(!r.text.contains("OUTSIDE"), "{}", r.text);
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
    }
}
