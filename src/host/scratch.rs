//! Session scratch directories (docs/spec/host-tools.md "Paths", docs/host.md "Paths"):
//! `<agentDir>/pi-codex-toolkit/scratch/<sessionId>/`, where writes never ask for a card. Because of that, the
//! scratch root must be exactly what it claims: [`check_root`] and [`create_root`] accept only real directories owned
//! by this user, never a symlink planted there (one pointing at `$HOME` would make the whole home card-free). A
//! process that uses its scratch holds a shared lock on `.pct-live.lock` inside it for as long as it lives.
//!
//! The start-up sweep: a scratch directory goes when its session no longer exists or when nothing in it changed for
//! 7 days. Which sessions exist is the caller's knowledge (Pi's session list, which has no in-memory
//! `--no-session` sessions), so the sweep also asks the lock: a directory whose lock another live process holds is
//! never removed.

use super::error::{HostError, TOOL_FAILED};
use fs4::fs_std::FileExt;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The lock file inside a scratch directory: shared-locked by every live process using it, exclusively
/// try-locked by the sweep.
pub const LIVE_LOCK: &str = ".pct-live.lock";

/// The live locks this process holds, one per scratch directory it created or reused; released when the process
/// ends (the kernel drops them with the descriptors).
static HELD: Mutex<Vec<(PathBuf, fs::File)>> = Mutex::new(Vec::new());

fn refuse(dir: &Path, e: &std::io::Error) -> HostError {
    let why = match e.raw_os_error() {
        Some(libc::ELOOP) => "is a symbolic link".to_string(),
        Some(libc::ENOTDIR) => "is not a directory".to_string(),
        Some(libc::EPERM) => "belongs to another user".to_string(),
        _ => format!("cannot be used ({})", crate::errno::code(e)),
    };
    HostError::new(
        TOOL_FAILED,
        format!(
            "the scratch directory {} {why}; it is not used. Remove it (it is recreated as a private folder) and retry.",
            dir.display()
        ),
    )
}

/// Checks one managed folder without following it (src/agentfs.rs: a real directory owned by this user).
fn verify_dir(path: &Path) -> Result<(), HostError> {
    crate::agentfs::verify_dir(path)
        .map(|_| ())
        .map_err(|e| refuse(path, &e))
}

/// The folders this module manages on the way to `dir`: `pi-codex-toolkit`, `scratch` and the session folder
/// (the agent dir above them is the user's choice and may be a link).
fn managed(dir: &Path) -> Vec<&Path> {
    dir.ancestors().take(3).collect::<Vec<_>>().into_iter().rev().collect()
}

/// Verifies an existing scratch root and the folders it hangs from (see [`verify_dir`]); a missing one is fine (it
/// is created on first use). Called when the session binds its roots, before anything resolves into scratch.
pub fn check_root(dir: &Path) -> Result<(), HostError> {
    for p in managed(dir) {
        match fs::symlink_metadata(p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            _ => verify_dir(p)?,
        }
    }
    Ok(())
}

/// Creates the scratch root (each managed folder `mkdir`ed 0700, never through a link), verifies each folder,
/// narrows the session folder to 0700, and takes this process's live lock on it. Returns `dir`.
pub fn create_root(dir: &Path) -> Result<PathBuf, HostError> {
    let parts = managed(dir);
    if let Some(agent) = parts.first().and_then(|p| p.parent()) {
        fs::create_dir_all(agent).map_err(|e| HostError::io(&agent.display().to_string(), &e))?;
    }
    // A sweep in another process may remove the folder between our mkdir and our lock: retry once.
    for attempt in 0..2 {
        for p in &parts {
            match fs::DirBuilder::new().mode(0o700).create(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(HostError::io(&p.display().to_string(), &e)),
            }
            verify_dir(p)?;
        }
        match hold_live_lock(dir) {
            Ok(()) => return Ok(dir.to_path_buf()),
            Err(e) if attempt == 0 && e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(HostError::io(&dir.join(LIVE_LOCK).display().to_string(), &e)),
        }
    }
    Err(refuse(dir, &std::io::Error::from_raw_os_error(libc::ENOENT)))
}

fn open_lock(dir: &Path, create: bool) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir.join(LIVE_LOCK))
}

/// Takes (once per directory per process) the shared live lock, and checks the locked file is still the one in the
/// directory (a sweep that won the race removed it: `NotFound`, the caller recreates).
fn hold_live_lock(dir: &Path) -> std::io::Result<()> {
    let mut held = HELD.lock();
    if held.iter().any(|(p, _)| p == dir) && fs::symlink_metadata(dir.join(LIVE_LOCK)).is_ok() {
        return Ok(());
    }
    held.retain(|(p, _)| p != dir);
    let f = open_lock(dir, true)?;
    crate::agentfs::check_file(&f)?;
    FileExt::lock_shared(&f)?;
    let (a, b) = (f.metadata()?, fs::symlink_metadata(dir.join(LIVE_LOCK))?);
    if (a.dev(), a.ino()) != (b.dev(), b.ino()) {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    }
    held.push((dir.to_path_buf(), f));
    Ok(())
}

/// Whether another live process holds `dir`'s live lock. On `false` the returned file (when the lock exists)
/// holds it exclusively, so no process can start using the folder while the sweep removes it.
fn live_elsewhere(dir: &Path) -> (bool, Option<fs::File>) {
    let Ok(f) = open_lock(dir, false) else {
        return (false, None);
    };
    match FileExt::try_lock_exclusive(&f) {
        Ok(true) => (false, Some(f)),
        _ => (true, None),
    }
}

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

/// Removes the scratch directories of sessions not in `live`, and those untouched for `MAX_AGE` at `now`, unless a
/// live process holds their lock. Entries that are not directories (a stray file, a symlink) are removed
/// themselves, never followed. Returns the removed names, sorted. A missing scratch folder is nothing to sweep.
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
            let (live_elsewhere, _exclusive) = live_elsewhere(&path);
            if live_elsewhere {
                continue;
            }
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
    use std::os::unix::fs::PermissionsExt;
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
    fn a_live_lock_held_elsewhere_keeps_the_scratch_of_a_dead_looking_session() {
        let t = TempDir::new().unwrap();
        let dir = scratch_parent(t.path()).join("in-memory");
        create_root(&dir).unwrap();
        fs::write(dir.join("notes.md"), "x").unwrap();
        // This process holds the lock (as a live --no-session Pi would): not in the live list, still kept.
        assert!(sweep(t.path(), &[], SystemTime::now()).unwrap().is_empty());
        assert!(dir.join("notes.md").exists());
        // Released (the process ended): swept.
        HELD.lock().retain(|(p, _)| p != &dir);
        assert_eq!(sweep(t.path(), &[], SystemTime::now()).unwrap(), vec!["in-memory"]);
        // Created again, it takes the lock again.
        create_root(&dir).unwrap();
        assert!(sweep(t.path(), &[], SystemTime::now()).unwrap().is_empty());
        HELD.lock().retain(|(p, _)| p != &dir);
    }

    #[test]
    fn a_planted_scratch_symlink_is_never_followed() {
        let t = TempDir::new().unwrap();
        let home = t.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let dir = scratch_parent(t.path()).join("sess");
        fs::create_dir_all(dir.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&home, &dir).unwrap();
        assert_eq!(check_root(&dir).unwrap_err().code, TOOL_FAILED);
        let err = create_root(&dir).unwrap_err();
        assert!(err.message.contains("symbolic link"), "{}", err.message);
        // The session binds the link's own path as its scratch: the target is not scratch, nothing is created.
        let ws = t.path().join("ws");
        fs::create_dir_all(&ws).unwrap();
        let roots = crate::host::paths::Roots::new(&ws, t.path(), "sess").unwrap();
        let r = roots.resolve(home.join("x.txt").to_str().unwrap()).unwrap();
        assert!(r.external.is_some(), "{:?}", r.root);
        let r = roots.resolve(dir.join("x.txt").to_str().unwrap()).unwrap();
        assert!(r.external.is_some(), "{:?}", r.root);
        assert!(roots.ensure_scratch().is_err());
        assert_eq!(fs::read_dir(&home).unwrap().count(), 0);
        // A real folder of ours is fine and narrowed to 0700.
        fs::remove_file(&dir).unwrap();
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        create_root(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        HELD.lock().retain(|(p, _)| p != &dir);
    }

    #[test]
    fn a_missing_scratch_folder_is_nothing_to_sweep() {
        let t = TempDir::new().unwrap();
        assert!(sweep(t.path(), &[], SystemTime::now()).unwrap().is_empty());
    }
}
