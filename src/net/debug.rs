//! The `debug: true` metadata line of one network request (docs/net.md §Debug).
//!
//! Only metadata is ever printed: feature, provider/API/model, endpoint host, duration, HTTP status, request id and
//! the content block types. Never headers, tokens, prompts, arguments, results or images — the line is built from
//! typed fields, and each free-text field is reduced to a short token of safe characters so that nothing else can
//! ride along in it.

/// The metadata of one request. It is also the binding's `NetDebugMeta` object (the one napi type of src/net), so
/// the fields the glue sends and the fields the line prints are one definition.
#[napi_derive::napi(object, js_name = "NetDebugMeta")]
#[derive(Clone, Debug, Default)]
pub struct DebugMeta {
    /// `web-search-native`, `web-search-sidecar`, `image-generation`, `remote-compaction`.
    pub feature: String,
    /// Pi's provider id of the model that made the request.
    pub provider: String,
    /// Pi's API id (`openai-responses`, ...).
    pub api: String,
    /// The model id.
    pub model: String,
    /// The endpoint URL or host; only the host is printed.
    pub endpoint: String,
    /// How long the request took, when it ended.
    pub duration_ms: Option<f64>,
    /// The HTTP status, when a response came.
    pub status: Option<u32>,
    /// The `x-request-id` response header.
    pub request_id: Option<String>,
    /// Content block types (`text`, `image`, `web_search_call`, ...); absent is none.
    pub blocks: Option<Vec<String>>,
    /// The error code when the request failed.
    pub error: Option<String>,
}

/// At most 64 characters of `[A-Za-z0-9._:/-]`; anything else makes the whole value `?` (never a partial secret).
fn token(s: &str) -> String {
    if s.is_empty() {
        return "-".into();
    }
    if s.len() > 64 || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b)) {
        return "?".into();
    }
    s.to_string()
}

/// The host of an endpoint URL (no userinfo, port, path or query).
fn host(endpoint: &str) -> String {
    let rest = endpoint.split_once("://").map(|(_, r)| r).unwrap_or(endpoint);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let no_user = authority.rsplit('@').next().unwrap_or("");
    token(no_user.split(':').next().unwrap_or(""))
}

/// One stderr line.
pub fn line(m: &DebugMeta) -> String {
    let blocks: Vec<String> = m.blocks.iter().flatten().take(16).map(|b| token(b)).collect();
    format!(
        "[pi-codex-toolkit] net feature={} provider={} api={} model={} host={} duration_ms={} status={} request_id={} blocks={}{}",
        token(&m.feature),
        token(&m.provider),
        token(&m.api),
        token(&m.model),
        host(&m.endpoint),
        m.duration_ms.map(|d| format!("{:.0}", d.max(0.0))).unwrap_or_else(|| "-".into()),
        m.status.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
        m.request_id.as_deref().map(token).unwrap_or_else(|| "-".into()),
        if blocks.is_empty() { "-".into() } else { blocks.join(",") },
        m.error.as_deref().map(|e| format!(" error={}", token(e))).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_metadata() {
        let m = DebugMeta {
            feature: "web-search-sidecar".into(),
            provider: "openai".into(),
            api: "openai-responses".into(),
            model: "gpt-4.1".into(),
            endpoint: "https://user:sk-secret@api.openai.com:443/v1/responses?key=sk-secret".into(),
            duration_ms: Some(12.6),
            status: Some(200),
            request_id: Some("req_abc123".into()),
            blocks: Some(vec!["web_search_call".into(), "text".into()]),
            error: None,
        };
        assert_eq!(
            line(&m),
            "[pi-codex-toolkit] net feature=web-search-sidecar provider=openai api=openai-responses model=gpt-4.1 host=api.openai.com duration_ms=13 status=200 request_id=req_abc123 blocks=web_search_call,text"
        );
        // A free-text field carrying anything else is masked whole.
        let leak = DebugMeta {
            model: "gpt 4 Bearer sk-live-123".into(),
            request_id: Some("a secret prompt".into()),
            error: Some("timeout".into()),
            ..m
        };
        let l = line(&leak);
        assert!(
            !l.contains("sk-") && !l.contains("secret") && !l.contains("prompt"),
            "{l}"
        );
        assert!(l.ends_with(" error=timeout"));
    }
}
