#![deny(clippy::all)]
//! Node bindings of the pi-codex-toolkit engine. This file only binds: each capability lives in its own folder.

#[macro_use]
extern crate napi_derive;

mod code;

/// The addon's version, so the TypeScript side can refuse a stale binary.
#[napi]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_set() {
        assert!(!super::engine_version().is_empty());
    }
}
