//! Bindings of Remote Compaction's pure parts (docs/compaction.md). Expected failures answer
//! `CompactionFailure` `{ok: false, code, message}`; the Pi glue turns them into a warning and lets Pi's own
//! compaction run. The two exports that see the whole conversation (the request build and the replay, once per
//! provider request) take and answer JSON text and do the parse, the work and the serialisation on tokio's blocking
//! pool, so a long session never stalls Node's event loop; the small ones stay synchronous.

use super::guard;
use crate::compaction as c;
use napi::bindgen_prelude::Either;
use serde_json::Value;

/// A compaction step failed: a `CompactionCode` (docs/compaction.md "Codes") or `internal-panic`; `message` is
/// the warning's reason.
#[napi(object)]
pub struct CompactionFailure {
    #[napi(ts_type = "false")]
    pub ok: bool,
    #[napi(
        ts_type = "'capture-failed' | 'bad-stream' | 'stream-failed' | 'stream-incomplete' | 'compaction-missing' | 'compaction-ambiguous' | 'bad-checkpoint' | 'compaction-too-large' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
}

/// The compaction POST body, as JSON text ready to send.
#[napi(object)]
pub struct CompactionRequestOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    pub body: String,
}

/// The one `compaction` item of a valid stream.
#[napi(object)]
pub struct CompactionStreamOk {
    #[napi(ts_type = "true")]
    pub ok: bool,
    /// The Responses API output item exactly as the server sent it (open JSON: it is stored and replayed as given,
    /// with fields this toolkit does not know).
    #[napi(ts_type = "Record<string, unknown>")]
    pub item: Value,
}

/// The compatibility record of a route: replay happens only when every field equals the stored record's
/// (docs/compaction.md "Replay"). Built by serde in `compat_record`, so it is declared here, not converted.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct CompactionCompat {
    pub provider: String,
    pub api: String,
    pub model: String,
    pub endpoint: String,
    #[napi(ts_type = "'oauth'")]
    pub auth_kind: String,
    /// `sha256:<hex>` of the ChatGPT account id (the id itself is not stored).
    pub account_fingerprint: String,
}

/// What Pi stores for a remote compaction (docs/compaction.md "What Pi stores"); built by serde in `build_result`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct CompactionResult {
    /// The marker line, then the readable excerpt.
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: f64,
    pub details: CompactionDetails,
}

/// `details` of a stored remote compaction: what the next compaction and the replay read back.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct CompactionDetails {
    /// `[pi-codex-toolkit.remote-compaction-v2:<uuid>]`.
    pub marker: String,
    /// The newest user inputs: Responses API input items as Pi's provider built them (open JSON, replayed as given).
    #[napi(ts_type = "unknown[]")]
    pub retained_input: Vec<Value>,
    /// The `compaction` item exactly as returned (open JSON, replayed as given).
    #[napi(ts_type = "Record<string, unknown>")]
    pub checkpoint: Value,
    pub compat: CompactionCompat,
}

fn panicked(message: String) -> CompactionFailure {
    CompactionFailure {
        ok: false,
        code: guard::PANIC_CODE.to_string(),
        message,
    }
}

fn failure(e: c::CompactionError) -> CompactionFailure {
    CompactionFailure {
        ok: false,
        code: e.code.to_string(),
        message: e.message,
    }
}

/// Runs `f` (guarded) on tokio's blocking pool; a panic, or a task that never finished, answers `on_panic(message)`.
async fn blocking<T: Send + 'static>(
    site: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
    on_panic: fn(String) -> T,
) -> T {
    let joined = tokio::task::spawn_blocking(move || guard::sync_or(site, f, on_panic)).await;
    joined.unwrap_or_else(|e| on_panic(format!("the {site} task did not finish ({e})")))
}

/// Builds the compaction POST body from the captured provider payload and the prior compaction's details, both
/// as JSON text; answers the body as JSON text, ready to send (JSON text both ways: converting a 2,000-message
/// payload object by object across napi costs more than the whole build, see bench/compaction.mjs). Async: the
/// parse, build and serialisation run on the blocking pool.
#[napi(catch_unwind)]
pub async fn compaction_build_request(
    captured_json: String,
    prior_json: Option<String>,
) -> Either<CompactionRequestOk, CompactionFailure> {
    blocking(
        "compactionBuildRequest",
        move || build_request_text(&captured_json, prior_json.as_deref()),
        |m| Either::B(panicked(m)),
    )
    .await
}

fn build_request_text(captured_json: &str, prior_json: Option<&str>) -> Either<CompactionRequestOk, CompactionFailure> {
    let bad = || {
        Either::B(failure(c::CompactionError {
            code: c::CompactionCode::CaptureFailed,
            message: "The captured request is not JSON.".into(),
        }))
    };
    let Ok(captured) = serde_json::from_str::<Value>(captured_json) else {
        return bad();
    };
    let prior = match prior_json.map(serde_json::from_str::<Value>) {
        None => None,
        Some(Ok(p)) => Some(p).filter(|p| p.is_object()),
        Some(Err(_)) => return bad(),
    };
    match c::build_request(&captured, prior.as_ref()) {
        Ok(body) => Either::A(CompactionRequestOk {
            ok: true,
            body: body.to_string(),
        }),
        Err(e) => Either::B(failure(e)),
    }
}

/// Validates the SSE body: `{ok: true, item}` with the one compaction item, or a failure.
#[napi(catch_unwind)]
pub fn compaction_parse_stream(sse: String) -> Either<CompactionStreamOk, CompactionFailure> {
    guard::sync_or(
        "compactionParseStream",
        || match c::parse_stream(&sse) {
            Ok(item) => Either::A(CompactionStreamOk { ok: true, item }),
            Err(e) => Either::B(failure(e)),
        },
        |m| Either::B(panicked(m)),
    )
}

/// The compatibility record of a route (`accountFingerprint` = `sha256:<hex>` of `accountId`).
#[napi(catch_unwind, ts_return_type = "CompactionCompat")]
pub fn compaction_compat(
    env: &napi::Env,
    provider: String,
    api: String,
    model: String,
    endpoint: String,
    auth_kind: String,
    account_id: String,
) -> napi::Result<Value> {
    guard::sync(env, "compactionCompat", || {
        Ok(c::compat_record(
            &provider,
            &api,
            &model,
            &endpoint,
            &auth_kind,
            &account_id,
        ))
    })
}

/// Shapes Pi's `{summary, firstKeptEntryId, tokensBefore, details}` from the checkpoint item.
#[napi(catch_unwind, ts_return_type = "CompactionResult")]
#[allow(clippy::too_many_arguments)]
pub fn compaction_result(
    env: &napi::Env,
    uuid: String,
    #[napi(ts_arg_type = "Record<string, unknown>")] checkpoint: Value,
    #[napi(ts_arg_type = "unknown[]")] captured_input: Vec<Value>,
    #[napi(ts_arg_type = "Record<string, unknown> | null")] prior: Option<Value>,
    #[napi(ts_arg_type = "CompactionCompat")] compat: Value,
    first_kept_entry_id: String,
    tokens_before: f64,
) -> napi::Result<Value> {
    guard::sync(env, "compactionResult", || {
        Ok(c::build_result(
            &uuid,
            checkpoint,
            &captured_input,
            prior.as_ref().filter(|p| p.is_object()),
            compat,
            &first_kept_entry_id,
            tokens_before,
        ))
    })
}

/// The outgoing payload (JSON text) with the stored checkpoint replayed, as JSON text; null when anything does not
/// match exactly, when either text is not JSON, or on a contained panic (the request then goes out unchanged, as
/// on every mismatch: a replay never fails a request). Async: parse, match and serialisation run on the blocking
/// pool, so the whole conversation of every provider request never stalls the event loop.
#[napi(catch_unwind, ts_return_type = "Promise<string | null>")]
pub async fn compaction_replay(
    payload_json: String,
    details_json: String,
    #[napi(ts_arg_type = "CompactionCompat")] current: Value,
) -> Option<String> {
    blocking(
        "compactionReplay",
        move || {
            let payload = serde_json::from_str::<Value>(&payload_json).ok()?;
            let details = serde_json::from_str::<Value>(&details_json).ok()?;
            c::replay(&payload, &details, &current).map(|v| v.to_string())
        },
        |_| None,
    )
    .await
}
