//! The start-up sweep of session scratch directories (docs/spec/host-tools.md "Paths"): a scratch directory
//! `<agentDir>/pi-codex-toolkit/scratch/<sessionId>/` goes when its session no longer exists or when nothing in it
//! changed for 7 days. Which sessions exist is the caller's knowledge (Pi's session list), passed in.

use super::error::HostError;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Scratch directories untouched this long are swept even if their session still exists.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The folder holding every session's scratch directory.
pub fn scratch_parent(agent_dir: &Path) -> PathBuf {
    agent_dir.join("pi-codex-toolkit").join("scratch")
}

/// The latest modification time of `dir` or anything under it (symlinks not followed).
fn newest_mtime(dir: &Path) -> Option<SystemTime> {
    let mut newest = fs::symlink_metadata(dir).ok()?.modified().ok()?;
    for e in walkdir::WalkDir::new(dir).follow_links(false).into_iter().flatten() {
        if let Some(t) = e.metadata().ok().and_then(|m| m.modified().ok()) {
            newest = newest.max(t);
        }
    }
    Some(newest)
}

/// Removes the scratch directories of sessions not in `live`, and those untouched for `MAX_AGE` at `now`. Entries
/// that are not directories (a stray file, a symlink) are removed themselves, never followed. Returns the removed
/// names, sorted. A missing scratch folder is nothing to sweep.
pub fn sweep(agent_dir: &Path, live: &[String], now: SystemTime) -> Result<Vec<String>, HostError> {
    let parent = scratch_parent(agent_dir);
    let entries = match fs::read_dir(&parent) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HostError::io(&parent.display().to_string(), &e)),
    };
    let live: HashSet<&str> = live.iter().map(String::as_str).collect();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        // A symlink or stray file is aged by itself: nothing behind a link is ever walked.
        let newest = if meta.is_dir() {
            newest_mtime(&path)
        } else {
            meta.modified().ok()
        };
        let stale = !live.contains(name.as_str())
            || newest.is_none_or(|t| now.duration_since(t).is_ok_and(|age| age > MAX_AGE));
        if !stale {
            continue;
        }
        let gone = if meta.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        if gone.is_ok() {
            removed.push(name);
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    fn age(path: &Path, by: Duration) {
        let t = SystemTime::now() - by;
        for e in walkdir::WalkDir::new(path).contents_first(true) {
            let e = e.unwrap();
            fs::File::open(e.path()).unwrap().set_modified(t).unwrap();
        }
    }

    #[test]
    fn sweeps_dead_sessions_and_week_old_directories_only() {
        let t = TempDir::new().unwrap();
        let parent = scratch_parent(t.path());
        for id in ["live", "dead", "old", "recent-file"] {
            fs::create_dir_all(parent.join(id)).unwrap();
            fs::write(parent.join(id).join("notes.md"), "x").unwrap();
        }
        age(&parent.join("old"), MAX_AGE + Duration::from_secs(60));
        // An old directory with one recently changed file is still in use.
        age(&parent.join("recent-file"), MAX_AGE + Duration::from_secs(60));
        fs::File::open(parent.join("recent-file/notes.md"))
            .unwrap()
            .set_modified(SystemTime::now())
            .unwrap();
        // Just under the bound stays.
        fs::create_dir_all(parent.join("edge")).unwrap();
        age(&parent.join("edge"), MAX_AGE - Duration::from_secs(60));
        // A symlink to somewhere else is removed as a link; its target survives.
        let outside = t.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "k").unwrap();
        std::os::unix::fs::symlink(&outside, parent.join("link")).unwrap();
        let live: Vec<String> = ["live", "old", "recent-file", "edge", "link"]
            .map(String::from)
            .to_vec();
        let removed = sweep(t.path(), &live, SystemTime::now()).unwrap();
        assert_eq!(removed, vec!["dead", "old"]);
        assert!(parent.join("live/notes.md").exists() && parent.join("recent-file").exists());
        assert!(parent.join("edge").exists() && outside.join("keep.txt").exists());
        let removed = sweep(t.path(), &["live".to_string()], SystemTime::now()).unwrap();
        assert_eq!(removed, vec!["edge", "link", "recent-file"]);
        assert!(outside.join("keep.txt").exists());
    }

    #[test]
    fn a_missing_scratch_folder_is_nothing_to_sweep() {
        let t = TempDir::new().unwrap();
        assert!(sweep(t.path(), &[], SystemTime::now()).unwrap().is_empty());
    }
}
