//! The preview budget of one read: how many bytes of output a result may carry (docs/spec/toolkit.md §5).
//!
//! `maxOutputBytes` is 1024..262144 (default 51200); `max_output_tokens` is 256..65536 at 4 bytes per token and
//! lands in the same byte range. Each is range-checked first; when both are given the smaller wins. Both stdout and
//! stderr share one budget, stdout drained first, cut on a UTF-8 code point boundary.

use serde_json::Value;

/// Smallest accepted `maxOutputBytes`.
pub const MIN_OUTPUT_BYTES: u64 = 1024;
/// Largest accepted `maxOutputBytes` (also the largest preview any read can carry).
pub const MAX_OUTPUT_BYTES: u64 = 262_144;
/// Budget when neither limit is given.
pub const DEFAULT_OUTPUT_BYTES: usize = 51_200;
/// Smallest accepted `max_output_tokens`.
pub const MIN_OUTPUT_TOKENS: u64 = 256;
/// Largest accepted `max_output_tokens`.
pub const MAX_OUTPUT_TOKENS: u64 = 65_536;
/// The documented conservative proxy: one token counts as 4 bytes (not a provider's real tokenizer).
pub const BYTES_PER_TOKEN: u64 = 4;

/// Reads an optional non-negative integer field without coercion (strings, fractions, negatives are refused).
/// `null` counts as absent. Returns the message to show on failure.
pub fn integer_in_range(value: Option<&Value>, name: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
    let Some(v) = value else { return Ok(None) };
    if v.is_null() {
        return Ok(None);
    }
    let n = match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Some(u)
            } else if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f >= 0.0 && f <= u64::MAX as f64 {
                    Some(f as u64)
                } else {
                    None
                }
            } else {
                None
            }
        }
        _ => None,
    };
    match n {
        Some(u) if u >= min && u <= max => Ok(Some(u)),
        Some(u) => Err(format!("{name} must be an integer from {min} to {max} (got {u}).")),
        None => Err(format!("{name} must be an integer from {min} to {max}.")),
    }
}

/// Resolves the byte budget of one read from the byte spelling and the token spelling (each optional, each
/// range-checked first; the smaller wins; neither = 51200). `tokens_name` is the field name used in messages
/// (`max_output_tokens`, or `max_tokens` for Code Mode's Codex spelling).
pub fn resolve_budget(
    bytes: Option<&Value>,
    bytes_name: &str,
    tokens: Option<&Value>,
    tokens_name: &str,
) -> Result<usize, String> {
    let b = integer_in_range(bytes, bytes_name, MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES)?;
    let t = integer_in_range(tokens, tokens_name, MIN_OUTPUT_TOKENS, MAX_OUTPUT_TOKENS)?;
    let from_tokens = t.map(|t| (t * BYTES_PER_TOKEN).clamp(MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES));
    Ok(match (b, from_tokens) {
        (Some(b), Some(t)) => b.min(t) as usize,
        (Some(b), None) => b as usize,
        (None, Some(t)) => t as usize,
        (None, None) => DEFAULT_OUTPUT_BYTES,
    })
}

/// The largest prefix length of `s` that is at most `max` bytes and ends on a code point boundary.
pub fn cut_utf8(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Where the last `max` bytes of `s` start, moved forward to a code point boundary (never half a character):
/// the one tail cut of kept and live output, as [`cut_utf8`] is the one head cut.
pub fn tail_start(s: &str, max: usize) -> usize {
    let mut from = s.len().saturating_sub(max);
    while !s.is_char_boundary(from) {
        from += 1;
    }
    from
}

/// What one read shows: byte lengths of the stdout and stderr prefixes kept, and how many bytes were left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preview {
    /// Bytes of stdout shown (a prefix, on a char boundary).
    pub stdout_len: usize,
    /// Bytes of stderr shown (a prefix, on a char boundary).
    pub stderr_len: usize,
    /// Bytes of new output not shown by this read.
    pub dropped: usize,
}

/// Splits one budget between stdout and stderr: stdout first, then stderr gets what is left.
pub fn split_preview(stdout: &str, stderr: &str, budget: usize) -> Preview {
    let stdout_len = cut_utf8(stdout, budget);
    let stderr_len = cut_utf8(stderr, budget - stdout_len);
    Preview {
        stdout_len,
        stderr_len,
        dropped: (stdout.len() - stdout_len) + (stderr.len() - stderr_len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bytes_limits_at_boundaries() {
        let r = |v: Value| resolve_budget(Some(&v), "maxOutputBytes", None, "max_output_tokens");
        assert_eq!(r(json!(1024)).unwrap(), 1024);
        assert_eq!(r(json!(262144)).unwrap(), 262144);
        assert!(r(json!(1023)).is_err());
        assert!(r(json!(262145)).is_err());
        assert!(r(json!("2048")).is_err());
        assert!(r(json!(2048.5)).is_err());
        assert!(r(json!(-1)).is_err());
        assert_eq!(r(json!(2048.0)).unwrap(), 2048);
        assert_eq!(resolve_budget(None, "a", None, "b").unwrap(), 51200);
    }

    #[test]
    fn token_limits_and_smaller_wins() {
        let t = |v: Value| resolve_budget(None, "maxOutputBytes", Some(&v), "max_output_tokens");
        assert_eq!(t(json!(256)).unwrap(), 1024);
        assert_eq!(t(json!(65536)).unwrap(), 262144);
        assert!(t(json!(255)).is_err());
        assert!(t(json!(65537)).is_err());
        assert_eq!(
            resolve_budget(Some(&json!(4000)), "b", Some(&json!(300)), "t").unwrap(),
            1200
        );
        assert_eq!(
            resolve_budget(Some(&json!(1100)), "b", Some(&json!(300)), "t").unwrap(),
            1100
        );
        // each is range-checked first even when the other would win
        assert!(resolve_budget(Some(&json!(5)), "b", Some(&json!(300)), "t").is_err());
    }

    #[test]
    fn cut_never_splits_a_char() {
        let s = "aé€😀";
        for max in 0..=s.len() + 2 {
            let n = cut_utf8(s, max);
            assert!(n <= max && s.is_char_boundary(n));
        }
        assert_eq!(cut_utf8("é", 1), 0);
    }

    #[test]
    fn tail_never_splits_a_char_and_keeps_at_most_max() {
        let s = "aé€😀";
        for max in 0..=s.len() + 2 {
            let from = tail_start(s, max);
            assert!(s.len() - from <= max && s.is_char_boundary(from), "{max}");
        }
        // "😀" is 4 bytes: 3 of them cannot be kept, so none are; all 4 are.
        assert_eq!(&s[tail_start(s, 3)..], "");
        assert_eq!(&s[tail_start(s, 4)..], "😀");
        assert_eq!(&s[tail_start(s, 7)..], "€😀");
        assert_eq!(tail_start("", 5), 0);
    }

    #[test]
    fn stdout_first_shared_budget() {
        let p = split_preview("aaaa", "bbbb", 6);
        assert_eq!(
            p,
            Preview {
                stdout_len: 4,
                stderr_len: 2,
                dropped: 2
            }
        );
        let p = split_preview("aaaaaaaa", "bb", 6);
        assert_eq!(
            p,
            Preview {
                stdout_len: 6,
                stderr_len: 0,
                dropped: 4
            }
        );
    }
}
