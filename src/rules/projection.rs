//! The projection: the exact list to hand to `pi.setActiveTools`, plus which builtins we hide or restore
//! (docs/spec/toolkit.md §3–§4 table).
//!
//! Why it works from the *current* active set: the user may have changed tools with Pi's `/tools` and other
//! extensions manage their own names; we only add/remove toolkit names we own and the builtins our route
//! replaces, and we only restore a builtin this extension hid.

use super::decide::{decide, Decision, FeatureStatus};
use super::diagnostics::{record, DiagnosticsRecord};
use super::input::ResolveInput;
use super::names::*;
use super::ownership::{Owner, Registry};
use serde::Serialize;
use std::collections::HashSet;

/// One feature's status as returned to TypeScript. It is also the binding's `FeatureView` interface in index.d.ts:
/// the JSON Rust writes and the type the glue reads are one definition.
#[napi_derive::napi(object, object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Serialize)]
pub struct FeatureView {
    pub configured: bool,
    #[napi(ts_type = "'active' | 'deferred' | 'unavailable' | 'off'")]
    pub effective: &'static str,
    pub reason: String,
}

/// What one sync should do, and what it decided. It is also the binding's `RulesDecision` interface in index.d.ts
/// (the JSON text `rulesResolve` returns; src/pi/rules.ts parses it), so the fields Rust serializes and the fields
/// the glue reads are one definition. Only the type crosses: the value crosses as JSON text (src/bind/rules.rs).
#[napi_derive::napi(object, js_name = "RulesDecision", object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Projection {
    /// The full list for `pi.setActiveTools`.
    pub active: Vec<String>,
    /// Whether `active` differs from `activeNow` (as a set); when false the call may be skipped.
    pub changed: bool,
    /// Builtins hidden by this extension after this sync (store it: the next sync's `hiddenByUs`).
    pub hidden_natives: Vec<String>,
    /// Builtins this sync gives back.
    pub restored_natives: Vec<String>,
    /// Names Plan mode keeps out of `active` that are not the toolkit's (store it: the next sync's
    /// `planHiddenByUs`; src/rules/plan_mode.rs).
    pub plan_hidden: Vec<String>,
    pub admitted_names: Vec<String>,
    pub visible_names: Vec<String>,
    pub nested_names: Vec<String>,
    /// Names held back by Tool Discovery until loaded.
    pub deferred_names: Vec<String>,
    /// The loads to keep for this session (empty when discovery is off: disabling forgets loads).
    pub loaded_deferred: Vec<String>,
    /// The on-demand loads to keep for this prompt (src/discovery/evidence.rs rebuilds them at the next one).
    pub loaded_on_demand: Vec<String>,
    /// The `# On-demand tools` catalog for the system prompt (src/discovery/catalog.rs); empty = none.
    pub on_demand_catalog: String,
    pub notes: Vec<String>,
    /// Feature key → status.
    #[napi(ts_type = "Record<string, FeatureView>")]
    pub features: serde_json::Map<String, serde_json::Value>,
    /// The record to emit on `pi-codex-toolkit.execution-diagnostics` once the sync is committed.
    pub diagnostics: DiagnosticsRecord,
    /// The network plans the tools and the payload hook follow (src/net/plan.rs).
    #[napi(ts_type = "NetPlan")]
    pub net: crate::net::plan::NetPlan,
}

fn feature_map(features: &[FeatureStatus]) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    for f in features {
        let v = FeatureView {
            configured: f.configured,
            effective: f.effective.as_str(),
            reason: f.reason.clone(),
        };
        m.insert(f.feature.to_string(), serde_json::to_value(v).unwrap_or_default());
    }
    m
}

/// Computes the active-tool list from a decision (separate so benches and status share `decide`).
pub fn project(input: &ResolveInput, d: &Decision) -> Projection {
    let reg = Registry::new(&input.tools, &input.identity);
    let ours = |n: &str| reg.owner(n) == Owner::Ours;
    let managed: Vec<&str> = all_toolkit_names().filter(|n| ours(n)).collect();

    // Builtins to hide now: the route replaces them and their winner is Pi's builtin.
    let mut wants_hidden: Vec<&str> = Vec::new();
    if d.hide_bash {
        wants_hidden.push(BASH);
    }
    if d.hide_edit_write {
        wants_hidden.push(EDIT);
        wants_hidden.push(WRITE);
    }
    for n in &d.host_hidden {
        if !wants_hidden.contains(n) {
            wants_hidden.push(n);
        }
    }
    wants_hidden.retain(|n| reg.owner(n) == Owner::Builtin);

    let now: HashSet<&str> = input.active_now.iter().map(String::as_str).collect();
    let was_hidden = |n: &str| input.hidden_by_us.iter().any(|h| h == n);
    let is_active = |n: &str| now.contains(n);
    let hidden_natives: Vec<String> = wants_hidden
        .iter()
        .filter(|n| is_active(n) || was_hidden(n))
        .map(|n| n.to_string())
        .collect();
    let restored_natives: Vec<String> = HIDEABLE_BUILTINS
        .iter()
        .filter(|n| was_hidden(n) && !wants_hidden.contains(n) && reg.owner(n) == Owner::Builtin)
        .map(|n| n.to_string())
        .collect();

    let mut active: Vec<String> = Vec::with_capacity(input.active_now.len() + 8);
    let mut seen: HashSet<&str> = HashSet::with_capacity(input.active_now.len() + 8);
    for a in &input.active_now {
        let name = a.as_str();
        if managed.contains(&name) && !d.visible.contains(&name) {
            continue;
        }
        if wants_hidden.contains(&name) {
            continue;
        }
        if seen.insert(name) {
            active.push(a.clone());
        }
    }
    for n in restored_natives
        .iter()
        .map(String::as_str)
        .chain(d.visible.iter().copied())
    {
        if seen.insert(n) {
            active.push(n.to_string());
        }
    }
    // Plan mode takes the edit family and undeclared extension tools away, and Agent gives them back.
    let plan_hidden = super::plan_mode::apply(input, &reg, &mut active, &wants_hidden);
    let changed = active.len() != now.len() || active.iter().any(|a| !now.contains(a.as_str()));

    let diagnostics = record(input, d, &hidden_natives);
    Projection {
        active,
        changed,
        hidden_natives,
        restored_natives,
        plan_hidden,
        admitted_names: d.admitted.iter().map(|s| s.to_string()).collect(),
        visible_names: d.visible.iter().map(|s| s.to_string()).collect(),
        nested_names: d.nested.iter().map(|s| s.to_string()).collect(),
        deferred_names: d.held.iter().map(|s| s.to_string()).collect(),
        loaded_deferred: d.loaded.clone(),
        loaded_on_demand: d.loaded_on_demand.clone(),
        on_demand_catalog: crate::discovery::catalog::catalog(d),
        notes: d.notes.iter().map(|s| s.to_string()).collect(),
        features: feature_map(&d.features),
        diagnostics,
        net: crate::net::plan::NetPlan {
            search: d.search.clone(),
            image: d.image.clone(),
        },
    }
}

/// The whole sync decision for one snapshot.
pub fn resolve(input: &ResolveInput) -> Projection {
    let d = decide(input);
    project(input, &d)
}
