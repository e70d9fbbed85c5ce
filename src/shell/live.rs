//! Live output of a running `exec_command` or `write_stdin` call (docs/shell.md "Live output"). Pi's own bash row
//! streams a command's output while it runs; the toolkit's exec_command row does the same by polling
//! `ShellManager.peek(callId)` from the glue (src/pi/tools/shell.ts), which reads the end of the unread output the
//! running call will return. A peek copies at most a few KiB under the job's lock and consumes nothing: the call
//! still returns everything, nothing is sent when nobody looks, and a slow UI can never back up the job's pipes
//! (the pipe readers never wait for a reader of this slot).

use super::job::{Job, JobState};
use parking_lot::{Mutex, MutexGuard};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The most bytes of each stream one peek returns (the row shows a few lines; the final result has the rest).
pub const PEEK_MAX: usize = 16 * 1024;

/// The job a call is observing, published by the call once it has one.
#[derive(Debug, Clone)]
pub struct LiveJob {
    /// The observed job (weak: a peek never keeps a finished job alive).
    pub job: Weak<Job>,
    /// The job's session id.
    pub session_id: String,
    /// When the call started waiting on the job.
    pub since: Instant,
}

/// A call's slot: empty until the call spawned (exec_command) or found (write_stdin) its job.
pub type LiveSlot = Arc<Mutex<Option<LiveJob>>>;

/// What one peek sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePeek {
    /// The session id of the observed job.
    pub session_id: String,
    /// The end of the unread stdout (at most the asked bytes, cut on a character boundary).
    pub stdout: String,
    /// The end of the unread stderr.
    pub stderr: String,
    /// Unread stdout bytes so far, including those beyond the kept preview.
    pub stdout_bytes: u64,
    /// Unread stderr bytes so far.
    pub stderr_bytes: u64,
    /// Milliseconds since the call started waiting.
    pub elapsed_ms: u64,
    /// Whether the job has settled (the call is about to return).
    pub settled: bool,
}

/// The last `max` bytes of `s`, moved forward to a character boundary.
pub fn tail(s: &str, max: usize) -> &str {
    &s[crate::output::tail_start(s, max)..]
}

/// Publishes the job a call observes (a call without a slot — Code Mode's nested calls — publishes nothing).
pub fn publish(slot: Option<&LiveSlot>, job: &Arc<Job>) {
    if let Some(slot) = slot {
        *slot.lock() = Some(LiveJob {
            job: Arc::downgrade(job),
            session_id: job.id.clone(),
            since: Instant::now(),
        });
    }
}

/// The end of the output a call will return (`max` bytes of each stream, clamped to 1..=[`PEEK_MAX`]); `None`
/// while the call has no job yet or after the job is gone.
pub fn peek(slot: &LiveSlot, max: usize) -> Option<LivePeek> {
    let live = slot.lock().clone()?;
    let job = live.job.upgrade()?;
    let max = max.clamp(1, PEEK_MAX);
    let st: MutexGuard<'_, JobState> = job.state.lock();
    Some(LivePeek {
        session_id: live.session_id,
        stdout: tail(&st.stdout.text, max).to_string(),
        stderr: tail(&st.stderr.text, max).to_string(),
        stdout_bytes: (st.stdout.text.len() + st.stdout.overflow) as u64,
        stderr_bytes: (st.stderr.text.len() + st.stderr.overflow) as u64,
        elapsed_ms: live.since.elapsed().as_millis() as u64,
        settled: st.settled(),
    })
}

#[cfg(test)]
mod tests {
    use super::tail;

    #[test]
    fn tail_cuts_on_a_character_boundary() {
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 10), "ab");
        // "é" is two bytes: a cut inside it moves forward past it.
        assert_eq!(tail("xé", 1), "");
        assert_eq!(tail("xéy", 2), "y");
        assert_eq!(tail("xéy", 3), "éy");
    }
}
