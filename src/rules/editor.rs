//! Edits the `/pct config` execution-rules editor makes to a rules list. Kept in Rust with the other rule logic so
//! the dialog code only shows rows and forwards choices; every edit returns a new list or a message for the user.

use serde_json::{json, Value};

/// One editor action on a rules list (indexes are 0-based).
pub enum Edit<'a> {
    /// Append `rule-N` (the smallest unused N from the list length + 1), match `*`, all flags off.
    Add,
    Delete(usize),
    /// Swap with the neighbour above (`-1`) or below (`+1`); a move past either end changes nothing.
    Move(usize, i64),
    SetId(usize, &'a str),
    SetMatch(usize, &'a str),
    Toggle(usize, &'a str),
}

/// `Rule id "x" is already used by another rule.` — the exact refusal of a duplicate id.
pub fn duplicate_id(id: &str) -> String {
    format!("Rule id \"{id}\" is already used by another rule.")
}

/// Applies one edit. `Err` carries the message to show; the list is then unchanged.
pub fn apply(rules: &Value, edit: Edit) -> Result<Value, String> {
    let mut list = rules.as_array().cloned().unwrap_or_default();
    let at = |i: usize, list: &Vec<Value>| {
        if i < list.len() {
            Ok(())
        } else {
            Err(format!("There is no rule {}.", i + 1))
        }
    };
    let id_of = |r: &Value| r.get("id").and_then(Value::as_str).unwrap_or("").to_string();
    match edit {
        Edit::Add => {
            let mut n = list.len() + 1;
            while list.iter().any(|r| id_of(r) == format!("rule-{n}")) {
                n += 1;
            }
            list.push(json!({"id": format!("rule-{n}"), "match": "*", "patch": false, "shell": false, "code": false}));
        }
        Edit::Delete(i) => {
            at(i, &list)?;
            list.remove(i);
        }
        Edit::Move(i, d) => {
            at(i, &list)?;
            let j = i as i64 + d;
            if j >= 0 && (j as usize) < list.len() {
                list.swap(i, j as usize);
            }
        }
        Edit::SetId(i, id) => {
            at(i, &list)?;
            let id = id.trim();
            if id.is_empty() {
                return Err("A rule id cannot be empty.".into());
            }
            if list.iter().enumerate().any(|(j, r)| j != i && id_of(r) == id) {
                return Err(duplicate_id(id));
            }
            list[i]["id"] = json!(id);
        }
        Edit::SetMatch(i, pattern) => {
            at(i, &list)?;
            let pattern = pattern.trim();
            if pattern.is_empty() {
                return Err("A rule's match pattern cannot be empty.".into());
            }
            list[i]["match"] = json!(pattern);
        }
        Edit::Toggle(i, flag) => {
            at(i, &list)?;
            if !["patch", "shell", "code"].contains(&flag) {
                return Err(format!("Unknown rule flag {flag:?}."));
            }
            let on = list[i].get(flag).and_then(Value::as_bool).unwrap_or(false);
            list[i][flag] = json!(!on);
        }
    }
    Ok(Value::Array(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits() {
        let r = apply(&json!([]), Edit::Add).unwrap();
        let r = apply(&r, Edit::Add).unwrap();
        assert_eq!(r[1]["id"], "rule-2");
        let r = apply(&r, Edit::Delete(0)).unwrap();
        let r = apply(&r, Edit::Add).unwrap();
        assert_eq!(r[1]["id"], "rule-3", "rule-2 is taken, so the next free id");
        assert_eq!(
            apply(&r, Edit::SetId(1, "rule-2")).unwrap_err(),
            "Rule id \"rule-2\" is already used by another rule."
        );
        let r = apply(&r, Edit::SetId(1, " mine ")).unwrap();
        assert_eq!(r[1]["id"], "mine");
        let r = apply(&r, Edit::Move(1, -1)).unwrap();
        assert_eq!(r[0]["id"], "mine");
        assert_eq!(
            apply(&r, Edit::Move(0, -1)).unwrap(),
            r,
            "moving past the top changes nothing"
        );
        let r = apply(&r, Edit::Toggle(0, "code")).unwrap();
        assert_eq!(r[0]["code"], true);
        let r = apply(&r, Edit::SetMatch(0, "gpt-*")).unwrap();
        assert_eq!(r[0]["match"], "gpt-*");
        assert!(apply(&r, Edit::SetMatch(0, " ")).is_err());
        assert!(apply(&r, Edit::Delete(5)).is_err());
    }
}
