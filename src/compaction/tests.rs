use super::*;

fn user(t: &str) -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": t}]})
}
fn assistant(t: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "output_text", "text": t}]})
}
fn compat(model: &str) -> Value {
    compat_record(
        "openai-codex",
        "openai-codex-responses",
        model,
        "https://chatgpt.com/backend-api/codex/responses",
        "oauth",
        "acct-1",
    )
}

#[test]
fn fingerprint_is_sha256_of_the_account_id() {
    assert_eq!(
        account_fingerprint("abc"),
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_ne!(
        compat("m")["accountFingerprint"],
        compat_record("p", "a", "m", "e", "oauth", "acct-2")["accountFingerprint"]
    );
}

#[test]
fn request_carries_prior_retained_checkpoint_input_and_trigger() {
    let prior = json!({"marker": "[pi-codex-toolkit.remote-compaction-v2:u0]", "retainedInput": [user("old")], "checkpoint": {"type": "compaction", "encrypted_content": "E0"}});
    let captured = json!({"model": "gpt-5", "instructions": "sys", "tools": [{"type": "function", "name": "read"}],
        "input": [user("[pi-codex-toolkit.remote-compaction-v2:u0]\nexcerpt"), user("new"), assistant("ok")]});
    let body = build_request(&captured, Some(&prior)).unwrap();
    let types: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| format!("{}{}", i["type"].as_str().unwrap_or(""), item_text(i)))
        .collect();
    assert_eq!(types, ["old", "compaction", "new", "ok", "compaction_trigger"]);
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["instructions"], "sys");
    assert_eq!(body["tools"][0]["name"], "read");
    assert_eq!(body["stream"], true);
    assert_eq!(
        build_request(&json!({"model": "m"}), None).unwrap_err().code,
        "capture-failed"
    );
    assert_eq!(
        build_request(&json!({"input": []}), None).unwrap_err().code,
        "capture-failed"
    );
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
        .collect()
}

#[test]
fn stream_needs_exactly_one_compaction_item_before_completed() {
    let item = json!({"type": "compaction", "encrypted_content": "E1"});
    let done = json!({"type": "response.output_item.done", "item": item});
    let msg = json!({"type": "response.output_item.done", "item": {"type": "message"}});
    let completed = json!({"type": "response.completed", "response": {}});
    assert_eq!(
        parse_stream(&sse(&[msg.clone(), done.clone(), completed.clone()])).unwrap(),
        item
    );
    assert_eq!(
        parse_stream(&sse(&[msg, completed.clone()])).unwrap_err().code,
        "compaction-missing"
    );
    assert_eq!(
        parse_stream(&sse(&[done.clone(), done.clone(), completed.clone()]))
            .unwrap_err()
            .code,
        "compaction-ambiguous"
    );
    assert_eq!(
        parse_stream(&sse(std::slice::from_ref(&done))).unwrap_err().code,
        "stream-incomplete"
    );
    // an item after completed does not count
    assert_eq!(
        parse_stream(&sse(&[completed.clone(), done.clone()])).unwrap_err().code,
        "compaction-missing"
    );
    let failed = json!({"type": "response.failed", "response": {"error": {"message": "quota"}}});
    let e = parse_stream(&sse(&[failed])).unwrap_err();
    assert_eq!(
        (e.code, e.message.contains("quota")),
        (CompactionCode::StreamFailed, true)
    );
    assert_eq!(parse_stream("data: {nope\n\n").unwrap_err().code, "bad-stream");
    assert_eq!(
        parse_stream(&(sse(&[done, completed]) + "data: [DONE]\n\n")).unwrap(),
        item
    );
}

#[test]
fn excerpt_is_at_most_12000_characters_newest_kept() {
    let input = vec![user(&"a".repeat(9_000)), assistant(&"é".repeat(9_000)), user("last")];
    let e = excerpt(&input);
    assert_eq!(e.chars().count(), MAX_EXCERPT);
    assert!(e.ends_with("user: last"));
    let small = excerpt(&[user("hi"), assistant("yo")]);
    assert_eq!(small, "user: hi\nassistant: yo");
    // exactly at the limit: whole lines kept
    let exact = "x".repeat(MAX_EXCERPT - "user: ".len() - 1);
    assert_eq!(excerpt(&[user(&exact)]).chars().count(), MAX_EXCERPT - 1);
}

#[test]
fn retained_input_is_at_most_64000_characters_of_user_text() {
    let input = vec![
        user(&"a".repeat(40_000)),
        assistant("skip"),
        user(&"b".repeat(30_000)),
        user(&"c".repeat(34_000)),
    ];
    let r = retained_input(&input, None);
    let texts: Vec<String> = r.iter().map(item_text).collect();
    assert_eq!(texts.iter().map(|t| t.chars().count()).sum::<usize>(), 64_000);
    assert!(texts[0].starts_with('b'));
    let one = retained_input(&[user(&"z".repeat(MAX_RETAINED + 5))], None);
    assert_eq!(item_text(&one[0]).chars().count(), MAX_RETAINED);
    assert_eq!(retained_input(&[user(&"z".repeat(MAX_RETAINED))], None).len(), 1);
}

#[test]
fn result_has_marker_excerpt_details_and_replays_only_on_exact_match() {
    let input = vec![user("fix the bug"), assistant("done")];
    let cp = json!({"type": "compaction", "encrypted_content": "E1"});
    let r = build_result("u1", cp.clone(), &input, None, compat("gpt-5"), "entry-9", 1234.0);
    assert_eq!(
        r["summary"],
        "[pi-codex-toolkit.remote-compaction-v2:u1]\nuser: fix the bug\nassistant: done"
    );
    assert_eq!(r["firstKeptEntryId"], "entry-9");
    assert_eq!(r["tokensBefore"], 1234.0);
    let d = &r["details"];
    assert_eq!(d["checkpoint"], cp);
    assert_eq!(d["retainedInput"], json!([user("fix the bug")]));
    assert!(d["compat"]["accountFingerprint"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));

    let payload = json!({"model": "gpt-5", "input": [json!({"role": "developer", "content": "sys"}), user(r["summary"].as_str().unwrap()), user("next")]});
    let out = replay(&payload, d, &compat("gpt-5")).unwrap();
    assert_eq!(
        out["input"],
        json!([{"role": "developer", "content": "sys"}, user("fix the bug"), cp, user("next")])
    );
    // mismatches leave the readable summary
    assert!(replay(&payload, d, &compat("gpt-4.1")).is_none());
    let other_account = compat_record(
        "openai-codex",
        "openai-codex-responses",
        "gpt-5",
        "https://chatgpt.com/backend-api/codex/responses",
        "oauth",
        "acct-2",
    );
    assert!(replay(&payload, d, &other_account).is_none());
    let twice = json!({"input": [user(r["summary"].as_str().unwrap()), user(r["summary"].as_str().unwrap())]});
    assert!(replay(&twice, d, &compat("gpt-5")).is_none());
    assert!(replay(&json!({"input": [user("no marker")]}), d, &compat("gpt-5")).is_none());
}

#[test]
fn checkpoint_must_have_string_encrypted_content_and_fit_the_limit() {
    let completed = json!({"type": "response.completed", "response": {}});
    let with = |item: Value| {
        sse(&[
            json!({"type": "response.output_item.done", "item": item}),
            completed.clone(),
        ])
    };
    for bad in [json!(12), json!({"x": 1}), json!(["E"]), json!(null), json!(true)] {
        let e = parse_stream(&with(json!({"type": "compaction", "encrypted_content": bad}))).unwrap_err();
        assert_eq!(e.code, "bad-checkpoint", "{bad}");
    }
    // exactly at the limit is accepted, one byte more is refused with the code naming the limit
    let shell = json!({"type": "compaction", "encrypted_content": ""}).to_string().len();
    let at = json!({"type": "compaction", "encrypted_content": "E".repeat(MAX_CHECKPOINT_BYTES - shell)});
    assert_eq!(at.to_string().len(), MAX_CHECKPOINT_BYTES);
    assert_eq!(parse_stream(&with(at.clone())).unwrap(), at);
    let over = json!({"type": "compaction", "encrypted_content": "E".repeat(MAX_CHECKPOINT_BYTES - shell + 1)});
    let e = parse_stream(&with(over.clone())).unwrap_err();
    assert_eq!(e.code, "compaction-too-large");
    assert!(e.message.contains(&MAX_CHECKPOINT_BYTES.to_string()));

    // a stored checkpoint that breaks either rule is neither replayed nor sent again as the prior checkpoint
    let input = vec![user("fix the bug")];
    for cp in [over, json!({"type": "compaction", "encrypted_content": {"a": 1}})] {
        let r = build_result("u2", cp, &input, None, compat("gpt-5"), "e", 1.0);
        let d = &r["details"];
        let payload = json!({"input": [user(r["summary"].as_str().unwrap())]});
        assert!(replay(&payload, d, &compat("gpt-5")).is_none());
        let body = build_request(&json!({"model": "m", "input": []}), Some(d)).unwrap();
        assert!(body["input"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["type"] != "compaction"));
    }
}

#[test]
fn server_error_text_is_stripped_of_controls_and_bounded() {
    assert_eq!(
        server_text("\u{1b}[31mred\u{1b}[0m alert\u{7}\r\nnext\tline"),
        "red alert next line"
    );
    assert_eq!(server_text("a\u{202e}b\u{0}c"), "abc");
    let long = "x".repeat(100_000);
    let t = server_text(&long);
    assert_eq!(t.chars().count(), MAX_ERROR_TEXT + 1);
    assert!(t.ends_with('…'));
    assert_eq!(server_text(&"y".repeat(MAX_ERROR_TEXT)), "y".repeat(MAX_ERROR_TEXT));
    let failed = json!({"type": "response.failed", "response": {"error": {"message": format!("\u{1b}[2J{long}")}}});
    let e = parse_stream(&sse(&[failed])).unwrap_err();
    assert_eq!(e.code, "stream-failed");
    assert!(
        !e.message.contains('\u{1b}') && e.message.len() < MAX_ERROR_TEXT + 100,
        "{}",
        e.message.len()
    );
}

/// The rows of the docs/compaction.md "Codes" table are exactly [`CompactionCode::ALL`], in order.
#[test]
fn all_codes_match_the_doc_table() {
    let all: Vec<&str> = CompactionCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        crate::codes::check::doc_table(include_str!("../../docs/compaction.md"), "### Codes"),
        all
    );
}

/// `CompactionFailure.code` in index.d.ts (napi `ts_type` in src/bind/compaction.rs) is [`CompactionCode::ALL`]
/// plus the binding's contained panic.
#[test]
fn index_d_ts_union_is_all_codes() {
    use crate::codes::check::{dts_union, with_extra};
    assert_eq!(
        dts_union(include_str!("../../index.d.ts"), "CompactionFailure", "code"),
        with_extra(CompactionCode::ALL.map(CompactionCode::as_str), &["internal-panic"])
    );
}
