//! The `# On-demand tools` catalog: one line per tool the request leaves out but `find_tools` can load
//! (seed 000 §2.1; docs/rules.md "On-demand host tools").
//!
//! Why a catalog: a model cannot ask for a tool it has never heard of. The catalog names each held-back tool with
//! a compact summary of what it does and its parameters, so the model can load it for the next turn, while the
//! request carries no schema for it. It is bounded ([`MAX_ENTRIES`] lines of at most
//! [`crate::discovery::find::SUMMARY_CHARS`] characters) and built from static text, so it costs the same
//! whatever the tools' own descriptions say.

use super::find::summarize;
use crate::rules::decide::Decision;
use crate::rules::names::fallback_description;

/// Most tools the catalog lists (the rest are still found by a `find_tools` query).
pub const MAX_ENTRIES: usize = 16;

/// The heading the catalog starts with (also the system prompt section's subject).
pub const HEADING: &str = "# On-demand tools";

/// The catalog text for a decision: empty when nothing is held back (or nothing could load it).
pub fn catalog(d: &Decision) -> String {
    if !d.loader_available || d.held.is_empty() {
        return String::new();
    }
    let mut out = vec![
        HEADING.to_string(),
        "Not loaded yet. To use one, call find_tools {\"load\": [\"<name>\"]}; it is callable from the next turn on."
            .to_string(),
    ];
    let shown = d.held.iter().take(MAX_ENTRIES);
    for name in shown {
        out.push(format!("- {name}: {}", summarize(fallback_description(name))));
    }
    if d.held.len() > MAX_ENTRIES {
        out.push(format!(
            "- … {} more: find_tools {{\"query\": \"<words>\"}} finds them",
            d.held.len() - MAX_ENTRIES
        ));
    }
    out.join("\n")
}
