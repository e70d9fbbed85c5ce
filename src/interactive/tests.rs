use serde_json::{json, Value};

use super::ask::{
    self, AskSession, MAX_ANSWER_CHARS, MAX_OPTIONS, MAX_OPTION_CHARS, MAX_QUESTIONS, MAX_QUESTION_CHARS,
};
use super::error::InteractiveCode as C;
use super::new_context;
use super::todo::{self, Status, TodoState, MAX_CONTENT_CHARS, MAX_ID_CHARS, MAX_TODOS, WIDGET_TODOS};

fn ask_code(v: Value) -> C {
    ask::parse(&v).unwrap_err().code
}

fn qs(n: usize) -> Value {
    json!({ "questions": (0..n).map(|i| json!({"question": format!("q{i}?")})).collect::<Vec<_>>() })
}

#[test]
fn ask_question_count_bounds() {
    assert_eq!(ask_code(qs(0)), C::QuestionCount);
    assert_eq!(ask::parse(&qs(1)).unwrap().len(), 1);
    assert_eq!(ask::parse(&qs(MAX_QUESTIONS)).unwrap().len(), MAX_QUESTIONS);
    assert_eq!(ask_code(qs(MAX_QUESTIONS + 1)), C::QuestionCount);
}

#[test]
fn ask_text_bounds_count_characters() {
    let q = |s: String| json!({"questions": [{"question": s}]});
    assert!(ask::parse(&q("é".repeat(MAX_QUESTION_CHARS))).is_ok());
    assert_eq!(ask_code(q("é".repeat(MAX_QUESTION_CHARS + 1))), C::TextLength);
    assert_eq!(ask_code(q("   ".into())), C::TextLength);
    assert_eq!(ask_code(q(String::new())), C::TextLength);
    let o = |s: String| json!({"questions": [{"question": "q", "options": [s]}]});
    assert!(ask::parse(&o("x".repeat(MAX_OPTION_CHARS))).is_ok());
    assert_eq!(ask_code(o("x".repeat(MAX_OPTION_CHARS + 1))), C::TextLength);
    assert_eq!(ask_code(o(" ".into())), C::TextLength);
}

#[test]
fn ask_option_rules() {
    let opts = |n: usize| json!({"questions": [{"question": "q", "options": (0..n).map(|i| format!("o{i}")).collect::<Vec<_>>()}]});
    assert_eq!(ask::parse(&opts(MAX_OPTIONS)).unwrap()[0].options.len(), MAX_OPTIONS);
    assert_eq!(ask_code(opts(MAX_OPTIONS + 1)), C::InvalidOptions);
    assert_eq!(
        ask_code(json!({"questions": [{"question": "q", "options": ["a", "a"]}]})),
        C::InvalidOptions
    );
    for label in ask::RESERVED_LABELS {
        assert_eq!(
            ask_code(json!({"questions": [{"question": "q", "options": [label]}]})),
            C::InvalidOptions
        );
    }
    // multiSelect needs options; an empty options array is a free-text question.
    assert_eq!(
        ask_code(json!({"questions": [{"question": "q", "multiSelect": true}]})),
        C::InvalidArguments
    );
    assert_eq!(
        ask::parse(&json!({"questions": [{"question": "q", "options": []}]})).unwrap()[0]
            .options
            .len(),
        0
    );
}

#[test]
fn ask_shape_errors_name_the_field() {
    let cases = [
        (json!([]), "The arguments must be an object"),
        (json!({}), "questions is missing"),
        (json!({"questions": "x"}), "questions must be an array"),
        (json!({"questions": [], "extra": 1}), "extra is not an asktool argument"),
        (json!({"questions": [3]}), "questions[0] must be an object"),
        (
            json!({"questions": [{"question": "q", "why": 1}]}),
            "questions[0].why is not a question field",
        ),
        (
            json!({"questions": [{"question": 1}]}),
            "questions[0].question must be a string",
        ),
        (json!({"questions": [{}]}), "questions[0].question is missing"),
        (
            json!({"questions": [{"question": "q", "options": "a"}]}),
            "questions[0].options must be an array",
        ),
        (
            json!({"questions": [{"question": "q", "options": [1]}]}),
            "questions[0].options[0] must be a string",
        ),
        (
            json!({"questions": [{"question": "q", "multiSelect": "yes"}]}),
            "questions[0].multiSelect must be true or false",
        ),
    ];
    for (v, msg) in cases {
        let e = ask::parse(&v).unwrap_err();
        assert_eq!(e.code, C::InvalidArguments, "{v}");
        assert!(e.message.starts_with(msg), "{v}: {}", e.message);
    }
}

#[test]
fn ask_session_answers_skips_and_open_questions() {
    let mut s = AskSession::new(&json!({"questions": [
        {"question": "Which db?", "options": ["pg", "sqlite"]},
        {"question": "Name?"},
        {"question": "Features?", "options": ["a", "b", "c"], "multiSelect": true},
        {"question": "Left open?"}
    ]}))
    .unwrap();
    s.answer_choices(0, &["sqlite".into()], None).unwrap();
    s.skip(1).unwrap();
    s.answer_choices(2, &["c".into(), "a".into()], Some(" zed ")).unwrap();
    let r = s.result();
    let got: Vec<(&str, &str, bool)> = r
        .answers
        .iter()
        .map(|a| (a.question.as_str(), a.answer.as_str(), a.skipped))
        .collect();
    assert_eq!(
        got,
        [
            ("Which db?", "sqlite", false),
            ("Name?", "", true),
            ("Features?", "a, c, zed", false),
            ("Left open?", "", true)
        ]
    );
    assert!(
        r.text.starts_with("The user answered 2 of 4 questions (2 skipped"),
        "{}",
        r.text
    );
    // Unknown options and two answers to a single-select question are programmer errors; nothing changes.
    assert!(s.answer_choices(0, &["mysql".into()], None).is_err());
    assert!(s.answer_choices(0, &["pg".into()], Some("other")).is_err());
    assert!(s.answer_text(9, "x").is_err());
    assert_eq!(s.result(), r);
    // Blank text is a skip; skip_open closes what is left.
    s.answer_text(1, "   ").unwrap();
    s.skip_open();
    assert!(s.result().answers[1].skipped && s.result().answers[3].skipped);
}

#[test]
fn ask_answers_are_cut_at_the_bound() {
    let mut s = AskSession::new(&json!({"questions": [{"question": "a"}, {"question": "b"}]})).unwrap();
    s.answer_text(0, &"ü".repeat(MAX_ANSWER_CHARS)).unwrap();
    s.answer_text(1, &"ü".repeat(MAX_ANSWER_CHARS + 1)).unwrap();
    let r = s.result();
    assert_eq!(r.answers[0].answer.chars().count(), MAX_ANSWER_CHARS);
    assert_eq!(r.answers[1].answer.chars().count(), MAX_ANSWER_CHARS);
    assert!(!r.text.lines().nth(2).unwrap().contains("[cut"));
    assert!(r.text.ends_with(&format!("[cut at {MAX_ANSWER_CHARS} characters]")));
}

#[test]
fn ask_all_skipped_says_so() {
    let mut s = AskSession::new(&qs(2)).unwrap();
    s.skip_open();
    let r = s.result();
    assert!(r.answers.iter().all(|a| a.skipped && a.answer.is_empty()));
    assert!(r.text.starts_with("The user skipped every question"));
    assert_eq!(ask::no_user().code, C::NoUser);
}

fn todos(items: &[(&str, &str, &str)]) -> Value {
    json!({ "todos": items.iter().map(|(i, c, s)| json!({"id": i, "content": c, "status": s})).collect::<Vec<_>>() })
}

fn todo_code(v: Value) -> C {
    todo::parse(&v).unwrap_err().code
}

#[test]
fn todo_count_and_text_bounds() {
    let many = |n: usize| json!({"todos": (0..n).map(|i| json!({"id": i.to_string(), "content": "c", "status": "pending"})).collect::<Vec<_>>()});
    assert_eq!(todo::parse(&many(0)).unwrap().len(), 0);
    assert_eq!(todo::parse(&many(MAX_TODOS)).unwrap().len(), MAX_TODOS);
    assert_eq!(todo_code(many(MAX_TODOS + 1)), C::TooManyTodos);
    let id = "i".repeat(MAX_ID_CHARS);
    let content = "ç".repeat(MAX_CONTENT_CHARS);
    assert!(todo::parse(&todos(&[(&id, &content, "pending")])).is_ok());
    assert_eq!(todo_code(todos(&[(&format!("{id}i"), "c", "pending")])), C::TextLength);
    assert_eq!(
        todo_code(todos(&[("a", &format!("{content}ç"), "pending")])),
        C::TextLength
    );
    assert_eq!(todo_code(todos(&[("", "c", "pending")])), C::TextLength);
    assert_eq!(todo_code(todos(&[("a", " ", "pending")])), C::TextLength);
}

#[test]
fn todo_rules() {
    assert_eq!(
        todo_code(todos(&[("a", "x", "pending"), ("a", "y", "pending")])),
        C::DuplicateTodoId
    );
    assert_eq!(
        todo_code(todos(&[("a", "x", "in_progress"), ("b", "y", "in_progress")])),
        C::MultipleInProgress
    );
    assert!(todo::parse(&todos(&[("a", "x", "in_progress"), ("b", "y", "completed")])).is_ok());
    for bad in ["done", "IN_PROGRESS", ""] {
        assert_eq!(todo_code(todos(&[("a", "x", bad)])), C::InvalidStatus);
    }
    assert_eq!(
        todo_code(json!({"todos": [{"id": "a", "content": "x"}]})),
        C::InvalidStatus
    );
    let shape = [
        (json!(null), "The arguments must be an object"),
        (json!({}), "todos is missing"),
        (json!({"todos": {}}), "todos must be an array"),
        (json!({"todos": [], "merge": true}), "merge is not a TodoWrite argument"),
        (json!({"todos": ["x"]}), "todos[0] must be an object"),
        (
            json!({"todos": [{"id": "a", "content": "x", "status": "pending", "priority": "high"}]}),
            "todos[0].priority is not a todo field",
        ),
        (
            json!({"todos": [{"id": 1, "content": "x", "status": "pending"}]}),
            "todos[0].id must be a string",
        ),
    ];
    for (v, msg) in shape {
        let e = todo::parse(&v).unwrap_err();
        assert_eq!(e.code, C::InvalidArguments, "{v}");
        assert!(e.message.starts_with(msg), "{v}: {}", e.message);
    }
}

#[test]
fn todo_replace_is_all_or_nothing() {
    let mut st = TodoState::default();
    st.replace(&todos(&[("a", "first", "completed"), ("b", "second", "in_progress")]))
        .unwrap();
    let before = st.list().to_vec();
    assert!(st
        .replace(&todos(&[("a", "x", "in_progress"), ("b", "y", "in_progress")]))
        .is_err());
    assert_eq!(st.list(), &before[..]);
    assert_eq!(st.list()[1].status, Status::InProgress);
    assert_eq!(st.replace(&todos(&[])).unwrap(), "The todo list is now empty.");
    assert!(st.list().is_empty());
}

#[test]
fn todo_restore_takes_the_newest_valid_snapshot() {
    let mut st = TodoState::default();
    let a = json!({"todos": [{"id": "1", "content": "old", "status": "pending"}]});
    let b = json!({"todos": [{"id": "1", "content": "new", "status": "completed"}]});
    let broken = json!({"todos": [{"id": "1", "content": "x", "status": "in_progress"}, {"id": "2", "content": "y", "status": "in_progress"}]});
    st.restore(&[a.clone(), b, broken, json!("junk")]);
    assert_eq!(st.list()[0].content, "new");
    st.restore(&[a]);
    assert_eq!(st.list()[0].content, "old");
    st.restore(&[]);
    assert!(st.list().is_empty());
    assert!(st.widget(&[]).is_empty());
    assert!(st.text().starts_with("No todos"));
}

#[test]
fn todo_widget_caps_rows_and_keeps_the_busy_one() {
    let mut st = TodoState::default();
    let n = WIDGET_TODOS + 4;
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"id": i.to_string(), "content": format!("step {i}"), "status": if i == n - 1 { "in_progress" } else { "completed" }}))
        .collect();
    st.replace(&json!({ "todos": items })).unwrap();
    let w = st.widget(&["bg-1 sleep 30".into()]);
    assert_eq!(w[0], format!("Todos {}/{n}", n - 1));
    assert_eq!(w[1], "  … 4 earlier");
    assert_eq!(w[1 + WIDGET_TODOS], format!("  [~] step {}", n - 1));
    assert_eq!(&w[w.len() - 2..], ["Background tasks running: 1", "  bg-1 sleep 30"]);
    let tasks: Vec<String> = (0..7).map(|i| format!("bg-{i}")).collect();
    let w = TodoState::default().widget(&tasks);
    assert_eq!(w.first().unwrap(), "Background tasks running: 7");
    assert_eq!(w.last().unwrap(), "  … 3 more");
}

#[test]
fn new_context_takes_nothing() {
    assert!(new_context::check(&json!({})).is_ok());
    assert!(new_context::check(&Value::Null).is_ok());
    let e = new_context::check(&json!({"reason": "x"})).unwrap_err();
    assert_eq!(e.code, C::InvalidArguments);
    assert!(e.message.contains("(got reason)"));
    assert!(new_context::check(&json!([])).is_err());
    assert!(new_context::result_text(true, false).contains("Remote Compaction"));
    assert!(new_context::result_text(false, false).contains("Pi's compaction"));
    assert!(new_context::result_text(false, true).starts_with("A fresh context was already requested"));
}

#[test]
fn the_doc_table_is_all_codes_in_order() {
    let doc = include_str!("../../docs/interactive.md");
    let all: Vec<&str> = C::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(crate::codes::check::doc_table(doc, "## Errors"), all);
}

#[test]
fn index_d_ts_unions_are_all_codes() {
    // The bindings spell the union in their `ts_return_type`; both failure shapes must list every code.
    let union = crate::codes::check::with_extra(C::ALL.iter().map(|c| c.as_str()), &["internal-panic"])
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" | ");
    let dts = include_str!("../../index.d.ts");
    assert_eq!(
        dts.matches(&format!("code: {union};")).count(),
        2,
        "index.d.ts lacks `{union}`"
    );
}

mod rules {
    use crate::rules::input::ToolEntry;
    use crate::rules::names::INTERACTIVE;
    use crate::rules::tests::{registry, snapshot, ME, OTHER};
    use crate::rules::{resolve, status_text};
    use serde_json::json;

    fn with(names: &[&str], source: &str) -> Vec<ToolEntry> {
        let mut t = registry(&[], &[]);
        t.extend(names.iter().map(|n| ToolEntry {
            name: n.to_string(),
            description: None,
            source: source.into(),
        }));
        t
    }

    fn active(cfg: serde_json::Value, tools: Vec<ToolEntry>) -> (Vec<String>, serde_json::Value) {
        let out = resolve(&snapshot(cfg, Some(("faux", "faux-1")), tools));
        let mine = out
            .active
            .iter()
            .filter(|n| INTERACTIVE.contains(&n.as_str()))
            .cloned()
            .collect();
        (mine, out.features["interactiveTools"].clone())
    }

    #[test]
    fn off_by_default_on_with_the_section_each_switch_counts() {
        let (on, st) = active(json!({}), with(&INTERACTIVE, ME));
        assert!(on.is_empty());
        assert_eq!(st["effective"], "off");
        let (on, st) = active(json!({"interactiveTools": {"enabled": true}}), with(&INTERACTIVE, ME));
        assert_eq!(on, ["asktool", "TodoWrite", "new_context"]);
        assert_eq!(st["effective"], "active");
        let (on, _) = active(
            json!({"interactiveTools": {"enabled": true, "newContext": false}}),
            with(&INTERACTIVE, ME),
        );
        assert_eq!(on, ["asktool", "TodoWrite"]);
        let all_off =
            json!({"interactiveTools": {"enabled": true, "askTool": false, "todoWrite": false, "newContext": false}});
        let (on, st) = active(all_off.clone(), with(&INTERACTIVE, ME));
        assert!(on.is_empty());
        assert_eq!(
            (st["effective"].as_str(), st["reason"].as_str()),
            (Some("unavailable"), Some("every tool switched off"))
        );
        let text = status_text(&snapshot(all_off, Some(("faux", "faux-1")), with(&INTERACTIVE, ME)));
        assert!(text.contains("\nInteractive Tools\n  configured: on\n  effective: unavailable\n  reason: Every interactive tool is switched off: switch one on with /pct config. [every-tool-switched-off]\n  tools: —\n  switched off: asktool, TodoWrite, new_context\n  plan mode: allowed"), "{text}");
    }

    #[test]
    fn another_extensions_tool_of_the_same_name_is_left_alone() {
        // Their asktool stays as Pi has it (active, untouched); ours are the other two.
        let mut tools = with(&["TodoWrite", "new_context"], ME);
        tools.extend(with(&["asktool"], OTHER).into_iter().filter(|t| t.name == "asktool"));
        let cfg = json!({"interactiveTools": {"enabled": true}});
        let text = status_text(&snapshot(cfg.clone(), Some(("faux", "faux-1")), tools));
        assert!(
            text.contains(
                "\nInteractive Tools\n  configured: on\n  effective: active\n  tools: TodoWrite, new_context\n"
            ),
            "{text}"
        );
        let (_, st) = active(cfg, with(&INTERACTIVE, OTHER));
        assert_eq!(st["effective"], "unavailable");
        assert_eq!(st["reason"], "conflicting-tool-name");
        // Never deferrable, so never held back by Tool Discovery.
        for n in INTERACTIVE {
            assert!(!crate::rules::names::is_deferrable(n));
        }
    }
}
