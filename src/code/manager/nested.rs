//! One nested tool call of a cell as a task: policy, approval, slot, the host file lease for mutations, dispatch,
//! the seal, and the reply's size check and settlement.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use super::cell::{Cell, ProgressRecord};
use super::guards::{AbortOnDrop, LeaseGuard};
use super::Inner;
use crate::code::adapters::{session_id_of, GateRequest, NestedContext};
use crate::code::errors::{CellCode, CodeError, ErrorCode};
use crate::code::limits::*;

pub(super) struct NestedTask {
    pub(super) cell: Arc<Cell>,
    pub(super) mgr: Arc<Inner>,
    pub(super) id: u64,
    pub(super) tool: String,
    pub(super) args: Value,
    pub(super) size: usize,
    pub(super) preview: String,
}

pub(super) enum Ended {
    Reply(Result<Value, CodeError>),
    CancelledBeforeDispatch,
    Abandoned,
}

/// What the policy phase grants a call: its environment, the shell and the review target.
type Granted = (HashMap<String, String>, Option<Value>, Option<crate::review::Target>);
/// What a dispatched call holds until it ends: its adapter slot and, for apply_patch, the sequential patch lock.
type Permits = (
    tokio::sync::OwnedSemaphorePermit,
    Option<tokio::sync::OwnedMutexGuard<()>>,
);

impl NestedTask {
    /// The call from start to settlement: gate (unless the cell is sealed first), dispatch, the reply's size
    /// check, then the cell's counters and the reply to the engine.
    pub(super) async fn run(self) {
        let session_id = session_id_of(&self.args);
        self.progress("start", session_id.clone(), None, None);
        let mut seal = self.cell.seal.subscribe();
        let gated = tokio::select! {
            _ = sealed(&mut seal) => None,
            r = self.before_dispatch(session_id.clone()) => Some(r),
        };
        let ended = match gated {
            None => Ended::CancelledBeforeDispatch,
            Some(Err(e)) => Ended::Reply(Err(e)),
            Some(Ok((granted, permits))) => self.dispatch(granted, permits, &mut seal).await,
        };
        let ended = self.bounded(ended);
        self.settle(ended, session_id);
    }

    /// One progress record of this call.
    fn progress(&self, event: &str, session_id: Option<String>, ok: Option<bool>, code: Option<ErrorCode>) {
        self.cell.progress(ProgressRecord {
            event: event.into(),
            tool: self.tool.clone(),
            cell_id: self.cell.id.clone(),
            session_id,
            ok,
            code,
        });
    }

    /// Runs the gated call: counted as dispatched while it runs, under the host file lease when it mutates.
    async fn dispatch(&self, granted: Granted, permits: Permits, seal: &mut watch::Receiver<bool>) -> Ended {
        let cell = &self.cell;
        {
            let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
            st.queued -= 1;
            st.dispatched += 1;
        }
        let ctx = NestedContext {
            cwd: cell.cwd.clone(),
            cell_id: cell.id.clone(),
            env: granted.0,
            shell: granted.1,
            review: granted.2,
            cancel: cell.sealed_flag.clone(),
            sealed: Some(cell.seal.subscribe()),
        };
        let r = match self.take_lease().await {
            Err(e) => Ended::Reply(Err(e)),
            Ok(lease) => {
                let r = self.execute(ctx, seal).await;
                if let Some(lease) = lease {
                    lease.release().await;
                }
                r
            }
        };
        drop(permits);
        // Back to the "queued" column so the common settlement is uniform.
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        st.dispatched -= 1;
        st.queued += 1;
        r
    }

    /// A mutation takes Pi's file mutation queue for its paths (host lease) and, once started, runs to its end (a
    /// started commit finishes). Fail closed: without a held lease the mutation does not run (nothing is changed).
    async fn take_lease(&self) -> Result<Option<LeaseGuard>, CodeError> {
        let paths = self.mgr.adapters.mutated_paths(&self.tool, &self.args, &self.cell.cwd);
        let Some(p) = paths.filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
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

    /// Runs the executor as its own task so a panic in it becomes an error reply instead of leaving the cell
    /// waiting forever; dropping this future (seal) still cancels it. apply_patch runs to its end; other calls end
    /// their wait when the cell is sealed.
    async fn execute(&self, ctx: NestedContext, seal: &mut watch::Receiver<bool>) -> Ended {
        let task = self
            .mgr
            .rt
            .spawn(self.mgr.adapters.dispatch(&self.tool, self.args.clone(), ctx));
        let _cancel_on_drop = AbortOnDrop(task.abort_handle());
        let tool = self.tool.clone();
        let fut = async move {
            task.await.unwrap_or_else(|e| {
                Err(CodeError::new(
                    CellCode::Unavailable,
                    format!(
                        "tools.{tool} failed inside the toolkit ({e}); its effects are unknown: check before retrying."
                    ),
                ))
            })
        };
        if self.tool == "apply_patch" {
            return Ended::Reply(fut.await);
        }
        tokio::pin!(fut);
        tokio::select! {
            r = &mut fut => Ended::Reply(r),
            _ = sealed(seal) => {
                // Unsettled dispatch: the adapter sees the seal and aborts cooperatively (an in-flight
                // exec_command stops its job). One that ignores it is abandoned.
                let grace = Duration::from_millis(NESTED_ABORT_GRACE_MS);
                match tokio::time::timeout(grace, &mut fut).await {
                    Ok(r) => Ended::Reply(r),
                    Err(_) => Ended::Abandoned,
                }
            }
        }
    }

    /// The size check of replies and errors: an oversized reply becomes an error (its yielded shell stays
    /// reported), an oversized error message is cut.
    fn bounded(&self, ended: Ended) -> Ended {
        match ended {
            Ended::Reply(Ok(v)) => {
                let size = reply_size(&v);
                let limit = MAX_NESTED_PAYLOAD_BYTES + NESTED_REPLY_META_BYTES;
                if size <= limit {
                    return Ended::Reply(Ok(v));
                }
                let running = v.get("status").and_then(Value::as_str) == Some("running");
                let e = oversized_reply(&self.tool, size, limit, &v);
                if let (true, Some(sid), false) = (running, &e.session_id, self.tool == "apply_patch") {
                    // The shell was yielded even though its reply was not: it stays reported in `shells`.
                    self.cell
                        .st
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .shells
                        .insert(sid.clone());
                }
                Ended::Reply(Err(e))
            }
            Ended::Reply(Err(mut e)) => {
                if e.message.len() > MAX_NESTED_PAYLOAD_BYTES {
                    e.message = cut_utf8(&e.message, MAX_NESTED_PAYLOAD_BYTES).to_string();
                }
                Ended::Reply(Err(e))
            }
            other => other,
        }
    }

    /// Settles the call: its end progress record, the cell's counters and shells, the reply to the engine.
    fn settle(&self, ended: Ended, session_id: Option<String>) {
        let cell = &self.cell;
        let (ok, code) = match &ended {
            Ended::Reply(Ok(_)) => (true, None),
            Ended::Reply(Err(e)) => (false, Some(e.code)),
            Ended::CancelledBeforeDispatch | Ended::Abandoned => (false, Some(CellCode::Aborted.into())),
        };
        let reply_session = match &ended {
            Ended::Reply(Ok(v)) if self.tool != "apply_patch" => session_id_of(v).or(session_id),
            _ => session_id,
        };
        // Progress first: once the call settles the cell may become terminal and its observer leave.
        self.progress("end", reply_session, Some(ok), code);
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
    async fn before_dispatch(&self, session_id: Option<String>) -> Result<(Granted, Permits), CodeError> {
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
                ans.code.unwrap_or(CellCode::PolicyDenied.into()),
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
                    a.code.unwrap_or(CellCode::ApprovalDenied.into()),
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

/// The error of a nested mutation whose host file lock was not granted (the mutation never ran).
pub(super) fn lock_refused(tool: &str, code: Option<ErrorCode>, reason: Option<String>) -> CodeError {
    CodeError::new(
        code.unwrap_or(CellCode::Unavailable.into()),
        format!(
            "{} failed: Pi's file mutation queue could not be taken for its paths ({}); nothing was changed. Retry the call.",
            tool,
            reason.as_deref().unwrap_or("no lease was granted")
        ),
    )
}

/// them), everything else as JSON text.
pub(super) fn reply_size(v: &Value) -> usize {
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
pub(super) fn oversized_reply(tool: &str, size: usize, limit: usize, v: &Value) -> CodeError {
    let mut e = CodeError::new(
        CellCode::BridgeOverload,
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
pub(super) async fn sealed(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}
