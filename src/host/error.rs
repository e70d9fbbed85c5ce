//! Failures of the host tools: a stable code from docs/spec/host-tools.md ("Common to every tool") plus a message
//! that names the model's next step.

use std::fmt;

crate::codes::error_codes! {
    /// Every code a host tool fails with (docs/host.md "Codes"). The host tools keep the seed's SCREAMING_SNAKE
    /// spelling (docs/spec/host-tools.md "Common to every tool"): models and hooks written against Claude-Code-style
    /// tools match on these exact words, so they differ on purpose from the kebab-case of the Codex tools.
    pub enum HostCode {
        /// An argument is missing, malformed or out of range.
        InvalidArgument = "INVALID_ARGUMENT" => "fix the argument the message names and call again",
        /// A path is outside the session roots and has no external-path approval.
        PathOutsideWorkspace = "PATH_OUTSIDE_WORKSPACE" => "use a path inside the workspace, or ask the user to approve the external path",
        /// A path is under a sensitive path (credentials, keys, browser profiles; docs/permissions.md "Sensitive
        /// paths"): refused in every permission mode.
        SensitivePath = "SENSITIVE_PATH" => "leave the path alone; ask the user to do what is needed there",
        /// The named file, directory or background task does not exist.
        NotFound = "NOT_FOUND" => "check the path (or task id) with Glob (or TaskList), then call again",
        /// The operation failed for a reason outside the model's arguments (I/O error, changed target).
        ToolFailed = "TOOL_FAILED" => "read the cause in the message; re-read the target before trying again",
        /// The operation ran past its time budget and was stopped.
        ToolTimeout = "TOOL_TIMEOUT" => "narrow the call (a smaller window, path or pattern) or give it a longer timeout",
        /// A file is over a size limit of the tool (Write and Edit read the file whole, docs/host.md "Large files").
        FileTooLarge = "FILE_TOO_LARGE" => "inspect or change the file with Bash instead",
        /// Bash: the shell could not be started because it does not exist (docs/host.md "Bash").
        ShellNotFound = "SHELL_NOT_FOUND" => "install bash or point Pi's shell setting at an existing shell",
        /// A cap on concurrent work was reached (background tasks: per session or process-wide).
        HostOverloaded = "HOST_OVERLOADED" => "wait for a background task with TaskWait or stop one with TaskStop, then call again",
        /// Edit: no tag was given (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit").
        EditTagRequired = "EDIT_TAG_REQUIRED" => "pass the tag from the file's `[path#TAG]` header",
        /// Edit: the tag is stale and the edit could not be carried over to the live file.
        EditTagMismatch = "EDIT_TAG_MISMATCH" => "redo the edit against the current lines with the live tag, or Read the file",
        /// Edit: the tag is not the live file's and no shown version of the file has it.
        EditTagUnknown = "EDIT_TAG_UNKNOWN" => "Read the file and use its tag",
        /// Edit: an anchor is on a line the model was never shown.
        EditLinesUnseen = "EDIT_LINES_UNSEEN" => "send the same Edit again, or Read those lines first",
        /// Edit: the operations text does not parse.
        EditParseFailed = "EDIT_PARSE_FAILED" => "write the operations in the form the message shows",
        /// Edit: a line number or range is outside the file, reversed, or overlaps another operation.
        EditRangeInvalid = "EDIT_RANGE_INVALID" => "use a range inside the file, or merge the overlapping operations",
        /// Edit: a block locator (`N*`) was used; block resolution does not exist yet.
        EditBlockUnresolved = "EDIT_BLOCK_UNRESOLVED" => "use the plain `N.=M` range",
        /// Edit: a paste names a register nothing was captured into.
        EditRegisterEmpty = "EDIT_REGISTER_EMPTY" => "CUT into the register before pasting it",
        /// Edit: a paste names a register captured more than once in the call.
        EditRegisterAmbiguous = "EDIT_REGISTER_AMBIGUOUS" => "give each CUT its own register name",
        /// Edit: a `+` row holds a carriage return that is not its line ending (it would land as a lone CR).
        EditBareCr = "EDIT_BARE_CR" => "drop the `\\r`, or split the row",
        /// Edit: the result is byte-for-byte the current file.
        EditNoChange = "EDIT_NO_CHANGE" => "check the `+` rows: the result equals the file",
        /// Edit: the call passes a size limit (ops text, op count, expanded lines, register capture).
        EditAmplificationLimit = "EDIT_AMPLIFICATION_LIMIT" => "split the change into several Edits, or use Write",
    }
}

/// An argument is missing, malformed or out of range.
pub const INVALID_ARGUMENT: HostCode = HostCode::InvalidArgument;
/// A path is outside the session roots and has no external-path approval.
pub const PATH_OUTSIDE_WORKSPACE: HostCode = HostCode::PathOutsideWorkspace;
/// A path is under a sensitive path: refused in every permission mode.
pub const SENSITIVE_PATH: HostCode = HostCode::SensitivePath;
/// The named file or directory does not exist.
pub const NOT_FOUND: HostCode = HostCode::NotFound;
/// The operation failed for a reason outside the model's arguments (I/O error, changed target).
pub const TOOL_FAILED: HostCode = HostCode::ToolFailed;
/// The operation ran past its time budget and was stopped.
pub const TOOL_TIMEOUT: HostCode = HostCode::ToolTimeout;
/// A file is over a size limit of the tool.
pub const FILE_TOO_LARGE: HostCode = HostCode::FileTooLarge;
/// Edit: no tag was given.
pub const EDIT_TAG_REQUIRED: HostCode = HostCode::EditTagRequired;
/// Edit: the tag is stale and the edit could not be carried over.
pub const EDIT_TAG_MISMATCH: HostCode = HostCode::EditTagMismatch;
/// Edit: the tag is not the live file's and no shown version has it.
pub const EDIT_TAG_UNKNOWN: HostCode = HostCode::EditTagUnknown;
/// Edit: an anchor is on a line the model was never shown.
pub const EDIT_LINES_UNSEEN: HostCode = HostCode::EditLinesUnseen;
/// Edit: the operations text does not parse.
pub const EDIT_PARSE_FAILED: HostCode = HostCode::EditParseFailed;
/// Edit: a line number or range is outside the file, reversed, or overlapping.
pub const EDIT_RANGE_INVALID: HostCode = HostCode::EditRangeInvalid;
/// Edit: a block locator (`N*`) was used.
pub const EDIT_BLOCK_UNRESOLVED: HostCode = HostCode::EditBlockUnresolved;
/// Edit: a paste names an empty register.
pub const EDIT_REGISTER_EMPTY: HostCode = HostCode::EditRegisterEmpty;
/// Edit: a paste names a register captured more than once.
pub const EDIT_REGISTER_AMBIGUOUS: HostCode = HostCode::EditRegisterAmbiguous;
/// Edit: a `+` row holds a bare carriage return.
pub const EDIT_BARE_CR: HostCode = HostCode::EditBareCr;
/// Edit: the result is byte-for-byte the current file.
pub const EDIT_NO_CHANGE: HostCode = HostCode::EditNoChange;
/// Edit: the call passes a size limit.
pub const EDIT_AMPLIFICATION_LIMIT: HostCode = HostCode::EditAmplificationLimit;

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
    pub code: HostCode,
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
    pub fn new(code: HostCode, message: impl Into<String>) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::codes::check::{doc_table, dts_union, with_extra};

    /// The rows of the docs/host.md "Codes" table are exactly [`HostCode::ALL`], in order.
    #[test]
    fn all_matches_the_doc_table() {
        let all: Vec<&str> = HostCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(doc_table(include_str!("../../docs/host.md"), "### Codes"), all);
        for c in HostCode::ALL {
            assert!(!c.next_step().is_empty());
            assert_eq!(HostCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(HostCode::parse("PATCH_FAILED"), None);
    }

    /// The literal unions of index.d.ts (napi `ts_type` in src/bind/host.rs, src/bind/host_edit.rs) are
    /// [`HostCode::ALL`] plus the binding-level extras, so the glue's compares are typed.
    #[test]
    fn index_d_ts_unions_are_all_codes() {
        let dts = include_str!("../../index.d.ts");
        let all = HostCode::ALL.map(HostCode::as_str);
        assert_eq!(
            dts_union(dts, "HostFailure", "code"),
            with_extra(all, &["AGENT_LIMIT", "internal-panic"])
        );
        assert_eq!(
            dts_union(dts, "HostEditFailure", "code"),
            with_extra(all, &["internal-panic"])
        );
    }
}
