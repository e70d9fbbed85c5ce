//! The one decision every other output derives from: which rule applies, which routes are admitted, which
//! toolkit names are admitted / visible / nested / held back by discovery, the rule notes, and each feature's
//! status line (docs/spec/toolkit.md §2–§4, §8; the status lines themselves are built in `status::feature`).
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

/// Which route tools are ours to route (the shell pair also needs a usable shell).
#[derive(Clone, Copy)]
struct Owned {
    patch: bool,
    shell: bool,
    code: bool,
}

/// The execution routes of one snapshot and the names they admit, before the other features add theirs.
struct RoutePlan {
    source: Source,
    rule: Option<MatchedRule>,
    requested: Requested,
    routes: Routes,
    notes: Vec<&'static str>,
    direct: Vec<&'static str>,
    nested: Vec<&'static str>,
    admitted: Vec<&'static str>,
    /// Whether the route wants Pi's `bash` hidden, and `edit`/`write` (while the replacing route is visible).
    hide_bash: bool,
    hide_edit_write: bool,
}

/// Makes the decision for one snapshot, in named steps: the execution routes, the other features' tools, Tool
/// Discovery's holds, the host and plan tools, then each feature's status.
pub fn decide(input: &ResolveInput) -> Decision {
    let cfg = &input.config;
    let reg = Registry::new(&input.tools, &input.identity);
    let model = input.model.clone().unwrap_or_default();
    let owned = Owned {
        patch: reg.owner(APPLY_PATCH) == Owner::Ours,
        shell: reg.all_ours(&SHELL_PAIR) && input.shell_available != Some(false),
        code: reg.all_ours(&CODE_PAIR),
    };
    let mut plan = if cfg.execution.is_some() {
        rule_routes(cfg, model.provider.as_deref(), model.id.as_deref(), owned)
    } else {
        legacy_routes(cfg, owned)
    };
    let (search, image) = admit_features(input, &reg, &mut plan.direct, &mut plan.admitted);
    let discovery = discovery(input, &reg, &mut plan.direct, &mut plan.admitted);
    let mut held = discovery.held;
    let mut visible: Vec<&'static str> = plan.direct.iter().copied().filter(|n| !held.contains(n)).collect();

    // Natives are hidden only while the replacing route is actually visible to the model.
    let routes = plan.routes;
    let shell_visible = SHELL_PAIR.iter().all(|n| visible.contains(n));
    let code_visible = CODE_PAIR.iter().all(|n| visible.contains(n));
    let hide_bash_now = plan.hide_bash && ((routes.direct_shell && shell_visible) || (routes.code && code_visible));
    let hide_edit_write_now = plan.hide_edit_write
        && ((routes.direct_patch && visible.contains(&APPLY_PATCH)) || (routes.nested_patch && code_visible));

    let host = admit_host_and_plan_tools(
        input,
        &reg,
        discovery.loader_available,
        (hide_bash_now, hide_edit_write_now),
        &mut plan.admitted,
        &mut visible,
        &mut held,
    );

    let mut d = Decision {
        source: plan.source,
        rule: plan.rule,
        requested: plan.requested,
        routes,
        notes: plan.notes,
        admitted: canonical(plan.admitted),
        visible: canonical(visible),
        nested: canonical(plan.nested),
        held: canonical(held),
        loader_available: discovery.loader_available,
        deferred_set: discovery.deferred_set,
        loaded: discovery.loaded,
        on_demand: host.on_demand,
        loaded_on_demand: host.loaded_on_demand,
        hide_bash: hide_bash_now,
        hide_edit_write: hide_edit_write_now,
        host_hidden: host.hidden,
        features: Vec::new(),
        search,
        image,
    };
    d.features = Feature::ALL
        .iter()
        .map(|f| super::status::feature_status(*f, input, &reg, &d))
        .collect();
    d
}

/// Routes under execution rules: the first matching rule's request, each route where its tools are ours, and a
/// note for every requested route that lacks them.
fn rule_routes(cfg: &Config, provider: Option<&str>, model_id: Option<&str>, owned: Owned) -> RoutePlan {
    let selected = select_rule(cfg, provider, model_id);
    let req = selected.as_ref().map(|(_, r)| *r).unwrap_or_default();
    let source = if selected.is_some() {
        Source::Rules
    } else {
        Source::Unmatched
    };
    let rule = selected.map(|(m, _)| m);
    let code = req.code && owned.code && owned.shell;
    let r = Routes {
        direct_shell: req.shell && owned.shell,
        code,
        // Patch with Code lives inside cells only; Patch alone is the direct tool.
        nested_patch: req.patch && req.code && code && owned.patch,
        direct_patch: req.patch && !req.code && owned.patch,
    };
    // Notes: which requested route lacks an admitted owned tool.
    let mut notes: Vec<&'static str> = Vec::new();
    if req.patch && !req.code && !owned.patch {
        notes.push("patch-unavailable");
    }
    if req.patch && req.code && !r.code {
        notes.push("code-unavailable-did-not-promote-patch");
        notes.push("patch-unavailable-kept-native-editing");
    }
    if req.patch && req.code && r.code && !owned.patch {
        notes.push("patch-unavailable");
    }
    if req.shell && !owned.shell {
        notes.push("shell-pair-unavailable");
    }
    if req.code && !owned.code {
        notes.push("code-pair-unavailable");
    } else if req.code && !owned.shell {
        notes.push("code-shell-pair-unavailable");
    }
    let (mut direct, mut nested, mut admitted) = (Vec::new(), Vec::new(), Vec::new());
    admit_direct(&r, &mut direct, &mut admitted);
    if r.code {
        push_unique(&mut admitted, &SHELL_PAIR);
        push_unique(&mut nested, &SHELL_PAIR);
        if r.nested_patch {
            push_unique(&mut admitted, &[APPLY_PATCH]);
            push_unique(&mut nested, &[APPLY_PATCH]);
        }
    }
    RoutePlan {
        source,
        rule,
        requested: req,
        routes: r,
        notes,
        direct,
        nested,
        admitted,
        hide_bash: r.direct_shell || r.code,
        hide_edit_write: r.direct_patch || r.nested_patch,
    }
}

/// Routes from the legacy feature switches: each feature where its tools are ours; cells reach the direct tools.
fn legacy_routes(cfg: &Config, owned: Owned) -> RoutePlan {
    let req = Requested {
        patch: cfg.apply_patch.enabled,
        shell: cfg.shell_sessions.enabled,
        code: cfg.code_mode.enabled,
    };
    let direct_patch = req.patch && owned.patch;
    let code = req.code && owned.code;
    let r = Routes {
        direct_patch,
        direct_shell: req.shell && owned.shell,
        code,
        nested_patch: code && direct_patch,
    };
    let (mut direct, mut nested, mut admitted) = (Vec::new(), Vec::new(), Vec::new());
    admit_direct(&r, &mut direct, &mut admitted);
    if r.code {
        if r.direct_shell {
            push_unique(&mut nested, &SHELL_PAIR);
        }
        if r.direct_patch {
            push_unique(&mut nested, &[APPLY_PATCH]);
        }
    }
    RoutePlan {
        source: Source::Legacy,
        rule: None,
        requested: req,
        routes: r,
        notes: Vec::new(),
        direct,
        nested,
        admitted,
        hide_bash: false,
        hide_edit_write: false,
    }
}

/// The direct tools of the features outside the execution routes: the network tools when their plan resolves,
/// Computer Use, the interactive tools. Returns the network plans.
fn admit_features(
    input: &ResolveInput,
    reg: &Registry,
    direct: &mut Vec<&'static str>,
    admitted: &mut Vec<&'static str>,
) -> (SearchPlan, ImagePlan) {
    let cfg = &input.config;
    // Network tools: the sidecar's openai_web_search and openai_generate_image, when their plan resolves.
    let (search, image) = net_plans(input, reg);
    if search.backend == Some(SearchBackend::Sidecar) {
        push_unique(direct, &[WEB_SEARCH]);
        push_unique(admitted, &[WEB_SEARCH]);
    }
    if image.route.is_some() {
        push_unique(direct, &[GENERATE_IMAGE]);
        push_unique(admitted, &[GENERATE_IMAGE]);
    }

    // Computer Use (docs/computer.md): every prerequisite (computer_use_blocker), all six names ours or none.
    if cfg.computer_use.enabled
        && computer_use_blocker(input).is_none()
        && COMPUTER_USE.iter().all(|n| reg.owner(n) == Owner::Ours)
    {
        push_unique(direct, &COMPUTER_USE);
        push_unique(admitted, &COMPUTER_USE);
    }

    // Interactive tools (docs/interactive.md): each on with the section and its own switch, when ours.
    if cfg.interactive_tools.enabled {
        for n in INTERACTIVE {
            if cfg.interactive_tools.tool_switch(n) && reg.owner(n) == Owner::Ours {
                push_unique(direct, &[n]);
                push_unique(admitted, &[n]);
            }
        }
    }
    (search, image)
}

/// Tool Discovery's part of a decision.
struct Discovery {
    loader_available: bool,
    deferred_set: Vec<String>,
    loaded: Vec<String>,
    /// Direct names held back until `find_tools` loads them.
    held: Vec<&'static str>,
}

/// Tool Discovery: find_tools itself, the loads in force, then which direct names it holds back.
fn discovery(
    input: &ResolveInput,
    reg: &Registry,
    direct: &mut Vec<&'static str>,
    admitted: &mut Vec<&'static str>,
) -> Discovery {
    let cfg = &input.config;
    let discovery_on = cfg.tool_discovery.enabled;
    let find_ours = reg.owner(FIND_TOOLS) == Owner::Ours;
    let loader_available = discovery_on && find_ours;
    if loader_available {
        push_unique(direct, &[FIND_TOOLS]);
        push_unique(admitted, &[FIND_TOOLS]);
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
        for n in direct.iter() {
            if deferred_set.iter().any(|d| d == n) && !loaded.iter().any(|l| l == n) {
                held.push(n);
            }
        }
    }
    Discovery {
        loader_available,
        deferred_set,
        loaded,
        held,
    }
}

/// The host tools' part of a decision.
struct HostPart {
    /// Builtins the host tools replace right now.
    hidden: Vec<&'static str>,
    /// The on-demand names `find_tools` manages now.
    on_demand: Vec<&'static str>,
    /// The on-demand loads of this prompt that stay in force.
    loaded_on_demand: Vec<String>,
}

/// Host tools (docs/spec/host-tools.md, top) and the plan tools: admitted, then shown or held back on demand.
///
/// Not an execution route, the same under rules and legacy flags. Read/Glob/Grep go together and replace Pi's
/// read, grep, find and ls; Write/Edit are the edit/write family, so a patch route that hides Pi's edit/write hides
/// them too. Never in the `deferred` list.
///
/// On demand (seed 000 §2.1, docs/rules.md "On-demand host tools"): with the find_tools loader available, the
/// names of the ON_DEMAND table are admitted but held back (listed in the on-demand catalog) until find_tools
/// loads them for the next turn, the Task tools only until a background task exists. Without the loader nothing
/// could load them, so they are simply active.
fn admit_host_and_plan_tools(
    input: &ResolveInput,
    reg: &Registry,
    loader_available: bool,
    (hide_bash_now, hide_edit_write_now): (bool, bool),
    admitted: &mut Vec<&'static str>,
    visible: &mut Vec<&'static str>,
    held: &mut Vec<&'static str>,
) -> HostPart {
    let cfg = &input.config;
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
        push_unique(admitted, set);
        for n in set {
            if holds(n) {
                push_unique(held, &[n]);
            } else {
                push_unique(visible, &[n]);
            }
        }
    };
    if cfg.host_tools.enabled && reg.all_ours(&HOST_READ_SET) {
        show(&HOST_READ_SET, visible, held);
        host_hidden.extend([READ, GREP, FIND, LS]);
        if reg.all_ours(&HOST_EDIT_SET) && !hide_edit_write_now {
            show(&HOST_EDIT_SET, visible, held);
            host_hidden.extend([EDIT, WRITE]);
        }
        if reg.all_ours(&HOST_BASH_SET) && !hide_bash_now {
            show(&HOST_BASH_SET, visible, held);
            host_hidden.push(BASH);
        }
    }
    // The plan tools: each admitted on its own, visible in its operation mode only (src/rules/plan_mode.rs).
    let (plan_admitted, plan_visible) = super::plan_mode::plan_tools(input, reg);
    push_unique(admitted, &plan_admitted);
    // The plan tools are never on demand: a mode tool is callable whenever its mode allows it (docs/rules.md
    // "On-demand host tools"), so EnterPlanMode is in Agent's first request and SubmitPlan in Plan's.
    for n in plan_visible {
        if holds(n) {
            push_unique(held, &[n]);
        } else {
            push_unique(visible, &[n]);
        }
    }
    HostPart {
        hidden: host_hidden,
        on_demand: on_demand_names,
        loaded_on_demand,
    }
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
