//! Delegate worktrees on real temporary repositories (docs/worktrees.md "Delegates"): the checkpoint leaves the
//! session worktree as it was, a clean merge back, a session that moved on since the checkpoint, a conflict that
//! keeps the branch, a stopped delegate, and two delegates that do not see each other's files.

use super::create::create;
use super::delegate::{checkpoint, finish, start, Outcome};
use super::git::Git;
use super::tests::{setup, sh, Box_};
use std::fs;
use std::path::{Path, PathBuf};

struct Session {
    _box: Box_,
    agent: PathBuf,
    project: PathBuf,
    /// The session's worktree.
    wt: PathBuf,
}

/// The worktree tests' project (a.txt with three lines, an ignored `.env`) with `.env` listed in
/// `.worktreeinclude`, and a session worktree `s` of it.
fn session() -> Session {
    let b = setup();
    let (project, agent) = (b.project.clone(), b.agent.clone());
    fs::write(project.join(".worktreeinclude"), ".env\n").unwrap();
    sh(&project, &["add", "-A"]);
    sh(&project, &["commit", "-q", "-m", "copy .env into worktrees"]);
    let wt = PathBuf::from(
        create(&agent, &project, Some("s"), std::process::id())
            .unwrap()
            .record
            .path,
    );
    fs::write(wt.join(".env"), "SECRET=1\n").unwrap();
    Session {
        _box: b,
        agent,
        project,
        wt,
    }
}

/// Everything git knows about a worktree's state that a checkpoint must not change.
fn state(dir: &Path) -> (String, String, String) {
    (
        sh(dir, &["rev-parse", "HEAD"]),
        sh(dir, &["status", "--porcelain", "--untracked-files=all"]),
        sh(dir, &["diff", "--cached", "--name-status"]),
    )
}

fn branch_exists(project: &Path, branch: &str) -> bool {
    Git::new(project)
        .yes(&["show-ref", "--verify", "--quiet", &format!("refs/heads/{branch}")])
        .unwrap()
}

#[test]
fn checkpoint_commits_the_sessions_state_and_leaves_its_index_head_and_files_as_they_were() {
    let s = session();
    fs::write(s.wt.join("a.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    fs::write(s.wt.join("staged.txt"), "staged\n").unwrap();
    sh(&s.wt, &["add", "staged.txt"]);
    fs::write(s.wt.join("untracked.txt"), "untracked\n").unwrap();
    let before = state(&s.wt);
    let cp = checkpoint(&s.wt, "cp").unwrap();
    assert!(cp.made);
    assert_eq!(state(&s.wt), before, "HEAD, the index and the files are untouched");
    assert_eq!(
        sh(&s.wt, &["show", &format!("{}:a.txt", cp.commit)]),
        "one\ntwo\nthree\nfour"
    );
    assert_eq!(
        sh(&s.wt, &["show", &format!("{}:untracked.txt", cp.commit)]),
        "untracked"
    );
    assert_eq!(sh(&s.wt, &["show", &format!("{}:staged.txt", cp.commit)]), "staged");
    // Ignored files are not part of it; its parent is the session's HEAD; no branch moved.
    assert!(
        Git::new(&s.wt)
            .output(&["cat-file", "-e", &format!("{}:.env", cp.commit)])
            .unwrap()
            .status
            != Some(0)
    );
    assert_eq!(sh(&s.wt, &["rev-parse", &format!("{}^", cp.commit)]), before.0);
    // A clean worktree's checkpoint is its HEAD.
    let clean = session();
    let c = checkpoint(&clean.wt, "cp").unwrap();
    assert!(!c.made);
    assert_eq!(c.commit, sh(&clean.wt, &["rev-parse", "HEAD"]));
}

#[test]
fn a_delegate_starts_from_the_checkpoint_and_its_clean_work_is_merged_back_uncommitted() {
    let s = session();
    fs::write(s.wt.join("draft.txt"), "the session's draft\n").unwrap();
    let st = start(&s.agent, &s.wt, "writer", std::process::id()).unwrap();
    let d = PathBuf::from(&st.record.path);
    assert!(st.record.id.starts_with("dg-") && st.record.branch == format!("pct/{}", st.record.id));
    assert_eq!(st.record.parent.as_deref(), Some("s"));
    assert!(st.checkpoint_made);
    // The delegate sees the session's uncommitted draft and the included ignored file.
    assert_eq!(
        fs::read_to_string(d.join("draft.txt")).unwrap(),
        "the session's draft\n"
    );
    assert_eq!(fs::read_to_string(d.join(".env")).unwrap(), "SECRET=1\n");
    // Its work: a new file, a change, a deletion.
    fs::write(d.join("new.txt"), "by the delegate\n").unwrap();
    fs::write(d.join("a.txt"), "one\ntwo\nthree!\n").unwrap();
    fs::remove_file(d.join("draft.txt")).unwrap();
    let head = sh(&s.wt, &["rev-parse", "HEAD"]);
    let f = finish(&s.agent, &d, true).unwrap();
    assert_eq!(f.outcome, Outcome::Merged);
    assert_eq!(f.files, ["M\ta.txt", "D\tdraft.txt", "A\tnew.txt"]);
    assert_eq!(f.parent_path, s.wt.to_string_lossy());
    assert_eq!(fs::read_to_string(s.wt.join("new.txt")).unwrap(), "by the delegate\n");
    assert_eq!(fs::read_to_string(s.wt.join("a.txt")).unwrap(), "one\ntwo\nthree!\n");
    assert!(!s.wt.join("draft.txt").exists());
    // Uncommitted in the session, like its own work; the session's HEAD and the project did not move.
    assert_eq!(sh(&s.wt, &["rev-parse", "HEAD"]), head);
    assert_eq!(sh(&s.wt, &["diff", "--cached", "--name-only"]), "");
    assert!(!s.project.join("new.txt").exists());
    // The delegate's worktree, branch and record are gone.
    assert!(!d.exists());
    assert!(!branch_exists(&s.project, &st.record.branch));
    assert!(!d.with_extension("json").exists());
    assert!(!sh(&s.project, &["worktree", "list"]).contains(&st.record.id));
}

#[test]
fn a_session_that_moved_on_since_the_checkpoint_gets_a_three_way_merge() {
    let s = session();
    fs::write(s.wt.join("a.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
    let st = start(&s.agent, &s.wt, "writer", std::process::id()).unwrap();
    let d = PathBuf::from(&st.record.path);
    // The delegate changes the last line; meanwhile the session commits a change of the first line and starts an
    // uncommitted file.
    fs::write(d.join("a.txt"), "one\ntwo\nthree\nfour\nFIVE\n").unwrap();
    fs::write(s.wt.join("a.txt"), "ONE\ntwo\nthree\nfour\nfive\n").unwrap();
    sh(&s.wt, &["commit", "-q", "-am", "session work"]);
    fs::write(s.wt.join("later.txt"), "later\n").unwrap();
    let f = finish(&s.agent, &d, true).unwrap();
    assert_eq!(f.outcome, Outcome::Merged, "{f:?}");
    assert_eq!(
        fs::read_to_string(s.wt.join("a.txt")).unwrap(),
        "ONE\ntwo\nthree\nfour\nFIVE\n"
    );
    assert_eq!(fs::read_to_string(s.wt.join("later.txt")).unwrap(), "later\n");
    assert_eq!(sh(&s.wt, &["log", "-1", "--format=%s"]), "session work");
}

#[test]
fn a_conflict_leaves_the_session_untouched_and_keeps_the_branch_and_worktree() {
    let s = session();
    let st = start(&s.agent, &s.wt, "writer", std::process::id()).unwrap();
    let d = PathBuf::from(&st.record.path);
    fs::write(d.join("a.txt"), "one\nTWO by the delegate\nthree\n").unwrap();
    fs::write(d.join("other.txt"), "clean part\n").unwrap();
    fs::write(s.wt.join("a.txt"), "one\ntwo by the session\nthree\n").unwrap();
    let before = state(&s.wt);
    let f = finish(&s.agent, &d, true).unwrap();
    assert_eq!(f.outcome, Outcome::Conflict);
    assert_eq!(f.conflicts, ["a.txt"]);
    assert_eq!(state(&s.wt), before, "nothing of the delegate landed");
    assert_eq!(
        fs::read_to_string(s.wt.join("a.txt")).unwrap(),
        "one\ntwo by the session\nthree\n"
    );
    assert!(!s.wt.join("other.txt").exists());
    // Kept: the folder, the branch with the delegate's work committed, unlocked (idle, not a leftover).
    assert!(d.join("other.txt").exists());
    assert!(branch_exists(&s.project, &st.record.branch));
    assert_eq!(
        sh(&s.project, &["show", &format!("{}:other.txt", st.record.branch)]),
        "clean part"
    );
    assert_eq!(f.tip, sh(&s.project, &["rev-parse", &st.record.branch]));
    let listed = super::manage::list(&s.agent, &s.project).unwrap();
    let e = listed.iter().find(|e| e.id == st.record.id).unwrap();
    assert_eq!(e.state, "idle");
    // The way the result names works: with the session's work staged, applying checkpoint..branch with --3way
    // brings the clean part in and leaves conflict markers to resolve.
    sh(&s.wt, &["add", "-A"]);
    let cp = &st.record.base;
    let patch = s.wt.join("..").join("p.patch");
    sh(
        &s.wt,
        &[
            "diff",
            "--binary",
            &format!("--output={}", patch.display()),
            cp,
            &st.record.branch,
        ],
    );
    let _ = Git::new(&s.wt)
        .output(&["apply", "--3way", &patch.to_string_lossy()])
        .unwrap();
    assert!(fs::read_to_string(s.wt.join("a.txt")).unwrap().contains("<<<<<<<"));
    assert_eq!(fs::read_to_string(s.wt.join("other.txt")).unwrap(), "clean part\n");
}

#[test]
fn a_stopped_delegate_keeps_its_work_on_its_branch_and_nothing_lands() {
    let s = session();
    let st = start(&s.agent, &s.wt, "writer", std::process::id()).unwrap();
    let d = PathBuf::from(&st.record.path);
    fs::write(d.join("half.txt"), "half done\n").unwrap();
    let f = finish(&s.agent, &d, false).unwrap();
    assert_eq!(f.outcome, Outcome::Kept);
    assert_eq!(f.files, ["A\thalf.txt"]);
    assert!(!s.wt.join("half.txt").exists());
    assert_eq!(
        sh(&s.project, &["show", &format!("{}:half.txt", st.record.branch)]),
        "half done"
    );
    // A delegate that changed nothing leaves nothing behind.
    let st2 = start(&s.agent, &s.wt, "reader", std::process::id()).unwrap();
    let f2 = finish(&s.agent, Path::new(&st2.record.path), true).unwrap();
    assert_eq!(f2.outcome, Outcome::Unchanged);
    assert!(!Path::new(&st2.record.path).exists());
    assert!(!branch_exists(&s.project, &st2.record.branch));
}

#[test]
fn two_delegates_do_not_see_each_others_files_until_merged() {
    let s = session();
    let one = start(&s.agent, &s.wt, "one", std::process::id()).unwrap();
    let two = start(&s.agent, &s.wt, "two", std::process::id()).unwrap();
    let (d1, d2) = (PathBuf::from(&one.record.path), PathBuf::from(&two.record.path));
    assert_ne!(d1, d2);
    fs::write(d1.join("one.txt"), "1\n").unwrap();
    fs::write(d2.join("two.txt"), "2\n").unwrap();
    assert!(!d2.join("one.txt").exists() && !d1.join("two.txt").exists());
    assert_eq!(finish(&s.agent, &d1, true).unwrap().outcome, Outcome::Merged);
    assert!(s.wt.join("one.txt").exists());
    assert!(
        !d2.join("one.txt").exists(),
        "merged into the session, not into the other delegate"
    );
    assert_eq!(finish(&s.agent, &d2, true).unwrap().outcome, Outcome::Merged);
    assert_eq!(fs::read_to_string(s.wt.join("one.txt")).unwrap(), "1\n");
    assert_eq!(fs::read_to_string(s.wt.join("two.txt")).unwrap(), "2\n");
}

#[test]
fn a_delegate_needs_a_worktree_session_and_finish_needs_a_delegate_worktree() {
    let s = session();
    assert_eq!(
        start(&s.agent, &s.project, "writer", 1).unwrap_err().code,
        super::WorktreeCode::NotFound
    );
    assert_eq!(
        finish(&s.agent, &s.wt, true).unwrap_err().code,
        super::WorktreeCode::NotFound
    );
}
