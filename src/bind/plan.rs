//! Binding of SubmitPlan's artifact store (src/plan): one async export, so the write and its `sync_all` run on the
//! blocking pool and never on Node's main thread.

use super::guard;
use crate::plan::{self, PlanError};
use std::path::PathBuf;

/// What `planSave` resolves: the stored file, or why nothing was stored.
#[napi(object)]
pub struct PlanSaveResult {
    pub ok: bool,
    /// The failure's code (docs/permissions.md "The plan tools").
    #[napi(ts_type = "'PLAN_EMPTY' | 'PLAN_TOO_LARGE' | 'PLAN_DIR_OUTSIDE' | 'PLAN_SAVE_FAILED' | 'internal-panic'")]
    pub code: Option<String>,
    /// What went wrong and what to do next.
    pub message: Option<String>,
    /// The new file's absolute path.
    pub path: Option<String>,
    /// `.pi/plan/<name>.md`, relative to the workspace.
    pub relative: Option<String>,
    /// Bytes written.
    pub bytes: Option<u32>,
}

fn refused(code: &str, message: String) -> PlanSaveResult {
    PlanSaveResult {
        ok: false,
        code: Some(code.into()),
        message: Some(message),
        path: None,
        relative: None,
        bytes: None,
    }
}

fn shaped(r: Result<plan::Saved, PlanError>) -> PlanSaveResult {
    match r {
        Ok(s) => PlanSaveResult {
            ok: true,
            code: None,
            message: None,
            path: Some(s.path.to_string_lossy().into_owned()),
            relative: Some(s.relative),
            bytes: Some(s.bytes as u32),
        },
        Err(e) => refused(e.code.as_str(), e.message),
    }
}

/// The largest plan `planSave` keeps, in UTF-8 bytes.
#[napi(catch_unwind)]
pub fn plan_max_bytes(env: &napi::Env) -> napi::Result<u32> {
    guard::sync(env, "plan.maxBytes", || Ok(plan::MAX_PLAN_BYTES as u32))
}

/// Stores `markdown` byte for byte as a new file `<workspace>/.pi/plan/<unique>.md` (created exclusively: never an
/// overwrite, never through a symlink at the name). Never rejects: failures resolve `{ok: false, code, message}`.
#[napi]
pub async fn plan_save(workspace: String, markdown: String) -> PlanSaveResult {
    let site = "plan.save";
    let joined = tokio::task::spawn_blocking(move || {
        guard::sync_or(
            site,
            || shaped(plan::save(&PathBuf::from(&workspace), &markdown)),
            |m| refused(guard::PANIC_CODE, m),
        )
    })
    .await;
    joined.unwrap_or_else(|e| refused(guard::PANIC_CODE, format!("the {site} task did not finish ({e})")))
}
