//! The on-disk review store of one session: `<agentDir>/pi-codex-toolkit/review/<sessionId>/` (mode 0700) holds
//! `index.jsonl` (one [`Change`] per line, appended before each mutation commits, rewritten atomically when states
//! change), `session.json` (which Pi session file it belongs to, for the sweep) and `snapshots/` (the bytes before,
//! mode 0600). A torn last line (a crash while appending) is skipped when loading.
//!
//! The bytes before of one mutation go into one file: a mutation with a single snapshot writes
//! `snapshots/<snapshotId>`; one with several (a patch of many files) writes one pack `snapshots/<packId>`, their
//! bytes one after another, and each change names its pack and offset ([`Change::pack`], [`Change::pack_offset`];
//! its length is `beforeBytes`). One create and one sequential write per patch instead of one create per changed
//! file: that was most of a large patch's time in Pi when the disk is busy (docs/review.md "Recording"). A part read
//! back from a pack is used only when it hashes to the change's `beforeHash`, so a pack edited or cut short by
//! someone else cannot put other bytes back.
//!
//! The store is untrusted input (docs/review.md "The store is untrusted input"): its folders and files are opened
//! without following links, refused when not regular or multiply linked, and never block (src/agentfs.rs); every
//! line read back is checked like model input ([`Change::validate`]) — a snapshot id is one plain name, a path is
//! workspace-relative without `..`, a workspace is an absolute normalized path — and a line that fails is skipped
//! like a torn one, so a forged index can neither name a file outside the store nor one outside its workspace.

use super::error::{ReviewCode, ReviewError};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

/// What the tool did to the path (docs/spec/host-tools.md): apply_patch Add/Update → write/edit, Delete → delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Operation {
    Write,
    Edit,
    Delete,
}

/// What happened to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Added,
    Modified,
    Deleted,
}

/// Whether the change still stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    Active,
    RolledBack,
}

impl Change {
    /// Who made the change, as the listing names it: the delegate as `writer (Task)`, else the tool (`apply_patch`,
    /// `Write`, `Edit`). The letter before the path already says what happened to the file.
    pub fn by(&self) -> String {
        match &self.agent {
            Some(a) => format!("{a} (Task)"),
            None => self.tool.clone(),
        }
    }
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Write => "write",
            Operation::Edit => "edit",
            Operation::Delete => "delete",
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Modified => "modified",
            Status::Deleted => "deleted",
        }
    }
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::RolledBack => "rolledBack",
        }
    }
}

/// One review change: the spec's fields (docs/spec/host-tools.md) first, then what rollback and the listing need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub version: u32,
    pub snapshot_id: String,
    pub message_id: Option<String>,
    /// Workspace-relative, `/` separators.
    pub path: String,
    pub operation: Operation,
    pub status: Status,
    pub state: State,
    pub additions: u64,
    pub deletions: u64,
    pub hunks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    pub reversible: bool,
    /// `apply_patch`, `Write` or `Edit`.
    pub tool: String,
    /// The canonical workspace root the path is relative to.
    pub workspace: String,
    /// Entries of one Move share a group and roll back together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// The Task delegate that made the change, when one did (docs/review.md "Who").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Folders the change created for its path (outermost first); a rollback removes them again when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    /// SHA-256 (hex) of the bytes before; None when the file did not exist (or was too large to read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_hash: Option<String>,
    /// SHA-256 (hex) of the bytes the tool wrote; None when the change removed the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_hash: Option<String>,
    /// Permission bits of the file before (a deleted file is re-created with them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Size of the file before.
    pub before_bytes: u64,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// The pack file holding the bytes before (a mutation with several snapshots); None: `snapshots/<snapshotId>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<String>,
    /// Where this change's bytes before start in its pack (they are `beforeBytes` long).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack_offset: Option<u64>,
}

/// Whether `id` can name a snapshot file or a Move group: 1 to 64 ASCII letters, digits, `-` or `_` (the recorder
/// writes 32 hex digits).
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `p` is a workspace-relative path as the recorder writes it: non-empty, `/`-separated plain segments
/// (no `.`, `..`, empty segment, backslash or NUL), not absolute.
pub fn valid_rel(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 4096
        && !p.starts_with('/')
        && !p.contains(['\\', '\0'])
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Whether `p` is an absolute, normalized path (no `.` or `..` component, no NUL).
fn valid_workspace(p: &str) -> bool {
    let path = Path::new(p);
    path.is_absolute()
        && !p.contains('\0')
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

impl Change {
    /// Checks a change read from the store like model input: ids, paths and the workspace (see the module docs).
    pub fn validate(&self) -> bool {
        valid_id(&self.snapshot_id)
            && self.group.as_deref().is_none_or(valid_id)
            && self.pack.as_deref().is_none_or(valid_id)
            && (self.pack.is_some() == self.pack_offset.is_some())
            && valid_rel(&self.path)
            && self.moved_from.as_deref().is_none_or(valid_rel)
            && self.moved_to.as_deref().is_none_or(valid_rel)
            && self.created_dirs.iter().all(|d| valid_rel(d))
            && valid_workspace(&self.workspace)
            && self.before_hash.as_deref().is_none_or(is_sha256_hex)
            && self.after_hash.as_deref().is_none_or(is_sha256_hex)
    }

    /// Whether a snapshot file holds this change's bytes before.
    pub fn has_snapshot(&self) -> bool {
        self.status != Status::Added && self.truncated != Some(true)
    }

    /// The name of the file under `snapshots/` holding this change's bytes before: its pack, or its own file.
    pub fn snapshot_file(&self) -> &str {
        self.pack.as_deref().unwrap_or(&self.snapshot_id)
    }
}

/// `session.json`: the Pi session this store belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub session_id: String,
    /// Pi's session file; None for an in-memory session.
    pub session_file: Option<String>,
}

/// The folder holding every session's review store.
pub fn review_parent(agent_dir: &Path) -> PathBuf {
    agent_dir.join("pi-codex-toolkit").join("review")
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// One session's store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    agent_dir: PathBuf,
    session_id: crate::session_id::SessionId,
}

pub const INDEX: &str = "index.jsonl";
pub const META: &str = "session.json";
pub const SNAPSHOTS: &str = "snapshots";
/// `session.json` is a few hundred bytes; a larger one is not ours.
const MAX_META_BYTES: u64 = 64 << 10;

impl Store {
    /// The store of `session_id` (nothing is created until something is recorded).
    pub fn of(agent_dir: &Path, session_id: &str) -> Result<Store, ReviewError> {
        // The one session-id rule (src/session_id.rs): the id names the review folder.
        let session_id = crate::session_id::SessionId::parse(session_id)
            .map_err(|e| ReviewError::new(ReviewCode::InvalidSession, e.to_string()))?;
        Ok(Store {
            dir: review_parent(agent_dir).join(session_id.as_str()),
            agent_dir: agent_dir.to_path_buf(),
            session_id,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the folders (0700) and `session.json` when missing.
    pub fn create(&self, meta: &Meta) -> Result<(), ReviewError> {
        let made = (|| {
            let parts = ["pi-codex-toolkit", "review", self.session_id.as_str(), SNAPSHOTS];
            crate::agentfs::ensure_dirs(&self.agent_dir, &parts)?;
            let m = self.dir.join(META);
            if fs::symlink_metadata(&m).is_err() {
                self.write_atomic(META, &serde_json::to_vec(meta).expect("meta serializes"))?;
            }
            Ok(())
        })();
        made.map_err(|e| ReviewError::store("created", &e))
    }

    /// The recorded meta, if any.
    pub fn meta(&self) -> Option<Meta> {
        serde_json::from_slice(&crate::agentfs::read(&self.dir.join(META), MAX_META_BYTES).ok()?).ok()
    }

    /// Writes `name` atomically (temp file + rename), mode 0600.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let written = crate::agentfs::create_new(&tmp).and_then(|mut f| f.write_all(bytes));
        if let Err(e) = written.and_then(|()| fs::rename(&tmp, self.dir.join(name))) {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(())
    }

    /// Appends changes to the index in one write.
    pub fn append(&self, changes: &[Change]) -> Result<(), ReviewError> {
        let mut buf = Vec::new();
        for c in changes {
            serde_json::to_writer(&mut buf, c).expect("change serializes");
            buf.push(b'\n');
        }
        crate::agentfs::open_append(&self.dir.join(INDEX))
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| ReviewError::store("written", &e))
    }

    /// Every recorded change, oldest first (an unreadable line, e.g. a torn last one, is skipped).
    pub fn load(&self) -> Result<Vec<Change>, ReviewError> {
        let bytes = match crate::agentfs::read(&self.dir.join(INDEX), super::MAX_TOTAL_BYTES) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ReviewError::store("read", &e)),
        };
        Ok(bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice::<Change>(l).ok())
            .filter(Change::validate)
            .collect())
    }

    /// Replaces the index with `changes` atomically.
    pub fn rewrite(&self, changes: &[Change]) -> Result<(), ReviewError> {
        let mut buf = Vec::new();
        for c in changes {
            serde_json::to_writer(&mut buf, c).expect("change serializes");
            buf.push(b'\n');
        }
        self.write_atomic(INDEX, &buf)
            .map_err(|e| ReviewError::store("written", &e))
    }

    /// The snapshot file of change `id`; `EINVAL` for an id that is not one plain name ([`valid_id`]).
    pub fn snapshot_path(&self, id: &str) -> io::Result<PathBuf> {
        if !valid_id(id) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(self.dir.join(SNAPSHOTS).join(id))
    }

    /// Stores the bytes before of change `id` (mode 0600, never replacing a file).
    pub fn write_snapshot(&self, id: &str, bytes: &[u8]) -> Result<(), ReviewError> {
        self.write_pack(id, &[bytes]).map(|_| ())
    }

    /// Stores `parts` one after another in the new file `snapshots/<id>` (mode 0600, never replacing a file) and
    /// returns each part's offset. A file left half-written by a failed write is removed.
    pub fn write_pack(&self, id: &str, parts: &[&[u8]]) -> Result<Vec<u64>, ReviewError> {
        let path = self.snapshot_path(id).map_err(|e| ReviewError::store("written", &e))?;
        let f = crate::agentfs::create_new(&path).map_err(|e| ReviewError::store("written", &e))?;
        let mut w = io::BufWriter::with_capacity(1 << 20, f);
        let mut offsets = Vec::with_capacity(parts.len());
        let mut at = 0u64;
        let written = (|| {
            for part in parts {
                offsets.push(at);
                w.write_all(part)?;
                at += part.len() as u64;
            }
            w.flush()
        })();
        if let Err(e) = written {
            drop(w);
            let _ = fs::remove_file(&path);
            return Err(ReviewError::store("written", &e));
        }
        Ok(offsets)
    }

    /// The bytes before of change `c`: its own snapshot file, or its part of a pack (refused with `EINVAL` unless
    /// the part is there in full and hashes to the change's `beforeHash`).
    pub fn read_before(&self, c: &Change) -> Result<Vec<u8>, ReviewError> {
        let (Some(pack), Some(offset)) = (c.pack.as_deref(), c.pack_offset) else {
            return self.read_snapshot(&c.snapshot_id);
        };
        let read = || -> io::Result<Vec<u8>> {
            use std::os::unix::fs::FileExt;
            if c.before_bytes > super::MAX_SNAPSHOT_BYTES {
                return Err(io::Error::from_raw_os_error(libc::EFBIG));
            }
            let f = crate::agentfs::open_read(&self.snapshot_path(pack)?)?;
            let mut buf = vec![0u8; c.before_bytes as usize];
            f.read_exact_at(&mut buf, offset)
                .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
            if c.before_hash.as_deref() != Some(crate::digest::sha256_hex(&buf).as_str()) {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            Ok(buf)
        };
        read().map_err(|e| ReviewError::store("read", &e))
    }

    /// Whether the bytes before of change `c` are still kept: its snapshot file, or a pack long enough for its
    /// part (regular files, not followed).
    pub fn before_kept(&self, c: &Change) -> bool {
        let Ok(m) = self.snapshot_path(c.snapshot_file()).and_then(fs::symlink_metadata) else {
            return false;
        };
        m.is_file()
            && c.pack_offset
                .is_none_or(|o| m.len() >= o.saturating_add(c.before_bytes))
    }

    /// Removes the file holding the bytes before of change `c` (for a pack: every change in it loses them).
    pub fn remove_before(&self, c: &Change) {
        self.remove_snapshot(c.snapshot_file());
    }

    /// The bytes before of change `id` (a regular, singly linked file of at most the snapshot limit).
    pub fn read_snapshot(&self, id: &str) -> Result<Vec<u8>, ReviewError> {
        self.snapshot_path(id)
            .and_then(|p| crate::agentfs::read(&p, super::MAX_SNAPSHOT_BYTES))
            .map_err(|e| ReviewError::store("read", &e))
    }

    /// Removes the snapshot of change `id` (missing is fine; an invalid id names nothing).
    pub fn remove_snapshot(&self, id: &str) {
        if let Ok(p) = self.snapshot_path(id) {
            let _ = fs::remove_file(p);
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
