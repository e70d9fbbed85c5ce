//! The stable error codes of the network tools (docs/net.md §Errors). Every failure a tool reports carries one of
//! these codes and a message that names the next step; route failures reuse the reason codes of src/net/route.rs.

use super::route::RouteReason;

crate::codes::error_codes! {
    /// One network tool failure (docs/net.md "Errors").
    pub enum NetCode {
        /// The caller aborted the tool call.
        Aborted = "aborted" => "the call was cancelled; run it again if it is still needed",
        /// No answer within the feature's timeout (30 s search, 300 s image).
        Timeout = "timeout" => "the service did not answer in time; try again later or with a narrower request (it was not retried)",
        /// The request could not be sent or the connection broke.
        NetworkError = "network-error" => "check the network connection or proxy settings, then try again (it was not retried)",
        /// A non-2xx status (redirects included: they are never followed).
        HttpError = "http-error" => "the service refused the request; read the status, fix the cause (credential, quota, model) and try again",
        /// The body was not the JSON (or SSE) the endpoint documents.
        InvalidJson = "invalid-json" => "the service answered with something that is not the documented format; try again later",
        /// The response ended without completing (status incomplete/failed, no `response.completed`).
        IncompleteResponse = "incomplete-response" => "the service stopped before finishing; try again, perhaps with a simpler request",
        /// The sidecar answer has no `web_search_call` item: no search happened.
        MissingSearchCall = "missing-search-call" => "the executor answered without searching; rephrase the query as a search request and try again",
        /// The sidecar answer has no output text.
        MissingAnswer = "missing-answer" => "the search returned no answer text; rephrase the query and try again",
        /// Pi's provider stream for the executor is not available.
        ProviderUnavailable = "provider-unavailable" => "Pi has no stream for the executor's provider; pick another executor with /pct config",
        /// The executor effort is not one the executor model supports.
        UnsupportedSidecarEffort = "unsupported-sidecar-effort" => "pick an effort the executor model supports (or auto) with /pct config",
        /// The tool arguments are wrong (empty query, unknown field, bad size/quality).
        InvalidArguments = "invalid-arguments" => "fix the arguments as described and call the tool again",
        /// The image response carried no image, or bytes that are not a PNG.
        InvalidImage = "invalid-image" => "the service returned no PNG image; try again, perhaps with another prompt",
        /// The decoded image is larger than the toolkit accepts.
        ImageTooLarge = "image-too-large" => "request a smaller size and try again",
        /// The PNG could not be written under the agent dir.
        WriteFailed = "write-failed" => "check that the agent directory is writable and has free space, then try again",
        /// The response body is larger than the feature's cap ([`super::body_cap`]); the read stopped there.
        ResponseTooLarge = "response-too-large" => "the service sent more than the toolkit reads for this feature; nothing was kept, try again with a narrower request",
    }
}

/// The code of a [`NetError`]: a failure of the feature itself, or the reason the model's route is not official.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetErrorCode {
    Net(NetCode),
    Route(RouteReason),
}

impl NetErrorCode {
    /// The word the model and the glue see.
    pub fn as_str(self) -> &'static str {
        match self {
            NetErrorCode::Net(c) => c.as_str(),
            NetErrorCode::Route(r) => r.as_str(),
        }
    }
}

/// Tests assert the exact word the model sees.
impl PartialEq<&str> for NetErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A tool failure: a code (a [`NetCode`] or a route reason) and the full message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetError {
    pub code: NetErrorCode,
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
            code: NetErrorCode::Net(code),
            message,
        }
    }

    pub fn route(reason: RouteReason) -> Self {
        NetError {
            code: NetErrorCode::Route(reason),
            message: format!(
                "{}: the model is not on an official OpenAI route; {}",
                reason.as_str(),
                reason.next_step()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NetFailure.code` in index.d.ts is every net code, then every route reason, then `internal-panic`, so the
    /// glue's compares are typed and a stale index.d.ts fails here.
    #[test]
    fn index_d_ts_union_is_all_codes() {
        use crate::codes::check::{dts_union, with_extra};
        let dts = include_str!("../../index.d.ts");
        let words = NetCode::ALL
            .map(NetCode::as_str)
            .into_iter()
            .chain(RouteReason::ALL.map(RouteReason::as_str));
        assert_eq!(
            dts_union(dts, "NetFailure", "code"),
            with_extra(words, &["internal-panic"])
        );
    }

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
            assert_eq!(NetCode::parse(c.as_str()), Some(c));
        }
        let e = NetError::new(NetCode::HttpError, "HTTP 500");
        assert_eq!(e.code, "http-error");
        assert!(e.message.starts_with("http-error: HTTP 500; "));
    }
}
