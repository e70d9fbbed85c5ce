//! Web Search: the native backend's payload transform ([`native`]) and the sidecar's request building and answer
//! parsing ([`sidecar`]) (docs/net.md §Web Search).

pub mod native;
pub mod sidecar;

use serde_json::{json, Value};

/// The `include` entry that asks the Responses API for the sources of each search.
pub const SOURCES_INCLUDE: &str = "web_search_call.action.sources";

/// `webSearch.mode` and `webSearch.contextSize`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    /// `live` (external web access) or `cached` (`external_web_access: false`).
    pub mode: String,
    /// `low`, `medium` or `high` → `search_context_size`.
    pub context_size: String,
}

impl SearchOptions {
    /// The hosted tool entry both backends send.
    pub fn tool_entry(&self) -> Value {
        json!({
            "type": "web_search",
            "search_context_size": self.context_size,
            "external_web_access": self.mode == "live",
        })
    }
}
