//! Who owns each toolkit name right now (docs/spec/toolkit.md §3).
//!
//! Why: the toolkit never replaces, disables or rewrites another extension's tools. A name is ours only when the
//! winning registration in `pi.getAllTools()` reports this factory's source path; a visible other winner is a
//! conflict; a name absent from the list was filtered by the host (`--tools` allowlist, child role) and is
//! *missing* — never a conflict under execution rules.

use super::input::ToolEntry;
use std::collections::HashMap;

/// The state of one name in the current tool registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The winner is this extension.
    Ours,
    /// The winner is Pi's builtin.
    Builtin,
    /// The winner is another extension (or an SDK tool).
    Foreign,
    /// No registration is visible (never registered, or filtered out by the host).
    Missing,
}

/// Name → winner classification, built once per decision.
pub struct Registry<'a> {
    winners: HashMap<&'a str, &'a ToolEntry>,
    identity: &'a str,
}

impl<'a> Registry<'a> {
    /// Indexes `tools` (the last entry of a name wins, as in Pi's own registry map).
    pub fn new(tools: &'a [ToolEntry], identity: &'a str) -> Self {
        let mut winners = HashMap::with_capacity(tools.len());
        for t in tools {
            winners.insert(t.name.as_str(), t);
        }
        Registry { winners, identity }
    }

    /// Classifies one name.
    pub fn owner(&self, name: &str) -> Owner {
        match self.winners.get(name) {
            None => Owner::Missing,
            Some(t) if !self.identity.is_empty() && t.source == self.identity => Owner::Ours,
            Some(t) if t.source == "builtin" => Owner::Builtin,
            Some(_) => Owner::Foreign,
        }
    }

    /// Whether every name of an atomic group is ours.
    pub fn all_ours(&self, names: &[&str]) -> bool {
        names.iter().all(|n| self.owner(n) == Owner::Ours)
    }

    /// Whether any name of a group has a visible winner that is not us (a conflict, not a missing name).
    pub fn any_foreign(&self, names: &[&str]) -> bool {
        names
            .iter()
            .any(|n| matches!(self.owner(n), Owner::Foreign | Owner::Builtin))
    }

    /// The winner's description (for find_tools summaries).
    pub fn description(&self, name: &str) -> Option<&'a str> {
        self.winners.get(name).and_then(|t| t.description.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, source: &str) -> ToolEntry {
        ToolEntry {
            name: name.into(),
            description: None,
            source: source.into(),
        }
    }

    #[test]
    fn classifies_winners() {
        let tools = vec![
            t("bash", "builtin"),
            t("apply_patch", "/me/index.ts"),
            t("exec", "/other/ext.ts"),
            t("exec", "/me/index.ts"),
        ];
        let r = Registry::new(&tools, "/me/index.ts");
        assert_eq!(r.owner("bash"), Owner::Builtin);
        assert_eq!(r.owner("apply_patch"), Owner::Ours);
        assert_eq!(r.owner("exec"), Owner::Ours, "last registration wins");
        assert_eq!(r.owner("wait"), Owner::Missing);
        assert!(!r.all_ours(&["exec", "wait"]));
        assert!(!r.any_foreign(&["exec", "wait"]));
        let r2 = Registry::new(&tools, "");
        assert_eq!(
            r2.owner("apply_patch"),
            Owner::Foreign,
            "an unknown identity never claims a name"
        );
    }
}
