//! `/pct status` text and the rules editor's texts (docs/spec/toolkit.md §2).
//!
//! Why in Rust: the text is a rendering of the same decision the sync applied, so it can never disagree with
//! the active tools, and golden tests pin it without running Pi.

use super::decide::{decide, Decision, Effective, Requested, Routes, Source, OFF_IN_CONFIG};
use super::input::ResolveInput;
use serde_json::{json, Value};

mod feature;
pub(crate) use feature::feature_status;

/// The status reason of a feature whose tool name another extension registered (docs/spec/toolkit.md §3).
pub const NAME_TAKEN: &str = "name-taken";

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

/// Every reason code `/pct status` can print (docs/rules.md §`/pct status`): the spec's feature reasons and rule
/// notes, plus the codes of a feature that is off or held back. Each has a sentence in [`reason_sentence`].
pub const REASON_CODES: [&str; 30] = [
    OFF_IN_CONFIG_CODE,
    "rule-does-not-ask",
    "no-matching-rule",
    "deferred",
    "current-model-missing",
    "unsupported-provider",
    "unsupported-api",
    "unofficial-endpoint",
    "missing-openai-auth",
    "credential-mismatch",
    "missing-sidecar-model",
    "unsupported-sidecar-effort",
    "conflicting-tool-name",
    NAME_TAKEN,
    "unsupported-platform",
    "not-registered",
    "no-interactive-ui",
    "model-has-no-image-input",
    "missing-chatgpt-desktop-component",
    "missing-computer-use-helper",
    "shell-unavailable",
    "patch-unavailable",
    "patch-unavailable-kept-native-editing",
    "code-unavailable-did-not-promote-patch",
    "shell-pair-unavailable",
    "code-pair-unavailable",
    "code-shell-pair-unavailable",
    "host-tools-unavailable",
    "every-tool-switched-off",
    "unknown",
];

/// The code of a feature that is turned off in the config.
const OFF_IN_CONFIG_CODE: &str = "off-in-config";

/// The reason code of a feature the decision did not make active: `None` for an active feature (it has no reason
/// line). The decision's own words for two cases become codes here (`off in config`, `every tool switched off`).
fn reason_code<'a>(
    feature: &str,
    effective: &Effective,
    reason: &'a str,
    d: &Decision,
    input: &ResolveInput,
) -> Option<&'a str> {
    match effective {
        Effective::Active => None,
        Effective::Deferred => Some("deferred"),
        Effective::Off if reason.is_empty() || reason == OFF_IN_CONFIG => Some(off_code(feature, d, input)),
        _ if reason == OFF_IN_CONFIG => Some(OFF_IN_CONFIG_CODE),
        _ if reason == "every tool switched off" => Some("every-tool-switched-off"),
        _ if reason.is_empty() => Some("unknown"),
        _ => Some(reason),
    }
}

/// Why a feature is off: its config flag, or (for the three routed features under execution rules) the rule.
fn off_code(feature: &str, d: &Decision, input: &ResolveInput) -> &'static str {
    if !matches!(feature, "applyPatch" | "shellSessions" | "codeMode") {
        return OFF_IN_CONFIG_CODE;
    }
    match (&d.source, &d.rule) {
        (Source::Legacy, _) => OFF_IN_CONFIG_CODE,
        (Source::Rules, Some(_)) => "rule-does-not-ask",
        _ if input
            .model
            .as_ref()
            .and_then(|m| m.id.as_deref())
            .is_none_or(str::is_empty) =>
        {
            "current-model-missing"
        }
        _ => "no-matching-rule",
    }
}

/// The sentence a person reads for a reason code: what is wrong and what to do about it. `taken` is the feature's
/// `taken` line (who holds the name), used for `name-taken`.
pub fn reason_sentence(code: &str, feature: &str, label: &str, d: &Decision, taken: Option<&str>) -> String {
    let rule_words = match &d.rule {
        Some(r) => format!("Execution rule {} (match {})", r.id, r.pattern),
        None => "The execution rules".to_string(),
    };
    let word = match feature {
        "applyPatch" => "patch",
        "shellSessions" => "shell",
        _ => "code",
    };
    let off_it = format!("or turn {label} off with /pct config");
    match code {
        OFF_IN_CONFIG_CODE => format!("Turned off: turn it on with /pct config ({feature}.enabled)."),
        "rule-does-not-ask" => {
            format!("{rule_words} does not ask for {word}: change the rule with /pct config → Execution rules.")
        }
        "no-matching-rule" => {
            "No execution rule matches the current model: add one with /pct config → Execution rules.".into()
        }
        "deferred" => "Held back by Tool Discovery until find_tools loads it; nothing to do.".into(),
        "current-model-missing" => "No model is selected: pick one with /model.".into(),
        "unsupported-provider" if feature == "remoteCompaction" => format!(
            "Remote compaction runs only on the openai-codex provider with a ChatGPT login: switch model with /model, {off_it}; Pi's own compaction runs meanwhile."
        ),
        "unsupported-provider" => {
            format!("{label} needs an openai or openai-codex model: switch model with /model, {off_it}.")
        }
        "unsupported-api" => format!(
            "The current model does not use its provider's Responses API: pick an OpenAI Responses model with /model, {off_it}."
        ),
        "unofficial-endpoint" => format!(
            "The current model uses a custom base URL: remove its baseUrl from models.json (only https://api.openai.com/v1 and https://chatgpt.com/backend-api count as official), {off_it}."
        ),
        "missing-openai-auth" => {
            "No OpenAI credential is set: log in with /login (openai-codex) or set OPENAI_API_KEY (openai).".into()
        }
        "credential-mismatch" => "The credential does not fit the provider: use an API key with openai and a ChatGPT login with openai-codex.".into(),
        "missing-sidecar-model" => "The chosen Web Search executor model is not in Pi's model list: pick another in /pct config → Web Search executor.".into(),
        "unsupported-sidecar-effort" => "The Web Search executor model does not support the chosen effort: pick another in /pct config → Web Search executor effort.".into(),
        "conflicting-tool-name" => format!(
            "Another extension registered a tool name {label} needs, and the toolkit leaves it alone: disable that extension's tool and run /reload, {off_it}."
        ),
        NAME_TAKEN => match taken {
            Some(line) => format!("{}.", line.trim_end_matches('.')),
            None => format!(
                "Another extension registered a tool name {label} needs, and the toolkit leaves it alone: disable that extension's tool and run /reload, {off_it}."
            ),
        },
        "unsupported-platform" => format!("{label} needs macOS; on this machine turn it off with /pct config."),
        "no-interactive-ui" => format!("{label} needs Pi's interactive terminal UI to ask before it acts: start Pi without -p or --mode."),
        "model-has-no-image-input" => format!("{label} needs a model that reads images: pick one with /model, {off_it}."),
        "missing-chatgpt-desktop-component" => format!(
            "The ChatGPT desktop app's computer-use component is not installed: install or update the ChatGPT app, then run /reload, {off_it}."
        ),
        "missing-computer-use-helper" => format!(
            "The computer-use helper is missing from the ChatGPT app: update the ChatGPT app, then run /reload, {off_it}."
        ),
        "not-registered" => format!(
            "Not all of {label}'s tools are registered by the toolkit: run /reload, and disable any extension that registers the same names."
        ),
        "shell-unavailable" => "Pi found no usable shell (bash or sh): install one or set shellPath in Pi's settings, then run /reload.".into(),
        "patch-unavailable" | "patch-unavailable-kept-native-editing" => format!(
            "The execution rule asks for patch but the toolkit's apply_patch is not available, so Pi's edit and write stay: disable any extension that registers apply_patch and run /reload, {off_it}."
        ),
        "code-unavailable-did-not-promote-patch" => format!(
            "Patch was asked for together with code, and code is not available, so apply_patch is not offered on its own: fix Code Mode first (see its reason), {off_it}."
        ),
        "shell-pair-unavailable" => format!(
            "The execution rule asks for shell but exec_command and write_stdin are not both the toolkit's: disable any extension that registers them and run /reload, {off_it}."
        ),
        "code-pair-unavailable" => format!(
            "The execution rule asks for code but exec and wait are not both the toolkit's: disable any extension that registers them and run /reload, {off_it}."
        ),
        "code-shell-pair-unavailable" => format!(
            "Code cells need the shell pair (exec_command, write_stdin), which is not available: fix Shell Sessions first (see its reason), {off_it}."
        ),
        "host-tools-unavailable" => format!(
            "None of the host tools is registered by the toolkit: run /reload, and disable any extension that registers Read, Grep or Glob, {off_it}."
        ),
        "every-tool-switched-off" => "Every interactive tool is switched off: switch one on with /pct config.".into(),
        _ => format!("{label} is not available ({code}): run /reload, {off_it}."),
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
        // A reason only where the feature is not active: a sentence with the fix, then the stable code.
        let taken = f.extra.iter().find(|(k, _)| k == "taken").map(|(_, v)| v.as_str());
        if let Some(code) = reason_code(f.feature, &f.effective, &f.reason, &d, input) {
            // Debug builds (every test run) check that a printed code is one the docs list.
            debug_assert!(REASON_CODES.contains(&code), "unlisted status reason {code}");
            let sentence = reason_sentence(code, f.feature, f.label, &d, taken);
            out.push(format!("  reason: {sentence} [{code}]"));
        }
        let glue = input.extra_lines.get(f.feature);
        for (k, v) in &f.extra {
            if (glue.is_some() && k == "note") || (k == "taken" && f.reason == NAME_TAKEN) {
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

#[cfg(test)]
mod reason_tests {
    use super::*;

    fn decision() -> Decision {
        decide(&ResolveInput::default())
    }

    #[test]
    fn every_reason_code_has_its_own_sentence_with_a_fix_and_is_documented() {
        let doc = include_str!("../../docs/rules.md");
        let d = decision();
        for code in REASON_CODES {
            for feature in [
                "applyPatch",
                "webSearch",
                "remoteCompaction",
                "computerUse",
                "interactiveTools",
            ] {
                let s = reason_sentence(code, feature, "Some Feature", &d, None);
                assert!(s.ends_with('.'), "{code}: {s}");
                assert!(s.starts_with(|c: char| c.is_uppercase()), "{code}: {s}");
                // The fallback names the code in brackets; a listed code must never reach it.
                if code != "unknown" {
                    assert!(!s.contains(&format!("({code})")), "{code} has no sentence: {s}");
                }
                // Nothing for implementers: no config internals or Rust words.
                for word in ["Decision", "route kind", "registry", "FeatureStatus"] {
                    assert!(!s.contains(word), "{code}: {s}");
                }
            }
            assert!(doc.contains(&format!("`{code}`")), "{code} missing from docs/rules.md");
        }
    }

    #[test]
    fn name_taken_reads_the_taken_line() {
        let s = reason_sentence(
            NAME_TAKEN,
            "shellSessions",
            "Shell Sessions",
            &decision(),
            Some("x is registered by y; do z"),
        );
        assert_eq!(s, "x is registered by y; do z.");
    }

    #[test]
    fn active_features_have_no_reason_and_the_others_a_code() {
        let (d, input) = (decision(), ResolveInput::default());
        assert_eq!(reason_code("applyPatch", &Effective::Active, "", &d, &input), None);
        assert_eq!(
            reason_code("applyPatch", &Effective::Deferred, "", &d, &input),
            Some("deferred")
        );
        assert_eq!(
            reason_code("webSearch", &Effective::Off, OFF_IN_CONFIG, &d, &input),
            Some(OFF_IN_CONFIG_CODE)
        );
        assert_eq!(
            reason_code("applyPatch", &Effective::Off, "", &d, &input),
            Some(OFF_IN_CONFIG_CODE)
        );
        assert_eq!(
            reason_code(
                "interactiveTools",
                &Effective::Unavailable,
                "every tool switched off",
                &d,
                &input
            ),
            Some("every-tool-switched-off")
        );
        assert_eq!(
            reason_code("x", &Effective::Unavailable, "", &d, &input),
            Some("unknown")
        );
        assert_eq!(
            reason_code("webSearch", &Effective::Unavailable, "unofficial-endpoint", &d, &input),
            Some("unofficial-endpoint")
        );
    }
}
