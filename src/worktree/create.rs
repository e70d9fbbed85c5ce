//! Creating a worktree (docs/worktrees.md "Creating one"): from the project's HEAD commit on a new branch
//! `pct/<id>`, without the project's uncommitted changes, with the `.worktreeinclude` files copied, locked for the
//! creating process; and the optional init command, run once in it.
//!
//! Every refusal (not a git project, detached or unborn HEAD, a taken name) is decided before anything is written;
//! a failure after `git worktree add` removes what was made, so a failed create leaves nothing behind.

use super::git::Git;
use super::include::{copy_included, Copied};
use super::layout::{self, Record, BRANCH_PREFIX, RECORD_VERSION};
use super::manage;
use super::real::{check_real_dir, Unreal};
use super::{Result, WorktreeCode, WorktreeError};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The project a session folder belongs to.
#[derive(Clone, Debug)]
pub struct Project {
    /// The canonical top level of the checkout.
    pub root: PathBuf,
    /// The folder below it the session works in ("" = the top).
    pub sub: PathBuf,
    /// The checked-out branch (short name).
    pub branch: String,
    /// Its commit.
    pub head: String,
    pub key: String,
}

/// Reads the project of `cwd`: refuses outside a git checkout, on a detached HEAD and on an unborn branch.
pub fn project_of(cwd: &Path) -> Result<Project> {
    let git = Git::new(cwd);
    let top = match git.output(&["rev-parse", "--show-toplevel"]) {
        Ok(o) if o.ok() && !o.text().is_empty() => o.text(),
        Ok(_) => {
            return Err(WorktreeError::new(
                WorktreeCode::NotGit,
                format!("{} is not inside a git checkout.", cwd.display()),
            ))
        }
        Err(e) => return Err(WorktreeError::git("git could not read the project", e)),
    };
    let root = fs::canonicalize(&top).map_err(|e| WorktreeError::io("The project folder cannot be resolved", e))?;
    let here = fs::canonicalize(cwd).map_err(|e| WorktreeError::io("The session folder cannot be resolved", e))?;
    let sub = here.strip_prefix(&root).map(Path::to_path_buf).unwrap_or_default();
    let git = Git::new(&root);
    let branch = git
        .output(&["symbolic-ref", "-q", "--short", "HEAD"])
        .map_err(|e| WorktreeError::git("git could not read HEAD", e))?;
    if !branch.ok() {
        return Err(WorktreeError::new(
            WorktreeCode::Detached,
            format!(
                "The project's HEAD in {} is detached (no branch is checked out).",
                root.display()
            ),
        ));
    }
    let head = git
        .output(&["rev-parse", "-q", "--verify", "HEAD^{commit}"])
        .map_err(|e| WorktreeError::git("git could not read HEAD", e))?;
    if !head.ok() {
        return Err(WorktreeError::new(
            WorktreeCode::Unborn,
            format!("The project's branch {} has no commit yet.", branch.text()),
        ));
    }
    Ok(Project {
        key: layout::project_key(&root),
        root,
        sub,
        branch: branch.text(),
        head: head.text(),
    })
}

/// A created worktree.
#[derive(Clone, Debug)]
pub struct Created {
    pub record: Record,
    pub key: String,
    /// Where the session should work: the worktree plus the folder the project session was in (when it exists
    /// there), else the worktree's top.
    pub cwd: PathBuf,
    pub copied: Copied,
    /// How long `git worktree add` took and the whole create took (for the bench and the progress line).
    pub add_ms: u64,
    pub total_ms: u64,
}

/// The canonical `<agentDir>/pi-codex-toolkit/worktrees/<key>`, created when missing and checked real.
pub(crate) fn key_dir(agent_dir: &Path, key: &str) -> Result<PathBuf> {
    let base = layout::base(agent_dir);
    fs::create_dir_all(&base).map_err(|e| WorktreeError::io("The worktree folder could not be created", e))?;
    let base = fs::canonicalize(&base).map_err(|e| WorktreeError::io("The worktree folder cannot be resolved", e))?;
    let dir = base.join(key);
    match fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir(&dir)
            .map_err(|e| WorktreeError::io("The project's worktree folder could not be created", e))?,
        Err(e) => return Err(WorktreeError::io("The project's worktree folder cannot be read", e)),
        Ok(_) => {}
    }
    check_real_dir(&dir).map_err(|u| {
        WorktreeError::new(
            WorktreeCode::Io,
            format!("The worktree folder is not usable: {}.", u.describe()),
        )
    })?;
    Ok(dir)
}

/// Creates a worktree of the project at `cwd` named `name` (else a fresh id), locked for process `pid`.
pub fn create(agent_dir: &Path, cwd: &Path, name: Option<&str>, pid: u32) -> Result<Created> {
    let t0 = Instant::now();
    let p = project_of(cwd)?;
    if let Some(n) = name {
        layout::check_name(n)?;
    }
    let git = Git::new(&p.root);
    let dir = key_dir(agent_dir, &p.key)?;
    let base = dir.parent().expect("key dir has a parent").to_path_buf();
    let taken = |id: &str| -> Result<bool> {
        let folder = fs::symlink_metadata(dir.join(id)).is_ok();
        let record = fs::symlink_metadata(layout::record_path(&base, &p.key, id)).is_ok();
        let branch = git
            .yes(&[
                "show-ref",
                "--verify",
                "--quiet",
                &format!("refs/heads/{BRANCH_PREFIX}{id}"),
            ])
            .map_err(|e| WorktreeError::git("git could not look up the branch", e))?;
        Ok(folder || record || branch)
    };
    let id = match name {
        Some(n) => {
            if taken(n)? {
                return Err(WorktreeError::new(
                    WorktreeCode::Exists,
                    format!("A worktree, record or branch {BRANCH_PREFIX}{n} named \"{n}\" already exists."),
                ));
            }
            n.to_string()
        }
        None => {
            let mut found = None;
            for _ in 0..8 {
                let id = layout::fresh_id();
                if !taken(&id)? {
                    found = Some(id);
                    break;
                }
            }
            found.ok_or_else(|| WorktreeError::new(WorktreeCode::Exists, "Eight fresh ids were all taken."))?
        }
    };
    let path = dir.join(&id);
    let branch = format!("{BRANCH_PREFIX}{id}");
    let path_s = path.to_string_lossy().into_owned();
    let a0 = Instant::now();
    git.run(&["worktree", "add", "--quiet", "-b", &branch, &path_s, &p.head])
        .map_err(|e| WorktreeError::git("git worktree add failed", e))?;
    let add_ms = a0.elapsed().as_millis() as u64;
    let record = Record {
        version: RECORD_VERSION,
        id: id.clone(),
        project: p.root.to_string_lossy().into_owned(),
        path: path_s.clone(),
        branch: branch.clone(),
        base: p.head.clone(),
        base_branch: p.branch.clone(),
        created_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        parent: None,
        agent: None,
    };
    let finish = || -> Result<Copied> {
        manage::lock(&git, &path, pid)?;
        let copied = copy_included(&git, &p.root, &path)?;
        layout::save_record(&layout::record_path(&base, &p.key, &id), &record)?;
        Ok(copied)
    };
    let copied = match finish() {
        Ok(c) => c,
        Err(e) => {
            // Leave nothing behind: the folder, its registration and the new branch.
            let _ = git.run(&["worktree", "unlock", &path_s]);
            let _ = git.run(&["worktree", "remove", "--force", "--force", &path_s]);
            let _ = super::real::remove_no_follow(&path);
            let _ = git.run(&["worktree", "prune"]);
            let _ = git.run(&["branch", "-D", &branch]);
            let _ = fs::remove_file(layout::record_path(&base, &p.key, &id));
            return Err(e);
        }
    };
    let cwd = cwd_in(&path, &p.sub);
    Ok(Created {
        record,
        key: p.key,
        cwd,
        copied,
        add_ms,
        total_ms: t0.elapsed().as_millis() as u64,
    })
}

/// The init command's time limit.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(600);
/// The most output kept in the init log (the rest is cut, and the log says so).
pub const INIT_LOG_MAX: u64 = 4 * 1024 * 1024;
/// The end of the output shown with the result.
pub const INIT_TAIL: usize = 2000;

/// How the init command ended.
#[derive(Clone, Debug)]
pub struct InitOutcome {
    /// Exit status (`None`: killed by a signal or the time limit).
    pub status: Option<i32>,
    pub timed_out: bool,
    /// The last [`INIT_TAIL`] bytes of the combined output.
    pub tail: String,
    /// The log file with the whole output (up to [`INIT_LOG_MAX`]).
    pub log: PathBuf,
}

/// Runs the init command once in `dir` with `shell args... command`, the given variables added, stdin empty,
/// stdout and stderr together in `log`.
pub fn run_init(
    shell: &str,
    shell_args: &[String],
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    log: &Path,
    timeout: Duration,
) -> Result<InitOutcome> {
    if let Err(u) = check_real_dir(dir) {
        return Err(missing(&u));
    }
    let mut file = fs::File::create(log).map_err(|e| WorktreeError::io("The init log could not be created", e))?;
    let (mut reader, writer) = os_pipe::pipe().map_err(|e| WorktreeError::io("A pipe could not be made", e))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| WorktreeError::io("A pipe could not be made", e))?;
    let mut c = Command::new(shell);
    c.args(shell_args)
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2);
    for (k, v) in env {
        c.env(k, v);
    }
    // Git variables of the parent never steer git commands the init runs into another repository.
    for (k, _) in std::env::vars_os() {
        if super::git::redirects(&k.to_string_lossy()) {
            c.env_remove(k);
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
    }
    let mut child = c
        .spawn()
        .map_err(|e| WorktreeError::io("The init command could not be started", e))?;
    drop(c);
    let pid = child.id();
    let (done, stop) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if stop.recv_timeout(timeout) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            #[cfg(unix)]
            // SAFETY: kill(2) on the init command's own process group.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            }
            true
        } else {
            false
        }
    });
    let mut tail: Vec<u8> = Vec::new();
    let mut written: u64 = 0;
    let mut cut = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let take = (n as u64).min(INIT_LOG_MAX - written) as usize;
                if take > 0 {
                    let _ = file.write_all(&buf[..take]);
                    written += take as u64;
                }
                // Output beyond the limit: one note, written once, only when there really was more.
                if take < n && !cut {
                    cut = true;
                    let _ = file.write_all(b"\n[pi-codex-toolkit: the rest of the output was not kept]\n");
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * INIT_TAIL {
                    tail.drain(..tail.len() - INIT_TAIL);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    let status = child.wait();
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let status = status.map_err(|e| WorktreeError::io("The init command could not be waited for", e))?;
    if tail.len() > INIT_TAIL {
        tail.drain(..tail.len() - INIT_TAIL);
    }
    Ok(InitOutcome {
        status: if timed_out { None } else { status.code() },
        timed_out,
        tail: String::from_utf8_lossy(&tail).into_owned(),
        log: log.to_path_buf(),
    })
}

/// Where a session or delegate starts in the worktree at `root`: the same sub-folder `sub` the project's session was
/// in, when the worktree has it as a real folder, else the worktree's root.
pub(super) fn cwd_in(root: &Path, sub: &Path) -> PathBuf {
    let in_sub = root.join(sub);
    if !sub.as_os_str().is_empty() && check_real_dir(&in_sub).is_ok() {
        in_sub
    } else {
        root.to_path_buf()
    }
}

/// The `WORKTREE_MISSING` refusal for a folder that is not real.
pub fn missing(u: &Unreal) -> WorktreeError {
    WorktreeError::new(
        WorktreeCode::Missing,
        format!("The worktree folder is not usable: {}.", u.describe()),
    )
}
