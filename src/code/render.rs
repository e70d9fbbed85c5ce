//! The model-facing text of one cell read (docs/spec/toolkit.md §7): status, uncertainty and shell control first, then
//! recovery lines and the `[output]`, `[result]`, `[error]` blocks, all within 331,776 bytes.

use super::limits::{cut_utf8, RENDER_BYTES};
use super::manager::CellRead;

/// Renders a read. Header lines always survive the final cut; blocks are cut on a UTF-8 boundary.
pub fn render(r: &CellRead) -> String {
    let mut head = String::new();
    if r.status == "running" {
        head.push_str(&format!("Script running with cell ID {}.\n", r.cell_id));
    }
    head.push_str(&format!("cell_id {}: {}\n", r.cell_id, r.status));
    if r.unknown_outcome {
        head.push_str("outcome: unknown (the cell thread did not confirm that it stopped; effects of nested calls are not rolled back)\n");
    }
    let n = &r.nested;
    if n.completed + n.failed + n.cancelled_before_dispatch + n.unsettled > 0 {
        head.push_str(&format!(
            "nested calls: {} completed, {} failed, {} cancelled before dispatch, {} unsettled\n",
            n.completed, n.failed, n.cancelled_before_dispatch, n.unsettled
        ));
    }
    for sid in &r.shell_sessions {
        head.push_str(&format!(
            "shell session {sid} is still running (it belongs to Shell): continue it with write_stdin {{\"session_id\": \"{sid}\"}}\n"
        ));
    }
    if r.status == "running" {
        head.push_str(&format!(
            "Continue with wait {{\"cell_id\": \"{}\"}}; stop it with wait {{\"cell_id\": \"{}\", \"terminate\": true}}.\n",
            r.cell_id, r.cell_id
        ));
    }
    if let Some(rec) = &r.recovery {
        // Shell's recovery lines (same wording for every tool).
        for line in rec.render_lines() {
            head.push_str(&line);
            head.push('\n');
        }
    }
    if r.truncated > 0 {
        head.push_str(&format!(
            "output: {} more bytes not shown (read budget); the recovery file has them\n",
            r.truncated
        ));
    }
    if r.dropped > 0 {
        head.push_str(&format!(
            "output: {} bytes dropped from the unread buffer (256 KiB full)\n",
            r.dropped
        ));
    }
    if r.result_truncated {
        head.push_str("result: cut at 32 KiB; the recovery file has it whole\n");
    }
    if r.error_truncated {
        head.push_str("error: cut at 4 KiB; the recovery file has it whole\n");
    }
    if r.progress_dropped > 0 {
        head.push_str(&format!(
            "progress: {} records not forwarded (32 per call)\n",
            r.progress_dropped
        ));
    }
    let mut body = String::new();
    if !r.output.is_empty() {
        body.push_str("[output]\n");
        body.push_str(&r.output);
        if !r.output.ends_with('\n') {
            body.push('\n');
        }
    }
    if let Some(res) = &r.result {
        body.push_str("[result]\n");
        body.push_str(res);
        body.push('\n');
    }
    if let Some(e) = &r.error {
        body.push_str("[error]\n");
        body.push_str(e);
        body.push('\n');
    }
    let room = RENDER_BYTES.saturating_sub(head.len());
    let mut text = head;
    text.push_str(cut_utf8(&body, room));
    let out = cut_utf8(&text, RENDER_BYTES).to_string();
    out.trim_end_matches('\n').to_string()
}
