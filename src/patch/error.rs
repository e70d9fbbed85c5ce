//! The one error type of the patch executor: what happened to the tree (outcome), a stable code, and a reason
//! that tells the model what to do next. `to_string()` is the exact text the model sees.

use std::fmt;

/// What a failed patch did to the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was written (every parse/preflight error, abort, a clean first-step failure).
    NoChange,
    /// Some operations were committed before a filesystem step failed; the rest are known unchanged.
    Partial,
    /// Nothing is known committed, but the failing operation left paths in a state that must be re-read.
    Unknown,
    /// Both: some operations committed and some paths are in an unknown state.
    PartialUnknown,
}

impl Outcome {
    /// The label inside `apply_patch failed (<label>)`.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::NoChange => "no-change",
            Outcome::Partial => "partial",
            Outcome::Unknown => "unknown",
            Outcome::PartialUnknown => "partial; unknown",
        }
    }
}

/// A failed patch. Codes are stable (see docs/patch.md); `reason` is the text after `apply_patch failed (...): `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    pub outcome: Outcome,
    pub code: &'static str,
    pub reason: String,
}

impl PatchError {
    /// An error that changed nothing.
    pub fn no_change(code: &'static str, reason: impl Into<String>) -> Self {
        PatchError { outcome: Outcome::NoChange, code, reason: reason.into() }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `(no-change): <reason>`; a commit report reads `(partial); committed: ...; reread: ...; ...`.
        let sep = if self.outcome == Outcome::NoChange { ":" } else { ";" };
        write!(f, "apply_patch failed ({}){sep} {}", self.outcome.label(), self.reason)
    }
}

impl std::error::Error for PatchError {}

/// The symbolic errno name of an I/O error (`EACCES`, `ENOSPC`, ...), for `filesystem commit failed (<CODE>)`.
pub fn errno_name(err: &std::io::Error) -> String {
    let Some(n) = err.raw_os_error() else {
        return match err.kind() {
            std::io::ErrorKind::NotFound => "ENOENT".into(),
            std::io::ErrorKind::PermissionDenied => "EACCES".into(),
            std::io::ErrorKind::AlreadyExists => "EEXIST".into(),
            _ => "EIO".into(),
        };
    };
    let name = match n {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EDQUOT => "EDQUOT",
        libc::ENOSYS => "ENOSYS",
        libc::ESTALE => "ESTALE",
        _ => return format!("ERRNO{n}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_display() {
        let e = PatchError::no_change("aborted", "aborted");
        assert_eq!(e.to_string(), "apply_patch failed (no-change): aborted");
        assert_eq!(Outcome::PartialUnknown.label(), "partial; unknown");
        assert_eq!(errno_name(&std::io::Error::from_raw_os_error(libc::ENOSPC)), "ENOSPC");
        assert_eq!(errno_name(&std::io::Error::from_raw_os_error(9999)), "ERRNO9999");
    }
}
