//! Staging and per-path commit of a preflighted plan, and the exact report when a filesystem step fails.
//!
//! Every new content is first written to a temp file beside its target (exclusive create, the source's mode bits),
//! in the deepest folder that already exists so nothing else is created before the commit. The commit then walks
//! the operations in patch order: rename (Add/Update), rename-then-unlink (Move), unlink (Delete), creating missing
//! parent folders. A multi-file patch is not a transaction: after a failure the failing operation's paths are
//! re-checked (by file identity) to tell what is committed and what is unknown; nothing is retried or rolled back.

use super::error::{Outcome, PatchError};
use super::paths::{shown, PatchPath};
use super::preflight::{FileId, Plan, Step};
use crate::errno::code as errno_name;
#[cfg(target_os = "linux")]
use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
#[cfg(target_os = "linux")]
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Test hook: make the Nth staging write or the Nth commit step fail with an errno (optionally after doing it,
/// to simulate an outcome the executor cannot know). Production calls use [`Faults::NONE`] unless the
/// `PCT_TEST_PATCH_FAULT` environment variable is set (see [`Faults::from_env`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    pub stage_at: Option<usize>,
    pub commit_at: Option<usize>,
    pub errno: i32,
    pub after: bool,
    /// Sleep this long between preflight and staging (to prove serialization in end-to-end tests).
    pub delay_ms: u64,
}

impl Faults {
    pub const NONE: Faults = Faults {
        stage_at: None,
        commit_at: None,
        errno: 0,
        after: false,
        delay_ms: 0,
    };

    /// Reads `PCT_TEST_PATCH_FAULT=commit:<N>:<ERRNO>[:after]` or `stage:<N>:<ERRNO>` (for tests that drive the
    /// addon or the real Pi: running as root, permissions cannot make a rename fail). Unset = no faults.
    /// `PCT_TEST_PATCH_DELAY_MS=<ms>` adds a pause between preflight and staging.
    pub fn from_env() -> Faults {
        let mut f = match std::env::var("PCT_TEST_PATCH_FAULT") {
            Ok(spec) => Faults::parse(&spec),
            Err(_) => Faults::NONE,
        };
        if let Some(ms) = std::env::var("PCT_TEST_PATCH_DELAY_MS")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            f.delay_ms = ms;
        }
        f
    }

    /// Parses `commit:<N>:<ERRNO>[:after]` / `stage:<N>:<ERRNO>[:after]`; anything else is no fault.
    pub fn parse(spec: &str) -> Faults {
        let parts: Vec<&str> = spec.split(':').collect();
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
            _ => Faults::NONE,
        }
    }
}

/// Counts filesystem steps and injects the configured fault.
struct Steps {
    faults: Faults,
    staged: usize,
    committed: usize,
}

impl Steps {
    fn stage<T>(&mut self, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        self.staged += 1;
        Self::maybe(self.faults.stage_at == Some(self.staged), self.faults, f)
    }
    fn commit(&mut self, f: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        self.committed += 1;
        Self::maybe(self.faults.commit_at == Some(self.committed), self.faults, f)
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

#[cfg(target_os = "linux")]
fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// rename(2) that refuses to replace an existing target (renameat2 RENAME_NOREPLACE; plain rename after an
/// existence check where the filesystem lacks it).
///
/// Called through syscall(2), not libc's `renameat2` wrapper: glibc has the wrapper only from 2.28 and musl 1.2.3
/// not at all, and a cdylib links a missing libc symbol silently, so the release builds for older glibc and musl
/// would fail to load (docs/release.md §The symbol trap).
#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (a, b) = (cstr(from)?, cstr(to)?);
    // SAFETY: both are valid NUL-terminated paths; AT_FDCWD with absolute paths; the kernel ABI of renameat2 is
    // (int, const char *, int, const char *, unsigned int).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => rename_checked(from, to),
        _ => Err(err),
    }
}

/// Other platforms (untested): check, then rename.
#[cfg(not(target_os = "linux"))]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    rename_checked(from, to)
}

fn rename_checked(from: &Path, to: &Path) -> io::Result<()> {
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from_raw_os_error(libc::EEXIST));
    }
    fs::rename(from, to)
}

/// The deepest existing folder on the way to `target` (the workspace always exists).
fn existing_parent(target: &Path) -> PathBuf {
    let mut dir = target.parent().map(Path::to_path_buf).unwrap_or_default();
    while fs::symlink_metadata(&dir).is_err() {
        match dir.parent() {
            Some(p) => dir = p.to_path_buf(),
            None => break,
        }
    }
    dir
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
        format!(".pct-patch-{}-{}.tmp", self.prefix, self.n)
    }
    fn collided(&mut self) {
        *self = TempNames::new();
    }
}

fn stage_one(dir: &Path, content: &[u8], mode: Option<u32>, names: &mut TempNames) -> io::Result<(PathBuf, FileId)> {
    loop {
        let tmp = dir.join(names.next());
        let mut file = match OpenOptions::new().write(true).create_new(true).mode(0o666).open(&tmp) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                names.collided();
                continue;
            }
            Err(e) => return Err(e),
        };
        let written = (|| {
            file.write_all(content)?;
            if let Some(mode) = mode {
                file.set_permissions(fs::Permissions::from_mode(mode & 0o7777))?;
            }
            let md = file.metadata()?;
            Ok((md.dev(), md.ino()))
        })();
        match written {
            Ok(id) => return Ok((tmp, id)),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        }
    }
}

/// Staged temp files (path and identity) by step index (None for Delete).
pub struct Staged(Vec<Option<(PathBuf, FileId)>>);

impl Staged {
    /// Removes every temp file still present (best effort).
    pub fn discard(&self) {
        for (p, _) in self.0.iter().flatten() {
            let _ = fs::remove_file(p);
        }
    }
}

fn target_of(step: &Step) -> Option<(&PatchPath, &[u8], Option<u32>)> {
    match step {
        Step::Add { path, content } => Some((path, content, None)),
        Step::Update {
            path, content, mode, ..
        } => Some((path, content, Some(*mode))),
        Step::Move { to, content, mode, .. } => Some((to, content, Some(*mode))),
        Step::Delete { .. } => None,
    }
}

/// Writes every new content to a temp file. A failure removes what was staged and changes nothing else.
fn stage(plan: &Plan, steps: &mut Steps) -> Result<Staged, PatchError> {
    let mut staged = Staged(Vec::with_capacity(plan.steps.len()));
    let mut names = TempNames::new();
    for step in &plan.steps {
        let Some((target, content, mode)) = target_of(step) else {
            staged.0.push(None);
            continue;
        };
        // An Update's folder exists (its source is there); Add and Move may need the deepest existing one.
        let dir = match step {
            Step::Update { path, .. } => path.abs.parent().map(Path::to_path_buf).unwrap_or_default(),
            _ => existing_parent(&target.abs),
        };
        match steps.stage(|| stage_one(&dir, content, mode, &mut names)) {
            Ok(tmp) => staged.0.push(Some(tmp)),
            Err(e) => {
                staged.discard();
                return Err(PatchError::no_change(
                    "staging-failed",
                    format!(
                        "staging failed ({}) for '{}'; nothing was changed. Check free space and permissions, then retry",
                        errno_name(&e),
                        shown(&target.rel)
                    ),
                ));
            }
        }
    }
    Ok(staged)
}

fn ensure_parent(target: &Path, steps: &mut Steps) -> io::Result<()> {
    match target.parent() {
        Some(parent) if fs::symlink_metadata(parent).is_err() => steps.commit(|| fs::create_dir_all(parent)),
        _ => Ok(()),
    }
}

fn commit_one(step: &Step, tmp: Option<&Path>, steps: &mut Steps) -> io::Result<()> {
    match step {
        Step::Add { path, .. } => {
            ensure_parent(&path.abs, steps)?;
            steps.commit(|| rename_noreplace(tmp.expect("staged"), &path.abs))
        }
        Step::Update { path, .. } => steps.commit(|| fs::rename(tmp.expect("staged"), &path.abs)),
        Step::Move { from, to, .. } => {
            ensure_parent(&to.abs, steps)?;
            steps.commit(|| rename_noreplace(tmp.expect("staged"), &to.abs))?;
            steps.commit(|| fs::remove_file(&from.abs))
        }
        Step::Delete { path, .. } => steps.commit(|| fs::remove_file(&path.abs)),
    }
}

/// What is at a path now: nothing, or a file with this identity (or something we could not inspect).
#[derive(PartialEq, Eq)]
enum Seen {
    Absent,
    Id(FileId),
    Unknown,
}

fn look(p: &Path) -> Seen {
    match fs::symlink_metadata(p) {
        Ok(md) => Seen::Id((md.dev(), md.ino())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Seen::Absent,
        Err(_) => Seen::Unknown,
    }
}

/// After a failed step: was the operation committed, untouched, or left in a state to re-read?
enum After {
    Committed,
    Unchanged,
    Reread(Vec<String>),
}

/// Re-checks the failing operation's paths by identity: the staged temp file's inode at the target means the
/// rename happened; the source's inode still in place means it did not.
fn recheck(step: &Step, staged: Option<FileId>) -> After {
    let new = staged.map(Seen::Id);
    match step {
        Step::Add { path, .. } => match look(&path.abs) {
            s if Some(&s) == new.as_ref() => After::Committed,
            Seen::Absent => After::Unchanged,
            _ => After::Reread(vec![path.rel.clone()]),
        },
        Step::Update { path, source, .. } => match look(&path.abs) {
            s if Some(&s) == new.as_ref() => After::Committed,
            s if s == Seen::Id(*source) => After::Unchanged,
            _ => After::Reread(vec![path.rel.clone()]),
        },
        Step::Delete { path, source } => match look(&path.abs) {
            Seen::Absent => After::Committed,
            s if s == Seen::Id(*source) => After::Unchanged,
            _ => After::Reread(vec![path.rel.clone()]),
        },
        Step::Move { from, to, source, .. } => {
            let (src, dst) = (look(&from.abs), look(&to.abs));
            if src == Seen::Absent && Some(&dst) == new.as_ref() {
                After::Committed
            } else if src == Seen::Id(*source) && dst == Seen::Absent {
                After::Unchanged
            } else {
                After::Reread(vec![from.rel.clone(), to.rel.clone()])
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

/// Stages then commits the plan. `abort` is checked after staging, right before the first commit step.
pub fn stage_and_commit(plan: &Plan, abort: &AtomicBool, faults: Faults) -> Result<(), PatchError> {
    if faults.delay_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(faults.delay_ms));
    }
    let mut steps = Steps {
        faults,
        staged: 0,
        committed: 0,
    };
    let staged = stage(plan, &mut steps)?;
    if abort.load(Ordering::SeqCst) {
        staged.discard();
        return Err(PatchError::no_change("aborted", "aborted"));
    }
    let mut done: Vec<String> = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let tmp = staged.0[i].as_ref();
        if let Err(e) = commit_one(step, tmp.map(|(p, _)| p.as_path()), &mut steps) {
            let outcome_of_step = recheck(step, tmp.map(|(_, id)| *id));
            staged.discard();
            let mut unknown = Vec::new();
            match outcome_of_step {
                After::Committed => done.push(step.describe()),
                After::Unchanged => {}
                After::Reread(paths) => unknown = paths,
            }
            let code = errno_name(&e);
            let outcome = match (done.is_empty(), unknown.is_empty()) {
                (true, true) => Outcome::NoChange,
                (false, true) => Outcome::Partial,
                (true, false) => Outcome::Unknown,
                (false, false) => Outcome::PartialUnknown,
            };
            let failed_at = match step {
                Step::Move { from, to, .. } => format!("{} -> {}", from.rel, to.rel),
                Step::Add { path, .. } | Step::Update { path, .. } | Step::Delete { path, .. } => path.rel.clone(),
            };
            let reason = if outcome == Outcome::NoChange {
                format!(
                    "filesystem commit failed ({code}) at '{}'; nothing was changed",
                    shown(&failed_at)
                )
            } else {
                format!(
                    "committed: {}; reread: {}; filesystem commit failed ({code})",
                    list_or_none(&done),
                    list_or_none(&unknown)
                )
            };
            return Err(PatchError {
                outcome,
                code: "commit-failed",
                reason,
            });
        }
        done.push(step.describe());
    }
    Ok(())
}
