//! The display sanitiser's binding (src/display, docs/permissions.md "What reaches the terminal").

use super::guard;

/// `text` as the toolkit may show it: every C0/C1 control, DEL, line separator and direction override as a visible
/// escape (`\x1b`, `\n`, `\u{202e}`). `block: true` keeps newlines and tabs (a card body, a command); otherwise the
/// text is one line.
#[napi(catch_unwind)]
pub fn display_text(text: String, block: Option<bool>) -> String {
    guard::sync_or(
        "display.text",
        || {
            let layout = if block.unwrap_or(false) {
                crate::display::Layout::Block
            } else {
                crate::display::Layout::Line
            };
            crate::display::escape(&text, layout).into_owned()
        },
        // Never show what could not be checked: only printable ASCII survives.
        |_| {
            text.chars()
                .map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' })
                .collect()
        },
    )
}
