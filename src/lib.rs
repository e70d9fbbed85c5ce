#![deny(clippy::all)]
//! Node bindings of the pi-codex-toolkit engine. Each capability lives in its own folder as plain Rust; the napi
//! surface is in src/bind/<capability>.rs (docs/napi.md), so this file is only the index.

#[macro_use]
extern crate napi_derive;

mod agentfs;
mod agents;
pub mod bind;
mod code;
mod codes;
mod compaction;
mod computer;
mod config;
mod diffview;
mod digest;
mod discovery;
pub mod display;
mod errno;
pub mod host;
mod interactive;
pub mod net;
pub mod output;
mod patch;
mod plan;
pub mod review;
mod rules;
mod seams;
mod session_id;
pub mod shell;
#[cfg(test)]
mod test_support;
pub mod worktree;
