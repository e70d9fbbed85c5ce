//! The real nested adapters: `exec_command` / `write_stdin` reach the very `shell::Manager` behind the direct tools
//! (same sessions, limits and recovery), `apply_patch` the same `patch::apply` executor (same containment, same
//! process-wide patch lock). Rust-to-Rust: nothing goes through JavaScript.

use parking_lot::RwLock;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::adapters::{Adapters, BoxFuture, NestedContext};
use super::errors::{CellCode, CodeError};
use crate::shell;

/// The toolkit's executors as nested adapters. The shell manager is attached (and re-attached when Shell
/// replaces its manager at a session shutdown) by the host.
#[derive(Default)]
pub struct ToolkitAdapters {
    shell: RwLock<Option<Arc<shell::Manager>>>,
}

impl ToolkitAdapters {
    /// Points nested shell calls at `manager` (the one the direct tools use).
    pub fn attach_shell(&self, manager: Arc<shell::Manager>) {
        *self.shell.write() = Some(manager);
    }

    fn shell(&self) -> Result<Arc<shell::Manager>, CodeError> {
        self.shell.read().clone().ok_or_else(|| {
            CodeError::new(
                CellCode::AdapterDisabled,
                "Shell Sessions are not available in this session; nested shell calls cannot run.",
            )
        })
    }
}

fn patch_text(args: &Value) -> Result<String, CodeError> {
    let o = args.as_object().ok_or_else(|| {
        CodeError::new(
            CellCode::InvalidArguments,
            "tools.apply_patch takes the patch text or {patch}.",
        )
    })?;
    if let Some(k) = o.keys().find(|k| k.as_str() != "patch") {
        return Err(CodeError::new(
            CellCode::InvalidArguments,
            format!("tools.apply_patch does not accept \"{k}\"; pass the patch text or {{patch}}."),
        ));
    }
    match o.get("patch") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(CodeError::new(
            CellCode::InvalidArguments,
            "tools.apply_patch needs the patch text (\"*** Begin Patch\" ... \"*** End Patch\").",
        )),
    }
}

/// The structured reply of a nested shell call: the direct tool's details (stdout/stderr carry the output) plus
/// `text`, the direct tool's status lines *without* the output blocks, so the output crosses the bridge once.
fn nested_reply(r: &shell::ShellResult) -> Value {
    let mut details = r.details();
    let mut head = r.clone();
    head.stdout.clear();
    head.stderr.clear();
    let mut text = head.text();
    if !(r.stdout.is_empty() && r.stderr.is_empty()) {
        // The status lines of an output-less read end with this marker; here the output is in stdout/stderr.
        if let Some(t) = text.strip_suffix("\n(no new output)") {
            text = t.to_string();
        }
    }
    if let Value::Object(m) = &mut details {
        m.insert("text".into(), Value::String(text));
    }
    details
}

fn shell_err(e: shell::ShellError) -> CodeError {
    CodeError::new(e.code, e.message)
}

impl Adapters for Arc<ToolkitAdapters> {
    fn validate(&self, tool: &str, args: &Value) -> Result<Value, CodeError> {
        let bad =
            |e: shell::ShellError| CodeError::new(CellCode::InvalidArguments, format!("{} ({})", e.message, e.code));
        match tool {
            "exec_command" => shell::normalize_exec(args).map(|_| args.clone()).map_err(bad),
            "write_stdin" => shell::normalize_write(args).map(|_| args.clone()).map_err(bad),
            "apply_patch" => patch_text(args).map(|p| json!({ "patch": p })),
            _ => Err(CodeError::new(
                CellCode::UnknownAdapter,
                format!("Unknown tool \"{tool}\"."),
            )),
        }
    }

    fn mutated_paths(&self, tool: &str, args: &Value, cwd: &str) -> Option<Vec<String>> {
        if tool != "apply_patch" {
            return None;
        }
        let text = patch_text(args).ok()?;
        // A patch that does not parse takes no lock; the executor then reports the same error.
        let paths = crate::patch::touched_paths(std::path::Path::new(cwd), &text).ok()?;
        Some(paths.into_iter().map(|p| p.to_string_lossy().into_owned()).collect())
    }

    fn dispatch(&self, tool: &str, args: Value, ctx: NestedContext) -> BoxFuture<Result<Value, CodeError>> {
        let me = self.clone();
        let tool = tool.to_string();
        Box::pin(async move {
            match tool.as_str() {
                "exec_command" | "write_stdin" => {
                    let mgr = me.shell()?;
                    let shell_cfg = match &ctx.shell {
                        Some(v) => Some(shell::ShellConfig::from_value(v).map_err(shell_err)?),
                        None => None,
                    };
                    let env = if ctx.env.is_empty() { None } else { Some(json!(ctx.env)) };
                    // A call still in flight when the cell is sealed (terminate, failure, close) is unsettled
                    // dispatch: it is aborted like a cancelled direct call. An exec_command that has not yielded
                    // yet stops its job (nobody else holds its session id); a write_stdin only ends its poll (its
                    // shell was yielded earlier and belongs to Shell).
                    let cancel = shell::Cancel::new();
                    let call = shell::CallContext {
                        cwd: PathBuf::from(&ctx.cwd),
                        shell: shell_cfg,
                        env,
                        cancel: Some(cancel.clone()),
                        stop_on_cancel: tool == "exec_command",
                        live: None,
                    };
                    let run = async {
                        if tool == "exec_command" {
                            mgr.exec(&args, call).await
                        } else {
                            mgr.write_stdin(&args, call).await
                        }
                    };
                    tokio::pin!(run);
                    let r = match ctx.sealed.clone() {
                        Some(mut sealed) => tokio::select! {
                            r = &mut run => r,
                            _ = async { let _ = sealed.wait_for(|s| *s).await; } => {
                                cancel.cancel();
                                run.await
                            }
                        },
                        None => run.await,
                    };
                    let r = r.map_err(shell_err)?;
                    Ok(nested_reply(&r))
                }
                "apply_patch" => {
                    let text = patch_text(&args)?;
                    super::wiring_patch::apply(PathBuf::from(&ctx.cwd), text, ctx.cancel.clone(), ctx.review.clone())
                        .await
                }
                other => Err(CodeError::new(
                    CellCode::UnknownAdapter,
                    format!("Unknown tool \"{other}\"."),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::adapters::{BoxFuture, GateAnswer, GateRequest, HostGate};
    use crate::code::{CodeManager, OuterCall};
    use tokio::runtime::Handle;

    struct Allow;
    impl HostGate for Allow {
        fn ask(&self, _r: GateRequest) -> BoxFuture<GateAnswer> {
            Box::pin(async {
                GateAnswer {
                    allow: true,
                    shell: Some(json!({"shell": "/bin/sh", "args": ["-c"]})),
                    env: Some([("PCT_X".to_string(), "from-hook".to_string())].into_iter().collect()),
                    ..Default::default()
                }
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nested_shell_sessions_from_one_cell() {
        let dir = tempfile::tempdir().unwrap();
        let adapters = Arc::new(ToolkitAdapters::default());
        let shell_mgr = Arc::new(shell::Manager::new(
            shell::Limits::default(),
            crate::output::RecoveryStore::new("shell"),
        ));
        adapters.attach_shell(shell_mgr.clone());
        let m = CodeManager::new(Arc::new(adapters), Arc::new(Allow), Handle::current());
        m.set_admitted(vec!["exec_command".into(), "write_stdin".into(), "apply_patch".into()]);
        let code = r#"
            const a = await tools.exec_command({cmd: "read l; echo got:$l", yield_time_ms: 100});
            const b = await tools.write_stdin({session_id: a.sessionId, chars: "ping\n", yield_time_ms: 5000});
            const env = await tools.exec_command({cmd: "echo $PCT_X"});
            return [a.status, b.status, b.stdout, env.stdout, a.sessionId];
        "#;
        let r = m
            .exec(
                json!({"code": code, "yield_time_ms": 30000}),
                OuterCall {
                    cwd: dir.path().to_string_lossy().into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(r.status, "completed", "{}", r.text);
        let v: Value = serde_json::from_str(r.result.as_deref().unwrap()).unwrap();
        assert_eq!(v[0], "running");
        assert_eq!(v[1], "completed");
        assert_eq!(v[2], "got:ping\n");
        assert_eq!(v[3], "from-hook\n", "the context hook's env overlay reaches the spawn");
        assert!(v[4].as_str().unwrap().starts_with("pct-shell-"));
        assert!(r.text.contains("nested calls: 3 completed, 0 failed"), "{}", r.text);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_nested_read_at_the_largest_budget_is_delivered_and_carries_its_output_once() {
        // Before: stdout was carried twice (stdout and text), the reply passed 256 KiB and the cell got
        // bridge-overload after the command ran.
        let dir = tempfile::tempdir().unwrap();
        let adapters = Arc::new(ToolkitAdapters::default());
        let shell_mgr = Arc::new(shell::Manager::new(
            shell::Limits::default(),
            crate::output::RecoveryStore::new("shell"),
        ));
        adapters.attach_shell(shell_mgr.clone());
        let m = CodeManager::new(Arc::new(adapters), Arc::new(Allow), Handle::current());
        m.set_admitted(vec!["exec_command".into()]);
        let code = r#"
            const r = await tools.exec_command({cmd: "head -c 300000 /dev/zero | tr '\\0' x", max_output_tokens: 65536, yield_time_ms: 20000});
            return [r.status, r.stdout.length, r.truncated, r.text.includes("xxxx"), r.text.split("\n")[0], typeof r.recovery?.path];
        "#;
        let r = m
            .exec(
                json!({"code": code, "yield_time_ms": 30000}),
                OuterCall {
                    cwd: dir.path().to_string_lossy().into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(r.status, "completed", "{}", r.text);
        let v: Value = serde_json::from_str(r.result.as_deref().unwrap()).unwrap();
        assert_eq!(v[0], "completed");
        assert_eq!(v[1], 262144);
        assert_eq!(v[2], true);
        assert_eq!(v[3], false, "the output is not repeated in text");
        assert!(v[4].as_str().unwrap().starts_with("session_id pct-shell-"), "{v}");
        assert_eq!(v[5], "string", "the cut output is in the shell's recovery file");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn schema_refusals_are_invalid_arguments() {
        let a = Arc::new(ToolkitAdapters::default());
        assert_eq!(
            a.validate("exec_command", &json!({"tty": true, "cmd": "x"}))
                .unwrap_err()
                .code,
            "invalid-arguments"
        );
        assert_eq!(
            a.validate("write_stdin", &json!({"session_id": 5})).unwrap_err().code,
            "invalid-arguments"
        );
        assert_eq!(
            a.validate("apply_patch", &json!({"patch": "x", "extra": 1}))
                .unwrap_err()
                .code,
            "invalid-arguments"
        );
        assert!(a.validate("apply_patch", &json!({"patch": "*** Begin Patch"})).is_ok());
    }
}

#[cfg(test)]
mod seal_tests {
    //! Item 8 of the hardening issue: a nested shell call still in flight when the cell is sealed is aborted like a
    //! cancelled direct call (its job stops); shells already yielded to the cell stay with Shell and are reported.
    use super::*;
    use crate::code::adapters::{BoxFuture, GateAnswer, GateRequest, HostGate};
    use crate::code::{CodeManager, OuterCall};
    use std::time::Duration;
    use tokio::runtime::Handle;

    struct Allow;
    impl HostGate for Allow {
        fn ask(&self, _r: GateRequest) -> BoxFuture<GateAnswer> {
            Box::pin(async {
                GateAnswer {
                    allow: true,
                    shell: Some(json!({"shell": "/bin/sh", "args": ["-c"]})),
                    ..Default::default()
                }
            })
        }
    }

    fn setup() -> (CodeManager, Arc<shell::Manager>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let adapters = Arc::new(ToolkitAdapters::default());
        let shell_mgr = Arc::new(shell::Manager::new(
            shell::Limits::default(),
            crate::output::RecoveryStore::new("shell"),
        ));
        adapters.attach_shell(shell_mgr.clone());
        let m = CodeManager::new(Arc::new(adapters), Arc::new(Allow), Handle::current());
        m.set_admitted(vec!["exec_command".into(), "write_stdin".into()]);
        (m, shell_mgr, dir)
    }

    fn outer(dir: &tempfile::TempDir) -> OuterCall {
        OuterCall {
            cwd: dir.path().to_string_lossy().into(),
            ..Default::default()
        }
    }

    /// Bounded polling of the shell manager's unsettled job count.
    async fn running_becomes(shell_mgr: &shell::Manager, n: usize) {
        for _ in 0..3000 {
            if shell_mgr.status().running == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("shell jobs running: {} (expected {n})", shell_mgr.status().running);
    }

    const IN_FLIGHT: &str = "await tools.exec_command({cmd: 'sleep 100', yield_time_ms: 30000}); return 'never'";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn terminating_cells_during_a_nested_exec_command_stops_their_jobs() {
        // Before: each terminated cell left its `sleep 100` running with no handle; 16 of them filled the shell
        // session limit and every direct exec_command failed.
        let (m, shell_mgr, dir) = setup();
        for _ in 0..17 {
            let r = m
                .exec(json!({"code": IN_FLIGHT, "yield_time_ms": 0}), outer(&dir))
                .await
                .unwrap();
            running_becomes(&shell_mgr, 1).await;
            let t = m
                .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer(&dir))
                .await
                .unwrap();
            assert_eq!(t.status, "terminated");
            assert!(!t.unknown_outcome, "{}", t.text);
            assert!(
                t.shell_sessions.is_empty(),
                "the stopped job was never yielded: {}",
                t.text
            );
            running_becomes(&shell_mgr, 0).await;
        }
        let direct = shell_mgr
            .exec(
                &json!({"cmd": "echo direct"}),
                shell::CallContext {
                    cwd: dir.path().into(),
                    shell: Some(shell::ShellConfig::from_value(&json!({"shell": "/bin/sh", "args": ["-c"]})).unwrap()),
                    env: None,
                    cancel: None,
                    stop_on_cancel: true,
                    live: None,
                },
            )
            .await;
        assert!(direct.is_ok(), "{:?}", direct.err().map(|e| e.message));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failure_and_close_abort_an_in_flight_nested_exec_command() {
        let (m, shell_mgr, dir) = setup();
        // Failure: the program throws while its nested call is in flight.
        let r = m
            .exec(
                json!({"code": "const p = tools.exec_command({cmd: 'echo started; sleep 100', yield_time_ms: 30000}); await tools.exec_command({cmd: 'sleep 0.3'}); throw new Error('boom')", "yield_time_ms": 30000}),
                outer(&dir),
            )
            .await
            .unwrap();
        assert_eq!(r.status, "failed", "{}", r.text);
        running_becomes(&shell_mgr, 0).await;
        // Close: shutdown seals every cell.
        m.exec(json!({"code": IN_FLIGHT, "yield_time_ms": 0}), outer(&dir))
            .await
            .unwrap();
        running_becomes(&shell_mgr, 1).await;
        m.shutdown().await.unwrap();
        running_becomes(&shell_mgr, 0).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn terminating_a_cell_during_a_nested_write_stdin_ends_the_poll_but_not_the_shell() {
        let (m, shell_mgr, dir) = setup();
        let code = "const a = await tools.exec_command({cmd: 'sleep 100', yield_time_ms: 50}); print(a.sessionId); await tools.write_stdin({session_id: a.sessionId, yield_time_ms: 30000}); return 'never'";
        let r = m
            .exec(json!({"code": code, "yield_time_ms": 0}), outer(&dir))
            .await
            .unwrap();
        // Bounded polling until the write_stdin poll is in flight (the shell was yielded first).
        let mut printed = r.output.clone();
        for _ in 0..3000 {
            if !printed.is_empty() {
                break;
            }
            let w = m
                .wait(json!({"cell_id": r.cell_id, "yield_time_ms": 10}), outer(&dir))
                .await
                .unwrap();
            printed.push_str(&w.output);
        }
        let sid = printed.trim().to_string();
        assert!(sid.starts_with("pct-shell-"), "{printed}");
        let t = m
            .wait(json!({"cell_id": r.cell_id, "terminate": true}), outer(&dir))
            .await
            .unwrap();
        assert_eq!(t.status, "terminated", "{}", t.text);
        assert_eq!(t.shell_sessions, vec![sid.clone()]);
        // The yielded shell keeps running in Shell and answers a direct poll.
        assert_eq!(shell_mgr.status().running, 1);
        let poll = shell_mgr
            .write_stdin(
                &json!({"session_id": sid, "yield_time_ms": 0}),
                shell::CallContext {
                    cwd: dir.path().into(),
                    shell: None,
                    env: None,
                    cancel: None,
                    stop_on_cancel: true,
                    live: None,
                },
            )
            .await
            .unwrap();
        assert_eq!(poll.status, shell::Status::Running);
        shell_mgr.cleanup().await.unwrap();
        running_becomes(&shell_mgr, 0).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn yielded_shells_stay_with_shell_and_are_reported_when_the_cell_is_terminated_fails_or_is_cut() {
        let (m, shell_mgr, dir) = setup();
        let yielded = "const a = await tools.exec_command({cmd: 'sleep 100', yield_time_ms: 50});";
        for (tail, status) in [
            (
                "await tools.exec_command({cmd: 'sleep 100', yield_time_ms: 30000});",
                "terminated",
            ),
            ("throw new Error('x'.repeat(10000))", "failed"),
            ("return 'r'.repeat(400000)", "completed"),
        ] {
            let before = shell_mgr.status().running;
            let r = m
                .exec(
                    json!({"code": format!("{yielded} {tail}"), "yield_time_ms": if status == "terminated" { 0 } else { 30000 }}),
                    outer(&dir),
                )
                .await
                .unwrap();
            let r = if status == "terminated" {
                running_becomes(&shell_mgr, before + 2).await;
                m.wait(json!({"cell_id": r.cell_id, "terminate": true}), outer(&dir))
                    .await
                    .unwrap()
            } else {
                r
            };
            assert_eq!(r.status, status, "{}", r.text);
            assert_eq!(r.shell_sessions.len(), 1, "{}", r.text);
            let sid = &r.shell_sessions[0];
            assert!(
                r.text
                    .contains(&format!("shell session {sid} is still running (it belongs to Shell)")),
                "{}",
                r.text
            );
            // The yielded shell keeps running (only the in-flight one was stopped).
            running_becomes(&shell_mgr, before + 1).await;
        }
        shell_mgr.cleanup().await.unwrap();
        running_becomes(&shell_mgr, 0).await;
    }
}
