//! The one decision every other output derives from: which rule applies, which routes are admitted, which
//! toolkit names are admitted / visible / nested / held back by discovery, the rule notes, and each feature's
//! status line (docs/spec/toolkit.md §2–§4, §8).
//!
//! Why a single pass: the projection, `/pct status`, the diagnostics record and `find_tools` must never
//! disagree, so they all read the same [`Decision`].

use super::glob::model_matches;
use super::input::{cfg_deferred, Config, ResolveInput};
use super::names::*;
use super::ownership::{Owner, Registry};
use crate::net::plan::{self, ImagePlan, SearchBackend, SearchConfig, SearchPlan};
use crate::net::route::RouteFacts;
use serde::Serialize;

/// Where the requested capabilities came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `execution` is present and a rule matched.
    Rules,
    /// No `execution` section: the legacy `enabled` flags (additive, never hide).
    Legacy,
    /// `execution` is present and no rule matched (nothing requested).
    Unmatched,
}

/// The capabilities a rule (or the legacy flags) asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Requested {
    pub patch: bool,
    pub shell: bool,
    pub code: bool,
}

/// The routes that took effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Routes {
    pub direct_patch: bool,
    pub nested_patch: bool,
    pub direct_shell: bool,
    pub code: bool,
}

/// `effective:` of a status line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effective {
    Active,
    Deferred,
    Unavailable,
    Off,
}

impl Effective {
    pub fn as_str(self) -> &'static str {
        match self {
            Effective::Active => "active",
            Effective::Deferred => "deferred",
            Effective::Unavailable => "unavailable",
            Effective::Off => "off",
        }
    }
}

/// One feature's status.
#[derive(Clone, Debug, Serialize)]
pub struct FeatureStatus {
    pub feature: &'static str,
    pub label: &'static str,
    pub configured: bool,
    pub effective: Effective,
    pub reason: String,
    /// Extra `key: value` lines shown under the feature (backend, transport, notes, counts).
    pub extra: Vec<(String, String)>,
}

/// The reason of a network or desktop feature that is turned off (never "not built": docs/net.md §Status).
pub const OFF_IN_CONFIG: &str = "off in config";

/// The matched rule.
#[derive(Clone, Debug, Serialize)]
pub struct MatchedRule {
    pub id: String,
    #[serde(rename = "match")]
    pub pattern: String,
}

/// Everything decided for one snapshot.
#[derive(Clone, Debug)]
pub struct Decision {
    pub source: Source,
    pub rule: Option<MatchedRule>,
    pub requested: Requested,
    pub routes: Routes,
    pub notes: Vec<&'static str>,
    /// Toolkit names that may execute (directly or nested), canonical order.
    pub admitted: Vec<&'static str>,
    /// Toolkit names visible now (direct minus held back).
    pub visible: Vec<&'static str>,
    /// Adapters callable inside code cells.
    pub nested: Vec<&'static str>,
    /// Direct names held back by Tool Discovery until `find_tools` loads them.
    pub held: Vec<&'static str>,
    /// Whether the find_tools loader is available (discovery enabled and `find_tools` ours).
    pub loader_available: bool,
    /// The managed deferred set from config.
    pub deferred_set: Vec<String>,
    /// The loads that stay in force (intersected with the managed set; empty when discovery is off).
    pub loaded: Vec<String>,
    /// The on-demand names `find_tools` manages now (host tools on: the `ON_DEMAND` table's host names).
    pub on_demand: Vec<&'static str>,
    /// The on-demand loads of this prompt that stay in force (on-demand names only; empty without the loader).
    pub loaded_on_demand: Vec<String>,
    /// Whether the route wants Pi's `bash` hidden, and `edit`/`write`.
    pub hide_bash: bool,
    pub hide_edit_write: bool,
    /// Builtins the host tools replace right now (read, grep, find, ls; edit and write with host Write/Edit).
    pub host_hidden: Vec<&'static str>,
    pub features: Vec<FeatureStatus>,
    /// Web Search's backend, executor and reason (src/net/plan.rs); backend `None` when off or unavailable.
    pub search: SearchPlan,
    /// Image Generation's route (None when off or unavailable).
    pub image: ImagePlan,
}

/// First matching rule for the model (no model, or no `execution` section, = nothing matches).
pub fn select_rule(
    config: &Config,
    provider: Option<&str>,
    model_id: Option<&str>,
) -> Option<(MatchedRule, Requested)> {
    let exec = config.execution.as_ref()?;
    let id = model_id?;
    exec.rules
        .iter()
        .find(|r| !r.pattern.is_empty() && model_matches(&r.pattern, provider, id))
        .map(|r| {
            (
                MatchedRule {
                    id: r.id.clone(),
                    pattern: r.pattern.clone(),
                },
                Requested {
                    patch: r.patch,
                    shell: r.shell,
                    code: r.code,
                },
            )
        })
}

/// Direct names of the effective routes: apply_patch, the shell pair, the code pair (the same in both sources).
fn admit_direct(r: &Routes, direct: &mut Vec<&'static str>, admitted: &mut Vec<&'static str>) {
    for (on, names) in [
        (r.direct_patch, &[APPLY_PATCH][..]),
        (r.direct_shell, &SHELL_PAIR[..]),
        (r.code, &CODE_PAIR[..]),
    ] {
        if on {
            push_unique(direct, names);
            push_unique(admitted, names);
        }
    }
}

fn push_unique(v: &mut Vec<&'static str>, names: &[&'static str]) {
    for n in names {
        if !v.contains(n) {
            v.push(n);
        }
    }
}

fn canonical(v: Vec<&'static str>) -> Vec<&'static str> {
    all_toolkit_names().filter(|n| v.contains(n)).collect()
}

/// Makes the decision for one snapshot.
pub fn decide(input: &ResolveInput) -> Decision {
    let cfg = &input.config;
    let reg = Registry::new(&input.tools, &input.identity);
    let model = input.model.clone().unwrap_or_default();
    let has_rules = cfg.execution.is_some();

    let patch_ours = reg.owner(APPLY_PATCH) == Owner::Ours;
    let shell_ours = reg.all_ours(&SHELL_PAIR) && input.shell_available != Some(false);
    let code_ours = reg.all_ours(&CODE_PAIR);

    let mut notes: Vec<&'static str> = Vec::new();
    let mut direct: Vec<&'static str> = Vec::new();
    let mut nested: Vec<&'static str> = Vec::new();
    let mut admitted: Vec<&'static str> = Vec::new();
    let (source, rule, requested, routes, hide_bash, hide_edit_write);

    if has_rules {
        let selected = select_rule(cfg, model.provider.as_deref(), model.id.as_deref());
        let req = selected.as_ref().map(|(_, r)| *r).unwrap_or_default();
        source = if selected.is_some() {
            Source::Rules
        } else {
            Source::Unmatched
        };
        rule = selected.map(|(m, _)| m);
        let code = req.code && code_ours && shell_ours;
        let r = Routes {
            direct_shell: req.shell && shell_ours,
            code,
            // Patch with Code lives inside cells only; Patch alone is the direct tool.
            nested_patch: req.patch && req.code && code && patch_ours,
            direct_patch: req.patch && !req.code && patch_ours,
        };
        // Notes: which requested route lacks an admitted owned tool.
        if req.patch && !req.code && !patch_ours {
            notes.push("patch-unavailable");
        }
        if req.patch && req.code && !r.code {
            notes.push("code-unavailable-did-not-promote-patch");
            notes.push("patch-unavailable-kept-native-editing");
        }
        if req.patch && req.code && r.code && !patch_ours {
            notes.push("patch-unavailable");
        }
        if req.shell && !shell_ours {
            notes.push("shell-pair-unavailable");
        }
        if req.code && !code_ours {
            notes.push("code-pair-unavailable");
        } else if req.code && !shell_ours {
            notes.push("code-shell-pair-unavailable");
        }
        admit_direct(&r, &mut direct, &mut admitted);
        if r.code {
            push_unique(&mut admitted, &SHELL_PAIR);
            push_unique(&mut nested, &SHELL_PAIR);
            if r.nested_patch {
                push_unique(&mut admitted, &[APPLY_PATCH]);
                push_unique(&mut nested, &[APPLY_PATCH]);
            }
        }
        hide_bash = r.direct_shell || r.code;
        hide_edit_write = r.direct_patch || r.nested_patch;
        requested = req;
        routes = r;
    } else {
        source = Source::Legacy;
        rule = None;
        let req = Requested {
            patch: cfg.apply_patch.enabled,
            shell: cfg.shell_sessions.enabled,
            code: cfg.code_mode.enabled,
        };
        let direct_patch = req.patch && patch_ours;
        let code = req.code && code_ours;
        let r = Routes {
            direct_patch,
            direct_shell: req.shell && shell_ours,
            code,
            nested_patch: code && direct_patch,
        };
        admit_direct(&r, &mut direct, &mut admitted);
        if r.code {
            if r.direct_shell {
                push_unique(&mut nested, &SHELL_PAIR);
            }
            if r.direct_patch {
                push_unique(&mut nested, &[APPLY_PATCH]);
            }
        }
        hide_bash = false;
        hide_edit_write = false;
        requested = req;
        routes = r;
    }

    // Network tools: the sidecar's openai_web_search and openai_generate_image, when their plan resolves.
    let (search, image) = net_plans(input, &reg);
    if search.backend == Some(SearchBackend::Sidecar) {
        push_unique(&mut direct, &[WEB_SEARCH]);
        push_unique(&mut admitted, &[WEB_SEARCH]);
    }
    if image.route.is_some() {
        push_unique(&mut direct, &[GENERATE_IMAGE]);
        push_unique(&mut admitted, &[GENERATE_IMAGE]);
    }

    // Computer Use (docs/computer.md): every prerequisite (computer_use_blocker), all six names ours or none.
    if cfg.computer_use.enabled
        && computer_use_blocker(input).is_none()
        && COMPUTER_USE.iter().all(|n| reg.owner(n) == Owner::Ours)
    {
        push_unique(&mut direct, &COMPUTER_USE);
        push_unique(&mut admitted, &COMPUTER_USE);
    }

    // Interactive tools (docs/interactive.md): each on with the section and its own switch, when ours.
    if cfg.interactive_tools.enabled {
        for n in INTERACTIVE {
            if cfg.interactive_tools.tool_switch(n) && reg.owner(n) == Owner::Ours {
                push_unique(&mut direct, &[n]);
                push_unique(&mut admitted, &[n]);
            }
        }
    }

    // Tool Discovery: find_tools itself, then which direct names it holds back.
    let discovery_on = cfg.tool_discovery.enabled;
    let find_ours = reg.owner(FIND_TOOLS) == Owner::Ours;
    let loader_available = discovery_on && find_ours;
    if loader_available {
        push_unique(&mut direct, &[FIND_TOOLS]);
        push_unique(&mut admitted, &[FIND_TOOLS]);
    }
    let deferred_set = cfg_deferred(cfg);
    let loaded: Vec<String> = if discovery_on {
        let mut l: Vec<String> = Vec::new();
        for n in &input.loaded_deferred {
            if deferred_set.contains(n) && !l.contains(n) {
                l.push(n.clone());
            }
        }
        l
    } else {
        Vec::new()
    };
    let mut held: Vec<&'static str> = Vec::new();
    if loader_available {
        for n in &direct {
            if deferred_set.iter().any(|d| d == n) && !loaded.iter().any(|l| l == n) {
                held.push(n);
            }
        }
    }
    let visible: Vec<&'static str> = direct.iter().copied().filter(|n| !held.contains(n)).collect();

    // Natives are hidden only while the replacing route is actually visible to the model.
    let shell_visible = SHELL_PAIR.iter().all(|n| visible.contains(n));
    let code_visible = CODE_PAIR.iter().all(|n| visible.contains(n));
    let hide_bash_now = hide_bash && ((routes.direct_shell && shell_visible) || (routes.code && code_visible));
    let hide_edit_write_now = hide_edit_write
        && ((routes.direct_patch && visible.contains(&APPLY_PATCH)) || (routes.nested_patch && code_visible));

    // Host tools (docs/spec/host-tools.md, top): not an execution route, the same under rules and legacy flags.
    // Read/Glob/Grep go together and replace Pi's read, grep, find and ls; Write/Edit are the edit/write family,
    // so a patch route that hides Pi's edit/write hides them too. Never in the `deferred` list.
    //
    // On demand (seed 000 §2.1, docs/rules.md "On-demand host tools"): with the find_tools loader available, the
    // names of the ON_DEMAND table are admitted but held back (listed in the on-demand catalog) until find_tools
    // loads them for the next turn, the Task tools only until a background task exists. Without the loader nothing
    // could load them, so they are simply active.
    let mut visible = visible;
    let mut host_hidden: Vec<&'static str> = Vec::new();
    let on_demand_names: Vec<&'static str> = if cfg.host_tools.enabled {
        ON_DEMAND.iter().map(|(n, _, _)| *n).collect()
    } else {
        Vec::new()
    };
    let loaded_on_demand: Vec<String> = if loader_available {
        let mut l: Vec<String> = Vec::new();
        for n in &input.loaded_on_demand {
            if on_demand_names.contains(&n.as_str()) && !l.contains(n) {
                l.push(n.clone());
            }
        }
        l
    } else {
        Vec::new()
    };
    let holds = |n: &str| {
        let pending = match on_demand(n) {
            // Plan keeps its read/inspection core in the first request (docs/rules.md "On-demand host tools").
            Some(OnDemand::Always) => !input.in_plan(),
            Some(OnDemand::UntilBackgroundTask) => !input.background_tasks,
            None => false,
        };
        loader_available && pending && !loaded_on_demand.iter().any(|l| l == n)
    };
    let mut show = |set: &[&'static str], visible: &mut Vec<&'static str>, held: &mut Vec<&'static str>| {
        push_unique(&mut admitted, set);
        for n in set {
            if holds(n) {
                push_unique(held, &[n]);
            } else {
                push_unique(visible, &[n]);
            }
        }
    };
    if cfg.host_tools.enabled && reg.all_ours(&HOST_READ_SET) {
        show(&HOST_READ_SET, &mut visible, &mut held);
        host_hidden.extend([READ, GREP, FIND, LS]);
        if reg.all_ours(&HOST_EDIT_SET) && !hide_edit_write_now {
            show(&HOST_EDIT_SET, &mut visible, &mut held);
            host_hidden.extend([EDIT, WRITE]);
        }
        if reg.all_ours(&HOST_BASH_SET) && !hide_bash_now {
            show(&HOST_BASH_SET, &mut visible, &mut held);
            host_hidden.push(BASH);
        }
    }
    // The plan tools: each admitted on its own, visible in its operation mode only (src/rules/plan_mode.rs).
    let (plan_admitted, plan_visible) = super::plan_mode::plan_tools(input, &reg);
    push_unique(&mut admitted, &plan_admitted);
    // EnterPlanMode is on demand like Glob and Grep (the `ON_DEMAND` table): the seed's first Agent request
    // carries only the four work tools.
    for n in plan_visible {
        if holds(n) {
            push_unique(&mut held, &[n]);
        } else {
            push_unique(&mut visible, &[n]);
        }
    }

    let mut d = Decision {
        source,
        rule,
        requested,
        routes,
        notes,
        admitted: canonical(admitted),
        visible: canonical(visible),
        nested: canonical(nested),
        held: canonical(held),
        loader_available,
        deferred_set,
        loaded,
        on_demand: on_demand_names,
        loaded_on_demand,
        hide_bash: hide_bash_now,
        hide_edit_write: hide_edit_write_now,
        host_hidden,
        features: Vec::new(),
        search,
        image,
    };
    d.features = Feature::ALL
        .iter()
        .map(|f| feature_status(*f, input, &reg, &d))
        .collect();
    d
}

/// The network plans for a snapshot; a feature that is off plans nothing.
fn net_plans(input: &ResolveInput, reg: &Registry) -> (SearchPlan, ImagePlan) {
    let cfg = &input.config;
    if !cfg.web_search.enabled && !cfg.image_generation.enabled {
        return (SearchPlan::default(), ImagePlan::default());
    }
    // Without registry facts the current model is known only by provider/id/api (no endpoint, no credential).
    let fallback;
    let net = match (&input.net.current, &input.model) {
        (None, Some(m)) => {
            fallback = plan::NetInput {
                current: Some(RouteFacts {
                    provider: m.provider.clone(),
                    id: m.id.clone(),
                    api: m.api.clone(),
                    ..Default::default()
                }),
                ..input.net.clone()
            };
            &fallback
        }
        _ => &input.net,
    };
    let search = if cfg.web_search.enabled {
        let sm = cfg.web_search.sidecar_model.as_ref();
        let sc = SearchConfig {
            backend: cfg.web_search.backend.as_deref().unwrap_or("auto"),
            sidecar: sm.map(|m| {
                (
                    m.provider.as_str(),
                    m.model.as_str(),
                    m.thinking_level.as_deref().unwrap_or("auto"),
                )
            }),
        };
        plan::search(net, &sc, reg.owner(WEB_SEARCH) == Owner::Ours)
    } else {
        SearchPlan::default()
    };
    let image = if cfg.image_generation.enabled {
        plan::image(net, reg.owner(GENERATE_IMAGE) == Owner::Ours)
    } else {
        ImagePlan::default()
    };
    (search, image)
}

/// Whether another extension registered a plain `web_search` tool (two search paths: a warning, never disabled).
fn third_party_web_search(input: &ResolveInput) -> bool {
    input
        .tools
        .iter()
        .any(|t| t.name == "web_search" && t.source != "builtin" && t.source != input.identity)
}

fn is_darwin(input: &ResolveInput) -> bool {
    input.platform.as_deref() == Some("darwin")
}

/// Why Computer Use cannot run in this session, in the seed's order (docs/computer.md "Prerequisites"): macOS, an
/// interactive UI (the approval dialog and the app's screen are the user's), a current model that takes images
/// (`get_app_state` answers screenshots), then the probe's bundled components and helper. None = every
/// prerequisite is there.
pub fn computer_use_blocker(input: &ResolveInput) -> Option<&'static str> {
    if !is_darwin(input) {
        return Some("unsupported-platform");
    }
    if !input.has_ui {
        return Some("no-interactive-ui");
    }
    match &input.model {
        None => return Some("current-model-missing"),
        Some(m) if m.input.as_ref().is_some_and(|i| !i.iter().any(|k| k == "image")) => {
            return Some("model-has-no-image-input")
        }
        Some(_) => {}
    }
    match input.computer_use_probe.as_deref() {
        None => None,
        Some("missing-computer-use-helper") => Some("missing-computer-use-helper"),
        Some("unsupported-platform") => Some("unsupported-platform"),
        Some(_) => Some("missing-chatgpt-desktop-component"),
    }
}

/// The status reason of a feature whose tool name another extension registered (docs/spec/toolkit.md §3).
pub const NAME_TAKEN: &str = "name-taken";

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

/// The status of one feature, derived from the decision.
fn feature_status(f: Feature, input: &ResolveInput, reg: &Registry, d: &Decision) -> FeatureStatus {
    let cfg = &input.config;
    let rules = d.source != Source::Legacy;
    let held_any = |names: &[&str]| names.iter().any(|n| d.held.contains(n));
    let mut st = FeatureStatus {
        feature: f.key(),
        label: f.label(),
        configured: false,
        effective: Effective::Off,
        reason: String::new(),
        extra: Vec::new(),
    };
    // A built network feature: off, active (or deferred while discovery holds its tool) or unavailable.
    let net_status = |st: &mut FeatureStatus, configured: bool, live: bool, names: &[&str], reason: Option<&str>| {
        st.configured = configured;
        (st.effective, st.reason) = match (configured, live) {
            (false, _) => (Effective::Off, OFF_IN_CONFIG.to_string()),
            (true, true) if held_any(names) => (Effective::Deferred, String::new()),
            (true, true) => (Effective::Active, String::new()),
            (true, false) => (Effective::Unavailable, reason.unwrap_or("").to_string()),
        };
    };
    match f {
        Feature::WebSearch => {
            let ws = &cfg.web_search;
            let p = &d.search;
            let names: &[&str] = match p.backend {
                Some(SearchBackend::Sidecar) => &[WEB_SEARCH],
                _ => &[],
            };
            net_status(&mut st, ws.enabled, p.backend.is_some(), names, p.reason);
            if st.reason == "conflicting-tool-name" {
                name_taken(&mut st, input, reg, &[WEB_SEARCH]);
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
                    "another extension's web_search tool is also active: two search paths (the toolkit does not turn it off)".into(),
                ));
            }
        }
        Feature::RemoteCompaction => {
            // Codex OAuth route only (docs/compaction.md); elsewhere Pi's own compaction runs.
            let route = crate::net::route::inspect(input.net.current.as_ref());
            let reason = match &route {
                Ok(r) if r.kind == crate::net::route::RouteKind::Codex => None,
                Ok(_) => Some("unsupported-provider"),
                Err(e) => Some(e.as_str()),
            };
            net_status(&mut st, cfg.remote_compaction.enabled, reason.is_none(), &[], reason);
            if cfg.remote_compaction.enabled {
                st.extra.push((
                    "fallback".into(),
                    "Pi's own compaction (custom instructions, other routes, any failure)".into(),
                ));
            }
        }
        Feature::ImageGeneration => {
            let ig = &cfg.image_generation;
            let p = &d.image;
            net_status(&mut st, ig.enabled, p.route.is_some(), &[GENERATE_IMAGE], p.reason);
            if st.reason == "conflicting-tool-name" {
                name_taken(&mut st, input, reg, &[GENERATE_IMAGE]);
            }
            let backend = p.route.as_ref().map(|r| r.kind.image_backend()).unwrap_or("—");
            st.extra.push(("backend".into(), backend.into()));
        }
        Feature::ComputerUse => {
            let (live, reason) = if let Some(blocked) = computer_use_blocker(input) {
                (false, Some(blocked))
            } else if COMPUTER_USE.iter().all(|n| reg.owner(n) == Owner::Ours) {
                (true, None)
            } else {
                (false, Some("not-registered"))
            };
            net_status(&mut st, cfg.computer_use.enabled, live, &COMPUTER_USE, reason);
            if cfg.computer_use.enabled && computer_use_blocker(input).is_none() && !live {
                name_taken(&mut st, input, reg, &COMPUTER_USE);
            }
            let transport = if live { "codex app-server --stdio" } else { "—" };
            st.extra.push(("transport".into(), transport.into()));
        }
        Feature::ApplyPatch => {
            st.configured = d.requested.patch;
            if !st.configured {
            } else if d.routes.direct_patch {
                st.effective = if held_any(&[APPLY_PATCH]) {
                    Effective::Deferred
                } else {
                    Effective::Active
                };
            } else if d.routes.nested_patch {
                st.effective = Effective::Active;
                st.extra
                    .push(("route".into(), "nested (inside code cells only)".into()));
            } else if !name_taken(&mut st, input, reg, &[APPLY_PATCH]) {
                st.effective = Effective::Unavailable;
                st.reason = if !rules {
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
        Feature::ShellSessions => {
            st.configured = d.requested.shell;
            if !st.configured {
            } else if d.routes.direct_shell {
                st.effective = if held_any(&SHELL_PAIR) {
                    Effective::Deferred
                } else {
                    Effective::Active
                };
            } else if !name_taken(&mut st, input, reg, &SHELL_PAIR) {
                st.effective = Effective::Unavailable;
                st.reason = if input.shell_available == Some(false) {
                    "shell-unavailable"
                } else if !rules {
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
        Feature::CodeMode => {
            st.configured = d.requested.code;
            if !st.configured {
            } else if d.routes.code {
                st.effective = if held_any(&CODE_PAIR) {
                    Effective::Deferred
                } else {
                    Effective::Active
                };
            } else if !name_taken(&mut st, input, reg, &CODE_PAIR) {
                st.effective = Effective::Unavailable;
                st.reason = if !rules {
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
        Feature::HostTools => {
            let ht = &cfg.host_tools;
            st.configured = ht.enabled;
            let on: Vec<&str> = HOST_NAMES.iter().copied().filter(|n| d.visible.contains(n)).collect();
            if !st.configured {
            } else if !on.is_empty() {
                st.effective = Effective::Active;
            } else if !name_taken(&mut st, input, reg, &HOST_READ_SET) {
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
                .push(("operation mode".into(), super::plan_mode::status_line(input)));
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
                if let (true, true, Some((name, owner))) =
                    (ht.enabled, reg.all_ours(&HOST_READ_SET), taken(input, reg, set))
                {
                    st.extra.push((
                        "note".into(),
                        format!("{what} off (name-taken: {name} is registered by {owner}); {stays}"),
                    ));
                }
            }
            if ht.enabled && d.hide_bash && reg.all_ours(&HOST_BASH_SET) {
                st.extra.push((
                    "note".into(),
                    "Bash and the Task tools step aside while the execution rule's shell or code route owns the shell"
                        .into(),
                ));
            }
        }
        Feature::InteractiveTools => {
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
        Feature::ToolDiscovery => {
            st.configured = cfg.tool_discovery.enabled;
            if st.configured {
                if d.loader_available {
                    st.effective = Effective::Active;
                } else if !name_taken(&mut st, input, reg, &[FIND_TOOLS]) {
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
    }
    st
}
