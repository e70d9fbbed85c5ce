//! JSON adapters for the napi class in `lib.rs` (kept here so `lib.rs` only binds): call contexts in, results
//! and errors out, and the registry that maps a JS call id to its cancellation token (AbortSignal bridge).

use super::cancel::Cancel;
use super::error::{ShellCode, ShellError};
use super::live::{self, LivePeek, LiveSlot};
use super::manager::{CallContext, Limits};
use super::process::ShellConfig;
use super::render::ShellResult;
use super::request::{normalize_exec, normalize_write};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// `{ok:false, code, message, text}` for an error.
pub fn error_json(e: &ShellError) -> Value {
    json!({"ok": false, "code": e.code, "message": e.message, "text": e.text()})
}

/// `{ok:true, text, details}` or the error object.
pub fn result_json(r: Result<ShellResult, ShellError>) -> Value {
    match r {
        Ok(r) => json!({"ok": true, "text": r.text(), "details": r.details()}),
        Err(e) => error_json(&e),
    }
}

/// `{ok:true}` or the error object.
pub fn unit_json(r: Result<(), ShellError>) -> Value {
    match r {
        Ok(()) => json!({"ok": true}),
        Err(e) => error_json(&e),
    }
}

/// Validates `exec_command` arguments for the TS glue (so hooks run after normalization): the canonical request.
pub fn normalize_exec_json(args: &Value) -> Value {
    match normalize_exec(args) {
        Ok(r) => {
            json!({"ok": true, "request": {"cmd": r.cmd, "workdir": r.workdir, "yieldTimeMs": r.yield_time_ms, "maxOutputBytes": r.max_output_bytes}})
        }
        Err(e) => error_json(&e),
    }
}

/// Validates `write_stdin` arguments for the TS glue: the canonical request (with the session id for hooks).
pub fn normalize_write_json(args: &Value) -> Value {
    match normalize_write(args) {
        Ok(r) => json!({"ok": true, "request": {
            "sessionId": r.session_id, "input": r.input, "closeStdin": r.close_stdin, "terminate": r.terminate,
            "yieldTimeMs": r.yield_time_ms, "maxOutputBytes": r.max_output_bytes,
        }}),
        Err(e) => error_json(&e),
    }
}

/// Builds a [`CallContext`] from `{cwd, shell?, env?, stopOnCancel?}` (stopOnCancel defaults to true: direct call).
pub fn context_from_json(v: &Value, cancel: Option<Cancel>, live: Option<LiveSlot>) -> Result<CallContext, ShellError> {
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ShellError::new(
                ShellCode::InvalidCwd,
                "The call has no current directory (ctx.cwd); nothing was started.",
            )
        })?;
    let shell = match v.get("shell") {
        None | Some(Value::Null) => None,
        Some(s) => Some(ShellConfig::from_value(s)?),
    };
    Ok(CallContext {
        cwd: cwd.into(),
        shell,
        env: v.get("env").cloned().filter(|e| !e.is_null()),
        cancel,
        stop_on_cancel: v.get("stopOnCancel").and_then(Value::as_bool).unwrap_or(true),
        live,
    })
}

/// Limits from the constructor's optional `{terminalTtlMs, stopGraceMs, stopConfirmMs}` (tests); the rest fixed.
pub fn limits_from_json(v: Option<&Value>) -> Limits {
    let mut l = Limits::default();
    if let Some(v) = v {
        let ms = |k: &str| v.get(k).and_then(Value::as_u64).map(Duration::from_millis);
        if let Some(d) = ms("terminalTtlMs") {
            l.terminal_ttl = d;
        }
        if let Some(d) = ms("stopGraceMs") {
            l.stop_grace = d;
        }
        if let Some(d) = ms("stopConfirmMs") {
            l.stop_confirm = d;
        }
    }
    l
}

/// Maps JS call ids to cancellation tokens and live-output slots. A cancel that arrives before its call
/// registered is remembered.
#[derive(Debug, Default)]
pub struct CallRegistry {
    live: Mutex<HashMap<String, (Cancel, LiveSlot)>>,
    early: Mutex<HashSet<String>>,
}

impl CallRegistry {
    /// Registers a call and returns its token (already tripped if the cancel came first).
    pub fn begin(&self, id: &str) -> Cancel {
        self.begin_live(id).0
    }

    /// Registers a call and returns its token and the slot its live output is published in.
    pub fn begin_live(&self, id: &str) -> (Cancel, LiveSlot) {
        let c = Cancel::new();
        if self.early.lock().remove(id) {
            c.cancel();
        }
        let slot = LiveSlot::default();
        self.live.lock().insert(id.to_string(), (c.clone(), slot.clone()));
        (c, slot)
    }

    /// Forgets a finished call.
    pub fn end(&self, id: &str) {
        self.live.lock().remove(id);
    }

    /// The end of a running call's output so far (docs/shell.md "Live output"); `None` when no such call runs or
    /// it has no job yet.
    pub fn peek(&self, id: &str, max: usize) -> Option<LivePeek> {
        let slot = self.live.lock().get(id).map(|(_, s)| s.clone())?;
        live::peek(&slot, max)
    }

    /// Trips a call's token (from the JS AbortSignal listener).
    pub fn cancel(&self, id: &str) {
        match self.live.lock().get(id) {
            Some((c, _)) => c.cancel(),
            None => {
                let mut early = self.early.lock();
                if early.len() > 1024 {
                    early.clear();
                }
                early.insert(id.to_string());
            }
        }
    }
}
