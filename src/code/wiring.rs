//! The real nested adapters: `exec_command` / `write_stdin` reach the very `shell::Manager` behind the direct tools
//! (same sessions, limits and recovery), `apply_patch` the same `patch::apply` executor (same containment, same
//! process-wide patch lock). Rust-to-Rust: nothing goes through JavaScript.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde_json::{json, Value};

use super::adapters::{Adapters, BoxFuture, NestedContext};
use super::errors::CodeError;
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
        *self.shell.write().unwrap() = Some(manager);
    }

    fn shell(&self) -> Result<Arc<shell::Manager>, CodeError> {
        self.shell.read().unwrap().clone().ok_or_else(|| {
            CodeError::new(
                "adapter-disabled",
                "Shell Sessions are not available in this session; nested shell calls cannot run.",
            )
        })
    }
}

fn patch_text(args: &Value) -> Result<String, CodeError> {
    let o = args.as_object().ok_or_else(|| {
        CodeError::new(
            "invalid-arguments",
            "tools.apply_patch takes the patch text or {patch}.",
        )
    })?;
    if let Some(k) = o.keys().find(|k| k.as_str() != "patch") {
        return Err(CodeError::new(
            "invalid-arguments",
            format!("tools.apply_patch does not accept \"{k}\"; pass the patch text or {{patch}}."),
        ));
    }
    match o.get("patch") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(CodeError::new(
            "invalid-arguments",
            "tools.apply_patch needs the patch text (\"*** Begin Patch\" ... \"*** End Patch\").",
        )),
    }
}

fn shell_err(e: shell::ShellError) -> CodeError {
    CodeError::new(e.code, e.message)
}

impl Adapters for Arc<ToolkitAdapters> {
    fn validate(&self, tool: &str, args: &Value) -> Result<Value, CodeError> {
        let bad = |e: shell::ShellError| CodeError::new("invalid-arguments", format!("{} ({})", e.message, e.code));
        match tool {
            "exec_command" => shell::normalize_exec(args).map(|_| args.clone()).map_err(bad),
            "write_stdin" => shell::normalize_write(args).map(|_| args.clone()).map_err(bad),
            "apply_patch" => patch_text(args).map(|p| json!({ "patch": p })),
            _ => Err(CodeError::new("unknown-adapter", format!("Unknown tool \"{tool}\"."))),
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
                    // Nested calls never stop their job when the cell stops: a yielded shell belongs to Shell.
                    let call = shell::CallContext {
                        cwd: PathBuf::from(&ctx.cwd),
                        shell: shell_cfg,
                        env,
                        cancel: None,
                        stop_on_cancel: false,
                    };
                    let r = if tool == "exec_command" {
                        mgr.exec(&args, call).await
                    } else {
                        mgr.write_stdin(&args, call).await
                    };
                    let r = r.map_err(shell_err)?;
                    let mut details = r.details();
                    if let Value::Object(m) = &mut details {
                        m.insert("text".into(), Value::String(r.text()));
                    }
                    Ok(details)
                }
                "apply_patch" => {
                    let text = patch_text(&args)?;
                    super::wiring_patch::apply(PathBuf::from(&ctx.cwd), text, ctx.cancel.clone()).await
                }
                other => Err(CodeError::new("unknown-adapter", format!("Unknown tool \"{other}\"."))),
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
