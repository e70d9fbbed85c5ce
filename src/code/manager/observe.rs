//! Observing a cell for one outer `exec`/`wait`: the yield loop, the stop with its confirmation window, and the read
//! that renders what the model sees.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::cell::{forwarder, Cell, CellRead, NestedCounts, OuterCall};
use super::{stale, CodeManager};
use crate::code::engine::Outcome;
use crate::code::errors::{CellCode, CodeError};
use crate::code::limits::*;
use crate::code::render::render;

/// Which outer call observes a cell.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    /// The exec that started it (its progress sink was installed before the thread started).
    Exec,
    /// A wait that continues it.
    Wait,
    /// A wait {terminate: true}.
    Terminate,
}

impl CodeManager {
    pub(super) async fn observe(
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
                CellCode::Aborted,
                format!("The call was cancelled; cell {} was terminated. Effects of nested calls that already ran are kept.", cell.id),
            ));
        }
        Ok(read)
    }

    /// Stops a cell: interrupt + wake, then wait up to 5 s for the thread to confirm.
    pub(super) async fn stop(&self, cell: &Arc<Cell>) {
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

    pub(super) fn read(&self, cell: &Arc<Cell>, budget: usize, progress_dropped: u64) -> CellRead {
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        let terminal = st.terminal;
        let output_all = std::mem::take(&mut st.output);
        let shown = cut_utf8(&output_all, budget).to_string();
        let truncated = (output_all.len() - shown.len()) as u64;
        let dropped = std::mem::take(&mut st.dropped);
        let (mut result, mut error, mut result_truncated, mut error_truncated) = (None, None, false, false);
        let mut code = None;
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
                Some(Outcome::Terminated) if st.timed_out.is_some() => {
                    let limit = st.timed_out.unwrap_or_default().as_secs_f64();
                    code = Some(CellCode::CellTimeout.into());
                    error = Some(format!(
                        "{}: the cell ran past its limit of {limit} s (codeMode.maxCellSeconds) and was stopped; its \
                         output so far is above and effects of nested calls that already ran are kept. {}.",
                        CellCode::CellTimeout.as_str(),
                        cap_first(CellCode::CellTimeout.next_step())
                    ));
                    "terminated"
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
            code,
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
}

/// `s` with its first letter upper-cased (a code's hint starts a sentence).
fn cap_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
