//! Write-capable Task delegates of a worktree session (docs/worktrees.md "Delegates"): each runs in its own
//! worktree, branched from a checkpoint of the session's worktree, and its work is merged back into the session's
//! worktree when it finishes.
//!
//! - [`checkpoint`] turns the session worktree's current state (its HEAD plus every uncommitted and untracked,
//!   not ignored, file) into a commit without touching that worktree: the files are staged into a temporary index
//!   of the toolkit's own (a copy of the real one, so unchanged files are not hashed again) and committed with
//!   `commit-tree`, which moves no branch. The person's or agent's index, HEAD and files stay exactly as they were.
//! - [`start`] makes `pct/dg-xxxxxx` at the checkpoint and its worktree beside the session's, with a record naming
//!   its parent, locked for the parent Pi process; `.worktreeinclude` files are copied from the session worktree.
//!   Two delegates started one after the other get two checkpoints and two worktrees: neither sees the other's files
//!   until one is merged back.
//! - [`finish`] commits the delegate's work on its branch. With `merge`, the delegate's changes (checkpoint → its
//!   tip) are merged three-way onto the session worktree as it is now (which may have moved on since the
//!   checkpoint: new commits, new uncommitted edits): the session's current state is checkpointed the same way,
//!   `git merge-tree --write-tree --merge-base=<checkpoint>` merges in memory, and on a clean result the difference
//!   is written to the session's files with `git apply` (all or nothing; the index is not touched, so the changes
//!   arrive as uncommitted work, like the session's own). On a conflict nothing in the session worktree changes and
//!   the delegate's branch and worktree are kept. After a clean merge the delegate's worktree, branch and record are
//!   removed. Without `merge` (the delegate failed or was stopped) everything is kept.
//!
//! Merges back are one at a time per process, so two delegates finishing together apply in turn and the second
//! sees the first's changes as the session's state.

use super::create::{cwd_in, key_dir, missing};
use super::git::Git;
use super::include::copy_included;
use super::layout::{self, Record, BRANCH_PREFIX, RECORD_VERSION};
use super::manage::{self, commit_all, committer};
use super::merge::conflicts;
use super::real::{check_real_dir, remove_no_follow};
use super::{Result, WorktreeCode, WorktreeError};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Delegate worktree ids are `dg-` and 6 hex digits (a valid worktree id; branch `pct/dg-...`).
pub const ID_PREFIX: &str = "dg-";
/// The most changed files a result lists (the total is always given).
pub const FILES_MAX: usize = 50;

/// One merge back at a time (see the module doc).
static MERGING: Mutex<()> = Mutex::new(());

/// A checkpoint: the commit holding the worktree's state, and whether one had to be made (`false`: the worktree
/// was clean and the checkpoint is its HEAD).
#[derive(Clone, Debug)]
pub struct Checkpoint {
    pub commit: String,
    pub made: bool,
}

/// Removes a temporary file when dropped.
struct TempFile(PathBuf);
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// The worktree's own git folder (`.git/worktrees/<name>` of the repository), where the temporary files go.
fn admin_dir(git: &Git) -> Result<PathBuf> {
    git.text(&["rev-parse", "--path-format=absolute", "--git-dir"])
        .map(PathBuf::from)
        .map_err(|e| WorktreeError::git("git could not find the worktree's git folder", e))
}

fn head(git: &Git) -> Result<String> {
    git.text(&["rev-parse", "--verify", "HEAD^{commit}"])
        .map_err(|e| WorktreeError::git("git could not read HEAD", e))
}

/// Commits the state of the worktree at `root` (HEAD plus every uncommitted and untracked, not ignored, file)
/// without changing anything in it; see the module doc. Refuses a worktree with unresolved conflicts.
pub fn checkpoint(root: &Path, message: &str) -> Result<Checkpoint> {
    check_real_dir(root).map_err(|u| missing(&u))?;
    let g = committer(root);
    let open = conflicts(&g)?;
    if !open.is_empty() {
        return Err(WorktreeError::new(
            WorktreeCode::Conflict,
            format!(
                "The worktree {} has unresolved conflicts in {} file(s): {}; resolve them and commit, then try again.",
                root.display(),
                open.len(),
                open.iter().take(FILES_MAX).cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let h = head(&g)?;
    let admin = admin_dir(&g)?;
    let tmp = TempFile(admin.join(format!("pct-checkpoint-{}.index", uuid::Uuid::new_v4().simple())));
    let gi = g.clone().with_index_file(&tmp.0);
    // Starting from a copy of the real index spares hashing every unchanged file again.
    if fs::copy(admin.join("index"), &tmp.0).is_err() {
        gi.run(&["read-tree", &h])
            .map_err(|e| WorktreeError::git("git could not read the worktree's tree", e))?;
    }
    gi.run(&["add", "-A"])
        .map_err(|e| WorktreeError::git("git could not stage the worktree's state", e))?;
    let tree = gi
        .text(&["write-tree"])
        .map_err(|e| WorktreeError::git("git could not write the worktree's tree", e))?;
    drop(tmp);
    let head_tree = g
        .text(&["rev-parse", "--verify", "HEAD^{tree}"])
        .map_err(|e| WorktreeError::git("git could not read HEAD", e))?;
    if tree == head_tree {
        return Ok(Checkpoint { commit: h, made: false });
    }
    let commit = g
        .text(&["commit-tree", &tree, "-p", &h, "-m", message])
        .map_err(|e| WorktreeError::git("git could not commit the checkpoint", e))?;
    Ok(Checkpoint { commit, made: true })
}

/// A delegate's worktree, made.
#[derive(Clone, Debug)]
pub struct Started {
    pub record: Record,
    /// Where the delegate works: its worktree plus the sub-folder the session works in (when it exists there).
    pub cwd: PathBuf,
    /// The checkpoint had to commit uncommitted work of the session.
    pub checkpoint_made: bool,
}

/// The record of the worktree `cwd` lies in (a session's or a delegate's), checked real.
fn located(agent_dir: &Path, cwd: &Path) -> Result<(layout::Located, Record)> {
    let Some(at) = layout::locate(agent_dir, cwd) else {
        return Err(WorktreeError::new(
            WorktreeCode::NotFound,
            format!("{} is not in a worktree of the toolkit.", cwd.display()),
        ));
    };
    let Some(rec) = at.record.clone() else {
        return Err(WorktreeError::new(
            WorktreeCode::Missing,
            format!("The record of worktree {} is missing or unreadable.", at.id),
        ));
    };
    check_real_dir(Path::new(&rec.path)).map_err(|u| missing(&u))?;
    Ok((at, rec))
}

/// Makes the worktree of delegate `agent` of the session working in `session_cwd` (see the module doc), locked for
/// process `pid` (the parent Pi).
pub fn start(agent_dir: &Path, session_cwd: &Path, agent: &str, pid: u32) -> Result<Started> {
    let (at, parent) = located(agent_dir, session_cwd)?;
    let root = PathBuf::from(&parent.path);
    let cp = checkpoint(
        &root,
        &format!("pct: checkpoint of worktree {} for delegate {agent}", parent.id),
    )?;
    let pgit = Git::new(&parent.project);
    let dir = key_dir(agent_dir, &at.key)?;
    let base = dir.parent().expect("key dir has a parent").to_path_buf();
    let mut id = None;
    for _ in 0..8 {
        let cand = format!("{ID_PREFIX}{}", &uuid::Uuid::new_v4().simple().to_string()[..6]);
        let branch = format!("refs/heads/{BRANCH_PREFIX}{cand}");
        let taken = fs::symlink_metadata(dir.join(&cand)).is_ok()
            || fs::symlink_metadata(layout::record_path(&base, &at.key, &cand)).is_ok()
            || pgit
                .yes(&["show-ref", "--verify", "--quiet", &branch])
                .map_err(|e| WorktreeError::git("git could not look up the branch", e))?;
        if !taken {
            id = Some(cand);
            break;
        }
    }
    let id = id.ok_or_else(|| WorktreeError::new(WorktreeCode::Exists, "Eight fresh delegate ids were all taken."))?;
    let path = dir.join(&id);
    let path_s = path.to_string_lossy().into_owned();
    let branch = format!("{BRANCH_PREFIX}{id}");
    pgit.run(&["worktree", "add", "--quiet", "-b", &branch, &path_s, &cp.commit])
        .map_err(|e| WorktreeError::git("git worktree add failed", e))?;
    let record = Record {
        version: RECORD_VERSION,
        id: id.clone(),
        project: parent.project.clone(),
        path: path_s.clone(),
        branch: branch.clone(),
        base: cp.commit.clone(),
        base_branch: parent.branch.clone(),
        created_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        parent: Some(parent.id.clone()),
        agent: Some(agent.to_string()),
    };
    let finish = || -> Result<()> {
        manage::lock(&pgit, &path, pid)?;
        copy_included(&Git::new(&root), &root, &path)?;
        layout::save_record(&layout::record_path(&base, &at.key, &id), &record)
    };
    if let Err(e) = finish() {
        remove(&pgit, &record, &base, &at.key);
        return Err(e);
    }
    let cwd = cwd_in(&path, &at.sub);
    Ok(Started {
        record,
        cwd,
        checkpoint_made: cp.made,
    })
}

/// Removes a delegate's worktree: its lock, folder (never following links), registration, branch and record.
fn remove(pgit: &Git, rec: &Record, base: &Path, key: &str) {
    let path = Path::new(&rec.path);
    let _ = manage::unlock_any(pgit, path);
    let _ = remove_no_follow(path);
    let _ = pgit.run(&["worktree", "prune"]);
    let _ = pgit.run(&["branch", "-D", "-q", &rec.branch]);
    let _ = fs::remove_file(layout::record_path(base, key, &rec.id));
}

/// How a delegate's worktree ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Its changes were applied to the session worktree; its worktree and branch are gone.
    Merged,
    /// It changed nothing; its worktree and branch are gone.
    Unchanged,
    /// Its changes conflict with the session worktree: nothing was applied, its branch and worktree are kept.
    Conflict,
    /// Not merged (it failed or was stopped): its branch and worktree are kept.
    Kept,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Merged => "merged",
            Outcome::Unchanged => "unchanged",
            Outcome::Conflict => "conflict",
            Outcome::Kept => "kept",
        }
    }
}

/// What [`finish`] did.
#[derive(Clone, Debug)]
pub struct Finished {
    pub record: Record,
    pub outcome: Outcome,
    /// The session worktree's id and folder (the merge target).
    pub parent_path: String,
    /// The delegate branch's tip (its work committed).
    pub tip: String,
    /// `<status>\t<path>` of the delegate's changes (checkpoint → tip), at most [`FILES_MAX`].
    pub files: Vec<String>,
    pub files_total: usize,
    /// The conflicting paths (Conflict).
    pub conflicts: Vec<String>,
    /// Why a merge that was asked for did not happen (Conflict: what git said).
    pub why: Option<String>,
}

/// Ends delegate worktree `delegate_cwd` (see the module doc): commits its work; with `merge` merges it back into
/// its session worktree and removes it when that is clean; else (or on a conflict) keeps it, unlocked.
pub fn finish(agent_dir: &Path, delegate_cwd: &Path, merge: bool) -> Result<Finished> {
    let (at, rec) = located(agent_dir, delegate_cwd)?;
    let Some(parent_id) = rec.parent.clone() else {
        return Err(WorktreeError::new(
            WorktreeCode::NotFound,
            format!("Worktree {} is not a delegate's worktree.", rec.id),
        ));
    };
    let base = at.base.clone();
    let pgit = Git::new(&rec.project);
    let dpath = PathBuf::from(&rec.path);
    let agent = rec.agent.clone().unwrap_or_else(|| "delegate".into());
    commit_all(&dpath, &format!("pct: work of delegate {agent} (worktree {})", rec.id))?;
    let dgit = Git::new(&dpath);
    let tip = head(&dgit)?;
    let all: Vec<String> = dgit
        .text(&["diff", "--name-status", "--no-renames", &rec.base, &tip])
        .map_err(|e| WorktreeError::git("git diff failed", e))?
        .lines()
        .map(str::to_string)
        .collect();
    let parent = layout::load_record(&layout::record_path(&base, &at.key, &parent_id)).filter(|p| p.id == parent_id);
    let mut out = Finished {
        record: rec.clone(),
        outcome: Outcome::Kept,
        parent_path: parent.as_ref().map(|p| p.path.clone()).unwrap_or_default(),
        tip: tip.clone(),
        files_total: all.len(),
        files: all.iter().take(FILES_MAX).cloned().collect(),
        conflicts: Vec::new(),
        why: None,
    };
    let keep = |mut out: Finished| -> Result<Finished> {
        let _ = manage::unlock_any(&pgit, &dpath);
        if out.outcome == Outcome::Merged {
            out.outcome = Outcome::Kept;
        }
        Ok(out)
    };
    if !merge {
        return keep(out);
    }
    if all.is_empty() {
        remove(&pgit, &rec, &base, &at.key);
        out.outcome = Outcome::Unchanged;
        return Ok(out);
    }
    let Some(parent) = parent else {
        return Err(WorktreeError::new(
            WorktreeCode::NotFound,
            format!(
                "The session worktree {parent_id} that delegate worktree {} came from has no record any more.",
                rec.id
            ),
        ));
    };
    let _one = MERGING.lock().unwrap_or_else(|e| e.into_inner());
    let sroot = PathBuf::from(&parent.path);
    let now = match checkpoint(
        &sroot,
        &format!("pct: state of worktree {} before delegate {}", parent.id, rec.id),
    ) {
        Ok(c) => c,
        Err(e) if e.code == WorktreeCode::Conflict => {
            out.outcome = Outcome::Conflict;
            out.why = Some(e.message);
            return keep(out);
        }
        Err(e) => return Err(e),
    };
    let sgit = Git::new(&sroot);
    let merge_base = format!("--merge-base={}", rec.base);
    let m = sgit
        .output(&[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            &merge_base,
            &now.commit,
            &tip,
        ])
        .map_err(|e| WorktreeError::git("git merge-tree failed", e))?;
    let text = m.text();
    let mut lines = text.lines();
    let tree = lines.next().unwrap_or("").trim().to_string();
    match m.status {
        Some(0) => {}
        Some(1) => {
            let mut files: Vec<String> = lines.filter(|l| !l.is_empty()).map(str::to_string).collect();
            files.dedup();
            out.outcome = Outcome::Conflict;
            out.conflicts = files;
            return keep(out);
        }
        status => {
            return Err(WorktreeError::git(
                "git merge-tree failed",
                super::git::GitError::Failed {
                    status,
                    stderr: m.stderr,
                },
            ))
        }
    }
    let now_tree = format!("{}^{{tree}}", now.commit);
    let patch = TempFile(admin_dir(&sgit)?.join(format!("pct-delegate-{}.patch", rec.id)));
    let output = format!("--output={}", patch.0.display());
    sgit.run(&[
        "diff",
        "--binary",
        "--no-renames",
        "--full-index",
        &output,
        &now_tree,
        &tree,
    ])
    .map_err(|e| WorktreeError::git("git diff failed", e))?;
    let empty = fs::metadata(&patch.0).map(|m| m.len() == 0).unwrap_or(true);
    if !empty {
        let patch_s = patch.0.to_string_lossy().into_owned();
        let a = sgit
            .output(&["apply", "--whitespace=nowarn", &patch_s])
            .map_err(|e| WorktreeError::git("git apply failed", e))?;
        if !a.ok() {
            // The session's files changed between the snapshot and the apply: nothing was written (git apply is all
            // or nothing), so this is a conflict like any other.
            out.outcome = Outcome::Conflict;
            out.why = Some(a.stderr.trim().to_string());
            out.conflicts = dirty_paths_in(&a.stderr);
            return keep(out);
        }
    }
    drop(patch);
    remove(&pgit, &rec, &base, &at.key);
    out.outcome = Outcome::Merged;
    Ok(out)
}

/// The paths `git apply` names in its refusals (`error: <path>: ...`).
fn dirty_paths_in(stderr: &str) -> Vec<String> {
    let mut v: Vec<String> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .filter_map(|l| {
            l.split_once(": ")
                .map(|(p, _)| p.trim_start_matches("patch failed: ").to_string())
        })
        .filter(|p| !p.contains(' '))
        .collect();
    v.sort();
    v.dedup();
    v
}
