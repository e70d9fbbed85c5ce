//! The bounds on delegation (docs/agents.md "Limits"): how many delegates run at once per session and in the whole
//! Node process, and how much of a delegate's final answer reaches the parent.
//!
//! Why counted here: every delegate is a whole Pi process (about 110 MB resident, docs/agents.md "Cost"), so the
//! caps protect the machine, not only the session; the slot is held by a guard so a delegate that ends by any path
//! (answer, error, timeout, abort, stop) gives its slot back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Running delegates per session.
pub const PER_SESSION: usize = 4;
/// Running delegates in the Node process (all sessions of an embedder together).
pub const PER_PROCESS: usize = 8;
/// The final answer is cut to this many bytes (at a character boundary), with a note saying so.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The default per-task timeout in seconds (`subagents.timeoutSeconds`).
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 600;
/// The bounds of `subagents.timeoutSeconds`.
pub const TIMEOUT_SECONDS_RANGE: (u32, u32) = (1, 86_400);

/// Which cap refused a delegate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotError {
    /// The session already runs this many.
    Session(usize),
    /// The process already runs this many.
    Process(usize),
}

impl SlotError {
    /// The stable code.
    pub const CODE: &'static str = "AGENT_LIMIT";

    /// What the model reads.
    pub fn message(&self, caps: (usize, usize)) -> String {
        match self {
            SlotError::Session(n) => format!(
                "This session already runs {n} delegates, the per-session cap of {}. Wait for one with TaskWait or \
                 stop one with TaskStop, then start this Task again.",
                caps.0
            ),
            SlotError::Process(n) => format!(
                "{n} delegates already run in this process, the process-wide cap of {}. Retry after one of them ends.",
                caps.1
            ),
        }
    }
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_session: HashMap<String, usize>,
}

/// The delegate slots of one process.
#[derive(Clone)]
pub struct Slots {
    caps: (usize, usize),
    counts: Arc<Mutex<Counts>>,
}

/// A held slot; dropping it gives it back.
pub struct Slot {
    session: String,
    counts: Arc<Mutex<Counts>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_session.get_mut(&self.session) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.by_session.remove(&self.session);
            }
        }
    }
}

impl Slots {
    /// Slots with their own caps (per session, per process).
    pub fn new(per_session: usize, per_process: usize) -> Self {
        Self {
            caps: (per_session, per_process),
            counts: Arc::default(),
        }
    }

    /// The process-wide slots.
    pub fn global() -> Self {
        static S: std::sync::OnceLock<Slots> = std::sync::OnceLock::new();
        S.get_or_init(|| Slots::new(PER_SESSION, PER_PROCESS)).clone()
    }

    /// The caps (per session, per process).
    pub fn caps(&self) -> (usize, usize) {
        self.caps
    }

    /// Takes a slot for `session`, or says which cap is reached. Checked and taken under one lock.
    pub fn acquire(&self, session: &str) -> Result<Slot, SlotError> {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mine = c.by_session.get(session).copied().unwrap_or(0);
        if mine >= self.caps.0 {
            return Err(SlotError::Session(mine));
        }
        if c.total >= self.caps.1 {
            return Err(SlotError::Process(c.total));
        }
        c.total += 1;
        *c.by_session.entry(session.to_string()).or_default() += 1;
        Ok(Slot {
            session: session.to_string(),
            counts: self.counts.clone(),
        })
    }

    /// Running delegates of `session`.
    #[cfg(test)]
    pub fn running(&self, session: &str) -> usize {
        let c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.by_session.get(session).copied().unwrap_or(0)
    }
}

/// The answer as the parent receives it: at most `max` bytes, cut at a character boundary, with a note naming the
/// full size. Returns the text and whether it was cut.
pub fn cut_answer(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let end = crate::output::cut_utf8(text, max);
    (
        format!(
            "{}\n[… the delegate's answer was cut at {max} of {} bytes; ask it for a shorter answer]",
            &text[..end],
            text.len()
        ),
        true,
    )
}
