//! Code Mode (`exec` / `wait`) bindings. Logic lives in src/code; the ThreadsafeFunction bridge and the JS shape of
//! results in src/code/js_bridge.rs. Shapes cross as plain JS objects (serde); the type-only `#[napi(object)]`
//! structs declare them for index.d.ts (docs/napi.md "Typed shapes").

use super::guard;
use super::shell::ShellManager;
use crate::code;
use serde_json::Value;
use std::sync::Arc;

/// Code Mode's error codes (docs/code.md), plus `internal-panic` (docs/napi.md).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct CodeFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'invalid-code' | 'invalid-uses' | 'invalid-limit' | 'invalid-input' | 'cell-limit' | 'stale-cell' | 'closed' | 'unavailable' | 'cell-start-failed' | 'unknown-adapter' | 'adapter-disabled' | 'invalid-arguments' | 'approval-unavailable' | 'approval-denied' | 'policy-denied' | 'aborted' | 'bridge-overload' | 'cell-timeout' | 'cleanup-incomplete' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
}

/// `{ok: true}` of cleanup / shutdown.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct CodeOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
}

/// Nested call counts of a cell read.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NestedCounts {
    pub completed: f64,
    pub failed: f64,
    pub cancelled_before_dispatch: f64,
    pub unsettled: f64,
}

/// One read of a cell (what exec/wait resolve with `ok: true`); `text` is what the model reads (docs/code.md
/// "Results").
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct CellRead {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub cell_id: String,
    #[napi(js_name = "cell_id")]
    pub cell_id_snake: String,
    #[napi(ts_type = "'running' | 'completed' | 'failed' | 'terminated'")]
    pub status: String,
    /// A terminated cell the toolkit stopped itself: `cell-timeout` (it ran past `codeMode.maxCellSeconds`).
    #[napi(ts_type = "'cell-timeout'")]
    pub code: Option<String>,
    pub output: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub truncated: f64,
    pub dropped: f64,
    pub result_truncated: bool,
    pub error_truncated: bool,
    pub nested: NestedCounts,
    pub shell_sessions: Vec<String>,
    #[napi(ts_type = "true")]
    pub unknown_outcome: Option<bool>,
    pub recovery: Option<super::shell::RecoverySnapshot>,
    pub progress_dropped: f64,
    pub text: String,
}

/// A question the cell manager asks the TypeScript host (docs/code.md "Inside a cell"): `policy` (admission
/// re-check, the permission decision and card of docs/permissions.md, invocation hooks), `approval` (a second
/// confirmation when the policy answer asks for one), `lock` / `unlock` (Pi's file mutation queue).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct GateRequest {
    #[napi(ts_type = "'policy' | 'approval' | 'lock' | 'unlock'")]
    pub phase: String,
    #[napi(ts_type = "'exec_command' | 'write_stdin' | 'apply_patch'")]
    pub tool: String,
    pub cell_id: String,
    pub cwd: String,
    pub session_id: Option<String>,
    pub preview: Option<String>,
    pub paths: Option<Vec<String>>,
    pub lease: Option<String>,
    /// Policy phase, write_stdin: whether the call writes characters (command risk) or only polls.
    pub sends_input: Option<bool>,
}

/// The host's answer to a [`GateRequest`]; an invalid or rejected answer denies the nested call.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct GateAnswer {
    pub allow: bool,
    #[napi(
        ts_type = "'policy-denied' | 'adapter-disabled' | 'approval-unavailable' | 'approval-denied' | 'unavailable'"
    )]
    pub code: Option<String>,
    pub reason: Option<String>,
    pub env: Option<std::collections::HashMap<String, String>>,
    pub needs_approval: Option<bool>,
    #[napi(ts_type = "ShellConfig")]
    pub shell: Option<Value>,
    pub lease: Option<String>,
    /// Policy phase, apply_patch: the session that records the review changes (docs/review.md).
    #[napi(ts_type = "ReviewTarget")]
    pub review: Option<Value>,
}

/// One progress record of an outer exec/wait call: names and ids only, never arguments.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ProgressRecord {
    #[napi(ts_type = "'start' | 'waiting-approval' | 'end'")]
    pub event: String,
    pub tool: String,
    pub cell_id: String,
    pub session_id: Option<String>,
    pub ok: Option<bool>,
    /// A failed nested call's code: a cell code, or the shell's or the patch executor's own.
    #[napi(ts_type = "CodeFailure['code'] | ShellFailure['code'] | NonNullable<PatchResult['code']>")]
    pub code: Option<String>,
}

/// Code cells (`exec` / `wait`). One per toolkit instance; nested calls reach the shell/patch executors in Rust.
#[napi(js_name = "CodeManager")]
pub struct JsCodeManager {
    inner: code::CodeManager,
    adapters: Arc<code::wiring::ToolkitAdapters>,
}

/// Per-call options of exec/wait.
#[napi(object)]
pub struct CodeCallOptions {
    /// Pi's cwd (exec: nested shells resolve workdir against it).
    pub cwd: Option<String>,
    /// Id to pass to `abort(callId)` when Pi's AbortSignal fires.
    pub call_id: Option<String>,
    /// exec: `codeMode.maxCellSeconds` (10..86400, default 1800): the cell is stopped with `cell-timeout` once it
    /// has run this long; out of range answers `invalid-limit` and nothing runs.
    pub max_cell_seconds: Option<i64>,
}

/// `{ok: false, code: "internal-panic", message}` for a contained panic.
fn panicked(message: String) -> Value {
    code::js_bridge::to_js(Err(code::errors::CodeError::new(
        code::errors::ErrorCode::Panic,
        message,
    )))
}

#[napi]
impl JsCodeManager {
    /// `gate(request)` answers the policy hook, admission re-check, approval and file-queue locks of nested calls
    /// (see docs/code.md).
    #[napi(constructor, catch_unwind)]
    pub fn new(
        env: &napi::Env,
        #[napi(ts_arg_type = "(request: GateRequest) => Promise<GateAnswer>")] gate: code::js_bridge::GateFn,
    ) -> napi::Result<Self> {
        guard::sync(env, "code.new", || {
            let rt = napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current);
            let gate = Arc::new(code::js_bridge::JsGate(Arc::new(gate)));
            let adapters = Arc::new(code::wiring::ToolkitAdapters::default());
            Ok(JsCodeManager {
                inner: code::CodeManager::new(Arc::new(adapters.clone()), gate, rt),
                adapters,
            })
        })
    }

    /// Nested exec_command / write_stdin use this shell manager (the direct tools' one, `host.shared.get("shell")`).
    #[napi(catch_unwind)]
    pub fn attach_shell(&self, env: &napi::Env, shell: &ShellManager) -> napi::Result<()> {
        guard::sync(env, "code.attachShell", || {
            self.adapters.attach_shell(shell.manager());
            Ok(())
        })
    }

    /// The nested adapters currently admitted (exec_command, write_stdin, apply_patch).
    #[napi(catch_unwind)]
    pub fn set_admitted(
        &self,
        env: &napi::Env,
        #[napi(ts_arg_type = "Array<'exec_command' | 'write_stdin' | 'apply_patch'>")] names: Vec<String>,
    ) -> napi::Result<()> {
        guard::sync(env, "code.setAdmitted", || {
            self.inner.set_admitted(names);
            Ok(())
        })
    }

    /// `exec`: resolves with the read (`ok: true`) or `{ok: false, code, message}`.
    #[napi(catch_unwind, ts_return_type = "Promise<CellRead | CodeFailure>")]
    pub async fn exec(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<CodeCallOptions>,
        #[napi(ts_arg_type = "(record: ProgressRecord) => void")] progress: Option<code::js_bridge::ProgressJsFn>,
    ) -> Value {
        let call = outer_call(options, progress);
        guard::future_or(
            "code.exec",
            async {
                let r = match call {
                    Ok(call) => self.inner.exec(args, call).await,
                    Err(e) => Err(e),
                };
                code::js_bridge::to_js(r)
            },
            panicked,
        )
        .await
    }

    /// `wait`: resolves with the read (`ok: true`) or `{ok: false, code, message}`.
    #[napi(catch_unwind, ts_return_type = "Promise<CellRead | CodeFailure>")]
    pub async fn wait(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<CodeCallOptions>,
        #[napi(ts_arg_type = "(record: ProgressRecord) => void")] progress: Option<code::js_bridge::ProgressJsFn>,
    ) -> Value {
        let call = outer_call(options, progress);
        guard::future_or(
            "code.wait",
            async {
                let r = match call {
                    Ok(call) => self.inner.wait(args, call).await,
                    Err(e) => Err(e),
                };
                code::js_bridge::to_js(r)
            },
            panicked,
        )
        .await
    }

    /// Pi's AbortSignal fired for the exec/wait call with this callId: its cell is terminated.
    #[napi(catch_unwind)]
    pub fn abort(&self, env: &napi::Env, call_id: String) -> napi::Result<()> {
        guard::sync(env, "code.abort", || {
            self.inner.abort(&call_id);
            Ok(())
        })
    }

    /// Cells not yet terminal.
    #[napi(catch_unwind)]
    pub fn running_cells(&self, env: &napi::Env) -> napi::Result<u32> {
        guard::sync(env, "code.runningCells", || Ok(self.inner.running_cells() as u32))
    }

    /// The running cells with their thread's CPU time (`cpuMs` absent where it cannot be read: not Linux).
    #[napi(catch_unwind)]
    pub fn cell_cpu(&self, env: &napi::Env) -> napi::Result<Vec<CellCpu>> {
        guard::sync(env, "code.cellCpu", || {
            Ok(self
                .inner
                .running_cpu()
                .into_iter()
                .map(|(cell_id, cpu_ms)| CellCpu { cell_id, cpu_ms })
                .collect())
        })
    }

    /// Cells held (running, or terminal and not yet delivered).
    #[napi(catch_unwind)]
    pub fn held_cells(&self, env: &napi::Env) -> napi::Result<u32> {
        guard::sync(env, "code.heldCells", || Ok(self.inner.held_cells() as u32))
    }

    /// Terminates every cell (session switch/fork, feature disabled); `{ok}` or `{ok:false, code:"cleanup-incomplete"}`.
    #[napi(catch_unwind, ts_return_type = "Promise<CodeOk | CodeFailure>")]
    pub async fn cleanup(&self) -> Value {
        guard::future_or("code.cleanup", async { unit(self.inner.cleanup().await) }, panicked).await
    }

    /// A real session shutdown: terminate, refuse new cells, delete this process's recovery files.
    #[napi(catch_unwind, ts_return_type = "Promise<CodeOk | CodeFailure>")]
    pub async fn shutdown(&self) -> Value {
        guard::future_or("code.shutdown", async { unit(self.inner.shutdown().await) }, panicked).await
    }
}

/// `{ok: true}` or `{ok: false, code, message}`.
fn unit(r: Result<(), code::errors::CodeError>) -> Value {
    match r {
        Ok(()) => serde_json::json!({"ok": true}),
        Err(e) => serde_json::json!({"ok": false, "code": e.code, "message": e.message}),
    }
}

/// The outer exec/wait call as the cell manager sees it (cwd, call id for abort, progress sink, the cell's time
/// limit); `invalid-limit` for a `maxCellSeconds` out of range.
fn outer_call(
    options: Option<CodeCallOptions>,
    progress: Option<code::js_bridge::ProgressJsFn>,
) -> Result<code::OuterCall, code::errors::CodeError> {
    let o = options.unwrap_or(CodeCallOptions {
        cwd: None,
        call_id: None,
        max_cell_seconds: None,
    });
    let max_cell = o
        .max_cell_seconds
        .map(code::limits::max_cell_from_seconds)
        .transpose()?;
    Ok(code::OuterCall {
        cwd: o.cwd.unwrap_or_default(),
        call_id: o.call_id,
        max_cell,
        progress: progress.map(code::js_bridge::progress_fn),
    })
}

/// One running cell and the CPU time its thread used so far (docs/render.md "Running work").
#[napi(object)]
pub struct CellCpu {
    pub cell_id: String,
    /// Milliseconds of CPU time; absent where the platform does not expose a thread's CPU time.
    pub cpu_ms: Option<f64>,
}
