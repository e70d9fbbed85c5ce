//! Where worktrees live and what the toolkit remembers about each (docs/worktrees.md "Layout"):
//! `<agentDir>/pi-codex-toolkit/worktrees/<project-key>/<id>` is the worktree, `<id>.json` beside it its record.
//!
//! The project key keeps two projects with the same folder name apart and stays the same for one project: it is the
//! project folder's name (for people reading the folder list) and the first 12 hex digits of the SHA-256 of its
//! canonical path.

use super::{Result, WorktreeCode, WorktreeError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The data folder under Pi's agent dir.
pub const DATA_DIR: [&str; 2] = ["pi-codex-toolkit", "worktrees"];
/// Every worktree branch is `pct/<id>`.
pub const BRANCH_PREFIX: &str = "pct/";
/// Discarded work is kept under `refs/pct/snapshots/<id>` in the project repository.
pub const SNAPSHOT_PREFIX: &str = "refs/pct/snapshots/";
/// The longest id (and name).
pub const MAX_ID: usize = 40;
/// The record format's version.
pub const RECORD_VERSION: u32 = 1;

/// `<agentDir>/pi-codex-toolkit/worktrees` (not resolved).
pub fn base(agent_dir: &Path) -> PathBuf {
    DATA_DIR.iter().fold(agent_dir.to_path_buf(), |p, s| p.join(s))
}

/// The project key of a canonical project folder: `<name>-<12 hex of SHA-256(path)>`, the name cut to 24 safe
/// characters.
pub fn project_key(project: &Path) -> String {
    let name: String = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(24)
        .collect();
    let name = name.trim_matches('.');
    let hash = hex::encode(Sha256::digest(project.as_os_str().as_encoded_bytes()));
    if name.is_empty() {
        format!("project-{}", &hash[..12])
    } else {
        format!("{name}-{}", &hash[..12])
    }
}

/// Whether `id` is a valid worktree id: 1-40 of `a-z 0-9 - _ .`, starting with a letter or digit (so it is a
/// plain folder name, a valid branch name component and never `.`/`..`).
pub fn valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_ID
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.'))
        && !id.ends_with(".lock")
        && !id.ends_with('.')
        && !id.contains("..")
}

/// A fresh id: `wt-` and 6 hex digits.
pub fn fresh_id() -> String {
    format!("wt-{}", &uuid::Uuid::new_v4().simple().to_string()[..6])
}

/// What the toolkit remembers about one worktree (`<id>.json` beside the folder).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub version: u32,
    pub id: String,
    /// The canonical project folder (the main checkout's top level).
    pub project: String,
    /// The canonical worktree folder.
    pub path: String,
    /// `pct/<id>`.
    pub branch: String,
    /// The commit the worktree was created from.
    pub base: String,
    /// The project branch it was created from (merge goes into the branch the project has checked out then).
    pub base_branch: String,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// A Task delegate's worktree: the id of the session worktree it branched from and is merged back into
    /// (docs/worktrees.md "Delegates"); `None` for a session's own worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The delegate's agent name (with `parent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// `<base>/<key>/<id>.json`.
pub fn record_path(base: &Path, key: &str, id: &str) -> PathBuf {
    base.join(key).join(format!("{id}.json"))
}

/// Writes a record atomically (a temporary file renamed over the name).
pub fn save_record(file: &Path, r: &Record) -> Result<()> {
    let tmp = file.with_extension(format!("json.{}.tmp", std::process::id()));
    let text = serde_json::to_vec_pretty(r).expect("a record serialises");
    let write = || -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        fs::rename(&tmp, file)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        WorktreeError::io("The worktree record could not be written", e)
    })
}

/// Reads a record; `None` when it is missing or unreadable.
pub fn load_record(file: &Path) -> Option<Record> {
    let bytes = fs::read(file).ok()?;
    if bytes.len() > 64 * 1024 {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// Every record of one project key, sorted by creation time.
pub fn records(base: &Path, key: &str) -> Vec<Record> {
    let mut out: Vec<Record> = fs::read_dir(base.join(key))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| load_record(&e.path()))
        .filter(|r| r.version == RECORD_VERSION && valid_id(&r.id))
        .collect();
    out.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then(a.id.cmp(&b.id)));
    out
}

/// A session folder that lies in a toolkit worktree.
#[derive(Clone, Debug)]
pub struct Located {
    pub key: String,
    pub id: String,
    /// The worktree folder as the session names it (`<base>/<key>/<id>`).
    pub root: PathBuf,
    /// The folder below the root the session works in ("" = the root).
    pub sub: PathBuf,
    /// The record, when it can be read.
    pub record: Option<Record>,
    /// `<base>` as the session path names it.
    pub base: PathBuf,
}

/// Whether `cwd` is (or is inside) a worktree of the toolkit, decided on the path alone — never by following it,
/// so a worktree whose folder was linked over is still recognised (and then refused as missing).
pub fn locate(agent_dir: &Path, cwd: &Path) -> Option<Located> {
    let lexical = base(agent_dir);
    let canonical = fs::canonicalize(&lexical).ok();
    for b in [Some(lexical), canonical].into_iter().flatten() {
        let Ok(rest) = cwd.strip_prefix(&b) else { continue };
        let mut parts = rest.components();
        let key = parts.next()?.as_os_str().to_str()?.to_string();
        let id = parts.next()?.as_os_str().to_str()?.to_string();
        if !valid_id(&id) {
            return None;
        }
        let sub: PathBuf = parts.collect();
        let record = load_record(&record_path(&b, &key, &id)).filter(|r| r.id == id);
        return Some(Located {
            root: b.join(&key).join(&id),
            key,
            id,
            sub,
            record,
            base: b,
        });
    }
    None
}

/// Refuses a name that is not a valid id.
pub fn check_name(name: &str) -> Result<()> {
    if valid_id(name) {
        Ok(())
    } else {
        Err(WorktreeError::new(
            WorktreeCode::BadName,
            format!("\"{}\" is not a valid worktree name.", name.escape_default()),
        ))
    }
}
