//! The napi side of the host seams: a [`HostGate`] over a JavaScript callback (ThreadsafeFunction), a progress
//! sink over a per-call callback, and the JS shape of exec/wait results.
//! Kept here (not in lib.rs) so lib.rs only binds.

use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use serde_json::Value;
use std::sync::Arc;

use super::adapters::{BoxFuture, GateAnswer, GateRequest, HostGate};
use super::errors::{CellCode, CodeError, ErrorCode};
use super::manager::{CellRead, ProgressFn, ProgressRecord};

/// `(request) => Promise<answer>` from TypeScript. Weak (unref'd): it never keeps Node alive on its own.
pub type GateFn = ThreadsafeFunction<Value, Promise<Value>, Value, Status, false, true>;
/// `(record) => void` from TypeScript, for one outer call's progress. Weak as well.
pub type ProgressJsFn = ThreadsafeFunction<Value, (), Value, Status, false, true>;

/// A [`HostGate`] answered by a TypeScript callback. A throwing or rejecting callback denies the call
/// (`policy-denied`) instead of aborting the process.
pub struct JsGate(pub Arc<GateFn>);

impl HostGate for JsGate {
    fn ask(&self, req: GateRequest) -> BoxFuture<GateAnswer> {
        let f = self.0.clone();
        // A panic while asking (including awaiting the host's promise) denies the call with `internal-panic`
        // instead of unwinding through the cell (docs/napi.md "Panics").
        let panicked = |why: String| GateAnswer {
            allow: false,
            code: Some(ErrorCode::Panic),
            reason: Some(why),
            ..Default::default()
        };
        Box::pin(crate::bind::guard::future_or("code.gate", ask(f, req), panicked))
    }
}

/// One round trip to the TypeScript gate; a throwing, rejecting or malformed answer denies the call.
async fn ask(f: Arc<GateFn>, req: GateRequest) -> GateAnswer {
    let phase = req.phase.clone();
    let denied = |why: String| GateAnswer {
        allow: false,
        code: Some(
            if phase == "approval" {
                CellCode::ApprovalUnavailable
            } else {
                CellCode::PolicyDenied
            }
            .into(),
        ),
        reason: Some(why),
        ..Default::default()
    };
    let v = serde_json::to_value(&req).unwrap_or(Value::Null);
    match f.call_async_catch(v).await {
        Ok(p) => match p.await {
            Ok(ans) => serde_json::from_value::<GateAnswer>(ans)
                .unwrap_or_else(|_| denied("The host answered the nested-call check with an invalid value.".into())),
            Err(e) => denied(format!("The host check failed: {}", e.reason)),
        },
        Err(e) => denied(format!("The host check failed: {}", e.reason)),
    }
}

/// Wraps a per-call JS progress callback as a [`ProgressFn`] (fire and forget, never blocks the cell). A panic while
/// forwarding drops that one record (progress is advisory) instead of unwinding into the cell.
pub fn progress_fn(f: ProgressJsFn) -> ProgressFn {
    let f = Arc::new(f);
    Arc::new(move |rec: ProgressRecord| {
        crate::bind::guard::sync_or(
            "code.progress",
            || {
                if let Ok(v) = serde_json::to_value(&rec) {
                    f.call(v, ThreadsafeFunctionCallMode::NonBlocking);
                }
            },
            |_| (),
        )
    })
}

/// The JS-facing result of exec/wait: the read with `ok: true`, or `{ok: false, code, message}`.
pub fn to_js(r: Result<CellRead, CodeError>) -> Value {
    match r {
        Ok(read) => {
            let mut v = serde_json::to_value(read).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.insert("ok".into(), Value::Bool(true));
            }
            v
        }
        Err(e) => serde_json::json!({ "ok": false, "code": e.code, "message": e.message }),
    }
}
