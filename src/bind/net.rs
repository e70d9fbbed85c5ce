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

/// A model on an official route.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetRoute {
    #[napi(ts_type = "'openai' | 'openai-codex'")]
    pub kind: String,
    pub model: String,
}

/// The sidecar executor.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetExecutor {
    pub route: NetRoute,
    pub effort: String,
}

/// Web Search's plan.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetSearchPlan {
    #[napi(ts_type = "'native' | 'sidecar' | null")]
    pub backend: Option<String>,
    #[napi(ts_type = "string | null")]
    pub reason: Option<String>,
    #[napi(ts_type = "NetExecutor | null")]
    pub executor: Option<NetExecutor>,
}

/// Image Generation's plan.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetImagePlan {
    #[napi(ts_type = "NetRoute | null")]
    pub route: Option<NetRoute>,
    #[napi(ts_type = "string | null")]
    pub reason: Option<String>,
}

/// Both plans of one sync decision.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct NetPlan {
    pub search: NetSearchPlan,
    pub image: NetImagePlan,
}
