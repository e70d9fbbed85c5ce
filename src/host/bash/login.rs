//! The user's login-shell PATH (docs/spec/host-tools.md §Bash, docs/host.md "Bash"): Pi is often started from a
//! desktop launcher or a service whose PATH lacks what the user's profile adds (`~/.cargo/bin`, nvm, Homebrew), so
//! Bash asks the user's own shell (`$SHELL`, zsh on macOS) once per process, as a login and interactive shell
//! (`-l -i -c`, so both the profile and the rc file run), and injects what it prints.
//!
//! The probe starts when a session starts ([`LoginPath::prewarm`], on a thread of its own), not on the first Bash
//! call: a profile costs 0.3–2 s on real machines, and the model's first answer takes longer than that, so the first
//! call finds the PATH ready. The same thread also starts the shell watchdog (src/shell/watchdog.rs), which the
//! first command would otherwise spawn on its own path (docs/host.md "Bash": that spawn, not the probe, was most of
//! a first call's extra time when the profile is quick).
//!
//! Best effort and bounded: a profile that hangs or fails costs the probe at most [`PROBE_BOUND`], once, and
//! commands then run with the inherited PATH. A call waits for a prewarmed probe still running only until the probe
//! is [`CALL_WAIT`] old (a usual profile is done by then); after that the call runs with the inherited PATH and the
//! calls after the probe's end get its PATH. So a hanging profile (a shell start blocked on a lock, say) delays no
//! command by seconds. The probe runs in a session of its own (`setsid`): an interactive shell with a controlling
//! terminal would try to take the terminal's foreground and stop on SIGTTOU.
//!
//! A profile slower than that (or one that hangs) would still cost every process's first call its wait, so the
//! probe's answer is also remembered on disk (`<agentDir>/pi-codex-toolkit/login-path.json`, [`LoginPath::prewarm_with`]):
//! a later process whose shell, `HOME`, inherited PATH and profile files (path, size, modification time) are the
//! same uses the remembered PATH for calls made while its own probe still runs, and waits for nothing. A profile
//! edit changes the key, so a stale answer is never used; the probe still runs every process and rewrites the file
//! when its answer differs.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::OnceCell;

/// How long the one probe may take.
pub const PROBE_BOUND: Duration = Duration::from_secs(5);

/// How long an overrun probe's processes get after SIGTERM to run their exit traps, before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// How old a prewarmed probe may be before a Bash call stops waiting for it (see the module docs).
pub const CALL_WAIT: Duration = Duration::from_secs(1);

/// The largest remembered-PATH file read back (a PATH is a few KiB; anything bigger is not ours).
const REMEMBERED_MAX: u64 = 64 * 1024;

/// The profile files a login and interactive bash, zsh or POSIX shell may read; their size and modification time
/// are part of the remembered PATH's key.
const PROFILE_FILES: &[&str] = &[
    "/etc/profile",
    "/etc/bash.bashrc",
    "/etc/bashrc",
    "/etc/zshenv",
    "/etc/zsh/zshenv",
    "/etc/zprofile",
    "/etc/zsh/zprofile",
    "/etc/zshrc",
    "/etc/zsh/zshrc",
    "~/.profile",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bashrc",
    "~/.zshenv",
    "~/.zprofile",
    "~/.zshrc",
    "~/.zlogin",
];

/// Marks the PATH line among whatever the profile prints.
const SENTINEL: &str = "__PCT_LOGIN_PATH__=";

/// Whether `shell` understands `-l` (a login shell) the way bash does.
pub fn supports_login(shell: &str) -> bool {
    let base = std::path::Path::new(shell)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    matches!(base, "bash" | "zsh" | "ksh" | "mksh" | "dash" | "sh")
}

/// The probe's arguments before its script: `-l -i -c` for bash and zsh (the rc file is where nvm and friends add
/// to PATH), `-l -c` for the other POSIX shells.
fn probe_flags(shell: &str) -> &'static [&'static str] {
    let base = std::path::Path::new(shell)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    if matches!(base, "bash" | "zsh") {
        &["-l", "-i", "-c"]
    } else {
        &["-l", "-c"]
    }
}

/// The shell to ask: `$SHELL` when it is an absolute path to an existing shell that can be a login shell, else
/// `/bin/bash`, else `/bin/sh` (a fish or nushell user's PATH then comes from bash's profile, or stays inherited).
pub fn user_shell(env_shell: Option<&str>) -> Option<String> {
    let usable = |s: &str| s.starts_with('/') && supports_login(s) && std::fs::metadata(s).is_ok_and(|m| m.is_file());
    if let Some(s) = env_shell.filter(|s| usable(s)) {
        return Some(s.to_string());
    }
    ["/bin/bash", "/bin/sh"]
        .into_iter()
        .find(|s| usable(s))
        .map(str::to_string)
}

/// One cached probe: the PATH a given shell prints, asked at most once.
pub struct LoginPath {
    shell: Option<String>,
    bound: Duration,
    cell: OnceCell<Option<String>>,
    /// When [`LoginPath::prewarm`] started the probe.
    prewarmed: OnceLock<Instant>,
    /// The home folder whose profile files key the remembered PATH.
    home: Option<PathBuf>,
    /// The PATH an earlier process's probe printed under the same key (see the module docs).
    remembered: OnceLock<String>,
}

impl LoginPath {
    /// A probe of `shell` (`None` = nothing to ask: the inherited PATH stays).
    pub fn new(shell: Option<String>, bound: Duration) -> Arc<Self> {
        Self::new_in(shell, bound, std::env::var_os("HOME").map(PathBuf::from))
    }

    /// [`LoginPath::new`] with an explicit home folder (tests).
    pub fn new_in(shell: Option<String>, bound: Duration, home: Option<PathBuf>) -> Arc<Self> {
        Arc::new(Self {
            shell,
            bound,
            cell: OnceCell::new(),
            prewarmed: OnceLock::new(),
            home,
            remembered: OnceLock::new(),
        })
    }

    /// The process-wide probe of the user's shell ([`user_shell`] of `$SHELL`).
    pub fn global() -> Arc<Self> {
        static G: OnceLock<Arc<LoginPath>> = OnceLock::new();
        G.get_or_init(|| LoginPath::new(user_shell(std::env::var("SHELL").ok().as_deref()), PROBE_BOUND))
            .clone()
    }

    /// The shell this probe asks.
    pub fn shell(&self) -> Option<&str> {
        self.shell.as_deref()
    }

    /// Starts the probe now on a thread of its own (no async runtime needed) unless it already ran or runs; a
    /// later [`LoginPath::get`] waits only for what is left of it.
    pub fn prewarm(self: &Arc<Self>) {
        self.prewarm_with(None);
    }

    /// [`LoginPath::prewarm`] that also reads and refreshes the remembered PATH in `file` (see the module docs).
    pub fn prewarm_with(self: &Arc<Self>, file: Option<PathBuf>) {
        if self.cell.initialized() || self.prewarmed.get().is_some() {
            return;
        }
        let key = file.as_ref().and_then(|_| self.key());
        if let (Some(f), Some(k)) = (&file, &key) {
            if let Some(p) = read_remembered(f, k) {
                let _ = self.remembered.set(p);
            }
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("pct-login-path".into())
            .spawn(move || {
                // The first command needs the watchdog too; starting it here keeps its spawn off that call's path.
                crate::shell::watchdog::ensure_started();
                if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    let probed = rt.block_on(me.get());
                    if let (Some(f), Some(k), Some(p)) = (&file, &key, &probed) {
                        if me.remembered.get() != Some(p) {
                            write_remembered(f, k, p);
                        }
                    }
                }
            });
        if spawned.is_ok() {
            let _ = self.prewarmed.set(Instant::now());
        }
        // no thread: the first Bash call probes instead
        drop(spawned);
    }

    /// The PATH for a Bash call: the probe's when it is done; while a prewarmed probe runs, waits for it only until it
    /// is [`CALL_WAIT`] old, then `None` (the inherited PATH) for this call; without a prewarm, probes now ([`get`]).
    ///
    /// [`get`]: LoginPath::get
    pub async fn for_call(&self) -> Option<String> {
        self.for_call_within(CALL_WAIT).await
    }

    /// [`LoginPath::for_call`] with an explicit wait (tests).
    pub async fn for_call_within(&self, wait: Duration) -> Option<String> {
        if let Some(done) = self.cell.get() {
            return done.clone();
        }
        if let Some(p) = self.remembered.get() {
            return Some(p.clone());
        }
        match self.prewarmed.get() {
            Some(at) => tokio::time::timeout(wait.saturating_sub(at.elapsed()), self.get())
                .await
                .unwrap_or(None),
            None => self.get().await,
        }
    }

    /// The remembered PATH's key: the shell, `HOME`, the inherited PATH and each profile file's size and
    /// modification time (`-` for a missing one). `None` without a shell.
    fn key(&self) -> Option<String> {
        let shell = self.shell.as_deref()?;
        let home = self.home.as_deref();
        let mut key = format!(
            "{shell}\n{}\n{}\n",
            home.map(|h| h.display().to_string()).unwrap_or_default(),
            std::env::var("PATH").unwrap_or_default()
        );
        for f in PROFILE_FILES {
            let path = match (f.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => h.join(rest),
                (Some(_), None) => continue,
                (None, _) => PathBuf::from(f),
            };
            let stamp = std::fs::metadata(&path).ok().map(|m| {
                let t = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                format!("{} {}", m.len(), t.map(|t| t.as_nanos()).unwrap_or(0))
            });
            key.push_str(&format!("{}={}\n", path.display(), stamp.as_deref().unwrap_or("-")));
        }
        Some(key)
    }

    /// Whether the probe has answered (a PATH, or `None` after a failure or an overrun): a call then waits for
    /// nothing. Lets a test wait for a prewarmed probe on the condition instead of a guessed delay.
    pub fn probed(&self) -> bool {
        self.cell.initialized()
    }

    /// The probed PATH (`None` when there is no shell to ask, the probe failed, or it overran its bound).
    pub async fn get(&self) -> Option<String> {
        self.cell
            .get_or_init(|| async {
                match &self.shell {
                    Some(s) => probe(s.clone(), self.bound).await,
                    None => None,
                }
            })
            .await
            .clone()
    }
}

/// Runs `<shell> -l [-i] -c` printing PATH behind a sentinel, in a new session; kills the probe's whole process
/// group if it overruns.
pub async fn probe(shell: String, bound: Duration) -> Option<String> {
    if !supports_login(&shell) {
        return None;
    }
    let script = format!("printf '\\n{SENTINEL}%s\\n' \"$PATH\"");
    let mut cmd = tokio::process::Command::new(&shell);
    cmd.args(probe_flags(&shell))
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env(
            crate::shell::watchdog::MARKER_VAR,
            crate::shell::watchdog::probe_marker(),
        )
        .kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec and only calls setsid(2), which is
    // async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    // The watchdog must run before the probe does: a Pi killed while its profile still runs (a Task delegate whose
    // parent died, docs/agents.md) would otherwise leave the probe's session behind.
    crate::shell::watchdog::ensure_started();
    let mut child = cmd.spawn().ok()?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    let mut out = child.stdout.take()?;
    let read = async {
        let mut buf = Vec::new();
        // a profile that floods output is cut off: the PATH line comes last and is short
        let _ = (&mut out).take(1 << 20).read_to_end(&mut buf).await;
        let _ = child.wait().await;
        buf
    };
    let buf = match tokio::time::timeout(bound, read).await {
        Ok(b) => b,
        Err(_) => {
            // SIGTERM first: a profile step that holds a lock releases it in its EXIT trap (pyenv's rehash does);
            // a SIGKILL alone would leave the lock behind, and every later login shell would wait on it until its
            // own timeout (a minute for pyenv), so every later probe would overrun too. Then SIGKILL what is left
            // (an interactive shell ignores SIGTERM).
            crate::shell::process::signal_group(pgid, libc::SIGTERM);
            let _ = tokio::time::timeout(TERM_GRACE, async {
                let _ = child.wait().await;
                while crate::shell::process::group_exists(pgid) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
            crate::shell::process::signal_group(pgid, libc::SIGKILL);
            return None;
        }
    };
    parse(&String::from_utf8_lossy(&buf))
}

/// The remembered PATH in `file` when its key is `key` (a missing, oversized or foreign file: `None`).
fn read_remembered(file: &Path, key: &str) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(REMEMBERED_MAX)
        .read_to_string(&mut text)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    if v.get("key")?.as_str()? != key {
        return None;
    }
    let p = v.get("path")?.as_str()?;
    (!p.is_empty() && !p.contains('\0')).then(|| p.to_string())
}

/// Best effort: writes `{key, path}` to a temporary file next to `file`, then renames it over `file`, so a reader
/// sees the old or the new answer, never half of one.
fn write_remembered(file: &Path, key: &str, path: &str) {
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    // A name of its own per write (two sessions of one process may save at once), renamed over the file whole.
    let tmp = dir.join(format!(".login-path.{}.tmp", uuid::Uuid::new_v4().simple()));
    let body = serde_json::json!({ "key": key, "path": path }).to_string();
    if std::fs::write(&tmp, body)
        .and_then(|()| std::fs::rename(&tmp, file))
        .is_err()
    {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The PATH after the last sentinel, if it is a plausible non-empty value.
fn parse(out: &str) -> Option<String> {
    let line = out.lines().rev().find_map(|l| l.strip_prefix(SENTINEL))?;
    let line = line.trim_end_matches('\r');
    (!line.is_empty() && !line.contains('\0')).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_shell_is_dollar_shell_when_usable() {
        assert_eq!(user_shell(Some("/bin/sh")).as_deref(), Some("/bin/sh"));
        let fallback = user_shell(None);
        assert!(fallback.as_deref() == Some("/bin/bash") || fallback.as_deref() == Some("/bin/sh"));
        // relative, missing, or not a login-capable shell: the fallback
        for bad in ["sh", "/nonexistent/zsh", "/usr/bin/fish", ""] {
            assert_eq!(user_shell(Some(bad)), fallback, "{bad}");
        }
        assert_eq!(probe_flags("/bin/zsh"), ["-l", "-i", "-c"]);
        assert_eq!(probe_flags("/usr/bin/dash"), ["-l", "-c"]);
    }

    #[test]
    fn parse_takes_the_sentinel_line_only() {
        assert_eq!(parse("motd\n__PCT_LOGIN_PATH__=/a:/b\n"), Some("/a:/b".into()));
        assert_eq!(parse("no sentinel"), None);
        assert_eq!(parse("__PCT_LOGIN_PATH__=\n"), None);
        assert!(supports_login("/bin/bash") && !supports_login("/usr/bin/fish"));
    }

    #[tokio::test]
    async fn probe_reads_path_and_a_hanging_profile_is_bounded() {
        let p = probe("/bin/sh".into(), PROBE_BOUND).await;
        assert!(p.is_some_and(|p| p.contains('/')));
        // a "shell" whose login start never ends: it records its pid, then sleeps far past any test timeout
        let dir = tempfile::tempdir().unwrap();
        let sh = dir.path().join("sh");
        let pidfile = dir.path().join("pid");
        std::fs::write(
            &sh,
            format!("#!/bin/sh\necho $$ > '{}'\nexec sleep 3000\n", pidfile.display()),
        )
        .unwrap();
        std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(probe(sh.display().to_string(), Duration::from_secs(1)).await, None);
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        // the overrun probe's group was killed: the sleeping "profile" is gone (reaped or a zombie)
        let mut gone = false;
        for _ in 0..200 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty()
                || stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone, "the probe's process survived its bound");
    }

    #[tokio::test]
    async fn an_overrun_profile_gets_to_release_its_lock_before_it_is_killed() {
        // A profile step (bash, as pyenv's rehash) that takes a lock file and removes it in its EXIT trap, then hangs.
        let dir = tempfile::tempdir().unwrap();
        let sh = dir.path().join("sh");
        let lock = dir.path().join("lock");
        let script = format!(
            "#!/bin/sh\nbash -c 'echo > \"{0}\"; trap \"rm -f {0}\" EXIT; sleep 3000' &\nwait\n",
            lock.display()
        );
        std::fs::write(&sh, script).unwrap();
        std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(probe(sh.display().to_string(), Duration::from_secs(1)).await, None);
        assert!(
            !lock.exists(),
            "the overrun probe was killed before its profile could release its lock"
        );
    }
}
