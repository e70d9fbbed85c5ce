//! Hash-guarded rollback (docs/review.md "Rollback"). A change is put back only when its path still holds exactly
//! what the tool wrote (the full SHA-256 equals the recorded after-hash; a removed file must still be absent);
//! otherwise `conflict` and nothing is touched. Rolling back restores the captured bytes (a modified file),
//! deletes a created file, re-creates a deleted one, and moves a moved file back (both entries of a Move together).
//! "All" walks the active changes newest first and checks the whole chain before touching anything, then re-checks
//! each file right before it is written. Every step is fd-relative beneath the workspace root like apply_patch
//! (`src/patch/beneath.rs`): a folder swapped for a symlink fails the step, it never redirects it. Restored bytes
//! are staged in a temp file next to the target and renamed into place, so a crash leaves the old or the new file.
//! The caller holds the session's mutation permit ([`super::lock`]).

use super::error::{ReviewCode, ReviewError};
use super::invalidate;
use super::store::{Change, State, Status, Store};
use crate::patch::beneath::{split, Root};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Which changes to roll back: one (by snapshot id or its 1-based number in the listing) with its Move partner,
/// or every active change, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which<'a> {
    One(&'a str),
    All,
}

/// What a rollback did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The changes now marked rolledBack, in the order they were undone.
    pub rolled_back: Vec<Change>,
    /// Absolute paths that changed (their host snapshot entries were invalidated).
    pub paths: Vec<PathBuf>,
    /// "All" stopped part-way (a file changed between the check and its step): why. Earlier steps stay undone.
    pub stopped: Option<ReviewError>,
}

/// Finds a change by snapshot id or listing number (`3` or `#3`).
pub fn find(changes: &[Change], key: &str) -> Option<usize> {
    let k = key.trim();
    if let Some(i) = changes.iter().position(|c| c.snapshot_id == k) {
        return Some(i);
    }
    let n: usize = k.strip_prefix('#').unwrap_or(k).parse().ok()?;
    (1..=changes.len()).contains(&n).then(|| n - 1)
}

fn not_found(key: &str) -> ReviewError {
    ReviewError::new(
        ReviewCode::NotFound,
        format!("no change '{key}' in this session's review. Run /pct review to list the changes and their numbers."),
    )
}

/// The live state of a path: None = absent, Some(hash) = a regular file with this SHA-256; `Err` = something
/// else is there (a folder, a symlink, an unreadable file), which never matches a recorded state.
fn live_hash(root: &mut Root, rel: &str) -> io::Result<Option<String>> {
    let st = match root.stat(rel) {
        Ok(None) => return Ok(None),
        Ok(Some(st)) => st,
        Err(e) => return Err(e),
    };
    if !st.is_file() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    let mut f = root.open_file(rel, false)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(Some(hex::encode(h.finalize())))
}

/// What the change left at its path: the state a rollback expects to find.
fn expected_after(c: &Change) -> Option<&str> {
    match c.status {
        Status::Deleted => None,
        Status::Added | Status::Modified => c.after_hash.as_deref(),
    }
}

/// What the path held before the change: the state after rolling it back.
fn expected_before(c: &Change) -> Option<String> {
    match c.status {
        Status::Added => None,
        Status::Modified | Status::Deleted => c.before_hash.clone(),
    }
}

fn conflict(c: &Change, found: &str) -> ReviewError {
    ReviewError::new(
        ReviewCode::Conflict,
        format!(
            "'{}' {found} since {} changed it, so it was not rolled back and nothing was touched. Look at the file (/pct review show), \
             undo the later change first, or leave it as it is.",
            c.path, c.tool
        ),
    )
}

fn describe(found: &Result<Option<String>, io::Error>) -> &'static str {
    match found {
        Ok(None) => "no longer exists",
        Ok(Some(_)) => "was changed by someone else",
        Err(_) => "is no longer a regular file",
    }
}

/// The workspace roots opened so far (a session's changes may span workspaces).
struct Roots(HashMap<String, Root>);

impl Roots {
    fn get(&mut self, ws: &str) -> Result<&mut Root, ReviewError> {
        if !self.0.contains_key(ws) {
            let r = Root::open(Path::new(ws)).map_err(|e| {
                ReviewError::new(
                    ReviewCode::RollbackFailed,
                    format!(
                        "the workspace '{ws}' is not accessible ({}); nothing was rolled back.",
                        crate::errno::code(&e)
                    ),
                )
            })?;
            self.0.insert(ws.to_string(), r);
        }
        Ok(self.0.get_mut(ws).expect("inserted"))
    }
}

/// Groups change indices into rollback units (a Move's two entries are one unit), newest unit first.
fn units(changes: &[Change], pick: impl Fn(usize) -> bool) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut seen_groups: Vec<&str> = Vec::new();
    for i in (0..changes.len()).rev() {
        if !pick(i) || changes[i].state != State::Active {
            continue;
        }
        match changes[i].group.as_deref() {
            Some(g) if seen_groups.contains(&g) => continue,
            Some(g) => {
                seen_groups.push(g);
                let members: Vec<usize> = (0..changes.len())
                    .filter(|&j| changes[j].group.as_deref() == Some(g) && changes[j].state == State::Active)
                    .collect();
                out.push(members);
            }
            None => out.push(vec![i]),
        }
    }
    out
}

fn guard_unit(
    changes: &[Change],
    unit: &[usize],
    live: &mut impl FnMut(&Change) -> Result<Option<String>, io::Error>,
) -> Result<(), ReviewError> {
    for &i in unit {
        let c = &changes[i];
        let found = live(c);
        let ok = matches!(&found, Ok(h) if h.as_deref() == expected_after(c));
        if !ok {
            return Err(conflict(c, describe(&found)));
        }
    }
    Ok(())
}

fn not_reversible(c: &Change) -> ReviewError {
    ReviewError::new(
        ReviewCode::NotReversible,
        format!(
            "'{}' cannot be rolled back: its content before was {} bytes, over the 16 MiB snapshot limit (or pruned), so \
             it was not kept. Restore it from version control instead; nothing was touched.",
            c.path, c.before_bytes
        ),
    )
}

fn step_failed(c: &Change, e: &io::Error) -> ReviewError {
    ReviewError::new(
        ReviewCode::RollbackFailed,
        format!(
            "rolling back '{}' failed ({}); the file was left as it was. Check the folder's permissions, then retry.",
            c.path,
            crate::errno::code(e)
        ),
    )
}

fn temp_name(rel: &str) -> String {
    let (dir, _) = split(rel);
    let name = format!(".pct-review-{}.tmp", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    if dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

/// Writes `bytes` to a fresh temp file next to `rel` (mode `mode`) and returns its relative path.
fn stage(root: &mut Root, rel: &str, bytes: &[u8], mode: u32) -> io::Result<String> {
    let tmp = temp_name(rel);
    let (dir, name) = split(&tmp);
    let mut f = root.create_file(dir, name, 0o600)?;
    let done = f.write_all(bytes).and_then(|()| {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
    });
    if let Err(e) = done {
        let _ = root.unlink(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

/// Removes the folders the change created, innermost first, where they are empty again (best effort: a folder
/// that holds something now stays).
fn remove_created(root: &mut Root, c: &Change) {
    for dir in c.created_dirs.iter().rev() {
        if root.rmdir(dir).is_err() {
            break;
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Test hook run right after the guard, before the staged bytes are swapped in (a writer racing the rollback).
    pub static BEFORE_PUT_BACK: std::cell::RefCell<Option<Box<dyn Fn()>>> = const { std::cell::RefCell::new(None) };
}

/// Puts the staged bytes `tmp` in place of the modified file. With `RENAME_EXCHANGE` the replaced file stays at
/// `tmp` and is checked once more: if another writer changed it after the guard, the two are swapped back
/// (`conflict`, the writer's bytes kept). Without exchange support (another filesystem) a plain rename replaces
/// it right after the guard.
fn put_back(root: &mut Root, c: &Change, tmp: &str) -> Result<(), ReviewError> {
    #[cfg(test)]
    BEFORE_PUT_BACK.with(|h| {
        if let Some(h) = h.borrow().as_ref() {
            h()
        }
    });
    match root.rename_exchange(tmp, &c.path) {
        Ok(()) => match live_hash(root, tmp) {
            Ok(Some(h)) if Some(h.as_str()) == c.after_hash.as_deref() => {
                let _ = root.unlink(tmp);
                Ok(())
            }
            found => {
                if root.rename_exchange(tmp, &c.path).is_err() {
                    return Err(ReviewError::new(
                        ReviewCode::RollbackFailed,
                        format!(
                            "'{}' changed while it was rolled back and could not be swapped back: the bytes before are                              in place and the content written meanwhile was kept as '{tmp}'. Compare the two and keep                              the right one.",
                            c.path
                        ),
                    ));
                }
                let _ = root.unlink(tmp);
                Err(conflict(c, describe(&found)))
            }
        },
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) => {
            root.rename_replace(tmp, &c.path).map_err(|e| {
                let _ = root.unlink(tmp);
                step_failed(c, &e)
            })
        }
        Err(e) => {
            let _ = root.unlink(tmp);
            Err(step_failed(c, &e))
        }
    }
}

/// Puts one unit back (its guard was just checked).
fn undo_unit(root: &mut Root, store: &Store, changes: &[Change], unit: &[usize]) -> Result<(), ReviewError> {
    let src = unit.iter().map(|&i| &changes[i]).find(|c| c.moved_to.is_some());
    let dst = unit.iter().map(|&i| &changes[i]).find(|c| c.moved_from.is_some());
    if let (Some(src), Some(dst)) = (src, dst) {
        // A Move: the file goes back to its source path (same inode), then gets its bytes before if it changed.
        let mut made = Vec::new();
        root.mkdirs(split(&src.path).0, &mut made)
            .map_err(|e| step_failed(src, &e))?;
        root.rename_noreplace(&dst.path, &src.path)
            .map_err(|e| step_failed(dst, &e))?;
        remove_created(root, dst);
        if src.before_hash != dst.after_hash {
            let bytes = store.read_before(src)?;
            let mode = root.stat(&src.path).ok().flatten().map_or(0o644, |s| s.mode);
            let put = stage(root, &src.path, &bytes, mode).and_then(|t| root.rename_replace(&t, &src.path));
            put.map_err(|e| step_failed(src, &e))?;
        }
        return Ok(());
    }
    for &i in unit {
        let c = &changes[i];
        match c.status {
            Status::Added => {
                // Moved aside first, re-checked there, then removed: a writer racing the check is not lost.
                let tmp = temp_name(&c.path);
                root.rename_noreplace(&c.path, &tmp).map_err(|e| step_failed(c, &e))?;
                match live_hash(root, &tmp) {
                    Ok(Some(h)) if Some(h.as_str()) == c.after_hash.as_deref() => {
                        root.unlink(&tmp).map_err(|e| step_failed(c, &e))?;
                        remove_created(root, c);
                    }
                    found => {
                        let _ = root.rename_noreplace(&tmp, &c.path);
                        return Err(conflict(c, describe(&found)));
                    }
                }
            }
            Status::Modified => {
                let bytes = store.read_before(c)?;
                let mode = root
                    .stat(&c.path)
                    .ok()
                    .flatten()
                    .map_or(c.mode.unwrap_or(0o644), |s| s.mode);
                let tmp = stage(root, &c.path, &bytes, mode).map_err(|e| step_failed(c, &e))?;
                put_back(root, c, &tmp)?;
            }
            Status::Deleted => {
                let bytes = store.read_before(c)?;
                let mut made = Vec::new();
                root.mkdirs(split(&c.path).0, &mut made)
                    .map_err(|e| step_failed(c, &e))?;
                let tmp = stage(root, &c.path, &bytes, c.mode.unwrap_or(0o644)).map_err(|e| step_failed(c, &e))?;
                if let Err(e) = root.rename_noreplace(&tmp, &c.path) {
                    let _ = root.unlink(&tmp);
                    return Err(if e.raw_os_error() == Some(libc::EEXIST) {
                        conflict(c, "exists again")
                    } else {
                        step_failed(c, &e)
                    });
                }
            }
        }
    }
    Ok(())
}

/// Rolls back `which` in the session's store; the caller holds the session's mutation permit.
#[cfg(test)]
pub fn rollback(agent_dir: &Path, session_id: &str, which: Which<'_>) -> Result<Report, ReviewError> {
    rollback_in(agent_dir, session_id, which, None)
}

/// [`rollback`] anchored to the caller's workspace (the session's `ctx.cwd`): the store is untrusted input
/// (docs/review.md), so a change recorded for another workspace is never rolled back from here — `One` refuses it
/// with `other-workspace`, `All` leaves it alone. `None` only in tests.
pub fn rollback_in(
    agent_dir: &Path,
    session_id: &str,
    which: Which<'_>,
    workspace: Option<&Path>,
) -> Result<Report, ReviewError> {
    let store = Store::of(agent_dir, session_id)?;
    let mut changes = store.load()?;
    let anchor = match workspace {
        None => None,
        Some(w) => Some(
            std::fs::canonicalize(w)
                .map_err(|e| {
                    ReviewError::new(
                        ReviewCode::RollbackFailed,
                        format!(
                            "the workspace '{}' is not accessible ({}); nothing was rolled back.",
                            w.display(),
                            crate::errno::code(&e)
                        ),
                    )
                })?
                .display()
                .to_string(),
        ),
    };
    let foreign = |c: &Change| anchor.as_ref().is_some_and(|a| &c.workspace != a);
    let plan = match which {
        Which::One(key) => {
            let i = find(&changes, key).ok_or_else(|| not_found(key))?;
            if foreign(&changes[i]) {
                return Err(ReviewError::new(
                    ReviewCode::OtherWorkspace,
                    format!(
                        "'{}' ({key}) was changed in the workspace '{}', not this one; nothing was touched. Roll it back \
                         from a Pi session started in that workspace.",
                        changes[i].path, changes[i].workspace
                    ),
                ));
            }
            if changes[i].state == State::RolledBack {
                return Err(ReviewError::new(
                    ReviewCode::AlreadyRolledBack,
                    format!(
                        "'{}' ({key}) is already rolled back; nothing was touched.",
                        changes[i].path
                    ),
                ));
            }
            let g = changes[i].group.clone();
            units(&changes, |j| j == i || (g.is_some() && changes[j].group == g))
        }
        Which::All => units(&changes, |j| !foreign(&changes[j])),
    };
    if plan.is_empty() {
        return Ok(Report::default());
    }
    // Not reversible: recorded so, or its snapshot file has gone from the store since.
    let lost = |c: &Change| c.has_snapshot() && !store.before_kept(c);
    if let Some(c) = plan
        .iter()
        .flatten()
        .map(|&i| &changes[i])
        .find(|c| !c.reversible || lost(c))
    {
        return Err(not_reversible(c));
    }
    // The whole chain first: each unit against the state the later ones leave (nothing touched on a conflict).
    let mut roots = Roots(HashMap::new());
    let mut sim: HashMap<(String, String), Option<String>> = HashMap::new();
    for unit in &plan {
        let mut err = None;
        let mut live = |c: &Change| -> Result<Option<String>, io::Error> {
            let key = (c.workspace.clone(), c.path.clone());
            if let Some(s) = sim.get(&key) {
                return Ok(s.clone());
            }
            let root = match roots.get(&c.workspace) {
                Ok(r) => r,
                Err(e) => {
                    err = Some(e);
                    return Err(io::Error::from_raw_os_error(libc::EIO));
                }
            };
            let h = live_hash(root, &c.path)?;
            sim.insert(key, h.clone());
            Ok(h)
        };
        let guarded = guard_unit(&changes, unit, &mut live);
        if let Some(e) = err {
            return Err(e);
        }
        guarded?;
        for &i in unit {
            let c = &changes[i];
            sim.insert((c.workspace.clone(), c.path.clone()), expected_before(c));
        }
    }
    // Then each unit for real, re-checked right before it is written.
    let mut report = Report::default();
    let mut done: Vec<usize> = Vec::new();
    for unit in &plan {
        let ws = changes[unit[0]].workspace.clone();
        let step = (|| {
            let root = roots.get(&ws)?;
            root.forget();
            guard_unit(&changes, unit, &mut |c: &Change| live_hash(root, &c.path))?;
            undo_unit(root, &store, &changes, unit)
        })();
        if let Err(e) = step {
            if done.is_empty() {
                return Err(e);
            }
            report.stopped = Some(e);
            break;
        }
        done.extend(unit);
    }
    for &i in &done {
        changes[i].state = State::RolledBack;
    }
    store.rewrite(&changes)?;
    for &i in &done {
        let c = &changes[i];
        let abs = Path::new(&c.workspace).join(&c.path);
        invalidate::notify(session_id, &abs);
        report.paths.push(abs);
        report.rolled_back.push(c.clone());
    }
    Ok(report)
}
