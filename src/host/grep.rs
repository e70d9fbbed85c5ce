//! Grep, in process on ripgrep's libraries (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"):
//! Pi's grep parameters (`pattern, path, glob, ignoreCase, literal, context, limit`) plus
//! `outputMode: content | filesWithMatches | count`. The tree is walked in parallel by `ignore` with Glob's rules
//! (`.gitignore` honoured; an explicitly named path inside an ignored tree is still searched because a walk root is
//! never filtered); a named file is searched without walking its siblings. Files containing a NUL byte are binary
//! and skipped. Each file is read once and searched as the tools see it (BOM stripped, CRLF/CR as LF), so line
//! numbers and the file's tag agree with Read; matched lines are recorded as seen in the snapshot store, context
//! lines are not, and count/files-with-matches modes record the tag with an empty seen set.

use super::args;
use super::error::{Deadline, HostError};
use super::glob;
use super::paths::{Resolved, Root, Roots};
use super::snapshot::{LineSet, Recorder, Seen};
use super::tag::{self, Normalized};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::WalkState;
use serde_json::Value;
use std::borrow::Cow;
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
/// Bytes read first to spot a binary file before reading the whole of it.
const BINARY_PROBE: usize = 64 * 1024;
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
    pub text: String,
}

/// One shown row of a file: a match or a context line (`None` line text never happens; rows keep raw bytes).
#[derive(Debug, Clone)]
enum Row {
    Match(u64, String),
    Context(u64, String),
}

/// What one searched file produced: the walk only counts; the detail pass (files actually shown) also keeps rows
/// and the file's normalized text, from the same bytes, so rows and tag always agree.
struct FileHits {
    path: PathBuf,
    rows: Vec<Row>,
    count: u64,
    norm: Option<Normalized>,
}

/// Collects rows of one file (`keep_rows` false: counts only).
struct Collect<'a> {
    mode: OutputMode,
    keep_rows: bool,
    rows: &'a mut Vec<Row>,
    count: u64,
}

fn line_text(bytes: &[u8]) -> String {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    String::from_utf8_lossy(b).into_owned()
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        if self.keep_rows && self.mode == OutputMode::Content {
            self.rows
                .push(Row::Match(m.line_number().unwrap_or(0), line_text(m.bytes())));
        }
        Ok(self.mode != OutputMode::FilesWithMatches)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.keep_rows && self.mode == OutputMode::Content {
            self.rows
                .push(Row::Context(c.line_number().unwrap_or(0), line_text(c.bytes())));
        }
        Ok(true)
    }
}

/// Strips a leading BOM and turns CRLF/CR into LF at the byte level (same line numbering as `tag::normalize`).
/// `has_cr`: whether `b` contains a CR (known from the binary scan, so the bytes are not scanned twice).
fn normalize_bytes(b: &[u8], has_cr: bool) -> Cow<'_, [u8]> {
    let b = b.strip_prefix(tag::BOM.as_bytes()).unwrap_or(b);
    if !has_cr {
        return Cow::Borrowed(b);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\r' {
            out.push(b'\n');
            if b.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Per-thread search state.
struct Worker {
    matcher: RegexMatcher,
    searcher: Searcher,
    mode: OutputMode,
    buf: Vec<u8>,
}

impl Worker {
    /// The walk's worker: it only asks whether a file matches, so it stops at the first match and keeps no context
    /// (the detail pass recounts and collects rows for the files actually shown).
    fn probe(matcher: &RegexMatcher) -> Worker {
        Worker {
            matcher: matcher.clone(),
            searcher: SearcherBuilder::new().line_number(false).max_matches(Some(1)).build(),
            mode: OutputMode::FilesWithMatches,
            buf: Vec::new(),
        }
    }

    /// The detail pass's worker: line numbers, context and the per-file cap of the requested mode.
    fn new(matcher: &RegexMatcher, a: &GrepArgs, per_file: Option<u64>) -> Worker {
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(a.context as usize)
            .after_context(a.context as usize)
            .max_matches(per_file)
            .build();
        Worker {
            matcher: matcher.clone(),
            searcher,
            mode: a.output_mode,
            buf: Vec::new(),
        }
    }

    /// Searches one file; None when it has no match, cannot be read, or is binary (counted in `binary`). `detail`
    /// keeps the rows and the normalized text (for files that will be shown).
    fn search(&mut self, path: &Path, binary: &AtomicU64, detail: bool) -> Option<FileHits> {
        self.buf.clear();
        // O_NONBLOCK: a walked entry swapped for a FIFO since the walk saw it fails its read instead of hanging.
        // (The walk already yields regular files only; no extra fstat per file on this hot path.)
        let f = {
            use std::os::unix::fs::OpenOptionsExt;
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
                .ok()?
        };
        // Most binary files show a NUL in their first block: look there before reading the rest, as ripgrep does,
        // so a large binary costs one block instead of its whole size.
        let mut head = f.take(BINARY_PROBE as u64);
        head.read_to_end(&mut self.buf).ok()?;
        if memchr::memchr(0, &self.buf).is_some() {
            binary.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        head.into_inner().read_to_end(&mut self.buf).ok()?;
        // One pass for both questions: is there a NUL (binary) and is there a CR (needs normalising)?
        let (is_binary, has_cr) = match memchr::memchr2(0, b'\r', &self.buf) {
            None => (false, false),
            Some(i) if self.buf[i] == 0 => (true, false),
            Some(i) => (memchr::memchr(0, &self.buf[i..]).is_some(), true),
        };
        if is_binary {
            binary.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let bytes = normalize_bytes(&self.buf, has_cr);
        let mut rows = Vec::new();
        let mut sink = Collect {
            mode: self.mode,
            keep_rows: detail,
            rows: &mut rows,
            count: 0,
        };
        self.searcher.search_slice(&self.matcher, &bytes, &mut sink).ok()?;
        let count = sink.count;
        if count == 0 {
            return None;
        }
        Some(FileHits {
            path: path.to_path_buf(),
            rows,
            count,
            norm: detail.then(|| tag::normalize(&self.buf)),
        })
    }
}

fn build_matcher(a: &GrepArgs) -> Result<RegexMatcher, HostError> {
    RegexMatcherBuilder::new()
        .case_insensitive(a.ignore_case)
        .fixed_strings(a.literal)
        .line_terminator(Some(b'\n'))
        .build(&a.pattern)
        .map_err(|e| {
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
    let mut hits: Vec<PathBuf> = Vec::new();
    if meta.is_file() {
        let name_ok = match &a.glob {
            None => true,
            Some(g) => {
                let m = glob::compile(g)?;
                target.canonical.file_name().is_some_and(|n| m.is_match(n))
            }
        };
        if name_ok {
            hits.extend(
                Worker::probe(&matcher)
                    .search(&target.canonical, &binary, false)
                    .map(|h| h.path),
            );
        }
    } else if meta.is_dir() {
        let mut w = glob::walker(&target.canonical);
        if let Some(g) = &a.glob {
            let ov = OverrideBuilder::new(&target.canonical)
                .add(g)
                .and_then(|b| b.build())
                .map_err(|e| HostError::invalid(format!("invalid glob '{g}': {e}. Fix the glob and call again.")))?;
            w.overrides(ov);
        }
        let found = Mutex::new(Vec::new());
        let timed_out = AtomicBool::new(false);
        w.build_parallel().run(|| {
            let mut worker = Worker::probe(&matcher);
            let found = &found;
            let binary = &binary;
            let timed_out = &timed_out;
            Box::new(move |entry| {
                if deadline.passed() {
                    timed_out.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    if let Some(h) = worker.search(entry.path(), binary, false) {
                        found.lock().unwrap_or_else(|p| p.into_inner()).push(h.path);
                    }
                }
                WalkState::Continue
            })
        });
        if timed_out.into_inner() {
            return Err(deadline.error("Grep"));
        }
        hits = found.into_inner().unwrap_or_else(|p| p.into_inner());
    } else {
        return Err(HostError::invalid(format!(
            "{} is neither a file nor a directory; Grep searches regular files and directory trees.",
            target.shown
        )));
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
    let mut detail = Worker::new(&matcher, a, per_file);
    Ok(render(target, a, limit, hits, &mut detail, binary.into_inner(), store))
}

/// Builds the result and the model-facing text from the matching files (shown path, canonical path; sorted), and
/// records what was shown. Each shown file is searched again in detail so its rows and tag come from one read; a
/// file that no longer matches by then is left out.
fn render(
    target: &Resolved,
    a: &GrepArgs,
    limit: u64,
    hits: Vec<(String, PathBuf)>,
    detail: &mut Worker,
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
        text: String::new(),
    };
    let mut blocks: Vec<String> = Vec::new();
    let mut shown_matches = 0u64;
    let mut used = 0usize;
    let mut budget_hit = false;
    let unused = AtomicU64::new(0);
    for (shown, path) in hits {
        if a.output_mode != OutputMode::Content && out.files.len() as u64 == limit {
            out.truncated = true;
            break;
        }
        if a.output_mode == OutputMode::Content && shown_matches == limit {
            out.truncated = true;
            break;
        }
        let Some(h) = detail.search(&path, &unused, true) else {
            continue;
        };
        let Some(norm) = h.norm else { continue };
        let header = tag::header(&shown, &norm.tag);
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
                    let (n, text, is_match) = match row {
                        Row::Match(n, t) => (*n, t, true),
                        Row::Context(n, t) => (*n, t, false),
                    };
                    if is_match && shown_matches == limit {
                        out.truncated = true;
                        break;
                    }
                    if !is_match && shown_matches == limit && last_match.is_some_and(|m| n > m + a.context) {
                        break;
                    }
                    let (clipped, was_clipped) = tag::clip_line(text, MAX_LINE_CHARS);
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
                        tag::row(&mut block, n as usize, &clipped);
                        out.matches.push(GrepMatch {
                            path: shown.clone(),
                            line: n,
                            text: clipped.into_owned(),
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
        store.record(&h.path, &norm, Seen::Lines(seen));
        out.tags.insert(shown.clone(), norm.tag.clone());
        out.files.push(shown);
        if budget_hit {
            break;
        }
    }
    let mut text = if out.files.is_empty() {
        format!("No matches for '{}' in '{}'.", a.pattern, target.shown)
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
    if binary_skipped > 0 {
        text.push_str(&format!("\n[{binary_skipped} binary file(s) skipped.]"));
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
        let mut late_nul = b"needle\n".repeat(BINARY_PROBE / 7 + 1);
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
}
