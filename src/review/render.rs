//! The texts of `/pct review` (docs/review.md "/pct review"): one row per change and the unified diff of one change.

use super::diff;
use super::error::ReviewError;
use super::store::{Change, State, Status, Store};
use crate::patch::beneath::{split, Root};
use std::io::Read;
use std::path::Path;

fn letter(s: Status) -> char {
    match s {
        Status::Added => 'A',
        Status::Modified => 'M',
        Status::Deleted => 'D',
    }
}

/// One listing row: `#3 M src/app.js  apply_patch  +2 -1  active` — who made the change (the tool, or the delegate
/// as `writer (Task)`) — with move, binary and not-reversible notes.
pub fn row(n: usize, c: &Change) -> String {
    let mut s = format!("#{n} {} {}", letter(c.status), c.path);
    if let Some(to) = &c.moved_to {
        s.push_str(&format!(" (moved to {to})"));
    }
    if let Some(from) = &c.moved_from {
        s.push_str(&format!(" (moved from {from})"));
    }
    s.push_str(&format!(
        "  {}  +{} -{}  {}",
        c.by(),
        c.additions,
        c.deletions,
        c.state.as_str()
    ));
    if c.binary == Some(true) {
        s.push_str("  binary");
    }
    if !c.reversible {
        s.push_str("  not reversible");
    }
    s
}

/// The listing: a summary line, then one row per change, oldest first.
pub fn list(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "No file changes recorded in this session.".to_string();
    }
    let active = changes.iter().filter(|c| c.state == State::Active).count();
    let mut s = format!(
        "Review: {} change{} in this session ({active} active, {} rolled back)",
        changes.len(),
        if changes.len() == 1 { "" } else { "s" },
        changes.len() - active
    );
    for (i, c) in changes.iter().enumerate() {
        s.push('\n');
        s.push_str(&row(i + 1, c));
    }
    s
}

/// The live bytes of a change's path if they still hash to `hash` (read beneath the workspace root).
fn live_if(c: &Change, hash: &str) -> Option<Vec<u8>> {
    let mut root = Root::open(Path::new(&c.workspace)).ok()?;
    root.dir(split(&c.path).0).ok()?;
    let mut f = root.open_file(&c.path, false).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    (super::record::sha256_hex(&buf) == hash).then_some(buf)
}

/// The change's bytes before: its snapshot, or its Move partner's for a Move destination.
fn before_of(store: &Store, changes: &[Change], i: usize) -> Result<Option<Vec<u8>>, ReviewError> {
    let c = &changes[i];
    if c.has_snapshot() {
        return store.read_before(c).map(Some);
    }
    if c.moved_from.is_some() {
        if let Some(src) = changes.iter().find(|o| o.group == c.group && o.moved_to.is_some()) {
            if src.has_snapshot() {
                return store.read_before(src).map(Some);
            }
        }
    }
    Ok(None)
}

/// The change's bytes after: the next change of the same path saw them as its "before" (its snapshot), or the live
/// file still holds them. None when they are gone (then the diff is against the live file, with a note).
fn after_of(store: &Store, changes: &[Change], i: usize) -> Option<Vec<u8>> {
    let c = &changes[i];
    let hash = c.after_hash.as_deref()?;
    for later in &changes[i + 1..] {
        if later.path == c.path && later.workspace == c.workspace && later.before_hash.as_deref() == Some(hash) {
            if later.has_snapshot() {
                if let Ok(b) = store.read_before(later) {
                    return Some(b);
                }
            }
            break;
        }
    }
    live_if(c, hash)
}

/// `show`: a header and the unified diff of change `i`.
pub fn show(store: &Store, changes: &[Change], i: usize) -> Result<String, ReviewError> {
    let c = &changes[i];
    // The row already names who made the change; Pi's message ids mean nothing to a person and stay out.
    let mut out = format!("{} ({})\n", row(i + 1, c), c.status.as_str());
    let before = before_of(store, changes, i)?;
    if c.status != Status::Added && before.is_none() {
        out.push_str(&format!(
            "The content before ({} bytes) was not kept (over the 16 MiB snapshot limit, or pruned); no diff.\n",
            c.before_bytes
        ));
        return Ok(out);
    }
    let before = if c.status == Status::Added && c.moved_from.is_none() {
        None
    } else {
        before
    };
    let after = match c.status {
        Status::Deleted => None,
        _ => match after_of(store, changes, i) {
            Some(b) => Some(b),
            None => {
                out.push_str("Note: the file no longer holds what the tool wrote; the diff shows the content before against the file as it is now.\n");
                let mut root = Root::open(Path::new(&c.workspace)).ok();
                root.as_mut().and_then(|r| {
                    let mut f = r.open_file(&c.path, false).ok()?;
                    let mut b = Vec::new();
                    f.read_to_end(&mut b).ok()?;
                    Some(b)
                })
            }
        },
    };
    if c.moved_to.is_some() {
        out.push_str(&format!(
            "Moved to {}: see that entry for the content.\n",
            c.moved_to.as_deref().unwrap_or_default()
        ));
        return Ok(out);
    }
    let shown_before = if c.moved_from.is_some() {
        c.moved_from.as_deref()
    } else {
        None
    };
    match shown_before {
        Some(from) => out.push_str(&diff::unified(
            &format!("{from} -> {}", c.path),
            before.as_deref(),
            after.as_deref(),
        )),
        None => out.push_str(&diff::unified(&c.path, before.as_deref(), after.as_deref())),
    }
    Ok(out)
}
