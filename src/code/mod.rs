//! Code cells (`exec` / `wait`, docs/spec/toolkit.md §7): JavaScript programs run once on their own thread with a fresh
//! engine, calling the shell and patch executors Rust-to-Rust through declared adapters.
//!
//! Module map: `engine` (the only file that knows QuickJS), `input` (arguments and the pragma line),
//! `adapters` (the nested-call seams to shell/patch and to the TypeScript host), `manager` (cells, limits,
//! nested-call bridge; its parts: `cell` state, the engine `sink`, `nested` call tasks, drop `guards`, `observe`),
//! `wiring` (the real shell/patch adapters), `js_bridge` (napi host callbacks), `render` (model-facing text),
//! `limits`, `errors`.

pub mod adapters;
pub mod engine;
pub mod errors;
pub mod input;
pub mod js_bridge;
pub mod limits;
pub mod manager;
pub mod render;
pub mod wiring;
mod wiring_patch;

pub use manager::{CodeManager, OuterCall};
