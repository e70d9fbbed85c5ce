//! Config file bindings (`<agentDir>/extensions/pi-codex-toolkit.json`). Logic lives in src/config. A raw config is
//! the user's JSON (`Record<string, unknown>`: unknown fields are kept on save); the effective view is typed (`EffectiveConfig`).

use super::guard;
use crate::config;
use crate::config::js::Json;
use napi::Env;
use serde_json::Value;

/// The effective configuration: defaults filled, unknown fields dropped (docs/spec/toolkit.md §1).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct EffectiveConfig {
    #[napi(
        ts_type = "{ enabled: boolean; backend: 'auto' | 'native' | 'sidecar'; mode: 'live' | 'cached'; contextSize: 'low' | 'medium' | 'high'; sidecarModel: Record<string, unknown> | null }"
    )]
    pub web_search: Value,
    #[napi(ts_type = "{ enabled: boolean }")]
    pub remote_compaction: Value,
    #[napi(ts_type = "{ enabled: boolean }")]
    pub image_generation: Value,
    #[napi(ts_type = "{ enabled: boolean }")]
    pub apply_patch: Value,
    #[napi(ts_type = "{ enabled: boolean; approvalMode: 'confirm' | 'always' }")]
    pub computer_use: Value,
    #[napi(ts_type = "{ enabled: boolean }")]
    pub shell_sessions: Value,
    #[napi(
        ts_type = "{ enabled: boolean; approvalMode: 'confirm' | 'always'; longRunningSeconds: number; maxCellSeconds: number }"
    )]
    pub code_mode: Value,
    #[napi(ts_type = "{ enabled: boolean; deferred: string[] }")]
    pub tool_discovery: Value,
    #[napi(ts_type = "{ enabled: boolean; permissionMode: 'ask' | 'accept-edits' | 'auto' }")]
    pub host_tools: Value,
    #[napi(ts_type = "{ enabled: boolean; askTool: boolean; todoWrite: boolean; newContext: boolean }")]
    pub interactive_tools: Value,
    /// Task delegation (docs/agents.md).
    #[napi(ts_type = "{ enabled: boolean; timeoutSeconds: number }")]
    pub subagents: Value,
    /// The permission policy over every tool (docs/permissions.md); `mode: null` = `hostTools.permissionMode`.
    #[napi(
        ts_type = "{ mode: 'ask' | 'accept-edits' | 'auto' | null; planSafeTools: string[]; sensitivePaths: string[] }"
    )]
    pub permissions: Value,
    /// Isolated session worktrees (docs/worktrees.md).
    #[napi(ts_type = "{ enabled: boolean; init: string | null }")]
    pub worktrees: Value,
    pub debug: bool,
    #[napi(ts_type = "{ version: 1; rules: Array<ExecutionRule> }")]
    pub execution: Option<Value>,
}

/// The classified config file (codes: src/config/store.rs `ReadCode`, docs/config.md "Reads").
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ConfigReadResult {
    #[napi(ts_type = "'ok' | 'missing' | 'error'")]
    pub status: String,
    #[napi(ts_type = "'invalid-json' | 'invalid-config' | 'config-read-failed'")]
    pub code: Option<String>,
    pub detail: Option<String>,
    #[napi(ts_type = "string | null")]
    pub revision: Option<String>,
    #[napi(ts_type = "Record<string, unknown> | null")]
    pub raw: Option<Value>,
}

/// A refused save (nothing was written; codes: src/config/store.rs `SaveCode`, docs/config.md "Save codes").
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ConfigSaveFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'invalid-config' | 'stale-revision' | 'lock-held' | 'config-read-failed' | 'config-write-failed' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
}

/// A completed save: the new revision and the raw config as written.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ConfigSaveOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub revision: String,
    #[napi(ts_type = "Record<string, unknown>")]
    pub raw: Value,
}

/// `<agentDir>/extensions/pi-codex-toolkit.json`.
#[napi(catch_unwind)]
pub fn config_path(env: &Env, agent_dir: String) -> napi::Result<String> {
    guard::sync(env, "config.path", || {
        Ok(config::config_path(&agent_dir).to_string_lossy().into_owned())
    })
}

/// Reads and classifies the config file: `{status, code?, detail?, revision, raw}`.
#[napi(catch_unwind, ts_return_type = "ConfigReadResult")]
pub fn config_read(env: &Env, path: String) -> napi::Result<Json> {
    guard::sync(env, "config.read", || {
        to_json(env, &config::read(std::path::Path::new(&path))).map(Json)
    })
}

/// The all-off defaults.
#[napi(catch_unwind, ts_return_type = "EffectiveConfig")]
pub fn config_defaults(env: &Env) -> napi::Result<Value> {
    guard::sync(env, "config.defaults", || Ok(config::schema::defaults()))
}

/// The effective view of a valid raw config (defaults filled, unknown fields dropped).
#[napi(catch_unwind, ts_return_type = "EffectiveConfig")]
pub fn config_effective(
    env: &Env,
    #[napi(ts_arg_type = "Record<string, unknown> | null")] raw: Json,
) -> napi::Result<Value> {
    guard::sync(env, "config.effective", || Ok(config::schema::effective(&raw.0)))
}

/// Execution features (applyPatch, shellSessions, codeMode) an effective config asks for under some model (the union over all models).
#[napi(catch_unwind, ts_return_type = "Array<'applyPatch' | 'shellSessions' | 'codeMode'>")]
pub fn config_features(
    env: &Env,
    #[napi(ts_arg_type = "EffectiveConfig")] effective: Value,
) -> napi::Result<Vec<&'static str>> {
    guard::sync(env, "config.features", || {
        Ok(config::schema::configured_features(&effective))
    })
}

/// The first validation problem of a raw config, or null when it is valid.
#[napi(catch_unwind)]
pub fn config_validate(env: &Env, #[napi(ts_arg_type = "unknown")] raw: Json) -> napi::Result<Option<String>> {
    guard::sync(env, "config.validate", || Ok(config::schema::validate(&raw.0).err()))
}

/// Sets one dotted setting on a draft, keeping unknown fields; null at a top-level key removes it. A path that does
/// not name a setting is a programmer error: it throws `Error { code: "invalid-input" }`.
#[napi(catch_unwind, ts_return_type = "Record<string, unknown>")]
pub fn config_draft_set(
    env: &Env,
    #[napi(ts_arg_type = "Record<string, unknown> | null")] raw: Json,
    path: String,
    #[napi(ts_arg_type = "unknown")] value: Json,
) -> napi::Result<Json> {
    guard::sync(env, "config.draftSet", || {
        config::draft::set(&raw.0, &path, value.0)
            .map(Json)
            .map_err(|e| guard::throw(env, guard::INVALID_INPUT, &e))
    })
}

/// Saves a draft under the lock if the file still has `baseRevision` (null = still missing). Resolves
/// `{ok: true, revision, raw}` or `{ok: false, code, message}`; nothing is written on refusal.
#[napi(catch_unwind, ts_return_type = "Promise<ConfigSaveOk | ConfigSaveFailure>")]
pub async fn config_save(
    path: String,
    #[napi(ts_arg_type = "Record<string, unknown>")] draft: Json,
    base_revision: Option<String>,
) -> Json {
    let failed = |code: &str, message: String| serde_json::json!({"ok": false, "code": code, "message": message});
    let save = async move {
        let out = tokio::task::spawn_blocking(move || {
            guard::test_trigger("config.save");
            config::save(std::path::Path::new(&path), &draft.0, base_revision.as_deref())
        })
        .await;
        match out {
            Ok(Ok(ok)) => serde_json::json!({"ok": true, "revision": ok.revision, "raw": ok.raw}),
            Ok(Err(e)) => failed(e.code.as_str(), e.message),
            // The blocking save panicked (its lock guard and temp file are dropped by the unwind).
            Err(e) => failed(
                guard::PANIC_CODE,
                match e.try_into_panic() {
                    Ok(p) => guard::panic_message("config.save", &*p),
                    Err(e) => format!("the config save task did not finish ({e}); nothing is known to be written"),
                },
            ),
        }
    };
    Json(guard::future_or("config.save", save, |m| failed(guard::PANIC_CODE, m)).await)
}

/// One `/pct config` preset (src/config/presets.rs).
#[napi(object)]
pub struct ConfigPreset {
    pub key: String,
    pub label: String,
    pub summary: String,
    /// What the preset leaves off or untouched.
    pub leaves_off: String,
}

/// The presets, in menu order.
#[napi(catch_unwind)]
pub fn config_presets(env: &Env) -> napi::Result<Vec<ConfigPreset>> {
    guard::sync(env, "config.presets", || {
        Ok(config::presets::PRESETS
            .iter()
            .map(|p| ConfigPreset {
                key: p.key.into(),
                label: p.label.into(),
                summary: p.summary.into(),
                leaves_off: p.leaves_off.into(),
            })
            .collect())
    })
}

/// A draft with preset `key` applied (unrelated settings and unknown fields kept); with `extras` also Interactive
/// Tools and Task subagents turned on. An unknown key throws `Error { code: "invalid-input" }`.
#[napi(catch_unwind, ts_return_type = "Record<string, unknown>")]
pub fn config_preset_apply(
    env: &Env,
    #[napi(ts_arg_type = "Record<string, unknown> | null")] raw: Json,
    key: String,
    extras: Option<bool>,
) -> napi::Result<Json> {
    guard::sync(env, "config.presetApply", || {
        config::presets::apply_with_extras(&raw.0, &key, extras.unwrap_or(false))
            .map(Json)
            .map_err(|e| guard::throw(env, guard::INVALID_INPUT, &e))
    })
}

/// The preset an effective config equals (its key), or null.
#[napi(catch_unwind)]
pub fn config_preset_current(
    env: &Env,
    #[napi(ts_arg_type = "EffectiveConfig")] effective: Value,
) -> napi::Result<Option<&'static str>> {
    guard::sync(env, "config.presetCurrent", || Ok(config::presets::current(&effective)))
}

/// Warnings for overlapping tool families an effective config turns on together (empty = none).
#[napi(catch_unwind)]
pub fn config_overlaps(
    env: &Env,
    #[napi(ts_arg_type = "EffectiveConfig")] effective: Value,
) -> napi::Result<Vec<String>> {
    guard::sync(env, "config.overlaps", || Ok(config::presets::overlaps(&effective)))
}

fn to_json<T: serde::Serialize>(env: &Env, v: &T) -> napi::Result<Value> {
    serde_json::to_value(v).map_err(|e| guard::throw(env, guard::PANIC_CODE, &e.to_string()))
}
