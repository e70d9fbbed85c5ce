//! Shell Sessions (docs/spec/toolkit.md §5): `exec_command` / `write_stdin` over pipes and POSIX process groups.
//!
//! The [`Manager`] is a plain Rust type shared behind an `Arc` by the direct Pi tools (through the napi class in
//! `lib.rs`) and by Code Mode's nested `tools.exec_command(...)` / `tools.write_stdin(...)` calls:
//!
//! ```ignore
//! let r = manager.exec(&serde_json::json!({"cmd": "ls"}), CallContext { cwd, ..Default::default() }).await?;
//! println!("{}", r.text());           // what the model reads
//! let details = r.details();          // structured details (camelCase + snake_case twins)
//! ```

pub mod cancel;
pub mod error;
pub mod job;
pub mod js;
pub mod live;
pub mod manager;
pub mod process;
pub mod render;
pub mod request;
pub mod watchdog;

pub use cancel::Cancel;
pub use error::{ShellCode, ShellError};
pub use manager::{CallContext, Limits, Manager, ManagerStatus};
pub use process::ShellConfig;
pub use render::{ShellResult, Status};
pub use request::{normalize_exec, normalize_write, ExecRequest, WriteRequest};

#[cfg(test)]
mod tests;
