//! Read (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"): `{path, offset?, limit?}` returns
//! `[path#TAG]` then `N:text` rows with absolute line numbers; `offset` is 1-based like Pi's read, `limit` defaults to
//! 2,000 lines. Lines over 16,384 characters are clipped and are not counted as seen; every other shown line is
//! recorded as seen in the session's snapshot store, which Edit's provenance gate consults.
//!
//! Over 600 lines only with its inline tests (the code itself is about 330 lines).

use super::args;
use super::error::{Deadline, HostError, Suggestion};
use super::fileio;
use super::paths::{Resolved, Root, Roots};
use super::snapshot::{LineSet, Recorder, Seen, MAX_RETAINED_FILE};
use super::tag::{self, TagStream, Tagged, MAX_LINE_CHARS};
use serde_json::Value;
use std::fs;
use std::io::Read as _;

/// Lines returned when `limit` is omitted.
pub const DEFAULT_LIMIT: u64 = 2_000;
/// Output budget of the rows, in bytes: like Pi's read (2,000 lines or 50 KiB, whichever comes first), a window
/// of long lines stops early and says where to continue. Lines not shown are not seen.
pub const MAX_OUTPUT_BYTES: usize = 50 * 1024;

/// Decimal digits of `n` plus the `:` (a row's prefix).
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1) + 1
}

/// Largest accepted `offset`/`limit` (line numbers are u32 in the snapshot store).
pub const MAX_LINE_NUMBER: u64 = u32::MAX as u64;

/// Read's arguments after alias folding and range checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadArgs {
    pub path: String,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
}

impl ReadArgs {
    pub fn from_json(v: &Value) -> Result<ReadArgs, HostError> {
        let a = args::object("Read", v)?;
        Ok(ReadArgs {
            path: args::fold("Read", a, "path", "file_path")?,
            offset: args::opt_uint("Read", a, "offset", 1, MAX_LINE_NUMBER)?,
            limit: args::opt_uint("Read", a, "limit", 1, MAX_LINE_NUMBER)?,
        })
    }
}

/// Read's result: the model-facing `text` and the spec's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    pub path: String,
    pub root: Root,
    /// First line shown (1-based).
    pub offset: u64,
    /// Rows shown.
    pub line_count: u64,
    pub total_lines: u64,
    /// More lines follow the window.
    pub truncated: bool,
    pub file_bytes: u64,
    pub tag: String,
    /// Shown lines that were clipped at 16,384 characters (not counted as seen).
    pub clipped_lines: u64,
    pub text: String,
}

/// Files up to this size are read whole (their text may be retained for Edit's drift recovery); larger ones are
/// streamed: only the window's lines are kept, the tag is computed on the way (docs/host.md "Large files"). Twice
/// `MAX_RETAINED_FILE` plus a BOM, so no streamed file could have had its text retained.
pub const STREAM_ABOVE: u64 = 2 * MAX_RETAINED_FILE as u64 + 3;
/// Bytes read per chunk when streaming.
const CHUNK: usize = 256 * 1024;

/// Opens `target` for reading the way writes open files (docs/host.md "Containment of reads"): through folder handles
/// beneath `/` along its canonical path, no symlink followed, the final name `O_NOFOLLOW | O_NONBLOCK`, refused
/// unless a regular file on the opened handle. A folder swapped for a symlink after the path was checked fails the
/// call (PATH_OUTSIDE_WORKSPACE) instead of reading through it. `dir_err` is the failure for a folder.
pub fn open_beneath(
    target: &Resolved,
    tool: &str,
    dir_err: impl FnOnce() -> HostError,
) -> Result<(fs::File, fs::Metadata), HostError> {
    let rel = fileio::rel_of(&target.canonical)?;
    let mut fsys = fileio::Fs::open()?;
    let (file, meta) = fsys.open_read(&rel, &target.shown, tool, dir_err)?;
    Ok((file, meta))
}

/// A folder named to Read: what to do instead, with the Glob call as a structured suggestion.
fn dir_error(target: &Resolved) -> HostError {
    HostError {
        code: super::error::INVALID_ARGUMENT,
        message: format!(
            "{} is a directory; Read takes a file. List its files with Glob (path \"{}\", pattern \"*\"), then Read \
             one of them.",
            target.shown, target.shown
        ),
        suggestion: Some(Suggestion {
            tool: "Glob",
            path: target.shown.clone(),
            pattern: "*".to_string(),
        }),
    }
}

/// Read's pre-card check (docs/host.md "Before the card"): the arguments, and that the path opens as a regular file,
/// refused exactly as the read itself would refuse it (a folder with the Glob suggestion, a missing file NOT_FOUND).
/// The file is opened (without following symlinks, never blocking) and closed; nothing is read. A path that does not
/// resolve is left to the glue, which resolves every target before the card.
pub fn precheck(roots: &Roots, args: &Value) -> Result<(), HostError> {
    let a = ReadArgs::from_json(args)?;
    let Ok(target) = roots.resolve(&a.path) else {
        return Ok(());
    };
    open_beneath(&target, "Read", || dir_error(&target)).map(|_| ())
}

/// Reads `target` (already resolved and, if external, approved) and records the shown lines as seen. `deadline`
/// bounds the read of a large file (TOOL_TIMEOUT, checked per chunk).
pub fn read(
    target: &Resolved,
    a: &ReadArgs,
    deadline: Deadline,
    store: &mut impl Recorder,
) -> Result<ReadResult, HostError> {
    let (mut f, meta) = open_beneath(target, "Read", || dir_error(target))?;
    let offset = a.offset.unwrap_or(1);
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT);
    let window_end = offset.saturating_add(limit) - 1;
    let mut win = Window::new(offset, window_end);
    let tagged = if meta.len() <= STREAM_ABOVE {
        let mut b = Vec::with_capacity(meta.len() as usize + 1);
        f.read_to_end(&mut b).map_err(|e| HostError::io(&target.shown, &e))?;
        let norm = tag::normalize_owned(b);
        win.feed(norm.text.as_bytes());
        win.finish();
        Recorded::Text(norm)
    } else {
        let mut st = TagStream::new();
        let mut buf = vec![0u8; CHUNK];
        loop {
            if deadline.passed() {
                return Err(deadline.file_error("Read", &target.shown));
            }
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(HostError::io(&target.shown, &e)),
            };
            st.push(&buf[..n], &mut |t| win.feed(t));
        }
        let t = st.finish(&mut |t| win.feed(t)).map_err(|_| {
            HostError::new(
                super::error::FILE_TOO_LARGE,
                format!(
                    "{} has a line ending in more than {} alternating runs of spaces and tabs, which a large file \
                     cannot be tagged through; Read cannot show it. Inspect it with Bash (e.g. head, cut).",
                    target.shown,
                    tag::MAX_PENDING_WS_RUNS
                ),
            )
        })?;
        win.finish();
        Recorded::Hashes(t)
    };
    let total = win.total;
    if offset > total.max(1) {
        return Err(HostError::invalid(format!(
            "offset {offset} is beyond the end of {} ({total} lines); call again with an offset from 1 to {}.",
            target.shown,
            total.max(1)
        )));
    }
    let tag = match &tagged {
        Recorded::Text(n) => n.tag.clone(),
        Recorded::Hashes(t) => t.tag.clone(),
    };
    let mut text = tag::header(&tag::escape_name(&target.shown), &tag);
    let mut seen = LineSet::new();
    let mut clipped = 0u64;
    for (n, (shown, was_clipped)) in win.rows.iter().enumerate() {
        let n = offset + n as u64;
        if *was_clipped {
            clipped += 1;
        } else {
            seen.insert(n as u32);
        }
        text.push('\n');
        tag::row(&mut text, n as usize, shown);
    }
    let end = offset + win.rows.len() as u64 - 1;
    let line_count = win.rows.len() as u64;
    if total == 0 {
        text.push_str("\n(empty file)");
    }
    let truncated = total > 0 && end < total;
    if truncated {
        let why = if win.by_bytes {
            format!(" ({} KiB output limit)", MAX_OUTPUT_BYTES / 1024)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "\n[Showing lines {offset}-{end} of {total}{why}. Use offset={} to continue.]",
            end + 1
        ));
    }
    if clipped > 0 {
        text.push_str(&format!(
            "\n[{clipped} line(s) longer than {MAX_LINE_CHARS} characters were clipped and are not editable by line \
             number; use Write to replace the file if they must change.]"
        ));
    }
    match &tagged {
        Recorded::Text(norm) => store.record(&target.canonical, norm, Seen::Lines(seen)),
        Recorded::Hashes(t) => store.record_tagged(&target.canonical, t, Seen::Lines(seen)),
    }
    Ok(ReadResult {
        path: target.shown.clone(),
        root: target.root,
        offset,
        line_count,
        total_lines: total,
        truncated,
        file_bytes: meta.len(),
        tag,
        clipped_lines: clipped,
        text,
    })
}

/// What Read records: the text (small files) or only its hashes (streamed files).
enum Recorded {
    Text(tag::Normalized),
    Hashes(Tagged),
}

/// The rows of the requested window, collected from normalized text as it streams past: each line keeps at most
/// `MAX_LINE_CHARS` characters (plus its character count, for the clip note), rows stop at the output byte budget,
/// and only lines are counted after that. Memory: the budget plus one clipped line.
struct Window {
    first: u64,
    last: u64,
    /// The line being read (1-based) and its bytes so far (up to the clip) and character count.
    cur: u64,
    buf: Vec<u8>,
    chars: usize,
    /// Whether any byte of the current line was seen (a final line without LF still counts).
    open: bool,
    rows: Vec<(String, bool)>,
    row_bytes: usize,
    /// The budget stopped the rows (no later line is collected).
    by_bytes: bool,
    total: u64,
}

impl Window {
    fn new(first: u64, last: u64) -> Window {
        Window {
            first,
            last,
            cur: 1,
            buf: Vec::new(),
            chars: 0,
            open: false,
            rows: Vec::new(),
            row_bytes: 0,
            by_bytes: false,
            total: 0,
        }
    }

    fn collecting(&self) -> bool {
        !self.by_bytes && self.cur >= self.first && self.cur <= self.last
    }

    fn feed(&mut self, mut s: &[u8]) {
        while !s.is_empty() {
            self.open = true;
            let (part, ends) = match memchr::memchr(b'\n', s) {
                Some(i) => (&s[..i], Some(i)),
                None => (s, None),
            };
            if self.collecting() {
                // Bytes are kept up to the clip point (MAX_LINE_CHARS characters); past it only characters are
                // counted, for the clip note. Pieces are whole UTF-8 (the tag stream never splits a character).
                if self.chars <= MAX_LINE_CHARS {
                    for &b in part {
                        if b & 0xC0 != 0x80 {
                            self.chars += 1;
                        }
                        if self.chars <= MAX_LINE_CHARS {
                            self.buf.push(b);
                        }
                    }
                } else {
                    self.chars += std::str::from_utf8(part).map_or(part.len(), |t| t.chars().count());
                }
            }
            match ends {
                Some(i) => {
                    self.end_line();
                    s = &s[i + 1..];
                }
                None => break,
            }
        }
    }

    fn end_line(&mut self) {
        if self.collecting() {
            let line = String::from_utf8_lossy(&self.buf);
            let was_clipped = self.chars > MAX_LINE_CHARS;
            let shown = if was_clipped {
                format!(
                    "{line} [… line clipped at {MAX_LINE_CHARS} of {} characters]",
                    self.chars
                )
            } else {
                line.into_owned()
            };
            // The byte budget ends the window before a row that would pass it; the first row always shows.
            let cost = shown.len() + 1 + digits(self.cur);
            if self.cur > self.first && self.row_bytes + cost > MAX_OUTPUT_BYTES {
                self.by_bytes = true;
            } else {
                self.row_bytes += cost;
                self.rows.push((shown, was_clipped));
            }
        }
        self.buf.clear();
        self.chars = 0;
        self.open = false;
        self.total = self.cur;
        self.cur += 1;
    }

    fn finish(&mut self) {
        if self.open {
            self.end_line();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::error::{NOT_FOUND, PATH_OUTSIDE_WORKSPACE, TOOL_FAILED};
    use crate::host::paths::Roots;
    use crate::host::snapshot::{Provenance, SnapshotStore};
    use serde_json::json;
    use tempfile::TempDir;

    fn setup(files: &[(&str, &[u8])]) -> (TempDir, Roots) {
        let t = TempDir::new().unwrap();
        fs::create_dir_all(t.path().join("ws")).unwrap();
        for (name, body) in files {
            let p = t.path().join("ws").join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, body).unwrap();
        }
        let roots = Roots::new(&t.path().join("ws"), &t.path().join("agent"), "s").unwrap();
        (t, roots)
    }

    fn run(roots: &Roots, store: &mut SnapshotStore, v: Value) -> Result<ReadResult, HostError> {
        let a = ReadArgs::from_json(&v)?;
        let target = roots.resolve_inside(&a.path)?;
        read(&target, &a, Deadline::none(), store)
    }

    #[test]
    fn renders_header_and_absolute_numbered_rows() {
        let (_t, roots) = setup(&[("src/a.txt", b"one\ntwo\nthree\nfour\n")]);
        let mut st = SnapshotStore::new();
        let r = run(
            &roots,
            &mut st,
            json!({"file_path": "src/a.txt", "offset": 2, "limit": 2}),
        )
        .unwrap();
        let tag = tag::tag_of("one\ntwo\nthree\nfour\n");
        assert_eq!(
            r.text,
            format!("[src/a.txt#{tag}]\n2:two\n3:three\n[Showing lines 2-3 of 4. Use offset=4 to continue.]")
        );
        assert_eq!((r.offset, r.line_count, r.total_lines, r.truncated), (2, 2, 4, true));
        assert_eq!(
            (r.file_bytes, r.root, r.path.as_str()),
            (19, Root::Workspace, "src/a.txt")
        );
        let full = run(&roots, &mut st, json!({"path": "src/a.txt"})).unwrap();
        assert!(!full.truncated && full.text.ends_with("\n4:four"));
    }

    #[test]
    fn paged_reads_combine_their_seen_lines() {
        let (_t, roots) = setup(&[("a.txt", b"1\n2\n3\n4\n5\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "a.txt", "limit": 2})).unwrap();
        run(&roots, &mut st, json!({"path": "a.txt", "offset": 4, "limit": 1})).unwrap();
        let key = roots.workspace().join("a.txt");
        let Provenance::Seen(Seen::Lines(s)) = st.provenance(&key, &r.tag) else {
            panic!("recorded")
        };
        assert_eq!(s.ranges(), &[(1, 2), (4, 4)]);
    }

    #[test]
    fn crlf_and_bom_files_read_as_lf_with_the_normalized_tag() {
        let (_t, roots) = setup(&[("w.txt", b"\xef\xbb\xbfa  \r\nb\r\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "w.txt"})).unwrap();
        assert_eq!(r.text, format!("[w.txt#{}]\n1:a  \n2:b", tag::tag_of("a\nb\n")));
        assert_eq!(r.file_bytes, 11);
    }

    #[test]
    fn default_limit_is_2000_lines() {
        let body: String = (1..=2001).map(|i| format!("l{i}\n")).collect();
        let (_t, roots) = setup(&[("big.txt", body.as_bytes())]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "big.txt"})).unwrap();
        assert_eq!((r.line_count, r.total_lines, r.truncated), (2000, 2001, true));
        assert!(r
            .text
            .contains("\n2000:l2000\n[Showing lines 1-2000 of 2001. Use offset=2001 to continue.]"));
        let last = run(&roots, &mut st, json!({"path": "big.txt", "offset": 2001})).unwrap();
        assert_eq!((last.line_count, last.truncated), (1, false));
    }

    #[test]
    fn the_output_byte_budget_ends_the_window_at_its_boundary() {
        // Rows "N:" + 99 chars + LF: 100 rows of 103-104 bytes, budget 51,200 bytes.
        let line = "x".repeat(99);
        let body: String = (1..=1000).map(|_| format!("{line}\n")).collect();
        let (_t, roots) = setup(&[("wide.txt", body.as_bytes())]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "wide.txt"})).unwrap();
        // Rows 1-9 cost 102 bytes, 10-99 cost 103, 100-999 cost 104: count how many fit exactly.
        let mut used = 0;
        let mut fit = 0;
        for n in 1u64..=1000 {
            let cost = 99 + 1 + digits(n);
            if used + cost > MAX_OUTPUT_BYTES {
                break;
            }
            used += cost;
            fit = n;
        }
        assert_eq!((r.line_count, r.truncated), (fit, true));
        let rows_len: usize = r.text.lines().skip(1).take(fit as usize).map(|l| l.len() + 1).sum();
        assert!(rows_len <= MAX_OUTPUT_BYTES && rows_len + 104 > MAX_OUTPUT_BYTES);
        assert!(r.text.ends_with(&format!(
            "[Showing lines 1-{fit} of 1000 (50 KiB output limit). Use offset={} to continue.]",
            fit + 1
        )));
        let Provenance::Seen(Seen::Lines(s)) = st.provenance(&roots.workspace().join("wide.txt"), &r.tag) else {
            panic!()
        };
        assert_eq!(s.ranges(), &[(1, fit as u32)]);
        // A single row larger than the budget still shows (clipped at 16,384 characters of 4 bytes each).
        let huge = format!("{}\nnext\n", "\u{1F600}".repeat(MAX_LINE_CHARS + 5));
        let (_t2, roots2) = setup(&[("huge.txt", huge.as_bytes())]);
        let h = run(&roots2, &mut st, json!({"path": "huge.txt"})).unwrap();
        assert_eq!((h.line_count, h.truncated, h.clipped_lines), (1, true, 1));
    }

    #[test]
    fn long_lines_are_clipped_and_not_seen() {
        let body = format!(
            "{}\n{}\nshort\n",
            "x".repeat(MAX_LINE_CHARS),
            "y".repeat(MAX_LINE_CHARS + 1)
        );
        let (_t, roots) = setup(&[("long.txt", body.as_bytes())]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "long.txt"})).unwrap();
        assert_eq!(r.clipped_lines, 1);
        assert!(r.text.contains("line clipped at 16384 of 16385 characters"));
        let Provenance::Seen(seen) = st.provenance(&roots.workspace().join("long.txt"), &r.tag) else {
            panic!()
        };
        assert!(seen.contains(1) && !seen.contains(2) && seen.contains(3));
    }

    #[test]
    fn fifos_are_refused_without_blocking() {
        let t = TempDir::new().unwrap();
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let roots = Roots::new(t.path(), &t.path().join("agent"), "s").unwrap();
        let e = read(
            &roots.resolve("fifo").unwrap(),
            &ReadArgs::from_json(&json!({"path": "fifo"})).unwrap(),
            Deadline::none(),
            &mut SnapshotStore::new(),
        )
        .unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(e.message.contains("not a regular file"));
    }

    #[test]
    fn offsets_limits_and_empty_files() {
        let (_t, roots) = setup(&[("a.txt", b"1\n2\n"), ("empty.txt", b"")]);
        let mut st = SnapshotStore::new();
        let e = run(&roots, &mut st, json!({"path": "a.txt", "offset": 3})).unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(e.message.contains("offset from 1 to 2"), "{}", e.message);
        assert!(run(&roots, &mut st, json!({"path": "a.txt", "offset": 0})).is_err());
        assert!(run(&roots, &mut st, json!({"path": "a.txt", "limit": 0})).is_err());
        let huge = run(&roots, &mut st, json!({"path": "a.txt", "limit": MAX_LINE_NUMBER})).unwrap();
        assert_eq!((huge.line_count, huge.truncated), (2, false));
        let empty = run(&roots, &mut st, json!({"path": "empty.txt"})).unwrap();
        assert_eq!((empty.line_count, empty.total_lines), (0, 0));
        assert_eq!(empty.text, format!("[empty.txt#{}]\n(empty file)", tag::tag_of("")));
    }

    #[test]
    fn directories_missing_and_outside_paths_fail_with_codes() {
        let (t, roots) = setup(&[("d/a.txt", b"x")]);
        let mut st = SnapshotStore::new();
        let d = run(&roots, &mut st, json!({"path": "d"})).unwrap_err();
        assert_eq!(d.code, "INVALID_ARGUMENT");
        assert_eq!(
            d.suggestion,
            Some(Suggestion {
                tool: "Glob",
                path: "d".into(),
                pattern: "*".into()
            })
        );
        assert_eq!(
            run(&roots, &mut st, json!({"path": "nope.txt"})).unwrap_err().code,
            "NOT_FOUND"
        );
        fs::write(t.path().join("secret"), "s").unwrap();
        assert_eq!(
            run(&roots, &mut st, json!({"path": "../secret"})).unwrap_err().code,
            "PATH_OUTSIDE_WORKSPACE"
        );
        // An approved external read shows the absolute canonical path and root "external".
        let ext = roots.resolve("../secret").unwrap();
        let r = read(
            &ext,
            &ReadArgs::from_json(&json!({"path": "../secret"})).unwrap(),
            Deadline::none(),
            &mut st,
        )
        .unwrap();
        assert_eq!(r.root, Root::External);
        assert!(r.text.starts_with(&format!(
            "[{}#",
            fs::canonicalize(t.path().join("secret")).unwrap().display()
        )));
    }

    #[test]
    fn a_large_file_streams_its_window_with_the_in_memory_tag() {
        // Over STREAM_ABOVE: CRLF, a BOM, trailing spaces and one long line, so every normalisation step streams.
        let mut body = String::from(tag::BOM);
        let mut k = 0;
        while body.len() as u64 <= STREAM_ABOVE + 1000 {
            k += 1;
            body.push_str(&format!("row {k} of a streamed file  \r\n"));
        }
        body.push_str(&"w".repeat(MAX_LINE_CHARS + 7));
        let (_t, roots) = setup(&[("big.txt", body.as_bytes())]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "big.txt", "offset": 10, "limit": 3})).unwrap();
        let norm = tag::normalize(body.as_bytes());
        assert_eq!(r.tag, norm.tag);
        assert_eq!(r.total_lines, k + 1);
        assert_eq!(
            r.text,
            format!(
                "[big.txt#{}]\n10:row 10 of a streamed file  \n11:row 11 of a streamed file  \n12:row 12 of a \
                 streamed file  \n[Showing lines 10-12 of {}. Use offset=13 to continue.]",
                norm.tag,
                k + 1
            )
        );
        // Recorded by its hashes (Edit can recognise the version), the text not retained.
        let key = roots.workspace().join("big.txt");
        let v = st.versions(&key).last().unwrap().clone();
        assert_eq!(
            (v.digest, v.fp, v.len, v.text.is_none()),
            (norm.digest, norm.fp, norm.text.len(), true)
        );
        let Provenance::Seen(Seen::Lines(s)) = st.provenance(&key, &r.tag) else {
            panic!()
        };
        assert_eq!(s.ranges(), &[(10, 12)]);
        // The last (long, unterminated) line clips as in memory; an offset past the end names the range.
        let last = run(&roots, &mut st, json!({"path": "big.txt", "offset": k + 1})).unwrap();
        assert_eq!((last.line_count, last.clipped_lines, last.truncated), (1, 1, false));
        assert!(last.text.contains(&format!(
            "line clipped at {MAX_LINE_CHARS} of {} characters",
            MAX_LINE_CHARS + 7
        )));
        let e = run(&roots, &mut st, json!({"path": "big.txt", "offset": k + 2})).unwrap_err();
        assert!(
            e.message.contains(&format!("offset from 1 to {}", k + 1)),
            "{}",
            e.message
        );
        // A passed deadline stops a streamed read with TOOL_TIMEOUT.
        let a = ReadArgs::from_json(&json!({"path": "big.txt"})).unwrap();
        let e = read(&roots.resolve("big.txt").unwrap(), &a, Deadline::after_ms(0), &mut st).unwrap_err();
        assert_eq!(e.code, "TOOL_TIMEOUT");
        assert!(e.message.contains("while reading big.txt"), "{}", e.message);
    }

    #[test]
    fn names_with_control_characters_are_escaped_in_the_header() {
        let (_t, roots) = setup(&[("a\n2:fake.txt", b"real\n")]);
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "a\n2:fake.txt"})).unwrap();
        assert_eq!(r.text.lines().count(), 2, "{}", r.text);
        assert!(r.text.starts_with("[a\\n2:fake.txt#"), "{}", r.text);
        assert!(r.text.ends_with("\n1:real"));
    }

    /// Reads of `sub/f.txt` while another thread keeps swapping `sub` between a real folder and a symlink to a
    /// folder outside the workspace: a read returns the inside file or fails, never the outside one.
    #[test]
    fn a_folder_swapped_for_a_symlink_is_never_read_through() {
        let (t, roots) = setup(&[("sub/f.txt", b"inside\n")]);
        let outside = t.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("f.txt"), "OUTSIDE SECRET\n").unwrap();
        let ws = roots.workspace().to_path_buf();
        let target = roots.resolve_inside("sub/f.txt").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (ws, outside, stop) = (ws.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = fs::rename(ws.join("sub"), ws.join("real"));
                    let _ = std::os::unix::fs::symlink(&outside, ws.join("sub"));
                    let _ = fs::remove_file(ws.join("sub"));
                    let _ = fs::rename(ws.join("real"), ws.join("sub"));
                    swaps += 1;
                }
                swaps
            })
        };
        let a = ReadArgs::from_json(&json!({"path": "sub/f.txt"})).unwrap();
        let (mut ok, mut refused) = (0, 0);
        let mut st = SnapshotStore::new();
        for _ in 0..3000 {
            match read(&target, &a, Deadline::none(), &mut st) {
                Ok(r) => {
                    assert!(
                        !r.text.contains("OUTSIDE"),
                        "read through the swapped symlink: {}",
                        r.text
                    );
                    ok += 1;
                }
                Err(e) => {
                    assert!(
                        [PATH_OUTSIDE_WORKSPACE, NOT_FOUND, TOOL_FAILED].contains(&e.code),
                        "{e}"
                    );
                    refused += 1;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(
            swaps > 0 && ok + refused == 3000,
            "{swaps} swaps, {ok} ok, {refused} refused"
        );
    }

    /// Runs `name` (a test of this module) in a child test process whose address space is limited to `kib`.
    fn under_address_limit(name: &str, kib: u64) {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v {kib} && exec \"$0\" --exact {name} --test-threads=1 --nocapture"
            ))
            .arg(exe)
            .env("PCT_LARGE_FILE_CHILD", "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains("1 passed"),
            "child under ulimit -v {kib} failed ({:?}):\n{text}",
            out.status
        );
    }

    /// A sparse 2 GiB file under a 1 GiB address-space limit (docs/host.md "Large files"): Read returns the window
    /// and the right total, Write and Edit refuse it with FILE_TOO_LARGE before reading it (it stays as it was), and
    /// Grep skips it as binary (its hole is NUL bytes) and finds the text file next to it. Nothing aborts.
    #[test]
    fn huge_sparse_files_never_abort_under_an_address_space_limit() {
        if std::env::var_os("PCT_LARGE_FILE_CHILD").is_none() {
            return under_address_limit(
                "host::read::tests::huge_sparse_files_never_abort_under_an_address_space_limit",
                1024 * 1024,
            );
        }
        use crate::host::{edit, grep, write};
        let (t, roots) = setup(&[("small.txt", b"needle here\n")]);
        let huge = roots.workspace().join("huge.log");
        {
            let mut f = fs::File::create(&huge).unwrap();
            use std::io::{Seek, Write};
            for i in 1..=10 {
                writeln!(f, "line {i}").unwrap();
            }
            f.seek(std::io::SeekFrom::Start(2 << 30)).unwrap();
            f.write_all(b"tail needle\n").unwrap();
        }
        let len = fs::metadata(&huge).unwrap().len();
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, json!({"path": "huge.log", "limit": 5})).unwrap();
        assert_eq!((r.line_count, r.total_lines, r.truncated), (5, 11, true));
        assert!(r.text.contains("\n1:line 1\n") && r.text.contains("\n5:line 5\n[Showing lines 1-5 of 11."));
        let tail = run(&roots, &mut st, json!({"path": "huge.log", "offset": 11})).unwrap();
        assert_eq!(tail.clipped_lines, 1);
        // Line 11 runs from byte 71 (after ten "line N" rows) through the hole to "tail needle".
        let chars = (2u64 << 30) + "tail needle".len() as u64 - 71;
        assert!(
            tail.text
                .contains(&format!("line clipped at 16384 of {chars} characters]")),
            "{}",
            &tail.text[tail.text.len() - 300..]
        );
        // Write over it and Edit of it: refused before reading, nothing changed.
        let wa = write::WriteArgs::from_json(&json!({"path": "huge.log", "content": "x"})).unwrap();
        let e = write::write(&roots, &roots.resolve("huge.log").unwrap(), &wa, &mut st).unwrap_err();
        assert_eq!(e.code, "FILE_TOO_LARGE", "{e}");
        assert!(e.message.contains("64 MiB"), "{}", e.message);
        let store = std::sync::Mutex::new(SnapshotStore::new());
        let e = edit::run(
            &roots,
            &store,
            &edit::EditState::default(),
            &json!({"path": "huge.log", "tag": r.tag, "ops": "PUT 1.=1:\n+x"}),
            None,
            Some("turn"),
        )
        .unwrap_err();
        assert_eq!(e.error.code, "FILE_TOO_LARGE", "{}", e.error);
        assert_eq!(fs::metadata(&huge).unwrap().len(), len);
        // Grep: the sparse file is binary (skipped and said so), the text file still matches.
        let ga = grep::GrepArgs::from_json(&json!({"pattern": "needle"})).unwrap();
        let g = grep::grep(&roots, &roots.resolve(".").unwrap(), &ga, Deadline::none(), &mut st).unwrap();
        assert_eq!(
            (g.files.clone(), g.binary_skipped),
            (vec!["small.txt".to_string()], 1),
            "{}",
            g.text
        );
        drop(t);
    }
}
