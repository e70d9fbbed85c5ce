//! The stable error codes of code cells (docs/spec/toolkit.md §7) with a message telling the model what to do next.

use serde::Serialize;

/// A refusal or failure of an `exec`/`wait` call or of a nested call. `code` is one of the §7 codes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeError {
    pub code: String,
    pub message: String,
    /// A nested shell call's session, when its reply could not be delivered (the error in the cell carries it as
    /// `sessionId`, so the session stays reachable).
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// That call's recovery file, when one exists (`recoveryPath` on the error in the cell).
    #[serde(rename = "recoveryPath", skip_serializing_if = "Option::is_none")]
    pub recovery_path: Option<String>,
}

impl CodeError {
    /// Builds an error; `code` must be a documented §7 code.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        CodeError {
            code: code.to_string(),
            message: message.into(),
            session_id: None,
            recovery_path: None,
        }
    }
}

impl std::fmt::Display for CodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Every code this module may return (documented in docs/code.md).
#[cfg(test)]
pub const CODES: &[&str] = &[
    "invalid-code",
    "invalid-uses",
    "invalid-limit",
    "invalid-input",
    "cell-limit",
    "stale-cell",
    "closed",
    "unavailable",
    "cell-start-failed",
    "unknown-adapter",
    "adapter-disabled",
    "invalid-arguments",
    "approval-unavailable",
    "approval-denied",
    "policy-denied",
    "aborted",
    "bridge-overload",
    "cleanup-incomplete",
];

#[cfg(test)]
mod tests {
    #[test]
    fn every_code_is_documented() {
        let doc = include_str!("../../docs/code.md");
        for c in super::CODES {
            assert!(doc.contains(c), "{c} missing from docs/code.md");
        }
    }
}
