//! apply_patch bindings. Logic lives in src/patch (no napi types there); results are real `#[napi(object)]` structs.

use super::guard;
use crate::patch;
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Cancels one `applyPatch` call: Pi's AbortSignal calls `abort()`; the executor checks it before preflight,
/// before staging and before the first commit step.
#[napi]
pub struct PatchAbort {
    flag: Arc<AtomicBool>,
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
        self.flag.store(true, Ordering::SeqCst);
    }
    /// Whether abort() was called.
    #[napi(getter)]
    pub fn aborted(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// One applied operation: `operation` is add, update, delete or move; `from` is the Move source.
#[napi(object)]
pub struct PatchOperation {
    #[napi(ts_type = "'add' | 'update' | 'delete' | 'move'")]
    pub operation: String,
    pub path: String,
    pub from: Option<String>,
    /// What changed in this file, for the person (docs/render.md "Diffs"); absent for a delete and a plain move.
    pub diff: Option<super::diffview::ScreenDiff>,
}

/// Result of applyPatch: ok with the model text (`Applied patch:` ...) and operations, or the exact error text
/// (`apply_patch failed (...)...`) with its stable code and outcome (no-change, partial, unknown, partial; unknown).
#[napi(object)]
pub struct PatchResult {
    pub ok: bool,
    pub text: String,
    pub operations: Vec<PatchOperation>,
    /// A `PatchCode` word (docs/patch.md "Errors") or the contained panic's `internal-panic`.
    #[napi(
        ts_type = "'invalid-patch' | 'invalid-hunk' | 'invalid-path' | 'path-too-long' | 'path-traversal' | 'workspace-root' | 'symlink-component' | 'non-directory-component' | 'conflicting-paths' | 'source-missing' | 'source-not-regular' | 'destination-exists' | 'source-too-large' | 'source-changed' | 'non-utf8-source' | 'bare-cr' | 'mixed-line-endings' | 'interrupted-patch' | 'recovery-failed' | 'context-mismatch' | 'ambiguous-context' | 'aborted' | 'review-failed' | 'read-failed' | 'staging-failed' | 'workspace-unavailable' | 'commit-failed' | 'internal-panic'"
    )]
    pub code: Option<String>,
    #[napi(ts_type = "'no-change' | 'partial' | 'unknown' | 'partial; unknown'")]
    pub outcome: Option<String>,
}

/// Result of patchPaths: the sorted absolute paths a patch touches, or the parse/path error it would fail with.
#[napi(object)]
pub struct PatchPathsResult {
    pub ok: bool,
    pub paths: Vec<String>,
    pub error: Option<String>,
    /// A `PatchCode` word (docs/patch.md "Errors") or the contained panic's `internal-panic`.
    #[napi(
        ts_type = "'invalid-patch' | 'invalid-hunk' | 'invalid-path' | 'path-too-long' | 'path-traversal' | 'workspace-root' | 'symlink-component' | 'non-directory-component' | 'conflicting-paths' | 'source-missing' | 'source-not-regular' | 'destination-exists' | 'source-too-large' | 'source-changed' | 'non-utf8-source' | 'bare-cr' | 'mixed-line-endings' | 'interrupted-patch' | 'recovery-failed' | 'context-mismatch' | 'ambiguous-context' | 'aborted' | 'review-failed' | 'read-failed' | 'staging-failed' | 'workspace-unavailable' | 'commit-failed' | 'internal-panic'"
    )]
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
                    diff: o.view.map(Into::into),
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

/// A contained panic: the outcome is unknown (the apply may have stopped mid-commit).
fn panicked(message: String) -> PatchResult {
    PatchResult {
        ok: false,
        text: format!("apply_patch failed (outcome unknown): {message}"),
        operations: vec![],
        code: Some(guard::PANIC_CODE.to_string()),
        outcome: Some("unknown".to_string()),
    }
}

/// Which files a patch touches (Move source and destination included), sorted, so the Pi tool can take
/// `withFileMutationQueue` for each before applying. Parse only; no filesystem access.
#[napi(catch_unwind)]
pub fn patch_paths(cwd: String, patch: String) -> PatchPathsResult {
    let run = || match patch::touched_paths(std::path::Path::new(&cwd), &patch) {
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
    };
    guard::sync_or("patch.paths", run, |m| PatchPathsResult {
        ok: false,
        paths: vec![],
        error: Some(m),
        code: Some(guard::PANIC_CODE.to_string()),
    })
}

/// Applies a patch relative to `cwd` off the main thread; resolves (never rejects) with a PatchResult.
/// The blocking work runs on tokio's blocking pool (never the libuv pool): applies queue on one process-wide lock,
/// and parked libuv workers would stall Node's fs, dns and crypto.
///
/// `review` (optional): the Pi session to record review changes for (docs/review.md). The call then first takes
/// that session's mutation permit (one in-flight Write/Edit/apply_patch per session, before the process-wide patch
/// lock); an abort while waiting for it changes nothing.
#[napi(catch_unwind, ts_return_type = "Promise<PatchResult>")]
pub fn apply_patch<'env>(
    env: &'env Env,
    cwd: String,
    patch: String,
    abort: Option<&PatchAbort>,
    review: Option<super::review::ReviewTarget>,
) -> napi::Result<PromiseRaw<'env, PatchResult>> {
    let abort = abort.map(|a| a.flag.clone()).unwrap_or_default();
    let target = review.map(|r| r.to_target("apply_patch"));
    env.spawn_future(async move {
        let permit = match &target {
            Some(t) => match crate::review::lock::acquire_abortable(&t.session_id, &abort).await {
                Some(p) => Some(p),
                None => {
                    return Ok(patch_result(Err(patch::PatchError::no_change(
                        patch::PatchCode::Aborted,
                        "aborted",
                    ))))
                }
            },
            None => None,
        };
        let applied = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            guard::sync_or(
                "patch.apply",
                || {
                    patch_result(patch::apply_reviewed(
                        std::path::Path::new(&cwd),
                        &patch,
                        &abort,
                        target.as_ref(),
                    ))
                },
                panicked,
            )
        })
        .await;
        Ok(applied.unwrap_or_else(|e| panicked(format!("the apply task did not finish ({e})"))))
    })
}
