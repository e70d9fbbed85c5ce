//! Bindings of the interactive tools (docs/interactive.md): an `AskSession` per asktool call, the session's
//! `TodoList`, and new_context's argument check. Expected failures answer `{ok: false, code, message}`; a wrong index
//! or option from the glue is a programmer error and throws `invalid-input`.

use super::guard;
use crate::interactive::{ask, new_context, todo, Failure, PLAN_SAFE};
use napi::Env;
use serde_json::{json, Value};

fn failure(f: &Failure) -> Value {
    json!({"ok": false, "code": f.code.as_str(), "message": f.message})
}

fn panicked(message: String) -> Value {
    json!({"ok": false, "code": guard::PANIC_CODE, "message": message})
}

fn programmer(env: &Env, r: Result<(), String>) -> napi::Result<()> {
    r.map_err(|m| guard::throw(env, "invalid-input", m.trim_start_matches("invalid-input: ")))
}

/// The tool names Plan (contract) mode lets through: the interactive tools change nothing in the workspace.
#[napi(catch_unwind)]
pub fn interactive_plan_safe(env: &Env) -> napi::Result<Vec<String>> {
    guard::sync(env, "interactivePlanSafe", || {
        Ok(PLAN_SAFE.iter().map(|s| s.to_string()).collect())
    })
}

/// The bounds and the labels the dialogs add (so the glue never spells them itself).
#[napi(
    catch_unwind,
    ts_return_type = "{ maxQuestions: number; maxQuestionChars: number; maxOptions: number; maxOptionChars: number; maxAnswerChars: number; maxTodos: number; maxTodoIdChars: number; maxTodoContentChars: number; otherLabel: string; skipLabel: string; doneLabel: string }"
)]
pub fn interactive_limits(env: &Env) -> napi::Result<Value> {
    guard::sync(env, "interactiveLimits", || {
        Ok(json!({
            "maxQuestions": ask::MAX_QUESTIONS,
            "maxQuestionChars": ask::MAX_QUESTION_CHARS,
            "maxOptions": ask::MAX_OPTIONS,
            "maxOptionChars": ask::MAX_OPTION_CHARS,
            "maxAnswerChars": ask::MAX_ANSWER_CHARS,
            "maxTodos": todo::MAX_TODOS,
            "maxTodoIdChars": todo::MAX_ID_CHARS,
            "maxTodoContentChars": todo::MAX_CONTENT_CHARS,
            "otherLabel": ask::OTHER_LABEL,
            "skipLabel": ask::SKIP_LABEL,
            "doneLabel": ask::DONE_LABEL,
        }))
    })
}

/// One asktool call: validated questions and the replies so far. A construction from bad arguments never throws:
/// `failure()` then answers the error result and every other method acts on no questions.
#[napi]
pub struct AskSession {
    inner: Option<ask::AskSession>,
    failure: Option<Failure>,
}

#[napi]
impl AskSession {
    #[napi(constructor, catch_unwind)]
    pub fn new(env: &Env, #[napi(ts_arg_type = "unknown")] args: Value) -> napi::Result<Self> {
        guard::sync(env, "ask.new", || {
            Ok(match ask::AskSession::new(&args) {
                Ok(s) => AskSession {
                    inner: Some(s),
                    failure: None,
                },
                Err(f) => AskSession {
                    inner: None,
                    failure: Some(f),
                },
            })
        })
    }

    /// The failure of the arguments, or null when the questions are valid.
    #[napi(
        catch_unwind,
        ts_return_type = "{ ok: false; code: 'invalid-arguments' | 'question-count' | 'text-length' | 'control-character' | 'invalid-options' | 'no-user' | 'too-many-todos' | 'duplicate-todo-id' | 'multiple-in-progress' | 'invalid-status' | 'not-enabled' | 'internal-panic'; message: string } | null"
    )]
    pub fn failure(&self) -> Value {
        guard::sync_or(
            "ask.failure",
            || self.failure.as_ref().map(failure).unwrap_or(Value::Null),
            panicked,
        )
    }

    /// The validated questions, in order.
    #[napi(
        catch_unwind,
        ts_return_type = "Array<{ question: string; options: string[]; multiSelect: boolean }>"
    )]
    pub fn questions(&self, env: &Env) -> napi::Result<Value> {
        guard::sync(env, "ask.questions", || {
            Ok(json!(self.inner.as_ref().map(|s| s.questions()).unwrap_or_default()))
        })
    }

    fn session(&mut self) -> Result<&mut ask::AskSession, String> {
        self.inner
            .as_mut()
            .ok_or_else(|| "invalid-input: the ask has no valid questions".to_string())
    }

    /// A typed answer to question `index` (blank = skipped).
    #[napi(catch_unwind)]
    pub fn answer_text(&mut self, env: &Env, index: u32, text: String) -> napi::Result<()> {
        let r = guard::sync(env, "ask.answerText", || {
            Ok(self.session().and_then(|s| s.answer_text(index as usize, &text)))
        })?;
        programmer(env, r)
    }

    /// The chosen options of question `index`, and the free answer typed beside them.
    #[napi(catch_unwind)]
    pub fn answer_choices(
        &mut self,
        env: &Env,
        index: u32,
        chosen: Vec<String>,
        other: Option<String>,
    ) -> napi::Result<()> {
        let r = guard::sync(env, "ask.answerChoices", || {
            Ok(self
                .session()
                .and_then(|s| s.answer_choices(index as usize, &chosen, other.as_deref())))
        })?;
        programmer(env, r)
    }

    /// The user skipped question `index`.
    #[napi(catch_unwind)]
    pub fn skip(&mut self, env: &Env, index: u32) -> napi::Result<()> {
        let r = guard::sync(env, "ask.skip", || {
            Ok(self.session().and_then(|s| s.skip(index as usize)))
        })?;
        programmer(env, r)
    }

    /// Ends the ask: open questions read as skipped (dismissed dialog, aborted turn).
    #[napi(catch_unwind)]
    pub fn skip_open(&mut self, env: &Env) -> napi::Result<()> {
        guard::sync(env, "ask.skipOpen", || {
            if let Some(s) = self.inner.as_mut() {
                s.skip_open();
            }
            Ok(())
        })
    }

    /// The bounded result `{answers: [{question, answer, skipped}], text}`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ answers: Array<{ question: string; answer: string; skipped: boolean }>; text: string }"
    )]
    pub fn result(&self, env: &Env) -> napi::Result<Value> {
        guard::sync(env, "ask.result", || {
            Ok(match &self.inner {
                Some(s) => json!(s.result()),
                None => json!({"answers": [], "text": ""}),
            })
        })
    }
}

/// The failure of a call without a user (headless).
#[napi(catch_unwind, ts_return_type = "{ ok: false; code: 'no-user'; message: string }")]
pub fn ask_no_user(env: &Env) -> napi::Result<Value> {
    guard::sync(env, "askNoUser", || Ok(failure(&ask::no_user())))
}

/// One Pi session's checklist (rebuilt from the session's TodoWrite results on resume and branch switch).
#[napi]
pub struct TodoList {
    inner: todo::TodoState,
}

#[napi]
impl TodoList {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        TodoList {
            inner: Default::default(),
        }
    }

    /// Replaces the whole list: `{ok: true, text, todos}` (the snapshot to store in the result's details), or a
    /// failure (the list is unchanged).
    #[napi(
        catch_unwind,
        ts_return_type = "{ ok: true; text: string; todos: Array<{ id: string; content: string; status: 'pending' | 'in_progress' | 'completed' }> } | { ok: false; code: 'invalid-arguments' | 'question-count' | 'text-length' | 'control-character' | 'invalid-options' | 'no-user' | 'too-many-todos' | 'duplicate-todo-id' | 'multiple-in-progress' | 'invalid-status' | 'not-enabled' | 'internal-panic'; message: string }"
    )]
    pub fn replace(&mut self, #[napi(ts_arg_type = "unknown")] args: Value) -> Value {
        guard::sync_or(
            "todo.replace",
            || match self.inner.replace(&args) {
                Ok(text) => json!({"ok": true, "text": text, "todos": self.inner.list()}),
                Err(f) => failure(&f),
            },
            panicked,
        )
    }

    /// Rebuilds the list from the details of the branch's TodoWrite results, oldest first (the newest valid one wins).
    #[napi(catch_unwind)]
    pub fn restore(&mut self, env: &Env, #[napi(ts_arg_type = "unknown[]")] snapshots: Vec<Value>) -> napi::Result<()> {
        guard::sync(env, "todo.restore", || {
            self.inner.restore(&snapshots);
            Ok(())
        })
    }

    /// The current list.
    #[napi(
        catch_unwind,
        ts_return_type = "Array<{ id: string; content: string; status: 'pending' | 'in_progress' | 'completed' }>"
    )]
    pub fn list(&self, env: &Env) -> napi::Result<Value> {
        guard::sync(env, "todo.list", || Ok(json!(self.inner.list())))
    }

    /// The widget rows (todos, then the running background tasks given as one line each); empty = no widget.
    #[napi(catch_unwind)]
    pub fn widget(&self, env: &Env, tasks: Vec<String>) -> napi::Result<Vec<String>> {
        guard::sync(env, "todo.widget", || Ok(self.inner.widget(&tasks)))
    }

    /// What `/pct todos` prints.
    #[napi(catch_unwind)]
    pub fn text(&self, env: &Env) -> napi::Result<String> {
        guard::sync(env, "todo.text", || Ok(self.inner.text()))
    }
}

/// new_context's argument check: null when the arguments are `{}`, else the failure.
#[napi(
    catch_unwind,
    ts_return_type = "{ ok: false; code: 'invalid-arguments'; message: string } | null"
)]
pub fn new_context_check(#[napi(ts_arg_type = "unknown")] args: Value) -> Value {
    guard::sync_or(
        "newContextCheck",
        || {
            new_context::check(&args)
                .err()
                .map(|f| failure(&f))
                .unwrap_or(Value::Null)
        },
        panicked,
    )
}

/// new_context's result text (`remote`: Remote Compaction is on; `already`: a request was pending).
#[napi(catch_unwind)]
pub fn new_context_result(env: &Env, remote: bool, already: bool) -> napi::Result<String> {
    guard::sync(env, "newContextResult", || {
        Ok(new_context::result_text(remote, already))
    })
}

/// The failure of a switched-off interactive tool.
#[napi(catch_unwind, ts_return_type = "{ ok: false; code: 'not-enabled'; message: string }")]
pub fn interactive_not_enabled(env: &Env, tool: String) -> napi::Result<Value> {
    guard::sync(env, "interactiveNotEnabled", || {
        Ok(failure(&Failure::new(
            crate::interactive::InteractiveCode::NotEnabled,
            format!("{tool} is not enabled: the user can turn it on in /pct config (Interactive Tools); /pct status shows why it is unavailable. Go on without it."),
        )))
    })
}
