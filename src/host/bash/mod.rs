//! Host Bash and its background tasks (docs/spec/host-tools.md §Bash, docs/host.md "Bash"): one command per call
//! through Pi's shell as a login shell, in its own process group, stdout and stderr kept apart and truncated each on
//! its own (the full text of a cut stream in a recovery file), and `runInBackground` tasks the model lists, waits on
//! and stops.
//!
//! Built on the shell-session machinery rather than beside it: process groups, the `PCT_JOB` marker and the exit
//! watchdog (`crate::shell::watchdog`, so nothing outlives Node), group/marker signalling
//! (`crate::shell::process`), the UTF-8 decoder and the recovery files (`crate::output`). What differs from
//! `exec_command` is the contract, not the plumbing: a bounded timeout instead of a yield, separate streams instead
//! of one shared budget, and tasks that outlive the call.
//!
//! | file | concern |
//! |---|---|
//! | `timeout.rs` | the seconds-or-milliseconds timeout rule |
//! | `login.rs` | the login-shell PATH of `$SHELL`, probed once per process from the first session's start |
//! | `stream.rs` | one output stream: tail buffer, byte counts, recovery capture |
//! | `run.rs` | spawning, the foreground run, tree kill |
//! | `tasks.rs` | the background task table and its two caps |

pub mod live;
pub mod login;
pub mod render;
pub mod run;
pub mod stream;
pub mod tasks;
pub mod timeout;

pub use run::{BashArgs, BashOutcome, RunLimits, ShellSpec};
pub use tasks::{SessionTasks, TaskTable, TaskView};

use crate::host::error::{HostCode, HostError};
use crate::shell::cancel::Cancel;
use std::path::PathBuf;

/// The shell could not be started because it does not exist (docs/spec/host-tools.md §Bash).
pub const SHELL_NOT_FOUND: HostCode = HostCode::ShellNotFound;
/// A cap on concurrent work was reached (background tasks: per session or process-wide).
pub const HOST_OVERLOADED: HostCode = HostCode::HostOverloaded;

/// Where and how one Bash call runs.
#[derive(Debug, Clone, Default)]
pub struct BashContext {
    /// The session's workspace root (the working directory).
    pub workspace: PathBuf,
    /// The session's scratch directory (`PI_SCRATCH_DIR`).
    pub scratch: PathBuf,
    /// Pi's shell; `None` = `/bin/bash -c`.
    pub shell: Option<ShellSpec>,
    /// The embedder's env overlay.
    pub env: Vec<(String, String)>,
    /// The call's cancellation (Pi's AbortSignal); background tasks ignore it.
    pub cancel: Option<Cancel>,
    /// Where a foreground call publishes its streams while it runs (`HostSession.bashPeek`).
    pub live: Option<live::LiveSlot>,
}

/// What a Bash call produced.
#[derive(Debug, Clone)]
pub enum BashReply {
    /// A foreground command ran to its end, its timeout or its cancellation.
    Done(BashOutcome),
    /// A background task started.
    Started(TaskView),
}

/// Locks a mutex of the Bash state, recovering from poisoning: a panic in another call (or a drain task) leaves the
/// streams and task states consistent — every update is a single assignment or append — so later TaskList/TaskWait
/// calls keep working instead of all failing with `internal-panic`.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Locks `m` by `deadline` (poisoning recovered as in [`lock`]); None when another holder keeps it past the
/// deadline. A background task's output is appended under its lock — including the recovery-file write, which a
/// stalled disk can hold for as long as it likes — so TaskList, TaskWait and TaskStop read it through this and
/// answer TOOL_TIMEOUT instead of hanging the turn (docs/host.md "Timeouts").
pub(crate) fn lock_within<T>(
    m: &std::sync::Mutex<T>,
    deadline: std::time::Instant,
) -> Option<std::sync::MutexGuard<'_, T>> {
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() >= deadline => return None,
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

/// A fresh command id with its `PCT_JOB` marker (`<instance>:bash:<id>`, found by the watchdog and the tree kill).
pub fn new_marker(prefix: &str) -> (String, String) {
    let id = format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let marker = format!("{}:bash:{id}", crate::shell::watchdog::instance());
    (id, marker)
}

/// Runs one Bash call for `session`.
pub async fn bash(session: &SessionTasks, args: BashArgs, ctx: BashContext) -> Result<BashReply, HostError> {
    session.check_open()?;
    let shell = ctx.shell.unwrap_or_else(ShellSpec::default_posix);
    let login_path = session.login().for_call().await;
    let (_, marker) = new_marker(if args.background { "bg" } else { "bash" });
    let launch = run::Launch {
        command: args.command,
        cwd: ctx.workspace,
        shell,
        env: ctx.env,
        scratch: ctx.scratch,
        login_path,
        marker,
    };
    if args.background {
        let view = session.table().start(
            session.owner(),
            launch,
            args.description,
            session.store(),
            session.recovery_left(),
        )?;
        return Ok(BashReply::Started(view));
    }
    let limits = session.table().limits();
    let o = run::run_foreground_live(
        launch,
        args.timeout,
        ctx.cancel,
        limits,
        session.store(),
        stream::FOREGROUND_TAIL,
        ctx.live,
    )
    .await?;
    Ok(BashReply::Done(o))
}

#[cfg(test)]
mod tests;
