//! The `apply_patch` executor: parses a Codex patch, preflights all of it (paths, containment, aliases, sources,
//! every match) before any write, then stages and commits per path with exact partial/unknown reporting.
//!
//! Plain Rust API (no napi types) so the direct Pi tool (through `src/lib.rs`) and code cells (Rust-to-Rust) share
//! one executor: [`apply`] does the work, [`touched_paths`] tells a caller which files to serialize on first.
//! All applies in the process are serialized by one lock, nested calls included.

pub(crate) mod beneath;
mod commit;
mod error;
mod journal;
mod matcher;
mod parser;
mod paths;
mod preflight;
mod review;
mod shown;
mod text;

pub use commit::Faults;
#[allow(unused_imports)] // Outcome is part of the API code cells use
pub use error::{Outcome, PatchCode, PatchError};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Serializes every patch in the process (preflight through commit), so two patches never interleave.
static PATCH_LOCK: Mutex<()> = Mutex::new(());

/// Kind of one applied operation, as reported to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationKind {
    Add,
    Update,
    Delete,
    Move,
}

impl OperationKind {
    /// `add`, `update`, `delete` or `move` (the `operation` field of the tool details).
    pub fn as_str(self) -> &'static str {
        match self {
            OperationKind::Add => "add",
            OperationKind::Update => "update",
            OperationKind::Delete => "delete",
            OperationKind::Move => "move",
        }
    }
}

/// One applied operation: `path` is workspace-relative (normalised); `from` is the Move source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub kind: OperationKind,
    pub path: String,
    pub from: Option<String>,
    /// What changed, for the person (docs/render.md "Diffs"); None for a Delete and a plain Move.
    pub view: Option<crate::diffview::View>,
}

/// A successfully applied patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub operations: Vec<Operation>,
    /// Notes after the operations (a file the patch was carried over to after it changed, docs/patch.md "Drift").
    pub notes: Vec<String>,
}

impl Applied {
    /// The tool result text: `Applied patch:` then `- add p` / `- update p` / `- delete p` / `- move a -> b`.
    pub fn text(&self) -> String {
        let mut s = String::from("Applied patch:");
        for op in &self.operations {
            s.push_str("\n- ");
            match &op.from {
                Some(from) => s.push_str(&format!("move {from} -> {}", op.path)),
                None => s.push_str(&format!("{} {}", op.kind.as_str(), op.path)),
            }
        }
        for n in &self.notes {
            s.push_str("\nNote: ");
            s.push_str(n);
        }
        s
    }
}

/// The operations of a committed plan, each with the person's view of its change (docs/render.md "Diffs"): an
/// Add's lines, an Update's (or a Move's rewrite's) diff; a Delete has none. One deadline covers the whole patch.
fn operations(plan: &preflight::Plan) -> Vec<Operation> {
    use crate::diffview::{self, Limits, LIMITS};
    use crate::review::diff;
    use preflight::Step;
    let end = std::time::Instant::now() + LIMITS.deadline;
    let limits = || Limits {
        deadline: end.saturating_duration_since(std::time::Instant::now()),
        ..LIMITS
    };
    let rewrite = |r: &preflight::Rewrite| diffview::bytes(&r.old, &r.new, &limits());
    plan.steps
        .iter()
        .map(|s| match s {
            Step::Add { path, content } => Operation {
                kind: OperationKind::Add,
                path: path.rel.clone(),
                from: None,
                view: Some(match diff::as_text(content) {
                    Some(t) => diffview::created(t, &limits()),
                    None => diffview::bytes(b"", content, &limits()),
                }),
            },
            Step::Update { path, rewrite: r, .. } => Operation {
                kind: OperationKind::Update,
                path: path.rel.clone(),
                from: None,
                view: Some(rewrite(r)),
            },
            Step::Delete { path, .. } => Operation {
                kind: OperationKind::Delete,
                path: path.rel.clone(),
                from: None,
                view: None,
            },
            Step::Move {
                from, to, rewrite: r, ..
            } => Operation {
                kind: OperationKind::Move,
                path: to.rel.clone(),
                from: Some(from.rel.clone()),
                view: r.as_ref().map(rewrite),
            },
        })
        .collect()
}

fn aborted() -> PatchError {
    PatchError::no_change(PatchCode::Aborted, "aborted")
}

fn unavailable(cwd: &Path, e: &std::io::Error) -> PatchError {
    PatchError::no_change(
        PatchCode::WorkspaceUnavailable,
        format!(
            "workspace folder is not accessible ({}): '{}'",
            crate::errno::code(e),
            cwd.display()
        ),
    )
}

/// Finishes what an interrupted patch (its process died mid-commit) left: see `journal`. When a half-written file
/// had to be put back, or a file of that patch is in neither state, this patch is refused (nothing of it applied)
/// so the model re-reads those files first.
fn recover(root: &mut beneath::Root, cwd: &Path) -> Result<(), PatchError> {
    let found = journal::recover(root, cwd).map_err(|e| {
        PatchError::no_change(
            PatchCode::RecoveryFailed,
            format!(
                "an interrupted earlier patch could not be finished ({}): check the '{}*{}' file in the workspace root",
                crate::errno::code(&e),
                journal::PREFIX,
                journal::SUFFIX
            ),
        )
    })?;
    root.forget();
    if found.is_empty() {
        return Ok(());
    }
    let pick = |restored: bool| -> Vec<String> {
        found
            .iter()
            .filter_map(|r| match r {
                journal::Recovered::Restored(p) if restored => Some(paths::shown(p)),
                journal::Recovered::Left(p) if !restored => Some(paths::shown(p)),
                _ => None,
            })
            .collect()
    };
    let (restored, left) = (pick(true), pick(false));
    Err(PatchError::no_change(
        PatchCode::InterruptedPatch,
        format!(
            "an earlier apply_patch was interrupted while writing; restored to their content before it: {}; changed since and left as they are: {}. Nothing of this patch was applied: re-read these files, then send it again",
            if restored.is_empty() { "none".to_string() } else { restored.join(", ") },
            if left.is_empty() { "none".to_string() } else { left.join(", ") },
        ),
    ))
}

fn check_workspace(cwd: &Path) -> Result<(), PatchError> {
    match std::fs::metadata(cwd) {
        Ok(md) if md.is_dir() => Ok(()),
        Ok(_) => Err(PatchError::no_change(
            PatchCode::WorkspaceUnavailable,
            format!("workspace folder is not a directory: '{}'", cwd.display()),
        )),
        Err(e) => Err(PatchError::no_change(
            PatchCode::WorkspaceUnavailable,
            format!(
                "workspace folder is not accessible ({}): '{}'",
                crate::errno::code(&e),
                cwd.display()
            ),
        )),
    }
}

/// Applies a patch relative to the workspace `cwd`. `abort` is honoured before preflight, before staging and
/// before the first commit step (`apply_patch failed (no-change): aborted`). Uses the `PCT_TEST_PATCH_FAULT`
/// test hook when that variable is set.
#[cfg_attr(not(test), allow(dead_code))] // the plain API of docs/patch.md; the tools call `apply_reviewed`
pub fn apply(cwd: &Path, patch: &str, abort: &AtomicBool) -> Result<Applied, PatchError> {
    apply_with(cwd, patch, abort, Faults::from_env())
}

/// [`apply`] that also records a review change per touched path for `target`'s session (docs/review.md): recorded
/// after preflight and before staging, kept for the operations that took effect. The caller holds the session's
/// mutation permit (`review::lock`), taken before the process-wide patch lock below.
pub fn apply_reviewed(
    cwd: &Path,
    patch: &str,
    abort: &AtomicBool,
    target: Option<&crate::review::Target>,
) -> Result<Applied, PatchError> {
    apply_inner(cwd, patch, abort, Faults::from_env(), target)
}

/// [`apply`] with an explicit fault plan (tests).
#[cfg_attr(not(test), allow(dead_code))]
pub fn apply_with(cwd: &Path, patch: &str, abort: &AtomicBool, faults: Faults) -> Result<Applied, PatchError> {
    apply_inner(cwd, patch, abort, faults, None)
}

fn review_failed(e: crate::review::ReviewError) -> PatchError {
    PatchError::no_change(
        PatchCode::ReviewFailed,
        format!(
            "the review change could not be recorded before writing ({}); nothing was changed",
            e.message
        ),
    )
}

/// [`apply_with`] with an optional review recording.
pub fn apply_inner(
    cwd: &Path,
    patch: &str,
    abort: &AtomicBool,
    faults: Faults,
    target: Option<&crate::review::Target>,
) -> Result<Applied, PatchError> {
    if abort.load(Ordering::SeqCst) {
        return Err(aborted());
    }
    let parsed = parser::parse(patch)?;
    let _guard = PATCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    check_workspace(cwd)?;
    let mut root = beneath::Root::open(cwd).map_err(|e| unavailable(cwd, &e))?;
    recover(&mut root, cwd)?;
    // The copies the session's host tools showed the model, for a chunk whose context drifted (docs/patch.md
    // "Drift"): keyed by the canonical path, as the snapshot store is.
    let canonical_cwd = std::fs::canonicalize(cwd).ok();
    let shown = |rel: &str| -> Vec<std::sync::Arc<str>> {
        match (target, &canonical_cwd) {
            (Some(t), Some(c)) => crate::review::invalidate::shown(&t.session_id, &c.join(rel)),
            _ => Vec::new(),
        }
    };
    let plan = preflight::preflight(cwd, &mut root, &parsed, &shown)?;
    if abort.load(Ordering::SeqCst) {
        return Err(aborted());
    }
    let Some(target) = target else {
        commit::stage_and_commit(&mut root, &plan, abort, faults, &mut |_| {})?;
        return Ok(Applied {
            operations: operations(&plan),
            notes: plan.notes,
        });
    };
    let reads = review::read_sources(&mut root, &plan)?;
    let workspace = std::fs::canonicalize(cwd).map_err(|e| unavailable(cwd, &e))?;
    let recording =
        crate::review::record::prepare(target, &workspace, &review::captures(&plan, &reads)).map_err(review_failed)?;
    let mut committed = vec![false; plan.steps.len()];
    let result = commit::stage_and_commit(&mut root, &plan, abort, faults, &mut |i| committed[i] = true);
    // Changes of operations that did not take effect leave the store; a store failure here cannot undo the commit,
    // so it only loses those records (the rollback guard refuses them anyway: their after-hash never landed).
    let _ = recording.finish(|i| committed[i]);
    result?;
    Ok(Applied {
        operations: operations(&plan),
        notes: plan.notes,
    })
}

/// Every absolute path the patch would touch (Move source and destination included), sorted and deduplicated,
/// so a caller can take per-file locks (Pi's `withFileMutationQueue`) in one global order before [`apply`].
/// Fails with the same parse/path-syntax error `apply` would report.
pub fn touched_paths(cwd: &Path, patch: &str) -> Result<Vec<PathBuf>, PatchError> {
    let parsed = parser::parse(patch)?;
    let all = preflight::validate_paths(cwd, &parsed)?;
    let mut out: Vec<PathBuf> = all.into_iter().flatten().map(|p| p.abs).collect();
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests;
