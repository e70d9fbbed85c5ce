//! The per-process watchdog (docs/shell.md "When Node exits"): when the Node process ends by any means — a normal
//! exit, an uncaught throw, SIGTERM or SIGKILL — every running job's process group and every process carrying
//! this process's job marker is killed and every recovery file this process created is deleted.
//!
//! An exit hook cannot do this (SIGKILL skips it) and `PR_SET_PDEATHSIG` fires when the forking *thread* exits
//! (tokio's blocking threads come and go), so it is not a parent-death signal for Node. Instead one small process
//! is started lazily, at the first job or recovery file, holding the read end of a pipe whose write end only this
//! process holds (close-on-exec, so jobs never inherit it). The kernel closes that write end however Node dies; the
//! watchdog reads EOF and cleans up.
//!
//! Hand-written rather than a crate: the watchdog is a POSIX `sh` program because the package ships only the
//! addon (no helper executable to exec), and a forked copy of the multi-threaded Node process may not run
//! arbitrary Rust code. The protocol is one line per fact on the watchdog's stdin:
//! `g <pgid>` a job's process group is live, `u <pgid>` it is gone, `f <path>` a recovery file was created.
//! Processes are found at exit by group and by the `PCT_JOB=<instance>:...` marker in their environment
//! ([`MARKER_VAR`]), which also finds descendants that left the group (`setsid`).

use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

/// The environment variable every job inherits: `<instance>:<manager>:<job>` (see [`instance`]).
pub const MARKER_VAR: &str = "PCT_JOB";

/// The [`MARKER_VAR`] value of the login-PATH probe (src/host/bash/login.rs): `<instance>-probe`. When Node ends,
/// the watchdog stops jobs at once but leaves the probe up to 5 s to end by itself (then SIGTERM, a second, SIGKILL):
/// a profile stopped mid-way can leave its locks behind even with its exit trap, since pyenv's rehash takes its lock
/// before it sets that trap, and every later login shell then waits a minute for it (docs/shell.md "When Node exits").
pub fn probe_marker() -> String {
    format!("{}-probe", instance())
}

/// The watchdog program (`$1` = this process's instance id). It ignores the signals a terminal or a process-group
/// kill would send, so it outlives the Node process it guards; it exits after the cleanup.
const SCRIPT: &str = r#"trap '' HUP INT TERM QUIT PIPE
inst=$1
nl='
'
groups=
files=
while IFS= read -r line; do
  case $line in
    "g "*) groups="$groups ${line#g }" ;;
    "u "*) gone=${line#u }; keep=; for g in $groups; do [ "$g" = "$gone" ] || keep="$keep $g"; done; groups=$keep ;;
    "f "*) files="$files$nl${line#f }" ;;
  esac
done
# marked PREFIX SIGNAL: signals every process whose PCT_JOB starts with PREFIX; marked PREFIX: is one left?
marked() {
  if [ -z "$2" ]; then grep -lsqz "^PCT_JOB=$1" /proc/[0-9]*/environ 2>/dev/null; return; fi
  for p in $(grep -lsz "^PCT_JOB=$1" /proc/[0-9]*/environ 2>/dev/null); do
    p=${p#/proc/}; kill -s "$2" -- "${p%/environ}" 2>/dev/null
  done
}
stop() {
  for g in $groups; do kill -s "$1" -- "-$g" 2>/dev/null; done
  marked "$inst:" "$1"
}
left() {
  for g in $groups; do kill -0 -- "-$g" 2>/dev/null && return 0; done
  marked "$inst:"
}
# wait_while TICKS CHECK...: polls CHECK every 50 ms while it holds, at most TICKS times
wait_while() {
  n=0; max=$1; shift
  while [ "$n" -lt "$max" ] && "$@"; do sleep 0.05 2>/dev/null || break; n=$((n+1)); done
}
stop TERM
wait_while 20 left
stop KILL
stop KILL
set -f
IFS=$nl
[ -n "$files" ] && rm -f -- $files
set +f
unset IFS
wait_while 100 marked "$inst-probe"
marked "$inst-probe" TERM
wait_while 20 marked "$inst-probe"
marked "$inst-probe" KILL
exit 0
"#;

#[derive(Default)]
struct State {
    child: Option<(Child, ChildStdin)>,
    groups: BTreeSet<i32>,
    files: Vec<String>,
    /// Why the watchdog could not be started (diagnostics); jobs still run.
    failure: Option<String>,
}

fn state() -> &'static Mutex<State> {
    static S: OnceLock<Mutex<State>> = OnceLock::new();
    S.get_or_init(Default::default)
}

/// This process's random instance id: the first part of every job marker, so the watchdog finds exactly the
/// processes started by this Node process.
pub fn instance() -> &'static str {
    static I: OnceLock<String> = OnceLock::new();
    I.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
}

/// The program that runs the watchdog script: `/bin/sh`. Tests set `PCT_TEST_WATCHDOG_SH` (e.g. to a path that does
/// not exist) to make the start fail the way a missing or unstartable `/bin/sh` would
/// (builds with test seams only, src/seams.rs).
fn shell() -> String {
    crate::seams::var("PCT_TEST_WATCHDOG_SH")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into())
}

fn spawn() -> std::io::Result<(Child, ChildStdin)> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(shell())
        .arg("-c")
        .arg(SCRIPT)
        .arg("pi-codex-toolkit-watchdog")
        .arg(instance())
        .env_remove(MARKER_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // its own group: a Ctrl-C or a kill of Node's group must not take the watchdog down first
        .process_group(0)
        .spawn()?;
    let stdin = child.stdin.take().expect("piped stdin");
    Ok((child, stdin))
}

/// Writes `lines` to a live watchdog, (re)starting it when needed; a restarted watchdog first receives the whole
/// state so nothing registered before is forgotten.
fn send(st: &mut State, lines: &str) {
    for attempt in 0..2 {
        if st.child.is_none() {
            match spawn() {
                Ok(c) => {
                    st.child = Some(c);
                    st.failure = None;
                    let mut all = String::new();
                    for g in &st.groups {
                        all.push_str(&format!("g {g}\n"));
                    }
                    for f in &st.files {
                        all.push_str(&format!("f {f}\n"));
                    }
                    if !all.is_empty() && st.child.as_mut().unwrap().1.write_all(all.as_bytes()).is_err() {
                        reap(st);
                        continue;
                    }
                }
                Err(e) => {
                    st.failure = Some(format!("could not start {}: {e}", shell()));
                    return;
                }
            }
        }
        if lines.is_empty() || st.child.as_mut().unwrap().1.write_all(lines.as_bytes()).is_ok() {
            return;
        }
        reap(st);
        if attempt == 1 {
            st.failure = Some("the watchdog process exited and could not be restarted".into());
        }
    }
}

/// Forgets a dead watchdog (reaping it so no zombie stays behind).
fn reap(st: &mut State) {
    if let Some((mut child, stdin)) = st.child.take() {
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Starts the watchdog if it is not running (before the first job is spawned).
pub fn ensure_started() {
    let mut st = state().lock();
    send(&mut st, "");
}

/// A job's process group is live: the watchdog kills it if Node ends first.
pub fn add_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    let mut st = state().lock();
    st.groups.insert(pgid);
    send(&mut st, &format!("g {pgid}\n"));
}

/// A job's process group is gone: forget it (its id may be reused by an unrelated group).
pub fn remove_group(pgid: i32) {
    let mut st = state().lock();
    if st.groups.remove(&pgid) && st.child.is_some() {
        send(&mut st, &format!("u {pgid}\n"));
    }
}

/// A recovery file was created: the watchdog deletes it if Node ends before a session shutdown did. A path with a
/// newline cannot travel in the line protocol and is not registered (it stays for the session shutdown to delete).
pub fn add_file(path: &std::path::Path) {
    let Some(p) = path.to_str().filter(|p| !p.contains('\n')) else {
        return;
    };
    let mut st = state().lock();
    st.files.push(p.to_string());
    send(&mut st, &format!("f {p}\n"));
}

/// Why the watchdog is not running although something needed it (a job or a recovery file), or `None` when it
/// runs or was not needed yet. Every later job or file retries the start. Shown in the shell manager's status.
pub fn failure() -> Option<String> {
    let st = state().lock();
    st.failure.clone().filter(|_| st.child.is_none())
}

/// The watchdog's pid, or why it is not running (diagnostics and tests).
pub fn status() -> Result<u32, String> {
    let st = state().lock();
    match (&st.child, &st.failure) {
        (Some((c, _)), _) => Ok(c.id()),
        (None, Some(f)) => Err(f.clone()),
        (None, None) => Err("not started (no job or recovery file yet)".into()),
    }
}
