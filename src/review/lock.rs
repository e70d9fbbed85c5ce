//! One in-flight mutation per session (docs/review.md "Ordering"): Write, Edit, apply_patch (direct and nested) and
//! rollback take the session's permit, before any process-wide slot (the patch lock), so a session waiting for its
//! own earlier mutation never holds a slot another session needs. Reads and searches take nothing. Sessions never
//! block each other here. The permit is a fair (FIFO) tokio mutex, so it can be awaited without parking a thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// A held permit; the session's next mutation starts when it is dropped.
pub type Permit = OwnedMutexGuard<()>;

static LOCKS: Mutex<Option<HashMap<String, Arc<AsyncMutex<()>>>>> = Mutex::new(None);

/// The session's permit lock (created on first use; entries nobody holds or awaits are dropped on the way).
fn lock_of(session_id: &str) -> Arc<AsyncMutex<()>> {
    let mut all = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    let map = all.get_or_insert_with(HashMap::new);
    if map.len() > 64 {
        map.retain(|_, l| Arc::strong_count(l) > 1);
    }
    map.entry(session_id.to_string()).or_default().clone()
}

/// Waits for the session's permit.
pub async fn acquire(session_id: &str) -> Permit {
    lock_of(session_id).lock_owned().await
}

/// Waits for the session's permit unless `abort` is set first (checked every 20 ms while waiting); `None` = aborted.
pub async fn acquire_abortable(session_id: &str, abort: &AtomicBool) -> Option<Permit> {
    let lock = lock_of(session_id);
    tokio::select! {
        p = lock.lock_owned() => Some(p),
        _ = async {
            while !abort.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } => None,
    }
}

/// Blocking form for synchronous callers (never on an async runtime thread).
pub fn acquire_blocking(session_id: &str) -> Permit {
    lock_of(session_id).blocking_lock_owned()
}

/// The permit if it is free right now.
pub fn try_acquire(session_id: &str) -> Option<Permit> {
    lock_of(session_id).try_lock_owned().ok()
}

/// How many callers hold or await the session's permit (tests observe a queued mutation with it).
pub fn users(session_id: &str) -> usize {
    Arc::strong_count(&lock_of(session_id)) - 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_session_serializes_and_two_sessions_do_not_block_each_other() {
        let held = acquire("lock-a").await;
        assert!(
            try_acquire("lock-a").is_none(),
            "a second mutation of the session waits"
        );
        let other = try_acquire("lock-b").expect("another session is not blocked");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t = tokio::spawn(async move {
            let _p = acquire("lock-a").await;
            tx.send("second ran").unwrap();
        });
        // Bounded poll until the waiter is queued on the permit; it must not have run.
        for _ in 0..500 {
            if users("lock-a") == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(users("lock-a"), 2);
        assert!(
            rx.try_recv().is_err(),
            "the second mutation ran while the first held the permit"
        );
        drop(held);
        t.await.unwrap();
        assert_eq!(rx.recv().await, Some("second ran"));
        drop(other);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abort_ends_the_wait_without_the_permit() {
        let _held = acquire("lock-c").await;
        let abort = Arc::new(AtomicBool::new(false));
        let a = abort.clone();
        let t = tokio::spawn(async move { acquire_abortable("lock-c", &a).await.is_some() });
        abort.store(true, Ordering::SeqCst);
        assert!(!t.await.unwrap());
    }
}
