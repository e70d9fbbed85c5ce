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
    // The plan tools are never on demand: a mode tool is callable whenever its mode allows it (docs/rules.md
    // "On-demand host tools"), so EnterPlanMode is in Agent's first request and SubmitPlan in Plan's.
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
        .map(|f| super::status::feature_status(*f, input, &reg, &d))
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
