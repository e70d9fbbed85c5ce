//! Read (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"): `{path, offset?, limit?}` returns
//! `[path#TAG]` then `N:text` rows with absolute line numbers; `offset` is 1-based like Pi's read, `limit` defaults to
//! 2,000 lines. Lines over 16,384 characters are clipped and are not counted as seen; every other shown line is
//! recorded as seen in the session's snapshot store, which Edit's provenance gate consults.

use super::args;
use super::error::{HostError, Suggestion};
use super::paths::{Resolved, Root};
use super::snapshot::{LineSet, Recorder, Seen};
use super::tag::{self, MAX_LINE_CHARS};
use serde_json::Value;
use std::fs;
use std::io::Read as _;
use std::path::Path;

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

/// Opens `path` for reading only if it is a regular file, checked on the opened handle (so a file swapped for a
/// FIFO or device after the path was checked is refused, and opening a FIFO never blocks: O_NONBLOCK).
pub fn open_regular(path: &Path) -> std::io::Result<Option<fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    Ok(f.metadata()?.is_file().then_some(f))
}

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

/// Reads `target` (already resolved and, if external, approved) and records the shown lines as seen.
pub fn read(target: &Resolved, a: &ReadArgs, store: &mut impl Recorder) -> Result<ReadResult, HostError> {
    let meta = fs::metadata(&target.canonical).map_err(|e| HostError::io(&target.shown, &e))?;
    if meta.is_dir() {
        return Err(HostError {
            code: super::error::INVALID_ARGUMENT,
            message: format!(
                "{} is a directory; Read takes a file. List its files with Glob (path \"{}\", pattern \"*\"), then \
                 Read one of them.",
                target.shown, target.shown
            ),
            suggestion: Some(Suggestion {
                tool: "Glob",
                path: target.shown.clone(),
                pattern: "*".to_string(),
            }),
        });
    }
    if !meta.is_file() {
        return Err(HostError::invalid(format!(
            "{} is not a regular file (a device, socket or pipe); Read only regular files.",
            target.shown
        )));
    }
    let bytes = match open_regular(&target.canonical) {
        Ok(Some(mut f)) => {
            let mut b = Vec::with_capacity(meta.len() as usize);
            f.read_to_end(&mut b).map_err(|e| HostError::io(&target.shown, &e))?;
            b
        }
        Ok(None) => {
            return Err(HostError::invalid(format!(
                "{} stopped being a regular file while it was opened; Read only regular files.",
                target.shown
            )))
        }
        Err(e) => return Err(HostError::io(&target.shown, &e)),
    };
    let norm = tag::normalize_owned(bytes);
    let lines = tag::lines(&norm.text);
    let total = lines.len() as u64;
    let offset = a.offset.unwrap_or(1);
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT);
    if offset > total.max(1) {
        return Err(HostError::invalid(format!(
            "offset {offset} is beyond the end of {} ({total} lines); call again with an offset from 1 to {}.",
            target.shown,
            total.max(1)
        )));
    }
    let window_end = total.min(offset.saturating_add(limit) - 1);
    let mut end = window_end;
    let mut text = tag::header(&target.shown, &norm.tag);
    let mut seen = LineSet::new();
    let mut clipped = 0u64;
    let mut by_bytes = false;
    let mut row_bytes = 0usize;
    for n in offset..=window_end {
        if total == 0 {
            break;
        }
        let (shown, was_clipped) = tag::clip_line(lines[(n - 1) as usize], MAX_LINE_CHARS);
        // The byte budget ends the window before a row that would pass it; the first row always shows.
        let cost = shown.len() + 1 + digits(n);
        if n > offset && row_bytes + cost > MAX_OUTPUT_BYTES {
            end = n - 1;
            by_bytes = true;
            break;
        }
        row_bytes += cost;
        if was_clipped {
            clipped += 1;
        } else {
            seen.insert(n as u32);
        }
        text.push('\n');
        tag::row(&mut text, n as usize, &shown);
    }
    let line_count = if total == 0 { 0 } else { end - offset + 1 };
    if total == 0 {
        text.push_str("\n(empty file)");
    }
    let truncated = end < total;
    if truncated {
        let why = if by_bytes {
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
    store.record(&target.canonical, &norm, Seen::Lines(seen));
    Ok(ReadResult {
        path: target.shown.clone(),
        root: target.root,
        offset,
        line_count,
        total_lines: total,
        truncated,
        file_bytes: meta.len(),
        tag: norm.tag,
        clipped_lines: clipped,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
        read(&target, &a, store)
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
    fn open_regular_refuses_fifos_without_blocking() {
        let t = TempDir::new().unwrap();
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(open_regular(&fifo).unwrap().is_none());
        fs::write(t.path().join("f"), "x").unwrap();
        assert!(open_regular(&t.path().join("f")).unwrap().is_some());
        let roots = Roots::new(t.path(), &t.path().join("agent"), "s").unwrap();
        let e = read(
            &roots.resolve("fifo").unwrap(),
            &ReadArgs::from_json(&json!({"path": "fifo"})).unwrap(),
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
            &mut st,
        )
        .unwrap();
        assert_eq!(r.root, Root::External);
        assert!(r.text.starts_with(&format!(
            "[{}#",
            fs::canonicalize(t.path().join("secret")).unwrap().display()
        )));
    }
}
