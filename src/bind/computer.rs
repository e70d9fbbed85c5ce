//! Bindings of Computer Use (docs/computer.md): the probe, the argument and approval gate, and the app-server
//! client. Expected failures resolve `{ok: false, code, message}`. Every answer is one of the structs below, built
//! in Rust and serialised whole (so `null` stays `null`); their `#[napi(object)]` declarations are index.d.ts's
//! types (docs/napi.md "Typed shapes").

use super::guard;
use crate::computer::{self, client, CuError, Gate};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// `{ok: false, code, message}`: a refused or failed call.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Serialize)]
pub struct ComputerFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    /// A `CuCode` (src/computer/mod.rs), or the binding's contained panic.
    #[napi(
        ts_type = "'unsupported-platform' | 'missing-chatgpt-desktop-component' | 'missing-computer-use-helper' | 'app-server-start-failed' | 'timeout' | 'app-server-exited' | 'tool-error' | 'protocol-error' | 'invalid-app-target' | 'invalid-arguments' | 'unknown-tool' | 'approval-denied' | 'approval-unavailable' | 'internal-panic'"
    )]
    pub code: &'static str,
    pub message: String,
}

/// `{ok: true, ask}`: the call may run; `ask` is the app to confirm with the user first (then `approve(app)`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Serialize)]
pub struct ComputerAuthorized {
    #[napi(ts_type = "true")]
    pub ok: bool,
    #[napi(ts_type = "string | null")]
    pub ask: Option<String>,
}

/// `{ok: true, text, content, structuredContent}`: the tool's answer.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputerCallOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub text: String,
    /// The MCP result's content blocks as the app-server sent them (text and image blocks; open JSON).
    #[napi(ts_type = "unknown[]")]
    pub content: Value,
    /// The MCP result's `structuredContent` as sent (open JSON, `null` when absent).
    #[napi(ts_type = "unknown")]
    pub structured_content: Value,
}

/// The probe's answer: `reason` is `null` when available.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Serialize)]
pub struct ComputerProbe {
    pub available: bool,
    pub platform: String,
    #[napi(
        ts_type = "'unsupported-platform' | 'missing-chatgpt-desktop-component' | 'missing-computer-use-helper' | null"
    )]
    pub reason: Option<&'static str>,
}

/// A shape as the JS value it crosses as.
fn js(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn failed(e: CuError) -> Value {
    js(ComputerFailure {
        ok: false,
        code: e.code.as_str(),
        message: e.message,
    })
}

fn panicked(message: String) -> Value {
    js(ComputerFailure {
        ok: false,
        code: guard::PANIC_CODE,
        message,
    })
}

/// The platform the rules decision uses for Computer Use (the test seam's, else this OS as Node names it).
#[napi(catch_unwind)]
pub fn computer_use_platform(env: &napi::Env) -> napi::Result<String> {
    guard::sync(env, "computerUsePlatform", || Ok(computer::platform()))
}

/// The six Computer Use tool names, in registration order (`rules::names::COMPUTER_USE`): the glue registers
/// exactly these, so the rules, discovery and the registered tools share one list.
#[napi(catch_unwind)]
pub fn computer_use_tools(env: &napi::Env) -> napi::Result<Vec<String>> {
    guard::sync(env, "computerUseTools", || {
        Ok(crate::rules::names::COMPUTER_USE
            .iter()
            .map(|n| n.to_string())
            .collect())
    })
}

/// The probe's answer `{available, platform, reason}` (reason null when available).
fn probe_obj() -> Value {
    let p = computer::probe();
    js(ComputerProbe {
        available: p.reason.is_none(),
        platform: p.platform,
        reason: p.reason.map(|r| r.as_str()),
    })
}

/// The prerequisite probe (docs/computer.md "Prerequisites"; spawns nothing, a few `stat`s on macOS): what every
/// rules sync passes on, so status and activation agree with what a call would find.
#[napi(catch_unwind, ts_return_type = "ComputerProbe")]
pub fn computer_use_probe(env: &napi::Env) -> napi::Result<Value> {
    guard::sync(env, "computerUseProbe", || Ok(probe_obj()))
}

/// One Pi session's Computer Use state: approvals and at most one app-server child.
#[napi]
pub struct ComputerUse {
    session: std::sync::Arc<client::Session>,
    approvals: std::sync::Arc<computer::Approvals>,
}

#[napi]
impl ComputerUse {
    /// `options` (tests only): `{startTimeoutMs?, callTimeoutMs?}`.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        env: &napi::Env,
        #[napi(ts_arg_type = "{ startTimeoutMs?: number; callTimeoutMs?: number } | null")] options: Option<Value>,
    ) -> napi::Result<Self> {
        guard::sync(env, "computer.new", || {
            let mut limits = client::Limits::default();
            let ms = |k: &str| options.as_ref().and_then(|o| o[k].as_u64()).filter(|n| *n > 0);
            if let Some(n) = ms("startTimeoutMs") {
                limits.start = Duration::from_millis(n);
            }
            if let Some(n) = ms("callTimeoutMs") {
                limits.call = Duration::from_millis(n);
            }
            Ok(Self {
                session: std::sync::Arc::new(client::Session::new(limits)),
                approvals: Default::default(),
            })
        })
    }

    /// The prerequisite probe (spawns nothing): `{available, platform, reason}`.
    #[napi(catch_unwind, ts_return_type = "ComputerProbe")]
    pub fn probe(&self) -> Value {
        guard::sync_or("computer.probe", probe_obj, panicked)
    }

    /// Checks a call before it runs: availability, arguments, app target and approval. Answers `{ok: true, ask}`
    /// where `ask` is the app to confirm with the user (then `approve(app)`), or a failure.
    #[napi(catch_unwind, ts_return_type = "ComputerAuthorized | ComputerFailure")]
    pub fn authorize(
        &self,
        tool: String,
        #[napi(ts_arg_type = "Record<string, unknown>")] args: Value,
        #[napi(ts_arg_type = "'confirm' | 'always'")] mode: String,
        has_ui: bool,
    ) -> Value {
        guard::sync_or(
            "computer.authorize",
            || {
                let p = computer::probe();
                if let Some(r) = p.reason {
                    return failed(computer::unavailable_error(r));
                }
                let (_, _, app) = match computer::check_call(&tool, &args) {
                    Ok(v) => v,
                    Err(e) => return failed(e),
                };
                match self.approvals.gate(&mode, app.as_deref(), has_ui) {
                    Ok(Gate::Go) => js(ComputerAuthorized { ok: true, ask: None }),
                    Ok(Gate::Ask(a)) => js(ComputerAuthorized { ok: true, ask: Some(a) }),
                    Err(e) => failed(e),
                }
            },
            panicked,
        )
    }

    /// Records the user's approval of `app` for this session.
    #[napi(catch_unwind)]
    pub fn approve(&self, env: &napi::Env, app: String) -> napi::Result<()> {
        guard::sync(env, "computer.approve", || {
            self.approvals.approve(&app);
            Ok(())
        })
    }

    /// The refusal for a declined approval: `{ok: false, code: 'approval-denied', message}`.
    #[napi(catch_unwind, ts_return_type = "ComputerFailure")]
    pub fn denied(&self, app: String) -> Value {
        guard::sync_or("computer.denied", || failed(computer::denied(&app)), panicked)
    }

    /// Forgets every approval (session switch, reload).
    #[napi(catch_unwind)]
    pub fn reset_approvals(&self, env: &napi::Env) -> napi::Result<()> {
        guard::sync(env, "computer.resetApprovals", || {
            self.approvals.reset();
            Ok(())
        })
    }

    /// Runs one tool call (validated again here): `{ok: true, text, content, structuredContent}` or a failure.
    #[napi(catch_unwind, ts_return_type = "Promise<ComputerCallOk | ComputerFailure>")]
    pub async fn call(&self, tool: String, #[napi(ts_arg_type = "Record<string, unknown>")] args: Value) -> Value {
        let session = self.session.clone();
        let approvals = self.approvals.clone();
        guard::future_or(
            "computer.call",
            async move {
                let p = computer::probe();
                if let Some(r) = p.reason {
                    return failed(computer::unavailable_error(r));
                }
                let (short, fwd, _) = match computer::check_call(&tool, &args) {
                    Ok(v) => v,
                    Err(e) => return failed(e),
                };
                match session.call(&p, &short, fwd).await {
                    Ok(r) => {
                        let text = client::text_of(&r);
                        let structured = r.get("structuredContent").cloned().unwrap_or(Value::Null);
                        if short == "list_apps" {
                            // The name/bundle-id pairs make approvals canonical (docs/computer.md "Approvals").
                            approvals.learn(&text, &structured);
                        }
                        js(ComputerCallOk {
                            ok: true,
                            text,
                            content: r.get("content").cloned().unwrap_or_else(|| Value::Array(Vec::new())),
                            structured_content: structured,
                        })
                    }
                    Err(e) => failed(e),
                }
            },
            panicked,
        )
        .await
    }

    /// Stops the app-server child and its whole process group, if running.
    #[napi(catch_unwind)]
    pub async fn shutdown(&self) {
        let session = self.session.clone();
        guard::future_or("computer.shutdown", async move { session.shutdown().await }, |_| ()).await
    }

    /// The running app-server's pid, or null (tests).
    #[napi(catch_unwind)]
    pub async fn pid(&self) -> Option<u32> {
        let session = self.session.clone();
        guard::future_or("computer.pid", async move { session.pid().await }, |_| None).await
    }

    /// How many app-server children this instance started (0 off macOS).
    #[napi(catch_unwind)]
    pub fn spawned(&self) -> f64 {
        self.session.spawned() as f64
    }
}
