//! The toolkit's tool names, their features and their atomic groups (docs/spec/toolkit.md §3, §8).
//!
//! Why one table: ownership, projection, status and discovery must agree on which names belong together;
//! keeping the grouping here means a new tool is one edit, not five.

/// Pi's builtins the execution routes may hide (`read` only by the host tools).
pub const BASH: &str = "bash";
pub const EDIT: &str = "edit";
pub const WRITE: &str = "write";
/// Pi's read-only builtins the host tools replace (docs/spec/host-tools.md, top).
pub const READ: &str = "read";
pub const GREP: &str = "grep";
pub const FIND: &str = "find";
pub const LS: &str = "ls";
/// Every builtin this extension may hide, in the order they are restored.
pub const HIDEABLE_BUILTINS: [&str; 7] = [BASH, EDIT, WRITE, READ, GREP, FIND, LS];

/// The host file tools (docs/spec/host-tools.md). Read, Glob and Grep are an atomic group (the read-only set
/// replaces Pi's read, grep, find and ls together); Write and Edit are the edit/write family and join when
/// registered.
pub const HOST_READ: &str = "Read";
pub const HOST_GLOB: &str = "Glob";
pub const HOST_GREP: &str = "Grep";
pub const HOST_WRITE: &str = "Write";
pub const HOST_EDIT: &str = "Edit";
pub const HOST_READ_SET: [&str; 3] = [HOST_READ, HOST_GLOB, HOST_GREP];
pub const HOST_EDIT_SET: [&str; 2] = [HOST_WRITE, HOST_EDIT];
/// Host Bash and its task tools: the bash family (docs/spec/host-tools.md, top), an atomic group that replaces Pi's
/// bash and steps aside while a shell or code route owns the shell.
pub const HOST_BASH: &str = "Bash";
pub const HOST_TASK_LIST: &str = "TaskList";
pub const HOST_TASK_WAIT: &str = "TaskWait";
pub const HOST_TASK_STOP: &str = "TaskStop";
pub const HOST_BASH_SET: [&str; 4] = [HOST_BASH, HOST_TASK_LIST, HOST_TASK_WAIT, HOST_TASK_STOP];
/// The plan tools (docs/permissions.md "The plan tools"): they come with the host tools (the seed's built-in set),
/// each its own registration group (src/rules/registration.rs). EnterPlanMode is visible in Agent only, SubmitPlan in Plan only.
pub const ENTER_PLAN_MODE: &str = "EnterPlanMode";
pub const SUBMIT_PLAN: &str = "SubmitPlan";
/// The host tools proper, Read … TaskStop.
pub const HOST_NAMES: [&str; 9] = [
    HOST_READ,
    HOST_GLOB,
    HOST_GREP,
    HOST_WRITE,
    HOST_EDIT,
    HOST_BASH,
    HOST_TASK_LIST,
    HOST_TASK_WAIT,
    HOST_TASK_STOP,
];
/// Every name the Host Tools feature registers: the host tools ([`HOST_NAMES`]), then the plan tools.
pub const HOST_FEATURE_NAMES: [&str; 11] = {
    let mut out = [""; 11];
    let mut i = 0;
    while i < HOST_NAMES.len() {
        out[i] = HOST_NAMES[i];
        i += 1;
    }
    out[9] = ENTER_PLAN_MODE;
    out[10] = SUBMIT_PLAN;
    out
};

pub const APPLY_PATCH: &str = "apply_patch";
pub const EXEC_COMMAND: &str = "exec_command";
pub const WRITE_STDIN: &str = "write_stdin";
pub const EXEC: &str = "exec";
pub const WAIT: &str = "wait";
pub const FIND_TOOLS: &str = "find_tools";
pub const WEB_SEARCH: &str = "openai_web_search";
pub const GENERATE_IMAGE: &str = "openai_generate_image";

/// Task delegation (docs/agents.md): registered with `subagents.enabled`; which sessions see it is decided by the
/// glue (Agent mode, at least one definition), so the projection does not manage it.
pub const TASK: &str = "Task";

/// The interactive tools (docs/interactive.md): asktool, TodoWrite and new_context, each with its own switch.
pub const INTERACTIVE: [&str; 3] = crate::interactive::PLAN_SAFE;

/// The six Computer Use names: an atomic group (all or none).
pub const COMPUTER_USE: [&str; 6] = [
    "computer_use_list_apps",
    "computer_use_get_app_state",
    "computer_use_click",
    "computer_use_type_text",
    "computer_use_press_key",
    "computer_use_scroll",
];

/// Names `toolDiscovery.deferred` may list: toolkit-owned and deferrable (never find_tools itself).
pub const DEFERRABLE: [&str; 13] = [
    WEB_SEARCH,
    GENERATE_IMAGE,
    APPLY_PATCH,
    EXEC_COMMAND,
    WRITE_STDIN,
    EXEC,
    WAIT,
    COMPUTER_USE[0],
    COMPUTER_USE[1],
    COMPUTER_USE[2],
    COMPUTER_USE[3],
    COMPUTER_USE[4],
    COMPUTER_USE[5],
];

/// When an on-demand tool stops needing `find_tools` (seed 000 §2.1; docs/rules.md "On-demand host tools").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDemand {
    /// Always listed in the on-demand catalog and loaded through `find_tools` (Glob, Grep).
    Always,
    /// On demand until the session has a background task; then active like the core tools (the Task tools).
    UntilBackgroundTask,
}

/// The on-demand table: the tools the first request leaves out, each with its catalog line (a compact summary
/// with the parameters, what the model needs to decide to load it). A tool joins the table to become on-demand;
/// nothing else changes for it (permissions, containment, timeouts and audit are the same once loaded).
pub const ON_DEMAND: [(&str, OnDemand, &str); 5] = [
    (
        HOST_GLOB,
        OnDemand::Always,
        "List files matching a glob (pattern, path?, limit?); .gitignore honoured.",
    ),
    (
        HOST_GREP,
        OnDemand::Always,
        "Search file contents by regex (pattern, path?, glob?, ignoreCase?, literal?, context?, limit?, outputMode?).",
    ),
    (
        HOST_TASK_LIST,
        OnDemand::UntilBackgroundTask,
        "List this session's background tasks.",
    ),
    (
        HOST_TASK_WAIT,
        OnDemand::UntilBackgroundTask,
        "Wait up to 1 s for a background task (backgroundTaskId) and show its output.",
    ),
    (
        HOST_TASK_STOP,
        OnDemand::UntilBackgroundTask,
        "Stop a background task (backgroundTaskId) and its process tree.",
    ),
];

/// The on-demand rule of a name (None = sent with the first request).
pub fn on_demand(name: &str) -> Option<OnDemand> {
    ON_DEMAND.iter().find(|(n, _, _)| *n == name).map(|(_, o, _)| *o)
}

/// The shell pair (atomic).
pub const SHELL_PAIR: [&str; 2] = [EXEC_COMMAND, WRITE_STDIN];
/// The code-cell pair (atomic).
pub const CODE_PAIR: [&str; 2] = [EXEC, WAIT];

/// One toolkit feature as `/pct status` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    WebSearch,
    RemoteCompaction,
    ImageGeneration,
    ApplyPatch,
    ComputerUse,
    ShellSessions,
    CodeMode,
    ToolDiscovery,
    HostTools,
    InteractiveTools,
}

impl Feature {
    /// Status order = the order of the config file's sections.
    pub const ALL: [Feature; 10] = [
        Feature::WebSearch,
        Feature::RemoteCompaction,
        Feature::ImageGeneration,
        Feature::ApplyPatch,
        Feature::ComputerUse,
        Feature::ShellSessions,
        Feature::CodeMode,
        Feature::ToolDiscovery,
        Feature::HostTools,
        Feature::InteractiveTools,
    ];

    /// The config section key (also the key used in JSON results).
    pub fn key(self) -> &'static str {
        match self {
            Feature::WebSearch => "webSearch",
            Feature::RemoteCompaction => "remoteCompaction",
            Feature::ImageGeneration => "imageGeneration",
            Feature::ApplyPatch => "applyPatch",
            Feature::ComputerUse => "computerUse",
            Feature::ShellSessions => "shellSessions",
            Feature::CodeMode => "codeMode",
            Feature::ToolDiscovery => "toolDiscovery",
            Feature::HostTools => "hostTools",
            Feature::InteractiveTools => "interactiveTools",
        }
    }

    /// The heading shown by `/pct status`.
    pub fn label(self) -> &'static str {
        match self {
            Feature::WebSearch => "Web Search",
            Feature::RemoteCompaction => "Remote Compaction",
            Feature::ImageGeneration => "Image Generation",
            Feature::ApplyPatch => "Apply Patch",
            Feature::ComputerUse => "Computer Use",
            Feature::ShellSessions => "Shell Sessions",
            Feature::CodeMode => "Code Mode",
            Feature::ToolDiscovery => "Tool Discovery",
            Feature::HostTools => "Host Tools",
            Feature::InteractiveTools => "Interactive Tools",
        }
    }

    /// The tool names this feature registers.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Feature::WebSearch => &[WEB_SEARCH],
            Feature::RemoteCompaction => &[],
            Feature::ImageGeneration => &[GENERATE_IMAGE],
            Feature::ApplyPatch => &[APPLY_PATCH],
            Feature::ComputerUse => &COMPUTER_USE,
            Feature::ShellSessions => &SHELL_PAIR,
            Feature::CodeMode => &CODE_PAIR,
            Feature::ToolDiscovery => &[FIND_TOOLS],
            Feature::HostTools => &HOST_FEATURE_NAMES,
            Feature::InteractiveTools => &INTERACTIVE,
        }
    }

    /// Whether this build ships an executor for the feature (Remote Compaction and Computer Use come later).
    pub fn is_built(self) -> bool {
        matches!(
            self,
            Feature::ApplyPatch
                | Feature::ShellSessions
                | Feature::CodeMode
                | Feature::ToolDiscovery
                | Feature::WebSearch
                | Feature::ImageGeneration
                | Feature::HostTools
                | Feature::RemoteCompaction
                | Feature::ComputerUse
                | Feature::InteractiveTools
        )
    }
}

/// Every toolkit-owned tool name, in the canonical order used when names are appended to the active set.
pub fn all_toolkit_names() -> impl Iterator<Item = &'static str> {
    Feature::ALL.iter().flat_map(|f| f.names().iter().copied())
}

/// The feature a toolkit name belongs to (None for names the toolkit does not own).
pub fn feature_of(name: &str) -> Option<Feature> {
    Feature::ALL.iter().copied().find(|f| f.names().contains(&name))
}

/// The names that may appear in `toolDiscovery.deferred`: every toolkit name except `find_tools` itself and the
/// host tools and the plan tools (they replace Pi's builtins, so holding them back would leave the model without file
/// tools; a plan tool is called at moments the model cannot plan a `find_tools` call for) and the
/// interactive tools (small, and asked for at moments the model cannot plan a `find_tools` call for).
pub fn is_deferrable(name: &str) -> bool {
    name != FIND_TOOLS
        && !HOST_FEATURE_NAMES.contains(&name)
        && !INTERACTIVE.contains(&name)
        && feature_of(name).is_some()
}

/// Fallback one-line descriptions for managed names that are not registered (so a query can still find them).
pub fn fallback_description(name: &str) -> &'static str {
    match name {
        APPLY_PATCH => "Edit files with a Codex-style patch envelope (add, update, move and delete files).",
        EXEC_COMMAND => "Start a shell command once and return its output so far, or a session handle while it runs.",
        WRITE_STDIN => "Poll a running shell session, write to its stdin, close stdin or terminate it.",
        EXEC => "Run a JavaScript code cell that can call the admitted toolkit adapters.",
        WAIT => "Wait for a running code cell, read its output, or terminate it.",
        WEB_SEARCH => "Search the web through a separate OpenAI request (sidecar web search).",
        GENERATE_IMAGE => "Generate an image with OpenAI image generation and save it as a PNG.",
        "computer_use_list_apps" => "Computer Use: list the running desktop applications.",
        "computer_use_get_app_state" => "Computer Use: read the state and screenshot of one application.",
        "computer_use_click" => "Computer Use: click at a position or element in an application.",
        "computer_use_type_text" => "Computer Use: type text into the focused application.",
        "computer_use_press_key" => "Computer Use: press a key or key combination.",
        "computer_use_scroll" => "Computer Use: scroll inside an application.",
        _ => ON_DEMAND
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, _, line)| *line)
            .unwrap_or(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_one_feature_and_a_description() {
        let names: Vec<_> = all_toolkit_names().collect();
        assert_eq!(names.len(), 28);
        for n in &names {
            assert!(feature_of(n).is_some());
            if INTERACTIVE.contains(n) {
                assert!(!is_deferrable(n), "{n}: interactive tools are never deferred");
            } else if HOST_FEATURE_NAMES.contains(n) {
                assert!(!is_deferrable(n), "{n}: host tools are never deferred");
            } else if *n != FIND_TOOLS {
                assert!(!fallback_description(n).is_empty(), "{n}");
                assert!(is_deferrable(n));
            }
        }
        assert!(!is_deferrable(FIND_TOOLS));
        assert!(!is_deferrable("bash"));
        assert!(feature_of("read").is_none());
    }
}
