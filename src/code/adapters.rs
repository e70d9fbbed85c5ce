//! The seams of nested calls: [`Adapters`] reaches the shell and patch executors Rust-to-Rust, [`HostGate`]
//! reaches the TypeScript side for the embedder's policy hook and the user's approval. Both are traits so the
//! manager can be tested with fakes and wired to the real executors in `lib.rs`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::errors::{CellCode, CodeError, ErrorCode};

/// A boxed future, so the traits stay object-safe.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a dispatched nested call knows about its origin.
#[derive(Debug, Clone, Default)]
#[allow(dead_code)] // read by the shell/patch wiring
pub struct NestedContext {
    /// Pi's working directory of the outer exec call (workdir of nested shells is relative to it).
    pub cwd: String,
    /// The cell making the call.
    pub cell_id: String,
    /// Environment overlay from the embedder's context hook, for that one spawn only.
    pub env: HashMap<String, String>,
    /// Pi's shell (`getShellConfig()`), resolved by the host at dispatch for exec_command.
    pub shell: Option<Value>,
    /// Set once the cell is sealed (terminate, close, failure): a nested patch still in preflight/staging stops
    /// with `aborted` and changes nothing (a started commit finishes).
    pub cancel: Arc<AtomicBool>,
    /// The same seal as a watch: a nested shell call still in flight (not yet yielded back to the cell) is aborted
    /// the way a cancelled direct call is — an `exec_command` stops its job, a `write_stdin` ends its poll only.
    pub sealed: Option<tokio::sync::watch::Receiver<bool>>,
    /// apply_patch: the Pi session that records the review change (docs/review.md), from the policy answer.
    pub review: Option<crate::review::Target>,
}

/// The executors nested calls reach. `exec_command`/`write_stdin` must be the same shell manager and sessions
/// as the direct tools; `apply_patch` the same patch executor.
pub trait Adapters: Send + Sync + 'static {
    /// Schema check of one call's arguments (both field spellings accepted); `invalid-arguments` on refusal.
    /// Returns the normalised arguments passed to [`Adapters::dispatch`].
    fn validate(&self, tool: &str, args: &Value) -> Result<Value, CodeError>;
    /// Runs one call. Dropping the future ends the call's wait (a yielded shell keeps running in Shell).
    fn dispatch(&self, tool: &str, args: Value, ctx: NestedContext) -> BoxFuture<Result<Value, CodeError>>;
    /// Absolute paths a call will mutate (apply_patch), so the host can serialize it with Pi's own file
    /// mutations (withFileMutationQueue) in one global order. None = no host lock needed.
    fn mutated_paths(&self, _tool: &str, _args: &Value, _cwd: &str) -> Option<Vec<String>> {
        None
    }
}

/// One question to the TypeScript side about a nested call (identity only, never arguments except the preview that
/// the permission card shows).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GateRequest {
    /// "policy": admission re-check + invocation hooks; "approval": the confirm dialog for apply_patch.
    pub phase: String,
    pub tool: String,
    pub cell_id: String,
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// First 800 bytes of the arguments (approval phase only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// "lock" phase: the sorted absolute paths to hold in Pi's file mutation queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// "unlock" phase: the lease the "lock" phase returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// "policy" phase, write_stdin: whether the call writes characters (command risk, docs/permissions.md) or
    /// only polls, closes stdin or terminates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sends_input: Option<bool>,
}

/// The TypeScript side's answer.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GateAnswer {
    pub allow: bool,
    /// Error code when refused (policy-denied, adapter-disabled, approval-unavailable, approval-denied,
    /// unavailable). The host's word is parsed here: a word that is no cell code is dropped, so the phase's default
    /// code applies (docs/code.md "Errors").
    #[serde(default, deserialize_with = "host_code")]
    pub code: Option<ErrorCode>,
    #[serde(default)]
    pub reason: Option<String>,
    /// Policy phase: the context hook's env overlay.
    #[serde(default)]
    pub env: Option<HashMap<String, String>>,
    /// Policy phase: whether an approval phase must follow (apply_patch in confirm mode).
    #[serde(default)]
    pub needs_approval: bool,
    /// Policy phase, exec_command: Pi's shell config `{shell, args, commandTransport?}`.
    #[serde(default)]
    pub shell: Option<Value>,
    /// Lock phase: the lease to release with an "unlock" request once the mutation finished.
    #[serde(default)]
    pub lease: Option<String>,
    /// Policy phase, apply_patch: which Pi session records the review change (docs/review.md).
    #[serde(default)]
    pub review: Option<crate::bind::review::ReviewTarget>,
}

/// `GateAnswer.code` from the host: a string that is a [`CellCode`] word, else none (the phase's default applies);
/// a value that is not a string makes the whole answer invalid, as before.
fn host_code<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ErrorCode>, D::Error> {
    let word: Option<String> = Deserialize::deserialize(d)?;
    Ok(word.as_deref().and_then(CellCode::parse).map(ErrorCode::Cell))
}

/// The host side of nested calls (implemented over ThreadsafeFunctions in lib.rs, by fakes in tests).
pub trait HostGate: Send + Sync + 'static {
    fn ask(&self, req: GateRequest) -> BoxFuture<GateAnswer>;
}

/// A gate that allows everything without approval and grants every file lock a lease (tests).
#[cfg(test)]
pub struct AllowAll;
#[cfg(test)]
impl HostGate for AllowAll {
    fn ask(&self, req: GateRequest) -> BoxFuture<GateAnswer> {
        let lease = (req.phase == "lock").then(|| "lease-test".to_string());
        Box::pin(async move {
            GateAnswer {
                allow: true,
                lease,
                ..Default::default()
            }
        })
    }
}

/// Normalises the nested argument forms every adapter shares: `tools.apply_patch("*** Begin Patch ...")`
/// takes the envelope string as `{patch}`.
pub fn normalize_nested_args(tool: &str, args: Value) -> Value {
    match (tool, args) {
        ("apply_patch", Value::String(s)) => serde_json::json!({ "patch": s }),
        (_, a) => a,
    }
}

/// The session id a nested shell call names or reports (progress records and continuation lines only).
pub fn session_id_of(v: &Value) -> Option<String> {
    let o = v.as_object()?;
    for k in ["session_id", "sessionId"] {
        match o.get(k) {
            Some(Value::String(s)) => return Some(s.clone()),
            Some(Value::Number(n)) => return Some(n.to_string()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
pub mod fake {
    //! Fake adapters for tests: exec_command echoes, write_stdin echoes, apply_patch records patches.
    use super::*;
    use parking_lot::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Default)]
    pub struct FakeAdapters {
        pub calls: Mutex<Vec<(String, Value)>>,
        /// The cancel flag of the last dispatched call.
        pub last_cancel: Mutex<Option<Arc<std::sync::atomic::AtomicBool>>>,
        pub running_now: AtomicUsize,
        pub max_concurrent: AtomicUsize,
        pub patch_running: AtomicUsize,
        pub patch_overlap: AtomicUsize,
    }

    impl Adapters for Arc<FakeAdapters> {
        fn mutated_paths(&self, tool: &str, _args: &Value, cwd: &str) -> Option<Vec<String>> {
            (tool == "apply_patch").then(|| vec![format!("{cwd}/patched.txt")])
        }
        fn validate(&self, tool: &str, args: &Value) -> Result<Value, CodeError> {
            let o = args
                .as_object()
                .ok_or_else(|| CodeError::new(CellCode::InvalidArguments, format!("{tool} needs an object")))?;
            let need = match tool {
                "exec_command" => ["cmd", "command"],
                "write_stdin" => ["session_id", "sessionId"],
                _ => ["patch", "input"],
            };
            if !need.iter().any(|k| o.contains_key(*k)) {
                return Err(CodeError::new(
                    CellCode::InvalidArguments,
                    format!("{tool} needs {}", need[0]),
                ));
            }
            Ok(args.clone())
        }
        fn dispatch(&self, tool: &str, args: Value, ctx: NestedContext) -> BoxFuture<Result<Value, CodeError>> {
            let me = self.clone();
            let tool = tool.to_string();
            Box::pin(async move {
                me.calls.lock().push((tool.clone(), args.clone()));
                *me.last_cancel.lock() = Some(ctx.cancel.clone());
                let now = me.running_now.fetch_add(1, Ordering::SeqCst) + 1;
                me.max_concurrent.fetch_max(now, Ordering::SeqCst);
                if tool == "apply_patch" && me.patch_running.fetch_add(1, Ordering::SeqCst) > 0 {
                    me.patch_overlap.fetch_add(1, Ordering::SeqCst);
                }
                if args.get("panic").and_then(|v| v.as_bool()) == Some(true) {
                    panic!("fake adapter panic");
                }
                let sleep = args.get("sleep_ms").and_then(|v| v.as_u64()).unwrap_or(0);
                if sleep > 0 {
                    tokio::time::sleep(Duration::from_millis(sleep)).await;
                }
                if tool == "apply_patch" {
                    me.patch_running.fetch_sub(1, Ordering::SeqCst);
                }
                me.running_now.fetch_sub(1, Ordering::SeqCst);
                if let Some(code) = args.get("fail").and_then(|v| v.as_str()) {
                    return Err(CodeError::new(
                        CellCode::parse(code).unwrap_or(CellCode::Unavailable),
                        "fake failure",
                    ));
                }
                if let Some(n) = args.get("reply_bytes").and_then(|v| v.as_u64()) {
                    if args.get("with_session").is_some() {
                        return Ok(serde_json::json!({
                            "blob": "x".repeat(n as usize), "sessionId": "pct-shell-7", "status": "running",
                            "recovery": {"path": "/tmp/fake-recovery.log"},
                        }));
                    }
                    return Ok(serde_json::json!({ "blob": "x".repeat(n as usize) }));
                }
                if let Some(n) = args.get("stdout_bytes").and_then(|v| v.as_u64()) {
                    // Control characters: six bytes each once JSON-escaped.
                    return Ok(serde_json::json!({
                        "sessionId": "pct-shell-8", "status": "completed", "stdout": "\u{1}".repeat(n as usize),
                        "stderr": "é".repeat(4),
                    }));
                }
                let echo = if args.to_string().len() < 4096 {
                    args.clone()
                } else {
                    Value::from("(large)")
                };
                Ok(serde_json::json!({
                    "tool": tool, "args": echo, "cwd": ctx.cwd, "env": ctx.env,
                    "sessionId": if tool == "exec_command" { Some("pct-shell-1") } else { None },
                    "status": args.get("status").cloned().unwrap_or(Value::from("completed")),
                }))
            })
        }
    }
}
