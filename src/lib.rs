#![deny(clippy::all)]
//! Node bindings of the pi-codex-toolkit engine. This file only binds: each capability lives in its own folder.

#[macro_use]
extern crate napi_derive;

mod config;

use napi::bindgen_prelude::*;
use serde_json::Value;

/// The addon's version, so the TypeScript side can refuse a stale binary.
#[napi]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

// ---- config ----

/// `<agentDir>/extensions/pi-codex-toolkit.json`.
#[napi]
pub fn config_path(agent_dir: String) -> String {
    config::config_path(&agent_dir).to_string_lossy().into_owned()
}

/// Reads and classifies the config file: `{status, code?, detail?, revision, raw}`.
#[napi(ts_return_type = "{ status: 'ok' | 'missing' | 'error'; code?: 'invalid-json' | 'invalid-config' | 'config-read-failed'; detail?: string; revision: string | null; raw: Record<string, any> | null }")]
pub fn config_read(path: String) -> Result<Value> {
    to_json(&config::read(std::path::Path::new(&path)))
}

/// The all-off defaults.
#[napi(ts_return_type = "Record<string, any>")]
pub fn config_defaults() -> Value {
    config::schema::defaults()
}

/// The effective view of a valid raw config (defaults filled, unknown fields dropped).
#[napi(ts_return_type = "Record<string, any>")]
pub fn config_effective(#[napi(ts_arg_type = "Record<string, any> | null")] raw: Value) -> Value {
    config::schema::effective(&raw)
}

/// The first validation problem of a raw config, or null when it is valid.
#[napi]
pub fn config_validate(#[napi(ts_arg_type = "unknown")] raw: Value) -> Option<String> {
    config::schema::validate(&raw).err()
}

/// Sets one dotted setting on a draft, keeping unknown fields; null at a top-level key removes it.
#[napi(ts_return_type = "Record<string, any>")]
pub fn config_draft_set(
    #[napi(ts_arg_type = "Record<string, any> | null")] raw: Value,
    path: String,
    #[napi(ts_arg_type = "unknown")] value: Value,
) -> Result<Value> {
    config::draft::set(&raw, &path, value).map_err(Error::from_reason)
}

/// Saves a draft under the lock if the file still has `baseRevision` (null = still missing). Resolves
/// `{ok: true, revision, raw}` or `{ok: false, code, message}`; nothing is written on refusal.
#[napi(ts_return_type = "Promise<{ ok: true; revision: string; raw: Record<string, any> } | { ok: false; code: 'invalid-config' | 'stale-revision' | 'lock-held' | 'config-read-failed' | 'config-write-failed'; message: string }>")]
pub async fn config_save(
    path: String,
    #[napi(ts_arg_type = "Record<string, any>")] draft: Value,
    base_revision: Option<String>,
) -> Result<Value> {
    let out = tokio::task::spawn_blocking(move || config::save(std::path::Path::new(&path), &draft, base_revision.as_deref()))
        .await
        .map_err(|e| Error::from_reason(e.to_string()))?;
    match out {
        Ok(ok) => Ok(serde_json::json!({"ok": true, "revision": ok.revision, "raw": ok.raw})),
        Err(e) => Ok(serde_json::json!({"ok": false, "code": e.code, "message": e.message})),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::from_reason(e.to_string()))
}
