//! Recording review changes around a mutation (docs/review.md "Recording"). [`prepare`] runs after the tool has
//! decided every new content and before anything the user sees changes: it computes each change's line
//! statistics, stores the bytes before (snapshot files) and appends the changes to the index. The tool then
//! commits; [`Recording::finish`] keeps the changes of the operations that took effect and drops the rest (a failed
//! or refused mutation leaves no change behind). Scratch, external, failed and denied writes never reach here.

use super::diff;
use super::error::ReviewError;
use super::store::{now_ms, Change, Meta, Operation, State, Status, Store};
use super::{Target, MAX_SNAPSHOT_BYTES};
use std::path::Path;

/// The content of a path before the mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before<'a> {
    /// The path did not exist.
    Absent,
    /// These bytes.
    Bytes(&'a [u8]),
    /// A file of this size that was not read (over [`MAX_SNAPSHOT_BYTES`]): recorded, but not reversible.
    Unread { size: u64 },
}

/// One path's change as the tool knows it.
#[derive(Debug, Clone)]
pub struct Capture<'a> {
    /// Workspace-relative path (`/` separators).
    pub path: String,
    pub operation: Operation,
    pub before: Before<'a>,
    /// The bytes written; None when the path no longer exists afterwards.
    pub after: Option<&'a [u8]>,
    /// Permission bits of the file before (a deleted file is re-created with them).
    pub mode: Option<u32>,
    /// The tool's step this change belongs to (both entries of a Move share it).
    pub step: usize,
    /// A Move: the other path (`moved_to` on the source entry, `moved_from` on the destination entry).
    pub moved_from: Option<String>,
    pub moved_to: Option<String>,
    /// Folders the mutation creates for this path (outermost first), removed again when it is rolled back.
    pub created_dirs: Vec<String>,
}

pub use crate::digest::sha256_hex;

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Changes written to the index before the mutation; [`Recording::finish`] settles them.
#[derive(Debug)]
pub struct Recording {
    store: Store,
    changes: Vec<(usize, Change)>,
}

fn change_of(target: &Target, workspace: &str, c: &Capture<'_>, group: Option<String>) -> Change {
    let (before_bytes, before_hash, before_text) = match c.before {
        Before::Absent => (0, None, None),
        Before::Bytes(b) => (b.len() as u64, Some(sha256_hex(b)), Some(b)),
        Before::Unread { size } => (size, None, None),
    };
    let unread = matches!(c.before, Before::Unread { .. });
    let too_big = before_bytes > MAX_SNAPSHOT_BYTES;
    let status = match (c.before, c.after) {
        (Before::Absent, _) => Status::Added,
        (_, None) => Status::Deleted,
        _ if c.moved_from.is_some() => Status::Added,
        _ => Status::Modified,
    };
    // A Move's source entry carries no line counts: its destination entry shows what the move changed.
    let stats = if c.moved_to.is_some() || unread {
        diff::Stats::default()
    } else {
        diff::stats(before_text.unwrap_or_default(), c.after.unwrap_or_default())
    };
    Change {
        version: 1,
        snapshot_id: new_id(),
        message_id: target.message_id.clone(),
        path: c.path.clone(),
        operation: c.operation,
        status,
        state: State::Active,
        additions: stats.additions,
        deletions: stats.deletions,
        hunks: stats.hunks,
        binary: stats.binary.then_some(true),
        truncated: (unread || too_big).then_some(true),
        reversible: !(unread || too_big),
        tool: target.tool.clone(),
        agent: target.agent.clone(),
        workspace: workspace.to_string(),
        group,
        moved_from: c.moved_from.clone(),
        moved_to: c.moved_to.clone(),
        created_dirs: c.created_dirs.clone(),
        before_hash,
        after_hash: if unread { None } else { c.after.map(sha256_hex) },
        mode: c.mode,
        before_bytes,
        created_at: now_ms(),
        pack: None,
        pack_offset: None,
    }
}

/// Records `captures` for the mutation about to commit in `workspace` (canonical). Snapshot files are written and
/// the changes appended before this returns; on error nothing is left recorded and the caller must not commit.
pub fn prepare(target: &Target, workspace: &Path, captures: &[Capture<'_>]) -> Result<Recording, ReviewError> {
    let store = Store::of(&target.agent_dir, &target.session_id)?;
    store.create(&Meta {
        session_id: target.session_id.clone(),
        session_file: target.session_file.clone(),
    })?;
    let ws = workspace.display().to_string();
    // Both entries of a Move share one group id.
    let mut groups: std::collections::HashMap<usize, String> = Default::default();
    for c in captures
        .iter()
        .filter(|c| c.moved_from.is_some() || c.moved_to.is_some())
    {
        groups.entry(c.step).or_insert_with(new_id);
    }
    let mut rec = Recording {
        store,
        changes: Vec::with_capacity(captures.len()),
    };
    let mut kept: Vec<&[u8]> = Vec::new();
    for c in captures {
        let change = change_of(target, &ws, c, groups.get(&c.step).cloned());
        if change.has_snapshot() {
            let Before::Bytes(b) = c.before else {
                unreachable!("a change with a snapshot has its bytes")
            };
            kept.push(b);
        }
        rec.changes.push((c.step, change));
    }
    // The bytes before go into one file: the change's own for a single snapshot, one pack for several
    // (src/review/store.rs).
    let written = match kept.len() {
        0 => Ok(()),
        1 => {
            let id = rec
                .changes
                .iter()
                .find(|(_, c)| c.has_snapshot())
                .map(|(_, c)| c.snapshot_id.clone());
            rec.store
                .write_snapshot(&id.expect("one change has the snapshot"), kept[0])
        }
        _ => {
            let pack = new_id();
            rec.store.write_pack(&pack, &kept).map(|offsets| {
                let packed = rec.changes.iter_mut().map(|(_, c)| c).filter(|c| c.has_snapshot());
                for (c, at) in packed.zip(offsets) {
                    c.pack = Some(pack.clone());
                    c.pack_offset = Some(at);
                }
            })
        }
    };
    written?;
    let all: Vec<Change> = rec.changes.iter().map(|(_, c)| c.clone()).collect();
    if let Err(e) = rec.store.append(&all) {
        rec.discard();
        return Err(e);
    }
    let kept: u64 = all.iter().filter(|c| c.has_snapshot()).map(|c| c.before_bytes).sum();
    super::prune::note_recorded(&target.agent_dir, &target.session_id, kept);
    Ok(rec)
}

impl Recording {
    fn discard(&self) {
        for (_, c) in self.changes.iter().filter(|(_, c)| c.has_snapshot()) {
            self.store.remove_before(c);
        }
    }

    /// The recorded changes, in capture order.
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().map(|(_, c)| c)
    }

    /// Keeps the changes whose step took effect (`committed(step)`); the others leave the index and their
    /// snapshots are removed. Nothing to rewrite when every step committed (the common case).
    pub fn finish(self, committed: impl Fn(usize) -> bool) -> Result<(), ReviewError> {
        let dropped: Vec<&Change> = self
            .changes
            .iter()
            .filter(|(s, _)| !committed(*s))
            .map(|(_, c)| c)
            .collect();
        if dropped.is_empty() {
            return Ok(());
        }
        let gone: std::collections::HashSet<&str> = dropped.iter().map(|c| c.snapshot_id.as_str()).collect();
        let kept: Vec<Change> = self
            .store
            .load()?
            .into_iter()
            .filter(|c| !gone.contains(c.snapshot_id.as_str()))
            .collect();
        self.store.rewrite(&kept)?;
        // A pack stays while a kept change still has its bytes in it.
        let still: std::collections::HashSet<&str> = kept
            .iter()
            .filter(|c| c.has_snapshot())
            .map(Change::snapshot_file)
            .collect();
        for c in dropped.into_iter().filter(|c| c.has_snapshot()) {
            if !still.contains(c.snapshot_file()) {
                self.store.remove_before(c);
            }
        }
        Ok(())
    }
}

/// One Write or Edit of a workspace file (engineer `edit`'s HostSession.write/edit call this with the session's
/// mutation permit held, right before the bytes land, then `finish(|_| landed)`): `before` None = the file did
/// not exist; `after` None = the file is removed (Edit's REM).
pub fn prepare_one(
    target: &Target,
    workspace: &Path,
    path: &str,
    operation: Operation,
    before: Option<&[u8]>,
    mode: Option<u32>,
    after: Option<&[u8]>,
) -> Result<Recording, ReviewError> {
    let created_dirs = if before.is_none() {
        missing_dirs(workspace, path)
    } else {
        Vec::new()
    };
    let before = match before {
        None => Before::Absent,
        Some(b) => Before::Bytes(b),
    };
    prepare(
        target,
        workspace,
        &[Capture {
            path: path.to_string(),
            operation,
            before,
            after,
            mode,
            step: 0,
            moved_from: None,
            moved_to: None,
            created_dirs,
        }],
    )
}

/// The folders of `rel` (outermost first) that do not exist yet under `workspace` (the ones a Write creates).
pub fn missing_dirs(workspace: &Path, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut end = 0;
    while let Some(i) = rel[end..].find('/') {
        let prefix = &rel[..end + i];
        if out.is_empty() && std::fs::symlink_metadata(workspace.join(prefix)).is_ok() {
            end += i + 1;
            continue;
        }
        out.push(prefix.to_string());
        end += i + 1;
    }
    out
}
