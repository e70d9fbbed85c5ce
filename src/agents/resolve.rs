//! Which tools a delegate gets (docs/agents.md "Tools"). A definition names work tools: Read, Glob, Grep, Bash,
//! Edit, Write (BrowserPreview is accepted as a name but Pi has no such tool). Each name maps to the tool that does
//! that work in this session: the host tool when it is on, else the toolkit's Codex equivalent (exec_command with
//! write_stdin for Bash, apply_patch for Edit and Write), else Pi's builtin. Without `inherit`, a delegate never gets
//! a tool just because its parent has it; with `inherit` it gets the parent's live catalog (deferred tools
//! included) minus the tools that would let it delegate, switch modes, talk to the user or reshape its own catalog.

use super::definition::ToolSpec;

/// The work tools `"*"` stands for (BrowserPreview has no Pi tool, so it is not among them).
pub const ALL_WORK_TOOLS: [&str; 6] = ["Read", "Glob", "Grep", "Bash", "Edit", "Write"];
/// What a definition without `tools` gets.
pub const DEFAULT_TOOLS: [&str; 3] = ["Read", "Glob", "Grep"];
/// Never inherited: delegation and the background-task tools, the mode switch, the user dialog, the context reset
/// and the tool search.
pub const NEVER_INHERITED: [&str; 10] = [
    "Task",
    "TaskWait",
    "TaskList",
    "TaskStop",
    "EnterPlanMode",
    "SubmitPlan",
    "asktool",
    "new_context",
    "find_tools",
    "EnterGoalMode",
];

/// The toolkit's atomic registration groups (src/rules/registration.rs): the toolkit registers and admits a group
/// only when Pi shows it every name, so a delegate's Pi must allow the whole group even when the delegate gets one.
const GROUPS: [&[&str]; 5] = [
    &["Read", "Glob", "Grep"],
    &["Write", "Edit"],
    &["Bash", "TaskList", "TaskWait", "TaskStop"],
    &["exec_command", "write_stdin"],
    &["exec", "wait"],
];

/// A delegate's tool list and what was dropped on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The tools the delegate may call, in declaration order, no duplicates.
    pub tools: Vec<String>,
    /// Pi's `--tools` allowlist for the delegate's process: `tools` plus the rest of each toolkit group they belong
    /// to (the delegate's toolkit then keeps only `tools` active and refuses any other call).
    pub allowlist: Vec<String>,
    pub warnings: Vec<String>,
}

/// The candidates that do one work tool's job, best first; `None` = not a work tool name.
fn candidates(work: &str) -> Option<&'static [&'static [&'static str]]> {
    Some(match work {
        "Read" => &[&["Read"], &["read"]],
        "Glob" => &[&["Glob"], &["find", "ls"]],
        "Grep" => &[&["Grep"], &["grep"]],
        "Bash" => &[&["Bash"], &["exec_command", "write_stdin"], &["bash"]],
        "Edit" => &[&["Edit"], &["apply_patch"], &["edit"]],
        "Write" => &[&["Write"], &["apply_patch"], &["write"]],
        _ => return None,
    })
}

/// The canonical spelling of a work tool name (`bash` → `Bash`), or `None`.
fn work_name(name: &str) -> Option<&'static str> {
    ALL_WORK_TOOLS
        .iter()
        .copied()
        .chain(["BrowserPreview"])
        .find(|w| w.eq_ignore_ascii_case(name))
}

fn push(out: &mut Vec<String>, name: &str) {
    if !out.iter().any(|n| n == name) {
        out.push(name.to_string());
    }
}

/// Resolves `spec` against the parent's live `catalog` (its active tools plus the deferred ones it could load).
pub fn resolve(spec: &ToolSpec, catalog: &[String]) -> Resolved {
    let mut r = Resolved::default();
    let has = |n: &str| catalog.iter().any(|c| c == n);
    let declared: Vec<String> = match spec {
        ToolSpec::Default => DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect(),
        ToolSpec::All => ALL_WORK_TOOLS.iter().map(|s| s.to_string()).collect(),
        ToolSpec::List(items) => items.clone(),
    };
    for name in &declared {
        if name == "inherit" {
            for n in catalog {
                if !NEVER_INHERITED.contains(&n.as_str()) {
                    push(&mut r.tools, n);
                }
            }
            continue;
        }
        if name == "*" {
            r.warnings
                .push("`*` inside a list means nothing; write `tools: \"*\"` alone for every work tool".into());
            continue;
        }
        let Some(work) = work_name(name) else {
            r.warnings.push(format!(
                "unknown tool `{name}` was dropped (use Read, Glob, Grep, Bash, Edit, Write or inherit)"
            ));
            continue;
        };
        let Some(options) = candidates(work) else {
            r.warnings.push(format!("`{work}` has no Pi tool and was dropped"));
            continue;
        };
        match options.iter().find(|set| set.iter().all(|n| has(n))) {
            Some(set) => set.iter().for_each(|n| push(&mut r.tools, n)),
            None => r.warnings.push(format!(
                "`{work}` is not available in this session (none of {} is on) and was dropped",
                options.iter().map(|s| s.join("+")).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    r.allowlist = r.tools.clone();
    for t in &r.tools {
        if let Some(g) = GROUPS.iter().position(|g| g.contains(&t.as_str())) {
            GROUPS[g].iter().for_each(|n| push(&mut r.allowlist, n));
            // the host Write/Edit and Bash families are admitted only beside the read set (src/rules/decide.rs)
            if g == 1 || g == 2 {
                GROUPS[0].iter().for_each(|n| push(&mut r.allowlist, n));
            }
        }
    }
    r
}
