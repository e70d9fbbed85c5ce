//! Executor tests against real temp folders: operations, preservation, every preflight refusal (tree unchanged),
//! abort, injected commit failures, the process lock, a preflight property test and the parser fuzz target.

use super::*;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{symlink, MetadataExt as _, PermissionsExt};
use std::sync::atomic::AtomicBool;

/// Everything under a folder: relative path -> (kind, bytes, mode).
fn snapshot(root: &Path) -> BTreeMap<String, (char, Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, Vec<u8>, u32)>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let md = fs::symlink_metadata(&p).unwrap();
            let mode = md.permissions().mode();
            if md.file_type().is_symlink() {
                out.insert(
                    rel,
                    (
                        'l',
                        fs::read_link(&p).unwrap().to_string_lossy().into_owned().into_bytes(),
                        0,
                    ),
                );
            } else if md.is_dir() {
                out.insert(rel, ('d', vec![], mode));
                walk(root, &p, out);
            } else {
                out.insert(rel, ('f', fs::read(&p).unwrap(), mode));
            }
        }
    }
    walk(root, root, &mut out);
    out
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
}

fn read(root: &Path, rel: &str) -> Vec<u8> {
    fs::read(root.join(rel)).unwrap()
}

fn envelope(body: &str) -> String {
    format!("*** Begin Patch\n{body}*** End Patch\n")
}

fn ok(root: &Path, body: &str) -> Applied {
    let r = apply_with(root, &envelope(body), &AtomicBool::new(false), Faults::NONE);
    let applied = r.unwrap_or_else(|e| panic!("{e}"));
    assert_no_temp_files(root);
    applied
}

/// Applies and expects a no-change refusal: returns the message after checking the tree is byte-identical.
fn refused(root: &Path, body: &str) -> String {
    let before = snapshot(root);
    let err = apply_with(root, &envelope(body), &AtomicBool::new(false), Faults::NONE).unwrap_err();
    assert_eq!(err.outcome, Outcome::NoChange, "{err}");
    assert_eq!(snapshot(root), before, "tree changed by a refused patch: {err}");
    err.to_string()
}

fn assert_no_temp_files(root: &Path) {
    for k in snapshot(root).keys() {
        assert!(!k.contains(".pct-patch-"), "temp file left behind: {k}");
    }
}

fn ws() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn add_update_delete_move_in_one_patch() {
    let d = ws();
    let r = d.path();
    put(r, "keep.txt", b"one\ntwo\nthree\nfour\nfive\n");
    put(r, "old.txt", b"bye\n");
    put(r, "src/name.txt", b"alpha\nbeta\n");
    let applied = ok(
        r,
        "*** Add File: notes/todo.md\n+first line\n+\n+third\n*** Update File: keep.txt\n@@\n one\n-two\n+TWO\n@@ three\n-four\n+FOUR\n*** Delete File: old.txt\n*** Update File: src/name.txt\n*** Move to: dst/deep/renamed.txt\n@@\n-beta\n+gamma\n",
    );
    assert_eq!(
        applied.text(),
        "Applied patch:\n- add notes/todo.md\n- update keep.txt\n- delete old.txt\n- move src/name.txt -> dst/deep/renamed.txt"
    );
    assert_eq!(applied.operations[3].kind, OperationKind::Move);
    assert_eq!(applied.operations[3].from.as_deref(), Some("src/name.txt"));
    assert_eq!(read(r, "notes/todo.md"), b"first line\n\nthird\n");
    assert_eq!(read(r, "keep.txt"), b"one\nTWO\nthree\nFOUR\nfive\n");
    assert!(!r.join("old.txt").exists());
    assert!(!r.join("src/name.txt").exists());
    assert_eq!(read(r, "dst/deep/renamed.txt"), b"alpha\ngamma\n");
}

#[test]
fn preserves_crlf_bom_final_newline_and_mode() {
    let d = ws();
    let r = d.path();
    put(r, "crlf.txt", b"a\r\nb\r\nc\r\n");
    put(r, "nofinal.txt", b"a\nb");
    put(r, "bom.txt", b"\xEF\xBB\xBFa\nb\n");
    put(r, "bomcrlfnofinal.txt", b"\xEF\xBB\xBFa\r\nb");
    put(r, "run.sh", b"#!/bin/sh\necho hi\n");
    fs::set_permissions(r.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    put(r, "moved.sh", b"x\n");
    fs::set_permissions(r.join("moved.sh"), fs::Permissions::from_mode(0o741)).unwrap();
    ok(
        r,
        "*** Update File: crlf.txt\n-b\n+B\n+B2\n*** Update File: nofinal.txt\n-b\n+B\n*** Update File: bom.txt\n-a\n+A\n*** Update File: bomcrlfnofinal.txt\n@@\n a\n+mid\n*** Update File: run.sh\n-echo hi\n+echo bye\n*** Update File: moved.sh\n*** Move to: bin/moved.sh\n-x\n+y\n",
    );
    assert_eq!(read(r, "crlf.txt"), b"a\r\nB\r\nB2\r\nc\r\n");
    assert_eq!(read(r, "nofinal.txt"), b"a\nB");
    assert_eq!(read(r, "bom.txt"), b"\xEF\xBB\xBFA\nb\n");
    assert_eq!(read(r, "bomcrlfnofinal.txt"), b"\xEF\xBB\xBFa\r\nmid\r\nb");
    assert_eq!(
        fs::metadata(r.join("run.sh")).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    assert_eq!(
        fs::metadata(r.join("bin/moved.sh")).unwrap().permissions().mode() & 0o7777,
        0o741
    );
}

#[test]
fn end_of_file_pure_addition_to_a_file_without_final_newline() {
    let d = ws();
    put(d.path(), "f", b"a\nb");
    ok(d.path(), "*** Update File: f\n+c\n");
    assert_eq!(read(d.path(), "f"), b"a\nb\nc");
}

#[test]
fn empty_and_bom_only_sources_behave_like_add() {
    let d = ws();
    put(d.path(), "empty.txt", b"");
    put(d.path(), "bomonly.txt", b"\xEF\xBB\xBF");
    ok(
        d.path(),
        "*** Update File: empty.txt\n+x\n+y\n*** Update File: bomonly.txt\n+x\n",
    );
    assert_eq!(read(d.path(), "empty.txt"), b"x\ny\n");
    assert_eq!(read(d.path(), "bomonly.txt"), b"\xEF\xBB\xBFx\n");
}

#[test]
fn delete_all_lines_leaves_an_empty_file() {
    let d = ws();
    put(d.path(), "f", b"a\nb\n");
    ok(d.path(), "*** Update File: f\n-a\n-b\n");
    assert_eq!(read(d.path(), "f"), b"");
}

#[test]
fn path_rule_refusals() {
    let d = ws();
    let r = d.path();
    put(r, "a.txt", b"a\n");
    assert_eq!(
        refused(r, "*** Add File: /etc/x\n+x\n"),
        "apply_patch failed (no-change): patch paths must be relative workspace files. Got '/etc/x': use a path relative to the workspace."
    );
    assert_eq!(
        refused(r, "*** Add File:\n+x\n"),
        "apply_patch failed (no-change): patch paths must be relative workspace files. Got '': use a path relative to the workspace."
    );
    assert_eq!(
        refused(r, "*** Add File: C:/x\n+x\n"),
        "apply_patch failed (no-change): patch paths must be relative workspace files. Got 'C:/x': use a path relative to the workspace."
    );
    assert_eq!(
        refused(r, "*** Add File: sub/../../x\n+x\n"),
        "apply_patch failed (no-change): path traversal is not allowed: 'sub/../../x'"
    );
    assert_eq!(
        refused(r, "*** Delete File: ./.\n"),
        "apply_patch failed (no-change): patch paths cannot resolve to the workspace root. Got './.': name a file inside the workspace."
    );
}

#[test]
fn symlink_components_are_refused() {
    let d = ws();
    let r = d.path();
    put(r, "real/f.txt", b"x\n");
    symlink(r.join("real"), r.join("link")).unwrap();
    symlink(r.join("real/f.txt"), r.join("flink")).unwrap();
    let outside = ws();
    symlink(outside.path(), r.join("out")).unwrap();
    assert_eq!(
        refused(r, "*** Update File: link/f.txt\n-x\n+y\n"),
        "apply_patch failed (no-change): visible symlink components are not allowed. 'link/f.txt' goes through the symlink 'link': patch the real path instead."
    );
    assert!(refused(r, "*** Delete File: flink\n").contains("visible symlink components are not allowed. 'flink'"));
    assert!(refused(r, "*** Add File: out/new.txt\n+x\n").contains("goes through the symlink 'out'"));
    assert!(outside.path().read_dir().unwrap().next().is_none());
}

#[test]
fn file_used_as_directory_is_refused() {
    let d = ws();
    put(d.path(), "a.txt", b"x\n");
    assert_eq!(
        refused(d.path(), "*** Add File: a.txt/b/c.txt\n+x\n"),
        "apply_patch failed (no-change): non-directory path component in 'a.txt/b/c.txt'. 'a.txt' is not a directory."
    );
}

#[test]
fn alias_refusals_by_name_and_identity() {
    let d = ws();
    let r = d.path();
    put(r, "README.md", b"x\n");
    put(r, "caf\u{e9}.txt", b"x\n");
    assert_eq!(
        refused(r, "*** Update File: README.md\n-x\n+y\n*** Delete File: readme.MD\n"),
        "apply_patch failed (no-change): conflicting patch paths: 'README.md' and 'readme.MD'. Put every change to one file in a single operation, and keep one operation per path"
    );
    assert!(refused(
        r,
        "*** Update File: caf\u{e9}.txt\n-x\n+y\n*** Add File: cafe\u{301}.txt\n+z\n"
    )
    .contains("conflicting patch paths"));
    assert!(refused(r, "*** Add File: dir/x\n+x\n*** Add File: dir\n+y\n")
        .contains("conflicting patch paths: 'dir/x' and 'dir'"));
    assert!(refused(
        r,
        "*** Update File: README.md\n-x\n+y\n*** Update File: README.md\n-x\n+z\n"
    )
    .contains("conflicting patch paths: 'README.md' and 'README.md'"));
    // Same file through a hard link.
    fs::hard_link(r.join("README.md"), r.join("hard.md")).unwrap();
    assert_eq!(
        refused(r, "*** Update File: README.md\n-x\n+y\n*** Delete File: hard.md\n"),
        "apply_patch failed (no-change): conflicting patch paths: 'README.md' and 'hard.md'. Put every change to one file in a single operation, and keep one operation per path"
    );
    // A move's destination conflicts with another operation's path.
    assert!(refused(
        r,
        "*** Update File: README.md\n*** Move to: new.md\n-x\n+y\n*** Add File: NEW.md\n+z\n"
    )
    .contains("conflicting patch paths: 'new.md' and 'NEW.md'"));
}

#[test]
fn source_and_destination_refusals() {
    let d = ws();
    let r = d.path();
    put(r, "a.txt", b"x\n");
    put(r, "b.txt", b"y\n");
    fs::create_dir(r.join("folder")).unwrap();
    assert_eq!(
        refused(r, "*** Update File: missing.txt\n-x\n+y\n"),
        "apply_patch failed (no-change): source does not exist. 'missing.txt' was not found: re-read the workspace; use Add File to create a new file."
    );
    assert_eq!(
        refused(r, "*** Delete File: missing.txt\n"),
        "apply_patch failed (no-change): source does not exist. 'missing.txt' was not found: re-read the workspace; use Add File to create a new file."
    );
    assert_eq!(
        refused(r, "*** Delete File: folder\n"),
        "apply_patch failed (no-change): source is not a regular file. 'folder' is not a regular file: this tool edits regular files only."
    );
    assert_eq!(
        refused(r, "*** Add File: a.txt\n+x\n"),
        "apply_patch failed (no-change): destination already exists. 'a.txt' exists: use Update File to change it, or delete it in an earlier patch."
    );
    assert!(refused(r, "*** Add File: folder\n+x\n").contains("destination already exists. 'folder' exists"));
    assert!(refused(r, "*** Update File: a.txt\n*** Move to: b.txt\n-x\n+z\n")
        .contains("destination already exists. 'b.txt' exists"));
}

#[test]
fn content_refusals() {
    let d = ws();
    let r = d.path();
    put(r, "bin.dat", b"\x00\xff\xfe");
    put(r, "cr.txt", b"a\rb\r");
    put(r, "mixed.txt", b"a\r\nb\n");
    assert_eq!(
        refused(r, "*** Update File: bin.dat\n-a\n+b\n"),
        "apply_patch failed (no-change): non-UTF-8 source: 'bin.dat'. This tool edits UTF-8 text files only"
    );
    assert_eq!(
        refused(r, "*** Update File: cr.txt\n-a\n+b\n"),
        "apply_patch failed (no-change): bare CR line ending in 'cr.txt'. This tool edits files with one line-ending style (LF or CRLF) only"
    );
    assert_eq!(
        refused(r, "*** Update File: mixed.txt\n-a\n+b\n"),
        "apply_patch failed (no-change): mixed line endings in 'mixed.txt'. This tool edits files with one line-ending style (LF or CRLF) only"
    );
}

#[test]
fn mismatch_in_the_third_file_leaves_the_first_two_untouched() {
    let d = ws();
    let r = d.path();
    put(r, "one.txt", b"1\n");
    put(r, "two.txt", b"2\n");
    put(r, "three.txt", b"3\n");
    let msg = refused(
        r,
        "*** Update File: one.txt\n-1\n+one\n*** Add File: new/two.txt\n+x\n*** Update File: three.txt\n-33\n+three\n",
    );
    assert!(
        msg.starts_with("apply_patch failed (no-change): context mismatch in 'three.txt'. Chunk 1 of 1"),
        "{msg}"
    );
    assert!(!r.join("new").exists());
    let amb = refused(
        r,
        "*** Update File: one.txt\n-1\n+one\n*** Add File: q\n+\n*** Update File: q\n+x\n",
    );
    assert!(amb.contains("conflicting patch paths"), "{amb}");
}

#[test]
fn ambiguous_context_is_refused_on_disk() {
    let d = ws();
    put(d.path(), "f", b"x\ny\nx\n");
    assert_eq!(
        refused(d.path(), "*** Update File: f\n-x\n+z\n"),
        "apply_patch failed (no-change): ambiguous context in 'f'. Chunk 1 of 1 matches at line 1 and at line 3 (searching from line 1). Add more unchanged context lines so the chunk matches exactly once"
    );
}

#[test]
fn abort_before_anything_changes_nothing() {
    let d = ws();
    put(d.path(), "f", b"x\n");
    let before = snapshot(d.path());
    let err = apply_with(
        d.path(),
        &envelope("*** Update File: f\n-x\n+y\n"),
        &AtomicBool::new(true),
        Faults::NONE,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "apply_patch failed (no-change): aborted");
    assert_eq!(err.code, "aborted");
    assert_eq!(snapshot(d.path()), before);
}

#[test]
fn abort_after_staging_removes_the_temp_files() {
    let d = ws();
    put(d.path(), "f", b"x\n");
    let mut root = beneath::Root::open(d.path()).unwrap();
    let plan = preflight::preflight(
        d.path(),
        &mut root,
        &parser::parse(&envelope("*** Update File: f\n-x\n+y\n*** Add File: g/h\n+new\n")).unwrap(),
        &|_: &str| Vec::new(),
    )
    .unwrap();
    let before = snapshot(d.path());
    let err =
        commit::stage_and_commit(&mut root, &plan, &AtomicBool::new(true), Faults::NONE, &mut |_| {}).unwrap_err();
    assert_eq!(err.to_string(), "apply_patch failed (no-change): aborted");
    assert_eq!(snapshot(d.path()), before);
}

fn faulty(root: &Path, body: &str, faults: Faults) -> PatchError {
    let err = apply_with(root, &envelope(body), &AtomicBool::new(false), faults).unwrap_err();
    assert_no_temp_files(root);
    err
}

const THREE_OPS: &str = "*** Add File: a.txt\n+new\n*** Update File: b.txt\n-b\n+B\n*** Delete File: c.txt\n";

fn three_files() -> tempfile::TempDir {
    let d = ws();
    put(d.path(), "b.txt", b"b\n");
    put(d.path(), "c.txt", b"c\n");
    d
}

#[test]
fn partial_commit_reports_what_was_committed() {
    let d = three_files();
    let r = d.path();
    let err = faulty(
        r,
        THREE_OPS,
        Faults {
            commit_at: Some(2),
            errno: libc::ENOSPC,
            ..Faults::NONE
        },
    );
    assert_eq!(
        err.to_string(),
        "apply_patch failed (partial); committed: add a.txt; reread: none; filesystem commit failed (ENOSPC)"
    );
    assert_eq!(err.outcome, Outcome::Partial);
    assert_eq!(err.code, "commit-failed");
    assert_eq!(read(r, "a.txt"), b"new\n");
    assert_eq!(read(r, "b.txt"), b"b\n");
    assert_eq!(read(r, "c.txt"), b"c\n");
}

#[test]
fn first_step_failure_is_no_change() {
    let d = three_files();
    let before = snapshot(d.path());
    let err = faulty(
        d.path(),
        THREE_OPS,
        Faults {
            commit_at: Some(1),
            errno: libc::EIO,
            ..Faults::NONE
        },
    );
    assert_eq!(
        err.to_string(),
        "apply_patch failed (no-change): filesystem commit failed (EIO) at 'a.txt'; nothing was changed"
    );
    assert_eq!(snapshot(d.path()), before);
}

#[test]
fn a_step_that_failed_after_taking_effect_is_found_by_rereading() {
    let d = three_files();
    let err = faulty(
        d.path(),
        THREE_OPS,
        Faults {
            commit_at: Some(3),
            errno: libc::EIO,
            after: true,
            ..Faults::NONE
        },
    );
    assert_eq!(
        err.to_string(),
        "apply_patch failed (partial); committed: add a.txt, update b.txt, delete c.txt; reread: none; filesystem commit failed (EIO)"
    );
}

#[test]
fn half_done_move_is_unknown() {
    let d = ws();
    put(d.path(), "x.txt", b"x\n");
    // Steps: mkdir dst (1), rename to dst (2), rewrite in place (3): the failed rewrite is put back at once, so
    // the file is moved but still holds its old content.
    let err = faulty(
        d.path(),
        "*** Update File: x.txt\n*** Move to: dst/y.txt\n-x\n+y\n",
        Faults {
            commit_at: Some(3),
            errno: libc::EACCES,
            ..Faults::NONE
        },
    );
    assert_eq!(
        err.to_string(),
        "apply_patch failed (unknown); committed: none; reread: x.txt, dst/y.txt; filesystem commit failed (EACCES)"
    );
    assert_eq!(err.outcome, Outcome::Unknown);
    assert!(!d.path().join("x.txt").exists());
    assert_eq!(read(d.path(), "dst/y.txt"), b"x\n");
}

#[test]
fn partial_and_unknown_together() {
    let d = ws();
    put(d.path(), "x.txt", b"x\n");
    let err = faulty(
        d.path(),
        "*** Add File: a.txt\n+a\n*** Update File: x.txt\n*** Move to: y.txt\n-x\n+y\n",
        Faults {
            commit_at: Some(3),
            errno: libc::EROFS,
            ..Faults::NONE
        },
    );
    assert_eq!(
        err.to_string(),
        "apply_patch failed (partial; unknown); committed: add a.txt; reread: x.txt, y.txt; filesystem commit failed (EROFS)"
    );
    assert_eq!(err.outcome, Outcome::PartialUnknown);
}

#[test]
fn staging_failure_changes_nothing() {
    let d = three_files();
    let before = snapshot(d.path());
    let err = faulty(
        d.path(),
        THREE_OPS,
        Faults {
            stage_at: Some(2),
            errno: libc::ENOSPC,
            ..Faults::NONE
        },
    );
    assert_eq!(
        err.to_string(),
        "apply_patch failed (no-change): staging failed (ENOSPC) for 'b.txt'; nothing was changed. Check free space and permissions, then retry"
    );
    assert_eq!(snapshot(d.path()), before);
}

#[test]
fn fault_spec_grammar() {
    assert_eq!(
        Faults::parse("commit:2:28"),
        Faults {
            commit_at: Some(2),
            errno: 28,
            ..Faults::NONE
        }
    );
    assert_eq!(
        Faults::parse("stage:1:5:after"),
        Faults {
            stage_at: Some(1),
            errno: 5,
            after: true,
            ..Faults::NONE
        }
    );
    assert_eq!(Faults::parse("commit:x:1"), Faults::NONE);
    assert_eq!(Faults::parse("other:1:1"), Faults::NONE);
    assert_eq!(
        Faults::parse("crash:2"),
        Faults {
            crash_at: Some(2),
            ..Faults::NONE
        }
    );
    assert_eq!(
        Faults::parse("cleanup:1:5"),
        Faults {
            cleanup_at: Some(1),
            errno: 5,
            ..Faults::NONE
        }
    );
    assert_eq!(Faults::parse("crash:x"), Faults::NONE);
}

#[test]
fn touched_paths_are_sorted_absolute_and_unique() {
    let d = ws();
    let r = d.path();
    let paths = touched_paths(
        r,
        &envelope(
            "*** Update File: z.txt\n*** Move to: ./a/b.txt\n-x\n+y\n*** Add File: m.txt\n+x\n*** Delete File: z.txt\n",
        ),
    )
    .unwrap();
    assert_eq!(paths, vec![r.join("a/b.txt"), r.join("m.txt"), r.join("z.txt")]);
    assert_eq!(
        touched_paths(r, &envelope("*** Add File: ../x\n+x\n"))
            .unwrap_err()
            .to_string(),
        "apply_patch failed (no-change): path traversal is not allowed: '../x'"
    );
}

#[test]
fn missing_workspace_is_refused() {
    let err = apply_with(
        Path::new("/nonexistent/pct"),
        &envelope("*** Add File: a\n+x\n"),
        &AtomicBool::new(false),
        Faults::NONE,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "apply_patch failed (no-change): workspace folder is not accessible (ENOENT): '/nonexistent/pct'"
    );
}

#[test]
fn concurrent_applies_are_serialized_by_the_process_lock() {
    let d = ws();
    let lines: Vec<String> = (0..16).map(|i| format!("line{i}")).collect();
    put(d.path(), "f", (lines.join("\n") + "\n").as_bytes());
    let root = d.path().to_path_buf();
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let p = envelope(&format!("*** Update File: f\n@@ line{i}\n+added{i}\n"));
                apply(&root, &p, &AtomicBool::new(false)).unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let text = String::from_utf8(read(&root, "f")).unwrap();
    for i in 0..16 {
        assert!(
            text.contains(&format!("line{i}\nadded{i}\n")),
            "lost update {i}:\n{text}"
        );
    }
}

// ---- property test: a preflight refusal leaves the tree byte-identical ----

mod property {
    use super::*;
    use proptest::prelude::*;

    const PATHS: &[&str] = &[
        "a.txt",
        "A.txt",
        "b.txt",
        "dir/c.txt",
        "dir",
        "dir/c.txt/x",
        "link/c.txt",
        "flink",
        "../x",
        "/abs",
        "new/deep/f.txt",
        "crlf.txt",
        "bin.dat",
        "./b.txt",
        "caf\u{e9}",
        "cafe\u{301}",
        "hard.txt",
    ];
    const TEXTS: &[&str] = &["one", "two", "three", "", "  two", "tw\u{2014}o", "x", "four"];
    /// Mostly-valid choices so refusals also happen deep in preflight (matching, contents), after valid operations.
    const EXISTING: &[&str] = &["a.txt", "b.txt", "dir/c.txt", "crlf.txt", "mixed.txt", "caf\u{e9}"];
    const FRESH: &[&str] = &["n1.txt", "new/deep/f.txt", "dir/n2.txt", "n3/x.txt"];

    fn tree() -> tempfile::TempDir {
        let d = ws();
        let r = d.path();
        put(r, "a.txt", b"one\ntwo\nthree\n");
        put(r, "b.txt", b"one\ntwo\none\ntwo\n");
        put(r, "dir/c.txt", b"three\nfour");
        put(r, "crlf.txt", b"one\r\ntwo\r\n");
        put(r, "bin.dat", b"\xff\xfe");
        put(r, "caf\u{e9}", b"x\n");
        put(r, "mixed.txt", b"one\r\ntwo\n");
        symlink(r.join("dir"), r.join("link")).unwrap();
        symlink(r.join("a.txt"), r.join("flink")).unwrap();
        fs::hard_link(r.join("b.txt"), r.join("hard.txt")).unwrap();
        d
    }

    fn line() -> impl Strategy<Value = String> {
        (0..3usize, 0..TEXTS.len()).prop_map(|(k, t)| format!("{}{}", [" ", "+", "-"][k], TEXTS[t]))
    }

    fn pick(from: &'static [&'static str]) -> impl Strategy<Value = &'static str> + Clone {
        (0..from.len()).prop_map(move |i| from[i])
    }

    fn hunk() -> impl Strategy<Value = String> {
        let any_path = pick(PATHS);
        let path = prop_oneof![1 => any_path.clone(), 2 => pick(EXISTING)];
        let fresh = prop_oneof![1 => any_path, 2 => pick(FRESH)];
        prop_oneof![
            (fresh.clone(), prop::collection::vec(0..TEXTS.len(), 1..3)).prop_map(|(p, ls)| {
                let mut s = format!("*** Add File: {p}\n");
                for l in ls {
                    s.push_str(&format!("+{}\n", TEXTS[l]));
                }
                s
            }),
            path.clone().prop_map(|p| format!("*** Delete File: {p}\n")),
            (
                path,
                prop::option::of(fresh),
                prop::collection::vec(prop::collection::vec(line(), 1..4), 1..3),
                any::<bool>()
            )
                .prop_map(|(p, mv, chunks, eof)| {
                    let mut s = format!("*** Update File: {p}\n");
                    if let Some(m) = mv {
                        s.push_str(&format!("*** Move to: {m}\n"));
                    }
                    for c in chunks {
                        s.push_str("@@\n");
                        for l in c {
                            s.push_str(&l);
                            s.push('\n');
                        }
                    }
                    if eof {
                        s.push_str("*** End of File\n");
                    }
                    s
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]
        #[test]
        fn refused_patches_leave_the_tree_byte_identical(hunks in prop::collection::vec(hunk(), 1..4)) {
            let d = tree();
            let before = snapshot(d.path());
            let patch = envelope(&hunks.concat());
            match apply_with(d.path(), &patch, &AtomicBool::new(false), Faults::NONE) {
                Ok(_) => {}
                Err(e) => {
                    prop_assert_eq!(e.outcome, Outcome::NoChange);
                    prop_assert_eq!(snapshot(d.path()), before, "{}", e);
                }
            }
            for k in snapshot(d.path()).keys() {
                prop_assert!(!k.contains(".pct-patch-"));
            }
        }
    }
}

// ---- parser fuzz target: PCT_FUZZ_ITERS generated inputs (default 20,000; 1,000,000 documented) ----

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "*** Begin Patch",
    "*** End Patch",
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
    "*** End of File",
    "@@",
    "@@ ",
    "+",
    "-",
    " ",
    "",
    "  ",
    "\t",
    "*",
    "***",
    "a.txt",
    "dir/b.rs",
    "../x",
    "/abs",
    "C:",
    "\u{2014}",
    "\u{201C}",
    "\u{00A0}",
    "é",
    "\r",
    "\0",
    "fn main() {",
    "}",
    "x",
    "@@ fn main() {",
    "\\",
    ".",
    "//",
];

const TEXTS_F: &[&str] = &[
    "fn main() {",
    "x",
    "}",
    "",
    "  x  ",
    "\u{201C}x\u{201D}",
    "a\u{2014}b",
    "*** nope",
    "@@",
];
const PATHS_F: &[&str] = &[
    "a.txt", "dir/b.rs", "../x", "/abs", "C:/w", "", " ", "./c", "d/", "\u{e9}",
];

fn pick<'a>(rng: &mut XorShift, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len())]
}

/// A mostly well-formed patch (every hunk kind, leniencies), optionally mutated line-wise afterwards.
fn structured_patch(rng: &mut XorShift) -> String {
    let pad = |rng: &mut XorShift| if rng.below(6) == 0 { "  " } else { "" };
    let mut lines: Vec<String> = vec!["*** Begin Patch".into()];
    for _ in 0..1 + rng.below(4) {
        let (a, b) = (pad(rng), pad(rng));
        let path = pick(rng, PATHS_F);
        match rng.below(3) {
            0 => {
                lines.push(format!("{a}*** Add File: {path}{b}"));
                for _ in 0..1 + rng.below(3) {
                    lines.push(format!("+{}", pick(rng, TEXTS_F)));
                }
            }
            1 => lines.push(format!("{a}*** Delete File: {path}{b}")),
            _ => {
                lines.push(format!("{a}*** Update File: {path}{b}"));
                if rng.below(3) == 0 {
                    lines.push(format!("*** Move to: {}", pick(rng, PATHS_F)));
                }
                for c in 0..1 + rng.below(3) {
                    match rng.below(3) {
                        0 if c == 0 => {}
                        1 => lines.push("@@".into()),
                        _ => lines.push(format!("@@ {}", pick(rng, TEXTS_F))),
                    }
                    for _ in 0..1 + rng.below(4) {
                        let prefix = pick(rng, &[" ", "+", "-", ""]);
                        lines.push(format!(
                            "{prefix}{}",
                            if prefix.is_empty() { "" } else { pick(rng, TEXTS_F) }
                        ));
                    }
                    if rng.below(5) == 0 {
                        lines.push("*** End of File".into());
                    }
                }
            }
        }
    }
    lines.push("*** End Patch".into());
    let mutations = if rng.below(2) == 0 { 0 } else { 1 + rng.below(2) };
    for _ in 0..mutations {
        let i = rng.below(lines.len());
        match rng.below(3) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            _ => lines.insert(i, pick(rng, FRAGMENTS).to_string()),
        }
        if lines.is_empty() {
            break;
        }
    }
    let mut s = lines.join("\n");
    if rng.below(2) == 0 {
        s.push('\n');
    }
    s
}

fn fuzz_input(rng: &mut XorShift) -> String {
    match rng.below(5) {
        // Random bytes, lossily decoded.
        0 => {
            let n = rng.below(200);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        // Random lines built from fragments, usually inside a valid envelope.
        1 => {
            let mut s = String::new();
            if rng.below(10) != 0 {
                s.push_str("*** Begin Patch\n");
            }
            for _ in 0..rng.below(24) {
                for _ in 0..1 + rng.below(3) {
                    s.push_str(FRAGMENTS[rng.below(FRAGMENTS.len())]);
                }
                s.push('\n');
            }
            if rng.below(10) != 0 {
                s.push_str("*** End Patch");
                if rng.below(2) == 0 {
                    s.push('\n');
                }
            }
            s
        }
        // Well-formed patches with line mutations: reach the deep parser states.
        _ => structured_patch(rng),
    }
}

#[test]
fn parser_fuzz_never_panics() {
    let iters: u64 = std::env::var("PCT_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("PCT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut rng = XorShift(seed | 1);
    let file: Vec<&str> = vec!["fn main() {", "x", "}", "", "x", "a.txt", "  x  ", "\u{201C}x\u{201D}"];
    let cwd = Path::new("/ws");
    let started = std::time::Instant::now();
    let (mut parsed_ok, mut planned) = (0u64, 0u64);
    for _ in 0..iters {
        let input = fuzz_input(&mut rng);
        if let Ok(p) = parser::parse(&input) {
            parsed_ok += 1;
            let _ = touched_paths(cwd, &input);
            for h in &p.hunks {
                if let parser::Hunk::Update { chunks, .. } = h {
                    if let Ok(edits) = matcher::plan("f", &file, chunks) {
                        planned += 1;
                        let _ = matcher::apply_edits(&file, &edits);
                    }
                }
            }
        }
    }
    eprintln!(
        "parser fuzz: {iters} inputs, {parsed_ok} parsed, {planned} updates planned, {:.1}s",
        started.elapsed().as_secs_f64()
    );
    // The generator must keep reaching the deep states (a quarter of the inputs parse at least).
    assert!(
        iters < 1000 || parsed_ok * 4 > iters,
        "only {parsed_ok} of {iters} inputs parsed"
    );
}

// ---- Size limits, containment under a symlink swap, in-place updates, recovery, smaller fixes ----

/// Runs `f` with lowered size limits (per file, per patch) on this thread.
fn with_limits<T>(source: u64, total: u64, f: impl FnOnce() -> T) -> T {
    preflight::TEST_LIMITS.with(|c| c.set(Some(preflight::Limits { source, total })));
    let out = f();
    preflight::TEST_LIMITS.with(|c| c.set(None));
    out
}

#[test]
fn sources_over_the_size_limits_are_refused_before_reading() {
    let d = ws();
    let r = d.path();
    put(r, "at.txt", &b"x\n".repeat(50)); // 100 bytes: exactly the per-file limit
    put(r, "over.txt", &b"x\n".repeat(50));
    fs::OpenOptions::new()
        .append(true)
        .open(r.join("over.txt"))
        .unwrap()
        .write_all(b"y")
        .unwrap(); // 101
    put(r, "b.txt", &b"x\n".repeat(40)); // 80 bytes
    let before = snapshot(r);
    with_limits(100, 180, || {
        let e = apply_with(
            r,
            &envelope("*** Update File: over.txt\n@@\n-y\n+z\n"),
            &AtomicBool::new(false),
            Faults::NONE,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "apply_patch failed (no-change): source too large: 'over.txt' is 101 bytes; the limit is 100 bytes (0 MiB). Edit it with a shell tool instead, or split the patch"
        );
        assert_eq!(e.code, "source-too-large");
        assert_eq!(snapshot(r), before);
        // 100 + 80 = 180 bytes in one patch is at both limits: applied.
        ok(r, "*** Update File: at.txt\n@@\n+z\n*** Update File: b.txt\n@@\n+z\n");
        put(r, "at.txt", &b"x\n".repeat(50));
        put(r, "b.txt", &b"x\n".repeat(40));
        put(r, "c.txt", b"x\n");
        let before = snapshot(r);
        let e = apply_with(
            r,
            &envelope(
                "*** Update File: at.txt\n@@\n+z\n*** Update File: b.txt\n@@\n+z\n*** Update File: c.txt\n-x\n+z\n",
            ),
            &AtomicBool::new(false),
            Faults::NONE,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "apply_patch failed (no-change): source too large: 'c.txt' brings the sources this patch reads to 182 bytes; the limit is 180 bytes (0 MiB). Edit it with a shell tool instead, or split the patch"
        );
        assert_eq!(snapshot(r), before);
    });
    // The real limit, from metadata: a sparse file one byte over 128 MiB is refused without being read.
    let f = fs::File::create(r.join("huge.txt")).unwrap();
    f.set_len(preflight::MAX_SOURCE_BYTES + 1).unwrap();
    let e = apply_with(
        r,
        &envelope("*** Update File: huge.txt\n-x\n+y\n"),
        &AtomicBool::new(false),
        Faults::NONE,
    )
    .unwrap_err();
    assert_eq!(e.code, "source-too-large");
    assert!(e.reason.contains("the limit is 134217728 bytes (128 MiB)"), "{e}");
}

#[test]
fn delete_reads_no_content() {
    let d = ws();
    let r = d.path();
    put(r, "bin.dat", b"\x00\xff\xfe");
    let f = fs::File::create(r.join("huge.bin")).unwrap();
    f.set_len(4 * preflight::MAX_SOURCE_BYTES).unwrap(); // sparse, 512 MiB
    with_limits(1, 1, || ok(r, "*** Delete File: bin.dat\n*** Delete File: huge.bin\n"));
    assert!(!r.join("bin.dat").exists());
    assert!(!r.join("huge.bin").exists());
}

#[test]
fn pure_move_is_a_rename() {
    let d = ws();
    let r = d.path();
    put(r, "a/bin.dat", b"\x00\xff binary stays as it is");
    let ino = fs::metadata(r.join("a/bin.dat")).unwrap().ino();
    let applied = ok(r, "*** Update File: a/bin.dat\n*** Move to: b/c/moved.dat\n");
    assert_eq!(applied.text(), "Applied patch:\n- move a/bin.dat -> b/c/moved.dat");
    assert!(!r.join("a/bin.dat").exists());
    assert_eq!(read(r, "b/c/moved.dat"), b"\x00\xff binary stays as it is");
    assert_eq!(fs::metadata(r.join("b/c/moved.dat")).unwrap().ino(), ino);
    // Without a Move, an Update still needs a chunk.
    assert_eq!(
        refused(r, "*** Update File: b/c/moved.dat\n"),
        "apply_patch failed (no-change): invalid hunk at line 2, Update file hunk for path 'b/c/moved.dat' is empty"
    );
}

#[test]
fn update_keeps_inode_hard_links_owner_and_xattrs() {
    use std::os::unix::fs::MetadataExt as _;
    let d = ws();
    let r = d.path();
    put(r, "f.txt", b"one\ntwo\n");
    fs::hard_link(r.join("f.txt"), r.join("link.txt")).unwrap();
    let before = fs::metadata(r.join("f.txt")).unwrap();
    let c = std::ffi::CString::new(r.join("f.txt").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid path and buffers.
    let xattr = unsafe { libc::setxattr(c.as_ptr(), c"user.pct".as_ptr(), b"kept".as_ptr().cast(), 4, 0) } == 0;
    // As root: give the file to another user, as in the issue (an update must not make it root's).
    let owned = unsafe { libc::chown(c.as_ptr(), 4242, 4343) } == 0;
    ok(r, "*** Update File: f.txt\n one\n-two\n+TWO\n+three\n");
    ok(r, "*** Update File: f.txt\n-TWO\n-three\n+2\n"); // shrinks: truncated in place
    let after = fs::metadata(r.join("f.txt")).unwrap();
    assert_eq!(
        (after.dev(), after.ino(), after.nlink()),
        (before.dev(), before.ino(), 2)
    );
    assert_eq!(read(r, "link.txt"), b"one\n2\n");
    assert_eq!(after.mode(), before.mode());
    if owned {
        assert_eq!((after.uid(), after.gid()), (4242, 4343));
    }
    if xattr {
        let mut buf = [0u8; 16];
        // SAFETY: valid path and buffer.
        let n = unsafe { libc::getxattr(c.as_ptr(), c"user.pct".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        assert_eq!(&buf[..n.max(0) as usize], b"kept");
    }
    assert!(
        owned || xattr || unsafe { libc::geteuid() } != 0,
        "neither chown nor xattrs could be exercised"
    );
}

#[test]
fn a_folder_swapped_for_a_symlink_after_preflight_is_not_followed() {
    let d = ws();
    let outside = ws();
    let r = d.path().to_path_buf();
    put(&r, "sub/f.txt", b"inside\n");
    put(outside.path(), "f.txt", b"inside\n");
    let out_before = snapshot(outside.path());
    for body in [
        "*** Update File: sub/f.txt\n-inside\n+changed\n",
        "*** Add File: sub/new.txt\n+x\n",
        "*** Delete File: sub/f.txt\n",
        "*** Update File: sub/f.txt\n*** Move to: moved.txt\n",
        "*** Add File: sub/deeper/new.txt\n+x\n",
    ] {
        // Restore the real folder, then swap it for the symlink right before the commit.
        let _ = fs::remove_file(r.join("sub"));
        if r.join("real-sub").exists() {
            fs::rename(r.join("real-sub"), r.join("sub")).unwrap();
        }
        let (rr, op) = (r.clone(), outside.path().to_path_buf());
        commit::BEFORE_COMMIT.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                fs::rename(rr.join("sub"), rr.join("real-sub")).unwrap();
                symlink(&op, rr.join("sub")).unwrap();
            }))
        });
        let e = apply_with(&r, &envelope(body), &AtomicBool::new(false), Faults::NONE);
        commit::BEFORE_COMMIT.with(|h| *h.borrow_mut() = None);
        let e = e.unwrap_err();
        // Nothing was applied; an Add's temp file staged in the real folder before the swap is reported.
        assert!(
            e.to_string().contains("committed: none") || e.outcome == Outcome::NoChange,
            "{body}: {e}"
        );
        assert!(
            e.to_string().contains("(ELOOP)") || e.to_string().contains("(EXDEV)"),
            "{body}: {e}"
        );
        assert_eq!(snapshot(outside.path()), out_before, "{body}: wrote outside: {e}");
        assert_eq!(read(&r, "real-sub/f.txt"), b"inside\n", "{body}");
    }
}

#[test]
fn symlink_swap_race_never_writes_outside() {
    // A loop swaps the workspace folder `sub` with a symlink to an outside folder (RENAME_EXCHANGE) for a few
    // seconds while patches run; nothing may ever land outside. Bounded: stops after 3 s.
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    let d = ws();
    let outside = ws();
    let r = d.path().to_path_buf();
    put(&r, "sub/f.txt", b"0\n");
    put(outside.path(), "f.txt", b"0\n");
    symlink(outside.path(), r.join("swap")).unwrap();
    let out_before = snapshot(outside.path());
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, r) = (stop.clone(), swaps.clone(), r.clone());
        std::thread::spawn(move || {
            let a = std::ffi::CString::new(r.join("sub").into_os_string().into_encoded_bytes()).unwrap();
            let b = std::ffi::CString::new(r.join("swap").into_os_string().into_encoded_bytes()).unwrap();
            while !stop.load(Ordering::SeqCst) {
                // SAFETY: valid paths.
                unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // At least 3 s and 200 patches (other tests hold the process lock at times), at most 20 s.
    let start = std::time::Instant::now();
    let (mut applied, mut refused_n, mut i) = (0, 0, 0u64);
    while (start.elapsed().as_secs() < 3 || applied + refused_n < 200) && start.elapsed().as_secs() < 20 {
        i += 1;
        let body = format!(
            "*** Add File: sub/n{i}.txt\n+x\n*** Update File: sub/f.txt\n@@\n-{}\n+{}\n",
            applied_value(&r),
            i
        );
        match apply_with(&r, &envelope(&body), &AtomicBool::new(false), Faults::NONE) {
            Ok(_) => applied += 1,
            Err(_) => refused_n += 1,
        }
    }
    stop.store(true, Ordering::SeqCst);
    swapper.join().unwrap();
    eprintln!(
        "symlink swap race: {applied} applied, {refused_n} refused, {} swaps",
        swaps.load(Ordering::Relaxed)
    );
    assert_eq!(
        snapshot(outside.path()),
        out_before,
        "a patch wrote outside the workspace"
    );
    assert!(
        applied > 0,
        "no patch got through: the race did not exercise the commit"
    );
}

/// The current content line of `sub/f.txt` wherever the real folder is at the moment (`sub` or `swap`).
fn applied_value(r: &Path) -> String {
    for dir in ["sub", "swap"] {
        let p = r.join(dir);
        if fs::symlink_metadata(&p).map(|m| m.is_dir()).unwrap_or(false) {
            if let Ok(s) = fs::read_to_string(p.join("f.txt")) {
                return s.trim().to_string();
            }
        }
    }
    "0".to_string()
}

#[test]
fn a_file_changed_after_preflight_is_left_as_it_is() {
    let d = ws();
    let r = d.path().to_path_buf();
    put(&r, "a.txt", b"a\n");
    put(&r, "b.txt", b"b\n");
    let rr = r.clone();
    commit::BEFORE_COMMIT.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || {
            fs::write(rr.join("b.txt"), b"someone else\n").unwrap();
        }))
    });
    let e = apply_with(
        &r,
        &envelope("*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b\n+B\n"),
        &AtomicBool::new(false),
        Faults::NONE,
    )
    .unwrap_err();
    commit::BEFORE_COMMIT.with(|h| *h.borrow_mut() = None);
    assert_eq!(
        e.to_string(),
        "apply_patch failed (partial); committed: update a.txt; reread: none; 'b.txt' was changed by another program after this patch read it and was left as it is. Re-read it and send the rest of the patch again"
    );
    assert_eq!(e.code, "source-changed");
    assert_eq!(read(&r, "b.txt"), b"someone else\n");
    assert_eq!(read(&r, "a.txt"), b"A\n");
    assert_no_temp_files(&r);
}

#[test]
fn folders_created_for_a_failed_step_are_removed() {
    let d = ws();
    let r = d.path();
    let before = snapshot(r);
    // Steps: mkdir new/deep (1), rename into it (2) fails.
    let e = faulty(
        r,
        "*** Add File: new/deep/a.txt\n+a\n",
        Faults {
            commit_at: Some(2),
            errno: libc::EIO,
            ..Faults::NONE
        },
    );
    assert_eq!(
        e.to_string(),
        "apply_patch failed (no-change): filesystem commit failed (EIO) at 'new/deep/a.txt'; nothing was changed"
    );
    assert_eq!(snapshot(r), before);
    // A folder a committed operation lives in stays.
    let e = faulty(
        r,
        "*** Add File: new/a.txt\n+a\n*** Add File: new/b/c.txt\n+c\n",
        Faults {
            commit_at: Some(4),
            errno: libc::EIO,
            ..Faults::NONE
        },
    );
    assert_eq!(e.outcome, Outcome::Partial);
    assert!(r.join("new/a.txt").exists());
    assert!(!r.join("new/b").exists());
}

#[test]
fn a_temp_file_that_cannot_be_removed_is_reported() {
    let d = ws();
    let r = d.path();
    let faults = Faults {
        commit_at: Some(1),
        cleanup_at: Some(1),
        errno: libc::EIO,
        ..Faults::NONE
    };
    let e = apply_with(
        r,
        &envelope("*** Add File: a.txt\n+a\n"),
        &AtomicBool::new(false),
        faults,
    )
    .unwrap_err();
    let left: Vec<String> = fs::read_dir(r)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".pct-patch-") && n.ends_with(".tmp"))
        .collect();
    assert_eq!(left.len(), 1);
    assert_eq!(
        e.to_string(),
        format!(
            "apply_patch failed (partial); committed: none; reread: none; filesystem commit failed (EIO); left behind (delete them): {}",
            left[0]
        )
    );
}

#[test]
fn a_path_longer_than_path_max_is_refused_in_preflight() {
    let d = ws();
    let r = d.path();
    let before = snapshot(r);
    let long = "d/".repeat(2100) + "f.txt";
    let e = refused(r, &format!("*** Add File: {long}\n+x\n"));
    assert!(e.starts_with("apply_patch failed (no-change): path too long: '"), "{e}");
    assert_eq!(snapshot(r), before);
}

#[test]
fn an_interrupted_rewrite_is_put_back_by_the_next_patch() {
    let d = ws();
    let r = d.path();
    put(r, "a.txt", b"old line one\nold line two\n");
    put(r, "b.txt", b"b new\n"); // finished before the crash
    put(r, "c.txt", b"c changed by the user since\n");
    put(r, "real/d.txt", b"d old\n");
    // An Add's staged temp file the crashed patch never renamed, and a user file the journal names (never ours).
    put(r, "sub/.pct-patch-crashed-1.tmp", b"staged\n");
    put(r, "sub/keep.tmp", b"mine\n");
    symlink(r.join("real"), r.join("d")).unwrap(); // d/d.txt now goes through a symlink: never followed
    {
        let mut root = beneath::Root::open(r).unwrap();
        let entries = [
            journal::Entry {
                rel: "a.txt",
                old: b"old line one\nold line two\n",
                new: b"NEW\n",
            },
            journal::Entry {
                rel: "b.txt",
                old: b"b old\n",
                new: b"b new\n",
            },
            journal::Entry {
                rel: "c.txt",
                old: b"c old\n",
                new: b"c new\n",
            },
            journal::Entry {
                rel: "d/d.txt",
                old: b"d old\n",
                new: b"d new\n",
            },
        ];
        // The journal is written, then the process "dies" (its handle and lock go away, the file stays) while
        // a.txt is half rewritten: NEW\n over the start, the old tail still there.
        let j = journal::write(
            &mut root,
            "crashed",
            &["sub/.pct-patch-crashed-1.tmp", "sub/keep.tmp"],
            &entries,
        )
        .unwrap()
        .unwrap();
        std::mem::drop(j);
    }
    fs::write(r.join("a.txt"), b"NEW\nline one\nold line two\n").unwrap();
    let e = apply_with(
        r,
        &envelope("*** Add File: z.txt\n+z\n"),
        &AtomicBool::new(false),
        Faults::NONE,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "apply_patch failed (no-change): an earlier apply_patch was interrupted while writing; restored to their content before it: a.txt; changed since and left as they are: c.txt, d/d.txt. Nothing of this patch was applied: re-read these files, then send it again"
    );
    assert_eq!(read(r, "a.txt"), b"old line one\nold line two\n");
    assert_eq!(read(r, "b.txt"), b"b new\n");
    assert_eq!(read(r, "c.txt"), b"c changed by the user since\n");
    assert_eq!(read(r, "real/d.txt"), b"d old\n");
    assert!(!r.join("sub/.pct-patch-crashed-1.tmp").exists());
    assert_eq!(read(r, "sub/keep.tmp"), b"mine\n");
    assert!(!r.join(".pct-patch-crashed.journal").exists());
    ok(r, "*** Add File: z.txt\n+z\n");
}

#[test]
fn a_user_file_named_like_a_journal_is_kept() {
    let d = ws();
    let r = d.path();
    put(r, ".pct-patch-mine.journal", b"my notes\n");
    apply_with(
        r,
        &envelope("*** Add File: z.txt\n+z\n"),
        &AtomicBool::new(false),
        Faults::NONE,
    )
    .unwrap();
    assert_eq!(read(r, ".pct-patch-mine.journal"), b"my notes\n");
}

#[test]
fn a_live_journal_of_another_patch_is_not_touched() {
    let d = ws();
    let r = d.path();
    put(r, "a.txt", b"NEWold\n");
    let mut root = beneath::Root::open(r).unwrap();
    let j = journal::write(
        &mut root,
        "live",
        &[],
        &[journal::Entry {
            rel: "a.txt",
            old: b"old\n",
            new: b"NEW\n",
        }],
    )
    .unwrap()
    .unwrap();
    // Held (locked) by "another patch": recovery must leave it and its file alone.
    apply_with(
        r,
        &envelope("*** Add File: z.txt\n+z\n"),
        &AtomicBool::new(false),
        Faults::NONE,
    )
    .unwrap();
    assert_eq!(read(r, "a.txt"), b"NEWold\n");
    assert!(r.join(".pct-patch-live.journal").exists());
    assert!(j.finish(&mut root).is_none());
}
