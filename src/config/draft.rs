//! Edits of a draft made by `/pct config`: set one known setting on the raw object, keeping every unknown field
//! (also inside known sections) untouched.

use serde_json::{Map, Value};

/// Sets `dotted` (e.g. `webSearch.enabled`) to `value` on a clone of `raw`, creating missing sections.
/// `null` at a one-segment path removes that key (used for `execution`).
pub fn set(raw: &Value, dotted: &str, value: Value) -> Result<Value, String> {
    let mut out = if raw.is_object() {
        raw.clone()
    } else {
        Value::Object(Map::new())
    };
    let parts: Vec<&str> = dotted.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("invalid setting path {dotted:?}"));
    }
    let mut cur = &mut out;
    for (i, part) in parts.iter().enumerate() {
        let obj = cur
            .as_object_mut()
            .ok_or_else(|| format!("{} must be an object", parts[..i].join(".")))?;
        if i == parts.len() - 1 {
            if value.is_null() && parts.len() == 1 {
                obj.remove(*part);
            } else {
                obj.insert((*part).to_string(), value);
            }
            break;
        }
        cur = obj
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_unknown_fields() {
        let raw = json!({"webSearch": {"future": 1}, "other": true});
        let out = set(&raw, "webSearch.enabled", json!(true)).unwrap();
        assert_eq!(out, json!({"webSearch": {"future": 1, "enabled": true}, "other": true}));
        let out = set(&out, "codeMode.approvalMode", json!("always")).unwrap();
        assert_eq!(out["codeMode"], json!({"approvalMode": "always"}));
        let out = set(&json!({"execution": {}}), "execution", Value::Null).unwrap();
        assert_eq!(out, json!({}));
    }
}
