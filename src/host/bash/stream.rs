//! One output stream of a Bash command (docs/spec/host-tools.md §Bash): stdout and stderr are never mixed, and each
//! is cut on its own. A stream keeps the **last** `cap` bytes of decoded text (the end of a build log is where the
//! error is; Pi's own bash tool also keeps the tail), counts every byte, and hands everything to a recovery
//! [`Capture`] before anything is cut, so a cut stream's full text is in its own file (docs/shell.md "Output
//! recovery files").

use crate::output::{Capture, RecoverySnapshot, RecoveryStore, Utf8Decoder};

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
            let mut from = s.len() - self.cap;
            while !s.is_char_boundary(from) {
                from += 1;
            }
            self.buf.clear();
            self.buf.push_str(&s[from..]);
            self.start = 0;
            return;
        }
        self.buf.push_str(s);
        if self.buf.len() - self.start > self.cap {
            let mut from = self.buf.len() - self.cap;
            while !self.buf.is_char_boundary(from) {
                from += 1;
            }
            self.start = from;
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
        Self {
            tail: TailText::new(cap),
            decoder: Utf8Decoder::new(),
            scratch: String::new(),
            capture: store.capture(),
            total: 0,
            ended: false,
        }
    }

    /// Decodes a chunk as read from the pipe (a character split across reads waits for its other bytes).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
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
        self.capture.append(text.as_bytes());
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
        }
        self.ended = true;
    }

    /// The last `max` bytes of the kept text (cut forward to a character boundary) and the decoded bytes so far:
    /// what a live view of a running call shows (src/host/bash/live.rs).
    pub fn peek(&self, max: usize) -> (String, u64) {
        let s = self.tail.as_str();
        let mut from = s.len().saturating_sub(max);
        while !s.is_char_boundary(from) {
            from += 1;
        }
        (s[from..].to_string(), self.total)
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
