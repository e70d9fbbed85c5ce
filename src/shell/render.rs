//! The result of one shell call: typed fields, the `details` object and the text the model reads (docs/spec/toolkit.md §5).

use super::job::{Delivery, StdinState};
use crate::output::{RecoverySnapshot, RecoveryState};
use serde_json::{json, Value};

/// `status` of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Still running (output shown while running is not completion).
    Running,
    /// Settled on its own.
    Completed,
    /// Stopped by terminate, cancellation or cleanup (see `unknown_outcome`).
    Terminated,
}

impl Status {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Terminated => "terminated",
        }
    }
}

/// `stdin` facts in a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdinSnapshot {
    /// open | closed | broken.
    pub state: StdinState,
    /// Admitted bytes not yet settled.
    pub pending_bytes: usize,
    /// Admitted input calls not yet settled.
    pub pending_calls: usize,
}

/// One shell call's outcome (exec_command or write_stdin), for direct tools and nested Code Mode calls alike.
#[derive(Debug, Clone)]
pub struct ShellResult {
    /// The session handle.
    pub session_id: String,
    /// running | completed | terminated.
    pub status: Status,
    /// Leader exit code when it exited normally.
    pub exit_code: Option<i32>,
    /// Signal name when the leader was killed by a signal.
    pub signal: Option<String>,
    /// New stdout shown by this read.
    pub stdout: String,
    /// New stderr shown by this read.
    pub stderr: String,
    /// Bytes of new output not shown by this read.
    pub dropped: u64,
    /// The budget this read used.
    pub budget: usize,
    /// A stop could not confirm that the group, the pipes and the marked processes are gone.
    pub unknown_outcome: bool,
    /// With `unknown_outcome`: the pids still alive (`survivorPids`).
    pub survivors: Vec<i32>,
    /// `terminate` came after the command had completed on its own: the pids it found still running outside the
    /// process group (marked) and stopped, or tried to stop (then `unknown_outcome`).
    pub leftovers: Option<Vec<i32>>,
    /// Recovery file snapshot when a file was needed.
    pub recovery: Option<RecoverySnapshot>,
    /// Input delivery of this call, when it sent input or closed stdin.
    pub input_delivery: Option<Delivery>,
    /// Bytes this call sent.
    pub input_bytes: usize,
    /// stdin facts.
    pub stdin: StdinSnapshot,
}

impl ShellResult {
    /// Whether some output was left out of this preview.
    pub fn truncated(&self) -> bool {
        self.dropped > 0
    }

    /// The `details` object (camelCase plus the snake_case `session_id`/`exit_code` twins).
    pub fn details(&self) -> Value {
        let mut d = json!({
            "sessionId": self.session_id,
            "session_id": self.session_id,
            "status": self.status.as_str(),
            "exitCode": self.exit_code,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "truncated": self.truncated(),
            "dropped": self.dropped,
            "stdin": {
                "state": self.stdin.state,
                "pendingBytes": self.stdin.pending_bytes,
                "pendingCalls": self.stdin.pending_calls,
            },
        });
        let o = d.as_object_mut().unwrap();
        if self.unknown_outcome {
            o.insert("unknownOutcome".into(), Value::Bool(true));
            o.insert("survivorPids".into(), json!(self.survivors));
        }
        if let Some(r) = &self.recovery {
            o.insert("recovery".into(), serde_json::to_value(r).unwrap());
        }
        if let Some(del) = self.input_delivery {
            o.insert("inputDelivery".into(), serde_json::to_value(del).unwrap());
        }
        d
    }

    /// The text the model reads.
    pub fn text(&self) -> String {
        let id = &self.session_id;
        let mut lines = vec![format!("session_id {id}: {}", self.status.as_str())];
        let code = match (self.exit_code, &self.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("signal {s}"),
            _ => "unknown".into(),
        };
        lines.push(format!("exit_code: {code}"));
        if self.status == Status::Running {
            lines.push(format!(
                "The command is still running (output so far is not completion). Continue with write_stdin \
                 {{\"session_id\": \"{id}\"}}: empty input polls, \"chars\" sends input, \"closeStdin\": true ends stdin, \
                 \"terminate\": true stops it."
            ));
        }
        if let Some(pids) = &self.leftovers {
            let pids = super::manager::join_pids(pids);
            lines.push(if self.unknown_outcome {
                format!(
                    "The command had already completed on its own (the exit code above is its own); terminate then went \
                     after what it left running outside its process group (pid {pids})."
                )
            } else {
                format!(
                    "The command had already completed on its own (the exit code above is its own); terminate stopped \
                     what it left running outside its process group: pid {pids}."
                )
            });
        }
        if self.unknown_outcome {
            let who = if self.survivors.is_empty() {
                "processes or inherited pipes of this job may still be alive".to_string()
            } else {
                format!(
                    "still alive: pid {} (left the process group, or hold its output pipes)",
                    super::manager::join_pids(&self.survivors)
                )
            };
            lines.push(format!(
                "The stop was not confirmed: {who}. Retry with write_stdin {{\"session_id\": \"{id}\", \"terminate\": \
                 true}} (sends SIGKILL at once), or stop those processes yourself."
            ));
        }
        if let Some(del) = self.input_delivery {
            lines.push(match del {
                Delivery::Written if self.input_bytes == 0 => "input: stdin closed (EOF sent)".to_string(),
                Delivery::Written => format!("input: written ({} bytes; a transport fact, not an acknowledgement)", self.input_bytes),
                Delivery::Unknown => format!(
                    "input: delivery unknown ({} bytes; the pipe broke or the write had not finished) — do not assume it was read",
                    self.input_bytes
                ),
            });
        }
        if self.truncated() {
            lines.push(format!(
                "output truncated: {} bytes of new output not shown (budget {} bytes, stdout first)",
                self.dropped, self.budget
            ));
        }
        if let Some(r) = &self.recovery {
            let mut rl = r.render_lines();
            // the "read the file" hint only when this preview lost output; what a partial or missing file holds
            // is always said
            let whole = matches!(r.state, RecoveryState::Complete | RecoveryState::Capturing);
            if !self.truncated() && whole {
                rl.truncate(1);
            }
            lines.extend(rl);
        }
        if self.stdout.is_empty() && self.stderr.is_empty() {
            lines.push("(no new output)".into());
        }
        let mut text = lines.join("\n");
        if !self.stdout.is_empty() {
            text.push_str("\n[stdout]\n");
            text.push_str(&self.stdout);
        }
        if !self.stderr.is_empty() {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&self.stderr);
        }
        text
    }
}
