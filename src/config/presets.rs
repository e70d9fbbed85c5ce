//! The `/pct config` presets and the overlap warning (docs/config.md §Presets).
//!
//! Why: the toolkit offers several families for one capability (Pi's own edit/write/bash, the Codex route's
//! apply_patch/exec_command/code cells, the host tools' Read…Bash). A user who turns on two of them gives the
//! model three ways to edit a file and nothing telling it which to pick. A preset switches one family on and the
//! overlapping ones off, in one step; the warning names any overlap a hand-edited config still has.

use serde_json::{json, Map, Value};

/// One preset as the menu shows it.
pub struct Preset {
    /// Stable key (tests, docs).
    pub key: &'static str,
    /// Menu label.
    pub label: &'static str,
    /// What the model gets, one line.
    pub summary: &'static str,
    /// What the preset leaves off or untouched, one line: nothing it does not name changes (the menu shows it, and
    /// offers to turn the extras on with [`apply_with_extras`]).
    pub leaves_off: &'static str,
}

/// The sections a preset turns on when asked to (`/pct config` asks after the pick): the tools that talk to the user
/// and the Task subagents (docs/interactive.md, docs/agents.md). No preset turns them on unasked.
pub const EXTRAS: [&str; 2] = ["interactiveTools", "subagents"];

/// Every preset, in menu order.
pub const PRESETS: [Preset; 3] = [
    Preset {
        key: "codex",
        label: "Codex tools",
        summary: "apply_patch, exec_command/write_stdin and code cells replace Pi's edit, write and bash; Host Tools off",
        leaves_off: "Host Tools (Read, Write, Edit, Bash) off; Interactive Tools, Task subagents and the network and desktop extras as they are",
    },
    Preset {
        key: "host",
        label: "Host tools",
        summary: "Read, Write, Edit and Bash with permissions replace Pi's tools; Glob, Grep and the Task tools load on demand (find_tools); Codex route off",
        leaves_off: "apply_patch, exec_command and code cells off; Interactive Tools, Task subagents and the network and desktop extras as they are",
    },
    Preset {
        key: "pi",
        label: "Pi's own + extras",
        summary: "Pi's read, edit, write and bash stay; the network and desktop extras keep their settings",
        leaves_off: "Host Tools, apply_patch, exec_command and code cells off; Interactive Tools and Task subagents as they are",
    },
];

/// The id of the execution rule the Codex preset writes.
pub const CODEX_RULE_ID: &str = "codex-tools";

/// Applies preset `key` to a raw config: the families it replaces are switched off, unrelated settings (network
/// features, approval modes, discovery's deferred list, unknown fields) are kept. `Err` for an unknown key.
pub fn apply(raw: &Value, key: &str) -> Result<Value, String> {
    let mut root: Map<String, Value> = raw.as_object().cloned().unwrap_or_default();
    let set = |root: &mut Map<String, Value>, section: &str, field: &str, v: Value| {
        let s = root.entry(section.to_string()).or_insert_with(|| json!({}));
        if !s.is_object() {
            *s = json!({});
        }
        s.as_object_mut().expect("an object").insert(field.into(), v);
    };
    match key {
        "codex" => {
            root.insert(
                "execution".into(),
                json!({"version": 1, "rules": [
                    {"id": CODEX_RULE_ID, "match": "*", "patch": true, "shell": true, "code": true}
                ]}),
            );
            for s in ["applyPatch", "shellSessions", "codeMode"] {
                if let Some(Value::Object(m)) = root.get_mut(s) {
                    m.remove("enabled");
                }
            }
            set(&mut root, "hostTools", "enabled", json!(false));
        }
        "host" | "pi" => {
            root.remove("execution");
            for s in ["applyPatch", "shellSessions", "codeMode"] {
                set(&mut root, s, "enabled", json!(false));
            }
            set(&mut root, "hostTools", "enabled", json!(key == "host"));
            if key == "host" {
                // The first request carries Read, Write, Edit and Bash; the rest load through find_tools
                // (docs/rules.md "On-demand host tools").
                set(&mut root, "toolDiscovery", "enabled", json!(true));
            }
        }
        other => return Err(format!("unknown preset {other:?}: use codex, host or pi")),
    }
    Ok(Value::Object(root))
}

/// [`apply`], and with `extras` also Interactive Tools (`asktool`, `TodoWrite`, `new_context`) and Task subagents
/// turned on ([`EXTRAS`]); without, they keep their settings.
pub fn apply_with_extras(raw: &Value, key: &str, extras: bool) -> Result<Value, String> {
    let mut out = apply(raw, key)?;
    if extras {
        let root = out.as_object_mut().expect("apply returns an object");
        for section in EXTRAS {
            let s = root.entry(section.to_string()).or_insert_with(|| json!({}));
            if !s.is_object() {
                *s = json!({});
            }
            s.as_object_mut()
                .expect("an object")
                .insert("enabled".into(), json!(true));
        }
    }
    Ok(out)
}

/// Which preset an effective config equals, if any (the menu marks it).
pub fn current(eff: &Value) -> Option<&'static str> {
    PRESETS
        .iter()
        .find(|p| {
            apply(eff, p.key)
                .map(|a| super::schema::effective(&a) == *eff)
                .unwrap_or(false)
        })
        .map(|p| p.key)
}

/// The overlaps of an effective config: two families the model would see side by side for one capability.
pub fn overlaps(eff: &Value) -> Vec<String> {
    let on = |p: &str| eff.pointer(p) == Some(&Value::Bool(true));
    let host = on("/hostTools/enabled");
    let mut out = Vec::new();
    if eff.get("execution").is_some() {
        // Under execution rules the routes hide Pi's tools and the host tools step aside: no overlap by design.
        return out;
    }
    let patch = on("/applyPatch/enabled");
    let shell = on("/shellSessions/enabled");
    if patch {
        let editors = if host { "Edit/Write" } else { "Pi's edit/write" };
        out.push(format!(
            "Apply Patch and {editors} are both on: the model gets two ways to edit files. Pick a preset (Codex tools or Host tools)."
        ));
    }
    if shell {
        let runner = if host { "Bash" } else { "Pi's bash" };
        out.push(format!(
            "Shell Sessions and {runner} are both on: the model gets two ways to run commands. Pick a preset (Codex tools or Host tools)."
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schema::{effective, validate};

    #[test]
    fn every_preset_writes_a_valid_config_that_reads_back_as_itself() {
        let start = json!({"webSearch": {"enabled": true}, "hostTools": {"permissionMode": "auto"}, "x": 1,
            "applyPatch": {"enabled": true}});
        for p in &PRESETS {
            let raw = apply(&start, p.key).unwrap();
            assert_eq!(validate(&raw), Ok(()), "{}", p.key);
            let eff = effective(&raw);
            assert_eq!(current(&eff), Some(p.key), "{}", p.key);
            assert!(overlaps(&eff).is_empty(), "{}: {:?}", p.key, overlaps(&eff));
            assert_eq!(eff["webSearch"]["enabled"], true, "extras are kept");
            assert_eq!(raw["x"], 1, "unknown fields are kept");
            assert_eq!(eff["hostTools"]["permissionMode"], "auto");
        }
    }

    #[test]
    fn extras_turn_interactive_tools_and_subagents_on_and_are_otherwise_left_alone() {
        let start = json!({"interactiveTools": {"enabled": false, "askTool": false}, "x": 1});
        for p in &PRESETS {
            let plain = effective(&apply_with_extras(&start, p.key, false).unwrap());
            assert_eq!(plain["interactiveTools"]["enabled"], false, "{}: left as it was", p.key);
            assert_eq!(plain["subagents"]["enabled"], false, "{}: left as it was", p.key);
            let raw = apply_with_extras(&start, p.key, true).unwrap();
            assert_eq!(validate(&raw), Ok(()), "{}", p.key);
            let eff = effective(&raw);
            assert_eq!(eff["interactiveTools"]["enabled"], true, "{}", p.key);
            assert_eq!(
                eff["interactiveTools"]["askTool"], false,
                "{}: the per-tool switches are kept",
                p.key
            );
            assert_eq!(eff["subagents"]["enabled"], true, "{}", p.key);
            assert_eq!(current(&eff), Some(p.key), "{}: still reads as the preset", p.key);
            assert!(
                !p.leaves_off.is_empty() && p.leaves_off.contains("Task subagents"),
                "{}",
                p.key
            );
        }
        assert!(apply_with_extras(&start, "nope", true).is_err());
    }

    #[test]
    fn presets_switch_one_family_on_and_the_others_off() {
        let codex = effective(&apply(&json!({"hostTools": {"enabled": true}}), "codex").unwrap());
        assert_eq!(codex["hostTools"]["enabled"], false);
        assert_eq!(
            codex["execution"]["rules"][0],
            json!({"id": "codex-tools", "match": "*", "patch": true, "shell": true, "code": true})
        );
        let host = effective(&apply(&codex, "host").unwrap());
        assert!(host.get("execution").is_none());
        assert_eq!(host["hostTools"]["enabled"], true);
        assert_eq!(host["applyPatch"]["enabled"], false);
        assert_eq!(
            host["toolDiscovery"]["enabled"], true,
            "Glob, Grep and the Task tools load on demand"
        );
        let pi = effective(&apply(&host, "pi").unwrap());
        assert_eq!(pi["hostTools"]["enabled"], false);
        assert!(pi.get("execution").is_none());
        assert_eq!(
            current(&effective(
                &json!({"hostTools": {"enabled": true}, "applyPatch": {"enabled": true}})
            )),
            None
        );
    }

    #[test]
    fn unknown_preset_is_refused() {
        assert_eq!(
            apply(&json!({}), "all"),
            Err("unknown preset \"all\": use codex, host or pi".into())
        );
    }

    #[test]
    fn overlapping_families_are_named() {
        let w = overlaps(&effective(
            &json!({"applyPatch": {"enabled": true}, "shellSessions": {"enabled": true},
            "hostTools": {"enabled": true}}),
        ));
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("Apply Patch and Edit/Write are both on"), "{}", w[0]);
        assert!(w[1].starts_with("Shell Sessions and Bash are both on"), "{}", w[1]);
        let w = overlaps(&effective(&json!({"applyPatch": {"enabled": true}})));
        assert!(w[0].contains("Pi's edit/write"), "{w:?}");
        assert!(overlaps(&effective(&json!({"hostTools": {"enabled": true}}))).is_empty());
        assert!(overlaps(&effective(&json!({"codeMode": {"enabled": true}}))).is_empty());
    }
}
