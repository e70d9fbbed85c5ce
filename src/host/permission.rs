//! One permission policy for every toolkit tool (docs/permissions.md; docs/spec/host-tools.md "Permission model"):
//! the risk of each tool, the mode table (ask / accept-edits / auto), the operation mode (Agent / Plan) whose hard
//! denials come before any card, the per-session allow-session set and the resolution order. Pure decisions; the
//! dialog itself is Pi's (`ctx.ui.select`, src/pi/tools/host.ts), because only the Pi side can ask the user.
//!
//! Why in Rust: the same table decides for the host tools, the Codex tools (apply_patch, exec_command,
//! write_stdin, direct or nested in a code cell) and other extensions' tools, is tested here at every cell, and
//! keeps the TypeScript glue to "ask when told to".
//!
//! Over 600 lines only with its inline tests (the code itself is about 365 lines).

use std::collections::HashSet;

crate::codes::error_codes! {
    /// Why the policy refused a call (docs/permissions.md "Refusal codes"). `SCREAMING_SNAKE`, as the host tools',
    /// whatever tool is refused: the seed's permission contract spells them so.
    pub enum DenyCode {
        /// A call that needed the user's confirmation and did not get it (no UI, or the user said no).
        ToolDenied = "TOOL_DENIED" => "do not retry the same call; ask the user, or pick a tool the mode allows",
        /// Plan mode: a tool of the edit family (Write, Edit, apply_patch, direct or nested) is refused before
        /// any card.
        EditDisabledInPlan = "EDIT_DISABLED_IN_PLAN" => "finish the plan and submit it with SubmitPlan",
        /// Plan mode: another extension's tool that the config does not declare plan-safe is refused before any
        /// card.
        PluginDisabledInPlan = "PLUGIN_DISABLED_IN_PLAN" => "plan with the read tools, then submit the plan",
        /// A command that names a sensitive path (src/host/sensitive.rs) and no UI to ask: such a command is never
        /// allowed without a card, in any mode.
        SensitivePath = "SENSITIVE_PATH" => "leave the sensitive path alone; ask the user to do what is needed there",
    }
}

/// The permission mode: `permissions.mode` (or the older `hostTools.permissionMode`), or a session override set
/// with `/pct permission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Ask,
    AcceptEdits,
    Auto,
}

impl Mode {
    /// All modes, in the order the docs list them.
    pub const ALL: [Mode; 3] = [Mode::Ask, Mode::AcceptEdits, Mode::Auto];

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

/// The operation mode (docs/permissions.md "Plan mode"): Agent works under the permission mode; Plan refuses
/// the edit family and undeclared extension tools before any card.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpMode {
    Agent,
    Plan,
}

impl OpMode {
    /// A stored value: `agent` or `plan`; anything else is Plan (fail closed).
    pub fn parse_stored(s: Option<&str>) -> OpMode {
        match s {
            Some("agent") => OpMode::Agent,
            _ => OpMode::Plan,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            OpMode::Agent => "agent",
            OpMode::Plan => "plan",
        }
    }
}

/// What a tool does, for the mode table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Risk {
    /// Low: reads and searches (Read, Glob, Grep), observing tasks (TaskList, TaskWait), Web Search.
    Read,
    /// Edit risk: Write, Edit, apply_patch (direct or nested in a code cell), Image Generation.
    Edit,
    /// Command risk: Bash, TaskStop, exec_command, write_stdin that sends input (direct or nested).
    Bash,
    /// Medium: MCP tools and other extensions' tools, whatever they declare.
    Plugin,
}

impl Risk {
    pub fn parse(s: &str) -> Option<Risk> {
        match s {
            "read" => Some(Risk::Read),
            "edit" => Some(Risk::Edit),
            "bash" => Some(Risk::Bash),
            "plugin" => Some(Risk::Plugin),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::Edit => "edit",
            Risk::Bash => "bash",
            Risk::Plugin => "plugin",
        }
    }
}

/// The toolkit's own tools that take no permission decision of this table: the code-cell pair (a cell is
/// sandboxed; its nested calls are decided one by one), the plan tools, the discovery tool and the Computer Use
/// tools (their own approval, docs/computer.md).
const SELF_GATED: [&str; 6] = [
    "exec",
    "wait",
    "EnterPlanMode",
    "SubmitPlan",
    "find_tools",
    "new_context",
];

/// Low-risk toolkit tools: reads and searches, task observation, and Web Search (it only sends the model's query to
/// the provider's own endpoint and changes nothing locally).
const LOW: [&str; 6] = ["Read", "Glob", "Grep", "TaskList", "TaskWait", "openai_web_search"];

/// The row of a tool by name: `None` for a tool that decides for itself ([`SELF_GATED`] and `computer_*`);
/// names the toolkit does not own are [`Risk::Plugin`]. `write_stdin` is command risk only when it sends input
/// (`sends_input`): a poll, closing stdin or terminating acts on the model's own command and asks nothing.
pub fn risk_of(tool: &str, sends_input: bool) -> Option<Risk> {
    if SELF_GATED.contains(&tool) || tool.starts_with("computer_") {
        return None;
    }
    Some(match tool {
        t if LOW.contains(&t) => Risk::Read,
        // Image Generation is high risk (the seed's GenerateImages): a separate, billed request that writes a file,
        // so it takes the edit row — a card in `ask`, and refused in Plan whatever the mode.
        "Write" | "Edit" | "apply_patch" | "openai_generate_image" => Risk::Edit,
        "Bash" | "TaskStop" | "exec_command" => Risk::Bash,
        "write_stdin" if sends_input => Risk::Bash,
        "write_stdin" => Risk::Read,
        _ => Risk::Plugin,
    })
}

/// Whether `tool` is an MCP tool (Pi 1.6 names them `mcp__<server>__<tool>`).
pub fn is_mcp(tool: &str) -> bool {
    tool.strip_prefix("mcp__").is_some_and(|rest| {
        rest.split_once("__")
            .is_some_and(|(s, t)| !s.is_empty() && !t.is_empty())
    })
}

/// One call as the permission layer sees it.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub tool: &'a str,
    pub risk: Risk,
    /// Some target is an external path request (`..` escape, symlink escape or absolute outside both roots).
    pub external: bool,
    /// Every path the call writes is under the session scratch root (never asks).
    pub scratch: bool,
    /// Whether a dialog can be shown (`ctx.hasUI`).
    pub has_ui: bool,
    /// A [`Risk::Plugin`] tool the config declares plan-safe (`permissions.planSafeTools`).
    pub plan_safe: bool,
    /// The sensitive path a command names (docs/permissions.md "Sensitive paths"): the call always shows a card,
    /// whatever the mode and the session grants, and is refused without a UI.
    pub sensitive: Option<&'a str>,
}

/// What to do with a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Run without asking; `reason` says which rule allowed it (for the audit line).
    Allow { reason: &'static str },
    /// Show the allow-once / allow-session / deny card and wait (no timeout).
    Ask,
    /// Refused without asking: `code` (`TOOL_DENIED` or a `*_DISABLED_IN_PLAN`) with this message.
    Deny { code: DenyCode, message: String },
}

/// The decision and the modes it was taken under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub mode: Mode,
    pub op_mode: OpMode,
}

/// The per-session state: the `/pct permission` override, the operation mode and the tools the user allowed for
/// the session. Memory only (docs/spec/host-tools.md: "remembered per session by tool name, in memory only"); the
/// operation mode is persisted by the glue in the session file and set here when the session starts.
#[derive(Debug)]
pub struct Permissions {
    session_override: Option<Mode>,
    op_mode: OpMode,
    allowed: HashSet<String>,
}

impl Default for Permissions {
    fn default() -> Self {
        Permissions {
            session_override: None,
            op_mode: OpMode::Agent,
            allowed: HashSet::new(),
        }
    }
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

    pub fn op_mode(&self) -> OpMode {
        self.op_mode
    }

    pub fn set_op_mode(&mut self, m: OpMode) {
        self.op_mode = m;
    }

    /// The user chose "allow for this session" on a card for `tool`. The grant never covers an external path.
    pub fn allow_session(&mut self, tool: &str) {
        self.allowed.insert(tool.to_string());
    }

    /// Tools allowed for the session, sorted.
    pub fn allowed(&self) -> Vec<String> {
        let mut v: Vec<String> = self.allowed.iter().cloned().collect();
        v.sort();
        v
    }

    /// Decides one call (docs/permissions.md "The matrix").
    pub fn decide(&self, req: &Request, config_mode: Option<&str>) -> Decision {
        let mode = self.mode(config_mode);
        let verdict = decide_in(mode, self.op_mode, req, self.allowed.contains(req.tool));
        Decision {
            verdict,
            mode,
            op_mode: self.op_mode,
        }
    }
}

/// The table itself, for one mode.
fn decide_in(mode: Mode, op: OpMode, req: &Request, allowed_for_session: bool) -> Verdict {
    // Plan's hard denials come first: no card, no session grant and no `auto` re-enables them.
    if op == OpMode::Plan {
        match req.risk {
            Risk::Edit => {
                return Verdict::Deny {
                    code: DenyCode::EditDisabledInPlan,
                    message: format!(
                        "{} is disabled in Plan mode: Plan reads and plans, it does not change files. Nothing was \
                         changed. Finish the plan and submit it with SubmitPlan; after the user approves it, Agent \
                         mode runs the changes.",
                        req.tool
                    ),
                }
            }
            Risk::Plugin if !req.plan_safe => {
                return Verdict::Deny {
                    code: DenyCode::PluginDisabledInPlan,
                    message: format!(
                        "{} is disabled in Plan mode (it is not declared plan-safe in permissions.planSafeTools). \
                         Nothing ran. Plan with the read tools, then submit the plan with SubmitPlan.",
                        req.tool
                    ),
                }
            }
            _ => {}
        }
    }
    // A command that names a sensitive path: never without a card, whatever the mode or a session grant says.
    if let Some(path) = req.sensitive {
        if !req.has_ui {
            return Verdict::Deny {
                code: DenyCode::SensitivePath,
                message: format!(
                    "{} names {path}, a sensitive path (credentials and keys): such a command always needs the user's \
                     confirmation, in every permission mode, and this session has no interactive UI to ask. Nothing \
                     ran. Do not look for another way to it; tell the user what to run there themselves.",
                    req.tool
                ),
            };
        }
        return Verdict::Ask;
    }
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
            (Risk::Bash | Risk::Plugin, Mode::Auto) => false,
            (Risk::Bash | Risk::Plugin, _) => true,
        }
    };
    if !needs_card {
        return Verdict::Allow { reason: "mode" };
    }
    // A session grant is per tool name and covers the session roots only: every external path asks.
    if allowed_for_session && !req.external {
        return Verdict::Allow {
            reason: "allow-session",
        };
    }
    if !req.has_ui {
        return Verdict::Deny {
            code: DenyCode::ToolDenied,
            message: headless_message(mode, req),
        };
    }
    Verdict::Ask
}

/// The mode that would run `req` without a card.
fn mode_that_allows(req: &Request) -> Mode {
    if req.external || matches!(req.risk, Risk::Bash | Risk::Plugin) {
        Mode::Auto
    } else {
        Mode::AcceptEdits
    }
}

/// `TOOL_DENIED` without a UI: names the mode that would allow the call and how to set it.
fn headless_message(mode: Mode, req: &Request) -> String {
    let what = if req.external {
        format!("{} on a path outside the workspace", req.tool)
    } else {
        req.tool.to_string()
    };
    format!(
        "{what} needs the user's confirmation in permission mode {}, and this session has no interactive UI to ask. \
         Permission mode {} would allow it (permissions.mode in the config, /pct config, or /pct permission \
         for this session); until the user changes it, do not retry this call.",
        mode.as_str(),
        mode_that_allows(req).as_str()
    )
}

/// The card's reason line for a tool of another extension (docs/permissions.md "MCP and other extensions").
pub fn plugin_reason(tool: &str) -> &'static str {
    if is_mcp(tool) {
        "MCP server tool requires approval"
    } else {
        "Extension tool requires approval"
    }
}

/// The `TOOL_DENIED` message when the user chose Deny (or dismissed the card).
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
                Risk::Plugin => "mcp__files__delete",
            },
            risk,
            external,
            scratch,
            has_ui,
            plan_safe: false,
            sensitive: None,
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
        let Verdict::Deny { message, .. } = verdict("ask", &req(Risk::Edit, false, false, false)) else {
            panic!("denied")
        };
        assert!(message.starts_with("Write needs the user's confirmation in permission mode ask"));
        assert!(message.contains("Permission mode accept-edits would allow it"));
        let Verdict::Deny { message, .. } = verdict("accept-edits", &req(Risk::Bash, false, false, false)) else {
            panic!("denied")
        };
        assert!(message.contains("in permission mode accept-edits") && message.contains("Permission mode auto"));
        let Verdict::Deny { message, .. } = verdict("ask", &req(Risk::Read, true, false, false)) else {
            panic!("denied")
        };
        assert!(message.starts_with("Read on a path outside the workspace needs"));
        assert!(message.contains("Permission mode auto would allow it"));
    }

    /// Where a call's paths are.
    #[derive(Clone, Copy, Debug)]
    enum Loc {
        Root,
        Scratch,
        External,
    }

    /// The whole matrix of docs/permissions.md, spelled out cell by cell (not derived from the code): for each
    /// tool and location, the verdict in Agent ask / accept-edits / auto, then Plan ask / accept-edits / auto.
    /// `A` allow, `C` card, `P` hard Plan denial (before any card).
    #[test]
    fn the_policy_table_tool_by_mode_by_operation_mode_by_location() {
        use Loc::*;
        let table: &[(&str, bool, Loc, &str)] = &[
            ("Read", false, Root, "AAA AAA"),
            ("Read", false, Scratch, "AAA AAA"),
            ("Read", false, External, "CCA CCA"),
            ("Glob", false, Root, "AAA AAA"),
            ("Glob", false, External, "CCA CCA"),
            ("Grep", false, Root, "AAA AAA"),
            ("Grep", false, External, "CCA CCA"),
            ("TaskList", false, Root, "AAA AAA"),
            ("TaskWait", false, Root, "AAA AAA"),
            ("openai_web_search", false, Root, "AAA AAA"),
            ("openai_generate_image", false, Root, "CAA PPP"),
            ("Write", false, Root, "CAA PPP"),
            ("Write", false, Scratch, "AAA PPP"),
            ("Write", false, External, "CCA PPP"),
            ("Edit", false, Root, "CAA PPP"),
            ("Edit", false, Scratch, "AAA PPP"),
            ("Edit", false, External, "CCA PPP"),
            ("apply_patch", false, Root, "CAA PPP"),
            ("Bash", false, Root, "CCA CCA"),
            ("TaskStop", false, Root, "CCA CCA"),
            ("exec_command", false, Root, "CCA CCA"),
            ("write_stdin", true, Root, "CCA CCA"),
            ("write_stdin", false, Root, "AAA AAA"),
            ("mcp__files__delete", false, Root, "CCA PPP"),
            ("other_extension_tool", false, Root, "CCA PPP"),
        ];
        for &(tool, sends_input, loc, want) in table {
            let risk = risk_of(tool, sends_input).expect("a decided tool");
            let want: Vec<char> = want.chars().filter(|c| *c != ' ').collect();
            let mut i = 0;
            for op in [OpMode::Agent, OpMode::Plan] {
                for mode in Mode::ALL {
                    let mut p = Permissions::new();
                    p.set_op_mode(op);
                    let r = Request {
                        tool,
                        risk,
                        external: matches!(loc, External),
                        scratch: matches!(loc, Scratch),
                        has_ui: true,
                        plan_safe: false,
                        sensitive: None,
                    };
                    let got = match p.decide(&r, Some(mode.as_str())).verdict {
                        Verdict::Allow { .. } => 'A',
                        Verdict::Ask => 'C',
                        Verdict::Deny { code, .. } if code != DenyCode::ToolDenied => 'P',
                        Verdict::Deny { code, .. } => panic!("{tool} {loc:?} {mode:?} {op:?}: unexpected {code}"),
                    };
                    assert_eq!(got, want[i], "{tool} at {loc:?} in {} / {}", op.as_str(), mode.as_str());
                    i += 1;
                }
            }
        }
    }

    #[test]
    fn tools_that_decide_for_themselves_have_no_row() {
        for t in [
            "exec",
            "wait",
            "EnterPlanMode",
            "SubmitPlan",
            "find_tools",
            "computer_click",
        ] {
            assert_eq!(risk_of(t, false), None, "{t}");
        }
    }

    #[test]
    fn plan_denials_come_before_any_card_session_grant_or_headless_rule() {
        let mut p = Permissions::new();
        p.allow_session("Write");
        p.allow_session("mcp__files__delete");
        p.set_op_mode(OpMode::Plan);
        let mut w = req(Risk::Edit, false, false, false);
        let d = p.decide(&w, Some("auto"));
        assert!(
            matches!(
                d.verdict,
                Verdict::Deny {
                    code: DenyCode::EditDisabledInPlan,
                    ..
                }
            ),
            "{d:?}"
        );
        w.scratch = true;
        assert!(matches!(
            p.decide(&w, Some("auto")).verdict,
            Verdict::Deny {
                code: DenyCode::EditDisabledInPlan,
                ..
            }
        ));
        let m = req(Risk::Plugin, false, false, true);
        let Verdict::Deny { code, message } = p.decide(&m, Some("auto")).verdict else {
            panic!("denied")
        };
        assert_eq!(code, DenyCode::PluginDisabledInPlan);
        assert!(message.starts_with("mcp__files__delete is disabled in Plan mode"));
        // Declared plan-safe: the permission mode decides again (and the session grant counts).
        let safe = Request {
            plan_safe: true,
            has_ui: false,
            ..m
        };
        assert_eq!(
            p.decide(&safe, Some("ask")).verdict,
            Verdict::Allow {
                reason: "allow-session"
            }
        );
        assert!(matches!(
            Permissions::new()
                .decide(
                    &Request {
                        plan_safe: true,
                        ..req(Risk::Plugin, false, false, false)
                    },
                    Some("ask")
                )
                .verdict,
            Verdict::Deny {
                code: DenyCode::ToolDenied,
                ..
            }
        ));
    }

    #[test]
    fn an_unknown_stored_operation_mode_is_plan() {
        assert_eq!(OpMode::parse_stored(Some("agent")), OpMode::Agent);
        assert_eq!(OpMode::parse_stored(Some("plan")), OpMode::Plan);
        assert_eq!(OpMode::parse_stored(Some("Agent")), OpMode::Plan);
        assert_eq!(OpMode::parse_stored(None), OpMode::Plan);
    }

    #[test]
    fn mcp_names_and_the_card_reason() {
        assert!(is_mcp("mcp__github__create_issue"));
        for n in ["mcp__", "mcp__x", "mcp____t", "mcp__x__", "mcp_x_y", "Read"] {
            assert!(!is_mcp(n), "{n}");
        }
        assert_eq!(
            plugin_reason("mcp__github__create_issue"),
            "MCP server tool requires approval"
        );
        assert_eq!(plugin_reason("todo"), "Extension tool requires approval");
    }

    #[test]
    fn a_session_grant_never_covers_an_external_path() {
        let mut p = Permissions::new();
        for (tool, risk) in [("Write", Risk::Edit), ("Read", Risk::Read), ("Edit", Risk::Edit)] {
            p.allow_session(tool);
            let inside = Request {
                tool,
                ..req(risk, false, false, true)
            };
            if risk == Risk::Edit {
                assert_eq!(
                    p.decide(&inside, Some("ask")).verdict,
                    Verdict::Allow {
                        reason: "allow-session"
                    }
                );
            }
            let outside = Request {
                tool,
                ..req(risk, true, false, true)
            };
            for mode in ["ask", "accept-edits"] {
                assert_eq!(
                    p.decide(&outside, Some(mode)).verdict,
                    Verdict::Ask,
                    "{tool} external in {mode}"
                );
                let headless = Request {
                    has_ui: false,
                    ..outside.clone()
                };
                assert!(matches!(
                    p.decide(&headless, Some(mode)).verdict,
                    Verdict::Deny {
                        code: DenyCode::ToolDenied,
                        ..
                    }
                ));
            }
            assert_eq!(p.decide(&outside, Some("auto")).verdict, ALLOW_MODE);
        }
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
    fn a_command_naming_a_sensitive_path_always_asks_and_never_runs_headless() {
        for op in [OpMode::Agent, OpMode::Plan] {
            let mut p = Permissions::new();
            p.set_op_mode(op);
            p.allow_session("Bash");
            for mode in Mode::ALL {
                let r = Request {
                    sensitive: Some("~/.ssh"),
                    ..req(Risk::Bash, false, false, true)
                };
                assert_eq!(
                    p.decide(&r, Some(mode.as_str())).verdict,
                    Verdict::Ask,
                    "{op:?} {mode:?}"
                );
                let headless = Request { has_ui: false, ..r };
                let Verdict::Deny { code, message } = p.decide(&headless, Some(mode.as_str())).verdict else {
                    panic!("denied")
                };
                assert_eq!(code, DenyCode::SensitivePath);
                assert!(message.starts_with("Bash names ~/.ssh, a sensitive path"), "{message}");
            }
        }
        // Plan's hard denials still come first.
        let mut p = Permissions::new();
        p.set_op_mode(OpMode::Plan);
        let w = Request {
            sensitive: Some("~/.ssh"),
            ..req(Risk::Edit, false, false, true)
        };
        assert!(matches!(
            p.decide(&w, Some("auto")).verdict,
            Verdict::Deny {
                code: DenyCode::EditDisabledInPlan,
                ..
            }
        ));
    }

    #[test]
    fn user_denial_says_so() {
        assert!(user_denied_message("Edit").starts_with("The user denied permission for this Edit call"));
    }

    #[test]
    fn refusal_codes_match_the_doc_table_and_index_d_ts() {
        use crate::codes::check::{doc_table, dts_union, with_extra};
        let all: Vec<&str> = DenyCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            doc_table(include_str!("../../docs/permissions.md"), "## Refusal codes"),
            all
        );
        assert_eq!(
            dts_union(include_str!("../../index.d.ts"), "HostPermissionDecision", "code"),
            with_extra(all, &[])
        );
    }
}
