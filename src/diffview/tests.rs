use super::*;

fn lines(n: usize, f: impl Fn(usize) -> String) -> String {
    (1..=n).map(|i| format!("{}\n", f(i))).collect()
}

fn wide(limits: Limits) -> Limits {
    Limits {
        context: 1_000_000,
        max_rows: 1_000_000,
        ..limits
    }
}

/// The old and new texts a full-context view describes (` ` and `-` rows; ` ` and `+` rows).
fn sides(text: &str) -> (String, String) {
    let (mut a, mut b) = (String::new(), String::new());
    for row in text.lines() {
        let (sign, rest) = row.split_at(1);
        let body = rest.trim_start().split_once(' ').map_or("", |(_, t)| t);
        let body = if rest.trim_start().chars().all(|c| c.is_ascii_digit()) {
            ""
        } else {
            body
        };
        match sign {
            " " => {
                a.push_str(body);
                a.push('\n');
                b.push_str(body);
                b.push('\n');
            }
            "-" => {
                a.push_str(body);
                a.push('\n');
            }
            "+" => {
                b.push_str(body);
                b.push('\n');
            }
            _ => panic!("row {row:?}"),
        }
    }
    (a, b)
}

#[test]
fn a_change_shows_numbered_rows_with_three_lines_of_context_and_gaps() {
    let before = lines(20, |i| format!("l{i}"));
    let after = before.replace("l2\n", "two\n").replace("l15\n", "");
    let v = texts(&before, &after, &LIMITS);
    assert_eq!(
        v.text,
        [
            "  1 l1", "- 2 l2", "+ 2 two", "  3 l3", "  4 l4", "  5 l5", "    ...", " 12 l12", " 13 l13", " 14 l14",
            "-15 l15", " 16 l16", " 17 l17", " 18 l18",
        ]
        .join("\n")
    );
    assert_eq!((v.added, v.removed, v.exact, v.omitted_rows), (1, 2, true, 0));
    assert_eq!((v.first_changed_line, v.before_lines, v.after_lines), (Some(2), 20, 19));
    assert_eq!(v.summary, None);
    // No change: no rows.
    let same = texts(&before, &before, &LIMITS);
    assert_eq!(
        (same.text.as_str(), same.added, same.removed, same.exact),
        ("", 0, 0, true)
    );
}

#[test]
fn full_context_rows_rebuild_both_sides() {
    // A small generator (no dependency): pseudo-random edits of a file with repeated lines.
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut next = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    for _ in 0..200 {
        let n = next(30) as usize;
        let a: Vec<String> = (0..n).map(|_| format!("x{}", next(6))).collect();
        let mut b = a.clone();
        for _ in 0..next(6) {
            match next(3) {
                0 if !b.is_empty() => {
                    let i = next(b.len() as u64) as usize;
                    b.remove(i);
                }
                1 => {
                    let i = next(b.len() as u64 + 1) as usize;
                    b.insert(i, format!("y{}", next(4)));
                }
                _ if !b.is_empty() => {
                    let i = next(b.len() as u64) as usize;
                    b[i] = format!("z{}", next(4));
                }
                _ => {}
            }
        }
        let (ta, tb) = (
            a.iter().map(|l| format!("{l}\n")).collect::<String>(),
            b.iter().map(|l| format!("{l}\n")).collect::<String>(),
        );
        let v = texts(&ta, &tb, &wide(LIMITS));
        assert!(v.exact);
        if ta == tb {
            assert_eq!(v.text, "");
            continue;
        }
        assert_eq!(sides(&v.text), (ta.clone(), tb.clone()), "{ta:?} -> {tb:?}\n{}", v.text);
        let plus = v.text.lines().filter(|r| r.starts_with('+')).count() as u64;
        let minus = v.text.lines().filter(|r| r.starts_with('-')).count() as u64;
        assert_eq!((plus, minus), (v.added, v.removed));
    }
}

#[test]
fn the_deadline_gives_counts_and_a_summary_instead_of_rows() {
    let before = lines(600, |i| format!("old {i}"));
    let after = lines(600, |i| format!("new {i}"));
    let at_once = Limits {
        deadline: Duration::ZERO,
        ..LIMITS
    };
    let v = texts(&before, &after, &at_once);
    assert_eq!(v.text, "");
    assert!(!v.exact);
    assert_eq!((v.before_lines, v.after_lines), (600, 600));
    // Upper bounds: the coarse diff still accounts for every line.
    assert!(v.added <= 600 && v.removed <= 600 && v.added + v.removed > 0);
    let s = v.summary.unwrap();
    assert!(
        s.starts_with("600 → 600 lines: too many changes to compare within 0 ms"),
        "{s}"
    );
    // The same inputs with time to spare: every line replaced, exactly.
    let patient = Limits {
        deadline: Duration::from_secs(600),
        ..LIMITS
    };
    let v = texts(&before, &after, &patient);
    assert!(v.exact);
    assert_eq!((v.added, v.removed), (600, 600));
    // An Edit's replacements are bounded the same way.
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<String> = after.lines().map(str::to_string).collect();
    let rep = [Replacement {
        start: 0,
        end: old.len(),
        lines: &new[..],
    }];
    let v = replacements(&old, &rep, &at_once);
    assert!(!v.exact && v.text.is_empty() && v.summary.is_some());
}

#[test]
fn sides_over_the_byte_limit_are_not_compared() {
    let small = Limits {
        max_bytes: 10,
        ..LIMITS
    };
    // At the limit: compared.
    let v = texts("a\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", &small);
    assert!(v.exact);
    assert_eq!((v.added, v.removed), (1, 1));
    // One byte over: not compared; the counts are the sides' lines.
    let v = texts("a\nb\nc\nd\ne\nf", "a\n", &small);
    assert!(!v.exact && v.text.is_empty());
    assert_eq!((v.added, v.removed, v.before_lines, v.after_lines), (1, 6, 6, 1));
    assert!(v
        .summary
        .unwrap()
        .contains("not compared (a side is over the 0 MiB diff limit)"));
}

#[test]
fn rows_and_line_widths_are_capped_and_the_rest_counted() {
    let capped = Limits {
        max_rows: 5,
        max_line_chars: 4,
        ..LIMITS
    };
    let v = created("abcdef\nabcd\nx\ny\nz\nw\nv\n", &capped);
    assert_eq!(v.text, "+1 abcd…\n+2 abcd\n+3 x\n+4 y\n+5 z");
    assert_eq!((v.omitted_rows, v.added, v.after_lines), (2, 7, 7));
    // Exactly at the cap: nothing omitted.
    let v = created("a\nb\nc\nd\ne\n", &capped);
    assert_eq!(v.omitted_rows, 0);
    assert_eq!(v.text.lines().count(), 5);
    // A multi-byte character at the cut stays whole.
    let v = created("ééééé\n", &capped);
    assert_eq!(v.text, "+1 éééé…");
    // A new empty file: no rows.
    let v = created("", &LIMITS);
    assert_eq!((v.text.as_str(), v.added, v.first_changed_line), ("", 0, None));
}

#[test]
fn an_edits_replacements_read_like_the_whole_file_diff() {
    let before = lines(30, |i| format!("l{i}"));
    let old: Vec<&str> = before.lines().collect();
    // Lines 5-7 become 5, FIVE-B, 7 (one line changed, one kept); line 20 is removed; two lines go after 30.
    let r1 = ["l5".to_string(), "five-b".to_string(), "l7".to_string()];
    let r3 = ["t1".to_string(), "t2".to_string()];
    let reps = [
        Replacement {
            start: 4,
            end: 7,
            lines: &r1[..],
        },
        Replacement {
            start: 19,
            end: 20,
            lines: &[][..],
        },
        Replacement {
            start: 30,
            end: 30,
            lines: &r3[..],
        },
    ];
    let v = replacements(&old, &reps, &LIMITS);
    let after = before.replace("l6\n", "five-b\n").replace("l20\n", "") + "t1\nt2\n";
    let whole = texts(&before, &after, &LIMITS);
    assert_eq!(v, whole);
    assert_eq!((v.added, v.removed, v.first_changed_line), (3, 2, Some(6)));
    assert!(v.text.contains("- 6 l6\n+ 6 five-b"), "{}", v.text);
    assert!(v.text.ends_with("+30 t1\n+31 t2"), "{}", v.text);
}

#[test]
fn a_write_preview_reads_the_file_or_shows_a_new_one() {
    let d = tempfile::TempDir::new().unwrap();
    let p = d.path().join("a.txt");
    let (created_, v) = write_preview(&p, "x\ny\n", &LIMITS);
    assert!(created_);
    assert_eq!(v.text, "+1 x\n+2 y");
    std::fs::write(&p, "x\nz\n").unwrap();
    let (created_, v) = write_preview(&p, "x\ny\n", &LIMITS);
    assert!(!created_);
    assert_eq!(v.text, " 1 x\n-2 z\n+2 y");
    std::fs::write(&p, b"\0bin").unwrap();
    let (_, v) = write_preview(&p, "x\n", &LIMITS);
    assert_eq!(v.summary.as_deref(), Some("the file on disk is binary: not compared"));
    let (_, v) = write_preview(d.path(), "x\n", &LIMITS);
    assert_eq!(v.summary.as_deref(), Some("not a regular file"));
}

#[test]
fn line_counts_follow_editors() {
    assert_eq!(count_lines(""), 0);
    assert_eq!(count_lines("a"), 1);
    assert_eq!(count_lines("a\n"), 1);
    assert_eq!(count_lines("a\nb"), 2);
    assert_eq!(count_lines("\n\n"), 2);
}
