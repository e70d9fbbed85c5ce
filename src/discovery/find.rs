//! `find_tools {query?, load?}`: ranked search over the managed deferred set and additive, idempotent loads.
//!
//! Why loads are returned, not applied: the tool only records names for this session; the next sync (run by
//! the TypeScript core right after) makes them visible for the next model turn. Nothing is ever executed.

use super::eligibility::{state_of, State};
use crate::rules::decide::{decide, Decision};
use crate::rules::input::ResolveInput;
use crate::rules::names::*;
use crate::rules::ownership::Registry;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most matches a query returns.
pub const MAX_RESULTS: usize = 8;
/// Longest one-line summary, in characters, including the `…` when cut.
pub const SUMMARY_CHARS: usize = 140;
/// The validation message when neither a query nor a load list was given.
pub const NEED_QUERY_OR_LOAD: &str = "find_tools requires a query or a non-empty load list.";

/// The tool's arguments.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FindRequest {
    #[serde(default)]
    pub query: Option<Value>,
    #[serde(default)]
    pub load: Option<Value>,
}

/// One query match.
#[derive(Clone, Debug, Serialize)]
pub struct Match {
    pub name: String,
    pub summary: String,
    pub state: String,
}

/// One rejected load.
#[derive(Clone, Debug, Serialize)]
pub struct Rejected {
    pub name: String,
    pub reason: String,
}

/// What find_tools answers. On `error`, nothing changed and the call should fail with `error.message`.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<FindError>,
    pub text: String,
    pub matches: Vec<Match>,
    /// Names newly loaded by this call.
    pub loaded: Vec<String>,
    /// Requested names that were already loaded or visible.
    pub already_active: Vec<String>,
    pub rejected: Vec<Rejected>,
    /// The session's loaded set after this call (store it; the next sync makes the names visible).
    pub loaded_deferred: Vec<String>,
    /// The prompt's on-demand loads after this call (store it; the next sync makes the names visible).
    pub loaded_on_demand: Vec<String>,
    /// Every name this call made (or found) available: the evidence a later prompt, a resume or a compaction
    /// rebuilds the on-demand loads from (src/discovery/evidence.rs). Goes into the result's `details`.
    pub added_tool_names: Vec<String>,
}

crate::codes::error_codes! {
    /// Every code a refused find_tools call carries (docs/rules.md "`find_tools` codes", in the table's order).
    pub enum FindCode {
        /// Neither a query nor a load list, a query that is not a string, or a load list that is not strings.
        InvalidArguments = "invalid-arguments" => "pass a query string, a load list of exact tool names, or both",
        /// Tool Discovery is off, or another extension owns find_tools.
        Disabled = "disabled" => "turn on Tool Discovery with /pct config",
    }
}

impl Serialize for FindCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A refused call.
#[derive(Clone, Debug, Serialize)]
pub struct FindError {
    pub code: FindCode,
    pub message: String,
}

fn fail(code: FindCode, message: impl Into<String>, input: &ResolveInput) -> FindResult {
    let message = message.into();
    FindResult {
        error: Some(FindError {
            code,
            message: message.clone(),
        }),
        text: message,
        loaded_deferred: input.loaded_deferred.clone(),
        loaded_on_demand: input.loaded_on_demand.clone(),
        ..Default::default()
    }
}

/// The first line of a description, cut to [`SUMMARY_CHARS`] characters with `…`.
pub fn summarize(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or("").trim();
    let count = line.chars().count();
    if count <= SUMMARY_CHARS {
        return line.to_string();
    }
    let mut s: String = line.chars().take(SUMMARY_CHARS - 1).collect();
    s = s.trim_end().to_string();
    s.push('…');
    s
}

fn description_of<'a>(name: &str, reg: &'a Registry) -> &'a str {
    match reg.description(name) {
        Some(d) if !d.trim().is_empty() => d,
        _ => fallback_description(name),
    }
}

/// Ranked matches: exact name, then name substring, then description substring (case-insensitive), each tier
/// in the managed set's order; at most [`MAX_RESULTS`].
fn query(q: &str, input: &ResolveInput, reg: &Registry, d: &Decision) -> Vec<Match> {
    let needle = q.trim().to_lowercase();
    let mut tiers: [Vec<&str>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for name in managed_names(d) {
        let lname = name.to_lowercase();
        if lname == needle {
            tiers[0].push(name);
        } else if lname.contains(&needle) {
            tiers[1].push(name);
        } else if description_of(name, reg).to_lowercase().contains(&needle) {
            tiers[2].push(name);
        }
    }
    tiers
        .iter()
        .flatten()
        .take(MAX_RESULTS)
        .map(|name| Match {
            name: name.to_string(),
            summary: summarize(description_of(name, reg)),
            state: state_of(name, input, reg, d).label(),
        })
        .collect()
}

/// The names find_tools manages: the configured deferred set, then the on-demand host tools.
fn managed_names(d: &Decision) -> impl Iterator<Item = &str> {
    d.deferred_set
        .iter()
        .map(String::as_str)
        .chain(d.on_demand.iter().copied())
}

/// Runs one find_tools call against the snapshot (whose `loadedDeferred` is the session's loads so far).
pub fn find_tools(input: &ResolveInput, req: &FindRequest) -> FindResult {
    let q = match &req.query {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return fail(FindCode::InvalidArguments, "find_tools query must be a string.", input),
    };
    let load: Vec<String> = match &req.load {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut v = Vec::new();
            for it in items {
                match it.as_str() {
                    Some(s) => v.push(s.to_string()),
                    None => {
                        return fail(
                            FindCode::InvalidArguments,
                            "find_tools load must be a list of exact tool names (strings).",
                            input,
                        )
                    }
                }
            }
            v
        }
        Some(_) => {
            return fail(
                FindCode::InvalidArguments,
                "find_tools load must be a list of exact tool names (strings).",
                input,
            )
        }
    };
    let q = q.filter(|s| !s.trim().is_empty());
    if q.is_none() && load.is_empty() {
        return fail(FindCode::InvalidArguments, NEED_QUERY_OR_LOAD, input);
    }
    let d = decide(input);
    if !d.loader_available {
        return fail(
            FindCode::Disabled,
            "find_tools is not enabled: turn on Tool Discovery with /pct config (and make sure no other extension owns find_tools).",
            input,
        );
    }
    let reg = Registry::new(&input.tools, &input.identity);
    let mut out = FindResult {
        loaded_deferred: d.loaded.clone(),
        loaded_on_demand: d.loaded_on_demand.clone(),
        ..Default::default()
    };

    let managed = |n: &str| managed_names(&d).any(|x| x == n);
    let mut seen: Vec<&str> = Vec::new();
    for name in &load {
        if seen.contains(&name.as_str()) {
            continue;
        }
        seen.push(name);
        let reject = |out: &mut FindResult, n: &str, reason: String| {
            if !out.rejected.iter().any(|r| r.name == n) {
                out.rejected.push(Rejected {
                    name: n.to_string(),
                    reason,
                });
            }
        };
        if !managed(name) {
            reject(&mut out, name, "not-managed".into());
            continue;
        }
        // The members that must all be usable, and the members that get loaded.
        let (members, to_load): (Vec<&str>, Vec<&str>) = if COMPUTER_USE.contains(&name.as_str()) {
            if let Some(missing) = COMPUTER_USE.iter().find(|m| !managed(m)) {
                let reason = format!("group incomplete: {missing} is not managed");
                for m in COMPUTER_USE {
                    reject(&mut out, m, reason.clone());
                }
                continue;
            }
            (COMPUTER_USE.to_vec(), COMPUTER_USE.to_vec())
        } else if SHELL_PAIR.contains(&name.as_str()) {
            (SHELL_PAIR.to_vec(), vec![name.as_str()])
        } else if CODE_PAIR.contains(&name.as_str()) {
            (CODE_PAIR.to_vec(), vec![name.as_str()])
        } else {
            (vec![name.as_str()], vec![name.as_str()])
        };
        let own = state_of(name, input, &reg, &d);
        if let State::Unavailable(reason) = &own {
            if members.len() == 6 {
                let reason = format!("group blocked by {name}: {reason}");
                for m in COMPUTER_USE {
                    reject(&mut out, m, reason.clone());
                }
            } else {
                reject(&mut out, name, reason.clone());
            }
            continue;
        }
        let blocker =
            members
                .iter()
                .filter(|m| **m != name.as_str())
                .find_map(|m| match state_of(m, input, &reg, &d) {
                    State::Unavailable(r) => Some(format!("group blocked by {m}: {r}")),
                    _ => None,
                });
        if let Some(reason) = blocker {
            let targets: Vec<&str> = if members.len() == 6 {
                COMPUTER_USE.to_vec()
            } else {
                vec![name.as_str()]
            };
            for m in targets {
                reject(&mut out, m, reason.clone());
            }
            continue;
        }
        for m in to_load {
            let st = state_of(m, input, &reg, &d);
            let on_demand = d.on_demand.contains(&m);
            let kept = if on_demand {
                &mut out.loaded_on_demand
            } else {
                &mut out.loaded_deferred
            };
            if st == State::Active || kept.iter().any(|l| l == m) {
                if !out.already_active.iter().any(|x| x == m) && !out.loaded.iter().any(|x| x == m) {
                    out.already_active.push(m.to_string());
                }
            } else {
                kept.push(m.to_string());
                out.loaded.push(m.to_string());
            }
        }
    }

    // The query sees the state after this call's loads.
    let mut text: Vec<String> = Vec::new();
    if let Some(q) = &q {
        let mut after = input.clone();
        after.loaded_deferred = out.loaded_deferred.clone();
        after.loaded_on_demand = out.loaded_on_demand.clone();
        let d_after = decide(&after);
        out.matches = query(q, &after, &reg, &d_after);
        if out.matches.is_empty() {
            text.push("No matching managed tools.".into());
        } else {
            text.push(format!("Managed tools matching \"{}\":", q.trim()));
            for m in &out.matches {
                text.push(format!("- {} [{}]: {}", m.name, m.state, m.summary));
            }
        }
    }
    if !load.is_empty() {
        if !out.loaded.is_empty() {
            text.push(format!("Loaded for the next turn: {}", out.loaded.join(", ")));
        }
        if !out.already_active.is_empty() {
            text.push(format!("Already loaded: {}", out.already_active.join(", ")));
        }
        for r in &out.rejected {
            text.push(format!("Rejected {}: {}", r.name, r.reason));
        }
    }
    out.text = text.join("\n");
    out.added_tool_names = out.loaded.iter().chain(&out.already_active).cloned().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::input::ToolEntry;
    use crate::rules::tests::{registry, rules_cfg, snapshot};
    use serde_json::json;

    fn req(query: Option<&str>, load: Option<Vec<&str>>) -> FindRequest {
        FindRequest {
            query: query.map(|q| json!(q)),
            load: load.map(|l| json!(l)),
        }
    }

    fn input(deferred: Value, p: bool, s: bool, c: bool) -> ResolveInput {
        let mut cfg = rules_cfg(json!([{ "id": "r", "match": "*", "patch": p, "shell": s, "code": c }]));
        cfg["toolDiscovery"] = json!({ "enabled": true, "deferred": deferred });
        snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[]))
    }

    #[test]
    fn validation() {
        let i = input(json!([APPLY_PATCH]), true, false, false);
        for r in [
            req(None, None),
            req(Some("  "), None),
            req(None, Some(vec![])),
            req(Some(""), Some(vec![])),
        ] {
            let out = find_tools(&i, &r);
            assert_eq!(out.error.as_ref().unwrap().message, NEED_QUERY_OR_LOAD);
        }
        let bad = FindRequest {
            query: Some(json!(5)),
            load: None,
        };
        assert_eq!(find_tools(&i, &bad).error.unwrap().code, "invalid-arguments");
        let bad = FindRequest {
            query: None,
            load: Some(json!([1])),
        };
        assert_eq!(find_tools(&i, &bad).error.unwrap().code, "invalid-arguments");
        let mut off = i.clone();
        off.config.tool_discovery.enabled = false;
        assert_eq!(
            find_tools(&off, &req(Some("patch"), None)).error.unwrap().code,
            "disabled"
        );
    }

    #[test]
    fn ranking_and_states() {
        let i = input(
            json!([EXEC_COMMAND, WRITE_STDIN, APPLY_PATCH, GENERATE_IMAGE]),
            true,
            true,
            false,
        );
        // "exec" is no exact name here; name substrings first (set order), then description hits.
        let out = find_tools(&i, &req(Some("EXEC"), None));
        let names: Vec<_> = out.matches.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec![EXEC_COMMAND]);
        let out = find_tools(&i, &req(Some("shell"), None));
        let names: Vec<_> = out.matches.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec![EXEC_COMMAND, WRITE_STDIN]);
        let out = find_tools(&i, &req(Some("apply_patch"), None));
        assert_eq!(out.matches[0].name, APPLY_PATCH);
        assert_eq!(out.matches[0].state, "eligible");
        let out = find_tools(&i, &req(Some("image"), None));
        assert_eq!(out.matches[0].state, "unavailable: disabled");
        let out = find_tools(&i, &req(Some("zzz-nothing"), None));
        assert!(out.matches.is_empty());
        assert_eq!(out.text, "No matching managed tools.");
        // exact > name substring > description substring
        let mut tools = registry(&[], &[]);
        for t in tools.iter_mut() {
            if t.name == WRITE_STDIN {
                t.description = Some("mentions patch in its description".into());
            }
        }
        let mut i2 = input(json!([WRITE_STDIN, APPLY_PATCH]), true, true, false);
        i2.tools = tools;
        let out = find_tools(&i2, &req(Some("patch"), None));
        let names: Vec<_> = out.matches.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec![APPLY_PATCH, WRITE_STDIN]);
        let out = find_tools(&i2, &req(Some("write_stdin"), None));
        assert_eq!(out.matches[0].name, WRITE_STDIN);
    }

    #[test]
    fn at_most_eight_results() {
        // Eleven managed names all match "_" in their name: 8 come back.
        let all: Vec<&str> = all_toolkit_names()
            .filter(|n| is_deferrable(n) && n.contains('_'))
            .collect();
        assert!(all.len() > MAX_RESULTS);
        let out = find_tools(&input(json!(all), true, true, true), &req(Some("_"), None));
        assert_eq!(out.matches.len(), MAX_RESULTS);
        // Exactly eight candidates: all eight.
        let eight: Vec<&str> = all.iter().copied().take(MAX_RESULTS).collect();
        let out = find_tools(&input(json!(eight), true, true, true), &req(Some("_"), None));
        assert_eq!(out.matches.len(), MAX_RESULTS);
    }

    #[test]
    fn summaries_cut_at_140_chars() {
        let exact = "x".repeat(SUMMARY_CHARS);
        assert_eq!(summarize(&exact), exact);
        let long = "y".repeat(SUMMARY_CHARS + 1);
        let s = summarize(&long);
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        assert!(s.ends_with('…'));
        assert_eq!(summarize("first line\nsecond line"), "first line");
        let multibyte = "é".repeat(200);
        assert_eq!(summarize(&multibyte).chars().count(), SUMMARY_CHARS);
    }

    #[test]
    fn load_is_additive_and_idempotent() {
        let mut i = input(json!([APPLY_PATCH, EXEC_COMMAND]), true, true, false);
        let out = find_tools(&i, &req(None, Some(vec![APPLY_PATCH])));
        assert!(out.error.is_none());
        assert_eq!(out.loaded, vec![APPLY_PATCH]);
        assert_eq!(out.loaded_deferred, vec![APPLY_PATCH]);
        assert_eq!(out.text, "Loaded for the next turn: apply_patch");
        i.loaded_deferred = out.loaded_deferred.clone();
        let again = find_tools(&i, &req(None, Some(vec![APPLY_PATCH, APPLY_PATCH])));
        assert!(again.loaded.is_empty());
        assert_eq!(again.already_active, vec![APPLY_PATCH]);
        assert_eq!(again.loaded_deferred, vec![APPLY_PATCH]);
        let more = find_tools(&i, &req(Some("exec_command"), Some(vec![EXEC_COMMAND])));
        assert_eq!(more.loaded_deferred, vec![APPLY_PATCH, EXEC_COMMAND], "additive");
        assert_eq!(more.matches[0].state, "active", "the query sees this call's loads");
        // A non-deferred, visible name is not managed.
        let out = find_tools(&i, &req(None, Some(vec![WRITE_STDIN, "bash", "nope"])));
        let reasons: Vec<_> = out
            .rejected
            .iter()
            .map(|r| (r.name.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (WRITE_STDIN, "not-managed"),
                ("bash", "not-managed"),
                ("nope", "not-managed")
            ]
        );
    }

    #[test]
    fn load_rejections_with_reasons() {
        // Patch not requested by the rule: disabled.
        let i = input(json!([APPLY_PATCH]), false, false, false);
        let out = find_tools(&i, &req(None, Some(vec![APPLY_PATCH])));
        assert_eq!(out.rejected[0].reason, "disabled");
        assert!(out.loaded_deferred.is_empty());
        // Another extension owns apply_patch.
        let mut i = input(json!([APPLY_PATCH]), true, false, false);
        i.tools.push(ToolEntry {
            name: APPLY_PATCH.into(),
            description: None,
            source: "/x.ts".into(),
        });
        assert_eq!(
            find_tools(&i, &req(None, Some(vec![APPLY_PATCH]))).rejected[0].reason,
            "conflicting-tool-name"
        );
        // Filtered out by the host.
        let mut i = input(json!([APPLY_PATCH]), true, false, false);
        i.tools.retain(|t| t.name != APPLY_PATCH);
        assert_eq!(
            find_tools(&i, &req(None, Some(vec![APPLY_PATCH]))).rejected[0].reason,
            "not-registered"
        );
        // Nested-only apply_patch (P+C) is not a direct name.
        let i = input(json!([APPLY_PATCH]), true, false, true);
        assert_eq!(
            find_tools(&i, &req(None, Some(vec![APPLY_PATCH]))).rejected[0].reason,
            "not-registered"
        );
    }

    #[test]
    fn pairs_check_the_sibling_but_load_only_the_name() {
        let i = input(json!([EXEC_COMMAND, WRITE_STDIN]), false, true, false);
        let out = find_tools(&i, &req(None, Some(vec![EXEC_COMMAND])));
        assert_eq!(out.loaded, vec![EXEC_COMMAND]);
        // Sibling owned by someone else: the whole route is down; the name reports the pair's reason.
        let mut i = input(json!([EXEC_COMMAND]), false, true, false);
        i.tools.push(ToolEntry {
            name: WRITE_STDIN.into(),
            description: None,
            source: "/x.ts".into(),
        });
        let out = find_tools(&i, &req(None, Some(vec![EXEC_COMMAND])));
        assert_eq!(out.rejected.len(), 1);
        assert_eq!(out.rejected[0].name, EXEC_COMMAND);
        assert_eq!(out.rejected[0].reason, "name-taken");
        // Sibling filtered by the host while the name itself is fine: blocked by the sibling.
        let mut i = input(json!([EXEC]), false, false, true);
        i.tools.retain(|t| t.name != WAIT);
        let out = find_tools(&i, &req(None, Some(vec![EXEC])));
        assert_eq!(out.rejected[0].reason, "code-pair-unavailable");
    }

    #[test]
    fn loading_both_members_of_a_pair() {
        let d_in = input(json!([EXEC, WAIT]), false, false, true);
        let d = crate::rules::decide::decide(&d_in);
        let reg = Registry::new(&d_in.tools, &d_in.identity);
        assert_eq!(
            crate::discovery::eligibility::state_of(WAIT, &d_in, &reg, &d),
            State::Eligible
        );
        let out = find_tools(&d_in, &req(None, Some(vec![WAIT, EXEC])));
        assert_eq!(out.loaded, vec![WAIT, EXEC]);
    }

    #[test]
    fn computer_use_group_is_all_or_none() {
        // Default deferred set: all six are managed; on Linux the group is blocked by the platform.
        let mut cfg = rules_cfg(json!([]));
        cfg["toolDiscovery"] = json!({ "enabled": true });
        cfg["computerUse"] = json!({ "enabled": true });
        let i = snapshot(cfg.clone(), Some(("faux", "faux-1")), registry(&[], &[]));
        let out = find_tools(&i, &req(None, Some(vec!["computer_use_click"])));
        assert_eq!(out.rejected.len(), 6);
        assert!(out
            .rejected
            .iter()
            .all(|r| r.reason == "group blocked by computer_use_click: unsupported-platform"));
        // Incomplete group in the managed set.
        cfg["toolDiscovery"]["deferred"] = json!(["computer_use_click"]);
        let i = snapshot(cfg, Some(("faux", "faux-1")), registry(&[], &[]));
        let out = find_tools(&i, &req(None, Some(vec!["computer_use_click"])));
        assert_eq!(out.rejected.len(), 6);
        assert_eq!(
            out.rejected[0].reason,
            "group incomplete: computer_use_list_apps is not managed"
        );
    }

    /// The docs/rules.md "`find_tools` codes" table lists [`FindCode::ALL`] in order.
    #[test]
    fn the_doc_table_is_all_codes_in_order() {
        let all: Vec<&str> = FindCode::ALL.map(FindCode::as_str).to_vec();
        assert_eq!(
            crate::codes::check::doc_table(include_str!("../../docs/rules.md"), "### `find_tools` codes"),
            all
        );
    }

    /// `FindToolsError.code` in index.d.ts (napi `ts_type` in src/bind/rules.rs) is [`FindCode::ALL`]: a refusal is a
    /// result, and a panic throws instead.
    #[test]
    fn index_d_ts_union_is_all_codes() {
        let dts = include_str!("../../index.d.ts");
        assert_eq!(
            crate::codes::check::dts_union(dts, "FindToolsError", "code"),
            crate::codes::check::with_extra(FindCode::ALL.map(FindCode::as_str), &[])
        );
    }
}
