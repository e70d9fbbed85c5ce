//! The cell manager: starts cells, observes them for `exec`/`wait`, bridges their nested calls to the
//! adapters (check order, limits, approval, slots) and enforces every §7 limit. Plain Rust (no napi): lib.rs
//! binds it, tests drive it with fake adapters.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};

use super::adapters::{normalize_nested_args, session_id_of, Adapters, GateRequest, HostGate, NestedContext};
use super::engine::{self, CallRefusal, EngineHandle, EngineLimits, EngineSink, Outcome};
use super::errors::CodeError;
use super::input::{parse_exec, parse_wait};
use super::limits::*;
use super::render::render;
use crate::output::{Capture, RecoverySnapshot, RecoveryStore};

/// One progress record forwarded through Pi's onUpdate: names and ids only, never arguments.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProgressRecord {
    /// "start" | "waiting-approval" | "end"
    pub event: String,
    pub tool: String,
    pub cell_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Receives progress records of the outer call currently observing a cell.
pub type ProgressFn = Arc<dyn Fn(ProgressRecord) + Send + Sync>;

/// What an outer `exec`/`wait` call brings besides its arguments.
#[derive(Clone, Default)]
pub struct OuterCall {
    /// Pi's cwd (exec only: nested shells resolve workdir against it).
    pub cwd: String,
    /// Progress sink for this outer call (at most 32 records are forwarded).
    pub progress: Option<ProgressFn>,
    /// An id the host may pass to [`CodeManager::abort`] (Pi's AbortSignal).
    pub call_id: Option<String>,
}

/// Counts of a cell's nested calls, as rendered in `nested calls: ...`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NestedCounts {
    pub completed: u64,
    pub failed: u64,
    pub cancelled_before_dispatch: u64,
    pub unsettled: u64,
}

/// The result of one read of a cell (what exec/wait return), with the model-facing `text`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CellRead {
    pub cell_id: String,
    #[serde(rename = "cell_id")]
    pub cell_id_snake: String,
    /// running | completed | failed | terminated
    pub status: String,
    pub output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Bytes of unread output not shown because of this read's budget (kept in the recovery file).
    pub truncated: u64,
    /// Bytes of output dropped because the unread buffer (256 KiB) was full.
    pub dropped: u64,
    pub result_truncated: bool,
    pub error_truncated: bool,
    pub nested: NestedCounts,
    /// Nested shell sessions last seen running (they belong to Shell; continue them with write_stdin).
    pub shell_sessions: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unknown_outcome: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoverySnapshot>,
    /// Progress records not forwarded because this outer call reached its 32-record limit.
    pub progress_dropped: u64,
    pub text: String,
}

#[derive(Default)]
struct CellState {
    outcome: Option<Outcome>,
    terminal: bool,
    terminal_at: Option<Instant>,
    unknown_outcome: bool,
    output: String,
    dropped: u64,
    /// Every emitted byte, before any preview limit: Shell's capture (in memory until a yield, a spill past
    /// 256 KiB or a lossy read needs the private recovery file). Always `Some` once the cell exists.
    capture: Option<Capture>,
    queued: u64,
    dispatched: u64,
    abandoned: u64,
    completed: u64,
    failed: u64,
    cancelled: u64,
    outstanding_bytes: usize,
    shells: BTreeSet<String>,
    result_delivered: bool,
    /// The cell thread reported its outcome (done() ran).
    thread_ended: bool,
}

struct Forwarder {
    sink: ProgressFn,
    sent: AtomicUsize,
    dropped: AtomicUsize,
}

struct Cell {
    id: String,
    cwd: String,
    declared: Vec<String>,
    engine: Mutex<Option<EngineHandle>>,
    st: Mutex<CellState>,
    changed: watch::Sender<u64>,
    seal: watch::Sender<bool>,
    /// The same seal as a flag for blocking executors (nested apply_patch preflight/staging).
    sealed_flag: Arc<AtomicBool>,
    observe: tokio::sync::Mutex<()>,
    observer: Mutex<Option<Arc<Forwarder>>>,
}

impl Cell {
    fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    fn progress(&self, rec: ProgressRecord) {
        let f = self.observer.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(f) = f {
            if f.sent.fetch_add(1, Ordering::SeqCst) < MAX_PROGRESS_RECORDS {
                (f.sink)(rec);
            } else {
                f.dropped.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn ensure_recovery(st: &mut CellState) {
        if let Some(c) = st.capture.as_mut() {
            c.require_file();
        }
    }

    /// A `[result]` / `[error]` block cut to `limit` bytes on a UTF-8 boundary; the whole text goes to the
    /// recovery file first. Returns the shown text and whether it was cut.
    fn bounded(st: &mut CellState, text: String, limit: usize, block: &str) -> (String, bool) {
        if text.len() <= limit {
            return (text, false);
        }
        Cell::ensure_recovery(st);
        Cell::capture_text(st, &format!("\n[{block}]\n{text}\n"));
        (cut_utf8(&text, limit).to_string(), true)
    }

    fn capture_text(st: &mut CellState, text: &str) {
        if let Some(c) = st.capture.as_mut() {
            c.append(text.as_bytes());
        }
    }

    /// Terminal when the program ended and no tracked nested call is queued or dispatched.
    fn settle_check(&self, st: &mut CellState) -> bool {
        if st.terminal || st.outcome.is_none() || st.queued > 0 || st.dispatched > 0 {
            return false;
        }
        st.terminal = true;
        st.terminal_at = Some(Instant::now());
        true
    }
}

struct MState {
    cells: HashMap<String, Arc<Cell>>,
    admitted: Vec<String>,
    closed: bool,
    aborts: HashMap<String, watch::Sender<bool>>,
    /// Aborts that arrived before their call registered (bounded).
    early_aborts: Vec<String>,
    /// Cells whose stop was not confirmed by the last cleanup: new cells are refused until a cleanup succeeds.
    cleanup_pending: Vec<String>,
}

struct Inner {
    adapters: Arc<dyn Adapters>,
    gate: Arc<dyn HostGate>,
    rt: Handle,
    limits: EngineLimits,
    slots: Arc<Semaphore>,
    patch_lock: Arc<tokio::sync::Mutex<()>>,
    state: Mutex<MState>,
    /// Owner of the cells' recovery files (the shared output machinery; deletes exactly its own at shutdown).
    recovery: RecoveryStore,
    /// How long unread terminal results are kept (UNREAD_TTL_MS; shorter only in tests).
    unread_ttl: Mutex<Duration>,
    /// How long a stop waits for the cell thread to confirm (STOP_CONFIRM_MS; shorter only in tests).
    stop_confirm: Mutex<Duration>,
    /// Test seam: a pause before an observer installs its progress sink (widens the start-up race).
    #[cfg(test)]
    observe_delay: Mutex<Duration>,
}

/// The code-cell manager (one per toolkit instance). Cheap to clone.
#[derive(Clone)]
pub struct CodeManager {
    inner: Arc<Inner>,
}

struct Sink {
    cell: Weak<Cell>,
    mgr: Weak<Inner>,
}

fn refusal(code: &str, message: String) -> CallRefusal {
    CallRefusal {
        code: code.into(),
        message,
    }
}

impl EngineSink for Sink {
    fn text(&self, text: &str) {
        let Some(cell) = self.cell.upgrade() else { return };
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        // The capture spills to the recovery file on its own past 256 KiB.
        Cell::capture_text(&mut st, text);
        let room = OUTPUT_BUFFER_BYTES.saturating_sub(st.output.len());
        let kept = cut_utf8(text, room);
        st.dropped += (text.len() - kept.len()) as u64;
        st.output.push_str(kept);
    }

    fn call(&self, id: u64, name: &str, args_json: String) -> Result<(), CallRefusal> {
        let (Some(cell), Some(mgr)) = (self.cell.upgrade(), self.mgr.upgrade()) else {
            return Err(refusal("closed", "The code manager is closed.".into()));
        };
        let fail = |code: &str, message: String| {
            let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
            st.failed += 1;
            drop(st);
            cell.progress(ProgressRecord {
                event: "end".into(),
                tool: name.into(),
                cell_id: cell.id.clone(),
                session_id: None,
                ok: Some(false),
                code: Some(code.into()),
            });
            Err(refusal(code, message))
        };
        // 1. known adapter
        if !ADAPTERS.contains(&name) {
            return fail(
                "unknown-adapter",
                format!(
                    "Unknown tool \"{name}\": code cells can call only {}.",
                    ADAPTERS.join(", ")
                ),
            );
        }
        // 2. enabled: declared in "uses" (snapshot) and admitted now
        if !cell.declared.iter().any(|d| d == name) {
            let list = if cell.declared.is_empty() {
                "(none)".to_string()
            } else {
                cell.declared.join(", ")
            };
            return fail(
                "adapter-disabled",
                format!("Tool \"{name}\" was not declared in \"uses\" for this cell. Declared tools: {list}"),
            );
        }
        if !mgr
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admitted
            .iter()
            .any(|a| a == name)
        {
            return fail(
                "adapter-disabled",
                format!("Tool \"{name}\" is not enabled right now; enable it in /pct config or stop calling it."),
            );
        }
        // 3. schema
        let args: Value = serde_json::from_str(&args_json).unwrap_or(Value::Null);
        let args = normalize_nested_args(name, args);
        let normalized = match mgr.adapters.validate(name, &args) {
            Ok(v) => v,
            Err(e) => return fail("invalid-arguments", e.message),
        };
        // 4. byte reservation
        let size = args_json.len();
        {
            let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
            let outstanding = (st.queued + st.dispatched) as usize;
            let why = if size > MAX_NESTED_PAYLOAD_BYTES {
                Some(format!("The arguments of tools.{name} are {size} bytes; a single argument may be at most {MAX_NESTED_PAYLOAD_BYTES} bytes."))
            } else if outstanding >= MAX_OUTSTANDING_NESTED {
                Some(format!("This cell already has {MAX_OUTSTANDING_NESTED} nested calls outstanding; await some before starting more."))
            } else if st.outstanding_bytes + size > MAX_OUTSTANDING_ARG_BYTES {
                Some(format!("Outstanding nested calls of this cell would carry more than {MAX_OUTSTANDING_ARG_BYTES} bytes of arguments; await some before starting more."))
            } else {
                None
            };
            if let Some(msg) = why {
                drop(st);
                return fail("bridge-overload", msg);
            }
            st.queued += 1;
            st.outstanding_bytes += size;
        }
        let preview = match &args {
            Value::Object(o) => match o.get("patch").or_else(|| o.get("input")) {
                Some(Value::String(p)) => p.clone(),
                _ => args_json.clone(),
            },
            _ => args_json.clone(),
        };
        let task = NestedTask {
            cell: cell.clone(),
            mgr: mgr.clone(),
            id,
            tool: name.to_string(),
            args: normalized,
            size,
            preview: cut_utf8(&preview, APPROVAL_PREVIEW_BYTES).to_string(),
        };
        mgr.rt.spawn(task.run());
        Ok(())
    }

    fn done(&self, outcome: Outcome) {
        let Some(cell) = self.cell.upgrade() else { return };
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        if st.outcome.is_some() {
            // The stop was reported unconfirmed earlier; the thread has now really ended. Its real outcome (which
            // may be the program's own result) replaces the stop's, without the stop's uncertainty.
            st.outcome = Some(outcome);
            st.thread_ended = true;
            st.unknown_outcome = st.queued + st.dispatched > 0;
            drop(st);
            cell.bump();
            return;
        }
        let seal = !matches!(outcome, Outcome::Returned(_));
        st.thread_ended = true;
        st.outcome = Some(outcome);
        let became = cell.settle_check(&mut st);
        drop(st);
        if seal {
            cell.sealed_flag.store(true, Ordering::SeqCst);
            cell.seal.send_replace(true);
        }
        let _ = became;
        cell.bump();
    }
}

/// Which outer call observes a cell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// The exec that started it (its progress sink was installed before the thread started).
    Exec,
    /// A wait that continues it.
    Wait,
    /// A wait {terminate: true}.
    Terminate,
}

struct NestedTask {
    cell: Arc<Cell>,
    mgr: Arc<Inner>,
    id: u64,
    tool: String,
    args: Value,
    size: usize,
    preview: String,
}

enum Ended {
    Reply(Result<Value, CodeError>),
    CancelledBeforeDispatch,
    Abandoned,
}

impl NestedTask {
    async fn run(self) {
        let cell = self.cell.clone();
        let session_id = session_id_of(&self.args);
        cell.progress(ProgressRecord {
            event: "start".into(),
            tool: self.tool.clone(),
            cell_id: cell.id.clone(),
            session_id: session_id.clone(),
            ok: None,
            code: None,
        });
        let mut seal = cell.seal.subscribe();
        let gated = tokio::select! {
            _ = sealed(&mut seal) => None,
            r = self.before_dispatch(session_id.clone()) => Some(r),
        };
        let ended = match gated {
            None => Ended::CancelledBeforeDispatch,
            Some(Err(e)) => Ended::Reply(Err(e)),
            Some(Ok((env, permits))) => {
                {
                    let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
                    st.queued -= 1;
                    st.dispatched += 1;
                }
                let ctx = NestedContext {
                    cwd: cell.cwd.clone(),
                    cell_id: cell.id.clone(),
                    env: env.0,
                    shell: env.1,
                    review: env.2,
                    cancel: cell.sealed_flag.clone(),
                    sealed: Some(cell.seal.subscribe()),
                };
                // A mutation takes Pi's file mutation queue for its paths (host lease) and, once started, runs to
                // its end (a started commit finishes); other calls end their wait when the cell is sealed.
                let paths = self.mgr.adapters.mutated_paths(&self.tool, &self.args, &cell.cwd);
                // Fail closed: without a held lease the mutation does not run (nothing is changed).
                let lease = match paths {
                    Some(p) if !p.is_empty() => {
                        let a = self.mgr.gate.ask(self.gate_req("lock", Some(p), None)).await;
                        // From here the lease is owned by a guard: unlock is sent even if this task is dropped.
                        let guard = a.lease.map(|l| {
                            LeaseGuard::new(
                                self.mgr.gate.clone(),
                                self.mgr.rt.clone(),
                                self.gate_req("unlock", None, Some(l)),
                            )
                        });
                        match guard {
                            Some(g) if a.allow => Ok(Some(g)),
                            stray => {
                                if let Some(g) = stray {
                                    g.release().await;
                                }
                                Err(lock_refused(&self.tool, a.code, a.reason))
                            }
                        }
                    }
                    _ => Ok(None),
                };
                let r = match lease {
                    Err(e) => Ended::Reply(Err(e)),
                    Ok(lease) => {
                        // Run the executor as its own task so a panic in it becomes an error reply instead of
                        // leaving the cell waiting forever; dropping this future (seal) still cancels it.
                        let task = self
                            .mgr
                            .rt
                            .spawn(self.mgr.adapters.dispatch(&self.tool, self.args.clone(), ctx));
                        let _cancel_on_drop = AbortOnDrop(task.abort_handle());
                        let tool = self.tool.clone();
                        let fut = async move {
                            task.await.unwrap_or_else(|e| {
                                Err(CodeError::new(
                                    "unavailable",
                                    format!("tools.{tool} failed inside the toolkit ({e}); its effects are unknown: check before retrying."),
                                ))
                            })
                        };
                        let r = if self.tool == "apply_patch" {
                            Ended::Reply(fut.await)
                        } else {
                            tokio::pin!(fut);
                            tokio::select! {
                                r = &mut fut => Ended::Reply(r),
                                _ = sealed(&mut seal) => {
                                    // Unsettled dispatch: the adapter sees the seal and aborts cooperatively (an
                                    // in-flight exec_command stops its job). One that ignores it is abandoned.
                                    let grace = Duration::from_millis(NESTED_ABORT_GRACE_MS);
                                    match tokio::time::timeout(grace, &mut fut).await {
                                        Ok(r) => Ended::Reply(r),
                                        Err(_) => Ended::Abandoned,
                                    }
                                }
                            }
                        };
                        if let Some(lease) = lease {
                            lease.release().await;
                        }
                        r
                    }
                };
                drop(permits);
                // Back to the "queued" column so the common settlement below is uniform.
                let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
                st.dispatched -= 1;
                st.queued += 1;
                r
            }
        };
        // Size check of replies and errors.
        let ended = match ended {
            Ended::Reply(Ok(v)) => {
                let size = reply_size(&v);
                let limit = MAX_NESTED_PAYLOAD_BYTES + NESTED_REPLY_META_BYTES;
                if size > limit {
                    let running = v.get("status").and_then(Value::as_str) == Some("running");
                    let e = oversized_reply(&self.tool, size, limit, &v);
                    if let (true, Some(sid), false) = (running, &e.session_id, self.tool == "apply_patch") {
                        // The shell was yielded even though its reply was not: it stays reported in `shells`.
                        cell.st
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .shells
                            .insert(sid.clone());
                    }
                    Ended::Reply(Err(e))
                } else {
                    Ended::Reply(Ok(v))
                }
            }
            Ended::Reply(Err(mut e)) => {
                if e.message.len() > MAX_NESTED_PAYLOAD_BYTES {
                    e.message = cut_utf8(&e.message, MAX_NESTED_PAYLOAD_BYTES).to_string();
                }
                Ended::Reply(Err(e))
            }
            other => other,
        };
        let (ok, code) = match &ended {
            Ended::Reply(Ok(_)) => (true, None),
            Ended::Reply(Err(e)) => (false, Some(e.code.clone())),
            Ended::CancelledBeforeDispatch | Ended::Abandoned => (false, Some("aborted".to_string())),
        };
        let reply_session = match &ended {
            Ended::Reply(Ok(v)) if self.tool != "apply_patch" => session_id_of(v).or(session_id.clone()),
            _ => session_id.clone(),
        };
        // Progress first: once the call settles the cell may become terminal and its observer leave.
        cell.progress(ProgressRecord {
            event: "end".into(),
            tool: self.tool.clone(),
            cell_id: cell.id.clone(),
            session_id: reply_session,
            ok: Some(ok),
            code,
        });
        {
            let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
            st.queued -= 1;
            st.outstanding_bytes -= self.size;
            match &ended {
                Ended::Reply(Ok(v)) => {
                    st.completed += 1;
                    if self.tool != "apply_patch" {
                        if let Some(sid) = session_id_of(v) {
                            if v.get("status").and_then(|s| s.as_str()) == Some("running") {
                                st.shells.insert(sid);
                            } else {
                                st.shells.remove(&sid);
                            }
                        }
                    }
                }
                Ended::Reply(Err(_)) => st.failed += 1,
                Ended::CancelledBeforeDispatch => st.cancelled += 1,
                Ended::Abandoned => st.abandoned += 1,
            }
            // An unconfirmed stop becomes certain once the thread ended and the last tracked call settled.
            if st.unknown_outcome && st.thread_ended && st.queued + st.dispatched == 0 {
                st.unknown_outcome = false;
            }
            cell.settle_check(&mut st);
        }
        if let Ended::Reply(r) = &ended {
            let engine = cell.engine.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(h) = engine.as_ref() {
                match r {
                    Ok(v) => h.reply(self.id, true, v.to_string()),
                    Err(e) => h.reply(self.id, false, serde_json::to_string(e).unwrap_or_default()),
                }
            }
        }
        cell.bump();
    }

    fn gate_req(&self, phase: &str, paths: Option<Vec<String>>, lease: Option<String>) -> GateRequest {
        GateRequest {
            phase: phase.into(),
            tool: self.tool.clone(),
            cell_id: self.cell.id.clone(),
            cwd: self.cell.cwd.clone(),
            session_id: None,
            preview: None,
            paths,
            lease,
            sends_input: None,
        }
    }

    /// Policy hook, approval, then an adapter slot (apply_patch also takes the sequential patch lock).
    async fn before_dispatch(
        &self,
        session_id: Option<String>,
    ) -> Result<
        (
            (HashMap<String, String>, Option<Value>, Option<crate::review::Target>),
            (
                tokio::sync::OwnedSemaphorePermit,
                Option<tokio::sync::OwnedMutexGuard<()>>,
            ),
        ),
        CodeError,
    > {
        let cell = &self.cell;
        let ans = self
            .mgr
            .gate
            .ask(GateRequest {
                phase: "policy".into(),
                tool: self.tool.clone(),
                cell_id: cell.id.clone(),
                cwd: cell.cwd.clone(),
                session_id: session_id.clone(),
                // The permission card shows what will run (docs/permissions.md); the embedder's hooks never see it.
                preview: Some(self.preview.clone()),
                paths: None,
                lease: None,
                sends_input: (self.tool == "write_stdin").then(|| {
                    ["chars", "input"]
                        .iter()
                        .any(|k| self.args.get(*k).and_then(Value::as_str).is_some_and(|s| !s.is_empty()))
                }),
            })
            .await;
        if !ans.allow {
            return Err(CodeError::new(
                ans.code.as_deref().unwrap_or("policy-denied"),
                ans.reason
                    .unwrap_or_else(|| "The invocation policy denied this call.".into()),
            ));
        }
        if self.tool == "apply_patch" && ans.needs_approval {
            cell.progress(ProgressRecord {
                event: "waiting-approval".into(),
                tool: self.tool.clone(),
                cell_id: cell.id.clone(),
                session_id: None,
                ok: None,
                code: None,
            });
            let a = self
                .mgr
                .gate
                .ask(GateRequest {
                    phase: "approval".into(),
                    tool: self.tool.clone(),
                    cell_id: cell.id.clone(),
                    cwd: cell.cwd.clone(),
                    session_id: None,
                    preview: Some(self.preview.clone()),
                    paths: None,
                    lease: None,
                    sends_input: None,
                })
                .await;
            if !a.allow {
                return Err(CodeError::new(
                    a.code.as_deref().unwrap_or("approval-denied"),
                    a.reason
                        .unwrap_or_else(|| "The user declined this apply_patch; nothing was changed.".into()),
                ));
            }
        }
        let patch_guard = if self.tool == "apply_patch" {
            Some(self.mgr.patch_lock.clone().lock_owned().await)
        } else {
            None
        };
        let slot = self.mgr.slots.clone().acquire_owned().await.expect("slots never close");
        let review = ans.review.as_ref().map(|r| r.to_target("apply_patch"));
        Ok(((ans.env.unwrap_or_default(), ans.shell, review), (slot, patch_guard)))
    }
}

impl CodeManager {
    /// A manager running nested work on `rt`, reaching executors through `adapters` and the host through `gate`.
    pub fn new(adapters: Arc<dyn Adapters>, gate: Arc<dyn HostGate>, rt: Handle) -> Self {
        Self::with_limits(adapters, gate, rt, EngineLimits::default())
    }

    /// As [`CodeManager::new`] with explicit engine limits.
    pub fn with_limits(adapters: Arc<dyn Adapters>, gate: Arc<dyn HostGate>, rt: Handle, limits: EngineLimits) -> Self {
        CodeManager {
            inner: Arc::new(Inner {
                adapters,
                gate,
                rt,
                limits,
                unread_ttl: Mutex::new(Duration::from_millis(UNREAD_TTL_MS)),
                stop_confirm: Mutex::new(Duration::from_millis(STOP_CONFIRM_MS)),
                #[cfg(test)]
                observe_delay: Mutex::new(Duration::ZERO),
                recovery: RecoveryStore::new("code"),
                slots: Arc::new(Semaphore::new(ADAPTER_SLOTS)),
                patch_lock: Arc::new(tokio::sync::Mutex::new(())),
                state: Mutex::new(MState {
                    cells: HashMap::new(),
                    admitted: Vec::new(),
                    closed: false,
                    aborts: HashMap::new(),
                    early_aborts: Vec::new(),
                    cleanup_pending: Vec::new(),
                }),
            }),
        }
    }

    /// The adapters currently admitted (the host calls this on every exec/wait and whenever admission changes).
    pub fn set_admitted(&self, names: Vec<String>) {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner).admitted =
            names.into_iter().filter(|n| ADAPTERS.contains(&n.as_str())).collect();
    }

    /// Test hook: how long unread terminal results are kept.
    #[cfg(test)]
    pub fn set_unread_ttl(&self, ttl: Duration) {
        *self.inner.unread_ttl.lock().unwrap_or_else(PoisonError::into_inner) = ttl;
    }

    /// Test hook: how long a stop waits for the cell thread to confirm.
    #[cfg(test)]
    pub fn set_stop_confirm(&self, window: Duration) {
        *self.inner.stop_confirm.lock().unwrap_or_else(PoisonError::into_inner) = window;
    }

    /// Test hook: a pause before an outer call installs its progress sink.
    #[cfg(test)]
    pub fn set_observe_delay(&self, delay: Duration) {
        *self.inner.observe_delay.lock().unwrap_or_else(PoisonError::into_inner) = delay;
    }

    /// Cells not yet terminal.
    pub fn running_cells(&self) -> usize {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cells
            .values()
            .filter(|c| !c.st.lock().unwrap_or_else(PoisonError::into_inner).terminal)
            .count()
    }

    /// Cells held by the manager (running or terminal and unread).
    pub fn held_cells(&self) -> usize {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cells
            .len()
    }

    /// Pi's AbortSignal fired for the outer call `call_id`: the cell it observes is terminated.
    pub fn abort(&self, call_id: &str) {
        let mut st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = st.aborts.get(call_id) {
            tx.send_replace(true);
        } else {
            // The call has not registered yet (napi starts it asynchronously): remember the abort.
            if st.early_aborts.len() >= 64 {
                st.early_aborts.remove(0);
            }
            st.early_aborts.push(call_id.to_string());
        }
    }

    fn prune(&self, st: &mut MState) {
        let now = Instant::now();
        let ttl = *self.inner.unread_ttl.lock().unwrap_or_else(PoisonError::into_inner);
        st.cells.retain(|_, c| {
            let s = c.st.lock().unwrap_or_else(PoisonError::into_inner);
            !(s.terminal && s.terminal_at.map(|t| now.duration_since(t) >= ttl).unwrap_or(false))
        });
        let mut terminal: Vec<(Instant, String)> = st
            .cells
            .values()
            .filter_map(|c| {
                let s = c.st.lock().unwrap_or_else(PoisonError::into_inner);
                if s.terminal {
                    s.terminal_at.map(|t| (t, c.id.clone()))
                } else {
                    None
                }
            })
            .collect();
        if terminal.len() > MAX_UNREAD_TERMINAL {
            terminal.sort();
            let extra = terminal.len() - MAX_UNREAD_TERMINAL;
            for (_, id) in terminal.into_iter().take(extra) {
                st.cells.remove(&id);
            }
        }
    }

    /// `exec`: validates, starts a cell and observes it for up to yield_time_ms.
    pub async fn exec(&self, args: Value, outer: OuterCall) -> Result<CellRead, CodeError> {
        let abort = self.begin_call(&outer);
        let r = self.exec_inner(args, outer.clone(), abort).await;
        self.end_call(&outer);
        r
    }

    /// Registers the outer call's abort channel before anything else, so an early abort is not lost.
    fn begin_call(&self, outer: &OuterCall) -> Option<watch::Receiver<bool>> {
        outer.call_id.as_ref().map(|id| {
            let mut st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            let early = st
                .early_aborts
                .iter()
                .position(|x| x == id)
                .map(|i| st.early_aborts.remove(i))
                .is_some();
            let (tx, rx) = watch::channel(early);
            st.aborts.insert(id.clone(), tx);
            rx
        })
    }

    fn end_call(&self, outer: &OuterCall) {
        if let Some(id) = &outer.call_id {
            self.inner
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .aborts
                .remove(id);
        }
    }

    async fn exec_inner(
        &self,
        args: Value,
        outer: OuterCall,
        abort: Option<watch::Receiver<bool>>,
    ) -> Result<CellRead, CodeError> {
        let input = parse_exec(&args)?;
        if abort.as_ref().map(|r| *r.borrow()).unwrap_or(false) {
            return Err(CodeError::new(
                "aborted",
                "The call was cancelled before it started; no cell ran.",
            ));
        }
        let cell = {
            let mut st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            if st.closed {
                return Err(CodeError::new(
                    "closed",
                    "Code cells are shut down for this session; start a new session.",
                ));
            }
            if !st.cleanup_pending.is_empty() {
                return Err(CodeError::new(
                    "cleanup-incomplete",
                    format!(
                        "Code Mode cleanup is incomplete: cells {} did not confirm that they stopped, so no new cell starts. Stop them with wait {{\"cell_id\": ..., \"terminate\": true}}; /pct reload or a model change retries the cleanup.",
                        st.cleanup_pending.join(", ")
                    ),
                ));
            }
            self.prune(&mut st);
            let running = st
                .cells
                .values()
                .filter(|c| !c.st.lock().unwrap_or_else(PoisonError::into_inner).terminal)
                .count();
            if running >= MAX_RUNNING_CELLS {
                return Err(CodeError::new(
                    "cell-limit",
                    format!("{MAX_RUNNING_CELLS} cells are already running; wait for one to finish or stop one with wait {{\"cell_id\": ..., \"terminate\": true}}."),
                ));
            }
            let declared = match input.uses.clone() {
                Some(u) => u,
                None => ADAPTERS
                    .iter()
                    .filter(|a| st.admitted.iter().any(|x| x == *a))
                    .map(|a| a.to_string())
                    .collect(),
            };
            let id = format!("cell-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
            let cell = Arc::new(Cell {
                id: id.clone(),
                cwd: outer.cwd.clone(),
                declared,
                engine: Mutex::new(None),
                st: Mutex::new(CellState {
                    capture: Some(self.inner.recovery.capture()),
                    ..Default::default()
                }),
                changed: watch::channel(0).0,
                seal: watch::channel(false).0,
                sealed_flag: Arc::new(AtomicBool::new(false)),
                observe: tokio::sync::Mutex::new(()),
                // This exec's progress sink is in place before the thread starts: the program's first nested
                // calls report immediately, possibly before observe() runs.
                observer: Mutex::new(forwarder(&outer)),
            });
            st.cells.insert(id, cell.clone());
            cell
        };
        let sink = Arc::new(Sink {
            cell: Arc::downgrade(&cell),
            mgr: Arc::downgrade(&self.inner),
        });
        // Hold the engine slot lock while starting so a fast nested reply finds the handle.
        {
            let mut slot = cell.engine.lock().unwrap_or_else(PoisonError::into_inner);
            match engine::start(&input.code, cell.declared.clone(), self.inner.limits.clone(), sink) {
                Ok(h) => *slot = Some(h),
                Err(e) => {
                    drop(slot);
                    self.inner
                        .state
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .cells
                        .remove(&cell.id);
                    return Err(CodeError::new(
                        "cell-start-failed",
                        format!("The cell thread could not start ({e}); retry later."),
                    ));
                }
            }
        }
        self.observe(
            cell,
            Via::Exec,
            input.yield_time_ms,
            input.max_output_bytes,
            outer,
            abort,
        )
        .await
    }

    /// `wait`: continues observing a cell, or terminates it.
    pub async fn wait(&self, args: Value, outer: OuterCall) -> Result<CellRead, CodeError> {
        let abort = self.begin_call(&outer);
        let r = self.wait_inner(args, outer.clone(), abort).await;
        self.end_call(&outer);
        r
    }

    async fn wait_inner(
        &self,
        args: Value,
        outer: OuterCall,
        abort: Option<watch::Receiver<bool>>,
    ) -> Result<CellRead, CodeError> {
        let input = parse_wait(&args)?;
        let cell = {
            let mut st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            self.prune(&mut st);
            st.cells.get(&input.cell_id).cloned()
        };
        let Some(cell) = cell else {
            return Err(stale(&input.cell_id));
        };
        let via = if input.terminate { Via::Terminate } else { Via::Wait };
        self.observe(cell, via, input.yield_time_ms, input.max_output_bytes, outer, abort)
            .await
    }

    async fn observe(
        &self,
        cell: Arc<Cell>,
        via: Via,
        yield_ms: u64,
        budget: usize,
        outer: OuterCall,
        mut abort_rx: Option<watch::Receiver<bool>>,
    ) -> Result<CellRead, CodeError> {
        let _turn = cell.observe.lock().await;
        if !self
            .inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cells
            .contains_key(&cell.id)
        {
            return Err(stale(&cell.id));
        }
        #[cfg(test)]
        {
            let delay = *self.inner.observe_delay.lock().unwrap_or_else(PoisonError::into_inner);
            tokio::time::sleep(delay).await;
        }
        let fwd = if via == Via::Exec {
            // exec installed this call's sink before the cell thread started (its first records are not lost).
            cell.observer.lock().unwrap_or_else(PoisonError::into_inner).clone()
        } else {
            let f = forwarder(&outer);
            *cell.observer.lock().unwrap_or_else(PoisonError::into_inner) = f.clone();
            f
        };
        let mut aborted = false;
        if via == Via::Terminate {
            self.stop(&cell).await;
        } else {
            let mut changed = cell.changed.subscribe();
            let deadline = tokio::time::Instant::now() + Duration::from_millis(yield_ms);
            loop {
                if cell.st.lock().unwrap_or_else(PoisonError::into_inner).terminal {
                    break;
                }
                let abort_fut = async {
                    match abort_rx.as_mut() {
                        Some(rx) => {
                            let _ = rx.wait_for(|v| *v).await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    _ = changed.changed() => {}
                    _ = tokio::time::sleep_until(deadline) => break,
                    _ = abort_fut => { aborted = true; break; }
                }
            }
            if aborted {
                self.stop(&cell).await;
            }
        }
        *cell.observer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let read = self.read(
            &cell,
            budget,
            fwd.map(|f| f.dropped.load(Ordering::SeqCst) as u64).unwrap_or(0),
        );
        if aborted {
            return Err(CodeError::new(
                "aborted",
                format!("The call was cancelled; cell {} was terminated. Effects of nested calls that already ran are kept.", cell.id),
            ));
        }
        Ok(read)
    }

    /// Stops a cell: interrupt + wake, then wait up to 5 s for the thread to confirm.
    async fn stop(&self, cell: &Arc<Cell>) {
        if let Some(h) = cell.engine.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            h.cancel();
        }
        cell.sealed_flag.store(true, Ordering::SeqCst);
        cell.seal.send_replace(true);
        let mut changed = cell.changed.subscribe();
        let window = *self.inner.stop_confirm.lock().unwrap_or_else(PoisonError::into_inner);
        let deadline = tokio::time::Instant::now() + window;
        loop {
            if cell.st.lock().unwrap_or_else(PoisonError::into_inner).terminal {
                return;
            }
            tokio::select! {
                _ = changed.changed() => {}
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        // Not confirmed: report terminated with an unknown outcome. The cell is terminal for observers now; nested
        // calls that settle later still update their counts, and a thread that ends later reports its real outcome.
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        if st.outcome.is_none() {
            st.outcome = Some(Outcome::Terminated);
        }
        st.unknown_outcome = true;
        if !st.terminal {
            st.terminal = true;
            st.terminal_at = Some(Instant::now());
        }
    }

    fn read(&self, cell: &Arc<Cell>, budget: usize, progress_dropped: u64) -> CellRead {
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        let terminal = st.terminal;
        let output_all = std::mem::take(&mut st.output);
        let shown = cut_utf8(&output_all, budget).to_string();
        let truncated = (output_all.len() - shown.len()) as u64;
        let dropped = std::mem::take(&mut st.dropped);
        let (mut result, mut error, mut result_truncated, mut error_truncated) = (None, None, false, false);
        let status = if terminal {
            match st.outcome.clone() {
                Some(Outcome::Returned(r)) => {
                    if let Some(r) = r {
                        let (shown, cut) = Cell::bounded(&mut st, r, RESULT_BYTES, "result");
                        (result, result_truncated) = (Some(shown), cut);
                    }
                    "completed"
                }
                Some(Outcome::Threw(e)) => {
                    let (shown, cut) = Cell::bounded(&mut st, e, ERROR_BYTES, "error");
                    (error, error_truncated) = (Some(shown), cut);
                    "failed"
                }
                _ => "terminated",
            }
        } else {
            "running"
        };
        // A yield (once there is output), a lossy preview or dropped text needs the recovery file.
        let yield_needs = !terminal && st.capture.as_ref().is_some_and(|c| c.captured_bytes() > 0);
        if yield_needs || truncated > 0 || dropped > 0 {
            Cell::ensure_recovery(&mut st);
        }
        if terminal {
            if let Some(c) = st.capture.as_mut() {
                c.finish();
                // Fully delivered without a file: the in-memory copy is not needed any more.
                c.discard_buffer();
            }
            st.result_delivered = true;
        }
        let recovery = st.capture.as_ref().and_then(|c| c.snapshot());
        let nested = NestedCounts {
            completed: st.completed,
            failed: st.failed,
            cancelled_before_dispatch: st.cancelled,
            unsettled: st.queued + st.dispatched + st.abandoned,
        };
        let mut read = CellRead {
            cell_id: cell.id.clone(),
            cell_id_snake: cell.id.clone(),
            status: status.into(),
            output: shown,
            result,
            error,
            truncated,
            dropped,
            result_truncated,
            error_truncated,
            nested,
            shell_sessions: st.shells.iter().cloned().collect(),
            unknown_outcome: st.unknown_outcome,
            recovery,
            progress_dropped,
            text: String::new(),
        };
        drop(st);
        read.text = render(&read);
        if terminal && !read.unknown_outcome {
            // Terminal delivery releases the handle; later reads get stale-cell. An unconfirmed stop keeps it
            // so the model can retry wait {terminate: true}.
            self.inner
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .cells
                .remove(&cell.id);
        }
        read
    }

    /// Terminates every cell (session switch/fork, feature disabled). `cleanup-incomplete` when a cell thread
    /// did not confirm within 5 s. The manager stays usable.
    pub async fn cleanup(&self) -> Result<(), CodeError> {
        let cells: Vec<Arc<Cell>> = self
            .inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cells
            .values()
            .cloned()
            .collect();
        let mut incomplete = Vec::new();
        for c in &cells {
            self.stop(c).await;
            if c.st.lock().unwrap_or_else(PoisonError::into_inner).unknown_outcome {
                incomplete.push(c.id.clone());
            }
        }
        let mut st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
        for c in &cells {
            if !incomplete.contains(&c.id) {
                st.cells.remove(&c.id);
            }
        }
        // Kept cells stay reachable with wait (and terminate); new cells wait for a cleanup that succeeds.
        st.cleanup_pending = incomplete.clone();
        drop(st);
        if incomplete.is_empty() {
            Ok(())
        } else {
            Err(CodeError::new(
                "cleanup-incomplete",
                format!(
                    "Cells {} did not confirm that they stopped within 5 s (a native operation without an interrupt check); new cells are refused until /pct reload or a model change retries the cleanup and it succeeds.",
                    incomplete.join(", ")
                ),
            ))
        }
    }

    /// The cells the last cleanup left unconfirmed (new cells are refused until a cleanup succeeds). The host learns
    /// the same from cleanup's `cleanup-incomplete` answer; tests read it here.
    #[cfg(test)]
    pub fn cleanup_pending(&self) -> Vec<String> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cleanup_pending
            .clone()
    }

    /// A real session shutdown: terminate everything, refuse new cells, delete this process's recovery files.
    pub async fn shutdown(&self) -> Result<(), CodeError> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
        let r = self.cleanup().await;
        self.inner.recovery.close();
        self.inner.recovery.delete_files();
        r
    }
}

/// Aborts a spawned executor task when the waiting side goes away (sealed cell, dropped task).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A held host file lease (Pi's file mutation queue). Dropping it without [`LeaseGuard::release`] (task dropped,
/// panic, runtime shutdown) still sends the "unlock" request, so Pi's own edit/write never wait forever.
struct LeaseGuard {
    gate: Arc<dyn HostGate>,
    rt: Handle,
    unlock: Option<GateRequest>,
}

impl LeaseGuard {
    fn new(gate: Arc<dyn HostGate>, rt: Handle, unlock: GateRequest) -> Self {
        LeaseGuard {
            gate,
            rt,
            unlock: Some(unlock),
        }
    }

    /// Sends "unlock" and waits for the host's answer. A failed answer is not retried here: the TypeScript side
    /// releases every outstanding lease when Code Mode is cleaned up or shut down.
    async fn release(mut self) {
        if let Some(req) = self.unlock.take() {
            let _ = self.gate.ask(req).await;
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(req) = self.unlock.take() {
            self.rt.spawn(self.gate.ask(req));
        }
    }
}

/// The error of a nested mutation whose host file lock was not granted (the mutation never ran).
fn lock_refused(tool: &str, code: Option<String>, reason: Option<String>) -> CodeError {
    CodeError::new(
        code.as_deref().unwrap_or("unavailable"),
        format!(
            "{} failed: Pi's file mutation queue could not be taken for its paths ({}); nothing was changed. Retry the call.",
            tool,
            reason.as_deref().unwrap_or("no lease was granted")
        ),
    )
}

/// The progress forwarder of one outer call (None without a sink).
fn forwarder(outer: &OuterCall) -> Option<Arc<Forwarder>> {
    outer.progress.clone().map(|sink| {
        Arc::new(Forwarder {
            sink,
            sent: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
        })
    })
}

/// The size a nested reply counts against its limit: stdout/stderr by their UTF-8 bytes (however JSON escapes
/// them), everything else as JSON text.
fn reply_size(v: &Value) -> usize {
    let Value::Object(o) = v else {
        return v.to_string().len();
    };
    let mut meta = o.clone();
    let mut output = 0;
    for k in ["stdout", "stderr"] {
        if let Some(Value::String(text)) = meta.get_mut(k) {
            output += text.len();
            text.clear();
        }
    }
    Value::Object(meta).to_string().len() + output
}

/// The error of a reply too large to deliver. The call already ran, so the error names its session and recovery
/// file (also as `sessionId` / `recoveryPath` on the error in the cell): the output is not lost.
fn oversized_reply(tool: &str, size: usize, limit: usize, v: &Value) -> CodeError {
    let mut e = CodeError::new(
        "bridge-overload",
        format!("The reply of tools.{tool} is {size} bytes; a single reply may be at most {limit} bytes. The call ran; ask for less output (e.g. a smaller max_output_tokens)."),
    );
    e.session_id = session_id_of(v);
    e.recovery_path = v.pointer("/recovery/path").and_then(Value::as_str).map(str::to_string);
    if let Some(sid) = &e.session_id {
        let status = v.get("status").and_then(Value::as_str).unwrap_or("unknown");
        e.message.push_str(&format!(
            " Its session is {sid} (status {status}): poll or stop it with write_stdin {{\"session_id\": \"{sid}\"}}."
        ));
    }
    if let Some(p) = &e.recovery_path {
        e.message
            .push_str(&format!(" Its full output is in the recovery file {p}."));
    }
    e
}

/// Resolves once the cell is sealed (failure, terminate, close).
async fn sealed(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

fn stale(id: &str) -> CodeError {
    CodeError::new(
        "stale-cell",
        format!("No cell \"{id}\" is held: it finished and its result was already delivered, was pruned after 5 minutes unread, or never existed. Start a new cell with exec."),
    )
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
