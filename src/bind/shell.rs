//! Shell Sessions (`exec_command` / `write_stdin`) bindings. Logic lives in src/shell and src/output; the JSON
//! adapters in src/shell/js.rs. Code Mode reuses the same manager Rust-to-Rust: take `&ShellManager` in a napi
//! constructor and call `.manager()`.
//!
//! Shapes cross as plain JS objects built by the adapters (so fields the engine adds pass through unchanged); the
//! type-only `#[napi(object)]` structs below only declare them for index.d.ts (docs/napi.md "Typed shapes").

use super::guard;
use crate::{output, shell};
use serde_json::Value;

/// `{ok: false, code, message, text}`: a refusal or failure; `text` is what the model reads.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'invalid-command' | 'invalid-cwd' | 'invalid-limit' | 'invalid-session' | 'stale-session' | 'session-limit' | 'shell-unavailable' | 'stdin-transport' | 'stdin-closed' | 'stdin-overload' | 'stdin-failed' | 'aborted' | 'manager-closed' | 'cleanup-incomplete' | 'spawn-failed' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
    pub text: String,
}

/// `{ok: true}` of setShell / cleanup / close.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
}

/// A finished exec_command / write_stdin read: the model text and the structured details.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellCallOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub details: ShellDetails,
}

/// `details` of a shell read (both spellings of the id and exit code are kept for Codex-trained models).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellDetails {
    #[napi(ts_type = "string | null")]
    pub session_id: Option<String>,
    #[napi(js_name = "session_id", ts_type = "string | null")]
    pub session_id_snake: Option<String>,
    #[napi(ts_type = "'running' | 'completed' | 'terminated'")]
    pub status: String,
    #[napi(ts_type = "number | null")]
    pub exit_code: Option<i32>,
    #[napi(js_name = "exit_code", ts_type = "number | null")]
    pub exit_code_snake: Option<i32>,
    #[napi(ts_type = "string | null")]
    pub signal: Option<String>,
    pub stdout: String,
    pub stderr: String,
    pub truncated: u32,
    pub dropped: u32,
    pub stdin: ShellStdinDetails,
    /// Present (true) when the job was stopped and its outcome cannot be known.
    #[napi(ts_type = "true")]
    pub unknown_outcome: Option<bool>,
    /// With `unknownOutcome`: the pids still alive after the stop (left the process group, or hold its pipes).
    pub survivor_pids: Option<Vec<u32>>,
    pub recovery: Option<RecoverySnapshot>,
    #[napi(ts_type = "'written' | 'unknown'")]
    pub input_delivery: Option<String>,
}

/// stdin facts of a shell read.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellStdinDetails {
    #[napi(ts_type = "'open' | 'closed' | 'broken'")]
    pub state: String,
    pub pending_bytes: u32,
    pub pending_calls: u32,
}

/// The `recovery` snapshot of a shell read or a code cell read (docs/shell.md "Recovery files").
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RecoverySnapshot {
    #[napi(ts_type = "'capturing' | 'complete' | 'partial' | 'unavailable'")]
    pub state: String,
    pub path: Option<String>,
    pub bytes: f64,
    pub captured_bytes: f64,
    #[napi(ts_type = "'io-error' | 'source-error' | 'missing' | 'owner-closed'")]
    pub reason: Option<String>,
    /// With `io-error`: the operating system's message and the path or directory it concerns.
    pub error: Option<String>,
}

/// Facts for /pct status.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellStatus {
    pub running: u32,
    pub unread_terminal: u32,
    pub stop_unconfirmed: u32,
    pub cleanup_pending: bool,
    pub closed: bool,
    pub recovery_files: u32,
    /// Present when the exit watchdog could not be started (or died) although jobs or recovery files needed it:
    /// why, e.g. `could not start /bin/sh: No such file or directory (os error 2)`. Jobs still run, but if Node
    /// ends without a session shutdown nothing stops them or deletes the recovery files (docs/shell.md).
    pub watchdog_failure: Option<String>,
}

/// Test-only limits of the constructor.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellManagerOptions {
    pub terminal_ttl_ms: Option<u32>,
    pub stop_grace_ms: Option<u32>,
    pub stop_confirm_ms: Option<u32>,
}

/// Pi's `getShellConfig()` result: the shell binary, its leading args, and how the command is passed.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellConfig {
    pub shell: String,
    pub args: Option<Vec<String>>,
    #[napi(ts_type = "'argv' | 'stdin'")]
    pub command_transport: Option<String>,
}

/// What a call brings besides its arguments: Pi's cwd, a shell (else the default), an env overlay for this one
/// spawn, and whether cancelling stops the job (true for direct calls).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ShellContext {
    pub cwd: String,
    #[napi(ts_type = "ShellConfig | null")]
    pub shell: Option<ShellConfig>,
    #[napi(ts_type = "Record<string, string> | null")]
    pub env: Option<Value>,
    pub stop_on_cancel: Option<bool>,
}

/// A validated exec_command request (what hooks see).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NormalizedExec {
    pub cmd: String,
    #[napi(ts_type = "string | null")]
    pub workdir: Option<String>,
    pub yield_time_ms: f64,
    pub max_output_bytes: f64,
}

/// A validated write_stdin request.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NormalizedWrite {
    pub session_id: String,
    pub input: String,
    pub close_stdin: bool,
    pub terminate: bool,
    pub yield_time_ms: f64,
    pub max_output_bytes: f64,
}

/// The shell session manager for one Pi session, shared with Code Mode through `host.shared.get("shell")`.
#[napi]
pub struct ShellManager {
    inner: std::sync::Arc<shell::Manager>,
    calls: std::sync::Arc<shell::js::CallRegistry>,
}

impl ShellManager {
    /// The Rust manager behind this JS object (for Code Mode's nested calls).
    pub fn manager(&self) -> std::sync::Arc<shell::Manager> {
        self.inner.clone()
    }
}

/// `{ok: false, code: "internal-panic", ...}` for a contained panic.
fn panicked(message: String) -> Value {
    let text = format!("{}: {message}", guard::PANIC_CODE);
    serde_json::json!({"ok": false, "code": guard::PANIC_CODE, "message": message, "text": text})
}

#[napi]
impl ShellManager {
    /// `options` (tests only): `{terminalTtlMs?, stopGraceMs?, stopConfirmMs?}`.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        env: &napi::Env,
        #[napi(ts_arg_type = "ShellManagerOptions | null")] options: Option<Value>,
    ) -> napi::Result<Self> {
        guard::sync(env, "shell.new", || {
            let limits = shell::js::limits_from_json(options.as_ref());
            Ok(Self {
                inner: std::sync::Arc::new(shell::Manager::new(limits, output::RecoveryStore::new("shell"))),
                calls: Default::default(),
            })
        })
    }

    /// Sets the default shell (Pi's `getShellConfig()` result) used when a call brings none; null clears it.
    #[napi(catch_unwind, ts_return_type = "ShellOk | ShellFailure")]
    pub fn set_shell(&self, #[napi(ts_arg_type = "ShellConfig | null")] config: Option<Value>) -> Value {
        guard::sync_or(
            "shell.setShell",
            || match config
                .filter(|c| !c.is_null())
                .map(|c| shell::ShellConfig::from_value(&c))
                .transpose()
            {
                Ok(c) => {
                    self.inner.set_shell(c);
                    serde_json::json!({"ok": true})
                }
                Err(e) => shell::js::error_json(&e),
            },
            panicked,
        )
    }

    /// Validates exec_command arguments: `{ok, request}` or `{ok:false, code, message, text}`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ ok: true; request: NormalizedExec } | ShellFailure"
    )]
    pub fn normalize_exec(&self, #[napi(ts_arg_type = "Record<string, unknown>")] args: Value) -> Value {
        guard::sync_or(
            "shell.normalizeExec",
            || shell::js::normalize_exec_json(&args),
            panicked,
        )
    }

    /// Validates write_stdin arguments: `{ok, request}` or `{ok:false, code, message, text}`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ ok: true; request: NormalizedWrite } | ShellFailure"
    )]
    pub fn normalize_write(&self, #[napi(ts_arg_type = "Record<string, unknown>")] args: Value) -> Value {
        guard::sync_or(
            "shell.normalizeWrite",
            || shell::js::normalize_write_json(&args),
            panicked,
        )
    }

    /// Runs exec_command. `context` = `{cwd, shell?, env?, stopOnCancel?}`; `callId` pairs with `cancel(callId)`.
    #[napi(catch_unwind, ts_return_type = "Promise<ShellCallOk | ShellFailure>")]
    pub async fn exec(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        #[napi(ts_arg_type = "ShellContext")] context: Value,
        call_id: Option<String>,
    ) -> Value {
        guard::future_or("shell.exec", self.call(false, &args, &context, call_id), panicked).await
    }

    /// Runs write_stdin (poll, input, closeStdin, terminate). Same context and cancellation as `exec`.
    #[napi(catch_unwind, ts_return_type = "Promise<ShellCallOk | ShellFailure>")]
    pub async fn write_stdin(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        #[napi(ts_arg_type = "ShellContext")] context: Value,
        call_id: Option<String>,
    ) -> Value {
        guard::future_or("shell.writeStdin", self.call(true, &args, &context, call_id), panicked).await
    }

    /// Cancels a running call (wire it to the tool's AbortSignal). A direct call's job is stopped.
    #[napi(catch_unwind)]
    pub fn cancel(&self, env: &napi::Env, call_id: String) -> napi::Result<()> {
        guard::sync(env, "shell.cancel", || {
            self.calls.cancel(&call_id);
            Ok(())
        })
    }

    /// The end of a running call's output so far, without consuming it (docs/shell.md "Live output"): at most
    /// `maxBytes` (default 4096, at most 16 KiB) of each stream; null when no such call runs or it has no job yet.
    #[napi(catch_unwind)]
    pub fn peek(&self, env: &napi::Env, call_id: String, max_bytes: Option<u32>) -> napi::Result<Option<ShellPeek>> {
        guard::sync(env, "shell.peek", || {
            Ok(self
                .calls
                .peek(&call_id, max_bytes.unwrap_or(4096) as usize)
                .map(|p| ShellPeek {
                    session_id: p.session_id,
                    stdout: p.stdout,
                    stderr: p.stderr,
                    stdout_bytes: p.stdout_bytes as f64,
                    stderr_bytes: p.stderr_bytes as f64,
                    elapsed_ms: p.elapsed_ms as f64,
                    settled: p.settled,
                }))
        })
    }

    /// Stops every job (switch/fork preflight, feature disabled): `{ok}` or `{ok:false, code:"cleanup-incomplete"}`.
    #[napi(catch_unwind, ts_return_type = "Promise<ShellOk | ShellFailure>")]
    pub async fn cleanup(&self) -> Value {
        guard::future_or(
            "shell.cleanup",
            async { shell::js::unit_json(self.inner.cleanup().await) },
            panicked,
        )
        .await
    }

    /// Closes the manager for good (session_shutdown): stops every job; new calls get manager-closed.
    #[napi(catch_unwind, ts_return_type = "Promise<ShellOk | ShellFailure>")]
    pub async fn close(&self) -> Value {
        guard::future_or(
            "shell.close",
            async { shell::js::unit_json(self.inner.close().await) },
            panicked,
        )
        .await
    }

    /// Deletes the recovery files this manager created (only those); returns how many.
    #[napi(catch_unwind)]
    pub fn delete_recovery_files(&self, env: &napi::Env) -> napi::Result<u32> {
        guard::sync(env, "shell.deleteRecoveryFiles", || {
            Ok(self.inner.delete_recovery_files() as u32)
        })
    }

    /// Paths of recovery files this manager owns.
    #[napi(catch_unwind)]
    pub fn recovery_files(&self, env: &napi::Env) -> napi::Result<Vec<String>> {
        guard::sync(env, "shell.recoveryFiles", || {
            Ok(self.inner.recovery_store().file_paths())
        })
    }

    /// Facts for /pct status: `{running, unreadTerminal, stopUnconfirmed, cleanupPending, closed, recoveryFiles,
    /// watchdogFailure?}`.
    #[napi(catch_unwind, ts_return_type = "ShellStatus")]
    pub fn status(&self, env: &napi::Env) -> napi::Result<Value> {
        guard::sync(env, "shell.status", || Ok(self.inner.status_json()))
    }
}

impl ShellManager {
    /// One exec_command (`stdin == false`) or write_stdin call, registered under `call_id` for `cancel`.
    async fn call(&self, stdin: bool, args: &Value, context: &Value, call_id: Option<String>) -> Value {
        let (cancel, live) = call_id.as_deref().map(|id| self.calls.begin_live(id)).unzip();
        // Ends the registration even when the call panics (the guard resolves `internal-panic` meanwhile).
        let _end = call_id.map(|id| EndCall(&self.calls, id));
        let r = match shell::js::context_from_json(context, cancel, live) {
            Ok(ctx) if stdin => self.inner.write_stdin(args, ctx).await,
            Ok(ctx) => self.inner.exec(args, ctx).await,
            Err(e) => Err(e),
        };
        shell::js::result_json(r)
    }
}

/// What `peek` sees of a running exec_command or write_stdin call: the end of the unread output it will return.
#[napi(object)]
pub struct ShellPeek {
    /// The session id of the job the call waits on.
    pub session_id: String,
    /// The end of the unread stdout.
    pub stdout: String,
    /// The end of the unread stderr.
    pub stderr: String,
    /// Unread stdout bytes so far (the change detector: it only grows during one call).
    pub stdout_bytes: f64,
    /// Unread stderr bytes so far.
    pub stderr_bytes: f64,
    /// Milliseconds since the call started waiting on the job.
    pub elapsed_ms: f64,
    /// The job settled: the call is about to return.
    pub settled: bool,
}

/// Forgets a call id when the call ends, however it ends.
struct EndCall<'a>(&'a shell::js::CallRegistry, String);

impl Drop for EndCall<'_> {
    fn drop(&mut self) {
        self.0.end(&self.1);
    }
}
