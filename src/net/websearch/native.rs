//! The native backend: Pi's `before_provider_request` payload gets the hosted `web_search` tool (docs/net.md
//! §Native backend).
//!
//! Why only the head of the payload crosses: the transform touches `tools`, `include` and `tool_choice` and never the
//! messages, so the glue sends those three (plus how they are shaped) and applies the answer copy-on-write with a
//! shallow copy of the payload — the conversation (often megabytes) is neither serialised nor copied
//! (bench/net.mjs measures it on a 200-message payload against a JSON deep-copy baseline).

use super::{SearchOptions, SOURCES_INCLUDE};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the glue reads from the payload.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PayloadHead {
    /// The payload is a plain object (arrays, null and primitives pass through).
    pub is_object: bool,
    /// `tools`: `absent`, `array` or `other` (anything but an array passes through).
    pub tools: String,
    /// The index and value of the first `tools` entry with `type: "web_search"`.
    pub web_search_index: Option<usize>,
    pub web_search: Option<Value>,
    /// `include`: `absent`, `array` or `other` (only an array, or nothing, is extended).
    pub include_kind: String,
    /// `include` when it is an array.
    pub include: Vec<Value>,
    /// Whether `tool_choice` is present (any value, even null).
    pub has_tool_choice: bool,
}

/// What to change; the glue builds `{...payload, tools, include, tool_choice}` from it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadPatch {
    /// The web_search entry to put at `replaceIndex`, or to append when that is null.
    pub entry: Value,
    pub replace_index: Option<usize>,
    /// The new `include` array.
    pub include: Vec<Value>,
    /// `"auto"` when the payload had no `tool_choice`.
    pub tool_choice: Option<&'static str>,
}

/// The transform. `None` = pass through unchanged (odd payload, or nothing to change).
pub fn transform(head: &PayloadHead, opts: &SearchOptions) -> Option<PayloadPatch> {
    if !head.is_object {
        return None;
    }
    match head.tools.as_str() {
        "absent" | "array" => {}
        _ => return None,
    }
    let include: Vec<Value> = match head.include_kind.as_str() {
        "absent" => Vec::new(),
        "array" => head.include.clone(),
        _ => return None,
    };
    // An existing entry is merged: its explicit fields win over ours.
    let ours = opts.tool_entry();
    let (entry, replace_index) = match (&head.web_search, head.web_search_index) {
        (Some(Value::Object(existing)), Some(i)) => {
            let mut merged: Map<String, Value> = ours.as_object().cloned().unwrap_or_default();
            for (k, v) in existing {
                merged.insert(k.clone(), v.clone());
            }
            (Value::Object(merged), Some(i))
        }
        _ => (ours, None),
    };
    let entry_changed = match (replace_index, &head.web_search) {
        (Some(_), Some(existing)) => &entry != existing,
        _ => true,
    };
    let mut new_include = include;
    let include_changed = !new_include.iter().any(|v| v.as_str() == Some(SOURCES_INCLUDE));
    if include_changed {
        new_include.push(Value::String(SOURCES_INCLUDE.into()));
    }
    let tool_choice = (!head.has_tool_choice).then_some("auto");
    if !entry_changed && !include_changed && tool_choice.is_none() {
        return None;
    }
    Some(PayloadPatch {
        entry,
        replace_index,
        include: new_include,
        tool_choice,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(mode: &str) -> SearchOptions {
        SearchOptions {
            mode: mode.into(),
            context_size: "medium".into(),
        }
    }

    fn head(v: Value) -> PayloadHead {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn appends_entry_include_and_tool_choice() {
        let p = transform(&head(json!({"isObject": true, "tools": "array", "includeKind": "array", "include": ["reasoning.encrypted_content"]})), &opts("live")).unwrap();
        assert_eq!(
            p.entry,
            json!({"type": "web_search", "search_context_size": "medium", "external_web_access": true})
        );
        assert_eq!(p.replace_index, None);
        assert_eq!(
            p.include,
            vec![json!("reasoning.encrypted_content"), json!(SOURCES_INCLUDE)]
        );
        assert_eq!(p.tool_choice, Some("auto"));
        // cached mode and absent arrays.
        let p = transform(
            &head(json!({"isObject": true, "tools": "absent", "includeKind": "absent", "hasToolChoice": true})),
            &opts("cached"),
        )
        .unwrap();
        assert_eq!(p.entry["external_web_access"], json!(false));
        assert_eq!(p.include, vec![json!(SOURCES_INCLUDE)]);
        assert_eq!(p.tool_choice, None);
    }

    #[test]
    fn merges_an_existing_entry_its_fields_win() {
        let h = head(
            json!({"isObject": true, "tools": "array", "includeKind": "absent", "webSearchIndex": 2,
            "webSearch": {"type": "web_search", "search_context_size": "high", "filters": {"allowed_domains": ["a.test"]}}}),
        );
        let p = transform(&h, &opts("live")).unwrap();
        assert_eq!(p.replace_index, Some(2));
        assert_eq!(
            p.entry,
            json!({"type": "web_search", "search_context_size": "high", "external_web_access": true, "filters": {"allowed_domains": ["a.test"]}})
        );
    }

    #[test]
    fn odd_payloads_pass_through_and_no_change_returns_none() {
        for h in [
            json!({"isObject": false, "tools": "array", "includeKind": "absent"}),
            json!({"isObject": true, "tools": "other", "includeKind": "absent"}),
            json!({"isObject": true, "tools": "array", "includeKind": "other"}),
            json!({"isObject": true, "tools": "array"}),
        ] {
            assert_eq!(transform(&head(h.clone()), &opts("live")), None, "{h}");
        }
        let done = head(json!({"isObject": true, "tools": "array", "webSearchIndex": 0,
            "webSearch": {"type": "web_search", "search_context_size": "medium", "external_web_access": true},
            "includeKind": "array", "include": [SOURCES_INCLUDE], "hasToolChoice": true}));
        assert_eq!(transform(&done, &opts("live")), None);
        // tool_choice is only set when absent, never overwritten.
        let mut h = done.clone();
        h.has_tool_choice = false;
        assert_eq!(transform(&h, &opts("live")).unwrap().tool_choice, Some("auto"));
    }
}
