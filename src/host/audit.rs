//! The host tools' audit log (docs/spec/host-tools.md "Audit", docs/host.md "Audit"): one JSON line per call in
//! `<agentDir>/pi-codex-toolkit/audit/<sessionId>.jsonl`, secrets redacted (src/host/redact.rs) before anything is
//! hashed, shown or written. The folder is created 0700 and the file 0600 (an existing file is narrowed back to 0600), because the
//! arguments of file tools are the user's content.

use super::error::{HostError, INVALID_ARGUMENT};
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use super::redact::{secret_key, REDACTED};
/// The argument preview is cut at this many characters.
pub const PREVIEW_CHARS: usize = 200;

/// One call as the glue reports it (the arguments are the model's, before redaction).
#[derive(Clone, Debug, Default)]
pub struct Call {
    pub session_id: String,
    pub turn: Option<String>,
    pub tool_call_id: String,
    /// The call's trace id (the glue makes one per tool call, src/pi/trace.ts; docs/host.md "Trace ids"): also in
    /// the tool result's details. Checked by [`check_trace_id`].
    pub trace_id: Option<String>,
    pub tool: String,
    pub args: Value,
    /// `dotdot-escape`, `symlink-escape`, `absolute-outside`, or none for a path inside the roots.
    pub external: Option<String>,
    /// `allow` (no card), `allow-once`, `allow-session`, `deny`, `denied-headless`.
    pub decision: String,
    pub prompted: bool,
    pub permission_wait_ms: u64,
    pub duration_ms: u64,
    pub overhead_ms: u64,
    pub total_ms: u64,
    pub ok: bool,
    pub error_code: Option<String>,
    /// The Task delegate that made the call (docs/agents.md "Audit"); none for the session's own model.
    pub agent: Option<String>,
    /// The sensitive path the call named or touched (docs/permissions.md "Sensitive paths").
    pub sensitive: Option<String>,
}

/// The persisted line (field order is the spec's).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    /// Milliseconds since the Unix epoch.
    ts: u64,
    session_id: &'a str,
    turn: Option<&'a str>,
    tool_call_id: &'a str,
    trace_id: Option<&'a str>,
    tool: &'a str,
    args_hash: String,
    args_preview: String,
    external: Option<&'a str>,
    decision: &'a str,
    prompted: bool,
    permission_wait_ms: u64,
    duration_ms: u64,
    overhead_ms: u64,
    total_ms: u64,
    ok: bool,
    error_code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sensitive: Option<&'a str>,
}

/// Every secret inside a string (src/host/redact.rs: auth headers, secret `NAME=value`, URL credentials, password
/// flags, the well-known token formats) replaced by `[REDACTED]`.
pub fn redact_str(s: &str) -> String {
    super::redact::redact_text(s)
}

/// A copy of `v` with secret-named keys' values redacted and every string (keys too) redacted as free text, at any
/// depth.
pub fn redact(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(redact_str(s)),
        Value::Array(a) => Value::Array(a.iter().map(redact).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if secret_key(k) && !v.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact(v)
                    };
                    (redact_str(k), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The audit file of a session. The id must pass the one session-id rule (src/session_id.rs).
pub fn audit_path(agent_dir: &Path, session_id: &str) -> Result<PathBuf, HostError> {
    crate::session_id::SessionId::parse(session_id).map_err(|e| HostError::new(INVALID_ARGUMENT, e.to_string()))?;
    Ok(agent_dir
        .join("pi-codex-toolkit")
        .join("audit")
        .join(format!("{session_id}.jsonl")))
}

/// Longest trace id accepted.
pub const MAX_TRACE_ID: usize = 64;

/// A trace id is 1 to [`MAX_TRACE_ID`] ASCII letters, digits, `-` or `_` (the glue's are `pct-` + 16 hex digits); anything
/// else is refused with INVALID_ARGUMENT and nothing is written.
pub fn check_trace_id(t: &str) -> Result<(), HostError> {
    let ok = !t.is_empty()
        && t.len() <= MAX_TRACE_ID
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(HostError::new(
            INVALID_ARGUMENT,
            format!(
                "the trace id must be 1 to {MAX_TRACE_ID} letters, digits, '-' or '_'; nothing was written. Pass the id \
                 the glue made for this call."
            ),
        ))
    }
}

/// The JSON line for `call` at `ts` (ms since the Unix epoch), without the newline.
pub fn line(call: &Call, ts: u64) -> String {
    let redacted = redact(&call.args);
    let text = serde_json::to_string(&redacted).unwrap_or_default();
    let mut preview: String = text.chars().take(PREVIEW_CHARS).collect();
    if text.chars().count() > PREVIEW_CHARS {
        preview.push('…');
    }
    let l = Line {
        ts,
        session_id: &call.session_id,
        turn: call.turn.as_deref(),
        tool_call_id: &call.tool_call_id,
        trace_id: call.trace_id.as_deref(),
        tool: &call.tool,
        // Hash of the redacted arguments: a hash of a short secret could be brute-forced.
        args_hash: format!("sha256:{}", crate::digest::sha256_hex(text.as_bytes())),
        args_preview: preview,
        external: call.external.as_deref(),
        decision: &call.decision,
        prompted: call.prompted,
        permission_wait_ms: call.permission_wait_ms,
        duration_ms: call.duration_ms,
        overhead_ms: call.overhead_ms,
        total_ms: call.total_ms,
        ok: call.ok,
        error_code: call.error_code.as_deref(),
        agent: call.agent.as_deref(),
        sensitive: call.sensitive.as_deref(),
    };
    serde_json::to_string(&l).unwrap_or_default()
}

/// Appends one line for `call`; creates the folders (0700) and the file (0600) as needed. Returns the file path.
/// The log is opened without following links or blocking (src/agentfs.rs): a symlinked `audit/` folder, a
/// hard-linked, symlinked or non-regular log file is refused and left as it is.
pub fn append(agent_dir: &Path, call: &Call, ts: u64) -> Result<PathBuf, HostError> {
    let path = audit_path(agent_dir, &call.session_id)?;
    if let Some(t) = &call.trace_id {
        check_trace_id(t)?;
    }
    let fail = |what: &str, e: std::io::Error| {
        HostError::new(
            super::error::TOOL_FAILED,
            format!(
                "could not {what} the audit log {} ({}). It must be a private regular file in a private folder of \
                 the agent dir, not a link; check or remove it.",
                path.display(),
                crate::errno::code(&e)
            ),
        )
    };
    crate::agentfs::ensure_dirs(agent_dir, &["pi-codex-toolkit", "audit"])
        .map_err(|e| fail("create the folder of", e))?;
    let mut text = line(call, ts);
    text.push('\n');
    let mut f = crate::agentfs::open_append(&path).map_err(|e| fail("open", e))?;
    // One write of the whole line on an O_APPEND file: concurrent appends never interleave within a line.
    f.write_all(text.as_bytes()).map_err(|e| fail("write", e))?;
    Ok(path)
}

/// One append's place in its log's order. Taken on the caller's thread when the call arrives ([`Turn::take`]), so
/// the appends of one log land in the order the glue made them even though each writes on the blocking pool: a turn
/// waits ([`Turn::wait`]) until the turn before it on the same log has been dropped (written, failed or panicked).
/// Logs of different sessions never wait for each other (docs/host.md "Audit").
pub struct Turn {
    key: String,
    ticket: u64,
    prev: Option<tokio::sync::oneshot::Receiver<()>>,
    // Dropped with the turn: that is what lets the next turn of the log go.
    _done: tokio::sync::oneshot::Sender<()>,
}

type Tails = std::collections::HashMap<String, (u64, tokio::sync::oneshot::Receiver<()>)>;

/// The last turn taken per log (removed again by that turn's drop when nobody queued behind it).
fn tails() -> std::sync::MutexGuard<'static, Tails> {
    static TAILS: std::sync::OnceLock<std::sync::Mutex<Tails>> = std::sync::OnceLock::new();
    TAILS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

impl Turn {
    /// Queues an append to the log of `session_id` under `agent_dir` behind every append taken before it.
    pub fn take(agent_dir: &str, session_id: &str) -> Turn {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let ticket = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let key = format!("{agent_dir}\0{session_id}");
        let (done, rx) = tokio::sync::oneshot::channel();
        let prev = tails().insert(key.clone(), (ticket, rx)).map(|(_, r)| r);
        Turn {
            key,
            ticket,
            prev,
            _done: done,
        }
    }

    /// Resolves once the turn before this one on the same log is over.
    pub async fn wait(&mut self) {
        if let Some(prev) = self.prev.take() {
            // Err: the previous turn was dropped without sending, which is how every turn ends.
            let _ = prev.await;
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut all = tails();
        if all.get(&self.key).is_some_and(|(t, _)| *t == self.ticket) {
            all.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_keys_at_any_depth_and_sk_values_are_redacted() {
        let args = json!({
            "path": "a.txt",
            "content": "key=sk-proj-ABCDEFGH123 and sk-short and task-abcdefghijk",
            "env": {"API_KEY": "x", "apiKey": 1, "Authorization": "Bearer y", "x-auth-token": "z", "password": "p",
                    "clientSecret": ["a"], "nothing": null},
            "list": [{"token": "t"}, "sk-12345678"]
        });
        let r = redact(&args);
        assert_eq!(
            r,
            json!({
                "path": "a.txt",
                "content": "key=[REDACTED] and sk-short and task-abcdefghijk",
                "env": {"API_KEY": REDACTED, "apiKey": REDACTED, "Authorization": REDACTED, "x-auth-token": REDACTED,
                        "password": REDACTED, "clientSecret": REDACTED, "nothing": null},
                "list": [{"token": REDACTED}, REDACTED]
            })
        );
        assert_eq!(redact_str("sk-aaaaaaaasksk-bbbbbbbb"), "[REDACTED]");
        assert_eq!(redact_str("a sk-aaaaaaaa b sk-bbbbbbbb"), "a [REDACTED] b [REDACTED]");
        assert_eq!(
            redact_str("sk-1234567"),
            "sk-1234567",
            "7 characters is below the bound"
        );
        assert_eq!(redact_str("sk-12345678"), REDACTED, "8 is at it");
        assert_eq!(redact_str("é sk-12345678é"), "é [REDACTED]é");
    }

    fn call(session: &str) -> Call {
        Call {
            session_id: session.into(),
            turn: Some("t1".into()),
            tool_call_id: "c1".into(),
            trace_id: Some("pct-0123456789abcdef".into()),
            tool: "Write".into(),
            args: json!({"path": "a", "content": "x".repeat(300), "token": "sk-abcdefghijkl"}),
            external: None,
            decision: "allow-once".into(),
            prompted: true,
            permission_wait_ms: 5,
            duration_ms: 2,
            overhead_ms: 1,
            total_ms: 8,
            ok: false,
            error_code: Some("TOOL_FAILED".into()),
            agent: None,
            sensitive: None,
        }
    }

    #[test]
    fn a_call_naming_a_sensitive_path_says_which_and_others_have_no_sensitive_field() {
        let plain: Value = serde_json::from_str(&line(&call("s1"), 1)).unwrap();
        assert!(plain.get("sensitive").is_none());
        let named = Call {
            sensitive: Some("~/.ssh".into()),
            ..call("s1")
        };
        let v: Value = serde_json::from_str(&line(&named, 1)).unwrap();
        assert_eq!(v["sensitive"], "~/.ssh");
    }

    #[test]
    fn a_delegates_call_names_the_delegate_and_others_have_no_agent_field() {
        let own: Value = serde_json::from_str(&line(&call("s1"), 1)).unwrap();
        assert!(own.get("agent").is_none());
        let mut c = call("s1");
        c.agent = Some("reviewer".into());
        let l: Value = serde_json::from_str(&line(&c, 1)).unwrap();
        assert_eq!(l["agent"], "reviewer");
    }

    #[test]
    fn line_fields_in_the_spec_order() {
        let l: Value = serde_json::from_str(&line(&call("s1"), 1_700_000_000_000)).unwrap();
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "ts",
                "sessionId",
                "turn",
                "toolCallId",
                "traceId",
                "tool",
                "argsHash",
                "argsPreview",
                "external",
                "decision",
                "prompted",
                "permissionWaitMs",
                "durationMs",
                "overheadMs",
                "totalMs",
                "ok",
                "errorCode"
            ]
        );
        let preview = l["argsPreview"].as_str().unwrap();
        assert_eq!(preview.chars().count(), PREVIEW_CHARS + 1);
        assert!(preview.ends_with('…'));
        assert!(!line(&call("s1"), 0).contains("sk-abcdefghijkl"));
        assert!(l["argsHash"].as_str().unwrap().starts_with("sha256:"));
        assert_eq!(l["traceId"], "pct-0123456789abcdef");
    }

    #[test]
    fn trace_ids_are_checked_at_their_bounds() {
        let tmp = std::env::temp_dir().join(format!("pct-audit-trace-{}", uuid::Uuid::new_v4()));
        for ok in ["a", "pct-0123456789abcdef", &"x".repeat(MAX_TRACE_ID)] {
            assert_eq!(check_trace_id(ok), Ok(()), "{ok}");
        }
        for bad in ["", &"x".repeat(MAX_TRACE_ID + 1), "a b", "a\nb", "é", "a/b"] {
            let mut c = call("s-t");
            c.trace_id = Some(bad.to_string());
            assert_eq!(append(&tmp, &c, 1).unwrap_err().code, INVALID_ARGUMENT, "{bad:?}");
        }
        // nothing was written for the refused ones
        assert!(!tmp.join("pi-codex-toolkit/audit/s-t.jsonl").exists());
        let mut c = call("s-t");
        c.trace_id = None;
        let p = append(&tmp, &c, 1).unwrap();
        let l: Value = serde_json::from_str(std::fs::read_to_string(&p).unwrap().trim()).unwrap();
        assert_eq!(l["traceId"], Value::Null);
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn append_creates_0700_and_0600_and_refuses_odd_ids() {
        let tmp = std::env::temp_dir().join(format!("pct-audit-{}", uuid::Uuid::new_v4()));
        let p = append(&tmp, &call("s-1"), 1).unwrap();
        append(&tmp, &call("s-1"), 1).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&p), 0o600);
            assert_eq!(mode(p.parent().unwrap()), 0o700);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
            append(&tmp, &call("s-1"), 1).unwrap();
            assert_eq!(mode(&p), 0o600, "an existing wider file is narrowed");
        }
        // A hard-linked log is refused and its target left as it was; so is a symlinked audit folder.
        let target = tmp.join("target.txt");
        std::fs::write(&target, "mine").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
            std::fs::hard_link(&target, p.with_file_name("linked.jsonl")).unwrap();
            let err = append(&tmp, &call("linked"), 1).unwrap_err();
            assert!(err.message.contains("EMLINK"), "{}", err.message);
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
            assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o644);
            let fifo = std::ffi::CString::new(p.with_file_name("fifo.jsonl").to_str().unwrap()).unwrap();
            // SAFETY: `fifo` is a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            // (A blocking open of the FIFO would hang here: the test runner's timeout reports it.)
            assert!(append(&tmp, &call("fifo"), 1).is_err());
            let other = tmp.join("other");
            std::fs::create_dir_all(&other).unwrap();
            let audit = p.parent().unwrap();
            std::fs::rename(audit, tmp.join("audit-old")).unwrap();
            std::os::unix::fs::symlink(&other, audit).unwrap();
            let err = append(&tmp, &call("s-2"), 1).unwrap_err();
            assert!(err.message.contains("ELOOP"), "{}", err.message);
            assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
        }
        for bad in ["", "../x", "a/b", ".hidden"] {
            assert_eq!(append(&tmp, &call(bad), 0).unwrap_err().code, INVALID_ARGUMENT);
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn turns_of_one_log_go_in_the_order_taken_and_other_logs_do_not_wait() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let order = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let dir = format!("turns-{}", uuid::Uuid::new_v4());
        // The first turn is held: the later ones of its log must wait, another log's must not.
        let mut first = Turn::take(&dir, "a");
        let mut handles = Vec::new();
        for i in 1..=20u32 {
            let mut t = Turn::take(&dir, "a");
            let order = order.clone();
            handles.push(rt.spawn(async move {
                t.wait().await;
                // Jitter so a turn that did not wait would overtake.
                tokio::time::sleep(std::time::Duration::from_millis(u64::from(20 - i) % 3)).await;
                order.lock().push(i);
                drop(t);
            }));
        }
        let mut other = Turn::take(&dir, "b");
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), other.wait())
                .await
                .expect("another log's turn does not wait for a held one");
            first.wait().await;
            // Not synchronisation: a window in which a turn that did not wait would append (the right behaviour
            // shows nothing to wait for).
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        });
        assert!(order.lock().is_empty(), "nothing passed the held first turn");
        drop(first);
        drop(other);
        rt.block_on(async {
            for h in handles {
                h.await.unwrap();
            }
        });
        assert_eq!(*order.lock(), (1..=20).collect::<Vec<_>>());
        let key = format!("{dir}\0a");
        assert!(!tails().contains_key(&key), "the last turn removes its log's entry");
        // A turn taken after the queue drained does not wait.
        let mut again = Turn::take(&dir, "a");
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), again.wait())
                .await
                .unwrap()
        });
    }
}
