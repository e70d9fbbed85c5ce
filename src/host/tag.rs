//! Content tags and the `[path#TAG]` + `N:text` render (docs/spec/host-tools.md "Read, Grep, Write and the
//! line-anchored Edit"). A tag is 4 uppercase hex digits of the last two bytes of the SHA-256 of the file's text
//! after normalisation: leading BOM stripped, CRLF/CR converted to LF, and, for hashing only, trailing spaces, tabs
//! and CRs trimmed from every line. It is an index for the model, never an identity: callers that could corrupt a
//! file compare full text (`Normalized::digest`), or its fast fingerprint (`Normalized::fp`) to learn only that a
//! file is still the very text that was recorded.
//!
//! Over 600 lines only with its inline tests (the code itself is about 430 lines).

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
    if let Some(b) = normal_in_place(s) {
        return Cow::Borrowed(b);
    }
    let s = s.strip_prefix(BOM).unwrap_or(s);
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

/// The normalised text of `s` when it is a slice of `s` (no CR in it; a leading BOM is cut off), so a caller that
/// only needs to hash it can skip [`normalize_str`]'s copy. One `memchr` pass (`str::contains` is about three times
/// slower on a large file).
pub fn normal_in_place(s: &str) -> Option<&str> {
    let s = s.strip_prefix(BOM).unwrap_or(s);
    memchr::memchr(b'\r', s.as_bytes()).is_none().then_some(s)
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
    tag_given(text, digest, needs_trim(text))
}

/// [`tag_with_digest`] when [`needs_trim`] of `text` is already known (`trim`), e.g. taken on another thread.
pub fn tag_given(text: &str, digest: &[u8; 32], trim: bool) -> String {
    if trim {
        tag_of_normalized(text)
    } else {
        format!("{:02X}{:02X}", digest[30], digest[31])
    }
}

/// SHA-256 of `text` exactly: the identity digest of normalized text.
pub fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
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
    let d = digest(text);
    (d, tag_with_digest(text, &d))
}

/// Whether any line of normalized text ends in a space, tab or CR (so the tag's trimming changes the text). Three
/// substring searches: a search per line end costs about three times as much on a file of short lines.
pub fn needs_trim(text: &str) -> bool {
    let b = text.as_bytes();
    if matches!(b.last(), Some(b' ' | b'\t' | b'\r')) {
        return true;
    }
    [&b" \n"[..], b"\t\n", b"\r\n"]
        .iter()
        .any(|n| memchr::memmem::find(b, n).is_some())
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

/// A file name as the tools render it (docs/host.md "Names in output"): control characters (LF, CR, tab, ESC, DEL,
/// the C1 range and the line/paragraph separators) are written as `\n`, `\r`, `\t` or `\u{XX}`, and a backslash that
/// begins such an escape is doubled, so a name can never start a fake row or header. Borrows a name that needs none.
pub fn escape_name(name: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() || c == '\u{2028}' || c == '\u{2029}';
    if !name.chars().any(bad) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if bad(c) => out.push_str(&format!("\\u{{{:X}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
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

/// Most alternating runs of trailing spaces and tabs one line may hold while [`TagStream`] waits to learn whether
/// they end the line (each run costs 16 bytes; no real file comes near it).
pub const MAX_PENDING_WS_RUNS: usize = 65_536;

/// The tag, digest, length and fingerprint of a file's normalized text, computed without holding the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    pub tag: String,
    pub digest: [u8; 32],
    /// Length of the normalized text in bytes.
    pub len: u64,
    pub fp: u128,
}

impl Tagged {
    /// The same facts of text held in memory.
    pub fn of(norm: &Normalized) -> Tagged {
        Tagged {
            tag: norm.tag.clone(),
            digest: norm.digest,
            len: norm.text.len() as u64,
            fp: norm.fp,
        }
    }
}

/// A line of trailing whitespace too irregular to tag streaming (over [`MAX_PENDING_WS_RUNS`] runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooIrregular;

/// [`normalize_owned`] over a stream of raw chunks, in constant memory: lossy UTF-8 decoding (an incomplete sequence
/// at a chunk's end waits for the next chunk), the leading BOM dropped, CRLF and lone CR as LF. The normalized text is
/// handed to a callback piece by piece and hashed on the way, so a file of any size gets the tag, digest and
/// fingerprint Read would compute in memory (docs/host.md "Large files").
pub struct TagStream {
    /// Raw bytes not yet decoded: at most a BOM's worth at the start, or an incomplete UTF-8 sequence.
    carry: Vec<u8>,
    bom_done: bool,
    /// The last normalized byte came from a CR: a LF starting the next piece belongs to it.
    after_cr: bool,
    digest: Sha256,
    /// The tag's hasher, once the trimmed text differs from the text (until then the digest's state is the tag's).
    trim: Option<Sha256>,
    fp: xxhash_rust::xxh3::Xxh3Default,
    len: u64,
    /// Spaces and tabs at the end of the text seen so far, run-length coded: fed to the digest once it is known
    /// whether they end their line (then the tag skips them) or not.
    ws: Vec<(u8, u64)>,
    irregular: bool,
}

impl Default for TagStream {
    fn default() -> Self {
        Self::new()
    }
}

impl TagStream {
    pub fn new() -> TagStream {
        TagStream {
            carry: Vec::new(),
            bom_done: false,
            after_cr: false,
            digest: Sha256::new(),
            trim: None,
            fp: xxhash_rust::xxh3::Xxh3Default::new(),
            len: 0,
            ws: Vec::new(),
            irregular: false,
        }
    }

    /// Feeds raw file bytes; `text` receives the normalized text they complete (valid UTF-8, LF endings).
    pub fn push(&mut self, raw: &[u8], text: &mut dyn FnMut(&[u8])) {
        self.decode(raw, false, text);
    }

    /// Ends the stream (an incomplete sequence at the very end decodes as U+FFFD) and returns the hashes.
    pub fn finish(mut self, text: &mut dyn FnMut(&[u8])) -> Result<Tagged, TooIrregular> {
        self.decode(&[], true, text);
        // Whitespace at the end of the text ends its (last) line: the tag trims it.
        self.end_line();
        if self.irregular {
            return Err(TooIrregular);
        }
        let digest: [u8; 32] = self.digest.clone().finalize().into();
        let t: [u8; 32] = self.trim.unwrap_or(self.digest).finalize().into();
        Ok(Tagged {
            tag: format!("{:02X}{:02X}", t[30], t[31]),
            digest,
            len: self.len,
            fp: self.fp.digest128(),
        })
    }

    fn decode(&mut self, raw: &[u8], last: bool, text: &mut dyn FnMut(&[u8])) {
        let joined;
        let mut data: &[u8] = if self.carry.is_empty() {
            raw
        } else {
            let mut c = std::mem::take(&mut self.carry);
            c.extend_from_slice(raw);
            joined = c;
            &joined
        };
        if !self.bom_done {
            if data.len() < BOM.len() && !last && BOM.as_bytes().starts_with(data) {
                self.carry = data.to_vec();
                return;
            }
            self.bom_done = true;
            data = data.strip_prefix(BOM.as_bytes()).unwrap_or(data);
        }
        let mut cut = data.len();
        if !last {
            // Cut before the last lead byte of the final four: decoding never depends on what follows a lead byte's
            // predecessor, so the two halves decode exactly as the whole would.
            let from = data.len().saturating_sub(4);
            if let Some(i) = data[from..].iter().rposition(|&b| b & 0xC0 != 0x80) {
                if data[from + i] >= 0x80 {
                    cut = from + i;
                }
            }
        }
        let (now, rest) = data.split_at(cut);
        // Valid UTF-8 (nearly every file) is checked by the fast validator and passed on as is; only invalid text
        // takes the lossy decoder, which walks it chunk by chunk at a fraction of the speed.
        match std::str::from_utf8(now) {
            Ok(valid) => self.line_endings(valid.as_bytes(), text),
            Err(_) => self.line_endings(String::from_utf8_lossy(now).as_bytes(), text),
        }
        self.carry = rest.to_vec();
    }

    /// CRLF and lone CR become LF; hands the result on.
    fn line_endings(&mut self, mut s: &[u8], text: &mut dyn FnMut(&[u8])) {
        if self.after_cr && !s.is_empty() {
            self.after_cr = false;
            if s[0] == b'\n' {
                s = &s[1..];
            }
        }
        while let Some(i) = memchr::memchr(b'\r', s) {
            self.emit(&s[..i], text);
            self.emit(b"\n", text);
            if i + 1 == s.len() {
                self.after_cr = true;
                return;
            }
            s = if s[i + 1] == b'\n' { &s[i + 2..] } else { &s[i + 1..] };
        }
        self.emit(s, text);
    }

    fn emit(&mut self, s: &[u8], text: &mut dyn FnMut(&[u8])) {
        if s.is_empty() {
            return;
        }
        text(s);
        self.fp.update(s);
        self.len += s.len() as u64;
        // Lines that end in neither a space nor a tab (nearly all) are hashed the same for the digest and the tag, so
        // the runs between the others go to the hashers in one piece, found by searching for " \n" and "\t\n" rather
        // than visiting every line. A first line that continues whitespace pending from the last piece, a line that
        // ends in whitespace, and the unfinished last line take the line-by-line path.
        let mut done = 0;
        if !self.ws.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', s) else {
                self.segment(s);
                return;
            };
            self.segment(&s[..nl]);
            self.end_line();
            self.hash(b"\n");
            done = nl + 1;
        }
        let Some(last_nl) = memchr::memrchr(b'\n', &s[done..]).map(|k| done + k) else {
            self.segment(&s[done..]);
            return;
        };
        let from = done;
        let body = &s[from..=last_nl];
        let mut spaces = memchr::memmem::find_iter(body, b" \n").map(|k| from + k + 1).peekable();
        let mut tabs = memchr::memmem::find_iter(body, b"\t\n")
            .map(|k| from + k + 1)
            .peekable();
        loop {
            let nl = match (spaces.peek(), tabs.peek()) {
                (Some(&a), Some(&b)) if a < b => spaces.next(),
                (Some(_), None) => spaces.next(),
                (_, Some(_)) => tabs.next(),
                (None, None) => None,
            };
            let Some(nl) = nl else { break };
            let line = memchr::memrchr(b'\n', &s[done..nl]).map_or(done, |k| done + k + 1);
            self.hash(&s[done..line]);
            self.segment(&s[line..nl]);
            self.end_line();
            self.hash(b"\n");
            done = nl + 1;
        }
        self.hash(&s[done..=last_nl]);
        self.segment(&s[last_nl + 1..]);
    }

    /// A piece of one line (no LF).
    fn segment(&mut self, seg: &[u8]) {
        match seg.iter().rposition(|&b| b != b' ' && b != b'\t') {
            None => self.pend(seg),
            Some(k) => {
                self.flush_ws();
                self.hash(&seg[..=k]);
                self.pend(&seg[k + 1..]);
            }
        }
    }

    fn pend(&mut self, ws: &[u8]) {
        for &b in ws {
            let full = self.ws.len() >= MAX_PENDING_WS_RUNS;
            match self.ws.last_mut() {
                Some((c, n)) if *c == b => *n += 1,
                _ if full => self.irregular = true,
                _ => self.ws.push((b, 1)),
            }
        }
    }

    /// Pending whitespace followed by more text on its line: content for the digest and the tag.
    fn flush_ws(&mut self) {
        for (b, n) in std::mem::take(&mut self.ws) {
            let block = [b; 256];
            let mut left = n;
            while left > 0 {
                let k = left.min(256) as usize;
                self.digest.update(&block[..k]);
                if let Some(t) = self.trim.as_mut() {
                    t.update(&block[..k]);
                }
                left -= k as u64;
            }
        }
    }

    /// Pending whitespace ends its line: the digest takes it, the tag does not.
    fn end_line(&mut self) {
        if self.ws.is_empty() {
            return;
        }
        let tag_state = self.trim.take().unwrap_or_else(|| self.digest.clone());
        self.flush_ws();
        self.trim = Some(tag_state);
    }

    fn hash(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        self.digest.update(b);
        if let Some(t) = self.trim.as_mut() {
            t.update(b);
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
    use proptest::strategy::Strategy as _;

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
        // Against the per-line reading on every short text of letters, blanks, tabs, CRs and LFs.
        let alphabet = ['a', ' ', '\t', '\r', '\n'];
        let mut layer = vec![String::new()];
        for _ in 0..6 {
            layer = layer
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            for t in &layer {
                let per_line = t.split('\n').any(|l| l.ends_with([' ', '\t', '\r']));
                assert_eq!(needs_trim(t), per_line, "{t:?}");
            }
        }
        // Owned input is used in place; a BOM or CR still normalises.
        assert_eq!(normalize_owned(b"\xef\xbb\xbfa\r\n".to_vec()).text, "a\n");
        assert_eq!(normalize_owned(b"plain\n".to_vec()).text, "plain\n");
    }

    #[test]
    fn normalize_strips_bom_and_line_endings_only() {
        assert_eq!(normal_in_place("\u{feff}a\nb"), Some("a\nb"));
        assert_eq!(normal_in_place("a\r\nb"), None);
        assert_eq!(normal_in_place("a\rb"), None);
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

    /// Feeds `bytes` to a TagStream in chunks of `step` bytes and returns its text and hashes.
    fn streamed(bytes: &[u8], step: usize) -> (Vec<u8>, Tagged) {
        let mut out = Vec::new();
        let mut st = TagStream::new();
        for c in bytes.chunks(step.max(1)) {
            st.push(c, &mut |t| out.extend_from_slice(t));
        }
        let t = st.finish(&mut |t| out.extend_from_slice(t)).unwrap();
        (out, t)
    }

    proptest::proptest! {
        /// The streamed normalisation is the in-memory one, byte for byte and hash for hash, wherever the chunks
        /// are cut (mid UTF-8 sequence, mid BOM, between CR and LF) and whatever the bytes (invalid UTF-8 too).
        #[test]
        fn the_streamed_tag_is_the_in_memory_tag(
            parts in proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just(b"\r".to_vec()),
                proptest::strategy::Just(b"\r\n".to_vec()),
                proptest::strategy::Just(b"\n".to_vec()),
                proptest::strategy::Just(b" ".to_vec()),
                proptest::strategy::Just(b"\t".to_vec()),
                proptest::strategy::Just("\u{feff}".as_bytes().to_vec()),
                proptest::strategy::Just("é€😀".as_bytes().to_vec()),
                proptest::collection::vec(proptest::num::u8::ANY, 0..4),
                "[a-z]{0,5}".prop_map(|s| s.into_bytes()),
            ], 0..40),
            step in 1usize..64,
        ) {
            let bytes: Vec<u8> = parts.concat();
            let n = normalize(&bytes);
            let (text, t) = streamed(&bytes, step);
            proptest::prop_assert_eq!(String::from_utf8(text).unwrap(), n.text.clone());
            proptest::prop_assert_eq!(t, Tagged::of(&n));
        }
    }

    #[test]
    fn the_streamed_tag_handles_edges_and_bounds_its_whitespace_memory() {
        for s in [
            &b""[..],
            b"\xef",
            b"\xef\xbb",
            b"\xef\xbb\xbf",
            b"a  ",
            b"a \t\n",
            b"\r",
            b"\xf0\x9f\x98",
        ] {
            for step in 1..4 {
                assert_eq!(streamed(s, step).1, Tagged::of(&normalize(s)), "{s:?} / {step}");
            }
        }
        // A million spaces are one run: constant memory, the same tag.
        let spaces = format!("x{}\ny", " ".repeat(1_000_000));
        assert_eq!(
            streamed(spaces.as_bytes(), 4096).1,
            Tagged::of(&normalize(spaces.as_bytes()))
        );
        // Alternating spaces and tabs past the run bound are refused rather than held.
        let mut st = TagStream::new();
        st.push(b"x", &mut |_| {});
        st.push(" \t".repeat(MAX_PENDING_WS_RUNS / 2 + 1).as_bytes(), &mut |_| {});
        assert_eq!(st.finish(&mut |_| {}), Err(TooIrregular));
    }

    #[test]
    fn names_with_control_characters_are_escaped() {
        assert!(matches!(escape_name("src/a b.rs"), Cow::Borrowed(_)));
        assert!(matches!(escape_name("dir\\x"), Cow::Borrowed(_)));
        assert_eq!(
            escape_name("a\n2:fake\r\t\u{1b}[31m\u{2028}"),
            "a\\n2:fake\\r\\t\\u{1B}[31m\\u{2028}"
        );
        // Once a name is escaped, its own backslashes are doubled so the escapes stay unambiguous.
        assert_eq!(escape_name("x\\n\n"), "x\\\\n\\n");
        assert!(!escape_name("evil\n[other#ABCD]\n1:x").contains('\n'));
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
