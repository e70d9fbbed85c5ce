//! The matcher Grep searches with, line by line (docs/host.md "Grep"): the pattern's own regex, plus, when the
//! pattern has a Unicode word boundary, a looser regex that only finds candidate lines.
//!
//! Why: the regex engine's fast (lazy DFA) search cannot decide a Unicode `\b` next to a non-ASCII byte, so on most
//! real files it falls back to a much slower engine for the whole buffer. The same pattern with its Unicode word
//! boundaries removed matches everywhere the pattern does (an assertion only ever narrows a match) and never needs
//! the fallback; the searcher runs it over the buffer and confirms each line it lands on with the full regex
//! (`LineMatchKind::Candidate`). So the results are the pattern's own; only the work to find them shrinks.

use grep_matcher::{ByteSet, LineMatchKind, LineTerminator, Match, Matcher, NoError};
use grep_regex::{RegexCaptures, RegexMatcher, RegexMatcherBuilder};
use regex_syntax::hir::{Capture, Hir, HirKind, Look, Repetition};

/// The full regex and, when it helps, the candidate regex for whole lines.
#[derive(Clone, Debug)]
pub struct LineMatcher {
    full: RegexMatcher,
    candidate: Option<RegexMatcher>,
}

impl LineMatcher {
    /// Builds the matcher for `pattern` (a regex unless `literal`), each line ending in `\n`.
    pub fn new(pattern: &str, ignore_case: bool, literal: bool) -> Result<LineMatcher, grep_regex::Error> {
        let builder = || {
            let mut b = RegexMatcherBuilder::new();
            b.case_insensitive(ignore_case).line_terminator(Some(b'\n'));
            b
        };
        let full = builder().fixed_strings(literal).build(pattern)?;
        let candidate = if literal {
            None
        } else {
            // Parsed as grep-regex parses it (bytes allowed, Unicode on), so printing the stripped tree and building
            // it again gives the same language less its Unicode word boundaries. A pattern it cannot rebuild just
            // goes without a candidate regex.
            without_unicode_word_boundaries(pattern, ignore_case)
                .and_then(|loose| builder().build(&loose.to_string()).ok())
        };
        Ok(LineMatcher { full, candidate })
    }

    /// Whether a candidate regex is in use (for tests).
    #[cfg(test)]
    fn has_candidate(&self) -> bool {
        self.candidate.is_some()
    }
}

/// `pattern`'s tree with every Unicode word-boundary assertion replaced by the empty match, or None when it has
/// none (nothing to gain) or does not parse here.
fn without_unicode_word_boundaries(pattern: &str, ignore_case: bool) -> Option<Hir> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .unicode(true)
        .case_insensitive(ignore_case)
        .build()
        .parse(pattern)
        .ok()?;
    hir.properties().look_set().contains_word_unicode().then(|| strip(hir))
}

fn is_unicode_word(look: Look) -> bool {
    matches!(
        look,
        Look::WordUnicode
            | Look::WordUnicodeNegate
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode
    )
}

fn strip(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Look(look) if is_unicode_word(look) => Hir::empty(),
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(strip(*r.sub)),
            ..r
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            sub: Box::new(strip(*c.sub)),
            ..c
        }),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(strip).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(strip).collect()),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
    }
}

impl Matcher for LineMatcher {
    type Captures = RegexCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        self.full.find_at(haystack, at)
    }

    fn new_captures(&self) -> Result<RegexCaptures, NoError> {
        self.full.new_captures()
    }

    fn capture_count(&self) -> usize {
        self.full.capture_count()
    }

    fn capture_index(&self, name: &str) -> Option<usize> {
        self.full.capture_index(name)
    }

    fn captures_at(&self, haystack: &[u8], at: usize, caps: &mut RegexCaptures) -> Result<bool, NoError> {
        self.full.captures_at(haystack, at, caps)
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        self.full.shortest_match_at(haystack, at)
    }

    fn non_matching_bytes(&self) -> Option<&ByteSet> {
        self.full.non_matching_bytes()
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        self.full.line_terminator()
    }

    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, NoError> {
        match &self.candidate {
            // Whatever the looser regex says, the line is only a candidate: the searcher confirms it with `full`.
            Some(loose) => Ok(loose.find_candidate_line(haystack)?.map(|k| match k {
                LineMatchKind::Confirmed(i) | LineMatchKind::Candidate(i) => LineMatchKind::Candidate(i),
            })),
            None => self.full.find_candidate_line(haystack),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_searcher::sinks::UTF8;
    use grep_searcher::SearcherBuilder;

    /// The lines (numbers) `m` matches in `text`, through the same searcher set-up Grep uses.
    fn lines(m: &LineMatcher, text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        SearcherBuilder::new()
            .line_number(true)
            .build()
            .search_slice(
                m,
                text.as_bytes(),
                UTF8(|n, _| {
                    out.push(n);
                    Ok(true)
                }),
            )
            .unwrap();
        out
    }

    #[test]
    fn only_unicode_word_boundaries_get_a_candidate_regex() {
        assert!(LineMatcher::new(r"foo\b", false, false).unwrap().has_candidate());
        assert!(LineMatcher::new(r"\Bfoo", false, false).unwrap().has_candidate());
        assert!(LineMatcher::new(r"\<foo\>", false, false).unwrap().has_candidate());
        assert!(!LineMatcher::new(r"(?-u:\b)foo(?-u:\b)", false, false)
            .unwrap()
            .has_candidate());
        assert!(!LineMatcher::new(r"foo\s+bar", false, false).unwrap().has_candidate());
        assert!(!LineMatcher::new(r"foo\b", false, true).unwrap().has_candidate());
    }

    #[test]
    fn the_candidate_regex_never_changes_which_lines_match() {
        // Non-ASCII word characters on both sides of the boundary, where Unicode and ASCII \b disagree.
        let text = "function fooError()\nfunction fooErroré\nfunction fooError_x\néfunction barError\n\
                    x function bazError.\nfunction\nquxError\nfunction  ΩError ok\nfunction zError\n";
        for (pattern, ci) in [
            (r"function\s+[a-z]+Error\b", false),
            (r"\bfunction\s+\w+Error\b", false),
            (r"\bFUNCTION\s+\w+error\b", true),
            (r"Error\B", false),
            (r"(?m:^)function\s+\w+Error\b$", false),
            (r"^function\s+\w+Error\b", false),
            (r"\bError\b.$", false),
            (r"(?-i)function\s+\w+Error\b", true),
            (r"\b(?:function|x)\b", false),
        ] {
            let ours = LineMatcher::new(pattern, ci, false).unwrap();
            assert!(ours.has_candidate(), "{pattern}");
            let plain = LineMatcher {
                full: RegexMatcherBuilder::new()
                    .case_insensitive(ci)
                    .line_terminator(Some(b'\n'))
                    .build(pattern)
                    .unwrap(),
                candidate: None,
            };
            assert_eq!(lines(&ours, text), lines(&plain, text), "{pattern}");
        }
        let m = LineMatcher::new(r"function\s+[a-z]+Error\b", false, false).unwrap();
        assert_eq!(lines(&m, text), vec![1, 4, 5, 9]);
        // Anchors keep their meaning per line.
        let m = LineMatcher::new(r"^function\s+\w+Error\b", false, false).unwrap();
        assert_eq!(lines(&m, text), vec![1, 8, 9]);
    }

    #[test]
    fn a_candidate_never_spans_lines() {
        // The loose regex must not join lines: a greedy `\s*` that ran on through the newlines would end the candidate
        // on line 3, and the searcher, finding no match there, would never look at line 1 again.
        let m = LineMatcher::new(r"foo\b\s*", false, false).unwrap();
        assert_eq!(lines(&m, "foo\n  \nzzz\n"), vec![1]);
    }
}
