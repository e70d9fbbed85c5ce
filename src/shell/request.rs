//! Normalization and validation of `exec_command` / `write_stdin` arguments (docs/spec/toolkit.md §5).
//!
//! Plain functions over `serde_json::Value` so the direct tools and Code Mode's nested `tools.exec_command(...)`
//! get exactly the same checks: spelling pairs (both accepted, different values refused), fields refused by name,
//! numeric handles refused (never coerced), and every range.

use super::error::{invalid_command, invalid_cwd, invalid_limit, invalid_session, ShellError};
use crate::output::budget::{integer_in_range, resolve_budget};
use serde_json::{Map, Value};

/// Longest yield a call may ask for.
pub const MAX_YIELD_MS: u64 = 60_000;
/// Yield when none is given.
pub const DEFAULT_YIELD_MS: u64 = 10_000;

/// Codex request fields this toolkit does not support; refused by name, never silently ignored.
pub const REFUSED_FIELDS: [&str; 8] = [
    "tty",
    "shell",
    "login",
    "sandbox_permissions",
    "justification",
    "with_escalated_permissions",
    "prefix_rule",
    "timeout_ms",
];

/// A validated `exec_command` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The command line handed to the shell once.
    pub cmd: String,
    /// Working directory relative to the caller's cwd (absolute allowed); `None` = the cwd itself.
    pub workdir: Option<String>,
    /// How long to wait for output or settlement before returning (0..60000).
    pub yield_time_ms: u64,
    /// The preview budget of this read in bytes.
    pub max_output_bytes: usize,
}

/// A validated `write_stdin` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    /// The session handle returned by `exec_command`.
    pub session_id: String,
    /// Bytes forwarded verbatim (no newline added); empty = only poll.
    pub input: String,
    /// End stdin after writing `input`.
    pub close_stdin: bool,
    /// Stop the job.
    pub terminate: bool,
    /// How long to wait for output or settlement (0..60000).
    pub yield_time_ms: u64,
    /// The preview budget of this read in bytes.
    pub max_output_bytes: usize,
}

fn as_object<'a>(args: &'a Value, tool: &str) -> Result<&'a Map<String, Value>, ShellError> {
    args.as_object()
        .ok_or_else(|| invalid_command(format!("{tool} arguments must be a JSON object.")))
}

fn refuse_fields(obj: &Map<String, Value>, tool: &str) -> Result<(), ShellError> {
    for f in REFUSED_FIELDS {
        if obj.contains_key(f) {
            return Err(invalid_command(format!(
                "{tool} does not support the field \"{f}\" (pipes only, no TTY, no sandbox or escalation, no timeout; \
                 the command runs once in Pi's shell). Remove \"{f}\" and call again."
            )));
        }
    }
    Ok(())
}

/// Reads a field given under either spelling; both present with different values is an error. `null` = absent.
fn pair<'a>(
    obj: &'a Map<String, Value>,
    a: &str,
    b: &str,
    err: fn(String) -> ShellError,
) -> Result<Option<&'a Value>, ShellError> {
    let va = obj.get(a).filter(|v| !v.is_null());
    let vb = obj.get(b).filter(|v| !v.is_null());
    match (va, vb) {
        (Some(x), Some(y)) if x != y => Err(err(format!(
            "\"{a}\" and \"{b}\" are two spellings of the same field but have different values; send only one."
        ))),
        (Some(x), _) => Ok(Some(x)),
        (None, y) => Ok(y),
    }
}

fn err_cmd(m: String) -> ShellError {
    invalid_command(m)
}
fn err_cwd(m: String) -> ShellError {
    invalid_cwd(m)
}
fn err_limit(m: String) -> ShellError {
    invalid_limit(m)
}
fn err_session(m: String) -> ShellError {
    invalid_session(m)
}

fn yield_ms(obj: &Map<String, Value>) -> Result<u64, ShellError> {
    let v = pair(obj, "yield_time_ms", "yieldTimeMs", err_limit)?;
    Ok(integer_in_range(v, "yield_time_ms", 0, MAX_YIELD_MS)
        .map_err(invalid_limit)?
        .unwrap_or(DEFAULT_YIELD_MS))
}

fn budget(obj: &Map<String, Value>) -> Result<usize, ShellError> {
    resolve_budget(
        obj.get("maxOutputBytes"),
        "maxOutputBytes",
        obj.get("max_output_tokens"),
        "max_output_tokens",
    )
    .map_err(invalid_limit)
}

fn boolean(obj: &Map<String, Value>, name: &str) -> Result<bool, ShellError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid_command(format!("\"{name}\" must be true or false."))),
    }
}

/// Validates `exec_command` arguments.
pub fn normalize_exec(args: &Value) -> Result<ExecRequest, ShellError> {
    let obj = as_object(args, "exec_command")?;
    refuse_fields(obj, "exec_command")?;
    let cmd = match pair(obj, "cmd", "command", err_cmd)? {
        Some(Value::String(s)) if !s.trim().is_empty() && !s.contains('\0') => s.clone(),
        Some(Value::String(s)) if s.contains('\0') => {
            return Err(invalid_command("\"cmd\" must not contain NUL characters."))
        }
        Some(Value::String(_)) | None => {
            return Err(invalid_command(
                "exec_command needs a non-empty \"cmd\" string (the shell command line).",
            ))
        }
        Some(_) => return Err(invalid_command("\"cmd\" must be a string (the shell command line).")),
    };
    let workdir = match pair(obj, "workdir", "cwd", err_cwd)? {
        None => None,
        Some(Value::String(s)) if s.is_empty() => {
            return Err(invalid_cwd(
                "\"workdir\" must be a non-empty path; omit it to use the current directory.",
            ))
        }
        Some(Value::String(s)) if s.contains('\0') => {
            return Err(invalid_cwd("\"workdir\" must not contain NUL characters."))
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(invalid_cwd(
                "\"workdir\" must be a string path (relative to the current directory).",
            ))
        }
    };
    Ok(ExecRequest {
        cmd,
        workdir,
        yield_time_ms: yield_ms(obj)?,
        max_output_bytes: budget(obj)?,
    })
}

/// Validates a session handle: an opaque string, never a number.
pub fn session_handle(v: Option<&Value>) -> Result<String, ShellError> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(_)) => Err(invalid_session(
            "session_id must be the string handle returned by exec_command (e.g. \"pct-shell-…\"); numeric handles \
             and OS process ids are not accepted.",
        )),
        _ => Err(invalid_session(
            "write_stdin needs \"session_id\": the string handle returned by exec_command.",
        )),
    }
}

/// Validates `write_stdin` arguments.
pub fn normalize_write(args: &Value) -> Result<WriteRequest, ShellError> {
    let obj = as_object(args, "write_stdin")?;
    refuse_fields(obj, "write_stdin")?;
    let session_id = session_handle(pair(obj, "session_id", "sessionId", err_session)?)?;
    let input = match pair(obj, "chars", "input", err_cmd)? {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(invalid_command(
                "\"chars\" (input) must be a string, forwarded verbatim to stdin.",
            ))
        }
    };
    let close_stdin = boolean(obj, "closeStdin")?;
    let terminate = boolean(obj, "terminate")?;
    Ok(WriteRequest {
        session_id,
        input,
        close_stdin,
        terminate,
        yield_time_ms: yield_ms(obj)?,
        max_output_bytes: budget(obj)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spellings_and_defaults() {
        let a = normalize_exec(&json!({"cmd": "ls"})).unwrap();
        let b = normalize_exec(&json!({"command": "ls", "cmd": "ls"})).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.yield_time_ms, 10_000);
        assert_eq!(a.max_output_bytes, 51_200);
        let c = normalize_exec(&json!({"command": "ls", "cwd": "x", "yieldTimeMs": 5})).unwrap();
        assert_eq!(c.workdir.as_deref(), Some("x"));
        assert_eq!(c.yield_time_ms, 5);
        assert_eq!(
            normalize_exec(&json!({"cmd": "a", "command": "b"})).unwrap_err().code,
            "invalid-command"
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "a", "workdir": "a", "cwd": "b"}))
                .unwrap_err()
                .code,
            "invalid-cwd"
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "a", "yield_time_ms": 1, "yieldTimeMs": 2}))
                .unwrap_err()
                .code,
            "invalid-limit"
        );
        let w = normalize_write(&json!({"sessionId": "s", "input": "x", "session_id": "s", "chars": "x"})).unwrap();
        assert_eq!((w.session_id.as_str(), w.input.as_str()), ("s", "x"));
        assert_eq!(
            normalize_write(&json!({"session_id": "s", "sessionId": "t"}))
                .unwrap_err()
                .code,
            "invalid-session"
        );
        assert_eq!(
            normalize_write(&json!({"session_id": "s", "chars": "a", "input": "b"}))
                .unwrap_err()
                .code,
            "invalid-command"
        );
    }

    #[test]
    fn refused_fields_by_name() {
        for f in REFUSED_FIELDS {
            let mut o = json!({"cmd": "ls"});
            o[f] = json!(false);
            let e = normalize_exec(&o).unwrap_err();
            assert_eq!(e.code, "invalid-command");
            assert!(e.message.contains(f));
            let mut o = json!({"session_id": "x"});
            o[f] = json!(1);
            assert!(normalize_write(&o).unwrap_err().message.contains(f));
        }
    }

    #[test]
    fn numeric_handles_refused() {
        assert_eq!(
            normalize_write(&json!({"session_id": 3})).unwrap_err().code,
            "invalid-session"
        );
        assert_eq!(
            normalize_write(&json!({"sessionId": 3.0})).unwrap_err().code,
            "invalid-session"
        );
        assert_eq!(normalize_write(&json!({})).unwrap_err().code, "invalid-session");
    }

    #[test]
    fn yield_boundaries() {
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "yield_time_ms": 0}))
                .unwrap()
                .yield_time_ms,
            0
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "yield_time_ms": 60000}))
                .unwrap()
                .yield_time_ms,
            60000
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "yield_time_ms": 60001}))
                .unwrap_err()
                .code,
            "invalid-limit"
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "yield_time_ms": -1}))
                .unwrap_err()
                .code,
            "invalid-limit"
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "maxOutputBytes": 1023}))
                .unwrap_err()
                .code,
            "invalid-limit"
        );
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "max_output_tokens": 65537}))
                .unwrap_err()
                .code,
            "invalid-limit"
        );
    }

    #[test]
    fn command_shape() {
        assert_eq!(normalize_exec(&json!({})).unwrap_err().code, "invalid-command");
        assert_eq!(
            normalize_exec(&json!({"cmd": "  "})).unwrap_err().code,
            "invalid-command"
        );
        assert_eq!(normalize_exec(&json!({"cmd": 5})).unwrap_err().code, "invalid-command");
        assert_eq!(normalize_exec(&json!("ls")).unwrap_err().code, "invalid-command");
        assert_eq!(
            normalize_exec(&json!({"cmd": "x", "workdir": 1})).unwrap_err().code,
            "invalid-cwd"
        );
        assert_eq!(
            normalize_write(&json!({"session_id": "s", "terminate": "yes"}))
                .unwrap_err()
                .code,
            "invalid-command"
        );
    }
}
