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

/// A file is over a size limit of the tool (Write and Edit read the file whole, docs/host.md "Large files").
pub const FILE_TOO_LARGE: &str = "FILE_TOO_LARGE";

/// Edit: no tag was given (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit").
pub const EDIT_TAG_REQUIRED: &str = "EDIT_TAG_REQUIRED";
/// Edit: the tag is stale and the edit could not be carried over to the live file.
pub const EDIT_TAG_MISMATCH: &str = "EDIT_TAG_MISMATCH";
/// Edit: the tag is not the live file's and no shown version of the file has it.
pub const EDIT_TAG_UNKNOWN: &str = "EDIT_TAG_UNKNOWN";
/// Edit: an anchor is on a line the model was never shown.
pub const EDIT_LINES_UNSEEN: &str = "EDIT_LINES_UNSEEN";
/// Edit: the operations text does not parse.
pub const EDIT_PARSE_FAILED: &str = "EDIT_PARSE_FAILED";
/// Edit: a line number or range is outside the file, reversed, or overlaps another operation.
pub const EDIT_RANGE_INVALID: &str = "EDIT_RANGE_INVALID";
/// Edit: a block locator (`N*`) was used; block resolution does not exist yet.
pub const EDIT_BLOCK_UNRESOLVED: &str = "EDIT_BLOCK_UNRESOLVED";
/// Edit: a paste names a register nothing was captured into.
pub const EDIT_REGISTER_EMPTY: &str = "EDIT_REGISTER_EMPTY";
/// Edit: a paste names a register captured more than once in the call.
pub const EDIT_REGISTER_AMBIGUOUS: &str = "EDIT_REGISTER_AMBIGUOUS";
/// Edit: a `+` row holds a carriage return that is not its line ending (it would land as a lone CR).
pub const EDIT_BARE_CR: &str = "EDIT_BARE_CR";
/// Edit: the result is byte-for-byte the current file.
pub const EDIT_NO_CHANGE: &str = "EDIT_NO_CHANGE";
/// Edit: the call passes a size limit (ops text, op count, expanded lines, register capture).
pub const EDIT_AMPLIFICATION_LIMIT: &str = "EDIT_AMPLIFICATION_LIMIT";

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
    /// The TOOL_TIMEOUT failure of a file tool (Read, Write, Edit) that ran out of time on `shown`.
    pub fn file_error(&self, tool: &str, shown: &str) -> HostError {
        HostError::new(
            TOOL_TIMEOUT,
            format!(
                "{tool} stopped after its {} ms budget while reading {shown} (a slow disk or mount); nothing was                  changed. Read a smaller window, or inspect the file with Bash.",
                self.budget_ms
            ),
        )
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
