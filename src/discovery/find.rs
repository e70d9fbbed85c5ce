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
}

/// A refused call.
#[derive(Clone, Debug, Serialize)]
pub struct FindError {
    pub code: &'static str,
    pub message: String,
}

fn fail(code: &'static str, message: impl Into<String>, input: &ResolveInput) -> FindResult {
    let message = message.into();
    FindResult { error: Some(FindError { code, message: message.clone() }), text: message, loaded_deferred: input.loaded_deferred.clone(), ..Default::default() }
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
    let mut tiers: [Vec<&String>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for name in &d.deferred_set {
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

/// Runs one find_tools call against the snapshot (whose `loadedDeferred` is the session's loads so far).
pub fn find_tools(input: &ResolveInput, req: &FindRequest) -> FindResult {
    let q = match &req.query {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return fail("invalid-arguments", "find_tools query must be a string.", input),
    };
    let load: Vec<String> = match &req.load {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut v = Vec::new();
            for it in items {
                match it.as_str() {
                    Some(s) => v.push(s.to_string()),
                    None => return fail("invalid-arguments", "find_tools load must be a list of exact tool names (strings).", input),
                }
            }
            v
        }
        Some(_) => return fail("invalid-arguments", "find_tools load must be a list of exact tool names (strings).", input),
    };
    let q = q.filter(|s| !s.trim().is_empty());
    if q.is_none() && load.is_empty() {
        return fail("invalid-arguments", NEED_QUERY_OR_LOAD, input);
    }
    let d = decide(input);
    if !d.loader_available {
        return fail(
            "disabled",
            "find_tools is not enabled: turn on Tool Discovery with /pct config (and make sure no other extension owns find_tools).",
            input,
        );
    }
    let reg = Registry::new(&input.tools, &input.identity);
    let mut out = FindResult { loaded_deferred: d.loaded.clone(), ..Default::default() };

    let managed = |n: &str| d.deferred_set.iter().any(|x| x == n);
    let mut seen: Vec<&str> = Vec::new();
    for name in &load {
        if seen.contains(&name.as_str()) {
            continue;
        }
        seen.push(name);
        let reject = |out: &mut FindResult, n: &str, reason: String| {
            if !out.rejected.iter().any(|r| r.name == n) {
                out.rejected.push(Rejected { name: n.to_string(), reason });
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
        let blocker = members
            .iter()
            .filter(|m| **m != name.as_str())
            .find_map(|m| match state_of(m, input, &reg, &d) {
                State::Unavailable(r) => Some(format!("group blocked by {m}: {r}")),
                _ => None,
            });
        if let Some(reason) = blocker {
            let targets: Vec<&str> = if members.len() == 6 { COMPUTER_USE.to_vec() } else { vec![name.as_str()] };
            for m in targets {
                reject(&mut out, m, reason.clone());
            }
            continue;
        }
        for m in to_load {
            let st = state_of(m, input, &reg, &d);
            if st == State::Active || out.loaded_deferred.iter().any(|l| l == m) {
                if !out.already_active.iter().any(|x| x == m) && !out.loaded.iter().any(|x| x == m) {
                    out.already_active.push(m.to_string());
                }
            } else {
                out.loaded.push(m.to_string());
                out.loaded_deferred.push(m.to_string());
            }
        }
    }

    // The query sees the state after this call's loads.
    let mut text: Vec<String> = Vec::new();
    if let Some(q) = &q {
        let mut after = input.clone();
        after.loaded_deferred = out.loaded_deferred.clone();
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
    out
}
