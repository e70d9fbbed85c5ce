//! `HostSession.write` and `HostSession.edit` (docs/host.md "Write", "Edit"): a second `#[napi] impl` block of the
//! class from src/bind/host.rs. Logic lives in src/host/write.rs and src/host/edit/; these only bind. Both run on
//! tokio's blocking pool inside the panic guard and resolve, never reject.

use super::diffview::ScreenDiff;
use super::guard;
use super::host::{blocking, bounded, failure, outcome_unknown, panicked, HostCallOptions, HostFailure, JsHostSession};
use crate::host::edit::{self as hedit, EditFailure, EditResult};
use crate::host::read as hread;
use crate::host::write::{self as hwrite, WriteArgs, WriteResult};
use napi::bindgen_prelude::{Either, Either3};
use serde_json::Value;
use std::path::Path;

/// A host call that passed its pre-card checks (docs/host.md "Before the card"): a permission card, when the mode asks for one, comes next.
#[napi(object)]
pub struct HostPrecheckOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
}

/// Write's result: `text` names the file with its new `[path#TAG]`.
#[napi(object)]
pub struct HostWriteOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub path: String,
    #[napi(ts_type = "'workspace' | 'scratch' | 'external'")]
    pub root: String,
    /// Tag of the bytes that landed (every line counts as seen).
    pub tag: String,
    /// The file did not exist before.
    pub created: bool,
    pub bytes: i64,
    pub lines: i64,
    /// What was stripped from the content: a pasted `[path#TAG]` header, `N:` prefixes.
    pub stripped: Vec<String>,
    /// The review change recorded for this write (empty when none was).
    pub review: Vec<HostReviewEvidence>,
    /// What changed, for the person: the diff against the replaced file, or the new file's lines (docs/render.md).
    pub diff: ScreenDiff,
}

/// The review evidence of a landed Write or Edit (docs/review.md "In the tool result"): the spec's ReviewChange
/// fields of each change recorded for it — one per path, two for an Edit with MV — and never content, so its size
/// is bounded by the path. Empty when nothing was recorded (scratch and external paths, a call without a Pi session).
#[napi(object)]
pub struct HostReviewEvidence {
    pub version: u32,
    pub snapshot_id: String,
    pub message_id: Option<String>,
    pub path: String,
    #[napi(ts_type = "'write' | 'edit' | 'delete'")]
    pub operation: String,
    #[napi(ts_type = "'added' | 'modified' | 'deleted'")]
    pub status: String,
    #[napi(ts_type = "'active' | 'rolledBack'")]
    pub state: String,
    pub additions: i64,
    pub deletions: i64,
    /// Hunks of the diff (3 context lines), counted.
    pub hunks: i64,
    pub binary: Option<bool>,
    pub truncated: Option<bool>,
    pub reversible: bool,
}

fn evidence(hook: &crate::review::hook::Hook) -> Vec<HostReviewEvidence> {
    hook.landed()
        .iter()
        .map(|c| HostReviewEvidence {
            version: c.version,
            snapshot_id: c.snapshot_id.clone(),
            message_id: c.message_id.clone(),
            path: c.path.clone(),
            operation: c.operation.as_str().to_string(),
            status: c.status.as_str().to_string(),
            state: c.state.as_str().to_string(),
            additions: c.additions as i64,
            deletions: c.deletions as i64,
            hunks: c.hunks as i64,
            binary: c.binary,
            truncated: c.truncated,
            reversible: c.reversible,
        })
        .collect()
}

/// Options of an Edit: `approvedPath` as for Read; `turn` identifies the current prompt for the retry budget (a new
/// value resets the per-path counters).
#[napi(object)]
pub struct HostEditOptions {
    pub approved_path: Option<String>,
    pub turn: Option<String>,
    /// The Pi session that records the review change and whose mutation permit the call takes (docs/review.md).
    pub review: Option<super::review::ReviewTarget>,
    /// The call answers TOOL_TIMEOUT after this long, its outcome unknown (docs/host.md "Timeouts"; no bound when
    /// omitted).
    pub timeout_ms: Option<u32>,
}

/// A landed Edit: the new tag, the changed region with numbered context in `text`, and warnings (stale tag carried
/// over, path rebound).
#[napi(object)]
pub struct HostEditOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    /// The file (its new path after MV).
    pub path: String,
    #[napi(ts_type = "'workspace' | 'scratch' | 'external'")]
    pub root: String,
    /// The new tag ("" after REM).
    pub tag: String,
    pub added: i64,
    pub removed: i64,
    /// REM deleted the file.
    pub deleted: bool,
    /// The old path when MV moved the file.
    pub moved_from: Option<String>,
    pub warnings: Vec<String>,
    /// The review changes recorded for this edit (REM: a delete; MV: the source's delete and the destination's
    /// entry; empty when none was).
    pub review: Vec<HostReviewEvidence>,
    /// What changed, for the person (docs/render.md "Diffs"); absent after REM.
    pub diff: Option<ScreenDiff>,
}

/// A refused Edit: the code (EDIT_* or a common one) and a message naming the next step; `liveTag` is the file's
/// current tag when it was read; `budgetExhausted` says the retry budget of this path and prompt is spent (stop
/// editing it and report), `failures` the counted failures so far.
#[napi(object)]
pub struct HostEditFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'INVALID_ARGUMENT' | 'PATH_OUTSIDE_WORKSPACE' | 'SENSITIVE_PATH' | 'NOT_FOUND' | 'TOOL_FAILED' | 'TOOL_TIMEOUT' | 'FILE_TOO_LARGE' | 'SHELL_NOT_FOUND' | 'HOST_OVERLOADED' | 'EDIT_TAG_REQUIRED' | 'EDIT_TAG_MISMATCH' | 'EDIT_TAG_UNKNOWN' | 'EDIT_LINES_UNSEEN' | 'EDIT_PARSE_FAILED' | 'EDIT_RANGE_INVALID' | 'EDIT_BLOCK_UNRESOLVED' | 'EDIT_REGISTER_EMPTY' | 'EDIT_REGISTER_AMBIGUOUS' | 'EDIT_BARE_CR' | 'EDIT_NO_CHANGE' | 'EDIT_AMPLIFICATION_LIMIT' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
    pub live_tag: Option<String>,
    pub budget_exhausted: bool,
    pub failures: i64,
}

fn write_ok(r: WriteResult, review: Vec<HostReviewEvidence>) -> HostWriteOk {
    HostWriteOk {
        ok: true,
        text: r.text,
        path: r.path,
        root: r.root.as_str().to_string(),
        tag: r.tag,
        created: r.created,
        bytes: r.bytes as i64,
        lines: r.lines as i64,
        stripped: r.stripped,
        review,
        diff: r.view.into(),
    }
}

fn edit_ok(r: EditResult, review: Vec<HostReviewEvidence>) -> HostEditOk {
    HostEditOk {
        ok: true,
        text: r.text,
        path: r.path,
        root: r.root.as_str().to_string(),
        tag: r.tag,
        added: r.added as i64,
        removed: r.removed as i64,
        deleted: r.deleted,
        moved_from: r.moved_from,
        warnings: r.warnings,
        review,
        diff: r.view.map(Into::into),
    }
}

fn edit_failure(f: EditFailure) -> HostEditFailure {
    HostEditFailure {
        ok: false,
        code: f.error.code.to_string(),
        message: f.error.message,
        live_tag: f.live_tag,
        budget_exhausted: f.budget_exhausted,
        failures: i64::from(f.failures),
    }
}

#[napi]
impl JsHostSession {
    /// Write `{path | file_path, content}`: creates or overwrites one file (parents created inside the root).
    #[napi(catch_unwind, ts_return_type = "Promise<HostWriteOk | HostFailure>")]
    pub async fn write(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<HostCallOptions>,
    ) -> Either<HostWriteOk, HostFailure> {
        let s = self.inner.clone();
        let target = options
            .as_ref()
            .and_then(|o| o.review.as_ref())
            .map(|r| r.to_target("Write"));
        let budget = options.as_ref().and_then(|o| o.timeout_ms);
        let deadline = super::host::deadline(&options);
        let body = async move {
            // The session's mutation permit first (one in-flight Write/Edit/apply_patch per session, docs/review.md).
            let permit = match &target {
                Some(t) => Some(crate::review::lock::acquire(&t.session_id).await),
                None => None,
            };
            blocking("host.write", move || {
                let _permit = permit;
                let _m = s.edit.mutation.lock().unwrap_or_else(|p| p.into_inner());
                let a = WriteArgs::from_json(&args)?;
                let t = s.target(&a.path, &options)?;
                let mut rec = &s.store;
                let mut hook = crate::review::hook::Hook::new(target, s.roots.workspace());
                let r = hwrite::write_reviewed(&s.roots, &t, &a, deadline, &mut rec, &mut hook)?;
                s.edit
                    .budget
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear(&t.canonical);
                Ok(write_ok(r, evidence(&hook)))
            })
            .await
        };
        bounded(budget, body, |ms| Either::B(failure(outcome_unknown("Write", ms)))).await
    }

    /// Edit `{path | file_path, tag, ops}`: the line-anchored operations on one existing file (docs/host.md "Edit").
    #[napi(catch_unwind, ts_return_type = "Promise<HostEditOk | HostEditFailure>")]
    pub async fn edit(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<HostEditOptions>,
    ) -> Either<HostEditOk, HostEditFailure> {
        let s = self.inner.clone();
        let target = options
            .as_ref()
            .and_then(|o| o.review.as_ref())
            .map(|r| r.to_target("Edit"));
        let budget = options.as_ref().and_then(|o| o.timeout_ms);
        let body = async move {
            let permit = match &target {
                Some(t) => Some(crate::review::lock::acquire(&t.session_id).await),
                None => None,
            };
            let joined = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                guard::sync_or(
                    "host.edit",
                    || {
                        crate::seams::stall("host.edit");
                        let approved = options.as_ref().and_then(|o| o.approved_path.as_deref()).map(Path::new);
                        let turn = options.as_ref().and_then(|o| o.turn.as_deref());
                        let mut hook = crate::review::hook::Hook::new(target, s.roots.workspace());
                        match hedit::run_reviewed(&s.roots, &s.store, &s.edit, &args, approved, turn, &mut hook) {
                            Ok(r) => Either::A(edit_ok(r, evidence(&hook))),
                            Err(f) => Either::B(edit_failure(f)),
                        }
                    },
                    |m| Either::B(panic_failure(m)),
                )
            })
            .await;
            joined.unwrap_or_else(|e| Either::B(panic_failure(format!("the host.edit task did not finish ({e})"))))
        };
        bounded(budget, body, |ms| {
            Either::B(without_tag(failure(outcome_unknown("Edit", ms))))
        })
        .await
    }

    /// The checks a Read, Write or Edit passes before its permission card (docs/host.md "Before the card"): a call
    /// that cannot succeed (arguments, a folder or missing file for Read, a folder for Write, an Edit's ops, tag or
    /// missing file, an exhausted retry budget) is refused with the code and message the call itself would give, so no
    /// decision is spent on it. An Edit refused here counts against the retry budget of `turn` as the call would.
    /// Cheap: at most a `stat` or an open without a read, on the blocking pool. Throws `invalid-input` for another tool.
    #[napi(
        catch_unwind,
        ts_return_type = "Promise<HostPrecheckOk | HostFailure | HostEditFailure>"
    )]
    pub async fn precheck(
        &self,
        #[napi(ts_arg_type = "'Read' | 'Write' | 'Edit'")] tool: String,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        turn: Option<String>,
    ) -> napi::Result<Either3<HostPrecheckOk, HostFailure, HostEditFailure>> {
        let ok = || Either3::A(HostPrecheckOk { ok: true });
        let s = self.inner.clone();
        match tool.as_str() {
            "Read" | "Write" => {
                let read = tool == "Read";
                let out = blocking("host.precheck", move || {
                    if read {
                        hread::precheck(&s.roots, &args)
                    } else {
                        hwrite::precheck(&s.roots, &args)
                    }
                })
                .await;
                Ok(match out {
                    Either::A(()) => ok(),
                    Either::B(f) => Either3::B(f),
                })
            }
            "Edit" => {
                let joined = tokio::task::spawn_blocking(move || {
                    guard::sync_or(
                        "host.precheck",
                        || match hedit::precheck(&s.roots, &s.store, &s.edit, &args, turn.as_deref()) {
                            Ok(()) => ok(),
                            Err(f) => Either3::C(edit_failure(f)),
                        },
                        |m| Either3::C(panic_failure(m)),
                    )
                })
                .await;
                Ok(joined.unwrap_or_else(|e| {
                    Either3::C(panic_failure(format!("the host.precheck task did not finish ({e})")))
                }))
            }
            other => Err(napi::Error::new(
                napi::Status::InvalidArg,
                format!("invalid-input: precheck takes Read, Write or Edit, not {other}"),
            )),
        }
    }

    /// An apply_patch on `paths` ended (`ok` false: it failed): failed patches share Edit's retry budget per prompt
    /// and path, and a landed one clears the paths' counts (docs/spec/host-tools.md "Retry budget", docs/host.md).
    /// Returns whether one of the paths is now out of budget for `turn`, so the next Edit there is refused at once.
    /// Async: each path is resolved (metadata lookups) on the blocking pool; the glue awaits it before the patch's
    /// result returns, so the model's next Edit sees the count.
    #[napi(catch_unwind, ts_return_type = "Promise<boolean | HostFailure>")]
    pub async fn note_patch_result(&self, turn: String, paths: Vec<String>, ok: bool) -> Either<bool, HostFailure> {
        let s = self.inner.clone();
        blocking("host.notePatchResult", move || {
            let mut budget = s.edit.budget.lock().unwrap_or_else(|p| p.into_inner());
            let mut exhausted = false;
            for raw in &paths {
                // The same key Edit uses: the canonical path when it resolves, else the text as given.
                let key = s
                    .roots
                    .resolve(raw)
                    .map(|r| r.canonical)
                    .unwrap_or_else(|_| std::path::PathBuf::from(raw));
                if ok {
                    budget.note_success(Some(&turn), &key);
                } else {
                    exhausted |= budget.note_patch_failure(Some(&turn), &key).exhausted;
                }
            }
            Ok(exhausted)
        })
        .await
    }
}

fn panic_failure(message: String) -> HostEditFailure {
    without_tag(panicked(message))
}

/// A failure that is not about the file's lines (a panic, the time bound): no live tag, no budget count.
fn without_tag(f: HostFailure) -> HostEditFailure {
    HostEditFailure {
        ok: false,
        code: f.code,
        message: f.message,
        live_tag: None,
        budget_exhausted: false,
        failures: 0,
    }
}
