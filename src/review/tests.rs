//! Review end to end on temp folders: apply_patch records, the rollback guard, created/deleted/moved files, the
//! snapshot bound, pruning and ordering (docs/review.md "Tests").

use super::rollback::{rollback, Which};
use super::store::{Change, Operation, State, Status, Store};
use super::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

struct Env {
    _t: tempfile::TempDir,
    agent: PathBuf,
    ws: PathBuf,
}

fn env() -> Env {
    let t = tempfile::tempdir().unwrap();
    let agent = t.path().join("agent");
    let ws = t.path().join("work");
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&ws).unwrap();
    let ws = fs::canonicalize(ws).unwrap();
    Env { _t: t, agent, ws }
}

fn target(e: &Env, sid: &str) -> Target {
    Target {
        agent_dir: e.agent.clone(),
        session_id: sid.into(),
        message_id: Some("msg-1".into()),
        session_file: None,
        tool: "apply_patch".into(),
    }
}

fn patch(e: &Env, sid: &str, body: &str) -> Result<crate::patch::Applied, crate::patch::PatchError> {
    let text = format!("*** Begin Patch\n{body}\n*** End Patch");
    crate::patch::apply_reviewed(&e.ws, &text, &AtomicBool::new(false), Some(&target(e, sid)))
}

fn changes(e: &Env, sid: &str) -> Vec<Change> {
    Store::of(&e.agent, sid).unwrap().load().unwrap()
}

/// Every file under the workspace with its bytes (for byte-for-byte comparisons).
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(root).unwrap().display().to_string(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn put(e: &Env, rel: &str, bytes: &[u8]) {
    let p = e.ws.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
}

#[test]
fn add_update_delete_move_are_recorded_and_all_roll_back_byte_for_byte() {
    let e = env();
    put(&e, "src/app.js", b"a\nb\nc\n");
    put(&e, "gone.txt", b"bye\r\n");
    put(&e, "old/name.md", b"# T\nbody\n");
    put(&e, "keep.bin", b"\0\x01binary");
    let before = tree(&e.ws);
    patch(
        &e,
        "s1",
        "*** Add File: notes/new.md\n+hello\n*** Update File: src/app.js\n@@\n a\n-b\n+B\n+B2\n*** Delete File: gone.txt\n*** Update File: old/name.md\n*** Move to: new/deeper/name.md\n@@\n # T\n-body\n+moved",
    )
    .unwrap();
    let cs = changes(&e, "s1");
    let rows: Vec<_> = cs
        .iter()
        .map(|c| {
            (
                c.path.as_str(),
                c.operation,
                c.status,
                c.additions,
                c.deletions,
                c.hunks,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("notes/new.md", Operation::Write, Status::Added, 1, 0, 1),
            ("src/app.js", Operation::Edit, Status::Modified, 2, 1, 1),
            ("gone.txt", Operation::Delete, Status::Deleted, 0, 1, 1),
            ("old/name.md", Operation::Delete, Status::Deleted, 0, 0, 0),
            ("new/deeper/name.md", Operation::Edit, Status::Added, 1, 1, 1),
        ]
    );
    assert!(cs
        .iter()
        .all(|c| c.version == 1 && c.state == State::Active && c.reversible));
    assert_eq!(cs[3].group, cs[4].group);
    assert!(cs[3].group.is_some() && cs[0].group.is_none());
    assert_eq!(cs[0].message_id.as_deref(), Some("msg-1"));
    assert_eq!(
        cs[1].after_hash.as_deref(),
        Some(record::sha256_hex(b"a\nB\nB2\nc\n").as_str())
    );
    // The store is private: folders 0700, files 0600.
    use std::os::unix::fs::PermissionsExt;
    let dir = Store::of(&e.agent, "s1").unwrap().dir().to_path_buf();
    assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(
        fs::metadata(dir.join("index.jsonl")).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The patch's snapshots are one pack (src/review/store.rs): every change that keeps bytes names it.
    let packed: Vec<&Change> = cs.iter().filter(|c| c.has_snapshot()).collect();
    assert_eq!(
        packed.len(),
        3,
        "the Update, the Delete and the Move's source keep their bytes before"
    );
    assert!(packed.iter().all(|c| c.pack.is_some() && c.pack == packed[0].pack));
    assert_eq!(
        fs::read_dir(dir.join("snapshots")).unwrap().count(),
        1,
        "one file for the whole patch"
    );
    let snap = dir.join("snapshots").join(packed[0].pack.as_deref().unwrap());
    assert_eq!(fs::read(&snap).unwrap(), b"a\nb\nc\nbye\r\n# T\nbody\n");
    assert_eq!(fs::metadata(&snap).unwrap().permissions().mode() & 0o777, 0o600);
    let store = Store::of(&e.agent, "s1").unwrap();
    assert_eq!(store.read_before(&cs[1]).unwrap(), b"a\nb\nc\n");
    assert_eq!(store.read_before(&cs[2]).unwrap(), b"bye\r\n");

    let r = rollback(&e.agent, "s1", Which::All).unwrap();
    assert_eq!(r.rolled_back.len(), 5);
    assert!(r.stopped.is_none());
    assert_eq!(tree(&e.ws), before, "the tree is back byte for byte");
    assert!(
        !e.ws.join("notes").exists() && !e.ws.join("new").exists(),
        "folders the patch created are gone"
    );
    assert!(e.ws.join("old").is_dir());
    assert!(changes(&e, "s1").iter().all(|c| c.state == State::RolledBack));
    // Nothing left to roll back.
    assert!(rollback(&e.agent, "s1", Which::All).unwrap().rolled_back.is_empty());
}

#[test]
fn a_later_external_edit_is_a_conflict_and_nothing_is_touched() {
    let e = env();
    put(&e, "a.txt", b"one\n");
    put(&e, "b.txt", b"two\n");
    patch(
        &e,
        "s1",
        "*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-two\n+TWO",
    )
    .unwrap();
    fs::write(e.ws.join("b.txt"), b"TWO\nexternal\n").unwrap();
    let snapshot = tree(&e.ws);
    let err = rollback(&e.agent, "s1", Which::All).unwrap_err();
    assert_eq!(err.code, "conflict");
    assert!(
        err.message.contains("'b.txt' was changed by someone else"),
        "{}",
        err.message
    );
    assert_eq!(tree(&e.ws), snapshot, "a conflict touches nothing, not even a.txt");
    assert!(changes(&e, "s1").iter().all(|c| c.state == State::Active));
    // One by one: b conflicts, a rolls back alone.
    assert_eq!(rollback(&e.agent, "s1", Which::One("2")).unwrap_err().code, "conflict");
    rollback(&e.agent, "s1", Which::One("1")).unwrap();
    assert_eq!(fs::read(e.ws.join("a.txt")).unwrap(), b"one\n");
    assert_eq!(fs::read(e.ws.join("b.txt")).unwrap(), b"TWO\nexternal\n");
    assert_eq!(
        rollback(&e.agent, "s1", Which::One("1")).unwrap_err().code,
        "already-rolled-back"
    );
    assert_eq!(rollback(&e.agent, "s1", Which::One("9")).unwrap_err().code, "not-found");
}

#[test]
fn a_created_file_rollback_deletes_it_and_a_deleted_file_comes_back_with_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let e = env();
    put(&e, "run.sh", b"#!/bin/sh\necho hi\n");
    fs::set_permissions(e.ws.join("run.sh"), fs::Permissions::from_mode(0o751)).unwrap();
    patch(&e, "s1", "*** Add File: made/new.txt\n+x").unwrap();
    patch(&e, "s1", "*** Delete File: run.sh").unwrap();
    assert!(!e.ws.join("run.sh").exists());
    rollback(&e.agent, "s1", Which::One("2")).unwrap();
    assert_eq!(fs::read(e.ws.join("run.sh")).unwrap(), b"#!/bin/sh\necho hi\n");
    assert_eq!(
        fs::metadata(e.ws.join("run.sh")).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    let id = changes(&e, "s1")[0].snapshot_id.clone();
    rollback(&e.agent, "s1", Which::One(&id)).unwrap();
    assert!(!e.ws.join("made/new.txt").exists());
    // A deleted file whose path was taken again is a conflict.
    patch(&e, "s1", "*** Delete File: run.sh").unwrap();
    put(&e, "run.sh", b"someone else\n");
    assert_eq!(rollback(&e.agent, "s1", Which::One("3")).unwrap_err().code, "conflict");
    assert_eq!(fs::read(e.ws.join("run.sh")).unwrap(), b"someone else\n");
}

#[test]
fn a_move_rolls_back_as_a_pair_keeping_the_inode() {
    use std::os::unix::fs::MetadataExt;
    let e = env();
    put(&e, "a/pure.txt", b"same\n");
    let ino = fs::metadata(e.ws.join("a/pure.txt")).unwrap().ino();
    patch(&e, "s1", "*** Update File: a/pure.txt\n*** Move to: b/pure.txt").unwrap();
    let cs = changes(&e, "s1");
    assert_eq!(cs.len(), 2);
    assert_eq!((cs[0].status, cs[1].status), (Status::Deleted, Status::Added));
    assert_eq!((cs[1].additions, cs[1].deletions), (0, 0));
    // Rolling back either entry takes its partner along.
    let r = rollback(&e.agent, "s1", Which::One("2")).unwrap();
    assert_eq!(r.rolled_back.len(), 2);
    assert_eq!(fs::read(e.ws.join("a/pure.txt")).unwrap(), b"same\n");
    assert_eq!(fs::metadata(e.ws.join("a/pure.txt")).unwrap().ino(), ino);
    assert!(!e.ws.join("b/pure.txt").exists());
    // A moved file edited afterwards by someone else: the pair is refused together.
    patch(
        &e,
        "s1",
        "*** Update File: a/pure.txt\n*** Move to: c/p.txt\n@@\n-same\n+changed",
    )
    .unwrap();
    fs::write(e.ws.join("c/p.txt"), b"changed\nmore\n").unwrap();
    assert_eq!(rollback(&e.agent, "s1", Which::One("3")).unwrap_err().code, "conflict");
    assert!(!e.ws.join("a/pure.txt").exists());
}

#[test]
fn snapshots_are_bounded_at_16_mib() {
    let e = env();
    let at = vec![b'x'; MAX_SNAPSHOT_BYTES as usize];
    let over = vec![b'y'; MAX_SNAPSHOT_BYTES as usize + 1];
    put(&e, "at.bin", &at);
    put(&e, "over.bin", &over);
    patch(&e, "s1", "*** Delete File: at.bin\n*** Delete File: over.bin").unwrap();
    let cs = changes(&e, "s1");
    assert_eq!((cs[0].reversible, cs[0].truncated), (true, None));
    assert_eq!((cs[1].reversible, cs[1].truncated), (false, Some(true)));
    assert_eq!(cs[1].before_bytes, MAX_SNAPSHOT_BYTES + 1);
    let snaps = Store::of(&e.agent, "s1").unwrap().dir().join("snapshots");
    assert_eq!(
        fs::read_dir(&snaps).unwrap().count(),
        1,
        "only the snapshot within the bound is kept"
    );
    assert_eq!(
        rollback(&e.agent, "s1", Which::One("2")).unwrap_err().code,
        "not-reversible"
    );
    rollback(&e.agent, "s1", Which::One("1")).unwrap();
    assert_eq!(fs::read(e.ws.join("at.bin")).unwrap(), at);
    // A snapshot that went missing from the store makes its change not reversible (checked before any step).
    put(&e, "small.txt", b"s\n");
    patch(&e, "s1", "*** Delete File: small.txt").unwrap();
    let id = changes(&e, "s1")[2].snapshot_id.clone();
    fs::remove_file(snaps.join(&id)).unwrap();
    let err = rollback(&e.agent, "s1", Which::One("3")).unwrap_err();
    assert_eq!(err.code, "not-reversible");
    assert!(err.message.contains("'small.txt'"), "{}", err.message);
    assert!(!e.ws.join("small.txt").exists());
}

#[test]
fn a_failed_patch_records_nothing_and_a_partial_one_keeps_what_took_effect() {
    let e = env();
    put(&e, "a.txt", b"a\n");
    assert!(patch(&e, "s1", "*** Update File: a.txt\n@@\n-nope\n+x").is_err());
    assert!(changes(&e, "s1").is_empty());
    // Second commit step fails: the Add took effect, the Update did not.
    let text = "*** Begin Patch\n*** Add File: n.txt\n+n\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch";
    let faults = crate::patch::Faults::parse("commit:2:28");
    let err = crate::patch::apply_inner(&e.ws, text, &AtomicBool::new(false), faults, Some(&target(&e, "s1")));
    assert!(err.is_err());
    let cs = changes(&e, "s1");
    assert_eq!(cs.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["n.txt"]);
    let snaps = Store::of(&e.agent, "s1").unwrap().dir().join("snapshots");
    assert_eq!(
        fs::read_dir(&snaps).unwrap().count(),
        0,
        "the dropped Update's snapshot is gone"
    );
}

#[test]
fn sweep_removes_dead_sessions_and_prunes_the_oldest_over_the_cap() {
    let e = env();
    let alive_file = e.agent.join("alive.jsonl");
    fs::write(&alive_file, "").unwrap();
    for (sid, file) in [
        ("dead", Some("/nonexistent/x.jsonl")),
        ("alive", Some(alive_file.to_str().unwrap())),
    ] {
        let mut t = target(&e, sid);
        t.session_file = file.map(String::from);
        put(&e, &format!("{sid}.txt"), &vec![b'z'; 1000]);
        let text = format!("*** Begin Patch\n*** Delete File: {sid}.txt\n*** End Patch");
        crate::patch::apply_reviewed(&e.ws, &text, &AtomicBool::new(false), Some(&t)).unwrap();
    }
    // An in-memory session: kept while fresh, removed once idle for a day.
    put(&e, "mem.txt", b"m\n");
    patch(&e, "mem", "*** Delete File: mem.txt").unwrap();
    let swept = prune::sweep(&e.agent, Some("cur"), MAX_TOTAL_BYTES, SystemTime::now()).unwrap();
    assert_eq!(swept.removed, ["dead"]);
    let later = SystemTime::now() + prune::EPHEMERAL_IDLE + Duration::from_secs(60);
    let swept = prune::sweep(&e.agent, Some("cur"), MAX_TOTAL_BYTES, later).unwrap();
    assert_eq!(swept.removed, ["mem"]);
    // The cap: the current session stays; other sessions go oldest first.
    let mut cur = target(&e, "cur");
    cur.session_file = Some(alive_file.to_str().unwrap().into());
    for i in 0..3 {
        put(&e, &format!("c{i}.txt"), &vec![b'c'; 4000]);
        let text = format!("*** Begin Patch\n*** Delete File: c{i}.txt\n*** End Patch");
        crate::patch::apply_reviewed(&e.ws, &text, &AtomicBool::new(false), Some(&cur)).unwrap();
    }
    let cur_dir = Store::of(&e.agent, "cur").unwrap().dir().to_path_buf();
    let cur_bytes: u64 = walkdir::WalkDir::new(&cur_dir)
        .into_iter()
        .flatten()
        .filter(|f| f.file_type().is_file())
        .map(|f| f.metadata().unwrap().len())
        .sum();
    // One byte under the current session's size: the other session goes first, then one snapshot is enough.
    let cap = cur_bytes - 1;
    let swept = prune::sweep(&e.agent, Some("cur"), cap, SystemTime::now()).unwrap();
    assert_eq!(swept.removed, ["alive"]);
    assert_eq!(
        swept.dropped_snapshots, 1,
        "the current session alone is over: its oldest snapshot goes"
    );
    assert!(swept.total_bytes <= cap);
    let cs = changes(&e, "cur");
    assert_eq!((cs[0].reversible, cs[0].truncated), (false, Some(true)));
    assert!(cs[1].reversible && cs[2].reversible);
    assert!(prune::remove_session(&e.agent, "cur").unwrap());
    assert!(!Store::of(&e.agent, "cur").unwrap().dir().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_waits_for_its_sessions_mutation_but_not_for_another_session() {
    let e = env();
    let ws = e.ws.clone();
    let t = target(&e, "order-1");
    let run = move |t: Target, name: &'static str| {
        let ws = ws.clone();
        tokio::spawn(async move {
            let _permit = lock::acquire(&t.session_id).await;
            let text = format!("*** Begin Patch\n*** Add File: {name}\n+x\n*** End Patch");
            tokio::task::spawn_blocking(move || {
                crate::patch::apply_reviewed(&ws, &text, &AtomicBool::new(false), Some(&t)).unwrap()
            })
            .await
            .unwrap()
        })
    };
    // A Write of session order-1 is in flight (holds the permit): that session's patch queues behind it.
    let write = lock::acquire("order-1").await;
    let queued = run(t.clone(), "same.txt");
    for _ in 0..500 {
        if lock::users("order-1") == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(lock::users("order-1"), 2, "the patch waits for the session's permit");
    assert!(!e.ws.join("same.txt").exists());
    // Another session is not blocked by it.
    run(target(&e, "order-2"), "other.txt").await.unwrap();
    assert!(e.ws.join("other.txt").exists());
    assert!(!e.ws.join("same.txt").exists());
    drop(write);
    queued.await.unwrap();
    assert!(e.ws.join("same.txt").exists());
}

#[test]
fn a_rollback_invalidates_the_paths_for_the_sessions_subscribers() {
    use parking_lot::Mutex;
    use std::sync::Arc;
    struct Seen(Mutex<Vec<PathBuf>>);
    impl invalidate::Invalidate for Seen {
        fn invalidate(&self, path: &Path) {
            self.0.lock().push(path.to_path_buf());
        }
    }
    let e = env();
    let seen = Arc::new(Seen(Mutex::new(Vec::new())));
    let weak: std::sync::Weak<dyn invalidate::Invalidate> = Arc::downgrade(&seen) as _;
    invalidate::subscribe("inv-1", weak);
    put(&e, "x.txt", b"1\n");
    patch(&e, "inv-1", "*** Update File: x.txt\n@@\n-1\n+2").unwrap();
    let r = rollback(&e.agent, "inv-1", Which::All).unwrap();
    assert_eq!(r.paths, vec![e.ws.join("x.txt")]);
    assert_eq!(*seen.0.lock(), vec![e.ws.join("x.txt")]);
}

#[test]
fn rollback_never_follows_a_folder_swapped_for_a_symlink() {
    let e = env();
    let outside = tempfile::tempdir().unwrap();
    put(&e, "d/f.txt", b"old\n");
    patch(&e, "s1", "*** Update File: d/f.txt\n@@\n-old\n+new").unwrap();
    // Someone replaces the folder with a symlink to an outside folder holding the same file.
    fs::rename(e.ws.join("d"), e.ws.join("d-moved")).unwrap();
    fs::write(outside.path().join("f.txt"), b"new\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), e.ws.join("d")).unwrap();
    let err = rollback(&e.agent, "s1", Which::All).unwrap_err();
    assert_eq!(err.code, "conflict", "{err}");
    assert_eq!(fs::read(outside.path().join("f.txt")).unwrap(), b"new\n");
}

#[test]
fn the_cap_is_also_enforced_during_a_session() {
    let e = env();
    // Another (live) session's store and this session's: a cap below both prunes the other one once enough was
    // recorded since the last sweep.
    let live = e.agent.join("live.jsonl");
    fs::write(&live, "").unwrap();
    let mut other = target(&e, "other");
    other.session_file = Some(live.to_str().unwrap().into());
    put(&e, "o.txt", &vec![b'o'; 5000]);
    let text = "*** Begin Patch\n*** Delete File: o.txt\n*** End Patch";
    crate::patch::apply_reviewed(&e.ws, text, &AtomicBool::new(false), Some(&other)).unwrap();
    put(&e, "m.txt", &[b'm'; 100]);
    let mut me = target(&e, "me");
    me.session_file = Some(live.to_str().unwrap().into());
    let text = "*** Begin Patch\n*** Delete File: m.txt\n*** End Patch";
    crate::patch::apply_reviewed(&e.ws, text, &AtomicBool::new(false), Some(&me)).unwrap();
    assert!(
        prune::note_recorded_with(&e.agent, "me", 10, u64::MAX, 4000).is_none(),
        "below the threshold"
    );
    let swept = prune::note_recorded_with(&e.agent, "me", 10, 1, 4000).expect("a sweep ran");
    assert_eq!(swept.removed, ["other"]);
    assert!(Store::of(&e.agent, "me").unwrap().dir().exists());
}

#[test]
fn a_write_and_an_edit_recorded_through_prepare_one_roll_back() {
    let e = env();
    let mut t = target(&e, "host-1");
    t.tool = "Write".into();
    // Write creates a file in new folders: recorded before the bytes land, with the folders it creates.
    let _permit = lock::acquire_blocking("host-1");
    let rec = record::prepare_one(&t, &e.ws, "made/deep/w.txt", Operation::Write, None, None, Some(b"w\n")).unwrap();
    assert_eq!(record::missing_dirs(&e.ws, "made/deep/w.txt"), ["made", "made/deep"]);
    put(&e, "made/deep/w.txt", b"w\n");
    rec.finish(|_| true).unwrap();
    // Edit of an existing file.
    put(&e, "e.txt", b"a\nb\n");
    t.tool = "Edit".into();
    let rec = record::prepare_one(
        &t,
        &e.ws,
        "e.txt",
        Operation::Edit,
        Some(b"a\nb\n"),
        Some(0o644),
        Some(b"a\nB\n"),
    )
    .unwrap();
    fs::write(e.ws.join("e.txt"), b"a\nB\n").unwrap();
    rec.finish(|_| true).unwrap();
    // A write that did not land leaves no change.
    let rec = record::prepare_one(
        &t,
        &e.ws,
        "e.txt",
        Operation::Edit,
        Some(b"a\nB\n"),
        None,
        Some(b"zzz\n"),
    )
    .unwrap();
    rec.finish(|_| false).unwrap();
    drop(_permit);
    let cs = changes(&e, "host-1");
    assert_eq!(
        cs.iter()
            .map(|c| (c.tool.as_str(), c.status, c.created_dirs.len()))
            .collect::<Vec<_>>(),
        [("Write", Status::Added, 2), ("Edit", Status::Modified, 0)]
    );
    rollback(&e.agent, "host-1", Which::All).unwrap();
    assert_eq!(fs::read(e.ws.join("e.txt")).unwrap(), b"a\nb\n");
    assert!(!e.ws.join("made").exists());
}

#[test]
fn a_writer_racing_the_rollback_keeps_its_bytes() {
    let e = env();
    put(&e, "r.txt", b"before\n");
    patch(&e, "race-1", "*** Update File: r.txt\n@@\n-before\n+after").unwrap();
    // Another program writes the file after the guard passed, right before the bytes are swapped in.
    let path = e.ws.join("r.txt");
    rollback::BEFORE_PUT_BACK.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || fs::write(&path, b"intruder\n").unwrap()));
    });
    let err = rollback(&e.agent, "race-1", Which::All).unwrap_err();
    rollback::BEFORE_PUT_BACK.with(|h| *h.borrow_mut() = None);
    assert_eq!(err.code, "conflict", "{err}");
    assert_eq!(fs::read(e.ws.join("r.txt")).unwrap(), b"intruder\n");
    assert_eq!(tree(&e.ws).len(), 1, "no temp file left behind");
    assert_eq!(changes(&e, "race-1")[0].state, State::Active);
}

#[test]
fn a_forged_index_cannot_reach_outside_the_store_or_the_workspace() {
    let e = env();
    fs::write(e.ws.join("f.txt"), "old\n").unwrap();
    patch(&e, "forge-1", "*** Update File: f.txt\n@@\n-old\n+new").unwrap();
    let store = Store::of(&e.agent, "forge-1").unwrap();
    let real = changes(&e, "forge-1").remove(0);
    // A secret outside the store and a second workspace the forged lines point at.
    let secret = e.agent.join("secret.txt");
    fs::write(&secret, "top secret\n").unwrap();
    let other = e.ws.parent().unwrap().join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("victim.txt"), "victim\n").unwrap();
    let mut forged = Vec::new();
    for (id, path) in [
        ("../../secret.txt", "stolen.txt"),
        ("abc", "../escape.txt"),
        ("abc", "/etc/passwd"),
    ] {
        let mut c = real.clone();
        c.snapshot_id = id.into();
        c.path = path.into();
        forged.push(c);
    }
    let mut relative_ws = real.clone();
    relative_ws.snapshot_id = "rel".into();
    relative_ws.workspace = "work/../other".into();
    forged.push(relative_ws);
    let mut elsewhere = real.clone();
    elsewhere.snapshot_id = "0123456789abcdef0123456789abcdef".into();
    elsewhere.path = "victim.txt".into();
    elsewhere.workspace = other.display().to_string();
    elsewhere.after_hash = Some(crate::digest::sha256_hex(b"victim\n"));
    store.write_snapshot(&elsewhere.snapshot_id, b"overwritten\n").unwrap();
    forged.push(elsewhere.clone());
    store.append(&forged).unwrap();
    // Invalid ids and paths are never loaded: only the real change and the well-formed foreign one remain.
    let loaded = changes(&e, "forge-1");
    assert_eq!(
        loaded.iter().map(|c| c.snapshot_id.as_str()).collect::<Vec<_>>(),
        [real.snapshot_id.as_str(), elsewhere.snapshot_id.as_str()]
    );
    assert!(store.read_snapshot("../../secret.txt").is_err());
    // The foreign workspace's change is refused by number and left alone by "all".
    let ws = e.ws.clone();
    let err = super::rollback::rollback_in(&e.agent, "forge-1", Which::One("2"), Some(&ws)).unwrap_err();
    assert_eq!(err.code, "other-workspace");
    let r = super::rollback::rollback_in(&e.agent, "forge-1", Which::All, Some(&ws)).unwrap();
    assert_eq!(r.rolled_back.len(), 1);
    assert_eq!(fs::read_to_string(e.ws.join("f.txt")).unwrap(), "old\n");
    assert_eq!(fs::read_to_string(other.join("victim.txt")).unwrap(), "victim\n");
    assert!(!e.ws.join("stolen.txt").exists() && !e.ws.parent().unwrap().join("escape.txt").exists());
    assert_eq!(fs::read_to_string(&secret).unwrap(), "top secret\n");
}

#[test]
fn store_files_that_are_links_or_fifos_are_refused_without_blocking() {
    let e = env();
    fs::write(e.ws.join("f.txt"), "old\n").unwrap();
    patch(&e, "links-1", "*** Update File: f.txt\n@@\n-old\n+new").unwrap();
    let store = Store::of(&e.agent, "links-1").unwrap();
    let id = changes(&e, "links-1")[0].snapshot_id.clone();
    // A snapshot hard-linked to another file is not read (rollback cannot copy that file in).
    let snap = store.dir().join("snapshots").join(&id);
    let outside = e.agent.join("outside.txt");
    fs::write(&outside, "outside\n").unwrap();
    fs::remove_file(&snap).unwrap();
    fs::hard_link(&outside, &snap).unwrap();
    assert_eq!(store.read_snapshot(&id).unwrap_err().code, "store-failed");
    // The index as a FIFO: loading fails at once instead of hanging.
    let index = store.dir().join("index.jsonl");
    fs::remove_file(&index).unwrap();
    let c = std::ffi::CString::new(index.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // (A FIFO that were opened for a blocking read would hang here: the test runner's timeout reports it.)
    assert_eq!(store.load().unwrap_err().code, "store-failed");
    // A symlinked review folder is not followed when a new session records.
    let elsewhere = e.agent.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let review = e.agent.join("pi-codex-toolkit").join("review");
    fs::rename(&review, e.agent.join("review-old")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &review).unwrap();
    assert_eq!(
        Store::of(&e.agent, "links-2")
            .unwrap()
            .create(&store::Meta::default())
            .unwrap_err()
            .code,
        "store-failed"
    );
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// Three files of one patch: their snapshots share one pack.
fn packed_patch(e: &Env, sid: &str) -> Vec<Change> {
    for (rel, text) in [("p/a.txt", "a1\n"), ("p/b.txt", "b1\nb2\n"), ("p/c.txt", "c1\n")] {
        put(e, rel, text.as_bytes());
    }
    patch(
        e,
        sid,
        "*** Update File: p/a.txt\n@@\n-a1\n+A\n*** Update File: p/b.txt\n@@\n-b2\n+B\n*** Delete File: p/c.txt",
    )
    .unwrap();
    let cs = changes(e, sid);
    assert!(cs.iter().all(|c| c.pack.is_some() && c.pack == cs[0].pack));
    assert_eq!(
        cs.iter().map(|c| c.pack_offset.unwrap()).collect::<Vec<_>>(),
        [0, 3, 9],
        "the parts follow one another"
    );
    cs
}

#[test]
fn a_pack_part_is_used_only_when_it_hashes_to_the_bytes_before() {
    let e = env();
    let cs = packed_patch(&e, "pk-1");
    let store = Store::of(&e.agent, "pk-1").unwrap();
    let pack = store.dir().join("snapshots").join(cs[0].pack.as_deref().unwrap());
    // Same length, one byte changed inside b's part: b is refused, a and c still come back.
    let mut bytes = fs::read(&pack).unwrap();
    bytes[4] = b'X';
    fs::write(&pack, &bytes).unwrap();
    let now = tree(&e.ws);
    let err = rollback(&e.agent, "pk-1", Which::One("2")).unwrap_err();
    assert_eq!(err.code, "store-failed");
    assert_eq!(tree(&e.ws), now, "a refused part touches nothing");
    rollback(&e.agent, "pk-1", Which::One("3")).unwrap();
    rollback(&e.agent, "pk-1", Which::One("1")).unwrap();
    assert_eq!(fs::read(e.ws.join("p/a.txt")).unwrap(), b"a1\n");
    assert_eq!(fs::read(e.ws.join("p/c.txt")).unwrap(), b"c1\n");
    // A pack cut short: the parts past its end are not kept any more (checked before any step).
    fs::write(&pack, &bytes[..5]).unwrap();
    let err = rollback(&e.agent, "pk-1", Which::One("2")).unwrap_err();
    assert_eq!(err.code, "not-reversible");
    assert_eq!(fs::read(e.ws.join("p/b.txt")).unwrap(), b"b1\nB\n");
    // The pack fields are checked like any other field read back: an offset without a pack is not loaded.
    let mut forged = cs[1].clone();
    forged.snapshot_id = "f0".into();
    forged.pack = None;
    store.append(&[forged]).unwrap();
    assert_eq!(changes(&e, "pk-1").len(), 3);
}

#[test]
fn a_partial_patch_keeps_the_pack_for_what_took_effect_and_a_failed_one_leaves_no_pack() {
    let e = env();
    for (rel, text) in [("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")] {
        put(&e, rel, text.as_bytes());
    }
    let text = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n*** Update File: c.txt\n@@\n-c\n+C\n*** End Patch";
    let snaps = Store::of(&e.agent, "pp-1").unwrap().dir().join("snapshots");
    // The first commit step fails: nothing took effect, the pack goes with the changes.
    let err = crate::patch::apply_inner(
        &e.ws,
        text,
        &AtomicBool::new(false),
        crate::patch::Faults::parse("commit:1:28"),
        Some(&target(&e, "pp-1")),
    );
    assert!(err.is_err());
    assert!(changes(&e, "pp-1").is_empty());
    assert_eq!(fs::read_dir(&snaps).unwrap().count(), 0, "no pack left behind");
    // The second step fails: a.txt's change stays, with its part of the pack, and rolls back byte for byte.
    let err = crate::patch::apply_inner(
        &e.ws,
        text,
        &AtomicBool::new(false),
        crate::patch::Faults::parse("commit:2:28"),
        Some(&target(&e, "pp-1")),
    );
    assert!(err.is_err());
    let cs = changes(&e, "pp-1");
    assert_eq!(cs.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["a.txt"]);
    assert_eq!(fs::read_dir(&snaps).unwrap().count(), 1);
    assert_eq!(fs::read(e.ws.join("a.txt")).unwrap(), b"A\n");
    rollback(&e.agent, "pp-1", Which::All).unwrap();
    assert_eq!(fs::read(e.ws.join("a.txt")).unwrap(), b"a\n");
}

#[test]
fn the_cap_drops_a_pack_as_a_whole() {
    let e = env();
    let cs = packed_patch(&e, "pc-1");
    put(&e, "later.txt", b"later\n");
    patch(&e, "pc-1", "*** Delete File: later.txt").unwrap();
    let dir = Store::of(&e.agent, "pc-1").unwrap().dir().to_path_buf();
    let pack_len = fs::metadata(dir.join("snapshots").join(cs[0].pack.as_deref().unwrap()))
        .unwrap()
        .len();
    let total: u64 = walkdir::WalkDir::new(&dir)
        .into_iter()
        .flatten()
        .filter(|f| f.file_type().is_file())
        .map(|f| f.metadata().unwrap().len())
        .sum();
    // One byte over: the oldest file (the pack) goes, and all three of its changes lose their bytes before.
    let swept = prune::sweep(&e.agent, Some("pc-1"), total - 1, SystemTime::now()).unwrap();
    assert_eq!(swept.dropped_snapshots, 3);
    assert_eq!(swept.total_bytes, total - pack_len);
    let after = changes(&e, "pc-1");
    assert!(after[..3].iter().all(|c| !c.reversible && c.truncated == Some(true)));
    assert!(after[3].reversible);
    assert_eq!(
        rollback(&e.agent, "pc-1", Which::One("2")).unwrap_err().code,
        "not-reversible"
    );
}
