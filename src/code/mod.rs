//! Code cells (`exec` / `wait`, toolkit.md §7): JavaScript programs run once on their own thread with a fresh
//! engine, calling the shell and patch executors Rust-to-Rust through declared adapters.
//!
//! Module map: `engine` (the only file that knows QuickJS), `pragma` (input normalisation), `adapters` (the
//! nested-call seam to shell/patch), `manager` (cells, limits, nested-call bridge), `render` (model-facing text).

pub mod engine;
