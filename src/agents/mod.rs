//! Task subagents (docs/agents.md): the definitions a session may delegate to, which tools each delegate gets,
//! and the bounds on how many run at once and how much they may answer.
//!
//! Why here and not in the TypeScript glue: a definition comes from files the user (or a cloned repository) wrote,
//! and its tool list decides what a separate Pi process may do. Parsing, the tool rules (none → Read, Glob, Grep;
//! `"*"` → the work tools; `inherit` → the parent's live catalog minus the tools a delegate must never hold), the
//! project-scope downgrade of `permission` and every limit are plain Rust with tests at each rule; the glue only
//! spawns the delegate and relays its dialogs.

pub mod cache;
pub mod definition;
pub mod limits;
pub mod resolve;

#[cfg(test)]
mod tests;

pub use cache::load_cached;
pub use definition::{Definition, ToolSpec};
pub use limits::{cut_answer, SlotError, Slots};
pub use resolve::resolve;
