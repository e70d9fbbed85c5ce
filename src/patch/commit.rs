//! Staging and per-path commit of a preflighted plan, and the exact report when a filesystem step fails
//! (docs/patch.md, "Commit" and "Crash guarantee and recovery").
//!
//! Staging writes each Add's content to a temp file in the deepest folder that already exists, then the undo
//! journal of every in-place rewrite; nothing a user sees changes before both succeed. The commit then walks the
//! operations in patch order, every call relative to folder handles beneath the workspace root: Add = create the
//! missing folders, then rename without replacing; Update = re-check the file's stamp, then rewrite it in place
//! (same inode); Move = re-check, rename without replacing, then rewrite in place; Delete = re-check, unlink.
//! A multi-file patch is not a transaction: after a failure the failing operation's paths are re-checked (identity
//! and content) to tell what is committed and what is unknown; folders this patch created and that stayed empty
//! are removed again; nothing else is retried or rolled back.
//!
//! One module over 600 lines because staging, commit and the failure report share the step log: the report is exact
//! only when it reads the very steps the commit took.

use super::beneath::{self, split, Root, Stamp};
use super::error::{Outcome, PatchCode, PatchError};
use super::journal::{self, Entry};
use super::paths::shown;
use super::preflight::{Plan, Rewrite, Step};
use crate::errno::code as errno_name;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Test hook: make the Nth staging write or the Nth commit step fail with an errno (optionally after doing it,
/// to simulate an outcome the executor cannot know), or the removal of the Nth temp file (`cleanup`). Production calls use [`Faults::NONE`] unless the
/// `PCT_TEST_PATCH_FAULT` environment variable is set in a build with test seams (see [`Faults::from_env`], src/seams.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    pub stage_at: Option<usize>,
    pub commit_at: Option<usize>,
    pub cleanup_at: Option<usize>,
    /// Crash test: the Nth commit step, when it is an in-place rewrite, writes half of the new content and then
    /// aborts the process (`crash:<N>`), leaving the half-written file and its journal as a real crash would.
    pub crash_at: Option<usize>,
    pub errno: i32,
    pub after: bool,
    /// Sleep this long between preflight and staging (to prove serialization in end-to-end tests).
    pub delay_ms: u64,
}

impl Faults {
    pub const NONE: Faults = Faults {
        stage_at: None,
        commit_at: None,
        cleanup_at: None,
        crash_at: None,
        errno: 0,
        after: false,
        delay_ms: 0,
    };

    /// Reads `PCT_TEST_PATCH_FAULT=commit:<N>:<ERRNO>[:after]`, `stage:<N>:<ERRNO>` `cleanup:<N>:<ERRNO>` or `crash:<N>` (for tests that drive the
    /// addon or the real Pi: running as root, permissions cannot make a rename fail). Unset = no faults.
    /// `PCT_TEST_PATCH_DELAY_MS=<ms>` adds a pause between preflight and staging.
    pub fn from_env() -> Faults {
        let mut f = match crate::seams::var("PCT_TEST_PATCH_FAULT") {
            Some(spec) => Faults::parse(&spec),
            None => Faults::NONE,
        };
        if let Some(ms) = crate::seams::var("PCT_TEST_PATCH_DELAY_MS").and_then(|s| s.parse().ok()) {
            f.delay_ms = ms;
        }
        f
    }

    /// Parses `commit:<N>:<ERRNO>[:after]` / `stage:<N>:<ERRNO>[:after]`; anything else is no fault.
    pub fn parse(spec: &str) -> Faults {
        let parts: Vec<&str> = spec.split(':').collect();
        if let ["crash", n] = parts[..] {
            return match n.parse::<usize>() {
                Ok(n) => Faults {
                    crash_at: Some(n),
                    ..Faults::NONE
                },
                Err(_) => Faults::NONE,
            };
        }
        let (Some(kind), Some(n), Some(errno)) = (
            parts.first(),
            parts.get(1).and_then(|s| s.parse::<usize>().ok()),
            parts.get(2).and_then(|s| s.parse::<i32>().ok()),
        ) else {
            return Faults::NONE;
        };
        let after = parts.get(3) == Some(&"after");
        match *kind {
            "commit" => Faults {
                commit_at: Some(n),
                errno,
                after,
                ..Faults::NONE
            },
            "stage" => Faults {
                stage_at: Some(n),
                errno,
                after,
                ..Faults::NONE
            },
            "cleanup" => Faults {
                cleanup_at: Some(n),
                errno,
                ..Faults::NONE
            },
            _ => Faults::NONE,
        }
    }
}

/// Counts filesystem steps and injects the configured fault.
struct Steps {
    faults: Faults,
    staged: usize,
    committed: usize,
    cleaned: usize,
}

impl Steps {
    fn stage<T>(&mut self, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        self.staged += 1;
        Self::maybe(self.faults.stage_at == Some(self.staged), self.faults, f)
    }
    fn commit<T>(&mut self, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        self.committed += 1;
        Self::maybe(self.faults.commit_at == Some(self.committed), self.faults, f)
    }
    fn cleanup(&mut self, f: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        self.cleaned += 1;
        if self.faults.cleanup_at == Some(self.cleaned) {
            return Err(io::Error::from_raw_os_error(self.faults.errno));
        }
        f()
    }
    fn maybe<T>(fail: bool, faults: Faults, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        if !fail {
            return f();
        }
        if faults.after {
            f()?;
        }
        Err(io::Error::from_raw_os_error(faults.errno))
    }
}

/// Temp file names: one random prefix per patch, then a counter (a fresh prefix after a collision).
struct TempNames {
    prefix: String,
    n: u64,
}

impl TempNames {
    fn new() -> Self {
        TempNames {
            prefix: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            n: 0,
        }
    }
    fn next(&mut self) -> String {
        self.n += 1;
        format!("{}{}-{}.tmp", journal::PREFIX, self.prefix, self.n)
    }
    fn collided(&mut self) {
        *self = TempNames::new();
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Writes one new file's content to a fresh temp file in `dir`; returns its relative path and stamp.
fn stage_one(root: &mut Root, dir: &str, content: &[u8], names: &mut TempNames) -> io::Result<(String, Stamp)> {
    loop {
        let name = names.next();
        let mut file = match root.create_file(dir, &name, 0o666) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                names.collided();
                continue;
            }
            Err(e) => return Err(e),
        };
        let rel = join(dir, &name);
        match file.write_all(content).and_then(|()| beneath::fstat(&file)) {
            Ok(st) => return Ok((rel, st)),
            Err(e) => {
                let _ = root.unlink(&rel);
                return Err(e);
            }
        }
    }
}

/// Staged temp files (relative path and stamp) by step index (None for everything but Add).
struct Staged(Vec<Option<(String, Stamp)>>);

impl Staged {
    /// Removes every temp file still present; returns the ones that could not be removed.
    fn discard(&self, root: &mut Root, steps: &mut Steps) -> Vec<String> {
        let mut left = Vec::new();
        for (p, _) in self.0.iter().flatten() {
            match steps.cleanup(|| root.unlink(p)) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(_) => left.push(p.clone()),
            }
        }
        left
    }
}

fn staging_failed(e: &io::Error, what: &str) -> PatchError {
    PatchError::no_change(
        PatchCode::StagingFailed,
        format!(
            "staging failed ({}) for '{}'; nothing was changed. Check free space and permissions, then retry",
            errno_name(e),
            shown(what)
        ),
    )
}

/// Writes every Add's content to a temp file. A failure removes what was staged and changes nothing else.
fn stage(root: &mut Root, plan: &Plan, steps: &mut Steps, names: &mut TempNames) -> Result<Staged, PatchError> {
    let mut staged = Staged(Vec::with_capacity(plan.steps.len()));
    for step in &plan.steps {
        let Step::Add { path, content } = step else {
            staged.0.push(None);
            continue;
        };
        let dir = root.deepest_existing(&path.rel);
        match steps.stage(|| stage_one(root, &dir, content, names)) {
            Ok(tmp) => staged.0.push(Some(tmp)),
            Err(e) => {
                staged.discard(root, steps);
                return Err(staging_failed(&e, &path.rel));
            }
        }
    }
    Ok(staged)
}

/// Why a commit step did not happen.
enum Failed {
    Io(io::Error),
    /// Failed before touching anything (a folder or the file could not be opened beneath the root).
    Before(io::Error),
    /// The source is no longer what preflight read (another writer): left untouched. `moved`: found only after
    /// this Move's rename (so the paths must be re-checked).
    Changed {
        moved: bool,
    },
}

impl From<io::Error> for Failed {
    fn from(e: io::Error) -> Self {
        Failed::Io(e)
    }
}

/// The stamp check right before a step touches an existing source: same inode, size and times as in preflight.
fn expect_unchanged(root: &mut Root, rel: &str, stamp: &Stamp) -> Result<(), Failed> {
    match root.stat(rel).map_err(Failed::Before)? {
        Some(now) if now.unchanged(stamp) => Ok(()),
        _ => Err(Failed::Changed { moved: false }),
    }
}

/// Rewrites a file in place (`pwrite` of the new content, then `ftruncate` when it shrank), so its inode, owner,
/// hard links, extended attributes and ACLs stay. `same` checks the opened file is the one preflight read. A
/// failed write puts the old content back at once (the journal covers a crash).
fn rewrite_in_place(
    root: &mut Root,
    rel: &str,
    r: &Rewrite,
    steps: &mut Steps,
    same: impl Fn(&Stamp) -> bool,
) -> Result<(), Failed> {
    let file = root.open_file(rel, true).map_err(Failed::Before)?;
    if !same(&beneath::fstat(&file).map_err(Failed::Before)?) {
        return Err(Failed::Changed { moved: false });
    }
    let write = |new: &[u8], old_len: usize| -> io::Result<()> {
        file.write_all_at(new, 0)?;
        if new.len() < old_len {
            file.set_len(new.len() as u64)?;
        }
        Ok(())
    };
    if steps.faults.crash_at == Some(steps.committed + 1) {
        let _ = file.write_all_at(&r.new[..r.new.len() / 2], 0);
        std::process::abort();
    }
    steps.commit(|| write(&r.new, r.old.len())).map_err(|e| {
        let _ = write(&r.old, r.new.len().max(r.old.len()));
        Failed::Io(e)
    })
}

/// Opens the target's folder beneath the root, creating what is missing (a commit step); a folder that exists but
/// cannot be opened (a symlink swapped in) fails before anything is touched.
fn ensure_dir(root: &mut Root, dir: &str, steps: &mut Steps, created: &mut Vec<String>) -> Result<(), Failed> {
    match root.dir(dir) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(steps.commit(|| root.mkdirs(dir, created))?),
        Err(e) => Err(Failed::Before(e)),
    }
}

fn commit_one(
    root: &mut Root,
    step: &Step,
    tmp: Option<&str>,
    steps: &mut Steps,
    created: &mut Vec<String>,
) -> Result<(), Failed> {
    match step {
        Step::Add { path, .. } => {
            let tmp = tmp.expect("staged");
            root.dir(split(tmp).0).map_err(Failed::Before)?;
            ensure_dir(root, split(&path.rel).0, steps, created)?;
            Ok(steps.commit(|| root.rename_noreplace(tmp, &path.rel))?)
        }
        Step::Update { path, rewrite, stamp } => {
            rewrite_in_place(root, &path.rel, rewrite, steps, |now| now.unchanged(stamp))
        }
        Step::Move {
            from,
            to,
            rewrite,
            stamp,
        } => {
            expect_unchanged(root, &from.rel, stamp)?;
            ensure_dir(root, split(&to.rel).0, steps, created)?;
            steps.commit(|| root.rename_noreplace(&from.rel, &to.rel))?;
            match rewrite {
                // After the rename the ctime moved on; the inode, size and mtime must still be the source's. Any
                // failure from here on follows a rename that happened: never "unchanged" without a re-check.
                Some(r) => rewrite_in_place(root, &to.rel, r, steps, |now| {
                    (now.dev, now.ino, now.size, now.mtime) == (stamp.dev, stamp.ino, stamp.size, stamp.mtime)
                })
                .map_err(|f| match f {
                    Failed::Before(e) => Failed::Io(e),
                    Failed::Changed { .. } => Failed::Changed { moved: true },
                    io => io,
                }),
                None => Ok(()),
            }
        }
        Step::Delete { path, stamp } => {
            expect_unchanged(root, &path.rel, stamp)?;
            Ok(steps.commit(|| root.unlink(&path.rel))?)
        }
    }
}

/// After a failed step: was the operation committed, untouched, or left in a state to re-read?
enum After {
    Committed,
    Unchanged,
    Reread(Vec<String>),
}

/// What is at a path now: nothing, a file with this stamp, or something we could not inspect.
enum Seen {
    Absent,
    At(Stamp),
    Unknown,
}

fn look(root: &mut Root, rel: &str) -> Seen {
    match root.stat(rel) {
        Ok(Some(st)) => Seen::At(st),
        Ok(None) => Seen::Absent,
        Err(_) => Seen::Unknown,
    }
}

/// Whether the file at `rel` (same inode as `stamp`) holds exactly `bytes`.
fn holds(root: &mut Root, rel: &str, stamp: &Stamp, bytes: &[u8]) -> bool {
    let Ok(mut f) = root.open_file(rel, false) else {
        return false;
    };
    if !matches!(beneath::fstat(&f), Ok(st) if (st.dev, st.ino) == (stamp.dev, stamp.ino)) {
        return false;
    }
    let mut cur = Vec::new();
    (&mut f).take(bytes.len() as u64 + 1).read_to_end(&mut cur).is_ok() && cur == bytes
}

fn same_inode(a: &Stamp, b: &Stamp) -> bool {
    (a.dev, a.ino) == (b.dev, b.ino)
}

/// Re-checks the failing operation's paths: by identity (the staged temp file's inode at an Add target means the
/// rename happened) and, for rewrites, by content (new content = committed, old content = untouched).
fn recheck(root: &mut Root, step: &Step, staged: Option<&Stamp>) -> After {
    root.forget();
    match step {
        Step::Add { path, .. } => match look(root, &path.rel) {
            Seen::At(st) if staged.is_some_and(|s| same_inode(s, &st)) => After::Committed,
            Seen::Absent => After::Unchanged,
            _ => After::Reread(vec![path.rel.clone()]),
        },
        Step::Update { path, rewrite, stamp } => {
            if holds(root, &path.rel, stamp, &rewrite.new) {
                After::Committed
            } else if holds(root, &path.rel, stamp, &rewrite.old) {
                After::Unchanged
            } else {
                After::Reread(vec![path.rel.clone()])
            }
        }
        Step::Delete { path, stamp } => match look(root, &path.rel) {
            Seen::Absent => After::Committed,
            Seen::At(st) if same_inode(&st, stamp) => After::Unchanged,
            _ => After::Reread(vec![path.rel.clone()]),
        },
        Step::Move {
            from,
            to,
            rewrite,
            stamp,
        } => {
            let (src, dst) = (look(root, &from.rel), look(root, &to.rel));
            let new = rewrite.as_ref().map(|r| r.new.as_slice());
            match (src, dst) {
                (Seen::Absent, Seen::At(d))
                    if same_inode(&d, stamp) && new.is_none_or(|n| holds(root, &to.rel, stamp, n)) =>
                {
                    After::Committed
                }
                (Seen::At(s), Seen::Absent) if same_inode(&s, stamp) => After::Unchanged,
                _ => After::Reread(vec![from.rel.clone(), to.rel.clone()]),
            }
        }
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Removes the folders this patch created (innermost first) that are empty again; returns those still there
/// that no committed operation needs (they could not be removed).
fn remove_created(root: &mut Root, created: &[String]) -> Vec<String> {
    root.forget();
    let mut left = Vec::new();
    for dir in created.iter().rev() {
        match root.rmdir(dir) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTEMPTY) | Some(libc::EEXIST) | Some(libc::ENOENT)
                ) => {}
            Err(_) => left.push(dir.clone()),
        }
    }
    left
}

#[cfg(test)]
thread_local! {
    /// Test hook run after staging, right before the first commit step (a concurrent writer, a symlink swap).
    pub static BEFORE_COMMIT: std::cell::RefCell<Option<Box<dyn Fn()>>> = const { std::cell::RefCell::new(None) };
}

/// Stages then commits the plan. `abort` is checked after staging, right before the first commit step.
/// `committed(i)` is told each step that took effect (the failing one too when re-checking shows it did), so a
/// review recording keeps exactly those (src/review/record.rs).
pub fn stage_and_commit(
    root: &mut Root,
    plan: &Plan,
    abort: &AtomicBool,
    faults: Faults,
    committed: &mut dyn FnMut(usize),
) -> Result<(), PatchError> {
    if faults.delay_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(faults.delay_ms));
    }
    let mut steps = Steps {
        faults,
        staged: 0,
        committed: 0,
        cleaned: 0,
    };
    let mut names = TempNames::new();
    let staged = stage(root, plan, &mut steps, &mut names)?;
    let entries: Vec<Entry<'_>> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Update { path, rewrite, .. }
            | Step::Move {
                to: path,
                rewrite: Some(rewrite),
                ..
            } => Some(Entry {
                rel: &path.rel,
                old: &rewrite.old,
                new: &rewrite.new,
            }),
            _ => None,
        })
        .collect();
    let temps: Vec<&str> = staged.0.iter().flatten().map(|(p, _)| p.as_str()).collect();
    let id = names.prefix.clone();
    let journal = match steps.stage(|| journal::write(root, &id, &temps, &entries)) {
        Ok(j) => j,
        Err(e) => {
            staged.discard(root, &mut steps);
            // The journal covers every rewrite and staged file; name the first file it was written for.
            let first = entries.first().map(|e| e.rel).or_else(|| {
                plan.steps.iter().find_map(|s| match s {
                    Step::Add { path, .. } => Some(path.rel.as_str()),
                    _ => None,
                })
            });
            return Err(staging_failed(&e, first.unwrap_or("")));
        }
    };
    if abort.load(Ordering::SeqCst) {
        staged.discard(root, &mut steps);
        if let Some(j) = journal {
            j.finish(root);
        }
        return Err(PatchError::no_change(PatchCode::Aborted, "aborted"));
    }
    #[cfg(test)]
    BEFORE_COMMIT.with(|h| {
        if let Some(h) = h.borrow().as_ref() {
            h()
        }
    });
    // Folders are resolved again from the root for the commit: a handle opened during preflight would still
    // point at a folder that was moved away since.
    root.forget();
    let mut done: Vec<String> = Vec::new();
    let mut created: Vec<String> = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let tmp = staged.0[i].as_ref();
        let Err(failure) = commit_one(root, step, tmp.map(|(p, _)| p.as_str()), &mut steps, &mut created) else {
            done.push(step.describe());
            committed(i);
            continue;
        };
        let outcome_of_step = match failure {
            Failed::Changed { moved: false } | Failed::Before(_) => After::Unchanged,
            Failed::Io(_) | Failed::Changed { moved: true } => recheck(root, step, tmp.map(|(_, st)| st)),
        };
        let mut left = staged.discard(root, &mut steps);
        left.extend(remove_created(root, &created));
        if let Some(j) = journal {
            left.extend(j.finish(root));
        }
        let mut unknown = Vec::new();
        match outcome_of_step {
            After::Committed => {
                done.push(step.describe());
                committed(i);
            }
            After::Unchanged => {}
            After::Reread(paths) => unknown = paths,
        }
        return Err(report(step, failure, &done, &unknown, &left));
    }
    if let Some(j) = journal {
        j.finish(root);
    }
    Ok(())
}

/// The exact failure text: what is committed, what must be re-read, and what was left behind.
fn report(step: &Step, failure: Failed, done: &[String], unknown: &[String], left: &[String]) -> PatchError {
    let outcome = match (done.is_empty() && left.is_empty(), unknown.is_empty()) {
        (true, true) => Outcome::NoChange,
        (false, true) => Outcome::Partial,
        (true, false) => Outcome::Unknown,
        (false, false) => Outcome::PartialUnknown,
    };
    let failed_at = match step {
        Step::Move { from, to, .. } => format!("{} -> {}", from.rel, to.rel),
        Step::Add { path, .. } | Step::Update { path, .. } | Step::Delete { path, .. } => path.rel.clone(),
    };
    let source = match step {
        Step::Move { from, .. } => &from.rel,
        Step::Add { path, .. } | Step::Update { path, .. } | Step::Delete { path, .. } => &path.rel,
    };
    let (code, what) = match &failure {
        Failed::Io(e) | Failed::Before(e) => (
            PatchCode::CommitFailed,
            format!("filesystem commit failed ({})", errno_name(e)),
        ),
        Failed::Changed { .. } => (
            PatchCode::SourceChanged,
            format!(
                "'{}' was changed by another program after this patch read it and was left as it is",
                shown(source)
            ),
        ),
    };
    let next = match failure {
        Failed::Io(_) | Failed::Before(_) => "",
        Failed::Changed { .. } => ". Re-read it and send the rest of the patch again",
    };
    let left_text = if left.is_empty() {
        String::new()
    } else {
        format!(
            "; left behind (delete them): {}",
            left.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ")
        )
    };
    let reason = if outcome == Outcome::NoChange {
        match failure {
            Failed::Io(_) | Failed::Before(_) => format!("{what} at '{}'; nothing was changed", shown(&failed_at)),
            Failed::Changed { .. } => format!("{what}; nothing was changed{next}"),
        }
    } else {
        format!(
            "committed: {}; reread: {}; {what}{left_text}{next}",
            list_or_none(done),
            list_or_none(unknown)
        )
    };
    PatchError { outcome, code, reason }
}
