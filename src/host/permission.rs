//! Host tool permissions (docs/spec/host-tools.md "Permission model", docs/host.md "Permissions"): the mode
//! table, the per-session allow-session set and the resolution order. Pure decisions; the dialog itself is Pi's
//! (`ctx.ui.select`, src/pi/tools/host.ts), because only the Pi side can ask the user.
//!
//! Why in Rust: the same table decides for every host tool (and `bash`'s Bash/Task tools later), is tested here
//! at every cell, and keeps the TypeScript glue to "ask when told to".

use std::collections::HashSet;

/// A call that needed the user's confirmation and did not get it (no UI, or the user said no).
pub const TOOL_DENIED: &str = "TOOL_DENIED";

/// `hostTools.permissionMode`, or a session override set with `/pct permission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Ask,
    AcceptEdits,
    Auto,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "ask" => Some(Mode::Ask),
            "accept-edits" => Some(Mode::AcceptEdits),
            "auto" => Some(Mode::Auto),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept-edits",
            Mode::Auto => "auto",
        }
    }
}

/// What a tool does, for the mode table: `Read` (Read, Glob, Grep, TaskList, TaskWait), `Edit` (Write, Edit) or
/// `Bash` (Bash, TaskStop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Risk {
    Read,
    Edit,
    Bash,
}

impl Risk {
    pub fn parse(s: &str) -> Option<Risk> {
        match s {
            "read" => Some(Risk::Read),
            "edit" => Some(Risk::Edit),
            "bash" => Some(Risk::Bash),
            _ => None,
        }
    }
}

/// One call as the permission layer sees it.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub tool: &'a str,
    pub risk: Risk,
    /// The target is an external path request (`..` escape, symlink escape or absolute outside both roots).
    pub external: bool,
    /// The call writes only under the session scratch root (never asks).
    pub scratch: bool,
    /// Whether a dialog can be shown (`ctx.hasUI`).
    pub has_ui: bool,
}

/// What to do with a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Run without asking; `reason` says which rule allowed it (for the audit line).
    Allow { reason: &'static str },
    /// Show the allow-once / allow-session / deny card and wait (no timeout).
    Ask,
    /// Refused without asking: TOOL_DENIED with this message.
    Deny { message: String },
}

/// The decision and the mode it was taken under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub mode: Mode,
}

/// The per-session state: the `/pct permission` override and the tools the user allowed for the session.
/// Memory only (docs/spec/host-tools.md: "remembered per session by tool name, in memory only").
#[derive(Debug, Default)]
pub struct Permissions {
    session_override: Option<Mode>,
    allowed: HashSet<String>,
}

impl Permissions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolution order: the session override, then the config default, then `ask`.
    pub fn mode(&self, config_mode: Option<&str>) -> Mode {
        self.session_override
            .or_else(|| config_mode.and_then(Mode::parse))
            .unwrap_or(Mode::Ask)
    }

    pub fn session_override(&self) -> Option<Mode> {
        self.session_override
    }

    pub fn set_override(&mut self, mode: Option<Mode>) {
        self.session_override = mode;
    }

    /// The user chose "allow for this session" on a card for `tool`.
    pub fn allow_session(&mut self, tool: &str) {
        self.allowed.insert(tool.to_string());
    }

    /// Tools allowed for the session, sorted.
    pub fn allowed(&self) -> Vec<String> {
        let mut v: Vec<String> = self.allowed.iter().cloned().collect();
        v.sort();
        v
    }

    /// Decides one call (docs/spec/host-tools.md mode table).
    pub fn decide(&self, req: &Request, config_mode: Option<&str>) -> Decision {
        let mode = self.mode(config_mode);
        let verdict = decide_in(mode, req, self.allowed.contains(req.tool));
        Decision { verdict, mode }
    }
}

/// The table itself, for one mode.
fn decide_in(mode: Mode, req: &Request, allowed_for_session: bool) -> Verdict {
    // Scratch writes never ask; external paths always ask below `auto`, whatever the tool.
    let needs_card = if req.external {
        mode != Mode::Auto
    } else if req.scratch && req.risk == Risk::Edit {
        return Verdict::Allow { reason: "scratch" };
    } else {
        match (req.risk, mode) {
            (Risk::Read, _) => return Verdict::Allow { reason: "low-risk" },
            (Risk::Edit, Mode::Ask) => true,
            (Risk::Edit, _) => false,
            (Risk::Bash, Mode::Auto) => false,
            (Risk::Bash, _) => true,
        }
    };
    if !needs_card {
        return Verdict::Allow { reason: "mode" };
    }
    if allowed_for_session {
        return Verdict::Allow {
            reason: "allow-session",
        };
    }
    if !req.has_ui {
        return Verdict::Deny {
            message: headless_message(mode, req),
        };
    }
    Verdict::Ask
}

/// The mode that would run `req` without a card.
fn mode_that_allows(req: &Request) -> Mode {
    if req.external || req.risk == Risk::Bash {
        Mode::Auto
    } else {
        Mode::AcceptEdits
    }
}

/// TOOL_DENIED without a UI: names the mode that would allow the call and how to set it.
fn headless_message(mode: Mode, req: &Request) -> String {
    let what = if req.external {
        format!("{} on a path outside the workspace", req.tool)
    } else {
        req.tool.to_string()
    };
    format!(
        "{what} needs the user's confirmation in permission mode {}, and this session has no interactive UI to ask. \
         Permission mode {} would allow it (hostTools.permissionMode in the config, /pct config, or /pct permission \
         for this session); until the user changes it, do not retry this call.",
        mode.as_str(),
        mode_that_allows(req).as_str()
    )
}

/// The TOOL_DENIED message when the user chose Deny (or dismissed the card).
pub fn user_denied_message(tool: &str) -> String {
    format!(
        "The user denied permission for this {tool} call; it did not run. Do not retry it as is: ask the user how to \
         proceed, or continue without it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(risk: Risk, external: bool, scratch: bool, has_ui: bool) -> Request<'static> {
        Request {
            tool: match risk {
                Risk::Read => "Read",
                Risk::Edit => "Write",
                Risk::Bash => "Bash",
            },
            risk,
            external,
            scratch,
            has_ui,
        }
    }

    fn verdict(mode: &str, r: &Request) -> Verdict {
        Permissions::new().decide(r, Some(mode)).verdict
    }

    const ALLOW_MODE: Verdict = Verdict::Allow { reason: "mode" };

    #[test]
    fn the_mode_table_cell_by_cell() {
        // (risk, mode) -> ask? inside the workspace, with a UI.
        let table = [
            (Risk::Read, "ask", Verdict::Allow { reason: "low-risk" }),
            (Risk::Read, "accept-edits", Verdict::Allow { reason: "low-risk" }),
            (Risk::Read, "auto", Verdict::Allow { reason: "low-risk" }),
            (Risk::Edit, "ask", Verdict::Ask),
            (Risk::Edit, "accept-edits", ALLOW_MODE),
            (Risk::Edit, "auto", ALLOW_MODE),
            (Risk::Bash, "ask", Verdict::Ask),
            (Risk::Bash, "accept-edits", Verdict::Ask),
            (Risk::Bash, "auto", ALLOW_MODE),
        ];
        for (risk, mode, want) in table {
            assert_eq!(
                verdict(mode, &req(risk, false, false, true)),
                want,
                "{risk:?} in {mode}"
            );
        }
    }

    #[test]
    fn external_paths_ask_below_auto_even_for_reads() {
        for risk in [Risk::Read, Risk::Edit, Risk::Bash] {
            assert_eq!(verdict("ask", &req(risk, true, false, true)), Verdict::Ask);
            assert_eq!(verdict("accept-edits", &req(risk, true, false, true)), Verdict::Ask);
            assert_eq!(verdict("auto", &req(risk, true, false, true)), ALLOW_MODE);
        }
    }

    #[test]
    fn scratch_writes_never_ask() {
        assert_eq!(
            verdict("ask", &req(Risk::Edit, false, true, false)),
            Verdict::Allow { reason: "scratch" }
        );
    }

    #[test]
    fn headless_denial_names_the_mode_that_would_allow() {
        let Verdict::Deny { message } = verdict("ask", &req(Risk::Edit, false, false, false)) else {
            panic!("denied")
        };
        assert!(message.starts_with("Write needs the user's confirmation in permission mode ask"));
        assert!(message.contains("Permission mode accept-edits would allow it"));
        let Verdict::Deny { message } = verdict("accept-edits", &req(Risk::Bash, false, false, false)) else {
            panic!("denied")
        };
        assert!(message.contains("in permission mode accept-edits") && message.contains("Permission mode auto"));
        let Verdict::Deny { message } = verdict("ask", &req(Risk::Read, true, false, false)) else {
            panic!("denied")
        };
        assert!(message.starts_with("Read on a path outside the workspace needs"));
        assert!(message.contains("Permission mode auto would allow it"));
    }

    #[test]
    fn allow_session_is_per_tool_name() {
        let mut p = Permissions::new();
        p.allow_session("Write");
        let w = req(Risk::Edit, false, false, false);
        assert_eq!(
            p.decide(&w, Some("ask")).verdict,
            Verdict::Allow {
                reason: "allow-session"
            }
        );
        let mut e = req(Risk::Edit, false, false, true);
        e.tool = "Edit";
        assert_eq!(p.decide(&e, Some("ask")).verdict, Verdict::Ask);
        assert_eq!(p.allowed(), vec!["Write".to_string()]);
    }

    #[test]
    fn resolution_order_override_then_config_then_ask() {
        let mut p = Permissions::new();
        assert_eq!(p.mode(None), Mode::Ask);
        assert_eq!(p.mode(Some("bogus")), Mode::Ask);
        assert_eq!(p.mode(Some("auto")), Mode::Auto);
        p.set_override(Some(Mode::AcceptEdits));
        assert_eq!(p.mode(Some("auto")), Mode::AcceptEdits);
        assert_eq!(
            p.decide(&req(Risk::Edit, false, false, false), Some("ask")).verdict,
            ALLOW_MODE
        );
        p.set_override(None);
        assert_eq!(p.mode(Some("auto")), Mode::Auto);
    }

    #[test]
    fn user_denial_says_so() {
        assert!(user_denied_message("Edit").starts_with("The user denied permission for this Edit call"));
    }
}
