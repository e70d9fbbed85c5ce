//! Host file tool bindings (docs/host.md, docs/spec/host-tools.md). Logic lives in src/host (no napi types there).
//! One `HostSession` per Pi session: it binds the workspace root and the scratch root when the session starts and
//! owns the session's snapshot store. Read / Glob / Grep run on tokio's blocking pool (never the libuv pool) and
//! resolve, never reject: typed results or `{ok: false, code, message}` with the spec's codes. A contained panic
//! resolves `{ok: false, code: "internal-panic", message}` (docs/napi.md "Panics").

use super::guard;
use crate::host::error::{Deadline, Suggestion};
use crate::host::glob::{self as hglob, GlobArgs, GlobResult};
use crate::host::grep::{self as hgrep, GrepArgs, GrepResult};
use crate::host::paths::{Resolved, Roots};
use crate::host::read::{self as hread, ReadArgs, ReadResult};
use crate::host::snapshot::SnapshotStore;
use crate::host::HostError;
use napi::bindgen_prelude::Either;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A structured follow-up call (Read of a directory suggests Glob).
#[napi(object)]
pub struct HostSuggestion {
    pub tool: String,
    pub path: String,
    pub pattern: String,
}

/// An expected failure: a stable code (every `HostCode` of src/host/error.rs, `AGENT_LIMIT` of a refused Task
/// slot, or internal-panic) and a message naming the model's next step. The union is checked against
/// `HostCode::ALL` by a test in src/host/error.rs.
#[napi(object)]
pub struct HostFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'INVALID_ARGUMENT' | 'PATH_OUTSIDE_WORKSPACE' | 'SENSITIVE_PATH' | 'NOT_FOUND' | 'TOOL_FAILED' | 'TOOL_TIMEOUT' | 'FILE_TOO_LARGE' | 'SHELL_NOT_FOUND' | 'HOST_OVERLOADED' | 'EDIT_TAG_REQUIRED' | 'EDIT_TAG_MISMATCH' | 'EDIT_TAG_UNKNOWN' | 'EDIT_LINES_UNSEEN' | 'EDIT_PARSE_FAILED' | 'EDIT_RANGE_INVALID' | 'EDIT_BLOCK_UNRESOLVED' | 'EDIT_REGISTER_EMPTY' | 'EDIT_REGISTER_AMBIGUOUS' | 'EDIT_BARE_CR' | 'EDIT_NO_CHANGE' | 'EDIT_AMPLIFICATION_LIMIT' | 'AGENT_LIMIT' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
    pub suggestion: Option<HostSuggestion>,
}

/// Options of one call. `approvedPath`: the canonical path (from `resolvePath`) the user approved for an external
/// request; the call resolves the path again and runs only if it still resolves there. `timeoutMs`: Glob, Grep,
/// Read and Write stop with TOOL_TIMEOUT after this long (no bound when omitted; docs/host.md "Timeouts").
#[napi(object)]
pub struct HostCallOptions {
    pub approved_path: Option<String>,
    pub timeout_ms: Option<u32>,
    /// Write: the Pi session that records the review change and whose mutation permit the call takes
    /// (docs/review.md).
    pub review: Option<super::review::ReviewTarget>,
}

pub(super) fn deadline(options: &Option<HostCallOptions>) -> Deadline {
    match options.as_ref().and_then(|o| o.timeout_ms) {
        Some(ms) => Deadline::after_ms(u64::from(ms)),
        None => Deadline::none(),
    }
}

/// Where a path resolves and which root it belongs to; `external` says why it is an external path request.
#[napi(object)]
pub struct HostPathInfo {
    #[napi(ts_type = "true")]
    pub ok: bool,
    #[napi(ts_type = "'workspace' | 'scratch' | 'external'")]
    pub root: String,
    #[napi(ts_type = "'dotdot-escape' | 'symlink-escape' | 'absolute-outside'")]
    pub external: Option<String>,
    /// The canonical absolute path (what an approval names).
    pub canonical: String,
    /// The path as results show it.
    pub path: String,
}

/// Read's result (docs/spec/host-tools.md): `text` is `[path#TAG]` then `N:text` rows.
#[napi(object)]
pub struct HostReadOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub path: String,
    #[napi(ts_type = "'workspace' | 'scratch' | 'external'")]
    pub root: String,
    pub offset: i64,
    pub line_count: i64,
    pub total_lines: i64,
    pub truncated: bool,
    pub file_bytes: i64,
    pub tag: String,
    pub clipped_lines: i64,
}

/// Glob's result: matching files, sorted, workspace-relative (absolute outside the workspace).
#[napi(object)]
pub struct HostGlobOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub path: String,
    #[napi(ts_type = "'workspace' | 'scratch' | 'external'")]
    pub root: String,
    pub files: Vec<String>,
    pub truncated: bool,
}

/// One matched line of Grep's content mode.
#[napi(object)]
pub struct HostGrepMatch {
    pub path: String,
    pub line: i64,
    pub text: String,
}

/// Matched lines of one file (Grep's count mode).
#[napi(object)]
pub struct HostGrepCount {
    pub path: String,
    pub count: i64,
}

/// Grep's result: `matches` (content mode), `files` (every mode), `counts` (count mode), `tags` per shown file.
#[napi(object)]
pub struct HostGrepOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub path: String,
    #[napi(ts_type = "'workspace' | 'scratch' | 'external'")]
    pub root: String,
    #[napi(ts_type = "'content' | 'filesWithMatches' | 'count'")]
    pub mode: String,
    pub matches: Vec<HostGrepMatch>,
    pub files: Vec<String>,
    pub counts: Vec<HostGrepCount>,
    pub tags: HashMap<String, String>,
    pub truncated: bool,
    pub binary_skipped: i64,
}

/// Size of the session's snapshot store (its bounds: 64 paths, 8 MiB).
#[napi(object)]
pub struct HostSnapshotStats {
    pub paths: i64,
    pub retained_bytes: i64,
}

pub(super) fn failure(e: HostError) -> HostFailure {
    HostFailure {
        ok: false,
        code: e.code.to_string(),
        message: e.message,
        suggestion: e.suggestion.map(|Suggestion { tool, path, pattern }| HostSuggestion {
            tool: tool.to_string(),
            path,
            pattern,
        }),
    }
}

pub(super) fn panicked(message: String) -> HostFailure {
    HostFailure {
        ok: false,
        code: guard::PANIC_CODE.to_string(),
        message,
        suggestion: None,
    }
}

fn read_ok(r: ReadResult) -> HostReadOk {
    HostReadOk {
        ok: true,
        text: r.text,
        path: r.path,
        root: r.root.as_str().to_string(),
        offset: r.offset as i64,
        line_count: r.line_count as i64,
        total_lines: r.total_lines as i64,
        truncated: r.truncated,
        file_bytes: r.file_bytes as i64,
        tag: r.tag,
        clipped_lines: r.clipped_lines as i64,
    }
}

fn glob_ok(r: GlobResult) -> HostGlobOk {
    HostGlobOk {
        ok: true,
        text: r.text,
        path: r.path,
        root: r.root.as_str().to_string(),
        files: r.files,
        truncated: r.truncated,
    }
}

fn grep_ok(r: GrepResult) -> HostGrepOk {
    HostGrepOk {
        ok: true,
        text: r.text,
        path: r.path,
        root: r.root.as_str().to_string(),
        mode: r.mode.as_str().to_string(),
        matches: r
            .matches
            .into_iter()
            .map(|m| HostGrepMatch {
                path: m.path,
                line: m.line as i64,
                text: m.text,
            })
            .collect(),
        files: r.files,
        counts: r
            .counts
            .into_iter()
            .map(|c| HostGrepCount {
                path: c.path,
                count: c.count as i64,
            })
            .collect(),
        tags: r.tags.into_iter().collect(),
        truncated: r.truncated,
        binary_skipped: r.binary_skipped as i64,
    }
}

/// The session state shared with blocking tasks.
pub(super) struct Session {
    pub(super) roots: Roots,
    pub(super) store: Mutex<SnapshotStore>,
    /// Write/Edit state: named registers, the retry budget, the per-session write lock (src/bind/host_edit.rs).
    pub(super) edit: crate::host::edit::EditState,
    /// Bash and its background tasks (src/bind/host_bash.rs).
    pub(super) bash: crate::host::bash::SessionTasks,
}

impl Session {
    pub(super) fn target(&self, raw: &str, options: &Option<HostCallOptions>) -> Result<Resolved, HostError> {
        let approved = options.as_ref().and_then(|o| o.approved_path.as_deref()).map(Path::new);
        self.roots.resolve_for_call(raw, approved)
    }
}

/// Runs a tool body on tokio's blocking pool inside a panic guard; resolves its result or a failure.
pub(super) async fn blocking<T: Send + 'static>(
    site: &'static str,
    f: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Either<T, HostFailure> {
    let joined = tokio::task::spawn_blocking(move || {
        guard::sync_or(
            site,
            || f().map(Either::A).unwrap_or_else(|e| Either::B(failure(e))),
            |m| Either::B(panicked(m)),
        )
    })
    .await;
    joined.unwrap_or_else(|e| Either::B(panicked(format!("the {site} task did not finish ({e})"))))
}

/// How long past its budget a bounded call may run before [`bounded`] answers for it: room for the body's own
/// deadline check (which can say "nothing was changed") to answer first.
pub(super) const HARD_GRACE: std::time::Duration = std::time::Duration::from_millis(1_000);

/// Bounds a tool call by `budget_ms` (plus [`HARD_GRACE`]): past it the call resolves `timed_out()` — a body blocked
/// in a system call on a stalled disk or mount cannot be interrupted, so it may still finish on its own thread,
/// holding the session's write lock until it does (docs/host.md "Timeouts"). No bound when `budget_ms` is None.
pub(super) async fn bounded<T>(
    budget_ms: Option<u32>,
    fut: impl std::future::Future<Output = T>,
    timed_out: impl FnOnce(u32) -> T,
) -> T {
    let Some(ms) = budget_ms else {
        return fut.await;
    };
    let limit = std::time::Duration::from_millis(u64::from(ms)) + HARD_GRACE;
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => timed_out(ms),
    }
}

/// The TOOL_TIMEOUT of a Write or Edit that [`bounded`] gave up on: its outcome is unknown.
pub(super) fn outcome_unknown(tool: &str, ms: u32) -> HostError {
    HostError::new(
        crate::host::error::TOOL_TIMEOUT,
        format!(
            "{tool} did not finish within its {ms} ms budget (a stalled disk or mount) and may still complete. Read \
             the file before retrying: do not assume it changed or not."
        ),
    )
}

/// One Pi session's host tools: roots bound at construction, the snapshot store in memory.
#[napi(js_name = "HostSession")]
pub struct JsHostSession {
    pub(super) inner: Arc<Session>,
}

#[napi]
impl JsHostSession {
    /// Binds `workspace` (ctx.cwd at session start; never follows later cwd changes) and the scratch root
    /// `<agentDir>/pi-codex-toolkit/scratch/<sessionId>/` (created lazily). Throws an Error whose `code` is the
    /// failure's code when the workspace is not an existing absolute directory or the session id is not one segment.
    #[napi(constructor, catch_unwind)]
    pub fn new(env: &napi::Env, workspace: String, agent_dir: String, session_id: String) -> napi::Result<Self> {
        guard::sync(env, "host.new", || {
            match Roots::new(Path::new(&workspace), Path::new(&agent_dir), &session_id) {
                Ok(roots) => Ok(JsHostSession {
                    inner: review_subscribed(
                        &session_id,
                        Arc::new(Session {
                            roots,
                            store: Mutex::new(SnapshotStore::new()),
                            edit: Default::default(),
                            bash: crate::host::bash::SessionTasks::for_session(),
                        }),
                    ),
                }),
                Err(e) => Err(guard::throw(env, e.code.as_str(), &e.message)),
            }
        })
    }

    /// The canonical workspace root.
    #[napi(getter, catch_unwind)]
    pub fn workspace(&self, env: &napi::Env) -> napi::Result<String> {
        guard::sync(env, "host.workspace", || {
            Ok(self.inner.roots.workspace().display().to_string())
        })
    }

    /// The session scratch root (absolute; may not exist yet).
    #[napi(getter, catch_unwind)]
    pub fn scratch(&self, env: &napi::Env) -> napi::Result<String> {
        guard::sync(env, "host.scratch", || {
            Ok(self.inner.roots.scratch().display().to_string())
        })
    }

    /// Classifies a path without touching it: the permission layer asks about `external` ones.
    #[napi(catch_unwind, ts_return_type = "HostPathInfo | HostFailure")]
    pub fn resolve_path(&self, raw: String) -> Either<HostPathInfo, HostFailure> {
        guard::sync_or(
            "host.resolvePath",
            || match self.inner.roots.resolve(&raw) {
                Ok(r) => Either::A(HostPathInfo {
                    ok: true,
                    root: r.root.as_str().to_string(),
                    external: r.external.map(|x| x.as_str().to_string()),
                    canonical: r.canonical.display().to_string(),
                    path: r.shown,
                }),
                Err(e) => Either::B(failure(e)),
            },
            |m| Either::B(panicked(m)),
        )
    }

    /// Read `{path | file_path, offset?, limit?}`.
    #[napi(catch_unwind, ts_return_type = "Promise<HostReadOk | HostFailure>")]
    pub async fn read(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<HostCallOptions>,
    ) -> Either<HostReadOk, HostFailure> {
        let s = self.inner.clone();
        blocking("host.read", move || {
            let a = ReadArgs::from_json(&args)?;
            let t = s.target(&a.path, &options)?;
            let mut rec = &s.store;
            hread::read(&t, &a, deadline(&options), &mut rec).map(read_ok)
        })
        .await
    }

    /// Glob `{pattern | query, path?, limit?}` (path defaults to the workspace root).
    #[napi(catch_unwind, ts_return_type = "Promise<HostGlobOk | HostFailure>")]
    pub async fn glob(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<HostCallOptions>,
    ) -> Either<HostGlobOk, HostFailure> {
        let s = self.inner.clone();
        blocking("host.glob", move || {
            let a = GlobArgs::from_json(&args)?;
            let t = s.target(a.path.as_deref().unwrap_or("."), &options)?;
            hglob::glob(&s.roots, &t, &a, deadline(&options)).map(glob_ok)
        })
        .await
    }

    /// Grep `{pattern | query, path?, glob?, ignoreCase?, literal?, context?, limit?, outputMode?}`.
    #[napi(catch_unwind, ts_return_type = "Promise<HostGrepOk | HostFailure>")]
    pub async fn grep(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<HostCallOptions>,
    ) -> Either<HostGrepOk, HostFailure> {
        let s = self.inner.clone();
        blocking("host.grep", move || {
            let a = GrepArgs::from_json(&args)?;
            let t = s.target(a.path.as_deref().unwrap_or("."), &options)?;
            let mut rec = &s.store;
            hgrep::grep(&s.roots, &t, &a, deadline(&options), &mut rec).map(grep_ok)
        })
        .await
    }

    /// How much the snapshot store holds (tests and the memory benchmark check its bounds).
    #[napi(catch_unwind)]
    pub fn snapshot_stats(&self, env: &napi::Env) -> napi::Result<HostSnapshotStats> {
        guard::sync(env, "host.snapshotStats", || {
            let st = self.inner.store.lock().unwrap_or_else(|p| p.into_inner());
            Ok(HostSnapshotStats {
                paths: st.path_count() as i64,
                retained_bytes: st.retained_bytes() as i64,
            })
        })
    }
}

/// Result of the scratch sweep: the removed scratch directory names (session ids), sorted.
#[napi(object)]
pub struct HostSweepOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub removed: Vec<String>,
}

/// Start-up sweep of `<agentDir>/pi-codex-toolkit/scratch/`: removes the directories of sessions not in
/// `liveSessionIds` and those untouched for 7 days (docs/host.md "Paths").
/// Async: the walk and the deletes run on tokio's blocking pool, never on Node's main thread.
#[napi(catch_unwind, ts_return_type = "Promise<HostSweepOk | HostFailure>")]
pub async fn host_sweep_scratch(agent_dir: String, live_session_ids: Vec<String>) -> Either<HostSweepOk, HostFailure> {
    blocking("host.sweepScratch", move || {
        let removed =
            crate::host::scratch::sweep(Path::new(&agent_dir), &live_session_ids, std::time::SystemTime::now())?;
        Ok(HostSweepOk { ok: true, removed })
    })
    .await
}

/// A rollback of `/pct review` replaced these paths' content: their snapshot entries go (docs/review.md "Rollback").
impl crate::review::invalidate::Invalidate for Session {
    fn invalidate(&self, path: &Path) {
        self.store.lock().unwrap_or_else(|p| p.into_inner()).invalidate(path);
    }
}

/// Subscribes the session's snapshot store to rollbacks of its Pi session (held weakly), then returns it.
fn review_subscribed(session_id: &str, s: Arc<Session>) -> Arc<Session> {
    let weak: std::sync::Weak<dyn crate::review::invalidate::Invalidate> = Arc::downgrade(&s) as _;
    crate::review::invalidate::subscribe(session_id, weak);
    s
}
