//! Merging a worktree into the project (docs/worktrees.md "Merging"): an explicit action in two steps.
//!
//! 1. [`prepare`]: the worktree's uncommitted work is committed, the project's branch is merged into the worktree
//!    (so any conflict happens there, never in the project), and the preview lists the commits and files the
//!    project would get. Its token is bound to the project branch, both commits and the worktree id.
//! 2. [`apply`]: only with a token that still matches (either side moving refuses it), and only when none of the
//!    person's uncommitted changes in the project touch a file the merge changes: the project's branch
//!    fast-forwards (`git merge --ff-only`), which updates its checkout and keeps the other uncommitted changes.

use super::create::missing;
use super::git::Git;
use super::layout::Record;
use super::manage::{commit_all, committer, dirty_lines};
use super::real::check_real_dir;
use super::{Result, WorktreeCode, WorktreeError};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::Path;

/// The most commits and files a preview lists (the totals are always given).
pub const PREVIEW_MAX: usize = 50;

/// What a merge would bring into the project.
#[derive(Clone, Debug)]
pub struct Preview {
    pub id: String,
    /// The project branch that would fast-forward.
    pub project_branch: String,
    pub project_commit: String,
    pub worktree_commit: String,
    /// `<short sha> <subject>` of the commits the project lacks, newest first (at most [`PREVIEW_MAX`]).
    pub commits: Vec<String>,
    pub commits_total: usize,
    /// `<status>\t<path>` lines of `git diff --name-status` (at most [`PREVIEW_MAX`]).
    pub files: Vec<String>,
    pub files_total: usize,
    /// The worktree had uncommitted work, now committed.
    pub committed_work: bool,
    /// The project branch had commits the worktree lacked, now merged into it.
    pub synced: bool,
    /// The token `apply` needs.
    pub token: String,
}

/// What a completed merge did.
#[derive(Clone, Debug)]
pub struct Applied {
    pub project_branch: String,
    pub from: String,
    pub to: String,
    pub files: usize,
}

/// The token of a preview: 16 hex digits of SHA-256 over the id, the project branch and both commits.
pub fn token(id: &str, branch: &str, project_commit: &str, worktree_commit: &str) -> String {
    let mut h = Sha256::new();
    for part in ["pct-merge", id, branch, project_commit, worktree_commit] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())[..16].to_string()
}

fn project_head(pgit: &Git) -> Result<(String, String)> {
    let b = pgit
        .output(&["symbolic-ref", "-q", "--short", "HEAD"])
        .map_err(|e| WorktreeError::git("git could not read the project's HEAD", e))?;
    if !b.ok() {
        return Err(WorktreeError::new(
            WorktreeCode::Detached,
            "The project's HEAD is detached: there is no branch to merge into.",
        ));
    }
    let c = pgit
        .text(&["rev-parse", "--verify", "HEAD^{commit}"])
        .map_err(|e| WorktreeError::git("git could not read the project's HEAD", e))?;
    Ok((b.text(), c))
}

/// Paths with unresolved conflicts in a checkout.
pub fn conflicts(git: &Git) -> Result<Vec<String>> {
    let t = git
        .text(&["diff", "--name-only", "--diff-filter=U"])
        .map_err(|e| WorktreeError::git("git could not list conflicts", e))?;
    Ok(t.lines().filter(|l| !l.is_empty()).map(str::to_string).collect())
}

fn conflict_error(branch: &str, files: &[String], root: &str) -> WorktreeError {
    WorktreeError::new(
        WorktreeCode::Conflict,
        format!(
            "Merging {branch} into the worktree conflicts in {} file(s): {}. The conflict is in the worktree \
             ({root}); the project is untouched.",
            files.len(),
            files.iter().take(PREVIEW_MAX).cloned().collect::<Vec<_>>().join(", ")
        ),
    )
}

/// Commits the worktree's work, syncs the project branch into it and previews the merge. A conflict is left in
/// the worktree and refused with [`WorktreeCode::Conflict`].
pub fn prepare(record: &Record) -> Result<Preview> {
    let root = Path::new(&record.path);
    check_real_dir(root).map_err(|u| missing(&u))?;
    let wgit = committer(root);
    let pgit = Git::new(&record.project);
    let (branch, p) = project_head(&pgit)?;
    let open = conflicts(&wgit)?;
    if !open.is_empty() {
        return Err(conflict_error(&branch, &open, &record.path));
    }
    let committed_work = commit_all(root, &format!("pct: work of worktree {}", record.id))?;
    let mut synced = false;
    let behind = !wgit
        .yes(&["merge-base", "--is-ancestor", &p, "HEAD"])
        .map_err(|e| WorktreeError::git("git could not compare the branches", e))?;
    if behind {
        let msg = format!("pct: sync {branch} into worktree {}", record.id);
        let m = wgit
            .output(&["merge", "--no-edit", "--ff", "--no-stat", "-m", &msg, &p])
            .map_err(|e| WorktreeError::git("git merge failed", e))?;
        if !m.ok() {
            let c = conflicts(&wgit)?;
            if !c.is_empty() {
                return Err(conflict_error(&branch, &c, &record.path));
            }
            let _ = wgit.output(&["merge", "--abort"]);
            return Err(WorktreeError::git(
                "git merge failed",
                super::git::GitError::Failed {
                    status: m.status,
                    stderr: format!("{}{}", m.stderr, String::from_utf8_lossy(&m.stdout)),
                },
            ));
        }
        synced = true;
    }
    let w = wgit
        .text(&["rev-parse", "--verify", "HEAD^{commit}"])
        .map_err(|e| WorktreeError::git("git could not read the worktree's HEAD", e))?;
    let range = format!("{p}..{w}");
    let commits_total = wgit
        .text(&["rev-list", "--count", &range])
        .map_err(|e| WorktreeError::git("git could not count the commits", e))?
        .parse()
        .unwrap_or(0);
    let max = format!("--max-count={PREVIEW_MAX}");
    let commits: Vec<String> = wgit
        .text(&["log", "--no-decorate", "--format=%h %s", &max, &range])
        .map_err(|e| WorktreeError::git("git log failed", e))?
        .lines()
        .map(str::to_string)
        .collect();
    let files_all: Vec<String> = wgit
        .text(&["diff", "--name-status", "--no-renames", &p, &w])
        .map_err(|e| WorktreeError::git("git diff failed", e))?
        .lines()
        .map(str::to_string)
        .collect();
    Ok(Preview {
        id: record.id.clone(),
        token: token(&record.id, &branch, &p, &w),
        project_branch: branch,
        project_commit: p,
        worktree_commit: w,
        commits,
        commits_total,
        files_total: files_all.len(),
        files: files_all.into_iter().take(PREVIEW_MAX).collect(),
        committed_work,
        synced,
    })
}

/// The paths a `git status --porcelain` line names (both sides of a rename).
fn porcelain_paths(line: &str) -> Vec<String> {
    let rest = line.get(3..).unwrap_or("");
    // Both this and `git diff --name-only` quote unusual names the same way, so the texts compare as they are.
    rest.split(" -> ").map(str::to_string).collect()
}

/// Fast-forwards the project to the worktree's commit, when `token` still matches both sides and none of the
/// project's uncommitted changes touch a file the merge changes.
pub fn apply(record: &Record, given: &str) -> Result<Applied> {
    let root = Path::new(&record.path);
    check_real_dir(root).map_err(|u| missing(&u))?;
    let wgit = Git::new(root);
    let pgit = Git::new(&record.project);
    let (branch, p) = project_head(&pgit)?;
    let w = wgit
        .text(&["rev-parse", "--verify", "HEAD^{commit}"])
        .map_err(|e| WorktreeError::git("git could not read the worktree's HEAD", e))?;
    let worktree_dirty = !dirty_lines(&wgit)?.is_empty();
    if worktree_dirty || token(&record.id, &branch, &p, &w) != given.trim() {
        return Err(WorktreeError::new(
            WorktreeCode::Moved,
            format!(
                "The token {} does not match: since the preview the project ({branch} at {}) or the worktree (at {}{}) \
                 changed.",
                given.trim(),
                &p[..p.len().min(12)],
                &w[..w.len().min(12)],
                if worktree_dirty { ", with uncommitted changes" } else { "" }
            ),
        ));
    }
    let changed: BTreeSet<String> = pgit
        .text(&["diff", "--name-only", "--no-renames", &p, &w])
        .map_err(|e| WorktreeError::git("git diff failed", e))?
        .lines()
        .map(str::to_string)
        .collect();
    let mut clash: Vec<String> = dirty_lines(&pgit)?
        .iter()
        .flat_map(|l| porcelain_paths(l))
        .filter(|p| changed.contains(p))
        .collect();
    clash.sort();
    clash.dedup();
    if !clash.is_empty() {
        return Err(WorktreeError::new(
            WorktreeCode::ProjectDirty,
            format!(
                "The merge changes {} file(s) that have uncommitted changes in the project: {}.",
                clash.len(),
                clash.join(", ")
            ),
        ));
    }
    if p != w {
        pgit.run(&["merge", "--ff-only", "--quiet", "--no-stat", &w])
            .map_err(|e| WorktreeError::git("git merge --ff-only in the project failed", e))?;
    }
    Ok(Applied {
        project_branch: branch,
        from: p,
        to: w,
        files: changed.len(),
    })
}
