//! Line statistics of a change (additions, deletions, hunks) and the unified diff `/pct review` shows, both from
//! the `similar` crate (Patience algorithm: fast on source files, and anchored on unique lines like `git diff
//! --patience`). Binary content (a NUL byte or invalid UTF-8) gets no line statistics and no text diff.

use similar::{Algorithm, TextDiff};
use std::time::{Duration, Instant};

/// Context lines around each hunk (as `git diff`).
pub const CONTEXT: usize = 3;
/// A pathological diff stops refining after this long (the counts stay a valid diff, possibly not minimal).
const DEADLINE: Duration = Duration::from_secs(2);

/// What a change did, in lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub additions: u64,
    pub deletions: u64,
    pub hunks: u64,
    pub binary: bool,
}

/// Text, or None for binary content.
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    if memchr::memchr(0, bytes).is_some() {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

fn diff<'a>(a: &'a str, b: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .deadline(Instant::now() + DEADLINE)
        .diff_lines(a, b)
}

/// Line statistics of `before` → `after` (empty for a file that did not exist / no longer exists).
pub fn stats(before: &[u8], after: &[u8]) -> Stats {
    let (Some(a), Some(b)) = (as_text(before), as_text(after)) else {
        return Stats {
            binary: true,
            ..Stats::default()
        };
    };
    let d = diff(a, b);
    let mut s = Stats::default();
    for op in d.ops() {
        match *op {
            similar::DiffOp::Equal { .. } => {}
            similar::DiffOp::Delete { old_len, .. } => s.deletions += old_len as u64,
            similar::DiffOp::Insert { new_len, .. } => s.additions += new_len as u64,
            similar::DiffOp::Replace { old_len, new_len, .. } => {
                s.deletions += old_len as u64;
                s.additions += new_len as u64;
            }
        }
    }
    s.hunks = d.grouped_ops(CONTEXT).len() as u64;
    s
}

/// The unified diff of `before` → `after` with `a/<path>` / `b/<path>` headers (`/dev/null` for a missing side).
pub fn unified(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let (a, b) = (before.unwrap_or_default(), after.unwrap_or_default());
    let (Some(ta), Some(tb)) = (as_text(a), as_text(b)) else {
        return format!("Binary files differ: {path} ({} -> {} bytes)\n", a.len(), b.len());
    };
    let old = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    let d = diff(ta, tb);
    let body = d.unified_diff().context_radius(CONTEXT).header(&old, &new).to_string();
    if body.is_empty() {
        format!("--- {old}\n+++ {new}\n(no line changes)\n")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_hunks_like_git() {
        let before = (1..=40).map(|i| format!("l{i}\n")).collect::<String>();
        let after = before
            .replace("l2\n", "two\n")
            .replace("l30\n", "")
            .replace("l40\n", "l40\nnew\n");
        let s = stats(before.as_bytes(), after.as_bytes());
        assert_eq!((s.additions, s.deletions, s.hunks, s.binary), (2, 2, 3, false));
        assert_eq!(stats(b"", b"a\nb\n").additions, 2);
        assert_eq!(stats(b"a\nb\n", b"").deletions, 2);
        assert!(stats(b"\0bin", b"x").binary);
        assert!(stats(b"ok", &[0xff, 0xfe]).binary);
    }

    #[test]
    fn unified_diff_has_headers_and_dev_null_for_missing_sides() {
        let d = unified("a.txt", Some(b"x\ny\n"), Some(b"x\nz\n"));
        assert_eq!(d, "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n");
        assert!(unified("n.txt", None, Some(b"new\n")).starts_with("--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+new\n"));
        assert!(unified("g.txt", Some(b"old\n"), None).contains("+++ /dev/null\n"));
        assert!(unified("b.bin", Some(b"\0"), Some(b"\0\0")).starts_with("Binary files differ"));
    }
}
