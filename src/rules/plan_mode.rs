//! What Plan mode changes in the active tool list (docs/permissions.md "Plan mode"): the plan tools' visibility,
//! and the tools Plan hides — the edit family (Write, Edit, apply_patch, Pi's `edit`/`write`), the Computer Use
//! tools (Plan refuses desktop control outright) and other extensions' tools not declared in
//! `permissions.planSafeTools`.
//!
//! Why hide what is refused anyway: the model should not be offered a tool that can only fail. The list is guidance,
//! not the boundary — every hidden tool is still hard-denied before any card if called (src/host/permission.rs,
//! src/pi/plan.ts). Why a separate file: the projection (src/rules/projection.rs) stays about routes and builtins;
//! this is the one place that knows what Plan takes away and gives back.

use super::input::ResolveInput;
use super::names::{APPLY_PATCH, COMPUTER_USE, EDIT, ENTER_PLAN_MODE, HOST_EDIT, HOST_WRITE, SUBMIT_PLAN, WRITE};
use super::ownership::{Owner, Registry};

/// The plan tools admitted (both, when the host tools are on and each name is ours: each checks the mode itself and
/// says why it cannot run) and the one visible in the current operation mode.
pub fn plan_tools(input: &ResolveInput, reg: &Registry) -> (Vec<&'static str>, Vec<&'static str>) {
    if !input.config.host_tools.enabled {
        return (Vec::new(), Vec::new());
    }
    let mut admitted = Vec::new();
    let mut visible = Vec::new();
    for (name, shown) in [(ENTER_PLAN_MODE, !input.in_plan()), (SUBMIT_PLAN, input.in_plan())] {
        if reg.owner(name) == Owner::Ours {
            admitted.push(name);
            if shown {
                visible.push(name);
            }
        }
    }
    (admitted, visible)
}

/// Whether Plan hides `name`: the toolkit's edit family and Computer Use tools, Pi's edit and write, and every other extension's tool that
/// `permissions.planSafeTools` does not list. Pi's other builtins and the toolkit's other tools stay.
fn hidden_in_plan(name: &str, input: &ResolveInput, reg: &Registry) -> bool {
    match reg.owner(name) {
        Owner::Ours => [HOST_WRITE, HOST_EDIT, APPLY_PATCH].contains(&name) || COMPUTER_USE.contains(&name),
        Owner::Builtin => name == EDIT || name == WRITE,
        Owner::Foreign => !input
            .config
            .permissions
            .plan_safe_tools
            .as_ref()
            .is_some_and(|l| l.iter().any(|n| n == name)),
        Owner::Missing => false,
    }
}

/// Applies Plan mode to the list the projection built. In Plan: removes what Plan hides, and returns the names it
/// took away that are not the toolkit's (Pi's builtins, other extensions' tools: only those need giving back),
/// together with the earlier ones still registered. In Agent: gives back every name an earlier Plan sync took away
/// that is still registered and that `keep_out` (the builtins the routes hide) does not claim; returns nothing.
pub fn apply(input: &ResolveInput, reg: &Registry, active: &mut Vec<String>, keep_out: &[&str]) -> Vec<String> {
    let registered = |n: &str| reg.owner(n) != Owner::Missing;
    if input.in_plan() {
        let mut taken: Vec<String> = input
            .plan_hidden_by_us
            .iter()
            .filter(|n| registered(n) && hidden_in_plan(n, input, reg))
            .cloned()
            .collect();
        active.retain(|n| {
            if !hidden_in_plan(n, input, reg) {
                return true;
            }
            if reg.owner(n) != Owner::Ours && !taken.contains(n) {
                taken.push(n.clone());
            }
            false
        });
        taken
    } else {
        for n in &input.plan_hidden_by_us {
            if registered(n) && reg.owner(n) != Owner::Ours && !keep_out.contains(&n.as_str()) && !active.contains(n) {
                active.push(n.clone());
            }
        }
        Vec::new()
    }
}

/// The `operation mode:` line of `/pct status` (under Host Tools, next to the permission mode). With `auto` configured
/// it says that Plan is no read-only sandbox (a `/pct permission auto` of the session is said by the footer).
pub fn status_line(input: &ResolveInput) -> String {
    if !input.in_plan() {
        return "Agent".into();
    }
    let cfg = &input.config;
    let mode = cfg
        .permissions
        .mode
        .as_deref()
        .or(cfg.host_tools.permission_mode.as_deref());
    let mut line = String::from("Plan (Write, Edit, apply_patch and undeclared extension tools are hidden and refused");
    if mode == Some("auto") {
        line.push_str("; auto: Plan plans intent, it is not a read-only sandbox — commands may still change files");
    }
    line.push(')');
    line
}

#[cfg(test)]
mod tests {
    use crate::rules::input::{Config, ResolveInput, ToolEntry};
    use crate::rules::names::*;
    use crate::rules::resolve;
    use serde_json::json;

    const ME: &str = "/me/src/index.ts";

    fn input(config: serde_json::Value, mode: Option<&str>, active: &[&str], plan_hidden: &[&str]) -> ResolveInput {
        let mut tools: Vec<ToolEntry> = ["read", "bash", "edit", "write", "grep", "find", "ls"]
            .iter()
            .map(|n| ToolEntry {
                name: n.to_string(),
                description: None,
                source: "builtin".into(),
            })
            .collect();
        for n in HOST_FEATURE_NAMES
            .iter()
            .chain([APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN].iter())
        {
            tools.push(ToolEntry {
                name: n.to_string(),
                description: None,
                source: ME.into(),
            });
        }
        for n in ["mcp__docs__search", "lint_fix"] {
            tools.push(ToolEntry {
                name: n.into(),
                description: None,
                source: "/ext/other.ts".into(),
            });
        }
        ResolveInput {
            config: Config::from_value(config).unwrap(),
            tools,
            identity: ME.into(),
            active_now: active.iter().map(|s| s.to_string()).collect(),
            plan_hidden_by_us: plan_hidden.iter().map(|s| s.to_string()).collect(),
            operation_mode: mode.map(String::from),
            ..Default::default()
        }
    }

    fn has(list: &[String], n: &str) -> bool {
        list.iter().any(|a| a == n)
    }

    const PI_DEFAULT: [&str; 4] = ["read", "bash", "edit", "write"];

    #[test]
    fn agent_shows_enter_plan_mode_and_plan_shows_submit_plan_both_admitted() {
        let cfg = json!({"hostTools": {"enabled": true}});
        let agent = resolve(&input(cfg.clone(), Some("agent"), &PI_DEFAULT, &[]));
        assert!(
            has(&agent.active, ENTER_PLAN_MODE) && !has(&agent.active, SUBMIT_PLAN),
            "{:?}",
            agent.active
        );
        let plan = resolve(&input(
            cfg.clone(),
            Some("plan"),
            &agent.active.iter().map(String::as_str).collect::<Vec<_>>(),
            &[],
        ));
        assert!(
            has(&plan.active, SUBMIT_PLAN) && !has(&plan.active, ENTER_PLAN_MODE),
            "{:?}",
            plan.active
        );
        for p in [&agent, &plan] {
            assert!(has(&p.admitted_names, ENTER_PLAN_MODE) && has(&p.admitted_names, SUBMIT_PLAN));
        }
        // Missing mode = Agent; a damaged one = Plan (fail closed).
        assert!(has(
            &resolve(&input(cfg.clone(), None, &PI_DEFAULT, &[])).active,
            ENTER_PLAN_MODE
        ));
        assert!(has(
            &resolve(&input(cfg.clone(), Some("goal?"), &PI_DEFAULT, &[])).active,
            SUBMIT_PLAN
        ));
        // Host tools off: no plan tool at all.
        let off = resolve(&input(json!({}), Some("plan"), &PI_DEFAULT, &[]));
        assert!(!has(&off.admitted_names, SUBMIT_PLAN) && !has(&off.active, SUBMIT_PLAN));
    }

    #[test]
    fn plan_hides_the_edit_family_and_undeclared_extension_tools_and_agent_gives_them_back() {
        let cfg = json!({"hostTools": {"enabled": true}, "applyPatch": {"enabled": true}, "shellSessions": {"enabled": true},
            "permissions": {"planSafeTools": ["lint_fix"]}});
        let now = ["read", "bash", "edit", "write", "mcp__docs__search", "lint_fix"];
        let agent = resolve(&input(cfg.clone(), Some("agent"), &now, &[]));
        for n in [HOST_WRITE, HOST_EDIT, APPLY_PATCH, "mcp__docs__search", "lint_fix"] {
            assert!(has(&agent.active, n), "{n} in Agent: {:?}", agent.active);
        }
        assert!(agent.plan_hidden.is_empty());
        let before: Vec<&str> = agent.active.iter().map(String::as_str).collect();
        let plan = resolve(&input(cfg.clone(), Some("plan"), &before, &[]));
        for n in [HOST_WRITE, HOST_EDIT, APPLY_PATCH, "mcp__docs__search", EDIT, WRITE] {
            assert!(!has(&plan.active, n), "{n} is hidden in Plan: {:?}", plan.active);
        }
        for n in [
            HOST_READ,
            HOST_GLOB,
            HOST_GREP,
            HOST_BASH,
            EXEC_COMMAND,
            WRITE_STDIN,
            "lint_fix",
            SUBMIT_PLAN,
        ] {
            assert!(has(&plan.active, n), "{n} stays in Plan: {:?}", plan.active);
        }
        assert!(plan.changed);
        // Only what is not the toolkit's needs giving back; Pi's edit/write were hidden by the host tools already.
        assert_eq!(plan.plan_hidden, vec!["mcp__docs__search".to_string()]);
        let in_plan: Vec<&str> = plan.active.iter().map(String::as_str).collect();
        let hidden: Vec<&str> = plan.plan_hidden.iter().map(String::as_str).collect();
        // A second Plan sync keeps the record (the name is no longer active, but still owed back).
        let again = resolve(&input(cfg.clone(), Some("plan"), &in_plan, &hidden));
        assert_eq!(again.plan_hidden, plan.plan_hidden);
        assert!(!again.changed);
        let back = resolve(&input(cfg.clone(), Some("agent"), &in_plan, &hidden));
        for n in [HOST_WRITE, HOST_EDIT, APPLY_PATCH, "mcp__docs__search", ENTER_PLAN_MODE] {
            assert!(has(&back.active, n), "{n} is back in Agent: {:?}", back.active);
        }
        assert!(
            !has(&back.active, EDIT) && !has(&back.active, WRITE),
            "the host tools still replace Pi's edit/write"
        );
        assert!(back.plan_hidden.is_empty());
    }

    #[test]
    fn the_status_line_says_the_mode_and_under_auto_that_plan_is_no_sandbox() {
        let line = |cfg, mode| super::status_line(&input(cfg, mode, &[], &[]));
        assert_eq!(line(json!({}), None), "Agent");
        assert_eq!(line(json!({}), Some("agent")), "Agent");
        assert_eq!(
            line(json!({"permissions": {"mode": "ask"}}), Some("plan")),
            "Plan (Write, Edit, apply_patch and undeclared extension tools are hidden and refused)"
        );
        for cfg in [
            json!({"permissions": {"mode": "auto"}}),
            json!({"hostTools": {"permissionMode": "auto"}}),
        ] {
            assert!(line(cfg, Some("plan")).contains("auto: Plan plans intent, it is not a read-only sandbox"));
        }
        let status = crate::rules::status_text(&input(json!({"hostTools": {"enabled": true}}), Some("plan"), &[], &[]));
        assert!(status.contains("\n  operation mode: Plan ("), "{status}");
    }

    #[test]
    fn without_host_tools_plan_hides_pis_edit_and_write_and_agent_restores_them() {
        let now = ["read", "bash", "edit", "write", "grep"];
        let plan = resolve(&input(json!({}), Some("plan"), &now, &[]));
        assert_eq!(plan.active, vec!["read", "bash", "grep"]);
        assert_eq!(plan.plan_hidden, vec!["edit", "write"]);
        let back = resolve(&input(
            json!({}),
            Some("agent"),
            &["read", "bash", "grep"],
            &["edit", "write"],
        ));
        assert_eq!(back.active, vec!["read", "bash", "grep", "edit", "write"]);
        // A name owed back that is no longer registered is forgotten, not re-added.
        let gone = resolve(&input(json!({}), Some("agent"), &["read"], &["mcp__gone__x"]));
        assert_eq!(gone.active, vec!["read"]);
    }

    #[test]
    fn plan_hides_the_computer_use_tools_and_agent_keeps_them() {
        let cfg = json!({"hostTools": {"enabled": true}});
        let mut i = input(cfg, Some("plan"), &PI_DEFAULT, &[]);
        for n in COMPUTER_USE {
            i.tools.push(ToolEntry {
                name: n.into(),
                description: None,
                source: ME.into(),
            });
        }
        let reg = crate::rules::ownership::Registry::new(&i.tools, &i.identity);
        let mut active: Vec<String> = COMPUTER_USE.iter().map(|s| s.to_string()).collect();
        super::apply(&i, &reg, &mut active, &[]);
        assert!(active.is_empty(), "{active:?}");
        i.operation_mode = Some("agent".into());
        let mut active: Vec<String> = COMPUTER_USE.iter().map(|s| s.to_string()).collect();
        super::apply(&i, &reg, &mut active, &[]);
        assert_eq!(active.len(), COMPUTER_USE.len());
    }
}
