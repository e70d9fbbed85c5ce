//! A cell's state and what one read of it returns: counters, buffered output, the capture behind the recovery
//! file, and the progress forwarder of the outer call observing it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;
use tokio::sync::watch;

use crate::code::engine::{EngineHandle, Outcome};
use crate::code::limits::*;
use crate::output::{Capture, RecoverySnapshot};

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
    pub code: Option<crate::code::errors::ErrorCode>,
}

/// Receives progress records of the outer call currently observing a cell.
pub type ProgressFn = Arc<dyn Fn(ProgressRecord) + Send + Sync>;

/// What an outer `exec`/`wait` call brings besides its arguments.
#[derive(Clone, Default)]
pub struct OuterCall {
    /// Pi's cwd (exec only: nested shells resolve workdir against it).
    pub cwd: String,
    /// exec only: how long the cell may run before it is stopped with `cell-timeout` (`codeMode.maxCellSeconds`;
    /// None = [`DEFAULT_MAX_CELL`]). Counted from the cell's start, which follows any approval of the exec call.
    pub max_cell: Option<std::time::Duration>,
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
    /// Why a terminated cell was stopped by the toolkit itself: `cell-timeout` (it ran past its limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<crate::code::errors::ErrorCode>,
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
pub(super) struct CellState {
    pub(super) outcome: Option<Outcome>,
    pub(super) terminal: bool,
    pub(super) terminal_at: Option<Instant>,
    pub(super) unknown_outcome: bool,
    pub(super) output: String,
    pub(super) dropped: u64,
    /// Every emitted byte, before any preview limit: Shell's capture (in memory until a yield, a spill past
    /// 256 KiB or a lossy read needs the private recovery file). Always `Some` once the cell exists.
    pub(super) capture: Option<Capture>,
    pub(super) queued: u64,
    pub(super) dispatched: u64,
    pub(super) abandoned: u64,
    pub(super) completed: u64,
    pub(super) failed: u64,
    pub(super) cancelled: u64,
    pub(super) outstanding_bytes: usize,
    pub(super) shells: BTreeSet<String>,
    pub(super) result_delivered: bool,
    /// The cell thread reported its outcome (done() ran).
    pub(super) thread_ended: bool,
    /// The cell was stopped because it ran past this limit (`cell-timeout`).
    pub(super) timed_out: Option<std::time::Duration>,
}

pub(super) struct Forwarder {
    pub(super) sink: ProgressFn,
    pub(super) sent: AtomicUsize,
    pub(super) dropped: AtomicUsize,
}

pub(super) struct Cell {
    pub(super) id: String,
    pub(super) cwd: String,
    pub(super) declared: Vec<String>,
    pub(super) engine: Mutex<Option<EngineHandle>>,
    pub(super) st: Mutex<CellState>,
    pub(super) changed: watch::Sender<u64>,
    pub(super) seal: watch::Sender<bool>,
    /// The same seal as a flag for blocking executors (nested apply_patch preflight/staging).
    pub(super) sealed_flag: Arc<AtomicBool>,
    pub(super) observe: tokio::sync::Mutex<()>,
    pub(super) observer: Mutex<Option<Arc<Forwarder>>>,
}

impl Cell {
    pub(super) fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    pub(super) fn progress(&self, rec: ProgressRecord) {
        let f = self.observer.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(f) = f {
            if f.sent.fetch_add(1, Ordering::SeqCst) < MAX_PROGRESS_RECORDS {
                (f.sink)(rec);
            } else {
                f.dropped.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    pub(super) fn ensure_recovery(st: &mut CellState) {
        if let Some(c) = st.capture.as_mut() {
            c.require_file();
        }
    }

    /// A `[result]` / `[error]` block cut to `limit` bytes on a UTF-8 boundary; the whole text goes to the
    /// recovery file first. Returns the shown text and whether it was cut.
    pub(super) fn bounded(st: &mut CellState, text: String, limit: usize, block: &str) -> (String, bool) {
        if text.len() <= limit {
            return (text, false);
        }
        Cell::ensure_recovery(st);
        Cell::capture_text(st, &format!("\n[{block}]\n{text}\n"));
        (cut_utf8(&text, limit).to_string(), true)
    }

    pub(super) fn capture_text(st: &mut CellState, text: &str) {
        if let Some(c) = st.capture.as_mut() {
            c.append(text.as_bytes());
        }
    }

    /// Terminal when the program ended and no tracked nested call is queued or dispatched.
    pub(super) fn settle_check(&self, st: &mut CellState) -> bool {
        if st.terminal || st.outcome.is_none() || st.queued > 0 || st.dispatched > 0 {
            return false;
        }
        st.terminal = true;
        st.terminal_at = Some(Instant::now());
        true
    }
}

/// The progress forwarder of one outer call (None without a sink).
pub(super) fn forwarder(outer: &OuterCall) -> Option<Arc<Forwarder>> {
    outer.progress.clone().map(|sink| {
        Arc::new(Forwarder {
            sink,
            sent: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
        })
    })
}
