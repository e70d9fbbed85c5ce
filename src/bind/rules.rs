//! Execution rules, ownership, projection, status and discovery bindings: pure functions over one snapshot
//! (fields: src/rules/input.rs). Snapshots and results cross as JSON text: napi's object conversion walks every
//! property through N-API calls and cost ~10x more than JSON.stringify + serde_json for a 100-tool snapshot
//! (measured in bench/rules.mjs). The parsed shapes are typed on the TypeScript side (src/pi/rules.ts).
//! Malformed JSON text is a programmer error of the glue: it throws `Error { code: "invalid-input" }`.

use super::guard;
use crate::{discovery, rules};
use napi::Env;

fn rules_input(env: &Env, input_json: &str) -> napi::Result<rules::ResolveInput> {
    rules::parse_input_str(input_json).map_err(|e| invalid(env, &e))
}

fn parse(env: &Env, json: &str) -> napi::Result<serde_json::Value> {
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
#[napi(catch_unwind)]
pub fn rules_resolve(env: &Env, input_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.resolve", || {
        to_json(env, &rules::resolve(&rules_input(env, &input_json)?))
    })
}

/// The complete `/pct status` text for the snapshot (JSON text of a `RulesInput`).
#[napi(catch_unwind)]
pub fn rules_status_text(env: &Env, input_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.statusText", || {
        Ok(rules::status_text(&rules_input(env, &input_json)?))
    })
}

/// The rules editor's "Preview current model" text (the draft config goes in the snapshot's `config`).
#[napi(catch_unwind)]
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
#[napi(catch_unwind)]
pub fn rules_editor_rules(env: &Env, config_json: String) -> napi::Result<String> {
    guard::sync(env, "rules.editorRules", || {
        to_json(env, &rules::editor_rules(&parse(env, &config_json)?))
    })
}

/// The editor's rows `N. id  match  P+S+C` for a rules list (JSON text).
#[napi(catch_unwind)]
pub fn rules_editor_rows(env: &Env, rules_json: String) -> napi::Result<Vec<String>> {
    guard::sync(env, "rules.editorRows", || {
        Ok(rules::editor_rows(&parse(env, &rules_json)?))
    })
}

/// One edit of the `/pct config` rules editor: `index` 0-based, `value` the new id / pattern / flag name. Returns
/// JSON text of `{rules}` (the new list) or `{error}` with the message to show (the list is then unchanged).
#[napi(catch_unwind)]
pub fn rules_editor_apply(
    env: &Env,
    rules_json: String,
    #[napi(ts_arg_type = "'add' | 'delete' | 'up' | 'down' | 'id' | 'match' | 'toggle'")] action: String,
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
#[napi(catch_unwind)]
pub fn discovery_find_tools(env: &Env, input_json: String, request_json: String) -> napi::Result<String> {
    guard::sync(env, "discovery.findTools", || {
        let input = rules_input(env, &input_json)?;
        let req: discovery::FindRequest = serde_json::from_str(&request_json).unwrap_or_default();
        to_json(env, &discovery::find_tools(&input, &req))
    })
}
