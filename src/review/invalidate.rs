//! The hook a rollback uses to drop what the host tools remember about a path (docs/review.md "Rollback"): a host
//! session subscribes its snapshot store under its session id; a rollback notifies every live subscriber of that
//! session with each path it changed, so an Edit never trusts a tag minted for content that is gone. The same
//! subscribers answer apply_patch's question of how a file looked when the model was shown it (docs/patch.md
//! "Drift").

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

/// Something that forgets what it knows about an absolute path.
pub trait Invalidate: Send + Sync {
    fn invalidate(&self, path: &Path);
    /// The texts of `path` (canonical) as the model was shown them, newest first.
    fn shown(&self, _path: &Path) -> Vec<Arc<str>> {
        Vec::new()
    }
}

type Subscribers = HashMap<String, Vec<Weak<dyn Invalidate>>>;

static SUBSCRIBERS: Mutex<Option<Subscribers>> = Mutex::new(None);

/// Registers `who` for `session_id` (held weakly: a dropped host session unsubscribes itself).
pub fn subscribe(session_id: &str, who: Weak<dyn Invalidate>) {
    let mut all = SUBSCRIBERS.lock().unwrap_or_else(|e| e.into_inner());
    let map = all.get_or_insert_with(HashMap::new);
    let list = map.entry(session_id.to_string()).or_default();
    list.retain(|w| w.strong_count() > 0);
    list.push(who);
}

/// Every live subscriber's copies of `path` (canonical) for `session_id`, newest first within each.
pub fn shown(session_id: &str, path: &Path) -> Vec<Arc<str>> {
    let live: Vec<_> = {
        let mut all = SUBSCRIBERS.lock().unwrap_or_else(|e| e.into_inner());
        let Some(list) = all.as_mut().and_then(|m| m.get_mut(session_id)) else {
            return Vec::new();
        };
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    };
    live.iter().flat_map(|s| s.shown(path)).collect()
}

/// Tells every live subscriber of `session_id` that `path` changed behind its back; returns how many were told.
pub fn notify(session_id: &str, path: &Path) -> usize {
    let live: Vec<_> = {
        let mut all = SUBSCRIBERS.lock().unwrap_or_else(|e| e.into_inner());
        let Some(list) = all.as_mut().and_then(|m| m.get_mut(session_id)) else {
            return 0;
        };
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    };
    for s in &live {
        s.invalidate(path);
    }
    live.len()
}
