//! Per-name discovery state: `active`, `eligible` or `unavailable: <reason>`.
//!
//! Why separate: both the query (states of matches) and the load (what may be added) need the same answer,
//! and the group rules (Computer Use all-or-none, shell/code pairs checked jointly) build on it.

use crate::rules::decide::{Decision, Source};
use crate::rules::input::ResolveInput;
use crate::rules::names::*;
use crate::rules::ownership::{Owner, Registry};

/// One name's discovery state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Visible to the model now.
    Active,
    /// Configured and would be active, held back until loaded.
    Eligible,
    /// Not loadable, with a stable reason.
    Unavailable(String),
}

impl State {
    /// The text shown in query results.
    pub fn label(&self) -> String {
        match self {
            State::Active => "active".into(),
            State::Eligible => "eligible".into(),
            State::Unavailable(r) => format!("unavailable: {r}"),
        }
    }
}

/// Whether the feature of `name` is configured on (by the matched rule under execution rules).
fn configured(feature: Feature, input: &ResolveInput, d: &Decision) -> bool {
    let cfg = &input.config;
    match feature {
        Feature::ApplyPatch => d.requested.patch,
        Feature::ShellSessions => d.requested.shell || (d.source != Source::Legacy && d.requested.code),
        Feature::CodeMode => d.requested.code,
        other => cfg.section(other.key()).enabled,
    }
}

/// The discovery state of one toolkit name under decision `d`.
pub fn state_of(name: &str, input: &ResolveInput, reg: &Registry, d: &Decision) -> State {
    let Some(feature) = feature_of(name) else {
        return State::Unavailable("not-managed".into());
    };
    match reg.owner(name) {
        Owner::Foreign | Owner::Builtin => return State::Unavailable("conflicting-tool-name".into()),
        _ => {}
    }
    if !configured(feature, input, d) {
        return State::Unavailable("disabled".into());
    }
    // Computer Use's prerequisites (off macOS it is never registered, docs/computer.md): say which is missing, not
    // "not-registered" — the same check as status and activation.
    if feature == Feature::ComputerUse {
        if let Some(why) = crate::rules::decide::computer_use_blocker(input) {
            return State::Unavailable(why.into());
        }
    }
    if !feature.is_built() {
        return State::Unavailable("not-registered".into());
    }
    if reg.owner(name) == Owner::Missing {
        return State::Unavailable("not-registered".into());
    }
    if d.visible.contains(&name) {
        return State::Active;
    }
    // Native Web Search needs no tool: the hosted search rides in the model request (docs/net.md).
    if feature == Feature::WebSearch && d.search.backend == Some(crate::net::plan::SearchBackend::Native) {
        return State::Unavailable("native-backend-in-use".into());
    }
    if d.held.contains(&name) {
        return State::Eligible;
    }
    // Configured and ours, but the decision does not show it: report the feature's own reason.
    let status = d.features.iter().find(|f| f.feature == feature.key());
    match status {
        Some(s) if !s.reason.is_empty() => State::Unavailable(s.reason.clone()),
        _ => State::Unavailable("not-registered".into()),
    }
}
