//! Each feature's status line (effective state, reason code and extra lines), derived from the one [`Decision`]
//! (docs/spec/toolkit.md §2): the facts `/pct status` renders, computed once inside `decide`.
//!
//! One function per feature, all reading the same decision and registry through [`Ctx`]; they sit side by side in
//! this file so a reader can check that two features never disagree about a shared name.

use super::NAME_TAKEN;
use crate::net::plan::SearchBackend;
use crate::rules::decide::{computer_use_blocker, Decision, Effective, FeatureStatus, Source, OFF_IN_CONFIG};
use crate::rules::input::ResolveInput;
use crate::rules::names::*;
use crate::rules::ownership::{Owner, Registry};

/// The first name of `names` whose winning registration is not ours, with that winner's source.
fn taken<'a>(input: &'a ResolveInput, reg: &Registry, names: &[&'static str]) -> Option<(&'static str, &'a str)> {
    names.iter().copied().find(|n| reg.any_foreign(&[n])).map(|n| {
        let owner = input
            .tools
            .iter()
            .rev()
            .find(|t| t.name == n)
            .map(|t| t.source.as_str());
        (n, owner.unwrap_or("another extension"))
    })
}

/// Marks `st` unavailable with `name-taken`, naming the owner and the way out, when a name of `names` is taken.
fn name_taken(st: &mut FeatureStatus, input: &ResolveInput, reg: &Registry, names: &[&'static str]) -> bool {
    let Some((name, owner)) = taken(input, reg, names) else {
        return false;
    };
    st.effective = Effective::Unavailable;
    st.reason = NAME_TAKEN.into();
    st.extra.push(("taken".into(), taken_line(name, owner, st.label)));
    true
}

/// `<name> is registered by <owner>: …` — what the user can do about a taken name.
fn taken_line(name: &str, owner: &str, label: &str) -> String {
    format!(
        "{name} is registered by {owner}; the toolkit leaves it alone. To use {label}, remove or disable that extension (or its {name} tool) and run /reload; otherwise turn {label} off with /pct config"
    )
}

/// What every feature's status reads: the resolve input, the registry and the decision.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    input: &'a ResolveInput,
    reg: &'a Registry<'a>,
    d: &'a Decision,
    /// Whether execution rules decided (not the legacy feature switches).
    rules: bool,
}

impl Ctx<'_> {
    /// Whether discovery holds back any of `names`.
    fn held_any(&self, names: &[&str]) -> bool {
        names.iter().any(|n| self.d.held.contains(n))
    }

    /// A built network feature: off, active (or deferred while discovery holds its tool) or unavailable.
    fn net_status(&self, st: &mut FeatureStatus, configured: bool, live: bool, names: &[&str], reason: Option<&str>) {
        st.configured = configured;
        (st.effective, st.reason) = match (configured, live) {
            (false, _) => (Effective::Off, OFF_IN_CONFIG.to_string()),
            (true, true) if self.held_any(names) => (Effective::Deferred, String::new()),
            (true, true) => (Effective::Active, String::new()),
            (true, false) => (Effective::Unavailable, reason.unwrap_or("").to_string()),
        };
    }
}

/// The status of one feature, derived from the decision: each feature's rules are in its own function below.
pub(crate) fn feature_status(f: Feature, input: &ResolveInput, reg: &Registry, d: &Decision) -> FeatureStatus {
    let mut st = FeatureStatus {
        feature: f.key(),
        label: f.label(),
        configured: false,
        effective: Effective::Off,
        reason: String::new(),
        extra: Vec::new(),
    };
    let c = Ctx {
        input,
        reg,
        d,
        rules: d.source != Source::Legacy,
    };
    let status: fn(&mut FeatureStatus, &Ctx) = match f {
        Feature::WebSearch => web_search,
        Feature::RemoteCompaction => remote_compaction,
        Feature::ImageGeneration => image_generation,
        Feature::ComputerUse => computer_use,
        Feature::ApplyPatch => apply_patch,
        Feature::ShellSessions => shell_sessions,
        Feature::CodeMode => code_mode,
        Feature::HostTools => host_tools,
        Feature::InteractiveTools => interactive_tools,
        Feature::ToolDiscovery => tool_discovery,
    };
    status(&mut st, &c);
    st
}

/// Web Search: the backend plan (native hosted tool or the sidecar), the executor and its effort, and a second search path.
fn web_search(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    let cfg = &input.config;
    let ws = &cfg.web_search;
    let p = &d.search;
    let names: &[&str] = match p.backend {
        Some(SearchBackend::Sidecar) => &[WEB_SEARCH],
        _ => &[],
    };
    c.net_status(st, ws.enabled, p.backend.is_some(), names, p.reason);
    if st.reason == "conflicting-tool-name" {
        name_taken(st, input, reg, &[WEB_SEARCH]);
    }
    let backend = ws.backend.as_deref().unwrap_or("auto");
    let effective = match (ws.enabled, p.backend) {
        (false, _) => "off",
        (true, Some(b)) => b.as_str(),
        (true, None) => "unavailable",
    };
    // The executor shown is the configured one, or the current model the sidecar would fall back to.
    let executor = match (&ws.sidecar_model, &p.executor) {
        (Some(m), _) => Some((
            format!("{}/{}", m.provider, m.model),
            m.thinking_level.clone().unwrap_or_else(|| "auto".into()),
        )),
        (None, Some(e)) if ws.enabled => Some((
            format!("{}/{}", e.route.kind.provider(), e.route.model),
            e.effort.clone(),
        )),
        _ => None,
    };
    st.extra.push(("requested backend".into(), backend.into()));
    st.extra.push(("effective backend".into(), effective.into()));
    st.extra.push((
        "web search executor".into(),
        executor.as_ref().map(|e| e.0.clone()).unwrap_or_else(|| "—".into()),
    ));
    st.extra.push((
        "web search executor effort".into(),
        executor.map(|e| e.1).unwrap_or_else(|| "—".into()),
    ));
    match p.backend {
        Some(SearchBackend::Native) => st.extra.push((
            "note".into(),
            "native: the hosted web_search tool is added to the model request (a structural check; the server may still refuse it)".into(),
        )),
        Some(SearchBackend::Sidecar) => st.extra.push((
            "note".into(),
            "sidecar: each openai_web_search call is a separate, billed OpenAI request that sends only the query".into(),
        )),
        None => {}
    }
    if ws.enabled && third_party_web_search(input) {
        st.extra.push((
            "warning".into(),
            "another extension's web_search tool is also active: two search paths (the toolkit does not turn it off)"
                .into(),
        ));
    }
}

/// Remote Compaction: the Codex OAuth route only (docs/compaction.md); elsewhere Pi's own compaction runs.
fn remote_compaction(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, .. } = *c;
    let cfg = &input.config;
    // Codex OAuth route only (docs/compaction.md); elsewhere Pi's own compaction runs.
    let route = crate::net::route::inspect(input.net.current.as_ref());
    let reason = match &route {
        Ok(r) if r.kind == crate::net::route::RouteKind::Codex => None,
        Ok(_) => Some("unsupported-provider"),
        Err(e) => Some(e.as_str()),
    };
    c.net_status(st, cfg.remote_compaction.enabled, reason.is_none(), &[], reason);
    if cfg.remote_compaction.enabled {
        st.extra.push((
            "fallback".into(),
            "Pi's own compaction (custom instructions, other routes, any failure)".into(),
        ));
    }
}

/// Image Generation: the route's backend, or why there is none.
fn image_generation(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    let cfg = &input.config;
    let ig = &cfg.image_generation;
    let p = &d.image;
    c.net_status(st, ig.enabled, p.route.is_some(), &[GENERATE_IMAGE], p.reason);
    if st.reason == "conflicting-tool-name" {
        name_taken(st, input, reg, &[GENERATE_IMAGE]);
    }
    let backend = p.route.as_ref().map(|r| r.kind.image_backend()).unwrap_or("—");
    st.extra.push(("backend".into(), backend.into()));
}

/// Computer Use: the platform and app-server prerequisites, then every one of its names ours.
fn computer_use(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, .. } = *c;
    let cfg = &input.config;
    let (live, reason) = if let Some(blocked) = computer_use_blocker(input) {
        (false, Some(blocked))
    } else if COMPUTER_USE.iter().all(|n| reg.owner(n) == Owner::Ours) {
        (true, None)
    } else {
        (false, Some("not-registered"))
    };
    c.net_status(st, cfg.computer_use.enabled, live, &COMPUTER_USE, reason);
    if cfg.computer_use.enabled && computer_use_blocker(input).is_none() && !live {
        name_taken(st, input, reg, &COMPUTER_USE);
    }
    let transport = if live { "codex app-server --stdio" } else { "—" };
    st.extra.push(("transport".into(), transport.into()));
}

/// Apply Patch: the direct route, the nested route (inside code cells), or why neither.
fn apply_patch(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    st.configured = d.requested.patch;
    if !st.configured {
    } else if d.routes.direct_patch {
        st.effective = if c.held_any(&[APPLY_PATCH]) {
            Effective::Deferred
        } else {
            Effective::Active
        };
    } else if d.routes.nested_patch {
        st.effective = Effective::Active;
        st.extra
            .push(("route".into(), "nested (inside code cells only)".into()));
    } else if !name_taken(st, input, reg, &[APPLY_PATCH]) {
        st.effective = Effective::Unavailable;
        st.reason = if !c.rules {
            "conflicting-tool-name".into()
        } else {
            d.notes
                .iter()
                .find(|n| n.starts_with("patch") || n.starts_with("code-unavailable"))
                .copied()
                .unwrap_or("patch-unavailable")
                .into()
        };
    }
}

/// Shell Sessions: the direct exec_command/write_stdin pair, or why not.
fn shell_sessions(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    st.configured = d.requested.shell;
    if !st.configured {
    } else if d.routes.direct_shell {
        st.effective = if c.held_any(&SHELL_PAIR) {
            Effective::Deferred
        } else {
            Effective::Active
        };
    } else if !name_taken(st, input, reg, &SHELL_PAIR) {
        st.effective = Effective::Unavailable;
        st.reason = if input.shell_available == Some(false) {
            "shell-unavailable"
        } else if !c.rules {
            "conflicting-tool-name"
        } else {
            "shell-pair-unavailable"
        }
        .into();
    }
    st.extra.push((
        "note".into(),
        "pipes only (no TTY); a command starts exactly once and is never replayed".into(),
    ));
}

/// Code Mode: the exec/wait pair and its nested apply_patch approval.
fn code_mode(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    let cfg = &input.config;
    st.configured = d.requested.code;
    if !st.configured {
    } else if d.routes.code {
        st.effective = if c.held_any(&CODE_PAIR) {
            Effective::Deferred
        } else {
            Effective::Active
        };
    } else if !name_taken(st, input, reg, &CODE_PAIR) {
        st.effective = Effective::Unavailable;
        st.reason = if !c.rules {
            "conflicting-tool-name"
        } else if d.notes.contains(&"code-pair-unavailable") {
            "code-pair-unavailable"
        } else {
            "code-shell-pair-unavailable"
        }
        .into();
    }
    let approval = cfg.code_mode.approval_mode.as_deref().unwrap_or("confirm");
    st.extra.push(("nested apply_patch approval".into(), approval.into()));
    st.extra.push((
        "note".into(),
        "nested calls are dispatched by the cell: per-call tool hooks and third-party permission interceptors do not see them"
            .into(),
    ));
}

/// Host Tools: the tools shown, the permission mode, the builtins replaced and the routes they step aside for.
fn host_tools(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    let cfg = &input.config;
    let ht = &cfg.host_tools;
    st.configured = ht.enabled;
    let on: Vec<&str> = HOST_NAMES.iter().copied().filter(|n| d.visible.contains(n)).collect();
    if !st.configured {
    } else if !on.is_empty() {
        st.effective = Effective::Active;
    } else if !name_taken(st, input, reg, &HOST_READ_SET) {
        st.effective = Effective::Unavailable;
        st.reason = "host-tools-unavailable".into();
    }
    // permissions.mode wins; the older hostTools.permissionMode still works and the line says so.
    let mode = match (cfg.permissions.mode.as_deref(), ht.permission_mode.as_deref()) {
        (Some(m), _) => format!("{m} (permissions.mode, for every tool)"),
        (None, m) => format!(
            "{} (hostTools.permissionMode: the older key, still read; permissions.mode wins when set)",
            m.unwrap_or("ask")
        ),
    };
    st.extra.push(("permission mode".into(), mode));
    st.extra
        .push(("tools".into(), if on.is_empty() { "—".into() } else { on.join(", ") }));
    let waiting: Vec<&str> = HOST_NAMES.iter().copied().filter(|n| d.held.contains(n)).collect();
    if !waiting.is_empty() {
        st.extra.push((
            "on demand".into(),
            format!(
                "{} (in the on-demand catalog; find_tools loads them for the next turn)",
                waiting.join(", ")
            ),
        ));
    } else if ht.enabled && !on.is_empty() && !d.loader_available {
        st.extra.push((
            "note".into(),
            "Tool Discovery is off, so Glob, Grep and the Task tools are sent from the first request; turn it on to load them on demand".into(),
        ));
    }
    let hidden: Vec<&str> = d
        .host_hidden
        .iter()
        .copied()
        .filter(|n| reg.owner(n) == Owner::Builtin)
        .collect();
    st.extra.push((
        "builtins replaced".into(),
        if hidden.is_empty() {
            "none".into()
        } else {
            hidden.join(", ")
        },
    ));
    st.extra
        .push(("operation mode".into(), crate::rules::plan_mode::status_line(input)));
    if ht.enabled && d.hide_edit_write && reg.all_ours(&HOST_EDIT_SET) {
        st.extra.push((
            "note".into(),
            "Write and Edit step aside while the execution rule's patch route owns editing".into(),
        ));
    }
    for (set, what, stays) in [
        (&HOST_EDIT_SET[..], "Write and Edit are", "Pi's edit and write stay"),
        (&HOST_BASH_SET[..], "Bash and the Task tools are", "Pi's bash stays"),
    ] {
        if let (true, true, Some((name, owner))) = (ht.enabled, reg.all_ours(&HOST_READ_SET), taken(input, reg, set)) {
            st.extra.push((
                "note".into(),
                format!("{what} off (name-taken: {name} is registered by {owner}); {stays}"),
            ));
        }
    }
    if ht.enabled && d.hide_bash && reg.all_ours(&HOST_BASH_SET) {
        st.extra.push((
            "note".into(),
            "Bash and the Task tools step aside while the execution rule's shell or code route owns the shell".into(),
        ));
    }
}

/// Interactive tools: which are switched on and shown.
fn interactive_tools(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    let cfg = &input.config;
    let it = &cfg.interactive_tools;
    st.configured = it.enabled;
    let switched: Vec<&str> = INTERACTIVE.iter().copied().filter(|n| it.tool_switch(n)).collect();
    let on: Vec<&str> = INTERACTIVE.iter().copied().filter(|n| d.visible.contains(n)).collect();
    if !st.configured {
    } else if !on.is_empty() {
        st.effective = Effective::Active;
    } else {
        st.effective = Effective::Unavailable;
        st.reason = if switched.is_empty() {
            "every tool switched off"
        } else if reg.any_foreign(&switched) {
            "conflicting-tool-name"
        } else {
            "not-registered"
        }
        .into();
    }
    st.extra
        .push(("tools".into(), if on.is_empty() { "—".into() } else { on.join(", ") }));
    let off: Vec<&str> = INTERACTIVE.iter().copied().filter(|n| !it.tool_switch(n)).collect();
    if !off.is_empty() {
        st.extra.push(("switched off".into(), off.join(", ")));
    }
    st.extra
        .push(("plan mode".into(), "allowed (plan-safe: they change nothing)".into()));
}

/// Tool Discovery: find_tools and the managed deferred set.
fn tool_discovery(st: &mut FeatureStatus, c: &Ctx) {
    let Ctx { input, reg, d, .. } = *c;
    let cfg = &input.config;
    st.configured = cfg.tool_discovery.enabled;
    if st.configured {
        if d.loader_available {
            st.effective = Effective::Active;
        } else if !name_taken(st, input, reg, &[FIND_TOOLS]) {
            st.effective = Effective::Unavailable;
            st.reason = "conflicting-tool-name".into();
        }
    }
    let (managed, loaded) = if d.loader_available {
        (d.deferred_set.len(), d.loaded.len())
    } else {
        (0, 0)
    };
    st.extra.push(("managed deferred".into(), managed.to_string()));
    st.extra.push(("loaded this session".into(), loaded.to_string()));
    if d.loader_available && !d.on_demand.is_empty() {
        st.extra.push(("on-demand tools".into(), d.on_demand.len().to_string()));
        st.extra
            .push(("loaded this prompt".into(), d.loaded_on_demand.len().to_string()));
    }
    st.extra.push((
        "note".into(),
        "only explicitly managed toolkit-owned tools can be loaded".into(),
    ));
}

/// Whether another extension registered a plain `web_search` tool (two search paths: a warning, never disabled).
fn third_party_web_search(input: &ResolveInput) -> bool {
    input
        .tools
        .iter()
        .any(|t| t.name == "web_search" && t.source != "builtin" && t.source != input.identity)
}
