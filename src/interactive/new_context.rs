//! `new_context`: takes no arguments and changes nothing; the glue asks Pi to compact when the current run ends
//! (docs/interactive.md "new_context"). This module checks the arguments and words the result.

use serde_json::Value;

use super::error::{Failure, InteractiveCode};

/// Accepts `{}` only (also a missing/null argument object, which some providers send for no-argument tools).
pub fn check(args: &Value) -> Result<(), Failure> {
    match args {
        Value::Null => Ok(()),
        Value::Object(m) if m.is_empty() => Ok(()),
        Value::Object(m) => Err(Failure::new(
            InteractiveCode::InvalidArguments,
            format!(
                "new_context takes no arguments (got {}); call it with {{}}.",
                m.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
            ),
        )),
        _ => Err(Failure::new(
            InteractiveCode::InvalidArguments,
            "new_context takes no arguments; call it with {}.",
        )),
    }
}

/// The result text: what will happen, with the compaction that will run (`remote`: the toolkit's Remote Compaction
/// is on; Pi still decides per route and falls back to its own). `already`: a request is already pending.
pub fn result_text(remote: bool, already: bool) -> String {
    let how = if remote {
        "the toolkit's Remote Compaction (Pi's own compaction where that route is not available)"
    } else {
        "Pi's compaction"
    };
    let head = if already {
        "A fresh context was already requested; nothing more to do."
    } else {
        "A fresh context is requested. Nothing was changed."
    };
    format!(
        "{head} When this run ends, {how} summarizes the conversation so far and the next turn starts from that summary. Finish your current step briefly and put anything the next turn must know into your final message."
    )
}
