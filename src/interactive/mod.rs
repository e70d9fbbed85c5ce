//! The interactive tools: `asktool`, `TodoWrite` and `new_context` (docs/interactive.md).
//!
//! Why in Rust: every bound (how many questions, how long a todo, how many todos), every validation (unique ids, at
//! most one `in_progress`, no arguments for `new_context`) and the state (an ask session's answers, the session's
//! checklist) is decided here, so the TypeScript glue only shows dialogs, paints the widget and stores the snapshot
//! in Pi's session. Plain Rust, no napi types: the bindings are in src/bind/interactive.rs.

pub mod ask;
pub mod error;
pub mod new_context;
pub mod todo;

#[cfg(test)]
mod tests;

pub use error::{Failure, InteractiveCode};

/// The three tool names, in the order `/pct status` lists them.
pub const ASKTOOL: &str = "asktool";
pub const TODO_WRITE: &str = "TodoWrite";
pub const NEW_CONTEXT: &str = "new_context";

/// The interactive tools are plan-safe: they change nothing in the workspace, so Plan (contract) mode lets them
/// through (docs/interactive.md "Modes").
pub const PLAN_SAFE: [&str; 3] = [ASKTOOL, TODO_WRITE, NEW_CONTEXT];

/// Cuts `s` to at most `max` characters (never inside a character); `true` when something was cut.
pub(crate) fn cut_chars(s: &str, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (s[..at].to_string(), true),
        None => (s.to_string(), false),
    }
}
