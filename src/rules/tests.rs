//! Table-driven tests of the decision, the projection table of docs/spec/toolkit.md §4, status golden texts and
//! diagnostics.

use super::input::{ConfigError, ModelRef, ResolveInput, ToolEntry};
use super::names::*;
use super::{resolve, status_text};
use serde_json::{json, Value};

pub const ME: &str = "/pkg/src/index.ts";
pub const OTHER: &str = "/elsewhere/third-party.ts";
pub const BUILTINS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];
pub const OURS: [&str; 6] = [APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN, EXEC, WAIT, FIND_TOOLS];

/// A registry: Pi's builtins plus our six built names; `foreign` names re-registered by another extension win;
/// `missing` names are filtered out by the host.
pub fn registry(foreign: &[&str], missing: &[&str]) -> Vec<ToolEntry> {
    let mut v = Vec::new();
    for b in BUILTINS {
        v.push(ToolEntry {
            name: b.into(),
            description: Some(format!("builtin {b}")),
            source: "builtin".into(),
        });
    }
    for n in OURS {
        v.push(ToolEntry {
            name: n.into(),
            description: Some(fallback_description(n).into()),
            source: ME.into(),
        });
    }
    for f in foreign {
        v.push(ToolEntry {
            name: f.to_string(),
            description: Some("theirs".into()),
            source: OTHER.into(),
        });
    }
    v.retain(|t| !missing.contains(&t.name.as_str()));
    v
}

/// Pi's usual starting active set: the default builtins plus every extension tool.
pub fn default_active(tools: &[ToolEntry]) -> Vec<String> {
    tools
        .iter()
        .filter(|t| !["grep", "find", "ls"].contains(&t.name.as_str()))
        .map(|t| t.name.clone())
        .collect()
}

pub fn snapshot(config: Value, model: Option<(&str, &str)>, tools: Vec<ToolEntry>) -> ResolveInput {
    let active_now = default_active(&tools);
    ResolveInput {
        config: super::input::Config::from_value(config).expect("test config"),
        model: model.map(|(p, id)| ModelRef {
            provider: Some(p.into()),
            id: Some(id.into()),
            api: Some("faux-api".into()),
            input: None,
        }),
        tools,
        identity: ME.into(),
        active_now,
        platform: Some("linux".into()),
        config_path: Some("/agent/extensions/pi-codex-toolkit.json".into()),
        config_revision: Some("abc123".into()),
        ..Default::default()
    }
}

pub fn rules_cfg(rules: Value) -> Value {
    json!({ "execution": { "version": 1, "rules": rules } })
}

fn rule(p: bool, s: bool, c: bool) -> Value {
    json!([{ "id": "r", "match": "faux-*", "patch": p, "shell": s, "code": c }])
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

fn names(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

#[test]
fn projection_table_of_section_4() {
    // (P, S, C) -> active tools from [read, bash, edit, write] plus ours.
    type Row = ((bool, bool, bool), &'static [&'static str], &'static [&'static str]);
    let table: &[Row] = &[
        (
            (true, false, false),
            &["read", "bash", "apply_patch"],
            &["edit", "write"],
        ),
        (
            (false, true, false),
            &["read", "edit", "write", "exec_command", "write_stdin"],
            &["bash"],
        ),
        (
            (false, false, true),
            &["read", "edit", "write", "exec", "wait"],
            &["bash"],
        ),
        (
            (true, false, true),
            &["read", "exec", "wait"],
            &["bash", "edit", "write"],
        ),
        (
            (true, true, true),
            &["read", "exec_command", "write_stdin", "exec", "wait"],
            &["bash", "edit", "write"],
        ),
        ((false, false, false), &["read", "bash", "edit", "write"], &[]),
        (
            (false, true, true),
            &["read", "edit", "write", "exec_command", "write_stdin", "exec", "wait"],
            &["bash"],
        ),
        (
            (true, true, false),
            &["read", "exec_command", "write_stdin", "apply_patch"],
            &["bash", "edit", "write"],
        ),
    ];
    for ((p, s, c), want, hidden) in table {
        let input = snapshot(
            rules_cfg(rule(*p, *s, *c)),
            Some(("faux", "faux-1")),
            registry(&[], &[]),
        );
        let out = resolve(&input);
        assert_eq!(sorted(&out.active), names(want), "P={p} S={s} C={c}");
        assert_eq!(
            sorted(&out.hidden_natives),
            names(hidden),
            "hidden for P={p} S={s} C={c}"
        );
        assert!(out.notes.is_empty(), "{:?}", out.notes);
        assert!(out.restored_natives.is_empty());
    }
}

#[test]
fn nested_names_follow_routes() {
    let out = resolve(&snapshot(
        rules_cfg(rule(true, false, true)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    ));
    assert_eq!(out.nested_names, vec!["apply_patch", "exec_command", "write_stdin"]);
    assert_eq!(
        out.admitted_names,
        vec!["apply_patch", "exec_command", "write_stdin", "exec", "wait"]
    );
    assert_eq!(out.visible_names, vec!["exec", "wait"]);
    let d = &out.diagnostics;
    assert!(d.effective.nested_patch && d.effective.code && !d.effective.direct_patch && !d.effective.direct_shell);
    let out = resolve(&snapshot(
        rules_cfg(rule(false, false, true)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    ));
    assert_eq!(out.nested_names, vec!["exec_command", "write_stdin"]);
}

#[test]
fn unmatched_model_requests_nothing_and_restores_what_we_hid() {
    let mut input = snapshot(
        rules_cfg(rule(true, true, true)),
        Some(("faux", "other-model")),
        registry(&[], &[]),
    );
    input.active_now = vec!["read".into(), "exec".into(), "wait".into(), "grep".into()];
    input.hidden_by_us = vec!["bash".into(), "edit".into(), "write".into()];
    let out = resolve(&input);
    assert_eq!(out.active, vec!["read", "grep", "bash", "edit", "write"]);
    assert_eq!(out.restored_natives, vec!["bash", "edit", "write"]);
    assert!(out.hidden_natives.is_empty());
    assert_eq!(serde_json::to_value(&out.diagnostics).unwrap()["source"], "unmatched");
    assert!(out.diagnostics.rule_id.is_none());
}

#[test]
fn only_builtins_we_hid_are_restored() {
    // The user turned `bash` off with /tools before the route hid anything: it stays off afterwards.
    let mut input = snapshot(
        rules_cfg(rule(false, true, false)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    input.active_now.retain(|n| n != "bash");
    let out = resolve(&input);
    assert!(out.hidden_natives.is_empty(), "bash was not active: we did not hide it");
    input.config = super::input::Config::from_value(rules_cfg(json!([]))).unwrap();
    input.active_now = out.active.clone();
    input.hidden_by_us = out.hidden_natives.clone();
    let out2 = resolve(&input);
    assert!(!out2.active.contains(&"bash".to_string()));
    assert!(out2.restored_natives.is_empty());
}

#[test]
fn builtin_replaced_by_another_extension_is_never_hidden() {
    let tools = {
        let mut t = registry(&[], &[]);
        t.push(ToolEntry {
            name: "bash".into(),
            description: None,
            source: OTHER.into(),
        });
        t
    };
    let out = resolve(&snapshot(
        rules_cfg(rule(false, true, false)),
        Some(("faux", "faux-1")),
        tools,
    ));
    assert!(out.active.contains(&"bash".to_string()));
    assert!(out.hidden_natives.is_empty());
}

#[test]
fn first_matching_rule_wins() {
    let cfg = rules_cfg(json!([
        { "id": "a", "match": "faux-2", "patch": false, "shell": true, "code": false },
        { "id": "b", "match": "faux-*", "patch": true, "shell": false, "code": false },
        { "id": "c", "match": "*", "patch": false, "shell": false, "code": true }
    ]));
    let out = resolve(&snapshot(cfg.clone(), Some(("faux", "faux-1")), registry(&[], &[])));
    assert_eq!(out.diagnostics.rule_id.as_deref(), Some("b"));
    let out = resolve(&snapshot(cfg.clone(), Some(("faux", "faux-2")), registry(&[], &[])));
    assert_eq!(out.diagnostics.rule_id.as_deref(), Some("a"));
    let out = resolve(&snapshot(cfg.clone(), Some(("x", "gpt")), registry(&[], &[])));
    assert_eq!(out.diagnostics.rule_id.as_deref(), Some("c"));
    let out = resolve(&snapshot(cfg, None, registry(&[], &[])));
    assert!(out.diagnostics.rule_id.is_none(), "no model: nothing matches");
}

#[test]
fn provider_patterns() {
    let cfg = rules_cfg(json!([{ "id": "p", "match": "faux2/*", "patch": true, "shell": false, "code": false }]));
    assert_eq!(
        resolve(&snapshot(cfg.clone(), Some(("faux2", "m")), registry(&[], &[])))
            .diagnostics
            .rule_id
            .as_deref(),
        Some("p")
    );
    assert!(resolve(&snapshot(cfg.clone(), Some(("faux", "m")), registry(&[], &[])))
        .diagnostics
        .rule_id
        .is_none());
    let mut input = snapshot(cfg, Some(("faux2", "m")), registry(&[], &[]));
    input.model.as_mut().unwrap().provider = None;
    assert!(resolve(&input).diagnostics.rule_id.is_none());
}

#[test]
fn conflicts_disable_whole_groups_and_leave_theirs_alone() {
    // Another extension wins apply_patch, exec_command and exec.
    let tools = registry(&[APPLY_PATCH, EXEC_COMMAND, EXEC], &[]);
    let input = snapshot(
        rules_cfg(rule(true, true, true)),
        Some(("faux", "faux-1")),
        tools.clone(),
    );
    let out = resolve(&input);
    // Their names stay exactly as they were (active); our write_stdin / wait go away with their pair.
    for theirs in [APPLY_PATCH, EXEC_COMMAND, EXEC] {
        assert!(out.active.contains(&theirs.to_string()), "{theirs} untouched");
    }
    assert!(!out.active.contains(&WRITE_STDIN.to_string()));
    assert!(!out.active.contains(&WAIT.to_string()));
    assert!(out.visible_names.is_empty());
    assert!(out.admitted_names.is_empty());
    assert_eq!(
        sorted(&out.active),
        names(&["read", "bash", "edit", "write", APPLY_PATCH, EXEC_COMMAND, EXEC])
    );
    assert_eq!(out.features["applyPatch"]["reason"], "name-taken");
    assert_eq!(out.features["shellSessions"]["reason"], "name-taken");
    assert_eq!(out.features["codeMode"]["reason"], "name-taken");
    assert_eq!(
        out.notes,
        vec![
            "code-unavailable-did-not-promote-patch",
            "patch-unavailable-kept-native-editing",
            "shell-pair-unavailable",
            "code-pair-unavailable"
        ]
    );
    // An inactive foreign name is not activated either.
    let mut input2 = input.clone();
    input2.active_now.retain(|n| n != EXEC);
    assert!(!resolve(&input2).active.contains(&EXEC.to_string()));
}

#[test]
fn allowlist_missing_is_not_a_conflict_under_rules_but_is_under_legacy() {
    // `--tools read,bash,edit,write,exec,wait`: the shell pair and apply_patch are missing.
    let tools = registry(
        &[],
        &[APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN, FIND_TOOLS, "grep", "find", "ls"],
    );
    let out = resolve(&snapshot(
        rules_cfg(rule(true, true, true)),
        Some(("faux", "faux-1")),
        tools.clone(),
    ));
    assert_eq!(out.features["codeMode"]["effective"], "unavailable");
    assert_eq!(out.features["codeMode"]["reason"], "code-shell-pair-unavailable");
    assert_eq!(out.features["shellSessions"]["reason"], "shell-pair-unavailable");
    assert_eq!(
        out.features["applyPatch"]["reason"],
        "code-unavailable-did-not-promote-patch"
    );
    assert!(out.hidden_natives.is_empty(), "no route admitted: natives stay");
    assert_eq!(sorted(&out.active), names(&["read", "bash", "edit", "write"]));
    // Only patch requested, apply_patch filtered out.
    let out = resolve(&snapshot(
        rules_cfg(rule(true, false, false)),
        Some(("faux", "faux-1")),
        tools.clone(),
    ));
    assert_eq!(out.features["applyPatch"]["reason"], "patch-unavailable");
    assert_eq!(out.notes, vec!["patch-unavailable"]);
    // Legacy flags report both cases as conflicting-tool-name.
    let legacy = json!({ "applyPatch": { "enabled": true }, "shellSessions": { "enabled": true } });
    let out = resolve(&snapshot(legacy, Some(("faux", "faux-1")), tools));
    assert_eq!(out.features["applyPatch"]["reason"], "conflicting-tool-name");
    assert_eq!(out.features["shellSessions"]["reason"], "conflicting-tool-name");
    assert!(out.notes.is_empty());
}

#[test]
fn code_with_patch_available_but_apply_patch_missing() {
    let tools = registry(&[], &[APPLY_PATCH]);
    let out = resolve(&snapshot(
        rules_cfg(rule(true, false, true)),
        Some(("faux", "faux-1")),
        tools,
    ));
    assert_eq!(out.notes, vec!["patch-unavailable"]);
    assert_eq!(sorted(&out.hidden_natives), names(&["bash"]));
    assert_eq!(out.features["codeMode"]["effective"], "active");
    assert_eq!(out.features["applyPatch"]["effective"], "unavailable");
}

#[test]
fn legacy_flags_only_add() {
    let cfg = json!({ "applyPatch": { "enabled": true }, "shellSessions": { "enabled": true }, "codeMode": { "enabled": true } });
    let out = resolve(&snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[])));
    assert_eq!(
        sorted(&out.active),
        names(&[
            "read",
            "bash",
            "edit",
            "write",
            APPLY_PATCH,
            EXEC_COMMAND,
            WRITE_STDIN,
            EXEC,
            WAIT
        ])
    );
    assert!(out.hidden_natives.is_empty());
    assert_eq!(serde_json::to_value(&out.diagnostics).unwrap()["source"], "legacy");
    assert_eq!(out.nested_names, vec![APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN]);
    // All off: every toolkit tool is deactivated, builtins stay.
    let out = resolve(&snapshot(json!({}), Some(("faux", "faux-1")), registry(&[], &[])));
    assert_eq!(sorted(&out.active), names(&["read", "bash", "edit", "write"]));
}

#[test]
fn rules_replace_legacy_flags() {
    let mut cfg = rules_cfg(json!([]));
    cfg["applyPatch"] = json!({ "enabled": true });
    let out = resolve(&snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[])));
    assert!(
        !out.active.contains(&APPLY_PATCH.to_string()),
        "with execution present the flag has no authority"
    );
    assert_eq!(out.features["applyPatch"]["configured"], false);
    assert_eq!(out.features["applyPatch"]["reason"], "");
}

#[test]
fn discovery_holds_deferred_names_until_loaded() {
    let mut cfg = rules_cfg(rule(true, true, false));
    cfg["toolDiscovery"] = json!({ "enabled": true, "deferred": [APPLY_PATCH, EXEC_COMMAND] });
    let mut input = snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[]));
    let out = resolve(&input);
    assert_eq!(out.deferred_names, vec![APPLY_PATCH, EXEC_COMMAND]);
    assert!(out.active.contains(&FIND_TOOLS.to_string()));
    assert!(
        out.active.contains(&WRITE_STDIN.to_string()),
        "a non-deferred sibling stays active"
    );
    assert!(!out.active.contains(&APPLY_PATCH.to_string()));
    assert_eq!(out.features["applyPatch"]["effective"], "deferred");
    assert_eq!(out.features["applyPatch"]["reason"], "");
    assert_eq!(out.features["shellSessions"]["effective"], "deferred");
    // Natives stay while the replacement is held back.
    assert!(out.active.contains(&"edit".to_string()) && out.active.contains(&"bash".to_string()));
    input.loaded_deferred = vec![APPLY_PATCH.into()];
    let out = resolve(&input);
    assert!(out.active.contains(&APPLY_PATCH.to_string()));
    assert!(!out.active.contains(&"edit".to_string()));
    assert_eq!(out.features["applyPatch"]["effective"], "active");
    assert_eq!(out.loaded_deferred, vec![APPLY_PATCH]);
    // Disabling discovery forgets the loads and shows everything normally.
    input.config.tool_discovery.enabled = false;
    let out = resolve(&input);
    assert!(out.loaded_deferred.is_empty());
    assert!(!out.active.contains(&FIND_TOOLS.to_string()));
    assert!(out.active.contains(&EXEC_COMMAND.to_string()));
}

#[test]
fn find_tools_conflict_restores_normal_projection() {
    let mut cfg = rules_cfg(rule(true, false, false));
    cfg["toolDiscovery"] = json!({ "enabled": true, "deferred": [APPLY_PATCH] });
    let out = resolve(&snapshot(
        cfg.clone(),
        Some(("faux", "faux-1")),
        registry(&[FIND_TOOLS], &[]),
    ));
    assert!(out.active.contains(&APPLY_PATCH.to_string()));
    assert_eq!(out.features["toolDiscovery"]["reason"], "name-taken");
    let out = resolve(&snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[FIND_TOOLS])));
    assert_eq!(
        out.features["toolDiscovery"]["reason"], "conflicting-tool-name",
        "filtered find_tools is missing, not taken"
    );
}

#[test]
fn diagnostics_record_shape() {
    let mut input = snapshot(
        rules_cfg(rule(true, false, true)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    input.has_ui = true;
    let v = serde_json::to_value(resolve(&input).diagnostics).unwrap();
    assert_eq!(
        v,
        json!({
            "version": 1,
            "model": { "provider": "faux", "id": "faux-1", "api": "faux-api" },
            "source": "rules",
            "ruleId": "r",
            "requested": { "patch": true, "shell": false, "code": true },
            "effective": { "directPatch": false, "nestedPatch": true, "directShell": false, "code": true },
            "admittedNames": ["apply_patch", "exec_command", "write_stdin", "exec", "wait"],
            "visibleNames": ["exec", "wait"],
            "nestedNames": ["apply_patch", "exec_command", "write_stdin"],
            "hiddenNatives": ["bash", "edit", "write"],
            "notes": [],
            "approvalTransport": "dialog",
            "cleanupPending": false,
            "configRevision": "abc123",
            "toolkit": { "name": "pi-codex-toolkit", "version": env!("CARGO_PKG_VERSION") }
        })
    );
    input.model = None;
    input.has_ui = false;
    let v = serde_json::to_value(resolve(&input).diagnostics).unwrap();
    assert!(v.get("model").is_none() && v.get("ruleId").is_none());
    assert_eq!(v["approvalTransport"], "unavailable");
}

#[test]
fn network_features_status_and_off_reason() {
    let cfg = json!({ "webSearch": { "enabled": true }, "computerUse": { "enabled": true }, "imageGeneration": { "enabled": false } });
    let mut input = snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[]));
    let out = resolve(&input);
    // Built now: the faux model is not an official route (no sidecar executor configured either).
    assert_eq!(
        out.features["webSearch"],
        json!({ "configured": true, "effective": "unavailable", "reason": "unsupported-provider" })
    );
    assert_eq!(out.features["computerUse"]["reason"], "unsupported-platform");
    // An off feature says so in plain words, never "not built".
    assert_eq!(
        out.features["imageGeneration"],
        json!({ "configured": false, "effective": "off", "reason": "off in config" })
    );
    assert_eq!(out.features["remoteCompaction"]["reason"], "off in config");
    input.platform = Some("darwin".into());
    input.has_ui = true;
    assert_eq!(resolve(&input).features["computerUse"]["reason"], "not-registered");
}

#[test]
fn unchanged_projection_reports_unchanged() {
    let mut input = snapshot(
        rules_cfg(rule(true, false, false)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    let out = resolve(&input);
    assert!(out.changed);
    input.active_now = out.active.clone();
    input.hidden_by_us = out.hidden_natives.clone();
    let again = resolve(&input);
    assert!(!again.changed);
    assert_eq!(again.active, out.active);
    assert_eq!(again.hidden_natives, out.hidden_natives, "still hidden by us");
}

#[test]
fn status_golden_rules() {
    let mut cfg = rules_cfg(json!([
        { "id": "astra", "match": "faux-*", "patch": true, "shell": false, "code": true }
    ]));
    cfg["codeMode"] = json!({ "approvalMode": "always" });
    cfg["toolDiscovery"] = json!({ "enabled": true });
    let input = snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[]));
    let want = "\
Pi Codex Toolkit status
model: faux-1  provider: faux  api: faux-api
config: /agent/extensions/pi-codex-toolkit.json

Web Search
  configured: off
  effective: off
  reason: Turned off: turn it on with /pct config (webSearch.enabled). [off-in-config]
  requested backend: auto
  effective backend: off
  web search executor: —
  web search executor effort: —

Remote Compaction
  configured: off
  effective: off
  reason: Turned off: turn it on with /pct config (remoteCompaction.enabled). [off-in-config]

Image Generation
  configured: off
  effective: off
  reason: Turned off: turn it on with /pct config (imageGeneration.enabled). [off-in-config]
  backend: —

Apply Patch
  configured: on
  effective: active
  route: nested (inside code cells only)

Computer Use
  configured: off
  effective: off
  reason: Turned off: turn it on with /pct config (computerUse.enabled). [off-in-config]
  transport: —

Shell Sessions
  configured: off
  effective: off
  reason: Execution rule astra (match faux-*) does not ask for shell: change the rule with /pct config → Execution rules. [rule-does-not-ask]
  note: pipes only (no TTY); a command starts exactly once and is never replayed

Code Mode
  configured: on
  effective: active
  nested apply_patch approval: always
  note: nested calls are dispatched by the cell: per-call tool hooks and third-party permission interceptors do not see them

Tool Discovery
  configured: on
  effective: active
  managed deferred: 7
  loaded this session: 0
  note: only explicitly managed toolkit-owned tools can be loaded

Host Tools
  configured: off
  effective: off
  reason: Turned off: turn it on with /pct config (hostTools.enabled). [off-in-config]
  permission mode: ask (hostTools.permissionMode: the older key, still read; permissions.mode wins when set)
  tools: —
  builtins replaced: none
  operation mode: Agent

Interactive Tools
  configured: off
  effective: off
  reason: Turned off: turn it on with /pct config (interactiveTools.enabled). [off-in-config]
  tools: —
  plan mode: allowed (plan-safe: they change nothing)

Debug: off

Execution rules:
  matched rule: astra (match faux-*)
  requested: patch, code
  effective: nested patch, code
  bash hidden: yes
  edit/write hidden: yes
  notes: none";
    assert_eq!(status_text(&input), want);
}

#[test]
fn status_golden_errors_and_legacy() {
    let cfg = json!({ "applyPatch": { "enabled": true }, "shellSessions": { "enabled": true } });
    let mut input = snapshot(cfg, None, registry(&[EXEC_COMMAND], &[]));
    input.config_error = Some(ConfigError {
        code: "invalid-config".into(),
        detail: Some("applyPatch.enabled must be true or false".into()),
    });
    input.apply_error = Some("cleanup-incomplete (Code Mode cleanup is still pending)".into());
    let text = status_text(&input);
    let head = "\
Pi Codex Toolkit status
model: none (current-model-missing)
config: /agent/extensions/pi-codex-toolkit.json
Config error: invalid-config (applyPatch.enabled must be true or false)
Apply error: cleanup-incomplete (Code Mode cleanup is still pending)
";
    assert!(text.starts_with(head), "{text}");
    assert!(
        text.contains("\nApply Patch\n  configured: on\n  effective: active\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nShell Sessions\n  configured: on\n  effective: unavailable\n  reason: exec_command is registered by "
        ),
        "{text}"
    );
    assert!(!text.contains("Execution rules:"), "legacy config has no rules block");
    input.config_error = Some(ConfigError {
        code: "invalid-json".into(),
        detail: None,
    });
    assert!(status_text(&input).contains("\nConfig error: invalid-json\n"));
}

#[test]
fn status_golden_unmatched_block() {
    let input = snapshot(
        rules_cfg(rule(true, true, true)),
        Some(("faux", "gpt-x")),
        registry(&[], &[]),
    );
    let text = status_text(&input);
    assert!(
        text.ends_with(
            "\
Execution rules:
  matched rule: none (the current model matches no rule)
  requested: none
  effective: none
  bash hidden: no
  edit/write hidden: no
  notes: none"
        ),
        "{text}"
    );
    assert!(text.contains("\nApply Patch\n  configured: off\n  effective: off\n  reason: No execution rule matches the current model: add one with /pct config → Execution rules. [no-matching-rule]\n"));
}

#[test]
fn editor_helpers() {
    use super::{editor_rows, editor_rules};
    assert_eq!(editor_rules(&json!({})), json!([]));
    let legacy = editor_rules(&json!({ "applyPatch": { "enabled": true }, "codeMode": { "enabled": true } }));
    assert_eq!(
        legacy,
        json!([{ "id": "rule-1", "match": "*", "patch": true, "shell": false, "code": true }])
    );
    assert_eq!(editor_rows(&legacy), vec!["1. rule-1  *  P+C"]);
    let rules = json!([{ "id": "a", "match": "gpt-*", "patch": true, "shell": true, "code": true }, { "id": "b", "match": "x", "patch": false, "shell": false, "code": false }]);
    assert_eq!(
        editor_rows(&editor_rules(&rules_cfg(rules))),
        vec!["1. a  gpt-*  P+S+C", "2. b  x  —"]
    );
}

#[test]
fn preview_text_for_draft_rules() {
    use super::preview_text;
    let input = snapshot(
        rules_cfg(rule(false, true, false)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    assert_eq!(
        preview_text(&input),
        "\
Preview for faux/faux-1:
  matched rule: r (match faux-*)
  requested: shell
  effective: direct shell
  bash hidden: yes
  edit/write hidden: no
  notes: none"
    );
    let legacy = snapshot(json!({}), None, registry(&[], &[]));
    let text = preview_text(&legacy);
    assert!(
        text.starts_with("Preview for no current model (current-model-missing):\n  no execution rules"),
        "{text}"
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_rules() -> impl Strategy<Value = Value> {
        prop::collection::vec((prop::sample::select(vec!["*", "faux-?", "faux/*", "x*", "faux-1", "other/*"]), any::<bool>(), any::<bool>(), any::<bool>()), 0..4)
            .prop_map(|rs| {
                Value::Array(
                    rs.into_iter()
                        .enumerate()
                        .map(|(i, (m, p, s, c))| json!({ "id": format!("r{i}"), "match": m, "patch": p, "shell": s, "code": c }))
                        .collect(),
                )
            })
    }

    proptest! {
        /// Whatever the rules, registry and session state: foreign names keep their state, `read` is never
        /// removed, only builtins are hidden, a second sync over the result changes nothing.
        #[test]
        fn projection_invariants(
            rules in arb_rules(),
            legacy in any::<bool>(),
            flags in (any::<bool>(), any::<bool>(), any::<bool>()),
            discovery in any::<bool>(),
            deferred in prop::sample::subsequence(vec![APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN, EXEC, WAIT], 0..=5),
            foreign in prop::sample::subsequence(vec![APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN, EXEC, WAIT, FIND_TOOLS, "bash"], 0..=3),
            missing in prop::sample::subsequence(vec![APPLY_PATCH, EXEC_COMMAND, WRITE_STDIN, EXEC, WAIT, FIND_TOOLS, "edit"], 0..=3),
            loaded in prop::sample::subsequence(vec![APPLY_PATCH, EXEC_COMMAND, EXEC], 0..=3),
            drop_active in prop::sample::subsequence(vec!["bash", "edit", "read", APPLY_PATCH, EXEC], 0..=2),
            model in prop::sample::select(vec![Some(("faux", "faux-1")), Some(("other", "x1")), None]),
        ) {
            let mut cfg = if legacy {
                json!({ "applyPatch": { "enabled": flags.0 }, "shellSessions": { "enabled": flags.1 }, "codeMode": { "enabled": flags.2 } })
            } else {
                rules_cfg(rules)
            };
            cfg["toolDiscovery"] = json!({ "enabled": discovery, "deferred": deferred });
            let mut input = snapshot(cfg, model, registry(&foreign, &missing));
            input.active_now.retain(|n| !drop_active.contains(&n.as_str()));
            input.loaded_deferred = loaded.iter().map(|s| s.to_string()).collect();
            let out = resolve(&input);
            let reg = super::super::ownership::Registry::new(&input.tools, ME);
            for t in &input.tools {
                if t.source != ME && t.source != "builtin" {
                    prop_assert_eq!(input.active_now.contains(&t.name), out.active.contains(&t.name), "foreign {} changed", t.name);
                }
            }
            if input.active_now.contains(&"read".to_string()) {
                prop_assert!(out.active.contains(&"read".to_string()));
            }
            for h in &out.hidden_natives {
                prop_assert!(["bash", "edit", "write"].contains(&h.as_str()));
                prop_assert_eq!(reg.owner(h), super::super::ownership::Owner::Builtin);
                prop_assert!(!out.active.contains(h));
            }
            if legacy {
                prop_assert!(out.hidden_natives.is_empty());
            }
            for v in &out.visible_names {
                prop_assert!(out.active.contains(v));
                prop_assert_eq!(reg.owner(v), super::super::ownership::Owner::Ours);
            }
            let mut again = input.clone();
            again.active_now = out.active.clone();
            again.hidden_by_us = out.hidden_natives.clone();
            again.loaded_deferred = out.loaded_deferred.clone();
            let out2 = resolve(&again);
            prop_assert!(!out2.changed, "second sync changed {:?} -> {:?}", out.active, out2.active);
            prop_assert_eq!(out2.hidden_natives, out.hidden_natives);
        }
    }
}

#[test]
fn glue_status_lines_replace_the_generic_note() {
    let mut input = snapshot(
        json!({ "shellSessions": { "enabled": true } }),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    input.extra_lines.insert(
        "shellSessions".into(),
        vec![
            "jobs: 1 running, 0 finished and unread".into(),
            "cleanup pending: no".into(),
        ],
    );
    let text = status_text(&input);
    assert!(
        text.contains("\nShell Sessions\n  configured: on\n  effective: active\n  jobs: 1 running, 0 finished and unread\n  cleanup pending: no\n"),
        "{text}"
    );
    assert!(text.contains("\nCode Mode\n  configured: off\n  effective: off\n  reason: Turned off: turn it on with /pct config (codeMode.enabled). [off-in-config]\n  nested apply_patch approval: confirm\n  note: nested calls"));
}

#[test]
fn no_usable_shell_takes_the_pair_down() {
    let mut input = snapshot(
        json!({ "shellSessions": { "enabled": true }, "codeMode": { "enabled": true } }),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    input.shell_available = Some(false);
    let out = resolve(&input);
    assert_eq!(
        out.features["shellSessions"],
        json!({ "configured": true, "effective": "unavailable", "reason": "shell-unavailable" })
    );
    assert!(!out.active.contains(&EXEC_COMMAND.to_string()));
    assert!(out.nested_names.is_empty());
    let mut rules = snapshot(
        rules_cfg(rule(false, true, true)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    );
    rules.shell_available = Some(false);
    let out = resolve(&rules);
    assert_eq!(out.features["shellSessions"]["reason"], "shell-unavailable");
    assert_eq!(out.features["codeMode"]["reason"], "code-shell-pair-unavailable");
    assert!(out.hidden_natives.is_empty(), "bash stays when no route is admitted");
}

#[test]
fn off_features_say_why_in_plain_words() {
    let reason = |text: &str, title: &str| {
        let start = text
            .find(&format!("\n{title}\n"))
            .unwrap_or_else(|| panic!("{title} in {text}"));
        // The feature's block ends at the next blank line; "-" when it has no reason line.
        let block = text[start + 1..].split("\n\n").next().unwrap();
        block
            .lines()
            .find_map(|l| l.strip_prefix("  reason: "))
            .unwrap_or("-")
            .to_string()
    };
    // Legacy flags: the setting to turn on.
    let legacy = status_text(&snapshot(json!({}), Some(("faux", "faux-1")), registry(&[], &[])));
    for (title, key) in [
        ("Apply Patch", "applyPatch"),
        ("Shell Sessions", "shellSessions"),
        ("Code Mode", "codeMode"),
        ("Tool Discovery", "toolDiscovery"),
    ] {
        assert_eq!(
            reason(&legacy, title),
            format!("Turned off: turn it on with /pct config ({key}.enabled). [off-in-config]")
        );
    }
    // Network and desktop features that are off say so plainly (never "not built").
    for (title, key) in [
        ("Web Search", "webSearch"),
        ("Remote Compaction", "remoteCompaction"),
        ("Image Generation", "imageGeneration"),
        ("Computer Use", "computerUse"),
    ] {
        assert_eq!(
            reason(&legacy, title),
            format!("Turned off: turn it on with /pct config ({key}.enabled). [off-in-config]")
        );
    }
    // Rules: the matched rule that does not ask for it, no matching rule, no model.
    let matched = status_text(&snapshot(
        rules_cfg(rule(false, true, false)),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    ));
    assert_eq!(
        reason(&matched, "Code Mode"),
        "Execution rule r (match faux-*) does not ask for code: change the rule with /pct config → Execution rules. [rule-does-not-ask]"
    );
    assert_eq!(reason(&matched, "Shell Sessions"), "-");
    let no_model = status_text(&snapshot(rules_cfg(rule(true, true, true)), None, registry(&[], &[])));
    assert_eq!(
        reason(&no_model, "Apply Patch"),
        "No model is selected: pick one with /model. [current-model-missing]"
    );
    // Active features have no reason line.
    let on = status_text(&snapshot(
        json!({ "applyPatch": { "enabled": true } }),
        Some(("faux", "faux-1")),
        registry(&[], &[]),
    ));
    assert_eq!(reason(&on, "Apply Patch"), "-");
}

/// Route facts for the network status tests.
fn route(provider: &str, api: &str, base: &str, auth: crate::net::route::AuthKind) -> crate::net::route::RouteFacts {
    crate::net::route::RouteFacts {
        provider: Some(provider.into()),
        id: Some("gpt-x".into()),
        api: Some(api.into()),
        base_url: Some(base.into()),
        auth: Some(auth),
    }
}

#[test]
fn network_status_reasons_and_tools() {
    use crate::net::route::AuthKind;
    let status_line = |text: &str, title: &str, key: &str| -> String {
        let start = text.find(&format!("\n{title}\n")).unwrap();
        let line = text[start..]
            .lines()
            .find(|l| l.starts_with(&format!("  {key}: ")))
            .unwrap();
        let value = &line[key.len() + 4..];
        // A reason line ends with its stable code in brackets.
        match (key, value.rfind(" [")) {
            ("reason", Some(i)) => value[i + 2..value.len() - 1].to_string(),
            _ => value.to_string(),
        }
    };
    let cfg = json!({ "webSearch": { "enabled": true }, "imageGeneration": { "enabled": true } });
    // Our registry plus the two network tools (registered by src/pi/net).
    let with_net = |foreign: &[&str]| {
        let mut v = registry(foreign, &[]);
        for n in [WEB_SEARCH, GENERATE_IMAGE] {
            if !foreign.contains(&n) {
                v.push(ToolEntry {
                    name: n.into(),
                    description: None,
                    source: ME.into(),
                });
            }
        }
        v
    };
    let mut input = snapshot(cfg.clone(), Some(("openai", "gpt-x")), with_net(&[]));
    // unofficial-endpoint: a models.json baseUrl pointing elsewhere.
    input.net.current = Some(route(
        "openai",
        "openai-responses",
        "http://127.0.0.1:9999/v1",
        AuthKind::ApiKey,
    ));
    let text = status_text(&input);
    assert_eq!(status_line(&text, "Web Search", "reason"), "unofficial-endpoint");
    assert_eq!(status_line(&text, "Web Search", "effective backend"), "unavailable");
    assert_eq!(status_line(&text, "Image Generation", "reason"), "unofficial-endpoint");
    // credential-mismatch: OAuth on the API-key route.
    input.net.current = Some(route(
        "openai",
        "openai-responses",
        "https://api.openai.com/v1",
        AuthKind::OAuth,
    ));
    assert_eq!(
        status_line(&status_text(&input), "Web Search", "reason"),
        "credential-mismatch"
    );
    // current-model-missing.
    let mut none = snapshot(cfg.clone(), None, registry(&[], &[]));
    none.net = Default::default();
    assert_eq!(
        status_line(&status_text(&none), "Web Search", "reason"),
        "current-model-missing"
    );
    // An official route: native search (no tool), image via the API key; the image tool is deferred by default
    // only while discovery is on, so here it is active and visible.
    input.net.current = Some(route(
        "openai",
        "openai-responses",
        "https://api.openai.com/v1",
        AuthKind::ApiKey,
    ));
    let text = status_text(&input);
    assert_eq!(status_line(&text, "Web Search", "effective"), "active");
    assert_eq!(status_line(&text, "Web Search", "effective backend"), "native");
    assert_eq!(status_line(&text, "Image Generation", "backend"), "api-key");
    let out = resolve(&input);
    assert!(!out.active.contains(&WEB_SEARCH.to_string()));
    assert!(out.active.contains(&GENERATE_IMAGE.to_string()));
    // find_tools explains why the sidecar tool is not offered under the native backend.
    {
        let d = super::decide::decide(&input);
        let reg = super::ownership::Registry::new(&input.tools, &input.identity);
        assert_eq!(
            crate::discovery::eligibility::state_of(WEB_SEARCH, &input, &reg, &d),
            crate::discovery::eligibility::State::Unavailable("native-backend-in-use".into())
        );
    }
    // Sidecar forced: the tool becomes visible; a third-party openai_web_search is a conflict.
    let mut sc = cfg.clone();
    sc["webSearch"]["backend"] = json!("sidecar");
    let mut side = snapshot(sc.clone(), Some(("openai", "gpt-x")), with_net(&[]));
    side.net = input.net.clone();
    assert!(resolve(&side).active.contains(&WEB_SEARCH.to_string()));
    assert_eq!(
        status_line(&status_text(&side), "Web Search", "effective backend"),
        "sidecar"
    );
    let mut conflict = snapshot(sc, Some(("openai", "gpt-x")), with_net(&[WEB_SEARCH]));
    conflict.net = input.net.clone();
    assert_eq!(
        status_line(&status_text(&conflict), "Web Search", "reason"),
        "name-taken"
    );
    // Theirs stays active (never disabled); ours is not admitted.
    assert!(!resolve(&conflict).admitted_names.contains(&WEB_SEARCH.to_string()));
    // A plain third-party web_search is only a warning.
    input.tools.push(ToolEntry {
        name: "web_search".into(),
        description: None,
        source: "/ext/pi-web-access/index.ts".into(),
    });
    let text = status_text(&input);
    assert!(
        text.contains("  warning: another extension's web_search tool is also active"),
        "{text}"
    );
    assert_eq!(status_line(&text, "Web Search", "effective"), "active");
}

#[test]
fn remote_compaction_status_follows_the_codex_oauth_route() {
    use crate::net::route::AuthKind;
    let cfg = json!({ "remoteCompaction": { "enabled": true } });
    let mut input = snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[]));
    let st = |i: &ResolveInput| resolve(i).features["remoteCompaction"].clone();
    assert_eq!(st(&input)["reason"], "current-model-missing");
    input.net.current = Some(route(
        "openai-codex",
        "openai-codex-responses",
        "https://chatgpt.com/backend-api",
        AuthKind::OAuth,
    ));
    assert_eq!(
        st(&input),
        json!({ "configured": true, "effective": "active", "reason": "" })
    );
    input.net.current = Some(route(
        "openai-codex",
        "openai-codex-responses",
        "https://chatgpt.com/backend-api",
        AuthKind::ApiKey,
    ));
    assert_eq!(st(&input)["reason"], "credential-mismatch");
    input.net.current = Some(route(
        "openai",
        "openai-responses",
        "https://api.openai.com/v1",
        AuthKind::ApiKey,
    ));
    assert_eq!(
        st(&input),
        json!({ "configured": true, "effective": "unavailable", "reason": "unsupported-provider" })
    );
    input.net.current = Some(route(
        "openai-codex",
        "openai-codex-responses",
        "https://chatgpt.com:8443/backend-api",
        AuthKind::OAuth,
    ));
    assert_eq!(st(&input)["reason"], "unofficial-endpoint");
}

/// A registry where the toolkit registered the six Computer Use tools.
fn computer_use_registry() -> Vec<ToolEntry> {
    let mut reg = registry(&[], &[]);
    for n in COMPUTER_USE {
        reg.push(ToolEntry {
            name: n.into(),
            description: None,
            source: ME.into(),
        });
    }
    reg
}

#[test]
fn computer_use_on_darwin_with_its_six_tools_is_live_and_never_elsewhere() {
    let reg = computer_use_registry();
    let cfg = json!({ "computerUse": { "enabled": true }, "toolDiscovery": { "enabled": false } });
    let mut input = snapshot(cfg.clone(), Some(("faux", "faux-1")), reg.clone());
    input.platform = Some("darwin".into());
    input.has_ui = true;
    let out = resolve(&input);
    assert_eq!(
        out.features["computerUse"],
        json!({ "configured": true, "effective": "active", "reason": "" })
    );
    assert!(COMPUTER_USE.iter().all(|n| out.active.iter().any(|a| a == n)));
    assert!(super::status::status_text(&input).contains("  transport: codex app-server --stdio"));
    // Under Tool Discovery the six are deferred by default (all or none).
    let mut dcfg = rules_cfg(json!([]));
    dcfg["computerUse"] = json!({ "enabled": true });
    dcfg["toolDiscovery"] = json!({ "enabled": true });
    let mut deferred = snapshot(dcfg, Some(("faux", "faux-1")), reg.clone());
    deferred.platform = Some("darwin".into());
    deferred.has_ui = true;
    let out = resolve(&deferred);
    assert_eq!(out.features["computerUse"]["effective"], "deferred");
    assert!(!out.active.iter().any(|a| a.starts_with("computer_use_")));
    // Off macOS: never active, even when registered.
    input.platform = Some("linux".into());
    let out = resolve(&input);
    assert_eq!(out.features["computerUse"]["reason"], "unsupported-platform");
    assert!(!out.active.iter().any(|a| a.starts_with("computer_use_")));
}

#[test]
fn computer_use_status_activation_and_find_tools_name_each_missing_prerequisite() {
    let reg = computer_use_registry();
    let cfg = json!({ "computerUse": { "enabled": true }, "toolDiscovery": { "enabled": false } });
    let live = || {
        let mut i = snapshot(cfg.clone(), Some(("faux", "faux-1")), reg.clone());
        i.platform = Some("darwin".into());
        i.has_ui = true;
        if let Some(m) = i.model.as_mut() {
            m.input = Some(vec!["text".into(), "image".into()]);
        }
        i
    };
    assert_eq!(resolve(&live()).features["computerUse"]["effective"], "active");
    type Change = Box<dyn Fn(&mut ResolveInput)>;
    let cases: Vec<(&str, Change)> = vec![
        ("unsupported-platform", Box::new(|i| i.platform = Some("linux".into()))),
        ("no-interactive-ui", Box::new(|i| i.has_ui = false)),
        ("current-model-missing", Box::new(|i| i.model = None)),
        (
            "model-has-no-image-input",
            Box::new(|i| i.model.as_mut().unwrap().input = Some(vec!["text".into()])),
        ),
        (
            "missing-chatgpt-desktop-component",
            Box::new(|i| i.computer_use_probe = Some("missing-chatgpt-desktop-component".into())),
        ),
        (
            "missing-computer-use-helper",
            Box::new(|i| i.computer_use_probe = Some("missing-computer-use-helper".into())),
        ),
    ];
    for (reason, change) in cases {
        let mut i = live();
        change(&mut i);
        let out = resolve(&i);
        assert_eq!(
            out.features["computerUse"],
            json!({ "configured": true, "effective": "unavailable", "reason": reason }),
            "{reason}"
        );
        assert!(!out.active.iter().any(|a| a.starts_with("computer_use_")), "{reason}");
        assert!(
            super::status::status_text(&i).contains(&format!(" [{reason}]")),
            "{reason}"
        );
        assert_eq!(super::decide::computer_use_blocker(&i), Some(reason));
    }
}
