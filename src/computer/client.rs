//! The `codex app-server --stdio` client (docs/computer.md "Transport"): JSON-RPC 2.0 without the `jsonrpc` field,
//! one JSON object per line. Start = `initialize` request, `initialized` notification, an ephemeral read-only
//! `thread/start`; each tool call is an `mcpServer/tool/call` on that thread. Calls run one at a time (the
//! [`Session`] lock). A timeout, a crash or a protocol error ends the child: its whole process group is killed
//! (it was registered with the shell watchdog, so it also dies with Node) and the next call starts a fresh one.

use super::{CuError, Probe};
use crate::shell::watchdog;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;

/// Longest line accepted from the app-server (screenshots travel as base64 inside one line).
pub const MAX_LINE: usize = 32 * 1024 * 1024;

type Pending = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Result<Value, CuError>>>>>>;

/// Timeouts (tests shorten them).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub start: Duration,
    pub call: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            start: Duration::from_secs(30),
            call: Duration::from_secs(120),
        }
    }
}

/// One running app-server child with its thread.
struct Conn {
    child: Child,
    pgid: i32,
    stdin: ChildStdin,
    pending: Pending,
    next_id: AtomicU64,
    thread_id: String,
    server: String,
}

impl Conn {
    async fn start(probe: &Probe, limits: Limits) -> Result<Conn, CuError> {
        let program = probe
            .program
            .as_deref()
            .ok_or_else(|| super::unavailable_error(super::CuCode::MissingDesktopComponent))?;
        watchdog::ensure_started();
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&probe.args)
            .args(["app-server", "--stdio"])
            .env(watchdog::MARKER_VAR, format!("{}:computer:0", watchdog::instance()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            CuError::new(
                super::CuCode::AppServerStartFailed,
                format!("Could not start the Computer Use app-server ({program}): {e}. Ask the user to check the ChatGPT app installation."),
            )
        })?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        watchdog::add_group(pgid);
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        tokio::spawn(read_loop(stdout, pending.clone()));
        let mut conn = Conn {
            child,
            pgid,
            stdin,
            pending,
            next_id: AtomicU64::new(1),
            thread_id: String::new(),
            server: probe.server.clone(),
        };
        let init = async {
            conn.request(
                "initialize",
                json!({"clientInfo": {"name": "pi-codex-toolkit", "title": "pi-codex-toolkit", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .await?;
            conn.send(&json!({"method": "initialized"})).await?;
            let started = conn
                .request(
                    "thread/start",
                    json!({"ephemeral": true, "sandbox": "read-only", "approvalPolicy": "never"}),
                )
                .await?;
            started["thread"]["id"].as_str().map(String::from).ok_or_else(|| {
                CuError::new(super::CuCode::ProtocolError, "The app-server answered thread/start without a thread id. Retry once; if it repeats, Computer Use is not usable with this ChatGPT app version.")
            })
        };
        match tokio::time::timeout(limits.start, init).await {
            Ok(Ok(id)) => {
                conn.thread_id = id;
                Ok(conn)
            }
            Ok(Err(e)) => {
                conn.kill().await;
                Err(e)
            }
            Err(_) => {
                conn.kill().await;
                Err(CuError::new(
                    super::CuCode::Timeout,
                    format!("The Computer Use app-server did not start within {} s. Retry once; if it repeats, ask the user to restart the ChatGPT app.", limits.start.as_secs_f64()),
                ))
            }
        }
    }

    async fn send(&mut self, msg: &Value) -> Result<(), CuError> {
        let mut line = serde_json::to_vec(msg).expect("json");
        line.push(b'\n');
        let r = async {
            self.stdin.write_all(&line).await?;
            self.stdin.flush().await
        };
        r.await.map_err(|_| exited())
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, CuError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            Some(map) => map.insert(id, tx),
            None => return Err(exited()),
        };
        self.send(&json!({"id": id, "method": method, "params": params}))
            .await?;
        rx.await.unwrap_or_else(|_| Err(exited()))
    }

    fn alive(&self) -> bool {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Kills the whole process group and reaps the child (no zombie, no grandchild left).
    async fn kill(&mut self) {
        if self.pgid > 1 {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
            unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        }
        let _ = self.child.kill().await;
        if self.pgid > 1 {
            watchdog::remove_group(self.pgid);
            self.pgid = 0;
        }
    }
}

fn exited() -> CuError {
    CuError::new(
        super::CuCode::AppServerExited,
        "The Computer Use app-server exited during the call; the action may or may not have happened. Check with computer_use_get_app_state before retrying.",
    )
}

/// Reads replies, routes them to their waiting request, answers server-to-client requests with a refusal (this
/// client grants nothing itself) and fails every waiting request when the child's stdout ends.
async fn read_loop(stdout: tokio::process::ChildStdout, pending: Pending) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await
            .unwrap_or_default();
        if n == 0 || (buf.len() > MAX_LINE && !buf.ends_with(b"\n")) {
            break;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        let Some(id) = msg.get("id").and_then(Value::as_u64) else {
            continue;
        };
        if msg.get("method").is_some() {
            continue; // a server request (e.g. an approval): unanswered requests are harmless, the call times out
        }
        let result = if let Some(err) = msg.get("error") {
            Err(CuError::new(
                super::CuCode::ToolError,
                format!(
                    "The Computer Use app-server refused the call: {}. Check the arguments (e.g. with computer_use_get_app_state) and try again.",
                    err["message"].as_str().unwrap_or("unknown error")
                ),
            ))
        } else {
            Ok(msg.get("result").cloned().unwrap_or(Value::Null))
        };
        if let Some(tx) = pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .and_then(|m| m.remove(&id))
        {
            let _ = tx.send(result);
        }
    }
    // Dropping the senders fails every waiter with `app-server-exited`.
    pending.lock().unwrap_or_else(PoisonError::into_inner).take();
}

/// The session's client: at most one child, calls strictly one at a time.
pub struct Session {
    conn: tokio::sync::Mutex<Option<Conn>>,
    limits: Limits,
    spawned: AtomicU64,
}

impl Session {
    pub fn new(limits: Limits) -> Self {
        Self {
            conn: tokio::sync::Mutex::new(None),
            limits,
            spawned: AtomicU64::new(0),
        }
    }

    /// How many app-server children this session started (diagnostics and tests: 0 off macOS).
    pub fn spawned(&self) -> u64 {
        self.spawned.load(Ordering::Relaxed)
    }

    /// Runs one tool call on the computer-use MCP server, starting the app-server when none is running.
    pub async fn call(&self, probe: &Probe, tool: &str, arguments: Value) -> Result<Value, CuError> {
        if let Some(reason) = probe.reason {
            return Err(super::unavailable_error(reason));
        }
        let mut guard = self.conn.lock().await;
        if guard.as_ref().is_some_and(|c| !c.alive()) {
            guard.take().unwrap().kill().await;
        }
        if guard.is_none() {
            self.spawned.fetch_add(1, Ordering::Relaxed);
            *guard = Some(Conn::start(probe, self.limits).await?);
        }
        let conn = guard.as_mut().unwrap();
        let params = json!({"threadId": conn.thread_id, "server": conn.server, "tool": tool, "arguments": arguments});
        match tokio::time::timeout(self.limits.call, conn.request("mcpServer/tool/call", params)).await {
            Ok(Ok(result)) => {
                if result["isError"] == true {
                    let text = text_of(&result);
                    return Err(CuError::new(
                        super::CuCode::ToolError,
                        format!("computer_use_{tool} failed: {text}. Check the app state with computer_use_get_app_state and adjust the call."),
                    ));
                }
                Ok(result)
            }
            Ok(Err(e)) => {
                if e.code == super::CuCode::AppServerExited {
                    guard.take().unwrap().kill().await;
                }
                Err(e)
            }
            Err(_) => {
                guard.take().unwrap().kill().await;
                Err(CuError::new(
                    super::CuCode::Timeout,
                    format!("computer_use_{tool} did not answer within {} s; the app-server was stopped. The action may or may not have happened: check with computer_use_get_app_state before retrying.", self.limits.call.as_secs_f64()),
                ))
            }
        }
    }

    /// Stops the child, if any (session shutdown, switch, reload). Safe to call repeatedly.
    pub async fn shutdown(&self) {
        if let Some(mut c) = self.conn.lock().await.take() {
            c.kill().await;
        }
    }

    /// The running child's pid (tests check it is gone after a shutdown).
    pub async fn pid(&self) -> Option<u32> {
        self.conn.lock().await.as_ref().and_then(|c| c.child.id())
    }
}

/// The text parts of an MCP tool result, joined.
pub fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
