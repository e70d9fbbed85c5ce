//! Output recovery for code cells (toolkit.md §6): a private file created lazily, exclusively and with mode
//! 0600 under the OS temp dir when a yield, a spill or a lossy preview needs it. It receives the emitted text
//! from the beginning (a prefix consumed by an earlier read stays recoverable), then a cut result or error.
//! Files are deleted only at a real session shutdown, and only the ones this process created.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

/// The snapshot shown to the model and in details.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecoverySnapshot {
    /// capturing | complete | partial | unavailable
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Bytes the cell produced for the file (text, plus cut result/error).
    pub bytes: u64,
    /// Bytes actually written to the file.
    pub captured_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One cell's recovery file.
pub struct Recovery {
    path: PathBuf,
    file: Option<File>,
    bytes: u64,
    captured: u64,
    reason: Option<&'static str>,
    complete: bool,
}

impl Recovery {
    /// Creates the file exclusively (mode 0600) with `prefix` (text emitted so far). On failure the snapshot
    /// says `unavailable` with `io-error`.
    pub fn create(prefix: &str, prefix_complete: bool) -> Recovery {
        let path = std::env::temp_dir().join(format!("pct-code-{}.txt", uuid::Uuid::new_v4()));
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut r = Recovery { path, file: None, bytes: 0, captured: 0, reason: None, complete: false };
        match opts.open(&r.path) {
            Ok(f) => r.file = Some(f),
            Err(_) => r.reason = Some("io-error"),
        }
        if !prefix_complete && r.reason.is_none() {
            r.reason = Some("overload");
        }
        r.write(prefix);
        r
    }

    /// Appends text.
    pub fn write(&mut self, text: &str) {
        self.bytes += text.len() as u64;
        if let Some(f) = self.file.as_mut() {
            match f.write_all(text.as_bytes()) {
                Ok(()) => self.captured += text.len() as u64,
                Err(_) => {
                    self.reason = Some("io-error");
                    self.file = None;
                }
            }
        }
    }

    /// Marks the capture finished (the cell reached a terminal state).
    pub fn finish(&mut self) {
        if let Some(f) = self.file.as_mut() {
            let _ = f.flush();
        }
        self.file = None;
        self.complete = true;
    }

    /// The file's path (for deletion at shutdown).
    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    pub fn snapshot(&self) -> RecoverySnapshot {
        let exists = self.reason != Some("io-error") || self.captured > 0;
        let state = if !exists {
            "unavailable"
        } else if self.reason.is_some() || self.captured < self.bytes {
            "partial"
        } else if self.complete {
            "complete"
        } else {
            "capturing"
        };
        RecoverySnapshot {
            state: state.into(),
            path: if exists { Some(self.path.to_string_lossy().into_owned()) } else { None },
            bytes: self.bytes,
            captured_bytes: self.captured,
            reason: self.reason.map(|s| s.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_is_private_and_captures_from_the_start() {
        let mut r = Recovery::create("early ", true);
        r.write("late");
        r.finish();
        let s = r.snapshot();
        assert_eq!(s.state, "complete");
        let p = s.path.unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "early late");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn lost_prefix_is_partial() {
        let mut r = Recovery::create("x", false);
        r.finish();
        assert_eq!(r.snapshot().state, "partial");
        assert_eq!(r.snapshot().reason.as_deref(), Some("overload"));
        std::fs::remove_file(r.path()).unwrap();
    }
}
