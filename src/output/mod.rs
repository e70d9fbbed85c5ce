//! Output machinery shared by Shell Sessions and Code Mode (docs/spec/toolkit.md §5 output budget, §6 recovery).
//!
//! - [`budget`]: the per-read preview budget (`maxOutputBytes` / `max_output_tokens`), stdout-first splitting and
//!   cutting on UTF-8 code point boundaries.
//! - [`decode`]: an incremental UTF-8 decoder, so a character split across two pipe reads is never mangled.
//! - [`recovery`]: lazily created private recovery files (0600, exclusive, UUID names under the OS temp dir) that
//!   capture output *before* the destructive preview limit, with the `recovery` snapshot reported to the model.

pub mod budget;
pub mod decode;
pub mod recovery;

pub use budget::{cut_utf8, resolve_budget, split_preview, tail_start, Preview};
pub use decode::Utf8Decoder;
pub use recovery::{Capture, RecoveryReason, RecoverySnapshot, RecoveryState, RecoveryStore};
