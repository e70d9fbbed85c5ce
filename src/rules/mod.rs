//! Execution rules, tool ownership, the active-tool projection, `/pct status` and the diagnostics record
//! (docs/spec/toolkit.md §2–§4).
//!
//! Everything here is a pure function of a [`input::ResolveInput`] snapshot: TypeScript gathers the snapshot
//! from Pi, calls [`resolve`] and applies `active` with `pi.setActiveTools`.

pub mod decide;
pub mod diagnostics;
pub mod editor;
pub mod glob;
pub mod input;
pub mod names;
pub mod ownership;
pub mod plan_mode;
pub mod projection;
pub mod registration;
pub mod status;

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod host_tests;

pub use input::ResolveInput;
pub use projection::resolve;
pub use status::{editor_rows, editor_rules, preview_text, status_text};

/// Parses the JSON text of a snapshot straight into its struct (a clear message when its shape is wrong).
pub fn parse_input_str(text: &str) -> Result<ResolveInput, String> {
    serde_json::from_str(text).map_err(|e| format!("invalid-input: {e}"))
}
