//! Normalisation of `exec` / `wait` arguments (both field spellings, ranges, handles) and of the pragma line.
//! Everything here runs before a cell starts: a refusal changes nothing.

use serde_json::{Map, Value};

use super::errors::{CellCode, CodeError};
use super::limits::*;

/// A validated `exec` call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecInput {
    /// The program with the pragma line blanked (line numbers unchanged).
    pub code: String,
    /// `None` = every admitted adapter at start; `Some(list)` = exactly these (deduplicated, in order).
    pub uses: Option<Vec<String>>,
    pub yield_time_ms: u64,
    pub max_output_bytes: usize,
}

/// A validated `wait` call.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitInput {
    pub cell_id: String,
    pub terminate: bool,
    pub yield_time_ms: u64,
    pub max_output_bytes: usize,
}

fn as_object(args: &Value, tool: &str) -> Result<Map<String, Value>, CodeError> {
    match args {
        Value::Object(m) => Ok(m.clone()),
        Value::String(s) if tool == "exec" => {
            // The freeform (grammar) variant: the raw program is the whole argument.
            let mut m = Map::new();
            m.insert("code".into(), Value::String(s.clone()));
            Ok(m)
        }
        _ => Err(CodeError::new(
            CellCode::InvalidInput,
            format!("{tool} expects a JSON object of arguments."),
        )),
    }
}

/// Reads one field that has two accepted spellings; both present with different values is refused.
fn pair(m: &mut Map<String, Value>, a: &str, b: &str) -> Result<Option<Value>, CodeError> {
    let va = m.remove(a);
    let vb = m.remove(b);
    match (va, vb) {
        (Some(x), Some(y)) if x != y => Err(CodeError::new(
            CellCode::InvalidInput,
            format!("{a} and {b} are the same field and were given different values; send only one of them."),
        )),
        (Some(x), _) => Ok(Some(x)),
        (None, y) => Ok(y),
    }
}

fn int_in(v: &Value, name: &str, lo: u64, hi: u64) -> Result<u64, CodeError> {
    match v.as_u64() {
        Some(n) if n >= lo && n <= hi => Ok(n),
        _ => Err(CodeError::new(
            CellCode::InvalidLimit,
            format!("{name} must be an integer from {lo} to {hi}."),
        )),
    }
}

fn no_unknown(m: &Map<String, Value>, tool: &str, allowed: &str) -> Result<(), CodeError> {
    if let Some(k) = m.keys().next() {
        return Err(CodeError::new(
            CellCode::InvalidInput,
            format!("{tool} does not accept the field \"{k}\". Accepted fields: {allowed}."),
        ));
    }
    Ok(())
}

/// The output budget of one read: the very resolution Shell uses (`output::resolve_budget`: `maxOutputBytes`
/// and/or the token spelling at 4 bytes per token, each range-checked first, the smaller wins), with Code Mode's
/// error code.
fn budget(bytes: Option<Value>, tokens: Option<Value>, tokens_name: &str) -> Result<usize, CodeError> {
    crate::output::resolve_budget(bytes.as_ref(), "maxOutputBytes", tokens.as_ref(), tokens_name)
        .map_err(|m| CodeError::new(CellCode::InvalidLimit, m))
}

/// The optional first-line pragma `// @exec: {"yield_time_ms": N, "max_output_tokens": M}`.
#[derive(Debug, Default, PartialEq)]
struct Pragma {
    yield_time_ms: Option<Value>,
    max_output_tokens: Option<Value>,
}

const PRAGMA_PREFIX: &str = "// @exec:";

/// Splits off the pragma; the pragma line is replaced by an empty line so line numbers do not move.
fn take_pragma(code: &str) -> Result<(String, Pragma), CodeError> {
    let first_end = code.find('\n').unwrap_or(code.len());
    let first = code[..first_end].trim_end_matches('\r');
    let Some(rest) = first.trim_start().strip_prefix(PRAGMA_PREFIX) else {
        return Ok((code.to_string(), Pragma::default()));
    };
    let parsed: Value = serde_json::from_str(rest.trim()).map_err(|_| {
        CodeError::new(
            CellCode::InvalidCode,
            "The // @exec: pragma must be followed by a JSON object, e.g. // @exec: {\"yield_time_ms\": 1000}.",
        )
    })?;
    let Value::Object(mut m) = parsed else {
        return Err(CodeError::new(
            CellCode::InvalidCode,
            "The // @exec: pragma must be a JSON object.",
        ));
    };
    let p = Pragma {
        yield_time_ms: m.remove("yield_time_ms"),
        max_output_tokens: m.remove("max_output_tokens"),
    };
    if let Some(k) = m.keys().next() {
        return Err(CodeError::new(
            CellCode::InvalidCode,
            format!("The // @exec: pragma does not accept \"{k}\"; only yield_time_ms and max_output_tokens."),
        ));
    }
    Ok((code[first_end..].to_string(), p))
}

fn merge(name: &str, explicit: Option<Value>, pragma: Option<Value>) -> Result<Option<Value>, CodeError> {
    match (explicit, pragma) {
        (Some(a), Some(b)) if a != b => Err(CodeError::new(
            CellCode::InvalidCode,
            format!("The // @exec: pragma sets {name} to {b} but the call sets it to {a}; remove one of them."),
        )),
        (Some(a), _) => Ok(Some(a)),
        (None, b) => Ok(b),
    }
}

/// Validates `exec` arguments (object form or the raw freeform program).
pub fn parse_exec(args: &Value) -> Result<ExecInput, CodeError> {
    let mut m = as_object(args, "exec")?;
    let code = match m.remove("code") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(Value::String(_)) | None => {
            return Err(CodeError::new(
                CellCode::InvalidCode,
                "exec needs a non-empty JavaScript program in \"code\".",
            ))
        }
        Some(_) => {
            return Err(CodeError::new(
                CellCode::InvalidCode,
                "\"code\" must be a string of JavaScript.",
            ))
        }
    };
    let uses = match m.remove("uses") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut out: Vec<String> = Vec::new();
            for it in items {
                let Value::String(name) = it else {
                    return Err(CodeError::new(
                        CellCode::InvalidUses,
                        "\"uses\" must be a list of tool names.",
                    ));
                };
                if !ADAPTERS.contains(&name.as_str()) {
                    return Err(CodeError::new(
                        CellCode::InvalidUses,
                        format!(
                            "\"uses\" names an unknown tool \"{name}\"; cells can use: {}.",
                            ADAPTERS.join(", ")
                        ),
                    ));
                }
                if !out.contains(&name) {
                    out.push(name);
                }
            }
            Some(out)
        }
        Some(_) => {
            return Err(CodeError::new(
                CellCode::InvalidUses,
                "\"uses\" must be a list of tool names.",
            ))
        }
    };
    let yield_arg = pair(&mut m, "yield_time_ms", "yieldTimeMs")?;
    let tokens_arg = m.remove("max_output_tokens");
    let bytes_arg = m.remove("maxOutputBytes");
    no_unknown(
        &m,
        "exec",
        "code, uses, yield_time_ms (yieldTimeMs), max_output_tokens, maxOutputBytes",
    )?;
    let (code, pragma) = take_pragma(&code)?;
    let yield_v = merge("yield_time_ms", yield_arg, pragma.yield_time_ms)?;
    let tokens_v = merge("max_output_tokens", tokens_arg, pragma.max_output_tokens)?;
    let yield_time_ms = match yield_v {
        Some(v) => int_in(&v, "yield_time_ms", 0, MAX_YIELD_MS)?,
        None => DEFAULT_YIELD_MS,
    };
    let max_output_bytes = budget(bytes_arg, tokens_v, "max_output_tokens")?;
    Ok(ExecInput {
        code,
        uses,
        yield_time_ms,
        max_output_bytes,
    })
}

/// Checks that a handle is one of ours: opaque strings only; numbers, OS pids and shell ids are refused.
pub fn check_cell_id(v: Option<Value>) -> Result<String, CodeError> {
    match v {
        Some(Value::String(s)) => {
            if s.is_empty() {
                Err(CodeError::new(
                    CellCode::InvalidInput,
                    "cell_id is empty; pass the cell ID that exec returned.",
                ))
            } else if s.starts_with("pct-shell-") {
                Err(CodeError::new(
                    CellCode::InvalidInput,
                    format!("\"{s}\" is a shell session ID; continue it with write_stdin, not wait."),
                ))
            } else if s.bytes().all(|b| b.is_ascii_digit()) {
                Err(CodeError::new(
                    CellCode::InvalidInput,
                    "cell_id looks like a number or process ID; pass the cell ID string that exec returned.",
                ))
            } else {
                Ok(s)
            }
        }
        Some(Value::Number(_)) => Err(CodeError::new(
            CellCode::InvalidInput,
            "cell_id must be the cell ID string that exec returned, not a number.",
        )),
        Some(_) => Err(CodeError::new(
            CellCode::InvalidInput,
            "cell_id must be the cell ID string that exec returned.",
        )),
        None => Err(CodeError::new(
            CellCode::InvalidInput,
            "wait needs cell_id (the ID that exec returned).",
        )),
    }
}

/// Validates `wait` arguments.
pub fn parse_wait(args: &Value) -> Result<WaitInput, CodeError> {
    let mut m = as_object(args, "wait")?;
    let cell_id = check_cell_id(pair(&mut m, "cell_id", "cellId")?)?;
    let terminate = match m.remove("terminate") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => {
            return Err(CodeError::new(
                CellCode::InvalidInput,
                "terminate must be true or false.",
            ))
        }
    };
    let yield_v = pair(&mut m, "yield_time_ms", "yieldTimeMs")?;
    let tokens_v = pair(&mut m, "max_tokens", "max_output_tokens")?;
    let bytes_v = m.remove("maxOutputBytes");
    no_unknown(
        &m,
        "wait",
        "cell_id (cellId), terminate, yield_time_ms (yieldTimeMs), max_tokens (max_output_tokens), maxOutputBytes",
    )?;
    let yield_time_ms = match yield_v {
        Some(v) => int_in(&v, "yield_time_ms", 0, MAX_YIELD_MS)?,
        None => DEFAULT_YIELD_MS,
    };
    let max_output_bytes = budget(bytes_v, tokens_v, "max_tokens")?;
    Ok(WaitInput {
        cell_id,
        terminate,
        yield_time_ms,
        max_output_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code_of(e: Result<ExecInput, CodeError>) -> String {
        e.unwrap_err().code.to_string()
    }

    #[test]
    fn pragma_sets_limits_and_becomes_an_empty_line() {
        let e = parse_exec(&json!({"code": "// @exec: {\"yield_time_ms\": 5, \"max_output_tokens\": 300}\nprint(1)"}))
            .unwrap();
        assert_eq!(e.code, "\nprint(1)");
        assert_eq!(e.yield_time_ms, 5);
        assert_eq!(e.max_output_bytes, 1200);
    }

    #[test]
    fn pragma_refusals() {
        assert_eq!(
            code_of(parse_exec(&json!({"code": "// @exec: {\"other\": 1}\nx"}))),
            "invalid-code"
        );
        assert_eq!(
            code_of(parse_exec(&json!({"code": "// @exec: {nope\nx"}))),
            "invalid-code"
        );
        assert_eq!(
            code_of(parse_exec(&json!({"code": "// @exec: [1]\nx"}))),
            "invalid-code"
        );
        assert_eq!(
            code_of(parse_exec(
                &json!({"code": "// @exec: {\"yield_time_ms\": 5}\nx", "yield_time_ms": 6})
            )),
            "invalid-code"
        );
        // Agreement is fine.
        assert!(parse_exec(&json!({"code": "// @exec: {\"yield_time_ms\": 5}\nx", "yieldTimeMs": 5})).is_ok());
        assert_eq!(
            code_of(parse_exec(&json!({"code": "// @exec: {\"yield_time_ms\": 60001}\nx"}))),
            "invalid-limit"
        );
    }

    #[test]
    fn limits_at_their_boundaries() {
        let ok = |v: Value| parse_exec(&v).map(|e| (e.yield_time_ms, e.max_output_bytes));
        assert_eq!(ok(json!({"code": "x", "yield_time_ms": 0})).unwrap().0, 0);
        assert_eq!(ok(json!({"code": "x", "yield_time_ms": 60000})).unwrap().0, 60000);
        assert_eq!(
            ok(json!({"code": "x", "yield_time_ms": 60001})).unwrap_err().code,
            "invalid-limit"
        );
        assert_eq!(
            ok(json!({"code": "x", "yield_time_ms": -1})).unwrap_err().code,
            "invalid-limit"
        );
        assert_eq!(ok(json!({"code": "x"})).unwrap(), (10000, 51200));
        assert_eq!(ok(json!({"code": "x", "maxOutputBytes": 1024})).unwrap().1, 1024);
        assert_eq!(
            ok(json!({"code": "x", "maxOutputBytes": 1023})).unwrap_err().code,
            "invalid-limit"
        );
        assert_eq!(ok(json!({"code": "x", "maxOutputBytes": 262144})).unwrap().1, 262144);
        assert_eq!(
            ok(json!({"code": "x", "maxOutputBytes": 262145})).unwrap_err().code,
            "invalid-limit"
        );
        assert_eq!(ok(json!({"code": "x", "max_output_tokens": 256})).unwrap().1, 1024);
        assert_eq!(
            ok(json!({"code": "x", "max_output_tokens": 255})).unwrap_err().code,
            "invalid-limit"
        );
        assert_eq!(ok(json!({"code": "x", "max_output_tokens": 65536})).unwrap().1, 262144);
        assert_eq!(
            ok(json!({"code": "x", "max_output_tokens": 65537})).unwrap_err().code,
            "invalid-limit"
        );
        assert_eq!(
            ok(json!({"code": "x", "max_output_tokens": 1000, "maxOutputBytes": 2000}))
                .unwrap()
                .1,
            2000
        );
        assert_eq!(
            ok(json!({"code": "x", "max_output_tokens": 300, "maxOutputBytes": 2000}))
                .unwrap()
                .1,
            1200
        );
    }

    #[test]
    fn spellings_and_unknown_fields() {
        assert_eq!(
            parse_exec(&json!({"code": "x", "yieldTimeMs": 7}))
                .unwrap()
                .yield_time_ms,
            7
        );
        assert_eq!(
            code_of(parse_exec(&json!({"code": "x", "yieldTimeMs": 7, "yield_time_ms": 8}))),
            "invalid-input"
        );
        assert_eq!(
            code_of(parse_exec(&json!({"code": "x", "timeout_ms": 7}))),
            "invalid-input"
        );
        assert_eq!(code_of(parse_exec(&json!({"code": ""}))), "invalid-code");
        assert_eq!(code_of(parse_exec(&json!({"code": 5}))), "invalid-code");
        assert_eq!(parse_exec(&json!("print(1)")).unwrap().code, "print(1)");
    }

    #[test]
    fn uses_forms() {
        assert_eq!(parse_exec(&json!({"code": "x"})).unwrap().uses, None);
        assert_eq!(
            parse_exec(&json!({"code": "x", "uses": []})).unwrap().uses,
            Some(vec![])
        );
        assert_eq!(
            parse_exec(&json!({"code": "x", "uses": ["apply_patch", "apply_patch"]}))
                .unwrap()
                .uses,
            Some(vec!["apply_patch".to_string()])
        );
        assert_eq!(
            code_of(parse_exec(&json!({"code": "x", "uses": ["bash"]}))),
            "invalid-uses"
        );
        assert_eq!(
            code_of(parse_exec(&json!({"code": "x", "uses": "exec_command"}))),
            "invalid-uses"
        );
        assert_eq!(code_of(parse_exec(&json!({"code": "x", "uses": [1]}))), "invalid-uses");
    }

    #[test]
    fn wait_handles_are_opaque_strings() {
        let w = parse_wait(&json!({"cellId": "cell-abc", "max_tokens": 256})).unwrap();
        assert_eq!(
            (w.cell_id.as_str(), w.max_output_bytes, w.terminate),
            ("cell-abc", 1024, false)
        );
        for bad in [
            json!({"cell_id": 12}),
            json!({"cell_id": "4242"}),
            json!({"cell_id": "pct-shell-1"}),
            json!({}),
            json!({"cell_id": ""}),
        ] {
            assert_eq!(parse_wait(&bad).unwrap_err().code, "invalid-input", "{bad}");
        }
        assert_eq!(
            parse_wait(&json!({"cell_id": "c", "cellId": "d"})).unwrap_err().code,
            "invalid-input"
        );
        assert_eq!(
            parse_wait(&json!({"cell_id": "c", "max_tokens": 300, "max_output_tokens": 301}))
                .unwrap_err()
                .code,
            "invalid-input"
        );
        assert_eq!(
            parse_wait(&json!({"cell_id": "c", "terminate": "yes"}))
                .unwrap_err()
                .code,
            "invalid-input"
        );
    }
}
