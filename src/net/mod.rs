//! The network features: official route inspection, Web Search (native payload transform and sidecar), Image
//! Generation and the debug metadata lines (docs/net.md, contract docs/spec/network.md).
//!
//! Everything here is plain Rust with no napi types (except `debug::DebugMeta`, which is also the binding's object,
//! and the plan types of src/net/plan.rs and src/net/route.rs, which are also the binding's type-only interfaces)
//! and no I/O except the exclusive image file write: the HTTP call itself is made by the TypeScript glue with
//! `globalThis.fetch` read at call time, so Pi's own fetch wrappers (proxies, test redirects) apply (docs/net.md §Why
//! fetch lives in the glue). The bindings are in src/bind/net.rs.

pub mod debug;
pub mod error;
pub mod image;
pub mod plan;
pub mod route;
pub mod sse;
pub mod websearch;

/// The features whose responses the glue reads (each with its own timeout and body cap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// The Web Search sidecar (JSON or SSE answer).
    Sidecar,
    /// Image Generation (a JSON body with the base64 PNG).
    Image,
    /// Remote Compaction (an SSE stream with one compaction item).
    Compaction,
}

impl Feature {
    /// `sidecar`, `image`, `compaction`.
    pub fn parse(name: &str) -> Option<Feature> {
        match name {
            "sidecar" => Some(Feature::Sidecar),
            "image" => Some(Feature::Image),
            "compaction" => Some(Feature::Compaction),
            _ => None,
        }
    }
}

/// The most response-body bytes the glue reads for `feature` before it stops with `response-too-large`
/// (docs/net.md §Response size): a search answer is a few KiB to a few hundred; an image is at most
/// [`image::MAX_IMAGE_BYTES`] of PNG, base64 in JSON (4/3 of it) plus room for the envelope; a compaction stream
/// carries one checkpoint of at most [`crate::compaction::MAX_CHECKPOINT_BYTES`] plus its events.
pub fn body_cap(feature: Feature) -> usize {
    match feature {
        Feature::Sidecar => 8 * 1024 * 1024,
        Feature::Image => image::MAX_IMAGE_BYTES / 3 * 4 + 4 * 1024 * 1024,
        Feature::Compaction => 16 * 1024 * 1024,
    }
}
