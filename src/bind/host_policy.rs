//! Permission and audit bindings (docs/permissions.md, docs/host.md "Audit"). Logic lives in
//! src/host/permission.rs and src/host/audit.rs; the Pi dialog that answers an `ask` is src/pi/tools/host.ts.

use super::guard;
use super::host::HostFailure;
use crate::host::audit;
use crate::host::permission::{self, Mode, OpMode, Permissions, Request, Risk, Verdict};
use napi::bindgen_prelude::{Either, PromiseRaw};
use napi::Env;
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;

/// One call for the permission decision.
#[napi(object)]
pub struct HostPermissionRequest {
    pub tool: String,
    /// The mode table's row (docs/permissions.md): `read` (Read, Glob, Grep, TaskList, TaskWait, the network
    /// tools), `edit` (Write, Edit, apply_patch), `bash` (Bash, TaskStop, exec_command, write_stdin with input) or
    /// `plugin` (MCP and other extensions' tools). Omitted: the row of the tool's name (`plugin` for a name the
    /// toolkit does not own).
    #[napi(ts_type = "'read' | 'edit' | 'bash' | 'plugin'")]
    pub risk: Option<String>,
    /// Some target is an external path request (resolvePath said `root: "external"`).
    pub external: bool,
    /// Every path the call writes is under the session scratch root.
    pub scratch: bool,
    /// `ctx.hasUI`: whether a card can be shown.
    pub has_ui: bool,
    /// A `plugin` tool listed in `permissions.planSafeTools`.
    pub plan_safe: Option<bool>,
    /// The sensitive path the call's command names (`sensitiveInCommand`): the call always shows a card and is
    /// refused with `SENSITIVE_PATH` without a UI (docs/permissions.md "Sensitive paths").
    pub sensitive: Option<String>,
}

/// The decision: run (`allow`), show the card (`ask`), or refuse (`deny`: TOOL_DENIED, or a
/// `*_DISABLED_IN_PLAN` hard denial of Plan mode).
#[napi(object)]
pub struct HostPermissionDecision {
    #[napi(ts_type = "'allow' | 'ask' | 'deny'")]
    pub action: String,
    /// The mode the decision was taken under (session override, else config, else ask).
    #[napi(ts_type = "'ask' | 'accept-edits' | 'auto'")]
    pub mode: String,
    /// The operation mode the decision was taken under.
    #[napi(ts_type = "'agent' | 'plan'")]
    pub op_mode: String,
    /// The row the call was decided on.
    #[napi(ts_type = "'read' | 'edit' | 'bash' | 'plugin'")]
    pub risk: String,
    /// Why it was allowed: `low-risk`, `scratch`, `mode` or `allow-session`.
    pub reason: Option<String>,
    /// `TOOL_DENIED`, `EDIT_DISABLED_IN_PLAN`, `PLUGIN_DISABLED_IN_PLAN` or `SENSITIVE_PATH` for `deny`.
    #[napi(ts_type = "'TOOL_DENIED' | 'EDIT_DISABLED_IN_PLAN' | 'PLUGIN_DISABLED_IN_PLAN' | 'SENSITIVE_PATH'")]
    pub code: Option<String>,
    /// The card's reason line for a `plugin` tool ("MCP server tool requires approval" for an MCP tool).
    pub card_reason: Option<String>,
    /// The model-facing message of `deny` (names the mode that would allow the call).
    pub message: Option<String>,
    /// The model-facing message to return when the user denies the card.
    pub denied_message: String,
}

fn mode_of(s: &str) -> Result<Mode, String> {
    Mode::parse(s)
        .ok_or_else(|| format!("invalid-input: permission mode must be one of ask, accept-edits, auto (got {s:?})"))
}

/// One Pi session's permission state: the `/pct permission` override and the allow-session set (memory only).
#[napi(js_name = "HostPermissions")]
pub struct JsHostPermissions {
    inner: Mutex<Permissions>,
}

impl Default for JsHostPermissions {
    fn default() -> Self {
        JsHostPermissions {
            inner: Mutex::new(Permissions::new()),
        }
    }
}

#[napi]
impl JsHostPermissions {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Permissions) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Decides one call under `configMode` (`permissions.mode`, else `hostTools.permissionMode`). Throws
    /// `invalid-input` for an unknown risk, and for a tool that takes no decision of this table (`exec`, the plan
    /// tools, Computer Use) when no risk is given.
    #[napi(catch_unwind)]
    pub fn decide(
        &self,
        env: &napi::Env,
        request: HostPermissionRequest,
        #[napi(ts_arg_type = "'ask' | 'accept-edits' | 'auto' | undefined | null")] config_mode: Option<String>,
    ) -> napi::Result<HostPermissionDecision> {
        guard::sync(env, "host.permissions.decide", || {
            let risk = match request.risk.as_deref() {
                Some(r) => Risk::parse(r),
                None => permission::risk_of(&request.tool, true),
            };
            let Some(risk) = risk else {
                return Err(guard::throw(
                    env,
                    "invalid-input",
                    "risk must be one of read, edit, bash, plugin (or a tool name that has a row)",
                ));
            };
            let req = Request {
                tool: &request.tool,
                risk,
                external: request.external,
                scratch: request.scratch,
                has_ui: request.has_ui,
                plan_safe: request.plan_safe.unwrap_or(false),
                sensitive: request.sensitive.as_deref(),
            };
            let d = self.with(|p| p.decide(&req, config_mode.as_deref()));
            let (action, reason, code, message) = match d.verdict {
                Verdict::Allow { reason } => ("allow", Some(reason.to_string()), None, None),
                Verdict::Ask => ("ask", None, None, None),
                Verdict::Deny { code, message } => ("deny", None, Some(code.as_str().to_string()), Some(message)),
            };
            Ok(HostPermissionDecision {
                action: action.into(),
                mode: d.mode.as_str().into(),
                op_mode: d.op_mode.as_str().into(),
                risk: risk.as_str().into(),
                reason,
                code,
                card_reason: (risk == Risk::Plugin).then(|| permission::plugin_reason(&request.tool).to_string()),
                message,
                denied_message: permission::user_denied_message(&request.tool),
            })
        })
    }

    /// The user chose "allow for this session" for `tool`.
    #[napi(catch_unwind)]
    pub fn allow_session(&self, env: &napi::Env, tool: String) -> napi::Result<()> {
        guard::sync(env, "host.permissions.allowSession", || {
            self.with(|p| p.allow_session(&tool));
            Ok(())
        })
    }

    /// Takes back the "allow for this session" grant of `tool`, or every grant without one (`/pct permission revoke`,
    /// docs/permissions.md); returns the tools whose grant was taken back, sorted.
    #[napi(catch_unwind)]
    pub fn revoke_session(&self, env: &napi::Env, tool: Option<String>) -> napi::Result<Vec<String>> {
        guard::sync(env, "host.permissions.revokeSession", || {
            Ok(self.with(|p| p.revoke_session(tool.as_deref())))
        })
    }

    /// Tools allowed for this session, sorted.
    #[napi(catch_unwind)]
    pub fn allowed_tools(&self, env: &napi::Env) -> napi::Result<Vec<String>> {
        guard::sync(env, "host.permissions.allowedTools", || Ok(self.with(|p| p.allowed())))
    }

    /// Sets (or with null clears) the session override; throws `invalid-input` for an unknown mode.
    #[napi(catch_unwind)]
    pub fn set_override(
        &self,
        env: &napi::Env,
        #[napi(ts_arg_type = "'ask' | 'accept-edits' | 'auto' | null")] mode: Option<String>,
    ) -> napi::Result<()> {
        guard::sync(env, "host.permissions.setOverride", || {
            let m = match mode.as_deref().map(mode_of).transpose() {
                Ok(m) => m,
                Err(e) => return Err(guard::throw(env, "invalid-input", &e)),
            };
            self.with(|p| p.set_override(m));
            Ok(())
        })
    }

    /// Sets the operation mode from its stored value: `agent` or `plan`; anything else (an unknown or damaged
    /// stored mode) is Plan, fail closed. Returns the mode now in force.
    #[napi(catch_unwind, ts_return_type = "'agent' | 'plan'")]
    pub fn set_operation_mode(&self, env: &napi::Env, stored: Option<String>) -> napi::Result<String> {
        guard::sync(env, "host.permissions.setOperationMode", || {
            let m = OpMode::parse_stored(stored.as_deref());
            self.with(|p| p.set_op_mode(m));
            Ok(m.as_str().to_string())
        })
    }

    /// The operation mode in force.
    #[napi(getter, catch_unwind, ts_return_type = "'agent' | 'plan'")]
    pub fn operation_mode(&self, env: &napi::Env) -> napi::Result<String> {
        guard::sync(env, "host.permissions.operationMode", || {
            Ok(self.with(|p| p.op_mode().as_str().to_string()))
        })
    }

    /// The session override, or null when the config decides.
    #[napi(getter, catch_unwind, ts_return_type = "'ask' | 'accept-edits' | 'auto' | null")]
    pub fn session_override(&self, env: &napi::Env) -> napi::Result<Option<String>> {
        guard::sync(env, "host.permissions.override", || {
            Ok(self.with(|p| p.session_override().map(|m| m.as_str().to_string())))
        })
    }
}

/// One audit line's facts (the arguments are redacted by the engine before anything is written).
#[napi(object)]
pub struct HostAuditEntry {
    pub session_id: String,
    pub turn: Option<String>,
    pub tool_call_id: String,
    /// The call's trace id (also in the tool result's details; docs/host.md "Trace ids").
    pub trace_id: Option<String>,
    pub tool: String,
    #[napi(ts_type = "Record<string, unknown>")]
    pub args: Value,
    #[napi(ts_type = "'dotdot-escape' | 'symlink-escape' | 'absolute-outside'")]
    pub external: Option<String>,
    #[napi(
        ts_type = "'allow' | 'allow-once' | 'allow-session' | 'deny' | 'denied-headless' | 'denied-plan' | 'denied-sensitive'"
    )]
    pub decision: String,
    pub prompted: bool,
    pub permission_wait_ms: f64,
    pub duration_ms: f64,
    pub overhead_ms: f64,
    pub total_ms: f64,
    pub ok: bool,
    /// The failed call's stable code: the engine's code of the tool (host, Bash, shell session, code cell, patch),
    /// the permission table's, or one of the glue's own (Plan tools, Task, an invocation policy's refusal).
    #[napi(
        ts_type = "HostFailure['code'] | HostEditFailure['code'] | HostBashFailed['code'] | NonNullable<HostPermissionDecision['code']> | ShellFailure['code'] | CodeFailure['code'] | NonNullable<PatchResult['code']> | NetFailure['code'] | 'policy-denied' | 'PLAN_TOOL_NOT_ALONE' | 'ALREADY_IN_PLAN_MODE' | 'NOT_IN_PLAN_MODE' | 'PLAN_APPROVAL_UNAVAILABLE' | 'PLAN_GOAL_ACTIVATION_DISABLED' | 'AGENT_NOT_FOUND' | 'AGENT_UNAVAILABLE' | 'AGENT_LIMIT' | 'AGENT_TIMEOUT' | 'AGENT_ABORTED' | 'AGENT_FAILED' | 'TASK_DISABLED_IN_PLAN' | 'AGENT_TOOL_NOT_DECLARED' | 'AGENT_STOPPED_IN_PLAN' | 'AGENT_WORKTREE_FAILED' | 'AGENT_MERGE_CONFLICT' | 'AGENT_MERGE_FAILED' | 'COMPUTER_DISABLED_IN_PLAN'"
    )]
    pub error_code: Option<String>,
    /// The Task delegate that made the call (docs/agents.md "Audit").
    pub agent: Option<String>,
    /// The sensitive path the call named (docs/permissions.md "Sensitive paths").
    pub sensitive: Option<String>,
}

/// The line was appended to `path`.
#[napi(object)]
pub struct HostAuditOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub path: String,
}

fn ms(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

/// Appends one line to `<agentDir>/pi-codex-toolkit/audit/<sessionId>.jsonl` (folder 0700, file 0600). Async: the
/// redaction, hashing and write run on the blocking pool, and the call takes its place in the session's log when it
/// is made, so the lines of one session land in call order (docs/host.md "Audit").
#[napi(catch_unwind, ts_return_type = "Promise<HostAuditOk | HostFailure>")]
pub fn host_audit_append<'env>(
    env: &'env Env,
    agent_dir: String,
    entry: HostAuditEntry,
) -> napi::Result<PromiseRaw<'env, Either<HostAuditOk, HostFailure>>> {
    let mut turn = audit::Turn::take(&agent_dir, &entry.session_id);
    env.spawn_future(async move {
        turn.wait().await;
        Ok(super::host::blocking("host.auditAppend", move || {
            // Held until the line is written (or the write failed or panicked): the next line of the log waits.
            let _turn = turn;
            let call = audit::Call {
                session_id: entry.session_id,
                turn: entry.turn,
                tool_call_id: entry.tool_call_id,
                trace_id: entry.trace_id,
                tool: entry.tool,
                args: entry.args,
                external: entry.external,
                decision: entry.decision,
                prompted: entry.prompted,
                permission_wait_ms: ms(entry.permission_wait_ms),
                duration_ms: ms(entry.duration_ms),
                overhead_ms: ms(entry.overhead_ms),
                total_ms: ms(entry.total_ms),
                ok: entry.ok,
                error_code: entry.error_code,
                agent: entry.agent,
                sensitive: entry.sensitive,
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            audit::append(Path::new(&agent_dir), &call, now).map(|p| HostAuditOk {
                ok: true,
                path: p.display().to_string(),
            })
        })
        .await)
    })
}

/// Every path an Edit call writes, as the model named them (the file, then the MV destination when the ops move
/// it), so the permission decision covers each before anything runs. Unreadable arguments give `[]` (the call
/// then fails on them and writes nothing).
#[napi(catch_unwind)]
pub fn host_edit_targets(#[napi(ts_arg_type = "Record<string, unknown>")] args: Value) -> Vec<String> {
    guard::sync_or(
        "host.editTargets",
        || crate::host::edit::write_targets(&args),
        |_| Vec::new(),
    )
}

/// The row of the permission table for a tool name (docs/permissions.md): `null` for a tool that decides for
/// itself (`exec`, `wait`, the plan tools, `find_tools`, Computer Use); `plugin` for a name the toolkit does not
/// own. `sendsInput`: a `write_stdin` that writes characters (command risk); without it a poll is low risk.
#[napi(catch_unwind, ts_return_type = "'read' | 'edit' | 'bash' | 'plugin' | null")]
pub fn permission_risk_of(tool: String, sends_input: Option<bool>) -> Option<String> {
    guard::sync_or(
        "host.permissionRiskOf",
        || permission::risk_of(&tool, sends_input.unwrap_or(true)).map(|r| r.as_str().to_string()),
        |_| Some("plugin".to_string()),
    )
}

/// Sets the configured sensitive paths (`permissions.sensitivePaths`) for the process: added to the seed list,
/// never replacing it (docs/permissions.md "Sensitive paths"). Invalid entries are dropped (the config refuses them).
#[napi(catch_unwind)]
pub fn sensitive_configure(extra: Vec<String>) {
    guard::sync_or(
        "host.sensitiveConfigure",
        || crate::host::sensitive::set_extra(extra),
        |_| (),
    )
}

/// The sensitive path a shell command names (`~/.ssh`, `<agent dir>/auth.json`, a configured entry), or null.
/// `cwd` resolves relative words; `agentDir` adds the agent dir's credential files.
#[napi(catch_unwind)]
pub fn sensitive_in_command(command: String, cwd: String, agent_dir: Option<String>) -> Option<String> {
    guard::sync_or(
        "host.sensitiveInCommand",
        || {
            let set = crate::host::sensitive::current(agent_dir.as_deref().map(Path::new));
            let home = crate::host::sensitive::home();
            set.named_in_command(&command, Path::new(&cwd), home.as_deref())
                .map(|e| e.shown.clone())
        },
        // The scan itself failed: treat the command as naming one (a card, never a silent allow).
        |_| Some("a path the toolkit could not check".to_string()),
    )
}

/// The sensitive path covering an absolute `path` (lexically, or through its symlinks), or null (apply_patch checks
/// every path it touches).
#[napi(catch_unwind)]
pub fn sensitive_path_of(path: String, agent_dir: Option<String>) -> Option<String> {
    guard::sync_or(
        "host.sensitivePathOf",
        || {
            let set = crate::host::sensitive::current(agent_dir.as_deref().map(Path::new));
            let lexical = crate::host::paths::lexical_normalize(Path::new(&path));
            let canonical = crate::host::paths::canonical_walk(&lexical).unwrap_or_else(|_| lexical.clone());
            set.covering(&lexical)
                .or_else(|| set.covering(&canonical))
                .map(|e| e.shown.clone())
        },
        |_| Some("a path the toolkit could not check".to_string()),
    )
}
