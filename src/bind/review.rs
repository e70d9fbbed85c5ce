//! Review bindings (docs/review.md): the listing, one change's diff, rollback (after the session's mutation
//! permit) and the start-up sweep. Every export is async and does its file work on tokio's blocking pool, so a
//! 16 MiB change's diff never stalls Node's event loop. Logic lives in src/review (no napi types there). Results
//! resolve, never reject: typed objects or `{ok: false, code, message}`.

use super::guard;
use crate::review::rollback::{self, Which};
use crate::review::store::{Change, Store};
use crate::review::{lock, prune, render, ReviewCode, ReviewError, Target, MAX_TOTAL_BYTES};
use napi::bindgen_prelude::Either;
use std::path::Path;

/// Which session records a mutation (apply_patch's optional last argument; Write/Edit use the HostSession's; a
/// code cell's gate answer carries it for a nested apply_patch, hence the serde shape too).
#[napi(object)]
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewTarget {
    /// Pi's agent dir: the store is `<agentDir>/pi-codex-toolkit/review/<sessionId>/`.
    pub agent_dir: String,
    pub session_id: String,
    /// Pi's id of the assistant message whose tool call makes the change (the session leaf at call time).
    pub message_id: Option<String>,
    /// Pi's session file (`undefined` for an in-memory session): the store is swept once it is gone.
    pub session_file: Option<String>,
    /// The Task delegate making the change (its agent's name): the listing names it `writer (Task)`.
    pub agent: Option<String>,
}

impl ReviewTarget {
    pub fn to_target(&self, tool: &str) -> Target {
        Target {
            agent_dir: self.agent_dir.clone().into(),
            session_id: self.session_id.clone(),
            message_id: self.message_id.clone(),
            session_file: self.session_file.clone(),
            tool: tool.to_string(),
            agent: self.agent.clone(),
        }
    }
}

/// One review change (docs/spec/host-tools.md fields, then the listing's extras).
#[napi(object)]
pub struct ReviewChange {
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
    pub hunks: i64,
    pub binary: Option<bool>,
    pub truncated: Option<bool>,
    pub reversible: bool,
    /// `apply_patch`, `Write` or `Edit`.
    pub tool: String,
    /// Both entries of a Move carry the same group and roll back together.
    pub group: Option<String>,
    pub moved_from: Option<String>,
    pub moved_to: Option<String>,
    /// The Task delegate that made the change, when one did.
    pub agent: Option<String>,
    /// Who made the change as the listing names it: `writer (Task)` for a delegate, else the tool.
    pub by: String,
    /// The listing row (`#3 M src/app.js  apply_patch  +2 -1  active`).
    pub row: String,
}

fn js_change(n: usize, c: &Change) -> ReviewChange {
    ReviewChange {
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
        tool: c.tool.clone(),
        group: c.group.clone(),
        moved_from: c.moved_from.clone(),
        moved_to: c.moved_to.clone(),
        agent: c.agent.clone(),
        by: c.by(),
        row: render::row(n, c),
    }
}

/// An expected failure: a [`ReviewCode`] or `internal-panic`; the message names the next step.
#[napi(object)]
pub struct ReviewFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'conflict' | 'not-reversible' | 'already-rolled-back' | 'not-found' | 'rollback-failed' | 'store-failed' | 'invalid-session' | 'other-workspace' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
}

fn failure(e: ReviewError) -> ReviewFailure {
    ReviewFailure {
        ok: false,
        code: e.code.to_string(),
        message: e.message,
    }
}

fn panicked(message: String) -> ReviewFailure {
    ReviewFailure {
        ok: false,
        code: guard::PANIC_CODE.to_string(),
        message,
    }
}

/// The session's changes, oldest first, and the listing text.
#[napi(object)]
pub struct ReviewListOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub changes: Vec<ReviewChange>,
}

/// One change and its text: a header row and the unified diff.
#[napi(object)]
pub struct ReviewShowOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub change: ReviewChange,
}

/// Why a rollback of "all" stopped part-way.
#[napi(object)]
pub struct ReviewStopped {
    #[napi(
        ts_type = "'conflict' | 'not-reversible' | 'already-rolled-back' | 'not-found' | 'rollback-failed' | 'store-failed' | 'invalid-session' | 'other-workspace'"
    )]
    pub code: String,
    pub message: String,
}

/// What a rollback did: the changes now rolled back, the absolute paths it changed, and the summary text.
#[napi(object)]
pub struct ReviewRollbackOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub rolled_back: Vec<ReviewChange>,
    pub paths: Vec<String>,
    pub stopped: Option<ReviewStopped>,
}

/// The start-up sweep's result.
#[napi(object)]
pub struct ReviewSweepOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub removed: Vec<String>,
    pub dropped_snapshots: u32,
    pub total_bytes: i64,
}

fn list_of(agent_dir: &str, session_id: &str) -> Result<(Store, Vec<Change>), ReviewError> {
    let store = Store::of(Path::new(agent_dir), session_id)?;
    let changes = store.load()?;
    Ok((store, changes))
}

/// Runs `f` on tokio's blocking pool under the panic guard: the store reads, diffs and deletes here touch up to
/// the 16 MiB per-change cap (docs/review.md), so none of them runs on Node's main thread.
async fn blocking<T: Send + 'static>(
    site: &'static str,
    f: impl FnOnce() -> Either<T, ReviewFailure> + Send + 'static,
) -> Either<T, ReviewFailure> {
    let joined = tokio::task::spawn_blocking(move || guard::sync_or(site, f, |m| Either::B(panicked(m)))).await;
    joined.unwrap_or_else(|e| Either::B(panicked(format!("the {site} task did not finish ({e})"))))
}

/// `/pct review`: the session's changes (path, operation, +/- lines, state), oldest first.
#[napi(catch_unwind, ts_return_type = "Promise<ReviewListOk | ReviewFailure>")]
pub async fn review_list(agent_dir: String, session_id: String) -> Either<ReviewListOk, ReviewFailure> {
    blocking("review.list", move || match list_of(&agent_dir, &session_id) {
        Ok((_, changes)) => Either::A(ReviewListOk {
            ok: true,
            text: render::list(&changes),
            changes: changes.iter().enumerate().map(|(i, c)| js_change(i + 1, c)).collect(),
        }),
        Err(e) => Either::B(failure(e)),
    })
    .await
}

/// `/pct review show <n|snapshotId>`: the change's unified diff.
#[napi(catch_unwind, ts_return_type = "Promise<ReviewShowOk | ReviewFailure>")]
pub async fn review_show(agent_dir: String, session_id: String, key: String) -> Either<ReviewShowOk, ReviewFailure> {
    blocking("review.show", move || {
        let run = || -> Result<ReviewShowOk, ReviewError> {
            let (store, changes) = list_of(&agent_dir, &session_id)?;
            let i = rollback::find(&changes, &key).ok_or_else(|| {
                ReviewError::new(
                    ReviewCode::NotFound,
                    format!("no change '{key}' in this session's review. Run /pct review to list the changes and their numbers."),
                )
            })?;
            Ok(ReviewShowOk {
                ok: true,
                text: render::show(&store, &changes, i)?,
                change: js_change(i + 1, &changes[i]),
            })
        };
        run().map(Either::A).unwrap_or_else(|e| Either::B(failure(e)))
    })
    .await
}

fn rollback_text(r: &rollback::Report) -> String {
    if r.rolled_back.is_empty() {
        return "Nothing to roll back: no active changes.".to_string();
    }
    let mut s = format!(
        "Rolled back {} change{}:",
        r.rolled_back.len(),
        if r.rolled_back.len() == 1 { "" } else { "s" }
    );
    for c in &r.rolled_back {
        s.push_str(&format!("\n- {} {}", c.operation.as_str(), c.path));
    }
    if let Some(e) = &r.stopped {
        s.push_str(&format!("\nStopped before the rest: {}: {}", e.code, e.message));
    }
    s
}

/// `/pct review rollback <n|snapshotId>` (`key` given: that change and its Move partner) or all active changes,
/// newest first (`key` omitted). Takes the session's mutation permit first, so it never interleaves with the
/// agent's Write/Edit/apply_patch. Hash-guarded: a file changed since is `conflict` and nothing is touched.
/// `workspace` (the session's cwd) anchors it: changes recorded for another workspace are never rolled back from
/// here (`other-workspace`), whatever the store says.
#[napi(catch_unwind, ts_return_type = "Promise<ReviewRollbackOk | ReviewFailure>")]
pub async fn review_rollback(
    agent_dir: String,
    session_id: String,
    key: Option<String>,
    workspace: Option<String>,
) -> Either<ReviewRollbackOk, ReviewFailure> {
    let permit = lock::acquire(&session_id).await;
    blocking("review.rollback", move || {
        let _permit = permit;
        let which = match key.as_deref() {
            Some(k) => Which::One(k),
            None => Which::All,
        };
        let changes = match list_of(&agent_dir, &session_id) {
            Ok((_, c)) => c,
            Err(e) => return Either::B(failure(e)),
        };
        match rollback::rollback_in(
            Path::new(&agent_dir),
            &session_id,
            which,
            workspace.as_deref().map(Path::new),
        ) {
            Ok(r) => Either::A(ReviewRollbackOk {
                ok: true,
                text: rollback_text(&r),
                rolled_back: r
                    .rolled_back
                    .iter()
                    .map(|c| {
                        let n = changes.iter().position(|o| o.snapshot_id == c.snapshot_id).unwrap_or(0);
                        js_change(n + 1, c)
                    })
                    .collect(),
                paths: r.paths.iter().map(|p| p.display().to_string()).collect(),
                stopped: r.stopped.map(|e| ReviewStopped {
                    code: e.code.to_string(),
                    message: e.message,
                }),
            }),
            Err(e) => Either::B(failure(e)),
        }
    })
    .await
}

/// Start-up sweep of `<agentDir>/pi-codex-toolkit/review/`: removes the stores of sessions whose Pi session file
/// is gone (and idle in-memory ones), then prunes the oldest sessions over the 256 MiB total (docs/review.md).
#[napi(catch_unwind, ts_return_type = "Promise<ReviewSweepOk | ReviewFailure>")]
pub async fn review_sweep(
    agent_dir: String,
    current_session_id: Option<String>,
) -> Either<ReviewSweepOk, ReviewFailure> {
    blocking("review.sweep", move || {
        match prune::sweep(
            Path::new(&agent_dir),
            current_session_id.as_deref(),
            MAX_TOTAL_BYTES,
            std::time::SystemTime::now(),
        ) {
            Ok(s) => Either::A(ReviewSweepOk {
                ok: true,
                removed: s.removed,
                dropped_snapshots: s.dropped_snapshots as u32,
                total_bytes: s.total_bytes as i64,
            }),
            Err(e) => Either::B(failure(e)),
        }
    })
    .await
}

/// Removes one session's review store (an in-memory session at shutdown); resolves whether it existed.
#[napi(catch_unwind, ts_return_type = "Promise<boolean | ReviewFailure>")]
pub async fn review_remove_session(agent_dir: String, session_id: String) -> Either<bool, ReviewFailure> {
    blocking("review.removeSession", move || {
        match prune::remove_session(Path::new(&agent_dir), &session_id) {
            Ok(b) => Either::A(b),
            Err(e) => Either::B(failure(e)),
        }
    })
    .await
}
