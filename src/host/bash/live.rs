//! Live output of running foreground Bash calls (docs/host.md "Live output"). Pi's own bash row streams a command's
//! output while it runs; the toolkit's row does the same by polling `HostSession.bashPeek(callId)` (src/pi/tools/
//! host-bash.ts), which reads the end of the two streams the running call is already filling. Polling from the
//! glue instead of a callback into JavaScript keeps the output path free of cross-thread calls: nothing is sent
//! when nobody looks, and a slow UI can never back up a command's pipes.

use super::stream::StreamOut;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The most bytes of each stream one peek returns (the row shows a few lines; expanded, the final result has all).
pub const PEEK_MAX: usize = 16 * 1024;

/// The two streams of a running call, published by the run once its process started.
#[derive(Debug, Clone)]
pub struct LiveStreams {
    /// stdout as the call collects it.
    pub out: Arc<Mutex<StreamOut>>,
    /// stderr as the call collects it.
    pub err: Arc<Mutex<StreamOut>>,
    /// When the process was spawned.
    pub started: Instant,
}

/// A call's slot: empty until its process started.
pub type LiveSlot = Arc<Mutex<Option<LiveStreams>>>;

/// What one peek sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePeek {
    /// The end of stdout so far (at most the asked bytes, cut on a character boundary).
    pub stdout: String,
    /// The end of stderr so far.
    pub stderr: String,
    /// Decoded stdout bytes so far.
    pub stdout_bytes: u64,
    /// Decoded stderr bytes so far.
    pub stderr_bytes: u64,
    /// Milliseconds since the process started.
    pub elapsed_ms: u64,
}

/// The running calls of one session that can be peeked at, by the glue's call id.
#[derive(Debug, Default)]
pub struct LiveCalls {
    map: Mutex<HashMap<String, LiveSlot>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a reader panicked; the streams behind it are still consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl LiveCalls {
    /// Registers a call; the run fills the slot once its process started.
    pub fn begin(&self, id: &str) -> LiveSlot {
        let slot = LiveSlot::default();
        lock(&self.map).insert(id.to_string(), slot.clone());
        slot
    }

    /// Forgets a finished call.
    pub fn end(&self, id: &str) {
        lock(&self.map).remove(id);
    }

    /// The end of a running call's output (`max` bytes of each stream, clamped to 1..=[`PEEK_MAX`]); `None` when no
    /// such call runs or its process has not started yet.
    pub fn peek(&self, id: &str, max: usize) -> Option<LivePeek> {
        let slot = lock(&self.map).get(id)?.clone();
        let s = lock(&slot).clone()?;
        let max = max.clamp(1, PEEK_MAX);
        let (stdout, stdout_bytes) = lock(&s.out).peek(max);
        let (stderr, stderr_bytes) = lock(&s.err).peek(max);
        Some(LivePeek {
            stdout,
            stderr,
            stdout_bytes,
            stderr_bytes,
            elapsed_ms: s.started.elapsed().as_millis() as u64,
        })
    }
}
