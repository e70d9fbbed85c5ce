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

    /// The test that drives a shell call into each code: `(file, test function)`. The match is exhaustive, so a new
    /// code does not compile until a test for it is named here.
    fn tested_by(c: ShellCode) -> (&'static str, &'static str) {
        use ShellCode::*;
        match c {
            InvalidCommand => ("request.rs", "spellings_and_defaults"),
            InvalidCwd => ("tests.rs", "spawn_errors_and_cwd"),
            InvalidLimit => ("request.rs", "spellings_and_defaults"),
            InvalidSession => ("tests.rs", "finite_command_completes_in_one_call"),
            StaleSession => ("tests.rs", "finite_command_completes_in_one_call"),
            SessionLimit => ("tests.rs", "session_limit_at_boundary"),
            ShellUnavailable => ("tests.rs", "spawn_errors_and_cwd"),
            StdinTransport => ("tests.rs", "stdin_refusals"),
            StdinClosed => ("tests.rs", "stdin_refusals"),
            StdinOverload => ("tests.rs", "stdin_admission_limits"),
            StdinFailed => ("tests.rs", "stdin_refusals"),
            Aborted => ("tests.rs", "cancellation_stops_direct_jobs_not_nested_ones"),
            ManagerClosed => ("tests.rs", "session_limit_at_boundary"),
            CleanupIncomplete => (
                "tests.rs",
                "unconfirmed_stop_reports_unknown_outcome_and_cleanup_incomplete",
            ),
            SpawnFailed => ("tests.rs", "spawn_errors_and_cwd"),
        }
    }

    /// The body of the test function `name` in `src`: from its `fn` line to the closing brace at the same indent,
    /// provided the line before is a test attribute.
    fn test_body(src: &str, name: &str) -> Option<String> {
        let lines: Vec<&str> = src.lines().collect();
        let head = [format!("fn {name}("), format!("async fn {name}(")];
        let at = lines
            .iter()
            .position(|l| head.iter().any(|h| l.trim_start().starts_with(h.as_str())))?;
        let attr = lines[..at]
            .iter()
            .rev()
            .find(|l| !l.trim_start().starts_with("///"))?
            .trim();
        if !(attr == "#[test]" || attr.starts_with("#[tokio::test")) {
            return None;
        }
        let indent = &lines[at][..lines[at].len() - lines[at].trim_start().len()];
        let close = format!("{indent}}}");
        let end = lines[at..].iter().position(|l| *l == close)? + at;
        Some(lines[at..=end].join("\n"))
    }

    /// The `assert_eq!(…)` calls in `body`, each as its whole argument text (parentheses balanced).
    fn assert_eqs(body: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = body;
        while let Some(i) = rest.find("assert_eq!(") {
            let args = &rest[i + "assert_eq!(".len()..];
            let mut depth = 1usize;
            let mut end = args.len();
            for (j, ch) in args.char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push(&args[..end]);
            rest = &args[end..];
        }
        out
    }

    /// Every code is returned by a tested path: the test [`tested_by`] names exists, is a test, and asserts that a
    /// call's error `code` equals this code (an `assert_eq!` on `.code` with the code's string).
    #[test]
    fn every_code_is_returned_by_a_tested_path() {
        let file = |f: &str| match f {
            "tests.rs" => include_str!("tests.rs"),
            "request.rs" => include_str!("request.rs"),
            other => panic!("no such test file {other}"),
        };
        for c in ShellCode::ALL {
            let (f, name) = tested_by(c);
            let body = test_body(file(f), name).unwrap_or_else(|| panic!("{f} has no test fn {name} (named for {c})"));
            let word = format!("\"{}\"", c.as_str());
            assert!(
                assert_eqs(&body)
                    .iter()
                    .any(|a| a.contains(".code") && a.contains(&word)),
                "{f}::{name} does not assert that a call fails with {c}"
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
