//! Manager tests against real processes (bash on pipes). Timers are shortened only where a test needs a stop
//! to escalate; every other limit is the real one.

use super::*;
use crate::output::RecoveryStore;
use crate::shell::job::StopPhase;
use crate::test_support::until;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn ctx() -> CallContext {
    CallContext {
        cwd: std::env::temp_dir(),
        shell: Some(ShellConfig::default_posix()),
        ..Default::default()
    }
}

fn manager_with(limits: Limits) -> (tempfile::TempDir, Arc<Manager>) {
    let dir = tempfile::tempdir().unwrap();
    let store = RecoveryStore::with_options("shell", Some(dir.path().to_path_buf()), 262_144);
    (dir, Arc::new(Manager::new(limits, store)))
}

fn manager() -> (tempfile::TempDir, Arc<Manager>) {
    manager_with(Limits::default())
}

fn fast_stop() -> Limits {
    Limits {
        stop_grace: Duration::from_millis(300),
        stop_confirm: Duration::from_millis(500),
        ..Limits::default()
    }
}

/// Whether a pid is a live (non-zombie) process, from the process table.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s.rsplit(')').next().unwrap_or("").trim().chars().next().unwrap_or('X');
            state != 'Z' && state != 'X'
        }
        Err(_) => false,
    }
}

async fn exec(m: &Manager, args: Value) -> Result<ShellResult, ShellError> {
    m.exec(&args, ctx()).await
}
async fn write(m: &Manager, args: Value) -> Result<ShellResult, ShellError> {
    m.write_stdin(&args, ctx()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finite_command_completes_in_one_call() {
    let (_d, m) = manager();
    let r = exec(&m, json!({"cmd": "echo hi; echo err >&2; exit 3"})).await.unwrap();
    assert_eq!(r.status, Status::Completed);
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.stdout, "hi\n");
    assert_eq!(r.stderr, "err\n");
    assert!(r.recovery.is_none(), "small complete result needs no file");
    assert_eq!(m.recovery_store().file_count(), 0);
    let t = r.text();
    assert!(
        t.starts_with(&format!("session_id {}: completed\nexit_code: 3", r.session_id)),
        "{t}"
    );
    assert!(t.contains("[stdout]\nhi\n[stderr]\nerr\n"), "{t}");
    let d = r.details();
    assert_eq!(d["session_id"], d["sessionId"]);
    assert_eq!(d["exit_code"], json!(3));
    assert_eq!(d["exitCode"], json!(3));
    // the handle was released by the terminal read
    let e = write(&m, json!({"session_id": r.session_id})).await.unwrap_err();
    assert_eq!(e.code, "stale-session");
    let e = write(&m, json!({"session_id": "pct-shell-nope"})).await.unwrap_err();
    assert_eq!(e.code, "invalid-session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yielded_command_polled_to_completion_with_recovery() {
    let (_d, m) = manager();
    let r = exec(
        &m,
        json!({"cmd": "echo first; sleep 0.4; echo second", "yield_time_ms": 150}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, Status::Running);
    assert_eq!(r.stdout, "first\n");
    assert!(r.text().contains("write_stdin"));
    let rec = r.recovery.clone().expect("a yield creates the recovery file");
    assert_eq!(rec.state, crate::output::RecoveryState::Capturing);
    let r2 = write(&m, json!({"sessionId": r.session_id, "yieldTimeMs": 10000}))
        .await
        .unwrap();
    assert_eq!(r2.status, Status::Completed);
    assert_eq!(r2.exit_code, Some(0));
    assert_eq!(r2.stdout, "second\n");
    let rec = r2.recovery.unwrap();
    assert_eq!(rec.state, crate::output::RecoveryState::Complete);
    // the prefix consumed by the first poll is still recoverable
    assert_eq!(
        std::fs::read_to_string(rec.path.as_ref().unwrap()).unwrap(),
        "first\nsecond\n"
    );
    assert_eq!(m.delete_recovery_files(), 1);
    assert!(!std::path::Path::new(rec.path.as_ref().unwrap()).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_round_trip_and_close() {
    let (_d, m) = manager();
    let r = exec(
        &m,
        json!({"cmd": "read x; echo got:$x; cat; echo end", "yield_time_ms": 100}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, Status::Running);
    let r = write(
        &m,
        json!({"session_id": r.session_id, "chars": "abc\n", "yield_time_ms": 300}),
    )
    .await
    .unwrap();
    assert_eq!(r.input_delivery, Some(job::Delivery::Written));
    assert!(r.stdout.contains("got:abc"), "{:?}", r.stdout);
    let id = r.session_id.clone();
    // verbatim: no newline added, stdin not closed
    let r = write(&m, json!({"session_id": id, "input": "tail", "yield_time_ms": 300}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Running);
    assert_eq!(r.stdout, "tail");
    let r = write(&m, json!({"session_id": id, "closeStdin": true, "yield_time_ms": 5000}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Completed);
    assert_eq!(r.stdout, "end\n");
    assert_eq!(r.details()["stdin"]["state"], json!("closed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_refusals() {
    let (_d, m) = manager();
    let r = exec(&m, json!({"cmd": "cat >/dev/null; sleep 5", "yield_time_ms": 0}))
        .await
        .unwrap();
    assert!(r.recovery.is_none(), "a yield with no output yet needs no file");
    let id = r.session_id.clone();
    let e = write(&m, json!({"session_id": id, "chars": "x", "terminate": true}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "stdin-failed");
    let r = write(&m, json!({"session_id": id, "closeStdin": true, "yield_time_ms": 0}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Running);
    // repeated EOF is harmless
    write(&m, json!({"session_id": id, "closeStdin": true, "yield_time_ms": 0}))
        .await
        .unwrap();
    let e = write(&m, json!({"session_id": id, "chars": "late"})).await.unwrap_err();
    assert_eq!(e.code, "stdin-closed");
    m.cleanup().await.unwrap();

    // stdin transport: the command consumed stdin
    let c = CallContext {
        shell: Some(ShellConfig {
            shell: "/bin/bash".into(),
            args: vec!["-s".into()],
            stdin_transport: true,
        }),
        ..ctx()
    };
    let r = m
        .exec(&json!({"cmd": "echo via-stdin; sleep 2", "yield_time_ms": 300}), c)
        .await
        .unwrap();
    assert_eq!(r.stdout, "via-stdin\n");
    let e = write(&m, json!({"session_id": r.session_id, "chars": "x"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "stdin-transport");
    // empty input still polls
    let r = write(&m, json!({"session_id": r.session_id, "chars": "", "yield_time_ms": 0}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Running);
    m.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_admission_limits() {
    let (_d, m) = manager_with(fast_stop());
    // a program that never reads stdin: writes beyond the pipe buffer stay outstanding
    let r = exec(&m, json!({"cmd": "sleep 30", "yield_time_ms": 0})).await.unwrap();
    let id = r.session_id.clone();
    let big = "x".repeat(262_144);
    let r = write(&m, json!({"session_id": id, "chars": big, "yield_time_ms": 0}))
        .await
        .unwrap();
    assert_eq!(
        r.input_delivery,
        Some(job::Delivery::Unknown),
        "not finished when the call returned"
    );
    assert_eq!(r.stdin.pending_bytes, 262_144);
    let e = write(&m, json!({"session_id": id, "chars": "y"})).await.unwrap_err();
    assert_eq!(e.code, "stdin-overload");
    m.terminate(&id).await.unwrap();

    let r = exec(&m, json!({"cmd": "sleep 30", "yield_time_ms": 0})).await.unwrap();
    let id = r.session_id.clone();
    write(
        &m,
        json!({"session_id": id, "chars": "z".repeat(100_000), "yield_time_ms": 0}),
    )
    .await
    .unwrap();
    for _ in 0..15 {
        write(&m, json!({"session_id": id, "chars": "1", "yield_time_ms": 0}))
            .await
            .unwrap();
    }
    let r = write(&m, json!({"session_id": id, "yield_time_ms": 0})).await.unwrap();
    assert_eq!(r.stdin.pending_calls, 16);
    let e = write(&m, json!({"session_id": id, "chars": "1", "yield_time_ms": 0}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "stdin-overload");
    // stopping breaks the pipe: outstanding writes settle as unknown, admission is released
    let r = write(&m, json!({"session_id": id, "terminate": true})).await.unwrap();
    assert_eq!(r.status, Status::Terminated);
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert!(r.text().contains("exit_code: signal SIGTERM"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_input_call_keeps_admission_until_its_write_settles() {
    let (_d, m) = manager_with(fast_stop());
    // a program that never reads stdin: the cancelled call's write stays queued in the writer
    let r = exec(&m, json!({"cmd": "sleep 30", "yield_time_ms": 0})).await.unwrap();
    let id = r.session_id.clone();
    let cancel = Cancel::new();
    let c = CallContext {
        cancel: Some(cancel.clone()),
        stop_on_cancel: false,
        ..ctx()
    };
    let m2 = m.clone();
    let args = json!({"session_id": id, "chars": "x".repeat(262_144), "yield_time_ms": 30_000});
    let call = tokio::spawn(async move { m2.write_stdin(&args, c).await });
    let mut admitted = false;
    for _ in 0..1500 {
        let r = write(&m, json!({"session_id": id, "yield_time_ms": 0})).await.unwrap();
        if r.stdin.pending_calls == 1 {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(admitted, "the input call was admitted");
    cancel.cancel();
    assert_eq!(call.await.unwrap().unwrap_err().code, "aborted");
    // the call is gone but its write is still queued: admission stays counted and the limit still holds
    let r = write(&m, json!({"session_id": id, "yield_time_ms": 0})).await.unwrap();
    assert_eq!((r.stdin.pending_bytes, r.stdin.pending_calls), (262_144, 1));
    let e = write(&m, json!({"session_id": id, "chars": "y"})).await.unwrap_err();
    assert_eq!(e.code, "stdin-overload");
    // stopping breaks the pipe: the writer settles the queued write and only then releases its admission
    let job = m.lookup(&id).unwrap();
    m.terminate(&id).await.unwrap();
    let mut released = false;
    for _ in 0..1500 {
        let settled = {
            let st = job.state.lock();
            st.stdin_pending_bytes == 0 && st.stdin_pending_calls == 0
        };
        if settled {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(released, "admission released once the write settled");
    m.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_pipe_reports_unknown_delivery() {
    let (_d, m) = manager();
    // closes its stdin early, keeps running
    let r = exec(&m, json!({"cmd": "exec 0<&-; sleep 2", "yield_time_ms": 200}))
        .await
        .unwrap();
    let r = write(
        &m,
        json!({"session_id": r.session_id, "chars": "hello", "yield_time_ms": 200}),
    )
    .await
    .unwrap();
    assert_eq!(r.input_delivery, Some(job::Delivery::Unknown));
    assert_eq!(r.details()["inputDelivery"], json!("unknown"));
    let e = write(&m, json!({"session_id": r.session_id, "chars": "again"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "stdin-closed");
    m.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_streams_share_one_budget_stdout_first() {
    let (_d, m) = manager();
    let cmd = "for i in 1 2 3; do head -c 500 /dev/zero | tr '\\0' a; head -c 500 /dev/zero | tr '\\0' b >&2; done";
    let r = exec(&m, json!({"cmd": cmd, "maxOutputBytes": 2048})).await.unwrap();
    assert_eq!(r.status, Status::Completed);
    assert_eq!(r.stdout, "a".repeat(1500));
    assert_eq!(r.stderr, "b".repeat(548));
    assert_eq!(r.dropped, 952);
    assert!(r.truncated());
    let rec = r.recovery.expect("a lossy preview needs the file");
    assert_eq!(rec.state, crate::output::RecoveryState::Complete);
    assert_eq!(rec.bytes, 3000);
    let body = std::fs::read_to_string(rec.path.unwrap()).unwrap();
    assert_eq!(body.matches('a').count(), 1500);
    assert_eq!(body.matches('b').count(), 1500);
    // tokens: 256 tokens = 1024 bytes, and the smaller of two limits wins
    let r = exec(
        &m,
        json!({"cmd": "head -c 5000 /dev/zero | tr '\\0' c", "max_output_tokens": 256, "maxOutputBytes": 4096}),
    )
    .await
    .unwrap();
    assert_eq!(r.stdout.len(), 1024);
    assert_eq!(r.dropped, 3976);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn utf8_split_across_reads_and_cut_on_boundary() {
    let (_d, m) = manager();
    let r = exec(&m, json!({"cmd": "printf '\\342\\202'; sleep 0.2; printf '\\254\\n'"}))
        .await
        .unwrap();
    assert_eq!(r.stdout, "€\n");
    // 1 + 600*2 bytes, budget 1024: cut at 1023 so no character is split
    let r = exec(
        &m,
        json!({"cmd": "printf a; for i in $(seq 600); do printf 'é'; done", "maxOutputBytes": 1024}),
    )
    .await
    .unwrap();
    assert_eq!(r.stdout.len(), 1023);
    assert_eq!(r.dropped, 1201 - 1023);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grandchild_keeps_job_managed_until_stopped() {
    let (_d, m) = manager();
    let r = exec(&m, json!({"cmd": "sleep 30 & echo $!", "yield_time_ms": 500}))
        .await
        .unwrap();
    // the leader exited at once, but its child holds the group and the pipes
    assert_eq!(r.status, Status::Running);
    let pid: i32 = r.stdout.trim().parse().unwrap();
    assert!(alive(pid));
    assert_eq!(m.status().running, 1);
    let r = write(&m, json!({"session_id": r.session_id, "terminate": true}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Terminated);
    assert!(!r.unknown_outcome);
    // killed, reaped (no zombie) — checked in the process table
    until("the grandchild was killed and reaped", || !alive(pid)).await;
    assert_eq!(m.status().running, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_escalates_to_sigkill_and_second_stop_kills_at_once() {
    let (_d, m) = manager_with(fast_stop());
    let r = exec(
        &m,
        json!({"cmd": "trap '' TERM; sleep 30 & wait", "yield_time_ms": 100}),
    )
    .await
    .unwrap();
    let r = write(&m, json!({"session_id": r.session_id, "terminate": true}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Terminated, "{}", r.text());
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"), "{}", r.text());

    // second stop while the first waits out its grace period: SIGKILL at once
    // (a grace of an hour: only the second stop's SIGKILL can end this job while the test runs)
    let limits = Limits {
        stop_grace: Duration::from_secs(3600),
        ..fast_stop()
    };
    let (_d2, m2) = manager_with(limits);
    let r = exec(
        &m2,
        json!({"cmd": "trap '' TERM; sleep 30 & wait", "yield_time_ms": 100}),
    )
    .await
    .unwrap();
    let id = r.session_id.clone();
    let m2b = m2.clone();
    let id2 = id.clone();
    let first = tokio::spawn(async move { m2b.terminate(&id2).await });
    // the second stop comes once the first has sent SIGTERM and waits out its grace period
    let job = m2.lookup(&id).unwrap();
    until("the first stop sent SIGTERM", || {
        job.state.lock().stop == StopPhase::Term
    })
    .await;
    let bound = crate::test_support::BOUND;
    let second = tokio::time::timeout(bound, m2.terminate(&id)).await;
    assert!(second
        .expect("the second stop did not kill at once (the grace period is an hour)")
        .unwrap());
    let first = tokio::time::timeout(bound, first).await;
    assert!(first
        .expect("the first stop did not end with the second's SIGKILL")
        .unwrap()
        .unwrap());
    assert_eq!(job.state.lock().stop, StopPhase::Kill);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfirmed_stop_reports_unknown_outcome_and_cleanup_incomplete() {
    let (_d, m) = manager_with(fast_stop());
    // an escaped process (own session, marker removed from its environment) keeps the stdout pipe open
    let r = exec(
        &m,
        json!({"cmd": "setsid env -u PCT_JOB sleep 30 & echo $!", "yield_time_ms": 300}),
    )
    .await
    .unwrap();
    let pid: i32 = r.stdout.trim().parse().unwrap();
    let id = r.session_id.clone();
    let r = write(&m, json!({"session_id": id, "terminate": true})).await.unwrap();
    assert_eq!(r.status, Status::Terminated);
    assert!(r.unknown_outcome);
    assert_eq!(r.details()["unknownOutcome"], json!(true));
    assert!(r.text().contains("exit_code: unknown"));
    assert_eq!(r.survivors, vec![pid], "the pipe holder is named");
    assert!(r.text().contains(&format!("still alive: pid {pid}")), "{}", r.text());
    let e = m.cleanup().await.unwrap_err();
    assert!(e.message.contains(&format!("pid {pid}")), "{}", e.message);
    assert_eq!(e.code, "cleanup-incomplete");
    assert_eq!(m.status_json()["cleanupPending"], json!(true));
    // handle kept for retry; once the escaped process is gone the retry confirms
    // SAFETY: kill(2) takes plain integers; a stale pid only makes it fail.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let r = write(&m, json!({"session_id": id, "terminate": true})).await.unwrap();
    assert_eq!(r.status, Status::Terminated);
    assert!(!r.unknown_outcome);
    m.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_limit_at_boundary() {
    let (_d, m) = manager_with(fast_stop());
    for _ in 0..16 {
        let r = exec(&m, json!({"cmd": "sleep 30", "yield_time_ms": 0})).await.unwrap();
        assert_eq!(r.status, Status::Running);
    }
    let e = exec(&m, json!({"cmd": "true", "yield_time_ms": 0})).await.unwrap_err();
    assert_eq!(e.code, "session-limit");
    m.close().await.unwrap();
    assert_eq!(
        exec(&m, json!({"cmd": "true"})).await.unwrap_err().code,
        "manager-closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_terminal_handles_are_pruned() {
    let limits = Limits {
        max_terminal: 32,
        ..Limits::default()
    };
    let (_d, m) = manager_with(limits);
    let mut ids = vec![];
    for _ in 0..33 {
        ids.push(
            exec(&m, json!({"cmd": "sleep 0.05", "yield_time_ms": 0}))
                .await
                .unwrap()
                .session_id,
        );
        until("fewer than 16 jobs run", || m.status().running < 16).await;
    }
    until("every job ended", || m.status().running == 0).await;
    // 33 unread terminal handles: the oldest is pruned, the 32 newest are kept
    assert_eq!(m.status().unread_terminal, 33);
    let mut stale = 0;
    for id in &ids {
        match write(&m, json!({"session_id": id})).await {
            Ok(r) => assert_eq!(r.status, Status::Completed),
            Err(e) => {
                assert_eq!(e.code, "stale-session");
                stale += 1;
            }
        }
    }
    assert_eq!(stale, 1, "exactly the oldest of 33 unread handles is pruned");

    let ttl = Duration::from_millis(500);
    let limits = Limits {
        terminal_ttl: ttl,
        ..Limits::default()
    };
    let (_d, m) = manager_with(limits);
    let id = exec(&m, json!({"cmd": "sleep 0.05", "yield_time_ms": 0}))
        .await
        .unwrap()
        .session_id;
    let job = m.lookup(&id).unwrap();
    until("the job settled", || job.state.lock().settled()).await;
    let settled_at = job.state.lock().settled_at.unwrap();
    // Look the handle up (a lookup prunes, and reads nothing) until it is gone. The time-to-live decides each
    // answer: a lookup that began after it had passed must find the handle pruned, one that ended before must
    // find it kept. No duration is asserted; each answer is checked against the clock read around it.
    let mut gone = false;
    until("the unread handle was pruned after its time-to-live", || {
        let before = settled_at.elapsed();
        let found = m.lookup(&id);
        let after = settled_at.elapsed();
        match found {
            Ok(_) => {
                assert!(before < ttl, "kept {before:?} after it settled, past its time-to-live");
            }
            Err(e) => {
                assert_eq!(e.code, "stale-session");
                assert!(
                    after >= ttl,
                    "pruned {after:?} after it settled, before its time-to-live"
                );
                gone = true;
            }
        }
        gone
    })
    .await;
    assert_eq!(
        write(&m, json!({"session_id": id})).await.unwrap_err().code,
        "stale-session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_observer_gets_stale_session() {
    let (_d, m) = manager();
    let r = exec(&m, json!({"cmd": "sleep 0.5; echo done", "yield_time_ms": 0}))
        .await
        .unwrap();
    let id = r.session_id.clone();
    let a = {
        let m = m.clone();
        let id = id.clone();
        tokio::spawn(async move { write(&m, json!({"session_id": id, "yield_time_ms": 5000})).await })
    };
    // b queues behind a once a holds the job's observation lock
    let job = m.lookup(&id).unwrap();
    until("the first observer holds the job", || {
        job.observe_lock.try_lock().is_err()
    })
    .await;
    let b = {
        let m = m.clone();
        let id = id.clone();
        tokio::spawn(async move { write(&m, json!({"session_id": id, "yield_time_ms": 5000})).await })
    };
    let ra = a.await.unwrap().unwrap();
    assert_eq!(ra.status, Status::Completed);
    assert_eq!(b.await.unwrap().unwrap_err().code, "stale-session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_errors_and_cwd() {
    let (d, m) = manager();
    let e = exec(&m, json!({"cmd": "true", "workdir": "no/such/dir"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "invalid-cwd");
    std::fs::write(d.path().join("f"), "x").unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let c = CallContext {
        cwd: d.path().to_path_buf(),
        ..ctx()
    };
    assert_eq!(
        m.exec(&json!({"cmd": "true", "workdir": "f"}), c.clone())
            .await
            .unwrap_err()
            .code,
        "invalid-cwd"
    );
    let r = m.exec(&json!({"cmd": "pwd", "cwd": "sub"}), c.clone()).await.unwrap();
    assert_eq!(
        r.stdout.trim(),
        d.path().join("sub").canonicalize().unwrap().to_str().unwrap()
    );
    let c2 = CallContext {
        shell: Some(ShellConfig {
            shell: "/no/such/shell".into(),
            args: vec!["-c".into()],
            stdin_transport: false,
        }),
        ..ctx()
    };
    assert_eq!(
        m.exec(&json!({"cmd": "true"}), c2).await.unwrap_err().code,
        "shell-unavailable"
    );
    let c3 = CallContext {
        shell: Some(ShellConfig {
            shell: d.path().join("f").display().to_string(),
            args: vec![],
            stdin_transport: false,
        }),
        ..ctx()
    };
    assert_eq!(
        m.exec(&json!({"cmd": "true"}), c3).await.unwrap_err().code,
        "spawn-failed"
    );
    let c4 = CallContext { shell: None, ..ctx() };
    assert_eq!(
        m.exec(&json!({"cmd": "true"}), c4).await.unwrap_err().code,
        "shell-unavailable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_overlay_for_one_spawn() {
    let (_d, m) = manager();
    let c = CallContext {
        env: Some(json!({"PCT_OVERLAY": "yes"})),
        ..ctx()
    };
    let r = m
        .exec(&json!({"cmd": "echo ${PCT_OVERLAY:-unset}; echo $HOME"}), c)
        .await
        .unwrap();
    let mut lines = r.stdout.lines();
    assert_eq!(lines.next(), Some("yes"));
    assert!(!lines.next().unwrap().is_empty(), "inherited env stays");
    let r = exec(&m, json!({"cmd": "echo ${PCT_OVERLAY:-unset}"})).await.unwrap();
    assert_eq!(r.stdout, "unset\n", "the overlay does not leak into the next spawn");
    for bad in [json!({"A": 1}), json!({"A=B": "x"}), json!("x"), json!({"": "x"})] {
        let c = CallContext {
            env: Some(bad),
            ..ctx()
        };
        assert_eq!(
            m.exec(&json!({"cmd": "true"}), c).await.unwrap_err().code,
            "spawn-failed"
        );
    }
}

/// Waits (bounded) until the manager counts `n` running jobs.
async fn until_running(m: &Manager, n: usize) {
    until(&format!("{n} running jobs"), || m.status().running == n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_direct_jobs_not_nested_ones() {
    let (_d, m) = manager_with(fast_stop());
    let cancel = Cancel::new();
    let c = CallContext {
        cancel: Some(cancel.clone()),
        stop_on_cancel: true,
        ..ctx()
    };
    let m2 = m.clone();
    let call = tokio::spawn(async move { m2.exec(&json!({"cmd": "sleep 30 & echo $!; wait"}), c).await });
    // cancel once the job runs (the manager counts it), not after a guessed delay
    until_running(&m, 1).await;
    cancel.cancel();
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.code, "aborted");
    until("the direct call's job was stopped", || m.status().running == 0).await;

    let cancel = Cancel::new();
    let c = CallContext {
        cancel: Some(cancel.clone()),
        stop_on_cancel: false,
        ..ctx()
    };
    let m2 = m.clone();
    let call = tokio::spawn(async move { m2.exec(&json!({"cmd": "read x; echo got-$x; sleep 30"}), c).await });
    until_running(&m, 1).await;
    cancel.cancel();
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.code, "aborted");
    // A direct call's stop begins before its `aborted` returns (the stop phase is set as SIGTERM goes out); the
    // job answering input afterwards shows no stop reached it.
    let id = e
        .message
        .split_once("Session ")
        .and_then(|(_, rest)| rest.split_once(" keeps running"))
        .map(|(id, _)| id.to_string())
        .unwrap_or_else(|| panic!("the aborted call names its session as running: {}", e.message));
    let r = write(&m, json!({"session_id": id, "chars": "x\n", "yield_time_ms": 10_000}))
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (Status::Running, "got-x\n"),
        "{}",
        r.text()
    );
    assert_eq!(
        m.lookup(&id).unwrap().state.lock().stop,
        StopPhase::None,
        "a nested call's cancellation leaves the shell running"
    );
    assert_eq!(m.status().running, 1);
    // a call cancelled before it starts runs nothing
    let cancel = Cancel::new();
    cancel.cancel();
    let c = CallContext {
        cancel: Some(cancel),
        ..ctx()
    };
    assert_eq!(m.exec(&json!({"cmd": "true"}), c).await.unwrap_err().code, "aborted");
    assert_eq!(m.status().running, 1);
    m.close().await.unwrap();
}

fn rss_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_stays_in_bounded_memory() {
    let (_d, m) = manager();
    let before = rss_kb();
    let r = exec(
        &m,
        json!({"cmd": "yes | head -c 200000000", "yield_time_ms": 60000, "maxOutputBytes": 262144}),
    )
    .await
    .unwrap();
    let mut last = r;
    while last.status == Status::Running {
        last = write(
            &m,
            json!({"session_id": last.session_id, "yield_time_ms": 60000, "maxOutputBytes": 1024}),
        )
        .await
        .unwrap();
    }
    assert_eq!(last.status, Status::Completed);
    let rec = last.recovery.unwrap();
    assert_eq!(rec.captured_bytes, 200_000_000);
    assert_eq!(rec.bytes, 200_000_000);
    assert_eq!(std::fs::metadata(rec.path.unwrap()).unwrap().len(), 200_000_000);
    assert_eq!(m.recovery_store().file_count(), 1);
    let grown = rss_kb().saturating_sub(before);
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB for 200 MB of output");
    m.delete_recovery_files();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_kills_marked_process_that_left_the_group() {
    let (_d, m) = manager_with(fast_stop());
    // own session, pipes closed: invisible to the group and the pipes, found by its PCT_JOB marker
    let r = exec(
        &m,
        json!({"cmd": "setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $!; sleep 30", "yield_time_ms": 300}),
    )
    .await
    .unwrap();
    let pid: i32 = r.stdout.trim().parse().unwrap();
    let r = write(&m, json!({"session_id": r.session_id, "terminate": true}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Terminated);
    assert!(!r.unknown_outcome, "{}", r.text());
    assert!(
        !crate::shell::process::marked_pids(|_| true).contains(&pid),
        "escaped process killed"
    );
    m.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_kills_marked_processes_of_completed_commands() {
    let (_d, m) = manager_with(fast_stop());
    let r = exec(
        &m,
        json!({"cmd": "setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $!"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, Status::Completed);
    let pid: i32 = r.stdout.trim().parse().unwrap();
    assert!(crate::shell::process::marked_pids(|_| true).contains(&pid));
    m.close().await.unwrap();
    // Gone within a moment: a killed process leaves the process table asynchronously, which a loaded machine
    // stretches; a survivor (the sleep runs 30 s) still fails here.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while crate::shell::process::marked_pids(|_| true).contains(&pid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!crate::shell::process::marked_pids(|_| true).contains(&pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_after_completion_stops_marked_leftovers() {
    let (_d, m) = manager_with(fast_stop());
    // completes on its own while unread, leaving a marked process outside its group with the pipes closed
    let r = exec(
        &m,
        json!({"cmd": "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!; sleep 0.2", "yield_time_ms": 0}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, Status::Running);
    let id = r.session_id.clone();
    let mut stdout = r.stdout.clone();
    // bounded polling (not a timing assertion): wait until the job settled with its result unread
    for _ in 0..600 {
        let s = m.status();
        if s.running == 0 && s.unread_terminal == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(m.status().unread_terminal, 1, "settled, result not read");
    let r = write(&m, json!({"session_id": id, "terminate": true})).await.unwrap();
    stdout.push_str(&r.stdout);
    let pid: i32 = stdout.trim().parse().unwrap();
    assert_eq!(r.status, Status::Completed, "{}", r.text());
    assert_eq!(r.exit_code, Some(0), "its own exit code");
    assert!(!r.unknown_outcome, "{}", r.text());
    assert_eq!(r.leftovers, Some(vec![pid]));
    assert!(
        r.text().contains(&format!(
            "terminate stopped what it left running outside its process group: pid {pid}."
        )),
        "{}",
        r.text()
    );
    assert!(!alive(pid), "the leftover was stopped by terminate, not by close");
    assert!(!crate::shell::process::marked_pids(|_| true).contains(&pid));
    // the terminal result was delivered
    let e = write(&m, json!({"session_id": id})).await.unwrap_err();
    assert_eq!(e.code, "stale-session");
    m.close().await.unwrap();
}

#[test]
fn unconfirmed_leftover_stop_text_keeps_the_exit_code_and_names_survivors() {
    let r = ShellResult {
        session_id: "pct-shell-x".into(),
        status: Status::Completed,
        exit_code: Some(0),
        signal: None,
        stdout: String::new(),
        stderr: String::new(),
        dropped: 0,
        budget: 51200,
        unknown_outcome: true,
        survivors: vec![4242],
        leftovers: Some(vec![4242, 4243]),
        recovery: None,
        input_delivery: None,
        input_bytes: 0,
        stdin: render::StdinSnapshot {
            state: job::StdinState::Closed,
            pending_bytes: 0,
            pending_calls: 0,
        },
    };
    let t = r.text();
    assert!(t.starts_with("session_id pct-shell-x: completed\nexit_code: 0\nThe command had already completed on its own (the exit code above is its own); terminate then went after what it left running outside its process group (pid 4242, 4243).\nThe stop was not confirmed: still alive: pid 4242 "), "{t}");
    assert_eq!(r.details()["unknownOutcome"], json!(true));
    assert_eq!(r.details()["survivorPids"], json!([4242]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_can_be_peeked_without_consuming_its_output() {
    let (_d, m) = manager();
    let calls = Arc::new(js::CallRegistry::default());
    let (cancel, slot) = calls.begin_live("c1");
    assert_eq!(calls.peek("c1", 4096), None, "no job yet");
    let c = CallContext {
        cancel: Some(cancel),
        live: Some(slot),
        ..ctx()
    };
    let m2 = m.clone();
    // Two lines at once, the third only once the peek has seen them and the test creates `go`; the call waits up
    // to 10 s.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let cmd = format!(
        "printf 'one\\ntwo\\n'; until [ -e '{}' ]; do sleep 0.01; done; printf 'three\\n'",
        go.display()
    );
    let args = json!({"cmd": cmd, "yield_time_ms": 10_000});
    let call = tokio::spawn(async move { m2.exec(&args, c).await });
    let mut seen = None;
    until("the first lines while the command runs", || {
        seen = calls.peek("c1", 4096).filter(|p| p.stdout == "one\ntwo\n");
        seen.is_some()
    })
    .await;
    let p = seen.unwrap();
    assert!(p.session_id.starts_with("pct-shell-"), "{p:?}");
    assert_eq!((p.stdout_bytes, p.stderr_bytes, p.settled), (8, 0, false));
    // Bounded: a small peek is the end of the stream, cut on a character boundary.
    assert_eq!(calls.peek("c1", 4).unwrap().stdout, "two\n");
    assert_eq!(calls.peek("c1", 0).unwrap().stdout, "\n", "at least one byte");
    std::fs::write(&go, "").unwrap();
    let r = call.await.unwrap().unwrap();
    // The peeks consumed nothing: the call returns every line.
    assert_eq!(r.stdout, "one\ntwo\nthree\n");
    calls.end("c1");
    assert_eq!(calls.peek("c1", 4096), None, "a finished call is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_stdin_that_waits_publishes_its_job_too() {
    let (_d, m) = manager();
    // `done` only once the peek has seen `got hi` and the test creates `go`
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let cmd = format!(
        "read x; echo got $x; until [ -e '{}' ]; do sleep 0.01; done; echo done",
        go.display()
    );
    let r = exec(&m, json!({"cmd": cmd, "yield_time_ms": 0})).await.unwrap();
    let calls = Arc::new(js::CallRegistry::default());
    let (cancel, slot) = calls.begin_live("w1");
    let c = CallContext {
        cancel: Some(cancel),
        live: Some(slot),
        ..ctx()
    };
    let m2 = m.clone();
    let args = json!({"session_id": r.session_id, "chars": "hi\n", "yield_time_ms": 10_000});
    let call = tokio::spawn(async move { m2.write_stdin(&args, c).await });
    until("write_stdin's wait shows the new output", || {
        calls.peek("w1", 4096).is_some_and(|p| p.stdout == "got hi\n")
    })
    .await;
    std::fs::write(&go, "").unwrap();
    assert_eq!(call.await.unwrap().unwrap().stdout, "got hi\ndone\n");
}

/// A panic while the manager's locks are held (one session's bug) must not turn every later call into a panic:
/// the running session is still polled and fed, and new commands still start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_under_the_locks_leaves_later_calls_working() {
    let (_d, m) = manager();
    let r = exec(&m, json!({"cmd": "read x; echo got:$x", "yield_time_ms": 100}))
        .await
        .unwrap();
    assert_eq!(r.status, Status::Running, "the command waits for its input");
    let m2 = m.clone();
    let panicked = std::thread::spawn(move || m2.panic_under_locks("a bug while holding the locks"))
        .join()
        .is_err();
    assert!(panicked, "the closure panicked while the locks were held");
    let r2 = write(
        &m,
        json!({"session_id": r.session_id, "chars": "hi\n", "yield_time_ms": 10000}),
    )
    .await
    .unwrap();
    assert_eq!((r2.status, r2.exit_code), (Status::Completed, Some(0)));
    assert_eq!(r2.stdout, "got:hi\n");
    let r3 = exec(&m, json!({"cmd": "echo again"})).await.unwrap();
    assert_eq!((r3.status, r3.stdout.as_str()), (Status::Completed, "again\n"));
    assert_eq!(m.status().running, 0);
}
