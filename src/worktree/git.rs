//! The one door for git (docs/worktrees.md "Hardened git"): every git command the toolkit runs goes through
//! [`Git`], so hardening is a property of the type, not of each call site.
//!
//! Why a child process and not a crate: the toolkit needs porcelain that libraries do not finish — `git worktree
//! add/lock/remove`, a real three-way `merge` that leaves conflict markers in the worktree, `merge --ff-only` that
//! updates a checkout while keeping the person's uncommitted changes. `gix` has no worktree creation or merge into
//! a checkout yet, and `git2` (libgit2) has neither `worktree lock` semantics identical to git's nor git's
//! "would be overwritten" checkout safety; a second implementation of checkout next to the person's own git is
//! also a second set of behaviours to trust. The installed git is the one the person uses on the same repository,
//! so what the toolkit does is what `git` would do — minus the parts a repository can inject:
//!
//! - argv only, never a shell; stdin is empty; the process has its own process group and is killed (with its
//!   children) at the time limit;
//! - `core.hooksPath` points at an empty location and `core.fsmonitor` is off, so no repository-configured program
//!   runs (hooks, fsmonitor daemons); the pager is `cat` and prompts are off;
//! - every `GIT_*` variable that redirects git to another repository, index, object store or config, or injects
//!   command-level config, is removed ([`scrubbed`]); only the author/committer identity variables pass;
//! - diff-producing commands get `--no-ext-diff --no-textconv`, so no external diff or textconv helper runs;
//! - every content driver and transport the repository's configuration names is switched off per command
//!   ([`neutralize`]): filter drivers (`filter.<name>.clean/smudge/process`) pass content through unchanged, custom
//!   merge drivers (`merge.<name>.driver`) become git's own text merge, every transport is refused
//!   (`protocol.allow=never` and each configured `protocol.<name>.allow`), credential helpers are cleared,
//!   signing and signature checks are off, the editor is `:` (none), and no automatic gc is started;
//! - stdout and stderr are each bounded ([`MAX_OUTPUT`]); more is a failure, never a silently cut answer.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The default time limit of one git command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The most bytes kept of each stream; a command that prints more fails with [`GitError::TooLarge`].
pub const MAX_OUTPUT: usize = 16 * 1024 * 1024;

/// Where hooks are looked for: a path no hook can exist under.
#[cfg(unix)]
const NO_HOOKS: &str = "/dev/null";
#[cfg(windows)]
const NO_HOOKS: &str = "NUL";

/// Options that switch off every program git could start on its own during checkout, commit, merge or status,
/// whatever the repository configures (docs/worktrees.md "Hardened git"). They come after the caller's options,
/// so they win.
const HARDENING: [&str; 16] = [
    "core.fsmonitor=false",
    "core.pager=cat",
    // `:` is git's "no editor": a merge or commit never opens one.
    "core.editor=:",
    "sequence.editor=:",
    // No transport at all (a lazy fetch of a partial clone, a submodule): no ssh, no remote helper, no `ext::`.
    "protocol.allow=never",
    // An empty value resets the list of credential helpers.
    "credential.helper=",
    // No gpg/ssh signing program, and no signature check that would start one.
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "merge.verifySignatures=false",
    "log.showSignature=false",
    // No background `gc`/`maintenance` process that outlives the command and its time limit.
    "gc.auto=0",
    "gc.autoDetach=false",
    "maintenance.auto=false",
    // No checkout recursing into submodules, and no `git status` started inside one to see whether its files
    // changed (each submodule is another repository with its own configuration); commits recorded for a submodule
    // are still compared.
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    "diff.ignoreSubmodules=dirty",
];

/// What a custom merge driver is replaced with: git's own three-way text merge of the same three files (exit
/// status = number of conflicts, markers in the file), so a file whose attributes name a driver still merges.
const TEXT_MERGE: &str = "git merge-file --marker-size=%L -L ours -L base -L theirs %A %O %B";

/// The configuration keys [`Git::scan`] lists: the sections whose subsections name programs or transports.
const SCANNED: &str = "^(filter|merge|protocol)\\.";

/// Sub-commands that may run diff machinery on their own: they get `--no-ext-diff --no-textconv`.
const DIFF_COMMANDS: [&str; 5] = ["diff", "log", "show", "diff-tree", "format-patch"];

/// Identity variables that name who commits; they redirect nothing and are kept.
const KEPT_GIT_VARS: [&str; 6] = [
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
];

/// Why a git command did not give an answer.
#[derive(Debug)]
pub enum GitError {
    /// `git` could not be started (not installed, not on PATH).
    Spawn(std::io::Error),
    /// It ran past its time limit and was killed.
    Timeout(Duration),
    /// It printed more than [`MAX_OUTPUT`] bytes on one stream.
    TooLarge,
    /// The repository configures a driver or transport whose name a `-c` option cannot switch off.
    Unsafe(String),
    /// It exited with a failure status.
    Failed { status: Option<i32>, stderr: String },
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Spawn(e) => write!(
                f,
                "git could not be started ({e}); install git and make sure it is on PATH"
            ),
            GitError::Timeout(d) => write!(f, "git did not finish within {} s and was stopped", d.as_secs()),
            GitError::TooLarge => write!(f, "git printed more than {MAX_OUTPUT} bytes"),
            GitError::Unsafe(what) => write!(
                f,
                "the git configuration defines {what:?}, a driver or transport the toolkit cannot switch off, so \
                 it ran no git command; remove that section from the git config (git config --remove-section)"
            ),
            GitError::Failed { status, stderr } => {
                let s = stderr.trim();
                let s = if s.is_empty() { "no message" } else { s };
                match status {
                    Some(c) => write!(f, "git exited with status {c}: {s}"),
                    None => write!(f, "git was stopped by a signal: {s}"),
                }
            }
        }
    }
}

/// One finished git command.
#[derive(Debug, Clone)]
pub struct GitOutput {
    /// The exit status (`None` = killed by a signal).
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl GitOutput {
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }

    /// stdout as text with the trailing newline removed.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout)
            .trim_end_matches(['\n', '\r'])
            .to_string()
    }
}

/// The environment a git child gets: the parent's, minus every `GIT_*` variable except the identity ones.
/// Exposed for the tests and for docs/worktrees.md's list.
pub fn scrubbed(parent: impl IntoIterator<Item = (String, String)>) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = parent.into_iter().filter(|(k, _)| !redirects(k)).collect();
    env.extend(FORCED.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

/// Whether a variable is one git reads to find another repository, index, object store, config or program
/// (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES`,
/// `GIT_CONFIG*`, `GIT_EXEC_PATH`, ...): every `GIT_*` name but the identity ones.
pub fn redirects(name: &str) -> bool {
    name.to_ascii_uppercase().starts_with("GIT_") && !KEPT_GIT_VARS.contains(&name)
}

/// Set for every git child: no credential prompt, and the C locale so messages and quoting are the same everywhere.
const FORCED: [(&str, &str); 2] = [("GIT_TERMINAL_PROMPT", "0"), ("LC_ALL", "C")];

/// A hardened git runner rooted at one directory (`git -C <dir>`).
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    timeout: Duration,
    extra_env: Vec<(String, String)>,
    /// Extra `-c key=value` options (the toolkit's own commits: identity fallback, no signing prompt).
    config: Vec<String>,
    /// The environment the child inherits before scrubbing: this process's, unless a test supplies one.
    parent_env: Option<Vec<(String, String)>>,
    /// The program started: `git`, unless a test supplies a stand-in (to prove the time and output limits).
    program: String,
    /// A temporary index of the toolkit's own (`GIT_INDEX_FILE`, set after scrubbing): the one redirection the
    /// toolkit sets itself, so a checkpoint of a worktree never touches the index the person or agent uses.
    index_file: Option<PathBuf>,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            timeout: DEFAULT_TIMEOUT,
            extra_env: Vec::new(),
            config: Vec::new(),
            parent_env: None,
            program: "git".into(),
            index_file: None,
        }
    }

    /// The same runner starting `program` instead of git (the tests' stand-ins for a slow or talkative git).
    #[cfg(test)]
    pub fn with_program(mut self, program: &str) -> Git {
        self.program = program.into();
        self
    }

    /// The same runner whose children inherit `env` (before scrubbing) instead of this process's environment:
    /// the tests prove the scrubbing on a real git without changing their own process's environment.
    #[cfg(test)]
    pub fn with_parent_env(mut self, env: Vec<(String, String)>) -> Git {
        self.parent_env = Some(env);
        self
    }

    /// The same runner with another time limit.
    pub fn with_timeout(mut self, timeout: Duration) -> Git {
        self.timeout = timeout;
        self
    }

    /// The same runner with one more variable set for its children (after scrubbing; not `GIT_*` redirections).
    pub fn with_env(mut self, key: &str, value: &str) -> Git {
        self.extra_env.push((key.into(), value.into()));
        self
    }

    /// The same runner with one more `-c key=value` option (never `core.hooksPath`/`core.fsmonitor`: the hardening
    /// options come last and win).
    pub fn with_config(mut self, key: &str, value: &str) -> Git {
        self.config.push(format!("{key}={value}"));
        self
    }

    /// The same runner using `index` as git's index instead of the worktree's own (a file the toolkit made and
    /// removes; docs/worktrees.md "Delegates"). An inherited `GIT_INDEX_FILE` is still removed.
    pub fn with_index_file(mut self, index: &Path) -> Git {
        self.index_file = Some(index.to_path_buf());
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The argv git is started with when the repository configures no driver or transport: the hardening
    /// options, `-C dir`, the sub-command and its diff guards.
    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        self.argv_with(&[], args)
    }

    /// The argv with `overrides` (from [`neutralize`]) after the fixed hardening options.
    pub fn argv_with(&self, overrides: &[String], args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec!["--no-pager".into()];
        for c in &self.config {
            v.push("-c".into());
            v.push(c.clone());
        }
        v.push("-c".into());
        v.push(format!("core.hooksPath={NO_HOOKS}"));
        for c in HARDENING.iter().map(|c| c.to_string()).chain(overrides.iter().cloned()) {
            v.push("-c".into());
            v.push(c);
        }
        v.push("-C".into());
        v.push(self.dir.to_string_lossy().into_owned());
        let mut it = args.iter();
        if let Some(sub) = it.next() {
            v.push((*sub).to_string());
            if DIFF_COMMANDS.contains(sub) {
                v.push("--no-ext-diff".into());
                v.push("--no-textconv".into());
            }
        }
        v.extend(it.map(|a| (*a).to_string()));
        v
    }

    /// The `-c` options that switch off the drivers and transports this repository's configuration names now
    /// (every scope git reads, includes followed): one `git config --get-regexp` before each command, so a driver
    /// added between two commands is caught too. It always starts the real git (a test's stand-in program only
    /// replaces the command itself).
    pub fn scan(&self) -> Result<Vec<String>, GitError> {
        let c = self.command_for("git", &[], &["config", "--name-only", "-z", "--get-regexp", SCANNED]);
        let o = self.wait(c)?;
        match o.status {
            Some(0) => neutralize(&o.stdout),
            // No key matched.
            Some(1) => Ok(Vec::new()),
            status => Err(GitError::Failed {
                status,
                stderr: o.stderr,
            }),
        }
    }

    fn command_for(&self, program: &str, overrides: &[String], args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(self.argv_with(overrides, args));
        match &self.parent_env {
            Some(env) => {
                c.env_clear();
                c.envs(scrubbed(env.iter().cloned()));
            }
            None => {
                // Removing (rather than rebuilding the environment) keeps variables that are not UTF-8.
                for (k, _) in std::env::vars_os() {
                    if redirects(&k.to_string_lossy()) {
                        c.env_remove(k);
                    }
                }
                c.envs(FORCED.iter().map(|(k, v)| (*k, *v)));
            }
        }
        c.envs(self.extra_env.iter().filter(|(k, _)| !redirects(k)).cloned());
        if let Some(index) = &self.index_file {
            c.env("GIT_INDEX_FILE", index);
        }
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            c.process_group(0);
        }
        c
    }

    /// Runs git and returns its output whatever the exit status (a failure status is an answer here).
    pub fn output(&self, args: &[&str]) -> Result<GitOutput, GitError> {
        let overrides = self.scan()?;
        self.wait(self.command_for(&self.program, &overrides, args))
    }

    /// Starts `c` and waits for it within the time limit, keeping bounded output.
    fn wait(&self, mut c: Command) -> Result<GitOutput, GitError> {
        let mut child = c.spawn().map_err(GitError::Spawn)?;
        let pid = child.id();
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let read_out = std::thread::spawn(move || bounded(out));
        let read_err = std::thread::spawn(move || bounded(err));
        // The watchdog kills the whole group at the limit; a finished wait tells it to stand down.
        let (done, stop) = mpsc::channel::<()>();
        let limit = self.timeout;
        let watchdog = std::thread::spawn(move || {
            if stop.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                kill_group(pid);
                true
            } else {
                false
            }
        });
        let status = child.wait();
        let _ = done.send(());
        let timed_out = watchdog.join().unwrap_or(false);
        let (stdout, big_out) = read_out.join().unwrap_or_default();
        let (stderr, big_err) = read_err.join().unwrap_or_default();
        if timed_out {
            return Err(GitError::Timeout(limit));
        }
        let status = status.map_err(GitError::Spawn)?;
        if big_out || big_err {
            return Err(GitError::TooLarge);
        }
        Ok(GitOutput {
            status: status.code(),
            stdout,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    /// Runs git; a failure status is [`GitError::Failed`].
    pub fn run(&self, args: &[&str]) -> Result<GitOutput, GitError> {
        let o = self.output(args)?;
        if o.ok() {
            Ok(o)
        } else {
            Err(GitError::Failed {
                status: o.status,
                stderr: o.stderr,
            })
        }
    }

    /// Runs git and returns its trimmed stdout.
    pub fn text(&self, args: &[&str]) -> Result<String, GitError> {
        self.run(args).map(|o| o.text())
    }

    /// Whether git exits 0 (for `--verify`/`--is-ancestor` style questions). Other failures are errors.
    pub fn yes(&self, args: &[&str]) -> Result<bool, GitError> {
        let o = self.output(args)?;
        match o.status {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            status => Err(GitError::Failed {
                status,
                stderr: o.stderr,
            }),
        }
    }
}

/// The `-c` options that switch off what `listing` (NUL-separated key names of `git config --name-only -z
/// --get-regexp`, sections and keys in lower case) names: each filter driver's `clean`, `smudge` and `process`
/// become empty and `required` false (content passes through unchanged), each custom merge driver becomes
/// [`TEXT_MERGE`], each configured `protocol.<name>.allow` becomes `never`. A name that a `-c` option cannot carry
/// (an `=` in it) is refused with [`GitError::Unsafe`]: the command does not run.
pub fn neutralize(listing: &[u8]) -> Result<Vec<String>, GitError> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |o: String| {
        if !out.contains(&o) {
            out.push(o);
        }
    };
    for raw in listing.split(|b| *b == 0).filter(|k| !k.is_empty()) {
        // A name that is not UTF-8 could not be named back exactly: refused below.
        let key = std::str::from_utf8(raw).unwrap_or("");
        if key.is_empty() {
            return Err(GitError::Unsafe(String::from_utf8_lossy(raw).into_owned()));
        }
        let Some((section, rest)) = key.split_once('.') else {
            continue;
        };
        // `section.subsection.key`: the subsection is everything between the first and the last dot.
        let Some((name, _)) = rest.rsplit_once('.') else {
            continue;
        };
        if !matches!(section, "filter" | "merge" | "protocol") {
            continue;
        }
        if name.contains('=') || name.contains('\n') {
            return Err(GitError::Unsafe(format!("{section}.{name}")));
        }
        match section {
            "filter" => {
                for k in ["clean", "smudge", "process"] {
                    push(format!("filter.{name}.{k}="));
                }
                push(format!("filter.{name}.required=false"));
            }
            "merge" => push(format!("merge.{name}.driver={TEXT_MERGE}")),
            _ => push(format!("protocol.{name}.allow=never")),
        }
    }
    Ok(out)
}

/// Reads a stream to its end, keeping at most [`MAX_OUTPUT`] bytes; `true` = there was more.
fn bounded(mut r: impl Read) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let mut over = false;
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                if n > room {
                    over = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    (kept, over)
}

#[cfg(unix)]
fn kill_group(pid: u32) {
    // SAFETY: a plain kill(2) on the child's own process group (it was started with process_group(0)).
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}
