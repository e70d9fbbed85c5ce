//! Server-sent events as the Responses API streams them: one event per blank-line-separated block, its `data:` lines
//! joined. Shared by the Web Search sidecar (src/net/websearch/sidecar.rs) and Remote Compaction
//! (src/compaction/mod.rs), so both read a stream the same way. Lines may end in LF or CRLF (the SSE format allows
//! both); an empty data block and the `[DONE]` sentinel carry no event.

/// The `data` payload of each event of `text`, in order, without the empty and `[DONE]` ones.
pub fn data_events(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).peekable();
    std::iter::from_fn(move || loop {
        lines.peek()?;
        let mut data: Vec<&str> = Vec::new();
        for line in lines.by_ref() {
            if line.is_empty() {
                break;
            }
            if let Some(d) = line.strip_prefix("data:") {
                data.push(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        let joined = data.join("\n");
        if !joined.is_empty() && joined != "[DONE]" {
            return Some(joined);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::data_events;

    #[test]
    fn events_split_on_blank_lines_with_lf_or_crlf() {
        let lf = "event: a\ndata: {\"x\":1}\n\ndata: one\ndata: two\n\n: comment\n\ndata: [DONE]\n\n";
        assert_eq!(data_events(lf).collect::<Vec<_>>(), vec!["{\"x\":1}", "one\ntwo"]);
        let crlf = lf.replace('\n', "\r\n");
        assert_eq!(data_events(&crlf).collect::<Vec<_>>(), vec!["{\"x\":1}", "one\ntwo"]);
        assert_eq!(
            data_events("data:x").collect::<Vec<_>>(),
            vec!["x"],
            "a last event without its blank line"
        );
        assert_eq!(data_events("").count(), 0);
    }
}
