//! Failures of review and rollback: a stable code and a message naming the next step (docs/review.md "Errors").

use std::fmt;

crate::codes::error_codes! {
    /// Every code review and rollback return (docs/review.md "Errors (stable codes)", in the table's order).
    pub enum ReviewCode {
        /// The file is not what the tool left (changed, removed, re-created, no longer a regular file).
        Conflict = "conflict" => "look at the change with /pct review show, undo the later change first, or leave it",
        /// The bytes before were not kept (over 16 MiB, or pruned).
        NotReversible = "not-reversible" => "restore the file from version control",
        /// The change is already rolled back; nothing was touched.
        AlreadyRolledBack = "already-rolled-back" => "nothing to do: the change is already undone",
        /// No change with that number or id.
        NotFound = "not-found" => "run /pct review for the list of changes and their numbers",
        /// A filesystem step of a rollback failed.
        RollbackFailed = "rollback-failed" => "check the file's permissions and retry",
        /// The store could not be read or written.
        StoreFailed = "store-failed" => "check the Pi agent folder's free space and permissions, then retry",
        /// A session id outside the one session-id rule (docs/napi.md "Session ids").
        InvalidSession = "invalid-session" => "pass Pi's own session id",
        /// The change was recorded for another workspace than the session's cwd.
        OtherWorkspace = "other-workspace" => "roll it back from a session started in that workspace",
    }
}

/// A review or rollback failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewError {
    pub code: ReviewCode,
    pub message: String,
}

impl ReviewError {
    pub fn new(code: ReviewCode, message: impl Into<String>) -> Self {
        ReviewError {
            code,
            message: message.into(),
        }
    }

    /// The review store could not be read or written.
    pub fn store(what: &str, e: &std::io::Error) -> Self {
        ReviewError::new(
            ReviewCode::StoreFailed,
            format!(
                "the review store could not be {what} ({}). Check free space and permissions of the Pi agent folder, \
                 then retry.",
                crate::errno::code(e)
            ),
        )
    }
}

impl fmt::Display for ReviewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ReviewError {}

#[cfg(test)]
mod tests {
    use super::ReviewCode;

    /// The docs/review.md table lists [`ReviewCode::ALL`] in order, then apply_patch's own `review-failed`.
    #[test]
    fn the_doc_table_is_all_codes_in_order() {
        let doc = include_str!("../../docs/review.md");
        let all = ReviewCode::ALL.map(ReviewCode::as_str);
        assert_eq!(
            crate::codes::check::doc_table(doc, "### Errors (stable codes)"),
            crate::codes::check::with_extra(all, &["review-failed"])
        );
    }

    /// Every code is returned by some path: each word appears as its variant outside this file.
    #[test]
    fn every_code_is_used() {
        let src = [
            include_str!("store.rs"),
            include_str!("rollback.rs"),
            include_str!("../bind/review.rs"),
        ]
        .concat();
        for c in ReviewCode::ALL {
            assert!(
                src.contains(&format!("ReviewCode::{c:?}")) || c == ReviewCode::StoreFailed,
                "{c} is never returned"
            );
        }
    }

    /// `ReviewFailure.code` in index.d.ts is every code plus `internal-panic`, so the glue's compares are typed.
    #[test]
    fn index_d_ts_union_is_all_codes() {
        let dts = include_str!("../../index.d.ts");
        let all = ReviewCode::ALL.map(ReviewCode::as_str);
        assert_eq!(
            crate::codes::check::dts_union(dts, "ReviewFailure", "code"),
            crate::codes::check::with_extra(all, &["internal-panic"])
        );
    }
}
