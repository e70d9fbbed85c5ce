//! Panics never reach Node (docs/napi.md "Panics"). Since Rust 1.81 a panic that unwinds out of an `extern "C"`
//! napi callback aborts the whole process, and with it Pi. Every export therefore runs its body inside one of these
//! guards (and carries `#[napi(catch_unwind)]` for napi's own argument conversion), so a panic becomes:
//!
//! - for exports that resolve `{ok, ...}` results: a resolved failure `{ok: false, code: "internal-panic", message}`
//!   (callers already handle `ok: false`);
//! - for exports that return a plain value: a thrown `Error` whose `code` is `"internal-panic"`.
//!
//! The test-only trigger: when the environment variable `PCT_TEST_PANIC` lists an export's guard name
//! (comma-separated, e.g. `shell.status,code.exec`), that guard panics inside its protected region. Nothing a model
//! or a tool argument sends can set it; only the process environment of the Node that loaded the addon can
//! (`__test__/panic.test.mjs` sets it for a child process), and only in a build with test seams (src/seams.rs): the
//! release build ignores it.

use napi::{Env, Status};
use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The stable code of a contained panic (docs/napi.md).
pub const PANIC_CODE: &str = "internal-panic";

/// The stable code of a programmer error at the boundary (malformed JSON text from the glue, unknown action).
pub const INVALID_INPUT: &str = "invalid-input";

/// The message the caller sees for a contained panic: what happened and what to do next.
pub fn panic_message(site: &str, payload: &(dyn Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-text panic payload".to_string());
    format!(
        "internal error in the pi-codex-toolkit engine ({site}: {what}); the call did not complete. Retry once; if it \
         fails again, report it with this message."
    )
}

/// Panics when `PCT_TEST_PANIC` names `site` (see the module docs). Called inside every guard.
pub fn test_trigger(site: &str) {
    crate::seams::panic_at(site);
}

/// Throws `Error { code, message }` into JS and returns the napi error that tells the caller it is pending.
pub fn throw(env: &Env, code: &str, message: &str) -> napi::Error {
    match env.throw_error(message, Some(code)) {
        Ok(()) => napi::Error::new(Status::PendingException, message.to_string()),
        // The env refused to throw (tearing down): napi's own error path reports it.
        Err(_) => napi::Error::new(Status::GenericFailure, format!("{code}: {message}")),
    }
}

/// Runs a sync export body; a panic throws an `internal-panic` Error instead of aborting Node.
pub fn sync<T>(env: &Env, site: &str, f: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    match catch_unwind(AssertUnwindSafe(|| {
        test_trigger(site);
        f()
    })) {
        Ok(r) => r,
        Err(p) => Err(throw(env, PANIC_CODE, &panic_message(site, &*p))),
    }
}

/// Runs a sync export body that answers with a result object; a panic answers `on_panic(message)`.
pub fn sync_or<T>(site: &str, f: impl FnOnce() -> T, on_panic: impl FnOnce(String) -> T) -> T {
    match catch_unwind(AssertUnwindSafe(|| {
        test_trigger(site);
        f()
    })) {
        Ok(v) => v,
        Err(p) => on_panic(panic_message(site, &*p)),
    }
}

/// Awaits an async export body; a panic in any poll resolves `on_panic(message)` instead of unwinding into napi's
/// executor (which would only reject with a generic error).
pub async fn future_or<T, F: Future<Output = T>>(site: &str, fut: F, on_panic: impl FnOnce(String) -> T) -> T {
    let site_owned = site.to_string();
    let guarded = CatchUnwind(Box::pin(async move {
        test_trigger(&site_owned);
        fut.await
    }));
    match guarded.await {
        Ok(v) => v,
        Err(p) => on_panic(panic_message(site, &*p)),
    }
}

/// A future that catches a panic of its inner future's `poll`. Hand-written (a dozen lines) rather than taking
/// the `futures` crate for `FutureExt::catch_unwind` alone; boxing makes it `Unpin` without unsafe projection.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(move || inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(p) => Poll::Ready(Err(p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_future_resolves_the_fallback() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let out = rt.block_on(future_or(
            "t.f",
            async {
                tokio::task::yield_now().await;
                panic!("boom");
            },
            |m| m,
        ));
        assert!(out.contains("t.f: boom"), "{out}");
        assert!(out.contains("Retry once"), "{out}");
    }

    #[test]
    fn a_panicking_body_answers_the_fallback_and_a_calm_one_its_value() {
        assert_eq!(sync_or("t.s", || 7, |_| 0), 7);
        let m = sync_or("t.s", || -> String { panic!("{}", String::from("owned")) }, |m| m);
        assert!(m.contains("t.s: owned"), "{m}");
    }
}
