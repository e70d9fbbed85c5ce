//! Failures of the host tools: a stable code from docs/spec/host-tools.md ("Common to every tool") plus a message
//! that names the model's next step.

use std::fmt;

/// Every code a host tool fails with (docs/host.md "Codes"). The host tools keep the seed's SCREAMING_SNAKE
/// spelling (docs/spec/host-tools.md "Common to every tool"): models and hooks written against Claude-Code-style
/// tools match on these exact words, so they differ on purpose from the kebab-case of the Codex tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCode {
    /// An argument is missing, malformed or out of range.
    InvalidArgument,
    /// A path is outside the session roots and has no external-path approval.
    PathOutsideWorkspace,
    /// The named file, directory or background task does not exist.
    NotFound,
    /// The operation failed for a reason outside the model's arguments (I/O error, changed target).
    ToolFailed,
    /// The operation ran past its time budget and was stopped.
    ToolTimeout,
    /// A file is over a size limit of the tool (Write and Edit read the file whole, docs/host.md "Large files").
    FileTooLarge,
    /// Bash: the shell could not be started because it does not exist (docs/host.md "Bash").
    ShellNotFound,
    /// A cap on concurrent work was reached (background tasks: per session or process-wide).
    HostOverloaded,
    /// Edit: no tag was given (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit").
    EditTagRequired,
    /// Edit: the tag is stale and the edit could not be carried over to the live file.
    EditTagMismatch,
    /// Edit: the tag is not the live file's and no shown version of the file has it.
    EditTagUnknown,
    /// Edit: an anchor is on a line the model was never shown.
    EditLinesUnseen,
    /// Edit: the operations text does not parse.
    EditParseFailed,
    /// Edit: a line number or range is outside the file, reversed, or overlaps another operation.
    EditRangeInvalid,
    /// Edit: a block locator (`N*`) was used; block resolution does not exist yet.
    EditBlockUnresolved,
    /// Edit: a paste names a register nothing was captured into.
    EditRegisterEmpty,
    /// Edit: a paste names a register captured more than once in the call.
    EditRegisterAmbiguous,
    /// Edit: a `+` row holds a carriage return that is not its line ending (it would land as a lone CR).
    EditBareCr,
    /// Edit: the result is byte-for-byte the current file.
    EditNoChange,
    /// Edit: the call passes a size limit (ops text, op count, expanded lines, register capture).
    EditAmplificationLimit,
}

impl HostCode {
    /// Every code, in the order of the docs/host.md "Codes" table.
    pub const ALL: [HostCode; 20] = [
        HostCode::InvalidArgument,
        HostCode::PathOutsideWorkspace,
        HostCode::NotFound,
        HostCode::ToolFailed,
        HostCode::ToolTimeout,
        HostCode::FileTooLarge,
        HostCode::ShellNotFound,
        HostCode::HostOverloaded,
        HostCode::EditTagRequired,
        HostCode::EditTagMismatch,
        HostCode::EditTagUnknown,
        HostCode::EditLinesUnseen,
        HostCode::EditParseFailed,
        HostCode::EditRangeInvalid,
        HostCode::EditBlockUnresolved,
        HostCode::EditRegisterEmpty,
        HostCode::EditRegisterAmbiguous,
        HostCode::EditBareCr,
        HostCode::EditNoChange,
        HostCode::EditAmplificationLimit,
    ];

    /// The word the model, the glue and the audit log see.
    pub fn as_str(self) -> &'static str {
        match self {
            HostCode::InvalidArgument => "INVALID_ARGUMENT",
            HostCode::PathOutsideWorkspace => "PATH_OUTSIDE_WORKSPACE",
            HostCode::NotFound => "NOT_FOUND",
            HostCode::ToolFailed => "TOOL_FAILED",
            HostCode::ToolTimeout => "TOOL_TIMEOUT",
            HostCode::FileTooLarge => "FILE_TOO_LARGE",
            HostCode::ShellNotFound => "SHELL_NOT_FOUND",
            HostCode::HostOverloaded => "HOST_OVERLOADED",
            HostCode::EditTagRequired => "EDIT_TAG_REQUIRED",
            HostCode::EditTagMismatch => "EDIT_TAG_MISMATCH",
            HostCode::EditTagUnknown => "EDIT_TAG_UNKNOWN",
            HostCode::EditLinesUnseen => "EDIT_LINES_UNSEEN",
            HostCode::EditParseFailed => "EDIT_PARSE_FAILED",
            HostCode::EditRangeInvalid => "EDIT_RANGE_INVALID",
            HostCode::EditBlockUnresolved => "EDIT_BLOCK_UNRESOLVED",
            HostCode::EditRegisterEmpty => "EDIT_REGISTER_EMPTY",
            HostCode::EditRegisterAmbiguous => "EDIT_REGISTER_AMBIGUOUS",
            HostCode::EditBareCr => "EDIT_BARE_CR",
            HostCode::EditNoChange => "EDIT_NO_CHANGE",
            HostCode::EditAmplificationLimit => "EDIT_AMPLIFICATION_LIMIT",
        }
    }

    /// The code-level next step (each message also names its own, specific one; docs/host.md "Codes").
    pub fn next_step(self) -> &'static str {
        match self {
            HostCode::InvalidArgument => "fix the argument the message names and call again",
            HostCode::PathOutsideWorkspace => {
                "use a path inside the workspace, or ask the user to approve the external path"
            }
            HostCode::NotFound => "check the path (or task id) with Glob (or TaskList), then call again",
            HostCode::ToolFailed => "read the cause in the message; re-read the target before trying again",
            HostCode::ToolTimeout => "narrow the call (a smaller window, path or pattern) or give it a longer timeout",
            HostCode::FileTooLarge => "inspect or change the file with Bash instead",
            HostCode::ShellNotFound => "install bash or point Pi's shell setting at an existing shell",
            HostCode::HostOverloaded => {
                "wait for a background task with TaskWait or stop one with TaskStop, then call again"
            }
            HostCode::EditTagRequired => "pass the tag from the file's `[path#TAG]` header",
            HostCode::EditTagMismatch => "redo the edit against the current lines with the live tag, or Read the file",
            HostCode::EditTagUnknown => "Read the file and use its tag",
            HostCode::EditLinesUnseen => "send the same Edit again, or Read those lines first",
            HostCode::EditParseFailed => "write the operations in the form the message shows",
            HostCode::EditRangeInvalid => "use a range inside the file, or merge the overlapping operations",
            HostCode::EditBlockUnresolved => "use the plain `N.=M` range",
            HostCode::EditRegisterEmpty => "CUT into the register before pasting it",
            HostCode::EditRegisterAmbiguous => "give each CUT its own register name",
            HostCode::EditBareCr => "drop the `\\r`, or split the row",
            HostCode::EditNoChange => "check the `+` rows: the result equals the file",
            HostCode::EditAmplificationLimit => "split the change into several Edits, or use Write",
        }
    }

    /// Looks a code up by its word (the budget and the glue carry it as text only at the boundary).
    pub fn parse(word: &str) -> Option<HostCode> {
        HostCode::ALL.into_iter().find(|c| c.as_str() == word)
    }
}

impl fmt::Display for HostCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tests (here and in other modules) assert the exact word the model sees.
impl PartialEq<&str> for HostCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The word as the boundary carries it (a test helper's `String`) against the typed code.
impl PartialEq<HostCode> for String {
    fn eq(&self, other: &HostCode) -> bool {
        self == other.as_str()
    }
}

/// An argument is missing, malformed or out of range.
pub const INVALID_ARGUMENT: HostCode = HostCode::InvalidArgument;
/// A path is outside the session roots and has no external-path approval.
pub const PATH_OUTSIDE_WORKSPACE: HostCode = HostCode::PathOutsideWorkspace;
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

    /// The rows of the docs/host.md "Codes" table are exactly [`HostCode::ALL`], in order.
    #[test]
    fn all_matches_the_doc_table() {
        let doc = include_str!("../../docs/host.md");
        let table = doc
            .split("\n### Codes\n")
            .nth(1)
            .expect("docs/host.md has a Codes section");
        let rows: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with("| `"))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        let all: Vec<&str> = HostCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(rows, all);
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
        let union = |iface: &str| -> Vec<String> {
            let body = dts
                .split(&format!("export interface {iface} {{\n"))
                .nth(1)
                .expect(iface);
            let line = body
                .lines()
                .find(|l| l.trim_start().starts_with("code: "))
                .expect("code field");
            line.trim()
                .trim_start_matches("code: ")
                .split(" | ")
                .map(|w| w.trim_matches('\'').to_string())
                .collect()
        };
        let all: Vec<String> = HostCode::ALL.iter().map(|c| c.as_str().to_string()).collect();
        let with = |extra: &[&str]| [all.clone(), extra.iter().map(|s| s.to_string()).collect()].concat();
        assert_eq!(union("HostFailure"), with(&["AGENT_LIMIT", "internal-panic"]));
        assert_eq!(union("HostEditFailure"), with(&["internal-panic"]));
    }
}
