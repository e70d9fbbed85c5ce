//! Bindings of Task delegation (docs/agents.md): definition loading with each definition's resolved tools, the
//! delegate slots, the adoption of a background delegate into the session's task table (one id space with
//! background Bash), the watchdog registration that makes a delegate die with Node, and the answer cut. Logic is in
//! src/agents and src/host/bash/tasks.rs; constructions never throw, `failure()` answers the error result.

use super::guard;
use super::host::{failure, HostFailure, JsHostSession};
use crate::agents::{self, limits, Definition};
use crate::host::bash::tasks::Adopted;
use napi::Env;
use std::path::Path;
use std::sync::Mutex;

/// One definition with the tools its delegate gets.
#[napi(object)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The tools the delegate may call.
    pub tools: Vec<String>,
    /// Pi's `--tools` allowlist for the delegate: `tools` plus the rest of their toolkit groups.
    pub allowlist: Vec<String>,
    /// How `tools` was written: `default`, `*`, or the list joined with `, `.
    pub declared: String,
    pub model: Option<String>,
    #[napi(ts_type = "'inherit' | 'ask' | 'accept-edits' | 'auto'")]
    pub permission: String,
    #[napi(ts_type = "'user' | 'project'")]
    pub scope: String,
    pub path: String,
    /// The delegate's system prompt (the Markdown body).
    pub prompt: String,
    /// Tool names dropped while resolving, each with why.
    pub warnings: Vec<String>,
}

/// Every definition of a session and the warnings of reading them.
#[napi(object)]
pub struct AgentsLoaded {
    pub definitions: Vec<AgentDefinition>,
    pub warnings: Vec<String>,
}

fn shape(d: Definition, catalog: &[String]) -> AgentDefinition {
    let r = agents::resolve(&d.tools, catalog);
    let declared = match &d.tools {
        agents::ToolSpec::Default => "default".to_string(),
        agents::ToolSpec::All => "*".to_string(),
        agents::ToolSpec::List(v) => v.join(", "),
    };
    AgentDefinition {
        name: d.name,
        description: d.description,
        tools: r.tools,
        allowlist: r.allowlist,
        declared,
        model: d.model,
        permission: d.permission.as_str().to_string(),
        scope: d.scope.as_str().to_string(),
        path: d.path.display().to_string(),
        prompt: d.prompt,
        warnings: r.warnings,
    }
}

/// Reads `<agentDir>/agents/*.md` and `<projectDir>/.pi/agents/*.md` (again only when a folder changed:
/// src/agents/cache.rs) and resolves each definition's tools against
/// the parent's live `catalog` (active tools plus the deferred ones).
#[napi(catch_unwind)]
pub fn agents_load(
    env: &Env,
    agent_dir: String,
    project_dir: Option<String>,
    catalog: Vec<String>,
) -> napi::Result<AgentsLoaded> {
    guard::sync(env, "agentsLoad", || {
        let l = agents::load_cached(Path::new(&agent_dir), project_dir.as_deref().map(Path::new));
        Ok(AgentsLoaded {
            definitions: l.definitions.iter().cloned().map(|d| shape(d, &catalog)).collect(),
            warnings: l.warnings.clone(),
        })
    })
}

/// The bounds (docs/agents.md "Limits").
#[napi(object)]
pub struct AgentsLimits {
    pub per_session: u32,
    pub per_process: u32,
    pub max_answer_bytes: u32,
    pub default_timeout_seconds: u32,
    pub min_timeout_seconds: u32,
    pub max_timeout_seconds: u32,
}

#[napi(catch_unwind)]
pub fn agents_limits(env: &Env) -> napi::Result<AgentsLimits> {
    guard::sync(env, "agentsLimits", || {
        let caps = agents::Slots::global().caps();
        Ok(AgentsLimits {
            per_session: caps.0 as u32,
            per_process: caps.1 as u32,
            max_answer_bytes: limits::MAX_ANSWER_BYTES as u32,
            default_timeout_seconds: limits::DEFAULT_TIMEOUT_SECONDS,
            min_timeout_seconds: limits::TIMEOUT_SECONDS_RANGE.0,
            max_timeout_seconds: limits::TIMEOUT_SECONDS_RANGE.1,
        })
    })
}

/// A delegate's answer as the parent gets it.
#[napi(object)]
pub struct AgentAnswer {
    pub text: String,
    pub cut: bool,
}

/// Cuts a final answer to `maxBytes` (default: the cap) at a character boundary, with a note.
#[napi(catch_unwind)]
pub fn agents_cut_answer(env: &Env, text: String, max_bytes: Option<u32>) -> napi::Result<AgentAnswer> {
    guard::sync(env, "agentsCutAnswer", || {
        let (text, cut) = agents::cut_answer(&text, max_bytes.map_or(limits::MAX_ANSWER_BYTES, |m| m as usize));
        Ok(AgentAnswer { text, cut })
    })
}

/// Registers a delegate's process group with the watchdog: it is killed however Node ends (docs/shell.md "When
/// Node exits").
#[napi(catch_unwind)]
pub fn agents_guard_process(env: &Env, pgid: i32) -> napi::Result<()> {
    guard::sync(env, "agentsGuardProcess", || {
        crate::shell::watchdog::add_group(pgid);
        Ok(())
    })
}

/// The delegate's group is gone: the watchdog forgets it.
#[napi(catch_unwind)]
pub fn agents_release_process(env: &Env, pgid: i32) -> napi::Result<()> {
    guard::sync(env, "agentsReleaseProcess", || {
        crate::shell::watchdog::remove_group(pgid);
        Ok(())
    })
}

/// A delegate slot of one session, held until `release()` (or collection). A refused construction holds nothing
/// and `failure()` says which cap refused it (`AGENT_LIMIT`).
#[napi]
pub struct AgentSlot {
    slot: Mutex<Option<agents::limits::Slot>>,
    refused: Option<String>,
}

#[napi]
impl AgentSlot {
    #[napi(constructor)]
    pub fn new(session_id: String) -> Self {
        let slots = agents::Slots::global();
        match slots.acquire(&session_id) {
            Ok(s) => Self {
                slot: Mutex::new(Some(s)),
                refused: None,
            },
            Err(e) => Self {
                slot: Mutex::new(None),
                refused: Some(e.message(slots.caps())),
            },
        }
    }

    /// `null` when the slot is held, else `{ok: false, code: "AGENT_LIMIT", message}`.
    #[napi(ts_return_type = "HostFailure | null")]
    pub fn failure(&self) -> Option<HostFailure> {
        self.refused.as_ref().map(|m| HostFailure {
            ok: false,
            code: agents::SlotError::CODE.to_string(),
            message: m.clone(),
            suggestion: None,
        })
    }

    /// Gives the slot back (a second call does nothing).
    #[napi]
    pub fn release(&self) {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// A background delegate in the session's task table: TaskList shows it, TaskWait waits for it, TaskStop kills its
/// process group. The glue reports its end with `finish`.
#[napi]
pub struct AgentTask {
    adopted: Mutex<Option<Adopted>>,
    id: String,
    refused: Option<HostFailure>,
}

#[napi]
impl AgentTask {
    /// Adopts the process group `pgid` (the delegate's Pi, started detached) into `session`'s tasks; `command` is
    /// what TaskList shows.
    #[napi(constructor)]
    pub fn new(session: &JsHostSession, pgid: i32, command: String, description: Option<String>) -> Self {
        match session.inner.bash.adopt(pgid, command, description) {
            Ok((view, adopted)) => Self {
                adopted: Mutex::new(Some(adopted)),
                id: view.id,
                refused: None,
            },
            Err(e) => Self {
                adopted: Mutex::new(None),
                id: String::new(),
                refused: Some(failure(e)),
            },
        }
    }

    /// `null` when adopted, else the failure (HOST_OVERLOADED at a task cap, TOOL_FAILED for a closed session).
    #[napi(ts_return_type = "HostFailure | null")]
    pub fn failure(&self) -> Option<HostFailure> {
        self.refused.as_ref().map(|f| HostFailure {
            ok: false,
            code: f.code.clone(),
            message: f.message.clone(),
            suggestion: None,
        })
    }

    /// The `backgroundTaskId` ("" when refused).
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// Whether TaskStop or the end of the session asked the task to stop.
    #[napi]
    pub fn stop_requested(&self) -> bool {
        self.adopted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(Adopted::stop_requested)
    }

    /// Publishes the end (once; later calls do nothing): exit `code` 0 = completed, else failed or stopped.
    #[napi]
    pub fn finish(&self, code: i32, stdout: String, stderr: String) {
        if let Some(a) = self.adopted.lock().unwrap_or_else(|e| e.into_inner()).take() {
            a.finish(code, &stdout, &stderr);
        }
    }
}
