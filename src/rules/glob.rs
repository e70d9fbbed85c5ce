//! Model-pattern globs of execution rules (docs/spec/toolkit.md §4).
//!
//! Why a hand-written matcher: the contract is deliberately tiny — `*` matches any run (also empty), `?` matches
//! exactly one character, and everything else (including `[`, `]`, `\`) is literal — so no glob crate's dialect
//! fits. Matching is case-sensitive and anchored at both ends. The algorithm keeps only the most recent `*` as a
//! backtrack point, so it runs in O(pattern × subject) at worst and never backtracks exponentially.

/// Whether `pattern` matches the whole of `subject` (see the module doc for the dialect).
pub fn glob_match(pattern: &str, subject: &str) -> bool {
    // ASCII (the usual model id) matches on bytes without allocating; otherwise on chars so `?` is one
    // character, not one byte.
    if pattern.is_ascii() && subject.is_ascii() {
        return match_units(pattern.as_bytes(), subject.as_bytes(), b'*', b'?');
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = subject.chars().collect();
    match_units(&p, &s, '*', '?')
}

/// The matcher over any unit type (bytes or chars).
fn match_units<T: PartialEq + Copy>(p: &[T], s: &[T], star_unit: T, any_unit: T) -> bool {
    let (mut pi, mut si) = (0usize, 0usize);
    // Position in the pattern just after the last `*`, and the subject position that star currently covers up to.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == star_unit {
            star = Some((pi + 1, si));
            pi += 1;
        } else if pi < p.len() && (p[pi] == any_unit || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((after_star, covered)) = star {
            // Let the last star swallow one more character and retry from just after it.
            pi = after_star;
            si = covered + 1;
            star = Some((after_star, covered + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == star_unit {
        pi += 1;
    }
    pi == p.len()
}

/// Whether a rule's `match` selects this model: a pattern containing `/` is matched against `provider/modelId`
/// (and never matches when the provider is unknown), any other pattern against `modelId` alone.
pub fn model_matches(pattern: &str, provider: Option<&str>, model_id: &str) -> bool {
    if pattern.contains('/') {
        match provider {
            Some(p) => {
                // `provider/modelId` without building the string: the pattern's split is not known, so join once.
                let mut subject = String::with_capacity(p.len() + 1 + model_id.len());
                subject.push_str(p);
                subject.push('/');
                subject.push_str(model_id);
                glob_match(pattern, &subject)
            }
            None => false,
        }
    } else {
        glob_match(pattern, model_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("g?ok-4.6", "grok-4.6", true),
            ("grok[0-9]*", "grok4", false),
            ("grok[0-9]*", "grok[0-9]x", true),
            ("grok[0-9]*", "grok[0-9]", true),
            ("*", "", true),
            ("*", "anything at all", true),
            ("", "", true),
            ("", "a", false),
            ("?", "", false),
            ("?", "é", true),
            ("??", "é", false),
            ("gpt-*", "gpt-5", true),
            ("gpt-*", "GPT-5", false),
            ("GPT-*", "gpt-5", false),
            ("gpt-5", "gpt-5-mini", false),
            ("gpt-5*", "gpt-5-mini", true),
            ("*mini", "gpt-5-mini", true),
            ("*mini", "gpt-5-mini-2", false),
            ("*-*-*", "a-b-c", true),
            ("*-*-*", "a-b", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbYcZ", false),
            ("a\\*", "a\\bc", true),
            ("a\\*", "abc", false),
            ("a.c", "abc", false),
            ("a.c", "a.c", true),
            ("[abc]", "a", false),
            ("[abc]", "[abc]", true),
            ("**", "x", true),
            ("*?", "", false),
            ("*?", "x", true),
            ("x*y", "xyyy", true),
            ("x*yz", "xyzyzyz", true),
            ("x*yz", "xyzyzy", false),
        ];
        for (pat, subj, want) in cases {
            assert_eq!(glob_match(pat, subj), *want, "pattern {pat:?} on {subj:?}");
        }
    }

    #[test]
    fn slash_selects_provider_and_model() {
        assert!(model_matches("openai/gpt-*", Some("openai"), "gpt-5"));
        assert!(!model_matches("openai/gpt-*", Some("azure"), "gpt-5"));
        assert!(!model_matches("openai/gpt-*", None, "gpt-5"));
        assert!(!model_matches("*/gpt-5", None, "gpt-5"));
        assert!(model_matches("*/gpt-5", Some("x"), "gpt-5"));
        // Without a slash only the model id is seen, whatever the provider.
        assert!(model_matches("gpt-5", Some("openai"), "gpt-5"));
        assert!(model_matches("gpt-5", None, "gpt-5"));
        assert!(!model_matches("openai*", Some("openai"), "gpt-5"));
        // A model id that itself contains a slash (e.g. OpenRouter ids) is matched whole.
        assert!(model_matches("openrouter/openai/*", Some("openrouter"), "openai/gpt-5"));
        assert!(!model_matches("openai/*", None, "openai/gpt-5"));
    }

    #[test]
    fn pathological_pattern_is_not_exponential() {
        // `a*a*a*...*b` against a long run of `a`s: a backtracking matcher explodes; this one stays polynomial.
        let pattern = format!("{}b", "a*".repeat(200));
        let subject = "a".repeat(5000);
        assert!(!glob_match(&pattern, &subject));
        let subject_ok = format!("{}b", "a".repeat(5000));
        assert!(glob_match(&pattern, &subject_ok));
        let pattern_q = format!("{}*x", "*?".repeat(300));
        assert!(!glob_match(&pattern_q, &"y".repeat(4000)));
    }
}

#[cfg(test)]
mod properties {
    use super::glob_match;
    use proptest::prelude::*;

    /// Reference matcher: the textbook dynamic program over (pattern, subject) prefixes.
    fn reference(p: &[char], s: &[char]) -> bool {
        let mut dp = vec![vec![false; s.len() + 1]; p.len() + 1];
        dp[0][0] = true;
        for i in 1..=p.len() {
            dp[i][0] = dp[i - 1][0] && p[i - 1] == '*';
            for j in 1..=s.len() {
                dp[i][j] = match p[i - 1] {
                    '*' => dp[i - 1][j] || dp[i][j - 1],
                    '?' => dp[i - 1][j - 1],
                    c => dp[i - 1][j - 1] && c == s[j - 1],
                };
            }
        }
        dp[p.len()][s.len()]
    }

    proptest! {
        #[test]
        fn agrees_with_the_reference(p in "[ab*?\\[\\]/é]{0,12}", s in "[ab\\[\\]/é?*]{0,16}") {
            let pc: Vec<char> = p.chars().collect();
            let sc: Vec<char> = s.chars().collect();
            prop_assert_eq!(glob_match(&p, &s), reference(&pc, &sc), "pattern {:?} subject {:?}", p, s);
        }
    }
}
