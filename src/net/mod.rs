//! The network features: official route inspection, Web Search (native payload transform and sidecar), Image
//! Generation and the debug metadata lines (docs/net.md, contract docs/spec/network.md).
//!
//! Everything here is plain Rust with no napi types and no I/O except the exclusive image file write: the HTTP call
//! itself is made by the TypeScript glue with `globalThis.fetch` read at call time, so Pi's own fetch wrappers
//! (proxies, test redirects) apply (docs/net.md §Why fetch lives in the glue). The bindings are in src/bind/net.rs.

pub mod debug;
pub mod error;
pub mod image;
pub mod plan;
pub mod route;
pub mod sse;
pub mod websearch;
