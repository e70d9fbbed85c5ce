//! Moving recorded changes to another workspace root (docs/review.md "Who", docs/worktrees.md "Delegates"): a
//! write-capable delegate of a worktree session works in its own worktree, so its changes are recorded against
//! that folder; once they are merged back into the session's worktree (and the delegate's folder is removed), the
//! records are moved to the session's worktree so `/pct review` shows and rolls them back where they now are.

use super::error::ReviewError;
use super::lock;
use super::store::Store;
use std::path::Path;

/// Rewrites every change of `session_id` whose workspace is `from` (or a folder inside it) to the same place under
/// `to`; returns how many moved. Takes the session's mutation permit, so no recording or rollback interleaves.
pub fn retarget(agent_dir: &Path, session_id: &str, from: &Path, to: &Path) -> Result<usize, ReviewError> {
    let store = Store::of(agent_dir, session_id)?;
    let _permit = lock::acquire_blocking(session_id);
    let mut changes = store.load()?;
    let mut moved = 0;
    for c in &mut changes {
        let Ok(rest) = Path::new(&c.workspace).strip_prefix(from) else {
            continue;
        };
        let target = if rest.as_os_str().is_empty() {
            to.to_path_buf()
        } else {
            to.join(rest)
        };
        c.workspace = target.to_string_lossy().into_owned();
        moved += 1;
    }
    if moved > 0 {
        store.rewrite(&changes)?;
    }
    Ok(moved)
}
