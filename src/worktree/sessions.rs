//! The session files the toolkit writes for sessions that had no file of their own (docs/worktrees.md "How the
//! session moves"): `/pct worktree new` and `leave` in an in-memory session write a one-line Pi session header into
//! `<agentDir>/pi-codex-toolkit/sessions` and switch to it. Nothing else writes there, and Pi only appends to the
//! file it was switched to, so every file in that folder is one of these. They are removed:
//!
//! - with their worktree: `/pct worktree delete` removes the files whose header `cwd` lies in the deleted worktree
//!   (a delete refuses while a live session uses the worktree, so none of them is in use);
//! - at start-up: files not changed for [`MAX_AGE`] whose `cwd` is not in a worktree that still has its record
//!   (a session in a worktree stays resumable as long as the worktree exists), never the file of the session
//!   that sweeps.
//!
//! Only regular files named `*.jsonl` whose first line is a Pi session header are touched; links and anything
//! else are left alone (never followed).

use super::layout;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a session file must have been left unchanged before the start-up sweep removes it. Pi appends to a
/// session file at every message, so a file this old belongs to a session nobody has continued for a week.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The longest header line read (Pi's header is about 200 bytes).
const MAX_HEADER: u64 = 64 * 1024;

/// `<agentDir>/pi-codex-toolkit/sessions`: where src/pi/worktree.ts writes the files.
pub fn dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join(layout::DATA_DIR[0]).join("sessions")
}

/// One session file of the folder: its path, last change and the `cwd` its header names.
struct SessionFile {
    path: PathBuf,
    modified: SystemTime,
    cwd: PathBuf,
}

/// The session files in `dir` (regular `*.jsonl` files with a session header; anything else is skipped).
fn session_files(dir: &Path) -> Vec<SessionFile> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .filter_map(|e| {
            let path = e.path();
            // symlink_metadata: a link is never followed, and is not one of ours.
            let m = fs::symlink_metadata(&path).ok()?;
            if !m.file_type().is_file() {
                return None;
            }
            let cwd = header_cwd(&path)?;
            Some(SessionFile {
                modified: m.modified().ok()?,
                path,
                cwd,
            })
        })
        .collect()
}

/// The `cwd` of a Pi session header (`{"type":"session",...,"cwd":...}` on the first line).
fn header_cwd(path: &Path) -> Option<PathBuf> {
    let f = open_no_follow(path)?;
    let mut line = String::new();
    BufReader::new(f.take(MAX_HEADER)).read_line(&mut line).ok()?;
    let v: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    if v.get("type")?.as_str()? != "session" {
        return None;
    }
    Some(PathBuf::from(v.get("cwd")?.as_str()?))
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> Option<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> Option<fs::File> {
    fs::File::open(path).ok()
}

/// Removes the session files whose `cwd` lies in worktree `id` of project key `key`; returns how many.
pub fn remove_for_worktree(agent_dir: &Path, key: &str, id: &str) -> usize {
    session_files(&dir(agent_dir))
        .into_iter()
        .filter(|s| layout::locate(agent_dir, &s.cwd).is_some_and(|at| at.key == key && at.id == id))
        .filter(|s| fs::remove_file(&s.path).is_ok())
        .count()
}

/// The start-up sweep: removes the session files unchanged since `now - max_age` whose `cwd` is not in a
/// worktree that still has its record, except `keep` (the sweeping session's own file). Returns how many.
pub fn sweep(agent_dir: &Path, keep: Option<&Path>, max_age: Duration, now: SystemTime) -> usize {
    let keep = keep.map(|k| fs::canonicalize(k).unwrap_or_else(|_| k.to_path_buf()));
    session_files(&dir(agent_dir))
        .into_iter()
        .filter(|s| now.duration_since(s.modified).is_ok_and(|age| age >= max_age))
        .filter(|s| {
            let canonical = fs::canonicalize(&s.path).unwrap_or_else(|_| s.path.clone());
            keep.as_deref() != Some(canonical.as_path())
        })
        .filter(|s| layout::locate(agent_dir, &s.cwd).is_none_or(|at| at.record.is_none()))
        .filter(|s| fs::remove_file(&s.path).is_ok())
        .count()
}
