//! Network feature bindings (docs/net.md): official route inspection, the native Web Search payload transform,
//! sidecar request building and response parsing, image request building / PNG check / exclusive write, and the
//! debug metadata line. Logic lives in src/net/; these functions only convert and shape. The HTTP call itself is
//! made by the glue with `globalThis.fetch` (docs/net.md §Why fetch lives in the glue).

use super::guard;
use crate::net::route::{self, AuthKind, RouteFacts};
use napi::Env;

/// One model as Pi describes it (`ctx.model` / a registry entry) plus its credential kind.
#[napi(object)]
#[derive(Clone, Default)]
pub struct NetRouteFacts {
    pub provider: Option<String>,
    pub id: Option<String>,
    pub api: Option<String>,
    /// The model's `baseUrl`, or the one `getApiKeyAndHeaders` resolved for this request.
    pub base_url: Option<String>,
    /// `isUsingOAuth` → `oauth`; a configured key → `api-key`; no credential → `none`.
    #[napi(ts_type = "'oauth' | 'api-key' | 'none'")]
    pub auth: Option<String>,
}

impl NetRouteFacts {
    fn to_facts(&self) -> RouteFacts {
        RouteFacts {
            provider: self.provider.clone(),
            id: self.id.clone(),
            api: self.api.clone(),
            base_url: self.base_url.clone(),
            auth: match self.auth.as_deref() {
                Some("oauth") => Some(AuthKind::OAuth),
                Some("api-key") => Some(AuthKind::ApiKey),
                Some("none") => Some(AuthKind::None),
                _ => None,
            },
        }
    }
}

/// The outcome of a route check: the route, or the stable reason with what to do next.
#[napi(object)]
pub struct NetRouteCheck {
    pub ok: bool,
    #[napi(ts_type = "'openai' | 'openai-codex' | null")]
    pub kind: Option<String>,
    pub model: Option<String>,
    /// Fixed endpoints of the route (never taken from config).
    pub responses_url: Option<String>,
    pub images_url: Option<String>,
    #[napi(
        ts_type = "'current-model-missing' | 'unsupported-provider' | 'unsupported-api' | 'unofficial-endpoint' | 'missing-openai-auth' | 'credential-mismatch' | null"
    )]
    pub reason: Option<String>,
    /// The reason with the next step, for tool errors.
    pub message: Option<String>,
}

/// Inspects one model against the official routes (src/net/route.rs). Used for `/pct status` facts and again right
/// before every request with the base URL and credential Pi resolved for it. Shared by every network feature
/// (Web Search, Image Generation, Remote Compaction).
#[napi(catch_unwind)]
pub fn net_route_inspect(env: &Env, facts: NetRouteFacts) -> napi::Result<NetRouteCheck> {
    guard::sync(env, "net.routeInspect", || {
        Ok(match route::inspect(Some(&facts.to_facts())) {
            Ok(r) => NetRouteCheck {
                ok: true,
                kind: Some(r.kind.provider().into()),
                model: Some(r.model),
                responses_url: Some(r.kind.responses_url().into()),
                images_url: Some(r.kind.images_url().into()),
                reason: None,
                message: None,
            },
            Err(reason) => NetRouteCheck {
                ok: false,
                kind: None,
                model: None,
                responses_url: None,
                images_url: None,
                reason: Some(reason.as_str().into()),
                message: Some(format!(
                    "{}: the model is not on an official OpenAI route; {}",
                    reason.as_str(),
                    reason.next_step()
                )),
            },
        })
    })
}

// ---- type-only shapes of the rules snapshot and decision (JSON text; src/bind/rules.rs) ----

/// Registry facts of the network features inside a `RulesInput` (src/net/plan.rs `NetInput`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetInput {
    pub current: Option<NetRouteFacts>,
    /// The registry entry of `webSearch.sidecarModel`; absent when not configured or not found.
    pub executor: Option<NetRouteFacts>,
    /// Thinking levels Pi reports for the executor model.
    pub executor_levels: Option<Vec<String>>,
    /// Image fallbacks after the current model: an openai-codex model, then an openai one.
    pub image_candidates: Option<Vec<NetRouteFacts>>,
}

// ---- Web Search, Image Generation, Debug ----

use crate::net::error::{NetCode, NetError};
use crate::net::websearch::{native as ws_native, sidecar, SearchOptions};
// The core's request metadata under its JS name, so the generated signature names the generated interface.
use crate::net::debug::DebugMeta as NetDebugMeta;
use crate::net::{debug, image};

fn opts(mode: String, context_size: String) -> SearchOptions {
    SearchOptions { mode, context_size }
}

fn parse_json(env: &Env, text: &str) -> napi::Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| guard::throw(env, guard::INVALID_INPUT, &format!("invalid-input: {e}")))
}

/// A failure of a network tool: a stable code and a message naming the next step.
#[napi(object)]
pub struct NetFailure {
    /// A [`crate::net::NetCode`], a [`crate::net::route::RouteReason`] or `internal-panic` (docs/net.md "Errors"); a
    /// test in src/net/error.rs keeps this union equal to those lists.
    #[napi(
        ts_type = "'aborted' | 'timeout' | 'network-error' | 'http-error' | 'invalid-json' | 'incomplete-response' | 'missing-search-call' | 'missing-answer' | 'provider-unavailable' | 'unsupported-sidecar-effort' | 'invalid-arguments' | 'invalid-image' | 'image-too-large' | 'write-failed' | 'response-too-large' | 'current-model-missing' | 'unsupported-provider' | 'unsupported-api' | 'unofficial-endpoint' | 'missing-openai-auth' | 'credential-mismatch' | 'internal-panic'"
    )]
    pub code: String,
    pub message: String,
}

impl From<NetError> for NetFailure {
    fn from(e: NetError) -> Self {
        NetFailure {
            code: e.code.as_str().into(),
            message: e.message,
        }
    }
}

/// The native backend's transform of a payload head (JSON text of a `PayloadHead`, src/net/websearch/native.rs):
/// JSON text of the patch to apply copy-on-write, or null to pass the payload through unchanged.
#[napi(
    catch_unwind,
    ts_args_type = "headJson: string & { readonly __json: NetPayloadHead }, mode: 'live' | 'cached', contextSize: 'low' | 'medium' | 'high'",
    ts_return_type = "(string & { readonly __json: NetPayloadPatch }) | null"
)]
pub fn net_search_transform(
    env: &Env,
    head_json: String,
    mode: String,
    context_size: String,
) -> napi::Result<Option<String>> {
    guard::sync(env, "net.searchTransform", || {
        let head: ws_native::PayloadHead = serde_json::from_str(&head_json)
            .map_err(|e| guard::throw(env, guard::INVALID_INPUT, &format!("invalid-input: {e}")))?;
        Ok(ws_native::transform(&head, &opts(mode, context_size))
            .map(|p| serde_json::to_string(&p).unwrap_or_default()))
    })
}

/// The head of a provider payload (type-only; src/net/websearch/native.rs `PayloadHead`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetPayloadHead {
    pub is_object: bool,
    #[napi(ts_type = "'absent' | 'array' | 'other'")]
    pub tools: String,
    pub web_search_index: Option<u32>,
    #[napi(ts_type = "Record<string, unknown> | null")]
    pub web_search: Option<serde_json::Value>,
    #[napi(ts_type = "'absent' | 'array' | 'other'")]
    pub include_kind: String,
    #[napi(ts_type = "unknown[]")]
    pub include: Vec<serde_json::Value>,
    pub has_tool_choice: bool,
}

/// What the native transform changes (type-only; src/net/websearch/native.rs `PayloadPatch`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetPayloadPatch {
    #[napi(ts_type = "Record<string, unknown>")]
    pub entry: serde_json::Value,
    #[napi(ts_type = "number | null")]
    pub replace_index: Option<u32>,
    #[napi(ts_type = "unknown[]")]
    pub include: Vec<serde_json::Value>,
    #[napi(ts_type = "'auto' | null")]
    pub tool_choice: Option<String>,
}

/// A sidecar request ready to send, or the refusal.
#[napi(object)]
pub struct NetSidecarRequest {
    pub ok: bool,
    /// The validated query (the only conversation text sent).
    pub query: Option<String>,
    /// JSON text of the API-key route's body.
    pub body: Option<String>,
    pub error: Option<NetFailure>,
}

/// Validates `openai_web_search` arguments (JSON text) and builds the API-key route's body for `model`.
#[napi(
    catch_unwind,
    ts_args_type = "argsJson: string & { readonly __json: Record<string, unknown> }, model: string, mode: 'live' | 'cached', contextSize: 'low' | 'medium' | 'high'"
)]
pub fn net_sidecar_request(
    env: &Env,
    args_json: String,
    model: String,
    mode: String,
    context_size: String,
) -> napi::Result<NetSidecarRequest> {
    guard::sync(env, "net.sidecarRequest", || {
        let args = parse_json(env, &args_json)?;
        Ok(match sidecar::parse_args(&args) {
            Ok(q) => NetSidecarRequest {
                ok: true,
                body: Some(sidecar::api_key_body(&model, &q, &opts(mode, context_size)).to_string()),
                query: Some(q),
                error: None,
            },
            Err(e) => NetSidecarRequest {
                ok: false,
                query: None,
                body: None,
                error: Some(e.into()),
            },
        })
    })
}

/// The Codex route: Pi's payload (JSON text) with the hosted tool required and sources included (JSON text); with
/// effort `auto`, Pi's default `reasoning` is dropped so the service default applies.
#[napi(
    catch_unwind,
    ts_args_type = "payloadJson: string & { readonly __json: unknown }, mode: 'live' | 'cached', contextSize: 'low' | 'medium' | 'high', effort: string",
    ts_return_type = "string & { readonly __json: Record<string, unknown> }"
)]
pub fn net_sidecar_codex_payload(
    env: &Env,
    payload_json: String,
    mode: String,
    context_size: String,
    effort: String,
) -> napi::Result<String> {
    guard::sync(env, "net.sidecarCodexPayload", || {
        let body = parse_json(env, &payload_json)?;
        Ok(sidecar::codex_body_patch(&body, &opts(mode, context_size), effort == "auto").to_string())
    })
}

/// One source row of a sidecar answer.
#[napi(object)]
pub struct NetSource {
    pub url: String,
    pub title: Option<String>,
}

/// A parsed sidecar answer, or the failure.
#[napi(object)]
pub struct NetSidecarAnswer {
    pub ok: bool,
    /// The tool result text: the answer, a blank line, `Sources:` and `- [title](url)` rows.
    pub text: Option<String>,
    pub sources: Option<Vec<NetSource>>,
    pub searches: Option<u32>,
    pub error: Option<NetFailure>,
}

/// Parses a sidecar answer: `json` (API-key route body) or `sse` (Codex route stream text).
#[napi(catch_unwind)]
pub fn net_sidecar_parse(
    env: &Env,
    #[napi(ts_arg_type = "'json' | 'sse'")] kind: String,
    body: String,
) -> napi::Result<NetSidecarAnswer> {
    guard::sync(env, "net.sidecarParse", || {
        let r = if kind == "sse" {
            sidecar::parse_sse(&body)
        } else {
            sidecar::parse_json(&body)
        };
        Ok(match r {
            Ok(a) => NetSidecarAnswer {
                ok: true,
                text: Some(a.render()),
                searches: Some(a.searches as u32),
                sources: Some(
                    a.sources
                        .into_iter()
                        .map(|s| NetSource {
                            url: s.url,
                            title: s.title,
                        })
                        .collect(),
                ),
                error: None,
            },
            Err(e) => NetSidecarAnswer {
                ok: false,
                text: None,
                sources: None,
                searches: None,
                error: Some(e.into()),
            },
        })
    })
}

/// A validated image request, or the refusal.
#[napi(object)]
pub struct NetImageRequest {
    pub ok: bool,
    /// JSON text of `{prompt, model: "gpt-image-2", background: "auto", quality, size}`.
    pub body: Option<String>,
    pub error: Option<NetFailure>,
}

/// Validates `openai_generate_image` arguments (JSON text) and builds the request body.
#[napi(
    catch_unwind,
    ts_args_type = "argsJson: string & { readonly __json: Record<string, unknown> }"
)]
pub fn net_image_request(env: &Env, args_json: String) -> napi::Result<NetImageRequest> {
    guard::sync(env, "net.imageRequest", || {
        let args = parse_json(env, &args_json)?;
        Ok(match image::request_body(&args) {
            Ok(b) => NetImageRequest {
                ok: true,
                body: Some(b.to_string()),
                error: None,
            },
            Err(e) => NetImageRequest {
                ok: false,
                body: None,
                error: Some(e.into()),
            },
        })
    })
}

/// A saved image, or the failure (nothing is written on failure).
#[napi(object)]
pub struct NetImageSaved {
    pub ok: bool,
    /// Absolute path of the new `<uuid>.png`.
    pub path: Option<String>,
    /// Base64 of the bytes written (the image content block).
    pub base64: Option<String>,
    pub error: Option<NetFailure>,
}

fn image_saved(r: Result<(std::path::PathBuf, String), NetFailure>) -> NetImageSaved {
    match r {
        Ok((path, b64)) => NetImageSaved {
            ok: true,
            path: Some(path.to_string_lossy().into_owned()),
            base64: Some(b64),
            error: None,
        },
        Err(e) => NetImageSaved {
            ok: false,
            path: None,
            base64: None,
            error: Some(e),
        },
    }
}

/// Decodes the image response (text of the body), checks the PNG signature and writes the file exclusively under
/// `<agentDir>/artifacts/pi-codex-toolkit/`. Async: the decode of up to 48 MiB, the write and its base64 run on
/// tokio's blocking pool, never on Node's main thread (docs/napi.md). A panic resolves `error.code` `internal-panic`.
#[napi(catch_unwind)]
pub async fn net_image_save(body: String, agent_dir: String) -> NetImageSaved {
    let site = "net.imageSave";
    let panicked = |message: String| {
        image_saved(Err(NetFailure {
            code: guard::PANIC_CODE.to_string(),
            message,
        }))
    };
    let joined = tokio::task::spawn_blocking(move || {
        guard::sync_or(
            site,
            || {
                image_saved(
                    image::save(&body, std::path::Path::new(&agent_dir), image::MAX_IMAGE_BYTES).map_err(Into::into),
                )
            },
            panicked,
        )
    })
    .await;
    joined.unwrap_or_else(|e| panicked(format!("the {site} task did not finish ({e})")))
}

/// The failure for a code the glue observed (timeout, aborted, network-error, http-error, provider-unavailable):
/// the stable message with its next step. Unknown codes are a programmer error.
#[napi(catch_unwind)]
pub fn net_failure(
    env: &Env,
    #[napi(
        ts_arg_type = "'aborted' | 'timeout' | 'network-error' | 'http-error' | 'provider-unavailable' | 'invalid-json' | 'incomplete-response' | 'response-too-large'"
    )]
    code: String,
    detail: String,
) -> napi::Result<NetFailure> {
    guard::sync(env, "net.failure", || match NetCode::parse(&code) {
        Some(c) => Ok(NetError::new(c, detail).into()),
        None => Err(guard::throw(
            env,
            guard::INVALID_INPUT,
            &format!("invalid-input: unknown network error code {code}"),
        )),
    })
}

/// The request timeout of a feature in milliseconds: sidecar search 30 s, image 300 s, remote compaction 180 s
/// (docs/net.md, docs/compaction.md). Test seam `PCT_TEST_NET_TIMEOUT_MS`: a positive integer replaces all three, so a
/// suite can exercise the timeout against a server that never answers without waiting 30 s; `/N` runs a shortened
/// clock instead, each feature's own timeout divided by N, so a suite can show which timeout a feature uses (the
/// compaction timeout at `/100` is 1.8 s). Only the process environment of a build with test seams can set it
/// (src/seams.rs).
#[napi(catch_unwind)]
pub fn net_timeout_ms(
    env: &Env,
    #[napi(ts_arg_type = "'sidecar' | 'image' | 'compaction'")] feature: String,
) -> napi::Result<u32> {
    guard::sync(env, "net.timeoutMs", || {
        let own: u32 = match feature.as_str() {
            "image" => 300_000,
            "compaction" => 180_000,
            _ => 30_000,
        };
        Ok(match crate::seams::var("PCT_TEST_NET_TIMEOUT_MS") {
            Some(v) => seamed_timeout(own, &v),
            None => own,
        })
    })
}

/// `PCT_TEST_NET_TIMEOUT_MS` applied to a feature's own timeout: `ms` replaces it, `/N` divides it; anything else
/// (zero, a word) leaves it.
fn seamed_timeout(own: u32, seam: &str) -> u32 {
    let positive = |t: &str| t.parse::<u32>().ok().filter(|n| *n > 0);
    match seam.strip_prefix('/') {
        Some(d) => positive(d).map_or(own, |n| (own / n).max(1)),
        None => positive(seam).unwrap_or(own),
    }
}

#[cfg(test)]
mod timeout_tests {
    /// The shortened clock keeps each feature's own timeout in proportion; a plain number replaces it.
    #[test]
    fn the_seam_replaces_or_divides() {
        assert_eq!(super::seamed_timeout(180_000, "/100"), 1_800);
        assert_eq!(super::seamed_timeout(30_000, "/100"), 300);
        assert_eq!(super::seamed_timeout(30_000, "1234"), 1_234);
        for bad in ["0", "/0", "x", "/x", ""] {
            assert_eq!(super::seamed_timeout(180_000, bad), 180_000, "{bad:?}");
        }
    }
}

/// The most response-body bytes the glue reads for a feature (src/net/mod.rs `body_cap`): sidecar search 8 MiB,
/// image 68 MiB, remote compaction 16 MiB. Test seam: `PCT_TEST_NET_BODY_CAP_BYTES` (a positive integer) replaces
/// all three, so a suite can hit the cap at its boundary without sending megabytes; read only in builds with test
/// seams (docs/release.md "Test seams").
#[napi(catch_unwind)]
pub fn net_body_cap_bytes(
    env: &Env,
    #[napi(ts_arg_type = "'sidecar' | 'image' | 'compaction'")] feature: String,
) -> napi::Result<u32> {
    guard::sync(env, "net.bodyCapBytes", || {
        if let Some(n) = crate::seams::var("PCT_TEST_NET_BODY_CAP_BYTES")
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|v| *v > 0)
        {
            return Ok(n);
        }
        let f = crate::net::Feature::parse(&feature).ok_or_else(|| {
            guard::throw(
                env,
                guard::INVALID_INPUT,
                &format!("invalid-input: unknown network feature {feature}"),
            )
        })?;
        Ok(crate::net::body_cap(f) as u32)
    })
}

/// The `debug: true` stderr line of one request: metadata only, never secrets or content.
#[napi(catch_unwind)]
pub fn net_debug_line(env: &Env, meta: NetDebugMeta) -> napi::Result<String> {
    guard::sync(env, "net.debugLine", || Ok(debug::line(&meta)))
}
