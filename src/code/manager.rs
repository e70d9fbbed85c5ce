//! The cell manager: starts cells, observes them for `exec`/`wait`, bridges their nested calls to the
//! adapters (check order, limits, approval, slots) and enforces every §7 limit. Plain Rust (no napi): lib.rs
//! binds it, tests drive it with fake adapters.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};

use super::adapters::{Adapters, HostGate};
use super::engine::{self, EngineLimits};
use super::errors::{CellCode, CodeError};
use super::input::{parse_exec, parse_wait};
use super::limits::*;
use crate::output::RecoveryStore;

mod cell;
mod guards;
mod nested;
mod observe;
mod sink;

use cell::{forwarder, Cell, CellState};
pub use cell::{CellRead, OuterCall, ProgressFn, ProgressRecord};
use observe::Via;
use sink::Sink;

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

    /// The running cells with the CPU time each cell thread has used (milliseconds; None where it cannot be
    /// read): the footer calls out a cell running long and whether it is computing or waiting.
    pub fn running_cpu(&self) -> Vec<(String, Option<f64>)> {
        let cells: Vec<Arc<Cell>> = {
            let st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.cells.values().cloned().collect()
        };
        let mut out: Vec<(String, Option<f64>)> = cells
            .iter()
            .filter(|c| !c.st.lock().unwrap_or_else(PoisonError::into_inner).terminal)
            .map(|c| {
                let cpu = c
                    .engine
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .as_ref()
                    .and_then(|h| h.cpu_ms());
                (c.id.clone(), cpu)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
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
                CellCode::Aborted,
                "The call was cancelled before it started; no cell ran.",
            ));
        }
        let cell = {
            let mut st = self.inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            if st.closed {
                return Err(CodeError::new(
                    CellCode::Closed,
                    "Code cells are shut down for this session; start a new session.",
                ));
            }
            if !st.cleanup_pending.is_empty() {
                return Err(CodeError::new(
                    CellCode::CleanupIncomplete,
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
                    CellCode::CellLimit,
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
                        CellCode::CellStartFailed,
                        format!("The cell thread could not start ({e}); retry later."),
                    ));
                }
            }
        }
        self.limit_run_time(&cell, outer.max_cell.unwrap_or(DEFAULT_MAX_CELL));
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

    /// Stops `cell` with `cell-timeout` once it has run for `limit` (`codeMode.maxCellSeconds`, docs/code.md
    /// "Limits"), whether or not an outer call observes it: a runaway loop the model forgot is not left burning a
    /// core. The watcher holds only weak references and ends as soon as the cell is terminal.
    fn limit_run_time(&self, cell: &Arc<Cell>, limit: Duration) {
        let (weak_cell, weak_mgr) = (Arc::downgrade(cell), Arc::downgrade(&self.inner));
        let mut changed = cell.changed.subscribe();
        self.inner.rt.spawn(async move {
            let deadline = tokio::time::Instant::now() + limit;
            loop {
                let terminal = match weak_cell.upgrade() {
                    Some(c) => c.st.lock().unwrap_or_else(PoisonError::into_inner).terminal,
                    None => return,
                };
                if terminal {
                    return;
                }
                tokio::select! {
                    r = changed.changed() => if r.is_err() { return },
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
            let (Some(cell), Some(inner)) = (weak_cell.upgrade(), weak_mgr.upgrade()) else {
                return;
            };
            {
                let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
                // A program that ended at the deadline keeps its own outcome.
                if st.terminal || st.outcome.is_some() {
                    return;
                }
                st.timed_out = Some(limit);
            }
            CodeManager { inner }.stop(&cell).await;
            cell.bump();
        });
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
                CellCode::CleanupIncomplete,
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

fn stale(id: &str) -> CodeError {
    CodeError::new(
        CellCode::StaleCell,
        format!("No cell \"{id}\" is held: it finished and its result was already delivered, was pruned after 5 minutes unread, or never existed. Start a new cell with exec."),
    )
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
