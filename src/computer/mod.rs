//! Computer Use (docs/computer.md): the prerequisite probe, the app-target and argument checks, the approvals
//! state and the `codex app-server --stdio` client ([`client`]). Computer Use needs macOS and the ChatGPT app's
//! bundled `codex`; everywhere else the probe answers `unsupported-platform` and nothing is ever spawned.

pub mod client;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The six tools, in the order the docs list them (defined once, with the rules' tool names); the app-server tool
/// name is the part after `computer_use_`.
pub const TOOLS: [&str; 6] = crate::rules::names::COMPUTER_USE;

/// Where the ChatGPT app keeps its bundled components on macOS (docs/computer.md "Prerequisites").
const MAC_RESOURCES: &str = "/Applications/ChatGPT.app/Contents/Resources";
/// The bundled components the probe requires under the resources folder: `(relative path, is a folder)`.
pub const COMPONENTS: [(&str, bool); 4] = [
    ("codex", false),
    ("cua_node/bin/node_repl", false),
    ("cua_node/bin/node", false),
    ("cua_node/lib/node_modules", true),
];
/// The installed Computer Use helper, relative to the real (canonical) `CODEX_HOME`.
pub const HELPER: &str = "computer-use/Codex Computer Use.app";
/// The MCP server name of the computer-use component inside the app-server.
const DEFAULT_SERVER: &str = "computer-use";
/// Longest app name or bundle id accepted.
pub const MAX_APP_TARGET: usize = 256;
/// Longest `type_text` text accepted (characters).
pub const MAX_TEXT: usize = 10_000;

crate::codes::error_codes! {
    /// Every code a Computer Use call fails with (docs/computer.md "Errors"); the first three are also the probe's
    /// reasons, in the order it checks them (docs/computer.md "Prerequisites").
    pub enum CuCode {
        /// Not macOS.
        UnsupportedPlatform = "unsupported-platform" => "do not retry; use other tools",
        /// The ChatGPT app's bundled components are not all there.
        MissingDesktopComponent = "missing-chatgpt-desktop-component" =>
            "ask the user to install or update the ChatGPT app",
        /// The Computer Use helper app is not installed under `CODEX_HOME`.
        MissingHelper = "missing-computer-use-helper" => "ask the user to install Computer Use in the ChatGPT app",
        /// The app-server child could not be spawned.
        AppServerStartFailed = "app-server-start-failed" => "ask the user to check the installation",
        /// The start or a call ran past its bound; the child's whole group was killed.
        Timeout = "timeout" => "check the app's state before retrying",
        /// The child died during the call.
        AppServerExited = "app-server-exited" => "the action may have happened; check with get_app_state",
        /// A JSON-RPC error reply, or an MCP result with `isError`.
        ToolError = "tool-error" => "adjust the call",
        /// `thread/start` answered without a thread id.
        ProtocolError = "protocol-error" => "retry once",
        /// The app target is not an app name or bundle id.
        InvalidAppTarget = "invalid-app-target" => "pass an app name or bundle id from computer_use_list_apps",
        /// The arguments do not have the tool's shape (nothing was sent).
        InvalidArguments = "invalid-arguments" => "fix the arguments",
        /// Not one of the six tools.
        UnknownTool = "unknown-tool" => "call one of the computer_use_ tools",
        /// The user declined the app.
        ApprovalDenied = "approval-denied" => "do not retry the same app without the user's go-ahead",
        /// No one can approve the app (no interactive UI).
        ApprovalUnavailable = "approval-unavailable" => "ask the user to approve the app in an interactive session",
    }
}

/// A failure with a stable code and a message telling the model what to do next.
#[derive(Debug, Clone, PartialEq)]
pub struct CuError {
    pub code: CuCode,
    pub message: String,
}

impl CuError {
    pub fn new(code: CuCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// What the probe found: either a launchable app-server or why Computer Use is unavailable here.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub platform: String,
    /// `None` when available; otherwise one of [`CuCode::UnsupportedPlatform`], [`CuCode::MissingDesktopComponent`],
    /// [`CuCode::MissingHelper`].
    pub reason: Option<CuCode>,
    /// The program and its arguments before `app-server --stdio` (the seam may add a script path).
    pub program: Option<String>,
    pub args: Vec<String>,
    pub server: String,
}

/// Where the probe looks: the injectable seam of the prerequisite check. [`Prereqs::real`] is this machine; the test
/// seam builds one from its JSON, so a Linux suite reaches each reason with temp folders.
#[derive(Debug, Clone, PartialEq)]
pub struct Prereqs {
    /// The platform as Node names it (`darwin`, `linux`, `win32`).
    pub platform: String,
    /// The ChatGPT app's resources folder; `None` = not checked (the seam's program stands in for the app).
    pub resources: Option<PathBuf>,
    /// The real `CODEX_HOME`; `None` = not checked.
    pub codex_home: Option<PathBuf>,
    /// The app-server program; `None` = `<resources>/codex`.
    pub program: Option<String>,
    pub args: Vec<String>,
    pub server: String,
}

impl Prereqs {
    /// This machine: the fixed ChatGPT.app resources and `$CODEX_HOME` (else `~/.codex`), resolved to its real path.
    pub fn real() -> Prereqs {
        let home = std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")));
        Prereqs {
            platform: node_platform(),
            resources: Some(PathBuf::from(MAC_RESOURCES)),
            codex_home: Some(home.map(|h| std::fs::canonicalize(&h).unwrap_or(h)).unwrap_or_default()),
            program: None,
            args: vec![],
            server: DEFAULT_SERVER.into(),
        }
    }

    /// The seam's JSON `{platform, program?, args?, server?, resources?, codexHome?}`.
    pub fn from_seam(seam: &str) -> Prereqs {
        let v: Value = serde_json::from_str(seam).unwrap_or(Value::Null);
        let path = |k: &str| v[k].as_str().map(PathBuf::from);
        Prereqs {
            platform: v["platform"].as_str().unwrap_or("unknown").to_string(),
            resources: path("resources"),
            codex_home: path("codexHome"),
            program: v["program"].as_str().map(String::from),
            args: v["args"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
                .unwrap_or_default(),
            server: v["server"].as_str().unwrap_or(DEFAULT_SERVER).to_string(),
        }
    }
}

/// The test-only seam: `PCT_TEST_COMPUTER_USE` holds JSON `{platform, program, args?, server?, resources?,
/// codexHome?}` so the client runs against `__test__/fixtures/fake-app-server.mjs` and the probe looks at temp
/// folders. Read from the environment only, never from config, and only in builds with test seams (src/seams.rs).
pub const SEAM_VAR: &str = "PCT_TEST_COMPUTER_USE";

/// The platform the rules see for Computer Use: the seam's `platform` when set, else Node's name for this OS
/// (`darwin`, `linux`, `win32`). Cheap (no file access): called on every rules sync.
pub fn platform() -> String {
    if let Some(seam) = crate::seams::var(SEAM_VAR).filter(|s| !s.is_empty()) {
        return Prereqs::from_seam(&seam).platform;
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

/// Runs the prerequisite probe on this machine (or the seam's): a few `stat`s on macOS, none elsewhere, nothing
/// spawned. Rules syncs, `/pct status` and every call run it.
pub fn probe() -> Probe {
    match crate::seams::var(SEAM_VAR).filter(|s| !s.is_empty()) {
        Some(seam) => probe_with(&Prereqs::from_seam(&seam)),
        None => probe_with(&Prereqs::real()),
    }
}

/// The probe over `p`: the platform, then every bundled component, then the helper.
pub fn probe_with(p: &Prereqs) -> Probe {
    let unavailable = |reason| Probe {
        platform: p.platform.clone(),
        reason: Some(reason),
        program: None,
        args: vec![],
        server: p.server.clone(),
    };
    if p.platform != "darwin" {
        return unavailable(CuCode::UnsupportedPlatform);
    }
    if let Some(res) = &p.resources {
        let present = |(rel, dir): &(&str, bool)| {
            std::fs::metadata(res.join(rel)).is_ok_and(|m| if *dir { m.is_dir() } else { m.is_file() })
        };
        if !COMPONENTS.iter().all(present) {
            return unavailable(CuCode::MissingDesktopComponent);
        }
    }
    let program = match (&p.program, &p.resources) {
        (Some(prog), _) => prog.clone(),
        (None, Some(res)) => res.join("codex").display().to_string(),
        (None, None) => return unavailable(CuCode::MissingDesktopComponent),
    };
    if !Path::new(&program).is_file() {
        return unavailable(CuCode::MissingDesktopComponent);
    }
    if let Some(home) = &p.codex_home {
        if !std::fs::metadata(home.join(HELPER)).is_ok_and(|m| m.is_dir()) {
            return unavailable(CuCode::MissingHelper);
        }
    }
    Probe {
        platform: p.platform.clone(),
        reason: None,
        program: Some(program),
        args: p.args.clone(),
        server: p.server.clone(),
    }
}

/// The error a tool answers when the probe (or the rules' check) says Computer Use is unavailable.
pub fn unavailable_error(reason: CuCode) -> CuError {
    match reason {
        CuCode::UnsupportedPlatform => CuError::new(
            CuCode::UnsupportedPlatform,
            "Computer Use needs macOS with the ChatGPT app; it is not available on this platform. Do not retry; use other tools.",
        ),
        CuCode::MissingHelper => CuError::new(
            CuCode::MissingHelper,
            format!("Computer Use needs its helper app ({HELPER} under CODEX_HOME), which is not installed. Ask the user to install Computer Use in the ChatGPT app; do not retry until then."),
        ),
        _ => CuError::new(
            CuCode::MissingDesktopComponent,
            "Computer Use needs the ChatGPT app's bundled components (codex and cua_node in /Applications/ChatGPT.app), which were not all found. Ask the user to install or update the ChatGPT app; do not retry until then.",
        ),
    }
}

/// Checks an app target: an app name (`Safari`) or a bundle id (`com.apple.Safari`) only — never a path, URL or
/// process id, so the model cannot aim at an arbitrary executable.
pub fn check_app_target(app: &str) -> Result<(), CuError> {
    let bad = |why: &str| {
        Err(CuError::new(
            CuCode::InvalidAppTarget,
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
            CuCode::UnknownTool,
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
        CuCode::InvalidArguments,
        format!("{tool}: {why}. Fix the arguments and call again."),
    )
}

/// Per-session approvals (docs/computer.md "Approvals"): `confirm` asks once per app per session; the set lives in
/// memory only, is cleared on session switch and reload, and when the approval mode changes (a switch from `always`
/// back to `confirm` asks again). Approvals are keyed by the canonical app: its bundle id once `list_apps` named
/// the pair (`Safari` and `com.apple.Safari` are then one app), else the name, case folded.
#[derive(Default)]
pub struct Approvals {
    state: Mutex<ApprovalState>,
}

#[derive(Default)]
struct ApprovalState {
    /// The mode the set was granted under.
    mode: Option<String>,
    apps: HashSet<String>,
    /// Case-folded app name → bundle id, as `list_apps` answered.
    bundle_ids: HashMap<String, String>,
}

/// Most name/bundle-id pairs remembered (a `list_apps` answer longer than this keeps its first ones).
pub const MAX_KNOWN_APPS: usize = 1_000;

impl ApprovalState {
    fn canonical(&self, app: &str) -> String {
        let folded = app.to_lowercase();
        self.bundle_ids.get(&folded).cloned().unwrap_or(folded)
    }
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
    fn state(&self) -> std::sync::MutexGuard<'_, ApprovalState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Decides a call's gate under `mode` (`confirm` or `always`). Headless confirm → `approval-unavailable`. A mode
    /// other than the one the set was granted under clears it first.
    pub fn gate(&self, mode: &str, app: Option<&str>, has_ui: bool) -> Result<Gate, CuError> {
        let mut st = self.state();
        if st.mode.as_deref() != Some(mode) {
            st.apps.clear();
            st.mode = Some(mode.to_string());
        }
        let Some(app) = app else { return Ok(Gate::Go) };
        if mode == "always" || st.apps.contains(&st.canonical(app)) {
            return Ok(Gate::Go);
        }
        if !has_ui {
            return Err(CuError::new(
                CuCode::ApprovalUnavailable,
                format!("Computer Use needs the user's approval to control {app}, but there is no UI to ask. Ask the user to approve it in an interactive session or to set computerUse.approvalMode to \"always\"."),
            ));
        }
        Ok(Gate::Ask(app.to_string()))
    }

    /// Records the user's approval of `app` (by its canonical key) for this session.
    pub fn approve(&self, app: &str) {
        let mut st = self.state();
        let key = st.canonical(app);
        st.apps.insert(key);
    }

    pub fn reset(&self) {
        let mut st = self.state();
        st.apps.clear();
        st.mode = None;
    }

    /// Learns name/bundle-id pairs from a `list_apps` answer: text lines `Name (bundle.id)` and structured
    /// `{apps: [{name, bundleId}]}` entries. An approval already given under the name now also covers the id.
    pub fn learn(&self, text: &str, structured: &Value) {
        let mut pairs: Vec<(String, String)> = text.lines().filter_map(name_and_id).collect();
        if let Some(apps) = structured.get("apps").and_then(Value::as_array) {
            for a in apps {
                if let (Some(n), Some(id)) = (
                    a.get("name").and_then(Value::as_str),
                    a.get("bundleId").and_then(Value::as_str),
                ) {
                    if check_app_target(n).is_ok() && is_bundle_id(id) {
                        pairs.push((n.to_string(), id.to_string()));
                    }
                }
            }
        }
        let mut st = self.state();
        for (name, id) in pairs {
            if st.bundle_ids.len() >= MAX_KNOWN_APPS {
                break;
            }
            let (name, id) = (name.to_lowercase(), id.to_lowercase());
            if st.apps.remove(&name) {
                st.apps.insert(id.clone());
            }
            st.bundle_ids.insert(name, id.clone());
            // The id itself is its own canonical key.
            st.bundle_ids.insert(id.clone(), id);
        }
    }
}

/// A reverse-DNS bundle id: at least two dot-separated parts of letters, digits and `-`.
fn is_bundle_id(s: &str) -> bool {
    s.len() <= MAX_APP_TARGET
        && s.split('.').count() >= 2
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// `Name (bundle.id)` (a line of `list_apps` text, optionally bulleted) as its pair.
fn name_and_id(line: &str) -> Option<(String, String)> {
    let l = line.trim().trim_start_matches(['-', '*', '•']).trim();
    let (name, rest) = l.rsplit_once(" (")?;
    let id = rest.strip_suffix(')')?;
    (check_app_target(name).is_ok() && is_bundle_id(id)).then(|| (name.to_string(), id.to_string()))
}

/// The refusal when the user declines.
pub fn denied(app: &str) -> CuError {
    CuError::new(
        CuCode::ApprovalDenied,
        format!("The user declined Computer Use on {app}. Do not retry on this app unless the user asks."),
    )
}
