//! Review stores go with their session (docs/review.md "Lifetime and limits"). At start-up the sweep removes the
//! store of every session whose Pi session file no longer exists (the user deleted the session), and the store of
//! an in-memory session (`--no-session`, no file) once it is idle for a day and is not the current one (its own
//! process removes it at shutdown; the day covers a crash). Then the total cap: while all stores together exceed
//! [`super::MAX_TOTAL_BYTES`], the least recently used sessions go, oldest first, never the current one; if the
//! current session alone is still over, its oldest snapshots are dropped and those changes become
//! `reversible: false, truncated: true`. The same cap sweep also runs during a session, each time another
//! [`SWEEP_EVERY`] bytes of snapshots were recorded in this process, so a long session stays bounded too.

use super::error::ReviewError;
use super::store::{review_parent, Store, INDEX, META};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// An in-memory session's store left behind (its process crashed) is removed after this idle time.
pub const EPHEMERAL_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// Bytes of every file under `dir` (symlinks not followed).
fn size_of(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn last_used(dir: &Path) -> SystemTime {
    fs::metadata(dir.join(INDEX))
        .or_else(|_| fs::metadata(dir))
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn remove(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).is_ok(),
        Ok(_) => fs::remove_file(path).is_ok(),
        Err(_) => false,
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// Session ids whose stores were removed, sorted.
    pub removed: Vec<String>,
    /// Changes of the current session whose snapshots were dropped for the cap.
    pub dropped_snapshots: usize,
    /// Bytes of all stores after the sweep.
    pub total_bytes: u64,
}

/// Start-up sweep and cap (see the module doc). `current` is the running session (never removed).
pub fn sweep(agent_dir: &Path, current: Option<&str>, cap: u64, now: SystemTime) -> Result<Swept, ReviewError> {
    let parent = review_parent(agent_dir);
    let entries = match fs::read_dir(&parent) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Swept::default()),
        Err(e) => return Err(ReviewError::store("read", &e)),
    };
    let mut out = Swept::default();
    let mut alive: Vec<(SystemTime, String, u64)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if Some(name.as_str()) == current {
            continue;
        }
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        let meta = Store::of(agent_dir, &name).ok().and_then(|s| s.meta());
        let gone = match (is_dir, meta) {
            (false, _) => true,
            (true, Some(m)) => match m.session_file {
                Some(f) => !Path::new(&f).exists(),
                None => now
                    .duration_since(last_used(&path))
                    .is_ok_and(|idle| idle > EPHEMERAL_IDLE),
            },
            // No session.json: a store torn while being created; aged like an in-memory one.
            (true, None) => now
                .duration_since(last_used(&path))
                .is_ok_and(|idle| idle > EPHEMERAL_IDLE),
        };
        if gone {
            if remove(&path) {
                out.removed.push(name);
            }
            continue;
        }
        alive.push((last_used(&path), name, size_of(&path)));
    }
    let current_bytes = current.map_or(0, |c| size_of(&parent.join(c)));
    let mut total: u64 = alive.iter().map(|a| a.2).sum::<u64>() + current_bytes;
    alive.sort();
    for (_, name, bytes) in alive {
        if total <= cap {
            break;
        }
        if remove(&parent.join(&name)) {
            total -= bytes;
            out.removed.push(name);
        }
    }
    if total > cap {
        if let Some(cur) = current {
            let (dropped, freed) = drop_oldest_snapshots(agent_dir, cur, total - cap)?;
            out.dropped_snapshots = dropped;
            total -= freed;
        }
    }
    out.removed.sort();
    out.total_bytes = total;
    Ok(out)
}

/// Drops the current session's oldest snapshots until `need` bytes are freed; their changes become irreversible.
fn drop_oldest_snapshots(agent_dir: &Path, session_id: &str, need: u64) -> Result<(usize, u64), ReviewError> {
    let store = Store::of(agent_dir, session_id)?;
    let mut changes = store.load()?;
    let (mut freed, mut dropped) = (0u64, 0usize);
    for i in 0..changes.len() {
        if freed >= need {
            break;
        }
        if !changes[i].has_snapshot() {
            continue;
        }
        // The file holding its bytes before goes; every change whose bytes were in it (a pack) loses them too.
        let file = changes[i].snapshot_file().to_string();
        let len = store
            .snapshot_path(&file)
            .and_then(fs::symlink_metadata)
            .map_or(0, |m| m.len());
        store.remove_before(&changes[i]);
        for c in changes
            .iter_mut()
            .filter(|c| c.has_snapshot() && c.snapshot_file() == file)
        {
            c.truncated = Some(true);
            c.reversible = false;
            dropped += 1;
        }
        freed += len;
    }
    if dropped > 0 {
        store.rewrite(&changes)?;
    }
    Ok((dropped, freed))
}

/// Removes one session's store (an in-memory session at shutdown). Missing is fine.
pub fn remove_session(agent_dir: &Path, session_id: &str) -> Result<bool, ReviewError> {
    let store = Store::of(agent_dir, session_id)?;
    if !store.dir().join(META).exists() && !store.dir().exists() {
        return Ok(false);
    }
    Ok(remove(store.dir()))
}

/// Snapshot bytes recorded in this process between two in-session cap sweeps.
pub const SWEEP_EVERY: u64 = 32 << 20;

static SINCE_SWEEP: AtomicU64 = AtomicU64::new(0);

/// Counts `bytes` of snapshots just recorded for `session_id`; once [`SWEEP_EVERY`] accumulated, runs the sweep
/// (with that session as the current one) and returns what it did.
pub fn note_recorded(agent_dir: &Path, session_id: &str, bytes: u64) -> Option<Swept> {
    note_recorded_with(agent_dir, session_id, bytes, SWEEP_EVERY, super::MAX_TOTAL_BYTES)
}

/// [`note_recorded`] with explicit bounds (tests).
pub fn note_recorded_with(agent_dir: &Path, session_id: &str, bytes: u64, every: u64, cap: u64) -> Option<Swept> {
    let total = SINCE_SWEEP.fetch_add(bytes, Ordering::SeqCst) + bytes;
    if total < every {
        return None;
    }
    SINCE_SWEEP.store(0, Ordering::SeqCst);
    sweep(agent_dir, Some(session_id), cap, SystemTime::now()).ok()
}
