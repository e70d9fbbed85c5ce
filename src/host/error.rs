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
/// The operation ran past its time budget and was stopped.
pub const TOOL_TIMEOUT: &str = "TOOL_TIMEOUT";

/// A time budget for a walk (Glob, Grep): checked per directory entry, so a search of a huge tree stops with
/// TOOL_TIMEOUT instead of running on after Pi gave up on the call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadline {
    pub at: Option<std::time::Instant>,
    /// The budget as given, for the message.
    pub budget_ms: u64,
}

impl Deadline {
    pub fn none() -> Self {
        Self::default()
    }
    pub fn after_ms(ms: u64) -> Self {
        Deadline {
            at: Some(std::time::Instant::now() + std::time::Duration::from_millis(ms)),
            budget_ms: ms,
        }
    }
    pub fn passed(&self) -> bool {
        self.at.is_some_and(|t| std::time::Instant::now() >= t)
    }
    /// The TOOL_TIMEOUT failure of `tool`, naming the budget and what to do instead.
    pub fn error(&self, tool: &str) -> HostError {
        HostError::new(
            TOOL_TIMEOUT,
            format!(
                "{tool} stopped after its {} ms budget. Narrow the path or the pattern (or pass a glob), or give the \
                 call a longer timeout.",
                self.budget_ms
            ),
        )
    }
}

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
