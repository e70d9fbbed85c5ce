//! Bash and background tasks end to end on real processes (docs/host.md "Bash").

use super::run::{kill_tree, run_foreground, Exit, Killed, Launch, RunLimits};
use super::stream::{StreamOut, TailText, BACKGROUND_TAIL, FOREGROUND_TAIL};
use super::tasks::{Caps, TaskStatus, TaskTable, MAX_OBSERVATION};
use super::*;
use crate::host::error::{NOT_FOUND, TOOL_FAILED, TOOL_TIMEOUT};
use crate::output::{RecoveryState, RecoveryStore};
use crate::test_support::until;
use serde_json::{json, Value};
use std::time::Duration;

fn fast() -> RunLimits {
    RunLimits {
        stop_grace: Duration::from_millis(300),
        ..RunLimits::default()
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    store: RecoveryStore,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("rec");
        std::fs::create_dir(&rec).unwrap();
        let store = RecoveryStore::with_options("bash-test", Some(rec), crate::output::recovery::DEFAULT_SPILL_BYTES);
        Self { dir, store }
    }
    fn launch(&self, command: &str) -> Launch {
        Launch {
            command: command.to_string(),
            cwd: self.dir.path().to_path_buf(),
            shell: ShellSpec::default_posix(),
            env: vec![],
            scratch: self.scratch(),
            login_path: None,
            marker: new_marker("bash").1,
        }
    }
    /// Where a session's scratch lives under an agent dir (`<agentDir>/pi-codex-toolkit/scratch/<sessionId>`).
    fn scratch(&self) -> std::path::PathBuf {
        self.dir.path().join("agent/pi-codex-toolkit/scratch/s1")
    }
    fn ctx(&self) -> BashContext {
        BashContext {
            workspace: self.dir.path().to_path_buf(),
            scratch: self.scratch(),
            ..Default::default()
        }
    }
    async fn run(&self, command: &str, budget: Duration) -> BashOutcome {
        run_foreground(self.launch(command), budget, None, fast(), &self.store, FOREGROUND_TAIL)
            .await
            .unwrap()
    }
}

/// Whether `pid` is gone (no process, or only a zombie waiting for its parent).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
    }
}

async fn poll(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..500 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn read_pid(path: &std::path::Path) -> i32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

#[test]
fn timeout_boundaries() {
    let p = |v: Value| timeout::parse(Some(&v));
    assert_eq!(timeout::parse(None).unwrap(), Duration::from_secs(60));
    assert_eq!(p(Value::Null).unwrap(), Duration::from_secs(60));
    assert_eq!(p(json!(0)).unwrap_err().code, "INVALID_ARGUMENT");
    assert_eq!(p(json!(1)).unwrap(), Duration::from_secs(1));
    assert_eq!(p(json!(600)).unwrap(), Duration::from_secs(600));
    assert_eq!(p(json!(1800)).unwrap(), Duration::from_secs(1800));
    assert_eq!(p(json!(21_600)).unwrap(), Duration::from_secs(21_600));
    // above 21,600 a value is milliseconds
    assert_eq!(p(json!(21_601)).unwrap(), Duration::from_millis(21_601));
    assert_eq!(p(json!(120_000)).unwrap(), Duration::from_secs(120));
    assert_eq!(p(json!(21_600_000)).unwrap(), Duration::from_secs(21_600));
    // ... clamped to 21,600 s
    assert_eq!(p(json!(21_600_001)).unwrap(), Duration::from_secs(21_600));
    assert_eq!(p(json!(100_000_000)).unwrap(), Duration::from_secs(21_600));
    for bad in [
        json!(100_000_001),
        json!(1.5),
        json!(-1),
        json!("60"),
        json!(true),
        json!(1e300),
    ] {
        let e = p(bad.clone()).unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT", "{bad}");
        assert!(e.message.contains("from 1 to 21600"), "{bad}: {}", e.message);
    }
    assert_eq!(p(json!(60.0)).unwrap(), Duration::from_secs(60));
}

#[test]
fn args_are_validated() {
    let a = BashArgs::from_json(&json!({"command": "ls", "timeout": 5, "runInBackground": true})).unwrap();
    assert_eq!(
        (a.command.as_str(), a.timeout, a.background),
        ("ls", Duration::from_secs(5), true)
    );
    for bad in [
        json!({}),
        json!({"command": ""}),
        json!({"command": 1}),
        json!({"command": "a\0b"}),
        json!([1]),
    ] {
        assert_eq!(BashArgs::from_json(&bad).unwrap_err().code, "INVALID_ARGUMENT", "{bad}");
    }
    let long = "x".repeat(run::MAX_COMMAND_BYTES + 1);
    assert!(BashArgs::from_json(&json!({ "command": long }))
        .unwrap_err()
        .message
        .contains("PI_SCRATCH_DIR"));
    assert!(BashArgs::from_json(&json!({"command": "ls", "runInBackground": "yes"})).is_err());
}

#[test]
fn the_command_follows_the_shell_config_arguments() {
    let s = ShellSpec {
        shell: "/bin/bash".into(),
        args: vec!["-c".into()],
    };
    assert_eq!(s.argv("ls"), ["-c", "ls"]);
}

#[test]
fn tail_keeps_the_end_on_a_char_boundary() {
    let mut t = TailText::new(5);
    t.push("abc");
    t.push("def");
    assert_eq!(t.as_str(), "bcdef");
    t.push("é€");
    assert_eq!(t.as_str(), "é€");
    t.push("x");
    // the last 5 bytes of "é€x" start inside "é", so the cut moves past it
    assert_eq!(t.as_str(), "€x");
    let mut t = TailText::new(4);
    t.push("x😀");
    assert_eq!(t.as_str(), "😀");
    for i in 0..1000 {
        t.push(&format!("{}", i % 10));
    }
    assert_eq!(t.as_str(), "6789");
}

#[test]
fn a_character_split_across_reads_is_kept_whole() {
    let f = Fixture::new();
    let mut s = StreamOut::new(16, &f.store);
    let bytes = "a€😀b".as_bytes();
    for b in bytes {
        s.push_bytes(std::slice::from_ref(b));
    }
    s.end(false);
    assert_eq!(s.snapshot().text, "a€😀b");
    assert_eq!(s.total(), bytes.len() as u64);
}

#[tokio::test]
async fn utf8_split_across_pipe_reads() {
    let f = Fixture::new();
    // "€" = e2 82 ac, written in two pieces with a pause between them, on both streams
    let o = f
        .run(
            r"printf '\342\202'; printf '\342' >&2; sleep 0.2; printf '\254\n'; printf '\202\254' >&2",
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(o.stdout.text, "€\n");
    assert_eq!(o.stderr.text, "€");
}

#[tokio::test]
async fn success_failure_and_separate_streams() {
    let f = Fixture::new();
    let o = f.run("echo out; echo err >&2", Duration::from_secs(30)).await;
    assert_eq!((o.exit, o.killed), (Exit::Code(0), None));
    assert_eq!((o.stdout.text.as_str(), o.stderr.text.as_str()), ("out\n", "err\n"));
    let r = render::outcome(&o);
    assert!(r.ok && r.code.is_none());
    assert_eq!(r.text, "exit_code: 0\n[stdout]\nout\n[stderr]\nerr\n");

    let o = f
        .run("echo partial; echo broken >&2; exit 3", Duration::from_secs(30))
        .await;
    assert_eq!(o.exit, Exit::Code(3));
    let r = render::outcome(&o);
    assert_eq!(r.code, Some(TOOL_FAILED));
    assert!(r.message.as_deref().unwrap().contains("exited with code 3"));
    assert!(
        r.text.contains("exit_code: 3\n[stdout]\npartial\n[stderr]\nbroken\n"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn each_stream_is_truncated_on_its_own_with_the_full_text_in_a_file() {
    let f = Fixture::new();
    // 100,000 bytes of stdout (lines "0000000\n" ...), 10 bytes of stderr
    let o = f
        .run(
            "seq -w 0 12499 | sed 's/^/00/'; printf 'small err\\n' >&2",
            Duration::from_secs(60),
        )
        .await;
    assert_eq!(o.stdout.total_bytes, 12_500 * 8);
    assert!(o.stdout.truncated);
    assert_eq!(o.stdout.text.len(), FOREGROUND_TAIL);
    assert!(o.stdout.text.ends_with("0012499\n"));
    let rec = o.stdout.recovery.clone().unwrap();
    assert_eq!(rec.state, RecoveryState::Complete);
    let full = std::fs::read_to_string(rec.path.unwrap()).unwrap();
    assert_eq!(full.len(), 100_000);
    assert!(full.starts_with("0000000\n0000001\n"));
    assert!(full.ends_with(&o.stdout.text));
    // stderr is untouched by stdout's size
    assert_eq!(o.stderr.text, "small err\n");
    assert!(!o.stderr.truncated && o.stderr.recovery.is_none());
    let text = render::outcome(&o).text;
    assert!(
        text.contains("[stdout truncated: showing the last 51200 of 100000 bytes]"),
        "{text}"
    );
    assert!(text.contains("[stderr]\nsmall err\n"));
}

#[tokio::test]
async fn timeout_kills_the_tree_including_a_grandchild_that_ignores_sigterm() {
    let f = Fixture::new();
    let pidfile = f.dir.path().join("grandchild");
    let cmd = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {}; echo started; exec sleep 1000' & wait",
        pidfile.display()
    );
    let o = f.run(&cmd, Duration::from_millis(500)).await;
    assert_eq!(o.killed, Some(Killed::Timeout));
    let r = render::outcome(&o);
    assert_eq!(r.code, Some(TOOL_TIMEOUT));
    assert!(r.message.unwrap().contains("timeoutMs 500"));
    assert_eq!(o.stdout.text, "started\n", "output before the kill is kept");
    let pid = read_pid(&pidfile);
    assert!(poll(|| dead(pid)).await, "grandchild {pid} survived the timeout");
}

#[tokio::test]
async fn abort_kills_the_tree_and_a_process_that_left_the_group() {
    let f = Fixture::new();
    let (stay, left) = (f.dir.path().join("stay"), f.dir.path().join("left"));
    let cmd = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 1000' & setsid sh -c 'echo $$ > {}; exec sleep 1000' \
         </dev/null >/dev/null 2>&1 & wait",
        stay.display(),
        left.display()
    );
    let cancel = crate::shell::cancel::Cancel::new();
    let c2 = cancel.clone();
    let (s2, l2) = (stay.clone(), left.clone());
    tokio::spawn(async move {
        poll(|| s2.exists() && l2.exists()).await;
        c2.cancel();
    });
    let o = run_foreground(
        f.launch(&cmd),
        Duration::from_secs(600),
        Some(cancel),
        fast(),
        &f.store,
        FOREGROUND_TAIL,
    )
    .await
    .unwrap();
    assert_eq!(o.killed, Some(Killed::Aborted));
    for p in [&stay, &left] {
        let pid = read_pid(p);
        assert!(poll(|| dead(pid)).await, "{pid} survived the abort");
    }
}

#[tokio::test]
async fn kill_tree_escalates_to_sigkill() {
    let f = Fixture::new();
    let pidfile = f.dir.path().join("p");
    let sp = run::spawn(&f.launch(&format!(
        "trap '' TERM; echo $$ > {}; while :; do sleep 1; done",
        pidfile.display()
    )))
    .unwrap();
    assert!(poll(|| pidfile.exists()).await);
    let pgid = sp.pgid;
    let mut child = sp.child;
    let killer = std::thread::spawn(move || kill_tree(pgid, "no-marker", Duration::from_millis(200)));
    let st = child.wait().await.unwrap();
    assert!(killer.join().unwrap(), "kill_tree confirmed the tree gone");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        st.signal(),
        Some(libc::SIGKILL),
        "SIGTERM was ignored, SIGKILL ended it"
    );
}

#[tokio::test]
async fn scratch_dir_is_exported_and_a_missing_shell_is_reported() {
    let f = Fixture::new();
    let o = f.run("printf %s \"$PI_SCRATCH_DIR\"", Duration::from_secs(30)).await;
    assert_eq!(o.stdout.text, f.scratch().display().to_string());
    let mut l = f.launch("true");
    l.shell = ShellSpec {
        shell: "/nonexistent/bash".into(),
        args: vec!["-c".into()],
    };
    let e = run_foreground(l, Duration::from_secs(5), None, fast(), &f.store, FOREGROUND_TAIL)
        .await
        .unwrap_err();
    assert_eq!(e.code, SHELL_NOT_FOUND);
    assert!(e.message.contains("Install bash"), "{}", e.message);
}

#[tokio::test]
async fn the_login_shell_path_is_injected() {
    let f = Fixture::new();
    // a "bash" whose login start puts a directory of its own first, as a profile adding ~/.cargo/bin would; it
    // checks it was asked as a login and interactive shell (`-l -i -c`)
    let sh = f.dir.path().join("bash");
    std::fs::write(
        &sh,
        "#!/bin/sh\n[ \"$1 $2 $3\" = \"-l -i -c\" ] || exit 9\nPATH=\"/pct-login-profile/bin:$PATH\"\nexport PATH\nexec /bin/sh -c \"$4\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let login = login::LoginPath::new(login::user_shell(sh.to_str()), Duration::from_secs(5));
    assert_eq!(login.shell(), sh.to_str());
    let session = SessionTasks::new(TaskTable::new(Caps::default(), fast()), f.store.clone()).with_login(login);
    let args = BashArgs::from_json(&json!({"command": "printf %s \"$PATH\""})).unwrap();
    let BashReply::Done(o) = bash(&session, args, f.ctx()).await.unwrap() else {
        panic!("foreground")
    };
    let inherited = std::env::var("PATH").unwrap_or_default();
    assert_eq!(o.stdout.text, format!("/pct-login-profile/bin:{inherited}"));
}

#[tokio::test]
async fn a_prewarmed_probe_is_ready_before_the_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let sh = dir.path().join("sh");
    let count = dir.path().join("count");
    // a profile that takes 300 ms and counts its runs
    std::fs::write(
        &sh,
        format!(
            "#!/bin/sh\necho x >> '{}'\nsleep 0.3\nPATH=/pct-prewarmed:$PATH\nexec /bin/sh -c \"$3\"\n",
            count.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let login = login::LoginPath::new(Some(sh.display().to_string()), Duration::from_secs(5));
    login.prewarm();
    login.prewarm(); // a second session start does not probe again
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !login.probed() {
        assert!(
            std::time::Instant::now() < deadline,
            "the prewarmed probe never answered"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first call takes the answer without waiting: a zero timeout polls the call once before it expires.
    let p = tokio::time::timeout(Duration::ZERO, login.get())
        .await
        .expect("the prewarmed answer is there at once")
        .unwrap();
    assert!(p.starts_with("/pct-prewarmed:"), "{p}");
    assert_eq!(login.get().await.unwrap(), p);
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\n", "probed once");
}

#[tokio::test]
async fn a_call_does_not_wait_for_a_hanging_prewarmed_probe_and_later_calls_get_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let sh = dir.path().join("sh");
    // a profile that takes 2 s (a shell start blocked on a lock, say), then adds its folder
    std::fs::write(
        &sh,
        "#!/bin/sh
sleep 2
PATH=/pct-slow-profile:$PATH
exec /bin/sh -c \"$3\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let login = login::LoginPath::new(Some(sh.display().to_string()), Duration::from_secs(5));
    login.prewarm();
    // The call gives up on the young probe and runs with the inherited PATH...
    assert_eq!(login.for_call_within(Duration::from_millis(100)).await, None);
    // ...and the probe itself goes on: once it is done, every call gets its PATH.
    let p = login.get().await.unwrap();
    assert!(p.starts_with("/pct-slow-profile:"), "{p}");
    assert_eq!(login.for_call_within(Duration::ZERO).await, Some(p));
    // Without a prewarm (an embedder's session), the first call probes and waits for it.
    let fresh = login::LoginPath::new(Some(sh.display().to_string()), Duration::from_secs(5));
    assert!(fresh
        .for_call_within(Duration::ZERO)
        .await
        .is_some_and(|p| p.starts_with("/pct-slow-profile:")));
}

#[tokio::test]
async fn the_scratch_directory_exists_before_the_command_runs() {
    let f = Fixture::new();
    let session = SessionTasks::new(TaskTable::new(Caps::default(), fast()), f.store.clone());
    let scratch = f.scratch();
    assert!(!scratch.exists());
    let args = BashArgs::from_json(
        &json!({"command": "test -d \"$PI_SCRATCH_DIR\" && touch \"$PI_SCRATCH_DIR/x\" && echo yes"}),
    )
    .unwrap();
    let BashReply::Done(o) = bash(&session, args, f.ctx()).await.unwrap() else {
        panic!("foreground")
    };
    assert_eq!((o.exit, o.stdout.text.as_str()), (Exit::Code(0), "yes\n"));
    assert!(scratch.join("x").is_file());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&scratch).unwrap().permissions().mode() & 0o777, 0o700);
    // Created by Bash alone, the folder carries the same live lock as one created by Write: another process's
    // start-up sweep (which sees no live session named s1) leaves it alone (docs/host.md "Paths").
    assert!(scratch.join(crate::host::scratch::LIVE_LOCK).is_file());
    let removed = crate::host::scratch::sweep(&f.dir.path().join("agent"), &[], std::time::SystemTime::now()).unwrap();
    assert!(removed.is_empty(), "{removed:?}");
    assert!(scratch.join("x").is_file());
    // a scratch path that cannot be a directory: nothing runs, the error says why
    let blocked = f.dir.path().join("blocked");
    std::fs::write(&blocked, "").unwrap();
    let ctx = BashContext {
        scratch: blocked.join("s"),
        ..f.ctx()
    };
    let args = BashArgs::from_json(&json!({"command": "touch ran"})).unwrap();
    let e = bash(&session, args, ctx).await.unwrap_err();
    assert_eq!(e.code, TOOL_FAILED);
    assert!(e.message.contains("PI_SCRATCH_DIR"), "{}", e.message);
    assert!(!f.dir.path().join("ran").exists());
}

fn bg(command: &str) -> BashArgs {
    BashArgs::from_json(&json!({ "command": command, "runInBackground": true })).unwrap()
}

async fn start(s: &SessionTasks, f: &Fixture, command: &str) -> Result<TaskView, crate::host::HostError> {
    match bash(s, bg(command), f.ctx()).await? {
        BashReply::Started(v) => Ok(v),
        BashReply::Done(_) => panic!("background"),
    }
}

#[tokio::test]
async fn background_tasks_are_listed_waited_and_stopped() {
    let f = Fixture::new();
    let table = TaskTable::new(Caps::default(), fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    let b = SessionTasks::new(table.clone(), f.store.clone());
    let quick = start(&a, &f, "echo done; echo warn >&2").await.unwrap();
    assert!(quick.id.starts_with("bg-"));
    let slow = start(&a, &f, "echo begun; exec sleep 1000").await.unwrap();
    assert_eq!(slow.status, TaskStatus::Running);
    let mut seen = table.wait(a.owner(), &slow.id, Duration::ZERO).await.unwrap();
    while seen.stdout.text.is_empty() {
        seen = table
            .wait(a.owner(), &slow.id, Duration::from_millis(20))
            .await
            .unwrap();
    }

    // wait: the quick one ends with its output drained
    let mut v = table.wait(a.owner(), &quick.id, MAX_OBSERVATION).await.unwrap();
    for _ in 0..50 {
        if v.status != TaskStatus::Running {
            break;
        }
        v = table.wait(a.owner(), &quick.id, MAX_OBSERVATION).await.unwrap();
    }
    assert_eq!((v.status, v.exit), (TaskStatus::Completed, Some(Exit::Code(0))));
    assert_eq!((v.stdout.text.as_str(), v.stderr.text.as_str()), ("done\n", "warn\n"));

    // a wait on a running task returns it running and never kills it
    let w = table
        .wait(a.owner(), &slow.id, Duration::from_millis(50))
        .await
        .unwrap();
    assert_eq!(w.status, TaskStatus::Running);
    assert!(crate::shell::process::group_alive(table_pgid(&table, &slow.id)));

    let list = table.list(a.owner()).unwrap();
    assert_eq!(
        list.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        [quick.id.as_str(), slow.id.as_str()]
    );
    assert!(render::list(&list).contains(&format!("backgroundTaskId {}: running", slow.id)));

    // another session's ids are NOT_FOUND, like unknown ones
    assert_eq!(
        table.wait(b.owner(), &slow.id, Duration::ZERO).await.unwrap_err().code,
        NOT_FOUND
    );
    assert_eq!(
        table.stop(b.owner(), &slow.id, Duration::ZERO).await.unwrap_err().code,
        NOT_FOUND
    );
    assert_eq!(
        table.wait(a.owner(), "bg-nope", Duration::ZERO).await.unwrap_err().code,
        NOT_FOUND
    );
    assert!(table.list(b.owner()).unwrap().is_empty());

    let pgid = table_pgid(&table, &slow.id);
    let mut s = table.stop(a.owner(), &slow.id, MAX_OBSERVATION).await.unwrap();
    assert!(s.stop_requested);
    while s.status == TaskStatus::Running {
        s = table.wait(a.owner(), &slow.id, MAX_OBSERVATION).await.unwrap();
    }
    assert_eq!(s.status, TaskStatus::Stopped);
    assert_eq!(s.stdout.text, "begun\n");
    assert!(!crate::shell::process::group_alive(pgid));
    assert_eq!(table.running(), 0);
}

fn table_pgid(table: &TaskTable, id: &str) -> i32 {
    table.pgid_of(id).unwrap()
}

#[tokio::test]
async fn stop_of_a_sigterm_ignoring_task_reports_a_running_snapshot_then_stopped() {
    let f = Fixture::new();
    let table = TaskTable::new(
        Caps::default(),
        RunLimits {
            stop_grace: Duration::from_secs(3),
            ..RunLimits::default()
        },
    );
    let a = SessionTasks::new(table.clone(), f.store.clone());
    let pidfile = f.dir.path().join("g");
    let t = start(
        &a,
        &f,
        &format!(
            "sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 1000' & wait",
            pidfile.display()
        ),
    )
    .await
    .unwrap();
    assert!(poll(|| pidfile.exists()).await);
    let s = table.stop(a.owner(), &t.id, Duration::from_millis(100)).await.unwrap();
    assert_eq!((s.status, s.stop_requested), (TaskStatus::Running, true));
    assert!(render::task(&s).contains("(stop requested)"));
    let pid = read_pid(&pidfile);
    assert!(poll(|| dead(pid)).await, "SIGKILL after the grace ended the grandchild");
}

#[tokio::test]
async fn both_caps_refuse_with_distinct_reasons() {
    let f = Fixture::new();
    let table = TaskTable::new(
        Caps {
            per_session: 2,
            process: 3,
            keep_finished: 32,
            ..Caps::default()
        },
        fast(),
    );
    let a = SessionTasks::new(table.clone(), f.store.clone());
    let b = SessionTasks::new(table.clone(), f.store.clone());
    start(&a, &f, "exec sleep 1000").await.unwrap();
    start(&a, &f, "exec sleep 1000").await.unwrap();
    let e = start(&a, &f, "exec sleep 1000").await.unwrap_err();
    assert_eq!(e.code, HOST_OVERLOADED);
    assert!(e.message.contains("per-session cap of 2"), "{}", e.message);
    start(&b, &f, "exec sleep 1000").await.unwrap();
    let e = start(&b, &f, "exec sleep 1000").await.unwrap_err();
    assert_eq!(e.code, HOST_OVERLOADED);
    assert!(e.message.contains("process-wide cap of 3"), "{}", e.message);
    assert_eq!(table.running(), 3);
    // a finished task frees its slot
    let stopped = a.close();
    assert_eq!(stopped, 2);
    assert!(poll(|| table.running() == 1).await);
    start(&b, &f, "true").await.unwrap();
    b.close();
    assert!(poll(|| table.running() == 0).await);
}

#[tokio::test]
async fn background_streams_keep_their_last_256_kib() {
    let f = Fixture::new();
    let table = TaskTable::new(Caps::default(), fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    // 300,000 bytes on stdout, 5 on stderr
    let t = start(
        &a,
        &f,
        "head -c 300000 /dev/zero | tr '\\0' x; printf tail; printf 'e r r' >&2",
    )
    .await
    .unwrap();
    let mut v = table.wait(a.owner(), &t.id, MAX_OBSERVATION).await.unwrap();
    while v.status == TaskStatus::Running {
        v = table.wait(a.owner(), &t.id, MAX_OBSERVATION).await.unwrap();
    }
    assert_eq!(v.stdout.total_bytes, 300_004);
    assert_eq!(v.stdout.text.len(), BACKGROUND_TAIL);
    assert!(v.stdout.truncated && v.stdout.text.ends_with("xtail"));
    let rec = v.stdout.recovery.clone().unwrap();
    assert_eq!(std::fs::metadata(rec.path.unwrap()).unwrap().len(), 300_004);
    // the model reads the last 50 KiB of the kept 256 KiB per call; the details keep all of it
    let text = render::task(&v);
    assert!(
        text.contains("[stdout truncated: showing the last 51200 of 300004 bytes]"),
        "{}",
        &text[text.len() - 400..]
    );
    assert!(text.len() < FOREGROUND_TAIL + 2048);
    assert_eq!((v.stderr.text.as_str(), v.stderr.truncated), ("e r r", false));
}

async fn finish(table: &TaskTable, owner: u64, id: &str) -> TaskView {
    let mut v = table.wait(owner, id, MAX_OBSERVATION).await.unwrap();
    while v.status == TaskStatus::Running {
        v = table.wait(owner, id, MAX_OBSERVATION).await.unwrap();
    }
    v
}

#[tokio::test]
async fn recovery_files_stop_at_the_task_and_session_caps() {
    const MIB: u64 = 1024 * 1024;
    let f = Fixture::new();
    let caps = Caps {
        task_recovery_bytes: MIB,
        session_recovery_bytes: 3 * MIB / 2,
        ..Caps::default()
    };
    let table = TaskTable::new(caps, fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    // 3 MiB on stdout, then a marker: the task runs to its end, its tail follows the output past the cap
    let cmd = "head -c 3145728 /dev/zero | tr '\\0' y; printf END";
    let first = start(&a, &f, cmd).await.unwrap();
    let v = finish(&table, a.owner(), &first.id).await;
    assert_eq!(v.status, TaskStatus::Completed);
    assert_eq!(v.stdout.total_bytes, 3 * MIB + 3);
    assert!(v.stdout.text.ends_with("yEND"));
    let rec = v.stdout.recovery.clone().unwrap();
    assert_eq!(
        (rec.state, rec.reason),
        (RecoveryState::Partial, Some(crate::output::RecoveryReason::CapReached))
    );
    assert_eq!((rec.bytes, rec.captured_bytes), (MIB, 3 * MIB + 3));
    assert_eq!(
        std::fs::metadata(rec.path.unwrap()).unwrap().len(),
        MIB,
        "exactly the per-task cap on disk"
    );
    let text = render::task(&v);
    assert!(text.contains("recovery-file cap was reached"), "{text}");
    // the second task gets what is left of the session's cap; the third nothing, and still runs to its end
    let second = start(&a, &f, cmd).await.unwrap();
    let v = finish(&table, a.owner(), &second.id).await;
    assert_eq!(v.stdout.recovery.as_ref().unwrap().bytes, MIB / 2);
    let third = start(&a, &f, cmd).await.unwrap();
    let v = finish(&table, a.owner(), &third.id).await;
    assert_eq!(v.status, TaskStatus::Completed);
    assert_eq!(v.stdout.recovery.as_ref().unwrap().bytes, 0);
    assert_eq!(a.recovery_left().load(std::sync::atomic::Ordering::SeqCst), 0);
    // output that never needed a file does not spend the session's allowance; another session has its own
    let b = SessionTasks::new(table.clone(), f.store.clone());
    let small = start(&b, &f, "echo small").await.unwrap();
    let v = finish(&table, b.owner(), &small.id).await;
    assert!(v.stdout.recovery.is_none());
    assert_eq!(b.recovery_left().load(std::sync::atomic::Ordering::SeqCst), 3 * MIB / 2);
}

async fn pid_when_written(path: &std::path::Path) -> i32 {
    assert!(
        poll(|| std::fs::read_to_string(path).is_ok_and(|s| s.ends_with('\n'))).await,
        "no pid file"
    );
    read_pid(path)
}

#[tokio::test]
async fn task_stop_reaches_descendants_that_left_the_group_and_cleared_the_marker() {
    let f = Fixture::new();
    let table = TaskTable::new(Caps::default(), fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    // a new session without PCT_JOB, started from a subshell that exits at once (a double fork): the escapee is
    // re-parented to the task's shell (a child subreaper), not to init
    let pidfile = f.dir.path().join("escaped.pid");
    let cmd = format!(
        "(setsid env -u PCT_JOB sh -c 'echo $$ > {}; exec sleep 1000' &); sleep 1000",
        pidfile.display()
    );
    let t = start(&a, &f, &cmd).await.unwrap();
    let pid = pid_when_written(&pidfile).await;
    assert!(!dead(pid));
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(
        !String::from_utf8_lossy(&env).contains("PCT_JOB="),
        "the escapee has no marker"
    );
    let mut v = table.stop(a.owner(), &t.id, MAX_OBSERVATION).await.unwrap();
    while v.status == TaskStatus::Running {
        v = table.wait(a.owner(), &t.id, MAX_OBSERVATION).await.unwrap();
    }
    assert_eq!((v.status, v.unknown_outcome.clone()), (TaskStatus::Stopped, None));
    assert!(poll(|| dead(pid)).await, "the escaped process survived TaskStop");
}

#[tokio::test]
async fn an_escape_after_the_shell_is_gone_is_reported_as_unknown_outcome() {
    let f = Fixture::new();
    let table = TaskTable::new(Caps::default(), fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    // `setsid` as the whole command: the shell execs it, it forks (it leads its group) and its parent — the task's
    // leader — exits, so the escapee is orphaned to init while it keeps the task's output open
    let pidfile = f.dir.path().join("orphan.pid");
    let cmd = format!(
        "setsid env -u PCT_JOB sh -c 'echo $$ > {}; exec sleep 1000'",
        pidfile.display()
    );
    let t = start(&a, &f, &cmd).await.unwrap();
    let pid = pid_when_written(&pidfile).await;
    let v = table.stop(a.owner(), &t.id, MAX_OBSERVATION).await.unwrap();
    assert_eq!(v.status, TaskStatus::Running, "never reported as a clean stop");
    assert_eq!(v.unknown_outcome, Some(vec![pid]));
    let text = render::task(&v);
    assert!(
        text.contains(&format!(
            "unknownOutcome: the task's shell is gone, but processes {pid} still hold"
        )),
        "{text}"
    );
    // SAFETY: test cleanup of the process this test started (its pid was just read from its own file).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert!(poll(|| dead(pid)).await);
}

#[tokio::test]
async fn close_stops_running_tasks_without_waiting_and_refuses_new_work() {
    let f = Fixture::new();
    let table = TaskTable::new(Caps::default(), fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    let t = start(&a, &f, "exec sleep 1000").await.unwrap();
    let pgid = table_pgid(&table, &t.id);
    assert_eq!(a.close(), 1);
    assert_eq!(a.close(), 0);
    assert_eq!(
        table.wait(a.owner(), &t.id, Duration::ZERO).await.unwrap_err().code,
        NOT_FOUND
    );
    assert!(poll(|| !crate::shell::process::group_alive(pgid)).await);
    assert_eq!(start(&a, &f, "true").await.unwrap_err().code, TOOL_FAILED);
    // dropping an open session stops its tasks too
    let b = SessionTasks::new(table.clone(), f.store.clone());
    let t = start(&b, &f, "exec sleep 1000").await.unwrap();
    let pgid = table_pgid(&table, &t.id);
    drop(b);
    assert!(poll(|| !crate::shell::process::group_alive(pgid)).await);
    assert!(poll(|| table.running() == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_starts_never_overshoot_either_cap() {
    let f = std::sync::Arc::new(Fixture::new());
    let table = TaskTable::new(
        Caps {
            per_session: 4,
            process: 6,
            keep_finished: 32,
            ..Caps::default()
        },
        fast(),
    );
    let sessions: Vec<std::sync::Arc<SessionTasks>> = (0..3)
        .map(|_| std::sync::Arc::new(SessionTasks::new(table.clone(), f.store.clone())))
        .collect();
    // 3 sessions x 6 concurrent starts each = 18 attempts at once for 6 process slots and 4 per session
    let mut joins = Vec::new();
    for s in &sessions {
        for _ in 0..6 {
            let (s, f) = (s.clone(), f.clone());
            joins.push(tokio::spawn(async move {
                (s.owner(), start(&s, &f, "exec sleep 1000").await)
            }));
        }
    }
    let mut ok_per: std::collections::HashMap<u64, usize> = Default::default();
    let (mut session_cap, mut process_cap) = (0, 0);
    for j in joins {
        let (owner, r) = j.await.unwrap();
        match r {
            Ok(_) => *ok_per.entry(owner).or_default() += 1,
            Err(e) if e.message.contains("per-session cap") => session_cap += 1,
            Err(e) if e.message.contains("process-wide cap") => process_cap += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    let started: usize = ok_per.values().sum();
    assert_eq!(started, 6, "exactly the process cap started");
    assert!(ok_per.values().all(|n| *n <= 4), "{ok_per:?}");
    assert_eq!(started + session_cap + process_cap, 18);
    assert!(process_cap > 0);
    assert_eq!(table.running(), 6);
    for s in &sessions {
        s.close();
    }
    assert!(poll(|| table.running() == 0).await);
}

#[tokio::test]
async fn a_background_descendant_holding_the_pipes_does_not_hold_the_result() {
    let f = Fixture::new();
    let pidfile = f.dir.path().join("server");
    // the shell exits at once; `sleep` keeps stdout and stderr open, quietly
    let cmd = format!(
        "sh -c 'echo $$ > {}; exec sleep 1000' & echo started",
        pidfile.display()
    );
    let o = f.run(&cmd, Duration::from_secs(600)).await;
    assert_eq!((o.exit, o.killed), (Exit::Code(0), None));
    assert_eq!(o.stdout.text, "started\n");
    assert!(poll(|| pidfile.exists() && !std::fs::read_to_string(&pidfile).unwrap().is_empty()).await);
    let pid = read_pid(&pidfile);
    // The result came back, and what the command left running did not outlive it (docs/host.md "Bash").
    assert!(
        poll(|| dead(pid)).await,
        "the background descendant was collected when the command ended"
    );
    assert_eq!(o.collected, 1);
    assert!(
        render::outcome(&o).text.contains("left 1 process running"),
        "{}",
        render::outcome(&o).text
    );

    // a descendant that keeps writing after the shell exited is read until it stops (gaps of 0.1 s, a third of
    // the quiet window this run uses, so each chunk re-arms it)
    let limits = RunLimits {
        exit_idle: Duration::from_millis(300),
        ..fast()
    };
    let launch = f.launch("(for i in 1 2 3 4 5; do sleep 0.1; echo $i; done) & echo first");
    let o = run_foreground(
        launch,
        Duration::from_secs(600),
        None,
        limits,
        &f.store,
        FOREGROUND_TAIL,
    )
    .await
    .unwrap();
    assert_eq!(o.stdout.text, "first\n1\n2\n3\n4\n5\n");
}

#[tokio::test]
async fn live_peek_sees_the_end_of_a_running_command_and_forgets_it_after() {
    let f = Fixture::new();
    let calls = super::live::LiveCalls::default();
    let slot = calls.begin("c1");
    assert_eq!(calls.peek("c1", 100), None, "nothing before the process started");
    // `three` comes only once the test has peeked and creates `go` (the run's own 10 s timeout bounds the wait)
    let started = std::time::Instant::now();
    let run = super::run::run_foreground_live(
        f.launch("printf 'one\\ntwo\\n'; printf 'oops\\n' >&2; until [ -e go ]; do sleep 0.01; done; echo three"),
        Duration::from_secs(10),
        None,
        fast(),
        &f.store,
        FOREGROUND_TAIL,
        Some(slot),
    );
    let peeker = async {
        let mut seen = None;
        until("the first two lines are live", || {
            seen = calls
                .peek("c1", 4)
                .filter(|p| p.stdout_bytes >= 8 && p.stderr_bytes >= 5);
            seen.is_some()
        })
        .await;
        std::fs::write(f.dir.path().join("go"), "").unwrap();
        seen.unwrap()
    };
    let (o, p) = tokio::join!(run, peeker);
    assert_eq!(p.stdout, "two\n", "the last 4 bytes of stdout");
    assert_eq!(p.stderr, "ops\n");
    assert_eq!((p.stdout_bytes, p.stderr_bytes), (8, 5));
    // the age it reports is the running process's, not a duration that outlives the test
    assert!(u128::from(p.elapsed_ms) <= started.elapsed().as_millis(), "{p:?}");
    assert_eq!(o.unwrap().stdout.text, "one\ntwo\nthree\n");
    calls.end("c1");
    assert_eq!(calls.peek("c1", 100), None);
    assert_eq!(calls.peek("unknown", 100), None);
}

#[test]
fn peek_cuts_on_a_character_boundary_and_clamps_its_size() {
    let store = RecoveryStore::new("bash-peek-test");
    let mut s = StreamOut::new(64, &store);
    s.push_bytes("é".repeat(10).as_bytes());
    let (t, total) = s.peek(3);
    assert_eq!(
        (t.as_str(), total),
        ("é", 20),
        "3 bytes would split a character: 2 are kept"
    );
    assert_eq!(s.peek(1000).0, "é".repeat(10));
    let calls = super::live::LiveCalls::default();
    let slot = calls.begin("x");
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(super::live::LiveStreams {
        out: std::sync::Arc::new(std::sync::Mutex::new(StreamOut::new(1 << 20, &store))),
        err: std::sync::Arc::new(std::sync::Mutex::new(StreamOut::new(64, &store))),
        started: std::time::Instant::now(),
    });
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .unwrap()
        .out
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push_bytes(&[b'x'; 40_000]);
    assert_eq!(calls.peek("x", 0).unwrap().stdout.len(), 1, "0 is clamped to 1");
    assert_eq!(calls.peek("x", usize::MAX).unwrap().stdout.len(), super::live::PEEK_MAX);
}

/// A process started outside the table (the glue's Task delegate): its own group, like `detached: true` in Node.
fn detached_sleep() -> std::process::Child {
    use std::os::unix::process::CommandExt;
    std::process::Command::new("sleep")
        .arg("1000")
        .process_group(0)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn adopted_tasks_share_the_id_space_caps_and_stop_of_background_bash() {
    use std::os::unix::process::ExitStatusExt;
    let f = Fixture::new();
    let table = TaskTable::new(
        Caps {
            per_session: 2,
            ..Caps::default()
        },
        fast(),
    );
    let a = SessionTasks::new(table.clone(), f.store.clone());
    let bash = start(&a, &f, "exec sleep 1000").await.unwrap();
    let mut child = detached_sleep();
    let (view, adopted) = a
        .adopt(child.id() as i32, "Task reviewer".into(), Some("look".into()))
        .unwrap();
    assert_eq!(view.status, TaskStatus::Running);
    assert!(view.id.starts_with("task-"));
    assert_eq!(a.running(), 2, "one count for both kinds");
    let ids: Vec<String> = table.list(a.owner()).unwrap().into_iter().map(|t| t.id).collect();
    assert_eq!(ids, [bash.id.clone(), view.id.clone()]);
    // the per-session cap counts the adopted task: a third of either kind is refused
    let mut other = detached_sleep();
    let e = a.adopt(other.id() as i32, "Task x".into(), None).err().unwrap();
    assert_eq!(e.code, HOST_OVERLOADED);
    assert!(start(&a, &f, "exec sleep 1000").await.is_err());
    other.kill().unwrap();
    other.wait().unwrap();
    // TaskStop kills the adopted process group; the glue then publishes the end
    let s = table
        .stop(a.owner(), &view.id, Duration::from_millis(200))
        .await
        .unwrap();
    assert!(s.stop_requested);
    assert!(adopted.stop_requested());
    assert!(
        child.wait().unwrap().signal().is_some(),
        "the delegate's group was signalled"
    );
    adopted.finish(1, "partial answer", "");
    let v = finish(&table, a.owner(), &view.id).await;
    assert_eq!(v.status, TaskStatus::Stopped);
    assert_eq!(v.stdout.text, "partial answer");
    a.close();
}

#[tokio::test]
async fn an_adopted_task_completes_with_its_answer_or_fails_when_dropped_unfinished() {
    let f = Fixture::new();
    let a = SessionTasks::new(TaskTable::new(Caps::default(), fast()), f.store.clone());
    let (v, adopted) = a.adopt(4242, "Task r".into(), None).unwrap();
    adopted.finish(0, "the answer", "");
    let done = finish(a.table(), a.owner(), &v.id).await;
    assert_eq!(
        (done.status, done.stdout.text.as_str()),
        (TaskStatus::Completed, "the answer")
    );
    let (v, adopted) = a.adopt(4243, "Task r".into(), None).unwrap();
    drop(adopted);
    assert_eq!(finish(a.table(), a.owner(), &v.id).await.status, TaskStatus::Failed);
    assert_eq!(a.adopt(1, "x".into(), None).err().unwrap().code, "INVALID_ARGUMENT");
    a.close();
    assert_eq!(a.adopt(4244, "x".into(), None).err().unwrap().code, TOOL_FAILED);
}

#[tokio::test]
async fn a_later_process_uses_the_remembered_path_while_its_probe_runs_and_a_profile_edit_forgets_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join(".profile"), "# v1\n").unwrap();
    let file = dir.path().join("agent").join("login-path.json");
    let quick = dir.path().join("sh");
    std::fs::write(
        &quick,
        "#!/bin/sh\nPATH=/pct-remembered:$PATH\nexec /bin/sh -c \"$3\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&quick, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The first process probes and remembers the answer.
    let first = login::LoginPath::new_in(
        Some(quick.display().to_string()),
        Duration::from_secs(5),
        Some(home.clone()),
    );
    first.prewarm_with(Some(file.clone()));
    let p = first.get().await.unwrap();
    assert!(p.starts_with("/pct-remembered:"), "{p}");
    for _ in 0..200 {
        if file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A later process whose probe hangs (same shell path, same profile): its call gets the remembered PATH at once.
    std::fs::write(&quick, "#!/bin/sh\nexec sleep 3000\n").unwrap();
    let later = login::LoginPath::new_in(
        Some(quick.display().to_string()),
        Duration::from_secs(1),
        Some(home.clone()),
    );
    later.prewarm_with(Some(file.clone()));
    // Given an hour, the call still answers at once from memory: were it waiting on the hung probe instead, the
    // 60 s bound below would end it (a bound on a hang, not a speed check).
    let remembered = tokio::time::timeout(
        Duration::from_secs(60),
        later.for_call_within(Duration::from_secs(3600)),
    )
    .await;
    assert_eq!(
        remembered.ok(),
        Some(Some(p.clone())),
        "the call waited on the hung probe"
    );
    // An edited profile is another key: nothing remembered, the call waits its bound and runs with the inherited PATH.
    std::fs::write(home.join(".profile"), "# v2, longer\n").unwrap();
    let edited = login::LoginPath::new_in(Some(quick.display().to_string()), Duration::from_secs(1), Some(home));
    edited.prewarm_with(Some(file.clone()));
    assert_eq!(edited.for_call_within(Duration::from_millis(100)).await, None);
    // A foreign or oversized file is ignored, never trusted.
    std::fs::write(&file, "x".repeat(70 * 1024)).unwrap();
    let foreign = login::LoginPath::new_in(Some("/bin/sh".into()), Duration::from_secs(5), None);
    foreign.prewarm_with(Some(file));
    assert!(foreign
        .for_call_within(Duration::from_secs(1))
        .await
        .is_some_and(|p| !p.starts_with("/pct-remembered:")));
}

#[tokio::test]
async fn detached_descendants_are_collected_when_the_foreground_command_ends() {
    let f = Fixture::new();
    let (marked, cleared) = (f.dir.path().join("marked.pid"), f.dir.path().join("cleared.pid"));
    // One escapee keeps the marker (`setsid … &`), one clears it and double-forks away from the group; both close
    // their output, so the command's result does not wait for them. The command itself lives long enough for the
    // descendant watch to see the second one.
    let cmd = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 1000' >/dev/null 2>&1 & \
         (setsid env -u PCT_JOB sh -c 'echo $$ > {}; exec sleep 1000' >/dev/null 2>&1 &); sleep 1; echo done",
        marked.display(),
        cleared.display()
    );
    let o = f.run(&cmd, Duration::from_secs(600)).await;
    assert_eq!(
        (o.exit, o.killed, o.stdout.text.as_str()),
        (Exit::Code(0), None, "done\n")
    );
    let (a, b) = (read_pid(&marked), read_pid(&cleared));
    assert!(poll(|| dead(a) && dead(b)).await, "both escapees were stopped");
    assert_eq!(o.collected, 2);
    let text = render::outcome(&o).text;
    assert!(
        text.contains("left 2 processes running") && text.contains("runInBackground"),
        "{text}"
    );
    // A command that leaves nothing says nothing about it.
    let o = f.run("echo plain", Duration::from_secs(60)).await;
    assert_eq!(o.collected, 0);
    assert!(
        !render::outcome(&o).text.contains("left"),
        "{}",
        render::outcome(&o).text
    );
}

#[test]
fn tail_lines_are_the_last_non_blank_lines_bounded_and_sanitised() {
    use render::{tail_lines, TAIL_LINES_MAX, TAIL_LINE_BYTES};
    let text = "one\ntwo\n\n  \nthree\nfour\n";
    assert_eq!(tail_lines(text, 3), ["two", "three", "four"]);
    assert_eq!(tail_lines(text, 0), Vec::<String>::new());
    assert_eq!(tail_lines("", 3), Vec::<String>::new());
    // a progress bar redrawn with \r shows its last state; colours and other controls are shown, never obeyed
    assert_eq!(tail_lines("10%\r50%\r100%\r\n", 1), ["100%"]);
    assert_eq!(tail_lines("\x1b[31mred\x1b[0m\n", 1), ["\\x1b[31mred\\x1b[0m"]);
    // at most TAIL_LINES_MAX lines, however many are asked for
    let many: String = (0..100).map(|i| format!("l{i}\n")).collect();
    let got = tail_lines(&many, 1000);
    assert_eq!(got.len(), TAIL_LINES_MAX);
    assert_eq!(got.last().unwrap(), "l99");
    // a line at the byte limit is whole; one byte over is cut with an ellipsis (on a character boundary)
    let exact = "x".repeat(TAIL_LINE_BYTES);
    assert_eq!(tail_lines(&exact, 1), [exact]);
    let over = format!("{}é", "x".repeat(TAIL_LINE_BYTES - 1));
    assert_eq!(tail_lines(&over, 1), [format!("{}…", "x".repeat(TAIL_LINE_BYTES - 1))]);
}

#[tokio::test]
async fn task_list_carries_the_cpu_time_of_a_running_task_group() {
    let f = Fixture::new();
    let table = TaskTable::new(Caps::default(), fast());
    let a = SessionTasks::new(table.clone(), f.store.clone());
    let busy = start(&a, &f, "while :; do :; done").await.unwrap();
    let mut cpu = None;
    for _ in 0..500 {
        let l = table.list(a.owner()).unwrap();
        cpu = l.iter().find(|t| t.id == busy.id).and_then(|t| t.cpu_ms);
        if cpu.is_some_and(|c| c > 0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        cpu.is_some_and(|c| c > 0.0),
        "a busy task's CPU time was never listed: {cpu:?}"
    );
    // TaskWait does not scan /proc
    assert_eq!(
        table.wait(a.owner(), &busy.id, Duration::ZERO).await.unwrap().cpu_ms,
        None
    );
    let mut s = table.stop(a.owner(), &busy.id, MAX_OBSERVATION).await.unwrap();
    while s.status == TaskStatus::Running {
        s = table.wait(a.owner(), &busy.id, MAX_OBSERVATION).await.unwrap();
    }
    let l = table.list(a.owner()).unwrap();
    assert_eq!(
        l.iter().find(|t| t.id == busy.id).unwrap().cpu_ms,
        None,
        "a finished task has no CPU figure"
    );
}
