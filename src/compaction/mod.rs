//! Remote Compaction (docs/compaction.md): the pure parts — building the SSE request body from the Responses input
//! Pi would have sent, validating the stream (exactly one `compaction` item before `response.completed`), shaping
//! the returned compaction (marker + readable excerpt, retained input, checkpoint, compatibility record) and the
//! replay of a stored checkpoint into a later request. No I/O here: the Pi glue does the POST.

#[cfg(test)]
mod tests;

use serde_json::{json, Map, Value};

/// Longest readable excerpt after the marker (characters).
pub const MAX_EXCERPT: usize = 12_000;
/// Longest retained user input kept in `details` (characters, summed over the retained texts).
pub const MAX_RETAINED: usize = 64_000;
/// Largest checkpoint (the `compaction` item, as JSON text) accepted from the server and replayed later: every
/// later request carries it again, so a huge one would be paid on every turn. Codex checkpoints are tens of KiB.
pub const MAX_CHECKPOINT_BYTES: usize = 4 * 1024 * 1024;
/// Longest server error text a warning shows (characters, after control characters were stripped).
pub const MAX_ERROR_TEXT: usize = 500;
/// The marker every remote summary starts with: `[pi-codex-toolkit.remote-compaction-v2:<uuid>]`.
pub const MARKER_PREFIX: &str = "[pi-codex-toolkit.remote-compaction-v2:";

crate::codes::error_codes! {
    /// Every code a Remote Compaction step fails with (docs/compaction.md "Codes", in the table's order). Each one
    /// ends in a warning and Pi's own compaction.
    pub enum CompactionCode {
        /// The captured request (or the prior compaction's details) is not the JSON the build needs.
        CaptureFailed = "capture-failed" => "nothing to do: Pi's own compaction runs; report it if it repeats",
        /// An SSE event of the compaction stream is not JSON.
        BadStream = "bad-stream" => "nothing to do: Pi's own compaction runs; retry /compact later",
        /// The server reported an error in the stream.
        StreamFailed = "stream-failed" => "read the server's text in the warning; Pi's own compaction runs",
        /// The stream ended before `response.completed`.
        StreamIncomplete = "stream-incomplete" => "nothing to do: Pi's own compaction runs; retry /compact later",
        /// The stream completed without a `compaction` item.
        CompactionMissing = "compaction-missing" => "nothing to do: Pi's own compaction runs",
        /// The stream carried more than one `compaction` item.
        CompactionAmbiguous = "compaction-ambiguous" => "nothing to do: Pi's own compaction runs",
        /// The `compaction` item's `encrypted_content` is not a string, so it cannot be replayed as given.
        BadCheckpoint = "bad-checkpoint" => "nothing to do: Pi's own compaction runs",
        /// The checkpoint is over the size a replayed checkpoint may have.
        CompactionTooLarge = "compaction-too-large" => "nothing to do: Pi's own compaction runs",
    }
}

/// A failure with a stable code and a message for the warning Pi shows before its own compaction runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionError {
    pub code: CompactionCode,
    pub message: String,
}

fn fail<T>(code: CompactionCode, message: impl Into<String>) -> Result<T, CompactionError> {
    Err(CompactionError {
        code,
        message: message.into(),
    })
}

/// `sha256:<hex>` of the ChatGPT account id: lets replay tell accounts apart without storing the id.
pub fn account_fingerprint(account_id: &str) -> String {
    format!("sha256:{}", crate::digest::sha256_hex(account_id.as_bytes()))
}

/// The compatibility record: replay only happens when every field equals the current route's.
pub fn compat_record(
    provider: &str,
    api: &str,
    model: &str,
    endpoint: &str,
    auth_kind: &str,
    account_id: &str,
) -> Value {
    json!({
        "provider": provider,
        "api": api,
        "model": model,
        "endpoint": endpoint,
        "authKind": auth_kind,
        "accountFingerprint": account_fingerprint(account_id),
    })
}

/// Builds the POST body: the prior retained input, the prior checkpoint, the captured input (the prior summary
/// message is dropped from it, the checkpoint replaces it) and a `{type: "compaction_trigger"}` item.
/// `captured` = the payload Pi's provider builder produced (`{model, instructions?, input, tools?, ...}`).
pub fn build_request(captured: &Value, prior: Option<&Value>) -> Result<Value, CompactionError> {
    let Some(input) = captured.get("input").and_then(Value::as_array) else {
        return fail(
            CompactionCode::CaptureFailed,
            "The captured request has no `input` array.",
        );
    };
    let Some(model) = captured.get("model").and_then(Value::as_str) else {
        return fail(CompactionCode::CaptureFailed, "The captured request has no `model`.");
    };
    let mut items: Vec<Value> = Vec::with_capacity(input.len() + 8);
    let prior_marker = prior.and_then(|d| d.get("marker")).and_then(Value::as_str);
    if let Some(d) = prior {
        if let Some(r) = d.get("retainedInput").and_then(Value::as_array) {
            items.extend(r.iter().cloned());
        }
        if let Some(c) = d
            .get("checkpoint")
            .filter(|c| c.is_object() && check_checkpoint(c).is_ok())
        {
            items.push(c.clone());
        }
    }
    for item in input {
        if prior_marker.is_some_and(|m| item_text(item).contains(m)) {
            continue;
        }
        items.push(item.clone());
    }
    items.push(json!({"type": "compaction_trigger"}));
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(i) = captured.get("instructions") {
        body.insert("instructions".into(), i.clone());
    }
    body.insert("input".into(), Value::Array(items));
    if let Some(t) = captured.get("tools") {
        body.insert("tools".into(), t.clone());
    }
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    Ok(Value::Object(body))
}

/// Validates an SSE body: returns the one `compaction` output item that arrived before `response.completed`.
pub fn parse_stream(sse: &str) -> Result<Value, CompactionError> {
    let mut found: Vec<Value> = Vec::new();
    let mut completed = false;
    for data in crate::net::sse::data_events(sse) {
        let Ok(ev) = serde_json::from_str::<Value>(&data) else {
            return fail(
                CompactionCode::BadStream,
                "The compaction stream carried an event that is not JSON.",
            );
        };
        match ev["type"].as_str().unwrap_or("") {
            "response.output_item.done" if ev["item"]["type"] == "compaction" => {
                check_checkpoint(&ev["item"])?;
                found.push(ev["item"].clone())
            }
            "response.completed" => {
                completed = true;
                break;
            }
            "response.failed" | "error" | "response.incomplete" => {
                let msg = ev["response"]["error"]["message"]
                    .as_str()
                    .or(ev["message"].as_str())
                    .unwrap_or("no message");
                return fail(
                    CompactionCode::StreamFailed,
                    format!("The compaction request failed: {}.", server_text(msg)),
                );
            }
            _ => {}
        }
    }
    if !completed {
        return fail(
            CompactionCode::StreamIncomplete,
            "The compaction stream ended before response.completed.",
        );
    }
    match found.len() {
        1 => Ok(found.pop().unwrap()),
        0 => fail(
            CompactionCode::CompactionMissing,
            "The compaction stream completed without a compaction item.",
        ),
        n => fail(
            CompactionCode::CompactionAmbiguous,
            format!("The compaction stream carried {n} compaction items; exactly one is required."),
        ),
    }
}

/// A checkpoint the toolkit may store and replay: its `encrypted_content` (when present) is a string — anything else
/// would be replayed into every later request as given — and its JSON text is at most [`MAX_CHECKPOINT_BYTES`].
pub fn check_checkpoint(item: &Value) -> Result<(), CompactionError> {
    match item.get("encrypted_content") {
        None | Some(Value::String(_)) => {}
        Some(_) => {
            return fail(
                CompactionCode::BadCheckpoint,
                "The compaction item's encrypted_content is not a string, so it cannot be replayed.",
            )
        }
    }
    let len = item.to_string().len();
    if len > MAX_CHECKPOINT_BYTES {
        return fail(
            CompactionCode::CompactionTooLarge,
            format!(
                "The compaction item is {len} bytes, over the {MAX_CHECKPOINT_BYTES}-byte limit a replayed \
                 checkpoint may have."
            ),
        );
    }
    Ok(())
}

/// A server's error text as a warning may show it: control characters (ANSI escape sequences whole) removed,
/// whitespace runs folded, at most [`MAX_ERROR_TEXT`] characters (a cut text ends in `…`).
pub fn server_text(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    let mut space = false;
    let mut kept = 0usize;
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI `ESC [ params final` and the two-character escapes: drop the whole sequence
            if chars.peek() == Some(&'[') {
                chars.next();
                for n in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&n) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            continue;
        }
        if kept >= MAX_ERROR_TEXT {
            out.push('…');
            return out;
        }
        if space {
            out.push(' ');
            kept += 1;
            space = false;
        }
        out.push(c);
        kept += 1;
    }
    out
}

/// The text of a Responses input item (`content` string or its `input_text` / `output_text` parts).
pub fn item_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn is_user(item: &Value) -> bool {
    item["role"] == "user" && item.get("type").is_none_or(|t| t == "message")
}

/// The newest user inputs whose texts fit in [`MAX_RETAINED`] characters (whole items, oldest dropped first; a
/// single newest item longer than the limit keeps its first [`MAX_RETAINED`] characters).
pub fn retained_input(input: &[Value], skip_marker: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut used = 0usize;
    for item in input.iter().rev().filter(|i| is_user(i)) {
        let text = item_text(item);
        if skip_marker.is_some_and(|m| text.contains(m)) {
            continue;
        }
        let n = text.chars().count();
        if used + n > MAX_RETAINED {
            if out.is_empty() {
                let head: String = text.chars().take(MAX_RETAINED).collect();
                out.push(json!({"role": "user", "content": [{"type": "input_text", "text": head}]}));
            }
            break;
        }
        used += n;
        out.push(json!({"role": "user", "content": [{"type": "input_text", "text": text}]}));
    }
    out.reverse();
    out
}

/// The readable excerpt shown when the checkpoint cannot be replayed: the newest conversation texts, labelled,
/// at most [`MAX_EXCERPT`] characters (older text is cut first).
pub fn excerpt(input: &[Value]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut used = 0usize;
    for item in input.iter().rev() {
        let role = item["role"].as_str().unwrap_or("");
        if role != "user" && role != "assistant" {
            continue;
        }
        let text = item_text(item);
        if text.is_empty() || text.starts_with(MARKER_PREFIX) {
            continue;
        }
        let line = format!("{role}: {text}");
        let n = line.chars().count() + 1;
        if used + n > MAX_EXCERPT {
            let room = MAX_EXCERPT.saturating_sub(used);
            if room > 0 {
                let tail: String = line.chars().skip(line.chars().count() - room).collect();
                parts.push(tail);
            }
            break;
        }
        used += n;
        parts.push(line);
    }
    parts.reverse();
    parts.join("\n")
}

/// Shapes Pi's compaction result. `captured_input` is the input the request was built from.
pub fn build_result(
    uuid: &str,
    checkpoint: Value,
    captured_input: &[Value],
    prior: Option<&Value>,
    compat: Value,
    first_kept_entry_id: &str,
    tokens_before: f64,
) -> Value {
    let marker = format!("{MARKER_PREFIX}{uuid}]");
    let prior_marker = prior.and_then(|d| d.get("marker")).and_then(Value::as_str);
    let mut all: Vec<Value> = prior
        .and_then(|d| d.get("retainedInput"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    all.extend(captured_input.iter().cloned());
    let text = excerpt(captured_input);
    let summary = if text.is_empty() {
        marker.clone()
    } else {
        format!("{marker}\n{text}")
    };
    json!({
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id,
        "tokensBefore": tokens_before,
        "details": {
            "marker": marker,
            "retainedInput": retained_input(&all, prior_marker),
            "checkpoint": checkpoint,
            "compat": compat,
        }
    })
}

/// Replay (docs/compaction.md "Replay"): when exactly one user input of `payload` carries the stored marker and
/// `current` equals the stored compatibility record, returns the payload with that input replaced by the retained
/// input followed by the checkpoint. Anything else returns `None` and the readable summary stays.
pub fn replay(payload: &Value, details: &Value, current: &Value) -> Option<Value> {
    let marker = details.get("marker")?.as_str()?;
    if details.get("compat")? != current || !details.get("checkpoint")?.is_object() {
        return None;
    }
    // a stored checkpoint is checked again: session files can come from older versions or be edited by hand
    check_checkpoint(&details["checkpoint"]).ok()?;
    let retained = details.get("retainedInput")?.as_array()?;
    if retained.iter().map(|i| item_text(i).chars().count()).sum::<usize>() > MAX_RETAINED {
        return None;
    }
    let input = payload.get("input")?.as_array()?;
    let hits: Vec<usize> = input
        .iter()
        .enumerate()
        .filter(|(_, i)| is_user(i) && item_text(i).contains(marker))
        .map(|(n, _)| n)
        .collect();
    let [at] = hits[..] else { return None };
    let mut items = Vec::with_capacity(input.len() + 8);
    items.extend(input[..at].iter().cloned());
    items.extend(retained.iter().cloned());
    items.push(details["checkpoint"].clone());
    items.extend(input[at + 1..].iter().cloned());
    let mut out = payload.clone();
    out["input"] = Value::Array(items);
    Some(out)
}
