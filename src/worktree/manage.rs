//! Living with worktrees (docs/worktrees.md "Commands"): the lock a session holds, where a session is (`/pct
//! worktree`), the project's worktrees and their state (`list`, the start-up sweep), and deletion with a snapshot.
//!
//! State of a worktree: `in-use` (locked by a live process), `idle` (not locked: its session left or ended),
//! `missing` (the folder is gone or linked over), `leftover` (locked by a process that is gone, git no longer knows
//! it, or a folder without a record). The sweep only lists; nothing is ever deleted without the person asking.

use super::create::missing;
use super::git::Git;
use super::layout::{self, Record, SNAPSHOT_PREFIX};
use super::real::{check_real_dir, remove_no_follow, Removed};
use super::{Result, WorktreeCode, WorktreeError};
use std::fs;
use std::path::{Path, PathBuf};

/// The lock reason the toolkit writes: `git worktree list` shows it, and the pid says whether its session lives.
pub fn lock_reason(pid: u32) -> String {
    format!("pi-codex-toolkit session (pid {pid})")
}

/// The pid in a lock reason the toolkit wrote.
pub fn lock_pid(reason: &str) -> Option<u32> {
    reason
        .strip_prefix("pi-codex-toolkit session (pid ")?
        .strip_suffix(')')?
        .parse()
        .ok()
}

/// Whether a process with this pid exists.
pub fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: signal 0 only checks for existence and permission.
        let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// `git worktree lock` for process `pid` (a lock of an earlier holder is replaced).
pub fn lock(git: &Git, path: &Path, pid: u32) -> Result<()> {
    let p = path.to_string_lossy();
    let _ = git.output(&["worktree", "unlock", &p]);
    git.run(&["worktree", "lock", "--reason", &lock_reason(pid), &p])
        .map(|_| ())
        .map_err(|e| WorktreeError::git("git worktree lock failed", e))
}

/// Removes the lock when process `pid` holds it (another live holder's lock stays). `true` when it was ours.
pub fn unlock(git: &Git, path: &Path, pid: u32) -> Result<bool> {
    let info = worktrees(git)?;
    let mine = info
        .iter()
        .find(|w| Path::new(&w.path) == path)
        .and_then(|w| w.locked.as_deref())
        .and_then(lock_pid)
        == Some(pid);
    if mine {
        git.run(&["worktree", "unlock", &path.to_string_lossy()])
            .map_err(|e| WorktreeError::git("git worktree unlock failed", e))?;
    }
    Ok(mine)
}

/// One line of `git worktree list --porcelain`.
#[derive(Clone, Debug, Default)]
pub struct GitWorktree {
    pub path: String,
    pub head: String,
    pub branch: Option<String>,
    /// The lock reason ("" when locked without one).
    pub locked: Option<String>,
}

/// The repository's worktrees as git lists them.
pub fn worktrees(git: &Git) -> Result<Vec<GitWorktree>> {
    let out = git
        .text(&["worktree", "list", "--porcelain"])
        .map_err(|e| WorktreeError::git("git worktree list failed", e))?;
    let mut all = Vec::new();
    let mut cur: Option<GitWorktree> = None;
    for line in out.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            all.extend(cur.take());
            continue;
        }
        let w = cur.get_or_insert_with(GitWorktree::default);
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        match k {
            "worktree" => w.path = v.to_string(),
            "HEAD" => w.head = v.to_string(),
            "branch" => w.branch = Some(v.trim_start_matches("refs/heads/").to_string()),
            "locked" => w.locked = Some(v.to_string()),
            _ => {}
        }
    }
    Ok(all)
}

/// A worktree of the project, as `/pct worktree list` shows it.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: String,
    pub path: String,
    pub branch: String,
    /// `in-use`, `idle`, `missing` or `leftover`.
    pub state: &'static str,
    /// Why it is missing or leftover.
    pub why: Option<String>,
    /// The pid of a toolkit lock.
    pub lock_pid: Option<u32>,
    pub created_ms: u64,
}

/// The project's worktrees (records and folders under its key), each with its state.
pub fn list(agent_dir: &Path, project: &Path) -> Result<Vec<Entry>> {
    let key = layout::project_key(project);
    let base = layout::base(agent_dir);
    let base = fs::canonicalize(&base).unwrap_or(base);
    let git = Git::new(project);
    let known = worktrees(&git)?;
    let mut out = Vec::new();
    let recs = layout::records(&base, &key);
    for r in &recs {
        let reg = known.iter().find(|w| w.path == r.path);
        let pid = reg.and_then(|w| w.locked.as_deref()).and_then(lock_pid);
        let (state, why) = match check_real_dir(Path::new(&r.path)) {
            Err(u) => ("missing", Some(u.describe())),
            Ok(()) if reg.is_none() => ("leftover", Some("git no longer lists it".to_string())),
            Ok(()) => match pid {
                Some(p) if alive(p) => ("in-use", None),
                Some(p) => ("leftover", Some(format!("its session (pid {p}) is gone"))),
                None => ("idle", None),
            },
        };
        out.push(Entry {
            id: r.id.clone(),
            path: r.path.clone(),
            branch: r.branch.clone(),
            state,
            why,
            lock_pid: pid,
            created_ms: r.created_ms,
        });
    }
    // Folders without a record (a create that was stopped half-way): listed, never removed silently.
    for e in fs::read_dir(base.join(&key)).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") || name.ends_with(".log") || recs.iter().any(|r| r.id == name) {
            continue;
        }
        out.push(Entry {
            id: name.clone(),
            path: e.path().to_string_lossy().into_owned(),
            branch: format!("{}{name}", layout::BRANCH_PREFIX),
            state: "leftover",
            why: Some("a folder without a record".into()),
            lock_pid: None,
            created_ms: 0,
        });
    }
    Ok(out)
}

/// Where a session in a worktree stands (`/pct worktree`).
#[derive(Clone, Debug)]
pub struct Status {
    pub record: Record,
    /// The branch the project has checked out now (None: detached).
    pub project_branch: Option<String>,
    /// Commits on the worktree branch the project branch lacks, and the reverse.
    pub ahead: u32,
    pub behind: u32,
    /// `git status --porcelain` lines of the worktree (at most 200).
    pub changed: Vec<String>,
    pub changed_total: usize,
}

/// The worktree's status against the project. Refuses a missing worktree.
pub fn status(record: &Record) -> Result<Status> {
    let path = Path::new(&record.path);
    check_real_dir(path).map_err(|u| missing(&u))?;
    let wgit = Git::new(path);
    let pgit = Git::new(&record.project);
    let project_branch = pgit
        .output(&["symbolic-ref", "-q", "--short", "HEAD"])
        .ok()
        .filter(|o| o.ok())
        .map(|o| o.text());
    let (mut ahead, mut behind) = (0, 0);
    if let Some(b) = &project_branch {
        if let Ok(t) = wgit.text(&["rev-list", "--left-right", "--count", &format!("refs/heads/{b}...HEAD")]) {
            let mut it = t.split_whitespace().map(|n| n.parse::<u32>().unwrap_or(0));
            behind = it.next().unwrap_or(0);
            ahead = it.next().unwrap_or(0);
        }
    }
    let lines = dirty_lines(&wgit)?;
    Ok(Status {
        record: record.clone(),
        project_branch,
        ahead,
        behind,
        changed_total: lines.len(),
        changed: lines.into_iter().take(200).collect(),
    })
}

/// `git status --porcelain` lines (untracked files listed one by one).
pub fn dirty_lines(git: &Git) -> Result<Vec<String>> {
    let t = git
        .text(&["status", "--porcelain", "--untracked-files=all"])
        .map_err(|e| WorktreeError::git("git status failed", e))?;
    Ok(t.lines().filter(|l| !l.is_empty()).map(str::to_string).collect())
}

/// A git runner for the toolkit's own commits: the person's identity when git has one, else the toolkit's; no
/// signing prompt (there is no terminal to answer it).
pub fn committer(dir: &Path) -> Git {
    let g = Git::new(dir).with_config("commit.gpgsign", "false");
    if g.output(&["var", "GIT_COMMITTER_IDENT"])
        .map(|o| o.ok())
        .unwrap_or(false)
    {
        g
    } else {
        g.with_config("user.name", "Pi Codex Toolkit")
            .with_config("user.email", "pi-codex-toolkit@localhost")
    }
}

/// Commits everything in the worktree (new, changed, deleted files) with `message`. `false` when it was clean.
pub fn commit_all(dir: &Path, message: &str) -> Result<bool> {
    let g = committer(dir);
    if dirty_lines(&g)?.is_empty() {
        return Ok(false);
    }
    g.run(&["add", "-A"])
        .map_err(|e| WorktreeError::git("git add failed", e))?;
    g.run(&["commit", "-q", "--no-verify", "-m", message])
        .map_err(|e| WorktreeError::git("git commit failed", e))?;
    Ok(true)
}

/// What a delete did.
#[derive(Clone, Debug)]
pub struct Deleted {
    pub id: String,
    /// `refs/pct/snapshots/<id>` when unmerged work was kept there.
    pub snapshot: Option<String>,
    /// What happened to the folder: `tree`, `link` (only the link), `nothing`, or why it was left.
    pub folder: String,
    /// How many of the toolkit's session files for this worktree were removed (see [`super::sessions`]).
    pub sessions: usize,
}

/// Deletes worktree `id` of `project`: refuses one in use by another live process; with unmerged or uncommitted
/// work refuses unless `force`; then commits uncommitted work, keeps the branch tip under
/// `refs/pct/snapshots/<id>` when the project lacks it, removes the folder without following links, the git
/// registration, the branch, the record and the toolkit's session files rooted in it.
pub fn delete(agent_dir: &Path, project: &Path, id: &str, force: bool, pid: u32) -> Result<Deleted> {
    let entries = list(agent_dir, project)?;
    let Some(e) = entries.iter().find(|e| e.id == id) else {
        return Err(WorktreeError::new(
            WorktreeCode::NotFound,
            format!("This project has no worktree \"{id}\"."),
        ));
    };
    if e.state == "in-use" && e.lock_pid != Some(pid) {
        return Err(WorktreeError::new(
            WorktreeCode::InUse,
            format!(
                "Worktree {id} is in use by another Pi session (pid {}).",
                e.lock_pid.unwrap_or(0)
            ),
        ));
    }
    let path = PathBuf::from(&e.path);
    let pgit = Git::new(project);
    let branch_ref = format!("refs/heads/{}", e.branch);
    let has_branch = pgit
        .yes(&["show-ref", "--verify", "--quiet", &branch_ref])
        .map_err(|e| WorktreeError::git("git could not look up the branch", e))?;
    let real = check_real_dir(&path).is_ok();
    let dirty = real && !dirty_lines(&Git::new(&path))?.is_empty();
    let unmerged = has_branch
        && !pgit
            .yes(&["merge-base", "--is-ancestor", &branch_ref, "HEAD"])
            .map_err(|e| WorktreeError::git("git could not compare the branches", e))?;
    if (dirty || unmerged) && !force {
        let what = match (dirty, unmerged) {
            (true, true) => "uncommitted changes and commits the project does not have",
            (true, false) => "uncommitted changes",
            _ => "commits the project does not have",
        };
        return Err(WorktreeError::new(
            WorktreeCode::Unmerged,
            format!("Worktree {id} has {what}."),
        ));
    }
    if dirty {
        commit_all(
            &path,
            &format!("pct: uncommitted work of worktree {id}, kept before delete"),
        )?;
    }
    let mut snapshot = None;
    if dirty || unmerged {
        let name = format!("{SNAPSHOT_PREFIX}{id}");
        pgit.run(&["update-ref", &name, &branch_ref])
            .map_err(|e| WorktreeError::git("git could not keep the snapshot", e))?;
        snapshot = Some(name);
    }
    let _ = unlock_any(&pgit, &path);
    let folder =
        match remove_no_follow(&path).map_err(|e| WorktreeError::io("The worktree folder could not be removed", e))? {
            Removed::Tree => "tree".to_string(),
            Removed::Link => "link".to_string(),
            Removed::Nothing => "nothing".to_string(),
            Removed::Refused(why) => format!("left in place: {why}"),
        };
    let _ = pgit.run(&["worktree", "prune"]);
    if has_branch {
        pgit.run(&["branch", "-D", "-q", &e.branch])
            .map_err(|e| WorktreeError::git("git could not delete the branch", e))?;
    }
    let base = fs::canonicalize(layout::base(agent_dir)).unwrap_or_else(|_| layout::base(agent_dir));
    let key = layout::project_key(project);
    let _ = fs::remove_file(layout::record_path(&base, &key, id));
    let _ = fs::remove_file(base.join(&key).join(format!("{id}.init.log")));
    let sessions = super::sessions::remove_for_worktree(agent_dir, &key, id);
    Ok(Deleted {
        id: id.to_string(),
        snapshot,
        folder,
        sessions,
    })
}

/// Removes git's lock on the worktree at `path` whoever holds it, also when the folder is gone or linked over (git
/// cannot find a worktree by a path that no longer leads to it, so its admin folder's `locked` file is removed).
pub(crate) fn unlock_any(pgit: &Git, path: &Path) -> Result<()> {
    if pgit
        .output(&["worktree", "unlock", &path.to_string_lossy()])
        .map(|o| o.ok())
        .unwrap_or(false)
    {
        return Ok(());
    }
    let common = pgit
        .text(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map_err(|e| WorktreeError::git("git could not find the repository", e))?;
    let want = path.join(".git");
    for admin in fs::read_dir(Path::new(&common).join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let gitdir = fs::read_to_string(admin.path().join("gitdir")).unwrap_or_default();
        if Path::new(gitdir.trim()) == want {
            let _ = fs::remove_file(admin.path().join("locked"));
        }
    }
    Ok(())
}
