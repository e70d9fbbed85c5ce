//! The shell session manager: the one executor behind `exec_command` / `write_stdin`, shared by the direct Pi tools
//! and Code Mode's nested calls (Rust to Rust). Owns the jobs, their limits and their recovery files.
//!
//! One module over 600 lines because every job operation (start, poll, write, stop, cleanup) goes through the one
//! `Registry` lock, whose ordering is easiest to check in one place.

use super::cancel::{cancelled, Cancel};
use super::error::{invalid_session, ShellCode, ShellError};
use super::job::{self, Delivery, Job, JobState, Pending, StdinOp, StdinState, StopPhase, Ticket};
use super::process::{parse_env_overlay, signal_group, ShellConfig};
use super::render::{ShellResult, Status, StdinSnapshot};
use super::request::{normalize_exec, normalize_write, ExecRequest, WriteRequest};
use crate::output::{split_preview, RecoveryStore};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

/// Every limit of §5 in one place (tests shorten the timers; the tools use [`Limits::default`]).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Unsettled jobs at once (`session-limit`).
    pub max_running: usize,
    /// Unread terminal handles kept before the oldest is pruned.
    pub max_terminal: usize,
    /// Age after which an unread terminal handle is pruned.
    pub terminal_ttl: Duration,
    /// SIGTERM to SIGKILL escalation.
    pub stop_grace: Duration,
    /// Window to confirm the group and pipes are gone after SIGKILL.
    pub stop_confirm: Duration,
    /// stdin bytes admitted and not yet settled per session.
    pub stdin_bytes: usize,
    /// Input calls admitted and not yet settled per session.
    pub stdin_calls: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_running: 16,
            max_terminal: 32,
            terminal_ttl: Duration::from_secs(300),
            stop_grace: Duration::from_secs(5),
            stop_confirm: Duration::from_secs(5),
            stdin_bytes: 262_144,
            stdin_calls: 16,
        }
    }
}

/// Per-call context: where and how to run, and how the call can be cancelled.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The caller's working directory (Pi's `ctx.cwd`); `workdir` is resolved against it.
    pub cwd: PathBuf,
    /// The shell to use; `None` = the manager's default set by [`Manager::set_shell`].
    pub shell: Option<ShellConfig>,
    /// The invocation hook's `context().env` overlay for this one spawn (validated before spawning).
    pub env: Option<Value>,
    /// Cancellation of this call.
    pub cancel: Option<Cancel>,
    /// Whether cancelling this call stops its job (direct calls: yes; Code Mode nested calls: no).
    pub stop_on_cancel: bool,
    /// Where the call publishes the job it waits on, for live output (direct calls; `None` for nested ones).
    pub live: Option<super::live::LiveSlot>,
}

struct Registry {
    jobs: HashMap<String, Arc<Job>>,
    released: HashSet<String>,
    released_order: VecDeque<String>,
    closed: bool,
    cleanup_pending: bool,
}

const RELEASED_MEMORY: usize = 4096;

/// Facts for `/pct status` and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerStatus {
    /// Jobs not yet settled (counted against the 16-job limit).
    pub running: usize,
    /// Settled jobs whose final result was not read yet.
    pub unread_terminal: usize,
    /// Jobs whose stop could not be confirmed.
    pub stop_unconfirmed: usize,
    /// The last cleanup was incomplete and work may remain.
    pub cleanup_pending: bool,
    /// The manager refuses new work.
    pub closed: bool,
    /// Recovery files this manager created and still owns.
    pub recovery_files: usize,
    /// Why the exit watchdog (docs/shell.md "When Node exits") is not running although a job or recovery file
    /// needed it: jobs still run, but nothing cleans up after them if Node ends without a session shutdown.
    pub watchdog_failure: Option<String>,
}

/// The shell session manager. Share it behind an `Arc`.
pub struct Manager {
    reg: Mutex<Registry>,
    limits: Limits,
    store: RecoveryStore,
    default_shell: Mutex<Option<ShellConfig>>,
    /// `<instance>:<manager>:` — the start of every marker of this manager's jobs (see [`Job::marker`]).
    marker_prefix: String,
    /// Whether any job was ever spawned (a close without jobs skips the `/proc` scan).
    spawned: std::sync::atomic::AtomicBool,
}

impl Default for Manager {
    fn default() -> Self {
        Self::new(Limits::default(), RecoveryStore::new("shell"))
    }
}

fn aborted(id: Option<&str>, stopped: bool) -> ShellError {
    let what = match (id, stopped) {
        (Some(id), true) => format!(" Session {id} is being stopped."),
        (Some(id), false) => format!(" Session {id} keeps running; poll it with write_stdin."),
        _ => String::new(),
    };
    ShellError::new(ShellCode::Aborted, format!("The call was cancelled.{what}"))
}

fn manager_closed() -> ShellError {
    ShellError::new(ShellCode::ManagerClosed, "Shell Sessions for this Pi session were closed (session ended or replaced); start a new command in the current session.")
}

/// Test seam: a panic while this manager's locks are held (the registry, every job's state, the default shell).
/// The locks are `parking_lot`'s, which do not poison, so later calls must work as before.
#[cfg(test)]
impl Manager {
    pub(crate) fn panic_under_locks(&self, why: &str) {
        let reg = self.reg.lock();
        let _states: Vec<_> = reg.jobs.values().map(|j| j.state.lock()).collect();
        let _shell = self.default_shell.lock();
        panic!("{why}");
    }
}

impl Manager {
    /// A manager with explicit limits and recovery store.
    pub fn new(limits: Limits, store: RecoveryStore) -> Self {
        Self {
            reg: Mutex::new(Registry {
                jobs: HashMap::new(),
                released: HashSet::new(),
                released_order: VecDeque::new(),
                closed: false,
                cleanup_pending: false,
            }),
            limits,
            store,
            default_shell: Mutex::new(None),
            marker_prefix: format!(
                "{}:{}:",
                super::watchdog::instance(),
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            spawned: Default::default(),
        }
    }

    /// Sets the shell used when a call brings none (the TS glue passes Pi's `getShellConfig()`).
    pub fn set_shell(&self, shell: Option<ShellConfig>) {
        *self.default_shell.lock() = shell;
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The recovery store (paths of owned files for diagnostics and tests).
    pub fn recovery_store(&self) -> &RecoveryStore {
        &self.store
    }

    /// `exec_command` with raw arguments (both spellings accepted; validated exactly like the direct tool).
    pub async fn exec(&self, args: &Value, ctx: CallContext) -> Result<ShellResult, ShellError> {
        let req = normalize_exec(args)?;
        self.exec_request(req, ctx).await
    }

    /// `write_stdin` with raw arguments.
    pub async fn write_stdin(&self, args: &Value, ctx: CallContext) -> Result<ShellResult, ShellError> {
        let req = normalize_write(args)?;
        self.write_request(req, ctx).await
    }

    /// Starts a validated command once and observes it for up to `yield_time_ms`.
    pub async fn exec_request(&self, req: ExecRequest, ctx: CallContext) -> Result<ShellResult, ShellError> {
        if ctx.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            return Err(aborted(None, false));
        }
        if self.reg.lock().closed {
            return Err(manager_closed());
        }
        let env = parse_env_overlay(ctx.env.as_ref())?;
        let dir = match &req.workdir {
            None => ctx.cwd.clone(),
            Some(w) => ctx.cwd.join(w),
        };
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(ShellError::new(
                    ShellCode::InvalidCwd,
                    format!("workdir {} is not a directory.", dir.display()),
                ))
            }
            Err(_) => {
                return Err(ShellError::new(
                    ShellCode::InvalidCwd,
                    format!(
                        "workdir {} does not exist (workdir is relative to the current directory {}).",
                        dir.display(),
                        ctx.cwd.display()
                    ),
                ))
            }
        }
        let shell = match ctx.shell.clone().or_else(|| self.default_shell.lock().clone()) {
            Some(s) => s,
            None => {
                return Err(ShellError::new(
                    ShellCode::ShellUnavailable,
                    "No usable local shell was resolved; Shell Sessions cannot run commands.",
                ))
            }
        };
        let deadline = tokio::time::Instant::now() + Duration::from_millis(req.yield_time_ms);
        let job = {
            let mut reg = self.reg.lock();
            if reg.closed {
                return Err(manager_closed());
            }
            self.prune(&mut reg);
            let running = reg.jobs.values().filter(|j| !j.state.lock().settled()).count();
            if running >= self.limits.max_running {
                return Err(ShellError::new(
                    ShellCode::SessionLimit,
                    format!(
                        "{running} commands are already running (limit {}). Wait for one with write_stdin or stop one with \
                         write_stdin {{\"terminate\": true}} before starting another.",
                        self.limits.max_running
                    ),
                ));
            }
            let job = self.spawn(&req.cmd, &dir, &shell, &env)?;
            reg.jobs.insert(job.id.clone(), job.clone());
            job
        };
        self.observe(&job, deadline, req.max_output_bytes, &ctx, None, 0).await
    }

    fn spawn(
        &self,
        cmd: &str,
        dir: &std::path::Path,
        shell: &ShellConfig,
        env: &[(String, String)],
    ) -> Result<Arc<Job>, ShellError> {
        let mut c = tokio::process::Command::new(&shell.shell);
        c.args(&shell.args);
        if !shell.stdin_transport {
            c.arg(cmd);
        }
        c.current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        for (k, v) in env {
            c.env(k, v);
        }
        let id = format!("pct-shell-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        // After the overlay: the marker is ours, an embedder's env cannot replace it.
        let marker = format!("{}{id}", self.marker_prefix);
        c.env(super::watchdog::MARKER_VAR, &marker);
        // Before the first spawn, so no job can outlive this process unnoticed (docs/shell.md "When Node exits").
        super::watchdog::ensure_started();
        self.spawned.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut child = c.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ShellError::new(
                    ShellCode::ShellUnavailable,
                    format!(
                        "The shell {} could not be found; Shell Sessions cannot run commands.",
                        shell.shell
                    ),
                )
            } else {
                ShellError::new(
                    ShellCode::SpawnFailed,
                    format!("Could not start the command with {}: {e}. Nothing ran.", shell.shell),
                )
            }
        })?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        super::watchdog::add_group(pgid);
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        if let Some(o) = &stdout {
            super::process::grow_pipe(o);
        }
        if let Some(e) = &stderr {
            super::process::grow_pipe(e);
        }
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::unbounded_channel();
        let pipe_inodes = [
            stdout.as_ref().map_or(0, super::process::pipe_inode),
            stderr.as_ref().map_or(0, super::process::pipe_inode),
        ];
        let job = Arc::new(Job {
            id,
            pgid,
            marker,
            pipe_inodes,
            stdin_transport: shell.stdin_transport,
            state: Mutex::new(JobState {
                stdout: Pending::default(),
                stderr: Pending::default(),
                capture: self.store.capture(),
                leader: None,
                out_eof: stdout.is_none(),
                err_eof: stderr.is_none(),
                group_gone: false,
                settled_at: None,
                released: false,
                stdin: if shell.stdin_transport {
                    StdinState::Closed
                } else {
                    StdinState::Open
                },
                stdin_pending_bytes: 0,
                stdin_pending_calls: 0,
                stop: StopPhase::None,
                unknown_outcome: false,
                survivors: Vec::new(),
                yielded: false,
                leftover_stop: None,
            }),
            version: watch::channel(0u64).0,
            observe_lock: tokio::sync::Mutex::new(()),
            stdin_tx: tx,
        });
        if shell.stdin_transport {
            let (done, _) = oneshot::channel();
            let _ = job.stdin_tx.send(StdinOp {
                bytes: cmd.as_bytes().to_vec(),
                close: true,
                done,
                ticket: None,
            });
        }
        tokio::spawn(job::stdin_writer(Arc::downgrade(&job), stdin, rx));
        if let Some(o) = stdout {
            tokio::spawn(job::pump(job.clone(), o, job::Stream::Out));
        }
        if let Some(e) = stderr {
            tokio::spawn(job::pump(job.clone(), e, job::Stream::Err));
        }
        tokio::spawn(job::supervise(job.clone(), child));
        Ok(job)
    }

    pub(super) fn lookup(&self, id: &str) -> Result<Arc<Job>, ShellError> {
        let mut reg = self.reg.lock();
        if reg.closed {
            return Err(manager_closed());
        }
        self.prune(&mut reg);
        if let Some(j) = reg.jobs.get(id) {
            return Ok(j.clone());
        }
        if reg.released.contains(id) {
            return Err(ShellError::new(
                ShellCode::StaleSession,
                format!("Session {id} already ended and its final result was delivered (or its unread handle expired). Its recovery file, if any, is still on disk."),
            ));
        }
        Err(invalid_session(format!(
            "Unknown session_id {id:?}: use the exact handle an exec_command result returned."
        )))
    }

    /// Polls, writes to stdin, closes stdin or stops a job, then observes it.
    pub async fn write_request(&self, req: WriteRequest, ctx: CallContext) -> Result<ShellResult, ShellError> {
        if ctx.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            return Err(aborted(None, false));
        }
        let job = self.lookup(&req.session_id)?;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(req.yield_time_ms);
        if req.terminate {
            if !req.input.is_empty() {
                return Err(ShellError::new(
                    ShellCode::StdinFailed,
                    "write_stdin cannot send input and terminate in the same call; nothing was sent. Send the input first, or terminate without input.",
                ));
            }
            let stopper = {
                let job = job.clone();
                let limits = self.limits.clone();
                tokio::spawn(async move { stop_job(&job, &limits, true).await })
            };
            tokio::select! {
                _ = stopper => {}
                _ = cancelled(&ctx.cancel) => return Err(aborted(Some(&job.id), true)),
            }
            return self
                .observe(&job, tokio::time::Instant::now(), req.max_output_bytes, &ctx, None, 0)
                .await;
        }
        let sends = !req.input.is_empty() || req.close_stdin;
        let mut pending: Option<(oneshot::Receiver<Delivery>, Arc<Ticket>)> = None;
        if sends {
            let mut st = job.state.lock();
            if !req.input.is_empty() {
                if job.stdin_transport {
                    return Err(ShellError::new(
                        ShellCode::StdinTransport,
                        format!("Session {} received its command through stdin, which is closed; it cannot take input. Poll it with empty input.", job.id),
                    ));
                }
                if st.stdin != StdinState::Open || st.settled() {
                    let why = match st.stdin {
                        StdinState::Broken => "its stdin pipe broke",
                        StdinState::Closed => "its stdin was closed",
                        StdinState::Open => "the process has exited",
                    };
                    return Err(ShellError::new(
                        ShellCode::StdinClosed,
                        format!("Session {} cannot take input: {why}. Nothing was sent.", job.id),
                    ));
                }
                let n = req.input.len();
                if st.stdin_pending_calls >= self.limits.stdin_calls
                    || st.stdin_pending_bytes + n > self.limits.stdin_bytes
                {
                    return Err(ShellError::new(
                        ShellCode::StdinOverload,
                        format!(
                            "Session {} has {} input calls / {} bytes not yet delivered (limits {} calls, {} bytes); this input of {n} bytes was not sent. Poll until the program reads its input, then retry.",
                            job.id, st.stdin_pending_calls, st.stdin_pending_bytes, self.limits.stdin_calls, self.limits.stdin_bytes
                        ),
                    ));
                }
            }
            if st.stdin == StdinState::Open && !(req.input.is_empty() && st.settled()) {
                if st.stdin_pending_calls >= self.limits.stdin_calls {
                    return Err(ShellError::new(
                        ShellCode::StdinOverload,
                        format!("Session {} has {} input calls not yet delivered (limit {}); nothing was sent. Poll, then retry.", job.id, st.stdin_pending_calls, self.limits.stdin_calls),
                    ));
                }
                let ticket = Ticket::new(&job, &mut st, req.input.len());
                if req.close_stdin {
                    st.stdin = StdinState::Closed;
                }
                let (done, rx) = oneshot::channel();
                let op = StdinOp {
                    bytes: req.input.clone().into_bytes(),
                    close: req.close_stdin,
                    done,
                    ticket: Some(ticket.clone()),
                };
                drop(st);
                if job.stdin_tx.send(op).is_err() {
                    drop(ticket);
                    return Err(ShellError::new(
                        ShellCode::StdinFailed,
                        format!("Session {}'s stdin writer is gone; nothing was sent.", job.id),
                    ));
                }
                pending = Some((rx, ticket));
            }
            // else: closeStdin on an already closed/broken stdin is harmless; fall through to a poll.
        }
        let mut delivery = None;
        let mut ticket_hold = None;
        if let Some((rx, ticket)) = pending {
            ticket_hold = Some(ticket);
            tokio::select! {
                r = rx => delivery = Some(r.unwrap_or(Delivery::Unknown)),
                _ = tokio::time::sleep_until(deadline) => delivery = Some(Delivery::Unknown),
                _ = cancelled(&ctx.cancel) => {
                    // Only the call's share goes: the queued StdinOp owns its own share of the ticket, so the
                    // admission stays counted until the writer settles it (written, failed or discarded).
                    drop(ticket_hold);
                    if ctx.stop_on_cancel { self.spawn_stop(&job); }
                    return Err(aborted(Some(&job.id), ctx.stop_on_cancel));
                }
            }
        }
        let r = self
            .observe(&job, deadline, req.max_output_bytes, &ctx, delivery, req.input.len())
            .await;
        drop(ticket_hold);
        r
    }

    fn spawn_stop(&self, job: &Arc<Job>) {
        let job = job.clone();
        let limits = self.limits.clone();
        tokio::spawn(async move { stop_job(&job, &limits, false).await });
    }

    async fn observe(
        &self,
        job: &Arc<Job>,
        deadline: tokio::time::Instant,
        budget: usize,
        ctx: &CallContext,
        delivery: Option<Delivery>,
        input_bytes: usize,
    ) -> Result<ShellResult, ShellError> {
        let on_cancel = |this: &Self| {
            if ctx.stop_on_cancel {
                this.spawn_stop(job);
            }
            aborted(Some(&job.id), ctx.stop_on_cancel)
        };
        let _guard = tokio::select! {
            g = job.observe_lock.lock() => g,
            _ = cancelled(&ctx.cancel) => return Err(on_cancel(self)),
        };
        super::live::publish(ctx.live.as_ref(), job);
        if job.state.lock().released {
            return Err(ShellError::new(
                ShellCode::StaleSession,
                format!("Session {} already ended and another call received its final result. Its recovery file, if any, is still on disk.", job.id),
            ));
        }
        let mut rx = job.version.subscribe();
        loop {
            {
                let st = job.state.lock();
                if st.settled() || st.unknown_outcome || tokio::time::Instant::now() >= deadline {
                    break;
                }
            }
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(deadline) => {}
                _ = cancelled(&ctx.cancel) => return Err(on_cancel(self)),
            }
        }
        let result = {
            let mut st = job.state.lock();
            let out = std::mem::take(&mut st.stdout);
            let err = std::mem::take(&mut st.stderr);
            let p = split_preview(&out.text, &err.text, budget);
            let dropped = (p.dropped + out.overflow + err.overflow) as u64;
            let settled = st.settled();
            // a terminate after the command completed on its own only went after its leftovers: still `completed`
            let after_completion = st.leftover_stop.is_some();
            let stopped = st.stop != StopPhase::None && !after_completion;
            let status = if settled {
                if stopped {
                    Status::Terminated
                } else {
                    Status::Completed
                }
            } else if st.unknown_outcome {
                Status::Terminated
            } else {
                Status::Running
            };
            // A yield needs the file once output exists (a later read cannot show what this one consumed).
            if !settled {
                st.yielded = true;
                if st.capture.captured_bytes() > 0 {
                    st.capture.require_file();
                }
            }
            if dropped > 0 {
                st.capture.require_file();
            }
            if settled {
                if !st.capture.has_file() {
                    st.capture.discard_buffer();
                }
                // an unconfirmed stop keeps the handle for a retry, even when the group itself is gone
                if !st.unknown_outcome {
                    st.released = true;
                }
            }
            let (exit_code, signal) = match st.leader {
                Some(job::LeaderExit::Code(c)) => (Some(c), None),
                Some(job::LeaderExit::Signal(s)) => (None, Some(super::process::signal_name(s))),
                _ => (None, None),
            };
            let (exit_code, signal) = if status == Status::Running || (st.unknown_outcome && !after_completion) {
                (None, None)
            } else {
                (exit_code, signal)
            };
            ShellResult {
                session_id: job.id.clone(),
                status,
                exit_code,
                signal,
                stdout: out.text[..p.stdout_len].to_string(),
                stderr: err.text[..p.stderr_len].to_string(),
                dropped,
                budget,
                unknown_outcome: st.unknown_outcome,
                survivors: if st.unknown_outcome {
                    st.survivors.clone()
                } else {
                    Vec::new()
                },
                leftovers: st.leftover_stop.clone(),
                recovery: st.capture.snapshot(),
                input_delivery: delivery,
                input_bytes,
                stdin: StdinSnapshot {
                    state: st.stdin,
                    pending_bytes: st.stdin_pending_bytes,
                    pending_calls: st.stdin_pending_calls,
                },
            }
        };
        if result.status != Status::Running && !result.unknown_outcome {
            let mut reg = self.reg.lock();
            reg.jobs.remove(&job.id);
            remember_released(&mut reg, &job.id);
        }
        Ok(result)
    }

    fn prune(&self, reg: &mut Registry) {
        let now = Instant::now();
        let mut terminal: Vec<(Instant, String)> = reg
            .jobs
            .values()
            .filter_map(|j| {
                let st = j.state.lock();
                // an unconfirmed stop keeps its handle until a retry confirms it
                st.settled_at.filter(|_| !st.unknown_outcome).map(|t| (t, j.id.clone()))
            })
            .collect();
        terminal.sort();
        let excess = terminal.len().saturating_sub(self.limits.max_terminal);
        for (i, (t, id)) in terminal.into_iter().enumerate() {
            if i < excess || now.duration_since(t) >= self.limits.terminal_ttl {
                if let Some(j) = reg.jobs.remove(&id) {
                    j.state.lock().released = true;
                    j.bump();
                }
                remember_released(reg, &id);
            }
        }
    }

    /// Stops one job by handle (SIGTERM, SIGKILL after the grace period, confirmation window). Returns whether the
    /// stop was confirmed.
    pub async fn terminate(&self, session_id: &str) -> Result<bool, ShellError> {
        let job = self.lookup(session_id)?;
        Ok(stop_job(&job, &self.limits, true).await)
    }

    /// Stops every unsettled job (switch/fork preflight, feature disabled). `cleanup-incomplete` when any stop
    /// could not be confirmed; the manager stays usable and keeps the handles for a retry.
    pub async fn cleanup(&self) -> Result<(), ShellError> {
        let jobs: Vec<Arc<Job>> = {
            let mut reg = self.reg.lock();
            self.prune(&mut reg);
            reg.jobs
                .values()
                .filter(|j| {
                    let st = j.state.lock();
                    !st.settled() || st.unknown_outcome
                })
                .cloned()
                .collect()
        };
        let limits = self.limits.clone();
        let tasks: Vec<_> = jobs
            .iter()
            .cloned()
            .map(|j| {
                let limits = limits.clone();
                tokio::spawn(async move { stop_job(&j, &limits, false).await })
            })
            .collect();
        let mut all = true;
        let mut survivors = Vec::new();
        for (t, j) in tasks.into_iter().zip(jobs) {
            if !t.await.unwrap_or(false) {
                all = false;
                survivors.extend(j.state.lock().survivors.iter().copied());
            }
        }
        self.reg.lock().cleanup_pending = !all;
        if all {
            Ok(())
        } else {
            Err(cleanup_incomplete(&survivors))
        }
    }

    /// Closes the manager (new calls get `manager-closed`) after stopping every job, then stops every process
    /// still carrying one of this manager's job markers — also descendants of commands that completed on their
    /// own (`setsid`, daemons): the session that started them is ending. Files are not deleted here: see
    /// [`Manager::delete_recovery_files`] (a real `session_shutdown` does both).
    pub async fn close(&self) -> Result<(), ShellError> {
        self.reg.lock().closed = true;
        let r = self.cleanup().await;
        let escaped = self.stop_marked().await;
        self.store.close();
        match (r, escaped.is_empty()) {
            (Ok(()), true) => Ok(()),
            (Ok(()), false) => {
                self.reg.lock().cleanup_pending = true;
                Err(cleanup_incomplete(&escaped))
            }
            (Err(e), _) => Err(e),
        }
    }

    /// SIGTERM to every live process carrying this manager's marker prefix, SIGKILL after the grace period; returns
    /// the pids still alive after the confirmation window.
    async fn stop_marked(&self) -> Vec<i32> {
        if !self.spawned.load(std::sync::atomic::Ordering::SeqCst) {
            return Vec::new();
        }
        let prefix = self.marker_prefix.clone();
        let mine = move |v: &str| v.starts_with(&prefix);
        let pids = super::process::marked_pids(&mine);
        if pids.is_empty() {
            return pids;
        }
        super::process::signal_marked(&pids, &mine, libc::SIGTERM);
        for (window, then_kill) in [(self.limits.stop_grace, true), (self.limits.stop_confirm, false)] {
            let deadline = tokio::time::Instant::now() + window;
            loop {
                let left = super::process::marked_pids(&mine);
                if left.is_empty() {
                    return left;
                }
                if tokio::time::Instant::now() >= deadline {
                    if then_kill {
                        super::process::signal_marked(&left, &mine, libc::SIGKILL);
                        break;
                    }
                    return left;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Vec::new()
    }

    /// Deletes the recovery files this manager created (only those). Returns how many were deleted.
    pub fn delete_recovery_files(&self) -> usize {
        self.store.delete_files()
    }

    /// Facts for `/pct status`.
    pub fn status(&self) -> ManagerStatus {
        let reg = self.reg.lock();
        let mut s = ManagerStatus {
            running: 0,
            unread_terminal: 0,
            stop_unconfirmed: 0,
            cleanup_pending: reg.cleanup_pending,
            closed: reg.closed,
            recovery_files: self.store.file_count(),
            watchdog_failure: super::watchdog::failure(),
        };
        for j in reg.jobs.values() {
            let st = j.state.lock();
            if st.unknown_outcome {
                s.stop_unconfirmed += 1;
            }
            if st.settled() {
                s.unread_terminal += 1;
            } else {
                s.running += 1;
            }
        }
        s
    }

    /// [`Manager::status`] as a JSON object (camelCase).
    pub fn status_json(&self) -> Value {
        let s = self.status();
        let mut v = json!({
            "running": s.running,
            "unreadTerminal": s.unread_terminal,
            "stopUnconfirmed": s.stop_unconfirmed,
            "cleanupPending": s.cleanup_pending || s.stop_unconfirmed > 0,
            "closed": s.closed,
            "recoveryFiles": s.recovery_files,
        });
        if let Some(f) = s.watchdog_failure {
            v["watchdogFailure"] = Value::String(f);
        }
        v
    }
}

fn cleanup_incomplete(survivors: &[i32]) -> ShellError {
    let named = if survivors.is_empty() {
        String::new()
    } else {
        format!(" Still alive: pid {}.", join_pids(survivors))
    };
    ShellError::new(
        ShellCode::CleanupIncomplete,
        format!(
            "Some shell jobs could not be confirmed stopped (a process escaped its group or still holds the output \
             pipes).{named} Their handles are kept; retry the cleanup, or stop those processes yourself."
        ),
    )
}

/// `12, 34` (at most 16 named, then `and N more`).
pub(super) fn join_pids(pids: &[i32]) -> String {
    let mut s = pids
        .iter()
        .take(16)
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if pids.len() > 16 {
        s.push_str(&format!(" and {} more", pids.len() - 16));
    }
    s
}

fn remember_released(reg: &mut Registry, id: &str) {
    if reg.released.insert(id.to_string()) {
        reg.released_order.push_back(id.to_string());
        if reg.released_order.len() > RELEASED_MEMORY {
            if let Some(old) = reg.released_order.pop_front() {
                reg.released.remove(&old);
            }
        }
    }
}

/// How long a stop lets the group end before the one `/proc` scan for marked processes outside it. A scan reads
/// every process's environment (about 3 ms for 120 processes on a small VM), so the common stop — the group ends
/// at once — costs exactly one scan, which then also confirms that nothing escaped.
const ESCAPE_SCAN_AFTER: Duration = Duration::from_millis(50);

/// SIGTERM to the group and to every process carrying the job's marker outside it, SIGKILL to both after the
/// grace period, then a confirmation window. A stop while another is in progress (or a retry after an unconfirmed
/// one) sends SIGKILL at once. Confirmed = the job settled and no marked process is alive; otherwise the job is
/// marked `unknownOutcome` with the pids that survived (docs/shell.md "Processes that leave the group").
///
/// A job that already completed on its own has no group left to stop: with `leftovers` (an explicit terminate)
/// the same SIGTERM / SIGKILL / confirmation sequence goes after the marked processes it left running outside its
/// group; without (cancellation, cleanup) they stay for the session shutdown.
async fn stop_job(job: &Arc<Job>, limits: &Limits, leftovers: bool) -> bool {
    let completed_on_own = |st: &JobState| st.settled() && !st.unknown_outcome && st.stop == StopPhase::None;
    // one /proc scan, outside the lock, only when the command already completed on its own
    let found = if leftovers && completed_on_own(&job.state.lock()) {
        job.marked()
    } else {
        Vec::new()
    };
    let (first, sig) = {
        let mut st = job.state.lock();
        if completed_on_own(&st) {
            if found.is_empty() {
                return true;
            }
            st.leftover_stop = Some(found);
        }
        let first = st.stop == StopPhase::None;
        let sig = if first { libc::SIGTERM } else { libc::SIGKILL };
        st.stop = if first { StopPhase::Term } else { StopPhase::Kill };
        if !st.group_gone {
            signal_group(job.pgid, sig);
        }
        (first, sig)
    };
    job.bump();
    let start = tokio::time::Instant::now();
    let settled = job.wait_settled(ESCAPE_SCAN_AFTER.min(limits.stop_grace)).await;
    let marked = job.marked();
    if settled && marked.is_empty() {
        return finish_stop(job, true);
    }
    super::process::signal_marked(&marked, |v| v == job.marker, sig);
    if first && !wait_clean(job, limits.stop_grace.saturating_sub(start.elapsed())).await {
        let group_gone = {
            let mut st = job.state.lock();
            st.stop = StopPhase::Kill;
            st.group_gone
        };
        if !group_gone {
            signal_group(job.pgid, libc::SIGKILL);
        }
        signal_escaped(job, libc::SIGKILL);
    }
    let ok = wait_clean(job, limits.stop_confirm).await;
    finish_stop(job, ok)
}

/// Records a stop's outcome (with the survivors when unconfirmed) and wakes the observers.
fn finish_stop(job: &Job, ok: bool) -> bool {
    let survivors = if ok { Vec::new() } else { job.survivors() };
    {
        let mut st = job.state.lock();
        st.unknown_outcome = !ok;
        st.survivors = survivors;
    }
    job.bump();
    ok
}

/// Signals the job's marked processes (those still in the group were signalled with it; repeating is harmless).
fn signal_escaped(job: &Job, sig: i32) {
    let pids = job.marked();
    if !pids.is_empty() {
        super::process::signal_marked(&pids, |v| v == job.marker, sig);
    }
}

/// Waits up to `dur` for the job to settle and its marked processes to be gone (a `/proc` scan every 50 ms once
/// the group settled).
async fn wait_clean(job: &Job, dur: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + dur;
    if !job.wait_settled(dur).await {
        return false;
    }
    loop {
        if job.marked().is_empty() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
