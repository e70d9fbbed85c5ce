//! The host tools in the projection and status (docs/spec/host-tools.md, top): activation, the builtins they
//! replace and give back, the edit/write family under a patch route, conflicts.

use super::input::{Config, ToolEntry};
use super::names::*;
use super::tests::{registry, rules_cfg, snapshot, ME, OTHER};
use super::{resolve, status_text};
use serde_json::{json, Value};

fn ours(mut tools: Vec<ToolEntry>, names: &[&str]) -> Vec<ToolEntry> {
    for n in names {
        tools.push(ToolEntry {
            name: n.to_string(),
            description: None,
            source: ME.into(),
        });
    }
    tools
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

fn strs(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

fn host(enabled: bool) -> Value {
    json!({"hostTools": {"enabled": enabled, "permissionMode": "ask"}})
}

#[test]
fn enabled_host_tools_replace_builtins_and_disabling_restores_them() {
    let tools = ours(registry(&[], &[]), &HOST_NAMES);
    let mut input = snapshot(host(true), Some(("faux", "faux-1")), tools);
    // grep, find and ls were turned on by the user (`/tools`): they are replaced too.
    input.active_now.extend(["grep", "find", "ls"].map(String::from));
    let out = resolve(&input);
    for n in HOST_NAMES {
        assert!(out.active.contains(&n.to_string()), "{n} active: {:?}", out.active);
    }
    for b in ["read", "edit", "write", "grep", "find", "ls", "bash"] {
        assert!(!out.active.contains(&b.to_string()), "{b} hidden");
    }
    assert_eq!(
        sorted(&out.hidden_natives),
        strs(&["bash", "edit", "find", "grep", "ls", "read", "write"])
    );
    assert_eq!(out.features["hostTools"]["effective"], "active");

    // Disabled: our names leave, every builtin we hid comes back.
    input.config = Config::from_value(host(false)).unwrap();
    input.active_now = out.active.clone();
    input.hidden_by_us = out.hidden_natives.clone();
    let off = resolve(&input);
    assert_eq!(
        sorted(&off.restored_natives),
        strs(&["bash", "edit", "find", "grep", "ls", "read", "write"])
    );
    for n in HOST_NAMES {
        assert!(!off.active.contains(&n.to_string()));
    }
    for b in ["read", "edit", "write", "grep", "find", "ls", "bash"] {
        assert!(off.active.contains(&b.to_string()), "{b} restored");
    }
    assert!(off.hidden_natives.is_empty());
    assert_eq!(off.features["hostTools"]["effective"], "off");
}

#[test]
fn without_write_and_edit_registered_pi_keeps_edit_and_write() {
    let input = snapshot(
        host(true),
        Some(("faux", "faux-1")),
        ours(registry(&[], &[]), &HOST_READ_SET),
    );
    let out = resolve(&input);
    assert_eq!(sorted(&out.hidden_natives), strs(&["read"]));
    assert!(out.active.contains(&"edit".to_string()) && out.active.contains(&"write".to_string()));
    assert_eq!(sorted(&out.admitted_names), strs(&["Glob", "Grep", "Read"]));
}

#[test]
fn a_patch_route_owns_the_edit_write_family() {
    let mut cfg = rules_cfg(json!([{ "id": "r", "match": "faux-*", "patch": true, "shell": false, "code": false }]));
    cfg["hostTools"] = json!({"enabled": true});
    let input = snapshot(
        cfg.clone(),
        Some(("faux", "faux-1")),
        ours(registry(&[], &[]), &HOST_NAMES),
    );
    let out = resolve(&input);
    assert!(out.active.contains(&"apply_patch".to_string()));
    assert!(!out.active.contains(&"Write".to_string()) && !out.active.contains(&"Edit".to_string()));
    assert!(!out.admitted_names.contains(&"Edit".to_string()), "not admitted either");
    assert!(out.active.contains(&"Read".to_string()));
    assert_eq!(sorted(&out.hidden_natives), strs(&["bash", "edit", "read", "write"]));
    assert!(
        out.active.contains(&"Bash".to_string()),
        "a patch route leaves the bash family to host Bash"
    );
    let text = status_text(&input);
    assert!(text.contains("  note: Write and Edit step aside while the execution rule's patch route owns editing"));
    // A model no rule matches: the host family takes edit/write over again.
    let other = snapshot(cfg, Some(("other", "m")), ours(registry(&[], &[]), &HOST_NAMES));
    let out = resolve(&other);
    assert!(out.active.contains(&"Edit".to_string()) && !out.active.contains(&"apply_patch".to_string()));
}

#[test]
fn a_foreign_read_disables_the_group_and_hides_nothing() {
    let mut tools = ours(registry(&[], &[]), &HOST_NAMES);
    tools.push(ToolEntry {
        name: "Grep".into(),
        description: None,
        source: OTHER.into(),
    });
    let input = snapshot(host(true), Some(("faux", "faux-1")), tools);
    let out = resolve(&input);
    assert!(out.hidden_natives.is_empty());
    for n in ["Read", "Glob", "Write", "Edit"] {
        assert!(
            !out.active.contains(&n.to_string()),
            "{n} is not admitted without the whole read set"
        );
    }
    assert!(out.active.contains(&"Grep".to_string()), "their Grep stays as it was");
    assert_eq!(out.features["hostTools"]["effective"], "unavailable");
    assert_eq!(out.features["hostTools"]["reason"], "name-taken");
}

#[test]
fn a_read_replaced_by_another_extension_is_left_alone() {
    let mut tools = ours(registry(&[], &[]), &HOST_NAMES);
    tools.push(ToolEntry {
        name: "read".into(),
        description: None,
        source: OTHER.into(),
    });
    let out = resolve(&snapshot(host(true), Some(("faux", "faux-1")), tools));
    assert!(out.active.contains(&"read".to_string()));
    assert!(out.active.contains(&"Read".to_string()));
    assert_eq!(sorted(&out.hidden_natives), strs(&["bash", "edit", "write"]));
}

#[test]
fn status_block() {
    let mut cfg = host(true);
    cfg["hostTools"]["permissionMode"] = json!("accept-edits");
    let text = status_text(&snapshot(
        cfg,
        Some(("faux", "faux-1")),
        ours(registry(&[], &[]), &HOST_NAMES),
    ));
    let block = "\nHost Tools\n  configured: on\n  effective: active\n  permission mode: accept-edits (hostTools.permissionMode: the older key, still read; permissions.mode wins when set)\n  tools: Read, Glob, Grep, Write, Edit, Bash, TaskList, TaskWait, TaskStop\n  note: Tool Discovery is off, so Glob, Grep and the Task tools are sent from the first request; turn it on to load them on demand\n  builtins replaced: read, grep, find, ls, edit, write, bash\n";
    assert!(text.contains(block), "{text}");
    let off = status_text(&snapshot(json!({}), Some(("faux", "faux-1")), registry(&[], &[])));
    let block = "\nHost Tools\n  configured: off\n  effective: off\n  reason: Turned off: turn it on with /pct config (hostTools.enabled). [off-in-config]\n  permission mode: ask (hostTools.permissionMode: the older key, still read; permissions.mode wins when set)\n  tools: —\n  builtins replaced: none\n";
    assert!(off.contains(block), "{off}");
}

#[test]
fn a_shell_or_code_route_owns_the_bash_family() {
    for route in ["shell", "code"] {
        let mut rule = json!({ "id": "r", "match": "faux-*", "patch": false, "shell": false, "code": false });
        rule[route] = json!(true);
        let mut cfg = rules_cfg(json!([rule]));
        cfg["hostTools"] = json!({"enabled": true});
        let input = snapshot(
            cfg.clone(),
            Some(("faux", "faux-1")),
            ours(registry(&[], &[]), &HOST_NAMES),
        );
        let out = resolve(&input);
        for n in HOST_BASH_SET {
            assert!(!out.active.contains(&n.to_string()), "{route}: {n} steps aside");
            assert!(
                !out.admitted_names.contains(&n.to_string()),
                "{route}: {n} not admitted either"
            );
        }
        assert!(
            !out.active.contains(&"bash".to_string()),
            "{route}: the route hid Pi's bash"
        );
        assert!(out.active.contains(&"Read".to_string()) && out.active.contains(&"Edit".to_string()));
        let text = status_text(&input);
        assert!(
            text.contains("  note: Bash and the Task tools step aside while the execution rule's shell or code route owns the shell"),
            "{text}"
        );
        // A model no rule matches: host Bash takes the bash family over again.
        let out = resolve(&snapshot(
            cfg,
            Some(("other", "m")),
            ours(registry(&[], &[]), &HOST_NAMES),
        ));
        for n in HOST_BASH_SET {
            assert!(out.active.contains(&n.to_string()), "{route}, unmatched: {n} active");
        }
        assert!(out.hidden_natives.contains(&"bash".to_string()));
    }
}

#[test]
fn without_the_bash_set_registered_pi_keeps_bash() {
    let names: Vec<&str> = HOST_NAMES
        .iter()
        .copied()
        .filter(|n| !HOST_BASH_SET.contains(n))
        .collect();
    let out = resolve(&snapshot(
        host(true),
        Some(("faux", "faux-1")),
        ours(registry(&[], &[]), &names),
    ));
    assert!(out.active.contains(&"bash".to_string()));
    assert!(!out.active.contains(&"Bash".to_string()));
}

#[test]
fn a_foreign_task_name_keeps_the_bash_family_off_with_a_note() {
    let mut tools = ours(registry(&[], &[]), &HOST_NAMES);
    tools.retain(|t| t.name != "TaskList");
    tools.push(ToolEntry {
        name: "TaskList".into(),
        description: None,
        source: OTHER.into(),
    });
    let input = snapshot(host(true), Some(("faux", "faux-1")), tools);
    let out = resolve(&input);
    assert!(out.active.contains(&"bash".to_string()), "Pi's bash stays");
    for n in ["Bash", "TaskWait", "TaskStop"] {
        assert!(!out.active.contains(&n.to_string()), "{n} needs the whole group");
    }
    assert!(out.active.contains(&"TaskList".to_string()), "their TaskList stays");
    assert!(out.active.contains(&"Read".to_string()) && out.active.contains(&"Edit".to_string()));
    let text = status_text(&input);
    assert!(
        text.contains("  note: Bash and the Task tools are off (name-taken: TaskList is registered by "),
        "{text}"
    );
    assert!(text.contains("); Pi's bash stays"), "{text}");
}

/// Host tools with Tool Discovery on: the seed's first request (seed 000 §2.1).
fn on_demand_input() -> super::input::ResolveInput {
    let mut cfg = host(true);
    cfg["toolDiscovery"] = json!({"enabled": true});
    snapshot(
        cfg,
        Some(("faux", "faux-1")),
        ours(registry(&[], &[]), &[&HOST_NAMES[..], &[FIND_TOOLS]].concat()),
    )
}

#[test]
fn with_find_tools_the_first_request_has_only_read_bash_edit_write() {
    let input = on_demand_input();
    let out = resolve(&input);
    let host_active: Vec<&str> = HOST_NAMES
        .iter()
        .copied()
        .filter(|n| out.active.contains(&n.to_string()))
        .collect();
    assert_eq!(host_active, ["Read", "Write", "Edit", "Bash"]);
    assert!(out.active.contains(&"find_tools".to_string()));
    // Held back, not refused: still admitted (a loaded call runs), listed in the catalog.
    for n in ["Glob", "Grep", "TaskList", "TaskWait", "TaskStop"] {
        assert!(out.admitted_names.contains(&n.to_string()), "{n} admitted");
        assert!(out.deferred_names.contains(&n.to_string()), "{n} held");
        assert!(
            out.on_demand_catalog.contains(&format!("\n- {n}: ")),
            "{n} in the catalog"
        );
    }
    assert!(out.on_demand_catalog.starts_with("# On-demand tools\n"));
    // Pi's four are replaced (Glob and Grep are one find_tools call away, so Pi's grep/find/ls stay out too).
    assert_eq!(sorted(&out.hidden_natives), strs(&["bash", "edit", "read", "write"]));
    for b in ["grep", "find", "ls"] {
        assert!(!out.active.contains(&b.to_string()), "{b}");
    }
    assert_eq!(out.features["hostTools"]["effective"], "active");
    let text = status_text(&input);
    assert!(
        text.contains("  tools: Read, Write, Edit, Bash\n  on demand: Glob, Grep, TaskList, TaskWait, TaskStop (in the on-demand catalog; find_tools loads them for the next turn)\n"),
        "{text}"
    );
    assert!(
        text.contains("  on-demand tools: 5\n  loaded this prompt: 0\n"),
        "{text}"
    );
}

#[test]
fn the_mode_tools_are_never_on_demand() {
    // A mode tool is callable whenever its mode allows it (docs/rules.md "On-demand host tools"): with Tool
    // Discovery on, EnterPlanMode is in Agent's first request, not behind find_tools, and SubmitPlan in Plan's.
    let mut input = on_demand_input();
    input.tools.push(super::input::ToolEntry {
        name: "EnterPlanMode".into(),
        source: input.identity.clone(),
        description: None,
    });
    input.tools.push(super::input::ToolEntry {
        name: "SubmitPlan".into(),
        source: input.identity.clone(),
        description: None,
    });
    let out = resolve(&input);
    assert!(out.active.contains(&"EnterPlanMode".to_string()), "{:?}", out.active);
    assert!(!out.deferred_names.contains(&"EnterPlanMode".to_string()));
    assert!(
        !out.on_demand_catalog.contains("EnterPlanMode"),
        "{}",
        out.on_demand_catalog
    );
    input.operation_mode = Some("plan".into());
    let out = resolve(&input);
    assert!(out.active.contains(&"SubmitPlan".to_string()), "{:?}", out.active);
    assert!(!out.active.contains(&"EnterPlanMode".to_string()));
    assert!(!out.deferred_names.contains(&"SubmitPlan".to_string()));
}

#[test]
fn a_load_or_a_background_task_makes_them_active() {
    let mut input = on_demand_input();
    input.loaded_on_demand = vec!["Grep".into(), "Bash".into(), "apply_patch".into()];
    let out = resolve(&input);
    assert!(out.active.contains(&"Grep".to_string()));
    assert!(!out.active.contains(&"Glob".to_string()));
    assert_eq!(out.loaded_on_demand, ["Grep"], "only on-demand names are kept");
    assert!(!out.on_demand_catalog.contains("- Grep:"));

    input.loaded_on_demand.clear();
    input.background_tasks = true;
    let out = resolve(&input);
    for n in ["TaskList", "TaskWait", "TaskStop"] {
        assert!(
            out.active.contains(&n.to_string()),
            "{n} active once a background task exists"
        );
    }
    assert!(!out.active.contains(&"Glob".to_string()) && !out.active.contains(&"Grep".to_string()));
}

#[test]
fn without_the_loader_nothing_is_held_back() {
    let mut input = on_demand_input();
    input.config = Config::from_value(host(true)).unwrap();
    input.loaded_on_demand = vec!["Grep".into()];
    let out = resolve(&input);
    for n in HOST_NAMES {
        assert!(out.active.contains(&n.to_string()), "{n} active");
    }
    assert!(out.on_demand_catalog.is_empty());
    assert!(
        out.loaded_on_demand.is_empty(),
        "turning discovery off forgets the loads"
    );
    // find_tools owned by another extension: no loader either.
    let mut input = on_demand_input();
    for t in input.tools.iter_mut().filter(|t| t.name == FIND_TOOLS) {
        t.source = OTHER.into();
    }
    let out = resolve(&input);
    assert!(out.active.contains(&"Glob".to_string()) && out.on_demand_catalog.is_empty());
}

#[test]
fn find_tools_finds_and_loads_on_demand_host_tools() {
    use crate::discovery::{find_tools, FindRequest};
    let input = on_demand_input();
    let req = |v: Value| -> FindRequest { serde_json::from_value(v).unwrap() };
    let out = find_tools(&input, &req(json!({"query": "grep"})));
    assert_eq!(out.matches[0].name, "Grep");
    assert_eq!(out.matches[0].state, "eligible");
    let out = find_tools(&input, &req(json!({"load": ["Grep", "Read"]})));
    assert_eq!(out.loaded, ["Grep"]);
    assert_eq!(out.loaded_on_demand, ["Grep"]);
    assert!(
        out.loaded_deferred.is_empty(),
        "on-demand loads are kept apart from the session's deferred loads"
    );
    assert_eq!(out.rejected[0].name, "Read");
    assert_eq!(out.rejected[0].reason, "not-managed");
    assert_eq!(out.added_tool_names, ["Grep"]);
    assert_eq!(out.text, "Loaded for the next turn: Grep\nRejected Read: not-managed");
    let mut after = input.clone();
    after.loaded_on_demand = out.loaded_on_demand.clone();
    let again = find_tools(&after, &req(json!({"load": ["Grep"]})));
    assert_eq!(again.already_active, ["Grep"]);
    assert_eq!(again.added_tool_names, ["Grep"], "an idempotent load is evidence too");
}
