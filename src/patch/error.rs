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
        PatchError {
            outcome: Outcome::NoChange,
            code,
            reason: reason.into(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_display() {
        let e = PatchError::no_change("aborted", "aborted");
        assert_eq!(e.to_string(), "apply_patch failed (no-change): aborted");
        assert_eq!(Outcome::PartialUnknown.label(), "partial; unknown");
    }
}
