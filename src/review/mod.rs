//! Review changes and hash-guarded rollback of every toolkit file change (docs/review.md,
//! docs/spec/host-tools.md "Mutation ordering, review and rollback").
//!
//! Write, Edit and apply_patch (direct and nested from code cells) record one [`store::Change`] per touched path
//! right before the mutation commits: the bytes before (a snapshot file, at most [`MAX_SNAPSHOT_BYTES`]) and the
//! SHA-256 after. `/pct review` lists them, shows one as a unified diff and rolls one or all back, only when the
//! file still holds exactly what the tool wrote. One in-flight mutation per session ([`lock`]); the store lives under
//! `<agentDir>/pi-codex-toolkit/review/<sessionId>/`, outside the workspace, and goes with the session ([`prune`]).
//! Plain Rust: the napi surface is src/bind/review.rs.

pub mod diff;
pub mod error;
pub mod hook;
pub mod invalidate;
pub mod lock;
pub mod prune;
pub mod record;
pub mod render;
pub mod retarget;
pub mod rollback;
pub mod store;

pub use error::{ReviewCode, ReviewError};

/// Largest before-snapshot kept per change; a larger file is recorded with `truncated: true, reversible: false`.
pub const MAX_SNAPSHOT_BYTES: u64 = 16 << 20;
/// All sessions' review folders together; over it the oldest sessions are pruned (docs/review.md "Limits").
pub const MAX_TOTAL_BYTES: u64 = 256 << 20;

/// Who records: the session (its store and its mutation lock), the message that made the change and the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub agent_dir: std::path::PathBuf,
    pub session_id: String,
    /// Pi's id of the assistant message (session entry) whose tool call made the change, when known.
    pub message_id: Option<String>,
    /// Pi's session file; `None` for an in-memory session (`--no-session`). Decides when the store is swept.
    pub session_file: Option<String>,
    /// `apply_patch`, `Write` or `Edit`.
    pub tool: String,
    /// The Task delegate that made the change (its agent's name), when one did (docs/review.md "Who").
    pub agent: Option<String>,
}

#[cfg(test)]
mod tests;
