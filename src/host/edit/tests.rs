//! Edit through `run`: every gate, every EDIT_* code, drift recovery, line endings, registers, limits, the retry
//! budget, path rebinding, MV/REM, an approved external path swapped for a symlink, and a property test against a
//! simple reference model.

use super::limits::*;
use super::*;
use crate::host::read::{self as hread, ReadArgs};
use crate::host::snapshot::{LineSet, Seen};
use crate::host::tag;
use proptest::strategy::Strategy as _;
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use tempfile::TempDir;

struct S {
    _d: TempDir,
    roots: Roots,
    store: Mutex<SnapshotStore>,
    state: EditState,
}

fn setup() -> S {
    let d = TempDir::new().unwrap();
    std::fs::create_dir(d.path().join("ws")).unwrap();
    let roots = Roots::new(&d.path().join("ws"), &d.path().join("agent"), "s1").unwrap();
    S {
        _d: d,
        roots,
        store: Mutex::new(SnapshotStore::new()),
        state: EditState::default(),
    }
}

impl S {
    fn p(&self, rel: &str) -> PathBuf {
        self.roots.workspace().join(rel)
    }
    fn put(&self, rel: &str, bytes: &[u8]) {
        let p = self.p(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    fn get(&self, rel: &str) -> String {
        std::fs::read_to_string(self.p(rel)).unwrap()
    }
    /// Read the whole file (every line seen); returns the tag.
    fn read(&self, rel: &str) -> String {
        let t = self.roots.resolve_inside(rel).unwrap();
        let a = ReadArgs {
            path: rel.into(),
            offset: None,
            limit: Some(u32::MAX as u64),
        };
        let mut st = &self.store;
        hread::read(&t, &a, crate::host::error::Deadline::none(), &mut st)
            .unwrap()
            .tag
    }
    /// Record `rel` as shown with exactly `lines` seen (what Grep does); returns the tag.
    fn show(&self, rel: &str, lines: &[u32]) -> String {
        let n = tag::normalize(&std::fs::read(self.p(rel)).unwrap());
        let mut s = LineSet::new();
        for &l in lines {
            s.insert(l);
        }
        let key = self.roots.resolve_inside(rel).unwrap().canonical;
        lock(&self.store).record(&key, &n, Seen::Lines(s));
        n.tag
    }
    fn ed_turn(&self, rel: &str, tag_: &str, ops: &str, turn: &str) -> Result<EditResult, EditFailure> {
        run(
            &self.roots,
            &self.store,
            &self.state,
            &json!({"path": rel, "tag": tag_, "ops": ops}),
            None,
            Some(turn),
        )
    }
    fn ed(&self, rel: &str, tag_: &str, ops: &str) -> Result<EditResult, EditFailure> {
        // A fresh turn per call keeps the budget out of the way unless a test is about it.
        let turn = uuid::Uuid::new_v4().to_string();
        self.ed_turn(rel, tag_, ops, &turn)
    }
    fn code(&self, rel: &str, tag_: &str, ops: &str) -> (String, String) {
        let e = self.ed(rel, tag_, ops).unwrap_err();
        (e.error.code.to_string(), e.error.message)
    }
}

#[test]
fn read_edit_read_round_trip() {
    let s = setup();
    s.put("a.rs", b"fn a() {\n    1\n}\nfn b() {}\n");
    let t = s.read("a.rs");
    let r = s
        .ed(
            "a.rs",
            &t,
            "PUT 2.=2:\n+    2\n+    3\nPUT >4:\n++tail\nPUT <1:\n+// head",
        )
        .unwrap();
    assert_eq!(s.get("a.rs"), "// head\nfn a() {\n    2\n    3\n}\nfn b() {}\n+tail\n");
    assert_eq!(r.tag, tag::normalize(s.get("a.rs").as_bytes()).tag);
    assert_eq!((r.added, r.removed), (4, 1));
    assert!(r.text.contains("[a.rs#"), "{}", r.text);
    assert!(r.text.contains("3:    2\n4:    3"), "{}", r.text);
    // The new tag works at once: every line of the new version is known (old lines were all seen).
    let r2 = s.ed("a.rs", &r.tag, "CUT 1.=1").unwrap();
    assert_eq!(s.get("a.rs"), "fn a() {\n    2\n    3\n}\nfn b() {}\n+tail\n");
    assert_eq!(s.read("a.rs"), r2.tag);
}

#[test]
fn tag_required_and_malformed() {
    let s = setup();
    s.put("a", b"x\n");
    let e = run(
        &s.roots,
        &s.store,
        &s.state,
        &json!({"path": "a", "ops": "PUT 1.=1:\n+y"}),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.error.code, EDIT_TAG_REQUIRED);
    assert!(e.error.message.contains("Read"));
    assert_eq!(s.code("a", "XYZ", "PUT 1.=1:\n+y").0, EDIT_TAG_REQUIRED);
    // The header alone supplies the tag.
    let t = s.read("a");
    let r = run(
        &s.roots,
        &s.store,
        &s.state,
        &json!({"file_path": "a", "ops": format!("[a#{t}]\nPUT 1.=1:\n+y")}),
        None,
        None,
    )
    .unwrap();
    assert_eq!(s.get("a"), "y\n");
    // A header that disagrees is refused.
    assert_eq!(s.code("a", &r.tag, "[b#0000]\nPUT 1.=1:\n+z").0, EDIT_PARSE_FAILED);
    assert_eq!(s.code("a", &r.tag, "[a#0000]\nPUT 1.=1:\n+z").0, EDIT_PARSE_FAILED);
    assert_eq!(s.get("a"), "y\n");
}

#[test]
fn unknown_tag_and_no_record_gate_skipped() {
    let s = setup();
    s.put("a", b"one\ntwo\n");
    // No record, but the tag is the live file's (known from an earlier session): the provenance gate is skipped.
    let t = tag::normalize(b"one\ntwo\n").tag;
    s.ed("a", &t, "PUT 2.=2:\n+TWO").unwrap();
    assert_eq!(s.get("a"), "one\nTWO\n");
    s.put("b", b"one\ntwo\n");
    let (code, msg) = s.code("b", "0000", "PUT 1.=1:\n+x");
    assert_eq!(code, EDIT_TAG_UNKNOWN);
    assert!(msg.contains("Read b"), "{msg}");
}

#[test]
fn the_tag_an_error_shows_is_not_provenance() {
    let s = setup();
    s.put("a", b"one\ntwo\nthree\n");
    // EDIT_TAG_UNKNOWN shows the live tag but no line.
    let (code, msg) = s.code("a", "0000", "PUT 1.=1:\n+x");
    assert_eq!(code, EDIT_TAG_UNKNOWN);
    let live = tag::normalize(b"one\ntwo\nthree\n").tag;
    assert!(msg.contains(&live), "{msg}");
    // With that tag, a change of a line never shown is refused and the line is revealed...
    let (code, msg) = s.code("a", &live, "PUT 2.=2:\n+TWO");
    assert_eq!(code, EDIT_LINES_UNSEEN, "{msg}");
    assert!(msg.contains("2:two"), "{msg}");
    assert_eq!(s.get("a"), "one\ntwo\nthree\n");
    // ...and only the revealed line now counts as seen.
    assert_eq!(s.code("a", &live, "PUT 3.=3:\n+THREE").0, EDIT_LINES_UNSEEN);
    s.ed("a", &live, "PUT 2.=2:\n+TWO").unwrap();
    assert_eq!(s.get("a"), "one\nTWO\nthree\n");
    // REM of a file none of whose lines were shown is refused; after a Read it lands.
    s.put("b", b"secret\n");
    assert_eq!(s.code("b", "0000", "REM").0, EDIT_TAG_UNKNOWN);
    let live = tag::normalize(b"secret\n").tag;
    let (code, msg) = s.code("b", &live, "REM");
    assert_eq!(code, EDIT_LINES_UNSEEN, "{msg}");
    assert!(s.p("b").exists());
    let t = s.read("b");
    assert!(s.ed("b", &t, "REM").unwrap().deleted);
}

#[test]
fn write_targets_name_the_file_and_the_mv_destination() {
    assert_eq!(
        write_targets(&json!({"path": "a", "tag": "0000", "ops": "PUT 1.=1:\n+x"})),
        vec!["a"]
    );
    assert_eq!(
        write_targets(&json!({"file_path": "/s/a", "tag": "0000", "ops": "PUT 1.=1:\n+x\nMV .git/hooks/pre-commit"})),
        vec!["/s/a", ".git/hooks/pre-commit"]
    );
    // Unparsable ops: the path alone (the call fails on the ops); no path: nothing.
    assert_eq!(write_targets(&json!({"path": "a", "ops": "BOGUS"})), vec!["a"]);
    assert!(write_targets(&json!({"ops": "REM"})).is_empty());
}

#[test]
fn rebinding_never_crosses_roots() {
    let s = setup();
    // The workspace file the model was shown.
    s.put("notes.txt", b"n\n");
    let t = s.read("notes.txt");
    // An Edit of a missing scratch path with that basename and tag is not rebound into the workspace.
    let scratch = s.roots.ensure_scratch().unwrap();
    let missing = scratch.join("notes.txt").display().to_string();
    let e = run(
        &s.roots,
        &s.store,
        &s.state,
        &json!({"path": missing, "tag": t, "ops": "PUT 1.=1:\n+X"}),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.error.code, NOT_FOUND, "{}", e.error.message);
    assert_eq!(s.get("notes.txt"), "n\n");
    // Inside one root rebinding still works.
    let r = s.ed("sub/notes.txt", &t, "PUT 1.=1:\n+m").unwrap();
    assert_eq!(r.path, "notes.txt");
    assert_eq!(s.get("notes.txt"), "m\n");
}

#[test]
fn unseen_lines_are_revealed_then_the_same_edit_lands() {
    let s = setup();
    s.put("a", b"l1\nl2\nl3\nl4\n");
    let t = s.show("a", &[1]);
    let (code, msg) = s.code("a", &t, "PUT 3.=4:\n+x");
    assert_eq!(code, EDIT_LINES_UNSEEN);
    assert!(msg.ends_with(&format!("[a#{t}]\n3:l3\n4:l4")), "{msg}");
    assert_eq!(s.get("a"), "l1\nl2\nl3\nl4\n");
    s.ed("a", &t, "PUT 3.=4:\n+x").unwrap();
    assert_eq!(s.get("a"), "l1\nl2\nx\n");
}

#[test]
fn an_empty_seen_set_refuses_every_anchor_and_a_big_reveal_marks_nothing() {
    let s = setup();
    let body: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    s.put("a", body.as_bytes());
    let t = s.show("a", &[]);
    let (code, msg) = s.code("a", &t, "PUT >1:\n+x");
    assert_eq!(code, EDIT_LINES_UNSEEN);
    assert!(msg.contains("1:line 1"));
    // 41 unseen lines: 40 revealed, none marked, so the retry is refused again.
    let t2 = s.show("a", &[50]);
    assert_eq!(t, t2);
    let (code, msg) = s.code("a", &t, "CUT 2.=42");
    assert_eq!(code, EDIT_LINES_UNSEEN);
    assert!(msg.contains("More than 40") && msg.contains("\n41:line 41") && !msg.contains("42:line 42"));
    assert_eq!(s.code("a", &t, "CUT 2.=42").0, EDIT_LINES_UNSEEN);
    assert_eq!(s.get("a"), body);
    // Head and tail insertions need no seen line.
    s.ed("a", &t, "PUT <1:\n+top\nPUT >$:\n+end").unwrap();
}

#[test]
fn grep_then_edit_on_matched_lines() {
    let s = setup();
    s.put("src/m.rs", b"a\nTODO one\nb\nTODO two\n");
    let t = s.roots.resolve_inside("src").unwrap();
    let a = crate::host::grep::GrepArgs::from_json(&json!({"pattern": "TODO", "path": "src"})).unwrap();
    let mut st = &s.store;
    let g = crate::host::grep::grep(&s.roots, &t, &a, crate::host::error::Deadline::none(), &mut st).unwrap();
    let tag_ = g.tags.get("src/m.rs").unwrap().clone();
    s.ed("src/m.rs", &tag_, "PUT 2.=2:\n+DONE one\nPUT 4.=4:\n+DONE two")
        .unwrap();
    assert_eq!(s.get("src/m.rs"), "a\nDONE one\nb\nDONE two\n");
    // An unmatched line was never shown by that Grep.
    let mut st = &s.store;
    let g = crate::host::grep::grep(&s.roots, &t, &a, crate::host::error::Deadline::none(), &mut st);
    assert!(g.unwrap().files.is_empty());
}

#[test]
fn stale_head_tail_applies_with_a_warning() {
    let s = setup();
    s.put("a", b"1\n2\n");
    let t = s.read("a");
    // The first and the last line themselves changed: the head and the tail stay the head and the tail.
    s.put("a", b"1x\n2x\n");
    let r = s.ed("a", &t, "PUT >$:\n+end\nPUT <1:\n+top").unwrap();
    assert_eq!(s.get("a"), "top\n1x\n2x\nend\n");
    assert!(r.warnings[0].contains("stale"), "{:?}", r.warnings);
    assert!(r.text.contains("Warning: tag"));
}

#[test]
fn stale_head_and_tail_follow_their_neighbour_after_a_prepend_or_append() {
    let s = setup();
    s.put("a", b"1\n2\n3\n");
    let t = s.read("a");
    // Lines added above the first line and below the last: `<1` goes before the line that was first, `>$` after the
    // line that was last (docs/host.md "Edits under drift").
    s.put("a", b"p\nq\n1\n2\n3\nx\n");
    let r = s.ed("a", &t, "PUT <1:\n+top\nPUT >$:\n+end").unwrap();
    assert_eq!(s.get("a"), "p\nq\ntop\n1\n2\n3\nend\nx\n");
    assert!(r.warnings[0].contains("next to the lines"), "{:?}", r.warnings);
    // With a carried operation in between too.
    let t = s.read("a");
    s.put("a", b"new\np\nq\ntop\n1\n2\n3\nend\nx\n");
    s.ed("a", &t, "PUT <1:\n+head\nPUT 5.=5:\n+two").unwrap();
    assert_eq!(s.get("a"), "new\nhead\np\nq\ntop\n1\ntwo\n3\nend\nx\n");
    // The first lines prepended again as a copy: the head's place is ambiguous, refused and untouched.
    s.put("a", b"1\n2\n");
    let t = s.read("a");
    s.put("a", b"1\n2\n1\n2\n");
    let (code, msg) = s.code("a", &t, "PUT <1:\n+top");
    assert_eq!(code, EDIT_TAG_MISMATCH);
    assert!(msg.contains("ambiguous"), "{msg}");
    assert_eq!(s.get("a"), "1\n2\n1\n2\n");
}

#[test]
fn drift_grows_repeated_windows_and_shows_where_the_lines_went() {
    let s = setup();
    // `}` lines repeat in the version read; the grown evidence places the edit after a prepend.
    let body = "fn a() {\n    if x {\n    }\n}\nfn b() {\n    if x {\n    }\n}\n";
    s.put("a", body.as_bytes());
    let t = s.read("a");
    s.put("a", format!("// 1\n// 2\n// 3\n{body}").as_bytes());
    s.ed("a", &t, "PUT 7.=7:\n+    } // b").unwrap();
    assert_eq!(
        s.get("a"),
        "// 1\n// 2\n// 3\nfn a() {\n    if x {\n    }\n}\nfn b() {\n    if x {\n    } // b\n}\n"
    );
    // Reformatted neighbours (trailing spaces, indentation) still count as evidence.
    s.put("a", b"a\nb\nc\n");
    let t = s.read("a");
    s.put("a", b"a  \nb\n\tc\n");
    s.ed("a", &t, "PUT 2.=2:\n+B").unwrap();
    assert_eq!(s.get("a"), "a  \nB\n\tc\n");
    // A conflict 20 lines down after a 10-line prepend: the refusal names the line and shows it where it is now.
    let lines: Vec<String> = (1..=30).map(|k| format!("line {k}")).collect();
    s.put("a", format!("{}\n", lines.join("\n")).as_bytes());
    let t = s.read("a");
    let mut now: Vec<String> = (1..=10).map(|k| format!("new {k}")).collect();
    now.extend(lines.iter().cloned());
    now[10 + 19] = "line 20 changed".into();
    s.put("a", format!("{}\n", now.join("\n")).as_bytes());
    let (code, msg) = s.code("a", &t, "PUT 20.=20:\n+LINE 20");
    assert_eq!(code, EDIT_TAG_MISMATCH);
    assert!(msg.contains("line 20 (`line 20`) was changed or removed"), "{msg}");
    assert!(msg.contains("\n30:line 20 changed"), "{msg}");
}

#[test]
fn drift_recovers_insertions_above_and_deletions() {
    let s = setup();
    s.put("a", b"a\nb\nc\nd\ne\nf\n");
    let t = s.read("a");
    s.put("a", b"new1\nnew2\na\nb\nc\nd\ne\nf\n");
    let r = s.ed("a", &t, "PUT 4.=4:\n+D").unwrap();
    assert_eq!(s.get("a"), "new1\nnew2\na\nb\nc\nD\ne\nf\n");
    assert!(r.warnings[0].contains("+2"), "{:?}", r.warnings);
    // Deletion above (stale tag from before).
    let t = s.read("a");
    s.put("a", b"b\nc\nD\ne\nf\n");
    s.ed("a", &t, "CUT 6.=6\nPUT >7:\n+after e").unwrap();
    assert_eq!(s.get("a"), "b\nc\ne\nafter e\nf\n");
    // Insertion between two operations: each gets its own offset.
    let t = s.read("a");
    s.put("a", b"b\nc\nINS\ne\nafter e\nf\n");
    s.ed("a", &t, "PUT 1.=1:\n+B\nPUT 4.=4:\n+AFTER").unwrap();
    assert_eq!(s.get("a"), "B\nc\nINS\ne\nAFTER\nf\n");
}

#[test]
fn drift_refuses_duplicates_and_changed_anchors_leaving_the_file() {
    let s = setup();
    s.put("a", b"x\ny\nz\nend\n");
    let t = s.read("a");
    let dup = "x\ny\nz\nx\ny\nz\nend\n";
    s.put("a", dup.as_bytes());
    let e = s.ed("a", &t, "PUT 2.=2:\n+Y").unwrap_err();
    assert_eq!(e.error.code, EDIT_TAG_MISMATCH);
    let live = tag::normalize(dup.as_bytes()).tag;
    assert_eq!(e.live_tag.as_deref(), Some(live.as_str()));
    assert!(e.error.message.contains(&format!("[a#{live}]")), "{}", e.error.message);
    assert!(e.error.message.contains("ambiguous"));
    assert_eq!(s.get("a"), dup);
    // A changed neighbour refuses too.
    let t = s.read("a");
    s.put("a", b"x\ny\nZZ\nx\ny\nz\nend\n");
    let (code, msg) = s.code("a", &t, "PUT 2.=2:\n+Y");
    assert_eq!(code, EDIT_TAG_MISMATCH);
    assert!(msg.contains("line 3 (`z`) was changed"), "{msg}");
    // The rows shown with the mismatch count as seen under the live tag: an edit with it lands.
    let live = tag::normalize(b"x\ny\nZZ\nx\ny\nz\nend\n").tag;
    s.ed("a", &live, "PUT 3.=3:\n+z").unwrap();
    assert_eq!(s.get("a"), "x\ny\nz\nx\ny\nz\nend\n");
}

#[test]
fn tag_normalization_bom_crlf_trailing_spaces_through_edit() {
    let s = setup();
    let raw = "\u{feff}a  \r\nb\t\r\nc\r\nlast";
    s.put("w.txt", raw.as_bytes());
    let t = s.read("w.txt");
    assert_eq!(
        t,
        tag::normalize(b"a\nb\nc\nlast").tag,
        "BOM, CRLF and trailing spaces do not change the tag"
    );
    s.ed("w.txt", &t, "PUT 2.=2:\n+B\n+B2\nPUT >$:\n+tail").unwrap();
    assert_eq!(s.get("w.txt"), "\u{feff}a  \r\nB\r\nB2\r\nc\r\nlast\r\ntail");
    // A tag taken with trailing spaces stripped still matches after only trailing whitespace changed: not stale.
    let t = s.read("w.txt");
    s.put("w.txt", "\u{feff}a\r\nB   \r\nB2\r\nc\r\nlast\r\ntail".as_bytes());
    let r = s.ed("w.txt", &t, "PUT >$:\n+more").unwrap();
    assert!(
        r.warnings.iter().any(|w| w.contains("stale")),
        "full-text comparison notices the change"
    );
}

#[test]
fn no_change_range_invalid_and_overlap() {
    let s = setup();
    s.put("a", b"1\n2\n3\n");
    let t = s.read("a");
    assert_eq!(s.code("a", &t, "PUT 2.=2:\n+2").0, EDIT_NO_CHANGE);
    assert_eq!(s.code("a", &t, "PUT 3.=4:\n+x").0, EDIT_RANGE_INVALID);
    assert_eq!(s.code("a", &t, "PUT 1.=2:\n+x\nCUT 2.=3").0, EDIT_RANGE_INVALID);
    assert_eq!(s.code("a", &t, "PUT >2:\n+x\nPUT <2:\n+y").0, EDIT_RANGE_INVALID);
    assert_eq!(s.code("a", &t, "PUT 2*:\n+x").0, EDIT_BLOCK_UNRESOLVED);
    assert_eq!(s.code("a", &t, "DEL 2").0, EDIT_PARSE_FAILED);
    assert_eq!(s.get("a"), "1\n2\n3\n");
}

#[test]
fn registers_anonymous_named_empty_ambiguous() {
    let s = setup();
    s.put("a", b"1\n2\n3\n4\n5\n");
    s.put("b", b"x\ny\n");
    let t = s.read("a");
    // Move lines 1-2 after 5 with the anonymous register.
    let r = s.ed("a", &t, "CUT 1.=2\nPUT >5 @").unwrap();
    assert_eq!(s.get("a"), "3\n4\n5\n1\n2\n");
    assert_eq!(s.code("a", &r.tag, "PUT >1 @").0, EDIT_REGISTER_EMPTY);
    assert_eq!(
        s.code("a", &r.tag, "CUT 1.=1\nCUT 3.=3\nPUT >5 @").0,
        EDIT_REGISTER_AMBIGUOUS
    );
    assert_eq!(
        s.code("a", &r.tag, "CUT 1.=1 @k\nCUT 3.=3 @k").0,
        EDIT_REGISTER_AMBIGUOUS
    );
    assert_eq!(s.code("a", &r.tag, "PUT >1 @nothing").0, EDIT_REGISTER_EMPTY);
    // A failed call does not store its capture.
    assert_eq!(
        s.code("a", &r.tag, "CUT 1.=1 @keep\nPUT 9.=9:\n+x").0,
        EDIT_RANGE_INVALID
    );
    assert_eq!(s.code("b", &s.read("b"), "PUT >1 @keep").0, EDIT_REGISTER_EMPTY);
    // A named register lives for the session: cut from a, paste into b.
    s.ed("a", &r.tag, "CUT 4.=5 @blk").unwrap();
    let tb = s.read("b");
    s.ed("b", &tb, "PUT >2 @blk\nPUT <1 @blk").unwrap();
    assert_eq!(s.get("b"), "1\n2\nx\ny\n1\n2\n");
    assert_eq!(s.get("a"), "3\n4\n5\n");
}

#[test]
fn limits_at_their_boundaries() {
    let s = setup();
    s.put("a", b"seed\n");
    let t = s.read("a");
    // Bare `+` rows (2 bytes each) keep 100,001 rows under the 256 KiB ops limit.
    let rows = |n: usize| "+\n".repeat(n);
    let e = s
        .ed("a", &t, &format!("PUT >$:\n{}", rows(MAX_EXPANDED_LINES + 1)))
        .unwrap_err();
    assert_eq!(e.error.code, EDIT_AMPLIFICATION_LIMIT);
    assert!(e.error.message.contains("100000"), "{}", e.error.message);
    assert_eq!(s.get("a"), "seed\n");
    // Pastes count too: a 4096-line register plus body rows, at the boundary and one over.
    let big: String = (0..MAX_CAPTURE_LINES).map(|i| format!("{i}\n")).collect();
    s.put("big", big.as_bytes());
    let tb = s.read("big");
    let r = s.ed("big", &tb, "CUT 1.=4096 @four").unwrap();
    s.put("tgt", b"t\nu\n");
    let tt = s.read("tgt");
    let e = s
        .ed(
            "tgt",
            &tt,
            &format!(
                "PUT <1 @four\nPUT >$:\n{}",
                rows(MAX_EXPANDED_LINES - MAX_CAPTURE_LINES + 1)
            ),
        )
        .unwrap_err();
    assert_eq!(e.error.code, EDIT_AMPLIFICATION_LIMIT);
    assert_eq!(s.get("tgt"), "t\nu\n");
    let ok = s
        .ed(
            "tgt",
            &tt,
            &format!(
                "PUT <1 @four\nPUT >$:\n{}",
                rows(MAX_EXPANDED_LINES - MAX_CAPTURE_LINES)
            ),
        )
        .unwrap();
    assert_eq!(ok.added as usize, MAX_EXPANDED_LINES);
    assert_eq!(r.removed as usize, MAX_CAPTURE_LINES);
    // Capture: 4096 lines is allowed (above); 4097 is refused.
    let big2: String = (0..=MAX_CAPTURE_LINES).map(|i| format!("{i}\n")).collect();
    s.put("big2", big2.as_bytes());
    let t2 = s.read("big2");
    assert_eq!(s.code("big2", &t2, "CUT 1.=4097 @r").0, EDIT_AMPLIFICATION_LIMIT);
    // Two registers over the limit: the first CUT's is the one reported, whatever the order of a hash map.
    let big3: String = (0..=2 * MAX_CAPTURE_LINES + 1).map(|i| format!("{i}\n")).collect();
    s.put("big3", big3.as_bytes());
    let every: Vec<u32> = (1..=2 * MAX_CAPTURE_LINES as u32 + 2).collect();
    let t3 = s.show("big3", &every);
    for (first, second) in [("zz", "aa"), ("aa", "zz"), ("m", "n"), ("n", "m")] {
        let ops = format!("CUT 1.=4097 @{first}\nCUT 4098.=8194 @{second}");
        let (code, message) = s.code("big3", &t3, &ops);
        assert_eq!(code, EDIT_AMPLIFICATION_LIMIT);
        assert!(
            message.starts_with(&format!("register @{first} would capture 4097 lines")),
            "{message}"
        );
    }
    // A plain CUT without a kept register captures nothing: no limit.
    s.ed("big2", &t2, "CUT 1.=4097").unwrap();
    // Capture bytes: exactly 1 MiB (64 lines of 16,383 characters plus their newlines) is allowed; one byte more is
    // not. (Marked seen as a paged Read would; one Read stops at 50 KiB of output.)
    let l = "x".repeat(16_383);
    let exact: String = (0..64).map(|_| format!("{l}\n")).collect();
    assert_eq!(exact.len(), MAX_CAPTURE_BYTES);
    s.put("wide", format!("{exact}z\n").as_bytes());
    let all: Vec<u32> = (1..=65).collect();
    let tw = s.show("wide", &all);
    let r = s.ed("wide", &tw, "CUT 1.=64 @wide").unwrap();
    assert_eq!(r.removed, 64);
    s.put("wide2", format!("{l}x\n{}z\n", &exact[l.len() + 1..]).as_bytes());
    let tw2 = s.show("wide2", &all);
    assert_eq!(s.code("wide2", &tw2, "CUT 1.=64 @wide").0, EDIT_AMPLIFICATION_LIMIT);
}

#[test]
fn mode_and_hard_links_are_kept() {
    let s = setup();
    s.put("x.sh", b"#!/bin/sh\necho 1\n");
    std::fs::set_permissions(s.p("x.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let t = s.read("x.sh");
    s.ed("x.sh", &t, "PUT 2.=2:\n+echo 2").unwrap();
    assert_eq!(std::fs::metadata(s.p("x.sh")).unwrap().mode() & 0o7777, 0o750);
    std::fs::hard_link(s.p("x.sh"), s.p("link.sh")).unwrap();
    let ino = std::fs::metadata(s.p("x.sh")).unwrap().ino();
    let t = s.read("x.sh");
    s.ed("x.sh", &t, "PUT 2.=2:\n+echo 3").unwrap();
    assert_eq!(std::fs::read_to_string(s.p("link.sh")).unwrap(), "#!/bin/sh\necho 3\n");
    assert_eq!(std::fs::metadata(s.p("x.sh")).unwrap().ino(), ino);
    // No temp file left in the folder.
    let names: Vec<_> = std::fs::read_dir(s.roots.workspace())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn rem_and_mv() {
    let s = setup();
    s.put("a", b"1\n");
    s.put("taken", b"t\n");
    let t = s.read("a");
    // MV never overwrites; the file stays untouched.
    let (code, msg) = s.code("a", &t, "PUT 1.=1:\n+2\nMV taken");
    assert_eq!(code, INVALID_ARGUMENT);
    assert!(msg.contains("never replaces"));
    assert_eq!((s.get("a").as_str(), s.get("taken").as_str()), ("1\n", "t\n"));
    assert_eq!(s.code("a", &t, "MV ../out").0, PATH_OUTSIDE_WORKSPACE);
    let r = s.ed("a", &t, "PUT 1.=1:\n+2\nMV sub/b").unwrap();
    assert_eq!(r.path, "sub/b");
    assert_eq!(r.moved_from.as_deref(), Some("a"));
    assert!(!s.p("a").exists());
    assert_eq!(s.get("sub/b"), "2\n");
    // The moved file is known under its new path.
    let r2 = s.ed("sub/b", &r.tag, "MV c").unwrap();
    assert_eq!(s.get("c"), "2\n");
    // REM: stale tag refused, live tag deletes.
    s.put("c", b"3\n");
    assert_eq!(s.code("c", &r2.tag, "REM").0, EDIT_TAG_MISMATCH);
    assert!(s.p("c").exists());
    let t = s.read("c");
    let r = s.ed("c", &t, "REM").unwrap();
    assert!(r.deleted && !s.p("c").exists());
    assert_eq!(s.code("c", &t, "REM").0, NOT_FOUND);
}

#[test]
fn a_missing_path_is_rebound_by_basename_and_tag() {
    let s = setup();
    s.put("src/lib.rs", b"pub fn x() {}\n");
    let t = s.read("src/lib.rs");
    let r = s.ed("lib.rs", &t, "PUT >1:\n+pub fn y() {}").unwrap();
    assert_eq!(r.path, "src/lib.rs");
    assert!(r.warnings[0].contains("does not exist"), "{:?}", r.warnings);
    assert_eq!(s.get("src/lib.rs"), "pub fn x() {}\npub fn y() {}\n");
    // Two candidates: no rebinding.
    s.put("other/lib.rs", b"pub fn x() {}\n");
    s.put("src/lib.rs", b"pub fn x() {}\n");
    let t = s.read("src/lib.rs");
    s.read("other/lib.rs");
    assert_eq!(s.code("lib.rs", &t, "PUT >1:\n+z").0, NOT_FOUND);
}

#[test]
fn an_approved_external_path_swapped_for_a_symlink_is_refused() {
    let s = setup();
    let base = s.roots.workspace().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(base.join("ext")).unwrap();
    std::fs::create_dir_all(base.join("evil")).unwrap();
    std::fs::write(base.join("ext/f.txt"), "e\n").unwrap();
    std::fs::write(base.join("evil/f.txt"), "keep\n").unwrap();
    let raw = base.join("ext/f.txt").display().to_string();
    let resolved = s.roots.resolve(&raw).unwrap();
    assert_eq!(resolved.root, Root::External);
    let approved = resolved.canonical.clone();
    let tag_ = tag::normalize(b"e\n").tag;
    let call = |ops: &str| {
        run(
            &s.roots,
            &s.store,
            &s.state,
            &json!({"path": raw, "tag": tag_, "ops": ops}),
            Some(&approved),
            Some("t"),
        )
    };
    // Unapproved: refused.
    let e = run(
        &s.roots,
        &s.store,
        &s.state,
        &json!({"path": raw, "tag": tag_, "ops": "PUT 1.=1:\n+x"}),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.error.code, PATH_OUTSIDE_WORKSPACE);
    // After approval the folder is swapped for a symlink to another folder.
    std::fs::rename(base.join("ext"), base.join("ext-old")).unwrap();
    std::os::unix::fs::symlink(base.join("evil"), base.join("ext")).unwrap();
    let e = call("PUT 1.=1:\n+x").unwrap_err();
    assert_eq!(e.error.code, PATH_OUTSIDE_WORKSPACE, "{}", e.error.message);
    assert_eq!(std::fs::read_to_string(base.join("evil/f.txt")).unwrap(), "keep\n");
    assert_eq!(std::fs::read_to_string(base.join("ext-old/f.txt")).unwrap(), "e\n");
    // Put back: the approved call lands.
    std::fs::remove_file(base.join("ext")).unwrap();
    std::fs::rename(base.join("ext-old"), base.join("ext")).unwrap();
    let r = call("PUT 1.=1:\n+x").unwrap();
    assert_eq!(r.root, Root::External);
    assert_eq!(std::fs::read_to_string(base.join("ext/f.txt")).unwrap(), "x\n");
}

#[test]
fn retry_budget_three_counted_failures_stop_the_path() {
    let s = setup();
    s.put("a", b"1\n2\n");
    let t = s.read("a");
    let e1 = s.ed_turn("a", "0000", "PUT 1.=1:\n+x", "T").unwrap_err();
    assert_eq!(
        (e1.failures, e1.budget_exhausted),
        (0, false),
        "TAG_UNKNOWN's free retry"
    );
    let e2 = s.ed_turn("a", &t, "PUT 9.=9:\n+x", "T").unwrap_err();
    assert_eq!(e2.failures, 1);
    let e3 = s.ed_turn("a", "0000", "PUT 1.=1:\n+x", "T").unwrap_err();
    assert_eq!(e3.failures, 2, "the second TAG_UNKNOWN counts");
    let e4 = s.ed_turn("a", &t, "PUT 1.=1:\n+1", "T").unwrap_err();
    assert_eq!(e4.error.code, EDIT_NO_CHANGE);
    assert!(
        e4.budget_exhausted && e4.error.message.contains("stop editing"),
        "{}",
        e4.error.message
    );
    // Even a valid edit is refused for the rest of the turn, naming the last error.
    let e5 = s.ed_turn("a", &t, "PUT 1.=1:\n+x", "T").unwrap_err();
    assert!(e5.budget_exhausted && e5.error.code == EDIT_NO_CHANGE && e5.error.message.contains("EDIT_NO_CHANGE"));
    assert_eq!(s.get("a"), "1\n2\n");
    // A new prompt resets; a landed write clears the count.
    s.ed_turn("a", &t, "PUT 9.=9:\n+x", "U").unwrap_err();
    s.ed_turn("a", &t, "PUT 9.=9:\n+x", "U").unwrap_err();
    let r = s.ed_turn("a", &t, "PUT 1.=1:\n+x", "U").unwrap();
    let e = s.ed_turn("a", &r.tag, "PUT 9.=9:\n+x", "U").unwrap_err();
    assert_eq!(e.failures, 1);
    assert_eq!(
        lock(&s.state.budget)
            .note_patch_failure(Some("U"), &s.p("a").canonicalize().unwrap())
            .counted,
        2
    );
}

#[test]
fn non_utf8_directories_and_missing_ops() {
    let s = setup();
    s.put("bin", b"\xff\xfe\n");
    let t = s.read("bin");
    assert_eq!(s.code("bin", &t, "PUT 1.=1:\n+x").0, INVALID_ARGUMENT);
    std::fs::create_dir(s.p("d")).unwrap();
    assert_eq!(s.code("d", "0000", "PUT 1.=1:\n+x").0, INVALID_ARGUMENT);
    let e = run(
        &s.roots,
        &s.store,
        &s.state,
        &json!({"path": "bin", "tag": t}),
        None,
        None,
    )
    .unwrap_err();
    assert!(e.error.message.contains("`ops`"));
}

mod model {
    //! The property test's reference model: the spec's semantics written the plain way.
    #[derive(Debug, Clone)]
    pub enum MOp {
        Replace(usize, usize, Vec<String>),
        Cut(usize, usize),
        Before(usize, Vec<String>),
        After(usize, Vec<String>),
        End(Vec<String>),
    }

    impl MOp {
        pub fn text(&self) -> String {
            let rows = |b: &[String]| b.iter().map(|r| format!("\n+{r}")).collect::<String>();
            match self {
                MOp::Replace(a, b, r) => format!("PUT {a}.={b}:{}", rows(r)),
                MOp::Cut(a, b) => format!("CUT {a}.={b}"),
                MOp::Before(n, r) => format!("PUT <{n}:{}", rows(r)),
                MOp::After(n, r) => format!("PUT >{n}:{}", rows(r)),
                MOp::End(r) => format!("PUT >$:{}", rows(r)),
            }
        }
        fn claim(&self, len: usize) -> (usize, usize) {
            match *self {
                MOp::Replace(a, b, _) | MOp::Cut(a, b) => (a, b),
                MOp::Before(n, _) | MOp::After(n, _) => {
                    if len == 0 {
                        (0, 0)
                    } else {
                        (n, n)
                    }
                }
                MOp::End(_) => (len, len),
            }
        }
    }

    /// The expected lines, or None when the ops must be refused.
    pub fn apply(lines: &[String], ops: &[MOp]) -> Option<Vec<String>> {
        let len = lines.len();
        for op in ops {
            let ok = match *op {
                MOp::Replace(a, b, _) | MOp::Cut(a, b) => a >= 1 && a <= b && b <= len,
                MOp::Before(n, _) => n >= 1 && (n <= len || (len == 0 && n == 1)),
                MOp::After(n, _) => n >= 1 && n <= len,
                MOp::End(_) => true,
            };
            if !ok {
                return None;
            }
        }
        let mut claims: Vec<(usize, usize)> = ops.iter().map(|o| o.claim(len)).collect();
        claims.sort();
        if claims.windows(2).any(|w| w[1].0 <= w[0].1) {
            return None;
        }
        let mut out = Vec::new();
        let find = |f: &dyn Fn(&MOp) -> bool| ops.iter().find(|o| f(o)).cloned();
        if len == 0 {
            for o in ops {
                if let MOp::Before(_, r) | MOp::End(r) = o {
                    out.extend(r.iter().cloned());
                }
            }
            return Some(out);
        }
        for i in 1..=len {
            if let Some(MOp::Before(_, r)) = find(&|o| matches!(o, MOp::Before(n, _) if *n == i)) {
                out.extend(r);
            }
            let range = find(&|o| matches!(o, MOp::Replace(a, b, _) | MOp::Cut(a, b) if *a <= i && i <= *b));
            match range {
                Some(MOp::Replace(a, _, r)) if a == i => out.extend(r),
                Some(_) => {}
                None => out.push(lines[i - 1].clone()),
            }
            if let Some(MOp::After(_, r)) = find(&|o| matches!(o, MOp::After(n, _) if *n == i)) {
                out.extend(r);
            }
        }
        if let Some(MOp::End(r)) = find(&|o| matches!(o, MOp::End(_))) {
            out.extend(r);
        }
        Some(out)
    }
}

fn op_strategy() -> impl proptest::strategy::Strategy<Value = model::MOp> {
    use model::MOp;
    use proptest::prelude::*;
    let rows = proptest::collection::vec(
        proptest::sample::select(vec!["a", "b", "", "+x", "-y"]).prop_map(String::from),
        0..3,
    );
    prop_oneof![
        (1usize..14, 0usize..3, rows.clone()).prop_map(|(a, l, r)| MOp::Replace(a, a + l, r)),
        (1usize..14, 0usize..3).prop_map(|(a, l)| MOp::Cut(a, a + l)),
        (1usize..14, rows.clone()).prop_map(|(n, r)| MOp::Before(n, if r.is_empty() { vec!["n".into()] } else { r })),
        (1usize..14, rows.clone()).prop_map(|(n, r)| MOp::After(n, if r.is_empty() { vec!["n".into()] } else { r })),
        rows.prop_map(|r| MOp::End(if r.is_empty() { vec!["n".into()] } else { r })),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 96, ..Default::default() })]
    /// Random edits on random files either apply exactly as the reference model says or are refused with the file
    /// byte-for-byte untouched.
    #[test]
    fn random_edits_apply_exactly_or_change_nothing(
        lines in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "c", "", "  d "]).prop_map(String::from), 0..12),
        final_nl in proptest::bool::ANY,
        crlf in proptest::bool::ANY,
        ops in proptest::collection::vec(op_strategy(), 1..5),
    ) {
        let s = setup();
        let mut lines = lines;
        let mut final_nl = final_nl;
        if !final_nl && lines.last().is_some_and(|l| l.is_empty()) {
            // "a\n" + "" is the one line "a" with a final newline.
            lines.pop();
            final_nl = true;
        }
        let eol = if crlf && (lines.len() > 1 || (lines.len() == 1 && final_nl)) { "\r\n" } else { "\n" };
        let join = |ls: &[String], fin: bool| {
            let mut t = ls.join(eol);
            if fin && !ls.is_empty() {
                t.push_str(eol);
            }
            t
        };
        let before = join(&lines, final_nl);
        s.put("f", before.as_bytes());
        let t = s.read("f");
        let ops_text = ops.iter().map(|o| o.text()).collect::<Vec<_>>().join("\n");
        let expected = model::apply(&lines, &ops);
        let got = s.ed("f", &t, &ops_text);
        let after = std::fs::read(s.p("f")).unwrap();
        match (expected, got) {
            (Some(exp), Ok(r)) => {
                let fin = final_nl || lines.is_empty();
                let want = join(&exp, fin);
                proptest::prop_assert_eq!(String::from_utf8(after).unwrap(), want.clone(), "ops {:?}", ops_text);
                proptest::prop_assert_eq!(r.tag, tag::normalize(want.as_bytes()).tag);
            }
            (Some(exp), Err(e)) => {
                let fin = final_nl || lines.is_empty();
                proptest::prop_assert_eq!(e.error.code, EDIT_NO_CHANGE, "{} for {:?}", e.error.message, ops_text);
                proptest::prop_assert_eq!(join(&exp, fin), before.clone());
                proptest::prop_assert_eq!(after, before.into_bytes());
            }
            (None, Ok(_)) => proptest::prop_assert!(false, "model refuses {:?} but Edit applied it", ops_text),
            (None, Err(e)) => {
                proptest::prop_assert!(e.error.code == EDIT_RANGE_INVALID, "{}: {}", e.error.code, e.error.message);
                proptest::prop_assert_eq!(after, before.into_bytes());
            }
        }
    }
}

/// A file above `SIDE_THREAD_MIN` is hashed beside the split and the write: the tags, the file and the render are
/// those of the small-file path (BOM, CRLF and trailing spaces included, so the normalised text is a copy).
#[test]
fn a_large_file_edits_like_a_small_one() {
    let s = setup();
    let n = 20_000;
    let mut body = String::from(tag::BOM);
    for k in 1..=n {
        body.push_str(&format!(
            "line {k} of a large file, padded to be long enough{}\r\n",
            if k % 7 == 0 { "  " } else { "" }
        ));
    }
    assert!(body.len() >= SIDE_THREAD_MIN);
    s.put("big.txt", body.as_bytes());
    let t = s.show("big.txt", &(1..=n).collect::<Vec<u32>>());
    assert_eq!(t, tag::normalize(body.as_bytes()).tag);
    let ops: Vec<String> = (0..50)
        .map(|k| format!("PUT {}.={}:\n+new {k}", k * 300 + 5, k * 300 + 6))
        .collect();
    let r = s.ed("big.txt", &t, &ops.join("\n")).unwrap();
    let now = s.get("big.txt");
    assert!(
        now.starts_with(tag::BOM)
            && now.contains("\r\nnew 0\r\nline 7 of a large file, padded to be long enough  \r\n")
    );
    assert_eq!(r.tag, tag::normalize(now.as_bytes()).tag);
    assert_eq!((r.added, r.removed), (50, 100));
    assert!(
        r.text
            .contains("\n4:line 4 of a large file, padded to be long enough\n5:new 0\n6:line 7 of"),
        "{}",
        &r.text[..300]
    );
    // The returned tag is the live one: a second edit is fresh (no stale-tag warning), and its result agrees too.
    let r2 = s.ed("big.txt", &r.tag, "PUT 1.=1:\n+first").unwrap();
    assert!(r2.warnings.is_empty(), "{:?}", r2.warnings);
    assert_eq!(r2.tag, tag::normalize(s.get("big.txt").as_bytes()).tag);
    assert_eq!(s.read("big.txt"), r2.tag);
}

/// A file whose normalised text is over the 2 MiB retention limit, in fixed-width lines (so a one-byte change keeps
/// the size).
fn over_retention(eol: &str, bom: bool) -> String {
    let mut body = String::from(if bom { tag::BOM } else { "" });
    let mut k = 0;
    while tag::normalize_str(&body).len() <= crate::host::snapshot::MAX_RETAINED_FILE + 4096 {
        for _ in 0..1000 {
            k += 1;
            body.push_str(&format!("line {k:06} of a file over the retention limit{eol}"));
        }
    }
    body
}

/// Over 2 MiB no text is kept, so an unchanged file is recognised by its fingerprint: a Read → Edit → Edit chain
/// lands with no warning, and every tag agrees with the file that landed (LF, and BOM + CRLF where the normalised
/// text is a copy).
#[test]
fn an_unchanged_file_over_2_mib_edits_with_no_warning() {
    for (eol, bom) in [("\n", false), ("\r\n", true)] {
        let s = setup();
        let body = over_retention(eol, bom);
        s.put("big.txt", body.as_bytes());
        let t = s.read("big.txt");
        let key = s.roots.resolve_inside("big.txt").unwrap().canonical;
        assert!(
            lock(&s.store).lookup(&key, &t).is_some_and(|v| v.text.is_none()),
            "tagged, not retained"
        );
        let r = s.ed("big.txt", &t, "PUT 2.=3:\n+two\nPUT <1:\n+head").unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let now = s.get("big.txt");
        assert!(now.starts_with(&format!("{}head{eol}line 000001", if bom { tag::BOM } else { "" })));
        assert!(now.contains(&format!("{eol}two{eol}line 000004 ")));
        assert_eq!(r.tag, tag::normalize(now.as_bytes()).tag);
        // The new version was recorded with its fingerprint: the next Edit is fresh too.
        let r2 = s.ed("big.txt", &r.tag, "PUT 1.=1:\n+first").unwrap();
        assert!(r2.warnings.is_empty(), "{:?}", r2.warnings);
        assert_eq!(r2.tag, tag::normalize(s.get("big.txt").as_bytes()).tag);
        assert_eq!(s.read("big.txt"), r2.tag);
    }
}

/// Over 2 MiB, a same-size external change of one byte after a Read is still caught: the fingerprint differs, so the
/// live file is hashed in full and the stale tag is EDIT_TAG_MISMATCH with the file untouched (no text was kept to
/// carry the edit over); a head/tail insertion still lands on the current file with the stale-tag warning.
#[test]
fn a_one_byte_change_of_a_file_over_2_mib_after_a_read_is_detected() {
    for (eol, bom, at) in [("\n", false, 20), ("\r\n", true, 2_000_000)] {
        let s = setup();
        let body = over_retention(eol, bom);
        s.put("big.txt", body.as_bytes());
        let t = s.read("big.txt");
        let mut changed = body.clone().into_bytes();
        assert_eq!(changed[at], b'e', "the byte changed is inside a line's text");
        changed[at] = b'E';
        s.put("big.txt", &changed);
        let live = tag::normalize(&changed);
        let e = s.ed("big.txt", &t, "PUT 2.=2:\n+two").unwrap_err();
        assert_eq!(e.error.code, EDIT_TAG_MISMATCH, "{}", e.error.message);
        assert!(e.error.message.contains("too large to keep"), "{}", e.error.message);
        assert_eq!(e.live_tag.as_deref(), Some(live.tag.as_str()));
        assert_eq!(
            std::fs::read(s.p("big.txt")).unwrap(),
            changed,
            "a refusal leaves the file as it was"
        );
        let r = s.ed("big.txt", &t, "PUT >$:\n+tail").unwrap();
        assert!(
            r.warnings.len() == 1 && r.warnings[0].contains("stale"),
            "{:?}",
            r.warnings
        );
        let mut expect = changed.clone();
        expect.extend_from_slice(format!("tail{eol}").as_bytes());
        assert_eq!(std::fs::read(s.p("big.txt")).unwrap(), expect);
    }
}

/// Rows take the file's own line ending whatever the ops text ends its lines with; a CR inside a row is refused
/// (EDIT_BARE_CR) and nothing changes.
#[test]
fn rows_take_the_files_line_ending_and_a_bare_cr_is_refused() {
    let s = setup();
    s.put("lf.txt", b"a\nb\n");
    let t = s.read("lf.txt");
    s.ed("lf.txt", &t, "PUT 2.=2:\r\n+B\r\n+C\r\n").unwrap();
    assert_eq!(s.get("lf.txt"), "a\nB\nC\n");
    s.put("crlf.txt", b"a\r\nb\r\n");
    let t = s.read("crlf.txt");
    s.ed("crlf.txt", &t, "PUT >1:\n+x\n+y").unwrap();
    assert_eq!(s.get("crlf.txt"), "a\r\nx\r\ny\r\nb\r\n");
    let t = s.read("lf.txt");
    for ops in ["PUT 1.=1:\n+one\rtwo", "PUT 1.=1:\n+\r\r\n", "PUT >$:\n+tail\r "] {
        let (code, msg) = s.code("lf.txt", &t, ops);
        assert_eq!(code, "EDIT_BARE_CR", "{ops:?}: {msg}");
        assert!(msg.contains("ops line 2") && msg.contains("line ending"), "{msg}");
    }
    assert_eq!(s.get("lf.txt"), "a\nB\nC\n");
}

/// Handles of this process open on a deleted file under `dir`.
fn deleted_handles_under(dir: &Path) -> Vec<String> {
    let prefix = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.starts_with(&prefix) && p.ends_with("(deleted)"))
        .collect()
}

#[test]
fn a_replaced_large_file_is_let_go_after_the_call() {
    // Over the size at which the old file is released on a second thread (fileio::release): the handle Edit read
    // it through still closes, so the replaced inode is freed and nothing stays open on it.
    let s = setup();
    let body: String = (0..20_000)
        .map(|i| format!("line {i:05} of a file over half a MiB\n"))
        .collect();
    assert!(body.len() > 512 * 1024);
    s.put("big.txt", body.as_bytes());
    let t = s.read("big.txt");
    let r = s.ed("big.txt", &t, "PUT 2.=2:\n+changed").unwrap();
    assert!(s
        .get("big.txt")
        .starts_with("line 00000 of a file over half a MiB\nchanged\n"));
    let r = s.ed("big.txt", &r.tag, "REM").unwrap();
    assert!(r.deleted);
    let ws = s.roots.workspace().to_path_buf();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut open = deleted_handles_under(&ws);
    while !open.is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
        open = deleted_handles_under(&ws);
    }
    assert!(open.is_empty(), "still open: {open:?}");
}

/// `sed -i '1a item'` under a Read of `begin`, three `item` lines, `end`: the edited line moved into a run of equal
/// lines, so its place is ambiguous and the edit is refused (writing line 3 would hit the wrong `item`).
#[test]
fn a_line_added_inside_a_run_of_equal_lines_is_refused_not_guessed() {
    let s = setup();
    s.put("f.txt", b"begin\nitem\nitem\nitem\nend\n");
    let t = s.read("f.txt");
    s.put("f.txt", b"begin\nitem\nitem\nitem\nitem\nend\n");
    let (code, msg) = s.code("f.txt", &t, "PUT 3.=3:\n+ITEM");
    assert_eq!(code, EDIT_TAG_MISMATCH);
    assert!(msg.contains("so its place is ambiguous"), "{msg}");
    assert!(msg.contains("Redo the edit against the current lines below"), "{msg}");
    assert_eq!(s.get("f.txt"), "begin\nitem\nitem\nitem\nitem\nend\n");
    // The tail is certain (every alignment keeps `end` last): an insertion there lands.
    s.ed("f.txt", &t, "PUT >$:\n+after").unwrap();
    assert_eq!(s.get("f.txt"), "begin\nitem\nitem\nitem\nitem\nend\nafter\n");
}

/// A window whose copy landed far away (more rows apart than a refusal renders): the refusal shows the lines at both
/// places, so an edit redone from its rows alone finds the window twice instead of the first copy only.
#[test]
fn an_ambiguous_place_shows_both_copies_however_far_apart() {
    let s = setup();
    s.put("f.txt", b"k\nl\nm\n");
    let t = s.read("f.txt");
    let between: String = (0..200).map(|k| format!("between {k}\n")).collect();
    s.put("f.txt", format!("k\nl\nm\n{between}k\nl\nm\n").as_bytes());
    let (code, msg) = s.code("f.txt", &t, "PUT 2.=2:\n+L");
    assert_eq!(code, EDIT_TAG_MISMATCH);
    assert!(msg.contains("could be line 2 or line 205"), "{msg}");
    assert!(msg.contains("Read the file and choose one"), "{msg}");
    for row in ["1:k", "2:l", "3:m", "204:k", "205:l", "206:m"] {
        assert!(msg.lines().any(|l| l == row), "row {row} missing: {msg}");
    }
    assert!(!msg.contains("more; Read the file"), "cut off: {msg}");
}

/// A changed line far from a tail insertion does not stop it: `>$` lands after the last line with a stale warning.
#[test]
fn a_tail_insertion_is_not_refused_for_a_change_elsewhere() {
    let s = setup();
    s.put("f.txt", b"first\nsecond\nthird\n");
    let t = s.read("f.txt");
    s.put("f.txt", b"first\nSECOND\nthird\n");
    let r = s.ed("f.txt", &t, "PUT >$:\n+fourth").unwrap();
    assert_eq!(s.get("f.txt"), "first\nSECOND\nthird\nfourth\n");
    assert!(r.warnings[0].contains("was stale"), "{:?}", r.warnings);
    // And the head likewise.
    let t = s.read("f.txt");
    s.put("f.txt", b"first\nSECOND!\nthird\nfourth\n");
    s.ed("f.txt", &t, "PUT <1:\n+zeroth").unwrap();
    assert_eq!(s.get("f.txt"), "zeroth\nfirst\nSECOND!\nthird\nfourth\n");
}

/// Generated drift over duplicate-heavy files (`drift_cases`): every edit Edit carries over equals the truth (the
/// edit applied to the shown file, then the drift replayed); refusals are allowed, a conflict must be refused, and
/// a refusal leaves the file as it was.
#[test]
fn carried_over_edits_equal_the_true_alignment() {
    use super::drift_cases::{self as dc, Hunk, Rng};
    let s = setup();
    let (mut carried, mut refused, mut cases) = (0, 0, 0);
    for seed in 0..2500u64 {
        let mut rng = Rng::new(seed);
        let old = dc::file(&mut rng);
        let Some((drift, new)) = dc::drift(&mut rng, &old) else {
            continue;
        };
        let n = old.len();
        // One or two operations, in the shown file's numbering, and their hunks.
        let mut ops: Vec<(String, Hunk)> = Vec::new();
        for k in 0..1 + usize::from(rng.chance(30)) {
            let rows: Vec<String> = (0..1 + rng.below(2)).map(|r| format!("NEW{k}{r}")).collect();
            let body: String = rows.iter().map(|r| format!("\n+{r}")).collect();
            let a = 1 + rng.below(n);
            let b = (a + rng.below(2)).min(n);
            ops.push(match rng.below(6) {
                0 => (format!("PUT {a}.={b}:{body}"), (a - 1, b - a + 1, rows)),
                1 => (format!("CUT {a}.={b}"), (a - 1, b - a + 1, vec![])),
                2 => (format!("PUT >{a}:{body}"), (a, 0, rows)),
                3 => (format!("PUT <{a}:{body}"), (a - 1, 0, rows)),
                4 => (format!("PUT <1:{body}"), (0, 0, rows)),
                _ => (format!("PUT >$:{body}"), (n, 0, rows)),
            });
        }
        ops.sort_by_key(|(_, h)| (h.0, h.1));
        let hunks: Vec<Hunk> = ops.iter().map(|(_, h)| h.clone()).collect();
        if hunks.windows(2).any(|w| w[1].0 < w[0].0 + w[0].1 || w[1].0 == w[0].0) {
            continue; // overlapping or sharing a place: EDIT_RANGE_INVALID, not drift
        }
        cases += 1;
        let ops_text = ops.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>().join("\n");
        s.put("f", dc::text(&old).as_bytes());
        let t = s.read("f");
        s.put("f", dc::text(&new).as_bytes());
        let truth = dc::merge(&old, &hunks, &drift);
        let got = s.ed("f", &t, &ops_text);
        let after = s.get("f");
        match got {
            Ok(_) => {
                carried += 1;
                assert_eq!(
                    Some(after.clone()),
                    truth.as_deref().map(dc::text),
                    "seed {seed}: shown {old:?}, now {new:?}, ops {ops_text:?}: carried over wrong"
                );
            }
            Err(e) => {
                refused += 1;
                assert_eq!(
                    after,
                    dc::text(&new),
                    "seed {seed}: a refusal ({}) changed the file",
                    e.error.code
                );
            }
        }
    }
    // The generator reaches both outcomes often enough to mean something.
    assert!(
        cases > 1000 && carried > 300 && refused > 100,
        "{cases} cases, {carried} carried, {refused} refused"
    );
}
