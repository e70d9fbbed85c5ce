//! Which of the toolkit's tool definitions to hand to `pi.registerTool` now (docs/spec/toolkit.md §3,
//! "Registration").
//!
//! Why: Pi refuses to start when two extensions register one tool name at load, so the toolkit registers
//! nothing at load. At every sync (session start, `/pct reload`, a saved config, a model change) it registers
//! only the names of features the config turns on, and only when no other extension already owns one of the
//! names of that atomic group. A taken name is never registered: the feature reports `name-taken` instead.
//! Pi has no way to unregister a tool, so a feature turned off later keeps its registration, inactive.

use super::input::{Config, ResolveInput};
use super::names::*;
use super::ownership::{Owner, Registry};
use serde::Serialize;

/// The groups that are registered together or not at all (a pair without its sibling is useless).
const GROUPS: [&[&str]; 16] = [
    &[APPLY_PATCH],
    &SHELL_PAIR,
    &CODE_PAIR,
    &[FIND_TOOLS],
    &[WEB_SEARCH],
    &[GENERATE_IMAGE],
    &COMPUTER_USE,
    &HOST_READ_SET,
    &HOST_EDIT_SET,
    &HOST_BASH_SET,
    &[INTERACTIVE[0]],
    &[INTERACTIVE[1]],
    &[INTERACTIVE[2]],
    &[TASK],
    &[ENTER_PLAN_MODE],
    &[SUBMIT_PLAN],
];

/// The registration groups the config can make visible, in [`GROUPS`] order.
fn wanted_groups(cfg: &Config) -> Vec<&'static [&'static str]> {
    let (mut patch, mut shell, mut code) = (false, false, false);
    match &cfg.execution {
        // Under execution rules the legacy flags are ignored; any rule may match a later model.
        Some(exec) => {
            for r in &exec.rules {
                patch |= r.patch;
                shell |= r.shell || r.code;
                code |= r.code;
            }
        }
        None => {
            patch = cfg.apply_patch.enabled;
            shell = cfg.shell_sessions.enabled;
            code = cfg.code_mode.enabled;
        }
    }
    let host = cfg.host_tools.enabled;
    // Each interactive tool is its own group: one taken name leaves the other two working.
    let interactive = |name: &str| cfg.interactive_tools.enabled && cfg.interactive_tools.tool_switch(name);
    let on = [
        patch,
        shell,
        code,
        cfg.tool_discovery.enabled,
        cfg.web_search.enabled,
        cfg.image_generation.enabled,
        cfg.computer_use.enabled,
        host,
        host,
        host,
        interactive(INTERACTIVE[0]),
        interactive(INTERACTIVE[1]),
        interactive(INTERACTIVE[2]),
        cfg.subagents.enabled,
        host,
        host,
    ];
    GROUPS.iter().zip(on).filter(|(_, on)| *on).map(|(g, _)| *g).collect()
}

/// One name another extension (or Pi itself) owns: the feature that wanted it stays off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Taken {
    pub name: String,
    /// The winner's source (an extension path, `builtin`, or `<sdk:…>`).
    pub owner: String,
}

/// What to register now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RegistrationPlan {
    /// Names to pass to `pi.registerTool` now, in the order offered.
    pub register: Vec<String>,
    /// Wanted names that are already owned elsewhere (their whole group is skipped).
    pub taken: Vec<Taken>,
}

/// Decides which of the `offered` definitions (names the feature modules declared and that are not registered
/// yet) to register for this snapshot. A name outside the toolkit's table belongs to no config switch: it is
/// registered whenever it is free, so a new tool gets the never-collide rule before it gets a switch.
pub fn plan(input: &ResolveInput, offered: &[String]) -> RegistrationPlan {
    let reg = Registry::new(&input.tools, &input.identity);
    let wanted = wanted_groups(&input.config);
    let taken_by = |n: &str| match reg.owner(n) {
        Owner::Foreign | Owner::Builtin => input.tools.iter().rev().find(|t| t.name == n).map(|t| t.source.clone()),
        Owner::Ours | Owner::Missing => None,
    };
    let mut out = RegistrationPlan::default();
    for g in &wanted {
        for n in g.iter() {
            if let Some(owner) = taken_by(n) {
                out.taken.push(Taken {
                    name: n.to_string(),
                    owner,
                });
            }
        }
    }
    for name in offered {
        let group = GROUPS.iter().find(|g| g.contains(&name.as_str()));
        let free = match group {
            Some(g) => wanted.contains(g) && g.iter().all(|n| taken_by(n).is_none()),
            None => feature_of(name).is_none() && taken_by(name).is_none(),
        };
        if free && reg.owner(name) != Owner::Ours && !out.register.contains(name) {
            out.register.push(name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::input::ToolEntry;
    use serde_json::json;

    const ME: &str = "/me/src/index.ts";

    fn input(config: serde_json::Value, tools: &[(&str, &str)]) -> ResolveInput {
        ResolveInput {
            config: Config::from_value(config).unwrap(),
            tools: tools
                .iter()
                .map(|(n, s)| ToolEntry {
                    name: n.to_string(),
                    description: None,
                    source: s.to_string(),
                })
                .collect(),
            identity: ME.into(),
            ..Default::default()
        }
    }

    fn all_offered() -> Vec<String> {
        all_toolkit_names().map(String::from).collect()
    }

    #[test]
    fn everything_off_registers_nothing() {
        let p = plan(&input(json!({}), &[("bash", "builtin")]), &all_offered());
        assert_eq!(p, RegistrationPlan::default());
    }

    #[test]
    fn legacy_flags_register_their_groups_only() {
        let cfg = json!({"shellSessions": {"enabled": true}, "hostTools": {"enabled": true}});
        let p = plan(&input(cfg, &[]), &all_offered());
        let mut want = vec!["exec_command", "write_stdin"];
        want.extend(HOST_FEATURE_NAMES);
        assert_eq!(p.register, want);
        assert!(p.taken.is_empty());
    }

    #[test]
    fn a_taken_name_skips_its_whole_group_and_is_reported() {
        let cfg = json!({"codeMode": {"enabled": true}, "shellSessions": {"enabled": true},
            "hostTools": {"enabled": true}});
        let tools = [("wait", "/ext/subagent.ts"), ("TaskStop", "/ext/tasks.ts")];
        let p = plan(&input(cfg, &tools), &all_offered());
        assert!(!p.register.iter().any(|n| n == "exec" || n == "wait"), "{p:?}");
        assert!(!p.register.iter().any(|n| HOST_BASH_SET.contains(&n.as_str())), "{p:?}");
        assert!(p.register.iter().any(|n| n == "exec_command"));
        assert!(p.register.iter().any(|n| n == "Read"));
        assert_eq!(
            p.taken,
            vec![
                Taken {
                    name: "wait".into(),
                    owner: "/ext/subagent.ts".into()
                },
                Taken {
                    name: "TaskStop".into(),
                    owner: "/ext/tasks.ts".into()
                },
            ]
        );
    }

    #[test]
    fn execution_rules_register_the_union_of_their_routes() {
        let cfg = json!({"applyPatch": {"enabled": false}, "execution": {"rules": [
            {"id": "a", "match": "gpt-*", "patch": true, "shell": false, "code": false},
            {"id": "b", "match": "o3", "patch": false, "shell": false, "code": true}]}});
        let p = plan(&input(cfg, &[]), &all_offered());
        assert_eq!(
            p.register,
            vec!["apply_patch", "exec_command", "write_stdin", "exec", "wait"]
        );
    }

    #[test]
    fn names_already_ours_are_not_registered_again_and_unknown_names_register_when_free() {
        let cfg = json!({"toolDiscovery": {"enabled": true}});
        let tools = [("find_tools", ME), ("TodoRead", "/ext/todo.ts")];
        let offered: Vec<String> = ["find_tools", "TodoPeek", "TodoRead"].map(String::from).into();
        let p = plan(&input(cfg, &tools), &offered);
        assert_eq!(p.register, vec!["TodoPeek"]);
        assert!(p.taken.is_empty(), "an unknown name is no feature's: nothing to report");
    }

    #[test]
    fn interactive_tools_register_one_by_one_as_their_switches_say() {
        let offered: Vec<String> = INTERACTIVE.map(String::from).into();
        let off = plan(&input(json!({}), &[]), &offered);
        assert!(off.register.is_empty(), "off by default: nothing registered");
        let cfg = json!({"interactiveTools": {"enabled": true, "newContext": false}});
        let p = plan(&input(cfg, &[("asktool", "/ext/ask.ts")]), &offered);
        assert_eq!(p.register, vec![INTERACTIVE[1].to_string()]);
        assert_eq!(p.taken.len(), 1);
        assert_eq!(p.taken[0].name, "asktool");
    }

    #[test]
    fn task_registers_with_subagents_enabled_and_never_over_a_taken_name() {
        let offered = vec![TASK.to_string()];
        assert!(
            plan(&input(json!({}), &[]), &offered).register.is_empty(),
            "off by default"
        );
        let on = json!({"subagents": {"enabled": true}});
        assert_eq!(plan(&input(on.clone(), &[]), &offered).register, offered);
        let p = plan(&input(on, &[("Task", "/ext/subagent.ts")]), &offered);
        assert!(p.register.is_empty());
        assert_eq!(p.taken[0].owner, "/ext/subagent.ts");
    }
}
