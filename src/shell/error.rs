//! Shell Sessions errors: a stable code from docs/shell.md "Codes" plus a message that tells the model what to do
//! next.

use serde::Serialize;

crate::codes::error_codes! {
    /// Every code a Shell Sessions call fails with (docs/shell.md "Codes").
    pub enum ShellCode {
        /// The request is malformed: command missing, a refused field, a wrong type.
        InvalidCommand = "invalid-command" => "fix the arguments the message names and call again",
        /// The working directory is malformed, missing or not a directory.
        InvalidCwd = "invalid-cwd" => "pass a workdir that exists, relative to the current directory",
        /// A yield or output limit is out of range.
        InvalidLimit = "invalid-limit" => "pass a limit inside the range the message names",
        /// The session handle is malformed or unknown.
        InvalidSession = "invalid-session" => "use a session_id an exec_command call returned",
        /// The session finished and was already read, or was pruned.
        StaleSession = "stale-session" => "start the command again with exec_command",
        /// Too many commands are running at once.
        SessionLimit = "session-limit" => "wait for a running command with write_stdin or terminate one, then start another",
        /// No usable local shell was resolved.
        ShellUnavailable = "shell-unavailable" => "install a shell or point Pi's shell setting at an existing one",
        /// The session reads its command from stdin, so it takes no further input.
        StdinTransport = "stdin-transport" => "poll the session with empty chars, or start a new command",
        /// The session's stdin was closed.
        StdinClosed = "stdin-closed" => "poll the session with empty chars, or start a new command",
        /// The session's unread input backlog is full.
        StdinOverload = "stdin-overload" => "poll the session until it reads its input, then send more",
        /// Writing to the session's stdin failed.
        StdinFailed = "stdin-failed" => "poll the session to see whether it is still running",
        /// The caller cancelled the call.
        Aborted = "aborted" => "the call was cancelled; run it again if it is still needed",
        /// The manager of this Pi session was closed (session ended or replaced).
        ManagerClosed = "manager-closed" => "start a new command in the current session",
        /// A stop left processes alive.
        CleanupIncomplete = "cleanup-incomplete" => "stop the pids the message names by hand",
        /// The command could not be started.
        SpawnFailed = "spawn-failed" => "read the cause in the message; nothing ran",
    }
}

impl Serialize for ShellCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One refused or failed shell call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShellError {
    /// Stable code (docs/shell.md "Codes").
    pub code: ShellCode,
    /// What happened and what to do next.
    pub message: String,
}

impl ShellError {
    /// An error with a code and a message.
    pub fn new(code: ShellCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The text a tool result shows: `<code>: <message>`.
    pub fn text(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }
}

impl std::fmt::Display for ShellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for ShellError {}

/// The request is malformed (command missing, a refused field, a wrong type).
pub fn invalid_command(msg: impl Into<String>) -> ShellError {
    ShellError::new(ShellCode::InvalidCommand, msg)
}
/// The working directory is malformed or does not exist.
pub fn invalid_cwd(msg: impl Into<String>) -> ShellError {
    ShellError::new(ShellCode::InvalidCwd, msg)
}
/// A yield or output limit is out of range.
pub fn invalid_limit(msg: impl Into<String>) -> ShellError {
    ShellError::new(ShellCode::InvalidLimit, msg)
}
/// The session handle is malformed or unknown.
pub fn invalid_session(msg: impl Into<String>) -> ShellError {
    ShellError::new(ShellCode::InvalidSession, msg)
}

#[cfg(test)]
mod code_tests {
    use super::*;
    use crate::codes::check::{doc_table, dts_union, with_extra};

    /// The rows of the docs/shell.md "Codes" table are exactly [`ShellCode::ALL`], in order.
    #[test]
    fn all_matches_the_doc_table() {
        let all: Vec<&str> = ShellCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(doc_table(include_str!("../../docs/shell.md"), "### Codes"), all);
        for c in ShellCode::ALL {
            assert!(!c.next_step().is_empty());
            assert_eq!(ShellCode::parse(c.as_str()), Some(c));
        }
    }

    /// `ShellFailure.code` in index.d.ts (napi `ts_type` in src/bind/shell.rs) is [`ShellCode::ALL`] plus the
    /// binding's contained panic.
    #[test]
    fn index_d_ts_union_is_all_codes() {
        let dts = include_str!("../../index.d.ts");
        assert_eq!(
            dts_union(dts, "ShellFailure", "code"),
            with_extra(ShellCode::ALL.map(ShellCode::as_str), &["internal-panic"])
        );
    }

    /// Every code is returned by some path: each is asserted by a test that drives the manager or the request
    /// normalizer into it (src/shell/tests.rs, src/shell/request.rs).
    #[test]
    fn every_code_is_returned_by_a_tested_path() {
        let tests = [include_str!("tests.rs"), include_str!("request.rs")].concat();
        for c in ShellCode::ALL {
            assert!(
                tests.contains(&format!("\"{}\"", c.as_str())),
                "no test drives a shell call into {}",
                c.as_str()
            );
        }
    }

    #[test]
    fn the_error_text_and_json_keep_the_word() {
        let e = invalid_cwd("workdir x does not exist.");
        assert_eq!(e.code, ShellCode::InvalidCwd);
        assert_eq!(e.text(), "invalid-cwd: workdir x does not exist.");
        assert_eq!(super::super::js::error_json(&e)["code"], "invalid-cwd");
    }
}
