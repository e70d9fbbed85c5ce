//! Computer Use (docs/computer.md): the prerequisite probe, the app-target and argument checks, the approvals
//! state and the `codex app-server --stdio` client ([`client`]). Computer Use needs macOS and the ChatGPT app's
//! bundled `codex`; everywhere else the probe answers `unsupported-platform` and nothing is ever spawned.

pub mod client;
#[cfg(test)]
mod tests;

use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Mutex;

/// The six tools, in the order the docs list them; the app-server tool name is the part after `computer_use_`.
pub const TOOLS: [&str; 6] = [
    "computer_use_list_apps",
    "computer_use_get_app_state",
    "computer_use_click",
    "computer_use_type_text",
    "computer_use_press_key",
    "computer_use_scroll",
];

/// Where the ChatGPT app keeps its bundled `codex` on macOS (docs/computer.md "Prerequisites").
const MAC_CODEX: &str = "/Applications/ChatGPT.app/Contents/Resources/codex";
/// The MCP server name of the computer-use component inside the app-server.
const DEFAULT_SERVER: &str = "computer-use";
/// Longest app name or bundle id accepted.
pub const MAX_APP_TARGET: usize = 256;
/// Longest `type_text` text accepted (characters).
pub const MAX_TEXT: usize = 10_000;

/// A failure with a stable code and a message telling the model what to do next.
#[derive(Debug, Clone, PartialEq)]
pub struct CuError {
    pub code: &'static str,
    pub message: String,
}

impl CuError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"ok": false, "code": self.code, "message": self.message})
    }
}

/// What the probe found: either a launchable app-server or why Computer Use is unavailable here.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub platform: String,
    /// `None` when available; otherwise `unsupported-platform` or `components-missing`.
    pub reason: Option<&'static str>,
    /// The program and its arguments before `app-server --stdio` (the seam may add a script path).
    pub program: Option<String>,
    pub args: Vec<String>,
    pub server: String,
}

/// The test-only seam: `PCT_TEST_COMPUTER_USE` holds JSON `{platform, program, args?, server?}` so the client runs
/// against `__test__/fixtures/fake-app-server.mjs`. Read from the environment only, never from config, and only in
/// builds with test seams (src/seams.rs).
pub const SEAM_VAR: &str = "PCT_TEST_COMPUTER_USE";

/// The platform the rules see for Computer Use: the seam's `platform` when set, else Node's name for this OS
/// (`darwin`, `linux`, `win32`). Cheap (no file access): called on every rules sync.
pub fn platform() -> String {
    if let Some(seam) = crate::seams::var(SEAM_VAR).filter(|s| !s.is_empty()) {
        let v: Value = serde_json::from_str(&seam).unwrap_or(Value::Null);
        return v["platform"].as_str().unwrap_or("unknown").to_string();
    }
    node_platform()
}

fn node_platform() -> String {
    match std::env::consts::OS {
        "macos" => "darwin".into(),
        "windows" => "win32".into(),
        other => other.into(),
    }
}

/// Runs the prerequisite probe (only `/pct status` and the first tool call run it; it spawns nothing).
pub fn probe() -> Probe {
    if let Some(seam) = crate::seams::var(SEAM_VAR).filter(|s| !s.is_empty()) {
        return probe_seam(&seam);
    }
    let platform = node_platform();
    if platform != "darwin" {
        return unavailable(platform, "unsupported-platform");
    }
    if !std::path::Path::new(MAC_CODEX).is_file() {
        return unavailable(platform, "components-missing");
    }
    Probe {
        platform,
        reason: None,
        program: Some(MAC_CODEX.into()),
        args: vec![],
        server: DEFAULT_SERVER.into(),
    }
}

fn unavailable(platform: String, reason: &'static str) -> Probe {
    Probe {
        platform,
        reason: Some(reason),
        program: None,
        args: vec![],
        server: DEFAULT_SERVER.into(),
    }
}

fn probe_seam(seam: &str) -> Probe {
    let v: Value = serde_json::from_str(seam).unwrap_or(Value::Null);
    let platform = v["platform"].as_str().unwrap_or("unknown").to_string();
    if platform != "darwin" {
        return unavailable(platform, "unsupported-platform");
    }
    let Some(program) = v["program"].as_str().filter(|p| std::path::Path::new(p).is_file()) else {
        return unavailable(platform, "components-missing");
    };
    Probe {
        platform,
        reason: None,
        program: Some(program.into()),
        args: v["args"]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default(),
        server: v["server"].as_str().unwrap_or(DEFAULT_SERVER).to_string(),
    }
}

/// The error a tool answers when the probe says Computer Use is unavailable.
pub fn unavailable_error(reason: &str) -> CuError {
    match reason {
        "unsupported-platform" => CuError::new(
            "unsupported-platform",
            "Computer Use needs macOS with the ChatGPT app; it is not available on this platform. Do not retry; use other tools.",
        ),
        _ => CuError::new(
            "components-missing",
            "Computer Use needs the ChatGPT app's bundled codex and computer-use components, which were not found. Ask the user to install or update the ChatGPT app.",
        ),
    }
}

/// Checks an app target: an app name (`Safari`) or a bundle id (`com.apple.Safari`) only — never a path, URL or
/// process id, so the model cannot aim at an arbitrary executable.
pub fn check_app_target(app: &str) -> Result<(), CuError> {
    let bad = |why: &str| {
        Err(CuError::new(
            "invalid-app-target",
            format!("app {why}. Pass an app name (e.g. \"Safari\") or a bundle id (e.g. \"com.apple.Safari\") as listed by computer_use_list_apps."),
        ))
    };
    let t = app.trim();
    if t.is_empty() {
        return bad("is empty");
    }
    if app.chars().count() > MAX_APP_TARGET {
        return bad(&format!("is longer than {MAX_APP_TARGET} characters"));
    }
    if t != app {
        return bad("has leading or trailing whitespace");
    }
    if app.chars().any(|c| c.is_control()) {
        return bad("contains control characters");
    }
    if app.contains('/') || app.contains('\\') || app.contains(':') {
        return bad("looks like a path or URL");
    }
    if app.ends_with(".app") {
        return bad("is a bundle file name");
    }
    if app.chars().all(|c| c.is_ascii_digit()) {
        return bad("is a number (process ids are not accepted)");
    }
    Ok(())
}

/// Validates a tool's arguments and returns (app-server tool name, arguments to forward, target app if any).
pub fn check_call(tool: &str, args: &Value) -> Result<(String, Value, Option<String>), CuError> {
    let Some(short) = tool.strip_prefix("computer_use_").filter(|_| TOOLS.contains(&tool)) else {
        return Err(CuError::new(
            "unknown-tool",
            format!("{tool} is not a Computer Use tool. Use one of: {}.", TOOLS.join(", ")),
        ));
    };
    let empty = Map::new();
    let obj = match args {
        Value::Object(o) => o,
        Value::Null => &empty,
        _ => return Err(invalid(tool, "arguments must be an object")),
    };
    let app = if short == "list_apps" {
        None
    } else {
        let Some(a) = obj.get("app").and_then(Value::as_str) else {
            return Err(invalid(tool, "`app` (a string) is required"));
        };
        check_app_target(a)?;
        Some(a.to_string())
    };
    let num = |k: &str| obj.get(k).map(|v| v.as_f64().filter(|n| n.is_finite()));
    match short {
        "click" => {
            for k in ["x", "y"] {
                if !matches!(num(k), Some(Some(n)) if n >= 0.0) {
                    return Err(invalid(tool, &format!("`{k}` must be a number >= 0")));
                }
            }
        }
        "type_text" => match obj.get("text").and_then(Value::as_str) {
            None => return Err(invalid(tool, "`text` (a string) is required")),
            Some(t) if t.chars().count() > MAX_TEXT => {
                return Err(invalid(
                    tool,
                    &format!("`text` is longer than {MAX_TEXT} characters; split it"),
                ))
            }
            _ => {}
        },
        "press_key"
            if obj
                .get("key")
                .and_then(Value::as_str)
                .is_none_or(|k| k.is_empty() || k.len() > 64) =>
        {
            return Err(invalid(
                tool,
                "`key` must be a key name of 1 to 64 characters (e.g. \"Return\", \"cmd+c\")",
            ));
        }
        "scroll" => {
            for k in ["dx", "dy"] {
                if matches!(num(k), Some(None)) {
                    return Err(invalid(tool, &format!("`{k}` must be a number")));
                }
            }
        }
        _ => {}
    }
    Ok((short.to_string(), Value::Object(obj.clone()), app))
}

fn invalid(tool: &str, why: &str) -> CuError {
    CuError::new(
        "invalid-arguments",
        format!("{tool}: {why}. Fix the arguments and call again."),
    )
}

/// Per-session approvals (docs/computer.md "Approvals"): `confirm` asks once per app per session; the set lives in
/// memory only and is cleared on session switch and reload.
#[derive(Default)]
pub struct Approvals {
    apps: Mutex<HashSet<String>>,
}

/// What the caller must do before running a call.
#[derive(Debug, PartialEq)]
pub enum Gate {
    /// Run it.
    Go,
    /// Ask the user about this app, then `approve` it (or refuse with `approval-denied`).
    Ask(String),
}

impl Approvals {
    /// Decides a call's gate under `mode` (`confirm` or `always`). Headless confirm → `approval-unavailable`.
    pub fn gate(&self, mode: &str, app: Option<&str>, has_ui: bool) -> Result<Gate, CuError> {
        let Some(app) = app else { return Ok(Gate::Go) };
        if mode == "always"
            || self
                .apps
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(app)
        {
            return Ok(Gate::Go);
        }
        if !has_ui {
            return Err(CuError::new(
                "approval-unavailable",
                format!("Computer Use needs the user's approval to control {app}, but there is no UI to ask. Ask the user to approve it in an interactive session or to set computerUse.approvalMode to \"always\"."),
            ));
        }
        Ok(Gate::Ask(app.to_string()))
    }

    pub fn approve(&self, app: &str) {
        self.apps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(app.to_string());
    }

    pub fn reset(&self) {
        self.apps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}

/// The refusal when the user declines.
pub fn denied(app: &str) -> CuError {
    CuError::new(
        "approval-denied",
        format!("The user declined Computer Use on {app}. Do not retry on this app unless the user asks."),
    )
}
