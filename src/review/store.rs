//! The on-disk review store of one session: `<agentDir>/pi-codex-toolkit/review/<sessionId>/` (mode 0700) holds
//! `index.jsonl` (one [`Change`] per line, appended before each mutation commits, rewritten atomically when states
//! change), `session.json` (which Pi session file it belongs to, for the sweep) and `snapshots/<snapshotId>` (the
//! bytes before, mode 0600). A torn last line (a crash while appending) is skipped when loading.

use super::error::ReviewError;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
}

impl Change {
    /// Whether a snapshot file holds this change's bytes before.
    pub fn has_snapshot(&self) -> bool {
        self.status != Status::Added && self.truncated != Some(true)
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

/// A session id names a folder: one plain path segment.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 255 && id != "." && id != ".." && !id.contains(['/', '\\', '\0'])
}

fn mkdir_0700(p: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(p) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    fs::set_permissions(p, fs::Permissions::from_mode(0o700))
}

/// One session's store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

pub const INDEX: &str = "index.jsonl";
pub const META: &str = "session.json";
pub const SNAPSHOTS: &str = "snapshots";

impl Store {
    /// The store of `session_id` (nothing is created until something is recorded).
    pub fn of(agent_dir: &Path, session_id: &str) -> Result<Store, ReviewError> {
        if !valid_session_id(session_id) {
            return Err(ReviewError::new(
                "invalid-session",
                format!("session id '{session_id}' cannot name a review folder: it must be one path segment."),
            ));
        }
        Ok(Store {
            dir: review_parent(agent_dir).join(session_id),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the folders (0700) and `session.json` when missing.
    pub fn create(&self, meta: &Meta) -> Result<(), ReviewError> {
        let made = (|| {
            mkdir_0700(&self.dir)?;
            mkdir_0700(&self.dir.join(SNAPSHOTS))?;
            let m = self.dir.join(META);
            if !m.exists() {
                self.write_atomic(META, &serde_json::to_vec(meta).expect("meta serializes"))?;
            }
            Ok(())
        })();
        made.map_err(|e| ReviewError::store("created", &e))
    }

    /// The recorded meta, if any.
    pub fn meta(&self) -> Option<Meta> {
        serde_json::from_slice(&fs::read(self.dir.join(META)).ok()?).ok()
    }

    fn open_0600(path: &Path, append: bool) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        if append {
            o.append(true).create(true);
        } else {
            o.write(true).create_new(true);
        }
        o.open(path)
    }

    /// Writes `name` atomically (temp file + rename), mode 0600.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let written = Self::open_0600(&tmp, false).and_then(|mut f| f.write_all(bytes));
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
        Self::open_0600(&self.dir.join(INDEX), true)
            .and_then(|mut f| f.write_all(&buf))
            .map_err(|e| ReviewError::store("written", &e))
    }

    /// Every recorded change, oldest first (an unreadable line, e.g. a torn last one, is skipped).
    pub fn load(&self) -> Result<Vec<Change>, ReviewError> {
        let bytes = match fs::read(self.dir.join(INDEX)) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ReviewError::store("read", &e)),
        };
        Ok(bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice::<Change>(l).ok())
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

    fn snapshot_path(&self, id: &str) -> PathBuf {
        self.dir.join(SNAPSHOTS).join(id)
    }

    /// Stores the bytes before of change `id` (mode 0600, never replacing a file).
    pub fn write_snapshot(&self, id: &str, bytes: &[u8]) -> Result<(), ReviewError> {
        Self::open_0600(&self.snapshot_path(id), false)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| ReviewError::store("written", &e))
    }

    /// The bytes before of change `id`.
    pub fn read_snapshot(&self, id: &str) -> Result<Vec<u8>, ReviewError> {
        fs::read(self.snapshot_path(id)).map_err(|e| ReviewError::store("read", &e))
    }

    /// Whether the snapshot file of change `id` is there.
    pub fn snapshot_exists(&self, id: &str) -> bool {
        self.snapshot_path(id).is_file()
    }

    /// Removes the snapshot of change `id` (missing is fine).
    pub fn remove_snapshot(&self, id: &str) {
        let _ = fs::remove_file(self.snapshot_path(id));
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
