//! Background tasks (docs/spec/host-tools.md §Bash): `runInBackground: true` starts the command and returns its
//! `backgroundTaskId` at once; the task has no timeout and is not stopped by a turn abort, only by `TaskStop`, the
//! end of its session, or Node's exit (the watchdog). Each stream keeps its last 256 KiB (the full text goes to a
//! recovery file once a stream outgrows that).
//!
//! Two caps, refused with HOST_OVERLOADED and distinct reasons: at most [`Caps::per_session`] running tasks per
//! session (10) and [`Caps::process`] in the whole Node process (64), since every session of an embedder shares the
//! machine. A task counts as running until its leader exited **and** both pipes were drained; only then is its
//! final state published, so a `TaskWait` that sees `completed` also sees all of its output.
//!
//! Lookups take the table lock only to clone the task's `Arc`; waiting happens on the task's own channel, so a
//! long `TaskWait` never blocks another session's calls. Ids of other sessions answer NOT_FOUND, exactly like
//! unknown ids, so a session cannot probe for another's tasks.
//!
//! One module over 600 lines because the task table, a task's states and a session's view share the lookup and publish
//! rules above.

use super::login::LoginPath;
use super::run::{drain, kill_tree, spawn, Exit, Launch, RunLimits};
use super::stream::{RecoveryBudget, StreamOut, StreamSnapshot, BACKGROUND_TAIL};
use super::{lock, lock_within, HOST_OVERLOADED};
use crate::host::error::{HostError, NOT_FOUND, TOOL_FAILED, TOOL_TIMEOUT};
use crate::output::RecoveryStore;
use crate::shell::cancel::Cancel;
use crate::shell::js::CallRegistry;
use crate::shell::process::{group_cpu_ms, group_exists, pipe_holders, pipe_inode};
use crate::shell::watchdog;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The caps of a task table.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Running tasks per session.
    pub per_session: usize,
    /// Running tasks in the process.
    pub process: usize,
    /// Finished tasks a session keeps for TaskList/TaskWait (the oldest finished one goes first).
    pub keep_finished: usize,
    /// Recovery-file bytes one task may write (both streams together).
    pub task_recovery_bytes: u64,
    /// Recovery-file bytes all background tasks of one session may write together.
    pub session_recovery_bytes: u64,
}

/// [`Caps::task_recovery_bytes`] by default: 256 MiB (a whole build log fits; `yes` does not fill a disk).
pub const TASK_RECOVERY_BYTES: u64 = 256 * 1024 * 1024;
/// [`Caps::session_recovery_bytes`] by default: 1 GiB.
pub const SESSION_RECOVERY_BYTES: u64 = 1024 * 1024 * 1024;

impl Default for Caps {
    fn default() -> Self {
        Self {
            per_session: 10,
            process: 64,
            keep_finished: 32,
            task_recovery_bytes: TASK_RECOVERY_BYTES,
            session_recovery_bytes: SESSION_RECOVERY_BYTES,
        }
    }
}

/// The longest a single TaskWait or TaskStop observation waits.
pub const MAX_OBSERVATION: Duration = Duration::from_secs(1);
/// How long TaskList, TaskWait and TaskStop wait for a task's output lock (held while an append writes the recovery
/// file): past it they answer TOOL_TIMEOUT instead of hanging on a stalled disk (docs/host.md "Timeouts").
pub const LOOK_BUDGET: Duration = Duration::from_secs(2);

/// A task's lifecycle as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    /// Still running (or its output is still being drained).
    Running,
    /// Exited with code 0.
    Completed,
    /// Exited non-zero or died of a signal nobody asked for.
    Failed,
    /// Ended after TaskStop or the session's end.
    Stopped,
}

impl TaskStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Default)]
struct TaskState {
    exit: Option<Exit>,
    finished_after: Option<Duration>,
    stop_requested: bool,
}

/// What differs between a started and an adopted task (see [`TaskTable::new_task`]).
struct NewTask {
    id: String,
    owner: u64,
    command: String,
    description: Option<String>,
    pgid: i32,
    marker: String,
    /// The pipe inodes of stdout and stderr (zeros for an adopted task, whose output the glue collects).
    pipes: [u64; 2],
}

/// One background task.
pub struct Task {
    id: String,
    owner: u64,
    command: String,
    description: Option<String>,
    pgid: i32,
    marker: String,
    started: Instant,
    stdout: Arc<Mutex<StreamOut>>,
    stderr: Arc<Mutex<StreamOut>>,
    state: Mutex<TaskState>,
    done: watch::Sender<bool>,
    /// Inode numbers of the task's stdout and stderr pipes, to name who still holds them after a stop.
    pipes: [u64; 2],
}

/// A task as a result shows it.
#[derive(Debug, Clone)]
pub struct TaskView {
    /// `backgroundTaskId`.
    pub id: String,
    /// The command line.
    pub command: String,
    /// The model's description, if it gave one.
    pub description: Option<String>,
    /// Lifecycle state.
    pub status: TaskStatus,
    /// How the shell ended (finished tasks).
    pub exit: Option<Exit>,
    /// TaskStop (or the session's end) asked it to stop.
    pub stop_requested: bool,
    /// Time since start, or its whole run once finished.
    pub duration: Duration,
    /// The last 256 KiB of stdout.
    pub stdout: StreamSnapshot,
    /// The last 256 KiB of stderr.
    pub stderr: StreamSnapshot,
    /// After a TaskStop that did not end the task: the pids still holding its output pipes. They left the tree
    /// (no marker, not below the shell), so they were not signalled and whether the task is gone is unknown.
    pub unknown_outcome: Option<Vec<i32>>,
    /// The task's process group (None for an adopted task whose group is unknown): the footer sums the CPU time of
    /// its processes when it runs long (docs/render.md "Running work").
    pub process_group: Option<i32>,
    /// TaskList, running tasks on Linux: the CPU time (ms) the processes now in its group have used, from one scan
    /// of `/proc` for every running task (the footer's long-running callout reads it instead of scanning `/proc` in
    /// JavaScript; docs/render.md "Running work"). None elsewhere, for finished tasks, and in TaskWait / TaskStop.
    pub cpu_ms: Option<f64>,
}

impl Task {
    fn finished(&self) -> bool {
        lock(&self.state).exit.is_some()
    }

    fn view(&self) -> TaskView {
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        self.view_within(far).expect("a year-long deadline")
    }

    /// The task's view, its output read by `deadline` (None when an append holds the output past it).
    fn view_within(&self, deadline: Instant) -> Option<TaskView> {
        let stdout = lock_within(&self.stdout, deadline)?.snapshot();
        let stderr = lock_within(&self.stderr, deadline)?.snapshot();
        let st = lock(&self.state);
        let status = match (st.exit, st.stop_requested) {
            (None, _) => TaskStatus::Running,
            (Some(_), true) => TaskStatus::Stopped,
            (Some(Exit::Code(0)), false) => TaskStatus::Completed,
            (Some(_), false) => TaskStatus::Failed,
        };
        Some(TaskView {
            id: self.id.clone(),
            command: self.command.clone(),
            description: self.description.clone(),
            status,
            exit: st.exit,
            stop_requested: st.stop_requested,
            duration: st.finished_after.unwrap_or_else(|| self.started.elapsed()),
            stdout,
            stderr,
            unknown_outcome: None,
            process_group: (self.pgid > 0).then_some(self.pgid),
            cpu_ms: None,
        })
    }

    /// [`Task::view_within`] [`LOOK_BUDGET`] from now, or TOOL_TIMEOUT for `tool` naming the budget.
    fn view_for(&self, tool: &str) -> Result<TaskView, HostError> {
        self.view_within(Instant::now() + LOOK_BUDGET).ok_or_else(|| {
            HostError::new(
                TOOL_TIMEOUT,
                format!(
                    "{tool} stopped after its {} ms budget: the output of background task {} is still being written \
                     (a slow disk or mount). Retry in a moment, or stop the task with TaskStop.",
                    LOOK_BUDGET.as_millis(),
                    self.id
                ),
            )
        })
    }

    /// Marks the stop and kills the tree on a thread of its own (SIGTERM, SIGKILL after the grace).
    fn request_stop(self: &Arc<Self>, grace: Duration) {
        {
            let mut st = lock(&self.state);
            if st.exit.is_some() || st.stop_requested {
                return;
            }
            st.stop_requested = true;
        }
        let (pgid, marker) = (self.pgid, self.marker.clone());
        std::thread::spawn(move || kill_tree(pgid, &marker, grace));
    }

    async fn wait_done(&self, max: Duration) {
        let mut rx = self.done.subscribe();
        let _ = tokio::time::timeout(max, rx.wait_for(|d| *d)).await;
    }
}

/// Publishes a task's final state when dropped: at the end of its waiter, or while a panic unwinds it.
struct Publish {
    table: Arc<TaskTable>,
    task: Arc<Task>,
    /// The leader's exit once known; `None` at drop = the waiter did not get that far ([`Exit::Unknown`]).
    exit: Option<Exit>,
}

impl Drop for Publish {
    fn drop(&mut self) {
        let t = &self.task;
        if self.exit.is_none() {
            // the waiter ended before the leader's exit was known (a panic, a dropped runtime): the tree is killed so
            // nothing the task started outlives a task that already reads as `failed`
            let (pgid, marker) = (t.pgid, t.marker.clone());
            std::thread::spawn(move || kill_tree(pgid, &marker, Duration::ZERO));
        }
        if !group_exists(t.pgid) {
            watchdog::remove_group(t.pgid);
        }
        {
            let mut st = lock(&t.state);
            st.exit = Some(self.exit.unwrap_or(Exit::Unknown));
            st.finished_after = Some(t.started.elapsed());
        }
        self.table.running.fetch_sub(1, Ordering::SeqCst);
        t.done.send_replace(true);
    }
}

/// An adopted task's handle: its end is published when [`Adopted::finish`] runs or the handle is dropped.
pub struct Adopted {
    publish: Publish,
}

impl Adopted {
    /// The task's id (`backgroundTaskId`).
    pub fn id(&self) -> &str {
        &self.publish.task.id
    }

    /// Whether TaskStop (or the end of the session) asked the task to stop.
    pub fn stop_requested(&self) -> bool {
        lock(&self.publish.task.state).stop_requested
    }

    /// Publishes the end: `code` 0 = completed, else failed (stopped when a stop was asked for); `stdout` and
    /// `stderr` become the task's output.
    pub fn finish(mut self, code: i32, stdout: &str, stderr: &str) {
        let t = &self.publish.task;
        for (stream, text) in [(&t.stdout, stdout), (&t.stderr, stderr)] {
            let mut s = lock(stream);
            s.push_bytes(text.as_bytes());
            s.end(false);
        }
        self.publish.exit = Some(Exit::Code(code));
    }
}

/// Every background task of the process, with both caps.
pub struct TaskTable {
    caps: Caps,
    limits: RunLimits,
    tasks: Mutex<HashMap<String, Arc<Task>>>,
    /// Tasks not yet finished, including those of closed sessions still being killed.
    running: AtomicUsize,
}

/// The `backgroundTaskId` argument of TaskWait / TaskStop.
pub fn task_id_arg(tool: &str, v: &serde_json::Value) -> Result<String, HostError> {
    let a = crate::host::args::object(tool, v)?;
    match a.get("backgroundTaskId") {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(HostError::invalid(format!(
            "{tool} needs `backgroundTaskId`, the id a background Bash call returned (TaskList shows them); call again \
             with it."
        ))),
    }
}

fn not_found(id: &str) -> HostError {
    HostError::new(
        NOT_FOUND,
        format!(
            "No background task {id} in this session. Call TaskList for this session's tasks and use one of their \
             backgroundTaskId values."
        ),
    )
}

impl TaskTable {
    /// A table with its own caps (tests); the tools share [`TaskTable::global`].
    pub fn new(caps: Caps, limits: RunLimits) -> Arc<Self> {
        Arc::new(Self {
            caps,
            limits,
            tasks: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
        })
    }

    /// The process-wide table every HostSession uses.
    pub fn global() -> Arc<Self> {
        static T: OnceLock<Arc<TaskTable>> = OnceLock::new();
        T.get_or_init(|| TaskTable::new(Caps::default(), RunLimits::default()))
            .clone()
    }

    /// The stop timings of this table's tasks (also used for foreground commands).
    pub fn limits(&self) -> RunLimits {
        self.limits
    }

    /// Running tasks in the process.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// The task record of a started or adopted process group: its output tails share the task's own recovery
    /// budget and the session's.
    fn new_task(&self, t: NewTask, store: &RecoveryStore, session_recovery: &Arc<AtomicU64>) -> Arc<Task> {
        let budget = RecoveryBudget::new(vec![
            Arc::new(AtomicU64::new(self.caps.task_recovery_bytes)),
            session_recovery.clone(),
        ]);
        Arc::new(Task {
            id: t.id,
            owner: t.owner,
            command: t.command,
            description: t.description,
            pgid: t.pgid,
            marker: t.marker,
            started: Instant::now(),
            stdout: Arc::new(Mutex::new(StreamOut::with_budget(
                BACKGROUND_TAIL,
                store,
                budget.clone(),
            ))),
            stderr: Arc::new(Mutex::new(StreamOut::with_budget(BACKGROUND_TAIL, store, budget))),
            state: Mutex::new(TaskState::default()),
            done: watch::channel(false).0,
            pipes: t.pipes,
        })
    }

    /// HOST_OVERLOADED when `owner` already runs the per-session cap of tasks or the process runs the process-wide
    /// cap; `what` names the thing to start again in the message (`command` for Bash, `Task` for a delegate). Called
    /// under the table lock, so concurrent starts cannot overshoot either cap.
    fn check_caps(&self, tasks: &HashMap<String, Arc<Task>>, owner: u64, what: &str) -> Result<(), HostError> {
        let mine = tasks.values().filter(|t| t.owner == owner && !t.finished()).count();
        if mine >= self.caps.per_session {
            return Err(HostError::new(
                HOST_OVERLOADED,
                format!(
                    "This session already runs {mine} background tasks, the per-session cap of {}. Wait for one with \
                     TaskWait or stop one with TaskStop, then start this {what} again.",
                    self.caps.per_session
                ),
            ));
        }
        let running = self.running();
        if running >= self.caps.process {
            return Err(HostError::new(
                HOST_OVERLOADED,
                format!(
                    "The process-wide cap of {} background tasks across all Pi sessions in this process is reached \
                     ({running} running, {mine} of them this session's). Run the {what} in the foreground (without \
                     runInBackground) or retry after other tasks finish.",
                    self.caps.process
                ),
            ));
        }
        Ok(())
    }

    /// Starts a task for `owner`, or refuses with HOST_OVERLOADED naming which cap was reached. The caps are
    /// checked and the task spawned under the table lock, so concurrent starts cannot overshoot either cap.
    pub fn start(
        self: &Arc<Self>,
        owner: u64,
        launch: Launch,
        description: Option<String>,
        store: &RecoveryStore,
        session_recovery: &Arc<AtomicU64>,
    ) -> Result<TaskView, HostError> {
        let mut tasks = lock(&self.tasks);
        self.check_caps(&tasks, owner, "command")?;
        let id = launch.marker.rsplit(':').next().unwrap_or_default().to_string();
        let sp = spawn(&launch)?;
        self.running.fetch_add(1, Ordering::SeqCst);
        let task = self.new_task(
            NewTask {
                id: id.clone(),
                owner,
                command: launch.command.clone(),
                description,
                pgid: sp.pgid,
                marker: launch.marker.clone(),
                pipes: [pipe_inode(&sp.stdout), pipe_inode(&sp.stderr)],
            },
            store,
            session_recovery,
        );
        let d_out = tokio::spawn(drain(sp.stdout, task.stdout.clone()));
        let d_err = tokio::spawn(drain(sp.stderr, task.stderr.clone()));
        let (table, t) = (self.clone(), task.clone());
        let mut child = sp.child;
        tokio::spawn(async move {
            // published by the guard's drop, so a panic here (or a runtime dropping this future) still ends the
            // task as `failed` with an unknown exit instead of leaving it `running` forever
            let mut publish = Publish {
                table,
                task: t,
                exit: None,
            };
            crate::seams::panic_at("host.taskWaiter");
            let exit = Exit::from_status(child.wait().await);
            // the final state is published only after both pipes are drained (a drain that panicked counts as
            // drained: its join error is ignored)
            let _ = d_out.await;
            let _ = d_err.await;
            publish.exit = Some(exit);
        });
        tasks.insert(id, task.clone());
        self.prune(&mut tasks, owner);
        drop(tasks);
        Ok(task.view())
    }

    /// Takes a process the glue started into `owner`'s tasks (a background Task delegate, docs/agents.md "Background
    /// delegates"): the same caps, ids, TaskList/TaskWait/TaskStop and end-of-session stop as a background Bash
    /// command. `pgid` is the process group it leads (TaskStop kills that tree); the glue reports its end with
    /// [`Adopted::finish`]. Until then, or if the handle is dropped unfinished, it counts as running.
    #[allow(clippy::too_many_arguments)]
    pub fn adopt(
        self: &Arc<Self>,
        owner: u64,
        pgid: i32,
        command: String,
        description: Option<String>,
        store: &RecoveryStore,
        session_recovery: &Arc<AtomicU64>,
    ) -> Result<(TaskView, Adopted), HostError> {
        if pgid <= 1 {
            return Err(HostError::invalid(
                "adopt needs the process group id of a started process",
            ));
        }
        let mut tasks = lock(&self.tasks);
        self.check_caps(&tasks, owner, "Task")?;
        let (id, marker) = super::new_marker("task");
        self.running.fetch_add(1, Ordering::SeqCst);
        let task = self.new_task(
            NewTask {
                id: id.clone(),
                owner,
                command,
                description,
                pgid,
                marker,
                pipes: [0, 0],
            },
            store,
            session_recovery,
        );
        tasks.insert(id, task.clone());
        self.prune(&mut tasks, owner);
        drop(tasks);
        let view = task.view();
        Ok((
            view,
            Adopted {
                publish: Publish {
                    table: self.clone(),
                    task,
                    exit: None,
                },
            },
        ))
    }

    /// Drops `owner`'s oldest finished tasks beyond the keep bound.
    fn prune(&self, tasks: &mut HashMap<String, Arc<Task>>, owner: u64) {
        let mut finished: Vec<(Instant, String)> = tasks
            .values()
            .filter(|t| t.owner == owner && t.finished())
            .map(|t| (t.started, t.id.clone()))
            .collect();
        if finished.len() <= self.caps.keep_finished {
            return;
        }
        finished.sort();
        let extra = finished.len() - self.caps.keep_finished;
        for (_, id) in finished.into_iter().take(extra) {
            tasks.remove(&id);
        }
    }

    fn lookup(&self, owner: u64, id: &str) -> Result<Arc<Task>, HostError> {
        let tasks = lock(&self.tasks);
        match tasks.get(id) {
            Some(t) if t.owner == owner => Ok(t.clone()),
            _ => Err(not_found(id)),
        }
    }

    /// A task's process group (tests).
    #[cfg(test)]
    pub fn pgid_of(&self, id: &str) -> Option<i32> {
        lock(&self.tasks).get(id).map(|t| t.pgid)
    }

    /// `owner`'s running tasks.
    pub fn count_running(&self, owner: u64) -> usize {
        lock(&self.tasks)
            .values()
            .filter(|t| t.owner == owner && !t.finished())
            .count()
    }

    /// `owner`'s tasks, oldest first; TOOL_TIMEOUT when a task's output stays locked past [`LOOK_BUDGET`].
    pub fn list(&self, owner: u64) -> Result<Vec<TaskView>, HostError> {
        let mine: Vec<Arc<Task>> = {
            let mut tasks = lock(&self.tasks);
            self.prune(&mut tasks, owner);
            tasks.values().filter(|t| t.owner == owner).cloned().collect()
        };
        let mut v = Vec::with_capacity(mine.len());
        for t in &mine {
            v.push((t.started, t.view_for("TaskList")?));
        }
        v.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
        let mut out: Vec<TaskView> = v.into_iter().map(|(_, t)| t).collect();
        // One scan of /proc for every running task's group.
        let groups: Vec<i32> = out
            .iter()
            .filter(|t| t.status == TaskStatus::Running)
            .filter_map(|t| t.process_group)
            .collect();
        if !groups.is_empty() {
            let cpu = group_cpu_ms(&groups);
            for t in out.iter_mut().filter(|t| t.status == TaskStatus::Running) {
                t.cpu_ms = t.process_group.and_then(|g| cpu.get(&g).copied());
            }
        }
        Ok(out)
    }

    /// One observation: waits up to `max` (at most [`MAX_OBSERVATION`]) for the task to finish; never kills.
    pub async fn wait(&self, owner: u64, id: &str, max: Duration) -> Result<TaskView, HostError> {
        let task = self.lookup(owner, id)?;
        task.wait_done(max.min(MAX_OBSERVATION)).await;
        task.view_for("TaskWait")
    }

    /// Stops a task's tree and waits up to `max` (at most [`MAX_OBSERVATION`]) for its final state; a task still
    /// dying is returned as a running snapshot with `stop_requested`.
    pub async fn stop(&self, owner: u64, id: &str, max: Duration) -> Result<TaskView, HostError> {
        let task = self.lookup(owner, id)?;
        task.request_stop(self.limits.stop_grace);
        task.wait_done(max.min(MAX_OBSERVATION)).await;
        let mut view = task.view_for("TaskStop")?;
        if view.status == TaskStatus::Running && !group_exists(task.pgid) {
            // the shell's group is gone, yet the output is still open: say who holds it instead of "stopped"
            let pipes = task.pipes;
            let holders = tokio::task::spawn_blocking(move || pipe_holders(&pipes))
                .await
                .unwrap_or_default();
            if !holders.is_empty() {
                view.unknown_outcome = Some(holders);
            }
        }
        Ok(view)
    }

    /// Forgets all of `owner`'s tasks and stops the running ones without waiting. Returns how many were stopped.
    pub fn close_owner(&self, owner: u64) -> usize {
        let gone: Vec<Arc<Task>> = {
            let mut tasks = lock(&self.tasks);
            let ids: Vec<String> = tasks
                .values()
                .filter(|t| t.owner == owner)
                .map(|t| t.id.clone())
                .collect();
            ids.iter().filter_map(|id| tasks.remove(id)).collect()
        };
        let mut stopped = 0;
        for t in gone {
            if !t.finished() {
                t.request_stop(self.limits.stop_grace);
                stopped += 1;
            }
        }
        stopped
    }
}

/// One session's handle on the task table: its owner id, its recovery files, and the close that stops its tasks
/// (also on drop, so a session object collected without an explicit close leaves nothing running).
pub struct SessionTasks {
    owner: u64,
    table: Arc<TaskTable>,
    store: RecoveryStore,
    closed: AtomicBool,
    /// Foreground calls in flight, by the caller's call id, for cancellation from Pi's AbortSignal.
    calls: CallRegistry,
    /// Where commands get the login shell's PATH (the process-wide probe, unless a test gives its own).
    login: Arc<LoginPath>,
    /// Recovery-file bytes this session's background tasks may still write ([`Caps::session_recovery_bytes`]).
    recovery_left: Arc<AtomicU64>,
    /// Output of the foreground calls in flight, for the call renderer's live view.
    live: super::live::LiveCalls,
}

impl SessionTasks {
    /// A new session on `table`, with recovery files in `store`.
    pub fn new(table: Arc<TaskTable>, store: RecoveryStore) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            owner: NEXT.fetch_add(1, Ordering::Relaxed),
            store,
            closed: AtomicBool::new(false),
            calls: CallRegistry::default(),
            login: LoginPath::global(),
            recovery_left: Arc::new(AtomicU64::new(table.caps.session_recovery_bytes)),
            table,
            live: Default::default(),
        }
    }

    /// A session on the process-wide table with its own recovery files (`pi-codex-toolkit-bash-<uuid>.log`). The
    /// login-shell PATH probe is started by [`LoginPath::prewarm`] once Bash is wanted (the glue's `prewarmBash`),
    /// so the first Bash call does not wait for a profile and a start with Bash off runs none.
    pub fn for_session() -> Self {
        Self::new(TaskTable::global(), RecoveryStore::new("bash"))
    }

    /// The same session with its own login-PATH probe (tests: a fake shell whose profile sets a PATH).
    pub fn with_login(mut self, login: Arc<LoginPath>) -> Self {
        self.login = login;
        self
    }

    /// The login-shell PATH probe commands use.
    pub fn login(&self) -> &Arc<LoginPath> {
        &self.login
    }

    /// Registers a foreground call under `id`; the token is already tripped when its cancel came first.
    pub fn begin_call(&self, id: &str) -> Cancel {
        self.calls.begin(id)
    }

    /// Registers a foreground call's live view (`peek`); forgotten by [`SessionTasks::end_call`].
    pub fn begin_live(&self, id: &str) -> super::live::LiveSlot {
        self.live.begin(id)
    }

    /// The end of a running foreground call's output (src/host/bash/live.rs).
    pub fn peek(&self, id: &str, max: usize) -> Option<super::live::LivePeek> {
        self.live.peek(id, max)
    }

    /// Forgets a finished call (its cancellation and its live view).
    pub fn end_call(&self, id: &str) {
        self.calls.end(id);
        self.live.end(id);
    }

    /// Cancels a foreground call: its command is killed with its tree.
    pub fn cancel_call(&self, id: &str) {
        self.calls.cancel(id)
    }

    /// This session's running tasks.
    pub fn running(&self) -> usize {
        self.table.count_running(self.owner)
    }

    /// The session's owner id in the table.
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// The shared table.
    pub fn table(&self) -> &Arc<TaskTable> {
        &self.table
    }

    /// Where this session's recovery files go.
    pub fn store(&self) -> &RecoveryStore {
        &self.store
    }

    /// Recovery-file bytes this session's background tasks may still write.
    pub fn recovery_left(&self) -> &Arc<AtomicU64> {
        &self.recovery_left
    }

    /// Takes a process the glue started (a background Task delegate) into this session's tasks
    /// ([`TaskTable::adopt`]).
    pub fn adopt(
        &self,
        pgid: i32,
        command: String,
        description: Option<String>,
    ) -> Result<(TaskView, Adopted), HostError> {
        self.check_open()?;
        self.table
            .adopt(self.owner, pgid, command, description, &self.store, &self.recovery_left)
    }

    /// Refuses work once the session was closed.
    pub fn check_open(&self) -> Result<(), HostError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(HostError::new(
                TOOL_FAILED,
                "This Pi session's host tools were closed (the session ended or was replaced); nothing ran. Run the \
                 command again in the current session.",
            ));
        }
        Ok(())
    }

    /// Ends the session: its running tasks are stopped without waiting, its recovery files deleted. Returns how
    /// many tasks were stopped (0 on a second close).
    pub fn close(&self) -> usize {
        if self.closed.swap(true, Ordering::SeqCst) {
            return 0;
        }
        let stopped = self.table.close_owner(self.owner);
        self.store.close();
        self.store.delete_files();
        stopped
    }
}

impl Drop for SessionTasks {
    fn drop(&mut self) {
        self.close();
    }
}
