#![deny(clippy::all)]
//! Node bindings of the pi-codex-toolkit engine. This file only binds: each capability lives in its own folder.

#[macro_use]
extern crate napi_derive;

mod discovery;
mod rules;

/// The addon's version, so the TypeScript side can refuse a stale binary.
#[napi]
pub fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

// ---- rules ----
// Execution rules, ownership, projection, status and discovery: pure functions over JSON snapshots
// (see src/rules/input.rs for the snapshot's fields).

fn rules_input(input: serde_json::Value) -> napi::Result<rules::ResolveInput> {
    rules::parse_input(input).map_err(napi::Error::from_reason)
}

fn to_json<T: serde::Serialize>(v: &T) -> napi::Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| napi::Error::from_reason(e.to_string()))
}

/// One sync decision: the list for `pi.setActiveTools`, hidden/restored builtins, names, notes, feature
/// statuses and the diagnostics record.
#[napi(js_name = "rulesResolve")]
pub fn rules_resolve(input: serde_json::Value) -> napi::Result<serde_json::Value> {
    to_json(&rules::resolve(&rules_input(input)?))
}

/// The complete `/pct status` text for the snapshot.
#[napi(js_name = "rulesStatusText")]
pub fn rules_status_text(input: serde_json::Value) -> napi::Result<String> {
    Ok(rules::status_text(&rules_input(input)?))
}

/// The rules editor's "Preview current model" text (pass the draft config in `input.config`).
#[napi(js_name = "rulesPreviewText")]
pub fn rules_preview_text(input: serde_json::Value) -> napi::Result<String> {
    Ok(rules::preview_text(&rules_input(input)?))
}

/// Whether a rule pattern selects a model (`/` in the pattern selects `provider/modelId`).
#[napi(js_name = "rulesGlobMatch")]
pub fn rules_glob_match(pattern: String, provider: Option<String>, model_id: String) -> bool {
    rules::glob::model_matches(&pattern, provider.as_deref(), &model_id)
}

/// The rules the editor opens with: `execution.rules`, or the catch-all preview of the legacy flags.
#[napi(js_name = "rulesEditorRules")]
pub fn rules_editor_rules(config: serde_json::Value) -> serde_json::Value {
    rules::editor_rules(&config)
}

/// The editor's rows `N. id  match  P+S+C` for a rules list.
#[napi(js_name = "rulesEditorRows")]
pub fn rules_editor_rows(rules_list: serde_json::Value) -> Vec<String> {
    rules::editor_rows(&rules_list)
}

/// The `pi.events` channel the diagnostics record goes to.
#[napi(js_name = "rulesDiagnosticsChannel")]
pub fn rules_diagnostics_channel() -> String {
    rules::diagnostics::CHANNEL.to_string()
}

/// One `find_tools` call: `{error?, text, matches, loaded, alreadyActive, rejected, loadedDeferred}`.
#[napi(js_name = "discoveryFindTools")]
pub fn discovery_find_tools(input: serde_json::Value, request: serde_json::Value) -> napi::Result<serde_json::Value> {
    let input = rules_input(input)?;
    let req: discovery::FindRequest = serde_json::from_value(request).unwrap_or_default();
    to_json(&discovery::find_tools(&input, &req))
}
// ---- end rules ----

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_set() {
        assert!(!super::engine_version().is_empty());
    }
}
