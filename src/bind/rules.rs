//! Execution rules, ownership, projection, status and discovery bindings: pure functions over one snapshot
//! (fields: src/rules/input.rs). Snapshots and results cross as JSON text: napi's object conversion walks every
//! property through N-API calls and cost ~10x more than JSON.stringify + serde_json for a 100-tool snapshot
//! (measured in bench/rules.mjs). The text stays typed: each JSON-text argument and result is declared as
//! `string & { readonly __json: T }` naming the interface `T` of what it encodes (the type-only structs below,
//! mirroring src/rules/input.rs and src/discovery/find.rs; the decision's `RulesDecision` is src/rules/projection.rs's
//! `Projection` itself), so the glue's typed `JSON.stringify`/`JSON.parse` helpers (src/pi/rules.ts) are checked by
//! `tsc`. `__json` is a phantom brand, never present at runtime: it makes `tsc` refuse a plain string or the text of
//! another shape. Malformed JSON text is a programmer error of the glue: it throws `Error { code: "invalid-input" }`.

use super::guard;
use crate::{discovery, rules};
use napi::Env;
use serde_json::Value;

/// The snapshot every rules decision takes (src/rules/input.rs `ResolveInput`); missing fields read as defaults.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RulesInput {
    /// The effective configuration (`configEffective`; the editor preview puts its draft rules here).
    pub config: Option<super::config::EffectiveConfig>,
    #[napi(ts_type = "RulesModel | null")]
    pub model: Option<RulesModel>,
    /// `pi.getAllTools()` reduced: one entry per name, the winner.
    pub tools: Option<Vec<RulesTool>>,
    /// This factory's source path (what our registrations report as `source`).
    pub identity: Option<String>,
    /// `pi.getActiveTools()` right now.
    pub active_now: Option<Vec<String>>,
    /// Builtins this extension hid on an earlier sync.
    pub hidden_by_us: Option<Vec<String>>,
    /// Managed deferred names `find_tools` loaded in this session.
    pub loaded_deferred: Option<Vec<String>>,
    /// On-demand names loaded for the current prompt (find_tools loads and the evidence rebuilt at its start).
    pub loaded_on_demand: Option<Vec<String>>,
    /// Whether the session has a background task (the Task tools then stop being on demand).
    pub background_tasks: Option<bool>,
    /// `process.platform`.
    #[napi(ts_type = "string | null")]
    pub platform: Option<String>,
    /// The Computer Use probe's reason (`computerUseProbe().reason`); missing = every prerequisite there.
    #[napi(
        ts_type = "'unsupported-platform' | 'missing-chatgpt-desktop-component' | 'missing-computer-use-helper' | null"
    )]
    pub computer_use_probe: Option<String>,
    /// Whether Pi resolves a usable shell; missing = available.
    #[napi(ts_type = "boolean | null")]
    pub shell_available: Option<bool>,
    /// Whether a dialog-capable UI exists (the nested apply_patch approval transport).
    pub has_ui: Option<bool>,
    /// Whether Shell or Code cleanup is still incomplete.
    pub cleanup_pending: Option<bool>,
    #[napi(ts_type = "string | null")]
    pub config_revision: Option<String>,
    #[napi(ts_type = "string | null")]
    pub config_path: Option<String>,
    #[napi(ts_type = "RulesConfigError | null")]
    pub config_error: Option<RulesConfigError>,
    #[napi(ts_type = "string | null")]
    pub apply_error: Option<String>,
    #[napi(ts_type = "ToolkitId | null")]
    pub toolkit: Option<rules::input::ToolkitId>,
    /// Status lines a feature's glue adds under its block (feature key -> lines).
    #[napi(ts_type = "Record<string, string[]>")]
    pub extra_lines: Option<Value>,
    /// Registry facts of the network features (src/net/plan.rs `NetInput`; src/pi/net/facts.ts).
    pub net: Option<super::net::NetInput>,
    /// The session's operation mode (docs/permissions.md "Plan mode"); missing = Agent, anything else = Plan.
    #[napi(ts_type = "'agent' | 'plan' | null")]
    pub operation_mode: Option<String>,
    /// Names Plan mode took out of the active list on an earlier sync (`planHidden` of the last decision).
    pub plan_hidden_by_us: Option<Vec<String>>,
}

/// The current model as Pi reports it (`ctx.model`); every field may be missing.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RulesModel {
    pub provider: Option<String>,
    pub id: Option<String>,
    pub api: Option<String>,
    /// The model's input kinds (Pi's `model.input`, e.g. `["text", "image"]`).
    pub input: Option<Vec<String>>,
}

/// One `pi.getAllTools()` entry: `source` is `"builtin"` or the registering extension's path.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RulesTool {
    pub name: String,
    /// Sent only for our own tools, and only to `find_tools`.
    pub description: Option<String>,
    pub source: String,
}

/// A config read failure shown in status (`Config error: <code> (<detail>)`; codes: src/config/store.rs
/// `ReadCode`, docs/config.md "Reads").
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RulesConfigError {
    #[napi(ts_type = "'invalid-json' | 'invalid-config' | 'config-read-failed'")]
    pub code: String,
    pub detail: Option<String>,
}

/// One execution rule (the config schema admits exactly these fields).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ExecutionRule {
    pub id: String,
    #[napi(js_name = "match")]
    pub pattern: String,
    pub patch: bool,
    pub shell: bool,
    pub code: bool,
}

/// One `rulesEditorApply` answer: the new list, or the message to show (the list is then unchanged).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RulesEditResult {
    pub rules: Option<Vec<ExecutionRule>>,
    pub error: Option<String>,
}

/// One `find_tools` answer (src/discovery/find.rs `FindResult`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct FindToolsResult {
    /// Set when the call was refused; `text` then repeats the message.
    pub error: Option<FindToolsError>,
    pub text: String,
    #[napi(ts_type = "Array<{ name: string; summary: string; state: string }>")]
    pub matches: Value,
    pub loaded: Vec<String>,
    pub already_active: Vec<String>,
    #[napi(ts_type = "Array<{ name: string; reason: string }>")]
    pub rejected: Value,
    pub loaded_deferred: Vec<String>,
    pub loaded_on_demand: Vec<String>,
    /// What this call made (or found) available: the result's `details.addedToolNames` evidence.
    pub added_tool_names: Vec<String>,
}

/// A refused `find_tools` call (codes: src/discovery/find.rs `FindCode`, docs/rules.md "`find_tools` codes").
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct FindToolsError {
    #[napi(ts_type = "'invalid-arguments' | 'disabled'")]
    pub code: String,
    pub message: String,
}

fn rules_input(env: &Env, input_json: &str) -> napi::Result<rules::ResolveInput> {
    rules::parse_input_str(input_json).map_err(|e| invalid(env, &e))
}

fn parse(env: &Env, json: &str) -> napi::Result<Value> {
    serde_json::from_str(json).map_err(|e| invalid(env, &format!("invalid-input: {e}")))
}

/// Throws `invalid-input`; the message keeps its `invalid-input:` prefix (as before the code existed).
fn invalid(env: &Env, message: &str) -> napi::Error {
    guard::throw(env, guard::INVALID_INPUT, message)
}

fn to_json<T: serde::Serialize>(env: &Env, v: &T) -> napi::Result<String> {
    serde_json::to_string(v).map_err(|e| guard::throw(env, guard::PANIC_CODE, &e.to_string()))
}

/// One sync decision (JSON text of a `RulesInput` in, of a `RulesDecision` out; src/pi/rules.ts): the list for
/// `pi.setActiveTools`, hidden/restored builtins, names, notes, feature statuses and the diagnostics record.
#[napi(
    catch_unwind,
    ts_args_type = "inputJson: string & { readonly __json: RulesInput }",
    ts_return_type = "string & { readonly __json: RulesDecision }"
)]
pub fn rules_resolve(env: &Env, input_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.resolve", || {
        to_json(env, &rules::resolve(&rules_input(env, &input_json)?))
    })
}

/// The complete `/pct status` text for the snapshot (JSON text of a `RulesInput`).
#[napi(catch_unwind, ts_args_type = "inputJson: string & { readonly __json: RulesInput }")]
pub fn rules_status_text(env: &Env, input_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.statusText", || {
        Ok(rules::status_text(&rules_input(env, &input_json)?))
    })
}

/// The rules editor's "Preview current model" text (the draft config goes in the snapshot's `config`).
#[napi(catch_unwind, ts_args_type = "inputJson: string & { readonly __json: RulesInput }")]
pub fn rules_preview_text(env: &Env, input_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.previewText", || {
        Ok(rules::preview_text(&rules_input(env, &input_json)?))
    })
}

/// Whether a rule pattern selects a model (`/` in the pattern selects `provider/modelId`).
#[napi(catch_unwind)]
pub fn rules_glob_match(env: &Env, pattern: String, provider: Option<String>, model_id: String) -> napi::Result<bool> {
    guard::sync(env, "rules.globMatch", || {
        Ok(rules::glob::model_matches(&pattern, provider.as_deref(), &model_id))
    })
}

/// The rules the editor opens with (JSON text of a rules list): `execution.rules`, or the catch-all preview
/// of the legacy flags.
#[napi(
    catch_unwind,
    ts_args_type = "configJson: string & { readonly __json: Record<string, unknown> }",
    ts_return_type = "string & { readonly __json: ExecutionRule[] }"
)]
pub fn rules_editor_rules(env: &Env, config_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.editorRules", || {
        to_json(env, &rules::editor_rules(&parse(env, &config_json)?))
    })
}

/// The editor's rows `N. id  match  P+S+C` for a rules list (JSON text).
#[napi(
    catch_unwind,
    ts_args_type = "rulesJson: string & { readonly __json: ExecutionRule[] }"
)]
pub fn rules_editor_rows(env: &Env, rules_json: String) -> napi::Result<Vec<String>> {
    guard::sync(env, "rules.editorRows", || {
        Ok(rules::editor_rows(&parse(env, &rules_json)?))
    })
}

/// One edit of the `/pct config` rules editor: `index` 0-based, `value` the new id / pattern / flag name. Returns
/// JSON text of `{rules}` (the new list) or `{error}` with the message to show (the list is then unchanged).
#[napi(
    catch_unwind,
    ts_args_type = "rulesJson: string & { readonly __json: ExecutionRule[] }, action: 'add' | 'delete' | 'up' | 'down' | 'id' | 'match' | 'toggle', index?: number | undefined | null, value?: string | undefined | null",
    ts_return_type = "string & { readonly __json: RulesEditResult }"
)]
pub fn rules_editor_apply(
    env: &Env,
    rules_json: String,
    action: String,
    index: Option<u32>,
    value: Option<String>,
) -> napi::Result<String> {
    use rules::editor::{apply, Edit};
    guard::sync(env, "rules.editorApply", || {
        let list = parse(env, &rules_json)?;
        let i = index.unwrap_or(0) as usize;
        let v = value.as_deref().unwrap_or("");
        let edit = match action.as_str() {
            "add" => Edit::Add,
            "delete" => Edit::Delete(i),
            "up" => Edit::Move(i, -1),
            "down" => Edit::Move(i, 1),
            "id" => Edit::SetId(i, v),
            "match" => Edit::SetMatch(i, v),
            "toggle" => Edit::Toggle(i, v),
            other => return Err(invalid(env, &format!("invalid-input: unknown editor action {other:?}"))),
        };
        to_json(
            env,
            &match apply(&list, edit) {
                Ok(rules) => serde_json::json!({ "rules": rules }),
                Err(error) => serde_json::json!({ "error": error }),
            },
        )
    })
}

/// The `pi.events` channel the diagnostics record goes to.
#[napi(catch_unwind)]
pub fn rules_diagnostics_channel(env: &Env) -> napi::Result<String> {
    guard::sync(env, "rules.diagnosticsChannel", || {
        Ok(rules::diagnostics::CHANNEL.to_string())
    })
}

/// One `find_tools` call (snapshot JSON, request JSON) -> JSON `{error?, text, matches, loaded, alreadyActive,
/// rejected, loadedDeferred}`.
#[napi(
    catch_unwind,
    ts_args_type = "inputJson: string & { readonly __json: RulesInput }, requestJson: string & { readonly __json: Record<string, unknown> }",
    ts_return_type = "string & { readonly __json: FindToolsResult }"
)]
pub fn discovery_find_tools(env: &Env, input_json: String, request_json: String) -> napi::Result<String> {
    guard::sync(env, "discovery.findTools", || {
        let input = rules_input(env, &input_json)?;
        let req: discovery::FindRequest = serde_json::from_str(&request_json).unwrap_or_default();
        to_json(env, &discovery::find_tools(&input, &req))
    })
}

/// One tool result of the effective session context, reduced to what proves an on-demand load
/// (src/discovery/evidence.rs).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ToolResultEvidence {
    pub tool_name: String,
    pub is_error: bool,
    /// The result's `details.addedToolNames`.
    #[napi(ts_type = "unknown")]
    pub details_added_tool_names: Option<Value>,
    /// The result's `details.activated` (older records).
    #[napi(ts_type = "unknown")]
    pub details_activated: Option<Value>,
    /// The message's top-level `addedToolNames` (older records).
    #[napi(ts_type = "unknown")]
    pub added_tool_names: Option<Value>,
}

/// The on-demand names the session's evidence proves loaded (only names on demand under this snapshot's config):
/// what a new prompt, a resume or a compaction starts with.
#[napi(
    catch_unwind,
    ts_args_type = "inputJson: string & { readonly __json: RulesInput }, evidenceJson: string & { readonly __json: ToolResultEvidence[] }"
)]
pub fn discovery_evidence(env: &Env, input_json: String, evidence_json: String) -> napi::Result<Vec<String>> {
    guard::sync(env, "discovery.evidence", || {
        let input = rules_input(env, &input_json)?;
        let records: Vec<discovery::evidence::ToolResultEvidence> =
            serde_json::from_str(&evidence_json).map_err(|e| invalid(env, &format!("invalid-input: {e}")))?;
        let d = rules::decide::decide(&input);
        Ok(discovery::evidence::rebuild(&records, &d.on_demand))
    })
}

/// What [`rules_registration_plan`] answers (src/rules/registration.rs).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RegistrationPlan {
    /// Names to pass to `pi.registerTool` now.
    pub register: Vec<String>,
    /// Wanted names another extension owns (their feature reports `name-taken`).
    pub taken: Vec<RegistrationTaken>,
}

/// One wanted name that is already registered elsewhere.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RegistrationTaken {
    pub name: String,
    /// The winner's source path (or `builtin`).
    pub owner: String,
}

/// Which of the `offered` (declared, not yet registered) tool definitions to register for this snapshot:
/// only names of features the config turns on, never a name another extension owns.
#[napi(
    catch_unwind,
    ts_args_type = "inputJson: string & { readonly __json: RulesInput }, offered: Array<string>",
    ts_return_type = "string & { readonly __json: RegistrationPlan }"
)]
pub fn rules_registration_plan(env: &Env, input_json: String, offered: Vec<String>) -> napi::Result<String> {
    guard::sync(env, "rules.registrationPlan", || {
        to_json(
            env,
            &rules::registration::plan(&rules_input(env, &input_json)?, &offered),
        )
    })
}
