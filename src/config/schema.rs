//! Validation and defaults. Messages name the first offending field and never repeat the invalid value, because the
//! status line and reload message show them to the user and the model.

use serde_json::{json, Map, Value};

use crate::rules::names::{COMPUTER_USE, DEFERRABLE};

const THINKING: [&str; 8] = ["auto", "off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// `codeMode.longRunningSeconds`: bounds and default. Past it, a running code cell or background Bash task is
/// called out in the footer with its elapsed time and CPU (docs/render.md "Running work").
pub const LONG_RUNNING_SECONDS: (u64, u64, u64) = (10, 300, 86_400);

/// `codeMode.maxCellSeconds`: bounds and default (low, default, high). A code cell still running this long after
/// it started is stopped with `cell-timeout` (docs/code.md "Limits"), so a runaway `while (true)` cannot burn a core
/// for the rest of the session. The default leaves room for long builds and tests driven from a cell.
pub const MAX_CELL_SECONDS: (u64, u64, u64) = (10, 1_800, 86_400);

/// The all-off defaults a missing file means. A new file never contains `execution`.
pub fn defaults() -> Value {
    let mut deferred = vec![json!("openai_generate_image")];
    deferred.extend(COMPUTER_USE.iter().map(|n| json!(n)));
    json!({
        "webSearch": {"enabled": false, "backend": "auto", "mode": "live", "contextSize": "medium", "sidecarModel": null},
        "remoteCompaction": {"enabled": false},
        "imageGeneration": {"enabled": false},
        "applyPatch": {"enabled": false},
        "computerUse": {"enabled": false, "approvalMode": "confirm"},
        "shellSessions": {"enabled": false},
        "codeMode": {"enabled": false, "approvalMode": "confirm", "longRunningSeconds": LONG_RUNNING_SECONDS.1, "maxCellSeconds": MAX_CELL_SECONDS.1},
        "toolDiscovery": {"enabled": false, "deferred": deferred},
        "hostTools": {"enabled": false, "permissionMode": "ask"},
        "interactiveTools": {"enabled": false, "askTool": true, "todoWrite": true, "newContext": true},
        "subagents": {"enabled": false, "timeoutSeconds": crate::agents::limits::DEFAULT_TIMEOUT_SECONDS},
        "permissions": {"mode": null, "planSafeTools": [], "sensitivePaths": []},
        "worktrees": {"enabled": false, "init": null},
        "debug": false
    })
}

fn section<'a>(root: &'a Map<String, Value>, name: &str) -> Result<Option<&'a Map<String, Value>>, String> {
    match root.get(name) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(format!("{name} must be an object")),
    }
}

fn boolean(obj: &Map<String, Value>, path: &str, key: &str) -> Result<(), String> {
    match obj.get(key) {
        None | Some(Value::Bool(_)) => Ok(()),
        Some(_) => Err(format!("{path}.{key} must be true or false")),
    }
}

fn one_of(obj: &Map<String, Value>, path: &str, key: &str, allowed: &[&str]) -> Result<(), String> {
    match obj.get(key) {
        None => Ok(()),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
        Some(_) => Err(format!("{path}.{key} must be one of {}", allowed.join(", "))),
    }
}

/// Checks a raw config object; `Err` carries the first offending field with its requirement.
pub fn validate(root: &Value) -> Result<(), String> {
    let root = root
        .as_object()
        .ok_or_else(|| "configuration must be a JSON object".to_string())?;
    if let Some(ws) = section(root, "webSearch")? {
        boolean(ws, "webSearch", "enabled")?;
        one_of(ws, "webSearch", "backend", &["auto", "native", "sidecar"])?;
        one_of(ws, "webSearch", "mode", &["live", "cached"])?;
        one_of(ws, "webSearch", "contextSize", &["low", "medium", "high"])?;
        validate_sidecar(ws.get("sidecarModel"))?;
    }
    for name in ["remoteCompaction", "imageGeneration", "applyPatch", "shellSessions"] {
        if let Some(s) = section(root, name)? {
            boolean(s, name, "enabled")?;
        }
    }
    for name in ["computerUse", "codeMode"] {
        if let Some(s) = section(root, name)? {
            boolean(s, name, "enabled")?;
            one_of(s, name, "approvalMode", &["confirm", "always"])?;
        }
    }
    if let Some(cm) = section(root, "codeMode")? {
        for (key, (lo, _, hi)) in [
            ("longRunningSeconds", LONG_RUNNING_SECONDS),
            ("maxCellSeconds", MAX_CELL_SECONDS),
        ] {
            match cm.get(key) {
                None => {}
                Some(v) if v.as_u64().is_some_and(|n| (lo..=hi).contains(&n)) => {}
                Some(_) => return Err(format!("codeMode.{key} must be a whole number from {lo} to {hi}")),
            }
        }
    }
    if let Some(v) = root.get("execution") {
        validate_execution(v)?;
    }
    if let Some(td) = section(root, "toolDiscovery")? {
        boolean(td, "toolDiscovery", "enabled")?;
        validate_deferred(td.get("deferred"))?;
    }
    if let Some(ht) = section(root, "hostTools")? {
        boolean(ht, "hostTools", "enabled")?;
        one_of(ht, "hostTools", "permissionMode", &["ask", "accept-edits", "auto"])?;
    }
    if let Some(it) = section(root, "interactiveTools")? {
        for key in ["enabled", "askTool", "todoWrite", "newContext"] {
            boolean(it, "interactiveTools", key)?;
        }
    }
    if let Some(sa) = section(root, "subagents")? {
        boolean(sa, "subagents", "enabled")?;
        let (lo, hi) = crate::agents::limits::TIMEOUT_SECONDS_RANGE;
        match sa.get("timeoutSeconds") {
            None => {}
            Some(v) if v.as_u64().is_some_and(|n| n >= u64::from(lo) && n <= u64::from(hi)) => {}
            Some(_) => {
                return Err(format!(
                    "subagents.timeoutSeconds must be a whole number from {lo} to {hi}"
                ))
            }
        }
    }
    if let Some(p) = section(root, "permissions")? {
        validate_permissions(p)?;
    }
    if let Some(w) = section(root, "worktrees")? {
        validate_worktrees(w)?;
    }
    if !matches!(root.get("debug"), None | Some(Value::Bool(_))) {
        return Err("debug must be true or false".into());
    }
    Ok(())
}

/// The longest `worktrees.init` command, in bytes.
pub const MAX_INIT_BYTES: usize = 4096;

/// `worktrees` (docs/worktrees.md "Configuration"): `enabled`, and `init` null or a command line run once in each
/// new worktree.
fn validate_worktrees(w: &Map<String, Value>) -> Result<(), String> {
    boolean(w, "worktrees", "enabled")?;
    match w.get("init") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= MAX_INIT_BYTES && !s.contains('\0') => Ok(()),
        Some(_) => Err(format!(
            "worktrees.init must be null or a non-empty command of at most {MAX_INIT_BYTES} bytes"
        )),
    }
}

/// Most names `permissions.planSafeTools` may list.
pub const MAX_PLAN_SAFE_TOOLS: usize = 64;

/// `permissions` (docs/permissions.md "Configuration"): `mode` null (then the older `hostTools.permissionMode`
/// decides) or a permission mode; `planSafeTools` the other extensions' tool names Plan mode lets through.
fn validate_permissions(p: &Map<String, Value>) -> Result<(), String> {
    match p.get("mode") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if ["ask", "accept-edits", "auto"].contains(&s.as_str()) => {}
        Some(_) => return Err("permissions.mode must be null or one of ask, accept-edits, auto".into()),
    }
    validate_sensitive_paths(p.get("sensitivePaths"))?;
    let list = match p.get("planSafeTools") {
        None => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("permissions.planSafeTools must be an array of tool names".into()),
    };
    if list.len() > MAX_PLAN_SAFE_TOOLS {
        return Err(format!(
            "permissions.planSafeTools must list at most {MAX_PLAN_SAFE_TOOLS} names"
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, item) in list.iter().enumerate() {
        let name = match item.as_str() {
            Some(n) if !n.is_empty() && n.len() <= 128 && !n.chars().any(char::is_control) => n,
            _ => {
                return Err(format!(
                    "permissions.planSafeTools[{i}] must be a tool name (1..128 characters)"
                ))
            }
        };
        if !seen.insert(name) {
            return Err(format!("permissions.planSafeTools[{i}] repeats a name"));
        }
    }
    Ok(())
}

/// `permissions.sensitivePaths` (docs/permissions.md "Sensitive paths"): paths added to the seed's sensitive list,
/// each absolute or `~/`-relative, at most 64; the list only adds (the seed is compiled in).
fn validate_sensitive_paths(v: Option<&Value>) -> Result<(), String> {
    use crate::host::sensitive::{check_extra, MAX_EXTRA};
    let list = match v {
        None => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("permissions.sensitivePaths must be an array of paths".into()),
    };
    if list.len() > MAX_EXTRA {
        return Err(format!(
            "permissions.sensitivePaths must list at most {MAX_EXTRA} paths"
        ));
    }
    for (i, item) in list.iter().enumerate() {
        let Some(s) = item.as_str() else {
            return Err(format!("permissions.sensitivePaths[{i}] must be a string"));
        };
        if let Err(why) = check_extra(s) {
            return Err(format!("permissions.sensitivePaths[{i}] {why}"));
        }
    }
    Ok(())
}

fn validate_sidecar(v: Option<&Value>) -> Result<(), String> {
    let m = match v {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("webSearch.sidecarModel must be null or an object".into()),
    };
    let p = "webSearch.sidecarModel";
    let provider = match m.get("provider") {
        Some(Value::String(s)) if s == "openai" || s == "openai-codex" => s.as_str(),
        _ => return Err(format!("{p}.provider must be one of openai, openai-codex")),
    };
    match m.get("model") {
        Some(Value::String(s)) if !s.is_empty() => {}
        _ => return Err(format!("{p}.model must be a non-empty string")),
    }
    one_of(m, p, "thinkingLevel", &THINKING)?;
    if provider == "openai" {
        if let Some(Value::String(t)) = m.get("thinkingLevel") {
            if t != "auto" {
                return Err(format!("{p}.thinkingLevel must be auto for provider openai"));
            }
        }
    }
    Ok(())
}

fn validate_execution(v: &Value) -> Result<(), String> {
    let m = v.as_object().ok_or_else(|| "execution must be an object".to_string())?;
    if m.get("version") != Some(&json!(1)) {
        return Err("execution.version must be 1".into());
    }
    let rules = match m.get("rules") {
        Some(Value::Array(a)) => a,
        _ => return Err("execution.rules must be an array".into()),
    };
    let mut ids = std::collections::HashSet::new();
    for (i, rule) in rules.iter().enumerate() {
        let p = format!("execution.rules[{i}]");
        let r = rule.as_object().ok_or_else(|| format!("{p} must be an object"))?;
        if let Some(k) = r
            .keys()
            .find(|k| !["id", "match", "patch", "shell", "code"].contains(&k.as_str()))
        {
            return Err(format!(
                "{p}.{k} is not a rule field (allowed: id, match, patch, shell, code)"
            ));
        }
        let id = match r.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => return Err(format!("{p}.id must be a non-empty string")),
        };
        if !ids.insert(id.clone()) {
            return Err(format!("{p}.id must be unique"));
        }
        match r.get("match") {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(format!("{p}.match must be a non-empty string")),
        }
        for flag in ["patch", "shell", "code"] {
            if !matches!(r.get(flag), Some(Value::Bool(_))) {
                return Err(format!("{p}.{flag} must be true or false"));
            }
        }
    }
    Ok(())
}

fn validate_deferred(v: Option<&Value>) -> Result<(), String> {
    let list = match v {
        None => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("toolDiscovery.deferred must be an array of tool names".into()),
    };
    let mut seen = std::collections::HashSet::new();
    for (i, item) in list.iter().enumerate() {
        let name = item.as_str().unwrap_or("");
        if !DEFERRABLE.contains(&name) {
            return Err(format!(
                "toolDiscovery.deferred[{i}] must be a deferrable toolkit tool name ({})",
                DEFERRABLE.join(", ")
            ));
        }
        if !seen.insert(name) {
            return Err(format!("toolDiscovery.deferred[{i}] repeats a name"));
        }
    }
    let cu = COMPUTER_USE.iter().filter(|n| seen.contains(**n)).count();
    if cu != 0 && cu != COMPUTER_USE.len() {
        return Err("toolDiscovery.deferred must list all six computer_use_* names or none".into());
    }
    Ok(())
}

/// The effective view: defaults overlaid with the known fields of a valid raw config (unknown fields dropped).
/// `execution` appears only when the raw config has it.
pub fn effective(raw: &Value) -> Value {
    let mut eff = defaults();
    let Some(root) = raw.as_object() else { return eff };
    let out = eff.as_object_mut().expect("defaults are an object");
    for (name, def) in out.iter_mut() {
        match (def, root.get(name)) {
            (Value::Object(d), Some(Value::Object(r))) => {
                for (k, v) in d.iter_mut() {
                    if let Some(rv) = r.get(k) {
                        *v = if k == "sidecarModel" {
                            normalize_sidecar(rv)
                        } else {
                            rv.clone()
                        };
                    }
                }
            }
            (d @ Value::Bool(_), Some(v @ Value::Bool(_))) => *d = v.clone(),
            _ => {}
        }
    }
    if let Some(exec) = root.get("execution").and_then(Value::as_object) {
        let rules = exec.get("rules").cloned().unwrap_or_else(|| json!([]));
        out.insert("execution".into(), json!({"version": 1, "rules": rules}));
    }
    eff
}

/// A sidecar model without thinkingLevel reads as `auto`.
fn normalize_sidecar(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut m = m.clone();
            m.entry("thinkingLevel").or_insert_with(|| json!("auto"));
            Value::Object(m)
        }
        other => other.clone(),
    }
}

/// Applied before every save: once `execution` exists the rules are the only authority for Patch, direct Shell and
/// Code, so the three legacy `enabled` flags are removed (codeMode.approvalMode stays).
pub fn normalize_for_save(raw: &mut Value) {
    let Some(root) = raw.as_object_mut() else { return };
    if !root.contains_key("execution") {
        return;
    }
    for name in ["applyPatch", "shellSessions", "codeMode"] {
        if let Some(Value::Object(s)) = root.get_mut(name) {
            s.remove("enabled");
        }
    }
}

/// Execution features a config asks for at all, for any model: the legacy flags, or with `execution` the union of
/// every rule's flags (Code needs the shell manager too). A config change that drops one requests that feature's
/// cleanup; a model change never does, so running work survives it.
pub fn configured_features(eff: &Value) -> Vec<&'static str> {
    let mut out = Vec::new();
    if let Some(rules) = eff.pointer("/execution/rules").and_then(Value::as_array) {
        let any = |flags: &[&str]| {
            rules
                .iter()
                .any(|r| flags.iter().any(|f| r.get(*f) == Some(&Value::Bool(true))))
        };
        if any(&["patch"]) {
            out.push("applyPatch");
        }
        if any(&["shell", "code"]) {
            out.push("shellSessions");
        }
        if any(&["code"]) {
            out.push("codeMode");
        }
        return out;
    }
    for key in ["applyPatch", "shellSessions", "codeMode"] {
        if eff.pointer(&format!("/{key}/enabled")) == Some(&Value::Bool(true)) {
            out.push(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(v: Value) -> String {
        validate(&v).unwrap_err()
    }

    #[test]
    fn root_and_sections() {
        assert_eq!(err(json!([])), "configuration must be a JSON object");
        assert_eq!(err(json!(null)), "configuration must be a JSON object");
        for s in [
            "webSearch",
            "remoteCompaction",
            "imageGeneration",
            "applyPatch",
            "computerUse",
            "shellSessions",
            "codeMode",
            "toolDiscovery",
            "hostTools",
            "interactiveTools",
            "permissions",
            "worktrees",
        ] {
            assert_eq!(err(json!({ s: true })), format!("{s} must be an object"));
        }
        assert_eq!(err(json!({"execution": []})), "execution must be an object");
        assert!(validate(&json!({})).is_ok());
        assert!(validate(&defaults()).is_ok());
    }

    #[test]
    fn booleans_and_enums() {
        assert_eq!(
            err(json!({"applyPatch": {"enabled": "yes"}})),
            "applyPatch.enabled must be true or false"
        );
        assert_eq!(err(json!({"debug": 1})), "debug must be true or false");
        assert_eq!(
            err(json!({"webSearch": {"backend": "x"}})),
            "webSearch.backend must be one of auto, native, sidecar"
        );
        assert_eq!(
            err(json!({"webSearch": {"mode": 1}})),
            "webSearch.mode must be one of live, cached"
        );
        assert_eq!(
            err(json!({"webSearch": {"contextSize": "huge"}})),
            "webSearch.contextSize must be one of low, medium, high"
        );
        assert_eq!(
            err(json!({"codeMode": {"approvalMode": "never"}})),
            "codeMode.approvalMode must be one of confirm, always"
        );
    }

    #[test]
    fn host_tools_section() {
        assert!(validate(&json!({"hostTools": {"enabled": true, "permissionMode": "accept-edits"}})).is_ok());
        assert_eq!(
            err(json!({"hostTools": {"enabled": "yes"}})),
            "hostTools.enabled must be true or false"
        );
        assert_eq!(
            err(json!({"hostTools": {"permissionMode": "never"}})),
            "hostTools.permissionMode must be one of ask, accept-edits, auto"
        );
        assert_eq!(
            err(json!({"hostTools": {"permissionMode": null}})),
            "hostTools.permissionMode must be one of ask, accept-edits, auto"
        );
        assert_eq!(
            defaults()["hostTools"],
            json!({"enabled": false, "permissionMode": "ask"})
        );
        let eff = effective(&json!({"hostTools": {"permissionMode": "auto", "x": 1}}));
        assert_eq!(eff["hostTools"], json!({"enabled": false, "permissionMode": "auto"}));
    }

    #[test]
    fn sidecar() {
        let ok = json!({"webSearch": {"sidecarModel": {"provider": "openai-codex", "model": "gpt-5", "thinkingLevel": "high"}}});
        assert!(validate(&ok).is_ok());
        assert_eq!(
            err(json!({"webSearch": {"sidecarModel": {"provider": "openai", "model": "m", "thinkingLevel": "high"}}})),
            "webSearch.sidecarModel.thinkingLevel must be auto for provider openai"
        );
        assert_eq!(
            err(json!({"webSearch": {"sidecarModel": 3}})),
            "webSearch.sidecarModel must be null or an object"
        );
        let eff = effective(&json!({"webSearch": {"sidecarModel": {"provider": "openai", "model": "m"}}}));
        assert_eq!(eff["webSearch"]["sidecarModel"]["thinkingLevel"], "auto");
    }

    #[test]
    fn execution_rules() {
        let rule = |extra: Value| {
            let mut r = json!({"id": "a", "match": "*", "patch": true, "shell": false, "code": false});
            for (k, v) in extra.as_object().unwrap() {
                r[k] = v.clone();
            }
            json!({"execution": {"version": 1, "rules": [r]}})
        };
        assert!(validate(&rule(json!({}))).is_ok());
        assert_eq!(
            err(rule(json!({"id": ""}))),
            "execution.rules[0].id must be a non-empty string"
        );
        assert_eq!(
            err(rule(json!({"match": ""}))),
            "execution.rules[0].match must be a non-empty string"
        );
        assert_eq!(
            err(rule(json!({"code": 1}))),
            "execution.rules[0].code must be true or false"
        );
        assert_eq!(
            err(rule(json!({"extra": 1}))),
            "execution.rules[0].extra is not a rule field (allowed: id, match, patch, shell, code)"
        );
        let dup = json!({"execution": {"version": 1, "rules": [
            {"id": "a", "match": "*", "patch": true, "shell": false, "code": false},
            {"id": "a", "match": "x", "patch": true, "shell": false, "code": false}]}});
        assert_eq!(err(dup), "execution.rules[1].id must be unique");
        assert_eq!(
            err(json!({"execution": {"version": 2, "rules": []}})),
            "execution.version must be 1"
        );
    }

    #[test]
    fn deferred() {
        assert!(validate(&json!({"toolDiscovery": {"deferred": ["apply_patch"]}})).is_ok());
        assert!(err(json!({"toolDiscovery": {"deferred": ["find_tools"]}}))
            .starts_with("toolDiscovery.deferred[0] must be a deferrable"));
        assert_eq!(
            err(json!({"toolDiscovery": {"deferred": ["computer_use_click"]}})),
            "toolDiscovery.deferred must list all six computer_use_* names or none"
        );
        assert_eq!(
            err(json!({"toolDiscovery": {"deferred": ["exec", "exec"]}})),
            "toolDiscovery.deferred[1] repeats a name"
        );
    }

    #[test]
    fn configured_features_follow_rules_or_legacy_flags() {
        assert_eq!(
            configured_features(&json!({"applyPatch": {"enabled": true}, "codeMode": {"enabled": false}})),
            vec!["applyPatch"]
        );
        let rules = json!({"applyPatch": {"enabled": true}, "execution": {"version": 1, "rules": [
            {"id": "a", "match": "x", "patch": false, "shell": false, "code": true}]}});
        assert_eq!(configured_features(&rules), vec!["shellSessions", "codeMode"]);
        assert!(configured_features(&json!({"execution": {"version": 1, "rules": []}})).is_empty());
    }

    #[test]
    fn legacy_flags_removed_with_execution() {
        let mut raw = json!({"applyPatch": {"enabled": true, "x": 1}, "codeMode": {"enabled": true, "approvalMode": "always"},
            "execution": {"version": 1, "rules": []}});
        normalize_for_save(&mut raw);
        assert_eq!(
            raw,
            json!({"applyPatch": {"x": 1}, "codeMode": {"approvalMode": "always"}, "execution": {"version": 1, "rules": []}})
        );
    }

    #[test]
    fn worktrees_section() {
        assert!(validate(&json!({"worktrees": {"enabled": true, "init": "npm ci"}})).is_ok());
        assert!(validate(&json!({"worktrees": {"init": null}})).is_ok());
        assert_eq!(err(json!({"worktrees": []})), "worktrees must be an object");
        assert_eq!(
            err(json!({"worktrees": {"enabled": "y"}})),
            "worktrees.enabled must be true or false"
        );
        let too_long = "x".repeat(MAX_INIT_BYTES + 1);
        for bad in [json!(""), json!("  "), json!(1), json!(too_long), json!("a\u{0}b")] {
            assert_eq!(
                err(json!({"worktrees": {"init": bad}})),
                "worktrees.init must be null or a non-empty command of at most 4096 bytes"
            );
        }
        assert!(validate(&json!({"worktrees": {"init": "x".repeat(MAX_INIT_BYTES)}})).is_ok());
        assert_eq!(defaults()["worktrees"], json!({"enabled": false, "init": null}));
        assert_eq!(
            effective(&json!({"worktrees": {"enabled": true, "init": "make", "x": 1}}))["worktrees"],
            json!({"enabled": true, "init": "make"})
        );
    }

    #[test]
    fn long_running_seconds_bounds() {
        assert!(validate(&json!({"codeMode": {"longRunningSeconds": 10}})).is_ok());
        assert!(validate(&json!({"codeMode": {"longRunningSeconds": 86_400}})).is_ok());
        for bad in [json!(9), json!(86_401), json!(30.5), json!("300"), json!(null)] {
            assert_eq!(
                err(json!({"codeMode": {"longRunningSeconds": bad}})),
                "codeMode.longRunningSeconds must be a whole number from 10 to 86400"
            );
        }
        assert_eq!(defaults()["codeMode"]["longRunningSeconds"], 300);
    }

    #[test]
    fn max_cell_seconds_bounds() {
        assert!(validate(&json!({"codeMode": {"maxCellSeconds": 10}})).is_ok());
        assert!(validate(&json!({"codeMode": {"maxCellSeconds": 86_400}})).is_ok());
        for bad in [
            json!(9),
            json!(86_401),
            json!(0),
            json!(-5),
            json!(60.5),
            json!("600"),
            json!(null),
        ] {
            assert_eq!(
                err(json!({"codeMode": {"maxCellSeconds": bad}})),
                "codeMode.maxCellSeconds must be a whole number from 10 to 86400"
            );
        }
        assert_eq!(defaults()["codeMode"]["maxCellSeconds"], 1800);
    }

    #[test]
    fn subagents_section() {
        assert!(validate(&json!({"subagents": {"enabled": true}})).is_ok());
        assert_eq!(err(json!({"subagents": true})), "subagents must be an object");
        assert_eq!(
            err(json!({"subagents": {"enabled": 1}})),
            "subagents.enabled must be true or false"
        );
        assert!(validate(&json!({"subagents": {"timeoutSeconds": 1}})).is_ok());
        assert!(validate(&json!({"subagents": {"timeoutSeconds": 86_400}})).is_ok());
        for bad in [json!(0), json!(86_401), json!(1.5), json!("60")] {
            assert_eq!(
                err(json!({"subagents": {"timeoutSeconds": bad}})),
                "subagents.timeoutSeconds must be a whole number from 1 to 86400"
            );
        }
        assert_eq!(
            defaults()["subagents"],
            json!({"enabled": false, "timeoutSeconds": 600})
        );
        assert_eq!(
            effective(&json!({"subagents": {"enabled": true}}))["subagents"]["enabled"],
            true
        );
    }

    #[test]
    fn interactive_tools_section() {
        assert!(validate(&json!({"interactiveTools": {"enabled": true}})).is_ok());
        for key in ["enabled", "askTool", "todoWrite", "newContext"] {
            assert_eq!(
                err(json!({"interactiveTools": { key: "yes" }})),
                format!("interactiveTools.{key} must be true or false")
            );
        }
        let eff = effective(&json!({"interactiveTools": {"enabled": true, "todoWrite": false, "future": 1}}));
        assert_eq!(
            eff["interactiveTools"],
            json!({"enabled": true, "askTool": true, "todoWrite": false, "newContext": true})
        );
        assert_eq!(defaults()["interactiveTools"]["enabled"], false);
    }

    #[test]
    fn the_permissions_section() {
        assert_eq!(
            defaults()["permissions"],
            json!({"mode": null, "planSafeTools": [], "sensitivePaths": []})
        );
        assert!(validate(&json!({"permissions": {"sensitivePaths": ["~/vault", "/etc/ssl/private"]}})).is_ok());
        assert_eq!(
            err(json!({"permissions": {"sensitivePaths": "~/x"}})),
            "permissions.sensitivePaths must be an array of paths"
        );
        assert_eq!(
            err(json!({"permissions": {"sensitivePaths": ["/a", 1]}})),
            "permissions.sensitivePaths[1] must be a string"
        );
        assert_eq!(
            err(json!({"permissions": {"sensitivePaths": ["rel/x"]}})),
            "permissions.sensitivePaths[0] must be an absolute path or start with ~/"
        );
        assert_eq!(
            err(json!({"permissions": {"sensitivePaths": ["/a\u{1b}]0;x"]}})),
            "permissions.sensitivePaths[0] must be a path of at most 4096 characters without control characters"
        );
        let at_cap: Vec<String> = (0..64).map(|i| format!("/s{i}")).collect();
        assert!(validate(&json!({"permissions": {"sensitivePaths": at_cap}})).is_ok());
        let over: Vec<String> = (0..65).map(|i| format!("/s{i}")).collect();
        assert_eq!(
            err(json!({"permissions": {"sensitivePaths": over}})),
            "permissions.sensitivePaths must list at most 64 paths"
        );
        assert!(validate(&json!({"permissions": {"mode": null}})).is_ok());
        assert!(
            validate(&json!({"permissions": {"mode": "accept-edits", "planSafeTools": ["mcp__docs__search"]}})).is_ok()
        );
        assert_eq!(
            err(json!({"permissions": {"mode": "never"}})),
            "permissions.mode must be null or one of ask, accept-edits, auto"
        );
        assert_eq!(
            err(json!({"permissions": {"planSafeTools": "x"}})),
            "permissions.planSafeTools must be an array of tool names"
        );
        assert_eq!(
            err(json!({"permissions": {"planSafeTools": ["a", ""]}})),
            "permissions.planSafeTools[1] must be a tool name (1..128 characters)"
        );
        assert_eq!(
            err(json!({"permissions": {"planSafeTools": ["a", "a"]}})),
            "permissions.planSafeTools[1] repeats a name"
        );
        let at_cap: Vec<String> = (0..MAX_PLAN_SAFE_TOOLS).map(|i| format!("t{i}")).collect();
        assert!(validate(&json!({"permissions": {"planSafeTools": at_cap}})).is_ok());
        let over: Vec<String> = (0..=MAX_PLAN_SAFE_TOOLS).map(|i| format!("t{i}")).collect();
        assert_eq!(
            err(json!({"permissions": {"planSafeTools": over}})),
            "permissions.planSafeTools must list at most 64 names"
        );
        let eff = effective(&json!({"permissions": {"mode": "auto", "x": 1}}));
        assert_eq!(
            eff["permissions"],
            json!({"mode": "auto", "planSafeTools": [], "sensitivePaths": []})
        );
    }
}
