//! Worktree tests on real temporary repositories (docs/worktrees.md).

use super::create::{create, project_of, run_init};
use super::git::{neutralize, redirects, scrubbed, Git, GitError};
use super::include::{copy_included, matcher, selected};
use super::layout::{self, locate, project_key, valid_id};
use super::manage::{self, committer, delete, list, lock_pid, lock_reason};
use super::merge::{apply, prepare, token};
use super::ports::{self, block_free, lease_from, release, BLOCK};
use super::real::{check_real_dir, remove_no_follow, Removed, Unreal};
use super::WorktreeCode;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A temporary folder holding a project repository (`work/`) with one commit on `main`, and an agent dir.
pub(super) struct Box_ {
    _t: tempfile::TempDir,
    root: PathBuf,
    pub(super) project: PathBuf,
    pub(super) agent: PathBuf,
}

/// Runs git in `dir` as the toolkit's committer and returns its output (shared with the delegate tests).
pub(super) fn sh(dir: &Path, args: &[&str]) -> String {
    committer(dir)
        .text(args)
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"))
}

/// A project on `main` (a.txt with three lines; `.env`, `node_modules/` and `*.log` ignored) and an agent folder,
/// in one temporary folder (shared with the delegate tests).
pub(super) fn setup() -> Box_ {
    let t = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(t.path()).unwrap();
    let project = root.join("work");
    let agent = root.join("agent");
    fs::create_dir_all(&project).unwrap();
    fs::create_dir_all(&agent).unwrap();
    sh(&project, &["init", "-q", "-b", "main"]);
    fs::write(project.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    fs::write(project.join(".gitignore"), ".env\nnode_modules/\n*.log\n").unwrap();
    sh(&project, &["add", "-A"]);
    sh(&project, &["commit", "-q", "-m", "first"]);
    Box_ {
        _t: t,
        root,
        project,
        agent,
    }
}

fn commit_file(dir: &Path, name: &str, text: &str, msg: &str) {
    fs::write(dir.join(name), text).unwrap();
    sh(dir, &["add", "-A"]);
    sh(dir, &["commit", "-q", "-m", msg]);
}

// ---- the git runner ----

#[test]
fn argv_carries_the_hardening_and_diff_guards() {
    let g = Git::new("/r");
    let a = g.argv(&["diff", "HEAD"]);
    let expected: Vec<&str> = [
        "--no-pager",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.pager=cat",
        "-c",
        "core.editor=:",
        "-c",
        "sequence.editor=:",
        "-c",
        "protocol.allow=never",
        "-c",
        "credential.helper=",
        "-c",
        "commit.gpgSign=false",
        "-c",
        "tag.gpgSign=false",
        "-c",
        "merge.verifySignatures=false",
        "-c",
        "log.showSignature=false",
        "-c",
        "gc.auto=0",
        "-c",
        "gc.autoDetach=false",
        "-c",
        "maintenance.auto=false",
        "-c",
        "submodule.recurse=false",
        "-c",
        "status.submoduleSummary=false",
        "-c",
        "diff.ignoreSubmodules=dirty",
        "-C",
        "/r",
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "HEAD",
    ]
    .to_vec();
    assert_eq!(a, expected);
    assert!(!g.argv(&["status"]).contains(&"--no-ext-diff".to_string()));
    assert!(g.argv(&["log", "-p"]).contains(&"--no-textconv".to_string()));
    // The caller's options come first, so the hardening wins over them; the scanned overrides follow it.
    let a = g
        .with_config("core.fsmonitor", "/bin/x")
        .argv_with(&["filter.x.clean=".into()], &["status"]);
    let pos = |o: &str| a.iter().position(|x| x == o).unwrap();
    assert!(pos("core.fsmonitor=/bin/x") < pos("core.fsmonitor=false"));
    assert!(pos("diff.ignoreSubmodules=dirty") < pos("filter.x.clean="));
    assert!(pos("filter.x.clean=") < pos("-C"));
}

#[test]
fn neutralize_switches_off_every_named_driver_and_transport() {
    let listing = b"filter.lfs.clean\0filter.lfs.smudge\0filter.lfs.required\0filter.my.dots.process\0\
merge.ours.driver\0merge.ours.name\0protocol.ext.allow\0protocol.allow\0filter.nosub\0";
    let o = neutralize(listing).unwrap();
    assert_eq!(
        o,
        [
            "filter.lfs.clean=",
            "filter.lfs.smudge=",
            "filter.lfs.process=",
            "filter.lfs.required=false",
            "filter.my.dots.clean=",
            "filter.my.dots.smudge=",
            "filter.my.dots.process=",
            "filter.my.dots.required=false",
            "merge.ours.driver=git merge-file --marker-size=%L -L ours -L base -L theirs %A %O %B",
            "protocol.ext.allow=never",
        ]
    );
    assert!(neutralize(b"").unwrap().is_empty());
    // A name a `-c` option cannot carry, or one that is not UTF-8: nothing runs.
    for bad in [&b"filter.a=b.clean\0"[..], &b"filter.\xff.smudge\0"[..]] {
        let e = neutralize(bad).unwrap_err();
        assert!(matches!(e, GitError::Unsafe(_)), "{e:?}");
        assert!(e.to_string().contains("git config --remove-section"), "{e}");
    }
}

/// Configures, in `repo`, a filter driver (with a dotted name too), a required one, a merge driver and a diff
/// driver for every `.txt`/`.dat` file, each of which appends to `mark` when it runs.
fn plant_drivers(repo: &Path, mark: &Path) {
    let m = mark.display();
    for (k, v) in [
        ("filter.mark.clean", format!("echo clean >> '{m}'; cat")),
        ("filter.mark.smudge", format!("echo smudge >> '{m}'; cat")),
        ("filter.mark.required", "true".to_string()),
        ("filter.my.dots.process", format!("sh -c \"echo process >> '{m}'\"")),
        ("merge.mark.driver", format!("echo merge >> '{m}'; false")),
        ("diff.mark.textconv", format!("echo textconv >> '{m}'; cat")),
        ("diff.mark.command", format!("echo diff >> '{m}'")),
        ("diff.external", format!("echo external >> '{m}'")),
    ] {
        Git::new(repo).run(&["config", k, &v]).unwrap();
    }
}

#[test]
fn filter_merge_and_diff_drivers_never_run_on_create_merge_or_status() {
    let b = setup();
    let mark = b.root.join("driver-ran");
    fs::write(
        b.project.join(".gitattributes"),
        "*.txt filter=mark merge=mark diff=mark\n*.dat filter=my.dots\n",
    )
    .unwrap();
    fs::write(b.project.join("d.dat"), "data\n").unwrap();
    sh(&b.project, &["add", "-A"]);
    sh(&b.project, &["commit", "-q", "-m", "attributes"]);
    plant_drivers(&b.project, &mark);
    // Create checks the files out (smudge), prepare commits (clean) and syncs a three-way change of a.txt (the
    // merge driver), apply fast-forwards the project's checkout (smudge); status and the preview's diffs run too.
    let r = worktree(&b, "drv");
    let wt = PathBuf::from(&r.path);
    assert_eq!(fs::read_to_string(wt.join("a.txt")).unwrap(), "one\ntwo\nthree\n");
    fs::write(wt.join("a.txt"), "ONE\ntwo\nthree\n").unwrap();
    fs::write(wt.join("d.dat"), "more data\n").unwrap();
    commit_file(&b.project, "a.txt", "one\ntwo\nTHREE\n", "project edits a");
    let pv = prepare(&r).unwrap();
    assert!(pv.committed_work && pv.synced, "{pv:?}");
    // The custom merge driver became git's text merge: both sides' lines are there.
    assert_eq!(fs::read_to_string(wt.join("a.txt")).unwrap(), "ONE\ntwo\nTHREE\n");
    manage::status(&r).unwrap();
    apply(&r, &pv.token).unwrap();
    assert_eq!(
        fs::read_to_string(b.project.join("a.txt")).unwrap(),
        "ONE\ntwo\nTHREE\n"
    );
    assert_eq!(fs::read_to_string(b.project.join("d.dat")).unwrap(), "more data\n");
    Git::new(&b.project).run(&["diff", "HEAD~1", "--", "a.txt"]).unwrap();
    assert!(!mark.exists(), "a driver ran: {:?}", fs::read_to_string(&mark));
    // The control: a plain git runs these drivers in this very repository (its exit status does not matter:
    // the planted process filter does not speak the filter protocol).
    fs::write(b.project.join("a.txt"), "control\n").unwrap();
    std::process::Command::new("git")
        .args(["-c", "core.hooksPath=/dev/null", "add", "a.txt"])
        .current_dir(&b.project)
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(mark.exists(), "the planted drivers would not have run anyway");
}

#[test]
fn a_driver_name_the_runner_cannot_switch_off_refuses_the_command() {
    let b = setup();
    let cfg = b.project.join(".git/config");
    let mut text = fs::read_to_string(&cfg).unwrap();
    text.push_str("[filter \"a=b\"]\n\tclean = cat\n");
    fs::write(&cfg, text).unwrap();
    let e = Git::new(&b.project).run(&["status"]).unwrap_err();
    assert!(matches!(e, GitError::Unsafe(ref n) if n == "filter.a=b"), "{e:?}");
}

#[test]
fn scrubbing_removes_every_redirecting_variable_and_keeps_the_rest() {
    let parent: Vec<(String, String)> = [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "GIT_CONFIG_PARAMETERS",
        "GIT_EXEC_PATH",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "git_dir",
        "GIT_AUTHOR_NAME",
        "PATH",
        "HOME",
    ]
    .iter()
    .map(|k| (k.to_string(), "x".to_string()))
    .collect();
    let env = scrubbed(parent);
    let mut kept: Vec<&str> = env.keys().map(String::as_str).collect();
    kept.sort();
    assert_eq!(
        kept,
        ["GIT_AUTHOR_NAME", "GIT_TERMINAL_PROMPT", "HOME", "LC_ALL", "PATH"]
    );
    assert!(redirects("GIT_DIR") && redirects("Git_Work_Tree") && !redirects("GIT_COMMITTER_EMAIL"));
}

#[test]
fn a_real_git_ignores_redirecting_variables_hooks_and_fsmonitor() {
    let b = setup();
    // A second repository the variables point at: were they honoured, git would report it instead.
    let other = b.root.join("other");
    fs::create_dir_all(&other).unwrap();
    sh(&other, &["init", "-q", "-b", "side"]);
    let mark = b.root.join("hook-ran");
    let hooks = b.project.join(".git/hooks");
    for hook in [
        "pre-commit",
        "post-commit",
        "commit-msg",
        "post-checkout",
        "reference-transaction",
    ] {
        let p = hooks.join(hook);
        fs::write(&p, format!("#!/bin/sh\necho {hook} >> '{}'\n", mark.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    // A repository-configured hooks path and fsmonitor program are overridden too.
    sh(&b.project, &["config", "core.hooksPath", &hooks.to_string_lossy()]);
    let fsmon = b.root.join("fsmon.sh");
    fs::write(&fsmon, format!("#!/bin/sh\necho fsmonitor >> '{}'\n", mark.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&fsmon, fs::Permissions::from_mode(0o755)).unwrap();
    sh(&b.project, &["config", "core.fsmonitor", &fsmon.to_string_lossy()]);
    let other_git = other.join(".git").to_string_lossy().into_owned();
    let env: Vec<(String, String)> = std::env::vars()
        .chain([
            ("GIT_DIR".to_string(), other_git.clone()),
            ("GIT_WORK_TREE".to_string(), other.to_string_lossy().into_owned()),
            (
                "GIT_INDEX_FILE".to_string(),
                b.root.join("idx").to_string_lossy().into_owned(),
            ),
            ("GIT_CONFIG_COUNT".to_string(), "1".to_string()),
            ("GIT_CONFIG_KEY_0".to_string(), "core.hooksPath".to_string()),
            ("GIT_CONFIG_VALUE_0".to_string(), hooks.to_string_lossy().into_owned()),
        ])
        .collect();
    let g = committer(&b.project).with_parent_env(env);
    assert_eq!(g.text(&["symbolic-ref", "--short", "HEAD"]).unwrap(), "main");
    fs::write(b.project.join("b.txt"), "b\n").unwrap();
    g.run(&["add", "-A"]).unwrap();
    g.run(&["commit", "-q", "-m", "second"]).unwrap();
    g.run(&["status", "--porcelain"]).unwrap();
    g.run(&["checkout", "-q", "-b", "topic"]).unwrap();
    assert!(
        !mark.exists(),
        "a hook or fsmonitor ran: {:?}",
        fs::read_to_string(&mark)
    );
    assert!(!b.root.join("idx").exists());
    assert_eq!(sh(&b.project, &["log", "--format=%s", "-1"]), "second");
}

/// A stand-in for git: a shell script that ignores its arguments.
fn stand_in(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn failures_timeouts_and_output_bounds_are_errors() {
    use super::git::{GitError, MAX_OUTPUT};
    let b = setup();
    let g = Git::new(&b.project);
    match g.run(&["rev-parse", "--verify", "no-such-ref"]) {
        Err(GitError::Failed { status: Some(128), .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(g.yes(&["merge-base", "--is-ancestor", "HEAD", "HEAD"]).unwrap());
    // The time limit stops the whole process group (the stand-in's own child `sleep` too).
    let slow = stand_in(&b.root, "slow", "sleep 30 & sleep 30; wait");
    let t = std::time::Instant::now();
    match Git::new(&b.project)
        .with_program(&slow)
        .with_timeout(Duration::from_millis(300))
        .run(&["status"])
    {
        Err(GitError::Timeout(d)) => assert_eq!(d, Duration::from_millis(300)),
        other => panic!("{other:?}"),
    }
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "the group was killed, not waited for"
    );
    // Output: exactly MAX_OUTPUT bytes are an answer; one more is a failure.
    let exact = stand_in(&b.root, "exact", &format!("head -c {MAX_OUTPUT} /dev/zero"));
    assert_eq!(
        Git::new(&b.project)
            .with_program(&exact)
            .run(&["x"])
            .unwrap()
            .stdout
            .len(),
        MAX_OUTPUT
    );
    let over = stand_in(&b.root, "over", &format!("head -c {} /dev/zero", MAX_OUTPUT + 1));
    assert!(matches!(
        Git::new(&b.project).with_program(&over).run(&["x"]),
        Err(GitError::TooLarge)
    ));
    let err_over = stand_in(&b.root, "errover", &format!("head -c {} /dev/zero >&2", MAX_OUTPUT + 1));
    assert!(matches!(
        Git::new(&b.project).with_program(&err_over).run(&["x"]),
        Err(GitError::TooLarge)
    ));
    assert!(matches!(
        Git::new(&b.project).with_program("/no/such/git").run(&["x"]),
        Err(GitError::Spawn(_))
    ));
}

#[test]
fn the_include_file_and_init_log_limits_hold_at_their_boundary() {
    use super::create::INIT_LOG_MAX;
    use super::include::MAX_INCLUDE_BYTES;
    let b = setup();
    let inc = b.project.join(".worktreeinclude");
    let at_limit = format!(".env\n{}", "#".repeat(MAX_INCLUDE_BYTES as usize - 5));
    assert_eq!(at_limit.len() as u64, MAX_INCLUDE_BYTES);
    fs::write(&inc, &at_limit).unwrap();
    assert!(matcher(&b.project).is_some());
    fs::write(&inc, format!("{at_limit}#")).unwrap();
    assert!(matcher(&b.project).is_none(), "a larger include file is not read");
    let log = b.root.join("init.log");
    let env = vec![];
    let sh = ["-c".to_string()];
    let limit_cmd = format!("head -c {INIT_LOG_MAX} /dev/zero");
    run_init(
        "/bin/sh",
        &sh,
        &limit_cmd,
        &b.project,
        &env,
        &log,
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(
        fs::metadata(&log).unwrap().len(),
        INIT_LOG_MAX,
        "exactly the limit: all kept, no note"
    );
    let over_cmd = format!("head -c {} /dev/zero; echo END", INIT_LOG_MAX + 10);
    let o = run_init(
        "/bin/sh",
        &sh,
        &over_cmd,
        &b.project,
        &env,
        &log,
        Duration::from_secs(60),
    )
    .unwrap();
    let note = b"\n[pi-codex-toolkit: the rest of the output was not kept]\n";
    let kept = fs::read(&log).unwrap();
    assert!(kept.ends_with(note));
    assert_eq!(kept.len() as u64, INIT_LOG_MAX + note.len() as u64);
    assert!(
        o.tail.ends_with("END\n") && o.tail.len() == super::create::INIT_TAIL,
        "the tail is the real end"
    );
}

#[test]
fn a_preview_lists_at_most_fifty_commits_and_gives_the_total() {
    use super::merge::PREVIEW_MAX;
    let b = setup();
    let r = worktree(&b, "many");
    let wt = PathBuf::from(&r.path);
    for k in 0..=PREVIEW_MAX {
        commit_file(&wt, &format!("f{k}.txt"), "x\n", &format!("c{k}"));
    }
    let pv = prepare(&r).unwrap();
    assert_eq!((pv.commits.len(), pv.commits_total), (PREVIEW_MAX, PREVIEW_MAX + 1));
    assert_eq!((pv.files.len(), pv.files_total), (PREVIEW_MAX, PREVIEW_MAX + 1));
    assert!(
        pv.commits[0].ends_with(&format!(" c{PREVIEW_MAX}")),
        "newest first: {}",
        pv.commits[0]
    );
}

// ---- layout ----

#[test]
fn project_key_is_stable_distinct_and_readable() {
    let a = project_key(Path::new("/home/u/My Project"));
    assert_eq!(a, project_key(Path::new("/home/u/My Project")));
    assert!(
        a.starts_with("my-project-") && a.len() == "my-project-".len() + 12,
        "{a}"
    );
    assert_ne!(a, project_key(Path::new("/other/My Project")));
    assert!(project_key(Path::new("/")).starts_with("project-"));
    assert_eq!(project_key(Path::new("/x/ab.")), project_key(Path::new("/x/ab.")));
}

#[test]
fn ids_are_plain_names() {
    for ok in ["a", "fix-1", "wt-abc123", "v1.2_x", &"a".repeat(40)] {
        assert!(valid_id(ok), "{ok}");
    }
    for bad in [
        "",
        "-a",
        ".a",
        "A",
        "a/b",
        "a..b",
        "a.lock",
        "a.",
        "a b",
        &"a".repeat(41),
        "é",
    ] {
        assert!(!valid_id(bad), "{bad}");
    }
}

// ---- real folders ----

#[test]
fn a_link_on_any_component_is_found() {
    let b = setup();
    let deep = b.root.join("x/y/z");
    fs::create_dir_all(&deep).unwrap();
    assert!(check_real_dir(&deep).is_ok());
    // Swap each component in turn for a link to a copy: every position is caught.
    for comp in ["x", "x/y", "x/y/z"] {
        let p = b.root.join(comp);
        let moved = b.root.join("moved");
        fs::rename(&p, &moved).unwrap();
        symlink(&moved, &p).unwrap();
        match check_real_dir(&deep) {
            Err(Unreal::Link(at)) => assert_eq!(at, p),
            other => panic!("{comp}: {other:?}"),
        }
        fs::remove_file(&p).unwrap();
        fs::rename(&moved, &p).unwrap();
    }
    assert!(matches!(check_real_dir(&b.root.join("nope")), Err(Unreal::Missing(_))));
    fs::write(b.root.join("f"), "").unwrap();
    assert!(matches!(check_real_dir(&b.root.join("f")), Err(Unreal::NotDir(_))));
    assert!(matches!(check_real_dir(Path::new("rel")), Err(Unreal::NotCanonical(_))));
    assert!(matches!(
        check_real_dir(&b.root.join("x/../x")),
        Err(Unreal::NotCanonical(_))
    ));
}

#[test]
fn removal_never_follows_links() {
    let b = setup();
    let target = b.root.join("target");
    fs::create_dir_all(&target).unwrap();
    fs::write(target.join("keep"), "k").unwrap();
    let wt = b.root.join("wt");
    symlink(&target, &wt).unwrap();
    assert_eq!(remove_no_follow(&wt).unwrap(), Removed::Link);
    assert!(target.join("keep").exists() && fs::symlink_metadata(&wt).is_err());
    // A real folder with a link inside: the link goes, its target stays.
    fs::create_dir_all(wt.join("d")).unwrap();
    symlink(&target, wt.join("d/out")).unwrap();
    assert_eq!(remove_no_follow(&wt).unwrap(), Removed::Tree);
    assert!(target.join("keep").exists());
    // A link above: nothing is removed.
    let real_parent = b.root.join("rp");
    fs::create_dir_all(real_parent.join("wt")).unwrap();
    symlink(&real_parent, b.root.join("lp")).unwrap();
    assert!(matches!(
        remove_no_follow(&b.root.join("lp/wt")).unwrap(),
        Removed::Refused(_)
    ));
    assert!(real_parent.join("wt").exists());
    assert_eq!(remove_no_follow(&b.root.join("none")).unwrap(), Removed::Nothing);
}

// ---- ports ----

#[test]
fn port_blocks_skip_a_busy_port_and_are_released() {
    let b = setup();
    // This test's own part of the range, away from other tests and sessions.
    let start = 47000;
    let first = lease_from(&b.agent, "h1", start).unwrap();
    assert!(first >= start && (first - ports::FIRST_PORT).is_multiple_of(BLOCK));
    assert_eq!(
        lease_from(&b.agent, "h1", start).unwrap(),
        first,
        "the same holder keeps its block"
    );
    // The next holder never gets a leased block.
    let second = lease_from(&b.agent, "h2", start).unwrap();
    assert!(second > first);
    // Busy: a listener on the 4th port of the block after `second` makes the search skip that block.
    let busy_block = second + BLOCK;
    let _l = std::net::TcpListener::bind(("127.0.0.1", busy_block + 3)).unwrap();
    assert!(!block_free(busy_block));
    let third = lease_from(&b.agent, "h3", busy_block).unwrap();
    assert!(third > busy_block, "{third} should skip the busy block {busy_block}");
    assert!(release("h1") && !release("h1"));
    // The range lies in the kernel's ephemeral range: another process's connection on the loopback can hold one of
    // the released block's ports for a moment, and then the search rightly skips it. So the released block must be
    // handed out again once its ports are free: retry (bounded) while another process holds one of them.
    let deadline = std::time::Instant::now() + crate::test_support::BOUND;
    loop {
        let again = lease_from(&b.agent, "h4", start)
            .unwrap_or_else(|e| panic!("the released block {first} was not handed out again: {}", e.message));
        if again == first {
            break;
        }
        release("h4");
        assert!(
            std::time::Instant::now() < deadline,
            "the released block {first} was not handed out again (got {again}); its ports free now: {}",
            block_free(first)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for h in ["h2", "h3", "h4"] {
        release(h);
    }
    // The lock is an OS lock: another open of the same lock file cannot take it while held.
    let p = lease_from(&b.agent, "h5", start).unwrap();
    let f = fs::OpenOptions::new()
        .write(true)
        .open(ports::lock_dir(&b.agent).join(format!("{p}.lock")))
        .unwrap();
    assert!(!matches!(fs4::fs_std::FileExt::try_lock_exclusive(&f), Ok(true)));
    release("h5");
    assert!(matches!(fs4::fs_std::FileExt::try_lock_exclusive(&f), Ok(true)));
}

// ---- .worktreeinclude ----

#[test]
fn include_copies_ignored_matches_without_following_links() {
    let b = setup();
    let p = &b.project;
    fs::write(p.join(".worktreeinclude"), ".env\nnode_modules/\n!node_modules/skip/\n").unwrap();
    fs::write(p.join(".env"), "SECRET=1\n").unwrap();
    fs::write(p.join("debug.log"), "ignored but not included\n").unwrap();
    fs::write(p.join("untracked.txt"), "not ignored\n").unwrap();
    fs::create_dir_all(p.join("node_modules/pkg")).unwrap();
    fs::create_dir_all(p.join("node_modules/skip")).unwrap();
    fs::write(p.join("node_modules/pkg/index.js"), "x").unwrap();
    fs::write(p.join("node_modules/skip/no.js"), "x").unwrap();
    let outside = b.root.join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret"), "s").unwrap();
    symlink(&outside, p.join("node_modules/link")).unwrap();
    let m = matcher(p).unwrap();
    assert!(selected(&m, Path::new(".env"), false));
    assert!(selected(&m, Path::new("node_modules/pkg/index.js"), false));
    assert!(!selected(&m, Path::new("node_modules/skip/no.js"), false));
    assert!(!selected(&m, Path::new("debug.log"), false));
    let wt = b.root.join("wt");
    fs::create_dir_all(&wt).unwrap();
    let c = copy_included(&Git::new(p), p, &wt).unwrap();
    assert_eq!(fs::read_to_string(wt.join(".env")).unwrap(), "SECRET=1\n");
    assert!(wt.join("node_modules/pkg/index.js").exists());
    assert!(!wt.join("node_modules/skip").exists() && !wt.join("debug.log").exists());
    assert!(!wt.join("untracked.txt").exists());
    // The link was recreated as a link, never read through.
    let l = fs::symlink_metadata(wt.join("node_modules/link")).unwrap();
    assert!(l.file_type().is_symlink());
    assert_eq!((c.files, c.links), (2, 1));
    assert!(c.skipped.is_empty(), "{:?}", c.skipped);
}

#[test]
fn include_never_writes_through_a_link_in_the_worktree_or_reads_a_linked_include_file() {
    let b = setup();
    let p = &b.project;
    fs::write(p.join(".worktreeinclude"), "conf/\n").unwrap();
    fs::write(p.join(".gitignore"), "conf/\n").unwrap();
    fs::create_dir_all(p.join("conf")).unwrap();
    fs::write(p.join("conf/x"), "x").unwrap();
    let wt = b.root.join("wt");
    fs::create_dir_all(&wt).unwrap();
    let victim = b.root.join("victim");
    fs::create_dir_all(&victim).unwrap();
    symlink(&victim, wt.join("conf")).unwrap();
    let c = copy_included(&Git::new(p), p, &wt).unwrap();
    assert_eq!(c.files, 0);
    assert_eq!(c.skipped.len(), 1, "{:?}", c.skipped);
    assert!(
        fs::read_dir(&victim).unwrap().next().is_none(),
        "nothing was written through the link"
    );
    // A linked include file is not read.
    fs::remove_file(p.join(".worktreeinclude")).unwrap();
    fs::write(b.root.join("inc"), "conf/\n").unwrap();
    symlink(b.root.join("inc"), p.join(".worktreeinclude")).unwrap();
    assert!(matcher(p).is_none());
}

// ---- create / refusals ----

#[test]
fn create_refuses_outside_git_detached_and_unborn_changing_nothing() {
    let b = setup();
    let plain = b.root.join("plain");
    fs::create_dir_all(&plain).unwrap();
    let e = create(&b.agent, &plain, None, 1).unwrap_err();
    assert_eq!(e.code, WorktreeCode::NotGit);
    let unborn = b.root.join("unborn");
    fs::create_dir_all(&unborn).unwrap();
    sh(&unborn, &["init", "-q", "-b", "main"]);
    assert_eq!(
        create(&b.agent, &unborn, None, 1).unwrap_err().code,
        WorktreeCode::Unborn
    );
    let head = sh(&b.project, &["rev-parse", "HEAD"]);
    sh(&b.project, &["checkout", "-q", "--detach", &head]);
    assert_eq!(
        create(&b.agent, &b.project, None, 1).unwrap_err().code,
        WorktreeCode::Detached
    );
    assert!(!layout::base(&b.agent).exists(), "a refusal writes nothing");
    sh(&b.project, &["checkout", "-q", "main"]);
    assert_eq!(
        create(&b.agent, &b.project, Some("Bad Name"), 1).unwrap_err().code,
        WorktreeCode::BadName
    );
    assert_eq!(sh(&b.project, &["branch", "--list", "pct/*"]), "");
}

#[test]
fn create_makes_a_locked_worktree_from_head_without_uncommitted_changes() {
    let b = setup();
    fs::create_dir_all(b.project.join("sub")).unwrap();
    commit_file(&b.project, "sub/s.txt", "s\n", "sub");
    fs::write(b.project.join(".env"), "E=1\n").unwrap();
    fs::write(b.project.join(".worktreeinclude"), ".env\n").unwrap();
    fs::write(b.project.join("a.txt"), "uncommitted\n").unwrap();
    let c = create(&b.agent, &b.project.join("sub"), Some("feat"), std::process::id()).unwrap();
    let wt = PathBuf::from(&c.record.path);
    assert_eq!(
        wt,
        fs::canonicalize(layout::base(&b.agent))
            .unwrap()
            .join(&c.key)
            .join("feat")
    );
    assert_eq!(c.cwd, wt.join("sub"));
    assert_eq!(c.record.branch, "pct/feat");
    assert_eq!(c.record.base_branch, "main");
    assert_eq!(fs::read_to_string(wt.join("a.txt")).unwrap(), "one\ntwo\nthree\n");
    assert_eq!(fs::read_to_string(wt.join(".env")).unwrap(), "E=1\n");
    assert_eq!(sh(&wt, &["symbolic-ref", "--short", "HEAD"]), "pct/feat");
    let l = list(&b.agent, &b.project).unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!((l[0].id.as_str(), l[0].state), ("feat", "in-use"));
    assert_eq!(
        create(&b.agent, &b.project, Some("feat"), 1).unwrap_err().code,
        WorktreeCode::Exists
    );
    // locate() recognises the worktree and its sub-folder from the path alone.
    let at = locate(&b.agent, &c.cwd).unwrap();
    assert_eq!((at.id.as_str(), at.sub.as_path()), ("feat", Path::new("sub")));
    assert_eq!(at.record.unwrap(), c.record);
    assert!(locate(&b.agent, &b.project).is_none());
    // A fresh id when no name is given.
    let d = create(&b.agent, &b.project, None, std::process::id()).unwrap();
    assert!(d.record.id.starts_with("wt-"));
}

#[test]
fn lock_reason_round_trips_and_leftovers_are_listed() {
    assert_eq!(lock_pid(&lock_reason(42)), Some(42));
    assert_eq!(lock_pid("other reason"), None);
    let b = setup();
    // A pid that cannot be alive: the lock of a crashed session.
    let c = create(&b.agent, &b.project, Some("gone"), 999_999_999).unwrap();
    let l = list(&b.agent, &b.project).unwrap();
    assert_eq!(l[0].state, "leftover", "{:?}", l[0]);
    manage::unlock(&Git::new(&b.project), Path::new(&c.record.path), 999_999_999).unwrap();
    assert_eq!(list(&b.agent, &b.project).unwrap()[0].state, "idle");
    // Linked over: missing.
    let wt = PathBuf::from(&c.record.path);
    let moved = b.root.join("moved");
    fs::rename(&wt, &moved).unwrap();
    symlink(&moved, &wt).unwrap();
    let e = &list(&b.agent, &b.project).unwrap()[0];
    assert_eq!(e.state, "missing");
    assert!(e.why.as_deref().unwrap().contains("symbolic link"));
}

#[test]
fn init_runs_once_with_the_variables_and_keeps_its_output() {
    let b = setup();
    let log = b.root.join("init.log");
    let env = vec![("PI_PORT".to_string(), "41010".to_string())];
    let o = run_init(
        "/bin/sh",
        &["-c".into()],
        "echo port=$PI_PORT; echo err >&2; pwd; exit 3",
        &b.project,
        &env,
        &log,
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(o.status, Some(3));
    let text = fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("port=41010") && text.contains("err") && text.contains(&b.project.to_string_lossy().to_string()),
        "{text}"
    );
    assert_eq!(o.tail, text);
    let t = run_init(
        "/bin/sh",
        &["-c".into()],
        "sleep 5",
        &b.project,
        &env,
        &log,
        Duration::from_millis(200),
    )
    .unwrap();
    assert!(t.timed_out && t.status.is_none());
}

// ---- merge ----

fn worktree(b: &Box_, name: &str) -> super::layout::Record {
    create(&b.agent, &b.project, Some(name), std::process::id())
        .unwrap()
        .record
}

#[test]
fn merge_commits_work_previews_and_fast_forwards_keeping_other_uncommitted_changes() {
    let b = setup();
    let r = worktree(&b, "m");
    let wt = PathBuf::from(&r.path);
    commit_file(&wt, "new.txt", "new\n", "add new");
    fs::write(wt.join("a.txt"), "one\ntwo\nthree\nfour\n").unwrap(); // uncommitted: committed by prepare
                                                                     // The person's own uncommitted change to another file survives the merge.
    fs::write(b.project.join("mine.txt"), "mine\n").unwrap();
    let pv = prepare(&r).unwrap();
    assert!(pv.committed_work && !pv.synced);
    assert_eq!(pv.commits_total, 2);
    assert_eq!(pv.files, ["M\ta.txt", "A\tnew.txt"]);
    assert_eq!(pv.project_branch, "main");
    assert_eq!(pv.token, token("m", "main", &pv.project_commit, &pv.worktree_commit));
    let a = apply(&r, &pv.token).unwrap();
    assert_eq!(
        (a.from.as_str(), a.to.as_str(), a.files),
        (pv.project_commit.as_str(), pv.worktree_commit.as_str(), 2)
    );
    assert_eq!(sh(&b.project, &["rev-parse", "HEAD"]), pv.worktree_commit);
    assert_eq!(fs::read_to_string(b.project.join("new.txt")).unwrap(), "new\n");
    assert_eq!(fs::read_to_string(b.project.join("mine.txt")).unwrap(), "mine\n");
}

#[test]
fn merge_syncs_the_project_first_and_refuses_a_moved_side() {
    let b = setup();
    let r = worktree(&b, "s");
    let wt = PathBuf::from(&r.path);
    commit_file(&wt, "w.txt", "w\n", "worktree work");
    commit_file(&b.project, "p.txt", "p\n", "project work");
    let pv = prepare(&r).unwrap();
    assert!(pv.synced && !pv.committed_work);
    assert!(
        wt.join("p.txt").exists(),
        "the project branch was merged into the worktree"
    );
    // The project moves after the preview: the token is refused and nothing changes.
    commit_file(&b.project, "q.txt", "q\n", "more project work");
    let before = sh(&b.project, &["rev-parse", "HEAD"]);
    assert_eq!(apply(&r, &pv.token).unwrap_err().code, WorktreeCode::Moved);
    assert_eq!(sh(&b.project, &["rev-parse", "HEAD"]), before);
    // The worktree moves (uncommitted edit): refused too.
    let pv2 = prepare(&r).unwrap();
    fs::write(wt.join("w.txt"), "changed\n").unwrap();
    assert_eq!(apply(&r, &pv2.token).unwrap_err().code, WorktreeCode::Moved);
    assert_eq!(apply(&r, "0000000000000000").unwrap_err().code, WorktreeCode::Moved);
}

#[test]
fn merge_refuses_to_overwrite_the_persons_uncommitted_files() {
    let b = setup();
    let r = worktree(&b, "o");
    let wt = PathBuf::from(&r.path);
    commit_file(&wt, "a.txt", "worktree\n", "change a");
    fs::write(b.project.join("a.txt"), "person's edit\n").unwrap();
    let pv = prepare(&r).unwrap();
    let e = apply(&r, &pv.token).unwrap_err();
    assert_eq!(e.code, WorktreeCode::ProjectDirty);
    assert!(e.message.contains("a.txt"), "{}", e.message);
    assert_eq!(fs::read_to_string(b.project.join("a.txt")).unwrap(), "person's edit\n");
    assert_eq!(sh(&b.project, &["rev-parse", "HEAD"]), pv.project_commit);
}

#[test]
fn a_conflict_stays_in_the_worktree_and_the_project_is_untouched() {
    let b = setup();
    let r = worktree(&b, "c");
    let wt = PathBuf::from(&r.path);
    commit_file(&wt, "a.txt", "worktree side\n", "w");
    commit_file(&b.project, "a.txt", "project side\n", "p");
    let head = sh(&b.project, &["rev-parse", "HEAD"]);
    let e = prepare(&r).unwrap_err();
    assert_eq!(e.code, WorktreeCode::Conflict);
    assert!(
        e.message.contains("a.txt") && e.message.contains("project is untouched"),
        "{}",
        e.message
    );
    assert!(fs::read_to_string(wt.join("a.txt")).unwrap().contains("<<<<<<<"));
    assert_eq!(sh(&b.project, &["rev-parse", "HEAD"]), head);
    assert_eq!(fs::read_to_string(b.project.join("a.txt")).unwrap(), "project side\n");
    // Still conflicted: refused again without touching anything.
    assert_eq!(prepare(&r).unwrap_err().code, WorktreeCode::Conflict);
    // Resolved and committed in the worktree: the merge goes through.
    fs::write(wt.join("a.txt"), "resolved\n").unwrap();
    sh(&wt, &["add", "a.txt"]);
    sh(&wt, &["commit", "-q", "--no-edit"]);
    let pv = prepare(&r).unwrap();
    apply(&r, &pv.token).unwrap();
    assert_eq!(fs::read_to_string(b.project.join("a.txt")).unwrap(), "resolved\n");
}

#[test]
fn a_linked_over_worktree_is_never_merged_and_delete_removes_only_the_link() {
    let b = setup();
    let r = worktree(&b, "l");
    let wt = PathBuf::from(&r.path);
    commit_file(&wt, "w.txt", "w\n", "work");
    let moved = b.root.join("moved");
    fs::rename(&wt, &moved).unwrap();
    symlink(&moved, &wt).unwrap();
    assert_eq!(prepare(&r).unwrap_err().code, WorktreeCode::Missing);
    assert_eq!(apply(&r, "x").unwrap_err().code, WorktreeCode::Missing);
    assert_eq!(manage::status(&r).unwrap_err().code, WorktreeCode::Missing);
    // Unmerged: refused without force; with force the branch is kept as a snapshot and only the link goes.
    let me = std::process::id();
    assert_eq!(
        delete(&b.agent, &b.project, "l", false, me).unwrap_err().code,
        WorktreeCode::Unmerged
    );
    let d = delete(&b.agent, &b.project, "l", true, me).unwrap();
    assert_eq!(d.folder, "link");
    assert_eq!(d.snapshot.as_deref(), Some("refs/pct/snapshots/l"));
    assert!(moved.join("w.txt").exists(), "the link's target is untouched");
    assert_eq!(sh(&b.project, &["show", "refs/pct/snapshots/l:w.txt"]), "w");
    assert_eq!(sh(&b.project, &["branch", "--list", "pct/l"]), "");
    assert!(list(&b.agent, &b.project).unwrap().is_empty());
}

#[test]
fn delete_snapshots_uncommitted_work_and_removes_folder_branch_and_record() {
    let b = setup();
    let r = worktree(&b, "d");
    let wt = PathBuf::from(&r.path);
    fs::write(wt.join("draft.txt"), "draft\n").unwrap();
    let e = delete(&b.agent, &b.project, "d", false, std::process::id()).unwrap_err();
    assert_eq!(e.code, WorktreeCode::Unmerged);
    assert!(wt.join("draft.txt").exists(), "a refusal changes nothing");
    // Another live process holds it: refused even with force.
    manage::lock(&Git::new(&b.project), &wt, 1).unwrap();
    assert_eq!(
        delete(&b.agent, &b.project, "d", true, std::process::id())
            .unwrap_err()
            .code,
        WorktreeCode::InUse
    );
    let d = delete(&b.agent, &b.project, "d", true, 1).unwrap();
    assert_eq!(d.folder, "tree");
    assert!(!wt.exists());
    assert_eq!(sh(&b.project, &["show", "refs/pct/snapshots/d:draft.txt"]), "draft");
    assert_eq!(
        sh(&b.project, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(
        delete(&b.agent, &b.project, "d", true, 1).unwrap_err().code,
        WorktreeCode::NotFound
    );
    // A merged, clean worktree is deleted without asking and without a snapshot.
    let r2 = worktree(&b, "clean");
    let d2 = delete(&b.agent, &b.project, "clean", false, std::process::id()).unwrap();
    assert!(d2.snapshot.is_none() && !Path::new(&r2.path).exists());
}

#[test]
fn project_of_reads_branch_head_and_sub_folder() {
    let b = setup();
    fs::create_dir_all(b.project.join("x/y")).unwrap();
    let p = project_of(&b.project.join("x/y")).unwrap();
    assert_eq!(
        (p.root.as_path(), p.sub.as_path(), p.branch.as_str()),
        (b.project.as_path(), Path::new("x/y"), "main")
    );
    assert_eq!(p.head, sh(&b.project, &["rev-parse", "HEAD"]));
}

#[test]
fn every_code_is_in_the_docs_table_in_order() {
    let doc = include_str!("../../docs/worktrees.md");
    let words: Vec<&str> = WorktreeCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(crate::codes::check::doc_table(doc, "### Codes"), words);
}

// ---- the toolkit's session files ----

/// Writes a session file whose header names `cwd` into the toolkit's session folder, last changed at `at`.
fn session_file(agent: &Path, name: &str, cwd: &Path, at: std::time::SystemTime) -> PathBuf {
    let dir = super::sessions::dir(agent);
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let header = serde_json::json!({"type": "session", "version": 3, "id": name, "timestamp": "t", "cwd": cwd});
    fs::write(&p, format!("{header}\n{{\"type\":\"message\"}}\n")).unwrap();
    fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(at)
        .unwrap();
    p
}

#[test]
fn delete_removes_the_session_files_rooted_in_the_worktree_only() {
    let b = setup();
    let r = worktree(&b, "gone");
    let other = worktree(&b, "other");
    let now = std::time::SystemTime::now();
    let wt = PathBuf::from(&r.path);
    fs::create_dir_all(wt.join("sub")).unwrap();
    let root = session_file(&b.agent, "a.jsonl", &wt, now);
    let sub = session_file(&b.agent, "b.jsonl", &wt.join("sub"), now);
    let project = session_file(&b.agent, "c.jsonl", &b.project, now);
    let sibling = session_file(&b.agent, "d.jsonl", Path::new(&other.path), now);
    let d = delete(&b.agent, &b.project, "gone", true, std::process::id()).unwrap();
    assert_eq!(d.sessions, 2);
    assert!(!root.exists() && !sub.exists());
    assert!(project.exists() && sibling.exists());
}

#[test]
fn the_sweep_removes_old_session_files_outside_live_worktrees_at_the_age_boundary() {
    use super::sessions::{sweep, MAX_AGE};
    use std::time::{Duration, UNIX_EPOCH};
    let b = setup();
    let live = worktree(&b, "live");
    let dead = worktree(&b, "dead");
    let dead_path = PathBuf::from(&dead.path);
    delete(&b.agent, &b.project, "dead", true, std::process::id()).unwrap();
    let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let in_live = session_file(&b.agent, "live.jsonl", Path::new(&live.path), t0);
    let in_project = session_file(&b.agent, "project.jsonl", &b.project, t0);
    let in_dead = session_file(&b.agent, "dead.jsonl", &dead_path, t0);
    let own = session_file(&b.agent, "own.jsonl", &b.project, t0);
    let newer = session_file(&b.agent, "newer.jsonl", &b.project, t0 + Duration::from_secs(1));
    let dir = super::sessions::dir(&b.agent);
    // Not session files of the toolkit's: no header, another extension, a link to a header file elsewhere.
    fs::write(dir.join("noheader.jsonl"), "{\"type\":\"message\"}\n").unwrap();
    fs::write(dir.join("notes.txt"), "x").unwrap();
    let outside = session_file(&b.root, "outside.jsonl", &b.project, t0);
    let moved = b.root.join("outside.jsonl");
    fs::rename(&outside, &moved).unwrap();
    symlink(&moved, dir.join("link.jsonl")).unwrap();
    for p in [dir.join("noheader.jsonl"), dir.join("notes.txt")] {
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t0)
            .unwrap();
    }
    // One second short of the age: nothing goes.
    assert_eq!(
        sweep(&b.agent, Some(&own), MAX_AGE, t0 + MAX_AGE - Duration::from_secs(1)),
        0
    );
    // At the age: the project's and the deleted worktree's files go; the live worktree's, the sweeping session's
    // own, the newer one and everything that is not a toolkit session file stay.
    assert_eq!(sweep(&b.agent, Some(&own), MAX_AGE, t0 + MAX_AGE), 2);
    assert!(!in_project.exists() && !in_dead.exists());
    assert!(in_live.exists() && own.exists() && newer.exists());
    assert!(dir.join("noheader.jsonl").exists() && dir.join("notes.txt").exists());
    assert!(fs::symlink_metadata(dir.join("link.jsonl")).is_ok() && moved.exists());
    // Without a file of its own the sweeping session keeps nothing back; the live worktree's file still stays.
    assert_eq!(sweep(&b.agent, None, MAX_AGE, t0 + MAX_AGE + Duration::from_secs(1)), 2);
    assert!(in_live.exists() && !own.exists() && !newer.exists());
    // No folder at all: nothing to do.
    let empty = b.root.join("no-agent");
    assert_eq!(sweep(&empty, None, MAX_AGE, t0 + MAX_AGE), 0);
}
