//! Official route inspection, shared by every network feature (docs/net.md §Official routes).
//!
//! A request may only leave the machine for one of two official routes: `openai` (API key, `api.openai.com`) or
//! `openai-codex` (ChatGPT OAuth, `chatgpt.com`). [`inspect`] classifies a model as Pi describes it (provider, API,
//! base URL, credential kind) into a [`Route`] or one stable [`RouteReason`]. The same check runs for `/pct status`
//! (from the registry's static facts) and again right before a request is sent, with the base URL and credential
//! Pi resolved for that request (`modelRegistry.getApiKeyAndHeaders`), so a refreshed credential that moved the
//! request elsewhere is refused before anything is sent.
//!
//! Why a hand-written URL check instead of the `url` crate: only a handful of exact spellings are accepted
//! (https, one host, no port, userinfo, query or fragment, one of a few paths); an allow-list over the raw text is
//! stricter than normalising first (a parser would accept `HTTPS://API.OPENAI.COM:443/v1` as equal), and avoids
//! pulling the IDNA/ICU crates into the addon for a comparison against two constants.

use serde::{Deserialize, Serialize};

/// Which official route a model is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RouteKind {
    /// Provider `openai`, API `openai-responses`, `https://api.openai.com/v1`, API key.
    #[serde(rename = "openai")]
    OpenAi,
    /// Provider `openai-codex`, API `openai-codex-responses`, `https://chatgpt.com/backend-api`, OAuth.
    #[serde(rename = "openai-codex")]
    Codex,
}

impl RouteKind {
    pub fn provider(self) -> &'static str {
        match self {
            RouteKind::OpenAi => "openai",
            RouteKind::Codex => "openai-codex",
        }
    }

    pub fn api(self) -> &'static str {
        match self {
            RouteKind::OpenAi => "openai-responses",
            RouteKind::Codex => "openai-codex-responses",
        }
    }

    /// The host every request of this route goes to (fixed constants, never taken from config).
    pub fn host(self) -> &'static str {
        match self {
            RouteKind::OpenAi => "api.openai.com",
            RouteKind::Codex => "chatgpt.com",
        }
    }

    /// The Responses endpoint (sidecar search).
    pub fn responses_url(self) -> &'static str {
        match self {
            RouteKind::OpenAi => "https://api.openai.com/v1/responses",
            RouteKind::Codex => "https://chatgpt.com/backend-api/codex/responses",
        }
    }

    /// The image generation endpoint.
    pub fn images_url(self) -> &'static str {
        match self {
            RouteKind::OpenAi => "https://api.openai.com/v1/images/generations",
            RouteKind::Codex => "https://chatgpt.com/backend-api/codex/images/generations",
        }
    }

    /// The credential kind this route requires.
    pub fn auth(self) -> AuthKind {
        match self {
            RouteKind::OpenAi => AuthKind::ApiKey,
            RouteKind::Codex => AuthKind::OAuth,
        }
    }

    /// The `/pct status` name of an image backend on this route.
    pub fn image_backend(self) -> &'static str {
        match self {
            RouteKind::OpenAi => "api-key",
            RouteKind::Codex => "codex-oauth",
        }
    }

    fn paths(self) -> &'static [&'static str] {
        match self {
            RouteKind::OpenAi => &["/v1", "/v1/responses"],
            RouteKind::Codex => &["/backend-api", "/backend-api/codex", "/backend-api/codex/responses"],
        }
    }

    fn of_provider(provider: &str) -> Option<RouteKind> {
        match provider {
            "openai" => Some(RouteKind::OpenAi),
            "openai-codex" => Some(RouteKind::Codex),
            _ => None,
        }
    }
}

/// The kind of credential Pi holds for a model (`modelRegistry.isUsingOAuth` / `hasConfiguredAuth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthKind {
    #[serde(rename = "oauth")]
    OAuth,
    #[serde(rename = "api-key")]
    ApiKey,
    /// No credential configured.
    #[serde(rename = "none")]
    None,
}

crate::codes::error_codes! {
    /// Why a model is not on an official route (docs/net.md "Reason codes", in the order they are checked). The
    /// words are stable: `/pct status` and tool errors show them with the next step.
    pub enum RouteReason {
        /// The session has no model to inspect.
        CurrentModelMissing = "current-model-missing" => "select a model first (/model)",
        /// The provider is neither `openai` nor `openai-codex`.
        UnsupportedProvider = "unsupported-provider" => "use an openai or openai-codex model",
        /// The provider is official but the model does not use that provider's Responses API.
        UnsupportedApi = "unsupported-api" => "use a model on the provider's Responses API",
        /// The base URL is not the route's official https endpoint (port, userinfo, query, fragment, other host/path).
        UnofficialEndpoint = "unofficial-endpoint" => "remove the custom baseUrl from models.json: only https://api.openai.com/v1 and https://chatgpt.com/backend-api are official",
        /// No credential is configured for the model.
        MissingOpenaiAuth = "missing-openai-auth" => "log in with /login (openai-codex) or set OPENAI_API_KEY (openai)",
        /// The credential kind does not match the route (OAuth on `api.openai.com`, an API key on `chatgpt.com`).
        CredentialMismatch = "credential-mismatch" => "use an API key with the openai provider and a ChatGPT login (OAuth) with openai-codex",
    }
}

/// The facts of one model as Pi reports them; every field may be missing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouteFacts {
    pub provider: Option<String>,
    pub id: Option<String>,
    pub api: Option<String>,
    pub base_url: Option<String>,
    /// Missing = unknown, treated as no credential.
    pub auth: Option<AuthKind>,
}

/// A model that passed the check. It is also the binding's `NetRoute` interface in index.d.ts (type only).
#[napi_derive::napi(object, js_name = "NetRoute", object_to_js = false, object_from_js = false)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    #[napi(ts_type = "'openai' | 'openai-codex'")]
    pub kind: RouteKind,
    pub model: String,
}

/// Classifies one model. Order: model present, provider, API, endpoint, credential present, credential kind.
pub fn inspect(facts: Option<&RouteFacts>) -> Result<Route, RouteReason> {
    let f = facts.ok_or(RouteReason::CurrentModelMissing)?;
    let model = match f.id.as_deref() {
        Some(id) if !id.is_empty() => id,
        _ => return Err(RouteReason::CurrentModelMissing),
    };
    let kind = RouteKind::of_provider(f.provider.as_deref().unwrap_or("")).ok_or(RouteReason::UnsupportedProvider)?;
    if f.api.as_deref() != Some(kind.api()) {
        return Err(RouteReason::UnsupportedApi);
    }
    check_endpoint(kind, f.base_url.as_deref().unwrap_or(""))?;
    check_auth(kind, f.auth.unwrap_or(AuthKind::None))?;
    Ok(Route {
        kind,
        model: model.to_string(),
    })
}

/// The credential kind must exist and agree with the route.
pub fn check_auth(kind: RouteKind, auth: AuthKind) -> Result<(), RouteReason> {
    match auth {
        AuthKind::None => Err(RouteReason::MissingOpenaiAuth),
        a if a == kind.auth() => Ok(()),
        _ => Err(RouteReason::CredentialMismatch),
    }
}

/// The base URL must be exactly `https://<host><path>` for one of the route's paths (a trailing `/` allowed; the
/// scheme and host compared case-insensitively as URLs are), with no port, userinfo, query or fragment.
pub fn check_endpoint(kind: RouteKind, url: &str) -> Result<(), RouteReason> {
    let bad = Err(RouteReason::UnofficialEndpoint);
    if url.contains(['?', '#', '@', '\\']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad;
    }
    let Some(scheme_end) = url.find("://") else { return bad };
    if !url[..scheme_end].eq_ignore_ascii_case("https") {
        return bad;
    }
    let rest = &url[scheme_end + 3..];
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // A port (even :443) or an IPv6 literal is not the official spelling.
    if !host.eq_ignore_ascii_case(kind.host()) {
        return bad;
    }
    let path = path.strip_suffix('/').unwrap_or(path);
    if kind.paths().contains(&path) {
        Ok(())
    } else {
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The docs/net.md reason table lists [`RouteReason::ALL`] in order (the order `inspect` checks them).
    #[test]
    fn the_reason_table_is_all_reasons_in_order() {
        let doc = include_str!("../../docs/net.md");
        let heading =
            "Reason codes (in this order of checking), shown by `/pct status` and in tool errors with the next step:";
        let all: Vec<&str> = RouteReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(crate::codes::check::doc_table(doc, heading), all);
    }

    fn facts(provider: &str, api: &str, base: &str, auth: AuthKind) -> RouteFacts {
        RouteFacts {
            provider: Some(provider.into()),
            id: Some("gpt-x".into()),
            api: Some(api.into()),
            base_url: Some(base.into()),
            auth: Some(auth),
        }
    }

    fn reason(f: &RouteFacts) -> &'static str {
        match inspect(Some(f)) {
            Ok(_) => "ok",
            Err(r) => r.as_str(),
        }
    }

    #[test]
    fn official_routes_pass() {
        for base in [
            "https://api.openai.com/v1",
            "https://api.openai.com/v1/",
            "https://api.openai.com/v1/responses",
            "HTTPS://API.OPENAI.COM/v1",
        ] {
            let f = facts("openai", "openai-responses", base, AuthKind::ApiKey);
            assert_eq!(
                inspect(Some(&f)).unwrap(),
                Route {
                    kind: RouteKind::OpenAi,
                    model: "gpt-x".into()
                },
                "{base}"
            );
        }
        for base in [
            "https://chatgpt.com/backend-api",
            "https://chatgpt.com/backend-api/",
            "https://chatgpt.com/backend-api/codex",
            "https://chatgpt.com/backend-api/codex/responses",
        ] {
            let f = facts("openai-codex", "openai-codex-responses", base, AuthKind::OAuth);
            assert_eq!(inspect(Some(&f)).unwrap().kind, RouteKind::Codex, "{base}");
        }
    }

    #[test]
    fn every_reason_code() {
        assert_eq!(inspect(None).unwrap_err().as_str(), "current-model-missing");
        let mut f = facts(
            "openai",
            "openai-responses",
            "https://api.openai.com/v1",
            AuthKind::ApiKey,
        );
        f.id = Some(String::new());
        assert_eq!(reason(&f), "current-model-missing");
        assert_eq!(
            reason(&facts(
                "anthropic",
                "openai-responses",
                "https://api.openai.com/v1",
                AuthKind::ApiKey
            )),
            "unsupported-provider"
        );
        assert_eq!(
            reason(&facts(
                "openai",
                "openai-completions",
                "https://api.openai.com/v1",
                AuthKind::ApiKey
            )),
            "unsupported-api"
        );
        assert_eq!(
            reason(&facts(
                "openai",
                "openai-codex-responses",
                "https://api.openai.com/v1",
                AuthKind::ApiKey
            )),
            "unsupported-api"
        );
        assert_eq!(
            reason(&facts(
                "openai-codex",
                "openai-responses",
                "https://chatgpt.com/backend-api",
                AuthKind::OAuth
            )),
            "unsupported-api"
        );
        assert_eq!(
            reason(&facts(
                "openai",
                "openai-responses",
                "https://api.openai.com/v1",
                AuthKind::None
            )),
            "missing-openai-auth"
        );
        let mut f = facts(
            "openai",
            "openai-responses",
            "https://api.openai.com/v1",
            AuthKind::ApiKey,
        );
        f.auth = None;
        assert_eq!(reason(&f), "missing-openai-auth");
        assert_eq!(
            reason(&facts(
                "openai",
                "openai-responses",
                "https://api.openai.com/v1",
                AuthKind::OAuth
            )),
            "credential-mismatch"
        );
        assert_eq!(
            reason(&facts(
                "openai-codex",
                "openai-codex-responses",
                "https://chatgpt.com/backend-api",
                AuthKind::ApiKey
            )),
            "credential-mismatch"
        );
    }

    #[test]
    fn unofficial_endpoints() {
        for base in [
            "",
            "http://api.openai.com/v1",
            "https://api.openai.com:443/v1",
            "https://user@api.openai.com/v1",
            "https://api.openai.com/v1?x=1",
            "https://api.openai.com/v1#f",
            "https://api.openai.com",
            "https://api.openai.com/v2",
            "https://api.openai.com/v1/chat",
            "https://api.openai.com.evil.test/v1",
            "https://127.0.0.1:8080/v1",
            "https://api.openai.com/v1//",
            "https://api.openai.com/v1 ",
            "https://chatgpt.com/backend-api",
        ] {
            let f = facts("openai", "openai-responses", base, AuthKind::ApiKey);
            assert_eq!(reason(&f), "unofficial-endpoint", "{base:?}");
        }
        for base in [
            "https://chatgpt.com",
            "https://chatgpt.com/backend-api/codex/images",
            "https://api.openai.com/v1",
        ] {
            let f = facts("openai-codex", "openai-codex-responses", base, AuthKind::OAuth);
            assert_eq!(reason(&f), "unofficial-endpoint", "{base:?}");
        }
    }

    #[test]
    fn fixed_endpoints() {
        assert_eq!(RouteKind::OpenAi.responses_url(), "https://api.openai.com/v1/responses");
        assert_eq!(
            RouteKind::Codex.images_url(),
            "https://chatgpt.com/backend-api/codex/images/generations"
        );
        for k in [RouteKind::OpenAi, RouteKind::Codex] {
            assert_eq!(check_endpoint(k, k.responses_url()), Ok(()));
            assert_eq!(check_endpoint(k, k.images_url()), Err(RouteReason::UnofficialEndpoint));
        }
    }
}
