//! Content tags and the `[path#TAG]` + `N:text` render (docs/spec/host-tools.md "Read, Grep, Write and the
//! line-anchored Edit"). A tag is 4 uppercase hex digits of the last two bytes of the SHA-256 of the file's text
//! after normalisation: leading BOM stripped, CRLF/CR converted to LF, and, for hashing only, trailing spaces, tabs
//! and CRs trimmed from every line. It is an index for the model, never an identity: callers that could corrupt a
//! file compare full text (`Normalized::digest`), or its fast fingerprint (`Normalized::fp`) to learn only that a
//! file is still the very text that was recorded.

use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// The UTF-8 byte order mark.
pub const BOM: &str = "\u{feff}";

/// Lines longer than this many characters are clipped in Read output and do not count as seen.
pub const MAX_LINE_CHARS: usize = 16_384;

/// A file's text as the tools see it: BOM stripped, line endings LF, invalid UTF-8 replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    pub text: String,
    /// The tag of `text` (4 uppercase hex digits).
    pub tag: String,
    /// SHA-256 of `text` exactly (no trimming): the identity used where a tag collision could corrupt a file.
    pub digest: [u8; 32],
    /// XXH3-128 of `text` exactly: a fast, non-cryptographic fingerprint that only ever answers "is this still the
    /// recorded text?" (equal: it is; different: the caller takes the full path with `digest`). See [`fingerprint`].
    pub fp: u128,
}

/// Strips a leading BOM and converts CRLF and lone CR to LF; borrows when there is nothing to change.
pub fn normalize_str(s: &str) -> Cow<'_, str> {
    let s = s.strip_prefix(BOM).unwrap_or(s);
    if !s.contains('\r') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Decodes file bytes (lossy UTF-8) and normalises them; computes the tag and the identity digest.
pub fn normalize(bytes: &[u8]) -> Normalized {
    normalize_owned(bytes.to_vec())
}

/// `normalize` taking the bytes: valid UTF-8 without a BOM or CR is used in place (no copy of a large file).
pub fn normalize_owned(bytes: Vec<u8>) -> Normalized {
    let decoded = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let text = match normalize_str(&decoded) {
        Cow::Borrowed(b) if b.len() == decoded.len() => None,
        other => Some(other.into_owned()),
    }
    .unwrap_or(decoded);
    normalized_with_tag(text)
}

/// `normalize` of text already known to be UTF-8 (Edit's output): no validation pass, no copy without BOM or CR.
pub fn normalize_string(s: String) -> Normalized {
    let text = match normalize_str(&s) {
        Cow::Borrowed(b) if b.len() == s.len() => None,
        other => Some(other.into_owned()),
    }
    .unwrap_or(s);
    normalized_with_tag(text)
}

/// The tag of normalized `text` whose SHA-256 is `digest` (one hash when no line has trailing whitespace).
pub fn tag_with_digest(text: &str, digest: &[u8; 32]) -> String {
    if needs_trim(text) {
        tag_of_normalized(text)
    } else {
        format!("{:02X}{:02X}", digest[30], digest[31])
    }
}

/// Hashes normalized text: its identity digest, its tag and its fingerprint.
pub fn normalized_with_tag(text: String) -> Normalized {
    let (digest, tag) = digest_and_tag(&text);
    let fp = fingerprint(&text);
    Normalized { text, tag, digest, fp }
}

/// The fingerprint of normalized `text`: XXH3-128 of its bytes exactly (several times cheaper than its SHA-256).
/// Used only to recognise a text already recorded with this fingerprint (docs/host.md "Edit", "The live file's
/// fingerprint"): an accidental 128-bit collision is negligible, a forged one needs someone who can already write the
/// file (and so put anything in it), and a different fingerprint always takes the full path.
pub fn fingerprint(text: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes())
}

/// The identity digest (SHA-256 of `text` exactly) and the tag of normalized `text`. Most files have no trailing
/// whitespace: then the trimmed text is the text, and one hash serves both.
pub fn digest_and_tag(text: &str) -> ([u8; 32], String) {
    let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    (digest, tag_with_digest(text, &digest))
}

/// Whether any line of normalized text ends in a space, tab or CR (so the tag's trimming changes the text).
fn needs_trim(text: &str) -> bool {
    let b = text.as_bytes();
    let trailing = |i: usize| matches!(b[i], b' ' | b'\t' | b'\r');
    if !b.is_empty() && trailing(b.len() - 1) {
        return true;
    }
    memchr::memchr_iter(b'\n', b).any(|p| p > 0 && trailing(p - 1))
}

/// The tag of already normalised text: every line's trailing spaces, tabs and CRs trimmed, lines rejoined by LF.
pub fn tag_of_normalized(text: &str) -> String {
    let mut h = Sha256::new();
    let mut first = true;
    for line in text.split('\n') {
        if !first {
            h.update(b"\n");
        }
        first = false;
        h.update(line.trim_end_matches([' ', '\t', '\r']).as_bytes());
    }
    let d = h.finalize();
    format!("{:02X}{:02X}", d[30], d[31])
}

/// The tag of arbitrary text (normalised first).
pub fn tag_of(text: &str) -> String {
    tag_of_normalized(&normalize_str(text))
}

/// The file's lines: split on LF, a final newline does not start an extra line, empty text has no lines.
pub fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// The header every file render starts with: `[path#TAG]`.
pub fn header(shown: &str, tag: &str) -> String {
    format!("[{shown}#{tag}]")
}

/// Whether `tag` has the form of a tag (4 hex digits; lowercase accepted and compared uppercase).
pub fn is_tag(tag: &str) -> bool {
    tag.len() == 4 && tag.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Clips `line` to `max` characters; the flag says whether it was clipped.
pub fn clip_line(line: &str, max: usize) -> (Cow<'_, str>, bool) {
    match line.char_indices().nth(max) {
        None => (Cow::Borrowed(line), false),
        Some((cut, _)) => {
            let total = line.chars().count();
            (
                Cow::Owned(format!(
                    "{} [… line clipped at {max} of {total} characters]",
                    &line[..cut]
                )),
                true,
            )
        }
    }
}

/// One numbered row, `N:text`, with N the absolute 1-based line number.
pub fn row(out: &mut String, n: usize, text: &str) {
    use std::fmt::Write;
    let _ = write!(out, "{n}:{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_is_last_two_digest_bytes_uppercase() {
        // sha256("") = e3b0…b855; sha256("hello\n") = 5891…be03.
        assert_eq!(tag_of(""), "B855");
        assert_eq!(tag_of("hello\n"), "BE03");
        assert!(is_tag(&tag_of("x")) && tag_of("x").chars().all(|c| !c.is_ascii_lowercase()));
    }

    #[test]
    fn bom_crlf_cr_and_trailing_whitespace_do_not_change_the_tag() {
        let base = tag_of("fn a() {\n    b();\n}\n");
        for variant in [
            "\u{feff}fn a() {\n    b();\n}\n",
            "fn a() {\r\n    b();\r\n}\r\n",
            "fn a() {\r    b();\r}\r",
            "fn a() {  \n    b();\t\n}\n",
            "\u{feff}fn a() { \t\r\n    b();   \r\n}\r\n",
        ] {
            assert_eq!(tag_of(variant), base, "{variant:?}");
        }
    }

    #[test]
    fn content_changes_change_the_tag_and_the_digest() {
        let a = normalize(b"a\nb\n");
        let b = normalize(b"a\nc\n");
        assert_ne!(a.tag, b.tag);
        assert_ne!(a.digest, b.digest);
        // Leading whitespace and the final newline are content.
        assert_ne!(tag_of("  a\n"), tag_of("a\n"));
        assert_ne!(tag_of("a\n"), tag_of("a"));
        // Trailing whitespace is trimmed for the tag only: the digest still tells the texts apart.
        let t1 = normalize(b"a \n");
        let t2 = normalize(b"a\n");
        assert_eq!(t1.tag, t2.tag);
        assert_ne!(t1.digest, t2.digest);
        assert_ne!(t1.fp, t2.fp);
        assert_ne!(a.fp, b.fp);
        // The fingerprint is of the normalized text: a CRLF or BOM variant of the same text is the same text.
        assert_eq!(normalize(b"\xef\xbb\xbfa\r\nb\r\n").fp, normalize(b"a\nb\n").fp);
        assert_eq!(a.fp, fingerprint("a\nb\n"));
    }

    #[test]
    fn the_one_hash_fast_path_agrees_with_the_trimming_hash() {
        for text in [
            "", "a", "a\n", "a \nb", "a\nb\t", "a\n\n", " a\n b\n", "x\r", "\n \n", "é \nü",
        ] {
            let n = normalize(text.as_bytes());
            assert_eq!(n.tag, tag_of_normalized(&n.text), "{text:?}");
            assert_eq!(n.tag, tag_of(text), "{text:?}");
        }
        assert!(!needs_trim("a\nb\n") && needs_trim("a \nb") && needs_trim("a\nb\t") && !needs_trim(""));
        // Owned input is used in place; a BOM or CR still normalises.
        assert_eq!(normalize_owned(b"\xef\xbb\xbfa\r\n".to_vec()).text, "a\n");
        assert_eq!(normalize_owned(b"plain\n".to_vec()).text, "plain\n");
    }

    #[test]
    fn normalize_strips_bom_and_line_endings_only() {
        let n = normalize(b"\xef\xbb\xbfa\r\nb\rc\n\xef\xbb\xbf");
        assert_eq!(n.text, "a\nb\nc\n\u{feff}");
        assert!(matches!(normalize_str("plain\n"), Cow::Borrowed(_)));
        assert_eq!(normalize(b"bad \xff byte").text, "bad \u{fffd} byte");
    }

    #[test]
    fn lines_split_without_a_phantom_last_line() {
        assert_eq!(lines(""), Vec::<&str>::new());
        assert_eq!(lines("a"), vec!["a"]);
        assert_eq!(lines("a\n"), vec!["a"]);
        assert_eq!(lines("a\n\n"), vec!["a", ""]);
        assert_eq!(lines("\n"), vec![""]);
    }

    proptest::proptest! {
        /// Re-encoding a text (BOM, CRLF or CR endings, trailing spaces/tabs) never changes its tag, and
        /// normalisation only drops the BOM and turns the endings into LF.
        #[test]
        fn tags_ignore_bom_line_endings_and_trailing_whitespace(
            lines in proptest::collection::vec("[a-z é\t{}]{0,12}", 0..12),
            final_newline: bool,
            bom: bool,
            ending in 0usize..3,
            pads in proptest::collection::vec("[ \t]{0,3}", 12),
        ) {
            let eol = ["\n", "\r\n", "\r"][ending];
            let plain = lines.join("\n") + if final_newline && !lines.is_empty() { "\n" } else { "" };
            let mut encoded = String::from(if bom { BOM } else { "" });
            for (i, l) in lines.iter().enumerate() {
                encoded.push_str(l);
                encoded.push_str(&pads[i]);
                if i + 1 < lines.len() || final_newline {
                    encoded.push_str(eol);
                }
            }
            let n = normalize(encoded.as_bytes());
            proptest::prop_assert_eq!(&n.tag, &tag_of(&plain), "{:?} vs {:?}", encoded, plain);
            // The normalized text is the encoded one with the BOM dropped and LF endings, padding kept.
            let expected = encoded.strip_prefix(BOM).unwrap_or(&encoded).replace(eol, "\n");
            proptest::prop_assert_eq!(&n.text, &expected);
        }
    }

    #[test]
    fn header_rows_and_clipping_render() {
        assert_eq!(header("src/a.rs", "0A1B"), "[src/a.rs#0A1B]");
        let mut s = String::new();
        row(&mut s, 42, "x: y");
        assert_eq!(s, "42:x: y");
        let exact = "é".repeat(MAX_LINE_CHARS);
        assert!(!clip_line(&exact, MAX_LINE_CHARS).1);
        let long = "é".repeat(MAX_LINE_CHARS + 1);
        let (c, clipped) = clip_line(&long, MAX_LINE_CHARS);
        assert!(clipped);
        assert!(c.starts_with(&exact) && c.ends_with(&format!("{} characters]", MAX_LINE_CHARS + 1)));
        assert!(!is_tag("12G4") && !is_tag("123") && is_tag("ab12"));
    }
}
