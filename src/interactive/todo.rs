//! `TodoWrite`: the session's checklist (docs/interactive.md "TodoWrite").
//!
//! Why whole-list replacement: the model sends the complete ordered snapshot every time, so there is no merge to get
//! wrong and the newest snapshot on the session branch *is* the list. The glue stores each accepted snapshot in the
//! tool result's details; on resume or a branch switch it hands the branch's snapshots back to [`TodoState::restore`],
//! so the list follows the branch without a side file.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cut_chars;
use super::error::{invalid, Failure, InteractiveCode};

/// At most this many todos in one snapshot.
pub const MAX_TODOS: usize = 50;
/// A todo id: 1 to this many characters.
pub const MAX_ID_CHARS: usize = 64;
/// A todo's content: 1 to this many characters.
pub const MAX_CONTENT_CHARS: usize = 500;
/// The widget shows at most this many todo rows (the rest as a count).
pub const WIDGET_TODOS: usize = 8;
/// The widget shows at most this many background task rows.
pub const WIDGET_TASKS: usize = 4;
/// A widget row is cut to this many characters.
pub const WIDGET_ROW_CHARS: usize = 120;

/// A todo's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    /// Every status, in the order messages list them.
    pub const ALL: [Status; 3] = [Status::Pending, Status::InProgress, Status::Completed];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Status::Pending => "[ ]",
            Status::InProgress => "[~]",
            Status::Completed => "[x]",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// One validated todo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub id: String,
    pub content: String,
    pub status: Status,
}

/// A text field as the model sent it, with its length checked in characters.
fn text(v: Option<&Value>, path: &str, max: usize) -> Result<String, Failure> {
    super::error::label_text(v, path, max, "shorten it")
}

/// Validates `TodoWrite`'s arguments `{todos: [{id, content, status}]}` (an empty list clears the checklist).
pub fn parse(args: &Value) -> Result<Vec<Todo>, Failure> {
    let m = args
        .as_object()
        .ok_or_else(|| invalid("The arguments must be an object {todos: [...]}."))?;
    if let Some(k) = m.keys().find(|k| k.as_str() != "todos") {
        return Err(invalid(format!("{k} is not a TodoWrite argument (allowed: todos).")));
    }
    let list = match m.get("todos") {
        Some(Value::Array(a)) => a,
        None => {
            return Err(invalid(
                "todos is missing: give the whole list as [{id, content, status}].",
            ))
        }
        Some(_) => return Err(invalid("todos must be an array of {id, content, status}.")),
    };
    if list.len() > MAX_TODOS {
        return Err(Failure::new(
            InteractiveCode::TooManyTodos,
            format!(
                "TodoWrite takes at most {MAX_TODOS} todos (got {}); merge small steps or drop completed ones.",
                list.len()
            ),
        ));
    }
    let mut out: Vec<Todo> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let path = format!("todos[{i}]");
        let t = item
            .as_object()
            .ok_or_else(|| invalid(format!("{path} must be an object {{id, content, status}}.")))?;
        if let Some(k) = t.keys().find(|k| !["id", "content", "status"].contains(&k.as_str())) {
            return Err(invalid(format!(
                "{path}.{k} is not a todo field (allowed: id, content, status)."
            )));
        }
        let id = text(t.get("id"), &format!("{path}.id"), MAX_ID_CHARS)?;
        let content = text(t.get("content"), &format!("{path}.content"), MAX_CONTENT_CHARS)?;
        let status = match t.get("status") {
            Some(Value::String(s)) => Status::parse(s),
            _ => None,
        }
        .ok_or_else(|| {
            Failure::new(
                InteractiveCode::InvalidStatus,
                format!("{path}.status must be one of pending, in_progress, completed."),
            )
        })?;
        if let Some(j) = out.iter().position(|o| o.id == id) {
            return Err(Failure::new(
                InteractiveCode::DuplicateTodoId,
                format!("{path}.id repeats the id of todos[{j}]; give every todo its own id."),
            ));
        }
        out.push(Todo { id, content, status });
    }
    let busy: Vec<usize> = (0..out.len())
        .filter(|&i| out[i].status == Status::InProgress)
        .collect();
    if busy.len() > 1 {
        return Err(Failure::new(
            InteractiveCode::MultipleInProgress,
            format!(
                "{} todos are in_progress (todos[{}] and todos[{}]); keep exactly one in_progress and mark the others pending or completed.",
                busy.len(),
                busy[0],
                busy[1]
            ),
        ));
    }
    Ok(out)
}

fn counts(list: &[Todo]) -> (usize, usize, usize) {
    let n = |s: Status| list.iter().filter(|t| t.status == s).count();
    (n(Status::Pending), n(Status::InProgress), n(Status::Completed))
}

fn row(t: &Todo) -> String {
    format!("{} {}", t.status.mark(), t.content)
}

/// The session's checklist.
#[derive(Clone, Debug, Default)]
pub struct TodoState {
    list: Vec<Todo>,
}

impl TodoState {
    /// The current list.
    pub fn list(&self) -> &[Todo] {
        &self.list
    }

    /// Replaces the whole list with a validated snapshot; on a failure the list stays as it was. Answers the text
    /// the model reads.
    pub fn replace(&mut self, args: &Value) -> Result<String, Failure> {
        self.list = parse(args)?;
        let (p, b, c) = counts(&self.list);
        if self.list.is_empty() {
            return Ok("The todo list is now empty.".into());
        }
        let mut lines = vec![format!(
            "Todo list updated: {} todos ({b} in progress, {p} pending, {c} completed).",
            self.list.len()
        )];
        lines.extend(
            self.list
                .iter()
                .map(|t| format!("{} {}: {}", t.status.mark(), t.id, t.content)),
        );
        Ok(lines.join("\n"))
    }

    /// Rebuilds the list from the details of the branch's TodoWrite results, oldest first: the newest snapshot
    /// that validates wins, anything else is ignored (details are data read back from a file). No snapshot: empty.
    pub fn restore(&mut self, snapshots: &[Value]) {
        self.list = snapshots
            .iter()
            .rev()
            .find_map(|d| {
                d.get("todos")
                    .and_then(|t| parse(&serde_json::json!({ "todos": t })).ok())
            })
            .unwrap_or_default();
    }

    /// The widget rows above the editor: a heading and the todos (capped), then the running background tasks
    /// (`tasks`, one line each, capped). Empty when there is nothing to show.
    pub fn widget(&self, tasks: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        if !self.list.is_empty() {
            let (_, _, c) = counts(&self.list);
            out.push(format!("Todos {c}/{}", self.list.len()));
            // The in-progress todo is always shown, also when it sits beyond the cap.
            let busy = self.list.iter().position(|t| t.status == Status::InProgress);
            let start = match busy {
                Some(b) if b >= WIDGET_TODOS => b + 1 - WIDGET_TODOS,
                _ => 0,
            };
            let end = (start + WIDGET_TODOS).min(self.list.len());
            if start > 0 {
                out.push(format!("  … {start} earlier"));
            }
            out.extend(
                self.list[start..end]
                    .iter()
                    .map(|t| format!("  {}", cut_chars(&row(t), WIDGET_ROW_CHARS).0)),
            );
            if end < self.list.len() {
                out.push(format!("  … {} more", self.list.len() - end));
            }
        }
        if !tasks.is_empty() {
            out.push(format!("Background tasks running: {}", tasks.len()));
            out.extend(
                tasks
                    .iter()
                    .take(WIDGET_TASKS)
                    .map(|t| format!("  {}", cut_chars(t, WIDGET_ROW_CHARS).0)),
            );
            if tasks.len() > WIDGET_TASKS {
                out.push(format!("  … {} more", tasks.len() - WIDGET_TASKS));
            }
        }
        out
    }

    /// What `/pct todos` prints: every todo with its id.
    pub fn text(&self) -> String {
        if self.list.is_empty() {
            return "No todos in this session (the model sets them with TodoWrite).".into();
        }
        let (p, b, c) = counts(&self.list);
        let mut lines = vec![format!(
            "Todos: {} ({b} in progress, {p} pending, {c} completed)",
            self.list.len()
        )];
        lines.extend(
            self.list
                .iter()
                .map(|t| format!("{} {}: {}", t.status.mark(), t.id, t.content)),
        );
        lines.join("\n")
    }
}
