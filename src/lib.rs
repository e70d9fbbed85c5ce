#![deny(clippy::all)]
//! Node bindings of the pi-codex-toolkit engine. This file only binds: each capability lives in its own folder.

#[macro_use]
extern crate napi_derive;

mod code;
mod config;
mod discovery;
mod errno;
pub mod output;
mod patch;
mod rules;
pub mod shell;

use napi::bindgen_prelude::*;
use serde_json::Value;

/// The addon's version, so the TypeScript side can refuse a stale binary.
#[napi]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

// ---- code ----
use std::sync::Arc as CodeArc;

/// Code cells (`exec` / `wait`). One per toolkit instance; nested calls reach the shell/patch executors in Rust.
#[napi(js_name = "CodeManager")]
pub struct JsCodeManager {
    inner: code::CodeManager,
    adapters: CodeArc<code::wiring::ToolkitAdapters>,
}

/// Per-call options of exec/wait.
#[napi(object)]
pub struct CodeCallOptions {
    /// Pi's cwd (exec: nested shells resolve workdir against it).
    pub cwd: Option<String>,
    /// Id to pass to `abort(callId)` when Pi's AbortSignal fires.
    pub call_id: Option<String>,
}

#[napi]
impl JsCodeManager {
    /// `gate(request) => Promise<{allow, code?, reason?, env?, needsApproval?}>` answers the policy hook,
    /// admission re-check and approval of nested calls (see docs/code.md).
    #[napi(constructor)]
    pub fn new(
        #[napi(ts_arg_type = "(request: any) => Promise<any>")] gate: code::js_bridge::GateFn,
    ) -> napi::Result<Self> {
        let rt = napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current);
        let gate = CodeArc::new(code::js_bridge::JsGate(CodeArc::new(gate)));
        let adapters = CodeArc::new(code::wiring::ToolkitAdapters::default());
        Ok(JsCodeManager {
            inner: code::CodeManager::new(CodeArc::new(adapters.clone()), gate, rt),
            adapters,
        })
    }

    /// Nested exec_command / write_stdin use this shell manager (the direct tools' one, `host.shared.get("shell")`).
    #[napi]
    pub fn attach_shell(&self, shell: &ShellManager) {
        self.adapters.attach_shell(shell.manager())
    }

    /// The nested adapters currently admitted (exec_command, write_stdin, apply_patch).
    #[napi]
    pub fn set_admitted(&self, names: Vec<String>) {
        self.inner.set_admitted(names)
    }

    /// `exec`: resolves with the read (`ok: true`) or `{ok: false, code, message}`.
    #[napi(ts_return_type = "Promise<any>")]
    pub async fn exec(
        &self,
        args: serde_json::Value,
        options: Option<CodeCallOptions>,
        #[napi(ts_arg_type = "(record: any) => void")] progress: Option<code::js_bridge::ProgressJsFn>,
    ) -> serde_json::Value {
        code::js_bridge::to_js(self.inner.exec(args, outer_call(options, progress)).await)
    }

    /// `wait`: resolves with the read (`ok: true`) or `{ok: false, code, message}`.
    #[napi(ts_return_type = "Promise<any>")]
    pub async fn wait(
        &self,
        args: serde_json::Value,
        options: Option<CodeCallOptions>,
        #[napi(ts_arg_type = "(record: any) => void")] progress: Option<code::js_bridge::ProgressJsFn>,
    ) -> serde_json::Value {
        code::js_bridge::to_js(self.inner.wait(args, outer_call(options, progress)).await)
    }

    /// Pi's AbortSignal fired for the exec/wait call with this callId: its cell is terminated.
    #[napi]
    pub fn abort(&self, call_id: String) {
        self.inner.abort(&call_id)
    }

    /// Cells not yet terminal.
    #[napi]
    pub fn running_cells(&self) -> u32 {
        self.inner.running_cells() as u32
    }

    /// Cells held (running, or terminal and not yet delivered).
    #[napi]
    pub fn held_cells(&self) -> u32 {
        self.inner.held_cells() as u32
    }

    /// Terminates every cell (session switch/fork, feature disabled); `{ok}` or `{ok:false, code:"cleanup-incomplete"}`.
    #[napi(ts_return_type = "Promise<any>")]
    pub async fn cleanup(&self) -> serde_json::Value {
        match self.inner.cleanup().await {
            Ok(()) => serde_json::json!({"ok": true}),
            Err(e) => serde_json::json!({"ok": false, "code": e.code, "message": e.message}),
        }
    }

    /// A real session shutdown: terminate, refuse new cells, delete this process's recovery files.
    #[napi(ts_return_type = "Promise<any>")]
    pub async fn shutdown(&self) -> serde_json::Value {
        match self.inner.shutdown().await {
            Ok(()) => serde_json::json!({"ok": true}),
            Err(e) => serde_json::json!({"ok": false, "code": e.code, "message": e.message}),
        }
    }
}

/// The outer exec/wait call as the cell manager sees it (cwd, call id for abort, progress sink).
fn outer_call(options: Option<CodeCallOptions>, progress: Option<code::js_bridge::ProgressJsFn>) -> code::OuterCall {
    let o = options.unwrap_or(CodeCallOptions {
        cwd: None,
        call_id: None,
    });
    code::OuterCall {
        cwd: o.cwd.unwrap_or_default(),
        call_id: o.call_id,
        progress: progress.map(code::js_bridge::progress_fn),
    }
}

// ---- config ----

/// `<agentDir>/extensions/pi-codex-toolkit.json`.
#[napi]
pub fn config_path(agent_dir: String) -> String {
    config::config_path(&agent_dir).to_string_lossy().into_owned()
}

/// Reads and classifies the config file: `{status, code?, detail?, revision, raw}`.
#[napi(
    ts_return_type = "{ status: 'ok' | 'missing' | 'error'; code?: 'invalid-json' | 'invalid-config' | 'config-read-failed'; detail?: string; revision: string | null; raw: Record<string, any> | null }"
)]
pub fn config_read(path: String) -> Result<config::js::Json> {
    to_json(&config::read(std::path::Path::new(&path))).map(config::js::Json)
}

/// The all-off defaults.
#[napi(ts_return_type = "Record<string, any>")]
pub fn config_defaults() -> Value {
    config::schema::defaults()
}

/// The effective view of a valid raw config (defaults filled, unknown fields dropped).
#[napi(ts_return_type = "Record<string, any>")]
pub fn config_effective(#[napi(ts_arg_type = "Record<string, any> | null")] raw: config::js::Json) -> Value {
    config::schema::effective(&raw.0)
}

/// Execution features (applyPatch, shellSessions, codeMode) an effective config asks for, for any model.
#[napi]
pub fn config_features(#[napi(ts_arg_type = "Record<string, any>")] effective: Value) -> Vec<&'static str> {
    config::schema::configured_features(&effective)
}

/// The first validation problem of a raw config, or null when it is valid.
#[napi]
pub fn config_validate(#[napi(ts_arg_type = "unknown")] raw: config::js::Json) -> Option<String> {
    config::schema::validate(&raw.0).err()
}

/// Sets one dotted setting on a draft, keeping unknown fields; null at a top-level key removes it.
#[napi(ts_return_type = "Record<string, any>")]
pub fn config_draft_set(
    #[napi(ts_arg_type = "Record<string, any> | null")] raw: config::js::Json,
    path: String,
    #[napi(ts_arg_type = "unknown")] value: config::js::Json,
) -> Result<config::js::Json> {
    config::draft::set(&raw.0, &path, value.0)
        .map(config::js::Json)
        .map_err(Error::from_reason)
}

/// Saves a draft under the lock if the file still has `baseRevision` (null = still missing). Resolves
/// `{ok: true, revision, raw}` or `{ok: false, code, message}`; nothing is written on refusal.
#[napi(
    ts_return_type = "Promise<{ ok: true; revision: string; raw: Record<string, any> } | { ok: false; code: 'invalid-config' | 'stale-revision' | 'lock-held' | 'config-read-failed' | 'config-write-failed'; message: string }>"
)]
pub async fn config_save(
    path: String,
    #[napi(ts_arg_type = "Record<string, any>")] draft: config::js::Json,
    base_revision: Option<String>,
) -> Result<config::js::Json> {
    let out = tokio::task::spawn_blocking(move || {
        config::save(std::path::Path::new(&path), &draft.0, base_revision.as_deref())
    })
    .await
    .map_err(|e| Error::from_reason(e.to_string()))?;
    match out {
        Ok(ok) => Ok(config::js::Json(
            serde_json::json!({"ok": true, "revision": ok.revision, "raw": ok.raw}),
        )),
        Err(e) => Ok(config::js::Json(
            serde_json::json!({"ok": false, "code": e.code, "message": e.message}),
        )),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::from_reason(e.to_string()))
}

// ---- rules ----
// Execution rules, ownership, projection, status and discovery: pure functions over one snapshot
// (fields: src/rules/input.rs). Snapshots and results cross as JSON text: napi's object conversion walks
// every property through N-API calls and cost ~10x more than JSON.stringify + serde_json for a 100-tool
// snapshot (measured in bench/rules.mjs).

fn rules_input(input_json: &str) -> napi::Result<rules::ResolveInput> {
    rules::parse_input_str(input_json).map_err(napi::Error::from_reason)
}

fn rules_to_json<T: serde::Serialize>(v: &T) -> napi::Result<String> {
    serde_json::to_string(v).map_err(|e| napi::Error::from_reason(e.to_string()))
}

/// One sync decision (JSON in, JSON out): the list for `pi.setActiveTools`, hidden/restored builtins, names,
/// notes, feature statuses and the diagnostics record.
#[napi(js_name = "rulesResolve")]
pub fn rules_resolve(input_json: String) -> napi::Result<String> {
    rules_to_json(&rules::resolve(&rules_input(&input_json)?))
}

/// The complete `/pct status` text for the snapshot (JSON text).
#[napi(js_name = "rulesStatusText")]
pub fn rules_status_text(input_json: String) -> napi::Result<String> {
    Ok(rules::status_text(&rules_input(&input_json)?))
}

/// The rules editor's "Preview current model" text (the draft config goes in the snapshot's `config`).
#[napi(js_name = "rulesPreviewText")]
pub fn rules_preview_text(input_json: String) -> napi::Result<String> {
    Ok(rules::preview_text(&rules_input(&input_json)?))
}

/// Whether a rule pattern selects a model (`/` in the pattern selects `provider/modelId`).
#[napi(js_name = "rulesGlobMatch")]
pub fn rules_glob_match(pattern: String, provider: Option<String>, model_id: String) -> bool {
    rules::glob::model_matches(&pattern, provider.as_deref(), &model_id)
}

/// The rules the editor opens with (JSON text of a rules list): `execution.rules`, or the catch-all preview
/// of the legacy flags.
#[napi(js_name = "rulesEditorRules")]
pub fn rules_editor_rules(config_json: String) -> napi::Result<String> {
    let config: serde_json::Value =
        serde_json::from_str(&config_json).map_err(|e| napi::Error::from_reason(format!("invalid-input: {e}")))?;
    rules_to_json(&rules::editor_rules(&config))
}

/// The editor's rows `N. id  match  P+S+C` for a rules list (JSON text).
#[napi(js_name = "rulesEditorRows")]
pub fn rules_editor_rows(rules_json: String) -> napi::Result<Vec<String>> {
    let list: serde_json::Value =
        serde_json::from_str(&rules_json).map_err(|e| napi::Error::from_reason(format!("invalid-input: {e}")))?;
    Ok(rules::editor_rows(&list))
}

/// One edit of the `/pct config` rules editor: `action` is add | delete | up | down | id | match | toggle, `index`
/// 0-based, `value` the new id / pattern / flag name. Returns `{rules}` (JSON text of the new list) or
/// `{error}` with the message to show (the list is then unchanged).
#[napi(js_name = "rulesEditorApply")]
pub fn rules_editor_apply(
    rules_json: String,
    action: String,
    index: Option<u32>,
    value: Option<String>,
) -> napi::Result<String> {
    use rules::editor::{apply, Edit};
    let list: serde_json::Value =
        serde_json::from_str(&rules_json).map_err(|e| napi::Error::from_reason(format!("invalid-input: {e}")))?;
    let i = index.unwrap_or(0) as usize;
    let v = value.as_deref().unwrap_or("");
    let edit = match action.as_str() {
        "add" => Edit::Add,
        "delete" => Edit::Delete(i),
        "up" => Edit::Move(i, -1),
        "down" => Edit::Move(i, 1),
        "id" => Edit::SetId(i, v),
        "match" => Edit::SetMatch(i, v),
        "toggle" => Edit::Toggle(i, v),
        other => {
            return Err(napi::Error::from_reason(format!(
                "invalid-input: unknown editor action {other:?}"
            )))
        }
    };
    rules_to_json(&match apply(&list, edit) {
        Ok(rules) => serde_json::json!({ "rules": rules }),
        Err(error) => serde_json::json!({ "error": error }),
    })
}

/// The `pi.events` channel the diagnostics record goes to.
#[napi(js_name = "rulesDiagnosticsChannel")]
pub fn rules_diagnostics_channel() -> String {
    rules::diagnostics::CHANNEL.to_string()
}

/// One `find_tools` call (snapshot JSON, request JSON) -> JSON `{error?, text, matches, loaded, alreadyActive,
/// rejected, loadedDeferred}`.
#[napi(js_name = "discoveryFindTools")]
pub fn discovery_find_tools(input_json: String, request_json: String) -> napi::Result<String> {
    let input = rules_input(&input_json)?;
    let req: discovery::FindRequest = serde_json::from_str(&request_json).unwrap_or_default();
    rules_to_json(&discovery::find_tools(&input, &req))
}
// ---- end rules ----
// ---- patch ----

/// Cancels one `applyPatch` call: Pi's AbortSignal calls `abort()`; the executor checks it before preflight,
/// before staging and before the first commit step.
#[napi]
pub struct PatchAbort {
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[napi]
impl PatchAbort {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        PatchAbort {
            flag: Default::default(),
        }
    }
    /// Requests cancellation (takes effect at the next checkpoint; a started commit finishes).
    #[napi]
    pub fn abort(&self) {
        self.flag.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    /// Whether abort() was called.
    #[napi(getter)]
    pub fn aborted(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// One applied operation: `operation` is add, update, delete or move; `from` is the Move source.
#[napi(object)]
pub struct PatchOperation {
    pub operation: String,
    pub path: String,
    pub from: Option<String>,
}

/// Result of applyPatch: ok with the model text (`Applied patch:` ...) and operations, or the exact error text
/// (`apply_patch failed (...)...`) with its stable code and outcome (no-change, partial, unknown, partial; unknown).
#[napi(object)]
pub struct PatchResult {
    pub ok: bool,
    pub text: String,
    pub operations: Vec<PatchOperation>,
    pub code: Option<String>,
    pub outcome: Option<String>,
}

/// Result of patchPaths: the sorted absolute paths a patch touches, or the parse/path error it would fail with.
#[napi(object)]
pub struct PatchPathsResult {
    pub ok: bool,
    pub paths: Vec<String>,
    pub error: Option<String>,
    pub code: Option<String>,
}

fn patch_result(r: std::result::Result<patch::Applied, patch::PatchError>) -> PatchResult {
    match r {
        Ok(applied) => PatchResult {
            ok: true,
            text: applied.text(),
            operations: applied
                .operations
                .into_iter()
                .map(|o| PatchOperation {
                    operation: o.kind.as_str().to_string(),
                    path: o.path,
                    from: o.from,
                })
                .collect(),
            code: None,
            outcome: None,
        },
        Err(e) => PatchResult {
            ok: false,
            text: e.to_string(),
            operations: vec![],
            code: Some(e.code.to_string()),
            outcome: Some(e.outcome.label().to_string()),
        },
    }
}

/// Which files a patch touches (Move source and destination included), sorted, so the Pi tool can take
/// `withFileMutationQueue` for each before applying. Parse only; no filesystem access.
#[napi]
pub fn patch_paths(cwd: String, patch: String) -> PatchPathsResult {
    match patch::touched_paths(std::path::Path::new(&cwd), &patch) {
        Ok(paths) => PatchPathsResult {
            ok: true,
            paths: paths.into_iter().map(|p| p.to_string_lossy().into_owned()).collect(),
            error: None,
            code: None,
        },
        Err(e) => PatchPathsResult {
            ok: false,
            paths: vec![],
            error: Some(e.to_string()),
            code: Some(e.code.to_string()),
        },
    }
}

/// Applies a patch relative to `cwd` off the main thread; resolves (never rejects) with a PatchResult.
/// The blocking work runs on tokio's blocking pool (never the libuv pool): applies queue on one process-wide lock,
/// and parked libuv workers would stall Node's fs, dns and crypto.
#[napi(ts_return_type = "Promise<PatchResult>")]
pub fn apply_patch<'env>(
    env: &'env Env,
    cwd: String,
    patch: String,
    abort: Option<&PatchAbort>,
) -> Result<napi::bindgen_prelude::PromiseRaw<'env, PatchResult>> {
    let abort = abort.map(|a| a.flag.clone()).unwrap_or_default();
    env.spawn_future(async move {
        tokio::task::spawn_blocking(move || patch_result(patch::apply(std::path::Path::new(&cwd), &patch, &abort)))
            .await
            .map_err(|e| Error::from_reason(e.to_string()))
    })
}

// ---- shell ----
// Shell Sessions (exec_command / write_stdin). Logic lives in src/shell and src/output; this section only binds.
// Code Mode reuses the same manager Rust-to-Rust: take `&ShellManager` in a napi constructor and call `.manager()`.

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

#[napi]
impl ShellManager {
    /// `options` (tests only): `{terminalTtlMs?, stopGraceMs?, stopConfirmMs?}`.
    #[napi(constructor)]
    pub fn new(options: Option<serde_json::Value>) -> Self {
        let limits = shell::js::limits_from_json(options.as_ref());
        Self {
            inner: std::sync::Arc::new(shell::Manager::new(limits, output::RecoveryStore::new("shell"))),
            calls: Default::default(),
        }
    }

    /// Sets the default shell (Pi's `getShellConfig()` result) used when a call brings none; null clears it.
    #[napi]
    pub fn set_shell(&self, config: Option<serde_json::Value>) -> serde_json::Value {
        match config
            .filter(|c| !c.is_null())
            .map(|c| shell::ShellConfig::from_value(&c))
            .transpose()
        {
            Ok(c) => {
                self.inner.set_shell(c);
                serde_json::json!({"ok": true})
            }
            Err(e) => shell::js::error_json(&e),
        }
    }

    /// Validates exec_command arguments: `{ok, request}` or `{ok:false, code, message, text}`.
    #[napi]
    pub fn normalize_exec(&self, args: serde_json::Value) -> serde_json::Value {
        shell::js::normalize_exec_json(&args)
    }

    /// Validates write_stdin arguments: `{ok, request}` or `{ok:false, code, message, text}`.
    #[napi]
    pub fn normalize_write(&self, args: serde_json::Value) -> serde_json::Value {
        shell::js::normalize_write_json(&args)
    }

    /// Runs exec_command. `context` = `{cwd, shell?, env?, stopOnCancel?}`; `callId` pairs with `cancel(callId)`.
    #[napi]
    pub async fn exec(
        &self,
        args: serde_json::Value,
        context: serde_json::Value,
        call_id: Option<String>,
    ) -> serde_json::Value {
        self.call(false, &args, &context, call_id).await
    }

    /// Runs write_stdin (poll, input, closeStdin, terminate). Same context and cancellation as `exec`.
    #[napi]
    pub async fn write_stdin(
        &self,
        args: serde_json::Value,
        context: serde_json::Value,
        call_id: Option<String>,
    ) -> serde_json::Value {
        self.call(true, &args, &context, call_id).await
    }

    /// Cancels a running call (wire it to the tool's AbortSignal). A direct call's job is stopped.
    #[napi]
    pub fn cancel(&self, call_id: String) {
        self.calls.cancel(&call_id);
    }

    /// Stops every job (switch/fork preflight, feature disabled): `{ok}` or `{ok:false, code:"cleanup-incomplete"}`.
    #[napi]
    pub async fn cleanup(&self) -> serde_json::Value {
        shell::js::unit_json(self.inner.cleanup().await)
    }

    /// Closes the manager for good (session_shutdown): stops every job; new calls get manager-closed.
    #[napi]
    pub async fn close(&self) -> serde_json::Value {
        shell::js::unit_json(self.inner.close().await)
    }

    /// Deletes the recovery files this manager created (only those); returns how many.
    #[napi]
    pub fn delete_recovery_files(&self) -> u32 {
        self.inner.delete_recovery_files() as u32
    }

    /// Paths of recovery files this manager owns.
    #[napi]
    pub fn recovery_files(&self) -> Vec<String> {
        self.inner.recovery_store().file_paths()
    }

    /// Facts for /pct status: `{running, unreadTerminal, stopUnconfirmed, cleanupPending, closed, recoveryFiles}`.
    #[napi]
    pub fn status(&self) -> serde_json::Value {
        self.inner.status_json()
    }
}

impl ShellManager {
    /// One exec_command (`stdin == false`) or write_stdin call, registered under `call_id` for `cancel`.
    async fn call(
        &self,
        stdin: bool,
        args: &serde_json::Value,
        context: &serde_json::Value,
        call_id: Option<String>,
    ) -> serde_json::Value {
        let cancel = call_id.as_deref().map(|id| self.calls.begin(id));
        let r = match shell::js::context_from_json(context, cancel) {
            Ok(ctx) if stdin => self.inner.write_stdin(args, ctx).await,
            Ok(ctx) => self.inner.exec(args, ctx).await,
            Err(e) => Err(e),
        };
        if let Some(id) = &call_id {
            self.calls.end(id);
        }
        shell::js::result_json(r)
    }
}
