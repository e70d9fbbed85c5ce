//! The stable error codes of the network tools (docs/net.md §Errors). Every failure a tool reports carries one of
//! these codes and a message that names the next step; route failures reuse the reason codes of src/net/route.rs.

use super::route::RouteReason;

/// One network tool failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetCode {
    /// The caller aborted the tool call.
    Aborted,
    /// No answer within the feature's timeout (30 s search, 300 s image).
    Timeout,
    /// The request could not be sent or the connection broke.
    NetworkError,
    /// A non-2xx status (redirects included: they are never followed).
    HttpError,
    /// The body was not the JSON (or SSE) the endpoint documents.
    InvalidJson,
    /// The response ended without completing (status incomplete/failed, no `response.completed`).
    IncompleteResponse,
    /// The sidecar answer has no `web_search_call` item: no search happened.
    MissingSearchCall,
    /// The sidecar answer has no output text.
    MissingAnswer,
    /// Pi's provider stream for the executor is not available.
    ProviderUnavailable,
    /// The executor effort is not one the executor model supports.
    UnsupportedSidecarEffort,
    /// The tool arguments are wrong (empty query, unknown field, bad size/quality).
    InvalidArguments,
    /// The image response carried no image, or bytes that are not a PNG.
    InvalidImage,
    /// The decoded image is larger than the toolkit accepts.
    ImageTooLarge,
    /// The PNG could not be written under the agent dir.
    WriteFailed,
    /// The response body is larger than the feature's cap ([`super::body_cap`]); the read stopped there.
    ResponseTooLarge,
}

impl NetCode {
    pub const ALL: [NetCode; 15] = [
        NetCode::Aborted,
        NetCode::Timeout,
        NetCode::NetworkError,
        NetCode::HttpError,
        NetCode::InvalidJson,
        NetCode::IncompleteResponse,
        NetCode::MissingSearchCall,
        NetCode::MissingAnswer,
        NetCode::ProviderUnavailable,
        NetCode::UnsupportedSidecarEffort,
        NetCode::InvalidArguments,
        NetCode::InvalidImage,
        NetCode::ImageTooLarge,
        NetCode::WriteFailed,
        NetCode::ResponseTooLarge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NetCode::Aborted => "aborted",
            NetCode::Timeout => "timeout",
            NetCode::NetworkError => "network-error",
            NetCode::HttpError => "http-error",
            NetCode::InvalidJson => "invalid-json",
            NetCode::IncompleteResponse => "incomplete-response",
            NetCode::MissingSearchCall => "missing-search-call",
            NetCode::MissingAnswer => "missing-answer",
            NetCode::ProviderUnavailable => "provider-unavailable",
            NetCode::UnsupportedSidecarEffort => "unsupported-sidecar-effort",
            NetCode::InvalidArguments => "invalid-arguments",
            NetCode::InvalidImage => "invalid-image",
            NetCode::ImageTooLarge => "image-too-large",
            NetCode::WriteFailed => "write-failed",
            NetCode::ResponseTooLarge => "response-too-large",
        }
    }

    /// The next step the model (or user) should take.
    pub fn next_step(self) -> &'static str {
        match self {
            NetCode::Aborted => "the call was cancelled; run it again if it is still needed",
            NetCode::Timeout => "the service did not answer in time; try again later or with a narrower request (it was not retried)",
            NetCode::NetworkError => "check the network connection or proxy settings, then try again (it was not retried)",
            NetCode::HttpError => "the service refused the request; read the status, fix the cause (credential, quota, model) and try again",
            NetCode::InvalidJson => "the service answered with something that is not the documented format; try again later",
            NetCode::IncompleteResponse => "the service stopped before finishing; try again, perhaps with a simpler request",
            NetCode::MissingSearchCall => "the executor answered without searching; rephrase the query as a search request and try again",
            NetCode::MissingAnswer => "the search returned no answer text; rephrase the query and try again",
            NetCode::ProviderUnavailable => "Pi has no stream for the executor's provider; pick another executor with /pct config",
            NetCode::UnsupportedSidecarEffort => "pick an effort the executor model supports (or auto) with /pct config",
            NetCode::InvalidArguments => "fix the arguments as described and call the tool again",
            NetCode::InvalidImage => "the service returned no PNG image; try again, perhaps with another prompt",
            NetCode::ImageTooLarge => "request a smaller size and try again",
            NetCode::WriteFailed => "check that the agent directory is writable and has free space, then try again",
            NetCode::ResponseTooLarge => "the service sent more than the toolkit reads for this feature; nothing was kept, try again with a narrower request",
        }
    }
}

/// A tool failure: a code (a [`NetCode`] or a route reason) and the full message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetError {
    pub code: &'static str,
    pub message: String,
}

impl NetError {
    /// `<code>: <detail>; <next step>`.
    pub fn new(code: NetCode, detail: impl AsRef<str>) -> Self {
        let detail = detail.as_ref();
        let message = if detail.is_empty() {
            format!("{}: {}", code.as_str(), code.next_step())
        } else {
            format!("{}: {detail}; {}", code.as_str(), code.next_step())
        };
        NetError {
            code: code.as_str(),
            message,
        }
    }

    pub fn route(reason: RouteReason) -> Self {
        NetError {
            code: reason.as_str(),
            message: format!(
                "{}: the model is not on an official OpenAI route; {}",
                reason.as_str(),
                reason.next_step()
            ),
        }
    }
}

/// Looks a code up by name (the glue reports fetch failures by code).
pub fn code_of(name: &str) -> Option<NetCode> {
    NetCode::ALL.iter().copied().find(|c| c.as_str() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_documented_and_has_a_next_step() {
        let doc = include_str!("../../docs/net.md");
        for c in NetCode::ALL {
            assert!(
                doc.contains(&format!("`{}`", c.as_str())),
                "{} missing from docs/net.md",
                c.as_str()
            );
            assert!(!c.next_step().is_empty());
            assert_eq!(code_of(c.as_str()), Some(c));
        }
        let e = NetError::new(NetCode::HttpError, "HTTP 500");
        assert_eq!(e.code, "http-error");
        assert!(e.message.starts_with("http-error: HTTP 500; "));
    }
}
