//! Isolated session worktrees (docs/worktrees.md): a Pi session can move into its own git worktree under
//! `<agentDir>/pi-codex-toolkit/worktrees/<project-key>/<id>` on branch `pct/<id>`, work there without touching the
//! person's checkout, and hand the work back only when the person asks (preview, then a fast-forward of the
//! project).
//!
//! Every decision that touches the filesystem or git is here, in plain Rust, because each is a race or an injection
//! a TypeScript `fs` call cannot close: the worktree folder must be a real directory at every component (a symlink
//! swapped in anywhere on the path makes it missing, [`real`]); ignored files are copied without following links
//! ([`include`]); every git command is hardened ([`git`]); port blocks are leased with OS locks that die with the
//! process ([`ports`]). The glue (src/pi/worktree.ts) only adapts Pi: the commands, the session switch, the
//! dialogs.

pub mod create;
pub mod delegate;
pub mod git;
pub mod include;
pub mod layout;
pub mod manage;
pub mod merge;
pub mod ports;
pub mod real;
pub mod sessions;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_delegate;

crate::codes::error_codes! {
    /// Why a worktree operation refused or failed (docs/worktrees.md "Codes"). Every refusal changes nothing.
    pub enum WorktreeCode {
        /// The session's folder is not inside a git work tree (or the repository is bare).
        NotGit = "WORKTREE_NOT_GIT" => "Start Pi inside a git repository's checkout, then run /pct worktree new again.",
        /// The project's HEAD is detached: there is no branch to merge back into.
        Detached = "WORKTREE_DETACHED_HEAD" =>
            "Check out a branch in the project (git switch <branch>), then run the command again.",
        /// The project's HEAD names a branch with no commit yet.
        Unborn = "WORKTREE_UNBORN_HEAD" => "Make a first commit in the project, then run /pct worktree new again.",
        /// The worktree folder is gone, or it (or a folder on the path to it) is a symbolic link.
        Missing = "WORKTREE_MISSING" =>
            "Nothing was changed. The worktree folder is missing or was replaced by a link; tell the user. \
             /pct worktree leave goes back to the project; /pct worktree delete removes the entry (only the link).",
        /// The name, branch or folder is taken.
        Exists = "WORKTREE_EXISTS" => "Choose another name (or none) for /pct worktree new.",
        /// The name has characters outside `a-z 0-9 - _ .` or is too long.
        BadName = "WORKTREE_BAD_NAME" =>
            "Use 1-40 characters: lowercase letters, digits, '-', '_' or '.', starting with a letter or digit.",
        /// No worktree of this project has that id.
        NotFound = "WORKTREE_NOT_FOUND" => "Run /pct worktree list to see this project's worktrees and their ids.",
        /// Syncing the project branch into the worktree conflicted; the conflict is left in the worktree.
        Conflict = "WORKTREE_CONFLICT" =>
            "The project was not touched. Resolve the conflicts in the worktree (edit the files, then git add and \
             git commit there), then run /pct worktree merge again.",
        /// The project or the worktree changed after the preview the token was made from.
        Moved = "WORKTREE_MOVED" => "Run /pct worktree merge again for a fresh preview and token.",
        /// Fast-forwarding the project would overwrite the person's own uncommitted changes.
        ProjectDirty = "WORKTREE_PROJECT_DIRTY" =>
            "Nothing was merged. Commit or stash those files in the project, then run /pct worktree merge again.",
        /// The worktree has work the project does not have, and the caller did not confirm.
        Unmerged = "WORKTREE_UNMERGED" =>
            "Merge it first (/pct worktree merge), or confirm the delete (/pct worktree delete <id> force); the work \
             is kept under refs/pct/snapshots/<id> either way.",
        /// Another live Pi session is using the worktree.
        InUse = "WORKTREE_IN_USE" => "Leave it first (/pct worktree leave in that session), then run the command again.",
        /// Every 10-port block in 41000-48999 had a port in use or was leased.
        NoPorts = "WORKTREE_NO_PORTS" => "Stop a dev server or another Pi worktree session, then try again.",
        /// A git command failed, timed out or could not be started.
        Git = "WORKTREE_GIT_FAILED" => "Read git's message above; fix the repository state, then try again.",
        /// The filesystem refused (permissions, disk full).
        Io = "WORKTREE_IO" => "Read the error above; fix the folder's permissions or free space, then try again.",
    }
}

/// A refusal or failure: the code and the whole message (what happened, then the next step).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorktreeError {
    pub code: WorktreeCode,
    pub message: String,
}

impl WorktreeError {
    pub fn new(code: WorktreeCode, what: impl Into<String>) -> WorktreeError {
        WorktreeError {
            code,
            message: format!("{} {}", what.into(), code.next_step()),
        }
    }

    pub fn git(what: &str, e: git::GitError) -> WorktreeError {
        WorktreeError::new(WorktreeCode::Git, format!("{what}: {e}."))
    }

    pub fn io(what: &str, e: std::io::Error) -> WorktreeError {
        WorktreeError::new(WorktreeCode::Io, format!("{what}: {e} ({}).", crate::errno::code(&e)))
    }
}

impl std::fmt::Display for WorktreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

pub type Result<T> = std::result::Result<T, WorktreeError>;
