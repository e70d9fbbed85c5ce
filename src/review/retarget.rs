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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::store::{Change, Operation, State, Status};

    fn change(workspace: &str, path: &str) -> Change {
        Change {
            version: 1,
            snapshot_id: format!("s{}", path.len()),
            message_id: None,
            path: path.into(),
            operation: Operation::Write,
            status: Status::Added,
            state: State::Active,
            additions: 1,
            deletions: 0,
            hunks: 1,
            binary: None,
            truncated: None,
            reversible: true,
            tool: "Write".into(),
            workspace: workspace.into(),
            group: None,
            moved_from: None,
            moved_to: None,
            agent: Some("writer".into()),
            created_dirs: Vec::new(),
            before_hash: None,
            after_hash: None,
            mode: None,
            before_bytes: 0,
            created_at: 1,
            pack: None,
            pack_offset: None,
        }
    }

    #[test]
    fn moves_the_changes_of_one_folder_and_its_sub_folders_only() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::of(t.path(), "sess-1").unwrap();
        store.create(&Default::default()).unwrap();
        store
            .append(&[
                change("/wt/dg-1", "a.txt"),
                change("/wt/dg-1/sub", "b.txt"),
                change("/wt/dg-10", "c.txt"),
                change("/wt/s", "d.txt"),
            ])
            .unwrap();
        let n = retarget(t.path(), "sess-1", Path::new("/wt/dg-1"), Path::new("/wt/s")).unwrap();
        assert_eq!(n, 2);
        let ws: Vec<String> = store.load().unwrap().into_iter().map(|c| c.workspace).collect();
        assert_eq!(ws, ["/wt/s", "/wt/s/sub", "/wt/dg-10", "/wt/s"]);
        assert_eq!(
            retarget(t.path(), "sess-1", Path::new("/nowhere"), Path::new("/wt/s")).unwrap(),
            0
        );
    }
}
