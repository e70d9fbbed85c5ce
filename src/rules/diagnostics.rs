//! The execution-diagnostics record (docs/spec/toolkit.md §4, `version: 1`).
//!
//! Why a fixed struct: the record goes on a shared event bus other extensions listen to, so it carries names,
//! flags and a revision only — never env, commands, patches or program text — and its shape must not drift.

use super::decide::{Decision, Requested, Routes, Source};
use super::input::{ModelRef, ResolveInput, ToolkitId};
use serde::Serialize;

/// The channel name on `pi.events`.
pub const CHANNEL: &str = "pi-codex-toolkit.execution-diagnostics";

/// One record, emitted after every committed sync (and on a rejected apply, with `cleanupPending: true`). It is also
/// the binding's `DiagnosticsRecord` interface in index.d.ts (inside `RulesDecision`): one definition of the shape.
#[napi_derive::napi(object, object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticsRecord {
    pub version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[napi(ts_type = "RulesModel")]
    pub model: Option<ModelRef>,
    #[napi(ts_type = "'rules' | 'legacy' | 'unmatched'")]
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
    #[napi(ts_type = "{ patch: boolean; shell: boolean; code: boolean }")]
    pub requested: Requested,
    #[napi(ts_type = "{ directPatch: boolean; nestedPatch: boolean; directShell: boolean; code: boolean }")]
    pub effective: Routes,
    pub admitted_names: Vec<String>,
    pub visible_names: Vec<String>,
    pub nested_names: Vec<String>,
    pub hidden_natives: Vec<String>,
    pub notes: Vec<String>,
    #[napi(ts_type = "'dialog' | 'unavailable'")]
    pub approval_transport: &'static str,
    pub cleanup_pending: bool,
    #[napi(ts_type = "string | null")]
    pub config_revision: Option<String>,
    pub toolkit: ToolkitId,
}

/// Builds the record for a decision.
pub fn record(input: &ResolveInput, d: &Decision, hidden_natives: &[String]) -> DiagnosticsRecord {
    DiagnosticsRecord {
        version: 1,
        model: input.model.clone().filter(|m| m.id.is_some() || m.provider.is_some()),
        source: d.source,
        rule_id: d.rule.as_ref().map(|r| r.id.clone()),
        requested: d.requested,
        effective: d.routes,
        admitted_names: d.admitted.iter().map(|s| s.to_string()).collect(),
        visible_names: d.visible.iter().map(|s| s.to_string()).collect(),
        nested_names: d.nested.iter().map(|s| s.to_string()).collect(),
        hidden_natives: hidden_natives.to_vec(),
        notes: d.notes.iter().map(|s| s.to_string()).collect(),
        approval_transport: if input.has_ui { "dialog" } else { "unavailable" },
        cleanup_pending: input.cleanup_pending,
        config_revision: input.config_revision.clone(),
        toolkit: input.toolkit.clone().unwrap_or_default(),
    }
}
