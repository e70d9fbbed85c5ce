//! `asktool`: validation of the questions and the state of one ask (docs/interactive.md "asktool").
//!
//! Why a session object: the glue shows one dialog (TUI) or several in a row (RPC) and may be stopped half way by
//! an aborted turn; the answers collected so far live here, and whatever is still open when the ask ends reads as
//! skipped. The result is bounded: at most [`MAX_QUESTIONS`] answers of at most [`MAX_ANSWER_CHARS`] characters.

use serde::Serialize;
use serde_json::{Map, Value};

use super::cut_chars;
use super::error::{bounded_text, invalid, Failure, InteractiveCode};

/// At most this many questions in one call.
pub const MAX_QUESTIONS: usize = 8;
/// A question's text: 1 to this many characters.
pub const MAX_QUESTION_CHARS: usize = 1000;
/// At most this many options per question.
pub const MAX_OPTIONS: usize = 12;
/// An option's text: 1 to this many characters.
pub const MAX_OPTION_CHARS: usize = 200;
/// An answer is cut to this many characters (the user may type more into a free-text field).
pub const MAX_ANSWER_CHARS: usize = 2000;

/// The row that opens a free-text answer under a question with options.
pub const OTHER_LABEL: &str = "Other (type an answer)";
/// The row that skips a question.
pub const SKIP_LABEL: &str = "Skip this question";
/// The row that ends a multi-select question.
pub const DONE_LABEL: &str = "Done";
/// Labels the glue adds to option lists; an option may not equal one of them.
pub const RESERVED_LABELS: [&str; 3] = [OTHER_LABEL, SKIP_LABEL, DONE_LABEL];

/// One validated question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub question: String,
    /// Empty: a free-text question.
    pub options: Vec<String>,
    pub multi_select: bool,
}

/// One entry of the result: `skipped` answers are empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Answer {
    pub question: String,
    pub answer: String,
    pub skipped: bool,
}

/// The whole result: the structured answers and the text the model reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AskResult {
    pub answers: Vec<Answer>,
    pub text: String,
}

/// A text field as the model sent it, with its length checked in characters.
fn text_field(v: Option<&Value>, path: &str, max: usize) -> Result<String, Failure> {
    bounded_text(v, path, max, "shorten it or split it up")
}

fn question(v: &Value, i: usize) -> Result<Question, Failure> {
    let path = format!("questions[{i}]");
    let m: &Map<String, Value> = v.as_object().ok_or_else(|| {
        invalid(format!(
            "{path} must be an object {{question, options?, multiSelect?}}."
        ))
    })?;
    if let Some(k) = m
        .keys()
        .find(|k| !["question", "options", "multiSelect"].contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "{path}.{k} is not a question field (allowed: question, options, multiSelect)."
        )));
    }
    let text = text_field(m.get("question"), &format!("{path}.question"), MAX_QUESTION_CHARS)?;
    let options = match m.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            if a.len() > MAX_OPTIONS {
                return Err(Failure::new(
                    InteractiveCode::InvalidOptions,
                    format!(
                        "{path}.options has {} options, at most {MAX_OPTIONS} are allowed; keep the likely ones (the user can always type another answer).",
                        a.len()
                    ),
                ));
            }
            let mut out: Vec<String> = Vec::with_capacity(a.len());
            for (j, o) in a.iter().enumerate() {
                let o = super::error::label_text(
                    Some(o),
                    &format!("{path}.options[{j}]"),
                    MAX_OPTION_CHARS,
                    "shorten it or split it up",
                )?;
                if out.contains(&o) {
                    return Err(Failure::new(
                        InteractiveCode::InvalidOptions,
                        format!("{path}.options[{j}] repeats an earlier option; give each option once."),
                    ));
                }
                if RESERVED_LABELS.contains(&o.as_str()) {
                    return Err(Failure::new(
                        InteractiveCode::InvalidOptions,
                        format!("{path}.options[{j}] is a label the dialog adds itself; leave it out (the user can always type an answer or skip)."),
                    ));
                }
                out.push(o);
            }
            out
        }
        Some(_) => return Err(invalid(format!("{path}.options must be an array of strings."))),
    };
    let multi_select = match m.get("multiSelect") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid(format!("{path}.multiSelect must be true or false."))),
    };
    if multi_select && options.is_empty() {
        return Err(invalid(format!(
            "{path}.multiSelect needs options to choose from; give options or drop multiSelect."
        )));
    }
    Ok(Question {
        question: text,
        options,
        multi_select,
    })
}

/// Validates `asktool`'s arguments `{questions: [{question, options?, multiSelect?}]}`.
pub fn parse(args: &Value) -> Result<Vec<Question>, Failure> {
    let m = args
        .as_object()
        .ok_or_else(|| invalid("The arguments must be an object {questions: [...]}."))?;
    if let Some(k) = m.keys().find(|k| k.as_str() != "questions") {
        return Err(invalid(format!("{k} is not an asktool argument (allowed: questions).")));
    }
    let list = match m.get("questions") {
        Some(Value::Array(a)) => a,
        None => {
            return Err(invalid(
                "questions is missing: give an array of {question, options?, multiSelect?}.",
            ))
        }
        Some(_) => {
            return Err(invalid(
                "questions must be an array of {question, options?, multiSelect?}.",
            ))
        }
    };
    if list.is_empty() || list.len() > MAX_QUESTIONS {
        return Err(Failure::new(
            InteractiveCode::QuestionCount,
            format!(
                "asktool takes 1 to {MAX_QUESTIONS} questions (got {}); ask the most important ones first.",
                list.len()
            ),
        ));
    }
    list.iter().enumerate().map(|(i, q)| question(q, i)).collect()
}

/// What the user did with one question.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Reply {
    Skipped,
    Answered(String),
}

/// One ask in progress: the questions and the replies so far (`None` = still open, reads as skipped).
#[derive(Clone, Debug)]
pub struct AskSession {
    questions: Vec<Question>,
    replies: Vec<Option<Reply>>,
}

impl AskSession {
    /// Validates the arguments and opens the ask.
    pub fn new(args: &Value) -> Result<AskSession, Failure> {
        let questions = parse(args)?;
        let replies = vec![None; questions.len()];
        Ok(AskSession { questions, replies })
    }

    /// The validated questions, in order.
    pub fn questions(&self) -> &[Question] {
        &self.questions
    }

    fn slot(&mut self, i: usize) -> Result<&mut Option<Reply>, String> {
        let n = self.replies.len();
        self.replies
            .get_mut(i)
            .ok_or_else(|| format!("invalid-input: there is no question {i} (the ask has {n})"))
    }

    /// A typed answer (also the "other" answer of an options question). Blank text reads as skipped.
    pub fn answer_text(&mut self, i: usize, text: &str) -> Result<(), String> {
        let t = text.trim();
        *self.slot(i)? = Some(if t.is_empty() {
            Reply::Skipped
        } else {
            Reply::Answered(t.to_string())
        });
        Ok(())
    }

    /// The chosen options of a question (one for a single-select question); `other` is the free answer typed
    /// beside them. Options the question does not have are refused; they are kept in the question's order.
    pub fn answer_choices(&mut self, i: usize, chosen: &[String], other: Option<&str>) -> Result<(), String> {
        let q = self
            .questions
            .get(i)
            .ok_or_else(|| format!("invalid-input: there is no question {i}"))?;
        if let Some(c) = chosen.iter().find(|c| !q.options.contains(c)) {
            return Err(format!("invalid-input: {c:?} is not an option of question {i}"));
        }
        if !q.multi_select && chosen.len() + usize::from(other.is_some_and(|o| !o.trim().is_empty())) > 1 {
            return Err(format!("invalid-input: question {i} takes one answer"));
        }
        let mut parts: Vec<&str> = q
            .options
            .iter()
            .filter(|o| chosen.contains(o))
            .map(String::as_str)
            .collect();
        if let Some(o) = other.map(str::trim).filter(|o| !o.is_empty()) {
            parts.push(o);
        }
        let joined = parts.join(", ");
        self.answer_text(i, &joined)
    }

    /// The user skipped question `i`.
    pub fn skip(&mut self, i: usize) -> Result<(), String> {
        *self.slot(i)? = Some(Reply::Skipped);
        Ok(())
    }

    /// Ends the ask: every open question reads as skipped (dismissed dialog, aborted turn).
    pub fn skip_open(&mut self) {
        for r in self.replies.iter_mut().filter(|r| r.is_none()) {
            *r = Some(Reply::Skipped);
        }
    }

    /// The bounded result; open questions read as skipped.
    pub fn result(&self) -> AskResult {
        let mut answers = Vec::with_capacity(self.questions.len());
        let mut lines = Vec::new();
        for (i, (q, r)) in self.questions.iter().zip(&self.replies).enumerate() {
            let (answer, skipped, cut) = match r {
                Some(Reply::Answered(a)) => {
                    let (a, cut) = cut_chars(a, MAX_ANSWER_CHARS);
                    (a, false, cut)
                }
                _ => (String::new(), true, false),
            };
            lines.push(format!("{}. {}", i + 1, q.question));
            lines.push(if skipped {
                "   (skipped)".to_string()
            } else if cut {
                format!("   answer: {answer} [cut at {MAX_ANSWER_CHARS} characters]")
            } else {
                format!("   answer: {answer}")
            });
            answers.push(Answer {
                question: q.question.clone(),
                answer,
                skipped,
            });
        }
        let skipped = answers.iter().filter(|a| a.skipped).count();
        let head = match skipped {
            0 => "The user answered every question:".to_string(),
            n if n == answers.len() => {
                "The user skipped every question (or the turn was stopped): go on without these answers, or ask again only if you cannot.".to_string()
            }
            n => format!("The user answered {} of {} questions ({n} skipped: decide those yourself):", answers.len() - n, answers.len()),
        };
        AskResult {
            answers,
            text: format!("{head}\n{}", lines.join("\n")),
        }
    }
}

/// The failure of a call without a user (print or json mode).
pub fn no_user() -> Failure {
    Failure::new(
        InteractiveCode::NoUser,
        "No user is there to answer: Pi runs without an interactive UI (print or json mode). Make a reasonable assumption, say which one, and go on.",
    )
}
