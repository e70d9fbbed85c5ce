//! Output recovery files (docs/spec/toolkit.md §6), shared by Shell Sessions and Code Mode.
//!
//! A [`Capture`] receives every decoded byte of a source (shell stdout/stderr, a cell's emitted text, ...) *before*
//! the preview budget throws anything away. It keeps the text in memory until a file is actually needed — a yield
//! (the call returns while the source still runs), a spill (the in-memory capture outgrows its bound) or a lossy
//! preview — and then creates, exclusively and with mode 0600, a UUID-named file under the OS temp dir and writes
//! everything captured so far followed by all later output. Small complete results never touch the disk.
//!
//! A [`RecoveryStore`] is the owner: it remembers the files this process created (with their device/inode
//! identity) and deletes exactly those at a real `session_shutdown` ([`RecoveryStore::delete_files`]).
//!
//! Over 600 lines only with its inline tests (the code itself is about 460 lines).

use parking_lot::Mutex;
use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes a capture keeps in memory before it spills to a file. Any larger output cannot fit the largest preview
/// (262,144 bytes) anyway, so its preview will be lossy and the file is needed regardless.
pub const DEFAULT_SPILL_BYTES: usize = 262_144;

/// `recovery.state` as reported to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryState {
    /// The source is still producing; the file grows.
    Capturing,
    /// The source ended and every captured byte reached the file.
    Complete,
    /// Some bytes reached the file, the evidence is incomplete (see `reason`).
    Partial,
    /// No usable file (see `reason`).
    Unavailable,
}

/// `recovery.reason`: why a capture is partial or unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryReason {
    /// Creating or writing the file failed (disk full, the temp directory missing or not writable, ...).
    IoError,
    /// The source itself failed to read.
    SourceError,
    /// The file vanished after it was created.
    Missing,
    /// The owner's byte cap for recovery files was reached (Bash background tasks, docs/host.md "Background
    /// tasks"); the file holds the output up to the cap.
    CapReached,
    /// The owner closed (session shutdown) while the source was still capturing.
    OwnerClosed,
}

/// The `recovery` snapshot in result details.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoverySnapshot {
    /// capturing | complete | partial | unavailable.
    pub state: RecoveryState,
    /// Absolute path of the file, when one exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Bytes confirmed written to the file.
    pub bytes: u64,
    /// Bytes handed to the capture (committed), written or not.
    pub captured_bytes: u64,
    /// Why the evidence is incomplete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<RecoveryReason>,
    /// With `io-error`: the operating system's message (e.g. `No space left on device (os error 28)`) and where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RecoverySnapshot {
    /// The human lines for tool result text: the facts, then one line saying exactly what the file holds (the
    /// model must not be told the full output is saved when a write was partial or failed; docs/shell.md).
    pub fn render_lines(&self) -> Vec<String> {
        let state = match self.state {
            RecoveryState::Capturing => "capturing",
            RecoveryState::Complete => "complete",
            RecoveryState::Partial => "partial",
            RecoveryState::Unavailable => "unavailable",
        };
        let (b, c) = (self.bytes, self.captured_bytes);
        let mut line = match &self.path {
            Some(p) => format!("recovery: {state}, {b} of {c} bytes written to {p}"),
            None => format!("recovery: {state}, no file ({c} bytes captured)"),
        };
        if let Some(r) = self.reason {
            let r = serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            match &self.error {
                Some(e) => line.push_str(&format!(" (reason: {r}: {e})")),
                None => line.push_str(&format!(" (reason: {r})")),
            }
        }
        let read = "read it by line range instead of re-running the command.";
        let held = if b == 0 {
            format!("The file holds none of the {c} captured bytes")
        } else {
            format!("The file holds only the first {b} of {c} captured bytes")
        };
        let hint = match (self.state, self.reason) {
            (RecoveryState::Complete, _) => format!("The full output is in that file: {read}"),
            (RecoveryState::Capturing, _) => {
                format!("The output so far is in that file and it grows while the command runs: {read}")
            }
            (RecoveryState::Partial, Some(RecoveryReason::SourceError)) => format!(
                "Reading the output failed part-way: the file holds the {b} bytes read before that, later output was \
                 lost. Read the file by line range; re-run the command only if the missing end matters."
            ),
            (RecoveryState::Partial, Some(RecoveryReason::CapReached)) => format!(
                "{held}: the recovery-file cap was reached, so later output is not saved (the kept tail above still \
                 follows it). Read the file by line range; send long output to a file of your own if you need all \
                 of it."
            ),
            (RecoveryState::Partial, Some(RecoveryReason::OwnerClosed)) => format!(
                "{held}: the session ended while the source was still running and nothing after that was saved."
            ),
            (RecoveryState::Partial, _) => format!(
                "{held}: writing the rest failed, so the output after that point is not saved anywhere. Read what \
                 is there by line range; re-run the command only if the missing part matters."
            ),
            (RecoveryState::Unavailable, Some(RecoveryReason::Missing)) => {
                "That file was deleted: nothing beyond the preview shown here is saved.".to_string()
            }
            (RecoveryState::Unavailable, _) => {
                "No recovery file could be created: nothing beyond the preview shown here is saved.".to_string()
            }
        };
        vec![line, hint]
    }
}

#[derive(Debug)]
struct OwnedFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
    /// Birth time where the filesystem reports one: an inode number can be reused by a later, foreign file.
    born: Option<std::time::SystemTime>,
}

#[derive(Debug, Default)]
struct StoreInner {
    files: Vec<OwnedFile>,
    closed: bool,
}

/// The owner of recovery files for one feature (shell or code) in this process.
#[derive(Debug, Clone)]
pub struct RecoveryStore {
    prefix: String,
    dir: Option<PathBuf>,
    spill_bytes: usize,
    inner: Arc<Mutex<StoreInner>>,
}

impl RecoveryStore {
    /// A store whose files are named `pi-codex-toolkit-<prefix>-<uuid>.log` under the OS temp dir.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_string(),
            dir: None,
            spill_bytes: DEFAULT_SPILL_BYTES,
            inner: Default::default(),
        }
    }

    /// Same, with an explicit directory and spill bound (tests).
    pub fn with_options(prefix: &str, dir: Option<PathBuf>, spill_bytes: usize) -> Self {
        Self {
            prefix: prefix.to_string(),
            dir,
            spill_bytes,
            inner: Default::default(),
        }
    }

    /// A new, empty capture owned by this store (no file yet).
    pub fn capture(&self) -> Capture {
        Capture {
            store: self.clone(),
            buffer: Vec::new(),
            file: None,
            path: None,
            written: 0,
            captured: 0,
            finished: false,
            failed: None,
            create_failed: false,
            error: None,
        }
    }

    /// Number of files this store created and has not deleted.
    pub fn file_count(&self) -> usize {
        self.inner.lock().files.len()
    }

    /// Paths of the files this store created (diagnostics and tests).
    pub fn file_paths(&self) -> Vec<String> {
        self.inner
            .lock()
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect()
    }

    /// Marks the owner closed: captures still running report `owner-closed` and stop writing.
    pub fn close(&self) {
        self.inner.lock().closed = true;
    }

    /// Deletes exactly the files this store created, and only while the path still names the same file
    /// (device, inode and birth time), so a file someone else put at that path is never removed. Returns how many were deleted.
    pub fn delete_files(&self) -> usize {
        use std::os::unix::fs::MetadataExt;
        let files = std::mem::take(&mut self.inner.lock().files);
        let mut deleted = 0;
        for f in files {
            if let Ok(meta) = std::fs::symlink_metadata(&f.path) {
                if meta.dev() == f.dev
                    && meta.ino() == f.ino
                    && meta.created().ok() == f.born
                    && std::fs::remove_file(&f.path).is_ok()
                {
                    deleted += 1;
                }
            }
        }
        deleted
    }

    fn closed(&self) -> bool {
        self.inner.lock().closed
    }

    /// The directory new files go to (the OS temp dir unless a test chose one).
    fn dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(std::env::temp_dir)
    }

    fn create_file(&self) -> std::io::Result<(File, PathBuf)> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let dir = self.dir();
        let path = dir.join(format!("pi-codex-toolkit-{}-{}.log", self.prefix, uuid::Uuid::new_v4()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let meta = file.metadata()?;
        self.inner.lock().files.push(OwnedFile {
            path: path.clone(),
            dev: meta.dev(),
            ino: meta.ino(),
            born: meta.created().ok(),
        });
        // deleted by the per-process watchdog if Node ends before a session shutdown does (docs/shell.md)
        crate::shell::watchdog::add_file(&path);
        Ok((file, path))
    }
}

/// One source's capture: in memory until a file is required, then a private file.
#[derive(Debug)]
pub struct Capture {
    store: RecoveryStore,
    buffer: Vec<u8>,
    file: Option<File>,
    path: Option<PathBuf>,
    written: u64,
    captured: u64,
    finished: bool,
    failed: Option<RecoveryReason>,
    create_failed: bool,
    /// The OS error of a failed create or write, with the path or directory.
    error: Option<String>,
}

impl Capture {
    /// Captures decoded text (called before any preview limit applies). Spills to a file past the bound.
    pub fn append(&mut self, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        self.captured += text.len() as u64;
        if self.failed.is_some() || self.create_failed {
            return;
        }
        if self.file.is_some() {
            self.write(text);
            return;
        }
        self.buffer.extend_from_slice(text);
        if self.buffer.len() > self.store.spill_bytes {
            self.require_file();
        }
    }

    /// Ensures the file exists (a yield or a lossy preview needs it) and holds everything captured so far.
    pub fn require_file(&mut self) {
        // `path` (not `file`): after `finish` the handle is closed but the file exists and must not be replaced.
        if self.path.is_some() || self.create_failed || self.failed.is_some() {
            return;
        }
        if self.store.closed() {
            self.failed = Some(RecoveryReason::OwnerClosed);
            return;
        }
        match self.store.create_file() {
            Ok((file, path)) => {
                self.file = Some(file);
                self.path = Some(path);
                let buf = std::mem::take(&mut self.buffer);
                self.write(&buf);
            }
            Err(e) => {
                self.create_failed = true;
                self.error = Some(format!("creating a file in {}: {e}", self.store.dir().display()));
                self.buffer = Vec::new();
            }
        }
    }

    /// Whether a file was (or tried to be) created — i.e. the result must report `recovery`.
    pub fn has_file(&self) -> bool {
        self.file.is_some() || self.path.is_some() || self.create_failed
    }

    /// The source ended normally: close the file; a capture without a file drops its buffer only when the
    /// caller decides no file is needed (see [`Capture::discard_buffer`]).
    pub fn finish(&mut self) {
        self.finished = true;
        if let Some(f) = self.file.as_mut() {
            let _ = f.flush();
        }
        self.file = None;
    }

    /// The source failed to read: what was captured stays, the evidence is marked incomplete.
    pub fn fail_source(&mut self) {
        if self.failed.is_none() {
            self.failed = Some(RecoveryReason::SourceError);
        }
    }

    /// The owner's byte cap was reached: nothing more is written (later appends are only counted) and the
    /// evidence is marked `cap-reached`.
    pub fn stop_at_cap(&mut self) {
        if self.failed.is_none() {
            self.failed = Some(RecoveryReason::CapReached);
        }
    }

    /// Frees the in-memory buffer of a capture that never needed a file (its output was fully delivered).
    pub fn discard_buffer(&mut self) {
        if self.file.is_none() {
            self.buffer = Vec::new();
        }
    }

    /// Total bytes handed to the capture.
    pub fn captured_bytes(&self) -> u64 {
        self.captured
    }

    /// The `recovery` snapshot, or `None` when no file was needed.
    pub fn snapshot(&self) -> Option<RecoverySnapshot> {
        if !self.has_file() {
            return None;
        }
        let path = self.path.as_ref().map(|p| p.display().to_string());
        if self.create_failed {
            return Some(RecoverySnapshot {
                state: RecoveryState::Unavailable,
                path: None,
                bytes: 0,
                captured_bytes: self.captured,
                reason: Some(RecoveryReason::IoError),
                error: self.error.clone(),
            });
        }
        if let Some(p) = &self.path {
            if std::fs::symlink_metadata(p).is_err() {
                return Some(RecoverySnapshot {
                    state: RecoveryState::Unavailable,
                    path,
                    bytes: self.written,
                    captured_bytes: self.captured,
                    reason: Some(RecoveryReason::Missing),
                    error: None,
                });
            }
        }
        let mut reason = self.failed;
        if reason.is_none() && !self.finished && self.store.closed() {
            reason = Some(RecoveryReason::OwnerClosed);
        }
        let state = match reason {
            Some(_) => RecoveryState::Partial,
            None if self.finished && self.written == self.captured => RecoveryState::Complete,
            None if self.finished => RecoveryState::Partial,
            None => RecoveryState::Capturing,
        };
        Some(RecoverySnapshot {
            state,
            path,
            bytes: self.written,
            captured_bytes: self.captured,
            reason,
            error: if reason == Some(RecoveryReason::IoError) {
                self.error.clone()
            } else {
                None
            },
        })
    }

    fn write(&mut self, text: &[u8]) {
        if self.store.closed() {
            self.failed = Some(RecoveryReason::OwnerClosed);
            self.file = None;
            return;
        }
        let Some(f) = self.file.as_mut() else { return };
        // write (not write_all) so a short write before a failure (disk full) is counted exactly
        let mut rest = text;
        while !rest.is_empty() {
            match f.write(rest) {
                Ok(0) => {
                    self.fail_write(std::io::Error::from(std::io::ErrorKind::WriteZero));
                    return;
                }
                Ok(n) => {
                    self.written += n as u64;
                    rest = &rest[n..];
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail_write(e);
                    return;
                }
            }
        }
    }

    fn fail_write(&mut self, e: std::io::Error) {
        self.failed = Some(RecoveryReason::IoError);
        self.file = None;
        let path = self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        self.error = Some(format!("writing {path}: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn store(spill: usize) -> (tempfile::TempDir, RecoveryStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = RecoveryStore::with_options("test", Some(dir.path().to_path_buf()), spill);
        (dir, s)
    }

    #[test]
    fn no_file_until_required() {
        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.append(b"hello");
        c.finish();
        assert!(c.snapshot().is_none());
        assert_eq!(s.file_count(), 0);
    }

    #[test]
    fn yield_creates_private_file_with_prefix() {
        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.append(b"early ");
        c.require_file();
        c.append(b"late");
        let snap = c.snapshot().unwrap();
        assert_eq!(snap.state, RecoveryState::Capturing);
        c.finish();
        let snap = c.snapshot().unwrap();
        assert_eq!(snap.state, RecoveryState::Complete);
        assert_eq!(snap.bytes, 10);
        assert_eq!(snap.captured_bytes, 10);
        let p = snap.path.unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "early late");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(p.contains("pi-codex-toolkit-test-"));
        assert_eq!(s.delete_files(), 1);
        assert!(!std::path::Path::new(&p).exists());
    }

    #[test]
    fn spill_past_bound() {
        let (_d, s) = store(8);
        let mut c = s.capture();
        c.append(b"1234");
        assert_eq!(s.file_count(), 0);
        c.append(b"56789");
        assert_eq!(s.file_count(), 1);
        c.finish();
        c.require_file(); // a lossy terminal read after the source ended keeps the same file
        let snap = c.snapshot().unwrap();
        assert_eq!(snap.bytes, 9);
        assert_eq!(std::fs::read_to_string(snap.path.unwrap()).unwrap(), "123456789");
        assert_eq!(s.file_count(), 1);
    }

    #[test]
    fn missing_file_and_foreign_file_not_deleted() {
        let (_d, s) = store(8);
        let mut c = s.capture();
        c.require_file();
        c.finish();
        let p = c.snapshot().unwrap().path.unwrap();
        std::fs::remove_file(&p).unwrap();
        let snap = c.snapshot().unwrap();
        assert_eq!(
            (snap.state, snap.reason),
            (RecoveryState::Unavailable, Some(RecoveryReason::Missing))
        );
        // someone else's file at the same path is left alone
        std::fs::write(&p, "theirs").unwrap();
        assert_eq!(s.delete_files(), 0);
        assert!(std::path::Path::new(&p).exists());
    }

    #[test]
    fn unavailable_when_dir_missing_and_owner_closed() {
        let s = RecoveryStore::with_options("t", Some("/nonexistent/dir".into()), 8);
        let mut c = s.capture();
        c.append(b"x");
        c.require_file();
        let snap = c.snapshot().unwrap();
        assert_eq!(
            (snap.state, snap.reason),
            (RecoveryState::Unavailable, Some(RecoveryReason::IoError))
        );

        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.require_file();
        c.append(b"a");
        s.close();
        c.append(b"b");
        let snap = c.snapshot().unwrap();
        assert_eq!(
            (snap.state, snap.reason),
            (RecoveryState::Partial, Some(RecoveryReason::OwnerClosed))
        );
        assert_eq!((snap.bytes, snap.captured_bytes), (1, 2));
    }

    #[test]
    fn disk_full_part_way_says_exactly_what_was_saved() {
        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.require_file();
        c.append(b"saved\n");
        // the same file handle now reports ENOSPC, as a full disk does (the kernel's /dev/full)
        c.file = Some(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
        c.append(b"lost\n");
        c.append(b"also lost\n");
        c.finish();
        let snap = c.snapshot().unwrap();
        assert_eq!(
            (snap.state, snap.reason, snap.bytes, snap.captured_bytes),
            (RecoveryState::Partial, Some(RecoveryReason::IoError), 6, 21)
        );
        assert!(
            snap.error.as_deref().unwrap().contains("No space left on device"),
            "{snap:?}"
        );
        let text = snap.render_lines().join("\n");
        assert!(!text.contains("full output"), "{text}");
        assert!(text.contains("holds only the first 6 of 21 captured bytes"), "{text}");
        assert!(text.contains("No space left on device"), "{text}");
        assert_eq!(std::fs::read_to_string(snap.path.unwrap()).unwrap(), "saved\n");
        let v = serde_json::to_value(c.snapshot().unwrap()).unwrap();
        assert_eq!(v["reason"], "io-error");
        assert!(v["error"].as_str().unwrap().contains("os error 28"));
    }

    #[test]
    fn missing_temp_dir_and_other_states_never_claim_the_full_output() {
        let s = RecoveryStore::with_options("t", Some("/nonexistent/dir".into()), 8);
        let mut c = s.capture();
        c.append(b"0123456789");
        let text = c.snapshot().unwrap().render_lines().join("\n");
        assert!(text.starts_with("recovery: unavailable, no file (10 bytes captured) (reason: io-error: creating a file in /nonexistent/dir: No such file or directory"), "{text}");
        assert!(text.contains("nothing beyond the preview"), "{text}");
        // owner closed mid-capture and a source read error: partial, each says what the file holds
        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.require_file();
        c.append(b"ab");
        s.close();
        c.append(b"cd");
        let text = c.snapshot().unwrap().render_lines().join("\n");
        assert!(
            text.contains("holds only the first 2 of 4") && !text.contains("full output"),
            "{text}"
        );
        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.require_file();
        c.append(b"ab");
        c.fail_source();
        c.finish();
        let text = c.snapshot().unwrap().render_lines().join("\n");
        assert!(
            text.contains("Reading the output failed") && !text.contains("full output"),
            "{text}"
        );
        // only a complete file is called the full output
        let (_d, s) = store(1024);
        let mut c = s.capture();
        c.require_file();
        c.append(b"ab");
        assert!(c.snapshot().unwrap().render_lines()[1].starts_with("The output so far is in that file"));
        c.finish();
        assert!(c.snapshot().unwrap().render_lines()[1].starts_with("The full output is in that file"));
        assert_eq!(s.delete_files(), 1);
    }
}
