//! The stable error codes of the interactive tools (docs/interactive.md "Errors"). A failure is an error result the
//! model sees as `<code>: <message>`; the message always says what to do next.

use std::fmt;

/// One interactive tool failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InteractiveCode {
    /// The arguments do not have the documented shape (wrong type, unknown field, missing field).
    InvalidArguments,
    /// `asktool` got no question, or more than [`crate::interactive::ask::MAX_QUESTIONS`].
    QuestionCount,
    /// A question, an option, a todo id or a todo content is empty or longer than its bound.
    TextLength,
    /// A question has more options than [`crate::interactive::ask::MAX_OPTIONS`], or repeats one.
    InvalidOptions,
    /// No user can answer: Pi runs headless (print or json mode).
    NoUser,
    /// `TodoWrite` got more todos than [`crate::interactive::todo::MAX_TODOS`].
    TooManyTodos,
    /// Two todos share an id.
    DuplicateTodoId,
    /// More than one todo is `in_progress`.
    MultipleInProgress,
    /// A todo status is not `pending`, `in_progress` or `completed`.
    InvalidStatus,
    /// The feature (or this tool's switch) is off.
    NotEnabled,
}

impl InteractiveCode {
    /// Every code, for the docs test.
    #[cfg(test)]
    pub const ALL: [InteractiveCode; 10] = [
        InteractiveCode::InvalidArguments,
        InteractiveCode::QuestionCount,
        InteractiveCode::TextLength,
        InteractiveCode::InvalidOptions,
        InteractiveCode::NoUser,
        InteractiveCode::TooManyTodos,
        InteractiveCode::DuplicateTodoId,
        InteractiveCode::MultipleInProgress,
        InteractiveCode::InvalidStatus,
        InteractiveCode::NotEnabled,
    ];

    /// The code as it appears in error results.
    pub fn as_str(self) -> &'static str {
        match self {
            InteractiveCode::InvalidArguments => "invalid-arguments",
            InteractiveCode::QuestionCount => "question-count",
            InteractiveCode::TextLength => "text-length",
            InteractiveCode::InvalidOptions => "invalid-options",
            InteractiveCode::NoUser => "no-user",
            InteractiveCode::TooManyTodos => "too-many-todos",
            InteractiveCode::DuplicateTodoId => "duplicate-todo-id",
            InteractiveCode::MultipleInProgress => "multiple-in-progress",
            InteractiveCode::InvalidStatus => "invalid-status",
            InteractiveCode::NotEnabled => "not-enabled",
        }
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
