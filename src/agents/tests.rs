use super::definition::*;
use super::limits::*;
use super::resolve::*;
use std::path::Path;

fn def(text: &str, scope: Scope) -> (Option<Definition>, Vec<String>) {
    let mut w = Vec::new();
    let d = parse(text, scope, Path::new("/x/a.md"), &mut w);
    (d, w)
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const HOST: [&str; 9] = [
    "Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop",
];

#[test]
fn parses_every_key_and_the_body() {
    let (d, w) = def(
        "---\nname: reviewer\ndescription: \"Reads code\" # why\ntools: [Read, 'Grep']\nmodel: faux/faux-2\npermission: ask\n---\n\nYou review.\n",
        Scope::User,
    );
    let d = d.unwrap();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(d.name, "reviewer");
    assert_eq!(d.description, "Reads code");
    assert_eq!(d.tools, ToolSpec::List(names(&["Read", "Grep"])));
    assert_eq!(d.model.as_deref(), Some("faux/faux-2"));
    assert_eq!(d.permission, Permission::Ask);
    assert_eq!(d.prompt, "You review.");
}

#[test]
fn tools_forms() {
    let t = |v: &str| {
        def(&format!("---\nname: a\ndescription: d\n{v}\n---\n"), Scope::User)
            .0
            .unwrap()
            .tools
    };
    assert_eq!(t(""), ToolSpec::Default);
    assert_eq!(t("tools: \"*\""), ToolSpec::All);
    assert_eq!(t("tools: '*'"), ToolSpec::All);
    assert_eq!(t("tools: *"), ToolSpec::All);
    assert_eq!(t("tools: Read, Bash"), ToolSpec::List(names(&["Read", "Bash"])));
    assert_eq!(
        t("tools:\n  - inherit\n  - Bash"),
        ToolSpec::List(names(&["inherit", "Bash"]))
    );
    assert_eq!(t("tools: inherit"), ToolSpec::List(names(&["inherit"])));
    assert_eq!(t("tools: []"), ToolSpec::List(vec![]));
}

#[test]
fn unusable_files_are_skipped_with_a_reason() {
    for (text, why) in [
        ("name: a\n", "does not start"),
        ("---\nname: a\ndescription: d\n", "no closing"),
        ("---\ndescription: d\n---\n", "no `name`"),
        ("---\nname: a\n---\n", "no `description`"),
        ("---\nname: -bad\ndescription: d\n---\n", "the name must be"),
        ("---\nname: has space\ndescription: d\n---\n", "the name must be"),
    ] {
        let (d, w) = def(text, Scope::User);
        assert!(d.is_none(), "{text}");
        assert!(w.iter().any(|m| m.contains(why)), "{text}: {w:?}");
    }
    let long = "a".repeat(MAX_NAME_CHARS);
    assert!(def(&format!("---\nname: {long}\ndescription: d\n---\n"), Scope::User)
        .0
        .is_some());
    let longer = "a".repeat(MAX_NAME_CHARS + 1);
    assert!(def(&format!("---\nname: {longer}\ndescription: d\n---\n"), Scope::User)
        .0
        .is_none());
}

#[test]
fn odd_lines_warn_and_change_nothing_else() {
    let (d, w) = def(
        "---\nname: a\ndescription: d\ncolor: red\nname: b\n  nested: 1\njunk\npermission: root\n---\n",
        Scope::User,
    );
    let d = d.unwrap();
    assert_eq!(d.name, "a");
    assert_eq!(d.permission, Permission::Inherit);
    assert_eq!(w.len(), 5, "{w:?}");
    for why in [
        "unknown key `color`",
        "given twice",
        "nested values",
        "expected `key: value`",
        "must be one of",
    ] {
        assert!(w.iter().any(|m| m.contains(why)), "{why}: {w:?}");
    }
}

#[test]
fn project_definitions_lose_their_permission_with_a_warning() {
    let text = "---\nname: a\ndescription: d\npermission: auto\n---\n";
    let (d, w) = def(text, Scope::Project);
    assert_eq!(d.unwrap().permission, Permission::Inherit);
    assert!(w[0].contains("cannot set `permission`"), "{w:?}");
    let (d, w) = def(text, Scope::User);
    assert_eq!(d.unwrap().permission, Permission::Auto);
    assert!(w.is_empty());
    let (_, w) = def(
        "---\nname: a\ndescription: d\npermission: inherit\n---\n",
        Scope::Project,
    );
    assert!(w.is_empty(), "inherit is no escalation");
}

#[test]
fn load_reads_both_scopes_user_names_win_and_limits_hold() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(agent.join("agents")).unwrap();
    std::fs::create_dir_all(proj.join(".pi/agents")).unwrap();
    std::fs::write(agent.join("agents/r.md"), "---\nname: r\ndescription: user\n---\n").unwrap();
    std::fs::write(
        proj.join(".pi/agents/r.md"),
        "---\nname: r\ndescription: project\n---\n",
    )
    .unwrap();
    std::fs::write(
        proj.join(".pi/agents/w.md"),
        "---\nname: w\ndescription: p\npermission: auto\n---\n",
    )
    .unwrap();
    std::fs::write(proj.join(".pi/agents/notes.txt"), "ignored").unwrap();
    let big = format!(
        "---\nname: big\ndescription: d\n---\n{}",
        "x".repeat(MAX_FILE_BYTES as usize)
    );
    std::fs::write(proj.join(".pi/agents/big.md"), big).unwrap();
    std::fs::write(proj.join(".pi/agents/bin.md"), [0xffu8, 0xfe]).unwrap();
    let l = load(&agent, Some(&proj));
    let got: Vec<(&str, &str)> = l
        .definitions
        .iter()
        .map(|d| (d.name.as_str(), d.scope.as_str()))
        .collect();
    assert_eq!(got, [("r", "user"), ("w", "project")]);
    assert_eq!(l.definitions[0].description, "user");
    assert_eq!(l.warnings.len(), 4, "{:?}", l.warnings);
    assert!(l.warnings.iter().any(|w| w.contains("big.md: skipped: larger than")));
    assert!(l.warnings.iter().any(|w| w.contains("bin.md: skipped: not UTF-8")));
    assert!(l.warnings.iter().any(|w| w.contains("already defined")));
    assert!(l
        .warnings
        .iter()
        .any(|w| w.contains("w.md: `w`: a project definition cannot set")));
    // exactly at the size cap is read
    let head = "---\nname: big\ndescription: d\n---\n";
    let at = format!("{head}{}", "x".repeat(MAX_FILE_BYTES as usize - head.len()));
    assert_eq!(at.len() as u64, MAX_FILE_BYTES);
    std::fs::write(proj.join(".pi/agents/big.md"), &at).unwrap();
    assert!(load(&agent, Some(&proj)).definitions.iter().any(|d| d.name == "big"));
    // no folders: nothing, silently
    let none = load(&dir.path().join("nope"), None);
    assert!(none.definitions.is_empty() && none.warnings.is_empty());
}

#[test]
fn load_reads_at_most_the_per_folder_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    for i in 0..=MAX_PER_DIR {
        let p = dir.path().join(format!("agents/a{i:03}.md"));
        std::fs::write(p, format!("---\nname: a{i}\ndescription: d\n---\n")).unwrap();
    }
    let l = load(dir.path(), None);
    assert_eq!(l.definitions.len(), MAX_PER_DIR);
    assert!(l.warnings[0].contains(&format!("only the first {MAX_PER_DIR} of {}", MAX_PER_DIR + 1)));
}

#[test]
fn no_tools_means_read_glob_grep() {
    let r = resolve(&ToolSpec::Default, &names(&HOST));
    assert_eq!(r.tools, names(&["Read", "Glob", "Grep"]));
    assert!(r.warnings.is_empty());
}

#[test]
fn the_allowlist_completes_the_toolkit_groups_of_the_tools() {
    let r = resolve(&ToolSpec::List(names(&["Grep", "Write"])), &names(&HOST));
    assert_eq!(r.tools, names(&["Grep", "Write"]));
    assert_eq!(r.allowlist, names(&["Grep", "Write", "Read", "Glob", "Edit"]));
    let r = resolve(&ToolSpec::List(names(&["Bash"])), &names(&HOST));
    assert_eq!(
        r.allowlist,
        names(&["Bash", "TaskList", "TaskWait", "TaskStop", "Read", "Glob", "Grep"]),
        "the Bash family is admitted only beside the read set"
    );
    let r = resolve(&ToolSpec::List(names(&["Read"])), &names(&["read"]));
    assert_eq!(r.allowlist, names(&["read"]), "Pi's builtins have no group");
}

#[test]
fn star_means_every_work_tool() {
    let r = resolve(&ToolSpec::All, &names(&HOST));
    assert_eq!(r.tools, names(&["Read", "Glob", "Grep", "Bash", "Edit", "Write"]));
}

#[test]
fn declared_tools_never_come_from_the_parent_alone() {
    let r = resolve(&ToolSpec::List(names(&["Read"])), &names(&HOST));
    assert_eq!(r.tools, names(&["Read"]), "the parent's Bash is not given");
}

#[test]
fn unknown_names_are_dropped_with_a_warning() {
    let r = resolve(
        &ToolSpec::List(names(&["Read", "rm", "Task", "BrowserPreview", "*"])),
        &names(&HOST),
    );
    assert_eq!(r.tools, names(&["Read"]));
    assert_eq!(r.warnings.len(), 4, "{:?}", r.warnings);
    assert!(r.warnings[0].contains("unknown tool `rm`"));
    assert!(r.warnings[1].contains("unknown tool `Task`"));
    assert!(r.warnings[2].contains("`BrowserPreview` has no Pi tool"));
}

#[test]
fn names_are_case_insensitive_work_tools() {
    let r = resolve(&ToolSpec::List(names(&["bash", "READ"])), &names(&HOST));
    assert_eq!(r.tools, names(&["Bash", "Read"]));
}

#[test]
fn inherit_takes_the_live_catalog_minus_the_delegation_tools() {
    let mut cat = names(&HOST);
    cat.extend(names(&[
        "Task",
        "EnterPlanMode",
        "asktool",
        "new_context",
        "find_tools",
        "TodoWrite",
        "mcp__db__query",
        "openai_generate_image",
    ]));
    let r = resolve(&ToolSpec::List(names(&["inherit"])), &cat);
    assert_eq!(
        r.tools,
        names(&[
            "Read",
            "Glob",
            "Grep",
            "Write",
            "Edit",
            "Bash",
            "TodoWrite",
            "mcp__db__query",
            "openai_generate_image"
        ])
    );
    // [inherit, Bash] = the catalog plus Bash once
    let r = resolve(
        &ToolSpec::List(names(&["inherit", "Bash"])),
        &names(&["Read", "Bash", "Task"]),
    );
    assert_eq!(r.tools, names(&["Read", "Bash"]));
}

#[test]
fn codex_equivalents_when_the_codex_routes_are_on() {
    let cat = names(&["Read", "Glob", "Grep", "exec_command", "write_stdin", "apply_patch"]);
    let r = resolve(&ToolSpec::All, &cat);
    assert_eq!(
        r.tools,
        names(&["Read", "Glob", "Grep", "exec_command", "write_stdin", "apply_patch"])
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn pi_builtins_when_the_host_tools_are_off() {
    let cat = names(&["read", "bash", "edit", "write", "grep", "find", "ls"]);
    let r = resolve(&ToolSpec::All, &cat);
    assert_eq!(r.tools, names(&["read", "find", "ls", "grep", "bash", "edit", "write"]));
    let r = resolve(&ToolSpec::List(names(&["Bash"])), &names(&["read"]));
    assert!(r.tools.is_empty());
    assert!(r.warnings[0].contains("`Bash` is not available"), "{:?}", r.warnings);
}

#[test]
fn slots_hold_both_caps_at_their_boundary() {
    let s = Slots::new(2, 3);
    let a1 = s.acquire("a").unwrap();
    let _a2 = s.acquire("a").unwrap();
    assert_eq!(s.acquire("a").err(), Some(SlotError::Session(2)));
    let _b1 = s.acquire("b").unwrap();
    assert_eq!(s.acquire("c").err(), Some(SlotError::Process(3)));
    drop(a1);
    assert_eq!(s.running("a"), 1);
    let _c1 = s.acquire("c").unwrap();
    assert!(SlotError::Session(2).message(s.caps()).contains("per-session cap of 2"));
}

#[test]
fn answers_are_cut_at_the_byte_cap_on_a_char_boundary() {
    let exact = "a".repeat(10);
    assert_eq!(cut_answer(&exact, 10), (exact.clone(), false));
    let (t, cut) = cut_answer(&format!("{exact}b"), 10);
    assert!(cut);
    assert!(t.starts_with(&exact) && t.contains("cut at 10 of 11 bytes"));
    let (t, _) = cut_answer("ééé", 3); // é is two bytes: the cut falls back to 2
    assert!(t.starts_with("é\n"));
}

/// Definitions come from memory while the folders are unchanged, and are read again when a file is added, edited
/// or removed, in either folder.
#[test]
fn definitions_are_read_again_only_when_a_folder_changes() {
    use super::cache::load_cached;
    use std::sync::Arc;
    let base = tempfile::tempdir().unwrap();
    let agent_dir = base.path().join("agent");
    let project = base.path().join("work");
    std::fs::create_dir_all(agent_dir.join("agents")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let write = |p: &Path, name: &str, desc: &str| {
        std::fs::write(p, format!("---\nname: {name}\ndescription: {desc}\n---\nbody\n")).unwrap()
    };
    let a = agent_dir.join("agents").join("a.md");
    write(&a, "alpha", "first");
    let names = |l: &super::definition::Loaded| {
        l.definitions
            .iter()
            .map(|d| format!("{}:{}", d.name, d.description))
            .collect::<Vec<_>>()
    };
    let one = load_cached(&agent_dir, Some(&project));
    assert_eq!(names(&one), ["alpha:first"]);
    assert!(
        Arc::ptr_eq(&one, &load_cached(&agent_dir, Some(&project))),
        "unchanged: not read again"
    );

    // A project folder appears with a definition.
    std::fs::create_dir_all(project.join(".pi/agents")).unwrap();
    write(&project.join(".pi/agents/b.md"), "beta", "second");
    let two = load_cached(&agent_dir, Some(&project));
    assert_eq!(names(&two), ["alpha:first", "beta:second"]);
    assert!(Arc::ptr_eq(&two, &load_cached(&agent_dir, Some(&project))));

    // An edit in place (another size) is seen.
    write(&a, "alpha", "first, edited");
    assert_eq!(
        names(&load_cached(&agent_dir, Some(&project))),
        ["alpha:first, edited", "beta:second"]
    );

    // A removal is seen; a session without a project folder is its own entry.
    std::fs::remove_file(project.join(".pi/agents/b.md")).unwrap();
    assert_eq!(names(&load_cached(&agent_dir, Some(&project))), ["alpha:first, edited"]);
    assert_eq!(names(&load_cached(&agent_dir, None)), ["alpha:first, edited"]);
    assert_eq!(
        *names(&load_cached(&agent_dir, Some(&project))),
        *names(&super::definition::load(&agent_dir, Some(&project)))
    );
}

#[test]
fn a_description_with_control_characters_is_shown_escaped() {
    let (d, _) = def(
        "---\nname: sneaky\ndescription: \"Reads\u{1b}]0;owned\u{7} code\u{1b}[31m red\"\nmodel: \"m\u{9b}2J\"\n---\nx\n",
        Scope::Project,
    );
    let d = d.unwrap();
    assert_eq!(d.description, "Reads\\x1b]0;owned\\x07 code\\x1b[31m red");
    assert_eq!(d.model.as_deref(), Some("m\\x9b2J"));
    assert!(!crate::display::has_control(&d.description));
}
