//! Grep's tests: the tool end to end on temporary trees.

use super::search::{normalize_whole, read_whole, Normalizing, Stop, CHUNK};
use super::*;
use crate::host::snapshot::Seen;
use crate::host::snapshot::{Provenance, SnapshotStore};
use crate::host::tag::{self, TagStream};
use serde_json::json;
use tempfile::TempDir;

fn setup(files: &[(&str, &[u8])]) -> (TempDir, Roots) {
    let t = TempDir::new().unwrap();
    let ws = t.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    for (name, body) in files {
        let p = ws.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    }
    let roots = Roots::new(&ws, &t.path().join("agent"), "s").unwrap();
    (t, roots)
}

fn run(roots: &Roots, st: &mut SnapshotStore, v: Value) -> Result<GrepResult, HostError> {
    let a = GrepArgs::from_json(&v)?;
    let target = roots.resolve_inside(a.path.as_deref().unwrap_or("."))?;
    grep(roots, &target, &a, Deadline::none(), st)
}

#[test]
fn content_mode_renders_headers_rows_and_context() {
    let body = b"alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\nbeta2\n";
    let (_t, roots) = setup(&[("src/a.txt", body), ("b.txt", b"nothing\n")]);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"query": "beta", "context": 1})).unwrap();
    let tag = tag::tag_of(std::str::from_utf8(body).unwrap());
    assert_eq!(
        r.text,
        format!("[src/a.txt#{tag}]\n1-alpha\n2:beta\n3-gamma\n--\n7-eta\n8:beta2")
    );
    assert_eq!(
        r.matches,
        vec![
            GrepMatch {
                path: "src/a.txt".into(),
                line: 2,
                text: "beta".into()
            },
            GrepMatch {
                path: "src/a.txt".into(),
                line: 8,
                text: "beta2".into()
            },
        ]
    );
    assert_eq!(r.tags.get("src/a.txt"), Some(&tag));
    assert_eq!(r.files, vec!["src/a.txt"]);
    // Only matched lines count as seen.
    let Provenance::Seen(Seen::Lines(s)) = st.provenance(&roots.workspace().join("src/a.txt"), &tag) else {
        panic!("recorded")
    };
    assert_eq!(s.ranges(), &[(2, 2), (8, 8)]);
}

#[test]
fn ignore_case_literal_and_invalid_regex() {
    let (_t, roots) = setup(&[("a.txt", b"Foo(1)\nfoo(2)\nfoo\n")]);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "foo\\(", "ignoreCase": true})).unwrap();
    assert_eq!(r.matches.iter().map(|m| m.line).collect::<Vec<_>>(), vec![1, 2]);
    let lit = run(&roots, &mut st, json!({"pattern": "foo(", "literal": true})).unwrap();
    assert_eq!(lit.matches.iter().map(|m| m.line).collect::<Vec<_>>(), vec![2]);
    let e = run(&roots, &mut st, json!({"pattern": "foo("})).unwrap_err();
    assert_eq!(e.code, "INVALID_ARGUMENT");
    assert!(e.message.contains("literal: true"));
    let none = run(&roots, &mut st, json!({"pattern": "absent"})).unwrap();
    assert_eq!(
        (none.text.as_str(), none.files.len()),
        ("No matches for 'absent' in '.'.", 0)
    );
}

#[test]
fn gitignore_binary_and_glob_filters() {
    // A NUL after the first probe block still makes the file binary (the whole file is checked).
    let mut late_nul = b"needle\n".repeat(CHUNK / 7 + 1);
    late_nul.push(0);
    let (_t, roots) = setup(&[
        (".gitignore", b"build/\n"),
        ("build/out.txt", b"needle\n"),
        ("src/a.rs", b"needle\n"),
        ("src/a.md", b"needle\n"),
        ("bin.dat", b"needle\0\n"),
        ("late.bin", &late_nul),
        (".hidden", b"needle\n"),
    ]);
    let mut st = SnapshotStore::new();
    let r = run(
        &roots,
        &mut st,
        json!({"pattern": "needle", "outputMode": "filesWithMatches"}),
    )
    .unwrap();
    assert_eq!(r.files, vec![".hidden", "src/a.md", "src/a.rs"]);
    assert_eq!(r.binary_skipped, 2);
    assert!(r.text.ends_with("[2 binary file(s) skipped.]"));
    // An explicit path inside an ignored tree is still searched.
    let inside = run(&roots, &mut st, json!({"pattern": "needle", "path": "build"})).unwrap();
    assert_eq!(inside.files, vec!["build/out.txt"]);
    let g = run(&roots, &mut st, json!({"pattern": "needle", "glob": "*.rs"})).unwrap();
    assert_eq!(g.files, vec!["src/a.rs"]);
    // A named file is searched alone; the glob filters its name.
    let f = run(&roots, &mut st, json!({"pattern": "needle", "path": "src/a.md"})).unwrap();
    assert_eq!(f.files, vec!["src/a.md"]);
    let fg = run(
        &roots,
        &mut st,
        json!({"pattern": "needle", "path": "src/a.md", "glob": "*.rs"}),
    )
    .unwrap();
    assert!(fg.files.is_empty());
    let b = run(&roots, &mut st, json!({"pattern": "needle", "path": "bin.dat"})).unwrap();
    assert_eq!((b.files.len(), b.binary_skipped), (0, 1));
}

#[test]
fn the_detail_pass_searched_ahead_keeps_the_order_the_counts_and_the_tags() {
    // Enough files for the helpers to run ahead of the render, of uneven sizes (one large), with a varying number
    // of matches, so results arrive out of order and the limit falls inside the list.
    let bodies: Vec<(String, String)> = (0..120)
        .map(|k| {
            let rows = if k == 7 { 40_000 } else { 1 + k % 5 };
            let body: String = (0..rows)
                .map(|r| format!("line {r} {}\n", if r % 2 == 0 { "hit" } else { "no" }))
                .collect();
            (format!("d{}/f{k:03}.txt", k % 4), body)
        })
        .collect();
    let files: Vec<(&str, &[u8])> = bodies.iter().map(|(n, b)| (n.as_str(), b.as_bytes())).collect();
    let (_t, roots) = setup(&files);
    let mut expected: Vec<&(String, String)> = bodies.iter().collect();
    expected.sort_by(|x, y| x.0.cmp(&y.0));
    let mut st = SnapshotStore::new();
    let r = run(
        &roots,
        &mut st,
        json!({"pattern": "hit", "outputMode": "count", "limit": 100}),
    )
    .unwrap();
    assert!(r.truncated);
    assert_eq!(r.counts.len(), 100);
    for (c, (name, body)) in r.counts.iter().zip(&expected) {
        assert_eq!(&c.path, name);
        assert_eq!(c.count, body.matches("hit").count() as u64, "{name}");
        assert_eq!(r.tags[name], tag::tag_of(body), "{name}");
    }
    // Content mode: the limit of matches ends the list part-way; every shown row is from its own file, in order.
    let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": 150})).unwrap();
    assert!(r.truncated);
    assert_eq!(r.matches.len(), 150);
    let shown: Vec<&String> = expected.iter().map(|(n, _)| n).take(r.files.len()).collect();
    assert_eq!(r.files.iter().collect::<Vec<_>>(), shown);
    let mut at = 0;
    for f in &r.files {
        let body = &expected.iter().find(|(n, _)| n == f).unwrap().1;
        let rows: Vec<&GrepMatch> = r.matches[at..].iter().take_while(|m| &m.path == f).collect();
        at += rows.len();
        for m in rows {
            assert_eq!(
                body.lines().nth(m.line as usize - 1),
                Some(m.text.as_str()),
                "{f}:{}",
                m.line
            );
        }
    }
    assert_eq!(at, 150);
}

#[test]
fn count_and_files_modes_mint_tags_with_empty_seen_sets() {
    let (_t, roots) = setup(&[("a.txt", b"x\nx\ny\n"), ("b.txt", b"x\n")]);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "x", "outputMode": "count"})).unwrap();
    assert_eq!(
        r.counts,
        vec![
            GrepCount {
                path: "a.txt".into(),
                count: 2
            },
            GrepCount {
                path: "b.txt".into(),
                count: 1
            }
        ]
    );
    let ta = tag::tag_of("x\nx\ny\n");
    assert_eq!(
        r.text,
        format!(
            "[a.txt#{ta}] 2 matching lines\n[b.txt#{}] 1 matching line",
            tag::tag_of("x\n")
        )
    );
    match st.provenance(&roots.workspace().join("a.txt"), &ta) {
        Provenance::Seen(Seen::Lines(s)) => assert!(s.is_empty()),
        other => panic!("expected an empty seen set, got {other:?}"),
    }
    assert!(run(&roots, &mut st, json!({"pattern": "x", "outputMode": "lines"})).is_err());
}

#[test]
fn limits_truncate_at_their_boundary() {
    let body: String = (1..=5).map(|i| format!("hit {i}\n")).collect();
    let (_t, roots) = setup(&[
        ("a.txt", body.as_bytes()),
        ("b.txt", b"hit\n"),
        ("c/c.txt", b"hit 1\nx\nhit 2\nx\nhit 3\nx\nhit 4\n"),
    ]);
    let mut st = SnapshotStore::new();
    let exact = run(&roots, &mut st, json!({"pattern": "hit", "limit": 10})).unwrap();
    assert_eq!((exact.matches.len(), exact.truncated), (10, false));
    let cut = run(&roots, &mut st, json!({"pattern": "hit", "limit": 9})).unwrap();
    assert_eq!((cut.matches.len(), cut.truncated, cut.files.len()), (9, true, 3));
    assert!(cut.text.contains("[Showing the first 9 of 9+ matches."), "{}", cut.text);
    let one = run(&roots, &mut st, json!({"pattern": "hit", "limit": 5, "path": "a.txt"})).unwrap();
    assert_eq!((one.matches.len(), one.truncated), (5, false));
    let within = run(
        &roots,
        &mut st,
        json!({"pattern": "hit", "limit": 2, "path": "c", "context": 1}),
    )
    .unwrap();
    assert_eq!(within.matches.len(), 2);
    assert!(within.truncated && within.text.ends_with("\n3:hit 2\n4-x\n\n[Showing the first 2 of 2+ matches. Narrow the pattern, path or glob, raise limit (at most 100000), or pass total: true to count them all.]"), "{}", within.text);
    let files = run(
        &roots,
        &mut st,
        json!({"pattern": "hit", "limit": 1, "outputMode": "filesWithMatches"}),
    )
    .unwrap();
    assert_eq!((files.files, files.truncated), (vec!["a.txt".to_string()], true));
    for bad in [
        json!({"pattern": "x", "limit": 0}),
        json!({"pattern": "x", "context": MAX_CONTEXT + 1}),
    ] {
        assert_eq!(run(&roots, &mut st, bad).unwrap_err().code, "INVALID_ARGUMENT");
    }
    assert!(run(&roots, &mut st, json!({"pattern": "x", "context": MAX_CONTEXT})).is_ok());
}

#[test]
fn crlf_bom_files_match_with_read_line_numbers_and_long_lines_are_clipped() {
    let long = format!("needle{}\n", "z".repeat(MAX_LINE_CHARS));
    let (_t, roots) = setup(&[
        ("w.txt", b"\xef\xbb\xbfone\r\ntwo needle\r\nthree$\r\n"),
        ("l.txt", long.as_bytes()),
    ]);
    let mut st = SnapshotStore::new();
    let r = run(
        &roots,
        &mut st,
        json!({"pattern": "needle$|three\\$$", "path": "w.txt"}),
    )
    .unwrap();
    assert_eq!(
        r.matches.iter().map(|m| (m.line, m.text.as_str())).collect::<Vec<_>>(),
        vec![(2, "two needle"), (3, "three$")]
    );
    assert_eq!(r.tags["w.txt"], tag::tag_of("one\ntwo needle\nthree$\n"));
    let l = run(&roots, &mut st, json!({"pattern": "needle", "path": "l.txt"})).unwrap();
    assert!(l.matches[0].text.contains("line clipped at 500"));
    match st.provenance(&roots.workspace().join("l.txt"), &l.tags["l.txt"]) {
        Provenance::Seen(Seen::Lines(s)) => assert!(s.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn content_output_stops_at_the_byte_budget() {
    // 200 matched lines of 480 characters each (rows ~485 bytes): about 105 fit in 50 KiB, and limit allows 200.
    let body: String = (0..200).map(|i| format!("hit{:0>477}\n", i)).collect();
    let (_t, roots) = setup(&[("a.txt", body.as_bytes()), ("b.txt", b"hit\n")]);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": 1000})).unwrap();
    assert!(r.truncated);
    let shown = r.matches.len();
    assert!(shown > 50 && shown < 200, "{shown}");
    let body_len = r.text.find("\n\n[Showing").unwrap();
    assert!(
        body_len <= MAX_OUTPUT_BYTES && body_len + 490 > MAX_OUTPUT_BYTES,
        "{body_len}"
    );
    assert!(r.text.ends_with(&format!("[Showing the first {shown} matches (50 KiB output limit). Narrow the pattern, path or glob, or use less context.]")));
    // b.txt, after the budget, is not shown, and only shown lines are seen.
    assert_eq!(r.files, vec!["a.txt"]);
    let Provenance::Seen(Seen::Lines(s)) = st.provenance(&roots.workspace().join("a.txt"), &r.tags["a.txt"]) else {
        panic!()
    };
    assert_eq!(s.ranges(), &[(1, shown as u32)]);
}

#[test]
fn a_passed_deadline_stops_the_walk_with_tool_timeout() {
    let (_t, roots) = setup(&[("a.txt", b"needle\n"), ("d/b.txt", b"needle\n")]);
    let mut st = SnapshotStore::new();
    let a = GrepArgs::from_json(&json!({"pattern": "needle"})).unwrap();
    let e = grep(&roots, &roots.resolve(".").unwrap(), &a, Deadline::after_ms(0), &mut st).unwrap_err();
    assert_eq!(e.code, "TOOL_TIMEOUT");
    assert!(
        e.message.contains("Grep stopped after its 0 ms budget"),
        "{}",
        e.message
    );
    let ok = grep(
        &roots,
        &roots.resolve(".").unwrap(),
        &a,
        Deadline::after_ms(60_000),
        &mut st,
    )
    .unwrap();
    assert_eq!(ok.files.len(), 2);
}

#[test]
fn symlinked_files_are_not_followed_out_of_the_tree() {
    let (t, roots) = setup(&[("a.txt", b"needle\n")]);
    fs::write(t.path().join("outside.txt"), "needle\n").unwrap();
    std::os::unix::fs::symlink(t.path().join("outside.txt"), roots.workspace().join("link.txt")).unwrap();
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "needle"})).unwrap();
    assert_eq!(r.files, vec!["a.txt"]);
}

#[test]
fn the_reader_normalises_in_place_whatever_the_read_size() {
    // CRLF and lone CR split at every possible read boundary, a BOM shorter than some reads, a trailing CR.
    let raw = "\u{feff}a\r\nb\rc\r\n\r\nd\r\re\r".as_bytes();
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, raw).unwrap();
    for size in [1, 2, 3, 4, 5, 7, 64] {
        let mut ts = TagStream::new();
        let mut r = Normalizing::new(
            fs::File::open(&path).unwrap(),
            Deadline::none(),
            None,
            Some(&mut ts),
            None,
        );
        let mut got = Vec::new();
        let mut buf = vec![0; size];
        loop {
            let n = std::io::Read::read(&mut r, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "a\nb\nc\n\nd\n\ne\n",
            "read size {size}"
        );
        let tag = ts.finish(&mut |_| {}).unwrap();
        assert_eq!(tag.tag, tag::tag_of("a\nb\nc\n\nd\n\ne\n"), "read size {size}");
    }
}

#[test]
fn a_file_it_could_not_search_is_reported_never_no_matches() {
    // One line over the line cap: the searcher cannot hold it, so the file is listed as not searched.
    let mut long = vec![b'a'; MAX_LINE_BYTES + 10];
    long.extend_from_slice(b"\nneedle\n");
    let (_t, roots) = setup(&[("long.txt", &long), ("ok.txt", b"nothing\n")]);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "needle"})).unwrap();
    assert!(r.files.is_empty());
    assert!(
        r.text.starts_with("No matches for 'needle' in the files of '.' that could be searched.")
            && r.text.contains("[1 file(s) could not be searched, so matches in them are unknown:\n  long.txt: a line is longer than 16 MiB"),
        "{}",
        r.text
    );
    assert_eq!(r.unsearched.len(), 1);
    // Just under the cap it is searched and the match found.
    let mut fits = vec![b'a'; MAX_LINE_BYTES - 4096];
    fits.extend_from_slice(b"\nneedle\n");
    let (_t2, roots2) = setup(&[("fits.txt", &fits)]);
    let r2 = run(&roots2, &mut st, json!({"pattern": "needle"})).unwrap();
    assert_eq!(
        (r2.files.clone(), r2.unsearched.len()),
        (vec!["fits.txt".to_string()], 0),
        "{}",
        r2.text
    );
    assert_eq!(r2.matches[0].line, 2);
}

#[test]
fn the_deadline_is_checked_inside_a_file() {
    let (_t, roots) = setup(&[("a.txt", b"needle\n")]);
    let mut st = SnapshotStore::new();
    let a = GrepArgs::from_json(&json!({"pattern": "needle", "path": "a.txt"})).unwrap();
    // A single named file has no walk: only the per-chunk check inside the file can stop it.
    let e = grep(
        &roots,
        &roots.resolve("a.txt").unwrap(),
        &a,
        Deadline::after_ms(0),
        &mut st,
    )
    .unwrap_err();
    assert_eq!(e.code, "TOOL_TIMEOUT");
}

#[test]
fn names_with_control_characters_are_escaped_in_headers() {
    let (_t, roots) = setup(&[("x\n1:fake.txt", b"needle\n")]);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "needle"})).unwrap();
    assert!(r.text.starts_with("[x\\n1:fake.txt#"), "{}", r.text);
    assert_eq!(r.text.lines().count(), 2, "{}", r.text);
}

/// Grep of a tree while another thread swaps its folder `sub` for a symlink to an outside folder: an outside
/// file's lines never show.
#[test]
fn a_folder_swapped_for_a_symlink_is_never_searched_through() {
    let (t, roots) = setup(&[("sub/f.txt", b"needle inside\n")]);
    let outside = t.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("f.txt"), "needle OUTSIDE\n").unwrap();
    let ws = roots.workspace().to_path_buf();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let swapper = {
        let (ws, outside, stop) = (ws.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::rename(ws.join("sub"), ws.join("real"));
                let _ = std::os::unix::fs::symlink(&outside, ws.join("sub"));
                let _ = fs::remove_file(ws.join("sub"));
                let _ = fs::rename(ws.join("real"), ws.join("sub"));
            }
        })
    };
    let mut st = SnapshotStore::new();
    for _ in 0..400 {
        for path in [".", "sub", "sub/f.txt"] {
            let Ok(r) = run(&roots, &mut st, json!({"pattern": "needle", "path": path})) else {
                continue;
            };
            assert!(!r.text.contains("OUTSIDE"), "{}", r.text);
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
}

/// `n` files `f000.txt`, … holding one line `hit` each (`extra` of them two).
fn hit_files(n: usize, extra: usize) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|k| {
            let body = if k < extra { "hit\nmiss\nhit\n" } else { "miss\nhit\n" };
            (format!("f{k:03}.txt"), body.as_bytes().to_vec())
        })
        .collect()
}

fn setup_owned(files: &[(String, Vec<u8>)]) -> (TempDir, Roots) {
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    setup(&refs)
}

#[test]
fn the_walk_stops_after_the_match_that_proves_the_cut_and_total_counts_them_all() {
    // 150 files with one match and 30 with two: 210 matches in 180 files.
    let mut files = hit_files(180, 0);
    for (i, f) in files.iter_mut().enumerate().skip(150) {
        f.1 = format!("hit {i}\nmiss\nhit\n").into_bytes();
    }
    let (_t, roots) = setup_owned(&files);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "hit"})).unwrap();
    assert_eq!((r.matches.len(), r.truncated, r.complete), (100, true, false));
    // Files 1-100 are shown; the 101st holds the match that proves the list is cut, and the walk stops there.
    assert_eq!(r.searched, 101);
    assert_eq!(r.total, None);
    assert!(
        r.text.ends_with(
            "\n\n[Showing the first 100 of 100+ matches. Narrow the pattern, path or glob, raise limit (at most \
             100000), or pass total: true to count them all.]"
        ),
        "{}",
        r.text
    );
    let all = run(&roots, &mut st, json!({"pattern": "hit", "total": true})).unwrap();
    assert_eq!(
        (all.matches, all.truncated, all.complete, all.searched),
        (r.matches, true, true, 180)
    );
    assert_eq!(
        all.total,
        Some(Total {
            matches: 210,
            files: 180
        })
    );
    assert!(
        all.text.ends_with(
            "\n\n[Showing the first 100 of 210 matches in 180 files. Narrow the pattern, path or glob, raise limit \
             (at most 100000).]"
        ),
        "{}",
        all.text
    );
    // The other modes count files.
    let f = run(
        &roots,
        &mut st,
        json!({"pattern": "hit", "outputMode": "filesWithMatches", "limit": 10}),
    )
    .unwrap();
    assert_eq!((f.files.len(), f.searched, f.truncated), (10, 11, true));
    assert!(f.text.contains("\n\n[Showing the first 10 of 10+ files."), "{}", f.text);
    let c = run(
        &roots,
        &mut st,
        json!({"pattern": "hit", "outputMode": "count", "limit": 160, "total": true}),
    )
    .unwrap();
    assert_eq!(
        (c.counts.len(), c.counts[155].count, c.total),
        (
            160,
            2,
            Some(Total {
                matches: 210,
                files: 180
            })
        )
    );
    assert!(
        c.text.contains("\n\n[Showing the first 160 of 180 files. "),
        "{}",
        c.text
    );
    // A `total` call whose list is not cut counts the same and adds no notice.
    let whole = run(&roots, &mut st, json!({"pattern": "hit", "limit": 1000, "total": true})).unwrap();
    assert_eq!(
        (whole.matches.len(), whole.truncated, whole.total.unwrap().matches),
        (210, false, 210)
    );
    assert!(!whole.text.contains("[Showing"));
    assert_eq!(
        run(&roots, &mut st, json!({"pattern": "hit", "total": "yes"}))
            .unwrap_err()
            .code,
        "INVALID_ARGUMENT"
    );
}

#[test]
fn limit_boundaries_one_below_at_and_one_above_within_a_file_and_across_files() {
    let mut st = SnapshotStore::new();
    for (label, files) in [
        (
            "across files",
            (1..=6)
                .map(|k| (format!("d/f{k}.txt"), b"hit\n".to_vec()))
                .collect::<Vec<_>>(),
        ),
        (
            "within a file",
            vec![("one.txt".to_string(), b"hit\nhit\nhit\nhit\nhit\nhit\n".to_vec())],
        ),
    ] {
        for (matches, limit) in [(6u64, 7u64), (6, 6), (6, 5)] {
            let (_t, roots) = setup_owned(&files);
            let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": limit})).unwrap();
            let shown = matches.min(limit);
            assert_eq!(r.matches.len() as u64, shown, "{label}, limit {limit}");
            assert_eq!(r.truncated, matches > limit, "{label}, limit {limit}");
            // At or under the limit, only searching every file tells that nothing more matches.
            assert_eq!(r.complete, matches <= limit, "{label}, limit {limit}");
            let cut = format!("[Showing the first {limit} of {limit}+ matches.");
            assert_eq!(
                r.text.contains(&cut),
                matches > limit,
                "{label}, limit {limit}: {}",
                r.text
            );
            let t = run(
                &roots,
                &mut st,
                json!({"pattern": "hit", "limit": limit, "total": true}),
            )
            .unwrap();
            assert_eq!((t.matches, t.truncated), (r.matches.clone(), r.truncated), "{label}");
            assert_eq!(t.total.map(|t| t.matches), Some(matches), "{label}");
        }
    }
}

#[test]
fn binary_files_are_counted_up_to_where_the_search_stopped() {
    let mut files = hit_files(40, 0);
    files.push(("a.bin".into(), b"hit\0\n".to_vec()));
    files.push(("z.bin".into(), b"hit\0\n".to_vec()));
    let (_t, roots) = setup_owned(&files);
    let mut st = SnapshotStore::new();
    let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": 10})).unwrap();
    assert_eq!((r.binary_skipped, r.complete), (1, false));
    assert!(
        r.text
            .ends_with("\n[1 binary file(s) skipped before the search stopped.]"),
        "{}",
        r.text
    );
    let all = run(&roots, &mut st, json!({"pattern": "hit", "limit": 10, "total": true})).unwrap();
    assert_eq!((all.binary_skipped, all.complete), (2, true));
    assert!(all.text.ends_with("\n[2 binary file(s) skipped.]"), "{}", all.text);
}

/// One generated file: its path and its lines (each `hit`, `miss` or `hit hit`: a line matches once).
fn tree_strategy() -> impl Strategy<Value = Vec<(String, Vec<&'static str>)>> {
    let name = proptest::sample::select(vec!["a", "a.x", "a-x", "b", "a b", "é", "a0"]);
    let path = proptest::collection::vec(name, 1..4).prop_map(|p| p.join("/"));
    let lines = proptest::collection::vec(proptest::sample::select(vec!["hit", "miss", "hit hit", "miss"]), 0..8);
    proptest::collection::vec((path, lines), 1..20)
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    /// On random trees (names that are prefixes of each other, on both sides of `/`), the early-stopping search shows
    /// exactly the first `limit` matches (or files) of the full search in path order, says the list is cut exactly
    /// when it is, and a `total` call counts what the full search finds.
    #[test]
    fn the_early_stop_shows_the_first_limit_matches_of_the_full_search(
        tree in tree_strategy(),
        limit_pick in 0usize..64,
    ) {
        let t = TempDir::new().unwrap();
        let ws = t.path().join("ws");
        fs::create_dir_all(&ws).unwrap();
        let mut made: Vec<(String, Vec<&str>)> = Vec::new();
        for (rel, lines) in tree {
            let p = ws.join(&rel);
            if fs::create_dir_all(p.parent().unwrap()).is_err() || p.exists() {
                continue;
            }
            let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
            fs::write(&p, body).unwrap();
            made.push((rel, lines));
        }
        let roots = Roots::new(&ws, &t.path().join("agent"), "s").unwrap();
        made.sort();
        // The model: every matching line in path order, then line order.
        let expected: Vec<(String, u64)> = made
            .iter()
            .flat_map(|(rel, lines)| {
                lines.iter().enumerate().filter(|(_, l)| l.contains("hit")).map(move |(i, _)| (rel.clone(), i as u64 + 1))
            })
            .collect();
        let expected_files: Vec<String> = made.iter().filter(|(_, ls)| ls.iter().any(|l| l.contains("hit"))).map(|(r, _)| r.clone()).collect();
        let mut st = SnapshotStore::new();
        let full = run(&roots, &mut st, json!({"pattern": "hit", "limit": MAX_LIMIT})).unwrap();
        let got: Vec<(String, u64)> = full.matches.iter().map(|m| (m.path.clone(), m.line)).collect();
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(&full.files, &expected_files);
        let limit = 1 + limit_pick % (expected.len() + 2);
        let r = run(&roots, &mut st, json!({"pattern": "hit", "limit": limit})).unwrap();
        let shown: Vec<(String, u64)> = r.matches.iter().map(|m| (m.path.clone(), m.line)).collect();
        prop_assert_eq!(&shown[..], &expected[..limit.min(expected.len())]);
        prop_assert_eq!(r.truncated, expected.len() > limit);
        for m in &r.matches {
            prop_assert_eq!(&r.tags[&m.path], &full.tags[&m.path]);
        }
        let counted = run(&roots, &mut st, json!({"pattern": "hit", "limit": limit, "total": true})).unwrap();
        prop_assert_eq!(&counted.matches, &r.matches);
        prop_assert_eq!(counted.total, Some(Total { matches: expected.len() as u64, files: expected_files.len() as u64 }));
        for mode in ["filesWithMatches", "count"] {
            let f = run(&roots, &mut st, json!({"pattern": "hit", "limit": limit, "outputMode": mode})).unwrap();
            prop_assert_eq!(&f.files[..], &expected_files[..limit.min(expected_files.len())]);
            prop_assert_eq!(f.truncated, expected_files.len() > limit);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    /// A small file read whole and normalised in place gives exactly the text the streaming reader gives (BOM, CR,
    /// CRLF, a CR or CRLF at the end, a NUL anywhere), and the same verdict on a NUL, whatever the buffer held before.
    #[test]
    fn a_file_read_whole_reads_as_the_streaming_reader_reads_it(
        pieces in proptest::collection::vec(
            proptest::sample::select(vec!["a", "\r", "\n", "\r\n", "\u{feff}", "\0", "é", "xy "]),
            0..40,
        ),
        stale in proptest::collection::vec(proptest::sample::select(vec![b'q', b'\r', 0u8]), 0..64),
    ) {
        let t = TempDir::new().unwrap();
        let path = t.path().join("f");
        let raw: String = pieces.concat();
        fs::write(&path, &raw).unwrap();
        let mut streamed = Vec::new();
        let mut r = Normalizing::new(fs::File::open(&path).unwrap(), Deadline::none(), None, None, None);
        let streamed = std::io::Read::read_to_end(&mut r, &mut streamed).map(|_| streamed);
        let mut buf = stale;
        let mut f = fs::File::open(&path).unwrap();
        let n = read_whole(&mut f, &mut buf, raw.len()).map_err(|_| ()).unwrap();
        prop_assert_eq!(n, raw.len());
        match (normalize_whole(&mut buf[..n]), streamed) {
            (Ok(whole), Ok(streamed)) => prop_assert_eq!(whole, &streamed[..]),
            (Err(Stop::Binary), Err(_)) => prop_assert!(matches!(r.stop, Some(Stop::Binary))),
            (w, s) => prop_assert!(false, "whole {:?} streamed {:?}", w.map(|x| x.to_vec()), s),
        }
    }
}

/// The walk's relative paths, taken from bytes when the path is `root` and plain names, are what
/// `Path::strip_prefix` gives for every shape of root and path (doubled or trailing slashes, `.` segments, a prefix
/// that ends inside a name, the root itself, non-UTF-8 names).
#[test]
fn relative_paths_beneath_the_root_are_those_of_strip_prefix() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let roots = ["/", "/a", "/a/", "/a/b", "/a/./b", "a", ".", "/a//b", "/ab"];
    let rests = [
        "", "x", "x/y", "/x", "x//y", "./x", "x/./y", "x/.", ".x/y.", "x/", "b", "b/c", "bc/d", "é/ü", "..", "x/../y",
    ];
    for r in roots {
        for rest in rests {
            for sep in ["", "/"] {
                let p = format!("{r}{sep}{rest}");
                let want = Path::new(&p).strip_prefix(r).ok().and_then(|x| x.to_str());
                assert_eq!(
                    super::search::rel_beneath(Path::new(r), Path::new(&p)),
                    want,
                    "root {r:?} path {p:?}"
                );
            }
        }
    }
    let bad = Path::new(OsStr::from_bytes(b"/a/x\xff/y"));
    assert_eq!(super::search::rel_beneath(Path::new("/a"), bad), None);
}
