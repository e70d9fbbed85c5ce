//! Spawning a Bash command, the foreground run, and the tree kill (docs/spec/host-tools.md §Bash, docs/host.md
//! "Bash").
//!
//! A command runs as `<shell> <args> <command>` (Pi's `getShellConfig()`, e.g. `/bin/bash -c`) in its own process
//! group, with stdin from `/dev/null` (no TTY), the PATH of the user's login shell (probed once per process,
//! [`super::login`]), `PI_SCRATCH_DIR`, and the `PCT_JOB` marker that lets a stop find descendants that left the
//! group (docs/shell.md "Processes that leave the group"). The group is registered with the exit watchdog before
//! anything can outlive Node.

use super::live::{LiveSlot, LiveStreams};
use super::stream::{StreamOut, StreamSnapshot};
use super::{lock, timeout, SHELL_NOT_FOUND};
use crate::host::args;
use crate::host::error::{HostError, TOOL_FAILED};
use crate::output::RecoveryStore;
use crate::shell::cancel::{cancelled, Cancel};
use crate::shell::process::{
    become_subreaper, descendants, group_alive, group_exists, grow_pipe, marked_pids, proc_alive, signal_group,
    signal_marked, signal_procs, ProcId,
};
use crate::shell::watchdog;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The shell Pi resolves (`getShellConfig()`: `{shell, args}`, e.g. `/bin/bash ["-c"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSpec {
    /// Executable of the shell.
    pub shell: String,
    /// Arguments before the command.
    pub args: Vec<String>,
}

impl ShellSpec {
    /// `/bin/bash -c` (what Pi resolves on Linux), `/bin/sh -c` where bash is missing.
    pub fn default_posix() -> Self {
        let c = crate::shell::ShellConfig::default_posix();
        Self {
            shell: c.shell,
            args: c.args,
        }
    }

    /// The argument vector: the config's arguments, then the command. Not `-l`: the login shell runs once per
    /// process, as the PATH probe ([`super::login`]), and every command gets the PATH it printed. A login start
    /// sources the user's whole profile — measured 100 ms per start on the development machine (a `pyenv init` in
    /// `.bashrc`) against 1.6 ms for `bash -c` — which would make every `true` cost a tenth of a second.
    pub fn argv(&self, command: &str) -> Vec<String> {
        let mut v = Vec::with_capacity(self.args.len() + 1);
        v.extend(self.args.iter().cloned());
        v.push(command.to_string());
        v
    }
}

/// Bash's arguments, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashArgs {
    /// The command line.
    pub command: String,
    /// The effective timeout (foreground only).
    pub timeout: Duration,
    /// `runInBackground: true`.
    pub background: bool,
    /// The model's short description (shown in listings).
    pub description: Option<String>,
}

/// Longest command line accepted (the kernel's own single-argument limit is 128 KiB).
pub const MAX_COMMAND_BYTES: usize = 128 * 1024;

impl BashArgs {
    /// Parses `{command, timeout?, runInBackground?, description?}`.
    pub fn from_json(v: &Value) -> Result<Self, HostError> {
        let a = args::object("Bash", v)?;
        let command = match a.get("command") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => {
                return Err(HostError::invalid(
                    "Bash: `command` is empty; pass the command line to run.",
                ))
            }
            None | Some(Value::Null) => {
                return Err(HostError::invalid(
                    "Bash needs `command`, the command line to run; call again with it.",
                ))
            }
            Some(_) => {
                return Err(HostError::invalid(
                    "Bash: `command` must be a string; pass the command line as text.",
                ))
            }
        };
        if command.len() > MAX_COMMAND_BYTES {
            return Err(HostError::invalid(format!(
                "Bash: `command` is {} bytes, over the {MAX_COMMAND_BYTES}-byte limit; write the script to a file in \
                 $PI_SCRATCH_DIR with Write and run that file instead.",
                command.len()
            )));
        }
        if command.contains('\0') {
            return Err(HostError::invalid(
                "Bash: `command` contains a NUL character, which no shell can receive; remove it and call again.",
            ));
        }
        Ok(Self {
            command,
            timeout: timeout::parse(a.get("timeout"))?,
            background: args::opt_bool("Bash", a, "runInBackground", false)?,
            description: args::opt_str("Bash", a, "description")?,
        })
    }
}

/// The stop timings (tests shorten them).
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    /// SIGTERM to SIGKILL.
    pub stop_grace: Duration,
    /// After SIGKILL: how long to wait for the pipes to close before giving up on the rest of the output.
    pub drain_after_kill: Duration,
    /// After the shell exited: how long the pipes may stay open **and quiet** before the result is published
    /// anyway (re-armed by every chunk of output). Pi's bash tool waits the same 100 ms (`EXIT_STDIO_GRACE_MS`).
    pub exit_idle: Duration,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            stop_grace: Duration::from_secs(2),
            drain_after_kill: Duration::from_secs(2),
            exit_idle: Duration::from_millis(100),
        }
    }
}

/// Everything a spawn needs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The command line.
    pub command: String,
    /// The working directory (the session's workspace root).
    pub cwd: PathBuf,
    /// Pi's shell.
    pub shell: ShellSpec,
    /// The embedder's env overlay (validated by the caller).
    pub env: Vec<(String, String)>,
    /// The session's scratch directory, exported as `PI_SCRATCH_DIR`.
    pub scratch: PathBuf,
    /// The login shell's PATH, when probed.
    pub login_path: Option<String>,
    /// The `PCT_JOB` marker value of this command.
    pub marker: String,
}

/// A started command: the leader (= group id) and its two pipes.
pub struct Spawned {
    /// The shell process.
    pub child: tokio::process::Child,
    /// Its process group.
    pub pgid: i32,
    /// stdout pipe.
    pub stdout: tokio::process::ChildStdout,
    /// stderr pipe.
    pub stderr: tokio::process::ChildStderr,
}

/// SHELL_NOT_FOUND with install guidance.
fn shell_not_found(shell: &str) -> HostError {
    HostError::new(
        SHELL_NOT_FOUND,
        format!(
            "The shell {shell} does not exist, so nothing ran. Install bash (e.g. `apt-get install bash`, `dnf install \
             bash`, `brew install bash`) or point Pi's shellPath setting at an installed shell, then run the command \
             again."
        ),
    )
}

/// Creates the session's scratch directory so `$PI_SCRATCH_DIR` exists before any command runs, through the same
/// door as Write (src/host/scratch.rs: private folders, never through a link, and this process's live lock on it,
/// so another Pi's start-up sweep never removes a folder only Bash has used); a path that cannot be a directory
/// fails the call before anything starts.
fn ensure_scratch(dir: &std::path::Path) -> Result<(), HostError> {
    crate::host::scratch::create_root(dir)
        .map(|_| ())
        .map_err(|e| scratch_failed(dir, &e.message))
}

fn scratch_failed(dir: &std::path::Path, why: &str) -> HostError {
    HostError::new(
        TOOL_FAILED,
        format!(
            "The session's scratch directory {} ($PI_SCRATCH_DIR) could not be created ({why}), so nothing ran. Make \
             the agent directory writable (or free space on its disk), then run the command again.",
            dir.display()
        ),
    )
}

/// Starts the command. The process group is registered with the exit watchdog as soon as it exists.
pub fn spawn(l: &Launch) -> Result<Spawned, HostError> {
    if l.shell.shell.contains('/') && std::fs::metadata(&l.shell.shell).is_err() {
        return Err(shell_not_found(&l.shell.shell));
    }
    if !l.cwd.is_dir() {
        return Err(HostError::new(
            TOOL_FAILED,
            format!(
                "The workspace directory {} no longer exists, so nothing ran. Restore it or start a new session in an \
                 existing directory.",
                l.cwd.display()
            ),
        ));
    }
    ensure_scratch(&l.scratch)?;
    let mut c = tokio::process::Command::new(&l.shell.shell);
    c.args(l.shell.argv(&l.command))
        .current_dir(&l.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    if let Some(p) = &l.login_path {
        c.env("PATH", p);
    }
    for (k, v) in &l.env {
        c.env(k, v);
    }
    // after the overlay: these two are the toolkit's own
    c.env("PI_SCRATCH_DIR", &l.scratch);
    c.env(watchdog::MARKER_VAR, &l.marker);
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2) through
    // `become_subreaper`, which is async-signal-safe and touches no memory of the parent.
    unsafe {
        c.pre_exec(|| {
            become_subreaper();
            Ok(())
        });
    }
    watchdog::ensure_started();
    let mut child = c.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            shell_not_found(&l.shell.shell)
        } else {
            HostError::new(
                TOOL_FAILED,
                format!(
                    "Could not start {}: {e}. Nothing ran; check the shell and retry.",
                    l.shell.shell
                ),
            )
        }
    })?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    watchdog::add_group(pgid);
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    grow_pipe(&stdout);
    grow_pipe(&stderr);
    Ok(Spawned {
        child,
        pgid,
        stdout,
        stderr,
    })
}

/// Reads one pipe to its end into `s`.
pub async fn drain(mut r: impl AsyncRead + Unpin, s: Arc<Mutex<StreamOut>>) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut failed = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => lock(&s).push_bytes(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    lock(&s).end(failed);
}

/// Kills a command's whole tree: SIGTERM to its group and to every process carrying its marker (also those that
/// left the group), then, after `grace`, SIGKILL to whatever is left — so a grandchild that ignores SIGTERM dies
/// too. Blocking (it polls); run it off the async threads. Returns whether everything is gone.
///
/// The shell is a child subreaper ([`become_subreaper`], set in [`spawn`]), so while it lives every descendant —
/// also one that called `setsid` and cleared `PCT_JOB` — is below it in `/proc`: the tree is collected (pid and
/// start time) before the first signal and grows with every look, so those processes get the same SIGTERM and
/// SIGKILL even after the shell died and they were re-parented away.
pub fn kill_tree(pgid: i32, marker: &str, grace: Duration) -> bool {
    let mine = |v: &str| v == marker;
    // roots: the processes carrying this command's marker (the shell among them while it lives), never a bare
    // pid that may have been reused since
    let mut tree = descendants(&marked_pids(mine));
    let grow = |tree: &mut Vec<ProcId>| {
        let roots: Vec<i32> = tree.iter().filter(|p| proc_alive(**p)).map(|p| p.pid).collect();
        for p in descendants(&roots) {
            if !tree.contains(&p) {
                tree.push(p);
            }
        }
    };
    let alive =
        |tree: &[ProcId]| group_alive(pgid) || !marked_pids(mine).is_empty() || tree.iter().any(|p| proc_alive(*p));
    signal_group(pgid, libc::SIGTERM);
    signal_marked(&marked_pids(mine), mine, libc::SIGTERM);
    signal_procs(&tree, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        grow(&mut tree);
        if !alive(&tree) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..3 {
        grow(&mut tree);
        if group_exists(pgid) {
            signal_group(pgid, libc::SIGKILL);
        }
        signal_marked(&marked_pids(mine), mine, libc::SIGKILL);
        signal_procs(&tree, libc::SIGKILL);
        for _ in 0..50 {
            if !alive(&tree) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    false
}

/// Bytes waiting unread in a pipe (`FIONREAD`; 0 when it cannot be asked).
fn unread(fd: std::os::fd::RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which points at `n`; `fd` is a pipe end the caller keeps open.
    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) } == 0 {
        n.max(0) as usize
    } else {
        0
    }
}

/// How a command's leader ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with a code.
    Code(i32),
    /// Died of a signal.
    Signal(i32),
    /// Its status could not be read (the wait failed or was abandoned).
    Unknown,
}

impl Exit {
    /// From a wait status.
    pub fn from_status(st: std::io::Result<std::process::ExitStatus>) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match st {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(g)) => Exit::Signal(g),
                _ => Exit::Unknown,
            },
            Err(_) => Exit::Unknown,
        }
    }
}

/// Why a foreground command was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Killed {
    /// Its timeout passed.
    Timeout,
    /// The call was cancelled (Pi's AbortSignal).
    Aborted,
}

/// A finished foreground run.
#[derive(Debug, Clone)]
pub struct BashOutcome {
    /// How the shell ended.
    pub exit: Exit,
    /// Why the toolkit killed it, if it did.
    pub killed: Option<Killed>,
    /// stdout as the result shows it.
    pub stdout: StreamSnapshot,
    /// stderr as the result shows it.
    pub stderr: StreamSnapshot,
    /// The effective timeout.
    pub timeout: Duration,
    /// Wall time from spawn to result.
    pub duration: Duration,
    /// Processes the command left running when it ended (started in the background, `setsid … &`), which were
    /// stopped with their trees (docs/host.md "Bash": a foreground command's descendants never outlive it).
    pub collected: usize,
}

/// Runs a command to its end, its timeout or its cancellation. The result is published only after both pipes were
/// drained (or, after a kill, after `drain_after_kill` if something outside the tree still holds them).
pub async fn run_foreground(
    launch: Launch,
    budget: Duration,
    cancel: Option<Cancel>,
    limits: RunLimits,
    store: &RecoveryStore,
    tail: usize,
) -> Result<BashOutcome, HostError> {
    run_foreground_live(launch, budget, cancel, limits, store, tail, None).await
}

/// [`run_foreground`] that also publishes its two streams in `live` while it runs (src/host/bash/live.rs).
pub async fn run_foreground_live(
    launch: Launch,
    budget: Duration,
    cancel: Option<Cancel>,
    limits: RunLimits,
    store: &RecoveryStore,
    tail: usize,
    live: Option<LiveSlot>,
) -> Result<BashOutcome, HostError> {
    let started = Instant::now();
    let sp = spawn(&launch)?;
    let pgid = sp.pgid;
    let out = Arc::new(Mutex::new(StreamOut::new(tail, store)));
    let err = Arc::new(Mutex::new(StreamOut::new(tail, store)));
    if let Some(slot) = &live {
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(LiveStreams {
            out: out.clone(),
            err: err.clone(),
            started,
        });
    }
    let fds = {
        use std::os::fd::AsRawFd;
        [sp.stdout.as_raw_fd(), sp.stderr.as_raw_fd()]
    };
    let d_out = tokio::spawn(drain(sp.stdout, out.clone()));
    let d_err = tokio::spawn(drain(sp.stderr, err.clone()));
    let (a_out, a_err) = (d_out.abort_handle(), d_err.abort_handle());
    let mut child = sp.child;
    // While the shell lives it is a subreaper, so every descendant (also one that called `setsid` and cleared its
    // `PCT_JOB` marker) is below it: look every `SEEN_EVERY` and remember them, so those still alive when the
    // command ends are collected even after the shell's exit re-parented them away.
    let seen: Arc<Mutex<Vec<ProcId>>> = Arc::new(Mutex::new(Vec::new()));
    let watcher = child.id().map(|pid| {
        let seen = seen.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SEEN_EVERY).await;
                let Ok(now) = tokio::task::spawn_blocking(move || descendants(&[pid as i32])).await else {
                    return;
                };
                let mut s = lock(&seen);
                for p in now {
                    if p.pid != pid as i32 && !s.contains(&p) {
                        s.push(p);
                    }
                }
            }
        })
    });
    let exit = Arc::new(Mutex::new(None::<Exit>));
    let finish = {
        let (exit, out, err) = (exit.clone(), out.clone(), err.clone());
        let (a_out, a_err) = (d_out.abort_handle(), d_err.abort_handle());
        let idle = limits.exit_idle;
        async move {
            let st = Exit::from_status(child.wait().await);
            *lock(&exit) = Some(st);
            let drained = async {
                let _ = d_out.await;
                let _ = d_err.await;
            };
            tokio::pin!(drained);
            let total = || lock(&out).total() + lock(&err).total();
            let mut seen = total();
            loop {
                if tokio::time::timeout(idle, &mut drained).await.is_ok() {
                    return;
                }
                let now = total();
                // quiet = nothing decoded since the last look and nothing waiting unread in either pipe (so a
                // drain task that was merely not scheduled cannot lose the last output)
                if now == seen && unread(fds[0]) == 0 && unread(fds[1]) == 0 {
                    // The shell exited and its pipes went quiet: a descendant it started in the background
                    // (`server &`) holds them. Like Pi's bash tool, stop reading and return; the descendant keeps
                    // running (its group stays registered with the exit watchdog).
                    a_out.abort();
                    a_err.abort();
                    lock(&out).end(false);
                    lock(&err).end(false);
                    return;
                }
                seen = now;
            }
        }
    };
    tokio::pin!(finish);
    let killed = tokio::select! {
        _ = &mut finish => None,
        _ = tokio::time::sleep(budget) => Some(Killed::Timeout),
        _ = cancelled(&cancel) => Some(Killed::Aborted),
    };
    if killed.is_some() {
        let marker = launch.marker.clone();
        let grace = limits.stop_grace;
        let _ = tokio::task::spawn_blocking(move || kill_tree(pgid, &marker, grace)).await;
        if tokio::time::timeout(limits.drain_after_kill, &mut finish)
            .await
            .is_err()
        {
            // a process outside the tree (no marker, e.g. it cleared its environment) holds a pipe: stop reading
            a_out.abort();
            a_err.abort();
            lock(&out).end(true);
            lock(&err).end(true);
        }
    }
    if let Some(w) = watcher {
        w.abort();
    }
    // The command ended on its own: whatever it left running (its group, its marker, the descendants seen while it
    // ran) is stopped with its tree, and the result says how many.
    let collected = if killed.is_none() {
        let (marker, grace, seen) = (launch.marker.clone(), limits.stop_grace, lock(&seen).clone());
        tokio::task::spawn_blocking(move || collect_leftovers(pgid, &marker, &seen, grace))
            .await
            .unwrap_or(0)
    } else {
        0
    };
    if !group_exists(pgid) {
        watchdog::remove_group(pgid);
    }
    let exit = lock(&exit).unwrap_or(Exit::Unknown);
    let stdout = lock(&out).snapshot();
    let stderr = lock(&err).snapshot();
    Ok(BashOutcome {
        exit,
        killed,
        stdout,
        stderr,
        timeout: budget,
        duration: started.elapsed(),
        collected,
    })
}

/// How often a running foreground command's descendants are looked at (a process that leaves the tree and clears
/// its marker less than this before the command ends can be missed: docs/host.md "Bash").
const SEEN_EVERY: Duration = Duration::from_millis(200);

/// Stops what a finished foreground command left running — its process group, every process carrying its marker
/// and their descendants, and the `seen` descendants still alive (same pid and start time) — with [`kill_tree`]'s
/// SIGTERM-then-SIGKILL. Returns how many processes were left (0: nothing was signalled). Blocking.
pub fn collect_leftovers(pgid: i32, marker: &str, seen: &[ProcId], grace: Duration) -> usize {
    let mine = |v: &str| v == marker;
    let mut left: Vec<ProcId> = seen.iter().copied().filter(|p| proc_alive(*p)).collect();
    for p in descendants(&marked_pids(mine)) {
        if !left.contains(&p) {
            left.push(p);
        }
    }
    if left.is_empty() && !group_alive(pgid) {
        return 0;
    }
    let n = left.len().max(1);
    signal_procs(&left, libc::SIGTERM);
    kill_tree(pgid, marker, grace);
    // `kill_tree` waited out the grace: what it could not reach by group or marker gets SIGKILL too.
    signal_procs(&left, libc::SIGKILL);
    n
}
