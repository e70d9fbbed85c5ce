#![deny(clippy::all)]
//! Node bindings of the pi-codex-toolkit engine. This file only binds: each capability lives in its own folder.

#[macro_use]
extern crate napi_derive;

mod patch;

/// The addon's version, so the TypeScript side can refuse a stale binary.
#[napi]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_set() {
        assert!(!super::engine_version().is_empty());
    }
}

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
        PatchAbort { flag: Default::default() }
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

fn patch_result(r: Result<patch::Applied, patch::PatchError>) -> PatchResult {
    match r {
        Ok(applied) => PatchResult {
            ok: true,
            text: applied.text(),
            operations: applied
                .operations
                .into_iter()
                .map(|o| PatchOperation { operation: o.kind.as_str().to_string(), path: o.path, from: o.from })
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
        Err(e) => PatchPathsResult { ok: false, paths: vec![], error: Some(e.to_string()), code: Some(e.code.to_string()) },
    }
}

/// Runs `patch::apply` on the libuv thread pool.
pub struct ApplyPatchTask {
    cwd: String,
    patch: String,
    abort: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl napi::Task for ApplyPatchTask {
    type Output = PatchResult;
    type JsValue = PatchResult;
    fn compute(&mut self) -> napi::Result<PatchResult> {
        Ok(patch_result(patch::apply(std::path::Path::new(&self.cwd), &self.patch, &self.abort)))
    }
    fn resolve(&mut self, _env: napi::Env, output: PatchResult) -> napi::Result<PatchResult> {
        Ok(output)
    }
}

/// Applies a patch relative to `cwd` off the main thread; resolves (never rejects) with a PatchResult.
#[napi(ts_return_type = "Promise<PatchResult>")]
pub fn apply_patch(cwd: String, patch: String, abort: Option<&PatchAbort>) -> napi::bindgen_prelude::AsyncTask<ApplyPatchTask> {
    let abort = abort.map(|a| a.flag.clone()).unwrap_or_default();
    napi::bindgen_prelude::AsyncTask::new(ApplyPatchTask { cwd, patch, abort })
}
