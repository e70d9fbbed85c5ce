//! Searching one file (docs/host.md "Grep"): the normalisation (BOM dropped, CRLF/CR as LF, a NUL makes the file
//! binary), done in place on a small file read whole or chunk by chunk by the streaming reader for a large one, the
//! sink that keeps clipped rows, and the per-thread `Worker` that opens a file beneath a folder handle and searches
//! it, either as a probe (does it match, and how often) or in detail (rows and tag from one read).

use super::{GrepArgs, OutputMode, MAX_LINE_CHARS};
use crate::host::error::{self, Deadline, HostError};
use crate::host::fileio;
use crate::host::grep_lines::LineMatcher;
use crate::host::snapshot::MAX_RETAINED_FILE;
use crate::host::tag::{self, TagStream, Tagged};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// One shown row of a file: a match or a context line, already clipped to `MAX_LINE_CHARS` (the flag says whether
/// it was), so a huge line never stays in memory.
#[derive(Debug, Clone)]
pub(super) enum Row {
    Match(u64, String, bool),
    Context(u64, String, bool),
}

/// What one searched file produced: a probe only counts; a detail search (files that may be shown) also keeps rows
/// and the file's tag (and its text when small enough to retain), from the same read, so rows and tag always agree.
pub(super) struct FileHits {
    pub(super) path: PathBuf,
    pub(super) rows: Vec<Row>,
    /// Matched lines found (up to the searcher's cap: 1 for a probe that only asks whether the file matches).
    pub(super) count: u64,
    /// Matched lines the probe found in the whole file, when it counted them all (a `total` call).
    pub(super) probe_count: u64,
    pub(super) tagged: Option<(Tagged, Option<String>)>,
}

/// Why a file was not searched to its end: it is reported, never silently counted as "no match".
#[derive(Debug)]
pub(super) enum Stop {
    /// Not a match, or a file that vanished or changed type since the walk saw it.
    Nothing,
    /// A NUL byte: binary, skipped.
    Binary,
    /// The deadline passed inside the file.
    Deadline,
    /// The call no longer needs this file (its result is known without it): the search was abandoned part-way.
    Cancelled,
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

pub(super) fn line_text(bytes: &[u8]) -> (String, bool) {
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
pub(super) const CHUNK: usize = 64 * 1024;
/// Longest line Grep searches, in bytes (the searcher's buffer holds one line at least): a file with a longer line is
/// reported as not searched (docs/host.md "Large files"). Memory per search thread stays about this size.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The file as Grep searches it, streamed: a leading BOM dropped and CRLF/CR as LF (the tools' line numbering), each
/// raw chunk checked for a NUL (binary: stop), also fed to the tag stream on the detail pass, the deadline and the
/// call's cancel flag checked per chunk. A stop is an I/O error to the searcher; `stop` says which.
///
/// Each chunk is read straight into the searcher's buffer and normalised there in place (the result is never
/// longer than the raw bytes), so a file's bytes are copied once and no buffer is allocated per file.
pub(super) struct Normalizing<'a> {
    file: fs::File,
    cancel: Option<&'a AtomicBool>,
    started: bool,
    after_cr: bool,
    eof: bool,
    tag: Option<&'a mut TagStream>,
    text: Option<&'a mut Vec<u8>>,
    deadline: Deadline,
    pub(super) stop: Option<Stop>,
    /// Normalised bytes not yet handed out, for reads smaller than a BOM (empty otherwise).
    spill: Vec<u8>,
    spill_at: usize,
}

impl<'a> Normalizing<'a> {
    pub(super) fn new(
        file: fs::File,
        deadline: Deadline,
        cancel: Option<&'a AtomicBool>,
        tag: Option<&'a mut TagStream>,
        text: Option<&'a mut Vec<u8>>,
    ) -> Self {
        Normalizing {
            file,
            cancel,
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
            if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(self.halt(Stop::Cancelled));
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

/// Per-thread search state: the matcher, the searcher and the mode's settings; files are opened through the folder
/// handles the caller passes.
pub(super) struct Worker<'s> {
    matcher: LineMatcher,
    searcher: Searcher,
    mode: OutputMode,
    deadline: Deadline,
    cancel: &'s AtomicBool,
    /// The whole of a small file (see `search`), kept across files so none allocates.
    buf: Vec<u8>,
}

fn searcher(b: &mut SearcherBuilder) -> Searcher {
    b.heap_limit(Some(MAX_LINE_BYTES))
        .bom_sniffing(false)
        .binary_detection(grep_searcher::BinaryDetection::none())
        .build()
}

impl<'s> Worker<'s> {
    /// The walk's worker: it asks whether a file matches, so it stops at the first match and keeps no rows, unless
    /// `count_all` (a `total` call counting every matched line). A detail search follows for the files that may be
    /// shown.
    pub(super) fn probe(matcher: &LineMatcher, count_all: bool, deadline: Deadline, cancel: &'s AtomicBool) -> Self {
        let (max, mode) = if count_all {
            (None, OutputMode::Count)
        } else {
            (Some(1), OutputMode::FilesWithMatches)
        };
        Worker {
            matcher: matcher.clone(),
            searcher: searcher(SearcherBuilder::new().line_number(false).max_matches(max)),
            mode,
            deadline,
            cancel,
            buf: Vec::new(),
        }
    }

    /// The detail search's worker: line numbers, context and the per-file cap of the requested mode.
    pub(super) fn detail(
        matcher: &LineMatcher,
        a: &GrepArgs,
        per_file: Option<u64>,
        deadline: Deadline,
        cancel: &'s AtomicBool,
    ) -> Self {
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
            cancel,
            buf: Vec::new(),
        }
    }

    /// Searches the file `rel` beneath `dirs` (opened without following symlinks, never blocking on a FIFO):
    /// `Err(Stop::Nothing)` when it has no match. `detail` keeps the rows and the tag (for files that may be shown).
    ///
    /// A probe of a file of at most `WHOLE_MAX` bytes (most files of a source tree) reads it whole into the thread's
    /// buffer, with one read when the file is the size its handle reported, normalises it there and searches it as
    /// one slice (the streaming reader needs a read more to see the end). A larger file, and every detail search,
    /// streams through `Normalizing`: a probe then stops at its first match, and a detail search hashes each chunk
    /// while it is in cache. Either way the whole file is checked for a NUL on a detail search, and a probe of a small
    /// file checks it whole too (it was read anyway).
    pub(super) fn search(
        &mut self,
        dirs: &mut fileio::Fs,
        rel: &str,
        path: &Path,
        detail: bool,
    ) -> Result<FileHits, Stop> {
        // The shown name in an error is the relative path (the render lists the failed file by its shown path
        // beside the reason): no name is formatted for the files that open fine.
        let (mut f, len) = match dirs.open_read(rel, rel, "Grep", || HostError::invalid("")) {
            Ok((f, meta)) if meta.is_file() => (f, meta.len()),
            Ok(_) => return Err(Stop::Nothing),
            Err(e) if e.code == error::NOT_FOUND || e.code == error::INVALID_ARGUMENT => return Err(Stop::Nothing),
            Err(e) => return Err(Stop::Failed(e.message)),
        };
        let retain = detail && len <= MAX_RETAINED_FILE as u64;
        let mut ts = detail.then(TagStream::new);
        let mut kept = Vec::new();
        let mut rows = Vec::new();
        let mut sink = Collect {
            mode: self.mode,
            keep_rows: detail,
            rows: &mut rows,
            count: 0,
        };
        if !detail && len > 0 && len <= WHOLE_MAX {
            if self.deadline.passed() {
                return Err(Stop::Deadline);
            }
            if self.cancel.load(Ordering::Relaxed) {
                return Err(Stop::Cancelled);
            }
            let n = read_whole(&mut f, &mut self.buf, len as usize)?;
            let raw = &mut self.buf[..n];
            let text = normalize_whole(raw)?;
            let searched = self.searcher.search_slice(&self.matcher, text, &mut sink);
            if let Err(e) = searched {
                return Err(Stop::Failed(e.to_string()));
            }
        } else {
            let mut reader = Normalizing::new(
                f,
                self.deadline,
                Some(self.cancel),
                ts.as_mut(),
                retain.then_some(&mut kept),
            );
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
        }
        let count = sink.count;
        if count == 0 {
            return Err(Stop::Nothing);
        }
        let tagged = match ts {
            Some(ts) => {
                let mut tail = Vec::new();
                let t = ts
                    .finish(&mut |x| tail.extend_from_slice(x))
                    .map_err(|_| Stop::Failed("a line ends in too irregular a run of spaces and tabs to tag".into()))?;
                let text = retain.then(|| {
                    kept.extend_from_slice(&tail);
                    String::from_utf8(kept).unwrap_or_default()
                });
                Some((t, text))
            }
            None => None,
        };
        Ok(FileHits {
            path: path.to_path_buf(),
            rows,
            count,
            probe_count: count,
            tagged,
        })
    }
}

/// Files up to this size are probed read whole (see `Worker::search`): the streaming reader's chunk, so the buffer a
/// thread keeps is at most that, and a larger file is searched chunk by chunk as before, in cache.
const WHOLE_MAX: u64 = CHUNK as u64;

/// Reads the file `f`, whose handle reported `len` bytes, into `buf` (grown, never shrunk, zeroed only when it grows):
/// the number of bytes read. It stops once `len` bytes are in (one read for a file that is the size it was), at the
/// end of the file, or when the buffer is full (a file that grew past `WHOLE_MAX` meanwhile is searched as it was
/// when opened plus what fitted).
pub(super) fn read_whole(f: &mut fs::File, buf: &mut Vec<u8>, len: usize) -> Result<usize, Stop> {
    let room = (len + 1).max(buf.len()).min(WHOLE_MAX as usize + 1);
    if buf.len() < room {
        buf.resize(room, 0);
    }
    let mut n = 0;
    while n < len && n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Stop::Failed(e.to_string())),
        }
    }
    Ok(n)
}

/// A whole file as Grep searches it (what `Normalizing` does chunk by chunk): a NUL makes it binary, a leading BOM is
/// dropped, CRLF and CR become LF, in place. Returns the searched text.
pub(super) fn normalize_whole(raw: &mut [u8]) -> Result<&[u8], Stop> {
    let first_cr = match memchr::memchr2(0, b'\r', raw) {
        Some(p) if raw[p] == 0 => return Err(Stop::Binary),
        Some(p) if memchr::memchr(0, &raw[p..]).is_some() => return Err(Stop::Binary),
        Some(p) => p,
        None => raw.len(),
    };
    let start = if raw.starts_with(tag::BOM.as_bytes()) {
        tag::BOM.len()
    } else {
        0
    };
    let n = raw.len();
    if first_cr == n {
        return Ok(&raw[start..]);
    }
    // Compact in place: `w` trails `i`, each CR (or CRLF) becomes one LF.
    let (mut w, mut i) = (first_cr, first_cr);
    while let Some(off) = memchr::memchr(b'\r', &raw[i..n]) {
        let p = i + off;
        raw.copy_within(i..p, w);
        w += p - i;
        raw[w] = b'\n';
        w += 1;
        i = p + 1;
        if i < n && raw[i] == b'\n' {
            i += 1;
        }
    }
    raw.copy_within(i..n, w);
    w += n - i;
    Ok(&raw[start..w])
}

/// The path of `p` beneath `root` as the folder handles take it (what `Path::strip_prefix` gives). The walk's paths
/// are `root` joined with plain names, so this is usually `root`'s bytes, a `/` and a rest without `.` or empty
/// segments, taken as is; any other shape goes through `Path::strip_prefix`, which parses every component (that
/// parsing, for every file, was 1 to 2% of a search).
pub(super) fn rel_beneath<'p>(root: &Path, p: &'p Path) -> Option<&'p str> {
    use std::os::unix::ffi::OsStrExt;
    let (r, b) = (root.as_os_str().as_bytes(), p.as_os_str().as_bytes());
    let plain = |rest: &[u8]| {
        !rest.is_empty()
            && rest.split(|&c| c == b'/').all(|seg| !seg.is_empty() && seg != b".")
            && !r.is_empty()
            && !r.ends_with(b"/")
            && !r.ends_with(b"/.")
            && r != b"."
    };
    match b.strip_prefix(r).and_then(|rest| rest.strip_prefix(b"/")) {
        Some(rest) if plain(rest) => std::str::from_utf8(rest).ok(),
        _ => p.strip_prefix(root).ok()?.to_str(),
    }
}
