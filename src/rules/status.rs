//! `/pct status` text and the rules editor's texts (docs/spec/toolkit.md §2).
//!
//! Why in Rust: the text is a rendering of the same decision the sync applied, so it can never disagree with
//! the active tools, and golden tests pin it without running Pi.

use super::decide::{decide, Decision, Effective, Requested, Routes, Source};
use super::input::ResolveInput;
use serde_json::{json, Value};

fn or_dash(s: Option<&str>) -> String {
    match s {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => "—".to_string(),
    }
}

/// The names whose flag is set, joined by `sep`; `empty` when none is set.
fn words(items: &[(bool, &str)], sep: &str, empty: &str) -> String {
    let v: Vec<&str> = items.iter().filter(|(on, _)| *on).map(|(_, w)| *w).collect();
    if v.is_empty() {
        empty.to_string()
    } else {
        v.join(sep)
    }
}

/// `patch, shell, code` words for a requested set (`none` when empty).
pub fn requested_words(r: &Requested) -> String {
    words(
        &[(r.patch, "patch"), (r.shell, "shell"), (r.code, "code")],
        ", ",
        "none",
    )
}

/// Route words for the effective routes (`none` when empty).
pub fn route_words(r: &Routes) -> String {
    words(
        &[
            (r.direct_patch, "direct patch"),
            (r.nested_patch, "nested patch"),
            (r.direct_shell, "direct shell"),
            (r.code, "code"),
        ],
        ", ",
        "none",
    )
}

/// The `Execution rules:` block lines (without the header), for status and the editor preview.
pub fn rules_block(d: &Decision) -> Vec<String> {
    let mut out = Vec::new();
    match (&d.source, &d.rule) {
        (Source::Rules, Some(r)) => out.push(format!("  matched rule: {} (match {})", r.id, r.pattern)),
        _ => out.push("  matched rule: none (the current model matches no rule)".into()),
    }
    out.push(format!("  requested: {}", requested_words(&d.requested)));
    out.push(format!("  effective: {}", route_words(&d.routes)));
    out.push(format!("  bash hidden: {}", if d.hide_bash { "yes" } else { "no" }));
    out.push(format!(
        "  edit/write hidden: {}",
        if d.hide_edit_write { "yes" } else { "no" }
    ));
    out.push(format!(
        "  notes: {}",
        if d.notes.is_empty() {
            "none".to_string()
        } else {
            d.notes.join(", ")
        }
    ));
    out
}

/// Why a feature is off, in plain words with the way to turn it on (docs/rules.md §`/pct status`). Features
/// whose decision already carries a reason (not built, unsupported platform) keep it.
fn off_reason(feature: &str, d: &Decision, input: &ResolveInput) -> String {
    let (setting, word) = match feature {
        "applyPatch" => ("applyPatch.enabled", "patch"),
        "shellSessions" => ("shellSessions.enabled", "shell"),
        "codeMode" => ("codeMode.enabled", "code"),
        "toolDiscovery" => ("toolDiscovery.enabled", ""),
        "hostTools" => ("hostTools.enabled", ""),
        "interactiveTools" => ("interactiveTools.enabled", ""),
        _ => return String::new(),
    };
    let turn_on = format!("not turned on: set {setting} to true in the config, or use /pct config");
    if word.is_empty() {
        return turn_on;
    }
    match (&d.source, &d.rule) {
        (Source::Legacy, _) => turn_on,
        (Source::Rules, Some(r)) => format!(
            "execution rule {} (match {}) does not ask for {word}; change it with /pct config → Execution rules",
            r.id, r.pattern
        ),
        _ if input
            .model
            .as_ref()
            .and_then(|m| m.id.as_deref())
            .is_none_or(str::is_empty) =>
        {
            "no current model, so no execution rule applies".into()
        }
        _ => "no execution rule matches the current model; add one with /pct config → Execution rules".into(),
    }
}

/// The full `/pct status` text.
pub fn status_text(input: &ResolveInput) -> String {
    let d = decide(input);
    let mut out: Vec<String> = vec!["Pi Codex Toolkit status".into()];
    let model = input.model.clone().unwrap_or_default();
    match model.id.as_deref() {
        Some(id) if !id.is_empty() => out.push(format!(
            "model: {id}  provider: {}  api: {}",
            or_dash(model.provider.as_deref()),
            or_dash(model.api.as_deref())
        )),
        _ => out.push("model: none (current-model-missing)".into()),
    }
    out.push(format!("config: {}", or_dash(input.config_path.as_deref())));
    if let Some(e) = &input.config_error {
        match e.detail.as_deref() {
            Some(detail) if !detail.is_empty() => out.push(format!("Config error: {} ({})", e.code, detail)),
            _ => out.push(format!("Config error: {}", e.code)),
        }
    }
    if let Some(a) = input.apply_error.as_deref().filter(|a| !a.is_empty()) {
        out.push(format!("Apply error: {a}"));
    }
    for f in &d.features {
        out.push(String::new());
        out.push(f.label.to_string());
        out.push(format!("  configured: {}", if f.configured { "on" } else { "off" }));
        out.push(format!("  effective: {}", f.effective.as_str()));
        // `reason: ` keeps its space when empty (the line's shape never changes).
        let reason = match (&f.effective, f.reason.is_empty()) {
            (Effective::Off, true) => off_reason(f.feature, &d, input),
            _ => f.reason.clone(),
        };
        out.push(format!("  reason: {reason}"));
        let glue = input.extra_lines.get(f.feature);
        for (k, v) in &f.extra {
            if glue.is_some() && k == "note" {
                continue;
            }
            out.push(format!("  {k}: {v}"));
        }
        for line in glue.into_iter().flatten() {
            out.push(format!("  {line}"));
        }
    }
    let debug = input.config.debug;
    out.push(String::new());
    out.push(format!("Debug: {}", if debug { "on" } else { "off" }));
    if d.source != Source::Legacy {
        out.push(String::new());
        out.push("Execution rules:".into());
        out.extend(rules_block(&d));
    }
    out.join("\n")
}

/// The editor's "Preview current model": what the *draft* rules would do for the current model.
pub fn preview_text(input: &ResolveInput) -> String {
    let d = decide(input);
    let model = input.model.clone().unwrap_or_default();
    let who = match (model.provider.as_deref(), model.id.as_deref()) {
        (Some(p), Some(id)) => format!("{p}/{id}"),
        (None, Some(id)) => id.to_string(),
        _ => "no current model (current-model-missing)".to_string(),
    };
    let mut out = vec![format!("Preview for {who}:")];
    if d.source == Source::Legacy {
        out.push("  no execution rules: the legacy enabled flags apply (additive, nothing hidden)".into());
    }
    out.extend(rules_block(&d));
    out.join("\n")
}

/// The flags of a rule as the editor shows them: `P+S+C`, a subset, or `—`.
pub fn flags_label(r: &Requested) -> String {
    words(&[(r.patch, "P"), (r.shell, "S"), (r.code, "C")], "+", "—")
}

/// The rules the editor starts from: `execution.rules` when present, else one catch-all rule previewed from the
/// legacy flags (an empty list when all three are off). Opening the editor writes nothing.
pub fn editor_rules(config: &Value) -> Value {
    if let Some(rules) = config
        .get("execution")
        .and_then(|e| e.get("rules"))
        .and_then(Value::as_array)
    {
        return Value::Array(rules.clone());
    }
    let flag = |s: &str| {
        config
            .get(s)
            .and_then(|x| x.get("enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let (p, s, c) = (flag("applyPatch"), flag("shellSessions"), flag("codeMode"));
    if !(p || s || c) {
        return json!([]);
    }
    json!([{ "id": "rule-1", "match": "*", "patch": p, "shell": s, "code": c }])
}

/// Editor rows `N. id  match  P+S+C`.
pub fn editor_rows(rules: &Value) -> Vec<String> {
    rules
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let flag = |k: &str| r.get(k).and_then(Value::as_bool).unwrap_or(false);
            let req = Requested {
                patch: flag("patch"),
                shell: flag("shell"),
                code: flag("code"),
            };
            format!(
                "{}. {}  {}  {}",
                i + 1,
                r.get("id").and_then(Value::as_str).unwrap_or(""),
                r.get("match").and_then(Value::as_str).unwrap_or(""),
                flags_label(&req)
            )
        })
        .collect()
}
