//! The engine's sink: what the cell thread reports (text, nested calls, its outcome). A nested call passes the
//! synchronous checks here (known adapter, declared and admitted, schema, byte reservation) before its task starts.

use std::sync::atomic::Ordering;
use std::sync::{PoisonError, Weak};

use serde_json::Value;

use super::cell::{Cell, ProgressRecord};
use super::nested::NestedTask;
use super::Inner;
use crate::code::adapters::normalize_nested_args;
use crate::code::engine::{CallRefusal, EngineSink, Outcome};
use crate::code::errors::{CellCode, ErrorCode};
use crate::code::limits::*;

pub(super) struct Sink {
    pub(super) cell: Weak<Cell>,
    pub(super) mgr: Weak<Inner>,
}

/// What a nested call's card shows (docs/code.md "Inside a cell"), in the words of the direct tool's card: the patch of
/// an apply_patch, `$ command` for an exec_command, `stdin of <session>: <text>` for a write_stdin that sends input;
/// the arguments as JSON for anything else. Cut to `APPROVAL_PREVIEW_BYTES` by the caller.
pub(super) fn preview_of(tool: &str, args: &Value, args_json: &str) -> String {
    let field = |names: &[&str]| -> Option<String> {
        let o = args.as_object()?;
        names.iter().find_map(|n| match o.get(*n) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        })
    };
    let shown = match tool {
        "apply_patch" => field(&["patch", "input"]),
        "exec_command" => field(&["cmd", "command"]).map(|c| format!("$ {c}")),
        "write_stdin" => match (field(&["chars", "input"]), field(&["session_id", "sessionId"])) {
            (Some(chars), Some(id)) if !chars.is_empty() => Some(format!("stdin of {id}: {chars}")),
            _ => None,
        },
        _ => None,
    };
    shown.unwrap_or_else(|| args_json.to_string())
}

pub(super) fn refusal(code: CellCode, message: String) -> CallRefusal {
    CallRefusal {
        code: ErrorCode::Cell(code),
        message,
    }
}

impl EngineSink for Sink {
    fn text(&self, text: &str) {
        let Some(cell) = self.cell.upgrade() else { return };
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        // The capture spills to the recovery file on its own past 256 KiB.
        Cell::capture_text(&mut st, text);
        let room = OUTPUT_BUFFER_BYTES.saturating_sub(st.output.len());
        let kept = cut_utf8(text, room);
        st.dropped += (text.len() - kept.len()) as u64;
        st.output.push_str(kept);
    }

    fn call(&self, id: u64, name: &str, args_json: String) -> Result<(), CallRefusal> {
        let (Some(cell), Some(mgr)) = (self.cell.upgrade(), self.mgr.upgrade()) else {
            return Err(refusal(CellCode::Closed, "The code manager is closed.".into()));
        };
        let fail = |code: CellCode, message: String| {
            let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
            st.failed += 1;
            drop(st);
            cell.progress(ProgressRecord {
                event: "end".into(),
                tool: name.into(),
                cell_id: cell.id.clone(),
                session_id: None,
                ok: Some(false),
                code: Some(ErrorCode::Cell(code)),
            });
            Err(refusal(code, message))
        };
        // 1. known adapter
        if !ADAPTERS.contains(&name) {
            return fail(
                CellCode::UnknownAdapter,
                format!(
                    "Unknown tool \"{name}\": code cells can call only {}.",
                    ADAPTERS.join(", ")
                ),
            );
        }
        // 2. enabled: declared in "uses" (snapshot) and admitted now
        if !cell.declared.iter().any(|d| d == name) {
            let list = if cell.declared.is_empty() {
                "(none)".to_string()
            } else {
                cell.declared.join(", ")
            };
            return fail(
                CellCode::AdapterDisabled,
                format!("Tool \"{name}\" was not declared in \"uses\" for this cell. Declared tools: {list}"),
            );
        }
        if !mgr
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admitted
            .iter()
            .any(|a| a == name)
        {
            return fail(
                CellCode::AdapterDisabled,
                format!("Tool \"{name}\" is not enabled right now; enable it in /pct config or stop calling it."),
            );
        }
        // 3. schema
        let args: Value = serde_json::from_str(&args_json).unwrap_or(Value::Null);
        let args = normalize_nested_args(name, args);
        let normalized = match mgr.adapters.validate(name, &args) {
            Ok(v) => v,
            Err(e) => return fail(CellCode::InvalidArguments, e.message),
        };
        // 4. byte reservation
        let size = args_json.len();
        {
            let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
            let outstanding = (st.queued + st.dispatched) as usize;
            let why = if size > MAX_NESTED_PAYLOAD_BYTES {
                Some(format!("The arguments of tools.{name} are {size} bytes; a single argument may be at most {MAX_NESTED_PAYLOAD_BYTES} bytes."))
            } else if outstanding >= MAX_OUTSTANDING_NESTED {
                Some(format!("This cell already has {MAX_OUTSTANDING_NESTED} nested calls outstanding; await some before starting more."))
            } else if st.outstanding_bytes + size > MAX_OUTSTANDING_ARG_BYTES {
                Some(format!("Outstanding nested calls of this cell would carry more than {MAX_OUTSTANDING_ARG_BYTES} bytes of arguments; await some before starting more."))
            } else {
                None
            };
            if let Some(msg) = why {
                drop(st);
                return fail(CellCode::BridgeOverload, msg);
            }
            st.queued += 1;
            st.outstanding_bytes += size;
        }
        let preview = preview_of(name, &args, &args_json);
        let task = NestedTask {
            cell: cell.clone(),
            mgr: mgr.clone(),
            id,
            tool: name.to_string(),
            args: normalized,
            size,
            preview: cut_utf8(&preview, APPROVAL_PREVIEW_BYTES).to_string(),
        };
        mgr.rt.spawn(task.run());
        Ok(())
    }

    fn done(&self, outcome: Outcome) {
        let Some(cell) = self.cell.upgrade() else { return };
        let mut st = cell.st.lock().unwrap_or_else(PoisonError::into_inner);
        if st.outcome.is_some() {
            // The stop was reported unconfirmed earlier; the thread has now really ended. Its real outcome (which
            // may be the program's own result) replaces the stop's, without the stop's uncertainty.
            st.outcome = Some(outcome);
            st.thread_ended = true;
            st.unknown_outcome = st.queued + st.dispatched > 0;
            drop(st);
            cell.bump();
            return;
        }
        let seal = !matches!(outcome, Outcome::Returned(_));
        st.thread_ended = true;
        st.outcome = Some(outcome);
        let became = cell.settle_check(&mut st);
        drop(st);
        if seal {
            cell.sealed_flag.store(true, Ordering::SeqCst);
            cell.seal.send_replace(true);
        }
        let _ = became;
        cell.bump();
    }
}
