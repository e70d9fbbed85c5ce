//! The host file tools' engine (docs/spec/host-tools.md, docs/host.md): workspace/scratch path containment, content
//! tags and the `[path#TAG]` + `N:text` render, the per-session snapshot store, and Read / Glob / Grep / Write / the
//! line-anchored Edit as plain Rust APIs. No napi types here; the Node surface belongs in src/bind.

pub mod args;
pub mod audit;
pub mod bash;
pub mod edit;
pub mod error;
pub mod fileio;
pub mod glob;
pub mod grep;
pub mod grep_lines;
pub mod paths;
pub mod permission;
pub mod read;
pub mod redact;
pub mod scratch;
pub mod sensitive;
pub mod snapshot;
pub mod tag;
pub mod write;

pub use error::HostError;
