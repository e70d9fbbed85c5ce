//! The cooperative save lock: the directory `<config>.lock/` holding an `owner` record `{pid, token}`.
//!
//! The directory is published whole by renaming a staged directory into place, so a reader never sees a lock
//! without its owner record. The holder also keeps an OS file lock (fs4) on its `owner` file for as long as it
//! holds the directory: the OS drops that lock when the holder dies, so a crashed holder is detected even when its
//! pid has been reused, and can never wedge the lock. A dead owner is reclaimed through `<config>.lock/reclaim/`
//! (published the same way, with its own owner record) so two reclaimers cannot both win.

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One owner record, as stored in `owner` files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerRecord {
    pub pid: u32,
    pub token: String,
}

/// Why the lock could not be taken after the bounded attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// A live (or unverifiable) owner held it; `owner` is None when no record could be read.
    Held {
        lock_dir: PathBuf,
        owner: Option<(u32, bool)>,
    },
    /// The filesystem refused an operation we cannot wait out (e.g. EACCES on the folder).
    Io(String),
}

/// A held lock; released on drop (only if our token is still the owner).
pub struct LockGuard {
    lock_dir: PathBuf,
    token: String,
    file: Option<File>,
}

/// How many times a contended lock is retried, and the pause between tries (about 2 s in all).
pub const ATTEMPTS: u32 = 100;
const PAUSE: Duration = Duration::from_millis(20);

/// `<config>.lock`, beside the config file.
pub fn lock_dir_for(config: &Path) -> PathBuf {
    let mut s = config.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

fn pid_running(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as i32, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Creates `<parent>/.<name>.stage-<uuid>/owner` holding our record, with the OS lock already taken.
fn stage_dir(parent: &Path, name: &str, rec: &OwnerRecord) -> io::Result<(PathBuf, File)> {
    let stage = parent.join(format!(".{name}.stage-{}", new_token()));
    fs::create_dir(&stage)?;
    let file = write_owner(&stage.join("owner"), rec).inspect_err(|_| {
        let _ = fs::remove_dir_all(&stage);
    })?;
    Ok((stage, file))
}

fn write_owner(path: &Path, rec: &OwnerRecord) -> io::Result<File> {
    let mut f = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
    FileExt::try_lock_exclusive(&f)?;
    f.write_all(serde_json::to_string(rec).expect("record serializes").as_bytes())?;
    f.sync_all()?;
    Ok(f)
}

fn read_owner(path: &Path) -> Option<OwnerRecord> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Whether the owner of `owner_path` is dead: its OS lock is free, or its pid is gone, or it claims our pid with a
/// token we never issued (a leftover of this process).
fn owner_dead(owner_path: &Path, rec: &OwnerRecord, live_tokens: &[String]) -> bool {
    if rec.pid == std::process::id() {
        return !live_tokens.contains(&rec.token);
    }
    if !pid_running(rec.pid) {
        return true;
    }
    match File::open(owner_path) {
        Ok(f) => match FileExt::try_lock_exclusive(&f) {
            Ok(true) => {
                let _ = FileExt::unlock(&f);
                true
            }
            _ => false,
        },
        Err(_) => false,
    }
}

fn is_exists(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EEXIST) | Some(libc::ENOTEMPTY))
}

impl LockGuard {
    /// Takes the lock for `config`, retrying a bounded number of times. `live_tokens` are the tokens this process
    /// currently holds (so a record with our pid and another token is known to be stale).
    pub fn acquire(config: &Path, live_tokens: &[String]) -> Result<LockGuard, LockError> {
        let lock_dir = lock_dir_for(config);
        let parent = lock_dir.parent().unwrap_or(Path::new(".")).to_path_buf();
        let name = lock_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rec = OwnerRecord {
            pid: std::process::id(),
            token: new_token(),
        };
        let mut last_owner: Option<(u32, bool)> = None;
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(PAUSE);
            }
            let (stage, file) = stage_dir(&parent, &name, &rec).map_err(|e| LockError::Io(io_code(&e)))?;
            match fs::rename(&stage, &lock_dir) {
                Ok(()) => {
                    return Ok(LockGuard {
                        lock_dir,
                        token: rec.token,
                        file: Some(file),
                    })
                }
                Err(e) => {
                    drop(file);
                    let _ = fs::remove_dir_all(&stage);
                    if !is_exists(&e) {
                        return Err(LockError::Io(io_code(&e)));
                    }
                }
            }
            // Held: look at the owner.
            let owner_path = lock_dir.join("owner");
            remove_empty_reclaim(&lock_dir);
            match read_owner(&owner_path) {
                None => last_owner = None,
                Some(owner) => {
                    let dead = owner_dead(&owner_path, &owner, live_tokens);
                    last_owner = Some((owner.pid, pid_running(owner.pid)));
                    if dead {
                        if let Some(guard) = Self::reclaim(&parent, &name, &lock_dir, &owner, &rec, live_tokens) {
                            return Ok(guard);
                        }
                    }
                }
            }
        }
        Err(LockError::Held {
            lock_dir,
            owner: last_owner,
        })
    }

    /// Replaces a dead owner's record with ours while holding `reclaim/`. Returns None when another process won.
    fn reclaim(
        parent: &Path,
        name: &str,
        lock_dir: &Path,
        dead: &OwnerRecord,
        rec: &OwnerRecord,
        live_tokens: &[String],
    ) -> Option<LockGuard> {
        let reclaim = lock_dir.join("reclaim");
        let (stage, reclaim_file) = stage_dir(parent, &format!("{name}.reclaim"), rec).ok()?;
        if fs::rename(&stage, &reclaim).is_err() {
            drop(reclaim_file);
            let _ = fs::remove_dir_all(&stage);
            return None;
        }
        let owner_path = lock_dir.join("owner");
        let mut result = None;
        // Re-check under reclaim: the record must still be the same dead owner.
        if read_owner(&owner_path).as_ref() == Some(dead) && owner_dead(&owner_path, dead, live_tokens) {
            let staged = lock_dir.join(format!("owner.{}", new_token()));
            if let Ok(file) = write_owner(&staged, rec) {
                if fs::rename(&staged, &owner_path).is_ok() {
                    result = Some(LockGuard {
                        lock_dir: lock_dir.to_path_buf(),
                        token: rec.token.clone(),
                        file: Some(file),
                    });
                } else {
                    let _ = fs::remove_file(&staged);
                }
            }
        }
        let _ = fs::remove_file(reclaim.join("owner"));
        let _ = fs::remove_dir(&reclaim);
        drop(reclaim_file);
        result
    }

    /// The token of this holder (for `live_tokens` bookkeeping).
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Staged `owner.<token>` records a reclaimer killed before its rename left inside the lock folder; they would keep
/// the folder from being removed on release and wedge it as "no readable owner record". Only records whose OS
/// lock is free go: a live reclaimer keeps its staged record locked.
fn remove_abandoned_staged_owners(lock_dir: &Path) {
    let Ok(entries) = fs::read_dir(lock_dir) else { return };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("owner.") {
            continue;
        }
        let free = File::open(entry.path())
            .map(|f| {
                let got = matches!(FileExt::try_lock_exclusive(&f), Ok(true));
                if got {
                    let _ = FileExt::unlock(&f);
                }
                got
            })
            .unwrap_or(false);
        if free {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// An empty leftover `reclaim/` (its owner record gone) is removed; one that still has an owner is never deleted.
fn remove_empty_reclaim(lock_dir: &Path) {
    let reclaim = lock_dir.join("reclaim");
    if reclaim.is_dir() && !reclaim.join("owner").exists() {
        let _ = fs::remove_dir(&reclaim);
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let owner = self.lock_dir.join("owner");
        if read_owner(&owner).map(|r| r.token == self.token).unwrap_or(false) {
            remove_abandoned_staged_owners(&self.lock_dir);
            let _ = fs::remove_file(&owner);
            let _ = fs::remove_dir(&self.lock_dir);
        }
        self.file.take();
    }
}

/// How old a leftover must be before a sweep may remove it without proof that its owner died. A live saver keeps a
/// stage folder or temp file for milliseconds, so this only ever waits out the moment between creating a stage
/// folder and taking the OS lock on its owner record.
pub const STALE_AGE: Duration = Duration::from_secs(10);

fn older_than_stale_age(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= STALE_AGE)
}

/// Whether a stage folder (`.<lock>.stage-*` or `.<lock>.reclaim.stage-*`) was left by a saver that is gone: its
/// owner pid is not running, or it is older than `STALE_AGE` and nothing holds the OS lock on its owner record
/// (or it never got one).
fn stage_abandoned(stage: &Path) -> bool {
    let owner = stage.join("owner");
    if let Some(rec) = read_owner(&owner) {
        if rec.pid != std::process::id() && !pid_running(rec.pid) {
            return true;
        }
    }
    if !older_than_stale_age(stage) {
        return false;
    }
    match File::open(&owner) {
        Ok(f) => match FileExt::try_lock_exclusive(&f) {
            Ok(true) => {
                let _ = FileExt::unlock(&f);
                true
            }
            _ => false,
        },
        Err(_) => true,
    }
}

/// Removes the stage folders a killed saver left beside `config` (docs/config.md §Saving). Called by a saver that
/// holds the lock; a stage folder of a saver that is still trying to take the lock is never touched.
pub fn sweep_stale_stages(config: &Path) {
    let lock_dir = lock_dir_for(config);
    let (Some(parent), Some(name)) = (lock_dir.parent(), lock_dir.file_name()) else {
        return;
    };
    let name = name.to_string_lossy();
    let prefixes = [format!(".{name}.stage-"), format!(".{name}.reclaim.stage-")];
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if !prefixes.iter().any(|p| file_name.starts_with(p.as_str())) {
            continue;
        }
        let path = entry.path();
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir && stage_abandoned(&path) {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// A stable system code for an io error (EACCES, ENOENT, ...), never the path or message (the shared namer).
pub fn io_code(e: &io::Error) -> String {
    crate::errno::code(e)
}

/// Test support for other config modules: an owner record with its OS lock held, as a live saver has it.
#[cfg(test)]
pub mod tests_support {
    pub fn write_owner(path: &std::path::Path, rec: &super::OwnerRecord) -> std::fs::File {
        super::write_owner(path, rec).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_release_and_contention() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("c.json");
        let g = LockGuard::acquire(&cfg, &[]).unwrap();
        assert!(lock_dir_for(&cfg).join("owner").exists());
        // Our own pid with a live token: held, not reclaimed.
        let live = vec![g.token().to_string()];
        match LockGuard::acquire(&cfg, &live) {
            Err(LockError::Held {
                owner: Some((pid, true)),
                ..
            }) => assert_eq!(pid, std::process::id()),
            other => panic!("expected held, got {:?}", other.err()),
        }
        drop(g);
        assert!(!lock_dir_for(&cfg).exists());
    }

    #[test]
    fn own_pid_unknown_token_is_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("c.json");
        let g = LockGuard::acquire(&cfg, &[]).unwrap();
        std::mem::forget(g); // leak: the record stays, the token is no longer live
        let g2 = LockGuard::acquire(&cfg, &[]).unwrap();
        assert!(!lock_dir_for(&cfg).join("reclaim").exists());
        drop(g2);
    }

    #[test]
    fn owned_reclaim_is_never_deleted_and_empty_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("c.json");
        let ld = lock_dir_for(&cfg);
        fs::create_dir_all(ld.join("reclaim")).unwrap();
        fs::write(ld.join("owner"), r#"{"pid":999999999,"token":"x"}"#).unwrap();
        // Empty reclaim: removed, dead owner reclaimed.
        let g = LockGuard::acquire(&cfg, &[]).unwrap();
        drop(g);
        fs::create_dir_all(ld.join("reclaim")).unwrap();
        fs::write(ld.join("reclaim/owner"), r#"{"pid":999999999,"token":"y"}"#).unwrap();
        fs::write(ld.join("owner"), r#"{"pid":999999999,"token":"x"}"#).unwrap();
        match LockGuard::acquire(&cfg, &[]) {
            Err(LockError::Held {
                owner: Some((999999999, false)),
                ..
            }) => {}
            other => panic!("expected held, got {:?}", other.err()),
        }
        assert!(ld.join("reclaim/owner").exists());
    }

    #[test]
    fn a_killed_reclaimers_staged_record_does_not_wedge_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("c.json");
        let g = LockGuard::acquire(&cfg, &[]).unwrap();
        let ld = lock_dir_for(&cfg);
        fs::write(ld.join("owner.abandoned"), r#"{"pid":2147483000,"token":"x"}"#).unwrap();
        let live = ld.join("owner.live");
        let held = write_owner(
            &live,
            &OwnerRecord {
                pid: std::process::id(),
                token: "y".into(),
            },
        )
        .unwrap();
        drop(g);
        assert!(!ld.join("owner.abandoned").exists());
        assert!(live.exists(), "a staged record whose OS lock is held is kept");
        drop(held);
        fs::remove_file(&live).unwrap();
        fs::remove_dir(&ld).unwrap();
        let g = LockGuard::acquire(&cfg, &[]).unwrap();
        fs::write(ld.join("owner.abandoned"), "{}").unwrap();
        drop(g);
        assert!(!ld.exists(), "released cleanly");
        drop(LockGuard::acquire(&cfg, &[]).unwrap());
    }

    #[test]
    fn no_owner_record() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("c.json");
        fs::create_dir_all(lock_dir_for(&cfg).join("junk")).unwrap();
        match LockGuard::acquire(&cfg, &[]) {
            Err(LockError::Held { owner: None, .. }) => {}
            other => panic!("expected held without owner, got {:?}", other.err()),
        }
    }
}
