//! The stable error codes of code cells (docs/code.md "Errors") with a message telling the model what to do next.

use serde::Serialize;

use crate::patch::PatchCode;
use crate::shell::ShellCode;

crate::codes::error_codes! {
    /// Every code an `exec`/`wait` call or a refused nested call fails with (docs/code.md "Errors").
    pub enum CellCode {
        /// The program is missing or malformed, or its `// @exec:` pragma is refused.
        InvalidCode = "invalid-code" => "fix the program or its pragma line and call exec again",
        /// `uses` is not a list of known nested tool names.
        InvalidUses = "invalid-uses" => "pass uses as a list of nested tool names",
        /// A yield or output limit is out of range.
        InvalidLimit = "invalid-limit" => "pass a limit inside the range the message names",
        /// A `wait` argument is malformed (cell id, terminate, an unknown field).
        InvalidInput = "invalid-input" => "fix the arguments the message names and call again",
        /// Too many cells are running at once.
        CellLimit = "cell-limit" => "wait for or terminate a running cell, then start another",
        /// The cell id is unknown, or its result was already read or released.
        StaleCell = "stale-cell" => "use a cell_id an exec call returned, or run the program again",
        /// The code manager is closed (session ended or replaced).
        Closed = "closed" => "start a new cell in the current session",
        /// A nested tool or the host's file mutation queue is not available.
        Unavailable = "unavailable" => "read the cause in the message; retry the call if it is still needed",
        /// The cell's thread or engine could not be started.
        CellStartFailed = "cell-start-failed" => "read the cause in the message; nothing ran",
        /// The cell called a tool that does not exist.
        UnknownAdapter = "unknown-adapter" => "call one of tools.exec_command, tools.write_stdin, tools.apply_patch",
        /// The nested tool was not declared in `uses` or is disabled.
        AdapterDisabled = "adapter-disabled" => "declare the tool in uses, or use one that is enabled",
        /// The nested call's arguments are malformed.
        InvalidArguments = "invalid-arguments" => "fix the nested call's arguments the message names",
        /// The call needs an approval and no UI can ask for it.
        ApprovalUnavailable = "approval-unavailable" => "run the call where Pi can ask, or change the permission rules",
        /// The user declined the approval.
        ApprovalDenied = "approval-denied" => "do not retry the call unless the user asks for it",
        /// The permission policy or an invocation hook denied the call.
        PolicyDenied = "policy-denied" => "follow the reason in the message; the call did not run",
        /// The call was cancelled.
        Aborted = "aborted" => "the call was cancelled; run it again if it is still needed",
        /// A nested call's arguments or reply, or the number of outstanding calls, is over its limit.
        BridgeOverload = "bridge-overload" => "await outstanding calls or ask for less output",
        /// The cell ran past `codeMode.maxCellSeconds` and was stopped (docs/code.md "Limits").
        CellTimeout = "cell-timeout" => "raise codeMode.maxCellSeconds in /pct config if the work needs longer, or split it into shorter cells (start a long command with exec_command and check it with write_stdin)",
        /// A cleanup could not confirm that every cell stopped.
        CleanupIncomplete = "cleanup-incomplete" => "wait for or terminate the cells the message names, then retry",
    }
}

/// The code a code-cell error carries: its own, or the code of a nested executor's error that passes through the
/// cell unchanged (a nested shell call's [`ShellCode`], a nested patch's code, the binding's contained panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// A code-cell code (docs/code.md "Errors").
    Cell(CellCode),
    /// A nested `exec_command` / `write_stdin` failure (docs/shell.md "Codes").
    Shell(ShellCode),
    /// A nested `apply_patch` failure: the patch executor's own code (docs/patch.md "Errors").
    Patch(PatchCode),
    /// A contained panic (docs/napi.md "Panics").
    Panic,
}

impl ErrorCode {
    /// The word the model, the glue and the progress records see.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Cell(c) => c.as_str(),
            ErrorCode::Shell(c) => c.as_str(),
            ErrorCode::Patch(c) => c.as_str(),
            ErrorCode::Panic => crate::bind::guard::PANIC_CODE,
        }
    }
}

impl From<CellCode> for ErrorCode {
    fn from(c: CellCode) -> Self {
        ErrorCode::Cell(c)
    }
}

impl From<ShellCode> for ErrorCode {
    fn from(c: ShellCode) -> Self {
        ErrorCode::Shell(c)
    }
}

impl From<PatchCode> for ErrorCode {
    fn from(c: PatchCode) -> Self {
        ErrorCode::Patch(c)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Tests assert the exact word the model sees.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A refusal or failure of an `exec`/`wait` call or of a nested call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeError {
    /// Stable code (docs/code.md "Errors", or the nested executor's).
    pub code: ErrorCode,
    pub message: String,
    /// A nested shell call's session, when its reply could not be delivered (the error in the cell carries it as
    /// `sessionId`, so the session stays reachable).
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// That call's recovery file, when one exists (`recoveryPath` on the error in the cell).
    #[serde(rename = "recoveryPath", skip_serializing_if = "Option::is_none")]
    pub recovery_path: Option<String>,
}

impl CodeError {
    /// An error with a code and a message.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> Self {
        CodeError {
            code: code.into(),
            message: message.into(),
            session_id: None,
            recovery_path: None,
        }
    }
}

impl std::fmt::Display for CodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::check::{doc_table, dts_union, with_extra};

    /// The rows of the docs/code.md "Errors" table are exactly [`CellCode::ALL`], in order.
    #[test]
    fn all_matches_the_doc_table() {
        let all: Vec<&str> = CellCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(doc_table(include_str!("../../docs/code.md"), "### Errors"), all);
        for c in CellCode::ALL {
            assert_eq!(CellCode::parse(c.as_str()), Some(c));
        }
    }

    /// `CodeFailure.code` in index.d.ts (napi `ts_type` in src/bind/code.rs) is [`CellCode::ALL`] plus the
    /// binding's contained panic; every code of `GateAnswer.code` is a [`CellCode`].
    #[test]
    fn index_d_ts_union_is_all_codes() {
        let dts = include_str!("../../index.d.ts");
        assert_eq!(
            dts_union(dts, "CodeFailure", "code"),
            with_extra(CellCode::ALL.map(CellCode::as_str), &["internal-panic"])
        );
        for w in dts_union(dts, "GateAnswer", "code") {
            assert!(CellCode::parse(&w).is_some(), "GateAnswer.code {w} is no cell code");
        }
    }

    #[test]
    fn foreign_codes_keep_their_words() {
        let e = CodeError::new(ShellCode::StaleSession, "gone");
        assert_eq!(e.to_string(), "stale-session: gone");
        assert_eq!(
            CodeError::new(PatchCode::ContextMismatch, "x").code,
            ErrorCode::Patch(PatchCode::ContextMismatch)
        );
        assert_eq!(
            CodeError::new(PatchCode::ContextMismatch, "x").to_string(),
            "context-mismatch: x"
        );
        assert_eq!(ErrorCode::Panic.as_str(), "internal-panic");
        assert_eq!(
            serde_json::to_value(CodeError::new(CellCode::Closed, "m")).unwrap()["code"],
            "closed"
        );
    }

    /// The host's `GateAnswer.code` is parsed at the boundary: a cell code is kept, any other word is dropped (the
    /// phase's default then applies), a non-string still makes the answer invalid.
    #[test]
    fn a_gate_answer_code_is_parsed_at_the_boundary() {
        use crate::code::adapters::GateAnswer;
        let parse = |v: serde_json::Value| serde_json::from_value::<GateAnswer>(v).map(|a| a.code);
        let known = parse(serde_json::json!({"allow": false, "code": "approval-denied"})).unwrap();
        assert_eq!(known, Some(ErrorCode::Cell(CellCode::ApprovalDenied)));
        assert_eq!(
            parse(serde_json::json!({"allow": false, "code": "bogus"})).unwrap(),
            None
        );
        assert_eq!(
            parse(serde_json::json!({"allow": false, "code": "internal-panic"})).unwrap(),
            None
        );
        assert_eq!(parse(serde_json::json!({"allow": false})).unwrap(), None);
        assert!(parse(serde_json::json!({"allow": false, "code": 7})).is_err());
    }
}
