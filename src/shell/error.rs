//! Shell Sessions errors: a stable code from docs/spec/toolkit.md §5 plus a message that tells the model what to do next.

use serde::Serialize;

/// One refused or failed shell call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShellError {
    /// Stable code: invalid-command, invalid-cwd, invalid-limit, invalid-session, stale-session, session-limit,
    /// shell-unavailable, stdin-transport, stdin-closed, stdin-overload, stdin-failed, aborted, manager-closed,
    /// cleanup-incomplete, spawn-failed.
    pub code: &'static str,
    /// What happened and what to do next.
    pub message: String,
}

impl ShellError {
    /// An error with a code and a message.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
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
    ShellError::new("invalid-command", msg)
}
/// The working directory is malformed or does not exist.
pub fn invalid_cwd(msg: impl Into<String>) -> ShellError {
    ShellError::new("invalid-cwd", msg)
}
/// A yield or output limit is out of range.
pub fn invalid_limit(msg: impl Into<String>) -> ShellError {
    ShellError::new("invalid-limit", msg)
}
/// The session handle is malformed or unknown.
pub fn invalid_session(msg: impl Into<String>) -> ShellError {
    ShellError::new("invalid-session", msg)
}
