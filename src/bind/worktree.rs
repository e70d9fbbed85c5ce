//! Binding of isolated session worktrees (src/worktree, docs/worktrees.md). Everything that runs git or walks the
//! filesystem is async (on the blocking pool, never on Node's main thread) except the per-call folder check, which
//! is a handful of `lstat`s. Failures resolve `{ok: false, code, message}`.

use super::guard;
use crate::worktree::{create, delegate, layout, manage, merge, ports, real, WorktreeCode, WorktreeError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One worktree of the project (`/pct worktree list`, the start-up sweep).
#[napi(object)]
pub struct WorktreeEntry {
    pub id: String,
    pub path: String,
    pub branch: String,
    #[napi(ts_type = "'in-use' | 'idle' | 'missing' | 'leftover'")]
    pub state: String,
    /// Why it is missing or leftover.
    pub why: Option<String>,
    pub lock_pid: Option<u32>,
    pub created_ms: f64,
}

/// What a worktree call resolves. `ok: false` carries `code` and `message`; the other fields belong to the call
/// that fills them (docs/worktrees.md "Commands").
#[napi(object)]
#[derive(Default)]
pub struct WorktreeResult {
    pub ok: bool,
    #[napi(
        ts_type = "'WORKTREE_NOT_GIT' | 'WORKTREE_DETACHED_HEAD' | 'WORKTREE_UNBORN_HEAD' | 'WORKTREE_MISSING' | 'WORKTREE_EXISTS' | 'WORKTREE_BAD_NAME' | 'WORKTREE_NOT_FOUND' | 'WORKTREE_CONFLICT' | 'WORKTREE_MOVED' | 'WORKTREE_PROJECT_DIRTY' | 'WORKTREE_UNMERGED' | 'WORKTREE_IN_USE' | 'WORKTREE_NO_PORTS' | 'WORKTREE_GIT_FAILED' | 'WORKTREE_IO' | 'internal-panic'"
    )]
    pub code: Option<String>,
    pub message: Option<String>,
    /// The worktree id, folder, branch, project folder, base commit and project branch it came from.
    pub id: Option<String>,
    pub path: Option<String>,
    pub branch: Option<String>,
    pub project: Option<String>,
    pub base: Option<String>,
    pub base_branch: Option<String>,
    /// create: where the session should work (the worktree, or the same sub-folder inside it).
    pub cwd: Option<String>,
    /// create: what `.worktreeinclude` copied.
    pub files_copied: Option<f64>,
    pub links_copied: Option<f64>,
    pub bytes_copied: Option<f64>,
    pub skipped: Option<Vec<String>>,
    pub add_ms: Option<f64>,
    pub total_ms: Option<f64>,
    /// status: the project's branch now, commits ahead/behind it, `git status --porcelain` lines.
    pub project_branch: Option<String>,
    pub ahead: Option<u32>,
    pub behind: Option<u32>,
    pub changed: Option<Vec<String>>,
    pub changed_total: Option<u32>,
    /// list.
    pub entries: Option<Vec<WorktreeEntry>>,
    /// merge preview: both commits, the commits and files the project would get (capped; totals given), the token.
    pub project_commit: Option<String>,
    pub worktree_commit: Option<String>,
    pub commits: Option<Vec<String>>,
    pub commits_total: Option<u32>,
    pub files: Option<Vec<String>>,
    pub files_total: Option<u32>,
    pub committed_work: Option<bool>,
    pub synced: Option<bool>,
    pub token: Option<String>,
    /// delete: the snapshot ref and what happened to the folder (`tree`, `link`, `nothing`, or why it stayed).
    pub snapshot: Option<String>,
    pub folder: Option<String>,
    /// delete and the session sweep: how many of the toolkit's session files were removed.
    pub sessions_removed: Option<u32>,
    /// init: exit status (null: killed), whether the time limit hit, the end of the output and the log file.
    pub status: Option<i32>,
    pub timed_out: Option<bool>,
    pub tail: Option<String>,
    pub log: Option<String>,
    /// port lease: the first port of the block.
    pub port: Option<u32>,
    /// delegate finish: what became of the delegate's worktree, the session worktree it merged into, the
    /// conflicting paths, and how many review records moved to the session worktree.
    #[napi(ts_type = "'merged' | 'unchanged' | 'conflict' | 'kept'")]
    pub outcome: Option<String>,
    pub target: Option<String>,
    pub conflicts: Option<Vec<String>>,
    pub review_moved: Option<u32>,
}

fn fail(e: WorktreeError) -> WorktreeResult {
    WorktreeResult {
        ok: false,
        code: Some(e.code.as_str().into()),
        message: Some(e.message),
        ..Default::default()
    }
}

fn panicked(m: String) -> WorktreeResult {
    WorktreeResult {
        ok: false,
        code: Some(guard::PANIC_CODE.into()),
        message: Some(m),
        ..Default::default()
    }
}

fn ok() -> WorktreeResult {
    WorktreeResult {
        ok: true,
        ..Default::default()
    }
}

fn with_record(r: &layout::Record) -> WorktreeResult {
    WorktreeResult {
        ok: true,
        id: Some(r.id.clone()),
        path: Some(r.path.clone()),
        branch: Some(r.branch.clone()),
        project: Some(r.project.clone()),
        base: Some(r.base.clone()),
        base_branch: Some(r.base_branch.clone()),
        ..Default::default()
    }
}

/// Runs a blocking body on the blocking pool inside the panic guard.
async fn blocking(site: &'static str, f: impl FnOnce() -> WorktreeResult + Send + 'static) -> WorktreeResult {
    let joined = tokio::task::spawn_blocking(move || guard::sync_or(site, f, panicked)).await;
    joined.unwrap_or_else(|e| panicked(format!("the {site} task did not finish ({e})")))
}

/// The record of the worktree a session folder lies in, or why there is none usable.
fn record_of(agent_dir: &str, cwd: &str) -> Result<layout::Record, WorktreeError> {
    let Some(at) = layout::locate(Path::new(agent_dir), Path::new(cwd)) else {
        return Err(WorktreeError::new(
            WorktreeCode::NotFound,
            format!("{cwd} is not in a worktree of the toolkit."),
        ));
    };
    at.record.ok_or_else(|| {
        WorktreeError::new(
            WorktreeCode::Missing,
            format!("The record of worktree {} is missing or unreadable.", at.id),
        )
    })
}

/// Where a session folder stands: not in a worktree (`null`), or in one (`ok: true` with its record, or
/// `WORKTREE_MISSING` when its folder or a folder on the way is missing or a link). Synchronous: a few `lstat`s,
/// run before every toolkit tool call of a worktree session.
#[napi(catch_unwind)]
pub fn worktree_check(env: &napi::Env, agent_dir: String, cwd: String) -> napi::Result<Option<WorktreeResult>> {
    guard::sync(env, "worktree.check", || {
        let Some(at) = layout::locate(Path::new(&agent_dir), Path::new(&cwd)) else {
            return Ok(None);
        };
        let Some(rec) = at.record.clone() else {
            return Ok(Some(fail(WorktreeError::new(
                WorktreeCode::Missing,
                format!("The record of worktree {} is missing or unreadable.", at.id),
            ))));
        };
        // The stored canonical folder and the folder the session works in, every component of both.
        let root = PathBuf::from(&rec.path);
        for p in [root.clone(), root.join(&at.sub)] {
            if let Err(u) = real::check_real_dir(&p) {
                let mut r = fail(create::missing(&u));
                r.id = Some(rec.id.clone());
                r.path = Some(rec.path.clone());
                r.project = Some(rec.project.clone());
                return Ok(Some(r));
            }
        }
        if at.root != root {
            // The session names the worktree by another path than the one stored (e.g. through a link).
            return Ok(Some(fail(WorktreeError::new(
                WorktreeCode::Missing,
                format!(
                    "The session folder {cwd} does not lead to the worktree's own folder {}.",
                    rec.path
                ),
            ))));
        }
        Ok(Some(with_record(&rec)))
    })
}

/// Creates a worktree of the project at `cwd` (named `name`, else a fresh id), locked for process `pid`.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_create(agent_dir: String, cwd: String, name: Option<String>, pid: u32) -> WorktreeResult {
    blocking("worktree.create", move || {
        match create::create(Path::new(&agent_dir), Path::new(&cwd), name.as_deref(), pid) {
            Ok(c) => WorktreeResult {
                cwd: Some(c.cwd.to_string_lossy().into_owned()),
                files_copied: Some(c.copied.files as f64),
                links_copied: Some(c.copied.links as f64),
                bytes_copied: Some(c.copied.bytes as f64),
                skipped: Some(c.copied.skipped),
                add_ms: Some(c.add_ms as f64),
                total_ms: Some(c.total_ms as f64),
                ..with_record(&c.record)
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Runs the init command once in `dir` as `shell ...args command`, with `env` added; output to `log`.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_init(
    shell: String,
    args: Vec<String>,
    command: String,
    dir: String,
    env: HashMap<String, String>,
    log: String,
) -> WorktreeResult {
    blocking("worktree.init", move || {
        let env: Vec<(String, String)> = env.into_iter().collect();
        match create::run_init(
            &shell,
            &args,
            &command,
            Path::new(&dir),
            &env,
            Path::new(&log),
            create::INIT_TIMEOUT,
        ) {
            Ok(o) => WorktreeResult {
                ok: true,
                status: o.status,
                timed_out: Some(o.timed_out),
                tail: Some(o.tail),
                log: Some(o.log.to_string_lossy().into_owned()),
                ..Default::default()
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// `git worktree lock` (`lock: true`, for process `pid`) or unlock (only a lock `pid` holds) of the session's
/// worktree.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_lock(agent_dir: String, cwd: String, lock: bool, pid: u32) -> WorktreeResult {
    blocking("worktree.lock", move || {
        let rec = match record_of(&agent_dir, &cwd) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        if let Err(u) = real::check_real_dir(Path::new(&rec.path)) {
            return fail(create::missing(&u));
        }
        let git = crate::worktree::git::Git::new(&rec.project);
        let r = if lock {
            manage::lock(&git, Path::new(&rec.path), pid)
        } else {
            manage::unlock(&git, Path::new(&rec.path), pid).map(|_| ())
        };
        match r {
            Ok(()) => with_record(&rec),
            Err(e) => fail(e),
        }
    })
    .await
}

/// Leases the `PI_PORT` block of `holder` (its own block if it has one).
#[napi(catch_unwind)]
pub fn worktree_port_lease(env: &napi::Env, agent_dir: String, holder: String) -> napi::Result<WorktreeResult> {
    guard::sync(env, "worktree.portLease", || {
        Ok(match ports::lease(Path::new(&agent_dir), &holder) {
            Ok(p) => WorktreeResult {
                port: Some(u32::from(p)),
                ..ok()
            },
            Err(e) => fail(e),
        })
    })
}

/// Frees `holder`'s port block; `true` when it held one.
#[napi(catch_unwind)]
pub fn worktree_port_release(env: &napi::Env, holder: String) -> napi::Result<bool> {
    guard::sync(env, "worktree.portRelease", || Ok(ports::release(&holder)))
}

/// The project of a session folder (`root`, `branch`, key in `id`); refusals as `create` has them.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_project(cwd: String) -> WorktreeResult {
    blocking("worktree.project", move || match create::project_of(Path::new(&cwd)) {
        Ok(p) => WorktreeResult {
            project: Some(p.root.to_string_lossy().into_owned()),
            project_branch: Some(p.branch),
            base: Some(p.head),
            id: Some(p.key),
            ..ok()
        },
        Err(e) => fail(e),
    })
    .await
}

/// The worktrees of `project` with their state.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_list(agent_dir: String, project: String) -> WorktreeResult {
    blocking("worktree.list", move || {
        match manage::list(Path::new(&agent_dir), Path::new(&project)) {
            Ok(l) => WorktreeResult {
                entries: Some(
                    l.into_iter()
                        .map(|e| WorktreeEntry {
                            id: e.id,
                            path: e.path,
                            branch: e.branch,
                            state: e.state.into(),
                            why: e.why,
                            lock_pid: e.lock_pid,
                            created_ms: e.created_ms as f64,
                        })
                        .collect(),
                ),
                ..ok()
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Where the session's worktree stands against the project.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_status(agent_dir: String, cwd: String) -> WorktreeResult {
    blocking("worktree.status", move || {
        let rec = match record_of(&agent_dir, &cwd) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        match manage::status(&rec) {
            Ok(s) => WorktreeResult {
                project_branch: s.project_branch,
                ahead: Some(s.ahead),
                behind: Some(s.behind),
                changed_total: Some(s.changed_total as u32),
                changed: Some(s.changed),
                ..with_record(&rec)
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Merge step 1: commit the worktree's work, sync the project branch into it, preview (with the token).
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_merge_prepare(agent_dir: String, cwd: String) -> WorktreeResult {
    blocking("worktree.mergePrepare", move || {
        let rec = match record_of(&agent_dir, &cwd) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        match merge::prepare(&rec) {
            Ok(p) => WorktreeResult {
                project_branch: Some(p.project_branch),
                project_commit: Some(p.project_commit),
                worktree_commit: Some(p.worktree_commit),
                commits: Some(p.commits),
                commits_total: Some(p.commits_total as u32),
                files: Some(p.files),
                files_total: Some(p.files_total as u32),
                committed_work: Some(p.committed_work),
                synced: Some(p.synced),
                token: Some(p.token),
                ..with_record(&rec)
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Merge step 2: fast-forward the project when `token` still matches both sides.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_merge_apply(agent_dir: String, cwd: String, token: String) -> WorktreeResult {
    blocking("worktree.mergeApply", move || {
        let rec = match record_of(&agent_dir, &cwd) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        match merge::apply(&rec, &token) {
            Ok(a) => WorktreeResult {
                project_branch: Some(a.project_branch),
                project_commit: Some(a.from),
                worktree_commit: Some(a.to),
                files_total: Some(a.files as u32),
                ..with_record(&rec)
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Deletes worktree `id` of `project` (see src/worktree/manage.rs `delete`).
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_delete(agent_dir: String, project: String, id: String, force: bool, pid: u32) -> WorktreeResult {
    blocking("worktree.delete", move || {
        match manage::delete(Path::new(&agent_dir), Path::new(&project), &id, force, pid) {
            Ok(d) => WorktreeResult {
                id: Some(d.id),
                snapshot: d.snapshot,
                folder: Some(d.folder),
                sessions_removed: Some(d.sessions as u32),
                ..ok()
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Removes the toolkit's session files that nobody continued for a week and whose worktree is gone (or that
/// never were in one), except `keep`, the caller's own session file (docs/worktrees.md "How the session moves").
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_sessions_sweep(agent_dir: String, keep: Option<String>) -> WorktreeResult {
    blocking("worktree.sessions", move || {
        let removed = crate::worktree::sessions::sweep(
            Path::new(&agent_dir),
            keep.as_deref().map(Path::new),
            crate::worktree::sessions::MAX_AGE,
            std::time::SystemTime::now(),
        );
        WorktreeResult {
            sessions_removed: Some(removed as u32),
            ..ok()
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use crate::codes::check::{dts_union, with_extra};

    #[test]
    fn the_code_union_in_index_d_ts_is_every_worktree_code() {
        let words = crate::worktree::WorktreeCode::ALL.iter().map(|c| c.as_str());
        assert_eq!(
            dts_union(include_str!("../../index.d.ts"), "WorktreeResult", "code"),
            with_extra(words, &["internal-panic"])
        );
    }
}

/// Makes the own worktree of write-capable delegate `agent` of the worktree session at `cwd`: a checkpoint of the
/// session worktree (left exactly as it is), branch `pct/dg-...` and its worktree, locked for process `pid`
/// (docs/worktrees.md "Delegates"). `base` is the checkpoint; `committedWork` says it holds uncommitted work.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_delegate_start(agent_dir: String, cwd: String, agent: String, pid: u32) -> WorktreeResult {
    blocking("worktree.delegate_start", move || {
        match delegate::start(Path::new(&agent_dir), Path::new(&cwd), &agent, pid) {
            Ok(s) => WorktreeResult {
                cwd: Some(s.cwd.to_string_lossy().into_owned()),
                committed_work: Some(s.checkpoint_made),
                ..with_record(&s.record)
            },
            Err(e) => fail(e),
        }
    })
    .await
}

/// Ends a delegate's worktree (the folder it worked in): commits its work; with `merge` merges it into its session
/// worktree (removing it when clean) and moves the review records of `reviewSession` there; else keeps it.
#[napi(ts_return_type = "Promise<WorktreeResult>")]
pub async fn worktree_delegate_finish(
    agent_dir: String,
    cwd: String,
    merge: bool,
    review_session: Option<String>,
) -> WorktreeResult {
    blocking("worktree.delegate_finish", move || {
        let f = match delegate::finish(Path::new(&agent_dir), Path::new(&cwd), merge) {
            Ok(f) => f,
            Err(e) => return fail(e),
        };
        let mut moved = None;
        if let (delegate::Outcome::Merged, Some(session)) = (f.outcome, review_session.as_deref()) {
            // The records stay usable even when this fails: they then name the removed folder, and the review
            // says the file is gone there; the merge itself is done.
            moved = crate::review::retarget::retarget(
                Path::new(&agent_dir),
                session,
                Path::new(&f.record.path),
                Path::new(&f.parent_path),
            )
            .ok()
            .map(|n| n as u32);
        }
        WorktreeResult {
            outcome: Some(f.outcome.as_str().into()),
            target: Some(f.parent_path.clone()),
            worktree_commit: Some(f.tip.clone()),
            files: Some(f.files.clone()),
            files_total: Some(f.files_total as u32),
            conflicts: Some(f.conflicts.clone()),
            tail: f.why.clone(),
            review_moved: moved,
            ..with_record(&f.record)
        }
    })
    .await
}
