//! Helpers shared by the crate's unit tests. Tests wait on the event or condition they need, never on a guessed
//! delay: [`until`] polls a condition and fails with a message naming what never happened once a generous bound
//! passes (the bound only keeps a broken test from hanging; it is not a timing expectation).

use std::time::{Duration, Instant};

/// How long [`until`] waits before it fails: long enough for a loaded two-core CI machine.
pub const BOUND: Duration = Duration::from_secs(20);

/// Polls `cond` (every few milliseconds) until it holds; panics with `what` when it still does not after [`BOUND`].
pub async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !cond() {
        assert!(Instant::now() < deadline, "never happened within {BOUND:?}: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
