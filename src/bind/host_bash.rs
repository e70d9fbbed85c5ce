//! Bash and background-task bindings on `HostSession` (docs/host.md "Bash", docs/spec/host-tools.md §Bash): a
//! second `#[napi] impl` block of the class in src/bind/host.rs. Logic is in src/host/bash. Every method resolves,
//! never rejects: typed results, or `HostFailure` `{ok: false, code, message}` for bad arguments, SHELL_NOT_FOUND,
//! HOST_OVERLOADED, NOT_FOUND and contained panics. A failed command is a `HostBashFailed`: a `HostFailure` whose
//! `message` is its whole text, with `ran: true`, its code (TOOL_FAILED / TOOL_TIMEOUT) and still both streams.

use super::guard;
use super::host::{failure, panicked, HostFailure, JsHostSession};
use crate::host::bash::render::{self, Rendered};
use crate::host::bash::run::Exit;
use crate::host::bash::stream::StreamSnapshot;
use crate::host::bash::tasks::{task_id_arg, MAX_OBSERVATION};
use crate::host::bash::{self as hbash, BashArgs, BashContext, BashReply, ShellSpec, TaskView};
use crate::host::HostError;
use crate::output::RecoverySnapshot;
use crate::shell::process::signal_name;
use napi::bindgen_prelude::{Either, Either3};
use serde_json::Value;
use std::collections::HashMap;

/// Pi's `getShellConfig()` result (`commandTransport` is not used by Bash: the command is always an argument);
/// `args` defaults to `["-c"]`.
#[napi(object)]
pub struct HostShellConfig {
    pub shell: String,
    pub args: Option<Vec<String>>,
}

/// Options of one Bash call. `callId` pairs with `bashCancel(callId)` (wire it to the tool's AbortSignal);
/// `shell` is Pi's `getShellConfig()` (default `/bin/bash -c`); `env` is an embedder's overlay for this spawn.
#[napi(object)]
pub struct HostBashOptions {
    pub call_id: Option<String>,
    pub shell: Option<HostShellConfig>,
    pub env: Option<HashMap<String, String>>,
}

/// The recovery file of one stream (docs/shell.md "Output recovery files").
#[napi(object)]
pub struct HostRecovery {
    #[napi(ts_type = "'capturing' | 'complete' | 'partial' | 'unavailable'")]
    pub state: String,
    pub path: Option<String>,
    pub bytes: i64,
    pub captured_bytes: i64,
    #[napi(ts_type = "'io-error' | 'source-error' | 'missing' | 'cap-reached' | 'owner-closed'")]
    pub reason: Option<String>,
    pub error: Option<String>,
}

/// Declares napi objects that describe a process (a Bash command or a background task) from one list of the fields
/// they share — how it ended and what each stream holds — so `HostBashOk`, `HostBashFailed` and `HostTask` cannot
/// drift. `*Truncated` says a stream was cut and `*Recovery` where its full text is. Docs are written
/// `#[doc = "…"]`: napi-rs copies a `///` passed through a macro into index.d.ts with its raw-string prefix. A field's
/// type is taken as `Name<Inner>`, not as one `ty`: napi-rs leaves a `None` out of the object only when it sees
/// `Option` itself (an opaque `ty` would become `null`).
macro_rules! process_objects {
    ($($(#[doc = $doc:literal])* $name:ident { $($(#[$fm:meta])* $f:ident: $t:ident $(<$g:ty>)?,)* })*) => {$(
        $(#[doc = $doc])*
        #[napi(object)]
        pub struct $name {
            $($(#[$fm])* pub $f: $t $(<$g>)?,)*
            pub exit_code: Option<i32>,
            pub signal: Option<String>,
            pub stdout_bytes: i64,
            pub stderr_bytes: i64,
            pub stdout_truncated: bool,
            pub stderr_truncated: bool,
            pub stdout_recovery: Option<HostRecovery>,
            pub stderr_recovery: Option<HostRecovery>,
            pub duration_ms: f64,
        }
    )*};
}

/// Declares the Bash result objects: the process fields plus what every Bash result has (its text, the last
/// 50 KiB of each stream, how it was killed and its timeout).
macro_rules! bash_result_objects {
    ($($(#[doc = $doc:literal])* $name:ident { $($(#[$fm:meta])* $f:ident: $t:ident $(<$g:ty>)?,)* })*) => {
        process_objects! {$(
            $(#[doc = $doc])*
            $name {
                $($(#[$fm])* $f: $t $(<$g>)?,)*
                text: String,
                stdout: String,
                stderr: String,
                timed_out: bool,
                aborted: bool,
                timeout_ms: i64,
            }
        )*}
    };
}

bash_result_objects! {
    #[doc = "Bash succeeded: a foreground command that exited 0, or a started background task (`backgroundTaskId`)."]
    HostBashOk {
        #[napi(ts_type = "true")]
        ok: bool,
        background_task_id: Option<String>,
    }
    #[doc = "Bash ran a foreground command that failed (non-zero exit, signal, timeout, cancel): `ran: true` tells it from a"]
    #[doc = "`HostFailure` (nothing ran). It is a `HostFailure` for the host-tool wrapper as it is: `message` is the whole"]
    #[doc = "model-visible text after `CODE: ` (the reason, exit code, both streams), and the streams are still fields."]
    HostBashFailed {
        #[napi(ts_type = "false")]
        ok: bool,
        #[napi(ts_type = "true")]
        ran: bool,
        #[napi(ts_type = "'TOOL_FAILED' | 'TOOL_TIMEOUT'")]
        code: String,
        message: String,
    }
}

process_objects! {
    #[doc = "One background task. `stdout`/`stderr` (the last 256 KiB of each) are omitted in TaskList."]
    HostTask {
        background_task_id: String,
        command: String,
        description: Option<String>,
        #[napi(ts_type = "'running' | 'completed' | 'failed' | 'stopped'")]
        status: String,
        stop_requested: bool,
        stdout: Option<String>,
        stderr: Option<String>,
        #[doc = "TaskStop only: pids still holding the task's output after its tree was killed (not signalled; the outcome"]
        #[doc = "is unknown, docs/host.md \"Tree kill\")."]
        unknown_outcome: Option<Vec<i32>>,
        #[doc = "The task's process group, when known."]
        process_group: Option<i32>,
        #[doc = "The last non-blank lines of stdout, oldest first (TaskList: `tailLines`, default 3; TaskWait/TaskStop: 3),"]
        #[doc = "each cut to 240 bytes and sanitised for a terminal: the `/pct jobs` widget shows them (docs/render.md"]
        #[doc = "\"Running work\")."]
        stdout_tail: Vec<String>,
        #[doc = "The last non-blank lines of stderr, as `stdoutTail`."]
        stderr_tail: Vec<String>,
        #[doc = "TaskList, a running task on Linux: the CPU time (ms) of the processes now in its group (the footer's CPU"]
        #[doc = "figure for a task running long, docs/render.md \"Running work\")."]
        cpu_ms: Option<f64>,
    }
}

/// TaskWait / TaskStop: the task's state (final, or running — with `stopRequested` after TaskStop).
#[napi(object)]
pub struct HostTaskOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub task: HostTask,
}

/// Options of `taskList`.
#[napi(object)]
pub struct HostTaskListOptions {
    /// Lines of each stream's end every task carries (0..20, default 3).
    pub tail_lines: Option<i64>,
}

/// TaskList: this session's tasks, oldest first (running ones and up to 32 finished ones).
#[napi(object)]
pub struct HostTaskListOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    pub tasks: Vec<HostTask>,
}

fn recovery(r: Option<RecoverySnapshot>) -> Option<HostRecovery> {
    let r = r?;
    let word = |v: Value| v.as_str().unwrap_or_default().to_string();
    Some(HostRecovery {
        state: word(serde_json::to_value(r.state).unwrap_or_default()),
        path: r.path,
        bytes: r.bytes as i64,
        captured_bytes: r.captured_bytes as i64,
        reason: r.reason.map(|x| word(serde_json::to_value(x).unwrap_or_default())),
        error: r.error,
    })
}

fn exit_fields(exit: Option<Exit>) -> (Option<i32>, Option<String>) {
    match exit {
        Some(Exit::Code(c)) => (Some(c), None),
        Some(Exit::Signal(s)) => (None, Some(signal_name(s))),
        _ => (None, None),
    }
}

fn task_obj(t: TaskView, with_output: bool, tail: usize) -> HostTask {
    let (exit_code, signal) = exit_fields(t.exit);
    let (stdout_tail, stderr_tail) = (
        render::tail_lines(&t.stdout.text, tail),
        render::tail_lines(&t.stderr.text, tail),
    );
    let StreamSnapshot {
        text: out,
        total_bytes: out_bytes,
        truncated: out_cut,
        recovery: out_rec,
    } = t.stdout;
    let StreamSnapshot {
        text: err,
        total_bytes: err_bytes,
        truncated: err_cut,
        recovery: err_rec,
    } = t.stderr;
    HostTask {
        background_task_id: t.id,
        command: t.command,
        description: t.description,
        status: t.status.as_str().to_string(),
        exit_code,
        signal,
        stop_requested: t.stop_requested,
        duration_ms: t.duration.as_secs_f64() * 1000.0,
        stdout: with_output.then_some(out),
        stderr: with_output.then_some(err),
        stdout_bytes: out_bytes as i64,
        stderr_bytes: err_bytes as i64,
        stdout_truncated: out_cut,
        stderr_truncated: err_cut,
        stdout_recovery: recovery(out_rec),
        stderr_recovery: recovery(err_rec),
        unknown_outcome: t.unknown_outcome,
        process_group: t.process_group,
        stdout_tail,
        stderr_tail,
        cpu_ms: t.cpu_ms,
    }
}

/// What the wrapper shows after `CODE: ` for a failed command: the whole text without its code prefix or final
/// newline.
fn failed_message(code: &str, text: &str) -> String {
    let body = text
        .strip_prefix(code)
        .and_then(|t| t.strip_prefix(": "))
        .unwrap_or(text);
    body.strip_suffix('\n').unwrap_or(body).to_string()
}

fn bash_result(reply: BashReply, timeout_ms: u128) -> Either3<HostBashOk, HostBashFailed, HostFailure> {
    let o = match reply {
        BashReply::Started(t) => {
            return Either3::A(HostBashOk {
                ok: true,
                background_task_id: Some(t.id.clone()),
                text: render::started(&t),
                exit_code: None,
                signal: None,
                stdout: String::new(),
                stderr: String::new(),
                stdout_bytes: 0,
                stderr_bytes: 0,
                stdout_truncated: false,
                stderr_truncated: false,
                stdout_recovery: None,
                stderr_recovery: None,
                timed_out: false,
                aborted: false,
                timeout_ms: 0,
                duration_ms: 0.0,
            })
        }
        BashReply::Done(o) => o,
    };
    let Rendered { code, text, .. } = render::outcome(&o);
    let (exit_code, signal) = exit_fields(Some(o.exit));
    let timed_out = o.killed == Some(hbash::run::Killed::Timeout);
    let aborted = o.killed == Some(hbash::run::Killed::Aborted);
    let (stdout_bytes, stderr_bytes) = (o.stdout.total_bytes as i64, o.stderr.total_bytes as i64);
    let (stdout_truncated, stderr_truncated) = (o.stdout.truncated, o.stderr.truncated);
    let (stdout_recovery, stderr_recovery) = (recovery(o.stdout.recovery), recovery(o.stderr.recovery));
    let (stdout, stderr) = (o.stdout.text, o.stderr.text);
    let (timeout_ms, duration_ms) = (timeout_ms as i64, o.duration.as_secs_f64() * 1000.0);
    match code {
        None => Either3::A(HostBashOk {
            ok: true,
            background_task_id: None,
            text,
            exit_code,
            signal,
            stdout,
            stderr,
            stdout_bytes,
            stderr_bytes,
            stdout_truncated,
            stderr_truncated,
            stdout_recovery,
            stderr_recovery,
            timed_out,
            aborted,
            timeout_ms,
            duration_ms,
        }),
        Some(c) => Either3::B(HostBashFailed {
            ok: false,
            ran: true,
            code: c.as_str().to_string(),
            message: failed_message(c.as_str(), &text),
            text,
            exit_code,
            signal,
            stdout,
            stderr,
            stdout_bytes,
            stderr_bytes,
            stdout_truncated,
            stderr_truncated,
            stdout_recovery,
            stderr_recovery,
            timed_out,
            aborted,
            timeout_ms,
            duration_ms,
        }),
    }
}

/// Validates an embedder's env overlay with the shell sessions' rule (`shell::process::parse_env_overlay`: names
/// without `=` or NUL, values without NUL), sorted so the spawn is deterministic.
fn env_overlay(env: Option<HashMap<String, String>>) -> Result<Vec<(String, String)>, HostError> {
    let object = env.map(|m| Value::Object(m.into_iter().map(|(k, v)| (k, Value::String(v))).collect()));
    let mut out =
        crate::shell::process::parse_env_overlay(object.as_ref()).map_err(|e| HostError::invalid(e.message))?;
    out.sort();
    Ok(out)
}

/// Forgets a call id when the call ends, however it ends.
struct EndCall<'a>(&'a hbash::SessionTasks, String);

impl Drop for EndCall<'_> {
    fn drop(&mut self) {
        self.0.end_call(&self.1);
    }
}

#[napi]
impl JsHostSession {
    /// Bash `{command, timeout?, runInBackground?, description?}` in the workspace root (docs/host.md "Bash").
    #[napi(catch_unwind, ts_return_type = "Promise<HostBashOk | HostBashFailed | HostFailure>")]
    pub async fn bash(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        options: Option<HostBashOptions>,
    ) -> Either3<HostBashOk, HostBashFailed, HostFailure> {
        let s = self.inner.clone();
        let body = async move {
            let a = BashArgs::from_json(&args)?;
            let timeout_ms = a.timeout.as_millis();
            let (call_id, shell, env) = match options {
                Some(o) => (o.call_id, o.shell, o.env),
                None => (None, None, None),
            };
            let env = env_overlay(env)?;
            let shell = shell.map(|c| ShellSpec {
                shell: c.shell,
                args: c.args.unwrap_or_else(|| vec!["-c".to_string()]),
            });
            let cancel = call_id.as_deref().map(|id| s.bash.begin_call(id));
            let live = call_id.as_deref().map(|id| s.bash.begin_live(id));
            let _end = call_id.map(|id| EndCall(&s.bash, id));
            let ctx = BashContext {
                workspace: s.roots.workspace().to_path_buf(),
                scratch: s.roots.scratch().to_path_buf(),
                shell,
                env,
                cancel,
                live,
            };
            let reply = hbash::bash(&s.bash, a, ctx).await?;
            Ok::<_, HostError>(bash_result(reply, timeout_ms))
        };
        guard::future_or(
            "host.bash",
            async { body.await.unwrap_or_else(|e| Either3::C(failure(e))) },
            |m| Either3::C(panicked(m)),
        )
        .await
    }

    /// Cancels the foreground Bash call registered under `callId`: its command is killed with its whole tree.
    /// Background tasks are not affected (only TaskStop or the session's end stops them).
    #[napi(catch_unwind)]
    pub fn bash_cancel(&self, env: &napi::Env, call_id: String) -> napi::Result<()> {
        guard::sync(env, "host.bashCancel", || {
            self.inner.bash.cancel_call(&call_id);
            Ok(())
        })
    }

    /// TaskList `{}`: this session's background tasks. `options.tailLines` (0..20, default 3) is how many of each
    /// stream's last lines every task carries (`stdoutTail`, `stderrTail`); out of range answers INVALID_ARGUMENT.
    #[napi(catch_unwind, ts_return_type = "HostTaskListOk | HostFailure")]
    pub fn task_list(&self, options: Option<HostTaskListOptions>) -> Either<HostTaskListOk, HostFailure> {
        guard::sync_or(
            "host.taskList",
            || {
                let tail = match options.and_then(|o| o.tail_lines) {
                    None => render::TAIL_LINES_DEFAULT,
                    Some(n) if (0..=render::TAIL_LINES_MAX as i64).contains(&n) => n as usize,
                    Some(_) => {
                        return Either::B(failure(HostError::invalid(format!(
                            "taskList tailLines must be a whole number from 0 to {}; call again with one.",
                            render::TAIL_LINES_MAX
                        ))))
                    }
                };
                let b = &self.inner.bash;
                if let Err(e) = b.check_open() {
                    return Either::B(failure(e));
                }
                let tasks = match b.table().list(b.owner()) {
                    Ok(t) => t,
                    Err(e) => return Either::B(failure(e)),
                };
                Either::A(HostTaskListOk {
                    ok: true,
                    text: render::list(&tasks),
                    tasks: tasks.into_iter().map(|t| task_obj(t, false, tail)).collect(),
                })
            },
            |m| Either::B(panicked(m)),
        )
    }

    /// TaskWait `{backgroundTaskId}`: one observation, waiting at most 1 s for the task to finish; never stops it.
    #[napi(catch_unwind, ts_return_type = "Promise<HostTaskOk | HostFailure>")]
    pub async fn task_wait(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
    ) -> Either<HostTaskOk, HostFailure> {
        self.task_call("TaskWait", args, false, MAX_OBSERVATION).await
    }

    /// `{backgroundTaskId}`: the task as it is now, with the last 256 KiB of each stream and where the full text is
    /// (recovery files), without waiting and without stopping it. For `/pct jobs show <id>` (docs/render.md
    /// "Running work"); errors as TaskWait's.
    #[napi(catch_unwind, ts_return_type = "Promise<HostTaskOk | HostFailure>")]
    pub async fn task_output(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
    ) -> Either<HostTaskOk, HostFailure> {
        self.task_call("TaskOutput", args, false, std::time::Duration::ZERO)
            .await
    }

    /// TaskStop `{backgroundTaskId}`: kills the task's whole tree (SIGTERM, SIGKILL after 2 s); returns its final
    /// state, or a running snapshot with `stopRequested` when it has not ended within 1 s.
    #[napi(catch_unwind, ts_return_type = "Promise<HostTaskOk | HostFailure>")]
    pub async fn task_stop(
        &self,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
    ) -> Either<HostTaskOk, HostFailure> {
        self.task_call("TaskStop", args, true, MAX_OBSERVATION).await
    }

    /// Starts the login-PATH probe and the shell watchdog in the background (docs/host.md "Bash"), so the first
    /// Bash call finds both ready. The glue calls it once Bash is admitted (never at a start with Bash off, where
    /// the probe would run the user's whole profile for nothing). Cheap and idempotent: the probe runs once per
    /// process; its answer is remembered in `<agentDir>/pi-codex-toolkit/login-path.json` for the first calls of
    /// later processes with the same profile (docs/host.md "Bash").
    #[napi(catch_unwind)]
    pub fn prewarm_bash(&self, env: &napi::Env) -> napi::Result<()> {
        guard::sync(env, "host.prewarmBash", || {
            // The remembered PATH lives beside the scratch folders: `<agentDir>/pi-codex-toolkit/login-path.json`.
            let file = self
                .inner
                .roots
                .scratch()
                .parent()
                .and_then(|s| s.parent())
                .map(|d| d.join("login-path.json"));
            self.inner.bash.login().prewarm_with(file);
            Ok(())
        })
    }

    /// Ends the session's Bash side (session shutdown or switch): running background tasks are stopped without
    /// waiting, the session's Bash recovery files deleted, and later Bash/Task calls refused. Returns how many
    /// tasks were stopped. Also happens when the HostSession is garbage-collected.
    #[napi(catch_unwind)]
    pub fn close_tasks(&self, env: &napi::Env) -> napi::Result<u32> {
        guard::sync(env, "host.closeTasks", || Ok(self.inner.bash.close() as u32))
    }

    /// The end of a running foreground Bash call's output (`callId` as given to `bash`; `maxBytes` of each stream,
    /// 1..16384, default 4096), or null when no such call runs or its process has not started (docs/host.md "Live
    /// output").
    #[napi(catch_unwind)]
    pub fn bash_peek(
        &self,
        env: &napi::Env,
        call_id: String,
        max_bytes: Option<u32>,
    ) -> napi::Result<Option<HostBashPeek>> {
        guard::sync(env, "host.bashPeek", || {
            Ok(self
                .inner
                .bash
                .peek(&call_id, max_bytes.unwrap_or(4096) as usize)
                .map(|p| HostBashPeek {
                    stdout: p.stdout,
                    stderr: p.stderr,
                    stdout_bytes: p.stdout_bytes as f64,
                    stderr_bytes: p.stderr_bytes as f64,
                    elapsed_ms: p.elapsed_ms as f64,
                }))
        })
    }

    /// Background tasks running in this session and in the whole process (for /pct status).
    #[napi(catch_unwind)]
    pub fn task_counts(&self, env: &napi::Env) -> napi::Result<HostTaskCounts> {
        guard::sync(env, "host.taskCounts", || {
            let b = &self.inner.bash;
            Ok(HostTaskCounts {
                session_running: b.running() as u32,
                process_running: b.table().running() as u32,
            })
        })
    }
}

/// What `bashPeek` sees of a running call: the end of each stream and the bytes so far.
#[napi(object)]
pub struct HostBashPeek {
    pub stdout: String,
    pub stderr: String,
    pub stdout_bytes: f64,
    pub stderr_bytes: f64,
    pub elapsed_ms: f64,
}

/// Running background tasks: this session's (cap 10) and the process's (cap 64).
#[napi(object)]
pub struct HostTaskCounts {
    pub session_running: u32,
    pub process_running: u32,
}

impl JsHostSession {
    async fn task_call(
        &self,
        tool: &'static str,
        args: Value,
        stop: bool,
        max: std::time::Duration,
    ) -> Either<HostTaskOk, HostFailure> {
        let s = self.inner.clone();
        let body = async move {
            let id = task_id_arg(tool, &args)?;
            s.bash.check_open()?;
            let (table, owner) = (s.bash.table().clone(), s.bash.owner());
            let view = if stop {
                table.stop(owner, &id, max).await?
            } else {
                table.wait(owner, &id, max).await?
            };
            Ok::<_, HostError>(HostTaskOk {
                ok: true,
                text: render::task(&view),
                task: task_obj(view, true, render::TAIL_LINES_DEFAULT),
            })
        };
        guard::future_or(
            match tool {
                "TaskStop" => "host.taskStop",
                "TaskOutput" => "host.taskOutput",
                _ => "host.taskWait",
            },
            async { body.await.map(Either::A).unwrap_or_else(|e| Either::B(failure(e))) },
            |m| Either::B(panicked(m)),
        )
        .await
    }
}
