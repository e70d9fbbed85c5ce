//! A cancellation flag a caller can trip from another thread (JS AbortSignal, a Code Mode cell being stopped).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct Inner {
    flag: AtomicBool,
    notify: Notify,
}

/// Cloneable cancellation token: `cancel()` once, observed by `is_cancelled()` and `cancelled().await`.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<Inner>);

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trips the token and wakes every waiter.
    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether the token was tripped.
    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    /// Resolves once the token is tripped.
    pub async fn cancelled(&self) {
        loop {
            let n = self.0.notify.notified();
            if self.is_cancelled() {
                return;
            }
            n.await;
        }
    }
}

/// Waits for an optional token (never resolves for `None`).
pub async fn cancelled(c: &Option<Cancel>) {
    match c {
        Some(c) => c.cancelled().await,
        None => std::future::pending().await,
    }
}
