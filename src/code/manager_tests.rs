use super::cell::NestedCounts;
use super::guards::LeaseGuard;
use super::*;
use crate::code::adapters::fake::FakeAdapters;
use crate::code::adapters::GateRequest;
use crate::code::adapters::{AllowAll, BoxFuture, GateAnswer};
use crate::code::render::render;
use crate::test_support::until;
use parking_lot::Mutex;
use serde_json::json;
use std::sync::atomic::Ordering;

struct FnGate<F: Fn(GateRequest) -> BoxFuture<GateAnswer> + Send + Sync + 'static>(F);
impl<F: Fn(GateRequest) -> BoxFuture<GateAnswer> + Send + Sync + 'static> HostGate for FnGate<F> {
    fn ask(&self, req: GateRequest) -> BoxFuture<GateAnswer> {
        (self.0)(req)
    }
}

fn all() -> Vec<String> {
    ADAPTERS.iter().map(|s| s.to_string()).collect()
}

fn manager_with(gate: Arc<dyn HostGate>) -> (CodeManager, Arc<FakeAdapters>) {
    let fake = Arc::new(FakeAdapters::default());
    let m = CodeManager::new(Arc::new(fake.clone()), gate, Handle::current());
    m.set_admitted(all());
    (m, fake)
}

fn manager() -> (CodeManager, Arc<FakeAdapters>) {
    manager_with(Arc::new(AllowAll))
}

fn outer() -> OuterCall {
    OuterCall {
        cwd: "/tmp/work".into(),
        ..Default::default()
    }
}

async fn run(m: &CodeManager, code: &str) -> CellRead {
    m.exec(json!({ "code": code, "yield_time_ms": 30000 }), outer())
        .await
        .unwrap()
}

/// Starts cells with a zero yield until one is returned still running, lets it finish unread, returns its id.
async fn unread_terminal(m: &CodeManager) -> String {
    loop {
        let r = m
            .exec(
                json!({"code": "const t = Date.now(); while (Date.now() - t < 5) {} return 1", "yield_time_ms": 0}),
                outer(),
            )
            .await
            .unwrap();
        if r.status == "running" {
            idle(m).await;
            return r.cell_id;
        }
    }
}

async fn idle(m: &CodeManager) {
    for _ in 0..5000 {
        if m.running_cells() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("cells did not finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completed_cell_renders_output_and_result() {
    let (m, _) = manager();
    let r = run(&m, "print('hi'); text('a'); return {x: 1}").await;
    assert_eq!(r.status, "completed");
    assert_eq!(
        r.text,
        format!(
            "cell_id {}: completed\n[output]\nhi\na\n[result]\n{{\"x\":1}}",
            r.cell_id
        )
    );
    assert!(r.recovery.is_none(), "small complete results need no file");
    // Delivered: the handle is released.
    let e = m.wait(json!({"cell_id": r.cell_id}), outer()).await.unwrap_err();
    assert_eq!(e.code, "stale-cell");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_cell_renders_error_block() {
    let (m, _) = manager();
    let r = run(&m, "print('before');\nthrow new RangeError('nope')").await;
    assert_eq!(r.status, "failed");
    assert!(
        r.text.contains("[output]\nbefore\n[error]\nRangeError: nope"),
        "{}",
        r.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yielded_cell_continues_with_wait() {
    // The host check holds the nested call until the test releases it, so the cell is running for sure.
    let (m, release) = held_gate_manager();
    let r = m
        .exec(json!({"code": "print('one'); await tools.exec_command({cmd: 'x'}); print('two'); return 2", "yield_time_ms": 0}), outer())
        .await
        .unwrap();
    assert_eq!(r.status, "running");
    let mut output = r.output.clone();
    let mut read = r.clone();
    while read.nested.unsettled == 0 {
        read = m
            .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 20}), outer())
            .await
            .unwrap();
        output.push_str(&read.output);
    }
    assert_eq!(output, "one\n");
    assert!(read.text.starts_with(&format!("Script running with cell ID {}.\ncell_id {}: running\nnested calls: 0 completed, 0 failed, 0 cancelled before dispatch, 1 unsettled\n", r.cell_id, r.cell_id)), "{}", read.text);
    let rec = read
        .recovery
        .clone()
        .expect("a yield with output creates the recovery file");
    assert_eq!(rec.state, crate::output::RecoveryState::Capturing);
    release.notify_one();
    let w = m
        .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 30000}), outer())
        .await
        .unwrap();
    assert_eq!(w.status, "completed");
    assert_eq!(w.output, "two\n");
    assert_eq!(w.result.as_deref(), Some("2"));
    assert!(w
        .text
        .contains("nested calls: 1 completed, 0 failed, 0 cancelled before dispatch, 0 unsettled"));
    let path = w.recovery.unwrap().path.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "one\ntwo\n",
        "the consumed prefix stays recoverable"
    );
    m.shutdown().await.unwrap();
    assert!(!std::path::Path::new(&path).exists(), "shutdown deletes our files");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_stops_a_busy_loop() {
    let (m, _) = manager();
    let r = m
        .exec(json!({"code": "while(true){}", "yield_time_ms": 20}), outer())
        .await
        .unwrap();
    assert_eq!(r.status, "running");
    let w = m
        .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer())
        .await
        .unwrap();
    assert_eq!(w.status, "terminated");
    assert!(!w.unknown_outcome);
    assert_eq!(m.running_cells(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_of_the_outer_call_terminates_the_cell() {
    let (m, _) = manager();
    let m2 = m.clone();
    let h = tokio::spawn(async move {
        m2.exec(
            json!({"code": "while(true){}", "yield_time_ms": 60000}),
            OuterCall {
                call_id: Some("c1".into()),
                ..outer()
            },
        )
        .await
    });
    // The call registers its abort channel before its cell starts: once the cell runs, the abort reaches it.
    until("the cell runs", || m.running_cells() > 0).await;
    m.abort("c1");
    let e = h.await.unwrap().unwrap_err();
    assert_eq!(e.code, "aborted");
    assert_eq!(m.held_cells(), 0, "no cell was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heap_bomb_fails_only_its_cell() {
    let (m, _) = manager();
    let r = run(&m, "const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length);").await;
    assert_eq!(r.status, "failed");
    assert!(r.error.as_deref().unwrap().contains("out of memory"), "{:?}", r.error);
    assert_eq!(run(&m, "return 1").await.result.as_deref(), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_running_cells_then_cell_limit() {
    let (m, _) = manager();
    let mut ids = vec![];
    for _ in 0..MAX_RUNNING_CELLS {
        let r = m
            .exec(json!({"code": "while(true){}", "yield_time_ms": 0}), outer())
            .await
            .unwrap();
        assert_eq!(r.status, "running");
        ids.push(r.cell_id);
    }
    let e = m
        .exec(json!({"code": "return 1", "yield_time_ms": 0}), outer())
        .await
        .unwrap_err();
    assert_eq!(e.code, "cell-limit");
    m.wait(json!({"cell_id": ids[0], "terminate": true}), outer())
        .await
        .unwrap();
    let r = run(&m, "return 5").await;
    assert_eq!(r.result.as_deref(), Some("5"));
    m.cleanup().await.unwrap();
    assert_eq!(m.held_cells(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_unread_terminal_results_are_kept() {
    let (m, _) = manager();
    let mut ids = vec![];
    for i in 0..=MAX_UNREAD_TERMINAL {
        let r = m
            .exec(json!({"code": format!("return {i}"), "yield_time_ms": 0}), outer())
            .await
            .unwrap();
        if r.status != "running" {
            // Finished inside a zero yield: delivered already; start another to keep the count.
            continue;
        }
        ids.push(r.cell_id);
        idle(&m).await;
    }
    // Ensure exactly 17 unread terminals: top up if some were delivered immediately.
    while ids.len() < MAX_UNREAD_TERMINAL + 1 {
        let r = m
            .exec(json!({"code": "await 0; return 'late'", "yield_time_ms": 0}), outer())
            .await
            .unwrap();
        if r.status == "running" {
            ids.push(r.cell_id);
            idle(&m).await;
        }
    }
    // The 17th unread result pushes out the oldest at the next call.
    let e = m.wait(json!({"cell_id": ids[0]}), outer()).await.unwrap_err();
    assert_eq!(e.code, "stale-cell");
    for id in &ids[1..] {
        let r = m.wait(json!({"cell_id": id}), outer()).await.unwrap();
        assert_eq!(r.status, "completed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uses_snapshot_and_messages() {
    let (m, _) = manager();
    m.set_admitted(vec!["exec_command".into(), "write_stdin".into()]);
    let r = run(&m, "try { await tools.apply_patch('*** Begin Patch\\n*** End Patch') } catch (e) { return e.code + ' | ' + e.message }").await;
    assert_eq!(r.result.as_deref(), Some("adapter-disabled | Tool \"apply_patch\" was not declared in \"uses\" for this cell. Declared tools: exec_command, write_stdin"));
    let r = m
        .exec(
            json!({"code": "try { await tools.exec_command({cmd: 'x'}) } catch (e) { return e.message }", "uses": []}),
            outer(),
        )
        .await
        .unwrap();
    assert_eq!(
        r.result.as_deref(),
        Some("Tool \"exec_command\" was not declared in \"uses\" for this cell. Declared tools: (none)")
    );
    let r = run(&m, "try { await tools.fetch({}) } catch (e) { return e.code }").await;
    assert_eq!(r.result.as_deref(), Some("unknown-adapter"));
    // Declared but not admitted now: later shrinking applies at dispatch.
    let r = m
        .exec(json!({"code": "return [Object.keys(tools).join(','), await tools.apply_patch('p').then(() => 'ran', e => e.code)]", "uses": ["apply_patch"]}), outer())
        .await
        .unwrap();
    assert_eq!(r.result.as_deref(), Some("[\"apply_patch\",\"adapter-disabled\"]"));
    // Snapshot is an upper bound: admitting more later does not widen an omitted "uses".
    let r = m
        .exec(json!({"code": "await tools.exec_command({cmd: 'a', sleep_ms: 100}); return await tools.apply_patch('p').then(() => 'ran', e => e.code)", "yield_time_ms": 20}), outer())
        .await
        .unwrap();
    m.set_admitted(all());
    let w = m.wait(json!({"cell_id": r.cell_id}), outer()).await.unwrap();
    assert_eq!(w.result.as_deref(), Some("adapter-disabled"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_calls_reach_adapters_with_both_spellings_and_envelope_string() {
    let (m, fake) = manager();
    let r = run(&m, "const a = await tools.exec_command({command: 'echo hi', yieldTimeMs: 5}); const b = await tools.write_stdin({sessionId: a.sessionId, chars: 'x'}); const c = await tools.apply_patch('*** Begin Patch\\n*** End Patch'); return [a.tool, b.tool, c.args.patch, a.cwd]").await;
    assert_eq!(
        r.result.as_deref(),
        Some("[\"exec_command\",\"write_stdin\",\"*** Begin Patch\\n*** End Patch\",\"/tmp/work\"]")
    );
    assert_eq!(fake.calls.lock().len(), 3);
    assert_eq!(r.nested.completed, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_order_invalid_arguments_before_overload_and_policy() {
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let a2 = asked.clone();
    let (m, fake) = manager_with(Arc::new(FnGate(move |req: GateRequest| {
        a2.lock().push(format!("{}:{}", req.phase, req.tool));
        Box::pin(async move {
            GateAnswer {
                allow: false,
                code: Some(CellCode::PolicyDenied.into()),
                reason: Some("no shells today".into()),
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    })));
    let big = "y".repeat(300 * 1024);
    let r = run(&m, &format!("return [await tools.exec_command({{nocmd: '{big}'}}).then(() => 'ran', e => e.code), await tools.exec_command({{cmd: '{big}'}}).then(() => 'ran', e => e.code), await tools.exec_command({{cmd: 'ls'}}).then(() => 'ran', e => e.code + ': ' + e.message)]")).await;
    assert_eq!(
        r.result.as_deref(),
        Some("[\"invalid-arguments\",\"bridge-overload\",\"policy-denied: no shells today\"]")
    );
    assert_eq!(
        *asked.lock(),
        vec!["policy:exec_command".to_string()],
        "the hook runs only after the earlier checks pass"
    );
    assert!(fake.calls.lock().is_empty(), "a denial starts nothing");
    assert!(r.text.contains("nested calls: 0 completed, 3 failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_flow_for_nested_apply_patch() {
    let seen = Arc::new(Mutex::new(Vec::<GateRequest>::new()));
    let s2 = seen.clone();
    let (m, fake) = manager_with(Arc::new(FnGate(move |req: GateRequest| {
        s2.lock().push(req.clone());
        Box::pin(async move {
            match req.phase.as_str() {
                "policy" => GateAnswer {
                    allow: true,
                    needs_approval: req.tool == "apply_patch",
                    ..Default::default()
                },
                _ if req.preview.as_deref().unwrap_or("").contains("NO") => GateAnswer {
                    allow: false,
                    code: Some(CellCode::ApprovalDenied.into()),
                    ..Default::default()
                },
                _ if req.preview.as_deref().unwrap_or("").contains("NOUI") => unreachable!(),
                "lock" => GateAnswer {
                    allow: true,
                    lease: Some("L".into()),
                    ..Default::default()
                },
                _ => GateAnswer {
                    allow: true,
                    ..Default::default()
                },
            }
        }) as BoxFuture<GateAnswer>
    })));
    let long = "z".repeat(2000);
    let records = Arc::new(Mutex::new(Vec::<ProgressRecord>::new()));
    let r2 = records.clone();
    let r = m
        .exec(
            json!({"code": format!("const ok = await tools.apply_patch({{patch: 'YES{long}'}}).then(() => 'applied', e => e.code); const no = await tools.apply_patch('NO').then(() => 'applied', e => e.code); return [ok, no]"), "yield_time_ms": 30000}),
            OuterCall { progress: Some(Arc::new(move |p| r2.lock().push(p))), ..outer() },
        )
        .await
        .unwrap();
    assert_eq!(r.result.as_deref(), Some("[\"applied\",\"approval-denied\"]"));
    let seen = seen.lock();
    let approval: Vec<_> = seen.iter().filter(|q| q.phase == "approval").collect();
    assert_eq!(approval.len(), 2);
    assert_eq!(approval[0].preview.as_ref().unwrap().len(), APPROVAL_PREVIEW_BYTES);
    assert!(approval[0].preview.as_ref().unwrap().starts_with("YESzzz"));
    assert_eq!(fake.calls.lock().len(), 1, "denied patch never reaches the executor");
    let recs = records.lock();
    let events: Vec<String> = recs
        .iter()
        .map(|p| {
            format!(
                "{}:{}:{}",
                p.event,
                p.tool,
                p.code.map(|c| c.as_str()).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            "start:apply_patch:",
            "waiting-approval:apply_patch:",
            "end:apply_patch:",
            "start:apply_patch:",
            "waiting-approval:apply_patch:",
            "end:apply_patch:approval-denied"
        ]
    );
    assert!(recs.iter().all(|p| p.cell_id == r.cell_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_cancels_a_call_waiting_for_approval() {
    let (m, fake) = manager_with(Arc::new(FnGate(|req: GateRequest| {
        Box::pin(async move {
            if req.phase == "policy" {
                GateAnswer {
                    allow: true,
                    needs_approval: true,
                    ..Default::default()
                }
            } else {
                std::future::pending::<GateAnswer>().await
            }
        }) as BoxFuture<GateAnswer>
    })));
    let r = m
        .exec(
            json!({"code": "await tools.apply_patch('p')", "yield_time_ms": 0}),
            outer(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, "running");
    let mut read = r.clone();
    while read.nested.unsettled == 0 {
        read = m
            .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 20}), outer())
            .await
            .unwrap();
    }
    let w = m
        .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer())
        .await
        .unwrap();
    assert_eq!(w.status, "terminated");
    assert!(
        w.text
            .contains("nested calls: 0 completed, 0 failed, 1 cancelled before dispatch, 0 unsettled"),
        "{}",
        w.text
    );
    assert!(fake.calls.lock().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_waits_for_tracked_nested_calls() {
    // The host check holds the nested call until the test releases it (a held gate, not a timer).
    let (tx, rx) = tokio::sync::watch::channel(false);
    let (m, fake) = manager_with(Arc::new(FnGate(move |_req: GateRequest| {
        let mut rx = rx.clone();
        Box::pin(async move {
            let _ = rx.wait_for(|go| *go).await;
            GateAnswer {
                allow: true,
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    })));
    let r = m
        .exec(
            json!({"code": "tools.exec_command({cmd: 'bg'}); print('returning'); return 'early'", "yield_time_ms": 0}),
            outer(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, "running");
    let mut out = r.output.clone();
    while !out.contains("returning") {
        let w = m
            .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 20}), outer())
            .await
            .unwrap();
        assert_eq!(
            w.status, "running",
            "the program returned but its nested call is still tracked"
        );
        out += &w.output;
    }
    tokio::task::yield_now().await;
    tx.send_replace(true);
    let w = m.wait(json!({"cell_id": r.cell_id}), outer()).await.unwrap();
    assert_eq!(w.status, "completed");
    assert_eq!(w.result.as_deref(), Some("early"));
    assert_eq!(w.nested.completed, 1);
    assert_eq!(fake.calls.lock().len(), 1);
}

/// Runs `n` nested calls issued at once while the host check holds every one of them until all were issued
/// (a held gate, no timer), then releases them and returns the cell's result.
async fn outstanding_burst(n: usize) -> Option<String> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let (m, _) = manager_with(Arc::new(FnGate(move |_req: GateRequest| {
        let mut rx = rx.clone();
        Box::pin(async move {
            let _ = rx.wait_for(|go| *go).await;
            GateAnswer {
                allow: true,
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    })));
    let code = format!("const ps = []; for (let i = 0; i < {n}; i++) ps.push(tools.exec_command({{cmd: 'x'}}).then(() => 'ok', e => e.code)); print('issued'); const r = await Promise.all(ps); return r.filter(x => x !== 'ok')");
    let r = m
        .exec(json!({"code": code, "yield_time_ms": 0}), outer())
        .await
        .unwrap();
    let mut out = r.output.clone();
    while !out.contains("issued") {
        let w = m
            .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 20}), outer())
            .await
            .unwrap();
        assert_eq!(w.status, "running", "held calls keep the cell running");
        out += &w.output;
    }
    tx.send_replace(true);
    m.wait(json!({"cell_id": r.cell_id, "yield_time_ms": 60000}), outer())
        .await
        .unwrap()
        .result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_outstanding_nested_requests_then_overload() {
    assert_eq!(outstanding_burst(16).await.as_deref(), Some("[]"));
    assert_eq!(outstanding_burst(17).await.as_deref(), Some("[\"bridge-overload\"]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argument_bytes_limits() {
    let (m, _) = manager();
    // {"cmd":"<pad>"} is 10 bytes of JSON around the pad.
    let single =
        |n: usize| format!("return await tools.exec_command({{cmd: 'x'.repeat({n})}}).then(() => 'ok', e => e.code)");
    let r = run(&m, &single(MAX_NESTED_PAYLOAD_BYTES - 10)).await;
    assert_eq!(r.result.as_deref(), Some("ok"), "{}", r.text);
    assert_eq!(
        run(&m, &single(MAX_NESTED_PAYLOAD_BYTES - 9)).await.result.as_deref(),
        Some("bridge-overload")
    );
    // Cumulative outstanding: two calls totalling exactly 256 KiB pass; one byte more is refused.
    let pair = |extra: usize| {
        format!("const half = {}; const a = tools.exec_command({{cmd: 'x'.repeat(half - 10), sleep_ms: 200}}); const b = tools.exec_command({{cmd: 'x'.repeat(half - 38 + {extra}), sleep_ms: 1}}); return [await a.then(() => 'ok', e => e.code), await b.then(() => 'ok', e => e.code)]", MAX_OUTSTANDING_ARG_BYTES / 2)
    };
    assert_eq!(run(&m, &pair(0)).await.result.as_deref(), Some("[\"ok\",\"ok\"]"));
    assert_eq!(
        run(&m, &pair(1)).await.result.as_deref(),
        Some("[\"ok\",\"bridge-overload\"]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_bytes_limit() {
    let (m, _) = manager();
    // {"blob":"<n>"} is 11 bytes around the blob.
    let prog = |n: usize| {
        format!("return await tools.exec_command({{cmd: 'x', reply_bytes: {n}}}).then(r => r.blob.length, e => e.code)")
    };
    let n = MAX_NESTED_PAYLOAD_BYTES + NESTED_REPLY_META_BYTES - 11;
    assert_eq!(run(&m, &prog(n)).await.result.as_deref(), Some(n.to_string().as_str()));
    assert_eq!(run(&m, &prog(n + 1)).await.result.as_deref(), Some("bridge-overload"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_the_read_budget_allows_always_fits_a_nested_reply() {
    let (m, _) = manager();
    // 262,144 control characters are 1.5 MB of JSON; they count by their UTF-8 bytes (the budget's unit).
    // Before: bridge-overload after the command ran, and its output was lost.
    let r = run(
        &m,
        "const r = await tools.exec_command({cmd: 'x', stdout_bytes: 262144}); return [r.stdout.length, r.stderr]",
    )
    .await;
    assert_eq!(r.result.as_deref(), Some("[262144,\"éééé\"]"), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_reply_still_yields_the_session_id_and_recovery_path() {
    let (m, _) = manager();
    let r = run(
        &m,
        "try { await tools.exec_command({cmd: 'x', reply_bytes: 400000, with_session: 1}) } catch (e) { return [e.code, e.sessionId, e.recoveryPath, e.message] }",
    )
    .await;
    let v: Value = serde_json::from_str(r.result.as_deref().unwrap()).unwrap();
    assert_eq!(v[0], "bridge-overload");
    assert_eq!(v[1], "pct-shell-7");
    assert_eq!(v[2], "/tmp/fake-recovery.log");
    let msg = v[3].as_str().unwrap();
    assert!(
        msg.contains("write_stdin {\"session_id\": \"pct-shell-7\"}") && msg.contains("/tmp/fake-recovery.log"),
        "{msg}"
    );
    // The running shell is still reported in the cell's shells.
    assert_eq!(r.shell_sessions, vec!["pct-shell-7".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_adapter_slots_and_sequential_patches() {
    let (m, fake) = manager();
    run(
        &m,
        "await Promise.all([...Array(8)].map(() => tools.exec_command({cmd: 'x', sleep_ms: 250})))",
    )
    .await;
    assert_eq!(fake.max_concurrent.load(Ordering::SeqCst), ADAPTER_SLOTS);
    run(
        &m,
        "await Promise.all([...Array(3)].map(() => tools.apply_patch({patch: 'p', sleep_ms: 100})))",
    )
    .await;
    assert_eq!(fake.patch_overlap.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_result_and_error_limits() {
    let (m, _) = manager();
    let r = run(&m, &format!("text('x'.repeat({OUTPUT_BUFFER_BYTES}))")).await;
    assert_eq!(
        (r.dropped, r.truncated),
        (
            0,
            OUTPUT_BUFFER_BYTES as u64 - crate::output::budget::DEFAULT_OUTPUT_BYTES as u64
        )
    );
    let r = m.exec(json!({"code": format!("text('x'.repeat({}))", OUTPUT_BUFFER_BYTES + 1), "maxOutputBytes": 262144, "yield_time_ms": 30000}), outer()).await.unwrap();
    assert_eq!((r.dropped, r.truncated, r.output.len()), (1, 0, OUTPUT_BUFFER_BYTES));
    assert!(r.recovery.is_some());
    let r = run(&m, &format!("return 'r'.repeat({RESULT_BYTES})")).await;
    assert!(!r.result_truncated);
    let r = run(&m, &format!("return 'r'.repeat({})", RESULT_BYTES + 1)).await;
    assert!(r.result_truncated);
    assert_eq!(r.result.as_ref().unwrap().len(), RESULT_BYTES);
    // A thrown string renders as "Uncaught <s>" (9 bytes of prefix).
    let r = run(&m, &format!("throw 'e'.repeat({})", ERROR_BYTES - 9)).await;
    assert!(!r.error_truncated);
    let r = run(&m, &format!("throw 'e'.repeat({})", ERROR_BYTES - 8)).await;
    assert!(r.error_truncated);
    assert_eq!(r.error.as_ref().unwrap().len(), ERROR_BYTES);
    let text = std::fs::read_to_string(r.recovery.unwrap().path.unwrap()).unwrap();
    assert!(text.contains(&"e".repeat(ERROR_BYTES - 8)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_budget_cut_on_utf8_boundary() {
    let (m, _) = manager();
    let r = m
        .exec(
            json!({"code": "text('a' + 'é'.repeat(1000))", "maxOutputBytes": 1024, "yield_time_ms": 30000}),
            outer(),
        )
        .await
        .unwrap();
    assert_eq!(r.output.len(), 1023);
    assert_eq!(r.truncated, 2001 - 1023);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_progress_records_per_outer_call() {
    let (m, _) = manager();
    let prog = |n: usize| json!({"code": format!("for (let i = 0; i < {n}; i++) await tools.exec_command({{cmd: 'x'}})"), "yield_time_ms": 30000});
    for (n, forwarded, dropped) in [(16usize, 32usize, 0u64), (17, 32, 2)] {
        let recs = Arc::new(Mutex::new(0usize));
        let r2 = recs.clone();
        let r = m
            .exec(
                prog(n),
                OuterCall {
                    progress: Some(Arc::new(move |_| *r2.lock() += 1)),
                    ..outer()
                },
            )
            .await
            .unwrap();
        assert_eq!(*recs.lock(), forwarded);
        assert_eq!(r.progress_dropped, dropped);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_continuation_lines() {
    let (m, _) = manager();
    let r = run(&m, "await tools.exec_command({cmd: 'sleep 100', status: 'running'})").await;
    assert_eq!(r.shell_sessions, vec!["pct-shell-1".to_string()]);
    assert!(r.text.contains("shell session pct-shell-1 is still running (it belongs to Shell): continue it with write_stdin {\"session_id\": \"pct-shell-1\"}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_before_start_and_after_shutdown() {
    let (m, _) = manager();
    for (args, code) in [
        (json!({"code": "// @exec: {\"nope\": 1}\nreturn 1"}), "invalid-code"),
        (json!({"code": "x", "uses": ["bash"]}), "invalid-uses"),
        (json!({"code": "x", "yield_time_ms": 60001}), "invalid-limit"),
        (json!({"code": "x", "sandbox": true}), "invalid-input"),
    ] {
        assert_eq!(m.exec(args, outer()).await.unwrap_err().code, code);
    }
    assert_eq!(m.held_cells(), 0, "refused before the cell starts");
    assert_eq!(
        m.wait(json!({"cell_id": 4242}), outer()).await.unwrap_err().code,
        "invalid-input"
    );
    assert_eq!(
        m.wait(json!({"cell_id": "cell-unknown"}), outer())
            .await
            .unwrap_err()
            .code,
        "stale-cell"
    );
    m.shutdown().await.unwrap();
    assert_eq!(
        m.exec(json!({"code": "return 1"}), outer()).await.unwrap_err().code,
        "closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pragma_line_keeps_line_numbers() {
    let (m, _) = manager();
    let r = m
        .exec(
            json!({"code": "// @exec: {\"yield_time_ms\": 30000}\n\nthrow new Error('third')"}),
            outer(),
        )
        .await
        .unwrap();
    assert!(r.error.as_deref().unwrap().contains(":3"), "{:?}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_is_capped() {
    let mut read = CellRead {
        cell_id: "cell-x".into(),
        cell_id_snake: "cell-x".into(),
        status: "running".into(),
        code: None,
        output: "o".repeat(400_000),
        result: None,
        error: None,
        truncated: 0,
        dropped: 0,
        result_truncated: false,
        error_truncated: false,
        nested: NestedCounts::default(),
        shell_sessions: vec!["s1".into()],
        unknown_outcome: false,
        recovery: None,
        progress_dropped: 0,
        text: String::new(),
    };
    let t = render(&read);
    assert_eq!(t.len(), RENDER_BYTES);
    assert!(t.starts_with("Script running with cell ID cell-x.\ncell_id cell-x: running\nshell session s1"));
    read.output = "o".repeat(1000);
    assert!(render(&read).len() < RENDER_BYTES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sequential_cells() {
    let (m, _) = manager();
    for i in 0..300 {
        let r = run(&m, &format!("return {i}")).await;
        assert_eq!(r.result, Some(i.to_string()));
    }
    assert_eq!(m.held_cells(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_terminal_results_expire_after_their_ttl() {
    let (m, _) = manager();
    let id = unread_terminal(&m).await;
    assert_eq!(
        m.wait(json!({"cell_id": id}), outer()).await.unwrap().status,
        "completed",
        "kept within the TTL"
    );
    m.set_unread_ttl(Duration::ZERO);
    let id = unread_terminal(&m).await;
    assert_eq!(
        m.wait(json!({"cell_id": id}), outer()).await.unwrap_err().code,
        "stale-cell",
        "pruned once the TTL elapsed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_before_the_call_registers_is_not_lost() {
    let (m, _) = manager();
    m.abort("early");
    let e = m
        .exec(
            json!({"code": "while(true){}", "yield_time_ms": 60000}),
            OuterCall {
                call_id: Some("early".into()),
                ..outer()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, "aborted");
    assert_eq!(m.held_cells(), 0, "no cell was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_patch_holds_the_host_file_lease_around_the_executor() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let fake_slot: Arc<Mutex<Option<Arc<FakeAdapters>>>> = Arc::new(Mutex::new(None));
    let (l2, f2) = (log.clone(), fake_slot.clone());
    let (m, fake) = manager_with(Arc::new(FnGate(move |req: GateRequest| {
        let executed = f2.lock().as_ref().map(|f| f.calls.lock().len()).unwrap_or(0);
        l2.lock()
            .push(format!("{}:{:?}:{:?}:ran={executed}", req.phase, req.paths, req.lease));
        Box::pin(async move {
            GateAnswer {
                allow: true,
                lease: (req.phase == "lock").then(|| "L1".to_string()),
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    })));
    *fake_slot.lock() = Some(fake.clone());
    let r = run(&m, "return (await tools.apply_patch('*** Begin Patch')).tool").await;
    assert_eq!(r.result.as_deref(), Some("apply_patch"));
    assert_eq!(
        *log.lock(),
        vec![
            "policy:None:None:ran=0".to_string(),
            "lock:Some([\"/tmp/work/patched.txt\"]):None:ran=0".to_string(),
            "unlock:None:Some(\"L1\"):ran=1".to_string(),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_patch_fails_closed_when_the_host_file_lock_is_refused_or_leaseless() {
    // (allow, lease) answers of the "lock" phase that must all stop the mutation before it runs.
    for (allow, lease) in [(false, None), (true, None), (false, Some("STRAY"))] {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let l2 = log.clone();
        let (m, fake) = manager_with(Arc::new(FnGate(move |req: GateRequest| {
            l2.lock().push(format!("{}:{:?}", req.phase, req.lease));
            let lease = lease.map(String::from);
            Box::pin(async move {
                if req.phase == "lock" {
                    GateAnswer {
                        allow,
                        lease,
                        code: (!allow).then(|| CellCode::Unavailable.into()),
                        reason: (!allow).then(|| "queue failed".into()),
                        ..Default::default()
                    }
                } else {
                    GateAnswer {
                        allow: true,
                        ..Default::default()
                    }
                }
            }) as BoxFuture<GateAnswer>
        })));
        let r = run(
            &m,
            "return await tools.apply_patch('*** Begin Patch').then(() => 'ran', e => e.code + ': ' + e.message)",
        )
        .await;
        let out = r.result.unwrap();
        assert!(
            out.starts_with("unavailable: apply_patch failed"),
            "{allow} {lease:?}: {out}"
        );
        assert!(out.contains("nothing was changed"), "{out}");
        assert!(
            fake.calls.lock().is_empty(),
            "{allow} {lease:?}: the patch executor must not run"
        );
        let log = log.lock().clone();
        if lease.is_some() {
            assert_eq!(
                log.last().unwrap(),
                "unlock:Some(\"STRAY\")",
                "a stray lease is handed back"
            );
        } else {
            assert!(!log.iter().any(|l| l.starts_with("unlock")), "{log:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_file_lease_is_unlocked_even_when_the_nested_task_dies() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l2 = log.clone();
    let (m, _fake) = manager_with(Arc::new(FnGate(move |req: GateRequest| {
        l2.lock().push(format!("{}:{:?}", req.phase, req.lease));
        Box::pin(async move {
            GateAnswer {
                allow: true,
                lease: (req.phase == "lock").then(|| "L9".to_string()),
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    })));
    // The executor panics while the lease is held: the call fails, the lease is released, the cell ends.
    let r = run(
        &m,
        "return await tools.apply_patch({patch: 'x', panic: true}).then(() => 'ran', e => e.code + ': ' + e.message)",
    )
    .await;
    assert_eq!(r.status, "completed");
    let res = r.result.unwrap();
    assert!(
        res.starts_with("unavailable: tools.apply_patch failed inside the toolkit"),
        "{res}"
    );
    for _ in 0..20000 {
        if log.lock().iter().any(|l| l.starts_with("unlock")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        *log.lock(),
        vec![
            "policy:None".to_string(),
            "lock:None".into(),
            "unlock:Some(\"L9\")".into()
        ]
    );
    m.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_calls_carry_the_cells_seal_as_their_cancel_flag() {
    let (m, fake) = manager();
    run(&m, "await tools.apply_patch({patch: 'x'}); return 1").await;
    let flag = fake.last_cancel.lock().clone().unwrap();
    assert!(!flag.load(Ordering::SeqCst), "a completed cell is not sealed");
    let r = run(&m, "await tools.apply_patch({patch: 'y'}); throw new Error('stop')").await;
    assert_eq!(r.status, "failed");
    let flag = fake.last_cancel.lock().clone().unwrap();
    assert!(
        flag.load(Ordering::SeqCst),
        "a failed (sealed) cell sets the flag its patches see"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_lease_guard_still_sends_unlock() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<GateRequest>();
    let gate: Arc<dyn HostGate> = Arc::new(FnGate(move |req: GateRequest| {
        let _ = tx.send(req);
        Box::pin(async {
            GateAnswer {
                allow: true,
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    }));
    let req = GateRequest {
        phase: "unlock".into(),
        tool: "apply_patch".into(),
        cell_id: "cell-x".into(),
        cwd: "/tmp/work".into(),
        session_id: None,
        preview: None,
        paths: None,
        lease: Some("L7".into()),
        sends_input: None,
    };
    // Dropped without release (what a dropped nested task or a panic does).
    drop(LeaseGuard::new(gate, Handle::current(), req));
    let got = rx.recv().await.expect("unlock was sent");
    assert_eq!((got.phase.as_str(), got.lease.as_deref()), ("unlock", Some("L7")));
}

/// Polls `wait` (bounded) until the cell's outcome is certain; returns that read.
async fn wait_until_certain(m: &CodeManager, id: &str) -> CellRead {
    for _ in 0..1500 {
        let w = m
            .wait(json!({"cell_id": id, "yield_time_ms": 20}), outer())
            .await
            .unwrap();
        if !w.unknown_outcome {
            return w;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the cell thread never ended");
}

/// Starts a cell that prints, then blocks its thread in native code for 3 s, and returns only once the print was
/// read back: so the thread is inside the block (not merely queued) when the test asks it to stop. Without this
/// wait a loaded machine could deliver the stop before the program started, and the stop would be confirmed.
async fn start_blocked(m: &CodeManager, tail: &str) -> CellRead {
    start_blocked_with(m, 3000, tail, outer()).await
}

/// [`start_blocked`] with the block's length and the outer call.
async fn start_blocked_with(m: &CodeManager, block_ms: u64, tail: &str, call: OuterCall) -> CellRead {
    let code = format!("print('in'); __pctTestBlock({block_ms}); {tail}");
    let r = m.exec(json!({"code": code, "yield_time_ms": 0}), call).await.unwrap();
    let mut seen = r.output.clone();
    for i in 0.. {
        if seen.contains("in\n") {
            break;
        }
        assert!(i < 1500, "the cell never printed");
        let w = m
            .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 20}), outer())
            .await
            .unwrap();
        seen.push_str(&w.output);
    }
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_ends_after_an_unconfirmed_stop_reports_its_real_result() {
    let (m, _) = manager();
    m.set_stop_confirm(Duration::from_millis(50));
    // The thread is stuck in native code (no interrupt check) longer than the confirmation window.
    let r = start_blocked(&m, "return 42").await;
    assert_eq!(r.status, "running");
    let t = m
        .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer())
        .await
        .unwrap();
    assert_eq!(t.status, "terminated");
    assert!(t.unknown_outcome, "{}", t.text);
    assert!(t.text.contains("outcome: unknown"), "{}", t.text);
    // Before: the later read still said "terminated" (the stop's outcome was kept).
    let w = wait_until_certain(&m, &r.cell_id).await;
    assert_eq!(w.status, "completed", "{}", w.text);
    assert_eq!(w.result.as_deref(), Some("42"));
    assert!(!w.text.contains("outcome: unknown"), "{}", w.text);
    let e = m.wait(json!({"cell_id": r.cell_id}), outer()).await.unwrap_err();
    assert_eq!(
        e.code, "stale-cell",
        "the real result was delivered: the handle is released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_incomplete_refuses_new_cells_until_a_retried_cleanup_succeeds() {
    let (m, _) = manager();
    m.set_stop_confirm(Duration::from_millis(50));
    let r = start_blocked(&m, "return 1").await;
    let e = m.cleanup().await.unwrap_err();
    assert_eq!(e.code, "cleanup-incomplete");
    assert!(e.message.contains(&r.cell_id), "{}", e.message);
    assert_eq!(m.cleanup_pending(), vec![r.cell_id.clone()]);
    // Before: a new cell started as if nothing were pending.
    let refused = m.exec(json!({"code": "return 2"}), outer()).await.unwrap_err();
    assert_eq!(refused.code, "cleanup-incomplete");
    assert!(refused.message.contains("/pct reload"), "{}", refused.message);
    assert_eq!(m.held_cells(), 1, "a refusal starts nothing");
    // The kept cell is still reachable with wait (and terminate).
    let kept = m
        .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer())
        .await
        .unwrap();
    assert_eq!(kept.status, "terminated");
    // Once the thread really ended, a retried cleanup succeeds and cells start again.
    for i in 0.. {
        assert!(i < 1500, "the cell thread never ended");
        if m.cleanup().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(m.cleanup_pending().is_empty());
    assert_eq!(run(&m, "return 2").await.result.as_deref(), Some("2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_the_first_nested_calls_is_not_lost_before_exec_observes() {
    let (m, _) = manager();
    // A slow observer start (as under load): the nested call starts and ends before observe() runs.
    m.set_observe_delay(Duration::from_millis(300));
    let recs = Arc::new(Mutex::new(Vec::<String>::new()));
    let r2 = recs.clone();
    let r = m
        .exec(
            json!({"code": "await tools.exec_command({cmd: 'x'}); return 1", "yield_time_ms": 30000}),
            OuterCall {
                progress: Some(Arc::new(move |rec: ProgressRecord| r2.lock().push(rec.event))),
                ..outer()
            },
        )
        .await
        .unwrap();
    assert_eq!(r.status, "completed");
    // Before: both records went nowhere (no observer yet) and were not even counted as dropped.
    assert_eq!(*recs.lock(), vec!["start".to_string(), "end".to_string()]);
    assert_eq!(r.progress_dropped, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_print_is_cut_like_other_output_with_the_whole_text_in_the_recovery_file() {
    let (m, _) = manager();
    // Before: the cell failed with "InternalError: QuickJS library created a unknown error".
    let r = run(&m, "print('y'.repeat(100 * 1024 * 1024)); return 'after'").await;
    assert_eq!(r.status, "completed", "{}", r.text);
    assert_eq!(r.result.as_deref(), Some("after"));
    let total = 100 * 1024 * 1024 + 1;
    assert_eq!(r.output.len() as u64 + r.truncated + r.dropped, total as u64);
    assert_eq!(r.dropped, (total - OUTPUT_BUFFER_BYTES) as u64);
    let rec = r.recovery.clone().expect("dropped output needs the recovery file");
    assert_eq!(rec.captured_bytes, total as u64);
    assert_eq!(rec.bytes, total as u64, "{}", r.text);
    let path = rec.path.clone().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), total as u64);
    m.shutdown().await.unwrap();
    assert!(
        !std::path::Path::new(&path).exists(),
        "shutdown deletes the manager's own files"
    );
}

#[test]
fn nested_cards_show_what_the_direct_cards_show() {
    use super::sink::preview_of;
    let j = |v: &serde_json::Value| v.to_string();
    let exec = json!({"cmd": "npm test", "yield_time_ms": 1000});
    assert_eq!(preview_of("exec_command", &exec, &j(&exec)), "$ npm test");
    let alias = json!({"command": "ls -la"});
    assert_eq!(preview_of("exec_command", &alias, &j(&alias)), "$ ls -la");
    let stdin = json!({"session_id": 3, "chars": "y\n"});
    assert_eq!(preview_of("write_stdin", &stdin, &j(&stdin)), "stdin of 3: y\n");
    let poll = json!({"session_id": 3, "chars": ""});
    assert_eq!(preview_of("write_stdin", &poll, &j(&poll)), j(&poll));
    let patch = json!({"patch": "*** Begin Patch"});
    assert_eq!(preview_of("apply_patch", &patch, &j(&patch)), "*** Begin Patch");
    assert_eq!(preview_of("apply_patch", &json!("raw"), "\"raw\""), "\"raw\"");
    let other = json!({"q": 1});
    assert_eq!(preview_of("web_search", &other, &j(&other)), j(&other));
}

/// A busy cell's thread CPU time is read and grows; a finished cell is no longer listed.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_cpu_reads_the_cell_thread() {
    let (m, _) = manager();
    let r = m
        .exec(json!({"code": "while(true){}", "yield_time_ms": 0}), outer())
        .await
        .unwrap();
    assert_eq!(r.status, "running");
    // Wait (bounded) until the busy thread has been charged at least 50 ms of CPU.
    let mut seen = None;
    for _ in 0..5000 {
        let l = m.running_cpu();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].0, r.cell_id);
        if let Some(ms) = l[0].1.filter(|ms| *ms >= 50.0) {
            seen = Some(ms);
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(seen.is_some(), "the cell thread's CPU time was never read");
    let w = m
        .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer())
        .await
        .unwrap();
    assert_eq!(w.status, "terminated");
    assert!(m.running_cpu().is_empty());
}

fn limited(ms: u64) -> OuterCall {
    OuterCall {
        max_cell: Some(Duration::from_millis(ms)),
        ..outer()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_past_its_time_limit_is_stopped_with_cell_timeout() {
    let (m, _) = manager();
    // Observed: the exec's long yield ends with the stop.
    let r = m
        .exec(
            json!({"code": "print('spinning'); while(true){}", "yield_time_ms": 60000}),
            limited(200),
        )
        .await
        .unwrap();
    assert_eq!(r.status, "terminated");
    assert_eq!(r.code.map(|c| c.as_str()), Some("cell-timeout"));
    let e = r.error.as_deref().unwrap();
    assert!(
        e.starts_with("cell-timeout: the cell ran past its limit of 0.2 s (codeMode.maxCellSeconds)"),
        "{e}"
    );
    assert!(e.contains("Raise codeMode.maxCellSeconds in /pct config"), "{e}");
    assert!(
        r.text.contains("[output]\nspinning\n[error]\ncell-timeout"),
        "{}",
        r.text
    );
    assert_eq!(m.running_cells(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unobserved_cell_parked_on_a_nested_call_is_stopped_at_its_limit() {
    // The host never answers: the cell waits on its nested call, nobody observes it.
    let (m, _) = manager_with(Arc::new(FnGate(|_req: GateRequest| {
        Box::pin(std::future::pending::<GateAnswer>()) as BoxFuture<GateAnswer>
    })));
    let r = m
        .exec(
            json!({"code": "await tools.exec_command({cmd: 'x'}); return 1", "yield_time_ms": 0}),
            limited(200),
        )
        .await
        .unwrap();
    assert_eq!(r.status, "running");
    idle(&m).await; // stopped without any wait call
    let w = m.wait(json!({"cell_id": r.cell_id}), outer()).await.unwrap();
    assert_eq!(
        (w.status.as_str(), w.code.map(|c| c.as_str())),
        ("terminated", Some("cell-timeout"))
    );
}

/// A manager whose host check holds every nested call until the test releases it.
fn held_gate_manager() -> (CodeManager, Arc<tokio::sync::Notify>) {
    let release = Arc::new(tokio::sync::Notify::new());
    let r2 = release.clone();
    let (m, _) = manager_with(Arc::new(FnGate(move |_req: GateRequest| {
        let r = r2.clone();
        Box::pin(async move {
            r.notified().await;
            GateAnswer {
                allow: true,
                ..Default::default()
            }
        }) as BoxFuture<GateAnswer>
    })));
    (m, release)
}

/// The cell `r` names, while the manager still holds it.
fn held_cell(m: &CodeManager, r: &CellRead) -> Arc<Cell> {
    m.inner
        .state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .cells
        .get(&r.cell_id)
        .cloned()
        .expect("the cell is still held")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_time_watcher_lets_a_finished_cell_go_at_once() {
    let (m, release) = held_gate_manager();
    // A limit far past `until`'s bound: a watcher that waited for its deadline instead of the cell's end would
    // still hold the cell's change subscription when the bound runs out.
    let r = m
        .exec(
            json!({"code": "await tools.exec_command({cmd: 'x'}); return 7", "yield_time_ms": 0}),
            limited(3_600_000),
        )
        .await
        .unwrap();
    assert_eq!(r.status, "running", "{}", r.text);
    let cell = held_cell(&m, &r);
    release.notify_one();
    // exec's own subscription ended with its read: what is left is the watcher's.
    until("the run-time watcher let the finished cell go", || {
        cell.st.lock().unwrap_or_else(PoisonError::into_inner).terminal && cell.changed.receiver_count() == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_stopped_before_its_limit_is_not_reported_as_timed_out() {
    let (m, _) = manager();
    m.set_stop_confirm(Duration::from_millis(50));
    // The thread is stuck in native code far past the limit, so the stop stays unconfirmed and the handle is kept:
    // the cell is terminal, its outcome not yet delivered, while the limit passes.
    let r = start_blocked_with(&m, 600_000, "return 1", limited(3_000)).await;
    let cell = held_cell(&m, &r);
    let t = m
        .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer())
        .await
        .unwrap();
    assert_eq!(
        (t.status.as_str(), t.code, t.unknown_outcome),
        ("terminated", None, true),
        "{}",
        t.text
    );
    // The watcher holds the cell's change subscription until it has made up its mind (the stop's ended with it).
    until("the run-time watcher let the stopped cell go", || {
        cell.changed.receiver_count() == 0
    })
    .await;
    let w = m.wait(json!({"cell_id": r.cell_id}), outer()).await.unwrap();
    assert!(
        !cell.st.lock().unwrap_or_else(PoisonError::into_inner).thread_ended,
        "the thread is still blocked"
    );
    // The user's stop stays the user's: the limit, which passed only afterwards, is not named.
    assert_eq!(
        (w.status.as_str(), w.code, w.unknown_outcome),
        ("terminated", None, true),
        "{}",
        w.text
    );
    assert!(!w.text.contains("cell-timeout"), "{}", w.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_limit_the_default_applies_and_a_short_cell_is_untouched() {
    let (m, _) = manager();
    assert_eq!(DEFAULT_MAX_CELL, Duration::from_secs(1_800));
    let r = run(&m, "return 1").await;
    assert_eq!((r.status.as_str(), r.code), ("completed", None));
}
