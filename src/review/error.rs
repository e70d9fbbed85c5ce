//! Failures of review and rollback: a stable code and a message naming the next step (docs/review.md "Errors").

use std::fmt;

/// A review or rollback failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewError {
    /// `invalid-session`, `not-found`, `not-reversible`, `already-rolled-back`, `conflict`, `store-failed`,
    /// `rollback-failed`.
    pub code: &'static str,
    pub message: String,
}

impl ReviewError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        ReviewError {
            code,
            message: message.into(),
        }
    }

    /// The review store could not be read or written.
    pub fn store(what: &str, e: &std::io::Error) -> Self {
        ReviewError::new(
            "store-failed",
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

/// Every code review and rollback may return (documented in docs/review.md "Errors").
pub const CODES: &[&str] = &[
    "invalid-session",
    "not-found",
    "not-reversible",
    "already-rolled-back",
    "conflict",
    "store-failed",
    "rollback-failed",
];

#[cfg(test)]
mod tests {
    #[test]
    fn every_code_is_documented_and_used() {
        let doc = include_str!("../../docs/review.md");
        let src = [
            include_str!("store.rs"),
            include_str!("error.rs"),
            include_str!("rollback.rs"),
        ]
        .concat();
        for c in super::CODES {
            assert!(doc.contains(&format!("| `{c}` |")), "{c} missing from docs/review.md");
            assert!(src.matches(&format!("\"{c}\"")).count() >= 2, "{c} is never returned");
        }
        assert!(doc.contains("| `review-failed` (apply_patch) |"));
    }
}
