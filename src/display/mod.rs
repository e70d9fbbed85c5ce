//! The one sanitiser for every string the toolkit shows (docs/permissions.md "What reaches the terminal"): card
//! titles and bodies, dialog questions and options, widgets, the status line, notifications, relayed delegate cards,
//! `/pct agents` and the agent text in the system prompt. A terminal obeys control characters: ESC starts CSI
//! (cursor moves, colours, erasing) and OSC (the window title, hyperlinks, the clipboard), C1 codes (U+0080..U+009F)
//! do the same in one character, a carriage return or a newline lets a string draw a second, harmless-looking line
//! inside a card. So every C0 and C1 control, DEL, and the Unicode line separators and direction overrides
//! (which reorder what a reader sees) are shown as visible escapes (`\x1b`, `\n`, `\u{202e}`), never passed on.
//!
//! Why in Rust: the same function serves the engine's own text (agent descriptions in the system prompt, `/pct`
//! listings built here) and the glue (`displayText` over napi), so there is one rule, tested once.

use std::borrow::Cow;

/// How the text is laid out where it is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A single line (a title, an option, a path, a status): every control is escaped, newlines and tabs too.
    Line,
    /// A block (a card body, a command, a diff): `\n` (and `\r\n`, folded to `\n`) and tabs stay; every other
    /// control is escaped.
    Block,
}

/// Whether `c` must never reach a terminal as itself: C0 (U+0000..U+001F), DEL, C1 (U+0080..U+009F), the line and
/// paragraph separators (U+2028, U+2029), and the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
/// U+2066..U+2069) that reorder a line's characters on screen.
pub fn is_unsafe(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `s` holds a character [`is_unsafe`] (identifiers are refused with it at validation).
pub fn has_control(s: &str) -> bool {
    s.chars().any(is_unsafe)
}

/// `s` as it may be shown: every unsafe character as a visible escape (`\n`, `\r`, `\t`, `\x1b`, `\u{202e}`);
/// in [`Layout::Block`], newlines and tabs kept and CRLF folded to LF. Borrowed when nothing needs escaping.
pub fn escape(s: &str, layout: Layout) -> Cow<'_, str> {
    let keep = |c: char| layout == Layout::Block && (c == '\n' || c == '\t');
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if layout == Layout::Block && c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if !is_unsafe(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// [`escape`] as a single line.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, Layout::Line)
}

/// [`escape`] as a block.
pub fn block(s: &str) -> Cow<'_, str> {
    escape(s, Layout::Block)
}

#[cfg(test)]
mod tests;
