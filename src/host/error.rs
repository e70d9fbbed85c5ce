//! Failures of the host tools: a stable code from docs/spec/host-tools.md ("Common to every tool") plus a message
//! that names the model's next step.

use std::fmt;

/// An argument is missing, malformed or out of range.
pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
/// A path is outside the session roots and has no external-path approval.
pub const PATH_OUTSIDE_WORKSPACE: &str = "PATH_OUTSIDE_WORKSPACE";
/// The named file or directory does not exist.
pub const NOT_FOUND: &str = "NOT_FOUND";
/// The operation failed for a reason outside the model's arguments (I/O error, changed target).
pub const TOOL_FAILED: &str = "TOOL_FAILED";

/// A host-tool failure. `suggestion` carries a structured next call when there is one (Read of a directory
/// suggests Glob, docs/spec/host-tools.md "Paths").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    pub code: &'static str,
    pub message: String,
    pub suggestion: Option<Suggestion>,
}

/// A structured follow-up call the model can make instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub tool: &'static str,
    pub path: String,
    pub pattern: String,
}

impl HostError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        HostError {
            code,
            message: message.into(),
            suggestion: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(INVALID_ARGUMENT, message)
    }
    /// An I/O failure on `shown`, mapped to NOT_FOUND when the file is missing.
    pub fn io(shown: &str, e: &std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            Self::new(
                NOT_FOUND,
                format!("{shown} does not exist. Check the path with Glob, then call again with an existing path."),
            )
        } else {
            Self::new(
                TOOL_FAILED,
                format!("could not access {shown}: {e}. Check the path and its permissions, then call again."),
            )
        }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for HostError {}
