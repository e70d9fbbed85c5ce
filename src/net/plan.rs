//! Which network path each feature takes for one snapshot (docs/net.md §Backend resolution): the Web Search backend
//! (`native`, `sidecar` or unavailable with a reason), its executor and effort, and the Image Generation route.
//!
//! Why in the rules snapshot: `/pct status`, the active-tool projection (whether `openai_web_search` and
//! `openai_generate_image` are visible) and the tools themselves must agree, so all three read this one plan.
//! The plan is structural only (registry facts, no network); the tools repeat the route check with the credential
//! Pi resolves right before sending (src/net/route.rs).

use super::route::{inspect, Route, RouteFacts, RouteKind, RouteReason};
use serde::{Deserialize, Serialize};

/// What the glue reads from Pi's model registry for the network features (src/pi/net/facts.ts).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetInput {
    /// The current model with its base URL and credential kind.
    pub current: Option<RouteFacts>,
    /// The registry entry of `webSearch.sidecarModel` (missing = not configured or not in the registry).
    pub executor: Option<RouteFacts>,
    /// The thinking levels Pi reports for the executor model (`getSupportedThinkingLevels`); empty = unknown.
    pub executor_levels: Vec<String>,
    /// Image fallbacks in the fixed order after the current model: an `openai-codex` model, then an `openai` one.
    pub image_candidates: Vec<RouteFacts>,
}

/// Web Search's effective path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    Native,
    Sidecar,
}

impl SearchBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchBackend::Native => "native",
            SearchBackend::Sidecar => "sidecar",
        }
    }
}

/// The resolved sidecar executor. It is also the binding's `NetExecutor` interface in index.d.ts (type only).
#[napi_derive::napi(object, js_name = "NetExecutor", object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Executor {
    #[napi(ts_type = "NetRoute")]
    pub route: Route,
    /// `auto` (the provider's default, never the main model's level) or an explicit thinking level.
    pub effort: String,
}

/// Web Search plan (also for a feature that is off: `backend` is then `None` with no reason). It is also the
/// binding's `NetSearchPlan` interface in index.d.ts: the JSON Rust writes and the type the glue reads are one
/// definition.
#[napi_derive::napi(object, js_name = "NetSearchPlan", object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPlan {
    #[napi(ts_type = "'native' | 'sidecar' | null")]
    pub backend: Option<SearchBackend>,
    /// Why no backend applies (a stable code), when the feature is on.
    #[napi(ts_type = "string | null")]
    pub reason: Option<&'static str>,
    /// The executor the sidecar would use (set whenever one resolves, even under the native backend).
    #[napi(ts_type = "NetExecutor | null")]
    pub executor: Option<Executor>,
}

/// Image Generation plan. It is also the binding's `NetImagePlan` interface in index.d.ts (type only).
#[napi_derive::napi(object, js_name = "NetImagePlan", object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePlan {
    /// The model whose route and credential carry the request (the request itself always uses `gpt-image-2`).
    #[napi(ts_type = "NetRoute | null")]
    pub route: Option<Route>,
    #[napi(ts_type = "string | null")]
    pub reason: Option<&'static str>,
}

/// Both plans of one sync decision, as the rules decision carries them to the tools and the payload hook. It is
/// also the binding's `NetPlan` interface in index.d.ts (type only: the value crosses inside the decision's JSON).
#[napi_derive::napi(object, js_name = "NetPlan", object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetPlan {
    #[napi(ts_type = "NetSearchPlan")]
    pub search: SearchPlan,
    #[napi(ts_type = "NetImagePlan")]
    pub image: ImagePlan,
}

/// The Web Search config fields the plan reads.
pub struct SearchConfig<'a> {
    pub backend: &'a str,
    /// `webSearch.sidecarModel` is set (provider, model, thinking level).
    pub sidecar: Option<(&'a str, &'a str, &'a str)>,
}

/// Resolves the executor: the configured `sidecarModel` (must be in the registry, on an official route, with an
/// effort that model supports), else the current model when it is on an official route (docs/net.md).
pub fn executor(net: &NetInput, cfg: &SearchConfig) -> Result<Executor, &'static str> {
    match cfg.sidecar {
        Some((provider, model, effort)) => {
            let facts = net
                .executor
                .as_ref()
                .filter(|f| f.provider.as_deref() == Some(provider) && f.id.as_deref() == Some(model))
                .ok_or("missing-sidecar-model")?;
            let route = inspect(Some(facts)).map_err(RouteReason::as_str)?;
            if effort != "auto" {
                let supported = route.kind == RouteKind::Codex
                    && (net.executor_levels.is_empty() || net.executor_levels.iter().any(|l| l == effort));
                if !supported {
                    return Err("unsupported-sidecar-effort");
                }
            }
            Ok(Executor {
                route,
                effort: effort.to_string(),
            })
        }
        None => inspect(net.current.as_ref())
            .map(|route| Executor {
                route,
                effort: "auto".into(),
            })
            .map_err(RouteReason::as_str),
    }
}

/// Resolves the backend. `auto` = native when the current route allows it, else the sidecar when an executor
/// exists and the tool name is ours, else unavailable; `native`/`sidecar` force one. `tool_ours` = the toolkit owns
/// `openai_web_search` (a third-party winner is `conflicting-tool-name`).
pub fn search(net: &NetInput, cfg: &SearchConfig, tool_ours: bool) -> SearchPlan {
    let native = inspect(net.current.as_ref()).map_err(RouteReason::as_str);
    let exec = executor(net, cfg);
    let sidecar = match (&exec, tool_ours) {
        (Ok(_), false) => Err("conflicting-tool-name"),
        (Ok(_), true) => Ok(()),
        (Err(r), _) => Err(*r),
    };
    let (backend, reason) = match cfg.backend {
        "native" => match native {
            Ok(_) => (Some(SearchBackend::Native), None),
            Err(r) => (None, Some(r)),
        },
        "sidecar" => match sidecar {
            Ok(()) => (Some(SearchBackend::Sidecar), None),
            Err(r) => (None, Some(r)),
        },
        _ => match (native, sidecar) {
            (Ok(_), _) => (Some(SearchBackend::Native), None),
            (Err(_), Ok(())) => (Some(SearchBackend::Sidecar), None),
            // Configured executor: its reason; none configured: the executor would be the current model.
            (Err(n), Err(s)) => (None, Some(if cfg.sidecar.is_some() { s } else { n })),
        },
    };
    SearchPlan {
        backend,
        reason,
        executor: exec.ok(),
    }
}

/// Picks the image route in the fixed order: the current model's official route, then an `openai-codex` OAuth
/// model, then an `openai` API-key model. When none passes, the reason is the first candidate's (a credential exists
/// but its route is wrong), else the current model's when it names an official-route problem, else
/// `missing-openai-auth` (no OpenAI credential anywhere), or `current-model-missing` with no model at all.
pub fn image(net: &NetInput, tool_ours: bool) -> ImagePlan {
    let current = inspect(net.current.as_ref());
    let mut candidate_reason: Option<&'static str> = None;
    let pick = match &current {
        Ok(r) => Some(r.clone()),
        Err(_) => net.image_candidates.iter().find_map(|f| match inspect(Some(f)) {
            Ok(r) => Some(r),
            Err(e) => {
                candidate_reason.get_or_insert(e.as_str());
                None
            }
        }),
    };
    let reason = |cur: RouteReason| match cur {
        RouteReason::CurrentModelMissing if net.image_candidates.is_empty() => "current-model-missing",
        RouteReason::UnofficialEndpoint | RouteReason::CredentialMismatch | RouteReason::UnsupportedApi => {
            candidate_reason.unwrap_or(cur.as_str())
        }
        _ => candidate_reason.unwrap_or("missing-openai-auth"),
    };
    match (pick, tool_ours) {
        (Some(route), true) => ImagePlan {
            route: Some(route),
            reason: None,
        },
        (Some(_), false) => ImagePlan {
            route: None,
            reason: Some("conflicting-tool-name"),
        },
        (None, _) => ImagePlan {
            route: None,
            reason: Some(reason(current.err().unwrap_or(RouteReason::MissingOpenaiAuth))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::route::AuthKind;

    fn openai(id: &str) -> RouteFacts {
        RouteFacts {
            provider: Some("openai".into()),
            id: Some(id.into()),
            api: Some("openai-responses".into()),
            base_url: Some("https://api.openai.com/v1".into()),
            auth: Some(AuthKind::ApiKey),
        }
    }

    fn codex(id: &str) -> RouteFacts {
        RouteFacts {
            provider: Some("openai-codex".into()),
            id: Some(id.into()),
            api: Some("openai-codex-responses".into()),
            base_url: Some("https://chatgpt.com/backend-api".into()),
            auth: Some(AuthKind::OAuth),
        }
    }

    fn faux() -> RouteFacts {
        RouteFacts {
            provider: Some("faux".into()),
            id: Some("faux-1".into()),
            api: Some("faux".into()),
            ..Default::default()
        }
    }

    fn cfg<'a>(backend: &'a str, sidecar: Option<(&'a str, &'a str, &'a str)>) -> SearchConfig<'a> {
        SearchConfig { backend, sidecar }
    }

    #[test]
    fn auto_prefers_native_then_sidecar() {
        let net = NetInput {
            current: Some(openai("gpt-5")),
            ..Default::default()
        };
        let p = search(&net, &cfg("auto", None), true);
        assert_eq!(p.backend, Some(SearchBackend::Native));
        assert_eq!(p.executor.unwrap().route.model, "gpt-5");

        let net = NetInput {
            current: Some(faux()),
            executor: Some(codex("gpt-c")),
            executor_levels: vec!["low".into(), "high".into()],
            ..Default::default()
        };
        let p = search(&net, &cfg("auto", Some(("openai-codex", "gpt-c", "high"))), true);
        assert_eq!(p.backend, Some(SearchBackend::Sidecar));
        assert_eq!(p.executor.as_ref().unwrap().effort, "high");
        // The sidecar needs its own tool name.
        let p = search(&net, &cfg("auto", Some(("openai-codex", "gpt-c", "high"))), false);
        assert_eq!((p.backend, p.reason), (None, Some("conflicting-tool-name")));
        // No executor configured and the current model is not official: the current model's reason.
        let p = search(&net, &cfg("auto", None), true);
        assert_eq!((p.backend, p.reason), (None, Some("unsupported-provider")));
    }

    #[test]
    fn forced_backends_report_why() {
        let net = NetInput {
            current: Some(faux()),
            ..Default::default()
        };
        assert_eq!(
            search(&net, &cfg("native", None), true).reason,
            Some("unsupported-provider")
        );
        assert_eq!(
            search(&net, &cfg("sidecar", Some(("openai", "gone", "auto"))), true).reason,
            Some("missing-sidecar-model")
        );
        let net = NetInput {
            current: Some(openai("gpt-5")),
            executor: Some(codex("gpt-c")),
            executor_levels: vec!["low".into()],
            ..Default::default()
        };
        let p = search(&net, &cfg("sidecar", Some(("openai-codex", "gpt-c", "max"))), true);
        assert_eq!((p.backend, p.reason), (None, Some("unsupported-sidecar-effort")));
        let p = search(&net, &cfg("native", Some(("openai-codex", "gpt-c", "max"))), true);
        assert_eq!(p.backend, Some(SearchBackend::Native));
        // An openai executor only takes `auto`.
        let net = NetInput {
            current: None,
            executor: Some(openai("gpt-5")),
            ..Default::default()
        };
        let p = search(&net, &cfg("sidecar", Some(("openai", "gpt-5", "low"))), true);
        assert_eq!(p.reason, Some("unsupported-sidecar-effort"));
        let p = search(&net, &cfg("auto", Some(("openai", "gpt-5", "auto"))), true);
        assert_eq!(p.backend, Some(SearchBackend::Sidecar));
        // The executor's own route is checked.
        let mut bad = openai("gpt-5");
        bad.base_url = Some("http://127.0.0.1:9/v1".into());
        let net = NetInput {
            executor: Some(bad),
            ..Default::default()
        };
        let p = search(&net, &cfg("auto", Some(("openai", "gpt-5", "auto"))), true);
        assert_eq!(p.reason, Some("unofficial-endpoint"));
    }

    #[test]
    fn image_order_and_reasons() {
        let net = NetInput {
            current: Some(faux()),
            image_candidates: vec![codex("c"), openai("o")],
            ..Default::default()
        };
        assert_eq!(image(&net, true).route.unwrap().kind, RouteKind::Codex);
        let mut no_oauth = codex("c");
        no_oauth.auth = Some(AuthKind::None);
        let net = NetInput {
            current: Some(faux()),
            image_candidates: vec![no_oauth.clone(), openai("o")],
            ..Default::default()
        };
        assert_eq!(image(&net, true).route.unwrap().kind, RouteKind::OpenAi);
        let net = NetInput {
            current: Some(openai("main")),
            image_candidates: vec![codex("c")],
            ..Default::default()
        };
        assert_eq!(image(&net, true).route.unwrap().model, "main");
        assert_eq!(image(&net, false).reason, Some("conflicting-tool-name"));
        let net = NetInput {
            current: Some(faux()),
            image_candidates: vec![no_oauth],
            ..Default::default()
        };
        assert_eq!(image(&net, true).reason, Some("missing-openai-auth"));
        assert_eq!(image(&NetInput::default(), true).reason, Some("current-model-missing"));
        // No credential anywhere with a third-party main model: missing-openai-auth.
        let net = NetInput {
            current: Some(faux()),
            ..Default::default()
        };
        assert_eq!(image(&net, true).reason, Some("missing-openai-auth"));
        // The main model's official-route problem is named, and so is a candidate's.
        let mut proxied = openai("main");
        proxied.base_url = Some("http://127.0.0.1:9/v1".into());
        let net = NetInput {
            current: Some(proxied.clone()),
            ..Default::default()
        };
        assert_eq!(image(&net, true).reason, Some("unofficial-endpoint"));
        let net = NetInput {
            current: Some(faux()),
            image_candidates: vec![proxied],
            ..Default::default()
        };
        assert_eq!(image(&net, true).reason, Some("unofficial-endpoint"));
    }
}
