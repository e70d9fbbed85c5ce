//! Reading and saving the config file. A read yields the raw JSON, its SHA-256 revision and a classified error;
//! a save validates, locks, re-reads, refuses a changed or unreadable file, and commits by temp file + rename.

use super::lock::{io_code, LockError, LockGuard};
use super::schema;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

/// The result of one read. `revision` is the SHA-256 (hex) of the bytes as read, None when the file is missing.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadOutcome {
    /// ok | missing | error
    pub status: &'static str,
    /// invalid-json | invalid-config | config-read-failed
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// The first offending field, or the system code; never the invalid value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub revision: Option<String>,
    /// The raw object (unknown fields included) when valid.
    pub raw: Option<Value>,
}

/// A successful save: the new revision and the raw object as written.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SaveOutcome {
    pub revision: String,
    pub raw: Value,
}

/// Why a save was refused; nothing was written in every case.
#[derive(Debug, Clone, Serialize)]
pub struct SaveError {
    /// invalid-config | stale-revision | lock-held | config-read-failed | config-write-failed
    pub code: &'static str,
    pub message: String,
}

/// Tokens of locks this process holds right now, so a record with our pid and another token is known stale.
static LIVE_TOKENS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Hex SHA-256 of file bytes: the revision a draft is based on.
pub fn revision_of(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Reads and classifies the file. Never writes.
pub fn read(path: &Path) -> ReadOutcome {
    match fs::read(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => ReadOutcome {
            status: "missing",
            code: None,
            detail: None,
            revision: None,
            raw: None,
        },
        Err(e) => ReadOutcome {
            status: "error",
            code: Some("config-read-failed"),
            detail: Some(io_code(&e)),
            revision: None,
            raw: None,
        },
        Ok(bytes) => classify(&bytes),
    }
}

fn classify(bytes: &[u8]) -> ReadOutcome {
    let revision = Some(revision_of(bytes));
    let raw: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(_) => {
            return ReadOutcome {
                status: "error",
                code: Some("invalid-json"),
                detail: None,
                revision,
                raw: None,
            }
        }
    };
    match schema::validate(&raw) {
        Ok(()) => ReadOutcome {
            status: "ok",
            code: None,
            detail: None,
            revision,
            raw: Some(raw),
        },
        Err(detail) => ReadOutcome {
            status: "error",
            code: Some("invalid-config"),
            detail: Some(detail),
            revision,
            raw: None,
        },
    }
}

/// The exact bytes a save writes: `JSON.stringify(raw, null, 2)` plus a newline.
pub fn serialize(raw: &Value) -> String {
    let mut s = serde_json::to_string_pretty(raw).expect("a JSON value serializes");
    s.push('\n');
    s
}

/// Saves `draft` if the file still has `base_revision` (None = the file must still be missing).
pub fn save(path: &Path, draft: &Value, base_revision: Option<&str>) -> Result<SaveOutcome, SaveError> {
    let mut raw = draft.clone();
    schema::normalize_for_save(&mut raw);
    if let Err(detail) = schema::validate(&raw) {
        return Err(SaveError {
            code: "invalid-config",
            message: format!("Could not save: {detail}."),
        });
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| write_failed(&e))?;
    let live = LIVE_TOKENS.lock().map(|v| v.clone()).unwrap_or_default();
    let guard = LockGuard::acquire(path, &live).map_err(lock_error)?;
    if let Ok(mut v) = LIVE_TOKENS.lock() {
        v.push(guard.token().to_string());
    }
    test_hold();
    let result = save_locked(path, dir, &raw, base_revision);
    if let Ok(mut v) = LIVE_TOKENS.lock() {
        v.retain(|t| t != guard.token());
    }
    drop(guard);
    result
}

/// Test support: `PCT_TEST_LOCK_HOLD_MS` keeps the lock held that long inside a save, so tests can kill a holder
/// mid-save. Unset in normal use.
fn test_hold() {
    if let Some(ms) = std::env::var("PCT_TEST_LOCK_HOLD_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

fn save_locked(path: &Path, dir: &Path, raw: &Value, base_revision: Option<&str>) -> Result<SaveOutcome, SaveError> {
    let current = match fs::read(path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => {
            return Err(SaveError {
                code: "config-read-failed",
                message: "Refusing to overwrite an unreadable configuration file.".into(),
            })
        }
    };
    if let Some(bytes) = &current {
        if let Some(code) = classify(bytes).code {
            // Never overwrite what the user wrote by hand and we could not understand: they would lose it. Checked
            // before the revision, so a draft opened after a failed read gets this advice, not "file changed".
            return Err(SaveError {
                code: "config-read-failed",
                message: format!(
                    "Could not save: the configuration file is not valid ({code}); fix or remove it, then run /pct reload."
                ),
            });
        }
    }
    if current.as_deref().map(revision_of).as_deref() != base_revision {
        return Err(SaveError {
            code: "stale-revision",
            message: "Could not save: the configuration file changed; reload and review the draft.".into(),
        });
    }
    let text = serialize(raw);
    let tmp = dir.join(format!(".{}.tmp-{}", super::FILE_NAME, uuid::Uuid::new_v4()));
    let write = (|| -> io::Result<()> {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if let Err(e) = write {
        let _ = fs::remove_file(&tmp);
        return Err(write_failed(&e));
    }
    Ok(SaveOutcome {
        revision: revision_of(text.as_bytes()),
        raw: raw.clone(),
    })
}

fn write_failed(e: &io::Error) -> SaveError {
    SaveError {
        code: "config-write-failed",
        message: format!("Could not save: writing the configuration failed ({}).", io_code(e)),
    }
}

fn lock_error(e: LockError) -> SaveError {
    match e {
        LockError::Io(code) => SaveError {
            code: "config-write-failed",
            message: format!("Could not save: the configuration lock could not be created ({code})."),
        },
        LockError::Held { lock_dir, owner: Some((pid, running)) } => SaveError {
            code: "lock-held",
            message: format!(
                "Could not save: the configuration lock {} is held by pid {pid} ({}). If no other Pi process with this Toolkit is saving, remove that directory and retry.",
                lock_dir.display(),
                if running { "running" } else { "not running" }
            ),
        },
        LockError::Held { lock_dir, owner: None } => SaveError {
            code: "lock-held",
            message: format!(
                "Could not save: the configuration lock {} exists but has no readable owner record. If no other Pi process with this Toolkit is saving, remove that directory and retry.",
                lock_dir.display()
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_classifies() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        assert_eq!(read(&p).status, "missing");
        fs::write(&p, "{").unwrap();
        let r = read(&p);
        assert_eq!((r.code, r.detail), (Some("invalid-json"), None));
        fs::write(&p, r#"{"applyPatch":{"enabled":"yes"}}"#).unwrap();
        let r = read(&p);
        assert_eq!(r.code, Some("invalid-config"));
        assert_eq!(r.detail.as_deref(), Some("applyPatch.enabled must be true or false"));
        fs::write(&p, "{}").unwrap();
        let r = read(&p);
        assert_eq!(r.status, "ok");
        assert_eq!(r.revision.unwrap(), revision_of(b"{}"));
    }

    #[test]
    fn save_round_trip_and_stale() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub").join("c.json");
        let raw = json!({"zeta": {"keep": [1, 2]}, "applyPatch": {"enabled": true, "mine": "x"}});
        let out = save(&p, &raw, None).unwrap();
        let text = fs::read_to_string(&p).unwrap();
        assert_eq!(text, serialize(&raw));
        assert!(text.starts_with("{\n  \"zeta\""), "key order kept: {text}");
        assert_eq!(out.revision, revision_of(text.as_bytes()));
        // A save based on the missing-file revision is now stale.
        let e = save(&p, &raw, None).unwrap_err();
        assert_eq!(e.code, "stale-revision");
        assert_eq!(
            e.message,
            "Could not save: the configuration file changed; reload and review the draft."
        );
        assert_eq!(fs::read_to_string(&p).unwrap(), text);
        // Invalid drafts are never written.
        let e = save(&p, &json!({"debug": "no"}), Some(&out.revision)).unwrap_err();
        assert_eq!(e.code, "invalid-config");
        assert_eq!(fs::read_to_string(&p).unwrap(), text);
        // No temp files or lock left behind.
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn refuses_to_overwrite_invalid_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        fs::write(&p, "not json").unwrap();
        let rev = revision_of(b"not json");
        let e = save(&p, &json!({}), Some(&rev)).unwrap_err();
        assert_eq!(e.code, "config-read-failed");
        // Also when the draft's base is the last good revision (the usual case after a failed read).
        let e = save(&p, &json!({}), Some(&revision_of(b"{}"))).unwrap_err();
        assert_eq!(e.message, "Could not save: the configuration file is not valid (invalid-json); fix or remove it, then run /pct reload.");
        assert_eq!(fs::read_to_string(&p).unwrap(), "not json");
    }
}
