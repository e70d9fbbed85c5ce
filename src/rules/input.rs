//! The plain data the TypeScript core hands to the decision functions.
//!
//! Why plain data: every decision (which tools are active, what status says, what `find_tools` answers) is a
//! pure function of this snapshot, so it is tested in Rust without Pi and the TypeScript side only gathers it
//! (`pi.getAllTools()`, `pi.getActiveTools()`, `ctx.model`, the effective config) and applies the result.

use serde::{Deserialize, Serialize};

/// The current model as Pi reports it (`ctx.model`); every field may be missing.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The model's input kinds (`["text", "image"]`); missing = not known (Computer Use needs `image`). Read, never
    /// written back: the diagnostics record's `model` keeps its three fields (docs/rules.md).
    #[serde(default, skip_serializing)]
    pub input: Option<Vec<String>>,
}

/// One entry of `pi.getAllTools()` (the winning registration of a name), reduced to what decisions need.
/// `source` is `"builtin"` for Pi's builtins, otherwise the registering extension's path (`sourceInfo.path`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub source: String,
}

/// A config read failure to show in status (`Config error: <code> (<detail>)`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ConfigError {
    pub code: String,
    #[serde(default)]
    pub detail: Option<String>,
}

/// The packaged toolkit identity put into diagnostics records (also the binding's `ToolkitId` interface).
#[napi_derive::napi(object, object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ToolkitId {
    pub name: String,
    pub version: String,
}

impl Default for ToolkitId {
    fn default() -> Self {
        ToolkitId {
            name: "pi-codex-toolkit".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// One config section as the decisions read it (the fields of all sections, each optional).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Section {
    pub enabled: bool,
    pub backend: Option<String>,
    pub approval_mode: Option<String>,
    /// `hostTools.permissionMode`.
    pub permission_mode: Option<String>,
    /// `permissions.mode` (docs/permissions.md); null or absent = `hostTools.permissionMode` decides.
    pub mode: Option<String>,
    pub sidecar_model: Option<SidecarModel>,
    pub deferred: Option<Vec<String>>,
    /// `interactiveTools.askTool` / `.todoWrite` / `.newContext`: each interactive tool's own switch (default on).
    pub ask_tool: Option<bool>,
    pub todo_write: Option<bool>,
    pub new_context: Option<bool>,
    /// `permissions.planSafeTools`: other extensions' tools Plan mode keeps visible (docs/permissions.md).
    pub plan_safe_tools: Option<Vec<String>>,
}

impl Section {
    /// Whether an interactive tool's own switch is on (missing = on; the section's `enabled` decides first).
    pub fn tool_switch(&self, name: &str) -> bool {
        match name {
            crate::interactive::ASKTOOL => self.ask_tool,
            crate::interactive::TODO_WRITE => self.todo_write,
            _ => self.new_context,
        }
        .unwrap_or(true)
    }
}

/// `webSearch.sidecarModel`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SidecarModel {
    pub provider: String,
    pub model: String,
    pub thinking_level: Option<String>,
}

/// One execution rule.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RuleDef {
    pub id: String,
    #[serde(rename = "match")]
    pub pattern: String,
    pub patch: bool,
    pub shell: bool,
    pub code: bool,
}

/// The `execution` section.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Execution {
    pub rules: Vec<RuleDef>,
}

/// The effective configuration, typed. Why typed rather than a JSON value: a snapshot crosses the addon
/// boundary on every sync, and a typed view parses 50 rules without building a map per rule. Missing fields read
/// as the all-off defaults; unknown fields are ignored (the core passes the validated, effective config).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    pub web_search: Section,
    pub remote_compaction: Section,
    pub image_generation: Section,
    pub apply_patch: Section,
    pub computer_use: Section,
    pub shell_sessions: Section,
    pub code_mode: Section,
    pub tool_discovery: Section,
    pub host_tools: Section,
    pub interactive_tools: Section,
    /// `subagents` (docs/agents.md): registers the Task tool.
    pub subagents: Section,
    /// `permissions` (docs/permissions.md).
    pub permissions: Section,
    pub execution: Option<Execution>,
    pub debug: bool,
}

impl Config {
    /// The section of a config key (`webSearch`, `applyPatch`, ...).
    pub fn section(&self, key: &str) -> &Section {
        match key {
            "webSearch" => &self.web_search,
            "remoteCompaction" => &self.remote_compaction,
            "imageGeneration" => &self.image_generation,
            "applyPatch" => &self.apply_patch,
            "computerUse" => &self.computer_use,
            "shellSessions" => &self.shell_sessions,
            "codeMode" => &self.code_mode,
            "hostTools" => &self.host_tools,
            "interactiveTools" => &self.interactive_tools,
            _ => &self.tool_discovery,
        }
    }

    /// Builds the typed view from a JSON value (tests).
    #[cfg(test)]
    pub fn from_value(v: serde_json::Value) -> Result<Config, String> {
        serde_json::from_value(v).map_err(|e| format!("invalid-input: {e}"))
    }
}

/// Everything one decision needs. Only `config`, `tools` and `identity` matter for the projection itself; the
/// rest is session state (what is active now, what we hid, what find_tools loaded) or status decoration.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveInput {
    /// The effective configuration (validated, defaults filled; unknown keys ignored).
    #[serde(default)]
    pub config: Config,
    #[serde(default)]
    pub model: Option<ModelRef>,
    /// `pi.getAllTools()`: one entry per name, the winner.
    #[serde(default)]
    pub tools: Vec<ToolEntry>,
    /// This factory's source path (what our registrations report as `source`).
    #[serde(default)]
    pub identity: String,
    /// `pi.getActiveTools()` right now.
    #[serde(default)]
    pub active_now: Vec<String>,
    /// Builtins this extension hid on an earlier sync (only these may be restored).
    #[serde(default)]
    pub hidden_by_us: Vec<String>,
    /// Managed deferred names `find_tools` loaded in this session.
    #[serde(default)]
    pub loaded_deferred: Vec<String>,
    /// On-demand names (src/rules/names.rs `ON_DEMAND`) loaded for the current prompt: `find_tools` loads, plus the
    /// names rebuilt from the session's evidence when the prompt started (src/discovery/evidence.rs).
    #[serde(default)]
    pub loaded_on_demand: Vec<String>,
    /// Whether the session has a background task (a background Bash call succeeded, or another feature reports
    /// one): the Task tools then stop being on demand.
    #[serde(default)]
    pub background_tasks: bool,
    /// `process.platform` (Computer Use needs `darwin`).
    #[serde(default)]
    pub platform: Option<String>,
    /// The Computer Use prerequisite probe's reason (`computerUseProbe().reason`, src/computer/mod.rs): a missing
    /// bundled component or helper; missing = every prerequisite there.
    #[serde(default)]
    pub computer_use_probe: Option<String>,
    /// Whether Pi resolves a usable shell (`getShellConfig()`); `false` takes the shell pair down with
    /// `shell-unavailable`. Missing = available.
    #[serde(default)]
    pub shell_available: Option<bool>,
    /// Whether a dialog-capable UI exists (TUI or RPC): the nested apply_patch approval transport.
    #[serde(default)]
    pub has_ui: bool,
    /// Whether Shell or Code cleanup is still incomplete.
    #[serde(default)]
    pub cleanup_pending: bool,
    /// SHA-256 revision of the config file in force (null when none was read).
    #[serde(default)]
    pub config_revision: Option<String>,
    #[serde(default)]
    pub config_path: Option<String>,
    #[serde(default)]
    pub config_error: Option<ConfigError>,
    #[serde(default)]
    pub apply_error: Option<String>,
    #[serde(default)]
    pub toolkit: Option<ToolkitId>,
    /// Status lines a feature's glue adds under its block (feature key -> lines), e.g. the shell manager's job
    /// counts. They replace the engine's generic `note` line of that feature.
    #[serde(default)]
    pub extra_lines: std::collections::BTreeMap<String, Vec<String>>,
    /// Registry facts for the network features: current model route, sidecar executor, image fallbacks
    /// (src/net/plan.rs). Missing = nothing known (every network route then reads as unavailable).
    #[serde(default)]
    pub net: crate::net::plan::NetInput,
    /// The session's operation mode, `agent` or `plan` (docs/permissions.md "Plan mode"); missing = Agent, any
    /// other value = Plan (fail closed, as the permission state reads it).
    #[serde(default)]
    pub operation_mode: Option<String>,
    /// Names Plan mode took out of the active list on an earlier sync (only these are given back in Agent).
    #[serde(default)]
    pub plan_hidden_by_us: Vec<String>,
}

impl ResolveInput {
    /// Whether the session is in Plan mode.
    pub fn in_plan(&self) -> bool {
        self.operation_mode.as_deref().is_some_and(|m| m != "agent")
    }
}

/// The default managed deferred set (docs/spec/toolkit.md §1).
pub fn default_deferred() -> Vec<String> {
    let mut v = vec![super::names::GENERATE_IMAGE.to_string()];
    v.extend(super::names::COMPUTER_USE.iter().map(|s| s.to_string()));
    v
}

/// `toolDiscovery.deferred` of the effective config (default set when absent); non-deferrable names dropped.
pub fn cfg_deferred(config: &Config) -> Vec<String> {
    match &config.tool_discovery.deferred {
        Some(list) => {
            let mut out: Vec<String> = Vec::new();
            for s in list {
                if super::names::is_deferrable(s) && !out.iter().any(|o| o == s) {
                    out.push(s.clone());
                }
            }
            out
        }
        None => default_deferred(),
    }
}
