//! The napi boundary, one binding module per capability (docs/napi.md). These modules only bind: they convert
//! arguments, call the capability's plain-Rust API, shape results, and run every body inside a panic guard
//! ([`guard`]). Conventions: results are typed objects; expected failures resolve `{ok: false, code, message}`;
//! programmer errors (`invalid-input`) and contained panics (`internal-panic`) throw an `Error` with that `code`.

pub mod agents;
pub mod code;
pub mod compaction;
pub mod computer;
pub mod config;
pub mod display;
pub mod guard;
pub mod host;
pub mod host_bash;
pub mod host_edit;
pub mod host_policy;
pub mod interactive;
pub mod net;
pub mod patch;
pub mod plan;
pub mod review;
pub mod rules;
pub mod shell;

/// The addon's version, so the TypeScript side can refuse a stale binary.
#[napi(catch_unwind)]
pub fn engine_version(env: &napi::Env) -> napi::Result<String> {
    guard::sync(env, "engineVersion", || Ok(env!("CARGO_PKG_VERSION").to_string()))
}

/// Whether this binary reads the test seams (src/seams.rs): `false` for the release build and the published
/// packages, `true` for test builds. The publish test refuses to pack a binary that says `true`.
#[napi(catch_unwind)]
pub fn test_seams(env: &napi::Env) -> napi::Result<bool> {
    guard::sync(env, "testSeams", || Ok(crate::seams::ENABLED))
}

/// Whether `id` passes the one session-id rule (src/session_id.rs) every engine capability applies: the glue asks
/// before using Pi's session id for the scratch directory, the audit file and the review store.
#[napi(catch_unwind)]
pub fn session_id_valid(env: &napi::Env, id: String) -> napi::Result<bool> {
    guard::sync(env, "sessionIdValid", || Ok(crate::session_id::is_valid(&id)))
}
