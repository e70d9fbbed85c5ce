//! The toolkit's one global config file: schema validation with exact messages, defaults, read with a SHA-256
//! revision and last-known-good semantics left to the caller, and cooperative locked saves (docs/spec/toolkit.md §1;
//! limits, symlinks and leftovers: docs/config.md).

pub mod draft;
pub mod js;
pub mod lock;
pub mod presets;
pub mod schema;
pub mod store;

pub use store::{read, save};

/// File name of the config under `<agentDir>/extensions/`.
pub const FILE_NAME: &str = "pi-codex-toolkit.json";

/// `<agentDir>/extensions/pi-codex-toolkit.json`: one global file, no overrides.
pub fn config_path(agent_dir: &str) -> std::path::PathBuf {
    std::path::Path::new(agent_dir).join("extensions").join(FILE_NAME)
}
