//! `PI_PORT` port blocks (docs/worktrees.md "Ports"): each worktree session gets the first port of a block of ten in
//! 41000-48999, handed out only when all ten ports can be bound right now, so parallel dev servers of parallel
//! sessions never collide.
//!
//! Two Pi processes must not get the same block even before either binds a port, so a block is *leased*: an OS
//! lock (fs4, `flock`) on `<agentDir>/pi-codex-toolkit/ports/<first>.lock`, held while the session runs. An OS lock
//! dies with its process, so a crashed Pi never leaks a block, and [`release`] frees it when the session ends.

use super::{Result, WorktreeCode, WorktreeError};
use fs4::fs_std::FileExt;
use std::collections::HashMap;
use std::fs::{self, File};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The first port of the range.
pub const FIRST_PORT: u16 = 41000;
/// The last port of the range.
pub const LAST_PORT: u16 = 48999;
/// Ports per block.
pub const BLOCK: u16 = 10;

/// A held block: its first port and the locked file that keeps it.
struct Lease {
    first: u16,
    _file: File,
}

/// This process's leases, by holder (the worktree folder of the session that uses it).
static LEASES: Mutex<Option<HashMap<String, Lease>>> = Mutex::new(None);

fn leases() -> MutexGuard<'static, Option<HashMap<String, Lease>>> {
    // A panic while the map was held leaves it consistent (every step is one insert or remove): keep using it.
    LEASES.lock().unwrap_or_else(|e| e.into_inner())
}

/// `<agentDir>/pi-codex-toolkit/ports`.
pub fn lock_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("pi-codex-toolkit").join("ports")
}

/// Whether every port of the block starting at `first` can be bound on the loopback address now.
pub fn block_free(first: u16) -> bool {
    (first..first.saturating_add(BLOCK)).all(|p| TcpListener::bind((Ipv4Addr::LOCALHOST, p)).is_ok())
}

/// The block `holder` leases: the one it already holds, else the first block from `start` whose lock is free and
/// whose ten ports are free (a busy block is skipped for the next). Returns the first port.
pub fn lease(agent_dir: &Path, holder: &str) -> Result<u16> {
    lease_from(agent_dir, holder, FIRST_PORT)
}

/// [`lease`] starting the search at block `start` (tests use their own part of the range).
pub fn lease_from(agent_dir: &Path, holder: &str, start: u16) -> Result<u16> {
    let mut map = leases();
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(l) = map.get(holder) {
        return Ok(l.first);
    }
    let dir = lock_dir(agent_dir);
    fs::create_dir_all(&dir).map_err(|e| WorktreeError::io("The port lease folder could not be created", e))?;
    let start = start.max(FIRST_PORT);
    let start = start - (start - FIRST_PORT) % BLOCK;
    let mut first = start;
    while first <= LAST_PORT + 1 - BLOCK {
        // This process's own leases are locked through other handles; skip them without touching the file.
        if !map.values().any(|l| l.first == first) {
            if let Some(file) = try_lock(&dir.join(format!("{first}.lock"))) {
                if block_free(first) {
                    map.insert(holder.to_string(), Lease { first, _file: file });
                    return Ok(first);
                }
                // Dropping the file releases the lock: the block stays free for whoever binds it later.
            }
        }
        first += BLOCK;
    }
    Err(WorktreeError::new(
        WorktreeCode::NoPorts,
        format!("No block of {BLOCK} free ports is left between {FIRST_PORT} and {LAST_PORT}."),
    ))
}

fn try_lock(path: &Path) -> Option<File> {
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    match FileExt::try_lock_exclusive(&f) {
        Ok(true) => Some(f),
        _ => None,
    }
}

/// The first port `holder` leases now, if any.
pub fn held(holder: &str) -> Option<u16> {
    leases().as_ref()?.get(holder).map(|l| l.first)
}

/// Frees `holder`'s block (the session ended or left the worktree). `true` when one was held.
pub fn release(holder: &str) -> bool {
    leases().as_mut().and_then(|m| m.remove(holder)).is_some()
}
