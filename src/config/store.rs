//! Reading and saving the config file. A read yields the raw JSON, its SHA-256 revision and a classified error;
//! a save validates, locks, re-reads, refuses a changed or unreadable file, and commits by temp file + rename.
//!
//! Over 600 lines only with its inline tests (the code itself is about 390 lines).

use super::lock::{self, io_code, LockError, LockGuard};
use super::schema;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

crate::codes::error_codes! {
    /// Every code a failed read carries (docs/config.md "Reads", in the table's order).
    pub enum ReadCode {
        /// The text is not JSON.
        InvalidJson = "invalid-json" => "fix the JSON syntax of the config file, or remove it, then run /pct reload",
        /// The JSON is not a valid config, or breaks a limit.
        InvalidConfig = "invalid-config" => "fix the field the detail names, then run /pct reload",
        /// The file exists but cannot be read.
        ConfigReadFailed = "config-read-failed" => "check the config file's permissions and type, then run /pct reload",
    }
}

crate::codes::error_codes! {
    /// Every code a refused save carries (docs/config.md "Save codes", in the table's order).
    pub enum SaveCode {
        /// The draft is not a valid config, or breaks a limit.
        InvalidConfig = "invalid-config" => "fix the setting the message names and save again",
        /// The file changed since the draft was opened.
        StaleRevision = "stale-revision" => "reload and review the draft, then save again",
        /// Another saver holds the config lock.
        LockHeld = "lock-held" => "wait for the other save, or remove the lock folder the message names",
        /// The file on disk cannot be read, or is not valid, so it is not overwritten.
        ConfigReadFailed = "config-read-failed" => "fix or remove the config file, then run /pct reload",
        /// Writing the file, its lock or its symbolic link's target failed.
        ConfigWriteFailed = "config-write-failed" => "check the config folder's free space and permissions, then retry",
    }
}

impl Serialize for ReadCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for SaveCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The result of one read. `revision` is the SHA-256 (hex) of the bytes as read, None when the file is missing.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadOutcome {
    /// ok | missing | error
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<ReadCode>,
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
    pub code: SaveCode,
    pub message: String,
}

/// Tokens of locks this process holds right now, so a record with our pid and another token is known stale.
static LIVE_TOKENS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Hex SHA-256 of file bytes: the revision a draft is based on.
pub fn revision_of(bytes: &[u8]) -> String {
    crate::digest::sha256_hex(bytes)
}

/// Largest config file read or written: 1 MiB (docs/config.md §Limits). Bounds memory, and with it the number of
/// JSON values, far below napi's conversion limit (one million values), so a read can never throw on the way to JS.
pub const MAX_BYTES: usize = 1 << 20;
/// Most JSON values (every object, array and scalar) in a config (docs/config.md §Limits).
pub const MAX_VALUES: usize = 100_000;
/// Deepest nesting of objects and arrays in a config; napi and serde_json both stop at 128 (docs/config.md §Limits).
pub const MAX_DEPTH: usize = 64;

/// The file's bytes (at most `MAX_BYTES + 1` kept) and the revision of all of it.
struct Loaded {
    bytes: Vec<u8>,
    revision: String,
}

/// Reads at most `MAX_BYTES + 1` bytes and hashes the whole file, so an oversize file costs bounded memory and still
/// has the revision of its real content (a non-regular file: the revision of what was read).
fn load(path: &Path) -> io::Result<Loaded> {
    // O_NONBLOCK: a config that is a FIFO must not block Pi's start-up waiting for a writer (no effect on files).
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let mut bytes = Vec::new();
    (&mut file).take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    let mut hasher = Sha256::new();
    hasher.update(&bytes);
    // Only a regular file is hashed to its end: a config linked to a device such as /dev/zero never ends.
    if bytes.len() > MAX_BYTES && file.metadata()?.is_file() {
        io::copy(&mut file, &mut hasher)?;
    }
    Ok(Loaded {
        bytes,
        revision: hex::encode(hasher.finalize()),
    })
}

/// Reads and classifies the file. Never writes. Every failure is one of the three read codes; nothing here panics
/// or returns a value napi cannot convert.
pub fn read(path: &Path) -> ReadOutcome {
    match load(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => ReadOutcome {
            status: "missing",
            code: None,
            detail: None,
            revision: None,
            raw: None,
        },
        Err(e) => ReadOutcome {
            status: "error",
            code: Some(ReadCode::ConfigReadFailed),
            detail: Some(io_code(&e)),
            revision: None,
            raw: None,
        },
        Ok(loaded) => classify(&loaded.bytes, loaded.revision),
    }
}

/// The limit a text breaks before it is parsed: its size, or its nesting (scanned outside strings, so a nesting
/// serde_json would refuse as "recursion limit" is reported as the limit it is).
fn text_limit(bytes: &[u8]) -> Option<String> {
    if bytes.len() > MAX_BYTES {
        return Some(format!("configuration file is larger than the {MAX_BYTES}-byte limit"));
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(depth_detail());
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

fn depth_detail() -> String {
    format!("configuration nests objects and arrays deeper than the limit of {MAX_DEPTH} levels")
}

/// The limit a parsed value breaks: more than `MAX_VALUES` values or deeper than `MAX_DEPTH` containers.
pub fn value_limit(root: &Value) -> Option<String> {
    let mut count = 0usize;
    let mut stack = vec![(root, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        count += 1;
        if count > MAX_VALUES {
            return Some(format!(
                "configuration has more than the limit of {MAX_VALUES} JSON values"
            ));
        }
        match v {
            Value::Array(_) | Value::Object(_) if depth > MAX_DEPTH => return Some(depth_detail()),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    None
}

fn classify(bytes: &[u8], revision: String) -> ReadOutcome {
    let revision = Some(revision);
    let invalid_config = |detail: String, revision: Option<String>| ReadOutcome {
        status: "error",
        code: Some(ReadCode::InvalidConfig),
        detail: Some(detail),
        revision,
        raw: None,
    };
    if let Some(detail) = text_limit(bytes) {
        return invalid_config(detail, revision);
    }
    let raw: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(_) => {
            return ReadOutcome {
                status: "error",
                code: Some(ReadCode::InvalidJson),
                detail: None,
                revision,
                raw: None,
            }
        }
    };
    if let Some(detail) = value_limit(&raw) {
        return invalid_config(detail, revision);
    }
    match schema::validate(&raw) {
        Ok(()) => ReadOutcome {
            status: "ok",
            code: None,
            detail: None,
            revision,
            raw: Some(raw),
        },
        Err(detail) => invalid_config(detail, revision),
    }
}

/// The exact bytes a save writes: `JSON.stringify(raw, null, 2)` plus a newline.
pub fn serialize(raw: &Value) -> String {
    let mut s = serde_json::to_string_pretty(raw).expect("a JSON value serializes");
    s.push('\n');
    s
}

/// Saves `draft` if the file still has `base_revision` (None = the file must still be missing). A symlinked config
/// is written through to its target, so the link the user made stays a link (docs/config.md §Saving).
pub fn save(path: &Path, draft: &Value, base_revision: Option<&str>) -> Result<SaveOutcome, SaveError> {
    let mut raw = draft.clone();
    schema::normalize_for_save(&mut raw);
    if let Some(detail) = value_limit(&raw).or_else(|| schema::validate(&raw).err()) {
        return Err(SaveError {
            code: SaveCode::InvalidConfig,
            message: format!("Could not save: {detail}."),
        });
    }
    let text = serialize(&raw);
    if text.len() > MAX_BYTES {
        return Err(SaveError {
            code: SaveCode::InvalidConfig,
            message: format!("Could not save: the configuration would be larger than the {MAX_BYTES}-byte limit."),
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
    // Under the lock no other cooperating saver is mid-write, so leftovers of killed savers can go.
    lock::sweep_stale_stages(path);
    let result = write_target(path).and_then(|target| save_locked(&target, &raw, &text, base_revision));
    if let Ok(mut v) = LIVE_TOKENS.lock() {
        v.retain(|t| t != guard.token());
    }
    drop(guard);
    result
}

/// The file a save replaces: `path` itself, or the final target when `path` is a symbolic link (renaming over the
/// link would turn it into a regular file and cut the user's link). A dangling link is refused, not replaced.
fn write_target(path: &Path) -> Result<PathBuf, SaveError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).map_err(|e| SaveError {
            code: SaveCode::ConfigWriteFailed,
            message: format!(
                "Could not save: the configuration file is a symbolic link whose target cannot be resolved ({}); fix or remove the link, then run /pct reload.",
                io_code(&e)
            ),
        }),
        _ => Ok(path.to_path_buf()),
    }
}

/// Test support: `PCT_TEST_LOCK_HOLD_MS` keeps the lock held that long inside a save, so tests can kill a holder
/// mid-save. Only in builds with test seams (src/seams.rs).
fn test_hold() {
    if let Some(ms) = crate::seams::var("PCT_TEST_LOCK_HOLD_MS").and_then(|v| v.parse::<u64>().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

fn save_locked(path: &Path, raw: &Value, text: &str, base_revision: Option<&str>) -> Result<SaveOutcome, SaveError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let current = match load(path) {
        Ok(loaded) => Some(loaded),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => {
            return Err(SaveError {
                code: SaveCode::ConfigReadFailed,
                message: "Refusing to overwrite an unreadable configuration file.".into(),
            })
        }
    };
    if let Some(loaded) = &current {
        if let Some(code) = classify(&loaded.bytes, loaded.revision.clone()).code {
            // Never overwrite what the user wrote by hand and we could not understand: they would lose it. Checked
            // before the revision, so a draft opened after a failed read gets this advice, not "file changed".
            return Err(SaveError {
                code: SaveCode::ConfigReadFailed,
                message: format!(
                    "Could not save: the configuration file is not valid ({code}); fix or remove it, then run /pct reload."
                ),
            });
        }
    }
    if current.as_ref().map(|l| l.revision.as_str()) != base_revision {
        return Err(SaveError {
            code: SaveCode::StaleRevision,
            message: "Could not save: the configuration file changed; reload and review the draft.".into(),
        });
    }
    sweep_stale_temps(dir);
    let tmp = dir.join(format!("{}{}", tmp_prefix(), uuid::Uuid::new_v4()));
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

/// `.<file>.tmp-`: the temp file a save writes before renaming it over the config.
fn tmp_prefix() -> String {
    format!(".{}.tmp-", super::FILE_NAME)
}

/// Removes temp files a killed saver left in `dir` once they are older than `lock::STALE_AGE` (a live save keeps
/// its temp file for milliseconds, under the lock this saver now holds).
fn sweep_stale_temps(dir: &Path) {
    let prefix = tmp_prefix();
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if is_file && entry.file_name().to_string_lossy().starts_with(&prefix) {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= lock::STALE_AGE);
            if stale {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

fn write_failed(e: &io::Error) -> SaveError {
    SaveError {
        code: SaveCode::ConfigWriteFailed,
        message: format!("Could not save: writing the configuration failed ({}).", io_code(e)),
    }
}

fn lock_error(e: LockError) -> SaveError {
    match e {
        LockError::Io(code) => SaveError {
            code: SaveCode::ConfigWriteFailed,
            message: format!("Could not save: the configuration lock could not be created ({code})."),
        },
        LockError::Held { lock_dir, owner: Some((pid, running)) } => SaveError {
            code: SaveCode::LockHeld,
            message: format!(
                "Could not save: the configuration lock {} is held by pid {pid} ({}). If no other Pi process with this Toolkit is saving, remove that directory and retry.",
                lock_dir.display(),
                if running { "running" } else { "not running" }
            ),
        },
        LockError::Held { lock_dir, owner: None } => SaveError {
            code: SaveCode::LockHeld,
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
        assert_eq!((r.code, r.detail), (Some(ReadCode::InvalidJson), None));
        fs::write(&p, r#"{"applyPatch":{"enabled":"yes"}}"#).unwrap();
        let r = read(&p);
        assert_eq!(r.code, Some(ReadCode::InvalidConfig));
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

    /// `[0,0,...]` with `n` values in all (the array counts as one).
    fn zeros(n: usize) -> String {
        format!("[{}]", vec!["0"; n - 1].join(","))
    }

    #[test]
    fn limits_are_invalid_config_at_their_boundaries() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        // Values: the root object, "k" array and its elements.
        let at = format!("{{\"k\":{}}}", zeros(MAX_VALUES - 1));
        fs::write(&p, &at).unwrap();
        assert_eq!(read(&p).status, "ok");
        let over = format!("{{\"k\":{}}}", zeros(MAX_VALUES));
        fs::write(&p, &over).unwrap();
        let r = read(&p);
        assert_eq!((r.status, r.code), ("error", Some(ReadCode::InvalidConfig)));
        assert_eq!(
            r.detail.as_deref(),
            Some("configuration has more than the limit of 100000 JSON values")
        );
        assert_eq!(r.revision, Some(revision_of(over.as_bytes())));
        // Depth: MAX_DEPTH nested containers read, one more is the limit (also past serde_json's own 128).
        for (depth, ok) in [(MAX_DEPTH, true), (MAX_DEPTH + 1, false), (200, false)] {
            let text = format!("{{\"k\":{}{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
            fs::write(&p, &text).unwrap();
            let r = read(&p);
            assert_eq!(r.status == "ok", ok, "depth {depth}: {r:?}");
            if !ok {
                assert_eq!(r.code, Some(ReadCode::InvalidConfig));
                assert_eq!(
                    r.detail.as_deref(),
                    Some("configuration nests objects and arrays deeper than the limit of 64 levels")
                );
            }
        }
        // Brackets inside strings are not nesting.
        fs::write(&p, format!("{{\"k\":\"{}\\\"{}\"}}", "[".repeat(100), "{".repeat(100))).unwrap();
        assert_eq!(read(&p).status, "ok");
        // Size: exactly MAX_BYTES reads; one byte more is the limit, with the revision of the whole file.
        let pad = |n: usize| format!("{{\"k\":\"{}\"}}", "x".repeat(n - 8));
        fs::write(&p, pad(MAX_BYTES)).unwrap();
        assert_eq!(read(&p).status, "ok");
        let big = pad(MAX_BYTES + 1);
        fs::write(&p, &big).unwrap();
        let r = read(&p);
        assert_eq!(r.code, Some(ReadCode::InvalidConfig));
        assert_eq!(
            r.detail.as_deref(),
            Some("configuration file is larger than the 1048576-byte limit")
        );
        assert_eq!(r.revision, Some(revision_of(big.as_bytes())));
        // A save is refused at the same limits and never overwrites the oversize file.
        let e = save(&p, &json!({"k": "x"}), r.revision.as_deref()).unwrap_err();
        assert_eq!(e.code, "config-read-failed");
        assert_eq!(fs::read_to_string(&p).unwrap(), big);
        let q = d.path().join("q.json");
        let e = save(&q, &json!({ "k": "x".repeat(MAX_BYTES) }), None).unwrap_err();
        assert_eq!(e.code, "invalid-config");
        assert_eq!(
            e.message,
            "Could not save: the configuration would be larger than the 1048576-byte limit."
        );
        let many: Value = serde_json::from_str(&zeros(MAX_VALUES + 1)).unwrap();
        let e = save(&q, &json!({ "k": many }), None).unwrap_err();
        assert_eq!(
            e.message,
            "Could not save: configuration has more than the limit of 100000 JSON values."
        );
        assert!(!q.exists());
    }

    #[test]
    fn a_fifo_without_a_writer_reads_at_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let q = p.clone();
        std::thread::spawn(move || tx.send(read(&q)).unwrap());
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the read returned");
        assert_eq!((r.status, r.code), ("error", Some(ReadCode::InvalidJson)));
    }

    #[test]
    fn an_endless_device_is_an_oversize_config_not_a_hang() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
        let r = read(&p);
        assert_eq!(r.code, Some(ReadCode::InvalidConfig));
        assert_eq!(
            r.detail.as_deref(),
            Some("configuration file is larger than the 1048576-byte limit")
        );
    }

    #[test]
    fn a_symlinked_config_is_written_through_to_its_target() {
        let d = tempfile::tempdir().unwrap();
        let real_dir = d.path().join("dotfiles");
        fs::create_dir(&real_dir).unwrap();
        let target = real_dir.join("pct.json");
        fs::write(&target, "{}").unwrap();
        let link_dir = d.path().join("extensions");
        fs::create_dir(&link_dir).unwrap();
        let link = link_dir.join("c.json");
        std::os::unix::fs::symlink("../dotfiles/pct.json", &link).unwrap();
        let out = save(&link, &json!({"debug": true}), Some(&revision_of(b"{}"))).unwrap();
        assert!(
            fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
            "the link stays a link"
        );
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("../dotfiles/pct.json"));
        assert_eq!(fs::read_to_string(&target).unwrap(), serialize(&json!({"debug": true})));
        assert_eq!(read(&link).revision.as_deref(), Some(out.revision.as_str()));
        let leftovers = |dir: &Path| fs::read_dir(dir).unwrap().count();
        assert_eq!(
            (leftovers(&real_dir), leftovers(&link_dir)),
            (1, 1),
            "no temp or lock left"
        );
        // A dangling link is refused, not replaced by a regular file.
        fs::remove_file(&target).unwrap();
        let e = save(&link, &json!({}), None).unwrap_err();
        assert_eq!(e.code, "config-write-failed");
        assert_eq!(
            e.message,
            "Could not save: the configuration file is a symbolic link whose target cannot be resolved (ENOENT); fix or remove the link, then run /pct reload."
        );
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(!target.exists());
    }

    /// Sets a path's modification time `secs` into the past.
    fn age(path: &Path, secs: u64) {
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        fs::File::open(path).unwrap().set_modified(t).unwrap();
    }

    #[test]
    fn a_save_sweeps_leftovers_of_killed_savers_only() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        let stage = |name: &str, owner: Option<&str>| {
            let s = d.path().join(name);
            fs::create_dir(&s).unwrap();
            if let Some(o) = owner {
                fs::write(s.join("owner"), o).unwrap();
            }
            s
        };
        let dead = r#"{"pid":2147483000,"token":"dead"}"#;
        let dead_stage = stage(".c.json.lock.stage-a", Some(dead));
        let dead_reclaim = stage(".c.json.lock.reclaim.stage-b", Some(dead));
        let old_empty = stage(".c.json.lock.stage-c", None);
        age(&old_empty, 60);
        let fresh_empty = stage(".c.json.lock.stage-d", None);
        // A live saver's stage: its pid runs and it holds the OS lock on its owner record, however old.
        let live = stage(".c.json.lock.stage-e", None);
        let live_rec = lock::OwnerRecord {
            pid: std::process::id(),
            token: "live".into(),
        };
        let held = lock::tests_support::write_owner(&live.join("owner"), &live_rec);
        age(&live, 60);
        let stale_tmp = d.path().join(format!("{}old", tmp_prefix()));
        fs::write(&stale_tmp, "half").unwrap();
        age(&stale_tmp, 60);
        let fresh_tmp = d.path().join(format!("{}new", tmp_prefix()));
        fs::write(&fresh_tmp, "half").unwrap();
        let user_file = d.path().join(".c.json.lock.stage-notes.txt");
        fs::write(&user_file, "mine").unwrap();
        save(&p, &json!({}), None).unwrap();
        for gone in [&dead_stage, &dead_reclaim, &old_empty, &stale_tmp] {
            assert!(!gone.exists(), "{} should be swept", gone.display());
        }
        for kept in [&fresh_empty, &live, &fresh_tmp, &user_file] {
            assert!(kept.exists(), "{} must be kept", kept.display());
        }
        drop(held);
    }

    /// The docs/config.md "Reads" table lists [`ReadCode::ALL`] in order, and its "Save codes" table
    /// [`SaveCode::ALL`].
    #[test]
    fn the_doc_tables_are_all_codes_in_order() {
        use crate::codes::check::doc_table;
        let doc = include_str!("../../docs/config.md");
        assert_eq!(doc_table(doc, "## Reads"), ReadCode::ALL.map(ReadCode::as_str));
        assert_eq!(doc_table(doc, "### Save codes"), SaveCode::ALL.map(SaveCode::as_str));
    }

    /// index.d.ts's code unions (napi `ts_type` in src/bind/config.rs and src/bind/rules.rs) are the enums: a read's
    /// code (in the read result and in the status snapshot's config error), and a save's plus the contained panic.
    #[test]
    fn index_d_ts_unions_are_all_codes() {
        use crate::codes::check::{dts_union, with_extra};
        let dts = include_str!("../../index.d.ts");
        let read = with_extra(ReadCode::ALL.map(ReadCode::as_str), &[]);
        assert_eq!(dts_union(dts, "ConfigReadResult", "code?"), read);
        assert_eq!(dts_union(dts, "RulesConfigError", "code"), read);
        assert_eq!(
            dts_union(dts, "ConfigSaveFailure", "code"),
            with_extra(SaveCode::ALL.map(SaveCode::as_str), &["internal-panic"])
        );
    }
}
