//! What the model reads from Bash and the Task tools (docs/host.md "Bash"): the outcome line, then each stream in
//! its own block with its own truncation line and recovery lines, so a cut stderr is never hidden by a long stdout.

use super::run::{BashOutcome, Exit, Killed};
use super::stream::{StreamSnapshot, FOREGROUND_TAIL};
use super::tasks::{TaskStatus, TaskView};
use crate::host::error::{HostCode, TOOL_FAILED, TOOL_TIMEOUT};
use crate::shell::process::signal_name;

/// A rendered result: success, or the code and message of a failure, and the text in either case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// No failure.
    pub ok: bool,
    /// TOOL_FAILED or TOOL_TIMEOUT.
    pub code: Option<HostCode>,
    /// The failure's message (also the text's first line).
    pub message: Option<String>,
    /// The model-facing text.
    pub text: String,
}

/// `exit_code: N`, `signal: SIGKILL` or `exit_code: unknown`.
pub fn exit_line(exit: Option<Exit>) -> String {
    match exit {
        Some(Exit::Code(c)) => format!("exit_code: {c}"),
        Some(Exit::Signal(s)) => format!("signal: {}", signal_name(s)),
        Some(Exit::Unknown) | None => "exit_code: unknown".to_string(),
    }
}

fn push_stream(text: &mut String, name: &str, s: &StreamSnapshot) {
    if s.total_bytes == 0 {
        return;
    }
    // a background task keeps 256 KiB per stream; the model reads at most the foreground's 50 KiB of it per call
    let from = crate::output::tail_start(&s.text, FOREGROUND_TAIL);
    let shown = &s.text[from..];
    text.push_str(&format!("[{name}]\n"));
    text.push_str(shown);
    if !shown.ends_with('\n') {
        text.push('\n');
    }
    if s.truncated || from > 0 {
        text.push_str(&format!(
            "[{name} truncated: showing the last {} of {} bytes]\n",
            shown.len(),
            s.total_bytes
        ));
    }
    if let Some(r) = &s.recovery {
        for l in r.render_lines() {
            text.push_str(&l);
            text.push('\n');
        }
    }
}

fn streams(text: &mut String, out: &StreamSnapshot, err: &StreamSnapshot) {
    if out.total_bytes == 0 && err.total_bytes == 0 {
        text.push_str("(no output)\n");
    }
    push_stream(text, "stdout", out);
    push_stream(text, "stderr", err);
}

/// A foreground run: ok on exit 0; TOOL_TIMEOUT naming the budget; TOOL_FAILED otherwise (still with both streams).
pub fn outcome(o: &BashOutcome) -> Rendered {
    let ms = o.timeout.as_millis();
    let (code, message) = match (o.killed, o.exit) {
        (Some(Killed::Timeout), _) => (
            Some(TOOL_TIMEOUT),
            Some(format!(
                "The command ran past its timeout of {ms} ms (timeoutMs {ms}) and was killed with its whole process \
                 tree. Give it a longer budget (timeout up to 21600 seconds), run it with runInBackground: true, or \
                 split it into shorter commands."
            )),
        ),
        (Some(Killed::Aborted), _) => (
            Some(TOOL_FAILED),
            Some("The call was cancelled; the command was killed with its whole process tree.".to_string()),
        ),
        (None, Exit::Code(0)) => (None, None),
        (None, Exit::Code(c)) => (
            Some(TOOL_FAILED),
            Some(format!(
                "The command exited with code {c}. Its stdout and stderr are below: fix the cause they show, then run \
                 it again."
            )),
        ),
        (None, Exit::Signal(s)) => (
            Some(TOOL_FAILED),
            Some(format!(
                "The command was killed by {} (not by the toolkit). Its output so far is below; check what sent the \
                 signal (memory limits, another process) before running it again.",
                signal_name(s)
            )),
        ),
        (None, Exit::Unknown) => (
            Some(TOOL_FAILED),
            Some(
                "The command's exit status could not be read. Its output is below; run it again to see whether it \
                  succeeds."
                    .to_string(),
            ),
        ),
    };
    let mut text = String::new();
    if let (Some(c), Some(m)) = (code, &message) {
        text.push_str(&format!("{c}: {m}\n"));
    }
    text.push_str(&exit_line(Some(o.exit)));
    text.push('\n');
    if o.collected > 0 {
        text.push_str(&format!(
            "The command left {} process{} running in the background (e.g. `setsid … &`, `server &`); {} stopped \
             when the command ended: a foreground command's processes never outlive it. Run a server or a watcher \
             with runInBackground: true instead.\n",
            o.collected,
            if o.collected == 1 { "" } else { "es" },
            if o.collected == 1 { "it was" } else { "they were" }
        ));
    }
    streams(&mut text, &o.stdout, &o.stderr);
    Rendered {
        ok: code.is_none(),
        code,
        message,
        text,
    }
}

fn task_head(t: &TaskView) -> String {
    let mut s = format!(
        "backgroundTaskId {}: {}{}",
        t.id,
        t.status.as_str(),
        if t.stop_requested && t.status == TaskStatus::Running {
            " (stop requested)"
        } else {
            ""
        }
    );
    if t.status != TaskStatus::Running {
        s.push_str(&format!(", {}", exit_line(t.exit)));
    }
    s.push_str(&format!(", {:.1} s", t.duration.as_secs_f64()));
    s
}

/// The start of a background task: its id at once.
pub fn started(t: &TaskView) -> String {
    format!(
        "Started in the background: backgroundTaskId {}. It has no timeout. Check it with TaskWait {{\"backgroundTaskId\": \
         \"{}\"}} (each call waits at most 1 s), list tasks with TaskList, stop it with TaskStop.\n",
        t.id, t.id
    )
}

/// One task with its kept output (TaskWait, TaskStop).
pub fn task(t: &TaskView) -> String {
    let mut text = task_head(t);
    text.push('\n');
    if let Some(pids) = &t.unknown_outcome {
        let list: Vec<String> = pids.iter().map(i32::to_string).collect();
        text.push_str(&format!(
            "unknownOutcome: the task's shell is gone, but processes {} still hold its output. They left its process \
             tree (a new session without the task's marker), so they were not signalled and may still be running. \
             Check them (`ps -o pid,args -p {}`) and stop them yourself if they are this task's.\n",
            list.join(", "),
            list.join(",")
        ));
    } else if t.status == TaskStatus::Running {
        text.push_str(if t.stop_requested {
            "Its process tree was sent SIGTERM (SIGKILL follows); call TaskWait to see its final state.\n"
        } else {
            "Still running; output so far is below. Call TaskWait again to keep waiting, or TaskStop to stop it.\n"
        });
    }
    streams(&mut text, &t.stdout, &t.stderr);
    text
}

/// The most lines [`tail_lines`] gives per stream (`taskList({tailLines})` accepts 0..=this).
pub const TAIL_LINES_MAX: usize = 20;
/// The lines of each stream TaskList carries when the caller does not say (the `/pct jobs` widget shows them).
pub const TAIL_LINES_DEFAULT: usize = 3;
/// The longest a tail line is (bytes, cut on a UTF-8 boundary with `…`): a widget row, not a log.
pub const TAIL_LINE_BYTES: usize = 240;

/// The last `n` (at most [`TAIL_LINES_MAX`]) non-blank lines of `text`, oldest first, each cut to
/// [`TAIL_LINE_BYTES`] and sanitised for a terminal (`display::line`: escapes, colours and carriage returns are
/// shown as visible escapes, never obeyed). A progress line redrawn with `\r` counts as its last state.
pub fn tail_lines(text: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .rev()
        .map(|l| l.rsplit('\r').find(|p| !p.trim().is_empty()).unwrap_or(""))
        .filter(|l| !l.trim().is_empty())
        .take(n.min(TAIL_LINES_MAX))
        .map(|l| {
            let l = l.trim_end();
            let cut = crate::output::cut_utf8(l, TAIL_LINE_BYTES);
            let shown = crate::display::line(&l[..cut]).into_owned();
            if cut < l.len() {
                format!("{shown}…")
            } else {
                shown
            }
        })
        .collect();
    out.reverse();
    out
}

/// The session's tasks, one line each (TaskList).
pub fn list(tasks: &[TaskView]) -> String {
    if tasks.is_empty() {
        return "No background tasks in this session.\n".to_string();
    }
    let mut text = String::new();
    for t in tasks {
        text.push_str(&task_head(t));
        let mut cmd: String = t.description.clone().unwrap_or_else(|| t.command.clone());
        if cmd.len() > 200 {
            cmd.truncate(crate::output::cut_utf8(&cmd, 200));
            cmd.push('…');
        }
        text.push_str(&format!(
            ", stdout {} bytes, stderr {} bytes: {}\n",
            t.stdout.total_bytes,
            t.stderr.total_bytes,
            cmd.replace('\n', " ")
        ));
    }
    text
}
