//! Grep, in process on ripgrep's libraries (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"):
//! Pi's grep parameters (`pattern, path, glob, ignoreCase, literal, context, limit`) plus
//! `outputMode: content | filesWithMatches | count` and `total` (count every match even past the limit). The tree is
//! walked in path order with Glob's rules (`.gitignore` honoured; an explicitly named path inside an ignored tree is
//! still searched because a walk root is never filtered) and searched on every core in that order, and the walk
//! stops as soon as the first `limit` matches in path order, and whether there are more, are known; a named file is
//! searched without walking its siblings. Files containing a NUL byte are binary and skipped. Each file is read and
//! searched as the tools see it (BOM stripped, CRLF/CR as LF), so line numbers and the file's tag agree with Read;
//! matched lines are recorded as seen in the snapshot store, context lines are not, and count/files-with-matches
//! modes record the tag with an empty seen set.
//!
//! The parts: `search` (one file: the normalising reader, the sink, probe and detail searches), `walk` (the walk in
//! path order and the ordered parallel search), `render` (the shown text and what is recorded); this file holds the
//! arguments, the result and the call that ties them together.

mod render;
mod search;
#[cfg(test)]
mod tests;
mod walk;

pub use search::MAX_LINE_BYTES;

use super::args;
use super::error::{Deadline, HostError, TOOL_FAILED};
use super::fileio;
use super::glob;
use super::grep_lines::LineMatcher;
use super::paths::{Resolved, Root, Roots};
use super::snapshot::Recorder;
use ignore::overrides::OverrideBuilder;
use render::Render;
use search::{rel_beneath, FileHits, Stop, Worker};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
    /// Count every match (content) or matching file (other modes) of the tree, also past `limit`: the walk then
    /// searches every file instead of stopping once the shown ones are known.
    pub total: bool,
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
            total: args::opt_bool("Grep", a, "total", false)?,
        })
    }
}

/// The counts of a `total` call: matched lines and the files they are in, over the whole tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Total {
    pub matches: u64,
    pub files: u64,
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
    /// Every match of the tree, when the call asked for `total`.
    pub total: Option<Total>,
    /// Every file of the tree was searched (false when the walk stopped once the shown matches were known: then
    /// `binary_skipped` and `unsearched` cover the files before that point).
    pub complete: bool,
    /// Files handed to the render in path order (the files before the point where the answer was known).
    pub searched: u64,
    /// Files skipped because they contain a NUL byte.
    pub binary_skipped: u64,
    /// Files that could not be searched to their end (shown path, why): their matches are unknown, never "none".
    pub unsearched: Vec<(String, String)>,
    pub text: String,
}

/// Files that could not be searched listed by name (the count covers the rest).
pub const MAX_FAILED_SHOWN: usize = 20;

fn build_matcher(a: &GrepArgs) -> Result<LineMatcher, HostError> {
    LineMatcher::new(&a.pattern, a.ignore_case, a.literal).map_err(|e| {
        HostError::invalid(format!(
            "invalid regex '{}': {e}. Fix the pattern, or pass literal: true to search for the text as is.",
            a.pattern
        ))
    })
}

/// One thread's search state: the probe, the detail search and the folder handles files are opened beneath.
struct Thread<'s> {
    probe: Worker<'s>,
    detail: Worker<'s>,
    dirs: fileio::Fs,
}

/// What every thread searches with, and the flags they share with the render.
struct Plan<'s> {
    matcher: &'s LineMatcher,
    args: &'s GrepArgs,
    per_file: Option<u64>,
    deadline: Deadline,
    walk_root: &'s Path,
    shown_root: &'s str,
    cancel: &'s AtomicBool,
    /// The render has shown all it will (a `total` call counting on): files are only probed.
    rendered: &'s AtomicBool,
    /// Detail results searched ahead and not yet taken by the render, and their cap: each holds a file's rows and
    /// up to `MAX_RETAINED_FILE` of its text, so what is held at once stays bounded by the number of threads.
    held: &'s AtomicUsize,
    max_held: usize,
}

impl<'s> Plan<'s> {
    fn thread(&self) -> Result<Thread<'s>, HostError> {
        let count_all = self.args.total && self.args.output_mode != OutputMode::FilesWithMatches;
        Ok(Thread {
            probe: Worker::probe(self.matcher, count_all, self.deadline, self.cancel),
            detail: Worker::detail(self.matcher, self.args, self.per_file, self.deadline, self.cancel),
            dirs: fileio::Fs::open_dir(self.walk_root, self.shown_root)?,
        })
    }

    /// A file as the walk searches it: probed, then, if it matches and the render may still show it, searched in
    /// detail (rows and tag from one read) unless enough detail results are already waiting; the render then does
    /// that search itself when it reaches the file.
    fn search(&self, t: &mut Thread, p: &Path) -> Result<FileHits, Stop> {
        let rel = rel_beneath(self.walk_root, p).ok_or(Stop::Nothing)?;
        let probe = t.probe.search(&mut t.dirs, rel, p, false)?;
        if self.rendered.load(Ordering::Relaxed) {
            return Ok(probe);
        }
        if self.held.fetch_add(1, Ordering::Relaxed) >= self.max_held {
            self.held.fetch_sub(1, Ordering::Relaxed);
            return Ok(probe);
        }
        let r = self.detail(t, p, rel, probe.probe_count);
        if r.is_err() {
            self.held.fetch_sub(1, Ordering::Relaxed);
        }
        r
    }

    fn detail(&self, t: &mut Thread, p: &Path, rel: &str, probe_count: u64) -> Result<FileHits, Stop> {
        let mut h = t.detail.search(&mut t.dirs, rel, p, true)?;
        h.probe_count = probe_count;
        Ok(h)
    }
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
    let (walk_timed_out, walk_changed) = (AtomicBool::new(false), AtomicBool::new(false));
    let parent = target.canonical.parent().unwrap_or(Path::new("/"));
    let (source, walk_root, threads): (Box<dyn Iterator<Item = PathBuf> + Send + '_>, &Path, usize) = if meta.is_file()
    {
        let name_ok = match &a.glob {
            None => true,
            Some(g) => {
                let m = glob::compile(g)?;
                target.canonical.file_name().is_some_and(|n| m.is_match(n))
            }
        };
        let one = name_ok.then(|| target.canonical.clone());
        (Box::new(one.into_iter()), parent, 1)
    } else if meta.is_dir() {
        let mut w = glob::walker(&target.canonical, roots.sensitive());
        w.sort_by_file_path(walk::path_order());
        if let Some(g) = &a.glob {
            let ov = OverrideBuilder::new(&target.canonical)
                .add(g)
                .and_then(|b| b.build())
                .map_err(|e| HostError::invalid(format!("invalid glob '{g}': {e}. Fix the glob and call again.")))?;
            w.overrides(ov);
        }
        let files = walk::Files {
            walk: w.build(),
            deadline,
            timed_out: &walk_timed_out,
            changed: &walk_changed,
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        (Box::new(files), target.canonical.as_path(), threads)
    } else {
        return Err(HostError::invalid(format!(
            "{} is neither a file nor a directory; Grep searches regular files and directory trees.",
            target.shown
        )));
    };
    let (cancel, rendered, held) = (AtomicBool::new(false), AtomicBool::new(false), AtomicUsize::new(0));
    let plan = Plan {
        matcher: &matcher,
        args: a,
        per_file,
        deadline,
        walk_root,
        shown_root: &target.shown,
        cancel: &cancel,
        rendered: &rendered,
        held: &held,
        max_held: 4 * threads,
    };
    let local = plan.thread()?;
    let make = || plan.thread().ok();
    let search = |t: &mut Thread, p: &Path| plan.search(t, p);
    let show = |p: &Path| {
        if p == target.canonical {
            target.shown.clone()
        } else {
            roots.show(target.root, p)
        }
    };
    let mut render = Render::new(target, a, limit);
    let mut timed_out = false;
    walk::run(source, threads, &cancel, local, &make, &search, |stream| {
        let mut failed_paths: Vec<(PathBuf, String)> = Vec::new();
        loop {
            let Some((path, r)) = stream.next() else {
                render.complete = true;
                break;
            };
            render.out.searched += 1;
            let h = match r {
                Ok(h) if h.tagged.is_some() => {
                    held.fetch_sub(1, Ordering::Relaxed);
                    Ok(h)
                }
                // Probed only (enough detail results were waiting): the detail search is done here, when needed.
                Ok(h) if !render.full => {
                    let rel = rel_beneath(walk_root, &path).unwrap_or_default();
                    plan.detail(stream.local(), &path, rel, h.probe_count)
                }
                other => other,
            };
            match h {
                Ok(h) => {
                    if render.add(show(&path), h, store) && !a.total {
                        break;
                    }
                    if render.full {
                        rendered.store(true, Ordering::Relaxed);
                    }
                }
                Err(Stop::Nothing) | Err(Stop::Cancelled) => {}
                Err(Stop::Binary) => render.out.binary_skipped += 1,
                Err(Stop::Deadline) => {
                    timed_out = true;
                    break;
                }
                Err(Stop::Failed(why)) => failed_paths.push((path, why)),
            }
        }
        render.out.unsearched = failed_paths.into_iter().map(|(p, why)| (show(&p), why)).collect();
    });
    if timed_out || (render.complete && walk_timed_out.load(Ordering::Relaxed)) {
        return Err(deadline.error("Grep"));
    }
    if render.complete && walk_changed.load(Ordering::Relaxed) {
        return Err(HostError::new(
            TOOL_FAILED,
            format!(
                "a folder under {} was replaced or removed while Grep listed it, so the list of files is not \
                 known; nothing is shown. Call Grep again once the tree is steady.",
                target.shown
            ),
        ));
    }
    Ok(render.finish())
}
