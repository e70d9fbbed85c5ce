//! One rule for the session ids the engine accepts. A session id names a folder or file under the agent dir (the
//! scratch directory, the audit file, the review store), so every capability must refuse the same ids for the same
//! reason and with the same message, and the glue asks the same rule (docs/napi.md "Session ids").
//!
//! The rule is Pi's own rule for the ids it creates and accepts (UUIDs; `--session-id` values), plus a length cap:
//! 1 to [`MAX_LEN`] ASCII letters, digits, `.`, `_` or `-`, starting and ending with a letter or digit. Such an id is
//! always one plain path segment: never empty, `.`, `..`, hidden, or holding a separator.

use std::fmt;

/// Longest session id accepted, in bytes (a UUID is 36; `<id>.jsonl` stays far below a file-name limit).
pub const MAX_LEN: usize = 128;

/// A session id that passed [`SessionId::parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionId(String);

/// Why an id was refused; its `Display` is the one message every capability returns (each under its own code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSessionId {
    shown: String,
}

impl fmt::Display for InvalidSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "session id {} is not valid: it must be 1 to {MAX_LEN} ASCII letters, digits, '.', '_' or '-', starting \
             and ending with a letter or digit; pass Pi's own session id (ctx.sessionManager.getSessionId()).",
            self.shown
        )
    }
}

impl std::error::Error for InvalidSessionId {}

/// Whether `id` passes the rule (see the module docs).
pub fn is_valid(id: &str) -> bool {
    let b = id.as_bytes();
    let edge = |c: &u8| c.is_ascii_alphanumeric();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
    !b.is_empty()
        && b.len() <= MAX_LEN
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(inner)
}

impl SessionId {
    /// Checks `id` against the one rule.
    pub fn parse(id: &str) -> Result<SessionId, InvalidSessionId> {
        if is_valid(id) {
            Ok(SessionId(id.to_string()))
        } else {
            // The refused id is quoted escaped and cut, so a huge or multi-line id cannot flood the message.
            let mut shown: String = id.chars().take(64).collect::<String>().escape_debug().collect();
            if id.chars().nth(64).is_some() {
                shown.push('…');
            }
            Err(InvalidSessionId {
                shown: format!("'{shown}'"),
            })
        }
    }

    /// The id as text (one plain path segment).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_ids_pi_and_the_suites_use() {
        let uuid7 = "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b";
        for ok in [
            uuid7,
            "sess-3",
            "s-c",
            "s",
            "s1",
            "a",
            "hook-1",
            "pid-12345",
            "a.b_c-d",
            "A9",
        ] {
            assert!(SessionId::parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(SessionId::parse("sess-3").unwrap().as_str(), "sess-3");
    }

    #[test]
    fn length_boundary_is_max_len() {
        assert!(SessionId::parse(&"a".repeat(MAX_LEN)).is_ok());
        assert!(SessionId::parse(&"a".repeat(MAX_LEN + 1)).is_err());
    }

    #[test]
    fn refuses_everything_that_is_not_one_plain_segment() {
        for bad in [
            "", ".", "..", "a/b", "a\\b", "../x", ".hidden", "a\0b", "a b", "a\nb", "é", "-a", "_a", "a-", "a.", "a_",
        ] {
            let e = SessionId::parse(bad).unwrap_err().to_string();
            assert!(e.contains("pass Pi's own session id"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_message_quotes_a_cut_escaped_id() {
        let e = SessionId::parse(&format!("x\n{}", "y".repeat(500)))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("session id 'x\\nyyy"), "{e}");
        assert!(e.contains("…'"), "{e}");
        assert!(!e.contains('\n'));
        assert!(e.len() < 400);
    }
}
