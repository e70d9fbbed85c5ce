//! Process-level helpers: the shell Pi resolves, the env overlay, and POSIX process-group signalling.

use super::error::{ShellCode, ShellError};
use serde_json::Value;

/// The shell Pi resolves with `getShellConfig()`: `{shell, args, commandTransport?: "argv" | "stdin"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellConfig {
    /// Executable path of the shell.
    pub shell: String,
    /// Arguments before the command (e.g. `["-c"]`).
    pub args: Vec<String>,
    /// `true` when the command is written to stdin (which is then closed) instead of appended to argv.
    pub stdin_transport: bool,
}

impl ShellConfig {
    /// Parses the object `getShellConfig()` returns.
    pub fn from_value(v: &Value) -> Result<Self, ShellError> {
        let bad = || {
            ShellError::new(ShellCode::ShellUnavailable, "No usable local shell was resolved (Pi's getShellConfig() gave no shell); Shell Sessions cannot run commands.")
        };
        let shell = v
            .get("shell")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(bad)?
            .to_string();
        let args = match v.get("args") {
            None | Some(Value::Null) => vec![],
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(String::from).ok_or_else(bad))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad()),
        };
        let stdin_transport = match v.get("commandTransport").and_then(Value::as_str) {
            None | Some("argv") => false,
            Some("stdin") => true,
            Some(_) => return Err(bad()),
        };
        Ok(Self {
            shell,
            args,
            stdin_transport,
        })
    }

    /// `/bin/bash -c` when present, else `sh -c` (what Pi resolves on Unix; used by tests and as a fallback).
    pub fn default_posix() -> Self {
        let shell = if std::path::Path::new("/bin/bash").exists() {
            "/bin/bash"
        } else {
            "/bin/sh"
        };
        Self {
            shell: shell.into(),
            args: vec!["-c".into()],
            stdin_transport: false,
        }
    }
}

/// Validates the invocation hook's `context().env` overlay: an object of string values with sane names.
/// Refused before anything is spawned.
pub fn parse_env_overlay(v: Option<&Value>) -> Result<Vec<(String, String)>, ShellError> {
    let bad = |why: &str| {
        ShellError::new(
            ShellCode::SpawnFailed,
            format!("The invocation context env overlay is invalid ({why}); nothing was started. This comes from the embedder's context hook, not from the command."),
        )
    };
    match v {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Object(m)) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, val) in m {
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    return Err(bad("a variable name is empty or contains '=' or NUL"));
                }
                let Some(s) = val.as_str() else {
                    return Err(bad("every value must be a string"));
                };
                if s.contains('\0') {
                    return Err(bad("a value contains NUL"));
                }
                out.push((k.clone(), s.to_string()));
            }
            Ok(out)
        }
        Some(_) => Err(bad("env must be an object of strings")),
    }
}

/// Sends `sig` to the whole process group `pgid`. Returns whether the group existed.
pub fn signal_group(pgid: i32, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory; `pgid > 1` so it never signals every process.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

/// Whether any process, zombies included, is still in group `pgid` (one cheap syscall).
pub fn group_exists(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks existence; plain integers, no memory.
    let r = unsafe { libc::kill(-pgid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether a live process remains in group `pgid`. Zombies do not count: a dead descendant orphaned to an init
/// that reaps lazily (some container inits take seconds) must not keep a job "running" or make a stop
/// unconfirmable. `kill(-pgid, 0)` answers the common case cheaply; only a positive answer scans `/proc`.
pub fn group_alive(pgid: i32) -> bool {
    group_exists(pgid) && group_has_live_member(pgid)
}

/// Scans `/proc` for a non-zombie member of `pgid` (true when `/proc` cannot be read: assume alive).
pub fn group_has_live_member(pgid: i32) -> bool {
    live_member_in_proc(pgid).unwrap_or(true)
}

/// Scans `/proc` for a non-zombie process whose process group is `pgid`. `None` when `/proc` is unreadable.
fn live_member_in_proc(pgid: i32) -> Option<bool> {
    let mut found = false;
    each_proc(|_, st| {
        found |= st.pgrp == pgid && st.live;
        !found
    })?;
    Some(found)
}

/// The fields of `/proc/<pid>/stat` (or `/proc/self/task/<tid>/stat`) the toolkit reads: one parser for the tree
/// kill, the liveness checks and the CPU figures of running work (docs/render.md "Running work").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Not a zombie or dead (state `Z` / `X`).
    pub live: bool,
    /// Field 4.
    pub ppid: i32,
    /// Field 5: the process group.
    pub pgrp: i32,
    /// Fields 14 + 15: user and system CPU time, in clock ticks.
    pub cpu_ticks: u64,
    /// Field 22: the start time, in clock ticks since boot.
    pub start: u64,
}

impl ProcStat {
    /// Parses the text of a stat file. The command (field 2) may hold spaces and parentheses, so the fields are
    /// read after its last `)`.
    pub fn parse(stat: &str) -> Option<ProcStat> {
        let rest = stat.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        // f[0] is field 3 (state): field n is f[n - 3].
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
        Some(ProcStat {
            live: !matches!(f.first().copied(), Some("Z") | Some("X")),
            ppid: f.get(1)?.parse().ok()?,
            pgrp: f.get(2)?.parse().ok()?,
            cpu_ticks: num(11)? + num(12)?,
            start: num(19)?,
        })
    }

    /// Reads and parses a stat file (None when it is gone or unreadable).
    pub fn read(path: &str) -> Option<ProcStat> {
        ProcStat::parse(&std::fs::read_to_string(path).ok()?)
    }
}

/// Milliseconds per clock tick of `/proc`'s CPU times (`sysconf(_SC_CLK_TCK)`), None where it is unknown.
pub fn ms_per_tick() -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| 1000.0 / hz as f64)
}

/// Calls `f(pid, stat)` for every process in `/proc` until it returns false. `None` when `/proc` is unreadable.
fn each_proc(mut f: impl FnMut(i32, &ProcStat) -> bool) -> Option<()> {
    let dir = std::fs::read_dir("/proc").ok()?;
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        // A process that exited while we looked has no stat file any more: skipped.
        if let Some(st) = ProcStat::read(&format!("/proc/{pid}/stat")) {
            if !f(pid, &st) {
                break;
            }
        }
    }
    Some(())
}

/// The CPU time (user + system, milliseconds) of every process now in each group of `pgids`, from one scan of
/// `/proc`: a group with no process (or where `/proc` cannot be read) is absent. The CPU of processes that already
/// exited is not counted (Linux keeps it only in their reaped parent's child totals).
pub fn group_cpu_ms(pgids: &[i32]) -> std::collections::HashMap<i32, f64> {
    let mut ticks: std::collections::HashMap<i32, u64> = std::collections::HashMap::new();
    if pgids.iter().any(|g| *g > 1) {
        let _ = each_proc(|_, st| {
            if pgids.contains(&st.pgrp) {
                *ticks.entry(st.pgrp).or_default() += st.cpu_ticks;
            }
            true
        });
    }
    let Some(ms) = ms_per_tick() else {
        return std::collections::HashMap::new();
    };
    ticks.into_iter().map(|(g, t)| (g, t as f64 * ms)).collect()
}

/// The conventional name of a signal number (`SIGTERM`), or `SIG<n>`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("SIG{sig}"),
    };
    name.to_string()
}

/// Asks Linux for a 1 MiB output pipe (the unprivileged maximum by default): fewer reads and wake-ups under
/// floods. Best effort; the kernel's own limit wins and other systems keep their default.
pub fn grow_pipe(fd: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ takes an integer argument and only resizes the pipe behind `fd`, which the borrow keeps open.
    unsafe {
        libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Pids of live processes whose environment carries the job marker [`super::watchdog::MARKER_VAR`] with a value
/// `matches` accepts (docs/shell.md "Processes that leave the group"). Every job inherits its marker, so this finds
/// descendants that left the process group (`setsid`, double forks) unless they cleared their environment.
/// Processes whose environment cannot be read (another user's) are skipped; this process is never listed.
pub fn marked_pids(matches: impl Fn(&str) -> bool) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid != me && has_marker(pid, &matches) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// Whether `pid`'s environment has a marker `matches` accepts (false for zombies: their environment is empty).
fn has_marker(pid: i32, matches: &impl Fn(&str) -> bool) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let key = super::watchdog::MARKER_VAR.as_bytes();
    env.split(|b| *b == 0).any(|kv| {
        kv.len() > key.len()
            && kv.starts_with(key)
            && kv[key.len()] == b'='
            && std::str::from_utf8(&kv[key.len() + 1..]).is_ok_and(matches)
    })
}

/// Sends `sig` to each marked pid, re-checking the marker through a pidfd first so a pid reused by an unrelated
/// process since the scan is never signalled (plain `kill` after the same re-check where pidfds are missing).
pub fn signal_marked(pids: &[i32], matches: impl Fn(&str) -> bool, sig: i32) {
    for &pid in pids {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: pidfd_open(2) takes a pid and flags; the returned descriptor is closed below.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
            if fd >= 0 {
                if has_marker(pid, &matches) {
                    // SAFETY: `fd` is the pidfd just opened; a null siginfo is allowed and means a plain kill.
                    unsafe { libc::syscall(libc::SYS_pidfd_send_signal, fd, sig, std::ptr::null::<u8>(), 0) };
                }
                // SAFETY: `fd` is the pidfd this loop opened and nothing else uses it.
                unsafe { libc::close(fd) };
                continue;
            }
        }
        if has_marker(pid, &matches) {
            // SAFETY: kill(2) takes plain integers; the marker was re-checked just before.
            unsafe { libc::kill(pid, sig) };
        }
    }
}

/// Pids (other than this process) holding a descriptor to one of the pipes with these inode numbers: the
/// processes that keep a job's output open after leaving its group without its marker (named, never signalled:
/// nothing proves they belong to the job).
pub fn pipe_holders(inodes: &[u64]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let wanted: Vec<String> = inodes
        .iter()
        .filter(|i| **i != 0)
        .map(|i| format!("pipe:[{i}]"))
        .collect();
    let mut out = Vec::new();
    if wanted.is_empty() {
        return out;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| t.to_str().is_some_and(|t| wanted.iter().any(|w| w == t)))
        });
        if holds {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// The inode number of a pipe end (0 when it cannot be read), to recognise its holders in `/proc/<pid>/fd`.
pub fn pipe_inode(fd: &impl std::os::fd::AsRawFd) -> u64 {
    // SAFETY: `libc::stat` is plain old data, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open for the borrow of `fd`; `st` is a valid, writable stat buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0 {
        st.st_ino
    } else {
        0
    }
}

/// A process as `/proc/<pid>/stat` names it: its pid and start time (clock ticks since boot), so a pid reused by
/// an unrelated process later is never taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcId {
    /// The process id.
    pub pid: i32,
    /// Field 22 of `/proc/<pid>/stat`.
    pub start: u64,
}

/// `(ppid, start time, live)` of `pid` from `/proc/<pid>/stat` (`live` = not a zombie).
fn stat_of(pid: i32) -> Option<(i32, u64, bool)> {
    let st = ProcStat::read(&format!("/proc/{pid}/stat"))?;
    Some((st.ppid, st.start, st.live))
}

/// Whether `p` is still the same live process.
pub fn proc_alive(p: ProcId) -> bool {
    stat_of(p.pid).is_some_and(|(_, start, live)| live && start == p.start)
}

/// Every live descendant of the processes in `roots` (the roots included when alive), by parent links in `/proc`.
/// A job's shell is made a child subreaper (docs/host.md "Tree kill"), so a descendant that double-forked or called
/// `setsid` is still below it, marker or not, for as long as the shell lives.
pub fn descendants(roots: &[i32]) -> Vec<ProcId> {
    let me = std::process::id() as i32;
    let mut children: std::collections::HashMap<i32, Vec<(i32, u64, bool)>> = std::collections::HashMap::new();
    let mut own: std::collections::HashMap<i32, (u64, bool)> = std::collections::HashMap::new();
    let _ = each_proc(|pid, st| {
        children.entry(st.ppid).or_default().push((pid, st.start, st.live));
        own.insert(pid, (st.start, st.live));
        true
    });
    let mut out = Vec::new();
    let mut queue: Vec<i32> = roots.iter().copied().filter(|r| *r > 1 && *r != me).collect();
    let mut seen: std::collections::HashSet<i32> = queue.iter().copied().collect();
    while let Some(pid) = queue.pop() {
        if let Some(&(start, true)) = own.get(&pid) {
            out.push(ProcId { pid, start });
        }
        for &(c, _, _) in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
            if c != me && seen.insert(c) {
                queue.push(c);
            }
        }
    }
    out.sort_unstable_by_key(|p| p.pid);
    out
}

/// Sends `sig` to each process still the same as when it was found (start time re-checked right before).
pub fn signal_procs(procs: &[ProcId], sig: i32) {
    for &p in procs {
        if proc_alive(p) {
            // SAFETY: kill(2) takes plain integers; the pid's start time was re-checked just before.
            unsafe { libc::kill(p.pid, sig) };
        }
    }
}

/// Makes the calling process a child subreaper (Linux): orphaned descendants are re-parented to it instead of
/// init, so they stay findable below it. Meant for a job's shell between fork and exec (the flag survives exec).
/// Elsewhere a no-op.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let (on, unused): (libc::c_ulong, libc::c_ulong) = (1, 0);
        // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) takes integer arguments and only sets a flag of this process; it
        // is async-signal-safe, so it may run between fork and exec.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on, unused, unused, unused);
        }
    }
}

#[cfg(test)]
mod stat_tests {
    use super::*;

    #[test]
    fn a_stat_line_parses_after_the_last_parenthesis() {
        // A command name with spaces and parentheses must not shift the fields.
        let line =
            "4242 (a b) (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        let st = ProcStat::parse(line).unwrap();
        assert_eq!(
            (st.ppid, st.pgrp, st.cpu_ticks, st.start, st.live),
            (1, 4242, 10, 98765, true)
        );
        let zombie = line.replacen(") S ", ") Z ", 1);
        assert!(!ProcStat::parse(&zombie).unwrap().live);
        assert_eq!(ProcStat::parse("12 (x) S 1"), None, "a cut line is not guessed");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn group_cpu_counts_a_busy_group_and_omits_an_empty_one() {
        use std::os::unix::process::CommandExt;
        // A child in a group of its own that burns CPU until killed.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        let mut cpu = 0.0;
        for _ in 0..500 {
            cpu = group_cpu_ms(&[pgid]).get(&pgid).copied().unwrap_or(0.0);
            if cpu > 0.0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(cpu > 0.0, "the busy group's CPU time was never seen");
        assert!(
            !group_cpu_ms(&[pgid]).contains_key(&pgid),
            "a group with no process has no figure"
        );
        assert!(group_cpu_ms(&[]).is_empty());
    }
}
