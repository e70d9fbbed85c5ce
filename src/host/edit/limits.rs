//! Edit's size limits (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"). Each one, when passed,
//! is EDIT_AMPLIFICATION_LIMIT naming the limit and how to split the work; nothing is written.

/// Bytes of the `ops` text per call (256 KiB).
pub const MAX_OPS_BYTES: usize = 256 * 1024;
/// Operations (PUT, CUT, REM, MV headers) per call.
pub const MAX_OPS: usize = 200;
/// Lines the call inserts in total: body rows plus every pasted register's lines.
pub const MAX_EXPANDED_LINES: usize = 100_000;
/// Lines one register may capture.
pub const MAX_CAPTURE_LINES: usize = 4096;
/// Bytes one register may capture (each line's bytes plus its newline).
pub const MAX_CAPTURE_BYTES: usize = 1024 * 1024;
/// Named registers kept per session (least recently used dropped first).
pub const MAX_NAMED_REGISTERS: usize = 16;
/// Unseen lines an EDIT_LINES_UNSEEN failure reveals.
pub const REVEAL_LINES: usize = 40;
/// Characters per revealed line; a longer line is clipped and the reveal is then incomplete.
pub const REVEAL_CHARS: usize = 512;
/// Context lines shown around each changed region of a success, and around anchors of a mismatch.
pub const CONTEXT_LINES: usize = 2;
/// Rows of a success or mismatch render before it is cut short.
pub const MAX_RENDER_ROWS: usize = 120;
