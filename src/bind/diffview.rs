//! Diffs for the screen (docs/render.md "Diffs"): the view type the host tools and apply_patch return in their
//! details, and two async functions the glue calls for a card or a row before a call runs. Logic lives in
//! src/diffview; both functions run on tokio's blocking pool, never on Node's main thread, and resolve, never reject.

use super::guard;
use crate::diffview::{self, Limits, View, LIMITS};
use std::path::Path;
use std::time::Duration;

/// A change as a person sees it: rows in the form Pi's `renderDiff` colours (`+12 text`, `-12 text`, ` 12 text`,
/// `   ...`), three lines of context, at most 500 rows of 400 characters (`omittedRows` counts the rest). When
/// the diff could not finish within its deadline or a side was too large, `exact` is false, `text` is empty, the
/// counts are upper bounds and `summary` says why.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct ScreenDiff {
    pub text: String,
    pub added: i64,
    pub removed: i64,
    pub exact: bool,
    pub omitted_rows: i64,
    /// The first changed line, numbered in the new file.
    pub first_changed_line: Option<i64>,
    pub summary: Option<String>,
    pub before_lines: i64,
    pub after_lines: i64,
}

impl From<View> for ScreenDiff {
    fn from(v: View) -> ScreenDiff {
        ScreenDiff {
            text: v.text,
            added: v.added as i64,
            removed: v.removed as i64,
            exact: v.exact,
            omitted_rows: v.omitted_rows as i64,
            first_changed_line: v.first_changed_line.map(|n| n as i64),
            summary: v.summary,
            before_lines: v.before_lines as i64,
            after_lines: v.after_lines as i64,
        }
    }
}

/// A Write's preview: whether it creates the file, and the view (the new lines, or the diff against the file).
#[napi(object)]
pub struct WritePreview {
    pub created: bool,
    pub diff: ScreenDiff,
}

/// A view that says the preview itself failed (a contained panic): no rows, the reason as the summary.
fn failed(message: String) -> ScreenDiff {
    View {
        summary: Some(format!("no preview: {message}")),
        ..View::default()
    }
    .into()
}

fn limits(deadline_ms: Option<u32>) -> Limits {
    match deadline_ms {
        Some(ms) => Limits {
            deadline: Duration::from_millis(u64::from(ms)),
            ..LIMITS
        },
        None => LIMITS,
    }
}

/// Runs `f` on the blocking pool inside the panic guard.
async fn off_thread<T: Send + 'static>(
    site: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
    on_panic: impl FnOnce(String) -> T + Send + 'static,
) -> T {
    let joined = tokio::task::spawn_blocking(move || guard::sync_or(site, move || Ok(f()), Err)).await;
    match joined {
        Ok(Ok(v)) => v,
        Ok(Err(m)) => on_panic(m),
        Err(e) => on_panic(format!("the {site} task did not finish ({e})")),
    }
}

/// The view of `before` → `after` (`deadlineMs`: how long the diff may run, 250 ms when omitted).
#[napi(catch_unwind)]
pub async fn diff_texts(before: String, after: String, deadline_ms: Option<u32>) -> ScreenDiff {
    off_thread(
        "diffTexts",
        move || diffview::texts(&before, &after, &limits(deadline_ms)).into(),
        failed,
    )
    .await
}

/// The preview of a Write before it runs: the file at the absolute `path` as it is now against `content`, or the
/// new file's lines when there is none. Display only (the file is read, never written); the permission decision is
/// not this function's.
#[napi(catch_unwind)]
pub async fn write_preview(path: String, content: String, deadline_ms: Option<u32>) -> WritePreview {
    off_thread(
        "writePreview",
        move || {
            let (created, v) = diffview::write_preview(Path::new(&path), &content, &limits(deadline_ms));
            WritePreview {
                created,
                diff: v.into(),
            }
        },
        |m| WritePreview {
            created: false,
            diff: failed(m),
        },
    )
    .await
}
