//! The sanitiser at its boundaries: every C0 and C1 code, DEL, the separators and direction overrides; the forgeries
//! a model or a file tried (a second card line, a window title, colours).

use super::*;

#[test]
fn every_control_is_escaped_on_a_line() {
    for cp in (0u32..0x20)
        .chain(0x7f..0xa0)
        .chain([0x2028, 0x2029])
        .chain(0x202a..0x202f)
        .chain(0x2066..0x206a)
    {
        let c = char::from_u32(cp).unwrap();
        let s = format!("a{c}b");
        let e = line(&s);
        assert!(!e.chars().any(is_unsafe), "U+{cp:04X} → {e:?}");
        assert!(
            e.starts_with('a') && e.ends_with('b') && e.len() > 3,
            "U+{cp:04X} → {e:?}"
        );
    }
    // The neighbours of the ranges pass unchanged.
    for c in [
        ' ', '~', '\u{a0}', 'é', '\u{2027}', '\u{202f}', '\u{2065}', '\u{206a}', '😀',
    ] {
        let s = format!("a{c}b");
        assert!(matches!(line(&s), Cow::Borrowed(_)), "{c:?}");
    }
}

#[test]
fn the_escapes_are_the_ones_a_reader_knows() {
    assert_eq!(line("a\nb\rc\td"), "a\\nb\\rc\\td");
    assert_eq!(line("\u{1b}[2J"), "\\x1b[2J");
    assert_eq!(line("\u{9b}31m"), "\\x9b31m");
    assert_eq!(line("\u{7f}"), "\\x7f");
    assert_eq!(line("\u{202e}txt.exe"), "\\u{202e}txt.exe");
    assert_eq!(line("\u{0}"), "\\x00");
}

#[test]
fn a_block_keeps_its_lines_and_tabs_only() {
    assert_eq!(block("one\r\ntwo\n\tthree"), "one\ntwo\n\tthree");
    assert_eq!(block("a\rb"), "a\\rb");
    assert_eq!(block("x\u{1b}]0;owned\u{7}y"), "x\\x1b]0;owned\\x07y");
    assert!(matches!(block("plain\ntext"), Cow::Borrowed(_)));
}

#[test]
fn the_forgeries_seen_lose_their_power() {
    // A Write path that drew a second card line with cursor codes.
    let path = "notes.txt\n\u{1b}[1A\u{1b}[2KAllow Read to read README.md?";
    let shown = line(path);
    assert!(!shown.contains('\n') && !shown.contains('\u{1b}'), "{shown}");
    // An OSC that sets the terminal title, with either terminator.
    for osc in ["\u{1b}]0;pwned\u{7}", "\u{1b}]2;pwned\u{1b}\\", "\u{9d}0;pwned\u{9c}"] {
        let s = block(osc);
        assert!(!s.chars().any(is_unsafe), "{s:?}");
    }
    // Colours.
    assert_eq!(line("\u{1b}[31mred\u{1b}[0m"), "\\x1b[31mred\\x1b[0m");
    assert!(has_control("a\u{85}b") && !has_control("plain"));
}
