//! One output stream of a Bash command (docs/spec/host-tools.md §Bash): stdout and stderr are never mixed, and each
//! is cut on its own. A stream keeps the **last** `cap` bytes of decoded text (the end of a build log is where the
//! error is; Pi's own bash tool also keeps the tail), counts every byte, and hands everything to a recovery
//! [`Capture`] before anything is cut, so a cut stream's full text is in its own file (docs/shell.md "Output
//! recovery files").

use crate::output::{Capture, RecoverySnapshot, RecoveryStore, Utf8Decoder};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Recovery-file bytes a stream may still write, drawn from every allowance it shares (a background task's own
/// and its session's, docs/host.md "Background tasks"). A draw never overshoots any of them.
#[derive(Debug, Clone, Default)]
pub struct RecoveryBudget {
    left: Vec<Arc<AtomicU64>>,
}

impl RecoveryBudget {
    /// No limit (foreground commands: their timeout bounds them).
    pub fn unlimited() -> Self {
        Self::default()
    }

    /// Draws from all of `allowances`.
    pub fn new(allowances: Vec<Arc<AtomicU64>>) -> Self {
        Self { left: allowances }
    }

    /// Takes up to `want` bytes from every allowance and returns how many were granted.
    fn take(&self, want: u64) -> u64 {
        let mut granted = want;
        for (i, a) in self.left.iter().enumerate() {
            let got = take_from(a, granted);
            if got < granted {
                // give back what the earlier allowances granted beyond this one's answer
                for b in &self.left[..i] {
                    b.fetch_add(granted - got, Ordering::SeqCst);
                }
                granted = got;
            }
        }
        granted
    }

    /// Returns bytes that were drawn but never written (a capture that stayed in memory and was dropped).
    fn refund(&self, n: u64) {
        for a in &self.left {
            a.fetch_add(n, Ordering::SeqCst);
        }
    }
}

fn take_from(a: &AtomicU64, want: u64) -> u64 {
    let mut got = 0;
    let _ = a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
        got = left.min(want);
        Some(left - got)
    });
    got
}

/// Bytes of each stream a foreground result shows (Pi's bash tool shows 50 KiB of combined output).
pub const FOREGROUND_TAIL: usize = 50 * 1024;
/// Bytes of each stream a background task keeps (docs/spec/host-tools.md §Bash).
pub const BACKGROUND_TAIL: usize = 256 * 1024;

/// The last `cap` bytes of a text, trimmed on a character boundary. Appends are amortised O(1): the text is
/// compacted only once the dead prefix outgrows the kept part.
#[derive(Debug)]
pub struct TailText {
    buf: String,
    start: usize,
    cap: usize,
}

impl TailText {
    /// An empty tail keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            buf: String::new(),
            start: 0,
            cap,
        }
    }

    /// Appends text, dropping the oldest bytes beyond the cap (never half a character).
    pub fn push(&mut self, s: &str) {
        if s.len() >= self.cap {
            // only the end of `s` can survive: skip copying the rest
            let from = crate::output::tail_start(s, self.cap);
            self.buf.clear();
            self.buf.push_str(&s[from..]);
            self.start = 0;
            return;
        }
        self.buf.push_str(s);
        if self.buf.len() - self.start > self.cap {
            self.start = crate::output::tail_start(&self.buf, self.cap);
        }
        if self.start > self.cap {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }

    /// The kept text.
    pub fn as_str(&self) -> &str {
        &self.buf[self.start..]
    }
}

/// One stream's state: the kept tail, the total, the decoder carrying a split character, the recovery capture.
#[derive(Debug)]
pub struct StreamOut {
    tail: TailText,
    decoder: Utf8Decoder,
    scratch: String,
    capture: Capture,
    total: u64,
    ended: bool,
    budget: RecoveryBudget,
    /// Bytes drawn from `budget` so far.
    charged: u64,
    /// The budget ran out: the capture only counts from here on.
    capped: bool,
}

/// What a result reports about one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSnapshot {
    /// The kept text (the whole stream when not truncated).
    pub text: String,
    /// Decoded bytes the stream produced in all.
    pub total_bytes: u64,
    /// Whether `text` is only the end of the stream.
    pub truncated: bool,
    /// Where the full text is, once the stream was cut.
    pub recovery: Option<RecoverySnapshot>,
}

impl StreamOut {
    /// A stream keeping its last `cap` bytes, capturing into a file of `store` when it outgrows them.
    pub fn new(cap: usize, store: &RecoveryStore) -> Self {
        Self::with_budget(cap, store, RecoveryBudget::unlimited())
    }

    /// A stream whose recovery file stops growing once `budget` runs out (`cap-reached`); the tail keeps following
    /// the output.
    pub fn with_budget(cap: usize, store: &RecoveryStore, budget: RecoveryBudget) -> Self {
        Self {
            tail: TailText::new(cap),
            decoder: Utf8Decoder::new(),
            scratch: String::new(),
            capture: store.capture(),
            total: 0,
            ended: false,
            budget,
            charged: 0,
            capped: false,
        }
    }

    /// Decodes a chunk as read from the pipe (a character split across reads waits for its other bytes).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        crate::seams::stall("bash.stream");
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        self.decoder.push(bytes, &mut text);
        self.push_text(&text);
        self.scratch = text;
    }

    fn push_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total += text.len() as u64;
        if self.capped {
            self.capture.append(text.as_bytes()); // counted, not written
        } else if self.budget.left.is_empty() {
            self.capture.append(text.as_bytes());
        } else {
            let want = text.len() as u64;
            let granted = self.budget.take(want);
            let cut = crate::output::cut_utf8(text, granted as usize);
            if (cut as u64) < granted {
                self.budget.refund(granted - cut as u64);
            }
            self.charged += cut as u64;
            self.capture.append(&text.as_bytes()[..cut]);
            if cut < text.len() {
                self.capped = true;
                self.capture.require_file();
                self.capture.stop_at_cap();
                self.capture.append(&text.as_bytes()[cut..]);
            }
        }
        self.tail.push(text);
        if self.total > self.tail.cap as u64 {
            self.capture.require_file();
        }
    }

    /// The pipe reached EOF (or failed, `source_failed`): flush a dangling partial character, close the capture.
    pub fn end(&mut self, source_failed: bool) {
        if self.ended {
            return;
        }
        let mut text = String::new();
        self.decoder.finish(&mut text);
        self.push_text(&text);
        if source_failed {
            self.capture.fail_source();
        }
        self.capture.finish();
        if self.total <= self.tail.cap as u64 {
            self.capture.discard_buffer();
            if !self.capture.has_file() {
                // nothing reached a file: the allowance is not spent
                self.budget.refund(std::mem::take(&mut self.charged));
            }
        }
        self.ended = true;
    }

    /// The last `max` bytes of the kept text (cut forward to a character boundary) and the decoded bytes so far:
    /// what a live view of a running call shows (src/host/bash/live.rs).
    pub fn peek(&self, max: usize) -> (String, u64) {
        let s = self.tail.as_str();
        (s[crate::output::tail_start(s, max)..].to_string(), self.total)
    }

    /// Decoded bytes so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The stream as a result shows it now.
    pub fn snapshot(&self) -> StreamSnapshot {
        let text = self.tail.as_str().to_string();
        StreamSnapshot {
            truncated: (text.len() as u64) < self.total,
            text,
            total_bytes: self.total,
            recovery: self.capture.snapshot(),
        }
    }
}
