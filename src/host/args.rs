//! Tool-argument parsing shared by the host tools (docs/spec/host-tools.md "Common to every tool"): what the model
//! sends arrives as JSON; aliases are folded before anything else (`path` ← `file_path`, `pattern` ← `query`;
//! the canonical spelling wins when both are given; neither is INVALID_ARGUMENT), and every number is range-checked
//! with a message naming the accepted range.

use super::error::HostError;
use serde_json::{Map, Value};

/// The arguments object, or INVALID_ARGUMENT when the call sent something else.
pub fn object<'a>(tool: &str, v: &'a Value) -> Result<&'a Map<String, Value>, HostError> {
    v.as_object().ok_or_else(|| {
        HostError::invalid(format!(
            "{tool} arguments must be a JSON object; send named parameters."
        ))
    })
}

/// A required string under its canonical name or its one alias (canonical wins).
pub fn fold(tool: &str, args: &Map<String, Value>, canonical: &str, alias: &str) -> Result<String, HostError> {
    let (name, v) = match (args.get(canonical), args.get(alias)) {
        (Some(v), _) if !v.is_null() => (canonical, v),
        (_, Some(v)) if !v.is_null() => (alias, v),
        _ => {
            return Err(HostError::invalid(format!(
                "{tool} needs `{canonical}` (or its alias `{alias}`); call again with it."
            )))
        }
    };
    match v.as_str() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        Some(_) => Err(HostError::invalid(format!(
            "{tool}: `{name}` is empty; pass a non-empty string."
        ))),
        None => Err(HostError::invalid(format!(
            "{tool}: `{name}` must be a string; pass it as text."
        ))),
    }
}

/// An optional string; absent or null is None.
pub fn opt_str(tool: &str, args: &Map<String, Value>, name: &str) -> Result<Option<String>, HostError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(HostError::invalid(format!(
            "{tool}: `{name}` must be a string; pass it as text or omit it."
        ))),
    }
}

/// An optional boolean; absent or null is `default`.
pub fn opt_bool(tool: &str, args: &Map<String, Value>, name: &str, default: bool) -> Result<bool, HostError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HostError::invalid(format!(
            "{tool}: `{name}` must be true or false; pass a boolean or omit it."
        ))),
    }
}

/// An optional integer within `min..=max` (an integral float such as `10.0` is accepted; `10.5` is not).
pub fn opt_uint(
    tool: &str,
    args: &Map<String, Value>,
    name: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, HostError> {
    let bad = || {
        HostError::invalid(format!(
            "{tool}: `{name}` must be an integer from {min} to {max}; call again with a value in that range or omit it."
        ))
    };
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let v = match (n.as_u64(), n.as_f64()) {
                (Some(u), _) => u,
                (None, Some(f)) if f.fract() == 0.0 && f >= 0.0 && f <= u64::MAX as f64 => f as u64,
                _ => return Err(bad()),
            };
            if v < min || v > max {
                return Err(bad());
            }
            Ok(Some(v))
        }
        Some(_) => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn aliases_fold_and_the_canonical_spelling_wins() {
        assert_eq!(
            fold("Read", &m(json!({"path": "a"})), "path", "file_path").unwrap(),
            "a"
        );
        assert_eq!(
            fold("Read", &m(json!({"file_path": "b"})), "path", "file_path").unwrap(),
            "b"
        );
        assert_eq!(
            fold("Read", &m(json!({"path": "a", "file_path": "b"})), "path", "file_path").unwrap(),
            "a"
        );
        assert_eq!(
            fold("Grep", &m(json!({"path": null, "file_path": "b"})), "path", "file_path").unwrap(),
            "b"
        );
        let none = fold("Read", &m(json!({})), "path", "file_path").unwrap_err();
        assert_eq!(none.code, "INVALID_ARGUMENT");
        assert!(none.message.contains("`file_path`"));
        assert!(fold("Read", &m(json!({"path": 3})), "path", "file_path")
            .unwrap_err()
            .message
            .contains("string"));
        assert!(fold("Read", &m(json!({"path": ""})), "path", "file_path")
            .unwrap_err()
            .message
            .contains("empty"));
        assert!(object("Read", &json!([1])).is_err());
    }

    #[test]
    fn integers_are_checked_at_their_bounds() {
        let a = m(json!({"lo": 1, "hi": 10, "zero": 0, "over": 11, "frac": 2.5, "whole": 3.0, "neg": -1, "s": "3"}));
        assert_eq!(opt_uint("T", &a, "lo", 1, 10).unwrap(), Some(1));
        assert_eq!(opt_uint("T", &a, "hi", 1, 10).unwrap(), Some(10));
        assert_eq!(opt_uint("T", &a, "whole", 1, 10).unwrap(), Some(3));
        assert_eq!(opt_uint("T", &a, "missing", 1, 10).unwrap(), None);
        for bad in ["zero", "over", "frac", "neg", "s"] {
            let e = opt_uint("T", &a, bad, 1, 10).unwrap_err();
            assert!(e.message.contains("from 1 to 10"), "{bad}: {}", e.message);
        }
        assert!(opt_bool("T", &a, "s", false).is_err());
        assert!(opt_bool("T", &m(json!({"b": true})), "b", false).unwrap());
        assert!(opt_str("T", &a, "lo").is_err());
    }
}
