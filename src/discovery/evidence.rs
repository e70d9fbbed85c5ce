//! Which on-demand tools a session already uses, rebuilt from the evidence in its effective context
//! (seed 000 §2.1; docs/rules.md "On-demand host tools").
//!
//! Why evidence, not memory: the on-demand loads are reset when each user prompt starts, and after a resume or
//! a compaction no in-memory state survives. What the model can still see in its context is what it was given:
//! a successful `find_tools` result names what it loaded (`details.addedToolNames`; `details.activated` and a
//! top-level `addedToolNames` are read too, for older records), and a successful result of an on-demand tool
//! proves that tool was loaded. Failed, aborted or placeholder results and any assistant or user text prove
//! nothing and are ignored. A name counts only while it is still in the current on-demand table.

use crate::rules::names::FIND_TOOLS;
use serde::Deserialize;
use serde_json::Value;

/// One tool result of the effective session context, reduced by the glue (src/pi/rules.ts) to what counts.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolResultEvidence {
    pub tool_name: String,
    pub is_error: bool,
    /// `details.addedToolNames` of the result (the canonical field).
    pub details_added_tool_names: Option<Value>,
    /// `details.activated` (older records).
    pub details_activated: Option<Value>,
    /// A top-level `addedToolNames` on the message (older records).
    pub added_tool_names: Option<Value>,
}

fn names_in(v: &Option<Value>) -> impl Iterator<Item = &str> {
    v.as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The on-demand names the evidence proves loaded, in `catalog` order (only names of `catalog`).
pub fn rebuild(records: &[ToolResultEvidence], catalog: &[&str]) -> Vec<String> {
    let mut proven: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| !r.is_error) {
        if r.tool_name == FIND_TOOLS {
            proven.extend(names_in(&r.details_added_tool_names));
            proven.extend(names_in(&r.details_activated));
            proven.extend(names_in(&r.added_tool_names));
        } else {
            proven.push(r.tool_name.as_str());
        }
    }
    catalog
        .iter()
        .filter(|n| proven.contains(n))
        .map(|n| n.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(v: Value) -> ToolResultEvidence {
        serde_json::from_value(v).unwrap()
    }

    const CATALOG: [&str; 3] = ["Glob", "Grep", "TaskList"];

    #[test]
    fn successful_find_tools_and_tool_results_count_in_catalog_order() {
        let records = [
            rec(json!({"toolName": "find_tools", "detailsAddedToolNames": ["Grep"]})),
            rec(json!({"toolName": "TaskList"})),
        ];
        assert_eq!(rebuild(&records, &CATALOG), ["Grep", "TaskList"]);
    }

    #[test]
    fn the_older_fields_are_read_too() {
        let records = [
            rec(json!({"toolName": "find_tools", "detailsActivated": ["Glob"]})),
            rec(json!({"toolName": "find_tools", "addedToolNames": ["TaskList"]})),
        ];
        assert_eq!(rebuild(&records, &CATALOG), ["Glob", "TaskList"]);
    }

    #[test]
    fn failed_results_and_names_outside_the_catalog_prove_nothing() {
        let records = [
            rec(json!({"toolName": "find_tools", "isError": true, "detailsAddedToolNames": ["Grep"]})),
            rec(json!({"toolName": "Glob", "isError": true})),
            rec(json!({"toolName": "find_tools", "detailsAddedToolNames": ["Bash", "apply_patch", 7]})),
            rec(json!({"toolName": "Read"})),
            rec(json!({"toolName": "find_tools", "detailsAddedToolNames": "Grep"})),
        ];
        assert!(rebuild(&records, &CATALOG).is_empty());
    }

    #[test]
    fn a_name_counts_only_while_it_is_in_the_current_catalog() {
        let records = [rec(json!({"toolName": "Grep"}))];
        assert!(rebuild(&records, &["Glob"]).is_empty());
    }
}
