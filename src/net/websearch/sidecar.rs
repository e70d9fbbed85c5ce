//! The sidecar backend: the `openai_web_search {query}` tool's request and answer (docs/net.md §Sidecar backend).
//!
//! Only the query leaves the machine, never the conversation. The API-key route sends one non-streaming POST built
//! by [`api_key_body`]; the Codex OAuth route goes through Pi's provider stream, whose request body gets the same
//! hosted tool by [`codex_body_patch`] and whose SSE text is aggregated by [`parse_sse`]. Both answers are checked
//! and rendered by [`answer`]: at least one `web_search_call` item and non-empty text; sources from
//! `action.sources` and `url_citation` annotations, http(s) only, fragment stripped, de-duplicated, at most
//! [`MAX_SOURCES`].

use super::{SearchOptions, SOURCES_INCLUDE};
use crate::net::error::{NetCode, NetError};
use serde_json::{json, Map, Value};

/// The fixed output budget of sources (not a search setting).
pub const MAX_SOURCES: usize = 20;

/// The longest answer text a result carries (bytes; Pi's tools show 50 KiB of output): a longer answer keeps its
/// first part and says where it was cut.
pub const MAX_ANSWER_BYTES: usize = 50 * 1024;

/// The longest source URL kept (bytes); longer ones are dropped, not cut (a cut URL points elsewhere).
pub const MAX_URL_BYTES: usize = 2048;

/// The longest source title shown (characters).
pub const MAX_TITLE_CHARS: usize = 200;

/// The longest query accepted (characters): a search query, not a document.
pub const MAX_QUERY_CHARS: usize = 4_000;

/// Validates the tool arguments: exactly `{query}`, a non-empty string of at most [`MAX_QUERY_CHARS`].
pub fn parse_args(args: &Value) -> Result<String, NetError> {
    let bad = |d: &str| Err(NetError::new(NetCode::InvalidArguments, d));
    let Some(obj) = args.as_object() else {
        return bad("the arguments must be an object {query}");
    };
    if let Some(k) = obj.keys().find(|k| k.as_str() != "query") {
        return bad(&format!(
            "unknown field \"{k}\": openai_web_search takes only {{query}}"
        ));
    }
    match obj.get("query") {
        Some(Value::String(q)) if q.trim().is_empty() => bad("query must be a non-empty string"),
        Some(Value::String(q)) if q.chars().count() > MAX_QUERY_CHARS => bad(&format!(
            "query is longer than {MAX_QUERY_CHARS} characters; shorten it"
        )),
        Some(Value::String(q)) => Ok(q.clone()),
        _ => bad("query must be a non-empty string"),
    }
}

/// The API-key route's request body (one POST to `https://api.openai.com/v1/responses`).
pub fn api_key_body(model: &str, query: &str, opts: &SearchOptions) -> Value {
    json!({
        "model": model,
        "input": query,
        "tools": [opts.tool_entry()],
        "tool_choice": "required",
        "include": [SOURCES_INCLUDE],
        "store": false,
    })
}

/// The Codex route: Pi's provider builds the request (auth headers, account id, instructions); the sidecar puts the
/// hosted tool in, requires it, asks for sources and keeps everything else Pi wrote. `body` is Pi's payload. With
/// effort `auto` the `reasoning` field Pi writes for "no level given" (`none`) is removed, so the service's own
/// default applies: `auto` overrides nothing and never inherits the main model's level (docs/net.md).
pub fn codex_body_patch(body: &Value, opts: &SearchOptions, auto_effort: bool) -> Value {
    let mut out: Map<String, Value> = body.as_object().cloned().unwrap_or_default();
    if auto_effort {
        out.remove("reasoning");
    }
    out.insert("tools".into(), json!([opts.tool_entry()]));
    out.insert("tool_choice".into(), json!("required"));
    let mut include: Vec<Value> = out
        .get("include")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !include.iter().any(|v| v.as_str() == Some(SOURCES_INCLUDE)) {
        include.push(json!(SOURCES_INCLUDE));
    }
    out.insert("include".into(), Value::Array(include));
    out.insert("store".into(), json!(false));
    Value::Object(out)
}

/// One source row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub url: String,
    pub title: Option<String>,
}

/// A checked sidecar answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub text: String,
    pub sources: Vec<Source>,
    /// How many `web_search_call` items the executor made.
    pub searches: usize,
}

impl Answer {
    /// The tool result text: the answer, a blank line, `Sources:` and `- [title](url)` rows.
    /// The answer is cut at [`MAX_ANSWER_BYTES`] (on a character boundary, with a note); every URL is
    /// percent-encoded for a Markdown link destination ([`markdown_url`]) and every title escaped.
    pub fn render(&self) -> String {
        let text = self.text.trim_end();
        let mut out = if text.len() > MAX_ANSWER_BYTES {
            let end = crate::output::cut_utf8(text, MAX_ANSWER_BYTES);
            format!(
                "{}\n[answer cut at {MAX_ANSWER_BYTES} of {} bytes]",
                &text[..end],
                text.len()
            )
        } else {
            text.to_string()
        };
        if !self.sources.is_empty() {
            out.push_str("\n\nSources:");
            for s in &self.sources {
                let title = s.title.as_deref().filter(|t| !t.trim().is_empty()).unwrap_or(&s.url);
                out.push_str(&format!("\n- [{}]({})", escape_title(title), markdown_url(&s.url)));
            }
        }
        out
    }
}

/// A title inside `[...]`: at most [`MAX_TITLE_CHARS`] characters, line breaks and controls as spaces, and the
/// characters Markdown gives a meaning inside link text (`\\ [ ] ( ) < > * _ ` `` ` `` `) backslash-escaped.
fn escape_title(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars().take(MAX_TITLE_CHARS) {
        match c {
            c if c.is_control() => out.push(' '),
            '\\' | '[' | ']' | '(' | ')' | '<' | '>' | '*' | '_' | '`' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A URL as a Markdown link destination: every byte outside the RFC 3986 unreserved and reserved sets minus
/// `( ) [ ] < > \\` and the quote characters is percent-encoded, so nothing in the URL can close the link or open a
/// second one (`https://x.example/)[click](javascript:…` stays one link to `x.example`). Existing `%XX` escapes are
/// kept as they are.
pub fn markdown_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for b in url.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b':'
                    | b'/'
                    | b'?'
                    | b'#'
                    | b'@'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
            );
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An http(s) URL without its fragment; anything else (other schemes, spaces, empty host) is dropped.
pub fn clean_url(raw: &str) -> Option<String> {
    let url = raw.trim();
    let scheme_len = if url.len() >= 8 && url[..8].eq_ignore_ascii_case("https://") {
        8
    } else if url.len() >= 7 && url[..7].eq_ignore_ascii_case("http://") {
        7
    } else {
        return None;
    };
    if url.len() > MAX_URL_BYTES {
        return None;
    }
    let rest = &url[scheme_len..];
    if rest.is_empty() || rest.starts_with(['/', '?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return None;
    }
    let no_frag = match url.find('#') {
        Some(i) => &url[..i],
        None => url,
    };
    Some(no_frag.to_string())
}

/// Adds one source: cleaned, de-duplicated (a later citation may give a title the search listing lacked), capped.
fn add_source(url: Option<&str>, title: Option<&str>, sources: &mut Vec<Source>) {
    let Some(u) = url.and_then(clean_url) else { return };
    if let Some(i) = sources.iter().position(|s| s.url == u) {
        if sources[i].title.is_none() {
            sources[i].title = title.map(str::to_string);
        }
    } else if sources.len() < MAX_SOURCES {
        sources.push(Source {
            url: u,
            title: title.map(str::to_string),
        });
    }
}

/// Checks the output items of one response and extracts the answer (shared by both routes).
pub fn answer(items: &[Value]) -> Result<Answer, NetError> {
    let mut searches = 0;
    let mut sources: Vec<Source> = Vec::new();
    let mut text = String::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("web_search_call") => {
                searches += 1;
                let list = item.pointer("/action/sources").and_then(Value::as_array);
                for s in list.into_iter().flatten() {
                    add_source(
                        s.get("url").and_then(Value::as_str),
                        s.get("title").and_then(Value::as_str),
                        &mut sources,
                    );
                }
            }
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    if part.get("type").and_then(Value::as_str) != Some("output_text") {
                        continue;
                    }
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        text.push_str(t);
                    }
                    for a in part.get("annotations").and_then(Value::as_array).into_iter().flatten() {
                        if a.get("type").and_then(Value::as_str) == Some("url_citation") {
                            add_source(
                                a.get("url").and_then(Value::as_str),
                                a.get("title").and_then(Value::as_str),
                                &mut sources,
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if searches == 0 {
        return Err(NetError::new(
            NetCode::MissingSearchCall,
            "the response has no web_search_call item",
        ));
    }
    if text.trim().is_empty() {
        return Err(NetError::new(NetCode::MissingAnswer, "the response has no output text"));
    }
    Ok(Answer {
        text,
        sources,
        searches,
    })
}

/// The status check of a whole response object (`status` must be `completed` when present).
fn check_status(resp: &Value) -> Result<(), NetError> {
    match resp.get("status").and_then(Value::as_str) {
        None | Some("completed") => Ok(()),
        Some(other) => {
            let why = resp
                .pointer("/incomplete_details/reason")
                .or_else(|| resp.pointer("/error/message"))
                .and_then(Value::as_str)
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            Err(NetError::new(
                NetCode::IncompleteResponse,
                format!("the response status is {other}{why}"),
            ))
        }
    }
}

/// Parses the API-key route's JSON body.
pub fn parse_json(body: &str) -> Result<Answer, NetError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| NetError::new(NetCode::InvalidJson, format!("the response body is not JSON ({e})")))?;
    if !v.is_object() {
        return Err(NetError::new(
            NetCode::InvalidJson,
            "the response body is not a JSON object",
        ));
    }
    check_status(&v)?;
    let items = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| NetError::new(NetCode::InvalidJson, "the response has no output array"))?;
    answer(items)
}

/// Aggregates a Responses SSE stream (the Codex route): the `response.output_item.done` items, which must be followed
/// by `response.completed` (or `response.done`); `response.failed`/`response.incomplete`/`error` end it early.
pub fn parse_sse(text: &str) -> Result<Answer, NetError> {
    let mut items: Vec<Value> = Vec::new();
    let mut completed = false;
    for data in crate::net::sse::data_events(text) {
        let v: Value = serde_json::from_str(&data).map_err(|e| {
            NetError::new(
                NetCode::InvalidJson,
                format!("an event of the stream is not JSON ({e})"),
            )
        })?;
        match v.get("type").and_then(Value::as_str) {
            Some("response.output_item.done") => {
                if let Some(item) = v.get("item") {
                    items.push(item.clone());
                }
            }
            Some("response.completed") | Some("response.done") => {
                if let Some(r) = v.get("response") {
                    check_status(r)?;
                }
                completed = true;
                break;
            }
            Some("response.failed") | Some("response.incomplete") | Some("error") => {
                let r = v
                    .get("response")
                    .cloned()
                    .unwrap_or_else(|| json!({"status": "failed", "error": v.get("error")}));
                check_status(&r)?;
                return Err(NetError::new(
                    NetCode::IncompleteResponse,
                    "the stream reported a failure",
                ));
            }
            _ => {}
        }
    }
    if !completed {
        return Err(NetError::new(
            NetCode::IncompleteResponse,
            "the stream ended before response.completed",
        ));
    }
    answer(&items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(sources: &[&str]) -> Value {
        json!({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q",
            "sources": sources.iter().map(|u| json!({"type": "url", "url": u})).collect::<Vec<_>>()}})
    }

    fn message(text: &str, cites: &[(&str, &str)]) -> Value {
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text,
            "annotations": cites.iter().map(|(u, t)| json!({"type": "url_citation", "url": u, "title": t, "start_index": 0, "end_index": 1})).collect::<Vec<_>>()}]})
    }

    #[test]
    fn args_are_exactly_a_query() {
        assert_eq!(parse_args(&json!({"query": "rust 1.90"})).unwrap(), "rust 1.90");
        for bad in [
            json!({}),
            json!({"query": ""}),
            json!({"query": "  "}),
            json!({"query": 3}),
            json!({"query": "x", "k": 1}),
            json!("q"),
        ] {
            assert_eq!(parse_args(&bad).unwrap_err().code, "invalid-arguments", "{bad}");
        }
        assert!(parse_args(&json!({"query": "a".repeat(MAX_QUERY_CHARS)})).is_ok());
        assert_eq!(
            parse_args(&json!({"query": "a".repeat(MAX_QUERY_CHARS + 1)}))
                .unwrap_err()
                .code,
            "invalid-arguments"
        );
    }

    #[test]
    fn bodies_send_only_the_query() {
        let o = SearchOptions {
            mode: "cached".into(),
            context_size: "high".into(),
        };
        assert_eq!(
            api_key_body("gpt-4.1", "what is new", &o),
            json!({"model": "gpt-4.1", "input": "what is new",
                "tools": [{"type": "web_search", "search_context_size": "high", "external_web_access": false}],
                "tool_choice": "required", "include": [SOURCES_INCLUDE], "store": false})
        );
        let pi = json!({"model": "m", "input": [{"role": "user", "content": "q"}], "include": ["reasoning.encrypted_content"], "stream": true, "reasoning": {"effort": "none"}});
        let kept = codex_body_patch(&pi, &o, false);
        assert_eq!(kept["reasoning"], json!({"effort": "none"}));
        let out = codex_body_patch(&pi, &o, true);
        assert!(out.get("reasoning").is_none());
        assert_eq!(out["include"], json!(["reasoning.encrypted_content", SOURCES_INCLUDE]));
        assert_eq!(out["tool_choice"], "required");
        assert_eq!(out["stream"], true);
        assert_eq!(out["tools"][0]["type"], "web_search");
    }

    #[test]
    fn sources_deduplicated_fragments_stripped_capped() {
        let mut urls: Vec<String> = (0..30).map(|i| format!("https://s{i}.test/p#frag{i}")).collect();
        urls.insert(1, "https://s0.test/p#other".into());
        urls.insert(2, "ftp://files.test/x".into());
        urls.insert(3, "javascript:alert(1)".into());
        let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
        let a = answer(&[
            search(&refs),
            message("The answer.", &[("https://s0.test/p#x", "Zero")]),
        ])
        .unwrap();
        assert_eq!(a.sources.len(), MAX_SOURCES);
        assert_eq!(
            a.sources[0],
            Source {
                url: "https://s0.test/p".into(),
                title: Some("Zero".into())
            }
        );
        assert_eq!(a.sources[1].url, "https://s1.test/p");
        assert!(a.sources.iter().all(|s| !s.url.contains('#')));
        let text = a.render();
        assert!(text.starts_with(
            "The answer.\n\nSources:\n- [Zero](https://s0.test/p)\n- [https://s1.test/p](https://s1.test/p)"
        ));
        assert_eq!(text.lines().filter(|l| l.starts_with("- [")).count(), 20);
    }

    #[test]
    fn urls_cannot_break_out_of_their_markdown_link() {
        let evil = "https://x.example/)[click](javascript:alert(1)";
        let a = answer(&[
            search(&[evil, "https://y.example/a b"]),
            message("A", &[("https://z.example/<img>\"'`", "T](javascript:x) [*b*_\n")]),
        ])
        .unwrap();
        let text = a.render();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("- [")).collect();
        assert_eq!(
            rows,
            [
                "- [https://x.example/\\)\\[click\\]\\(javascript:alert\\(1\\)](https://x.example/%29%5Bclick%5D%28javascript:alert%281%29)",
                "- [T\\]\\(javascript:x\\) \\[\\*b\\*\\_ ](https://z.example/%3Cimg%3E%22%27%60)",
            ],
            "the URL with a space was dropped; every row is one link"
        );
        // each row has exactly one `](` that is not escaped: the link cannot be closed early
        for r in rows {
            assert_eq!(r.matches("](").count() - r.matches("\\](").count(), 1, "{r}");
            let dest = &r[r.rfind("](").unwrap() + 2..r.len() - 1];
            assert!(
                !dest.contains(['(', ')', '[', ']', '<', '>', ' ', '"', '\'', '`']),
                "{dest}"
            );
        }
        assert_eq!(
            markdown_url("https://a.test/p%20q?x=1&y=2#f"),
            "https://a.test/p%20q?x=1&y=2#f"
        );
        assert_eq!(markdown_url("https://a.test/ü"), "https://a.test/%C3%BC");
    }

    #[test]
    fn long_answers_and_urls_are_bounded() {
        let at = "a".repeat(MAX_ANSWER_BYTES);
        assert_eq!(answer(&[search(&[]), message(&at, &[])]).unwrap().render(), at);
        let over = format!("{}é", "a".repeat(MAX_ANSWER_BYTES - 1));
        let r = answer(&[search(&[]), message(&over, &[])]).unwrap().render();
        assert_eq!(
            r,
            format!(
                "{}\n[answer cut at {MAX_ANSWER_BYTES} of {} bytes]",
                "a".repeat(MAX_ANSWER_BYTES - 1),
                over.len()
            )
        );
        let long_ok = format!("https://a.test/{}", "p".repeat(MAX_URL_BYTES - 15));
        let too_long = format!("https://b.test/{}", "p".repeat(MAX_URL_BYTES - 14));
        assert_eq!(long_ok.len(), MAX_URL_BYTES);
        let a = answer(&[search(&[&long_ok, &too_long]), message("A", &[])]).unwrap();
        assert_eq!(
            a.sources.iter().map(|s| s.url.as_str()).collect::<Vec<_>>(),
            [long_ok.as_str()]
        );
        let title = "t".repeat(MAX_TITLE_CHARS + 50);
        let a = answer(&[search(&[]), message("A", &[("https://c.test/", &title)])]).unwrap();
        assert!(a
            .render()
            .ends_with(&format!("- [{}](https://c.test/)", "t".repeat(MAX_TITLE_CHARS))));
    }

    #[test]
    fn missing_search_call_and_answer() {
        assert_eq!(answer(&[message("hi", &[])]).unwrap_err().code, "missing-search-call");
        assert_eq!(
            answer(&[search(&[]), message("  ", &[])]).unwrap_err().code,
            "missing-answer"
        );
        let a = answer(&[search(&[]), message("only text", &[])]).unwrap();
        assert_eq!(a.render(), "only text");
    }

    #[test]
    fn json_and_sse_parsing() {
        assert_eq!(parse_json("not json").unwrap_err().code, "invalid-json");
        assert_eq!(parse_json("[1]").unwrap_err().code, "invalid-json");
        assert_eq!(
            parse_json(r#"{"status":"incomplete","output":[]}"#).unwrap_err().code,
            "incomplete-response"
        );
        let ok = json!({"status": "completed", "output": [search(&["https://a.test/"]), message("A", &[])]});
        assert_eq!(parse_json(&ok.to_string()).unwrap().sources.len(), 1);

        let ev = |v: Value| format!("event: {}\ndata: {}\n\n", v["type"].as_str().unwrap(), v);
        let items = [
            search(&["https://a.test/#x"]),
            message("Answer", &[("https://b.test", "B")]),
        ];
        let mut sse = String::new();
        for (i, it) in items.iter().enumerate() {
            sse += &ev(json!({"type": "response.output_item.done", "output_index": i, "item": it}));
        }
        let done = ev(json!({"type": "response.completed", "response": {"status": "completed"}}));
        let a = parse_sse(&(sse.clone() + &done)).unwrap();
        assert_eq!(
            a.render(),
            "Answer\n\nSources:\n- [https://a.test/](https://a.test/)\n- [B](https://b.test)"
        );
        assert_eq!(parse_sse(&sse).unwrap_err().code, "incomplete-response");
        assert_eq!(parse_sse("data: {oops\n\n").unwrap_err().code, "invalid-json");
        let failed =
            ev(json!({"type": "response.failed", "response": {"status": "failed", "error": {"message": "boom"}}}));
        assert_eq!(parse_sse(&(sse + &failed)).unwrap_err().code, "incomplete-response");
    }

    #[test]
    fn clean_urls() {
        assert_eq!(
            clean_url("https://a.test/x?y=1#z").as_deref(),
            Some("https://a.test/x?y=1")
        );
        assert_eq!(clean_url("http://a.test").as_deref(), Some("http://a.test"));
        for bad in [
            "",
            "https://",
            "https:///x",
            "mailto:a@b",
            "https://a b",
            "file:///etc/passwd",
        ] {
            assert_eq!(clean_url(bad), None, "{bad}");
        }
    }
}
