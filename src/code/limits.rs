//! Every documented limit of code cells in one place (docs/spec/toolkit.md §7); each is enforced and tested at its boundary.

/// Nested adapters a cell may declare in `uses`.
pub const ADAPTERS: &[&str] = &["exec_command", "write_stdin", "apply_patch"];

/// Cells running at once (`cell-limit` beyond).
pub const MAX_RUNNING_CELLS: usize = 4;
/// Terminal results kept while unread; the oldest beyond this is released.
pub const MAX_UNREAD_TERMINAL: usize = 16;
/// How long an unread terminal result is kept.
pub const UNREAD_TTL_MS: u64 = 5 * 60 * 1000;
/// Outstanding nested requests per cell (`bridge-overload` beyond).
pub const MAX_OUTSTANDING_NESTED: usize = 16;
/// Bytes of arguments of a cell's outstanding nested requests (`bridge-overload` beyond).
pub const MAX_OUTSTANDING_ARG_BYTES: usize = 256 * 1024;
/// Any single nested argument, reply or error (JSON bytes).
pub const MAX_NESTED_PAYLOAD_BYTES: usize = 256 * 1024;
/// A nested reply's metadata around its output (status, ids, recovery, text lines) has this allowance on top of
/// MAX_NESTED_PAYLOAD_BYTES; stdout/stderr count by their UTF-8 bytes, so any output the read budget allows
/// (at most 262,144 bytes) fits however JSON escapes it.
pub const NESTED_REPLY_META_BYTES: usize = 16 * 1024;
/// Adapter calls executing at once across all cells; apply_patch calls additionally run one at a time.
pub const ADAPTER_SLOTS: usize = 4;
/// Emitted text kept unread per cell; beyond it text is dropped (and counted).
pub const OUTPUT_BUFFER_BYTES: usize = 256 * 1024;
/// The returned value's text.
pub const RESULT_BYTES: usize = 32 * 1024;
/// The error text.
pub const ERROR_BYTES: usize = 4 * 1024;
/// Progress records forwarded per outer exec/wait call.
pub const MAX_PROGRESS_RECORDS: usize = 32;
/// The whole model-facing rendering of one read.
pub const RENDER_BYTES: usize = 331_776;
/// Bytes of nested apply_patch arguments shown in the approval dialog.
pub const APPROVAL_PREVIEW_BYTES: usize = 800;

/// yield_time_ms range and default.
pub const MAX_YIELD_MS: u64 = 60_000;
pub const DEFAULT_YIELD_MS: u64 = 10_000;
// The output budget of one read (bounds, default, token spelling) is `output::budget`, shared with Shell.

/// A cell still running this long after it started is stopped with `cell-timeout` (`codeMode.maxCellSeconds`, the
/// config's bounds and default: src/config/schema.rs `MAX_CELL_SECONDS`; docs/code.md "Limits").
pub fn max_cell_from_seconds(seconds: i64) -> Result<std::time::Duration, crate::code::errors::CodeError> {
    let (lo, _, hi) = crate::config::schema::MAX_CELL_SECONDS;
    if seconds >= lo as i64 && seconds <= hi as i64 {
        Ok(std::time::Duration::from_secs(seconds as u64))
    } else {
        Err(crate::code::errors::CodeError::new(
            crate::code::errors::CellCode::InvalidLimit,
            format!("maxCellSeconds must be a whole number from {lo} to {hi} (codeMode.maxCellSeconds); nothing ran."),
        ))
    }
}

/// The cell time limit when the caller gives none (`codeMode.maxCellSeconds`'s default).
pub const DEFAULT_MAX_CELL: std::time::Duration =
    std::time::Duration::from_secs(crate::config::schema::MAX_CELL_SECONDS.1);

/// How long terminate/close wait for a cell thread to confirm it stopped before reporting an unknown outcome.
pub const STOP_CONFIRM_MS: u64 = 5_000;

/// How long a sealed cell waits for an in-flight nested shell call to abort cooperatively before abandoning it
/// (well inside STOP_CONFIRM_MS, so a prompt abort never makes the stop unconfirmed).
pub const NESTED_ABORT_GRACE_MS: u64 = 2_000;

/// Cuts `s` to at most `max` bytes on a UTF-8 code point boundary (`output::cut_utf8`, as a slice).
pub fn cut_utf8(s: &str, max: usize) -> &str {
    &s[..crate::output::cut_utf8(s, max)]
}

#[cfg(test)]
mod tests {
    #[test]
    fn max_cell_seconds_is_checked_at_its_bounds() {
        use std::time::Duration;
        assert_eq!(super::max_cell_from_seconds(10).unwrap(), Duration::from_secs(10));
        assert_eq!(
            super::max_cell_from_seconds(86_400).unwrap(),
            Duration::from_secs(86_400)
        );
        for bad in [9, 86_401, 0, -1] {
            let e = super::max_cell_from_seconds(bad).unwrap_err();
            assert_eq!(e.code, "invalid-limit");
            assert!(e.message.contains("from 10 to 86400"), "{}", e.message);
        }
        assert_eq!(super::DEFAULT_MAX_CELL, Duration::from_secs(1_800));
    }

    #[test]
    fn cut_on_code_point_boundary() {
        assert_eq!(super::cut_utf8("héllo", 2), "h");
        assert_eq!(super::cut_utf8("héllo", 3), "hé");
        assert_eq!(super::cut_utf8("abc", 10), "abc");
    }
}
