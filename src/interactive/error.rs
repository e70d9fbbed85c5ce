//! The stable error codes of the interactive tools (docs/interactive.md "Errors"). A failure is an error result the
//! model sees as `<code>: <message>`; the message always says what to do next.

use std::fmt;

crate::codes::error_codes! {
    /// One interactive tool failure (docs/interactive.md "Errors").
    pub enum InteractiveCode {
        /// The arguments do not have the documented shape (wrong type, unknown field, missing field).
        InvalidArguments = "invalid-arguments" => "fix the field the message names and call again",
        /// `asktool` got no question, or more than [`crate::interactive::ask::MAX_QUESTIONS`].
        QuestionCount = "question-count" => "ask between one and the allowed number of questions",
        /// A question, an option, a todo id or a todo content is empty or longer than its bound.
        TextLength = "text-length" => "shorten or fill the text the message names",
        /// An asktool option, a todo id or a todo content holds a control character (a newline, ESC, a C1 code;
        /// docs/permissions.md "What reaches the terminal"): these are one-line labels.
        ControlCharacter = "control-character" => "write the text on one line, without control characters",
        /// A question has more options than [`crate::interactive::ask::MAX_OPTIONS`], or repeats one.
        InvalidOptions = "invalid-options" => "give fewer, distinct options",
        /// No user can answer: Pi runs headless (print or json mode).
        NoUser = "no-user" => "decide without asking, and say what you assumed",
        /// `TodoWrite` got more todos than [`crate::interactive::todo::MAX_TODOS`].
        TooManyTodos = "too-many-todos" => "merge or drop todos to stay within the cap",
        /// Two todos share an id.
        DuplicateTodoId = "duplicate-todo-id" => "give every todo its own id",
        /// More than one todo is `in_progress`.
        MultipleInProgress = "multiple-in-progress" => "mark only the todo being worked on as in_progress",
        /// A todo status is not `pending`, `in_progress` or `completed`.
        InvalidStatus = "invalid-status" => "use pending, in_progress or completed",
        /// The feature (or this tool's switch) is off.
        NotEnabled = "not-enabled" => "carry on without this tool; the user can turn it on with /pct",
    }
}

/// A failure: its code and the whole message (what was wrong and what to do next).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: InteractiveCode,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(code: InteractiveCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// An `invalid-arguments` failure: the shape of the arguments is wrong.
pub(crate) fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(InteractiveCode::InvalidArguments, message)
}

/// A required string of 1..=`max` characters (not only blanks) at `path`; `hint` ends the length message.
pub(crate) fn bounded_text(
    v: Option<&serde_json::Value>,
    path: &str,
    max: usize,
    hint: &str,
) -> Result<String, Failure> {
    let s = match v {
        Some(serde_json::Value::String(s)) => s,
        None => return Err(invalid(format!("{path} is missing: give it as a string."))),
        Some(_) => return Err(invalid(format!("{path} must be a string."))),
    };
    let n = s.chars().count();
    if s.trim().is_empty() || n > max {
        return Err(Failure::new(
            InteractiveCode::TextLength,
            format!("{path} must have 1 to {max} characters (it has {n}); {hint}."),
        ));
    }
    Ok(s.clone())
}

/// [`bounded_text`] for a one-line label (an asktool option, a todo id or content): a control character (newline,
/// ESC, C1, a direction override; src/display) is refused, because the label is shown as a line and an option is
/// also the answer the model gets back.
pub(crate) fn label_text(v: Option<&serde_json::Value>, path: &str, max: usize, hint: &str) -> Result<String, Failure> {
    let s = bounded_text(v, path, max, hint)?;
    if let Some(c) = s.chars().find(|c| crate::display::is_unsafe(*c)) {
        return Err(Failure::new(
            InteractiveCode::ControlCharacter,
            format!(
                "{path} holds the control character U+{:04X}; a label is one line of plain text. Write it without \
                 control characters (no newlines, no escape codes) and call again.",
                c as u32
            ),
        ));
    }
    Ok(s)
}
